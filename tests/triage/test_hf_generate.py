"""The keywords transformers' generate() passes into a model's own methods by release
(tools/gen_hf_generate.py from the release wheels, data/transformers_generate.yaml): the
generator's reading of generation/utils.py and of Llama's prepare_inputs_for_generation, on wheels
made here, and what triage says of "X.forward() got an unexpected keyword argument 'k'"."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Optional

import pytest
import yaml
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_hf_generate import table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_hf_generate  # noqa: E402

GENERATION = '''
class GenerationMixin:
    def _update_model_kwargs_for_generation(self, outputs, model_kwargs):
        model_kwargs["past_key_values"] = outputs.past_key_values
        NEW
        return model_kwargs

    def _sample(self, input_ids, **model_kwargs):
        model_inputs = self.prepare_inputs_for_generation(input_ids, **model_kwargs)
        outputs = self(**model_inputs, return_dict=True)
'''
LLAMA = '''
class LlamaForCausalLM:
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        model_inputs = {"input_ids": input_ids}
        model_inputs.update({"past_key_values": past_key_values, "use_cache": True, EXTRA})
        return model_inputs
'''


def _wheel(folder: Path, version: str, new: str = "pass", extra: str = "",
           llama: Optional[str] = LLAMA) -> Path:
    path = folder / f"transformers-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("transformers/generation/utils.py", GENERATION.replace("NEW", new))
        if llama is not None:
            archive.writestr("transformers/models/llama/modeling_llama.py",
                             llama.replace("EXTRA", extra))
    return path


def test_what_generate_hands_to_prepare_and_to_forward(tmp_path: Path) -> None:
    found = gen_hf_generate.release(_wheel(tmp_path, "4.40.0",
                                           'model_kwargs["cache_position"] = 0',
                                           '"cache_position": 1'))
    assert found["prepare"] == {"past_key_values", "cache_position"}
    assert {"input_ids", "past_key_values", "use_cache", "cache_position",
            "return_dict"} <= found["forward"]


def test_runs_by_release_and_where_the_reading_begins(tmp_path: Path) -> None:
    _wheel(tmp_path, "4.27.0", llama=None)  # before Llama: forward's keys are not read yet
    _wheel(tmp_path, "4.37.2")
    _wheel(tmp_path, "4.38.2", extra='"cache_position": 1')
    _wheel(tmp_path, "4.39.3", 'model_kwargs["cache_position"] = 0', '"cache_position": 1')
    found = gen_hf_generate.collect(tmp_path)
    assert found["tags"] == ["4.27.0", "4.37.2", "4.38.2", "4.39.3"]
    assert found["covered_from"] == {"prepare": 0, "forward": 1}
    assert found["forward"]["cache_position"] == "2-3"  # type: ignore[index]
    assert found["prepare"]["cache_position"] == "3"  # type: ignore[index]


def test_the_data_file_is_the_generators_rendering() -> None:
    text = (ROOT / "data" / "transformers_generate.yaml").read_text(encoding="utf-8")
    assert gen_hf_generate.render(yaml.safe_load(text)) == text


def test_facts_read_from_the_wheels() -> None:
    data = table()
    # LlamaForCausalLM's prepare_inputs_for_generation returns cache_position from 4.38;
    # generate() itself puts it into model_kwargs from 4.39
    assert data.tags[data.first("forward", "cache_position")].startswith("4.38.")  # type: ignore[index]
    assert data.tags[data.first("prepare", "cache_position")].startswith("4.39.")  # type: ignore[index]
    assert data.first("prepare", "attention_mask") is None  # passed by every release read


def test_remote_model_code_written_before_cache_position(matrix: Matrix) -> None:
    found = top("ERROR Error LlavaLlamaForCausalLM.forward() got an unexpected keyword argument "
                "'cache_position' in generating\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "from 4.38 on" in found.message and "LlavaLlamaForCausalLM" in found.message
    assert "transformers==4.37.2" in said(found)


def test_a_prepare_method_and_an_installed_patch_release(matrix: Matrix) -> None:
    # 4.39.1 is of the 4.39 minor, which the table holds as its latest patch
    found = top("I got this error in Transformers 4.39.1\nTypeError: BARTDecoder."
                "prepare_inputs_for_inference() got an unexpected keyword argument "
                "'cache_position'\n", matrix)
    assert "prepare_inputs_for_generation from 4.39 on" in found.message
    assert "transformers==4.38.2" in said(found)


@pytest.mark.parametrize("text", [
    # the installed transformers does not pass it yet: something else called it
    "transformers==4.36.2\nTypeError: MyModel.forward() got an unexpected keyword argument "
    "'cache_position'\n",
    # a keyword every release passes says nothing of a release
    "TypeError: MyModel.forward() got an unexpected keyword argument 'return_dict'\n",
    # not a model's forward or prepare method
    "TypeError: Trainer.train() got an unexpected keyword argument 'cache_position'\n",
])
def test_no_claim(text: str, matrix: Matrix) -> None:
    result = triage(text, matrix)
    assert all(d.evidence.get("mechanism") != "hf_generate" and "generate() passes" not in d.message
               for d in result.diagnosis)
