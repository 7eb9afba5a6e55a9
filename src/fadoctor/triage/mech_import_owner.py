"""Whose binary a loader's error is about, where the error line does not say: the package the
reporter says they were importing, and a ROCm library's owner (pure)."""

from __future__ import annotations

import re
from typing import Any, List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.mech_symbols import OTHERS, other_named, owner_in_text, owner_of
from fadoctor.triage.signal import NAMED, Signal
from fadoctor.triage.text import Quote

# the reporter's words for the import that fails ("it prevents me from importing torchaudio")
_TOLD_IMPORT = re.compile(r"\bimport(?:ing)? (\w+)")


def told_importing(ctx: Context) -> Optional[str]:
    named = {OTHERS[m.group(1)] for _, m in ctx.find(_TOLD_IMPORT, ("import",))
             if m.group(1) in OTHERS}
    return named.pop() if len(named) == 1 else None


def rocm_library(ctx: Context, index: int, module: Optional[str], diagnosis: Any,
                 quotes: List[Quote]) -> Signal:
    """A ROCm library (libhipblas.so.0) a package's binary links and this ROCm lacks: the binary
    was built for another ROCm release (bitsandbytes' HIP library, a ROCm wheel of another
    release); its package comes from the paths the report shows."""
    owner = owner_in_text(ctx) or other_named(ctx, index)
    what = owner or "the package whose binary it is"
    return Signal("missing_library", diagnosis.category,
                  f"{owner or module or 'an extension'}: {diagnosis.explanation}", quotes, NAMED,
                  [Remedy(summary=f"Install {what} built for this machine's ROCm release (its "
                          "ROCm wheel for that release, or a build from source against it), or "
                          "leave it out where the program runs without it; `ls /opt/rocm/lib` "
                          "shows the library versions this ROCm has.")],
                  details={"library": diagnosis.details.get("library")})


# a package the report lists at a CUDA-variant local version ("dgl  1.0.2+cu102" in pip list,
# "dgl==1.0.1+cu116"): a compiled package built for one CUDA, the likeliest owner of a CUDA
# runtime the loader misses, where the report never names flash-attention
_CUDA_VARIANT = re.compile(r"^\s*([A-Za-z][\w.-]{1,40}?)(?:\s{1,40}|==)v?\d+(?:\.\d+){1,3}\+cu\d{2,3}\b",
                           re.M)
_TORCH_OWN = ("torch", "torchvision", "torchaudio", "pytorch", "torchtext", "torchdata")


def cuda_variant_package(ctx: Context) -> Optional[str]:
    if ctx.text.containing(("flash_attn", "flash-attn", "flash attn", "flash-attention")):
        return None
    named = {m.group(1).lower() for _, m in ctx.find(_CUDA_VARIANT, ("+cu",))
             if m.group(1).lower() not in _TORCH_OWN}
    return named.pop() if len(named) == 1 else None


# the reporter's own build of a checkout, which compiled its extensions in place
_BUILT_IN_PLACE = re.compile(r"python3? setup\.py (?:develop|install|build_ext --inplace)|"
                             r"pip3? install (?:-e|--editable) \.")


def checkout_rebuild(ctx: Context, lib: str) -> List[Remedy]:
    """Extensions a checkout built in place against an earlier torch: the same build again."""
    built = ctx.first(_BUILT_IN_PLACE, ("setup.py", "install -e", "--editable"))
    if built is None:
        return []
    return [Remedy(summary="These extensions were built in this checkout against an earlier "
                   f"torch, whose library {lib} this torch does not ship: rebuild them against "
                   "the installed torch (remove the checkout's build/ directory and its compiled "
                   ".so files, then run the same build again), or install the earlier torch "
                   "they were built with.", commands=["rm -rf build", built[1].group(0)])]


def frame_owner(ctx: Context, index: int) -> Optional[str]:
    """The package whose frame loads the binary (mmcv's ext_loader), in a report that never names
    flash-attention."""
    if ctx.text.containing(("flash_attn", "flash-attn", "flash attn", "flash-attention")):
        return None
    loading = _LOADING.search(ctx.text.lines[index])  # "Failed to load library X.so with error:"
    return (owner_of(loading.group(1)) if loading else None) or \
        frame_package(ctx, index, ("torch", "importlib", "ctypes"))


_LOADING = re.compile(r"Failed to load library ([\w.+-]{1,200}\.so)\b")


def nccl_symbol(library: str, symbol: str, quotes: List[Quote]) -> Signal:
    """torch's libtorch_cuda.so missing an NCCL function (ncclCommResume, ncclCommWindowRegister):
    the libnccl.so.2 loaded first is older than the NCCL torch's wheel pins (its nvidia-nccl-cuXX
    dependency): a second nvidia-nccl wheel of the other CUDA major in the same environment, or a
    system NCCL ahead on LD_LIBRARY_PATH."""
    return Signal("nccl_symbol", Category.VERSION_CONFLICT,
                  f"{library.replace(chr(92), '/').rsplit('/', 1)[-1]} needs {symbol}, which the "
                  "libnccl.so.2 loaded first lacks: an NCCL older than the one torch's wheel pins "
                  "(a second nvidia-nccl wheel, of the other CUDA major, or a system NCCL on "
                  "LD_LIBRARY_PATH)", quotes, NAMED,
                  [Remedy(summary="Keep one NCCL, torch's: see which nvidia-nccl wheels are "
                          "installed, uninstall "
                          "the one of the other CUDA major (a cu13 torch uses nvidia-nccl-cu13, a "
                          "cu12 torch nvidia-nccl-cu12), take system NCCL folders off "
                          "LD_LIBRARY_PATH, and let pip check name the version torch pins.",
                          commands=["pip show nvidia-nccl-cu12 nvidia-nccl-cu13",
                                    "unset LD_LIBRARY_PATH", "pip check"])],
                  details={"library": library, "symbol": symbol})


def other_binary(ctx: Context, lib: str, category: Category) -> List[Optional[Remedy]]:
    """Remedies for a library another package's binary cannot load, in a report that never names
    flash-attention: built against another torch, that package rebuilt (a checkout's own build
    against this torch); any other library, the package that ships it found and installed."""
    if category == Category.TORCH_VERSION_MISMATCH:
        return [*checkout_rebuild(ctx, lib), *r.rebuild_other(ctx, None)]
    return [Remedy(summary=f"Find what ships {lib} (a CUDA toolkit library such as libnvvm or "
                   "libnvrtc comes with the toolkit, or its nvidia-* wheel) and install it, or put "
                   "the folder that holds it on LD_LIBRARY_PATH; `ldconfig -p` lists what the "
                   "loader finds.")]
