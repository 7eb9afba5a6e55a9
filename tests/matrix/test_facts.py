"""The rest of the matrix: defects' conditions, GPU names, drivers, torch APIs and SDPA ranges,
FA3/FA4/ROCm requirements - each expectation traced to the reference notes."""

from __future__ import annotations

from typing import Optional

import pytest
from packaging.version import Version

from fadoctor.facts.model import Family
from fadoctor.matrix import Matrix
from fadoctor.matrix.defects import Defect
from fadoctor.matrix.hardware import GpuSpec, resolve_gpu
from fadoctor.matrix.models import DriverVersion
from fadoctor.report import Category


def defect(matrix: Matrix, id_: str) -> Defect:
    return next(d for d in matrix.known_defects if d.id == id_)


# -- defects -------------------------------------------------------------------------------------

def test_conditions_are_three_valued(matrix: Matrix) -> None:
    d = defect(matrix, "cxx11abi-false-wheels-built-with-abi1")
    assert d.matches(Version("2.6.0"), cxx11_abi=False) is True
    assert d.matches(Version("2.6.0")) is None  # ABI unknown
    assert d.matches(Version("2.5.1"), cxx11_abi=False) is False  # a known fact rules it out
    assert d.matches(Version("2.5.1")) is False  # even while another is unknown
    assert d.matches(Version("2.6.0.dev20241001+cu124"), cxx11_abi=False) is True


def test_the_fatbin_defect_bites_below_driver_550(matrix: Matrix) -> None:
    # flash-attention #1749 (driver 535) and rapids-cmake: size-mode compression needs 550.54.14.
    d = defect(matrix, "fatbin-compression-needs-driver-550")
    assert d.affects(Version("2.8.1")) and not d.affects(Version("2.8.2"))
    assert d.applies(driver=DriverVersion("535.54.03"))
    assert not d.applies(driver=DriverVersion("550.54.14"))
    assert not d.applies()  # driver unknown: no verdict
    assert d.category == Category.DRIVER_TOO_OLD


def test_install_time_defects_never_condemn_an_installed_wheel(matrix: Matrix) -> None:
    d = defect(matrix, "cuda13-torch-asks-for-cu12")
    assert d.stage == "install"
    assert d.matches(torch_cuda=Version("13.0")) is True
    assert not d.applies(torch_cuda=Version("13.0"))
    assert d.affects(Version("2.8.3")) and not d.affects(Version("2.8.3.post1"))
    bug = defect(matrix, "torch21-any-cuda-asks-for-cu122")
    assert bug.matches(Version("2.1.2"), torch_cuda=Version("11.8")) is True
    assert bug.matches(Version("2.1.2"), torch_cuda=Version("12.1")) is False


def test_blackwell_defects_split_at_273_and_280(matrix: Matrix) -> None:
    refused, no_sass = (defect(matrix, "blackwell-refused-before-2.7.3"),
                        defect(matrix, "blackwell-kernels-missing-from-2.7.3-wheels"))
    b200, h100 = Version("10.0"), Version("9.0")
    assert refused.affects(Version("2.7.2.post1")) and refused.applies(cc=b200)
    assert not refused.applies(cc=h100)
    assert no_sass.affects(Version("2.7.4.post1")) and not no_sass.affects(Version("2.8.0"))
    assert no_sass.wheels_only and not refused.wheels_only
    gate = matrix.fa2_arch_gate[0]  # the check's own data agrees
    assert 10 not in gate.allowed_cc_majors  # 2.x's gate; 1.x had its own check (sm75, sm8x)
    assert all(gate.versions.contains(v) == refused.versions.contains(v)
               for v in ("2.0.0", "2.7.2", "2.7.3", "2.8.3"))


def test_every_defect_is_sourced_and_graded(matrix: Matrix) -> None:
    for d in matrix.known_defects:
        assert d.evidence, d.id
        assert d.family in (Family.FA2, Family.FA4), d.id  # the families with releases listed
        releases = matrix.flash_attn_releases if d.family == Family.FA2 else matrix.fa4_releases
        assert any(d.affects(r.version) for r in releases), d.id


