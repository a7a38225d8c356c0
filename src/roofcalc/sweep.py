"""Batch sizes, contexts and prompts compared analytically, on numpy arrays.

Decode. Every kernel of a decode step costs c00 + c10·B + c01·S' + c11·B·S' in each of its
integer fields, where S' is the context it attends to (S, or min(S, W) for a sliding layer).
Four scalar evaluations per kernel pin the four coefficients exactly; the grid is then array
arithmetic, not a loop over the scalar calculator. The step's totals are the kernels' count ·
coefficients summed before one evaluation; each kernel's own costs (for its time) are evaluated
on the least shape they need (a weight's bytes and a matmul's rows are one column, one value
per batch) and numpy broadcasts them, so only the kernels that read the cache cost a whole grid.
Tests check every grid value against the scalar calculator at random points.

Prefill costs are quadratic in the prompt and piecewise under a sliding window; a prefill
grid evaluates the scalar calculator once per (batch, prompt) point (about half a millisecond
each). A whole request (prompt P, then N tokens) is one prefill plus the decode row of
contexts P+1 … P+N-1, summed as an array.

Time model (docs/conventions.md, predict.py): each kernel's times are the single step's
:func:`roofcalc.roofline.kernel_term` on its cost arrays, and every grid point goes through the same
:func:`roofcalc.predict.step_times` as a single step — the floors, the kernels at their expected
and pessimistic efficiencies, and the host's time — so ``predicted_s`` here equals the
single-step report's at every point (a test checks random points; ``check_corners`` checks the
grid's corners against the scalar path every time a sweep runs).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields, replace

from .calculator import (MAX_BATCH, MAX_TOKENS, Cost, Workload, _layer_groups, analyze, check_group, decoder_layer,
                         kv_cache_bytes, model_head, touched_experts)
from .errors import RoofcalcError
from .inputs import MAX_GRID_POINTS, check_sizes, distinct_sizes
from .predict import KernelModel, StepTimes, ideal, step_times
from .parallel import PipelineAnalyzer, link_bytes, pipeline_host, pipeline_step_s, stage_times, stops_paying_at
from .roofline import Roof, attention_sizes, gdn_modules, gdn_sizes, gpus_of, kernel_term, launches, place, weight_format
from .shapes import ModelShape

FIELDS = tuple(f.name for f in fields(Cost))
DEFAULT_MIN_GAIN = 0.10  # "doubling the batch gains less than 10% tokens/s"
MAX_REQUEST_STEPS = 1_000_000  # decode steps a request sweep sums (about 3 s on a 2-core machine)
MAX_PREFILL_POINTS = 5_000  # prefills a sweep evaluates one by one (about 1.5 ms each for a hand model here)
MAX_RANK_REQUEST_ROWS = 256  # prompts x pipeline stages a request sweep over one rank's analysis checks
_INT64_SAFE = 1 << 62


class GridOverflow(RoofcalcError):
    """A grid whose exact integer counts would not fit in 64 bits."""

# --------------------------------------------------------------------------- decode grid


def _step_kernels(shape: ModelShape, wl: Workload):
    """(kernel, count, window) for every kernel of a decode step, kinds of layer kept apart."""
    before, after = model_head(shape, wl)
    out = [(k, 1, None) for k in before]
    for (layer_type, mlp_type), n in _layer_groups(shape):
        window = shape.sliding_window if layer_type == "sliding" else None
        out += [(k, n, window) for k in decoder_layer(shape, wl, layer_type, mlp_type)]
    return out + [(k, 1, None) for k in after]


def expert_weight_bytes(shape: ModelShape, wl: Workload):
    """x(tokens): bytes of routed-expert weights one step reads when that many tokens are routed
    (always 0 for a dense model), as the calculator counts them."""
    moe = shape.moe
    parts = [(count, kernel.param_bytes // moe.n_experts) for kernel, count, _ in _step_kernels(shape, wl)
             if kernel.role == "experts"] if moe else []

    def x(tokens: int) -> int:
        if not parts:
            return 0
        touched = touched_experts(moe.n_experts, moe.top_k, tokens, wl.experts)
        return sum(count * round(touched * per) for count, per in parts)

    return x


class _Fits:
    """Grids that know the memory each point needs."""

    def fits(self, capacity_bytes: float | None):
        """Where weights + KV cache fit in ``capacity_bytes`` (everywhere when it is unknown)."""
        import numpy as np

        if capacity_bytes is None:
            return np.ones(self.memory_bytes.shape, dtype=bool)
        return self.memory_bytes <= capacity_bytes


class _Steps(_Fits):
    """Grids of whole steps on a roof."""

    @property
    def intensity(self):
        return self.flops / self.bytes

    @property
    def bound(self):
        """What bounds each step: one of STEP_BOUNDS, the step model's verdict (predict.py)."""
        return self.times.bound

    @property
    def predicted_s(self):
        return self.times.predicted_s

    @property
    def predicted_lower_s(self):
        return self.times.predicted_lower_s

    @property
    def predicted_upper_s(self):
        return self.times.predicted_upper_s


@dataclass(frozen=True)
class DecodeGrid(_Steps):
    """One decode step at every (batch, context): arrays of shape (len(batches), len(contexts)).
    Costs are per step; times in seconds on ``roof``."""

    batches: "object"  # np.ndarray of int64
    contexts: "object"
    flops: "object"
    bytes: "object"
    weight_bytes: "object"
    kv_bytes: "object"
    floor_s: "object"  # Σ count × max(t_compute, t_memory) per kernel
    memory_bytes: "object"  # weights in memory + the KV cache of B sequences of S tokens
    roof: Roof
    impl: str = "hf-eager"
    times: StepTimes | None = None

    @property
    def step_s(self):
        """Predicted step time (= predicted_s): each sequence's time per output token."""
        return self.times.predicted_s

    @property
    def step_upper_s(self):
        return self.times.predicted_upper_s

    @property
    def tokens_per_s(self):
        """B sequences each get one token per step."""
        return self.batches[:, None] / self.step_s



def _bilinear(v11: int, v21: int, v12: int, v22: int, s0: int = 1, d: int = 1) -> tuple[int, int, int, int]:
    """d² × (c00, c10, c01, c11) of c00 + c10·B + c01·S + c11·B·S through its values at B = 1, 1 + d and
    S = s0, s0 + d (exact integers; :func:`_at` divides by d² at the end). Probes d apart fit a cost that
    is another's rounded down to a whole share of d ranks (⌊c·n/d⌋: one --tp rank's) to within a byte
    anywhere: over d positions its share grows by a whole number, where over one it grows by 0 or 1."""
    dbs = v22 - v21 - v12 + v11  # d² · c11
    db, ds = v21 - v11, v12 - v11  # d · (c10 + c11·s0), d · (c01 + c11)
    return (d * d * v11 - d * db - d * s0 * ds + s0 * dbs, d * db - s0 * dbs, d * ds - dbs, dbs)


def _at(coefficients, b, s, den: int = 1):
    """c00 + c10·B + c01·S + c11·B·S (exact integers), over ``den`` rounded down (the d² of
    :func:`_bilinear`'s probes), over the batches ``b`` (a column) and the
    attended contexts ``s`` (a row), on the least shape that holds it: a column where it does not
    change with S (a weight's bytes), a row where it does not change with B, (1, 1) where neither;
    numpy broadcasts it over the grid. Always an array, so the step model takes its array path."""
    import numpy as np

    c00, c10, c01, c11 = coefficients
    out = np.full((1, 1), c00, dtype=np.int64)
    if c10:
        out = out + c10 * b
    if c01:
        out = out + c01 * s
    if c11:
        out = out + c11 * b * s
    return out // den if den != 1 else out


