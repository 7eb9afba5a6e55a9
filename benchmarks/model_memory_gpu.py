"""Measure the GPU memory of real training steps and put fadoctor's estimate beside it (#11).

    OUT=/some/dir python benchmarks/model_memory_gpu.py [--cases a,b] [--budget 330]
    python benchmarks/model_memory_gpu.py --device cpu --tiny      # develop it without a GPU

Each case builds a real model from a config in src/fadoctor/model/configs/ (or, for the Qwen
models fadoctor does not ship, tests/fixtures/model_configs/) with random
weights (transformers `from_config`, nothing is downloaded), runs a few real training steps
(full fine-tuning with AdamW, LoRA with peft, QLoRA with bitsandbytes when they import) and
records `torch.cuda.max_memory_allocated` per phase (forward, backward, optimizer step), the bytes
autograd saved for backward (counted once per storage, parameters excluded), the weights, and,
when fadoctor imports, its estimate for the same case. A case that runs out of memory is a
result, not a crash. The JSON goes to $OUT/model_memory.json after every case, so a run cut
short still reports what it measured.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "src" / "fadoctor" / "model" / "configs"
FIXTURE_CONFIGS = ROOT / "tests" / "fixtures" / "model_configs"  # measured, not shipped
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class Case:
    name: str
    config: str  # a file stem in src/fadoctor/model/configs or tests/fixtures/model_configs
    method: str  # full | lora | qlora
    batch: int
    seq: int
    checkpointing: bool = False
    attn: str = "sdpa"
    recipe: str = "bf16"  # bf16: weights, grads and AdamW states in bf16; mixed: fp32 + autocast
    lora_r: int = 16
    lora_targets: Tuple[str, ...] = ALL_LINEAR
    steps: int = 3


# Small, medium, and near the H200's memory; cheap cases first so that a short budget still
# covers every method.
CASES: Tuple[Case, ...] = (
    Case("qwen0.5b-full", "qwen2.5-0.5b", "full", 4, 2048),
    Case("qwen0.5b-full-ckpt", "qwen2.5-0.5b", "full", 8, 2048, checkpointing=True),
    Case("qwen0.5b-full-mixed", "qwen2.5-0.5b", "full", 4, 2048, recipe="mixed"),
    Case("qwen0.5b-lora", "qwen2.5-0.5b", "lora", 4, 2048),
    Case("qwen0.5b-qlora", "qwen2.5-0.5b", "qlora", 4, 2048),
    Case("llama8b-lora-qv", "llama-3.1-8b", "lora", 1, 4096, lora_targets=("q_proj", "v_proj")),
    Case("mistral7b-full-ckpt", "mistral-7b-v0.1", "full", 4, 4096, checkpointing=True),
    Case("gemma9b-lora-eager", "gemma-2-9b", "lora", 1, 2048, attn="eager"),
    Case("gemma9b-lora-eager-ckpt", "gemma-2-9b", "lora", 2, 2048, attn="eager",
         checkpointing=True),
    Case("phi3-full-mixed-ckpt", "phi-3-mini-4k-instruct", "full", 4, 2048, checkpointing=True,
         recipe="mixed"),
    Case("qwen7b-lora-ckpt", "qwen2.5-7b", "lora", 8, 4096, checkpointing=True),
    Case("llama8b-full-ckpt", "llama-3.1-8b", "full", 6, 4096, checkpointing=True),
    Case("llama8b-full-ckpt-b8", "llama-3.1-8b", "full", 8, 4096, checkpointing=True),
    Case("qwen7b-qlora-ckpt", "qwen2.5-7b", "qlora", 4, 4096, checkpointing=True),
)

# --tiny: the same families scaled down, for a CPU run of the whole path.
TINY = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=512)


def load_config(stem: str, tiny: bool) -> Dict[str, Any]:
    path = CONFIGS / f"{stem}.json"
    path = path if path.exists() else FIXTURE_CONFIGS / f"{stem}.json"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    if tiny:
        cfg.update(TINY)
        for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
            cfg[key] = None
        if "head_dim" in cfg:
            cfg["head_dim"] = 16
    return cfg


def hf_config(cfg: Dict[str, Any]) -> Any:
    from transformers import AutoConfig

    body = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type")}
    config = AutoConfig.for_model(cfg["model_type"], **body)
    config.use_cache = False
    return config


def build(case: Case, cfg: Dict[str, Any], device: str) -> Any:
    from transformers import AutoModelForCausalLM

    if case.method == "qlora":
        return build_qlora(case, cfg, device)
    dtype = torch.float32 if case.recipe == "mixed" else torch.bfloat16
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(hf_config(cfg), dtype=dtype,
                                                 attn_implementation=case.attn)
    if case.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return lora(case, model) if case.method == "lora" else model


def build_qlora(case: Case, cfg: Dict[str, Any], device: str) -> Any:
    """The QLoRA recipe of the paper and peft's docs: NF4 with double quantization, bf16
    compute, prepare_model_for_kbit_training (non-quantized weights to fp32), LoRA on top."""
    import bitsandbytes  # noqa: F401  (skip the case cleanly where it is missing)
    from peft import prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                               bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16)
    with tempfile.TemporaryDirectory() as folder:
        with torch.device(device):
            dense = AutoModelForCausalLM.from_config(hf_config(cfg), dtype=torch.bfloat16)
        dense.save_pretrained(folder)
        del dense
        free(device)
        model = AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant,
                                                     device_map={"": 0},
                                                     attn_implementation=case.attn)
    model = prepare_model_for_kbit_training(
        model, use_gradient_checkpointing=case.checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False})
    return lora(case, model)


def lora(case: Case, model: Any) -> Any:
    from peft import LoraConfig, get_peft_model

    targets = ("all-linear" if case.lora_targets == ("all-linear",)
               else list(case.lora_targets))
    config = LoraConfig(r=case.lora_r, lora_alpha=2 * case.lora_r, lora_dropout=0.0,
                        target_modules=targets, task_type="CAUSAL_LM")
    return get_peft_model(model, config)


def free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


class Meter:
    """Allocated and peak bytes per phase (CUDA); on the CPU only the clock."""

    def __init__(self, device: str) -> None:
        self.cuda = device == "cuda"

    def start(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def read(self) -> Dict[str, int]:
        if not self.cuda:
            return {}
        torch.cuda.synchronize()
        return {"allocated": torch.cuda.memory_allocated(),
                "peak": torch.cuda.max_memory_allocated(),
                "reserved_peak": torch.cuda.max_memory_reserved()}


def saved_bytes(model: Any, run: Callable[[], Any]) -> Tuple[Any, int]:
    """Run `run` (a forward) and count the bytes autograd saved for backward, each storage
    once, parameters (and the frozen weights' storages) excluded."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: Dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params and t.device.type != "meta":
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    return out, sum(seen.values())


def step(model: Any, opt: Any, case: Case, ids: torch.Tensor, meter: Meter,
         count_saved: bool) -> Dict[str, Any]:
    def forward() -> torch.Tensor:
        if case.recipe == "mixed":
            with torch.autocast(ids.device.type, dtype=torch.bfloat16):
                return model(input_ids=ids, labels=ids).loss  # the outputs (logits) are dropped
        return model(input_ids=ids, labels=ids).loss

    record: Dict[str, Any] = {}
    t0 = time.perf_counter()
    meter.start()
    if count_saved:
        loss, record["saved_bytes"] = saved_bytes(model, forward)
    else:
        loss = forward()
    record["forward"] = meter.read()
    meter.start()
    loss.backward()
    record["backward"] = meter.read()
    del loss
    meter.start()
    opt.step()
    opt.zero_grad(set_to_none=True)
    record["optimizer"] = meter.read()
    record["seconds"] = round(time.perf_counter() - t0, 3)
    return record


def weights(model: Any) -> Dict[str, int]:
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"params": total, "trainable": trainable, "param_bytes": nbytes}


