"""A job's report in every format: golden files of a 16-rank H200 job with ranks that differ."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Dict, Tuple

import pytest
from tests.helpers.jobs import Record, job, on_h200

from fadoctor.distributed.evaluate import evaluate_job
from fadoctor.distributed.models import MissingRank
from fadoctor.distributed.render import JOB_RENDERERS, render_job
from fadoctor.distributed.report import JobReport
from fadoctor.facts.model import Facts
from fadoctor.formats import Format
from fadoctor.matrix import load_matrix
from fadoctor.render.options import RenderOptions

GOLDEN = Path(__file__).resolve().parents[1] / "golden-distributed" / "h200-16-ranks"
VARIANTS: Dict[str, Tuple[Format, RenderOptions]] = {
    "text.txt": (Format.TEXT, RenderOptions(width=100, color=False)),
    "text-verbose.txt": (Format.TEXT, RenderOptions(width=100, color=False, verbose=True)),
    "junit.xml": (Format.JUNIT, RenderOptions()),
    "report.md": (Format.MARKDOWN, RenderOptions()),
    "github.txt": (Format.GITHUB, RenderOptions()),
}


def _record(rank: int, record: Record) -> None:
    if rank >= 8:  # the second node exports another NCCL setting
        record["environment"]["NCCL_IB_HCA"] = "mlx5_1"
    record["extensions"] = [{"path": "/opt/venv/lib/site/flash_attn_2_cuda.so",
                             "sha256": ("9f" if rank == 11 else "3c") * 32, "size": 1}]


def _facts(rank: int, facts: Facts) -> Facts:
    if rank != 13 or facts.torch.data is None:
        return facts
    data = facts.torch.data.model_copy(update={"version": "2.10.0+cu130"})
    return facts.model_copy(update={"torch": facts.torch.model_copy(update={"data": data})})


@pytest.fixture(scope="module")
def report() -> JobReport:
    gathered = on_h200(job(16, 8, _record), _facts)
    lost = gathered.ranks[15].place
    gathered = gathered.model_copy(update={
        "ranks": gathered.ranks[:15],
        "missing": [MissingRank(rank=15, state="lost", place=lost, silent_s=20.4, waited_s=31.0)]})
    return evaluate_job(gathered, load_matrix())


def test_every_format_has_a_job_renderer_and_a_golden_file() -> None:
    assert set(JOB_RENDERERS) == set(Format)
    assert {fmt for fmt, _ in VARIANTS.values()} == set(Format) - {Format.JSON}  # JSON: below
    assert set(GOLDEN.iterdir()) <= {GOLDEN / v for v in VARIANTS}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_golden(variant: str, report: JobReport,
                compare_or_update: Callable[[Path, str], None]) -> None:
    fmt, options = VARIANTS[variant]
    compare_or_update(GOLDEN / variant, render_job(report, fmt, options))


def test_json_holds_each_rank_and_the_merged_report(report: JobReport) -> None:
    data = json.loads(render_job(report, Format.JSON))
    assert JobReport.model_validate(data) == report
    assert [r["rank"] for r in data["ranks"]] == list(range(15))
    assert data["merged"]["summary"]["failed"] >= 2
    assert data["missing"][0]["rank"] == 15


def test_junit_names_each_check_once(report: JobReport) -> None:
    suite = ET.fromstring(render_job(report, Format.JUNIT))
    names = [case.get("name") for case in suite.iter("testcase")]
    assert names[:7] == [f"FAD20{i}" for i in range(1, 8)] and len(set(names)) == len(names)


def test_text_from_the_ranks_is_shown_as_data_not_markup() -> None:
    def hostile(rank: int, record: Record) -> None:
        record["identity"]["host"] = "a|b[red]x\x1b]0;pwned\x07"
        record["identity"]["node_rank"] = None

    report = evaluate_job(job(2, 2, hostile), load_matrix())
    text = render_job(report, Format.TEXT, RenderOptions(width=200, color=True))
    assert "a|b[red]x\\x1b]0;pwned\\x07" in text
    markdown = render_job(report, Format.MARKDOWN)
    assert "a\\|b\\[red\\]x" in markdown and "a|b" not in markdown  # links escaped too
    for fmt in Format:  # the terminal escape reaches no format as a control character
        out = render_job(report, fmt, RenderOptions(width=200))
        assert "\x1b]0;pwned" not in out and "\x07" not in out, fmt
