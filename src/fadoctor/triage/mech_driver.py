"""torch and the NVIDIA driver: a CPU-only torch where a GPU is expected, a driver older than
torch's CUDA runtime (or a container image's CUDA) needs, and no driver at all (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.install.torch import torch_install
from fadoctor.report import Category, Remedy
from fadoctor.triage import errors as e
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.signal import HINTED, IMPLIED, NAMED, Signal, dedupe

# the oldest CUDA a PyTorch binary was built for (0.1.x: CUDA 7.5 and 8.0, pytorch.org/get-started/
# previous-versions)
_FIRST_BINARY_CUDA = Version("7.5")
_CPU = re.compile(r"Torch not (?:being )?compiled with CUDA(?: enabled)?", re.I)
# CUDA said to be unavailable ("cuda is no avaible", "CUDA not available"), beside a +cpu torch
_UNAVAILABLE = re.compile(r"(?<![A-Za-z])cuda\W{0,3}(?:is\s+)?(?:not|no|n't|un)\s?avai?l?a?ble|"
                          r"is_available\(\)\W{0,4}(?:returns?|is|=+|->|:)?\W{0,3}False", re.I)
# A framework finding no GPU (unsloth/__init__.py: "Unsloth: No NVIDIA GPU found?") where the
# report names one, says its torch is CPU-only, or runs on Windows (pip's default torch has no
# CUDA): the torch is the CPU build. So does a program announcing it picked the CPU (InvokeAI's
# ">> Using device_type cpu", "Using device: cpu"; the Trainer scripts' "Process rank: 0, device:
# cpu, n_gpu: 0") or torch.cuda.is_available() answering False, with no CUDA torch stated.
_NO_GPU = re.compile(r"No NVIDIA GPU found|\bUsing device[_ ]type:? cpu\b|\bUsing device:? ['\"]?cpu\b|"
                     r"\bdevice: cpu, n_gpu: 0\b|"
                     r"torch\.cuda\.is_available\(\)\W{0,4}(?:returns?|is|=+|->|:)?\W{0,3}False",
                     re.I)
_CPU_PROSE = re.compile(r"\bCPU[ -]ONLY\b", re.I)
_OLD_DRIVER = re.compile(r"driver version is insufficient for CUDA runtime|NVIDIA driver on your "
                         r"system is too old(?: \(found version (\d+)\))?|cudaErrorInsufficientDriver")
# NVIDIA's CUDA images' entrypoint (nvidia_entrypoint.sh) when started without the GPU passed in:
# "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available."
_NO_DRIVER = re.compile(r"Found no NVIDIA driver|couldn't communicate with the NVIDIA driver|"
                        r"no CUDA-capable device is detected|The NVIDIA Driver was not detected")
def _cuda12_torch(ctx: Context) -> Optional[Remedy]:
    """With the driver unknown: the CUDA 12 build, which runs on every driver from the matrix's
    CUDA 12 floor on (minor-version compatibility)."""
    floor, build = ctx.matrix.driver_floor(12), r.torch_for_cuda(ctx, 12)
    if floor is None or build is None:
        return None
    return build.model_copy(update={"summary": f"{build.summary} It runs on any driver from "
                                    f"{floor.min_driver} on (nvidia-smi shows yours)."})


def torch_cpu(ctx: Context) -> List[Signal]:
    hit, strength = ctx.first(_CPU, ("not compiled with cuda", "not being compiled with cuda")), NAMED
    if hit is None and ctx.torch is not None and (ctx.torch.local or "").startswith("cpu"):
        hit = ctx.first(_UNAVAILABLE, ("avai", "avabl", "is_available"))  # 2.6.0+cpu, and so
    if hit is None:
        hit, strength = ctx.first(_NO_GPU, ("no nvidia gpu found", "using device", "n_gpu: 0",
                                            "is_available()")), HINTED
        if ctx.torch_cuda is not None:
            return []
        driver = ctx.first(_OLD_DRIVER, ("insufficient", "too old", "insufficientdriver")) or ctx.first(
            _NO_DRIVER, ("nvidia driver", "cuda-capable"))
        if hit is None or driver is not None or not (
                ctx.gpu or e.WINDOWS in ctx.seen.marks
                or ctx.first(_CPU_PROSE, ("cpu only", "cpu-only"))):
            return []
    driver_cuda = parse_version(ctx.seen.get("driver_cuda"))
    fitting = r.torch_for_cuda(ctx, driver_cuda.major) if driver_cuda is not None else None
    if fitting is None:
        fitting = _cuda12_torch(ctx)
    return [Signal(
        "torch_cpu", Category.TORCH_CPU_ONLY,
        "the installed torch is a CPU-only build: no CUDA"
        + (", so no flash-attention" if r.attention_in_play(ctx) else ""),
        dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), strength,
        r.keep([fitting, Remedy(summary="Install a CUDA build of torch from the PyTorch index "
                                "for the CUDA your driver runs (`fadoctor fix` picks it).",
                                commands=["fadoctor fix --print-pins"]),
                Remedy(summary="Or, on a machine without an NVIDIA GPU, run the script on the "
                       "CPU: its device setting (device='cpu', a --device=cpu flag) instead of "
                       "'cuda', and no .cuda() calls.")
                if not ctx.text.containing(("flash", "attn_implementation", "xformers")) else None,
                r.sdpa("Or, to run on the CPU (no NVIDIA GPU): flash-attention needs one, so "
                       "load the model without it (attn_implementation=\"sdpa\" or \"eager\").")]),
        needs=[] if driver_cuda else [("the driver's CUDA version", "nvidia-smi")])]


def _oldest_variant(ctx: Context) -> Optional[Remedy]:
    """The stated torch release's build for its oldest CUDA, where the stated build is a newer
    one: the same torch, needing the least driver (the toolkit's own driver, the matrix's)."""
    release = ctx.matrix.torch_release(ctx.torch) if ctx.torch is not None else None
    stated = ctx.torch_cuda_stated
    if release is None or stated is None or ctx.torch is None:
        return None
    oldest = min(release.cuda_variants, key=lambda v: int(v[2:]))
    cuda = Version(f"{oldest[2:-1]}.{oldest[-1]}")
    if cuda >= Version(f"{stated.major}.{stated.minor}"):
        return None
    toolkit = ctx.matrix.toolkit_driver(cuda)
    need = f" (driver {toolkit.min_driver} or newer)" if toolkit else ""
    return Remedy(summary=f"torch {ctx.torch.base_version} built for {oldest}, this release's "
                  f"oldest CUDA, which needs the least driver{need}",
                  commands=[torch_install(ctx.torch.base_version, oldest)])


def driver(ctx: Context) -> List[Signal]:
    old = ctx.first(_OLD_DRIVER, ("insufficient", "too old", "insufficientdriver"))
    if old is not None:
        cuda = ctx.torch_cuda
        toolkit = ctx.matrix.toolkit_driver(cuda) if cuda is not None else None
        need = f" >= {toolkit.min_driver} (CUDA {cuda}'s own driver)" if toolkit else ""
        # torch's "found version 12080": the newest CUDA the driver runs (cudaDriverGetVersion)
        found = int(old[1].group(1)) if old[1].group(1) else 0
        runs = Version(f"{found // 1000}.{found % 1000 // 10}") if found >= 1000 else None
        fitting = r.torch_for_cuda(ctx, runs.major, at_most=runs) if runs else None
        if runs is not None and fitting is None and runs > Version(f"{runs.major}.0"):
            # a driver of a CUDA major's family runs every runtime of that major (NVIDIA's
            # minor-version compatibility, "with limited feature-set": the matrix's floors)
            fitting = r.torch_for_cuda(ctx, runs.major)
            if fitting is not None:
                fitting = fitting.model_copy(update={"summary": fitting.summary.rstrip(".") + (
                    f" (CUDA minor-version compatibility: a driver that runs CUDA {runs} runs "
                    f"every CUDA {runs.major}.x runtime, with a limited feature set)")})
        if runs is None and fitting is None:
            fitting = _oldest_variant(ctx)
        hidden = _container_without_driver(ctx, cuda, found)
        if hidden is not None:
            return [hidden]
        return [Signal(
            "driver", Category.DRIVER_TOO_OLD,
            "the NVIDIA driver is older than torch's CUDA runtime needs"
            + (f": it runs CUDA {runs} at most" if runs else ""),
            dedupe([ctx.quote(old[0]), *ctx.quotes("driver", "torch")]), NAMED,
            r.keep([Remedy(summary=f"Upgrade the NVIDIA driver{need}: no PyTorch binary was ever "
                           f"built for CUDA {runs} or older (the first, 0.1.x, were for CUDA 7.5 and "
                           "8.0: pytorch.org's previous versions), so the other way is building "
                           "PyTorch from source against a CUDA toolkit this driver runs.")
                    if runs is not None and runs < _FIRST_BINARY_CUDA else
                    Remedy(summary=f"Upgrade the NVIDIA driver{need}, or install a torch built "
                           + (f"for CUDA {runs} or older, which this driver runs (a "
                              f"+cu{runs.major}{runs.minor} build or an earlier one; `fadoctor "
                              "fix` picks one)." if runs else
                              "for an older CUDA that this driver runs (`fadoctor fix` picks "
                              "one).")),
                    fitting and fitting.model_copy(update={"summary": f"Or keep the driver: "
                                                      f"{fitting.summary.rstrip('.')}, and the "
                                                      "packages built for that torch."}),
                    Remedy(summary="Or, on a data-center GPU, NVIDIA's CUDA forward-compatibility "
                           "package (cuda-compat) for torch's CUDA lets it run on this driver "
                           "(NVIDIA's CUDA Compatibility guide).")]),
            needs=[] if ctx.driver else [("the driver version", r.REVEAL_GPU)])]
    none = ctx.first(_NO_DRIVER, ("nvidia driver", "cuda-capable"))
    if none is None:
        return []
    if "was not detected" in ctx.low(none[0]):
        return [Signal("driver", Category.NO_GPU, "the container was started without the GPU: "
                       "NVIDIA's CUDA image finds no driver inside it",
                       [ctx.quote(none[0])], NAMED,
                       [Remedy(summary="Start the container with the GPUs passed in: docker run "
                               "--gpus all (the NVIDIA Container Toolkit installed on the host; "
                               "Compose: a device reservation with capabilities [gpu]); "
                               "nvidia-smi inside it must then list the GPU.",
                               commands=["nvidia-smi"])])]
    return [Signal("driver", Category.NO_GPU, "torch finds no usable NVIDIA GPU and driver here",
                   [ctx.quote(none[0])], NAMED,
                   [Remedy(summary="Install the NVIDIA driver, or start the container with the "
                           "GPUs passed through (docker run --gpus all).",
                           commands=["nvidia-smi"])])]


# a container (docker, Unraid, Kubernetes) whose process reports the driver insufficient while the
# host's stated driver runs every current CUDA 12 runtime (>= 12.x's floor, and no newer CUDA
# named): the container does not see the host's driver (no GPU passed in: the NVIDIA Container
# Toolkit's --gpus / NVIDIA_VISIBLE_DEVICES), so the runtime finds none it can use
_IN_CONTAINER = re.compile(r"\b(?:docker|container|unraid|kubernetes|k8s|podman|runpod)\b", re.I)


def _container_without_driver(ctx: Context, cuda: Optional[Version], found: int) -> Optional[Signal]:
    box = ctx.first(_IN_CONTAINER, ("docker", "container", "unraid", "kubernetes", "k8s", "podman",
                                 "runpod"))
    floor = ctx.matrix.driver_floor(12)
    if box is None or ctx.driver is None or floor is None or ctx.driver < floor.min_driver \
            or found or (cuda is not None and cuda.major > 12) \
            or ctx.has("cu13", "cuda 13", "cuda-13", "cuda13") is not None:
        return None  # a CUDA 13 runtime does need a newer driver (580)
    return Signal("driver", Category.NO_GPU,
                  f"the host's driver {ctx.driver} runs CUDA 12 runtimes, yet the process in the "
                  "container finds it insufficient: the container does not see the host's driver "
                  "(the GPU is not passed in)", dedupe([*ctx.quotes("driver"), ctx.quote(box[0])]),
                  NAMED, [Remedy(summary="Pass the GPU into the container: docker run --gpus all "
                                 "(with the NVIDIA Container Toolkit installed on the host), or on "
                                 "Unraid and other templates the --runtime=nvidia option with "
                                 "NVIDIA_VISIBLE_DEVICES set to the GPU's UUID (or all) and "
                                 "NVIDIA_DRIVER_CAPABILITIES=compute,utility; nvidia-smi inside "
                                 "the container must list the GPU.", commands=["nvidia-smi"])])


# nvidia-container-cli refuses to start a CUDA image whose NVIDIA_REQUIRE_CUDA the host driver
# does not meet: NVIDIA/libnvidia-container src/dsl.c (dsl_evaluate: "unsatisfied condition: %s"),
# with ", please update your driver to a newer version, or use an earlier cuda container" added
# by its caller.
_CONTAINER = re.compile(r"unsatisfied condition: cuda\s*>=\s*(\d+\.\d+)")
CONTAINER_SOURCE = "NVIDIA/libnvidia-container:src/dsl.c (dsl_evaluate)"


def container_cuda(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CONTAINER, ("unsatisfied condition",))
    if hit is None:
        return []
    index, found = hit
    cuda = Version(found.group(1))
    toolkit = ctx.matrix.toolkit_driver(cuda)
    need = f" {toolkit.min_driver} or newer (CUDA {cuda}'s own driver)" if toolkit else ""
    # the newest CUDA whose own driver the stated one meets: the newest image base it can run
    runs = [t.cuda for t in ctx.matrix.cuda_driver.toolkits
            if ctx.driver is not None and ctx.driver >= t.min_driver]
    older = f" (this driver runs CUDA {max(runs)} images)" if runs else ""
    return [Signal("driver", Category.DRIVER_TOO_OLD,
                   f"the container image needs CUDA {cuda} (its NVIDIA_REQUIRE_CUDA), and the "
                   "host's NVIDIA driver is older than that CUDA needs: nvidia-container-cli "
                   "refuses to start it", dedupe([ctx.quote(index), *ctx.quotes("driver")]), NAMED,
                   [Remedy(summary=f"Upgrade the host's NVIDIA driver to{need or ' a newer one'}."),
                    Remedy(summary=f"Or use an image (an earlier tag) built on an older CUDA"
                           f"{older}.")],
                   details={"source": CONTAINER_SOURCE})]


# torch's "CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu."
# (c10/cuda: cudaErrorInitializationError) on a machine the report says has NVIDIA GPUs: the
# driver is there but cannot start this CUDA runtime, most often because it is older than the
# CUDA torch was built for (or a driver update awaits a reboot).
_INIT_FAILED = re.compile(r"CUDA driver initialization failed, you might not have a CUDA gpu")


def driver_init(ctx: Context) -> List[Signal]:
    hit = ctx.first(_INIT_FAILED, ("cuda driver initialization failed",))
    if hit is None or ctx.gpu is None:
        return []
    return [Signal("driver_init", Category.DRIVER_TOO_OLD,
                   f"the NVIDIA driver could not start CUDA for this torch on {ctx.gpu[0]}: most "
                   "often a driver older than the CUDA torch was built for (or a driver update "
                   "that awaits a reboot)", dedupe([ctx.quote(hit[0]), ctx.gpu[2],
                                                     *ctx.quotes("driver", "torch")]), IMPLIED,
                   [Remedy(summary="Upgrade the NVIDIA driver to a newer driver for torch's CUDA (compare "
                           "the CUDA version nvidia-smi prints, the newest the driver runs, with "
                           "torch.version.cuda), or install torch (or conda's cudatoolkit / "
                           "pytorch-cuda) built for the driver's CUDA; reboot after a driver "
                           "update.", commands=["nvidia-smi", 'python -c "import torch; '
                                                "print(torch.__version__, torch.version.cuda)\""])])]
