"""The serving frameworks' own flash-attention messages (vLLM's backend choice, SGLang's attention
backends), read from their release wheels: which files, which messages, their category, and the
catalog entries built from the recorded excerpts, for tools/gen_messages.py.

Record (each DIR holds one folder per release, named by its version, with the wheel unpacked in
it: `pip download vllm==V --no-deps` then unzip into DIR/V):
    python tools/serve_sources.py record --vllm DIR --sglang DIR
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import yaml
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import message_extract as ex

RECORD = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "serve_excerpts.yaml"
LOGGERS = {"info", "warning", "warn", "error", "info_once", "warning_once", "critical"}


@dataclass(frozen=True)
class Project:
    name: str  # the id prefix
    dist: str  # the distribution on the registry
    paths: Tuple[str, ...]  # fnmatch patterns inside the wheel


PROJECTS = (
    Project("vllm", "vllm", ("vllm/attention/selector.py", "vllm/attention/utils/fa_utils.py",
                             "vllm/attention/backends/flash_attn.py", "vllm/platforms/cuda.py",
                             "vllm/v1/attention/backends/flash_attn.py",
                             "vllm/v1/attention/backends/utils.py", "vllm/v1/attention/selector.py",
                             "vllm/v1/attention/backends/fa_utils.py")),
    Project("sglang", "sglang", ("sglang/srt/server_args.py", "sglang/srt/arg_groups/*.py",
                                 "sglang/srt/model_executor/model_runner.py",
                                 "sglang/srt/layers/attention/flashattention_backend.py",
                                 "sglang/srt/layers/attention/attention_registry.py",
                                 "sglang/srt/layers/attention/vision.py",
                                 "sglang/jit_kernel/flash_attention_v3.py")),
    Project("sgl-kernel", "sgl-kernel", ("sgl_kernel/flash_attn.py",)),
)
# The messages about flash-attention itself (not FlashInfer, FlashMLA, or a kernel's shape).
KEEP = re.compile(r"FlashAttention|[Ff]lash[_ ]?[Aa]ttn|\bFA ?[234]\b|\bfa[34]\b|FA version")
# What a message means for the environment, the first that matches wins; a message of none of
# these (a feature the backend lacks, a setting's conflict) is not kept.
KINDS: Tuple[Tuple[str, str], ...] = (
    (r"not found|not installed|No module|[Ff]ailed to import|is not available", "not_installed"),
    (r"head ?size|head_size|head ?dim|head_dim", "head_dim_unsupported"),
    (r"dtype|float16|bfloat16|fp32", "dtype_unsupported"),
    (r"Volta|Turing|Ampere|Hopper|Blackwell|compute capability|\bSM ?(?:[<>]?=|\d)|\bsm_?\d|"
     r"\bsm\d{2}|device capability|GPUs? (?:with|or newer|older)|on this (?:GPU|device)",
     "gpu_unsupported"),
    (r"flash[-_]attn version|requires flash[-_]?attn|[Uu]pgrade|version .* or (?:later|newer)",
     "version_conflict"),
)
# A feature fallback (ALiBi), or a line that only repeats vllm_flash_attn's own gate (catalogued
# as vllm-fa), is no cause of its own.
SKIP = re.compile(r"ALiBi|due to \{|^Auto-select|Verified on|upgrading FlashAttention|"
                  r"attention_backend=|context parallel")


def kind(printed: str) -> Optional[str]:
    return next((category for test, category in KINDS if re.search(test, printed)), None)


def _logged(node: ast.Call) -> Optional[str]:
    """The text a `logger.<level>(fmt, *args)` call prints, %-placeholders named by their
    argument's last identifier."""
    printed = ex._py_text(node.args[0]) if node.args else None
    if printed is None:
        return None
    values = iter(ex.placeholder(ast.unparse(a)) for a in node.args[1:])
    return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdrif]", lambda _: next(values, "{value}"), printed)


def messages(text: str) -> Iterator[Tuple[int, str, str]]:
    """(line, printed, how) of each raise/assert message and each logged line of one file."""
    for line, printed, _ in ex.py_raises(text):
        yield line, printed, "raise"
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in LOGGERS and "log" in ast.unparse(node.func.value).lower():
            printed = _logged(node)
            if printed and printed.strip():
                yield node.lineno, " ".join(ex._unescape(printed).split()), "log"


def _files(tree: Path, project: Project) -> List[Path]:
    return sorted(p for p in tree.rglob("*.py")
                  if any(fnmatch(p.relative_to(tree).as_posix(), pat) for pat in project.paths))


