"""Triage's "paste this" commands come in the report's shell (PowerShell or cmd.exe for a
Windows report, none that asks for a Linux-only tool there), and torch autocast's own refusal of
bfloat16 is read as the GPU's missing bf16, with float16 as the way out."""

from __future__ import annotations

import subprocess

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.ask_shell import in_shell
from fadoctor.triage.diagnose import triage

THIN = "it does not work, the model will not load\n"
POWERSHELL = "PS C:\\Users\\me\\ComfyUI> python main.py\n" + THIN
CMD = "C:\\Users\\me\\ComfyUI>python main.py\nMicrosoft Windows [Version 10.0.22631]\n" + THIN


def asks(text: str, matrix: Matrix) -> list:
    return [m.command for m in triage(text, matrix).missing]


def test_a_linux_report_is_asked_in_posix(matrix: Matrix) -> None:
    commands = asks(THIN, matrix)
    assert "python -m pip list 2>/dev/null | grep -i -E 'flash|torch|transformers'" in commands
    assert 'python -c "import torch, flash_attn" 2>&1 | tail -n 40' in commands


def test_a_powershell_report_is_asked_in_powershell(matrix: Matrix) -> None:
    commands = asks(POWERSHELL, matrix)
    assert ("python -m pip list 2>$null | Select-String -Pattern 'flash|torch|transformers'"
            in commands)
    assert 'python -c "import torch, flash_attn" 2>&1 | Select-Object -Last 40' in commands
    assert not any("/dev/null" in c or "| tail" in c or "| grep" in c for c in commands)


def test_a_cmd_report_is_asked_in_cmd(matrix: Matrix) -> None:
    commands = asks(CMD, matrix)
    assert 'python -m pip list 2>nul | findstr /i "flash torch transformers"' in commands
    assert not any("/dev/null" in c or "| tail" in c or "$" in c for c in commands)


@pytest.mark.parametrize(("posix", "powershell", "cmd"), [
    ("ninja --version; echo $?", "ninja --version; echo $LASTEXITCODE",
     "ninja --version & echo %ERRORLEVEL%"),
    ("which nvcc; nvcc --version; echo $CUDA_HOME",
     "Get-Command nvcc; nvcc --version; echo $env:CUDA_HOME",
     "where nvcc & nvcc --version & echo %CUDA_HOME%"),
    # a `;` inside python's quoted code is python's, not the shell's
    ('python -c "import torch; print(torch.__version__)"',
     'python -c "import torch; print(torch.__version__)"',
     'python -c "import torch; print(torch.__version__)"'),
])
def test_each_shell_gets_its_own_words(posix: str, powershell: str, cmd: str) -> None:
    assert in_shell(posix, "posix") == posix
    assert in_shell(posix, "powershell") == powershell
    assert in_shell(posix, "cmd") == cmd


@pytest.mark.parametrize("posix", ["ldd --version", "rocminfo | grep gfx",
                                   "cat /etc/nv_tegra_release",
                                   "free -g; nproc; dmesg | grep -i -E 'killed process|oom'"])
def test_a_linux_only_ask_is_left_out_on_windows(posix: str) -> None:
    assert in_shell(posix, "powershell") is None
    assert in_shell(posix, "cmd") is None


def test_the_posix_asks_run_in_sh() -> None:
    """The POSIX form is what sh runs: every pipe stage exists here and the line parses."""
    for posix in ("python3 -m pip list 2>/dev/null | grep -i -E 'flash|torch|pip'",
                  'python3 -c "import sys" 2>&1 | tail -n 40'):
        done = subprocess.run(["sh", "-c", posix], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr


AUTOCAST = ("GPU: Tesla V100-SXM2-32GB\n"
            "Traceback (most recent call last):\n"
            '  File "finetune/lora.py", line 84, in main\n'
            "    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype "
            "to float16.\n")


def test_autocasts_bf16_refusal_is_the_gpus_missing_bf16(matrix: Matrix) -> None:
    found = top(AUTOCAST, matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "V100" in found.message and "sm_70" in found.message
    assert "dtype=torch.float16" in said(found)
    assert any("does not support bfloat16" in str(q) for q in found.evidence["quoted"])
