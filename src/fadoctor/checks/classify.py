"""Classify an import failure's text into a root-cause category, from what the message means.

Pure: no demangler is run here. The symbol tests read the Itanium C++ mangling directly:
`_ZN3c10…`, `_ZN2at…`, `_ZN5torch…` are PyTorch's namespaces; a std::string in the pre-C++11
ABI is the substitution `Ss`, in the C++11 ABI it is `NSt7__cxx1112basic_string…`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Optional

from fadoctor.facts.model import Failure, FailureKind
from fadoctor.probes.mangling import is_torch_symbol, string_abi
from fadoctor.report import Category

__all__ = ["Diagnosis", "classify", "is_torch_symbol", "missing_library", "string_abi",
           "symbol_version", "undefined_symbol"]

_UNDEFINED = re.compile(r"undefined symbol:\s*(\S+)")
_MISSING_LIB = re.compile(r"([\w.+-]+\.so(?:\.[\w.]+)?): cannot open shared object file")
_SYMBOL_VERSION = re.compile(r"version \W?((GLIBC|GLIBCXX|CXXABI)_[\d.]+)\W? not found")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
# The CUDA toolkit's runtime libraries, as the nvidia-* wheels and the toolkit ship them;
# libnvToolsExt.so.1 (NVTX 2) is a CUDA 11/12 library that CUDA 13 no longer ships.
_CUDA_LIBS = ("libcudart.", "libcublas.", "libcublasLt.", "libcusparse.", "libcusparseLt.",
              "libcufft.", "libcufftw.", "libcurand.", "libcusolver.", "libnvrtc.", "libnvrtc-builtins.",
              "libcudnn", "libnvJitLink.", "libnccl.", "libnvToolsExt.", "libcupti.", "libcufile.",
              "libnvshmem", "libnvjpeg.", "libnpp", "libnvperf")
# torch's own libraries: exactly these names (libtorchaudio.so is torchaudio's, not torch's).
_TORCH_LIBRARY = re.compile(r"^(libtorch(_cpu|_cuda|_cuda_cu|_cuda_cpp|_cuda_linalg|_hip|_python|"
                            r"_global_deps)?|libc10(_cuda|_hip)?|libshm|libcaffe2_nvrtc)\.so$")
_TORCH_GPU_LIBRARY = re.compile(r"^lib(torch_cuda\w*|torch_hip|c10_cuda|c10_hip|caffe2_nvrtc)\.so$")
# Libraries of other projects a binary can link (torchaudio's FFmpeg and SoX backends).
_SYSTEM_LIBS = ("libavutil.", "libavcodec.", "libavformat.", "libavdevice.", "libavfilter.",
                "libswscale.", "libswresample.", "libsox.")


@dataclass(frozen=True)
class Diagnosis:
    category: Category
    explanation: str
    details: Dict[str, str] = field(default_factory=dict)
    recognised: bool = True  # False: no mechanism matched; report the text as it was raised


def classify(message: str, torch_cxx11_abi: Optional[bool] = None,
             cpu_torch: bool = False) -> Diagnosis:
    """The category of an import failure, with what it means for this environment
    (`cpu_torch`: the installed torch is a CPU-only build)."""
    found = _UNDEFINED.search(message)
    if found:
        return undefined_symbol(found.group(1).rstrip(","), torch_cxx11_abi)
    found = _SYMBOL_VERSION.search(message)
    if found:
        return symbol_version(found.group(1))
    found = _MISSING_LIB.search(message)
    if found:
        return missing_library(found.group(1), cpu_torch)
    found = _NO_MODULE.search(message)
    if found:
        return _no_module(found.group(1))
    if "only supports Ampere GPUs or newer" in message:
        return Diagnosis(Category.GPU_UNSUPPORTED, "FlashAttention-2 needs compute capability 8.0+")
    if "no kernel image is available" in message:
        return Diagnosis(Category.NO_KERNEL_IMAGE,
                         "the binary has no kernels (SASS or PTX) for this GPU's architecture")
    return Diagnosis(Category.VERSION_CONFLICT, "the import failed for a reason fadoctor does not "
                     "recognise; the message is reported as it was raised", recognised=False)


def undefined_symbol(symbol: str, torch_abi: Optional[bool]) -> Diagnosis:
    details = {"symbol": symbol}
    built_abi = string_abi(symbol)
    if built_abi is not None:
        details["extension_cxx11_abi"] = str(built_abi)
    torch_symbol = is_torch_symbol(symbol)
    if torch_symbol and built_abi is not None and torch_abi is not None \
            and built_abi != int(torch_abi):
        return Diagnosis(
            Category.CXX11_ABI_MISMATCH,
            f"the extension was built with the C++11 ABI = {built_abi} (its std::string is "
            f"{'std::__cxx11::basic_string' if built_abi else 'the pre-C++11 std::string'}), "
            f"but this torch uses _GLIBCXX_USE_CXX11_ABI = {int(torch_abi)}",
            details)
    if torch_symbol:
        return Diagnosis(Category.TORCH_VERSION_MISMATCH,
                         "the extension needs a PyTorch C++ symbol that this torch does not export: "
                         "it was compiled against a different torch build", details)
    return Diagnosis(Category.WRONG_WHEEL,
                     "the extension needs a symbol that no loaded library provides: it was built "
                     "for another environment", details)


def symbol_version(required: str) -> Diagnosis:
    """A needed symbol version (GLIBC_2.32, GLIBCXX_3.4.30, CXXABI_1.3.13) the system lacks."""
    lib = "glibc" if required.startswith("GLIBC_") else "libstdc++"
    return Diagnosis(Category.GLIBC_TOO_OLD,
                     f"the binary needs {required}, which this system's {lib} does not "
                     "provide: it was built on a newer Linux than this one",
                     {"required": required, "library": lib})


# ROCm's runtime and math libraries (HIP, hipBLAS/rocBLAS, MIOpen, RCCL, HSA): their sonames carry
# the library's own major, which moves between ROCm releases
_ROCM_LIBS = ("libamdhip64.", "libhip", "librocblas.", "librocsolver.", "librocsparse.",
              "librocrand.", "librocfft.", "libMIOpen.", "librccl.", "libhsa-runtime64.",
              "libroctx64.", "libroctracer64.", "librocm")


def missing_library(lib: str, cpu_torch: bool = False) -> Diagnosis:
    """A DT_NEEDED library the loader does not find, by whose library it is."""
    details = {"library": lib}
    major = re.search(r"\.so\.(\d+)", lib)
    cuda = lib.startswith(_CUDA_LIBS)
    if cuda and major and lib.startswith(("libcudart.", "libcublas", "libnvrtc.", "libnvToolsExt.")):
        details["cuda_major"] = "11/12" if lib.startswith("libnvToolsExt.") else major.group(1)
    if cpu_torch and (cuda or _TORCH_GPU_LIBRARY.match(lib)):
        return Diagnosis(Category.TORCH_CPU_ONLY,
                         f"the binary is a CUDA build: it needs {lib}, but the installed torch is "
                         "CPU-only, so nothing here provides it", details)
    if lib.startswith("libcuda.so"):
        return Diagnosis(Category.NO_GPU, f"the binary needs {lib}, the NVIDIA driver's library, "
                         "and no driver is installed", details)
    if cuda:
        built = details.get("cuda_major")
        return Diagnosis(Category.CUDA_RUNTIME_MISMATCH,
                         f"the binary was linked against {lib}, a CUDA"
                         f"{' ' + built if built else ''} library this environment does not provide "
                         "(torch does not load it): it was built for another CUDA version", details)
    if _TORCH_LIBRARY.match(lib):
        return Diagnosis(Category.TORCH_VERSION_MISMATCH,
                         f"the binary needs {lib}, a PyTorch library the installed torch does not "
                         "ship: it was compiled against another torch", details)
    if lib.startswith(_ROCM_LIBS):
        return Diagnosis(Category.ROCM,
                         f"the binary was linked against {lib}, a ROCm library of the release it "
                         "was built for: this machine's ROCm does not provide that version "
                         "(another ROCm release, or none on the loader's path)", details)
    if lib.startswith(_SYSTEM_LIBS):
        return Diagnosis(Category.NOT_INSTALLED,
                         f"the binary needs {lib}, a library of another project (FFmpeg, SoX) that "
                         "is not installed here", details)
    return Diagnosis(Category.WRONG_WHEEL,
                     f"the binary needs {lib}, which the dynamic loader cannot find", details)


def _no_module(module: str) -> Diagnosis:
    details = {"module": module}
    if module.split(".")[0] == "torch":
        return Diagnosis(Category.NOT_INSTALLED, "torch is not installed in this environment",
                         details)
    if module.endswith(("_cuda", "_C", "_gpu")):
        return Diagnosis(Category.WRONG_WHEEL,
                         f"the compiled extension {module} is missing: the package was installed "
                         "without it (a source checkout, or a build that skipped CUDA)", details)
    return Diagnosis(Category.VERSION_CONFLICT,
                     f"a module it imports, {module}, is not installed", details)


def failure_text(failure: Failure) -> str:
    """What to classify for a failed probe: an import error's message, or the output tail of a
    crash or an exit — never a hang's: what it printed before hanging is not why it hung."""
    if failure.kind == FailureKind.IMPORT_ERROR:
        return failure.reason
    if failure.kind == FailureKind.TIMEOUT:
        return ""
    return failure.stderr_tail or failure.reason
