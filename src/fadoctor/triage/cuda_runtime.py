"""A binary that links a CUDA library of another major than the one the environment has (the
dynamic loader finds no libcudart.so.12 where CUDA 11 is installed): the package whose binary it
is, and the build of it for the CUDA here (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_jetson import JETSON
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.text import Quote


def _jetson(ctx: Context, lib: str, built: Optional[str], quotes: List[Quote]
            ) -> Optional[Signal]:
    """On a Jetson the CUDA libraries are JetPack's: a binary linking another CUDA's was built
    for another JetPack release (or is a server aarch64 build)."""
    hit = ctx.first(JETSON, ("jetson", "jetpack", "l4t", "orin", "xavier", "tx2", "nano"))
    if hit is None:
        return None
    cuda = f"CUDA {built}" if built else "another CUDA"
    return Signal("missing_library", Category.WRONG_WHEEL,
                  f"on this Jetson the CUDA libraries are JetPack's, and the binary links {lib} "
                  f"({cuda}): it was built for another JetPack release",
                  dedupe([*quotes, ctx.quote(hit[0])]), NAMED,
                  [Remedy(summary="Install the build made for this JetPack release: NVIDIA's "
                          "PyTorch for Jetson wheels (one per JetPack), or jetson-containers' "
                          "images, and packages built on top of that torch; or the JetPack "
                          f"release whose CUDA is {built or 'the one it links'}.",
                          commands=["cat /etc/nv_tegra_release"])],
                  details={"library": lib, "cuda_major": built})


def cuda_runtime(ctx: Context, lib: str, built: Optional[str], quotes: List[Quote],
                  owner: Optional[str] = None) -> Signal:
    jetson = _jetson(ctx, lib, built, quotes)
    if jetson is not None:
        return jetson
    have = ctx.torch_cuda.major if ctx.torch_cuda is not None else None
    present = [s for s in ctx.seen.libraries if s.value.startswith(lib.split(".so")[0] + ".so")]
    if have is None and present:
        major = re.search(r"\.so\.(\d+)", present[0].value)
        have = int(major.group(1)) if major else None
        quotes = dedupe([*quotes, present[0].quote])
    toolkit = parse_version(ctx.seen.get(o.CUDA))
    if have is None and toolkit is not None:  # the CUDA the report states it has
        have = toolkit.major
        quotes = dedupe([*quotes, *ctx.quotes("cuda")])
    if owner is None and not ctx.text.containing(("flash_attn", "flash-attn", "flash attn")):
        return _unowned_runtime(lib, built, have, quotes)  # not flash-attn's: never named
    quotes = dedupe([*quotes, *ctx.quotes("torch", "torch_cuda")])
    if have is not None and built is not None and str(have) != built:
        message = (f"the binary was built for CUDA {built} (it links {lib}), but this environment "
                   f"has CUDA {have}: install a flash-attn build for CUDA {have}")
    else:
        message = (f"the binary links {lib}, a CUDA runtime the dynamic loader does not find "
                   "here: it was built for another CUDA version")
    # With torch's CUDA unknown the advice still holds: the build must match torch's CUDA.
    cuda = f"CUDA {have} (the cu{have} wheels)" if have is not None else \
        "the CUDA your torch uses (torch.version.cuda)"
    if owner is not None:  # another package's binary (vLLM's, xformers'): its CUDA, not FA's
        message = message.replace("the binary", f"{owner}'s binary").replace(
            "install a flash-attn build", f"install a {owner} build")
        fixes: List[Optional[Remedy]] = [
            r.torch_for_cuda(ctx, int(built)) if built is not None and built.isdigit() else None,
            Remedy(summary=f"Or install the {owner} build for {cuda} (its CUDA-variant wheel), "
                   f"or an earlier {owner} release built for it; {owner}'s release notes name "
                   "the CUDA of each wheel.")]
        return Signal("missing_library", Category.CUDA_RUNTIME_MISMATCH, message, quotes, NAMED,
                      r.keep(fixes), details={"library": lib, "cuda_major": built,
                                              "owner": owner},
                      needs=[] if have else [("torch's CUDA version", r.REVEAL_TORCH)])
    remedies: List[Optional[Remedy]] = [r.exact_wheel(ctx)]
    remedies.append(Remedy(summary=f"Reinstall flash-attn built for {cuda}; do not mix in "
                               "binaries built for another CUDA (a conda package, a wheel from "
                               "another machine).",
                               commands=["pip uninstall -y flash-attn",
                                         "pip install flash-attn --no-build-isolation "
                                         "--no-cache-dir"]))
    if built is not None and built.isdigit():
        remedies.append(r.torch_for_cuda(ctx, int(built)))
        remedies.append(Remedy(summary=f"Or, if a CUDA {built} runtime is installed elsewhere, put "
                               "its lib folder on LD_LIBRARY_PATH before starting Python."))
    return Signal("missing_library", Category.CUDA_RUNTIME_MISMATCH, message, quotes, NAMED,
                  r.keep(remedies), details={"library": lib, "cuda_major": built},
                  needs=[] if have else [("torch's CUDA version", r.REVEAL_TORCH)])


def _unowned_runtime(lib: str, built: Optional[str], have: Optional[int],
                     quotes: List[Quote]) -> Signal:
    """A binary of a package the report does not name links a CUDA library the loader does not
    find: built for another CUDA than the one here, where the majors are known to differ."""
    differ = have is not None and built is not None and str(have) != built
    message = (f"the binary was built for CUDA {built} (it links {lib}), but this environment "
               f"has CUDA {have}: it needs the build for CUDA {have}" if differ else
               f"the binary links {lib}, a CUDA library the dynamic loader does not find here: "
               "it was built for another CUDA version, or that library is not installed")
    fixes = [Remedy(summary=(f"Reinstall (or rebuild from source) the package that ships this "
                             f"binary, in its build for CUDA {have} (its CUDA-variant wheel or "
                             f"download, or a release built for CUDA {have}); its release notes "
                             "name the CUDA of each build." if differ else
                             "Reinstall (or rebuild from source) the package that ships this "
                             "binary, in its build for the CUDA here (torch's: "
                             "torch.version.cuda), with --no-cache-dir so pip does not reuse a "
                             "wheel built for another CUDA.")),
             Remedy(summary=f"Or install CUDA {built}'s runtime libraries beside it and put "
                    "their lib folder on LD_LIBRARY_PATH before starting the program."
                    if built else "Or install the CUDA library it names and put its folder on "
                    "LD_LIBRARY_PATH.")]
    return Signal("missing_library", Category.CUDA_RUNTIME_MISMATCH, message, quotes, NAMED,
                  fixes, details={"library": lib, "cuda_major": built})
