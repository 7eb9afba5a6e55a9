"""A cuDNN library of one major missing (`libcudnn_ops_infer.so.8: cannot open shared object
file`, cuDNN's own `Could not load library libcudnn_cnn_infer.so.8`): the binary was built against
that cuDNN major and the environment holds another. cuDNN 8 ships its sub-libraries as
`libcudnn_{ops,cnn,adv}_{infer,train}.so.8`; cuDNN 9 merged them (`libcudnn_ops.so.9`,
`libcudnn_graph.so.9`, `libcudnn_engines_*.so.9`), so a name ending `_infer`/`_train` is cuDNN 8.
torch's wheels pin the cuDNN they load: nvidia-cudnn-cu12==8.9.2.26 for torch 2.1, cuDNN 9 from
torch 2.4 (torch_cuda_facts.md, the wheels' metadata and RELEASE.md) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

_LIB = re.compile(r"(libcudnn(?:_\w{1,30})?\.so\.(\d{1,2}))\b[^\n]{0,40}?(?::\s*cannot open shared "
                  r"object file|\.\s*Error:)|Could not load library (libcudnn(?:_\w{1,30})?\.so\.(\d{1,2}))")
# a cuDNN the report says it has: "cudnn-9.2", "cuDNN 9.1.0", "libcudnn9", "cudnn9"
_HAVE = re.compile(r"\b(?:lib)?cudnn[-_ ]?v?(\d{1,2})(?:\.\d+)*\b(?!\.so)", re.I)
# binaries that load a cuDNN of their own build's major, by how a report names them, and the
# distribution a plain upgrade replaces (others get the advice without a command: TensorFlow's
# and JAX's CUDA builds install through extras, Paddle's from its own index)
_OWNERS = (("ctranslate2", "ctranslate2"), ("faster-whisper", "ctranslate2"),
           ("faster_whisper", "ctranslate2"), ("whisperx", "ctranslate2"),
           ("onnxruntime", "onnxruntime-gpu"))
_TORCH_CUDNN9 = Version("2.4")  # torch 2.4's wheels are the first built with cuDNN 9


# The library found, but outside the Python environment and missing a symbol: a system cuDNN
# (LD_LIBRARY_PATH, /usr/local/cuda/lib64) mixed with the cuDNN torch's wheel loads: not missing,
# mech_import.undefined_symbols reads it (the loader's path, LD_LIBRARY_PATH).
_MIXED = re.compile(r"Could not load library libcudnn\w{0,30}\.so\.\d{1,2}\. Error: (?:/usr|/opt)"
                    r"[^\s:]{0,200}: undefined symbol")


def missing_cudnn(ctx: Context) -> List[Signal]:
    if ctx.first(_MIXED, ("undefined symbol",)) is not None:
        return []  # found, from the system: mech_import.undefined_symbols
    hit = ctx.first(_LIB, ("libcudnn",))
    if hit is None:
        return []
    index, found = hit
    lib, major = (found.group(1), found.group(2)) if found.group(1) else (found.group(3),
                                                                          found.group(4))
    want = int(major)
    have = _have(ctx, want)
    owner = next((dist for word, dist in _OWNERS if ctx.text.containing((word,))), None)
    quotes = [ctx.quote(index)]
    if have is not None:
        quotes.append(have[1])
    message = (f"the binary was built against cuDNN {want} (it loads {lib}), and the loader finds "
               "no cuDNN of that major here"
               + (f": this environment has cuDNN {have[0]}" if have is not None else ""))
    who = owner or "the package that failed"
    remedies = []
    own = _torch_own(ctx, index, want)
    if own is not None:  # torch's own import: its wheel's cuDNN dependency is not installed
        return [Signal("missing_cudnn", Category.CUDA_RUNTIME_MISMATCH,
                       f"torch itself fails to import: it loads cuDNN {want} ({lib}) from the "
                       "nvidia-cudnn wheel its own wheel requires, and that wheel is not installed",
                       dedupe(quotes), NAMED + 1, [own], details={"library": lib})]
    newer = have is not None and have[0] > want
    if newer or (ctx.torch is not None and ctx.torch >= _TORCH_CUDNN9):
        # CTranslate2's release notes: 4.5.0's package "supports CUDNN 9 and is no longer
        # compatible with CUDNN 8" (mech_ctranslate2)
        first = " (4.5.0 and later are built against cuDNN 9)" if owner == "ctranslate2" and \
            want == 8 else ""
        remedies.append(Remedy(summary=f"Install a release of {who} built against cuDNN "
                               f"{have[0] if have else want + 1} (the cuDNN this environment and "
                               f"torch load): upgrade it{first}.",
                               commands=[command("pip", "install", "ctranslate2>=4.5.0")]
                               if first else [f"pip install --upgrade {owner}"] if owner else []))
    remedies.append(Remedy(
        summary=f"Or give it cuDNN {want} beside the other: the system package (libcudnn{want}), "
        f"or a separate environment whose torch pins cuDNN {want}"
        + (" (torch 2.1 to 2.3: nvidia-cudnn-cu12==8.9.2.26)" if want == 8 else "")
        + "; installing another cuDNN major with pip into this environment replaces the one "
        "torch loads."))
    return [Signal("missing_cudnn", Category.CUDA_RUNTIME_MISMATCH, message, dedupe(quotes),
                   NAMED + 1, remedies, details={"library": lib})]


# `import torch` itself failing: torch's pip wheels (from 2.4, cuDNN 9) require the cuDNN wheel
# of their CUDA major (nvidia-cudnn-cu12 / -cu13, pinned in their metadata), which a lockfile's
# marker, --no-deps or an interrupted install can leave out
_CUDA_MAJOR = re.compile(r"\+cu(1[23])\d\b|\bCUDA (1[23])\b|\bcu(1[23])0\b")
_IMPORTING_TORCH = re.compile(r"import torch\b|torch[\\/]__init__\.py")


def _torch_own(ctx: Context, index: int, want: int) -> Optional[Remedy]:
    if want < 9 or not any(_IMPORTING_TORCH.search(line)
                           for line in ctx.text.lines[max(0, index - 6):index + 1]):
        return None
    cuda = ctx.torch_cuda_stated
    said = {int("".join(m)) for m in _CUDA_MAJOR.findall(ctx.text.joined)}
    major = cuda.major if cuda is not None else (said.pop() if len(said) == 1 else None)
    major = major if major in (12, 13) else None
    package = f"nvidia-cudnn-cu{major}" if major else "nvidia-cudnn-cu12 (or -cu13 for a CUDA 13 torch)"
    return Remedy(summary=f"torch's own wheel requires {package} (pinned in its metadata, which "
                  "`pip check` prints), and it is not installed: install it into this "
                  "environment (a lockfile or extra that gates it, or --no-deps, left it out).",
                  commands=[command("pip", "install", f"nvidia-cudnn-cu{major}"),
                            command("pip", "check")] if major else [command("pip", "check")])


def _have(ctx: Context, want: int) -> Optional[Tuple[int, Quote]]:
    """The other cuDNN major the report says it has, with its line."""
    for index in ctx.text.containing(("cudnn",)):
        for found in _HAVE.finditer(ctx.text.lines[index]):
            major = int(found.group(1))
            if major != want and 7 <= major <= 12:
                return major, ctx.quote(index)
    return None
