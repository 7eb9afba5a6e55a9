"""torch's messages about GPUs, CUDA and extension builds (torch/cuda/__init__.py and
torch/utils/cpp_extension.py, and c10's CUDA messages in torch/lib/libc10_cuda.so, read from
torch's wheels at each minor release) and the CUDA runtime's error strings (read from libcudart
in the nvidia-cuda-runtime wheels), recorded into
tests/fixtures/torch_excerpts.yaml and turned into catalog entries offline. Run:
python tools/torch_sources.py OUT.yaml WHEEL... (torch-*.whl and nvidia_cuda_runtime*.whl)."""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import message_extract as ex
import yaml
from packaging.version import Version

Row = Tuple[str, int, str]  # file, line (0 in a binary), printed
TORCH_FILES = ("torch/cuda/__init__.py", "torch/utils/cpp_extension.py")
# Which lines of torch's messages are about the environment, and what they mean (the first
# that matches wins). A message printed over several lines is catalogued line by line: triage
# reads a report line by line.
TORCH_KINDS: Tuple[Tuple[str, str], ...] = (
    (r"is not compatible with the current PyTorch installation|current PyTorch install supports "
     r"CUDA capabilities|which requires CUDA_VERSION|which is of compute capability \(CC\)|"
     r"PyTorch release that supports one of these CUDA versions|does not include kernels for "
     r"this GPU|No published PyTorch CUDA builds for release", "no_kernel_image"),
    (r"no longer supports this GPU because it is too old|minimum cuda capability supported by "
     r"this library|which is of cuda capability", "gpu_unsupported"),
    (r"^Torch not compiled with CUDA enabled", "torch_cpu_only"),
    (r"CUDA_HOME environment variable is not set|CUDA was not found on the system|mismatches the "
     r"version that was used to compile|minor version mismatch with the version|^Error building "
     r"extension|is not compatible with the compiler Pytorch was|may be ABI-incompatible with "
     r"PyTorch|than the (?:minimum|maximum) required version by CUDA", "build_toolchain"),
    # torch's JIT loader (cpp_extension.load -> verify_ninja_availability) cannot compile at all
    # without the ninja executable on the process's PATH (fadoctor's jit_ninja reads it)
    (r"Ninja is required to load C\+\+ extensions", "build_toolchain"),
)
# torch's own word that a message is harmless, a wrapper whose cause is printed above it, or a
# training step's out of memory (the workload's size, not the environment): these only
# corroborate, and alone are a warning (weight: note)
NOTES = (r"shouldn't be a problem|^Error building extension|asynchronously reported|out of memory|"
         r"Your compiler \(")  # the compiler warnings: torch builds on, and often succeeds
