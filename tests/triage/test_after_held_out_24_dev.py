"""The mechanisms written from held_out_24's development half, each on a text written for the
test (not a fixture's): what each reads, what it answers, and where it stays silent."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_transformers_sdpa_refusal_asks_for_a_newer_transformers_or_eager(matrix: Matrix) -> None:
    found = top("ValueError: Idefics9ForCausalLM does not support an attention implementation "
                "through torch.nn.functional.scaled_dot_product_attention yet. Please open an "
                "issue on GitHub\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "Idefics9ForCausalLM" in found.message
    assert "upgrade transformers" in said(found).lower() and 'attn_implementation="eager"' in said(found)


def test_quantized_loading_on_a_cpu_machine_needs_a_gpu(matrix: Matrix) -> None:
    found = top("model = AutoModelForCausalLM.from_pretrained(m, device_map=\"cpu\", "
                "load_in_4bit=True)\nImportError: Using `load_in_8bit=True` requires Accelerate: "
                "`pip install accelerate` and the latest version of bitsandbytes\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "needs a CUDA GPU" in said(found)


def test_quantized_loading_without_any_hint_asks_to_install_first(matrix: Matrix) -> None:
    found = top("ImportError: Using `load_in_8bit=True` requires Accelerate: `pip install "
                "accelerate` and the latest version of bitsandbytes\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "pip install --upgrade accelerate bitsandbytes" in " ".join(
        c for r in found.remedies for c in r.commands)


def test_a_tpu_under_a_cuda_only_stack(matrix: Matrix) -> None:
    found = top("Runtime: Colab TPU v2-8\nfrom unsloth import FastLanguageModel\n"
                "NotImplementedError: Unsloth cannot find any torch accelerator? You need a GPU.\n",
                matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "GPU runtime" in said(found)


def test_a_named_nvidia_gpu_is_not_called_another_accelerator(matrix: Matrix) -> None:
    result = triage("I have an RTX 4090\nNotImplementedError: Unsloth: No NVIDIA GPU found? "
                    "Unsloth currently only supports GPUs!\n", matrix)
    assert all(d.category != Category.PLATFORM_UNSUPPORTED for d in result.diagnosis[:1])


def test_a_library_deleted_under_the_environment_is_reinstalled(matrix: Matrix) -> None:
    found = top("OSError: /env/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12 "
                "(deleted): cannot open shared object file: No such file or directory\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "deleted" in found.message
    assert any("--force-reinstall --no-deps nvidia-cublas-cu12" in c
               for r in found.remedies for c in r.commands)


def test_a_driver_said_too_old_below_cuda_12s_floor(matrix: Matrix) -> None:
    found = top("NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4\n"
                "the engine build says the driver version is too low\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD
    assert "525.60.13" in said(found)


def test_the_amdgpu_assembler_refusing_an_instruction(matrix: Matrix) -> None:
    found = top("kernels.hip:404:17: error: instruction not supported on this GPU\n"
                "Target: gfx906\n", matrix)
    assert found.category == Category.ROCM
    assert "gfx906" in found.message and "PYTORCH_ROCM_ARCH" in said(found)


def test_an_amd_report_comparing_with_an_nvidia_card_gets_no_pre_ampere_prior(
        matrix: Matrix) -> None:
    result = triage("The MI50 is like a 2080ti but cheaper. ROCm build: not supported?\n", matrix)
    assert all(d.category != Category.GPU_UNSUPPORTED or "2080" not in d.message
               for d in result.diagnosis)


def test_triton_invalid_image_under_an_old_driver(matrix: Matrix) -> None:
    found = top("Driver Version: 450.80.02\nTriton Error [CUDA]: device kernel image is invalid\n",
                matrix)
    assert found.category == Category.DRIVER_TOO_OLD
    assert "525.60.13" in said(found)


def test_a_custom_node_importing_a_newer_comfyui(matrix: Matrix) -> None:
    found = top("ModuleNotFoundError: No module named 'comfy.ldm.hunyuan9'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "Update ComfyUI itself" in said(found)


def test_another_packages_glibc_binary_is_built_here(matrix: Matrix) -> None:
    found = top("ImportError: /lib64/libm.so.6: version `GLIBC_2.29' not found (required by "
                "/env/lib/python3.9/site-packages/apex_like/_C/ops.cpython-39-x86_64-linux-gnu.so)\n",
                matrix)
    assert found.category == Category.GLIBC_TOO_OLD
    assert "flash-attn" not in said(found)
    assert "`pip install --no-binary apex-like apex-like`" in said(found)
    assert not any("--no-binary" in c for r in found.remedies for c in r.commands)


def test_a_package_measuring_the_gpu_below_its_floor(matrix: Matrix) -> None:
    found = top("  File \"setup.py\", line 106, in <module>\nRuntimeError: GPUs with compute "
                "capability below 8.0 are not supported.\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert "8.0" in found.message and "sdpa" in said(found).lower()


def test_transformer_engines_old_fp8_gate_on_ada(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA L40S\nAssertionError: Device compute capability 9.x required for FP8 "
                "execution.\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert "Upgrade Transformer Engine" in said(found)


def test_a_rejected_flash_option(matrix: Matrix) -> None:
    found = top("$ llamafactory-cli train x.yaml --flash_attn True\nValueError: Some specified "
                "arguments are not used by the HfArgumentParser: ['--flash_attn', 'True']\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "--flash_attn" in found.message and "LLaMA-Factory" in said(found)


def test_an_optional_extension_retold_missing(matrix: Matrix) -> None:
    found = top("flash_attn/ops/fused_dense.py imports fused_dense_lib but I can't find "
                "fused_dense_lib anywhere\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "csrc/fused_dense_lib" in said(found)


def test_an_optional_extension_built_on_windows(matrix: Matrix) -> None:
    found = top("C:\\src\\flash-attention>pip install csrc/rotary\nOS: Windows 11\nerror: "
                "command 'nvcc.exe' failed\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "Skip csrc/rotary" in said(found)


def test_flash_attns_triton_implementation_under_a_released_triton(matrix: Matrix) -> None:
    found = top("from flash_attn.flash_attn_triton import flash_attn_func\ntriton==2.1.0\n"
                "error: 'scf.for' op expects region #0 to have 0 or 1 blocks\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "flash_attn_func" in said(found)


def test_a_model_warning_is_info(matrix: Matrix) -> None:
    found = top("[WARNING|loader.py:88] Current model does not support FlashAttention-2.\n",
                matrix)
    assert found.category == Category.INFO


def test_an_old_bitsandbytes_layer(matrix: Matrix) -> None:
    found = top("AttributeError: 'Linear8bitLt' object has no attribute 'weight_format'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "pip install --upgrade bitsandbytes" in " ".join(
        c for r in found.remedies for c in r.commands)


def test_a_kernel_fault_names_its_library_and_ranks_below_causes(matrix: Matrix) -> None:
    found = top('  File "/env/lib/python3.10/site-packages/flashinfer/prefill.py", line 9, in run\n'
                "RuntimeError: CUDA error: an illegal memory access was encountered\n", matrix)
    assert found.category == Category.KERNEL_FAILURE
    assert "flashinfer-python" in said(found) and "CUDA_LAUNCH_BLOCKING=1" in said(found)


def test_causal_rows_of_zeros_are_by_design(matrix: Matrix) -> None:
    found = top("flash_attn_func(q, k, v, causal=True) with seqlen_q > seqlen_k: the first rows "
                "of the output are all zeros\n", matrix)
    assert found.category == Category.INFO
    assert "bottom right" in found.message


def test_fp32_asked_of_flash_attention(matrix: Matrix) -> None:
    found = top("Does FlashAttention-2 support float32 inputs?\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "bfloat16" in said(found) or "bf16" in said(found)


def test_a_development_build_missing_its_own_symbol(matrix: Matrix) -> None:
    found = top("installed bitsandbytes-0.47.0.dev12-py3-none-manylinux_2_24_x86_64.whl\n"
                "OSError: /env/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda126.so"
                ": undefined symbol: _Z14kQuantizeBlockPfS_\n", matrix)
    assert "development build" in said(found)
