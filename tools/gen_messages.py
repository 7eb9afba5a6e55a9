"""Generate data/messages.yaml: the environment-relevant messages flash-attention prints, read
from the upstream repository at every release tag (FA 0.x-2.x C++ API, setup.py and interfaces;
hopper/ (FA3); flash_attn/cute/ (FA4) at every fa4 beta) and those its wrappers print about it,
each with its printed form, a bounded pattern whose captures are the placeholders, where it lives,
the releases that print it, its category and the fix. Run: python tools/gen_messages.py GIT_DIR
[--excerpts OUT.yaml] (or --from-excerpts FILE to re-derive offline); --wrappers FILE
[NAME=GIT_DIR ...] adds the wrappers of tools/wrapper_sources.py (read from NAME's repository,
recorded in FILE). Other sources are listed in tools/message_sources.py with their citations."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import message_extract as ex
import message_sources as ms
import wrapper_sources as ws

Row = Tuple[str, str, int, str]  # source, path, line, printed
Reader = Callable[[str], Iterator[Tuple[int, str, str]]]


@dataclass(frozen=True)
class Source:
    name: str  # the id prefix
    tags: str  # which release tags print it (a regex)
    paths: Tuple[str, ...]  # fnmatch patterns
    read: Reader
    mechanism: str


# Benchmarks and tests beside a package's modules: their messages are about their own options.
_NOT_RUN = re.compile(r"^(?:bench|test)\w*\.py$")
V2, FA4 = r"^v\d+\.\d+\.\d+(?:\.post\d+)?$", r"^fa4-v4\.\d+\.\d+\.beta\d+$"
SOURCES = (
    Source("fa-csrc", V2, ("csrc/flash_attn/flash_api.cpp", "csrc/flash_attn/fmha_api.cpp"),
           ex.cpp_checks, "flash_api_check"),
    # the ROCm build's Composable Kernel backend (from v2.6.0): its own dtype and head-dim checks
    Source("fa-ck", V2, ("csrc/flash_attn_ck/mha_*.cpp",), ex.cpp_checks, "flash_api_check"),
    Source("fa-setup", V2, ("setup.py",), ex.py_raises, "setup_check"),
    Source("fa-py", V2, ("flash_attn/flash_attn_interface.py",
                         "flash_attn/flash_attn_triton_amd/*.py"), ex.py_raises, "interface_check"),
    Source("fa3", f"{V2}|{FA4}", ("hopper/flash_api.cpp",), ex.cpp_checks, "flash_api_check"),
    Source("fa3-py", f"{V2}|{FA4}", ("hopper/setup.py", "hopper/flash_attn_interface.py"),
           ex.py_raises, "setup_check"),
    # the interface, and the kernel classes whose constructors assert the arch they run on
    # ("Only SM 10.x and 11.x are supported", flash_fwd_sm100.py)
    Source("fa4", FA4, ("flash_attn/cute/interface.py", "flash_attn/cute/__init__.py",
                        "flash_attn/cute/flash_fwd*.py", "flash_attn/cute/flash_bwd*.py"),
           ex.py_raises, "interface_check"),
    Source("fa4-import", FA4, ("flash_attn/cute/*.py",), ex.py_imports, "import_missing"),
)
# Which messages are about the environment, and what they mean: (test on the text, category),
# the first that matches wins. Shape and stride checks are the caller's bugs; a feature compiled
# out of a build (FLASHATTENTION_DISABLE_*) is the builder's choice.
SKIP = re.compile(r"sizes\(\)|stride|build does not support (?!headdim)|but queries have|"
                  r"divisible by page_size|page_table\.shape|tensor must have \d|"
                  r"Paged KV does not support|Block sparsity \+ paged KV|"
                  # the caller's options on flash_attn/cute: sinks, custom score/mask functions
                  r"[Ll]earnable[ _]sink (?:tensor )?must be|vec_size|2CTA")
KINDS: Tuple[Tuple[str, str], ...] = (
    (r"^No module named '\w+'$", "not_installed"),
    (r"^No module named 'cutlass\.", "version_conflict"),  # a DSL older or newer than pinned
    (r"GPU archs of|\bgfx\d|ROCm|not supported on AMD", "rocm"),
    (r"[Oo]nly supported on CUDA \d|CUDA_HOME|MSVC is required|nvcc was not found|"
     r"csrc/\w+ is missing", "build_toolchain"),
    # setup.py of v0.x: the toolkit's CUDA is not torch's
    (r"does not match the version used to compile Pytorch", "cuda_runtime_mismatch"),
    (r"Unsupported platform", "platform_unsupported"),
    (r"head ?dim|headdim|head[ _]size|head_dim|\bhdimv?\b", "head_dim_unsupported"),
    # "SM 8.0", "Sm90", "SM8x" (flash_attn/cute: features gated by the arch they run on)
    (r"is_sm\d|Ampere|Hopper|Blackwell|compute capability|GPUs? or newer|\bSM ?\d{2,3}\b|"
     r"\bSM ?\d{1,3}\.x\b|\bSM \d\.\d\b|\bSm\d{2,3}\b|\bSM\dx\b", "gpu_unsupported"),
    (r"dtype == torch::k(?:Float16|BFloat16)|fp16 and bf16|bf16|[Ff]loat16,? (?:or )?[Bb][Ff]loat16|"
     r"support fp8|supported for fp8|FP8 backward is not supported", "dtype_unsupported"),
)
# Messages a hand-written mechanism reads with more of the report: the catalog holds them (and
# their release range), the mechanism gives the finding (mech_checkout: the cutlass guard).
# setup.py's "{option} was requested, but nvcc was not found" (v0.x; apex, mamba and
# causal-conv1d print the same words): mech_build.nvcc_missing and the platform mechanisms.
DEFER = re.compile(r"csrc/\w+ is missing, please use source distribution|was requested, but nvcc "
                   r"was not found")
FACTS = (("head|hdim", "head_dim"), ("arch", "gpu_arch"), ("cc|capab|major", "compute_capability"),
         ("dtype", "dtype"), ("version", "version"))


def kind(text: str) -> Optional[str]:
    for pattern, category in KINDS:
        if re.search(pattern, text):
            return category
    return None


def relevant(source: Source, text: str) -> Iterator[Tuple[int, str]]:
    """(line, printed) of each environment-relevant message in one file's text."""
    for line, printed, cond in source.read(text):
        if SKIP.search(cond) or SKIP.search(printed):
            continue
        if kind(cond if printed.startswith("Expected ") and cond in printed else printed):
            yield line, printed


