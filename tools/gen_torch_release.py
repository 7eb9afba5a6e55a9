#!/usr/bin/env python3
"""Record a torch release's build facts from its registry wheels, and derive its matrix entries.

Read from each wheel (never imported): torch/version.py (the CUDA variant), WHEEL (the tag),
METADATA (Requires-Python, the CUDA requirements), libc10.so's dynamic strings (the C++ ABI of
std::string in the exported names), libtorch_cuda.so (the gencode flags torch reports as its arch
list, the SASS/PTX images of its .nv_fatbin, the SDPA backends' "range [smA, smB]" warnings),
torch/nn/attention/__init__.py (the FlashAttention version `_get_flash_version` returns),
c10/util/intrusive_ptr.h (whether the headers need C++20: `<compare>`, `operator<=>`) and
torch/__init__.py + _utils_internal.py played through fadoctor.probes.torch_init (the preload
rules; only their summary and the files' sha256 are kept, never upstream code). The Python
versions a release has wheels for come from `pip install --dry-run --report` files, one per
interpreter tag.

    python tools/gen_torch_release.py record --wheel W [--wheel W ...] [--reports DIR]
    python tools/gen_torch_release.py show        # the torch_releases entries the record derives

`record` writes tools/fixtures/torch_wheels.json; tests/matrix/test_torch_wheels.py holds the
matrix's entries to it offline.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from fadoctor.probes.elf import read_section, section_view  # noqa: E402
from fadoctor.probes.fatbin import parse_fatbin  # noqa: E402
from fadoctor.probes.mangling import string_abi  # noqa: E402
from fadoctor.probes.torch_init import read_rules  # noqa: E402

RECORD = ROOT / "tools" / "fixtures" / "torch_wheels.json"
GENCODE = re.compile(rb"-gencode;arch=compute_\d+,code=(?:sm|compute)_\d+[;\w=,-]*")
SDPA = {"flash": b"Flash attention only supports gpu architectures in the range ",
        "efficient": b"Mem Efficient Attention only supports gpu architectures in the range ",
        "cudnn": b"cuDNN MHA only supports gpu architectures in the range "}
RANGE = re.compile(rb"\[sm\d+, sm\d+\]")
FLASH_VERSION = re.compile(
    r"def _get_flash_version\(\)[^:]*:\s*(?:\"\"\"[^\"]*\"\"\"\s*)?return \"([\d.]+)\"")
CUDA_REQS = re.compile(r"^(cuda-|nvidia-)")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def arch_list(gencode: str) -> str:
    """TORCH_CUDA_ARCH_LIST syntax for nvcc's -gencode pairs: sm_XY -> X.Y, compute_XY -> +PTX."""
    out: List[str] = []
    for code in re.findall(r"code=((?:sm|compute)_\d+)", gencode):
        kind, number = code.split("_")
        arch = f"{number[:-1]}.{number[-1]}"
        if kind == "sm":
            out.append(arch)
        else:
            out = [a for a in out if a != arch] + [f"{arch}+PTX"]
    return ";".join(out)


def _cuda_facts(lib: Path) -> Dict[str, Any]:
    """What libtorch_cuda.so holds: its gencode string, fatbin images, SDPA warning ranges."""
    rodata = read_section(lib, ".rodata") or b""
    gencode = GENCODE.search(rodata)
    sdpa: Dict[str, Optional[str]] = {}
    for backend, prefix in SDPA.items():
        at = rodata.find(prefix)
        found = RANGE.match(rodata, at + len(prefix)) if at >= 0 else None
        sdpa[backend] = found.group(0).decode() if found else None
    with section_view(lib, ".nv_fatbin") as section:
        fatbin = parse_fatbin(section) if section is not None else None
    return {"gencode": gencode.group(0).decode() if gencode else None,
            "fatbin_sass": sorted(fatbin.sass_archs) if fatbin else [],
            "fatbin_ptx": sorted(fatbin.ptx_archs) if fatbin else [],
            "sdpa": sdpa}


def _abi(libc10: Path) -> Optional[bool]:
    """True/False when every exported name with a std::string agrees on its ABI; else None."""
    names = (read_section(libc10, ".dynstr") or b"").split(b"\0")
    seen = {string_abi(n.decode("ascii", "replace")) for n in names if n.startswith(b"_Z")} - {None}
    return seen == {1} if len(seen) == 1 else None


def _preload(init: str, internal: str) -> Optional[Dict[str, Any]]:
    rules = read_rules(init, internal, rtld_global_env=False)
    if rules is None:
        return None
    return {"global_deps": rules.global_deps, "marker": rules.marker, "search": rules.search.value,
            "on_failure": [[lib.folder, lib.pattern, lib.required] for lib in rules.on_failure],
            "after_load": [[lib.folder, lib.pattern, lib.required] for lib in rules.after_load]}


def _text(wheel: zipfile.ZipFile, name: str) -> str:
    return wheel.read(name).decode()


