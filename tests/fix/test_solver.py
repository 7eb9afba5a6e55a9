"""The solver on realistic machines, each expectation traced to a fact in the reference notes
(flash_attn_facts.md, torch_cuda_facts.md) that the matrix carries."""

from __future__ import annotations

from typing import Optional

import pytest
from packaging.version import Version

from fadoctor.errors import FadoctorError, NoPlanError
from fadoctor.facts.model import Family
from fadoctor.fix.render import PinFormat, render_plan
from fadoctor.fix.solver import Constraints, Plan, solve
from fadoctor.install.fa4 import newest_fa4
from fadoctor.install.machine import Machine, WhatIf, apply
from fadoctor.install.torch import torch_index
from fadoctor.matrix import Matrix, load_matrix


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def machine(gpu_cc: str, python: str = "3.11", driver: str = "570.124.06",
            glibc: Optional[str] = None, torch: Optional[str] = None) -> Machine:
    return apply(Machine(), WhatIf(gpu_cc=gpu_cc, python=python, driver=driver, glibc=glibc,
                                   torch=torch))


def plan_for(matrix: Matrix, m: Machine, **constraints: object) -> Plan:
    return solve(m, Constraints(**constraints), matrix)  # type: ignore[arg-type]


@pytest.mark.parametrize("cc", ["7.5", "7.0"])  # T4, V100
def test_pre_ampere_gets_the_sdpa_fallback(matrix: Matrix, cc: str) -> None:
    # flash_attn_facts.md §3, §5.4: FlashAttention-2 supports Ampere or newer only.
    plan = plan_for(matrix, machine(cc))
    assert plan.best.family is None and plan.best.kind == "sdpa"
    assert not plan.alternatives
    assert any("needs 8.0+" in why for why in plan.rejected)


def test_a100_torch24_cu121_py311_gets_the_exact_abi0_wheel(matrix: Matrix) -> None:
    # torch 2.4 pip wheels are C++11 ABI 0 (torch_cuda_facts.md §1.4); v2.8.3.post1 built
    # cu12torch2.4cxx11abiFALSE for cp39-cp312 (fa_wheel_matrix.yaml), CUDA tag by major.
    plan = plan_for(matrix, machine("8.0", torch="2.4.0+cu121"), torch="2.4.0+cu121")
    # The installed torch's SDPA flash backend is FA2's kernel (it vendors 2.5.6) and needs no
    # install: it comes first; the official wheel is the first flash-attn pick.
    assert plan.best.kind == "sdpa" and not plan.best.commands
    assert any("runs FlashAttention-2's kernel" in n for n in plan.best.notes)
    best = plan.alternatives[0]
    assert best.family == Family.FA2 and best.kind == "wheel" and best.wheel is not None
    assert best.provenance.tier == 1 and not best.provenance.third_party
    assert best.wheel.filename.endswith("cu12torch2.4cxx11abiFALSE-cp311-cp311-linux_x86_64.whl")
    assert best.wheel.url.startswith("https://github.com/Dao-AILab/flash-attention/releases/"
                                     f"download/v{best.version}/")
    # That machine has this torch (--torch describes it): nothing reinstalls it.
    assert best.commands[0] == f"pip install --no-deps {best.wheel.url}"
    # A machine without it gets it from PyTorch's CUDA 12.1 index first.
    fresh = plan_for(matrix, machine("8.0"), torch="2.4.0+cu121").best
    assert fresh.commands[0] == f"pip install torch==2.4.0+cu121 --index-url {torch_index('cu121')}"


def test_torch26_cu124_avoids_the_28x_false_wheels_built_on_abi1(matrix: Matrix) -> None:
    # flash_attn_facts.md §2 caveat: 2.8.x "cxx11abiFALSE" torch-2.6 wheels were compiled against
    # torch 2.6+cu126 (ABI 1); 2.7.4.post1 built torch 2.6 against cu124 (ABI 0): #1783.
    plan = plan_for(matrix, machine("8.0"), torch="2.6.0+cu124")
    assert plan.best.kind == "wheel" and plan.best.version == "2.7.4.post1"
    assert any("2.8.3" in why and "C++11 ABI 1" in why for why in plan.rejected)


def test_h100_torch211_cu130_gets_the_honest_answer(matrix: Matrix) -> None:
    # No flash-attn 2.x release built wheels for torch 2.11 (fa_wheel_matrix.yaml): FA4 (written
    # for Hopper, [cu13] extra on CUDA 13), a build for sm_90 only, FA3, or SDPA.
    plan = plan_for(matrix, machine("9.0", driver="580.82.07"), torch="2.11.0+cu130")
    assert plan.best.family == Family.FA4
    # Pinned: every 4.x is a pre-release, which pip skips unless pinned.
    assert plan.best.commands[-1] == f'pip install "flash-attn-4[cu13]=={newest_fa4(matrix)}"'
    kinds = [(p.family, p.kind) for p in plan.alternatives]
    assert (Family.FA2, "build") in kinds and (Family.FA3, "build") in kinds
    assert kinds[-1] == (None, "sdpa")
    build = next(p for p in plan.alternatives if p.kind == "build" and p.family == Family.FA2)
    assert any("FLASH_ATTN_CUDA_ARCHS=90 " in c for c in build.commands)
    assert any("torch 2.11.0+cu130: no flash-attn 2.x wheel fits" in why for why in plan.rejected)


