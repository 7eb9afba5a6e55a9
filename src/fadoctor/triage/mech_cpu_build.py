"""A CUDA extension built without its CUDA code. The setup.py of most PyTorch extensions compiles
the CUDA sources only where `torch.cuda.is_available() or os.getenv('FORCE_CUDA', '0') == '1'`
(PyG's torch_scatter / torch_sparse, mmcv, mmdet and others): a build on a machine or in a
container step without a GPU produces the CPU-only extension. PyG's packages then refuse to load
("Detected that PyTorch and torch_sparse were compiled with different CUDA versions. PyTorch has
CUDA version 10.1 and torch_sparse has CUDA version 0.0", their __init__.py), and mmcv's ops say
"... is not compiled with GPU support". A non-zero version there that differs from torch's is a
build for another CUDA (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import Unsafe, command, env, requirement, url
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import NAMED, Signal

_PYG = re.compile(r"Detected that PyTorch and (torch_(?:scatter|sparse|cluster|spline_conv)) were "
                  r"compiled with different CUDA "
                  r"versions\. PyTorch has CUDA version (\d{1,3}(?:\.\d{1,3})?) and \1 has CUDA "
                  r"version (-?\d{1,3}(?:\.\d{1,3})?)")
_NO_GPU_SUPPORT = re.compile(r"\bis not compiled with GPU support\b")
# another extension's own words (pytorch3d's csrc: AT_ERROR("Not compiled with GPU support")),
# after a build in a container step, where FORCE_CUDA must reach pip's environment: `FORCE_CUDA=1
# && pip install ...` sets a shell variable that pip's build never sees
_NOT_GPU = re.compile(r"\bNot compiled with GPU(?: support)?\b", re.I)
_FORCE_UNEXPORTED = re.compile(r"\bFORCE_CUDA=1\s*(?:&&|;)")
_GIT_INSTALL = re.compile(r"\bpip3? install\b[^\n]{0,80}?['\"]?git\+(https://[\w.-]+/[\w./-]+?)"
                          r"(?:\.git)?['\"]?(?:\s|$)")
# PyG's C++ ops without WITH_CUDA (csrc/*.cpp: AT_ERROR("Not compiled with CUDA support")), named by
# the frame or the op that raised it (torch.ops.torch_cluster.radius)
_PYG_NO_CUDA = re.compile(r"\bNot compiled with CUDA support")
_PYG_PACKAGE = re.compile(r"\b(torch[_-](?:scatter|sparse|cluster|spline[_-]conv)|pyg[_-]lib)"
                          r"(?:[\\/.]|==)")


def _rebuild(package: str, version: str = "", ops: bool = False) -> Remedy:
    return Remedy(summary=f"Rebuild {package} with its CUDA code: its setup.py compiles it only "
                  "where torch sees a GPU, or with FORCE_CUDA=1 (a Docker build step or a node "
                  "without a GPU needs it)" + ("; mmcv 1.x compiles its ops at all only with "
                                               "MMCV_WITH_OPS=1, and names that build mmcv-full"
                                               if ops else "")
                  + "; or install its prebuilt wheel for this torch and CUDA "
                  "(the package's own wheel index, which its README names).",
                  commands=[command(*([env("MMCV_WITH_OPS", 1)] if ops else []),
                                    env("FORCE_CUDA", 1), "pip", "install",
                                    "--no-build-isolation", "--no-cache-dir", "--force-reinstall",
                                    "--no-deps", "--no-binary", package,
                                    requirement(package, version) if version else package)])


def without_cuda(ctx: Context) -> List[Signal]:
    hit = ctx.first(_PYG, ("were compiled with different cuda versions",))
    if hit is not None:
        package = dist_of(hit[1].group(1))
        torch_cuda, built = hit[1].group(2), hit[1].group(3)
        if float(built) <= 0:  # 0.0 (or -1): no CUDA in the build
            return [Signal("cpu_build", Category.BUILD_TOOLCHAIN,
                           f"{package} was built without CUDA (it reports CUDA version {built}; "
                           f"torch has {torch_cuda}): its build saw no GPU, so its setup.py "
                           "compiled the CPU-only extension", [ctx.quote(hit[0])], NAMED,
                           [_rebuild(package)])]
        same_major = built.split(".")[0] == torch_cuda.split(".")[0]
        # torch_scatter 2.1.0's __init__ raises only `if t_major != major`: a minor-version
        # difference runs (CUDA minor-version compatibility); earlier releases compared both
        relaxed = [Remedy(summary=f"The two differ only in the CUDA minor version, which runs: "
                          f"this {package} release's check compares the minor version too, and "
                          f"later releases compare only the major (torch_scatter 2.1.0's "
                          f"__init__): upgrade {package} (its latest release for this torch).")
                   ] if same_major else []
        return [Signal("cpu_build", Category.CUDA_RUNTIME_MISMATCH,
                       f"{package} was built for CUDA {built}, torch for CUDA {torch_cuda}: "
                       + ("this release's check refuses another CUDA minor version" if same_major
                          else "its compiled extension must match torch's CUDA"),
                       [ctx.quote(hit[0])], NAMED,
                       [*relaxed, Remedy(summary=f"Install the {package} wheel built for this torch and "
                               f"CUDA {torch_cuda} (the package's wheel index for torch's "
                               "version and CUDA, which its README names), or rebuild it from "
                               "source against this torch."), _rebuild(package)])]
    pyg = _pyg_cpu(ctx)
    if pyg:
        return pyg
    hit = ctx.first(_NO_GPU_SUPPORT, ("not compiled with gpu support",))
    if hit is None or not ctx.text.containing(("mmcv",)):
        return _built_in_container(ctx)  # mmcv's ops say so; others by their install line
    package = "mmcv-full" if ctx.text.containing(("mmcv-full", "mmcv_full")) else "mmcv"
    stated = ctx.package(package) or ctx.package("mmcv-full", "mmcv")  # kept: mmdet caps mmcv
    version = stated.value if stated is not None else ""
    release = parse_version(version)
    # mmcv 1.x's setup.py: `if os.getenv('MMCV_WITH_OPS', '0') == '0': return extensions`, and
    # name='mmcv' if MMCV_WITH_OPS is '0' else 'mmcv-full'; 2.x builds the ops by default
    old = release is not None and release < Version("2.0")
    if old:
        package = "mmcv-full"
    return [Signal("cpu_build", Category.BUILD_TOOLCHAIN,
                   f"{package}'s CUDA ops were not compiled: its build saw no GPU (or CUDA), so "
                   "its setup.py built the CPU-only extension", [ctx.quote(hit[0])], NAMED,
                   [_rebuild(package, version, old)])]


def _pyg_cpu(ctx: Context) -> List[Signal]:
    """A PyG package's op raising "Not compiled with CUDA support": its CPU build is installed."""
    for index, _ in ctx.find(_PYG_NO_CUDA, ("not compiled with cuda support",)):
        near = ctx.text.lines[max(0, index - 30):index + 1]
        named = [found.group(1) for line in near for found in _PYG_PACKAGE.finditer(line)]
        if not named:
            continue
        package = dist_of(named[-1].replace("-", "_"))
        torch = ctx.torch
        cuda = ctx.torch_cuda_stated
        page = (f" (for this torch, the page torch-{torch.base_version}+cu{cuda.major}"
                f"{cuda.minor}.html)" if torch is not None and cuda is not None
                and cuda.release[1:] else "")
        return [Signal("cpu_build", Category.WRONG_WHEEL,
                       f"{package} is its CPU build: the op that raised this has no CUDA code "
                       "(a wheel for +cpu, or a build from source that saw no CUDA)",
                       [ctx.quote(index)], NAMED,
                       [Remedy(summary=f"Reinstall {package} as the CUDA wheel for torch's "
                               f"version and CUDA from PyG's wheel index (`pip install {package} "
                               f"-f` the index page its README names{page}).",
                               commands=[command("pip", "uninstall", "-y", package)]),
                        _rebuild(package)])]
    return []


