"""Partial facts from what a pasted report states (origin "pasted"): a value the text does not
state stays unknown — a probe failed with kind "skipped" and the reason — so the checks of
`fadoctor check` run on it unchanged and skip what they cannot know.

What the facts model still cannot say is unknown (a package list that may be partial) is named by
`unknown_checks`, and triage reports those checks as skipped. This module is the one place that
knows both the triage observations and the facts model.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from fadoctor import __version__
from fadoctor.facts.model import (
    Distribution,
    Driver,
    Facts,
    Failure,
    FailureKind,
    Family,
    FamilyImport,
    Files,
    FlashAttention,
    Gpu,
    Host,
    Packages,
    Probe,
    Target,
    TorchFiles,
)
from fadoctor.in_target.tables import FAMILIES
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context

NOT_STATED = "not stated in the pasted report"
PASTED = "(pasted report)"
# Distributions of each family, as the packages stage names them.
_FAMILIES = {Family.FA2: ("flash-attn",), Family.FA3: ("flash-attn-3", "flash-attn-hopper"),
             Family.FA4: ("flash-attn-4", "flash-attn4"), Family.VLLM_FA: ("vllm-flash-attn",)}
_LISTINGS = {"pip list", "pip freeze", "conda list"}
_LINUX = ("linux", "ubuntu", "debian", "centos", "rhel", "red hat", "rocky", "fedora", "alma",
          "arch", "suse", "amazon")


def _unknown(reason: str = NOT_STATED) -> Probe[Any]:
    """A probe the text leaves unknown."""
    return Probe.failed(Failure(kind=FailureKind.SKIPPED, reason=reason))


def to_facts(ctx: Context) -> Facts:
    return Facts(
        fadoctor_version=__version__, origin="pasted",
        target=Target(python=PASTED, chosen_by="facts-file"),
        host=_host(ctx), packages=_packages(ctx), driver=_driver(ctx),
        torch=_unknown("not imported: a pasted report states its version at most"),
        flash_attention=_families(ctx), files=_files(ctx))


def _host(ctx: Context) -> Probe[Host]:
    python = ctx.seen.get(o.PYTHON)
    if python is None:
        return _unknown()
    stated_os = ctx.seen.get(o.OS) or ""
    linux = any(w in stated_os.lower() for w in _LINUX) or ctx.glibc is not None
    memory = ctx.memory_gib
    return Probe.success(Host(
        os="Linux" if linux else ("Windows" if "windows" in stated_os.lower() else None),
        os_release=stated_os or None, machine=ctx.seen.get(o.MACHINE),
        libc="glibc" if ctx.glibc else None, libc_version=str(ctx.glibc) if ctx.glibc else None,
        python_version=python, memory_mib=int(memory * 1024) if memory else None))


def _packages(ctx: Context) -> Probe[Packages]:
    listed = [Distribution(name=name, version=stated.value)
              for name, stated in sorted(ctx.seen.packages.items())]
    if ctx.torch is not None:
        listed.append(Distribution(name="torch", version=str(ctx.torch)))
    return Probe.success(Packages(distributions=listed)) if listed else _unknown()


def _driver(ctx: Context) -> Probe[Driver]:
    gpus = [g for g in ctx.seen.gpus if g.vendor == "nvidia"]
    version = ctx.seen.get(o.DRIVER)
    if not gpus and version is None:
        reason = "an AMD GPU: no NVIDIA driver applies" if ctx.amd else NOT_STATED
        return _unknown(reason)
    # torch saying CUDA is available proves this driver runs torch's CUDA (a Jetson's L4T driver,
    # or a datacenter driver with the CUDA forward-compatibility package): its number is no
    # evidence against that CUDA, so the driver-floor checks are not given it.
    if str(ctx.seen.get(o.CUDA_AVAILABLE) or "").strip().lower() in ("true", "yes"):
        version = None
    return Probe.success(Driver(
        present=True, source="nvidia-smi", version=version,
        cuda_version=ctx.seen.get(o.DRIVER_CUDA),
        gpus=[Gpu(index=i, name=g.name, compute_capability=g.cc) for i, g in enumerate(gpus)]))


def _files(ctx: Context) -> Optional[Probe[Files]]:
    """torch as the text states it: version and build, read like torch's files (not imported)."""
    torch = ctx.torch
    hip = ctx.seen.get(o.TORCH_HIP)
    cuda = ctx.torch_cuda
    if torch is None or (cuda is None and hip is None and ctx.seen.get(o.TORCH_CUDA) != "none"):
        return None
    return Probe.success(Files(torch=TorchFiles(
        dir=PASTED, version=str(torch), cuda=str(cuda) if cuda else None, hip=hip,
        cxx11_abi=ctx.torch_abi)))


def _families(ctx: Context) -> List[FlashAttention]:
    """Each family: installed when the text names it, absent when a full package listing does
    not, else unknown."""
    listed = bool(_LISTINGS & ctx.seen.kinds)
    out = []
    for family, names in _FAMILIES.items():
        stated = ctx.package(*names)
        implied = family == Family.FA2 and stated is None and _fa2_implied(ctx)
        if stated is None and not implied:
            out.append(FlashAttention(family=family, installed=False if listed else None))
            continue
        version = stated.value if stated and not stated.value.endswith(".x") else None
        out.append(FlashAttention(family=family, distribution=names[0], version=version,
                                  installed=True, imported=_imported(ctx, family)))
    return out


def _fa2_implied(ctx: Context) -> bool:
    """flash-attn 2.x's own messages or files in the text show it is installed."""
    return bool(ctx.text.containing(("flash_attn_2_cuda", "-packages/flash_attn/",
                                     "flashattention only support"), first=True))


def _module_pattern(name: str) -> str:
    """A module name as a whole dotted name, or as the path of its folder (flash_attn/cute)."""
    return r"(?<![\w.])" + r"[./]".join(re.escape(part) for part in name.split(".")) + r"(?!\w)"


# Each family's modules and extensions (target.tables), and every longer name another family's
# module makes of them (flash_attn.cute is flash-attn-4's, not flash-attn 2.x's).
_MODULES = {f: [*FAMILIES[f.value]["modules"], *FAMILIES[f.value]["markers"]] for f in Family}
_LONGER = {name: [re.compile(_module_pattern(other)) for f in Family for other in _MODULES[f]
                  if other != name and other.startswith(name + ".")]
           for f in Family for name in _MODULES[f]}


def _names_family(text: str, family: Family) -> bool:
    """Whether `text` names one of the family's modules (not only as part of another's)."""
    for name in _MODULES[family]:
        for found in re.finditer(_module_pattern(name), text):
            if not any(longer.match(text, found.start()) for longer in _LONGER[name]):
                return True
    return False


def _imported(ctx: Context, family: Family) -> Probe[FamilyImport]:
    for raised in ctx.seen.raised:
        if raised.kind in ("ImportError", "OSError", "ModuleNotFoundError") and \
                _names_family(raised.message + "\n" + "\n".join(raised.frames), family):
            return Probe.failed(Failure(kind=FailureKind.IMPORT_ERROR, reason=raised.message,
                                        exception_type=raised.kind))
    return _unknown("not imported here: a pasted report")


def unknown_checks(ctx: Context) -> Dict[str, str]:
    """Checks whose inputs the facts model states but the text left unknown, and why."""
    if _LISTINGS & ctx.seen.kinds:
        return {}
    return {"FAD107": "needs the list of installed packages, which the pasted report does not "
                      "give"}

