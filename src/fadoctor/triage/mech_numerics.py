"""A report that flash-attention runs but gives NaN or Inf (a loss, gradients, an output): a
numerics finding, the weakest kind (the report's words, no error), with the steps that tell the
kernel from the model: the same run on SDPA, bf16 instead of fp16, the newest release (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context, minor, parse_version
from fadoctor.triage.signal import HINTED, IMPLIED, Signal, dedupe
from fadoctor.triage.text import Quote

_NAN = re.compile(r"\b(?:nan|NaN|NAN|Nan|inf|Inf)s?\b[^\n]{0,80}?|\b(?:loss|grad\w*|output|logits|"
                  r"attention)\b[^\n]{0,60}?\b(?:nan|NaN|NAN|inf)\b")
# flash-attention's own tests failing on values, or the report saying the results are wrong
_WRONG = re.compile(r"\bwrong (?:answer|result|gradient|output|value)s?\b|\bwrong (?:model )?ou?t?put\b|"
                    r"\bgenerates? (?:non-?sense|gibberish|garbage)\b|\b(?:non-?sense|gibberish|garbage) "
                    r"(?:output|text|answers?)\b|\bincorrect (?:result|"
                    r"output|gradient|value)s?\b|FAILED tests/test_flash_attn\w*\.py::\S+ - "
                    r"AssertionError|\bcorrectness (?:issue|bug|problem)|\bmax(?:imum)? abs(?:olute)? "
                    r"(?:error|diff)", re.I)
_FP16 = re.compile(r"(?<![bB])float16|\bfp16\b|torch\.half\b")  # not bfloat16
_ABOUT = re.compile(r"\b(?:loss|grad\w*|output|logits|attn|attention|becomes?|turns?|gives?|"
                    r"returns?|produces?|results?|gets?|got|getting)\b", re.I)
_FLASH = ("flash_attention_2", "flash-attn", "flash_attn", "flashattention", "flash attention",
          "flash-attention", "fa2", "fa3", "flash_attention_3")


def nan(ctx: Context) -> List[Signal]:
    if not ctx.text.containing(_FLASH):
        return []
    hit = next(((i, m) for i, m in ctx.find(_NAN, ("nan", "inf"))
                if _ABOUT.search(ctx.text.lines[i]) and "nan_to_num" not in ctx.low(i)), None)
    overflow = hit is not None  # a NaN or Inf, not wrong values: a dtype's range may be the cause
    hit = hit or ctx.first(_WRONG, ("wrong", "incorrect", "assertionerror", "correctness", "abs",
                                    "sense", "gibberish", "garbage"))
    if hit is None:
        return []
    fp16 = ctx.first(_FP16, ("float16", "fp16", "torch.half")) is not None
    fixes = [r.sdpa("Run the same step with SDPA: if the NaN goes away, flash-attention's kernel "
                    "is the cause; if not, the model or data is."),
             _upgrade(ctx)]
    if ctx.has("transpose", "contiguous", "stride") is not None:
        fixes.insert(1, Remedy(summary="Call it with .contiguous() q, k and v: a kernel that "
                               "mishandles strides gives wrong values only for transposed or "
                               "sliced views; if contiguous inputs are right, that is the bug "
                               "(and the workaround until a release fixes it)."))
    if fp16:
        fixes.insert(1, Remedy(summary="fp16 overflows where bf16 does not: train in bfloat16 "
                               "(the GPU must be Ampere or newer, as flash-attention needs "
                               "anyway)."))
    elif overflow:  # flash-attention takes fp16/bf16 only: an fp32 model's is cast down for it
        fixes.insert(1, Remedy(summary="flash-attention computes in fp16 or bf16 only: an fp32 "
                               "model's q, k and v are cast down for it, and fp16 overflows past "
                               "65504. Cast to bf16 rather than fp16, or keep that attention in "
                               "fp32 with an attention that takes it (PyTorch SDPA's "
                               "memory-efficient or math backend, or xformers)."))
    toolkit = _old_toolkit(ctx)
    if toolkit is not None:
        fixes.insert(0, toolkit)
    return [Signal("numerics", Category.NUMERICS,
                   "the report says flash-attention runs but gives NaN, Inf or wrong values: compare with "
                   "SDPA to tell the kernel from the model", [ctx.quote(hit[0])], HINTED, fixes,
                   needs=[("the dtype, head dim and flash-attn version of the run",
                           "python -m torch.utils.collect_env; pip show flash-attn")])]


def _old_toolkit(ctx: Context) -> Optional[Remedy]:
    """The kernels were compiled with a CUDA toolkit below the floor later releases set: their
    setup.py refuses it (min_nvcc in the matrix, from setup.py at each tag), so no newer build
    would have used it."""
    cuda = ctx.nvcc or minor(parse_version(ctx.seen.get(o.CUDA)))
    if cuda is None:
        return None
    raised = next((rel for rel in sorted(ctx.matrix.flash_attn_releases, key=lambda x: x.version)
                   if Version(rel.min_nvcc) > cuda), None)
    if raised is None:
        return None
    newest = max(ctx.matrix.flash_attn_releases, key=lambda x: x.version)
    return Remedy(summary=f"The kernels were compiled with CUDA {cuda}: flash-attn {raised.version} "
                  f"raised its setup.py's floor to nvcc {raised.min_nvcc}, and its current releases "
                  f"need CUDA {newest.readme_min_cuda or newest.min_nvcc} or newer. Rebuild with a "
                  "newer CUDA toolkit (or install a prebuilt wheel), then test again.")


def _upgrade(ctx: Context) -> Remedy:
    """The newest release of the family the report runs: flash-attn-4's betas (flash_attn.cute)
    or flash-attn 2.x."""
    if ctx.package("flash-attn-4") is not None or ctx.has("flash_attn.cute", "flash-attn-4",
                                                          "fa4") is not None:
        return Remedy(summary="Upgrade flash-attn-4 to its newest beta: its correctness fixes "
                      "land in beta releases.",
                      commands=['pip install --upgrade --pre "flash-attn-4"'])
    return Remedy(summary="Upgrade flash-attn to its newest release: numerical fixes land in "
                  "patch releases.", commands=['pip install --upgrade flash-attn --no-build-isolation'])


# A diffusion pipeline's NaN shows as a black image; A1111 says it itself (modules/devices.py:
# "A tensor with all NaNs was produced in Unet/VAE").
_BLACK = re.compile(r"\b(?:black|green) (?:images?|outputs?|pictures?|frames?|screen|blocks|squares|"
                    r"patches)\b|images? (?:are|is|come out|turns?|goes) (?:all |completely |fully )?"
                    r"black\b|"
                    r"tensor with all NaNs was produced in (?:Unet|VAE)|"
                    # Chinese: 图片全为黑色 (the images are all black), 黑图 (black images)
                    r"(?:图片|图像|输出|结果|画面)[^\n]{0,12}黑|黑图", re.I)
# forcing half precision: ComfyUI's --fp16-unet / --fp16-vae / --force-fp16 (comfy/cli_args.py),
# a pipeline's torch_dtype=torch.float16, or the words
_HALF = re.compile(r"--(?:fp16-(?:unet|vae|text-enc)|force-fp16)\b|(?<![bB])float16|\bfp16\b|"
                   r"torch\.half\b|\b(?:full|half) precision\b", re.I)


def black_images(ctx: Context) -> List[Signal]:
    """Black images from a model run in float16: its activations pass fp16's range (65504), turn
    to inf and NaN, and decode to black; bf16 keeps fp32's range, fp32 keeps everything."""
    hit = ctx.first(_BLACK, ("black", "green", "all nans", "黑"))
    half = ctx.first(_HALF, ("fp16", "float16", "torch.half", "precision"))
    if ctx.gpu is not None and _GTX16.search(ctx.gpu[0]):
        # on a GTX 16 card NaN itself says it ("NaN detected in latents"), black or not, and so
        # does a half-precision refusal ("expected scalar type Float but found Half")
        told = hit or ctx.first(_NAN, ("nan",)) or ctx.first(_HALF_REFUSED, ("found half",))
        if told is not None:
            return [_gtx16(ctx, told[0], ctx.gpu[0], ctx.gpu[2])]
    if hit is None or half is None:
        return []
    return [Signal("numerics_fp16", Category.NUMERICS,
                   "the model overflows float16: activations past fp16's largest value (65504) "
                   "become inf and then NaN, which decode to a black image",
                   [ctx.quote(hit[0]), ctx.quote(half[0])], HINTED,
                   [Remedy(summary="Run that model in bf16 (fp32's range; Ampere or newer) or fp32 "
                           "instead of fp16: in ComfyUI drop --fp16-unet / --fp16-vae / "
                           "--force-fp16 (or pass --bf16-unet, --fp32-vae); in AUTOMATIC1111 "
                           "--no-half-vae, or --precision full --no-half for the UNet; elsewhere "
                           "torch_dtype=torch.bfloat16.")])]


