"""DGL's GraphBolt library, compiled once per torch release: dgl/graphbolt/__init__.py
(load_graphbolt) looks for libgraphbolt_pytorch_<torch version>.so (graphbolt_pytorch_<v>.dll on
Windows) beside DGL and raises "Cannot find DGL C++ graphbolt library at <path>" when the
installed DGL was not built for the installed torch; a library that is there but does not load
("Cannot load Graphbolt C++ library") is a build for another torch build (its CUDA variant, or a
CPU build) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_MISSING = re.compile(r"(?:Cannot|can'?t|could not) find (?:the )?(?:DGL )?C\+\+ (?:library )?"
                      r"graphbolt(?: library)?(?: at \S*?graphbolt_pytorch_(\d+\.\d+\.\d+))?", re.I)
_UNLOADED = re.compile(r"Cannot load Graphbolt C\+\+ library", re.I)
SOURCE = "dmlc/dgl python/dgl/graphbolt/__init__.py (load_graphbolt)"


def graphbolt(ctx: Context) -> List[Signal]:
    missing = ctx.first(_MISSING, ("graphbolt",))
    if missing is not None:
        torch = missing[1].group(1) or (str(ctx.torch) if ctx.torch else None)
        minor = ".".join(torch.split("+")[0].split(".")[:2]) if torch else None
        which = f"torch {torch}" if torch else "the installed torch"
        return [Signal("dgl_graphbolt", Category.VERSION_CONFLICT,
                       f"the installed DGL has no GraphBolt library for {which}: DGL compiles it "
                       "once per torch release, and this DGL release was not built for it",
                       dedupe([ctx.quote(missing[0]), *ctx.quotes("torch")]), NAMED,
                       [Remedy(summary="Install the DGL build for this torch from DGL's wheel "
                               "index (the page for torch-"
                               f"{minor or 'X.Y'} and torch's CUDA, as DGL's install selector "
                               "gives it), if DGL published one; or downgrade torch to a "
                               "supported torch version of this DGL release (its dgl/graphbolt "
                               "folder lists them: libgraphbolt_pytorch_<version>).",
                               commands=['python -c "import os, dgl; print(sorted(os.listdir('
                                         'os.path.join(os.path.dirname(dgl.__file__), '
                                         "'graphbolt'))))\""])],
                       details={"source": SOURCE})]
    unloaded = ctx.first(_UNLOADED, ("graphbolt",))
    if unloaded is None:
        return []
    return [Signal("dgl_graphbolt", Category.TORCH_VERSION_MISMATCH,
                   "DGL's GraphBolt library for this torch release is there but does not load: "
                   "the DGL build is for another build of that torch (another CUDA variant, or "
                   "the CPU build)", dedupe([ctx.quote(unloaded[0]), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary="Install the DGL build for torch's exact build (its version and "
                           "CUDA variant, torch.__version__ and torch.version.cuda) from DGL's "
                           "wheel index, in place of this one.",
                           commands=['python -c "import torch; print(torch.__version__, '
                                     'torch.version.cuda)"'])],
                   details={"source": SOURCE})]
