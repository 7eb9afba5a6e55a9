"""The distributed check's I/O: run the rank agent as this rank, read what the agents wrote, and
analyse the binaries of the ranks whose files lie on this host."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Dict, List, Mapping, Optional

from pydantic import ValidationError

from fadoctor.distributed.args import AGENT
from fadoctor.distributed.assemble import (
    consistent,
    job_from_gather,
    job_from_records,
    rank_facts,
)
from fadoctor.distributed.models import JobFacts
from fadoctor.errors import InputError, InternalError, UsageError, invalid
from fadoctor.facts.files import identity, parse, unreadable
from fadoctor.facts.model import Facts, Failure, FailureKind, Probe
from fadoctor.facts.validation import problems
from fadoctor.in_target import place
from fadoctor.in_target.place import MAX_WORLD
from fadoctor.safety.inert import one_line
from fadoctor.safety.textfile import read_text, shown

GATHERED = "gathered.json"
AGENT_GRACE = 20.0  # seconds an interrupted agent has to write what it has
RECORD_LIMIT = 256 << 20  # rank 0's gathered file: ~100 kB a rank, for a large job


def read_facts_dir(folder: Path) -> JobFacts:
    """The job from a folder the rank agents wrote: rank 0's gathered.json, else each rank's file."""
    if not folder.is_dir():
        raise InputError(f"--facts-dir {shown(folder)}: no such folder")
    gathered = folder / GATHERED
    if gathered.exists():
        job = job_from_gather(_load(gathered), shown(gathered))
        return consistent(with_own_records(job, folder), shown(gathered))
    records = sorted(folder.glob("rank-*.json"))
    if not records:
        raise InputError(f"{folder} holds neither {GATHERED} nor rank-*.json (the rank agent "
                         "writes them: see `fadoctor rank-script`)")
    if len(records) > MAX_WORLD:
        raise InputError(f"{shown(folder)} holds {len(records)} rank records: more than "
                         f"{MAX_WORLD} ranks")
    return consistent(job_from_records([_load(p) for p in records], shown(folder)), shown(folder))


def with_own_records(job: JobFacts, folder: Path) -> JobFacts:
    """The ranks rank 0 gave up on whose own record is in the folder (a shared folder: the rank
    finished, but could not reach rank 0 in time), added to the job; still named as missing."""
    found = []
    for gone in job.missing:
        path = folder / f"rank-{gone.rank:05d}.json"
        if path.exists():
            found.append(rank_facts(_load(path), shown(path)))
    if not found:
        return job
    recovered = {r.place.rank for r in found}
    missing = [m.model_copy(update={"record_in_folder": True}) if m.rank in recovered else m
               for m in job.missing]
    ranks = sorted([*job.ranks, *found], key=lambda r: r.place.rank)
    return job.model_copy(update={"ranks": ranks, "missing": missing})


def _load(path: Path) -> Dict[str, Any]:
    """A rank's record or rank 0's gathered file: a regular file, capped, parsed as JSON."""
    where = shown(path)
    data = parse(read_text(path, "rank record", RECORD_LIMIT), where)
    if not isinstance(data, dict):
        raise InputError(f"{where} is not a JSON object")
    return data


def read_job_file(path: Path) -> JobFacts:
    """A job's facts file (`snapshot --distributed`), read and checked as a facts file is."""
    where = f"facts file {shown(path)}"
    raw = parse(read_text(path, "facts file"), where)
    try:
        job = JobFacts.model_validate(raw)
    except ValidationError as exc:
        raise invalid(where, problems(exc)) from None
    bad = [f"ranks.{r.place.rank}.facts.{p}" for r in job.ranks for p in unreadable(r.facts)]
    if bad:
        raise invalid(where, bad)
    return consistent(job, where)