def pattern(printed: str) -> str:
    """A bounded regex for the printed form: literal words joined by a bounded gap, each
    placeholder a named capture of bounded length (no nested quantifier)."""
    out, seen = [], set()
    pieces = re.split(r"(\{\w+\})", printed)
    for i, piece in enumerate(pieces):
        if i % 2:
            name = piece[1:-1]
            while name in seen:
                name += "_"
            seen.add(name)
            last = i == len(pieces) - 2 and not pieces[-1].strip()
            out.append(f"(?P<{name}>\\S{{1,80}})" if last else f"(?P<{name}>[^\\n]{{1,120}}?)")
        elif piece and not piece.strip():  # only a space between two placeholders
            out.append(r"\s{1,4}")
        elif piece:
            gap = r"\s{1,4}" if piece[:1].isspace() and i else ""
            end = r"\s{1,4}" if piece[-1:].isspace() and i < len(pieces) - 1 else ""
            out.append(gap + r"\s{1,4}".join(re.escape(w) for w in piece.split()) + end)
    return "".join(out)


def captures(printed: str) -> Dict[str, str]:
    """What each placeholder tells: head dim, compute capability, dtype, version, GPU arch."""
    found = {}
    for name in re.findall(r"\{(\w+)\}", printed):
        fact = next((f for test, f in FACTS if re.search(test, name, re.I)), "value")
        found[name] = fact
    return found


def _git(git_dir: str, *args: str) -> subprocess.CompletedProcess[str]:
    # check=True: a path that is no repository must stop the run, not write an empty catalog.
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True,
                          check=True)


def excerpts(git_dir: str) -> Dict[str, List[Row]]:
    """tag -> (source, path, line, printed) from the upstream repository; a printed form once
    per source and tag."""
    tags = _git(git_dir, "tag").stdout.split()
    out: Dict[str, List[Row]] = {}
    for tag in sorted(tags, key=order):
        files = _git(git_dir, "ls-tree", "-r", "--name-only", tag).stdout.split()
        for source in (s for s in SOURCES if re.match(s.tags, tag)):
            seen = set()
            for path in (f for p in source.paths for f in files if fnmatch(f, p)
                         and not _NOT_RUN.match(f.rsplit("/", 1)[-1])):
                for line, printed in relevant(source, _git(git_dir, "show", f"{tag}:{path}").stdout):
                    if source.name == "fa-csrc" or printed not in seen:
                        seen.add(printed)
                        out.setdefault(tag, []).append((source.name, path, line, printed))
    return out


