"""Mechanisms added in session 48, each on the message as its program prints it: xformers'
backward refused on GPUs above sm80 (its reasons shown, or cut from the report), a package run
from inside its own source folder, llama-cpp-python built for the CPU."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

XFORMERS_SMEM = """\
NotImplementedError: No operator found for `memory_efficient_attention_backward` with inputs:
     query       : shape=(2, 4096, 8, 80) (torch.float32)
     key         : shape=(2, 4096, 8, 80) (torch.float32)
`cutlassB` is not supported because:
    Sm86 does not have enough shared-memory to run this kernel - see \
https://github.com/facebookresearch/xformers/issues/517
`flshattB` is not supported because:
    dtype=torch.float32 (supported: {torch.float16, torch.bfloat16})
    Sm86 does not have enough shared-memory to run this kernel - see \
https://github.com/facebookresearch/xformers/issues/517
"""

XFORMERS_CUT = """\
NotImplementedError: No operator found for `memory_efficient_attention_backward` with inputs:
 aimg train-concept --person
Running {gpu} 24GB, CUDA works as far as I can tell
  File "/usr/lib/python3.10/site-packages/torch/autograd/__init__.py", line 200, in backward
NotImplementedError: No operator found for `memory_efficient_attention_backward` with inputs:
...
"""


def test_xformers_backward_refused_for_shared_memory_above_sm80(matrix: Matrix) -> None:
    found = top(XFORMERS_SMEM, matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert "shared memory" in found.message and "float16" in said(found)


def test_xformers_backward_with_its_reasons_cut_on_a_consumer_ampere(matrix: Matrix) -> None:
    found = top(XFORMERS_CUT.format(gpu="RTX 3090"), matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert "pip uninstall -y xformers" in said(found)


def test_xformers_backward_cut_on_an_a100_is_not_called_a_shared_memory_limit(matrix: Matrix
                                                                               ) -> None:
    result = triage(XFORMERS_CUT.format(gpu="A100"), matrix)
    assert not any("shared memory" in f.message for f in result.diagnosis)


VLLM_TREE = """\
ImportError: cannot import name 'activation_ops' from 'vllm'
Our run command is: python3 -m vllm.entrypoints.api_server
{where}
"""


def test_a_package_run_from_its_own_source_folder(matrix: Matrix) -> None:
    found = top(VLLM_TREE.format(where="We ran it in the vllm-main folder."), matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "cd to another directory" in said(found)
    found = top(VLLM_TREE.format(where="I launched it from the vllm repo root"), matrix)
    assert found.category == Category.NOT_INSTALLED


def test_a_file_missing_in_the_package_folder_is_not_a_run_from_the_source(matrix: Matrix
                                                                           ) -> None:
    result = triage(VLLM_TREE.format(where="Some files are missing in the vllm directory."),
                    matrix)
    assert not any("source folder" in f.message for f in result.diagnosis)


LLAMA = """\
I updated llama-cpp-python and now the GPU is not used.
AVX = 1 | AVX2 = 1 | AVX512 = 0 | FMA = 1 | NEON = 0 | ARM_FMA = 0 | F16C = 1 | BLAS = 0 | SSE3 = 1 |
llm_load_tensors: offloaded 0/33 layers to GPU
"""


def test_llama_cpp_python_built_for_the_cpu(matrix: Matrix) -> None:
    found = top(LLAMA, matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "-DGGML_CUDA=on" in said(found) and "--force-reinstall" in said(found)


def test_blas_off_without_llama_cpp_python_says_nothing_of_it(matrix: Matrix) -> None:
    result = triage("numpy config: BLAS = 0\nthe GPU is idle\n", matrix)
    assert not any("llama-cpp-python" in f.message for f in result.diagnosis)


COMFY_SAGE = """\
i have installed sageattention {version}
Patching comfy attention to use sageattn
!!! Exception during processing !!! cannot import name 'sageattn_qk_int8_pv_fp16_triton' from \
'sageattention' (D:\\ai\\ComfyUI\\python\\lib\\site-packages\\sageattention\\__init__.py)
Traceback (most recent call last):
  File "D:\\ai\\ComfyUI\\custom_nodes\\ComfyUI-KJNodes\\nodes\\model_optimization_nodes.py", \
