"""The machine a plan is for: from this machine's facts, overridden by what-if options (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Dict, Optional

from packaging.version import InvalidVersion, Version

from fadoctor.errors import UsageError
from fadoctor.facts.model import Facts
from fadoctor.install.views import driver_version, torch_view
from fadoctor.matrix.models import DriverVersion

BUILD_THREADS = 2  # nvcc --threads per job (NVCC_THREADS, flash-attn >= 2.5.7); its CI uses 2


@dataclass(frozen=True)
class Machine:
    gpu_name: Optional[str] = None
    gpu_cc: Optional[Version] = None
    driver: Optional[DriverVersion] = None
    python: Optional[Version] = None  # major.minor
    glibc: Optional[Version] = None
    platform: str = "linux_x86_64"
    torch: Optional[Version] = None  # installed torch, with its local tag (2.4.0+cu121)
    torch_cxx11_abi: Optional[bool] = None
    cpus: Optional[int] = None
    memory_gib: Optional[float] = None
    detected: bool = False  # from this machine's facts: an absent GPU or driver is absent, not unknown

    @property
    def build_jobs(self) -> int:
        """Parallel compile jobs for a flash-attn build with NVCC_THREADS=BUILD_THREADS: about
        5 GB of RAM per nvcc thread (flash-attention setup.py on main: MAX_JOBS = free RAM /
        (5 GB * NVCC_THREADS)); with the memory unknown, the README's MAX_JOBS=4 (< 96 GB)."""
        if self.memory_gib is None:
            return 4
        return max(1, min(self.cpus or 1, int(self.memory_gib // (5 * BUILD_THREADS))))

    @property
    def python_tag(self) -> Optional[str]:
        return f"cp{self.python.major}{self.python.minor}" if self.python else None

    @property
    def torch_variant(self) -> Optional[str]:
        local = self.torch.local if self.torch else None
        return local if local and re.fullmatch(r"cu\d+|cpu|rocm[\d.]+", local) else None


@dataclass(frozen=True)
class WhatIf:
    """--gpu-cc, --driver, --python, --torch, --glibc, --platform: any subset."""

    gpu_cc: Optional[str] = None
    driver: Optional[str] = None
    python: Optional[str] = None
    torch: Optional[str] = None
    glibc: Optional[str] = None
    platform: Optional[str] = None


def from_facts(facts: Optional[Facts]) -> Machine:
    if facts is None:
        return Machine()
    host, driver = facts.host.data, facts.driver.data
    torch = torch_view(facts)
    gpus = [g for g in ((driver.gpus or []) if driver and driver.present else [])
            if g.compute_capability]
    newest = max(gpus, key=lambda g: Version(g.compute_capability or "0"), default=None)
    return Machine(
        gpu_name=newest.name if newest else None,
        gpu_cc=Version(newest.compute_capability) if newest and newest.compute_capability else None,
        driver=driver_version(facts),
        python=_minor(host.python_version) if host and host.python_version else None,
        glibc=_parse(Version, host.libc_version or "") if host and host.libc == "glibc" else None,
        platform=(f"{host.os.lower()}_{host.machine}" if host and host.os and host.machine
                  else "linux_x86_64"),
        torch=_parse(Version, torch.version) if torch else None,
        torch_cxx11_abi=torch.cxx11_abi if torch else None,
        cpus=host.cpus if host else None,
        memory_gib=host.memory_mib / 1024 if host and host.memory_mib else None,
        detected=True,
    )


def apply(machine: Machine, what_if: WhatIf) -> Machine:
    """The machine with every given what-if value in place of the detected one."""
    changes: Dict[str, object] = {}
    if what_if.gpu_cc is not None:  # another machine's GPU: this one's cores and memory are not
        changes["gpu_cc"] = _option(Version, what_if.gpu_cc, "--gpu-cc")  # its (MAX_JOBS)
        changes.update(gpu_name=None, cpus=None, memory_gib=None)
    if what_if.driver is not None:
        changes["driver"] = _option(DriverVersion, what_if.driver, "--driver")
    if what_if.python is not None:
        changes["python"] = _minor(what_if.python) or _bad("--python", what_if.python)
    if what_if.glibc is not None:
        changes["glibc"] = _option(Version, what_if.glibc, "--glibc")
    if what_if.platform is not None:
        changes["platform"] = what_if.platform
    if what_if.torch is not None:
        changes["torch"] = _option(Version, what_if.torch, "--torch")
        changes["torch_cxx11_abi"] = None  # the matrix says, for that build
    return replace(machine, **changes)  # type: ignore[arg-type]


def _parse(kind: type, text: str) -> Optional[Version]:
    try:
        return kind(text)  # type: ignore[no-any-return]
    except InvalidVersion:
        return None


def _option(kind: type, text: str, flag: str) -> Version:
    return _parse(kind, text) or _bad(flag, text)


def _minor(text: str) -> Optional[Version]:
    v = _parse(Version, text)
    return Version(f"{v.major}.{v.minor}") if v else None


def _bad(flag: str, text: str) -> Version:
    raise UsageError(f"{flag} {text}: not a version")
