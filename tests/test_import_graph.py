"""fadoctor's packages and modules depend one way: read every import of src/fadoctor with ast (nothing
is imported), and fail on a cycle between modules (any import: at module level, in a function, or
for type checking only), a cycle between packages, or an import across a layer it must not cross."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "fadoctor"
MAX_LINES = 400

# (importer, imported): never. Probes, the matrix and the renderers sit below the checks; the
# checks and `fix` share their install knowledge through `install`, below both.
FORBIDDEN = [("probes", "checks"), ("matrix", "checks"), ("render", "checks"),
             ("checks", "fix"), ("fix", "checks"), ("install", "checks"), ("install", "fix")]


def unit_of(module: str) -> Optional[str]:
    """The package (or top-level module) a dotted fadoctor module belongs to; None for the root
    package itself (`from fadoctor import __version__`)."""
    parts = module.split(".")
    if parts[0] != "fadoctor" or len(parts) < 2:
        return None
    name = parts[1]
    return name if (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file() else None


def imports(path: Path) -> Iterator[Tuple[str, bool]]:
    """Every fadoctor module `path` imports (at module level, in a function, or for typing
    only), with whether the import is for type checking only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: Set[int] = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                             and "TYPE_CHECKING" in ast.unparse(block.test)
                             for stmt in block.body for n in ast.walk(stmt)}
    package = ".".join(("fadoctor", *path.relative_to(PACKAGE).parent.parts))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{alias.name}" for alias in node.names] if base == "fadoctor" \
                else [base]
        else:
            continue
        yield from ((name, id(node) in typing_only) for name in names)


@functools.cache
def graph(runtime_only: bool) -> Dict[str, Set[str]]:
    edges: Dict[str, Set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        unit = unit_of("fadoctor." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        if unit is None:
            continue
        for name, typing_only in imports(path):
            target = unit_of(name)
            if target is not None and target != unit and not (runtime_only and typing_only):
                edges.setdefault(unit, set()).add(target)
    return edges


def module_of(name: str) -> Optional[str]:
    """The fadoctor module (a file, or a package's `__init__`) that importing `name` runs last:
    `fadoctor.facts.model.Facts` is `fadoctor.facts.model`, `fadoctor.render` its `__init__`."""
    parts = name.split(".")
    while len(parts) > 1:
        where = PACKAGE.joinpath(*parts[1:])
        if where.with_suffix(".py").is_file() or (where / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


@functools.cache
def module_graph() -> Dict[str, Set[str]]:
    """Module -> the modules it imports, every import counted. A package's `__init__` that
    imports a module which imports the package back is a cycle here."""
    edges: Dict[str, Set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        module = ".".join(("fadoctor", *(parts[:-1] if parts[-1] == "__init__" else parts)))
        for name, _typing_only in imports(path):
            target = module_of(name)
            if target is not None and target != module:
                edges.setdefault(module, set()).add(target)
    return edges


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Each cycle once, as the path that closes it (depth-first search)."""
    found: List[List[str]] = []
    seen: Set[str] = set()

    def visit(node: str, path: List[str]) -> None:
        for nxt in sorted(edges.get(node, ())):
            if nxt in path:
                loop = path[path.index(nxt):] + [nxt]
                if not any(set(loop) == set(c) for c in found):
                    found.append(loop)
            elif nxt not in seen:
                visit(nxt, [*path, nxt])
        seen.add(node)

    for start in sorted(edges):
        visit(start, [start])
    return found


def test_the_walk_sees_the_imports_it_must_judge() -> None:
    """The graph is real: known edges are there, lazy (in-function) imports included."""
    edges = graph(runtime_only=False)
    assert {"install", "matrix", "report"} <= edges["checks"]
    assert "install" in edges["fix"] and "checks" in edges["cli"]  # cli imports checks lazily
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_no_cycle_between_modules() -> None:
    # Every import counts, deferred and typing-only ones too: a cycle is broken by moving the
    # shared piece down, not by hiding one direction of it.
    assert cycles(module_graph()) == []


def test_the_module_walk_sees_the_imports_it_must_judge() -> None:
    edges = module_graph()
    assert "fadoctor.facts.model" in edges["fadoctor.collect.assemble"]
    assert "fadoctor.render.options" in edges["fadoctor.render.text"]
    assert "fadoctor.in_target.distributions" in edges["fadoctor.in_target.context"]  # in a function


def test_at_most_12_modules_loose_at_the_top() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 12, loose


def test_every_package_says_what_it_owns() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), init.relative_to(PACKAGE)


def test_no_cycle_between_packages() -> None:
    # An import for type checking only creates no dependency when the program runs.
    assert cycles(graph(runtime_only=True)) == []


@pytest.mark.parametrize(("importer", "imported"), FORBIDDEN)
def test_no_import_across_a_layer(importer: str, imported: str) -> None:
    # Here even imports for type checking only count: the layer would still know the other.
    assert imported not in graph(runtime_only=False).get(importer, set())


def _modules() -> List[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_over_400_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES
