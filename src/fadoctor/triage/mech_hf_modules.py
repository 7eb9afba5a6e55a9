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
from typing import Any, Dict, List, Optional, Tuple

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
def _raw() -> Dict[str, Any]:
    raw: Dict[str, Any] = json.loads(_path("transformers_modules.json").read_text(encoding="utf-8"))
    return raw


def table() -> Tuple[Tuple[str, ...], Dict[str, str]]:
    return tuple(_raw()["tags"]), _raw()["modules"]


def exported() -> Dict[str, str]:
    """The names `from transformers import X` finds, by release (those some releases lack)."""
    names: Dict[str, str] = _raw().get("names", {})
    return names


def missing(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_MISSING, ("no module named 'transformers.",
                                            "no module named \"transformers.")):
        module = found.group(1)
        signal = _by_release(ctx, index, table()[1].get(module), "hf_module",
                             f"{module} is in transformers", "the module", SOURCE,
                             "the code importing it (a library, or remote model code)")
        if signal is not None:
            return [signal]
    return []


def _by_release(ctx: Context, index: int, runs: Optional[str], mechanism: str, what: str,
                noun: str, source: str, who: str) -> Optional[Signal]:
    """What some transformers releases have (`runs` of the table's tags) and the installed one
    lacks: the first release that has it (code written for a newer transformers), or the last
    (for an older one). None where the table does not know it or the installed release has it."""
    if runs is None:
        return None
    tags = tuple(_raw()["tags"])
    have = _indexes(runs)
    at = minor_index(tags, _installed(ctx))
    if at is not None and at in have:
        return None  # the installed release has it: another cause (a broken install)
    caller = frame_package(ctx, index, ("transformers", "importlib")) or who
    quotes = dedupe([ctx.quote(index), *ctx.quotes("transformers")])
    installed = ctx.package("transformers")
    newer = [i for i in have if at is None or i > at]
    if newer and (at is not None or have[-1] == len(tags) - 1):
        first = Version(tags[newer[0]])
        since = tags[newer[0]]  # the wheel read: the minor's latest release
        return Signal(mechanism, Category.VERSION_CONFLICT,
                      f"{what} from {first.major}.{first.minor} ({since} has it)"
                      + (f", and the installed {installed.value} predates it"
                         if installed is not None and at is not None else "")
                      + f": {caller} was written for a newer transformers", quotes, NAMED,
                      [Remedy(summary=f"Upgrade transformers to {since} or later (the release "
                              f"that has {noun}, with the versions of the other libraries it "
                              "supports).", commands=[command("pip", "install", "--upgrade",
                                                              requirement("transformers", since,
                                                                          op=">="))]),
                       Remedy(summary=f"Or pin {caller} to a release written for the "
                              "installed transformers.")],
                      details={"source": source})
    last = tags[have[-1]]
    return Signal(mechanism, Category.VERSION_CONFLICT,
                  f"{what} up to {last} only (not in {tags[have[-1] + 1]}): {caller} was written "
                  "for an older transformers", quotes, NAMED,
                  [Remedy(summary=f"Pin transformers to {last}, the last release with it, or "
                          f"upgrade {caller} to a release written for this transformers.",
                          commands=[command("pip", "install", requirement("transformers", last))])],
                  details={"source": source})


# "cannot import name 'Qwen2_5_VLForConditionalGeneration' from 'transformers'" (a closing quote
# sometimes lost in the retelling), "module 'transformers' has no attribute 'X'"
_NAME = re.compile(r"cannot import name ['\u2018\u2019\"`]?(\w{1,100})['\u2018\u2019\"`]? from "
                   r"['\u2018\u2019\"`]?transformers['\u2018\u2019\"`]?(?:[\s`.,;:(]|$)|module "
                   r"['\u2018\u2019\"`]transformers['\u2018\u2019\"`] has no attribute "
                   r"['\u2018\u2019\"`](\w{1,100})")
NAMES_SOURCE = ("transformers' release wheels: their lazy import lists, data/transformers_modules.json "
                "(tools/gen_hf_modules.py)")


def missing_name(ctx: Context) -> List[Signal]:
    """A name `from transformers import X` does not find in the installed release, which other
    releases export: the code importing it was written for another transformers."""
    for index, found in ctx.find(_NAME, ("from 'transformers", 'from "transformers',
                                         "from transformers", "from `transformers",
                                         "module 'transformers'")):
        name = found.group(1) or found.group(2)
        signal = _by_release(ctx, index, exported().get(name), "hf_name",
                             f"transformers exports {name}", name, NAMES_SOURCE,
                             "the code importing it")
        if signal is not None:
            return [signal]
    return []
