"""The mechanisms written from held_out_28's development half, each on a text written for the
test: a GTX 10xx named by its number, SageAttention's own arch refusal answered with the app's
attention mode, a package installed into the system Python while the app runs its own, Docker
finding no image for the host's platform, and a question about installing a package for one
Python."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.gpus import GpuFinder


def test_a_gtx_10xx_by_its_number(matrix: Matrix) -> None:
    assert GpuFinder(matrix).names("it fails on my 1080ti") == [("GeForce GTX 1080ti", "6.1")]
    assert GpuFinder(matrix).names("File x.py, line 1070") == []


def test_sageattention_refusing_the_arch_names_the_attention_mode(matrix: Matrix) -> None:
    found = top("on a 1060 GPU: ValueError: Unsupported CUDA architecture: sm61\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "sdpa" in said(found)
    assert "unfused path" not in said(found)


def test_installed_globally_but_the_app_still_does_not_see_it(matrix: Matrix) -> None:
    found = top("I installed xformers globally with pip, but the webui still says it is not "
                "installed\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "-m pip" in said(found)


def test_docker_without_an_image_for_the_hosts_platform(matrix: Matrix) -> None:
    found = top("docker: no matching manifest for linux/arm64/v8 in the manifest list entries.\n",
                matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "x86_64" in said(found)


def test_a_question_about_one_python(matrix: Matrix) -> None:
    found = top("how can I install vllm on python 3.13?\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "container" in said(found)
