"""A prebuilt wheel (flash-attn, causal-conv1d, mamba-ssm) on a container's or source build of
torch (a pre-release with a commit as its local version) fails to import: build it from source
with the package's own FORCE_BUILD variable. A released torch is left to the other mechanisms."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

_REPORT = ("After installing {wheel} errors happened in importing {module}.\n"
           "torch.__version__: '{torch}'\n")


@pytest.mark.parametrize("wheel, module, package, force", [
    ("causal_conv1d-1.0.2+cu122torch2.1cxx11abiTRUE-cp310-cp310-linux_x86_64.whl",
     "causal_conv1d", "causal-conv1d", "CAUSAL_CONV1D_FORCE_BUILD"),
    ("mamba_ssm-2.2.2+cu122torch2.3cxx11abiTRUE-cp310-cp310-linux_x86_64.whl", "mamba_ssm",
     "mamba-ssm", "MAMBA_FORCE_BUILD"),
])
@pytest.mark.parametrize("torch", ["2.1.0a0+4136153", "2.3.0a0+40ec155e58.nv24.03"])
def test_a_wheel_on_a_container_torch_is_built_here(wheel: str, module: str, package: str,
                                                   force: str, torch: str, matrix: Matrix) -> None:
    text = _REPORT.format(wheel=wheel, module=module, torch=torch)
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert package in top.message and torch in top.message
    commands = [c for r in top.remedies for c in r.commands]
    assert any(c.startswith(f"{force}=TRUE MAX_JOBS=") and c.endswith(
        f"pip install --no-build-isolation --no-cache-dir {package}") for c in commands)


@pytest.mark.parametrize("torch", ["2.1.0+cu121", "2.1.0", "2.6.0.dev20241112+cu124"])
def test_a_released_or_nightly_torch_is_not_this(torch: str, matrix: Matrix) -> None:
    text = _REPORT.format(wheel="causal_conv1d-1.0.2+cu122torch2.1cxx11abiTRUE-cp310-cp310-"
                          "linux_x86_64.whl", module="causal_conv1d", torch=torch)
    found = triage(text, matrix).diagnosis
    assert not any("container's or source build" in d.message for d in found)
