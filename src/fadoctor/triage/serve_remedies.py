"""The fix for a catalogued message of a serving framework (vLLM's attention backend choice,
SGLang's backends, sgl-kernel's flash_attn), and for a module flash-attn-4 imports from an
nvidia-cutlass-dsl release that lacks it: the DSL release its beta pins that has it (pure)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fadoctor.matrix.families import Fa4Release
from fadoctor.report import Category, Remedy
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.context import Context

SERVING = ("vllm", "sglang", "sgl-kernel")
DSL = "nvidia-cutlass-dsl"
# Backends to offer instead, most general first; only those the entry's release lists are named.
VLLM_OTHERS = ("TRITON_ATTN", "XFORMERS", "FLASHINFER", "TORCH_SDPA")
SGLANG_OTHERS = ("triton", "flashinfer", "torch_native")


def _others(entry: Entry, preferred: Tuple[str, ...]) -> List[str]:
    return [b for b in preferred if b in entry.backends]


def _listed(names: Tuple[str, ...], most: int = 10) -> str:
    """A release's backend names, the first `most` of them (newer releases list 50)."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def vllm(ctx: Context, entry: Entry, category: Category) -> List[Remedy]:
    where = f"vLLM {entry.first}..{entry.last} ({entry.location})"
    others = _others(entry, VLLM_OTHERS)
    if category == Category.NOT_INSTALLED and "vllm" not in entry.printed.replace("-", "_"):
        return [Remedy(summary=f"{where} looked for the flash_attn package itself (these releases "
                       "use flash-attn rather than a bundled build): install the flash-attn "
                       "release built for this torch, or let vLLM run its other backend.")]
    if category == Category.NOT_INSTALLED:
        stated = ctx.package("vllm")
        return [Remedy(summary=f"{where} did not find vllm_flash_attn, the FlashAttention build "
                       "vLLM's wheel ships: reinstall the vLLM wheel itself (a source build "
                       "without its kernels, or a copy of vllm shadowing the wheel, lacks it).",
                       commands=[f'python -m pip install --force-reinstall --no-deps '
                                 f'"vllm=={stated.value}"'] if stated else [])]
    if category == Category.DTYPE_UNSUPPORTED and "kv-cache" in entry.printed.lower():
        return [Remedy(summary=f"{where}: FlashAttention here has no kernels for this KV-cache "
                       "dtype: serve with --kv-cache-dtype auto, or choose another backend.")]
    if category == Category.DTYPE_UNSUPPORTED:
        half = "" if "float16 or" not in entry.printed else " (or half on GPUs without bf16)"
        return [Remedy(summary=f"{where}: \"{entry.printed}\": serve with --dtype bfloat16"
                       f"{half}.")]
    pick = others[0] if others else None
    how = ("the VLLM_ATTENTION_BACKEND variable" if "env" in entry.switch else
           "the --attention-backend argument" if "cli" in entry.switch else "its backend setting")
    listed = f" (that release lists {_listed(entry.backends)})" if entry.backends else ""
    summary = (f"{where} will not run its FlashAttention backend here: \"{entry.printed}\". "
               f"Choose another backend with {how}{listed}"
               + (f", e.g. {pick}" if pick else "") + ", or run on a GPU the message accepts.")
    commands = [f"export VLLM_ATTENTION_BACKEND={pick}"] if pick and "env" in entry.switch else []
    return [Remedy(summary=summary, commands=commands)]


