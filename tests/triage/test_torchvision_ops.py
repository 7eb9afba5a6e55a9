"""torchvision's compiled ops not loading beside the installed torch (its _assert_has_ops), with
the release pair from the wheel metadata, and a Python session's `>>> torch.__version__` answer
read as the installed torch."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.env_abi import repl_versions
from fadoctor.triage.observed import Observed
from fadoctor.triage.text import split

_OPS = ("RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and "
        "torchvision versions are incompatible\n")


def test_a_stated_pair_gets_the_torchvision_built_for_the_torch(matrix: Matrix) -> None:
    found = top("torch==2.5.1\ntorchvision==0.19.0\n" + _OPS, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert "torchvision==0.20.1" in said(found) and "torch==2.4.0" in said(found)


def test_a_nightly_torch_needs_the_nightly_torchvision(matrix: Matrix) -> None:
    found = top(">>> torch.__version__\n'1.14.0.dev20221110'\n" + _OPS, matrix)
    assert "1.14.0.dev20221110" in found.message and "nightly torchvision" in said(found)


def test_a_python_sessions_answer_is_the_installed_version() -> None:
    seen = Observed()
    repl_versions(split(">>> torch.__version__\n'2.3.1+cu121'\nIn [2]: xformers.__version__\n"
                        "Out[2]: '0.0.27'\n"), seen)
    assert seen.get("torch") == "2.3.1+cu121" and seen.packages["xformers"].value == "0.0.27"
