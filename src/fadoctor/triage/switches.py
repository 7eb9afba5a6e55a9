"""The switch each framework gives to run without flash-attention, for the framework a report
names: read at the frameworks' release tags (each row cites where the option is defined), so a
remedy says what to write in that framework, not only "use SDPA" (pure).

vLLM's and SGLang's rows were read from their release source packages of the same version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Remedy
from fadoctor.triage.context import Context


@dataclass(frozen=True)
class Switch:
    framework: str
    words: Tuple[str, ...]  # how a report names it (lower case)
    summary: str
    commands: Tuple[str, ...]
    source: str
    # the distribution whose stated version decides, and the last release the commands work
    # with (vLLM's XFORMERS backend: through 0.11.0, gone in 0.12.0)
    dist: str = ""
    commands_until: str = ""


SWITCHES = (
    Switch("axolotl", ("axolotl",),
           "In axolotl's config: `flash_attention: false` and `sdp_attention: true` (from v0.2.1; "
           "from v0.12.0 also `attn_implementation: sdpa`, the main switch from v0.17.0).", (),
           "axolotl-ai-cloud/axolotl@v0.16.1:src/axolotl/utils/schemas/config.py:711,725; "
           "@v0.18.0:src/axolotl/utils/schemas/config.py:839"),
    Switch("LLaMA-Factory", ("llama-factory", "llamafactory", "llama_factory", "llmtuner"),
           "In LLaMA-Factory's arguments: `flash_attn: sdpa` (v0.7.0 and later; `disabled`, or "
           "`off` before v0.8.3, means eager; before v0.7.0 `flash_attn: false`).", (),
           "hiyouga/LLaMA-Factory@v0.9.5:src/llamafactory/hparams/model_args.py:117; "
           "@v0.7.0:src/llmtuner/hparams/model_args.py:68"),
    Switch("text-generation-inference", ("text-generation-inference", "text_generation_server",
                                         "text-generation-launcher", "huggingface/tgi", " tgi"),
           "In text-generation-inference: USE_FLASH_ATTENTION=False (from v0.9.0) makes it load "
           "the model without its flash-attention code path (docker run -e "
           "USE_FLASH_ATTENTION=False ...).", ("export USE_FLASH_ATTENTION=False",),
           "huggingface/text-generation-inference@v3.3.7:server/text_generation_server/layers/"
           "attention/__init__.py:7"),
    Switch("vLLM", ("vllm",),
           "In vLLM: up to 0.11, VLLM_ATTENTION_BACKEND=XFORMERS (the variable exists 0.4.1 to "
           "0.14.1); from 0.13, --attention-backend TRITON_ATTN (or FLEX_ATTENTION); for a vision "
           "encoder, --mm-encoder-attn-backend TORCH_SDPA (from 0.12).",
           ("export VLLM_ATTENTION_BACKEND=XFORMERS",),
           "vllm-project/vllm@v0.4.1:vllm/attention/selector.py:82; "
           "@v0.13.0:vllm/engine/arg_utils.py:727; @v0.12.0:vllm/engine/arg_utils.py:955",
           dist="vllm", commands_until="0.11.0"),
    Switch("SGLang", ("sglang",),
           "In SGLang: --attention-backend torch_native (PyTorch SDPA, from 0.4.0) or triton "
           "(from 0.3.1); for a vision encoder, --mm-attention-backend sdpa (from 0.4.7).", (),
           "sgl-project/sglang@v0.4.0:python/sglang/srt/server_args.py:602; "
           "@v0.4.7:python/sglang/srt/server_args.py:1488"),
    Switch("ms-swift", ("ms-swift", "swift sft", "swift infer", "swift rlhf", "modelscope/swift",
                        "swift/llm"),
           "In ms-swift: --attn_impl sdpa (from 3.0; before, --use_flash_attn false).", (),
           "modelscope/ms-swift@v4.5.2:swift/arguments/base_args/model_args.py:79"),
    Switch("diffusers", ("diffusers",),
           "In diffusers: pipe.transformer.set_attention_backend(\"native\") or "
           "DIFFUSERS_ATTN_BACKEND=native (PyTorch SDPA, from 0.35.0), and no "
           "enable_xformers_memory_efficient_attention().", ("export DIFFUSERS_ATTN_BACKEND=native",),
           "huggingface/diffusers@v0.35.0:src/diffusers/models/modeling_utils.py:586, "
           "src/diffusers/utils/constants.py:44"),
    Switch("ComfyUI", ("comfyui", "comfy_extras", "custom_nodes"),
           "In ComfyUI: start it with --use-pytorch-cross-attention (PyTorch SDPA), without "
           "--use-flash-attention.", (),
           "comfyanonymous/ComfyUI@005d79c828d8:comfy/cli_args.py:112-116"),
    Switch("unsloth", ("unsloth",),
           "unsloth has no switch: it takes flash-attn when importable on compute capability 8.0 "
           "or newer, else xformers, else SDPA; uninstalling flash-attn makes it fall back.",
           ("pip uninstall -y flash-attn",),
           "unslothai/unsloth@v0.1.801-beta:unsloth/utils/attention_dispatch.py:231"),
)


def named(ctx: Context) -> List[Switch]:
    """The frameworks the report names, in the order of the table."""
    return [s for s in SWITCHES if ctx.text.containing(s.words)]


def remedy(ctx: Context, why: str = "") -> Optional[Remedy]:
    """The first named framework's switch off flash-attention, citing where it is defined."""
    found = named(ctx)
    if not found:
        return None
    switch = found[0]
    commands = list(switch.commands)
    stated = ctx.package(switch.dist) if switch.dist else None
    if stated is not None and switch.commands_until:
        try:
            if Version(stated.value.split("+")[0]) > Version(switch.commands_until):
                commands = []  # that release no longer has what the command sets
        except InvalidVersion:
            pass
    return Remedy(summary=f"{why} {switch.summary} ({switch.source})".strip(),
                  commands=commands)
