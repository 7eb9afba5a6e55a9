"""Code remedies as data: the exact snippets fadoctor prints, the torch they need, the source of each API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version


@dataclass(frozen=True)
class Api:
    """One API a snippet relies on, with the evidence for the release that first has it."""

    name: str  # what the snippet relies on, as a reader would look it up
    package: str  # the distribution that ships it: torch, flash-attn, transformers
    since: str  # the first release that has it (for torch: the first 2.x; fadoctor starts at 2.0)
    source: str  # where that was read
    target: Optional[str] = None  # dotted path a test can resolve in the installed package
    param: Optional[str] = None  # the keyword of `target` this entry is about
    gated: bool = False  # the code checks `torch.__version__ >= since` before using it


@dataclass(frozen=True)
class Snippet:
    """A code remedy: the text users copy, the torch releases it runs on as written, its evidence."""

    id: str
    title: str
    code: str
    torch: SpecifierSet
    apis: Tuple[Api, ...]
    caveat: str = ""  # what it costs, or what it does not do

    def torch_floor(self) -> Version:
        """The oldest torch the code runs on: the newest `since` among the torch APIs it always uses."""
        return max(Version(a.since) for a in self.apis if a.package == "torch" and not a.gated)


# Evidence read for this module: the torch wheels' shipped .py/.pyi files (platform-independent;
# read from the PyPI cp311 macOS arm64 wheels of 2.0.0, 2.1.0, 2.4.0, 2.5.0) and the
# Dao-AILab/flash-attention repository at tag v2.8.3 and HEAD 0251105a.
_W = "PyPI wheel torch=={}: {}"
_FA_DOC = "Dao-AILab/flash-attention v2.8.3:flash_attn/flash_attn_interface.py, flash_attn_func docstring"

SDPA = Api(
    name="torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)",
    package="torch", since="2.0", target="torch.nn.functional.scaled_dot_product_attention",
    source=_W.format("2.0.0", "torch/nn/functional.py docstring signature (no `scale`)"))
SDPA_SCALE = Api(
    name="scaled_dot_product_attention(..., scale=)", package="torch", since="2.1",
    target="torch.nn.functional.scaled_dot_product_attention", param="scale",
    source=(_W.format("2.1.0", "torch/_C/_nn.pyi has `scale`; 2.0.0 does not") +
            "; added by pytorch/pytorch#95259"))
SDPA_GQA = Api(
    name="scaled_dot_product_attention(..., enable_gqa=)", package="torch", since="2.5", gated=True,
    target="torch.nn.functional.scaled_dot_product_attention", param="enable_gqa",
    source=(_W.format("2.5.0", "torch/_C/_nn.pyi has `enable_gqa`; 2.4.0 does not") +
            "; added by pytorch/pytorch#132689"))
REPEAT_INTERLEAVE = Api(
    name="Tensor.repeat_interleave(repeats, dim)", package="torch", since="2.0",
    target="torch.Tensor.repeat_interleave", source=_W.format("2.0.0", "torch/_C/__init__.pyi"))
TORCH_VERSION = Api(
    name="torch.__version__ compares as a version (TorchVersion)", package="torch", since="2.0",
    target="torch.torch_version.TorchVersion",
    source=(_W.format("2.0.0", "torch/torch_version.py") +
            "; reference torch_cuda_facts.md section 5 (torch/torch_version.py)"))
FA_CAUSAL = Api(
    name="flash_attn_func(causal=True) aligns the mask to the bottom-right corner; an empty row gives 0",
    package="flash-attn", since="2.1",
    source="Dao-AILab/flash-attention v2.1.0:README.md 'Changes in v2.1 (compared to v2.0)'; " + _FA_DOC)
FA_WINDOW = Api(
    name="flash_attn_func(window_size=(left, right)): keys i + sk - sq - left .. i + sk - sq + right",
    package="flash-attn", since="2.3.0",
    source=(_FA_DOC + "; v2.8.3:csrc/flash_attn/flash_api.cpp (-1 = unbounded side, causal sets "
            "right = 0); window_size absent at v2.2.5, present at v2.3.0 (flash_attn_interface.py)"))
FA_GQA = Api(
    name="flash_attn_func: nheads_k divides nheads; query head h reads kv head h // (nheads // nheads_k)",
    package="flash-attn", since="2.0",
    source=_FA_DOC + "; MQA/GQA already in v2.0.0:flash_attn/flash_attn_interface.py docstrings")
COMPILER_DISABLE = Api(
    name="torch.compiler.disable(fn=None, recursive=True)", package="torch", since="2.1",
    target="torch.compiler.disable", param="recursive",
    source=(_W.format("2.1.0", "torch/compiler/__init__.py (absent from 2.0.0)") +
            "; reference torch_cuda_facts.md section 5"))
SUPPRESS_ERRORS = Api(
    name="torch._dynamo.config.suppress_errors", package="torch", since="2.0",
    target="torch._dynamo.config.suppress_errors",
    source=(_W.format("2.0.0", "torch/_dynamo/config.py, from env TORCHDYNAMO_SUPPRESS_ERRORS") +
            "; reference torch_cuda_facts.md section 5"))
FA_FUNC = Api(
    name="flash_attn.flash_attn_func", package="flash-attn", since="2.0",
    source="reference flash_attn_facts.md section 4 (1.x had another signature; 2.0 renamed)")
HF_SDPA = Api(
    name='from_pretrained(..., attn_implementation="sdpa")', package="transformers", since="4.36",
    source=("huggingface/transformers#28005 (maintainer: 'In Transformers 4.36, we started adding native "
            "support of ... SDPA'); models without it raise ValueError ('does not support an attention "
            "implementation through torch.nn.functional.scaled_dot_product_attention yet', #28175)"))
HF_SDPA_TORCH = Api(
    name="scaled_dot_product_attention, as transformers requires it", package="torch", since="2.1.1",
    target="torch.nn.functional.scaled_dot_product_attention",
    source=("huggingface/transformers src/transformers/utils/import_utils.py is_torch_sdpa_available(): "
            "torch >= 2.1.1 ('to avoid a numerical issue in SDPA with non-contiguous inputs', "
            "pytorch/pytorch#112577); later releases drop the check"))

SDPA_FLASH_ATTN_FUNC_CODE = '''\
import torch
import torch.nn.functional as F

# SDPA takes enable_gqa= from torch 2.5; older releases repeat the k/v heads instead.
_SDPA_GQA = torch.__version__ >= "2.5"


def _flash_mask(seqlen_q, seqlen_k, causal, window_size, device):
    """flash-attn's mask (>= 2.1), aligned to the bottom-right corner: query i sees keys
    i + seqlen_k - seqlen_q - left ... i + seqlen_k - seqlen_q + right; -1 means no limit."""
    left, right = window_size[0], 0 if causal else window_size[1]
    i = torch.arange(seqlen_q, device=device)[:, None] + (seqlen_k - seqlen_q)
    j = torch.arange(seqlen_k, device=device)
    keep = torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device=device)
    if right >= 0:
        keep &= j <= i + right
    if left >= 0:
        keep &= j >= i - left
    return keep


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                    deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_func on PyTorch SDPA. q: (batch, seqlen_q, nheads, headdim);
    k, v: (batch, seqlen_k, nheads_k, headdim), nheads_k dividing nheads. Like flash-attn,
    it applies dropout_p whenever it is > 0: pass 0.0 in evaluation."""
    if softcap != 0.0 or alibi_slopes is not None or return_attn_probs:
        raise NotImplementedError("softcap, alibi_slopes and return_attn_probs need flash-attn")
    if q.shape[2] % k.shape[2] != 0:
        raise ValueError("Number of heads in key/value must divide number of heads in query")
    # `deterministic` only picks flash-attn's backward kernel; the result is the same.
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # SDPA: (batch, heads, seqlen, headdim)
    extra = {}
    if q.shape[1] != k.shape[1]:
        if _SDPA_GQA:
            extra["enable_gqa"] = True
        else:
            groups = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    seqlen_q, seqlen_k = q.shape[2], k.shape[2]
    # With equal lengths, SDPA's top-left causal mask is flash-attn's and keeps the fast kernels.
    is_causal = causal and window_size[0] < 0 and seqlen_q == seqlen_k
    mask = empty = None
    if not is_causal and (causal or window_size[0] >= 0 or window_size[1] >= 0):
        mask = _flash_mask(seqlen_q, seqlen_k, causal, window_size, q.device)
        empty = ~mask.any(-1, keepdim=True)  # flash-attn returns 0 there; SDPA would give NaN
        mask = mask | empty
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                         is_causal=is_causal, scale=softmax_scale, **extra)
    if empty is not None:
        out = out.masked_fill(empty, 0.0)
    return out.transpose(1, 2).contiguous()
