"""Real reports (tests/fixtures/cases, public issue text) and reports written for these tests
(tests/fixtures/triage, other wordings, versions and GPUs): the top finding's category is the
confirmed root cause, and its own remedies carry the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Severity
from fadoctor.triage.diagnose import triage
from fadoctor.triage.model import Diagnosed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = sorted(p for p in (FIXTURES / "cases").iterdir() if p.is_dir())
OWN = sorted(p for p in (FIXTURES / "triage").iterdir() if p.is_dir())


def expectation(case: Path) -> Dict[str, Any]:
    loaded: Dict[str, Any] = yaml.safe_load((case / "expect.yaml").read_text(encoding="utf-8"))
    return loaded


def remedy_text(finding: Diagnosed) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)} {r.code or ''}"
                    for r in finding.remedies).lower()


def check_case(case: Path, matrix: Matrix) -> List[str]:
    """What is wrong with the diagnosis of one case (empty: right)."""
    expect = expectation(case)
    result = triage((case / "report.txt").read_bytes(), matrix)
    if not result.diagnosis:
        return ["no diagnosis"]
    top = result.diagnosis[0]
    problems = []
    accepted = [expect["category"], *expect.get("also_acceptable", [])]
    if top.category.value not in accepted:
        problems.append(f"top category {top.category.value}, expected one of {accepted}")
    if not any(token.lower() in remedy_text(top) for token in expect["remedy_any_of"]):
        problems.append(f"no remedy of the top finding has any of {expect['remedy_any_of']}")
    if not top.evidence.get("quoted"):
        problems.append("the top finding quotes no line of the report")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_shared_case(case: Path, matrix: Matrix) -> None:
    assert check_case(case, matrix) == []


@pytest.mark.parametrize("case", OWN, ids=[c.name for c in OWN])
def test_own_report(case: Path, matrix: Matrix) -> None:
    assert check_case(case, matrix) == []


def test_cases_were_copied_whole() -> None:
    """Each case folder holds the report and its expectation, as the shared set has them."""
    for case in CASES + OWN:
        assert (case / "report.txt").is_file() and (case / "expect.yaml").is_file(), case
        assert expectation(case)["remedy_any_of"], case


@pytest.mark.parametrize("case", CASES + OWN, ids=[c.name for c in CASES + OWN])
def test_every_error_quotes_the_report(case: Path, matrix: Matrix) -> None:
    text = (case / "report.txt").read_text(encoding="utf-8")
    for finding in triage(text, matrix).diagnosis:
        if finding.severity == Severity.ERROR:
            quoted = finding.evidence["quoted"]
            assert quoted, finding
            for quote in quoted:  # "line N: text" — the text really is that line
                number, _, line = quote.partition(": ")
                assert line.rstrip("…") in text.splitlines()[int(number.split()[1]) - 1], quote


def test_ranks_are_explained_in_order(matrix: Matrix) -> None:
    text = (FIXTURES / "cases" / "vllm3912-not-found-masks-undefined-symbol" / "report.txt")
    result = triage(text.read_text(encoding="utf-8"), matrix)
    assert [d.rank for d in result.diagnosis] == list(range(1, len(result.diagnosis) + 1))
    assert result.diagnosis[0].why_ranked.startswith("most likely")
    # The wrapper's "package is not found" folds into the undefined symbol it hides.
    assert "not found" in " ".join(result.diagnosis[0].evidence["quoted"])


HEALTHY = """\
PyTorch version: 2.4.0+cu121
CUDA used to build PyTorch: 12.1
OS: Ubuntu 22.04.4 LTS (x86_64)
Libc version: glibc-2.35
Python version: 3.10.14 (main, May  6 2024, 19:42:50) [GCC 11.2.0] (64-bit runtime)
Is CUDA available: True
GPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB
Nvidia driver version: 535.161.08
Package            Version
------------------ -----------
flash-attn         2.6.3
torch              2.4.0
transformers       4.44.2
"""


@pytest.mark.parametrize("text, absent", [
    (HEALTHY, None),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
     "total capacity of 79.15 GiB of which 3.06 MiB is free.", None),
    ("Loading checkpoint shards: [1/3]\nMemoryError\nnvcc -V: Cuda compilation tools, release "
     "12.1, V12.1.105", "build_resources"),
    ("The README says flash-attn requires Ampere GPUs or newer (A100, RTX 3090, H100) and "
     "supports fp16 and bf16.", None),
    ("pip install flash-attn --no-build-isolation\nSuccessfully installed flash-attn-2.7.4.post1",
     None),
], ids=["healthy-collect-env", "training-oom", "oom-outside-a-build", "readme-prose", "success"])
def test_no_cause_where_there_is_none(text: str, absent: Optional[str], matrix: Matrix) -> None:
    """Text that shows no failure gets no error finding (and no build cause for a training OOM)."""
    result = triage(text, matrix)
    if absent is None:
        assert [d for d in result.diagnosis if d.severity == Severity.ERROR] == []
    else:
        assert absent not in [d.category.value for d in result.diagnosis]


def test_a_package_the_report_does_not_name_gets_no_guessed_command(matrix: Matrix) -> None:
    """'X requires PyTorch A (you have B)' with no line saying which package X is: the advice
    says so in words and shows no command (never `pip install the package`); a named package's
    command holds only its validated name."""
    anonymous = triage("ImportError: foo requires PyTorch 2.1.0 (you have 2.3.0)\n", matrix)
    [found] = [d for d in anonymous.diagnosis if d.category == Category.TORCH_VERSION_MISMATCH]
    assert found.message.startswith("the package's extensions were built for torch 2.1.0")
    assert found.remedies and all(not r.commands for r in found.remedies)
    named = triage("xFormers was built for:\n    PyTorch 2.1.0 with CUDA 1201 (you have 2.3.0)\n",
                   matrix)
    [found] = [d for d in named.diagnosis if d.category == Category.TORCH_VERSION_MISMATCH]
    # The release whose index metadata requires the installed torch (data/ext_torch.yaml)...
    assert found.remedies[0].commands == ["python -m pip install xformers==0.0.26.post1"]
    # ...then the resolver's pick with torch pinned: a bare --force-reinstall moved it.
    assert found.remedies[1].commands == [
        "python -m pip install --upgrade --no-cache-dir xformers torch==2.3.0"]


def test_an_import_error_is_blamed_on_the_family_whose_module_it_names(matrix: Matrix) -> None:
    """flash-attn 2.x and flash-attn-4 share the `flash_attn` package: an error in flash-attn
    2.x's extension is not flash-attn-4's, and one in flash_attn/cute is not flash-attn 2.x's."""
    listing = ("Package        Version\n-------------- -------\nflash-attn     2.6.3\n"
               "flash-attn-4   4.0.0b1\ntorch          2.4.0\n")
    fa2_error = ("ImportError: /venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-"
                 "x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    fa4_error = ("Traceback (most recent call last):\n"
                 '  File "/venv/lib/python3.11/site-packages/flash_attn/cute/interface.py", line 9\n'
                 "    import cutlass\nModuleNotFoundError: No module named 'cutlass'\n")
    for error, blamed in ((fa2_error, "flash-attn 2.6.3"), (fa4_error, "flash-attn-4 4.0.0b1")):
        result = triage(listing + error, matrix)
        [check] = [c for c in result.checks if c.id == "FAD111"]
        failing = [f.message for f in check.findings if f.severity == Severity.ERROR]
        assert failing and all(m.startswith(blamed) for m in failing), failing