# GeForce GTX 16xx (Turing, compute capability 7.5, no tensor cores) gives NaN under fp16
# autocast: AUTOMATIC1111 special-cases exactly these cards (modules/devices.py,
# cuda_no_autocast: capability (7, 5) and a name starting "NVIDIA GeForce GTX 16"), and its NaN
# check tells "your video card does not support half type ... --no-half" (test_for_nans).
# (an "RTX 1660 Ti" as typed is one: no RTX 16x0 exists)
_HALF_REFUSED = re.compile(r"expected scalar(?: type \w+)? but found half", re.I)
_GTX16 = re.compile(r"\b[GR]TX ?16\d0(?!\d)", re.I)


def _gtx16(ctx: Context, index: int, name: str, gpu: Quote) -> Signal:
    return Signal("numerics_gtx16", Category.NUMERICS,
                  f"{name} (a GTX 16 card: Turing without tensor cores) computes NaN in "
                  "half precision (images decode black or green; training stops on NaN)",
                  dedupe([ctx.quote(index), gpu]), IMPLIED,
                  [Remedy(summary="Run in full precision on this card: AUTOMATIC1111 "
                          "--precision full --no-half (or --upcast-sampling, which keeps less in "
                          "fp32); ComfyUI --force-fp32; training (kohya's sd-scripts, accelerate) "
                          "--mixed_precision no, with --no_half_vae; elsewhere "
                          "torch_dtype=torch.float32.")],
                  details={"source": "AUTOMATIC1111/stable-diffusion-webui modules/devices.py "
                                     "(cuda_no_autocast, test_for_nans)"})


