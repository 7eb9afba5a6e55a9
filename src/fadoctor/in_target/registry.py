"""The stage registry: one declaration per stage, read by both sides.

The parent reads it for the progress labels (cli), the stages to run (collect), the timeouts
(runner) and the facts model each stage fills (assemble); the worker reads it to find the module
that runs a stage and its parameters. Standard library only, Python 3.8 syntax, no pydantic: the
worker is started before fadoctor's models load.

Adding a stage: one module in this package with `run(context, **params) -> dict`, its entry in
`worker.DISPATCH`, one `Stage` below, one facts model in `fadoctor.facts.model`, and its checks.
"""

from typing import Dict, List, NamedTuple, Sequence, Tuple

# What a stage imports in the target interpreter. "nothing": only the standard library and file
# reads (these are the stages of `check --static`); "torch": torch itself; "family": a
# flash-attention family (and torch first).
IMPORTS = ("nothing", "torch", "family")

# The worker a stage runs in. Stages of one lane run one after another in one process; each lane
# is its own process, so lanes run in parallel (a new lane costs one more interpreter start-up).
MAIN_LANE = "main"

# What asks for a stage: every `check` ("check"), the kernel smoke tests (`check --kernels`),
# the torch.compile probe (`check --compile`), `fadoctor bench`, or the rank agent on each rank
# of a distributed job ("distributed").
GROUPS = ("check", "smoke", "compile", "bench", "distributed")


class Stage(NamedTuple):
    name: str  # the key of its record, its timings entry and its --timeout scope
    runs: str  # the module of this package that runs it (a key of worker.DISPATCH)
    imports: str  # one of IMPORTS
    timeout: float  # seconds it may take; the first stage of a worker also pays start-up
    label: str  # what the progress line says while it runs
    facts: str  # the model of fadoctor.facts.model its data fills
    params: Tuple[Tuple[str, str], ...] = ()  # keyword arguments of its run()
    lane: str = MAIN_LANE
    group: str = "check"  # one of GROUPS

    @property
    def static(self) -> bool:
        """Whether `check --static` runs it: it imports neither torch nor flash-attention."""
        return self.imports == "nothing"


def _family(name: str, timeout: float) -> Stage:
    return Stage(name, "family", "family", timeout, "importing %s" % name, "FlashAttention",
                 params=(("family", name),))


# In the order they run. Importing torch and FA4 (a CuTe DSL JIT stack) is slow on a cold disk;
# the rest is quick.
_CHECK = (
    Stage("host", "host", "nothing", 30.0, "reading the interpreter", "Host"),
    Stage("packages", "packages", "nothing", 30.0, "listing distributions", "Packages"),
    Stage("files", "files", "nothing", 60.0, "locating torch and compiled extensions", "Files"),
    Stage("torch", "torch_facts", "torch", 180.0, "importing torch", "Torch"),
    Stage("sdpa", "sdpa", "torch", 60.0, "asking torch about SDPA backends", "SdpaBackend"),
    _family("fa2", 120.0),
    _family("fa3", 120.0),
    _family("fa4", 180.0),
    _family("vllm_fa", 120.0),
    # In a lane of its own: its audit hook (no network while transformers decides) stays there,
    # and transformers' import overlaps the main lane's.
    Stage("transformers", "hf_attention", "torch", 180.0,
          "asking transformers which attention it will run", "TransformersAttention",
          lane="transformers"),
)


def _kernel(kind: str, target: str, timeout: float, label: str, facts: str) -> Stage:
    """An attention-kernel stage (target package `attention/`). SDPA's run in their own lane, so
    that their first CUDA work overlaps the main lane's imports; the families' in another, which
    imports each family again while the main lane does. Each lane's first stage also pays
    `import torch` (and the family's import): the timeouts allow for it."""
    family = not target.startswith("sdpa") and target != "hf"
    lane = "bench" if kind == "bench" else ("kernels" if family else "sdpa")
    return Stage("%s_%s" % (kind, target), kind, "family" if family else "torch", timeout, label,
                 facts, params=(("target", target),), lane=lane, group=kind)


_SDPA = (("sdpa_flash", "flash"), ("sdpa_efficient", "efficient"), ("sdpa_cudnn", "cuDNN"),
         ("sdpa_math", "math"))
_FAMILIES = ("fa2", "fa3", "fa4", "vllm_fa")

KERNEL_STAGES: Tuple[Stage, ...] = tuple(
    [_kernel("smoke", t, 240.0, "testing SDPA's %s kernels" % n, "SmokeTarget") for t, n in _SDPA]
    + [_kernel("smoke", f, 300.0, "testing the %s kernels" % f, "SmokeTarget") for f in _FAMILIES]
    + [_kernel("compile", t, 600.0, "compiling %s" % t, "CompileTarget")
       for t in ("sdpa",) + _FAMILIES]
    + [_kernel("bench", t, 600.0, "timing %s" % t, "BenchTarget")
       for t in [t for t, _ in _SDPA] + list(_FAMILIES)]
    + [_kernel("bench", "hf", 120.0, "asking transformers for its attention implementations",
               "HfAttention")])


# Run by the rank agent (rank.py), in a lane of its own: all_reduce and all_gather with the other
# ranks (its model: fadoctor.facts.collective, read by fadoctor.distributed).
DISTRIBUTED_STAGES = (
    Stage("collective", "collective", "torch", 180.0, "testing all_reduce and all_gather with "
          "the other ranks", "CollectiveTest", lane="collective", group="distributed"),
)

# Every stage, `check`'s first.
STAGES = _CHECK + KERNEL_STAGES + DISTRIBUTED_STAGES
BY_NAME: Dict[str, Stage] = {stage.name: stage for stage in STAGES}


def names(static: bool = False, groups: Sequence[str] = ("check",)) -> List[str]:
    """The stages of `groups`, in order (`check`'s by default); with `static`, only those that
    import nothing."""
    return [s.name for s in STAGES if s.group in groups and (s.static or not static)]


def lanes(stages: Sequence[str]) -> Dict[str, List[str]]:
    """`stages` grouped by the worker process they run in, each group in the given order."""
    out: Dict[str, List[str]] = {}
    for name in stages:
        out.setdefault(BY_NAME[name].lane, []).append(name)
    return out
