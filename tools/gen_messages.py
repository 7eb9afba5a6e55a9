"""Generate data/messages.yaml: the environment-relevant TORCH_CHECKs of flash-attn's C++ API
(csrc/flash_attn/fmha_api.cpp in 0.x-1.x, flash_api.cpp from 2.0) at every release tag of the
upstream repository, each with the form torch prints, where it lives, the releases that print it,
its category and the fix. Run: python tools/gen_messages.py GIT_DIR [--excerpts OUT.yaml]

Only checks about the environment are kept (GPU arch, dtype, head dim, build features); shape and
stride checks are the caller's bugs. A condition-only TORCH_CHECK(cond) prints
`Expected <cond> to be true, but got false` (c10's TORCH_CHECK without a message)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import yaml

FILES = ("csrc/flash_attn/flash_api.cpp", "csrc/flash_attn/fmha_api.cpp")
CHECK = re.compile(r'TORCH_CHECK\((?P<cond>[^;"]{1,200}?)(?:,\s*"(?P<msg>[^"]{1,200})")?\);')
TAG = re.compile(r"^v\d+\.\d+\.\d+(?:\.post\d+)?$")
# Which checks are about the environment, and what they mean: (test on the text, category).
KINDS: Tuple[Tuple[str, str], ...] = (
    (r"head ?dim|headdim|head_size", "head_dim_unsupported"),
    (r"is_sm\d|Ampere|Hopper|compute capability|GPUs? or newer", "gpu_unsupported"),
    (r"dtype == torch::k(?:Float16|BFloat16)|fp16 and bf16|bf16", "dtype_unsupported"),
)
REMEDY = {"gpu_unsupported": "use SDPA (attn_implementation='sdpa') or eager on this GPU, or the "
                             "flash-attn generation that supports its architecture",
          "head_dim_unsupported": "a head dim this GPU supports, flash-attn >= 2.5.5 for head dim "
                                  "256 backward on consumer GPUs, or SDPA",
          "dtype_unsupported": "run attention in fp16 or bf16 (torch_dtype=torch.bfloat16)"}


def kind(text: str) -> Optional[str]:
    for pattern, category in KINDS:
        if re.search(pattern, text):
            return category
    return None


def checks(source: str) -> Iterable[Tuple[int, str]]:
    """(line, printed form) of each environment-relevant check in one file's text."""
    for number, line in enumerate(source.splitlines(), 1):
        for m in CHECK.finditer(line):
            cond, msg = " ".join(m["cond"].split()), m["msg"]
            if "sizes()" in cond or "stride" in cond:
                continue
            printed = msg if msg else f"Expected {cond} to be true, but got false"
            if kind(printed if msg else cond) is not None:
                yield number, printed


def pattern(printed: str) -> str:
    """A bounded regex for the printed form: literal text, runs of spaces flexible."""
    return r"\s{1,4}".join(re.escape(word) for word in printed.split())


def excerpts(git_dir: str) -> Dict[str, List[Tuple[str, int, str]]]:
    """tag -> (path, line, printed) from the upstream repository."""
    tags = subprocess.run(["git", "-C", git_dir, "tag"], capture_output=True, text=True,
                          check=True).stdout.split()
    out: Dict[str, List[Tuple[str, int, str]]] = {}
    for tag in sorted((t for t in tags if TAG.match(t)), key=_order):
        for path in FILES:
            shown = subprocess.run(["git", "-C", git_dir, "show", f"{tag}:{path}"],
                                   capture_output=True, text=True)
            if shown.returncode == 0:
                out.setdefault(tag, []).extend((path, n, p) for n, p in checks(shown.stdout))
    return out


def _order(tag: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag))


def catalog(found: Dict[str, List[Tuple[str, int, str]]]) -> List[Dict[str, object]]:
    entries: Dict[str, Dict[str, object]] = {}
    for tag in sorted(found, key=_order):
        for path, line, printed in found[tag]:
            entry = entries.setdefault(printed, {
                "id": f"fa-csrc-{len(entries) + 1:03d}", "printed": printed,
                "pattern": pattern(printed), "location": f"Dao-AILab/flash-attention@{tag}:"
                                                         f"{path}:{line}",
                "first": tag, "last": tag, "mechanism": "flash_api_check",
                "category": kind(printed), "remedy": REMEDY[str(kind(printed))]})
            entry["last"] = tag
    return list(entries.values())


def write_excerpts(found: Dict[str, List[Tuple[str, int, str]]], path: Path) -> None:
    """The extracted checks only (never the source files), each distinct set once."""
    versions: List[List[List[object]]] = []
    tags: Dict[str, int] = {}
    for tag, rows in found.items():
        listed = [list(row) for row in rows]
        if listed not in versions:
            versions.append(listed)
        tags[tag] = versions.index(listed)
    path.write_text(yaml.safe_dump({"versions": versions, "tags": tags}, width=200),
                    encoding="utf-8")


def read_excerpts(path: Path) -> Dict[str, List[Tuple[str, int, str]]]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {tag: [(str(a), int(b), str(c)) for a, b, c in loaded["versions"][index]]
            for tag, index in loaded["tags"].items()}


def render(found: Dict[str, List[Tuple[str, int, str]]]) -> str:
    header = ("# Generated by tools/gen_messages.py from flash-attn's C++ API at every release "
              "tag; do not edit.\n")
    return header + yaml.safe_dump({"messages": catalog(found)}, sort_keys=False)


def main(argv: List[str]) -> None:
    root = Path(__file__).resolve().parents[1]
    if argv[0] == "--from-excerpts":
        found = read_excerpts(Path(argv[1]))
    else:
        found = excerpts(argv[0])
        if "--excerpts" in argv:
            write_excerpts(found, Path(argv[argv.index("--excerpts") + 1]))
    (root / "data" / "messages.yaml").write_text(render(found), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
