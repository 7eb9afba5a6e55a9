"""What triage knows about the reporter's machine: the stated values parsed into versions, and the
few things the matrix derives from them (torch's CUDA variant and C++ ABI), each derivation said."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Dict, Iterator, List, Optional, Pattern, Sequence, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.install.machine import BUILD_THREADS, Machine
from fadoctor.matrix import Matrix
from fadoctor.matrix.models import DriverVersion
from fadoctor.triage import observed as o
from fadoctor.triage.observed import Observed
from fadoctor.triage.text import Pasted, Quote

FA2_NAMES = ("flash-attn", "flash-attn-2")
# NVIDIA's architecture names, by the lowest compute capability of each (NVIDIA's CUDA GPUs
# pages, via torch_cuda_facts.md §3): what "a Blackwell card" tells when no model is named.
ARCH_FAMILY_CC = {"maxwell": "5.0", "pascal": "6.0", "volta": "7.0", "turing": "7.5",
                  "ampere": "8.0", "ada": "8.9", "hopper": "9.0", "blackwell": "10.0"}


_ARM_HOST = re.compile(r"\b(?:aarch64|arm64|sbsa|GB200|GB300|GH200|GB10|Grace|Jetson|DGX Spark)\b",
                       re.I)
_ARM_NEEDLES = ("aarch64", "arm64", "sbsa", "gb200", "gb300", "gh200", "gb10", "grace", "jetson",
                "dgx spark")


def parse_version(text: Optional[str]) -> Optional[Version]:
    if not text:
        return None
    try:
        return Version(text.strip().rstrip(".,;:)"))
    except InvalidVersion:
        return None


def minor(version: Optional[Version]) -> Optional[Version]:
    return Version(f"{version.major}.{version.minor}") if version is not None else None


@dataclass
class Context:
    """The pasted text, what it states, and the matrix: the input of every mechanism."""

    text: Pasted
    seen: Observed
    matrix: Matrix
    assumptions: List[str] = field(default_factory=list)

    # -- finding lines --------------------------------------------------------------------------

    def find(self, pattern: Pattern[str], needles: Sequence[str], also: Sequence[str] = ()
             ) -> Iterator[Tuple[int, re.Match[str]]]:
        """Each line holding one of `needles` (lower case) and every word of `also` where
        `pattern` matches: the needles are found in one scan of the whole text, the pattern runs
        on those lines only."""
        lower, lines = self.text.lower_lines, self.text.lines
        rarest, rest = (also[0], also[1:]) if also else ("", ())
        done: Dict[str, Optional[re.Match[str]]] = {}  # a repeated line is searched once
        for index in self.text.holding(needles):
            if rarest not in lower[index] or (rest and not all(w in lower[index] for w in rest)):
                continue
            line = lines[index]
            found = done[line] if line in done else done.setdefault(line, pattern.search(line))
            if found:
                yield index, found

    def first(self, pattern: Pattern[str], needles: Sequence[str], also: Sequence[str] = ()
              ) -> Optional[Tuple[int, re.Match[str]]]:
        """`find`'s first: the distinct lines holding a needle are taken in the order they first
        occur, so the search stops at the first that matches (the earliest line that does: a
        later distinct line first occurs later). Lines that differ only in case are one
        distinct line, each tested until one matches."""
        rarest, rest = (also[0], also[1:]) if also else ("", ())
        best: Optional[Tuple[int, re.Match[str]]] = None
        done: Dict[str, Optional[re.Match[str]]] = {}
        for low, members in self.text.first_holding(needles):
            if best is not None and members[0] > best[0]:
                break
            if rarest not in low or (rest and not all(w in low for w in rest)):
                continue
            for index in members:
                if best is not None and index > best[0]:
                    break
                line = self.text.lines[index]
                found = done[line] if line in done else done.setdefault(line, pattern.search(line))
                if found:
                    best = index, found
                    break
        return best

    def low(self, index: int) -> str:
        return self.text.lower_lines[index]

    def quote(self, index: int) -> Quote:
        return self.text.quote(index)

    def has(self, *needles: str) -> Optional[Quote]:
        """The first line holding any of `needles` (lower case)."""
        found = next(self.text.first_holding(needles), None)  # the earliest line holding one
        return self.text.quote(found[1][0]) if found else None

    # -- stated and derived values --------------------------------------------------------------

    @cached_property
    def torch(self) -> Optional[Version]:
        return parse_version(self.seen.get(o.TORCH))

    @cached_property
    def torch_cuda_stated(self) -> Optional[Version]:
        """torch's CUDA as the report states it (its +cuXYZ, collect_env's line), or a CUDA the
        report states that is one of the stated release's builds; never a default taken."""
        stated = self.seen.get(o.TORCH_CUDA)
        if stated:
            return parse_version(stated) if stated != "none" else None
        release = self.matrix.torch_release(self.torch) if self.torch else None
        if release is None or self.seen.get(o.TORCH_HIP) or self.torch_is_nightly:
            return None
        cuda = parse_version(self.seen.get(o.CUDA))
        if cuda is not None and f"cu{cuda.major}{cuda.minor}" in release.cuda_variants:
            self.assumptions.append(f"torch {self.torch}'s CUDA taken as the CUDA {cuda} the "
                                    f"report states (a build torch {release.minor} shipped)")
            return Version(f"{cuda.major}.{cuda.minor}")
        return None

    @cached_property
    def torch_cuda(self) -> Optional[Version]:
        if self.torch_cuda_stated is not None or self.seen.get(o.TORCH_CUDA):
            return self.torch_cuda_stated
        if self.torch is not None and (self.torch.local or "").startswith("cpu"):
            return None  # 2.6.0+cpu: the CPU build, whatever the release's default
        release = self.matrix.torch_release(self.torch) if self.torch else None
        if release is None or self.seen.get(o.TORCH_HIP) or self.torch_is_nightly:
            return None
        digits = release.default_variant[2:]
        self.assumptions.append(f"torch {self.torch} stated without its CUDA build: taken as "
                                f"PyPI's default build of {release.minor} ({release.default_variant})")
        return Version(f"{digits[:-1]}.{digits[-1]}")

    @cached_property
    def torch_variant(self) -> Optional[str]:
        cuda = self.torch_cuda
        return f"cu{cuda.major}{cuda.minor}" if cuda is not None else None

    @cached_property
    def torch_is_nightly(self) -> bool:
        return bool(self.seen.get(o.TORCH_NIGHTLY)) or bool(self.torch and self.torch.is_devrelease)

    @cached_property
    def torch_abi(self) -> Optional[bool]:
        """torch._C._GLIBCXX_USE_CXX11_ABI: stated, else the matrix's for this build."""
        stated = self.seen.get(o.TORCH_ABI)
        if stated is not None:
            return stated.lower() in ("true", "1")
        release = self.matrix.torch_release(self.torch) if self.torch else None
        if release is None and self.torch is not None and self.torch.major < 2 \
                and not self.torch_is_nightly and not self.seen.get(o.TORCH_CONDA):
            # the PyPI/pytorch.org wheels before 2.7 were built with the pre-C++11 ABI (the
            # matrix's own lists begin at 2.0: torch_cuda_facts.md §1.4; tridao in
            # Dao-AILab/flash-attention#457: pytorch.org wheels use -D_GLIBCXX_USE_CXX11_ABI=0)
            self.assumptions.append(f"torch {self.torch}'s C++11 ABI taken as 0, that of the "
                                    "pip wheels before 2.7")
            return False
        variant = self.torch_variant
        if release is None or variant is None or variant not in release.cuda_variants \
                or self.torch_is_nightly or self.seen.get(o.TORCH_CONDA):
            return None
        abi = release.variant_abi(variant)
        self.assumptions.append(f"torch {self.torch}'s C++11 ABI taken as {int(abi)}, that of "
                                f"the {variant} wheels of torch {release.minor}")
        return abi

    @cached_property
    def python(self) -> Optional[Version]:
        return minor(parse_version(self.seen.get(o.PYTHON)))

    @cached_property
    def glibc(self) -> Optional[Version]:
        return parse_version(self.seen.get(o.GLIBC))

    @cached_property
    def nvcc(self) -> Optional[Version]:
        return minor(parse_version(self.seen.get(o.NVCC)))

    @cached_property
    def driver(self) -> Optional[DriverVersion]:
        text = self.seen.get(o.DRIVER)
        try:
            return DriverVersion(text) if text else None
        except InvalidVersion:
            return None

    @cached_property
    def memory_gib(self) -> Optional[float]:
        try:
            return float(self.seen.get(o.MEMORY_GIB) or "")
        except ValueError:
            return None

    @cached_property
    def gpu(self) -> Optional[Tuple[str, Optional[Version], Quote]]:
        """The NVIDIA GPU the report names (its compute capability if known), else None."""
        named = [g for g in self.seen.gpus if g.vendor == "nvidia"]
        with_cc = [g for g in named if g.cc]
        stated_cc = self.seen.values.get(o.GPU_CC)
        if with_cc:
            g = max(with_cc, key=lambda g: Version(g.cc or "0"))
            return g.name, Version(g.cc or "0"), g.quote
        if stated_cc is not None:
            return (named[0].name if named else f"sm_{stated_cc.value.replace('.', '')}",
                    parse_version(stated_cc.value), stated_cc.quote)
        if named:
            return named[0].name, None, named[0].quote
        family = self.seen.values.get(o.GPU_ARCH_FAMILY)
        if family is not None and family.value in ARCH_FAMILY_CC:
            return (f"a {family.value.capitalize()} GPU", Version(ARCH_FAMILY_CC[family.value]),
                    family.quote)
        return None

    @property
    def gpu_cc(self) -> Optional[Version]:
        return self.gpu[1] if self.gpu else None

    @property
    def gpu_cc_exact(self) -> Optional[Version]:
        """The compute capability of a named model or a stated one (not a generation's lowest)."""
        return None if self.gpu is None or self.gpu[0].startswith("a ") else self.gpu[1]

    @cached_property
    def amd(self) -> bool:
        return any(g.vendor == "amd" for g in self.seen.gpus) or bool(
            self.seen.get(o.ROCM) or self.seen.get(o.TORCH_HIP))

    def package(self, *names: str) -> Optional[o.Stated]:
        for name in names:
            if name in self.seen.packages:
                return self.seen.packages[name]
        return None

    @cached_property
    def fa2(self) -> Optional[Version]:
        stated = self.package(*FA2_NAMES)
        if stated is None:
            return None
        found = parse_version(stated.value[:-2] + ".0" if stated.value.endswith(".x")
                              else stated.value)
        return Version(found.public) if found is not None else None

    def fa_quote(self) -> Optional[Quote]:
        """The line that states the flash-attn version, if one does."""
        stated = self.package(*FA2_NAMES)
        return stated.quote if stated else None

    @property
    def fa2_exact(self) -> bool:
        stated = self.package(*FA2_NAMES)
        return stated is not None and not stated.value.endswith(".x")

    def machine(self) -> Machine:
        """The machine for the solver: what the text states; Linux x86_64 unless it says
        otherwise (the only platform flash-attn publishes wheels for)."""
        machine = self.seen.get(o.MACHINE) or "x86_64"
        stated = (self.seen.get(o.OS) or "").lower()
        # no OS stated: a Windows wheel or a drive path in the text says Windows (not "windows"
        # in prose, which WSL users write too)
        windows = "windows" in stated or (not stated and bool(
            self.text.containing(("win_amd64", ":\\"))))
        system = "windows" if windows else "linux"
        cc = self.gpu_cc_exact
        return Machine(gpu_name=self.gpu[0] if self.gpu else None, gpu_cc=cc,
                       driver=self.driver, python=self.python, glibc=self.glibc,
                       platform=f"{system}_{'x86_64' if machine in ('AMD64', 'amd64') else machine}",
                       torch=self.torch, torch_cxx11_abi=self.torch_abi,
                       memory_gib=self.memory_gib,
                       cpus=int(self.seen.get(o.CPUS) or 0) or None)

    @cached_property
    def arm_host(self) -> Optional[Quote]:
        """The line saying the machine is an Arm (aarch64) host: the machine stated, or a system
        only built that way (Grace: GH200, GB200, GB300; GB10; Jetson)."""
        machine = self.seen.get(o.MACHINE)
        if machine in ("aarch64", "arm64"):
            return next(iter(self.quotes(o.MACHINE)), None)
        # a line with a link or a wheel's name mentions files, not this machine
        found = next((f for f in self.find(_ARM_HOST, _ARM_NEEDLES)
                      if "http" not in self.low(f[0]) and ".whl" not in self.low(f[0])), None)
        return self.quote(found[0]) if found else None

    @property
    def build_jobs(self) -> int:
        """MAX_JOBS for a flash-attn build: about 5 GB of RAM per nvcc job of BUILD_THREADS
        threads (flash-attention setup.py); the README's 4 when the memory is not stated."""
        if self.memory_gib is None:
            return 4
        jobs = max(1, int(self.memory_gib // (5 * BUILD_THREADS)))
        cpus = self.seen.get(o.CPUS)
        return min(jobs, int(cpus)) if cpus and cpus.isdigit() else jobs

    def quotes(self, *keys: str) -> List[Quote]:
        return self.seen.quotes(*keys)
