"""DeepSpeed's op builder refusing a JIT build: "Installed CUDA version X does not match the
version torch was compiled with Y, unable to compile cuda/cpp extensions without a matching cuda
version." (op_builder/builder.py, assert_no_cuda_mismatch). From 0.4.0 it takes a toolkit of
another minor where both versions are in its list of compatible minors for their major
(`cuda_minor_mismatch_ok`, which grows release by release: data/deepspeed_cuda.yaml, tools/
gen_deepspeed_cuda.py at every tag) and then only warns "but since the APIs are compatible,
accepting this combination"; before 0.4.0 the versions had to be equal. Any other pair is
refused. DeepSpeed's install guide (docs/_tutorials/advanced-install.md, "CUDA version
mismatch") gives the ways out: a toolkit of torch's CUDA, a torch of the toolkit's, or
DS_SKIP_CUDA_CHECK=1 (pure)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Dict, List, Optional

from packaging.version import InvalidVersion, Version

from fadoctor.install.torch import torch_install
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage import data_yaml
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.torch_archs import build_for_cuda

_MISMATCH = re.compile(r"Installed CUDA version (\d+\.\d+) does not match the version torch was "
                       r"compiled with (\d+\.\d+)(?:\.\d+)?(?! but since)")
SOURCE = "deepspeedai/DeepSpeed op_builder/builder.py cuda_minor_mismatch_ok at each tag"


@lru_cache(maxsize=1)
def _releases() -> List[Dict[str, Any]]:
    data: Dict[str, Any] = data_yaml.load(data_yaml.path("deepspeed_cuda.yaml"))
    releases: List[Dict[str, Any]] = data["releases"]
    return releases


def accepting(installed: str, torch_cuda: str) -> Optional[str]:
    """The first DeepSpeed release whose op builder takes this toolkit with this torch CUDA
    (None: no release does)."""
    major = int(installed.split(".")[0])
    for release in _releases():
        listed = release["minors"].get(major, [])
        if installed in listed and torch_cuda in listed:
            return str(release["from"])
    return None


def cuda_mismatch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MISMATCH, ("installed cuda version",))
    if hit is None:
        return []
    installed, torch_cuda = hit[1].group(1), hit[1].group(2)
    first = accepting(installed, torch_cuda)
    stated = ctx.package("deepspeed")
    try:
        older = stated is not None and first is not None and Version(stated.value) < Version(first)
    except InvalidVersion:
        older = False
    toolkit = Remedy(summary=f"Install CUDA toolkit {torch_cuda} (torch's CUDA) and point "
                     "CUDA_HOME at it: DeepSpeed's op builder compiles with the nvcc under "
                     "CUDA_HOME (or on PATH), and takes a toolkit of torch's own CUDA version "
                     "in every release.",
                     commands=[f"export CUDA_HOME=/usr/local/cuda-{torch_cuda}",
                               f"/usr/local/cuda-{torch_cuda}/bin/nvcc --version"])
    fixes: List[Optional[Remedy]] = [toolkit]
    build = build_for_cuda(ctx, installed)
    if build is not None:
        fixes.append(Remedy(summary=f"Or install torch {build[0]} built for CUDA {installed} "
                            f"({build[1]}), the toolkit installed, with the matching torchvision/"
                            "torchaudio builds.", commands=[torch_install(*build)]))
    else:  # no torch wheel of that exact CUDA: one of its major, a minor DeepSpeed's list takes
        fixes.append(r.torch_for_cuda(ctx, int(installed.split(".")[0])))
    if first is not None and (stated is None or older):
        fixes.insert(0, Remedy(summary=f"Upgrade DeepSpeed to {first} or later: its op builder "
                               f"takes CUDA {installed} with torch's {torch_cuda} as compatible "
                               "minors of one major (an older release refuses the pair).",
                               commands=[command("pip", "install", requirement(
                                   "deepspeed", first, op=">="))]))
    fixes.append(Remedy(summary="Or skip the check with DS_SKIP_CUDA_CHECK=1 (DeepSpeed's "
                        "install guide): a build across CUDA versions may still fail or "
                        "misbehave, so prefer a matching pair; or turn off the feature that "
                        "JIT-builds the op (the CPU optimizer of offload_optimizer, for one).",
                        commands=["export DS_SKIP_CUDA_CHECK=1"]))
    why = (f"DeepSpeed takes this pair from {first} on" + (f", not {stated.value}" if older and
                                                           stated is not None else "")
           if first is not None else
           "no DeepSpeed release takes these two as compatible (another major, or a minor its "
           "list does not hold)")
    return [Signal("deepspeed_cuda_mismatch", Category.CUDA_RUNTIME_MISMATCH,
                   f"DeepSpeed's op builder refuses to JIT-compile its CUDA ops: the installed "
                   f"CUDA toolkit is {installed} and torch was built for CUDA {torch_cuda}; {why}",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", "nvcc", "deepspeed")]), NAMED,
                   r.keep(fixes), details={"nvcc": installed, "torch_cuda": torch_cuda, "source": SOURCE})]


# DeepSpeed's dynamic loss scaler halving the fp16 loss scale at every overflowing step until its
# floor (deepspeed/runtime/fp16/loss_scaler.py: "Current loss scale already at minimum - cannot
# decrease scale anymore. Exiting run."; Megatron-style scalers say the same): the fp16 training's
# gradients overflow at every scale, which bf16 (fp32's range) does not.
_SCALE_FLOOR = re.compile(r"(?:Current )?loss scale already at minimum", re.I)


def loss_scale_floor(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SCALE_FLOOR, ("already at minimum",))
    if hit is None:
        return []
    cc = ctx.gpu[1] if ctx.gpu is not None else None
    pre_ampere = cc is not None and cc < Version("8.0")
    fix = (Remedy(summary="This GPU has no bf16 (before Ampere): train in fp32 (fp16 disabled in "
                  "the DeepSpeed config), or lower the learning rate and check the data for "
                  "extreme values.") if pre_ampere else
           Remedy(summary="Train in bf16 instead of fp16: in the DeepSpeed config, \"bf16\": "
                  "{\"enabled\": true} and \"fp16\": {\"enabled\": false} (or --bf16 where the "
                  "script maps it); bf16 keeps fp32's range and needs no loss scaling. Ampere or "
                  "newer GPUs run it; else train in fp32."))
    return [Signal("loss_scale_floor", Category.NUMERICS,
                   "fp16 training overflowed at every loss scale: DeepSpeed's dynamic loss scaler "
                   "halved the scale after each overflowing step until its minimum, and stopped",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED, [fix])]


# DeepSpeed's setup.py pre-compiling its ops (DS_BUILD_OPS=1, or one op's DS_BUILD_<OP>=1) stops at
# the first op its builder finds incompatible with this machine: "if op_enabled(op_name) and not
# op_compatible: ... builder.warning(f"One can disable {op_name} with {env_var}=0");
# abort(f"Unable to pre-compile {op_name}")" (deepspeedai/DeepSpeed setup.py). Each builder's
# is_compatible() checks what the op needs: a C++ compiler that builds a test program, libaio's
# headers for async_io, a CUDA toolkit; `ds_report` prints each op's result and what is missing.
_PRECOMPILE = re.compile(r"Unable to pre-compile (\w{2,40}|\{op_name\})")
# ops ds_report lists, for a traceback that shows the abort's source line but not the op
_OPS = re.compile(r"\b(async_io|cpu_adam|cpu_adagrad|cpu_lion|fused_adam|fused_lamb|fused_lion|"
                  r"sparse_attn|evoformer_attn|transformer_inference|quantizer)\b")
_DISABLE = re.compile(r"One can disable (\w{2,40}) with (DS_BUILD_\w{2,40})=0")


def precompile(ctx: Context) -> List[Signal]:
    hit = ctx.first(_PRECOMPILE, ("unable to pre-compile",))
    if hit is None or hit[1].group(1) == "ops":  # "...ops without torch installed": isolation's
        return []
    op = hit[1].group(1)
    if op == "{op_name}":  # the abort's own line: the op is the one the report names
        found = ctx.first(_OPS, ("async_io", "adam", "adagrad", "lion", "lamb", "sparse_attn",
                                 "evoformer", "transformer_inference", "quantizer"))
        op = found[1].group(1) if found else "failing"
    named = ctx.first(_DISABLE, ("one can disable",))
    var = f"{named[1].group(2)}=0" if named else \
        f"its DS_BUILD_ variable =0, which setup.py prints: \"One can disable {op} with ...\""
    needs = ("libaio's headers (libaio-dev, or libaio-devel) and a C++ compiler (g++: "
             "build-essential)" if op == "async_io" else
             "a C++ compiler (g++: build-essential) that builds a test program, and for its CUDA "
             "ops the CUDA toolkit of torch's CUDA")
    return [Signal("deepspeed_precompile", Category.BUILD_TOOLCHAIN,
                   f"DeepSpeed's setup.py was asked to pre-compile its ops, and the {op} op's "
                   "builder found this machine unable to build it: something the op needs is "
                   "missing",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(named[0])] if named else [])]), NAMED,
                   [Remedy(summary=f"Install what the {op} op needs, {needs}, then install "
                           "again; `ds_report` lists each op's requirements and which are "
                           "missing.", commands=["ds_report"]),
                    Remedy(summary=f"Or leave {op} out of the pre-compiled ops ({var}), or "
                           "unset DS_BUILD_OPS so DeepSpeed compiles its ops when a run first "
                           "uses them.")],
                   details={"source": "deepspeedai/DeepSpeed setup.py (abort(f\"Unable to "
                                      "pre-compile {op_name}\"))"})]
