"""Generate data/transformers_generate.yaml: the keyword arguments transformers' generate() passes
into a model's own methods at each release, so that triage can answer "LlavaLlamaForCausalLM.
forward() got an unexpected keyword argument 'cache_position'" with the release that began to pass
it (model code written before it, often remote code, does not accept it).

Two routes, read from each release wheel's source with the ast module:
- `prepare`: what generate() puts into model_kwargs (`model_kwargs["cache_position"] = ...` in
  transformers/generation/utils.py), which it hands to the model's prepare_inputs_for_generation
  (and the methods a model names for it, such as nougat's prepare_inputs_for_inference);
- `forward`: what prepare_inputs_for_generation returns for the model's forward — the keys that
  GenerationMixin's own (generation/utils.py) or LlamaForCausalLM's (models/llama/
  modeling_llama.py, the one most model code copied or inherited) puts into model_inputs — and
  the keywords generate() adds when it calls the model (`self(**model_inputs, return_dict=True)`).
Run: python tools/gen_hf_generate.py WHEEL_DIR [--check] (the same wheels as tools/gen_hf_api.py:
the latest release of each minor)."""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Set

import yaml
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import message_extract as ex

OUT = Path(__file__).resolve().parents[1] / "data" / "transformers_generate.yaml"
GENERATION = ("transformers/generation/utils.py", "transformers/generation_utils.py")  # 4.25+, before
LLAMA = "transformers/models/llama/modeling_llama.py"
_INPUTS = "model_inputs"


def _key(node: ast.expr) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _subscript_keys(tree: ast.AST, name: str) -> Set[str]:
    """Keys assigned as `name["key"] = ...`."""
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                        and target.value.id == name and _key(target.slice) is not None):
                    out.add(_key(target.slice))  # type: ignore[arg-type]
    return out


def _returned_keys(function: ast.FunctionDef) -> Set[str]:
    """What prepare_inputs_for_generation puts into model_inputs: `model_inputs["k"] = `,
    `model_inputs.update({"k": ...})`, `model_inputs = {"k": ...}`, a returned dict literal."""
    out = _subscript_keys(function, _INPUTS)
    for node in ast.walk(function):
        literal: Optional[ast.expr] = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "update" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == _INPUTS and node.args):
            literal = node.args[0]
        elif isinstance(node, ast.Return) or (isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == _INPUTS for t in node.targets)):
            literal = node.value
        if isinstance(literal, ast.Dict):
            out.update(k for k in map(_key, [k for k in literal.keys if k is not None]) if k)
        if isinstance(literal, ast.Call) and isinstance(literal.func, ast.Name) \
                and literal.func.id == "dict":
            out.update(k.arg for k in literal.keywords if k.arg)
    return out


def _functions(tree: ast.AST, name: str) -> List[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]


def _call_keywords(tree: ast.AST) -> Set[str]:
    """Keywords generate() adds when it calls the model on model_inputs: `self(**model_inputs,
    return_dict=True, ...)` (also through a variable holding the forward)."""
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(
                k.arg is None and isinstance(k.value, ast.Name) and k.value.id == _INPUTS
                for k in node.keywords):
            out.update(k.arg for k in node.keywords if k.arg)
    return out


def release(wheel: Path) -> Dict[str, Set[str]]:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        path = next((p for p in GENERATION if p in names), None)
        generation = ast.parse(archive.read(path)) if path else None
        llama = ast.parse(archive.read(LLAMA)) if LLAMA in names else None
    prepare: Set[str] = set()
    forward: Set[str] = set()
    if generation is not None:
        prepare = _subscript_keys(generation, "model_kwargs")
        forward = _call_keywords(generation)
        for function in _functions(generation, "prepare_inputs_for_generation"):
            forward |= _returned_keys(function)
    if llama is not None:
        for function in _functions(llama, "prepare_inputs_for_generation"):
            forward |= _returned_keys(function)
    return {"prepare": prepare, "forward": forward, "files": names & {*GENERATION, LLAMA}}


def collect(wheel_dir: Path) -> Dict[str, object]:
    wheels = {Version(w.name.split("-")[1]): w for w in wheel_dir.glob("transformers-*.whl")}
    tags = [str(v) for v in sorted(wheels)]
    table: Dict[str, Dict[str, List[int]]] = {"prepare": {}, "forward": {}}
    found = [release(wheels[Version(tag)]) for tag in tags]
    for index, routes in enumerate(found):
        for route, keys in routes.items():
            if route == "files":
                continue
            for key in keys:
                table[route].setdefault(key, []).append(index)
    covered = {"prepare": _first(found, GENERATION), "forward": _first(found, (LLAMA,))}
    return {"tags": tags, "covered_from": covered,
            **{route: {k: ex.tag_runs(v) for k, v in sorted(keys.items())}
               for route, keys in table.items()}}


def _first(found: List[Dict[str, Set[str]]], paths: tuple) -> int:
    """The first release whose wheel has one of the files a route reads: a key first passed at that
    release may have been passed before it, in code the table does not read."""
    return next(i for i, routes in enumerate(found) if routes["files"] & set(paths))


def render(found: Dict[str, object]) -> str:
    about = ("# Generated by tools/gen_hf_generate.py from transformers' release wheels (the latest"
             " of each minor): the keyword arguments generate() passes into a model's "
             "prepare_inputs_for_generation (`prepare`) and forward (`forward`), each with the runs"
             " of `tags` indexes that pass it; do not edit.\n")
    return about + yaml.safe_dump(found, sort_keys=False, width=100)


def main(argv: Optional[List[str]] = None) -> int:
    return ex.wheel_generator_main(__doc__ or "", "transformers release wheels",
                                   lambda wheels: render(collect(wheels)), OUT, argv)

if __name__ == "__main__":
    sys.exit(main())
