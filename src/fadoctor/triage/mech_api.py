"""A caller asks flash-attn's or transformers' Python API for what the installed release does not
have: a keyword, a newly required argument, a name, a module. Looked up in each release's API as
generated from upstream (data/flash_attn_api.yaml by tools/gen_fa_api.py at every flash-attention
tag, data/transformers_api.yaml by tools/gen_hf_api.py from transformers' release wheels), it
names the releases that have it and the pin or upgrade that fixes it (pure)."""

from __future__ import annotations

import difflib
import re
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import ext_torch, switches
from fadoctor.triage.api_tables import PACKAGES, Api, api
from fadoctor.triage.context import Context
from fadoctor.triage.mech_triton_pin import pair_differs, pinned, with_torch
from fadoctor.triage.signal import IMPLIED, NAMED, Signal, dedupe

_Q = "['\u2018\u2019\"`]"  # quotes as pasted: straight, or typographic from a rendered page
_KWARG = re.compile(r"\b(\w{1,60})\(\) got an unexpected keyword argument " + _Q + r"(\w{1,60})")
# the same as a torch custom op says it (flash-attn >= 2.7 registers flash_attn::_flash_attn_*)
_OP_KWARG = re.compile(r"Unknown keyword argument " + _Q + r"(\w{1,60})" + _Q + r" for operator "
                       + _Q + r"flash_attn::(\w{1,60})")
_MISSING = re.compile(r"\b(\w{1,60})\(\) missing \d required (?:positional|keyword-only) "
                      r"arguments?: " + _Q + r"(\w{1,60})")
_IMPORT = re.compile(r"cannot import name " + _Q + r"(\w{1,80})" + _Q + r" from " + _Q +
                     rf"((?:{PACKAGES})[\w.]{{0,80}})")
# (a title retells it without "module" or its quotes: "`triton.language' has no attribute cast`")
_ATTR = re.compile(r"(?:module |(?<![\w.]))" + _Q + rf"?((?:{PACKAGES})(?:\.\w+){{0,8}})" + _Q +
                   r"? has no attribute " + _Q + r"?(\w{1,80})")
# flash_attn.cute is flash-attn-4's (another distribution; mech_catalog's FA4 entries read it).
_MODULE = re.compile(r"No module named " + _Q + r"((?:flash_attn\.(?!cute)|triton\.)[\w.]{1,80})")
_FRAME = re.compile(r"(?:site-packages|dist-packages)[/\\](\w+)[/\\]")
# Names mech_wrappers.renamed_api and mech_catalog.api_names explain (1.x -> 2.x renames).
_ELSEWHERE = re.compile(r"unpadded|^flash_attn_cuda$")


def _installed(ctx: Context, data: Api) -> Optional[Version]:
    if data.dist == "flash-attn":
        return ctx.fa2
    stated = ctx.package(*(("triton", "triton-windows") if data.dist == "triton"
                           else (data.dist, data.dist.replace("-", "_"))))
    try:
        return Version(stated.value) if stated is not None else None
    except InvalidVersion:
        return None


_NOT_CALLERS = {"torch", "torchvision", "torchaudio", "triton", "numpy", "transformers",
                "flash_attn", "xformers", "accelerate", "peft", "cuda", "python", "pytorch"}


def _caller(ctx: Context, index: int, package: str) -> Optional[str]:
    """The package whose frame is nearest above the error, not the one it calls."""
    # above the error, as Python prints it; else below it, where a server's log puts the stack
    # after the message ("At:" then "site-packages/triton_kernels/...py(55): <module>")
    below = range(index + 1, min(index + 40, len(ctx.text.lines)))
    for line in [*range(index, max(index - 40, -1), -1), *below]:
        found = _FRAME.search(ctx.text.lines[line])
        if found and found.group(1) not in (package, "torch"):
            return found.group(1)
    # no frame: a System Info block's one other library (not a pip freeze: a few packages)
    stated = [p for p in ctx.seen.packages if p.replace("-", "_") not in _NOT_CALLERS | {package}]
    return stated[0] if len(ctx.seen.packages) <= 8 and len(stated) == 1 else None


def _pin(data: Api, version: str) -> str:
    return f'pip install "{data.dist}=={version}"' + (
        " --no-build-isolation" if data.dist == "flash-attn" else "")