def sglang(ctx: Context, entry: Entry, category: Category) -> List[Remedy]:
    others = _others(entry, SGLANG_OTHERS)
    if category == Category.NOT_INSTALLED:
        stated = ctx.package("sgl-kernel")
        return [Remedy(summary=f"sgl-kernel ({entry.location}, {entry.first}..{entry.last}) could "
                       f"not load its FA4 kernels: \"{entry.printed}\". Reinstall the sgl-kernel "
                       "release your sglang requires, or start the server with another "
                       "--attention-backend" + (f" (e.g. {others[0]})" if others else "") + ".",
                       commands=[f'python -m pip install --force-reinstall --no-deps '
                                 f'"sgl-kernel=={stated.value}"'] if stated else [])]
    listed = "" if not entry.backends else \
        f" (choices every SGLang release accepts: {_listed(entry.backends)})" \
        if entry.source == "sgl-kernel" else f" (its choices at {entry.last}: " \
        f"{_listed(entry.backends)})"
    if "mm" in entry.switch:  # the vision encoder's attention, chosen by its own argument
        pick = next((b for b in ("triton_attn", "sdpa") if b in entry.backends), None)
        return [Remedy(summary=f"SGLang's vision attention ({entry.location}, {entry.first}.."
                       f"{entry.last}) refuses this GPU: \"{entry.printed}\". Start the server with "
                       "another --mm-attention-backend" + (f", e.g. --mm-attention-backend {pick}"
                                                           if pick else "") + listed
                       + ", or run on the GPU generation the message names.")]
    what = ("sgl-kernel's FlashAttention-3 kernels" if entry.source == "sgl-kernel" else
            "SGLang's FlashAttention backend")
    kv = ", or serve with --kv-cache-dtype auto" if "--kv-cache-dtype" in entry.printed else ""
    return [Remedy(summary=f"{what} ({entry.location}, {entry.first}..{entry.last}) refuse this "
                   f"GPU: \"{entry.printed}\". Start the server with another --attention-backend"
                   + (f", e.g. --attention-backend {others[0]}" if others else "") + listed
                   + f"{kv}, or run on the GPU generation the message names.")]


def serving(ctx: Context, entry: Entry, category: Category) -> List[Remedy]:
    return vllm(ctx, entry, category) if entry.source == "vllm" else \
        sglang(ctx, entry, category)


def _version(raw: Optional[str]) -> Optional[Version]:
    try:
        return Version(raw) if raw else None
    except InvalidVersion:
        return None


def _pin(ctx: Context) -> Tuple[Optional[str], Optional[SpecifierSet]]:
    """The flash-attn-4 beta (as `_beta` picks it) and its nvidia-cutlass-dsl requirement, as its
    pyproject.toml declares it (the matrix's fa4_releases, generated by tools/gen_fa4_betas.py)."""
    beta = _beta(ctx)
    if beta is None:
        return None, None
    spec = next((d[len(DSL):] for d in beta.dependencies if d.startswith(DSL + ">")
                 or d.startswith(DSL + "=") or d.startswith(DSL + "<")), None)
    try:
        return str(beta.version), SpecifierSet(spec) if spec is not None else None
    except InvalidSpecifier:
        return str(beta.version), None


def _relation(installed: Optional[Version], spec: SpecifierSet) -> str:
    if installed is None:
        return ""
    if spec.contains(installed, prereleases=True):
        return f"; the installed {DSL} {installed} satisfies that pin"
    lows = [Version(s.version) for s in spec if s.operator in (">=", "==", ">", "~=")]
    older = bool(lows) and installed < min(lows)
    return f"; the installed {DSL} {installed} is {'older' if older else 'newer'} than that pin"


def cutlass_missing(ctx: Context, entry: Entry) -> List[Remedy]:
    """`cutlass` itself is missing: the DSL requirement the beta declares, as declared."""
    beta, spec = _pin(ctx)
    if beta is None or spec is None:
        return []
    return [Remedy(summary=f"flash-attn-4 ({entry.first}..{entry.last}) imports cutlass, the "
                   f"CuTe DSL from {DSL}, which is not installed; flash-attn-4 {beta} declares "
                   f"{DSL}{spec} (flash_attn/cute/pyproject.toml): install that.",
                   commands=[f'python -m pip install "{DSL}{spec}"'])]


