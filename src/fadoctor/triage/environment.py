"""Parsers of environment listings: collect_env, pip list/freeze/show, conda list, nvidia-smi
(table, -L and -q), nvcc --version, ldd --version, uname -a, os-release, `key: value` lines and
prose with versions (pure). Each value is stated with its line."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.triage import observed as o
from fadoctor.triage.env_abi import hf_env, repl_versions, torch_abi
from fadoctor.triage.gpus import GpuFinder
from fadoctor.triage.hardware import read_hardware, read_paths
from fadoctor.triage.observed import LISTING, PROSE, TOOL, Observed
from fadoctor.triage.text import Pasted, Quote

VERSION = r"\d+(?:\.\d+){1,3}(?:\.?(?:post|dev|rc|a|b)\d*)?(?:\+[A-Za-z0-9.]+)?"
_V = re.compile(VERSION)

# collect_env's own lines (torch/utils/collect_env.py; the format is the same from 2.0 to 2.14).
_COLLECT_ENV: List[Tuple[str, str, int]] = [
    ("PyTorch version:", o.TORCH, TOOL), ("CUDA used to build PyTorch:", o.TORCH_CUDA, TOOL),
    ("ROCM used to build PyTorch:", o.TORCH_HIP, TOOL), ("OS:", o.OS, TOOL),
    ("GCC version:", o.GCC, TOOL), ("Libc version:", o.GLIBC, TOOL),
    ("Python version:", o.PYTHON, TOOL), ("Is CUDA available:", o.CUDA_AVAILABLE, TOOL),
    ("CUDA runtime version:", o.NVCC, TOOL), ("Nvidia driver version:", o.DRIVER, TOOL),
    ("HIP runtime version:", o.ROCM, TOOL),
]
_NOT_VALUES = ("n/a", "none", "could not collect", "no cuda", "")

_SMI_HEADER = re.compile(r"Driver Version:\s*(\d[\d.]*)\s+CUDA Version:\s*(\d+\.\d+)")
_SMI_L = re.compile(r"^\s*GPU \d+:\s*(.+?)\s*(?:\(UUID:.*)?$")
_SMI_Q = re.compile(r"^\s*(Driver Version|CUDA Version|Product Name)\s*:\s*(.+?)\s*$")
_NVCC = re.compile(r"Cuda compilation tools, release (\d+\.\d+)")
_LDD = re.compile(r"^ldd \(.*\)\s+(\d+\.\d+)|GNU C Library .*?version (\d+\.\d+)")
_UNAME = re.compile(r"^Linux \S+ (\d+\.\d+\S*) .*?\b(x86_64|aarch64|ppc64le|arm64)\b")
_OS_RELEASE = re.compile(r'^PRETTY_NAME="?([^"]+)"?\s*$')
_PIP_FREEZE = re.compile(r"^\s*(?:\[(?:pip3?|conda)\]\s*)?([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)")
_PIP_LIST = re.compile(r"^\s*(?:\[conda\]\s*)?([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\d[\w.+!-]*)"
                       r"(?:\s+(\S+))?(?:\s+(\S+))?\s*$")
_LISTING_HEADER = re.compile(r"^\s*#?\s*(?:Package|Name)\s+Version(?:\s+Build)?")
_PIP_SHOW = re.compile(r"^(Name|Version):\s*(\S+)\s*$")
_CONDA_BUILD = re.compile(r"cuda(\d+)\.(\d+)")
# Bounded (linear in the line): no two quantifiers in a row that take the same characters.
_KEY_VALUE = re.compile(r"^\s*(?:[-*]\s*)?([A-Za-z][\w .()/-]{0,40}?)[ \t]{0,64}[:=]\s*(\S.*)$")
# "==" or a lone "=": a run of "=" splits one way only ("==?" split it every way: exponential).
_PROSE = re.compile(
    r"(?<![A-Za-z0-9_/.-])(pytorch|torch|python|cuda|flash[-_ ]?(?:attn|attention)(?:[-_ ]?[234])?|"
    r"rocm|ubuntu|debian|centos|rocky|glibc|gcc|nvcc|driver|transformers|vllm|unsloth|"
    r"triton(?:-windows)?)"
    r"(?:\[[\w,-]{1,40}\])?"  # a requirement's extras: "flash-attn-4[cu13]==4.0.0b14"
    # "torch version is 2.5", and in Chinese prose "torch版本为2.10.0" (version is), and the fullwidth colon
    r"(?:\s*(?:version|ver\.?|v|is|:|==|=(?!=)|>=|-|\.__version__|\u7248\u672c[\u4e3a\u662f]?|"
    r"\uff1a))*\s*['\"`]?"  # a printed repr quotes it: torch.__version__: '2.1.0a0+4136153'
    r"(" + VERSION + r"|\d+\.x)", re.IGNORECASE)
# vLLM's collect_env pads the same keys to a column ("Is CUDA available            : True"): a long
# key is found without its colon, and the padding goes before it is read.
_PADDED = re.compile(r"^([A-Za-z][\w ()]{2,40}?)[ \t]+:")
_TOOL_NEEDLES = (*(prefix.lower() if len(prefix) < 10 else prefix.lower()[:-1]
                   for prefix, _, _ in _COLLECT_ENV), "ldd (", "pretty_name=",
                 "memtotal:", "mem:", "cpu(s):", "linux ", "driver version", "cuda version",
                 "product name", "cuda compilation tools", "gnu c library")
_PACKAGE_HINT = re.compile(r"[ \t]*(?:\[\w{1,64}\][ \t]*)?(?:#[ \t]*)?[A-Za-z0-9][A-Za-z0-9._-]{0,100}"
                           r"(?:[ \t]*==|[ \t]+\d|[ \t]+Version|:[ \t]*\S)")
_REQUIRING = ("requires", "require", "requirement", "needs", "need", "depends on", "built for",
              "was built for:", "distribution found for")  # pip's "No matching distribution"
_FLOOR = re.compile(r"\s*(?:and|or)\s+(?:above|newer|later|higher)\b")
_PROSE_NEEDLES = ("torch", "python", "cuda", "flash", "rocm", "ubuntu", "debian", "centos", "rocky",
                  "glibc", "gcc", "nvcc", "driver", "transformers", "vllm", "unsloth", "triton",
                  "fa4", "fa-4")
_NOT_HF_PACKAGES = ("python", "platform", "tensorflow", "flax", "jax", "jaxlib")
_MEMTOTAL = re.compile(r"^(?:MemTotal:\s*(\d+)\s*kB|Mem:\s+(\d+(?:\.\d+)?)(Gi|G|Mi|M)\b)")
_CPUS = re.compile(r"^CPU\(s\):\s*(\d+)\s*$")
_NOT_PACKAGES = {"python", "cuda", "version", "release", "linux", "gpu", "ubuntu", "debian",
                 "centos", "rocky", "rocm", "nvcc", "gcc", "driver", "glibc", "os", "windows"}

# `key: value` keys a person writes, and what they mean.
_KEYS = {"torch": o.TORCH, "pytorch": o.TORCH, "torch version": o.TORCH,
         "pytorch version": o.TORCH, "python": o.PYTHON, "python version": o.PYTHON,
         "cuda": o.CUDA, "cuda version": o.CUDA, "os": o.OS, "system": o.OS,
         "operating system": o.OS, "distro": o.OS, "platform": o.OS, "rocm": o.ROCM,
         "rocm version": o.ROCM, "driver": o.DRIVER, "driver version": o.DRIVER,
         "nvidia driver": o.DRIVER, "gcc": o.GCC, "gcc version": o.GCC, "glibc": o.GLIBC,
         "nvcc": o.NVCC, "cuda toolkit": o.NVCC}
_PACKAGE_KEYS = ("flash-attn", "flash_attn", "flash attn", "flash-attention", "flash attention",
                 "flash-attn-3", "flash-attn-4", "transformers", "vllm", "unsloth", "xformers",
                 "triton", "accelerate", "deepspeed", "peft", "trl", "axolotl", "flashinfer",
                 "flashinfer-python", "sageattention", "torchvision", "torchaudio", "bitsandbytes",
                 "mmcv", "mmcv-full", "mmdet", "mmengine", "numpy", "diffusers", "onnxruntime",
                 "onnxruntime-gpu", "spconv", "ctranslate2", "timm", "sentence-transformers",
                 "causal-conv1d", "mamba-ssm")  # the stack, its companions, compiled packages
_KEY_HINT = re.compile(
    r"[ \t]*(?:[-*][ \t]*)?[*`]*(?:" + "|".join(re.escape(k) for k in sorted(
        [*_KEYS, *_PACKAGE_KEYS], key=len, reverse=True)) + r")[*`]*[ \t]*[:=]",
    re.IGNORECASE)


def read_environment(text: Pasted, seen: Observed, gpus: GpuFinder) -> None:
    """Every environment fact the text states, into `seen`. Each parser runs only on the lines
    its hint finds in one scan of the whole text (a report can be megabytes of log), and once per
    distinct line: a repeated line states nothing new (the first quote of a value is kept)."""
    for index in text.distinct(text.containing(_TOOL_NEEDLES)):
        line = text.lines[index]
        _tool_lines(line, line.lower(), _Lazy(text, index), seen)
    show_name: Optional[str] = None
    for index in text.distinct(text.matching(_PACKAGE_HINT)):
        line = text.lines[index]
        show_name = _packages(line, line.lower(), _Lazy(text, index), seen, show_name)
    for index in text.distinct(text.matching(_KEY_HINT, (":", "="))):
        _key_values(text.lines[index], _Lazy(text, index), seen)
    for index in text.distinct(text.containing(_PROSE_NEEDLES)):
        line = text.lines[index]
        _prose(line, line.lower(), _Lazy(text, index), seen)
    torch_abi(text, seen)
    repl_versions(text, seen)
    for index in text.distinct(text.containing(("` version:", "version (gpu?):",
                                                 "version (cpu?):"))):
        stated = hf_env(text.lines[index])  # transformers-cli env's "- `x` version: y"
        if stated is not None and stated[0].lower() not in _NOT_HF_PACKAGES:
            _package(stated[0], stated[1], text.quote(index), seen, TOOL)
        elif stated is not None and stated[0].lower() == "python":
            seen.state(o.PYTHON, stated[1], text.quote(index), TOOL)
    read_paths(text, seen)
    read_hardware(text, seen, gpus)
    # a distribution's driver package names the branch: Ubuntu's nvidia-driver-570
    for index in text.containing(("nvidia-driver",)):
        package = _DRIVER_PACKAGE.search(text.lines[index])
        if package is not None:
            seen.state(o.DRIVER, package.group(1), _Lazy(text, index)(), PROSE)
    for kind, count in seen.rows.items():
        if count >= 3:  # a listing, not a requirement or two quoted in prose
            seen.kinds.add(kind)


_DRIVER_PACKAGE = re.compile(r"\bnvidia-drivers?-(\d{3})(?:-(?:open|server))?\b", re.I)


class _Lazy:
    """The quote of a line, made only when a parser uses it (most lines state nothing)."""

    def __init__(self, text: Pasted, index: int) -> None:
        self.text, self.index = text, index
        self._quote: Optional[Quote] = None

    def __call__(self) -> Quote:
        if self._quote is None:
            self._quote = self.text.quote(self.index)
        return self._quote


def _value(raw: str) -> Optional[str]:
    value = raw.strip()
    return None if value.lower() in _NOT_VALUES else value


def _tool_lines(line: str, low: str, quote: _Lazy, seen: Observed) -> None:
    stripped = _PADDED.sub(r"\1:", line.strip(), count=1)
    for prefix, key, weight in _COLLECT_ENV:
        if stripped.startswith(prefix):
            value = _value(stripped[len(prefix):])
            if value is not None:
                seen.kinds.add("collect_env")
                _state_special(key, value, quote(), seen, weight)
            return
    smi = _nvidia_smi(line, low)
    if smi is not None:
        kind, pairs = smi
        seen.kinds.add(kind)
        for key, value in pairs:
            seen.state(key, value, quote(), TOOL)
        return
    if "cuda compilation tools" in low:
        nvcc = _NVCC.search(line)
        if nvcc:
            seen.kinds.add("nvcc --version")
            seen.state(o.NVCC, nvcc.group(1), quote(), TOOL)
    elif low.startswith("ldd (") or "gnu c library" in low:
        ldd = _LDD.search(line)
        if ldd:
            seen.kinds.add("ldd --version")
            seen.state(o.GLIBC, ldd.group(1) or ldd.group(2), quote(), TOOL)
    elif low.startswith("linux "):
        uname = _UNAME.match(line)
        if uname:
            seen.kinds.add("uname -a")
            seen.state(o.KERNEL, uname.group(1), quote(), TOOL)
            seen.state(o.MACHINE, uname.group(2), quote(), TOOL)
    elif low.startswith("pretty_name="):
        release = _OS_RELEASE.match(line.strip())
        if release:
            seen.kinds.add("os-release")
            seen.state(o.OS, release.group(1), quote(), TOOL)
    elif low.startswith(("memtotal:", "mem:")):
        _memory_line(line, quote, seen)
    elif low.startswith("cpu(s):"):
        cpus = _CPUS.match(line.strip())
        if cpus:
            seen.state(o.CPUS, cpus.group(1), quote(), TOOL)


def _nvidia_smi(line: str, low: str) -> Optional[Tuple[str, List[Tuple[str, str]]]]:
    """nvidia-smi's header (table) or its `-q` lines: the driver and its CUDA version."""
    header = _SMI_HEADER.search(line) if "driver version" in low else None
    if header:
        return "nvidia-smi", [(o.DRIVER, header.group(1)), (o.DRIVER_CUDA, header.group(2))]
    query = _SMI_Q.match(line)
    if query:
        key = {"Driver Version": o.DRIVER, "CUDA Version": o.DRIVER_CUDA}.get(query.group(1))
        return "nvidia-smi -q", [(key, query.group(2))] if key else []
    return None


