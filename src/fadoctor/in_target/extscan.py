"""Finds every compiled extension on the target's sys.path that links torch (target side).

Standard library only, Python 3.8 syntax: it runs in the target interpreter, from the worker's
files stage. A shared object links torch when its DT_NEEDED names one of torch's own libraries
(libtorch*, libc10*, libtorch_python); only its ELF header, program headers, dynamic section and
the needed strings are read, a few small reads per file. The owning distribution comes from the
RECORD files of the *.dist-info folders beside it, with its version and its torch requirement.
"""

import csv
import os
import re
import struct
import sysconfig
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

TORCH_LIBRARY = re.compile(r"^(libtorch(_cpu|_cuda|_cuda_cu|_cuda_cpp|_hip|_python|_global_deps)?"
                           r"|libc10(_cuda|_hip)?)\.so$")
# Folders that hold no extension linking torch, or are torch itself: not walked.
_PRUNED = ("__pycache__", "nvidia", "include", "site-packages", "dist-packages")
_MAX_DEPTH = 8
PT_LOAD, PT_DYNAMIC, DT_NEEDED, DT_STRTAB = 1, 2, 1, 5


def needed(path: str) -> Optional[List[str]]:
    """DT_NEEDED of a little- or big-endian ELF shared object; None if it is not one."""
    try:
        with open(path, "rb") as handle:
            return _needed(handle)
    except (OSError, struct.error, ValueError, IndexError):
        return None


def _needed(handle: Any) -> Optional[List[str]]:
    head = handle.read(64)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2):
        return None
    wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
    if wide:
        phoff, phentsize, phnum = struct.unpack_from(order + "Q", head, 32)[0], *struct.unpack_from(
            order + "HH", head, 54)
        layout = order + "IIQQQQQQ"  # p_type p_flags p_offset p_vaddr p_paddr p_filesz ...
    else:
        phoff, phentsize, phnum = struct.unpack_from(order + "I", head, 28)[0], *struct.unpack_from(
            order + "HH", head, 42)
        layout = order + "IIIIIIII"  # p_type p_offset p_vaddr p_paddr p_filesz p_memsz ...
    handle.seek(phoff)
    table = handle.read(phentsize * phnum)
    segments = [struct.unpack_from(layout, table, i * phentsize) for i in range(phnum)]
    if wide:  # (type, offset, vaddr, filesz)
        rows = [(s[0], s[2], s[3], s[5]) for s in segments]
    else:
        rows = [(s[0], s[1], s[2], s[4]) for s in segments]
    dynamic = next((r for r in rows if r[0] == PT_DYNAMIC), None)
    if dynamic is None:
        return []
    handle.seek(dynamic[1])
    entries = handle.read(min(dynamic[3], 1 << 16))
    size = 16 if wide else 8
    tags = [struct.unpack_from(order + ("qQ" if wide else "iI"), entries, i)
            for i in range(0, len(entries) - size + 1, size)]
    strtab = next((value for tag, value in tags if tag == DT_STRTAB), None)
    offsets = [value for tag, value in tags if tag == DT_NEEDED]
    base = _file_offset(rows, strtab) if strtab is not None else None
    if base is None:
        return []
    names = []
    for offset in offsets:
        handle.seek(base + offset)
        names.append(handle.read(256).split(b"\0", 1)[0].decode("utf-8", "replace"))
    return names


def _file_offset(rows: List[Tuple[int, int, int, int]], address: int) -> Optional[int]:
    for kind, offset, vaddr, filesz in rows:
        if kind == PT_LOAD and vaddr <= address < vaddr + filesz:
            return address - vaddr + offset
    return None


def _roots(sys_path: List[str]) -> List[str]:
    """sys.path folders, outer ones first and without the standard library."""
    paths = sysconfig.get_paths()
    stdlib = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib") if k in paths}
    stdlib |= {os.path.join(p, "lib-dynload") for p in stdlib}
    roots = []
    for entry in sys_path:
        real = os.path.realpath(entry or os.curdir)
        if os.path.isdir(real) and real not in stdlib and real not in roots:
            roots.append(real)
    return roots


def _shared_objects(root: str, skip: Set[str]) -> Iterator[str]:
    """Files named like shared objects under `root`; linked folders are followed, once each."""
    visited = set(skip)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        depth = dirpath[len(root):].count(os.sep)
        kept = []
        for d in dirnames:
            real = os.path.realpath(os.path.join(dirpath, d))
            if not (d.startswith(".") or d in _PRUNED or d.endswith((".dist-info", ".egg-info"))
                    or real in visited or depth >= _MAX_DEPTH):
                visited.add(real)
                kept.append(d)
        dirnames[:] = kept
        for name in filenames:
            if name.endswith(".so") or ".so." in name:
                yield os.path.join(dirpath, name)


def _metadata(dist_info: str) -> Dict[str, Any]:
    """Name, Version and the torch requirement from METADATA's headers."""
    out: Dict[str, Any] = {"distribution": None, "version": None, "requires_torch": None}
    try:
        with open(os.path.join(dist_info, "METADATA"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                value = value.strip()
                if key == "Name":
                    out["distribution"] = value
                elif key == "Version":
                    out["version"] = value
                elif key == "Requires-Dist" and re.match(r"torch\b(?![-_.\w])", value):
                    spec = value.split(";", 1)[0][len("torch"):].strip().strip("()").strip()
                    if ";" not in value or "extra" not in value.split(";", 1)[1]:
                        out["requires_torch"] = spec or None
    except OSError:
        pass
    return out


def _owners(root: str, wanted: Dict[str, str]) -> Dict[str, Dict[str, Any]]:
    """path -> the metadata of the distribution whose RECORD lists it (under `root`)."""
    found: Dict[str, Dict[str, Any]] = {}
    try:
        infos = sorted(n for n in os.listdir(root) if n.endswith(".dist-info"))
    except OSError:
        return found
    for info in infos:
        if len(found) == len(wanted):
            break
        if re.match(r"torch-\d", info):
            continue  # torch's own files are not walked
        try:
            # RECORD is CSV: a path may be quoted (torch-tensorrt's are), and may hold a comma.
            with open(os.path.join(root, info, "RECORD"), encoding="utf-8", errors="replace",
                      newline="") as fh:
                owned = [wanted[row[0]] for row in csv.reader(fh) if row and row[0] in wanted]
        except (OSError, csv.Error):
            continue
        if owned:
            meta = _metadata(os.path.join(root, info))
            for path in owned:
                found[path] = meta
    return found


def torch_extensions(sys_path: List[str], torch_dir: Optional[str]) -> List[Dict[str, Any]]:
    """Every shared object on `sys_path` (outside torch itself) that links one of torch's
    libraries, with the distribution that installed it."""
    skip = {os.path.realpath(torch_dir)} if torch_dir else set()
    seen: Set[str] = set()
    out: List[Dict[str, Any]] = []
    for root in _roots(sys_path):
        wanted: Dict[str, str] = {}
        for path in _shared_objects(root, skip):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            names = needed(path)
            if names and any(TORCH_LIBRARY.match(n) for n in names):
                wanted[os.path.relpath(path, root).replace(os.sep, "/")] = path
        owners = _owners(root, wanted)
        for rel in sorted(wanted):
            path = wanted[rel]
            entry = {"path": path, "distribution": None, "version": None, "requires_torch": None}
            entry.update(owners.get(path, {}))
            out.append(entry)
    return out
