"""A report asking for a flash-attn wheel for a torch that no release publishes one for, and the
community wheels the matrix lists for such a torch (pure)."""

from __future__ import annotations

from typing import List, Optional

from fadoctor.install.wheels import newest_release_with_wheel
from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, Signal, dedupe

_WHEEL_WORDS = ("wheel", ".whl", "prebuilt", "pre-built", "precompiled", "pre-compiled",
                "\u7f16\u8bd1\u5305", "\u9884\u7f16\u8bd1")  # 编译包, 预编译: a compiled package
_FA_WORDS = ("flash-attn", "flash_attn", "flash attn", "flash-attention", "flash attention",
             "flashattention")


def no_wheel_for_torch(ctx: Context) -> List[Signal]:
    """The report asks for a flash-attn wheel for a torch no release has official wheels for
    (the matrix's wheel table): there is none to find; build it, or take a community wheel."""
    if ctx.torch is None or not ctx.text.containing(_WHEEL_WORDS) \
            or not ctx.text.containing(_FA_WORDS):
        return []
    minor = f"{ctx.torch.major}.{ctx.torch.minor}"
    stated = ctx.matrix.fa_release(ctx.fa2) if ctx.fa2 is not None else None
    if stated is not None and minor in stated.wheel_torch:
        return []
    newest = newest_release_with_wheel(ctx.matrix, ctx.torch)
    if stated is None and newest is not None:
        return []  # some release has wheels for this torch: not this mechanism's case
    which = f"flash-attn {stated.version}" if stated is not None else "no flash-attn release"
    fixes: List[Remedy] = [r.force_build(ctx, f"{which} has no official wheel for torch {minor}:"
                                         if stated is not None else
                                         f"No flash-attn release has an official wheel for torch "
                                         f"{minor}:")]
    community = community_wheel(ctx, minor)
    if community is not None:
        fixes.append(community)
    word = ctx.text.containing(_WHEEL_WORDS)[0]
    return [Signal("no_prebuilt_wheel", Category.WRONG_WHEEL,
                   f"{which} publishes an official wheel for torch {minor}"
                   if stated is None else f"flash-attn {stated.version}'s official wheels are for "
                   f"torch {', '.join(stated.wheel_torch)}, not {minor}: there is no wheel to find",
                   dedupe([ctx.quote(word), *ctx.quotes(o.TORCH)]), HINTED, fixes,
                   details={"source": "the matrix's flash_attn_releases (release assets)"})]


def community_wheel(ctx: Context, minor: str) -> Optional[Remedy]:
    """A community wheel for this torch minor (and CUDA variant, when stated)."""
    variant = ctx.torch_variant
    for group in ctx.matrix.community_wheels:
        platform = "linux_aarch64" if ctx.arm_host else "linux_x86_64"
        if group.platform != platform or group.family.value != "fa2":
            continue
        rows = [w for w in group.wheels if w[1] == minor
                and (variant is None or f"cu{w[2].replace('.', '')}" == variant)]
        python = f"cp{ctx.python.major}{ctx.python.minor}" if ctx.python else None
        rows = [w for w in rows if w[0] == python] or ([] if python else rows)
        if rows:
            row = rows[-1]
            return Remedy(summary=f"Or a community wheel of flash-attn {group.version} built for "
                          f"torch {minor} (third-party, by {group.repo}; pick the file of your "
                          f"Python and CUDA from its release {row[3]}), e.g. {row[4]}.",
                          commands=[f'pip install --no-deps "{group.url(row)}"'])
    return None
