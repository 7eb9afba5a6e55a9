"""The fix for a catalogued torch or CUDA runtime message that no hand-written mechanism read
(when one did, its remedies stand and the entry only corroborates it; pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from packaging.version import InvalidVersion, Version

from fadoctor.install.torch import torch_install
from fadoctor.matrix import Matrix
from fadoctor.matrix.base import DriverVersion
from fadoctor.matrix.hardware import ToolkitDriver
from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.torch_archs import torch_with_arch, variants

PINS = "fadoctor fix --print-pins"


def captured_cc(values: Dict[str, str]) -> Optional[Version]:
    """sm_{sm} (120) or `compute capability (CC) {device_cc}.{device_cc}` (12.0)."""
    sm = values.get("sm", "").strip(".,")
    if sm.isdigit() and 2 <= len(sm) <= 3:
        return Version(f"{sm[:-1]}.{sm[-1]}")
    try:
        return Version(f"{values['device_cc']}.{values['device_cc_']}".strip("."))
    except (KeyError, InvalidVersion):
        return None


def last_torch_with(ctx: Context, cc: Version) -> List[Remedy]:
    """The newest torch release whose build still has kernels for a GPU it dropped."""
    for rel in sorted(ctx.matrix.torch_releases, key=lambda rel: Version(rel.minor), reverse=True):
        fitting = variants(rel, cc)
        if fitting:
            variant = max(fitting, key=lambda v: int(v[2:]))
            return [Remedy(summary=f"torch {rel.latest_patch} ({variant}) is the newest release "
                           f"whose build still has kernels for sm_{cc.major}{cc.minor}.",
                           commands=[torch_install(rel.latest_patch, variant)])]
    oldest = min(ctx.matrix.torch_releases, key=lambda rel: Version(rel.minor))
    return [Remedy(summary=f"No torch release from {oldest.minor} on ships kernels for "
                   f"sm_{cc.major}{cc.minor} (their wheels' arch lists): build PyTorch from source "
                   f"for it (TORCH_CUDA_ARCH_LIST=\"{cc.major}.{cc.minor}\", with a CUDA toolkit "
                   "that still compiles for it), use an older PyTorch release built for it, or "
                   "run on the CPU.")]


def _kernels(ctx: Context, cc: Optional[Version]) -> List[Remedy]:
    found = torch_with_arch(ctx, cc) if cc is not None else []
    sm = f"sm_{cc.major}{cc.minor}" if cc is not None else "this GPU's sm"
    return [*found, Remedy(summary=f"Install a torch build whose arch list "
                           f"(torch.cuda.get_arch_list()) holds {sm}; `fadoctor fix` picks the "
                           "CUDA variant.", commands=[PINS]),
            r.sdpa("Meanwhile:")]


def _driver(ctx: Context, entry: Entry) -> List[Remedy]:
    cuda = ctx.torch_cuda
    toolkit = ctx.matrix.toolkit_driver(cuda) if cuda is not None else None
    need = f" >= {toolkit.min_driver} (CUDA {cuda}'s own driver)" if toolkit else ""
    if "display driver" in entry.printed:
        return [Remedy(summary="The driver library loaded (libcuda) is not the kernel module's "
                       "version: a driver upgraded without a reboot (reboot), or in a container "
                       "CUDA's forward-compatibility libcuda (cuda-compat, /usr/local/cuda/compat) "
                       "found ahead of the host driver's: take that directory out of "
                       "LD_LIBRARY_PATH and /etc/ld.so.conf.d, run ldconfig, and use the host's "
                       "driver libraries. The kernel module's version, and the libcuda files "
                       "the loader finds:",
                       commands=["cat /proc/driver/nvidia/version", "ldconfig -p"])]
    why = {"PTX": "The binary carries PTX from a CUDA toolkit newer than this driver compiles",
           "forward": "CUDA's forward-compatibility libraries run on data-center GPUs only"}
    said = next((v for k, v in why.items() if k in entry.printed),
                "The NVIDIA driver is older than the CUDA runtime needs")
    runs = ctx.seen.get(o.DRIVER_CUDA)  # nvidia-smi's "CUDA Version": the newest this driver runs
    if runs is None and ctx.driver is not None:  # else the toolkit table's, for the stated driver
        newest = newest_cuda(ctx.matrix, ctx.driver)
        runs = str(newest) if newest else None
        newer = sorted((t for t in ctx.matrix.cuda_driver.toolkits
                        if newest is None or t.cuda > newest), key=lambda t: t.cuda)
        if newer and not need:
            oldest = ctx.matrix.cuda_driver.toolkits[0].cuda
            need = (f" (driver {ctx.driver} runs CUDA {runs or f'older than {oldest}'} and older; "
                    f"CUDA {newer[0].cuda} needs {newer[0].min_driver} or newer)")
    within = (f" (this driver runs CUDA {runs} and older: a build or container of CUDA {runs} "
              "or older works with it)" if runs else "")
    also = " (and flash-attn)" if r.attention_in_play(ctx) else ""
    fixes = [Remedy(summary=f"{said}: upgrade the NVIDIA driver{need}, or install a torch{also} "
                    f"built for an older CUDA that this driver runs{within}, or one "
                    "with SASS for this GPU's sm.", commands=[r.REVEAL_GPU, PINS])]
    cc = ctx.gpu_cc_exact
    if "PTX" in entry.printed and cc is not None:
        # an extension built without this GPU's arch runs on it only as PTX the driver compiles;
        # with the arch in the build's list it carries SASS and the driver compiles nothing
        arch = f"{cc.major}.{cc.minor}"
        fixes.append(Remedy(summary="Or, where the binary is an extension built here (a project's "
                            "setup.py, a JIT build): rebuild it with this GPU's arch in "
                            f"TORCH_CUDA_ARCH_LIST (\"{arch}\"; a setup.py that sets the list "
                            "itself needs that line changed), so it carries SASS for "
                            f"sm_{cc.major}{cc.minor} and the driver JIT-compiles no PTX.",
                            commands=[f"export TORCH_CUDA_ARCH_LIST={arch}"]))
    return fixes


def newest_cuda(matrix: Matrix, driver: DriverVersion) -> Optional[Version]:
    """The newest CUDA whose own toolkit driver this driver is (what it runs with every feature,
    PTX JIT included); a branch alone ("nvidia-driver-570") runs its branch's toolkits."""
    branch = len(driver.release) == 1

    def runs_on(t: ToolkitDriver) -> bool:
        return t.min_driver.major <= driver.major if branch else t.min_driver <= driver
    fits = [t.cuda for t in matrix.cuda_driver.toolkits if runs_on(t)]
    return max(fits) if fits else None


