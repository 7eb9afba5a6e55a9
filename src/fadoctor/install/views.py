"""Views over facts that several layers read: torch as imported, else as its files say; the
driver's version."""

from __future__ import annotations

from typing import Optional

from packaging.version import InvalidVersion

from fadoctor.facts.model import Facts, Torch
from fadoctor.matrix.base import DriverVersion


def torch_view(facts: Facts) -> Optional[Torch]:
    """torch as imported, else as its files say (check --static): version, CUDA, C++ ABI."""
    if facts.torch.data is not None:
        return facts.torch.data
    files = facts.files.data if facts.files is not None else None
    if files is None or files.torch is None or files.torch.version is None:
        return None
    t = files.torch
    return Torch(version=t.version, cuda=t.cuda, hip=t.hip, cxx11_abi=t.cxx11_abi, file=t.dir)


def driver_version(facts: Facts) -> Optional[DriverVersion]:
    """The loaded driver's version, when there is one and it reads as a version."""
    data = facts.driver.data
    if data is None or not data.present or not data.version:
        return None
    try:
        return DriverVersion(data.version)
    except InvalidVersion:
        return None
