"""Another package's compiled extension that Python cannot find, while the package itself
imports: the install built only its Python part. The module names are the `CUDAExtension(name=...)`
of each package's setup.py, and the options that build them come from the same file:

- NVIDIA/apex setup.py (master, 2025-2026): `amp_C`, `syncbn`, `fused_layer_norm_cuda`,
  `mlp_cuda`, `fused_dense_cuda`, the megatron softmax and rotary modules and
  `fused_weight_gradient_mlp_cuda` are built only under `--cuda_ext` (the APEX_CUDA_EXT=1
  environment variable in current releases), `apex_C` only under `--cpp_ext` (APEX_CPP_EXT=1);
  `fused_adam_cuda` and `fused_lamb_cuda` under their own deprecated options. Its README: "APEX_CPP_EXT=1
  APEX_CUDA_EXT=1 pip install -v --no-build-isolation ." from a clone; a plain `pip install .`
  or a `pip install apex` (an unrelated package of that name on the index) builds none of them.
- state-spaces/mamba setup.py: `selective_scan_cuda`; Dao-AILab/causal-conv1d setup.py:
  `causal_conv1d_cuda` (both skip the build with their *_SKIP_CUDA_BUILD variable).
- Qwen's and Baichuan's remote modeling code (modeling_qwen.py) warns "import flash_attn rotary
  fail, please install FlashAttention rotary" when `flash_attn.layers.rotary` cannot import its
  compiled rotary_emb, and "import flash_attn rms_norm fail, please install FlashAttention
  layer_norm" for `flash_attn.ops.rms_norm` (dropout_layer_norm): both are built separately from
  flash-attention's csrc/rotary and csrc/layer_norm, never part of the flash-attn wheel (pure)."""

from __future__ import annotations

import re
import sys
from typing import List, Optional, Tuple

from fadoctor.checks.import_remedies import csrc_remedies
from fadoctor.report import Category, Remedy, Severity
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import LOGGED, NAMED, Signal, dedupe

_APEX_CUDA = ("amp_C", "syncbn", "fused_layer_norm_cuda", "mlp_cuda", "fused_dense_cuda",
              "scaled_upper_triang_masked_softmax_cuda", "generic_scaled_masked_softmax_cuda",
              "scaled_masked_softmax_cuda", "scaled_softmax_cuda",
              "fused_rotary_positional_embedding", "fused_weight_gradient_mlp_cuda")
_APEX_OWN_OPTION = ("fused_adam_cuda", "fused_lamb_cuda", "xentropy_cuda", "focal_loss_cuda",
                    "fast_layer_norm", "group_norm_cuda", "bnp")
_APEX_CPP = ("apex_C",)
_OTHERS = {"selective_scan_cuda": ("mamba-ssm", "MAMBA_SKIP_CUDA_BUILD"),
           "causal_conv1d_cuda": ("causal-conv1d", "CAUSAL_CONV1D_SKIP_CUDA_BUILD")}
_MODULE = re.compile(r"No module named '(" + "|".join(
    [*_APEX_CUDA, *_APEX_OWN_OPTION, *_APEX_CPP, *_OTHERS]) + r")'")
# apex's fused optimizers when amp_C did not import (multi_tensor_applier.available is False):
# NVIDIA/apex apex/optimizers/fused_adam.py: RuntimeError('apex.optimizers.FusedAdam requires
# cuda extensions'), the same in fused_lamb.py, fused_sgd.py, fused_novograd.py
_APEX_REQUIRES = re.compile(r"(apex\.[\w.]{1,60}) requires cuda extensions")
_APEX_BUILD = ["git clone https://github.com/NVIDIA/apex", "cd apex",
               "APEX_CPP_EXT=1 APEX_CUDA_EXT=1 pip install -v --no-build-isolation --no-cache-dir ."]


_REMOTE_CODE = re.compile(r"import flash_attn (rotary|rms_norm) fail", re.I)
_CSRC_OF = {"rotary": "rotary_emb", "rms_norm": "dropout_layer_norm"}


