"""A library's own table of model types without the model the run loads: `KeyError: 'gemma3'`
raised in that library's code (Liger-Kernel's MODEL_TYPE_TO_APPLY_LIGER_FN, a framework's
registry of supported architectures), where the key is a model type transformers has a module
for from some release on. That release of the library predates the model; its later releases
add it (pure). transformers' own KeyError on a model type is mech_hf_modules' and the config
mechanisms' to read."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import FrozenSet, List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.api_tables import _indexes
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.mech_hf_modules import SOURCE, table
from fadoctor.triage.signal import LOGGED, Signal

_KEY = re.compile(r"KeyError: ['\"]([a-z][a-z0-9_]{1,40})['\"]\s*$")
_PARTS = ("_text", "_vision", "_audio", "_moe")  # a model type of one part ("gemma3_text")


@lru_cache(maxsize=1)
def _model_types() -> FrozenSet[str]:
    return frozenset(m.split(".")[2] for m in table()[1]
                     if m.startswith("transformers.models.") and m.count(".") == 2)


def unknown_model(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_KEY, ("keyerror: '", 'keyerror: "')):
        key = found.group(1)
        model = next((key[:-len(p)] for p in _PARTS if key.endswith(p)), key)
        if model not in _model_types():
            continue
        owner = frame_package(ctx, index, ("importlib", "typing", "functools"))
        if owner is None or owner in ("transformers", "torch"):
            continue
        tags, modules = table()
        first = ".".join(tags[_indexes(modules[f"transformers.models.{model}"])[0]].split(".")[:2])
        return [Signal("model_type_unknown", Category.VERSION_CONFLICT,
                       f"{owner}'s table of model types has no '{key}': the model ({model}, in "
                       f"transformers from {first}) is newer than this {owner} release, whose "
                       "later releases add it",
                       [ctx.quote(index)], LOGGED,
                       [Remedy(summary=f"Upgrade {owner} to a release that supports {model} (its "
                               "changelog names the release that added it).",
                               commands=[command("pip", "install", "--upgrade", owner)]),
                        Remedy(summary=f"Or run without {owner}'s patching for this model.")],
                       details={"source": SOURCE, "key": key})]
    return []