# -- GPUs (torch_cuda_facts.md §3) ---------------------------------------------------------------

@pytest.mark.parametrize(("device", "name", "cc"), [
    ("NVIDIA H100 80GB HBM3", "H100", "9.0"), ("NVIDIA H100 PCIe", "H100", "9.0"),
    ("NVIDIA H200", "H200", "9.0"), ("NVIDIA GH200 480GB", "GH200", "9.0"),
    ("NVIDIA A100-SXM4-80GB", "A100", "8.0"), ("NVIDIA B200", "B200", "10.0"),
    ("NVIDIA GeForce RTX 5090", "GeForce RTX 5090", "12.0"), ("Tesla T4", "T4", "7.5"),
    ("Quadro RTX 5000", "Quadro RTX 5000", "7.5"),
    ("NVIDIA RTX 5000 Ada Generation", "RTX 5000 Ada", "8.9"),
    ("NVIDIA GeForce RTX 4060 Ti", "GeForce RTX 4060 Ti", "8.9"),
    ("NVIDIA L40S", "L40S", "8.9"), ("Tesla V100-SXM2-16GB", "V100", "7.0"),
    ("NVIDIA RTX A2000 12GB", "RTX A2000", "8.6"),
])
def test_device_names_resolve(matrix: Matrix, device: str, name: str, cc: str) -> None:
    found = matrix.gpu(device)
    assert found is not None and (found.name, str(found.cc)) == (name, cc)


@pytest.mark.parametrize(("device", "name", "cc"), [
    # variants NVIDIA's page does not list, each with its own source in the matrix
    ("NVIDIA A10G", "A10G", "8.6"), ("NVIDIA H800", "H800", "9.0"), ("NVIDIA H20", "H20", "9.0"),
    ("NVIDIA A800-SXM4-80GB", "A800", "8.0"), ("NVIDIA L20", "L20", "8.9"),
    ("NVIDIA GeForce RTX 2050", "GeForce RTX 2050", "8.6"),  # Ampere, despite its number
    # the legacy page's Jetson and Quadro rows; "Orin Nano" is not the Maxwell "Jetson Nano"
    ("Jetson AGX Xavier", "Jetson AGX Xavier", "7.2"), ("Xavier NX", "Jetson Xavier NX", "7.2"),
    ("Jetson Nano", "Jetson Nano", "5.3"), ("Jetson Orin Nano 8GB", "Jetson Orin Nano", "8.7"),
    ("Quadro P4000", "Quadro P4000", "6.1"),
])
def test_variants_off_nvidias_page_resolve(matrix: Matrix, device: str, name: str,
                                           cc: str) -> None:
    found = matrix.gpu(device)
    assert found is not None and (found.name, str(found.cc)) == (name, cc)
    assert found.source.strip()


@pytest.mark.parametrize("device", ["AMD Instinct MI300X", "NVIDIA A10GX", "H2000"])
def test_unlisted_gpus_stay_unknown(matrix: Matrix, device: str) -> None:
    assert matrix.gpu(device) is None


def test_a_tie_between_capabilities_resolves_to_nothing() -> None:
    gpus = [GpuSpec(name="X 1", pattern="Card", cc=Version("8.0"), source="t"),
            GpuSpec(name="X 2", pattern="card", cc=Version("9.0"), source="t")]
    assert resolve_gpu(gpus, "Card") is None
    same = [gpus[0], GpuSpec(name="X 3", pattern="CARD", cc=Version("8.0"), source="t")]
    found: Optional[GpuSpec] = resolve_gpu(same, "card")
    assert found is not None and found.cc == Version("8.0")


def test_no_gpu_claims_peaks_without_a_datasheet(matrix: Matrix) -> None:
    # Only a vendor datasheet may supply dense bf16/fp16 TFLOP/s; none is cited yet.
    assert all(g.dense_bf16_tflops is None and g.dense_fp16_tflops is None for g in matrix.gpus)


