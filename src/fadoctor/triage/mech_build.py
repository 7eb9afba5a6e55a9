"""Build and install failures by mechanism: memory (killed compilers), no ninja (a serial build of
hours), build isolation hiding torch, nvcc missing or of the wrong version, the host compiler, an
architecture nvcc does not know, and wheels pip refuses for this platform (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.matrix.fa2 import parse_local
from fadoctor.report import Category, Remedy, Severity
from fadoctor.safety.shell import command
from fadoctor.triage import build_package, mech_api
from fadoctor.triage import errors as e
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_machine import cuda_build_on_rocm
from fadoctor.triage.mech_symbols import package_in
from fadoctor.triage.signal import LOGGED, NAMED, WRAPPED, Signal, dedupe
from fadoctor.triage.text import Quote

# setup.py's bare_metal_version is assigned only under `if CUDA_HOME is not None:` (flash-attn's
# setup.py from v2.0, mamba-ssm's and causal-conv1d's copies of it): with no nvcc found, a later use
# raises NameError instead of a message about CUDA
# (DeepSpeed's op builder: "CUDA_HOME does not exist, unable to compile CUDA op(s)",
# deepspeedai/DeepSpeed op_builder/builder.py MissingCUDAException)
_CUDA_HOME = re.compile(r"CUDA_HOME environment variable is not set|Cannot find CUDA_HOME|"
                        r"CUDA_HOME does not exist|"
                        r"nvcc (?:was )?not found|"
                        r"NameError: name 'bare_metal_(?:version|major|minor)' is not defined|"
                        r"No such file or directory: '[^']{0,300}/nvcc'|nvcc: (?:command )?not found|"
                        r"cu(?:da|blas|sparse|solver|rand|fft)\w{0,20}\.h\s?:\s?No (?:such )?file", re.I)
_NVCC_VS_TORCH = re.compile(r"detected CUDA version \((\d+\.\d+)\) mismatches the version that "
                            r"was used to compile\s+PyTorch \((\d+\.\d+)\)")
# flash-attention's setup.py, and the same template in mamba-ssm's and causal-conv1d's
# (f"{PACKAGE_NAME} is only supported on CUDA 11.6 and above.  Note: make sure nvcc ...")
_NVCC_MIN = re.compile(r"([\w-]{1,40}) is only supported on CUDA (\d+\.\d+) and above")
_WHEEL_TAG = re.compile(r"(\S{1,300}\.whl) is not a supported wheel on this platform")
# uv's hint for a wheel of another platform (astral-sh/uv crates/uv-installer/src/plan.rs,
# IncompatibleTag::Platform): "The wheel is compatible with Linux (`linux_x86_64`), but you're on
# Windows (`win_amd64`)".
_UV_PLATFORM = re.compile(r"The (?:wheel|distribution) is compatible with ([^\n]{1,200}?), but "
                          r"you're on [^\n`]{0,40}`([\w.]{1,40})`")
_DRIVE_PATH = re.compile(r"(?<![\w])[A-Za-z]:\\")
_LOCAL_PIN = re.compile(r"(?:Could not find a version that satisfies the requirement|No matching "
                        r"distribution found for) (flash[-_]attn[^\s+]{0,40}\+\S{1,80})", re.I)
_GUESSED = re.compile(r"(?:Guessing wheel URL|Downloading|Raw wheel path)\W{0,5}\s*\S{0,200}?/"
                      r"(flash_attn-[\w.+]{1,120}-cp\d+-cp\d+\w*-\w+\.whl)")
_BUILD_FAILED = re.compile(r"Failed (?:to build|building wheel for) (?:flash[-_]attn|"
                           r"installable wheels)|subprocess-exited-with-error", re.I)


def build_context(ctx: Context, index: int) -> bool:
    low = ctx.low(index)
    return e.BUILD in ctx.seen.marks or any(w in low for w in ("build", "compil", "install",
                                                               "wheel", "setup.py"))


def prebuilt(ctx: Context) -> Remedy:
    """Skip the build: flash-attn's prebuilt wheel, or the other package's (build_package)."""
    found = build_package.other_wheel(ctx) or r.exact_wheel(ctx, replace_installed=False)
    if found is not None:
        return found
    return Remedy(summary="Skip compiling: install the prebuilt .whl for your torch, CUDA, C++ ABI "
                  "and Python from the release page (`fadoctor fix --print-pins` names it).",
                  commands=["fadoctor fix --print-pins"], link=r.WHEELS_PAGE)


def nvcc_missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUDA_HOME, ("cuda_home", "nvcc", ".h: no such file", "bare_metal_", ".h:no "))
    if hit is None or (ctx.amd and ctx.has("pip-build-env-")):  # a CUDA torch isolation pulled
        return []
    if "cuda_home" in ctx.low(hit[0]) and ctx.torch is not None and ctx.torch.local == "cpu":
        # torch/utils/cpp_extension.py (2.13.0:359): CUDA_HOME = _find_cuda_home() if
        # (torch.cuda._is_compiled() and torch.version.cuda) else None: a CPU torch never has one
        return [Signal("nvcc_missing", Category.TORCH_CPU_ONLY,
                       f"torch {ctx.torch} is a CPU-only build: torch's extension builder sets "
                       "CUDA_HOME only for a CUDA torch, so no CUDA toolkit is found whatever is "
                       "installed", dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                       [Remedy(summary="Install a CUDA build of torch (the +cuXXX wheel for your driver: "
                               "`fadoctor fix` picks it), then build again.",
                               commands=["fadoctor fix --print-pins"])])]
    building = build_package.built(ctx)
    package = building or package_in(ctx, ctx.text.lines[hit[0]])
    rocm = cuda_build_on_rocm(ctx, hit[0], package)
    if rocm is not None:
        return [rocm]
    skip = prebuilt(ctx) if package in (None, "flash-attn", building) else Remedy(
        summary=f"Or skip compiling: install a prebuilt {package} wheel built for this torch, CUDA "
                "and Python (its release page lists them), where one exists.")
    image = ctx.first(_RUNTIME_IMAGE, ("nvidia/cuda:",))
    devel = [] if image is None else [Remedy(
        summary=f"nvidia/cuda:{image[1].group(0).split(':', 1)[1]} is a {image[1].group(2)} image: "
                "NVIDIA's base and runtime images carry the CUDA runtime (and its libraries), "
                "not nvcc or the CUDA headers; the devel image of the same tag adds them.",
        commands=[f"docker pull {_devel(image[1].group(0))}"])]
    return [Signal("nvcc_missing", Category.BUILD_TOOLCHAIN,
                   "the build found no CUDA headers: the toolkit is incomplete (conda's nvcc package "
                   "alone has none) or CUDA_HOME points elsewhere" if ".h" in ctx.low(hit[0]) else
                   "the build found no CUDA compiler: nvcc is not installed or CUDA_HOME does not "
                   "point at the toolkit", dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]),
                   NAMED, [*devel, toolkit(ctx), skip])]


# NVIDIA's CUDA images by flavour (nvidia/cuda on Docker Hub, "base: includes the CUDA runtime
# (cudart)", "runtime: builds on the base and includes the CUDA math libraries and NCCL",
# "devel: builds on the runtime and includes headers, development tools for building CUDA
# images"): a build inside a base or runtime image has no nvcc
_RUNTIME_IMAGE = re.compile(r"nvidia/cuda:([\w.]{1,20}(?:-cudnn\d{0,2})?)-(runtime|base)(-[\w.]{1,40})?")


def _devel(image: str) -> str:
    return re.sub(r"-(?:runtime|base)(?=-|$)", "-devel", image, count=1)


def toolkit(ctx: Context, at_least: Optional[Version] = None) -> Remedy:
    cuda = ctx.torch_cuda
    if cuda is not None:
        want = f"CUDA toolkit {cuda.major}.x (torch's CUDA is {cuda}" + (
            f"; at least {at_least}" if at_least else "") + ")"
    else:
        want = f"the CUDA toolkit of torch's CUDA major{f' (at least {at_least})' if at_least else ''}"
    return Remedy(summary=f"Install {want}, with its nvcc, and point CUDA_HOME at it before "
                  "building (and put $CUDA_HOME/bin first on PATH, so that nvcc is that one).",
                  commands=["export CUDA_HOME=/usr/local/cuda", "/usr/local/cuda/bin/nvcc --version"])


def nvcc_version(ctx: Context) -> List[Signal]:
    mismatch = ctx.first(_NVCC_VS_TORCH, ("mismatches the version",))
    if mismatch is not None:
        return [_nvcc_vs_torch(ctx, mismatch[0], mismatch[1].group(1), mismatch[1].group(2))]
    low = ctx.first(_NVCC_MIN, ("only supported on cuda",))
    if low is None:
        return []
    package, need = low[1].group(1), Version(low[1].group(2))
    who = "flash-attn" if package.startswith("FlashAttention") else package.replace("_", "-")
    quotes = dedupe([ctx.quote(low[0]), *ctx.quotes("nvcc", "torch")])
    shown = f"nvcc {ctx.nvcc}" if ctx.nvcc else "the nvcc the build found (or none)"
    return [Signal("nvcc_version", Category.BUILD_TOOLCHAIN,
                   f"{shown} is older than {who}'s setup.py accepts (CUDA {need} or newer): "
                   "setup.py checks the nvcc on PATH / CUDA_HOME, not torch's CUDA", quotes, NAMED,
                   r.keep([toolkit(ctx, need), _wheel_for_old_cuda(ctx, need)
                           if who == "flash-attn" else None, prebuilt(ctx)]),
                   needs=[] if ctx.nvcc else [("the nvcc the build uses",
                                               "which nvcc; nvcc --version; printenv CUDA_HOME")])]


def _wheel_for_old_cuda(ctx: Context, need: Version) -> Optional[Remedy]:
    """The newest flash-attn release that published a wheel for the stated CUDA below `need`
    (and the stated torch minor): an older setup.py that took that CUDA, and fetches its wheel."""
    cuda = ctx.nvcc or ctx.torch_cuda or parse_version(ctx.seen.get(o.CUDA))
    if cuda is None or Version(f"{cuda.major}.{cuda.minor}") >= need:
        return None
    tag = f"cu{cuda.major}{cuda.minor}" + (f"torch{ctx.torch.major}.{ctx.torch.minor}"
                                           if ctx.torch is not None else "")
    found = [rel for rel in ctx.matrix.flash_attn_releases if not rel.version.is_prerelease
             and any(key.startswith(tag + "cxx11abi") or (ctx.torch is None and key.startswith(tag))
                     for key in rel.assets)]
    if not found:
        return None
    newest = max(found, key=lambda rel: rel.version)
    return Remedy(summary=f"Or keep CUDA {cuda.major}.{cuda.minor}: flash-attn {newest.version} is the "
                  f"newest release with a prebuilt wheel for {tag} (its release assets), and its "
                  "setup.py takes that CUDA and fetches the wheel.",
                  commands=[command("pip", "install", f"flash-attn=={newest.version}",
                                    "--no-build-isolation")])


def _nvcc_vs_torch(ctx: Context, index: int, nvcc: str, torch_cuda: str) -> Signal:
    isolated = ctx.seen.marks.get(e.ISOLATED)
    quotes = dedupe([ctx.quote(index), *([isolated.quote] if isolated else []),
                     *ctx.quotes("torch", "nvcc")])
    remedies: List[Optional[Remedy]] = []
    if isolated is not None or e.NO_ISOLATION not in ctx.seen.marks:
        remedies.append(Remedy(summary=f"pip builds in an isolated environment unless told not "
                               f"to, with a torch it downloads (here one built for CUDA "
                               f"{torch_cuda}): build against your own torch instead.",
                               commands=["pip install flash-attn --no-build-isolation"]))
    remedies.append(r.torch_for_cuda(ctx, Version(nvcc).major, Version(nvcc)))
    remedies.append(Remedy(summary=f"Or build with nvcc {torch_cuda}: install CUDA toolkit "
                           f"{torch_cuda} and point CUDA_HOME at it.",
                           commands=[f"export CUDA_HOME=/usr/local/cuda-{torch_cuda}"]))
    remedies.append(prebuilt(ctx))
    return Signal("nvcc_version", Category.BUILD_TOOLCHAIN,
                  f"nvcc {nvcc} and the torch being built against (CUDA {torch_cuda}) have "
                  "different CUDA majors: torch's extension builder refuses the build",
                  quotes, NAMED, r.keep(remedies), details={"nvcc": nvcc, "torch_cuda": torch_cuda})


def on_windows(ctx: Context) -> bool:
    """The report's machine runs Windows: it says so, or its paths have drive letters."""
    stated = str(ctx.seen.get("os") or "").lower()
    # CPython's sys.version names its compiler: "[MSC v.1937 64 bit (AMD64)]" is a Windows build
    return "windows" in stated or ctx.has("[msc v.") is not None \
        or ctx.first(_DRIVE_PATH, (":\\",)) is not None \
        or ctx.first(_ON_WINDOWS, ("win", "powersh", "cmd", "command prompt")) is not None


