"""The snippet registry: ids, evidence, torch floors against the installed torch, one source of truth."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from fadoctor.checks import remedies
from fadoctor.snippets import SNIPPETS, Api, Snippet, snippet

HERE = Path(__file__).parent
TORCH = Version(Version(torch.__version__).base_version)
IDS = [s.id for s in SNIPPETS]
TORCH_APIS = sorted({a for s in SNIPPETS for a in s.apis if a.package == "torch"}, key=lambda a: a.name)

# Each snippet whose code this suite executes, and the test module that does it. transformers is
# not installed here: its one line is checked as text (test_transformers_snippet_*).
EXECUTED_IN = {
    "sdpa_flash_attn_func": "test_sdpa_snippet.py",
    "dynamo_disable_flash_attn": "test_dynamo_snippets.py",
    "dynamo_suppress_errors": "test_dynamo_snippets.py",
    "sdpa_backends": "test_sdpa_backends_snippet.py",
}
TEXT_ONLY = {"transformers_sdpa"}


def resolve(dotted: str) -> Any:
    """The object a dotted path names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def accepts(fn: Any, param: str) -> bool:
    """Whether `fn` takes keyword `param`. Builtins have no introspectable signature; their
    docstring opens with it (F.scaled_dot_product_attention's does)."""
    try:
        return param in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        head = (fn.__doc__ or "").split("->")[0]
        return re.search(rf"\b{re.escape(param)}=", head) is not None


def test_ids_are_unique_and_looked_up() -> None:
    assert len(IDS) == len(set(IDS))
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", i) for i in IDS)
    assert all(snippet(s.id) is s for s in SNIPPETS)
    with pytest.raises(KeyError, match="sdpa_flash_attn_func"):
        snippet("no_such_snippet")


def test_every_snippet_is_executed_by_a_test_or_declared_text_only() -> None:
    assert set(IDS) == set(EXECUTED_IN) | TEXT_ONLY
    for snippet_id, module in EXECUTED_IN.items():
        assert f'snippet("{snippet_id}").code' in (HERE / module).read_text(), (snippet_id, module)


@pytest.mark.parametrize("s", SNIPPETS, ids=IDS)
def test_code_is_valid_python_with_evidence(s: Snippet) -> None:
    compile(s.code, s.id, "exec")
    assert s.title and s.apis
    for api in s.apis:
        assert api.source and api.package in {"torch", "flash-attn", "transformers"}, api
        Version(api.since)


@pytest.mark.parametrize("s", SNIPPETS, ids=IDS)
def test_torch_floor_is_the_newest_api_it_always_uses(s: Snippet) -> None:
    assert s.torch == SpecifierSet(f">={s.torch_floor()}")


@pytest.mark.parametrize("s", SNIPPETS, ids=IDS)
def test_gated_apis_are_gated_in_the_code_at_their_release(s: Snippet) -> None:
    for api in s.apis:
        if api.gated:
            assert f'torch.__version__ >= "{api.since}"' in s.code, api.name


@pytest.mark.parametrize("s", SNIPPETS, ids=IDS)
def test_installed_torch_is_in_range(s: Snippet) -> None:
    assert TORCH in s.torch


@pytest.mark.parametrize("api", TORCH_APIS, ids=[a.name for a in TORCH_APIS])
def test_torch_api_exists_in_the_installed_torch(api: Api) -> None:
    """Only the installed release (2.13 here) can be probed; the older `since` releases are cited
    from their wheels in `api.source` (and torch_cuda_facts.md section 5)."""
    assert Version(api.since) <= TORCH
    assert api.target is not None, f"{api.name}: no target to probe"
    obj = resolve(api.target)
    if api.param is not None:
        assert accepts(obj, api.param), f"{api.target} does not take {api.param}="


def test_version_gate_compares_releases_not_strings() -> None:
    # "2.13" < "2.5" as strings; the gate relies on torch.__version__ being a TorchVersion.
    assert isinstance(torch.__version__, torch.torch_version.TorchVersion)
    assert torch.torch_version.TorchVersion("2.13.0") >= "2.5"
    assert not torch.torch_version.TorchVersion("2.4.1") >= "2.5"


def test_transformers_snippet_is_what_the_remedy_prints() -> None:
    code = snippet("transformers_sdpa").code
    assert remedies.TRANSFORMERS_SDPA is code
    assert remedies.sdpa_fallback("flash-attn cannot load.").code == code


def test_transformers_snippet_asks_for_sdpa() -> None:
    (stmt,) = ast.parse(snippet("transformers_sdpa").code).body
    assert isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
    call = stmt.value
    assert ast.unparse(call.func) == "AutoModelForCausalLM.from_pretrained"
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert keywords == {"attn_implementation": "sdpa"}
