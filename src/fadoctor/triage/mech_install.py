"""Install failures no catalogued message names: a file pip calls an invalid wheel (often a Git
LFS pointer or a saved web page), the host compiler crashing on flash-attention's sources (an
internal compiler error that is not a kill for memory), and a path over Windows' 260-character
limit (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import mech_build
from fadoctor.triage.catalog_data import entries
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

# pypa/pip@26.2.1:src/pip/_internal/exceptions.py:471 (InvalidWheel, "Invalid (e.g. corrupt)
# wheel", since pip 22.0).
PIP_INVALID = "pypa/pip@26.2.1:src/pip/_internal/exceptions.py:471"
_INVALID = re.compile(r"Wheel '[\w.-]{1,80}' located at ([^\n]{1,300}?) is invalid\.")
# pip's hint for an ENOENT on Windows whose filename is over 260 characters
# (pypa/pip@23.2.1:src/pip/_internal/commands/install.py:762-776, create_os_error_message): the
# unpacked sdist's deepest header (composable_kernel's) passes the limit under %TEMP%.
_FILESYSTEM_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem"
PIP_LONG_PATHS = "pypa/pip@23.2.1:src/pip/_internal/commands/install.py:762-776"
_NO_SUCH = re.compile(r"(?:\[Errno 2\] No such file or directory|\[WinError 206\][^:\n]{0,80}):"
                      r" '([A-Za-z]:[^'\n]{200,2000})'|Windows Long Path support")
# cc1plus's own words (the string "internal compiler error: " in g++-12 12.2.0-14+deb12u1's
# cc1plus); "internal compiler error: Killed" is the kernel's OOM kill (mech_resources.memory).
GCC_ICE = "g++-12 12.2.0-14+deb12u1:/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus"
_ICE = re.compile(r"internal compiler error: (?!killed|Killed|Segmentation fault \(program "
                  r"cicc\))")


def invalid_wheel(ctx: Context) -> List[Signal]:
    hit = ctx.first(_INVALID, ("is invalid",))
    if hit is None:
        return []
    index, found = hit
    path = found.group(1).strip()
    look = [] if "\\" in path or "'" in path else [f"head -c 200 '{path}'"]  # a POSIX path
    return [Signal("invalid_wheel", Category.WRONG_WHEEL,
                   "the file pip was given is not a valid wheel (zip): most often a Git LFS "
                   "pointer checked out without `git lfs pull`, or a web page saved in place of "
                   "the download", [ctx.quote(index)], NAMED,
                   [Remedy(summary="Look at the file: a Git LFS pointer is a ~130-byte text "
                           "file starting 'version https://git-lfs', a saved page starts with "
                           "'<'; fetch the real file (git lfs pull, or download it again), then "
                           "install it.", commands=look),
                    mech_build.prebuilt(ctx)],
                   details={"source": PIP_INVALID})]


def compiler_crash(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ICE, ("internal compiler error",))
    if hit is None or not mech_build.build_context(ctx, hit[0]):
        return []
    index, _ = hit
    return [Signal("compiler_crash", Category.BUILD_TOOLCHAIN,
                   "the host compiler crashed (an internal compiler error) on flash-attention's "
                   "sources: a bug of this gcc version, not of flash-attention",
                   dedupe([ctx.quote(index), *ctx.quotes("gcc")]), NAMED,
                   [_other_gcc(ctx), mech_build.prebuilt(ctx)],
                   details={"source": GCC_ICE})]


def _other_gcc(ctx: Context) -> Remedy:
    """The newest gcc the stated nvcc accepts (crt/host_config.h, as the catalog's cudahost
    entry records it by CUDA release), as nvcc's host compiler."""
    gate = next((e for e in entries() if e.source == "cudahost" and e.limits), None)
    top = None
    if gate is not None and ctx.nvcc is not None:
        top = next((gcc.split(",")[-1] for first, last, gcc in gate.limits
                    if Version(first.rsplit("==", 1)[-1]).release[:2] <= ctx.nvcc.release[:2]
                    <= Version(last.rsplit("==", 1)[-1]).release[:2]), None)
    if top is None:
        return Remedy(summary="Build with another gcc that this nvcc accepts (its crt/"
                      "host_config.h bound; nvcc's error names it when exceeded), passed to nvcc "
                      "as its host compiler with -ccbin.")
    return Remedy(summary=f"Build with gcc {top}, the newest nvcc {ctx.nvcc} accepts "
                  f"({gate.location if gate else 'crt/host_config.h'}), as nvcc's host compiler.",
                  commands=[f"export CC=gcc-{top} CXX=g++-{top}",
                            f"export NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++-{top}'"])


def long_paths(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_SUCH, ("no such file or directory", "winerror 206", "long path"))
    if hit is None:
        return []
    path = hit[1].group(1)
    # The log doubles each backslash of a Windows path in its repr. MAX_PATH (260) counts the
    # terminating NUL, so 259 characters is the longest path that works (Microsoft's "Maximum
    # Path Length Limitation"); pip's own hint waits for more than 260.
    if path is not None and len(path.replace("\\\\", "\\")) < 260:
        return []
    return [Signal("long_paths", Category.PLATFORM_UNSUPPORTED,
                   "a file's path is longer than Windows allows (260 characters) unless long paths "
                   "are enabled: pip could not unpack or install it", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Enable Windows long paths (in PowerShell as administrator; then "
                           "open a new one), or build from a shorter folder (pip's TMPDIR).",
                           commands=[command("reg", "add", _FILESYSTEM_KEY, "/v",
                                             "LongPathsEnabled", "/t", "REG_DWORD", "/d", "1",
                                             "/f")])],
                   details={"source": PIP_LONG_PATHS})]


# pip's MetadataInconsistent (pip/_internal/exceptions.py: "Requested {ireq} has inconsistent
# {field}: expected {f_val!r}, but metadata has {m_val!r}"): the URL's #egg= or the requirement
# names the project by a name its current setup.py no longer declares
_INCONSISTENT = re.compile(r"Requested (.{1,400}?) has inconsistent name: expected '([^']{1,80})', "
                           r"but metadata has '([^']{1,80})'")


def renamed_distribution(ctx: Context) -> List[Signal]:
    hit = ctx.first(_INCONSISTENT, ("inconsistent name",))
    if hit is None:
        return []
    _, asked, actual = hit[1].groups()
    return [Signal("renamed_distribution", Category.VERSION_CONFLICT,
                   f"the source asked for as {asked!r} now declares itself {actual!r}: its "
                   "setup.py renamed the distribution, and the install instructions predate it",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Ask for it by its current name ({actual}), or pin the commit "
                           f"or tag whose setup.py still named it {asked} (an older commit of the "
                           "repository: git+URL@<commit>), as the instructions were written for."),
                    Remedy(summary="The name each commit declares is in its setup.py "
                           "(`name=` / PACKAGE_NAME); the URL without #egg= (keeping its "
                           "&subdirectory=) takes whatever it declares.")],
                   details={"source": "pip's MetadataInconsistent message"})]
