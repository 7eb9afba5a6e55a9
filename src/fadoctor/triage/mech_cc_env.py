"""Triton's launcher build with CC naming a folder: Triton compiles its small C launcher
(cuda_utils.c, the kernel's launcher) with the compiler the CC environment variable names, else
one it finds (triton/runtime/build.py, _build: `cc = os.environ.get("CC")`), and its command is
the list [cc, src, "-O3", "-shared", ...] that a report prints. Where the list's first element
is a folder (MSVC's bin\\Hostx64\\x64, CUDA's bin) and not a compiler, CC names the folder (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

SOURCE = "triton-lang/triton python/triton/runtime/build.py (_build: CC, then cc_cmd)"
# ['C:\\...\\x64', 'C:\\...\\cuda_utils.c', '-O3', '-shared', ...]: the first element, the source
_CMD = re.compile(r"\[\s*['\"]([^'\"]{1,300})['\"]\s*,\s*['\"][^'\"]{0,300}?(?:cuda_utils|main|"
                  r"__triton_launcher|launcher)\.c['\"]\s*,\s*['\"]-O3['\"]")
_COMPILER = re.compile(r"(?:^|[\\/])(?:cl|gcc|g\+\+|clang|clang\+\+|cc|c\+\+|icx|nvcc|"
                       r"[\w.-]*-(?:gcc|clang|cc)(?:-\d+)?)(?:-\d+(?:\.\d+)*)?(?:\.exe)?\s*$", re.I)


def cc_folder(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CMD, ("-o3",), ("-shared",))
    if hit is None or _COMPILER.search(hit[1].group(1).replace("\\\\", "\\")):
        return []
    folder = hit[1].group(1).replace("\\\\", "\\")
    windows = ":\\" in folder
    compiler = "cl.exe" if windows else "gcc"
    return [Signal("cc_folder", Category.BUILD_TOOLCHAIN,
                   f"Triton builds its launcher with \"{folder}\" as the compiler: that is a "
                   "folder, not a compiler, so the CC environment variable names the folder "
                   f"instead of the compiler in it ({compiler})",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Set CC to the compiler itself ({compiler} in that folder), "
                           "or unset CC so that Triton finds one: "
                           + ('$env:CC = "' + folder.rstrip("\\") + '\\cl.exe" in PowerShell, '
                              'or Remove-Item Env:CC.' if windows else
                              f'export CC="{folder.rstrip("/")}/gcc", or unset CC.'))],
                   details={"source": SOURCE})]
