"""The import-failure classifier, on error texts from real reports (flash_attn_facts.md §5, cases)."""

from __future__ import annotations

from typing import Optional

import pytest

from fadoctor.checks.classify import classify, is_torch_symbol, string_abi
from fadoctor.report import Category

# c10::Error::Error(c10::SourceLocation, std::string): what an extension built with ABI 0 needs
# (the symbol flash-attention's publish.yml quotes), and its ABI-1 twin (#1783, #1717).
ERROR_CTOR_OLD = "_ZN3c105ErrorC2ENS_14SourceLocationESs"
ERROR_CTOR_CXX11 = ("_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traits"
                    "IcESaIcEEE")
# torch::autograd::Node::name[abi:cxx11]() const: the C++11 ABI shows only as the abi tag B5cxx11
# (Intel Extension for PyTorch's known-issues page: built with ABI 1, torch ABI 0).
NODE_NAME_CXX11 = "_ZNK5torch8autograd4Node4nameB5cxx11Ev"
# ATen operator symbols with no std::string: a build against another torch (#784, #836, #723).
SUM_INTLIST = ("_ZN2at4_ops15sum_IntList_out4callERKNS_6TensorEN3c1016OptionalArrayRefIlEEbSt8"
               "optionalINS5_10ScalarTypeEEERS2_")
PAD_ENUM = "_ZN2at4_ops9_pad_enum4callERKNS_6TensorEN3c108ArrayRefINS5_6SymIntEEElNS5_8optionalIdEE"
SET_DEVICE = "_ZN3c104cuda9SetDeviceEi"  # #931
# c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&), ABI 0.
CHECK_FAIL_OLD = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"


def undefined(symbol: str, so: str = "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so") -> str:
    return f"/opt/venv/lib/python3.10/site-packages/{so}: undefined symbol: {symbol}"


def source_name(identifier: str) -> str:
    """An Itanium <source-name>: the identifier prefixed by its length."""
    return f"{len(identifier)}{identifier}"


@pytest.mark.parametrize(("symbol", "abi"), [
    (ERROR_CTOR_OLD, 0),
    (CHECK_FAIL_OLD, 0),
    (ERROR_CTOR_CXX11, 1),
    (NODE_NAME_CXX11, 1),
    (SUM_INTLIST, None),  # St8optional is std::optional, not a string
    (PAD_ENUM, None),
    (SET_DEVICE, None),
    ("_ZNK3c1017SymbolicShapeMeta18init_is_contiguousEv", None),
])
def test_string_abi_reads_the_mangling(symbol: str, abi: Optional[int]) -> None:
    assert string_abi(symbol) == abi


@pytest.mark.parametrize("identifier", ["SsXX", "Ss", "PySsHandle", "MessSs"])
def test_ss_inside_an_identifier_is_not_a_string(identifier: str) -> None:
    symbol = f"_ZN3c10{source_name(identifier)}Ev"  # e.g. _ZN3c104SsXXEv
    assert string_abi(symbol) is None
    assert string_abi(f"_ZN3c10{source_name(identifier)}ESs") == 0  # a real one after it counts


@pytest.mark.parametrize("symbol", [
    "_ZN3c106IValueC2ESs",  # constructor IValue(std::string): C2 is no length prefix
    "_ZN3c1013MessageLoggerC1EPKciS2_Ss",  # substitutions S2_, S3_ before the string
    "_ZN3c1013MessageLoggerC1EPKciS3_Ss",
    "_ZN3c104implT0_Ss",  # template parameter T0_ before the string
])
def test_digits_that_are_not_lengths_do_not_hide_a_string(symbol: str) -> None:
    assert string_abi(symbol) == 0


@pytest.mark.parametrize(("symbol", "torch"), [
    (SET_DEVICE, True),
    (SUM_INTLIST, True),
    (NODE_NAME_CXX11, True),
    ("_ZNK3c1017SymbolicShapeMeta18init_is_contiguousEv", True),
    ("_ZTVN3c1011StorageImplE", True),  # a vtable
    ("_ZN6caffe28TypeMeta21_typeMetaDataInstanceIfEEPKNS_6detail12TypeMetaDataEv", True),
    ("_ZNSt6vectorIiSaIiEE9push_backERKi", False),  # std::
    ("_ZN5flash13run_mha_fwd_IN7cutlass6half_tELi128ELb0EEEvRNS_16Flash_fwd_paramsEP11CUstream_st",
     False),  # flash-attn's own kernels
    ("_ZN4c10d5Store3setERKSsRKSt6vectorIhSaIhEE", False),  # c10d is not c10
    ("cudaGetDeviceCount", False),
])
def test_is_torch_symbol(symbol: str, torch: bool) -> None:
    assert is_torch_symbol(symbol) is torch


