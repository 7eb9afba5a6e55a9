"""The static checks (FAD130-FAD134) on facts that hold a binary analysis: what each predicts, the
cause it names, and whether it agrees with the real import."""

from __future__ import annotations

from types import ModuleType
from typing import Any, List, Optional, Sequence

import pytest

from fadoctor.checks import BY_KEY
from fadoctor.evaluate import run_check
from fadoctor.facts.binaries import (
    BinaryAnalysis,
    ExtensionFile,
    Kernels,
    MissingSymbol,
    NeededLibrary,
    UnmetVersion,
)
from fadoctor.facts.model import (
    ExtensionImport,
    Facts,
    Failure,
    FailureKind,
    Family,
    FamilyImport,
    Files,
    Probe,
    TorchFiles,
)
from fadoctor.matrix import Matrix
from fadoctor.report import CheckResult, Finding, Status

SITE = "/opt/venv/lib/python3.11/site-packages"
VLLM_C = f"{SITE}/vllm_flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so"
FA2_C = f"{SITE}/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so"
OLD_ABI = "_ZN3c105ErrorC2ENS_14SourceLocationESs"
OLD_ABI_DEMANGLED = "c10::Error::Error(c10::SourceLocation, std::string)"
PAD_ENUM = "_ZN2at4_ops9_pad_enum4callERKNS_6TensorEN3c108ArrayRefINS5_6SymIntEEElNS5_8optionalIdEE"


def analysis(path: str, family: Optional[Family], module: str, *, missing_lib: str = "",
             symbols: Sequence[str] = (), string_abi: Optional[int] = None,
             unmet: Sequence[UnmetVersion] = (), kernels: Optional[Kernels] = None
             ) -> BinaryAnalysis:
    needed = [NeededLibrary(name="libc10.so", path=f"{SITE}/torch/lib/libc10.so", how="loaded")]
    if missing_lib:
        needed.append(NeededLibrary(name=missing_lib))
    return BinaryAnalysis(
        file=ExtensionFile(family=family, module=module, path=path), needed=needed,
        missing_symbols=[MissingSymbol(name=s, demangled=OLD_ABI_DEMANGLED if s == OLD_ABI
                                       else None) for s in symbols],
        missing_symbol_count=len(symbols), string_abi=string_abi, unmet_versions=list(unmet),
        kernels=kernels)


def with_binaries(facts: Facts, *binaries: BinaryAnalysis, static_abi: Optional[bool] = None,
                  mode: str = "full") -> Facts:
    files = Files(torch=TorchFiles(dir=f"{SITE}/torch", lib_dir=f"{SITE}/torch/lib",
                                   version="2.13.0+cu130", cuda="13.0", cxx11_abi=static_abi),
                  extensions=[b.file for b in binaries])
    update: dict[str, Any] = {"files": Probe.success(files),
                              "binaries": Probe.success(list(binaries)), "mode": mode}
    if mode == "static":
        update["torch"] = Probe.failed(Failure(kind=FailureKind.SKIPPED,
                                               reason="not imported (check --static)"))
    return facts.model_copy(update=update)


def base(build: ModuleType, gpus: Sequence[Any], family: Optional[Any] = None,
         torch_version: str = "2.13.0+cu130", cuda: str = "13.0", abi: bool = True) -> Facts:
    return build.facts(  # type: ignore[no-any-return]
        build.host(), build.packages(build.dist("torch", torch_version.split("+")[0], SITE)),
        build.driver("580.82.07", "13.0", gpus),
        build.torch(torch_version, cuda, "7.5;8.0;8.6;9.0;10.0;12.0", gpus, cxx11_abi=abi),
        flash=[family] if family is not None else [])


def result(check_id: str, facts: Facts, matrix: Matrix) -> CheckResult:
    return run_check(BY_KEY[check_id], facts, matrix)


def problems(check_id: str, facts: Facts, matrix: Matrix) -> List[Finding]:
    return [f for f in result(check_id, facts, matrix).findings if f.severity != "info"]


@pytest.fixture
def h100(build: ModuleType) -> Any:
    return build.gpu("NVIDIA H100 80GB HBM3", "9.0")


def vllm_family(build: ModuleType, probe: Probe[FamilyImport]) -> Any:
    return build.family(Family.VLLM_FA, "2.6.2", probe)


def test_vllm_fa_beside_a_cuda13_torch_predicts_both_failures(build: ModuleType, h100: Any,
                                                              matrix: Matrix) -> None:
    error = "libcudart.so.12: cannot open shared object file: No such file or directory"
    failed = build.import_failed(build.failed(error))
    binary = analysis(VLLM_C, Family.VLLM_FA, "vllm_flash_attn_2_cuda", missing_lib="libcudart.so.12",
                      symbols=[OLD_ABI, PAD_ENUM], string_abi=0)
    facts = with_binaries(base(build, [h100], vllm_family(build, failed)), binary)

    [lib] = problems("FAD130", facts, matrix)
    assert (lib.category, lib.subject) == ("cuda_runtime_mismatch", "vllm_flash_attn_2_cuda")
    assert "needs libcudart.so.12, which the dynamic loader will not find" in lib.message

    [sym] = problems("FAD131", facts, matrix)
    assert sym.category == "cxx11_abi_mismatch"
    assert "C++11 ABI = 0" in sym.message and OLD_ABI_DEMANGLED in sym.message
    assert sym.evidence["missing"] == [OLD_ABI, PAD_ENUM]

    agree = result("FAD134", facts, matrix)
    assert agree.status == Status.PASSED
    assert "the prediction matches the import (static: fails; import: fails: libcudart.so.12" \
        in agree.findings[0].message


