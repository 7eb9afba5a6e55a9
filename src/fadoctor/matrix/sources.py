"""Where flash-attention comes from, tiered by provenance: the sources a plan may draw on, the
Hugging Face kernels Hub's attention kernels, community wheel projects' exact files, and the
measured speed of the zero-install SDPA backends (data only; nothing is fetched at run time)."""


import re
from typing import List, Literal, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic import field_validator

from fadoctor.facts.model import Family
from fadoctor.matrix.base import Entry, _optional_specifier, _optional_version, _version

# 1 official release wheels, 2 PyTorch's indexes, 3 the kernels Hub, 4 community wheel projects,
# 5 a source build, 6 PyTorch SDPA/cuDNN (nothing to install beyond torch).
Tier = Literal[1, 2, 3, 4, 5, 6]
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso(value: str) -> str:
    if not _DATE.fullmatch(value):
        raise ValueError(f"read {value!r} is not YYYY-MM-DD")
    return value


class WheelSource(Entry):
    """One place flash-attention can be had from, with what fadoctor knows it carries."""

    id: str  # the key picks and the other sections name it by
    tier: Tier
    label: str  # how a plan names it, in text and JSON
    third_party: bool = False  # built by neither the flash-attention nor the PyTorch project
    downloads_at_load: bool = False  # code fetched when the model loads, not at install time
    carries: Literal["listed", "unknown", "none"]  # listed: entries below name its files
    read: str  # YYYY-MM-DD: the day the source was read

    _r = field_validator("read")(_iso)


class HubKernel(Entry):
    """A kernels-community repository transformers can load as attn_implementation="<repo>":
    the `kernels` release to install, and what its build config asks of torch, CUDA and GPU."""

    repo: str  # kernels-community/flash-attn2
    family: Family
    kernels_version: Version  # an exact release of the `kernels` package
    min_python: Optional[Version] = None
    min_torch: Optional[Version] = None  # the stable-ABI floor of its CUDA build
    cuda: Optional[SpecifierSet] = None  # the CUDA its build config allows
    ccs: List[str] = []  # compute capabilities it compiles for
    variants: List[str] = []  # build variants on the Hub; [] = not read (unknown)

    _v = field_validator("kernels_version", mode="before")(_version)
    _o = field_validator("min_python", "min_torch", mode="before")(_optional_version)
    _c = field_validator("cuda", mode="before")(_optional_specifier)


class CommunityWheels(Entry):
    """The exact wheel files a community project lists for one flash-attention release and
    platform: each row is [python tag, torch minor, CUDA, release tag, file name]."""

    project: str  # a wheel_sources id
    repo: str  # owner/name on GitHub: files are under its releases/download/<tag>/
    family: Family
    version: Version
    platform: str
    wheels: List[List[str]]

    _v = field_validator("version", mode="before")(_version)

    @field_validator("wheels")
    @classmethod
    def _rows(cls, rows: List[List[str]]) -> List[List[str]]:
        for row in rows:
            if len(row) != 5 or not row[4].endswith(".whl"):
                raise ValueError(f"wheel row {row!r} is not [python, torch, cuda, tag, file.whl]")
        return rows

    def url(self, row: List[str]) -> str:
        return f"https://github.com/{self.repo}/releases/download/{row[3]}/{row[4]}"


class SpeedRatio(Entry):
    """A zero-install SDPA backend's speed as a share of a flash-attention family's, on GPUs of
    these compute capabilities: measured by fadoctor bench, or the same kernel by construction."""

    backend: Literal["flash", "efficient", "cudnn"]
    of: Family
    ratio: float
    ccs: List[str] = []  # [] = any GPU the backend runs on
    basis: Literal["measured", "same kernel"]
