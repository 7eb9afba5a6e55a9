"""Classify an import failure's text into a root-cause category, from what the message means.

Pure: no demangler is run here. The symbol tests read the Itanium C++ mangling directly:
`_ZN3c10…`, `_ZN2at…`, `_ZN5torch…` are PyTorch's namespaces; a std::string in the pre-C++11
ABI is the substitution `Ss`, in the C++11 ABI it is `NSt7__cxx1112basic_string…`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Optional

from fadoctor.facts import Failure, FailureKind
from fadoctor.mangling import is_torch_symbol, string_abi
from fadoctor.report import Category

__all__ = ["Diagnosis", "classify", "is_torch_symbol", "missing_library", "string_abi",
           "symbol_version", "undefined_symbol"]

_UNDEFINED = re.compile(r"undefined symbol:\s*(\S+)")
_MISSING_LIB = re.compile(r"([\w.+-]+\.so(?:\.[\w.]+)?): cannot open shared object file")
_SYMBOL_VERSION = re.compile(r"version \W?((GLIBC|GLIBCXX|CXXABI)_[\d.]+)\W? not found")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_CUDA_LIBS = ("libcudart", "libcublas", "libcublasLt", "libcusparse", "libcufft", "libcurand",
              "libcusolver", "libnvrtc", "libcudnn", "libnvJitLink", "libnccl", "libcuda.")
_TORCH_LIBS = ("libtorch", "libc10", "libshm", "libcaffe2")


@dataclass(frozen=True)
class Diagnosis:
    category: Category
    explanation: str
    details: Dict[str, str] = field(default_factory=dict)
    recognised: bool = True  # False: no mechanism matched; report the text as it was raised


def classify(message: str, torch_cxx11_abi: Optional[bool] = None) -> Diagnosis:
    """The category of an import failure, with what it means for this environment."""
    found = _UNDEFINED.search(message)
    if found:
        return undefined_symbol(found.group(1), torch_cxx11_abi)
    found = _SYMBOL_VERSION.search(message)
    if found:
        return symbol_version(found.group(1))
    found = _MISSING_LIB.search(message)
    if found:
        return missing_library(found.group(1))
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


def missing_library(lib: str) -> Diagnosis:
    details = {"library": lib}
    if lib.startswith(_CUDA_LIBS):
        major = re.search(r"\.so\.(\d+)", lib)
        if major:
            details["cuda_major"] = major.group(1)
        return Diagnosis(Category.CUDA_RUNTIME_MISMATCH,
                         f"the binary was linked against {lib}, a CUDA library this environment "
                         "does not provide: it was built for another CUDA version", details)
    if lib.startswith(_TORCH_LIBS):
        return Diagnosis(Category.TORCH_VERSION_MISMATCH,
                         f"the binary needs {lib}, a PyTorch library the installed torch does not "
                         "ship: it was compiled against another torch", details)
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
