#!/usr/bin/env python3
"""Record FlashAttention-4's betas from primary sources: requirements and GPU gates per beta.

Sources, per beta:
- a tag `fa4-v4.0.0.betaN` of a flash-attention clone: `flash_attn/cute/pyproject.toml`
  (requires-python, dependencies, the cu13 extra) and `flash_attn/cute/interface.py`;
- or the registry's wheel `flash_attn_4-4.0.0bN-py3-none-any.whl` (betas whose tags a clone
  lacks): its METADATA and its `flash_attn/cute/interface.py`;
- the registry's version list (`pip index versions --pre flash-attn-4`, saved to a file): a
  beta absent from it was never published under that name and is never pinned.

From interface.py only the two gate lines are kept: the first `assert arch // 10 in [...]` of
`_flash_attn_fwd` (forward) and of `_flash_attn_bwd` (backward). They are facts (which compute
capability majors each direction accepts), recorded verbatim so a test can re-derive the gates;
no other upstream text is kept.

    python tools/gen_fa4_betas.py record --clone DIR [--wheels DIR] --versions FILE
    python tools/gen_fa4_betas.py show            # the matrix entries derived from the record

`record` writes tools/fixtures/fa4_betas.json; tools/gen_matrix_fa2.py writes the matrix's
fa4_releases block from it.
"""

from __future__ import annotations

import argparse
import ast
import email.parser
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import tomllib
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tools" / "fixtures" / "fa4_betas.json"
GATE = re.compile(r"^\s*assert arch // 10 in (\[[\d, ]+\])", re.M)
TAG = re.compile(r"fa4-v4\.0\.0\.beta(\d+)")
RENAMED = Version("4.0.0b3")  # the first beta on flash-attn-4's version list; flash-attn4 before


def gate_lines(interface: str) -> Dict[str, str]:
    """The first arch assert after `def _flash_attn_fwd(` and after `def _flash_attn_bwd(`."""
    out: Dict[str, str] = {}
    for direction, name in (("forward", "_flash_attn_fwd"), ("backward", "_flash_attn_bwd")):
        start = interface.find(f"def {name}(")
        match = GATE.search(interface, start) if start >= 0 else None
        if match is None:
            raise SystemExit(f"interface.py: no arch assert in {name}")
        out[direction] = match.group(0).strip()
    return out


def majors(line: str) -> List[int]:
    match = GATE.search(line)
    assert match, line
    return [int(m) for m in ast.literal_eval(match.group(1))]


def _git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True,
                          text=True).stdout


def from_tag(clone: Path, tag: str) -> Dict[str, Any]:
    commit = _git(clone, "rev-list", "-n", "1", tag).strip()
    project = tomllib.loads(_git(clone, "show", f"{tag}:flash_attn/cute/pyproject.toml"))["project"]
    extras = project.get("optional-dependencies", {})
    return {"source": f"tag {tag} ({commit[:8]})", "requires_python": project["requires-python"],
            "dependencies": list(project["dependencies"]), "extra_cu13": list(extras.get("cu13", [])),
            "gates": gate_lines(_git(clone, "show", f"{tag}:flash_attn/cute/interface.py"))}


def from_wheel(path: Path) -> Dict[str, Any]:
    with zipfile.ZipFile(path) as wheel:
        meta_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(wheel.read(meta_name).decode())
        interface = wheel.read("flash_attn/cute/interface.py").decode()
    deps: List[str] = []
    cu13: List[str] = []
    for text in meta.get_all("Requires-Dist") or []:
        req = Requirement(text)
        if req.marker is None:
            deps.append(text)
        elif str(req.marker) == 'extra == "cu13"':
            req.marker = None
            cu13.append(str(req))
    return {"source": f"wheel {path.name} (METADATA, flash_attn/cute/interface.py)",
            "requires_python": meta["Requires-Python"], "dependencies": deps,
            "extra_cu13": cu13, "gates": gate_lines(interface)}


def record(clone: Path, wheels: Optional[Path], versions_file: Path) -> Dict[str, Any]:
    listed = re.search(r"Available versions: (.*)", versions_file.read_text(encoding="utf-8"))
    if listed is None:
        raise SystemExit(f"{versions_file}: no 'Available versions:' line")
    published = {str(Version(v.strip())) for v in listed.group(1).split(",")}
    betas: Dict[str, Any] = {}
    for tag in _git(clone, "tag", "--list", "fa4-v4.0.0.beta*").split():
        match = TAG.fullmatch(tag)
        if match:
            betas[f"4.0.0b{match[1]}"] = {"tag": tag, **from_tag(clone, tag)}
    for path in sorted(wheels.glob("flash_attn_4-4.0.0b*-py3-none-any.whl")) if wheels else []:
        version = path.name.split("-")[1]
        betas.setdefault(version, {"tag": None, **from_wheel(path)})
    for version, beta in betas.items():
        # flash-attn4 (b0-b2) is another distribution, whose list was not read: unknown (None).
        beta["published"] = version in published if Version(version) >= RENAMED else None
    order = sorted(betas, key=Version)
    return {"versions_listed": sorted(published, key=Version),
            "betas": {v: betas[v] for v in order}}


def entries(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The matrix's fa4_releases entries derived from a record."""
    out = []
    for version, beta in data["betas"].items():
        v = Version(version)
        gates = beta["gates"]
        where = (f"flash-attention flash_attn/cute/pyproject.toml and interface.py at {beta['source']}"
                 if beta["tag"] else f"the registry's {beta['source']}")
        out.append({
            "version": version, "tag": beta["tag"],
            "distribution": "flash-attn-4" if v >= RENAMED else "flash-attn4",  # §3
            "published": beta["published"],
            "requires_python": beta["requires_python"], "dependencies": beta["dependencies"],
            "extra_cu13": beta["extra_cu13"],
            "forward_cc_majors": majors(gates["forward"]),
            "backward_cc_majors": majors(gates["backward"]),
            "source": (f"{where}: _flash_attn_fwd/_flash_attn_bwd 'assert arch // 10 in [...]'; "
                       "published per the registry's version list of flash-attn-4 "
                       "(tools/gen_fa4_betas.py, tools/fixtures/fa4_betas.json)"),
        })
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--clone", type=Path, required=True)
    rec.add_argument("--wheels", type=Path)
    rec.add_argument("--versions", type=Path, required=True)
    sub.add_parser("show")
    args = parser.parse_args(argv)
    if args.cmd == "record":
        data = record(args.clone, args.wheels, args.versions)
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        RECORD.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        return 0
    print(json.dumps(entries(json.loads(RECORD.read_text(encoding="utf-8"))), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
