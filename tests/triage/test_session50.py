"""Mechanisms added or mended in session 50, each on the message as its program prints it:
DeepSpeed's op builder refusing a toolkit (its per-release list of compatible CUDA minors, read
by tools/gen_deepspeed_cuda.py from a real git repository here), nvcc's host_config.h refusing
gcc from another toolkit than the one the report means, a CUDA runtime error under ggml that the
catalog names, ollama's driver probe, and remedies that name only the package a report builds
(no flash-attn, no SDPA switch where no attention is in play)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_deepspeed import accepting

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import gen_deepspeed_cuda

_DS = ("Installed CUDA version {0} does not match the version torch was compiled with {1}, unable "
       "to compile cuda/cpp extensions without a matching cuda version.\n")


@pytest.mark.parametrize("installed, torch_cuda, first", [
    ("11.0", "11.1", "0.4.0"), ("12.8", "12.4", "0.16.4"), ("12.9", "12.1", "0.17.2"),
    ("12.0", "11.8", None), ("13.0", "13.2", None)])
def test_the_first_deepspeed_taking_a_pair(installed: str, torch_cuda: str, first: str) -> None:
    assert accepting(installed, torch_cuda) == first


def test_a_pair_deepspeed_takes_later_names_that_release_and_the_exact_torch(
        matrix: Matrix) -> None:
    found = top("torch 1.8.1+cu111\n" + _DS.format("11.0", "11.1"), matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "from 0.4.0 on" in found.message
    text = said(found)
    assert '"deepspeed>=0.4.0"' in text and "CUDA toolkit 11.1" in text
    assert "torch==1.7.1+cu110" in text and "DS_SKIP_CUDA_CHECK=1" in text


def test_a_newer_deepspeed_stated_gets_no_upgrade(matrix: Matrix) -> None:
    found = top("deepspeed 0.10.0\n" + _DS.format("12.0", "11.8"), matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "no DeepSpeed release takes" in found.message
    assert "deepspeed>=" not in said(found) and "CUDA toolkit 11.8" in said(found)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


_BUILDER = '''import torch
{table}
def assert_no_cuda_mismatch():
    raise Exception("Installed CUDA version does not match the version torch was compiled with")
'''


def test_the_generator_reads_each_tag_of_a_real_repository(tmp_path: Path) -> None:
    repo = tmp_path / "ds"
    (repo / "op_builder").mkdir(parents=True)
    _git(repo, "init", "-q")
    for tag, table in (("v0.3.1", ""), ("v0.4.0", 'cuda_minor_mismatch_ok = {\n    11: ["11.0", '
                                                   '"11.1"],\n}\n'),
                       ("v0.4.1", 'cuda_minor_mismatch_ok = {\n    11: ["11.0", "11.1"],\n}\n'),
                       ("v0.5.0", 'cuda_minor_mismatch_ok = {\n    11: ["11.0", "11.1", '
                                  '"11.2"],\n}\n')):
        (repo / "op_builder" / "builder.py").write_text(_BUILDER.format(table=table))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", tag)
        _git(repo, "tag", tag)
    data = gen_deepspeed_cuda.generate(repo)
    assert data["releases"] == [{"from": "0.3.1", "minors": {}},
                                {"from": "0.4.0", "minors": {11: ["11.0", "11.1"]}},
                                {"from": "0.5.0", "minors": {11: ["11.0", "11.1", "11.2"]}}]


def test_host_config_of_another_toolkit_points_at_the_one_meant(matrix: Matrix) -> None:
    text = ("/opt/lib/cuda-8.0/bin/..//include/host_config.h:115:2 #error -- unsupported GNU "
            "version! gcc versions later than 5 are not supported!\nthe environment is:\ngcc "
            "5.4.0\npytorch 1.7.1\ncuda-10.2\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "CUDA 8.0's" in found.message
    assert "export CUDA_HOME=/opt/lib/cuda-10.2" in said(found)


def test_host_config_alone_asks_for_the_supported_gcc(matrix: Matrix) -> None:
    text = ("/usr/local/cuda/include/crt/host_config.h:139:2: error: #error -- unsupported GNU "
            "version! gcc versions later than 12 are not supported!\n")
    found = top(text, matrix)
    assert "export CC=gcc-12 CXX=g++-12" in said(found) and "CUDA_HOME" not in said(found)


def test_ggml_leaves_a_driver_library_mismatch_to_the_catalog(matrix: Matrix) -> None:
    text = ("ggml_cuda_init: failed to initialize CUDA: system has unsupported display driver / "
            "cuda driver combination\nI installed cuda-toolkit-12.5 and cuda-compat-12.9.\n"
            "2x RTX 3090\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "cuda-compat" in said(found) and "LD_LIBRARY_PATH" in said(found)


def test_ollama_probe_finding_an_old_driver(matrix: Matrix) -> None:
    text = ('level=INFO source=gpu.go:568 msg="unable to load cuda driver library" '
            'library=C:\\WINDOWS\\system32\\nvcuda.dll error="symbol lookup for cuCtxCreate_v3 '
            'failed"\nlevel=DEBUG source=gpu.go:537 msg="Unable to load cudart" error="your '
            'nvidia driver is too old or missing.  If you have a CUDA GPU please upgrade to run '
            'ollama"\n')
    found = top(text, matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "cuCtxCreate_v3" in found.message
    assert "NVIDIA driver" in said(found)


def test_an_editable_checkout_with_extras_is_rebuilt_as_asked(matrix: Matrix) -> None:
    text = ("D:\\SAM2>pip install -e \".[demo]\"\n  Installing build dependencies ... done\n"
            "  Checking if build backend supports build_editable ... done\n"
            "  Getting requirements to build editable ... error\n"
            "  error: subprocess-exited-with-error\n"
            "      C:\\TEMP\\pip-build-env-n0may61s\\overlay\\Lib\\site-packages\\torch\\"
            "_subclasses\\functional_tensor.py:258: UserWarning: Failed to initialize NumPy: No "
            "module named 'numpy'\n")
    result = triage(text, matrix)
    isolation = next(d for d in result.diagnosis if d.category == Category.BUILD_ISOLATION)
    assert "flash-attn" not in isolation.message and "uv" not in isolation.message.split()[0]
    assert '".[demo]"' in said(isolation) or "'.[demo]'" in said(isolation)
    assert "--no-build-isolation" in said(isolation)


def test_uv_add_names_the_package_in_its_build_dependencies(matrix: Matrix) -> None:
    text = "No Module Named 'torch'\n\nWhen I run uv add causal-conv1d, it says that.\n"
    found = top(text, matrix)
    assert found.category == Category.BUILD_ISOLATION and "causal-conv1d" in found.message
    assert 'causal-conv1d = [{ requirement = "torch", match-runtime = true }]' in said(found)
    assert "flash-attn" not in said(found).replace("for flash-attn)", "")


def test_another_project_copying_flash_attn_wheel_fetch(matrix: Matrix) -> None:
    text = ("Collecting mamba-ssm\n  Using cached mamba_ssm-2.2.4.tar.gz (91 kB)\n"
            "  Precompiled wheel not found. Building from source...\n")
    result = triage(text, matrix)
    wheel = next(d for d in result.diagnosis if d.category == Category.WRONG_WHEEL)
    assert "compiles mamba-ssm from source" in wheel.message
    assert "FLASH_ATTENTION_FORCE_BUILD" not in said(wheel)


def test_a_torch_api_with_no_caller_named_is_not_flash_attns(matrix: Matrix) -> None:
    text = "torch 2.3.1\nAttributeError: module 'torch.library' has no attribute 'custom_op'\n"
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "flash-attn" not in found.message
    assert "flash-attn" not in said(found) and '"torch>=2.4.0"' in said(found)
    named = top("import flash_attn\n" + text, matrix)
    assert "flash-attn==2.6.3" in said(named)


def test_a_floor_the_message_names_is_no_stated_cuda(matrix: Matrix) -> None:
    """flash-attn 2.7's setup.py floor (11.7) is no v0.2 message's prefix ("...on CUDA 11"),
    nor the CUDA the report has; the stated 11.6 gets the newest release with its wheel."""
    text = ("RuntimeError: FlashAttention is only supported on CUDA 11.7 and above.\n"
            "The environment: CUDA 11.6, torch 1.13.1, python 3.8.\n")
    result = triage(text, matrix)
    found = result.diagnosis[0]
    assert "11.7" in found.message and "v0.2" not in found.message
    assert "flash-attn==2.3.5" in said(found) and "cu116torch1.13" in said(found)
    assert result.environment.torch is None or "11.7" not in result.environment.torch


def test_linux_only_wheels_said_in_prose(matrix: Matrix) -> None:
    text = ("mamba-ssm , cannot be compiled on windows\n\nTried various solutions, there are "
            "precompiled packages but they are all for linux.\n")
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "mamba-ssm" in found.message
    assert "wsl --install" in said(found)


def test_a_laptop_gpu_by_its_number_and_m(matrix: Matrix) -> None:
    text = ("1070m No longer working after update from Cuda 12.6 to 12.8.\nCUDA error: no kernel "
            "image is available for execution on the device\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "GTX 1070 Laptop (sm_61)" in found.message
    assert "cu126" in said(found)
    distance = triage("The run took 1080m to finish.\n", matrix)
    assert not distance.environment.gpus


def test_an_old_torch_from_the_index_is_its_cuda_10_2_build(matrix: Matrix) -> None:
    text = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            "- torch                           1.12.0\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE
    assert "torch==1.12.0+cu116" in said(found)
    stated = top(text.replace("1.12.0\n", "1.12.0+cu113\n"), matrix)
    assert "CUDA 10.2 build" not in said(stated)


def test_int4_weight_only_before_ampere(matrix: Matrix) -> None:
    text = ("I have tried gpt-fast on RTX 2080 Ti. int8 works.\nFor int4 quant it shows:\n"
            "RuntimeError: CUDA error: named symbol not found\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "sm_75" in found.message
    assert "int8" in said(found) and "sm_80" in said(found)
    ampere = triage(text.replace("RTX 2080 Ti", "RTX 3090"), matrix).diagnosis
    assert all(d.category != Category.GPU_UNSUPPORTED or "int4" not in d.message for d in ampere)


@pytest.mark.parametrize("cuda, toolset", [("11.6", "17.3 to 17.9"), ("11.3", "Visual Studio 2019")])
def test_msvc_stl_refusing_an_older_nvcc(cuda: str, toolset: str, matrix: Matrix) -> None:
    text = (f"I installed cuda v{cuda} and torch 1.13.0.\nyvals_core.h(902): error: static "
            "assertion failed with \"error STL1002: Unexpected compiler version, expected CUDA "
            "12.4 or newer.\"\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "CUDA 12.4 or newer" in found.message
    assert toolset in said(found) and "_ALLOW_COMPILER_AND_STL_VERSION_MISMATCH" in said(found)


def test_ctranslate2_needing_cudnn_8_under_a_cudnn_9_torch(matrix: Matrix) -> None:
    text = ("torch 2.5.1\nimport whisperx\nCould not load library libcudnn_ops_infer.so.8. Error: "
            "libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory\n")
    found = top(text, matrix)
    assert '"ctranslate2>=4.5.0"' in said(found)


def test_ptx_of_a_newer_toolkit_in_an_extension_built_here(matrix: Matrix) -> None:
    text = ("from pointnet2_ops import pointnet2_utils\nCUDA error: the provided PTX was compiled "
            "with an unsupported toolchain.\nOnly on the Nvidia A5000.\n")
    found = top(text, matrix)
    assert "export TORCH_CUDA_ARCH_LIST=8.6" in said(found)


_CONFLICT = ("ERROR: Cannot install -r requirements.txt (line 7) and fairseq because these package "
             "versions have conflicting dependencies.\n\nThe conflict is caused by:\n"
             "    fairseq 0.12.2 depends on omegaconf<2.1\n"
             "    hydra-core 1.0.7 depends on omegaconf{second}\n\n"
             "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/"
             "dependency-resolution/#dealing-with-dependency-conflicts\n")


def test_overlapping_constraints_pip_cannot_meet_are_skipped_releases(matrix: Matrix) -> None:
    found = top(_CONFLICT.format(second="<2.1 and >=2.0.5"), matrix)
    assert found.category == Category.VERSION_CONFLICT and "omegaconf" in found.message
    assert '"pip<24.1"' in said(found)
    apart = triage(_CONFLICT.format(second=">=2.1"), matrix).diagnosis
    assert not any("pip<24.1" in said(d) for d in apart)  # no version meets both: a real conflict


def test_pip_saying_it_ignores_invalid_metadata(matrix: Matrix) -> None:
    text = ("WARNING: Ignoring version 2.0.6 of omegaconf since it has invalid metadata:\n"
            "Requested omegaconf<2.1 from <index>/omegaconf-2.0.6-py3-none-any.whl has invalid "
            "metadata: .* suffix can only be used with `==` or `!=` operators\n    PyYAML "
            "(>=5.1.*)\nPlease use pip<24.1 if you need to use this version.\n")
    found = top(text, matrix)
    assert "omegaconf 2.0.6" in found.message and '"pip<24.1"' in said(found)


def test_tensorrt_10_without_max_workspace_size(matrix: Matrix) -> None:
    text = ("AttributeError: 'tensorrt_bindings.tensorrt.IBuilderConfig' object has no attribute "
            "'max_workspace_size'\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "TensorRT 10" in found.message
    assert "set_memory_pool_limit" in said(found) and '"tensorrt<10"' in said(found)


def test_an_extension_aborting_as_torch_loads_it(matrix: Matrix) -> None:
    text = ("(pytorch_nightly) $ python -X faulthandler -c \"import torchao\"\nFatal Python error: "
            "Aborted\n\nCurrent thread 0x00007f95ab528740 (most recent call first):\n"
            "  File \"/env/lib/python3.11/ctypes/__init__.py\", line 376 in __init__\n"
            "  File \"/env/lib/python3.11/site-packages/torch/_ops.py\", line 1487 in load_library\n"
            "  File \"/env/lib/python3.11/site-packages/torchao/__init__.py\", line 31 in <module>\n")
    found = top(text, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and "torchao" in found.message
    assert "nightly torchao" in said(found)


def test_nvjitlink_older_than_the_ir_it_links(matrix: Matrix) -> None:
    text = ("CUDA linking Failed!\nERROR 4 in nvvmAddNVVMContainerToProgram, may need newer "
            "version of nvJitLink library\nnvJitLink error: Internal error\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "nvJitLink" in found.message
    assert "libnvrtc.so.12" in said(found) and "python -m pip list" in said(found)


def test_torch_without_the_gpus_arch_outranks_a_missing_dll(matrix: Matrix) -> None:
    text = ("Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library "
            "path!\nUserWarning:\nNVIDIA GeForce RTX 5080 with CUDA capability sm_120 is not "
            "compatible with the current PyTorch installation.\nThe current PyTorch install "
            "supports CUDA capabilities sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 sm_90 "
            "compute_37.\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "sm_120" in found.message


def test_ncc_shm_segment_said_without_nccls_prefix(matrix: Matrix) -> None:
    text = ("It almost worked except for the `Error while creating shared memory segment "
            "/dev/shm/nccl-pZafXL (size 7340384)`\ndocker run --gpus all --rm -it image\n")
    found = top(text, matrix)
    assert found.category == Category.COLLECTIVE_FAILED and "--shm-size" in said(found)


def test_several_geforce_counted_after_the_name(matrix: Matrix) -> None:
    text = ("DDP training gets stuck at DistributedDataParallel(model)\ntorchrun --nproc_per_node=2 "
            "train.py\nMy environment is `RTX 4090` * 5, pytorch=2.0.1+cu118\n")
    found = top(text, matrix)
    assert found.category == Category.COLLECTIVE_FAILED and "NCCL_P2P_DISABLE=1" in said(found)


def test_a_transformers_name_quoted_in_backticks(matrix: Matrix) -> None:
    text = "`ImportError: cannot import name 'EncoderDecoderCache' from 'transformers'`\n"
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "from 4.4" in found.message


def test_a_build_said_to_need_torch_in_prose(matrix: Matrix) -> None:
    text = ("pip install flash_attn==2.7.4.post1\n\n... The installation failed because flash_attn "
            "requires PyTorch\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_ISOLATION and "--no-build-isolation" in said(found)


@pytest.mark.parametrize("extra, want", [("on 2 GPU NVIDIA-A100-SXM4-80GB-MIG-3g.40gb\n", "MIG-<uuid>"),
                                         ("torch 2.3.0\n", "before `import torch`")])
def test_a_device_index_beyond_the_count(extra: str, want: str, matrix: Matrix) -> None:
    text = extra + ("RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
                    "\"../aten/src/ATen/cuda/CUDAContext.cpp\":50, please report a bug to PyTorch.\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_ASSIGNMENT and want in said(found)


def test_peer_access_refused_for_a_custom_all_reduce(matrix: Matrix) -> None:
    text = ("Inference with 2 RTX4090D failed\n[TensorRT-LLM][ERROR] CUDA runtime error in error: "
            "peer access is not supported between these two devices\n")
    found = top(text, matrix)
    assert found.category == Category.COLLECTIVE_FAILED
    assert "--use_custom_all_reduce disable" in said(found)


def test_cufft_on_ada_said_in_a_title(matrix: Matrix) -> None:
    found = top("Title: CuFFT issue with Cuda 11.7 on RTX 6000 Ada\nTraceback ...\n", matrix)
    assert "cuFFT" in found.message and "11.8" in said(found)


def test_an_old_driver_under_a_newer_cuda_build_of_the_release(matrix: Matrix) -> None:
    text = ("The default version was cu121, which failed (RuntimeError: The NVIDIA driver on your "
            "system is too old.\nPyTorch Version: 2.1.2+cu121\n")
    found = top(text, matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "torch==2.1.2+cu118" in said(found)


def test_a_gpu_glued_to_its_label(matrix: Matrix) -> None:
    text = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            "my running platform:5070ti  Torch: 2.0.1+cu117\n")
    found = top(text, matrix)
    assert "RTX 5070 Ti (sm_120)" in found.message and "cu128" in said(found)


def test_pip_listing_nothing_of_a_package_the_table_lacks(matrix: Matrix) -> None:
    text = ("$ pip install cuequivariance\nERROR: Could not find a version that satisfies the "
            "requirement cuequivariance (from versions: none)\nERROR: No matching distribution "
            "found for cuequivariance\n")
    found = top(text, matrix)
    assert found.category == Category.WRONG_WHEEL and "Python version" in said(found)
    other = triage(text.replace("$ pip install cuequivariance", "$ pip install cuequivariance "
                                "--index-url https://example.invalid/simple"), matrix).diagnosis
    assert not any(d.category == Category.WRONG_WHEEL and "Requires-Python" in d.message
                   for d in other)


def test_a_cudnn_failure_under_a_cuda_10_torch_with_no_gpu_named(matrix: Matrix) -> None:
    text = ("I set torch=1.6 with cuda=10.1\nreturn torch.batch_norm(\nRuntimeError: cuDNN error: "
            "CUDNN_STATUS_EXECUTION_FAILED\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "Ampere" in found.message
    assert "torch==1.7.1+cu110" in said(found)
    newer = triage(text.replace("cuda=10.1", "cuda=11.3"), matrix).diagnosis
    assert not any("Ampere or newer GPU" in d.message for d in newer)


def test_mmcv_ops_built_for_another_torch(matrix: Matrix) -> None:
    text = ("    from mmcv.ops import RoIPool\nImportError: /env/lib/python3.7/site-packages/mmcv/"
            "_ext.cpython-37m-x86_64-linux-gnu.so: undefined symbol: _ZNK2at6Tensor6deviceEv\n")
    found = top(text, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and "mmcv" in found.message
    assert "mim install mmcv-full" in said(found)
