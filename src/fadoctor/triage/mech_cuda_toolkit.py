"""The CUDA toolkit a build uses against what it needs: MSVC's preprocessor under CUDA's CCCL
headers, a toolkit of another major than torch's CUDA stated in prose, and nvcc refusing an
option the build passes (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_build import _BUILD_FAILED, _NVCC_VS_TORCH, prebuilt, toolkit
from fadoctor.triage.signal import IMPLIED, LOGGED, NAMED, Signal, dedupe

# CCCL (CUDA 12.8+'s libcu++) refuses MSVC's traditional preprocessor: its
# cuda/std/__cccl/preprocessor.h `#error`s and asks for /Zc:preprocessor, which CUDA's host
# compiler only gets when passed on. MSVC reads extra options from the CL environment variable
# (Microsoft's "CL environment variables" documentation); nvcc forwards -Xcompiler options.
_ZC = re.compile(r"traditional preprocessor is used[^\n]{0,80}|pass `?/Zc:preprocessor`? to cl\.exe")


def msvc_preprocessor(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ZC, ("traditional preprocessor", "/zc:preprocessor"))
    if hit is None:
        return []
    return [Signal("compiler", Category.BUILD_TOOLCHAIN,
                   "CUDA's CCCL headers need MSVC's conforming preprocessor (/Zc:preprocessor), "
                   "and this build runs cl.exe with the traditional one",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Pass /Zc:preprocessor to the host compiler: MSVC reads extra "
                           "options from the CL environment variable, and nvcc forwards "
                           "-Xcompiler ones (set both in the shell that builds).",
                           commands=["set CL=/Zc:preprocessor",
                                     'set NVCC_APPEND_FLAGS=-Xcompiler "/Zc:preprocessor"'])],
                   details={"source": "CCCL in the CUDA toolkit's include tree: "
                                      "cccl/cuda/std/__cccl/preprocessor.h (its message for "
                                      "MSVC's traditional preprocessor)"})]


_FA_INSTALL = ("flash-attn", "flash_attn", "flash attn", "flashattention", "fa ", " fa.")


def toolkit_major_prose(ctx: Context) -> List[Signal]:
    """The report states a CUDA toolkit (nvcc, or 'CUDA version') of another major than torch's
    CUDA, about installing flash-attention: a build needs nvcc of torch's CUDA major
    (torch/utils/cpp_extension.py _check_cuda_version raises on a major mismatch, pytorch@0011ec5c;
    flash_attn_facts.md §1.3), so one of the two must move."""
    have, torch_cuda = ctx.nvcc or parse_version(ctx.seen.get(o.CUDA)), ctx.torch_cuda
    if have is None or torch_cuda is None or have.major == torch_cuda.major \
            or not ctx.text.containing(_FA_INSTALL):
        return []
    if ctx.first(_NVCC_VS_TORCH, ("mismatches the version",)) is not None:
        return []  # cpp_extension's own message: nvcc_version reads it
    quotes = dedupe([*ctx.quotes("nvcc", "cuda", "torch", "torch_cuda")])
    if not quotes:
        return []
    return [Signal("nvcc_version", Category.BUILD_TOOLCHAIN,
                   f"the CUDA toolkit here is {have.major}.x and torch is built for CUDA "
                   f"{torch_cuda}: building flash-attn needs nvcc of torch's CUDA major "
                   "(cpp_extension refuses another major)", quotes, IMPLIED,
                   r.keep([r.torch_for_cuda(ctx, have.major),
                           Remedy(summary=f"Or install CUDA toolkit {torch_cuda} beside it and "
                                  "point CUDA_HOME at it for the build."),
                           prebuilt(ctx)]),
                   details={"source": "pytorch/pytorch@0011ec5c:torch/utils/cpp_extension.py "
                                      "(_check_cuda_version)"})]


# nvcc refusing an option the build passes: `nvcc fatal   : Unknown option '-compress-mode=size'`
_UNKNOWN_OPTION = re.compile(r"nvcc(?: fatal)?\s*:\s*Unknown option '?(-{1,2}[\w-]+)", re.I)
# Options a flash-attn release passes that older nvcc lacks: the releases that pass it and the
# first that does not. flash-attn 2.8.1 added `-Xfatbin -compress-all -compress-mode=size`
# (PR #1744); 2.8.2 reverted it (PR #1751) (flash_attn_facts.md §5, fa_wheel_matrix.yaml v2.8.1).
_FA_OPTIONS = {"-compress-mode": ("2.8.1", "2.8.2", "PR #1744 added it; PR #1751 reverted it")}


def unknown_option(ctx: Context) -> List[Signal]:
    hit = ctx.first(_UNKNOWN_OPTION, ("unknown option",))
    if hit is None:
        return []
    option = hit[1].group(1)
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("nvcc")])
    remedies = [Remedy(summary=f"Build with a newer CUDA toolkit whose nvcc knows {option} (put "
                       "its bin/ first on PATH and set CUDA_HOME to it), or a release of the "
                       "package that does not pass it.")]
    known = _FA_OPTIONS.get(option)
    if known is not None and ctx.text.containing(("flash", "flash_attn")):
        passes, spared, why = known
        remedies.insert(0, Remedy(
            summary=f"flash-attn {passes} passes {option} to nvcc ({why}): install flash-attn "
                    f"{spared} or later, which builds with this nvcc.",
            commands=[f'pip install "flash-attn>={spared}" --no-build-isolation --no-cache-dir']))
    return [Signal("nvcc_unknown_option", Category.BUILD_TOOLCHAIN,
                   f"this nvcc does not know {option}, an option the build passes: the build "
                   "expects a newer nvcc", quotes, NAMED, remedies)]


# An NVIDIA NGC container's start-up check, with the driver release it was built for and the one
# it found: "ERROR: This container was built for NVIDIA Driver Release 535.86 or later, but
# version 510.85.02 was detected and compatibility mode is UNAVAILABLE."
_NGC_DRIVER = re.compile(r"built for NVIDIA Driver Release (\d+(?:\.\d+)*) or later,?\s*(?:but\s+)?"
                         r"(?:version (\d+(?:\.\d+)*) was detected)?", re.I)


def ngc_driver(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NGC_DRIVER, ("built for nvidia driver release",))
    if hit is None:
        return []
    index, found = hit
    need, have = found.group(1), found.group(2) or (str(ctx.driver) if ctx.driver else None)
    if have is None:  # the detected version wrapped onto the next line
        more = next((re.search(r"version (\d+(?:\.\d+)*) was detected", line)
                     for _, line in ctx.text.window(index, 0, 1)
                     if "was detected" in line), None)
        have = more.group(1) if more else None
    return [Signal("ngc_driver", Category.DRIVER_TOO_OLD,
                   f"the container was built for NVIDIA driver {need} or later"
                   + (f", and the host's driver is {have}" if have else "")
                   + ": with compatibility mode unavailable (a GeForce GPU, or a driver branch "
                   "forward compatibility does not cover), its CUDA does not run",
                   dedupe([ctx.quote(index), *ctx.quotes("driver")]), NAMED,
                   [Remedy(summary=f"Upgrade the host's NVIDIA driver to {need} or newer."),
                    Remedy(summary="Or use an earlier tag of the image, built on a CUDA this "
                           "driver runs.")])]


def toolkit_below_floor(ctx: Context) -> List[Signal]:
    """A failed flash-attn build with the stated CUDA toolkit (nvcc, or "CUDA 11.5" in prose)
    below the floor the stated release's setup.py sets, or the newest release's when none is
    stated (the matrix's min_nvcc per release, read from setup.py at each tag): the toolkit,
    whatever the compiler printed."""
    have = ctx.nvcc or parse_version(ctx.seen.get(o.CUDA))
    if have is None or not ctx.text.containing(_FA_INSTALL):
        return []
    failed = ctx.first(_BUILD_FAILED, ("failed", "error compiling"))
    if failed is None:
        return []
    stated = ctx.matrix.fa_release(ctx.fa2) if ctx.fa2 is not None else None
    release = stated or max(ctx.matrix.flash_attn_releases, key=lambda rel: rel.version)
    need = Version(release.min_nvcc)
    if have >= need:
        return []
    which = (f"flash-attn {release.version}'s setup.py" if stated else
             f"the newest flash-attn's setup.py ({release.version}, what an unpinned install "
             "builds)")
    quotes = dedupe([ctx.quote(failed[0]), *ctx.quotes("nvcc", "cuda")])
    return [Signal("nvcc_version", Category.BUILD_TOOLCHAIN,
                   f"the CUDA toolkit here is {have}, below what {which} accepts (CUDA {need} or "
                   "newer): the build fails on the toolkit", quotes, IMPLIED,
                   r.keep([Remedy(summary=f"Install a CUDA toolkit of torch's CUDA major, at least "
                                  f"{need}, with its nvcc, and point CUDA_HOME at it before "
                                  "building.",
                                  commands=["export CUDA_HOME=/usr/local/cuda",
                                            "/usr/local/cuda/bin/nvcc --version"]),
                           prebuilt(ctx)]),
                   details={"source": "the matrix's min_nvcc per flash-attn release (setup.py)"})]


# CCCL's check (NVIDIA/cccl@571f2fc3 libcudacxx/include/cuda/std/__cccl/cuda_toolkit.h:39-41):
# nvcc's major.minor must equal CUDART_VERSION of the cuda_runtime_api.h on the include path,
# else '#error "CUDA compiler and CUDA toolkit headers are incompatible, please check your include
# paths"'. pip's CUDA wheels: nvidia-cuda-nvcc (CUDA 13) / nvidia-cuda-nvcc-cu12 beside
# nvidia-cuda-runtime, whose headers a torch build's include path carries.
_CCCL = re.compile(r"CUDA compiler and (?:CUDA )?toolkit headers are incompatible")  # or retold
CCCL_SOURCE = "NVIDIA/cccl@571f2fc3:libcudacxx/include/cuda/std/__cccl/cuda_toolkit.h:39-41"


def compiler_headers(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CCCL, ("toolkit headers are incompatible",))
    if hit is None:
        return []
    nvcc, headers = ctx.nvcc, ctx.torch_cuda
    fixes = []
    if nvcc is not None and headers is not None and (nvcc.major, nvcc.minor) != (
            headers.major, headers.minor):
        package = "nvidia-cuda-nvcc" if headers.major >= 13 else f"nvidia-cuda-nvcc-cu{headers.major}"
        said = (f"nvcc {nvcc} compiles against the CUDA {headers.major}.{headers.minor} runtime "
                "headers (torch's CUDA): CCCL refuses a compiler and headers of different CUDA "
                "releases")
        fixes.append(Remedy(summary=f"Use the nvcc of the headers' release, CUDA "
                            f"{headers.major}.{headers.minor}: with pip's CUDA wheels install "
                            f"{package} {headers.major}.{headers.minor} beside the runtime (then "
                            "CUDA_HOME at that tree); with a system toolkit, point CUDA_HOME at a "
                            f"CUDA {headers.major}.{headers.minor} install.",
                            commands=[command("pip", "install",
                                              f"{package}=={headers.major}.{headers.minor}.*")]))
    else:
        said = ("the nvcc that compiles and the cuda_runtime_api.h on the include path come from "
                "different CUDA releases: CCCL refuses the pair")
    fixes.append(Remedy(summary="Check both: `nvcc --version` and the include path's CUDA "
                        "(CUDA_HOME/include/cuda_runtime_api.h, or pip's nvidia-cuda-runtime); "
                        "one CUDA release for both (CUDA_HOME pointing at a single complete "
                        "toolkit) ends it.", commands=["nvcc --version"]))
    return [Signal("cccl_headers", Category.BUILD_TOOLCHAIN, said,
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("nvcc", "torch")]), NAMED, fixes,
                   details={"source": CCCL_SOURCE})]


# A setup.py's own toolkit floor: SageAttention's (thu-ml/SageAttention setup.py: "CUDA 12.0 or
# higher is required to build the package.", "CUDA 12.4 or higher is required for compute
# capability 8.9.", "CUDA 12.8 or higher is required for compute capability 12.0.", comparing the
# nvcc of CUDA_HOME)
_SETUP_FLOOR = re.compile(r"CUDA (\d+\.\d+) or higher is required (?:to build the package|for "
                          r"compute capability (\d+\.\d+))")


def setup_floor(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SETUP_FLOOR, ("or higher is required",))
    if hit is None:
        return []
    need, arch = hit[1].group(1), hit[1].group(2)
    have = f" (the one found: {ctx.nvcc})" if ctx.nvcc else ""
    return [Signal("setup_cuda_floor", Category.BUILD_TOOLCHAIN,
                   f"the package's setup.py needs CUDA {need} or newer"
                   + (f" to compile for compute capability {arch}" if arch else "")
                   + f"; the nvcc it found (CUDA_HOME's) is older{have}",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("nvcc")]), NAMED,
                   [Remedy(summary=f"Install a CUDA toolkit of {need} or newer and point CUDA_HOME "
                           "at it before building (torch must be a build for that CUDA major); or "
                           "install a prebuilt wheel of the package built for this torch.",
                           commands=["nvcc --version", "export CUDA_HOME=/usr/local/cuda"])],
                   details={"source": "thu-ml/SageAttention setup.py (the nvcc version checks)"})]


# torch's extension builder adds $CUDNN_HOME/include (or $CUDNN_PATH's) to the include path, and
# nothing else for cuDNN (pytorch/pytorch@v2.5.0:torch/utils/cpp_extension.py, CUDNN_HOME)
_CUDNN_H = re.compile(r"\bcudnn(?:_\w{1,30})?\.h: No such file")


def cudnn_missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUDNN_H, ("cudnn",))
    if hit is None:
        return []
    return [Signal("cudnn_missing", Category.BUILD_TOOLCHAIN,
                   "the build found no cuDNN headers: torch's extension builder looks for them "
                   "only under CUDNN_HOME (or CUDNN_PATH) and the CUDA toolkit",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Point CUDNN_PATH (and CUDNN_HOME) at the cuDNN install, the "
                           "directory holding include/cudnn.h, before building (a cluster's cuDNN "
                           "module, or pip's cuDNN wheel: the folder this command prints), "
                           "then build again.",
                           commands=[command("python", "-c", "import nvidia.cudnn as m; "
                                             "print(m.__path__[0])")])])]


# torch's extension build failing ("Error building extension 'fused_adam'") where the report states
# a CUDA toolkit older than the CUDA torch was built with (same major: torch's own check lets a
# minor mismatch through): the older nvcc may lack the archs and headers torch's build asks for,
# so the toolkit of torch's own CUDA is the one to build with
_EXT_FAILED = re.compile(r"Error building extension '([\w.-]{1,60})'")


def toolkit_behind_torch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_EXT_FAILED, ("error building extension",))
    torch_cuda = ctx.torch_cuda
    stated = ctx.nvcc or parse_version(ctx.seen.get(o.CUDA) or "")
    if hit is None or torch_cuda is None or stated is None or stated >= torch_cuda \
            or stated.major != torch_cuda.major:
        return []
    return [Signal("toolkit_behind_torch", Category.BUILD_TOOLCHAIN,
                   f"the extension {hit[1].group(1)} is compiled with CUDA {stated}'s nvcc, older "
                   f"than the CUDA {torch_cuda} torch was built with: that nvcc may lack the "
                   "archs and headers torch's build passes it",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes(o.CUDA, o.NVCC, "torch")]), LOGGED,
                   [toolkit(ctx, torch_cuda)])]


# An extension whose kernel launches call the pre-9.2 launch API: nvcc before CUDA 9.2 compiled
# `kernel<<<...>>>` into cudaConfigureCall / cudaSetupArgument / cudaLaunch, the execution-control
# API deprecated since CUDA 7.0 and gone from CUDA 10.1 (code calling it stopped compiling with
# 10.1: MultithreadCorner/Hydra#74, jaredhoberock/bulk#47); nvcc 9.2 and later emit
# __cudaPushCallConfiguration and cudaLaunchKernel instead. Loaded beside a torch on CUDA 10.1 or
# later, the old build's symbols are undefined.
_OLD_LAUNCH = re.compile(r"undefined symbol: (cudaSetupArgument|cudaConfigureCall|cudaLaunch)\b")


def old_launch_api(ctx: Context) -> List[Signal]:
    hit = ctx.first(_OLD_LAUNCH, ("undefined symbol: cuda",))
    if hit is None:
        return []
    return [Signal("old_launch_api", Category.CUDA_RUNTIME_MISMATCH,
                   f"the extension calls {hit[1].group(1)}: it was compiled by an nvcc older than "
                   "CUDA 9.2, and the CUDA runtime torch loads (10.1 or later) no longer has that "
                   "launch API", [ctx.quote(hit[0])], NAMED + 1,  # over the generic reading
                   [Remedy(summary="Rebuild the extension with the CUDA toolkit of torch's CUDA "
                           "(torch.version.cuda; at least 9.2): point CUDA_HOME at it, check "
                           "`nvcc -V`, delete the build folder and install again.",
                           commands=[r.REVEAL_TORCH, "export CUDA_HOME=/usr/local/cuda",
                                     "nvcc -V"])],
                   details={"source": "CUDA 10.1 removed the execution-control API deprecated "
                                      "since 7.0 (MultithreadCorner/Hydra#74)"})]


# The other way round: an extension compiled by nvcc 9.2 or later calls __cudaPushCallConfiguration
# and __cudaPopCallConfiguration for each launch, which a CUDA runtime before 9.2 does not have: the
# extension was built with a newer CUDA toolkit than the one torch was built with (torch 0.4's
# CUDA 9.0 builds, say) and loads against torch's older runtime
_NEW_LAUNCH = re.compile(r"undefined symbol: (__cuda(?:Pop|Push)CallConfiguration)\b")


def new_launch_api(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NEW_LAUNCH, ("callconfiguration",))
    if hit is None:
        return []
    torch_cuda = ctx.torch_cuda_stated
    which = f"CUDA {torch_cuda}" if torch_cuda else "torch's CUDA (torch.version.cuda)"
    return [Signal("new_launch_api", Category.CUDA_RUNTIME_MISMATCH,
                   f"the extension calls {hit[1].group(1)}: it was compiled by nvcc 9.2 or later, "
                   "and the CUDA runtime it loads with torch is older than 9.2: the extension's "
                   "CUDA toolkit is newer than the one torch was built with",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", o.CUDA, o.NVCC)]), NAMED + 1,
                   [Remedy(summary=f"Build the extension with the same CUDA version as torch, "
                           f"{which}: point CUDA_HOME at that toolkit, check `nvcc -V`, delete the "
                           "build folder and build again; or install the torch built for your "
                           "toolkit's CUDA (9.2 or later) and then rebuild.",
                           commands=[r.REVEAL_TORCH, "export CUDA_HOME=/usr/local/cuda",
                                     "nvcc -V"])],
                   details={"source": "nvcc 9.2 lowers <<<...>>> to __cudaPushCallConfiguration; "
                                      "the pre-9.2 runtime lacks it"})]


# CUDA_HOME written like PATH (`export CUDA_HOME=$CUDA_HOME:/usr/local/cuda`): torch's
# cpp_extension and numba take the variable as one folder, so an empty old value leaves a leading
# colon (":/usr/local/cuda/bin/nvcc" cannot be executed) and a set one a path list no folder has.
_COLON_HOME = re.compile(r"(?:unable to execute|command) '(:/[\w./+-]{1,200}/nvcc)'|"
                         r"\bexport CUDA_HOME=\$\{?CUDA_HOME\}?:(/[\w./+-]{1,200})")


def colon_cuda_home(ctx: Context) -> List[Signal]:
    hit = ctx.first(_COLON_HOME, ("nvcc'", "cuda_home=$"))
    if hit is None:
        return []
    folder = hit[1].group(2) or hit[1].group(1)[1:].rsplit("/bin/", 1)[0]
    return [Signal("cuda_home_list", Category.BUILD_TOOLCHAIN,
                   "CUDA_HOME holds a path list (set like PATH, with a colon), and the build takes "
                   "it as one folder: what it looks for under it (nvcc, libnvvm) is not found",
                   # the setting itself explains a toolkit library not found beside it (libnvvm)
                   [ctx.quote(hit[0])], NAMED + 1 if hit[1].group(2) else NAMED,
                   [Remedy(summary="Set CUDA_HOME to the one toolkit folder (no colon, no list), "
                           "and put its bin on PATH; `which nvcc` should then name it.",
                           commands=[command("export", f"CUDA_HOME={folder}"), "which nvcc"])])]