def test_rtx5090_needs_sm120_kernels_and_a_cu128_or_newer_torch(matrix: Matrix) -> None:
    # torch's cu126 builds stop at sm_90; cu128+ carry 12.0 (torch_cuda_facts.md §1.3);
    # flash-attn wheels carry sm_120 from 2.8.0 (flash_attn_facts.md §1.4).
    plan = plan_for(matrix, machine("12.0"))
    best = plan.best
    assert best.torch is not None and best.torch.cuda >= Version("12.8")
    if best.kind == "wheel":
        assert best.wheel is not None and best.version is not None
        assert Version(best.version) >= Version("2.8.0")
    with pytest.raises(FadoctorError, match="sm_120"):
        plan_for(matrix, machine("12.0"), torch="2.6.0+cu126")


def test_glibc_231_avoids_wheels_built_on_ubuntu_2204(matrix: Matrix) -> None:
    # Ubuntu 20.04 has glibc 2.31; wheels from 2.8.0.post1 were built on 22.04 and need
    # GLIBC_2.32 (flash_attn_facts.md §5.9); 2.7.4.post1 is the newest built on 20.04.
    # torch 2.4 (ABI 0): 2.8.x has right-ABI wheels for it, so glibc alone decides.
    plan = plan_for(matrix, machine("8.0", glibc="2.31"), torch="2.4.0+cu121")
    assert plan.best.version == "2.7.4.post1"
    assert any("2.8.3.post1" in why and "2.32" in why for why in plan.rejected)
    assert plan_for(matrix, machine("8.0", glibc="2.35"), torch="2.4.0+cu121").best.version \
        == "2.8.3.post1"


def test_keep_torch_uses_the_installed_build(matrix: Matrix) -> None:
    m = machine("8.0", torch="2.4.0+cu121")
    plan = plan_for(matrix, m, keep_torch=True)
    assert plan.best.torch is not None and plan.best.torch.installed
    torch_pins = ('pip install "torch==', "pip install 'torch==", "pip install torch==")
    assert not any(c.startswith(torch_pins) for c in plan.best.commands)


@pytest.mark.parametrize("fmt", list(PinFormat))
def test_every_format_renders_the_best_pick(matrix: Matrix, fmt: PinFormat) -> None:
    plan = plan_for(matrix, machine("8.0"), torch="2.4.0+cu121")
    text = render_plan(plan, fmt)
    assert plan.best.wheel is not None
    assert plan.best.wheel.filename in text


def test_a_plan_that_keeps_the_installed_torch_comes_first(matrix: Matrix) -> None:
    # As recorded on the H200 machine: torch 2.11.0+cu130 installed, no flash-attention.
    m = apply(Machine(torch=Version("2.11.0+cu130")), WhatIf(gpu_cc="9.0", python="3.12",
                                                              driver="580.159.04", glibc="2.39"))
    plan = plan_for(matrix, m)
    assert plan.best.family == Family.FA4 and plan.best.torch is not None
    assert plan.best.torch.installed and plan.best.commands == (
        f'pip install "flash-attn-4[cu13]=={newest_fa4(matrix)}"',)
    wheel = next(p for p in plan.alternatives if p.kind == "wheel" and p.provenance.tier == 1)
    assert wheel.torch is not None and not wheel.torch.installed  # a wheel needs another torch
    assert wheel.commands[0].startswith("pip install torch==")


@pytest.mark.parametrize(("memory_gib", "cpus", "jobs"), [
    (None, None, 4),  # unknown: the README's MAX_JOBS=4 below 96 GB
    (39.0, 64, 3),  # flash-attention#382's 39 GB machine: 5 GB x 2 nvcc threads per job
    (24.0, 2, 2),
    (512.0, 16, 16),  # bounded by the cores
])
def test_build_jobs_follow_the_memory(memory_gib: Optional[float], cpus: Optional[int],
                                      jobs: int, matrix: Matrix) -> None:
    m = apply(Machine(gpu_cc=Version("9.0"), memory_gib=memory_gib, cpus=cpus, detected=True),
              WhatIf(python="3.12"))
    assert m.build_jobs == jobs
    plan = plan_for(matrix, m, torch="2.11.0+cu130")
    build = next(p for p in plan.alternatives if p.kind == "build" and p.family == Family.FA2)
    assert any(c.startswith(f"MAX_JOBS={jobs} NVCC_THREADS=2 ") for c in build.commands)


@pytest.mark.parametrize(("family", "own"), [(Family.FA3, "FlashAttention-3: written for 9.0 only"),
                                             (Family.FA2, "FlashAttention-2 needs 8.0+")])
def test_a_family_asked_for_on_a_v100_is_refused_with_its_own_reason(
        matrix: Matrix, family: Family, own: str) -> None:
    # FA3 is Hopper-only (the matrix's `tuned`): the FA2 floor is not its reason.
    with pytest.raises(NoPlanError) as refused:
        plan_for(matrix, machine("7.0"), family=family)
    assert own in str(refused.value), str(refused.value)
    if family != Family.FA2:
        assert "FlashAttention-2" not in str(refused.value), str(refused.value)
