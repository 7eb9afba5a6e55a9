"""Real ELF files for the ELF and loader tests, built with gcc in the test's folder, and the real
dynamic loader as the oracle: a child interpreter dlopens the file (RTLD_NOW) and reports.

Each gcc build costs ~50-100 ms, so fixtures that many tests read are built once per module.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from tests.helpers.broken import C10_ERROR_CXX11_ABI, C10_ERROR_OLD_ABI, gcc

# Torch symbols as an extension would reference them (asm labels give C functions these names).
TORCH_DEFINED = (
    C10_ERROR_OLD_ABI,
    "_ZN2at4_ops10empty_like4callERKNS_6TensorESt8optionalIN3c1010ScalarTypeEES5_INS6_6LayoutEES5_INS6_"
    "6DeviceEES5_IbES5_INS6_12MemoryFormatEE",
    "_ZN3c1019UndefinedTensorImpl10_singletonE",
)
TORCH_ABSENT = (
    C10_ERROR_CXX11_ABI,  # the other C++ ABI: the classic import failure
    "_ZN2at4_ops9_pad_enum4callERKNS_6TensorEN3c108ArrayRefINS5_6SymIntEEElNS5_8optionalIdEE",
)
FILLER = 1000  # plain exported functions, so the hash table has many buckets and real chains


def stub(folder: Path, soname: str, source: str, *args: str, file_name: Optional[str] = None) -> Path:
    """A shared library with DT_SONAME `soname`, written as `file_name` (default: the soname)."""
    folder.mkdir(parents=True, exist_ok=True)
    return gcc(folder / (file_name or soname), source, f"-Wl,-soname,{soname}", *args)


def compiled(output: Path, source: str) -> Path:
    """An object file (-fPIC), for linking one compilation several ways."""
    src = output.with_suffix(".c")
    src.write_text(source)
    subprocess.run(["gcc", "-c", "-fPIC", "-o", str(output), str(src)], check=True, capture_output=True)
    return output


def link_object(output: Path, obj: Path, soname: str, *args: str) -> Path:
    """A shared library linked from `obj`."""
    output.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["gcc", "-shared", "-o", str(output), str(obj), f"-Wl,-soname,{soname}", *args]
    subprocess.run(cmd, check=True, capture_output=True)
    return output


def linked(output: Path, source: str, libraries: Sequence[Path], *args: str) -> Path:
    """A shared object with one DT_NEEDED per library (their sonames), in the order given."""
    output.parent.mkdir(parents=True, exist_ok=True)
    return gcc(output, source, "-Wl,--no-as-needed", *map(str, libraries), *args)


def version_script(folder: Path, text: str) -> str:
    """A linker flag applying the version script `text`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"versions-{abs(hash(text))}.map"
    path.write_text(text)
    return f"-Wl,--version-script={path}"


def asm_function(label: str, defined: bool, index: int) -> str:
    """A C function named `label` in the symbol table: defined here or only referenced."""
    decl = f'void torch_{index}(void) __asm__("{label}");\n'
    return decl + (f"void torch_{index}(void) {{}}\n" if defined else "")


def fake_libtorch_source() -> str:
    """torch-like definitions, plus the kinds of symbols a lookup must tell apart."""
    parts = [asm_function(label, True, i) for i, label in enumerate(TORCH_DEFINED)]
    parts += [f"void filler_{i}(void) {{}}\n" for i in range(FILLER)]
    parts.append(
        "#include <stdio.h>\n"
        "__attribute__((weak)) void weak_definition(void) {}\n"
        "__attribute__((visibility(\"hidden\"))) void hidden_definition(void) {}\n"
        "__thread int first_tls = 1;\n"  # a TLS symbol at offset 0 still binds
        "int exported_object = 7;\n"
        "void uses_puts(void) { puts(\"x\"); }\n"  # leaves `puts` undefined in .dynsym
    )
    return "".join(parts)


