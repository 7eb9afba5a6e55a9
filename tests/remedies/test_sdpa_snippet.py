"""The printed sdpa_flash_attn_func snippet, executed, against an independent float64 attention."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
import torch

from fadoctor.snippets import snippet

Namespace = Dict[str, Any]
Attention = Callable[..., torch.Tensor]


@pytest.fixture(scope="module")
def ns() -> Namespace:
    """The globals of the snippet's exact text after `exec`, as a user's module would have them."""
    code = snippet("sdpa_flash_attn_func").code
    namespace: Namespace = {"__name__": "sdpa_flash_attn_func"}
    exec(compile(code, "<sdpa_flash_attn_func>", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def attn(ns: Namespace) -> Attention:
    fn: Attention = ns["flash_attn_func"]
    return fn


# -- the reference: flash-attn's documented semantics, written out in float64 ----------------------


def allowed(seqlen_q: int, seqlen_k: int, causal: bool, window: Tuple[int, int]) -> torch.Tensor:
    """Which keys each query may see, straight from flash_attn_func's docstring (v2.8.3): query i
    sees keys [i + sk - sq - left, i + sk - sq + right], -1 = unbounded, causal means right = 0."""
    left, right = window[0], 0 if causal else window[1]
    shift = seqlen_k - seqlen_q
    return torch.tensor([[(left < 0 or j >= i + shift - left) and (right < 0 or j <= i + shift + right)
                          for j in range(seqlen_k)] for i in range(seqlen_q)], dtype=torch.bool)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: Optional[float] = None,
              causal: bool = False, window: Tuple[int, int] = (-1, -1)) -> torch.Tensor:
    """softmax(Q K^T * scale + mask) V in float64, in flash-attn's (batch, seqlen, heads, dim) layout.
    Query head h reads kv head h // (nheads // nheads_k); a query that sees no key gets 0."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    kv_head = torch.arange(q.shape[2]) // (q.shape[2] // k.shape[2])
    k64, v64 = k64[:, :, kv_head], v64[:, :, kv_head]
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = torch.einsum("bqhd,bkhd->bhqk", q64, k64) * scale
    keep = allowed(q.shape[1], k.shape[1], causal, window)
    # The row maximum only shifts the exponent (the ratio is unchanged), so it needs no gradient.
    weights = torch.exp(scores - scores.amax(-1, keepdim=True).detach()) * keep
    probs = weights / weights.sum(-1, keepdim=True).clamp_min(1e-300)
    return torch.einsum("bhqk,bkhd->bqhd", probs, v64)


