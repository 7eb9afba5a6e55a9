"""torch's C++ ABI as a report states it, another package's binary of the other ABI in a source
checkout, and nvidia-container-cli refusing an image whose CUDA the driver does not meet. The
texts are written for these tests in the shapes Python, the loader and the CLI print."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_an_old_abi_binary_of_a_checkout_against_a_cxx11_torch(matrix: Matrix) -> None:
    text = ("ImportError: /workspace/src/vllm/_C.abi3.so: undefined symbol: "
            "_ZN5torch3jit17parseSchemaOrNameERKSsb\n"
            "Version: 2.5.1+gita8d6afb\n"
            ">>> print(torch._C._GLIBCXX_USE_CXX11_ABI)\nTrue\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.CXX11_ABI_MISMATCH
    assert top.message.startswith("vllm:")
    said = _said(top)
    assert "_GLIBCXX_USE_CXX11_ABI=1" in said
    # a source-built torch is on no index: no command pins it
    assert "torch==2.5.1" not in said


def test_the_compile_flag_states_torch_abi(matrix: Matrix) -> None:
    text = ("  CXX_FLAGS= -D_GLIBCXX_USE_CXX11_ABI=0 -fabi-version=11\n"
            "ImportError: /opt/conda/lib/python3.10/site-packages/xformers/_C.so: undefined "
            "symbol: _ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_"
            "traitsIcESaIcEEE\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.CXX11_ABI_MISMATCH
    assert "xformers" in top.message


def test_a_container_whose_cuda_the_driver_does_not_meet(matrix: Matrix) -> None:
    text = ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please "
            "update your driver to a newer version, or use an earlier cuda container: unknown.\n"
            "Driver Version: 530.30.02\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DRIVER_TOO_OLD
    said = _said(top)
    assert "550.54.14" in said  # CUDA 12.4's own driver, from the matrix
    assert "CUDA 12.1 images" in said


def test_a_tesla_model_written_without_tesla(matrix: Matrix) -> None:
    # NVIDIA's table names it "Tesla P40"; people write "p40"
    text = "How do I disable flash_attn? I have p40 GPUs and it won't work.\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "Tesla P40" in top.message and "sm_61" in top.message


def test_another_package_built_for_another_cuda_names_that_package(matrix: Matrix) -> None:
    text = ("torch 2.0.1+cu118\n    from vllm import cuda_utils\n"
            "ImportError: libcudart.so.12: cannot open shared object file: No such file or "
            "directory\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.CUDA_RUNTIME_MISMATCH
    assert top.message.startswith("vllm's binary")
    assert "flash-attn" not in _said(top)


def test_a_cuda_runtime_named_in_a_title_against_torchs_cuda(matrix: Matrix) -> None:
    text = ("libcudart.so.13 required when installing vllm with torch-backend=cu129\n"
            "[pip3] torch==2.11.0+cu129\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.CUDA_RUNTIME_MISMATCH
    assert "CUDA 13" in top.message and "cu130" in _said(top)


def test_a_framework_falling_back_because_flash_attn_is_not_ready(matrix: Matrix) -> None:
    text = "[QwenVL] Flash-Attn auto mode: dependency not ready, using SDPA\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED


def test_a_name_model_code_binds_only_when_flash_attn_imports(matrix: Matrix) -> None:
    text = ("    assert flash_attn_unpadded_func is not None, (\n"
            "NameError: name 'flash_attn_unpadded_func' is not defined\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED


def test_an_invalid_kernel_image_without_versions_names_the_driver_floor_defects(
        matrix: Matrix) -> None:
    text = ("You are attempting to use Flash Attention 2.0 with a model not initialized on GPU. "
            "Make sure to move the model to GPU after initializing it on CPU with "
            "`model.to('cuda')`.\n"
            "Error during batch processing: CUDA error: device kernel image is invalid\n")
    result = triage(text, matrix)
    top = result.diagnosis[0]
    # the transformers warning is logged (the run went on); the CUDA error is the cause
    assert top.category == Category.DRIVER_TOO_OLD
    assert "2.8.2" in _said(top)
    # "Flash Attention 2.0" names a generation, not a flash-attn release
    assert "flash-attn==2.0" not in _said(top)


def test_another_packages_binary_names_the_torch_its_release_requires(matrix: Matrix) -> None:
    # vllm 0.3.2's wheel metadata requires torch==2.1.2 (data/ext_torch.yaml, from the index)
    text = ("torch : 2.2.1\nvllm: 0.3.2\n"
            "ImportError: /usr/local/lib/python3.10/dist-packages/vllm/_C.cpython-310-x86_64-linux-"
            "gnu.so: undefined symbol: _ZN2at4_ops15to_dtype_layout4callERKNS_6TensorE\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    said = _said(top)
    assert "torch==2.1.2" in said  # what vllm 0.3.2 requires
    assert "vllm==0.4.1" in said  # the newest release whose metadata requires torch 2.2.1


def test_an_unknown_binary_in_a_report_without_flash_attn_gets_no_flash_attn_remedy(
        matrix: Matrix) -> None:
    text = "ImportError: libfoo_ops.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\ntorch 2.6.0\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert "flash-attn" not in _said(top)


def test_a_torch_with_no_official_wheel_gets_a_community_wheel_of_its_python(
        matrix: Matrix) -> None:
    text = ("torch==2.9.1+cu128\nflash-attn==2.8.3\n"
            "ImportError: /venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-"
            "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEab\n")
    said = _said(triage(text, matrix).diagnosis[0])
    assert "cu128torch2.9-cp312-cp312" in said


def test_a_name_never_bound_with_flash_attn_installed_is_the_callers_check(
        matrix: Matrix) -> None:
    text = ("flash-attn 2.0.4 is installed\n"
            "NameError: name 'flash_attn_func' is not defined\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "import flash_attn, flash_attn_2_cuda" in _said(top)


def test_a_flash_attn_class_never_bound_names_the_releases_that_define_it(matrix: Matrix) -> None:
    # FlashMHA: flash_attn/flash_attention.py up to 1.0.9 (data/flash_attn_api.yaml)
    top = triage("NameError: name 'FlashMHA' is not defined\n", matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED
    assert "flash-attn==1.0.9" in _said(top)


def test_an_unrelated_name_never_bound_is_not_flash_attn(matrix: Matrix) -> None:
    said = triage("NameError: name 'rearrange' is not defined\n", matrix).diagnosis
    assert all("never bound" not in d.message for d in said)
