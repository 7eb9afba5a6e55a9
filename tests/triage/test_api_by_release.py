"""A caller asks flash-attn's or transformers' API for a keyword, a required argument, a name or a
module the installed release lacks: triage names the releases that have it (from
data/flash_attn_api.yaml and data/transformers_api.yaml) and the pin or upgrade that fixes it.
The facts asserted here are checked against upstream at the cited tags."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_api import api

ROOT = Path(__file__).resolve().parents[2]


def _top(text: str, matrix: Matrix):  # type: ignore[no-untyped-def]
    diagnosis = triage(text, matrix).diagnosis
    assert diagnosis, "no diagnosis"
    return diagnosis[0]


def _commands(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_the_data_holds_release_facts_read_at_the_tags() -> None:
    fa = api("flash_attn")
    def since(key: str, param: str, table: str = "parameters") -> str:
        return fa.version(getattr(fa, table)[key][param][0])
    # flash_attn_interface.py: window_size at v2.3.0, alibi_slopes at v2.4.0, softcap at v2.6.0
    assert since("flash_attn.flash_attn_interface:flash_attn_func", "window_size") == "2.3.0"
    assert since("flash_attn.flash_attn_interface:flash_attn_func", "alibi_slopes") == "2.4.0"
    assert since("flash_attn.flash_attn_interface:_flash_attn_forward", "softcap",
                 "required") == "2.6.0"
    # v2.0.0 renamed flash_attn_unpadded_func to flash_attn_varlen_func
    assert fa.version(fa.names["flash_attn.flash_attn_interface:flash_attn_varlen_func"][0]) \
        == "2.0.0"
    hf = api("transformers")
    have = hf.names["transformers.modeling_flash_attention_utils:flash_attn_varlen_func"]
    # 4.54.0 made modeling_flash_attention_utils import flash-attn lazily
    assert hf.version(have[-1]) == "4.53.3"


def test_an_unexpected_keyword_names_the_release_that_added_it(matrix: Matrix) -> None:
    # written for this test: a caller passes window_size to flash-attn 2.1.1
    text = ("flash-attn 2.1.1\n"
            '  File "/opt/venv/lib/python3.10/site-packages/mymodel/attention.py", line 40\n'
            "    out = flash_attn_func(q, k, v, causal=True, window_size=(4096, 0))\n"
            "TypeError: flash_attn_func() got an unexpected keyword argument 'window_size'\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert "2.3.0" in top.message and "2.1.1" in top.message
    assert '"flash-attn>=2.3.0"' in _commands(top) or "'flash-attn>=2.3.0'" in _commands(top)


def test_a_newly_required_argument_pins_the_release_before_and_names_the_caller(
        matrix: Matrix) -> None:
    # written for this test: a ring-attention package calls the private forward of 2.5.x
    text = ("pip show flash-attn: Version: 2.7.0.post2\n"
            'File "/usr/lib/python3/dist-packages/ring_flash_attn/ring_flash_attn.py", line 33, '
            "in ring_flash_attn_forward\n    block_out, block_lse = _flash_attn_forward(\n"
            "TypeError: _flash_attn_forward() missing 1 required positional argument: 'softcap'\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert "2.6.0" in top.message and "ring_flash_attn" in top.message
    assert "flash-attn==2.5.9.post1" in _commands(top)


def test_a_name_transformers_stopped_exporting_gets_its_home_and_the_last_release(
        matrix: Matrix) -> None:
    # written for this test, with the typographic quotes a rendered issue page gives
    text = ("transformers 4.55.0\nfrom transformers.modeling_flash_attention_utils import "
            "flash_attn_varlen_func\nImportError: cannot import name \u2018flash_attn_varlen_func"
            "\u2019 from \u2018transformers.modeling_flash_attention_utils\u2019\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT
    said = _commands(top)
    assert "from flash_attn import flash_attn_varlen_func" in said
    assert "transformers==4.53.3" in said


def test_a_module_a_later_release_added_or_removed(matrix: Matrix) -> None:
    # written for this test: ops.triton.rotary arrived in 2.2; ops.triton.layernorm was renamed
    # layer_norm after 2.4.x
    fa = api("flash_attn")
    added = fa.version(fa.modules["flash_attn.ops.triton.rotary"][0])
    top = _top("flash-attn==2.0.4\nModuleNotFoundError: No module named "
               "'flash_attn.ops.triton.rotary'\n", matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert added in top.message and added.startswith("2.")
    last = fa.version(fa.modules["flash_attn.ops.triton.layernorm"][-1])
    top = _top("flash-attn 2.5.8\nModuleNotFoundError: No module named "
               "'flash_attn.ops.triton.layernorm'\n", matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert f"flash-attn=={last}" in _commands(top)


@pytest.mark.parametrize("text", [
    # every release has it: a broken install, not a version
    "ModuleNotFoundError: No module named 'flash_attn.flash_attn_interface'\n",
    # another library's function of the same name and a keyword no flash-attn release has
    "TypeError: flash_attn_func() got an unexpected keyword argument 'no_such_argument'\n",
    # flash-attn-4's package: mech_catalog's FA4 entries read it
    "ModuleNotFoundError: No module named 'flash_attn.cute'\n",
])
def test_what_is_not_a_release_difference_is_left_to_the_others(matrix: Matrix,
                                                                 text: str) -> None:
    said = [d.message for d in triage(text, matrix).diagnosis]
    assert not [m for m in said if re.search(r"is in (?:flash-attn|transformers) \d", m)]


def test_the_data_files_are_in_the_generators_own_rendering() -> None:
    # regenerating needs upstream (a flash-attention clone, transformers wheels: `--check`);
    # offline, each file must be what its generator's render() writes for its own content
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_fa_api
    import gen_hf_api
    import yaml
    for module, name in ((gen_fa_api, "flash_attn_api.yaml"), (gen_hf_api, "transformers_api.yaml")):
        text = (ROOT / "data" / name).read_text(encoding="utf-8")
        assert module.render(yaml.safe_load(text)) == text


def test_a_report_without_these_errors_never_reads_the_api() -> None:
    # the API files are loaded only when a report shows one of the errors (startup stays cheap)
    code = ("from fadoctor.matrix import load_matrix\nfrom fadoctor.triage.diagnose import triage\n"
            "from fadoctor.triage import mech_api\n"
            "triage('RuntimeError: CUDA error: no kernel image is available\\n', load_matrix(None))\n"
            "print(mech_api.api.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src")})
    assert out.stdout.strip() == "0"


def test_a_model_class_transformers_removed_names_the_release_that_removed_it(
        matrix: Matrix) -> None:
    # written for this test: remote model code written for transformers 4.47 under 4.51
    hf = api("transformers")
    have = hf.names["transformers.models.llama.modeling_llama:LlamaFlashAttention2"]
    last, removed = hf.version(have[-1]), hf.version(have[-1] + 1)
    text = ("transformers==4.51.3\nImportError: cannot import name 'LlamaFlashAttention2' from "
            "'transformers.models.llama.modeling_llama'\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert f"{removed} removed it" in top.message and removed == "4.48.0"
    assert f"transformers=={last}" in _commands(top)


def test_a_release_in_a_gap_and_the_name_it_became(matrix: Matrix) -> None:
    # written for this test: transformers.utils' is_flash_attn_available, absent from one release
    # inside its span, and renamed is_flash_attn_2_available in the release that dropped it
    hf = api("transformers")
    have = hf.names["transformers.utils:is_flash_attn_available"]
    gap = next(i for i in range(have[0], have[-1]) if i not in have)
    text = (f"transformers=={hf.version(gap)}\nImportError: cannot import name "
            "'is_flash_attn_available' from 'transformers.utils'\n")
    top = _top(text, matrix)
    after = hf.version(next(i for i in have if i > gap))
    assert f"transformers=={after}" in _commands(top)
    assert "from transformers.utils import is_flash_attn_2_available" in _commands(top)


def test_quoted_framework_code_importing_a_renamed_extension_alias(matrix: Matrix) -> None:
    # written for this test: a framework's probe quoted in prose, with the installed release
    text = ("unsloth thinks flash-attn is broken with flash-attn 2.7.3. It checks:\n"
            "from flash_attn.flash_attn_interface import flash_attn_cuda\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    said = " ".join(c for r in top.remedies for c in [r.summary, *r.commands])
    # interface.py binds the compiled module as flash_attn_cuda up to 2.7.0.post2, then
    # flash_attn_gpu (read at the tags by tools/gen_fa_api.py)
    assert "2.7.0.post2" in said and "pip install --upgrade unsloth" in said