def _no_gpu(entry: Entry) -> List[Remedy]:
    if "CUDA_VISIBLE_DEVICES" in entry.printed:
        return [Remedy(summary="Set CUDA_VISIBLE_DEVICES before the program starts (before "
                       "torch is imported), not from inside it; then check that the driver "
                       "sees the GPUs.", commands=["nvidia-smi"])]
    if "stub" in entry.printed:
        return [Remedy(summary="The CUDA toolkit's stub libcuda (lib64/stubs) is loaded instead "
                       "of the driver's: take the stubs directory off LD_LIBRARY_PATH.",
                       commands=["printenv LD_LIBRARY_PATH"])]
    return [Remedy(summary="Install the NVIDIA driver, or start the container with the GPUs "
                   "passed through (docker run --gpus all).", commands=["nvidia-smi"])]


# torch/utils/cpp_extension.py (_check_cuda_version): "The detected CUDA version (12.0) mismatches
# the version that was used to compile PyTorch (11.7)."
_DETECTED = re.compile(r"detected CUDA version \((\d+\.\d+)\) mismatches the version that was "
                       r"used to compile\s+PyTorch \((\d+\.\d+)\)")


# torch/utils/cpp_extension.py (_check_cuda_version): "The current installed version of g++
# (11.4.0) is greater than the maximum required version by CUDA 11.3 (10.0.0). Please make sure to
# use an adequate version of g++ (>=5.0.0, <=10.0.0)." (2.13.0: no "(10.0.0)", and "<11.0", the
# bound exclusive)
_COMPILER_BOUND = re.compile(r"installed version of (g\+\+|gcc|clang\+\+|clang) \((\d+)(?:\.[\d.]*)?\) is "
                             r"greater than the maximum required version by CUDA (\d+\.\d+)"
                             r"[^\n]{0,120}\(>=[\d.]+, <(=?)(\d+)")
