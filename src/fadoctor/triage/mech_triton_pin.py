"""torch beside a Triton of another minor than the one its wheel requires. Each torch release
pins one Triton (its Linux wheel's metadata: triton==3.2.0 for torch 2.6.0, data/ext_torch.yaml,
read by tools/gen_ext_torch.py), and Inductor's generated code and torch's own Triton kernels are
written against it: across minors its imports and calls break (triton.common left in 3.0.0, the
triton-windows 3.x that a torch 2.3 cannot use). A Triton failure with such a pair is that pair
(pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fadoctor.install.torch import torch_install
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import mech_build  # the module: mech_build imports this one, via mech_api
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context
from fadoctor.triage.ext_torch import triton_pins
from fadoctor.triage.observed import PROSE
from fadoctor.triage.signal import IMPLIED, Signal, dedupe

SOURCE = "torch wheels' METADATA (Requires-Dist: triton): data/ext_torch.yaml torch_triton"
# a failure in Triton or in Inductor's use of it
_TRITON_FAILED = re.compile(r"No module named '?triton[.\w]*|cannot import name '?\w+'? from "
                            r"'?triton|triton[\w./\\]*\.py\W|\btriton\w*\.\w+Error|"
                            r"(?:Error|error|Exception)\b[^\n]{0,200}\btriton|"
                            r"\btriton\b[^\n]{0,200}(?:Error|error|failed|not work)|"
                            # Inductor's own error wrapping what Triton's objects lack
                            r"\bInductorError\b|\bCompiledKernel\b[^\n]{0,40}has no attribute", re.I)
_NAMES = ("triton", "triton-windows", "pytorch-triton")


def _minor(v: Version) -> Tuple[int, int]:
    return v.major, v.minor


def pinned(torch: Version) -> Optional[Version]:
    """The Triton torch's wheel requires (its release's own, else the same minor's newest)."""
    pins = triton_pins()
    spec = pins.get(torch.base_version)
    if spec is None:
        same = sorted((Version(t), s) for t, s in pins.items()
                      if _minor(Version(t)) == _minor(torch))
        spec = same[-1][1] if same else None
    if spec is None:
        return None
    found = re.search(r"\d+\.\d+(?:\.\d+)?", spec)
    return Version(found.group(0)) if found else None


def torch_for(triton: Version) -> Optional[Version]:
    """The newest torch release whose wheel requires this Triton's minor."""
    fits = []
    for torch, spec in triton_pins().items():
        try:
            wanted = SpecifierSet(spec)
        except InvalidSpecifier:
            continue
        pin = re.search(r"\d+\.\d+", str(wanted))
        if pin and _minor(Version(pin.group(0))) == _minor(triton):
            fits.append(Version(torch))
    return max(fits) if fits else None


def _pin(torch: Version, want: Version, pin: str) -> Remedy:
    return Remedy(summary=f"Install the Triton torch {torch.base_version} was built with "
                  f"({want.major}.{want.minor}, what its wheel requires), in the environment that "
                  "runs it.", commands=[pin])


# Inductor importing a name the installed Triton lacks ("cannot import name 'triton_key' from
# 'triton.compiler.compiler'", "... from 'triton.runtime.jit'"): another Triton than torch's
_INDUCTOR_IMPORT = re.compile(r"cannot import name '(\w+)' from '(triton[\w.]*)'")


# An attribute torch's Inductor asks of a Triton class ("type object 'CompiledKernel' has no
# attribute 'launch_enter_hook'": a class attribute Triton moved to triton.knobs in 3.4): the class
# is Triton's when data/triton_api.yaml lists it, and no other table does.
_CLASS_ATTRIBUTE = re.compile(r"type object '([A-Z]\w{2,60})' has no attribute '(\w+)'")


def _triton_class(name: str) -> bool:
    from fadoctor.triage.api_tables import api  # the table is read only for such a report
    return any(key.rsplit(":", 1)[-1] == name for key in api("triton").names)


def _unstated(ctx: Context) -> List[Signal]:
    """No pair stated, but Inductor failing to import a name from Triton (or asking a Triton
    class for an attribute it lacks): the pair is wrong."""
    hit = ctx.first(_INDUCTOR_IMPORT, ("cannot import name",))
    gone = _removed_module(ctx) if hit is None else []
    if gone:
        return gone
    if hit is None:
        attribute = ctx.first(_CLASS_ATTRIBUTE, ("has no attribute",))
        if attribute is not None and _triton_class(attribute[1].group(1)):
            return [Signal("triton_pin", Category.VERSION_CONFLICT,
                           f"Triton's {attribute[1].group(1)} has no attribute "
                           f"{attribute[1].group(2)}: the code asking for it (torch's Inductor, "
                           "or a library's Triton kernels) was written for another Triton "
                           "release than the one installed",
                           [ctx.quote(attribute[0])], IMPLIED, [triton_for(ctx, mech_build.on_windows(ctx))],
                           details={"source": f"{SOURCE}; data/triton_api.yaml"})]
        return []
    if not ctx.text.containing(("inductor", "dynamo", "torch.compile")):
        return []
    return [Signal("triton_pin", Category.VERSION_CONFLICT,
                   f"torch's Inductor imports {hit[1].group(1)} from {hit[1].group(2)}, which the "
                   "installed Triton lacks: it is not the Triton this torch was built with",
                   [ctx.quote(hit[0])], IMPLIED, [triton_for(ctx, mech_build.on_windows(ctx))],
                   details={"source": SOURCE})]


