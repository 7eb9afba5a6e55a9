"""A torch built without distributed support (USE_DISTRIBUTED=0: some macOS, Windows-ROCm and
custom builds) and a package that imports torch.distributed's internals unconditionally: "No
module named 'torch._C._distributed_c10d'; 'torch._C' is not a package" (torch/distributed/
__init__.py: is_available() is False and the C10d bindings are absent). Packages guard such
imports with torch.distributed.is_available() once someone reports it, so the importing package's
newer release is the usual fix; a torch build with distributed support is the other (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.signal import NAMED, Signal, dedupe

# torch/distributed/__init__.py imports these from torch._C._distributed_c10d only when
# is_available(): a build without distributed has none of them
_NO_C10D = re.compile(r"No module named '?torch\._C\._(?:distributed_c10d|c10d)\b|cannot import "
                      r"name '(?:FileStore|HashStore|PrefixStore|TCPStore|Store|ProcessGroup|"
                      r"Reducer|ReduceOp)' from 'torch\.distributed'")


def no_distributed(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_C10D, ("torch._c._", "from 'torch.distributed'"))
    if hit is None:
        return []
    importer = frame_package(ctx, hit[0], ("torch",), after=30)
    fixes: List[Remedy] = []
    if importer is not None:
        fixes.append(Remedy(summary=f"Upgrade {importer}: it imports torch.distributed's "
                            "internals without checking torch.distributed.is_available(), and "
                            "releases after the report guard it.",
                            commands=[command("pip", "install", "--upgrade", importer)]))
    fixes.append(Remedy(summary="Or use a torch built with distributed support (PyTorch's Linux "
                        "wheels have it; a source build needs USE_DISTRIBUTED=1).",
                        commands=["python -c \"import torch.distributed as d; "
                                  "print(d.is_available())\""]))
    return [Signal("torch_no_distributed", Category.VERSION_CONFLICT,
                   "this torch was built without distributed support, and "
                   f"{importer or 'a package'} imports torch.distributed's internals "
                   "unconditionally", dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                   fixes)]
