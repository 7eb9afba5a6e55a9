"""Transformer Engine finding no attention backend: the reasons its debug log gives for turning
each one off name the category; cuDNN's refusal names the cuDNN to upgrade. A version listing
that says FA3 is "not installed" is not FA3 running, nor a framework's check."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

# written for this test, in the words of TE 2.8's debug log (utils.py:386-920)
LOG = ("ValueError: No dot product attention backend is available for the provided inputs\n"
       "DEBUG:DotProductAttention:Running with config={'transformer_engine_version': '2.8.0', "
       "'compute_capability': 'sm100', 'flash_attn_3_version': 'not installed', 'cudnn_version': "
       "'9.10.1', 'qkv_dtype': torch.bfloat16, 'head_dim_qk': 192, 'head_dim_v': 128}\n"
       "DEBUG:DotProductAttention:Disabling FlashAttention 2 as it does not support MLA.\n"
       "DEBUG:DotProductAttention:Disabling FusedAttention as no backend supports the provided "
       "input\nGPU: NVIDIA B200\n")


def test_the_reasons_name_the_category_and_cudnn(matrix: Matrix) -> None:
    found = triage(LOG, matrix).diagnosis
    top = found[0]
    assert top.category == Category.HEAD_DIM_UNSUPPORTED
    assert "cuDNN 9.10.1" in top.remedies[0].summary
    assert "nvidia-cudnn-cu12" in top.remedies[0].commands[0]
    assert all("FlashAttention-3 is run on" not in d.message for d in found)
    assert all(d.category != Category.DTYPE_UNSUPPORTED for d in found)