# "I'm on Windows 11", "using windows 10", "build it in Windows": where they run it
_ON_WINDOWS = re.compile(r"\b(?:on|in|using|running|use|with)\s+(?:a\s+)?windows(?:\s*1[01])?\b|"
                         # its shells: "cmd shows ...", "the command prompt", PowerShell
                         r"\bcmd(?:\.exe)? (?:shows|says|prints)\b|\bcommand prompt\b|\bpowersh\w{0,3}ll\b|"
                         # "local machine(window11)", "win10 torch 2.7.1"
                         r"\bwin(?:dows)?\s?1[01]\b|\bwindow1[01]\b|"
                         # Chinese: "windows平台下" (on the Windows platform), "windows系统"
                         r"\bwindows\s?(?:平台|系统|系統|环境|下)|"
                         # an environment listing's line: "Windows 10", "OS: Windows 11 Pro"
                         r"^\W*(?:(?:os|platform|system)\W{1,4})?windows\s*1[01]\b|"
                         # a field naming it ("OS: Windows", 开发环境 / 操作系统 then a colon)
                         r"^\W*(?:os|platform|system|environment|[\u4e00-\u9fff]{0,4}"
                         r"(?:环境|系统|系統|平台))\s*[:\uff1a]\s*windows\b", re.I)