# the newest gcc each CUDA admits, from torch 2.13.0's CUDA_GCC_VERSIONS (cpp_extension.py; its
# bound is exclusive: (12, 0) for CUDA 11.4 takes gcc 11): the first CUDA for a newer gcc
_GCC_ADMITTED = (("11.4", 11), ("12.0", 12), ("12.3", 13), ("12.8", 14), ("13.0", 15))


def _compiler_bound(bound: re.Match[str]) -> List[Remedy]:
    compiler, have, cuda = bound.group(1), int(bound.group(2)), bound.group(3)
    most = int(bound.group(5)) - (0 if bound.group(4) else 1)
    gcc = "clang" not in compiler
    cc, cxx = (f"gcc-{most}", f"g++-{most}") if gcc else (f"clang-{most}", f"clang++-{most}")
    fixes = [Remedy(summary=f"Build with {compiler} {most} (CUDA {cuda} admits at most {most}; "
                    f"this one is {have}): install it beside the system's and point the build "
                    "at it.", commands=[f"export CC={cc} CXX={cxx}", f"{cxx} --version"])]
    newer = next((c for c, admitted in _GCC_ADMITTED if admitted >= have), None)
    if gcc and newer is not None:
        fixes.append(Remedy(summary=f"Or build with a newer CUDA toolkit, which admits g++ {have}: "
                            f"CUDA {newer} or later (torch's table of host compilers), with a "
                            "torch built for that CUDA major."))
    return fixes


def _build(ctx: Context, entry: Entry) -> List[Remedy]:
    if entry.weight == "note":
        return [Remedy(summary="torch's extension builder only reports here; the compiler's first "
                       "`error:` lines above this one name the cause (a minor CUDA version "
                       "mismatch alone is harmless, torch says so).")]
    if "Ninja" in entry.printed:
        return [Remedy(summary="Install ninja into the building interpreter.",
                       commands=["pip install ninja"])]
    if "compiler" in entry.printed:
        bound = _COMPILER_BOUND.search(ctx.text.joined)
        if bound is not None:
            return _compiler_bound(bound)
        return [Remedy(summary="Build with a host compiler (gcc/g++) in the range the message "
                       "names for this CUDA, e.g. CC=gcc-12 CXX=g++-12, or install a prebuilt "
                       "wheel.", commands=["gcc --version", "nvcc -V"])]
    cuda = ctx.torch_cuda
    pair = _DETECTED.search(ctx.text.joined) if "mismatches the version" in entry.printed else None
    if pair is not None:  # torch's own numbers: the toolkit found, and torch's CUDA
        found, built = pair.group(1), pair.group(2)
        major = int(built.split(".")[0])
        fitting = r.torch_for_cuda(ctx, int(found.split(".")[0]))
        return r.keep([Remedy(summary=f"Build with the CUDA {built} toolkit torch was built with "
                              f"(the one found is {found}): install CUDA {built} (conda: "
                              f"cuda-toolkit from the nvidia/label/cuda-{built}.0 channel) and point "
                              "CUDA_HOME at it before building (torch's extension builder runs "
                              "$CUDA_HOME/bin/nvcc).",
                              commands=[f"export CUDA_HOME=/usr/local/cuda-{built}",
                                        f"/usr/local/cuda-{built}/bin/nvcc -V"]),
                       *([fitting] if fitting and major != int(found.split(".")[0]) else []),
                       ])
    fitting = r.torch_for_cuda(ctx, cuda.major) if cuda is not None else None
    return r.keep([Remedy(summary="Point CUDA_HOME at a CUDA toolkit of torch's CUDA major "
                          "(torch.version.cuda) before building, or install a prebuilt wheel.",
                          commands=[r.REVEAL_TORCH, "export CUDA_HOME=/usr/local/cuda",
                                    "nvcc -V"]), fitting])


