"""A prebuilt wheel of an extension next to a torch that no wheel was built for: a container's or
a source build of torch (NGC's `2.1.0a0+4136153`, `2.3.0a0+40ec155e58.nv24.03`, a `+git` build).
The prebuilt wheels of flash-attn, causal-conv1d and mamba-ssm are compiled against the released
torch of their file name (`+cu122torch2.1cxx11abiTRUE`); a pre-release torch with a commit as its
local version exports other C++ symbols, so such a wheel fails to import, and only a build
against that torch fits. Each package's setup.py skips its wheel download when its FORCE_BUILD
variable is TRUE (flash-attn: FLASH_ATTENTION_FORCE_BUILD; causal-conv1d:
CAUSAL_CONV1D_FORCE_BUILD; mamba-ssm: MAMBA_FORCE_BUILD) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env, name
from fadoctor.triage import errors as e
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context
from fadoctor.triage.remedies import FORCE_BUILD
from fadoctor.triage.signal import FAILED, FAILED_NEEDLES, HINTED, LOGGED, Signal, dedupe

_FORCE = {key: (package, FORCE_BUILD[package]) for key, package in (
    ("flash_attn", "flash-attn"), ("causal_conv1d", "causal-conv1d"), ("mamba_ssm", "mamba-ssm"))}
_WHEEL = re.compile(r"\b(flash_attn|causal_conv1d|mamba_ssm)-(\d[\w.]*)\+cu\d+torch(\d+\.\d+)"
                    r"cxx11abi(?:TRUE|FALSE)", re.I)
_RELEASED_LOCAL = re.compile(r"^(?:cu\d+|cpu|rocm[\d.]+|xpu)$")


# NGC's PyTorch container by its image ("nvcr.io/nvidia/pytorch:23.06-py3"): its torch is NVIDIA's
# build from a commit (2.1.0a0+4136153 in 23.06, per NGC's PyTorch release notes), whatever the
# report leaves unstated
_NGC = re.compile(r"nvcr\.io/nvidia/pytorch:(\d\d\.\d\d)")
_NAMED = (("causal_conv1d", ("causal-conv1d", "causal_conv1d")),
          ("mamba_ssm", ("mamba-ssm", "mamba_ssm")),
          ("flash_attn", ("flash-attn", "flash_attn", "flash-attention")))


def prebuilt_on_source_torch(ctx: Context) -> List[Signal]:
    torch = ctx.torch
    if torch is None:
        return _in_ngc(ctx)
    if not torch.is_prerelease or not torch.local or _RELEASED_LOCAL.match(torch.local):
        return []  # a released torch (or its nightly): the wheel mechanisms judge it
    wheel = ctx.first(_WHEEL, ("cxx11abi",))
    failed = ctx.first(FAILED, FAILED_NEEDLES)
    if wheel is None or failed is None:
        return []
    package, force = _FORCE[wheel[1].group(1).lower()]
    built = wheel[1].group(3)
    return [Signal("prebuilt_on_source_torch", Category.TORCH_VERSION_MISMATCH,
                   f"the {package} wheel was built for the released torch {built}, and this torch "
                   f"{ctx.seen.get(o.TORCH) or torch} is a container's or source build (a "
                   "pre-release with a commit as its local version): no prebuilt wheel matches its "
                   "C++ symbols",
                   dedupe([ctx.quote(wheel[0]), *ctx.quotes("torch"),
                           ctx.quote(failed[0])]), LOGGED,
                   [Remedy(summary=f"Build {package} from source against this torch: {force}=TRUE "
                           "makes its setup.py compile instead of fetching a wheel (it needs nvcc "
                           "of torch's CUDA major).",
                           commands=[command("pip", "uninstall", "-y", name(package)),
                                     command(env(force, "TRUE"), env("MAX_JOBS", ctx.build_jobs),
                                             "pip", "install", "--no-build-isolation",
                                             "--no-cache-dir", name(package))]),
                    Remedy(summary=f"Or use a released torch {built} (from the PyTorch index), "
                           "which the wheel was built for, outside the container.")])]


def _in_ngc(ctx: Context) -> List[Signal]:
    """No torch stated, but NGC's PyTorch container named, and an install of one of the packages
    with prebuilt wheels failing there: the same mismatch, the container's torch unstated."""
    image = ctx.first(_NGC, ("nvcr.io/nvidia/pytorch",))
    failed = ctx.first(FAILED, FAILED_NEEDLES)
    if image is None or failed is None:
        return []
    key = next((key for key, names in _NAMED if ctx.text.containing(names)), None)
    if key is None or e.BUILD in ctx.seen.marks or ctx.text.containing(("nvcc", "building wheel")):
        return []  # a build ran: its own error is the cause, not a prebuilt wheel
    package, force = _FORCE[key]
    return [Signal("prebuilt_on_source_torch", Category.TORCH_VERSION_MISMATCH,
                   f"NGC's PyTorch container {image[1].group(1)} runs NVIDIA's own torch build (a "
                   f"pre-release with a commit as its local version): {package}'s prebuilt wheels "
                   "are compiled against released torch and do not match it",
                   dedupe([ctx.quote(image[0]), ctx.quote(failed[0])]), HINTED,
                   [Remedy(summary=f"Build {package} from source in the container: {force}=TRUE "
                           "makes its setup.py compile against the container's torch instead of "
                           "fetching a wheel.",
                           commands=[command(env(force, "TRUE"), env("MAX_JOBS", ctx.build_jobs),
                                             "pip", "install", "--no-build-isolation",
                                             "--no-cache-dir", name(package))])])]
