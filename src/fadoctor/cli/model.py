"""`fadoctor model CONFIG`: thin over read_config -> advise -> render; and the plan options that
`check --model` shares."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional

import typer

from fadoctor.cli.options import FLAG
from fadoctor.cli.output import colour, write
from fadoctor.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from fadoctor.model.spec import ModelFacts, ModelSpec, TrainingPlan

CONFIG_HELP = ("A Hugging Face config.json, a model folder holding one, or the name of a config "
               "fadoctor ships (`fadoctor model --list`). Nothing is downloaded.")
MAX_GIB = 1 << 20  # a GPU of a PiB: far above any, far below an overflow
PLAN_KEYS = ("method", "recipe", "batch", "seq", "checkpointing", "attn", "lora_r",
             "lora_targets")


class Format(str, Enum):
    text = "text"
    json = "json"


def load_spec(config: str) -> tuple[ModelSpec, str]:
    """The model at `config` (a path, or a shipped config's name) and where it was read."""
    from fadoctor.model.spec import CONFIGS, read_config, shipped, spec_from_config

    path = Path(config)
    if not path.exists() and config in shipped():
        path = CONFIGS / f"{config}.json"
    elif not path.exists():
        raise UsageError(f"no model config {config!r}: give a config.json, a model folder, or "
                         f"one of: {', '.join(shipped())}")
    name = path.parent.name if path.name == "config.json" else (
        path.name if path.is_dir() else path.stem)
    return spec_from_config(read_config(path), name), str(path)


def parse_plan(text: Optional[str]) -> TrainingPlan:
    """--model-plan "method=full,batch=4,seq=4096,checkpointing=true" into a TrainingPlan."""
    from pydantic import ValidationError

    from fadoctor.model.spec import TrainingPlan

    values: Dict[str, object] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, _, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if key not in PLAN_KEYS:
            raise UsageError(f"--model-plan {key!r}: keys are {', '.join(PLAN_KEYS)}")
        if key in values:  # "batch=1,batch=2": which one was meant is not ours to guess
            raise UsageError(f"--model-plan {key!r} is given twice")
        values[key] = tuple(value.split("+")) if key == "lora_targets" else value.strip()
    try:
        return TrainingPlan.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UsageError(f"--model-plan {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


def model_facts(config: str, plan: Optional[str]) -> ModelFacts:
    from fadoctor.model.spec import ModelFacts

    spec, source = load_spec(config)
    return ModelFacts(spec=spec, plan=parse_plan(plan), source=source)


def model(
    config: Optional[str] = typer.Argument(None, metavar="CONFIG", help=CONFIG_HELP),
    method: str = typer.Option("lora", "--method", metavar="NAME",
                               help="full, lora or qlora."),
    recipe: str = typer.Option("bf16", "--recipe", metavar="NAME",
                               help="Full fine-tuning: bf16 (weights, "
                               "gradients, AdamW states in bf16) or mixed (fp32 master weights "
                               "and states, bf16 autocast)."),
    batch: int = typer.Option(1, "--batch", metavar="N",
                              min=1, help="Micro-batch size."),
    seq: int = typer.Option(2048, "--seq", metavar="N",
                            min=1, help="Sequence length in tokens."),
    checkpointing: bool = typer.Option(False, "--checkpointing", metavar=FLAG,
                                       help="Gradient checkpointing."),
    attn: str = typer.Option("sdpa", "--attn", metavar="NAME",
                             help="flash_attention_2, sdpa or eager."),
    lora_r: int = typer.Option(16, "--lora-r", metavar="N",
                               min=1, help="LoRA rank."),
    lora_targets: List[str] = typer.Option([], "--lora-target", metavar="MODULE",
                                           help="LoRA target module "
                                           "(repeatable; default: every Linear)."),
    gpu_memory: Optional[float] = typer.Option(None, "--gpu-memory", metavar="GIB",
                                               help="GiB to plan for "
                                               "(default: the smallest GPU here)."),
    no_detect: bool = typer.Option(False, "--no-detect", metavar=FLAG,
                                   help="Examine nothing on this machine."),
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH",
                                         help="Interpreter to examine."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json."),
    list_configs: bool = typer.Option(False, "--list", metavar=FLAG,
                                      help="List the shipped configs."),
) -> int:
    """Will this model train here? Its attention needs per family and backend, and the memory."""
    from fadoctor.model.spec import shipped

    if list_configs or config is None:
        write("\n".join(shipped()) + "\n")
        return ExitCode.OK
    if gpu_memory is not None and not 0 < gpu_memory <= MAX_GIB:  # also refuses nan
        raise UsageError(f"--gpu-memory {gpu_memory}: a number of GiB above 0, at most "
                         f"{MAX_GIB}")
    spec, _ = load_spec(config)
    targets = "+".join(lora_targets) if lora_targets else "all-linear"
    plan = parse_plan(f"method={method},recipe={recipe},batch={batch},seq={seq},"
                      f"checkpointing={checkpointing},attn={attn},lora_r={lora_r},"
                      f"lora_targets={targets}")
    return _advise(spec, plan, gpu_memory, no_detect, python, fmt)


def _advise(spec: ModelSpec, plan: TrainingPlan, gpu_memory: Optional[float],
            no_detect: bool, python: Optional[str], fmt: Format) -> int:
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.install.into import UNKNOWN, installer_of
    from fadoctor.matrix import load_matrix
    from fadoctor.model.advice import advice_into, advise
    from fadoctor.model.render import render_json, render_text
    from fadoctor.model.support import here_of
    from fadoctor.safety.inert import inert

    facts = None if no_detect else Collection(CollectOptions(python=python, static=True)).facts()
    here, capacity = here_of(facts)
    if gpu_memory is not None:
        capacity = int(gpu_memory * 2**30)
    advice = inert(advise(spec, plan, load_matrix(), here, capacity))  # the config's text is data
    advice = advice_into(advice, installer_of(facts) if facts is not None else UNKNOWN)
    from fadoctor.cli.output import columns

    color = fmt == Format.text and colour(1)
    write(render_json(advice) if fmt == Format.json else render_text(advice, columns(110), color))
    fits = advice.memory.fits
    return ExitCode.PROBLEMS if fits is False else ExitCode.OK