'''

# Each family's flash_attn_func (the modules of target/tables.py FAMILIES), and whether it may
# return (out, lse): FA3's and FA4's do (target/attention/calls.py unpacks it the same way).
FLASH_ATTN_FUNC_IMPORTS = {
    "fa2": ("from flash_attn import flash_attn_func", False),
    "fa3": ("from flash_attn_interface import flash_attn_func", True),
    "fa4": ("from flash_attn.cute import flash_attn_func", True),
    "vllm_fa": ("from vllm_flash_attn import flash_attn_func", False),
}

_DYNAMO_DISABLE_TEMPLATE = '''\
import torch
{import_line}


# torch.compile stops tracing at this call (one graph break), runs flash-attn eagerly and
# compiles the code around it. Call flash_attention(q, k, v, causal=True, ...) in your model.
@torch.compiler.disable
def flash_attention(q, k, v, **kwargs):
{body}
'''


def dynamo_disable_code(family: str) -> str:
    """The torch.compiler.disable wrapper around `family`'s flash_attn_func (FA2's by default)."""
    import_line, pair = FLASH_ATTN_FUNC_IMPORTS.get(family, FLASH_ATTN_FUNC_IMPORTS["fa2"])
    body = "    return flash_attn_func(q, k, v, **kwargs)"
    if pair:
        body = ("    out = flash_attn_func(q, k, v, **kwargs)\n"
                "    return out[0] if isinstance(out, tuple) else out  # (out, lse) -> out")
    return _DYNAMO_DISABLE_TEMPLATE.format(import_line=import_line, body=body)


DYNAMO_DISABLE_CODE = dynamo_disable_code("fa2")

DYNAMO_SUPPRESS_ERRORS_CODE = '''\
import torch._dynamo