def missing_extension(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MODULE, ("no module named",)) or \
        ctx.first(_APEX_REQUIRES, ("requires cuda extensions",))
    if hit is None:
        return _remote_code(ctx) or _cuda_module(ctx)
    module, quotes = hit[1].group(1), [ctx.quote(hit[0])]
    if module.startswith("apex."):  # its optimizer, whose kernels are amp_C's
        module = "amp_C"
    if module in _OTHERS:
        package, skip = _OTHERS[module]
        return [Signal("extension_missing", Category.NOT_INSTALLED,
                       f"{module}, the compiled extension of {package}, is not installed: the "
                       f"install built only the Python part ({skip} set, no nvcc, or a build "
                       "that failed and left the package behind)", quotes, NAMED,
                       [Remedy(summary=f"Reinstall {package} so that it builds or fetches its "
                               "extension for this torch (nvcc of torch's CUDA major for a build), "
                               "and read the install's output for the step that failed.",
                               commands=[f"pip install --force-reinstall --no-deps "
                                         f"--no-build-isolation --no-cache-dir -v {package}"])])]
    option = ("--cpp_ext (APEX_CPP_EXT=1)" if module in _APEX_CPP else
              "--cuda_ext (APEX_CUDA_EXT=1)" if module in _APEX_CUDA else "its own build option")
    return [Signal("extension_missing", Category.NOT_INSTALLED,
                   f"{module} is one of apex's compiled extensions, built only with {option}: "
                   "this apex was installed without them (a plain `pip install .`, or the "
                   "unrelated `apex` package from the index)", quotes, NAMED,
                   [Remedy(summary="Reinstall apex from its repository with the C++ and CUDA "
                           "extensions (it needs nvcc of torch's CUDA major; on older apex the "
                           "same options are --config-settings \"--build-option=--cpp_ext\" "
                           "--config-settings \"--build-option=--cuda_ext\"), or use an NGC "
                           "PyTorch container, whose apex is built with them.",
                           commands=["pip uninstall -y apex", *_APEX_BUILD])])]


# Any other package's CUDA extension by the name research code gives it in setup.py
# (`CUDAExtension(name="attn_core_inplace_cuda")` in OpenFold, "fastfold_layer_norm_cuda" in
# FastFold): a top-level module the package's own install builds, never a distribution
_CUDA_MODULE = re.compile(r"No module named ['\"`]?([a-z][a-z0-9_]{1,60}_(?:cuda|cuda_ext|cuda_kernels?"
                          r"))\b['\"`]?")
_CHECKOUT_OR_SITE = re.compile(r"(?:(?:site|dist)-packages[\\/]+([A-Za-z_]\w{1,40})[\\/]|"
                               r"\b([A-Za-z_]\w{1,40})[\\/]\2[\\/])")


def _cuda_module(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUDA_MODULE, ("no module named",))
    if hit is None or hit[1].group(1).startswith(("torch", "flash_attn", "apex", "xformers")):
        return []
    module = hit[1].group(1)
    framed = _frame_package(ctx, hit[0])
    place = ctx.first(_CHECKOUT_OR_SITE, ("-packages", "/", "\\")) if framed is None else None
    package = framed[0] if framed else (place[1].group(1) or place[1].group(2)) if place else \
        "the package"
    return [Signal("extension_missing", Category.NOT_INSTALLED,
                   f"{module}, the CUDA extension {package}'s own install builds, is not "
                   "installed: the package was used from its source tree or installed without "
                   "building it (no nvcc or CUDA_HOME at install time, or a build step that "
                   "failed and left the Python part behind)", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Build and install {package} with its extension where it "
                           "runs: from its checkout, `pip install . --no-build-isolation -v` (or "
                           "`python setup.py install`), with CUDA_HOME at a CUDA toolkit of "
                           "torch's CUDA major and its nvcc on PATH (on a cluster, `module load "
                           "cuda` before installing); the build output names the step that "
                           "failed.", commands=["pip install . --no-build-isolation -v"])])]


