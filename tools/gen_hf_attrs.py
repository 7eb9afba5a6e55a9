"""Generate data/transformers_attrs.json: the attributes of transformers' model classes at each
release wheel, so that triage can answer "'Qwen2_5_VLAttention' object has no attribute
'_flash_attn_uses_top_left_mask'" with the releases whose class has it.

A class's attributes are what its body binds (methods, class-level assignments), what any of its
methods assigns on `self` (`self.is_causal = False`), and what its bases within transformers have
(a base is looked up in the class's own module first, then in every other module the wheel holds:
modeling_utils' PreTrainedModel, generation's GenerationMixin). A base outside transformers
(torch.nn.Module) adds nothing, so an attribute torch provides is never in the table and never said
to be missing. Only the model classes (transformers/models/*/modeling_*.py) that a caller reaches
into are kept (attention modules, decoder layers, the models), and of each only the attributes that
some releases of the class have and others lack, and that the class or a base in a model's file
binds (PreTrainedModel's and GenerationMixin's own attributes, shared by every model, are left out;
they still count where a class has them). `merged` lists, for each per-backend attention class a
release removed (LlamaFlashAttention2), the attributes its last release had and the
<Model>Attention class it was merged into lacks.
Run: python tools/gen_hf_attrs.py WHEEL_DIR [--check] (the same wheels as tools/gen_hf_api.py)."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import message_extract as ex

OUT = Path(__file__).resolve().parents[1] / "data" / "transformers_attrs.json"
SOURCES = re.compile(r"^transformers/(?:models/\w+/modeling_\w+|modeling_\w+|generation/\w+|"
                     r"integrations/\w+|cache_utils|pytorch_utils)\.py$")
MODEL = re.compile(r"^transformers/models/\w+/modeling_\w+\.py$")
# the classes a caller reaches into: attention modules, decoder layers, the models themselves
KEPT = re.compile(r"Attention|Attn|Model$|ForCausalLM$|ForConditionalGeneration$|DecoderLayer$")
# the per-backend attention classes the attention refactor merged into <Model>Attention
MERGED = re.compile(r"(?:Flash|Sdpa|Flex)Attention2?$")
# class name -> (bases' names, the attributes its own body binds)
Classes = Dict[str, Tuple[Tuple[str, ...], FrozenSet[str]]]


def _base(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):  # Generic[T], nn.ModuleList[...]
        return _base(node.value)
    return None


def _targets(node: ast.AST) -> List[ast.expr]:
    if isinstance(node, ast.Assign):
        out: List[ast.expr] = []
        for target in node.targets:
            out.extend(target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])
        return out
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def _own(cls: ast.ClassDef) -> FrozenSet[str]:
    names: Set[str] = set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        names.update(t.id for t in _targets(item) if isinstance(t, ast.Name))
    for node in ast.walk(cls):
        names.update(t.attr for t in _targets(node) if isinstance(t, ast.Attribute)
                     and isinstance(t.value, ast.Name) and t.value.id == "self")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "setattr" and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            names.add(node.args[1].value)
    return frozenset(names)


def classes_of(source: str) -> Classes:
    """The classes a module defines at its top level (or under a top-level if/try)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out: Classes = {}
    pending: List[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.ClassDef):
            bases = tuple(b for b in map(_base, node.bases) if b)
            out[node.name] = (bases, _own(node))
        elif isinstance(node, ast.If):
            pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
    return out


def release(wheel: Path) -> Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]]:
    """Each model class of one wheel: every attribute it has (its bases' included), and those
    that its own body or a base in a model's file binds (the ones the table keeps)."""
    modules: Dict[str, Classes] = {}
    with zipfile.ZipFile(wheel) as archive:
        for path in sorted(n for n in archive.namelist() if SOURCES.match(n)):
            modules[path] = _parsed(archive.read(path))
    anywhere: Dict[str, Tuple[str, str]] = {}  # class name -> the first module defining it
    for path, classes in modules.items():
        for name in classes:
            anywhere.setdefault(name, (path, name))
    memo: Dict[Tuple[str, str, bool], FrozenSet[str]] = {}

    def full(path: str, name: str, local: bool, seen: FrozenSet[Tuple[str, str]]
             ) -> FrozenSet[str]:
        if (path, name, local) in memo:
            return memo[(path, name, local)]
        bases, own = modules[path][name]
        attrs = set(own)
        for base in bases:
            where = (path, base) if base in modules[path] else anywhere.get(base)
            if (where and where not in seen and where != (path, name)
                    and (not local or MODEL.match(where[0]))):
                attrs |= full(where[0], where[1], local, seen | {where})
        memo[(path, name, local)] = frozenset(attrs)
        return memo[(path, name, local)]

    out: Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]] = {}
    for path, classes in modules.items():
        if MODEL.match(path):
            for name in classes:
                start = frozenset({(path, name)})
                had = out.get(name, (frozenset(), frozenset()))
                out[name] = (had[0] | full(path, name, False, start),
                             had[1] | full(path, name, True, start))
    return out


