"""Windows' forms of an undefined symbol: "DLL load failed while importing flash_attn_2_cuda: The
specified procedure could not be found", and "The procedure entry point ... could not be located
in the dynamic link library ...\\xformers\\_C.pyd": a binary built for another torch; and vLLM
on Windows itself, which it does not support (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy, Severity
from fadoctor.safety.shell import command
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.mech_symbols import OTHERS, owner_of, package_in
from fadoctor.triage.signal import FAILED, FAILED_NEEDLES, HINTED, LOGGED, NAMED, WRAPPED, Signal, dedupe
from fadoctor.triage.text import Quote

_ENTRY_POINT = re.compile(r"procedure entry point\b[^\n]{0,300}?could not be locate[d]? in the dynamic "
                          r"link library\s+([^\n]{1,400}?\.(?:pyd|dll))", re.I)


def dll_symbol(ctx: Context, index: int) -> Signal:
    """Windows' "DLL load failed while importing flash_attn_2_cuda" (with "The specified procedure
    could not be found", or no reason): the Windows form of an undefined symbol, a wheel built for
    another torch (a missing dependency DLL says "module could not be found" instead)."""
    torch = f" {ctx.torch}" if ctx.torch else ""
    return Signal("windows_symbol", Category.TORCH_VERSION_MISMATCH,
                  "Windows cannot load flash_attn_2_cuda: a function it needs is missing from the "
                  f"installed torch{torch} (Windows' form of an undefined symbol): the wheel was "
                  "built for another torch", dedupe([ctx.quote(index), *ctx.quotes("torch")]),
                  NAMED,
                  [Remedy(summary="Replace it with a flash-attn wheel built for exactly this torch, "
                          "CUDA and Python (Windows wheels come from third parties: match all "
                          "three), or rebuild it against this torch.",
                          commands=["pip uninstall -y flash-attn",
                                    "pip install flash-attn --no-build-isolation --no-cache-dir"]),
                   r.sdpa("Or uninstall flash-attn and run with PyTorch SDPA:")])


def entry_point(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ENTRY_POINT, ("procedure entry point",))
    if hit is None:
        return []
    path = hit[1].group(1).replace("\\", "/")
    if "flash_attn" in path:
        return [dll_symbol(ctx, hit[0])]
    return [_other_symbol(ctx, hit[0], owner_of(path) or "the extension", owner_of(path))]


def _other_symbol(ctx: Context, index: int, what: str, owner: Optional[str]) -> Signal:
    """Another package's extension Windows cannot load for a function torch lacks: the Windows
    form of an undefined symbol, the package built for another torch."""
    torch = f" {ctx.torch}" if ctx.torch else ""
    return Signal("windows_symbol", Category.TORCH_VERSION_MISMATCH,
                  f"Windows cannot load {what}: a function it needs is missing from the installed "
                  f"torch{torch} (Windows' form of an undefined symbol): {owner or 'its package'} "
                  "was built for another torch", dedupe([ctx.quote(index), *ctx.quotes("torch")]),
                  NAMED, r.rebuild_other(ctx, owner))


# vLLM's install guide: "Requirements - OS: Linux … vLLM does not support Windows natively. To
# run vLLM on Windows, you can use the Windows Subsystem for Linux (WSL)"
# (vllm-project/vllm@v0.26.0:docs/getting_started/installation/gpu.md)
_WINDOWS = re.compile(r"\bwindows\b|\bwin(?:dows)?\s?1[01]\b|\bwindow1[01]\b|\bwin_amd64\b|"
                      r"\b[A-Z]:\\\\", re.I)


def linux_only(ctx: Context) -> List[Signal]:
    """vLLM run or installed on Windows itself (not WSL, where it is supported)."""
    if ctx.text.containing(("wsl",)) or not ctx.text.containing(("vllm",)):
        return []
    hit = ctx.first(_WINDOWS, ("win", ":\\"))
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), ctx.quote(ctx.text.containing(("vllm",))[0])])
    return [Signal("linux_only", Category.PLATFORM_UNSUPPORTED,
                   "vLLM runs on Linux only: it does not support Windows natively", quotes, LOGGED,
                   [Remedy(summary="Run vLLM under WSL2 (a Linux distribution on Windows) or in "
                           "its Linux Docker image; natively on Windows only community forks "
                           "build it.", commands=["wsl --install"])])]


# torch's SDPA dispatcher when the build has no flash (or memory-efficient) kernel at all:
# pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, can_use_flash_attention
# (`#ifndef USE_FLASH_ATTENTION ... TORCH_WARN("Torch was not compiled with flash attention.")`,
# the memory-efficient twin under USE_MEM_EFF_ATTENTION): a warning, after which SDPA takes the
# next backend (memory-efficient, cuDNN or math). The builds without them are, most often, the
# Windows wheels and source builds with USE_FLASH_ATTENTION=0.
_NOT_COMPILED = re.compile(r"Torch was not compiled with (flash attention|memory efficient "
                           r"attention)", re.I)


def sdpa_without(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_COMPILED, ("not compiled with",))
    if hit is None:
        return []
    kernel = hit[1].group(1).lower()
    where = "this torch build (the Windows wheels are built without it)" if on_windows(ctx) \
        else "this torch build"
    return [Signal("sdpa_not_compiled", Category.PLATFORM_UNSUPPORTED,
                   f"a warning, not an error: {where} has no SDPA {kernel} kernel, so "
                   "scaled_dot_product_attention runs another backend (memory-efficient, cuDNN "
                   "or math) and the results are the same", [ctx.quote(hit[0])], WRAPPED,
                   [Remedy(summary="Nothing to fix: the warning is harmless and safe to ignore "
                           "(silence it with warnings.filterwarnings). For SDPA's flash kernel "
                           "itself, run a Linux torch build (WSL2 on Windows), or install the "
                           "flash-attn package and use it directly.",
                           code='import warnings\nwarnings.filterwarnings("ignore", '
                                'message=".*Torch was not compiled with")')],
                   Severity.INFO)]


# an install of flash-attn said in the report ("pip install flash-attn --no-build-isolation")
_FA_INSTALL = re.compile(r"\b(?:pip3?|uv pip|uv)\s+install\b[^\n]{0,60}?\bflash[-_]attn\b", re.I)


def install_on_windows(ctx: Context) -> List[Signal]:
    """flash-attn installed (built) on Windows and failing, with the log only in a screenshot:
    its releases carry Linux x86_64 wheels only, so pip compiles it there (MSVC, the CUDA
    toolkit, hours) for this exact torch, CUDA and Python."""
    install = ctx.first(_FA_INSTALL, ("flash-attn", "flash_attn"))
    if install is None or not on_windows(ctx):
        return []
    failed = ctx.first(FAILED, FAILED_NEEDLES)
    if failed is None:
        return []
    return [Signal("windows_install", Category.PLATFORM_UNSUPPORTED,
                   "flash-attn is being installed on Windows: its releases carry wheels for Linux "
                   "x86_64 only, so pip compiles it here (MSVC and the CUDA toolkit, for hours), "
                   "for exactly this torch, CUDA and Python", dedupe([ctx.quote(install[0]),
                                                                     ctx.quote(failed[0])]),
                   HINTED, [r.sdpa("Run without it: the model's attention through PyTorch SDPA "
                                   "(attn_implementation=\"sdpa\", or the node's attention option).")
                            , Remedy(summary="Or install a community-built Windows wheel whose name "
                                     "matches this torch, CUDA and Python (cpXY-win_amd64), or "
                                     "run under WSL2, where the official Linux wheels install.")])]


# pip finding nothing at all for a requirement ("(from versions: none)"), or the person finding no
# win_amd64 wheel among a package's releases: on Windows, the package publishes nothing for it
_NO_DISTRIBUTION = re.compile(r"Could not find a version that satisfies the requirement "
                              r"([\w.-]{1,60})[^\n]{0,80}\(from versions: none\)")
# (in prose too: "precompiled packages but they are all for linux", "cannot be compiled on windows")
_NO_WIN_WHEEL = re.compile(r"\b(?:no|not (?:a|any)|there is not|there's no|without)\s+(?:a\s+)?"
                           r"win_amd64\b[^\n]{0,20}(?:\.whl|wheel)|\b(?:wheels?|precompiled|pre-?built|"
                           r"binaries)\b[^\n]{0,40}?\b(?:all|only)\s+(?:for\s+)?linux\b|\bcan(?:not|'t)"
                           r"\s+(?:be\s+)?(?:compiled?|built|build)\s+on\s+windows\b", re.I)
# a pinned Triton said to be unavailable on Windows ("triton==3.4.0 is the blocker ... windows",
# "triton is not available on windows"): PyPI's triton has no win_amd64 wheel at any release
# (pip index versions triton --platform win_amd64: none, 5 Dec 2026)
# (a model's remote code: "requires the `triton` package, which is only available on Linux")
_TRITON_ON_WINDOWS = re.compile(r"\btriton(?:==([\d.]+))?\b[^\n]{0,80}\b(?:not available|unavailable|"
                                r"blocker|no wheels?|cannot install|can't install|only available on "
                                r"Linux)\b", re.I)
_TRITON_PIN = re.compile(r"\btriton==(\d+\.\d+(?:\.\d+)?)")
_NO_TRITON = re.compile(r"satisfies the requirement triton(?:==([\d.]+))?\b")  # versions cut
_PACKAGE_ASKED = re.compile(r"\b(?:install|build|installing|building)\s+([A-Za-z][\w.-]{1,40})",
                            re.I)


def no_windows_distribution(ctx: Context) -> List[Signal]:
    """On Windows, a requirement with no distribution at all (pip's `from versions: none`: no wheel
    for this platform and Python, no source), or releases with no win_amd64 wheel, as it says."""
    if not on_windows(ctx) or ctx.text.containing(("wsl",)):
        return []
    hit = ctx.first(_NO_DISTRIBUTION, ("from versions: none",))
    said = (ctx.first(_TRITON_ON_WINDOWS, ("triton",))
            or ctx.first(_NO_TRITON, ("requirement triton",))) if hit is None else None
    if hit is not None:
        package, index = hit[1].group(1), hit[0]
    elif said is not None:
        package, index = f"triton{'==' + said[1].group(1) if said[1].group(1) else ''}", said[0]
    else:
        prose = ctx.first(_NO_WIN_WHEEL, ("win_amd64", "linux", "on windows"))
        if prose is None:
            return []
        index = prose[0]
        asked = ctx.first(_PACKAGE_ASKED, ("install", "build"))
        package = asked[1].group(1) if asked else package_in(ctx) or "this package"
    windows, py = ctx.first(_WINDOWS, ("windows", "win_amd64", ":\\")), ctx.python
    quotes = dedupe([ctx.quote(index), *([ctx.quote(windows[0])] if windows else [])])
    if package.split("==")[0].lower() == "triton":
        pin = ctx.first(_TRITON_PIN, ("triton==",))
        return [_triton(f"triton=={pin[1].group(1)}" if pin else package, quotes)]
    return [Signal("linux_only", Category.PLATFORM_UNSUPPORTED,
                   f"{package} publishes nothing installable for Windows ("
                   + ("pip finds no distribution of it for this Windows Python" if hit is not None
                      else "its releases carry no win_amd64 wheel") + "): its wheels are built "
                   "for other platforms", quotes, LOGGED if hit is not None else HINTED,
                   [Remedy(summary=f"Run it under WSL2 (a Linux distribution on Windows) or on "
                           f"Linux, where {package}'s wheels exist; natively on Windows only "
                           "community builds exist, if any. (Where it does ship Windows wheels "
                           "for other Pythons, an environment of such a Python" + (
                               f": a new Python gets wheels last, so Python 3.{py.minor - 1} "
                               f"rather than {py}" if py and py >= Version("3.12") else "") + ".)",
                           commands=["wsl --install"])])]


def _triton(package: str, quotes: List[Quote]) -> Signal:
    """Triton on Windows: PyPI's triton is Linux-only; triton-windows (woct0rdho) follows its
    3.x minors from 3.1 (3.1.0.post17 ... 3.8.0.postN, win_amd64 wheels on PyPI)."""
    pinned = package.partition("==")[2]
    want = Version(pinned) if pinned and re.fullmatch(r"\d+\.\d+(?:\.\d+)?", pinned) else None
    fixes = [Remedy(summary=("Or run" if want is None or want >= Version("3.1") else
                             "No Windows build of this Triton exists (triton-windows starts at 3.1): "
                             "run") + " it under WSL2 (Linux on Windows), where triton's wheels "
                    "exist.", commands=["wsl --install"])]
    if want is None or want >= Version("3.1"):
        spec = f"triton-windows<{want.major}.{want.minor + 1}" if want else "triton-windows"
        fixes.insert(0, Remedy(summary="Install triton-windows instead (the Windows build of "
                               "Triton, its releases following Triton's minors from 3.1; it "
                               "must match the Triton minor that your torch pins) and drop the "
                               "triton pin from the requirements on Windows (a `; sys_platform "
                               "== 'linux'` marker).", commands=[command("pip", "install", spec)]))
    return Signal("linux_only", Category.PLATFORM_UNSUPPORTED,
                  f"{package} has no Windows wheel: PyPI's triton publishes Linux wheels only, at "
                  "every release", quotes, LOGGED, fixes)


# PyPI's triton has wheels for Linux only (x86_64 at every release, aarch64 from 3.x), for each
# CPython its release supports: pip finding no triton at all on a machine the report does not
# place is Windows or macOS, or a Python newer than every triton release.
LINUX = re.compile(r"\blinux\b|manylinux|\bubuntu\b|\bdebian\b|\bcentos\b|\bwsl\b|/home/|/usr/", re.I)
# a report from macOS (also mech_pip_versions)
MAC = re.compile(r"\bmac ?os\b|\bdarwin\b|\bmacbook\b|\bOS X\b|\bapple (?:m\d|silicon)\b|/Users/", re.I)


def triton_nowhere(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_DISTRIBUTION, ("from versions: none",))
    if hit is None or hit[1].group(1).lower() != "triton" or on_windows(ctx) or \
            LINUX.search(ctx.text.joined):
        return []
    mac = ctx.first(MAC, ("mac", "darwin", "os x", "/users/", "apple"))
    if mac is not None:
        return [Signal("linux_only", Category.PLATFORM_UNSUPPORTED,
                       "triton has no macOS wheel: PyPI's triton publishes Linux wheels only, and "
                       "its GPU backends are CUDA and ROCm", dedupe([ctx.quote(hit[0]),
                                                                     ctx.quote(mac[0])]), LOGGED,
                       [Remedy(summary="Drop triton on macOS (a `; sys_platform == 'linux'` "
                               "marker) and run the code path without it: no torch.compile "
                               "with Inductor's Triton kernels, attention through PyTorch SDPA "
                               "(MPS). Triton kernels need a Linux machine with a CUDA or ROCm "
                               "GPU.")])]
    signal = _triton("triton", [ctx.quote(hit[0])])
    signal.message = ("pip finds no triton at all: PyPI's triton publishes Linux wheels only, so "
                      "this is Windows or macOS (or a Python newer than every triton release)")
    signal.strength = HINTED
    return [signal]


# flash-attention's optional extensions (csrc/layer_norm, rotary, fused_dense_lib, xentropy,
# fused_softmax: each its own setup.py) built on Windows: nothing in flash-attention builds or
# tests them there, and models that use them fall back without them
_CSRC_BUILD = re.compile(r"\bpip3?\s+install\b[^\n]{0,40}?\bcsrc[/\\](layer_norm|rotary|"
                         r"fused_dense_lib|xentropy|fused_softmax)\b", re.I)


def csrc_on_windows(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CSRC_BUILD, ("csrc",))
    if hit is None or not on_windows(ctx):
        return []
    folder = hit[1].group(1)
    windows = ctx.first(_WINDOWS, ("windows", "win_amd64", ":\\"))
    return [Signal("windows_install", Category.PLATFORM_UNSUPPORTED,
                   f"flash-attention's optional csrc/{folder} extension is being built on Windows, "
                   "where flash-attention's releases publish no wheels and no release builds "
                   "its optional extensions",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(windows[0])] if windows else [])]),
                   HINTED,
                   [Remedy(summary=f"Skip csrc/{folder}: it is optional (a fused kernel), and the "
                           "model code runs without it (its plain PyTorch layer, or flash_attn's "
                           "Triton version under flash_attn.ops.triton). Build it only under WSL2 "
                           "or Linux.", commands=["wsl --install"])])]


# torch.compile refused on Windows by torch itself (torch/_dynamo/eval_frame.py,
# check_if_dynamo_supported: `if sys.platform == "win32": raise RuntimeError("Windows not yet
# supported for torch.compile")`, in the releases before Windows support)
_COMPILE_WINDOWS = re.compile(r"Windows not yet supported for torch\.compile")


def compile_on_windows(ctx: Context) -> List[Signal]:
    hit = ctx.first(_COMPILE_WINDOWS, ("windows not yet supported",))
    if hit is None:
        return []
    return [Signal("compile_on_windows", Category.PLATFORM_UNSUPPORTED,
                   "this torch refuses torch.compile on Windows (its Dynamo checks the platform "
                   "first)", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Run without torch.compile on Windows (the program's compile "
                           "option off: eager mode), or run under WSL2 or Linux, where it "
                           "compiles; later torch releases compile on Windows with Triton for "
                           "Windows (triton-windows).")])]


# A build that makes symbolic links on Windows (xformers' setup.py symlink_package: os.symlink)
# without the privilege: "[WinError 1314] A required privilege is not held by the client" (Windows'
# ERROR_PRIVILEGE_NOT_HELD: creating symlinks needs administrator rights or Developer Mode)
_SYMLINK = re.compile(r"\[WinError 1314\]|A required privilege is not held by the client")


def symlink_privilege(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SYMLINK, ("winerror 1314", "required privilege"))
    if hit is None:
        return []
    symlink = ctx.has("symlink")
    return [Signal("windows_symlink", Category.BUILD_TOOLCHAIN,
                   "the build creates a symbolic link, and on Windows that needs administrator "
                   "rights or Developer Mode, which this session lacks",
                   dedupe([ctx.quote(hit[0]), *([symlink] if symlink else [])]), NAMED,
                   [Remedy(summary="Turn on Windows Developer Mode (Settings > For developers), "
                           "which lets users create symlinks, or run the install from an "
                           "administrator prompt; or take a release whose setup.py copies files "
                           "instead of linking them, or a prebuilt wheel.")])]


# MSVC's linker unable to write the extension it builds: "LINK : fatal error LNK1104: cannot open
# file 'nvdiffrast_plugin.pyd'" (Microsoft's LNK1104: the file is in use or not writable), in a
# JIT build that reuses its build folder (torch.utils.cpp_extension's
# _get_build_directory: %LOCALAPPDATA%\torch_extensions, or TORCH_EXTENSIONS_DIR): a module
# another process still holds, or a stale build of an earlier release
_LNK1104 = re.compile(r"LNK1104:? ?(?:cannot|can't|can not) open (?:the )?file ?['\"]?([\w.-]{1,80}\.pyd)",
                      re.I)


def locked_extension(ctx: Context) -> List[Signal]:
    hit = ctx.first(_LNK1104, ("lnk1104",))
    if hit is None:
        return []
    return [Signal("locked_extension", Category.BUILD_TOOLCHAIN,
                   f"the linker cannot write {hit[1].group(1)}: a running process still has the "
                   "extension loaded, or the build folder holds a stale build of another release",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Close every Python that imported the extension, then clear "
                           "torch's extension build directory (%LOCALAPPDATA%\\torch_extensions, "
                           "or TORCH_EXTENSIONS_DIR where set; its build folder for this "
                           "extension) so the JIT build starts clean.")])]


# Windows failing to load one of torch's own DLLs: "[WinError 126] The specified module could not
# be found. Error loading "...\torch\lib\fbgemm.dll" or one of its dependencies." (torch/__init__.py,
# _load_dll_libraries). torch 2.4.0's Windows wheels linked fbgemm.dll against
# libomp140.x86_64.dll, which they do not ship (pytorch/pytorch#131662, fixed for 2.4.1 by
# pytorch/pytorch#130697); otherwise the usual missing dependency is the Visual C++ runtime
_TORCH_DLL = re.compile(r"(?:Error loading [\"'\\\\]*|^\s{0,40}[\"'])"  # the path may wrap
                        r"([^\"'\n]{0,300}?[\\/]torch[\\/]+lib[\\/]+(\w+)\.dll)", re.I)


def torch_dll(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TORCH_DLL, ("error loading", "or one of its dependencies"))
    if hit is None or not ctx.text.containing(("winerror 126", "module could not be found")):
        return []
    dll = hit[1].group(2)
    torch = ctx.torch
    runtime = Remedy(summary="Install the latest Microsoft Visual C++ Redistributable (x64, "
                     "vc_redist.x64.exe) and open a new terminal; if it still fails, reinstall "
                     "torch in that environment.")
    if dll.lower() == "fbgemm" and (torch is None or torch.base_version == "2.4.0"):
        said = ("torch 2.4.0's Windows wheels link fbgemm.dll against libomp140.x86_64.dll, "
                "which they do not ship: Windows cannot load fbgemm.dll without it")
        return [Signal("torch_dll", Category.NOT_INSTALLED,
                       said if torch else "the report states no torch: if it is 2.4.0, " + said,
                       dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]),
                       NAMED if torch else LOGGED,
                       r.keep([Remedy(summary="Install torch 2.4.1 or later (its wheels carry the "
                                      "fix), or 2.3.1; or put libomp140.x86_64.dll (from Visual "
                                      "Studio's C++ build tools) beside fbgemm.dll."),
                               None if torch else runtime]),
                       details={"source": "pytorch/pytorch#131662; pytorch/pytorch#130697"})]
    return [Signal("torch_dll", Category.NOT_INSTALLED,
                   f"Windows cannot load torch's {dll}.dll or a DLL it depends on: most often "
                   "the Microsoft Visual C++ runtime is missing or older than torch's",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), LOGGED, [runtime])]


# Windows' loader failing a package's own extension for a missing function ("DLL load failed
# while importing exllamav2_ext: The specified procedure could not be found"): the Windows form
# of an undefined symbol, as for flash_attn_2_cuda above, for another package's module
# (error 127, ERROR_PROC_NOT_FOUND, in the system's language: zh, ja, ko, de, fr, ru)
_PROC_NOT_FOUND = ("The specified procedure could not be found", "找不到指定的程序",
                   "指定されたプロシージャが見つかりません", "지정된 프로시저를 찾을 수 없습니다",
                   "Die angegebene Prozedur wurde nicht gefunden", "La procédure spécifiée est introuvable",
                   "\u041d\u0435 \u043d\u0430\u0439\u0434\u0435\u043d\u0430 "  # Russian
                   "\u0443\u043a\u0430\u0437\u0430\u043d\u043d\u0430\u044f "
                   "\u043f\u0440\u043e\u0446\u0435\u0434\u0443\u0440\u0430")
_PROCEDURE = re.compile(r"DLL load failed while importing (\w+): (?:"
                        + "|".join(map(re.escape, _PROC_NOT_FOUND)) + ")")


def procedure_missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_PROCEDURE, ("dll load failed while importing",))
    if hit is None or hit[1].group(1).startswith("flash_attn"):
        return []  # flash-attn's is mech_wrappers' (dll_symbol)
    module = hit[1].group(1)
    owner = OTHERS.get(module) or OTHERS.get(re.sub(r"_(?:ext|C|cuda|kernels?)$", "", module))
    return [_other_symbol(ctx, hit[0], module, owner)]