# -- cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    nheads: int
    nheads_k: int
    seqlen_q: int
    seqlen_k: int
    headdim: int = 64
    causal: bool = False
    scale: Optional[float] = None
    window: Tuple[int, int] = (-1, -1)

    def tensors(self, dtype: torch.dtype, seed: int = 0) -> List[torch.Tensor]:
        gen = torch.Generator().manual_seed(seed)
        shapes = [(2, self.seqlen_q, self.nheads, self.headdim),
                  (2, self.seqlen_k, self.nheads_k, self.headdim),
                  (2, self.seqlen_k, self.nheads_k, self.headdim)]
        return [torch.randn(s, generator=gen).to(dtype).requires_grad_() for s in shapes]

    def kwargs(self) -> Dict[str, Any]:
        return {"softmax_scale": self.scale, "causal": self.causal, "window_size": self.window}

    def reference(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return reference(q, k, v, self.scale, self.causal, self.window)


CASES = [
    Case("mha", 4, 4, 7, 7),
    Case("gqa-8q-2kv", 8, 2, 7, 7),
    Case("mqa-8q-1kv", 8, 1, 7, 7),
    Case("mha-seqlen-q-neq-k", 4, 4, 5, 9),
    Case("causal-square", 4, 4, 9, 9, causal=True),
    Case("causal-q-shorter-bottom-right", 8, 2, 4, 9, causal=True),
    Case("causal-q-longer-empty-rows", 4, 4, 9, 4, causal=True),
    Case("softmax-scale", 4, 4, 7, 11, scale=0.3),
    Case("hd128-gqa-causal", 8, 2, 6, 6, headdim=128, causal=True),
    Case("hd128-mqa-scale", 8, 1, 5, 8, headdim=128, scale=0.05),
    Case("window-3-1", 4, 4, 6, 10, window=(3, 1)),
    Case("window-causal-2", 8, 2, 8, 8, causal=True, window=(2, 2)),
    Case("window-left-only", 4, 4, 5, 8, window=(2, -1)),
    Case("window-right-only", 4, 4, 8, 5, window=(-1, 1)),
]
IDS = [c.name for c in CASES]
GQA_CASES = [c for c in CASES if c.nheads != c.nheads_k]

# float32: both sides are exact to ~1e-7 relative; the budget covers the summation orders.
# bfloat16: the snippet computes in bf16 (8-bit mantissa, ~4e-3 relative per rounding) from the
# same bf16 inputs the float64 reference reads, so the error is the snippet's own rounding.
TOL = {torch.float32: {"atol": 1e-5, "rtol": 1e-5}, torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2}}
DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    torch.testing.assert_close(actual.double(), expected.double(), **TOL[dtype])


@DTYPES
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_reference(attn: Attention, case: Case, dtype: torch.dtype) -> None:
    q, k, v = case.tensors(dtype)
    out = attn(q, k, v, **case.kwargs())
    assert out.shape == q.shape and out.dtype == dtype and out.is_contiguous()
    assert_close(out, case.reference(q, k, v), dtype)


@DTYPES
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_matches_reference(attn: Attention, case: Case, dtype: torch.dtype) -> None:
    q, k, v = case.tensors(dtype)
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    got = torch.autograd.grad(attn(q, k, v, **case.kwargs()), (q, k, v), grad_out)
    want = torch.autograd.grad(case.reference(q, k, v), (q, k, v), grad_out.double())
    for g, w, t in zip(got, want, (q, k, v)):
        assert g.shape == t.shape and g.dtype == dtype
        assert_close(g, w, dtype)


@pytest.mark.parametrize("case", GQA_CASES, ids=[c.name for c in GQA_CASES])
def test_gqa_without_enable_gqa(ns: Namespace, monkeypatch: pytest.MonkeyPatch, case: Case) -> None:
    """The branch torch < 2.5 takes (k/v heads repeated) gives the same numbers, backward included."""
    monkeypatch.setitem(ns, "_SDPA_GQA", False)
    q, k, v = case.tensors(torch.float32)
    out = ns["flash_attn_func"](q, k, v, **case.kwargs())
    assert_close(out, case.reference(q, k, v), torch.float32)
    got = torch.autograd.grad(out.sum(), (q, k, v))
    want = torch.autograd.grad(case.reference(q, k, v).sum(), (q, k, v))
    for g, w in zip(got, want):
        assert_close(g, w, torch.float32)


def test_enable_gqa_gate_is_on_for_this_torch(ns: Namespace) -> None:
    assert ns["_SDPA_GQA"] is True  # torch 2.13 here: the enable_gqa branch is the one tested above


def visible_keys(attn: Attention, seqlen_q: int, seqlen_k: int) -> List[List[int]]:
    """The mask as the output shows it: with q = 0 every visible key gets the same weight, and v
    row j = one-hot(j) makes output[i][j] > 0 exactly when query i sees key j."""
    q = torch.zeros(1, seqlen_q, 1, 8)
    v = torch.eye(8)[:seqlen_k].reshape(1, seqlen_k, 1, 8)
    out = attn(q, torch.randn(1, seqlen_k, 1, 8), v, causal=True)[0, :, 0, :seqlen_k]
    rows: List[List[int]] = (out > 0).int().tolist()
    return rows


