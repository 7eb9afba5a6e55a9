"""`fix --apply` and `fix --rollback FILE`: a plan run in the examined environment itself, after
a rollback file is written (the exact versions installed before, the interpreter, and, once the
plan ran, the commands that restore them); a rollback computes what changed since and undoes it
(uninstall what was added, reinstall with --no-deps what was removed or moved)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

from fadoctor.errors import InputError
from fadoctor.fix.verify import Ran, run_line
from fadoctor.safety.inert import one_line
from fadoctor.safety.shell import Installer, command, into, requirement

ROLLBACK_VERSION = 1
_FREEZE = ("import json, importlib.metadata as m; print(json.dumps({(d.metadata['Name'] or '')"
           ".lower().replace('_', '-'): d.version for d in m.distributions()}))")


def freeze(python: str) -> Dict[str, str]:
    """Every distribution the interpreter sees, name -> version (stdlib only: no pip needed)."""
    out = subprocess.run([python, "-c", _FREEZE], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    found: Dict[str, str] = json.loads(out)
    return {k: v for k, v in found.items() if k}


def restore_commands(before: Dict[str, str], now: Dict[str, str], inst: Installer) -> List[str]:
    """What takes `now` back to `before`: uninstall what was added, reinstall what moved."""
    added = sorted(set(now) - set(before))
    moved = sorted(k for k, v in before.items() if now.get(k) != v)
    out = [into(command("pip", "uninstall", "-y", *added), inst)] if added else []
    if moved:
        out.append(into(command("pip", "install", "--no-deps",
                                *(requirement(k, before[k]) for k in moved)), inst))
    return out


def write_rollback(path: Path, inst: Installer, before: Dict[str, str],
                   restore: Sequence[str] = ()) -> None:
    path.write_text(json.dumps({"rollback_version": ROLLBACK_VERSION, "python": inst.python,
                                "pip": inst.pip, "before": before, "restore": list(restore)},
                               indent=2) + "\n", encoding="utf-8")


def read_rollback(path: Path) -> Tuple[Installer, Dict[str, str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("rollback_version") != ROLLBACK_VERSION:
            raise ValueError("not a rollback file of this fadoctor")
        before = {str(k): str(v) for k, v in data["before"].items()}
        return Installer(python=str(data["python"]), pip=bool(data["pip"]), known=True), before
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise InputError(f"{path}: cannot read it as a rollback file: {one_line(str(exc))}") from None


def run_all(commands: Sequence[str], cwd: Path, say: Callable[[str], None],
            timeout: float = 1800.0) -> List[Ran]:
    ran: List[Ran] = []
    for line in commands:
        say(f"running {line}")
        ran.append(run_line(line, cwd, timeout))
        if ran[-1].returncode != 0:
            break
    return ran


def apply_plan(commands: Sequence[str], inst: Installer, rollback: Path,
               say: Callable[[str], None]) -> List[Ran]:
    """The rollback file first; then the commands; then the file gets the restoring commands."""
    before = freeze(inst.python)
    write_rollback(rollback, inst, before)
    say(f"rollback file written: {rollback}")
    ran = run_all(commands, rollback.resolve().parent, say)
    write_rollback(rollback, inst, before, restore_commands(before, freeze(inst.python), inst))
    return ran


def rollback_to(path: Path, say: Callable[[str], None]) -> List[Ran]:
    inst, before = read_rollback(path)
    return run_all(restore_commands(before, freeze(inst.python), inst), path.resolve().parent,
                   say)
