"""The torch each release of a package with compiled torch extensions requires (vLLM, xformers,
torchvision, torchaudio, ...), read from the package index's metadata of every release (pip's
resolver report: `pip install --dry-run --no-deps --ignore-installed --report`, which reads a
wheel's METADATA without installing it). Writes data/ext_torch.yaml: package -> release -> the
torch requirement its metadata states, and torch release -> the triton its metadata requires.
Run where pip reaches the package index:

    python tools/gen_ext_torch.py [PACKAGE...] [--jobs N] [--triton-only]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

OUT = Path(__file__).resolve().parents[1] / "data" / "ext_torch.yaml"
PACKAGES = ("vllm", "xformers", "torchvision", "torchaudio", "mamba-ssm", "causal-conv1d",
            "sgl-kernel", "flashinfer-python", "bitsandbytes", "deepspeed")
# the platform whose wheels are read (the one flash-attention users run)
PLATFORM = ("--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
            "--platform", "manylinux2014_x86_64", "--platform", "manylinux1_x86_64",
            "--platform", "linux_x86_64", "--only-binary=:all:")
# the Pythons whose wheels are read, first match wins: a release's listing and its wheels depend
# on the target Python (xformers 0.0.17-0.0.19 published cp38-cp310 wheels only, so a listing for
# the interpreter running this script, 3.11, leaves them out)
PYTHONS = ("3.10", "3.12", "3.9", "3.8")


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def versions(package: str) -> List[str]:
    listed = set()
    for python in PYTHONS:
        out = _pip("index", "versions", package, *PLATFORM, "--python-version", python).stdout
        found = re.search(r"Available versions:\s*(.+)", out)
        listed |= {v.strip() for v in found.group(1).split(",")} if found else set()
    good = []
    for v in listed:
        try:
            if not Version(v).is_prerelease:
                good.append(v)
        except InvalidVersion:
            continue
    return sorted(good, key=Version)


def torch_requirement(package: str, version: str, dependency: str = "torch") -> Optional[str]:
    """The `dependency` requirement (torch, or torch's own triton) of one release's wheel
    metadata ('' when it names none; None when no wheel for the platform was found)."""
    data = next((d for d in (_report(package, version, python) for python in PYTHONS)
                 if d is not None), None)
    if data is None:
        return None
    for item in data.get("install", []):
        for text in item.get("metadata", {}).get("requires_dist", []) or []:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.name == dependency and (req.marker is None or "extra" not in str(req.marker)):
                return str(req.specifier)
    return ""


def _report(package: str, version: str, python: str) -> Optional[Dict[str, Any]]:
    """pip's resolver report for one release's wheel on the platform and this Python."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        done = _pip("install", "--dry-run", "--no-deps", "--ignore-installed", "--quiet",
                    *PLATFORM, "--python-version", python, "--target", tmp, "--report",
                    str(report), f"{package}=={version}")
        if done.returncode != 0 or not report.is_file():
            return None
        loaded: Dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return loaded


def generate(packages: List[str], jobs: int) -> Dict[str, Dict[str, str]]:
    table: Dict[str, Dict[str, str]] = {}
    for package in packages:
        listed = versions(package)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            found = list(pool.map(torch_requirement, [package] * len(listed), listed))
        table[package] = {v: r for v, r in zip(listed, found) if r}
    return table


def triton_pins(jobs: int) -> Dict[str, str]:
    """The Triton each torch release's Linux wheel requires (torch 2.0 on): Inductor and the
    Triton kernels torch ships are written against that Triton."""
    listed = [v for v in versions("torch") if Version(v) >= Version("2.0")]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        found = list(pool.map(torch_requirement, ["torch"] * len(listed), listed,
                              ["triton"] * len(listed)))
    return {v: r for v, r in zip(listed, found) if r}


def main(argv: List[str]) -> int:
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 8
    names = [a for a in argv if not a.startswith("--") and not a.isdigit()] or list(PACKAGES)
    if "--triton-only" in argv:  # refresh torch's triton pins, keep the packages' table
        data = yaml.safe_load(OUT.read_text(encoding="utf-8"))
        data["torch_triton"] = triton_pins(jobs)
    else:
        data = {"source": "the package index's wheel metadata of every release, "
                          "manylinux x86_64 / CPython 3.10 (else 3.12, 3.9, 3.8) (tools/gen_ext_torch.py)",
                "packages": generate(names, jobs), "torch_triton": triton_pins(jobs)}
    OUT.write_text("# generated by tools/gen_ext_torch.py: do not edit\n"
                   + yaml.safe_dump(data, sort_keys=False, width=200), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
