"""Attributes of transformers' model classes by release (tools/gen_hf_attrs.py from the release
wheels, data/transformers_attrs.json): the generator's reading of a class, on a wheel made here,
and what triage says of "'X' object has no attribute 'y'" for a class the table knows, one the
attention refactor merged away, and one of remote code."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_hf_attrs import table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_hf_attrs  # noqa: E402

MODELING = '''
from ...modeling_utils import PreTrainedModel
from torch import nn

class FooAttention(nn.Module):
    scaling_kind = "fixed"

    def __init__(self, config):
        super().__init__()
        self.is_causal = True
        self.head_dim, self.scale = 64, 0.125
        setattr(self, "dropout_p", 0.0)

    def forward(self, x):
        return x

class FooFlashAttention2(FooAttention):
    def __init__(self, *args):
        super().__init__(*args)
        self._flash_attn_uses_top_left_mask = False

if True:
    class FooModel(PreTrainedModel):
        pass
'''
UTILS = '''
class PreTrainedModel:
    def gradient_checkpointing_enable(self):
        self._gradient_checkpointing = True
'''


def _wheel(tmp_path: Path, version: str, modeling: str) -> Path:
    path = tmp_path / f"transformers-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("transformers/models/foo/modeling_foo.py", modeling)
        archive.writestr("transformers/modeling_utils.py", UTILS)
    return path


def test_a_class_has_what_its_body_its_methods_and_its_bases_bind(tmp_path: Path) -> None:
    classes = gen_hf_attrs.release(_wheel(tmp_path, "4.52.0", MODELING))
    local = classes["FooFlashAttention2"][1]
    assert {"is_causal", "head_dim", "scale", "dropout_p", "scaling_kind", "forward",
            "_flash_attn_uses_top_left_mask"} <= local
    model_full, model_local = classes["FooModel"]  # under a top-level `if`
    assert "_gradient_checkpointing" in model_full  # from modeling_utils' PreTrainedModel
    assert "_gradient_checkpointing" not in model_local  # shared by every model: not kept


def test_the_table_keeps_what_differs_and_what_a_merge_took_away(tmp_path: Path) -> None:
    merged = MODELING.replace("class FooFlashAttention2(FooAttention):",
                              "class _Gone:").replace("self.is_causal = True", "pass")
    _wheel(tmp_path, "4.52.0", MODELING)
    _wheel(tmp_path, "4.53.0", merged)
    found = gen_hf_attrs.collect(tmp_path)
    assert found["tags"] == ["4.52.0", "4.53.0"]
    assert found["attributes"]["FooAttention"]["is_causal"] == "0"  # type: ignore[index]
    assert "_flash_attn_uses_top_left_mask" in found["merged"]["FooFlashAttention2"]  # type: ignore[index]
    # what FooAttention itself still had at the flash class's last release is not the merge's
    assert "is_causal" not in found["merged"]["FooFlashAttention2"]  # type: ignore[index]


def test_the_data_file_is_the_generators_rendering() -> None:
    text = (ROOT / "data" / "transformers_attrs.json").read_text(encoding="utf-8")
    assert gen_hf_attrs.render(json.loads(text)) == text


def test_facts_read_from_the_wheels() -> None:
    data = table()
    tag = data.tags.index
    # Qwen2.5-VL's vision attention lacked is_causal in 4.53.0 only (its fix release 4.53.1)
    assert tag("4.53.0") not in data.attribute("Qwen2_5_VLVisionAttention", "is_causal")
    assert tag("4.53.1") in data.attribute("Qwen2_5_VLVisionAttention", "is_causal")
    # the per-model flash classes' _flash_attention_forward method: up to 4.42.4
    assert data.tags[data.attribute("Qwen2FlashAttention2", "_flash_attention_forward")[-1]] \
        == "4.42.4"


def test_an_attribute_the_installed_release_lacks_and_the_next_one_has(matrix: Matrix) -> None:
    found = top("transformers==4.53.0\nAttributeError: 'Qwen2_5_VLVisionAttention' object has no "
                "attribute 'is_causal'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "transformers>=4.53.1" in said(found)


def test_an_attribute_removed_before_the_installed_release(matrix: Matrix) -> None:
    found = top("transformers == 4.44.2 xtuner == 0.1.23\n  File \"/env/lib/python3.10/"
                "site-packages/xtuner/model/modules/dispatch/qwen2.py\", line 140, in forward\n"
                "AttributeError: 'Qwen2FlashAttention2' object has no attribute "
                "'_flash_attention_forward'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "up to 4.42.4 and 4.43.0 removed" in found.message and "xtuner" in found.message
    assert "transformers==4.42.4" in said(found)


def test_an_attribute_of_a_class_the_refactor_merged_away(matrix: Matrix) -> None:
    data = table()
    last = data.tags[data.runs("Qwen2_5_VLFlashAttention2")[-1]]
    found = top("transformers == 4.54.0\nAttributeError: 'Qwen2_5_VLAttention' object has no "
                "attribute '_flash_attn_uses_top_left_mask'\n", matrix)
    assert "merged Qwen2_5_VLFlashAttention2 into Qwen2_5_VLAttention" in found.message
    assert f"transformers=={last}" in said(found)


def test_a_remote_code_class_of_a_kind_that_lost_it(matrix: Matrix) -> None:
    found = top("transformers 4.44.2\n  File \"/root/.cache/huggingface/modules/"
                "transformers_modules/xcomposer2/modeling_internlm2.py\", line 500\n"
                "AttributeError: 'InternLM2FlashAttention2' object has no attribute "
                "'_flash_attention_forward'\n", matrix)
    assert "transformers==4.42.4" in said(found) and "remote code" in found.message


@pytest.mark.parametrize("text", [
    # the installed release has it: something else is wrong
    "transformers==4.53.1\nAttributeError: 'Qwen2_5_VLVisionAttention' object has no attribute "
    "'is_causal'\n",
    # an attribute every release of the class has, or none: no release difference
    "transformers==4.50.0\nAttributeError: 'LlamaModel' object has no attribute 'banana'\n",
    # nn.Module's own attributes are never in the table
    "AttributeError: 'LlamaAttention' object has no attribute 'training'\n",
])
def test_what_is_no_release_difference_is_left_alone(matrix: Matrix, text: str) -> None:
    assert not any(d.message.startswith(("Qwen2_5_VLVisionAttention.is_causal", "banana"))
                   or "transformers had up to" in d.message
                   for d in triage(text, matrix).diagnosis)


def test_a_report_without_the_error_never_reads_the_table() -> None:
    code = ("from fadoctor.matrix import load_matrix\nfrom fadoctor.triage.diagnose import triage\n"
            "from fadoctor.triage import mech_hf_attrs\n"
            "triage('RuntimeError: CUDA error: no kernel image is available\\n', load_matrix(None))\n"
            "print(mech_hf_attrs.table.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src")})
    assert out.stdout.strip() == "0"
