"""A model's own method refusing a keyword that transformers' generate() began to pass at some
release: "LlavaLlamaForCausalLM.forward() got an unexpected keyword argument 'cache_position'"
(LlamaForCausalLM's prepare_inputs_for_generation returns it from 4.38), "BARTDecoder.
prepare_inputs_for_inference() got an unexpected keyword argument 'cache_position'" (generate()
puts it into model_kwargs from 4.39). The model's code — remote code, or a library's own model
class — was written before that release, so the fix is the last transformers before it, or model
code that accepts it. Looked up in data/transformers_generate.yaml (tools/gen_hf_generate.py, from
transformers' release wheels). Read only when a report shows such an error (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage import data_yaml
from fadoctor.triage.api_tables import _indexes
from fadoctor.triage.context import Context
from fadoctor.triage.mech_hf_attrs import _installed, _path
from fadoctor.triage.signal import NAMED, Signal

SOURCE = ("transformers' release wheels: data/transformers_generate.yaml "
          "(tools/gen_hf_generate.py)")
_CALL = re.compile(r"\b([A-Za-z_]\w{0,80})\.(forward|__call__|prepare_inputs_for_\w{1,40})\(\) "
                   r"got an unexpected keyword argument ['\u2018\u2019\"`](\w{1,60})")
_ROUTE = {"forward": "forward", "__call__": "forward"}


@dataclass(frozen=True)
class Passed:
    tags: Tuple[str, ...]
    covered_from: Dict[str, int]
    routes: Dict[str, Dict[str, str]]

    def first(self, route: str, key: str) -> Optional[int]:
        """The release from which generate() passes the key without a break to the newest, where
        the table reads the code of releases before it (else the key may be older than it)."""
        runs = self.routes.get(route, {}).get(key)
        if runs is None:
            return None
        last_run = str(runs).split(",")[-1]
        start = _indexes(last_run)[0]
        return start if start > self.covered_from.get(route, 0) else None

    def index(self, installed: Optional[Version]) -> Optional[int]:
        return minor_index(self.tags, installed)


def minor_index(tags: Tuple[str, ...], installed: Optional[Version]) -> Optional[int]:
    """The installed release's index in a table of each minor's latest release, compared by
    minor (4.39.1 is 4.39.3's); -1 below the first, None when the installed is unknown."""
    if installed is None:
        return None
    minor = installed.release[:2]
    below = [i for i, tag in enumerate(tags) if Version(tag).release[:2] <= minor]
    return below[-1] if below else -1


@lru_cache(maxsize=1)
def table() -> Passed:
    raw = data_yaml.load(_path("transformers_generate.yaml"))
    return Passed(tuple(raw["tags"]), dict(raw["covered_from"]),
                  {route: raw[route] for route in ("prepare", "forward")})


def _minor(tag: str) -> str:
    return ".".join(tag.split(".")[:2])


def keyword(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_CALL, ("unexpected keyword argument",)):
        cls, method, key = found.groups()
        route = _ROUTE.get(method, "prepare")
        data = table()
        first = data.first(route, key)
        if first is None:
            continue
        at = data.index(_installed(ctx))
        if at is not None and at < first:
            continue  # the installed transformers does not pass it: another caller does
        since, last = _minor(data.tags[first]), data.tags[first - 1]
        into = "forward" if route == "forward" else "prepare_inputs_for_generation"
        return [Signal(
            "hf_generate", Category.VERSION_CONFLICT,
            f"transformers' generate() passes {key!r} to a model's {into} from {since} on, and "
            f"{cls}.{method}() does not accept it: that model code (remote code, or a library's "
            f"own model class) was written for an earlier transformers",
            [ctx.quote(index)], NAMED,
            [Remedy(summary=f"Pin transformers to {last}, the last release before {since} (with "
                    "the versions of the other libraries that release supports).",
                    commands=[command("pip", "install", requirement("transformers", last))]),
             Remedy(summary=f"Or update the code defining {cls} to a release written for this "
                    f"transformers (one whose {method} accepts {key}).")],
            details={"source": SOURCE})]
    return []
