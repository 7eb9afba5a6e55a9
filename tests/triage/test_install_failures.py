"""Install failures read from their own words: pip's invalid wheel, gcc's internal compiler error
(not the kernel's kill), composable_kernel failing for an arch outside it, and a FLASH_ATTENTION_*
variable setup.py never reads; a Windows path keeps Linux wheels out of the remedies."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_api import api


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)


def test_an_invalid_wheel_file(matrix: Matrix) -> None:
    text = ("ERROR: Wheel 'flash-attn' located at /data/wheels/flash_attn-2.8.3-cp312-cp312-linux_x86_64"
            ".whl is invalid.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.WRONG_WHEEL and "Git LFS" in top.message
    assert "head -c 200 /data/wheels/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl" in _said(top)


def test_on_windows_no_linux_wheel_is_offered(matrix: Matrix) -> None:
    text = ("torch 2.6.0+cu124\nERROR: Wheel 'flash-attn' located at C:\\w\\flash_attn-2.7.4-"
            "cp310-cp310-win_amd64.whl is invalid.\n")
    assert "linux_x86_64.whl" not in _said(triage(text, matrix).diagnosis[0])


def test_gccs_internal_compiler_error_is_the_compiler(matrix: Matrix) -> None:
    text = ("nvcc: Cuda compilation tools, release 12.4, V12.4.131\nBuilding wheel for flash-attn\n"
            "csrc/flash_attn/src/flash_fwd_hdim64_fp16_sm80.cu:12:1: internal compiler error: in "
            "maybe_undo_parenthesized_ref, at cp/semantics.c:1740\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN and "compiler crashed" in top.message
    assert "export CC=gcc-13 CXX=g++-13" in _said(top)  # nvcc 12.4's host_config.h bound


def test_an_internal_compiler_error_killed_is_memory(matrix: Matrix) -> None:
    text = ("Building wheel for flash-attn\ng++: internal compiler error: Killed (program "
            "cc1plus)\n")
    assert triage(text, matrix).diagnosis[0].category == Category.BUILD_RESOURCES


def test_composable_kernel_failing_for_an_arch_outside_it(matrix: Matrix) -> None:
    text = ("GPU: GFX1151\nerror: use of undeclared identifier 'CK_TILE_BUFFER_RESOURCE_3RD_DWORD'"
            "\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.ROCM and "gfx1151" in top.message


def test_a_flag_setup_py_never_reads(matrix: Matrix) -> None:
    assert "FLASH_ATTENTION_FORCE_BUILD" in api("flash_attn").environment
    text = ("FLASH_ATTENTION_BUILD_FROM_SOURCE=1 pip install flash-attn --no-build-isolation\n"
            "Precompiled wheel not found. Building from source...\n")
    said = _said(triage(text, matrix).diagnosis[0])
    assert "reads no FLASH_ATTENTION_BUILD_FROM_SOURCE" in said
    assert "FLASH_ATTENTION_FORCE_BUILD=TRUE" in said


def test_a_ck_device_op_refusing_a_pre_mi200_gpu(matrix: Matrix) -> None:
    text = ("It works on my MI250 but fails on the Mi50:\nRuntimeError: DeviceGroupedMultihead"
            "AttentionForward_Xdl_CShuffle_V2<256, 128, 128, 32, 8, 8> does not support this "
            "problem\n")
    assert triage(text, matrix).diagnosis[0].category == Category.ROCM
    # on an MI250 alone the same words are about the problem's shape, not the GPU
    alone = text.replace("It works on my MI250 but fails on the Mi50:\n", "GPU: MI250X\n")
    assert all(d.category != Category.ROCM for d in triage(alone, matrix).diagnosis)


def test_flash_attention_2_asked_with_only_flash_attn_4(matrix: Matrix) -> None:
    text = ("- `transformers==5.3.0`\n- `flash-attn-4==4.0.0b4`\n"
            'model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="flash_attention_2")\n')
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert 'attn_implementation="flash_attention_4"' in (top.remedies[0].code or "")
    assert "transformers>=5.4.0" in " ".join(top.remedies[0].commands)


def test_fa3_on_a_blackwell_gpu_in_prose(matrix: Matrix) -> None:
    text = "Running FA3 on GB200 (sm_100) gives CUDA error: unspecified launch failure\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "Blackwell" in top.message


def _enoent(path: str) -> str:
    return ("ERROR: Could not install packages due to an OSError: [Errno 2] No such file or "
            f"directory: '{path}'\n")


def test_a_windows_path_over_max_path_is_long_paths(matrix: Matrix) -> None:
    # written for this test: 260 characters with single backslashes (doubled in pip's repr)
    deep = "C:\\Users\\u\\AppData\\Local\\Temp\\pip-install-x\\flash-attn_" + "a" * 32 + "\\csrc\\"
    path = (deep + "b" * (259 - len(deep)) + ".h")[:260]
    top = triage(_enoent(path.replace("\\", "\\\\")), matrix).diagnosis[0]
    assert top.category == Category.PLATFORM_UNSUPPORTED
    assert "LongPathsEnabled" in " ".join(top.remedies[0].commands)


def test_a_short_missing_path_is_not_long_paths(matrix: Matrix) -> None:
    said = triage(_enoent("C:\\\\Users\\\\u\\\\x.h" + "\\\\y" * 90), matrix).diagnosis
    assert all("longer than Windows allows" not in d.message for d in said)


def test_another_packages_wheel_for_another_platform_names_that_package(matrix: Matrix) -> None:
    # written for this test, in pip's words, on an Arm host
    text = ("Trying on a GB200 node.\nnvidia_cutlass_dsl-4.0.0.dev1-cp312-cp312-manylinux_2_28_x86_64"
            ".whl is not a supported wheel on this platform.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.WRONG_WHEEL
    said = _said(top)
    assert "--only-binary nvidia-cutlass-dsl nvidia-cutlass-dsl" in said and "aarch64" in said
    assert "flash-attn" not in said


def test_a_symbol_missing_from_another_packages_binary_reinstalls_that_package(
        matrix: Matrix) -> None:
    text = ("ImportError: cutlass/python/CuTeDSL/cutlass/_mlir/_mlir_libs/_mlirDialectsCuda.cpython-"
            "310-aarch64-linux-gnu.so: undefined symbol: mlirTypeIsACudaLaunchConfigType\n")
    top = triage(text, matrix).diagnosis[0]
    assert "--force-reinstall --no-cache-dir nvidia-cutlass-dsl" in " ".join(top.remedies[0].commands)
    assert "flash-attn" not in _said(top)


def test_a_windows_procedure_not_found_is_a_wheel_for_another_torch(matrix: Matrix) -> None:
    text = ("torch 2.7.1+cu128 on Windows 11\nImportError: DLL load failed while importing "
            "flash_attn_2_cuda: The specified procedure could not be found.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert "--no-build-isolation --no-cache-dir" in _said(top) and "sdpa" in _said(top)


def test_a_windows_missing_dependency_dll_is_not_read_as_a_torch_mismatch(matrix: Matrix) -> None:
    text = ("ImportError: DLL load failed while importing flash_attn_2_cuda: The specified module "
            "could not be found.\n")
    assert triage(text, matrix).diagnosis[0].category != Category.TORCH_VERSION_MISMATCH


def test_an_arm_host_is_offered_no_x86_64_wheel(matrix: Matrix) -> None:
    text = ("GPU: NVIDIA GB10\nPyTorch: 2.10.0+cu130\nWhere is the flash-attn wheel for torch "
            "2.10? flash-attn fails to find a symbol.\n")
    said = " ".join(_said(d) for d in triage(text, matrix).diagnosis)
    assert "x86_64" not in said.replace("Linux x86_64", "")


def test_a_symbol_not_found_in_prose_is_a_torch_mismatch(matrix: Matrix) -> None:
    text = ("PyTorch: 2.10.0+cu130\nflash-attn installed with no issues, but it is failing to find "
            "a symbol within the package\n")
    assert triage(text, matrix).diagnosis[0].category == Category.TORCH_VERSION_MISMATCH


def test_a_binary_named_before_undefined_symbol_without_a_colon_is_its_package(
        matrix: Matrix) -> None:
    text = ("PyTorch 2.12.1+cu130\n1. sm100/common_ops.abi3.so — undefined symbol (PyTorch C10 ABI "
            "mismatch)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert "sgl-kernel" in _said(top) and "flash-attn" not in _said(top)


def test_an_arm_wheel_linked_in_prose_is_not_an_arm_host(matrix: Matrix) -> None:
    from fadoctor.triage.context import Context
    from fadoctor.triage.observed import Observed
    from fadoctor.triage.text import split
    linked = split("wheel: [direct link aarch64](https://example.org/x-linux_aarch64.whl)\n")
    assert Context(linked, Observed(), matrix).arm_host is None
    said = split("| Arch | aarch64 |\n")
    assert Context(said, Observed(), matrix).arm_host is not None


def test_a_missing_cuda_runtime_of_another_packages_binary_names_that_package(
        matrix: Matrix) -> None:
    text = ("Attempted: /v/lib/python3.12/site-packages/sgl_kernel/sm100/common_ops.abi3.so\n"
            "- ImportError: libnvrtc.so.12: cannot open shared object file: No such file or "
            "directory\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.CUDA_RUNTIME_MISMATCH and "sgl-kernel" in top.message
    assert "flash-attn" not in _said(top)
