"""A transformers module missing: "No module named 'transformers.modeling_layers'" (added in 4.52),
"No module named 'transformers.models.qwen3'" (4.51), "'transformers.integrations' is not a
package" (a module before its package release). Looked up in data/transformers_modules.json
(tools/gen_hf_modules.py, the modules of transformers' release wheels): a module some releases
have and the installed one lacks means the code importing it (a library, remote model code) was
written for another transformers (pure)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Dict, List, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage.api_tables import _indexes
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.mech_hf_attrs import _installed, _path
from fadoctor.triage.mech_hf_generate import minor_index
from fadoctor.triage.signal import NAMED, Signal, dedupe

SOURCE = "transformers' release wheels: data/transformers_modules.json (tools/gen_hf_modules.py)"
_MISSING = re.compile(r"No module named ['\u2018\u2019\"`](transformers(?:\.\w{1,60}){1,5})"
                      r"['\u2018\u2019\"`]")


@lru_cache(maxsize=1)
def table() -> Tuple[Tuple[str, ...], Dict[str, str]]:
    raw = json.loads(_path("transformers_modules.json").read_text(encoding="utf-8"))
    return tuple(raw["tags"]), raw["modules"]


def missing(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_MISSING, ("no module named 'transformers.",
                                            "no module named \"transformers.")):
        tags, modules = table()
        module = found.group(1)
        runs = modules.get(module)
        if runs is None:
            continue
        have = _indexes(runs)
        at = minor_index(tags, _installed(ctx))
        if at is not None and at in have:
            continue  # the installed release has it: another cause (a broken install)
        caller = frame_package(ctx, index, ("transformers", "importlib")) or \
            "the code importing it (a library, or remote model code)"
        quotes = dedupe([ctx.quote(index), *ctx.quotes("transformers")])
        newer = [i for i in have if at is None or i > at]
        if newer and (at is not None or have[-1] == len(tags) - 1):
            first = Version(tags[newer[0]])
            since = tags[newer[0]]  # the wheel read: the minor's latest release
            return [Signal("hf_module", Category.VERSION_CONFLICT,
                           f"{module} is in transformers from {first.major}.{first.minor} ({since} has it)"
                           + (f", and the installed {ctx.package('transformers').value} "  # type: ignore[union-attr]
                              "predates it" if at is not None else "") +
                           f": {caller} was written for a newer transformers", quotes, NAMED,
                           [Remedy(summary=f"Upgrade transformers to {since} or later (the "
                                   "release that has the module, with the versions of the other "
                                   "libraries it supports).",
                                   commands=[command("pip", "install", "--upgrade",
                                                     requirement("transformers", since,
                                                                 op=">="))]),
                            Remedy(summary=f"Or pin {caller} to a release written for the "
                                   "installed transformers.")],
                           details={"source": SOURCE})]
        last = tags[have[-1]]
        return [Signal("hf_module", Category.VERSION_CONFLICT,
                       f"{module} is in transformers up to {last} only (removed in "
                       f"{tags[have[-1] + 1]}): {caller} was written for an older transformers",
                       quotes, NAMED,
                       [Remedy(summary=f"Pin transformers to {last}, the last release with it, "
                               f"or upgrade {caller} to a release written for this transformers.",
                               commands=[command("pip", "install",
                                                 requirement("transformers", last))])],
                       details={"source": SOURCE})]
    return []
