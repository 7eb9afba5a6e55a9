#!/usr/bin/env python3
"""Generate the `flash_attn_releases` and `fa4_releases` blocks of data/compat_matrix.yaml.

Provenance. Everything written comes from the project's verified reference notes
(../shared/reference, each fact cited there):

- `fa_wheel_matrix.yaml`: per v2.x tag, the release workflow's axes (torch, CUDA toolkit,
  Python, cxx11abi, runner), the asset names its jobs upload (`expected_assets`), the torch index
  each job installed (`torch_index_per_job`), and FlashAttention-4's tags with their pyproject
  metadata. Read by git at each tag of github.com/Dao-AILab/flash-attention.
- `flash_attn_facts.md`: the version ranges below (setup.py's wheel-guess rule §1.1, nvcc floor
  and README minimums §1.3, compiled archs §1.4), transcribed as "from this tag on" tables.

Derived here, and marked so in each entry's source: each wheel's SASS archs, from its job's CUDA
toolkit against setup.py's nvcc thresholds (sm_90 needs nvcc >= 11.8, sm_100/sm_120 >= 12.8 from
v2.7.3; v2.2.4 has the sm_90 line commented out).

Run it once after the reference changes; the YAML it writes is committed data, reviewed in the
diff. `--check` exits 1 when the committed blocks differ from what it would write.

    python tools/gen_matrix_fa2.py [--reference DIR] [--matrix FILE] [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import yaml
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fa4_betas as fa4_betas
import generated_block

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference"
MATRIX = ROOT / "data" / "compat_matrix.yaml"
SDISTS = ROOT / "tools" / "fixtures" / "fa2_sdists.json"
FACTS = "flash_attn_facts.md"

# -- "from this version on" tables (flash_attn_facts.md) ----------------------------------------

Table = Sequence[Tuple[str, Any]]
CUDA_TAG_RULE: Table = [  # §1.1
    ("2.0.0", "none"), ("2.0.6", "exact"), ("2.2.3.post2", "torch21_cu122"),
    ("2.3.1.post1", "torch21_cu12_cu122"), ("2.3.6", "cu118_or_cu122"),
    ("2.6.1", "cu118_or_cu123"), ("2.7.0", "major_12"), ("2.8.3.post1", "major")]
MIN_NVCC: Table = [("2.0.0", "11.0"), ("2.0.6", "11.4"), ("2.1.2", "11.6"), ("2.7.0", "11.7")]
README_MIN_CUDA: Table = [("2.0.0", "11.4"), ("2.1.2", "11.6"), ("2.7.0", "11.7"),
                          ("2.7.4", "12.0")]  # §1.3
README_MIN_TORCH: Table = [("2.0.0", "1.12"), ("2.7.4", "2.1"), ("2.7.4.post1", "2.2")]
REQUIRES_PYTHON: Table = [("2.0.0", ">=3.7"), ("2.6.0", ">=3.8"), ("2.7.1.post2", ">=3.9")]
ARCH_ENV: Table = [("2.0.0", None), ("2.7.3", "FLASH_ATTN_CUDA_ARCHS")]  # §1.2
# §1.4: the -gencode lines and the nvcc each needs.
SM90_NVCC, BLACKWELL_NVCC, BLACKWELL_FROM = "11.8", "12.8", Version("2.7.3")
NO_SM90 = {Version("2.2.4")}  # its setup.py has the sm_90 line commented out

# The runner of v2.8.0 is not what its publish.yml names (kept from the matrix's review, d04af23).
BUILDS_ON_OVERRIDE = {Version("2.8.0"): ("unknown", (
    "publish.yml at v2.8.0 names ubuntu-20.04, but GitHub stopped running that image on "
    "2025-04-15 (actions/runner-images#11101), two months before the tag (2025-06-14): whatever "
    "built its wheels, it was not that runner; dstack#2807 reports GLIBC_2.32 with 2.8.0"))}


def since(table: Table, version: Version) -> Any:
    value = None
    for first, entry in table:
        if version >= Version(first):
            value = entry
    return value


# -- one release ----------------------------------------------------------------------------------

def cuda_of(toolkit: str) -> Version:
    """A CUDA toolkit as the workflow writes it: 12.9.1, or legacy digits 113."""
    return Version(toolkit) if "." in toolkit else Version(f"{toolkit[:-1]}.{toolkit[-1]}")


def local_tag(toolkit: str, fmt: str) -> str:
    cuda = cuda_of(toolkit)
    return str(cuda.major) if fmt == "major" else f"{cuda.major}{cuda.minor}"


def local_format(rel: Dict[str, Any]) -> str:
    text = rel["wheel_local_version_format"]
    if text.startswith("cu{matrix cuda-version}torch{full"):
        return "legacy"
    return "major" if text.startswith("cu{CUDA toolkit major}torch") else "major_minor"


def archs_for(version: Version, toolkit: str) -> List[str]:
    nvcc = cuda_of(toolkit)
    archs = ["sm_80"]
    if nvcc >= Version(SM90_NVCC) and version not in NO_SM90:
        archs.append("sm_90")
    if version >= BLACKWELL_FROM and nvcc >= Version(BLACKWELL_NVCC):
        archs += ["sm_100", "sm_120"]
    return archs


def build_archs(version: Version) -> Dict[str, str]:
    out = {"sm_80": since(MIN_NVCC, version)}
    if version not in NO_SM90:
        out["sm_90"] = SM90_NVCC
    if version >= BLACKWELL_FROM:
        out.update({"sm_100": BLACKWELL_NVCC, "sm_120": BLACKWELL_NVCC})
    return out


JOB = re.compile(r"torch (?P<torch>\S+) \+ CUDA toolkit (?P<cuda>\S+)")


def jobs(rel: Dict[str, Any], fmt: str) -> Iterator[Tuple[str, str, str]]:
    """(built_against key, torch variant or 'NONE: why', exact torch) for every job."""
    if fmt == "legacy":  # torch came from the cu<cuda-version> index of the matrix's toolkit
        for asset in rel["expected_assets"]:
            match = re.fullmatch(r"cu(\d+)torch(\S+)", asset)
            assert match, asset
            yield asset, f"cu{match[1]}", match[2]
        return
    for job, index in rel["torch_index_per_job"].items():
        match = JOB.fullmatch(job)
        assert match, job
        torch = Version(match["torch"])
        key = f"cu{local_tag(match['cuda'], fmt)}torch{torch.major}.{torch.minor}"
        yield key, str(index), match["torch"]


def release_entry(rel: Dict[str, Any]) -> Dict[str, Any]:
    version, fmt = Version(rel["version"]), local_format(rel)
    built: Dict[str, str] = {}
    built_torch: Dict[str, str] = {}
    reasons = set()
    for key, index, torch in jobs(rel, fmt):
        if index.startswith("NONE"):
            reasons.add(index.split(":", 1)[1].strip())
            continue
        variant = index.split()[0]  # "cu121 (nightly)" -> cu121; the nightly shows in the version
        assert built.setdefault(key, variant) == variant, (version, key)
        built_torch[key] = torch
    assets: Dict[str, List[str]] = {}
    not_built: Dict[str, List[str]] = {}
    for local, pythons in rel["expected_assets"].items():
        key = local if fmt == "legacy" else local.split("cxx11abi")[0]
        (assets if key in built else not_built)[local] = list(pythons)
    toolkits = {local_tag(c, "major" if fmt == "major" else "major_minor"): c for c in rel["cuda"]}
    newest = max(rel["cuda"], key=cuda_of)
    archs = archs_for(version, newest)
    by_cuda = {f"cu{tag}": a for tag, toolkit in toolkits.items()
               if (a := archs_for(version, toolkit)) != archs
               and any(k.startswith(f"cu{tag}torch") for k in assets)}
    builds_on, note = BUILDS_ON_OVERRIDE.get(version, (rel["os"][0], None))
    torch_axis = [Version(t) for t in rel["torch"]]
    entry: Dict[str, Any] = {
        "version": str(version), "tag": rel["tag"],
        "wheel_torch": sorted({f"{t.major}.{t.minor}" for t in torch_axis}, key=Version),
        "wheel_torch_nightlies": [str(t) for t in torch_axis if t.is_devrelease],
        "wheel_cuda": [str(c) for c in rel["cuda"]],
        "wheel_python": [str(p) for p in rel["python"]],
        "builds_on": builds_on, "builds_on_note": note,
        "readme_min_torch": since(README_MIN_TORCH, version),
        "requires_python": since(REQUIRES_PYTHON, version),
        "cuda_tag_rule": since(CUDA_TAG_RULE, version),
        "min_nvcc": since(MIN_NVCC, version),
        "readme_min_cuda": since(README_MIN_CUDA, version),
        "platform": "linux_x86_64",
        "archs": archs, "archs_by_cuda": by_cuda, "build_archs": build_archs(version),
        "arch_env": since(ARCH_ENV, version),
        "assets": assets, "not_built": not_built,
        "not_built_reason": ("derived from publish.yml: " + "; ".join(sorted(reasons))) if reasons else None,
        "built_against": built, "built_against_torch": built_torch,
    }
    entry.update(sources(rel, newest, by_cuda))
    return entry


def sources(rel: Dict[str, Any], newest: str, by_cuda: Dict[str, List[str]]) -> Dict[str, str]:
    version = Version(rel["version"])
    off = "; this tag comments its sm_90 line out" if version in NO_SM90 else ""
    at = f"at tag {rel['tag']} ({rel['tag_commit'][:8]})"
    fewer = ", older toolkits build fewer" if by_cuda else ""
    return {
        # The text the checks already cite for this release (kept stable: reports quote it).
        "source": f"flash-attention .github/workflows/publish.yml and README.md {at}",
        "setup_source": (f"flash-attention setup.py {at}: get_wheel_url (cuda_tag_rule), the nvcc "
                         "check (min_nvcc), the -gencode lines (build_archs, arch_env), "
                         f"python_requires; publish.yml's torch index per job (built_against); "
                         f"via fa_wheel_matrix.yaml and {FACTS} §1.1-§1.4"),
        "archs_source": (f"derived: setup.py's -gencode lines against each job's nvcc (sm_90 at >= "
                         f"{SM90_NVCC}, sm_100/sm_120 at >= {BLACKWELL_NVCC} from v2.7.3{off}); "
                         f"newest CI toolkit {newest}{fewer} ({FACTS} §1.4)"),
    }


# -- YAML text ------------------------------------------------------------------------------------

def scalar(value: Any) -> str:
    # JSON strings are valid YAML; quoting keeps "2.10" and "3.10" strings, not floats.
    return value if isinstance(value, str) and re.fullmatch(r"[a-z][\w.+-]*", value) \
        and value not in ("null", "true", "false") else json.dumps(value, ensure_ascii=False)


def flow(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(k)}: {flow(v)}" for k, v in value.items()) + "}"
    return scalar(value)


def block(name: str, entries: List[Dict[str, Any]], multiline: Sequence[str]) -> List[str]:
    lines = [f"{name}:"]
    for entry in entries:
        first = True
        for key, value in entry.items():
            if value is None or value == [] or value == {}:
                continue
            lead = "  - " if first else "    "
            first = False
            if key in multiline:
                lines.append(f"{lead}{key}:")
                lines += [f"      {scalar(k)}: {flow(v)}" for k, v in value.items()]
            else:
                lines.append(f"{lead}{key}: {flow(value)}")
    return lines


def sdist_entry(rel: Dict[str, Any], known: List[Dict[str, Any]]) -> Dict[str, Any]:
    """A release read from its sdist only: setup.py's fields from the tag whose setup.py has the
    same digest; its wheel set unknown (never copied from another release)."""
    base = next(e for e in known if e["tag"] == rel["same_setup_as"])
    setup_fields = ("readme_min_torch", "requires_python", "cuda_tag_rule", "min_nvcc",
                    "readme_min_cuda", "platform", "build_archs", "arch_env")
    digest = rel["setup_py_sha256"][:12]
    return {
        "version": rel["version"], "tag": None,
        "wheel_torch": [], "wheel_cuda": [], "wheel_python": [], "builds_on": "unknown",
        **{k: base[k] for k in setup_fields}, "wheels_unknown": True,
        "archs": base["archs"], "assets": {}, "built_against": {},
        "source": (f"the registry's sdist {rel['sdist']} (no tag in the clone; no primary source "
                   "for its wheel assets was read: wheels unknown; tools/fixtures/fa2_sdists.json)"),
        "setup_source": (f"setup.py of {rel['sdist']} (sha256 {digest}...), byte-identical to "
                         f"setup.py at tag {rel['same_setup_as']}: its fields carry over"),
        "archs_source": (f"derived: setup.py's -gencode lines (identical to {rel['same_setup_as']}"
                         "'s) for a source build with nvcc >= 12.8; no wheel was inspected"),
    }


def generated(reference: Path, only: Optional[str] = None) -> Dict[str, List[str]]:
    fa4 = fa4_betas.entries(json.loads(fa4_betas.RECORD.read_text(encoding="utf-8")))
    if only == "fa4_releases":  # needs no reference notes: its record is read at the tags
        return {"fa4_releases": block("fa4_releases", fa4, ())}
    data = yaml.safe_load((reference / "fa_wheel_matrix.yaml").read_text(encoding="utf-8"))
    fa2 = [release_entry(r) for r in data["releases"]]
    fa2 += [sdist_entry(r, fa2) for r in json.loads(SDISTS.read_text(encoding="utf-8"))["releases"]]
    return {"flash_attn_releases": block("flash_attn_releases", fa2, ("assets", "not_built")),
            "fa4_releases": block("fa4_releases", fa4, ())}


def splice(text: str, name: str, lines: List[str]) -> str:
    return generated_block.splice(
        text, f"# BEGIN GENERATED {name}: tools/gen_matrix_fa2.py writes this block; edit the script",
        f"# END GENERATED {name}", lines, f"{MATRIX.name} ({name})")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--matrix", type=Path, default=MATRIX)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file would change")
    parser.add_argument("--only", choices=["fa4_releases"], help="write this block only")
    args = parser.parse_args(argv)
    old = args.matrix.read_text(encoding="utf-8")
    new = old
    for name, lines in generated(args.reference, args.only).items():
        new = splice(new, name, lines)
    if args.check:
        if new != old:
            print(f"{args.matrix}: generated blocks are out of date", file=sys.stderr)
            return 1
        return 0
    args.matrix.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