def read(project: Project, root: Path) -> Dict[str, object]:
    """versions and rows (path, line, printed, how, version runs) of one project's unpacked
    release wheels: the messages only, never the files."""
    versions = sorted((d.name for d in root.iterdir() if d.is_dir()), key=Version)
    rows: Dict[Tuple[str, int, str, str], List[int]] = {}
    for index, version in enumerate(versions):
        seen = set()
        for path in _files(root / version, project):
            rel = path.relative_to(root / version).as_posix()
            for line, printed, how in messages(path.read_text(encoding="utf-8")):
                if KEEP.search(printed) and not SKIP.search(printed) and kind(printed) \
                        and printed not in seen:
                    seen.add(printed)
                    rows.setdefault((rel, line, printed, how), []).append(index)
    found: Dict[str, object] = {"dist": project.dist, "versions": versions,
                                "rows": [[*row, ex.tag_runs(i)] for row, i in rows.items()]}
    if project.name == "sglang":
        found["backends"] = {v: backend_choices(root / v) for v in versions}
        found["mm_backends"] = {v: mm_backend_choices(root / v) for v in versions}
    if project.name == "vllm":
        found["switches"] = {v: vllm_switches(root / v) for v in versions}
    return found


def vllm_switches(tree: Path) -> Dict[str, object]:
    """How a vLLM release lets the user pick the attention backend: the VLLM_ATTENTION_BACKEND
    variable (envs.py) and/or the --attention-backend argument (engine/arg_utils.py), and the
    backend names it has (the AttentionBackendEnum members, else envs.py's option list)."""
    def text(rel: str) -> str:
        path = tree / rel
        return path.read_text(encoding="utf-8") if path.is_file() else ""
    envs = text("vllm/envs.py")
    names: List[str] = []
    for registry in sorted(tree.glob("vllm/**/backends/registry.py")):
        for node in ast.walk(ast.parse(registry.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name == "AttentionBackendEnum":
                names = [t.id for n in node.body if isinstance(n, ast.Assign)
                         for t in n.targets if isinstance(t, ast.Name)]
    if not names and "# Backend for attention" in envs:  # before the enum: envs.py's list
        names = re.findall(r'#\s+- "(\w+)"', envs.split('"VLLM_ATTENTION_BACKEND":')[0].rsplit(
            "# Backend for attention computation", 1)[-1])
    return {"env": '"VLLM_ATTENTION_BACKEND"' in envs,
            "cli": '"--attention-backend"' in text("vllm/engine/arg_utils.py"), "backends": names}


def _strings(node: ast.expr) -> List[str]:
    return [e.value for e in getattr(node, "elts", []) if isinstance(e, ast.Constant)
            and isinstance(e.value, str)]


def _lists(module: ast.Module) -> Dict[str, List[str]]:
    return {t.id: _strings(n.value) for n in ast.walk(module) if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.List) for t in n.targets if isinstance(t, ast.Name)}


def _choices(module: ast.Module) -> Optional[ast.expr]:
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value == "--attention-backend":
            return next((kw.value for kw in node.keywords if kw.arg == "choices"), None)
    return None


def backend_choices(tree: Path) -> List[str]:
    """The `--attention-backend` choices SGLang's argument parser accepts: a list literal, or the
    list it names (ATTN_BACKENDS, ATTENTION_BACKEND_CHOICES); from 0.5.14 the parser is built from
    declared fields, and ATTENTION_BACKEND_CHOICES (arg_groups/choices.py) is the list."""
    lists: Dict[str, List[str]] = {}
    choices: Optional[ast.expr] = None
    for path in sorted((tree / "sglang" / "srt").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "attention" in text and ("BACKEND" in text or "--attention-backend" in text):
            module = ast.parse(text)
            lists.update((k, v) for k, v in _lists(module).items() if v)
            choices = choices or _choices(module)
    if isinstance(choices, ast.Name):
        return lists.get(choices.id, [])
    if choices is not None:
        return _strings(choices)
    return lists.get("ATTENTION_BACKEND_CHOICES", [])


def mm_backend_choices(tree: Path) -> List[str]:
    """The --mm-attention-backend choices (the vision encoders' attention, layers/attention/
    vision.py): an add_argument's choices, or from 0.5.14 the `mm_attention_backend` field's
    Arg(choices=...) (arg_groups/fields/mm.py)."""
    for path in sorted((tree / "sglang" / "srt").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "mm-attention-backend" not in text and "mm_attention_backend: " not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value == "--mm-attention-backend":
                found = next((kw.value for kw in node.keywords if kw.arg == "choices"), None)
                return _strings(found) if found is not None else []
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.target.id == "mm_attention_backend":
                calls = [c for c in ast.walk(node.annotation) if isinstance(c, ast.Call)]
                found = next((kw.value for c in calls for kw in c.keywords
                              if kw.arg == "choices"), None)
                return _strings(found) if found is not None else []
    return []


def load(path: Path = RECORD) -> Dict[str, Dict[str, object]]:
    if not path.is_file():
        return {}
    loaded: Dict[str, Dict[str, object]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def _captures(printed: str) -> Dict[str, str]:
    facts = (("head", "head_dim"), ("dtype", "dtype"), ("cap|arch|major|sm", "compute_capability"),
             ("version", "fa_version"))
    return {n: next((f for t, f in facts if re.search(t, n, re.I)), "value")
            for n in re.findall(r"\{(\w+)\}", printed)}


def _spans(data: Dict[str, object]) -> Dict[str, Tuple[List[str], str, int, str]]:
    """printed -> (versions that print it, path and line where it first appears, how)."""
    versions = [str(v) for v in data["versions"]]  # type: ignore[attr-defined]
    spans: Dict[str, Tuple[List[str], str, int, str]] = {}
    for path, line, printed, how, runs in data["rows"]:  # type: ignore[attr-defined]
        have = ex.tags_in_runs(versions, runs)
        earlier = spans.get(printed)
        if earlier is None:
            spans[printed] = (have, path, line, how)
        else:
            first = earlier if Version(earlier[0][0]) <= Version(have[0]) else (have, path, line, how)
            spans[printed] = (sorted({*earlier[0], *have}, key=Version), *first[1:])  # type: ignore[assignment]
    return spans


def _everywhere(recorded: Dict[str, Dict[str, object]]) -> List[str]:
    """The --attention-backend choices every recorded SGLang release accepts (in the newest's
    order): what to offer against sgl-kernel, whose release says nothing of SGLang's."""
    lists = list(((recorded.get("sglang") or {}).get("backends") or {}).values())  # type: ignore[attr-defined]
    return [b for b in lists[-1] if all(b in other for other in lists)] if lists else []


def entries(recorded: Dict[str, Dict[str, object]], pattern: object) -> List[Dict[str, object]]:
    """One catalog entry per project and printed form, with the first and last release that
    print it; a logged line (vLLM says why it will not use FlashAttention, then falls back) only
    corroborates, a raised one names the failure."""
    out: List[Dict[str, object]] = []
    for project in PROJECTS:
        data = recorded.get(project.name)
        if not data:
            continue
        spans = sorted(_spans(data).items(), key=lambda s: (Version(s[1][0][0]), s[1][1], s[1][2]))
        for number, (printed, (have, path, line, how)) in enumerate(spans, 1):
            entry: Dict[str, object] = {
                "id": f"{project.name}-{number:03d}", "printed": printed,
                "pattern": pattern(printed.rstrip(".")),  # type: ignore[operator]
                "location": f"{project.dist}=={have[0]}:{path}:{line}", "first": have[0],
                "last": have[-1], "mechanism": "serving_backend_log" if how == "log"
                else "serving_backend_check", "category": kind(printed)}
            if _captures(printed):
                entry["captures"] = _captures(printed)
            if how == "log":
                entry["weight"] = "logged"
            backends = (data.get("backends") or {}).get(have[-1]) if project.name != \
                "sgl-kernel" else _everywhere(recorded)  # type: ignore[attr-defined]
            switch = (data.get("switches") or {}).get(have[-1])  # type: ignore[attr-defined]
            if switch:
                backends = switch["backends"]
                entry["switch"] = " ".join(k for k in ("env", "cli") if switch[k])
            if path.endswith("layers/attention/vision.py"):  # the vision encoder's own switch
                backends = (data.get("mm_backends") or {}).get(have[-1])  # type: ignore[attr-defined]
                entry["switch"] = "mm"
            if backends:
                entry["backends"] = " ".join(backends)
            entry["remedy"] = REMEDIES["sglang-mm" if entry.get("switch") == "mm" else project.name]
            out.append(entry)
    return out


REMEDIES = {
    "vllm": "choose the attention backend vLLM accepts on this GPU (VLLM_ATTENTION_BACKEND), "
            "force the FA version its gate accepts (VLLM_FLASH_ATTN_VERSION), or a GPU the "
            "message names",
    "sglang": "choose another --attention-backend, one of the choices SGLang's server_args "
              "lists at that release (triton and torch_native need no flash-attention), or the "
              "GPU generation the message names",
    "sglang-mm": "choose another --mm-attention-backend for the vision encoder, one of the choices "
                 "SGLang lists at that release (sdpa and triton_attn need no flash-attention), "
                 "or the GPU generation the message names",
    "sgl-kernel": "run sgl-kernel's flash_attn (FA3) on the GPU generation the message names, or "
                  "choose another SGLang --attention-backend (triton, flashinfer)",
}


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    for project in PROJECTS:
        rec.add_argument(f"--{project.name}", dest=project.name.replace("-", "_"), type=Path,
                         help="one folder per unpacked release")
    args = parser.parse_args(argv)
    recorded = load()
    for project in PROJECTS:
        root: Optional[Path] = getattr(args, project.name.replace("-", "_"))
        if root is not None:
            recorded[project.name] = read(project, root)
    RECORD.write_text(yaml.safe_dump(recorded, width=200), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
