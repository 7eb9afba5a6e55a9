"""FAD107 on two family distributions whose RECORDs own the same files (flash-attn 2.x ships
flash_attn/cute/ at flash-attn-4's paths): the target side finds the shared files in real
dist-info folders, and the check names both owners."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from types import ModuleType

from fadoctor.checks import BY_KEY
from fadoctor.in_target.distributions import _shared
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Severity

SHARED = "flash_attn/cute/interface.py"


def _install(site: Path, name: str, version: str, *files: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                                   encoding="utf-8")
    record = [f"{f},," for f in (*files, f"{info.name}/METADATA", f"{info.name}/RECORD")]
    (info / "RECORD").write_text("\n".join(record) + "\n", encoding="utf-8")
    for f in files:
        (site / f).parent.mkdir(parents=True, exist_ok=True)
        (site / f).write_text("# a file\n", encoding="utf-8")


def test_the_target_side_finds_files_two_records_own(tmp_path: Path) -> None:
    _install(tmp_path, "flash-attn", "2.8.3.post2", "flash_attn/__init__.py", SHARED)
    _install(tmp_path, "flash-attn-4", "4.0.0b36", SHARED, "flash_attn/cute/flash_fwd.py")
    dists = [(d.metadata["Name"], d) for d in metadata.distributions(path=[str(tmp_path)])]
    shared = {name: _shared(dists)[id(d)] for name, d in dists}
    assert shared == {"flash-attn": [SHARED], "flash-attn-4": [SHARED]}


def test_fad107_names_both_owners(build: ModuleType, matrix: Matrix) -> None:
    site = "/opt/venv/lib/python3.12/site-packages"
    fa2 = build.dist("flash-attn", "2.8.3.post2", site).model_copy(update={"shared_files": [SHARED]})
    fa4 = build.dist("flash-attn-4", "4.0.0b36", site).model_copy(update={"shared_files": [SHARED]})
    devices = [build.gpu("NVIDIA H100 80GB HBM3", "9.0")]
    facts = build.facts(build.host("3.12.3"),
                        packages=build.packages(build.dist("torch", "2.8.0+cu128", site), fa2, fa4),
                        driver=build.driver("580.82.07", "13.0", devices),
                        torch=build.torch("2.8.0+cu128", "12.8", "9.0", devices, site=site))
    outcome = BY_KEY["FAD107"].run(facts, matrix)
    assert isinstance(outcome, list)
    [found] = outcome
    assert found.severity == Severity.WARNING and found.category == Category.VERSION_CONFLICT
    assert "flash-attn 2.8.3.post2 and flash-attn-4 4.0.0b36 own the same files" in found.message
    assert found.evidence["shared_files"] == [SHARED]
