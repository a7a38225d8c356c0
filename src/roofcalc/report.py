"""Turning an :class:`Analysis` into records, JSON, CSV and text tables.

The JSON record (``to_record``) is the stable API; README.md documents its schema. The text
formats show the same numbers, rounded with SI prefixes. Only this module formats numbers.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, Iterable

from .calculator import Analysis, Cost, Kernel

SCHEMA_VERSION = 1
FORMATS = ("table", "markdown", "csv", "json")


# --------------------------------------------------------------------------- numbers


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """8388608 -> '8.39 M'; decimal prefixes (k = 1e3), as datasheets use."""
    if value == 0:
        return f"0 {unit}".rstrip()
    if math.isinf(value):
        return "inf"
    prefixes = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
    for scale, p in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {p}{unit}"
    return f"{value:.{digits}g} {unit}".rstrip()


def ratio(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def _finite(x: float) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else x


# --------------------------------------------------------------------------- records


def cost_record(c: Cost) -> dict[str, Any]:
    return {
        "flops": c.flops,
        "matmul_flops": c.matmul_flops,
        "bytes": c.bytes,
        "weight_bytes": c.weight_bytes,
        "activation_bytes": c.activation_bytes,
        "kv_bytes": c.kv_bytes,
        "read_bytes": c.read_bytes,
        "write_bytes": c.write_bytes,
        "intensity": _finite(c.intensity),
    }


def kernel_record(k: Kernel) -> dict[str, Any]:
    return {"name": k.name, "kind": k.kind, "scope": k.scope, "count": k.count, "shape": k.dims,
            **cost_record(k.cost), "params": k.params}


def model_record(a: Analysis) -> dict[str, Any]:
    s = a.shape
    return {
        "name": s.name,
        "model_type": s.model_type,
        "family": s.family,
        "n_layers": s.n_layers,
        "d_model": s.d_model,
        "n_heads": s.n_heads,
        "n_kv_heads": s.n_kv_heads,
        "head_dim": s.head_dim,
        "d_ff": s.d_ff,
        "vocab_size": s.vocab_size,
        "tie_word_embeddings": s.tie_word_embeddings,
        "sliding_window": s.sliding_window,
        "params": a.params,
        "weight_bytes": a.weight_storage_bytes,
        "kv_bytes_per_token": a.kv_bytes_per_token,
    }


def workload_record(a: Analysis) -> dict[str, Any]:
    w = a.workload
    rec: dict[str, Any] = {"phase": w.phase, "batch": w.batch}
    if w.phase == "decode":
        rec["context"] = w.kv_len
    else:
        rec["prompt"] = w.query_tokens
        rec["causal"] = w.causal
        rec["logits"] = "all" if w.logits_all else "last"
    rec.update(query_tokens=w.query_tokens, kv_len=w.kv_len, weight_dtype=w.weight_dtype.name,
               act_dtype=w.act_dtype.name, kv_dtype=w.kv_dtype.name, compute_dtype=w.compute_dtype.name)
    if w.weight_dtype.quantized:
        rec["group_size"] = w.group_size
    return rec


def to_record(a: Analysis) -> dict[str, Any]:
    """The JSON document: model, workload, kernels (per instance, execution order), totals (per step)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model_record(a),
        "workload": workload_record(a),
        "kernels": [kernel_record(k) for k in a.kernels],
        "totals": cost_record(a.totals),
    }


def to_json(a: Analysis) -> str:
    return json.dumps(to_record(a), indent=2)


# --------------------------------------------------------------------------- text