def _upgrade(data: Api, version: str) -> str:
    return f'pip install --upgrade "{data.dist}>={version}"' + (
        " --no-build-isolation" if data.dist == "flash-attn" else "")


def _has(data: Api, have: Tuple[int, ...], installed: Optional[Version]) -> bool:
    """Whether the installed release (when stated) is one of `have`."""
    if installed is None:
        return False
    return any(Version(data.version(i)) == installed for i in have)


def _finding(ctx: Context, index: int, data: Api, what: str, have: Tuple[int, ...],
             caller: Optional[str]) -> Optional[Signal]:
    """The installed release lacks `what`, which releases `have` (sorted indexes) hold."""
    installed = _installed(ctx, data)
    first, last, latest = (have[0], have[-1], len(data.tags) - 1) if have else (0, 0, 0)
    if not have or _has(data, have, installed) or len(have) == latest + 1:
        return None  # no release has it, the installed one does, or all do: not a version
    stated = f" (installed: {data.dist} {installed})" if installed else ""
    gap = _gap(data, have, installed)
    if gap is not None:  # the installed release is one of a few in the span without it
        return _signal(ctx, index, f"{what} is missing from {data.dist} {installed}, though the "
                       f"releases around it have it ({gap} does)", [Remedy(
                           summary=f"Move to {data.dist} {gap}, the nearest later release with "
                           f"{what}.", commands=[_pin(data, gap)])], data, gap)
    if last == latest or (installed is not None and installed < Version(data.version(first))):
        message = (f"{what} is in {data.dist} {data.version(first)} and later; the installed "
                   f"{data.dist} is older{stated}")
        target = data.version(first)
        fix = Remedy(summary=f"Upgrade {data.dist} to {target} or later, the first release with "
                     f"{what}.", commands=[_upgrade(data, target)])
    else:
        span = f"up to {data.version(last)}" if first == 0 else \
            f"{data.version(first)} to {data.version(last)}"
        message = (f"{what} is in {data.dist} {span} only: {data.removed_in(last + 1)} removed "
                   f"it{stated}")
        move = "Downgrade" if installed is not None or first == 0 else "Move"
        target = data.version(last)
        fix = Remedy(summary=f"{move} {data.dist} to {data.version(last)}, the last release "
                     f"with {what}" + (f" (it appeared in {data.version(first)}: an older "
                                       "release lacks it too)" if installed is None and first
                                       else "")
                     + (f", or upgrade {caller} to a release written for the newer "
                        f"{data.dist}" if caller else "") + ".",
                     commands=[_pin(data, target)])
        if caller and _pinned_by_torch(ctx, data, installed):  # torch holds this Triton
            return _signal(ctx, index, message, [Remedy(
                summary=f"Upgrade {caller} to a release written for triton {installed}: torch "
                        f"{ctx.torch} pins that Triton, so downgrading Triton would break "
                        "torch."), fix], data, "")
    return _signal(ctx, index, message, [fix], data, target)


def _pinned_by_torch(ctx: Context, data: Api, installed: Optional[Version]) -> bool:
    want = pinned(ctx.torch) if data.dist == "triton" and ctx.torch is not None else None
    return want is not None and installed is not None and \
        (want.major, want.minor) == (installed.major, installed.minor)


def _gap(data: Api, have: Tuple[int, ...], installed: Optional[Version]) -> Optional[str]:
    """The nearest later release with it, when the installed one falls inside its span."""
    if installed is None:
        return None
    later = [i for i in have if Version(data.version(i)) > installed]
    earlier = [i for i in have if Version(data.version(i)) < installed]
    return data.version(later[0]) if later and earlier else None


def _signal(ctx: Context, index: int, message: str, fixes: List[Remedy], data: Api,
            release: str = "") -> Signal:  # release: what the fixes move to
    fixes = with_torch(data.dist, fixes, release)
    needs = ext_torch.table().get(data.dist, {}).get(release) if release else None
    if needs:  # a compiled package whose release is built for one torch (xformers)
        fixes = [*fixes, Remedy(summary=f"{data.dist} {release}'s wheels require torch{needs} "
                                "(their metadata): pip installs that torch with it, so keep the "
                                "pair together (with torch's CUDA build from its index).")]
    stated = ctx.fa_quote() if data.dist == "flash-attn" else None
    return Signal("api", Category.VERSION_CONFLICT, message,
                  dedupe(sorted({ctx.quote(index), *filter(None, [stated])},
                                key=lambda q: q.line)), NAMED, fixes,
                  details={"source": data.source})