def test_causal_masks_are_the_readme_examples(attn: Attention) -> None:
    # flash-attention README, "Changes in v2.1": seqlen_q = 2, seqlen_k = 5, and 5 / 2.
    assert visible_keys(attn, 2, 5) == [[1, 1, 1, 1, 0],
                                        [1, 1, 1, 1, 1]]
    assert visible_keys(attn, 5, 2) == [[0, 0], [0, 0], [0, 0],
                                        [1, 0],
                                        [1, 1]]


def test_a_query_that_sees_no_key_gets_zeros_and_no_nan_gradient(attn: Attention) -> None:
    """"If the row of the mask is all zero, the output will be zero" (flash_attn_func docstring)."""
    q, k, v = Case("rows", 2, 2, 6, 3, causal=True).tensors(torch.float32)
    out = attn(q, k, v, causal=True)
    assert torch.equal(out[:, :3], torch.zeros_like(out[:, :3]))
    assert out[:, 3:].abs().sum() > 0
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    assert all(torch.isfinite(g).all() for g in grads)
    assert torch.equal(grads[0][:, :3], torch.zeros_like(grads[0][:, :3]))


@pytest.mark.parametrize("kwargs", [{"softcap": 30.0}, {"alibi_slopes": torch.ones(4)},
                                    {"return_attn_probs": True}],
                         ids=["softcap", "alibi", "attn-probs"])
def test_unsupported_options_raise(attn: Attention, kwargs: Dict[str, Any]) -> None:
    q, k, v = Case("x", 4, 4, 3, 3).tensors(torch.float32)
    with pytest.raises(NotImplementedError, match="need flash-attn"):
        attn(q, k, v, **kwargs)


def test_heads_that_do_not_divide_raise_flash_attns_message(attn: Attention) -> None:
    q, k, v = Case("x", 6, 4, 3, 3).tensors(torch.float32)
    with pytest.raises(ValueError, match="must divide number of heads in query"):
        attn(q, k, v)


def test_deterministic_is_accepted_and_changes_nothing(attn: Attention) -> None:
    q, k, v = Case("x", 8, 2, 5, 5).tensors(torch.float32)
    assert torch.equal(attn(q, k, v, causal=True, deterministic=True), attn(q, k, v, causal=True))


def test_dropout_zero_is_deterministic(attn: Attention) -> None:
    case = Case("x", 8, 2, 6, 9, causal=True)
    q, k, v = case.tensors(torch.float32)
    first = attn(q, k, v, dropout_p=0.0, causal=True)
    assert torch.equal(first, attn(q, k, v, dropout_p=0.0, causal=True))
    assert torch.equal(first, attn(q, k, v, causal=True))


def test_dropout_drops_attention_weights(attn: Attention) -> None:
    """No claim about the expectation: with p > 0 the call runs forward and backward, is
    reproducible under a seed, and drops weights of the attention matrix (scaled by 1 / (1 - p)),
    which with v = 1 leaves each output row constant along headdim and within [0, 1 / (1 - p)]."""
    p = 0.5
    q, k, _ = Case("x", 4, 2, 16, 16).tensors(torch.float32)
    v = torch.ones(2, 16, 2, 64, requires_grad=True)
    torch.manual_seed(0)
    out = attn(q, k, v, dropout_p=p, causal=True)
    torch.manual_seed(0)
    assert torch.equal(out, attn(q, k, v, dropout_p=p, causal=True))
    assert out.shape == q.shape and torch.isfinite(out).all()
    assert torch.equal(out, out[..., :1].expand_as(out))
    assert out.min() >= 0 and out.max() <= 1 / (1 - p) + 1e-5
    assert not torch.allclose(out, torch.ones_like(out))  # without dropout every row would be 1
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    assert all(g.shape == t.shape and torch.isfinite(g).all() for g, t in zip(grads, (q, k, v)))
