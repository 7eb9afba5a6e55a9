"""text-embeddings-inference (TEI): a build runs only on the compute capabilities its
CUDA_COMPUTE_CAP was built for, and its flash-attention v1 path on Turing loses precision (null
or NaN embeddings). Sources: huggingface/text-embeddings-inference
backends/candle/src/compute_cap.rs@0ac7714 (compute_cap_matching: 75 needs a 75 build, 80-86 run
an 80 build, 86 an 86 one, 87, 89, 90, 100 and 120 their own; nothing else) and README.md@007ac68
("Docker Images": turing-, no prefix for 80, 86-, 89-, hopper- tags; Volta not supported; "Flash
Attention is turned off by default for the Turing image as it suffers from precision issues",
USE_FLASH_ATTENTION) (pure)."""

from __future__ import annotations

import re
from typing import Dict, List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe

_CAP = re.compile(r"Runtime compute cap (\d{2,3}) is not compatible with compile time compute cap "
                  r"(\d{2,3})")
# the image tag prefix of each build (README "Docker Images"; 100- and 120- from later releases)
_TAG: Dict[int, str] = {75: "turing-", 80: "", 86: "86-", 89: "89-", 90: "hopper-", 100: "100-",
                        120: "120-"}
# the builds README.md@007ac68 (0.7) already publishes an image for
_SINCE_07 = {75, 80, 86, 89, 90}
_BUILDS = {75: 75, 80: 80, 81: 80, 82: 80, 83: 80, 84: 80, 85: 80, 86: 86, 87: 87, 89: 89, 90: 90,
           100: 100, 120: 120}
_SOURCE = {"source": "huggingface/text-embeddings-inference backends/candle/src/compute_cap.rs "
                     "(compute_cap_matching); README.md (Docker Images)"}
_TEI = ("text-embeddings-inference", "text-embeddings-router")
_NULL = re.compile(r"\[\[?\s*(?:null|None|NaN)\s*,|\breturns? (?:only )?(?:a list of )?"
                   r"(?:null|None|NaN)s?\b|\b(?:null|NaN) embeddings?\b", re.I)
_TURING_TAG = re.compile(r"text-embeddings-inference:turing-|\bg4dn\.", re.I)


def _image(cap: int) -> str:
    tag = _TAG.get(cap)
    return f"text-embeddings-inference:{tag}<version>" if tag is not None else ""


def compute_cap(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CAP, ("runtime compute cap",))
    if hit is None:
        return []
    runtime, built = int(hit[1].group(1)), int(hit[1].group(2))
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    build = _BUILDS.get(runtime)
    if build is None:
        return [Signal("tei_compute_cap", Category.GPU_UNSUPPORTED,
                       f"TEI has no build for compute capability {runtime / 10:g}: its kernels are "
                       "built for 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0 and 12.0 only (Volta and older "
                       "are not supported)", quotes, NAMED,
                       [Remedy(summary="Run TEI on a GPU it builds for, or its CPU image "
                               "(text-embeddings-inference:cpu-<version>).")], details=_SOURCE)]
    image = _image(build)
    if build not in _SINCE_07:  # no early release builds it: an old TEI, not only a wrong image
        return [Signal("tei_compute_cap", Category.GPU_UNSUPPORTED,
                       (f"this TEI release refuses compute cap {runtime} even built for it: its "
                        "compute-cap table predates the GPU" if built == runtime else
                        f"this TEI build was compiled for compute cap {built}, and compute cap "
                        f"{runtime} has its own build only in later TEI releases")
                       + " (Jetson Orin's 8.7, Blackwell's 10.0 and 12.0 are not in the early "
                       "releases' images)",
                       quotes, NAMED,
                       [Remedy(summary="Upgrade TEI to a release that builds for compute cap "
                               f"{build}" + (f" and use its image {image}" if image else "")
                               + f", or build one with --build-arg CUDA_COMPUTE_CAP={build} from "
                               "a release whose compute_cap.rs lists it.",
                               commands=[f"docker build . -f Dockerfile-cuda --build-arg "
                                         f"CUDA_COMPUTE_CAP={build}"])], details=_SOURCE)]
    return [Signal("tei_compute_cap", Category.WRONG_WHEEL,
                   f"this TEI build was compiled for compute cap {built} and the GPU is {runtime}: "
                   f"each TEI image runs on its own generation only (compute cap {runtime} needs "
                   f"the {build} build)", quotes, NAMED,
                   [Remedy(summary=(f"Use the image built for compute cap {build}: {image} (the "
                                    "tag without a prefix is the compute cap 80 build)"
                                    if image else f"No published image is built for {build}")
                           + f", or build one with --build-arg CUDA_COMPUTE_CAP={build}.",
                           commands=[f"docker build . -f Dockerfile-cuda --build-arg "
                                     f"CUDA_COMPUTE_CAP={build}"])], details=_SOURCE)]


def turing_nulls(ctx: Context) -> List[Signal]:
    """TEI on a Turing GPU answering null/NaN embeddings: flash-attention v1's precision there."""
    if ctx.has(*_TEI) is None and not ctx.text.containing(("tei ", "tei:", "(tei)")):
        return []
    null = ctx.first(_NULL, ("null", "none", "nan"))
    turing = ctx.first(_TURING_TAG, ("turing-", "g4dn"))
    cc = ctx.gpu_cc_exact
    on_turing = turing is not None or (cc is not None and cc == Version("7.5"))
    if null is None or not on_turing:
        return []
    quotes = dedupe([ctx.quote(null[0]), *([ctx.quote(turing[0])] if turing else []),
                     *([ctx.gpu[2]] if ctx.gpu else [])])
    return [Signal("tei_turing_nulls", Category.NUMERICS,
                   "TEI's flash-attention (v1) path on Turing (compute cap 7.5: T4, RTX 20xx; "
                   "AWS g4dn) loses precision and returns null/NaN embeddings", quotes, HINTED,
                   [Remedy(summary="Turn TEI's flash attention off on Turing (the turing "
                           "images of 0.7 and later keep it off by default): "
                           "USE_FLASH_ATTENTION=False, and serve in float32 (--dtype float32) if "
                           "nulls remain; or run on an Ampere or "
                           "newer GPU (e.g. an AWS g5 instance).",
                           commands=["export USE_FLASH_ATTENTION=False"])],
                   details=_SOURCE)]
