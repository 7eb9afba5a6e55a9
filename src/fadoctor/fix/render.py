"""Plans as text, shell commands (pip or uv), a requirements file, or JSON (pure)."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from typing import Any, Dict, List

from packaging.version import Version

from fadoctor.fix.solver import Pick, Plan
from fadoctor.formats import PinFormat
from fadoctor.install.into import UNKNOWN, commands_into
from fadoctor.install.torch import torch_index
from fadoctor.safety.shell import Installer

__all__ = ["PinFormat", "render_plan"]


def render_plan(plan: Plan, fmt: PinFormat, verbose: bool = False,
                installer: Installer = UNKNOWN) -> str:
    """The plan in `fmt`; its commands run `installer` (the examined interpreter's pip, or uv's
    with `--python` where it has no pip, or `--format uv` asks for uv)."""
    if fmt == PinFormat.uv:
        installer = replace(installer, pip=False)
    if fmt != PinFormat.requirements:
        plan = plan_into(plan, installer)
    return {
        PinFormat.text: _text, PinFormat.pip: _pip, PinFormat.uv: _pip,
        PinFormat.requirements: _requirements, PinFormat.json: _json,
    }[fmt](plan, verbose)


def plan_into(plan: Plan, installer: Installer) -> Plan:
    """The plan with every pick's commands run by `installer` (safety.shell.into)."""
    def pick(p: Pick) -> Pick:
        return replace(p, commands=tuple(commands_into(p.commands, installer)))
    return replace(plan, best=pick(plan.best), alternatives=tuple(pick(p)
                                                                  for p in plan.alternatives))


def _machine(plan: Plan) -> str:
    m = plan.machine
    gpu = f"{m.gpu_name} " if m.gpu_name else "a GPU "
    absent = "no" if m.detected else "unknown"  # detected absent, or not known at all
    parts = [f"{gpu}(sm_{m.gpu_cc.major}{m.gpu_cc.minor})" if m.gpu_cc else f"{absent} GPU",
             f"driver {m.driver}" if m.driver else f"{absent} driver",
             f"Python {m.python}" if m.python else "Python unknown",
             f"glibc {m.glibc}" if m.glibc else "glibc unknown", m.platform]
    if m.torch:
        parts.append(f"torch {m.torch} installed")
    return ", ".join(parts)


def _warnings(plan: Plan) -> List[str]:
    """Said before the plan: a plan for a GPU this machine does not have, a torch downgrade."""
    m, out = plan.machine, []
    if m.gpu_cc is None:
        where = "this machine has no NVIDIA GPU" if m.detected else "the GPU is unknown"
        out.append(f"note: {where}: the plan is for any GPU flash-attention supports, unproven "
                   "here. For another machine: --gpu-cc CC (and --driver, --python, --glibc).")
    torch = plan.best.torch
    if m.torch is not None and torch is not None and not torch.installed and \
            torch.version < Version(m.torch.base_version):
        out.append(f"note: the best plan DOWNGRADES torch {m.torch} to {torch}; --torch VERSION "
                   "plans for the torch you want instead.")
    return out


def _pick_lines(pick: Pick, indent: str) -> List[str]:
    lines = [f"{indent}[{pick.provenance}]"]
    lines += [f"{indent}{cmd}" for cmd in pick.commands] or [f"{indent}(nothing to install)"]
    lines += [f"{indent}# {note}" for note in pick.notes]
    return lines


def _text(plan: Plan, verbose: bool) -> str:
    out = [f"fadoctor fix: for {_machine(plan)}", *_warnings(plan), "",
           f"Best: {plan.best.summary}",
           *_pick_lines(plan.best, "    ")]
    if plan.alternatives:
        out += ["", "Alternatives:"]
        for pick in plan.alternatives:
            out += [f"  - {pick.summary}", *_pick_lines(pick, "      ")]
    if plan.rejected:
        shown = plan.rejected if verbose else plan.rejected[:8]
        out += ["", "Rejected:"] + [f"  - {why}" for why in shown]
        if len(shown) < len(plan.rejected):
            out.append(f"  ... {len(plan.rejected) - len(shown)} more (-v)")
    out += ["", "fadoctor prints these commands; it runs none of them."]
    return "\n".join(out) + "\n"


def _head(plan: Plan) -> List[str]:
    """What a script or requirements file keeps of the text plan's cautions, as comments: no GPU
    here, a downgrade, each value the plan assumed."""
    cautions = [w.removeprefix("note: ") for w in _warnings(plan)]
    return [f"# {plan.best.summary} [{plan.best.provenance}]", *(f"# {line}" for line in cautions),
            *(f"# {note}" for note in plan.best.notes if note.startswith("ASSUMED:"))]


def _pip(plan: Plan, verbose: bool) -> str:
    return "\n".join([*_head(plan), *plan.best.commands]) + "\n"


def _requirements(plan: Plan, verbose: bool) -> str:
    best = plan.best
    lines = _head(plan)
    torch = best.torch
    if torch is not None and not torch.installed:
        lines += [f"--extra-index-url {torch_index(torch.variant)}",
                  f"torch=={torch.version}+{torch.variant}"]
    if best.wheel is not None:
        lines += [f"flash-attn @ {best.wheel.url}", "einops"]
    elif best.kind == "wheel" and best.url:  # a community file: its distribution by its name
        name = best.url.rsplit("/", 1)[-1].split("-")[0].replace("_", "-")
        lines += [f"{name} @ {best.url}"] + (["einops"] if name == "flash-attn" else [])
    elif best.kind == "hub" or best.kind == "index":
        lines += [" ".join(shlex.split(c)[2:]) for c in best.commands
                  if c.startswith("pip install") and "torch==" not in c]
    elif best.kind == "build":
        lines += [f"# compiled, not installable from a requirements file: {c}"
                  for c in best.commands if "torch==" not in c]
    return "\n".join(lines) + "\n"


def _pick_dict(pick: Pick) -> Dict[str, Any]:
    return {
        "family": pick.family.value if pick.family else "sdpa", "kind": pick.kind,
        "summary": pick.summary, "version": pick.version,
        "torch": f"{pick.torch.version}+{pick.torch.variant}" if pick.torch else None,
        "wheel": pick.wheel.filename if pick.wheel else None,
        "url": pick.url,
        "provenance": {"tier": pick.provenance.tier, "source": pick.provenance.source,
                       "label": pick.provenance.label,
                       "third_party": pick.provenance.third_party,
                       "downloads_at_load": pick.provenance.downloads_at_load},
        "commands": list(pick.commands), "notes": list(pick.notes),
        "evidence": pick.evidence,
    }


def _json(plan: Plan, verbose: bool) -> str:
    m = plan.machine
    return json.dumps({
        "machine": {"gpu": m.gpu_name, "compute_capability": str(m.gpu_cc) if m.gpu_cc else None,
                    "driver": str(m.driver) if m.driver else None,
                    "python": str(m.python) if m.python else None,
                    "glibc": str(m.glibc) if m.glibc else None, "platform": m.platform,
                    "torch": str(m.torch) if m.torch else None},
        "best": _pick_dict(plan.best),
        "alternatives": [_pick_dict(p) for p in plan.alternatives],
        "rejected": list(plan.rejected),
    }, indent=2) + "\n"
