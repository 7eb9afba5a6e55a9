"""torch refusing the cuDNN the process loaded: "cuDNN version incompatibility: PyTorch was compiled
against (8, 5, 0) but found runtime version (8, 4, 1)" (torch/backends/cudnn/__init__.py's _init,
"... but linked against ..." in torch 1.x, "cuDNN version mismatch: ... compiled against 7005 but
linked against 7102" before). Its rule, from that file: another major never works; from cuDNN 7 a
minor at least torch's does. torch's wheels load the cuDNN they ship (bundled in torch/lib, or the
nvidia-cudnn wheel they pin), so an older one found first came from elsewhere: a directory on
LD_LIBRARY_PATH (a system or cluster cuDNN), a conda cudnn package, or a library imported before
torch that loaded its own (TensorFlow, Paddle, CTranslate2) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

SOURCE = "pytorch/pytorch torch/backends/cudnn/__init__.py (_init's version check)"
_CHECK = re.compile(r"cuDNN version (?:incompatibility|mismatch): PyTorch was compiled\s+against "
                    r"\(?([\d, ]{1,20})\)? but (?:linked against|found runtime version) "
                    r"\(?([\d, ]{1,20})\)?")


def _version(text: str) -> Optional[Tuple[int, ...]]:
    """(8, 5, 0) as printed, or cuDNN's integer form (7005 = 7.0.5, 8302 = 8.3.2)."""
    parts = tuple(int(p) for p in re.findall(r"\d+", text))
    if len(parts) >= 2:
        return parts
    if len(parts) == 1 and parts[0] >= 1000:
        major, rest = divmod(parts[0], 1000)
        return (major, *divmod(rest, 100))
    return None


def _dotted(version: Tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def incompatible(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CHECK, ("cudnn version",))
    if hit is None:
        return []
    index, found = hit
    built, loaded = _version(found.group(1)), _version(found.group(2))
    if built is None or loaded is None:
        return []
    if built[0] != loaded[0]:
        why = f"another major (cuDNN {loaded[0]}, torch's is {built[0]})"
    elif loaded < built:
        why = "older than torch's (from cuDNN 7 a runtime's minor must be at least torch's)"
    else:
        why = "not the one torch's check accepts"
    return [Signal(
        "cudnn_version", Category.CUDA_RUNTIME_MISMATCH,
        f"torch was built with cuDNN {_dotted(built)}, and the process loaded cuDNN "
        f"{_dotted(loaded)} first, {why}: a cuDNN from outside torch's own (a directory on "
        "LD_LIBRARY_PATH, a conda cudnn package, or a library imported before torch that loads its "
        "own) shadows the one torch ships",
        [ctx.quote(index)], NAMED,
        [Remedy(summary=f"Let torch load its own cuDNN: take the directory holding cuDNN "
                f"{_dotted(loaded)} out of LD_LIBRARY_PATH for this program (or unset it), "
                "so the cuDNN torch's wheel ships (torch/lib, or site-packages/nvidia/cudnn/lib) "
                "is found first.",
                commands=["unset LD_LIBRARY_PATH"]),
         Remedy(summary="Or, where another library loads its own cuDNN (TensorFlow, Paddle, "
                "CTranslate2), import torch before it, or run it in another process."),
         Remedy(summary=f"Or make the cuDNN found first cuDNN {_dotted(built)} or a later "
                f"{built[0]}.x (the system's or the environment's cudnn package), and remove "
                "a conda cudnn older than that.")],
        details={"source": SOURCE})]
