"""The checks cuDNN's frontend makes before it builds a fused-attention (SDPA) graph: the messages
of RETURN_CUDNN_FRONTEND_ERROR_IF in NVIDIA/cudnn-frontend's SDPA nodes at every release tag.
Transformer Engine's fused attention, PyTorch's cuDNN SDPA backend and JAX print them ("cuDNN
Error: Num hidden_dim shoud be less than 128 ..."). Only the environment-relevant ones are kept:
head-dim limits, architectures, and cuDNN versions a feature needs. Recorded in
tests/fixtures/cudnn_excerpts.yaml (the messages only), turned into catalog entries offline.
Record: python tools/cudnn_sources.py OUT.yaml GIT_DIR_OF_CUDNN_FRONTEND"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import message_extract as ex

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "cudnn_excerpts.yaml"
REPO = "NVIDIA/cudnn-frontend"
TAGS = re.compile(r"^v1\.\d+\.\d+$")
PATHS = re.compile(r"^include/cudnn_frontend/node/(?:scaled_dot_product\w*|sdpa\w*)\.h$")
_CALL = re.compile(r"\bRETURN_CUDNN_FRONTEND_ERROR_IF\(")
# (test on the message, category): the first that matches wins
KINDS: Tuple[Tuple[str, str], ...] = (
    (r"hidden_dim|head_dim|\bd_qk\b|\bd_v\b", "head_dim_unsupported"),
    (r"Ampere|Hopper|Blackwell|architecture|SM Major", "gpu_unsupported"),
    (r"(?:cudnn|cuDNN|backend) version|requires cudnn|cudnn \d|supported (?:in|from) \d\.\d",
     "version_conflict"),
)
Row = Tuple[str, int, str]  # path, line, printed


def kind(printed: str) -> Optional[str]:
    return next((category for test, category in KINDS if re.search(test, printed)), None)


def checks(text: str) -> List[Tuple[int, str]]:
    """(line, message) of each RETURN_CUDNN_FRONTEND_ERROR_IF(condition, code, message)."""
    out = []
    for m in _CALL.finditer(text):
        args = ex._split_args(text, m.end())
        if args is None or len(args) < 3:
            continue
        printed = " ".join(ex._cpp_message(args[2:]).split())
        if printed and kind(printed):
            out.append((text.count("\n", 0, m.start()) + 1, printed))
    return out


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True,
                          check=True).stdout


def read(git_dir: str) -> Dict[str, List[Row]]:
    tags = [t for t in _git(git_dir, "tag").split() if TAGS.match(t)]
    out: Dict[str, List[Row]] = {}
    for tag in sorted(tags, key=order):
        for path in (p for p in _git(git_dir, "ls-tree", "-r", "--name-only", tag).split()
                     if PATHS.match(p)):
            for line, printed in checks(_git(git_dir, "show", f"{tag}:{path}")):
                out.setdefault(tag, []).append((path, line, printed))
    return out


def order(tag: str) -> Tuple[int, ...]:
    return tuple(int(p) for p in tag.lstrip("v").split("."))


def load(path: Path = FIXTURE) -> Dict[str, List[Row]]:
    if not path.is_file():
        return {}
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {tag: [(str(r[0]), int(r[1]), str(r[2])) for r in rows] for tag, rows in raw.items()}


REMEDY = {
    "head_dim_unsupported": "another attention backend for this head dim (Transformer Engine: "
                            "NVTE_FUSED_ATTN=0 NVTE_FLASH_ATTN=1; PyTorch: turn cuDNN SDPA off), "
                            "or the cuDNN the message names",
    "gpu_unsupported": "another attention backend on this GPU (Transformer Engine: "
                       "NVTE_FUSED_ATTN=0; PyTorch: turn cuDNN SDPA off)",
    "version_conflict": "the cuDNN release the message names, or another attention backend",
}


def entries(pattern: Callable[[str], str], path: Path = FIXTURE) -> List[Dict[str, object]]:
    """One entry per message, the first and last tag that print it, cited where it first is."""
    recorded = load(path)
    spans: Dict[str, Tuple[List[str], str, int]] = {}
    for tag in sorted(recorded, key=order):
        for file, line, printed in recorded[tag]:
            have = spans.setdefault(printed, ([], file, line))
            if tag not in have[0]:
                have[0].append(tag)
    out: List[Dict[str, object]] = []
    for number, (printed, (have, file, line)) in enumerate(
            sorted(spans.items(), key=lambda s: (order(s[1][0][0]), s[1][1], s[1][2])), 1):
        category = str(kind(printed))
        out.append({"id": f"cudnn-{number:03d}", "printed": printed,
                    "pattern": pattern(printed.rstrip(".")),
                    "location": f"{REPO}@{have[0]}:{file}:{line}", "first": have[0],
                    "last": have[-1], "mechanism": "cudnn_sdpa_check", "category": category,
                    "remedy": REMEDY[category]})
    return out


def main(argv: List[str]) -> None:
    if len(argv) != 2:
        raise SystemExit("usage: python tools/cudnn_sources.py OUT.yaml GIT_DIR_OF_CUDNN_FRONTEND")
    found = read(argv[1])
    Path(argv[0]).write_text(yaml.safe_dump(found, sort_keys=False, width=100, allow_unicode=True),
                             encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
