"""Generate data/flash_attn_api.yaml: flash-attn's Python API at every release tag (v0.2.1 ..
v2.x) read from the upstream repository: each module under flash_attn/, the public names it
defines or imports (what `from flash_attn.X import name` finds), each public function's
parameters and how many values it returns, with the releases that have them, so triage can say
which release added or removed what a caller asks for. Run: python tools/gen_fa_api.py GIT_DIR
[--check]."""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import message_extract as ex

OUT = Path(__file__).resolve().parents[1] / "data" / "flash_attn_api.yaml"
RELEASE = re.compile(r"^v\d+\.\d+\.\d+(?:\.post\d+)?$")
Spans = Dict[str, List[int]]  # key -> the indexes of the tags that have it


def order(tag: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag))


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True,
                          check=True).stdout


def _module(path: str) -> str:
    return path[:-3].replace("/", ".").removesuffix(".__init__")


def _params(node: ast.FunctionDef) -> List[Tuple[str, bool]]:
    """(parameter, whether a call must pass it: no default) in order."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    return [*((p.arg, i < first_default) for i, p in enumerate(positional)),
            *((p.arg, d is None) for p, d in zip(a.kwonlyargs, a.kw_defaults))]


def _public(name: str) -> bool:
    return not name.startswith("_")


def _callable(name: str, interface: bool) -> bool:
    """A function callers reach for: public, or in an interface module private but not a dunder
    (ring-attention packages call flash_attn_interface's _flash_attn_forward)."""
    return _public(name) or (interface and not name.startswith("__"))


def _own(node: ast.ImportFrom) -> bool:
    """An import of flash_attn's own module (a package's re-export), not of typing or torch."""
    return node.level > 0 or (node.module or "").startswith("flash_attn")


def _top(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that bind a module's names: its top level, and the branches of a top-level
    `if` or `try` (optional imports such as `if is_flash_attn_2_available(): from flash_attn ...`)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top([*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            yield from _top([*node.body, *node.orelse, *node.finalbody,
                             *(s for h in node.handlers for s in h.body)])
        else:
            yield node


def read_module(text: str, package: bool, interface: bool = False, imports: bool = False
                ) -> Iterator[Tuple[str, Optional[List[Tuple[str, bool]]]]]:
    """(name, its parameters if a function) bound at the top level of one module: its functions
    (an interface module's private ones too), public classes and assignments, the re-exports of
    a package (__init__) from its own modules, and with `imports` every name it imports."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in _top(tree.body):
        if isinstance(node, ast.FunctionDef) and _callable(node.name, interface):
            yield node.name, _params(node)
        elif isinstance(node, ast.ClassDef) and _public(node.name):
            yield node.name, None
        elif isinstance(node, ast.Import) and interface:
            # the compiled extension an interface module binds (`import flash_attn_2_cuda as
            # flash_attn_cuda`, `flash_attn_gpu` from 2.7.3): callers import it from there
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                if _public(name) and name != "torch":
                    yield name, None
        elif isinstance(node, ast.ImportFrom) and (imports or (package and _own(node))):
            for alias in node.names:
                name = alias.asname or alias.name
                if name != "*" and _public(name):
                    yield name, None
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and _public(target.id):
                    yield target.id, None


def _arity(node: ast.FunctionDef) -> Optional[int]:
    """How many values the function returns, where every `return` of its own body (not of a
    nested function) is a tuple literal of one length: what a caller's `a, b, c = f(...)`
    unpacks."""
    sizes = set()
    stack: List[ast.AST] = list(node.body)
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(item, ast.Return):
            if not isinstance(item.value, ast.Tuple) or any(
                    isinstance(e, ast.Starred) for e in item.value.elts):
                return None
            sizes.add(len(item.value.elts))
        stack.extend(ast.iter_child_nodes(item))
    return sizes.pop() if len(sizes) == 1 else None


def arities(text: str, interface: bool) -> Iterator[Tuple[str, int]]:
    """(function, how many values it returns) of one module's top-level functions."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in _top(tree.body):
        if isinstance(node, ast.FunctionDef) and _callable(node.name, interface):
            count = _arity(node)
            if count is not None:
                yield node.name, count


Release = Tuple[str, Iterable[Tuple[str, str]]]  # (tag, (path, source) of each module file)


def installed(paths: List[str]) -> List[str]:
    """The .py files a release installs: setup.py's find_packages() takes a directory only when
    it holds an __init__.py, so a module under one without (flash_attn/ops/triton/ before v2.2.0)
    is in the repository but not in the wheel."""
    packages = {p.rsplit("/", 1)[0] for p in paths if p.endswith("/__init__.py")}
    out = []
    for path in paths:
        if not path.endswith(".py"):
            continue
        parts = path.split("/")[:-1]
        if all("/".join(parts[:i]) in packages for i in range(1, len(parts) + 1)):
            out.append(path)
    return out


def read(git_dir: str) -> Dict[str, object]:
    tags = sorted((t for t in _git(git_dir, "tag").split() if RELEASE.match(t)), key=order)

    def files(tag: str) -> Iterator[Tuple[str, str]]:
        paths = _git(git_dir, "ls-tree", "-r", "--name-only", tag, "flash_attn").split()
        for path in installed(paths):
            yield path, _git(git_dir, "show", f"{tag}:{path}")
    found = collect([(tag, files(tag)) for tag in tags], returns=True)
    found["environment"] = environment(git_dir, tags)
    return found


_ENV = re.compile(r"os\.(?:getenv|environ\.get)\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']|"
                  r"os\.environ\[[\"']([A-Z][A-Z0-9_]+)[\"']\]")


def environment(git_dir: str, tags: List[str]) -> Dict[str, str]:
    """The environment variables setup.py reads at each tag (what a build can be told)."""
    spans: Spans = {}
    for index, tag in enumerate(tags):
        text = _git(git_dir, "show", f"{tag}:setup.py")
        for found in _ENV.finditer(text):
            have = spans.setdefault(found.group(1) or found.group(2), [])
            if index not in have:
                have.append(index)
    return {k: ex.tag_runs(v) for k, v in sorted(spans.items())}


def collect(releases: List[Release], keep: Callable[[str], bool] = lambda name: True,
            imports: bool = False, returns: bool = False) -> Dict[str, object]:
    """The modules, names (those `keep` accepts; with `imports`, the names each module imports
    too), parameters and required parameters of each release (with `returns`, how many values
    each function returns), as runs of indexes into the releases' tags."""
    modules: Spans = {}
    names: Spans = {}
    params: Dict[str, Spans] = {}
    required: Dict[str, Spans] = {}
    counts: Dict[str, Spans] = {}
    for index, (_, files) in enumerate(releases):
        for path, source in files:
            module = _module(path)
            modules.setdefault(module, []).append(index)
            for name, count in (arities(source, "interface" in module) if returns else ()):
                counts.setdefault(f"{module}:{name}", {}).setdefault(str(count), []).append(index)
            for name, args in read_module(source, path.endswith("__init__.py"),
                                           "interface" in module, imports):
                if not keep(name):
                    continue
                key = f"{module}:{name}"
                if index not in names.setdefault(key, []):
                    names[key].append(index)
                for arg, must in args or ():
                    for table in (params, *([required] if must else [])):
                        have = table.setdefault(key, {}).setdefault(arg, [])
                        if index not in have:
                            have.append(index)
    found: Dict[str, object] = {
        "tags": [tag for tag, _ in releases],
        "modules": {k: ex.tag_runs(v) for k, v in sorted(modules.items())},
        "names": {k: ex.tag_runs(v) for k, v in sorted(names.items())},
        "parameters": _runs(params), "required": _runs(required)}
    if returns:
        found["returns"] = _runs(counts)
    return found


def _runs(table: Dict[str, Spans]) -> Dict[str, Dict[str, str]]:
    return {k: {p: ex.tag_runs(v) for p, v in sorted(ps.items())} for k, ps in sorted(table.items())}


def render(found: Dict[str, object]) -> str:
    header = ("# Generated by tools/gen_fa_api.py from Dao-AILab/flash-attention at every release "
              "tag (flash_attn/**/*.py: modules, public names and functions, function parameters "
              "and the required ones, how many values a function returns; setup.py's environment "
              "variables; each with the runs of `tags` indexes that have it); do not edit.\n")
    return header + yaml.safe_dump(found, sort_keys=False, width=100)


def emit(out: Path, text: str, check: bool) -> int:
    """Write a generated file, or with --check exit 1 when it would change."""
    if check:
        return 0 if out.read_text(encoding="utf-8") == text else 1
    out.write_text(text, encoding="utf-8")
    return 0


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", help="a clone (or bare mirror) of Dao-AILab/flash-attention")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file would change")
    args = parser.parse_args(argv)
    text = render(read(args.git_dir))
    return emit(OUT, text, args.check)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
