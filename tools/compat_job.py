"""One job of the compatibility CI: a fresh virtualenv with one combination (Python, torch,
a flash-attention family or none, extra packages), installed the way fadoctor's own plan says
where it can plan it, then `fadoctor check --format json` on it (and `fadoctor bench` on a GPU
runner) and its record.

    python tools/compat_job.py --torch 2.13.0 [--variant cpu] [--family fa4 --version 4.0.0b36]
        [--extra torchvision==0.29.1] [--no-deps-extra] [--static] --runner LABEL --out DIR

The record (`fadoctor compat record`) and the report land in DIR, named after the combination;
`fadoctor compat merge DIR/*.record.json -o compatibility.json` merges a matrix of them. fadoctor
runs from the interpreter that runs this script, never inside the examined virtualenv.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import List, Optional

FAMILY_DISTRIBUTION = {"fa2": "flash-attn", "fa3": "flash-attn-3", "fa4": "flash-attn-4"}


def fadoctor(*args: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, "-m", "fadoctor", *args], capture_output=True,
                          text=True, check=False)


def planned(python: str, torch: str, variant: Optional[str], family: Optional[str],
            version: Optional[str]) -> Optional[List[str]]:
    """The commands of fadoctor's best plan for this torch and family on this machine, when it
    plans exactly this combination (None: it plans another one, or none)."""
    if family is None:
        return None
    if variant:
        torch = f"{torch}+{variant}"
    run = fadoctor("fix", "--python", python, "--torch", torch, "--family", family, "-f", "json")
    if run.returncode != 0:
        return None
    best = json.loads(run.stdout).get("best") or {}
    chosen = str(best.get("torch") or "")
    same = chosen == torch if "+" in torch else chosen.split("+")[0] == torch
    if best.get("family") != family or best.get("version") != version or not same:
        return None
    return [c for c in best.get("commands", [])]


def bench(python: str, path: Path) -> List[str]:
    """`fadoctor bench` on a GPU runner, kept beside the report: the record's --bench option, or
    nothing when it gave no report (no GPU after all, every target failed to start)."""
    run = fadoctor("bench", "--python", python, "--format", "json")
    if not run.stdout.lstrip().startswith("{"):
        return []
    path.write_text(run.stdout)
    return ["--bench", str(path)]


def install(python: str, args: argparse.Namespace) -> List[List[str]]:
    """The pip commands run in the virtualenv, in order."""
    pip = [python, "-m", "pip", "install", "--quiet", "--no-cache-dir"]
    index = []
    if args.variant:  # PyTorch's own index of that variant, as fadoctor's remedies name it
        from fadoctor.install.torch import TORCH_INDEX

        index = ["--index-url", TORCH_INDEX.format(variant=args.variant)]
    torch = [*pip, f"torch=={args.torch}", *index]
    steps = [torch]
    if args.family:
        dist = FAMILY_DISTRIBUTION[args.family]
        steps.append([*pip, f"{dist}=={args.version}", *(["--no-deps"] if args.no_deps_family else [])])
    for extra in args.extra:
        steps.append([*pip, extra, *(["--no-deps"] if args.no_deps_extra else [])])
    return steps


def slug(args: argparse.Namespace) -> str:
    parts = [f"py{sys.version_info[0]}{sys.version_info[1]}", f"torch{args.torch}",
             f"{args.family}{args.version}" if args.family else "none", *args.extra, args.runner]
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", "-".join(parts))


def arguments() -> argparse.ArgumentParser:
    """The options the compat-matrix workflow passes (tests hold its step against them)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", required=True)
    parser.add_argument("--variant", help="torch's CUDA variant (cpu, cu128): PyTorch's index")
    parser.add_argument("--family", choices=sorted(FAMILY_DISTRIBUTION))
    parser.add_argument("--version")
    parser.add_argument("--no-deps-family", action="store_true")
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--no-deps-extra", action="store_true")
    parser.add_argument("--static", action="store_true", help="no GPU here: read files only")
    parser.add_argument("--kernels", default="default")
    parser.add_argument("--runner", required=True)
    parser.add_argument("--out", type=Path, required=True)
    return parser


def main() -> int:
    parser = arguments()
    args = parser.parse_args()
    if args.family and not args.version:
        parser.error("--family needs --version")
    args.out.mkdir(parents=True, exist_ok=True)
    name = slug(args)
    with tempfile.TemporaryDirectory() as tmp:
        venv.EnvBuilder(with_pip=True).create(tmp)
        python = str(Path(tmp) / "bin" / "python")
        steps = install(python, args)
        commands = planned(python, args.torch, args.variant, args.family, args.version)
        log = {"combination": name, "plan": commands, "steps": [" ".join(s) for s in steps]}
        env = {**os.environ, "VIRTUAL_ENV": tmp,
               "PATH": f"{Path(tmp) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
        if commands:  # fadoctor's plan: its commands, in the virtualenv (its pip first on PATH)
            extras = steps[len(steps) - len(args.extra):] if args.extra else []
            steps = [["bash", "-c", c] for c in commands] + extras
            log["steps"] = [" ".join(s) for s in steps]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False, env=env)
            if done.returncode != 0:  # an install that fails is a result too: the check says why
                log.setdefault("install_errors", []).append(done.stderr[-2000:])
        how = ["--static"] if args.static else ["--kernels", args.kernels]
        report = args.out / f"{name}.report.json"
        fadoctor("check", "--python", python, *how, "--format", "json", "-o", str(report))
        timed = [] if args.static else bench(python, args.out / f"{name}.bench.json")
        rec = fadoctor("compat", "record", str(report), "--runner", args.runner,
                       *(f"--extra={e}" for e in args.extra), *timed,
                       "-o", str(args.out / f"{name}.record.json"))
        log["record"] = rec.returncode
        (args.out / f"{name}.log.json").write_text(json.dumps(log, indent=2) + "\n")
    print(name, "recorded" if rec.returncode == 0 else f"not recorded: {rec.stderr.strip()}")
    return rec.returncode


if __name__ == "__main__":
    raise SystemExit(main())
