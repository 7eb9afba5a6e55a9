"""flash-attn-4 against what surrounds it: an nvidia-cutlass-dsl it was not written for (a Python
API error raised where FA4's CuTe code calls the DSL; the version each beta declares comes from
the matrix's fa4_releases), and transformers asked for flash_attention_2 with only flash-attn-4
installed (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import serve_remedies
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.signal import IMPLIED, LOGGED, RAISED_IN, Signal, dedupe

_API_ERROR = re.compile(
    r"TypeError: [\w.]{1,60}\(\) (?:takes \d+|got an unexpected keyword|missing \d+ required)|"
    r"AttributeError: (?:module|type object|'\w{1,40}' object) '?[\w.]{0,80}'? has no attribute|"
    r"ImportError: cannot import name '\w{1,80}' from '(?:cutlass|cuda\.bindings)[\w.]{0,80}'|"
    # the DSL refusing FA4's kernel code at compile time: its own error classes (DSLRuntimeError,
    # DSLOperationBuildError: strings of nvidia-cutlass-dsl-libs-base 4.6.0's binaries), its
    # typed diagnostics (error[TYPE_...]), or an op kind this DSL release does not accept
    r"\bDSL\w{0,30}Error\b|error\[TYPE_[A-Z_]{2,40}\]|TypeError\(?'?Unsupported [\w ]{1,60}op kind")
# Where FA4 meets the DSL: its sources, the DSL's package and its MLIR dialects.
_NEAR = ("flash_attn/cute", "flash_attn.cute", "/cutlass/", "cutlass.", "nvvm.", "cutedsl",
         "cute dsl", "_mlir", "cutlass-dsl", "cutlass_dsl", "flash-attn-4", "fa4-cute", "tcgen05")
_WINDOW = 15


def dsl_api(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_API_ERROR, ("typeerror", "attributeerror", "importerror",
                                              "dsl", "error[type_")):
        lines = ctx.text.lower_lines[max(index - _WINDOW, 0):index + _WINDOW]
        if not any(n in line for line in lines for n in _NEAR) and "cutlass" not in found.group(0):
            continue
        stated = [s.quote for s in filter(None, [ctx.package("flash-attn-4", "flash-attn4"),
                                                 ctx.package("nvidia-cutlass-dsl")])]
        return [Signal("dsl_api", Category.VERSION_CONFLICT,
                       "flash-attn-4's CuTe code and the installed nvidia-cutlass-dsl disagree on "
                       "an API: the DSL is not the version this flash-attn-4 was written for",
                       dedupe(sorted([ctx.quote(index), *stated], key=lambda q: q.line)), LOGGED,
                       serve_remedies.dsl_api(ctx),
                       needs=[] if len(stated) == 2 else [
                           ("the flash-attn-4 and nvidia-cutlass-dsl versions",
                            "python -m pip show flash-attn-4 nvidia-cutlass-dsl")])]
    return []


# transformers==5.4.0:transformers/modeling_utils.py:4840 adds attn_implementation
# "flash_attention_4", backed by flash-attn-4's flash_attn.cute; utils/import_utils.py:948-957
# tells it apart from flash-attn 2 by the distribution name. flash_attention_2 needs flash-attn 2's
# own flash_attn API, which flash-attn-4 does not install.
FA4_IN_HF = "transformers==5.4.0:transformers/modeling_utils.py:4840, utils/import_utils.py:948"


def fa4_as_fa2(ctx: Context) -> List[Signal]:
    """flash-attn-4 installed and no flash-attn 2, with flash_attention_2 asked for."""
    fa4 = ctx.package("flash-attn-4", "flash-attn4")
    asked = ctx.has("flash_attention_2")
    if fa4 is None or asked is None or ctx.package("flash-attn", "flash_attn") is not None:
        return []
    stated = ctx.package("transformers")
    release = parse_version(stated.value) if stated is not None else None
    old = release is not None and release < Version("5.4.0")
    fixes = [Remedy(summary="transformers 5.4.0 and later run flash-attn-4 as "
                    'attn_implementation="flash_attention_4"' + (f" (installed: transformers "
                                                                  f"{stated.value})" if old and
                                                                  stated else "") + ".",
                    code='model = AutoModelForCausalLM.from_pretrained(name, '
                         'attn_implementation="flash_attention_4")',
                    commands=['pip install --upgrade "transformers>=5.4.0"'] if old or stated
                    is None else []),
             Remedy(summary="Or install flash-attn 2 for flash_attention_2 (flash-attn-4 provides "
                    "flash_attn.cute, not flash-attn 2's API).",
                    commands=['pip install "flash-attn>=2,<3" --no-build-isolation'])]
    return [Signal("fa4_as_fa2", Category.VERSION_CONFLICT,
                   "flash_attention_2 asks for flash-attn 2, but only flash-attn-4 is installed: "
                   "it provides flash_attn.cute, not flash-attn 2's API",
                   dedupe(sorted([fa4.quote, asked], key=lambda q: q.line)), IMPLIED, fixes,
                   details={"source": FA4_IN_HF})]


_FA4_CODE = ("flash_attn/cute", "flash_attn\\cute", "flash_attn.cute", "flash-attn-4",
             "flash_attn_4", "flashattentionforward", "flashattentionbackward")
_PY_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(\w+Error|AssertionError|Exception)\b:?")


def beta_failure(ctx: Context) -> List[Signal]:
    """An exception raised inside flash-attn-4's CuTe code (its traceback's frames, or the report
    runs flash_attn.cute) that no other mechanism explains: a beta's bug or a case it does not
    handle yet; betas change weekly, so the newest published one comes first (the weakest
    finding: any message that names a cause outranks it)."""
    if not ctx.text.containing(_FA4_CODE):
        return []
    raised = next((r for r in ctx.seen.raised if r.kind not in ("warning", "log")
                   and (any("flash_attn/cute" in f.replace("\\", "/") for f in r.frames)
                        or _PY_ERROR.match(ctx.text.lines[r.index]))), None)
    if raised is None:
        return []
    published = sorted((r for r in ctx.matrix.fa4_releases if r.published),
                       key=lambda r: r.version)
    stated = ctx.package("flash-attn-4", "flash-attn4")
    newest = published[-1] if published else None
    fixes: List[Remedy] = []
    have = parse_version(stated.value) if stated is not None else None
    if newest is not None and (have is None or have < newest.version):
        fixes.append(Remedy(
            summary=f"Upgrade to the newest flash-attn-4 beta, {newest.version} (betas fix "
                    "kernel paths from one week to the next; add the [cu13] extra on CUDA 13).",
            commands=[f'pip install --upgrade "{newest.distribution}=={newest.version}"']))
    fixes.append(Remedy(summary="If the newest beta fails the same way, it is a flash-attn-4 bug "
                        "for this GPU or these shapes: report it upstream with this traceback; "
                        "meanwhile use flash-attn 2.x (Ampere to Blackwell) or PyTorch SDPA "
                        '(attn_implementation="sdpa").'))
    quotes = dedupe([raised.quote, *([stated.quote] if stated else []),
                     *([ctx.gpu[2]] if ctx.gpu else [])])
    return [Signal("fa4_beta", Category.KERNEL_FAILURE,
                   f"flash-attn-4{f' {stated.value}' if stated else ''} failed inside its CuTe "
                   f"kernels{f' on {ctx.gpu[0]}' if ctx.gpu else ''} "
                   f"({raised.kind}: {raised.message[:80]})", quotes, RAISED_IN, fixes,
                   details={"source": "the matrix's fa4_releases (tools/gen_fa4_betas.py)"})]