def uv_platform(ctx: Context) -> List[Signal]:
    hit = ctx.first(_UV_PLATFORM, ("but you're on",))
    if hit is None:
        return []
    wheel, here = re.findall(r"`([\w.]{1,40})`", hit[1].group(1)), hit[1].group(2)
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("python", "os")])
    where = "Windows" if here.startswith("win") else here
    return [Signal("uv_platform", Category.PLATFORM_UNSUPPORTED,
                   f"uv refuses a wheel for {', '.join(wheel) or 'another platform'} on {where} "
                   f"(`{here}`): flash-attn's own release wheels are Linux x86_64 only", quotes,
                   NAMED, [Remedy(summary=f"Use a wheel built for {here} and this Python, torch "
                                  "and CUDA, or build flash-attn from source on this machine "
                                  "(on Windows: the MSVC build tools and a CUDA toolkit).",
                                  commands=["fadoctor fix --print-pins"]),
                           r.sdpa("Or run attention through PyTorch SDPA, which needs no wheel:")])]


def wheel_tags(ctx: Context) -> List[Signal]:
    hit = ctx.first(_WHEEL_TAG, ("not a supported wheel",))
    name = hit[1].group(1).rsplit("/", 1)[-1] if hit is not None else ""
    parts = name[:-4].split("-")
    if hit is None or len(parts) < 5:
        return []
    python_tag, platform = parts[-3], parts[-1]
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("python", "os", "machine")])
    if not parts[0].lower().startswith("flash_attn"):
        return [_other_wheel(ctx, parts[0], parts[1], (python_tag, platform), quotes)]
    have = ctx.python
    if have is not None and python_tag.startswith("cp") and python_tag != f"cp{have.major}{have.minor}":
        return [Signal("wheel_tag", Category.WRONG_WHEEL,
                       f"the wheel is for {python_tag} (Python {python_tag[2]}.{python_tag[3:]}), "
                       f"but the environment runs Python {have}", quotes, NAMED,
                       _python_wheel(ctx, name, python_tag, have))]
    if platform == "win_amd64" and python_tag.startswith("cp") and on_windows(ctx):
        wanted = f"{python_tag[2]}.{python_tag[3:]}"
        return [Signal("wheel_tag", Category.WRONG_WHEEL,
                       f"pip refuses {name} on this Windows machine: the platform tag is right, so "
                       f"its Python tag is not: the wheel is for {python_tag} (Python {wanted})",
                       quotes, NAMED,
                       [Remedy(summary=f"Take the wheel built for this interpreter's Python tag "
                               f"(cpXY = its version: cp310 for Python 3.10, `python -VV` says "
                               f"which), or install it with a Python {wanted} interpreter (a new "
                               "environment).", commands=[f"conda create -n fa python={wanted}"])],
                       needs=[("the interpreter's version", "python -VV")])]
    if platform != "linux_x86_64" or (ctx.seen.get("machine") or "x86_64") != "x86_64":
        return [Signal("wheel_tag", Category.PLATFORM_UNSUPPORTED,
                       f"the wheel is for {platform}, which this machine is not: flash-attn "
                       "publishes wheels for Linux x86_64 only", quotes, NAMED,
                       [r.force_build(ctx, "Elsewhere:"), r.sdpa("Or:")])]
    return [Signal("wheel_tag", Category.WRONG_WHEEL,
                   f"pip refuses {name} here: its Python ({python_tag}) or platform ({platform}) "
                   "tag does not match this environment", quotes, NAMED, [prebuilt(ctx)],
                   needs=[("the Python version and platform", "python -VV; uname -m")])]


