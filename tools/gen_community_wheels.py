#!/usr/bin/env python3
"""Write the matrix's community_wheels block from a community project's own list of its files.

Source: mjun0812/flash-attention-prebuild-wheels, doc/packages.md at a commit (its tables list,
per platform and flash-attention release, each Python/PyTorch/CUDA combination and the exact
release-download URLs of its wheels, newest first as "Download1"). Only the "Linux x86_64"
section is read, for the releases in RELEASES, and only each row's Download1 URL: the newest
build of that combination; free-threaded rows (3.13t, 3.14t) are left out: no plan targets
them. Every URL is checked to be a release download of that repository whose
file name carries the row's versions; the block keeps [python tag, torch, CUDA, tag, file].

    git -C CLONE show COMMIT:doc/packages.md > packages.md
    python tools/gen_community_wheels.py packages.md --commit COMMIT [--check]

The project publishes no digests of its files (no sha256 in its release workflow or its lists),
so the block records none.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated_block

REPO = "mjun0812/flash-attention-prebuild-wheels"
MATRIX = Path(__file__).resolve().parents[1] / "data" / "compat_matrix.yaml"
RELEASES: Dict[str, Tuple[str, str]] = {"2.8.3": ("fa2", "flash_attn"), "3.0.0": ("fa3", "flash_attn_3")}
SECTION = "Linux x86_64"
_ROW = re.compile(r"^\| (3\.\d+|3\.9\+ \(abi3\)) \| (2\.\d+) \| (1\d\.\d) \| "
                  r"\[Download1\((v[\d.]+)\)\]\((\S+?)\)", re.M)


def rows(text: str, version: str) -> List[List[str]]:
    """[python tag, torch, cuda, tag, file] for each Download1 row of `version` in SECTION."""
    section = next(s for s in re.split(r"\n## ", text) if s.split("\n")[0].endswith(SECTION))
    part = next(p for p in re.split(r"\n### Flash-Attention ", section)
                if p.split("\n")[0].strip() == version)
    dist = RELEASES[version][1]
    out = []
    for python, torch, cuda, tag, url in _ROW.findall(part):
        prefix = f"https://github.com/{REPO}/releases/download/{tag}/"
        file = url[len(prefix):]
        label = f"+cu{cuda.replace('.', '')}torch{torch}"
        if not url.startswith(prefix) or not file.startswith(f"{dist}-{version}{label}"):
            raise SystemExit(f"{url}: not a {REPO} release file for {version}{label}")
        tag_py = "cp39-abi3" if "abi3" in python else f"cp{python.replace('.', '')}"
        out.append([tag_py, torch, cuda, tag, file])
    if not out:
        raise SystemExit(f"no {SECTION} rows for flash-attention {version}")
    return out


def block(text: str, commit: str) -> List[str]:
    lines = ["community_wheels:"]
    for version, (family, _) in RELEASES.items():
        lines += ["  - project: mjun0812-prebuild-wheels", f"    repo: {REPO}",
                  f"    family: {family}", f'    version: "{version}"',
                  "    platform: linux_x86_64",
                  f'    source: "{REPO} doc/packages.md @ {commit[:12]}: {SECTION}, '
                  f'Flash-Attention {version}, each row\'s Download1 URL"',
                  "    wheels:"]
        lines += [f"      - [{', '.join(repr(c) if i else c for i, c in enumerate(r))}]"
                  .replace("'", '"') for r in rows(text, version)]
    return lines


def splice(matrix: str, lines: List[str]) -> str:
    return generated_block.splice(
        matrix, "# BEGIN GENERATED community_wheels: tools/gen_community_wheels.py writes this block",
        "# END GENERATED community_wheels", lines, MATRIX.name)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", type=Path, help="the project's doc/packages.md")
    parser.add_argument("--commit", required=True, help="the commit it was read at")
    parser.add_argument("--matrix", type=Path, default=MATRIX)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file would change")
    args = parser.parse_args(argv)
    old = args.matrix.read_text(encoding="utf-8")
    new = splice(old, block(args.packages.read_text(encoding="utf-8"), args.commit))
    if args.check:
        return int(new != old)
    args.matrix.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
