"""The build, install-isolation, toolchain and loader messages seen around installing or importing
flash-attention, read from primary sources: pip and uv (build isolation) and ninja at their release
tags, nvcc's host-compiler gates (crt/host_config.h) and its driver binary in NVIDIA's
nvidia-cuda-nvcc / nvidia-cuda-crt wheels, the gcc driver and glibc's ld.so binaries of a Debian
release; recorded in tests/fixtures/build_excerpts.yaml (the messages only), and turned into
catalog entries offline for tools/gen_messages.py. Record: python tools/build_sources.py OUT.yaml
[NAME=GIT_DIR ...] [BINARY=LABEL@FILE ...] (LABEL: `package==version:path in the wheel`, or
`package version:path` for a distribution's package); what OUT.yaml holds already is kept."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import message_extract as ex
import yaml

Row = Tuple[str, int, str, str]  # path, line, printed, a value the printed form hides ("" if none)


@dataclass(frozen=True)
class Message:
    """One message: where its literal is (a regex whose group `lit` is it), and how the printed
    form is assembled (a field filled by another literal of the same release, placeholders named)."""

    prefix: str
    path: str
    find: str
    category: str
    names: Tuple[str, ...] = ()  # placeholder names, matched to the fields from the right
    fill: Tuple[str, str] = ("", "")  # (path, regex): the literal the filled field prints
    field: str = r"%s|\{[^{}]*\}"  # the field filled: the first that matches
    weight: str = "corroborate"  # or "named": no hand-written mechanism reads it


@dataclass(frozen=True)
class Repo:
    name: str
    repo: str
    tags: str
    messages: Tuple[Message, ...]


_PIP_EXC = "src/pip/_internal/exceptions.py"
_PIP_RUN = r"(?P<lit>\{escape\(command_description\)\}\[/\] did not run successfully\.)"
_PIP_STEP = ("src/pip/_internal/distributions/sdist.py",
             r'runner_with_spinner_message\(\s*"(?P<lit>Getting requirements to build wheel)"')
_PIP_ERRORED = (r"['\"](?P<lit>Command errored out with exit status \{\}: \{\} ['\"]\s*"
                r"['\"]Check the logs for full command output\.)['\"]")
_PIP_EGG_INFO = r"command_desc=['\"](?P<lit>python setup\.py egg_info)['\"]"
_PIP_LEGACY = "src/pip/_internal/operations/build/metadata_legacy.py"
_PIP_GENERATE = "src/pip/_internal/operations/generate_metadata.py"
_UV_HINT = (r'"(?P<lit>This error likely indicates that (?:a package|`?\{\w*\}`?(?:@\{\w+\})?`?) '
            r"depends on `?\{\w*\}`?, but doesn't declare it as a build dependency\.)")
REPOS = (
    # pip's subprocess error names the step that failed: flash-attn's setup.py imports torch while
    # pip gets the build requirements (PEP 517) or runs egg_info (legacy), in its isolated env.
    Repo("pip", "pypa/pip", r"^\d+\.\d+(?:\.\d+)?$", (
        Message("pip", _PIP_EXC, _PIP_RUN, "build_isolation", fill=_PIP_STEP),
        Message("pip", _PIP_EXC, _PIP_RUN, "build_isolation",
                fill=("src/pip/_internal/operations/build/metadata_legacy.py",
                      r'command_desc="(?P<lit>python setup\.py egg_info)"')),
        # before 22.0: "Command errored out with exit status 1: python setup.py egg_info Check
        # the logs ...", its two string literals joined (utils/subprocess.py, then exceptions.py)
        *(Message("pip", path, _PIP_ERRORED, "build_isolation", names=("exit_status",),
                  fill=(step, _PIP_EGG_INFO), field=r"(?<=: )\{\}")
          for path, step in (("src/pip/_internal/utils/subprocess.py", _PIP_GENERATE),
                             ("src/pip/_internal/utils/subprocess.py", _PIP_LEGACY),
                             (_PIP_EXC, _PIP_LEGACY))),
        # from 25.3 the resolver names the package and the failed step (the subprocess error's
        # command_description: resolution/resolvelib/candidates.py)
        Message("pip", _PIP_EXC, r"\(f\"(?P<lit>Failed to build '\{package_name\}' when "
                r"\{failed_step\.lower\(\)\})\"", "build_isolation", names=("package",),
                fill=_PIP_STEP, field=r"\{failed_step[^{}]*\}"))),
    Repo("uv", "astral-sh/uv", r"^\d+\.\d+\.\d+$", tuple(
        Message("uv", path, _UV_HINT, "build_isolation", names=("package", "dependency"))
        for path in ("crates/uv-build/src/lib.rs", "crates/uv-build/src/error.rs",
                     "crates/uv-build-frontend/src/error.rs"))),
    # ninja's summary when a compile step failed: the cause is the compiler's output above it.
    Repo("ninja", "ninja-build/ninja", r"^v\d+\.\d+\.\d+$", (
        Message("ninja", "src/ninja.cc", r'"(?:ninja: )?(?P<lit>build stopped: %s\.)', "build_toolchain",
                fill=("src/build.cc", r'\*err = "(?P<lit>subcommand failed)"')),)),
)
# Files of wheels and packages: (prefix, the file's name ends so, a regex on its strings (a
# header's lines) whose match is the literal, category, names, weight). A regex group is a number
# that differs by release (recorded beside the printed form); names go to the groups first, then
# to the format fields. nvcc's host-compiler gates are the #error lines of crt/host_config.h.
Binary = Tuple[str, str, str, str, Tuple[str, ...], str]
_LD = "ld-linux-x86-64.so.2"
_MSVC = r"Only the versions between (\d+) and (\d+) \(inclusive\) are supported!"
BINARY: Tuple[Binary, ...] = (
    ("nvcc", "bin/nvcc", r"'%s' died due to signal %d", "build_resources", ("tool", "signal"),
     "named"),
    ("nvcc", "bin/nvcc", r"nvcc cannot find a supported version of Microsoft Visual Studio\. "
     + _MSVC, "build_toolchain", ("msvc_min", "msvc_max"), "named"),
    # ptxas's own message when an allocation fails (the nvcc wheels of CUDA 11/12 ship ptxas,
    # not the nvcc driver); the same words could come from elsewhere, so it corroborates
    ("ptxas", "bin/ptxas", r"^Memory allocation failure$", "build_resources", (), "corroborate"),
    ("gcc", "gcc-12", r"^%s signal terminated program %s$", "build_resources",
     ("signal", "program"), "corroborate"),
    ("ld", _LD, r"^version `%s' not found \(required by %s\)$", "glibc_too_old",
     ("version", "object"), "corroborate"),
    ("ld", _LD, r"^cannot open shared object file$", "cuda_runtime_mismatch", (), "corroborate"),
    ("ld", _LD, r"^undefined symbol: %s", "torch_version_mismatch", ("symbol",), "corroborate"),
    ("cudahost", "host_config.h", r"unsupported GNU version! gcc versions later than (\d+) are "
     r"not supported!", "build_toolchain", ("gcc_max",), "corroborate"),
    ("cudahost", "host_config.h", r"unsupported Microsoft Visual Studio version! " + _MSVC,
     "build_toolchain", ("msvc_min", "msvc_max"), "named"),
)
MECHANISM = {"pip": "build_frontend", "uv": "build_frontend", "ninja": "build_tool",
             "nvcc": "compiler", "ptxas": "compiler", "gcc": "compiler",
             "cudahost": "compiler_gate", "ld": "loader"}


def _fields(literal: str, names: Tuple[str, ...]) -> str:
    """Rust/Python/C format fields as {name}: `{a}@{b}` is one value, names match from the right."""
    text = re.sub(r"\{\w*\}@\{\w*\}", "{}", literal)
    text = re.sub(r"%[sdu]|\{[^{}]*\}", "\0", text)
    count = text.count("\0")
    chosen = list(names[-count:]) if count and names else ["value"] * count
    for name in chosen:
        text = text.replace("\0", "{" + name + "}", 1)
    return text


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def read_text(message: Message, show: Callable[[str], str]) -> List[Tuple[int, str]]:
    """(line, printed) of each literal of one message in one release (none where it lacks it)."""
    text, out = show(message.path), []
    for found in re.finditer(message.find, text):
        # rich markup out; adjacent string literals joined
        literal = re.sub(r"\[/?\w*\]|['\"]\s*['\"]", "", found.group("lit"))
        if message.fill[0]:
            filled = re.search(message.fill[1], show(message.fill[0]))
            if filled is None:
                continue
            value = filled.group("lit")
            at = re.search(message.field, literal)
            if at is not None:  # `{failed_step.lower()}` prints the step in lower case
                value = value.lower() if ".lower()" in at.group(0) else value
                literal = literal[:at.start()] + value + literal[at.end():]
        out.append((_line(text, found.start("lit")), _fields(literal, message.names)))
    return out


def _git(git_dir: str, *args: str, check: bool = False) -> str:
    # a file missing at an old tag is no error; a path that is no repository is (check=True on
    # the tag list), lest an empty recording replace a real one
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True,
                          check=check).stdout


def read_repo(repo: Repo, git_dir: str) -> Dict[str, object]:
    tags = sorted((t for t in _git(git_dir, "tag", check=True).split() if re.match(repo.tags, t)),
                  key=_order)
    rows: Dict[Row, List[int]] = {}
    for index, tag in enumerate(tags):
        cache: Dict[str, str] = {}

        def show(path: str, tag: str = tag, cache: Dict[str, str] = cache) -> str:
            if path not in cache:
                cache[path] = _git(git_dir, "show", f"{tag}:{path}")
            return cache[path]

        for message in repo.messages:
            for line, printed in read_text(message, show):
                rows.setdefault((message.path, line, printed, ""), []).append(index)
    return {"origin": repo.repo, "points": tags,
            "rows": [[*row, ex.tag_runs(i)] for row, i in rows.items()]}


def _order(tag: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag))


def _lines(path: str) -> List[str]:
    """A header's lines, or a binary's printable strings (their line numbers mean nothing)."""
    if path.endswith(".h"):
        return Path(path).read_text(encoding="latin-1").splitlines()
    out = subprocess.run(["strings", "-n", "6", path], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def _printed(spec: Binary, hit: re.Match[str]) -> Tuple[str, str]:
    """The printed form (each number group a placeholder) and the numbers it hides."""
    text, names = hit.group(0), spec[4]
    for index in range(len(hit.groups()), 0, -1):
        start, end = hit.start(index) - hit.start(0), hit.end(index) - hit.start(0)
        text = text[:start] + "{" + names[index - 1] + "}" + text[end:]
    rest = names[len(hit.groups()):]
    return (_fields(text, rest) if rest else text), ",".join(hit.groups())


def binary_rows(lines: List[str], inside: str) -> List[Tuple[str, Row]]:
    """(prefix, row) of each message one file of a wheel or package has."""
    out: List[Tuple[str, Row]] = []
    for spec in (s for s in BINARY if inside.endswith(s[1])):
        hit = next(((n, m) for n, line in enumerate(lines, 1)
                    for m in [re.search(spec[2], line)] if m), None)
        if hit is not None:
            printed, values = _printed(spec, hit[1])
            out.append((spec[0], (inside, hit[0] if inside.endswith(".h") else 0, printed,
                                  values)))
    return out


def _version(label: str) -> str:
    """`package==version:file` (a wheel) or `package version:file` (a distribution's package)."""
    return re.split(r"==| ", label.split(":", 1)[0])[-1]


def read_binaries(binaries: List[Tuple[str, str]]) -> Dict[str, Dict[str, object]]:
    """label (`package==version:path in it`, or a distribution's `package version:path`) and
    the file on disk, oldest release first."""
    found: Dict[str, Dict[Row, List[int]]] = {}
    points: Dict[str, List[str]] = {}
    for label, path in sorted(binaries, key=lambda b: _order(_version(b[0]))):
        release, inside = label.split(":", 1)
        for prefix, row in binary_rows(_lines(path), inside):
            names = points.setdefault(prefix, [])
            if release not in names:
                names.append(release)
            found.setdefault(prefix, {}).setdefault(row, []).append(names.index(release))
    return {prefix: {"origin": "", "points": points[prefix],
                     "rows": [[*row, ex.tag_runs(i)] for row, i in rows.items()]}
            for prefix, rows in found.items()}


def load(path: Path) -> Dict[str, Dict[str, object]]:
    loaded: Dict[str, Dict[str, object]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def _spec(prefix: str, printed: str) -> Tuple[str, str]:
    """(category, weight) of a recorded printed form."""
    for repo in REPOS:
        for m in repo.messages:
            if m.prefix == prefix:
                return m.category, m.weight
    for spec in BINARY:  # its numbers and format fields are the printed form's placeholders
        shape = re.sub(r"\(\\d\+\)|%[sdu]", r"\\{\\w+\\}", spec[2])
        if spec[0] == prefix and re.search(shape, printed):
            return spec[3], spec[5]
    raise KeyError(f"{prefix}: {printed}")


def _location(data: Dict[str, object], point: str, path: str, line: int) -> str:
    where = f"{data['origin']}@{point}" if data["origin"] else point
    return f"{where}:{path}" + (f":{line}" if line else "")


def entries(recorded: Dict[str, Dict[str, object]], pattern: Callable[[str], str],
            remedy: Callable[[str, str], str]) -> List[Dict[str, object]]:
    """One entry per prefix and printed form: where its oldest release has it, the first and last
    release that print it, and the numbers it names by release (first, last, values)."""
    out: List[Dict[str, object]] = []
    for prefix in sorted(recorded, key=list(MECHANISM).index):
        data = recorded[prefix]
        points = [str(p) for p in data["points"]]  # type: ignore[attr-defined]
        spans: Dict[str, List[Tuple[int, str, int, str]]] = {}  # printed -> (index, path, line, values)
        for path, line, printed, values, runs in data["rows"]:  # type: ignore[attr-defined]
            for point in ex.tags_in_runs(points, runs):
                spans.setdefault(printed, []).append((points.index(point), path, line, values))
        for number, (printed, seen) in enumerate(sorted(spans.items(), key=lambda s: min(s[1])), 1):
            seen.sort()
            category, weight = _spec(prefix, printed)
            entry: Dict[str, object] = {
                "id": f"{prefix}-{number:03d}", "printed": printed, "pattern": pattern(printed),
                "location": _location(data, points[seen[0][0]], seen[0][1], seen[0][2]),
                "first": points[seen[0][0]], "last": points[seen[-1][0]],
                "mechanism": MECHANISM[prefix], "category": category, "weight": weight}
            names = re.findall(r"\{(\w+)\}", printed)
            if names:
                entry["captures"] = {n: n for n in names}
            entry["remedy"] = remedy(prefix, category)
            if seen[0][3]:
                entry["limits"] = _limits(points, seen)
            out.append(entry)
    return out


def _limits(points: List[str], seen: List[Tuple[int, str, int, str]]) -> List[List[str]]:
    """The numbers a printed form names, by runs of releases: [first, last, values]."""
    out: List[List[str]] = []
    for index, _, _, values in seen:
        if out and out[-1][2] == values:
            out[-1][1] = points[index]
        else:
            out.append([points[index], points[index], values])
    return out


def main(argv: List[str]) -> None:
    """OUT.yaml, then NAME=GIT_DIR (a REPOS name) and BINARY=LABEL@FILE, each read anew."""
    out = Path(argv[0])
    recorded = load(out) if out.is_file() else {}
    files = [a.split("=", 1)[1].rsplit("@", 1) for a in argv[1:] if a.startswith("BINARY=")]
    for arg in (a for a in argv[1:] if not a.startswith("BINARY=")):
        name, git_dir = arg.split("=", 1)
        recorded[name] = read_repo(next(r for r in REPOS if r.name == name), git_dir)
    if files:
        recorded.update(read_binaries([(label, path) for label, path in files]))
    out.write_text(yaml.safe_dump(recorded, width=200), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