def _package(ctx: Context, index: int, function: str) -> Optional[Api]:
    """The API a call error is about: the package whose frame raised it, else the one that has
    the function (flash_attn first)."""
    near = " ".join(ctx.text.lines[max(index - 6, 0):index + 1])
    order = ("transformers", "flash_attn") if "/transformers/" in near else \
        ("flash_attn", "transformers")
    return next((api(p) for p in (*order, "xformers") if api(p).functions(function)), None)


def keyword(ctx: Context) -> List[Signal]:
    """`f() got an unexpected keyword argument 'x'`: the installed release's f lacks x."""
    calls = [(i, m.group(1), m.group(2)) for i, m in ctx.find(_KWARG, ("unexpected keyword",))] \
        + [(i, m.group(2), m.group(1)) for i, m in ctx.find(_OP_KWARG, ("unknown keyword",))]
    for index, function, argument in calls:
        data = _package(ctx, index, function)
        if data is None:
            continue
        have = sorted({i for key in data.functions(function)
                       for i in data.parameters[key].get(argument, ())})
        signal = _finding(ctx, index, data, f"{function}()'s argument {argument!r}",
                          tuple(have), _caller(ctx, index, "flash_attn"))
        if signal is not None:
            return [signal]
    return []


def names(ctx: Context) -> List[Signal]:
    """`cannot import name 'x' from 'm'`, `module 'm' has no attribute 'x'`, `No module named
    'flash_attn.m'`: the releases that have it."""
    for index, found in ctx.find(_IMPORT, ("cannot import name",)):
        signal = _name(ctx, index, found.group(2), found.group(1))
        if signal is not None:
            return [signal]
    for index, found in ctx.find(_ATTR, ("has no attribute",)):
        signal = _name(ctx, index, found.group(1), found.group(2))
        if signal is not None:
            return [signal]
    for index, found in ctx.find(_MODULE, ("no module named",)):
        if _inductors(ctx, found.group(1).split(".")[0]):
            continue
        data = api(found.group(1).split(".")[0])
        module = found.group(1)
        signal = _finding(ctx, index, data, f"the module {module}", data.modules.get(module, ()),
                          _caller(ctx, index, module.split(".")[0]))
        if signal is not None:
            return [signal]
    return []


def _inductors(ctx: Context, package: str) -> bool:
    """torch's Inductor (or a torch/Triton pair off its pin) asking Triton: mech_triton_pin."""
    return package == "triton" and (bool(ctx.text.containing(("inductor", "_dynamo")))
                                     or pair_differs(ctx))


def _name(ctx: Context, index: int, module: str, name: str) -> Optional[Signal]:
    package = module.split(".")[0]
    if _inductors(ctx, package):
        return None
    one_x = ctx.fa2 is not None and ctx.fa2 < Version("2.0")
    if _ELSEWHERE.search(name) or (package == "flash_attn" and name.startswith("flash_attn_")
                                   and one_x):
        return None  # mech_catalog.api_names: 2.x's names asked of a 1.x install
    data = api(package)
    have = data.names.get(f"{module}:{name}", ())
    caller = _caller(ctx, index, package)
    signal = _finding(ctx, index, data, f"{name} in {module}", have, caller)
    if signal is None or have[-1] == len(data.tags) - 1:
        return signal
    near = _renamed(data, module, name)
    if near is not None:
        signal.remedies.insert(0, Remedy(
            summary=f"{module} has {near} at the latest release, the name {name} most likely "
                    f"became: update the code that imports it{f' ({caller})' if caller else ''}.",
            code=f"from {module} import {near}"))
    home = _home(name)
    if home is not None:  # removed from a re-export: the name still lives where it is defined
        signal.remedies.insert(0, Remedy(
            summary=f"Update the code that imports it (the model code{f' or {caller}' if caller else ''}): "
                    f"import {name} from {home}, which defines it, instead of {module}.",
            code=f"from {home} import {name}"))
    return signal


