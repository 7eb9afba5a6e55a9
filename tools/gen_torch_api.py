"""Which names torch's Python modules define, by release: the names that appear or vanish
between releases (torch.library.wrap_triton from 2.6, torch.library.custom_op from 2.4, ...), read
from torch's wheels (one per minor release, any platform: the Python sources are the same) with
Python's own parser. Writes data/torch_api.yaml: module -> name -> [first, last] release that
defines it (last is null while the newest read still has it). Names present in every release read
are left out: they explain no error.

    python tools/gen_torch_api.py WHEEL... [--flash-attn GIT_DIR] [--check]
"""

from __future__ import annotations

import ast
import contextlib
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Set

import yaml
from packaging.version import Version

OUT = Path(__file__).resolve().parents[1] / "data" / "torch_api.yaml"
# the modules whose attributes callers of flash-attention reach for (flash-attn, transformers,
# vLLM, xformers): a custom-op or compile API, an attention API, a CUDA helper
MODULES = re.compile(r"^torch/(?:__init__|library|_library/\w+|compiler/__init__|cuda/__init__|"
                     r"amp/__init__|nn/attention/__init__|nn/attention/\w+|_dynamo/__init__|"
                     r"utils/_triton|utils/cpp_extension|_utils_internal|version)\.py$")


def module_name(path: str) -> str:
    return path[:-3].replace("/__init__", "").replace("/", ".")


def names(source: str) -> Set[str]:
    """The names a module binds at its top level (and under top-level if/try)."""
    found: Set[str] = set()

    def walk(body: List[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.Assign):
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update((a.asname or a.name).split(".")[0] for a in node.names
                             if a.name != "*")
            elif isinstance(node, ast.If):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                for handler in node.handlers:
                    walk(handler.body)
    with contextlib.suppress(SyntaxError):  # a file of a newer Python's syntax: no names
        walk(ast.parse(source).body)
    return {n for n in found if not n.startswith("__")}


def read_wheel(path: str) -> Dict[str, Set[str]]:
    """module -> names, with each package's submodules as its names too."""
    out: Dict[str, Set[str]] = {}
    with zipfile.ZipFile(path) as wheel:
        files = wheel.namelist()
        for name in files:
            if MODULES.match(name):
                out[module_name(name)] = names(wheel.read(name).decode("utf-8", "replace"))
        for name in files:  # torch.library's sibling packages: torch._library is a name of torch
            parts = name.split("/")
            if len(parts) >= 3 and parts[0] == "torch" and name.endswith(".py"):
                parent = ".".join(parts[:-2]) if parts[-1] == "__init__.py" else \
                    ".".join(parts[:-1])
                child = parts[-2] if parts[-1] == "__init__.py" else parts[-1][:-3]
                if parent in out and not child.startswith("__"):
                    out[parent].add(child)
    return out


def version_of(path: str) -> Version:
    found = re.search(r"torch-(\d+\.\d+\.\d+)", Path(path).name)
    if not found:
        raise SystemExit(f"not a torch wheel: {path}")
    return Version(found.group(1))


def generate(wheels: List[str]) -> Dict[str, object]:
    releases = sorted(((version_of(w), w) for w in wheels), key=lambda p: p[0])
    seen: Dict[str, Dict[str, List[Version]]] = {}
    for version, path in releases:
        for module, defined in read_wheel(path).items():
            for name in defined:
                seen.setdefault(module, {}).setdefault(name, []).append(version)
    every = [v for v, _ in releases]
    table: Dict[str, Dict[str, List[Optional[str]]]] = {}
    for module in sorted(seen):
        for name in sorted(seen[module]):
            have = seen[module][name]
            if have == every or (name.startswith("_") and module != "torch"):
                continue  # always there, or a private helper no caller names
            first, last = have[0], have[-1]
            table.setdefault(module, {})[name] = [str(first),
                                                  None if last == every[-1] else str(last)]
    return {"source": "torch's wheels, one per minor release (tools/gen_torch_api.py)",
            "releases": [str(v) for v in every], "modules": table}


def flash_attn_uses(git_dir: str, table: Dict[str, Dict[str, List[Optional[str]]]]
                    ) -> Dict[str, str]:
    """torch.X.Y -> where flash-attn first calls it (repo@tag:path:line), for the names of
    `table`: read at every release tag of Dao-AILab/flash-attention (flash_attn/, hopper/)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", git_dir, *args], capture_output=True,
                              text=True).stdout
    tags = sorted((t for t in git("tag").split() if re.match(r"^v\d+\.\d+\.\d+(\.post\d+)?$", t)),
                  key=lambda t: Version(t.lstrip("v")))
    wanted = {f"{m}.{n}" for m, ns in table.items() for n in ns}
    first: Dict[str, str] = {}
    for tag in tags:
        out = git("grep", "-n", "-E", r"torch\.[A-Za-z_][A-Za-z0-9_.]*", tag, "--",
                  "flash_attn/*.py", "hopper/*.py")
        for line in out.splitlines():
            _, path, number, text = line.split(":", 3)
            for dotted in re.findall(r"torch(?:\.[A-Za-z_]\w*)+", text):
                if dotted in wanted and dotted not in first:
                    first[dotted] = f"Dao-AILab/flash-attention@{tag}:{path}:{number}"
    return dict(sorted(first.items()))


def main(argv: List[str]) -> int:
    fa_dir = argv[argv.index("--flash-attn") + 1] if "--flash-attn" in argv else None
    wheels = [a for a in argv if a.endswith(".whl")]
    data = generate(wheels)
    if fa_dir is not None:
        data["flash_attn_uses"] = flash_attn_uses(fa_dir, data["modules"])  # type: ignore[arg-type]
    text = ("# generated by tools/gen_torch_api.py from torch's release wheels: do not edit\n"
            + yaml.safe_dump(data, sort_keys=False, width=200))
    if "--check" in argv:
        return 0 if OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
