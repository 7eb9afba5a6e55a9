"""transformers' messages about flash-attention (availability, version floors, dtype, device, the
Hub `kernels` package, FA3, SDPA), read from its release wheels, recorded in
tests/fixtures/hf_excerpts.yaml and turned into catalog entries (hf-NNN) for tools/gen_messages.py.
Run: python tools/hf_sources.py WHEEL_DIR (the wheels `pip download transformers==X --no-deps` gives)."""

from __future__ import annotations

import ast
import copy
import re
import sys
import zipfile
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

import message_extract as ex
import yaml
from packaging.version import Version

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "hf_excerpts.yaml"
# The files that decide whether flash-attention (or a Hub kernel) can be used; a model file's or a
# quantizer's messages are about that model or quantization.
PATHS = re.compile(r"^transformers/(?:modeling_utils|modeling_flash_attention_utils|masking_utils|"
                   r"utils/import_utils|utils/kernel_config|integrations/(?:flash_attention|"
                   r"flash_paged|hub_kernels|sdpa_attention))\.py$")
ABOUT = re.compile(r"flash|FlashAttention|\bFA[234]\b|\bkernels\b|\bSDPA\b|scaled_dot_product",
                   re.IGNORECASE)
LOGS = {"warning", "warning_once", "warn", "error", "info", "info_once", "warning_advice"}
# What a message is about, the first that matches wins; None: the caller's code or shapes.
KINDS: Tuple[Tuple[str, Optional[str]], ...] = (
    (r"does not support an attention implementation|does not support (?:Flash|SDPA)|"
     r"ALiBi|attention_dropout|padding_side|\bmask\b|position_ids|sliding|cu_seq|dropout|"
     r"softcap|s_aux|[Pp]aged|BetterTransformer|without specifying a torch dtype|Casting|"
     r"is not a valid|not a supported|Unknown|Could not find (?!any)|must be", None),
    (r"torch ?>= ?\d|PyTorch >= ?\d|torch>=\d|requires (?:torch|PyTorch)|PyTorch SDPA requirements",
     "torch_version_mismatch"),
    (r"float16 and torch\.bfloat16|fp16 and bf16|bfloat16 dtypes", "dtype_unsupported"),
    (r"compute capability|Ampere|Hopper", "gpu_unsupported"),
    (r"not available on CPU|no GPU available|not initialized on GPU|dispatched on CPU or disk|"
     r"model initialized on CPU", "no_gpu"),
    (r"not supported on Ascend NPU", "platform_unsupported"),
    (r"greater or equal than|greater than 2|version to be|at least version|>= ?\d+\.\d+|"
     r"incompatible version|upgrade kernels", "version_conflict"),
    (r"not installed|seem to be installed|install kernels|requires `kernels`|is not available|"
     r"[Kk]ernels are not available|Failed to import flash|Could not find any flash attn|"
     r"USE_HUB_KERNELS", "not_installed"),
)


def kind(printed: str) -> Optional[str]:
    for test, category in KINDS:
        if re.search(test, printed):
            return category
    return None


class _Bind(ast.NodeTransformer):
    """Put a function's string constants (`preface = "..."`, bound once) where its f-strings use
    them, so `f"{preface} ..."` reads as what it prints."""

    def __init__(self, names: Dict[str, ast.expr]) -> None:
        self.names = names

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        values: List[ast.expr] = []
        for value in node.values:
            bound = self.names.get(value.value.id) if isinstance(value, ast.FormattedValue) \
                and isinstance(value.value, ast.Name) and value.conversion == -1 else None
            if isinstance(bound, ast.Constant):
                values.append(ast.Constant(str(bound.value)))
            elif isinstance(bound, ast.JoinedStr):
                values += bound.values
            else:
                values.append(value)
        return ast.JoinedStr(values)


def _strings(fn: ast.AST) -> Dict[str, ast.expr]:
    """Names a function binds exactly once, to a string literal or an f-string."""
    bound: Dict[str, List[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(node.value)
    return {k: v[0] for k, v in bound.items() if len(v) == 1 and (
        isinstance(v[0], ast.JoinedStr) or
        (isinstance(v[0], ast.Constant) and isinstance(v[0].value, str)))}


def _logged(node: ast.AST) -> Optional[ast.expr]:
    """The message of logger.warning(...) / warning_once / warnings.warn and their kin."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in LOGS and node.args:
        return node.args[0]
    return None


def messages(text: str, logged: Optional[Set[str]] = None) -> Iterator[Tuple[int, str]]:
    """(line, printed) of each raise, assert and log call in one file, a function's bound
    strings put in place; those of log calls (a warning the run goes on after) are added to
    `logged`."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        names = _strings(fn)
        for node in ast.walk(fn):
            message = _logged(node) if isinstance(node, ast.Call) else \
                node.exc.args[0] if isinstance(node, ast.Raise) and isinstance(
                    node.exc, ast.Call) and node.exc.args else None
            if message is None:
                continue
            printed = ex._py_text(_Bind(names).visit(copy.deepcopy(message)))
            if printed and printed.strip():
                printed = " ".join(printed.replace("{{", "{").replace("}}", "}").split())
                if logged is not None and isinstance(node, ast.Call):
                    logged.add(printed)
                yield getattr(node, "lineno", 0), printed


def _kernels_pin(text: str) -> Optional[str]:
    """The `kernels` requirement a release states: KERNELS_MIN/MAX_VERSION in import_utils.py
    (5.x), else its dependency_versions_table.py entry."""
    low = re.search(r'^KERNELS_MIN_VERSION = "([\w.]{1,20})"', text, re.M)
    high = re.search(r'^KERNELS_MAX_VERSION = "([\w.]{1,20})"', text, re.M)
    if low and high:
        return f"kernels>={low.group(1)},<{high.group(1)}"
    found = re.search(r'"kernels":\s*"(kernels[^"]{1,60})"', text)
    return found.group(1) if found else None


def read_wheel(path: Path, logged: Optional[Set[str]] = None
               ) -> Tuple[List[Tuple[str, int, str]], Optional[str]]:
    """The environment messages about flash-attention in one wheel, and its `kernels` pin."""
    rows: List[Tuple[str, int, str]] = []
    pin = None
    with zipfile.ZipFile(path) as wheel:
        for name in sorted(n for n in wheel.namelist() if n.endswith(".py")):
            if not PATHS.match(name) and not name.endswith("dependency_versions_table.py"):
                continue
            text = wheel.read(name).decode("utf-8", "replace")
            stated = _kernels_pin(text)
            if stated and (pin is None or "KERNELS_MIN" in text):
                pin = stated
            if not ABOUT.search(text):
                continue
            seen = set()
            for line, printed in messages(text, logged):
                if ABOUT.search(printed) and kind(printed) and printed not in seen:
                    seen.add(printed)
                    rows.append((name, line, printed))
    return rows, pin


def read(wheel_dir: Path) -> Dict[str, object]:
    """Every transformers wheel in wheel_dir, oldest first: the messages only, never the files."""
    wheels = sorted(wheel_dir.glob("transformers-*.whl"), key=lambda p: Version(p.name.split("-")[1]))
    tags = [p.name.split("-")[1] for p in wheels]
    rows: Dict[Tuple[str, int, str], List[int]] = {}
    pins: Dict[str, List[int]] = {}
    logged: Set[str] = set()
    for index, wheel in enumerate(wheels):
        found, pin = read_wheel(wheel, logged)
        for row in found:
            rows.setdefault(row, []).append(index)
        if pin:
            pins.setdefault(pin, []).append(index)
    return {"package": "transformers", "tags": tags,
            "rows": [[*row, ex.tag_runs(i)] for row, i in rows.items()],
            "kernels": [[pin, ex.tag_runs(i)] for pin, i in pins.items()],
            # the messages transformers only logs (warnings the run goes on after), never raises
            "logged": sorted({printed for _, _, printed in rows} & logged)}


# What a placeholder states (the first test on its name that matches wins).
FACTS = (("flash_attention_version", "version"), ("flash_attn_version", "fa_generation"),
         ("__name__", "model_class"), ("dtype", "dtype"),
         ("capability|major", "compute_capability"), ("MIN_VERSION", "version_min"),
         ("MAX_VERSION", "version_max"))
# The advice transformers appends (a docs link, an autocast example): left out of the pattern, so
# a report that cuts the line still matches.
ADVICE = re.compile(r" (?:Please refer to|You should run|Please request|Please make sure to have "
                    r"access)\b")


# modeling_utils' `preface` ("FlashAttention2 has been toggled on, but it cannot be used due to
# the following error:", put in place by _Bind): a report that quotes only what follows it (a
# model's remote code raises the same words bare) still matches, so the preface is optional.
PREFACE = re.compile(r"^(?P<preface>[^:{}]{20,160} due to the following error:) (?P<rest>.+)$",
                     re.DOTALL)


def head_pattern(pattern: Callable[[str], str], head: str) -> str:
    found = PREFACE.match(head)
    if found is None:
        return pattern(head)
    rest = found.group("rest")
    first = f"[{rest[0].lower()}{rest[0].upper()}]" if rest[0].isalpha() else re.escape(rest[0])
    tail = pattern(rest)[len(re.escape(rest[0])):]
    return f"(?:{pattern(found.group('preface'))}\\s{{1,4}})?{first}{tail}"


def _captures(printed: str) -> Dict[str, str]:
    return {n: next((f for t, f in FACTS if re.search(t, n)), "value")
            for n in re.findall(r"\{(\w+)\}", printed)}


def corroborates(printed: str) -> bool:
    """flash_attn missing or not importable: the hand-written wrapper mechanism reads it with the
    report's pip list (installed elsewhere, or installed but its import fails), so the entry
    stands behind it instead of over it. Not 4.34/4.35's bare "Flash Attention 2.0 is not
    available": the report reader takes its "Flash Attention 2.0" for an installed flash-attn."""
    return bool(re.search(r"package flash_attn seems|error: Flash Attention 2 is not available\."
                          r"|flash_attn_varlen_func is not available", printed))


# Raised from `except ImportError`: the real import error (undefined symbol, missing library) is
# printed above it and is the cause; the entry ranks as a wrapper's message, below it.
WRAPS = re.compile(r"^Failed to import flash attention")


def _spans(data: Dict[str, object]) -> Dict[str, Tuple[List[str], str, int]]:
    """printed -> (the releases that print it, oldest first; the path and line where it first does)."""
    tags = [str(t) for t in data["tags"]]  # type: ignore[attr-defined]
    spans: Dict[str, Tuple[List[str], str, int]] = {}
    for path, line, printed, runs in data["rows"]:  # type: ignore[attr-defined]
        have, earlier = ex.tags_in_runs(tags, runs), spans.get(printed)
        if earlier is None or Version(have[0]) < Version(earlier[0][0]):
            spans[printed] = ([*(earlier[0] if earlier else []), *have], path, line)
        else:
            spans[printed] = ([*earlier[0], *have], earlier[1], earlier[2])
    return {k: (sorted(set(v[0]), key=Version), v[1], v[2]) for k, v in spans.items()}


def _requires(data: Dict[str, object], have: List[str]) -> List[List[str]]:
    """The `kernels` requirement of the releases in have: (first, last, requirement)."""
    tags = [str(t) for t in data["tags"]]  # type: ignore[attr-defined]
    out = []
    for requirement, runs in data.get("kernels") or []:  # type: ignore[attr-defined]
        held = [t for t in ex.tags_in_runs(tags, runs) if t in have]
        if held:
            out.append([held[0], held[-1], str(requirement)])
    return sorted(out, key=lambda r: Version(r[0]))


def entries(pattern: object, path: Path = FIXTURE) -> List[Dict[str, object]]:
    """One catalog entry per printed form, the first and last release that print it."""
    if not path.is_file():
        return []
    data = load(path)
    spans = _spans(data)
    out: List[Dict[str, object]] = []
    for number, (printed, (have, file, line)) in enumerate(
            sorted(spans.items(), key=lambda s: (Version(s[1][0][0]), s[1][1], s[1][2])), 1):
        head = ADVICE.split(printed, 1)[0].rstrip(".")
        entry: Dict[str, object] = {
            "id": f"hf-{number:03d}", "printed": printed,
            "pattern": head_pattern(pattern, head),  # type: ignore[arg-type]
            "location": f"transformers=={have[0]}:{file}:{line}", "first": have[0],
            "last": have[-1], "mechanism": "transformers_check", "category": kind(printed)}
        if _captures(printed):
            entry["captures"] = _captures(printed)
        if corroborates(printed):
            entry["weight"] = "defer"
        elif printed in set(data.get("logged") or []):  # type: ignore[call-overload]
            entry["weight"] = "logged"  # a warning: any error the report shows outranks it
        elif WRAPS.search(printed):
            entry["weight"] = "wrapped"
        entry["remedy"] = REMEDY[str(kind(printed))]
        if "kernels" in printed.lower():
            entry["requires"] = _requires(data, have)
        out.append(entry)
    return out


REMEDY = {
    "not_installed": "install the package transformers names into this interpreter (flash-attn "
                     "built for its torch: fadoctor fix --print-pins; kernels at the release's "
                     "pin), or attn_implementation='sdpa'",
    "version_conflict": "install flash-attn (or kernels) at or above the floor the message names, "
                        "built for this torch, or attn_implementation='sdpa'",
    "dtype_unsupported": "load the model with torch_dtype=torch.bfloat16 (or float16)",
    "no_gpu": "put the model on the GPU (device_map='cuda' or model.to('cuda')) with a CUDA "
              "build of torch that sees the GPU, or attn_implementation='sdpa'",
    "gpu_unsupported": "FlashAttention-3 needs compute capability 9.0 (Hopper): use "
                       "attn_implementation='flash_attention_2' or 'sdpa' below it",
    "platform_unsupported": "flash_attn does not run on Ascend NPU: attn_implementation='sdpa'",
    "torch_version_mismatch": "install the torch the message names (fadoctor fix --print-pins), "
                              "or attn_implementation='eager'",
}


def load(path: Path = FIXTURE) -> Dict[str, object]:
    loaded: Dict[str, object] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


if __name__ == "__main__":
    FIXTURE.write_text(yaml.safe_dump(read(Path(sys.argv[1])), width=200), encoding="utf-8")
