"""The fix for a catalogued build-frontend, compiler or loader message (tools/build_sources.py's
entries: pip, uv, ninja, nvcc, ptxas, gcc, CUDA's host-compiler gates, ld.so), from its captures and the
facts the report states (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from fadoctor.report import Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import build_package, mech_build, mech_resources
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.catalog_data import TOOLCHAIN, Entry
from fadoctor.triage.context import Context

# flash-attention's README (Dao-AILab/flash-attention@v2.8.3:README.md:69-94): packaging and ninja
# first, then `pip install flash-attn --no-build-isolation`; MAX_JOBS bounds the parallel jobs.
FA_README = "Dao-AILab/flash-attention@v2.8.3:README.md"
# uv's documentation of the per-package setting, with flash-attn as its example.
UV_DOCS = "astral-sh/uv@0.12.5:docs/concepts/projects/config.md:459-472"
# pixi's per-package setting; its build environment is the conda dependencies.
PIXI_DOCS = "prefix-dev/pixi@v0.77.0:docs/reference/pixi_manifest.md:642-660"
# nvcc's own words in each host-compiler gate (crt/host_config.h); nvcc reads extra flags from
# NVCC_APPEND_FLAGS (the name is among the nvcc binary's strings, nvidia-cuda-nvcc==13.0.88).
UNSUPPORTED = "NVCC_APPEND_FLAGS=-allow-unsupported-compiler"


def _pin(ctx: Context) -> str:
    return f"=={ctx.fa2}" if ctx.fa2 is not None and ctx.fa2_exact else ""


def isolation(ctx: Context, entry: Entry) -> List[Remedy]:
    """flash-attn's setup.py imports torch while the frontend gets its build requirements, in an
    isolated environment that has no torch: build in the environment that has it."""
    package = build_package.built(ctx)
    if package is None and not build_package.named_flash(ctx):  # a build the report names not
        target = build_package.asked(ctx)
        return [Remedy(summary=f"{TOOLCHAIN[entry.source]} ({entry.location}) shows a package's "
                       "setup.py failing while pip gathers its build requirements; the lines "
                       "above this one say why. Where it imports torch (a CUDA extension's "
                       "build does), install torch first and build without isolation, in the "
                       "environment that has it" + ("." if target else
                                                    ": `pip install <the package> "
                                                    "--no-build-isolation`."),
                       commands=[command("pip", "install", *target.split(" "),
                                         "--no-build-isolation")] if target else []),
                mech_build.prebuilt(ctx)]
    if package not in (None, build_package.FLASH):  # another package's build: its own name
        return [Remedy(summary=f"{TOOLCHAIN[entry.source]} ({entry.location}) shows {package}'s "
                       "setup.py failing while pip gathers its build requirements; the lines "
                       "above this one say why. Where it imports torch (a CUDA extension's "
                       "build does), install torch first and build without isolation, in the "
                       "environment that has it.",
                       commands=[command("pip", "install", "--no-build-isolation", package)]),
                mech_build.prebuilt(ctx)]
    install = f'pip install "flash-attn{_pin(ctx)}" --no-build-isolation'
    found = [Remedy(summary=f"{TOOLCHAIN[entry.source]} ({entry.location}) shows flash-attn's "
                    "setup.py failing in the isolated build environment: it imports torch, which "
                    "that environment lacks. With torch installed in this environment, install "
                    f"packaging and ninja, then build without isolation ({FA_README}).",
                    commands=["pip install packaging ninja", install])]
    # pixi builds PyPI packages with uv's crates (prefix-dev/pixi@v0.77.0:Cargo.toml pins
    # uv-build-frontend at uv 0.11.15), so it prints uv's hint
    if entry.source == "uv":
        found.append(Remedy(summary="In a uv project, mark flash-attn for a build without "
                            'isolation: `no-build-isolation-package = ["flash-attn"]` under '
                            f"[tool.uv] in pyproject.toml, with torch a dependency too ({UV_DOCS}); "
                            "`uv sync` then installs torch before building flash-attn. In a pixi "
                            'workspace: `no-build-isolation = ["flash-attn"]` under [pypi-options], '
                            f"with pytorch a conda dependency ({PIXI_DOCS})."))
    return [*found, mech_build.prebuilt(ctx)]


def resources(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    signal = values.get("signal", "").strip(".,:;")
    killed = ("it could not allocate memory" if entry.source == "ptxas" else
              "signal 9 is SIGKILL: the kernel's out-of-memory killer" if signal == "9" else
              f"signal {signal} ended it, which parallel builds short of memory also cause"
              if signal else "the kernel killed it (out of memory)")
    tool = values.get("tool") or values.get("program") or (
        "ptxas" if entry.source == "ptxas" else "the compiler")
    verb = "failed" if entry.source == "ptxas" else "died"
    return [Remedy(summary=f"{tool.strip(chr(39))} {verb} during the flash-attn build ({killed}; "
                   f"{entry.location}). {mech_resources.jobs(ctx).summary}",
                   commands=mech_resources.jobs(ctx).commands),
            mech_build.prebuilt(ctx)]


def host_compiler(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    accepted = "; ".join(f"{a}..{b}: {v.replace(',', '..')}" for a, b, v in entry.limits)
    if "gcc_max" in values:
        top = values["gcc_max"].strip("!.")
        fix = Remedy(summary=f"This CUDA's nvcc accepts gcc {top} at most (crt/host_config.h; by "
                     f"release: {accepted}). Build with gcc {top} (install it beside the default "
                     "one), or a CUDA release whose limit covers your gcc.",
                     commands=[f"export CC=gcc-{top} CXX=g++-{top}",
                               f"export NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++-{top}'"])
    else:
        low, high = values.get("msvc_min", "?"), values.get("msvc_max", "?").strip("!.")
        fix = Remedy(summary=f"This CUDA's nvcc accepts Visual Studio {low} to {high} (by "
                     f"release: {accepted or entry.location}): build from a Developer Command "
                     f"Prompt of Visual Studio {high} (MSVC v14x), or use a prebuilt wheel.")
    newer = _cuda_for_gcc(ctx, entry) if "gcc_max" in values else None
    risky = Remedy(summary="Or, at your own risk as nvcc's message says, skip the check: nvcc "
                   "reads extra flags from NVCC_APPEND_FLAGS.", commands=[f"export {UNSUPPORTED}"])
    return [fix, *([newer] if newer else []), mech_build.prebuilt(ctx), risky]


def _cuda_for_gcc(ctx: Context, entry: Entry) -> Optional[Remedy]:
    """The oldest CUDA release read whose gate accepts the gcc the report states."""
    stated = re.match(r"(\d+)", ctx.seen.get(o.GCC) or "")
    if stated is None:
        return None
    major = int(stated.group(1))
    fits = next((first for first, _, top in entry.limits if int(top) >= major), None)
    if fits is None:
        return None
    cuda = ".".join(fits.split("==")[-1].split(".")[:2])
    return Remedy(summary=f"Or keep gcc {major}: CUDA {cuda} is the oldest release read whose "
                  f"nvcc accepts it ({fits}, crt/host_config.h); torch's CUDA major must "
                  "match the toolkit's.")


def loader(ctx: Context, entry: Entry) -> List[Remedy]:
    flash = bool(ctx.text.containing(("flash_attn", "flash-attn", "flash attn")))
    reveal = [r.REVEAL_IMPORT] if flash else []  # flash-attention's import, where it is named
    if entry.category.value == "glibc_too_old":
        return [Remedy(summary="A library needs a symbol version (GLIBC_x, GLIBCXX_x, CXXABI_x) the "
                       "system's glibc or libstdc++ lacks: install a build made for this system "
                       "(manylinux tag no newer than its glibc), or run on a newer OS image.",
                       commands=["ldd --version", *reveal])]
    if entry.category.value == "torch_version_mismatch":
        if not flash:
            return r.rebuild_other(ctx, None)  # not flash-attention's binary: no flash-attn fix
        return [r.reinstall(ctx, "The extension was compiled against another torch."),
                *r.keep([r.exact_wheel(ctx)])]
    return [Remedy(summary="The loader found no file for a library the extension links: import "
                   "torch first (it loads its own CUDA libraries), and install the CUDA runtime "
                   "of torch's CUDA major.", commands=[r.REVEAL_TORCH, *reveal])]


def for_entry(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    source = entry.source
    if source in ("pip", "uv"):
        return isolation(ctx, entry)
    if source in ("nvcc", "ptxas", "gcc") and entry.category.value == "build_resources":
        return resources(ctx, entry, values)
    if source in ("nvcc", "cudahost"):
        return host_compiler(ctx, entry, values)
    if source == "ld":
        return loader(ctx, entry)
    return [Remedy(summary=f"ninja stops when a compile step fails ({entry.location}): the "
                   "compiler's own error is above its line. A compiler killed there means the "
                   f"parallel jobs ran out of memory: {mech_resources.jobs(ctx).summary}",
                   commands=mech_resources.jobs(ctx).commands), mech_build.prebuilt(ctx)]
