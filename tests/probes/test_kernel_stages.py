"""The kernel stages through the real runner, in child processes of a real interpreter with CPU
torch: fake families made in a temporary folder that compute wrong attention, NaNs, or crash or
hang; each is caught or contained, and the stages after it still report."""

from __future__ import annotations

import getpass
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

import pytest
from tests.helpers.broken import requires_torch
from tests.helpers.fake_family import make_family

from fadoctor.facts.kernels import SmokeTarget
from fadoctor.facts.model import Probe
from fadoctor.probes import kernels
from fadoctor.probes.kernels import KernelOptions, environment, stage_options
from fadoctor.probes.runner import StageOutcome, run_stages

pytestmark = [pytest.mark.slow, requires_torch]  # the kernel stages run real torch in the child

SMALL = {"batch": 1, "seqlen": 64, "heads": 4, "kv_heads": 2}
CPU = KernelOptions(smoke="default", device="cpu", shape=SMALL)


def run_kernel_stages(stages: List[str], tmp: Path, pythonpath: Optional[Path] = None,
                      options: KernelOptions = CPU,
                      timeouts: Optional[Mapping[str, float]] = None) -> Dict[str, StageOutcome]:
    base = dict(os.environ)
    if pythonpath is not None:
        base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath),
                                                           base.get("PYTHONPATH")]))
    env = environment(base, str(tmp / "cache"))
    return run_stages(sys.executable, stages, env=env, options=stage_options(options),
                      timeouts=timeouts or {s: 300.0 for s in stages})


def smoke(outcomes: Dict[str, StageOutcome], target: str) -> SmokeTarget:
    outcome = outcomes[f"smoke_{target}"]
    assert outcome.ok, outcome.failure
    return SmokeTarget.model_validate(outcome.data)


def test_wrong_and_nan_kernels_are_caught_and_the_tuple_returns_unwrapped(tmp_path: Path) -> None:
    site = tmp_path / "site"
    make_family(site, "wrong", "fa2")
    make_family(site, "nan_backward", "fa3", "3.0.0b1")
    make_family(site, "nan", "vllm_fa", "2.6.2")
    make_family(site, "right", "fa4", "4.0.0b36")  # returns (out, lse), as FA4 does
    outcomes = run_kernel_stages(["smoke_fa2", "smoke_fa3", "smoke_fa4", "smoke_vllm_fa"],
                                 tmp_path, site)
    [wrong] = smoke(outcomes, "fa2").cases
    assert wrong.status == "wrong"
    assert wrong.label == ("flash_attn_func, bfloat16, head dim 128, causal, GQA 4/2 heads, "
                           "forward+backward")
    out = wrong.errors[0]
    assert out.tensor == "out" and not out.ok and out.error is not None
    assert out.tolerance is not None and out.error > out.tolerance
    [nan_grad] = smoke(outcomes, "fa3").cases
    assert nan_grad.status == "nonfinite"
    assert [e.tensor for e in nan_grad.errors if not e.finite] == ["dq", "dk", "dv"]
    assert nan_grad.errors[0].finite  # the output itself is fine
    [nan_out] = smoke(outcomes, "vllm_fa").cases
    assert nan_out.status == "nonfinite" and not nan_out.errors[0].finite
    [right] = smoke(outcomes, "fa4").cases
    assert right.status == "passed", right


def test_a_kernel_that_segfaults_is_contained_and_the_next_stage_runs(tmp_path: Path) -> None:
    site = make_family(tmp_path / "site", "segfault", "fa2")
    outcomes = run_kernel_stages(["smoke_fa2", "smoke_sdpa_math"], tmp_path, site)
    crashed = outcomes["smoke_fa2"]
    assert not crashed.ok and crashed.failure is not None
    assert crashed.failure.kind == "crash" and crashed.failure.signal == "SIGSEGV"
    assert "flash_attn" in (crashed.failure.stderr_tail or "")  # faulthandler's traceback
    assert smoke(outcomes, "sdpa_math").cases[0].status == "passed"


def test_a_kernel_that_hangs_is_killed_at_its_timeout(tmp_path: Path) -> None:
    site = make_family(tmp_path / "site", "hang", "fa2")
    outcomes = run_kernel_stages(["smoke_sdpa_math", "smoke_fa2", "smoke_sdpa_efficient"],
                                 tmp_path, site,
                                 timeouts={"smoke_sdpa_math": 300.0, "smoke_fa2": 10.0,
                                           "smoke_sdpa_efficient": 300.0})
    hung = outcomes["smoke_fa2"]
    assert not hung.ok and hung.failure is not None and hung.failure.kind == "timeout"
    assert "10 s" in hung.failure.reason
    assert smoke(outcomes, "sdpa_math").cases[0].status == "passed"
    assert smoke(outcomes, "sdpa_efficient").cases[0].status == "not_applicable"


def test_the_full_grid_marks_missing_apis_and_refused_head_dims(tmp_path: Path) -> None:
    site = make_family(tmp_path / "site", "head_dim", "fa2")
    options = KernelOptions(smoke="full", device="cpu", shape={"batch": 1, "seqlen": 32,
                                                               "heads": 2, "kv_heads": 1})
    data = smoke(run_kernel_stages(["smoke_fa2"], tmp_path, site, options), "fa2")
    assert data.grid == "full" and len(data.cases) == 72
    by_api: Dict[str, List[str]] = {}
    for case in data.cases:
        by_api.setdefault(case.case.api, []).append(case.status)
    assert set(by_api["varlen"]) == {"not_applicable"} == set(by_api["kvcache"])
    refused = [c for c in data.cases if c.case.api == "func" and c.case.head_dim == 256]
    assert refused and all(c.status == "error" and c.phase == "forward" for c in refused)
    assert "head dimension" in (refused[0].message or "")
    rest = [c for c in data.cases if c.case.api == "func" and c.case.head_dim != 256]
    assert {c.status for c in rest} == {"passed"}


