"""Facts files: written as ASCII JSON that keeps undecodable bytes (surrogate escapes, the way
Python holds file names) without loss, read back with every value that must parse checked."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple

from fadoctor.errors import InputError, invalid
from fadoctor.facts.model import Facts
from fadoctor.safety.inert import one_line

if TYPE_CHECKING:
    from pydantic import BaseModel

# What fadoctor's own probes always write as numbers: a file where they do not parse was not
# written by fadoctor (or was edited), and a diagnosis from it would be a guess.
COMPUTE_CAPABILITY = re.compile(r"\d{1,2}\.\d{1,2}", re.ASCII)
CUDA_VERSION = re.compile(r"\d{1,3}\.\d{1,3}(\.\d{1,4})?", re.ASCII)
DRIVER_VERSION = re.compile(r"\d{1,4}(\.\d{1,4}){0,3}", re.ASCII)


def dumps(facts: BaseModel) -> str:
    """The facts (of one environment, or a job's) as JSON text (ASCII: any undecodable byte
    travels as a `\\udcXX` escape)."""
    return json.dumps(facts.model_dump(mode="python"), indent=2, default=str) + "\n"


def identity(facts: Facts) -> str:
    """What two environments' facts share when they are the same but for the probes' timings
    (undecodable bytes included)."""
    return json.dumps(facts.model_dump(mode="python", exclude={"timings"}), default=str)


def parse(text: str, where: str) -> Any:
    """JSON `text`, or an InputError naming `where` (NaN and Infinity are not JSON numbers)."""
    try:
        return json.loads(text, parse_constant=_refuse)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{where} is not valid JSON: {one_line(str(exc))}") from None


def loads(text: str, where: str) -> Facts:
    """Facts from JSON `text`: a pydantic ValidationError when the schema does not hold, an
    InputError naming `where` for text that is not JSON or values that do not parse."""
    facts = Facts.model_validate(parse(text, where))
    problems = unreadable(facts)
    if problems:
        raise invalid(where, problems)
    return facts


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def unreadable(facts: Facts) -> List[str]:
    """`where: why` for each value that must parse and does not."""
    return [f"{where}: {one_line(repr(value))} is not {what}"
            for where, value, pattern, what in _numeric(facts)
            if value is not None and not _parses(value, pattern)]


def _parses(value: str, pattern: re.Pattern[str]) -> bool:
    return pattern.fullmatch(value) is not None


Numeric = Tuple[str, Optional[str], "re.Pattern[str]", str]


def _numeric(facts: Facts) -> Iterator[Numeric]:
    cc, cuda = (COMPUTE_CAPABILITY, "a compute capability"), (CUDA_VERSION, "a CUDA version")
    driver, torch = facts.driver.data, facts.torch.data
    if driver is not None:
        yield "driver.data.version", driver.version, DRIVER_VERSION, "a driver version"
        yield ("driver.data.cuda_version", driver.cuda_version, *cuda)
        for i, gpu in enumerate(driver.gpus or []):
            yield (f"driver.data.gpus.{i}.compute_capability", gpu.compute_capability, *cc)
    if torch is not None:
        yield ("torch.data.cuda", torch.cuda, *cuda)
        for i, device in enumerate(torch.devices or []):
            yield (f"torch.data.devices.{i}.capability", device.capability, *cc)
    files = facts.files.data if facts.files is not None else None
    if files is not None and files.torch is not None:
        yield ("files.data.torch.cuda", files.torch.cuda, *cuda)
