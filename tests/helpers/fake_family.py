"""Fake flash-attention packages made in a temporary folder: a `flash_attn` distribution whose
flash_attn_func computes attention right, wrong, with NaNs, crashes, hangs or raises."""

from __future__ import annotations

from pathlib import Path

# flash_attn_func on real torch (CPU tensors): (batch, seqlen, heads, dim) in and out.
_BODY = '''\
import math
import os
import time

import torch

MODE = {mode!r}


def _attention(q, k, v, causal, scale):
    groups = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(groups, 2), v.repeat_interleave(groups, 2)
    scores = torch.einsum("bthd,bshd->bhts", q.float() * scale, k.float())
    if causal:
        n = q.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.einsum("bhts,bshd->bthd", scores.softmax(-1), v.float()).to(q.dtype)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False):
    scale = softmax_scale or 1.0 / math.sqrt(q.shape[-1])
    if MODE == "wrong":
        scale *= 1.5  # a kernel with the wrong softmax scale
    if MODE == "segfault":
        import ctypes
        ctypes.string_at(0)
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "cuda_segfault":  # dies inside the CUDA driver
        import ctypes
        cuda = ctypes.CDLL("libcuda.so.1")
        src = torch.ones(1 << 20, device="cuda")
        torch.cuda.synchronize()
        # A device-to-host copy into an invalid host address...
        cuda.cuMemcpyDtoH_v2(ctypes.c_void_p(64), ctypes.c_uint64(src.data_ptr()),
                             ctypes.c_size_t(4 << 20))
        # ...and, should the driver refuse it instead, a host function at an invalid address,
        # which the driver's own thread calls.
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        cuda.cuLaunchHostFunc(stream, ctypes.c_void_p(8), ctypes.c_void_p(0))
        cuda.cuStreamSynchronize(stream)
    if MODE == "device_assert":  # an out-of-bounds index: a device-side assert, sticky
        table = torch.zeros(8, device=q.device)
        table[torch.tensor([1 << 30], device=q.device)].sum().item()
    if MODE == "no_kernel_image":
        raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
    if MODE == "head_dim" and q.shape[-1] > 128:
        raise RuntimeError("FlashAttention forward only supports head dimension at most 128")
    out = _attention(q, k, v, causal, scale)
    if MODE == "nan":
        out = out + torch.where(out > 1.0, float("nan"), 0.0)
    if MODE == "nan_backward" and out.requires_grad:
        out.register_hook(lambda g: g * float("nan"))
    return (out, None) if RETURNS_LSE else out
'''

# Where each family's flash_attn_func lives, its distribution, and whether it returns (out, lse).
LAYOUT = {"fa2": ("flash_attn/__init__.py", "flash-attn", False),
          "fa3": ("flash_attn_interface.py", "flash-attn-3", True),
          "fa4": ("flash_attn/cute/__init__.py", "flash-attn-4", True),
          "vllm_fa": ("vllm_flash_attn/__init__.py", "vllm-flash-attn", False)}


def make_family(root: Path, mode: str, family: str = "fa2", version: str = "2.8.3") -> Path:
    """A family (fa2: flash-attn `version`) whose flash_attn_func behaves as `mode` says, in
    `root` (the folder to put on PYTHONPATH; several families can share it). Modes: right, wrong,
    nan, nan_backward, segfault, hang, no_kernel_image, head_dim (refuses head dims over 128);
    on a GPU: cuda_segfault (dies inside cuMemcpyDtoH), device_assert (a device-side assert)."""
    path, dist, lse = LAYOUT[family]
    module = root / path
    module.parent.mkdir(parents=True, exist_ok=True)
    body = _BODY.format(mode=mode).replace("MODE = ", f"RETURNS_LSE = {lse}\nMODE = ", 1)
    if path == "flash_attn/__init__.py":  # share the name with flash-attn-4's flash_attn.cute
        body = "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n" + body
    module.write_text(body, encoding="utf-8")
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
                                   encoding="utf-8")
    return root
