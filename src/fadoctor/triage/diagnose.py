"""`triage(text, matrix) -> Triage`: parse, build partial facts, run the checks and the error
signatures, merge them and put the most likely cause first, saying why (pure)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple, Union

from fadoctor import __version__
from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts
from fadoctor.install.into import (
    NOT_NAMED,
    UNKNOWN,
    finding_into,
    installer_of,
    installer_of_report,
    named_in,
    results_into,
    shell_of,
)
from fadoctor.matrix import Matrix
from fadoctor.report import Category, CheckResult, Environment, Remedy, Report, Severity, Status
from fadoctor.safety.shell import Installer
from fadoctor.triage import (
    mech_amd,
    mech_apex,
    mech_api,
    mech_api_required,
    mech_api_returns,
    mech_api_shadow,
    mech_api_skew,
    mech_arch_list,
    mech_arch_refused,
    mech_backend_nan,
    mech_bitsandbytes,
    mech_build,
    mech_built_for,
    mech_catalog,
    mech_cc_check,
    mech_checkout,
    mech_cli_flags,
    mech_containers,
    mech_cpu_build,
    mech_ctranslate2,
    mech_cuda_toolkit,
    mech_cudnn_lib,
    mech_cudnn_plan,
    mech_cufft,
    mech_custom_op_args,
    mech_cxx_std,
    mech_deepspeed,
    mech_defects,
    mech_dispatch_dtype,
    mech_dist_name,
    mech_distributed,
    mech_driver,
    mech_dsl,
    mech_dtype_arch,
    mech_ext_missing,
    mech_fa3,
    mech_fa3_return,
    mech_fa_triton,
    mech_fallback,
    mech_floor,
    mech_ggml,
    mech_glibc,
    mech_gpu,
    mech_gpu_question,
    mech_head_assert,
    mech_head_prose,
    mech_headers,
    mech_host_gcc,
    mech_import,
    mech_install,
    mech_interpreter,
    mech_isolation,
    mech_jetson,
    mech_kernel_fault,
    mech_kernel_image,
    mech_kernel_libs,
    mech_kernels,
    mech_layer_norm,
    mech_lib_messages,
    mech_machine,
    mech_mps,
    mech_no_distributed,
    mech_no_nvidia,
    mech_numerics,
    mech_numpy,
    mech_nvrtc,
    mech_optional,
    mech_package_floor,
    mech_pip_versions,
    mech_pre_ampere,
    mech_prior,
    mech_ptxas,
    mech_removed,
    mech_replaced_torch,
    mech_resources,
    mech_rocm_target,
    mech_source_torch,
    mech_stale_ext,
    mech_submodule,
    mech_te,
    mech_te_backends,
    mech_tei,
    mech_tensorrt,
    mech_toolchain,
    mech_torch_api,
    mech_torchvision,
    mech_triton_compile,
    mech_triton_env,
    mech_triton_pin,
    mech_triton_smem,
    mech_uv_tags,
    mech_vllm,
    mech_wheel_request,
    mech_wheels,
    mech_windows,
    mech_wrappers,
    mech_xformers,
    stated_fix,
)
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.ask_shell import in_shell
from fadoctor.triage.bridge import to_facts, unknown_checks
from fadoctor.triage.context import Context
from fadoctor.triage.environment import read_environment
from fadoctor.triage.errors import read_errors
from fadoctor.triage.gpus import GpuFinder
from fadoctor.triage.model import Diagnosed, Missing, Triage
from fadoctor.triage.observed import Observed
from fadoctor.triage.ranking import rank
from fadoctor.triage.recorded import quote_lines, read_recorded
from fadoctor.triage.signal import IMPLIED, NAMED, Mechanism, Signal, dedupe
from fadoctor.triage.text import Quote, split

# Every mechanism, most specific first (the order only breaks exact ties in ranking).
MECHANISMS: Tuple[Mechanism, ...] = (
    mech_catalog.catalog, mech_toolchain.toolchain, mech_catalog.api_names, mech_catalog.unbound_classes,
    mech_api.keyword, mech_api_required.required, mech_api.names, mech_api.code_imports,
    mech_api_returns.unpacked, mech_api_returns.incompatible_arguments,
    mech_api_returns.checkpointing_hooks, mech_api.model_without_flash, mech_api.fa1_under_transformers_434,
    mech_torch_api.missing, mech_torch_api.sdpa_keyword, mech_dsl.dsl_api, mech_dsl.fa4_as_fa2,
    mech_custom_op_args.wrong_type, mech_vllm.selector, mech_vllm.v1_pre_ampere, mech_vllm.fp8_kv_cache,
    mech_prior.torch_lacks_gpu, mech_catalog.corroborating, mech_import.undefined_symbols,
    mech_source_torch.prebuilt_on_source_torch, mech_cudnn_lib.missing_cudnn, mech_import.missing_libraries,
    mech_cudnn_plan.no_plan, mech_import.cuda_runtime_named, mech_glibc.glibc_versions,
    mech_interpreter.other_interpreter, mech_interpreter.installed_elsewhere, mech_optional.missing,
    mech_no_distributed.no_distributed, mech_import.missing_module, mech_ext_missing.missing_extension,
    mech_ext_missing.own_extension, mech_wrappers.renamed_api, mech_wrappers.platform,
    mech_ext_missing.checkout_shadow, mech_windows.entry_point, mech_windows.linux_only,
    mech_windows.sdpa_without, mech_windows.install_on_windows, mech_windows.no_windows_distribution,
    mech_windows.triton_nowhere, mech_windows.csrc_on_windows, mech_windows.compile_on_windows,
    mech_windows.symlink_privilege, mech_windows.locked_extension, mech_windows.torch_dll,
    mech_pip_versions.newer_than_listed, mech_bitsandbytes.no_cuda_binary,
    mech_bitsandbytes.hf_quantized_without_cuda, mech_jetson.pytorch_index_wheel,
    mech_containers.jetson_runtime, mech_containers.wsl_libcuda, mech_driver.torch_cpu, mech_driver.driver,
    mech_driver.container_cuda, mech_cuda_toolkit.ngc_driver, mech_built_for.built_for,
    mech_built_for.prose, mech_built_for.missing_variant, mech_kernels.no_variant, mech_kernels.no_build,
    mech_cc_check.capability_check, mech_xformers.no_operator, mech_xformers.no_such_operator,
    mech_xformers.old_dispatch, mech_te.refused, mech_te.required, mech_te.no_pytorch_extra,
    mech_te.declared_cap, mech_tensorrt.refused, mech_te_backends.no_backend, mech_bitsandbytes.old_layer,
    mech_bitsandbytes.setup_platform, mech_fa3.launch, mech_fa3.hopper_only, mech_fa3.fp8_off_hopper,
    mech_fa3.fa3_only_feature, mech_fa3.not_installed, mech_fa3_return.returned, mech_stale_ext.stale,
    mech_checkout.submodule, mech_ggml.no_device_code, mech_ggml.amd_target, mech_ggml.hip_target,
    mech_rocm_target.tensile, mech_ggml.no_devices, mech_ggml.ollama_floor, mech_tei.compute_cap,
    mech_tei.turing_nulls, mech_gpu.torch_arch, mech_nvrtc.arch, mech_rocm_target.triton_stack_frame,
    mech_gpu.no_kernel_image, mech_gpu.ampere_only, mech_gpu.dtype, mech_gpu.head_dim,
    mech_gpu.trtllm_head_size, mech_gpu.rocm, mech_amd.amd_question, mech_amd.cuda_torch_on_amd,
    mech_amd.directml, mech_gpu.graph_breaks, mech_dtype_arch.ptxas_feature, mech_dtype_arch.triton_fp8,
    mech_dtype_arch.cutlass_bf16, mech_dtype_arch.fp8_matmul, mech_dtype_arch.trainer_bf16,
    mech_dtype_arch.inductor_bf16, mech_dtype_arch.autocast_bf16, mech_dtype_arch.bf16_below_ampere,
    mech_mps.dtype, mech_dtype_arch.tensorrt_fp8, mech_dtype_arch.cublas_bf16, mech_pre_ampere.pre_ampere,
    mech_triton_smem.shared_memory, mech_triton_smem.no_valid_choices, mech_triton_pin.mismatch,
    mech_triton_pin.pre_release_api, mech_triton_env.missing, mech_triton_env.gpu_too_old,
    mech_triton_env.before_blackwell, mech_triton_env.compiler_assert, mech_triton_env.ptx_version,
    mech_triton_env.libcuda, mech_triton_env.no_c_compiler, mech_triton_compile.kernel_compile,
    mech_kernel_image.no_release_kernels, mech_kernel_image.cuda13_old_gpu,
    mech_kernel_image.capability_range, mech_kernel_image.cuda_predates_gpu,
    mech_kernel_image.per_arch_extension, mech_no_nvidia.no_nvidia_gpu, mech_arch_list.built_for_others,
    mech_arch_list.datacenter_blackwell_only, mech_arch_list.capability_refused,
    mech_arch_list.unknown_arch, mech_arch_refused.refused, mech_kernel_libs.own_words,
    mech_lib_messages.head_dim, mech_lib_messages.flashinfer_arch_list, mech_head_assert.head_assert,
    mech_head_assert.unsupported_size, mech_head_assert.asked, mech_head_prose.stated,
    mech_dispatch_dtype.dispatch, mech_wheel_request.requested, mech_wheel_request.no_image_for_platform,
    mech_wheel_request.python_asked, mech_wheel_request.no_gpu_runtime, mech_cpu_build.without_cuda,
    mech_torchvision.ops_not_loaded, mech_gpu_question.question, mech_gpu_question.windows_question,
    mech_lib_messages.xqa_head_dim, mech_kernel_libs.built_for_other, mech_lib_messages.version_skew,
    mech_lib_messages.sage_kernel_missing, mech_backend_nan.backend_nan, mech_backend_nan.cudnn_execute,
    mech_cufft.half_fft, mech_numerics.nan, mech_numerics.rounding, mech_numerics.masked_rows,
    mech_numerics.black_images, mech_numerics.fp16_overflow, mech_numerics.sampling_nan, mech_numerics.tf32,
    mech_layer_norm.unsupported, mech_layer_norm.csrc_on_rocm, mech_defects.stated_release,
    mech_machine.non_nvidia, mech_machine.deleted_library, mech_machine.driver_said_old,
    mech_machine.amdgpu_instruction, mech_cli_flags.rejected_flag, mech_cli_flags.unknown_value,
    mech_fa_triton.triton_impl, mech_kernel_fault.illegal_access, mech_kernel_fault.causal_rows,
    mech_removed.torch_six, mech_removed.pkg_resources_packaging, mech_removed.msvc_env,
    mech_numpy.removed_name, mech_numpy.numpy_2_abi, mech_numpy.dtype_size, mech_ctranslate2.compute_type,
    mech_ctranslate2.cpu_only_package, mech_ctranslate2.cudnn_sublibrary, mech_ctranslate2.ct2_library,
    mech_kernel_fault.fp32_question, mech_kernel_fault.invalid_configuration, mech_resources.memory,
    mech_resources.slow_build, mech_resources.jit_ninja, mech_resources.jit_lock,
    mech_isolation.match_runtime, mech_isolation.isolation, mech_isolation.cuda_home_isolated,
    mech_cuda_toolkit.msvc_preprocessor, mech_cuda_toolkit.unknown_option, mech_build.nvcc_missing,
    mech_deepspeed.cuda_mismatch, mech_apex.cuda_mismatch, mech_distributed.no_nccl,
    mech_headers.windows_sdk, mech_headers.cl_not_on_path, mech_cuda_toolkit.cudnn_missing,
    mech_build.nvcc_version, mech_cuda_toolkit.toolkit_major_prose, mech_cuda_toolkit.toolkit_below_floor,
    mech_cuda_toolkit.compiler_headers, mech_cuda_toolkit.setup_floor,
    mech_cuda_toolkit.toolkit_behind_torch, mech_cxx_std.cxx_standard, mech_cxx_std.llvm_target,
    mech_cxx_std.msvc_std_ambiguous, mech_cxx_std.macos_target, mech_host_gcc.compiler,
    mech_host_gcc.newer_gcc, mech_cxx_std.torch_header, mech_cxx_std.msvc_cplusplus,
    mech_build.architecture, mech_ptxas.unknown_target, mech_ptxas.instruction_target,
    mech_ptxas.isa_version, mech_ptxas.old_isa, mech_headers.python_headers, mech_headers.cuda_library,
    mech_headers.cmake_compiler, mech_build.wheel_tags, mech_build.uv_platform, mech_build.local_pin,
    mech_uv_tags.no_matching_wheel, mech_install.invalid_wheel, mech_install.compiler_crash,
    mech_install.long_paths, mech_install.renamed_distribution, mech_dist_name.renamed,
    mech_replaced_torch.replaced, mech_replaced_torch.unmet, mech_replaced_torch.asked_support,
    mech_replaced_torch.index_for_other_torch, mech_replaced_torch.resolver_conflict,
    mech_build.no_prebuilt_wheel, mech_wheels.no_wheel_for_torch, mech_build.build_failed,
    mech_resources.parallel_failed, mech_floor.floor, mech_package_floor.package_floor,
    mech_wrappers.wrappers, mech_fallback.fallback_warning, mech_fallback.model_warning,
    mech_fallback.optional_warning, mech_dsl.beta_failure, mech_api_skew.skew, mech_submodule.submodule,
    mech_api_shadow.shadowed,
)
SNAPSHOT = "fadoctor snapshot --redact -o -"


def triage(raw: Union[str, bytes], matrix: Matrix) -> Triage:
    text = split(raw)
    seen = Observed()
    ctx = Context(text, seen, matrix)
    recorded = read_recorded(text)
    if recorded is not None:
        return _from_recorded(ctx, recorded)
    read_environment(text, seen, GpuFinder(matrix))
    read_errors(text, seen)
    signals = mech_catalog.fold([s for mechanism in MECHANISMS for s in _run(mechanism, ctx)])
    report = evaluate(to_facts(ctx), matrix)
    checks = _unknown_as_skipped(report.checks, unknown_checks(ctx))
    candidates = _merge(signals, _from_checks(ctx, checks, IMPLIED))
    if not candidates:  # the last resort: what the GPU alone makes likely
        candidates = [s for prior in mech_prior.PRIORS for s in _run(prior, ctx)]
    stated_fix.pin_back(ctx, candidates)
    shell = shell_of(ctx.text.joined, mech_build.on_windows(ctx))
    return _result(ctx, candidates, checks, _environment(ctx),
                   named_in(ctx.text.joined, shell) or replace(UNKNOWN, shell=shell))


def _run(mechanism: Mechanism, ctx: Context) -> List[Signal]:
    try:
        return mechanism(ctx)
    except Exception as exc:  # a bug in one mechanism must not hide the others
        return [Signal("internal", Category.INTERNAL,
                       f"fadoctor's {getattr(mechanism, '__name__', 'mechanism')} failed on this "
                       f"text: {type(exc).__name__}: {exc}", [], 0, severity=Severity.WARNING)]


def _from_recorded(ctx: Context, recorded: Union[Facts, Report]) -> Triage:
    report = evaluate(recorded, ctx.matrix) if isinstance(recorded, Facts) else recorded
    ctx.seen.kinds.add("fadoctor facts" if isinstance(recorded, Facts) else "fadoctor report")
    candidates = _from_checks(ctx, report.checks, NAMED)
    installer = (installer_of(recorded) if isinstance(recorded, Facts)
                 else installer_of_report(report))
    return _result(ctx, candidates, report.checks, report.environment, installer)


def _unknown_as_skipped(checks: Sequence[CheckResult], unknown: Dict[str, str]
                        ) -> List[CheckResult]:
    return [CheckResult(id=c.id, name=c.name, title=c.title, status=Status.SKIPPED,
                        skipped_reason=unknown[c.id]) if c.id in unknown else c for c in checks]


def _from_checks(ctx: Context, checks: Sequence[CheckResult], strength: int) -> List[Signal]:
    """The checks' problems as candidates, each quoting the lines that state what it used."""
    stated = _stated(ctx.seen)
    out = []
    for check in checks:
        for finding in check.findings:
            if finding.severity == Severity.INFO:
                continue
            haystack = (finding.message + " " + json.dumps(finding.evidence, default=str)).lower()
            quotes = [q for value, q in stated if _mentions(value, haystack)] or \
                quote_lines(ctx.text, finding)
            out.append(Signal(check.id, finding.category, finding.message, dedupe(quotes),
                              strength if finding.severity == Severity.ERROR else strength - 25,
                              list(finding.remedies), finding.severity,
                              details={k: v for k, v in finding.evidence.items() if v is not None}))
    return out


