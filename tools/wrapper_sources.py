"""The projects that wrap flash-attention and the messages they print about it, read from their
release tags: which files, which messages, their category, and the facts recorded beside them
(the flash-attn range xformers accepts at each tag), for tools/gen_messages.py."""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import message_extract as ex
import yaml

Range = Tuple[str, str]  # the lowest and highest flash-attn a wrapper accepts


@dataclass(frozen=True)
class Wrapper:
    name: str  # the id prefix
    repo: str  # owner/name upstream
    tags: str  # its release tags (a regex)
    paths: Tuple[str, ...]
    keep: str  # a regex: the messages about flash-attention
    category: str
    remedy: str
    # read at the default branch's commits that change `paths` (oldest first), not at tags: the
    # fork's release tags predate the messages kept
    history: bool = False
    gates: str = ""  # a regex: functions whose `return False, "reason"` reasons are messages
    # "corroborate": a hand-written mechanism reads these with more of the report (kernel_libs:
    # SageAttention's head dims and archs); the entry cites, and stands alone only below it
    weight: str = ""


def _sage(name: str, keep: str, category: str, remedy: str, weight: str = "") -> Wrapper:
    """One of SageAttention's message families: its dispatcher's file, read at its main branch's
    commits (its release tags postdate most of its messages)."""
    return Wrapper(name, "thu-ml/SageAttention", "", ("sageattention/core.py",), keep, category,
                   remedy, history=True, weight=weight)


WRAPPERS = (
    Wrapper("xformers", "facebookresearch/xformers", r"^v0\.0\.\d+(?:\.post\d+)?$",
            ("xformers/ops/fmha/flash.py",), r"^Requires Flash[- ][Aa]ttention", "version_conflict",
            "install the flash-attn release in the range xformers accepts, pinned exactly, or an "
            "xformers release that accepts the flash-attn installed"),
    # vLLM's fork: its tags v2.5.8.post1 .. v2.6.2 (2024) have none of these; the FA2/FA3/FA4
    # gates and the FA version check arrive on main from 2025-01.
    Wrapper("vllm-fa", "vllm-project/flash-attention", "",
            ("vllm_flash_attn/flash_attn_interface.py",),
            r"^(?:FA\d is only supported on devices|Unsupported FA version)", "gpu_unsupported",
            "use the FA version vLLM's gate accepts on this GPU (vLLM's choice of FA version), "
            "another attention backend, or SDPA", history=True, gates=r"^_is_fa\d_supported$"),
    # SageAttention (thu-ml/SageAttention): its two release tags (v2.0.1, v2.2.0) postdate most
    # of its messages, so its main branch's commits that change the dispatcher are read.
    # sageattn() pads head dims below 128 to 64 or 128 from dcc405e ("SageAttention 2.1.0
    # Release", 2025-01-30); the varlen path and older releases assert [64, 128].
    _sage("sage-hdim", r"head_dim", "head_dim_unsupported",
          "upgrade SageAttention to 2.1.0 or later, whose sageattn() pads head dims below 128 "
          "to 64 or 128, or pad q/k/v yourself; above 128 it has no kernels: use SDPA "
          "(attn_implementation='sdpa') for that model", "corroborate"),
    _sage("sage-arch", r"^Unsupported CUDA architecture", "gpu_unsupported",
          "SageAttention 2's CUDA kernels dispatch by arch (sm80, sm86, sm89, sm90, sm120, "
          "sm121) and need a build compiled for it: on another GPU use SageAttention 1.0.6 "
          "(Triton kernels, pip install sageattention==1.0.6) or SDPA; on a listed one, "
          "reinstall a SageAttention build made for it", "corroborate"),
    # the dispatcher picked a kernel whose compiled module did not import (SM80_ENABLED ...): a
    # build made for other archs, or an extension that failed to build
    _sage("sage-build", r"^SM\d+ kernel is not available", "no_kernel_image",
          "the installed SageAttention has no compiled module for this GPU's kernel (a wheel or "
          "build made for other archs, or an extension that failed to build): reinstall a "
          "SageAttention wheel built for this torch and GPU, or rebuild it from source on this "
          "machine (pip install --no-build-isolation, after removing the old build folder)",
          "corroborate"),
    _sage("sage-dtype", r"^Input tensors must be in dtype of", "dtype_unsupported",
          "give SageAttention fp16 or bf16 q/k/v (load the model with torch_dtype=torch.float16 "
          "or torch.bfloat16); in fp32 use SDPA"),
)
# What a placeholder of a wrapper's message states (the first that matches its name wins).
FACTS = (("fa_version", "fa_version"), ("VER_MIN", "version_min"),
         ("VER_LAST|VER_MAX", "version_max"), ("VERSION", "version"))


def _version(node: Optional[ast.expr]) -> Optional[str]:
    """(2, 5, 6) or parse_version("2.7.1") as a version string."""
    if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts):
        return ".".join(str(e.value) for e in node.elts if isinstance(e, ast.Constant))
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value)
    return None


