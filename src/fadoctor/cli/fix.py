"""`fadoctor fix`: plan the exact install for this machine (or a described one), rank it by what was
observed, print it, and on request prove it (`--verify`), run it (`--apply`) or undo it."""

import os
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from fadoctor.cli.common import _collect, _write
from fadoctor.cli.guard import guarded
from fadoctor.cli.options import FLAG, _a_version
from fadoctor.errors import UsageError
from fadoctor.formats import PinFormat


class FamilyChoice(str, Enum):
    fa2 = "fa2"
    fa3 = "fa3"
    fa4 = "fa4"


@guarded
def fix(
    print_pins: bool = typer.Option(False, "--print-pins", metavar=FLAG, help="Print the "
                                    "install commands: what fix always does (it never runs "
                                    "them)."),
    keep_torch: bool = typer.Option(False, "--keep-torch", metavar=FLAG,
                                    help="Keep the installed torch."),
    torch: Optional[str] = typer.Option(None, "--torch", metavar="VERSION", help="Plan for this "
                                        "torch (2.4, 2.4.0, 2.4.0+cu121)."),
    flash_attn: Optional[str] = typer.Option(None, "--flash-attn", metavar="VERSION",
                                             help="Plan for this flash-attn 2.x version.",
                                             callback=_a_version),
    family: Optional[FamilyChoice] = typer.Option(None, "--family", help="Only this family."),
    python: Optional[str] = typer.Option(None, "--python", metavar="VERSION|PATH",
                                         help="A Python version to plan for (3.11), or the "
                                         "interpreter/environment to examine."),
    gpu_cc: Optional[str] = typer.Option(None, "--gpu-cc", metavar="CC", help="Plan for a GPU "
                                         "of this compute capability (8.0)."),
    driver: Optional[str] = typer.Option(None, "--driver", metavar="VERSION",
                                         help="Plan for this NVIDIA driver (550.54.14)."),
    glibc: Optional[str] = typer.Option(None, "--glibc", metavar="VERSION",
                                        help="Plan for this glibc (2.35)."),
    platform: Optional[str] = typer.Option(None, "--platform", metavar="TAG", help="Plan for "
                                           "this wheel platform tag (linux_x86_64)."),
    no_detect: bool = typer.Option(False, "--no-detect", metavar=FLAG, help="Take nothing from "
                                   "this machine: only the what-if options."),
    fmt: PinFormat = typer.Option(PinFormat.text, "--format", "-f", help="Output format."),
    verbose: bool = typer.Option(False, "--verbose", "-v", metavar=FLAG,
                                 help="Every rejected candidate."),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", metavar="PATH",
                                               help="Use another compatibility matrix YAML."),
    observed: List[Path] = typer.Option([], "--observed", metavar="FILE", help="Runs of real "
                                        "combinations (`fadoctor compat merge`, or reports): "
                                        "plans seen working rank first, one seen failing is "
                                        "never the best. fadoctor's own CI's are always read."),
    verify: bool = typer.Option(False, "--verify", metavar=FLAG, help="Prove the best plan in "
                                "a throwaway copy of the environment (which stays unchanged)."),
    run_it: bool = typer.Option(False, "--apply", metavar=FLAG, help="Run the plan here, confirmed."),
    yes: bool = typer.Option(False, "--yes", metavar=FLAG, help="Confirm --apply/--rollback."),
    rollback: Optional[Path] = typer.Option(None, "--rollback", metavar="FILE", help="Undo --apply."),
) -> int:
    """Plan the exact install for this machine (or a described one), and print it."""
    from fadoctor.facts.model import Family
    from fadoctor.fix.solver import Constraints, solve
    from fadoctor.install.machine import WhatIf, apply, from_facts
    from fadoctor.matrix import load_matrix

    target = python if python and (os.sep in python or Path(python).exists()) else None
    version = None if target else python
    if keep_torch and torch:
        raise UsageError("--keep-torch and --torch exclude each other")
    facts = None if no_detect else _collect(target, None, True, [])
    machine = apply(from_facts(facts), WhatIf(gpu_cc=gpu_cc, driver=driver, python=version,
                                              torch=torch, glibc=glibc, platform=platform))
    constraints = Constraints(keep_torch=keep_torch, torch=torch, flash_attn=flash_attn,
                              family=Family(family.value) if family else None)
    plan = solve(machine, constraints, load_matrix(matrix_path))
    from fadoctor.cli.verify import Actions, show_plan
    from fadoctor.compat.observed import shipped_path, with_observations
    from fadoctor.compat.records import read

    shipped = [shipped_path()] if shipped_path().is_file() else []
    plan = with_observations(plan, [r for path in (*shipped, *observed) for r in read(path)])
    return show_plan(facts, plan, lambda text: _write(Path("-"), text), fmt, verbose,
                     Actions(verify, run_it, yes, rollback))