def test_a_disagreement_is_reported_as_a_fadoctor_bug(build: ModuleType, h100: Any,
                                                      matrix: Matrix) -> None:
    failed = build.import_failed(build.failed(f"{FA2_C}: undefined symbol: {PAD_ENUM}"))
    fa2 = build.family(Family.FA2, "2.8.3", failed)
    clean = analysis(FA2_C, Family.FA2, "flash_attn_2_cuda")  # predicts a clean load
    facts = with_binaries(base(build, [h100], fa2), clean)

    [finding] = problems("FAD134", facts, matrix)
    assert (finding.severity, finding.category) == ("warning", "internal")
    assert "static: loads; import: fails" in finding.message and "fadoctor bug" in finding.message


def test_an_extension_imported_on_its_own_is_compared_too(build: ModuleType, h100: Any,
                                                          matrix: Matrix) -> None:
    ext = ExtensionImport(module="flash_attn_2_cuda", ok=True, file=FA2_C)
    ok = Probe.success(FamilyImport(module="flash_attn", extension=FA2_C, extensions=[ext]))
    fa2 = build.family(Family.FA2, "2.8.3", ok)
    binary = analysis(FA2_C, Family.FA2, "flash_attn_2_cuda", symbols=[PAD_ENUM])
    facts = with_binaries(base(build, [h100], fa2), binary)

    [finding] = problems("FAD134", facts, matrix)
    assert "static: fails; import: loads" in finding.message


def test_static_mode_reads_torchs_abi_from_its_files(build: ModuleType, h100: Any,
                                                     matrix: Matrix) -> None:
    fa2 = build.family(Family.FA2, "2.8.3", build.import_failed(build.failed("unused")))
    fa2 = fa2.model_copy(update={"imported": None})
    binary = analysis(FA2_C, Family.FA2, "flash_attn_2_cuda", symbols=[OLD_ABI], string_abi=0)
    facts = with_binaries(base(build, [h100], fa2), binary, static_abi=True, mode="static")

    [finding] = problems("FAD131", facts, matrix)
    assert finding.category == "cxx11_abi_mismatch"
    assert result("FAD111", facts, matrix).status == Status.SKIPPED
    assert result("FAD102", facts, matrix).status == Status.SKIPPED
    assert result("FAD134", facts, matrix).status == Status.SKIPPED


@pytest.mark.parametrize(("sass", "ptx", "cc", "runs"), [
    (["sm_80", "sm_90"], [], "9.0", True),
    (["sm_80"], [], "9.0", False),  # SASS runs only on its own major
    (["sm_80"], ["compute_80"], "9.0", True),  # PTX is JIT-compiled for newer GPUs
    (["sm_80", "sm_90"], [], "12.0", False),
    (["sm_90a"], [], "10.0", False),
])
def test_kernels_against_the_gpu(build: ModuleType, matrix: Matrix, sass: List[str],
                                 ptx: List[str], cc: str, runs: bool) -> None:
    gpu = build.gpu("GPU", cc)
    binary = analysis(FA2_C, Family.FA2, "flash_attn_2_cuda", kernels=Kernels(sass=sass, ptx=ptx))
    fa2 = build.family(Family.FA2, "2.8.3", build.imported("flash_attn", SITE))
    findings = problems("FAD133", with_binaries(base(build, [gpu], fa2), binary), matrix)
    assert not findings if runs else [f.category for f in findings] == ["no_kernel_image"]


def test_an_unmaintained_csrc_extension_without_blackwell_kernels(build: ModuleType,
                                                                  matrix: Matrix) -> None:
    # flash-attention#1966: csrc/layer_norm has no Blackwell kernels; the Triton one does.
    layer_norm = analysis(f"{SITE}/dropout_layer_norm.cpython-311-x86_64-linux-gnu.so", Family.FA2,
                          "dropout_layer_norm", kernels=Kernels(sass=["sm_80", "sm_90"]))
    fa2 = build.family(Family.FA2, "2.8.3", build.imported("flash_attn", SITE))
    facts = with_binaries(base(build, [build.gpu("NVIDIA GeForce RTX 5090", "12.0")], fa2),
                          layer_norm)
    [finding] = problems("FAD133", facts, matrix)
    assert finding.category == "no_kernel_image"
    assert any("flash_attn.ops.triton.layer_norm" in r.summary for r in finding.remedies)


def test_glibc_too_old_names_required_and_available(build: ModuleType, matrix: Matrix) -> None:
    a100 = build.gpu("NVIDIA A100-SXM4-80GB", "8.0")
    fa2 = build.family(Family.FA2, "2.8.3", build.imported("flash_attn", SITE))
    binary = analysis(FA2_C, Family.FA2, "flash_attn_2_cuda", unmet=[
        UnmetVersion(library="libc.so.6", version="GLIBC_2.32", available="GLIBC_2.31")])
    facts = with_binaries(base(build, [a100], fa2, torch_version="2.6.0+cu124", cuda="12.4",
                               abi=False), binary)
    [finding] = problems("FAD132", facts, matrix)
    assert finding.category == "glibc_too_old"
    assert "needs GLIBC_2.32 from libc.so.6; it provides up to GLIBC_2.31" in finding.message
    commands = [c for r in finding.remedies for c in r.commands]
    # The newest wheel for torch 2.6+cu124 (ABI 0) not built on Ubuntu 22.04: 2.7.4.post1.
    assert any("/v2.7.4.post1/flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311" in c
               for c in commands), commands


def test_facts_without_an_analysis_skip_the_static_checks(build: ModuleType, h100: Any,
                                                          matrix: Matrix) -> None:
    facts = base(build, [h100])
    for check_id in ("FAD130", "FAD131", "FAD132", "FAD133", "FAD134"):
        checked = result(check_id, facts, matrix)
        assert checked.status == Status.SKIPPED, check_id
        assert "static analysis" in (checked.skipped_reason or "")
