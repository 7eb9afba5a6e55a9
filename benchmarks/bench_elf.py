"""Benchmark the static import analysis of an extension against libtorch, next to a pyelftools baseline.

    python benchmarks/bench_elf.py [--extension PATH]... [--torch-lib DIR] [--preload DIR]...
                                   [--runs 5] [--json]

`fadoctor.probes.loader.analyze` resolves the extension's DT_NEEDED closure as ld.so would, then
looks each undefined symbol up through the libraries' .gnu.hash tables. The baseline, measured
in the same run on the same libraries (found by the analysis, untimed), enumerates every dynamic
symbol of the extension and of each library with pyelftools into sets, then looks up. Both must
find the same missing symbols. Runs alternate (analysis, baseline, ...) after one warm-up of
each, so both see a warm page cache; in-process memos are cleared before every analysis run, so
each is what one `fadoctor` process pays. Default extensions: torch's libtorch_python.so (5.7k
undefined symbols, against libtorch_cpu's 75k) and libtorch_cpu.so. The real flash-attention
extension is given with --extension; torch's lib/ and the nvidia-* wheels' lib/ are preloaded.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Set, Tuple

from elftools.elf.elffile import ELFFile

from fadoctor.probes import ldcache, loader, symbols
from fadoctor.probes.loader import Analysis, LoaderContext, analyze, preload_map

PYTHON_API = ("Py", "_Py")


def torch_lib() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not importable here: give --torch-lib DIR")
    return Path(spec.origin).parent / "lib"


def preload_dirs(lib: Path, extra: Sequence[str]) -> List[Path]:
    """torch's lib/ and the nvidia-* wheels' lib/ folders next to torch, as torch preloads them."""
    nvidia = sorted(Path(p) for p in glob.glob(str(lib.parent.parent / "nvidia" / "*" / "lib")))
    return [lib, *nvidia, *map(Path, extra)]


def timed_analysis(extension: str, context: LoaderContext) -> Tuple[float, Analysis]:
    # What one fadoctor process pays for its first extension: no memo from an earlier run.
    symbols.gnu_hash.cache_clear()
    ldcache._index.cache_clear()
    loader._library_info.cache_clear()
    start = time.perf_counter()
    analysis = analyze(extension, context)
    return time.perf_counter() - start, analysis


def _dynsym(path: str) -> List[Tuple[str, bool, bool]]:
    """(name, defined, strong undefined) for every .dynsym entry, through pyelftools."""
    with open(path, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".dynsym")
        return [(s.name, s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["bind"] != "STB_LOCAL",
                 s["st_shndx"] == "SHN_UNDEF" and s["st_info"]["bind"] == "STB_GLOBAL")
                for s in (table.iter_symbols() if table is not None else ()) if s.name]


def timed_baseline(extension: str, libraries: Sequence[str]) -> Tuple[float, Set[str]]:
    start = time.perf_counter()
    undefined = [name for name, _, strong_undefined in _dynsym(extension) if strong_undefined]
    defined = [{name for name, is_defined, _ in _dynsym(lib) if is_defined} for lib in libraries]
    missing = {name for name in undefined
               if not name.startswith(PYTHON_API) and not any(name in names for names in defined)}
    return time.perf_counter() - start, missing


def measure(extension: str, context: LoaderContext, runs: int) -> Dict[str, object]:
    _, analysis = timed_analysis(extension, context)  # warm-up: page cache and imports
    timed_baseline(extension, analysis.libraries)
    ours: List[float] = []
    baseline: List[float] = []
    for _ in range(runs):
        elapsed, analysis = timed_analysis(extension, context)
        ours.append(elapsed)
        elapsed, missing = timed_baseline(extension, analysis.libraries)
        baseline.append(elapsed)
        if missing != {s.name for s in analysis.missing_symbols}:
            raise SystemExit(f"{extension}: the analysis and the baseline disagree on missing symbols")
    a, b = statistics.median(ours), statistics.median(baseline)
    dynsyms = sum(len(_dynsym(lib)) for lib in analysis.libraries)
    return {"extension": extension, "size_mb": round(os.path.getsize(extension) / 2**20, 1),
            "undefined": len(analysis.extension.undefined), "libraries": len(analysis.libraries),
            "library_dynsyms": dynsyms, "loadable": analysis.loadable,
            "missing_symbols": len(analysis.missing_symbols), "runs": runs,
            "analyze_median_s": round(a, 4), "baseline_median_s": round(b, 4), "ratio": round(b / a, 1),
            "analyze_s": [round(x, 4) for x in ours], "baseline_s": [round(x, 4) for x in baseline]}


def report(result: Dict[str, object]) -> None:
    print(f"{result['extension']}  ({result['size_mb']} MB, {result['undefined']} undefined strong "
          f"symbols; {result['libraries']} libraries searched, {result['library_dynsyms']} dynamic "
          "symbols in them)")
    print(f"  analyze (ld.so search + hash lookups)  median {result['analyze_median_s']:.3f} s"
          f"   (target <= 0.3 s)  loadable={result['loadable']}")
    print(f"  baseline (pyelftools enumeration)      median {result['baseline_median_s']:.3f} s")
    print(f"  ratio baseline / analyze               {result['ratio']}x   ({result['runs']} runs each)")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--extension", action="append", default=[], help="extension to analyse")
    parser.add_argument("--torch-lib", type=Path, help="torch's lib/ folder (default: this torch)")
    parser.add_argument("--preload", action="append", default=[], help="another preloaded folder")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    lib = args.torch_lib or torch_lib()
    extensions = args.extension or [str(lib / "libtorch_python.so"), str(lib / "libtorch_cpu.so")]
    folders = preload_dirs(lib, args.preload)
    paths = [p for folder in folders for p in sorted(glob.glob(str(folder / "*.so*")))]
    context = LoaderContext(ld_library_path=os.environ.get("LD_LIBRARY_PATH", ""),
                            preloaded=preload_map(paths))
    results = [measure(extension, context, args.runs) for extension in extensions]
    if args.json:
        print(json.dumps({"python": sys.version.split()[0], "preloaded": [str(f) for f in folders],
                          "results": results}, indent=2))
        return 0
    print(f"preloaded: {', '.join(str(f) for f in folders)}")
    for result in results:
        report(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
