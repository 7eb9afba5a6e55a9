"""The reference attention and the tolerance rule a kernel's output and gradients are judged by.

The rule is flash-attention's own. Dao-AILab/flash-attention tests/test_flash_attn.py at tag
v2.8.3 (test_flash_attn_output, lines 1121 and 1129-1131) holds the kernel's max error against
an fp32 reference to at most 2x (output) or 3x (each gradient) the error of a PyTorch
implementation in the same low precision. hopper/test_flash_attn.py at v2.8.3
(test_flash_attn_output, lines 188, 217, 275-280) adds an epsilon, twice the rounding error of
the reference's dtype at its magnitude: 2 * (ref + 0.3 - 0.3 - ref).abs().max(). The "PyTorch
implementation" is attention_ref(upcast=False, reorder_ops=True) there: the same math in the
inputs' dtype, with the softmax scale applied to k instead of q. NaN or Inf always fails.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

FORWARD_MULTIPLE = 2.0
BACKWARD_MULTIPLE = 3.0


def attention(torch: Any, q: Any, k: Any, v: Any, causal: bool, upcast: bool = True,
              reorder: bool = False) -> Any:
    """Attention of q (batch, seqlen_q, heads, dim) over k, v (batch, seqlen_k, kv_heads, dim),
    returned in q's dtype. The causal mask is aligned to the bottom-right corner, as
    flash-attn's is (query i sees keys up to i + seqlen_k - seqlen_q)."""
    dtype = q.dtype
    if upcast:
        q, k, v = q.float(), k.float(), v.float()
    groups = q.shape[2] // k.shape[2]
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=2), v.repeat_interleave(groups, dim=2)
    scale = q.shape[-1] ** -0.5
    if reorder:
        scores = torch.einsum("bthd,bshd->bhts", q, k * scale)
    else:
        scores = torch.einsum("bthd,bshd->bhts", q * scale, k)
    if causal:
        seqlen_q, seqlen_k = q.shape[1], k.shape[1]
        row = torch.arange(seqlen_q, device=q.device)[:, None] + (seqlen_k - seqlen_q)
        col = torch.arange(seqlen_k, device=q.device)[None, :]
        scores = scores.masked_fill(col > row, float("-inf"))
    weights = torch.softmax(scores, dim=-1).to(v.dtype)
    return torch.einsum("bhts,bshd->bthd", weights, v).to(dtype)


def packed_attention(torch: Any, q: Any, k: Any, v: Any, lengths: Sequence[int], causal: bool,
                     upcast: bool = True, reorder: bool = False) -> Any:
    """`attention` over a varlen batch packed as (total_tokens, heads, dim)."""
    outs, start = [], 0
    for n in lengths:
        qs, ks, vs = (t[start:start + n].unsqueeze(0) for t in (q, k, v))
        outs.append(attention(torch, qs, ks, vs, causal, upcast, reorder)[0])
        start += n
    return torch.cat(outs, dim=0)


def epsilon(ref: Any) -> float:
    """Twice the rounding error of ref's dtype at ref's magnitude (hopper/test_flash_attn.py)."""
    return float(2 * (ref + 0.3 - 0.3 - ref).abs().max().item())


def compare(torch: Any, name: str, got: Any, ref: Any, pt: Any, multiple: float
            ) -> Dict[str, Any]:
    """How far `got` is from the fp32 reference `ref`, against the same-dtype PyTorch `pt`."""
    finite = bool(torch.isfinite(got).all().item())
    entry: Dict[str, Any] = {"tensor": name, "finite": finite, "multiple": multiple}
    if not finite:
        entry.update(ok=False, error=None, pytorch_error=None, tolerance=None)
        return entry
    error = float((got.float() - ref.float()).abs().max().item())
    pytorch_error = float((pt.float() - ref.float()).abs().max().item())
    tolerance = multiple * pytorch_error + epsilon(ref)
    entry.update(ok=error <= tolerance, error=error, pytorch_error=pytorch_error,
                 tolerance=tolerance)
    return entry


def judge(torch: Any, got: Sequence[Any], ref: Sequence[Any], pt: Sequence[Any],
          names: Sequence[str]) -> Tuple[str, List[Dict[str, Any]]]:
    """Compare each tensor (output first, then gradients): ("passed" | "nonfinite" | "wrong")."""
    entries = []
    for i, name in enumerate(names):
        multiple = FORWARD_MULTIPLE if i == 0 else BACKWARD_MULTIPLE
        entries.append(compare(torch, name, got[i], ref[i], pt[i], multiple))
    if any(not e["finite"] for e in entries):
        return "nonfinite", entries
    return ("passed" if all(e["ok"] for e in entries) else "wrong"), entries


def reference_finite(torch: Any, tensors: Sequence[Any]) -> Optional[str]:
    """None when the reference itself is finite; else which tensor is not (a harness bug)."""
    for i, t in enumerate(tensors):
        if not bool(torch.isfinite(t).all().item()):
            return "reference tensor %d is not finite" % i
    return None