def _state_special(key: str, value: str, quote: Quote, seen: Observed, weight: int) -> None:
    """collect_env values that need unpacking (Python's sys.version, `glibc-2.35`, the OS line)."""
    if key == o.PYTHON:
        found = _V.search(value)
        if found:
            seen.state(o.PYTHON, found.group(0), quote, weight)
        return
    if key == o.GLIBC:
        found = re.search(r"glibc-?(\d+\.\d+)", value)
        if found:
            seen.state(o.GLIBC, found.group(1), quote, weight)
        return
    if key == o.OS:
        arch = re.search(r"\((x86_64|aarch64|ppc64le|arm64|AMD64)\)", value)
        if arch:
            seen.state(o.MACHINE, arch.group(1), quote, weight)
        seen.state(o.OS, re.sub(r"\s*\([^)]*\)\s*$", "", value), quote, weight)
        return
    if key in (o.NVCC, o.ROCM, o.DRIVER, o.GCC):
        found = _V.search(value)
        if found is None:
            return
        value = found.group(0)
    if key == o.TORCH:
        _torch_version(value, quote, seen, weight)
        return
    seen.state(key, value, quote, weight)


def _torch_version(value: str, quote: Quote, seen: Observed, weight: int) -> None:
    """torch's version and what its local tag says: +cu121 (CUDA 12.1), +cpu, +rocm6.2."""
    found = _V.search(value)
    if found is None:
        return
    version = found.group(0)
    seen.state(o.TORCH, version, quote, weight)
    local = version.partition("+")[2]
    cu = re.fullmatch(r"cu(\d+)(\d)", local)
    if cu:
        seen.state(o.TORCH_CUDA, f"{cu.group(1)}.{cu.group(2)}", quote, weight)
    elif local.startswith("rocm"):
        seen.state(o.TORCH_HIP, local[4:], quote, weight)
    elif local == "cpu":
        seen.state(o.TORCH_CUDA, "none", quote, weight)
    if ".dev" in version or "nightly" in value.lower() or "git" in local:
        seen.state(o.TORCH_NIGHTLY, "true", quote, weight)


