"""What every matrix entry shares: a cited source, and strings turned into versions at the boundary."""


from typing import Any, List, Literal, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from fadoctor.facts.validation import Problems as Problems  # the matrix modules raise it from here

# How a fact was established (the reference notes' labels): read in the project's code, said by a
# maintainer, reported by users only, inferred by us from code, read from a published wheel, or
# stated by the hardware/toolkit vendor.
Evidence = Literal["code", "maintainer", "user", "derived", "wheel", "vendor"]


def _cited(value: str) -> str:
    if not value.strip():
        raise ValueError("every matrix entry needs a non-empty source")
    return value


class Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True)

    source: str

    _cited = field_validator("source")(_cited)


def _version(value: Any) -> Version:
    try:
        return value if isinstance(value, Version) else Version(str(value))
    except InvalidVersion as exc:
        raise ValueError(f"not a version: {value!r}") from exc


def _optional_version(value: Any) -> Optional[Version]:
    return None if value is None else _version(value)


def _version_text(value: Any) -> str:
    """A version kept as the string the matrix wrote (callers compare it with Version(...))."""
    _version(value)
    return str(value)


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


def _optional_driver(value: Any) -> Optional[DriverVersion]:
    return None if value is None else _driver(value)


def _specifier(value: Any) -> SpecifierSet:
    try:
        return value if isinstance(value, SpecifierSet) else SpecifierSet(str(value))
    except InvalidSpecifier as exc:
        raise ValueError(f"not a version specifier: {value!r}") from exc


def _optional_specifier(value: Any) -> Optional[SpecifierSet]:
    return None if value is None else _specifier(value)


def minor_of(version: Version) -> str:
    """torch 2.6.0+cu124 -> "2.6", the key torch minors are filed under."""
    return f"{version.major}.{version.minor}"


def within(spec: SpecifierSet, version: Version) -> bool:
    """`version` (its release part: local tags and dev suffixes are ignored) satisfies `spec`."""
    return spec.contains(Version(version.base_version), prereleases=True)


def unsorted(keys: List[Version]) -> Optional[int]:
    """The index of the first key out of ascending order, or None."""
    return next((i for i in range(1, len(keys)) if keys[i] < keys[i - 1]), None)


def raise_problems(problems: List[str]) -> None:
    if problems:
        raise Problems(problems)


def trusted(info: ValidationInfo) -> bool:
    """Whether the data comes from the compiled twin of a matrix that `fadoctor matrix lint`
    already passed (the cross-entry checks then ran when it was written, not at every load)."""
    return bool(info.context and info.context.get("trusted"))
