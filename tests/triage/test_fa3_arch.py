"""A FlashAttention-3 kernel on a GPU it has no kernels for (hopper/setup.py builds sm_90a and
sm_80 only), a Hopper-only FA3 named beside another GPU, and a pre-Ampere GPU named in a report
about flash-attention with no error that says more."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_an_fa3_launch_error_on_blackwell_through_xformers_names_the_xformers_bound(
        matrix: Matrix) -> None:
    # written for this test, in the shape xformers' bundled FA3 prints (hopper/*.h paths)
    text = ("GPU: NVIDIA GeForce RTX 5080\nxformers 0.0.32.post2\n"
            "CUDA error (/__w/xformers/xformers/third_party/flash-attention/hopper/"
            "flash_fwd_launch_template.h:188): invalid argument\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "sm_120" in top.message
    said = _said(top)
    assert "xformers>=0.0.33" in said and "uninstall -y xformers" in said
    assert "sdpa" in said.lower()


def test_an_fa3_launch_error_on_hopper_is_not_the_arch(matrix: Matrix) -> None:
    text = ("GPU 0: NVIDIA H100 80GB HBM3\nCUDA error (/src/flash-attention/hopper/"
            "flash_fwd_launch_template.h:188): invalid argument\n")
    assert all("FlashAttention-3 kernel" not in d.message for d in triage(text, matrix).diagnosis)


def test_a_hopper_only_fa3_named_beside_an_ampere_gpu(matrix: Matrix) -> None:
    # written for this test: prose only, as a short issue gives it
    text = ("The FA3 Hub kernel we load is Hopper-only and crashes here.\n"
            "My machine has an RTX A6000.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "RTX A6000" in top.message
    assert "FLASH_ATTENTION_DISABLE_SM80" in _said(top)


def test_a_volta_gpu_in_prose_about_flash_attention_2(matrix: Matrix) -> None:
    text = "How can I run this without Flash-Attention 2? Our cluster only has V100 cards.\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "V100" in top.message and "8.0" in top.message
    assert "sdpa" in _said(top).lower()


def test_a_framework_fallback_on_this_device_with_a_volta_gpu_named_in_chinese_prose(
        matrix: Matrix) -> None:
    # CJK prose glued to a model name and a memory size: "英伟达titanV12G"
    text = ("FlashAttention is not available on this device. Using scaled_dot_product_attention "
            "instead.\n服务器是英伟达titanV12G\uff0ccuda12.2\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert any("titanV12G" in q for q in top.evidence["quoted"])


def test_an_error_outranks_the_old_gpu_or_stops_the_guess(matrix: Matrix) -> None:
    build = ("Collecting flash-attn\n  Getting requirements to build wheel ... error\n"
             "  ModuleNotFoundError: No module named 'torch'\nGPU: Tesla V100-SXM2-32GB\n")
    diagnosis = triage(build, matrix).diagnosis
    assert diagnosis[0].category == Category.BUILD_ISOLATION
    # an error nothing explains: the old GPU is not offered as its cause
    bare = "GPU: Tesla V100-SXM2-32GB\nModuleNotFoundError: No module named 'torch'\n"
    assert all(d.category != Category.GPU_UNSUPPORTED for d in triage(bare, matrix).diagnosis)


def test_an_xformers_fallback_error_on_turing_is_the_gpu(matrix: Matrix) -> None:
    # vLLM runs XFormers where FlashAttention needs Ampere; the feature XFormers lacks is the
    # symptom, the Turing GPU the cause
    text = "ValueError: XFormers does not support attention logits soft capping.\nGPU: Quadro RTX 4000\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "Ampere" in top.remedies[0].summary


def test_torch_without_the_arch_outranks_a_generic_no_kernel_image(matrix: Matrix) -> None:
    text = ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
            "PyTorch installation.\nRuntimeError: CUDA error: no kernel image is available for "
            "execution on the device\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.message.startswith("torch has no kernels")
    assert "the first release with them" in top.remedies[0].summary


def test_no_kernel_image_with_no_flash_attention_in_sight_offers_torch_first(
        matrix: Matrix) -> None:
    text = ("RuntimeError: CUDA error: no kernel image is available for execution on the device "
            "on my 5070 Ti\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.remedies[0].commands[0].startswith("python -m pip install torch==")