line 138, in patch
"""


def test_comfyui_s_logged_exception_is_read_and_nothing_newer_is_on_the_index(matrix: Matrix
                                                                              ) -> None:
    """ComfyUI logs the exception's text without its class; sageattention's newest release on
    the index is 1.0.6, so "upgrade" would change nothing: the newer releases are built from the
    repository."""
    for version in ("1.0.6", "(some version)"):
        found = top(COMFY_SAGE.format(version=version), matrix)
        assert found.category == Category.VERSION_CONFLICT
        assert "1.0.6" in found.remedies[0].summary
        assert "git+https://github.com/thu-ml/SageAttention.git" in said(found)


def test_an_older_release_than_the_newest_listed_is_upgraded(matrix: Matrix) -> None:
    found = top(COMFY_SAGE.format(version="1.0.2").replace("i have installed sageattention 1.0.2",
                                                           "sageattention==1.0.2"), matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "--upgrade sageattention" in said(found) and "(installed" not in said(found)


LIGER = """\
[rank0]:   File "/usr/local/lib/python3.12/dist-packages/liger_kernel/transformers/auto_model.py", \
line 33, in from_pretrained
[rank0]:     apply_fn = MODEL_TYPE_TO_APPLY_LIGER_FN[model_type]
[rank0]: KeyError: '{key}'
"""


def test_a_library_s_table_of_model_types_without_the_model(matrix: Matrix) -> None:
    for key in ("gemma3", "gemma3_text"):
        found = top(LIGER.format(key=key), matrix)
        assert found.category == Category.VERSION_CONFLICT
        assert "--upgrade liger-kernel" in said(found) and "4.50" in found.message


def test_a_key_that_is_no_model_type_is_not_read_as_one(matrix: Matrix) -> None:
    result = triage(LIGER.format(key="learning_rate"), matrix)
    assert not any("model types" in f.message for f in result.diagnosis)


PY36_IMPORT = """\
ImportError: cannot import name 'NVRTCMode'
Traceback (most recent call last):
  File "/opt/conda/lib/python3.6/site-packages/spconv/constants.py", line 19, in <module>
    from cumm.gemm.constants import NVRTCMode
"""


def test_python_3_6_s_import_error_names_its_module_on_the_import_line(matrix: Matrix) -> None:
    found = top(PY36_IMPORT, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "--upgrade cumm" in said(found)


TRITON_CC = """\
yes this CC is set.
`['{cc}', 'C:\\\\Users\\\\me\\\\AppData\\\\Local\\\\Temp\\\\tmpjcqv\\\\cuda_utils.c', '-O3', '-shared', \
'-fPIC', '-o', 'C:\\\\Users\\\\me\\\\AppData\\\\Local\\\\Temp\\\\tmpjcqv\\\\cuda_utils.pyd', '-lcuda']`
"""


def test_triton_s_launcher_built_with_cc_naming_a_folder(matrix: Matrix) -> None:
    folder = "C:\\\\Program Files\\\\MSVC\\\\14.42\\\\bin\\\\Hostx64\\\\x64"
    found = top(TRITON_CC.format(cc=folder), matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "cl.exe" in said(found) and "Remove-Item Env:CC" in said(found)


def test_triton_s_launcher_built_with_a_compiler_is_not_a_folder(matrix: Matrix) -> None:
    for cc in ("C:\\\\Program Files\\\\MSVC\\\\bin\\\\Hostx64\\\\x64\\\\cl.exe", "/usr/bin/gcc-12"):
        result = triage(TRITON_CC.format(cc=cc), matrix)
        assert not any("not a compiler" in f.message for f in result.diagnosis)


FP8 = ("Hi, when launching this on {gpu} with torch 2.7.1 + CUDA 12.8 I get\n"
       "ERROR: fast fp8 ops is not supported\n")


def test_a_program_s_fp8_check_older_than_a_gpu_with_fp8(matrix: Matrix) -> None:
    found = top(FP8.format(gpu="RTX 5090"), matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "git pull" in said(found)


def test_fp8_refused_on_a_gpu_without_fp8_is_not_a_stale_check(matrix: Matrix) -> None:
    result = triage(FP8.format(gpu="RTX 3090"), matrix)
    assert not any("predates this GPU" in f.message for f in result.diagnosis)