def _plus(*coefficients):
    """The coefficients of a sum of bilinear costs."""
    return [sum(c) for c in zip(*coefficients)]


def _probe_contexts(contexts, analyzer) -> int:
    """S of the first probe: 1 for the hand models; for a trace, the smallest context of at least 2
    (a step at context 1 runs with no cache, which is another program)."""
    return 1 if analyzer is None else max(2, min(int(c) for c in contexts))


def _probe_step(analyzer, s0: int, workload_kw) -> int:
    """How far apart a grid's probes lie: 1, or for one --tp rank of a trace, the least common multiple
    of the shares its costs are rounded down to (``spacing``), so that its fit is within a byte anywhere."""
    if analyzer is None:
        return 1
    return getattr(analyzer(Workload.decode(1, s0, **workload_kw)), "spacing", 1)


def _is_roof(roof) -> None:
    """The grids take a Roof (a sweep's .roof, or roofline.Roof(bandwidth, peak)); a device is sweep()'s."""
    if not isinstance(roof, Roof):
        raise RoofcalcError(f"roof must be a roofcalc.roofline.Roof (a sweep's .roof), got {type(roof).__name__}; "
                            f"for a device, roofcalc.sweep.sweep(shape, hardware, ...) builds its roof and model")


def decode_grid(shape: ModelShape, batches, contexts, roof: Roof, *, impl: str = "hf-eager",
                model: KernelModel | None = None, analyzer=None, _probes: tuple[int, int] | None = None,
                **workload_kw) -> DecodeGrid:
    """Decode steps for every batch × context; ``workload_kw`` as :class:`Workload` takes them (dtypes).
    ``model``: the efficiencies and host overheads (default: ideal, so predicted_s is the floors).
    ``analyzer(workload)``: an :class:`Analysis` of one step other than the hand model's (a trace, its
    kernels one row per layer); its costs are fitted bilinear from four probes like the hand model's,
    and :func:`check_corners` holds the fit to direct traces. A traced step that runs other ops at batch 1
    than at a larger batch (Llama-4's router scores: a transposed view at batch 1, a copy from batch 2) is
    fitted twice, batch 1 alone and the larger batches on probes at 1 + d and 1 + 2d, or where those differ
    too, one batch at a time, and its rows stacked (``_probes``: the two batches the probes run at, for the
    fit's B = 1 and 1 + d; one batch twice fits nothing across batches). Probes whose attention differs in
    kind (a chunked attention's sizes end at its chunk) fit a single context from below it, and refuse a
    sweep across it."""
    _is_roof(roof)
    import numpy as np

    check_sizes(list(batches), "batch", MAX_BATCH)
    check_sizes(list(contexts), "context", MAX_TOKENS)
    if len(batches) * len(contexts) > MAX_GRID_POINTS:
        raise RoofcalcError(f"{len(batches):,} batches x {len(contexts):,} contexts is more than "
                            f"{MAX_GRID_POINTS:,} points; sweep fewer")
    b = np.asarray(batches, dtype=np.int64)[:, None]
    s = np.asarray(contexts, dtype=np.int64)[None, :]
    big_b, big_s = int(b.max()), int(s.max())
    s0 = _probe_contexts(contexts, analyzer)

    def kernels_of(wl, swept: bool = False):
        if analyzer is None:
            return _step_kernels(shape, wl)
        return [(k, k.count, k.window or None) for k in (analyzer.at_batch(wl) if swept else analyzer(wl)).kernels]

    d = _probe_step(analyzer, s0, workload_kw)
    if d > 1:  # probes d apart on one side of every window: both below it (a context S counts min(S, W) keys)
        windows = {w for _, _, w in kernels_of(Workload.decode(1, s0, **workload_kw)) if w}
        while (inside := [w for w in windows if s0 < w < s0 + d]):
            if min(inside) - d < 2:
                raise RoofcalcError(f"a rank's sweep probes contexts {d} apart, and no two of them fit below the "
                                    f"window of {min(inside)}: sweep contexts of {min(inside)} and more")
            s0 = min(inside) - d
    p1, p2 = _probes or (1, 1 + d)  # the batches of the fit's probes at B = 1 and B = 1 + d
    shift = p1 - 1 if p2 != p1 else 0  # the fit's B is the batch less this (probes one batch twice: no B term)

    def probe_wl(bb: int, ss: int) -> Workload:  # a probe's step at the batch it stands for
        return Workload.decode(p1 if bb == 1 else p2, ss, **workload_kw)

    def names_of(kernels) -> list:
        return [k.name for k, _, _ in kernels]

    shifted = False
    while True:
        probe = {(bb, ss): kernels_of(probe_wl(bb, ss)) for bb in (1, 1 + d) for ss in (s0, s0 + d)}
        names = names_of(probe[(1, s0)])
        if any(names_of(kernels) != names for kernels in probe.values()):
            if analyzer is None:
                raise AssertionError("the probe steps do not run the same kernels in the same order")
            if _probes is not None or any(names_of(probe[(bb, s0 + d)]) != names_of(probe[(bb, s0)])
                                          for bb in (1, 1 + d)):
                raise RoofcalcError(f"{shape.name}: the traced decode step runs other ops at context {s0 + d} than "
                                    f"at {s0} (batch {p1}); predict one context at a time")
            return _batch_apart(shape, batches, contexts, roof, d, impl=impl, model=model, analyzer=analyzer,
                                **workload_kw)
        kinds = [{bool(attention_sizes(kernels[i][0])) for kernels in probe.values()} for i in range(len(names))]
        if all(len(k) == 1 for k in kinds):
            break
        if big_s == s0 and s0 - d >= 2 and not shifted:  # one context, at the last of a program: fitted on
            s0, shifted = s0 - d, True  # probes below it, its kernels (their launches) the context's own
            continue
        raise RoofcalcError(f"{shape.name}: the traced attention changes between contexts {s0} and {s0 + d} (a "
                            f"chunk or window ends there): sweep contexts on one side of it")
    bf, big_bf = b - shift, big_b - shift  # the batches in the fit's coordinate
    # routed experts read the weights of the experts their tokens touch: not linear in B, but the
    # same at every context; evaluated once per batch
    if shape.moe and analyzer is None:
        per_batch = {int(bb): _step_kernels(shape, Workload.decode(int(bb), 1, **workload_kw)) for bb in b[:, 0]}
    elif analyzer is not None and analyzer.exact_batches and (shape.moe or analyzer.traced):  # one rank's experts
        per_batch = {int(bb): kernels_of(Workload.decode(int(bb), s0, **workload_kw), True) for bb in b[:, 0]}
    else:
        per_batch = {}
    n_b, n_s = b.shape[0], s.shape[1]
    n_launch = np.zeros((n_b, 1), dtype=np.int64)
    corner = 0  # the largest total, in exact integers, to keep int64 from overflowing
    base = Workload.decode(1, 1, **workload_kw)
    act_name = base.act_dtype.name
    keys = ((1, s0), (1 + d, s0), (1, s0 + d), (1 + d, s0 + d))
    den = d * d  # every fitted coefficient is d² times the cost's (_bilinear)
    # the step's totals are bilinear too: each kernel's count · coefficients summed per attended context
    # (a sliding window's min(S, W) apart), then evaluated once; routed-expert weights, per batch, apart
    totals: dict = {}  # window -> {"flops", "bytes", "weight_bytes", "kv_bytes"}: Σ count · (c00, c10, c01, c11)
    extra = dict.fromkeys(("flops", "bytes", "weight_bytes", "kv_bytes"), 0)  # Σ count · what is not bilinear:
    # columns, one value per batch
    terms = []
    gdn = gdn_modules(k for k, _, _ in probe[(1, s0)])  # the modules whose convs are a gated delta net's
    for i, (kernel, count, window) in enumerate(probe[(1, s0 + d) if shifted else (1, s0)]):
        eff_s = s if window is None else np.minimum(s, window)
        big_eff = big_s if window is None else min(big_s, window)
        costs = [probe[key][i][0].cost for key in keys]
        coef = {f: _bilinear(*(getattr(c, f) for c in costs), s0, d) for f in FIELDS}
        for c00, c10, c01, c11 in coef.values():
            corner += count * abs(c00 + c10 * big_bf + c01 * big_eff + c11 * big_bf * big_eff)
        if corner >= _INT64_SAFE:
            raise GridOverflow(f"batch {big_b:,} x context {big_s:,} is too large to count in 64 bits"
                               + (f" with a rank's probes {d} apart (its costs fitted at {d}^2 times)" if d > 1 else
                                  "; no device holds such a step"))
        weight = None  # the weight bytes where they are not bilinear in B: a column
        column = None  # a kernel whose cost does not change with the context, where the analysis at every batch
        # is at hand: its whole cost per batch (the busiest --ep-attention tp rank's expert rows are not linear in B)
        if per_batch and costs[0] == costs[2] and costs[1] == costs[3]:
            at = [per_batch[int(bb)][i][0] for bb in b[:, 0]]
            column = {f: np.array([[getattr(k.cost, f)] for k in at], dtype=np.int64) for f in FIELDS}
        elif per_batch:
            weight = np.array([[per_batch[int(bb)][i][0].cost.weight_bytes] for bb in b[:, 0]], dtype=np.int64)
        elif kernel.expert_weights:  # traced experts: the share a batch reaches
            mode = workload_kw.get("experts", "expected")
            rest = costs[0].weight_bytes - analyzer.expert_bytes(kernel.expert_weights, p1, mode)
            weight = np.array([[rest + analyzer.expert_bytes(kernel.expert_weights, int(bb), mode)]
                               for bb in b[:, 0]], dtype=np.int64)
        if column is not None:
            kv = column["kv_read_bytes"] + column["kv_write_bytes"]
            for f, c in (("flops", column["flops"]), ("weight_bytes", column["weight_bytes"]), ("kv_bytes", kv),
                         ("bytes", column["weight_bytes"] + column["act_read_bytes"] + column["act_write_bytes"] + kv)):
                extra[f] = extra[f] + count * c
        else:
            moved = _plus(coef["act_read_bytes"], coef["act_write_bytes"], coef["kv_read_bytes"], coef["kv_write_bytes"])
            step = totals.setdefault(window, {f: [0, 0, 0, 0] for f in ("flops", "bytes", "weight_bytes", "kv_bytes")})
            for f, c in (("flops", coef["flops"]), ("bytes", moved if weight is not None else
                                                              _plus(moved, coef["weight_bytes"])),
                         ("weight_bytes", [0, 0, 0, 0] if weight is not None else coef["weight_bytes"]),
                         ("kv_bytes", _plus(coef["kv_read_bytes"], coef["kv_write_bytes"]))):
                step[f] = [t + count * x for t, x in zip(step[f], c)]
        if weight is not None:
            extra["weight_bytes"] = extra["weight_bytes"] + count * weight
            extra["bytes"] = extra["bytes"] + count * weight
        # the kernel itself, on the least shape its costs need, through the single step's rule
        if column is not None:
            cost = {f: column[f] for f in FIELDS if f != "matmul_flops"}
        else:
            cost = {f: _at(coef[f], bf, eff_s, den) for f in FIELDS if f != "matmul_flops"}  # (no time reads matmul FLOPs)
        if weight is not None:
            cost["weight_bytes"] = weight
        message = link = None
        if kernel.kind == "collective":
            if column is not None:
                message = np.array([[k.message_bytes] for k in at], dtype=np.int64)
            else:
                message = _at(_bilinear(*(probe[key][i][0].message_bytes for key in keys), s0, d), bf, eff_s, den)
            link = link_bytes(kernel.role, message, kernel.group)
        if per_batch:
            n = np.array([[launches(per_batch[int(bb)][i][0], impl, act_name, shape)] for bb in b[:, 0]])
        else:
            n = launches(kernel, impl, act_name, shape)
        n_launch += count * n
        rows = np.array([[k.rows] for k in at], dtype=np.int64) if column is not None else \
            _at(_bilinear(*(probe[key][i][0].rows for key in keys), s0, d), bf, eff_s, den)
        attn = None  # an attention call's sizes on the grid: its batch and the keys it reads at each context
        if kernel.kind == "attention" and attention_sizes(kernel):
            keys_read = _at(_bilinear(*(probe[key][i][0].sizes.kv_len for key in keys), s0, d), bf, eff_s, den)
            attn = attention_sizes(kernel, batch=b, kv_len=keys_read, window=window or 0, context=s)
        terms.append(kernel_term(kernel, roof, n, weight_format(kernel, base.weight_dtype), count=count,
                                 cost=Cost(**cost), rows=rows, message=message, link=link, attn=attn,
                                 gdn=gdn_sizes(kernel, base, gdn, impl, batch=b)))
    times = step_times(terms, model or ideal(), impl, n_launch, b, gpus_of(analyzer))
    # every kernel's share added in kernel order, as the single step adds them; the sums that no
    # kernel's context reached (a column) spread over the grid
    times = replace(times, **{f: np.broadcast_to(getattr(times, f), (n_b, n_s)).copy()
                              for f in ("floor_s", "device_s", "device_upper_s", "compute_s", "comm_s", "fixed_s")
                              if hasattr(getattr(times, f), "shape") and getattr(times, f).shape != (n_b, n_s)})
    grid = {f: np.zeros((n_b, n_s), dtype=np.int64) for f in ("flops", "bytes", "weight_bytes", "kv_bytes")}
    for window, step in totals.items():
        eff_s = s if window is None else np.minimum(s, window)
        for f in grid:
            grid[f] += _at(step[f], bf, eff_s, den)
    for f in grid:
        grid[f] += extra[f]
    if analyzer is None:
        weights_in_memory = sum(count * k.param_bytes for k, count, _ in probe[(1, 1)])
        memory = weights_in_memory + kv_cache_bytes(shape, base.kv_dtype, b, s)
    elif analyzer.memory_grid is not None:  # one rank's weights and cache, exactly
        memory = analyzer.memory_grid(b, s, **workload_kw)
    else:  # weights + the traced cache, bilinear like the costs
        memory = np.broadcast_to(_at(_bilinear(*(analyzer(probe_wl(bb, ss)).memory_bytes
                                                 for bb, ss in keys), s0, d), bf, s, den), (n_b, n_s)).copy()
    return DecodeGrid(
        batches=b[:, 0], contexts=s[0], flops=grid["flops"], bytes=grid["bytes"],
        weight_bytes=grid["weight_bytes"], kv_bytes=grid["kv_bytes"],
        floor_s=times.floor_s, memory_bytes=memory, roof=roof,
        impl=impl, times=times,
    )


