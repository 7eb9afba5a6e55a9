"""A whole model pickled under an older torch, loaded under a newer one whose module class reads
an attribute the old object never had: "'Upsample' object has no attribute
'recompute_scale_factor'". torch.save of a model pickles each module's __dict__; the class's
forward comes from the installed torch. Read from the wheels: torch 1.11.0's
torch/nn/modules/upsampling.py sets and reads self.recompute_scale_factor, 1.10.2's has no such
attribute (YOLO checkpoints saved whole hit this) (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

# class -> (attribute, the first release whose forward reads it, the last release before it)
ADDED: Dict[str, Tuple[str, str, str]] = {
    "Upsample": ("recompute_scale_factor", "1.11.0", "1.10.2")}
_ATTR = re.compile(r"'(\w{2,40})' object has no attribute '(\w{2,60})'")


def pickled_module(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_ATTR, ("object has no attribute",)):
        cls, attr = found.groups()
        known = ADDED.get(cls)
        if known is None or known[0] != attr:
            continue
        _, first, last = known
        return [Signal("pickled_module", Category.VERSION_CONFLICT,
                       f"the model was saved whole (pickled) under a torch before {first}, and "
                       f"torch {first} and later's {cls} reads {attr}, which the pickled object "
                       "never had", [ctx.quote(index)], NAMED,
                       [Remedy(summary="Give the loaded modules the attribute (torch's own "
                               "default), right after loading the model.",
                               code=f"for m in model.modules():\n    if type(m).__name__ == "
                                    f"\"{cls}\":\n        m.{attr} = None"),
                        Remedy(summary="Or update the project's code that loads the model (`git "
                               "pull`, where it has fixed the loading), or re-save the model "
                               "from its state_dict."),
                        Remedy(summary=f"Or load it under torch {last}, the last release before "
                               "the attribute.",
                               commands=[command("pip", "install", f"torch=={last}")])],
                       details={"source": "torch 1.10.2 and 1.11.0 wheels: "
                                          "torch/nn/modules/upsampling.py"})]
    return []
