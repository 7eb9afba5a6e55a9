"""`f() missing 1 required positional argument: 'x'` against flash-attn's and transformers'
signatures at every release (data/flash_attn_api.yaml, data/transformers_api.yaml): a release
made x required and the caller was written for the ones before, or x was required only up to a
release and the caller was written for the ones after (pure)."""

from __future__ import annotations

from typing import List, Optional

from fadoctor.report import Remedy
from fadoctor.triage.api_tables import Api
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api import _MISSING, _caller, _package, _pin, _signal, _upgrade
from fadoctor.triage.signal import Signal


def required(ctx: Context) -> List[Signal]:
    """`f() missing 1 required positional argument: 'x'`: a release made x required and the
    caller was written for the releases before."""
    for index, found in ctx.find(_MISSING, ("required",)):
        function, argument = found.groups()
        data = _package(ctx, index, function)
        if data is None:
            continue
        have = sorted({i for key in data.functions(function)
                       for i in data.required.get(key, {}).get(argument, ())})
        if not have:
            continue
        if have[0] == 0:  # required from the first release on: the caller may be for a later one
            signal = _required_until(ctx, index, data, function, argument, have[-1])
            if signal is not None:
                return [signal]
            continue
        before = data.version(have[0] - 1)
        caller = _caller(ctx, index, "flash_attn") or "the caller"
        message = (f"{data.dist} {data.version(have[0])} made {argument!r} a required argument of "
                   f"{function}(); {caller} was written for {data.dist} {before} or earlier")
        fixes = [Remedy(summary=f"Downgrade {data.dist} to {before} (<= {before}), the last release "
                        f"whose {function}() {caller} calls correctly, or upgrade {caller} to a "
                        f"release that passes {argument!r}.",
                        commands=[_pin(data, before)])]
        return [_signal(ctx, index, message, fixes, data)]
    return []


def _required_until(ctx: Context, index: int, data: Api, function: str, argument: str,
                    last: int) -> Optional[Signal]:
    """Required up to a release and not after it: the caller calls the later API (flash-attn
    2.0's flash_attn_func(q, k, v) on 1.x's, which needs cu_seqlens and max_s)."""
    if last + 1 >= len(data.tags):
        return None
    after = data.version(last + 1)
    caller = _caller(ctx, index, "flash_attn") or "the caller"
    message = (f"{function}() requires {argument!r} up to {data.dist} {data.version(last)}; "
               f"{caller} calls the API of {after} and later, so the installed {data.dist} is "
               "older than it was written for")
    fixes = [Remedy(summary=f"Upgrade {data.dist} to {after} or later (the release whose "
                    f"{function}() no longer takes {argument!r}), built for this torch.",
                    commands=[_upgrade(data, after)])]
    return _signal(ctx, index, message, fixes, data)
