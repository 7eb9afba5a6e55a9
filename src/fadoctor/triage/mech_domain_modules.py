"""Code importing a torchvision or torchaudio module the installed release does not have: "No
module named 'torchvision.transforms.functional_tensor'" (0.17 removed it; its functions live on
in torchvision.transforms._functional_tensor and the public torchvision.transforms.functional),
"No module named 'torchaudio.backend'". Looked up in data/domain_modules.yaml (tools/
gen_domain_modules.py, the modules each minor's release wheel installs); the torch each release
pairs with is its wheel's own requirement (data/ext_torch.yaml) (pure)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage import ext_torch
from fadoctor.triage.api_tables import _file, _indexes
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

_MODULE = re.compile(r"No module named ['\"]?((torchvision|torchaudio)(?:\.\w{1,60}){1,6})")
SOURCE = ("torchvision's and torchaudio's release wheels: data/domain_modules.yaml "
          "(tools/gen_domain_modules.py)")


@lru_cache(maxsize=1)
def table() -> Dict[str, Tuple[Tuple[str, ...], Dict[str, Tuple[int, ...]]]]:
    raw: Dict[str, Dict[str, Any]] = _file("domain_modules.yaml")  # type: ignore[assignment]
    return {package: (tuple(data["tags"]), {m: _indexes(r) for m, r in data["modules"].items()})
            for package, data in raw.items()}


def _minor(tag: str) -> str:
    return ".".join(tag.split(".")[:2])


def _torch_of(package: str, tag: str) -> Optional[str]:
    spec = ext_torch.table().get(package, {}).get(tag)
    found = re.search(r"\d+\.\d+(?:\.\d+)?", spec or "")
    return found.group(0) if found else None


def removed_module(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_MODULE, ("no module named",)):
        module, package = found.group(1), found.group(2)
        tags, modules = table()[package]
        have = modules.get(module)
        if not have:
            continue  # every release has it, or none: no release difference
        if have[-1] < len(tags) - 1:
            last, removed = tags[have[-1]], _minor(tags[have[-1] + 1])
            torch = _torch_of(package, last)
            words = [requirement(package, last), *([requirement("torch", torch)] if torch else [])]
            fixes = [Remedy(summary=f"Pin {package} to {last}, the last release with it"
                            + (f", with the torch it was built for ({torch}; from PyTorch's "
                               "index for your CUDA where torch is a +cuXYZ build)" if torch
                               else "") + ".",
                            commands=[command("pip", "install", *words)])]
            private = module.rsplit(".", 1)
            renamed = f"{private[0]}._{private[1]}"
            if renamed in modules and modules[renamed][-1] == len(tags) - 1:
                fixes[0] = fixes[0].model_copy(update={"summary": "Or p" + fixes[0].summary[1:]})
                fixes.insert(0, Remedy(summary=f"Update the code that imports it: the module is "
                                       f"private from {_minor(tags[modules[renamed][0]])} on, "
                                       f"{renamed} (the same functions; the public API is its "
                                       "parent module).", code=f"from {renamed} import ..."))
            return [Signal("domain_module", Category.VERSION_CONFLICT,
                           f"the code imports {module}, which {package} had up to {last} and "
                           f"{removed} removed: it was written for an older {package} than the "
                           "one installed", [ctx.quote(index)], NAMED, fixes,
                           details={"source": SOURCE})]
        first = tags[have[0]]
        return [Signal("domain_module", Category.VERSION_CONFLICT,
                       f"the code imports {module}, which {package} has from {_minor(first)} on: "
                       "the installed release is older", [ctx.quote(index)], NAMED,
                       [Remedy(summary=f"Upgrade {package} to {first} or later, with the torch "
                               "its release pairs with.",
                               commands=[command("pip", "install", "--upgrade",
                                                 requirement(package, first, op=">="))])],
                       details={"source": SOURCE})]
    return []