def run_case(case: Case, device: str, tiny: bool) -> Dict[str, Any]:
    cfg = load_config(case.config, tiny)
    meter = Meter(device)
    meter.start()
    model = build(case, cfg, device)
    model.train()
    record: Dict[str, Any] = {"build": meter.read(), **weights(model)}
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-5, fused=device == "cuda")
    gen = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, cfg["vocab_size"], (case.batch, case.seq), generator=gen).to(device)
    record["steps"] = [step(model, opt, case, ids, meter, count_saved=(i == 0))
                       for i in range(case.steps)]
    phases = [p for s in record["steps"] for k, p in s.items() if isinstance(p, dict)]
    if device == "cuda":
        record["max_memory_allocated"] = max([record["build"]["peak"]]
                                             + [p["peak"] for p in phases])
        record["max_memory_reserved"] = max(p["reserved_peak"] for p in phases)
    del model, opt, trainable
    free(device)
    return record


def predict(case: Case, cfg: Dict[str, Any]) -> Dict[str, Any]:
    """fadoctor's estimate for the case, if fadoctor (and its dependencies) import here."""
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from fadoctor.model.bench import estimate_case  # type: ignore[import-not-found]

        return dict(estimate_case(cfg, asdict(case)))
    except Exception as exc:  # the measurement stands without the estimate
        return {"error": f"{type(exc).__name__}: {exc}"}


