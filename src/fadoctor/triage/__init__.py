"""`fadoctor triage`: diagnose a pasted report (collect_env, pip list, nvidia-smi, tracebacks,
build logs, framework messages, fadoctor's own output) without the machine it came from."""
