"""`into`: every pip/python command runs the examined interpreter's, its path quoted; uv's form
where the environment has no pip; idempotent; never a bare pip."""

from __future__ import annotations

import shlex

import pytest

from fadoctor.safety.shell import Installer, Unsafe, into, is_safe, quote

PIP = Installer(python="/home/u/my env/bin/python", pip=True, known=True)
UV = Installer(python="/home/u/.venv/bin/python", pip=False, known=True)


@pytest.mark.parametrize(("line", "with_pip", "with_uv"), [
    ("pip install --force-reinstall --no-deps flash-attn==2.8.3",
     '"/home/u/my env/bin/python" -m pip install --force-reinstall --no-deps flash-attn==2.8.3',
     "uv pip install --python /home/u/.venv/bin/python --reinstall --no-deps flash-attn==2.8.3"),
    ("MAX_JOBS=4 pip install flash-attn --no-cache-dir",
     'MAX_JOBS=4 "/home/u/my env/bin/python" -m pip install flash-attn --no-cache-dir',
     "MAX_JOBS=4 uv pip install --python /home/u/.venv/bin/python flash-attn --no-cache"),
    ("cd flash-attention/hopper && python setup.py install",
     'cd flash-attention/hopper && "/home/u/my env/bin/python" setup.py install',
     "cd flash-attention/hopper && /home/u/.venv/bin/python setup.py install"),
    # an assignment whose value the shell must have quoted (a space) stays an assignment
    ("TORCH_CUDA_ARCH_LIST='7.5 8.6' pip install -v xformers==0.0.28",
     'TORCH_CUDA_ARCH_LIST="7.5 8.6" "/home/u/my env/bin/python" -m pip install -v '
     "xformers==0.0.28",
     'TORCH_CUDA_ARCH_LIST="7.5 8.6" uv pip install --python /home/u/.venv/bin/python -v '
     "xformers==0.0.28"),
    ("pip uninstall -y einops", '"/home/u/my env/bin/python" -m pip uninstall -y einops',
     "uv pip uninstall --python /home/u/.venv/bin/python einops"),
    ("git clone https://github.com/Dao-AILab/flash-attention",
     "git clone https://github.com/Dao-AILab/flash-attention",
     "git clone https://github.com/Dao-AILab/flash-attention"),
])
def test_commands_run_the_examined_interpreter(line: str, with_pip: str, with_uv: str) -> None:
    assert into(line, PIP) == with_pip and into(line, UV) == with_uv
    assert is_safe(with_pip) and is_safe(with_uv)
    assert into(with_pip, PIP) == with_pip  # already the examined one's: unchanged


def test_unknown_interpreter_is_python_m_pip_never_bare_pip() -> None:
    out = into("pip install einops", Installer())
    assert out == "python -m pip install einops" and into(out, Installer()) == out
    # A later pass with the interpreter a report names takes it.
    assert into(out, UV) == "uv pip install --python /home/u/.venv/bin/python einops"


def test_a_hostile_path_stays_one_word() -> None:
    weird = Installer(python="/opt/x; rm -rf ~/bin/python", pip=True, known=True)
    out = into("pip install einops", weird)
    assert shlex.split(out)[0] == "/opt/x; rm -rf ~/bin/python" and is_safe(out)
    with pytest.raises(Unsafe):
        into("pip install einops", Installer(python="/a\nb", known=True))


def test_a_fadoctor_command_examines_the_examined_interpreter() -> None:
    line = "fadoctor fix --keep-torch --print-pins"
    assert into(line, PIP) == f"{line} --python {quote(PIP.python)}"
    assert into(into(line, PIP), PIP) == into(line, PIP)  # idempotent
    assert into(line, Installer()) == line  # unknown interpreter: nothing to name
