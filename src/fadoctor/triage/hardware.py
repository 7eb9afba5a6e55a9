"""Parsers of what a report shows about the hardware and the files: GPU models (compute
capability from the matrix's GPU table), GPU generations, AMD GPUs, memory, and what paths tell
(Python version, wheels, libraries present) (pure)."""

from __future__ import annotations

import re

from fadoctor.triage import observed as o
from fadoctor.triage.amd_targets import gfx_of
from fadoctor.triage.gpus import GpuFinder
from fadoctor.triage.observed import PROSE, Observed
from fadoctor.triage.text import Pasted, Quote

_SITE = re.compile(r"python(3\.\d+)/(?:site|dist)-packages")
_CPYTHON_SO = re.compile(r"\.cpython-3(\d+)[a-z]*-(x86_64|aarch64|ppc64le)-linux-gnu\.so")
_WHEEL = re.compile(r"[A-Za-z0-9_.]{1,100}-\d[\w.+!]{0,100}(?:-\d\w{0,20})?-[\w.]{1,40}-[\w.]{1,40}"
                    r"-[\w.]{1,80}\.whl")
_SO_PATH = re.compile(r"^\s*(/\S+/(lib[\w+-]+\.so(?:\.\d+)*))\s*$")
_MEMORY = re.compile(r"(?<![\d.])(\d{1,12}(?:\.\d{1,6})?)\s{0,8}(?:GB|GiB|G)\b"
                     r"(?:\s*(?:of\s+)?(?:RAM|memory|system memory))",
                     re.IGNORECASE)
# "capability 8.6", "capability: 86", "sm_90"; never "capability 10.x" (a family, not one GPU)
_CC = re.compile(r"capability\s*[:=]?\s*(?:sm_?)?(\d{1,2})\.?(\d)\b(?!\.\w)|"
                 r"run on a sm (\d{1,2})\.(\d) gpu", re.IGNORECASE)
# a capability stated as a floor ("Compute Capability 8.9 or higher", "requires compute capability
# >= 8.0"), which is not the GPU's own
_FLOOR_AFTER = re.compile(r"\s*(?:or (?:higher|newer|above|greater|later)|\+|and (?:above|higher|"
                          r"newer)|(?:is |are )?required)", re.I)
_FLOOR_BEFORE = re.compile(r"(?:>=|≥|at least|minimum|min\.?|requires?|required|needs?)\s*$", re.I)
_FAMILY = re.compile(r"\b(Blackwell|Hopper|Ada(?= Lovelace)|Ampere|Turing|Volta|Pascal|Maxwell)\b",
                     re.IGNORECASE)
_FAMILY_NEEDLES = ("blackwell", "hopper", "ada lovelace", "ampere", "turing", "volta", "pascal",
                   "maxwell")
_NOT_STATING = ("or newer", "only support", "requires", "optimized for", "supports ",
                "not supported", "older than", "newer than", "pre-ampere", "pre ampere",
                "before ampere", "or later")
_AMD = re.compile(r"\b((?i:gfx)\d{3,4}[a-z]?)\b|\b(Radeon[\w ]{0,20}?\d{3,4}\s*\w*|Instinct\s+MI\d+\w*|"
                  r"MI\d{3}X?|(?i:AMD\s+(?:RX\s?)?[5-9]\d00\s?(?:XTX|XT|GRE)?|RX\s?[5-9]\d00\s?(?:XTX|XT|GRE)?))"
                  r"(?!\w)")

_SMI_ROW = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|")


def _floor(line: str, found: re.Match[str]) -> bool:
    """Whether a capability in the line is a floor it states, not the GPU's own."""
    before = line[max(0, found.start() - 40):found.start()].replace("compute", "").rstrip(" :=(")
    return bool(_FLOOR_AFTER.match(line, found.end()) or _FLOOR_BEFORE.search(before))


