"""Several GPUs of one machine hanging in their first collective, with no error: NCCL's P2P
transport (GPU to GPU over PCIe) where the path cannot carry it. Two causes are known:

- GeForce RTX 40- and 50-series cards, which do not do P2P over PCIe, on drivers or setups that
  let NCCL try it: all_reduce_perf hangs on several RTX 4090s and runs on 2080 Tis
  (NVIDIA/nccl-tests#117; with NCCL_P2P_DISABLE=1 it runs, tinygrad/open-gpu-kernel-modules#45);
- PCI Access Control Services (ACS) or an IOMMU (VT-d, AMD-Vi) redirecting P2P traffic through
  the root complex, which NCCL's troubleshooting guide names as a cause of hangs and slow
  collectives ("PCI Access Control Services (ACS)": disable ACS in the BIOS or with setpci; NCCL
  documentation, docs/troubleshooting).

The test in both cases is NCCL_P2P_DISABLE=1 (NCCL's environment variable: the P2P transport off,
traffic through host memory); the fix for the second is ACS off (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

_HANG = re.compile(r"\b(?:hangs?|hanging|hung|stuck|deadlocks?|deadlocked|freez\w*|frozen|"
                   r"stall\w*|spin-?wait\w*|no (?:forward )?progress|never (?:finish|return|"
                   r"complete)s?|waits? forever|卡住|卡死)\b", re.I)
_SEVERAL = ("nccl", "deepspeed", "distributed", "ddp", "torchrun", "all_reduce", "allreduce",
            "all-reduce", "tensor parallel", "tensor-parallel", "--tp", "tp=", "tp_size",
            "world_size", "multi-gpu", "multi gpu", "multiple gpus", "accelerate launch",
            "init_process_group", "fsdp")
# a GeForce RTX 40/50 card counted: "2x RTX 4090", "multiple 4090", "four 4090s", "dual 5090"
_GEFORCE = r"(?:NVIDIA\s+)?(?:GeForce\s+)?(?:RTX\s*)?([45]0[6-9]0)(?:\s*Ti)?s?\b"
_COUNTED = re.compile(r"(?:\b([2-9]|1[0-6])\s*[x\u00d7*]\s*|\b(?:multiple|several|two|dual|three|four|"
                      r"six|eight|multi-?)\s*)" + _GEFORCE + r"|" + _GEFORCE
                      + r"`?\s*[x\u00d7*]\s*(?:[2-9]|1[0-6])\b", re.I)  # "RTX 4090 * 5" too
_ACS = re.compile(r"\bACS\b|\bIOMMU\b|\bVT-d\b|AMD-Vi|\bPHB\b|\bNODE\b.{0,20}topolog|topo -m",
                  re.I)


def _geforce(ctx: Context) -> Optional[Quote]:
    """The line saying several GeForce RTX 40/50 cards: counted in words, or listed twice."""
    hit = ctx.first(_COUNTED, ("40", "50"))
    if hit is not None:
        return ctx.quote(hit[0])
    named = [g for g in ctx.seen.gpus if re.search(r"RTX\s*[45]0[6-9]0", g.name, re.I)
             and "ada" not in g.name.lower()]
    lines = {g.quote.line for g in named}
    return named[0].quote if len(lines) >= 2 else None


def p2p_hang(ctx: Context) -> List[Signal]:
    hang = ctx.first(_HANG, ("hang", "hung", "stuck", "deadlock", "freez", "frozen", "stall",
                             "spin", "progress", "never", "forever", "卡"))
    if hang is None or not ctx.text.containing(_SEVERAL) or ctx.amd:
        return []
    raised = [r for r in ctx.seen.raised if r.kind not in ("warning", "log")]
    if raised and not ctx.text.containing(("nccl",)):
        return []  # an error was raised: it names its own cause
    geforce = _geforce(ctx)
    acs = ctx.first(_ACS, ("acs", "iommu", "vt-d", "amd-vi", "phb", "topo"))
    if geforce is None and acs is None:
        return []
    disable = Remedy(summary="Check that the P2P transport is what hangs: run with NCCL's P2P "
                     "transport off (traffic goes through host memory instead; slower, but it "
                     "completes).", commands=["export NCCL_P2P_DISABLE=1"])
    if geforce is not None:
        return [Signal("nccl_p2p", Category.COLLECTIVE_FAILED,
                       "several GeForce RTX 40/50-series GPUs hang in their first collective: "
                       "these cards do not do peer-to-peer (P2P) over PCIe, and NCCL's P2P "
                       "transport waits forever for it", dedupe([ctx.quote(hang[0]), geforce]),
                       HINTED,
                       [Remedy(summary="Turn NCCL's P2P transport off for these GPUs (set it for "
                               "every rank: in the launcher's environment or before `torchrun`/"
                               "`deepspeed`/`accelerate launch`).",
                               commands=["export NCCL_P2P_DISABLE=1"]),
                        Remedy(summary="If it still hangs, look for ACS on the PCIe bridges "
                               "(`sudo lspci -vvv | grep ACSCtl`: SrcValid+ means on) and turn "
                               "it off in the BIOS, and update the NVIDIA driver.")],
                       details={"source": "NVIDIA/nccl-tests#117 (all_reduce_perf hangs on RTX "
                                          "4090s); NCCL troubleshooting guide"})]
    assert acs is not None
    return [Signal("nccl_p2p", Category.COLLECTIVE_FAILED,
                   "GPUs on PCIe (no NVLink) hang in their first collective: with ACS or an IOMMU "
                   "on the path, P2P traffic is redirected through the root complex and NCCL's "
                   "P2P transport stalls", dedupe([ctx.quote(hang[0]), ctx.quote(acs[0])]),
                   HINTED,
                   [disable,
                    Remedy(summary="Then turn ACS off on the PCIe bridges between the GPUs (the "
                           "BIOS setting, or the kernel's pci=noacs / setpci at runtime; check "
                           "with `sudo lspci -vvv | grep ACSCtl`), or the IOMMU (iommu=off, or "
                           "iommu=pt) on a bare-metal host; NCCL's troubleshooting guide "
                           "describes both.")],
                   details={"source": "NCCL troubleshooting guide: PCI Access Control Services "
                                      "(ACS)"})]


# accelerate's own refusal (huggingface/accelerate src/accelerate/state.py, PartialState: where
# `check_cuda_p2p_ib_support()` is False and the two variables are unset): "Using RTX 4000 series
# doesn't support faster communication broadband via P2P or IB. Please set `NCCL_P2P_DISABLE="1"`
# and `NCCL_IB_DISABLE="1" or use `accelerate launch` which will do this automatically."
_ACCELERATE = re.compile(r"doesn't support faster communication broadband via P2P or IB")


def accelerate_refusal(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ACCELERATE, ("faster communication broadband",))
    if hit is None:
        return []
    return [Signal("nccl_p2p", Category.COLLECTIVE_FAILED,
                   "accelerate refuses to start NCCL on these GPUs (GeForce RTX 30/40-series "
                   "without P2P or InfiniBand on their driver) until NCCL's P2P and InfiniBand "
                   "transports are turned off", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Turn both transports off for every rank (accelerate launch "
                           "sets them itself; a plain `python` or `deepspeed` launch needs them "
                           "in the environment).", commands=["export NCCL_P2P_DISABLE=1",
                                                             "export NCCL_IB_DISABLE=1"])],
                   details={"source": "huggingface/accelerate src/accelerate/state.py "
                                      "(PartialState, check_cuda_p2p_ib_support)"})]


# NCCL's init (NVIDIA/nccl src/init.cc): "Duplicate GPU detected : rank %d and rank %d both on
# CUDA device %lx" (ncclInvalidUsage): two ranks of one communicator on the same GPU
_DUPLICATE = re.compile(r"Duplicate GPU detected : rank (\d+) and rank (\d+) both on CUDA device "
                        r"(\w+)")


def duplicate_gpu(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DUPLICATE, ("duplicate gpu detected",))
    if hit is None:
        return []
    one, two, bus = hit[1].groups()
    return [Signal("duplicate_gpu", Category.GPU_ASSIGNMENT,
                   f"ranks {one} and {two} run on the same GPU (PCI bus {bus}): each rank of an "
                   "NCCL communicator needs its own device", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Give every rank its own GPU: launch with torchrun (or "
                           "accelerate launch / deepspeed), which sets LOCAL_RANK, and select "
                           "the device from it before the process group starts; remove any "
                           "device hard-coded in the script (cuda:0) and any CUDA_VISIBLE_DEVICES "
                           "that shows every rank the same single GPU.",
                           code="torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))")],
                   details={"source": "NVIDIA/nccl src/init.cc (Duplicate GPU detected)"})]


# The CUDA runtime refusing peer access outright: "peer access is not supported between these two
# devices" (cudaErrorPeerAccessUnsupported, cuda_runtime_api.h). Programs that enable P2P
# themselves fail this way on GPUs without it (GeForce RTX 40/50 over PCIe): a custom all-reduce,
# latency-optimised beside NCCL — TensorRT-LLM's (trtllm-build --use_custom_all_reduce, "instead
# of NCCL"), vLLM's (--disable-custom-all-reduce turns it off).
_NO_PEER = re.compile(r"peer access is not supported between these two devices", re.I)


def peer_unsupported(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_PEER, ("peer access is not supported",))
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    fixes = [Remedy(summary="The program turns on peer-to-peer access between the GPUs, which "
                    "these GPUs (GeForce cards over PCIe) or this PCIe topology do not support: "
                    "turn off what asks for it, most often a custom all-reduce (TensorRT-LLM: "
                    "rebuild the engine with trtllm-build --use_custom_all_reduce disable; vLLM: "
                    "--disable-custom-all-reduce), so NCCL carries the collectives.")]
    return [Signal("peer_unsupported", Category.COLLECTIVE_FAILED,
                   "CUDA refuses peer-to-peer access between these GPUs: the program (a custom "
                   "all-reduce) enables P2P, and the GPUs or the PCIe path do not support it",
                   quotes, NAMED, fixes,
                   details={"source": "cuda_runtime_api.h (cudaErrorPeerAccessUnsupported)"})]