def extension_source(defined_refs: Sequence[str], absent_refs: Sequence[str]) -> str:
    """An extension referencing torch symbols, a weak symbol nobody defines, and a C-API one."""
    labels = list(defined_refs) + list(absent_refs)
    parts = [asm_function(label, False, i) for i, label in enumerate(labels)]
    calls = "".join(f"    torch_{i}();\n" for i in range(len(labels)))
    parts.append(
        "__attribute__((weak)) void optional_hook(void);\n"
        "extern void PyErr_Clear(void);\n"
        f"void run(void) {{\n{calls}    if (optional_hook) optional_hook();\n    PyErr_Clear();\n}}\n"
    )
    return "".join(parts)


@dataclass(frozen=True)
class Loaded:
    """What the real loader did in a child interpreter."""

    ok: bool
    error: str
    mapped: Tuple[str, ...]  # every file mapped into the child afterwards

    def mapped_named(self, name: str) -> List[str]:
        return [path for path in self.mapped if os.path.basename(path) == name]


_CHILD = """
import ctypes, json, os, sys
for path in sys.argv[2:]:
    ctypes.CDLL(path, mode=os.RTLD_GLOBAL)
try:
    ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)
    ok, error = True, ""
except OSError as exc:
    ok, error = False, str(exc)
mapped = sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
                 if len(line.split(None, 5)) == 6 and line.split(None, 5)[5].startswith("/")})
print(json.dumps({"ok": ok, "error": error, "mapped": mapped}))
"""


def dlopen_in_child(path: Path, *, ld_library_path: Optional[str] = None, cwd: Optional[Path] = None,
                    preload: Sequence[Path] = ()) -> Loaded:
    """dlopen `path` with RTLD_NOW in a fresh interpreter, after loading `preload` RTLD_GLOBAL."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if ld_library_path is not None:
        env["LD_LIBRARY_PATH"] = ld_library_path
    cmd = [sys.executable, "-c", _CHILD, str(path), *map(str, preload)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=60, check=False)
    if done.returncode != 0:  # the loader killed the process (an ld.so assertion exits 127)
        return Loaded(False, done.stderr.strip(), ())
    data = json.loads(done.stdout)
    return Loaded(data["ok"], data["error"], tuple(data["mapped"]))


def patched(source: Path, target: Path, offset: int, data: bytes) -> Path:
    """A copy of `source` with `data` written at `offset` (an ELF header field)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    blob = bytearray(source.read_bytes())
    blob[offset:offset + len(data)] = data
    target.write_bytes(bytes(blob))
    return target


FLAGS_X86_64_LIBC6 = 0x0303  # ldconfig's FLAG_ELF_LIBC6 | FLAG_X8664_LIB64: "(libc6,x86-64)"


def write_ld_cache(path: Path, entries: Sequence[Tuple[str, str]], layout: str,
                   hwcaps: Sequence[int] = ()) -> Path:
    """An ld.so.cache in glibc's `old`, `new` or `compat` (old, then new) layout (dl-cache.h);
    `hwcaps`, per entry, fills the new format's hwcap field."""
    hwcaps = list(hwcaps) + [0] * (len(entries) - len(hwcaps))
    strings = bytearray()
    offsets = []
    for name, target in entries:
        offsets.append((len(strings), len(strings) + len(name) + 1))
        strings += name.encode() + b"\0" + target.encode() + b"\0"
    count = len(entries)
    old_end = 16 + 12 * count if layout in ("old", "compat") else 0
    new_at = (old_end + 7) & ~7 if layout != "old" else -1
    strings_at = new_at + 48 + 24 * count if layout != "old" else old_end
    out = bytearray()
    if layout in ("old", "compat"):
        out += b"ld.so-1.7.0\0" + struct.pack("=I", count)
        base = strings_at - old_end  # old offsets count from the end of the old entries
        for key, value in offsets:
            out += struct.pack("=iII", FLAGS_X86_64_LIBC6, base + key, base + value)
    if layout != "old":
        out += b"\0" * (new_at - len(out))
        order = 2 if sys.byteorder == "little" else 3
        out += b"glibc-ld.so.cache1.1" + struct.pack("=IIB3xI12x", count, len(strings), order, 0)
        base = strings_at - new_at  # new offsets count from the new header
        for hwcap, (key, value) in zip(hwcaps, offsets):
            out += struct.pack("=iIIIQ", FLAGS_X86_64_LIBC6, base + key, base + value, 0, hwcap)
    path.write_bytes(bytes(out + strings))
    return path


