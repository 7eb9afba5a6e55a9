"""Gathering every rank's record to rank 0 over the job's c10d store, with deadlines.

Standard library only (torch is imported inside functions), Python 3.8 syntax: the rank agent
runs it in the target interpreter. The transport is torch.distributed's own TCPStore — the store
the launcher's rendezvous created (torchrun's agent store) or, without one, the store rank 0 hosts,
as `env://` does — never NCCL, so the records arrive when NCCL is what is broken. Each rank
announces itself, beats a counter while it works and finally sets its record; rank 0 polls, and
gives up on a rank that never announced itself (`wait`), that stopped beating (`stale`: killed,
or its machine gone) or that outlived the whole `deadline` — each reported by rank number.
"""

import json
import threading
import time
from typing import Any, Callable, Dict, List, Optional

POLL = 0.25  # seconds between rank 0's looks at the store
BEAT = 1.0  # seconds between a rank's heartbeats


class Channel:
    """This rank's connection to the job's store, under the run's prefix; usable from threads."""

    def __init__(self, store: Any, prefix: str, rank: int) -> None:
        self._store = store
        self._prefix = prefix
        self._rank = rank
        self._lock = threading.Lock()

    @classmethod
    def connect(cls, spec: Dict[str, Any], timeout: float) -> "Channel":
        """A client of the launcher's store, or its host on rank 0 when the launcher has none."""
        import datetime

        import torch.distributed as dist

        # The rule of torch.distributed's env:// rendezvous: torchrun's agent hosts the store
        # when TORCHELASTIC_USE_AGENT_STORE is "True"; otherwise rank 0 does.
        host_it = spec["rank"] == 0 and not spec["agent_store"]
        store = dist.TCPStore(spec["master_addr"], int(spec["master_port"]), None, host_it,
                              datetime.timedelta(seconds=timeout), wait_for_workers=False)
        return cls(store, spec["prefix"], spec["rank"])

    def _key(self, kind: str, rank: Optional[int] = None) -> str:
        return "%s%s/%d" % (self._prefix, kind, self._rank if rank is None else rank)

    def announce(self, identity: Dict[str, Any]) -> None:
        with self._lock:
            self._store.set(self._key("arrived"), json.dumps(identity))
            self._store.add(self._key("beat"), 1)

    def beat(self) -> None:
        with self._lock:
            self._store.add(self._key("beat"), 1)

    def deliver(self, record: Dict[str, Any]) -> None:
        with self._lock:
            self._store.set(self._key("record"), json.dumps(record, default=str))

    def has(self, kind: str, rank: int) -> bool:
        with self._lock:
            return bool(self._store.check([self._key(kind, rank)]))

    def read(self, kind: str, rank: int) -> Any:
        with self._lock:
            return json.loads(self._store.get(self._key(kind, rank)).decode("utf-8"))

    def beats(self, rank: int) -> int:
        with self._lock:  # add(key, 0) reads a counter without blocking on a missing key
            return int(self._store.add(self._key("beat", rank), 0))

    def absent(self, kind: str, ranks: List[int]) -> List[int]:
        """The ranks that never set `kind` (a collective phase, for instance)."""
        return [r for r in ranks if not self.has(kind, r)]


class Heartbeat:
    """Beats this rank's counter every BEAT seconds until stopped: a silent rank is a lost one."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(BEAT):
            try:
                self._channel.beat()
            except Exception:  # the store is gone: rank 0 will hear the silence
                return

    def stop(self) -> None:
        self._stop.set()


class Limits:
    """Seconds, counted from rank 0's start (except `stale`)."""

    def __init__(self, wait: float, stale: float, deadline: float) -> None:
        self.wait = wait  # for a rank to announce itself
        self.stale = stale  # of silence from a rank that announced itself
        self.deadline = deadline  # for every rank's record


class Gathering:
    """Rank 0's view of the gather: the records so far and the ranks given up on."""

    def __init__(self, world_size: int, own: Dict[str, Any], started: float) -> None:
        self.world_size = world_size
        self.records: Dict[int, Dict[str, Any]] = {0: own}
        self.missing: Dict[int, Dict[str, Any]] = {}
        self._heard: Dict[int, List[float]] = {}  # rank -> [beats, when they changed]
        self.started = started  # when rank 0 started: the limits count from there

    def pending(self) -> List[int]:
        return [r for r in range(self.world_size) if r not in self.records and r not in self.missing]

    def look(self, channel: Channel, rank: int, limits: Limits) -> None:
        """One look at `rank`: take its record, note its heartbeat, or give up on it."""
        now = time.monotonic()
        if channel.has("record", rank):
            self.records[rank] = channel.read("record", rank)
            return
        beats = channel.beats(rank)
        heard = self._heard.setdefault(rank, [0, self.started])
        if beats != heard[0]:
            heard[0], heard[1] = beats, now
        if beats == 0 and now - self.started > limits.wait:
            self.give_up(channel, rank, "never_arrived")
        elif beats and now - heard[1] > limits.stale:
            self.give_up(channel, rank, "lost")
        elif now - self.started > limits.deadline:
            self.give_up(channel, rank, "deadline")

    def give_up(self, channel: Optional[Channel], rank: int, state: str) -> None:
        now = time.monotonic()
        heard = self._heard.get(rank)
        identity = None
        if channel is not None:
            try:
                identity = channel.read("arrived", rank) if channel.has("arrived", rank) else None
            except Exception:
                identity = None
        self.missing[rank] = {
            "rank": rank, "state": state, "identity": identity,
            "silent_s": round(now - heard[1], 3) if heard and heard[0] else None,
            "waited_s": round(now - self.started, 3)}

    def result(self, interrupted: Optional[str], gathering_since: float) -> Dict[str, Any]:
        now = time.monotonic()
        return {"ranks": [self.records[r] for r in sorted(self.records)],
                "missing": [self.missing[r] for r in sorted(self.missing)],
                "interrupted": interrupted,
                "seconds": round(now - self.started, 3),  # rank 0's whole run
                "gather_seconds": round(now - gathering_since, 3)}  # after its own record


def gather(channel: Optional[Channel], gathering: Gathering, limits: Limits,
           stopped: Callable[[], bool]) -> Optional[str]:
    """Rank 0: collect every other rank's record until each arrived or was given up on.

    Returns why it stopped early ("SIGTERM", a store error), or None."""
    if channel is None:  # stopped while still joining the store, or the store was unreachable
        state = "interrupted" if stopped() else "no_store"
        for rank in gathering.pending():
            gathering.give_up(None, rank, state)
        return "SIGTERM" if state == "interrupted" else None
    while gathering.pending():
        if stopped():
            for rank in gathering.pending():
                gathering.give_up(channel, rank, "interrupted")
            return "SIGTERM"
        try:
            for rank in gathering.pending():
                gathering.look(channel, rank, limits)
        except Exception as exc:  # the store itself failed: report what we have
            for rank in gathering.pending():
                gathering.give_up(None, rank, "no_store")
            return "the store failed: %s: %s" % (type(exc).__name__, exc)
        time.sleep(POLL)
    return None
