"""A binary that needs a newer glibc or libstdc++ than the system has: the loader's
"version `GLIBC_2.32' not found (required by ...)" (pure). flash-attn's own binary gets the
wheel built for an older glibc and the releases the matrix knows need it; another package's
binary gets that package built here."""

from __future__ import annotations

import re
from typing import Any, List, Optional

from packaging.version import Version

from fadoctor.checks.classify import symbol_version
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import remedies as r
from fadoctor.triage import wheel_table
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

# The loader quotes the version with a backquote, or a typographic quote (U+2018/U+2019).
_GLIBC = re.compile(r"version [`'\u2018\"]?((GLIBC|GLIBCXX|CXXABI)_(\d+(?:\.\d+)+))[`'\u2018\u2019\"]? "
                    r"not found"
                    r"(?:\s*\(required by ([^)]{1,400})\))?")


def glibc_versions(ctx: Context) -> List[Signal]:
    hits = list(ctx.find(_GLIBC, ("not found",)))
    # the loader's own line, which names the binary, over prose quoting the version alone
    hit = next((h for h in hits if h[1].group(4)), hits[0] if hits else None)
    if hit is None:
        return []
    index, found = hit
    required, kind, number, by = found.groups()
    diagnosis = symbol_version(required)
    quotes = dedupe([ctx.quote(index), *ctx.quotes("os", "glibc")])
    need = parse_version(number)
    out: List[Optional[Remedy]] = []
    env = _conda_libstdcxx(ctx, index) if kind != "GLIBC" else None
    if env is not None:  # the conda environment's own libstdc++ is the one loaded, and older
        return [Signal("glibc", diagnosis.category,
                       f"the conda environment's own libstdc++ ({env}/lib) is loaded first and "
                       f"is older than the one {by.rsplit('/', 1)[-1] if by else 'the binary'} "
                       f"was built with (it lacks {required})", quotes, NAMED,
                       [Remedy(summary="Install a newer libstdc++ into that environment from "
                               "conda-forge (its libstdcxx-ng follows the newest gcc).",
                               commands=[command("conda", "install", "-p", env, "-c",
                                                 "conda-forge", "libstdcxx-ng")])],
                       details={**diagnosis.details, "required_by": by})]
    owner = _OWNER.search(by or "")
    if owner and not owner.group(1).startswith("flash_attn") and owner.group(1) not in ("torch",
                                                                                      "nvidia"):
        return [_glibc_other(ctx, quotes, diagnosis, by, dist_of(owner.group(1)), need, kind)]
    named = _named_owner(ctx, index) if not by and kind == "GLIBC" else None
    if named is not None:  # "bitsandbytes报错 ... GLIBC_2.34' not found": the line names it
        return [_glibc_other(ctx, quotes, diagnosis, named, named, need, kind)]
    if kind == "GLIBC" and need is not None:
        out.append(r.exact_wheel(ctx, glibc_below=need))
        out.extend(_glibc_defects(ctx, need))
        out.append(Remedy(summary=f"Or run on a Linux distribution whose glibc is {need} or newer."))
    else:
        out.append(Remedy(summary=f"The C++ runtime (libstdc++) loaded is older than the one the "
                          f"binary was built with ({required}): in a conda environment install a "
                          "newer libstdc++ into it; else put a newer libstdc++ first.",
                          commands=["conda install -c conda-forge libstdcxx-ng"]))
    flash = bool(ctx.text.containing(("flash_attn", "flash-attn", "flash attn")))
    out.insert(0 if by and "flash" not in by else len(out),
               r.force_build(ctx, "Or compile it on this machine, so that it links against this "
                             "system's C and C++ runtimes.") if flash else
               Remedy(summary="Build it from source on this machine (its project's build "
                      "instructions), so that it links against this system's C and C++ "
                      "runtimes; or run it in a container of a newer distribution."))
    return [Signal("glibc", diagnosis.category,
                   (f"{by.rsplit('/', 1)[-1]}: " if by else "") + diagnosis.explanation, quotes,
                   NAMED, r.keep(out), details={**diagnosis.details, "required_by": by},
                   needs=[] if ctx.glibc else [("the system's glibc", "ldd --version")])]


# the libstdc++ the loader names, inside a conda environment ("<prefix>/bin/../lib/libstdc++.so.6:
# version `GLIBCXX_3.4.32' not found"): the prefix's lib comes first on the loader's path there
_CONDA_LIB = re.compile(r"((?:/[^\s:'\"/]+)*/(?:(?:ana|mini|micro)conda\d?|miniforge\d?|mambaforge)"
                        r"(?:/envs/[^\s/:'\"]+)?)(?:/bin/\.\.)?/lib/libstdc\+\+\.so[.\d]*:")


def _conda_libstdcxx(ctx: Context, index: int) -> Optional[str]:
    found = _CONDA_LIB.search(ctx.text.lines[index])
    return found.group(1) if found else None


_OWNER = re.compile(r"(?:site|dist)-packages[/\\]([A-Za-z_]\w*)")