def _stated(seen: Observed) -> List[Tuple[str, Quote]]:
    pairs = [(s.value.lower(), s.quote) for s in seen.values.values()]
    pairs += [(f"{name} {s.value}".lower(), s.quote) for name, s in seen.packages.items()]
    pairs += [(g.name.lower(), g.quote) for g in seen.gpus]
    return [(value, quote) for value, quote in pairs if len(value) >= 2]


def _mentions(value: str, haystack: str) -> bool:
    return value in haystack and re.search(
        rf"(?<![\w.]){re.escape(value)}(?![\w])", haystack) is not None


def _merge(signals: List[Signal], from_checks: List[Signal]) -> List[Signal]:
    """A check that reaches a signal's category corroborates it (and lends its remedies);
    wrappers' and generic build messages fold into a named cause when there is one."""
    signals = mech_toolchain.fold(signals)
    for check in from_checks:
        error = str(check.details.get("error") or "")
        reread = next((s for s in signals if error and any(error[:120] in q.text
                                                             for q in s.quotes)), None)
        if reread is not None:  # the same error line, read with less context: not a second cause
            reread.remedies += [rem for rem in check.remedies if _adds(rem, reread.remedies)]
            continue
        same = next((s for s in signals if s.category == check.category), None)
        if same is None:
            signals.append(check)
            continue
        same.details.setdefault("also_found_by", []).append(check.mechanism)
        same.quotes = dedupe([*same.quotes, *check.quotes])
        same.remedies += [rem for rem in check.remedies if _adds(rem, same.remedies)]
    named = [s for s in signals if s.strength >= NAMED - 10 and s.mechanism not in (
        "wrapper", "build_failed") and not s.details.get("corroborates")]
    if named:
        for weak in [s for s in signals if s.mechanism in ("wrapper", "build_failed")]:
            named[0].quotes = dedupe([*named[0].quotes, *weak.quotes])
            signals.remove(weak)
    return signals


