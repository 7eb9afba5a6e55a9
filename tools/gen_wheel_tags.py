"""Generate data/wheel_tags.json: what each release of the packages this field installs publishes on
the package index (its simple API's file list, PEP 691): for every release, its upload date, its
Requires-Python, whether it has a source distribution, and its wheels' CPython versions by
platform (linux_x86_64, linux_aarch64, win_amd64, macos_arm64, macos_x86_64, ...; "py3" for a pure
wheel, "cp39+" for a stable-ABI one). pip's "Could not find a version that satisfies the
requirement xformers==0.0.19 (from versions: none)" on Python 3.11 is then answered with the
releases that have a wheel for that Python and platform, and the Pythons the asked release has.

Run: python tools/gen_wheel_tags.py [--index-url URL] [--check]. The index is pip's own default
(pip's `PyPI.simple_url`) unless --index-url names another; nothing else is read."""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

OUT = Path(__file__).resolve().parents[1] / "data" / "wheel_tags.json"
# the distributions people install beside torch and flash-attention, and fail to: the stack's own
# wheels, the kernels and extensions, the runtimes and the libraries whose wheels lag a Python
PACKAGES = (
    "torch", "torchvision", "torchaudio", "torchao", "torchcodec", "triton", "triton-windows",
    "pytorch-triton-rocm", "xformers", "flash-attn", "flash-attn-3", "flash-attn-4", "vllm",
    "sglang", "sgl-kernel", "flashinfer-python", "flashinfer-cubin", "bitsandbytes", "deepspeed",
    "transformer-engine", "transformer-engine-torch", "transformer-engine-cu12", "apex",
    "onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "torch-directml",
    "intel-extension-for-pytorch", "tensorrt", "tensorrt-cu12", "tensorrt-llm", "jax", "jaxlib",
    "jax-cuda12-plugin", "tensorflow", "tensorflow-gpu", "insightface", "ctranslate2",
    "llama-cpp-python", "mamba-ssm", "causal-conv1d", "auto-gptq", "autoawq", "autoawq-kernels",
    "gptqmodel", "numpy", "scipy", "sentencepiece", "tokenizers", "safetensors", "spconv-cu118",
    "spconv-cu120", "spconv-cu121", "spconv-cu124", "spconv-cu126", "cumm-cu118", "cumm-cu120",
    "cumm-cu121", "cumm-cu124", "cumm-cu126", "open3d", "pytorch3d", "dgl", "mmcv", "mmcv-full",
    "torch-scatter", "torch-sparse", "torch-cluster", "pyg-lib", "coqui-tts", "tts", "gsplat",
    "nvidia-cutlass-dsl", "cupy-cuda12x", "cupy-cuda11x", "cupy-cuda13x", "unsloth",
    "unsloth-zoo", "liger-kernel", "opencv-python", "mediapipe", "decord", "natten",
    "sageattention", "nunchaku", "pynvml", "nvidia-ml-py", "faiss-gpu", "faiss-cpu", "ninja",
    "kernels", "accelerate", "transformers", "diffusers", "peft", "trl", "av", "pyarrow",
    "grpcio", "basicsr", "dlib", "tensorflow-intel", "paddlepaddle-gpu", "fairseq",
    "hqq", "optimum", "openai-whisper", "faster-whisper", "whisperx", "nemo-toolkit",
)
_ARCH = (("x86_64", "x86_64"), ("amd64", "x86_64"), ("aarch64", "aarch64"), ("arm64", "arm64"),
         ("universal2", "universal2"), ("ppc64le", "ppc64le"), ("s390x", "s390x"),
         ("i686", "i686"), ("armv7l", "armv7l"))
_GLIBC = re.compile(r"^manylinux_(\d+)_(\d+)_")
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def platform(tag: str) -> Optional[str]:
    """A wheel's platform tag as the table keys it: linux_x86_64, linux_aarch64, win_amd64,
    win32, win_arm64, macos_arm64, macos_x86_64 (universal2 counts for both), any."""
    if tag == "any":
        return "any"
    if tag in ("win32", "win_amd64", "win_arm64"):
        return tag
    for end, arch in _ARCH:
        if tag.endswith("_" + end):
            if tag.startswith(("manylinux", "musllinux", "linux")):
                return ("musllinux_" if tag.startswith("musllinux") else "linux_") + arch
            if tag.startswith("macosx"):
                return "macos_" + arch
    return None


def glibc_floor(tag: str) -> Optional[Tuple[int, int]]:
    found = _GLIBC.match(tag)
    if found:
        return int(found.group(1)), int(found.group(2))
    return _LEGACY.get(tag.split("_")[0])


