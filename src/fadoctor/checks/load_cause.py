"""Why one compiled extension does not load: one diagnosis per failure, shared by every check that
reports it (FAD111's real import, FAD130-FAD132's prediction), so that they name the same cause.

The first cause is what the loader stops at (`BinaryAnalysis.first_failure`); what follows from it
(the c10::cuda symbols of a missing libc10_cuda.so, the cudaMalloc@libcudart.so.12 of a missing
libcudart.so.12) is a consequence, reported under the same category, never as its own headline.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from fadoctor.checks.classify import Diagnosis, missing_library, symbol_version, undefined_symbol
from fadoctor.facts.binaries import BinaryAnalysis, LoadFailure, MissingSymbol
from fadoctor.facts.model import Torch
from fadoctor.probes.mangling import GPU_NAMESPACE, follows_from, is_torch_symbol, string_abi
from fadoctor.report import Category


def cpu_only(torch: Optional[Torch]) -> bool:
    return torch is not None and not torch.cuda and not torch.hip


def sibling(binary: BinaryAnalysis, library: str) -> Optional[str]:
    """Where a library of the extension's own package lies, beside it, though the loader does not
    look there: the package loads it first when imported."""
    return next((lib.beside for lib in binary.needed if lib.name == library and lib.beside), None)


def library_cause(binary: BinaryAnalysis, library: str, torch: Optional[Torch]) -> Diagnosis:
    diagnosis = missing_library(library, cpu_only(torch))
    beside = sibling(binary, library) if diagnosis.category == Category.WRONG_WHEEL else None
    if beside is not None:
        who = binary.file.distribution or "its package"
        return Diagnosis(Category.WRONG_WHEEL,
                         f"the binary needs {library}, a library of {who} itself ({beside}) that is "
                         "not on the loader's path: the package loads it first when imported; on "
                         "its own, or if that library failed to load, this module does not load",
                         {**diagnosis.details, "beside": beside})
    return diagnosis


def symbol_cause(binary: BinaryAnalysis, name: str, version: Optional[str],
                 torch: Optional[Torch]) -> Diagnosis:
    """A symbol no loaded library defines, judged for the whole binary: a binary built with the
    other C++ ABI is an ABI mismatch whichever of its symbols the loader names first."""
    abi = torch.cxx11_abi if torch else None
    if version is not None and not version.startswith(("GLIBC", "CXXABI")):
        cause = missing_library(version, cpu_only(torch))  # cudaMalloc@libcudart.so.12
        if cause.category != Category.WRONG_WHEEL:
            return Diagnosis(cause.category, f"it needs {name} at version {version}: "
                             + cause.explanation, {**cause.details, "symbol": name})
    if cpu_only(torch) and GPU_NAMESPACE.match(name):
        return Diagnosis(Category.TORCH_CPU_ONLY, "the binary is a CUDA build and needs torch's "
                         "CUDA symbols, but the installed torch is CPU-only", {"symbol": name})
    if is_torch_symbol(name) and binary.string_abi is not None and abi is not None \
            and binary.string_abi != int(abi):
        witness = next((s.name for s in binary.missing_symbols
                        if is_torch_symbol(s.name) and string_abi(s.name) is not None), name)
        return undefined_symbol(witness, abi)
    return undefined_symbol(name, abi)


def failure_cause(binary: BinaryAnalysis, failure: LoadFailure, torch: Optional[Torch]) -> Diagnosis:
    if failure.kind == "library":
        return library_cause(binary, failure.name, torch)
    if failure.kind == "version":
        if failure.name.startswith(("GLIBC_", "GLIBCXX_", "CXXABI_")):
            return symbol_version(failure.name)
        return Diagnosis(Category.WRONG_WHEEL, f"the binary needs version {failure.name}, which the "
                         "library found for it does not define", {"required": failure.name})
    return symbol_cause(binary, failure.name, failure.version, torch)


def first_cause(binary: BinaryAnalysis, torch: Optional[Torch]) -> Optional[Diagnosis]:
    """The diagnosis of what the loader stops at first; None when the binary loads."""
    failure = binary.first_failure
    return None if failure is None else failure_cause(binary, failure, torch)


def split_symbols(binary: BinaryAnalysis) -> Tuple[List[MissingSymbol], List[MissingSymbol]]:
    """(consequences, the rest): a symbol is a consequence of a missing library when its version
    names that library, or it lives in torch's GPU libraries and one of them is missing."""
    missing = {lib.name for lib in binary.needed if lib.path is None}
    consequences: List[MissingSymbol] = []
    rest: List[MissingSymbol] = []
    for symbol in binary.missing_symbols:
        (consequences if follows_from(symbol.name, symbol.version, missing) else rest).append(symbol)
    return consequences, rest


def symbol_counts(binary: BinaryAnalysis) -> Tuple[int, int]:
    """(consequences, the rest) of every missing symbol, not only of the ones the facts keep."""
    follows = binary.consequence_count
    if follows is None:  # older facts: only what they kept can be judged
        follows = len(split_symbols(binary)[0])
    return follows, binary.missing_symbol_count - follows


def import_cause(message: str, binaries: Sequence[BinaryAnalysis], torch: Optional[Torch]) -> Diagnosis:
    """The diagnosis of a real import failure's text, through the static analysis of the binary
    it names when there is one: the same failure gets the same category as in FAD130-FAD132."""
    from fadoctor.checks.classify import classify

    plain = classify(message, torch.cxx11_abi if torch else None, cpu_only(torch))
    readable = [b for b in binaries if b.error is None]
    binary = next((b for b in readable if b.file.path in message), None) or next(
        (b for b in readable if any(o in message for o in b.missing_in or {})), None) or next(
        (b for b in readable if any(f"{lib.name}: cannot open" in message
                                    for lib in b.needed if lib.path is None)), None)
    if binary is None and len(readable) == 1:
        binary = readable[0]
    if binary is None:
        return plain
    symbol = _UNDEFINED.search(message)
    if symbol:
        return symbol_cause(binary, symbol.group(1), symbol.group(2), torch)
    library = next((lib.name for lib in binary.needed
                    if lib.path is None and f"{lib.name}: cannot open" in message), None)
    return library_cause(binary, library, torch) if library else plain


_UNDEFINED = re.compile(r"undefined symbol: ([^\s,]+)(?:, version (\S+))?")
