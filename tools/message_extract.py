"""Read the messages one upstream source file prints: TORCH_CHECKs in C++ (on one line or
several), raises and asserts in Python (through ast), imports in Python (what Python prints when
the module is missing); each as (line, printed form), a value computed at run time as {name}."""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

Found = Tuple[int, str]
_CALL = re.compile(r"\bTORCH_CHECK\(")
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.){0,400})"')
_NAME = re.compile(r"[A-Za-z_]\w{0,40}")


def _split_args(text: str, start: int) -> Optional[List[str]]:
    """The top-level comma-separated arguments of a call whose '(' ends at start."""
    depth, args, current, i = 1, [], [], start
    while i < len(text) and i - start < 2000:
        c = text[i]
        if c == '"':
            end = text.index('"', i + 1) if '"' in text[i + 1:i + 800] else -1
            while end > 0 and text[end - 1] == "\\":
                end = text.index('"', end + 1)
            if end < 0:
                return None
            current.append(text[i:end + 1])
            i = end + 1
            continue
        depth += (c in "([{") - (c in ")]}")
        if depth == 0:
            args.append("".join(current))
            return args
        if c == "," and depth == 1:
            args.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    return None


def placeholder(expression: str) -> str:
    """{name} for a value computed at run time: the last identifier of its expression."""
    names = [n for n in _NAME.findall(expression)
             if n not in {"std", "to_string", "self", "str", "format", "c_str", "int"}]
    return "{" + (names[-1] if names else "value") + "}"


def _cpp_message(args: List[str]) -> str:
    """c10's TORCH_CHECK prints its message arguments one after another."""
    parts = []
    for arg in args:
        for piece in re.split(r"\+(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", arg):
            piece = piece.strip()
            literals = _LITERAL.findall(piece)
            if literals and _LITERAL.sub("", piece).strip() == "":
                parts.append("".join(literals).replace('\\"', '"').replace("\\n", " "))
            elif piece:
                parts.append(placeholder(piece))
    return "".join(parts)


def cpp_checks(text: str) -> Iterator[Tuple[int, str, str]]:
    """(line, printed, condition) of each TORCH_CHECK; a check without a message prints c10's
    `Expected <cond> to be true, but got false`."""
    for m in _CALL.finditer(text):
        args = _split_args(text, m.end())
        if not args:
            continue
        cond = " ".join(args[0].split())
        printed = " ".join(_cpp_message(args[1:]).split()) if len(args) > 1 else \
            f"Expected {cond} to be true, but got false"
        yield text.count("\n", 0, m.start()) + 1, printed, cond


def _py_text(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if isinstance(node, ast.JoinedStr):
        return "".join(_py_text(v) or "" if isinstance(v, ast.Constant) else
                       placeholder(ast.unparse(v.value)) if isinstance(v, ast.FormattedValue)
                       else "" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _py_text(node.left), _py_text(node.right)
        return None if left is None and right is None else \
            (left or placeholder(ast.unparse(node.left))) + \
            (right or placeholder(ast.unparse(node.right)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "format":
        base = _py_text(node.func.value)
        if base is None:
            return None
        values = iter(placeholder(ast.unparse(a)) for a in node.args)
        return re.sub(r"\{\{\}\}|\{\{\d\}\}", lambda _: next(values, "{value}"), base)
    return None


def _unescape(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def py_raises(text: str) -> Iterator[Tuple[int, str, str]]:
    """(line, printed, condition) of each raise X("...") and assert cond, "..." with a message."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        message: Optional[ast.expr] = None
        cond = ""
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            message = node.exc.args[0]
        elif isinstance(node, ast.Assert) and node.msg is not None:
            message, cond = node.msg, ast.unparse(node.test)
        printed = _py_text(message) if message is not None else None
        if printed and printed.strip() and isinstance(node, ast.stmt):
            yield node.lineno, " ".join(_unescape(printed).split()), cond


def py_reasons(text: str, function: str) -> Iterator[Tuple[int, str, str]]:
    """(line, printed, function) of each `return False, "reason"` in the functions whose name
    matches `function`: a support gate that hands its reason to a caller who prints it."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or not re.search(function, fn.name):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) \
                    and len(node.value.elts) == 2:
                printed = _py_text(node.value.elts[1])
                if printed and printed.strip():
                    yield node.lineno, " ".join(_unescape(printed).split()), fn.name


def py_imports(text: str) -> Iterator[Tuple[int, str, str]]:
    """(line, printed, module) of each import of a module outside the standard library: Python
    prints `No module named '<module>'` when it is missing; one inside a try block is optional."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    optional = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
                for stmt in t.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in optional or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue  # an import guarded by try/except is optional
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level \
            else []
        for module in modules:
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in {"flash_attn", "torch"}:
                yield node.lineno, f"No module named '{module}'", module


def tag_runs(indexes: List[int]) -> str:
    """Tag indexes as runs ("0-4,7"): how the excerpt fixtures say which tags print a row."""
    runs: List[List[int]] = []
    for i in indexes:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def tags_in_runs(tags: List[str], runs: object) -> List[str]:
    """The tags that runs written by `tag_runs` name, in order."""
    out: List[str] = []
    for run in str(runs).split(","):
        first, _, last = run.partition("-")
        out += tags[int(first):int(last or first) + 1]
    return out


def write_or_check(out: Path, text: str, check: bool) -> int:
    """A generator's last step: write its data file, or with --check say whether it is current."""
    if check:
        same = out.exists() and out.read_text() == text
        print("up to date" if same else f"{out.name} differs: rerun without --check")
        return 0 if same else 1
    out.write_text(text)
    print(f"wrote {out}")
    return 0


def wheel_generator_main(doc: str, what: str, build: Callable[[Path], str], out: Path,
                         argv: Optional[List[str]] = None) -> int:
    """A wheel-reading generator's command line: WHEEL_DIR [--check], then write or check."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("wheels", type=Path, help=f"a folder of {what}")
    parser.add_argument("--check", action="store_true", help="fail if the data file differs")
    args = parser.parse_args(argv)
    return write_or_check(out, build(args.wheels), args.check)
