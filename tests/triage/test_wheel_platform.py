"""A wheel refused for its tags: a Windows wheel refused on Windows is the wrong Python, a Linux
wheel refused by uv on Windows is the platform (uv's own hint names both tags)."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_a_windows_wheel_refused_on_windows_is_the_python_tag(matrix: Matrix) -> None:
    # written for this test: pip on Windows, a community win_amd64 wheel for CPython 3.11
    text = ("(venv) D:\\work\\project>pip install flash_attn-2.7.4-cp311-cp311-win_amd64.whl\n"
            "ERROR: flash_attn-2.7.4-cp311-cp311-win_amd64.whl is not a supported wheel on this "
            "platform.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.WRONG_WHEEL
    assert "cp311" in top.message
    assert any("python=3.11" in c for rem in top.remedies for c in rem.commands)


def test_a_linux_wheel_refused_by_uv_on_windows_is_the_platform(matrix: Matrix) -> None:
    # written for this test, in the shape uv prints (crates/uv-installer/src/plan.rs)
    text = ("error: Failed to determine installation plan\n  Caused by: A URL dependency is "
            "incompatible with the current platform: https://example.invalid/flash_attn-2.8.3-"
            "cp312-cp312-linux_x86_64.whl\n\nhint: The wheel is compatible with Linux "
            "(`linux_x86_64`), but you're on Windows (`win_amd64`)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.PLATFORM_UNSUPPORTED
    assert "linux_x86_64" in top.message and "win_amd64" in top.message
    said = " ".join(r.summary for r in top.remedies).lower()
    assert "win_amd64" in said and "sdpa" in said
