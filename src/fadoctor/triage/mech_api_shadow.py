"""A name the stated release has, reported missing: `module 'triton.language' has no attribute
'inline_asm_elementwise'` from a report that says triton 2.3.1 is installed, when every release
from 2.2.0 on defines it (data/triton_api.yaml, read from Triton's release wheels). The release
stated is not the one that runs: another install of the package comes first on sys.path (a
user-site or system copy, another environment's, an app's bundled one), and it is older (pure)."""

from __future__ import annotations

from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage.api_tables import api
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api import _ATTR, _IMPORT, _has, _inductors, _installed
from fadoctor.triage.signal import NAMED, Signal, dedupe


def shadowed(ctx: Context) -> List[Signal]:
    hits = [(i, m.group(2), m.group(1)) for i, m in ctx.find(_IMPORT, ("cannot import name",))]
    hits += [(i, m.group(1), m.group(2)) for i, m in ctx.find(_ATTR, ("has no attribute",))]
    for index, module, name in hits:
        if _inductors(ctx, module.split(".")[0]):
            continue  # torch's Inductor asking a Triton off its pin: mech_triton_pin
        data = api(module.split(".")[0])
        have = data.names.get(f"{module}:{name}", ())
        installed = _installed(ctx, data)
        if not have or installed is None or not _has(data, have, installed):
            continue
        first = data.version(have[0])
        stated = ctx.package(data.dist, f"{data.dist}-windows")
        top = module.split(".")[0]
        quotes = dedupe([ctx.quote(index), *([stated.quote] if stated is not None else [])])
        return [Signal(
            "api_shadowed", Category.VERSION_CONFLICT,
            f"{name} is in {module} from {data.dist} {first} on, and the stated {data.dist} "
            f"{installed} has it: the {data.dist} that runs is another, older install that "
            "comes first on the import path", quotes, NAMED,
            [Remedy(summary=f"Find the {data.dist} that is really imported (its version and "
                    f"file), then reinstall {data.dist} {installed} into this environment, "
                    "removing the stray copy (pip uninstall until none is left, a user-site "
                    "copy under ~/.local included).",
                    commands=[command("python", "-c", f"import {top}; print({top}.__version__, "
                                      f"{top}.__file__)"),
                              command("pip", "install", "--force-reinstall", "--no-deps",
                                      requirement(data.dist, installed))])],
            details={"source": data.source})]
    return []
