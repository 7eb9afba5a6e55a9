"""What fadoctor's flash-attn-4 compile cache bought on a real H200 (recorded by
benchmarks/bench_kernels.py; tests/fixtures/recorded/README.md): the default smoke set with the
cache costs about what the imports cost, without it the first-call JIT comes back every time."""

from __future__ import annotations

import json
from pathlib import Path

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / \
    "h200-bench-cost-jit-cache.json"


def test_a_second_check_with_the_cache_costs_at_most_1_3_times_the_imports() -> None:
    run = json.loads(RUN.read_text(encoding="utf-8"))
    assert run["runs"] == 3 and "flash_attn.cute" in run["family_modules"]
    assert run["kernel_stages"]["cases"]["fa4"]["cases"] == {"passed": 1}
    cached, uncached = run["samples_s"]["check_default"], run["samples_s"]["check_default_no_cache"]
    assert run["ratio_check_default_to_imports"] <= 1.3
    # Every cached run beat every uncached one, by more than half the JIT the cache saves.
    assert max(cached) + run["fa4_first_call_jit_s"] / 2 < min(uncached)