# torch importing a Triton module a later Triton removed ("No module named 'triton.common'" from
# torch/utils/_triton.py: torch 2.2 and 2.3 import triton.common.backend, gone in Triton 3.0.0)
# (a title retyped by hand may space it: "No module named 'triton. common'")
_MODULE = re.compile(r"No module named '(triton\. ?\w{1,40}(?:\.\w{1,40}){0,3})'")
_TORCH_FRAME = re.compile(r"[\\/]torch[\\/](?:_inductor|utils|_dynamo)[\\/]")


def _removed_module(ctx: Context) -> List[Signal]:
    from fadoctor.triage.api_tables import api  # the table is read only for such a report

    for index, found in ctx.find(_MODULE, ("no module named",)):
        data = api("triton")
        module = found.group(1).replace(" ", "")
        have = data.modules.get(module, ())
        near = ctx.text.lines[max(0, index - 12):index + 1]
        compiling = any(map(_TORCH_FRAME.search, near)) or ctx.text.containing(
            ("inductor", "torch.compile", "compile model"))
        if not have or have[-1] == len(data.tags) - 1 or not compiling:
            continue
        last, removed = Version(data.version(have[-1])), Version(data.version(have[-1] + 1))
        newer = sorted(Version(t) for t, spec in triton_pins().items()
                       if (p := pinned(Version(t))) is not None and p >= removed)
        fixes = [triton_for(ctx, mech_build.on_windows(ctx))]
        release = ctx.matrix.torch_release(newer[0]) if newer else None
        if newer and release is not None:
            variant = (ctx.torch_variant if ctx.torch_variant in release.cuda_variants
                       else release.default_variant)
            fixes.insert(0, Remedy(summary=f"Upgrade torch to {newer[0]} or later (its Inductor "
                                   f"is written for Triton {pinned(newer[0])}), with torchvision "
                                   "and torchaudio of the same release; or keep this torch and "
                                   "install the Triton it pins (below).",
                                   commands=[torch_install(str(newer[0]), variant)]))
        return [Signal("triton_pin", Category.VERSION_CONFLICT,
                       f"torch imports {module}, which Triton had up to {last} and removed "
                       f"in {removed}: this torch was written for an older Triton than the one "
                       "installed", [ctx.quote(index)], IMPLIED, fixes,
                       details={"source": f"{SOURCE}; data/triton_api.yaml"})]
    return []


def pair_differs(ctx: Context) -> bool:
    """The stated torch and Triton are of different minors than torch's pin."""
    stated = ctx.package(*_NAMES)
    if ctx.torch is None or stated is None:
        return False
    want = pinned(ctx.torch)
    try:
        return want is not None and _minor(want) != _minor(Version(stated.value))
    except InvalidVersion:
        return False


def mismatch(ctx: Context) -> List[Signal]:
    torch = ctx.torch
    stated = ctx.package(*_NAMES)
    if torch is None or stated is None or ctx.amd:
        return [] if ctx.amd else _unstated(ctx)
    try:
        triton = Version(stated.value)
    except InvalidVersion:
        return []
    want = pinned(torch)
    if want is None:  # a torch no pin is known for ("2.31", a typo): what the error says alone
        return _removed_module(ctx)
    if _minor(want) == _minor(triton):
        return []
    failed = ctx.first(_TRITON_FAILED, ("triton", "inductorerror", "compiledkernel"))
    if failed is None:
        return []
    windows = mech_build.on_windows(ctx) or "triton-windows" in stated.quote.text.lower()
    fixes: List[Remedy] = []
    # Triton publishes no Windows wheels; triton-windows follows its 3.x minors (3.2.0.postN for
    # torch 2.6), so a torch pinned to Triton 2.x has no Windows Triton at all
    if windows and want.major >= 3:
        fixes.append(_pin(torch, want, command("pip", "install", "--upgrade",
                                               f"triton-windows<{want.major}.{want.minor + 1}")))
    elif not windows:
        fixes.append(_pin(torch, want, command("pip", "install", f"triton=={want}")))
    newer = torch_for(triton)
    if newer is not None and newer != torch:
        fixes.append(Remedy(summary=f"{'Or move' if fixes else 'Move'} torch to {newer}, the "
                            f"release built with Triton {triton.major}.{triton.minor} (reinstall "
                            "the packages built for the old torch with it)."))
    if not fixes:
        return []
    return [Signal("triton_pin", Category.VERSION_CONFLICT,
                   f"torch {torch.base_version} is built against Triton "
                   f"{want.major}.{want.minor}, but Triton {triton} is installed: Inductor's code "
                   "and torch's Triton kernels break across Triton minors",
                   dedupe([ctx.quote(failed[0]), stated.quote, *ctx.quotes("torch")]), IMPLIED,
                   fixes, details={"source": SOURCE})]