def _batch_apart(shape, batches, contexts, roof, d: int, **kw) -> DecodeGrid:
    """decode_grid of a traced step that runs other ops at batch 1 than at 1 + d: batch 1 fitted alone, the
    larger batches on probes at 1 + d and 1 + 2d where those run the same ops (Llama-4), else each batch alone;
    the rows stacked in the order of ``batches``."""
    analyzer, workload_kw = kw["analyzer"], {k: v for k, v in kw.items() if k not in ("impl", "model", "analyzer")}
    s0 = _probe_contexts(contexts, analyzer)
    same = [[k.name for k in analyzer(Workload.decode(bb, s0, **workload_kw)).kernels] for bb in (1 + d, 1 + 2 * d)]
    rows = {}  # batch -> (a grid, its row)
    larger = sorted({int(bb) for bb in batches if int(bb) > 1})
    if same[0] == same[1] and len(larger) > 1:
        g = decode_grid(shape, larger, contexts, roof, _probes=(1 + d, 1 + 2 * d), **kw)
        rows.update({bb: (g, i) for i, bb in enumerate(larger)})
    for bb in batches:
        if int(bb) not in rows:
            rows[int(bb)] = (decode_grid(shape, [int(bb)], contexts, roof, _probes=(int(bb), int(bb)), **kw), 0)
    return _stacked([rows[int(bb)] for bb in batches])