# When Dynamo fails on a function, run that function eagerly instead of raising
# (the same as TORCHDYNAMO_SUPPRESS_ERRORS=1 in the environment).
torch._dynamo.config.suppress_errors = True
'''

SDPA_KERNEL = Api(
    name="torch.nn.attention.sdpa_kernel(backends) with SDPBackend", package="torch", since="2.3",
    target="torch.nn.attention.sdpa_kernel",
    source=("reference torch_cuda_facts.md section 4.1 (the PyPI wheels' shipped .py files: "
            "torch.nn.attention.sdpa_kernel + SDPBackend first in 2.3); matrix torch_apis"))

SDPA_BACKENDS_CODE = '''\
from torch.nn.attention import SDPBackend, sdpa_kernel

# Run scaled_dot_product_attention only on the SDPA backends that passed fadoctor's kernel
# tests here; the setting covers everything inside the block, forward and backward.
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    loss = model(**batch).loss
    loss.backward()
'''
SDPA_MEMBERS = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                "cudnn": "CUDNN_ATTENTION", "math": "MATH"}


def sdpa_backends_code(backends: Sequence[str]) -> str:
    """The sdpa_backends snippet for these backends (flash, efficient, cudnn, math)."""
    members = ", ".join("SDPBackend." + SDPA_MEMBERS[b] for b in backends)
    return SDPA_BACKENDS_CODE.replace("[SDPBackend.FLASH_ATTENTION]", f"[{members}]")


TRANSFORMERS_SDPA_CODE = 'model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="sdpa")'

SNIPPETS: Tuple[Snippet, ...] = (
    Snippet(
        id="sdpa_flash_attn_func",
        title="flash_attn_func without flash-attn: the same call on PyTorch's scaled_dot_product_attention",
        code=SDPA_FLASH_ATTN_FUNC_CODE,
        torch=SpecifierSet(">=2.1"),
        apis=(SDPA, SDPA_SCALE, SDPA_GQA, REPEAT_INTERLEAVE, TORCH_VERSION, FA_GQA, FA_CAUSAL, FA_WINDOW),
        caveat=("softcap, alibi_slopes and return_attn_probs raise NotImplementedError. A causal call "
                "with seqlen_q != seqlen_k, or a sliding window, passes SDPA an explicit mask, which "
                "its flash kernel does not take (torch_cuda_facts.md section 4.3): SDPA runs such "
                "calls on another of its kernels, slower."),
    ),
    Snippet(
        id="transformers_sdpa",
        title="transformers: load the model with PyTorch SDPA attention instead of flash-attn",
        code=TRANSFORMERS_SDPA_CODE,
        torch=SpecifierSet(">=2.1.1"),
        apis=(HF_SDPA, HF_SDPA_TORCH),
        caveat="Needs transformers >= 4.36 and an architecture that implements SDPA.",
    ),
    Snippet(
        id="sdpa_backends",
        title="PyTorch SDPA: run attention only on the backends that passed the kernel tests",
        code=SDPA_BACKENDS_CODE,
        torch=SpecifierSet(">=2.3"),
        apis=(SDPA_KERNEL,),
        caveat=("An input the listed backends refuse raises 'No available kernel' instead of "
                "falling back to another backend: list every backend that passed."),
    ),
    Snippet(
        id="dynamo_disable_flash_attn",
        title="torch.compile: run the flash-attn call eagerly and compile the rest",
        code=DYNAMO_DISABLE_CODE,
        torch=SpecifierSet(">=2.1"),
        apis=(COMPILER_DISABLE, FA_FUNC),
        caveat=("It needs fullgraph=False: under fullgraph=True the disabled call is an error. "
                "flash-attn >= 2.7 on torch >= 2.4 registers torch custom ops that compile without "
                "a break (reference torch_cuda_facts.md section 5)."),
    ),
    Snippet(
        id="dynamo_suppress_errors",
        title="torch.compile: fall back to eager where Dynamo fails instead of raising",
        code=DYNAMO_SUPPRESS_ERRORS_CODE,
        torch=SpecifierSet(">=2.0"),
        apis=(SUPPRESS_ERRORS,),
        caveat=("Global, and blunt: a function that fails loses all of its compilation, not only the "
                "flash-attn call, and the error is only logged as a warning, so it hides real bugs."),
    ),
)

_BY_ID: Dict[str, Snippet] = {s.id: s for s in SNIPPETS}


def snippet(snippet_id: str) -> Snippet:
    """The snippet with this id; KeyError names the known ones."""
    try:
        return _BY_ID[snippet_id]
    except KeyError:
        raise KeyError(f"no snippet {snippet_id!r}; known: {', '.join(_BY_ID)}") from None
