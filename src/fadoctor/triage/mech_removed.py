"""A module or name a dependency removed, which older callers still import (pure):
- torch._six: torch 1.13.1's wheel has torch/_six.py (inf, nan, string_classes); torch 2.0
  removed it (pytorch/pytorch#94709). Callers written for torch 1.x (apex, DeepSpeed, old model
  code) fail to import under torch 2.x;
- pkg_resources.packaging: setuptools 69.5.1's pkg_resources binds it ("from
  pkg_resources.extern import packaging", pkg_resources/__init__.py:75), 70.0.0 no longer does;
  torch's cpp_extension imported it ("from pkg_resources import packaging",
  torch==1.13.1:torch/utils/cpp_extension.py:25), so building a CUDA extension with such a torch
  and setuptools 70 fails."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe

_SIX = re.compile(r"No module named ['\"`]?torch\._six['\"`]?|from torch\._six import|"
                  r"from ['\"`]torch\._six['\"`]|module 'torch' has no attribute '_six'")
# the callers that imported it, named in a report without their frames
_CALLERS = ("deepspeed", "apex", "colossalai", "timm", "mmcv", "fairseq", "megatron")
_PKG = re.compile(r"cannot import name ['\"`]packaging['\"`] from ['\"`]?pkg_resources")


_NAME_FROM_SIX = re.compile(r"cannot import name ['\"`](\w{1,60})['\"`] from ['\"`]torch\._six")


def torch_six(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SIX, ("torch._six", "_six"))
    if hit is None:
        return []
    caller = frame_package(ctx, hit[0], ("torch",), after=3) or next(
        (c for c in _CALLERS if ctx.text.containing((c,))), None)
    who = caller or "the code importing it"
    name = _NAME_FROM_SIX.search(ctx.text.lines[hit[0]])
    if ctx.torch is not None and ctx.torch < Version("1.0"):  # older than the caller, not newer
        return [_older_torch(ctx, hit[0], who, name.group(1) if name else None)]
    message = (f"this torch's torch._six no longer has {name.group(1)} (torch._six shrank through "
               f"the 1.x releases and torch 2.0 removed it): {who} was written for an older torch"
               if name else f"torch 2.0 removed torch._six, which {who} still imports: it was "
               "written for torch 1.x")
    # torch._six.container_abcs was collections.abc under another name (torch==1.8.1:_six.py)
    abc = (" container_abcs is collections.abc: `import collections.abc as container_abcs`."
           if name and name.group(1) == "container_abcs" else "")
    if caller == "apex":  # no wheels; the index's `apex` is another project (build_package.py)
        fix = Remedy(summary="Update apex: rebuild NVIDIA apex from its current repository (it "
                     "publishes no wheels, and the index's `apex` is another project): its code "
                     "is written for torch 2; or use the NGC PyTorch container, which ships it "
                     "built." + abc)
    else:
        fix = Remedy(summary=f"Upgrade {who} to a release written for this torch (torch 2 code "
                     "imports math.inf and str instead)" + ("" if caller else "; in code of your "
                     "own, `from torch import inf` and `str` for torch._six.string_classes") + "."
                     + abc,
                     commands=[f"pip install --upgrade {caller}"] if caller else [])
    return [Signal("removed_api", Category.VERSION_CONFLICT, message, [ctx.quote(hit[0])], NAMED,
                   [fix], details={"source": "pytorch/pytorch#94709; torch==1.13.1:torch/_six.py"})]


def _older_torch(ctx: Context, index: int, who: str, name: Optional[str]) -> Signal:
    """A torch 0.x under code written for torch 1.x: the caller is newer than torch, not older."""
    what = f"{name} from torch._six, which" if name else "from torch._six what"
    return Signal("removed_api", Category.VERSION_CONFLICT,
                  f"torch {ctx.torch} is older than the torch {who} was written for: it imports "
                  f"{what} this torch does not have yet",
                  dedupe([ctx.quote(index), *ctx.quotes("torch")]), NAMED,
                  [Remedy(summary=f"Upgrade torch to the 1.x release {who} names in its "
                          "requirements or README (with its matching torchvision), or use a "
                          "release of the code written for this torch.")],
                  details={"source": "torch==1.13.1:torch/_six.py"})


# the same said in a title: "ImportError with pkg_resources and packaging ... setuptools >= 70"
_PKG_TOLD = re.compile(r"\bpkg_resources\b[^\n]{0,60}\bpackaging\b[^\n]{0,80}\bsetuptools\s*"
                       r"(?:>=?|version\s*)?\s*7\d|\bsetuptools\s*(?:>=?)?\s*7\d[^\n]{0,80}"
                       r"\bpkg_resources\b[^\n]{0,60}\bpackaging\b", re.I)


def pkg_resources_packaging(ctx: Context) -> List[Signal]:
    hit, strength = ctx.first(_PKG, ("pkg_resources",)), NAMED
    if hit is None:
        hit, strength = ctx.first(_PKG_TOLD, ("pkg_resources",)), HINTED
    if hit is None:
        return []
    return [Signal("removed_api", Category.VERSION_CONFLICT,
                   "setuptools 70 no longer provides pkg_resources.packaging, which this torch's "
                   "C++ extension builder (or other build code) imports: the build environment's "
                   "setuptools is newer than that code", [ctx.quote(hit[0])], strength,
                   [Remedy(summary="Build with setuptools older than 70 (and, under pip's build "
                           "isolation, build without it so the pin holds), or upgrade torch to a "
                           "release whose cpp_extension imports packaging itself.",
                           commands=['pip install "setuptools<70"'])],
                   details={"source": "setuptools==69.5.1:pkg_resources/__init__.py:75 "
                                      "(70.0.0 drops it); torch==1.13.1:torch/utils/"
                                      "cpp_extension.py:25"})]


# setuptools' private MSVC helpers, which torch's cpp_extension (and torch's own build) call to set
# up the compiler on Windows: setuptools 74.0 stopped exposing distutils._msvccompiler through
# `from setuptools import distutils` (pypa/setuptools#4657), and releases after 75.8.2 dropped
# _msvccompiler._get_vc_env (pypa/setuptools#4874: "working without problem with 75.8.2 or
# earlier"; pytorch/pytorch#148877)
_MSVC_ENV = re.compile(r"['\"`]?distutils(?:\._msvccompiler)?['\"`]? has no attribute "
                       r"['\"`]?(_get_vc_env|_msvccompiler)\b")


def msvc_env(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MSVC_ENV, ("has no attribute",))
    if hit is None:
        return []
    name = hit[1].group(1)
    pin = "setuptools<=75.8.2" if name == "_get_vc_env" else "setuptools<74"
    gone = ("setuptools releases after 75.8.2 removed distutils._msvccompiler._get_vc_env"
            if name == "_get_vc_env" else
            "setuptools 74 and later no longer expose distutils._msvccompiler")
    return [Signal("removed_api", Category.BUILD_TOOLCHAIN,
                   f"{gone}, which torch's C++ extension builder calls to set up MSVC on "
                   "Windows: the build environment's setuptools is newer than this torch's "
                   "builder", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Build with {pin} in the environment, without build "
                           "isolation so the pin holds (or take a prebuilt Windows wheel of the "
                           "package).",
                           commands=[f'pip install "{pin}"'])],
                   details={"source": "pypa/setuptools#4874 (after 75.8.2), #4657 (74.0); "
                                      "pytorch/pytorch#148877"})]
