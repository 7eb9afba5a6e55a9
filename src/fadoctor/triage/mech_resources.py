"""Build resources: compilers killed for memory, a machine frozen by parallel nvcc jobs, and a
build that takes hours (no ninja, or no prebuilt wheel matched), for flash-attn or for the other
packages that compile CUDA through torch's extension builder (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.install.machine import BUILD_THREADS
from fadoctor.install.wheels import build_arch
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env
from fadoctor.triage import build_package
from fadoctor.triage import errors as e
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import build_context, on_windows, prebuilt
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe

_OOM_LOG = re.compile(r"^\s*killed\s*\.?$|killed signal terminated program|internal compiler "
                      r"error: killed|memoryerror|cannot allocate memory|std::bad_alloc|"
                      r"out of memory allocating|virtual memory exhausted|"
                      # top(1) during the build: under 1000 MiB of RAM left
                      r"MiB Mem\s{0,4}:\s{0,4}\d{1,9}(?:\.\d)? total,\s{0,4}\d{1,3}(?:\.\d)? free", re.I)
_OOM_PROSE = re.compile(r"(?:all|out of|whole|entire)\s+(?:the\s+|of\s+(?:the\s+)?)?(?:available\s+)?"
                        r"(?:memory|ram|swap)|"
                        r"\boom\b|runs? out of (?:memory|ram)|memory (?:usage )?(?:explodes|spikes)|"
                        r"exh?aust\w{0,3}\s(?:the\s|all\s)?(?:ram|memory)|\bfreez(?:es|ing|e)\b|"
                        # the machine itself brought down ("causes everyone's system to crash")
                        r"\bsystem to crash|\b(?:whole|entire) system crash|crash(?:es|ed|ing)? "
                        r"(?:the |my |their )?(?:whole |entire )?(?:system|machine|computer|pc)\b|"
                        r"\bfroze\b|slows? down (?:my|the(?: whole)?) (?:computer|machine|system|pc)|"
                        r"how much (?:memory|ram)|(?:a lot|lots|too much) (?:of )?(?:ram|memory)|"
                        r"\b(?:uses?|using|takes?|eats?|needs?)\s(?:up\s)?(?:around\s|about\s|over\s|"
                        r"up to\s)?\d{2,4}\s?GB\b", re.I)
_NO_NINJA = re.compile(r"could not find ninja|ninja is required|ninja: (?:command )?not found|"
                       r"no module named '?ninja|falling back to using the slow distutils", re.I)
_SLOW = re.compile(r"\b(?:stuck|hangs?|hanging|hung|forever|for hours|takes? hours|very slow|"
                   r"never finish\w*|(?:takes?|taking) (?:so|very|too) long|"
                   r"(?:always|still|keeps?) (?:building|compiling)|"
                   # "it takes me almost 2 hours", "3 hours to build"
                   r"(?:takes?|took|taking)(?: me| us)? (?:almost |about |around |over |nearly |"
                   r"more than |close to )?\d{1,2}(?:\.\d)?\+? (?:hours?|hrs?)|"
                   r"\d{1,2}\+? hours? (?:to|of) (?:build|compil|install)\w*|"
                   # "pip install takes 10+ minutes", "took 40 minutes", "over 30 minutes"
                   r"(?:takes?|took|taking|over|more than) (?:\d{2,3}\+?|\d{2,3}-\d{2,3}) min(?:ute)?s)\b",
                   re.I)
_PARALLEL = re.compile(r"(?:['\"\s]-j\s?=?\s?|--parallel\s|MAX_JOBS=)(\d{2,3})\b[^\n]{0,400}?"
                       r"(?:non-zero exit status|failed|error)", re.I)
_COMPILER_ERROR = re.compile(r"[\w./-]+(?:\(\d+\)|:\d+(?::\d+)?):\s+(?:fatal\s)?error")
# torch's extension builder running ninja (cpp_extension._run_ninja_build: subprocess.run(["ninja",
# "-v", ...]) -> "Command '['ninja', '-v']' returned non-zero exit status 1"), or retold
_NINJA_FAILED = re.compile(r"Command '\['ninja', '-v'[^\]]{0,40}\]' returned non-zero exit status|"
                           r"\bninja -v\b[^\n]{0,40}\bfail", re.I)
_JOBS_SAID = re.compile(r"\bMAX_JOBS=(\d{1,3})\b")


def built(ctx: Context) -> str:
    """The package the log builds, in words ("the CUDA extension build" where it names none)."""
    return build_package.built(ctx) or "CUDA extension"


# a CMake build run with its own parallel level ("cmake --build build ... -j 16")
_CMAKE_JOBS = re.compile(r"cmake --build\b[^\n]{0,200}?(?:-j\s?|--parallel\s)(\d{1,3})\b")


def jobs(ctx: Context) -> Remedy:
    count, package = ctx.build_jobs, build_package.built(ctx)
    memory = f"{ctx.memory_gib:g} GB of RAM" if ctx.memory_gib else "this machine's memory"
    cmake = ctx.first(_CMAKE_JOBS, ("cmake --build",))
    if cmake is not None:  # its -j sets the parallel compilers, not MAX_JOBS
        return Remedy(summary=f"Run the CMake build with fewer parallel jobs than its "
                      f"-j {cmake[1].group(1)}: each nvcc job needs several GB, and "
                      f"-j {count} fits {memory} (raise it while the build stays in memory).",
                      commands=[cmake[1].group(0)[:-len(cmake[1].group(1))] + str(count)])
    if package is None:
        return Remedy(summary=f"Bound the parallel compile jobs: torch's extension builder starts "
                      f"one nvcc per core, each needing several GB; MAX_JOBS={count} fits {memory}. "
                      "Set it, then run the same build command again.",
                      commands=[command("export", env("MAX_JOBS", count))])
    if package != "flash-attn":
        return Remedy(summary=f"Bound the parallel compile jobs: torch's extension builder starts "
                      f"one nvcc per core, each needing several GB; MAX_JOBS={count} fits {memory}.",
                      commands=[command(env("MAX_JOBS", count), "pip", "install", package,
                                        "--no-build-isolation", "--no-cache-dir")])
    pin = f"=={ctx.fa2}" if ctx.fa2 is not None and ctx.fa2_exact else ""
    # the newest release's setup.py list (build_archs); a GPU it names gets its kernels alone
    newest = max((rel for rel in ctx.matrix.flash_attn_releases if rel.build_archs),
                 key=lambda rel: rel.version, default=None)
    arch = build_arch(newest, ctx.gpu_cc_exact) if newest is not None else None
    only = (f" FLASH_ATTN_CUDA_ARCHS={arch} compiles only the kernels {ctx.gpu[0]} runs (setup.py "
            "builds every arch in its list otherwise)." if arch and ctx.gpu else "")
    return Remedy(summary=f"Bound the parallel compile jobs: each nvcc job with NVCC_THREADS="
                  f"{BUILD_THREADS} needs about 5 GB, so MAX_JOBS={count} fits {memory}; with more "
                  f"memory, raise MAX_JOBS up to the core count (nproc).{only}",
                  commands=[f"MAX_JOBS={count} NVCC_THREADS={BUILD_THREADS} "
                            + (f"FLASH_ATTN_CUDA_ARCHS={arch} " if only else "")
                            + f"pip install flash-attn{pin} --no-build-isolation --no-cache-dir"])


def _memory_hit(ctx: Context) -> Tuple[Optional[Tuple[int, re.Match[str]]], bool]:
    """The line showing the build ran out of memory, and whether it is a log line (not prose).
    A line counts in a build: its own words say so, or the report shows a build elsewhere."""
    somewhere = e.BUILD in ctx.seen.marks or e.FROM_SOURCE in ctx.seen.marks or bool(
        ctx.first(build_package.BUILT, ("build", "compil", "install")))

    def building(index: int, prose: bool) -> bool:
        # prose ("it froze") says a build only in its own words: a training run freezes too
        return "cuda out of memory" not in ctx.low(index) and (
            build_context(ctx, index) or (somewhere and not prose))
    log = next(((i, m) for i, m in ctx.find(_OOM_LOG, ("kill", "memory", "bad_alloc", "mib mem"))
                if building(i, False)), None)
    if log is not None:
        return log, True
    return next(((i, m) for i, m in ctx.find(_OOM_PROSE, (
        "memory", "ram", "oom", "freez", "froze", "slow", "gb", "crash")) if building(i, True)),
        None), False


def _tried_fewer_jobs(ctx: Context) -> Optional[int]:
    """The line where the reporter shows builds with different MAX_JOBS: one passed, one did not."""
    said = list(ctx.find(_JOBS_SAID, ("max_jobs",)))
    counts = {int(m.group(1)) for _, m in said}
    return said[0][0] if len(counts) > 1 else None


def memory(ctx: Context) -> List[Signal]:
    hit, logged = _memory_hit(ctx)
    tried = _tried_fewer_jobs(ctx)
    if hit is None and tried is None:
        return []
    first = hit[0] if hit is not None else tried
    assert first is not None
    quotes = dedupe([ctx.quote(first), *([ctx.quote(tried)] if tried is not None else []),
                     *ctx.quotes("memory_gib"),
                     *([ctx.seen.marks[e.BUILD].quote] if e.BUILD in ctx.seen.marks else [])])
    return [Signal("build_memory", Category.BUILD_RESOURCES,
                   f"the {built(ctx)} build ran out of memory: parallel nvcc jobs each take several "
                   "GB, and the kernel killed them (or the machine froze)", quotes,
                   LOGGED if logged else HINTED, [jobs(ctx), prebuilt(ctx)],
                   needs=[] if ctx.memory_gib else [("the machine's memory and cores",
                                                     "free -g; nproc")])]


def parallel_failed(ctx: Context) -> List[Signal]:
    """A build run with many parallel jobs (-j=64) failed and the log shows no compiler error: the
    compilers were most likely killed for memory (the weakest finding: a real error outranks it)."""
    hit = next(((i, m) for i, m in ctx.find(_PARALLEL, ("-j", "--parallel", "max_jobs"))
                if int(m.group(1)) >= 16), None)
    if ctx.first(_COMPILER_ERROR, ("error",)) is not None:
        return []
    many = f"with {hit[1].group(1)} parallel jobs " if hit is not None else ""
    if hit is None:  # flash-attn's build with ninja's failure alone (ninja runs one job per core)
        hit = ctx.first(_NINJA_FAILED, ("ninja",))
        if hit is None or build_package.built(ctx) != "flash-attn" or not ctx.text.containing(
                ("flash-attn", "flash_attn", "flash-attention", "flashattention")):
            return []
    return [Signal("build_memory", Category.BUILD_RESOURCES,
                   f"a build {many}failed without a compiler error "
                   "in the log: most often the kernel killed compilers for memory (each nvcc job "
                   "takes several GB)", [ctx.quote(hit[0])], HINTED, [jobs(ctx), prebuilt(ctx)],
                   needs=[("the first error of the full build log, and the machine's memory",
                           "free -g; nproc; dmesg | grep -i -E 'killed process|out of memory'")])]


# torch's JIT loader (cpp_extension.load -> verify_ninja_availability) refuses to start without
# the ninja executable: "Ninja is required to load C++ extensions" (torch/utils/cpp_extension.py)
_JIT_NINJA = re.compile(r"Ninja is required to load C\+\+ extensions", re.I)


def jit_ninja(ctx: Context) -> List[Signal]:
    hit = ctx.first(_JIT_NINJA, ("ninja is required",))
    if hit is None:
        return []
    remedies = [Remedy(summary="Install ninja into the Python that runs the program, so its "
                       "ninja executable is on that process's PATH (an editor or a second "
                       "Python may not see one installed elsewhere), and check it runs.",
                       commands=[command("python", "-m", "pip", "install", "ninja"),
                                 "ninja --version"])]
    if on_windows(ctx):
        remedies.append(Remedy(summary="On Windows the JIT build then needs MSVC too: install "
                               "the Visual Studio Build Tools (\"Desktop development with C++\") "
                               "and start the program from the \"x64 Native Tools Command Prompt "
                               "for VS\", where cl.exe and ninja are both on PATH."))
    return [Signal("jit_ninja", Category.BUILD_TOOLCHAIN,
                   "torch's JIT extension loader (torch.utils.cpp_extension.load) finds no ninja "
                   "executable on this process's PATH, and it cannot compile without one",
                   [ctx.quote(hit[0])], NAMED, remedies)]


def slow_build(ctx: Context) -> List[Signal]:
    if ctx.first(_JIT_NINJA, ("ninja is required",)) is not None:
        return []
    ninja = ctx.first(_NO_NINJA, ("ninja",))
    slow = None if ninja else next(((i, m) for i, m in ctx.find(_SLOW, (
        "stuck", "hang", "hung", "forever", "hour", "slow", "never", "long", "always", "still",
        "keep", "min")) if build_context(ctx, i) and (
            "flash" in ctx.low(i) or e.BUILD in ctx.seen.marks or "wheel" in ctx.low(i)
            or ctx.text.containing(("install flash-attn", "install flash_attn")))), None)
    hit = ninja or slow
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.seen.marks[e.FROM_SOURCE].quote]
                                          if e.FROM_SOURCE in ctx.seen.marks else [])])
    ninja_fix = Remedy(summary="Without a working ninja, torch's extension builder compiles one "
                       "file at a time: the build takes hours instead of minutes. "
                       "Install ninja and check that it runs (it must print a version).",
                       commands=["pip uninstall -y ninja", "pip install ninja",
                                 "ninja --version"])
    return [Signal("build_slow", Category.BUILD_RESOURCES,
                   f"the {built(ctx)} build is compiling without ninja (serially), or far slower "
                   "than it should", quotes, LOGGED if ninja else HINTED,
                   [ninja_fix, prebuilt(ctx), jobs(ctx)],
                   needs=[("whether ninja works in the build environment",
                           "ninja --version; echo $?")])]


# torch's JIT loader takes a lock file in the extension's build directory before it builds
# (torch/utils/cpp_extension.py _jit_compile: baton = FileBaton(os.path.join(build_directory,
# 'lock')); if baton.try_acquire(): build ... else: baton.wait()), and FileBaton.wait sleeps until
# the file is gone: a run killed mid-build leaves the lock, and every later run waits on it with no
# message. The loader's own lines ("Using <root> as PyTorch extensions root...", "Loading extension
# module <name>...") or a package's JIT build of its fused kernels, with the run said to hang.
_JIT_ROOT = re.compile(r"Using (\S+) as PyTorch extensions root")
_JIT_MODULE = re.compile(r"(?:Building|Loading) extension module (\w+)")
_JIT_WORDS = ("as pytorch extensions root", "extension module", "fused kernel", "fused_kernel")
_HANGS = re.compile(r"\b(?:stuck|hangs?|hanging|hung|freez\w*|froze|forever|no progress|"
                    r"nothing happens|never (?:finish|return|end)s?)\b", re.I)
_HANG_AT_BUILD = re.compile(r"\b(?:stuck|hangs?|hanging|hung)\b[^\n]{0,60}\b(?:compil\w*|build\w*)"
                            r"[^\n]{0,30}\b(?:fused[_ ]kernels?|extensions?|cpp_extension)", re.I)


def jit_lock(ctx: Context) -> List[Signal]:
    """A run that waits forever where torch's JIT loader builds or loads an extension: the lock
    file of an interrupted build."""
    if _memory_hit(ctx)[0] is not None or ctx.first(_JIT_NINJA, ("ninja is required",)):
        return []
    said = ctx.first(_HANG_AT_BUILD, ("stuck", "hang", "hung"))
    marker = next(iter(ctx.text.containing(_JIT_WORDS)), None)
    hang = said or (ctx.first(_HANGS, ("stuck", "hang", "hung", "freez", "froze", "forever",
                                       "no progress", "nothing happens", "never"))
                    if marker is not None else None)
    if hang is None:
        return []
    root = ctx.first(_JIT_ROOT, ("as pytorch extensions root",))
    module = ctx.first(_JIT_MODULE, ("extension module",))
    folder = root[1].group(1).rstrip(".") if root is not None else ""
    windows = "\\" in folder or re.match(r"[A-Za-z]:", folder) is not None
    if root is not None and module is not None:
        sep = "\\" if windows else "/"
        lock = sep.join((folder, module[1].group(1), "lock"))
        # cmd.exe has no rm: the examined Python removes it there
        # (the path as an argument, not in the code: one quoting every shell reads alike)
        commands = [command("python", "-c", "import os, sys; os.remove(sys.argv[1])", lock)
                    if windows else command("rm", "-f", lock)]
        where = f"the lock file {lock}"
    elif root is not None:
        commands = [command("python", "-c", "import shutil, sys; shutil.rmtree(sys.argv[1])",
                            folder) if windows else command("rm", "-rf", folder)]
        where = "the extensions root it names (every extension there rebuilds)"
    else:
        # the root the loader uses (torch.utils.cpp_extension.get_default_build_root:
        # TORCH_EXTENSIONS_DIR, else ~/.cache/torch_extensions/py<ver>_<cuda>), with the Python
        # that runs the program
        commands = [command("python", "-c", "import shutil, torch.utils.cpp_extension as c; "
                            "shutil.rmtree(c.get_default_build_root(), ignore_errors=True)")]
        where = ("torch's extensions root (what torch.utils.cpp_extension."
                 "get_default_build_root() returns), or the build directory of a package that "
                 "builds its fused kernels itself (Megatron-LM: megatron/fused_kernels/build)")
    quotes = dedupe([ctx.quote(hang[0]), *([ctx.quote(marker)] if marker is not None else []),
                     *([ctx.quote(root[0])] if root is not None else [])])
    return [Signal("jit_lock", Category.BUILD_RESOURCES,
                   "the run waits on the lock file of an interrupted JIT build: torch's extension "
                   "loader takes a 'lock' file in the extension's build directory and waits, "
                   "silently, until it is gone; a run killed mid-build leaves it there",
                   quotes, LOGGED if root is not None and said is None else HINTED,
                   [Remedy(summary=f"Stop every run that may be building, delete {where}, and "
                           "start again: the extension then builds once and the next runs load "
                           "it.", commands=commands)])]