def test_kernel_workers_remove_their_cache_folder(tmp_path: Path) -> None:
    workers = kernels.KernelWorkers(sys.executable, os.environ, CPU, stages=["smoke_sdpa_math"])
    assert Path(workers.cache_root).is_dir()
    outcomes = workers.wait()
    assert not Path(workers.cache_root).exists()
    facts = kernels.assemble(outcomes, CPU)
    probe: Probe[SmokeTarget] = facts["smoke"].targets["sdpa_math"]
    assert probe.data is not None and probe.data.cases[0].status == "passed"


def tree_state(root: Path) -> Dict[str, Tuple[int, int, int]]:
    """Every file and folder under root: (size, mtime in ns, mode). A write, a new file or a
    new folder (a __pycache__, a cache) changes it."""
    state: Dict[str, Tuple[int, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            state[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return state


def test_smoke_and_inductor_compile_leave_the_environment_untouched(tmp_path: Path) -> None:
    """The examined environment (this interpreter's venv) is the same file for file before and
    after a smoke test and a real Inductor compile, whose caches went to the given folder."""
    prefix = Path(sys.prefix)
    default_cache = Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}"
    had_default = default_cache.exists()
    before = tree_state(prefix)
    options = KernelOptions(smoke="default", compile=True, device="cpu", shape=SMALL)
    cache = tmp_path / "cache"
    env = environment(dict(os.environ), str(cache))
    outcomes = run_stages(sys.executable, ["smoke_sdpa_math", "compile_sdpa"], env=env,
                          options=stage_options(options),
                          timeouts={"smoke_sdpa_math": 300.0, "compile_sdpa": 900.0})
    compiled = outcomes["compile_sdpa"]
    assert compiled.ok and compiled.data is not None, compiled.failure
    assert compiled.data["fullgraph"]["ok"] and compiled.data["fullgraph"]["backend"] == "inductor"
    inductor = cache / "torchinductor_cache_dir"
    assert any(inductor.iterdir()), "Inductor wrote no cache where it was told to"
    after = tree_state(prefix)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert changed == []
    assert default_cache.exists() == had_default


_SEES_CACHE = '''
import os as _os
with open(_os.path.join(_os.path.dirname(__file__), "cache-seen.txt"), "a") as _fh:
    _fh.write("%s|%s\\n" % (_os.environ.get("FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED"),
                           _os.environ.get("FLASH_ATTENTION_CUTE_DSL_CACHE_DIR")))
'''


def test_flash_attn_4_keeps_its_compile_cache_in_fadoctors_folder_keyed_by_what_it_depends_on(
        tmp_path: Path) -> None:
    site = make_family(tmp_path / "site", "right", "fa4", "4.0.0b36")
    module = site / "flash_attn" / "cute" / "__init__.py"
    module.write_text(_SEES_CACHE + module.read_text(encoding="utf-8"), encoding="utf-8")
    root = tmp_path / "fadoctor-cache" / "jit"
    base = dict(os.environ, PYTHONPATH=str(site))
    env = environment(base, str(tmp_path / "temporary"))
    extra = {"jit_cache": str(root), "jit_key": "driver580.159.04-NVIDIA H200-sm9.0"}
    for _ in range(2):  # a second check finds the same folder
        outcomes = run_stages(sys.executable, ["smoke_fa4"], env=env,
                              options=stage_options(CPU, extra), timeouts={"smoke_fa4": 300.0})
        assert smoke(outcomes, "fa4").cases[0].status == "passed"
    seen = (site / "flash_attn" / "cute" / "cache-seen.txt").read_text().splitlines()
    assert len(seen) == 2 and seen[0] == seen[1]
    enabled, folder = seen[0].split("|")
    assert enabled == "1"
    assert Path(folder).parent == root and Path(folder).is_dir()
    import torch

    name = Path(folder).name  # the family's release, torch and its CUDA, then the parent's key
    assert name.startswith(f"fa4-flash-attn-4-4.0.0b36-torch{torch.__version__}-cuda")
    assert name.endswith("driver580.159.04-NVIDIA_H200-sm9.0")


def test_without_a_key_or_with_the_cache_off_the_family_gets_only_the_temporary_folder(
        tmp_path: Path) -> None:
    from fadoctor.facts.model import Driver, Gpu

    h200 = Driver(present=True, source="nvml", version="580.159.04",
                  gpus=[Gpu(index=0, name="NVIDIA H200", compute_capability="9.0")])
    gpu = KernelOptions(smoke="default")
    home = {"HOME": str(tmp_path)}
    assert kernels.jit_options(home, h200, gpu) == {
        "jit_cache": str(tmp_path / ".cache" / "fadoctor" / "jit"),
        "jit_key": "driver580.159.04-NVIDIA H200-sm9.0"}
    assert kernels.jit_options({**home, "XDG_CACHE_HOME": "/x"}, h200, gpu)["jit_cache"] == \
        "/x/fadoctor/jit"
    assert kernels.jit_options({**home, "FADOCTOR_CACHE_DIR": ""}, h200, gpu) == {}  # off
    assert kernels.jit_options(home, h200, CPU) == {}  # a forced device: no GPU to key it by
    assert kernels.jit_options(home, Driver(present=True, source="procfs", version="580.1"),
                               gpu) == {}  # the GPUs are unknown
    assert kernels.jit_options(home, None, gpu) == {}