def _remote_code(ctx: Context) -> List[Signal]:
    """A model's remote code that could not import flash-attention's separately built parts."""
    hit = ctx.first(_REMOTE_CODE, ("import flash_attn",))
    if hit is None:
        return []
    module = _CSRC_OF[hit[1].group(1).lower()]
    return [Signal("extension_missing", Category.NOT_INSTALLED,
                   f"the model's code imports flash-attention's {hit[1].group(1)} ({module}), "
                   "which the flash-attn wheel does not contain: it is built separately from the "
                   "flash-attention sources; the model runs without it, slower", [ctx.quote(hit[0])],
                   NAMED, csrc_remedies(module), Severity.WARNING)]


# a package's own compiled module, asked of the package ("cannot import name '_C' from 'sam2'",
# "No module named 'sam2._C'"): installed (or run from a checkout) without its extension built
_OWN_C = re.compile(r"cannot import name ['\"`](_C|_ext|_cuda|_kernels?)['\"`] from ['\"`]"
                    r"([A-Za-z_]\w{0,40})['\"`]|No module named ['\"`]([A-Za-z_]\w{0,40})\.(_C|_ext|_cuda|"
                    r"_kernels?)"
                    r"['\"`]")
_TABLED = ("torch", "flash_attn", "vllm", "xformers", "apex", "triton", "sgl_kernel")


# the same, where the package imported it in a try block and went on without it
# (GroundingDINO's ms_deform_attn.py: `try: from groundingdino import _C` / `except:
# warnings.warn("Failed to load custom C++ ops. Running on CPU mode Only!")`), so the first use
# fails: "NameError: name '_C' is not defined"
_NAME_C = re.compile(r"(?:NameError: )?name ['\"`](_C|_ext|[a-z][a-z0-9]{1,30}_ext)['\"`] is not "
                     r"defined")
# a report that shows a build of the package (not a prebuilt wheel)
_BUILT_HERE = re.compile(r"setup\.py|building|\bnvcc\b|pip3? install (?:-e|--editable|\.)", re.I)


def own_extension(ctx: Context) -> List[Signal]:
    hit = ctx.first(_OWN_C, ("cannot import name", "no module named"))
    if hit is None:
        return _unbound_extension(ctx) or _private_module(ctx)
    found = hit[1]
    module, package = (found.group(1), found.group(2)) if found.group(2) else (
        found.group(4), found.group(3))
    if package.startswith(_TABLED):
        return []
    if package == "mmcv":
        return [_mmcv_ops(ctx, hit[0])]
    return [Signal("extension_missing", Category.NOT_INSTALLED,
                   f"{package}'s own compiled extension ({package}.{module}) is not built: the "
                   "package (or the checkout Python runs it from) holds only its Python part, "
                   "because the build skipped or failed on its CUDA/C++ part",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Build {package}'s extension where it is installed: from its "
                           "checkout, `pip install -e . --no-build-isolation -v` (or `python "
                           "setup.py build_ext --inplace`), with an nvcc of torch's CUDA major, "
                           "and read the output for the step that failed; a checkout run in "
                           "place needs the in-place build.",
                           commands=["pip install -e . --no-build-isolation -v"])])]


