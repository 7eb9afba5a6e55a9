"""Pydantic schema of data/compat_matrix.yaml: strings become Version/SpecifierSet at the boundary."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from fadoctor.facts import Family


class Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    source: str

    @field_validator("source")
    @classmethod
    def _cited(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("every matrix entry needs a non-empty source")
        return value


def _version(value: Any) -> Version:
    try:
        return value if isinstance(value, Version) else Version(str(value))
    except InvalidVersion as exc:
        raise ValueError(f"not a version: {value!r}") from exc


class DriverVersion(Version):
    """An NVIDIA driver version: compares as a version, prints as NVIDIA writes it (530.30.02,
    which packaging would normalise to 530.30.2, a version that does not exist)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._text = text.strip()

    def __str__(self) -> str:
        return self._text


def _driver(value: Any) -> DriverVersion:
    try:
        return value if isinstance(value, DriverVersion) else DriverVersion(str(value))
    except InvalidVersion as exc:
        raise ValueError(f"not a driver version: {value!r}") from exc


def _specifier(value: Any) -> SpecifierSet:
    try:
        return value if isinstance(value, SpecifierSet) else SpecifierSet(str(value))
    except InvalidSpecifier as exc:
        raise ValueError(f"not a version specifier: {value!r}") from exc


class DriverFloor(Entry):
    cuda_major: int
    min_driver: DriverVersion

    _v = field_validator("min_driver", mode="before")(_driver)


class ToolkitDriver(Entry):
    cuda: Version
    min_driver: DriverVersion

    _v = field_validator("cuda", mode="before")(_version)
    _d = field_validator("min_driver", mode="before")(_driver)


class CudaDriver(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    floors: List[DriverFloor]
    toolkits: List[ToolkitDriver]


class TorchRelease(Entry):
    minor: str
    latest_patch: str
    cuda_variants: List[str]
    default_variant: str
    python: List[str]
    cxx11_abi: bool
    cxx11_abi_variants: Dict[str, bool] = {}
    arch_lists: Dict[str, str] = {}

    @model_validator(mode="after")
    def _default_is_a_variant(self) -> TorchRelease:
        if self.default_variant not in self.cuda_variants:
            raise ValueError(f"torch {self.minor}: default {self.default_variant} is not a variant")
        return self


class FamilySupport(Entry):
    family: Family
    name: str
    min_cc: Version
    max_cc: Optional[Version] = None
    tuned: List[str] = []

    _v = field_validator("min_cc", "max_cc", mode="before")(
        lambda v: None if v is None else _version(v))


class ArchGate(Entry):
    versions: SpecifierSet
    allowed_cc_majors: List[int]

    _s = field_validator("versions", mode="before")(_specifier)


class FamilyRequirement(Entry):
    family: Family
    min_torch: Optional[Version] = None
    min_python: Optional[Version] = None
    # An install extra the family wants on a torch of this CUDA major, and the distribution
    # whose presence shows it was taken.
    cuda_major: Optional[int] = None
    extra: Optional[str] = None
    extra_marker: Optional[str] = None

    _v = field_validator("min_torch", "min_python", mode="before")(
        lambda v: None if v is None else _version(v))


class SdpaRange(Entry):
    backend: str
    torch: SpecifierSet
    min_cc: Version
    max_cc: Version

    _s = field_validator("torch", mode="before")(_specifier)
    _v = field_validator("min_cc", "max_cc", mode="before")(_version)


class FlashAttnRelease(Entry):
    version: Version
    tag: str
    wheel_torch: List[str]
    wheel_torch_nightlies: List[str] = []
    wheel_cuda: List[str]
    wheel_python: List[str]
    builds_on: str  # the runner image, which sets the glibc the wheels need; "unknown" if unsure
    builds_on_note: Optional[str] = None
    readme_min_torch: Version
    requires_python: SpecifierSet

    _v = field_validator("version", "readme_min_torch", mode="before")(_version)
    _s = field_validator("requires_python", mode="before")(_specifier)


class Matrix(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int
    cuda_driver: CudaDriver
    torch_releases: List[TorchRelease]
    families: List[FamilySupport]
    fa2_arch_gate: List[ArchGate]
    family_requirements: List[FamilyRequirement]
    sdpa_backends: List[SdpaRange]
    flash_attn_releases: List[FlashAttnRelease]

    @model_validator(mode="after")
    def _invariants(self) -> Matrix:
        _unique("torch_releases", [r.minor for r in self.torch_releases])
        _unique("families", [f.family.value for f in self.families])
        _unique("flash_attn_releases", [str(r.version) for r in self.flash_attn_releases])
        missing = {f.value for f in Family} - {f.family.value for f in self.families}
        if missing:
            raise ValueError(f"families: no entry for {sorted(missing)}")
        return self

    # -- queries ------------------------------------------------------------------------------

    def torch_release(self, version: Version) -> Optional[TorchRelease]:
        minor = f"{version.major}.{version.minor}"
        return next((r for r in self.torch_releases if r.minor == minor), None)

    def family_support(self, family: Family) -> FamilySupport:
        return next(f for f in self.families if f.family == family)

    def requirements(self, family: Family) -> List[FamilyRequirement]:
        return [r for r in self.family_requirements if r.family == family]

    def fa_release(self, version: Version) -> Optional[FlashAttnRelease]:
        return next((r for r in self.flash_attn_releases if r.version == version), None)

    def sdpa_range(self, backend: str, torch: Version) -> Optional[SdpaRange]:
        release = Version(f"{torch.major}.{torch.minor}")
        return next((r for r in self.sdpa_backends
                     if r.backend == backend and release in r.torch), None)

    def driver_floor(self, cuda_major: int) -> Optional[DriverFloor]:
        return next((f for f in self.cuda_driver.floors if f.cuda_major == cuda_major), None)

    def toolkit_driver(self, cuda: Version) -> Optional[ToolkitDriver]:
        key = Version(f"{cuda.major}.{cuda.minor}")
        return next((t for t in self.cuda_driver.toolkits if t.cuda == key), None)


def _unique(section: str, keys: List[str]) -> None:
    seen = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"{section}: duplicate entry {key!r}")
        seen.add(key)
