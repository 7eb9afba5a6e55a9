"""A request for a prebuilt wheel rather than an error: "I'd appreciate it if you could release a
whl file for torch 2.5.0", "Lacks prebuild whl for PyTorch2.3+cu118", "wheels for CUDA 12.1 have
been missing after v2.2.2". For flash-attn (the package a report means when it names no other)
the matrix holds each release's wheel assets and setup.py's rule for the CUDA tag it fetches
(data/compat_matrix.yaml flash_attn_releases, read from each tag's release workflow): the
releases with a wheel for the torch asked about, or the tag a CUDA minor gets. Other projects'
wheels are their own indexes' business: the way out is a combination they publish, a later
release, or a build from source (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.matrix.fa2 import asset_minors, cuda_tag_for
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal

_WHEEL = r"(?:whl|wheels?|pre-?built|prebuild)"
_TORCH_ASK = re.compile(rf"\b{_WHEEL}\b[^\n]{{0,40}}?\b(?:for\s+)?(?:py)?torch\s*(\d\.\d{{1,2}})\b|"
                        rf"\b(?:py)?torch\s*(\d\.\d{{1,2}})(?:\.\d+)?\b[^\n]{{0,30}}?\b{_WHEEL}\b",
                        re.I)
_CUDA_ASK = re.compile(rf"\b{_WHEEL}\b[^\n]{{0,30}}?\bfor\s+(?:CUDA\s*|cu)(1[12])\.?(\d)\b", re.I)
# another project's wheels: its own index, its own axes
_OTHERS = ("flashinfer", "xformers", "vllm", "sglang", "lmdeploy", "sageattention", "mamba",
           "causal-conv1d", "bitsandbytes", "deepspeed", "apex", "triton", "llama-cpp", "auto-gptq",
           "autoawq", "exllama")


def _other(ctx: Context) -> Optional[str]:
    low = ctx.text.lower
    return next((name for name in _OTHERS if name in low), None)


# the words of a request or of an absence, on the same line or the one before
_REQUEST = re.compile(r"\b(?:release|upload|provide|publish|lacks?|missing|no|404|please|could you|"
                      r"would you|appreciate|when will|is there|any plans?|add)\b", re.I)


def _asked(ctx: Context) -> Tuple[Optional[Tuple[int, re.Match[str]]], str]:
    for pattern, kind in ((_TORCH_ASK, "torch"), (_CUDA_ASK, "cuda")):
        for hit in ctx.find(pattern, ("whl", "wheel", "built", "prebuild")):
            if _REQUEST.search(" ".join(ctx.text.lines[max(0, hit[0] - 1):hit[0] + 1])):
                return hit, kind
    return None, ""


def requested(ctx: Context) -> List[Signal]:
    if any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []  # an error says more than the request
    hit, kind = _asked(ctx)
    if hit is None:
        return []
    other = _other(ctx)
    if other is not None:
        return [Signal("wheel_request", Category.WRONG_WHEEL,
                       f"{other} publishes prebuilt wheels for some torch and CUDA pairs only, "
                       "and the one asked about is not among them", [ctx.quote(hit[0])], HINTED,
                       [Remedy(summary=f"Use a torch and CUDA pair {other}'s index lists (another "
                               "torch/CUDA combination), or a newer release of it that adds this "
                               "pair; otherwise build from source against the installed "
                               "torch.")])]
    if kind == "cuda":
        return _cuda_minor(ctx, hit)
    try:
        minor = str(Version(hit[1].group(1) or hit[1].group(2)))
    except InvalidVersion:
        return []
    releases = [r for r in ctx.matrix.flash_attn_releases if minor in asset_minors(r)]
    if not releases:
        return [Signal("wheel_request", Category.WRONG_WHEEL,
                       f"no flash-attn release publishes a prebuilt wheel for torch {minor}",
                       [ctx.quote(hit[0])], HINTED,
                       [Remedy(summary=f"Build flash-attn from its release sdist against torch "
                               f"{minor} (nvcc of torch's CUDA major, MAX_JOBS to bound the "
                               "memory), or install a torch that a release publishes wheels for "
                               "(`fadoctor fix --print-pins` lists them).",
                               commands=[command("pip", "install", "flash-attn",
                                                 "--no-build-isolation")])])]
    first, newest = releases[0].version, releases[-1].version
    return [Signal("wheel_request", Category.WRONG_WHEEL,
                   f"flash-attn's prebuilt wheels for torch {minor} start with {first} (newest: "
                   f"{newest}); an older release has none, so pip compiles it",
                   [ctx.quote(hit[0])], HINTED,
                   [Remedy(summary=f"Install flash-attn {newest}, a release with a prebuilt wheel "
                           f"for torch {minor} (from {first} on): its setup.py downloads the "
                           "wheel that matches torch's CUDA and C++ ABI instead of compiling.",
                           commands=[command("pip", "install", f"flash-attn=={newest}",
                                             "--no-build-isolation")])],
                   details={"source": "data/compat_matrix.yaml flash_attn_releases (assets)"})]


def _cuda_minor(ctx: Context, hit: Tuple[int, re.Match[str]]) -> List[Signal]:
    cuda = Version(f"{hit[1].group(1)}.{hit[1].group(2)}")
    newest = ctx.matrix.flash_attn_releases[-1]
    tag = cuda_tag_for(newest.cuda_tag_rule, cuda, "")  # no torch minor: only 2.1 rules used one
    if tag is None:
        return []
    return [Signal("wheel_request", Category.INFO,
                   f"flash-attn builds no wheel per CUDA minor: its setup.py fetches the cu{tag} "
                   f"wheel for a torch built with CUDA {cuda} ({newest.version})",
                   [ctx.quote(hit[0])], HINTED,
                   [Remedy(summary=f"Nothing is missing: a wheel built with one CUDA {cuda.major}.x "
                           f"runs on any {cuda.major}.x runtime (CUDA minor version "
                           f"compatibility), so setup.py downloads the cu{tag} wheel for torch "
                           f"with CUDA {cuda}; install as usual.",
                           commands=[command("pip", "install", "flash-attn",
                                             "--no-build-isolation")])],
                   details={"source": "data/compat_matrix.yaml flash_attn_releases (cuda_tag_rule)"})]


# Docker's words for an image with no build for the host's platform (moby/distribution: "no
# matching manifest for linux/arm64/v8 in the manifest list entries"): a GPU server's image is
# published for linux/amd64 (x86_64) only, and an Apple silicon Mac or an ARM server is arm64.
_MANIFEST = re.compile(r"no matching manifest for ([\w/]{3,40}) in the manifest list entries")


def no_image_for_platform(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MANIFEST, ("no matching manifest",))
    if hit is None:
        return []
    platform = hit[1].group(1)
    return [Signal("image_platform", Category.PLATFORM_UNSUPPORTED,
                   f"the image has no build for {platform}, this host's platform: it is published "
                   "for linux/amd64 (x86_64) machines",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Run the image on an x86_64 Linux machine with an NVIDIA GPU "
                           "(a CUDA image needs one); on an Apple silicon Mac, use the project's "
                           "local (non-Docker) install for macOS where it has one. --platform "
                           "linux/amd64 only emulates the CPU: it gets no GPU.")])]


# "How to install tensorrt-llm in python3.11?": a package whose wheels carry some Pythons' tags
# only (cp310, cp312), asked about another Python.
_PY_ASK = re.compile(r"\binstall\s+([A-Za-z][\w.-]{1,40})\s+(?:in|on|with|for|under|using)\s+"
                     r"python\s?(3\.\d{1,2})\b", re.I)


def python_asked(ctx: Context) -> List[Signal]:
    if any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []
    hit = ctx.first(_PY_ASK, ("python",))
    if hit is None:
        return []
    package, python = hit[1].group(1), hit[1].group(2)
    return [Signal("wheel_request", Category.WRONG_WHEEL,
                   f"{package}'s wheels carry some Python versions' tags only; the question is "
                   f"about Python {python}", [ctx.quote(hit[0])], HINTED,
                   [Remedy(summary=f"Use a Python that {package}'s wheels list (the cpXY tags of "
                           "its files on the index, or its install docs), in a fresh virtual "
                           "environment, or the project's container image, which carries its "
                           "own Python.")])]


# Docker asked for GPUs (`--gpus all`) with no NVIDIA runtime registered: "could not select
# device driver "" with capabilities: [[gpu]]" (moby daemon; `driver: nvidia` in a compose file's
# device reservation names it: device driver "nvidia"); NVIDIA Container Toolkit's install
# guide: install nvidia-container-toolkit, `nvidia-ctk runtime configure --runtime=docker`, and
# restart the Docker daemon.
_NO_GPU_RUNTIME = re.compile(r"could not select device driver \"?(?:nvidia)?\"? with capabilities: "
                             r"\[\[gpu\]\]")


def no_gpu_runtime(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_GPU_RUNTIME, ("could not select device driver",))
    if hit is None:
        return []
    return [Signal("container_runtime", Category.NOT_INSTALLED,
                   "Docker has no NVIDIA runtime to give the container the GPUs it asks for "
                   "(`--gpus all`, or a compose file's GPU reservation): the NVIDIA Container "
                   "Toolkit is not installed (or not registered with Docker)", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Install the NVIDIA Container Toolkit (nvidia-container-toolkit, "
                           "from NVIDIA's repository for your distribution), register it with "
                           "Docker, and restart the daemon; the host's NVIDIA driver must already "
                           "work (nvidia-smi).",
                           commands=["sudo nvidia-ctk runtime configure --runtime=docker",
                                     "sudo systemctl restart docker"])],
                   details={"source": "NVIDIA Container Toolkit install guide (nvidia-ctk runtime "
                                      "configure --runtime=docker)"})]