def accepted(text: str) -> Optional[Range]:
    """The FLASH_VER_MIN .. FLASH_VER_LAST range a file assigns, if it does."""
    found: Dict[str, str] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = _version(node.value)
            if value and node.targets[0].id in ("FLASH_VER_MIN", "FLASH_VER_LAST"):
                found[node.targets[0].id] = value
    if len(found) < 2:
        return None
    return found["FLASH_VER_MIN"], found["FLASH_VER_LAST"]


def order(tag: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag))


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True).stdout


def _points(wrapper: Wrapper, git_dir: str) -> List[str]:
    """The release tags (or, for a history wrapper, the commits) to read, oldest first."""
    if wrapper.history:
        return _git(git_dir, "log", "--first-parent", "--reverse", "--format=%h", "--abbrev=12",
                    "HEAD", "--", *wrapper.paths).split()
    return sorted((t for t in _git(git_dir, "tag").split() if re.match(wrapper.tags, t)), key=order)


def _messages(wrapper: Wrapper, text: str) -> List[Tuple[int, str]]:
    found = [(line, printed) for line, printed, _ in ex.py_raises(text)]
    if wrapper.gates:
        found += [(line, printed) for line, printed, _ in ex.py_reasons(text, wrapper.gates)]
    return found


def read(wrapper: Wrapper, git_dir: str) -> Dict[str, object]:
    """tags, rows (path, line, printed, tag runs) and accepted ranges (min, max, tag runs) of one
    wrapper's repository: the messages only, never the files."""
    tags = _points(wrapper, git_dir)
    rows: Dict[Tuple[str, int, str], List[int]] = {}
    ranges: Dict[Range, List[int]] = {}
    for index, tag in enumerate(tags):
        for path in wrapper.paths:
            text = _git(git_dir, "show", f"{tag}:{path}")
            seen = set()
            for line, printed in _messages(wrapper, text):
                if re.search(wrapper.keep, printed) and printed not in seen:
                    seen.add(printed)
                    rows.setdefault((path, line, printed), []).append(index)
            span = accepted(text) if text else None
            if span is not None:
                ranges.setdefault(span, []).append(index)
    return {"repo": wrapper.repo, "tags": tags,
            "rows": [[*row, ex.tag_runs(i)] for row, i in rows.items()],
            "accepts": [[*span, ex.tag_runs(i)] for span, i in ranges.items()]}


def load(path: Path) -> Dict[str, Dict[str, object]]:
    loaded: Dict[str, Dict[str, object]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def write(recorded: Dict[str, Dict[str, object]], path: Path) -> None:
    path.write_text(yaml.safe_dump(recorded, width=200), encoding="utf-8")


def _captures(printed: str) -> Dict[str, str]:
    return {name: next((f for test, f in FACTS if re.search(test, name)), "value")
            for name in re.findall(r"\{(\w+)\}", printed)}


def entries(recorded: Dict[str, Dict[str, object]], pattern: object) -> List[Dict[str, object]]:
    """One catalog entry per wrapper and printed form, first and last tag that print it; the
    accepted ranges as (first tag, last tag, min, max)."""
    out: List[Dict[str, object]] = []
    for wrapper in WRAPPERS:
        data = recorded.get(wrapper.name)
        if not data:
            continue
        tags = [str(t) for t in data["tags"]]  # type: ignore[attr-defined]
        rank = {tag: index for index, tag in enumerate(tags)}  # oldest first, tags or commits
        accepts = [[ex.tags_in_runs(tags, runs)[0], ex.tags_in_runs(tags, runs)[-1], low, high]
                   for low, high, runs in data["accepts"]]  # type: ignore[attr-defined]
        spans: Dict[str, Tuple[List[str], str, int]] = {}  # printed -> (tags, path, line)
        for path, line, printed, runs in data["rows"]:  # type: ignore[attr-defined]
            have, earlier = ex.tags_in_runs(tags, runs), spans.get(printed)
            spans[printed] = (sorted([*(earlier[0] if earlier else []), *have], key=rank.get),
                              *((earlier[1], earlier[2]) if earlier and
                                rank[earlier[0][0]] < rank[have[0]] else (path, line)))
        for number, (printed, (have, path, line)) in enumerate(
                sorted(spans.items(), key=lambda s: rank[s[1][0][0]]), 1):
            entry: Dict[str, object] = {
                "id": f"{wrapper.name}-{number:03d}", "printed": printed,
                "pattern": pattern(printed.rstrip(".")),  # type: ignore[operator]
                "location": f"{wrapper.repo}@{have[0]}:{path}:{line}", "first": have[0],
                "last": have[-1], "mechanism": "wrapper_check", "category": wrapper.category}
            if _captures(printed):
                entry["captures"] = _captures(printed)
            if wrapper.weight:
                entry["weight"] = wrapper.weight
            entry["remedy"] = wrapper.remedy
            if "{" in printed and accepts:
                entry["accepts"] = [a for a in accepts
                                    if rank[have[0]] <= rank[str(a[0])] <= rank[have[-1]]]
            out.append(entry)
    return out
