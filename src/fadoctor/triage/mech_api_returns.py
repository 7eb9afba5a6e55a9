"""A caller unpacking a flash-attn function's result into as many names as another release
returned ("qkv, indices, cu_q_lens, max_s = unpad_input(...)" under 2.7, whose unpad_input
returns five): the releases returning each count, from data/flash_attn_api.yaml (`returns`, read
by tools/gen_fa_api.py at every release tag) (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage.api_tables import Api, api
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import OTHERS
from fadoctor.triage.signal import LOGGED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

# CPython's unpacking errors (Python/ceval.c, unpack_iterable)
_UNPACK = re.compile(r"(too many|not enough) values to unpack \(expected (\d+)(?:, got (\d+))?\)")
_CALL = re.compile(r"=\s*(?:[\w.]+\.)?(\w{1,60})\(")
_WINDOW = 4  # traceback lines above the error that may show the call


def unpacked(ctx: Context) -> List[Signal]:
    data: Optional[Api] = None
    for index, found in ctx.find(_UNPACK, ("values to unpack",)):
        data = data or api("flash_attn")
        for line in range(index, max(-1, index - _WINDOW), -1):
            call = _CALL.search(ctx.text.lines[line])
            counts = _returns(data, call.group(1)) if call else None
            if call and counts:
                signal = _signal(ctx, data, call.group(1), counts, found,
                                 [ctx.quote(index), ctx.quote(line)])
                return [signal] if signal is not None else []
    return []


def _spans(data: Api, tags: Tuple[int, ...]) -> str:
    """Release indexes as version ranges ("2.0.0-2.6.3, 2.7.0-2.8.3")."""
    runs: List[List[int]] = []
    for i in sorted(tags):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(data.version(a) if a == b else f"{data.version(a)}-{data.version(b)}"
                     for a, b in runs)


def _returns(data: Api, function: str) -> Optional[Dict[int, Tuple[int, ...]]]:
    """The function's return counts by release (one function of that name with more than one)."""
    keys = [k for k in data.returns if k.rsplit(":", 1)[1] == function]
    if len(keys) != 1 or len(data.returns[keys[0]]) < 2:
        return None
    return {int(n): tags for n, tags in data.returns[keys[0]].items()}


def _signal(ctx: Context, data: Api, function: str, counts: Dict[int, Tuple[int, ...]],
            found: re.Match[str], quotes: List[Quote]) -> Optional[Signal]:
    expected = int(found.group(2))
    got = int(found.group(3)) if found.group(3) else None
    wanted = counts.get(expected)
    now = [n for n in counts if (n == got if got is not None else
                                 (n > expected if found.group(1) == "too many" else n < expected))]
    if wanted is None or not now:
        return None
    have = now[0]
    last = data.version(max(wanted))
    spans = "; ".join(f"{n} in flash-attn {_spans(data, tags)}" for n, tags in sorted(
        counts.items(), key=lambda kv: kv[1][0]))
    installed = ctx.fa2
    pin = Version(last)
    fixes = [Remedy(summary=f"Unpack {have} values where the code calls {function} (the "
                    f"installed flash-attn returns {have}), or have the caller updated for it.")]
    if installed is None or installed > pin:
        fixes.append(Remedy(summary=f"Or pin flash-attn {last}, the last release whose {function} "
                            f"returns {expected} as the code expects (a downgrade).",
                            commands=[f'pip install "flash-attn=={last}" --no-build-isolation']))
    return Signal("api_returns", Category.VERSION_CONFLICT,
                  f"the code unpacks {expected} values from flash-attn's {function}, which returns "
                  f"{have} in the installed release ({spans})",
                  dedupe([*quotes, *([q] if (q := ctx.fa_quote()) else [])]),
                  NAMED if installed is not None else LOGGED, fixes,
                  details={"source": data.source + " (returns)"})


# pybind11's refusal of a call to a compiled function (pybind11/pybind11.h, dispatcher:
# "{name}(): incompatible function arguments. The following argument types are supported:")
_PYBIND = re.compile(r"\b(\w{1,60})\(\): incompatible function arguments")