def _other_wheel(ctx: Context, dist: str, version: str, tags: Tuple[str, str],
                 quotes: List[Quote]) -> Signal:
    """Another package's wheel refused here: pip picks that package's release with a wheel for this
    platform and Python when asked for the package, not the file (a platform tag this machine has
    leaves the Python tag as what pip refused)."""
    project = dist.replace("_", "-")
    python_tag, platform = tags
    arm = ctx.arm_host
    windows = on_windows(ctx)
    want = " (an aarch64 wheel, for this Arm host)" if arm and "aarch64" not in platform else \
        " (its win_amd64 wheel: this is Windows; a linux wheel runs under WSL2)" if windows and \
        platform.startswith(("linux", "manylinux")) else ""
    fits = (platform == "win_amd64") == windows and platform in ("win_amd64", "linux_x86_64") \
        and not arm
    said = f"pip refuses {project} {version}'s wheel for {platform} on this machine"
    other: List[Remedy] = []
    mine = f"cp{ctx.python.major}{ctx.python.minor}" if ctx.python else None
    python = ctx.python if mine != python_tag else None  # pip refused that Python's tag: not it
    mine = mine if python is not None else None
    if re.fullmatch(r"cp3\d{1,2}", python_tag) and (fits or mine not in (None, python_tag)):
        wanted = f"3.{python_tag[3:]}"
        have = f" (it runs Python {python})" if python else ""
        said = (f"pip refuses {project} {version}'s wheel: it was built for CPython {wanted} "
                f"({python_tag}) and this environment's Python is another{have}")
        tag = f"{mine}, Python {python}'s" if mine else "this interpreter's version " \
            "(`python -VV`)"
        other = [Remedy(summary=f"Or take the wheel file built for the matching Python version: its "
                        f"cpXY tag must be {tag}, not {python_tag}.", commands=["python -VV"])]
    elif re.fullmatch(r"cp3\d{1,2}", python_tag):  # platform or Python: the file fits only both
        wanted = f"3.{python_tag[3:]}"
        other = [Remedy(summary=f"That file installs only into a Python {wanted} ({python_tag}) "
                        f"on {platform}: `python -m pip --version` names the Python and platform "
                        f"this pip installs into; use a Python {wanted} environment there, or the "
                        "wheel file built for this one.", commands=["python -m pip --version"])]
    return Signal("wheel_tag", Category.WRONG_WHEEL, said,
                  dedupe([*quotes, *([arm] if arm else [])]), NAMED,
                  [Remedy(summary=f"Ask pip for the package, not that file: it takes the newest "
                          f"{project} release with a wheel for this platform and Python{want}; "
                          "if it finds none, no release has one yet.",
                          commands=[command("pip", "install", "--upgrade", "--only-binary",
                                            project, project)]), *other])


