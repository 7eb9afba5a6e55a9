"""Break real environments (CPU torch), paste every remedy `check` prints as it is printed, in a
shell where the examined environment is not active, and count which ones ran and fixed their
finding; `fix --print-pins` commands and `fix --verify` the same way (docs/plans.md)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

TORCH = "torch==2.13.0"  # the CPU build pip finds here (a local wheel)
STEP = 900  # seconds any one step may take
SRC = str(Path(__file__).resolve().parents[1] / "src")
Key = Tuple[str, str]  # check id, subject


@dataclass
class Tried:
    """One remedy (or one plan), pasted: what ran and what it did to its finding."""

    scenario: str
    check: str
    subject: str
    remedy: str
    commands: List[str]
    ran: Optional[bool] = None  # None: not run (it needs a source this machine cannot reach)
    fixed: Optional[bool] = None
    torch_before: Optional[str] = None
    torch_after: Optional[str] = None
    unreachable: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)  # programs this machine lacks (nvidia-smi)
    new: List[str] = field(default_factory=list)
    still: str = ""  # the finding's message after the remedy, when it stayed
    tail: str = ""


def _run(argv: Sequence[str], env: Optional[Dict[str, str]] = None,
         timeout: float = STEP) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"ran past {timeout:.0f} s")


def shell_env(work: Path) -> Dict[str, str]:
    """No examined environment active: this tool's own venv first on PATH (where a bare `pip`
    would go), no PYTHONPATH, no VIRTUAL_ENV or CONDA_PREFIX."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env["HOME"] = env.get("HOME", str(work))
    return env


def fadoctor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "200"}
    env.pop("VIRTUAL_ENV", None)
    return _run([sys.executable, "-m", "fadoctor", *args], env=env)


def check(python: str) -> Dict[str, Any]:
    done = fadoctor("check", "--python", python, "--format", "json")
    if not done.stdout.strip().startswith("{"):
        raise RuntimeError(f"check gave no report (exit {done.returncode}): {done.stderr[-500:]}")
    report: Dict[str, Any] = json.loads(done.stdout)
    return report


def problems(report: Dict[str, Any]) -> Dict[Key, Dict[str, Any]]:
    """The warnings and errors, by check id and subject."""
    return {(c["id"], f.get("subject") or ""): f for c in report["checks"]
            for f in c["findings"] if f["severity"] != "info"}


def torch_of(python: str) -> Optional[str]:
    done = _run([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                timeout=60)
    return done.stdout.strip() if done.returncode == 0 else None


_HOSTS: Dict[str, bool] = {}


def unreachable(commands: Sequence[str]) -> List[str]:
    """The https hosts the commands name that this machine cannot reach (one probe each)."""
    out: List[str] = []
    for host in sorted({h for c in commands for h in re.findall(r"https://([^/\s']+)", c)}):
        if host not in _HOSTS:
            try:
                urllib.request.urlopen(f"https://{host}/", timeout=10).close()
                _HOSTS[host] = True
            except OSError as exc:  # an HTTP error status still means it answered
                _HOSTS[host] = hasattr(exc, "code")
        if not _HOSTS[host]:
            out.append(host)
    return out


# -- environments ---------------------------------------------------------------------------

def _purelib(python: str) -> Path:
    done = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                timeout=60)
    return Path(done.stdout.strip())


def base(work: Path) -> Path:
    """A venv with CPU torch (none with --no-torch), built once: every scenario starts from a
    copy of its packages."""
    torch = os.environ.get("FADOCTOR_MEASURE_TORCH", TORCH)
    env = work / ("base" if torch else "base-no-torch")
    if not (env / "ready").is_file():
        shutil.rmtree(env, ignore_errors=True)
        _must([sys.executable, "-m", "venv", str(env)])
        if torch:
            _must([str(env / "bin" / "python"), "-m", "pip", "install", "-q", torch])
        (env / "ready").write_text(torch, encoding="utf-8")
    return env


