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


# pip's conflict lines, in the wordings of pip's install.py (20.2+, and "has requirement ...
# you'll have" before it) and of `pip check`; written for these tests
def test_pips_conflict_line_pins_the_release_built_for_the_torch_it_names(matrix: Matrix) -> None:
    text = ("ERROR: pip's dependency resolver does not currently take into account all the "
            "packages that are installed.\nxformers 0.0.28.post3 requires torch==2.5.1, but you "
            "have torch 2.6.0+cu124 which is incompatible.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT and "2.6.0" in top.message
    newest = ext_torch.releases_for("xformers", Version("2.6.0"))[-1][0]
    assert f"xformers=={newest}" in " ".join(c for r in top.remedies for c in r.commands)


def test_the_legacy_wording_for_another_requirement_names_both_ways_out(matrix: Matrix) -> None:
    text = ("ERROR: transformers 4.40.0 has requirement tokenizers<0.20,>=0.19, but you'll have "
            "tokenizers 0.15.2 which is incompatible.\n")
    top = triage(text, matrix).diagnosis[0]
    commands = [c for r in top.remedies for c in r.commands]
    assert top.category == Category.VERSION_CONFLICT
    assert commands == ['python -m pip install "tokenizers<0.20,>=0.19"',
                        "python -m pip install --upgrade transformers tokenizers==0.15.2"]


def test_a_conflict_outside_the_stack_is_not_a_cause(matrix: Matrix) -> None:
    text = "tensorflow 2.15.0 has requirement numpy<2.0.0, but you have numpy 2.1.3.\n"
    assert all(d.category != Category.VERSION_CONFLICT for d in triage(text, matrix).diagnosis)


def test_an_error_message_outranks_the_conflict_pip_printed_before_it(matrix: Matrix) -> None:
    text = ("flash-attn 2.5.8 requires torch>=2.3, but you have torch 2.2.0 which is "
            "incompatible.\nImportError: /usr/lib/python3.10/site-packages/flash_attn_2_cuda."
            "cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH


def test_no_release_for_the_installed_torch_offers_no_reinstall_that_finds_none(
        matrix: Matrix) -> None:
    text = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.0.1 with CUDA 1108 (you have 1.13.0+cu117)\n")
    assert not ext_torch.releases_for("xformers", Version("1.13.0"))
    top = triage(text, matrix).diagnosis[0]
    commands = [c for r in top.remedies for c in r.commands]
    oldest = min(Version(v) for v in ext_torch.table()["xformers"])
    assert f"the oldest, {oldest}" in top.remedies[0].summary
    assert not any("torch==1.13.0" in c for c in commands)
    # the CUDA its build line names as digits (1108: 11.8) picks the torch it was built for
    assert any("torch==2.0.1+cu118" in c and "whl/cu118" in c for c in commands)