# A build script reading torch's CUDA, which a torch without CUDA has as None (torch.version.cuda
# of a CPU or macOS build): "CUDA_VERSION = "".join(torch.version.cuda.split("."))" then
# "'NoneType' object has no attribute 'split'".
_CUDA_NONE = re.compile(r"'NoneType' object has no attribute '\w+'|unsupported operand type\(s\) "
                        r"for [^\n]{1,40}'NoneType'|'NoneType' object is not subscriptable")
MAC = re.compile(r"/private/var/folders/|/Users/\w|/opt/homebrew/|\bmacOS\b|\bmac ?os\b|\bmacbook\b|"
                  r"\bdarwin\b|\bapple silicon\b|\bM[1-4] (?:Pro|Max|Ultra|chip)\b|"
                  r"\b(?:on|support|use|using) (?:a |my )?mac\b", re.I)


def torch_without_cuda(ctx: Context) -> List[Signal]:
    for index, _ in ctx.find(_CUDA_NONE, ("nonetype",)):
        near = ctx.text.lines[max(0, index - 3):index]
        if not any("torch.version.cuda" in line for line in near):
            continue
        mac = any(MAC.search(line) for line in ctx.text.lines[:400])
        if mac:
            return [Signal("torch_without_cuda", Category.PLATFORM_UNSUPPORTED,
                           "the package builds CUDA code, and torch on macOS has no CUDA "
                           "(torch.version.cuda is None): it needs an NVIDIA GPU on Linux or "
                           "Windows", [ctx.quote(index)], NAMED,
                           [Remedy(summary="Run it on a Linux (or Windows) machine with an NVIDIA "
                                   "GPU and a CUDA build of torch; on a Mac use a package that "
                                   "runs on Apple's GPU (MPS) or the CPU instead (for quantized "
                                   "LLMs, llama.cpp's Metal backend or MLX).")])]
        return [Signal("torch_without_cuda", Category.TORCH_CPU_ONLY,
                       "the package builds CUDA code against torch, and the installed torch is a "
                       "CPU-only build (torch.version.cuda is None)", [ctx.quote(index)], NAMED,
                       [Remedy(summary="Install a CUDA build of torch first (PyTorch's index for "
                               "your CUDA, as its install selector gives), then install the "
                               "package again with --no-build-isolation so its build sees that "
                               "torch.")])]
    return []


