"""Real CUDA shared libraries built with nvcc, and cuobjdump's reading of them as the oracle.

Each build is a tiny `__global__` kernel linked with `nvcc -shared`, with chosen `-gencode`
targets and compression options. nvcc puts one fat binary container per translation unit in the
`.nv_fatbin` section, plus one for its device link. cuobjdump is looked up on PATH, next to the
real nvcc, and in the `nvidia-cuda-cuobjdump` wheel's layout on sys.path.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Tuple, Union

from elftools.elf.elffile import ELFFile

from fadoctor.probes.fatbin import Codec, Kind

NVCC = shutil.which("nvcc")
BUILD_TIMEOUT = 300.0
KERNELS = (
    "__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n",
    "__global__ void shift(float *x, float a) { x[threadIdx.x] += a; }\n",
)


def gencode(arch: str, code: str) -> Tuple[str, str]:
    return ("-gencode", f"arch={arch},code={code}")


@dataclass(frozen=True)
class Build:
    """One library: what nvcc is asked for, and what its fat binary must then hold."""

    name: str
    flags: Tuple[str, ...]
    sass: FrozenSet[str]
    ptx: FrozenSet[str]
    # The codec of the SASS and of the PTX entries under nvcc 13 (its defaults: PTX zstd, SASS raw).
    codecs: Tuple[Codec, Codec]
    sources: int = 1
    needs: Tuple[str, ...] = ()  # options that must appear in `nvcc --help`
    min_cuda: Tuple[int, int] = (11, 0)


BUILDS = (
    Build("sass", gencode("compute_80", "sm_80") + gencode("compute_90", "sm_90"),
          frozenset({"sm_80", "sm_90"}), frozenset(), (Codec.NONE, Codec.NONE)),
    Build("ptx_two_units", gencode("compute_80", "sm_80") + gencode("compute_90", "compute_90"),
          frozenset({"sm_80"}), frozenset({"compute_90"}), (Codec.NONE, Codec.ZSTD), sources=2),
    Build("arch_specific_uncompressed",
          gencode("compute_90a", "[sm_90a,compute_90a]") + ("--no-compress",),
          frozenset({"sm_90a"}), frozenset({"compute_90a"}), (Codec.NONE, Codec.NONE),
          needs=("--no-compress",)),
    Build("compress_all",
          gencode("compute_80", "sm_80") + gencode("compute_90", "[sm_90,compute_90]")
          + ("-Xfatbin", "-compress-all"),
          frozenset({"sm_80", "sm_90"}), frozenset({"compute_90"}), (Codec.ZSTD, Codec.ZSTD)),
    Build("lz4", gencode("compute_90", "[sm_90,compute_90]") + ("--compress-mode=speed",),
          frozenset({"sm_90"}), frozenset({"compute_90"}), (Codec.NONE, Codec.LZ4),
          needs=("--compress-mode",)),
    Build("family",
          gencode("compute_100f", "[sm_100f,compute_100f]") + gencode("compute_120a", "sm_120a"),
          frozenset({"sm_100f", "sm_120a"}), frozenset({"compute_100f"}), (Codec.NONE, Codec.ZSTD),
          min_cuda=(12, 9)),
)


@functools.cache
def nvcc_version() -> Tuple[int, int]:
    out = _run([_nvcc(), "--version"])
    match = re.search(r"release (\d+)\.(\d+)", out)
    assert match, out
    return int(match.group(1)), int(match.group(2))


@functools.cache
def _nvcc_help() -> str:
    return _run([_nvcc(), "--help"])


def unsupported(build: Build) -> Optional[str]:
    """Why this nvcc cannot make `build`, or None."""
    if nvcc_version() < build.min_cuda:
        return f"{build.name} needs CUDA {build.min_cuda[0]}.{build.min_cuda[1]}+, nvcc is {nvcc_version()}"
    missing = [opt for opt in build.needs if opt not in _nvcc_help()]
    return f"this nvcc has no {', '.join(missing)}" if missing else None


def build_library(build: Build, folder: Path) -> Tuple[Path, float]:
    """Compile and link `build` into `folder`; the library and the seconds nvcc took."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = []
    for i, text in enumerate(KERNELS[: build.sources]):
        source = folder / f"kernel{i}.cu"
        source.write_text(text)
        sources.append(str(source))
    library = folder / f"lib{build.name}.so"
    # -cudart shared: the way extensions link it, and a small library.
    command = [_nvcc(), "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
               "-o", str(library), *sources, *build.flags]
    start = time.monotonic()
    _run(command)
    return library, time.monotonic() - start


