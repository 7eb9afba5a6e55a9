"""The printed torch.compile snippets, executed around a flash-attn call that Dynamo cannot trace."""

from __future__ import annotations

import sys
import types
from typing import Any, Callable, Dict, Iterator, List

import pytest
import torch
import torch._dynamo
import torch._inductor.config
import torch.nn.functional as F

from fadoctor.snippets import snippet

Namespace = Dict[str, Any]


# The stand-in for flash-attn's kernel call. A torch custom op registered *without* a fake
# (meta) implementation: Dynamo cannot infer its output, so tracing it raises an error even
# under fullgraph=False -- the hard failure both snippets exist for (flash-attn ops before the
# v2.7 custom ops, forks' ops without fake kernels). A plain C call (ctypes, a pybind function)
# would only graph-break under fullgraph=False, which needs no remedy. The body is real
# attention, so compiled and eager numbers can be compared.
@torch.library.custom_op("fadoctor_tests::untraceable_attention", mutates_args=())  # type: ignore[untyped-decorator]
def untraceable_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=causal)
    return out.transpose(1, 2).contiguous()


def stand_in_flash_attn_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             causal: bool = False) -> torch.Tensor:
    return untraceable_attention(q, k, v, causal)


class AttentionBlock(torch.nn.Module):  # type: ignore[misc]  # torch is untyped to mypy here
    """The smallest model around an attention call: projections before it, an MLP step after."""

    def __init__(self, attention: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv = torch.nn.Linear(32, 96)
        self.out = torch.nn.Linear(32, 32)
        self.attention = attention

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, 4, 8).unbind(2)
        y = self.attention(q, k, v, causal=True)
        return self.out(torch.relu(y.reshape(b, n, 32)))


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def disabled_ns(monkeypatch: pytest.MonkeyPatch) -> Namespace:
    """The dynamo_disable_flash_attn text run as written, its `from flash_attn import ...` served
    by a stand-in module."""
    module = types.ModuleType("flash_attn")
    module.flash_attn_func = stand_in_flash_attn_func  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flash_attn", module)
    ns: Namespace = {"__name__": "dynamo_disable_flash_attn"}
    exec(compile(snippet("dynamo_disable_flash_attn").code, "<dynamo_disable_flash_attn>", "exec"), ns)
    return ns


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(1))


GraphLog = List[torch.fx.GraphModule]


def recording_backend(graphs: GraphLog) -> Callable[..., Any]:
    """A torch.compile backend that keeps each graph Dynamo hands it and runs it as traced."""
    def backend(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]) -> Callable[..., Any]:
        graphs.append(gm)
        run: Callable[..., Any] = gm.forward
        return run
    return backend


def test_the_stand_in_really_breaks_torch_compile(x: torch.Tensor) -> None:
    """Without a remedy, compiling the block fails -- under fullgraph=False too."""
    block = AttentionBlock(stand_in_flash_attn_func)
    with pytest.raises(torch._dynamo.exc.TorchDynamoException, match="fake"):
        torch.compile(block, backend=recording_backend([]), fullgraph=False)(x)


@pytest.mark.slow
def test_disabled_call_compiles_with_inductor_and_matches_eager(disabled_ns: Namespace,
                                                               x: torch.Tensor) -> None:
    block = AttentionBlock(disabled_ns["flash_attention"])
    compiled = torch.compile(block, fullgraph=False)  # the default backend: inductor, gcc on CPU
    # One compile thread: no pool of compile workers left running (and eating the CPU) after it.
    with torch.no_grad(), torch._inductor.config.patch(compile_threads=1):
        eager = block(x)
        for _ in range(2):  # the first call compiles, the second runs the cached code
            torch.testing.assert_close(compiled(x), eager, rtol=1e-5, atol=1e-6)


def test_explain_shows_one_break_at_the_disabled_function(disabled_ns: Namespace,
                                                          x: torch.Tensor) -> None:
    explained = torch._dynamo.explain(AttentionBlock(disabled_ns["flash_attention"]))(x)
    assert explained.graph_break_count == 1 and explained.graph_count == 2
    (reason,) = explained.break_reasons
    assert "torch.compiler.disable" in reason.reason and "flash_attention" in reason.reason
    frame = reason.user_stack[-1]
    assert frame.name == "forward" and "self.attention(q, k, v" in (frame.line or "")
    # Both sides of the break are compiled: the qkv projection before it, the output one after.
    for graph in explained.graphs:
        assert any(node.target is F.linear or "linear" in str(node.target) for node in graph.graph.nodes)


def test_fullgraph_still_refuses_the_disabled_call(disabled_ns: Namespace, x: torch.Tensor) -> None:
    """The snippet's caveat: a disabled call is a graph break, which fullgraph=True forbids."""
    block = AttentionBlock(disabled_ns["flash_attention"])
    with pytest.raises(torch._dynamo.exc.Unsupported, match=r"torch\.compiler\.disable"):
        torch.compile(block, backend=recording_backend([]), fullgraph=True)(x)


def test_suppress_errors_falls_back_to_eager_for_the_whole_frame(x: torch.Tensor) -> None:
    # config.patch restores the flag afterwards (pytest's monkeypatch would delete it instead,
    # which torch's config module turns into "does not exist").
    before = torch._dynamo.config.suppress_errors
    with torch._dynamo.config.patch(suppress_errors=False):
        exec(compile(snippet("dynamo_suppress_errors").code, "<dynamo_suppress_errors>", "exec"), {})
        assert torch._dynamo.config.suppress_errors is True
        graphs: GraphLog = []
        block = AttentionBlock(stand_in_flash_attn_func)
        compiled = torch.compile(block, backend=recording_backend(graphs), fullgraph=False)
        with torch.no_grad():
            assert torch.equal(compiled(x), block(x))
    assert torch._dynamo.config.suppress_errors is before
    # The cost the snippet states: the failing frame runs eagerly, projections included.
    assert graphs == []


# The module each family's flash_attn_func is imported from, and whether it returns (out, lse).
FAMILY_MODULES = {"fa2": ("flash_attn", False), "fa3": ("flash_attn_interface", True),
                  "fa4": ("flash_attn.cute", True), "vllm_fa": ("vllm_flash_attn", False)}


@pytest.mark.parametrize("family", sorted(FAMILY_MODULES))
def test_each_familys_disable_snippet_imports_that_familys_function(
        family: str, monkeypatch: pytest.MonkeyPatch, x: torch.Tensor) -> None:
    """Only `family`'s module serves flash_attn_func (every other family's import would fail):
    the printed snippet runs, unpacks (out, lse) where the family returns it, and breaks once."""
    from fadoctor.snippets import dynamo_disable_code

    for name in ("flash_attn", "flash_attn.cute", "flash_attn_interface", "vllm_flash_attn"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))  # no flash_attn_func
    module_name, pair = FAMILY_MODULES[family]

    def family_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> Any:
        out = stand_in_flash_attn_func(q, k, v, causal)
        return (out, torch.zeros(1)) if pair else out

    module = types.ModuleType(module_name)
    module.flash_attn_func = family_func  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module_name, module)
    code = dynamo_disable_code(family)
    assert "import flash_attn_func" in code and module_name in code.splitlines()[1]
    ns: Namespace = {"__name__": f"dynamo_disable_{family}"}
    exec(compile(code, f"<dynamo_disable_{family}>", "exec"), ns)
    block = AttentionBlock(ns["flash_attention"])
    explained = torch._dynamo.explain(block)(x)
    assert explained.graph_break_count == 1
    with torch.no_grad():
        torch.testing.assert_close(block(x), AttentionBlock(stand_in_flash_attn_func)(x))