def _built_in_container(ctx: Context) -> List[Signal]:
    """An extension saying it was "Not compiled with GPU" after a build that set FORCE_CUDA
    without exporting it, or that installed it from a git URL in a container build step."""
    hit = ctx.first(_NOT_GPU, ("not compiled with gpu",))
    if hit is None:
        return []
    unexported = ctx.first(_FORCE_UNEXPORTED, ("force_cuda=1",))
    source = ctx.first(_GIT_INSTALL, ("git+https://",))
    if unexported is None and not ctx.has("dockerfile", "docker build", "run pip"):
        return []
    commands = []
    if source is not None:
        try:
            commands = [command(env("FORCE_CUDA", 1), "pip", "install", "--no-build-isolation",
                                "--no-cache-dir", "--force-reinstall", "--no-deps",
                                "git+" + url(source[1].group(1)))]
        except Unsafe:
            commands = []
    return [Signal("cpu_build", Category.NO_GPU,
                   "the extension was built without its CUDA code: its build saw no GPU (a "
                   "container build step has none) and FORCE_CUDA did not reach it"
                   + (" (`FORCE_CUDA=1 &&` sets a shell variable, which pip's build does not "
                      "see)" if unexported is not None else ""),
                   [ctx.quote(hit[0]), *([ctx.quote(unexported[0])] if unexported else [])],
                   NAMED,
                   [Remedy(summary="Rebuild it with FORCE_CUDA=1 in pip's own environment: "
                           "`FORCE_CUDA=1 pip install ...` on one line (or `ENV FORCE_CUDA=1` "
                           "in the Dockerfile), with TORCH_CUDA_ARCH_LIST naming the GPUs it "
                           "will run on, since the build cannot see them.", commands=commands)])]


# tiny-cuda-nn's setup.py with no GPU to query (a container build step): "Unknown compute
# capability. Specify the target compute capabilities in the TCNN_CUDA_ARCHITECTURES environment
# variable or install PyTorch with the CUDA backend to detect it automatically."
_ARCH_VAR = re.compile(r"Specify the target compute capabilit(?:y|ies) in the ([A-Z][A-Z0-9_]{2,40}) "
                       r"environment variable")


def arch_unknown_at_build(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ARCH_VAR, ("specify the target compute capabilit",))
    if hit is None:
        return []
    var = hit[1].group(1)
    cc = ctx.gpu_cc_exact
    value = f"{cc.major}{cc.minor}" if cc is not None else ""
    return [Signal("cpu_build", Category.NO_GPU,
                   f"the build could not read a GPU's compute capability (no GPU visible: a "
                   f"container build step, or a CPU torch) and asks for it in {var}",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Set {var} to the compute capability of the GPUs it will run "
                           "on, without its dot (" + (f"{value} for the {ctx.gpu[0]}"
                                                      if cc is not None and ctx.gpu else
                                                      "86 for an RTX 30-series, sm_86")
                           + "; several separated by ';') in the build's environment (`ENV` in a "
                           "Dockerfile, or before pip on the same line), or build where `docker "
                           "run --gpus all` shows the GPU.")])]
