"""NumPy against what was written or built for another NumPy (pure):
- a numpy name a release removed (data/numpy_expired.yaml, tools/gen_numpy_expired.py from
  numpy's wheels: the builtin aliases np.float ... gone in 1.24.0, numpy 2.0.0's
  __expired_attributes__ with NumPy's own migration note);
- a compiled module built against NumPy 1.x under NumPy 2 (numpy==2.0.0:numpy/core/
  _multiarray_umath.py: "A module that was compiled using NumPy 1.x cannot be run in NumPy
  {short_version} ... downgrade to 'numpy<2' or try to upgrade the affected module"), and what
  follows it ("_ARRAY_API not found", "numpy.core.multiarray failed to import", torch's "Numpy is
  not available");
- a compiled module built against a newer NumPy than the one installed ("numpy.dtype size changed,
  may indicate binary incompatibility")."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List

from fadoctor.report import Category, Remedy
from fadoctor.triage import data_yaml
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.signal import LOGGED, NAMED, Signal, dedupe

_DATA = Path(__file__).resolve().parent.parent / "data" / "numpy_expired.yaml"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "numpy_expired.yaml"
_ATTR = re.compile(r"module ['\"]numpy['\"] has no attribute ['\"](\w{1,40})['\"]")
_NUMPY_2 = re.compile(r"compiled using NumPy 1\.x cannot be run in\s*(?:NumPy (\d+\.\d+\.\d+))?|"
                      r"_ARRAY_API not found|numpy\.core\.multiarray failed to import|"
                      r"\bNumpy is not available\b")
_DTYPE_SIZE = re.compile(r"numpy\.(?:dtype|ufunc|ndarray) size changed, may indicate binary "
                         r"incompatibility")
_NO_NUMPY = re.compile(r"No module named ['\"]numpy['\"]")


@lru_cache(maxsize=1)
def expired() -> Dict[str, Dict[str, str]]:
    path = _DATA if _DATA.is_file() else _SOURCE_TREE
    loaded: Dict[str, Any] = data_yaml.load(path)
    removed: Dict[str, Dict[str, str]] = loaded["removed"]  # release -> name -> NumPy's note
    return {**removed, "source": loaded["source"]}  # "source": release -> where it was read


def removed_name(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ATTR, ("has no attribute",))
    if hit is None:
        return []
    name = hit[1].group(1)
    table = expired()
    release = next((r for r in ("1.24.0", "2.0.0") if name in table[r]), None)
    if release is None:
        return []
    caller = frame_package(ctx, hit[0], ("numpy",), after=3)
    who = caller or "the code using it"
    below = ".".join(release.split(".")[:2])
    return [Signal("numpy_removed", Category.VERSION_CONFLICT,
                   f"numpy {below} removed np.{name}, which {who} still uses: it was written for "
                   "an older numpy", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Pin numpy below {below} for this code, or upgrade {who} to "
                           f"a release written for the newer numpy.",
                           commands=[f'pip install "numpy<{below}"']),
                    Remedy(summary=f"In code of your own: {table[release][name]}")],
                   details={"source": table["source"][release]})]


def numpy_2_abi(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NUMPY_2, ("numpy 1.x", "_array_api", "multiarray failed", "numpy is not"))
    if hit is None:
        return []
    missing = ctx.first(_NO_NUMPY, ("no module named",))
    if missing is not None:  # torch's "Failed to initialize NumPy: No module named 'numpy'"
        return [Signal("numpy_missing", Category.NOT_INSTALLED,
                       "numpy is not installed in this environment, so torch's NumPy bridge is off",
                       dedupe([ctx.quote(missing[0]), ctx.quote(hit[0])]), LOGGED,
                       [Remedy(summary="Install numpy into the Python that runs it.",
                               commands=["pip install numpy"])])]
    caller = frame_package(ctx, hit[0], ("numpy",), after=20)
    who = caller or "a compiled module"
    return [Signal("numpy_2_abi", Category.VERSION_CONFLICT,
                   f"{who} was compiled against NumPy 1.x, and NumPy 2 is installed: its binary "
                   "cannot use it", dedupe([ctx.quote(hit[0]), *ctx.quotes("numpy")]), LOGGED,
                   [Remedy(summary="Downgrade to numpy<2 (NumPy's own advice), or upgrade the "
                           "affected module to a build compiled with NumPy 2.",
                           commands=['pip install "numpy<2"'])],
                   details={"source": "numpy==2.0.0:numpy/core/_multiarray_umath.py"})]


def dtype_size(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DTYPE_SIZE, ("size changed",))
    if hit is None:
        return []
    caller = frame_package(ctx, hit[0], ("numpy",), after=3)
    who = caller or "a compiled module"
    return [Signal("numpy_abi", Category.VERSION_CONFLICT,
                   f"{who} was compiled against another NumPy than the one installed (its "
                   "structures' sizes differ): built for a newer NumPy, or for 2.x under 1.x",
                   [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary=f"Upgrade numpy to the release {who} was built against (its "
                           "requirements say), or reinstall it built for this numpy.",
                           commands=["pip install --upgrade numpy"])])]
