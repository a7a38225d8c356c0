"""Fitting the step model's kernel forms to measured kernel times (numpy; never on the main job's path).

One implementation for both places that fit: ``roofcalc measure --device cuda`` fits the forms on the user's own
GPU (measure.fit_kernels, written into the profile), and ``benchmarks/fit_kernels.py`` fits them on
AIConfigurator's published tables (shipped in data/kernel_fits.json). Each class's expected time is

    t = fixed + max(FLOPs / (peak * e_compute), bytes / (bandwidth * e_memory)) + in-series terms

with log e_compute and log e_memory linear in the parameters: piecewise linear in log2 of a size between knots
(flat beyond them; ``hat_basis``), plus factors (an N or K factor of a GEMM, a work-item factor of attention).
``fit`` is Levenberg-Marquardt on log(t) with a weak pull of each parameter to its prior and of neighbouring knots
to each other; ``params`` turns the parameter vector into named values, and ``gemm_doc``/``attention_doc`` into the
documents predict.GemmFit and predict.AttentionFit read.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

GEMM_M_KNOTS = (1, 16, 64, 256, 1024, 4096, 32768)
GEMM_NK_KNOTS = (128, 1024, 4096, 16384, 65536)
GEMM_NK_REF = 4096  # the N and K factors are 1 at n = 4096 and k = 4096
DECODE_KV_KNOTS = (1, 64, 1024, 16384, 131072)
DECODE_ITEM_KNOTS = (1, 8, 64, 512, 16384)
PREFILL_ISL_KNOTS = (1, 64, 256, 1024, 4096, 16384)
HEAD_DIMS = (64, 128, 192, 256, 512)
DECODE_SECOND = ("mha_items_factor_mem", "window_factor_mem", "mmha_factor_mem")  # decode_design's second pass
MMHA_KNOTS = (2, 4, 8, 16, 32, 64, 128)  # query heads per KV head of a decode call run by TensorRT-LLM's MMHA
GQA_KNOTS = (1, 2, 4, 8, 16, 64)
CTA_KNOTS = (1, 16, 128, 1024, 8192)


def hat_basis(x: np.ndarray, knots) -> np.ndarray:
    """Piecewise-linear interpolation weights in log2(x) between knots (flat outside): N x len(knots)."""
    lx = np.log2(np.maximum(np.asarray(x, float), 1e-30))
    kn = np.log2(np.asarray(knots, float))
    lx = np.clip(lx, kn[0], kn[-1])
    j = np.clip(np.searchsorted(kn, lx, side="right") - 1, 0, len(kn) - 2)
    f = (lx - kn[j]) / (kn[j + 1] - kn[j])
    B = np.zeros((len(lx), len(kn)))
    B[np.arange(len(lx)), j] = 1 - f
    B[np.arange(len(lx)), j + 1] = f
    return B


class Design:
    """log fixed, log e_compute, log e_memory and the in-series term's log factor as linear functions of one
    parameter vector: each `add` appends columns to one term ("fix", "comp", "mem" or "qnt")."""

    def __init__(self, n: int):
        self.n = n
        self.names: list[str] = []
        self.prior: list[float] = []
        self.blocks: dict[str, list[np.ndarray]] = {"fix": [], "comp": [], "mem": [], "qnt": []}
        self.smooth: list[tuple[int, int]] = []
        self.shared: set[str] = set()  # memory parameters that split_l2 leaves whole

    def add(self, name: str, term: str, cols: np.ndarray, prior: float, knots=None, smooth=True, shared=False):
        cols = np.asarray(cols, float).reshape(self.n, -1)
        start = len(self.names)
        if shared:
            self.shared.add(name)
        for j in range(cols.shape[1]):
            self.names.append(f"{name}[{knots[j]}]" if knots is not None else name)
            self.prior.append(prior)
        for t in self.blocks:
            self.blocks[t].append(cols if t == term else np.zeros_like(cols))
        if knots is not None and smooth:
            self.smooth += [(start + j, start + j + 1) for j in range(cols.shape[1] - 1)]

    def split_l2(self, l2: np.ndarray):
        """Every memory-efficiency parameter in two: one for the rows that reach DRAM, one (`l2_` prefix) for the
        rows whose working set stays in L2, so the L2-resident rows do not pull the DRAM efficiencies."""
        l2 = l2.astype(float)[:, None]
        names, prior, blocks = [], [], {t: [] for t in self.blocks}
        smooth_old = set(self.smooth)
        idx_new: dict[int, list[int]] = {}
        col = 0
        for bi in range(len(self.blocks["mem"])):
            w = self.blocks["mem"][bi].shape[1]
            is_mem = bool(np.any(self.blocks["mem"][bi])) and self.names[col].split("[")[0] not in self.shared
            parts = [(1 - l2, ""), (l2, "l2_")] if is_mem else [(1.0, "")]
            for mult, pre in parts:
                for t in self.blocks:
                    blocks[t].append(self.blocks[t][bi] * mult)
                for j in range(w):
                    idx_new.setdefault(col + j, []).append(len(names))
                    names.append(pre + self.names[col + j])
                    prior.append(self.prior[col + j])
            col += w
        self.smooth = [(a2, b2) for (a, b) in smooth_old for a2, b2 in zip(idx_new[a], idx_new[b])]
        self.names, self.prior, self.blocks = names, prior, blocks

    def mats(self, without=()):
        """{term: (columns of theta it uses, N x those columns)}: each term touches only its own parameters;
        the parameters named in ``without`` (their names before any knot, ``l2_`` too) left out (their columns
        zero: they stay at their priors)."""
        out = {}
        drop = [any(n.split("[")[0].removeprefix("l2_") == w for w in without) for n in self.names]
        for t, v in self.blocks.items():
            full = np.hstack(v) if v else np.zeros((self.n, 0))
            if any(drop):
                full = np.where(np.array(drop)[None, :], 0.0, full)
            cols = np.flatnonzero(np.any(full != 0, axis=0))
            out[t] = (cols, np.ascontiguousarray(full[:, cols]))
        return out


def rows_of(M: dict, sel) -> dict:
    return {t: (c, X[sel]) for t, (c, X) in M.items()}


def lin(M: dict, term: str, theta):
    c, X = M[term]
    return X @ theta[c]


def evaluate(theta, M, ct, mt, qt, cap=False):
    """(t, fixed, compute, memory, series): ct = FLOPs/peak, mt = bytes/bandwidth, qt = the in-series term's
    seconds (or count) before its factor. With ``cap`` (True, or a mask of the rows), no time below its roof's,
    max(ct, mt): as predict evaluates a form it does not cap while fitting (the efficiencies themselves may pass
    1 where the fixed cost overlaps the work; an L2-resident row is not held to the DRAM roof, so a mask leaves
    those rows out)."""
    f = np.exp(lin(M, "fix", theta))
    c = ct * np.exp(-lin(M, "comp", theta))
    m = mt * np.exp(-lin(M, "mem", theta))
    q = qt * np.exp(-lin(M, "qnt", theta))
    t = f + np.maximum(c, m) + q
    if np.any(cap):
        t = np.where(cap, np.maximum(t, np.maximum(ct, mt)), t)
    return t, f, c, m, q


HUBER_K = 1.345  # Huber's tuning constant (95 % efficiency under normal errors), in units of the residuals' scale
MAD_SIGMA = 1.4826  # the median absolute deviation's factor to a normal distribution's standard deviation


def fit(M, ct, mt, qt, t, prior, smooth, theta0=None, iters=60, lam=3e-5, robust=True):
    """Levenberg-Marquardt on r = log(pred) - log(t), with a weak pull of every parameter to its prior and of
    neighbouring knots to each other (weight lam * rows: about one row's worth in a table of 30,000), so that a
    parameter the rows do not pin (the compute efficiency of a kernel that is never compute-bound) stays near
    its prior. The normal equations are summed term by term (each term touches only its own parameters).

    ``robust``: then toward Huber's M-estimator by iteratively reweighted least squares (huber_weights), so that
    a few shapes a table measured otherwise (an autotuner's odd tactic, a kernel the collector did not mean to
    time) do not pull the form off the rows around them: the least-squares fit first, then up to four refits
    with each row weighted by min(1, k·s / |r|), s the residuals' scale from their median absolute deviation.
    Four rounds, not the estimator's fixed point: on some tables a fifth would still move the parameters (the
    shipped fits are these four rounds'). Where more than half the residuals are equal the scale is zero and
    the least-squares fit stands."""
    th = _lm(M, ct, mt, qt, t, prior, smooth, theta0, iters, lam, None)
    if not robust:
        return th
    for _ in range(4):
        w = huber_weights(np.log(evaluate(th, M, ct, mt, qt)[0] / t))
        if w is None:
            break
        th = _lm(M, ct, mt, qt, t, prior, smooth, th, max(iters // 2, 10), lam, np.sqrt(w))
    return th


def huber_weights(r):
    """Each residual's Huber weight, min(1, k·s / |r|), s = 1.4826 × the median absolute deviation of ``r`` (a
    normal distribution's sigma from it); None where every row is within k·s (the least-squares fit stands)."""
    r = np.asarray(r, float)
    s = MAD_SIGMA * np.median(np.abs(r - np.median(r)))
    if not s > 0:
        return None
    w = np.minimum(1.0, HUBER_K * s / np.maximum(np.abs(r), 1e-300))
    return None if np.all(w == 1.0) else w


def _lm(M, ct, mt, qt, t, prior, smooth, theta0, iters, lam, sw):
    """fit's Levenberg-Marquardt loop; ``sw``: each row's residual and Jacobian scaled by it (square roots of
    the rows' weights), None: unweighted."""
    lam = lam * len(t)
    P = len(prior)
    th = np.array(prior if theta0 is None else theta0, float)
    prior = np.asarray(prior, float)
    S = np.zeros((len(smooth), P))
    for i, (a, b) in enumerate(smooth):
        S[i, a], S[i, b] = 1, -1
    reg = lam * (np.eye(P) + S.T @ S)
    lt = np.log(t)
    sw = np.ones(len(lt)) if sw is None else sw

    def resid(th):
        p = evaluate(th, M, ct, mt, qt)
        r = (np.log(p[0]) - lt) * sw
        return p, r, r @ r + lam * ((th - prior) @ (th - prior) + (S @ th) @ (S @ th))

    p, r, cost = resid(th)
    mu = 1e-3
    done = False
    for _ in range(iters):
        tot, f, c, m, q = p
        act_c = c >= m
        blocks = []
        for term, wgt in (("fix", f), ("comp", -np.where(act_c, c, 0)), ("mem", -np.where(act_c, 0, m)),
                          ("qnt", -q)):
            cols, X = M[term]
            if len(cols):
                blocks.append((cols, (sw * wgt / tot)[:, None] * X))
        A = reg.copy()
        g = lam * ((th - prior) + S.T @ (S @ th))
        for i, (ci, Bi) in enumerate(blocks):
            g[ci] += Bi.T @ r
            for cj, Bj in blocks[i:]:
                Aij = Bi.T @ Bj
                A[np.ix_(ci, cj)] += Aij
                if cj is not ci:
                    A[np.ix_(cj, ci)] += Aij.T
        improved = False
        for _ in range(12):
            step = np.linalg.solve(A + mu * np.diag(np.diag(A) + 1e-9), -g)
            th2 = th + step
            p2, r2, c2 = resid(th2)
            if c2 < cost:
                done = cost - c2 < 1e-6 * cost
                th, p, r, cost = th2, p2, r2, c2
                mu = max(mu / 3, 1e-9)
                improved = True
                break
            mu *= 4
        if not improved or done:
            break
    return th


def folds_of(groups: list[str], k: int) -> np.ndarray:
    """Each shape (group) to one of k folds, by a stable hash of its name."""
    uniq = sorted(set(groups))
    order = sorted(uniq, key=lambda g: hashlib.md5(g.encode()).hexdigest())
    k = min(k, len(uniq))
    fold = {g: i % k for i, g in enumerate(order)}
    return np.array([fold[g] for g in groups])


def score(meas, pred) -> dict:
    """Rows, the median |ln(measured / predicted)| and the share within ±30 %."""
    a = np.abs(np.log(meas / pred))
    within = np.abs(meas / pred - 1) <= 0.30
    return dict(rows=int(len(a)), median_abs_log=float(np.median(a)) if len(a) else None,
                within_30=float(within.mean()) if len(a) else None)


def params(names, th) -> dict:
    """The fitted parameters by name, exp(theta) to 4 significant figures; a knot's ``name[x]`` under name."""
    out: dict = {}
    for name, v in zip(names, th):
        m = re.match(r"(.+)\[(.+)\]$", name)
        val = float(f"{float(np.exp(v)):.4g}")
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = val
        else:
            out[name] = val
    return out


# ----------------------------------------------------------------------------------------------- forms

def gemm_cost(m, n, k, wb: float, tile: int, act_b: float | None = None, quant: bool | None = None,
              scale_bytes=0.0) -> dict:
    """One linear layer, input [m, k], weight [n, k], output [m, n] (16-bit out): FLOPs over M padded as the
    kernels tile it (`tile` > 1: to the next power of two up to `tile` rows, then a multiple of it; predict._tiled),
    bytes act_b*m*k + wb*n*k + 2*m*n + the weight's scales (act_b: the input's bytes, wb's unless given: a
    weight-only format reads a 16-bit input), and (``quant``: fp8 weights with fp8 inputs, by default where
    wb is 1) the input's quantization in series (read 2*m*k, write m*k: 3*m*k bytes)."""
    act_b = wb if act_b is None else act_b
    quant = wb == 1 if quant is None else quant
    m, n, k = (np.asarray(x, float) for x in (m, n, k))
    if tile > 1:
        p2 = 2.0 ** np.ceil(np.log2(np.maximum(m, 1)))
        mp = np.where(m <= tile, np.maximum(p2, 1), np.ceil(m / tile) * tile)
    else:
        mp = m
    return dict(flops=2 * mp * n * k, bytes=act_b * m * k + wb * n * k + 2 * m * n + scale_bytes,
                qbytes=3 * m * k if quant else np.zeros_like(m), tile=tile)


def gemm_design(R: dict) -> Design:
    """fixed, e_compute(M) and e_memory(M) on GEMM_M_KNOTS, and N and K factors on GEMM_NK_KNOTS (1 at 4,096)
    on each side where the rows span more than one N (K); an fp8 input (R["quant"], else R["wb"] == 1): the
    quantization's e_quant."""
    n = len(R["t"])
    D = Design(n)
    one = np.ones((n, 1))
    D.add("fixed_s", "fix", one, np.log(5e-6))
    D.add("e_compute", "comp", hat_basis(R["m"], GEMM_M_KNOTS), np.log(0.7), GEMM_M_KNOTS)
    D.add("e_memory", "mem", hat_basis(R["m"], GEMM_M_KNOTS), np.log(0.8), GEMM_M_KNOTS)
    for term, tag in (("comp", "compute"), ("mem", "memory")):
        for dim in ("n", "k"):
            if len(np.unique(R[dim])) < 2:
                continue
            keep = [j for j, x in enumerate(GEMM_NK_KNOTS) if x != GEMM_NK_REF]
            D.add(f"{dim}_factor_{tag}", term, hat_basis(R[dim], GEMM_NK_KNOTS)[:, keep], 0.0,
                  tuple(GEMM_NK_KNOTS[j] for j in keep))
    if R.get("quant", R["wb"] == 1):
        D.add("e_quant", "qnt", one, np.log(0.8))
    return D


def decode_cost(b, h, g, kvlen, d, e, window, tile: int, per_head, cache_write: bool = True,
                context=None, l2: float = 0.0, tiled=None) -> dict:
    """Decode attention of b sequences, h query heads, g KV heads, head dim d, kvlen keys, e bytes per KV value:
    FLOPs 4*b*h*L_t*d over the KV length rounded up to the kernel's tile; bytes: the KV read (once per KV head,
    or per query head for a windowed row with ``per_head`` True), q read and out written in 16 bits, and
    (``cache_write``: a serving engine's call includes it) the new token's K and V written, 2*b*g*d*e; work items
    b * (heads read), or b * h for a windowed row with ``per_head`` "items" (one work item a query head, as
    FlashAttention-2 runs a windowed call, the group's KV read once from DRAM and shared through L2), or "l2" and
    "l2-random" (the same work items, the group's other query heads reading again from DRAM what an L2 of ``l2``
    bytes no longer holds: L2_REREAD); ``capped``: the window binds (the ``context``, the positions before the
    window's cap, passes it). ``tiled``: the rows the tile applies to (None: all; TensorRT-LLM's tables: the rows
    its XQA kernel runs, xqa_rows), the others read their KV token by token."""
    b, h, g, kvlen, d, e, window = (np.asarray(x, float) for x in (b, h, g, kvlen, d, e, window))
    context = kvlen if context is None else np.asarray(context, float)
    Lt = np.ceil(kvlen / tile) * tile
    if tiled is not None:
        Lt = np.where(np.asarray(tiled, bool), Lt, kvlen)
    policy = L2_REREAD.get(per_head) if isinstance(per_head, str) else None
    items_only = policy is not None or (isinstance(per_head, str) and per_head == "items")
    every = bool(per_head) and not items_only  # (a numpy bool or a JSON one reads as its truth)
    heads = np.where((window > 0) & every, h, g)
    if policy is not None:  # one query head's pass over the batch between two reads of a group's KV
        if not l2 > 0:
            raise ValueError(f"per_head {per_head!r} needs the GPU's L2 size (l2)")
        heads = np.where(window > 0, g + (h - g) * l2_misses(b * Lt * d * 2 * e, l2, policy), g)
    items = b * np.where((window > 0) & (every or items_only), h, g)
    write = 2 * b * g * d * e if cache_write else 0.0
    return dict(flops=4 * b * h * Lt * d, bytes=2 * b * heads * Lt * d * e + 2 * b * h * d * 2 + write,
                lt=Lt, items=items, tile=[tile, per_head], capped=(window > 0) & (context > window))


# FlashAttention-2 under a window (vLLM's FA2 tables: the L40S's, the RTX PRO 6000's) runs one work item a query head
# and, its paged KV taking no split of the KV (flash_api.cpp's mha_varlen_fwd: the split-KV parameters are set only
# on the GQA-packed path, which a window turns off), launches its grid as (query blocks, batch, heads): every
# sequence of one query head before the next head's. The next query head of a group reads the KV its predecessor
# read one pass over the batch earlier, b * L_t * d * 2 * e bytes (K and V) later, from L2 where L2 still holds it.
# Two ways an L2 of C bytes may hold a pass of S > C bytes, each a textbook cache model with no parameter of its
# own; fit_kernels.best_tile chooses between them per table as it chooses the tile: "l2", an L2 that keeps C of
# the S and misses the rest, 1 - C / S; "l2-random", random replacement, whose hit rate h solves
# h = exp(-(S / C) (1 - h)) (each line survives the misses between its two reads).
L2_REREAD = {"l2": "keeps", "l2-random": "random"}


def l2_misses(sweep, l2: float, policy: str = "keeps"):
    """The share of a second read that misses an L2 of ``l2`` bytes when ``sweep`` bytes pass through it between
    the two reads (L2_REREAD; predict._l2_misses, which the step model reads it with), as an array."""
    from .predict import _l2_misses

    return np.asarray(_l2_misses(np.asarray(sweep, float), l2, policy), float)


def xqa_rows(heads, kv_heads, batch, kv_len, sms: int, max_group: int, heuristic: bool = True):
    """The rows TensorRT-LLM's decode runs on XQA (TRTLLM-GEN on SM100): query heads sharing a KV head, and not
    on its fallback kernel (mmha_rows). XQA reads the KV in whole tiles (cpp/tensorrt_llm/kernels/
    decoderMaskedMultiheadAttention: its tensor map of a paged KV loads boxes of min(tokens per page, 64) tokens),
    where its fallback kernel, one block a (query head, sequence), and an MHA call read it token by token; so a
    TensorRT-LLM table's tile (chosen as every table's is, fit_kernels.best_tile) applies to these rows alone. The
    H200's table shows it: 2,048 sequences of 32 query heads over 8 KV heads take 0.60 ms at every KV length from
    2 to 128."""
    heads, kv_heads = np.asarray(heads, float), np.asarray(kv_heads, float)
    return (heads > kv_heads) & ~mmha_rows(heads, kv_heads, batch, kv_len, sms, max_group, heuristic)


def mmha_rows(heads, kv_heads, batch, kv_len, sms: int, max_group: int, heuristic: bool = True):
    """Where TensorRT-LLM's decode attention of a GQA model runs its fallback kernel (masked multi-head attention,
    one block per (query head, sequence), so each query head reads its group's KV again, shared only through L2)
    rather than one that reads a group's KV once (XQA; TRTLLM-GEN on SM100). The dispatch (cpp/tensorrt_llm:
    common/attentionOp.cpp runs XQA when the dispatcher's shouldUse passes; kernels/decoderXQAImplJIT's
    support check and heuristic): XQA takes 2 to 32 query heads per KV head (``max_group``; TRTLLM-GEN on
    SM100 up to 16, with no heuristic) and only when 4 * kv_heads * batch * max(1, kv_len / 128) reaches the
    GPU's ``sms``. One query head per KV head (MHA) runs MMHA too, at no extra read: not marked here."""
    heads, kv_heads, batch, kv_len = (np.asarray(x, float) for x in (heads, kv_heads, batch, kv_len))
    group = heads / kv_heads
    out = (group > 1) & (group > max_group)
    if heuristic:
        out = out | ((group > 1) & (4 * kv_heads * batch * np.maximum(1.0, kv_len / 128) < sms))
    return out


def decode_design(R: dict, gqa: bool = False, head_dims: bool = True) -> Design:
    """fixed, one e_compute, e_memory(tiled KV length) on DECODE_KV_KNOTS times a work-item factor on
    DECODE_ITEM_KNOTS, a time per work item in series (item_s), a GQA factor where ``gqa`` (tables with real
    MHA rows), and a head-dim factor per head dim other than 128 where ``head_dims``. Where the rows hold both:
    a second work-item factor for the rows without GQA (heads = KV heads: a kernel may split the KV of a GQA
    group's work item across blocks and not an MHA one's, as vLLM's A100 table shows), and a factor for the
    rows whose context passes their window (``capped``: the kernel masks the window's start), each on the rows
    that reach DRAM."""
    n = len(R["t"])
    D = Design(n)
    one = np.ones((n, 1))
    D.add("fixed_s", "fix", one, np.log(10e-6))
    D.add("e_compute", "comp", one, np.log(0.3))
    D.add("e_memory", "mem", hat_basis(R["lt"], DECODE_KV_KNOTS), np.log(0.8), DECODE_KV_KNOTS)
    D.add("items_factor_mem", "mem", hat_basis(R["items"], DECODE_ITEM_KNOTS), 0.0, DECODE_ITEM_KNOTS)
    # a time per work item in series: `qt` holds the item count, the column's -1 turns the term's exp(-x) into
    # exp(+item_s)
    D.add("item_s", "qnt", -one, np.log(5e-9))
    if gqa:
        D.add("gqa_factor_mem", "mem", hat_basis(R["h"] / R["g"], GQA_KNOTS)[:, 1:], 0.0, GQA_KNOTS[1:])
    hds = [x for x in HEAD_DIMS if x != 128 and (R["hd"] == x).any()] if head_dims else []
    if hds:
        D.add("hd_factor_mem", "mem", np.stack([(R["hd"] == x).astype(float) for x in hds], axis=1), 0.0,
              tuple(hds), smooth=False)
    # the two below are fitted second (DECODE_SECOND): from the fit without them, so that adding them cannot leave
    # the fit in a worse minimum
    # both on the rows that reach DRAM only (a step's): the L2-resident ones run otherwise, and no L2 row may
    # pin a factor a DRAM call then takes
    dram = ~np.asarray(R.get("l2", np.zeros(n, bool)), bool)

    def on_dram_rows(name: str, rows, cols, knots=None):  # where some DRAM rows are of the kind and some not
        rows = np.asarray(rows, bool) & dram
        if rows.any() and not rows[dram].all():
            D.add(name, "mem", rows[:, None] * cols, 0.0, knots, shared=True)

    on_dram_rows("mha_items_factor_mem", np.asarray(R["h"]) == np.asarray(R["g"]),
                 hat_basis(R["items"], DECODE_ITEM_KNOTS), DECODE_ITEM_KNOTS)
    on_dram_rows("window_factor_mem", R.get("capped", np.zeros(n, bool)), np.ones((n, 1)))
    if "mmha" in R:  # TensorRT-LLM's tables: the rows its fallback kernel runs (mmha_rows), by their group size
        on_dram_rows("mmha_factor_mem", R["mmha"], hat_basis(np.asarray(R["h"]) / np.asarray(R["g"]), MMHA_KNOTS),
                     MMHA_KNOTS)
    return D


def prefill_cost(b, s, h, g, d, w, e, tile: int, cache_write: bool = True) -> dict:
    """Causal prefill without a cached prefix: b prompts of s tokens, h heads, g KV heads, head dim d, window w
    (0: none), e bytes per cached value. FLOPs 4*b*h*d*pairs over s padded to the tile (the kernels' query/key
    tiles); bytes: q read and out written 2*b*s*h*d*2, k and v read 2*b*s*g*d*2, and (``cache_write``: a
    serving engine's call includes it) k and v written to the cache 2*b*s*g*d*e."""
    b, s, h, g, d, w, e = (np.asarray(x, float) for x in (b, s, h, g, d, w, e))
    sp = np.ceil(s / tile) * tile
    byts = 2 * b * s * h * d * 2 + 2 * b * s * g * d * 2 + (2 * b * s * g * d * e if cache_write else 0.0)
    return dict(flops=4 * b * h * d * causal_pairs(sp, w), bytes=byts, tile=tile)


def prefill_design(R: dict, factors: bool = True) -> Design:
    """fixed, e_compute(prompt) and e_memory(prompt) on PREFILL_ISL_KNOTS; with ``factors`` (a table over many
    head shapes), head-dim factors on both sides, a window factor, GQA factors (1 at MHA) on both sides and a
    work-item factor (prompt x head x 128-query tiles; 1 at 8,192 items) on the compute side."""
    n = len(R["t"])
    D = Design(n)
    one = np.ones((n, 1))
    D.add("fixed_s", "fix", one, np.log(15e-6))
    D.add("e_compute", "comp", hat_basis(R["isl"], PREFILL_ISL_KNOTS), np.log(0.5), PREFILL_ISL_KNOTS)
    hds = [x for x in HEAD_DIMS if x != 128 and (R["hd"] == x).any()] if factors else []
    if hds:
        D.add("hd_factor", "comp", np.stack([(R["hd"] == x).astype(float) for x in hds], axis=1), 0.0,
              tuple(hds), smooth=False)
    D.add("e_memory", "mem", hat_basis(R["isl"], PREFILL_ISL_KNOTS), np.log(0.5), PREFILL_ISL_KNOTS)
    if not factors:
        return D
    if hds:
        D.add("hd_factor_mem", "mem", np.stack([(R["hd"] == x).astype(float) for x in hds], axis=1), 0.0,
              tuple(hds), smooth=False)
    windowed = ((R["w"] > 0) & (R["isl"] > R["w"])).astype(float)
    if windowed.any():
        D.add("window_factor", "comp", windowed, 0.0)
    D.add("gqa_factor", "comp", hat_basis(R["h"] / R["g"], GQA_KNOTS)[:, 1:], 0.0, GQA_KNOTS[1:])
    D.add("gqa_factor_mem", "mem", hat_basis(R["h"] / R["g"], GQA_KNOTS)[:, 1:], 0.0, GQA_KNOTS[1:])
    ctas = R["b"] * R["h"] * np.ceil(R["isl"] / 128)
    D.add("items_factor", "comp", hat_basis(ctas, CTA_KNOTS)[:, :-1], 0.0, CTA_KNOTS[:-1])
    return D


def causal_pairs(s, w):
    """Causal query-key pairs of a prompt of s tokens under a window of w keys (0: none); predict._pairs."""
    s, w = np.asarray(s, float), np.asarray(w, float)
    full = s * (s + 1) / 2
    return np.where((w > 0) & (s > w), w * (w + 1) / 2 + (s - w) * w, full)


def to_knots(d: dict, ref: float | None = None) -> list:
    """{x: value} as [[x, value], ...] sorted by x, with a reference knot (value 1) added where ``ref``."""
    pts = {float(x): v for x, v in d.items()}
    if ref is not None:
        pts.setdefault(float(ref), 1.0)
    return [[x, pts[x]] for x in sorted(pts)]


def gemm_doc(p: dict, tile: int, peak: float, bandwidth: float) -> dict:
    """A fitted GEMM's parameters (``params``) as the document predict.GemmFit.from_doc reads: knots as
    [[x, e], ...], the N and K factors with their reference knot (4,096: factor 1) written in (absent: 1)."""
    flat = [[float(GEMM_NK_REF), 1.0]]
    return {"fixed_s": p["fixed_s"], "tile": tile, "e_compute": to_knots(p["e_compute"]),
            "e_memory": to_knots(p["e_memory"]),
            **{name: to_knots(p[name], GEMM_NK_REF) if name in p else flat
               for name in ("n_factor_compute", "k_factor_compute", "n_factor_memory", "k_factor_memory")},
            "e_quant": p.get("e_quant", 0.0), "peak_flops": peak, "bandwidth": bandwidth}


def attention_doc(p: dict, kind: str, tile, fixed_less: float = 0.0, peak_ratio: float = 1.0,
                  mmha: dict | None = None, l2: float = 0.0) -> dict:
    """A fitted attention class's parameters as the document predict.AttentionFit.from_doc reads, each factor
    with its reference written in: GQA factors 1 at MHA, prefill's work-item factor at 8,192 items, a head-dim
    factor at 128. ``fixed_less``: seconds of the fitted fixed cost that roofcalc counts in another kernel (a
    cache write the measured call included); ``peak_ratio``: the fit's compute peak over the 16-bit one;
    ``mmha``: mmha_rows' rule for the fitted GPU ({"sms", "max_group", "heuristic"}) where the fit has a
    fallback-kernel factor; ``l2``: the fitted GPU's L2 bytes, which a form of per_head "l2" or "l2-random"
    carries (l2_misses)."""
    tile, per_head = tile if isinstance(tile, (list, tuple)) else (tile, False)
    out = {"kind": kind, "fixed_s": round(p["fixed_s"] - fixed_less, 12), "fixed_s_fitted": p["fixed_s"],
           "tile": int(tile or 1), "per_head": not isinstance(per_head, str) and bool(per_head),
           "peak_ratio": peak_ratio,
           "e_compute": to_knots(p["e_compute"]) if isinstance(p["e_compute"], dict) else [[1.0, p["e_compute"]]],
           "e_memory": to_knots(p["e_memory"]), "item_s": p.get("item_s", 0.0),
           "window_factor": p.get("window_factor", 1.0)}
    if per_head == "items" or per_head in L2_REREAD:  # a windowed call's work items one a query head, its KV
        out["items_per_head"] = True  # read once a KV head, or again where L2 no longer holds it (l2_misses)
    if per_head in L2_REREAD:
        if not l2 > 0:
            raise ValueError(f"a form that rereads what L2 no longer holds ({per_head}) needs the GPU's L2 size")
        out["l2_reread"] = {"l2_bytes": float(l2), "policy": L2_REREAD[per_head]}
    if "window_factor_mem" in p:
        out["window_factor_mem"] = p["window_factor_mem"]
    if mmha and "mmha_factor_mem" in p:  # the fallback kernel's factor and where it runs (mmha_rows' rule)
        out["mmha"] = dict(mmha, factor_mem=to_knots(p["mmha_factor_mem"]))
    if mmha and kind == "decode":  # TensorRT-LLM's: the tile is XQA's, on the rows it runs (xqa_rows)
        out["tile_xqa"] = dict(mmha)
    for name, ref in (("items_factor_mem", None), ("mha_items_factor_mem", None), ("gqa_factor", 1.0),
                      ("gqa_factor_mem", 1.0), ("items_factor", 8192.0)):
        if name in p:
            out[name] = to_knots(p[name], ref)
    for name in ("hd_factor", "hd_factor_mem"):
        if name in p:
            out[name] = {"128": 1.0, **p[name]}
    return out


# ----------------------------------------------------------------------------------------------- fused MoE

MOE_X_KNOTS = (0.03125, 0.25, 1, 4, 16, 64, 256, 1024, 4096)  # tokens per expert, T*k/E
# the hidden size H and the per-rank expert width I' (I' runs down to 16 in the tables: 512 / TP 32; the 64 knot
# takes the narrow widths' slowdown, which a factor flat below 256 left as 0.17-0.23 median |log| on H200 bf16)
MOE_DIM_KNOTS = (64, 256, 1024, 4096, 16384)
MOE_DIM_REF = 4096  # the H and I' factors are 1 there
# the distinct experts a call reads on the rank (FlashInfer's CUTLASS MoE tables: moe_design), factor 1 at one
MOE_TOUCHED_KNOTS = (1, 4, 16, 64, 256, 1024)


# The fused MoE classes (predict.MoEFit, keyed by the expert weight format calculator.fused_moe_class names): the
# moe_dtype of AIConfigurator's moe_perf tables, bytes a weight, the side of the square block one fp32 scale covers
# (0: none, or one a tensor), and the peak the GEMMs run on ("bf16", "fp8", "fp4"). MXFP4 (OCP Microscaling Formats
# v1.0): half a byte a weight and one 8-bit scale for each 32, 17/32 of a byte; the tables' w4a16_mxfp4 rows keep
# 16-bit activations, so the GEMMs run on the 16-bit peak. NVFP4 (W4A4, as the tables' collector quantizes weights
# and activations: collector/vllm/collect_moe.py, compressed-tensors "nvfp4-pack-quantized", group 16): half a byte
# a weight and one FP8 scale for each 16, 9/16 of a byte, on the FP4 peak (the GPUs whose tables hold it: B200, RTX
# PRO 6000). int4: weight-only int4 experts (W4A16) in groups of 128 with a 16-bit scale each, half a byte a weight
# and 2/128 for its scale, 33/64 of a byte, on the 16-bit peak (the tables' int4_wo rows: SGLang's collector,
# collector/sglang/collect_moe.py, runs fused_marlin_moe on GPTQ-packed weights with block_shape [0, 128] and scales
# in the activation dtype; vLLM's, Marlin MoE from compressed-tensors' pack-quantized group-128 config).
MOE_FORMATS = {"bf16": ("bfloat16", 2.0, 0, "bf16"), "fp8": ("fp8", 1.0, 0, "fp8"),
               "fp8_block": ("fp8_block", 1.0, 128, "fp8"), "mxfp4": ("w4a16_mxfp4", 17 / 32, 0, "bf16"),
               "nvfp4": ("nvfp4", 9 / 16, 0, "fp4"), "int4": ("int4_wo", 33 / 64, 0, "bf16")}


def moe_kernel_name(kernel_source: str) -> str:
    """The fused-MoE kernel an AIConfigurator kernel source names, in words ("" for none known)."""
    ks = kernel_source
    for part, name in (("flashinfer_cutlass", "FlashInfer's CUTLASS MoE"),
                       ("flashinfer_trtllm", "TensorRT-LLM's MoE kernels in FlashInfer"),
                       ("oaitriton", "OpenAI's Triton MXFP4 MoE"), ("marlin", "Marlin's MoE"),
                       ("deepgemm", "DeepGEMM's grouped GEMMs"), ("triton", "the Triton fused MoE"),
                       ("moe_torch_flow", "TensorRT-LLM's CUTLASS MoE")):
        if part in ks:
            return name
    return ""


def moe_kernel_scales(kernel_source: str, dynamic: bool = False) -> str:
    """Which FP8 activation scales a fused-MoE table's kernel is the engine's pick for, in words ("" where that does
    not decide it): vLLM 0.24's oracle (model_executor/layers/fused_moe/oracle/fp8.py, select_fp8_moe_backend) takes
    FlashInfer's kernels for per-tensor experts with static activation scales (kFp8StaticTensorSym: ModelOpt's and
    compressed-tensors' checkpoints, as AIConfigurator's collector builds its layer, ModelOptFp8Config) and Triton's
    for dynamic ones (quant_method fp8 with activation_scheme dynamic, which no FlashInfer kernel accepts)."""
    if kernel_source.startswith("vllm_modeloptfp8moe_flashinfer") and dynamic:  # (the checkpoint's own scheme)
        return ("vLLM's pick for per-tensor FP8 experts with static activation scales; this checkpoint declares "
                "dynamic ones (its quantization_config's activation_scheme), for which vLLM runs the Triton fused "
                "MoE, which this form does not describe")
    if kernel_source.startswith("vllm_modeloptfp8moe_flashinfer"):
        return ("vLLM's pick for per-tensor FP8 experts with static activation scales, as ModelOpt and "
                "compressed-tensors checkpoints hold them; with dynamic ones (quant_method fp8, activation_scheme "
                "dynamic) vLLM runs the Triton fused MoE, which this form does not describe")
    return ""


def masked_rows(kernel_source: str) -> bool:
    """Whether a fused-MoE kernel (an AIConfigurator kernel source) runs every routed pair's outputs and activation on
    an expert-parallel rank, the other ranks' experts' rows masked (moe_cost's ``pairs``): vLLM's own Triton kernel
    and SGLang's adaptation (write_zeros_to_output), and Marlin's MoE kernel as vLLM's and SGLang's fused_marlin_moe
    run it (both GEMMs over M x topk rows with is_ep set, the activation over every row of the first's output,
    moe_sum over every row of the second's); not FlashInfer's, TensorRT-LLM's or OpenAI's Triton MXFP4 kernels,
    which run the rank's own rows."""
    return ("triton" in kernel_source and "oaitriton" not in kernel_source) or "marlin" in kernel_source


def moe_cost(rows, touched, experts, hidden, inter, wb: float, block: int = 0, pairs=None, gated=True) -> dict:
    """A fused MoE layer's routed experts on one rank (gate and up, the activation, down): ``rows`` routed
    (token, expert) pairs that reach this rank's experts, ``touched`` distinct experts they reach of its
    ``experts`` (E/ep; x = rows / experts, tokens per expert, T*k/E), hidden size H, per-rank expert width I'
    (inter over tp), ``wb`` bytes per weight and, with ``block``, one fp32 scale per block x block tile of each
    weight. FLOPs 2*rows*3*H*I'; bytes: the touched experts' weights, touched * (3*H*I'*wb + scales), and the
    activations in 16 bits as roofcalc's three experts kernels count them: gate_up reads H and writes 2I' a row,
    act_mul reads 2I' and writes I', down reads I' and writes H, 2*rows*(2*H + 6*I') in all.
    ``pairs`` (default: ``rows``): every routed pair the call runs over, when it runs over more than the rank's
    own, as vLLM's Triton fused-MoE kernel does under expert parallelism with every token on the rank
    (vllm/model_executor/layers/fused_moe/fused_moe.py: a block of an expert not on the rank writes zeros for its
    rows, write_zeros_to_output, and the activation and the top-k sum then run over all T*k rows): the GEMMs read
    their inputs for the rank's rows only, 2*rows*(H + I'), and every pair's outputs are written and the
    activation's run, 2*pairs*(2I' + 3I' + H). With pairs = rows the two sums are the one above.
    ``gated`` False (per row or for all): an expert without a gate (up, the activation, down: Nemotron-H's
    relu2, which vLLM runs as ``relu2_no_mul``), two weights of H*I' and not three: FLOPs 2*rows*2*H*I', up
    writes I' and the activation reads and writes I', 2*pairs*(I' + 2I' + H)."""
    rows, touched, experts, hidden, inter = (np.asarray(x, float) for x in (rows, touched, experts, hidden, inter))
    pairs = rows if pairs is None else np.asarray(pairs, float)
    mats = np.where(np.asarray(gated, bool), 3.0, 2.0)  # weights of H x I' an expert holds
    per = mats * hidden * inter * wb
    if block:
        per = per + 4 * (np.ceil((mats - 1) * inter / block) * np.ceil(hidden / block)
                         + np.ceil(hidden / block) * np.ceil(inter / block))
    acts = 2 * rows * (hidden + inter) + 2 * pairs * (hidden + (2 * mats - 1) * inter)
    return dict(flops=2 * rows * mats * hidden * inter, bytes=touched * per + acts,
                x=np.maximum(rows / experts, 1e-3))


def _moe_configs(folder) -> list:
    """The text configs (text_config where nested) of the model configs in ``folder`` (AIConfigurator's
    model_configs/), skipping what does not parse."""
    import json
    from pathlib import Path

    out = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            c = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        c = c.get("text_config", c) if isinstance(c, dict) else None
        experts = c and (c.get("n_routed_experts") or c.get("num_experts") or c.get("num_local_experts"))
        if experts:
            out.append((c, experts))
    return out


def grouped_routing_shapes(folder) -> set:
    """(hidden, expert width, top-k, experts) of every model in ``folder`` (AIConfigurator's model_configs/) whose
    router picks its experts inside groups: n_group > 1 groups, topk_group < n_group of them kept (DeepSeek-V3/R1:
    8 and 4). vLLM's MoE collector builds FusedMoE with that grouped top-k (collector/vllm/collect_moe.py,
    _resolve_moe_runtime_config, ai-dynamo/aiconfigurator at 095f58a) and feeds it the "balanced" logits
    (collector/helper.py balanced_logits), which give each token one expert in each of the 8 groups: every group
    ties, topk_group of them are kept, and rank 0's experts get far more than T*k/ep rows. The H100 fp8-block
    table shows it: at EP 2, 4, 8 and 16 and 16,384 tokens DeepSeek-V3's rows take 2.0, 2.8, 4.3 and 6.4x the
    time of Kimi-K2's (the same hidden size, width and top-k; 384 experts in one group) at equal balanced
    rows per rank. A served model's routing is not that, and the rank's rows are unknown: such rows are left
    out of the fit and of the direct read."""
    out = set()
    for c, experts in _moe_configs(folder):
        groups = c.get("n_group") or c.get("num_expert_group") or 1
        kept = c.get("topk_group") or groups
        if groups > 1 and kept < groups:
            out.add((c.get("hidden_size"), c.get("moe_intermediate_size"), c.get("num_experts_per_tok"), experts))
    return out


def moe_rows_kept(df, engine: str, grouped: set):
    """An engine's balanced fused-MoE rows that the fit and the direct read (--kernel-db) both take, and those left
    out for grouped routing: (kept, left out). SGLang's rows with expert parallelism go first (its collector,
    collector/sglang/collect_moe.py run_op, sends the other ranks' pairs to expert 0 with a zero weight, so rank 0
    computes every pair), and every MXFP4 table's (below); the ``grouped`` shapes (grouped_routing_shapes) go from vLLM's and SGLang's tables and
    stay in TensorRT-LLM's (its collector, collector/trtllm/collect_moe.py, routes without groups outside its
    min-latency mode). ``df``: a pandas table of moe_perf rows."""
    import numpy as np

    df = df[df.distribution == "balanced"]
    if engine == "sglang":
        df = df[df.moe_ep_size == 1]
    # MXFP4 tables' rows with expert parallelism go too: their kernels (OpenAI's Triton MoE kernels, FlashInfer's
    # TensorRT-LLM MXFP4 MoE, Marlin's) are not vLLM's Triton fused-MoE kernel, whose masked rows the form counts
    # under EP (moe_cost's ``pairs``), and how each treats the other ranks' pairs is not established here
    df = df[(df.moe_dtype != MOE_FORMATS["mxfp4"][0]) | (df.moe_ep_size == 1)]
    if engine == "trtllm" or not grouped:
        return df, df.iloc[:0]
    mask = np.array([s in grouped for s in zip(df.hidden_size.tolist(), df.inter_size.tolist(), df.topk.tolist(),
                                               df.num_experts.tolist())], bool)
    return df[~mask], df[mask]


# A rank with half the work of another (half its experts under EP, or half each expert's width under TP; the same
# layer shape, tokens, kernel and GPU) that takes more than 1.3 / 0.7 = 1.857x its time: no cost that grows with the
# work holds both rows within +-30 % as evaluate counts it (0.7 p <= t <= 1.3 p): t_less <= 1.3 p_less <= 1.3 p_more
# <= 1.3 t_more / 0.7
WORK_CONSISTENT = 1.3 / 0.7


def slower_than_twice_the_work(df):
    """A mask of a fused-MoE table's rows (one kernel, one GPU) that take more than WORK_CONSISTENT times the time of
    the rows of the same shape and tokens with twice the work on the rank: the same TP and half the EP (twice the
    experts and the routed pairs), or the same EP and half the TP (twice each expert's width); repeated rows of a
    configuration are taken at their median, the row's own configuration too (as the fit, which merges them
    first). Such a row's time is set by something other than the work (TensorRT-LLM's collector autotunes each
    shape's tactics, collector/trtllm/collect_moe.py: series of a shape at some EP sizes run 4-5x their
    neighbours), and no cost that grows with the work holds it and its partner within +-30 %: the fit
    (benchmarks/fit_kernels.py) and the direct read (--kernel-db) both leave it out. A slow row whose partner is
    slow too is not found. ``df``: a pandas table of moe_perf rows."""
    import numpy as np

    cols = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
    keys = [tuple(r) for r in df[cols].to_numpy(int).tolist()]
    med: dict = {}
    for key, t in zip(keys, df.latency.to_numpy(float)):
        med.setdefault(key, []).append(t)
    med = {key: float(np.median(v)) for key, v in med.items()}
    out = np.zeros(len(df), bool)
    for n, key in enumerate(keys):
        *shape, tp, ep = key
        for other in ((*shape, tp, ep // 2) if ep % 2 == 0 else None, (*shape, tp // 2, ep) if tp % 2 == 0 else None):
            if other is not None and other in med and med[key] > WORK_CONSISTENT * med[other]:
                out[n] = True
    return out


def ungated_moe_shapes(folder) -> set:
    """(hidden, expert width, top-k, experts) of every model in ``folder`` whose experts have no gate: Nemotron-H
    (model_type nemotron_h), which vLLM's collector runs with its ``mlp_hidden_act`` as ``<act>_no_mul`` (up,
    the activation, down: collector/vllm/collect_moe.py, as above), at its ``moe_latent_size`` where it has one
    (its experts work in that latent width) and at its hidden size too: AIConfigurator's case file
    (collector/cases/models/NemotronHForCausalLM_cases.yaml, ai-dynamo/aiconfigurator at 095f58a) runs
    Nemotron-3-Ultra's experts at its outer width, 8,192, for SGLang and TensorRT-LLM ("Ultra uses its outer
    hidden width in SGLang/TRT-LLM") and Nemotron-3-Super's at 4,096 as well as 1,024, each with
    ``sglang_moe_is_gated: false``. Their rows hold two weights of H x I' an expert, not three."""
    out = set()
    for c, experts in _moe_configs(folder):
        if c.get("model_type") == "nemotron_h":
            for width in {c.get("moe_latent_size") or c.get("hidden_size"), c.get("hidden_size")}:
                out.add((width, c.get("moe_intermediate_size"), c.get("num_experts_per_tok"), experts))
    return out


# engine -> the first table version whose AIConfigurator collector runs experts without a gate as such
UNGATED_FROM = {"sglang": "0.5.14"}

# (engine, version folder, kernel source) -> shapes of experts without a gate that the table holds measured with
# one (three weights an expert). SGLang 0.5.14's Triton rows of Nemotron-3 Super's latent shape (H 1,024, width
# 2,688, top 22 of 512; the H100's and H200's bf16 and fp8-block tables): AIConfigurator's case file
# (collector/cases/models/NemotronHForCausalLM_cases.yaml, ai-dynamo/aiconfigurator) has named only nvfp4 for that
# shape under SGLang since e015c0ed6, so these rows came from a plan whose entry for it carried no Nemotron keys
# (as it stood at c3ef575cc): the collector's defaults ran it (case_generator.py: sglang_moe_is_gated True, w1 of
# 2 I' rows; the plain Triton path, where Nano's and Ultra's rows ran FlashInfer's CUTLASS kernel as their entries
# ask). The tables say the same: counted with two weights, the shape's memory-bound rows (64 tokens) reach 2.5-2.9
# TB/s on the H200 where every shape of 128 or more experts there reaches 3.4-4.4, and its rows run about 1.5x the
# held-out form from 2 tokens up (the ratio of three weights to two); counted with
# three, the H100's and H200's fp8-block rows of it go from +0.41 and +0.48 median log(measured / held-out
# form) to +0.02 and +0.09. SGLang's L40S Triton rows of Nemotron-3 Nano's and Ultra's shapes, planned with
# is_gated false, run as two weights and are counted so.
MEASURED_GATED = {("sglang", "0.5.14", "sglang_fused_moe_triton"): frozenset({(1024, 2688, 22, 512)})}


def ungated_shapes_for(folder, engine: str, version: str, kernel_source: str | None = None) -> set:
    """The shapes a table measured with experts without a gate (ungated_moe_shapes), or none where the table's
    collector ran every expert gated. AIConfigurator's SGLang collector had no path without a gate until its
    upgrade to SGLang 0.5.14 (ai-dynamo/aiconfigurator e23be5a79, 2026-07-13: collector/sglang/collect_moe.py's
    is_gated, NemotronHForCausalLM_cases.yaml's sglang_moe_is_gated false; before it every case ran SwiGLU, w1 of
    2 I' rows), so its tables of earlier SGLang versions (the A100's 0.5.10, in the package by 2026-05-11,
    f116a1e7b) hold Nemotron-H's shapes with three weights an expert. vLLM's collector runs them as
    ``<act>_no_mul`` and TensorRT-LLM's as Relu2 (NON_GATED_MOE_MODELS) in every table the package holds.
    ``kernel_source``: the table's, less the shapes MEASURED_GATED names for it."""
    first = UNGATED_FROM.get(engine)
    if first is not None and _version(version) < _version(first):
        return set()
    return ungated_moe_shapes(folder) - MEASURED_GATED.get((engine, version, kernel_source), frozenset())


def _version(v: str) -> tuple:
    """A version folder's (major, minor, patch): 0.5.6.post2 -> (0, 5, 6); 0.5.14rc1 reads as 0.5.14."""
    parts = tuple(int(x) for x in re.findall(r"\d+", v)[:3])
    if not parts:
        raise ValueError(f"not a version folder: {v!r}")
    return parts


def balanced_routing(tokens: int, experts: int, topk: int, ep: int, every_pair: bool = False) -> tuple[int, int]:
    """(rows, distinct experts) that reach EP rank 0's experts (0 .. E/ep - 1) under the "balanced" routing of
    AIConfigurator's MoE collector (collector/helper.py balanced_logits), the routing of its fitted tables: token
    i picks experts (i + j*s) mod E, j < k, s = ceil(E/k), or (floor(i*s/T + j*s)) mod E when T < s (every
    token's k experts spread over the E). ``every_pair``: a kernel that runs every routed pair on the rank, another
    rank's clamped to its own first or last expert at a zero weight (TensorRT-LLM's fp8 block-scale MoE on SM120,
    EVERY_PAIR): all T*k rows, over the local experts reached and rank 0's last (its first is its own)."""
    s = -(-experts // topk)
    i = np.arange(tokens, dtype=float)[:, None]
    j = np.arange(topk, dtype=float)[None, :]
    sel = (i + j * s) if tokens >= s else np.floor(i * s / tokens + j * s)
    sel = sel.astype(np.int64) % experts
    local = np.minimum(sel, experts // ep - 1) if every_pair else sel[sel < experts // ep]
    return int(local.size), int(np.unique(local).size)


# The fused-MoE kernel sources of the measured tables that run every routed (token, expert) pair on each
# expert-parallel rank: TensorRT-LLM's fp8 block-scale MoE on SM120 (the RTX PRO 6000's 1.3.0rc20 table), whose
# CutlassFusedMoE.run_moe clamps another rank's expert ids to the rank's own (to the first or last local expert) and
# zeroes their scales, and whose Triton kernel (fused_moe_triton_fp8_block_scale.py) then runs every pair it is
# given. Its rows show it: 4,096 hidden, 1,536 wide, top 8 of 128 experts, 16,384 tokens take 26.2 ms at EP 1 and
# 26.5 ms at EP 128, where the CUTLASS kernels' rows of the same table fall as 1 / EP. A served rank without an
# all-to-all (attention split by heads, or replicated) runs the same.
EVERY_PAIR = ("moe_torch_flow_triton_fp8_block",)


def moe_design(R: dict) -> Design:
    """fixed, e_compute and e_memory by tokens per expert (MOE_X_KNOTS, R["x"]), a time per routed (token, expert)
    pair in series (pair_s; the series term's count, R["pairs"]), and factors by the hidden size and the per-rank
    expert width on MOE_DIM_KNOTS (1 at 4,096) on each side. ``R["spread"]`` (FlashInfer's CUTLASS MoE kernel):
    a memory-side factor by the distinct experts the call reads (MOE_TOUCHED_KNOTS, 1 at one expert): its
    grouped GEMM streams few experts' weights slower than many (cross-validated on the H100's and H200's fp8
    tables: 0.109 and 0.125 median |log| without it, 0.090 and 0.098 with it; on the Triton and TensorRT-LLM
    kernels' tables it did not help, and is left out there). ``R["untuned"]`` (SGLang's Triton kernel): 1 on the
    rows whose shape has no tuned configuration in the SGLang version that ran them (benchmarks/sglang_moe_configs.py:
    those run get_default_config's 64 x 64 x 32 tiles), which take a compute-side factor by tokens per expert of
    their own (cross-validated on the H100's bf16 table: 0.138 / 82 % without it, 0.098 / 91 % with it).
    ``R["misaligned"]`` (else from R["inter"]: moe_misaligned): 1 on the rows whose rank's expert width is not a
    multiple of 16, which take one factor on each side (``misaligned_factor_compute``, ``_memory``; the memory
    one shared by the DRAM and L2 rows) where the table holds such rows and others; benchmarks/fit_kernels.py keeps
    them where they predict the table's held-out shapes better (docs/kernel_fits.md, "Widths not a multiple of
    16")."""
    n = len(R["t"])
    D = Design(n)
    D.add("fixed_s", "fix", np.ones((n, 1)), np.log(20e-6))
    D.add("e_compute", "comp", hat_basis(R["x"], MOE_X_KNOTS), np.log(0.5), MOE_X_KNOTS)
    D.add("e_memory", "mem", hat_basis(R["x"], MOE_X_KNOTS), np.log(0.6), MOE_X_KNOTS)
    # a time per routed (token, expert) pair in series (the top-k selection, the sort and alignment of every
    # pair, EP's masked ones too): `qt` holds the pair count, the -1 turns the term's exp(-x) into exp(+pair_s)
    D.add("pair_s", "qnt", -np.ones((n, 1)), np.log(1e-9))
    keep = [j for j, x in enumerate(MOE_DIM_KNOTS) if x != MOE_DIM_REF]
    for term, tag in (("comp", "compute"), ("mem", "memory")):
        for dim, name in (("hidden", "h"), ("inter", "i")):
            if len(np.unique(R[dim])) < 2:
                continue
            D.add(f"{name}_factor_{tag}", term, hat_basis(R[dim], MOE_DIM_KNOTS)[:, keep], 0.0,
                  tuple(MOE_DIM_KNOTS[j] for j in keep))
    if R.get("spread"):
        D.add("t_factor_memory", "mem", hat_basis(R["touched"], MOE_TOUCHED_KNOTS)[:, 1:], 0.0, MOE_TOUCHED_KNOTS[1:])
    untuned = np.asarray(R.get("untuned", np.zeros(n)), float)
    if 0 < untuned.mean() < 1:
        D.add("untuned_factor_compute", "comp", hat_basis(R["x"], MOE_X_KNOTS) * untuned[:, None], 0.0, MOE_X_KNOTS)
    misaligned = np.asarray(R["misaligned"], float) if "misaligned" in R else moe_misaligned(R["inter"])
    if 0 < misaligned.mean() < 1:  # one factor on each side for the rows whose width is not a multiple of 16
        D.add("misaligned_factor_compute", "comp", misaligned[:, None], 0.0)
        D.add("misaligned_factor_memory", "mem", misaligned[:, None], 0.0, shared=True)
    return D


# How each fused-MoE kernel the measured tables name stores an MXFP4 expert: (the multiple the rank's expert width
# I' is rounded up to, the multiple the hidden size is rounded up to; 0: as is), from the engines' own code. The
# kernel reads, and multiplies by, the padded weights (zeros past the real width), so its tables' rows are counted
# at those sizes (benchmarks/fit_kernels.py moe_rows) and a prediction reads its form there (predict.MoEFit.pad).
# * vLLM (vllm/model_executor/layers/fused_moe/oracle/gpt_oss_mxfp4.py @ 80416a1,
#   mxfp4_round_up_hidden_size_and_intermediate_size): Marlin I' to 128 and H to 256; FlashInfer's TensorRT-LLM
#   kernels both to 256; FlashInfer's CUTLASS kernels both to 128; OpenAI's Triton kernels (the default on Hopper)
#   I' to 64.
# * SGLang 0.5.14 (python/sglang/srt/layers/quantization/mxfp4.py, Mxfp4MoEMethod.create_weights): on SM100 with
#   FlashInfer both to 256 (without it, 64); below SM100, with the triton_kernels package, I' to 64
#   (triton_kernels_padding_alignment: "pad the intermediate size to be a multiple of 2 * mxfp4_block", 2 x 32; its
#   Triton runner then upcasts the padded weights to 16 bits at load, process_weights_after_loading); Marlin I' to
#   128. Keyed by kernel source: SGLang's Triton runner's tables are all below SM100 (H100, H200, L40S).
MXFP4_PADDING = (("vllm_gptossmxfp4moe_marlin", (128, 256)), ("vllm_gptossmxfp4moe_flashinfer_trtllm", (256, 256)),
                 ("vllm_gptossmxfp4moe_flashinfer_cutlass", (128, 128)), ("vllm_gptossmxfp4moe_triton", (64, 0)),
                 ("sglang_flashinfer_trtllm_moe", (256, 256)), ("sglang_fused_moe_triton", (64, 0)),
                 ("sglang_marlin_moe", (128, 0)))


def mxfp4_padding(kernel_source: str) -> tuple[int, int]:
    """(I' multiple, H multiple) an MXFP4 fused-MoE kernel stores its experts at (MXFP4_PADDING, by the table's
    kernel source); (0, 0) for a kernel whose rule is not known here (TensorRT-LLM's tables hold one width)."""
    return next((pad for prefix, pad in MXFP4_PADDING if kernel_source.startswith(prefix)), (0, 0))


def padded(size, multiple: int):
    """``size`` (a number or an array) rounded up to a whole number of ``multiple``; as is for 0."""
    from .predict import _ceil_to

    return _ceil_to(size, multiple)


def moe_misaligned(inter) -> np.ndarray:
    """1 where the rank's expert width I' is not a multiple of predict.MOE_ALIGN (16), else 0: the rows a fused-MoE
    form gives a factor of their own on each side (moe_design). Such widths come of a TP that leaves I / TP odd at
    16 (Nemotron-3 Nano's 1,856 at TP 8: 232; gpt-oss's 2,880 at TP 8: 360); on vLLM's H100 and H200 16-bit Triton
    tables their rows run about twice the aligned form at every size, 1-2 % within +-30 % of it. MXFP4 experts never run
    such a width: vLLM's and SGLang's Mxfp4MoEMethod.create_weights round intermediate_size_per_partition up ("pad
    the intermediate size to be a multiple of 2 * mxfp4_block", to 32, 64, 128 or 256 by kernel: MXFP4_PADDING),
    so the fit gives their rows none (benchmarks/fit_kernels.py moe_rows) and a shipped MXFP4 form carries no
    factor."""
    from .predict import MOE_ALIGN

    return (np.rint(np.asarray(inter, float)).astype(np.int64) % MOE_ALIGN != 0).astype(float)


def moe_ranges(R: dict, sel=None) -> dict:
    """The hidden sizes and per-rank expert widths the rows (``sel`` of them) span: {"hidden": [lo, hi],
    "inter": [lo, hi]}; the H and I' factors are read inside them (predict.MoEFit: a size beyond them as the
    nearest measured one)."""
    sel = np.ones(len(R["t"]), bool) if sel is None else sel
    return {dim: [float(R[dim][sel].min()), float(R[dim][sel].max())] for dim in ("hidden", "inter")}


def moe_clip(R: dict, ranges: dict) -> dict:
    """The rows with H and I' clipped to ``ranges`` (moe_ranges): the sizes a prediction reads its factors at."""
    out = dict(R)
    for dim, (lo, hi) in ranges.items():
        out[dim] = np.clip(np.asarray(R[dim], float), lo, hi)
    return out


def moe_doc(p: dict, peak_ratio: float, block: int, ranges: dict | None = None, tuned=()) -> dict:
    """A fitted fused-MoE class's parameters as the document predict.MoEFit.from_doc reads: knots as [[x, e], ...],
    the H and I' factors with their reference knot (4,096: 1) written in (absent: 1), the measured H and I'
    ranges (moe_ranges) the factors are read inside and, with a factor for untuned shapes (moe_design), the
    (experts, width over TP) pairs of the GPU that have a tuned configuration (``tuned``)."""
    flat = [[float(MOE_DIM_REF), 1.0]]
    return {"fixed_s": p["fixed_s"], "pair_s": p.get("pair_s", 0.0), "peak_ratio": peak_ratio, "block": block,
            **({"ranges": ranges} if ranges else {}),
            "e_compute": to_knots(p["e_compute"]), "e_memory": to_knots(p["e_memory"]),
            **{name: to_knots(p[name], MOE_DIM_REF) if name in p else flat
               for name in ("h_factor_compute", "i_factor_compute", "h_factor_memory", "i_factor_memory")},
            **({"t_factor_memory": to_knots(p["t_factor_memory"], MOE_TOUCHED_KNOTS[0])} if "t_factor_memory" in p
               else {}),
            **({"untuned_factor_compute": to_knots(p["untuned_factor_compute"]), "tuned": [list(t) for t in tuned]}
               if "untuned_factor_compute" in p else {}),
            **({name: p[name] for name in ("misaligned_factor_compute", "misaligned_factor_memory")}
               if "misaligned_factor_compute" in p else {})}


# ----------------------------------------------------------------------------------------------- gated delta nets

# A gated delta net's kernels (Qwen3-Next's and Qwen3.5's linear attention), by the traced op each one is: the
# decode step's state update (the engines' fused_recurrent_gated_delta_rule kernels), the prefill's chunked rule
# (their chunk_gated_delta_rule), and the causal conv before it, a decode step's (causal_conv1d_update) and a
# prefill's (causal_conv1d_fn). AIConfigurator's gdn_perf tables time each of the four under vLLM, SGLang and
# TensorRT-LLM.
from .predict import GDN_CLASSES, GDN_PREFILL, gdn_class, gdn_items  # noqa: E402,F401  (the step model's own)

GDN_BYTES_KNOTS = (2**12, 2**16, 2**20, 2**24, 2**28, 2**32)  # the bytes a call moves, 4 kB to 4 GB
GDN_CHUNK = 64  # transformers' torch_chunk_gated_delta_rule's chunk (its chunk_size default)


def gdn_counts(cls: str, b, s, hk, hv, dk: int = 128, dv: int = 128, conv: int = 4) -> tuple:
    """(FLOPs, bytes) roofcalc's trace counts for one call of a gated-delta-net class over b sequences of s tokens
    (1 for decode), hk key and hv value heads a rank, at the head dims and conv width every measured table holds
    (128, 128, 4: Qwen3-Next's and Qwen3.5's); any other is refused. The counts are the trace's of transformers'
    torch code (tests/test_fitting.py traces them): the state update per sequence and value head 5·dk·dv +
    5·dk + 4·dv + 7 FLOPs, reading and writing its fp32 state (8·dk·dv bytes) and 2·dk + 2·dv + 6 bytes of its
    inputs and output; the chunked rule 64·149,835 + 1 FLOPs a chunk of 64 tokens and value head, 646 fewer a
    padding token, and 2·dk + 2·dv + 6 bytes a token and value head with the final state written (4·dk·dv a
    sequence and head); the causal conv over C = 2·hk·dk + hv·dv channels: a decode step 16·C FLOPs and 14·C
    bytes a sequence + 8·C (the conv weights), a prefill 8·C·(s + 3) FLOPs a sequence and 4·C bytes a token +
    6·C a sequence + 8·C."""
    if (dk, dv, conv) != (128, 128, 4):
        raise ValueError(f"gdn_counts holds head dims 128 and a conv of 4, not {dk}, {dv}, {conv}")
    b, s, hk, hv = (np.asarray(x, float) for x in (b, s, hk, hv))
    c = 2 * hk * dk + hv * dv
    if cls == "gdn_decode":
        return b * hv * (5 * dk * dv + 5 * dk + 4 * dv + 7), b * hv * (8 * dk * dv + 2 * dk + 2 * dv + 6)
    if cls == "gdn_prefill":
        chunks = np.ceil(s / GDN_CHUNK)
        pad = chunks * GDN_CHUNK - s
        return (b * hv * (chunks * (GDN_CHUNK * 149_835 + 1) - 646 * pad),
                b * hv * ((2 * dk + 2 * dv + 6) * s + 4 * dk * dv))
    if cls == "gdn_conv_update":
        return 16 * c * b, c * (14 * b + 8)
    if cls == "gdn_conv":
        return 8 * c * b * (s + conv - 1), c * (4 * b * s + 6 * b + 8)
    raise ValueError(f"not a gated-delta-net class: {cls}")


GDN_ITEM_KNOTS = (1, 8, 64, 512, 4096, 65536)  # a call's parallel work: its (sequence, head) pairs
GDN_TOKEN_KNOTS = (1, 8, 64, 512, 4096, 32768)  # a prefill's tokens a sequence
def gdn_design(R: dict) -> Design:
    """fixed, e_compute(bytes) and e_memory(bytes) on GDN_BYTES_KNOTS, each times a factor by the call's parallel
    work (gdn_items, on GDN_ITEM_KNOTS, 1 at the largest: the kernels give a thread block to a (sequence, head)
    pair, so few pairs leave the GPU idle whatever the bytes); a prefill's (GDN_PREFILL) also a compute factor by
    its tokens a sequence (GDN_TOKEN_KNOTS, 1 at the largest: a sequence's chunks run in turn, and a short one pays
    for a whole chunk) and a time a sequence in series (seq_s: its varlen bookkeeping)."""
    n = len(R["t"])
    D = Design(n)
    D.add("fixed_s", "fix", np.ones((n, 1)), np.log(5e-6))
    D.add("e_compute", "comp", hat_basis(R["bytes"], GDN_BYTES_KNOTS), np.log(0.3), GDN_BYTES_KNOTS)
    D.add("e_memory", "mem", hat_basis(R["bytes"], GDN_BYTES_KNOTS), np.log(0.5), GDN_BYTES_KNOTS)
    items = hat_basis(R["items"], GDN_ITEM_KNOTS)[:, :-1]
    D.add("items_factor", "comp", items, 0.0, GDN_ITEM_KNOTS[:-1])
    D.add("items_factor_mem", "mem", items, 0.0, GDN_ITEM_KNOTS[:-1])
    if R["cls"] in GDN_PREFILL:
        D.add("tokens_factor", "comp", hat_basis(R["s"], GDN_TOKEN_KNOTS)[:, :-1], 0.0, GDN_TOKEN_KNOTS[:-1])
        D.add("seq_s", "qnt", -np.ones((n, 1)), np.log(1e-7))
    return D


def gdn_doc(p: dict) -> dict:
    """A fitted gated-delta-net class's parameters as predict.GdnFit.from_doc reads them: knots as [[bytes, e]]."""
    ref = float(GDN_ITEM_KNOTS[-1])
    return {"fixed_s": p["fixed_s"], "e_compute": to_knots(p["e_compute"]), "e_memory": to_knots(p["e_memory"]),
            "items_factor": to_knots(p.get("items_factor", {}), ref),
            "items_factor_mem": to_knots(p.get("items_factor_mem", {}), ref),
            "tokens_factor": to_knots(p.get("tokens_factor", {}), float(GDN_TOKEN_KNOTS[-1])),
            "seq_s": p.get("seq_s", 0.0)}