def _renamed(data: Api, module: str, name: str) -> Optional[str]:
    """The name `name` most likely became: a close name of the same module, at the latest release,
    that first appeared in a release without `name` (the earliest such; is_flash_attn_available
    -> is_flash_attn_2_available, both in transformers 4.35.0)."""
    latest = len(data.tags) - 1
    prefix = f"{module}:"
    old = set(data.names.get(prefix + name, ()))
    names = {k[len(prefix):]: have for k, have in data.names.items()
             if k.startswith(prefix) and latest in have and k[len(prefix):] != name}
    close = [n for n in difflib.get_close_matches(name, list(names), n=5, cutoff=0.8)
             if names[n][0] not in old and names[n][0] > min(old, default=0)]
    return min(close, key=lambda n: names[n][0], default=None)


def _home(name: str) -> Optional[str]:
    """The flash_attn module that defines `name` at the latest release."""
    data = api("flash_attn")
    latest = len(data.tags) - 1
    keys = [k for k, have in data.names.items()
            if k.rsplit(":", 1)[1] == name and latest in have]
    return min((k.rsplit(":", 1)[0] for k in keys), key=len, default=None)


_FLAG = re.compile(r"\b((?:FLASH_ATTENTION|FLASH_ATTN)_[A-Z0-9_]{2,40})=")


def unread_flags(ctx: Context) -> Optional[Remedy]:
    """A FLASH_ATTENTION_* variable the report sets that flash-attn's setup.py never reads (at
    any release), with the ones it does read: a build told to do something it cannot hear."""
    found = {m.group(1) for _, m in ctx.find(_FLAG, ("flash_attention_", "flash_attn_"))}
    read = api("flash_attn").environment
    unknown = sorted(f for f in found if f not in read)
    if not unknown:
        return None
    ours = ", ".join(k for k in read if k.startswith(("FLASH_ATTENTION_", "FLASH_ATTN_")))
    return Remedy(summary=f"flash-attn's setup.py reads no {', '.join(unknown)} at any release "
                  f"(it reads {ours}): FLASH_ATTENTION_FORCE_BUILD=TRUE is what makes it compile "
                  "instead of fetching a wheel.")


_CODE_IMPORT = re.compile(r"^\W{0,6}from\s+(flash_attn(?:\.\w{1,60}){1,3})\s+import\s+(\w{1,80})\s*"
                          r"(?:`|$)")


def code_imports(ctx: Context) -> List[Signal]:
    """A framework's code, quoted in the report, imports a flash-attn name the stated release
    does not have (unsloth probing `flash_attn_interface.flash_attn_cuda`, which 2.7.3 renamed):
    the code was written for other releases."""
    if ctx.fa2 is None or not ctx.fa2_exact:
        return []
    data = api("flash_attn")
    for index, found in ctx.find(_CODE_IMPORT, ("from flash_attn",)):
        module, name = found.group(1), found.group(2)
        have = data.names.get(f"{module}:{name}", ())
        caller = next((s.framework for s in switches.named(ctx)), None)
        signal = _finding(ctx, index, data, f"{name} in {module}", have, caller)
        if signal is not None:
            signal.strength = IMPLIED  # the quoted code and the stated release imply it
            if caller is not None:
                signal.remedies.insert(0, Remedy(
                    summary=f"Upgrade {caller}: its code imports {name} from {module}, which "
                            f"flash-attn {ctx.fa2} no longer has (a release of {caller} written "
                            "for this flash-attn probes the new name).",
                    commands=[f"pip install --upgrade {caller}"]))
            return [signal]
    return []


# transformers' own check of a model class: modeling_utils.py raises it when the class does not
# set _supports_flash_attn_2 (transformers==4.36.0:transformers/modeling_utils.py:1383, "... yet.
# Please open an issue on GitHub ..."; 4.48.0:1649, "... Please request to add support where the
# model is hosted ..."). With trust_remote_code the class is the Hub repo's own modeling file.
_MODEL_NO_FLASH = re.compile(r"(\w{1,80}) does not support Flash Attention 2(?:\.0)? yet")
# its SDPA twin: transformers==4.36.0:transformers/modeling_utils.py:1465 ("... does not support
# an attention implementation through torch.nn.functional.scaled_dot_product_attention yet")
_MODEL_NO_SDPA = re.compile(r"(\w{1,80}) does not support an attention implementation through "
                            r"torch\.nn\.functional\.scaled_dot_product_attention yet")
