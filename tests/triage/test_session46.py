"""Mechanisms added in session 46, each on the message as its program prints it: a library asking
for an executable stack under glibc 2.41 (with a real shared object linked that way here)."""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

CT2 = ("ImportError: libctranslate2-d3638643.so.4.4.0: cannot enable executable stack as shared "
       "object requires: Invalid argument\n")


def test_a_vendored_library_asking_for_an_executable_stack(matrix: Matrix) -> None:
    found = top(CT2, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "ctranslate2 4.4.0" in found.message and "glibc 2.41" in found.message
    assert '"ctranslate2>=4.6.0"' in said(found)  # 4.6.0's wheels: GNU_STACK RW
    assert "--clear-execstack" in said(found)


def test_a_package_without_a_known_fix_gets_no_command_of_ours(matrix: Matrix) -> None:
    found = top("ImportError: libinspireface-0123abcd.so: cannot enable executable stack as "
                "shared object requires: Invalid argument\n", matrix)
    first = found.remedies[0]
    assert "Upgrade inspireface" in first.summary and first.commands == []


def test_an_unvendored_library_is_named_as_printed(matrix: Matrix) -> None:
    found = top("OSError: /opt/app/libmelon.so: cannot enable executable stack as shared object "
                "requires: Invalid argument\n", matrix)
    assert "libmelon.so (the package that ships it)" in found.message


@pytest.mark.skipif(shutil.which("gcc") is None or platform.system() != "Linux",
                    reason="needs gcc on Linux")
def test_a_library_linked_this_way_really_asks_for_it(tmp_path: Path, matrix: Matrix) -> None:
    """The premise, on a real shared object: linked with -z execstack its GNU_STACK is RWE; where
    this glibc refuses it (2.41 and newer), its own message is read as above."""
    (tmp_path / "x.c").write_text("int answer(void) { return 42; }\n")
    library = tmp_path / "libexec-0123abcd.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-z", "execstack", "-o", str(library),
                    str(tmp_path / "x.c")], check=True)
    headers = subprocess.run(["readelf", "-lW", str(library)], capture_output=True, text=True,
                             check=True).stdout
    assert any("GNU_STACK" in line and "RWE" in line for line in headers.splitlines())
    try:
        ctypes.CDLL(os.fspath(library))
    except OSError as error:  # glibc 2.41+: the refusal itself
        found = top(f"ImportError: {error}\n", matrix)
        assert found.category == Category.VERSION_CONFLICT and "executable stack" in found.message
    else:
        assert tuple(int(p) for p in platform.libc_ver()[1].split(".")[:2]) < (2, 41)


