"""Build remedies name the package the log builds (flash-attn's wheel only for flash-attn's
build), and a report from Windows gets its remedies written for its shell: each command on its
own line, variables set as PowerShell or cmd.exe sets them, the interpreter its paths name."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.install.into import named_in, shell_of
from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.safety.shell import Installer, into_lines, is_safe

KILLED = ("subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit "
          "status 1.\nKilled\n")


def test_a_build_naming_no_package_gets_no_flash_attn_advice(matrix: Matrix) -> None:
    text = ("Errors after the latest commit, on an A100 with CUDA 11.8:\n"
            "nvcc fatal   : Unsupported gpu architecture 'compute_90'\n"
            "ninja: build stopped: subcommand failed.\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "flash" not in said(found).lower()
    assert "export MAX_JOBS=4" in [c for r in found.remedies for c in r.commands]


def test_pips_own_build_line_names_the_package(matrix: Matrix) -> None:
    found = top("Building wheel for uni-core (setup.py) ... error\n" + KILLED, matrix)
    assert found.category == Category.BUILD_RESOURCES
    assert "the uni-core build ran out of memory" in found.message
    commands = [c for r in found.remedies for c in r.commands]
    assert "MAX_JOBS=4 python -m pip install uni-core --no-build-isolation --no-cache-dir" in commands
    assert "python -m pip install uni-core --only-binary=uni-core" in commands
    assert "flash" not in said(found).lower()


def test_a_flash_attn_build_keeps_its_wheel_advice(matrix: Matrix) -> None:
    found = top("Building wheel for flash-attn (setup.py) ... error\n" + KILLED, matrix)
    assert found.category == Category.BUILD_RESOURCES
    assert "the flash-attn build ran out of memory" in found.message
    assert any("pip install flash-attn" in c for r in found.remedies for c in r.commands)


WIN_CMD = ("(venv) C:\\Users\\me\\ComfyUI>pip install flash-attn --no-build-isolation\n"
           "Building wheel for flash-attn (setup.py) ... error\n"
           '  File "C:\\Users\\me\\ComfyUI\\venv\\Lib\\site-packages\\torch\\utils\\'
           'cpp_extension.py", line 2100, in _run_ninja_build\n' + KILLED)


def test_a_cmd_report_sets_variables_with_set_and_runs_its_venv(matrix: Matrix) -> None:
    commands = [c for r in top(WIN_CMD, matrix).remedies for c in r.commands]
    python = '"C:\\Users\\me\\ComfyUI\\venv\\Scripts\\python.exe"'
    assert 'set "MAX_JOBS=4"' in commands
    jobs = commands.index('set "MAX_JOBS=4"')
    assert commands[jobs + 1] == 'set "NVCC_THREADS=2"'
    assert any(c.startswith(f"{python} -m pip install flash-attn") for c in commands)
    assert not any("MAX_JOBS=4 " in c for c in commands)


def test_a_powershell_report_sets_env_and_calls_the_path(matrix: Matrix) -> None:
    text = WIN_CMD.replace("(venv) C:\\Users\\me\\ComfyUI>", "PS C:\\Users\\me\\ComfyUI> ")
    commands = [c for r in top(text, matrix).remedies for c in r.commands]
    assert '$env:MAX_JOBS = "4"' in commands
    assert any(c.startswith('& "C:\\Users\\me\\ComfyUI\\venv\\Scripts\\python.exe" -m pip install')
               for c in commands)


def test_a_posix_report_keeps_one_line(matrix: Matrix) -> None:
    text = ("$ pip install flash-attn --no-build-isolation\n"
            "Building wheel for flash-attn (setup.py) ... error\n" + KILLED)
    commands = [c for r in top(text, matrix).remedies for c in r.commands]
    assert any(c.startswith("MAX_JOBS=4 NVCC_THREADS=2 ") for c in commands)


@pytest.mark.parametrize("path, python", [
    ("C:\\ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\torch\\x.py",
     "C:\\ComfyUI_windows_portable\\python_embeded\\python.exe"),
    ("C:\\Users\\me\\miniconda3\\envs\\myenv\\lib\\site-packages\\torch\\x.py",
     "C:\\Users\\me\\miniconda3\\envs\\myenv\\python.exe"),
    ("D:\\proj\\.venv\\Lib\\site-packages\\torch\\x.py", "D:\\proj\\.venv\\Scripts\\python.exe"),
    ("C:\\Program Files\\Python311\\Lib\\site-packages\\torch\\x.py",
     "C:\\Program Files\\Python311\\python.exe"),
])
def test_windows_site_packages_name_the_interpreter(path: str, python: str) -> None:
    found = named_in(f'  File "{path}", line 3, in <module>\n', "powershell")
    assert found is not None and found.python == python and found.shell == "powershell"


def test_two_environments_name_none() -> None:
    text = ("C:\\a\\venv\\Lib\\site-packages\\x.py\n"
            "/opt/conda/lib/python3.11/site-packages/y.py\n")
    assert named_in(text) is None


def test_the_shell_follows_the_prompt() -> None:
    assert shell_of("PS C:\\work> pip list", True) == "powershell"
    assert shell_of("C:\\work>pip list", True) == "cmd"
    assert shell_of("a Windows drive path C:\\work only", True) == "powershell"
    assert shell_of("PS C:\\work> pip list", False) == "posix"


def test_windows_lines_are_safe_and_posix_reads_them_as_words() -> None:
    inst = Installer(python="C:\\Program Files\\Python311\\python.exe", known=True,
                     shell="powershell")
    lines = into_lines('MAX_JOBS=4 pip install "torch>=2.7" && export CUDA_HOME="C:\\CUDA"', inst)
    assert lines == ['$env:MAX_JOBS = "4"',
                     '& "C:\\Program Files\\Python311\\python.exe" -m pip install "torch>=2.7"',
                     '$env:CUDA_HOME = "C:\\CUDA"']
    assert all(is_safe(line) for line in lines)
    # pasted into a POSIX shell by mistake, nothing runs that the words do not show
    for line in lines[1:2]:
        words = shlex.split(line)
        assert words[0] == "&" and words[1].endswith("python.exe")
    done = subprocess.run(["sh", "-n", "-c", lines[0]], capture_output=True)
    assert done.returncode == 0


def test_a_value_no_windows_shell_reads_literally_stays_as_it_was() -> None:
    inst = Installer(shell="cmd")
    assert into_lines("X=%PATH% pip list", inst) == ["X=%PATH% python -m pip list"]


def test_unsafe_forms_stay_refused() -> None:
    assert not is_safe('$env:A = "$(rm -rf /)"')
    assert not is_safe('& "C:\\x\\python.exe"; rm -rf /')
    assert not is_safe('$env:A = "x"; rm')


def test_check_on_windows_writes_powershell_and_apply_stays_posix() -> None:
    import json
    from pathlib import Path

    from fadoctor.facts.model import Facts
    from fadoctor.install.into import commands_into, installer_of

    raw = json.loads((Path(__file__).parents[1] / "fixtures" / "facts" /
                      "a100-driver-too-old.json").read_text(encoding="utf-8"))
    linux = installer_of(Facts.model_validate(raw))
    assert linux.shell == "posix"
    raw["host"]["data"]["os"] = "Windows"
    raw["host"]["data"]["python_executable"] = "C:\\venv\\Scripts\\python.exe"
    windows = installer_of(Facts.model_validate(raw))
    assert windows.shell == "powershell" and windows.known
    assert commands_into(["MAX_JOBS=4 pip install flash-attn"], windows) == [
        '$env:MAX_JOBS = "4"', '& "C:\\venv\\Scripts\\python.exe" -m pip install flash-attn']