# A model run in float16 whose outputs go NaN, Inf or empty, with no flash-attention in the
# report: fp16's range (largest 65504) against activations that a bf16-trained model keeps in
# fp32's range. Told as NaN/Inf, as numpy's "invalid value encountered in cast" (NaN to uint8:
# a black image), as overflow (溢出), or as bf16 working where fp16 does not.
_OVERFLOW = re.compile(r"invalid value encountered in cast|\boverflow(?:s|ed|ing)?\b|溢出|"
                       r"\b(?:bf16|bfloat16)\b[^\n]{0,30}\bworks?\b|\bworks?\b[^\n]{0,20}\b(?:with|in|"
                       r"on) (?:bf16|bfloat16)\b", re.I)


_BOTH = re.compile(r"\b(?:bf16|bfloat16) (?:and|or|&|/) (?:fp16|float16)\b|\b(?:fp16|float16) "
                   r"(?:and|or|&|/) (?:bf16|bfloat16)\b|\b(?:bf16|bfloat16)\b[^\n]{0,40}\bnan\b", re.I)


def fp16_overflow(ctx: Context) -> List[Signal]:
    if ctx.text.containing(_FLASH) or ctx.first(_BLACK, ("black", "all nans")) is not None:
        return []  # nan() and black_images() read those
    half = ctx.first(_HALF, ("fp16", "float16", "torch.half"))
    if half is None:
        return []
    symptom = ctx.first(_OVERFLOW, ("cast", "overflow", "溢出", "bf16", "bfloat16")) or next(
        ((i, m) for i, m in ctx.find(_NAN, ("nan", "inf")) if _ABOUT.search(ctx.text.lines[i])),
        None)
    if symptom is None or _BOTH.search(ctx.text.joined):
        return []  # NaN in bf16 too: not fp16's range
    pre_ampere = ctx.gpu is not None and ctx.gpu[1] is not None and ctx.gpu[1].major < 8
    way = ("this GPU has no bf16 (before Ampere): run the model in float32, or keep float16 with "
           "the layers that overflow (attention scores, MLP activations, norms) upcast to float32"
           if pre_ampere else
           "run the model in bfloat16 (fp32's range; Ampere or newer) or float32 instead of "
           "float16 (torch_dtype=torch.bfloat16)")
    return [Signal("numerics_fp16", Category.NUMERICS,
                   "the model overflows float16: activations past fp16's largest value (65504) "
                   "become inf and then NaN (or empty output), where bf16 and fp32 keep their "
                   "range", dedupe([ctx.quote(symptom[0]), ctx.quote(half[0]),
                                    *([ctx.gpu[2]] if ctx.gpu else [])]), HINTED - 5,
                   [Remedy(summary=way[0].upper() + way[1:] + ".")])]


