"""Mechanisms from held_out_22's development half: a C++ standard library symbol missing (the
build's GCC newer than the libstdc++ loaded), apex's own CUDA check, headers missing from a
conda nvcc, cudaErrorInvalidPtx, a monkeypatch passing a keyword transformers dropped, a
pre-Ampere GPU said to be unsupported, head sizes a kernel asserts (576 is MLA), a name the
stated release has (another install shadows it), a markdown-quoted exception, Inductor beside
a Triton off torch's pin, torch imported from pip's isolated build environment, and a GeForce
series written without "RTX"."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_a_missing_std_symbol_is_the_builds_gcc(matrix: Matrix) -> None:
    text = ("ImportError: /env/lib/python3.8/site-packages/amp_C.cpython-38-x86_64-linux-gnu.so: "
            "undefined symbol: _ZNSt15__exception_ptr13exception_ptr9_M_addrefEv\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "apex was compiled by a newer GCC" in found.message
    assert "std::__exception_ptr::exception_ptr::_M_addref()" in found.message
    assert "export CC=gcc-10 CXX=g++-10" in [c for r in found.remedies for c in r.commands]


def test_a_torch_symbol_is_still_a_torch_mismatch(matrix: Matrix) -> None:
    text = ("ImportError: /env/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
            "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    assert top(text, matrix).category == Category.TORCH_VERSION_MISMATCH


def test_apex_refusing_another_cuda_names_torchs(matrix: Matrix) -> None:
    text = ("Cuda compilation tools, release 8.0, V8.0.61\n"
            "Warning:  Cuda extensions are being compiled with a version of Cuda that does not "
            "match the version used to compile Pytorch binaries.\n"
            "Pytorch binaries were compiled with Cuda 9.0.176\n"
            "error: command '/usr/local/cuda/bin/nvcc' failed with exit status 2\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "export CUDA_HOME=/usr/local/cuda-9.0" in [c for r in found.remedies for c in r.commands]


def test_headers_missing_from_a_conda_nvcc(matrix: Matrix) -> None:
    text = ("cc1plus: fatal error: cuda_runtime.h:No file or directory\n"
            "error: command '/home/u/anaconda3/envs/x/bin/nvcc' failed with exit status 1\n"
            "Running setup.py install for apex ... error\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "no CUDA headers" in found.message
    assert "CUDA_HOME" in said(found)
    assert not any("pip install apex" in c for r in found.remedies for c in r.commands)


def test_ptx_jit_failure_is_the_driver(matrix: Matrix) -> None:
    found = top("RuntimeError: CUDA error: a PTX JIT compilation failed (multi_tensor_apply at "
                "csrc/multi_tensor_apply.cuh:101)\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "driver" in said(found)


def test_a_monkeypatch_passing_a_dropped_keyword(matrix: Matrix) -> None:
    text = ('  File "/home/u/axolotl/src/axolotl/monkeypatch/llama_attn_hijack_flash.py", line 442, '
            "in flashattn_forward\n    cos, sin = self.rotary_emb(\n"
            '  File "/opt/env/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1527, '
            "in _call_impl\n    return forward_call(*args, **kwargs)\n"
            "TypeError: LlamaRotaryEmbedding.forward() got an unexpected keyword argument "
            "'seq_len'\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "between axolotl and transformers" in found.message
    assert said(found).startswith("Downgrade transformers to the release axolotl was written for")


def test_a_pre_ampere_gpu_said_unsupported(matrix: Matrix) -> None:
    found = top("V100\n\nV100 GPU not supported\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "sdpa" in said(found).lower()


def test_head_sizes_a_kernel_asserts_and_mla(matrix: Matrix) -> None:
    text = ("Does it support head_size = 576 on Ampere?\n"
            "Error: assert(head_size == 128 || head_size == 256);\n")
    found = top(text, matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED
    assert "head sizes 128, 256" in found.message and "MLA" in said(found)
    other = top("Error: assert(head_size == 64 || head_size == 128);\nmy head_dim = 96\n", matrix)
    assert other.category == Category.HEAD_DIM_UNSUPPORTED and "MLA" not in said(other)


def test_flashinfer_without_a_tile_configuration(matrix: Matrix) -> None:
    text = ("Runtime error with head dim 224\n  what():  FlashInfer Internal Error: Invalid "
            "configuration : num_frags_x=1 num_frags_y=14 num_frags_z=4 num_warps_x=4\n")
    found = top(text, matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED and "224" in found.message


def test_a_name_the_stated_release_has_is_another_install(matrix: Matrix) -> None:
    text = ("error: module 'triton.language' has no attribute 'inline_asm_elementwise'\n"
            "i have install triton-2.3.1\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "another, older install" in found.message
    assert 'python -m pip install --force-reinstall --no-deps triton==2.3.1' in [
        c for r in found.remedies for c in r.commands]


def test_a_quoted_import_error_offers_both_directions(matrix: Matrix) -> None:
    text = ("With transformers-4.48.1 I get the following error:\n\n> ImportError: cannot import "
            "name 'is_torch_greater_or_equal_than_1_13' from 'transformers.pytorch_utils' "
            "(/env/lib/python3.10/site-packages/transformers/pytorch_utils.py)\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert any('install "transformers<4.48.1"' in c for r in found.remedies for c in r.commands)


def test_inductor_beside_a_triton_off_the_pin_on_windows(matrix: Matrix) -> None:
    text = ("> torch._inductor.exc.InductorError: AttributeError: type object 'CompiledKernel' "
            "has no attribute 'launch_enter_hook'\ntorch 2.7.1, cuda 12.8\n"
            "triton-windows             3.4.0.post20\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert any('"triton-windows<3.4"' in c for r in found.remedies for c in r.commands)


def test_torch_from_the_isolated_build_env_on_rocm(matrix: Matrix) -> None:
    text = ("GPU is 7900XTX, ROCm version 6.2.3, Pytorch version 2.3.0\n"
            "Collecting mamba-ssm[causal-conv1d]\n  Using cached mamba_ssm-2.2.4.tar.gz (91 kB)\n"
            "  Getting requirements to build wheel ... error\n"
            "      /tmp/pip-build-env-u3wq8vyd/overlay/local/lib/python3.10/dist-packages/torch/"
            "_subclasses/functional_tensor.py:295: UserWarning: Failed to initialize NumPy\n"
            "      UserWarning: mamba_ssm was requested, but nvcc was not found.\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_ISOLATION and "mamba-ssm" in found.message
    commands = [c for r in found.remedies for c in r.commands]
    assert "python -m pip install mamba-ssm --no-build-isolation" in commands
    assert not any(c.startswith("python -m pip install torch ") for c in commands)


def test_a_geforce_series_without_rtx(matrix: Matrix) -> None:
    found = top("Not working with 50 series cards: RuntimeError: CUDA error: no kernel image is "
                "available for execution on the device\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "sm_120" in found.message
    result = triage("ran 50 series of tests: error\n", matrix)
    assert not any("RTX 50" in d.message for d in result.diagnosis)


def test_pythons_own_wording_without_its_exception_class(matrix: Matrix) -> None:
    found = top("module 'torch' has no attribute 'float8_e4m3fn'\n\nfollowing the README env\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT
    # the release that first defines the dtype (torch 2.1.0, from its wheels' libraries)
    assert "Upgrade torch to 2.1.0 or later" in said(found) and "torch>=2.1.0" in said(found)


def test_a_lookup_by_a_renamed_distribution(matrix: Matrix) -> None:
    text = ("starting a sglang server: importlib.metadata.PackageNotFoundError: flashinfer\n"
            "I ran `pip install flashinfer-python -i https://<index>/whl/cu124/torch2.5/`\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "installed as 'flashinfer-python'" in found.message
    assert "python -m pip install --upgrade sglang" in [c for r in found.remedies for c in r.commands]


def test_bitsandbytes_raising_for_a_missing_cuda_binary(matrix: Matrix) -> None:
    text = ("RuntimeError: Configured CUDA binary not found at /usr/local/lib/python3.12/dist-"
            "packages/bitsandbytes/libbitsandbytes_cuda129.so\n")
    found = top(text, matrix)
    assert "CUDA 12.9" in found.message and "bitsandbytes" in said(found)


def test_mps_without_float8(matrix: Matrix) -> None:
    # labelled: from held_out_22's held misses, measured after (no longer unseen)
    found = top("TypeError: Trying to convert Float8_e4m3fn to the MPS backend but it does not "
                "have support for that dtype.\nMacBook Pro M4\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "fp16" in said(found)


def test_xformers_triton_notice_is_harmless(matrix: Matrix) -> None:
    text = ("A matching Triton is not available, some optimizations will not be enabled.\n"
            "Error caught was: No module named 'triton'\n")
    found = top(text, matrix)
    assert found.category == Category.INFO and "ignore" in said(found)
    compiled = top("torch.compile failed\n" + text + "torch._inductor.exc.TritonMissing: Cannot "
                   "find a working triton installation.\n", matrix)
    assert compiled.category != Category.INFO


def test_the_pre_ampere_prior_leaves_a_dtype_refusal_alone(matrix: Matrix) -> None:
    text = ("V100 32 GB: RuntimeError: Current CUDA Device does not support bfloat16. Please "
            "switch dtype to float16.\n")
    assert not any(d.category == Category.GPU_UNSUPPORTED and "no message names" in d.message
                   for d in triage(text, matrix).diagnosis)


def test_the_loaders_glibc_line_with_two_opening_quotes(matrix: Matrix) -> None:
    # labelled: found by held_out_23's measure (no longer unseen)
    found = top("version `GLIBC_2.32\u2018 not found (required by /env/lib/python3.10/site-packages/"
                "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so)\n", matrix)
    assert found.category == Category.GLIBC_TOO_OLD and "GLIBC_2.32" in found.message


def test_inductor_without_msvc_on_windows(matrix: Matrix) -> None:
    # labelled: found by held_out_23's measure (no longer unseen)
    found = top("torch._inductor.exc.InductorError: RuntimeError: Compiler: cl is not found.\n",
                matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "vcvarsall.bat" in said(found)
