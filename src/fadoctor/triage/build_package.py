"""Which package a build log compiles, and how to skip compiling it: flash-attn's prebuilt wheel
only when the build is flash-attn's (a Uni-Core or mamba build gets its own package's advice, and
a log that names no package gets advice that names none) (pure)."""

from __future__ import annotations

import re
from typing import Optional

from fadoctor.report import Remedy
from fadoctor.safety.shell import Unsafe, command, requirement
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context

FLASH = "flash-attn"
# Packages that compile CUDA with torch's BuildExtension, which reads MAX_JOBS
# (pytorch/pytorch@v2.5.0:torch/utils/cpp_extension.py, _get_num_workers).
COMPILED = ("flash-attn", "xformers", "mamba-ssm", "causal-conv1d", "apex", "transformer-engine",
            "sageattention", "deepspeed", "vllm", "sglang", "sgl-kernel", "flashinfer-python")
BUILT = re.compile(r"(?:building wheels? for|build(?:ing)?|compil(?:e|ing)|install(?:ing)?)\s+"
                   r"(?:\w+\s+){0,2}?(flash[-_]attn|xformers|mamba[-_]ssm|causal[-_]conv1d|apex|"
                   r"transformer[-_]engine|sageattention|deepspeed|vllm|sglang|sgl[-_]kernel|"
                   r"flashinfer(?:-python)?)\b", re.I)
# pip's own lines naming the distribution it builds (pip/_internal/wheel_builder.py: "Building
# wheel for %s (%s)", "Failed to build %s"; pip/_internal/operations/install: "Running setup.py
# install for %s"); uv: "Failed to build `name @ …`", "Building name @ …"
_PIP_BUILT = re.compile(r"(?:Building wheel for|Failed building wheel for|Running setup\.py "
                        r"(?:install|develop) for|Failed to build|Building(?= \S+ @))\s+`?"
                        r"([A-Za-z0-9][A-Za-z0-9._-]{0,60}[A-Za-z0-9])(?=[\s`=@(]|$)")
# the source distribution pip fetched to build ("Using cached mamba_ssm-2.2.4.tar.gz")
_SDIST = re.compile(r"(?:Using cached|Downloading)\s+(?:\S*/)?([A-Za-z0-9][\w.]*?)-\d[\w.]*\.tar\.gz")
_FLASH_WORDS = ("flash-attn", "flash_attn", "flash-attention", "flash attention", "flashattention",
                "flash attn")
# packages whose name on the index is another project's: no wheel to install by that name (the
# index's apex is "Pyramid toolkit to add Velruse, Flash Messages…", apex 0.9.10dev's PKG-INFO)
_NO_WHEELS = {"apex": "NVIDIA apex publishes no wheels (the index's `apex` is another project): "
                      "NVIDIA's NGC PyTorch containers ship it built; else it is built from its "
                      "repository."}
# words pip's build lines hold that are no distribution's name
_NOT_NAMES = {"wheel", "wheels", "installable", "the", "from", "editable", "for", "dependencies"}


def _named(raw: str) -> str:
    """A distribution name as the lines write it, normalised (flash-attention's repository name
    is flash-attn's)."""
    name = raw.lower().replace("_", "-")
    return FLASH if name == "flash-attention" else name


def built(ctx: Context) -> Optional[str]:
    """The package the log builds: a compiled package named in a build or install line; else the
    distribution pip's own build lines name; else flash-attn when the report speaks of it at all;
    else None (a build whose package the text does not say)."""
    hit = ctx.first(BUILT, ("build", "compil", "install"))
    if hit is not None:
        name = _named(hit[1].group(1))
        name = "flashinfer-python" if name == "flashinfer" else name
        if name in COMPILED:
            return name
    for _, found in ctx.find(_PIP_BUILT, ("building", "failed", "running setup.py")):
        name = _named(found.group(1))
        if name not in _NOT_NAMES and not name.replace(".", "").isdigit():
            return name
    sdist = ctx.first(_SDIST, (".tar.gz",))
    if sdist is not None:
        return _named(sdist[1].group(1))
    return FLASH if ctx.text.containing(_FLASH_WORDS) else None


def other_wheel(ctx: Context) -> Optional[Remedy]:
    """Skipping the build of a package other than flash-attn: its release built for the stated
    torch (from its index metadata) with --only-binary, or in words when no package is named.
    None when the build is flash-attn's."""
    package = built(ctx)
    if package == FLASH:
        return None
    if package in _NO_WHEELS:
        return Remedy(summary=_NO_WHEELS[package])
    if package is None:
        return Remedy(summary="Or skip compiling: install the package's prebuilt wheel for this "
                      "torch, CUDA and Python where its releases publish one (pip's "
                      "--only-binary=NAME refuses to build it).")
    fits = ext_torch.releases_for(package, ctx.torch) if ctx.torch is not None else []
    try:
        pinned = requirement(package, fits[-1][0]) if fits else requirement(package)
        line = command("pip", "install", pinned, f"--only-binary={package}")
    except Unsafe:
        return None
    return Remedy(summary=f"Skip compiling: install a prebuilt wheel of {package}"
                  + (f" (the newest release whose metadata accepts torch {ctx.torch})" if fits else
                     ", where its releases publish one for this torch, CUDA and Python")
                  + "; --only-binary makes pip refuse to build it.", commands=[line])


# what the report's own install line asked pip to build: a repository ("git+https://...") or a
# local checkout (".", "-e ."), else a name
_ASKED = re.compile(r"\b(?:(?:pip3?|uv pip) install|uv add)\s+(?:--?[\w-]+(?:[= ]\S+)?\s+)*?[\"']?"
                    r"(git\+https?://[^\s\"']+|-e\s+[\"']?\.(?:\[[\w,-]+\])?|\.(?:\[[\w,-]+\])?"
                    r"(?=[\"']?(?:\s|$))|[A-Za-z0-9][\w.-]*(?:==[\w.+]+)?)")


def asked(ctx: Context) -> Optional[str]:
    """The target of the report's `pip install` line, where it names one."""
    hit = ctx.first(_ASKED, ("pip install", "pip3 install", "uv pip install", "uv add"))
    return re.sub("[\"']", "", hit[1].group(1)) if hit is not None else None


def named_flash(ctx: Context) -> bool:
    return bool(ctx.text.containing(_FLASH_WORDS))
