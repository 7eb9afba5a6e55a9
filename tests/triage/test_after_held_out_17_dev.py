"""Mechanisms taken up from held_out_17's development half: a number format the GPU's arch lacks
(ptxas' bf16/fp8 features, Triton's fp8e4nv, the bf16-less cutlass dispatch on pre-Ampere GPUs),
a Hub kernel with no build variant for this system, Python.h missing from Windows' embedded
Python, a foreign package's wheel refused for its Python tag, torch's own toolkit-mismatch
numbers, and nvcc's arch message retyped."""

from __future__ import annotations

from tests.helpers.triage_said import said as _said
from tests.helpers.triage_said import top as _top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_ptxas_refusing_bf16_below_sm80_is_a_dtype_with_fp16_the_way_out(matrix: Matrix) -> None:
    text = ("Training on a Tesla T4\nRuntimeError: Internal Triton PTX codegen error:\n"
            "ptxas /tmp/compile-ptx-src-1, line 100; error   : Feature '.bf16' requires .target "
            "sm_80 or higher\n")
    top = _top(text, matrix)
    assert top.category == Category.DTYPE_UNSUPPORTED
    assert "float16" in _said(top) and "including_emulation" in _said(top)


def test_ptxas_fp8_and_other_features_name_the_target(matrix: Matrix) -> None:
    fp8 = _top("ptxas error   : Feature 'cvt.e4m3x2' requires .target sm_89 or higher\n", matrix)
    assert fp8.category == Category.DTYPE_UNSUPPORTED and "sm_89" in fp8.message
    other = _top("ptxas error   : Feature 'redux.sync' requires .target sm_80 or higher\n", matrix)
    assert other.category == Category.GPU_UNSUPPORTED


def test_triton_fp8e4nv_below_sm89(matrix: Matrix) -> None:
    text = ("torch.compile on my A100 fails:\nValueError(\"type fp8e4nv not supported in this "
            "architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")\n")
    top = _top(text, matrix)
    assert top.category == Category.DTYPE_UNSUPPORTED
    assert "float8_e4m3fn" in top.message and "sm_89" in top.message
    assert "float8_e5m2" in _said(top)


def test_cutlass_no_kernel_on_a_pre_ampere_gpu_is_bf16(matrix: Matrix) -> None:
    """The GPU glued to CJK prose and a lower-case memory size ("2080ti22g") is still found."""
    text = ("RuntimeError: cutlassF: no kernel found to launch!\n\n"
            "显卡为2080ti22g\uff0ccuda12.4\uff0cpytorch2.1.2\n")
    top = _top(text, matrix)
    assert top.category == Category.DTYPE_UNSUPPORTED and "sm_75" in top.message
    assert "torch_dtype=torch.float16" in _said(top)
    # on an Ampere GPU the same words are not a dtype question
    ampere = triage("RuntimeError: cutlassF: no kernel found to launch!\nGPU: A100\n", matrix)
    assert all(d.category != Category.DTYPE_UNSUPPORTED for d in ampere.diagnosis[:1])


def test_a_hub_kernel_without_a_build_for_this_cpu(matrix: Matrix) -> None:
    text = ("FileNotFoundError: Kernel at path `/u/.cache/huggingface/hub/models--someone--flash-"
            "attention-3/snapshots/b4c4` does not have build: torch210-cxx11-cu126-aarch64-linux\n")
    top = _top(text, matrix)
    assert top.category == Category.PLATFORM_UNSUPPORTED
    assert "someone/flash-attention-3" in _said(top) and "aarch64" in top.message
    x86 = _top("Kernel `kernels-community/flash-attn3` at revision main does not have build: "
               "torch29-cxx11-cu130-x86_64-linux\n", matrix)
    assert x86.category == Category.TORCH_VERSION_MISMATCH
    assert "torch 2.9 with cu130" in x86.message