def _packages(line: str, low: str, quote: _Lazy, seen: Observed, show_name: Optional[str]
              ) -> Optional[str]:
    """pip freeze (`name==version`, collect_env's `[pip3] ...`), pip list and conda list
    columns, pip show's Name/Version pairs. Returns the pending pip-show name."""
    if _LISTING_HEADER.match(line):
        seen.kinds.add("conda list" if line.lstrip().startswith("#") else "pip list")
        return show_name
    show = _PIP_SHOW.match(line.strip())
    if show:
        if show.group(1) == "Name":
            return show.group(2)
        if show_name is not None:
            seen.kinds.add("pip show")
            _package(show_name, show.group(2), quote(), seen, LISTING)
        return None
    freeze = _PIP_FREEZE.match(line) if "==" in line else None
    if freeze:
        if not line.lstrip().startswith("["):  # collect_env's [pip3] lines are a filtered list
            seen.rows["pip freeze"] = seen.rows.get("pip freeze", 0) + 1
        _package(freeze.group(1), freeze.group(2), quote(), seen, LISTING)
        return show_name
    columns = _PIP_LIST.match(line) if not line.startswith((" ", "\t")) or "[conda]" in low \
        else None
    if columns and _V.match(columns.group(2)) and not columns.group(1)[0].isdigit():
        name, version, build = columns.group(1), columns.group(2), columns.group(3)
        if name.lower() in _NOT_PACKAGES:
            return show_name
        if "[conda]" not in low:
            seen.rows["pip list"] = seen.rows.get("pip list", 0) + 1
        _package(name, version, quote(), seen, LISTING)
        if name.lower() in ("pytorch", "torch") and build and not build.startswith("pypi"):
            seen.state(o.TORCH_CONDA, "true", quote(), LISTING)
        conda = _CONDA_BUILD.search(build or "") if name.lower() == "pytorch" else None
        if conda:
            seen.state(o.TORCH_CUDA, f"{conda.group(1)}.{conda.group(2)}", quote(), LISTING)
    return show_name


