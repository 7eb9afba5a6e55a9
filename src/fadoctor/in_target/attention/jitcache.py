"""A family's own persistent compile cache, kept in fadoctor's cache folder (outside the examined
environment), so that a second `check` does not pay flash-attn-4's first-call JIT again.

The parent names the folder (`jit_cache`) and what it knows of the machine (`jit_key`: the GPUs
and the driver); this side adds what only it knows cheaply: the family's distribution and
version, torch's version and CUDA. A folder is used by exactly one such combination, so a kernel
compiled for another driver, GPU, torch or family release is never loaded."""

import os
import re
from typing import Any, Dict, Optional


def enable(torch: Any, target: str, spec: Dict[str, Any], options: Dict[str, Any]) -> Optional[str]:
    """Point the family's compile cache at its folder (before the family is imported: it reads
    the variables then) and return the folder; None when there is no cache to use."""
    cache = spec.get("jit_cache")
    root = options.get("jit_cache")
    key = options.get("jit_key")
    if not cache or not root or not key:
        return None
    release = _release(spec)
    if release is None:
        return None
    parts = (target, release, "torch" + str(torch.__version__),
             "cuda" + str(getattr(torch.version, "cuda", None)), str(key))
    folder = os.path.join(str(root), re.sub(r"[^A-Za-z0-9._+-]+", "_", "-".join(parts))[:200])
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None  # no cache is slower, never wrong
    os.environ[cache["enable"]] = "1"
    os.environ[cache["dir"]] = folder
    return folder


def _release(spec: Dict[str, Any]) -> Optional[str]:
    from importlib import metadata

    for dist in spec.get("distributions", []):
        try:
            return "%s-%s" % (dist, metadata.version(dist))
        except metadata.PackageNotFoundError:
            continue
    return None