def _mmcv_ops(ctx: Context, index: int) -> Signal:
    """mmcv._ext, mmcv's compiled ops: mmcv 1.x ships them only in the mmcv-full distribution
    (its setup.py names the build 'mmcv-full' when MMCV_WITH_OPS=1, and 'mmcv', without ops,
    otherwise); mmcv 2.x ships them in 'mmcv' and leaves them out of 'mmcv-lite'. OpenMMLab's
    installer (openmim) picks the prebuilt wheel for the installed torch and CUDA."""
    stated = ctx.package("mmcv-full", "mmcv")
    release = parse_version(stated.value) if stated is not None else None
    def ops(one: str, series: str) -> Remedy:
        return Remedy(summary=f"For mmcv {series}: install {one}, mmcv with its ops, for this "
                      "torch and CUDA through OpenMMLab's installer, which picks the prebuilt "
                      "wheel" + (" (a source build of 1.x needs MMCV_WITH_OPS=1)"
                                 if series == "1.x" else "") + ".",
                      commands=[command("pip", "uninstall", "-y", "mmcv", "mmcv-lite"),
                                command("pip", "install", "-U", "openmim"), f"mim install {one}"])
    fixes = [ops("mmcv", "2.x")] if release is not None and release.major >= 2 else \
        [ops("mmcv-full", "1.x")] if release is not None else \
        [ops("mmcv-full", "1.x"), ops("mmcv", "2.x")]
    return Signal("extension_missing", Category.NOT_INSTALLED,
                  "mmcv's compiled ops (mmcv._ext) are not installed: this is the build without "
                  "them (mmcv 1.x's plain `mmcv`, or 2.x's `mmcv-lite`), or a source build that "
                  "skipped them", dedupe([ctx.quote(index), *([stated.quote] if stated else [])]),
                  NAMED, fixes)


def _unbound_extension(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NAME_C, ("is not defined",))
    if hit is None:
        return []
    framed = _frame_package(ctx, hit[0])
    named = hit[1].group(1)
    package = framed[0] if framed else named[:-4] if named not in ("_C", "_ext") else "the package"
    torch = ctx.seen.get("torch")
    if named not in ("_C", "_ext") and torch and ctx.first(_BUILT_HERE, (
            "setup.py", "building", "nvcc", "pip install", "pip3 install")) is None:
        # a prebuilt wheel's extension (exllamav2_ext) that did not load: wheels built per torch
        return [Signal("extension_missing", Category.TORCH_VERSION_MISMATCH,
                       f"{package}'s compiled extension ({named}) did not load, so the package "
                       "went on without it and its first use fails: a prebuilt wheel of it "
                       f"matches one torch and CUDA, and this torch is {torch}",
                       dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                       [Remedy(summary=f"Install the {package} wheel built for torch {torch} "
                               "(its release assets name the torch version and CUDA of each "
                               "wheel, and the Python), replacing the one installed; or build "
                               f"{package} from source against this torch."),
                        Remedy(summary=f"Import {named} directly in this Python to see the "
                               "loader's own error (an undefined symbol names the torch "
                               "mismatch).", commands=[command("python", "-c", f"import {named}")])])]
    return [Signal("extension_missing", Category.BUILD_TOOLCHAIN,
                   f"{package}'s compiled extension ({hit[1].group(1)}) was never built: its import "
                   "failed quietly (the package warns and goes on without it), so its first use "
                   "fails; the build found no CUDA toolkit (CUDA_HOME) or failed on its C++ part",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Rebuild {package} where CUDA_HOME points at a CUDA toolkit "
                           "of torch's CUDA major (its nvcc on PATH), from its checkout, and read "
                           "the build output for the CUDA extension's step; then import it in "
                           "Python to check the warning is gone.",
                           commands=["export CUDA_HOME=/usr/local/cuda",
                                     "pip install -e . --no-build-isolation -v"])])]


# A private top-level module a package's own file imports ("import _turbomind as _tm" in
# lmdeploy/turbomind/turbomind.py): a pybind/C++ extension the package's build puts beside it.
# Python's own private C modules (_ctypes, _ssl ...) are another matter: an interpreter built
# without their libraries.
_PRIVATE = re.compile(r"No module named ['\"`](_[a-z][a-z0-9_]{1,40})['\"`]")
_PY_PRIVATE = {"_ctypes", "_sqlite3", "_lzma", "_bz2", "_ssl", "_tkinter", "_curses", "_dbm",
               "_gdbm", "_uuid", "_hashlib", "_decimal", "_posixsubprocess", "_socket"}
