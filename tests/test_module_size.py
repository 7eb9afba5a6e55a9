"""No module of the package grows past 400 lines: a module that big holds more than one thing."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "fadoctor"
LIMIT = 400


def test_no_module_is_over_the_limit() -> None:
    sizes = {p.relative_to(SRC).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in SRC.rglob("*.py")}
    assert len(sizes) > 50
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}