# flash-attention compared with a reference attention in fp16 or bf16, and the two differing by a
# little: rounding, not a bug. flash-attention's own tests hold its output to at most twice the
# error of the same-dtype reference, both measured against an fp32 reference
# (Dao-AILab/flash-attention@v2.8.3:tests/test_flash_attn.py:704).
_DIFFERS = re.compile(r"\bdifferent (?:results?|outputs?|values?|answers?)\b|\bdiffers?\b|"
                      r"\bdifferences?\b|\bmismatch(?:es|ed)?\b|\bnot (?:close|equal|the same|"
                      r"match(?:ing)?)\b|\ballclose\b|\bdiscrepanc(?:y|ies)\b|\bdeviat(?:es|ion)\b",
                      re.I)
_LOW = re.compile(r"float16|\bfp16\b|\bbf16\b|torch\.half\b|\.half\(\)|\bhalf precision\b", re.I)
# outputs said to be wrong ("what is wrong with my code" is a question, not a claim)
_BROKEN = re.compile(r"\b(?:wrong|incorrect) (?:model )?(?:outputs?|results?|answers?|values?|"
                     r"gradients?)\b|\bnon-?sense\b|\bgibberish\b|\bgarbage\b|\bbroken\b", re.I)


def rounding(ctx: Context) -> List[Signal]:
    if not ctx.text.containing(_FLASH) or ctx.first(_NAN, ("nan", "inf")) is not None \
            or ctx.first(_BROKEN, ("wrong", "nonsense", "gibberish", "garbage", "incorrect",
                                   "broken")) is not None \
            or any(raised.kind not in ("warning", "log", "AssertionError")
                   for raised in ctx.seen.raised):
        return []
    hit = ctx.first(_DIFFERS, ("differ", "mismatch", "not ", "allclose", "discrepanc", "deviat"))
    low = ctx.first(_LOW, ("float16", "fp16", "bf16", "half"))  # .half() too (held_out_26)
    if hit is None or low is None:
        return []
    return [Signal("rounding", Category.INFO,
                   "flash-attention and a reference attention, both in 16-bit floats, differ by "
                   "rounding: each sums in its own order, so their outputs are not bit-equal",
                   dedupe(sorted([ctx.quote(hit[0]), ctx.quote(low[0])], key=lambda q: q.line)),
                   HINTED,
                   [Remedy(summary="Expected, not a bug by itself: compare both against a "
                           "reference computed in fp32 (upcast q, k and v to float32): "
                           "flash-attention's tests require its error against that fp32 reference "
                           "to be at most twice the same-dtype reference's own error. A "
                           "difference within that bound is numerical error; far above it is a "
                           "bug worth reporting with the shapes.")],
                   details={"source": "Dao-AILab/flash-attention@v2.8.3:tests/test_flash_attn.py:704"})]


# SDPA given a mask that leaves some query no key: softmax over a row of -inf is NaN. Measured
# here on torch 2.13.0 (CPU, default and MATH backends): such a row comes back as zeros (the
# math path's _safe_softmax, torch/_decomp/decompositions.py); older releases and other backends
# (MPS, pytorch/pytorch#156707) give NaN.
_SDPA = re.compile(r"scaled_dot_product_attention|\bSDPA\b", re.I)
_ALL_MASKED = re.compile(r"\b(?:fully|completely|entirely|all)[ -]masked\b|\bmask\w*\b[^\n]{0,60}"
                         r"\b(?:blocks?|masks?|hides?) (?:all|every|out all)\b|\b(?:zero|empty|all[ -]"
                         r"false|all-zero) rows?\b|\brows? (?:that are |which are )?(?:all|fully|"
                         r"entirely) (?:masked|false|zero)|"
                         # "extra rows to the boolean attention mask with all `False` values"
                         r"\brows?\b[^\n]{0,60}?\bwith all\W{0,2}(?:False|-inf|masked)\b", re.I)


