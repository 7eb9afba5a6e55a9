"""fadoctor: a compatibility doctor for PyTorch + flash-attention environments.

`fadoctor.check()`, `fadoctor.preflight()` and `fadoctor.PreflightError` are the Python API
(fadoctor.api, docs/python-api.md); they load on first use, so `import fadoctor` stays cheap
(not even `typing` is imported here).
"""

__version__ = "0.1.0"
__all__ = ["PreflightError", "__version__", "check", "preflight"]

TYPE_CHECKING = False  # mypy reads `if TYPE_CHECKING:` by name, without importing typing
if TYPE_CHECKING:
    from fadoctor.api import PreflightError, check, preflight

_API = ("check", "preflight", "PreflightError")


def __getattr__(name: str) -> object:
    if name in _API:
        from fadoctor import api

        return getattr(api, name)
    raise AttributeError(f"module 'fadoctor' has no attribute {name!r}")
