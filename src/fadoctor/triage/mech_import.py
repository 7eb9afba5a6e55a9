"""Import failures by mechanism: undefined symbols (demangled; torch's namespaces, std:: and the
std::string ABI decide), missing shared libraries, GLIBC/GLIBCXX versions (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.checks.classify import missing_library
from fadoctor.checks.import_remedies import CSRC, csrc_remedies
from fadoctor.matrix.fa2 import parse_local
from fadoctor.probes.mangling import is_torch_symbol
from fadoctor.report import Category, Remedy
from fadoctor.triage import errors as e
from fadoctor.triage import mech_import_owner as owners
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.cuda_runtime import cuda_runtime
from fadoctor.triage.mech_abi import abi_mismatch
from fadoctor.triage.mech_libstdcxx import is_std_symbol, libstdcxx
from fadoctor.triage.mech_symbols import (
    DRIVER_API,
    FA_BINARIES,
    OTHERS,
    TORCH_LIB,
    TORCH_OWN,
    TORCH_SYMBOL,
    binary_name,
    demangled,
    driver_api,
    installed_wheel,
    is_cuda_library,
    other_abi_wheel,
    other_named,
    owner_in_text,
    owner_of,
    package_in,
    reinstall_owner,
    split_abi,
    two_torches,
)
from fadoctor.triage.signal import IMPLIED, LOGGED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

# the symbol after the loader's colon; without it only a mangled or C-looking name (a title's
# "undefined symbol error" names none, nor "failing to find a symbol" in prose)
_UNDEFINED = re.compile(r"(?:([^\s:'\"]{1,300}\.so[\w.]{0,20})\s*:\s*)?(?:undefined symbol|"
                        r"(?:fail\w{0,3} to find|can'?t find|cannot find|could not find) (?:a |the )?"
                        r"symbol)(?::\s*([A-Za-z_$][\w$.@]{0,511})|\s+(_Z[\w$.@]{1,511}))?")
_SO = re.compile(r"[^\s:'\"`(]{1,300}\.so(?:\.[\w.]{1,20})?\b")
# the loader's own words, and ldd's for a library it does not find ("libcublas.so.12 => not found")
_MISSING_LIB = re.compile(r"([\w.+-]{1,200}\.so(?:\.[\w.]{1,20})?)\s*(?::\s*cannot open shared object "
                          r"file|=> not found)")
_MISSING_NEEDLES = ("cannot open shared object", "=> not found")
_CUDA_SYMBOL = re.compile(r"^_*(?:nvJitLink|nccl|nvrtc|cu(?:da|blas|sparse|fft|rand|solver|dnn|[A-Z]))")
_IMPORTED = re.compile(r"^\s*(?:import|from)\s+([\w.]+)")


def undefined_symbols(ctx: Context) -> List[Signal]:
    hits = list(ctx.find(_UNDEFINED, ("undefined symbol", " symbol")))
    if not hits:
        return []
    # the line that names both the binary and the symbol (a title repeats the symbol alone)
    index, found = next(((i, m) for i, m in hits if m.group(1) and (m.group(2) or m.group(3))),
                        next(((i, m) for i, m in hits if m.group(2) or m.group(3)), hits[0]))
    library, symbol = found.group(1) or "", found.group(2) or found.group(3)
    symbol = symbol.rstrip(".") if symbol else symbol  # a sentence's full stop is not part of it
    if not library:  # the binary named before it ("common_ops.abi3.so — undefined symbol"), or
        # ending the line above (a message wrapped after "libtorchtext.so:")
        named = _SO.findall(ctx.text.lines[index][:found.start()]) or \
            _SO.findall(ctx.text.lines[index - 1] if index else "")
        library = named[-1] if named else ""
    quotes = [ctx.quote(index)]
    if symbol is not None and DRIVER_API.match(symbol):
        return [driver_api(ctx, library, symbol, quotes)]
    if symbol is not None and TORCH_OWN.search(library) and TORCH_SYMBOL.match(symbol):
        return [two_torches(library, symbol, quotes)]
    if symbol is not None and (TORCH_LIB.search(library) or _CUDA_SYMBOL.match(symbol)
                               or is_cuda_library(library)):
        return [_broken_cuda_stack(ctx, library, symbol, quotes)]
    owner = owner_of(library, ctx, index)
    abi = abi_mismatch(ctx, symbol, quotes)
    if abi is not None:
        folder = None if owner else _package_dir(ctx, library)
        owned = _owned_abi(ctx, abi, owner or folder)
        if folder:  # its index name is unknown: no command names it
            owned.remedies = [rem.model_copy(update={"commands": []}) for rem in owned.remedies]
        return [owned]
    if is_std_symbol(symbol):
        return [libstdcxx(owner, binary_name(library), demangled(str(symbol)), quotes)]
    if symbol is not None and not is_torch_symbol(symbol) and not symbol.startswith("_ZN4c10d"):
        split = split_abi(owner, library, symbol, quotes)  # the package's own parts disagree
        return [split or _foreign_symbol(ctx, owner, library, symbol, quotes)]
    return [_owned_mismatch(ctx, owner, _torch_mismatch(ctx, library, symbol, quotes), library)]


_NOT_PACKAGES = {"lib", "lib64", "build", "bin", "tmp", "csrc", "src", "_C", "ops", "torch"}


def _package_dir(ctx: Context, library: str) -> Optional[str]:
    """The package folder a binary sits in under site-packages, in a report that never names
    flash-attention: the extension's package, for the words of a remedy (its index name, which a
    command would need, may differ)."""
    path = library.replace("\\", "/")
    if ctx.text.containing(("flash_attn", "flash-attn", "flash attn")):
        return None
    found = re.search(r"(?:site|dist)-packages/([A-Za-z_]\w*)/", path)
    if found is not None:
        return found.group(1)
    # a source checkout's build in place (/root/detectron2/detectron2/_C.cpython-37m-...so): the
    # package folder the binary sits in
    checkout = re.search(r"/([A-Za-z_]\w*)/[^/]+\.(?:so|pyd)$", path)
    return checkout.group(1) if checkout and checkout.group(1) not in _NOT_PACKAGES else None


def _owned_abi(ctx: Context, abi: Signal, owner: Optional[str]) -> Signal:
    """The ABI mismatch told of the package whose binary it is, with its own rebuild."""
    if owner is None:
        return abi
    abi.message = f"{owner}: {abi.message}"
    want = abi.details["torch_cxx11_abi"]
    abi.remedies = [Remedy(
        summary=f"{owner}'s binary and torch differ in the C++ ABI: rebuild {owner} from "
                f"source against this torch (its build takes torch's "
                f"_GLIBCXX_USE_CXX11_ABI={want}), or install the torch build whose ABI "
                f"is {1 - want}, the one {owner} was built against."),
        *r.rebuild_other(ctx, owner)]
    abi.remedies[:0] = [w for w in [other_abi_wheel(ctx, owner, want)] if w is not None]
    return abi


def _foreign_symbol(ctx: Context, owner: Optional[str], library: str, symbol: str,
                    quotes: List[Quote]) -> Signal:
    """A symbol neither torch's, CUDA's nor the C++ library's: the binary was built for another
    environment (another Python, for a C-API symbol), or is a broken development build."""
    shown = demangled(symbol)
    what = (f"needs {shown}, which no library it loads defines: it was built for another "
            "environment")
    if re.match(r"^_?Py", symbol):
        what = f"needs the Python C-API symbol {symbol}: it was built for another Python version"
    in_text: Optional[str] = None if owner is not None or ctx.text.containing(
        ("flash_attn", "flash-attn", "flash attn")) else package_in(ctx)
    owner = owner or (in_text if in_text != "flash-attn" else None)
    fixes = r.keep([r.exact_wheel(ctx), r.reinstall(ctx), r.sdpa("Meanwhile:")]) \
        if owner is None else [reinstall_owner(owner)]
    dev = ctx.first(_DEV_BUILD, ("dev", "continuous", "nightly"))
    if owner is not None and dev is not None:  # an unreleased build whose parts disagree
        fixes.insert(0, Remedy(
            summary=f"This is a development build of {owner} ({dev[1].group(0)}): its own "
                    "binary lacks a symbol its code needs, a build broken upstream. Install "
                    f"a released {owner} instead (or an earlier development build), or "
                    "build from source.",
            commands=[f"pip install --force-reinstall --no-cache-dir {owner}"]))
        quotes = dedupe([*quotes, ctx.quote(dev[0])])
    return Signal("undefined_symbol", Category.WRONG_WHEEL, f"{binary_name(library)} {what}",
                  quotes, NAMED, fixes, details={"symbol": symbol, "demangled": shown})


def _owned_mismatch(ctx: Context, owner: Optional[str], mismatch: Signal, library: str) -> Signal:
    """A torch symbol the binary needs and torch lacks, with the rebuild of the package that owns
    the binary (none named: no package's command)."""
    if owner is None and (not library or binary_name(library) not in FA_BINARIES) \
            and not ctx.text.containing(("flash_attn", "flash-attn", "flash attn")):
        # a binary not flash-attention's, in a report that does not mention flash-attn: no
        # flash-attn remedy; the package is unknown, so no command either
        mismatch.remedies = r.rebuild_other(ctx, None)
    if owner is None:
        return mismatch
    mismatch.message = f"{owner}: {mismatch.message}"
    mismatch.remedies = r.rebuild_other(ctx, owner)
    if e.FROM_SOURCE in ctx.seen.marks or ctx.has("source build", "fresh build",
                                                  "built from source", "build from source"):
        # built here against this very torch and still unresolved: its source calls a torch
        # C++ API this torch changed, so a newer release of its source is the fix
        mismatch.remedies.insert(0, Remedy(
            summary=f"It was built from source against this torch and still needs the "
                    f"symbol: {owner}'s source calls a torch C++ API this torch changed. "
                    f"Upgrade {owner} to a release (or its main branch) written for this "
                    "torch, then rebuild it.",
            commands=[f"pip install --upgrade --no-build-isolation --no-cache-dir {owner}"]))
    return mismatch


def _torch_mismatch(ctx: Context, library: str, symbol: Optional[str], quotes: List[Quote]
                    ) -> Signal:
    shown = demangled(symbol) if symbol else None
    built_for = _wheel_torch(ctx)
    message = (f"{binary_name(library)} needs a PyTorch C++ symbol"
               + (f" ({shown})" if shown else "") + " that the installed torch"
               + (f" {ctx.torch}" if ctx.torch else "") + " does not export: it was compiled "
               "against another torch build" + (f" (its wheel is for torch {built_for})"
                                                if built_for else ""))
    first = r.exact_wheel(ctx)
    newest = r.newest_wheel_release(ctx) if first is None else None
    pinned = Remedy(summary=f"flash-attn {newest} is the newest release with prebuilt wheels for "
                    f"torch {ctx.torch.major}.{ctx.torch.minor}." if ctx.torch else "",
                    commands=[f"pip install flash-attn=={newest} --no-build-isolation "
                              "--no-cache-dir"]) if newest else None
    source = r.force_build(ctx, "A wheel matches one torch build: a nightly, a container's or a "
                           "source-built torch matches none.")
    community = None
    if first is None and newest is None and ctx.torch is not None:
        # no official wheel for this torch at all: a community wheel built for it, if listed
        from fadoctor.triage.mech_wheels import community_wheel
        community = community_wheel(ctx, f"{ctx.torch.major}.{ctx.torch.minor}")
    out = r.keep([r.no_flash_gpu(ctx), first, pinned, r.reinstall(ctx), community])
    out.insert(0 if ctx.torch_is_nightly or "from_source" in ctx.seen.marks else len(out), source)
    needs = [] if ctx.torch else [("the torch version and build", r.REVEAL_TORCH)]
    if symbol is None:
        needs.append(("the missing symbol (the whole ImportError line)", r.REVEAL_IMPORT))
    return Signal("undefined_symbol", Category.TORCH_VERSION_MISMATCH, message,
                  dedupe([*quotes, *ctx.quotes("torch")]), NAMED,
                  [*out, r.sdpa("Meanwhile:")],
                  details={"symbol": symbol, "demangled": shown}, needs=needs)


def _wheel_torch(ctx: Context) -> Optional[str]:
    wheel = installed_wheel(ctx)
    if wheel is None or "+" not in wheel.value:
        return None
    local = parse_local(wheel.value.split("+", 1)[1].split("-", 1)[0])
    return local.torch if local else None


def _broken_cuda_stack(ctx: Context, library: str, symbol: str, quotes: List[Quote]) -> Signal:
    """torch's own libraries, or CUDA's, miss a symbol: libraries of two CUDA (or torch) builds
    are mixed — a system CUDA on LD_LIBRARY_PATH ahead of torch's nvidia-* wheels."""
    if symbol.startswith("nccl"):
        return owners.nccl_symbol(library, symbol, quotes)
    return Signal(
        "undefined_symbol", Category.CUDA_RUNTIME_MISMATCH,
        f"{binary_name(library)} needs {symbol}, which the CUDA libraries loaded with it lack: "
        "libraries from different CUDA or torch builds are mixed (often a system CUDA on "
        "LD_LIBRARY_PATH shadowing the nvidia-* wheels torch depends on)",
        quotes, NAMED,
        [Remedy(summary="Let torch load the CUDA libraries it was installed with: take the "
                "system CUDA folders off LD_LIBRARY_PATH, and reinstall torch so that its "
                "nvidia-* wheels match it.",
                commands=["unset LD_LIBRARY_PATH", "pip install --force-reinstall torch"])],
        details={"library": library, "symbol": symbol},
        needs=[("LD_LIBRARY_PATH and the CUDA libraries installed", "fadoctor snapshot -o -")])


def missing_libraries(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MISSING_LIB, _MISSING_NEEDLES)
    if hit is None or hit[1].group(1).startswith("libcudnn"):  # mech_cudnn_lib's
        return []
    index, found = hit
    lib = found.group(1)
    diagnosis = missing_library(lib)
    quotes = [ctx.quote(index)]
    module = _importing(ctx, index)
    if diagnosis.category == Category.CUDA_RUNTIME_MISMATCH:
        owner = OTHERS.get(module or "") or owner_in_text(ctx) or other_named(ctx, index) \
            or owners.cuda_variant_package(ctx) or owners.frame_owner(ctx, index)
        if owner is not None:
            quotes = dedupe([*quotes, *(ctx.quote(i) for i in _import_line(ctx, index))])
        return [cuda_runtime(ctx, lib, diagnosis.details.get("cuda_major"), quotes, owner)]
    if diagnosis.category == Category.ROCM:
        return [owners.rocm_library(ctx, index, module, diagnosis, quotes)]
    if module in CSRC:
        return [Signal("missing_library", diagnosis.category,
                       f"{module}, an optional flash-attention extension: {diagnosis.explanation}",
                       quotes + [ctx.quote(i) for i in _import_line(ctx, index)], NAMED,
                       [*csrc_remedies(module), r.sdpa("Meanwhile:")], details={"library": lib})]
    owner = (OTHERS.get(module or "") or owner_in_text(ctx) or other_named(ctx, index)
             or owners.told_importing(ctx)) if diagnosis.category == Category.TORCH_VERSION_MISMATCH \
        else None
    if owner is not None:  # another package's binary built against another torch
        return [Signal("missing_library", diagnosis.category,
                       f"{owner}: {diagnosis.explanation}",
                       dedupe([*quotes, *(ctx.quote(i) for i in _import_line(ctx, index))]),
                       NAMED, r.rebuild_other(ctx, owner), details={"library": lib})]
    out: List[Optional[Remedy]] = [r.exact_wheel(ctx), r.reinstall(ctx), r.force_build(ctx, "Or:")] \
        if diagnosis.category == Category.TORCH_VERSION_MISMATCH else [r.reinstall(ctx)]
    flash = bool(ctx.text.containing(("flash_attn", "flash-attn", "flash attn")))
    if not flash:  # a binary of a package the report builds or runs: no flash-attn command
        out = owners.other_binary(ctx, lib, diagnosis.category)
    return [Signal("missing_library", diagnosis.category,
                   f"{module or 'an extension'}: {diagnosis.explanation}", quotes, NAMED,
                   [*r.keep(out), *([r.sdpa("Meanwhile:")] if flash else [])],
                   details={"library": lib})]


def _import_line(ctx: Context, index: int) -> List[int]:
    return [i for i, line in ctx.text.window(index, 3, 0) if _IMPORTED.match(line)][-1:]


def _importing(ctx: Context, index: int) -> Optional[str]:
    """The module being imported when the loader failed: the `import X` line just above."""
    for i in reversed(_import_line(ctx, index)):
        found = _IMPORTED.match(ctx.text.lines[i])
        if found:
            return found.group(1).split(".")[0]
    for raised in ctx.seen.raised:
        if raised.index == index and raised.frames:
            return raised.frames[-1].rsplit("/", 1)[-1].removesuffix(".py")
    return None


# an unreleased build named: "0.45.3.dev271", "continuous-release_multi-backend-refactor", nightly
_DEV_BUILD = re.compile(r"\b\d+\.\d+(?:\.\d+)?\.dev\d+\b|continuous-release\w*|\bnightly\b", re.I)


# quoted as Python prints it, or as pasted into a rendered page (backticks, typographic quotes)
_NO_COMPILED = re.compile(r"No module named ['\u2018\u2019\"`](flash_attn_2_cuda|flash_attn_cuda|"
                          r"flash_attn_3(?:\._C|_cuda)?|flash_attn_gpu|vllm_flash_attn\.\w+|"
                          r"dropout_layer_norm|rotary_emb|fused_dense_lib|xentropy_cuda_lib|"
                          r"fused_softmax_lib)['\u2018\u2019\"`]")


# the same retold: "no package 'dropout_layer_norm'", "I can't find any dropout_layer_norm"
_RETOLD_CSRC = re.compile(r"\b(?:no|missing|can'?t find|cannot find|can not find)\b[^\n]{0,30}?"
                          r"\b(dropout_layer_norm|rotary_emb|fused_dense_lib|xentropy_cuda_lib|"
                          r"fused_softmax_lib)\b", re.I)


def missing_module(ctx: Context) -> List[Signal]:
    """A compiled module of flash-attention that Python cannot find."""
    hit = ctx.first(_NO_COMPILED, ("no module named",)) or ctx.first(
        _RETOLD_CSRC, ("dropout_layer_norm", "rotary_emb", "fused_", "xentropy"))
    if hit is None:
        return []
    module, quotes = hit[1].group(1), [ctx.quote(hit[0])]
    if module in CSRC:
        return [Signal("missing_module", Category.NOT_INSTALLED,
                       f"{module}, an optional flash-attention extension built separately from "
                       f"{CSRC[module][0]}, is not installed", quotes, NAMED,
                       csrc_remedies(module))]
    if module == "flash_attn_cuda" and (ctx.fa2 is None or ctx.fa2 >= Version("2.0")):
        return [Signal("missing_module", Category.VERSION_CONFLICT,
                       "the caller imports flash_attn_cuda, the compiled module of flash-attn "
                       "1.x: it was written for flash-attn 1.x, and 2.x names it "
                       "flash_attn_2_cuda", dedupe([*quotes, *filter(None, [ctx.fa_quote()])]),
                       LOGGED, [Remedy(summary="Upgrade the package that imports it to a release "
                                       "written for flash-attn 2.x, or install flash-attn 1.x.",
                                       commands=['pip install "flash-attn<2"'])])]
    return [Signal("missing_module", Category.WRONG_WHEEL,
                   f"flash_attn imports, but its compiled extension {module} is not there: Python "
                   "runs from a flash-attention source checkout (its flash_attn folder shadows the "
                   "installed package), or the install built no extension", quotes, NAMED,
                   [Remedy(summary="Run from another directory than a flash-attention checkout; "
                           "if it still fails, reinstall it.", commands=["cd"]),
                    r.reinstall(ctx)])]


_CUDART_NAMED = re.compile(r"\blibcudart\.so\.(\d{2})\b")


def cuda_runtime_named(ctx: Context) -> List[Signal]:
    """A report that names a CUDA runtime (libcudart.so.13) of another major than torch's CUDA,
    without the loader's own line (a title, prose): the binary that wants it was built for
    another CUDA than the installed torch."""
    if ctx.first(_MISSING_LIB, _MISSING_NEEDLES) is not None:
        return []  # the loader's line: missing_libraries reads it
    hit = ctx.first(_CUDART_NAMED, ("libcudart.so.",))
    have = ctx.torch_cuda
    if hit is None or have is None or str(have.major) == hit[1].group(1):
        return []
    index, found = hit
    low = ctx.low(index)
    owner = next((dist for top, dist in OTHERS.items() if top in low), None)
    signal = cuda_runtime(ctx, found.group(0), found.group(1), [ctx.quote(index)], owner)
    signal.strength = IMPLIED
    return [signal]
