"""Mechanisms added in session 47, each on the message as its program prints it: resolvers that
cannot satisfy two requirements (pip, uv), pip replacing an installed torch, NCCL's P2P transport
hanging, extensions built without a GPU in sight, torch 1.x's CUDA builds, transformers' exported
names by release."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

PIP_CONFLICT = """\
ERROR: Cannot install axolotl==0.10.0 and torch==2.7.1 because these package versions have \
conflicting dependencies.

The conflict is caused by:
    The user requested torch==2.7.1
    axolotl 0.10.0 depends on torch==2.6.0

To fix this you could try to:
1. loosen the range of package versions you've specified
"""

UV_CONFLICT = """\
  \u00d7 No solution found when resolving dependencies:
  ╰─▶ Because axolotl==0.10.0 depends on torch==2.6.0 and your project depends on
      axolotl==0.10.0, we can conclude that your project depends on torch==2.6.0.
      And because your project depends on torch==2.7.1, we can conclude that your
      project's requirements are unsatisfiable.
"""

UV_INDEX = """\
  \u00d7 No solution found when resolving dependencies:
  ╰─▶ Because only torch<=2.6.0+cu124 is available and invokeai==5.12.0
      depends on torch>=2.7.0,<2.8.dev0, we can conclude that invokeai==5.12.0
      cannot be used.
      And because you require invokeai==5.12.0, we can conclude that your
      requirements are unsatisfiable.
