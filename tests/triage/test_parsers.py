"""Each kind of input a report pastes, read into stated values with the line each came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Severity, Status
from fadoctor.triage import observed as o
from fadoctor.triage.bridge import to_facts
from fadoctor.triage.context import Context
from fadoctor.triage.diagnose import triage
from fadoctor.triage.environment import read_environment
from fadoctor.triage.errors import read_errors
from fadoctor.triage.gpus import GpuFinder
from fadoctor.triage.observed import Observed
from fadoctor.triage.text import split

FACTS = Path(__file__).resolve().parents[1] / "fixtures" / "facts"

COLLECT_ENV = """\
Collecting environment information...
PyTorch version: 2.4.0+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.4 LTS (x86_64)
GCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Clang version: Could not collect
CMake version: version 3.29.2
Libc version: glibc-2.35

Python version: 3.10.14 (main, May  6 2024, 19:42:50) [GCC 11.2.0] (64-bit runtime)
Python platform: Linux-5.15.0-105-generic-x86_64-with-glibc2.35
Is CUDA available: True
CUDA runtime version: 12.1.105
CUDA_MODULE_LOADING set to: LAZY
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB

Nvidia driver version: 535.161.08
cuDNN version: Probably one of the following:
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7

Versions of relevant libraries:
[pip3] numpy==1.26.4
[pip3] torch==2.4.0
[pip3] triton==3.0.0
[conda] torch                     2.4.0                    pypi_0    pypi
"""


def seen_in(text: str, matrix: Matrix) -> Observed:
    pasted = split(text)
    seen = Observed()
    read_environment(pasted, seen, GpuFinder(matrix))
    read_errors(pasted, seen)
    return seen


def test_collect_env(matrix: Matrix) -> None:
    seen = seen_in(COLLECT_ENV, matrix)
    assert seen.get(o.TORCH) == "2.4.0+cu121"
    assert seen.values[o.TORCH].quote.line == 2
    assert seen.get(o.TORCH_CUDA) == "12.1"
    assert seen.get(o.OS) == "Ubuntu 22.04.4 LTS" and seen.get(o.MACHINE) == "x86_64"
    assert seen.get(o.GLIBC) == "2.35" and seen.get(o.PYTHON) == "3.10.14"
    assert seen.get(o.NVCC) == "12.1.105" and seen.get(o.DRIVER) == "535.161.08"
    assert [(g.name, g.cc) for g in seen.gpus] == [("A100", "8.0")]
    assert "collect_env" in seen.kinds


def test_collect_env_keeps_the_tool_value_over_listings(matrix: Matrix) -> None:
    """collect_env's `PyTorch version` (with its +cu121) wins over `[pip3] torch==2.4.0`."""
    ctx = Context(split(COLLECT_ENV), seen_in(COLLECT_ENV, matrix), matrix)
    assert str(ctx.torch) == "2.4.0+cu121" and ctx.torch_abi is False


def test_nvidia_smi_table_and_query(matrix: Matrix) -> None:
    table = seen_in("""\
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 545.23.08              Driver Version: 545.23.08    CUDA Version: 12.3     |
|   0  NVIDIA GeForce RTX 4090        Off | 00000000:01:00.0  On |                  Off |
""", matrix)
    assert table.get(o.DRIVER) == "545.23.08" and table.get(o.DRIVER_CUDA) == "12.3"
    assert [(g.name, g.cc) for g in table.gpus] == [("GeForce RTX 4090", "8.9")]
    query = seen_in("Driver Version                            : 580.82.07\n"
                    "    Product Name                          : NVIDIA H100 80GB HBM3\n", matrix)
    assert query.get(o.DRIVER) == "580.82.07"
    assert [(g.name, g.cc) for g in query.gpus] == [("H100", "9.0")]