# the package of a frame: site-packages/<pkg>/..., a checkout's <pkg>/<pkg>/... or src/<pkg>/...
_FRAME_PACKAGE = re.compile(r"(?:(?:site|dist)-packages[\\/]+|[\\/]src[\\/]|[\\/]([A-Za-z_]\w*)"
                            r"[\\/]+(?=\1[\\/]))([A-Za-z_]\w*)[\\/][\w\\/.-]*\.py\"")


def _frame_package(ctx: Context, index: int) -> Optional[Tuple[str, bool]]:
    """(package, whether the frame is a source checkout's <pkg>/<pkg>/ rather than installed)."""
    for line in reversed(ctx.text.lines[max(0, index - 12):index]):
        found = _FRAME_PACKAGE.search(line) if 'File "' in line else None
        if found is not None:
            return found.group(2), found.group(1) is not None
    return None


def _private_module(ctx: Context) -> List[Signal]:
    # the occurrence under a traceback (a title repeats the message with none above it)
    found = [(hit, _frame_package(ctx, hit[0])) for hit in ctx.find(
        _PRIVATE, ("no module named '_", 'no module named "_', "no module named `_"))]
    hit, framed = next(((h, p) for h, p in found if p is not None), (None, None))
    if hit is None or framed is None or framed[0] in ("torch", "importlib"):
        return []
    package, checkout = framed
    module = hit[1].group(1)
    if module in _PY_PRIVATE or module in getattr(sys, "stdlib_module_names", ()) \
            or module.startswith("_distutils"):
        return []
    editable = ctx.first(re.compile(r"pip3? install (?:-e|--editable)\b"), ("install -e",
                                                                           "--editable"))
    installed = ctx.first(re.compile(rf"pip3? install (?:-U |--upgrade )?{package}\b"),
                          ("pip install", "pip3 install"))
    if checkout and installed is not None and editable is None:
        return [Signal("extension_missing", Category.NOT_INSTALLED,
                       f"Python imports {package} from a source checkout (the traceback's "
                       f"…/{package}/{package}/ path), which shadows the installed {package} "
                       f"whose wheel carries {module}: the checkout has no built extension",
                       [ctx.quote(hit[0]), ctx.quote(installed[0])], LOGGED,
                       [Remedy(summary="Run outside the source directory (cd to another "
                               f"folder first), so that import finds the installed "
                               f"{package} with its extension; or build the checkout's extension "
                               "per its build docs.")])]
    return [Signal("extension_missing", Category.NOT_INSTALLED,
                   f"{module}, the compiled extension {package}'s code imports, is not installed "
                   "beside it: " + ("an editable install (pip install -e .) of the source tree "
                                    "did not build it" if editable else "the install holds only "
                                    "the Python part (a source tree, or a build that skipped its "
                                    "C++/CUDA step)"),
                   [ctx.quote(hit[0]), *([ctx.quote(editable[0])] if editable else [])],
                   NAMED if editable else LOGGED,
                   [Remedy(summary=f"Install {package}'s released precompiled wheel, which "
                           f"carries {module} (or its container image), instead of running the "
                           "source tree; or build the extension with the project's own build "
                           "steps (its CMake/make install, per its build docs) into the same "
                           "environment.", commands=[command("pip", "install", dist_of(package))])])]


# `git clone [--depth 1 | -b BRANCH ...] URL [DIR]`: the repository's folder (DIR, else the URL's)
_CLONED = re.compile(r"git clone\s+(?:--?[\w-]+(?:[ =](?!https?:)[^\s-]\S*)?\s+)*\S*?/([\w.-]{2,60}?)"
                     r"(?:\.git)?/?(?:\s+([\w.-]{2,60}))?(?:\s|$)")
_INSTALLED_BUILD = re.compile(r"pip3? install\b[^\n]{0,300}?(?:dist/\S+\.whl|\s\.(?:\s|$))|setup\.py "
                              r"(?:install|bdist_wheel)")