def _must(argv: Sequence[str], env: Optional[Dict[str, str]] = None) -> None:
    done = _run(argv, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {(done.stdout + done.stderr)[-800:]}")


def fresh(work: Path, name: str, uv: bool) -> str:
    """A new environment with base's packages (no pip when uv made it); its interpreter."""
    env = work / name / "env"
    shutil.rmtree(env.parent, ignore_errors=True)
    if uv:
        _must([_uv(), "venv", "-q", "--python", sys.executable, str(env)])
    else:
        _must([sys.executable, "-m", "venv", "--without-pip", str(env)])
    python = str(env / "bin" / "python")
    skip = shutil.ignore_patterns("pip", "pip-*") if uv else None
    shutil.copytree(_purelib(str(base(work) / "bin" / "python")), _purelib(python),
                    symlinks=True, dirs_exist_ok=True, ignore=skip)
    if uv:  # torch as uv would have left it
        for installer in _purelib(python).glob("*.dist-info/INSTALLER"):
            installer.write_text("uv\n", encoding="utf-8")
    return python


def _uv() -> str:
    return shutil.which("uv") or str(Path(sys.executable).parent / "uv")


def _pip(python: str, *args: str) -> None:
    _must([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args])


# -- the broken environments ------------------------------------------------------------------

def _fa2_without_extension(python: str, work: Path) -> None:
    """flash-attn as a build with its CUDA step skipped leaves it: Python files importing
    flash_attn_2_cuda, a RECORD listing no extension."""
    site = _purelib(python)
    files = {"flash_attn/__init__.py": '__version__ = "2.8.3"\nimport flash_attn_2_cuda\n',
             "flash_attn-2.8.3.dist-info/METADATA": "Metadata-Version: 2.1\nName: flash_attn\n"
                                                    "Version: 2.8.3\nRequires-Dist: torch\n",
             "flash_attn-2.8.3.dist-info/INSTALLER": "pip\n"}
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text, encoding="utf-8")
    (site / "flash_attn-2.8.3.dist-info/RECORD").write_text(
        "".join(f"{p},,\n" for p in files) + "flash_attn-2.8.3.dist-info/RECORD,,\n",
        encoding="utf-8")


def _twice(python: str, work: Path) -> None:
    """einops in site-packages and again in an old --target folder a .pth puts on sys.path."""
    site = _purelib(python)
    _pip(python, "--no-deps", "einops==0.8.1")
    _pip(python, "--no-deps", "einops==0.8.0", "--target", str(site / "old_target"))
    (site / "old-target.pth").write_text("old_target\n", encoding="utf-8")


def _uv_installs(*requirements: str) -> Callable[[str, Path], None]:
    return lambda python, work: _must([_uv(), "pip", "install", "-q", "--python", python,
                                       "--no-deps", *requirements])


def _installs(*requirements: str) -> Callable[[str, Path], None]:
    return lambda python, work: _pip(python, "--no-deps", *requirements)


# name: (what breaks it, made by uv), cheapest first
SCENARIOS: Dict[str, Tuple[Callable[[str, Path], None], bool]] = {
    "installed-twice": (_twice, False),
    "fa2-without-extension": (_fa2_without_extension, False),
    "torchvision-for-another-torch": (_installs("torchvision==0.19.0"), False),
    "flash-attn-4-without-cutlass-dsl": (_installs("flash-attn-4==4.0.0b36"), False),
    "no-pip-uv-torchvision": (_uv_installs("torchvision==0.19.0"), True),
    "no-pip-uv-flash-attn-4": (_uv_installs("flash-attn-4==4.0.0b36"), True),
    "stray-nvidia-runtime": (_installs("nvidia-cuda-runtime-cu12==12.4.127"), False),
    "torchaudio-for-another-torch": (_installs("torchaudio==2.4.0"), False),
    "xformers-for-another-torch": (_installs("xformers==0.0.28.post1"), False),
}
# Not built: the CPU torch's METADATA requires no triton, so no triton is outside its range.
NOT_BUILT = {"triton-outside-torch-range": "the CPU torch build requires no triton (its "
                                           "METADATA has no triton Requires-Dist)"}


# -- pasting --------------------------------------------------------------------------------

def restore(env: Path) -> None:
    shutil.rmtree(env)
    shutil.copytree(env.parent / "pristine", env, symlinks=True)


def paste(tried: Tried, env: Path, before: Dict[Key, Dict[str, Any]], work: Path) -> None:
    """Run tried.commands in a bash with the env inactive, then check again."""
    python = str(env / "bin" / "python")
    tried.unreachable = unreachable(tried.commands)
    path = shell_env(work)["PATH"]
    tried.missing = sorted({c.split()[0] for c in tried.commands
                            if not shutil.which(c.split()[0], path=path)
                            and not c.startswith("/")})
    if tried.unreachable or tried.missing or not tried.commands:
        tried.tail = f"needs {', '.join(tried.missing)}, not on this machine" \
            if tried.missing else ("" if tried.commands else "no commands printed")
        return
    restore(env)
    tried.torch_before = torch_of(python)
    tried.ran = True
    for line in tried.commands:
        done = _run(["bash", "-c", line], env=shell_env(work))
        if done.returncode != 0:
            tried.ran, tried.tail = False, (done.stdout + done.stderr)[-600:]
            break
    tried.torch_after = torch_of(python)
    after = problems(check(python))
    gone = [k for k in before if k not in after]
    tried.new = [f"{c} {s}" for c, s in after if (c, s) not in before]
    key = (tried.check, tried.subject)
    tried.fixed = key not in after if key in before else bool(gone) and not tried.new
    tried.still = after[key]["message"] if key in after else ""


def plan_commands(python: str, *extra: str) -> List[str]:
    done = fadoctor("fix", "--python", python, "--print-pins", "-f", "pip", *extra)
    return [line for line in done.stdout.splitlines() if line.strip()
            and not line.startswith("#")]