def cutlass_module(ctx: Context, entry: Entry) -> List[Remedy]:
    module = entry.printed.split("'")[1]
    beta, spec = _pin(ctx)
    stated = ctx.package(DSL)
    installed = _version(stated.value) if stated is not None else None
    held = f"{DSL} {entry.dsl_versions[0]}..{entry.dsl_versions[-1]} hold {module}"
    if beta is None or spec is None:
        return [Remedy(summary=f"{held}; install the release your flash-attn-4 declares.")]
    fits = [v for v in entry.dsl_versions if spec.contains(v, prereleases=True)]
    pinned = f"flash-attn-4 {beta} pins {DSL}{spec}{_relation(installed, spec)}"
    if not fits:
        return [Remedy(summary=f"{pinned}, and no {DSL} release in that range holds {module} "
                       f"(only {', '.join(entry.dsl_versions)}): what imports it was written for "
                       "another DSL; upgrade it to a release made for this flash-attn-4.")]
    return [Remedy(summary=f"{pinned}; {held}. Install {DSL} {fits[-1]}, the newest release in "
                   "the pin that holds it.",
                   commands=[f'python -m pip install "{DSL}=={fits[-1]}"'])]


def _beta(ctx: Context) -> Optional[Fa4Release]:
    """The flash-attn-4 beta the report states, else the newest published one the matrix knows."""
    stated = ctx.package("flash-attn-4", "flash-attn4")
    wanted = _version(stated.value) if stated else None
    releases = sorted(ctx.matrix.fa4_releases, key=lambda r: r.version)
    named = next((r for r in releases if r.version == wanted), None) if wanted else None
    return named or next((r for r in reversed(releases) if r.published), None)


def fa4_dependency(ctx: Context, module: str) -> List[Remedy]:
    """A non-DSL module flash-attn-4 imports: the requirement its beta declares for it, then the
    beta with all it declares."""
    beta = _beta(ctx)
    if beta is None:
        return []
    key = module.replace("_", "-").lower()
    dep = next((d for d in beta.dependencies if key in d.lower().replace("_", "-")), None)
    whole = Remedy(summary=f"flash-attn-4 {beta.version} declares {', '.join(beta.dependencies)} "
                   "(flash_attn/cute/pyproject.toml): installing the beta by pip brings them "
                   "all, nvidia-cutlass-dsl (the module `cutlass`) among them.",
                   commands=[f'python -m pip install "{beta.distribution}=={beta.version}"'])
    if dep is None:
        return [whole]
    return [Remedy(summary=f"flash-attn-4 {beta.version} imports {module} and declares {dep} "
                   "(flash_attn/cute/pyproject.toml): install it into this interpreter.",
                   commands=[f'python -m pip install "{dep}"']), whole]


def dsl_api(ctx: Context) -> List[Remedy]:
    """flash-attn-4 and nvidia-cutlass-dsl out of step (an API error between them): the DSL the
    stated beta declares, else the newest beta with the DSL it declares, installed together."""
    beta, spec = _pin(ctx)
    if beta is None:
        return []
    stated = ctx.package(DSL)
    installed = _version(stated.value) if stated is not None else None
    if ctx.package("flash-attn-4", "flash-attn4") is not None and spec is not None:
        return [Remedy(summary=f"flash-attn-4 {beta} declares {DSL}{spec} (flash_attn/cute/"
                       f"pyproject.toml){_relation(installed, spec)}: install the DSL it was "
                       "written for.", commands=[f'python -m pip install "{DSL}{spec}"'])]
    pinned = f'"{DSL}{spec}"' if spec is not None else DSL
    return [Remedy(summary=f"Upgrade flash-attn-4 and {DSL} together: the newest beta, {beta}, "
                   f"declares {pinned[1:-1] if spec is not None else DSL}; an older beta with a "
                   "newer DSL (or the reverse) fails like this.",
                   commands=[f'python -m pip install --upgrade "flash-attn-4=={beta}" {pinned}'])]
