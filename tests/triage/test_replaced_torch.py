"""pip replacing the installed torch while installing a package with compiled torch extensions:
the remedy is that package's release whose metadata requires the installed torch (read from
data/ext_torch.yaml, never typed here)."""

from __future__ import annotations

from packaging.version import Version

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage import ext_torch
from fadoctor.triage.diagnose import triage

# written for this test, in pip's words
LOG = ("pip install -U xformers\n"
       "Installing collected packages: torch, xformers\n"
       "  Attempting uninstall: torch\n"
       "    Found existing installation: torch 2.4.1\n"
       "    Uninstalling torch-2.4.1:\n")


def test_the_release_requiring_the_installed_torch_is_pinned(matrix: Matrix) -> None:
    top = triage(LOG, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    newest = ext_torch.releases_for("xformers", Version("2.4.1"))[-1][0]
    assert f"xformers=={newest}" in " ".join(c for r in top.remedies for c in r.commands)


def test_asking_for_torch_by_name_is_not_this(matrix: Matrix) -> None:
    text = LOG.replace("pip install -U xformers", "pip install -U torch xformers")
    assert all(d.category != Category.VERSION_CONFLICT for d in triage(text, matrix).diagnosis)


def test_no_torch_the_package_asks_for_pins_the_release_for_the_installed_one(
        matrix: Matrix) -> None:
    text = ("My env is CUDA 12.4 with pytorch 2.4\nERROR: Could not find a version that satisfies "
            "the requirement torch>=2.8 (from xformers)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    fits = ext_torch.releases_for("xformers", Version("2.4"))  # any 2.4.x
    assert f"xformers=={fits[-1][0]}" in " ".join(c for r in top.remedies for c in r.commands)


def test_a_windows_entry_point_missing_from_another_packages_pyd(matrix: Matrix) -> None:
    text = ("torch 2.7.0+cu126\nThe procedure entry point could not be located in the dynamic link "
            "library Z:\\ComfyUI\\python_embeded\\Lib\\site-packages\\xformers\\_C.pyd\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH and "xformers" in top.message