# c10's CUDA messages, whole C strings of torch/lib/libc10_cuda.so (a message c10::str joins from
# pieces is catalogued by its first piece).
C10_FILE = "torch/lib/libc10_cuda.so"
C10_KINDS: Tuple[Tuple[str, str], ...] = (
    (r"CUDA out of memory\. Tried to allocate", "out_of_memory"),
    # cudaErrorInitializationError: a driver is there and cannot start this CUDA runtime (one
    # older than torch's CUDA, or an update that awaits a reboot); torch's own words guess at no GPU
    (r"The NVIDIA driver on your system is too old \(found version|CUDA driver initialization "
     r"failed, you might not have a CUDA gpu\.", "driver_too_old"),
    (r"Found no NVIDIA driver on your system\..*|No CUDA GPUs are available|CUDA unknown error - "
     r"this may be due to an incorrectly set up environment.*", "no_gpu"),
    (r"CUDA kernel errors might be asynchronously reported at some other API call.*",
     "kernel_failure"),
)
# cudaGetErrorString's strings that say something about this stack; torch prints them after
# c10's "CUDA error: " (C10_CUDA_CHECK, below).
CUDART_KINDS: Tuple[Tuple[str, str], ...] = (
    (r"no kernel image is available for execution on the device|invalid device function",
     "no_kernel_image"),
    # cudaErrorInvalidKernelImage: an image for this GPU that the driver cannot load (compressed
    # in a mode it does not know, or from a newer toolkit), not a missing architecture
    (r"device kernel image is invalid", "driver_too_old"),
    # cudaErrorInvalidPtx: the driver's JIT could not compile the PTX; before CUDA 11.1 added
    # cudaErrorUnsupportedPtxVersion, PTX from a toolkit newer than the driver failed so
    (r"a PTX JIT compilation failed", "driver_too_old"),
    (r"the provided PTX was compiled with an unsupported toolchain\.|CUDA driver version is "
     r"insufficient for CUDA runtime version|forward compatibility was attempted on non supported "
     r"HW", "driver_too_old"),
    # cudaErrorSystemDriverMismatch (803): "a mismatch between the versions of the display driver
    # and the CUDA driver" (CUDA Runtime API, cudaError): the libcuda loaded is not the kernel
    # module's (an upgrade without a reboot; a container's cuda-compat libcuda ahead of the host's)
    (r"system has unsupported display driver / cuda driver combination", "cuda_runtime_mismatch"),
    (r"no CUDA-capable device is detected|CUDA driver is a stub library", "no_gpu"),
    (r"out of memory", "out_of_memory"),
)
# PyTorch SDPA's own checks of its flash and memory-efficient backends (sdp_utils: the C strings
# of libtorch_cuda.so, and from 2.1 libtorch_cpu.so's shared checks). TORCH_WARN joins pieces: a
# message is catalogued by its first piece ("... Attempting to run on a sm", then "7.5 gpu.").
SDPA_FILES = ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_cpu.so")
SDPA_KINDS: Tuple[Tuple[str, str], ...] = (
    (r"(?:Flash attention|Mem Efficient Attention) only supports (?:sm75 and sm8x gpu "
     r"architectures|sm5x or greater gpu architectures|gpu architectures in the range "
     r"\[sm\d+, sm\d+\])\. Attempting to run on a sm", "gpu_unsupported"),
    (r"Flash attention currently doesn't support training with head_dim.*|Flash attention requires "
     r"q,k,v to have the same last dimension.*|Memory Efficient Attention does not currently "
     r"support head_dim == 128 on sm86", "head_dim_unsupported"),
    (r"Flash attention kernel not used because:|Memory efficient kernel not used because:|"
     r"No available kernel\.\s{1,2}Aborting execution\.", "kernel_failure"),
)
# Why a backend was passed over, or that none was left: corroborate the reason printed with them.
SDPA_NOTES = r"not used because:|No available kernel"
# c10_cuda_check_implementation appends cudaGetErrorString's text to this prefix.
CUDA_ERROR = "CUDA error: "
C10_CHECK = "pytorch/pytorch@0e4c6cd66277:c10/cuda/CUDAException.cpp:29"
FACTS = (("^sm$", "gpu_arch"), ("capabilities", "arch_list"), ("capability|device_cc",
         "compute_capability"), ("version", "version"), ("compiler", "compiler"))
_FORMAT = re.compile(r"%(?:\.\d+)?[sdifr]|\{\{\d?\}\}")


def kind(text: str, kinds: Tuple[Tuple[str, str], ...]) -> Optional[str]:
    return next((category for test, category in kinds if re.search(test, text)), None)


def _named(template: str) -> str:
    """Positional placeholders (%s, %d, {}) named by the word they are glued to: `sm_{}` is
    {sm}, `GPU%d` is {gpu}, `version ({})` is {version}, `PyTorch ({})` is {pytorch}; else
    {value}."""
    out: List[str] = []
    end = 0
    for m in _FORMAT.finditer(template):
        out.append(template[end:m.start()])
        before = re.sub(r"\{\w+\}", "", "".join(out))
        glued = re.search(r"([A-Za-z]+)_?\s?\($|([A-Za-z]+)_?$", before)
        word = (glued.group(1) or glued.group(2)).lower() if glued else "value"
        out.append("{" + ("pytorch" if word.endswith("pytorch") else word) + "}")
        end = m.end()
    return "".join([*out, template[end:]])


def _strings(text: str) -> Iterator[Tuple[int, str]]:
    """(line, template) of every string literal and f-string, placeholders named."""
    tree = ast.parse(text)
    inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
             for v in node.values}
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, (ast.Constant, ast.JoinedStr)):
            continue
        template = ex._py_text(node)
        if template:
            yield node.lineno, ex._unescape(_named(template))