def python_of(interpreter: str, abi: str) -> Optional[str]:
    """cp311 (a CPython build), cp39+ (stable ABI from 3.9), py3 (pure); other interpreters
    (PyPy) and Python 2 are left out."""
    if interpreter.startswith("cp") and interpreter[2:].isdigit():
        return interpreter + "+" if abi == "abi3" else interpreter
    if interpreter in ("py3", "py30") or re.fullmatch(r"py3\d*", interpreter):
        return "py3"
    return None


def _fetch(index: str, package: str) -> Dict[str, Any]:
    """The index's file list for a package; empty where the index has no such project."""
    request = urllib.request.Request(f"{index.rstrip('/')}/{package}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            data: Dict[str, Any] = json.load(answer)
    except urllib.error.HTTPError as error:
        if error.code != 404:
            raise
        print(f"not on the index: {package}", file=sys.stderr)
        return {}
    return data


def releases(files: List[Dict[str, Any]]) -> List[List[Any]]:
    """[version, upload date, requires-python, has sdist, {platform: [pythons]}, glibc floor] per
    release, oldest first; yanked files are left out."""
    found: Dict[Version, Dict[str, Any]] = {}
    for item in files:
        name, yanked = item["filename"], item.get("yanked")
        if yanked:
            continue
        if name.endswith(".whl"):
            try:
                _, version, _, tags = parse_wheel_filename(name)
            except (InvalidWheelFilename, InvalidVersion):
                continue
            sdist = False
        elif name.endswith((".tar.gz", ".zip")):
            stem = name.rsplit(".tar.gz", 1)[0] if name.endswith(".tar.gz") else name[:-4]
            try:
                version = Version(stem.rpartition("-")[2])
            except InvalidVersion:
                continue
            tags, sdist = frozenset(), True
        else:
            continue
        entry = found.setdefault(version, {"date": "", "python": "", "sdist": False,
                                           "wheels": {}, "glibc": None})
        day = (item.get("upload-time") or "")[:10]
        entry["date"] = min(entry["date"] or day, day or entry["date"])
        entry["python"] = entry["python"] or item.get("requires-python") or ""
        entry["sdist"] = entry["sdist"] or sdist
        for tag in tags:
            where, python = platform(tag.platform), python_of(tag.interpreter, tag.abi)
            if where is None or python is None:
                continue
            entry["wheels"].setdefault(where, set()).add(python)
            floor = glibc_floor(tag.platform) if where.startswith("linux_") else None
            if floor and (entry["glibc"] is None or floor < entry["glibc"]):
                entry["glibc"] = floor
    rows = []
    for version in sorted(found):
        entry = found[version]
        wheels = {where: sorted(pythons, key=_python_key)
                  for where, pythons in sorted(entry["wheels"].items())}
        glibc = f"{entry['glibc'][0]}.{entry['glibc'][1]}" if entry["glibc"] else ""
        rows.append([str(version), entry["date"], entry["python"], int(entry["sdist"]), wheels,
                     glibc])
    return rows


def _python_key(python: str) -> Tuple[int, str]:
    digits = re.sub(r"\D", "", python)
    return (int(digits) if digits else 0, python)


def build(index: str) -> Dict[str, Any]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda p: (p, _fetch(index, p)), PACKAGES))
    packages: Dict[str, Any] = {}
    for package, data in answers:
        rows = releases(data.get("files", []))
        if rows:
            packages[str(canonicalize_name(package))] = rows
    return {"about": "Generated by tools/gen_wheel_tags.py from the package index's simple API "
                     "(its file list per package): per release [version, first upload date, "
                     "Requires-Python, has a source distribution, {platform: CPython tags of its "
                     "wheels (cp39+: stable ABI from 3.9; py3: pure)}, lowest manylinux glibc]; "
                     "do not edit.",
            "read": date.today().isoformat(), "packages": packages}


def _default_index() -> str:
    from pip._internal.models.index import PyPI  # pip's own default, not written here

    return str(PyPI.simple_url)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-url", default=None)
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed table (releases may only be added)")
    args = parser.parse_args(argv)
    table = build(args.index_url or _default_index())
    if args.check:
        old = json.loads(OUT.read_text(encoding="utf-8"))["packages"]
        lost: Set[str] = set()
        for package, rows in old.items():
            have = {row[0] for row in table["packages"].get(package, [])}
            lost |= {f"{package}=={row[0]}" for row in rows if row[0] not in have}
        if lost:  # a release yanked or deleted since: report, the table is still the index's
            print(f"no longer on the index: {', '.join(sorted(lost))}", file=sys.stderr)
        return 0
    OUT.write_text(json.dumps(table, separators=(",", ":"), sort_keys=False) + "\n",
                   encoding="utf-8")
    count = sum(len(rows) for rows in table["packages"].values())
    print(f"wrote {OUT.name}: {len(table['packages'])} packages, {count} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