def test_tool_outputs(matrix: Matrix) -> None:
    seen = seen_in("""\
nvcc: NVIDIA (R) Cuda compiler driver
Cuda compilation tools, release 12.4, V12.4.131
ldd (Ubuntu GLIBC 2.31-0ubuntu9.16) 2.31
Linux trainbox 5.4.0-187-generic #207-Ubuntu SMP Mon Jun 10 08:16:10 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux
PRETTY_NAME="Ubuntu 20.04.6 LTS"
MemTotal:       131891436 kB
CPU(s):                          32
""", matrix)
    assert seen.get(o.NVCC) == "12.4" and seen.get(o.GLIBC) == "2.31"
    assert seen.get(o.KERNEL) == "5.4.0-187-generic" and seen.get(o.MACHINE) == "x86_64"
    assert seen.get(o.OS) == "Ubuntu 20.04.6 LTS"
    assert seen.get(o.MEMORY_GIB) == "125.8" and seen.get(o.CPUS) == "32"
    assert {"nvcc --version", "ldd --version", "uname -a", "os-release"} <= seen.kinds


def test_package_listings(matrix: Matrix) -> None:
    seen = seen_in("""\
Package                  Version
------------------------ ------------
flash_attn               2.6.3
transformers             4.44.2
vllm-flash-attn==2.6.1
Name: xformers
Version: 0.0.27.post2
pytorch                   2.3.1           py3.11_cuda12.1_cudnn8.9.2_0    pytorch
""", matrix)
    assert seen.packages["flash-attn"].value == "2.6.3"
    assert seen.packages["transformers"].value == "4.44.2"
    assert seen.packages["vllm-flash-attn"].value == "2.6.1"
    assert seen.packages["xformers"].value == "0.0.27.post2"
    assert seen.get(o.TORCH) == "2.3.1" and seen.get(o.TORCH_CUDA) == "12.1"


def test_prose_and_key_values(matrix: Matrix) -> None:
    seen = seen_in("""\
- torch: 2.1 nightly (cu118)
- Python version: 3.9.18
I'm on an RTX 3080 Ti with flash-attention 2.3.6 and CUDA 11.8, Ubuntu 18.04
""", matrix)
    assert seen.get(o.TORCH) == "2.1" and seen.get(o.TORCH_NIGHTLY) == "true"
    assert seen.get(o.PYTHON) == "3.9.18"
    assert seen.packages["flash-attn"].value == "2.3.6"
    assert seen.get(o.CUDA) == "11.8" and seen.get(o.OS) == "Ubuntu 18.04"
    assert [(g.name, g.cc) for g in seen.gpus] == [("RTX 3080 Ti", "8.6")]


def test_traceback_frames_and_exception(matrix: Matrix) -> None:
    seen = seen_in("""\
Traceback (most recent call last):
  File "/srv/app/run.py", line 3, in <module>
    import flash_attn
  File "/srv/venv/lib/python3.12/site-packages/flash_attn/__init__.py", line 3, in <module>
ImportError: libc10.so: cannot open shared object file: No such file or directory
""", matrix)
    raised = seen.raised[0]
    assert raised.kind == "ImportError" and raised.quote.line == 5
    assert raised.frames[-1].endswith("flash_attn/__init__.py")
    assert seen.get(o.PYTHON) == "3.12"


def test_fadoctor_markdown_report_pasted_back(matrix: Matrix) -> None:
    markdown = """\
## fadoctor: problems found (1 failed, 10 passed, 4 skipped)

- **Python**: 3.11.9 at /opt/venv/bin/python
- **Platform**: Ubuntu 22.04.4 LTS x86_64, glibc 2.35
- **torch**: 2.6.0+cu124 (CUDA 12.4)
- **Driver**: 550.54.15 (CUDA 12.4)
- **GPUs**: NVIDIA H100 80GB HBM3 (sm_90)
- **flash-attention**: flash-attn 2.8.2

| Check | Status | Result |
| --- | --- | --- |
| FAD111 flash-attn-import | failed | flash-attn 2.8.2 fails to import (import error): \
/opt/venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: \
undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE |
"""
    result = triage(markdown, matrix)
    top = result.diagnosis[0]
    assert top.category.value == "cxx11_abi_mismatch"
    assert result.environment.torch == "2.6.0+cu124 (CUDA 12.4)"
    assert "2.7.4.post1" in " ".join(r.summary + " ".join(r.commands) for r in top.remedies)