def _python_wheel(ctx: Context, name: str, tag: str, have: Version) -> List[Remedy]:
    mine = f"cp{have.major}{have.minor}"
    version, _, local = name.split("-")[1].partition("+")
    rel = ctx.matrix.fa_release(Version(version)) if parse_version(version) else None
    out = []
    if rel is not None and mine in rel.assets.get(local, []):
        fixed = name.replace(f"-{tag}-{tag}-", f"-{mine}-{mine}-")
        out.append(Remedy(summary=f"Take the {mine} wheel of the same build.",
                          commands=[f"pip install --no-deps {r.WHEELS_PAGE}/download/{rel.tag}/{fixed}"]))
    elif rel is not None and parse_local(local) is not None:
        out.append(Remedy(summary=f"flash-attn {version} built no {mine} wheel for {local}; pick "
                          "another release (`fadoctor fix --print-pins` names one).",
                          commands=["fadoctor fix --print-pins"]))
    wanted = f"{tag[2]}.{tag[3:]}"
    out.append(Remedy(summary=f"Or create the environment with Python {wanted}, the wheel's.",
                      commands=[f"conda create -n fa python={wanted}"]))
    return out


def local_pin(ctx: Context) -> List[Signal]:
    """`flash-attn==2.x+cu12torch...` asks pip for a local version the wheels' metadata lacks."""
    hit = ctx.first(_LOCAL_PIN, ("satisfies the requirement", "no matching distribution"))
    if hit is None:
        return []
    return [Signal("local_pin", Category.WRONG_WHEEL,
                   f"pip cannot resolve {hit[1].group(1)}: the +cu..torch.. part names a wheel file "
                   "on the release page, not a version a package index has (the wheels' metadata "
                   "carries no local version, flash-attention#1423)", [ctx.quote(hit[0])], NAMED,
                   [prebuilt(ctx),
                    Remedy(summary="Install that wheel by its URL instead of pinning it as a "
                           "version.", link=r.WHEELS_PAGE)])]


