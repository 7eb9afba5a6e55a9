"""The printed sdpa_backends snippet, executed around a real training step on CPU torch."""

from __future__ import annotations

import types
from typing import Any, Dict

import pytest
import torch
import torch.nn.functional as F

from fadoctor.snippets import sdpa_backends_code, snippet


class TinyModel(torch.nn.Module):  # type: ignore[misc]  # torch is untyped to mypy here
    """A projection and one causal attention call: enough for a forward and a backward pass."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv = torch.nn.Linear(32, 96)

    def forward(self, x: torch.Tensor) -> types.SimpleNamespace:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, 4, 8).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return types.SimpleNamespace(loss=out.pow(2).mean())


def namespace() -> Dict[str, Any]:
    return {"model": TinyModel(), "batch": {"x": torch.randn(2, 16, 32)}}


def test_the_snippet_runs_a_training_step_on_the_listed_backend() -> None:
    # The printed code forces SDPA's flash backend, which torch also has for CPU tensors.
    scope = namespace()
    exec(snippet("sdpa_backends").code, scope)
    assert torch.isfinite(scope["loss"])
    assert scope["model"].qkv.weight.grad is not None


def test_the_snippet_for_other_backends_really_restricts_sdpa() -> None:
    scope = namespace()
    exec(sdpa_backends_code(["math"]), scope)
    assert scope["model"].qkv.weight.grad is not None
    # The efficient backend has no CPU kernel: restricted to it, SDPA refuses to run (CUDA
    # says "No available kernel", CPU "No viable backend").
    with pytest.raises(RuntimeError, match=r"No viable backend|No available kernel"):
        exec(sdpa_backends_code(["efficient"]), namespace())
