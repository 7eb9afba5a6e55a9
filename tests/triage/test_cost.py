"""Triage's cost is linear in the pasted text, whatever it holds: hypothesis builds reports of
long runs of whitespace and punctuation (what makes a backtracking pattern quadratic) around
the words triage's patterns look for, and each must cost under 1 CPU-second per MB. The bound
holds for every pattern triage runs, the catalog's included, since it is the whole diagnosis that
is timed (and redaction, which runs on the same text)."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fadoctor.matrix import load_matrix
from fadoctor.safety.redact import redact
from fadoctor.triage.diagnose import triage

MATRIX = load_matrix()
WORDS = ["Python version", "PyTorch version", "torch", "flash_attn", "CUDA", "GB", "RAM",
         "was built for", "undefined symbol", ".so", "Version", "Package", "token", "password",
         "Authorization", "Bearer", "@", "sm_", "nvcc", "2.4.0", "12.1", "#", "*", "-", "`"]
RUNS = st.tuples(st.sampled_from([" ", "\t", ":", "=", "-", "*", ".", "0", "a", "_", "/", "'",
                                  '"', "(", " :", ". ", "a."]),
                 st.integers(min_value=1, max_value=3000)).map(lambda run: run[0] * run[1])
PIECES = st.one_of(RUNS, st.sampled_from(WORDS), st.just("\n"))
REPORTS = st.lists(PIECES, min_size=20, max_size=200).map("".join)


def cost(work: object, text: str) -> float:
    started = time.process_time()
    work(text)  # type: ignore[operator]
    return time.process_time() - started


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REPORTS)
def test_triage_and_redaction_are_linear(report: str) -> None:
    body = (report + "\n") * max(1, (256 << 10) // (len(report) + 1))  # about 256 kB
    megabytes = len(body) / (1 << 20)
    spent = cost(lambda text: triage(text, MATRIX), body) + cost(redact, body)
    assert spent < 1.0 * megabytes + 0.5, f"{spent:.2f} CPU-s for {megabytes:.2f} MB"


def test_a_run_of_equals_signs_after_a_name_is_linear() -> None:
    # "torch" then a run of "=" once split every way ("==?" inside a repeated group): 22 signs
    # took 26 ms, 40 would take minutes. Found by the property test above.
    body = ("torch" + "=" * 3000 + "x\n") * 80  # about 240 kB
    spent = cost(lambda text: triage(text, MATRIX), body)
    assert spent < 1.0 * len(body) / (1 << 20) + 0.5, f"{spent:.2f} CPU-s"