def test_fadoctor_json_facts_pasted_back(matrix: Matrix) -> None:
    """A snapshot is recorded facts: the same checks as `check --facts`, quoted from the JSON."""
    text = (FACTS / "fa853-cxx11abi-true-wheel-on-pip-torch.json").read_text(encoding="utf-8")
    result = triage(text, matrix)
    assert "fadoctor facts" in result.read
    top = result.diagnosis[0]
    assert top.category.value == "cxx11_abi_mismatch" and top.subject == "FAD111"
    assert top.severity == Severity.ERROR and top.evidence["quoted"]


def test_fadoctor_json_report_pasted_back(matrix: Matrix) -> None:
    from fadoctor.evaluate import evaluate
    from fadoctor.facts.model import Facts

    facts = Facts.model_validate_json(
        (FACTS / "fa853-cxx11abi-true-wheel-on-pip-torch.json").read_text(encoding="utf-8"))
    report = evaluate(facts, matrix).model_dump_json(indent=2)
    result = triage(report, matrix)
    assert "fadoctor report" in result.read
    assert result.diagnosis[0].category.value == "cxx11_abi_mismatch"
    json.loads(result.model_dump_json())


def test_partial_facts_run_the_checks_and_skip_the_unknown(matrix: Matrix) -> None:
    """FA2 on a Turing GPU: FAD112 fails from the stated GPU and version; what the text does not
    state (the full package list, torch's import) is skipped with the reason; the facts say
    origin "pasted"."""
    result = triage("GPU 0: Tesla T4\nflash-attn 2.5.8\n", matrix)
    by_id = {c.id: c for c in result.checks}
    assert by_id["FAD112"].status == Status.FAILED
    assert by_id["FAD110"].status == Status.PASSED  # the stated flash-attn
    assert by_id["FAD107"].status == Status.SKIPPED and "list of installed packages" in (
        by_id["FAD107"].skipped_reason or "")
    assert by_id["FAD102"].status == Status.SKIPPED
    top = result.diagnosis[0]
    assert top.category.value == "gpu_unsupported" and top.subject == "FAD112"
    assert any("Tesla T4" in q for q in top.evidence["quoted"])
    text = "GPU 0: Tesla T4\nflash-attn 2.5.8\n"
    facts = to_facts(Context(split(text), seen_in(text, matrix), matrix))
    assert facts.origin == "pasted" and facts.torch.failure is not None  # unknown, not absent


@pytest.mark.parametrize(("line", "distribution"), [
    ("flash-attention 3 version 3.0.0b1", "flash-attn-3 3.0.0b1"),
    ("flash attention 3: 3.0.0b1", "flash-attn-3 3.0.0b1"),
    ("flash-attention: 3.0.0b1", "flash-attn-3 3.0.0b1"),  # flash-attn 2.x had no 3.x release
    ("flash_attn_4 4.0.0b36", "flash-attn-4 4.0.0b36"),
    ("flash-attention 2.5.8", "flash-attn 2.5.8"),
    ("flash-attn-2: 2.6.3", "flash-attn 2.6.3"),
])
def test_flash_attention_named_in_prose_is_its_generation(line: str, distribution: str,
                                                          matrix: Matrix) -> None:
    assert triage(line + "\n", matrix).environment.flash_attention == [distribution]


def test_thin_text_says_what_is_missing(matrix: Matrix) -> None:
    result = triage("flash attention doesn't work, please help", matrix)
    assert not [d for d in result.diagnosis if d.severity == Severity.ERROR]
    commands = [m.command for m in result.missing]
    assert "python -m torch.utils.collect_env" in commands
    assert any(c.startswith("fadoctor snapshot") for c in commands)
