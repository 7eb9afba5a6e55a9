"""Reading config.json files into ModelSpec: shipped configs, folders, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.model_configs import config_file

from fadoctor.errors import InputError
from fadoctor.model.spec import CONFIGS, read_config, shipped, spec_from_config


def spec(name: str):  # type: ignore[no-untyped-def]
    return spec_from_config(read_config(config_file(name)), name)


def test_every_shipped_config_reads() -> None:
    # the Qwen configs are measurement fixtures, not shipped: no primary source for their values
    assert set(shipped()) == {"gemma-2-9b", "llama-3.1-8b", "mistral-7b-v0.1",
                              "phi-3-mini-4k-instruct"}
    for name in shipped():
        assert spec(name).num_layers > 0


def test_gemma2_features() -> None:
    g = spec("gemma-2-9b")
    assert (g.head_dim, g.num_heads, g.num_kv_heads) == (256, 16, 8)  # head_dim != 3584 / 16
    assert (g.sliding_window, g.sliding_layers) == (4096, 21)  # every other layer
    assert (g.attn_softcap, g.final_softcap) == (50.0, 30.0)
    assert g.tie_embeddings and not g.structure.sdpa_supported


def test_phi3_head_dim_96_and_llama_rope_scaling() -> None:
    assert spec("phi-3-mini-4k-instruct").head_dim == 96
    assert spec("llama-3.1-8b").rope_scaling == "llama3 x8.0"
    assert spec("qwen2.5-7b").sliding_layers == 0  # use_sliding_window: false


def test_a_model_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((CONFIGS / "mistral-7b-v0.1.json").read_text())
    assert read_config(tmp_path)["model_type"] == "mistral"


@pytest.mark.parametrize("text, message", [
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not a JSON object"),
    ('{"model_type": "llama"}', "num_attention_heads must be a positive integer"),
    ('{"hidden_size": 8}', "no model_type"),
])
def test_bad_configs_are_input_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        spec_from_config(read_config(path), "x")


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read model config"):
        read_config(tmp_path / "absent.json")


def test_multimodal_text_config_is_used() -> None:
    cfg = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    wrapped = {"model_type": "llava", "text_config": cfg}
    assert spec_from_config(wrapped, "w").hidden_size == 4096
