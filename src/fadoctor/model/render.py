"""`fadoctor model` output: the model's needs, the support table, the memory breakdown (pure)."""

from __future__ import annotations

import io
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fadoctor.model.advice import ModelAdvice
from fadoctor.model.memory import GIB

MARK = {True: "[green]yes[/]", False: "[red]no[/]", None: "[yellow]?[/]"}


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def render_json(advice: ModelAdvice) -> str:
    body = advice.model_dump(mode="json")
    mem = advice.memory
    body["memory"].update(total=mem.total, fits=mem.fits, peak_phase=mem.peak_phase)
    return json.dumps(body, indent=2) + "\n"


def render_text(advice: ModelAdvice, width: int = 100, color: bool = False) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system="standard" if color else None,
                      force_terminal=color, highlight=False)
    s = advice.spec
    console.print(f"[bold]{escape(s.name)}[/] ({escape(s.model_type)}): {s.num_layers} layers, "
                  f"hidden {s.hidden_size}, {s.num_heads} query / {s.num_kv_heads} key-value heads"
                  f", head dim {s.head_dim}, vocabulary {s.vocab_size:,}")
    features = [f"sliding window {s.sliding_window} on {s.sliding_layers} of {s.num_layers} "
                "layers" if s.sliding_layers else "", f"attention softcap {s.attn_softcap}"
                if s.attn_softcap else "", f"final logit softcap {s.final_softcap}"
                if s.final_softcap else "", "ALiBi" if s.alibi else "",
                f"RoPE scaling {s.rope_scaling}" if s.rope_scaling else "",
                f"max positions {s.max_positions}" if s.max_positions else "",
                f"dtype {s.dtype}" if s.dtype else ""]
    console.print("needs: " + escape(", ".join(f for f in features if f) or "nothing special"))
    if advice.dtype_note:
        console.print(f"[yellow]note:[/] {escape(advice.dtype_note)}")
    console.print(_support(advice))
    console.print(_memory(advice))
    rec = advice.recommendation
    console.print(f"[bold]recommendation:[/] attn_implementation=\"{rec.attn_implementation}\" - "
                  f"{escape(rec.why)}")
    for command in rec.commands:
        console.print(f"  $ {escape(command)}")
    return out.getvalue()


def _support(advice: ModelAdvice) -> Table:
    table = Table(title="attention implementations", title_justify="left", expand=False)
    for col in ("implementation", "here", "supports it", "first release with its needs",
                "why not"):
        table.add_column(col)
    for row in advice.support:
        absent = "torch not examined" if row.implementation.startswith("sdpa") else "not installed"
        table.add_row(row.label, escape(row.version or absent), MARK[row.ok],
                      row.minimum or "-", escape("; ".join(row.problems)))
    return table


def _memory(advice: ModelAdvice) -> Table:
    mem = advice.memory
    plan = mem.plan
    what = (f"{plan.method}{' ' + plan.recipe if plan.method == 'full' else ''}"
            f"{f' r={plan.lora_r}' if plan.method != 'full' else ''}, micro-batch {plan.batch} x "
            f"{plan.seq} tokens, checkpointing {'on' if plan.checkpointing else 'off'}, "
            f"{plan.attn}")
    table = Table(title=f"memory at the peak ({mem.peak_phase}): {what}", title_justify="left")
    table.add_column("term")
    table.add_column("size", justify="right")
    table.add_column("note")
    for term in mem.terms:
        table.add_row(term.name, gib(term.bytes), escape(term.note))
    table.add_row("[bold]peak allocated[/]", f"[bold]{gib(mem.peak_allocated)}[/]",
                  "comparable with torch.cuda.max_memory_allocated")
    table.add_row("CUDA context, allocator slack", gib(mem.context + mem.slack), "")
    verdict = {True: "[green]fits[/]", False: "[red]does not fit[/]", None: "GPU memory unknown"}
    cap = f" of {gib(mem.capacity)}" if mem.capacity else ""
    table.add_row("[bold]total[/]", f"[bold]{gib(mem.total)}[/]", f"{verdict[mem.fits]}{cap}")
    if advice.largest_batch is not None:
        table.add_row("largest micro-batch that fits", str(advice.largest_batch),
                      f"at {plan.seq} tokens")
    if advice.largest_seq is not None:
        table.add_row("longest sequence that fits", f"{advice.largest_seq:,}",
                      f"at micro-batch {plan.batch}")
    return table
