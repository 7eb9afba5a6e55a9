"""The bodies of `check`/`snapshot --distributed`, `--facts-dir` and `rank-script` (cli.py
registers them): get the job's facts, evaluate, render."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Callable, List, Mapping, Optional, Sequence

import typer

from fadoctor.distributed.models import JobFacts
from fadoctor.errors import ExitCode, UsageError
from fadoctor.formats import Format

if TYPE_CHECKING:
    from fadoctor.distributed.args import JobArgs, Reporting
    from fadoctor.report import Report
    from fadoctor.safety.redact import Identity


@dataclass(frozen=True)
class JobRequest:
    distributed: bool = False  # run as one rank of a job started by its launcher
    facts_dir: Optional[Path] = None  # the agents' folder: read it, or (--distributed) keep it
    facts_file: Optional[Path] = None  # a job facts file from `snapshot --distributed`
    python: Optional[str] = None
    timeout: Optional[float] = None
    kernels: Optional[str] = None  # the ranks' attention smoke tests: none, default, full


def job_facts(request: JobRequest, environ: Optional[Mapping[str, str]] = None,
              meanwhile: Callable[[], None] = lambda: None) -> Optional[JobFacts]:
    """The job's facts, with the binaries of this host's ranks analysed; None on a rank other
    than 0 of a --distributed run (rank 0 reports for the job). `meanwhile` runs while the
    ranks probe, or first when there is nothing to wait for."""
    from fadoctor.collect.target import resolve_target
    from fadoctor.distributed.collect import (
        analyze_local,
        read_facts_dir,
        read_job_file,
        run_agent,
    )

    env = os.environ if environ is None else environ
    if request.distributed:
        target = resolve_target(request.python, env)
        job = run_agent(target.python, request.facts_dir, request.timeout, env, meanwhile,
                        request.kernels)
        if job is None:
            return None
        return analyze_local(job)
    meanwhile()
    if request.facts_dir is not None:
        job = read_facts_dir(request.facts_dir)
    elif request.facts_file is not None:
        job = read_job_file(request.facts_file)
    else:
        raise UsageError("nothing to check: give --distributed, --facts-dir or --facts")
    return analyze_local(job)


def check_job(request: JobRequest, how: Reporting, emit: Callable[[str], None],
              verdict: Callable[[Report], int]) -> int:
    """The job's report on rank 0 (the other ranks print nothing), and `check`'s exit code."""
    from fadoctor.matrix import Matrix

    loaded: List[Matrix] = []

    def load() -> None:  # on rank 0, while the ranks probe
        from fadoctor.distributed import evaluate, render  # noqa: F401 (imported ahead)
        from fadoctor.matrix import load_matrix

        loaded.append(load_matrix(how.matrix_path))

    job = job_facts(request, meanwhile=load)
    if job is None:
        return ExitCode.OK
    from fadoctor.distributed.evaluate import evaluate_job
    from fadoctor.distributed.render import render_job
    from fadoctor.render.options import RenderOptions

    report = evaluate_job(job, loaded[0], left_out(how.ignore, how.only))
    if how.redact is not None:  # on the values, before a renderer shortens any: JSON stays JSON
        from fadoctor.safety.redact import redacted

        report = redacted(report, with_hosts(how.redact, job))
    to_terminal = how.output is None and sys.stdout.isatty()
    color = to_terminal and how.fmt == Format.TEXT and "NO_COLOR" not in os.environ
    width = typer.get_terminal_size()[0] if to_terminal else 100
    emit(render_job(report, how.fmt, RenderOptions(verbose=how.verbose, width=width,
                                                   color=color)))
    return verdict(report.merged)


def snapshot_job(request: JobRequest, emit: Callable[[str], None],
                 redact: Optional[Identity] = None) -> int:
    """`snapshot --distributed` / `--facts-dir`: the job's facts, written by rank 0."""
    job = job_facts(request)
    if job is not None:
        from fadoctor.facts.files import dumps
        from fadoctor.safety.redact import redacted

        emit(dumps(redacted(job, with_hosts(redact, job)) if redact is not None else job))
    return ExitCode.OK


def with_hosts(identity: Identity, job: JobFacts) -> Identity:
    """`identity` with the job's host names too (every rank's, and MASTER_ADDR where it is a
    name): rank 0's machine is not the only one a job's report names."""
    from dataclasses import replace

    places = [r.place for r in job.ranks] + [m.place for m in job.missing if m.place]
    hosts = {p.host for p in places} | {p.master_addr for p in places
                                        if p.master_addr and any(c.isalpha() for c in p.master_addr)}
    return replace(identity, hosts=tuple(sorted(set(identity.hosts) | hosts)))


def request_of(args: JobArgs) -> JobRequest:
    """The request from the command's options, refusing the ones a job cannot take."""
    if args.compile_ or args.model:
        raise UsageError("--compile and --model apply to one environment, not to a job")
    request = JobRequest(args.distributed, args.facts_dir, args.facts_file, args.python,
                         args.timeout, args.kernels.value if args.kernels else None)
    check_conflicts(request, args.static, args.extension)
    return request


def check_conflicts(request: JobRequest, static: bool, extensions: Sequence[Path]) -> None:
    if request.distributed and request.facts_file is not None:
        raise UsageError("--distributed probes the job's ranks; --facts reads saved facts")
    if not request.distributed and request.facts_dir is not None and request.python:
        raise UsageError("--facts-dir reads saved facts: --python applies with --distributed")
    if static or extensions:
        raise UsageError("--static and --extension do not apply to a distributed check")
    if request.facts_dir is not None and request.facts_file is not None:
        raise UsageError("--facts-dir and --facts each name the job's saved facts: give one")
    if not request.distributed and (request.kernels or request.timeout):
        raise UsageError("--kernels and --timeout apply when probing (--distributed), not to "
                         "saved facts")


def left_out(ignore: Sequence[str], only: Sequence[str]) -> AbstractSet[str]:
    """The IDs of the checks to leave out: --ignore's, and with --only every other one (keys
    are IDs or names, of rank checks or job checks)."""
    from fadoctor.distributed.checks import EVERY_CHECK, EVERY_KEY

    for key in (*ignore, *only):
        if key not in EVERY_KEY:
            option = "--ignore" if key in ignore else "--only"
            raise UsageError(f"{option} {key}: no such check (see `fadoctor explain`)")
    selected = {EVERY_KEY[k].id for k in only}
    both = sorted(selected & {EVERY_KEY[k].id for k in ignore})
    if both:
        raise UsageError(f"--only and --ignore both name {', '.join(both)}: say which")
    return {EVERY_KEY[k].id for k in ignore} | {c.id for c in EVERY_CHECK
                                                if selected and c.id not in selected}
