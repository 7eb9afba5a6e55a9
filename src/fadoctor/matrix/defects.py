"""Known defects of released flash-attention builds: which versions, on which machines, and what
to do instead. A condition left out means "any"; a fact the caller does not know is unknown."""


from typing import List, Literal, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic import field_validator, model_validator

from fadoctor.facts.model import Family
from fadoctor.matrix.base import (
    DriverVersion,
    Entry,
    Evidence,
    _optional_driver,
    _optional_specifier,
    _optional_version,
    _specifier,
    within,
)
from fadoctor.report import Category

# When the defect bites: while installing (setup.py picks or fetches the wrong thing), at import
# (the loader refuses the binary), or when a kernel runs.
Stage = Literal["install", "import", "run"]


class Defect(Entry):
    id: str
    versions: SpecifierSet  # the family's versions that have it
    family: Family = Family.FA2
    stage: Stage = "run"
    wheels_only: bool = False  # True: the prebuilt wheels have it, a source build does not
    build_only: bool = False  # True: a source build has it (fails), the prebuilt wheels do not
    torch: Optional[SpecifierSet] = None  # torch releases (local tag ignored)
    torch_cuda: Optional[SpecifierSet] = None  # torch.version.cuda
    cxx11_abi: Optional[bool] = None  # torch._C._GLIBCXX_USE_CXX11_ABI
    min_glibc: Optional[Version] = None  # bites below this glibc
    min_driver: Optional[DriverVersion] = None  # bites below this NVIDIA driver
    gpu_cc: Optional[SpecifierSet] = None  # compute capability, as a version (9.0)
    # A condition of the workload no machine fact tells (tensor sizes): the defect may bite,
    # so it is reported, but it never rules a release out.
    only_when: Optional[str] = None
    category: Category
    summary: str
    remedy: str
    evidence: List[Evidence] = []

    _s = field_validator("versions", mode="before")(_specifier)
    _o = field_validator("torch", "torch_cuda", "gpu_cc", mode="before")(_optional_specifier)
    _g = field_validator("min_glibc", mode="before")(_optional_version)
    _d = field_validator("min_driver", mode="before")(_optional_driver)

    @model_validator(mode="after")
    def _said(self) -> "Defect":
        if not self.id.strip() or not self.summary.strip() or not self.remedy.strip():
            raise ValueError(f"defect {self.id!r}: id, summary and remedy must not be empty")
        if self.wheels_only and self.build_only:
            raise ValueError(f"defect {self.id!r}: wheels_only and build_only exclude each other")
        return self

    def breaks_build(self, torch: Optional[Version], cc: Optional[Version]) -> bool:
        """Whether a source build of an affected release certainly fails for this torch and GPU
        (every condition known and met)."""
        return self.build_only and self.matches(torch, cc) is True

    def affects(self, version: Version) -> bool:
        """Whether this version of the family has the defect (post releases compare as such)."""
        return self.versions.contains(version, prereleases=True)

    def matches(self, torch: Optional[Version] = None, cc: Optional[Version] = None,
                driver: Optional[Version] = None, *, cxx11_abi: Optional[bool] = None,
                glibc: Optional[Version] = None,
                torch_cuda: Optional[Version] = None) -> Optional[bool]:
        """Whether a machine with these facts meets the defect's conditions: True, False, or
        None when a fact a condition needs is unknown (and no known fact rules it out)."""
        results: List[Optional[bool]] = []
        for spec, value in ((self.torch, torch), (self.torch_cuda, torch_cuda),
                            (self.gpu_cc, cc)):
            if spec is not None:
                results.append(None if value is None else within(spec, value))
        if self.cxx11_abi is not None:
            results.append(None if cxx11_abi is None else cxx11_abi == self.cxx11_abi)
        for floor, have in ((self.min_glibc, glibc), (self.min_driver, driver)):
            if floor is not None:
                results.append(None if have is None else have < floor)
        if self.only_when is not None:
            results.append(None)
        if False in results:
            return False
        return None if None in results else True

    def applies(self, torch: Optional[Version] = None, cc: Optional[Version] = None,
                driver: Optional[Version] = None, *, cxx11_abi: Optional[bool] = None,
                glibc: Optional[Version] = None, torch_cuda: Optional[Version] = None) -> bool:
        """Whether the release's binaries, once installed, certainly fail on this machine: an
        import- or run-time defect whose every condition is known and met. (The caller checks
        `affects` against the release; install-time defects concern `pip install flash-attn`,
        not a wheel fetched by URL.)"""
        return self.stage != "install" and self.matches(
            torch, cc, driver, cxx11_abi=cxx11_abi, glibc=glibc, torch_cuda=torch_cuda) is True
