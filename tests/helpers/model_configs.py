"""Model configs for the tests: those fadoctor ships, and the GPU-measurement fixtures it does not
ship because no primary source for their values was found (tests/fixtures/model_configs)."""

from __future__ import annotations

from pathlib import Path

from fadoctor.model.spec import CONFIGS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "model_configs"


def config_file(name: str) -> Path:
    shipped = CONFIGS / f"{name}.json"
    return shipped if shipped.exists() else FIXTURES / f"{name}.json"
