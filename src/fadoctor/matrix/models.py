"""Pydantic schema of data/compat_matrix.yaml: strings become Version/SpecifierSet at the boundary,
cross-entry invariants name the entry at fault, and the queries the checks and the solver use.

The entry models live in sibling modules (base, hardware, pytorch, families, fa2, defects); they
are re-exported here, where the checks import them from.
"""


import re
from typing import List, Optional

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, field_validator

from fadoctor.facts.model import Family
from fadoctor.matrix.attention import BackwardRestriction, FeatureSupport, HeadDimLimit
from fadoctor.matrix.base import (
    DriverVersion,
    Entry,
    Evidence,
    Problems,
    minor_of,
)
from fadoctor.matrix.defects import Defect, Stage
from fadoctor.matrix.fa2 import CudaTagRule, FlashAttnRelease, LocalVersion, parse_local
from fadoctor.matrix.families import (
    ArchGate,
    CustomOps,
    Fa4Release,
    FamilyRequirement,
    FamilySupport,
    RocmBackend,
)
from fadoctor.matrix.hardware import CudaDriver, DriverFloor, GpuSpec, ToolkitDriver, resolve_gpu
from fadoctor.matrix.pytorch import SdpaRange, TorchApi, TorchRelease
from fadoctor.matrix.sources import CommunityWheels, HubKernel, SpeedRatio, WheelSource

__all__ = [
    "ArchGate",
    "BackwardRestriction",
    "CommunityWheels",
    "CudaDriver",
    "CudaTagRule",
    "CustomOps",
    "Defect",
    "DriverFloor",
    "DriverVersion",
    "Entry",
    "Evidence",
    "Fa4Release",
    "FamilyRequirement",
    "FamilySupport",
    "FeatureSupport",
    "FlashAttnRelease",
    "GpuSpec",
    "HeadDimLimit",
    "HubKernel",
    "LocalVersion",
    "Matrix",
    "Problems",
    "RocmBackend",
    "SdpaRange",
    "SpeedRatio",
    "Stage",
    "ToolkitDriver",
    "TorchApi",
    "TorchRelease",
    "WheelSource",
    "parse_local",
]


MATRIX_SCHEMA_VERSION = 1


class Matrix(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: int
    data_date: Optional[str] = None  # YYYY-MM-DD: the day its facts were last read from sources
    cuda_driver: CudaDriver
    gpus: List[GpuSpec]
    torch_releases: List[TorchRelease]
    torch_apis: List[TorchApi]
    sdpa_backends: List[SdpaRange]
    families: List[FamilySupport]
    fa2_arch_gate: List[ArchGate]
    family_requirements: List[FamilyRequirement]
    fa4_releases: List[Fa4Release]
    rocm_backends: List[RocmBackend]
    flash_attn_releases: List[FlashAttnRelease]
    known_defects: List[Defect]
    custom_ops: List[CustomOps] = []
    attention_features: List[FeatureSupport] = []
    head_dim_limits: List[HeadDimLimit] = []
    backward_restrictions: List[BackwardRestriction] = []
    wheel_sources: List[WheelSource] = []
    hub_kernels: List[HubKernel] = []
    attention_speed: List[SpeedRatio] = []
    community_wheels: List[CommunityWheels] = []

    @field_validator("data_date")
    @classmethod
    def _iso_date(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(f"data_date {value!r} is not YYYY-MM-DD")
        return value

    @field_validator("schema_version")
    @classmethod
    def _known_schema(cls, value: int) -> int:
        if value != MATRIX_SCHEMA_VERSION:  # its fields may mean something else: never guess
            raise ValueError(f"schema_version {value} is not {MATRIX_SCHEMA_VERSION}, the "
                             "version this fadoctor reads")
        return value

    # -- queries ------------------------------------------------------------------------------

    def torch_release(self, version: Version) -> Optional[TorchRelease]:
        minor = minor_of(version)
        return next((r for r in self.torch_releases if r.minor == minor), None)

    def family_support(self, family: Family) -> FamilySupport:
        return next(f for f in self.families if f.family == family)

    def requirements(self, family: Family) -> List[FamilyRequirement]:
        return [r for r in self.family_requirements if r.family == family]

    def fa_release(self, version: Version) -> Optional[FlashAttnRelease]:
        return next((r for r in self.flash_attn_releases if r.version == version), None)

    def custom_ops_for(self, family: Family) -> Optional[CustomOps]:
        return next((c for c in self.custom_ops if c.family == family), None)

    def fa4_release(self, version: Version) -> Optional[Fa4Release]:
        return next((r for r in self.fa4_releases if r.version == version), None)

    def sdpa_range(self, backend: str, torch: Version) -> Optional[SdpaRange]:
        release = Version(minor_of(torch))
        return next((r for r in self.sdpa_backends
                     if r.backend == backend and release in r.torch), None)

    def torch_api(self, api: str) -> Optional[TorchApi]:
        return next((a for a in self.torch_apis if a.api == api), None)

    def driver_floor(self, cuda_major: int) -> Optional[DriverFloor]:
        return next((f for f in self.cuda_driver.floors if f.cuda_major == cuda_major), None)

    def toolkit_driver(self, cuda: Version) -> Optional[ToolkitDriver]:
        key = Version(minor_of(cuda))
        return next((t for t in self.cuda_driver.toolkits if t.cuda == key), None)

    def gpu(self, device: str) -> Optional[GpuSpec]:
        """The GPU entry for a device name ("NVIDIA H100 80GB HBM3"), if the matrix has one."""
        return resolve_gpu(self.gpus, device)

    def defects_for(self, version: Version, family: Family = Family.FA2) -> List[Defect]:
        return [d for d in self.known_defects if d.family == family and d.affects(version)]

    def wheel_source(self, source_id: str) -> Optional[WheelSource]:
        return next((s for s in self.wheel_sources if s.id == source_id), None)

    def rocm_backends_for(self, version: Version) -> List[RocmBackend]:
        return [b for b in self.rocm_backends if b.affects(version)]

    def wheel_cxx11_abi(self, release: FlashAttnRelease, local: str) -> Optional[bool]:
        """The C++11 ABI a wheel was really compiled with. 'TRUE' jobs force ABI 1; 'FALSE' jobs
        take whatever ABI the CI's torch had (FLASH_ATTENTION_FORCE_CXX11_ABI=FALSE forces
        nothing: fa_wheel_matrix.yaml caveats), so the label can lie. None when the torch build
        is unknown to the matrix (1.x, or a nightly, whose ABI nothing here records)."""
        parsed = parse_local(local)
        if parsed is None or parsed.cxx11_abi is None:
            return None
        if parsed.cxx11_abi:
            return True
        variant = release.built_against.get(parsed.key)
        torch = self.torch_release(Version(parsed.torch_minor))
        if variant is None or torch is None or release.built_against_nightly(local):
            return None
        return torch.variant_abi(variant)