# the GCC release whose libstdc++ first has each GLIBCXX version (libstdc++ manual, "ABI Policy
# and Guidelines", abi.versioning.history)
_GCC_OF_GLIBCXX = {"3.4.19": "4.8.3", "3.4.20": "4.9.0", "3.4.21": "5.1.0", "3.4.22": "6.1.0",
                   "3.4.23": "7.1.0", "3.4.24": "7.2.0", "3.4.25": "8.1.0", "3.4.26": "9.1.0",
                   "3.4.27": "9.2.0", "3.4.28": "9.3.0", "3.4.29": "11.1.0", "3.4.30": "12.1.0",
                   "3.4.31": "13.1.0"}


def _glibc_other(ctx: Context, quotes: List[Quote], diagnosis: Any, by: str, dist: str,
                 need: Optional[Version], kind: str = "GLIBC") -> Signal:
    """Another package's binary (not flash-attn's, not torch's) needs a newer glibc: its own
    wheel was built on a newer Linux, so that package is built here or replaced. A newer
    libstdc++ (GLIBCXX, CXXABI) is installed beside the system's instead."""
    if kind != "GLIBC":
        gcc = _GCC_OF_GLIBCXX.get(str(need)) if kind == "GLIBCXX" else None
        which = f"the libstdc++ of GCC {gcc} or newer" if gcc else "a newer libstdc++"
        return Signal("glibc", diagnosis.category,
                      f"{by.rsplit('/', 1)[-1]} ({dist}): " + diagnosis.explanation, quotes, NAMED,
                      [Remedy(summary=f"Give it {which}: in a conda environment, conda-forge's "
                              "libstdcxx-ng (and run with the environment's lib first: "
                              "LD_LIBRARY_PATH=$CONDA_PREFIX/lib); else a newer GCC's runtime "
                              "from the distribution (devtoolset / gcc-toolset on RHEL and "
                              "CentOS, the ubuntu-toolchain PPA on Ubuntu) placed first on "
                              "LD_LIBRARY_PATH. The system's glibc can stay.",
                              commands=[command("conda", "install", "-c", "conda-forge",
                                                "libstdcxx-ng")]),
                       Remedy(summary=f"Or install a {dist} release built against an older "
                              f"libstdc++, or build {dist} from source on this machine.")],
                      details={**diagnosis.details, "required_by": by})
    fixes = _tagged_lower(dist, need)
    return Signal("glibc", diagnosis.category,
                  f"{by.rsplit('/', 1)[-1]} ({dist}): " + diagnosis.explanation, quotes, NAMED,
                  fixes + [Remedy(summary=f"Build {dist} from source on this machine, so its binaries link "
                          "against this system's glibc: its repository's build instructions (where "
                          f"the index has an sdist of {dist}, `pip install --no-binary {dist} "
                          f"{dist}` builds it; not every package publishes one)."),
                   Remedy(summary=f"Or install a {dist} release whose wheels were built for an "
                          "older glibc, or run on a Linux distribution whose glibc is "
                          f"{need or 'that version'} or newer.")],
                  details={**diagnosis.details, "required_by": by})


def _named_owner(ctx: Context, index: int) -> Optional[str]:
    """A package of the wheel table named on the loader's line (its binary, unnamed by the
    loader in a retold line); not torch or a CUDA library."""
    for found in re.finditer(r"[A-Za-z][A-Za-z0-9_-]{2,40}", ctx.text.lines[index]):
        name = found.group(0).lower().replace("_", "-")
        if name in wheel_table.table() and name not in ("torch", "triton", "numpy") and \
                not name.startswith(("nvidia", "flash-attn")):
            return name
    return None


def _tagged_lower(dist: str, need: Optional[Version]) -> List[Remedy]:
    """The package's newest release publishes wheels whose manylinux tag promises an older glibc
    than this binary asks for (the index's file names, data/wheel_tags.json): a release whose
    binary outgrew its own tag, which another release fixes."""
    rows = [row for row in wheel_table.table().get(dist, [])
            if row[5] and not Version(row[0]).is_prerelease]
    if not rows or need is None or Version(rows[-1][5]) >= need:
        return []
    newest, floor = rows[-1][0], rows[-1][5]
    return [Remedy(summary=f"{dist}'s wheels are tagged manylinux for glibc {floor} (its newest, "
                   f"{newest}, too), yet this binary asks for GLIBC_{need}: the installed release "
                   "outgrew its own tag. Install the newest release (or the one before the "
                   "installed), whose binary keeps to the tag.",
                   commands=[command("pip", "install", "--upgrade", dist)])]


def _glibc_defects(ctx: Context, need: Version) -> List[Remedy]:
    """Releases the matrix knows need this glibc, and what to take instead."""
    out = []
    for defect in ctx.matrix.known_defects:
        if defect.category != Category.GLIBC_TOO_OLD or defect.min_glibc != need:
            continue
        if ctx.fa2 is not None and not defect.affects(ctx.fa2):
            continue
        out.append(Remedy(summary=f"flash-attn {defect.versions}: {defect.remedy}"))
    return out