def from_wheel(path: Path) -> Dict[str, Any]:
    """The facts of one torch wheel; libraries are unpacked into a temporary folder to be read."""
    with zipfile.ZipFile(path) as wheel, tempfile.TemporaryDirectory() as tmp:
        names = set(wheel.namelist())
        info = next(n.rsplit("/", 1)[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(_text(wheel, f"{info}/METADATA"))
        version = re.search(r"__version__ = '([^']+)'", _text(wheel, "torch/version.py"))
        init, internal = _text(wheel, "torch/__init__.py"), _text(wheel, "torch/_utils_internal.py")
        header = _text(wheel, "torch/include/c10/util/intrusive_ptr.h")
        flash = FLASH_VERSION.search(_text(wheel, "torch/nn/attention/__init__.py"))
        facts: Dict[str, Any] = {
            "sha256_init_py": _sha(init.encode()), "sha256_utils_internal_py": _sha(internal.encode()),
            "version": version.group(1) if version else None,
            "tag": email.parser.Parser().parsestr(_text(wheel, f"{info}/WHEEL"))["Tag"],
            "requires_python": meta["Requires-Python"],
            "cuda_requires": [r for r in meta.get_all("Requires-Dist") or [] if CUDA_REQS.match(r)],
            "cxx20_headers": "#include <compare>" in header and "operator<=>" in header,
            "vendored_fa2": flash.group(1) if flash else None,
            "preload": _preload(init, internal), "cxx11_abi": None}
        for lib, key in (("torch/lib/libc10.so", "abi"), ("torch/lib/libtorch_cuda.so", "cuda")):
            if lib in names:
                unpacked = Path(wheel.extract(lib, tmp))
                if key == "abi":
                    facts["cxx11_abi"] = _abi(unpacked)
                else:
                    facts.update(_cuda_facts(unpacked))
                unpacked.unlink()
    return facts


def python_tags(reports: Path) -> Dict[str, List[str]]:
    """Per torch version, the interpreter tags (cp311, cp314t) a dry-run report found a wheel for."""
    out: Dict[str, List[str]] = {}
    for report in sorted(reports.glob("*.json")):
        for item in json.loads(report.read_text(encoding="utf-8")).get("install", []):
            name = item["download_info"]["url"].rsplit("/", 1)[-1]
            parts = name.split("-")
            if parts[0] == "torch":
                out.setdefault(parts[1], []).append(parts[3])
    return {v: sorted(set(tags)) for v, tags in out.items()}


def _python(tags: Iterable[str]) -> List[str]:
    """cp311 -> 3.11, cp314t -> 3.14t: plain builds first, then free-threaded, each ascending."""
    plain = sorted((t for t in tags if not t.endswith("t")), key=lambda t: int(t[3:]))
    free = sorted((t for t in tags if t.endswith("t")), key=lambda t: int(t[3:-1]))
    return [f"{t[2]}.{t[3:]}" for t in plain + free]


def entries(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    """torch_releases entries for the recorded CUDA wheels (Linux x86_64; one variant each)."""
    out = []
    for name, wheel in data["wheels"].items():
        if not wheel.get("gencode") or not re.search(r"-manylinux\w*_x86_64$", wheel["tag"]):
            continue
        public, _, variant = wheel["version"].partition("+")
        platform_tag = re.search(r"(manylinux[_\d]*?)_x86_64$", wheel["tag"])
        out.append({
            "minor": ".".join(public.split(".")[:2]), "latest_patch": public,
            "cuda_variants": [variant], "default_variant": variant,
            "python": _python(data["python_tags"].get(public, [])),
            "cxx11_abi": wheel["cxx11_abi"],
            "platform_tag": platform_tag.group(1) if platform_tag else None,
            "platform": "linux_x86_64", "arch_lists": {variant: arch_list(wheel["gencode"])},
            "source": (f"PyPI wheel {name}: version.py, WHEEL, METADATA, libc10.so's exported names "
                       "(C++ ABI), libtorch_cuda.so's gencode string and .nv_fatbin (PTX images: "
                       f"{', '.join(wheel['fatbin_ptx']) or 'none'}); Python versions: the registry's "
                       "wheels per interpreter tag (tools/gen_torch_release.py, "
                       "tools/fixtures/torch_wheels.json)"),
        })
    return sorted(out, key=lambda e: Version(e["latest_patch"]))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--wheel", type=Path, action="append", required=True)
    rec.add_argument("--reports", type=Path, help="folder of `pip install --dry-run --report` files")
    sub.add_parser("show")
    args = parser.parse_args(argv)
    if args.command == "record":
        data = {"wheels": {p.name: from_wheel(p) for p in args.wheel},
                "python_tags": python_tags(args.reports) if args.reports else {}}
        RECORD.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    print(json.dumps(entries(json.loads(RECORD.read_text(encoding="utf-8"))), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
