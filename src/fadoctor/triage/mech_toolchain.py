"""Triage by the toolchain's catalogued messages (tools/build_sources.py: the build frontends,
nvcc, ptxas, gcc, ninja, CUDA's host-compiler gates, the dynamic loader): each line's message is
its own cause where no hand-written mechanism reads it, else it corroborates that finding (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage import toolchain_remedies as tr
from fadoctor.triage.catalog_data import TOOLCHAIN, Entry, entries, first_hit
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, WRAPPED, Signal, dedupe


def _toolchain_hits(ctx: Context) -> List[Tuple[int, Entry, Dict[str, str]]]:
    """Each line's toolchain message: a build log shows several (nvcc's killed cicc, then ninja's
    stop, then pip's summary), each its own cause or corroboration. On one line the longest
    match wins, then the printed form with more literal text (uv's hint gained backticks)."""
    best: Dict[int, Tuple[Tuple[int, int], Entry, Dict[str, str]]] = {}
    for entry in (e for e in entries() if e.source in TOOLCHAIN):
        hit = first_hit(ctx, entry)
        if hit is None:
            continue
        key = (len(hit[1].group(0)), len(entry.printed))
        if hit[0] not in best or key > best[hit[0]][0]:
            best[hit[0]] = key, entry, {k: v for k, v in hit[1].groupdict().items() if v}
    return [(index, entry, values) for index, (_, entry, values) in sorted(best.items())]


def toolchain(ctx: Context) -> List[Signal]:
    """The build frontends', compilers' and loader's catalogued messages the report prints: NAMED
    where no hand-written mechanism reads one, else WRAPPED until `fold` joins it to the hand
    mechanism's finding on the same line or cause."""
    out = []
    for index, entry, values in _toolchain_hits(ctx):
        stated = "".join(f", {name} = {values[name]}" for name, _ in entry.captures if name in values)
        out.append(Signal("catalog", entry.category,
                          f"{entry.printed_label} ({entry.location}, printed by {entry.first}.."
                          f"{entry.last}{stated})", [ctx.quote(index)],
                          NAMED if entry.weight == "named" else WRAPPED,
                          tr.for_entry(ctx, entry, values),
                          details={"catalog": entry.id, "source": entry.location,
                                   "weight": entry.weight, "toolchain": True,
                                   "captures": {n: values[n] for n, _ in entry.captures
                                                if n in values}}))
    return out


_BUILD = (Category.BUILD_ISOLATION, Category.BUILD_RESOURCES, Category.BUILD_TOOLCHAIN)
# A build step's summary (pip's failed step, ninja's stop): the cause is printed above it.
_SUMMARIES = ("pip-", "ninja-")


def _hand(extra: Signal, signals: List[Signal]) -> Tuple[Optional[Signal], bool]:
    """The finding a toolchain entry corroborates, and whether it reaches the same cause: a hand
    finding quoting its line (for entries a hand mechanism reads), else one of its category; a
    build step's summary with neither joins the build cause beside it (a hand one named, or
    another catalogued message)."""
    hands = [s for s in signals if s is not extra and s.mechanism != "catalog"]
    lines = {q.line for q in extra.quotes}
    corroborates = extra.details["weight"] == "corroborate"
    same = next((s for s in hands if corroborates and lines & {q.line for q in s.quotes}), None) \
        or next((s for s in hands if s.category == extra.category
                 and s.strength >= extra.strength), None)
    if same is not None or not str(extra.details["catalog"]).startswith(_SUMMARIES):
        return same, True
    beside = max((s for s in signals if s is not extra and s.category in _BUILD
                  and not str(s.details.get("catalog", "")).startswith(_SUMMARIES)
                  and (s.strength >= NAMED - 10 or s.mechanism == "catalog")),
                 key=lambda s: s.strength, default=None)
    return beside, False


def _words(text: str) -> Set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _said(advice: Remedy, have: List[Remedy]) -> bool:
    """Whether a remedy already says this advice with a name put in ("install the release of
    the package built for this torch" said of auto-gptq by name)."""
    words = _words(advice.summary)
    return any(len(words & _words(h.summary)) >= 0.6 * len(words | _words(h.summary))
               for h in have)  # Jaccard: the same sentence with one name changed


def fold(signals: List[Signal]) -> List[Signal]:
    """A toolchain entry corroborates the hand-written finding `_hand` picks: that finding keeps
    its rank and first remedies, and gains the citation, the quote and, for the same cause, any
    remedy it lacks. One no hand mechanism reached stays a finding of its own."""
    for extra in [s for s in signals if s.details.get("toolchain")]:
        hand, same_cause = _hand(extra, signals)
        if hand is None:
            continue
        hand.details["catalogued"] = f"{extra.details['catalog']} ({extra.details['source']})"
        hand.quotes = dedupe([*hand.quotes, *extra.quotes])
        have = {c for rem in hand.remedies for c in rem.commands}
        hand.remedies += [rem for rem in extra.remedies  # advice without commands adds too,
                          if same_cause and (not set(rem.commands) <= have if rem.commands
                                             else not _said(rem, hand.remedies))]
        signals.remove(extra)
    return signals
