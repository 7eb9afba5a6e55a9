"""`fix --verify`: the best plan proven in a throwaway copy of the examined environment."""

from __future__ import annotations

import sys
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


def show_plan(facts: Optional[Facts], plan: Plan, write: Callable[[str], None], fmt: PinFormat,
              verbose: bool, verify: bool) -> int:
    """Print the plan, its commands run by the examined interpreter; with --verify, prove it."""
    from fadoctor.fix.render import render_plan
    from fadoctor.install.into import UNKNOWN, installer_of
    from fadoctor.safety.inert import visible

    installer = installer_of(facts) if facts is not None else UNKNOWN
    write(visible(render_plan(plan, fmt, verbose, installer)))  # a GPU's name is the target's
    if not verify:
        return ExitCode.OK
    if facts is None:
        raise UsageError("--verify needs the environment itself: drop --no-detect")
    return verify_plan(facts, plan, installer)


def verify_plan(facts: Facts, plan: Plan, installer: Installer) -> int:
    from fadoctor.evaluate import evaluate
    from fadoctor.fix.render import plan_into
    from fadoctor.fix.verify import render_verified, verify
    from fadoctor.matrix import load_matrix
    from fadoctor.safety.inert import visible

    before = evaluate(facts, load_matrix())
    done = verify(installer.python, installer,
                  lambda mine: plan_into(plan, mine).best.commands, check_copy, before)
    sys.stdout.write(visible(render_verified(done)))
    return ExitCode.OK if done.proven else ExitCode.PROBLEMS
