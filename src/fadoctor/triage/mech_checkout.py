"""A flash-attention build from a git checkout without its submodules: the compiler cannot find
CUTLASS's or composable_kernel's headers, which live in csrc/cutlass and csrc/composable_kernel
(the repository's .gitmodules), fetched only by a recursive clone (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

# Dao-AILab/flash-attention@v2.8.3:.gitmodules: csrc/cutlass (NVIDIA/cutlass) and
# csrc/composable_kernel (ROCm/composable_kernel).
SOURCE = "Dao-AILab/flash-attention@v2.8.3:.gitmodules"
_MISSING = re.compile(r"fatal error(?: C1083: Cannot open include file: ['\"]|: ['\"]?)"
                      r"(cutlass|cute|ck_tile|ck)/[\w/.-]{1,120}['\"]?(?: C1083|:? (?:No such file|"
                      r"file not found)|$)", re.I)
_FOLDER = {"cutlass": "csrc/cutlass", "cute": "csrc/cutlass", "ck_tile": "csrc/composable_kernel",
           "ck": "csrc/composable_kernel"}


# setup.py's own guard where the tree is no git checkout (an archive download: GitHub's
# "Download ZIP" carries no submodules): assert os.path.exists("csrc/cutlass/include/cutlass/
# cutlass.h"), "csrc/cutlass is missing, please use source distribution or git clone"
# (Dao-AILab/flash-attention setup.py, v2.7.x and later; csrc/composable_kernel likewise on ROCm)
_GUARD = re.compile(r"(csrc/cutlass|csrc/composable_kernel) is missing, please use source "
                    r"distribution or git clone")


def submodule(ctx: Context) -> List[Signal]:
    guard = ctx.first(_GUARD, ("is missing, please use source",))
    if guard is not None:
        return [Signal("submodule", Category.BUILD_TOOLCHAIN,
                       f"this flash-attention source tree has no {guard[1].group(1)}: it is not a "
                       "git checkout (an archive such as GitHub's Download ZIP, which leaves the "
                       "submodules out), so setup.py stops",
                       [ctx.quote(guard[0])], NAMED,
                       [Remedy(summary="Build from a recursive git clone (its submodules "
                               "included) or from the release sdist, not from an archive.",
                               commands=["git clone --recursive "
                                         "https://github.com/Dao-AILab/flash-attention.git"]),
                        Remedy(summary="Or install the release, whose sdist carries the "
                               "submodules (or its prebuilt wheel).",
                               commands=["pip install flash-attn --no-build-isolation"])],
                       details={"source": "Dao-AILab/flash-attention setup.py (the csrc/cutlass "
                                          "guard)"})]
    hit = ctx.first(_MISSING, ("fatal error",))
    if hit is None:
        return []
    index, found = hit
    folder = _FOLDER[found.group(1).lower()]
    return [Signal("submodule", Category.BUILD_TOOLCHAIN,
                   f"the build cannot find {found.group(1)}/ headers: flash-attention's {folder} "
                   "is a git submodule, and this source tree was cloned without it", [
                       ctx.quote(index)], NAMED,
                   [Remedy(summary=f"Fetch the submodules in the checkout ({folder}), then build "
                           "again from there.",
                           commands=[f"git submodule update --init --recursive {folder}"]),
                    Remedy(summary="Or install a release, whose sdist carries the submodules "
                           "(or its prebuilt wheel).",
                           commands=["pip install flash-attn --no-build-isolation"])],
                   details={"source": SOURCE})]
