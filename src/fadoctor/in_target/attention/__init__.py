"""Attention kernels run in the target interpreter: smoke tests, the torch.compile probe, the bench.

Standard library only at import time, and Python 3.8 syntax: torch and the flash-attention
families are imported inside the stage functions, in the interpreter the user trains with. Each
stage is named `KIND_TARGET` (`smoke_sdpa_flash`, `compile_fa2`, `bench_fa4`), declared in the
registry with its target as parameter, and returns plain JSON-able data; the run's options
(grid, device, shape) arrive as one JSON object, the worker option `OPTION`.
"""

import importlib
import json
from typing import Any, Callable, Dict, Tuple

# What can be tested: PyTorch SDPA with each backend forced in turn, and each family.
SDPA_TARGETS = ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math")
FAMILY_TARGETS = ("fa2", "fa3", "fa4", "vllm_fa")
TARGETS = SDPA_TARGETS + FAMILY_TARGETS

# Targets of one kind only: compile SDPA with torch's own backend choice; bench asks the
# installed transformers which attention implementations it registers.
EXTRA_TARGETS = {"compile": ("sdpa",), "bench": ("hf",)}

# Stage kinds and the module that runs each.
KINDS = {"smoke": "smoke", "compile": "compile_probe", "bench": "bench"}

OPTION = "attention"  # the worker option (--option attention=JSON) that carries the options

# A stage's data carries this key (True) when the CUDA context is no longer usable: the worker
# must exit after reporting, so that the next stage starts in a fresh process.
CONTEXT_LOST = "context_lost"


def stage_name(kind: str, target: str) -> str:
    return kind + "_" + target


def parse(stage: str) -> Tuple[str, str]:
    """`smoke_sdpa_flash` -> ("smoke", "sdpa_flash"); ValueError for anything else."""
    kind, _, target = stage.partition("_")
    extra = EXTRA_TARGETS.get(kind, ())
    if kind not in KINDS or (target not in TARGETS and target not in extra):
        raise ValueError("unknown attention stage %r" % stage)
    return kind, target


def options_of(context: Any) -> Dict[str, Any]:
    """The run's options from a worker context (the JSON object of the option `OPTION`)."""
    text = context.options.get(OPTION)
    value = json.loads(text) if text else {}
    if not isinstance(value, dict):
        raise ValueError("the option %r must hold a JSON object" % OPTION)
    return value


def run(stage: str, options: Dict[str, Any]) -> Dict[str, Any]:
    """Run one attention stage in this (target) interpreter and return its data."""
    kind, target = parse(stage)
    module = importlib.import_module("." + KINDS[kind], __name__)
    data: Dict[str, Any] = module.run(target, options)
    return data


def stage(kind: str) -> Callable[..., Dict[str, Any]]:
    """The worker's entry for stages of `kind`: run(context, target) -> data."""

    def run_stage(context: Any, target: str) -> Dict[str, Any]:
        return run(stage_name(kind, target), options_of(context))

    return run_stage