def _package(name: str, version: str, quote: Quote, seen: Observed, weight: int) -> None:
    lowered = name.lower()
    if lowered in ("torch", "pytorch"):
        _torch_version(version, quote, seen, weight)
        return
    if lowered == "python":
        seen.state(o.PYTHON, version, quote, weight)
        return
    if _V.match(version) or version.endswith(".x"):
        seen.package(name, version, quote, weight)


def _key_values(line: str, quote: _Lazy, seen: Observed) -> None:
    if ":" not in line and "=" not in line:
        return
    found = _KEY_VALUE.match(line.replace("*", "").replace("`", ""))
    if found is None:
        return
    key, value = found.group(1).strip().lower(), found.group(2).rstrip()
    if key in _KEYS:
        fact = _KEYS[key]
        if fact in (o.OS,):
            seen.state(fact, value, quote(), PROSE)
        else:
            _state_special(fact, value, quote(), seen, PROSE)
            if fact == o.TORCH and "nightly" in value.lower():
                seen.state(o.TORCH_NIGHTLY, "true", quote(), PROSE)
    elif key in _PACKAGE_KEYS:
        version = _V.search(value) or re.search(r"\d+\.x", value)
        if version:
            seen.package(_package_name(key, version.group(0)), version.group(0), quote(), PROSE)