def build_all(folder: Path) -> Dict[str, Union[Path, str]]:
    """Every build this nvcc can make, in parallel: name -> library, or the reason it is skipped."""
    results: Dict[str, Union[Path, str]] = {}
    todo = []
    for build in BUILDS:
        reason = unsupported(build)
        if reason:
            results[build.name] = reason
        else:
            todo.append(build)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = pool.map(lambda b: build_library(b, folder / b.name), todo)
        for build, (library, _) in zip(todo, built):
            results[build.name] = library
    return results


def fatbin_section(library: Path) -> bytes:
    with library.open("rb") as f:
        section = ELFFile(f).get_section_by_name(".nv_fatbin")
        assert section is not None, f"{library} has no .nv_fatbin section"
        data: bytes = section.data()
        return data


def find_cuobjdump() -> Optional[str]:
    found = shutil.which("cuobjdump")
    if found:
        return found
    candidates: List[Path] = []
    if NVCC:
        # nvcc is often a wrapper script on PATH; its dry run names the folder it really lives in.
        here = re.search(r"_HERE_=(.+)", _run([NVCC, "--dryrun", "-E", "-x", "cu", os.devnull]))
        if here:
            candidates.append(Path(here.group(1).strip()) / "cuobjdump")
    for entry in sys.path:
        candidates.extend(Path(entry or ".").glob("nvidia/*/bin/cuobjdump"))
    return next((str(c) for c in candidates if os.access(c, os.X_OK)), None)


# (kind, arch in fadoctor's vocabulary, code version, compressed), one per entry, in order.
OracleEntry = Tuple[Kind, str, Tuple[int, int], bool]
_CUOBJDUMP_KINDS = {"elf": Kind.SASS, "ptx": Kind.PTX, "nvvm": Kind.LTOIR}


def cuobjdump_entries(cuobjdump: str, library: Path) -> List[OracleEntry]:
    """cuobjdump's per-entry header blocks ("Fatbin elf code:", "arch = sm_90", ...)."""
    entries: List[OracleEntry] = []
    blocks = re.split(r"^Fatbin (\w+) code:\n=+\n", _run([cuobjdump, str(library)]), flags=re.M)
    for kind_name, block in zip(blocks[1::2], blocks[2::2]):
        header = block.split("\n\n", 1)[0].splitlines()  # PTX text follows the first blank line
        fields = dict(line.split(" = ", 1) for line in header if " = " in line)
        kind = _CUOBJDUMP_KINDS[kind_name]
        version = tuple(int(v) for v in fields["code version"].strip("[]").split(","))
        entries.append((kind, _our_arch(kind, fields["arch"]), (version[0], version[1]),
                        "compressed" in header))
    return entries


def cuobjdump_lists(cuobjdump: str, library: Path) -> Tuple[List[str], List[str]]:
    """The archs in the file names of `--list-elf` and `--list-ptx` (x.1.sm_90.cubin, x.1.sm_90.ptx)."""
    def names(option: str, kind: Kind) -> List[str]:
        out = _run([cuobjdump, option, str(library)])
        files = re.findall(r"^(?:ELF|PTX) file\s+\d+: (\S+)$", out, flags=re.M)
        return [_our_arch(kind, name.rsplit(".", 2)[-2]) for name in files]

    return names("--list-elf", Kind.SASS), names("--list-ptx", Kind.PTX)


def _our_arch(kind: Kind, arch: str) -> str:
    # cuobjdump says sm_90 for PTX too; torch and nvcc's -gencode call that PTX compute_90.
    return arch.replace("sm_", "compute_", 1) if kind is Kind.PTX else arch


def _nvcc() -> str:
    assert NVCC is not None
    return NVCC


def _run(command: List[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout + done.stderr