def incompatible_arguments(ctx: Context) -> List[Signal]:
    """Python code calling a compiled extension's function with another release's arguments
    (mamba-ssm's code against a causal-conv1d whose causal_conv1d_fwd changed): the Python
    side and the extension come from releases that do not go together."""
    hit = ctx.first(_PYBIND, ("incompatible function arguments",))
    if hit is None:
        return []
    function = hit[1].group(1)
    owner = next((dist for top, dist in sorted(OTHERS.items(), key=lambda kv: -len(kv[0]))
                  if function.startswith(top)), None)
    if owner is None and function in ("fwd", "bwd", "varlen_fwd", "varlen_bwd", "fwd_kvcache"):
        owner = "flash-attn"
    if owner is None:
        return []
    return [Signal("pybind_arguments", Category.VERSION_CONFLICT,
                   f"the Python code calls {owner}'s compiled {function} with the arguments of "
                   "another release of it (pybind11 checks each call against the compiled "
                   "signature): the calling code and the installed extension do not go together",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Install the {owner} release the calling code was written "
                           f"for: if the caller (another package, or a project's pinned code) is "
                           f"older, downgrade {owner} to its release of that time; if {owner}'s "
                           "own Python files are older than its binary, reinstall it whole. "
                           "Its version, and the caller's requirements, name the pair to pin.",
                           commands=[f"pip show {owner}"])],
                   details={"source": "pybind11's dispatcher message"})]


# transformers 4.35.0 changed its gradient-checkpointing hooks' signatures and calls them with the
# new keywords (modeling_utils.py: "def gradient_checkpointing_enable(self,
# gradient_checkpointing_kwargs=None)" calling "self._set_gradient_checkpointing(enable=True,
# gradient_checkpointing_func=...)"; trainer.py: "self.model.gradient_checkpointing_enable(
# gradient_checkpointing_kwargs=...)"; 4.34.1 had gradient_checkpointing_enable(self) and
# _set_gradient_checkpointing(module, value) applied per module; read from both wheels). A model
# class that overrides either hook with the old signature (remote code, a project's wrapper)
# fails under 4.35+.
_HOOK = re.compile(r"(?:(\w+)\.)?(gradient_checkpointing_enable|_set_gradient_checkpointing)\(\) "
                   r"got an unexpected keyword argument '(gradient_checkpointing_kwargs|enable|"
                   r"gradient_checkpointing_func)'")
_HOOKS_CHANGED = "4.35.0"
_BEFORE = "4.34.1"


def checkpointing_hooks(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HOOK, ("got an unexpected keyword argument",))
    if hit is None or ctx.text.containing(("diffusers",)):
        return []  # diffusers' own hooks changed in its own releases: not transformers' table
    owner, hook = hit[1].group(1) or "the model class", hit[1].group(2)
    if hook == "_set_gradient_checkpointing" and not ctx.text.containing(("transformers",)):
        return []  # enable= is also diffusers' signature: transformers must be the caller shown
    new = ("gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None)"
           if hook == "gradient_checkpointing_enable" else
           "_set_gradient_checkpointing(self, enable=True, gradient_checkpointing_func=None)")
    return [Signal("checkpointing_hooks", Category.VERSION_CONFLICT,
                   f"{owner} overrides transformers' {hook} with the signature it had before "
                   f"{_HOOKS_CHANGED}; transformers {_HOOKS_CHANGED} and later call it with "
                   f"'{hit[1].group(3)}'", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Pin transformers {_BEFORE}, the last release calling the "
                           "hooks the old way, in the environment that runs the training (or "
                           "the release the model's code lists).",
                           commands=[command("python", "-m", "pip", "install",
                                             requirement("transformers", _BEFORE))]),
                    Remedy(summary=f"Or update {owner}'s code (a newer release of the model or "
                           f"project) to the new signature, {new}.")])]
