"""The needle index finds exactly the lines a scan finds, the catalog's word filter only drops
lines its pattern cannot match, and triage says the same whatever the interpreter's hash seed."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fadoctor.matrix import load_matrix
from fadoctor.triage.catalog_data import entries
from fadoctor.triage.context import Context
from fadoctor.triage.diagnose import triage
from fadoctor.triage.needles import BLOCK, NeedleIndex
from fadoctor.triage.observed import Observed
from fadoctor.triage.text import Pasted, _holding, _offsets, split

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Words and the characters between them that real needles hold: a prefix of one word, a suffix
# of another, punctuation, an underscore, a digit, a non-ASCII letter.
PIECES = st.sampled_from(["torch", "cuda", "flash_attn", "sm_80", "12.1", ".so", "error", "err",
                          "or", "_", " ", ": ", "'", "-", "(", ")", "=", "é", "ß", "0", "x"])
CONTENT = st.lists(st.lists(PIECES, max_size=12).map("".join), min_size=1, max_size=40)
FILLER = [f"step {i} loss 0.{i % 97}" for i in range(20 * BLOCK)]  # words no needle holds


def _scan(lines: list, needle: str) -> list:
    return [i for i, line in enumerate(lines) if needle in line]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONTENT, st.data())
def test_the_index_finds_what_a_scan_finds(content: list, data: st.DataObject) -> None:
    """Lines of words and punctuation scattered through a long log, needles cut anywhere out of
    them (mid-word, across punctuation) and needles they lack: where the index answers, it
    answers what a scan of every line answers."""
    lines = list(FILLER)
    for line in content:
        lines.insert(data.draw(st.integers(0, len(lines))), line)
    text = "\n".join(lines)
    index = NeedleIndex(text, _offsets(lines))
    for _ in range(12):
        line = data.draw(st.sampled_from(content))
        start = data.draw(st.integers(0, len(line)))
        needle = line[start:data.draw(st.integers(start, len(line)))] or \
            data.draw(st.lists(PIECES, min_size=1, max_size=4).map("".join))
        found = index.holding(needle)
        if found is not None:
            assert found == _scan(lines, needle), needle
        assert _holding(text, _offsets(lines), lines, needle) == _scan(lines, needle), needle


def test_a_rare_needle_in_a_long_log_is_answered_by_the_index() -> None:
    """The index narrows: a needle in a few lines of thousands is found without a whole scan, and
    a line-long needle too."""
    lines = [f"step {i}: loss {i * 0.001:.3f} lr 0.0001" for i in range(5000)]
    lines[4321] = "ImportError: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    index = NeedleIndex("\n".join(lines), _offsets(lines))
    assert index.holding("undefined symbol") == [4321]
    assert index.holding("ymbol: _zn3") == []  # the case is the caller's (lower-cased text)
    assert index.holding("ymbol: _ZN3") == [4321]
    assert index.holding("cuda9setdevice") == []
    assert index.holding("no such line") == []
    assert index.holding("loss") is None  # in every block: the caller scans


def test_triages_own_needles_on_a_real_log_are_answered_by_the_index(monkeypatch) -> None:
    """Every needle triage asks of a log of real report lines: the index answers nearly all of
    them (a needle in most of the log is scanned for), each exactly as a scan does."""
    rng = random.Random(5)
    lines = sorted({ln for p in FIXTURES.glob("*/*/report.txt")
                    for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()})
    asked = set()  # each needle, whether its lines are all asked for or only up to a first
    hits, scan = Pasted._hits, Pasted._scan
    monkeypatch.setattr(Pasted, "_hits", lambda self, n: asked.add(n) or hits(self, n))
    monkeypatch.setattr(Pasted, "_scan", lambda self, n: asked.add(n) or scan(self, n))
    log = "\n".join(rng.choice(lines) for _ in range(6000))
    triage(log, load_matrix(None))
    joined, starts, distinct, _ = split(log)._distinct
    index = NeedleIndex(joined, starts)
    answered = [n for n in asked if n and index.holding(n) is not None]
    for n in asked - {""}:
        assert list(index.scan(n)) == _scan(list(distinct), n), n
    for n in answered:
        assert index.holding(n) == _scan(list(distinct), n), n
    assert len(asked) > 500 and len(answered) > 0.8 * len(asked)


def test_the_long_text_answers_as_lines_do() -> None:
    """Through Pasted: the same lines, a repeated line at each of its places."""
    log = "\n".join(["epoch 1", "RuntimeError: CUDA error: no kernel image", "epoch 2"] * 300)
    pasted = split(log)
    assert pasted.containing(("no kernel image",)) == list(range(1, 900, 3))
    assert pasted.containing(("cuda error", "epoch 2")) == sorted(
        [*range(1, 900, 3), *range(2, 900, 3)])


def _filled(printed: str) -> str:
    return re.sub(r"\{\w+\}", "121", printed)


def test_every_word_the_catalog_requires_is_required() -> None:
    """Each entry's words are in its printed form, and taking any one of them out of the printed
    form leaves a line the pattern no longer matches: the filter drops only lines the pattern
    would drop."""
    checked = 0
    for entry in entries():
        line = _filled(entry.printed)
        assert entry.pattern.search(line), entry.id
        for word in entry.words:
            assert word in line.lower(), (entry.id, word)
            spots = [m.start() for m in re.finditer(re.escape(word), line, re.I)]
            for at in spots:
                without = line[:at] + line[at + len(word):]
                if len(spots) == 1:
                    assert not entry.pattern.search(without), (entry.id, word)
            checked += 1
    assert checked > 2000  # the generated patterns give most entries many words


def test_words_in_an_optional_group_or_before_a_quantifier_are_not_required() -> None:
    """torch's "CUDA error: " preface is optional, and the stop a retyped message leaves off:
    neither word is asked of a line."""
    by_id = {e.id: e for e in entries()}
    preface = next(e for e in by_id.values() if e.pattern.pattern.startswith(r"(?:CUDA\s{1,4}"))
    assert "error:" not in preface.words
    assert preface.pattern.search(_filled(preface.printed).replace("CUDA error: ", ""))
    stop = next(e for e in by_id.values() if e.printed.endswith("or newer.")
                and e.source == "fa-csrc")
    assert "newer." not in stop.words and stop.needle != "newer."
    assert stop.pattern.search(_filled(stop.printed)[:-1])


_DUMP = ("import json, sys; from pathlib import Path; from fadoctor.matrix import load_matrix; "
         "from fadoctor.triage.diagnose import triage; m = load_matrix(None); "
         "print(json.dumps([triage(Path(p).read_bytes(), m).model_dump_json() "
         "for p in sys.argv[1:]]))")


def test_triage_says_the_same_under_any_hash_seed(tmp_path: Path) -> None:
    """A report naming two GPUs of one compute capability, and a long log naming many: the
    findings come in the same order in interpreters whose string hashes differ (a set's order
    once decided which GPU came first)."""
    rng = random.Random(3)
    lines = sorted({ln for p in FIXTURES.glob("*/*/report.txt")
                    for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()})
    log = tmp_path / "log.txt"
    log.write_text("\n".join(rng.choice(lines) for _ in range(3000)), encoding="utf-8")
    two = FIXTURES / "reports" / "flashvsr36-block-sparse-attn-turing" / "report.txt"
    outputs = set()
    for seed in ("1", "4", "7", "10"):
        done = subprocess.run([sys.executable, "-c", _DUMP, str(two), str(log)],
                              capture_output=True, text=True, check=True, timeout=300,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert "2080" in json.loads(outputs.pop())[0]


def _ctx(text: str) -> Context:
    return Context(split(text), Observed(), load_matrix(None))


def test_first_answers_as_find_s_first_on_a_real_log_for_every_catalog_entry() -> None:
    """`Context.first` searches distinct lines in the order they first occur and stops at the
    first match: for every catalogued pattern on a log of real lines, repeated and re-cased, it
    answers what the full `find` answers first."""
    rng = random.Random(11)
    lines = sorted({ln for p in FIXTURES.glob("*/*/report.txt")
                    for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()})
    picked = [rng.choice(lines) for _ in range(3000)]
    # the same line again later, and again in another case (one distinct line, two texts)
    log = picked + rng.sample(picked, 500) + [ln.upper() for ln in rng.sample(picked, 300)]
    ctx, again = _ctx("\n".join(log)), _ctx("\n".join(log))
    matched = 0
    for entry in entries():
        first = ctx.first(entry.pattern, (entry.needle,), entry.words)
        full = next(again.find(entry.pattern, (entry.needle,), entry.words), None)
        assert (first and (first[0], first[1].span())) == (full and (full[0], full[1].span()))
        matched += first is not None
    assert matched > 20  # enough of them print on this log to tell


def test_first_takes_the_earliest_text_of_a_line_written_in_two_cases() -> None:
    """A case-sensitive pattern that only the later spelling of a line matches: the line it
    matches is found, and no later one."""
    text = "\n".join(["noise", "cuda error: x", "more", "CUDA error: x", "CUDA error: y"])
    found = _ctx(text).first(re.compile(r"CUDA error: (\w)"), ("cuda error",))
    assert found is not None and found[0] == 3 and found[1].group(1) == "x"
    assert _ctx(text).has("cuda error") == _ctx(text).text.quote(1)
