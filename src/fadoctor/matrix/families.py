"""The flash-attention families beyond FA2's wheel matrix: which GPUs each runs on, what each
requires, FlashAttention-4's releases, and FA2's AMD ROCm backends."""


from typing import List, Literal, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic import field_validator

from fadoctor.facts.model import Family
from fadoctor.matrix.base import Entry, _optional_specifier, _optional_version, _specifier, _version


class ReleaseFloor(Entry):
    """A lower compute-capability floor some of a family's releases have (flash-attn 1.x ran on
    Turing; 2.x starts at Ampere)."""
    versions: SpecifierSet
    min_cc: Version

    _s = field_validator("versions", mode="before")(_specifier)
    _v = field_validator("min_cc", mode="before")(_optional_version)


class FamilySupport(Entry):
    family: Family
    name: str
    min_cc: Version
    max_cc: Optional[Version] = None
    tuned: List[str] = []
    floors: List[ReleaseFloor] = []

    _v = field_validator("min_cc", "max_cc", mode="before")(_optional_version)

    def floor(self, version: Optional[Version]) -> Version:
        """The lowest compute capability the stated release runs on (the family's, unless one of
        its `floors` holds that release)."""
        return next((f.min_cc for f in self.floors if version is not None
                     and f.versions.contains(version, prereleases=True)), self.min_cc)


class ArchGate(Entry):
    versions: SpecifierSet
    allowed_cc_majors: List[int]

    _s = field_validator("versions", mode="before")(_specifier)


class FamilyRequirement(Entry):
    family: Family
    versions: Optional[SpecifierSet] = None  # the family's releases it holds for (None: all)
    min_torch: Optional[Version] = None
    min_python: Optional[Version] = None
    min_nvcc: Optional[Version] = None  # a source build refuses an older nvcc
    recommended_nvcc: Optional[Version] = None  # the nvcc its README recommends
    # An install extra the family wants on a torch of this CUDA major, and the distribution
    # whose presence shows it was taken.
    cuda_major: Optional[int] = None
    extra: Optional[str] = None
    extra_marker: Optional[str] = None

    _v = field_validator("min_torch", "min_python", "min_nvcc", "recommended_nvcc",
                         mode="before")(_optional_version)
    _r = field_validator("versions", mode="before")(_optional_specifier)

    def holds_for(self, version: Optional[Version]) -> bool:
        """Whether it applies to this release (an unknown release: only unranged ones)."""
        if self.versions is None:
            return True
        return version is not None and self.versions.contains(version, prereleases=True)


class CustomOps(Entry):
    """A family release that registers its kernels as torch.library custom ops, which
    torch.compile traces without a graph break; `min_torch` is the torch the registration needs
    (older torch gets plain functions instead)."""

    family: Family
    since: Version
    min_torch: Version
    namespace: str  # the ops are namespace::name (torch.ops.<namespace>)
    ops: List[str] = []

    _v = field_validator("since", "min_torch", mode="before")(_version)


class Fa4Release(Entry):
    """One FlashAttention-4 beta: pure Python (CuTe DSL kernels are compiled at run time)."""

    version: Version  # as the package index has it: 4.0.0b27
    tag: Optional[str] = None  # fa4-v4.0.0.beta27; None: read from the registry's wheel
    distribution: str  # flash-attn4 for beta0-2, flash-attn-4 from beta3
    # On the registry's version list of `distribution`: False (a tag never published: never
    # pin it), None (the list was not read).
    published: Optional[bool] = None
    requires_python: SpecifierSet
    dependencies: List[str]
    extra_cu13: List[str] = []  # what the [cu13] extra adds
    # The compute capability majors interface.py's forward and backward accept ([] unknown):
    # a GPU outside backward_cc_majors can run inference but not train.
    forward_cc_majors: List[int] = []
    backward_cc_majors: List[int] = []

    _v = field_validator("version", mode="before")(_version)
    _s = field_validator("requires_python", mode="before")(_specifier)


    def accepts(self, cc_major: int, direction: str) -> Optional[bool]:
        """Whether this beta's forward or backward accepts the GPU (None: not recorded)."""
        majors = self.forward_cc_majors if direction == "forward" else self.backward_cc_majors
        return (cc_major in majors) if majors else None


class RocmBackend(Entry):
    """An AMD ROCm backend of flash-attn 2.x (always built from source: no ROCm wheels)."""

    backend: Literal["ck", "triton"]
    versions: SpecifierSet  # flash-attn releases these facts hold for
    min_rocm: Optional[Version] = None
    gpus: List[str]  # as the README names them (MI200, MI300, RDNA)
    gpu_archs: List[str] = []  # the GPU_ARCHS values setup.py accepts (CK)
    dtypes: List[str]
    max_head_dim_fwd: Optional[int] = None
    max_head_dim_bwd: Optional[int] = None
    enable_env: Optional[str] = None  # what selects the backend at build and run time
    triton: Optional[str] = None  # the Triton the README recommends

    _s = field_validator("versions", mode="before")(_specifier)
    _v = field_validator("min_rocm", mode="before")(_optional_version)

    def affects(self, version: Version) -> bool:
        return self.versions.contains(version, prereleases=True)
