"""`fix --verify`: a plan proven in a throwaway copy before it is called proven. A fresh venv of
the target's base interpreter gets a copy of the target's site-packages (so it sees the same
packages, and pip and uv write only into the copy), the plan's commands run there with the copy's
interpreter, the checks run again on it, and the findings before and after are compared. The
target's files are never written; the copy is removed afterwards. Each command runs under a time
bound, without a shell, and progress goes to stderr."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from fadoctor.report import Report, Severity
from fadoctor.safety.shell import Installer

Key = Tuple[str, str, str]  # check id, category, subject
_PATHS = ("import json, sys, sysconfig; p = sysconfig.get_paths(); "
          "print(json.dumps([p['purelib'], p['platlib'], sys.prefix]))")


@dataclass
class Ran:
    command: str
    returncode: Optional[int]  # None: it ran past its time bound
    tail: str = ""


@dataclass
class Verified:
    """What the plan did in the copy: the commands run, and the findings it took away or added."""

    ran: List[Ran] = field(default_factory=list)
    gone: List[str] = field(default_factory=list)
    new: List[str] = field(default_factory=list)
    torch_before: Optional[str] = None
    torch_after: Optional[str] = None

    @property
    def commands_ok(self) -> bool:
        return all(r.returncode == 0 for r in self.ran)

    @property
    def proven(self) -> bool:
        return self.commands_ok and not self.new


def problems(report: Report) -> Dict[Key, str]:
    """The report's warnings and errors, by check, category and subject."""
    return {(c.id, f.category.value, f.subject or ""): f"{c.id} {f.message}"
            for c in report.checks for f in c.findings if f.severity != Severity.INFO}


def _paths(python: str) -> Tuple[Path, Path, Path]:
    out = subprocess.run([python, "-c", _PATHS], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    purelib, platlib, prefix = json.loads(out)
    return Path(purelib), Path(platlib), Path(prefix)


def make_copy(target: str, where: Path, say: Callable[[str], None]) -> str:
    """A venv under `where` whose site-packages is a copy of the target's; its interpreter."""
    say("making a throwaway environment")
    env = where / "env"
    subprocess.run([target, "-m", "venv", "--without-pip", str(env)], check=True,
                   capture_output=True, timeout=120)
    copy = str(env / "bin" / "python")
    theirs, ours = _paths(target), _paths(copy)
    for src, dst in {(theirs[0], ours[0]), (theirs[1], ours[1])}:
        say(f"copying {src.name} of the target")
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    return copy


def run_line(line: str, cwd: Path, timeout: float) -> Ran:
    """One command as fadoctor wrote it (NAME=value words, parts joined by `&&`), without a shell."""
    env = dict(os.environ)
    here = cwd
    words = shlex.split(line)
    parts: List[List[str]] = [[]]
    for w in words:
        if w == "&&":
            parts.append([])
        else:
            parts[-1].append(w)
    for part in parts:
        while part and "=" in part[0] and part[0].split("=", 1)[0].isidentifier():
            name, value = part.pop(0).split("=", 1)
            env[name] = value
        if part[:1] == ["cd"]:
            here = here / part[1]
            continue
        try:
            done = subprocess.run(part, cwd=here, env=env, capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Ran(line, None, f"ran past {timeout:.0f} s")
        except OSError as exc:
            return Ran(line, 127, str(exc))
        if done.returncode != 0:
            return Ran(line, done.returncode, (done.stdout + done.stderr)[-1500:])
    return Ran(line, 0)


def verify(target: str, installer: Installer, commands_for: Callable[[Installer], Sequence[str]],
           check: Callable[[str], Report], before: Report, timeout: float = 900.0,
           say: Callable[[str], None] = lambda m: print(f"fadoctor fix --verify: {m}",
                                                         file=sys.stderr)) -> Verified:
    """Run the commands `commands_for` writes for the copy's interpreter in a throwaway copy of
    the target, then `check` the copy; compare with `before` (the target's report)."""
    result = Verified(torch_before=_torch(before))
    with tempfile.TemporaryDirectory(prefix="fadoctor-verify-") as tmp:
        copy = make_copy(target, Path(tmp), say)
        mine = Installer(python=copy, pip=installer.pip, known=True)
        deadline = time.monotonic() + timeout
        for line in commands_for(mine):
            left = deadline - time.monotonic()
            say(f"running {line}")
            ran = run_line(line, Path(tmp), max(left, 1.0))
            result.ran.append(ran)
            if ran.returncode != 0:
                break
        say("checking the copy again")
        after = check(copy)
        old, now = problems(before), problems(after)
        result.gone = [old[k] for k in old if k not in now]
        result.new = [now[k] for k in now if k not in old]
        result.torch_after = _torch(after)
    return result


def _torch(report: Report) -> Optional[str]:
    return report.environment.torch


def render_verified(v: Verified) -> str:
    lines = [("Proven in a throwaway copy" if v.proven else "Not proven") + ":"]
    for ran in v.ran:
        mark = "ok" if ran.returncode == 0 else ("timed out" if ran.returncode is None
                                                 else f"failed ({ran.returncode})")
        lines.append(f"  [{mark}] {ran.command}")
        if ran.returncode != 0 and ran.tail:
            lines += [f"      {t}" for t in ran.tail.strip().splitlines()[-6:]]
    lines += [f"  gone: {g}" for g in v.gone] or ["  no finding went away"]
    lines += [f"  new:  {n}" for n in v.new]
    if v.torch_before != v.torch_after:
        lines.append(f"  torch moved: {v.torch_before} -> {v.torch_after}")
    else:
        lines.append(f"  torch unmoved: {v.torch_before}")
    lines.append("The target was not changed.")
    return "\n".join(lines) + "\n"