def _stacked(rows: list) -> DecodeGrid:
    """One grid of rows of others, (grid, row) each, in their order: decode_grid's parts fitted apart."""
    import numpy as np

    first = rows[0][0]
    n_s = len(first.contexts)

    def stack(get):  # each grid's value (an array of the grid's shape, or one that broadcasts to it) at its row
        return np.vstack([np.broadcast_to(np.asarray(get(g)), (len(g.batches), n_s))[i:i + 1] for g, i in rows])

    t = first.times
    arrays = [f.name for f in fields(first) if f.name not in ("batches", "contexts", "roof", "impl", "times")]
    return replace(first, batches=np.array([g.batches[i] for g, i in rows]),
                   **{f: stack(lambda g, f=f: getattr(g, f)) for f in arrays},
                   times=replace(t, **{f.name: stack(lambda g, f=f.name: getattr(g.times, f))
                                       for f in fields(t) if f.name not in ("overlap", "band")}))


# --------------------------------------------------------------------------- verdicts in words


@dataclass(frozen=True)
class BatchVerdicts:
    """What batching does at one context, solved in closed form (every cost is linear in B at fixed S)."""

    context: int
    ridge: float  # FLOP/byte of the roof the verdicts use
    intensity_limit: float  # the step's AI as B grows without bound: KV bytes grow as fast as FLOPs
    ridge_batch: int | None  # smallest B from which the step's AI stays at or above the ridge; None: never here
    kv_over_weights_batch: int | None  # smallest B from which KV bytes per step exceed weight bytes
    max_batch: int | None  # largest B that fits in memory (0: not even one); None: capacity unknown
    capacity_bytes: float | None
    min_gain: float
    doubling_batch: int | None  # first B of 1, 2, 4, … where doubling gains less than min_gain tokens/s
    doubling_gain: float | None  # tokens/s(2B) / tokens/s(B) - 1 there
    largest_batch_tried: int = MAX_BATCH  # the top of the 1, 2, 4, … ladder


def _first_batch(holds, top: int = MAX_BATCH) -> int | None:
    """The smallest B in 1 … top where ``holds(B)`` is true, for a predicate that stays true once it
    is (bisection); None if it never is."""
    if not holds(top):
        return None
    lo, hi = 0, top  # holds(hi); not holds(lo) (B = 0 is never a batch)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