def header_lines(a: Analysis, defaults: Iterable[str] = ()) -> list[str]:
    s, w = a.shape, a.workload
    defaulted = set(defaults)

    def d(key: str) -> str:
        return " (default)" if key in defaulted else ""

    kv_note = f", sliding window {s.sliding_window}" if s.sliding_window else ""
    lines = [
        f"model     {s.name}  [{s.model_type}]",
        f"shape     L={s.n_layers} layers, D={s.d_model}, N={s.n_heads} heads / K={s.n_kv_heads} KV heads x H={s.head_dim}, "
        f"F={s.d_ff}, V={s.vocab_size}{', tied embeddings' if s.tie_word_embeddings else ''}{kv_note}",
        f"size      {a.params:,} parameters, {a.weight_storage_bytes:,} bytes of weights ({w.weight_dtype.name}"
        f"{f', group {w.group_size}' if w.weight_dtype.quantized else ''}), "
        f"KV cache {a.kv_bytes_per_token:,} bytes per token ({w.kv_dtype.name})",
    ]
    if w.phase == "decode":
        what = f"decode one token, batch B={w.batch}{d('batch')}, context S={w.kv_len}{d('context')} (the new token included)"
    else:
        mask = "causal" if w.causal else "full rectangle (no causal discount)"
        logits = "every position" if w.logits_all else "last token only"
        what = f"prefill, batch B={w.batch}{d('batch')}, prompt T={w.query_tokens}, {mask}, logits for {logits}"
    lines.append(f"workload  {what}")
    lines.append(
        f"dtypes    weights {w.weight_dtype.name}, activations {w.act_dtype.name}, KV cache {w.kv_dtype.name}, "
        f"compute {w.compute_dtype.name}{d('dtype')}"
    )
    return lines


COLUMNS = ("kernel", "count", "shape", "FLOPs", "bytes", "weights", "activations", "KV cache", "AI", "% step bytes")


def kernel_rows(a: Analysis, human: bool) -> list[list[Any]]:
    total_bytes = a.totals.bytes
    rows = []
    for k in a.kernels:
        c = k.cost
        share = 100 * k.count * c.bytes / total_bytes
        if human:
            rows.append([k.name, f"x{k.count}", k.dims, si(c.flops), si(c.bytes, "B"), si(c.weight_bytes, "B"),
                         si(c.activation_bytes, "B"), si(c.kv_bytes, "B"), ratio(c.intensity), f"{share:.1f}"])
        else:
            rows.append([k.name, k.count, k.dims, c.flops, c.bytes, c.weight_bytes, c.activation_bytes,
                         c.kv_bytes, _finite(c.intensity), round(share, 3)])
    return rows


def totals_lines(a: Analysis) -> list[str]:
    t = a.totals
    w = a.workload
    per_layer = sum(1 for k in a.kernels if k.scope == "layer")
    return [
        f"step      {si(t.flops, 'FLOP')} ({t.flops:,}), {si(t.bytes, 'B')} moved ({t.bytes:,}), "
        f"AI {ratio(t.intensity)} FLOP/byte",
        f"bytes     weights {t.weight_bytes:,}  activations {t.activation_bytes:,}  KV cache {t.kv_bytes:,}",
        f"kernels   {per_layer} per layer, {sum(k.count for k in a.kernels)} per step; "
        f"{w.tokens:,} token(s) processed",
    ]


def to_text(a: Analysis, fmt: str = "table", defaults: Iterable[str] = ()) -> str:
    from tabulate import tabulate

    tablefmt = {"table": "simple", "markdown": "github"}[fmt]
    align = ("left", "right", "left") + ("right",) * (len(COLUMNS) - 3)
    table = tabulate(kernel_rows(a, human=True), headers=COLUMNS, tablefmt=tablefmt, colalign=align, disable_numparse=True)
    head = header_lines(a, defaults)
    foot = totals_lines(a)
    if fmt == "markdown":
        head, foot = [f"- {line}" for line in head], [f"- {line}" for line in foot]
    return "\n".join(head + ["", table, ""] + foot) + "\n"


def to_csv(a: Analysis) -> str:
    """One row per kernel (per-instance numbers, exact integers) and a final 'step total' row."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kernel", "kind", "scope", "count", "shape", "flops", "bytes", "weight_bytes", "activation_bytes",
                "kv_bytes", "intensity"])
    for k in a.kernels:
        c = k.cost
        w.writerow([k.name, k.kind, k.scope, k.count, k.dims, c.flops, c.bytes, c.weight_bytes,
                    c.activation_bytes, c.kv_bytes, _finite(c.intensity)])
    t = a.totals
    w.writerow(["step total", "", "step", 1, "", t.flops, t.bytes, t.weight_bytes, t.activation_bytes,
                t.kv_bytes, _finite(t.intensity)])
    return buf.getvalue()


def render(a: Analysis, fmt: str = "table", defaults: Iterable[str] = ()) -> str:
    if fmt == "json":
        return to_json(a) + "\n"
    if fmt == "csv":
        return to_csv(a)
    return to_text(a, fmt, defaults)