_FLASH = re.compile(r"flash-?att(?:ention|n)-?([234])?")
# flash-attention's distributions by generation: flash-attn (2.x), flash-attn-3, flash-attn-4.
_FLASH_BY_MAJOR = {"2": "flash-attn", "3": "flash-attn-3", "4": "flash-attn-4"}


def _package_name(word: str, version: str = "") -> str:
    """The distribution a name in the text means: flash-attention's by the generation it names
    ("flash-attention 3", "flash_attn_4") or, named bare, by the version's major (flash-attn 2.x
    never had a 3.x or 4.x release)."""
    word = word.lower().replace(" ", "-").replace("_", "-")
    flash = _FLASH.fullmatch(word)
    if flash is None:
        return word
    return _FLASH_BY_MAJOR.get(flash.group(1) or version.split(".", 1)[0], "flash-attn")


# flash-attn-4's betas as people name them: "FA4 b10", "FA4 beta 27" (4.0.0bN on the index)
_FA4_BETA = re.compile(r"\bFA-?4\s*(?:b|beta)\s?(\d{1,3})\b", re.I)


def _prose(line: str, low: str, quote: _Lazy, seen: Observed) -> None:
    beta = _FA4_BETA.search(line) if "fa" in low else None
    if beta is not None:
        seen.package("flash-attn-4", f"4.0.0b{beta.group(1)}", quote(), PROSE)
    for found in _PROSE.finditer(line):
        if low[:found.start()].rstrip().endswith(_REQUIRING) or _FLOOR.match(low, found.end()):
            continue  # "requires torch==2.4.1", "CUDA 11.7 and above": a requirement, not what is
            # installed
        seen.kinds.add("prose with versions")
        word, value = found.group(1).lower(), found.group(2)
        if word in ("torch", "pytorch"):
            _torch_version(value, quote(), seen, PROSE)
            if "nightly" in low:
                seen.state(o.TORCH_NIGHTLY, "true", quote(), PROSE)
        elif word == "python":
            seen.state(o.PYTHON, value, quote(), PROSE)
        elif word in ("ubuntu", "debian", "centos", "rocky"):
            seen.state(o.OS, f"{found.group(1)} {value}", quote(), PROSE)
        elif word == "cuda" and low.startswith(". cuda toolkit", found.end()):  # unsloth's banner:
            seen.state(o.GPU_CC, value, quote(), PROSE)  # "CUDA: {major}.{minor}. CUDA Toolkit:"
        elif word in ("cuda", "rocm", "glibc", "gcc", "nvcc", "driver"):
            key = {"cuda": o.CUDA, "rocm": o.ROCM, "glibc": o.GLIBC, "gcc": o.GCC,
                   "nvcc": o.NVCC, "driver": o.DRIVER}[word]
            seen.state(key, value, quote(), PROSE)
        else:
            if word.startswith("flash") and re.fullmatch(r"[234](?:\.0)?", value) \
                    and not re.search(r"==|>=|version", found.group(0), re.IGNORECASE):
                continue  # "Flash Attention 2.0" / "FlashAttention 3": a generation, not a release
            seen.package(_package_name(word, value), value, quote(), PROSE)


def _memory_line(line: str, quote: _Lazy, seen: Observed) -> None:
    found = _MEMTOTAL.match(line.strip())
    if found is None:
        return
    if found.group(1):
        seen.state(o.MEMORY_GIB, str(round(int(found.group(1)) / 1024 ** 2, 1)), quote(), TOOL)
        return
    amount, unit = float(found.group(2)), found.group(3)
    gib = amount / 1024 if unit.startswith("M") else amount
    seen.state(o.MEMORY_GIB, str(round(gib, 1)), quote(), TOOL)
