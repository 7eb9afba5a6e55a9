"""The smoke-test cases: the default set (one forward+backward per target) and the full grid."""

import itertools
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

# The default case, and the shape it runs at: bf16, causal, grouped-query heads (16 query heads
# on 4 key/value heads), head dim 128, batch 2, 512 tokens.
DEFAULT_SHAPE = {"batch": 2, "seqlen": 512, "heads": 16, "kv_heads": 4}
DTYPES = ("bfloat16", "float16")
HEAD_DIMS = (64, 128, 256)
KVCACHE_QUERIES = 16  # query tokens of a flash_attn_with_kvcache case (a short decode step)

# The functions each target is called through. SDPA: F.scaled_dot_product_attention; families:
# flash_attn_func ("func"), flash_attn_varlen_func ("varlen"), flash_attn_with_kvcache ("kvcache").
APIS = {
    "sdpa": ("sdpa",),
    "fa2": ("func", "varlen", "kvcache"),
    "vllm_fa": ("func", "varlen", "kvcache"),
    "fa3": ("func", "varlen"),
    "fa4": ("func", "varlen"),
}
FUNCTIONS = {"sdpa": "scaled_dot_product_attention", "func": "flash_attn_func",
             "varlen": "flash_attn_varlen_func", "kvcache": "flash_attn_with_kvcache"}


class Case(NamedTuple):
    api: str  # a key of FUNCTIONS
    dtype: str  # a torch dtype name: bfloat16, float16
    causal: bool
    gqa: bool  # fewer key/value heads than query heads
    head_dim: int
    batch: int
    seqlen_q: int
    seqlen_k: int
    heads: int
    kv_heads: int
    backward: bool

    def label(self) -> str:
        parts = [FUNCTIONS[self.api], self.dtype, "head dim %d" % self.head_dim,
                 "causal" if self.causal else "not causal",
                 "GQA %d/%d heads" % (self.heads, self.kv_heads) if self.gqa
                 else "%d heads" % self.heads,
                 "forward+backward" if self.backward else "forward"]
        return ", ".join(parts)

    def as_dict(self) -> Dict[str, Any]:
        return dict(self._asdict())

    def varlen_lengths(self) -> List[int]:
        """The sequence lengths of a varlen batch: different on purpose, the first the longest."""
        return [max(1, self.seqlen_k - i * (self.seqlen_k // 3) - i) for i in range(self.batch)]

    def score_elements(self) -> int:
        """Elements of one attention-score matrix: what the fp32 reference materialises."""
        return self.batch * self.heads * self.seqlen_q * self.seqlen_k


def apis(target: str) -> Tuple[str, ...]:
    return APIS["sdpa" if target.startswith("sdpa_") else target]


def _shape(options: Dict[str, Any]) -> Dict[str, int]:
    shape = dict(DEFAULT_SHAPE)
    shape.update({k: int(v) for k, v in (options.get("shape") or {}).items() if k in shape})
    return shape


def make(api: str, dtype: str, causal: bool, gqa: bool, head_dim: int,
         shape: Dict[str, int]) -> Case:
    heads = shape["heads"]
    kv_heads = shape["kv_heads"] if gqa else heads
    seqlen_q = min(KVCACHE_QUERIES, shape["seqlen"]) if api == "kvcache" else shape["seqlen"]
    return Case(api=api, dtype=dtype, causal=causal, gqa=gqa and kv_heads != heads,
                head_dim=head_dim, batch=shape["batch"], seqlen_q=seqlen_q,
                seqlen_k=shape["seqlen"], heads=heads, kv_heads=kv_heads,
                backward=api != "kvcache")


def grid(target: str, options: Dict[str, Any]) -> List[Case]:
    """The cases for `target`: options["grid"] is "default" (one case) or "full"."""
    shape = _shape(options)
    if options.get("grid", "default") == "default":
        return [make(apis(target)[0], "bfloat16", True, True, 128, shape)]
    product = itertools.product(apis(target), DTYPES, (True, False), (True, False), HEAD_DIMS)
    return [make(api, dtype, causal, gqa, hd, shape) for api, dtype, causal, gqa, hd in product]


def single(options: Dict[str, Any], api: str) -> Case:
    """One case from explicit options (bench): dtype, causal, heads, kv_heads, head_dim, ..."""
    shape = _shape(options)
    return make(api, str(options.get("dtype", "bfloat16")), bool(options.get("causal", True)),
                shape["kv_heads"] != shape["heads"], int(options.get("head_dim", 128)), shape)


def shrink(cases: Sequence[Case], factor: int) -> List[Case]:
    """The same cases with sequence lengths divided by `factor` (for a GPU short of memory)."""
    out = []
    for case in cases:
        seqlen_k = max(16, case.seqlen_k // factor)
        out.append(case._replace(seqlen_k=seqlen_k, seqlen_q=min(case.seqlen_q, seqlen_k)))
    return out


def largest(cases: Sequence[Case]) -> Optional[Case]:
    return max(cases, key=lambda c: c.score_elements() * c.head_dim, default=None)