@pytest.mark.parametrize("line, built, loaded, why", [
    # torch 1.13+'s wording (two spaces after "compiled", as torch prints it)
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but "
     "found runtime version (8, 4, 1). PyTorch already comes bundled with cuDNN.",
     "8.5.0", "8.4.1", "older than torch's"),
    # torch 1.x's wording
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but "
     "linked against (7, 6, 5)", "8.3.2", "7.6.5", "another major"),
    # torch 0.4's, with cuDNN's integer versions
    ("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against "
     "7005", "7.1.2", "7.0.5", "older than torch's"),
])
def test_torch_refusing_the_cudnn_found_first(line: str, built: str, loaded: str, why: str,
                                              matrix: Matrix) -> None:
    found = top(line + "\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert f"built with cuDNN {built}" in found.message and f"cuDNN {loaded} first" in found.message
    assert why in found.message and "unset LD_LIBRARY_PATH" in said(found)


def test_docker_gpu_request_naming_the_nvidia_driver(matrix: Matrix) -> None:
    # a compose file's GPU reservation (driver: nvidia) names the driver the daemon lacks
    found = top('Error response from daemon: could not select device driver "nvidia" with '
                'capabilities: [[gpu]]\n', matrix)
    assert "NVIDIA Container" in found.message
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in said(found)


@pytest.mark.parametrize("text, container", [
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
     "shared memory (shm).\n", False),
    ("docker run --gpus all fastai\nRuntimeError: DataLoader worker (pid 47) is killed by signal: "
     "Bus error. It is possible that dataloader's workers are out of shared\nmemory. Please try to "
     "raise your shared memory limit.\n", True),
])
def test_dataloader_workers_out_of_shared_memory(text: str, container: bool,
                                                 matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.OUT_OF_MEMORY and "shared memory" in found.message
    assert ("64 MB" in found.message) == container
    assert "--shm-size" in said(found) and "num_workers=0" in said(found)


def test_a_killed_worker_without_a_bus_error_is_not_shared_memory(matrix: Matrix) -> None:
    result = triage("RuntimeError: DataLoader worker (pid 47) is killed by signal: Killed.\n",
                    matrix)
    assert all("shared memory" not in d.message for d in result.diagnosis)


def test_torch_needing_intels_jit_api_from_a_newer_mkl(matrix: Matrix) -> None:
    found = top("ImportError: /root/anaconda3/envs/pikv/lib/python3.11/site-packages/torch/lib/"
                "libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "MKL 2024.1" in found.message
    assert "conda install -p /root/anaconda3/envs/pikv mkl=2024.0" in said(found)


@pytest.mark.parametrize("text, pins_numpy", [
    ("Jetson Nano, JetPack 4.5, Python 3.6.9\n>>> import torch\nIllegal instruction (core dumped)\n",
     True),
    ("Jetson Orin, Python 3.10\nI get illegal instruction (core dumped) error.\n", False),
])
def test_sigill_on_a_jetson_is_numpy_1_19_5s_openblas(text: str, pins_numpy: bool,
                                                      matrix: Matrix) -> None:
    found = top(text, matrix)
    assert "OpenBLAS" in found.message and "export OPENBLAS_CORETYPE=ARMV8" in said(found)
    assert ("numpy==1.19.4" in said(found)) == pins_numpy  # its wheels stop at Python 3.9


@pytest.mark.parametrize("text", [
    # not an ARM board
    "Ubuntu 22.04 x86_64\nIllegal instruction (core dumped)\n",
    # a numpy other than 1.19.5
    "Jetson Nano\nnumpy==1.19.4\nIllegal instruction (core dumped)\n",
    # the GPU's illegal instruction is a kernel's fault, not the CPU's
    "Jetson Orin\nRuntimeError: CUDA error: an illegal instruction was encountered\n",
])
def test_no_openblas_claim(text: str, matrix: Matrix) -> None:
    result = triage(text, matrix)
    assert all("OpenBLAS" not in d.message for d in result.diagnosis)


def test_an_optional_librarys_name_undefined_with_typographic_quotes(matrix: Matrix) -> None:
    # no traceback frame: the library the report names with its version is the caller
    found = top("Error in trl 0.5.0\nname \u2018PeftModel\u2019 is not defined\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "trl skipped the import" in found.message
    assert "pip install peft" in said(found)


def test_a_scripts_own_undefined_name_is_not_a_library_skipping_an_import(matrix: Matrix) -> None:
    # no frame and no library named with a version: a script's own missing import
    result = triage("NameError: name 'PeftModel' is not defined\n", matrix)
    assert all("skipped the import" not in d.message for d in result.diagnosis)


def test_a_librarys_own_name_error_with_the_release_that_fixed_it(matrix: Matrix) -> None:
    found = top('  File "/env/lib/python3.10/site-packages/bitsandbytes/cuda_setup/main.py", line '
                "153, in is_cublasLt_compatible\n    cuda_setup.add_log_entry(\"WARNING: Compute "
                "capability < 7.5 detected!\")\nNameError: name 'cuda_setup' is not defined. Did "
                "you mean: 'CUDASetup'?\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "line 153" in found.message
    assert '"bitsandbytes>=0.37.1"' in said(found)  # 0.37.0's wheel calls the unbound name


def test_a_librarys_own_name_error_without_a_known_fix(matrix: Matrix) -> None:
    found = top('  File "/env/lib/python3.11/site-packages/somelib/core.py", line 12, in run\n'
                "NameError: name 'helper' is not defined\n", matrix)
    assert "somelib's own code refers to 'helper'" in found.message
    assert "Upgrade somelib to its newest release" in said(found)


def test_a_name_error_under_a_build_backend_is_not_the_backends(matrix: Matrix) -> None:
    result = triage('  File "/env/lib/python3.11/site-packages/setuptools/build_meta.py", line 317, '
                    "in run_setup\nNameError: name 'bare_metal_version' is not defined\n", matrix)
    assert all("never defines" not in d.message for d in result.diagnosis)


def test_no_distribution_on_a_new_windows_python_names_the_one_before(matrix: Matrix) -> None:
    found = top("PS C:\\> pip install coqui-tts\nERROR: Could not find a version that satisfies the "
                "requirement coqui-tts (from versions: none)\nOS: Windows 11\nPython: 3.13\n", matrix)
    assert "Python 3.12 rather than 3.13" in said(found)


@pytest.mark.parametrize("text, floor, pin", [
    ("PyTorch 2.5.1 on a MacOS 12.7.6 arm64\nRuntimeError: The MPS backend is supported on MacOS "
     "12.3+.\n", "macOS 13.0", "torch==2.4.1"),
    ("torch==2.10.0\nOS: macOS 13.7.4 (arm64)\nRuntimeError: The MPS backend is supported on MacOS "
     "13.0+.Current OS version can be queried using `sw_vers`\n", "macOS 14.0", "torch==2.9.1"),
])
def test_mps_refused_on_a_macos_the_message_accepts(text: str, floor: str, pin: str,
                                                    matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and f"{floor} or newer" in found.message
    assert pin in said(found)


def test_mps_refused_below_the_printed_floor_is_not_a_stale_message(matrix: Matrix) -> None:
    result = triage("torch 1.13.1, macOS 12.2\nRuntimeError: The MPS backend is supported on "
                    "MacOS 12.3+.\n", matrix)
    assert all("still names its older floor" not in d.message for d in result.diagnosis)


def test_a_torch_named_extensions_glibc_is_that_extensions(matrix: Matrix) -> None:
    # torch_spline_conv is not torch: its own wheel needs the newer glibc; the loader's line, which
    # names the binary, is read over prose quoting the version alone
    found = top("fails with `OSError: /lib64/libm.so.6: version 'GLIBC_2.27' not found`\n"
                "OSError: /lib64/libm.so.6: version `GLIBC_2.27' not found (required by .conda/envs/"
                "t/lib/python3.9/site-packages/torch_spline_conv/_basis_cuda.so)\n", matrix)
    assert "(torch-spline-conv)" in found.message
    assert "pip install --no-binary torch-spline-conv" in said(found)


TORCHCODEC = ('  File "/env/lib/python3.13/site-packages/torchcodec/_core/ops.py", line 104, in '
              "<module>\n    ffmpeg_major_version, core_library_path = "
              "load_torchcodec_shared_libraries()\nRuntimeError: Could not load libtorchcodec.\n")


@pytest.mark.parametrize("stated, release", [("torch==2.10.0\n", "0.10"),
                                             ("torch==2.7.1\ntorchcodec==0.2.1\n", "0.5")])
def test_torchcodec_built_for_another_torch(stated: str, release: str, matrix: Matrix) -> None:
    found = top(stated + TORCHCODEC, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert f"needs torchcodec {release}" in found.message
    assert f'"torchcodec~={release}.0"' in said(found)


def test_torchcodec_matching_its_torch_is_missing_ffmpeg(matrix: Matrix) -> None:
    found = top("torch==2.9.0\ntorchcodec==0.9.0\n" + TORCHCODEC, matrix)
    assert found.category == Category.NOT_INSTALLED and "FFmpeg" in found.message


def test_a_missing_cuda_runtime_is_the_framed_packages(matrix: Matrix) -> None:
    # no flash-attention anywhere: the package whose frame loads the binary owns it
    found = top('  File "/env/lib/python3.7/site-packages/mmcv/utils/ext_loader.py", line 10, in '
                "load_ext\n    ext = importlib.import_module('mmcv.' + name)\n  File \"/env/lib/"
                'python3.7/importlib/__init__.py", line 127, in import_module\nImportError: '
                "libcudart.so.10.0: cannot open shared object file: No such file or directory\n",
                matrix)
    assert found.message.startswith("mmcv's binary links libcudart.so.10.0")
    assert "flash-attn" not in said(found)


def test_a_removed_name_with_the_one_other_library_of_a_system_info_block(
        matrix: Matrix) -> None:
    found = top("transformers  4.48.2\ntorch 2.5.1\nllamafactory 0.9.2.dev0\nImportError: cannot "
                "import name 'LlamaFlashAttention2' from 'transformers.models.llama.modeling_llama'"
                "\n", matrix)
    assert "upgrade llamafactory to a release written for the newer transformers" in said(found)


@pytest.mark.parametrize("text, package", [
    ("      error: Microsoft Visual C++ 14.0 or greater is required. Get it with \"Microsoft C++ "
     "Build Tools\": https://visualstudio.microsoft.com/visual-cpp-build-tools/\n  ERROR: Failed "
     "building wheel for insightface\n", "insightface"),
    ("error: Microsoft Visual C++ 14.0 or greater is required.\n", None),
])
def test_no_msvc_for_a_source_build_on_windows(text: str, package: str, matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "no Microsoft C++ compiler" in found.message
    assert "Microsoft.VisualStudio.Workload.VCTools" in said(found)
    assert (f"pip install --prefer-binary {package}" in said(found)) == (package is not None)


def test_ctranslate2s_int8_gemm_refused_on_blackwell(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA GeForce RTX 5060 Ti\nRuntimeError: cuBLAS failed with status "
                "CUBLAS_STATUS_NOT_SUPPORTED\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "(sm_120)" in found.message
    assert 'compute_type="float16"' in said(found)


@pytest.mark.parametrize("stated, package", [
    ("`uv sync --extra gpu` installs torch==2.9.1 (CUDA 13)\n", "nvidia-cudnn-cu13"),
    ("torch 2.6.0+cu124\n", "nvidia-cudnn-cu12"),
])
def test_torchs_own_import_missing_its_cudnn_wheel(stated: str, package: str,
                                                   matrix: Matrix) -> None:
    found = top(stated + "$ python -c \"import torch\"\nImportError: libcudnn.so.9: cannot open "
                "shared object file: No such file or directory\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "torch itself fails to import" in found.message
    assert f"pip install {package}" in said(found) and "pip check" in said(found)


@pytest.mark.parametrize("stated, claimed", [
    ("", True),  # nothing stated: the usual cause, as a guess
    ("torch 1.13.1+cu117\nGPU 0: NVIDIA GeForce RTX 4090\n", True),
    ("torch 2.1.0+cu121\nGPU 0: NVIDIA GeForce RTX 4090\n", False),  # CUDA 11.8+: not this
    ("GPU 0: NVIDIA A100-SXM4-80GB\n", False),  # not Ada
])
def test_cufft_internal_error_as_cuda_117s_cufft_on_ada(stated: str, claimed: bool,
                                                        matrix: Matrix) -> None:
    result = triage(stated + "    return _VF.stft(input, n_fft)\nRuntimeError: cuFFT error: "
                    "CUFFT_INTERNAL_ERROR\n", matrix)
    ada = [d for d in result.diagnosis if "without support for RTX 40" in d.message]
    assert bool(ada) == claimed
    if claimed:
        assert "torch==2.0.1 --extra-index-url" in said(ada[0]) and "/whl/cu118" in said(ada[0])


@pytest.mark.parametrize("text, claimed", [
    ("GPU: NVIDIA L40S-48C. Max memory: 47.712 GB.\nRuntimeError: CUDA driver error: operation not "
     "supported\n", True),
    ("==((====))==  Unsloth 2024.12.4\nRuntimeError: CUDA driver error: operation not supported\n",
     True),
    # neither a vGPU nor anything that sets the allocator option: another driver call
    ("RuntimeError: CUDA driver error: operation not supported\n", False),
])
def test_expandable_segments_on_a_driver_without_vmm(text: str, claimed: bool,
                                                     matrix: Matrix) -> None:
    result = triage(text, matrix)
    found = [d for d in result.diagnosis if "expandable-segments" in d.message]
    assert bool(found) == claimed
    if claimed:
        assert "expandable_segments:False" in said(found[0])


def test_chatglms_quantization_without_cpm_kernels(matrix: Matrix) -> None:
    found = top("AttributeError: 'NoneType' object has no attribute 'int4WeightExtractionHalf'\n",
                matrix)
    assert found.category == Category.NOT_INSTALLED and "pip install cpm_kernels" in said(found)


@pytest.mark.parametrize("name, fix", [("cudart", "conda install cudatoolkit"),
                                       ("cuda", "/usr/lib/wsl/lib")])
def test_cpm_kernels_not_finding_a_cuda_library(name: str, fix: str, matrix: Matrix) -> None:
    found = top(f'  File "/env/lib/python3.8/site-packages/cpm_kernels/library/base.py", line 72, '
                f"in wrapper\nRuntimeError: Library {name} is not initialized\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and f"lib{name}.so" in found.message
    assert fix in said(found)


def test_triton_20s_launcher_keyerror(matrix: Matrix) -> None:
    found = top('  File "<string>", line 21, in cross_entropy_fwd_kernel\nKeyError: (\'2-.-0-.-0-'
                "83ca8b715a9dc5f32dc1110973485f64-2b0c5161c53c71b37ae20a9996ee4bb8', (torch."
                "float16,))\nDuring handling of the above exception, another exception occurred:\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT and "Triton 2.0" in found.message
    assert "pip install triton==2.1.0" in said(found)


def test_tritons_map_at_on_a_pre_ampere_gpu(matrix: Matrix) -> None:
    found = top('  File "/env/lib/python3.10/site-packages/mamba_ssm/ops/triton/ssd_combined.py", '
                "line 908\nIndexError: map::at\nGPU 0: NVIDIA GeForce RTX 2080 Ti\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "(sm_75)" in found.message


def test_triton_10s_map_at_is_its_ptx_table(matrix: Matrix) -> None:
    found = top("IndexError: map::at when calling `_triton.code_gen.add_passes_to_emit_bin`\n",
                matrix)
    assert "pip install --upgrade triton" in said(found)


def test_map_at_on_an_ampere_gpu_is_not_claimed(matrix: Matrix) -> None:
    result = triage("triton kernel\nIndexError: map::at\nGPU 0: NVIDIA A100-SXM4-80GB\n", matrix)
    assert all("map::at" not in d.message for d in result.diagnosis)


@pytest.mark.parametrize("text, target", [
    ("I first installed torch: pip3 install torch torchvision --index-url https://<index>/whl/"
     "cu126\nI then ran pip install gptqmodel, and got the error.\nModuleNotFoundError: No module "
     "named torch\nName: torch\nVersion: 2.6.0+cu126\n", "pip install gptqmodel --no-build-isolation"),
    ("pip install -r requirements.txt\nRequirement already satisfied: torch==2.7.0 in /env/lib/"
     "python3.10/site-packages (2.7.0+cu128)\nModuleNotFoundError: No module named 'torch'\n",
     "pip install -r requirements.txt --no-build-isolation"),
])
def test_any_packages_build_without_torch_under_isolation(text: str, target: str,
                                                          matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.BUILD_ISOLATION and target in said(found)


def test_a_programs_own_missing_torch_is_not_build_isolation(matrix: Matrix) -> None:
    result = triage("pip install gradio\nName: torch\nVersion: 2.6.0+cu126\n  File \"/app/run.py\", "
                    "line 3, in <module>\nModuleNotFoundError: No module named 'torch'\n", matrix)
    assert all(d.category != Category.BUILD_ISOLATION for d in result.diagnosis)


def test_sdpa_missing_is_a_torch_before_2_0(matrix: Matrix) -> None:
    # torch 1.13.1's functional.py binds only _scaled_dot_product_attention (read from its wheel)
    found = top("AttributeError: module 'torch.nn.functional' has no attribute "
                "'scaled_dot_product_attention'\n", matrix)
    assert "from 2.0.0 on" in found.message and '"torch>=2.0.0"' in said(found)


def test_no_nccl_from_a_split_source_line(matrix: Matrix) -> None:
    found = top('Windows 11\n    raise RuntimeError("Distributed package doesn\'t have NCCL " '
                '"built in")\n', matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and 'backend="gloo"' in said(found)


def test_a_torch_store_without_libuv(matrix: Matrix) -> None:
    found = top("RuntimeError: use_libuv was requested but PyTorch was built without libuv "
                "support\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "USE_LIBUV=0" in said(found)


def test_nccls_bootstrap_failing_on_its_socket(matrix: Matrix) -> None:
    found = top("node1:2330:2658 [2] NCCL INFO misc/socket.cc:567 -> 2\nnode1:2330:2658 [2] NCCL "
                "INFO bootstrap.cc:270 -> 2\n", matrix)
    assert found.category == Category.COLLECTIVE_FAILED
    assert "export NCCL_SOCKET_IFNAME=eth0" in said(found)


def test_nccl_kernels_over_the_gpus_shared_memory(matrix: Matrix) -> None:
    found = top("NCCL INFO NCCL version 2.25.1+cuda12.8\nNCCL INFO ncclMaxSharedMem 82240 exceeds "
                "device/fn maxSharedMem 79856\n", matrix)
    assert "NCCL 2.25.1" in found.message and '"nvidia-nccl-cu12>=2.26.2"' in said(found)


def test_a_model_pickled_under_an_older_torch(matrix: Matrix) -> None:
    found = top("AttributeError: 'Upsample' object has no attribute 'recompute_scale_factor'\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT and "before 1.11.0" in found.message
    assert "m.recompute_scale_factor = None" in said(found) and "torch==1.10.2" in said(found)


def test_macos_dyld_missing_a_torch_symbol(matrix: Matrix) -> None:
    found = top("Error: dlopen(/Users/me/env/lib/python3.10/site-packages/torchaudio/lib/"
                "libtorchaudio.so, 0x0006): Symbol not found: __ZN2at8internal15invoke_parallelExxx\n"
                "  Referenced from: <FCB6> /Users/me/env/lib/python3.10/site-packages/torchaudio/lib/"
                "libtorchaudio.so\n  Expected in:     <4216> /Users/me/env/lib/libtorch_cpu.dylib\n",
                matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert found.message.startswith("torchaudio needs a PyTorch C++ symbol")


@pytest.mark.parametrize("line", ["[launch.py:315:sigkill_handler] ... exits with return code = -7",
                                  "  exitcode  : -7 (pid: 4711)"])
def test_a_launchers_child_killed_by_sigbus(line: str, matrix: Matrix) -> None:
    found = top("docker run --gpus all image\n" + line + "\n", matrix)
    assert found.category == Category.OUT_OF_MEMORY and "SIGBUS" in found.message
    assert "--shm-size" in said(found)


def test_cudnn_under_zluda(matrix: Matrix) -> None:
    found = top("GPU is RX 6900 XT, Zluda version 3\nRuntimeError: cuDNN error: "
                "CUDNN_STATUS_INTERNAL_ERROR\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "ZLUDA" in found.message
    assert "torch.backends.cudnn.enabled = False" in said(found)


@pytest.mark.parametrize("text", [
    "ERROR! Intel\u00ae Extension for PyTorch* needs to work with PyTorch 2.8.*, but PyTorch 2.7.1 "
    "is found. Please switch to the matching version and run again.\n",
    "import intel_extension_for_pytorch as ipex\ntorch 2.7.1\nipex 2.8\n"])
def test_ipex_built_for_another_torch_minor(text: str, matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert 'pip install "torch==2.8.*" --index-url' in said(found) and "/whl/xpu" in said(found)


def test_torch_missing_an_nccl_function_is_an_older_nccl_loaded(matrix: Matrix) -> None:
    found = top("ImportError: /env/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so: "
                "undefined symbol: ncclCommResume\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "libnccl.so.2" in found.message
    assert "pip show nvidia-nccl-cu12 nvidia-nccl-cu13" in said(found)


def test_nccls_shared_memory_segments_in_a_small_dev_shm(matrix: Matrix) -> None:
    found = top("docker run --gpus all nvidia/cuda:10.1-devel\ninclude/shm.h:28 NCCL WARN Call to "
                "posix_fallocate failed: No space left on device\n", matrix)
    assert found.category == Category.COLLECTIVE_FAILED and "64 MB" in found.message
    assert "--shm-size" in said(found) and "NCCL_SHM_DISABLE=1" in said(found)


def test_hsa_refusing_another_targets_code_object(matrix: Matrix) -> None:
    found = top("I have rx 7600 xt, rocm 6.1\nCallback: Queue 0x75 aborting with error : "
                "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.\n",
                matrix)
    assert found.category == Category.ROCM and "(gfx1102)" in found.message
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in said(found)


def test_mps_allocator_at_its_high_watermark(matrix: Matrix) -> None:
    found = top("RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other "
                "allocations: 172.98 MB, max allowed: 9.07 GB). Tried to allocate 6.25 MB on "
                "private pool.\n", matrix)
    assert found.category == Category.OUT_OF_MEMORY and "9.07 GB allowed" in found.message
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0" in said(found)


@pytest.mark.parametrize("stated, category", [("M2 MacOS\n", Category.PLATFORM_UNSUPPORTED),
                                              ("Ubuntu 22.04\n", Category.NO_GPU)])
def test_transformers_bnb_quantization_without_a_cuda_gpu(stated: str, category: Category,
                                                          matrix: Matrix) -> None:
    found = top(stated + "RuntimeError: No GPU found. A GPU is needed for quantization.\n", matrix)
    assert found.category == category and "bitsandbytes quantization" in found.message


def test_ctranslate2s_windows_cublas_dll(matrix: Matrix) -> None:
    found = top("faster-whisper on Windows 11\nRuntimeError: Library cublas64_12.dll is not found or "
                "cannot be loaded\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "cublas64_12.dll" in found.message
    assert "pip install nvidia-cublas-cu12" in said(found) and "PATH" in said(found)


def test_cudnn_8_looking_for_zlibwapi(matrix: Matrix) -> None:
    found = top("Could not locate zlibwapi.dll. Please make sure it is in your library path!\n",
                matrix)
    assert found.category == Category.NOT_INSTALLED and "zlibwapi.dll" in said(found)


@pytest.mark.parametrize("text, folder", [
    ("unable to execute ':/usr/local/cuda/bin/nvcc': No such file or directory\n",
     "/usr/local/cuda"),
    ("OSError: libnvvm.so: cannot open shared object file: No such file or directory\n"
     "export CUDA_HOME=$CUDA_HOME:/usr/local/cuda-11.8\n", "/usr/local/cuda-11.8"),
])
def test_cuda_home_set_like_a_path_list(text: str, folder: str, matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "path list" in found.message
    assert f"export CUDA_HOME={folder}" in said(found)


def test_a_missing_library_in_a_report_without_flash_attention(matrix: Matrix) -> None:
    result = triage("numba: OSError: libnvvm.so: cannot open shared object file: No such file or "
                    "directory\n", matrix)
    assert all("flash-attn" not in said(d) for d in result.diagnosis)


def test_cuda_driver_initialization_failing_with_a_gpu_present(matrix: Matrix) -> None:
    found = top("8x RTX 5000 machine with CentOS 7, cuda 10.1\nUserWarning: CUDA initialization: "
                "CUDA driver initialization failed, you might not have a CUDA gpu.\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "nvidia-smi" in said(found)


def test_onnxruntimes_cuda_provider_missing_a_cuda_11_library(matrix: Matrix) -> None:
    found = top("Failed to load library libonnxruntime_providers_cuda.so with error: "
                "libcublasLt.so.11: cannot open shared object file: No such file or directory.\n",
                matrix)
    assert found.message.startswith("onnxruntime-gpu's binary links libcublasLt.so.11")
    assert "flash-attn" not in said(found)


def test_a_wrapped_undefined_symbol_of_torchtext(matrix: Matrix) -> None:
    found = top("OSError: /usr/local/lib/python3.9/dist-packages/torchtext/lib/libtorchtext.so:\n"
                "undefined symbol: _ZN2at4_ops10select_int4callERKNS_6TensorEll\n", matrix)
    assert found.message.startswith("torchtext:") and "flash-attn" not in said(found)


def test_report_text_never_reaches_a_command_unvalidated(matrix: Matrix) -> None:
    # a requirements "file" that is shell text, and a CUDA_HOME folder with a command in it
    hostile = ("pip install -r req.txt;rm\nRequirement already satisfied: torch==2.7.0 in /env/lib/"
               "python3.10/site-packages (2.7.0+cu128)\nModuleNotFoundError: No module named "
               "'torch'\nexport CUDA_HOME=$CUDA_HOME:/usr/local/cuda;reboot\n")
    for found in triage(hostile, matrix).diagnosis:
        for remedy in found.remedies:
            assert all("req.txt;rm" not in c and ";reboot" not in c for c in remedy.commands)
