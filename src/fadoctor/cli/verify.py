"""`fix --verify`: the best plan proven in a throwaway copy of the examined environment."""

from __future__ import annotations

import sys

from fadoctor.errors import ExitCode
from fadoctor.facts.model import Facts
from fadoctor.fix.solver import Plan
from fadoctor.report import Report
from fadoctor.safety.shell import Installer


def check_copy(python: str) -> Report:
    """The checks of `fadoctor check` on the copy's interpreter."""
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.evaluate import evaluate
    from fadoctor.matrix import load_matrix

    return evaluate(Collection(CollectOptions(python=python)).facts(), load_matrix())


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
