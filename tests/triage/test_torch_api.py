"""A caller needs a torch API the installed torch lacks: the releases that define each name come
from torch's wheels (data/torch_api.yaml, tools/gen_torch_api.py), and flash-attn's first call
from its release tags. The texts are written for these tests in the shape Python prints."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_torch_api import _table


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_the_generated_table_holds_the_custom_op_apis() -> None:
    modules, uses, releases = _table()
    assert releases[0] == "2.0.0" and len(releases) >= 14
    assert modules["torch.library"]["custom_op"][0] == "2.4.0"
    assert modules["torch.library"]["wrap_triton"][0] == "2.6.0"
    assert uses["torch.library.wrap_triton"].startswith("Dao-AILab/flash-attention@v2.8.0:")


def test_flash_attn_2_8_on_torch_2_5_pins_the_release_before(matrix: Matrix) -> None:
    text = ("torch 2.5.1\nflash-attn 2.8.0.post2\n"
            '  File "/opt/venv/lib/python3.10/site-packages/flash_attn/ops/triton/layer_norm.py",'
            " line 427, in <module>\n"
            "AttributeError: module 'torch.library' has no attribute 'wrap_triton'\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "2.6.0" in top.message and "torch 2.5.1 is older" in top.message
    said = _said(top)
    assert "flash-attn==2.7.4.post1" in said and "torch>=2.6.0" in said


def test_another_caller_is_named_from_its_frame(matrix: Matrix) -> None:
    text = ('  File "/usr/lib/python3/dist-packages/mylib/ops.py", line 3, in <module>\n'
            "    from torch.nn.attention import sdpa_kernel\n"
            "ImportError: cannot import name 'sdpa_kernel' from 'torch.nn.attention'\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert top.message.startswith("mylib calls torch.nn.attention.sdpa_kernel")


def test_a_name_torch_always_had_is_no_finding(matrix: Matrix) -> None:
    text = "AttributeError: module 'torch.cuda' has no attribute 'is_available'\n"
    assert all("torch defines" not in d.message for d in triage(text, matrix).diagnosis)


def test_a_torch_module_the_installed_torch_lacks(matrix: Matrix) -> None:
    # written for this test: torch's wheels define torch.nn.attention from 2.3.0 (torch_api.yaml)
    top = triage("torch 2.1.2+cu118\nModuleNotFoundError: No module named 'torch.nn.attention'\n",
                 matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "from 2.3.0" in top.message and "torch>=2.3.0" in " ".join(top.remedies[0].commands)