MODEL_NO_FLASH_SOURCE = ("transformers==4.36.0:transformers/modeling_utils.py:1383; "
                         "transformers==4.48.0:transformers/modeling_utils.py:1649")


def model_without_flash(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MODEL_NO_FLASH, ("does not support flash attention",))
    if hit is None:
        return _model_without_sdpa(ctx)
    index, found = hit
    model = found.group(1)
    fixes = [Remedy(summary=f"{model}'s modeling code does not declare flash-attention support "
                    "(_supports_flash_attn_2): update the model code — with trust_remote_code, "
                    "re-download the model repository's latest modeling files (a newer revision "
                    "may add it); for a model transformers ships, a transformers release that "
                    "supports it."),
             Remedy(summary="Or do not ask for flash-attention for this model: remove "
                    "attn_implementation=\"flash_attention_2\" (or the framework's flash flag, "
                    "such as use_flash_attn / --flash_attn) and load it with SDPA or eager.")]
    switch = switches.remedy(ctx, "The framework's own switch:")
    if switch is not None:
        fixes.insert(1, switch)
    return [Signal("api", Category.VERSION_CONFLICT,
                   f"transformers refuses flash-attention for {model}: the model class does not "
                   "support it (its code predates it, or never had it)", [ctx.quote(index)],
                   NAMED, fixes, details={"source": MODEL_NO_FLASH_SOURCE})]


# transformers 4.34.x imports flash-attn 2.x's API whenever a flash_attn package is installed:
# transformers==4.34.1:transformers/utils/import_utils.py:74 (`_is_package_available("flash_attn")`
# only) and models/llama/modeling_llama.py:44-46 (`from flash_attn import flash_attn_func`);
# 4.35.0's import_utils.py:74 also requires flash_attn >= 2 (version.parse).
FA1_UNDER_434 = ("transformers==4.34.1:transformers/utils/import_utils.py:74, "
                 "models/llama/modeling_llama.py:44-46; transformers==4.35.0:"
                 "transformers/utils/import_utils.py:74")


def fa1_under_transformers_434(ctx: Context) -> List[Signal]:
    stated = ctx.package("transformers")
    if stated is None or ctx.fa2 is None or ctx.fa2 >= Version("2.0"):
        return []
    try:
        release = Version(stated.value)
    except InvalidVersion:
        return []
    if not Version("4.34.0") <= release < Version("4.35.0"):
        return []
    quotes = dedupe([stated.quote, *([q] if (q := ctx.fa_quote()) else [])])
    return [Signal("api", Category.VERSION_CONFLICT,
                   f"transformers {release} imports flash-attn 2.x's functions whenever a "
                   f"flash_attn package is installed, and flash-attn {ctx.fa2} (1.x) lacks them: "
                   "importing the models fails", quotes, IMPLIED,
                   [Remedy(summary="Upgrade transformers to 4.35.0 or later (it checks for "
                           "flash-attn 2.x before importing it), or flash-attn to 2.x, or "
                           "uninstall flash-attn 1.x.",
                           commands=['pip install --upgrade "transformers>=4.35.0"'])],
                   details={"source": FA1_UNDER_434})]


def _model_without_sdpa(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MODEL_NO_SDPA, ("scaled_dot_product_attention yet",))
    if hit is None:
        return []
    model = hit[1].group(1)
    return [Signal("api", Category.VERSION_CONFLICT,
                   f"transformers refuses SDPA for {model}: the model class in this transformers "
                   "(or its remote code) does not declare SDPA support (_supports_sdpa)",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Upgrade transformers: SDPA support reaches models release by "
                           f"release, so a newer transformers (or its main branch) may have it for "
                           f"{model}; with trust_remote_code, the model repository's latest code.",
                           commands=["pip install --upgrade transformers"]),
                    Remedy(summary="Or load it with attn_implementation=\"eager\" (the attention "
                           "every model class has).")],
                   details={"source": "transformers==4.36.0:transformers/modeling_utils.py:1465"})]