"""


def test_pip_resolution_impossible_names_both_requirements(matrix: Matrix) -> None:
    found = top(PIP_CONFLICT, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "axolotl 0.10.0 requires torch==2.6.0" in found.message
    assert "you ask for torch==2.7.1" in found.message
    assert "--no-deps" in said(found)


def test_uv_derivation_wrapped_over_lines(matrix: Matrix) -> None:
    found = top(UV_CONFLICT, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "torch==2.6.0" in found.message and "torch==2.7.1" in found.message
    assert 'override-dependencies = ["torch==2.7.1"]' in said(found)


def test_uv_index_that_stops_before_the_required_torch(matrix: Matrix) -> None:
    found = top(UV_INDEX, matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "the cu124 index stops before that release" in found.message
    # torch 2.7's builds, from the matrix
    assert "cu128" in said(found) and "torch==2.7." in said(found)


def test_pip_replacing_the_installed_torch_for_a_requirement(matrix: Matrix) -> None:
    text = ("$ pip install accelerate\nCollecting accelerate\nCollecting torch>=1.10.0 (from "
            "accelerate)\n  Downloading torch-2.3.0-cp38-cp38-manylinux1_x86_64.whl\n"
            "Installing collected packages: torch, accelerate\n  Attempting uninstall: torch\n"
            "    Found existing installation: torch 1.8.2\n    Uninstalling torch-1.8.2:\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "accelerate requires torch>=1.10.0" in found.message and "1.8.2" in found.message
    # a requirement the installed torch meets is not a conflict
    met = text.replace("torch 1.8.2", "torch 2.1.0").replace("torch-1.8.2", "torch-2.1.0")
    assert not any(d.subject == "resolver_conflict" for d in triage(met, matrix).diagnosis)


def test_geforce_cards_hanging_in_their_first_collective(matrix: Matrix) -> None:
    text = ("Training with deepspeed on 4x RTX 4090 gets stuck at the first step, no error; "
            "the same script runs on 3090s.\ndist.init_process_group(backend='nccl')\n")
    found = top(text, matrix)
    assert found.category == Category.COLLECTIVE_FAILED
    assert "NCCL_P2P_DISABLE=1" in said(found)
    # a hang on data-center GPUs with nothing about the PCIe path: not this
    other = text.replace("4x RTX 4090", "8x H100").replace("3090s", "A100s")
    assert not any(d.subject == "nccl_p2p" for d in triage(other, matrix).diagnosis)


def test_pcie_acs_hang(matrix: Matrix) -> None:
    text = ("ncclAllReduce deadlocks on two RTX 6000 Ada over PCIe (nvidia-smi topo -m shows "
            "NODE), 100% SM utilization forever. NCCL 2.25.1\n")
    found = top(text, matrix)
    assert found.category == Category.COLLECTIVE_FAILED
    assert "pci=noacs" in said(found) and "NCCL_P2P_DISABLE=1" in said(found)


def test_force_cuda_set_but_not_exported_in_a_docker_build(matrix: Matrix) -> None:
    text = ("FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN FORCE_CUDA=1 && pip install "
            "'git+https://github.com/facebookresearch/pytorch3d.git'\n\nRunning the image: "
            "RuntimeError: Not compiled with GPU support\n")
    found = top(text, matrix)
    assert found.category == Category.NO_GPU
    assert "shell variable" in found.message
    assert ("FORCE_CUDA=1 python -m pip install --no-build-isolation --no-cache-dir "
            "--force-reinstall --no-deps git+https://github.com/facebookresearch/pytorch3d"
            in said(found))


def test_an_arch_the_build_cannot_see(matrix: Matrix) -> None:
    text = ("Step 7/9 : RUN pip install git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory"
            "=bindings/torch\nUnknown compute capability. Specify the target compute capabilities"
            " in the TCNN_CUDA_ARCHITECTURES environment variable or install PyTorch with the "
            "CUDA backend to detect it automatically.\n")
    found = top(text, matrix)
    assert found.category == Category.NO_GPU and "TCNN_CUDA_ARCHITECTURES" in said(found)


def test_the_cuda_image_started_without_the_gpu(matrix: Matrix) -> None:
    text = ("$ docker run myimage\n== CUDA ==\nCUDA Version 11.1.1\nWARNING: The NVIDIA Driver "
            "was not detected.  GPU functionality will not be available.\n")
    found = top(text, matrix)
    assert found.category == Category.NO_GPU and "--gpus all" in said(found)


def test_a_cpu_torch_stated_beside_cuda_unavailable(matrix: Matrix) -> None:
    text = ("运行web-ui时显示cuda is no avaible\n>>> torch.__version__\n'2.6.0+cpu'\n")
    found = top(text, matrix)
    assert found.category == Category.TORCH_CPU_ONLY


def test_libuv_message_as_some_releases_spell_it(matrix: Matrix) -> None:
    text = "RuntimeError: use_libuv was requested but PyTorch was build without libuv support\n"
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "USE_LIBUV" in said(found)


def test_torch_1x_build_for_an_older_cuda_than_the_gpu(matrix: Matrix) -> None:
    text = ("NVIDIA A100-SXM4-80GB with CUDA capability sm_80 is not compatible with the current "
            "PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_37 "
            "sm_50 sm_60 sm_70.\nThe pyTorch version (v1.10.1) from requirements.txt\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE
    assert "torch==1.10.1+cu111" in said(found)  # the same release, its CUDA 11.1 build


def test_th_headers_torch_1_11_removed(matrix: Matrix) -> None:
    text = ("src/cpu/dcn_v2_im2col_cpu.cpp:9:10: fatal error: TH/TH.h: No such file or directory\n"
            "    9 | #include <TH/TH.h>\ncompilation terminated.\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "torch<1.11" in said(found) and "ATen" in said(found)


def test_a_compute_capability_floor_written_without_its_dot(matrix: Matrix) -> None:
    text = ("Tesla V100-SXM2-32GB\nRuntimeError: Turing Tensor Core operations must be run on a "
            "machine with compute capability at least 75.\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "7.5" in said(found)


def test_pkg_resources_packaging_told_in_a_title(matrix: Matrix) -> None:
    text = "ImportError with pkg_resources and packaging in PEFT when using setuptools >= 70.0.0\n"
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "setuptools<70" in said(found)


def test_transformers_exports_by_release(matrix: Matrix) -> None:
    newer = ("ImportError: cannot import name 'Qwen2_5_VLForConditionalGeneration' from "
             "'transformers' (/venv/lib/python3.11/site-packages/transformers/__init__.py)\n"
             "transformers==4.46.3\n")
    found = top(newer, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "transformers>=4.49.0" in said(found)  # the wheels' import lists: first in 4.49
    removed = ("ImportError: cannot import name 'AutoModelForVision2Seq' from 'transformers'\n"
               "transformers 5.2.0\n")
    found = top(removed, matrix)
    assert "transformers==4.57" in said(found)
    # the installed release exports it: not this cause
    has = newer.replace("4.46.3", "4.51.3")
    assert not any(d.subject == "hf_name" for d in triage(has, matrix).diagnosis)


def test_nvcc_at_run_time(matrix: Matrix) -> None:
    shown = ("ERROR [multiproc_executor.py:694] RuntimeError: Could not find nvcc\n$ nvcc --version\n"
             "Cuda compilation tools, release 12.8, V12.8.93\nPATH includes /usr/local/cuda/bin\n")
    found = top(shown, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "export CUDA_HOME=/usr/local/cuda" in said(found)
    absent = ("vllm 0.11.0 in nvidia/cuda:12.8.1-runtime-ubuntu22.04\n"
              "FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'\n")
    found = top(absent, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "-devel image" in said(found)


def test_accelerates_own_refusal_of_p2p_and_ib(matrix: Matrix) -> None:
    text = ("NotImplementedError: Using RTX 4000 series doesn't support faster communication "
            "broadband via P2P or IB. Please set `NCCL_P2P_DISABLE=\"1\"` and `NCCL_IB_DISABLE="
            "\"1\" or use `accelerate launch` which will do this automatically.\n")
    found = top(text, matrix)
    assert found.category == Category.COLLECTIVE_FAILED
    assert "NCCL_IB_DISABLE=1" in said(found) and "NCCL_P2P_DISABLE=1" in said(found)


def test_two_ranks_on_one_gpu(matrix: Matrix) -> None:
    text = ("torch.distributed.DistBackendError: NCCL error, invalid usage\nLast error:\n"
            "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 2000\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_ASSIGNMENT and "LOCAL_RANK" in said(found)


def test_torch_compile_refusing_a_newer_python(matrix: Matrix) -> None:
    text = ('    raise RuntimeError("Python 3.12+ not yet supported for torch.compile")\n'
            "RuntimeError: Python 3.12+ not yet supported for torch.compile\ntorch 2.2.1\n")
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert '"torch>=2.4"' in said(found) and "Python 3.11" in said(found)


def test_transformer_engine_core_without_its_torch_extension(matrix: Matrix) -> None:
    text = "FileNotFoundError: Could not find shared object file for Transformer Engine torch lib.\n"
    found = top(text, matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "transformer_engine[pytorch]" in said(found)


def test_a_binary_outgrowing_its_own_manylinux_tag(matrix: Matrix) -> None:
    text = ("在ubuntu 20.04部署时遇到了bitsandbytes报错\uff0c报错信息`OSError: /lib/x86_64-linux-gnu/"
            "libc.so.6: version `GLIBC_2.34' not found`\n")
    found = top(text, matrix)
    assert found.category == Category.GLIBC_TOO_OLD
    assert "tagged manylinux for glibc 2.24" in said(found)  # the index's file names
    assert "pip install --upgrade bitsandbytes" in said(found)


def test_a_packages_own_library_named_bare(matrix: Matrix) -> None:
    text = ("OSError libtorchaudio.so: undefined symbol: _ZN3c104cuda20CUDACachingAllocator9"
            "allocatorE when importing MSE\n")
    found = top(text, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and "torchaudio" in found.message


def test_a_rocm_torch_on_windows_without_amds_hip_runtime(matrix: Matrix) -> None:
    text = ('OSError: [WinError 126] The specified module could not be found. Error loading '
            '"F:\\ComfyUI\\python_embeded\\Lib\\site-packages\\torch\\lib\\c10_hip.dll" or one '
            "of its dependencies.\n")
    found = top(text, matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "Adrenalin" in said(found)


def test_a_linux_wheel_refused_on_windows(matrix: Matrix) -> None:
    text = ("PS E:\\ComfyUI> python.exe -s -m pip install nunchaku-0.1.3+torch2.6-cp311-cp311-"
            "linux_x86_64.whl\nERROR: nunchaku-0.1.3+torch2.6-cp311-cp311-linux_x86_64.whl is not "
            "a supported wheel on this platform.\n")
    found = top(text, matrix)
    assert found.category == Category.WRONG_WHEEL and "win_amd64" in said(found)


def test_a_device_index_beyond_the_gpus(matrix: Matrix) -> None:
    text = ("torchrun --nproc_per_node=4 train.py\nRuntimeError: CUDA error: invalid device "
            "ordinal\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_ASSIGNMENT and "--nproc_per_node=4" in found.message


def test_dockers_unquoted_gpu_list(matrix: Matrix) -> None:
    text = ("$ docker run --gpus device=0,1 myimage\ndocker: Error response from daemon: cannot "
            "set both Count and DeviceIDs on device request.\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_ASSIGNMENT and "'\"device=0,1\"'" in said(found)


def test_ray_without_a_gpu_resource(matrix: Matrix) -> None:
    text = ("(autoscaler +32s) Error: No available node types can fulfill resource request "
            "{'CPU': 1.0, 'GPU': 1.0}. Add suitable node types to this cluster to resolve this "
            "issue.\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_ASSIGNMENT and "--num-gpus" in said(found)


def test_pip_refusing_a_wheel_whose_metadata_version_differs(matrix: Matrix) -> None:
    text = ("ERROR: Requested warpctc-pytorch==0.2.1+torch13.cuda101 from https://<index>/"
            "warpctc_pytorch-0.2.1%2Btorch13.cuda101-cp36-cp36m-manylinux1_x86_64.whl has "
            "different version in metadata: '0.2.1'\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and '"pip<20.3"' in said(found)