def run_agent(python: str, out: Optional[Path], timeout: Optional[float],
              environ: Mapping[str, str], meanwhile: Callable[[], None] = lambda: None,
              kernels: Optional[str] = None) -> Optional[JobFacts]:
    """Run the rank agent in the target interpreter as this rank (the launcher's variables are
    inherited); on rank 0, the job's facts; on the other ranks, None. `meanwhile` runs while
    the agent works (rank 0 loads what it will report with)."""
    try:
        where = place.identity(dict(environ))
    except place.LaunchError as exc:
        raise UsageError(f"--distributed: {one_line(str(exc))}") from None
    _resolvable(where["master_addr"])
    if out is not None and out.exists() and not out.is_dir():
        raise UsageError(f"--facts-dir {shown(out)}: exists and is not a folder")
    folder = out or Path(tempfile.mkdtemp(prefix="fadoctor-ranks-"))
    # The agent ends when fadoctor does, even by SIGKILL, and then removes a temporary folder.
    command = [python, "-B", str(AGENT), "--out", str(folder), "--parent", str(os.getpid())]
    if out is None:
        command.append("--discard-out")
    if timeout:
        command += ["--timeout", str(timeout)]
    if kernels:
        command += ["--kernels", kernels]
    try:
        status = _run_forwarding_sigterm(command, environ, meanwhile if where["rank"] == 0
                                         else lambda: None)
        if where["rank"] != 0:
            return None
        if not (folder / GATHERED).is_file():
            raise InternalError(f"the rank agent wrote no {GATHERED} (exit status {status})")
        return read_facts_dir(folder)
    finally:
        if out is None:
            shutil.rmtree(folder, ignore_errors=True)


def _resolvable(address: str) -> None:
    """MASTER_ADDR must name a host: one that does not resolve fails now, not after the store's
    wait on every rank."""
    try:
        socket.getaddrinfo(address, None)
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"--distributed: MASTER_ADDR={one_line(address)!r} does not resolve: "
                         f"{one_line(str(exc))}") from None


def _run_forwarding_sigterm(command: List[str], environ: Mapping[str, str],
                            meanwhile: Callable[[], None]) -> int:
    """Run the agent; a launcher's SIGTERM goes on to it, so that rank 0 writes what it has."""
    proc = subprocess.Popen(command, env=dict(environ), stdin=subprocess.DEVNULL)

    def forward(signum: int, frame: Optional[FrameType]) -> None:
        proc.send_signal(signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        meanwhile()
        return proc.wait()
    except BaseException:  # Ctrl-C, SIGHUP (fadoctor's guard): the agent stops before we go,
        _stop(proc)  # so that it neither outlives fadoctor nor writes into a removed folder
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the agent writes what it has and leaves), then SIGKILL if it lingers."""
    for sig, grace in ((signal.SIGTERM, AGENT_GRACE), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        with contextlib.suppress(OSError):
            proc.send_signal(sig)
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:  # a second Ctrl-C: no more grace
            continue


def analyze_local(job: JobFacts) -> JobFacts:
    """Each rank's facts with the static analysis of its binaries, where they lie on this host;
    elsewhere the analysis is skipped, with the host that holds them."""
    from fadoctor.probes.binaries import analyze_binaries

    here = socket.gethostname()
    done: Dict[str, Facts] = {}
    ranks = []
    for rank in job.ranks:
        facts = rank.facts
        if facts.binaries is None and rank.place.host == here:
            key = identity(facts)
            if key not in done:
                host = facts.host.data
                done[key] = analyze_binaries(facts, [], (host.environment or {}) if host else {})
            facts = facts.model_copy(update={"binaries": done[key].binaries})
        elif facts.binaries is None:
            facts = facts.model_copy(update={"binaries": Probe.failed(Failure(
                kind=FailureKind.SKIPPED,
                reason=f"the files are on {rank.place.host}: the static analysis reads them "
                       "where they lie (run `fadoctor check` there)"))})
        ranks.append(rank.model_copy(update={"facts": facts}))
    return job.model_copy(update={"ranks": ranks})