def _adds(remedy: Remedy, have: List[Remedy]) -> bool:
    """A check's remedy adds to a signal's when it has commands or code the signal lacks."""
    commands = {c for h in have for c in h.commands}
    codes = {h.code for h in have if h.code}
    return bool((remedy.commands and not set(remedy.commands) <= commands)
                or (remedy.code and remedy.code not in codes))


def _result(ctx: Context, candidates: List[Signal], checks: Sequence[CheckResult],
            environment: Environment, installer: Installer) -> Triage:
    """The ranked diagnosis; every remedy runs the interpreter the report names, or says
    `python -m pip` and which environment to run it in."""
    diagnosis = [finding_into(d, installer) for d in rank(candidates)]
    assumed = [*ctx.assumptions, *([] if installer.known else [NOT_NAMED])]
    return Triage(fadoctor_version=__version__, read=sorted(ctx.seen.kinds),
                  environment=environment, assumed=list(dict.fromkeys(assumed)),
                  diagnosis=diagnosis, missing=_missing(ctx, candidates, diagnosis, installer.shell),
                  checks=results_into(checks, installer))


def _missing(ctx: Context, signals: List[Signal], diagnosis: List[Diagnosed],
             shell: str) -> List[Missing]:
    wanted: List[Tuple[str, str]] = []
    for signal in sorted(signals, key=lambda s: -s.strength):
        wanted += signal.needs
    if not any(d.severity == Severity.ERROR for d in diagnosis):
        if not ctx.seen.raised:
            wanted.append(("the error itself: the whole traceback or build log",
                           'python -c "import torch, flash_attn" 2>&1 | tail -n 40'))
        if ctx.torch is None:
            wanted.append(("the torch version, its CUDA build and the GPUs",
                           "python -m torch.utils.collect_env"))
        if ctx.fa2 is None and not ctx.seen.packages:
            wanted.append(("the flash-attention packages installed",
                           "python -m pip list 2>/dev/null | grep -i -E 'flash|torch|transformers'"))
        if ctx.gpu is None and not ctx.amd:
            wanted.append(("the GPU model and compute capability", r.REVEAL_GPU))
    wanted.append(("everything fadoctor checks, gathered on the machine itself (then "
                   "`fadoctor check --facts` or `fadoctor triage` reads it)", SNAPSHOT))
    out, commands = [], set()
    for what, posix in wanted:
        command = in_shell(posix, shell)
        if command is not None and command not in commands:
            commands.add(command)
            out.append(Missing(what=what, command=command))
    return out


def _environment(ctx: Context) -> Environment:
    seen = ctx.seen
    platform = " ".join(v for v in (seen.get(o.OS), seen.get(o.MACHINE)) if v) or None
    if platform and ctx.glibc:
        platform += f", glibc {ctx.glibc}"
    torch: Optional[str] = None
    if ctx.torch is not None:
        cuda = seen.get(o.TORCH_CUDA)
        torch = f"{ctx.torch}" + (f" (CUDA {cuda})" if cuda and cuda != "none" else "")
    driver = seen.get(o.DRIVER)
    gpus = [f"{g.name} (sm_{g.cc.replace('.', '')})" if g.cc else g.name for g in seen.gpus]
    fa = [f"{name} {s.value}" for name, s in seen.packages.items()
          if name.startswith(("flash-attn", "vllm-flash-attn"))]
    return Environment(python=seen.get(o.PYTHON), platform=platform, torch=torch,
                       driver=f"{driver}" + (f" (CUDA {seen.get(o.DRIVER_CUDA)})"
                                             if seen.get(o.DRIVER_CUDA) else "") if driver else None,
                       gpus=gpus, flash_attention=fa)


__all__ = ["MECHANISMS", "triage"]
