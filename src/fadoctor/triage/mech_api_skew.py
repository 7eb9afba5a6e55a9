"""The last resort for an API mismatch between two installed packages that no API table covers:
an exception whose own words are about a call's shape — an unexpected or missing argument, a
name a module does not have, a result with another number of values, a torch operator's unknown
keyword — raised in one package's code (its traceback's site-packages frames) while calling
another (named in the message). Python raises these where the caller and the callee were
written against different releases of the callee, so the fix is to move one of them to the
other's: the caller's newer release, or the callee's release the caller was written for (pure).

It is the weakest finding that still names a mechanism (RAISED_IN): any message that names a
cause outranks it, and the API tables (mech_api) name exact releases where they know them."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.install.torch import extra_index_args
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import Unsafe, command, requirement
from fadoctor.triage import wheel_table
from fadoctor.triage.context import Context
from fadoctor.triage.observed import Raised
from fadoctor.triage.signal import RAISED_IN, Signal, dedupe

_Q = "['\u2018\u2019\"`]"
_SHAPE = re.compile(r"got an unexpected keyword argument|missing (?:\d+ |a )?required "
                    r"(?:positional |keyword-only )?arguments?|takes (?:from \d+ to )?\d+ "
                    r"positional arguments? but \d+ (?:were|was) given|(?:too many|not enough) "
                    r"values to unpack|cannot import name|^module " + _Q + r"[\w.]+" + _Q +
                    r" has no attribute|Unknown keyword argument")
_KINDS = ("TypeError", "ValueError", "ImportError", "AttributeError", "RuntimeError")
_FROM = re.compile(r"(?:from|module) " + _Q + r"([A-Za-z_][\w.]*)" + _Q)
_OPERATOR = re.compile(r"for operator " + _Q + r"(\w+)::")
# the package a traceback frame is in: under site-/dist-packages (an egg's folder name starts with
# it), or a path the report shortened ("...\\transformers\\...")
_AT_LINE = re.compile(r"\.py\(\d{1,6}\): ")
_SITE = re.compile(r"(?:(?:site|dist)-packages|File \"\.\.\.)[\\/]+([A-Za-z_]\w*)")
# a frame in a source checkout's src/ layout (`pip install -e .`: /home/me/axolotl/src/axolotl/…)
_SRC = re.compile(r"[\\/]src[\\/]([A-Za-z_]\w*)[\\/][\w\\/]+\.py\"")
# a class transformers defines, named as the callee ("LlamaRotaryEmbedding.forward() got …")
_HF_CLASS = re.compile(r"^([A-Z]\w*(?:RotaryEmbedding|Attention\w*|DecoderLayer|Model|ForCausalLM|"
                       r"MLP|RMSNorm|PreTrainedModel|Config))\.\w+\(\)")
_FAMILY = re.compile(r"(?:Llama|Mistral|Mixtral|Qwen\d*|Gemma\d*|Phi\d*|Falcon|GPTNeoX|GPT2|Bloom|"
                     r"Starcoder2|Cohere|Olmo\d*|DeepseekV\d|Bert|T5|Whisper|OPT)[A-Z]")
_KEYWORD = re.compile(r"unexpected keyword argument " + _Q + r"(\w+)" + _Q)
# import names whose distribution is not the name with dashes
_DIST = {"flash_attn_3": "flash-attn-3", "flash_attn_interface": "flash-attn-3",
         "sklearn": "scikit-learn", "PIL": "pillow", "cv2": "opencv-python", "yaml": "pyyaml",
         "vllm_flash_attn": "vllm-flash-attn", "sageattention": "sageattention",
         # published as flashinfer-python from 0.2.0 (flashinfer-ai/flashinfer#794)
         "flashinfer": "flashinfer-python"}
_BARE_NAME = re.compile(r"cannot import name " + _Q + r"(\w+)" + _Q + r"\s*$")
_MISSING = re.compile(r"cannot import name '(\w+)'|has no attribute '(\w+)'")
# frames of the runtime itself, never the package at fault
_RUNTIME = {"torch", "typing", "importlib", "functools", "contextlib", "abc"}


def dist_of(module: str) -> str:
    top = module.split(".")[0]
    return _DIST.get(top, top.replace("_", "-").lower())


def frame_package(ctx: Context, index: int, skip: Tuple[str, ...], after: int = 0
                  ) -> Optional[str]:
    """The distribution whose frame is nearest above line `index` (or up to `after` lines
    below it), not one of `skip` (import names)."""
    for line in reversed(ctx.text.lines[max(0, index - 40):index + after]):
        found = _SITE.search(line)
        if found and found.group(1) not in skip:
            return dist_of(found.group(1))
    return None


def _parties(ctx: Context, raised: Raised) -> Tuple[Optional[str], Optional[str]]:
    """(caller, callee) as import names: the callee from the message, the caller from the
    newest site-packages frame of another package (a traceback pasted without its header: the
    `File "..."` lines just above the error)."""
    named = _FROM.search(raised.message) or _OPERATOR.search(raised.message)
    callee = named.group(1).split(".")[0] if named else None
    bare = _BARE_NAME.match(raised.message) if callee is None else None
    if bare is not None:  # Python before 3.8 names no module: the traceback's import line does
        line = ctx.first(re.compile(rf"^\s*from ([A-Za-z_][\w.]*) import [^#\n]*\b"
                                    rf"{re.escape(bare.group(1))}\b"), ("from ",))
        callee = line[1].group(1).split(".")[0] if line is not None else None
    if callee is None and _HF_CLASS.match(raised.message) and (ctx.text.containing((
            "transformers", "modeling_")) or _FAMILY.match(raised.message)):
        callee = "transformers"
    # the traceback above the message's last occurrence (a title repeats it with none above)
    anchor = max([raised.index, *ctx.text.containing((raised.message[:60].lower(),))])
    # Python's `File "..."` lines, or a server's "path.py(55): <module>" frames (Triton server)
    paths = raised.frames or [line for line in ctx.text.lines[max(0, anchor - 40):anchor]
                              if line.lstrip().startswith('File "') or _AT_LINE.search(line)]
    frames = [m.group(1) for f in paths for m in [_SITE.search(f) or _SRC.search(f)] if m]
    caller = next((p for p in reversed(frames) if p != callee and p not in _RUNTIME), None)
    return caller, callee


def skew(ctx: Context) -> List[Signal]:
    for raised in ctx.seen.raised:
        if raised.kind not in _KINDS or not _SHAPE.search(raised.message):
            continue
        caller, callee = _parties(ctx, raised)
        if (caller is None and callee is None) or caller == callee:
            continue
        return [_signal(ctx, raised, caller, callee)]
    return []


def _signal(ctx: Context, raised: Raised, caller: Optional[str], callee: Optional[str]) -> Signal:
    fixes: List[Remedy] = []
    stated = ctx.package(dist_of(callee)) if callee else None
    if caller is not None:
        what = f"{dist_of(callee)}'s API" if callee else "another package's API"
        have = ctx.package(dist_of(caller))
        back = f" to the release before {have.value}" if have is not None else ""
        fixes.append(Remedy(summary=f"Upgrade {dist_of(caller)}: this release of it calls "
                            f"{what} as another release had it; its newer releases follow the "
                            "current one. If it is the newer side (it passes what the other "
                            f"does not take yet), downgrade {dist_of(caller)}{back} instead.",
                            commands=[command("pip", "install", "--upgrade", dist_of(caller))]))
    missing = _MISSING.search(raised.message)
    newest = wheel_table.newest(dist_of(callee)) if callee is not None else None
    source = _ELSEWHERE.get(dist_of(callee)) if callee is not None else None
    newest_stated = stated is not None and newest is not None and _at_least(stated.value, newest)
    if callee is not None and missing is not None and newest is not None and (
            newest_stated or (stated is None and source is not None)):
        # nothing newer on the index to upgrade to (as stated, or as the project publishes)
        name = missing.group(1) or missing.group(2)
        fixes.insert(0, Remedy(
            summary=f"The newest {dist_of(callee)} on the package index is {newest}"
                    + (f" (installed: {stated.value})" if stated else "")
                    + f", and it does not define {name}: the caller was written for a newer "
                    f"{dist_of(callee)} published elsewhere"
                    + (f" ({source[0]}), built from its repository on this machine."
                       if source else ", from the project's own repository or releases."),
            commands=[command("pip", "install", "--no-build-isolation", source[1])]
            if source else []))
    elif callee is not None and missing is not None:  # a name the installed release lacks
        name = missing.group(1) or missing.group(2)
        fixes.insert(0, Remedy(summary=f"Upgrade {dist_of(callee)} to a release that defines "
                               f"{name}: the caller was most likely written for a newer "
                               f"{dist_of(callee)}" + (f" than {stated.value}" if stated else "")
                               + f" (if {name} was removed instead, the release before that).",
                               commands=[command("pip", "install", "--upgrade",
                                                 dist_of(callee), *(extra_index_args(str(
                                                     ctx.torch)) if dist_of(callee) == "torch"
                                                     and ctx.torch else []))]))
        try:
            below = [command("pip", "install", requirement(dist_of(callee), stated.value, op="<"))
                     ] if stated is not None and dist_of(callee) != "torch" else []
        except Unsafe:  # a version the text states loosely ("4.x")
            below = []
        if below and stated is not None:
            fixes.insert(1, Remedy(summary=f"Or, if {dist_of(callee)} {stated.value} removed "
                                   f"{name} (the caller written for an older one), downgrade "
                                   f"{dist_of(callee)} below it.", commands=below))
    elif callee is not None and caller is not None and (kw := _KEYWORD.search(raised.message)):
        # the caller passes a keyword the installed callee does not take: most often one the
        # callee's newer release dropped (a monkeypatch written against its internals)
        fixes.insert(0, Remedy(summary=f"Downgrade {dist_of(callee)} to the release "
                               f"{dist_of(caller)} was written for: the installed "
                               f"{dist_of(callee)}" + (f" {stated.value}" if stated else "")
                               + f" most likely dropped `{kw.group(1)}` (its requirements name "
                               f"the release), or upgrade "
                               f"{dist_of(caller)} to one written for this {dist_of(callee)}.",
                               commands=["pip check"]))
    elif callee is not None:
        pin = (f" (the installed {stated.value} is the suspect: try the release before it)"
               if stated is not None else "")
        fixes.append(Remedy(summary=f"Or downgrade (or upgrade) {dist_of(callee)} to the release "
                            f"{dist_of(caller) if caller else 'the calling code'} was written "
                            f"for{pin}: its requirements or changelog name it, and `pip check` "
                            "shows a requirement the installed one breaks.",
                            commands=["pip check"]))
    quotes = dedupe([raised.quote, *([stated.quote] if stated is not None else [])])
    parties = (f"between {dist_of(caller)} and {dist_of(callee)}" if caller and callee else
               f"into {dist_of(callee)}" if callee else f"from {dist_of(caller or '')}")
    return Signal("api_skew", Category.VERSION_CONFLICT,
                  f"{raised.kind}: {raised.message[:100]} — a call {parties} whose shape the "
                  "installed releases disagree on: the two sides were written against "
                  "different releases", quotes, RAISED_IN, fixes,
                  details={"caller": caller, "callee": callee})


# projects whose newer releases are not on the package index: where they are, and their source
# (thu-ml/SageAttention README: SageAttention 2 is built from the repository; the index holds
# sageattention up to 1.0.6, data/wheel_tags.json)
_ELSEWHERE = {"sageattention": ("SageAttention 2.x", "git+https://github.com/thu-ml/SageAttention.git")}


def _at_least(stated: str, newest: str) -> bool:
    try:
        return Version(stated) >= Version(newest)
    except InvalidVersion:
        return False
