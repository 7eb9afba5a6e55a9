"""Mechanisms added or mended in session 49, each on the message as its program prints it: nvcc
refusing an architecture (a family-specific target, an arch the stated toolkit still compiles,
/usr/bin/nvcc first on PATH), a binary linking another CUDA major's library (ldd's form too),
cumm's CPU build, DeepSpeed's op pre-compile refusal, the THC header in a localised gcc message,
torch's arch list with the CUDA an arch needs, and pip's metadata step for a package other than
flash-attn."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.nvcc_run import NVCC, refused
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_real_nvcc_refusing_a_family_target(tmp_path: Path, matrix: Matrix) -> None:
    """nvcc's own refusal of a family-specific target it does not know: the 'f' is kept."""
    found = top(refused(tmp_path, "-arch=sm_131f"), matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "sm_131f" in found.message
    assert "nvcc --list-gpu-arch" in said(found)


def test_family_target_needs_cuda_12_9(matrix: Matrix) -> None:
    text = ("Warning: please use at least NVCC 12.9 for the best DeepGEMM performance\n"
            "NVCC compilation failed: nvcc fatal   : Unsupported gpu architecture 'sm_100f'\n")
    found = top(text, matrix)
    assert "sm_100f" in found.message and "12.9 or newer" in found.message
    assert "this nvcc (12.9)" not in found.message  # the nvcc named is not the one that ran
    assert ">= 12.9" in said(found)


def test_arch_need_is_nvcc_s_own_outside_flash_attn(matrix: Matrix) -> None:
    found = top("nvcc fatal : Unsupported gpu architecture 'compute_80'\n", matrix)
    assert "needs nvcc 11.0 or newer" in found.message
    assert "-gencode" in said(found)


def test_distro_nvcc_with_an_older_stated_cuda(matrix: Matrix) -> None:
    text = ("I am on Ubuntu 16.04 with an Nvidia P6000 GPU and Cuda 10.1.\n"
            "nvcc fatal   : Unsupported gpu architecture 'compute_61\n"
            "error: command '/usr/bin/nvcc' failed with exit status 1\n")
    found = top(text, matrix)
    assert "no longer compile" not in found.message  # CUDA 10 still compiles sm_61
    assert "/usr/bin/nvcc" in said(found) and "install CUDA" in said(found)
    assert "export CUDA_HOME=/usr/local/cuda" in said(found)


@pytest.mark.parametrize("line", ["\tlibcublas.so.12 => not found",
                                  "ImportError: libcublas.so.12: cannot open shared object file: "
                                  "No such file or directory"])
def test_another_major_s_library_for_an_unnamed_package(line: str, matrix: Matrix) -> None:
    found = top(f"my CUDA version is 11.7\n{line}\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "built for CUDA 12" in found.message and "CUDA 11" in found.message
    assert "flash-attn" not in said(found)  # the report never names it
    assert "Reinstall" in said(found) and "CUDA 11" in said(found)


def test_cumm_cpu_build(matrix: Matrix) -> None:
    text = ("ValueError: /io/include/tensorview/tensor.h(171) don't compiled with cuda\n"
            "I have installed cumm & cumm-cu111\n")
    found = top(text, matrix)
    assert found.category == Category.WRONG_WHEEL and "cumm" in found.message
    assert "uninstall -y cumm spconv" in said(found) and "cumm-cuXYZ" in said(found)


def test_deepspeed_pre_compile_refused(matrix: Matrix) -> None:
    text = ("DS_BUILD_OPS=1 pip install deepspeed==0.11.0\n"
            " [WARNING]  One can disable async_io with DS_BUILD_AIO=0\n"
            " [ERROR]  Unable to pre-compile async_io\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "async_io" in found.message
    assert "libaio" in said(found) and "DS_BUILD_AIO=0" in said(found)
    assert "ds_report" in said(found)


def test_deepspeed_abort_line_only(matrix: Matrix) -> None:
    """A traceback showing setup.py's abort line: the op is the one the report names."""
    text = ("[BUG] async_io error during installation of deepspeed 0.11.0\n"
            "  \u00d7 python setup.py egg_info did not run successfully.\n"
            '      abort(f"Unable to pre-compile {op_name}")\n')
    found = top(text, matrix)
    assert "async_io" in found.message and "g++" in said(found)


def test_thc_header_in_a_localised_gcc(matrix: Matrix) -> None:
    found = top("fatal error: THC/THC.h: \u6ca1\u6709\u90a3\u4e2a\u6587\u4ef6\u6216\u76ee\u5f55\n"
                "my torch is 2.0.1\n", matrix)
    assert "THC" in found.message and "1.11" in found.message


def test_torch_arch_list_names_the_cuda_the_arch_needs(matrix: Matrix) -> None:
    text = ("GeForce RTX 3070 with CUDA capability sm_86 is not compatible with the current "
            "PyTorch installation.\nThe current PyTorch install supports CUDA capabilities "
            "sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 compute_37.\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE
    assert "CUDA 11.1 or newer" in said(found)


def test_pip_metadata_step_names_the_package_it_builds(matrix: Matrix) -> None:
    text = ("Collecting pointnet2_ops\n  Using cached pointnet2_ops-3.0.0.tar.gz (1.1 MB)\n"
            "  Preparing metadata (setup.py) ... error\n  error: subprocess-exited-with-error\n"
            "  \u00d7 python setup.py egg_info did not run successfully.\n")
    found = top(text, matrix)
    assert "flash-attn" not in said(found)
    assert "pointnet2-ops" in said(found) or "pointnet2_ops" in said(found)


def test_c10_error_in_the_other_abi_for_a_checkout_build(matrix: Matrix) -> None:
    """Every torch defines c10::Error(SourceLocation, string) in its own ABI: an extension that
    misses the pre-C++11 form was built for the other ABI, read so where a GCC older than 5
    (which builds only that ABI) is in sight; elsewhere, as built for another torch."""
    text = ("  File \"/root/detectron2/detectron2/layers/deform_conv.py\", line 10, in <module>\n"
            "    from detectron2 import _C\nImportError: /root/detectron2/detectron2/_C.cpython-37m"
            "-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC1ENS_14SourceLocationERKSs\n")
    assert top(text, matrix).category == Category.TORCH_VERSION_MISMATCH  # no ABI in sight
    found = top(text + "I installed gcc 4.9 with yum install devtoolset-3\n", matrix)
    assert found.category == Category.CXX11_ABI_MISMATCH
    assert found.message.startswith("detectron2:")
    assert "_GLIBCXX_USE_CXX11_ABI=1" in said(found) and "flash-attn" not in said(found)


@pytest.mark.parametrize("text,windows", [
    ("    from mpi4py import MPI\nImportError: DLL load failed while importing MPI: The specified "
     "module could not be found.\n", True),
    ("    from mpi4py import MPI\nImportError: libmpi.so.40: cannot open shared object file: No "
     "such file or directory\n", False)])
def test_mpi4py_without_an_mpi(text: str, windows: bool, matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.NOT_INSTALLED and "mpi4py" in found.message
    assert "pip install impi-rt" in said(found)
    assert ("MS-MPI" in said(found)) == windows and ("pip install mpich" in said(found)) != windows


def test_torch_six_under_a_torch_older_than_the_code(matrix: Matrix) -> None:
    text = ("No module named 'torch._six'\npython 3.6.2\ncuda 9.0\npytorch 0.1.12\n"
            "File \".../fn.py\", line 5, in <module>\nfrom torch._six import string_classes\n")
    found = top(text, matrix)
    assert "older than the torch" in found.message and "Upgrade torch" in said(found)


def test_container_abcs_is_collections_abc(matrix: Matrix) -> None:
    found = top("ImportError: cannot import name 'container_abcs' from 'torch._six'\n"
                "env: win10, torch 1.9, cuda10.2\n", matrix)
    assert "no longer has container_abcs" in found.message
    assert "import collections.abc as container_abcs" in said(found)


def test_python_libs_missing_beside_an_embedded_python(matrix: Matrix) -> None:
    text = ("C:\\AI\\ComfyUI\\ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\triton\\"
            "windows_utils.py:315: UserWarning: Failed to find Python libs.\n"
            "  warnings.warn(\"Failed to find Python libs.\")\n")
    found = top(text, matrix)
    assert "python_embeded" in found.message and "include and libs" in said(found)


def test_nvcc_missing_in_a_runtime_image(matrix: Matrix) -> None:
    text = ("docker run -it --gpus all nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04 /bin/bash\n"
            "root@7c0be9bfaeec:/# nvcc --version\nbash: nvcc: command not found\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "docker pull nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04" in said(found)


def test_uv_takes_a_package_from_pytorch_s_index(matrix: Matrix) -> None:
    text = ("uv add torch==2.3.1 --index torch=<index>/whl/cu118\n"
            "error: Distribution `markupsafe==3.0.2 @ registry+<index>/whl/cu118` can't be "
            "installed because it doesn't have a source distribution or wheel for the current "
            "platform\n")
    found = top(text, matrix)
    assert found.category == Category.WRONG_WHEEL and "markupsafe" in found.message
    assert "explicit = true" in said(found) and "unsafe-best-match" in said(found)
    torch_itself = text.replace("markupsafe==3.0.2", "torch==2.3.1")
    assert all("PyTorch's index, which serves" not in d.message
               for d in triage(torch_itself, matrix).diagnosis)


REMOTE_TOKENIZER = """\
  File "/root/.cache/huggingface/modules/transformers_modules/internlm-chat-7b/\
tokenization_internlm.py", line 68, in __init__
    super().__init__(
  File "/usr/lib/python3.10/site-packages/transformers/tokenization_utils.py", line 366, in __init__
    self._add_tokens(self.all_special_tokens_extended, special_tokens=True)
AttributeError: 'InternLMTokenizer' object has no attribute 'sp_model'
"""


def test_remote_tokenizer_broken_by_transformers_4_34(matrix: Matrix) -> None:
    found = top(REMOTE_TOKENIZER, matrix)
    assert found.category == Category.VERSION_CONFLICT and "4.34" in found.message
    assert "pip install transformers==4.33.3" in said(found)
    older = REMOTE_TOKENIZER + "transformers version: 4.31.0\n"
    assert all("from the model's own code" not in d.message
               for d in triage(older, matrix).diagnosis)


def test_cutlass_without_a_named_gpu_is_bf16_below_sm80_at_most_implied(matrix: Matrix) -> None:
    found = top("RuntimeError: cutlassF: no kernel found to launch!\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "bfloat16" in found.message
    assert "float16" in said(found)
    on_ampere = triage("GPU: NVIDIA A100-SXM4-80GB\nRuntimeError: cutlassF: no kernel found to "
                       "launch!\n", matrix)
    assert all("bfloat16" not in d.message for d in on_ampere.diagnosis)


@pytest.mark.parametrize("quote", ["'", "\\'"])
def test_an_operator_without_an_mps_kernel(quote: str, matrix: Matrix) -> None:
    text = (f"NotImplementedError: The operator {quote}aten::roll{quote} is not currently "
            "implemented for the MPS device. If you want this op to be added in priority during "
            "the prototype phase of this feature, please comment on "
            "https://github.com/pytorch/pytorch/issues/77764.\n")
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "aten::roll" in found.message
    assert "export PYTORCH_ENABLE_MPS_FALLBACK=1" in said(found)
    assert "pip install --upgrade torch" in said(found)


def test_macos_c_symbol_expected_in_torch_s_dylib(matrix: Matrix) -> None:
    text = ("OSError: dlopen(/Users/a/.venv/lib/python3.11/site-packages/torchaudio/lib/"
            "_torchaudio.abi3.so, 0x0006): Symbol not found: _torch_library_impl\n"
            "  Referenced from: <984E2E32> /Users/a/.venv/lib/python3.11/site-packages/torchaudio/"
            "lib/_torchaudio.abi3.so\n  Expected in:     <8A7009C4> /Users/a/.venv/lib/python3.11/"
            "site-packages/torch/lib/libtorch_cpu.dylib\n")
    found = top(text, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert found.message.startswith("torchaudio needs a PyTorch symbol (torch_library_impl)")


@pytest.mark.parametrize("line", ["AssertionError: Torch not compiled with XPU enabled",
                                  "RuntimeError: PyTorch is not linked with support for xpu "
                                  "devices"])
def test_torch_without_xpu(line: str, matrix: Matrix) -> None:
    found = top(f"Intel Arc A750, --use-ipex\n{line}\n", matrix)
    assert found.category == Category.TORCH_CPU_ONLY and "XPU" in found.message
    assert "/whl/xpu" in said(found) and "--force-reinstall" in said(found)


def test_a_library_op_without_its_cuda_kernel(matrix: Matrix) -> None:
    found = top("torch 2.4.1+cu121\nNotImplementedError: Could not run 'torchvision::nms' with "
                "arguments from the 'CUDA' backend. This could be because the operator doesn't "
                "exist for this backend\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "torchvision::nms" in found.message
    assert "torchvision==0.19.1 --index-url" in said(found) and "/whl/cu121" in said(found)
    aten = triage("NotImplementedError: Could not run 'aten::empty_strided' with arguments from "
                  "the 'CUDA' backend.\n", matrix)
    assert all("build has no CUDA kernel" not in d.message for d in aten.diagnosis)


def test_dgl_and_mmcv_without_cuda(matrix: Matrix) -> None:
    dgl = top("dgl._ffi.base.DGLError: [14:00:04] /opt/dgl/src/runtime/c_runtime_api.cc:82: Check "
              "failed: allow_missing: Device API cuda is not enabled. Please install the cuda "
              "version of dgl.\n", matrix)
    assert dgl.category == Category.WRONG_WHEEL and "CUDA version of dgl" in said(dgl)
    mmcv = top("RuntimeError: ms_deform_attn_impl_forward: implementation for device cuda:0 not "
               "found.\n", matrix)
    assert "mmcv" in mmcv.message and "MMCV_WITH_OPS=1 FORCE_CUDA=1" in said(mmcv)


@pytest.mark.parametrize("line,name", [("Gpu : Zotac 5070 12 GB", "GeForce RTX 5070"),
                                       ("I'm using a nvidia 5080", "GeForce RTX 5080"),
                                       ("ASUS 4090 here", "GeForce RTX 4090")])
def test_a_geforce_number_after_its_maker(line: str, name: str, matrix: Matrix) -> None:
    text = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            f"{line}\n")
    assert name in top(text, matrix).message
    assert "GeForce" not in top("File \"x.py\", line 5080, in f\nRuntimeError: CUDA error: no "
                                "kernel image is available for execution on the device\n",
                                matrix).message


def test_dgl_operator_without_cuda(matrix: Matrix) -> None:
    found = top("dgl._ffi.base.DGLError: [09:10:11] /opt/dgl/src/array/array.cc:1209: Operator "
                "FarthestPointSampler does not support cuda device.\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "DGL" in found.message


def test_cudnn_package_for_a_newer_cuda_than_the_driver(matrix: Matrix) -> None:
    text = ("RuntimeError: cuDNN failed with status CUDNN_STATUS_NOT_INITIALIZED\n"
            "| NVIDIA-SMI 470.199.02   Driver Version: 470.161.03   CUDA Version: 11.4     |\n"
            "libcudnn8/unknown,now 8.9.3.28-1+cuda12.1 amd64 [installed]\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "CUDA 12.1" in found.message
    assert "+cuda11" in said(found)
    same = text.replace("+cuda12.1", "+cuda11.8")
    assert all("the system's cuDNN" not in d.message for d in triage(same, matrix).diagnosis)


def test_numba_without_nvvm_and_a_namespace_leftover(matrix: Matrix) -> None:
    nvvm = top("numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found. Do `conda "
               "install cudatoolkit`:\nlibrary nvvm not found\n", matrix)
    assert nvvm.category == Category.NOT_INSTALLED and "cudatoolkit" in said(nvvm)
    left = top("ImportError: cannot import name 'cuda' from 'cuda' (unknown location)\n", matrix)
    assert left.category == Category.VERSION_CONFLICT and "namespace package" in left.message
    assert "Uninstall" in said(left) and "pip uninstall -y cuda" not in said(left)


def test_an_extension_built_by_a_newer_nvcc_than_torch_s_runtime(matrix: Matrix) -> None:
    found = top("ImportError: /root/mmdet/ops/nms/gpu_nms.cpython-36m-x86_64-linux-gnu.so: "
                "undefined symbol: __cudaPopCallConfiguration\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "9.2" in found.message
    assert "same CUDA version as torch" in said(found)


def test_a_wheel_file_refused_where_the_platform_is_not_stated(matrix: Matrix) -> None:
    found = top("ERROR: quant_cuda-0.0.0-cp38-cp38-win_amd64.whl is not a supported wheel on "
                "this platform.\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "Python 3.8 (cp38) on win_amd64" in said(found)
    assert "python -m pip --version" in said(found)


def test_another_cuda_s_library_on_a_jetson(matrix: Matrix) -> None:
    found = top("Jetson Nano, JetPack 4.4\nImportError: libcudart.so.10.0: cannot open shared "
                "object file: No such file or directory\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "JetPack" in found.message
    assert "PyTorch for Jetson" in said(found)


def test_a_setup_py_asking_for_torch_under_pip(matrix: Matrix) -> None:
    text = ("$ pip install torch --index-url <index>/whl/cu118\n"
            "$ pip install \"git+https://github.com/PanQiWei/AutoGPTQ.git@v0.4.2\"\n"
            "  Getting requirements to build wheel ... error\n"
            "Building cuda extension requires PyTorch(>=1.13.0) been installed, please install "
            "PyTorch first!\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_ISOLATION and "autogptq" in found.message
    assert "AutoGPTQ.git@v0.4.2 --no-build-isolation" in said(found)
    assert "flash-attn" not in said(found)


def test_a_build_of_an_unnamed_package_gets_no_flash_attn_remedy(matrix: Matrix) -> None:
    text = ("pip install git+https://github.com/facebookresearch/detectron2.git\n"
            "  error: subprocess-exited-with-error\n"
            "  \u00d7 Getting requirements to build wheel did not run successfully.\n")
    result = triage(text, matrix)
    everything = " ".join(said(d) + d.message for d in result.diagnosis)
    assert "flash-attn" not in everything
    assert "detectron2.git --no-build-isolation" in everything


def test_an_install_target_from_the_report_is_quoted_in_the_command(matrix: Matrix) -> None:
    text = ("pip install git+https://example.invalid/a$(touch${IFS}x).git\n"
            "  error: subprocess-exited-with-error\n"
            "  \u00d7 Getting requirements to build wheel did not run successfully.\n")
    commands = [c for d in triage(text, matrix).diagnosis for r in d.remedies for c in r.commands]
    built = [c for c in commands if "--no-build-isolation" in c]
    assert built and all("'git+https://example.invalid/a$(touch${IFS}x).git'" in c for c in built)
