"""The help texts of the command-line options, kept together so that their wording is reviewed as a
set (the commands in `fadoctor.cli.app` only refer to them)."""

PYTHON_HELP = ("Interpreter (or environment folder) to examine. Default: the active virtualenv, "
               "then conda env, then the interpreter running fadoctor.")
TIMEOUT_HELP = "Seconds each probe stage may take before it is killed (default: per stage)."
STATIC_HELP = ("Only read files: import neither torch nor flash-attention in any process "
               "(the library, symbol, glibc and kernel checks still run).")
EXTENSION_HELP = "Also analyse this compiled extension (.so) statically (repeatable)."
REDACT_HELP = ("Remove user names, home folders, host names and secret-looking values from the "
               "output, so that it can be pasted publicly.")
ONLY_HELP = ("Run only this check (ID or name; repeatable): the exit status then follows it "
             "alone. With --extension, the extension checks report only the named files: "
             "`--static --extension X --only ext-libraries --only ext-symbols --only ext-glibc` "
             "gates CI on X loading.")
KERNELS_HELP = ("Attention kernel smoke tests: default (one forward+backward case per family and "
                "SDPA backend), full (the whole grid) or none.")
COMPILE_HELP = "Also probe torch.compile(fullgraph=True) on each working attention path."
DISTRIBUTED_HELP = ("Run as one rank of a job started by its launcher (torchrun, srun): every rank "
                    "probes itself, rank 0 gathers and reports for the whole job.")
FACTS_DIR_HELP = ("The rank agents' folder (`fadoctor rank-script`): diagnose the job it holds; "
                  "with --distributed, where to keep the ranks' records.")
