"""fadoctor where people train: `preflight_on_rank0()`, the one line for plain PyTorch and
accelerate scripts, and `FadoctorCallback` (fadoctor.integrations.hf), a transformers
TrainerCallback. Importing this package imports neither torch nor transformers."""

from fadoctor.integrations.ranks import preflight_on_rank0, rank

__all__ = ["FadoctorCallback", "preflight_on_rank0", "rank"]


def __getattr__(name: str) -> object:
    if name == "FadoctorCallback":  # imports transformers: only when asked for
        from fadoctor.integrations.hf import FadoctorCallback

        return FadoctorCallback
    raise AttributeError(f"module 'fadoctor.integrations' has no attribute {name!r}")