_LDCONFIG_LINE = re.compile(r"^\s+(\S+) \((.*)\) => (.*)$")


def ldconfig_print(ldconfig: str, cache: Optional[Path] = None) -> List[Tuple[str, str]]:
    """(name, path) per entry as `ldconfig -p` prints the cache: glibc's own reader (read only)."""
    cmd = [ldconfig, "-p"] + (["-C", str(cache)] if cache is not None else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
    return [(m.group(1), m.group(3)) for m in map(_LDCONFIG_LINE.match, done.stdout.splitlines()) if m]


def pyelftools_definitions(path: Path) -> Dict[str, bool]:
    """Every .dynsym name -> whether some entry of it is a definition, enumerated by pyelftools."""
    from elftools.elf.elffile import ELFFile

    found: Dict[str, bool] = {}
    with open(path, "rb") as handle:
        for symbol in ELFFile(handle).get_section_by_name(".dynsym").iter_symbols():
            if not symbol.name:
                continue
            # glibc's do_lookup_x: defined, not local, and a value unless absolute or TLS (libc's
            # GLIBC_2.x version symbols are absolute zeros).
            defined = (symbol["st_shndx"] != "SHN_UNDEF" and symbol["st_info"]["bind"] != "STB_LOCAL"
                       and (symbol["st_value"] != 0 or symbol["st_shndx"] == "SHN_ABS"
                            or symbol["st_info"]["type"] == "STT_TLS"))
            found[symbol.name] = found.get(symbol.name, False) or defined
    return found


def pyelftools_undefined(path: Path) -> List[str]:
    """The undefined STB_GLOBAL .dynsym names in table order, enumerated by pyelftools."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as handle:
        return [s.name for s in ELFFile(handle).get_section_by_name(".dynsym").iter_symbols()
                if s.name and s["st_shndx"] == "SHN_UNDEF" and s["st_info"]["bind"] == "STB_GLOBAL"]


_LDD_UNDEFINED = re.compile(r"^undefined symbol: (\S+?)(?:, version (\S+))?\t\((.*)\)$")


def ldd_undefined(path: Path, ld_library_path: str = "") -> List[Tuple[str, Optional[str]]]:
    """(name, version) of each symbol `ldd -r` reports undefined in `path` itself: glibc's own
    loader, in trace mode, as the oracle for `loader.missing_symbols`."""
    return [(name, version) for obj, name, version in _ldd_r(path, ld_library_path)
            if os.path.realpath(obj) == os.path.realpath(path)]


def ldd_undefined_everywhere(path: Path, ld_library_path: str = "") -> List[Tuple[str, str]]:
    """(object, name) of each symbol `ldd -r` reports undefined in `path` or a library it loads."""
    return [(obj, name) for obj, name, _ in _ldd_r(path, ld_library_path)]


def _ldd_r(path: Path, ld_library_path: str) -> List[Tuple[str, str, Optional[str]]]:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["LD_LIBRARY_PATH"] = ld_library_path
    done = subprocess.run(["ldd", "-r", str(path)], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    found = []
    for line in (done.stdout + done.stderr).splitlines():
        match = _LDD_UNDEFINED.match(line)
        if match:
            found.append((match.group(3), match.group(1), match.group(2)))
    return found
