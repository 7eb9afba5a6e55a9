"""The triage result: the diagnosis, most likely cause first, and what the text leaves unknown."""

from __future__ import annotations

from typing import List

from pydantic import BaseModel, ConfigDict

from fadoctor.report import CheckResult, Environment, Finding

TRIAGE_SCHEMA_VERSION = 1


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Diagnosed(Finding):
    """A finding as `check` reports it, with why it sits where it does in the order. Its
    evidence quotes the lines of the report it used (`evidence["quoted"]`)."""

    rank: int
    why_ranked: str


class Missing(Frozen):
    """Something the text does not say that would confirm or sharpen the diagnosis."""

    what: str
    command: str


class Triage(Frozen):
    schema_version: int = TRIAGE_SCHEMA_VERSION
    fadoctor_version: str
    read: List[str]  # the kinds of input recognised (collect_env, traceback, pip list, ...)
    environment: Environment  # as the text states it
    assumed: List[str]  # values derived from the stated ones through the matrix
    diagnosis: List[Diagnosed]
    missing: List[Missing]
    checks: List[CheckResult]  # the checks of `fadoctor check`, run on the partial facts
