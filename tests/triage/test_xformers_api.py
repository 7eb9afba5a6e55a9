"""xFormers' ops API by release (tools/gen_xformers_api.py at every xformers tag): the generator
read against a real git repository made here, and triage naming the release that added a keyword
a caller passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_xformers_api  # noqa: E402


def _commit(repo: Path, files: dict, tag: str) -> None:
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", tag], check=True, capture_output=True)
    subprocess.run([*git, "tag", tag], check=True, capture_output=True)


def test_the_generator_reads_ops_at_each_release_tag(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, {"xformers/__init__.py": "",
                       "xformers/ops.py": "def memory_efficient_attention(query, key, value):\n"
                                          "    pass\n"}, "v0.0.12")
    (tmp_path / "xformers" / "ops.py").unlink()
    _commit(tmp_path, {"xformers/ops/__init__.py": "from .fmha import memory_efficient_attention\n",
                       "xformers/ops/fmha/__init__.py":
                           "def memory_efficient_attention(query, key, value, attn_bias=None, "
                           "p=0.0, scale=None):\n    pass\n",
                       "xformers/components/attention.py": "def other(x):\n    pass\n"},
            "v0.0.16")
    _commit(tmp_path, {"README.md": "rc"}, "v0.0.17rc481")  # a release candidate: not read
    found = gen_xformers_api.read(str(tmp_path))
    assert found["tags"] == ["v0.0.12", "v0.0.16"]
    params = found["parameters"]
    assert params["xformers.ops:memory_efficient_attention"] == {"key": "0", "query": "0",
                                                                 "value": "0"}
    assert params["xformers.ops.fmha:memory_efficient_attention"]["scale"] == "1"
    assert not [k for k in params if k.startswith("xformers.components")]


def test_the_data_file_is_the_generators_rendering() -> None:
    text = (ROOT / "data" / "xformers_api.yaml").read_text(encoding="utf-8")
    assert gen_xformers_api.render(yaml.safe_load(text)) == text


@pytest.mark.parametrize("argument, first", [("attn_bias", "0.0.13"), ("scale", "0.0.16")])
def test_a_keyword_older_xformers_lacks_names_its_first_release(argument: str, first: str,
                                                                matrix: Matrix) -> None:
    found = top(f"xformers 0.0.12\nTypeError: memory_efficient_attention() got an unexpected "
                f"keyword argument '{argument}'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and f"xformers {first}" in found.message
    assert f'"xformers>={first}"' in said(found) and "require torch" in said(found)


def test_the_old_dispatchers_refusal_is_its_release(matrix: Matrix) -> None:
    found = top("xformers 0.0.15.dev0\nNotImplementedError: No operator found for this attention: "
                "AttentionOpDispatch(dtype=torch.float32, device=device(type='cuda', index=0), "
                "k=80, has_dropout=False, attn_bias_type=<class 'NoneType'>, kv_len=1024, "
                "q_len=1024)\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "head dim 80" in found.message
    assert '"xformers>=0.0.16"' in said(found)