# torch/nn/attention/__init__.py:68 at torch 2.3.0 (sdpa_kernel; earlier releases have
# torch.backends.cuda.sdp_kernel): which backends scaled_dot_product_attention may use.
SDPA_ALLOW = ("from torch.nn.attention import SDPBackend, sdpa_kernel  # torch 2.3+\n"
              "with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):\n"
              "    out = F.scaled_dot_product_attention(q, k, v)")
_SDPA_ON = re.compile(r"run on a sm (\d{1,2})\.(\d)")
_SDPA_RANGE = re.compile(r"\[sm(\d+), sm(\d+)\]")


def sdpa(ctx: Context, entry: Entry) -> List[Remedy]:
    """PyTorch SDPA's own flash or memory-efficient backend refused the inputs or the GPU: let
    SDPA choose another backend (it does unless code forces one), or a torch whose range covers
    the GPU."""
    allow = Remedy(summary="PyTorch's SDPA falls back to another backend by itself unless the code "
                   "forces this one (sdpa_kernel(SDPBackend.FLASH_ATTENTION), or only "
                   "enable_flash_sdp): allow the memory-efficient and math backends, which run "
                   "on any GPU and head dim.", code=SDPA_ALLOW)
    if entry.category != Category.GPU_UNSUPPORTED:
        if "no available kernel" in entry.printed.lower() and on_windows(ctx):
            # pytorch/pytorch#125070: from 2.2, SDPA's flash kernel is FlashAttention-2, which the
            # Windows wheels do not build ("Torch was not compiled with flash attention")
            return [Remedy(summary="On Windows, torch's wheels (from 2.2) have no SDPA flash "
                           "kernel at all (pytorch#125070), so code that forces it finds none: "
                           "allow the memory-efficient and math backends, or run on Linux/WSL2.",
                           code=SDPA_ALLOW)]
        return [allow]
    hit = ctx.first(_SDPA_ON, ("attempting to run on a sm",))  # "... on a sm 7.5 gpu."
    cc = Version(f"{hit[1].group(1)}.{hit[1].group(2)}") if hit else ctx.gpu_cc
    bounds = _SDPA_RANGE.search(entry.printed)
    newer = (torch_with_arch(ctx, cc) if cc is not None and bounds is not None
             and cc.major * 10 + cc.minor > int(bounds.group(2)) else [])
    return [allow, *newer]


def for_entry(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    if entry.source == "sdpa":
        return sdpa(ctx, entry)
    cc = ctx.gpu_cc or captured_cc(values)
    if entry.category == Category.NO_KERNEL_IMAGE:
        return _kernels(ctx, cc)
    if entry.category == Category.GPU_UNSUPPORTED:
        return [*(last_torch_with(ctx, cc) if cc is not None else []),
                r.sdpa("torch dropped this GPU generation; no newer flash-attention runs on it.")]
    if entry.category == Category.DRIVER_TOO_OLD or "display driver" in entry.printed:
        return _driver(ctx, entry)
    if entry.category == Category.NO_GPU:
        return _no_gpu(entry)
    if entry.category == Category.TORCH_CPU_ONLY:
        return [Remedy(summary="Install a CUDA build of torch from the PyTorch index for the "
                       "CUDA your driver runs (`fadoctor fix` picks it).", commands=[PINS])]
    if entry.category == Category.KERNEL_FAILURE:
        return [Remedy(summary="CUDA reports a kernel's error at a later call: rerun with "
                       "CUDA_LAUNCH_BLOCKING=1 so the traceback names the call that failed; the "
                       "CUDA error line above names what failed.",
                       commands=["export CUDA_LAUNCH_BLOCKING=1"])]
    if entry.category == Category.OUT_OF_MEMORY:
        return [Remedy(summary="The GPU ran out of memory: check nvidia-smi for other processes "
                       "holding it, then lower the batch size or sequence length, or enable "
                       "gradient checkpointing.", commands=["nvidia-smi"])]
    return _build(ctx, entry)