# -- CUDA drivers, torch --------------------------------------------------------------------------

def test_toolkit_updates_and_the_cuda_the_old_wheels_used(matrix: Matrix) -> None:
    kit = matrix.toolkit_driver(Version("12.9.1"))
    assert kit is not None and str(kit.min_driver) == "575.51.03"
    assert str(kit.updates["12.9.1"]) == "575.57.08"
    for cuda in ("11.3", "11.6"):  # the toolkits of the v2.0.0-v2.0.5 wheels
        assert matrix.toolkit_driver(Version(cuda)) is not None


def test_sdpa_ranges_cover_torch_20_to_215_only(matrix: Matrix) -> None:
    flash20 = matrix.sdpa_range("flash", Version("2.0.1"))
    assert flash20 is not None and (str(flash20.min_cc), str(flash20.max_cc)) == ("7.5", "8.9")
    assert flash20.max_head_dim == 128
    assert matrix.sdpa_range("efficient", Version("2.0.1")) is None  # "sm5x or greater": no max
    assert matrix.sdpa_range("flash", Version("2.16.0")) is None  # not inspected
    flash25 = matrix.sdpa_range("flash", Version("2.5.1"))
    assert flash25 is not None and str(flash25.vendored_fa2) == "2.5.7"


def test_torch_apis(matrix: Matrix) -> None:
    api = matrix.torch_api("torch.library.custom_op")
    assert api is not None and api.since == Version("2.4")
    kernel = matrix.torch_api("torch.backends.cuda.sdp_kernel")
    assert kernel is not None and kernel.deprecated == Version("2.4")
    assert matrix.torch_api("torch.backends.cuda.enable_flash_everywhere") is None


def test_torch_builds(matrix: Matrix) -> None:
    t26, t27 = matrix.torch_release(Version("2.6")), matrix.torch_release(Version("2.7"))
    assert t26 is not None and t27 is not None
    assert t26.platform_tag == "manylinux1" and t27.platform_tag == "manylinux_2_28"
    assert t26.arch_lists_unverified == ["cu118", "cu126"]
    t215 = matrix.torch_release(Version("2.15.0"))
    assert t215 is not None and t215.cuda_variants == ["cu132"]  # only its registry wheel was read
    assert t27.arch_lists_unverified == ["cu128"]  # "12.0" or "12.0+PTX": no source read
    assert matrix.torch_release(Version("2.16.0")) is None  # newer than the data


# -- FA3, FA4, ROCm ----------------------------------------------------------------------------

def test_fa3_and_fa4_requirements(matrix: Matrix) -> None:
    fa3 = matrix.requirements(Family.FA3)
    assert {str(r.min_nvcc) for r in fa3 if r.min_nvcc} == {"12.3"}
    assert {str(r.min_torch) for r in fa3 if r.min_torch} == {"2.4"}
    newest = matrix.fa4_releases[-1]
    assert (str(newest.version), newest.distribution) == ("4.0.0b36", "flash-attn-4")
    assert Version("3.9") not in newest.requires_python
    assert newest.extra_cu13 == ["nvidia-cutlass-dsl[cu13]>=4.6.2"]
    assert matrix.fa4_releases[0].distribution == "flash-attn4"  # beta0-2
    b7 = matrix.fa4_release(Version("4.0.0b7"))
    assert b7 is not None and b7.extra_cu13 and not matrix.fa4_releases[5].extra_cu13


def test_rocm_backends(matrix: Matrix) -> None:
    assert matrix.rocm_backends_for(Version("2.6.1")) == []  # CK arrives in v2.6.2
    ck = matrix.rocm_backends_for(Version("2.6.2"))
    assert [b.backend for b in ck] == ["ck"] and ck[0].max_head_dim_bwd == 128
    now = {b.backend: b for b in matrix.rocm_backends_for(Version("2.8.3"))}
    assert now["ck"].gpu_archs == ["gfx90a", "gfx942", "gfx950"]
    assert now["triton"].triton == "==3.2.0"
    assert now["triton"].enable_env == "FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE"
