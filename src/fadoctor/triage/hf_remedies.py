"""The fix for a catalogued transformers message about flash-attention (hf-NNN): the package,
version floor, dtype or device it names, joined with the versions the report states (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.safety.shell import requirement as pin
from fadoctor.triage import remedies as r
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.context import Context, parse_version

PINS = "fadoctor fix --print-pins"
CUDA_SEEN = 'python -c "import torch; print(torch.cuda.is_available())"'
# flash-attention's README (Dao-AILab/flash-attention@v2.8.3:README.md, "FlashAttention-3 beta
# release"): FA3 is built from its hopper/ directory (python setup.py install) for H100/H800.
FA3_BUILD = ("FlashAttention-3 is built from flash-attention's hopper/ directory (`cd hopper && "
             "python setup.py install`, README), for Hopper GPUs")


def kernels_range(values: Dict[str, str]) -> Tuple[Optional[Version], Optional[Version]]:
    """The `kernels` range transformers prints ("0.15.2 <= version < 0.16.0"), as versions."""
    low, high = (parse_version(values.get(k, "").strip(" .,`'()"))
                 for k in ("KERNELS_MIN_VERSION", "KERNELS_MAX_VERSION"))
    return low, high


def _kernels(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    """`kernels` in the range the message itself prints (the installed transformers' own), else
    at the requirement of the transformers release the report names, else of the newest release
    that prints the message; and the transformers releases that accept the kernels stated."""
    low, high = kernels_range(values)
    if low is not None and high is not None:
        stated = ctx.package("kernels")
        have = parse_version(stated.value) if stated is not None else None
        accept = [(first, last) for first, last, req in entry.requires
                  if have is not None and have in SpecifierSet(req.split("kernels", 1)[1])]
        out = [Remedy(summary=f"Install the `kernels` release this transformers accepts (its "
                      f"message: {low} <= version < {high}) into this interpreter.",
                      commands=[command("pip", "install", f"kernels>={low},<{high}")])]
        if accept:
            out.append(Remedy(summary=f"Or keep kernels {have} and move transformers to a "
                              f"release that accepts it ({accept[0][0]}..{accept[-1][1]}).",
                              commands=[command("pip", "install",
                                                pin("transformers", accept[-1][1]))]))
        return out
    stated = ctx.package("transformers")
    release = parse_version(stated.value) if stated is not None else None
    held = [req for first, last, req in entry.requires
            if release is not None and Version(first) <= release <= Version(last)]
    requirement = held[-1] if held else entry.requires[-1][2] if entry.requires else None
    which = f"transformers {release}" if held else f"transformers {entry.last}"
    if requirement is None:
        return [Remedy(summary=f"Install the Hugging Face `kernels` package into this interpreter "
                       f"(transformers {entry.first}..{entry.last} asks for it).",
                       commands=["pip install kernels"])]
    return [Remedy(summary=f"Install the `kernels` release {which} declares ({requirement}, its "
                   f"dependency table) into this interpreter ({entry.location}).",
                   commands=[f'pip install "{requirement}"'])]


def _flash_attn(ctx: Context, floor: Optional[str], why: str) -> List[Remedy]:
    wheel = r.exact_wheel(ctx, replace_installed=ctx.fa2 is not None)
    spec = f">={floor}" if floor else ">=2,<3"
    return r.keep([wheel, Remedy(
        summary=f"{why} Install flash-attn{spec} built for this interpreter's torch (`{PINS}` "
                "prints the exact wheel or build for it).",
        commands=[PINS, f'pip install "flash-attn{spec}" --no-build-isolation']),
        r.sdpa("Or run without flash-attn:")])


def _generation(entry: Entry, values: Dict[str, str]) -> str:
    found = values.get("flash_attn_version") or \
        next(iter(re.findall(r"(?:Flash ?Attention|flash_attn_?)\s?([234])\b", entry.printed)), "2")
    return found.strip(".,:;")


def _installed(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    if "USE_HUB_KERNELS" in entry.printed:
        return [Remedy(summary="The environment variable USE_HUB_KERNELS turns the Hub kernels "
                       "off (transformers reads it in integrations/hub_kernels.py; YES by "
                       "default): set it to YES, or unset it.",
                       commands=["export USE_HUB_KERNELS=YES"])]
    if "kernels" in entry.printed.lower():
        return _kernels(ctx, entry, values)
    if entry.weight == "wrapped":
        return [Remedy(summary="transformers raised this over flash_attn's own import error: "
                       "import it directly to see that error (an undefined symbol means a "
                       "build for another torch), then triage that output.",
                       commands=[r.REVEAL_IMPORT]),
                *_flash_attn(ctx, None, "If it is not installed here:")]
    generation = _generation(entry, values)
    if generation == "3":
        return [Remedy(summary=f"transformers imports FlashAttention-3 as flash_attn_3 (or "
                       f"flash_attn_interface): {FA3_BUILD}; on other GPUs use "
                       'attn_implementation="flash_attention_2".'),
                r.sdpa("Or run without it:")]
    if generation == "4":
        return [Remedy(summary="transformers' FlashAttention4 needs the flash-attn-4 package "
                       "(flash_attn.cute) installed into this interpreter.",
                       commands=["pip install flash-attn-4"]), r.sdpa("Or run without it:")]
    if Version(entry.last) < Version("4.36") and "is not available" in entry.printed:
        # utils/import_utils.py at 4.34/4.35: the package found and torch.cuda.is_available()
        return [Remedy(summary=f"transformers {entry.first}..{entry.last} says this when "
                       "flash_attn is not found in this interpreter or torch sees no CUDA device "
                       "(is_flash_attn_available): check which.", commands=[CUDA_SEEN]),
                *_flash_attn(ctx, None, "If flash_attn is missing:")]
    return _flash_attn(ctx, None, "transformers cannot find flash_attn in this interpreter.")


def _floor(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    if "kernels" in entry.printed.lower():
        return _kernels(ctx, entry, values)
    found = re.search(r"(?:than|least version `?)\s?(\d+(?:\.\d+){1,2})", entry.printed)
    floor = found.group(1) if found else None
    if floor == "2.0":  # 4.34's check is `> 2.0.0` (modeling_utils.py): 2.0.1 is the first above
        floor = "2.0.1"
    detected = values.get("flash_attention_version")
    return _flash_attn(ctx, floor, f"transformers {entry.first}..{entry.last} needs flash-attn "
                       f">= {floor}" + (f"; {detected.strip('.')} is installed." if detected
                                        else "."))


def _device(entry: Entry) -> List[Remedy]:
    if "not available on CPU" in entry.printed:
        return [Remedy(summary="torch in this interpreter sees no CUDA GPU (a CPU-only torch "
                       "build, no driver, or CUDA_VISIBLE_DEVICES hides it): install the CUDA "
                       f"build of torch for this driver (`{PINS}`) and check it sees the GPU.",
                       commands=[CUDA_SEEN, PINS]),
                r.sdpa("Or run without flash-attention:")]
    return [Remedy(summary="FlashAttention runs only on the GPU: load the model onto it with "
                   'device_map="cuda" (not a map with "cpu" or "disk" entries), or call '
                   'model.to("cuda") after loading; with no GPU, use attn_implementation="sdpa".',
                   code='model = AutoModelForCausalLM.from_pretrained(\n    name, '
                        'torch_dtype=torch.bfloat16, device_map="cuda",\n    '
                        'attn_implementation="flash_attention_2")')]


def for_entry(ctx: Context, entry: Entry, category: Category, values: Dict[str, str]
              ) -> List[Remedy]:
    if category == Category.NOT_INSTALLED:
        return _installed(ctx, entry, values)
    if category == Category.VERSION_CONFLICT:
        return _floor(ctx, entry, values)
    if category == Category.NO_GPU:
        return _device(entry)
    if category == Category.GPU_UNSUPPORTED:
        return [Remedy(summary="transformers' FlashAttention-3 path needs compute capability "
                       '>= 9.0 (Hopper): below it use attn_implementation="flash_attention_2" '
                       "(Ampere or newer)."), r.sdpa("Or, on any GPU:")]
    if category == Category.PLATFORM_UNSUPPORTED:
        return [r.sdpa("flash_attn does not run on Ascend NPU (transformers says so):")]
    if category == Category.TORCH_VERSION_MISMATCH:
        floor = re.search(r"torch>=([\d.]+\d)", entry.printed)
        return [Remedy(summary=f"transformers' SDPA path needs torch >= "
                       f"{floor.group(1) if floor else 'the floor it names'}: install a newer "
                       f"CUDA build of torch (`{PINS}` picks one), or "
                       'attn_implementation="eager".', commands=[PINS])]
    if category == Category.DTYPE_UNSUPPORTED and entry.weight == "logged":
        # transformers logs this at load when the weights are float32 and goes on: under mixed
        # precision the attention itself receives bf16/fp16 tensors
        return [Remedy(summary="transformers logs this when the model is loaded in float32 and "
                       "goes on: if training or inference runs under mixed precision "
                       "(torch.autocast, FSDP MixedPrecision, Trainer bf16=True), the attention "
                       "gets bf16/fp16 tensors and the warning is harmless, safe to ignore. "
                       "Otherwise load the weights in bf16:",
                       code='model = AutoModelForCausalLM.from_pretrained(\n    name, '
                            'torch_dtype=torch.bfloat16, attn_implementation="flash_attention_2")')]
    return [Remedy(summary="FlashAttention runs only in fp16 or bf16: load the model with "
                   "torch_dtype=torch.bfloat16 (or float16), or run under torch.autocast.",
                   code='model = AutoModelForCausalLM.from_pretrained(\n    name, '
                        'torch_dtype=torch.bfloat16, attn_implementation="flash_attention_2")')]