def environment(device: str) -> Dict[str, Any]:
    env: Dict[str, Any] = {"torch": torch.__version__, "device": device}
    for name in ("transformers", "peft", "bitsandbytes", "accelerate"):
        try:
            env[name] = __import__(name).__version__
        except Exception as exc:
            env[name] = f"unavailable: {type(exc).__name__}: {exc}"[:300]
    if device == "cuda":
        torch.ones(1, device="cuda")
        a = torch.ones(256, 256, device="cuda", dtype=torch.bfloat16)
        (a @ a).sum().item()  # loads cuBLAS: its handle and workspace count as context
        free_b, total = torch.cuda.mem_get_info()
        env.update(gpu=torch.cuda.get_device_name(0), total_bytes=total,
                   context_bytes=total - free_b - torch.cuda.memory_reserved(),
                   capability=".".join(map(str, torch.cuda.get_device_capability(0))))
        del a
    return env


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--tiny", action="store_true", help="scaled-down configs (CPU runs)")
    parser.add_argument("--budget", type=float, default=330.0, help="seconds; later cases skip")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args(argv)
    chosen = [c for c in CASES if not args.cases or c.name in args.cases.split(",")]
    if args.tiny:
        chosen = [replace(c, batch=2, seq=64, steps=2) for c in chosen]
    out = Path(args.out) / "model_memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result: Dict[str, Any] = {"environment": environment(args.device), "cases": []}
    start = time.monotonic()
    for case in chosen:
        entry = run_one(case, args, start)
        result["cases"].append(entry)
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(summary(entry), flush=True)
    print(f"wrote {out} in {time.monotonic() - start:.0f} s")
    return 0


def run_one(case: Case, args: argparse.Namespace, start: float) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"case": asdict(case), "tiny": args.tiny}
    if time.monotonic() - start > args.budget:
        return {**entry, "status": "skipped", "reason": "time budget spent"}
    entry["estimate"] = predict(case, load_config(case.config, args.tiny))
    try:
        entry.update(run_case(case, args.device, args.tiny), status="ok")
    except torch.OutOfMemoryError as exc:
        entry.update(status="oom", reason=str(exc).splitlines()[0][:300])
    except ImportError as exc:
        entry.update(status="skipped", reason=f"{type(exc).__name__}: {exc}"[:300])
    except Exception as exc:
        entry.update(status="error", reason=f"{type(exc).__name__}: {exc}"[:500],
                     traceback=traceback.format_exc()[-2000:])
    free(args.device)
    return entry


def summary(entry: Dict[str, Any]) -> str:
    name = entry["case"]["name"]
    if entry.get("status") != "ok":
        return f"{name}: {entry.get('status')} ({entry.get('reason', '')})"
    peak = entry.get("max_memory_allocated")
    est = entry.get("estimate", {}).get("peak_allocated_bytes")
    line = f"{name}: saved {entry['steps'][0]['saved_bytes'] / 2**20:.1f} MiB"
    if peak is not None:
        line += f", max_memory_allocated {peak / 2**30:.2f} GiB"
    if est:
        line += f", estimate {est / 2**30:.2f} GiB ({(est - (peak or est)) / (peak or est):+.1%})"
    return line


if __name__ == "__main__":
    sys.exit(main())