_MEMO: Dict[str, Classes] = {}


def _parsed(raw: bytes) -> Classes:
    key = hashlib.sha256(raw).hexdigest()
    if key not in _MEMO:
        _MEMO[key] = classes_of(raw.decode("utf-8"))
    return _MEMO[key]


def collect(wheel_dir: Path) -> Dict[str, object]:
    wheels = {Version(w.name.split("-")[1]): w for w in wheel_dir.glob("transformers-*.whl")}
    tags = [str(v) for v in sorted(wheels)]
    with ProcessPoolExecutor() as pool:
        found = list(pool.map(release, [wheels[Version(t)] for t in tags], chunksize=4))
    present: Dict[str, List[int]] = {}
    attrs: Dict[str, Dict[str, List[int]]] = {}
    local: Dict[str, Set[str]] = {}
    for index, classes in enumerate(found):
        for name, (have, own) in classes.items():
            present.setdefault(name, []).append(index)
            local.setdefault(name, set()).update(a for a in own if not a.startswith("__"))
            for attr in have:
                attrs.setdefault(name, {}).setdefault(attr, []).append(index)
    kept: Dict[str, Dict[str, str]] = {}
    for name, by_attr in sorted(attrs.items()):
        if not KEPT.search(name):
            continue
        differs = {a: ex.tag_runs(i) for a, i in sorted(by_attr.items())
                   if a in local[name] and i != present[name]}
        if differs:
            kept[name] = differs
    merged = _merged(found, present, len(tags))
    return {"tags": tags,
            "classes": {n: ex.tag_runs(present[n]) for n in sorted({*kept, *merged})},
            "attributes": kept, "merged": merged}


def _merged(found: List[Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]]],
            present: Dict[str, List[int]], releases: int) -> Dict[str, List[str]]:
    """The per-backend attention classes a release removed (LlamaFlashAttention2, ...SdpaAttention:
    merged into the model's Attention class in the attention refactor), each with what its last
    release had that the class it was merged into did not: what code written for it still reads."""
    out: Dict[str, List[str]] = {}
    for name, runs in present.items():
        backend = MERGED.search(name)
        if backend is None or runs[-1] == releases - 1:
            continue
        last = found[runs[-1]]
        into = last.get(name[:backend.start()] + "Attention")
        lost = last[name][1] - (into[0] if into else frozenset())
        if lost:
            out[name] = sorted(a for a in lost if not a.startswith("__"))
    return dict(sorted(out.items()))


def render(found: Dict[str, object]) -> str:
    """JSON, one class to a line (a YAML reader takes 50 times as long to load it)."""
    about = ("Generated by tools/gen_hf_attrs.py from transformers' release wheels: each model "
             "class's releases (runs of `tags` indexes) and, of its attributes (its bases' within "
             "transformers included), those some of its releases lack; do not edit.")
    lines = ["{", f'"about": {json.dumps(about)},', f'"tags": {json.dumps(found["tags"])},']
    for key in ("classes", "attributes", "merged"):
        table: Dict[str, object] = found[key]  # type: ignore[assignment]
        rows = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in table.items()]
        lines.append(f'"{key}": {{\n' + ",\n".join(rows) + "\n}" + ("," if key != "merged" else ""))
    return "\n".join(lines) + "\n}\n"


def main(argv: Optional[List[str]] = None) -> int:
    return ex.wheel_generator_main(__doc__ or "", "transformers release wheels",
                                   lambda wheels: render(collect(wheels)), OUT, argv)

if __name__ == "__main__":
    sys.exit(main())