def torch_messages(text: str) -> Iterator[Tuple[int, str]]:
    """(line, printed) of each environment line of torch's messages in one file."""
    for start, template in _strings(text):
        for offset, line in enumerate(template.split("\n")):
            printed = " ".join(line.split())
            if kind(printed, TORCH_KINDS):
                yield start + offset, printed


def binary_messages(data: bytes, kinds: Tuple[Tuple[str, str], ...]) -> Iterator[str]:
    """The C strings of a shared library that are one of `kinds`' messages, whole."""
    tests = [re.compile(f"(?:{test})") for test, _ in kinds]
    for raw in sorted(set(re.findall(rb"[\x20-\x7e]{6,}", data))):
        text = raw.decode().strip()
        if any(t.fullmatch(text) for t in tests):
            yield text


def _wheel(path: Path) -> Tuple[bool, str]:
    """(a torch wheel?, release) from a wheel's file name: 2.4.0, or
    nvidia-cuda-runtime-cu12==12.8.90."""
    name, version = path.name.split("-")[:2]
    return name == "torch", version if name == "torch" else f"{name.replace('_', '-')}=={version}"


def _read_wheel(path: Path) -> Dict[str, List[Row]]:
    """family -> rows: torch (its Python files), c10 (libc10_cuda.so, and whether it holds the
    "CUDA error: " prefix), cudart (libcudart)."""
    out: Dict[str, List[Row]] = {}
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for file in (f for f in TORCH_FILES if f in names):
            out.setdefault("torch", []).extend(
                (file, line, printed) for line, printed in torch_messages(z.read(file).decode()))
        if C10_FILE in names:
            data = z.read(C10_FILE)
            out["c10"] = [(C10_FILE, 0, text) for text in binary_messages(data, C10_KINDS)]
            if b"\x00" + CUDA_ERROR.encode() + b"\x00" in data:
                out["c10"].append((C10_FILE, 0, CUDA_ERROR))
        for lib in (f for f in SDPA_FILES if f in names):
            out.setdefault("sdpa", []).extend(
                (lib, 0, text) for text in binary_messages(z.read(lib), SDPA_KINDS))
        for file in (n for n in names if re.search(r"/libcudart\.so\.[\d.]+$", n)):
            out.setdefault("cudart", []).extend(
                (file, 0, CUDA_ERROR + text) for text in binary_messages(z.read(file), CUDART_KINDS))
    return out


def release_order(release: str) -> Version:
    return Version(release.rsplit("==", 1)[-1])


def read(wheels: List[Path]) -> Dict[str, Dict[str, object]]:
    """family -> releases (oldest first) and rows (file, line, printed, release runs): the
    messages only, never the files."""
    found: Dict[str, Dict[str, List[Row]]] = {}
    for path in wheels:
        _, release = _wheel(path)
        for family, rows in _read_wheel(path).items():
            found.setdefault(family, {}).setdefault(release, []).extend(rows)
    out: Dict[str, Dict[str, object]] = {}
    for family, by_release in found.items():
        releases = sorted(by_release, key=release_order)
        rows: Dict[Row, List[int]] = {}
        for index, release in enumerate(releases):
            for row in dict.fromkeys(by_release[release]):
                rows.setdefault(row, []).append(index)
        out[family] = {"releases": releases,
                       "rows": [[*row, ex.tag_runs(i)] for row, i in rows.items()]}
    return out


def _captures(printed: str) -> Dict[str, str]:
    return {name: next((f for test, f in FACTS if re.search(test, name)), "value")
            for name in re.findall(r"\{(\w+)\}", printed)}


def _location(family: str, release: str, file: str, line: int) -> str:
    where = f"{release}:{file}" if family == "cudart" else f"torch=={release}:{file}"
    return f"{where}:{line}" if line else where


def printed_form(family: str, raw: str) -> str:
    """The catalogued form of a recorded message: SDPA's C strings with their spacing collapsed
    (torch 2.0-2.1 print "No available kernel.  Aborting", 2.2+ one space)."""
    return " ".join(raw.split()) if family == "sdpa" else raw


