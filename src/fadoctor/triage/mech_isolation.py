"""A build that could not import torch (or packaging, ninja…): the frontend built flash-attn in
an isolated environment. pip, uv and pixi each get their own documented fix (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import build_package, mech_build
from fadoctor.triage import errors as e
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

_NO_TORCH_IN_BUILD = re.compile(r"No module named '(torch|packaging|psutil|wheel|ninja|setuptools)'")
# uv's own words in a build (astral-sh/uv, see errors.py's BUILD marks) and its documented fix
# for flash-attn: astral-sh/uv@0.12.5:docs/concepts/projects/config.md:283-300
# (extra-build-dependencies, added in 0.8.4: crates/uv-settings, #14735).
_UV_RUN = ("uv sync", "uv add", "uv pip", "uv lock", "uv run")
_UV = (*_UV_RUN, "build backend", "failed to download and build",
       "hint: this usually indicates a problem with the package or the build env")
# what an install line names that is not the package being built
_NOT_BUILT = ("torch", "torchvision", "torchaudio", "-r", "packaging", "ninja", "wheel",
              "setuptools", "numpy")
# pip's own words around a build ("Checking if build backend supports build_editable"): uv's
# phrases alone then do not make it uv's
_PIP = ("pip-build-env-", "checking if build backend supports", "pip install", "pip3 install")
UV_DOCS = "astral-sh/uv@0.12.5:docs/concepts/projects/config.md:283-300"
# prefix-dev/pixi@v0.77.0:docs/reference/pixi_manifest.md:641-670 ([pypi-options]
# no-build-isolation: the build sees the pixi environment)
PIXI_DOCS = "prefix-dev/pixi@v0.77.0:docs/reference/pixi_manifest.md:641-670"
PIXI_NO_ISOLATION = '[pypi-options]\nno-build-isolation = ["flash-attn"]'
UV_EXTRA_BUILD = ('[tool.uv.extra-build-dependencies]\n'
                  'flash-attn = [{ requirement = "torch", match-runtime = true }]')


# The step that runs flash-attn's setup.py to ask for its build requirements: setup.py imports
# torch there, so under isolation it fails before any compiler runs (pip: "Getting requirements
# to build wheel"; uv: "Build backend failed to determine (extra) requires", uv@0.5.0:
# crates/uv-build-frontend/src/lib.rs:874).
_REQUIRES_STEP = re.compile(r"Getting requirements to build wheel (?:\.\.\. error|did not run "
                            r"successfully)|failed to determine (?:extra )?requires", re.I)


# DeepSpeed's setup.py, building its ops ahead of time (DS_BUILD_OPS): "AssertionError: Unable to
# pre-compile ops without torch installed. Please install torch before attempting to pre-compile
# ops." (deepspeedai/DeepSpeed setup.py): torch is installed, just not inside pip's isolated build
_DS_NO_TORCH = re.compile(r"Unable to pre-compile ops without torch installed")


# A setup.py's own refusal to build without torch ("Building cuda extension requires
# PyTorch(>=1.13.0) been installed, please install PyTorch first!", AutoGPTQ's setup.py), printed
# under pip where the environment has torch: pip's isolated build environment does not
_ASKS_TORCH = re.compile(r"requires? (?:PyTorch|torch)\b[^\n]{0,30}?(?:been|be|to be) installed|"
                         r"please install (?:PyTorch|torch) (?:first|before)|"
                         # in prose: "The installation failed because flash_attn requires PyTorch"
                         r"fail\w*\s+because\s+[\w.-]{1,40}\s+(?:requires|needs)\s+(?:PyTorch|torch)\b",
                         re.I)


# what a pip install line asks for from a repository ("pip install "git+https://github.com/...
# /AutoGPTQ.git@v0.4.2"")
_TARGET = re.compile(r"\b(?:pip3?|uv pip) install\s+(?:--?[\w-]+\s+)*[\"']?(git\+https?://[^\s\"']+)")


def isolation(ctx: Context) -> List[Signal]:
    deepspeed = ctx.first(_DS_NO_TORCH, ("pre-compile ops",))
    if deepspeed is not None:
        return [_signal(ctx, [ctx.quote(deepspeed[0]), *ctx.quotes("torch")], "without torch",
                        NAMED, "deepspeed")]
    asks = ctx.first(_ASKS_TORCH, ("installed", "install pytorch", "install torch", "because"))
    if asks is not None and ctx.first(_ANY_INSTALL, ("install", "add", "sync")) is not None:
        target = ctx.first(_TARGET, ("install",))
        asked = target[1].group(1) if target else None
        package = (re.sub(r"\W+", "-", asked.rsplit("/", 1)[-1].split("@")[0].removesuffix(".git"))
                   .lower() if asked and asked.startswith("git+") else None)
        return [_signal(ctx, [ctx.quote(asks[0]), *ctx.quotes("torch")], "without torch",
                        NAMED, package, asked if package else None)]
    hit = next(((i, m) for i, m in ctx.find(_NO_TORCH_IN_BUILD, ("no module named",))
                if mech_build.build_context(ctx, i) or e.BUILD in ctx.seen.marks
                or _under_setup_py(ctx, i)), None)
    if hit is None:
        return (_requires_step(ctx) or _isolated_torch(ctx) or _other_torch_built(ctx)
                or _pulls_torch(ctx) or _said_installing(ctx))
    missing = hit[1].group(1)
    return [_signal(ctx, [ctx.quote(hit[0])], f"without {missing}", NAMED)]


# "When I run pip install flash-attn, it says that": the install of a package whose setup.py
# imports torch, said beside the import error (a screenshot holds the log)
_INSTALLING = re.compile(r"\b(?:pip3?|uv pip|uv|pixi|poetry)\s+(?:install|add|sync)\b[^\n]{0,60}?"
                         r"\b(flash[-_]attn|causal[-_]conv1d|mamba[-_]ssm)\b", re.I)
_NO_TORCH = re.compile(r"No module named '?torch'?(?![\w.])", re.I)


def _said_installing(ctx: Context) -> List[Signal]:
    no_torch = ctx.first(_NO_TORCH, ("no module named",))
    if no_torch is None:
        return []
    install = ctx.first(_INSTALLING, ("flash", "causal", "mamba"))
    if install is not None:
        return [_signal(ctx, [ctx.quote(no_torch[0]), ctx.quote(install[0])], "without torch",
                        LOGGED)]
    # any package's install, with torch shown installed and no program's traceback: the
    # package's build imported torch in pip's isolated environment
    install = ctx.first(_ANY_INSTALL, ("install", "add", "sync"))
    torch = ctx.first(_TORCH_THERE, ("torch",))
    if install is None or torch is None or any(
            _RUN_FRAME.search(line) for line in ctx.text.lines):
        return []
    package, target = _asked(ctx)
    return [_signal(ctx, [ctx.quote(no_torch[0]), ctx.quote(install[0]), ctx.quote(torch[0])],
                    "without torch", HINTED, package, target)]


_TORCHES = {"torch", "torchvision", "torchaudio", "pip", "setuptools", "wheel"}


def _asked(ctx: Context) -> Tuple[str, Optional[str]]:
    """The package an install line builds (not torch's), or a requirements file's."""
    for index, found in ctx.find(_ANY_INSTALL, ("install", "add", "sync")):
        words = ctx.text.lines[index][found.end():].split()
        if "-r" in words[:2] and len(words) > words.index("-r") + 1:
            requirements = words[words.index("-r") + 1].strip("`'\",.")
            if re.fullmatch(r"[\w./-]{1,200}\.txt", requirements):  # a path, never shell text
                return f"a package of {requirements}", f"-r {requirements}"
            continue
        names = [w.strip("`'\",.") for w in words if not w.startswith("-")]
        name = next((n for n in names if re.fullmatch(r"[A-Za-z][\w.-]{0,60}", n)
                     and n.split("=")[0].lower() not in _TORCHES), None)
        if name is not None and names[0].split("=")[0].lower() not in _TORCHES:
            return name, name
    return "the package being built", None


_ANY_INSTALL = re.compile(r"\b(?:pip3?|uv pip|uv|pixi|poetry)\s+(?:install|add|sync)\b")
# torch shown installed: pip's "Requirement already satisfied: torch", `pip show torch`'s Name
_TORCH_THERE = re.compile(r"Requirement already satisfied: torch[\s=]|^Name: torch\s*$|"
                          r"^Version: \d+\.\d+\.\d+\+cu\d+")
# a program's own frame (not pip's, not a setup.py): the import failed at run time instead
_RUN_FRAME = re.compile(r"File \"(?![^\"]*(?:setup\.py|pip-|[/\\]pip[/\\]|build_meta|"
                        r"setuptools|<string>))[^\"]+\.py\", line \d+")


def _under_setup_py(ctx: Context, index: int) -> bool:
    """The import failed in a traceback through a package's setup.py, or in the folder pip
    unpacks a source distribution into to build it."""
    return any("setup.py" in line or "pip-install-" in line or "pip-req-build-" in line
               for _, line in ctx.text.window(index, 6, 0))


# "When `pip install -e .`, the building process automatically downloads and installs torch"
_PULLS = re.compile(r"\bbuil\w{0,6}\b[^\n]{0,80}?\b(?:download|install|pull|fetch)(?:s|es|ing|ed)?\b"
                    r"[^\n]{0,30}?\btorch\b", re.I)


# pip's isolated build environment (pip/_internal/build_env.py: a "pip-build-env-" temporary
# directory, its packages under overlay/ and normal/) holding the torch the build imported
_ENV_TORCH = re.compile(r"pip-build-env-\w+[/\\](?:overlay|normal)[/\\][^\s'\"]{0,200}?[/\\]"
                        r"torch[/\\]")


def _isolated_torch(ctx: Context) -> List[Signal]:
    """The build log shows torch imported from pip's isolated build environment: the package
    was compiled against a torch pip downloaded for the build (a CUDA one on a ROCm machine, a
    newer one than the environment's), not the installed torch."""
    hit = ctx.first(_ENV_TORCH, ("pip-build-env-",))
    if hit is None:
        return []
    return [_signal(ctx, [ctx.quote(hit[0]), *ctx.quotes("torch")], "and imported the torch pip "
                    "put there for the build, not this environment's", LOGGED)]


# the build printing its torch ("setup.py with torch 1.12.0+cu102") while the environment's torch
# says another CUDA (torch.version.cuda -> '11.6'), in a build pip isolated (pip-build-env-...)
_BUILD_TORCH = re.compile(r"\btorch[ =]{1,2}\d+\.\d+\.\d+(?:\.dev\d+)?\+cu(\d{2,3})\b")
_RUNTIME_CUDA = re.compile(r"^\W{0,4}'(\d{2})\.(\d)'\s*$")  # the REPL's answer on its own line


def _other_torch_built(ctx: Context) -> List[Signal]:
    if not ctx.text.containing(("pip-build-env-",)):
        return []
    built = ctx.first(_BUILD_TORCH, ("torch",))
    asked = next(iter(ctx.text.containing(("torch.version.cuda",))), None)
    runtime = next(((i, m) for i in range(asked + 1, min(asked + 3, len(ctx.text.lines)))
                    for m in [_RUNTIME_CUDA.search(ctx.text.lines[i])] if m), None) \
        if asked is not None else None
    if built is None or runtime is None or built[1].group(1) == "".join(runtime[1].groups()):
        return []
    return [_signal(ctx, dedupe([ctx.quote(built[0]), ctx.quote(runtime[0])]),
                    "and compiled against the torch pip put there (another CUDA build than the "
                    "environment's torch)", LOGGED)]


def _pulls_torch(ctx: Context) -> List[Signal]:
    """A source build said, in prose, to download its own torch: pip's isolated build
    environment, filled from the package's pinned build requirements."""
    if e.FROM_SOURCE not in ctx.seen.marks:
        return []
    hit = ctx.first(_PULLS, ("torch",))
    if hit is None:
        return []
    return [_signal(ctx, [ctx.quote(hit[0]), ctx.seen.marks[e.FROM_SOURCE].quote],
                    "and its own torch: pip filled it from the package's pinned build "
                    "requirements", HINTED)]


def _requires_step(ctx: Context) -> List[Signal]:
    """The requirement step of a flash-attn build failed, and the report cuts before the error:
    under isolation, setup.py's import of torch is what fails there."""
    hit = ctx.first(_REQUIRES_STEP, ("getting requirements to build wheel",
                                     "failed to determine"))
    if hit is None or not ctx.text.containing(("flash-attn", "flash_attn", "flash attn")):
        return []
    return [_signal(ctx, [ctx.quote(hit[0])], "and its setup.py failed while asking for its "
                    "build requirements", LOGGED)]


def _signal(ctx: Context, quotes: List[Quote], what: str, strength: int,
            package: Optional[str] = None, asked: Optional[str] = None) -> Signal:
    pixi = ctx.has("pixi install", "pixi add", "pixi run", "pixi.toml", "[pypi-options]",
                   "pixi ") is not None
    uv = not pixi and ctx.has(*_UV) is not None and (
        ctx.has(*_UV_RUN) is not None or ctx.has(*_PIP) is None)
    # the package built: named by the caller, by the log, or flash-attn where the report names it
    known = package or build_package.built(ctx) or (
        "flash-attn" if build_package.named_flash(ctx) else None)
    # the report's own install line: a checkout or a repository, or (none known) the name it asks
    said = build_package.asked(ctx)
    own = said if said and said.startswith(("-e", ".", "git+")) else None
    if said and own is None and known is None and said.split("==")[0].lower() not in _NOT_BUILT:
        own, known = said, said.split("==")[0]
    package = known or "the package"
    local = ctx.has("pip install -e .", "pip install .", "pip3 install -e .", "pip3 install .")
    target = ("-e ." if local is not None and "-e ." in local.text else ".") \
        if local is not None and package != "flash-attn" else (asked or own or known)
    fixes = [Remedy(summary="Install the build's requirements first, then build without "
                    "isolation so setup.py sees your torch" + ("." if target else ": rerun the "
                                                               "same install command with "
                                                               "--no-build-isolation added."),
                    # torch named only when none is stated: pip's default torch would replace
                    # a ROCm or +cuXXX build the environment has
                    commands=["pip install " + ("" if ctx.torch else "torch ")
                              + "packaging ninja wheel setuptools",
                              *([command("pip", "install", *target.split(" "),
                                         "--no-build-isolation")] if target else [])]),
             *([mech_build.prebuilt(ctx)] if package == "flash-attn" else [])]
    if pixi:
        fixes.insert(0, Remedy(
            summary=f"In a pixi workspace, build {package} against the environment's torch: "
                    "list it under no-build-isolation in pixi.toml (pixi's manifest reference), "
                    "with torch a dependency, then install again.",
            code=PIXI_NO_ISOLATION.replace("flash-attn", known) if known else None,
            commands=["pixi install"]))
    if uv and ctx.has("uv pip") is not None:
        fixes.insert(0, Remedy(
            summary="With `uv pip`, install the build's requirements into the environment first, "
                    f"then build {package} without isolation (uv pip takes pip's "
                    "--no-build-isolation).",
            commands=["uv pip install torch setuptools wheel ninja packaging",
                      *([command("uv", "pip", "install", *target.split(" "),
                                 "--no-build-isolation")] if target else [])]))
    elif uv:
        fixes.insert(0, Remedy(
            summary=f"In a uv project, give {package}'s isolated build the project's own torch "
                    "(pyproject.toml, uv 0.8.4 or later: extra-build-dependencies with "
                    "match-runtime, as uv's documentation shows for flash-attn), then sync again.",
            code=UV_EXTRA_BUILD.replace("flash-attn =", f"{known} =") if known else None,
            commands=["uv sync"]))
    frontend = "pixi" if pixi else "uv" if uv else "pip"
    return Signal("build_isolation", Category.BUILD_ISOLATION,
                  f"{frontend} built {package} in an isolated environment {what}: {package}'s "
                  "setup.py imports torch, so it must build against your environment's torch",
                  quotes, strength, fixes,
                  details={"source": PIXI_DOCS if pixi else UV_DOCS} if pixi or uv else {})


# astral-sh/uv@0.8.12:crates/uv-build-frontend/src/error.rs (#15292): match-runtime needs the
# package's static metadata; docs/concepts/projects/config.md (0.12.5, "Dynamic metadata") gives
# [[tool.uv.dependency-metadata]] for a flash-attn without it; uv 0.11.0 read flash-attn's
# `Dynamic` fields case-insensitively and 0.11.1 reverted that (CHANGELOG.md at 0.11.1, #18692).
_MATCH_RUNTIME = re.compile(r"was declared with `match-runtime = true`, but `([\w.-]{1,60})` does "
                            r"not declare static metadata")
MATCH_RUNTIME_SOURCE = ("astral-sh/uv@0.8.12:crates/uv-build-frontend/src/error.rs (#15292); "
                        "@0.12.5:docs/concepts/projects/config.md:345-395; @0.11.1:CHANGELOG.md "
                        "(#18692)")


def match_runtime(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MATCH_RUNTIME, ("match-runtime",))
    if hit is None:
        return []
    index, found = hit
    package = found.group(1)
    uv = ctx.package("uv")
    # the release uv was building ("Failed to download and build `flash-attn==2.8.3`"), else the
    # one the report states: its metadata is what uv must be given
    built = ctx.first(re.compile(r"build `" + re.escape(package) + r"==([\w.]{1,30})`"),
                      ("build `",))
    stated = ctx.package(package)
    version = built[1].group(1) if built else (stated.value if stated else "<its version>")
    fixes = [Remedy(summary="If this began with uv 0.11.0, it is that release's reading of "
                    "flash-attn's `Dynamic` metadata, reverted in 0.11.1: upgrade uv "
                    "(uv self update), or keep the uv that worked.",
                    commands=["uv self update"]),
             Remedy(summary=f"Or give uv {package}'s metadata up front, as uv's documentation "
                    "shows for flash-attn, so it need not build it to resolve:",
                    code=f'[[tool.uv.dependency-metadata]]\nname = "{package}"\n'
                         f'version = "{version}"\nrequires-dist = ["torch", "einops"]'),
             Remedy(summary=f"Or pin torch exactly and give {package} that pin as its extra build "
                    "dependency instead of match-runtime:",
                    code=f'[tool.uv.extra-build-dependencies]\n{package} = ["torch==<your torch>"]')]
    return [Signal("isolation", Category.BUILD_ISOLATION,
                   f"uv cannot match {package}'s build-time torch to the runtime one: "
                   "match-runtime needs static metadata, and uv read it as dynamic",
                   [ctx.quote(index), *([uv.quote] if uv else [])], NAMED, fixes,
                   details={"source": MATCH_RUNTIME_SOURCE})]


# torch's extension builder sets CUDA_HOME only for a CUDA torch (torch==2.13.0:torch/utils/
# cpp_extension.py:359); under pip's build isolation the torch it imports is the one pip put in
# the isolated environment, a CPU build where the index's default is (Windows), whatever the
# user's CUDA_HOME says
_NOT_SET = re.compile(r"CUDA_HOME environment variable is not set")
_SAID_SET = re.compile(r"\bCUDA_(?:HOME|PATH)\b[^\n]{0,60}\b(?:is|was|are) (?:definitely |already |"
                       r"correctly |properly )?(?:set|in my environment|defined)|despite (?:having|"
                       r"setting) (?:it|CUDA_HOME|CUDA_PATH)", re.I)
_NO_ISOLATION = "--no-build-isolation"


def cuda_home_isolated(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_SET, ("cuda_home environment variable",))
    if hit is None or ctx.text.containing((_NO_ISOLATION,)):
        return []
    said = ctx.first(_SAID_SET, ("cuda_home", "cuda_path", "despite"))
    if said is None and not mech_build.on_windows(ctx):
        return []
    quotes = [ctx.quote(hit[0]), *([ctx.quote(said[0])] if said else [])]
    return [Signal("isolation", Category.BUILD_ISOLATION,
                   "the build's torch cannot see the CUDA toolkit: pip builds in an isolated "
                   "environment with its own torch (a CPU build where the index's default is "
                   "one, as on Windows), and torch's extension builder sets CUDA_HOME only for a "
                   "CUDA torch, whatever the environment variable says", quotes, NAMED + 1,
                   [Remedy(summary="Build against the installed CUDA torch: install with "
                           "--no-build-isolation (from a checkout, `pip install -e . "
                           "--no-build-isolation`), after installing the build's own "
                           "requirements (setuptools, wheel, ninja) into the environment.",
                           commands=["pip install -e . --no-build-isolation"])],
                   details={"source": "torch==2.13.0:torch/utils/cpp_extension.py:359"})]
