"""Measure the static prediction on real wheels against the real loader and `ldd -r`.

    python benchmarks/static_agreement.py WHEEL... [--json FILE]

Each wheel is unpacked alone into a temporary site folder on PYTHONPATH, beside the interpreter's
own torch. fadoctor's static analysis (`check --static`'s collection) predicts, for every compiled
file there that links torch, whether it loads after `import torch`, and the loader's first error.
Two oracles:

- the real loader: a fresh child of the same interpreter runs `import torch`, then
  `ctypes.CDLL(path)` (RTLD_NOW, as an extension's import): it loads, or the error it prints;
- `ldd -r` with torch's lib/ on LD_LIBRARY_PATH: every undefined symbol of every object the file
  loads, against the loader model run with the same LD_LIBRARY_PATH and nothing preloaded
  (Py*/_Py* left out: the interpreter defines them, ldd runs none).

A row agrees on the outcome when prediction and real load both load or both fail, on the message
when the first error is the same text, with ldd when the (object, symbol) sets match, and on
versions when the (object, symbol, version) sets do too.
"""

from __future__ import annotations

import argparse
import ctypes  # noqa: F401 -- the child's code below is run by the same interpreter
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from fadoctor.collect.run import collect
from fadoctor.collect.target import CollectOptions
from fadoctor.probes.loader import LoaderContext, analyze

REAL_LOAD = """
import ctypes, sys
import torch
try:
    ctypes.CDLL(sys.argv[1])
    print("LOADS")
except OSError as exc:
    print(str(exc).replace("\\n", " "))
"""
_LDD = re.compile(r"^undefined symbol: (\S+?)(?:, version (\S+))?\t\((.*)\)$")
Triple = Tuple[str, str, Optional[str]]


def real_load(path: str, env: Dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", REAL_LOAD, path], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    lines = done.stdout.strip().splitlines()
    return lines[-1] if done.returncode == 0 and lines else f"child died: {done.stderr.strip()[-300:]}"


def ldd_missing(path: str, lib: str) -> Set[Triple]:
    env = {**os.environ, "LD_LIBRARY_PATH": lib}
    done = subprocess.run(["ldd", "-r", path], capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    found: Set[Triple] = set()
    for line in (done.stdout + done.stderr).splitlines():
        match = _LDD.match(line)
        if match and not match.group(1).startswith(("Py", "_Py")):
            found.add((os.path.realpath(match.group(3)), match.group(1), match.group(2)))
    return found


def model_missing(path: str, lib: str) -> Set[Triple]:
    # getattr: the same measure runs against a fadoctor from before `needed_by`, for a before/after.
    analysis = analyze(path, LoaderContext(ld_library_path=lib))
    return {(os.path.realpath(getattr(s, "needed_by", None) or path), s.name, s.version)
            for s in analysis.missing_symbols}


def measure(wheel: Path, torch_lib: str) -> List[Dict[str, object]]:
    rows: List[Dict[str, object]] = []
    with tempfile.TemporaryDirectory() as site:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
        env = {**os.environ, "PYTHONPATH": site}
        facts = collect(CollectOptions(python=sys.executable, environ=env, static=True))
        found = facts.binaries.data if facts.binaries and facts.binaries.data is not None else []
        for binary in found:
            if not binary.file.path.startswith(site):
                continue
            predicted = binary.first_failure.message if binary.first_failure else "LOADS"
            if binary.error is not None:
                predicted = f"unreadable: {binary.error}"
            real = real_load(binary.file.path, env)
            ldd, ours = ldd_missing(binary.file.path, torch_lib), model_missing(binary.file.path, torch_lib)
            rows.append({
                "wheel": wheel.name, "file": os.path.relpath(binary.file.path, site),
                "predicted": predicted.replace(site, "<site>"), "real": real.replace(site, "<site>"),
                "outcome_agrees": (predicted == "LOADS") == (real == "LOADS"),
                "message_agrees": predicted == real,
                "symbols_counted": binary.missing_symbol_count,
                "ldd_missing": len(ldd), "model_missing": len(ours),
                "ldd_agrees": {t[:2] for t in ldd} == {t[:2] for t in ours}, "versions_agree": ldd == ours,
                "ldd_only": sorted(f"{os.path.basename(o)}:{n}" for o, n, _ in ldd - ours)[:5],
                "model_only": sorted(f"{os.path.basename(o)}:{n}" for o, n, _ in ours - ldd)[:5]})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args()
    import torch

    torch_lib = str(Path(torch.__file__).parent / "lib")
    rows = [row for wheel in args.wheels for row in measure(wheel, torch_lib)]
    for row in rows:
        marks = "".join("." if row[k] else "x" for k in ("outcome_agrees", "message_agrees", "ldd_agrees"))
        print(f"{marks} {row['wheel']} {row['file']}: predicted {row['predicted']!r}; real {row['real']!r}"
              f"; ldd {row['ldd_missing']} / model {row['model_missing']}")
    for key in ("outcome_agrees", "message_agrees", "ldd_agrees", "versions_agree"):
        print(f"{key}: {sum(1 for r in rows if r[key])} of {len(rows)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
