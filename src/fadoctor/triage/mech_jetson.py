"""A Jetson (Orin, Xavier: the Tegra GPU under L4T/JetPack) running a torch from PyTorch's own
index or PyPI: those aarch64 wheels are server (SBSA) builds, and no arch list of theirs holds
sm_87 or sm_72 (the matrix's torch arch lists, torch_cuda_facts.md §1.3), so CUDA is unavailable
or has no kernels there. NVIDIA publishes PyTorch wheels per JetPack (its "Installing PyTorch for
Jetson Platform" guide) and jetson-containers its l4t-pytorch images (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, Signal, dedupe

JETSON = re.compile(r"\bJetson\b|\bJetPack\b|\bJP\s?[456]\d?\b|\bL4T\b|\b(?:AGX\s+)?(?:Orin|Xavier)"
                    r"\b", re.I)
_JETSON = JETSON
# a torch from PyTorch's index or PyPI: a +cuXXX local tag, or the index named in a command
_SERVER_TORCH = re.compile(r"torch[=-]=?\d+\.\d+(?:\.\d+)?\+cu\d{3}|whl/(?:nightly/)?cu\d{3}|"
                           r"pip3? install[^\n]{0,80}\btorch\b", re.I)
_NO_CUDA = re.compile(r"is_available\(\)\W{0,20}(?:returns?\s+|gives?\s+|->\s*|is\s+|as\s+)?False|"
                      r"no kernel image is available|CUDA (?:is )?not available", re.I)
_TEGRA = (Version("7.2"), Version("8.7"))


def pytorch_index_wheel(ctx: Context) -> List[Signal]:
    jetson = ctx.first(_JETSON, ("jetson", "jetpack", "jp", "l4t", "orin", "xavier"))
    if jetson is None or ctx.has("thor", "t5000", "t4000") is not None:
        return []
    cc = ctx.gpu_cc_exact
    if cc is not None and cc not in _TEGRA:
        return []
    wheel = ctx.first(_SERVER_TORCH, ("torch", "whl/"))
    failed = ctx.first(_NO_CUDA, ("is_available", "no kernel image", "not available"))
    if wheel is None or failed is None:
        return []
    return [Signal("jetson_server_torch", Category.WRONG_WHEEL,
                   "a torch from PyTorch's index or PyPI on a Jetson: its aarch64 wheels are "
                   "server (SBSA) builds without kernels for the Jetson's GPU (sm_87 Orin, sm_72 "
                   "Xavier) or its L4T driver stack, so CUDA is unavailable there",
                   dedupe([ctx.quote(jetson[0]), ctx.quote(wheel[0]), ctx.quote(failed[0])]),
                   IMPLIED,
                   [Remedy(summary="Install NVIDIA's PyTorch wheel for your JetPack release "
                           "(NVIDIA's 'Installing PyTorch for Jetson Platform' guide lists one "
                           "per JetPack), with torchvision built from source against it; or run "
                           "in a jetson-containers l4t-pytorch image for your L4T release "
                           "(dustynv/l4t-pytorch), which has both.",
                           commands=["cat /etc/nv_tegra_release"])],
                   needs=[("the JetPack / L4T release", "cat /etc/nv_tegra_release")])]
