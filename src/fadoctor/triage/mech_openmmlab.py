"""OpenMMLab's version gates: each of its packages (mmdet, mmseg, mmdet3d, mmrotate, mmpose ...)
asserts at import that mmcv (and mmengine, mmdet) lies in the range its release was written for:
"MMCV==1.6.0 is used but incompatible. Please install mmcv>=1.3.17, <=1.5.0." (mmdet 2.x's
mmdet/__init__.py, `<=` its maximum), "... mmcv>=2.0.0rc4, <2.2.0." (mmdet 3.x, `<`), older
releases printing the bounds as digit_version tuples "(1, 3, 13, 0, 0, 0)". Two such gates with
ranges that do not meet mean two package releases that no mmcv satisfies together. mmcv 1.x's
build with ops is the `mmcv-full` distribution; OpenMMLab's installer (openmim) picks the prebuilt
wheel for the installed torch and CUDA (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

# a bound as mmdet prints it: "1.3.17", a tuple "(1, 3, 17)" or, in 2.x releases before 2.14, a
# list "[1, 1, 4]" (digit_version of those releases returned one)
_BOUND = r"([(\[]\d+(?:, \d+){1,6}[)\]]|[\w.+]+?)"
_GATE = re.compile(r"\b(MMCV|MMEngine|MMDET|MMDet|mmcv|mmengine|mmdet)==([\w.+]+) is used but "
                   r"incompatible\. Please install ([\w-]+)>=" + _BOUND
                   + r"(?:,\s*(<=?)\s*" + _BOUND + r")?\.?(?=[\s)*,]|$)")
_ASSERTING = re.compile(r"[\\/](mm[a-z0-9]{1,12})[\\/]__init__\.py\"")


def _version(bound: str) -> Optional[Version]:
    text = ".".join(bound.strip("()[]").replace(" ", "").split(",")[:3]) \
        if bound.startswith(("(", "[")) \
        else bound
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _asserting(ctx: Context, index: int) -> Optional[str]:
    for line in reversed(ctx.text.lines[max(0, index - 4):index + 1]):
        found = _ASSERTING.search(line)
        if found is not None:
            return found.group(1)
    return None


Gate = Tuple[int, str, Version, str, Version, Optional[str], Optional[Version]]


def _gates(ctx: Context) -> List[Gate]:
    out: List[Gate] = []
    for index, found in ctx.find(_GATE, ("is used but incompatible",)):
        have, low = _version(found.group(2)), _version(found.group(4))
        high = _version(found.group(6)) if found.group(6) else None
        if have is not None and low is not None:
            out.append((index, found.group(3).lower(), have, found.group(3), low,
                        found.group(5), high))
    return out


def _install(dep: str, low: Version, op: Optional[str], high: Optional[Version]) -> str:
    full = dep == "mmcv" and ((high is not None and high < Version("2.0")) or
                              (high is None and low < Version("2.0")))
    spec = f"{'mmcv-full' if full else dep}>={low}" + (f",{op}{high}" if op and high else "")
    return command("mim", "install", spec) if dep.startswith("mm") else \
        command("pip", "install", spec)


def version_gate(ctx: Context) -> List[Signal]:
    gates = _gates(ctx)
    if not gates:
        return []
    index, dep, have, _, low, op, high = gates[0]
    by = _asserting(ctx, index)
    quotes = dedupe([ctx.quote(g[0]) for g in gates])
    other = next((g for g in gates[1:] if g[1] == dep and (g[4], g[6]) != (low, high)), None)
    if other is not None and ((high is not None and other[4] > high) or
                              (other[6] is not None and low > other[6])):
        ranges = f"[{low}, {high}] and [{other[4]}, {other[6] or '...'}]"
        return [Signal("openmmlab_gate", Category.VERSION_CONFLICT,
                       f"two OpenMMLab packages accept {dep} ranges that do not meet ({ranges}): "
                       f"no {dep} satisfies both, so the installed releases of those packages do "
                       "not belong together", quotes, NAMED,
                       [Remedy(summary="Install the releases of the OpenMMLab packages that the "
                               "project's own install instructions pin together (each "
                               f"package's release notes name the {dep} range it accepts): one of "
                               f"the two must move to a release whose range includes the other's "
                               f"{dep}; then install {dep} in the range they share.")])]
    within = f">= {low}" + (f", {op} {high}" if op and high else "")
    who = by or "the OpenMMLab package being imported"
    return [Signal("openmmlab_gate", Category.VERSION_CONFLICT,
                   f"{who} accepts {dep} {within}, and {dep} {have} is installed: its import-time "
                   "version gate refuses it", quotes, NAMED,
                   [Remedy(summary=f"Install {dep} in the range {who} was written for ("
                           "OpenMMLab's installer picks the prebuilt wheel for this torch and "
                           "CUDA; mmcv 1.x with its ops is mmcv-full).",
                           commands=[command("pip", "install", "-U", "openmim"),
                                     _install(dep, low, op, high)]),
                    Remedy(summary=f"Or keep {dep} {have} and move {who} to a release whose gate "
                           f"accepts it (its release notes name each release's {dep} range).")])]


# mmcv's compiled ops (mmcv/_ext*.so, built only in mmcv-full 1.x and mmcv 2.x) failing to load
# against the installed torch: "mmcv/_ext.cpython-37m-x86_64-linux-gnu.so: undefined symbol:
# _ZNK2at6Tensor6deviceEv". Its wheels are built per torch and CUDA pair; openmim's `mim install`
# picks the one for the installed torch (mmcv's installation guide).
_EXT = re.compile(r"mmcv[/\\]_ext[\w.-]*\.(?:so|pyd)\W[^\n]{0,40}?(?:undefined symbol|"
                  r"DLL load failed|procedure could not be found)|undefined symbol[^\n]{0,200}"
                  r"mmcv[/\\]_ext", re.I)


def ext_for_other_torch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_EXT, ("mmcv",))
    if hit is None:
        return []
    stated = ctx.package("mmcv") or ctx.package("mmcv-full")
    two = stated is not None and stated.value.startswith("2")
    dist = "mmcv" if two else "mmcv-full"
    return [Signal("mmcv_ext", Category.TORCH_VERSION_MISMATCH,
                   "mmcv's compiled ops (mmcv._ext) were built for another torch or CUDA than the "
                   "installed one: mmcv's wheels are built per torch and CUDA pair",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", "mmcv", "mmcv-full")]), NAMED + 2,
                   [Remedy(summary=f"Reinstall {dist} built for the installed torch and CUDA: "
                           f"openmim picks that wheel (mim install {dist}; uninstall the other mmcv "
                           "distribution first, mmcv and mmcv-full both install the mmcv package), "
                           "or build it from source against this torch.",
                           commands=[command("pip", "uninstall", "-y", "mmcv", "mmcv-full"),
                                     command("pip", "install", "-U", "openmim"),
                                     f"mim install {dist}"])],
                   details={"source": "open-mmlab/mmcv docs (installation: mim install)"})]
