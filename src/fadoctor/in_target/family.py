"""Stage `fa2`, `fa3`, `fa4`, `vllm_fa` (parameter `family`): import one flash-attention family
and each of its compiled extensions, after torch."""

import importlib
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

from .context import Context
from .protocol import failure
from .tables import FAMILIES, TAIL


def _find_spec(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _family_installed(family: str, dists: Dict[str, str]) -> Tuple[Optional[str], Optional[str]]:
    spec = FAMILIES[family]
    for dist in spec["distributions"]:
        if dist in dists:
            return dist, dists[dist]
    return None, None


def _text(module: Any, attribute: str) -> Optional[str]:
    """A module attribute as text, whatever the module put there (a path object, a version
    object, an int, something whose str() raises): what cannot be read is unknown."""
    try:
        value = getattr(module, attribute, None)
        if value is None or isinstance(value, str):
            return value
        if attribute == "__file__":
            return os.fspath(value) if isinstance(value, os.PathLike) else None
        return str(value)[:200] or None
    except Exception:
        return None


def _import_extensions(names: List[str], context: Context) -> List[Dict[str, Any]]:
    """Import each compiled extension that is present (a package's __init__ may not have)."""
    out = []  # type: List[Dict[str, Any]]
    for name in names:
        if name not in sys.modules and ("." in name or not _find_spec(name)):
            continue  # absent, or a submodule its package did not load
        try:
            with context.importing(name):
                module = importlib.import_module(name)
        except BaseException as exc:
            out.append({"module": name, "ok": False, "error": ("%s" % exc)[:TAIL],
                        "exception_type": type(exc).__name__})
            continue
        out.append({"module": name, "ok": True, "file": _text(module, "__file__")})
    return out


def run(context: Context, family: str) -> Dict[str, Any]:
    spec = FAMILIES[family]
    dist, version = _family_installed(family, context.distributions())
    # Without metadata (a source-tree install, a copied folder), a top-level module still counts.
    if dist is None and not any(_find_spec(m) for m in spec["markers"]):
        return {"installed": False}
    result = {"installed": True, "distribution": dist, "version": version}  # type: Dict[str, Any]
    try:
        # Every family needs torch; a torch failure is not the family's (nor a crash or a hang
        # while torch imports: the parent knows from the announcement which import it was).
        with context.importing("torch"):
            importlib.import_module("torch")
    except BaseException as exc:
        result["import"] = {"ok": False, "failure": {
            "kind": "skipped", "reason": "needs torch, which failed to import: %s: %s"
            % (type(exc).__name__, exc), "exception_type": type(exc).__name__}}
        return result
    result["import"] = _import_family(spec, context)
    return result


def _import_family(spec: Dict[str, Any], context: Context) -> Dict[str, Any]:
    """The first of the family's module spellings that imports, or why none does."""
    last = None  # type: Optional[BaseException]
    for module_name in spec["modules"]:
        try:
            with context.importing(module_name):
                module = importlib.import_module(module_name)
        except BaseException as exc:  # ImportError, OSError, RuntimeError, SystemExit ...
            if last is None or not isinstance(exc, ModuleNotFoundError):
                last = exc
            if isinstance(exc, ModuleNotFoundError) and exc.name and module_name.startswith(
                    exc.name):
                continue  # this spelling of the module is absent; try the next one
            break
        extensions = _import_extensions(spec["extensions"] + spec.get("optional", []), context)
        loaded = [e["file"] for e in extensions
                  if e["ok"] and e["module"] in spec["extensions"]]
        return {"ok": True, "data": {
            "module": module_name, "file": _text(module, "__file__"),
            "version": _text(module, "__version__"),
            "extension": loaded[0] if loaded else None, "extensions": extensions}}
    assert last is not None
    return {"ok": False, "failure": failure(last, "import_error")}