def order(tag: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag.removeprefix("fa4-")))


_order = order


def _entry(source: Source, tag: str, path: str, line: int, printed: str,
           number: int) -> Dict[str, object]:
    category = str(kind(printed if not printed.startswith("Expected ") else printed[9:]))
    entry: Dict[str, object] = {
        "id": f"{source.name}-{number:03d}", "printed": printed, "pattern": pattern(printed),
        "location": f"Dao-AILab/flash-attention@{tag}:{path}:{line}", "first": tag, "last": tag,
        "mechanism": source.mechanism, "category": category}
    if captures(printed):
        entry["captures"] = captures(printed)
    if DEFER.search(printed):
        entry["weight"] = "defer"
    entry["remedy"] = ms.remedy(source.name, category, printed)
    return entry


def catalog(found: Dict[str, List[Row]],
            wrapped: Optional[Dict[str, Dict[str, object]]] = None) -> List[Dict[str, object]]:
    by_name = {s.name: s for s in SOURCES}
    entries: Dict[Tuple[str, str], Dict[str, object]] = {}
    counts: Dict[str, int] = {}
    for tag in sorted(found, key=order):
        for name, path, line, printed in found[tag]:
            if (name, printed) not in entries:
                counts[name] = counts.get(name, 0) + 1
                entries[(name, printed)] = _entry(by_name[name], tag, path, line, printed,
                                                  counts[name])
            entries[(name, printed)]["last"] = tag
    return ms.with_dsl([*entries.values(), *ms.other_entries(),
                        *ws.entries(wrapped or {}, pattern)], pattern)


def write_excerpts(found: Dict[str, List[Row]], path: Path) -> None:
    """The extracted messages only (never the source files): each row once, with the runs of
    tags (indexes into the sorted tag list) that have it."""
    tags = sorted(found, key=order)
    rows: Dict[Row, List[int]] = {}
    for index, tag in enumerate(tags):
        for row in found[tag]:
            rows.setdefault(row, []).append(index)
    listed = [[*row, ex.tag_runs(indexes)] for row, indexes in rows.items()]
    path.write_text(yaml.safe_dump({"tags": tags, "rows": listed}, width=200), encoding="utf-8")


def read_excerpts(path: Path) -> Dict[str, List[Row]]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    tags: List[str] = loaded["tags"]
    found: Dict[str, List[Row]] = {tag: [] for tag in tags}
    for source, file, line, printed, runs in loaded["rows"]:
        for tag in ex.tags_in_runs(tags, runs):
            found[tag].append((str(source), str(file), int(line), str(printed)))
    return found


def render(found: Dict[str, List[Row]],
           wrapped: Optional[Dict[str, Dict[str, object]]] = None) -> str:
    header = ("# Generated by tools/gen_messages.py from flash-attention at every release tag, "
              "the sources in tools/message_sources.py and the wrappers in "
              "tools/wrapper_sources.py; do not edit.\n")
    return header + yaml.safe_dump({"messages": catalog(found, wrapped)}, sort_keys=False,
                                   width=100)


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="GIT_DIR of flash-attention, or --from-excerpts FILE")
    parser.add_argument("--excerpts", type=Path, help="write the excerpts read from GIT_DIR here")
    parser.add_argument("--wrappers", type=Path, help="the wrappers' recorded excerpts (read, "
                        "then written back with any NAME=GIT_DIR read anew)")
    parser.add_argument("wrapper_dirs", nargs="*", metavar="NAME=GIT_DIR")
    if argv[:1] == ["--from-excerpts"]:
        argv = [f"--from-excerpts={argv[1]}", *argv[2:]] if len(argv) > 1 else argv
    if argv and argv[0].startswith("--from-excerpts="):
        recorded, args = Path(argv[0].split("=", 1)[1]), parser.parse_intermixed_args(["-", *argv[1:]])
        found = read_excerpts(recorded)
    else:
        args = parser.parse_intermixed_args(argv)
        found = excerpts(args.source)
        if args.excerpts is not None:
            write_excerpts(found, args.excerpts)
    wrapped = ws.load(args.wrappers) if args.wrappers is not None else {}
    for name, git_dir in (a.split("=", 1) for a in args.wrapper_dirs):
        wrapped[name] = ws.read(next(w for w in ws.WRAPPERS if w.name == name), git_dir)
    if args.wrappers is not None:
        ws.write(wrapped, args.wrappers)
    root = Path(__file__).resolve().parents[1]
    (root / "data" / "messages.yaml").write_text(render(found, wrapped), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