def read_paths(text: Pasted, seen: Observed) -> None:
    """What paths show: the Python of a site-packages folder, the Python and machine of an
    extension's file name, wheels named, libraries listed as present."""
    site = _SITE.search(text.joined) if "-packages" in text.joined else None
    if site:
        seen.state(o.PYTHON, site.group(1), _at(text, site.start()), PROSE)
    so = _CPYTHON_SO.search(text.joined) if ".cpython-3" in text.joined else None
    if so:
        quote = _at(text, so.start())
        seen.state(o.PYTHON, f"3.{so.group(1)}", quote, PROSE)
        seen.state(o.MACHINE, so.group(2), quote, PROSE)
        seen.state(o.OS, "Linux", quote, PROSE)
    named = set()
    for index in text.distinct(text.containing((".whl",))):
        for wheel in _WHEEL.finditer(text.lines[index]):
            name = wheel.group(0).rsplit("/", 1)[-1]
            if name not in named:
                named.add(name)
                seen.wheels.append(o.Stated(name, text.quote(index)))
    for index in text.distinct(text.containing((".so",))):
        so_path = _SO_PATH.match(text.lines[index])
        if so_path:
            seen.libraries.append(o.Stated(so_path.group(2), text.quote(index)))


def _at(text: Pasted, offset: int) -> Quote:
    return text.quote(text.index_at(offset))


# Intel graphics: integrated (Iris Xe, Iris Plus, UHD, HD Graphics) and Arc
_INTEL = re.compile(r"\b(?:Intel(?:\(R\))?\s+)?(?:Iris(?:\(R\))?\s+(?:Xe|Plus|Pro)\b(?:\s+Graphics)?|"
                    r"(?:UHD|HD)\s+Graphics(?:\s+\d{3,4})?|Arc(?:\(TM\))?\s+[AB]\d{3}M?)", re.I)


def read_hardware(text: Pasted, seen: Observed, gpus: GpuFinder) -> None:
    for index in text.distinct(text.containing(("ram", "memory"))):
        line = text.lines[index]
        memory = _MEMORY.search(line)
        if memory and "gpu" not in line.lower():
            seen.state(o.MEMORY_GIB, memory.group(1), text.quote(index), PROSE)
    for index in text.distinct(text.containing(_FAMILY_NEEDLES)):
        low = text.lines[index].lower()
        if not any(w in low for w in _NOT_STATING):
            family = _FAMILY.search(text.lines[index])
            if family:
                seen.state(o.GPU_ARCH_FAMILY, family.group(1).lower(), text.quote(index), PROSE)
    for index in text.distinct(text.containing(("gfx", "radeon", "instinct", "mi1", "mi2", "mi3",
                                                "amd ", "rx "))):
        amd = _AMD.search(text.lines[index])
        if amd:
            seen.gpus.append(o.Gpu(amd.group(0), text.quote(index), vendor="amd"))
            if amd.group(1):
                seen.state(o.AMD_ARCH, amd.group(1).lower(), text.quote(index), PROSE)
            elif gfx_of(amd.group(0)) is not None:  # the product's target (LLVM's table)
                seen.state(o.AMD_ARCH, str(gfx_of(amd.group(0))), text.quote(index), PROSE - 1)
    for index in text.distinct(text.containing(("intel", "iris"))):
        intel = _INTEL.search(text.lines[index])
        if intel:
            seen.gpus.append(o.Gpu(intel.group(0), text.quote(index), vendor="intel"))
    for index in text.distinct(text.containing(("capability", "run on a sm"))):
        line = text.lines[index]
        cc = next((m for m in _CC.finditer(line) if not _floor(line, m)), None)
        if cc:
            major, minor = (cc.group(1), cc.group(2)) if cc.group(1) else (cc.group(3), cc.group(4))
            seen.state(o.GPU_CC, f"{int(major)}.{minor}", text.quote(index), PROSE)
    for index in text.distinct(text.containing(gpus.needles)):
        line = text.lines[index]
        row = _SMI_ROW.match(line)
        for name, cc_text in gpus.names(row.group(2) if row else line):
            if not any(g.name == name for g in seen.gpus):
                seen.gpus.append(o.Gpu(name, text.quote(index), cc_text))
