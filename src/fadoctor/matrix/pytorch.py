"""PyTorch facts: its binary builds per minor release, its SDPA backends' hardware ranges, and the
release in which each attention / compile API appeared."""


from typing import Dict, List, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic import field_validator, model_validator

from fadoctor.matrix.base import Entry, _optional_version, _specifier, _version, raise_problems


class TorchRelease(Entry):
    minor: str
    latest_patch: str
    cuda_variants: List[str]
    default_variant: str
    python: List[str]
    cxx11_abi: bool
    cxx11_abi_variants: Dict[str, bool] = {}
    arch_lists: Dict[str, str] = {}
    arch_lists_unverified: List[str] = []  # variants whose arch list is the best evidence only
    platform_tag: Optional[str] = None  # the wheel's platform tag (manylinux_2_28 sets a glibc)
    platform: str  # the platform whose wheels these facts are of (linux_x86_64)

    @model_validator(mode="after")
    def _default_is_a_variant(self) -> "TorchRelease":
        if self.default_variant not in self.cuda_variants:
            raise ValueError(f"torch {self.minor}: default {self.default_variant} is not a variant")
        problems = []
        for field in ("cxx11_abi_variants", "arch_lists", "arch_lists_unverified"):
            stray = [v for v in getattr(self, field) if v not in self.cuda_variants]
            if stray:
                problems.append(f"torch {self.minor}: {field} names {stray}, not variants")
        if not self.latest_patch.startswith(self.minor + "."):
            problems.append(f"torch {self.minor}: latest_patch {self.latest_patch} is another minor")
        raise_problems(problems)
        return self

    def variant_abi(self, variant: str) -> bool:
        """torch._C._GLIBCXX_USE_CXX11_ABI of this CUDA variant's wheels."""
        return self.cxx11_abi_variants.get(variant, self.cxx11_abi)


class SdpaRange(Entry):
    backend: str
    torch: SpecifierSet
    min_cc: Version
    max_cc: Version
    max_head_dim: Optional[int] = None
    vendored_fa2: Optional[Version] = None  # torch.nn.attention._get_flash_version()

    _s = field_validator("torch", mode="before")(_specifier)
    _v = field_validator("min_cc", "max_cc", mode="before")(_version)
    _f = field_validator("vendored_fa2", mode="before")(_optional_version)


class TorchApi(Entry):
    """A Python API the checks and remedies use, and the first torch release that ships it."""

    api: str
    since: Version  # torch minor
    deprecated: Optional[Version] = None  # first minor that warns
    note: Optional[str] = None

    _v = field_validator("since", mode="before")(_version)
    _d = field_validator("deprecated", mode="before")(_optional_version)
