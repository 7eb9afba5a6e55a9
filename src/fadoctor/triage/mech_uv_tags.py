"""uv's resolver when a package has releases but none with a wheel for this interpreter or
machine: "flashinfer==0.1.2+cu121torch2.3 has no wheels with a matching Python ABI tag (e.g.,
`cp312`)", with "matching Python version tag", "Python implementation tag" or "platform tag" for
the other parts of a wheel's name (astral-sh/uv crates/uv-resolver/src/pubgrub/report.rs, the
incompatible-wheel reasons), and its hint naming the tags the wheels do carry ("we only found
wheels for `flashinfer` (v0.1.2) with the following Python ABI tags: `cp38`, ..."). pixi resolves
PyPI dependencies with uv and prints the same words (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_NO_WHEEL = re.compile(r"([A-Za-z0-9][\w.-]{0,80}?)(?:[=<>!~]=?[\w.+*]{1,60})?\s+has no wheels with "
                       r"a matching (Python ABI|Python version|Python implementation|platform) tag"
                       r"(?:\s*\(e\.g\.,?\s*`?([\w.]{1,40})`?\))?")
_HINT_TAGS = re.compile(r"with the following (?:Python ABI|Python version|platform) tags?:\s*((?:`?"
                        r"[\w.]{1,40}`?,?\s*(?:and\s+)?){1,40})")
_CP = re.compile(r"cp3(\d{1,2})")


def no_matching_wheel(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_WHEEL, ("has no wheels with a matching",))
    if hit is None:
        return []
    index, found = hit
    package, part, tag = found.group(1), found.group(2), found.group(3)
    quotes = dedupe([ctx.quote(index), *ctx.quotes("python", "os", "machine")])
    if part == "platform":
        return [Signal("uv_no_wheel", Category.PLATFORM_UNSUPPORTED,
                       f"{package} publishes no wheel for this platform"
                       + (f" ({tag})" if tag else "") + ": uv found releases, none built for this "
                       "operating system and machine", quotes, NAMED,
                       [Remedy(summary=f"Run it where {package}'s wheels exist (most CUDA packages: "
                               "Linux x86_64; on Windows, WSL2), or build it from source here.")])]
    here = tag or (f"cp3{ctx.python.minor}" if ctx.python is not None else None)
    newest = _newest_listed(ctx)
    where = f"Python 3.{newest}" if newest is not None else "a Python version its wheels are built for"
    return [Signal("uv_no_wheel", Category.WRONG_WHEEL,
                   f"{package} publishes no wheel for this Python"
                   + (f" ({here})" if here else "") + f" (uv: no matching {part} tag): the "
                   "releases it found are built for other Python versions", quotes, NAMED,
                   [Remedy(summary=f"Create the environment with {where}, the newest its wheels "
                           "carry, and install there" if newest is not None else
                           f"Create the environment with {where} (the package's release page "
                           "lists the cpXY tags), and install there; or build it from source "
                           "for this Python.",
                           commands=[command("uv", "venv", "--python", f"3.{newest}")]
                           if newest is not None else [])])]


def _newest_listed(ctx: Context) -> Optional[int]:
    hit = ctx.first(_HINT_TAGS, ("with the following",))
    minors = [int(m) for m in _CP.findall(hit[1].group(1))] if hit else []
    return max(minors) if minors else None


# uv taking a package PyTorch's index also serves (markupsafe, jinja2, numpy, with fewer wheels
# than PyPI) from that index: uv's default index strategy, first-index, takes each package from
# the first index that has it. "Distribution `markupsafe==3.0.2 @ registry+https://…/whl/cu118`
# can't be installed because it doesn't have a source distribution or wheel for the current
# platform". uv's PyTorch guide (astral-sh/uv@0.13.6:docs/guides/integration/pytorch.md) marks
# the PyTorch index `explicit = true` and pins torch to it in [tool.uv.sources], so nothing else
# comes from it; `--index-strategy unsafe-best-match` looks at every index instead.
_FROM_INDEX = re.compile(r"Distribution `([A-Za-z0-9][\w.-]{0,80})==([\w.+!]{1,40}) @ "
                         r"registry\+(\S{1,200}?/whl/[\w.-]{1,40})/?` can't be installed because "
                         r"it doesn't have a source distribution or wheel for the current platform")
_TORCH_OWN = re.compile(r"^(?:torch\w*|triton|pytorch-triton[\w-]*|nvidia-[\w-]+|fbgemm-gpu\w*)$")
_GUIDE = "astral-sh/uv@0.13.6:docs/guides/integration/pytorch.md"


def torch_index_first(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FROM_INDEX, ("can't be installed because it doesn't have",), ("/whl/",))
    if hit is None or _TORCH_OWN.match(hit[1].group(1).lower()):
        return []
    package, version, url = hit[1].group(1), hit[1].group(2), hit[1].group(3)
    config = (f'[[tool.uv.index]]\nname = "pytorch"\nurl = "{url}"\nexplicit = true\n\n'
              '[tool.uv.sources]\ntorch = { index = "pytorch" }\n'
              'torchvision = { index = "pytorch" }')
    return [Signal("uv_torch_index", Category.WRONG_WHEEL,
                   f"uv took {package} {version} from PyTorch's index, which serves some other "
                   "packages with fewer wheels than PyPI: uv's default index strategy takes each "
                   "package from the first index that has it, and that index's copy has no wheel "
                   "for this Python or platform",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("python")]), NAMED,
                   [Remedy(summary="Mark PyTorch's index explicit and take only torch (and its "
                           "domain libraries) from it, in pyproject.toml, as uv's PyTorch guide "
                           f"does ({_GUIDE}); everything else then comes from PyPI.",
                           code=config),
                    Remedy(summary="Or let uv look at every index for each package (uv's "
                           "--index-strategy unsafe-best-match), or pin the package to a "
                           "release with a wheel for this Python.")],
                   details={"source": _GUIDE})]