def measure(name: str, work: Path, say: Callable[[str], None]) -> Dict[str, Any]:
    breaks, uv = SCENARIOS[name]
    started = time.monotonic()
    python = fresh(work, name, uv)
    breaks(python, work)
    env = Path(python).parents[1]
    shutil.copytree(env, env.parent / "pristine", symlinks=True)
    before = problems(check(python))
    say(f"{name}: {sorted(before)}")
    tries: List[Tried] = []
    for (check_id, subject), finding in before.items():
        for remedy in finding["remedies"]:
            if remedy["commands"]:
                tries.append(Tried(name, check_id, subject, remedy["summary"],
                                   remedy["commands"]))
    for extra in ((), ("--keep-torch",)):
        label = " ".join(("fix --print-pins", *extra))
        tries.append(Tried(name, "plan", label, label, plan_commands(python, *extra)))
    for tried in tries:
        paste(tried, env, before, work)
        say(f"  {tried.check} {tried.subject}: ran={tried.ran} fixed={tried.fixed} "
            f"torch {tried.torch_before}->{tried.torch_after} {tried.unreachable or ''}")
    restore(env)
    verify = fadoctor("fix", "--python", python, "--verify")
    return {"scenario": name, "torch": torch_of(python), "findings": [f"{c} {s}" for c, s in before],
            "tries": [asdict(t) for t in tries], "verify_exit": verify.returncode,
            "verify_tail": (verify.stdout + verify.stderr)[-1500:],
            "seconds": round(time.monotonic() - started)}


# -- the table ------------------------------------------------------------------------------

def _mark(value: Optional[bool]) -> str:
    return "-" if value is None else ("yes" if value else "no")


def table(results: Sequence[Dict[str, Any]]) -> str:
    rows = ["scenario | check | subject | remedy | ran | fixed | torch moved", "--- | " * 6 + "---"]
    for res in results:
        for t in res["tries"]:
            moved = ("-" if t["ran"] is None else
                     _mark(t["torch_before"] != t["torch_after"]))
            why = f"needs an unreachable source ({', '.join(t['unreachable'])})" \
                if t["unreachable"] else (t["tail"] if t["ran"] is None else _mark(t["ran"]))
            rows.append(f"{res['scenario']} | {t['check']} | {t['subject']} | "
                        f"{t['remedy'][:60]} | {why} | {_mark(t['fixed'])} | {moved}")
        rows.append(f"{res['scenario']} | fix --verify | | | exit {res['verify_exit']} "
                    f"({'proven' if res['verify_exit'] == 0 else 'not proven'}) | |")
    return "\n".join(rows)


def totals(results: Sequence[Dict[str, Any]]) -> Dict[str, Dict[str, int]]:
    out: Dict[str, Dict[str, int]] = {}
    for kind in ("remedy", "plan"):
        tries = [t for r in results for t in r["tries"] if (t["check"] == "plan") == (kind == "plan")]
        run = [t for t in tries if t["ran"] is not None]
        out[kind] = {"printed": len(tries),
                     "needs_unreachable_source": sum(bool(t["unreachable"]) for t in tries),
                     "needs_what_is_not_here": sum(bool(t["missing"]) for t in tries),
                     "no_commands": sum(not t["commands"] for t in tries),
                     "distinct": len({(t["scenario"], *t["commands"]) for t in tries}),
                     "run": len(run), "ran": sum(bool(t["ran"]) for t in run),
                     "fixed": sum(bool(t["fixed"]) for t in run),
                     "torch_moved": sum(t["torch_before"] != t["torch_after"] for t in run)}
    out["verify"] = {"envs": len(results),
                     "proven": sum(r["verify_exit"] == 0 for r in results)}
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                        help=f"default: all of {', '.join(SCENARIOS)}")
    parser.add_argument("--no-torch", action="store_true",
                        help="environments without torch (the checks that need it skip)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--work", type=Path, help="folder for the environments (kept: the base "
                                                  "venv with torch is reused)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.scenarios if n not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; there are {', '.join(SCENARIOS)}")
    if args.no_torch:
        os.environ["FADOCTOR_MEASURE_TORCH"] = ""
    work = args.work or Path(tempfile.mkdtemp(prefix="fadoctor-remedies-"))
    results: List[Dict[str, Any]] = []
    failed: Dict[str, str] = dict(NOT_BUILT)
    for name in args.scenarios or list(SCENARIOS):
        try:
            results.append(measure(name, work, lambda s: print(s, file=sys.stderr, flush=True)))
        except (RuntimeError, OSError, ValueError) as exc:
            failed[name] = str(exc)[-400:]
        finally:
            shutil.rmtree(work / name, ignore_errors=True)
        if args.out:
            args.out.write_text(json.dumps({"results": results, "totals": totals(results),
                                            "not_run": failed}, indent=1), encoding="utf-8")
    print(table(results))
    print(json.dumps(totals(results), indent=1))
    for name, why in failed.items():
        print(f"not run: {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