def test_python_h_missing_from_windows_embedded_python(matrix: Matrix) -> None:
    text = ("Cannot find Python.h\n- **Exception Type:** subprocess.CalledProcessError\n"
            "'/IF:\\\\comfy\\\\ComfyUI_windows_portable\\\\python_embeded\\\\Include'\n"
            "- **Python Version:** 3.11.8 (tags/v3.11.8:db85d51) [MSC v.1937 64 bit (AMD64)]\n"
            "- **Embedded Python:** true\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN
    assert "include and libs folders" in _said(top) and "python_embeded" in _said(top)
    msvc = _top("C:\\x\\main.c(5): fatal error C1083: Cannot open include file: 'Python.h': No "
                "such file or directory\n", matrix)
    assert "python.org installer" in _said(msvc)
    linux = _top("fatal error: Python.h: No such file or directory\nPython 3.10.12\n", matrix)
    assert "python3.10-dev" in _said(linux)


def test_a_foreign_wheel_refused_for_its_python_tag(matrix: Matrix) -> None:
    text = ("ERROR: xformers-0.0.14.dev0-cp37-cp37m-linux_x86_64.whl is not a supported wheel on "
            "this platform.\n")
    top = _top(text, matrix)
    assert "CPython 3.7 (cp37)" in top.message
    assert "matching Python" in _said(top) and "--only-binary xformers" in _said(top)


def test_torchs_toolkit_mismatch_names_both_versions(matrix: Matrix) -> None:
    text = ("RuntimeError:\nThe detected CUDA version (12.0) mismatches the version that was used "
            "to compile\nPyTorch (11.7). Please make sure to use the same CUDA versions.\n")
    said = _said(_top(text, matrix))
    assert "CUDA 11.7 toolkit" in said and "export CUDA_HOME=/usr/local/cuda-11.7" in said
    assert "built for CUDA 12" in said


def test_nvccs_arch_message_retyped_in_a_title(matrix: Matrix) -> None:
    top = _top("\"nvcc fatal : Unsupported gpu architechture 'compute_89'\" with docker image\n",
               matrix)
    assert top.category == Category.BUILD_TOOLCHAIN
    assert ">= 11.8" in _said(top)


def test_cuda_available_true_clears_the_driver_number(matrix: Matrix) -> None:
    """vLLM's collect_env pads its keys; torch saying CUDA is available proves the driver runs
    torch's CUDA (a Jetson's driver is numbered apart from the desktop table)."""
    env = ("PyTorch version              : 2.10.0+cu130\nCUDA used to build PyTorch   : 13.0\n"
           "Is CUDA available            : {}\nGPU models and configuration : GPU 0: NVIDIA Thor\n"
           "Nvidia driver version        : 580.00\n")
    text = "[Bug]: Jetson Thor: Value 'sm_110a' is not defined for option 'gpu-name'\n" + env
    top = _top(text.format("True"), matrix)
    assert top.category == Category.BUILD_TOOLCHAIN
    assert "TRITON_PTXAS_BLACKWELL_PATH" in _said(top) and "ptxas" in top.message
    unavailable = triage(env.format("False"), matrix)
    assert unavailable.diagnosis[0].category == Category.DRIVER_TOO_OLD


def test_tensorrt_dropping_the_gpus_arch(matrix: Matrix) -> None:
    text = ("Using Tesla V100 SXM2 16GB.\n[TRT] [E] IBuilder::buildSerializedNetwork: Error Code 9: "
            "API Usage Error (Target GPU SM 70 is not supported by this TensorRT release.)\n")
    top = _top(text, matrix)
    assert top.category == Category.GPU_UNSUPPORTED and "Volta" in top.message
    assert "TensorRT 10.4 or older" in _said(top)
    other = _top("Target GPU SM 61 is not supported by this TensorRT release.\n", matrix)
    assert "support matrix lists SM 61" in _said(other)


def test_flashinfer_xqa_head_dim(matrix: Matrix) -> None:
    text = "ValueError: Invalid head_dim: 512, must be divisible by 16 and in range [16, 256]\n"
    top = _top(text, matrix)
    assert top.category == Category.HEAD_DIM_UNSUPPORTED and "512" in top.message
    assert "use_tensor_cores=True" in _said(top)


def test_a_program_on_the_cpu_with_a_gpu_named_has_cpu_torch(matrix: Matrix) -> None:
    """The torch offered has kernels for the GPU: a GTX 980 (sm_52) gets a CUDA 12 build, which
    keeps sm_50, not the newest CUDA 13 one, which starts at sm_75."""
    text = (">> Using device_type cpu\nMy GPU: GTX 980, Windows 10\nNVIDIA-SMI 581.29  Driver "
            "Version: 581.29  CUDA Version: 13.0\n")
    top = _top(text, matrix)
    assert top.category == Category.TORCH_CPU_ONLY
    first = top.remedies[0]
    assert "+cu12" in " ".join(first.commands)
    # a CUDA build stated points elsewhere (the driver), not at a CPU torch
    cuda = triage("torch.cuda.is_available() returns False\ntorch 2.7.1+cu128\nRTX 5080\n", matrix)
    assert all(d.category != Category.TORCH_CPU_ONLY for d in cuda.diagnosis)


def test_black_images_from_a_model_forced_to_fp16(matrix: Matrix) -> None:
    text = ("black image with --fp16-unet\npython_embeded\\python.exe -s ComfyUI\\main.py "
            "--windows-standalone-build --fp16-unet\nall works fine without it\n")
    top = _top(text, matrix)
    assert top.category == Category.NUMERICS and "65504" in top.message
    assert "drop --fp16-unet" in _said(top) and "--no-half-vae" in _said(top)
    # black images alone (no forced half precision) are not this mechanism
    assert not any("65504" in d.message for d in triage("the images are black\n", matrix).diagnosis)


def test_a_retold_capability_floor_above_the_generation_named(matrix: Matrix) -> None:
    text = ("Why isn't Pascal supported?\nI got a message saying nothing under CUDA Compute 7.0 "
            "can be used\n")
    top = _top(text, matrix)
    assert top.category == Category.GPU_UNSUPPORTED
    assert "a Pascal GPU is older" in top.message and "7.0 or newer" in _said(top)
    # a generation above the floor is not refused
    assert not triage("On Hopper: nothing under CUDA Compute 7.0 can be used\n", matrix).diagnosis


def test_flash_attns_build_failing_on_ninja_alone_is_memory_first(matrix: Matrix) -> None:
    text = ("pip install flash-attn --no-build-isolation\nsubprocess.CalledProcessError: Command "
            "'['ninja', '-v']' returned non-zero exit status 1.\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_RESOURCES and "MAX_JOBS=" in _said(top)
    # a compiler error in the log is the cause instead
    shown = triage(text + "csrc/flash_attn/flash_api.cpp:10:5: error: 'x' was not declared\n",
                   matrix)
    assert all(d.category != Category.BUILD_RESOURCES for d in shown.diagnosis[:1])


def test_installed_into_another_interpreter(matrix: Matrix) -> None:
    text = ("ValueError: FlashAttention2 has been toggled on, but it cannot be used due to the "
            "following error: the package flash_attn seems to be not installed.\n"
            "C:\\Users\\me>pip install flash-attn --no-build-isolation\n"
            "Requirement already satisfied: flash-attn in c:\\python312\\lib\\site-packages "
            "(2.5.9.post1)\nComfyUI_windows_portable\\python_embeded\\python.exe main.py\n")
    top = _top(text, matrix)
    assert top.category == Category.NOT_INSTALLED
    assert "c:\\python312\\lib\\site-packages" in top.message
    assert "python_embeded\\python.exe -m pip" in _said(top)
    # pip's line about another package is no evidence
    other = triage(text.replace("flash-attn in", "einops in"), matrix)
    assert all("another Python" not in d.message for d in other.diagnosis)


def test_a_stated_fa4_release_with_a_known_run_time_defect(matrix: Matrix) -> None:
    """The matrix's defect (from the upstream commit that fixed it) of the flash-attn-4 release
    an install line pins with its extra, on the GPU the defect needs."""
    text = ("`_flash_attn_fwd` fails at launch for `head_dim < 32` on B200\n"
            "uv pip install torch==2.12.0 \"flash-attn-4[cu13]==4.0.0b14\"\n"
            "RuntimeError: CUDA Error: cudaErrorInvalidValue\n")
    top = _top(text, matrix)
    assert top.category == Category.KERNEL_FAILURE
    assert "fa4-sm100-small-head-dim-smem-overflow" in top.message
    assert "flash-attn-4>=4.0.0b16" in _said(top)
    # a release past the fix, or a GPU the defect does not reach, is not it
    for other in (text.replace("4.0.0b14", "4.0.0b20"), text.replace("B200", "H100")):
        assert all("small-head-dim" not in d.message for d in triage(other, matrix).diagnosis)


def test_torch_beside_a_triton_of_another_minor(matrix: Matrix) -> None:
    """torch's Triton pin from its wheels' metadata (data/ext_torch.yaml torch_triton)."""
    text = ("torch 2.8.0, triton 3.2.0\ntorch._inductor.exc.InductorError: ImportError: cannot "
            "import name 'triton_key' from 'triton.compiler.compiler'\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert "built against Triton 3.4" in top.message
    assert "triton==3.4.0" in _said(top) and "torch to 2.6.0" in _said(top)
    # on Windows a torch pinned to Triton 2.x has no Windows Triton: move torch instead
    windows = _top("ModuleNotFoundError: No module named 'triton.common'\ntriton :3.1.0\n"
                   "Windows 10\ntorch=2.3.1+cu121\n", matrix)
    assert "torch to 2.5.1" in _said(windows) and "triton==" not in _said(windows)
    # the pair torch pins is no conflict
    assert not any(d.category == Category.VERSION_CONFLICT for d in triage(
        text.replace("triton 3.2.0", "triton 3.4.0"), matrix).diagnosis)


def test_tl_dot_trans_b_is_the_pre_release_triton_api(matrix: Matrix) -> None:
    top = _top("TypeError: dot() got an unexpected keyword argument 'trans_b'\n", matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert "tl.trans(b)" in _said(top)


def test_no_kernel_image_with_nothing_named_asks_which_binary(matrix: Matrix) -> None:
    top = _top("RuntimeError: CUDA error: no kernel image is available for execution on the "
               "device\n", matrix)
    assert top.category == Category.NO_KERNEL_IMAGE
    assert "torch.cuda.get_arch_list()" in _said(top) and "flash-attn" not in _said(top)


def test_a_prebuilt_wheel_failing_in_ngcs_container(matrix: Matrix) -> None:
    text = ("installation for nvcr images\nI use the nvcr base image: "
            "nvcr.io/nvidia/pytorch:23.06-py3.\npip install causal-conv1d failed as follows.\n")
    assert "CAUSAL_CONV1D_FORCE_BUILD=TRUE" in _said(_top(text, matrix))
    # the import failing instead: the rebuild it offers skips the wheel download too
    imported = text + ("ImportError: /usr/lib/python3/dist-packages/causal_conv1d_cuda.cpython-310-"
                       "x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    assert "CAUSAL_CONV1D_FORCE_BUILD=TRUE" in _said(_top(imported, matrix))
    # a build that ran has its own cause: not this one
    assert all(d.category != Category.TORCH_VERSION_MISMATCH
               for d in triage(text + "Building wheel for causal-conv1d (setup.py)\nerror\n",
                               matrix).diagnosis[:1])


def test_nvcc_and_runtime_headers_of_different_cuda_releases(matrix: Matrix) -> None:
    text = ("FlashInfer JIT fails: CUDA compiler and toolkit headers are incompatible\n"
            "PyTorch: 2.11.0+cu130\ntorch.version.cuda: 13.0\nNVCC: 13.3.33\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN
    assert "nvcc 13.3" in top.message and "nvidia-cuda-nvcc==13.0.*" in _said(top)
    cu12 = _top(text.replace("cu130", "cu126").replace("13.0", "12.6"), matrix)
    assert "nvidia-cuda-nvcc-cu12==12.6.*" in _said(cu12)


def test_a_nan_with_flash_attention_and_no_dtype_named(matrix: Matrix) -> None:
    top = _top("I apply flash attention to MHA, but the loss becomes NaN during training.\n",
               matrix)
    assert top.category == Category.NUMERICS
    assert "fp16 or bf16 only" in _said(top) and "xformers" in _said(top)


def test_flex_attention_with_no_valid_kernel_choice(matrix: Matrix) -> None:
    text = ("  File \"/usr/lib/python3/torch/_inductor/kernel/flex_attention.py\", line 2129, in "
            "flex_attention_backward\ntorch._inductor.exc.LoweringException: NoValidChoicesError: "
            "No choices to select, please consider adding ATEN into max_autotune_gemm_backends\n")
    top = _top(text, matrix)
    assert top.category == Category.KERNEL_FAILURE
    assert "kernel_options" in _said(top) and "max-autotune" in _said(top)


def test_a_module_in_a_folder_without_init_is_not_installed(matrix: Matrix) -> None:
    """find_packages() skips flash_attn/ops/triton/ before v2.2.0 (no __init__.py): its
    rotary.py, in the 2.1.2 tag, is not in the 2.1.2 wheel (tools/gen_fa_api.py installed())."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import gen_fa_api
    paths = ["flash_attn/__init__.py", "flash_attn/ops/__init__.py",
             "flash_attn/ops/triton/rotary.py", "flash_attn/ops/fused_dense.py"]
    assert gen_fa_api.installed(paths) == ["flash_attn/__init__.py", "flash_attn/ops/__init__.py",
                                           "flash_attn/ops/fused_dense.py"]
    top = _top("ModuleNotFoundError: No module named 'flash_attn.ops.triton.rotary'\n"
               "flash-attn 2.1.2\n", matrix)
    assert "flash-attn>=2.2.0" in _said(top)