def no_prebuilt_wheel(ctx: Context) -> List[Signal]:
    """setup.py guessed a wheel URL the release does not have, and compiled instead."""
    if e.NO_WHEEL not in ctx.seen.marks:
        return []
    hit = ctx.first(_GUESSED, ("flash_attn-",))
    quotes = [ctx.seen.marks[e.NO_WHEEL].quote, *([ctx.quote(hit[0])] if hit else [])]
    why = ""
    if hit is not None:
        name = hit[1].group(1)
        version, _, rest = name[len("flash_attn-"):].partition("+")
        local, python = rest.split("-")[0], rest.split("-")[1] if "-" in rest else ""
        rel = ctx.matrix.fa_release(Version(version)) if parse_version(version) else None
        if rel is not None:
            pythons = rel.assets.get(local)
            why = (f": flash-attn {version} built no {local} wheel" if pythons is None else
                   f": flash-attn {version}'s {local} wheels are for {', '.join(pythons)}, not "
                   f"{python}" if python not in pythons else "")
    # flash-attn's setup.py prints it, and the projects that copied its wheel fetch (mamba-ssm,
    # causal-conv1d): the package is the guessed wheel's, the log's, or flash-attn where named
    package = "flash-attn" if hit is not None else build_package.built(ctx) or (
        "flash-attn" if build_package.named_flash(ctx) else None)
    fixes = r.keep([prebuilt(ctx), mech_api.unread_flags(ctx),
                    r.force_build(ctx, "If no wheel exists for this torch (a torch newer than "
                                  "the release's wheels), compile it here.")
                    if package == "flash-attn" else None])
    return [Signal("no_prebuilt_wheel", Category.WRONG_WHEEL,
                   f"setup.py found no prebuilt wheel for this torch, CUDA, C++ ABI and Python"
                   f"{why}, so it compiles {package or 'the package'} from source (slow, and it "
                   "needs nvcc)",
                   dedupe(quotes), LOGGED - 15, fixes, severity=Severity.WARNING)]


def build_failed(ctx: Context) -> List[Signal]:
    """A failed build whose cause the text does not show: say what would show it."""
    hit = ctx.first(_BUILD_FAILED, ("failed", "subprocess-exited"))
    if hit is None:
        return []
    name = build_package.built(ctx) or ("flash-attn" if build_package.named_flash(ctx) else None)
    target = name or build_package.asked(ctx)
    rerun = [("the compiler's own error, above pip's summary",
              command("pip", "install", *target.split(" "), "--no-build-isolation", "-v")
              + " 2>&1 | tail -n 200")] if target else []
    return [Signal("build_failed", Category.BUILD_TOOLCHAIN,
                   f"the {name or 'package'} build failed, and the quoted output does not show "
                   "why (the cause is in the compiler's output above pip's summary)",
                   [ctx.quote(hit[0])], WRAPPED, [prebuilt(ctx)], severity=Severity.WARNING,
                   needs=[*rerun, ("the toolchain and the machine",
                           "nvcc --version; gcc --version; ninja --version; free -g; nproc")])]
