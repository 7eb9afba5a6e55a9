"""Defects the held_out_16 run showed, fixed after its figure was taken: a wrapper's floor on
flash-attn, csrc/layer_norm's kernel headers named without their folder, a stated toolkit below
the setup.py floor of a failed build, and SageAttention's module for the GPU's own arch missing."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _said(found: object) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in found.remedies)  # type: ignore


def test_a_wrappers_floor_names_the_release(matrix: Matrix) -> None:
    for line in ("AssertionError: Paged attention required Flash Attention 2.5.7 or later",
                 "ImportError: flash-attn >= 2.5.7 required", "requires flash_attn>=2.5.7"):
        top = triage(f"{line}\n", matrix).diagnosis[0]
        assert top.category == Category.VERSION_CONFLICT, line
        assert "flash-attn>=2.5.7" in _said(top), line


def test_a_floor_met_by_the_installed_release_is_an_import_failure(matrix: Matrix) -> None:
    text = "flash_attn 2.6.3\nValueError: requires flash_attn>=2.5.7\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH and "does not import" in top.message


def test_layer_norms_kernel_header_names_its_extension(matrix: Matrix) -> None:
    text = "CUDA Error: invalid device function /tmp/pip-req-build-x/ln_fwd_kernels.cuh 236\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.message.startswith("dropout_layer_norm")
    assert "pip uninstall dropout_layer_norm" in _said(top)


def test_a_toolkit_below_the_newest_releases_floor(matrix: Matrix) -> None:
    text = ("I have cuda 11.5. When I do `pip install flash-attn --no-build-isolation`:\n"
            "RuntimeError: Error compiling objects for extension\n"
            "ERROR: Failed building wheel for flash-attn\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN and "below what" in top.message
    assert "CUDA_HOME" in _said(top)


def test_a_toolkit_above_the_floor_is_not_blamed(matrix: Matrix) -> None:
    text = ("CUDA 12.4\npip install flash-attn --no-build-isolation\n"
            "ERROR: Failed building wheel for flash-attn\n")
    assert not [d for d in triage(text, matrix).diagnosis if "below what" in d.message]


def test_sageattentions_module_for_the_gpus_own_arch(matrix: Matrix) -> None:
    text = ("i have a 4090\nError running sage attention: SM89 kernel is not available. Make sure "
            "you GPUs with compute capability 8.9., using pytorch attention instead.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NO_KERNEL_IMAGE
    assert "from sageattention import sm89_compile" in _said(top)


def test_pips_inconsistent_name_is_a_renamed_distribution(matrix: Matrix) -> None:
    text = ("Discarding git+https://github.com/o/r.git#egg=old-name&subdirectory=sub: Requested "
            "new-name from git+https://github.com/o/r.git#egg=old-name&subdirectory=sub has "
            "inconsistent name: expected 'old-name', but metadata has 'new-name'\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "now declares itself 'new-name'" in top.message and "pin the commit" in _said(top)


def test_a_persons_own_install_command_is_not_a_floor(matrix: Matrix) -> None:
    text = "I ran pip install flash-attn>=2.5.7 --no-build-isolation and it worked\n"
    assert not [d for d in triage(text, matrix).diagnosis if d.subject == "fa_floor"]
    top = triage("Please install flash-attn>=2.5.7 to use this.\n", matrix).diagnosis[0]
    assert top.subject == "fa_floor"
