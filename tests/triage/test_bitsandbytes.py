"""bitsandbytes without a binary for torch's CUDA (its own warning names the file it looked for):
the CUDA is read from the file name, and the remedy is a newer bitsandbytes, not flash-attn."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


@pytest.mark.parametrize("name, cuda", [("libbitsandbytes_cuda128.dll", "12.8"),
                                        ("libbitsandbytes_cuda118.so", "11.8"),
                                        ("libbitsandbytes_cuda130.so", "13.0")])
def test_the_missing_binary_names_its_cuda(name: str, cuda: str, matrix: Matrix) -> None:
    text = (f"Could not find the bitsandbytes CUDA binary at PosixPath('/v/site-packages/"
            f"bitsandbytes/{name}')\nThe installed version of bitsandbytes was compiled without "
            "GPU support.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.WRONG_WHEEL and f"CUDA {cuda} " in top.message
    assert top.remedies[0].commands[0].endswith("pip install --upgrade bitsandbytes")