_EDITABLE = ("install -e", "--editable", "setup.py develop")
# what an import of the package that found only the source tree says: its built parts missing
_IMPORT_FAILED = re.compile(r"No module named|cannot import name|Could not find|cannot open shared "
                            r"object|\.so\b|_C\b|not built", re.I)


def checkout_shadow(ctx: Context) -> List[Signal]:
    """An import-time error raised from the package folder inside the repository the report
    cloned (not site-packages), after it built and installed that repository (not editable):
    Python runs with the current directory first on sys.path, so started in the checkout it
    imports the source tree (without the built libraries) in place of the installed package."""
    cloned = ctx.first(_CLONED, ("git clone",))
    if cloned is None or ctx.text.containing(_EDITABLE):
        return []
    built = ctx.first(_INSTALLED_BUILD, ("pip install", "pip3 install", "setup.py"))
    raised = next((r for r in reversed(ctx.seen.raised) if r.kind not in ("warning", "log")), None)
    if built is None or raised is None or not _IMPORT_FAILED.search(raised.message):
        return []
    repo = cloned[1].group(2) or cloned[1].group(1)
    inside = re.compile(rf"[\\/]{re.escape(repo)}[\\/]+\w+[\\/](?:[\w.-]+[\\/])*__init__\.py$")
    if not any(inside.search(frame) and "-packages" not in frame for frame in raised.frames):
        return []
    return [Signal("checkout_shadow", Category.NOT_INSTALLED,
                   f"Python imports the package from the {repo} checkout (the traceback's frames "
                   "are in the source tree, not site-packages), which shadows the build installed "
                   "from it: the source tree has none of the built libraries",
                   dedupe([raised.quote, ctx.quote(built[0])]), LOGGED,
                   [Remedy(summary=f"Run from another directory (change out of {repo} first), so "
                           "that import finds the installed package with its built libraries.")])]


# "cannot import name 'activation_ops' from 'vllm'", "... from partially initialized module 'vllm'"
_NAME_FROM = re.compile(r"cannot import name ['\"`](\w{1,60})['\"`] from (?:partially initialized "
                        r"module )?['\"`]([A-Za-z_]\w{0,40})['\"`]")


def run_in_tree(ctx: Context) -> List[Signal]:
    """An import of a package's own module failing where the report says it runs inside that
    package's source folder (GitHub's archive folder "<repo>-main", or "the <pkg> directory"):
    the current directory comes first on sys.path, so the source tree, without the modules its
    build compiles, shadows the installed package."""
    hit = ctx.first(_NAME_FROM, ("cannot import name",))
    if hit is None:
        return []
    index, found = hit
    package = found.group(2)
    # GitHub's archive folder, or a run placed in the package's folder ("ran it from the vllm
    # repo"; not "missing in the vllm directory", which may be site-packages')
    inside = re.compile(rf"\b(?:in|inside|from|within|under)\s+(?:the\s+)?[`'\"]?{package}[-_]"
                        rf"(?:main|master)\b|\b(?:run|ran|running|launch\w*|execut\w*|start\w*|"
                        rf"did it|do it)\b[^.\n]{{0,40}}\b(?:in|inside|from|within)\s+(?:the\s+)?"
                        rf"[`'\"]?{package}[`'\"]?\s+(?:source\s+)?(?:folder|directory|dir|"
                        rf"repo(?:sitory)?|checkout|root)\b", re.I)
    said = ctx.first(inside, (package.lower(),))
    if said is None or said[0] == index:
        return []
    return [Signal("checkout_shadow", Category.NOT_INSTALLED,
                   f"the report runs inside {package}'s source folder, so `import {package}` "
                   f"finds the source tree (the current directory comes first on sys.path) "
                   f"instead of the installed {package}, and the tree lacks {found.group(1)}, a "
                   "module the build makes",
                   dedupe([ctx.quote(index), ctx.quote(said[0])]), NAMED,
                   [Remedy(summary=f"Run it outside the source directory: cd to another "
                           f"directory first, so that import finds the installed {package}; "
                           "or build the tree in place (pip install -e .).")])]
