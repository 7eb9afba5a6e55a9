"""nvidia-cutlass-dsl, the CuTe DSL flash-attn-4 runs on: which `cutlass.*` modules each release's
wheels hold (module names only), recorded from the wheels, and the catalog's import messages for
the modules that come and go between releases, each with the DSL releases that provide it.

Record (DIR holds one folder per DSL release, named by its version, with that release's wheels:
`pip download nvidia-cutlass-dsl==V --no-deps`, plus the nvidia-cutlass-dsl-libs-base and
-libs-core wheels of the same version that its METADATA requires, where it requires them):
    python tools/cutlass_dsl_sources.py record DIR
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Set

import yaml
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import message_extract as ex

RECORD = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "cutlass_dsl_excerpts.yaml"
DIST = "nvidia-cutlass-dsl"
# A module file inside a DSL wheel (python_packages/ up to 4.5, dsl_packages/ from 4.6).
MODULE = re.compile(r"(?:^|/)(cutlass/[\w/]+?)(?:/__init__)?\.(?:py|cpython[^/]*\.so)$")
# The packages flash_attn/cute imports from (the fa4-import entries): their direct children that
# some DSL releases lack are what a DSL older or newer than flash-attn-4's pin misses.
PARENTS = ("cutlass.utils", "cutlass.cute", "cutlass.cute.nvgpu", "cutlass.pipeline",
           "cutlass.base_dsl", "cutlass.cutlass_dsl")


def modules(wheels: List[Path]) -> Set[str]:
    """The cutlass.* module names one release's wheels hold (MLIR's generated bindings left
    out)."""
    found: Set[str] = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                match = MODULE.search(name)
                if match and not match.group(1).startswith("cutlass/_mlir/"):
                    found.add(match.group(1).replace("/", "."))
    return found


def read(root: Path) -> Dict[str, object]:
    """versions (oldest first) and, per module, the runs of versions whose wheels hold it."""
    versions = sorted((d.name for d in root.iterdir() if d.is_dir()), key=Version)
    held: Dict[str, List[int]] = {}
    for index, version in enumerate(versions):
        for module in modules(sorted((root / version).glob("*.whl"))):
            held.setdefault(module, []).append(index)
    return {"dist": DIST, "versions": versions,
            "modules": {m: ex.tag_runs(i) for m, i in sorted(held.items())}}


def load(path: Path = RECORD) -> Dict[str, object]:
    if not path.is_file():
        return {}
    loaded: Dict[str, object] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def providers(recorded: Dict[str, object]) -> Dict[str, List[str]]:
    """module -> the DSL releases whose wheels hold it, oldest first."""
    versions = [str(v) for v in recorded.get("versions", [])]  # type: ignore[attr-defined]
    held = recorded.get("modules", {})
    return {m: ex.tags_in_runs(versions, runs) for m, runs in held.items()}  # type: ignore[attr-defined]


def _varying(recorded: Dict[str, object]) -> Dict[str, List[str]]:
    every = len(recorded.get("versions", []))  # type: ignore[arg-type]
    return {m: have for m, have in providers(recorded).items()
            if len(have) < every and m.rsplit(".", 1)[0] in PARENTS
            and not m.rsplit(".", 1)[1].startswith("_")}


def entries(recorded: Dict[str, object], pattern: object,
            catalogued: Set[str]) -> List[Dict[str, object]]:
    """One entry per varying module no other source catalogues: Python's message when it is
    missing, the DSL releases whose wheels hold it as its range."""
    out: List[Dict[str, object]] = []
    spans = sorted(_varying(recorded).items(), key=lambda s: (Version(s[1][0]), s[0]))
    for number, (module, have) in enumerate(spans, 1):
        printed = f"No module named '{module}'"
        if printed in catalogued:
            continue
        out.append({
            "id": f"cutlass-dsl-{number:03d}", "printed": printed,
            "pattern": pattern(printed),  # type: ignore[operator]
            "location": f"{DIST}=={have[0]}:{module.replace('.', '/')}",
            "first": have[0], "last": have[-1], "mechanism": "import_missing",
            "category": "version_conflict", "dsl_versions": " ".join(have),
            "remedy": "install the nvidia-cutlass-dsl release flash-attn-4's pyproject.toml "
                      "pins that holds this module"})
    return out


def annotate(catalog: List[Dict[str, object]], recorded: Dict[str, object]) -> None:
    """Give each catalogued `No module named 'cutlass...'` the DSL releases that provide it."""
    held = providers(recorded)
    for entry in catalog:
        found = re.fullmatch(r"No module named '(cutlass[\w.]*)'", str(entry["printed"]))
        if found and found.group(1) in held and "dsl_versions" not in entry:
            entry["dsl_versions"] = " ".join(held[found.group(1)])  # one line: 29 releases


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("root", type=Path, help="one folder of wheels per DSL release")
    args = parser.parse_args(argv)
    RECORD.write_text(yaml.safe_dump(read(args.root), width=200), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