def _spans(family: str, data: Dict[str, object]) -> Dict[str, Tuple[List[str], str]]:
    """printed -> (the releases that print it, oldest first; where the oldest prints it). A
    message whose releases differ only in spacing ("No available kernel.  Aborting") is one:
    the pattern allows either."""
    releases = [str(r) for r in data["releases"]]  # type: ignore[attr-defined]
    spans: Dict[str, Tuple[List[str], str]] = {}
    for file, line, raw, runs in data["rows"]:  # type: ignore[attr-defined]
        printed = printed_form(family, raw)
        have = ex.tags_in_runs(releases, runs)
        earlier = spans.get(printed)
        where = _location(family, have[0], file, line)
        if earlier is not None:
            where = earlier[1] if release_order(earlier[0][0]) <= release_order(have[0]) else where
            have = sorted({*earlier[0], *have}, key=release_order)
        spans[printed] = (have, where)
    return spans


def _prefix(recorded: Dict[str, Dict[str, object]]) -> str:
    """Where torch prints "CUDA error: " before the runtime's string: the source, and the
    releases whose libc10_cuda.so holds it."""
    data = recorded.get("c10")
    have = _spans("c10", data).get(CUDA_ERROR) if data else None
    return C10_CHECK + (f"; torch=={have[0][0]}..{have[0][-1]}:{C10_FILE}" if have else "")


def entries(recorded: Dict[str, Dict[str, object]],
            pattern: Callable[[str], str]) -> List[Dict[str, object]]:
    """One entry per family and printed form, the first and last release that print it; each
    corroborates the hand-written mechanism that reads the same line (weight: corroborate)."""
    out: List[Dict[str, object]] = []
    for family, kinds, mechanism in (("torch", TORCH_KINDS, "torch_check"),
                                     ("c10", C10_KINDS, "torch_check"),
                                     ("cudart", CUDART_KINDS, "cuda_runtime_error"),
                                     ("sdpa", SDPA_KINDS, "torch_sdpa_check")):
        data = recorded.get(family)
        if not data:
            continue
        spans = sorted(((p, s) for p, s in _spans(family, data).items() if p != CUDA_ERROR),
                       key=lambda s: (release_order(s[1][0][0]), s[1][1]))
        for number, (printed, (have, where)) in enumerate(spans, 1):
            entry: Dict[str, object] = {
                "id": f"{family}-{number:03d}", "printed": printed,
                "pattern": pattern(printed.rstrip(".")), "location": where,
                "first": have[0].rsplit("==", 1)[-1], "last": have[-1].rsplit("==", 1)[-1],
                "mechanism": mechanism, "category": kind(printed, kinds),
                "weight": _weight(family, printed)}
            if family == "cudart":
                entry["prefix"] = _prefix(recorded)
                entry["pattern"] = _bare_too(printed, pattern)
            if _captures(printed):
                entry["captures"] = _captures(printed)
            out.append(entry)
    return out


def _bare_too(printed: str, pattern: Callable[[str], str]) -> str:
    """The runtime's own string is printed bare by every program that is not torch (cudaGetErrorString
    after its own prefix): torch's "CUDA error: " is optional where the string alone is distinctive
    (four words or more: not "out of memory", "invalid device function")."""
    bare = printed[len(CUDA_ERROR):] if printed.startswith(CUDA_ERROR) else printed
    whole = pattern(printed.rstrip("."))
    if len(bare.split()) < 4 or bare == printed:
        return whole
    return "(?:" + pattern(CUDA_ERROR.strip()) + r"\s{1,4})?" + pattern(bare.rstrip("."))


def _weight(family: str, printed: str) -> str:
    """SDPA's backend gates name their cause (the weight of flash-attention's own checks); its
    "not used because" lines and every other torch message only corroborate."""
    if family == "sdpa":
        return "note" if re.search(SDPA_NOTES, printed) else ""
    return "note" if re.search(NOTES, printed) else "corroborate"


def load(path: Path) -> Dict[str, Dict[str, object]]:
    loaded: Dict[str, Dict[str, object]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def main(argv: List[str]) -> None:
    """OUT WHEEL... [--only FAMILY,...]: record the wheels' messages into OUT; with --only, those
    families are replaced and the others OUT holds are kept (one family re-read from the wheels
    that carry it)."""
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else None
    args = [a for i, a in enumerate(argv) if a != "--only" and (i == 0 or argv[i - 1] != "--only")]
    out, found = Path(args[0]), read([Path(p) for p in args[1:]])
    if only is not None:
        found = {**(load(out) if out.is_file() else {}), **{f: found[f] for f in only if f in found}}
    out.write_text(yaml.safe_dump(found, width=200), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
