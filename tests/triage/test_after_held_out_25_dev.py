"""The mechanisms written from held_out_25's development half, each on a text written for the
test: ROCm finding no GPU, a package's own extension not built, CUDA_HOME under build isolation,
releases newer than the index lists for this platform, NaN told as "Nan result", and
CTranslate2's compute-type, CPU-only and cuDNN 9 sub-library messages."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category


def _commands(found: object) -> str:
    return " ".join(c for r in found.remedies for c in r.commands)  # type: ignore[attr-defined]


def test_rocm_finding_no_gpu_is_rocm(matrix: Matrix) -> None:
    found = top("Installed the ROCm build on my Radeon RX 7900 XTX\nRuntimeError: No CUDA GPUs are "
                "available\n", matrix)
    assert found.category == Category.ROCM and "rocminfo" in _commands(found)


def test_a_packages_own_extension_not_built(matrix: Matrix) -> None:
    found = top("ImportError: cannot import name '_C' from 'segmenter'\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "pip install -e . --no-build-isolation -v" in _commands(found)


def test_cuda_home_said_set_means_the_isolated_torch(matrix: Matrix) -> None:
    found = top("pip install -e .\nOSError: CUDA_HOME environment variable is not set. Please set "
                "it to your CUDA install root.\nCUDA_HOME is definitely set in my environment\n",
                matrix)
    assert found.category == Category.BUILD_ISOLATION
    assert "--no-build-isolation" in _commands(found)


def test_cuda_home_with_no_isolation_flag_is_left_to_the_toolkit(matrix: Matrix) -> None:
    found = top("pip install -e . --no-build-isolation\nOSError: CUDA_HOME environment variable is "
                "not set. Please set it to your CUDA install root.\n", matrix)
    assert found.category != Category.BUILD_ISOLATION


def test_a_release_newer_than_the_index_lists_here(matrix: Matrix) -> None:
    found = top("ERROR: Could not find a version that satisfies the requirement xformers==0.0.33 "
                "(from versions: 0.0.20, 0.0.21, 0.0.22.post7)\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "xformers==0.0.22.post7" in _commands(found)


def test_on_a_mac_it_is_the_platform(matrix: Matrix) -> None:
    found = top("macOS 14 on a MacBook Pro (Intel)\nERROR: Could not find a version that satisfies "
                "the requirement torch==2.5.1 (from versions: 2.1.0, 2.2.2)\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED


def test_a_listed_newer_release_is_no_finding_of_this_kind(matrix: Matrix) -> None:
    from fadoctor.triage.diagnose import triage
    result = triage("ERROR: Could not find a version that satisfies the requirement torch==2.1.0 "
                    "(from versions: 2.4.0, 2.5.1)\n", matrix)
    assert all("the index offers" not in d.message for d in result.diagnosis)


def test_nan_told_as_a_result(matrix: Matrix) -> None:
    found = top("GPU: Tesla V100\nWhen I set precision fp16 for inference I get Nan result\n",
                matrix)
    assert found.category == Category.NUMERICS


def test_ctranslate2_float16_on_an_old_gpu(matrix: Matrix) -> None:
    found = top("GPU: GeForce GTX 1060\nmodel = WhisperModel(path, device=\"cuda\", "
                "compute_type=\"float16\")\nValueError: Requested float16 compute type, but the "
                "target device or backend do not support efficient float16 computation.\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "GTX 1060" in found.message and 'compute_type="int8"' in said(found)


def test_ctranslate2_cpu_only_wheel(matrix: Matrix) -> None:
    found = top("ValueError: This CTranslate2 package was not compiled with CUDA support\n", matrix)
    assert found.category == Category.WRONG_WHEEL


def test_cudnn_9_sublibrary_not_on_the_loader_path(matrix: Matrix) -> None:
    found = top("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, "
                "libcudnn_ops.so.9, libcudnn_ops.so}\nInvalid handle. Cannot load symbol "
                "cudnnCreateTensorDescriptor\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "cuDNN 9" in found.message and "nvidia.cudnn" in _commands(found)
