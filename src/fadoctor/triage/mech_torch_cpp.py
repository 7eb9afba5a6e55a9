"""An extension's C++/CUDA source written against a C++ API torch has since removed, as the
compiler says it: the THC headers and functions (torch/include/THC/THC.h is in the 1.10.2 wheel
and gone from 1.11.0, which keeps only THCDeviceUtils.cuh and THCAtomics.cuh as shims), the TH
headers (TH/TH.h in 1.10.2, gone from 1.11.0), and the AT_CHECK macro (defined in 1.4.0's
c10/util/Exception.h, gone from 1.5.0's, where TORCH_CHECK remains); all read from the torch
wheels. at::cuda::getCurrentCUDAStream missing is the same
port half done: THC.h used to bring ATen/cuda/CUDAContext.h in. And `AT_DISPATCH_*(x.type(), ...)`:
the dispatch macros took the deprecated at::DeprecatedTypeProperties through an overload added in
2019 (pytorch/pytorch#17996, with a deprecation warning) and removed for 2.6.0 (extensions' fixes
"so that it compiles with torch 2.6.0", mit-han-lab/torchsparse#344; 2.13.0's ATen/Dispatch.h
takes a ScalarType only) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

# gcc: "fatal error: THC/THC.h: No such file or directory"; nvcc/EDG: 'cannot open source file
# "THC/THC.h"'; MSVC: "Cannot open include file: 'THC/THC.h'"; and the THC names undeclared
# gcc's "fatal error: HEADER: " ends with strerror's words in the locale's language ("没有那个文件或
# 目录"): a header it names there is one it could not open
_THC = re.compile(r"THC/(?!THCDeviceUtils|THCAtomics)(\w+\.c?u?h)\W{0,3}(?::\s*)?No such file|"
                  r"fatal error: THC/(?!THCDeviceUtils|THCAtomics)\w+\.c?u?h\s?[:\uff1a]|"
                  r"(?:cannot open (?:source|include) file|Cannot open include file)\W{1,3}"
                  r"THC/(?!THCDeviceUtils|THCAtomics)\w+|\b(THCState|THCudaCheck|THCudaMalloc|"
                  r"THCudaFree|THCCeilDiv|THCudaTensor\w*|THCState_getCurrentStream)\b[^\n]{0,40}"
                  r"(?:was not declared|is undefined|undeclared identifier|does not name a type)",
                  re.I)
_AT_CHECK = re.compile(r"\bAT_CHECK\b[^\n]{0,40}(?:was not declared|is undefined|undeclared "
                       r"identifier|not declared in this scope)|identifier \"AT_CHECK\" is undefined")
_Q = "[\'\u2018\u2019]?"  # gcc quotes names with typographic quotes in UTF-8 locales
_STREAM = re.compile(rf"{_Q}getCurrentCUDAStream{_Q} is not a member of {_Q}at::cuda|"
                     r"namespace \"at::cuda\" has no member \"getCurrentCUDAStream\"")

# what replaced each removed name (the ATen/c10 APIs the 1.11 wheel's headers carry)
_PORT = ("replace #include <THC/THC.h> with #include <ATen/cuda/CUDAContext.h> (and "
         "<ATen/cuda/Exceptions.h>), THCState* state / THCState_getCurrentStream(state) with "
         "at::cuda::getCurrentCUDAStream(), THCudaCheck with C10_CUDA_CHECK (or AT_CUDA_CHECK), "
         "THCudaMalloc/THCudaFree with c10::cuda::CUDACachingAllocator::raw_alloc/raw_delete, "
         "THCCeilDiv with at::ceil_div")


# nvcc/EDG: 'no suitable conversion function from "const at::DeprecatedTypeProperties" to
# "c10::ScalarType" exists'; gcc: "cannot convert 'const at::DeprecatedTypeProperties' to
# 'c10::ScalarType'"; MSVC: "cannot convert from 'const at::DeprecatedTypeProperties' to ..."
_TYPE = re.compile(r"(?:conversion function from|cannot convert(?: from)?) \W{0,2}(?:const )?"
                   r"at::DeprecatedTypeProperties\W{1,8}to\W{1,3}(?:c10|at)::ScalarType")


# TH, THC's CPU half: torch/include/TH/TH.h is in the 1.10.2 wheel and gone from 1.11.0 (both
# wheels' file lists read); its names (THFloatTensor, THArgCheck) went with it
_TH = re.compile(r"\bTH/(TH\w*\.h)\W{0,3}(?::\s*)?No such file|(?:cannot open (?:source|include) "
                 r"file|Cannot open include file)\W{1,3}TH/TH\w*\.h|\b(THArgCheck|THFloatTensor\w*|"
                 r"THDoubleTensor\w*|THLongTensor\w*|THTensor_\w+)\b[^\n]{0,40}(?:was not declared|"
                 r"is undefined|undeclared identifier|does not name a type)")


def _first(ctx: Context) -> Optional[Tuple[str, int]]:
    for kind, pattern, needles in (("thc", _THC, ("thc",)),
                                   ("th", _TH, ("th/th", "tharg", "thfloat", "thdouble", "thlong",
                                                "thtensor_")),
                                   ("at_check", _AT_CHECK, ("at_check",)),
                                   ("stream", _STREAM, ("getcurrentcudastream",)),
                                   ("type", _TYPE, ("deprecatedtypeproperties",))):
        hit = ctx.first(pattern, needles)
        if hit is not None:
            return kind, hit[0]
    return None


def removed_cpp_api(ctx: Context) -> List[Signal]:
    found = _first(ctx)
    if found is None:
        return []
    kind, index = found
    if kind == "type":
        return [Signal("removed_cpp_api", Category.VERSION_CONFLICT,
                       "the extension's source passes tensor.type() to an AT_DISPATCH macro, "
                       "which torch accepted (deprecated) until 2.5 and no longer does from 2.6: "
                       "the code predates the installed torch", [ctx.quote(index)], NAMED,
                       [Remedy(summary="Port the source: replace x.type() with x.scalar_type() "
                               "in every AT_DISPATCH_* call (and x.type().is_cuda() with "
                               "x.is_cuda()), then build again; or take a newer release of the "
                               "package that did, or build it against torch 2.5.1 (the last "
                               "release accepting it).")])]
    if kind == "at_check":
        return [Signal("removed_cpp_api", Category.VERSION_CONFLICT,
                       "the extension's source uses AT_CHECK, a macro torch removed in 1.5 "
                       "(TORCH_CHECK replaced it): the code predates the installed torch",
                       [ctx.quote(index)], NAMED,
                       [Remedy(summary="Port the source: replace every AT_CHECK( with "
                               "TORCH_CHECK( (same arguments), then build again; or take a newer "
                               "release of the package that did, or build it against the torch "
                               "it was written for (1.4 or older).")])]
    if kind == "th":
        return [Signal("removed_cpp_api", Category.VERSION_CONFLICT,
                       "the extension's source uses TH, torch's legacy tensor library that torch "
                       "1.11 removed (TH/TH.h and THFloatTensor, THArgCheck ...): the code "
                       "predates the installed torch", [ctx.quote(index)], NAMED,
                       [Remedy(summary="Port the source to ATen (replace #include <TH/TH.h> with "
                               "#include <ATen/ATen.h> or <torch/extension.h>, TH tensors with "
                               "at::Tensor, THArgCheck with TORCH_CHECK); or take a newer release "
                               "or fork of the package that did; or build it against torch 1.10 "
                               "(the last release with TH: torch<1.11).")])]
    return [Signal("removed_cpp_api", Category.VERSION_CONFLICT,
                   "the extension's source uses THC, torch's legacy CUDA library that torch 1.11 "
                   "removed (its headers and THCState, THCudaCheck ...): the code predates the "
                   "installed torch" + (" (at::cuda::getCurrentCUDAStream undeclared: "
                                        "ATen/cuda/CUDAContext.h, which THC.h used to include, "
                                        "is not included)" if kind == "stream" else ""),
                   dedupe([ctx.quote(index)]), NAMED,
                   [Remedy(summary=f"Port the source to ATen: {_PORT}; or take a newer release "
                           "of the package that did, or build it against torch 1.10 (the last "
                           "release with THC).")])]

