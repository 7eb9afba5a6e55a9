"""What `check`/`snapshot --distributed` and `--facts-dir` do before rendering: get the job's facts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet, Callable, List, Mapping, Optional

from fadoctor.distributed.models import JobFacts
from fadoctor.errors import UsageError


@dataclass(frozen=True)
class JobRequest:
    distributed: bool = False  # run as one rank of a job started by its launcher
    facts_dir: Optional[Path] = None  # the agents' folder: read it, or (--distributed) keep it
    facts_file: Optional[Path] = None  # a job facts file from `snapshot --distributed`
    python: Optional[str] = None
    timeout: Optional[float] = None


def job_facts(request: JobRequest, environ: Optional[Mapping[str, str]] = None,
              meanwhile: Callable[[], None] = lambda: None) -> Optional[JobFacts]:
    """The job's facts, with the binaries of this host's ranks analysed; None on a rank other
    than 0 of a --distributed run (rank 0 reports for the job). `meanwhile` runs while the
    ranks probe, or first when there is nothing to wait for."""
    from fadoctor.collect import resolve_target
    from fadoctor.distributed.collect import (
        analyze_local,
        read_facts_dir,
        read_job_file,
        run_agent,
    )

    env = os.environ if environ is None else environ
    if request.distributed:
        target = resolve_target(request.python, env)
        job = run_agent(target.python, request.facts_dir, request.timeout, env, meanwhile)
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


def check_conflicts(request: JobRequest, static: bool, extensions: List[Path]) -> None:
    if request.distributed and request.facts_file is not None:
        raise UsageError("--distributed probes the job's ranks; --facts reads saved facts")
    if not request.distributed and request.facts_dir is not None and request.python:
        raise UsageError("--facts-dir reads saved facts: --python applies with --distributed")
    if static or extensions:
        raise UsageError("--static and --extension do not apply to a distributed check")


def ignore_ids(keys: AbstractSet[str]) -> AbstractSet[str]:
    """--ignore keys (IDs or names, of rank checks or job checks) as check IDs."""
    from fadoctor.checks import BY_KEY
    from fadoctor.distributed.checks import JOB_BY_KEY

    return {(BY_KEY.get(k) or JOB_BY_KEY[k]).id for k in keys}