def masked_rows(ctx: Context) -> List[Signal]:
    sdpa = ctx.first(_SDPA, ("scaled_dot_product_attention", "sdpa"))
    nan = ctx.first(_NAN, ("nan", "inf")) if sdpa is not None else None
    rows = ctx.first(_ALL_MASKED, ("mask", "row")) if nan is not None else None
    if sdpa is None or nan is None or rows is None:
        return []
    return [Signal("masked_rows", Category.NUMERICS,
                   "SDPA was given a mask that leaves some query row no key at all: softmax over "
                   "a fully masked row (every score -inf) is NaN on the backends and releases "
                   "that do not special-case it",
                   dedupe(sorted([ctx.quote(nan[0]), ctx.quote(rows[0])], key=lambda q: q.line)),
                   HINTED + 5,
                   [Remedy(summary="Give every query at least one key (a padding row can attend "
                           "to itself), or zero the fully masked rows after the call "
                           "(torch.nan_to_num(out), or torch.where on the row's mask). Newer "
                           "PyTorch returns zeros for such rows on its CPU/math path (torch 2.13 "
                           "does); upgrade PyTorch, and check the backend this run used (MPS "
                           "and others lagged).")],
                   details={"source": "torch==2.13.0 measured: a fully masked row returns zeros "
                                      "(torch/_decomp/decompositions.py _safe_softmax)"})]


# torch.multinomial refusing the sampling probabilities (aten/src/ATen/native/Distributions.cpp:
# "probability tensor contains either `inf`, `nan` or element < 0"): the logits reached inf or NaN,
# most often a model run in float16 whose activations overflow fp16's range
_SAMPLING = re.compile(r"probability tensor contains either `?inf`?, `?nan`? or element < 0")


def sampling_nan(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SAMPLING, ("probability tensor contains",))
    if hit is None:
        return []
    pre_ampere = ctx.gpu is not None and ctx.gpu[1] is not None and ctx.gpu[1].major < 8
    dtype = ("float32 (this GPU has no bfloat16)" if pre_ampere else
             "bfloat16 (torch_dtype=torch.bfloat16; fp32's range) or float32")
    return [Signal("sampling_nan", Category.NUMERICS,
                   "the logits sampled from hold inf or NaN: the model's forward overflowed, most "
                   "often float16 activations past 65504 (or a broken checkpoint)",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), IMPLIED,
                   [Remedy(summary=f"Load and run the model in {dtype} instead of float16; if "
                           "it still fails in float32, the checkpoint's weights hold NaN or inf "
                           "(check them with torch.isfinite).")])]


# float32 results on an Ampere or newer GPU that differ from other GPUs and the CPU: TF32, which
# those GPUs use for float32 matmuls by default in torch 1.7-1.11 and for cuDNN convolutions in
# every release (PyTorch's CUDA semantics notes, "TensorFloat-32 (TF32) on Ampere (and later)
# devices": torch.backends.cuda.matmul.allow_tf32 defaults to True in 1.7-1.11, False from 1.12;
# torch.backends.cudnn.allow_tf32 defaults to True)
_RESULTS_DIFFER = re.compile(r"\b(?:results?|outputs?|values?|answers?)\b[^\n]{0,60}\b(?:totally |"
                             r"completely |very |quite )?(?:different|differ|wrong|inaccurate)\b",
                             re.I)
_TF32 = Version("8.0")


def tf32(ctx: Context) -> List[Signal]:
    cc = ctx.gpu_cc_exact
    if cc is None or cc < _TF32 or ctx.amd or ctx.text.containing(_FLASH) \
            or ctx.first(_LOW, ("16", "half")) is not None:
        return []
    hit = ctx.first(_RESULTS_DIFFER, ("differ", "wrong", "inaccurate"))
    if hit is None or ctx.gpu is None \
            or any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []  # an error raised is a failure, not float32's precision
    torch = ctx.torch
    matmul = torch is None or (torch.major, torch.minor) < (1, 12)
    where = ("float32 matmuls and convolutions" if matmul else
             "float32 convolutions (cuDNN; matmuls too where the code enables it)")
    return [Signal("numerics_tf32", Category.NUMERICS,
                   f"{ctx.gpu[0]} is Ampere or newer, where torch computes {where} in TF32 (10 "
                   "bits of mantissa) by default: results differ from other GPUs and the CPU",
                   dedupe([ctx.quote(hit[0]), ctx.gpu[2]]), HINTED,
                   [Remedy(summary="Turn TF32 off where full float32 precision matters: "
                           "torch.backends.cuda.matmul.allow_tf32 = False and "
                           "torch.backends.cudnn.allow_tf32 = False (or "
                           "torch.set_float32_matmul_precision(\"highest\")).")],
                   details={"source": "PyTorch docs, CUDA semantics: TensorFloat-32 (TF32) on "
                                      "Ampere (and later) devices"})]
