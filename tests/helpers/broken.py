"""Broken environments, made for real: fake distributions and ELF extensions built with gcc.

Everything here is written into a folder the test owns and reaches the target interpreter through
PYTHONPATH, the way a stray `pip install --target` or a copied site-packages does. The extensions
are real shared objects: the target's dynamic loader refuses them with the same messages users
paste into issue threads (`undefined symbol: _ZN3c10…`, `libcudart.so.11.0: cannot open …`).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pytest

# c10::Error::Error(c10::SourceLocation, std::string), as torch exports it with each C++ ABI:
# the pre-C++11 std::string mangles as `Ss`, the C++11 one as `NSt7__cxx1112basic_string…`.
C10_ERROR_OLD_ABI = "_ZN3c105ErrorC2ENS_14SourceLocationESs"
C10_ERROR_CXX11_ABI = (
    "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
)
# at::_ops::_pad_enum::call(...): an ATen op with no std::string in it (flash-attention#723).
ATEN_PAD_ENUM = (
    "_ZN2at4_ops9_pad_enum4callERKNS_6TensorEN3c108ArrayRefINS5_6SymIntEEElNS5_8optionalIdEE"
)
CUDART_11 = "libcudart.so.11.0"

HAS_TORCH = importlib.util.find_spec("torch") is not None
requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch in the test interpreter")
HAS_GCC = shutil.which("gcc") is not None
requires_gcc = pytest.mark.skipif(not HAS_GCC, reason="needs gcc to build ELF files")


def opposite_abi_symbol(torch_cxx11_abi: bool) -> str:
    """The c10::Error constructor as an extension built with the *other* C++ ABI would need it."""
    return C10_ERROR_OLD_ABI if torch_cxx11_abi else C10_ERROR_CXX11_ABI


def target_ext_suffix(python: str = sys.executable) -> str:
    """EXT_SUFFIX of the target interpreter (`.cpython-311-x86_64-linux-gnu.so`)."""
    code = "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def environ_with_path(*folders: Path, base: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The environment of the test run with `folders` first on PYTHONPATH."""
    env = dict(os.environ if base is None else base)
    parts = [str(f) for f in folders] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def write_distribution(root: Path, name: str, version: str, files: Mapping[str, str],
                       requires: Sequence[str] = ()) -> Path:
    """Install `files` under `root` with a `<name>-<version>.dist-info` as pip leaves it
    (`requires`: its Requires-Dist lines)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "INSTALLER").write_text("pip\n")
    top = sorted({Path(rel).parts[0].split(".")[0] for rel in files})
    (info / "top_level.txt").write_text("".join(f"{t}\n" for t in top))
    return root


def gcc(output: Path, source: str, *args: str) -> Path:
    """Compile C `source` into the shared object `output` with gcc."""
    src = output.with_name(output.name + ".c")
    src.write_text(source)
    cmd = ["gcc", "-shared", "-fPIC", "-o", str(output), str(src), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    src.unlink()
    return output


def extension_needing_symbol(folder: Path, module: str, symbol: str, suffix: str) -> Path:
    """A Python extension module whose load fails with `undefined symbol: <symbol>`."""
    source = f"""
extern void needed(void) __asm__("{symbol}");
void call_needed(void) {{ needed(); }}
void *PyInit_{module}(void) {{ return 0; }}
"""
    # Shared objects may keep undefined symbols; the loader (RTLD_NOW) is who refuses them.
    return gcc(folder / f"{module}{suffix}", source)


def extension_needing_library(folder: Path, module: str, soname: str, suffix: str) -> Path:
    """A Python extension module with DT_NEEDED on `soname`, a library that exists nowhere."""
    stub_dir = folder / ".stub"
    stub_dir.mkdir(parents=True, exist_ok=True)
    stem = soname.split(".so")[0]  # libcudart
    gcc(stub_dir / f"{stem}.so", "int cudaRuntimeGetVersion(int *v) { *v = 0; return 0; }\n",
        f"-Wl,-soname,{soname}")
    source = f"""
extern int cudaRuntimeGetVersion(int *);
int runtime_version(void) {{ int v; return cudaRuntimeGetVersion(&v); }}
void *PyInit_{module}(void) {{ return 0; }}
"""
    ext = gcc(folder / f"{module}{suffix}", source, f"-L{stub_dir}", f"-l{stem[3:]}")
    shutil.rmtree(stub_dir)  # what it was linked against is gone, as in the user's environment
    return ext


def library_loads(soname: str) -> bool:
    """Whether this machine's loader finds `soname` (then a "missing library" test cannot work)."""
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def fake_flash_attn(root: Path, *, version: str = "2.6.3", symbol: Optional[str] = None,
                    needed: Optional[str] = None, python: str = sys.executable) -> Path:
    """flash-attn 2 as its wheel lays it out: `flash_attn/` importing `flash_attn_2_cuda*.so`."""
    write_distribution(root, "flash-attn", version, {
        "flash_attn/__init__.py": f'__version__ = "{version}"\n\nimport flash_attn_2_cuda\n',
    })
    suffix = target_ext_suffix(python)
    if symbol is not None:
        extension_needing_symbol(root, "flash_attn_2_cuda", symbol, suffix)
    if needed is not None:
        extension_needing_library(root, "flash_attn_2_cuda", needed, suffix)
    return root


def fake_module_dist(root: Path, name: str, version: str, module: str, body: str) -> Path:
    """A pure-Python distribution whose top-level `module` runs `body` when imported."""
    return write_distribution(root, name, version, {f"{module}.py": body})


# Bodies of modules that break the interpreter that imports them, each a different way.
SEGFAULT = "import ctypes\n\nctypes.string_at(0)\n"
ABORT = "import os\n\nos.abort()\n"
HARD_EXIT = "import os\n\nos._exit(3)\n"
SYS_EXIT = "import sys\n\nsys.exit(3)\n"


def hang(pid_file: Path) -> str:
    """A module that starts a grandchild (to prove the whole process group dies), then hangs."""
    return (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)\n"
    )


def process_gone(pid: int) -> bool:
    """True if `pid` has exited (a zombie waiting for a reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def find_python(minor: str) -> Optional[str]:
    """A working `python3.N` from PATH, or from pyenv when its shim is not the active version."""
    exe = shutil.which(f"python{minor}")
    if exe and _runs(exe):
        return exe
    pyenv = shutil.which("pyenv")
    if pyenv:
        done = subprocess.run([pyenv, "prefix", minor], capture_output=True, text=True, check=False)
        candidate = Path(done.stdout.strip() or "/nonexistent") / "bin" / f"python{minor}"
        if done.returncode == 0 and _runs(str(candidate)):
            return str(candidate)
    return None


def _runs(exe: str) -> bool:
    try:
        done = subprocess.run([exe, "-c", "pass"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