# tl.dot(..., trans_b=True): the pre-2.0 development API (flash-attention v2.0.0
# flash_attn/flash_attn_triton.py: "Tested with triton==2.0.0.dev20221202", tl.dot(q, k,
# trans_b=True)); no released Triton's tl.dot takes trans_a/trans_b (the release wheels'
# triton/language/core.py from 1.0.0 to 3.x).
_TRANS = re.compile(r"dot\(\) got an unexpected keyword argument '(trans_[ab])'")


def pre_release_api(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TRANS, ("unexpected keyword argument 'trans_",))
    if hit is None:
        return []
    return [Signal("triton_api", Category.VERSION_CONFLICT,
                   f"the Triton kernel calls tl.dot(..., {hit[1].group(1)}=True), the API of "
                   "Triton's 2.0 development builds (2022): no released Triton takes it",
                   [ctx.quote(hit[0])], IMPLIED,
                   [Remedy(summary="Use the project's current kernel, written for released "
                           "Triton (tl.dot(a, tl.trans(b))), or switch that model to another "
                           "attention implementation (PyTorch SDPA, or its 'torch'/'flash' "
                           "option); the pre-release Triton it was written for "
                           "(2.0.0.dev20221202 in flash-attention's flash_attn_triton.py) is not "
                           "a release.")],
                   details={"source": "flash-attention v2.0.0 flash_attn/flash_attn_triton.py; "
                                      "triton release wheels' tl.dot signatures 1.0.0-3.x"})]


def with_torch(dist: str, fixes: List[Remedy], release: str) -> List[Remedy]:
    """Triton moves with torch (each torch wheel pins one Triton): the torch built with the
    Triton `release` the fixes name, beside them."""
    if dist != "triton" or not release:
        return fixes
    torch = torch_for(Version(release))
    if torch is None:
        return fixes
    return [*fixes, Remedy(summary=f"torch {torch} is built with Triton "
                           f"{release.rsplit('.', 1)[0]}: upgrade torch with it (its wheel pins "
                           "that Triton), not Triton alone; on Windows, triton-windows of the "
                           "same minor.")]


def _installed_torch(ctx: Context) -> Optional[Version]:
    """The torch the report runs: a tool's or listing's, or prose naming a full release (2.8.0,
    not a "2.3" the prose may be waiting for)."""
    stated = ctx.seen.values.get(o.TORCH)
    if ctx.torch is None or stated is None:
        return None
    return ctx.torch if stated.weight > PROSE or len(ctx.torch.release) >= 3 else None


def triton_for(ctx: Context, windows: bool) -> Remedy:
    """The Triton the stated torch's wheel requires, for this platform."""
    torch = _installed_torch(ctx)
    want: Optional[Version] = pinned(torch) if torch is not None else None
    if windows:
        if want is not None and want.major >= 3:
            return Remedy(summary=f"Install triton-windows {want.major}.{want.minor} (Triton "
                          "publishes no Windows wheels; this fork follows its minors), the "
                          f"Triton torch {torch} is built with, into the Python that runs it.",
                          commands=[command("pip", "install", "--upgrade",
                                            f"triton-windows<{want.major}.{want.minor + 1}")])
        return Remedy(summary="Install triton-windows (Triton publishes no Windows wheels) of the "
                      "minor your torch's Linux wheel requires (torch 2.6: 3.2, 2.7: 3.3, 2.8: "
                      "3.4), into the Python that runs it; or use WSL2.")
    if want is not None:
        return Remedy(summary=f"Install the Triton torch {torch} is built with (its wheel "
                      f"requires {want}).", commands=[command("pip", "install", f"triton=={want}")])
    return Remedy(summary="Install the matching Triton, the one your torch's wheel requires: "
                  "`pip check` prints \"torch X has requirement triton==Y, but you have triton "
                  "Z\"; install triton==Y.", commands=[command("pip", "check")])