def _first_batches(holds, n: int, top: int = MAX_BATCH) -> list:
    """:func:`_first_batch` at ``n`` contexts at once, each bisected as it would be alone: ``holds(B)``
    takes an int64 array of one batch per context and says where the predicate holds."""
    import numpy as np

    hi = np.full(n, top, dtype=np.int64)
    ever = holds(hi)
    lo = np.zeros(n, dtype=np.int64)
    while True:
        active = ever & (hi - lo > 1)
        if not active.any():
            break
        mid = np.where(active, (lo + hi) // 2, hi)  # a context already decided asks again where it holds
        h = holds(mid)
        hi, lo = np.where(active & h, mid, hi), np.where(active & ~h, mid, lo)
    return [int(v) if e else None for v, e in zip(hi.tolist(), ever.tolist())]


def _at_least(left, right):
    """int64 ``left`` >= float64 ``right``, compared exactly (as Python compares an int with a float):
    an integer is at least a float where it is at least the float's ceiling."""
    import numpy as np

    limit = float(1 << 63)
    top = right >= limit  # beyond every int64
    c = np.ceil(np.where(top | (right < -limit), 0.0, right)).astype(np.int64)
    return np.where(top, False, np.where(right < -limit, True, left >= c))


def _all_of(holds, bb, period: int, top: int):
    """``holds`` at every batch of ``bb`` … ``bb`` + period − 1 (none past ``top``): an int64 array of
    batches, or one batch."""
    import numpy as np

    if isinstance(bb, (int, np.integer)):
        return all(holds(min(int(bb) + d, top)) for d in range(period))
    out = np.ones(np.shape(bb), dtype=bool)
    for d in range(period):
        out &= np.asarray(holds(np.minimum(bb + d, top)), dtype=bool)
    return out


def _batch_function(x):
    """x(B) of an int64 array of batches (each distinct batch asked once)."""
    import numpy as np

    def xs(bb):
        values, index = np.unique(bb, return_inverse=True)
        return np.array([x(int(v)) for v in values.tolist()], dtype=np.int64)[index.reshape(bb.shape)]

    return xs


def step_batch_verdicts(r) -> BatchVerdicts | None:
    """What batching does at a single step's context (a :class:`roofcalc.roofline.Roofline`), decode only:
    the sweep's own verdicts at that context, so the single report and a sweep say the same."""
    w = r.analysis.workload
    if w.phase != "decode":
        return None
    kw = dict(weight_dtype=w.weight_dtype, act_dtype=w.act_dtype, kv_dtype=w.kv_dtype, group_size=w.group_size,
              experts=w.experts, mla=w.mla, cache_update=w.cache_update, attention=w.attention,
              ubatch=w.ubatch, eager_ops=w.eager_ops, tp_layout=w.tp_layout)
    model = r.model
    if model is not None and model.db is not None:  # --kernel-db reads one step's kernels; a sweep takes their fits
        from dataclasses import replace

        model = replace(model, db=None)
    shape, analyzer = r.analysis.shape, None
    par = getattr(r.analysis, "parallel", None)
    if par is not None and par.gpus > 1:  # one rank's step: its sweep's analyzer over the whole model, as build_sweep
        if par.pp > 1:  # (no verdicts: a pipeline's step is not linear in the batch, as its sweep says)
            return None
        from .parallel import rank_analyzer

        shape = r.analysis.full.shape
        analyzer = rank_analyzer(shape, par)
    v = batch_verdicts(shape, [w.kv_len], r.roof, r.capacity_bytes, impl=r.step.impl, model=model,
                       analyzer=analyzer, **kw)
    return in_step_batches(v, analyzer.scale if analyzer is not None else 1)[0]


def in_step_batches(verdicts, scale: int) -> tuple:
    """Verdicts an --ep rank's analyzer gave in its own batch (LocalBatchAnalyzer), in the step's: ``scale`` times."""
    if scale == 1:
        return tuple(verdicts)
    from dataclasses import replace

    return tuple(replace(v, **{f: None if getattr(v, f) is None else getattr(v, f) * scale for f in
                               ("ridge_batch", "kv_over_weights_batch", "max_batch", "doubling_batch",
                                "largest_batch_tried")}) for v in verdicts)


def batch_verdicts(shape: ModelShape, contexts, roof: Roof, capacity_bytes: float | None = None, *,
                   impl: str = "hf-eager", min_gain: float = DEFAULT_MIN_GAIN,
                   model: KernelModel | None = None, analyzer=None, **workload_kw) -> list[BatchVerdicts]:
    _is_roof(roof)
    import numpy as np

    if not 0 < min_gain < 1:
        raise RoofcalcError(f"the doubling gain must lie between 0 and 100%, got {100 * min_gain:g}%")
    kw = dict(impl=impl, model=model, analyzer=analyzer, **workload_kw)
    two = decode_grid(shape, [1, 2], contexts, roof, **kw)
    top = MAX_BATCH // (analyzer.scale if analyzer is not None else 1)  # --ep: a batch of b is b·scale sequences in all
    ladder = [1 << k for k in range(top.bit_length())]  # 1, 2, 4, … top
    while True:  # huge models at huge contexts: stop the ladder where 64-bit counts would overflow
        try:
            lad = decode_grid(shape, ladder, contexts, roof, **kw)
            break
        except GridOverflow:
            if len(ladder) <= 2:
                raise
            ladder.pop()
    tps = lad.tokens_per_s
    # x(B) = (FLOPs, bytes, weight bytes) of the step's parts that are not linear in B, exactly: the grid's
    # probes at B = 1 and 2 fit the rest
    if analyzer is None:
        w = expert_weight_bytes(shape, Workload.decode(1, 1, **workload_kw))  # 0 for a dense model

        def x(tokens: int) -> tuple:
            return 0, w(tokens), w(tokens)
    elif analyzer.exact_batches:  # one rank's (--tp, --ep): every kernel whose cost does not change with the
        # context (at one and two sequences, the probes), at that batch (the busiest --ep-attention tp rank's
        # expert rows are not linear in B)
        s0 = _probe_contexts(contexts, analyzer)
        d = _probe_step(analyzer, s0, workload_kw)  # (decode_grid's probes: a rank's rounded share can grow by
        # less than a byte a position, and looks context-free over one)
        probes = [analyzer(Workload.decode(bb, ss, **workload_kw)).kernels for bb in (1, 2) for ss in (s0, s0 + d)]
        if len({tuple(k.name for k in p) for p in probes}) > 1:  # no kernel-by-kernel pairing across programs
            raise RoofcalcError(f"{shape.name}: a rank's step runs other ops at batch 1 than at batch 2, which its "
                                f"batch verdicts pair kernel by kernel; predict one batch at a time")
        context_free = [k1.cost == k2.cost and k3.cost == k4.cost for k1, k2, k3, k4 in zip(*probes)]

        @functools.lru_cache(maxsize=None)
        def x(tokens: int) -> tuple:
            if shape.moe is None and not analyzer.traced:
                return 0, 0, 0
            kept = [k for k, keep in zip(analyzer.at_batch(Workload.decode(tokens, s0, **workload_kw)).kernels,
                                         context_free) if keep]
            return (sum(k.count * k.cost.flops for k in kept), sum(k.count * k.cost.bytes for k in kept),
                    sum(k.count * k.cost.weight_bytes for k in kept))
    else:  # a trace's expert kernels, read off one probe
        probe = analyzer(Workload.decode(1, _probe_contexts(contexts, analyzer), **workload_kw))
        parts = [(k.count, k.expert_weights) for k in probe.kernels if k.expert_weights]
        mode = workload_kw.get("experts", "expected")

        def x(tokens: int) -> tuple:
            w = sum(count * analyzer.expert_bytes(ew, tokens, mode) for count, ew in parts)
            return 0, w, w
    xf, xb, xw = (lambda t, i=i: x(t)[i] for i in range(3))
    x1, x2 = x(1), x(2)

    def line(arr2, i: int | None = None):
        """(value at B = 0, slope in B) at every context, exact integers, less the non-linear part x(B)[i]."""
        m1, m2 = (0, 0) if i is None else (x1[i], x2[i])
        return [(v1 - m1 - (v2 - m2 - (v1 - m1)), v2 - m2 - (v1 - m1)) for v1, v2 in zip(*arr2.tolist())]

    flops, nbytes, weights, kv, memory = (line(two.flops, 0), line(two.bytes, 1), line(two.weight_bytes, 2),
                                          line(two.kv_bytes), line(two.memory_bytes))
    ridge = roof.ridge
    # AI(B) = (f0 + f1·B + xf(B)) / (y0 + y1·B + xb(B)) reaches the ridge; for a dense model on one device
    # that is B >= (ridge·y0 - f0) / (f1 - ridge·y1), never when f1 / y1 <= ridge.
    # KV bytes k0 + k1·B exceed weight bytes w0 + w1·B + xw(B).
    # Both bisected at every context at once where 64-bit integers hold every count up to the top batch
    widest = max(max(map(abs, c0)) + max(map(abs, c1)) * top
                 for c0, c1 in (zip(*pairs) for pairs in (flops, nbytes, weights, kv)))
    # the batch from which each holds for good: where the costs have a period in B (the busiest --ep-attention
    # tp rank's ⌈B·k/N⌉ expert rows make the AI a saw), a batch holds where every batch of its period does
    period = getattr(analyzer, "batch_period", 1)

    def steady(holds):
        return holds if period == 1 else lambda bb: _all_of(holds, bb, period, top)

    if widest + max(map(abs, x(top))) < _INT64_SAFE:
        xfs, xbs, xws = (_batch_function(f) for f in (xf, xb, xw))
        (f0, f1), (y0, y1), (w0, w1), (k0, k1) = (np.array(pairs, dtype=np.int64).T
                                                  for pairs in (flops, nbytes, weights, kv))
        ridge_batches = _first_batches(steady(lambda bb: _at_least(f0 + f1 * bb + xfs(bb),
                                                                   ridge * (y0 + y1 * bb + xbs(bb)))), len(flops), top)
        kv_batches = _first_batches(steady(lambda bb: k0 + k1 * bb > w0 + w1 * bb + xws(bb)), len(flops), top)
    else:
        ridge_batches = [_first_batch(steady(lambda bb: f0 + f1 * bb + xf(bb) >= ridge * (y0 + y1 * bb + xb(bb))), top)
                         for (f0, f1), (y0, y1) in zip(flops, nbytes)]
        kv_batches = [_first_batch(steady(lambda bb: k0 + k1 * bb > w0 + w1 * bb + xw(bb)), top)
                      for (k0, k1), (w0, w1) in zip(kv, weights)]
    # the AI's limit as B grows: the slopes, with the non-linear parts' own slope at the top of the ladder
    half = top // 2
    slope_f, slope_b = ((x(top)[i] - x(half)[i]) / (top - half) for i in (0, 1))
    gains = tps[1:] / tps[:-1] - 1
    first_below = [stops_paying_at(tps[:, j], min_gain) for j in range(tps.shape[1])]
    out = []
    for j, context in enumerate(two.contexts.tolist()):
        (m0, m1), (_, f1), (_, y1) = memory[j], flops[j], nbytes[j]
        max_batch = None
        if capacity_bytes is not None:
            max_batch = max(0, min(top, math.floor((capacity_bytes - m0) / m1)))
        k = first_below[j]
        doubling = (ladder[k], float(gains[k, j])) if k is not None else (None, None)
        out.append(BatchVerdicts(int(context), ridge, (f1 + slope_f) / (y1 + slope_b), ridge_batches[j], kv_batches[j], max_batch,
                                 capacity_bytes, min_gain, *doubling, largest_batch_tried=ladder[-1]))
    return out


# --------------------------------------------------------------------------- prefill and whole requests


@dataclass(frozen=True)
class PrefillGrid(_Steps):
    """One prefill at every (batch, prompt): arrays of shape (len(batches), len(prompts))."""

    batches: "object"
    prompts: "object"
    flops: "object"
    bytes: "object"
    floor_s: "object"
    memory_bytes: "object"  # weights + the KV cache the prompts leave
    roof: Roof
    times: StepTimes | None = None

    @property
    def ttft_s(self):
        """Time to first token: the prefill step's predicted time."""
        return self.times.predicted_s

    @property
    def prompt_tokens_per_s(self):
        return self.batches[:, None] * self.prompts[None, :] / self.ttft_s



MAX_TRACED_PREFILLS = 64  # a traced prefill grid traces every point (about a second each for a 7B model)


def prefill_grid(shape: ModelShape, batches, prompts, roof: Roof, *, impl: str = "hf-eager",
                 model: KernelModel | None = None, analyzer=None, **workload_kw) -> PrefillGrid:
    _is_roof(roof)
    import numpy as np

    check_sizes(list(batches), "batch", MAX_BATCH)
    check_sizes(list(prompts), "prompt", MAX_TOKENS)
    if len(batches) * len(prompts) > MAX_PREFILL_POINTS:  # each point is one whole step (attention is not linear in P)
        raise RoofcalcError(f"{len(batches) * len(prompts):,} prefill points is too many (at most "
                            f"{MAX_PREFILL_POINTS:,}: each is a whole step); sweep fewer batches or prompts")
    if analyzer is not None and analyzer.traced and len(batches) * len(prompts) > MAX_TRACED_PREFILLS:
        raise RoofcalcError(f"a traced prefill sweep traces every point: {len(batches) * len(prompts):,} is more "
                            f"than {MAX_TRACED_PREFILLS}; sweep fewer batches or prompts")
    shp = (len(batches), len(prompts))
    flops, nbytes, mem = (np.zeros(shp, dtype=np.int64) for _ in range(3))
    parts = {f: np.zeros(shp) for f in ("floor_s", "device_s", "device_upper_s", "host_s", "host_upper_s",
                                         "compute_s", "comm_s", "fixed_s", "serial_s", "serial_upper_s")}
    for i, b in enumerate(batches):
        for j, p in enumerate(prompts):
            wl = Workload.prefill(int(b), int(p), **workload_kw)
            a = analyzer(wl) if analyzer is not None else analyze(shape, wl)
            t, st = a.totals, place(a, roof, impl=impl, model=model).times
            flops[i, j], nbytes[i, j] = t.flops, t.bytes
            for f in parts:
                parts[f][i, j] = getattr(st, f)
            mem[i, j] = a.memory_bytes
    times = StepTimes(**parts, overlap=(model or ideal()).overlap, band=st.band)  # every point's one band
    return PrefillGrid(np.asarray(batches, dtype=np.int64), np.asarray(prompts, dtype=np.int64), flops, nbytes,
                       parts["floor_s"], mem, roof, times)


@dataclass(frozen=True)
class RequestGrid(_Fits):
    """A whole request at every (batch, prompt): prefill P tokens (the first output token), then
    N - 1 decode steps at contexts P+1 … P+N-1. Arrays of shape (len(batches), len(prompts))."""

    batches: "object"
    prompts: "object"
    generate: int  # N output tokens per sequence
    ttft_s: "object"
    decode_s: "object"  # Σ of the N - 1 decode steps, predicted
    memory_bytes: "object"  # weights + the KV cache at the last step (P + N - 1 tokens)
    lower_s: "object" = None  # the whole request at its steps' lower ends (predict.StepTimes.predicted_lower_s)
    upper_s: "object" = None  # ... at their upper ends
    # what bounds the steps holding most of the request's time (one of STEP_BOUNDS: the prefill's and each decode
    # step's own, summed by bound), as a sweep's points carry a step's
    bound: "object" = None

    @property
    def predicted_s(self):
        return self.total_s

    @property
    def predicted_lower_s(self):
        return self.lower_s

    @property
    def predicted_upper_s(self):
        return self.upper_s

    @property
    def total_s(self):
        return self.ttft_s + self.decode_s

    @property
    def mean_tpot_s(self):
        """Mean time per output token after the first (None when N = 1)."""
        return None if self.generate == 1 else self.decode_s / (self.generate - 1)

    @property
    def tokens_per_s(self):
        """Output tokens of all B sequences over the whole request."""
        return self.batches[:, None] * self.generate / self.total_s



def request_grid(shape: ModelShape, batches, prompts, generate: int, roof: Roof, *, impl: str = "hf-eager",
                 model: KernelModel | None = None, analyzer=None, **workload_kw) -> RequestGrid:
    _is_roof(roof)
    import numpy as np

    check_sizes([generate], "generated tokens", MAX_TOKENS)
    kw = dict(impl=impl, model=model, analyzer=analyzer, **workload_kw)
    pipelined = _pipelined(analyzer)
    if analyzer is not None and not analyzer.traced:  # each prompt's row checked at its corners
        rows = len(prompts) * (analyzer.parallel.pp if pipelined else 1)
        if rows > MAX_RANK_REQUEST_ROWS:
            raise RoofcalcError(f"{len(prompts):,} prompts" + (f" x {analyzer.parallel.pp} stages" if pipelined else "")
                                + f" is more than {MAX_RANK_REQUEST_ROWS} rows for a request sweep over GPUs; "
                                  f"sweep fewer prompts")
    pre = pipeline_grid("prefill", shape, batches, prompts, roof, **kw) if pipelined else \
        prefill_grid(shape, batches, prompts, roof, **kw)
    decode = np.zeros(pre.ttft_s.shape)
    lower, upper = pre.predicted_lower_s.copy(), pre.predicted_upper_s.copy()
    memory = pre.memory_bytes.copy()
    by_bound = [[{pre.bound[i, j]: pre.ttft_s[i, j]} for j in range(decode.shape[1])] for i in range(decode.shape[0])]
    if len(pre.prompts) * max(0, generate - 1) > MAX_REQUEST_STEPS:
        raise RoofcalcError(f"{len(pre.prompts):,} prompts x {generate - 1:,} decode steps is more than "
                            f"{MAX_REQUEST_STEPS:,} steps to sum; generate fewer tokens or sweep fewer prompts")
    for j, p in enumerate(pre.prompts):
        last = int(p) + generate - 1
        check_sizes([last], "context", MAX_TOKENS)
        if generate > 1:
            steps = np.arange(int(p) + 1, last + 1)
            if pipelined:
                row = pipeline_grid("decode", shape, batches, steps, roof, **kw)
            else:
                row = decode_grid(shape, batches, steps, roof, **kw)
                if analyzer is not None:
                    check_corners(shape, row, roof, **kw)
            decode[:, j] = row.step_s.sum(axis=1)
            lower[:, j] += row.predicted_lower_s.sum(axis=1)
            upper[:, j] += row.predicted_upper_s.sum(axis=1)
            memory[:, j] = row.memory_bytes[:, -1]
            for i, (bounds, seconds) in enumerate(zip(row.bound, row.step_s)):
                for b, t in zip(bounds, seconds):
                    by_bound[i][j][b] = by_bound[i][j].get(b, 0.0) + t
    bound = np.empty(decode.shape, dtype=object)
    for i, row_ in enumerate(by_bound):
        for j, times in enumerate(row_):
            bound[i, j] = max(times, key=times.get)
    return RequestGrid(pre.batches, pre.prompts, generate, pre.ttft_s, decode, memory, lower, upper, bound)


# --------------------------------------------------------------------------- one sweep, ready to report


@dataclass(frozen=True)
class Sweep:
    """A decode, prefill or request sweep on one device: the grid, both roofs and the verdicts."""

    kind: str  # "decode", "prefill" or "request"
    shape: ModelShape
    dtypes: Workload  # the dtypes of every point (its batch and lengths mean nothing)
    hardware: "object"  # roofcalc.hardware.Hardware
    nominal: Roof
    measured: Roof | None
    impl: str
    capacity_bytes: float | None
    grid: "DecodeGrid | PrefillGrid | RequestGrid"
    verdicts: tuple[BatchVerdicts, ...] = ()
    min_gain: float = DEFAULT_MIN_GAIN
    model: KernelModel | None = None
    analyzer: "object" = None  # a traced model's wl -> Analysis (None: the hand model)

    def header_analysis(self):
        """One step's analysis for the header (its sizes, parameters, dtypes)."""
        if self.analyzer is None:
            return analyze(self.shape, self.dtypes)
        from dataclasses import replace

        wl = replace(self.dtypes, kv_len=2)  # a short step of the sweep's kind (a model without a cache has no decode)
        return self.analyzer(wl if self.kind == "decode" else replace(wl, phase="prefill", query_tokens=2))

    @property
    def roof(self) -> Roof:
        return self.measured or self.nominal

    def _repr_html_(self) -> str:  # a notebook shows the points as one tidy table (roofcalc.frames)
        from .frames import repr_html

        return repr_html(self)


def sweep(shape: ModelShape, hardware, *, batches=(1,), contexts=None, prompts=None, generate: int | None = None,
          measured_bw: float | None = None, measured_flops: float | None = None, measured_profile=None,
          impl: str | None = None, launch_overhead_s: float | None = None, capacity_bytes: float | None = None,
          min_gain: float = DEFAULT_MIN_GAIN, host_overhead_s: float | None = None, analyzer=None,
          engine_host=None, engine=None, **workload_kw) -> Sweep:
    """Decode (``contexts``), prefill (``prompts``) or whole requests (``prompts`` and ``generate``)
    at every batch; verdicts on the measured roof when there is one. ``capacity_bytes`` defaults
    to the measured profile's memory, else the hardware's."""
    from .roofline import as_device, device

    if contexts is None and prompts is None:
        raise RoofcalcError("a sweep takes contexts (decode) or prompts (prefill, request): give one")
    if contexts is not None and prompts is not None:
        raise RoofcalcError("a sweep takes contexts (decode) or prompts (prefill, request), not both")
    hardware, measured_profile = as_device(hardware, measured_profile, "sweep")
    batches = distinct_sizes(batches, "batch", MAX_BATCH)  # each once, ascending, as the command line's lists
    contexts = None if contexts is None else distinct_sizes(contexts, "context", MAX_TOKENS)
    prompts = None if prompts is None else distinct_sizes(prompts, "prompt", MAX_TOKENS)
    if generate is not None and prompts is None:
        raise RoofcalcError("a whole request needs a prompt length")
    axes = {"batch": "batches", "kv_len": "contexts", "query_tokens": "prompts", "phase": "contexts or prompts",
            "context": "contexts", "prompt": "prompts"}
    taken = sorted(set(workload_kw) & set(axes))
    if taken:  # a single step's size given to the sweep, whose axes set it
        raise RoofcalcError(f"sweep: {taken[0]} is the sweep's own axis: give {axes[taken[0]]}=[...] (a list)")
    unknown = sorted(set(workload_kw) - set(Workload.__dataclass_fields__) - {"analyzer"})
    if unknown:  # a keyword neither the sweep's nor a Workload's
        raise RoofcalcError(f"sweep: no keyword {', '.join(unknown)}; it takes the workload's "
                            f"(roofcalc.Workload: weight_dtype, kv_dtype, cache_update...) and engine (a preset's "
                            f"name, as --engine) or engine_host with impl")
    from .engines import library_engine

    impl, engine_host, fields = library_engine(engine, engine_host, impl, shape, "sweep")
    workload_kw = {**fields, **workload_kw}  # the preset's workload, a field given winning (as a flag does)
    dtypes = Workload.decode(1, 1, **workload_kw)
    check_group(shape.d_model, shape.name, dtypes)  # every grid's path (a pipeline's stages skip analyze)
    d = device(hardware, dtypes.compute_dtype.name, measured_bw=measured_bw, measured_flops=measured_flops,
               measured_profile=measured_profile, launch_overhead_s=launch_overhead_s,
               host_overhead_s=host_overhead_s, capacity_bytes=capacity_bytes, engine_host=engine_host)
    roof, model, capacity_bytes = d.roof, d.model, d.capacity_bytes
    kw = dict(impl=impl, model=model, analyzer=analyzer, **workload_kw)
    scale = analyzer.scale if analyzer is not None else 1  # --ep: a rank runs B/scale of the step's B sequences
    if scale > 1:
        odd = [b for b in batches if b % scale]
        if odd:
            raise RoofcalcError(f"--batch {odd[0]} does not split over --ep {scale}: each rank runs attention for "
                                f"B/{scale} of the sequences (give multiples of {scale})")
        batches = [b // scale for b in batches]
    verdicts: tuple[BatchVerdicts, ...] = ()
    if _pipelined(analyzer):
        # no verdicts: the pipeline's step is not linear in the batch
        if generate is not None:
            kind, grid = "request", request_grid(shape, batches, prompts, generate, roof, **kw)
        else:
            kind = "decode" if contexts is not None else "prefill"
            grid = pipeline_grid(kind, shape, batches, contexts if contexts is not None else prompts, roof, **kw)
    elif contexts is not None:
        kind, grid = "decode", decode_grid(shape, batches, contexts, roof, **kw)
        check_corners(shape, grid, roof, **kw)
        verdicts = tuple(batch_verdicts(shape, contexts, roof, capacity_bytes, min_gain=min_gain, **kw))
    elif generate is None:
        kind, grid = "prefill", prefill_grid(shape, batches, prompts, roof, **kw)
    else:
        kind, grid = "request", request_grid(shape, batches, prompts, generate, roof, **kw)
    if scale > 1:  # the grid and verdicts in the step's batch: every multiple of the rank's
        from dataclasses import replace

        grid = replace(grid, batches=grid.batches * scale)
        verdicts = in_step_batches(verdicts, scale)
    return Sweep(kind, shape, dtypes, hardware, d.nominal, d.measured, impl, capacity_bytes, grid,
                 verdicts, min_gain, model, analyzer)


def _pipelined(analyzer) -> bool:
    """A sweep over a pipeline (``--pp``): its steps combine the stages' grids."""
    return analyzer is not None and analyzer.parallel is not None and analyzer.parallel.pp > 1


def check_corners(shape: ModelShape, grid: DecodeGrid, roof: Roof, *, impl: str,
                  model: KernelModel | None, analyzer=None, **workload_kw) -> None:
    """The grid's four corners against the single-step path (analyze, place): the same predicted,
    lower and upper times, or a bug is reported rather than a table printed. A traced grid is also
    held to a direct trace at an interior point (chosen by a seeded draw), and its memory too: a trace
    is fitted, not derived, so a range where its costs are not bilinear (a sliding window inside it)
    is refused rather than interpolated."""
    import random

    points = {(i, j) for i in {0, len(grid.batches) - 1} for j in {0, len(grid.contexts) - 1}}
    if analyzer is not None:
        draw = random.Random(len(grid.batches) * 7919 + len(grid.contexts))
        points.add((draw.randrange(len(grid.batches)), draw.randrange(len(grid.contexts))))
    for i, j in sorted(points):
        wl = Workload.decode(int(grid.batches[i]), int(grid.contexts[j]), **workload_kw)
        # one rank's analyzer has the single step's own analysis (its rows merged), the trace only itself
        a = analyzer.single(wl) if analyzer is not None else analyze(shape, wl)
        st = place(a, roof, impl=impl, model=model).times
        checks = [(name, getattr(st, name), float(getattr(grid.times, name)[i, j]))
                  for name in ("predicted_s", "predicted_lower_s", "predicted_upper_s")]
        if analyzer is not None:
            checks += [("flops", a.totals.flops, int(grid.flops[i, j])), ("bytes", a.totals.bytes, int(grid.bytes[i, j])),
                       ("memory", a.memory_bytes, int(grid.memory_bytes[i, j]))]
        # a traced grid is fitted on its probes; a --tp rank's costs are each the whole step's over the ranks
        # rounded down (trace.parallel._scaled), so its probes lie d apart (the shares' least common multiple,
        # _probe_step) and its fit is within a byte a kernel of a direct trace anywhere (before, probes one apart
        # lost a byte a position from the slope: gpt-oss-20b at --tp 4, B = 64, S = 8,192 ran 2.5e-4 off), where a
        # change of program (a window that starts to bind) is thousandths or more
        tol = 1e-6 if analyzer is not None and analyzer.traced else 1e-9
        for name, want, got in checks:
            if not math.isclose(want, got, rel_tol=tol):
                where = f"B={grid.batches[i]}, S={grid.contexts[j]}"
                if analyzer is not None and analyzer.traced:
                    raise RoofcalcError(f"the traced costs are not bilinear over this sweep ({name} at {where}: the "
                                        f"fit {got:.6g}, a direct trace {want:.6g}); a sliding window or another "
                                        f"change of program lies inside it: sweep contexts on one side of it")
                raise AssertionError(f"sweep corner {where}: {name} {got!r} differs from the single step's {want!r}")


# --------------------------------------------------------------------------- pipelines


@dataclass(frozen=True)
class PipelineTimes:
    """A pipeline's step at every point (:func:`roofcalc.parallel.pipeline_step_s`, as the single step's):
    Σ stages + (M − 1) · the slowest, for the expected times and the range's ends alike;
    bound: the slowest stage's."""

    predicted_s: object
    predicted_lower_s: object
    predicted_upper_s: object
    bound: object


def pipeline_grid(kind: str, shape: ModelShape, batches, lengths, roof, *, analyzer: PipelineAnalyzer, **kw):
    """Decode steps (``kind`` "decode", ``lengths`` the contexts) or prefills ("prefill", the prompts) of
    the pipeline at every point: each stage's grid on its micro-batches (exact, as every grid), combined
    as the single step combines its stages. The times (floor, expected, upper) are the whole
    pipeline's; the FLOPs, bytes and bound the slowest stage's on one micro-batch (what one GPU runs
    at that pace), the memory the largest stage's."""
    import numpy as np

    pp = analyzer.parallel.pp
    if kind == "prefill" and len(batches) * len(lengths) * pp > MAX_PREFILL_POINTS:
        raise RoofcalcError(f"{len(batches) * len(lengths):,} prefill points x {pp} stages is too many (at most "
                            f"{MAX_PREFILL_POINTS:,} stage steps); sweep fewer batches or prompts")
    rows: dict[int, list[int]] = {}
    for i, b in enumerate(batches):
        rows.setdefault(analyzer.micro(int(b)), []).append(i)
    n_b, n_s = len(batches), len(lengths)
    fields = ("flops", "bytes", "weight_bytes", "kv_bytes") if kind == "decode" else ("flops", "bytes")
    out = {f: np.zeros((n_b, n_s), dtype=np.int64) for f in fields + ("memory_bytes",)}
    step, lower, upper, floor = (np.zeros((n_b, n_s)) for _ in range(4))
    bound = np.empty((n_b, n_s), dtype=object)
    for micro, idx in rows.items():
        local = [int(batches[i]) // micro // analyzer.parallel.ep for i in idx]
        grids = []
        for s in range(pp):
            stage_kw = dict(kw, analyzer=analyzer.stage(s, micro))
            if kind == "decode":
                g = decode_grid(shape, local, lengths, roof, **stage_kw)
                check_corners(shape, g, roof, **stage_kw)
            else:
                g = prefill_grid(shape, local, lengths, roof, **stage_kw)
            grids.append(g)
        t = np.stack([g.predicted_s for g in grids])
        slowest = t.argmax(axis=0)

        def pick(arrays):
            return np.take_along_axis(np.stack(arrays), slowest[None], axis=0)[0]

        # the stages without the engine's host time the device waits for, then that time once a step
        parts = [stage_times(g.times) for g in grids]
        host = pipeline_host(kw.get("model"), np.asarray(batches, dtype=np.int64)[idx][:, None],
                             analyzer.parallel.gpus, grids[0].times.band)
        for k, target in enumerate((step, lower, upper)):
            target[idx] = pipeline_step_s([p[k] for p in parts], micro) + host[k]
        floor[idx] = pipeline_step_s([g.floor_s for g in grids], micro)
        for f in fields:
            out[f][idx] = pick([getattr(g, f) for g in grids])
        out["memory_bytes"][idx] = np.stack([g.memory_bytes for g in grids]).max(axis=0)
        bound[idx] = pick([np.asarray(g.bound, dtype=object) for g in grids])
    times = PipelineTimes(step, lower, upper, bound)
    b, n = np.asarray(batches, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    if kind == "decode":
        return DecodeGrid(b, n, out["flops"], out["bytes"], out["weight_bytes"], out["kv_bytes"], floor,
                          out["memory_bytes"], roof, kw.get("impl", "hf-eager"), times)
    return PrefillGrid(b, n, out["flops"], out["bytes"], floor, out["memory_bytes"], roof, times)
