"""torch.compile refusing the interpreter: "Python 3.11+ not yet supported for torch.compile"
(torch 2.0's torch/_dynamo/eval_frame.py, check_if_dynamo_supported; "Python 3.12+" in the
releases before 3.12's support, "Python 3.13+" likewise). Each Python got Dynamo in a later torch:
3.11 in 2.1 (pytorch/pytorch#104918: "released in torch 2.1"), 3.12 in 2.4 and 3.13 in 2.6
(PyTorch's release notes for 2.4 and 2.6) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

_REFUSED = re.compile(r"Python 3\.(\d{2})\+ not yet supported for torch\.compile")
# the first torch whose Dynamo runs on each Python minor
_FIRST = {11: "2.1", 12: "2.4", 13: "2.6"}


def python_refused(ctx: Context) -> List[Signal]:
    hit = ctx.first(_REFUSED, ("not yet supported for torch.compile",))
    if hit is None:
        return []
    minor = int(hit[1].group(1))
    first = _FIRST.get(minor)
    torch = f"torch {ctx.torch}" if ctx.torch is not None else "this torch"
    fixes = [Remedy(summary=f"Or keep {torch} and run it on Python 3.{minor - 1}, the newest "
                    "Python its torch.compile accepts (or run without torch.compile).")]
    if first is not None:
        fixes.insert(0, Remedy(summary=f"Upgrade torch to {first} or later, the first release "
                               f"whose torch.compile runs on Python 3.{minor} (with the "
                               "torchvision/torchaudio and extensions built for it).",
                               commands=[f'pip install --upgrade "torch>={first}"']))
    else:
        fixes[0] = fixes[0].model_copy(update={"summary": fixes[0].summary[3:].capitalize()})
    return [Signal("compile_python", Category.PLATFORM_UNSUPPORTED,
                   f"{torch}'s torch.compile does not run on Python 3.{minor} or newer: Dynamo "
                   "supports a Python only from a later torch", [ctx.quote(hit[0])], NAMED,
                   fixes, details={"source": "torch/_dynamo/eval_frame.py "
                                             "(check_if_dynamo_supported)"})]
