"""`fix --verify`: the best plan proven in a throwaway copy of the examined environment."""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from fadoctor.errors import ExitCode, UsageError

if TYPE_CHECKING:  # cli modules import what is heavy inside the command only
    from fadoctor.facts.model import Facts
    from fadoctor.fix.solver import Plan
    from fadoctor.formats import PinFormat
    from fadoctor.report import Report
    from fadoctor.safety.shell import Installer


def check_copy(python: str) -> Report:
    """The checks of `fadoctor check` on the copy's interpreter."""
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.evaluate import evaluate
    from fadoctor.matrix import load_matrix

    return evaluate(Collection(CollectOptions(python=python)).facts(), load_matrix())


@dataclass(frozen=True)
class Actions:
    """What `fix` does beyond printing: prove the plan, apply it, or roll an apply back."""

    verify: bool = False
    apply: bool = False
    yes: bool = False
    rollback: Optional[Path] = None


def _say(message: str) -> None:
    print(f"fadoctor fix: {message}", file=sys.stderr)


def _confirmed(what: str, yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"{what} changes the environment: confirm with --yes")
    return input(f"{what}: change the environment? [y/N] ").strip().lower() in ("y", "yes")


def show_plan(facts: Optional[Facts], plan: Plan, write: Callable[[str], None], fmt: PinFormat,
              verbose: bool, actions: Actions) -> int:
    """Print the plan, its commands run by the examined interpreter; then prove it (--verify),
    run it here (--apply, rollback file first), or undo an apply (--rollback FILE)."""
    from fadoctor.fix.apply import apply_plan, rollback_to
    from fadoctor.fix.render import plan_into, render_plan
    from fadoctor.install.into import UNKNOWN, installer_of
    from fadoctor.safety.inert import visible

    if actions.rollback is not None:
        if not _confirmed(f"roll back to {actions.rollback}", actions.yes):
            return ExitCode.OK
        ran = rollback_to(actions.rollback, _say)
        return ExitCode.OK if all(r.returncode == 0 for r in ran) else ExitCode.PROBLEMS
    installer = installer_of(facts) if facts is not None else UNKNOWN
    write(visible(render_plan(plan, fmt, verbose, installer)))  # a GPU's name is the target's
    if not (actions.verify or actions.apply):
        return ExitCode.OK
    if facts is None or not installer.known:
        raise UsageError("--verify and --apply need the environment itself: drop --no-detect")
    installer = dataclasses.replace(installer, shell="posix")  # fadoctor runs these itself
    if actions.verify:
        code = verify_plan(plan, installer)
        if code != ExitCode.OK or not actions.apply:
            return code
    if not actions.apply:
        return ExitCode.OK
    if not _confirmed(f"apply: {plan.best.summary}", actions.yes):
        return ExitCode.OK
    stamp = time.strftime("%Y%m%d-%H%M%S")
    ran = apply_plan(plan_into(plan, installer).best.commands, installer,
                     Path(f"fadoctor-rollback-{stamp}.json"), _say)
    return ExitCode.OK if all(r.returncode == 0 for r in ran) else ExitCode.PROBLEMS


def verify_plan(plan: Plan, installer: Installer) -> int:
    from fadoctor.fix.render import plan_into
    from fadoctor.fix.verify import render_verified, verify
    from fadoctor.safety.inert import visible

    # The target checked as the copy will be: `fix`'s own facts are static (torch read from its
    # files), and held against a full check of the copy they showed torch as moved and the
    # findings only a full check makes as new.
    before = check_copy(installer.python)
    done = verify(installer.python, installer,
                  lambda mine: plan_into(plan, mine).best.commands, check_copy, before)
    sys.stdout.write(visible(render_verified(done)))
    return ExitCode.OK if done.proven else ExitCode.PROBLEMS
