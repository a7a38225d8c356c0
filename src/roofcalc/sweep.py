"""Decode steps over a grid of batch sizes and contexts, computed on numpy arrays.

Every kernel of a decode step costs c00 + c10·B + c01·S' + c11·B·S' in each of its integer
fields, where S' is the context it attends to (S, or min(S, W) for a sliding layer). Four
scalar evaluations per kernel pin the four coefficients exactly; the grid is then array
arithmetic, not a loop over the scalar calculator. Tests check every grid value against the
scalar calculator at random points.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .calculator import Cost, Workload, _layer_groups, decoder_layer, embed_tokens, kv_bytes_per_token, lm_head, rms_norm
from .roofline import Roof, launches
from .shapes import ModelShape

FIELDS = tuple(f.name for f in fields(Cost))


def _step_kernels(shape: ModelShape, wl: Workload):
    """(kernel, count, window) for every kernel of a decode step, layer types kept apart."""
    out = [(embed_tokens(shape, wl), 1, None)]
    for layer_type, n in _layer_groups(shape):
        window = shape.sliding_window if layer_type == "sliding" else None
        out += [(k, n, window) for k in decoder_layer(shape, wl, layer_type)]
    out += [(rms_norm("norm", shape.d_model, wl.tokens, wl, scope="model"), 1, None), (lm_head(shape, wl), 1, None)]
    return out


@dataclass(frozen=True)
class DecodeGrid:
    """Arrays of shape (len(batches), len(contexts)); costs per step, times in seconds."""

    batches: "object"  # np.ndarray of int64
    contexts: "object"
    flops: "object"
    bytes: "object"
    weight_bytes: "object"
    kv_bytes: "object"
    floor_s: "object"  # Σ count × max(t_compute, t_memory) per kernel
    launch_s: float  # Σ launches × overhead (the same at every point)
    memory_bytes: "object"  # weights in memory + the KV cache of B sequences of S tokens

    @property
    def intensity(self):
        return self.flops / self.bytes


def decode_grid(shape: ModelShape, batches, contexts, roof: Roof, *, impl: str = "hf-eager",
                launch_overhead_s: float = 5e-6, **workload_kw) -> DecodeGrid:
    import numpy as np

    b = np.asarray(batches, dtype=np.int64)[:, None]
    s = np.asarray(contexts, dtype=np.int64)[None, :]
    probe = {(bb, ss): _step_kernels(shape, Workload.decode(bb, ss, **workload_kw)) for bb in (1, 2) for ss in (1, 2)}
    totals = {f: np.zeros((b.shape[0], s.shape[1]), dtype=np.int64) for f in FIELDS}
    floor = np.zeros((b.shape[0], s.shape[1]))
    n_launch = 0
    base = Workload.decode(1, 1, **workload_kw)
    for i, (kernel, count, window) in enumerate(probe[(1, 1)]):
        eff_s = s if window is None else np.minimum(s, window)
        costs = {key: probe[key][i][0].cost for key in probe}
        row = {}
        for f in FIELDS:
            v11, v21, v12, v22 = (getattr(costs[k], f) for k in ((1, 1), (2, 1), (1, 2), (2, 2)))
            c11 = v22 - v21 - v12 + v11  # coefficient of B·S'
            c10 = v21 - v11 - c11  # of B
            c01 = v12 - v11 - c11  # of S'
            c00 = v11 - c10 - c01 - c11
            row[f] = c00 + c10 * b + c01 * eff_s + c11 * b * eff_s
            totals[f] += count * row[f]
        nbytes = row["weight_bytes"] + row["act_read_bytes"] + row["act_write_bytes"] + row["kv_read_bytes"] + \
            row["kv_write_bytes"]
        floor += count * np.maximum(row["flops"] / roof.peak_flop_per_s, nbytes / roof.bandwidth_bytes_per_s)
        n_launch += count * launches(kernel, impl, base.act_dtype.name)
    launch_s = launch_overhead_s if impl == "cuda-graph" else n_launch * launch_overhead_s
    weights_in_memory = sum(count * k.param_bytes for k, count, _ in probe[(1, 1)])
    per_layer_kv = kv_bytes_per_token(shape, base.kv_dtype) // shape.n_layers
    cached = sum(n * (s if t == "full" else np.minimum(s, shape.sliding_window)) for t, n in _layer_groups(shape))
    total_bytes = sum(totals[f] for f in FIELDS if f not in ("flops", "matmul_flops"))
    return DecodeGrid(
        batches=b[:, 0], contexts=s[0], flops=totals["flops"], bytes=total_bytes,
        weight_bytes=totals["weight_bytes"], kv_bytes=totals["kv_read_bytes"] + totals["kv_write_bytes"],
        floor_s=floor, launch_s=launch_s, memory_bytes=weights_in_memory + b * cached * per_layer_kv,
    )