@pytest.mark.parametrize(("symbol", "torch_abi", "category", "built"), [
    (ERROR_CTOR_OLD, True, Category.CXX11_ABI_MISMATCH, "0"),  # #1644: ABI-0 wheel, ABI-1 torch
    (ERROR_CTOR_CXX11, False, Category.CXX11_ABI_MISMATCH, "1"),  # #853: cxx11abiTRUE wheel
    (NODE_NAME_CXX11, False, Category.CXX11_ABI_MISMATCH, "1"),
    (ERROR_CTOR_OLD, False, Category.TORCH_VERSION_MISMATCH, "0"),  # same ABI: another torch
    (ERROR_CTOR_CXX11, True, Category.TORCH_VERSION_MISMATCH, "1"),
    (ERROR_CTOR_CXX11, None, Category.TORCH_VERSION_MISMATCH, "1"),  # torch's ABI unknown
    (SUM_INTLIST, False, Category.TORCH_VERSION_MISMATCH, None),
    (SUM_INTLIST, True, Category.TORCH_VERSION_MISMATCH, None),
    (PAD_ENUM, False, Category.TORCH_VERSION_MISMATCH, None),
])
def test_undefined_torch_symbols(symbol: str, torch_abi: Optional[bool], category: Category,
                                 built: Optional[str]) -> None:
    diagnosis = classify(undefined(symbol), torch_abi)
    assert diagnosis.category == category
    assert diagnosis.details["symbol"] == symbol
    assert diagnosis.details.get("extension_cxx11_abi") == built


def test_an_abi_mismatch_names_both_sides() -> None:
    diagnosis = classify(undefined(ERROR_CTOR_OLD), torch_cxx11_abi=True)
    assert "C++11 ABI = 0" in diagnosis.explanation
    assert "_GLIBCXX_USE_CXX11_ABI = 1" in diagnosis.explanation


def test_an_undefined_symbol_outside_torch_is_a_wrong_wheel() -> None:
    symbol = "_ZN5flash13run_mha_fwd_IN7cutlass6half_tELi128ELb0EEEvRNS_16Flash_fwd_paramsE"
    assert classify(undefined(symbol), False).category == Category.WRONG_WHEEL


@pytest.mark.parametrize(("message", "required", "library"), [
    # FlashDepth#12 (as pasted) and #1762 (with the loader's tail)
    ("/usr/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found", "GLIBC_2.32", "glibc"),
    ("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by /usr/local/lib/"
     "python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so)", "GLIBC_2.32",
     "glibc"),
    ("/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
     "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so)", "GLIBCXX_3.4.30",
     "libstdc++"),
    ("/lib64/libstdc++.so.6: version `CXXABI_1.3.13' not found", "CXXABI_1.3.13", "libstdc++"),
])
def test_symbol_versions_mean_an_older_system(message: str, required: str, library: str) -> None:
    diagnosis = classify(message)
    assert diagnosis.category == Category.GLIBC_TOO_OLD
    assert diagnosis.details == {"required": required, "library": library}


@pytest.mark.parametrize(("message", "major"), [
    ("libcudart.so.11.0: cannot open shared object file: No such file or directory", "11"),  # #728
    ("libcudart.so.12: cannot open shared object file: No such file or directory", "12"),
    ("libcublasLt.so.13: cannot open shared object file: No such file or directory", "13"),
])
def test_a_missing_cuda_library_is_a_cuda_mismatch(message: str, major: str) -> None:
    diagnosis = classify(message)
    assert diagnosis.category == Category.CUDA_RUNTIME_MISMATCH
    assert diagnosis.details["cuda_major"] == major


@pytest.mark.parametrize("library", ["libtorch_cuda_cu.so", "libc10_cuda.so", "libtorch_python.so"])
def test_a_missing_torch_library_means_another_torch(library: str) -> None:  # #236
    diagnosis = classify(f"{library}: cannot open shared object file: No such file or directory")
    assert diagnosis.category == Category.TORCH_VERSION_MISMATCH
    assert diagnosis.details["library"] == library


def test_another_missing_library_is_a_wrong_wheel() -> None:
    message = "libopenblas.so.0: cannot open shared object file: No such file or directory"
    assert classify(message).category == Category.WRONG_WHEEL


@pytest.mark.parametrize(("message", "category"), [
    ("No module named 'torch'", Category.NOT_INSTALLED),
    ("No module named 'torch._C'", Category.NOT_INSTALLED),
    ("No module named 'flash_attn_2_cuda'", Category.WRONG_WHEEL),
    ("No module named 'einops'", Category.VERSION_CONFLICT),
    ("FlashAttention only supports Ampere GPUs or newer.", Category.GPU_UNSUPPORTED),  # #762
    ("CUDA error: no kernel image is available for execution on the device",
     Category.NO_KERNEL_IMAGE),
    ("Segmentation fault (core dumped)", Category.VERSION_CONFLICT),  # unrecognised: as raised
])
def test_other_messages(message: str, category: Category) -> None:
    assert classify(message).category == category


def test_an_undefined_symbol_wins_over_the_library_it_is_in() -> None:
    message = undefined(SET_DEVICE, so="libtorch_cuda.so")
    assert classify(message, True).category == Category.TORCH_VERSION_MISMATCH
