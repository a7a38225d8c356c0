"""Fit per-kernel-class GPU cost parameters to NVIDIA AIConfigurator's measured kernel tables.

    python3 -m venv /tmp/aicvenv && /tmp/aicvenv/bin/pip install -q pandas pyarrow numpy
    /tmp/aicvenv/bin/pip download --no-deps -d /tmp/aic aiconfigurator-core==0.12.0
    cd /tmp/aic && unzip -q aiconfigurator_core-0.12.0-*.whl 'aiconfigurator_core/systems/*' -d x
    /tmp/aicvenv/bin/python benchmarks/fit_kernels.py --data /tmp/aic/x/aiconfigurator_core/systems

The tables (Parquet, latency in ms) come from the pip package `aiconfigurator-core` (ai-dynamo/aiconfigurator,
Apache-2.0); nothing of it is kept in this repo. Layout: `<data>/data/<system>/<op>/<engine>/<version>/*.parquet`.
For each GPU system, engine (vllm, sglang, trtllm) and kernel class the script computes every measured row's
FLOPs and bytes by the hand formulas below, fits

    t = fixed + max(FLOPs / (peak * e_compute), bytes / (bandwidth * e_memory))

toward Huber's M-estimator on log(t) (fitting.fit: least squares, then rows reweighted by their residuals), cross-
validates it on whole held-out shapes, and writes
`benchmarks/kernel_fits.json` (parameters, provenance) and `docs/kernel_fits.md` (the cross-validated figures).
Peaks and bandwidths are datasheet figures (docs: hardware_specs), dense; the efficiencies are relative to them.

Classes (each row's FLOPs and bytes: the *_rows functions; the size dependences: `design_for`; a log-efficiency
is piecewise linear in log2 of its size between knots, a *_factor multiplies an efficiency):
  gemm_bf16          one linear layer (vLLM: torch.nn.functional.linear); e_compute(M) * f(N) * f(K) with M padded
                     to the kernel's M tile (fitted), e_memory(M) * f(N) * f(K); rows with n or k < 128 left out
  gemm_fp8           fp8 per-tensor (vLLM: CutlassFP8ScaledMMLinearKernel) on the fp8 peak; the row includes
                     quantizing the input, a memory-bound kernel in series (3*m*k bytes, its own e_quant);
                     TensorRT-LLM's rows less the dynamic input scale their collector times and a served
                     checkpoint's static scale does not run (static_scale)
  gemm_fp8_block     fp8 weights in 128 x 128 blocks with fp32 scales, the input quantized per 1 x 128 group
                     (TensorRT-LLM's Linear, SGLang's DeepGEMM), as gemm_fp8; vLLM's rows are left out (not
                     timed in a CUDA graph)
  gemm_int8_wo       weight-only int8 (TensorRT-LLM's WeightOnlyQuantMatmul): the 16-bit form, the weight at
  gemm_int4_wo       1 or 0.5 bytes (+ a 16-bit scale per output row), on the 16-bit peak
  decode_bf16kv      decode attention without a sliding window, bf16 KV; KV length rounded up to the kernel's KV
                     tile (fitted), e_memory(KV length) * f(sequences x KV heads) * f(head dim), a time per work
                     item (sequence x KV head) in series, and a GQA factor where the table has real MHA rows
  decode_fp8kv       the same, fp8 KV
  decode_swa_*kv     the rows with a sliding window (KV capped at it), fitted apart: FlashAttention-2 gives up
                     its GQA packing with a window (a fitted choice: KV read once per query head), a GQA factor,
                     and a factor for the rows whose context passes the window
  prefill_bf16kv     causal prefill (isl >= 16; window rows included, their pairs capped): e_compute(isl) * f(head
                     dim) * f(GQA ratio) * f(work items) * f(window), e_memory(isl) * f(head dim) * f(GQA ratio)
  prefill_fp8kv      the same with an fp8 KV cache, on the fp8 peak (FA3/FlashInfer run it in fp8)
  moe_bf16           a fused MoE layer's routed experts (vLLM's FusedMoE, one rank), bf16 weights; balanced routing
                     rows only; e_compute(x) * f(H) * f(I'), e_memory(x) * f(H) * f(I'), x = tokens per expert,
                     and a time per routed (token, expert) pair in series (moe_rows)
  moe_fp8            the same, fp8 per-tensor weights and activations, on the fp8 peak
  moe_fp8_block      the same, fp8 weights with one fp32 scale per 128 x 128 block, on the fp8 peak
  moe_mxfp4          the same, MXFP4 weights (17/32 of a byte each) and 16-bit activations (the tables'
                     w4a16_mxfp4: gpt-oss's experts under vLLM: OpenAI's Triton MoE kernels on Hopper, FlashInfer's
                     TensorRT-LLM MXFP4 MoE on Blackwell, Marlin on the L40S), on the 16-bit peak; tensor-parallel
                     rows only (fitting.moe_rows_kept)
  moe_nvfp4          the same, NVFP4 weights and activations (W4A4: 9/16 of a byte a weight, an FP8 scale per 16), on
                     the FP4 peak (B200, RTX PRO 6000: the GPUs whose tables hold nvfp4 rows)
  moe_int4           the same, weight-only int4 weights (33/64 of a byte: a 16-bit scale per 128) and 16-bit
                     activations (Marlin's MoE kernel), on the 16-bit peak; SGLang 0.5.10's tables where the current
                     one holds a single shape (older_table_with_shapes)
  allreduce          nccl all-reduce, fp16, the system's nccl version: fixed(ranks) + link bytes / (link bandwidth
                     * e_link(ranks, message size)); one table per GPU, fitted once
  allgather          nccl all-gather, the same table and form; link bytes (n-1)/n of the output (nccl-tests' size)
  alltoall           nccl all-to-all, the same; link bytes (n-1)/n of the per-rank buffer (nccl-tests' size)
  custom_allreduce   the engine's own all-reduce as it runs inside its CUDA graph (vLLM's custom all-reduce,
                     SGLang's, TensorRT-LLM's), bf16: the all-reduce's form, fitted per engine (comm/<engine>/)
A row whose working set fits in L2 (the benchmark replays the same weights or KV) gets memory efficiencies of its
own (`l2_*`, fitted with the rest, the fixed cost shared); the DRAM ones are what a real step's kernels see, and
the cross-validated figures are given for the DRAM rows (and for all rows). A discrete parameter (a tile) is chosen
first, by how well each tile's form predicts half the shape groups from the other half (best_tile), then the
continuous ones are fitted fold by fold.

Needs numpy, pandas and pyarrow; about ten minutes on two cores for the three engines.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # small matrices: one BLAS thread is faster, and the machine is shared

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))  # roofcalc.fitting: the fit `roofcalc measure --device cuda` runs too

from roofcalc import fitting as F  # noqa: E402
from roofcalc.fitting import Design, evaluate, fit, folds_of, hat_basis, rows_of, score  # noqa: E402

GPUS = ("a100_sxm", "h100_sxm", "h200_sxm", "b200_sxm", "l40s", "rtx_pro_6000_server")
ENGINES = ("vllm", "sglang", "trtllm")
CLASSES = ("gemm_bf16", "gemm_fp8", "gemm_fp8_block", "gemm_nvfp4", "gemm_int8_wo", "gemm_int4_wo", "decode_bf16kv", "decode_fp8kv", "decode_swa_bf16kv", "decode_swa_fp8kv",
           "prefill_bf16kv", "prefill_fp8kv", "allreduce", "allgather", "alltoall", "custom_allreduce", "moe_bf16",
           "moe_fp8", "moe_fp8_block", "moe_mxfp4", "moe_nvfp4", "moe_int4", *F.GDN_CLASSES)
# the NCCL classes: each fitted once per GPU (one table for every engine), its table's op and the link bytes a rank
# sends per byte of nccl-tests' size (the bus-bandwidth factor: all-reduce 2(n-1)/n, all-gather and all-to-all
# (n-1)/n)
NCCL = {"allreduce": ("all_reduce", lambda n: 2 * (n - 1) / n), "allgather": ("all_gather", lambda n: (n - 1) / n),
        "alltoall": ("alltoall", lambda n: (n - 1) / n)}
# every collective class (the form of the NCCL ones), and the link bytes a rank sends per byte of its size
LINK = {**{cls: factor for cls, (_, factor) in NCCL.items()}, "custom_allreduce": NCCL["allreduce"][1]}

# Datasheet figures (dense tensor-core peaks, nominal DRAM bandwidth, one-direction per-GPU link bandwidth,
# L2 size) from docs' hardware_specs: A100 80GB SXM, H100 SXM, H200 SXM, HGX B200, L40S. The L40S box has no
# GPU peer-to-peer: its collectives go through PCIe Gen4 and the host. RTX PRO 6000 Blackwell Server Edition
# (GB202, 188 SMs, 128 MB L2, 1,792 GB/s GDDR7, PCIe Gen5 x16): dense BF16 and FP8 tensor peaks derived from its
# datasheet's 4,000 AI TOPS (FP4 with sparsity): FP4 dense 2,000, FP8 1,000, BF16 500 (FP32 accumulate at full
# rate on RTX PRO parts); fp4: the FP4 tensor peak NVFP4 GEMMs run at (HGX B200: 9 PFLOP/s dense); its 8-GPU box reaches 42-44 GB/s of all-reduce bus bandwidth at 32 MB (peer to peer
# over PCIe; the L40S box: 2.5). l2: each datasheet's "MB" of L2 read as MiB, the unit the device reports (CUDA's
# cudaDeviceProp::l2CacheSize), by which a table's rows are judged L2-resident (docs/kernel_fits.md, "L2 in MiB").
SPECS = {
    "a100_sxm": dict(sms=108, bf16=312e12, fp8=None, bw=2039e9, link=300e9, l2=40 * 2**20),
    "h100_sxm": dict(sms=132, bf16=989.4e12, fp8=1978.9e12, bw=3350e9, link=450e9, l2=50 * 2**20),
    "h200_sxm": dict(sms=132, bf16=989.4e12, fp8=1978.9e12, bw=4800e9, link=450e9, l2=50 * 2**20),
    "b200_sxm": dict(sms=148, bf16=2250e12, fp8=4500e12, fp4=9000e12, bw=8000e9, link=900e9, l2=126 * 2**20),
    "l40s": dict(sms=142, bf16=362.05e12, fp8=733e12, bw=864e9, link=32e9, l2=96 * 2**20),
    "rtx_pro_6000_server": dict(sms=188, bf16=500e12, fp8=1000e12, fp4=2000e12, bw=1792e9, link=63e9, l2=128 * 2**20),
}

# the knots of the forms' size dependences: roofcalc.fitting's (GEMM_M_KNOTS, ... CTA_KNOTS)
AR_MSG_KNOTS = tuple(2**i for i in range(10, 31, 2))  # message bytes, 1 KiB to 1 GiB


# ----------------------------------------------------------------------------------------------- data files

def read_yaml_scalars(path: Path) -> dict:
    """The flat `key: number` lines of a system YAML (enough for the datasheet figures; no yaml module)."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9_]+):\s*'?([0-9.eE+-]+)'?\s*(#.*)?$", line)
        if m:
            try:
                out[m.group(1)] = float(m.group(2))
            except ValueError:
                out[m.group(1)] = m.group(2)
        m = re.match(r"\s*nccl_version:\s*'([^']+)'", line)
        if m:
            out["nccl_version"] = m.group(1)
    return out


def current_versions(systems: Path) -> dict:
    """query_versions.yaml: {(system or '*', engine): current version}."""
    out = {}
    path = systems / "query_versions.yaml"
    if not path.exists():
        return out
    scope = None
    system = "*"
    for line in path.read_text().splitlines():
        if re.match(r"^defaults:", line):
            scope, system = "defaults", "*"
        elif re.match(r"^overrides:", line):
            scope = "overrides"
        elif scope == "overrides" and re.match(r"^  ([a-z0-9_]+):\s*$", line):
            system = re.match(r"^  ([a-z0-9_]+):", line).group(1)
        m = re.match(r"^\s+(vllm|sglang|trtllm):\s*\{current:\s*\"([^\"]+)\"", line)
        if m and scope:
            out[(system, m.group(1))] = m.group(2)
    return out


def version_key(v: str):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.]|(?<=\d)(?=[a-z])", v)]


def pick_version(systems: Path, gpu: str, op: str, engine: str, cur: dict) -> Path | None:
    base = systems / "data" / gpu / op / engine
    if not base.is_dir():
        return None
    have = sorted((p.name for p in base.iterdir() if p.is_dir()), key=version_key)
    want = cur.get((gpu, engine), cur.get(("*", engine)))
    if want in have:
        return base / want
    return base / have[-1] if have else None


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def static_scale(d: pd.DataFrame, vdir: Path, root: Path) -> tuple[pd.DataFrame, dict]:
    """TensorRT-LLM's per-tensor fp8 GEMM rows as served: less the input scale's computation their collector times.

    The collector (ai-dynamo/aiconfigurator collector/trtllm/collect_gemm.py) loads the fp8 Linear without an
    input_scale, so TensorRT-LLM's FP8QDQLinearMethod quantizes dynamically: a per-tensor max over the input
    (computeFP8QuantizeScale) and a cast before the quantize kernel and cublas_scaled_mm. A served fp8 checkpoint
    (ModelOpt's, with input_scale) quantizes statically and runs neither. AIConfigurator measured that part on its
    own (quantize/trtllm/<version>/computescale_perf.parquet, by M and K: about 7 us at small sizes on H100 and
    H200) and subtracts it for such checkpoints itself (its fp8_static mode); so does this fit, row by row at the
    row's (M, K), from the table of the GEMM table's own version."""
    p = vdir.parent.parent.parent / "quantize" / "trtllm" / vdir.name / "computescale_perf.parquet"
    if not p.exists():
        raise SystemExit(f"{p} is missing: TensorRT-LLM's fp8 GEMM rows need it (static_scale)")
    from roofcalc.kerneldb import less_measured  # the one rule, --kernel-db reads the rows by it too

    cs = pd.read_parquet(p)
    served = less_measured(d, cs)
    if len(served) != len(d):
        raise SystemExit(f"{p} lacks {len(d) - len(served)} of the GEMM rows' (m, k)")
    if (served.latency <= 0).any():
        raise SystemExit(f"{p}: the input scale's time exceeds a GEMM row's")
    cs, _ = collapse(cs, ["m", "k"])
    return served, dict(file=str(p.relative_to(root)), sha256=sha256(p)[:16],
                        median_us=round(float(cs.latency.median()) * 1e3, 3))


def collapse(df: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, int]:
    """Repeated rows of one configuration (one table holds two runs) become their median."""
    n = len(df)
    df = df.groupby(keys, as_index=False, sort=False)["latency"].median()
    return df, n - len(df)


# ----------------------------------------------------------------------------------------------- hand formulas

# a GEMM table's weight format: (weight bytes, input bytes, fp8 peak and the input's quantization in series)
GEMM_FORMATS = {"bfloat16": (2.0, 2.0, False), "fp8": (1.0, 1.0, True), "fp8_block": (1.0, 1.0, True),
                "nvfp4": (0.5, 0.5, True), "int8_wo": (1.0, 2.0, False), "int4_wo": (0.5, 2.0, False)}


# TensorRT-LLM's GEMM collector from its 1.3 tables on (ai-dynamo/aiconfigurator collector/trtllm/collect_gemm.py, since
# pull request #588 of 2026-03-17): max(1, min(5, ceil(L2 bytes / weight bytes))) copies of the weight, each a
# Linear of its own in the replayed graph, the L2 size as the device reports it (datasheet MB are MiB there:
# 96 MiB on the L40S), the weight at these bytes an element
TRT_COPIES_BYTES = {"bfloat16": 2, "fp8": 1, "fp8_block": 1, "nvfp4": 0.5}


def trt_copies(n, k, dt: str, spec: dict):
    """(copies of the weight per row, the device's L2 bytes) as TensorRT-LLM's 1.3 GEMM collector takes them."""
    l2 = spec["l2"]  # SPECS gives it in MiB, as the device reports it
    return np.clip(np.ceil(l2 / (TRT_COPIES_BYTES[dt] * n * k)), 1, 5), l2


def gemm_rows(df: pd.DataFrame, spec: dict, dt: str, layers: int = 6, trt: bool = False) -> dict:
    """One linear layer: input [m, k], weight [n, k], output [m, n].

    FLOPs 2*m*n*k. bf16: bytes 2*(m*k + k*n + m*n). fp8 per tensor: weight and (quantized) input 1 byte, output
    2 bytes: n*k + m*k + 2*m*n; the measured row also quantizes the bf16 input (read 2*m*k, write m*k: a memory-bound
    kernel before the GEMM, added in series with its own efficiency). fp8 block-scaled (TensorRT-LLM's and SGLang's
    DeepGEMM rows): the same, + one fp32 scale per 128 x 128 block of the weight and per 1 x 128 group of the
    input. NVFP4 (W4A4: vLLM's CUTLASS FP4 GEMM after scaled_fp4_quant; TensorRT-LLM's and SGLang's likewise): weight
    and input at 0.5 bytes, + one FP8 scale per 16 values of each, on the fp4 peak; its input quantization in series
    as fp8's (3*m*k bytes: the form's, its e_quant fitted). Weight-only int8 and int4 (TensorRT-LLM's WeightOnlyQuantMatmul): the weight at 1 or 0.5 bytes with one
    16-bit scale per output row, the input and output in 16 bits, on the 16-bit peak. L2: the benchmark runs
    ``layers`` layers with separate weights and one shared input in a CUDA graph and replays it; it is L2-resident
    when all their weights, the input and their outputs fit. Six, but one where vLLM's collector runs one
    (collector/vllm/collect_gemm.py at 095f58a: `outside_loop_count = 1 if gemm_type in ("fp8_block", "nvfp4")
    else 6`). ``trt``: TensorRT-LLM's 1.3 tables, whose collector replays max(1, min(5, ceil(L2 / weight))) copies
    (trt_copies): two copies of a 48 MiB weight or one of 96 MiB fill the L40S's 96 MiB L2 exactly, and such rows ran
    from L2 (at M = 1 down to 0.35x the cross-validated DRAM form, when they were counted as DRAM rows).
    """
    m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
    l2_bytes = spec["l2"]
    if trt:
        layers, l2_bytes = trt_copies(n, k, dt, spec)
    wb, ab, fp8 = GEMM_FORMATS[dt]
    scales = np.zeros_like(m)
    if dt == "fp8_block":
        scales = 4 * (np.ceil(n / 128) * np.ceil(k / 128) + m * np.ceil(k / 128))
    elif dt == "nvfp4":
        scales = (n * k + m * k) / 16
    elif dt.endswith("_wo"):
        scales = 2 * n
    R = dict(t=df.latency.to_numpy(float) * 1e-3, m=m, n=n, k=k, wb=wb, act_b=ab, quant=fp8, scales=scales, layers=layers,
             l2_bytes=l2_bytes,
             group=[f"n={a},k={b}" for a, b in zip(df.n, df.k)],
             peak=spec.get("fp4") if dt == "nvfp4" else spec["fp8"] if fp8 else spec["bf16"])
    R.update(gemm_cost(R, 1, spec))
    return R


def gemm_cost(R: dict, tile: int, spec: dict) -> dict:
    """`tile` > 1: the compute term counts M padded as the kernels tile it: to the next power of two up to `tile`
    rows, then to a multiple of `tile` (the GEMMs' M tiles; fitted, like decode's KV tile); fitting.gemm_cost."""
    m, n, k, wb = R["m"], R["n"], R["k"], R["wb"]
    L = R.get("layers", 6)
    foot = L * wb * n * k + 2 * m * k + L * 2 * m * n  # the benchmark's shared input is in 16 bits
    return dict(F.gemm_cost(m, n, k, wb, tile, R.get("act_b"), R.get("quant"), R.get("scales", 0.0)),
                l2=foot <= R.get("l2_bytes", spec["l2"]))


def decode_rows(df: pd.DataFrame, spec: dict, kv_plus_one: bool) -> dict:
    """Decode: b sequences, one query token each, h heads, g KV heads, head dim d, KV length L tokens.

    L = step + 1 (vLLM 0.24-era tables) or step (the A100 vLLM 0.14 table), capped at the sliding window.
    FLOPs 4*b*h*L*d (QK^T and PV). Bytes: KV read 2*b*g*L*d*e (e = 1 for fp8 KV, 2 for bf16), q read and out
    write 2*b*h*d*2, and the new token's K and V written to the cache 2*b*g*d*e. L2: the KV the call reads fits.
    The kernels work on KV in tiles: `decode_cost` rounds L up to a tile of `tile` tokens (fitted: the tile that
    fits best), which is what makes 2048 sequences of 2 tokens cost as much as 2048 of 128. `context`: L before the
    window's cap (a row whose context passes its window is one where the window binds).
    """
    b, h, g, d = (df[c].to_numpy(float) for c in ("batch_size", "num_heads", "num_key_value_heads", "head_dim"))
    L = df.step.to_numpy(float) + (1 if kv_plus_one else 0)
    L = context = np.maximum(L, 1)
    w = df.window_size.to_numpy(float) if "window_size" in df else np.zeros_like(L)
    L = np.where(w > 0, np.minimum(L, w), L)
    e = np.where(df.kv_cache_dtype.to_numpy() == "fp8", 1.0, 2.0)
    R = dict(t=df.latency.to_numpy(float) * 1e-3, b=b, h=h, g=g, hd=d, e=e, kvlen=L, w=w, context=context,
             group=[f"h={x},kv={y},d={z}" for x, y, z in zip(df.num_heads, df.num_key_value_heads, df.head_dim)])
    R.update(decode_cost(R, (1, False), spec))
    return R


SOFT_L2 = None


def mmha_rule(gpu: str) -> dict:
    """fitting.mmha_rows' arguments for TensorRT-LLM's decode on ``gpu``: its SM count (SPECS, from the
    datasheets), XQA's largest group (32) and its heuristic, or on SM100 (B200) TRTLLM-GEN's (16, none)."""
    sm100 = gpu.startswith("b200")
    return dict(sms=SPECS[gpu]["sms"], max_group=16 if sm100 else 32, heuristic=not sm100)


def decode_cost(R: dict, variant: tuple, spec: dict) -> dict:
    """variant = (tile, window_per_head): KV length rounded up to the tile; with window_per_head True, a
    sliding-window row reads its KV once per query head, not once per KV head, and with "items" runs one work item
    a query head but reads its group's KV once (FlashAttention-2 packs a GQA group into one work item only without
    a window, flash_api.cpp's seqlenq_ngroups_swapped; whether the group's reads then share L2 is the table's: fitted,
    the choice that fits best); fitting.decode_cost, the new token's K and V written (the tables' calls include
    it)."""
    tile, per_head = variant
    b, h, g, d, e = R["b"], R["h"], R["g"], R["hd"], R["e"]
    out = F.decode_cost(b, h, g, R["kvlen"], d, e, R["w"], tile, per_head, context=R["context"], l2=spec["l2"],
                        tiled=R.get("xqa"))  # TensorRT-LLM's tables: the tile is XQA's (fitting.xqa_rows)
    kv = 2 * b * g * R["kvlen"] * d * e
    soft = {} if SOFT_L2 is None else dict(l2_hit=1.0 - F.l2_misses(kv, spec["l2"], SOFT_L2))
    return dict(out, qbytes=np.zeros_like(b), l2=decode_l2_rows(R, kv, spec), tokens=b * out["lt"],
                tile=list(variant), **soft)


def decode_l2_rows(R: dict, kv, spec: dict):
    """The decode rows judged L2-resident: those whose KV fits L2, but TensorRT-LLM's fallback-kernel (MMHA) rows
    from half L2 up (R["mmha"], fitting.mmha_rows). MMHA reads its group's KV once per query head, through L2,
    whether or not the KV fits there, and its tables show it: at 64 query heads a KV head its rows read their KV
    once at the same rate in (L2/2, L2] as above L2 (the RTX PRO 6000: 0.065 and 0.059 of the DRAM datasheet,
    bf16 KV; the H100: 0.028 and 0.029; the L40S: 0.102 and 0.109; the B200: 0.012 and 0.013), so such rows
    take the DRAM form (a step's) and anchor its MMHA factor (fitting.decode_design's mmha_factor_mem, fitted on
    DRAM rows). Below L2/2 they are the small-work rows the fixed cost holds, and stay L2's."""
    l2 = kv <= spec["l2"]
    if "mmha" in R:
        l2 = l2 & ~(np.asarray(R["mmha"], bool) & (kv > spec["l2"] / 2))
    return l2


def prefill_rows(df: pd.DataFrame, spec: dict, fp8: bool) -> dict:
    """Causal prefill, no cached prefix: b prompts of s tokens, h heads, g KV heads, head dim d.

    FLOPs 4*b*h*d*P where P = s*(s+1)/2 query-key pairs (causal), or with a sliding window w:
    w*(w+1)/2 + (s-w)*w once s > w. Bytes: q read and o write 2*b*s*h*d*2, k and v read 2*b*s*g*d*2, and k, v written
    to the cache 2*b*s*g*d*e. L2: all of it fits. `prefill_cost` with a tile T counts the pairs with s padded to a
    multiple of T (the kernels' query/key tiles; T fitted as decode's).
    """
    b, s, h, g, d = (df[c].to_numpy(float) for c in ("batch_size", "isl", "num_heads", "num_key_value_heads",
                                                        "head_dim"))
    w = df.window_size.to_numpy(float) if "window_size" in df else np.zeros_like(s)
    e = np.where(df.kv_cache_dtype.to_numpy() == "fp8", 1.0, 2.0)
    R = dict(t=df.latency.to_numpy(float) * 1e-3, b=b, isl=s, h=h, g=g, hd=d, w=w, e=e,
             group=[f"h={x},kv={y},d={z}" for x, y, z in zip(df.num_heads, df.num_key_value_heads, df.head_dim)],
             peak=spec["fp8"] if fp8 else spec["bf16"])
    R.update(prefill_cost(R, 1, spec))
    return R


def prefill_cost(R: dict, tile: int, spec: dict) -> dict:
    """fitting.prefill_cost, the K and V written to the cache (the tables' calls include it)."""
    b, s, h, g, d, w, e = (R[x] for x in ("b", "isl", "h", "g", "hd", "w", "e"))
    out = F.prefill_cost(b, s, h, g, d, w, e, tile)
    return dict(out, qbytes=np.zeros_like(b), l2=out["bytes"] <= spec["l2"])


def nccl_rows(df: pd.DataFrame, spec: dict, cls: str) -> dict:
    """nccl-tests collectives, out of place, one node. message_size is in ELEMENTS of nccl_dtype (half: 2 bytes)
    of nccl-tests' size (`-b`/`-e`: AIConfigurator's collector/network/collect_nccl.py runs one size at a time and
    writes size // bytes per element): for an all-reduce the buffer each rank reduces, for an all-gather the whole
    output (n x each rank's input: nccl-tests' AllGatherGetCollByteCount sends size/n a rank), for an all-to-all
    each rank's send (= receive) buffer, size/n to each peer (AlltoAllGetCollByteCount).

    Message bytes S = 2 * elements; each rank sends (and receives) S times the op's bus-bandwidth factor (NCCL) over
    its link: an all-reduce 2(n-1)/n (ring: a reduce-scatter and an all-gather), an all-gather (n-1)/n (every
    input but its own), an all-to-all (n-1)/n (every slice but its own). No FLOPs term (a few adds per byte).
    """
    S = df.message_size.to_numpy(float) * 2.0
    n = df.num_gpus.to_numpy(float)
    return dict(t=df.latency.to_numpy(float) * 1e-3, flops=np.zeros_like(S), bytes=LINK[cls](n) * S,
                qbytes=np.zeros_like(S), l2=np.zeros(len(S), bool), msg=S, ranks=n,
                group=[f"S={int(x)}" for x in S])


def moe_rows(df: pd.DataFrame, spec: dict, key: str, zeros: bool = False, spread: bool = False,
             ungated: set = frozenset(), pad: tuple = (0, 0), every_pair: bool = False) -> dict:
    """One fused MoE layer on one rank, as AIConfigurator's vLLM collector times it (collector/vllm/collect_moe.py,
    ai-dynamo/aiconfigurator at 095f58a; vLLM 0.24.0): a CUDA graph of ``FusedMoE(hidden, router_logits)``, the
    router's logits given (its GEMM is not in the row); the row holds the top-k selection from the logits, the
    tokens' sort and alignment to the experts, the gate/up GEMM, the SiLU-and-multiply, the down GEMM and the
    top-k weighted sum. One physical rank runs the logical TP or EP layout: tp shards each expert's width
    (I' = inter / tp, every expert local), ep holds E/ep whole experts (rank 0's: the first E/ep) and runs only
    the rows routed to them; tp and ep are never combined, and no collective is in the row.
    "balanced" routing is deterministic (fitting.balanced_routing): T*k / ep rows reach the rank, over min(E/ep, T*k/ep)
    distinct experts (not the E*(1-(1-k/E)^T) of uniform random routing that roofcalc takes; the rows' own
    count is used here, the fitted efficiencies are the kernel's). ``key``: the weight format (fitting.MOE_FORMATS).
    FLOPs and bytes: fitting.moe_cost (fp8_block: an fp32 scale per 128 x 128 block; fp8: per-tensor scales, left
    out; mxfp4: one byte for each 32 weights). ``zeros``: the kernel is vLLM's Triton
    fused-MoE kernel, which under EP writes zeros for the rows of every expert not on the rank and runs the
    activation and the top-k sum over all T*k rows (moe_cost's ``pairs``); FlashInfer's and TensorRT-LLM's
    kernels permute the rank's own rows only. ``spread``: FlashInfer's CUTLASS kernel, whose form takes a factor by
    the distinct experts read (fitting.moe_design). ``ungated``: the (H, I, k, E) shapes whose experts have no
    gate (fitting.ungated_moe_shapes), counted with two weights, not three. ``pad``: the (I', H) multiples the kernel
    stores MXFP4 experts at (fitting.mxfp4_padding): the rows are counted, and their factors read, at those sizes.
    ``every_pair``: the kernel runs every routed pair on the rank (fitting.EVERY_PAIR): all T*k rows, over the
    experts fitting.balanced_routing finds them reach."""
    T, H, I, k, E, tp, ep = (df[c].to_numpy(int) for c in ("num_tokens", "hidden_size", "inter_size", "topk",
                                                          "num_experts", "moe_tp_size", "moe_ep_size"))
    _, wb, block, peak = F.MOE_FORMATS[key]
    fmt = key
    cache: dict = {}
    rows = np.empty(len(T))
    touched = np.empty(len(T))
    for n, key in enumerate(zip(T, E, k, ep)):
        if key not in cache:
            cache[key] = F.balanced_routing(*map(int, key), every_pair=every_pair)
        rows[n], touched[n] = cache[key]
    inter = F.padded(I / tp, pad[0])
    hidden = F.padded(H.astype(float), pad[1])
    R = dict(t=df.latency.to_numpy(float) * 1e-3, hidden=hidden, inter=inter, rows=rows, touched=touched,
             experts=(E // ep).astype(float), peak=spec[peak],
             group=[f"h={a},i={b},k={c},e={d}" for a, b, c, d in zip(H, I, k, E)])
    pairs = (T * k).astype(float)  # every routed (token, expert) pair, before the EP rank's mask
    gated = np.array([key not in ungated for key in moe_shapes(df)], bool)
    R.update(F.moe_cost(rows, touched, E // ep, hidden, inter, wb, block, pairs=pairs if zeros else None,
                        gated=gated))
    R["pairs"] = pairs
    R["tokens"] = T.astype(float)
    R["hidden_model"], R["inter_model"] = H.astype(float), I / tp  # the sizes --kernel-db's lookup keys on
    # the width as measured (moe_clip moves a held-out one's, not this); MXFP4 weights are padded to an aligned width
    # by the engines (fitting.moe_misaligned), so their rows take no such factor
    R["misaligned"] = F.moe_misaligned(inter) if fmt != "mxfp4" else np.zeros(len(T))
    R["l2"] = R["bytes"] <= spec["l2"]
    R["spread"] = spread
    return R


def moe_shapes(df: pd.DataFrame) -> list:
    """Each row's layer shape, (hidden, expert width, top-k, experts): what fitting.grouped_routing_shapes and
    ungated_moe_shapes name."""
    return list(zip(df.hidden_size.tolist(), df.inter_size.tolist(), df.topk.tolist(), df.num_experts.tolist()))


def shape_names(shapes) -> list:
    return sorted(f"h={h},i={i},k={k},e={e}" for h, i, k, e in set(shapes))


def sglang_tuned(gpu: str, version: str) -> dict | None:
    """The (experts, width over TP) pairs SGLang ``version`` ships a tuned 16-bit Triton fused-MoE configuration for
    on ``gpu`` (benchmarks/sglang_moe_configs.json, listed from its wheel by sglang_moe_configs.py), with the
    wheel's name; None where the list does not hold the version. AIConfigurator's SGLang collector
    (collector/sglang/collect_moe.py) runs those tiles where a file exists and get_default_config's otherwise, as
    SGLang does: 64 x 64 x 32 for 16-bit weights above E tokens, where vLLM 0.24's default grows its tiles with the
    tokens (so vLLM's tables take no such factor: on the H100's and H200's it moved nothing, 0.087 to 0.085)."""
    doc = json.loads((HERE / "sglang_moe_configs.json").read_text())
    v = doc["versions"].get(version)
    if v is None or gpu not in v["bf16"]:
        return None
    return {"version": version, "wheel": v["wheel"], "sha256": v["sha256"],
            "pairs": {tuple(p) for p in v["bf16"][gpu]}}


# a fused-MoE table's configuration: the columns its repeated rows are merged on (collapse)
MOE_KEYS = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]


def read_moe_table(path: Path, engine: str, grouped: set) -> tuple:
    """(kept rows, grouped-routing rows left out, SGLang's expert-parallel rows left out) of one moe_perf table
    (fitting.moe_rows_kept)."""
    a = pd.read_parquet(path)
    balanced = int((a.distribution == "balanced").sum())
    kept, left_out = F.moe_rows_kept(a, engine, grouped)
    return kept, left_out, balanced - len(kept) - len(left_out)


def older_table_with_shapes(current: Path, engine: str, grouped: set, dtype: str, source: str, d) -> tuple | None:
    """Where the engine's current MoE table holds one model shape of a weight format's kernel (``d``: its kept rows
    of ``dtype`` and kernel ``source``), so nothing can be held out: the newest older version's table of the same
    engine holding that kernel source (the same kernel, by the collector's name for it) over two shapes or more, as
    (path, kept, grouped left out, expert-parallel left out); None where the current one has two or more, or no
    older one does. SGLang's int4 Marlin MoE: 0.5.14's tables hold Kimi-K2's shape alone on the H100 and H200, 0.5.10's
    ten shapes, both ``sglang_marlin_moe`` (collector/sglang/collect_moe.py: fused_marlin_moe). A kernel source that
    differs is another kernel, whatever it is called: vLLM 0.19's ``vllm_marlin_int4_moe`` rows time fused_experts
    with an int4_w4a16 config (collector/vllm/collect_moe.py before its 0.24 upgrade, a644765d8^), vLLM's Triton
    WNA16 path, 1.5-6x the time of 0.24's Marlin MoE on Kimi-K2's shape on the H200, and are not taken."""
    if len(set(moe_shapes(d))) >= 2:
        return None
    base = current.parent.parent
    for v in sorted((q.name for q in base.iterdir() if q.is_dir()), key=version_key, reverse=True):
        path = base / v / "moe_perf.parquet"
        if version_key(v) >= version_key(current.parent.name) or not path.exists():
            continue
        kept, left_out, ep_left = read_moe_table(path, engine, grouped)
        rows = kept[(kept.moe_dtype == dtype) & (kept.kernel_source == source)]
        if len(set(moe_shapes(rows))) >= 2:
            return path, kept, left_out, ep_left
    return None


def same_kernel(a: str, b: str) -> bool:
    """Whether two MoE kernel sources name one kernel: the same name, or Marlin's MoE under both engines (SGLang's
    ``sglang_marlin_moe``, fused_marlin_moe over sgl-kernel's csrc/moe/marlin_moe_wna16, and vLLM's
    ``..._marlin_marlinexperts``, over vLLM's csrc/moe/marlin_moe_wna16: the one Marlin MoE kernel, both files
    headed "Modified by Neural Magic" and "Adapted from https://github.com/IST-DASLab/marlin")."""
    return a == b or ("marlin" in a and "marlin" in b and "mxfp4" not in a + b)


def unseen_tables(systems: Path, gpu: str, engine: str, cls: str, res: dict, cur: dict) -> list:
    """A fitted fused-MoE form against the current tables of the same kernel on the same GPU that its fit did not
    read (same_kernel): another engine's table of one shape, which no fit takes, and the engine's own current table
    where the fit read an older one (older_table_with_shapes). The form, fitted again on its own rows alone from the
    shipped parameters (as each cross-validation fold is: fit_once), predicts those rows, their H and I' read
    inside its rows' range (as predict.MoEFit reads them); the figures
    (median |log| and share within +-30 %, DRAM rows; and on the rows without expert parallelism, which the fit's
    SGLang rows all are) go to docs/kernel_fits.md's "Tables the fit did not read"."""
    key = cls[4:]
    dt = F.MOE_FORMATS[key][0]
    R, info = res["R"], res["info"]
    fitted = systems.parent / info["file"]
    grouped = F.grouped_routing_shapes(systems.parent / "model_configs")
    out = []
    for e2 in ENGINES:
        vdir = pick_version(systems, gpu, "moe", e2, cur)
        path = vdir / "moe_perf.parquet" if vdir else None
        if path is None or not path.exists() or path == fitted:
            continue
        kept, _, _ = read_moe_table(path, e2, grouped)
        d2 = kept[kept.moe_dtype == dt]
        if len(d2) == 0:
            continue
        ks2 = d2.kernel_source.value_counts().index[0]
        if not same_kernel(info["kernel_source"], ks2):
            continue
        d2, _ = collapse(d2[d2.kernel_source == ks2], MOE_KEYS)
        d2 = d2[~F.slower_than_twice_the_work(d2)]
        R2 = moe_rows(d2, SPECS[gpu], key, zeros=F.masked_rows(ks2))
        n = len(R["t"])
        both = {k: (np.concatenate([np.asarray(R[k]), np.asarray(R2[k])]) if isinstance(R[k], np.ndarray)
                    else list(R[k]) + list(R2[k]) if isinstance(R[k], list) else R[k]) for k in R if k in R2}
        sel = np.arange(len(both["t"])) < n
        pred = fit_once(cls, both, SPECS[gpu], sel=sel, theta0=res["theta"], iters=25)[2][~sel]
        dram = ~R2["l2"]
        tp_only = dram & (d2.moe_ep_size.to_numpy(int) == 1)
        out.append(dict(file=str(path.relative_to(systems.parent)), sha256=sha256(path)[:16], engine=e2,
                        kernel_source=ks2, rows=int(len(d2)), shapes=shape_names(moe_shapes(d2)),
                        score_dram=score(R2["t"][dram], pred[dram]),
                        score_dram_tp=score(R2["t"][tp_only], pred[tp_only]), rows_tp=int(tp_only.sum())))
    return out


def load_moe(systems: Path, gpu: str, engine: str, cur: dict, keep_slow: bool = False) -> dict:
    """{moe class: (rows, source info)} from the engine's moe_perf table: balanced routing, each dtype's main
    kernel source (the one with the most rows), less the shapes of grouped-routing models (grouped_routing_shapes).
    vLLM's FusedMoE, SGLang's (its fused_moe_triton/fused_moe.py is adapted from vLLM's fused_moe.py, as its
    header says) and TensorRT-LLM's (its PyTorch flow's fused MoE module, CUTLASS grouped GEMMs over the rank's
    own permuted rows, which FlashInfer's CUTLASS MoE kernel was taken from: the form's factor by distinct
    experts, as for that kernel). SGLang's rows with expert parallelism are left out: its collector
    (collector/sglang/collect_moe.py, run_op) sends the pairs of the other ranks' experts to expert 0 with a zero
    weight, so rank 0 computes every pair, which a served expert-parallel rank does not. TensorRT-LLM's collector
    (collector/trtllm/collect_moe.py) routes by RenormalizeMoeRoutingMethod, without groups, outside its
    min-latency mode (another kernel source), so its DeepSeek-V3-shaped rows are balanced and stay."""
    out = {}
    if engine not in ("vllm", "sglang", "trtllm"):
        return out
    vdir = pick_version(systems, gpu, "moe", engine, cur)
    p = vdir / "moe_perf.parquet" if vdir else None
    if p is None or not p.exists():
        return out
    grouped = F.grouped_routing_shapes(systems.parent / "model_configs")
    current = p
    a, left_out, ep_rows_left_out = read_moe_table(p, engine, grouped)
    for key, (dt, _, _, peak) in F.MOE_FORMATS.items():
        cls = f"moe_{key}"
        p, a_cls, gone_cls, ep_left = current, a, left_out, ep_rows_left_out
        d = a[a.moe_dtype == dt]
        if len(d) == 0 or SPECS[gpu].get(peak) is None:
            continue
        ks = d.kernel_source.value_counts().index[0]
        older = older_table_with_shapes(current, engine, grouped, dt, ks, d[d.kernel_source == ks])
        if older is not None:  # the current table holds one shape of this kernel: an older one of the same kernel more
            p, a_cls, gone_cls, ep_left = older
            d = a_cls[a_cls.moe_dtype == dt]
        vdir = p.parent
        d, dup = collapse(d[d.kernel_source == ks], MOE_KEYS)
        inconsistent = F.slower_than_twice_the_work(d)
        if not keep_slow:  # True: the rows fitting.slower_than_twice_the_work finds stay (the all-rows figures)
            d = d[~inconsistent]
        gone = gone_cls[gone_cls.moe_dtype == dt]
        cutlass = "flashinfer_cutlass" in ks or ks == "moe_torch_flow_cutlass"  # FlashInfer's or TensorRT-LLM's
        every = ks in F.EVERY_PAIR  # every routed pair on each rank (TensorRT-LLM's fp8 block-scale MoE on SM120)
        # vLLM's own Triton kernel (and SGLang's adaptation)
        masked = F.masked_rows(ks) and not every
        triton = "triton" in ks and "oaitriton" not in ks and not every  # (SGLang's tuned tiles: its Triton kernel's)
        pad = F.mxfp4_padding(ks) if key == "mxfp4" else (0, 0)  # how the kernel stores MXFP4 experts
        # experts without a gate, as the table's collector ran them
        ungated = F.ungated_shapes_for(systems.parent / "model_configs", engine, vdir.name, ks)
        R = moe_rows(d, SPECS[gpu], key, zeros=masked, spread=cutlass, ungated=ungated, pad=pad, every_pair=every)
        tuned = sglang_tuned(gpu, vdir.name) if engine == "sglang" and triton and key in ("bf16", "mxfp4") else None
        # the shapes SGLang has no tuned tiles for run its default ones (sglang_tuned); its MXFP4 tables' Triton
        # kernel runs the experts upcast to 16 bits and looks its tiles up as for 16-bit ones, by the stored width
        if tuned is not None:
            R["untuned"] = np.array([(int(e), int(i)) not in tuned["pairs"]
                                     for e, i in zip(R["experts"], R["inter"])], float)
        out[cls] = (R, dict(
            file=str(p.relative_to(systems.parent)), sha256=sha256(p)[:16], version_folder=p.parent.name,
            version_column=sorted(set(map(str, a_cls["version"].unique()))) if "version" in a_cls else None,
            **({"current_version_one_shape": current.parent.name} if p != current else {}),
            kernel_source=ks, duplicates_merged=dup, distribution="balanced", ep_masked_rows_written=masked,
            **({"every_pair_on_each_rank": True} if every else {}),
            slower_than_twice_the_work=dict(rows=int(inconsistent.sum()), left_out=not keep_slow),
            **({"ep_rows_left_out": ep_left} if engine == "sglang" else {}),
            ungated_shapes=shape_names(set(moe_shapes(d)) & ungated),
            **({"padded_to": {"inter": pad[0], "hidden": pad[1]}} if key == "mxfp4" else {}),
            **({"tuned_configs": {**tuned, "pairs": sorted(map(list, tuned["pairs"]))}} if tuned else {}),
            grouped_routing_left_out=dict(shapes=shape_names(moe_shapes(gone)),
                                          rows=int((gone.kernel_source == ks).sum()))))
    return out


# ----------------------------------------------------------------------------------------------- the model

# the fit itself (hat_basis, Design, fit, evaluate): roofcalc.fitting


# ----------------------------------------------------------------------------------------------- per class

def design_for(cls: str, R: dict) -> Design:
    n = len(R["t"])
    D = Design(n)
    lg = np.log
    if cls.startswith("gemm"):
        D = F.gemm_design(R)
    elif cls.startswith("decode"):
        ratio = R["h"] / R["g"]
        # only tables with real MHA rows (16+ KV heads) anchor a GQA factor: TRT-LLM's and SGLang's, not vLLM's;
        # and every windowed table: how much of a group's KV its query heads share under a window varies by
        # kernel (FlashAttention-2 reads it once per query head), a factor by the GQA ratio, 1 at MHA
        D = F.decode_design(R, gqa=cls.startswith("decode_swa") or bool(np.mean(ratio == 1) >= 0.1 and
                                                                          R["g"][ratio == 1].max() >= 16))
    elif cls.startswith("prefill"):
        D = F.prefill_design(R)
    elif cls.startswith("moe"):
        D = F.moe_design(R)
    elif cls in F.GDN_CLASSES:
        D = F.gdn_design(R)
    elif cls in LINK:
        for r in (2, 4, 8):
            sel = (R["ranks"] == r).astype(float)[:, None]
            D.add(f"fixed_s_{r}", "fix", sel, lg(10e-6))
        for r in (2, 4, 8):
            sel = (R["ranks"] == r).astype(float)[:, None]
            D.add(f"e_link_{r}", "mem", sel * hat_basis(R["msg"], AR_MSG_KNOTS), lg(0.5), AR_MSG_KNOTS)
    if cls not in LINK:
        D.split_l2(R.get("l2_hit", R["l2"]))
    return D


def times(cls: str, R: dict, spec: dict):
    n = len(R["t"])
    if cls in LINK:
        return np.zeros(n), R["bytes"] / spec["link"], np.zeros(n)
    peak = R.get("peak") or spec["bf16"]
    if cls.startswith("decode"):
        return R["flops"] / peak, R["bytes"] / spec["bw"], R["items"].astype(float)
    if cls.startswith("moe"):
        return R["flops"] / peak, R["bytes"] / spec["bw"], R["pairs"]
    if cls in F.GDN_CLASSES:  # a prefill's sequences, in series (fitting.gdn_design's seq_s)
        return R["flops"] / peak, R["bytes"] / spec["bw"], R["seqs"]
    return R["flops"] / peak, R["bytes"] / spec["bw"], R["qbytes"] / spec["bw"]


def fit_once(cls, R, spec, sel=None, theta0=None, iters=60):
    moe = cls.startswith("moe")
    if moe and sel is not None:  # held-out rows read the H and I' factors inside the training rows' range
        R = F.moe_clip(R, F.moe_ranges(R, sel))
    D = design_for(cls, R)
    if theta0 is not None and len(theta0) != len(D.prior):  # a factor the held-out rows alone spanned: dropped here
        theta0 = None
    M = D.mats()
    ct, mt, qt = times(cls, R, spec)
    t = R["t"]
    if sel is None:
        sel = np.ones(len(t), bool)
    if theta0 is None and cls.startswith("decode"):  # the second-pass factors from the fit without them
        theta0 = fit(rows_of(D.mats(without=F.DECODE_SECOND), sel), ct[sel], mt[sel], qt[sel], t[sel], D.prior,
                     D.smooth, iters=iters)
    th = fit(rows_of(M, sel), ct[sel], mt[sel], qt[sel], t[sel], D.prior, D.smooth,
             theta0=theta0, iters=iters)
    # MoE: as predict reads it, no call below its roof (the rows that reach DRAM: a step's are those)
    pred = evaluate(th, M, ct, mt, qt, cap=moe and ~R["l2"])[0]
    return th, D.names, pred


DECODE_TILE_SET = (1, 16, 32, 64, 128, 256)
TILES = {"decode": (tuple((t, False) for t in DECODE_TILE_SET), decode_cost),
         "decode_swa": (tuple((t, w) for w in (False, True, "items", *F.L2_REREAD) for t in DECODE_TILE_SET),
                       decode_cost),
         "gemm": ((1, 64, 128, 256), gemm_cost), "prefill": ((1, 64, 128, 256), prefill_cost)}


def tile_key(cls: str) -> str:
    return "decode_swa" if cls.startswith("decode_swa") else cls.split("_")[0]


def best_tile(cls, R, spec):
    """The tile (a discrete parameter: which way the kernel tiles its work) whose form predicts held-out shapes
    best, as predict reads a form: for each tile the form is fitted on half the shape groups and predicts the
    other half, and back, each efficiency at most 1 (predict caps a fitted efficiency at the roof), scored by the
    mean |log(measured / predicted)| over the rows that reach DRAM (a step's kernels are those; all rows where
    none does). The tile is chosen so on all the table's rows, before run_class's cross-validation (whose
    figures are therefore not independent of the choice: one discrete parameter of four to twelve)."""
    tiles, cost = TILES[tile_key(cls)]
    t = R["t"]
    groups = np.asarray(R["group"])
    if len(set(groups)) < 2:
        raise ValueError(f"{cls}: one shape group, no tile to choose on held-out shapes")
    half = np.isin(groups, sorted(set(groups))[::2])
    judged = ~R["l2"] if (~R["l2"]).any() else np.ones(len(t), bool)
    sub = np.arange(len(t)) % 4 == 0  # the chosen tile's starting point is fitted on a quarter of the rows
    best = None
    for tile in tiles:
        if isinstance(tile, tuple) and (tile[1] == "items" or tile[1] in F.L2_REREAD) and not R.get("fa2"):
            continue  # a work item a query head is FlashAttention-2's way under a window (decode_cost), no other's
        Rt = dict(R)
        Rt.update(cost(R, tile, spec))
        M = design_for(cls, Rt).mats()
        ct, mt, qt = times(cls, Rt, spec)
        r = np.empty(len(t))
        for train in (half, ~half):
            _, f, c, m, q = evaluate(fit_once(cls, Rt, spec, sel=train, iters=25)[0], M, ct, mt, qt)
            p = f + np.maximum(np.maximum(c, ct), np.maximum(m, mt)) + q
            r[~train] = np.log(p / t)[~train]
        err = float(np.mean(np.abs(r[judged])))
        if not np.isfinite(err):
            raise ValueError(f"{cls}: tile {tile} predicts no finite time")
        if best is None or err < best[0]:
            best = (err, Rt, tile)
    _, Rt, _ = best
    th = fit_once(cls, Rt, spec, sel=sub, iters=25)[0]
    return (Rt,) + fit_once(cls, Rt, spec, theta0=th)


def run_class(cls: str, R: dict, spec: dict, kfold: int):
    """The class fitted and cross-validated (_run_class). A fused-MoE table holding rows of widths not a multiple of
    16 beside others (R["misaligned"]) is run with the form's factors for them and without, and keeps whichever
    predicts its held-out shapes better (median |log| on the DRAM rows; both figures kept under
    "misaligned_choice"): on some tables those widths run far slower at every size, on others as the rest or by
    the tokens (vLLM's L40S fp8 table: 0.3 ms at 160-512 tokens, 7-16 ms at 128 and from 768), which one factor a
    side does not hold. The choice is made on the figures it reports, as the tile is (best_tile)."""
    mis = np.asarray(R.get("misaligned", ()), float)
    if not (cls.startswith("moe") and len(mis) and 0 < mis.mean() < 1):
        return _run_class(cls, R, spec, kfold)
    with_, without = _run_class(cls, R, spec, kfold), _run_class(cls, {**R, "misaligned": np.zeros(len(mis))},
                                                                 spec, kfold)
    kept = with_["score_dram"]["median_abs_log"] < without["score_dram"]["median_abs_log"]
    out = with_ if kept else without
    out["misaligned_choice"] = {"kept": bool(kept), "with": with_["score_dram"], "without": without["score_dram"],
                                "rows": int(mis.sum())}
    return out


def _run_class(cls: str, R: dict, spec: dict, kfold: int):
    t = R["t"]
    if tile_key(cls) in TILES:
        R, th, names, fitted = best_tile(cls, R, spec)
    else:
        th, names, fitted = fit_once(cls, R, spec)
    folds = folds_of(R["group"], kfold)
    cvp = np.empty_like(t)
    for f in np.unique(folds):
        tr, te = folds != f, folds == f
        cvp[te] = fit_once(cls, R, spec, sel=tr, theta0=th, iters=25)[2][te]
    dram = ~R["l2"]
    return dict(theta=th, names=names, fitted=fitted, cv=cvp, folds=int(len(np.unique(folds))), R=R,
                tile=R.get("tile"), score_dram=score(t[dram], cvp[dram]), score_all=score(t, cvp),
                fit_dram=score(t[dram], fitted[dram]))


# ----------------------------------------------------------------------------------------------- loading

def load(systems: Path, gpu: str, engine: str, cur: dict) -> dict:
    """{class: (rows dict, source info)} for one GPU and engine."""
    spec = SPECS[gpu]
    out = {}
    root = systems.parent

    def note(path, df, dup, ks):
        return dict(file=str(path.relative_to(root)), sha256=sha256(path)[:16], version_folder=path.parent.name,
                    version_column=sorted(set(map(str, df["version"].unique()))) if "version" in df else None,
                    kernel_source=ks, duplicates_merged=dup)

    def main_source(df):
        return df.kernel_source.value_counts().index[0]

    def one_kernel(df, kvd):
        """The rows of the table's main kernel source for this KV dtype and, where the attention's own dtype
        varies (TRT-LLM, SGLang: an fp8 cache with bf16 or fp8 attention), of the attention dtype equal to the
        cache's if it has rows, else the most common one."""
        ks = main_source(df)
        df = df[df.kernel_source == ks]
        ad = None
        if "attn_dtype" in df and df.attn_dtype.nunique() > 1:
            ad = kvd if (df.attn_dtype == kvd).any() else df.attn_dtype.value_counts().index[0]
            df = df[df.attn_dtype == ad]
        return df, ks if ad is None else f"{ks} (attn_dtype {ad})"

    vdir = pick_version(systems, gpu, "gemm", engine, cur)
    if vdir and (vdir / "gemm_perf.parquet").exists():
        g = pd.read_parquet(vdir / "gemm_perf.parquet")
        # vLLM's fp8_block rows are timed without a CUDA graph (docs/kernel_fits.md): left out
        for cls, dt in (("gemm_bf16", "bfloat16"), ("gemm_fp8", "fp8"), ("gemm_fp8_block", "fp8_block"),
                        ("gemm_nvfp4", "nvfp4"), ("gemm_int8_wo", "int8_wo"), ("gemm_int4_wo", "int4_wo")):
            d = g[g.gemm_dtype == dt]
            if len(d) == 0 or (dt.startswith("fp8") and spec["fp8"] is None) or (dt == "fp8_block" and
                                                                                  engine == "vllm") or \
                    (dt == "nvfp4" and spec.get("fp4") is None):
                continue
            ks = main_source(d)
            d, dup = collapse(d[d.kernel_source == ks], ["m", "n", "k"])
            d = d[(d.n >= 128) & (d.k >= 128)]
            info = note(vdir / "gemm_perf.parquet", g, dup, ks)
            if engine == "trtllm" and dt == "fp8":
                d, info["less"] = static_scale(d, vdir, root)
            one = engine == "vllm" and dt in ("fp8_block", "nvfp4")  # one layer a graph (gemm_rows)
            trt = engine == "trtllm" and vdir.name.startswith("1.3.")  # copies to fill L2 (trt_copies)
            if trt:
                info["weight_copies"] = "max(1, min(5, ceil(L2 MiB / weight bytes))) (collector/trtllm/collect_gemm.py)"
            out[cls] = (gemm_rows(d, spec, dt, layers=1 if one else 6, trt=trt), info)
    vdir = pick_version(systems, gpu, "attention", engine, cur)
    if vdir:
        keys = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype", "step"]
        p = vdir / "generation_attention_perf.parquet"
        if p.exists():
            a = pd.read_parquet(p)
            # vLLM 0.14 logged the KV length as `step`; the later tables log step = KV length - 1 (docs).
            plus_one = not (engine == "vllm" and version_key(vdir.name) < version_key("0.20.0"))
            if "window_size" not in a:
                a = a.assign(window_size=0)
            for kvd in ("bfloat16", "fp8"):
                d0 = a[a.kv_cache_dtype == kvd]
                if len(d0) == 0:
                    continue
                d0, ks = one_kernel(d0, kvd)
                d0, dup = collapse(d0, keys + ["window_size"])
                for cls, d in ((f"decode_{kvd[:4]}kv", d0[d0.window_size == 0]),
                               (f"decode_swa_{kvd[:4]}kv", d0[d0.window_size > 0])):
                    if len(d):
                        R = decode_rows(d, spec, plus_one)
                        # FlashAttention-2's windowed decode: one work item a query head (decode_cost's "items")
                        R["fa2"] = "fa2" in ks
                        info = dict(note(p, a, dup, ks), kv_len="step+1" if plus_one else "step")
                        if engine == "trtllm":  # which rows its fallback kernel runs (fitting.mmha_rows)
                            info["mmha_rule"] = mmha_rule(gpu)
                            R["mmha"] = F.mmha_rows(R["h"], R["g"], R["b"], R["kvlen"], **info["mmha_rule"])
                            R["xqa"] = F.xqa_rows(R["h"], R["g"], R["b"], R["kvlen"], **info["mmha_rule"])
                            R["l2"] = decode_l2_rows(R, 2 * R["b"] * R["g"] * R["kvlen"] * R["hd"] * R["e"], spec)
                        out[cls.replace("bflokv", "bf16kv")] = (R, info)
        p = vdir / "context_attention_perf.parquet"
        if p.exists():
            a = pd.read_parquet(p)
            for cls, kvd in (("prefill_bf16kv", "bfloat16"), ("prefill_fp8kv", "fp8")):
                d = a[a.kv_cache_dtype == kvd]
                if len(d) == 0 or (kvd == "fp8" and spec["fp8"] is None):
                    continue
                d, ks = one_kernel(d, kvd)
                kk = keys + (["window_size"] if "window_size" in d else [])
                d, dup = collapse(d, kk)
                d = d[d.isl >= 16]
                out[cls] = (prefill_rows(d, spec, kvd == "fp8"), note(p, a, dup, ks))
    return out


# the kernel source each engine's gdn_perf table times for each gated-delta-net class
GDN_SOURCES = {"gdn_decode": ("fused_recurrent_gated_delta_rule_packed_decode", "fused_recurrent_gated_delta_rule"),
               "gdn_prefill": ("chunk_gated_delta_rule", "chunk_gated_delta_rule_flashinfer"),
               "gdn_conv_update": ("causal_conv1d_update",), "gdn_conv": ("causal_conv1d_fn",)}


def gdn_rows(df: pd.DataFrame, spec: dict, cls: str) -> dict:
    """A gated-delta-net class's rows: b sequences of s tokens (a decode step's: 1), hk key and hv value heads a rank
    (the table's num_k_heads and num_v_heads: Qwen3.5's and Qwen3-Next's heads over TP), head dims and conv width
    as the table's; FLOPs and bytes as roofcalc's trace counts them (fitting.gdn_counts); a shape group is the
    model and its heads a rank. L2: what the call moves fits."""
    b, s = df.batch_size.to_numpy(float), df.seq_len.to_numpy(float)
    if cls in ("gdn_decode", "gdn_conv_update"):
        s = np.ones_like(s)
    hk, hv = df.num_k_heads.to_numpy(float), df.num_v_heads.to_numpy(float)
    flops, nbytes = F.gdn_counts(cls, b, s, hk, hv)
    return dict(t=df.latency.to_numpy(float) * 1e-3, b=b, s=s, hk=hk, hv=hv, flops=flops, bytes=nbytes, cls=cls,
                items=F.gdn_items(cls, nbytes, b, s), seqs=b if cls in F.GDN_PREFILL else np.zeros_like(b),
                l2=nbytes <= spec["l2"],
                group=[f"{m} hk={x} hv={y}" for m, x, y in zip(df.model_name, df.num_k_heads, df.num_v_heads)])


def load_gdn(systems: Path, gpu: str, engine: str, cur: dict) -> dict:
    """{gdn class: (rows, source info)} from the engine's linear_attention/gdn_perf table: each class's kernel
    source (GDN_SOURCES), the rows at head dims 128 and a conv of 4 (every row of the 0.12 tables)."""
    vdir = pick_version(systems, gpu, "linear_attention", engine, cur)
    p = vdir / "gdn_perf.parquet" if vdir else None
    if p is None or not p.exists():
        return {}
    a = pd.read_parquet(p)
    a = a[(a.head_k_dim == 128) & (a.head_v_dim == 128) & (a.d_conv == 4)]
    out = {}
    for cls, sources in GDN_SOURCES.items():
        d = a[a.kernel_source.isin(sources)]
        if d.empty:
            continue
        d, dup = collapse(d, ["kernel_source", "batch_size", "seq_len", "num_k_heads", "num_v_heads", "d_model",
                              "model_name"])
        info = dict(file=str(p.relative_to(systems.parent)), sha256=sha256(p)[:16], version_folder=p.parent.name,
                    version_column=sorted(set(map(str, a["version"].unique()))) if "version" in a else None,
                    kernel_source=", ".join(sorted(set(d.kernel_source))), duplicates_merged=dup)
        out[cls] = (gdn_rows(d, SPECS[gpu], cls), info)
    return out


def load_nccl(systems: Path, gpu: str) -> dict:
    """{class: (rows, source info)} of the NCCL classes, from the nccl table of the system's nccl version (else the
    newest with all-reduce rows), fp16."""
    yaml = read_yaml_scalars(systems / f"{gpu}.yaml")
    ver = yaml.get("nccl_version")
    base = systems / "data" / gpu / "comm" / "nccl"
    p = base / str(ver) / "nccl_perf.parquet"
    if not p.exists():
        cands = sorted(base.glob("*/nccl_perf.parquet"), key=lambda q: version_key(q.parent.name))
        cands = [q for q in cands if "all_reduce" in set(pd.read_parquet(q, columns=["op_name"]).op_name)]
        if not cands:
            return {}
        p = cands[-1]
    df = pd.read_parquet(p)
    out = {}
    for cls, (op, _) in NCCL.items():
        d = df[(df.op_name == op) & (df.nccl_dtype == "half")]
        if d.empty:
            continue
        d, dup = collapse(d, ["num_gpus", "message_size"])
        info = dict(file=str(p.relative_to(systems.parent)), sha256=sha256(p)[:16], version_folder=p.parent.name,
                    version_column=sorted(set(map(str, df["version"].unique()))) if "version" in df else None,
                    kernel_source=f"NCCL {op} half", duplicates_merged=dup)
        out[cls] = (nccl_rows(d, SPECS[gpu], cls), info)
    return out


def load_custom_allreduce(systems: Path, gpu: str, engine: str, cur: dict) -> dict:
    """{"custom_allreduce": (rows, source info)}: the engine's own all-reduce (comm/<engine>/<version>/
    custom_allreduce_perf.parquet), the rows timed inside a CUDA graph (vLLM_custom_graph,
    SGLang_CustomAllReduce_graph; TensorRT-LLM's table has one source, TRTLLM), bf16: what a decode step under the
    engine's CUDA graphs runs. message_size is in elements of allreduce_dtype (bfloat16: 2 bytes), the buffer each
    rank reduces, as an nccl-tests all-reduce's size."""
    vdir = pick_version(systems, gpu, "comm", engine, cur)
    p = vdir / "custom_allreduce_perf.parquet" if vdir else None
    if p is None or not p.exists():
        return {}
    df = pd.read_parquet(p)
    graph = [k for k in df.kernel_source.unique() if k.endswith("_graph")] or \
        [k for k in df.kernel_source.unique() if not k.endswith("_eager")]
    d = df[df.kernel_source.isin(graph) & (df.allreduce_dtype == "bfloat16")]
    if d.empty:
        return {}
    d, dup = collapse(d, ["num_gpus", "message_size"])
    info = dict(file=str(p.relative_to(systems.parent)), sha256=sha256(p)[:16], version_folder=p.parent.name,
                version_column=sorted(set(map(str, df["version"].unique()))) if "version" in df else None,
                kernel_source=", ".join(graph) + " bfloat16", duplicates_merged=dup)
    return {"custom_allreduce": (nccl_rows(d, SPECS[gpu], "custom_allreduce"), info)}


def package_version(systems: Path, given: str) -> str:
    for meta in systems.parent.parent.glob("aiconfigurator_core-*.dist-info/METADATA"):
        m = re.search(r"^Version:\s*(\S+)", meta.read_text(), re.M)
        if m:
            return m.group(1)
    return given


# ----------------------------------------------------------------------------------------------- report

def floor_us(t: np.ndarray) -> float:
    """The plain fixed cost: the median of the five smallest measured rows."""
    return float(np.median(np.sort(t)[:5]) * 1e6)


def fmt(s):
    if s["median_abs_log"] is None:
        return "–", "–"
    return f"{s['median_abs_log']:.3f}", f"{100 * s['within_30']:.0f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="the unzipped aiconfigurator_core/systems folder")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--gpus", default=",".join(GPUS))
    ap.add_argument("--classes", default=",".join(CLASSES))
    ap.add_argument("--folds", type=int, default=10, help="shape groups per cross-validation fold (k-fold)")
    ap.add_argument("--source-version", default="0.12.0", help="aiconfigurator-core version, if no dist-info")
    ap.add_argument("--json", type=Path, default=HERE / "kernel_fits.json")
    ap.add_argument("--md", type=Path, default=ROOT / "docs" / "kernel_fits.md")
    ap.add_argument("--keep-slow-moe-rows", action="store_true", help="keep the MoE rows slower than twice the work "
                    "(fitting.slower_than_twice_the_work): the all-rows figures of docs/kernel_fits.md's note")
    args = ap.parse_args()
    systems = args.data.resolve()
    if not (systems / "data").is_dir():
        sys.exit(f"{systems} has no data/ folder: point --data at aiconfigurator_core/systems")
    cur = current_versions(systems)
    t0 = time.perf_counter()
    results = {}
    for gpu in args.gpus.split(","):
        yaml = read_yaml_scalars(systems / f"{gpu}.yaml")
        nccl = load_nccl(systems, gpu)
        for engine in args.engines.split(","):
            loaded = {**load(systems, gpu, engine, cur), **nccl}
            loaded.update(load_moe(systems, gpu, engine, cur, keep_slow=args.keep_slow_moe_rows))
            loaded.update(load_custom_allreduce(systems, gpu, engine, cur))
            loaded.update(load_gdn(systems, gpu, engine, cur))
            for cls in args.classes.split(","):
                if cls not in loaded:
                    continue
                R, info = loaded[cls]
                if cls in NCCL and engine != args.engines.split(",")[0]:
                    continue  # nccl is the same table for every engine: fitted once
                if cls not in LINK and len(set(R["group"])) < 2:  # no shape to hold out: not cross-validated, not fitted
                    print(f"{gpu:9s} {engine:6s} {cls:15s} rows {len(R['t']):6d}: one model shape, left out", flush=True)
                    continue
                res = run_class(cls, R, SPECS[gpu], len(set(R["group"])) if cls in LINK else args.folds)
                res["info"] = {**info, **({"misaligned_widths": res["misaligned_choice"]}
                                          if "misaligned_choice" in res else {})}
                res["floor_us"] = floor_us(R["t"])
                res["n_rows"] = len(R["t"])
                res["n_l2"] = int(R["l2"].sum())
                res["n_shapes"] = len(set(R["group"]))
                res["peak"] = R.get("peak") or (None if cls in LINK else SPECS[gpu]["bf16"])
                res["ranges"] = F.moe_ranges(R) if cls.startswith("moe") else None
                res["yaml"] = {k: yaml.get(k) for k in ("mem_bw", "bfloat16_tc_flops", "fp8_tc_flops",
                                                         "intra_node_bw")}
                key = (gpu, "nccl" if cls in NCCL else engine, cls)
                if cls.startswith("moe"):
                    res["unseen"] = unseen_tables(systems, gpu, engine, cls, res, cur)
                results[key] = res
                s = res["score_dram"]
                print(f"{gpu:9s} {key[1]:6s} {cls:15s} rows {res['n_rows']:6d} (L2 {res['n_l2']:5d}) "
                      f"cv median|log| {fmt(s)[0]} within30 {fmt(s)[1]}  fit {fmt(res['fit_dram'])[0]}  "
                      f"[{time.perf_counter() - t0:.0f} s]", flush=True)
    write_json(args, systems, results)
    write_md(args, results, package_version(systems, args.source_version))
    print(f"wrote {args.json} and {args.md} in {time.perf_counter() - t0:.0f} s")


FORMS = {
    "gemm_bf16": "fixed + max(2mnk_pad / (peak * e_c(M) * f_c(N) * f_c(K)), bytes / (bw * e_m(M) * f_m(N) * f_m(K)))",
    "gemm_fp8": "the same on the fp8 peak, + 3mk / (bw * e_quant) in series (the input's quantization)",
    "gemm_nvfp4": "as gemm_fp8 on the fp4 peak, weight and input at 0.5 bytes + one fp8 scale per 16 values (NVFP4 "
                  "W4A4)",
    "gemm_fp8_block": "as gemm_fp8, + one fp32 scale per 128 x 128 weight block and 1 x 128 input group "
                      "(TensorRT-LLM's and SGLang's tables; vLLM's are not timed in a CUDA graph)",
    "gemm_int8_wo": "as gemm_bf16, the weight at 1 byte with a 16-bit scale per output row (weight-only)",
    "gemm_int4_wo": "as gemm_int8_wo, the weight at 0.5 bytes",
    "decode_bf16kv": "fixed + max(4bhL_t d / (peak * e_c), bytes_t / (bw * e_m(L_t) * f(b*g) * f(d) * f_mha(b*g))) "
                     "+ b*g * item_s; f_mha: rows with h = g only, where the table holds both; TensorRT-LLM's: "
                     "x f_mmha(h/g) on the rows its fallback kernel runs (fitting.mmha_rows)",
    "decode_fp8kv": "as decode_bf16kv, KV 1 byte per element",
    "decode_swa_bf16kv": "as decode_bf16kv, L capped at the window; per-query-head KV reads where fitted (or, in FlashAttention-2's tables, per-query-head work items alone); a GQA "
                         "factor f(h/g); a factor f(window) on the DRAM rows whose context passes the window",
    "decode_swa_fp8kv": "as decode_swa_bf16kv, fp8 KV",
    "prefill_bf16kv": "fixed + max(4bhd*pairs / (peak * e_c(isl) * f(d) * f(gqa) * f(items) * f(window)), "
                      "bytes / (bw * e_m(isl) * f(d) * f(gqa)))",
    "prefill_fp8kv": "as prefill_bf16kv on the fp8 peak (the attention runs in fp8)",
    "moe_bf16": "fixed + max(2*rows*3*H*I' / (peak * e_c(x) * f_c(H) * f_c(I') [* f_untuned(x): SGLang's Triton "
                "kernel on a shape without tuned tiles]), (touched * 3*H*I'*wb + "
                "activations) / (bw * e_m(x) * f_m(H) * f_m(I') [* f_m(touched): FlashInfer's CUTLASS kernel])) + "
                "T*k * pair_s, x = tokens per expert; 2*H*I' for experts without a gate; each side's efficiency "
                "times a factor of its own where I' is not a multiple of 16 (f_c and f_m misaligned)",
    "moe_fp8": "as moe_bf16, fp8 weights (1 byte) on the fp8 peak",
    "moe_fp8_block": "as moe_fp8, + one fp32 scale per 128 x 128 block of each weight",
    "moe_mxfp4": "as moe_bf16, MXFP4 weights (half a byte each + one 8-bit scale per 32: 17/32 of a byte), "
                 "16-bit activations on the 16-bit peak",
    "moe_nvfp4": "as moe_bf16, NVFP4 weights (half a byte each + one FP8 scale per 16: 9/16 of a byte), the GEMMs "
                 "on the FP4 peak (activations quantized to NVFP4 inside the call; counted in 16 bits, as every "
                 "class counts them)",
    "moe_int4": "as moe_bf16, int4 weight-only experts (half a byte each + one 16-bit scale per 128: 33/64 of a "
                "byte), 16-bit activations on the 16-bit peak (Marlin's MoE kernel)",
    "allreduce": "fixed(ranks) + 2(n-1)/n * 2 * elements / (link_bw * e_link(ranks, message bytes))",
    "allgather": "fixed(ranks) + (n-1)/n * 2 * elements / (link_bw * e_link(ranks, message bytes)); elements: the "
                 "whole output",
    "alltoall": "fixed(ranks) + (n-1)/n * 2 * elements / (link_bw * e_link(ranks, message bytes)); elements: one "
                "rank's buffer",
    "custom_allreduce": "as allreduce, the engine's own all-reduce inside its CUDA graph (bf16)",
    "gdn_decode": "fixed + max(flops / (peak * e_c(bytes)), bytes / (bw * e_m(bytes))): a gated delta net's state "
                  "update in a decode step, flops and bytes as roofcalc's trace counts them (fitting.gdn_counts)",
    "gdn_prefill": "as gdn_decode: the chunked delta rule of a prefill",
    "gdn_conv_update": "as gdn_decode: the causal conv of a decode step",
    "gdn_conv": "as gdn_decode: the causal conv of a prefill",
}
NOTES = """
Why, and what else the tables showed:

* **Gated delta nets** (`gdn_*`, added 2026-12-08: Qwen3-Next's and Qwen3.5's linear attention). AIConfigurator's
  linear_attention/gdn_perf tables time the four kernels of a gated-delta-net layer under each engine (the decode
  step's state update, fused_recurrent_gated_delta_rule[_packed_decode]; the prefill's chunk_gated_delta_rule,
  vLLM's FlashInfer one on the H100, H200 and B200; the causal conv, causal_conv1d_update and causal_conv1d_fn) over
  Qwen3.5's eight models at each TP width (key and value heads a rank), head dims 128 and a conv of 4. Each row is
  counted as roofcalc's trace counts the same call of transformers' torch code (fitting.gdn_counts, pinned to the
  trace in tests/test_gdn_fit.py), so a traced step reads the form at its own counts. Before, these calls took the
  defaults of the kinds the trace gives them (elementwise, or a GEMV for the decode conv): on Qwen3.5-397B-A17B's
  rank at TP 8 on the H200 under SGLang, a prefill of 1,024 tokens' chunked rule 17.0 µs predicted against 59.6
  measured, its conv 12.0 against 4.7; at batch 64 a decode step's conv 6.84 against 2.15 and its state update
  17.9 against 16.3. The form's size dependences were chosen on these cross-validated figures (so they are not
  independent of them): against the same form without its factor by the call's (sequence, head) pairs and its
  time a sequence, the factors took SGLang's H200 decode from 0.131 to 0.058 median |log|, the RTX PRO 6000's
  decode from 0.070-0.082 to 0.006-0.008, TensorRT-LLM's decode conv on the H100 and H200 from 0.139-0.151 to
  0.076-0.082 and its prefill conv from 0.26-0.48 to 0.16-0.24 (SGLang's A100 prefill conv from 0.393 to 0.091);
  vLLM's H100 decode conv went from 0.074 to 0.106 (every row still within ±30 %). A prefill's factor by its
  tokens a sequence (a short sequence pays for a whole chunk of 64) took SGLang's H200 chunked rule from 0.236 to
  0.204. That cell stays the worst: its sequences of 128-1,024 tokens at batch 8-64 run 1.1-1.5x the form, its
  shorter ones faster. The L40S's decode conv rows past its L2 are six, of one shape, and read their bytes at up to
  three times its DRAM bandwidth (the rest of the call sits in L2): that cell's DRAM score (0.88) is of them. A
  class an engine's tables lack (vLLM's A100 has no gdn table, its L40S and RTX PRO 6000 no prefill rows, and
  TensorRT-LLM's A100 none) is SGLang's form, else vLLM's, named in the preset's header (ship_fits.BORROWED_GDN).
* **The estimator.** The forms were fitted by least squares on log t until 2026-12-05; a few shapes in a table
  run otherwise than the rest (TensorRT-LLM's H100 MoE table: Llama-4-Scout's shape, H 5,120, 16 experts, top
  1, takes 0.28 ms for one token where 128 experts of the same size take 0.073, and its times fall from 3.8 ms
  at 16 tokens to 1.8 ms at 2,048 and rise to 5.4 ms at 3,072: the collector's autotuner picks each shape's
  tactics), and squared errors let them pull the form off every other shape (held out, Mixtral's rows ran
  0.61x that table's form). Four rounds of iteratively reweighted least squares toward Huber's M-estimator
  (fitting.fit: each row weighted by min(1, 1.345 s / |r|), s the residuals' scale from their median absolute
  deviation; Huber's constant, not tuned here; four rounds stop short of its fixed point on some tables) took
  TensorRT-LLM's MoE tables from 0.176-0.260 to 0.069-0.081 median |log| on the H100 and H200 (within ±30 %:
  63-79 % to 82-86 %) and the B200's from 0.099-0.113 to 0.069-0.076. Over the 188 class-GPU-engine cells on
  the A100, H100, H200, B200 and L40S the mean of the cells' median |log| went from 0.066 to 0.056 and the
  share of all their DRAM rows within ±30 % from 95.6 % to 95.7 %; the cells short of the target went from
  25 to 27 (26 once the A100's SGLang MoE table was counted as its collector ran it, below): SGLang's B200
  windowed fp8-KV decode (190 DRAM rows) went from 0.071 / 97.9 % to 0.055 / 88.9 % (there the discrete tile and
  window choice, made on all rows, most of them L2-resident, by squared error, flipped from KV read once per KV
  head to once per query head) and its L40S bf16 MoE from 0.098 / 90.1 % to 0.076 / 89.8 %, while vLLM's L40S
  fp8 MoE went from 0.094 / 86.0 % to 0.058 / 89.6 %, still short. Chosen on these cross-validated figures: one
  estimator for every class, and for `measure`'s fits on the user's GPU.
* **The tile.** Each GEMM, decode and prefill form has one discrete choice, its tile (the M rows a GEMM pads to;
  the KV tokens a decode kernel rounds to, and under a sliding window whether it reads the KV once per query
  head). It had been chosen by the squared error of fits on a quarter of all rows, most of them L2-resident
  in the decode tables, while the cells are scored on the DRAM rows of shapes held out and the step model
  reads a form with each efficiency at most 1. Since 2026-12-05 it is chosen as a form is used (best_tile):
  each tile's form, fitted on half the shape groups, predicts the other half and back, its efficiencies capped
  at 1, and the tile with the least mean |log| over the DRAM rows wins. It changed 83 of the 143 choices (28
  prefill, 22 windowed decode, 17 decode, 16 GEMM); outside windowed decode the changed cells' median |log|
  moved by -0.024 to +0.005 (mean -0.0006). Windowed decode moved most: SGLang's B200 fp8-KV from 0.055 / 89 %
  to 0.044 / 95 %, its L40S bf16 from 0.087 / 85 % to 0.067 / 92 % and fp8 from 0.054 / 88 % to 0.056 / 93 %,
  TensorRT-LLM's H100 and H200 bf16 from 0.117 / 94 % and 0.110 / 94 % to 0.072 / 97 % and 0.082 / 97 %; vLLM's
  L40S bf16, short before and after, from 0.148 / 73 % to 0.197 / 70 % (as shipped, benchmarks/shipped_fits.py,
  0.145 to 0.179), and its RTX PRO 6000 bf16 from 0.101 / 89 % to 0.116 / 79 %. No cell that met the target
  fell short; cells short of it on the five GPUs: 26 to 21. Without the cap the rule had picked, for vLLM's
  B200 windowed fp8-KV decode, a tile whose fitted efficiency passes 1, and the shipped form went from 0.030 to
  0.075 median |log| (the cap keeps it at 0.030). The tile is chosen on all of a table's rows, so the
  cross-validated figures above are not independent of it (one discrete parameter of four to twelve), and the
  rule was chosen on them. `measure`'s fits on the user's GPU (a few curves) keep the in-sample squared error.
* **FlashAttention-2's windowed decode** (vLLM's L40S and RTX PRO 6000 bf16-KV tables, kernel source
  vllm_flash_attn_fa2): FlashAttention-2 packs a GQA group's query heads into one work item only without a window
  (flash_api.cpp, seqlenq_ngroups_swapped: seqlen_q == 1, more query than KV heads, no window), so a windowed call
  runs one work item a query head. The L40S's L2-resident rows show it: at 256 sequences, head dim 128 and 1-128
  keys, 32 query heads take 214-244 µs over one KV head or two, 16 take 113-130, 8 take 61-70, about 27 ns a
  (sequence, query head) whatever the KV heads. Since 2026-12-06 the windowed variants hold a third, offered on FlashAttention-2's
  tables alone (fit_kernels.best_tile): a work item a query head, the group's KV bytes once a KV head
  (fitting.decode_cost's per_head "items"). Both tables take it: the L40S's from 0.197 / 70 % to 0.144 / 72 % (all
  rows 0.108 / 89 % to 0.057 / 97 %), the RTX PRO 6000's from 0.116 / 79 % to 0.100 / 89 %; still short. Offered
  on every table, it had also been chosen for the RTX PRO 6000's FlashInfer fp8-KV table and taken it from 0.091
  / 96 % to 0.122 / 84 %: the choice among variants on half the shapes is not the cross-validated figure.
* **What L2 no longer holds of FlashAttention-2's windowed pass.** With the window's work items one a query head,
  vLLM's FlashAttention-2 takes no split of a paged KV (vllm-project/flash-attention @ 04325b6, flash_api.cpp's
  mha_varlen_fwd: the split-KV parameters are set on the GQA-packed path only) and launches an unsplit call's grid
  as (query blocks, batch, heads) (flash_fwd_launch_template.h, run_flash_splitkv_fwd), so it runs every sequence of
  one query head before the next head's: the group's next query head reads its KV one pass over the batch later (b ·
  L · d · 2 · e bytes of K and V), from L2 only where L2 still holds it. On the L40S's DRAM rows with the "items"
  form, the rows whose pass exceeds its 96 MiB L2 ran slower the more query heads share a KV head (median
  log(measured / predicted) at 96-192 MB: +0.24 at two a KV head, +0.53 at four, +0.68 at eight; below 96 MB -0.14
  to +0.05). Since 2026-12-07 the windowed variants of FlashAttention-2's tables hold two more (fitting.L2_REREAD,
  fitting.decode_cost's per_head "l2" and "l2-random"): the group's other query heads read again from DRAM the share
  of the pass L2 misses, under one of two textbook cache models with no parameter of their own, an L2 that keeps its
  size's worth of the pass (misses 1 - C / S) or random replacement (misses m with 1 - m = exp(-(S / C) m));
  best_tile chooses among them as it chooses the tile. The L40S's table takes random replacement, from 0.144 / 72 %
  to 0.077 / 86 % (the other model: 0.102 / 85 %), still short; the RTX PRO 6000's takes the first, from 0.100 / 89
  % to 0.084 / 93 % (random replacement: 0.096 / 89 %). Both models were tried because of these residuals and chosen
  on these figures. The step model reads the same share (predict.AttentionFit.l2_reread) at the L2 of the GPU the
  form was fitted on, or, on a GPU that takes the form by its generation, at that GPU's own where hardware.json
  gives it (`l2_bytes`: an L4's 48 MiB, an RTX 4080's 64, an RTX 4090's 72, an RTX 5090's 96); a preset that takes
  vLLM's windowed form for want of its own takes the reread with it. C is the figure as the vendor labels it,
  which the fit judges L2-resident rows by too, in the binary unit the device reports (below). What the L40S
  still misses most is the rows whose context passes a window of 128 (2,048 sequences of 128 keys: 2.4 ms where the
  context is 128, 5.9-6.5 ms where it is 256 or more, a pass of 67 MB, inside L2), which the form's one factor for a
  binding window holds only in part.
* **TensorRT-LLM's tile is XQA's.** A TensorRT-LLM decode table holds two kernels: XQA (TRTLLM-GEN on SM100) for the
  calls whose query heads share a KV head, and its fallback, masked multi-head attention, for MHA calls and the GQA
  calls fitting.mmha_rows finds. XQA loads the KV in whole tiles
  (cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention: its tensor map of a paged KV loads boxes of min(tokens
  per page, 64) tokens); the fallback, one block a (query head, sequence), reads token by token. The H200's table
  shows the tile: 2,048 sequences of 32 query heads over 8 KV heads take 0.60 ms at every KV length from 2 to 128
  (and 512 sequences 0.16 ms), where the untiled form ran +0.11 to +0.24 in log over the DRAM rows of 16 to 64 keys
  and -0.14 at 256. Since 2026-12-07 a TensorRT-LLM table's tile, chosen as every table's is (best_tile), applies to
  the rows XQA runs alone (fitting.xqa_rows; predict.AttentionFit.tile_xqa), the others at their own length: the
  H200's bf16-KV cell from 0.102 / 90 % to 0.086 / 94 % (now meeting the target), the H100's from 0.080 / 94 % to
  0.075 / 96 %, the A100's from 0.139 / 80 % to 0.112 / 90 % (its table read less KV than it names, below), the RTX
  PRO 6000's from 0.141 / 81 % to 0.111 / 83 %, the H200's fp8-KV from 0.074 / 94 % to 0.069 / 93 %; every other
  TensorRT-LLM decode cell within 0.003 of its median |log|. The rule was written after these residuals were read;
  which rows each kernel runs is TensorRT-LLM's dispatch (mmha_rows), not a choice made on them.
* **TensorRT-LLM's A100 decode table** (TensorRT-LLM 1.0) runs faster than the A100's DRAM allows: its rows of
  more than 200 MB of KV read at a median 1.20x the datasheet's 2,039 GB/s where query heads share a KV head
  (63 % of those rows above 1x, up to 1.69x) and 0.79x where they do not (11 % above), where every other
  table's median is 0.48-0.86x and at most 1 % of its rows pass 1x (`benchmarks/decode_roof_check.py`). Over
  200 MB no L2 holds the KV, so those rows read less than they name (how, the collector's code of that
  version does not say: its KV-cache manager gives each request blocks of its own). Its cross-validated
  figure stands above as the table's; TensorRT-LLM's preset on the A100 (and on the GPUs that take the A100's
  forms) takes vLLM's A100 decode form instead (benchmarks/ship_fits.py, NOT_SHIPPED), and the report says so.
  With it goes, on those GPUs, the preset's factor for TensorRT-LLM's masked-MHA fallback kernel, which vLLM's
  form does not have (Llama-3.1-8B at batch 128 and 4,096 of context under `--engine trtllm` on the A100: 48.4
  ms a step with the table's form, 58.2 with vLLM's).
* **MoE rows slower than twice the work.** In TensorRT-LLM's H100 and H200 bf16 and per-tensor fp8 MoE tables
  whole series of a shape run 4-5x their neighbours at some EP or TP sizes and not at others: in the H100's fp8
  table the experts of Qwen3.5-397B-A17B's shape (H 4,096, 512 of them, top 10, width 1,024) take 4.8-5.3 ms at
  256 a rank (EP 2) where all 512 on one rank take 2.0-2.4 (TP 1, 48-1,024 tokens); in its bf16 table EP 4 is
  the slow one, in the H200's bf16 EP 8. Which sizes do so follows no order (the collector autotunes each shape's
  tactics and keeps them per shape, collector/trtllm/collect_moe.py). A rank with half the work of another (half
  the experts under EP or half each expert's width under TP; the same shape, tokens, kernel and GPU) cannot take
  more than 1.3 / 0.7 = 1.857x the other's time and both be held within ±30 % as the scores count it (0.7 p <= t
  <= 1.3 p) by any cost that grows with the work (t_less <= 1.3 p_less <= 1.3 p_more <= 1.3 t_more / 0.7). Since
  2026-12-05 such rows (fitting.slower_than_twice_the_work; a configuration measured twice at its median) are left
  out of every MoE table's fit and score, and of `--kernel-db`'s direct read, and each table's source info counts
  them: TensorRT-LLM's H100 742 of 12,852 bf16 rows and 554 of 11,178 fp8, H200 950 and 720, B200 11 and 20, L40S
  7 and 11, RTX PRO 6000 4 and 31; vLLM's H100 19 bf16 and 1 fp8, H200 30 bf16, B200 2 fp8, L40S 3 bf16 and 38
  fp8; none in any fp8-block, MXFP4 or SGLang table. A slow series whose half-work partner is slow too is not
  found (the H100 fp8 table's EP 4 series, at about 4.5x the form, stays: its EP 2 partner is slower still). On
  all rows (`--keep-slow-moe-rows`), and on the rows kept (cross-validated, DRAM rows): TensorRT-LLM's H100 bf16 0.069 / 85.9 % and 0.052 /
  93.0 %, fp8 0.081 / 82.7 % and 0.059 / 88.4 %; H200 bf16 0.075 / 83.9 % and 0.054 / 93.0 %, fp8 0.075 / 81.8 %
  and 0.050 / 89.9 %; B200 bf16 0.069 / 87.6 % and 0.069 / 87.6 %, fp8 0.076 / 87.7 % and 0.076 / 88.1 % (its slow
  series run 1.5-1.8x the form: slower than the form, not than twice the work); vLLM's L40S fp8 0.058 / 89.6 % and
  0.058 / 90.1 %, H200 bf16 0.090 / 87.7 % and 0.089 / 88.1 %. The figures above are on the rows kept; cells short
  of the target on the five GPUs went from 21 to 18. A TensorRT-LLM server autotunes at its start and may meet
  such a tactic on its own shapes: the form predicts the shape's time at its work, not the tactic. The rule was
  written after these tables' residuals were read (first with a bound of 1.3^2 = 1.69, which holds for a band
  symmetric in log, not for the scores' 0.7-1.3; a review caught it).
* **TensorRT-LLM's per-tensor fp8 GEMMs** bottomed out at 12 µs on every GPU (vLLM's and SGLang's at 4-6 µs)
  and ran 7-8 µs slower than theirs at decode sizes (M = 1-128, N = K = 8,192 on the H200: 30 µs against 22).
  Their collector (collector/trtllm/collect_gemm.py) loads the fp8 Linear without an input scale, so
  TensorRT-LLM's FP8QDQLinearMethod quantizes dynamically: a per-tensor max over the input and a cast before
  its quantize kernel and cublas_scaled_mm. A served fp8 checkpoint (ModelOpt's, which carries input scales)
  quantizes statically and runs neither. AIConfigurator measured the dynamic scale's cost on its own
  (`quantize/trtllm/<version>/computescale_perf.parquet`: 7-8 µs at small sizes) and subtracts it for such
  checkpoints itself (its fp8_static mode); the fit now fits the rows less it, at each row's (M, K), and the
  8,192² row at M = 1 comes to 22.8 µs on the H200. The rows' quantize kernel stays (served TensorRT-LLM fuses
  it into the previous kernel for some linears; the form keeps it for all).

* **TensorRT-LLM's GEMM rows and L2.** Its collector from the 1.3 tables on (collector/trtllm/collect_gemm.py,
  since pull request #588) replays max(1, min(5, ceil(L2 / weight bytes))) copies of the weight, the L2 as the
  device reports it (96 MiB on the L40S), so two copies of a 48 MiB weight or one of 96 MiB fill the L40S's L2
  exactly: counted as DRAM rows with six copies (vLLM's collector's count), those rows ran down to 0.35x the
  cross-validated form at M = 1. Each row's copies and the device's L2 bytes now decide which rows are
  L2-resident (fit_kernels.trt_copies): the L40S's bf16 from 0.105 / 89 % to 0.096 / 91 %, fp8 from 0.104 / 88 %
  to 0.096 / 91 %, RTX PRO 6000 bf16 0.062 / 95 % to 0.052 / 97 %; the Hopper and B200 tables within 0.002.
  The A100's 1.0 table keeps six (TensorRT-LLM 1.0 of 2025; when its rows were collected is not recorded).
* **Decode, MHA against GQA**: on the A100 (vLLM 0.14, FlashAttention-2) a GQA row's KV is split across
  blocks (batch 1-8 at 16k-128k keys run 0.4-0.9x a single work-item factor's time) and an MHA row's is not
  (one sequence of one head, 128k keys: 3.0 ms, 22 GB/s, one SM's worth). One factor over the work items
  cannot hold both (0.093 / 86 % cross-validated); a second work-item factor for the rows with as many KV heads
  as query heads (`mha_items_factor_mem`, on the rows that reach DRAM, fitted in a second pass from the fit
  without it, where a table holds both kinds) does (0.066 / 99 % on the A100), and helps TRT-LLM's tables on H100 and H200 (the L40S's: 0.062 →
  0.068). vLLM's L40S and RTX PRO 6000 tables (FlashAttention-2 too) fit the same shape, an MHA
  factor of 0.03-0.05 at one work item rising to 1 by 64. Full-attention decode
  now meets the target on every GPU but the RTX PRO 6000.
* **TensorRT-LLM's decode runs two kernels.** Its attention op (cpp/tensorrt_llm/common/attentionOp.cpp) runs
  XQA, which reads a group's KV once, for 2 to 32 query heads per KV head and only when 4 x KV heads x batch x
  max(1, keys / 128) reaches the SM count (decoderXQAImplJIT's support check and heuristic; on SM100 its
  TRTLLM-GEN kernels up to 16, no heuristic); otherwise its masked multi-head attention kernel, one block per
  query head and sequence, each reading its group's KV again through L2 (fitting.mmha_rows). One smooth GQA
  factor could not hold both: the H200's rows at 32 query heads per KV head (XQA) ran 0.63x the form, those
  at 48 (the fallback) 2x. The rows the fallback runs take a factor by group size of their own (second
  pass, DRAM rows; `mmha` in the shipped form, with the rule): the H200's falls from 0.95 at 2 to 0.16 at 32,
  0.10 at 64 and 0.06 at 128 (reading 64 query heads' worth through L2 at a tenth of the rate). The fallback's
  rows count as DRAM rows from half L2 up (decode_l2_rows): reading through L2 either way, its rows at 64 query
  heads a KV head run at the same rate in (L2/2, L2] as past L2 (bf16 KV, KV read once over the DRAM datasheet:
  RTX PRO 6000 0.065 and 0.059, H100 0.028 and 0.029, L40S 0.102 and 0.109, B200 0.012 and 0.013); counted past
  L2 alone, the RTX PRO 6000's factor rested on 10 rows (none with fp8 KV) and fitted to 1. Cross-
  validated, 16-bit KV: H100 0.096 / 88 % to 0.083 / 92 %, H200 0.122 / 84 % to 0.106 / 89 %, A100 0.177 /
  75 % to 0.154 / 80 %, L40S 0.068 / 91 % to 0.062 / 95 %; fp8 KV within 0.003 of before, more rows within
  ±30 %. The A100's table is still the hardest: its rows run 0.55-0.8x the form where batch x keys is 2-16
  thousand and again at 0.5-2 million with batches of 512 or more, which no size factor tried (by the KV's
  bytes over L2) took out. The B200's factor at 32 is above 1 (its rows there ran faster than the form): which head
  dims TRTLLM-GEN covers was not read.
* **Sliding-window decode** (`decode_swa_*`, rows with `window_size` > 0, fitted apart): a row whose context
  passes its window runs slower than one of the same keys inside it (H100 vLLM fp8 KV: 1.26x at a window of
  128, whatever the context beyond it; at a context equal to the window it does not), so the DRAM rows whose
  context passes the window take a factor of their own (`window_factor_mem`, 0.61-0.85 on H100/H200 vLLM,
  second pass; the L2-resident rows run otherwise and are left out of it): H100/H200 fp8 KV 0.17 → 0.08. Every
  windowed table also takes a GQA factor (1 at MHA; a full-attention table takes one only where it holds real
  MHA rows): how much of a group's KV its query heads share under a window varies by kernel. With it
  TensorRT-LLM's windowed tables go from 0.05-0.31 to 0.02-0.15 median |log| and B200 vLLM's 16-bit from 0.097
  to 0.034; SGLang's B200 16-bit moves from 0.038 to 0.098 (94 % within ±30 %). On the L40S with bf16 KV (FlashAttention-2) a
  windowed row gives up GQA packing and reads its KV once per query head, partly from L2; no sharing model
  fits (0.22). On some tables the window factor moved the median the other way (SGLang L40S fp8 0.058 →
  0.086): the fit (by least squares then) minimised the squared log error over all rows, not the median.
* **All-reduce** is held out one message size at a time; the L40S box's 4- and 8-GPU collectives go through the
  host (no peer-to-peer) and are irregular (8 GPUs: 55 ms at 128 MiB, 162 ms at 256 MiB), yet interpolate well.
* **All-gather and all-to-all** (the same nccl table, fitted as the all-reduce is) are read at nccl-tests' own
  size: an all-gather's whole output, an all-to-all's per-rank buffer, each sending (n-1)/n of it. The table
  bears that reading out: at 512 MiB on 8 H100s they take 1.40 and 1.48 ms, 336 and 317 GB/s of bus bandwidth
  on a 450 GB/s link (per-rank inputs would make it 8x that). Their fixed costs grow less with the ranks than
  the all-reduce's (H100 all-to-all 6.6/7.0/8.1 µs at 2/4/8 ranks). The L40S's (through the host) fall just short.
* **The engines' own all-reduce** (`custom_allreduce`: vLLM's custom all-reduce, SGLang's, TensorRT-LLM's, the
  rows timed inside a CUDA graph) is what their decode steps run, not NCCL: 2.4-7.8 µs fixed at 2 to 8 NVLink
  GPUs, where NCCL's fitted fixed cost is 6.4-26.8 µs, and 4-8 µs for a 16 KB message against NCCL's 16-27 µs at
  8 GPUs. On the RTX PRO 6000 box (PCIe, no NVLink) they fall back to NCCL's speed from 4 GPUs (13-25 µs).
* **RTX PRO 6000 Server** (GB202, the RTX 5090's chip; the nearest measured GPU of compute capability 12.0):
  GEMMs, prefill and MoE fit as well as on the datacenter GPUs; so do its decode tables since L2 is counted in
  MiB (below; before, 0.07-0.22 cross-validated).
* **L2 in MiB** (SPECS `l2`: 40, 50, 50, 126, 96 and 128 x 2^20 bytes). A table's call is repeated over the same
  data, so a working set that fits L2 is read from L2, and its rows take memory efficiencies of their own (no step
  takes them: a step reads each layer's KV and weights once, after every other layer's). The vendors' "MB" of
  L2 is the binary unit the devices report: on the RTX PRO 6000 a KV of 2 x 8 KV heads x 128 x 1 byte x 65,536
  tokens = 2^27 bytes, 128 MiB, decodes at batch 8 in 45 µs, where twice the tokens take 193 µs, and vLLM's 16-bit
  KV rows in (64, 128] MiB read their KV at a median 1.14x the DRAM datasheet's bandwidth, which no DRAM read
  does. Judged by 128e6 bytes, 93 % of those rows had counted as DRAM's and pulled its DRAM forms up (its decode
  cells 0.073-0.219 cross-validated, the rows at 2x L2 +0.16 above the form); on the L40S (96 MiB) 7 % of them, at
  1.87x. Counted in MiB, each GPU's rows between its decimal and binary L2 are L2's: the RTX PRO 6000's ten decode
  cells meet the target (0.008-0.078), so does its vLLM MXFP4 MoE (0.055 / 88 % to 0.051 / 97 %), and every other
  cell moved by at most 0.035 in median |log| (the L40S's and H100's and H200's TensorRT-LLM windowed decode the
  most, 0.060 to 0.026, 0.069 to 0.046, 0.082 to 0.048), the H200's vLLM fp8 MoE from 90.03 % to 89.97 % within
  ±30 %. The unit is the devices' (CUDA's cudaDeviceProp::l2CacheSize), not a choice made on these figures, which
  were read while looking for it. TensorRT-LLM's fallback-kernel rows count as DRAM's from half L2 up (below,
  "TensorRT-LLM's decode runs two kernels"): most of the RTX PRO 6000's past its decimal L2 sit at exactly 128
  MiB, and without them its fallback factor had lost its anchor.
* **Decode attention works on KV tiles**: 2,048 sequences of 2 tokens cost what 2,048 of 128 do (the fitted tile,
  32-128 tokens on most kernels), plus a time per (sequence x KV head) work item in series, 1-25 ns.
* **The L2 cliff is large**: on the L40S (96 MiB L2) a 67 MB KV decodes in 38 µs and a 134 MB one in 221 µs; rows
  below the L2 size are fitted with their own memory efficiencies, often above the DRAM datasheet.
* **fp8 per-tensor GEMMs** (CUTLASS) step with M at multiples of 64/128/256 rows (±25 %), and at small N they are
  slower than bf16 (n = 128, k = 4,096, m = 16,384 on the H100: 212 µs against 50 µs): hence the N and K factors.
  The row includes the input's quantization (the collector's static scale: `scale_matrix` alone is 68 µs of
  that row).
* **Smallest rows**: bf16 GEMMs bottom out at 2-3 µs (the graph of six layers ÷ 6, n = k = 128); 4-6 µs is the
  floor only from n, k ≥ 1,024. Decode 7-11 µs, prefill 7-12 µs, all-reduce 6-10 µs at 2 ranks, 16-27 µs (fitted)
  at 8.
* Data quirks: the nccl folders the YAMLs name hold rows whose version column says `2.29.2` (H100 and B200
  `2.27.3`, H200 `2.26.2`), each configuration two or three times (runs merged by their median; the A100 vLLM
  prefill table repeats 408 rows too); TRT-LLM's and SGLang's fp8-KV prefill tables mix bf16 and fp8 attention
  (`attn_dtype`; the fp8 rows are used); B200's YAML gives 7.7 TB/s, the datasheet 8 TB/s (used here); A100 vLLM
  0.14's KV length (`step`, not `step + 1`) could not be told apart from the other reading by the fit (it moves
  only rows of KV < 8).
* **fp8 block-scaled GEMMs** (`gemm_fp8_block`) are fitted on TensorRT-LLM's tables (its `Linear` with
  FP8_BLOCK_SCALES) and SGLang's (per-token-group quantization, then DeepGEMM), both timed in a CUDA graph,
  and cross-validate about as the per-tensor ones do (0.03-0.10 against 0.04-0.10). vLLM 0.24's `fp8_block` rows (DeepGEMM from
  M = 32, FlashInfer below, on H100/H200/B200; Triton on the L40S) are left out: they are timed without a CUDA
  graph, one layer per run (AIConfigurator's collector/vllm/collect_gemm.py: `use_cuda_graph=gemm_type !=
  "fp8_block"`), so the host's launches are in them: on the H100 a 4,096 x 4,096 one takes 59 µs at M = 1 and
  16 and 92-95 µs at M = 64 and 128, where the graph-timed per-tensor fp8 rows take 12-14 µs and bf16 15-17 µs.
  Under `--engine sglang` and `--engine trtllm` a matmul of `fp8-b128` weights (computing in fp8, as
  transformers' FP8Linear and the engines run them) takes its engine's block form; under every other engine
  the per-tensor fp8 form.
* **NVFP4 GEMMs** (`gemm_nvfp4`: W4A4, FP4 values with an FP8 scale per 16 and an fp32 one per matrix, the
  input quantized to NVFP4 by the same call) are in the B200's and the RTX PRO 6000's tables of all three engines
  (vLLM 0.24: FlashInfer's CuTe DSL kernel on the B200, its CUTLASS one on the RTX PRO 6000; SGLang likewise;
  TensorRT-LLM's torch flow), timed in a CUDA graph, and fitted as the per-tensor fp8 form on the fp4 peak
  (9 and 2 PFLOP/s dense) with the weight and input at half a byte and their scales. vLLM's collector times
  them one layer a graph, not six (collector/vllm/collect_gemm.py), so a weight below the L2 size stays there
  across replays: those rows are L2-resident (23,801 of 29,526 on the B200), and the DRAM ones give a memory
  efficiency of 0.38-0.47 (at six layers' reading, 0.50-0.66). At 8,192 x 8,192 on the B200
  (vLLM) one takes 14.8 µs at M = 1 and 130 µs at M = 4,096, where fp8 takes 33.4 and 231 µs and bf16 23.8 and
  322 µs: 4.2 PFLOP/s, 47 % of the fp4 peak (fp8 53 % of its own). A checkpoint's `nvfp4` matmul computing in fp4
  takes its engine's form (the RTX 5090, a GeForce card: the RTX PRO 6000's form for its memory side and input
  quantization, the fp8 default class on the fp4 peak for its compute side); a GPU without FP4 GEMMs runs NVFP4 weights W4A16 (vLLM's FP4
  Marlin), the 16-bit form with the dequantizing factor.
* **Weight-only int8 and int4 GEMMs** (`gemm_int8_wo`, `gemm_int4_wo`) are in one table: the A100's
  TensorRT-LLM 1.0 (its WeightOnlyQuantMatmul plugin inside a TensorRT engine; the later tables hold none). Their
  fixed cost is about 10 µs (the same table's 16-bit GEMMs: 4.2 µs), and at M = 1 a 4,096 x 4,096 int4 GEMM takes
  20.5 µs, int8 21.5 and bf16 26.2: far from the 4x and 2x fewer bytes. Under `--engine trtllm` an int8 or int4
  matmul computing in 16 bits takes them (on the A100 and the GPUs that take its fits) in place of the 16-bit
  form times the dequantizing factor; every other engine keeps that (vLLM runs Marlin, not this plugin). The
  plugin measured keeps one scale per output row; a checkpoint's int4 by groups of 128 (GPTQ, AWQ) runs
  TensorRT-LLM's group-wise kernel, which the table does not hold: it takes the per-row form.
* **Fused MoE** (`moe_*`, vLLM's FusedMoE on one rank, the "balanced" routing rows; the A100's vLLM 0.14 table
  holds power-law routing only, so it has none): without a time per routed pair in series the H100's bf16 table
  cross-validated at 0.166 / 73 % (its EP rows sort and align every token's pairs, then run 1/ep of them).
  vLLM's Triton kernel (every table of the H100, H200 and L40S but the FlashInfer fp8 ones) runs a block of
  every expert, the other ranks' too: a block of an expert not on the rank writes zeros for its rows
  (fused_moe.py, write_zeros_to_output), and the activation and the top-k sum run over all T*k rows, so the
  form counts those writes (fitting.moe_cost's `pairs`; the EP 64-256 rows had run 1.13-1.41x the form
  without them, and the bf16 form's memory side had reached 4.4). With them the L40S's bf16 and fp8-block
  tables meet the target and the H100's and H200's bf16 go from 0.108 / 85 % and 0.123 / 83 % to 0.102 /
  92 % and 0.116 / 89 %; FlashInfer's and TensorRT-LLM's kernels permute the rank's own rows and do not
  take it, but for TensorRT-LLM's fp8 block-scale MoE on SM120 (the RTX PRO 6000's table, kernel source
  moe_torch_flow_triton_fp8_block), which runs every routed pair on each rank: CutlassFusedMoE.run_moe clamps
  another rank's expert ids to the rank's first or last expert and zeroes their weights, and the Triton kernel
  runs every pair it is given (fitting.EVERY_PAIR). Its rows show it (4,096 hidden, 1,536 wide, top 8 of 128,
  16,384 tokens: 26.2 ms at EP 1, 26.5 ms at EP 128; the CUTLASS kernels' rows of that table fall as 1 / EP).
  Counted at the rank's own pairs, its form could not hold them (0.239 / 61 % cross-validated, 0.233 in sample:
  the EP 32-128 rows ran +0.15 to +0.53 in log above it); counted at every pair (moe_rows' `every_pair`; the
  experts read are the rank's reached and the last one), 0.033 / 99 %. Its shipped form says so (`every_pair`),
  and the step model counts a TensorRT-LLM rank's call there under --ep (predict.MoEFit.every_pair_work).
  The widths run down to 16 (512 / TP 32) and a factor flat below 256 left them at 0.17-0.23 median
  |log|: a knot at 64 (chosen on these cross-validated scores) takes H100 bf16 to 0.094 and fp8 to 0.109,
  H200's to 0.113 and 0.125, and the L40S fp8 from 0.108 to 0.121. A per-rank expert width that is not a
  multiple of 64 (704/32 = 22) runs up to 2x slower than the form says, and padding the width to a tile did
  not help (those rows are small). What is left is by shape: vLLM ships tuned kernel configurations for some
  (experts, width, GPU) and not others (fused_moe/configs), and a shape's rows run 0.85-1.2x the form
  together. The H100's and H200's per-tensor fp8 tables (FlashInfer's CUTLASS MoE kernel, not Triton) ran by
  shape too: on the H200 the rows of 512 experts of width 5,120 ran 0.63x the form, those of 256 experts of
  width 16-32 1.4-1.6x. How many distinct experts a call reads took most of it: a memory-side factor by them
  (`t_factor_memory`, knots at 1, 4, 16, 64, 256 and 1,024 experts, 1 at one) takes the H100's fp8 from 0.109
  / 90 % to 0.090 / 92 % and the H200's from 0.125 / 88 % to 0.098 / 91 % (chosen on these cross-validated
  scores). It is fitted on FlashInfer's CUTLASS kernel's tables alone: on the Triton tables it made the H100's
  bf16, the L40S's bf16 and fp8 worse (0.094 to 0.096, 0.085 to 0.094, 0.121 to 0.132), on TensorRT-LLM's B200
  fp8-block kernel too (0.095 to 0.100), and it left the CUTLASS fp8-block tables where they were (the H100's
  DeepSeek-sized rows, H = 7,168, had run 0.53-2.5x the form, 10th to 90th percentile, before the grouped-routing
  rows below were left out). **DeepSeek-V3's shape is left out** (H 7,168, width 2,048, top 8 of 256; 216-351 rows
  of each fp8-block table, the only tables that hold it). vLLM routes it by groups (8 groups of 32, the best 4
  kept: its config's n_group and topk_group), and the collector's "balanced" logits give each token one expert
  in every group, so all 8 groups tie and rank 0 gets far more than its T*k/ep rows: on the H100 at 16,384
  tokens and EP 2, 4, 8 and 16 its rows took 2.0, 2.8, 4.3 and 6.4x the time of Kimi-K2's (the same H, width
  and top-k; 384 experts in one group) at equal balanced rows per rank. Left out (`grouped_routing_shapes`:
  every shape of a config in the package whose router keeps fewer groups than it has), the fp8-block tables
  meet the target: H100 0.066 / 87 % to 0.057 / 97 %, H200 0.086 / 86 % to 0.075 / 95 %, B200 0.095 / 85 %
  to 0.075 / 91 %, L40S 0.070 / 91 % to 0.055 / 94 %, and the H100 form's knots are physical again (its
  e_compute had reached 3.8 and its H factor at 16,384 0.003). The fitted fixed costs (24-43 µs
  on H100) sit
  at or above the five smallest rows (25-31 µs; bf16 42.5 against 24.7): a fused call is a dozen small kernels. Scores are of the form as
  `predict` reads it: a held-out shape's H and I' inside the training rows' range (the H factor's outer knots,
  64, 256 and 16,384, are pinned by no row and may fall anywhere), and no call
  below its roof (the knot products pass 1 where the other side binds). **Experts without a gate**: 4.6 % of
  the H100 bf16 rows, all at k = 22 of 512 experts, had been measured below the floor, down to 0.63 of it.
  They are Nemotron-3's (Ultra's experts in its latent width of 2,048, Super's in 1,024; Nano's experts, k = 6
  of 128, have none either), whose experts have no gate: up, relu2, down, which the collector runs as vLLM's `relu2_no_mul`
  (collector/vllm/collect_moe.py). Counted with two weights of H x I' and not three (fitting.moe_cost's
  `gated`, by `ungated_moe_shapes`: every nemotron_h config in the package, at its latent width), no row is
  below its floor, and the cross-validated figures move: H100 bf16 0.094 / 92 % to 0.087 / 90 %, fp8 0.090 /
  92 % to 0.072 / 91 %; H200 bf16 0.113 / 89 % to 0.100 / 88 %, fp8 0.098 / 91 % to 0.072 / 91 %; B200 bf16
  0.081 / 93 % to 0.060 / 97 %; L40S bf16 0.085 / 91 % to 0.061 / 94 %, fp8 0.121 / 83 % to 0.094 / 86 %;
  RTX PRO 6000 bf16 0.080 / 95 % to 0.046 / 97 %, fp8 0.077 / 96 % to 0.055 / 97 % (B200 fp8 0.069 / 98 % to
  0.066 / 97 %; the fp8-block tables hold none of these shapes). `--kernel-db`'s direct read counts them
  the same way and leaves DeepSeek-V3's grouped-routing rows out too. The step model's own Nemotron-H experts
  are not the fused form's three kernels, and take the GEMM forms. **SGLang's collector and the gate.** AIConfigurator's
  SGLang collector had no path without a gate until its upgrade to SGLang 0.5.14 (ai-dynamo/aiconfigurator
  e23be5a79, 2026-07-13: `is_gated`, NemotronHForCausalLM_cases.yaml's `sglang_moe_is_gated: false`); the A100's
  0.5.10 table (in the package by 2026-05-11) ran Nemotron-3 Nano's experts, as every case, with SwiGLU and
  three weights, and is counted so (fitting.ungated_shapes_for): its bf16 form went from 0.119 / 84 % to 0.085
  / 91 % cross-validated. The 0.5.14 tables' rows of Nemotron-3 Nano's and Ultra's shapes were measured
  without a gate (the case file names `sglang_moe_is_gated: false` for them) and are counted with two weights.
  **Super's rows on the H100 and H200 ran gated.** SGLang's Triton rows of Nemotron-3 Super's latent shape (H
  1,024, width 2,688, top 22 of 512: the H100's and H200's bf16 and fp8-block tables, the only Triton rows of
  it) had run 1.46x (H100) and 1.58x (H200) the held-out form from 2 tokens up, memory-bound (64 tokens, H200:
  2.5-2.9 TB/s counted with two weights, where every shape of 128 or more experts reaches 3.4-4.4 TB/s; the 8-
  and 16-expert ones 2.5) as compute-bound: three weights' worth of work, not two. The case file has named only
  nvfp4 for that shape under SGLang since e015c0ed6, so these rows came from a plan whose entry for it carried no
  Nemotron keys (as it stood at c3ef575cc): the collector's defaults ran it, `sglang_moe_is_gated` True
  (case_generator.py: w1 of 2 I' rows) and the plain Triton path, where Nano's and Ultra's H100 and H200 rows ran
  FlashInfer's CUTLASS kernel as their entries ask.
  They are counted with three weights (fitting.MEASURED_GATED, by kernel source; `--kernel-db` too):
  cross-validated, SGLang's H100 bf16 form from 0.070 / 91 % to 0.055 / 94 %, H200 bf16 from 0.132 / 84 % to
  0.102 / 90 %, H100 fp8-block from 0.025 / 98.5 % to 0.022 / 99.9 % and H200 fp8-block from 0.031 / 98.1 % to
  0.028 / 99.2 %; the shape's own median log(measured / held-out form) on the fp8-block tables from +0.41 and
  +0.48 to +0.02 and +0.09, and the H 2,048 shapes', which had run fast beside it (-0.10 to -0.23), to -0.01 to
  -0.12. Chosen after reading these rows: seen. **Ultra at its outer width**: the same case file
  runs Nemotron-3 Ultra's experts at its hidden size, 8,192, for SGLang and TensorRT-LLM ("Ultra uses its outer
  hidden width in SGLang/TRT-LLM"), and at its latent 2,048 for vLLM, each without a gate; `ungated_moe_shapes`
  had named the latent width alone, so the 8,192 rows (SGLang's B200 and L40S bf16 tables) were counted with
  three weights and ran 0.72x (B200) and 0.64x (L40S) the held-out form. Named at both widths, those forms go
  from 0.106 / 87 % to 0.074 / 94 % (B200) and from 0.076 / 90 % to 0.060 / 94 % (L40S) cross-validated, and
  meet the target; no other table holds those rows.
* **Widths not a multiple of 16** (`misaligned_factor_compute`, `misaligned_factor_memory`: fitting.moe_design,
  fitting.moe_misaligned; run_class's choice). A TP that leaves the rank's expert width I' not a multiple of 16
  (Nemotron-3 Nano's 1,856, a 704-wide model's and 2,688 at TP 8, 16 and 32: 232, 116, 58, 88, 44, 22, 168, 84;
  768 at TP 32: 24) ran slower than the form of the other widths on some kernels' tables: cross-validated without
  a factor, those rows ran a median 2.0x (vLLM's H100 bf16, Triton) and 2.2x (H200) the form with 1-2 % within
  ±30 %, 1.5-1.7x on SGLang's A100 (12 % within), H100 and H200 bf16 tables (on the H100 and H200 with Nemotron-3
  Super's rows at 168 among them, then counted with two weights: above), as the form on vLLM's L40S bf16
  table (the same Triton kernel on Ada: 1.07x, 95 %), and on vLLM's L40S fp8 table by the tokens (0.3 ms at
  160-512 tokens, 7-16 ms at 128 and from 768 at TP 8). Where the down GEMM's K, I', is not a whole number of a
  16-bit tensor-core MMA's K (16) its last tile is partial; which kernel pays how much for it was not
  established. So each fused-MoE table holding such rows beside others is fitted with one factor on each side for
  them and without, and keeps whichever predicts its held-out shapes better (median |log| on the DRAM rows; both
  figures in kernel_fits.json's `misaligned_widths`): kept on every bf16 table that holds them but vLLM's L40S and
  RTX PRO 6000 ones and SGLang's H100 one (since Super's rows there count three weights: with the factors 0.066 /
  95.8 %, without 0.055 / 94.1 %), and on vLLM's RTX PRO 6000 fp8 table; dropped on the other fp8 and fp8-block tables.
  MXFP4 tables are not offered it: vLLM's and SGLang's Mxfp4MoEMethod.create_weights round the width up ("pad the intermediate size to
  be a multiple of 2 * mxfp4_block", to 32, 64, 128 or 256 by kernel: below). Memory-side factors kept: vLLM's H100 bf16
  0.36, H200 0.29, B200 0.78, RTX PRO 6000 fp8 1.10; SGLang's A100 bf16 0.66 (compute 0.60), H200 0.50 (H100 0.57 until Super's rows counted three
  weights), B200 1.00 (compute 0.73), L40S 1.02. Cross-validated: vLLM's H100 bf16 0.070 / 90.3 % to 0.067 / 92.7 %,
  H200 bf16 0.089 / 88.1 % to 0.088 / 90.0 % (now meets the target), B200 bf16 0.055 to 0.053; SGLang's A100 bf16
  0.085 / 91 % to 0.067 / 97 %, H100 0.084 / 90.8 % to 0.071 / 91 %, H200 0.134 / 81 % to 0.133 / 84 % (still
  short; with Super's rows counted three weights, 0.112 / 88 % to 0.102 / 90 %), B200 0.074 to 0.072 and L40S 0.060 to 0.060 (after Ultra's rows, above); vLLM's RTX PRO 6000 fp8
  0.0484 to 0.0482. The rule (16, one factor a side, kept where it predicts held-out shapes better) was chosen
  reading these tables' residuals, and each choice is made on the figures it reports, so they are not
  independent of it.
* **MXFP4 experts at the sizes the kernel stores them** (fitting.mxfp4_padding, `padded_to` in kernel_fits.json,
  `pad` in a shipped form). The engines round an MXFP4 expert's width, and for some kernels the hidden size, up
  before they allocate it (vLLM's gpt_oss_mxfp4.py, mxfp4_round_up_hidden_size_and_intermediate_size: Marlin I'
  to 128 and H to 256, FlashInfer's TensorRT-LLM kernels both to 256, OpenAI's Triton kernels I' to 64; SGLang's
  Mxfp4MoEMethod.create_weights: FlashInfer on SM100 both to 256, Marlin I' to 128, otherwise with the
  triton_kernels package I' to 64, 2 x mxfp4_block), and the kernel multiplies
  the zeros past the real width as any other weight. Counted at the model's sizes, gpt-oss's narrow widths ran
  slower than the form: on vLLM's L40S Marlin table its 90- and 180-wide rows (TP 32 and 16, stored 128 and 256
  wide and 3,072 deep: 1.52x the work their sizes say) ran a median +0.24 and +0.30 in log above it (33-44 % within ±30
  %), on SGLang's B200 table the 96-wide rows (a 3,072-wide shape at TP 32, stored 256 wide) +0.29. Counted and
  read at the stored sizes (a prediction takes the form's efficiencies times the model's FLOPs and bytes over the
  stored ones, as the fit counts them: predict.MoEFit.padded_shares), cross-validated on the DRAM rows (which rows reach DRAM moves with the stored
  bytes): vLLM's L40S 0.062 / 87 % to 0.063 / 97 % and H100 0.061 / 87 % to 0.059 / 91 % (both now meet the
  target), SGLang's B200 0.089 / 95 % to 0.064 / 100 %; vLLM's H200 0.062 / 95 % to 0.067 / 94 % and B200 0.073
  / 99 % to 0.080 / 99 %, SGLang's H100 0.093 / 84 % (as it was), H200 0.138 / 84 % to 0.136 / 83 % and L40S
  0.071 / 88 % to 0.073 / 88 %; vLLM's RTX PRO 6000 Marlin table from 0.037 / 98 % to 0.055 / 88 %, short of the
  target where it met it (its narrow rows now run 1.2-1.3x the padded form). The rule is the engines' code, not
  a choice made on these figures; it was looked for because of the L40S's residuals. SGLang's Triton runner on
  SM89 and SM90 (the kernel of its H100, H200 and L40S MXFP4 tables) upcasts the padded MXFP4 weights to 16 bits
  when it loads them (process_weights_after_loading, `upcast_from_mxfp`), so it reads 2 bytes a weight, not 17/32:
  its fitted memory efficiencies (0.15-0.5 of the bandwidth at 17/32) carry that. Counted at 2 bytes the three
  tables' figures did not improve (padded, with the factor for untuned tiles below, at 17/32: H100 0.090, H200
  0.126, L40S 0.073; at 2 bytes 0.098, 0.151, 0.084, each on the rows that then reach DRAM), and the count stays
  at the checkpoint's bytes.
* **SGLang's and TensorRT-LLM's fused MoE** (`moe_*` under sglang and trtllm, for their presets). SGLang's
  Triton MoE kernel is vLLM's (python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py: "Adapted from"
  vLLM's fused_moe.py), so its tables take the same form. Its collector (collector/sglang/collect_moe.py, timed
  in a CUDA graph) times the top-k selection with each call, which the fixed cost takes in, and its
  expert-parallel rows send the pairs of the other ranks' experts to expert 0 with a zero weight, so rank 0
  computes every pair: those rows (27,785 of the H200's balanced ones) are left out, and the fit holds the EP 1
  rows at every MoE TP width. TensorRT-LLM's PyTorch flow (collector/trtllm/collect_moe.py: its fused MoE module
  with routing, timed in a CUDA graph) runs CUTLASS grouped GEMMs over the rank's own permuted rows, the kernel
  FlashInfer's CUTLASS MoE came from, so it takes that kernel's factor by distinct experts and no zero writes;
  it routes without groups (RenormalizeMoeRoutingMethod) outside its min-latency mode, so DeepSeek-V3's shape
  stays. The fp8 block-scaled tables meet the target on both (SGLang: H100 0.030 / 99 %, H200 0.040 / 98 %, B200
  0.063 / 98 %, RTX PRO 6000 0.018 / 99 %; TensorRT-LLM: H100 0.043 / 99 %, H200 0.047 / 99 %, B200 0.040 /
  98 %), and so do TensorRT-LLM's bf16 and per-tensor fp8 on the L40S and RTX PRO 6000 (0.044-0.075).
  **SGLang's tuned tiles.** SGLang's bf16 tables had run by shape at large token counts (a shape's rows at 2,048
  tokens and more 0.43-1.7x the form together): its Triton kernel takes its tiles from a file named by the rank's
  experts, its width over TP and the GPU (fused_moe_triton_config.py, get_moe_configs; AIConfigurator's collector
  looks them up the same way, collector/sglang/collect_moe.py), and without one runs get_default_config's 64 x 64
  x 32 tiles for 16-bit weights above E tokens. Which shapes have a file is read from the SGLang wheel of the
  table's version (`benchmarks/sglang_moe_configs.py` writes `benchmarks/sglang_moe_configs.json`: 53 (E, N)
  pairs for the H100 in 0.5.14, 18 for the A100 in 0.5.10), and the rows of the others take a compute-side
  factor by tokens per expert (fitting.moe_design's `untuned_factor_compute`, fitted with the rest): on the H100
  it falls from 0.99 at 1/32 of a token per expert to 0.39-0.42 at 64 and beyond (A100 0.41-0.54, H200 0.45-0.55: the
  default tiles reach under half the tuned ones' rate), and Mixtral's measured layer at TP 1 (no file for E=8,
  N=14,336) takes 12.97 ms at 4,096 tokens where half its work at TP 2 (E=8, N=7,168 has one) takes 2.54.
  Cross-validated: H100 0.138 / 82 % to 0.098 / 91 %, A100 0.144 / 78 % to 0.127 / 83 %, H200 0.182 / 74 % to
  0.144 / 82 %, L40S 0.098 / 90 % (three tuned shapes). vLLM 0.24's default tiles grow with the tokens
  (vllm/model_executor/layers/fused_moe/fused_moe.py, get_default_config), and the same factor on its H100 and
  H200 bf16 tables moved nothing (0.087 to 0.085, 0.100 to 0.099): its tables take none, and the A100's
  vLLM preset, which borrows SGLang's A100 form, takes it without the factor. The shipped SGLang forms carry
  their GPU's list (`tuned`); a shape is read as tuned where its (experts on the rank, width over TP) is on it.
  SGLang's MXFP4 tables on the H100, H200 and L40S run the same Triton kernel on the experts upcast to 16 bits
  at load (below), which takes its tiles from the same files, by the width it stores (fitting.mxfp4_padding);
  their rows take the same factor, at the stored width: H100 0.093 / 84 % to 0.090 / 89 %, H200 0.136 / 83 % to
  0.126 / 85 %, L40S 0.073 / 88 % as it was (no gpt-oss shape has a file for the L40S). That stored width was
  read as a multiple of 32 at first; SGLang 0.5.14's create_weights rounds it to 64 on that path
  (triton_kernels_padding_alignment, "a multiple of 2 * mxfp4_block"), so gpt-oss-120b at TP 4 (720 a rank) is
  stored 768 wide, a width the H100 and H200 ship tuned tiles for, not 736, and TP 32 (90) 128 wide, not 96.
  Read at 64: H100 0.090 / 89 % to 0.073 / 99 % (meets the target), H200 0.126 / 85 % to 0.1005 / 94 % (short by
  0.0005 on the median), L40S 0.073 / 88 % to 0.078 / 88 % (no tuned file there; the work 4 % more at TP 4).
  Short at the time (least squares): SGLang's bf16 on the A100, H200 and B200 (0.107-0.144; the H200's rows of H
  = 2,048 run 0.7-0.8x the form, Nemotron's experts without a gate 1.5-2x); TensorRT-LLM's bf16 and per-tensor
  fp8 on the H100 and H200 (0.176-0.260; its rows run a median 20 % faster than the cross-validated form at every
  token count, which the factor by distinct experts does not explain: without it 0.243) and the RTX PRO 6000's
  fp8-block table (0.261; a Triton kernel there). Since (the estimator, and the A100's table counted gated,
  above): the A100's SGLang bf16 meets the target (0.085 / 91 %), TensorRT-LLM's were at 0.069-0.081 median |log|
  but 82-88 % within ±30 % (on all rows; MoE rows slower than twice the work, above, are left out since),
  and the list above this section says which are short. Each table's main
  kernel is what AIConfigurator's collector ran there, and not always these: on the B200 SGLang's tables are
  FlashInfer's TensorRT-LLM-generated MoE (`sglang_flashinfer_trtllm_moe`) and TensorRT-LLM's fp8-block table
  DeepGEMM, fitted with the same form and neither the zero writes nor the factor by distinct experts (both
  within 0.040-0.107). The A100's vLLM table holds power-law routing only, so `benchmarks/ship_fits.py` gives
  vLLM's preset there SGLang's A100 bf16 form (the same Triton kernel, adapted; marked `"tables": "sglang"`).
  They ship as fitted, marked short: before, both presets took the default efficiencies for routed experts (each expert's GEMMs at a
  GEMV's share of the bandwidth for its width), 2-3x off on DeepSeek-R1's steps at batch 8-64.
* **NVFP4 fused MoE** (`moe_nvfp4`, added 2026-12-07: the tables' nvfp4 rows, W4A4 as the collector quantizes
  weights and activations, compressed-tensors "nvfp4-pack-quantized" in groups of 16; B200 and RTX PRO 6000, the
  GPUs with FP4 tensor cores whose tables hold them). 9/16 of a byte a weight (FP4 values and an FP8 scale per 16)
  on the FP4 peak, the form of the other classes. vLLM 0.24 runs FlashInfer's TensorRT-LLM NVFP4 MoE on the B200
  and FlashInfer's CUTLASS one on the RTX PRO 6000; SGLang and TensorRT-LLM theirs. Before it, NVFP4 experts took
  the GEMM forms (each experts kernel's rows as one GEMM), which put DeepSeek-V3's NVFP4 decode at `--tp 8` on B200s
  above its FP8 one (vLLM 23.3 ms against 20.7, SGLang 39.3 against 19.4, TensorRT-LLM 74.3 against 26.0 at batch
  32, context 4,096); the fused form gives 16.6, 15.2 and 26.2. TensorRT-LLM's NVFP4 step stays at its FP8 one
  (26.2 against 26.0): its two fitted forms give the same time at these sizes; its B200 table falls short (0.156 / 85 % cross-validated on its DRAM rows), and `--kernel-db`, which reads the table's own
  nearest call, gives 29.6 ms.
* **MXFP4 fused MoE** (`moe_mxfp4`: the tables' w4a16_mxfp4 rows, gpt-oss-20b's and gpt-oss-120b's experts, H =
  I = 2,880, top 4 of 32 and of 128, at MoE TP 1-32; SGLang's B200 table a third shape beside them). The step
  model applies the form to any MXFP4 experts (a hand model's with `--weight-dtype mxfp4`, an `--ep` rank's):
  beyond gpt-oss's shape and tensor-parallel rows that is an extrapolation. vLLM 0.24 runs them with OpenAI's Triton MoE kernels on the
  H100 and H200, FlashInfer's TensorRT-LLM MXFP4 kernel (bf16 activations) on the B200 and Marlin on the L40S and
  RTX PRO 6000; each takes the bf16 form with 17/32 of a byte a weight on the 16-bit peak. Only the
  tensor-parallel rows: these kernels are not vLLM's Triton fused-MoE kernel whose zero writes for other ranks'
  rows the form counts under EP, and how each treats them is not established (fitting.moe_rows_kept). With two
  model shapes the cross-validation holds each out in turn (the 20b's rows predicted from the 120b's and back):
  vLLM H100 0.067 / 88 %, H200 0.064 / 95 %, B200 0.067 / 100 %, L40S 0.063 / 88 %, RTX PRO 6000 0.035 / 100 %.
  A table with one model shape (TensorRT-LLM's H100, SGLang's RTX PRO 6000) has none to hold out: not fitted.
  transformers 5.25 traces gpt-oss's experts as one kernel; the step model prices it as the whole fused call.
* **int4 fused MoE** (`moe_int4`, added 2026-12-07: weight-only int4 experts, W4A16, 33/64 of a byte a weight:
  half a byte and a 16-bit scale per 128, on the 16-bit peak; Marlin's MoE kernel). vLLM 0.24's and SGLang
  0.5.14's tables hold one model shape of it (Kimi-K2's: H 7,168, I 2,048, 384 experts, top 8) on every GPU they
  measured, so nothing can be held out there; vLLM's A100 table (0.14) holds none. SGLang 0.5.10's A100, H100 and
  H200 tables hold ten shapes of the same kernel (`sglang_marlin_moe`, nine after DeepSeek-V3's grouped routing
  is left out; tensor-parallel rows with I' from 256: its collector skips a width not a multiple of 256): the
  A100's is SGLang's current table there, and on the H100 and H200 the fit reads it where the current one holds
  one shape (older_table_with_shapes: the newest older table of the same engine and kernel source with two
  shapes or more; in this package's tables no other class meets the rule). vLLM 0.19's int4 tables (H200, B200)
  are not taken: named `vllm_marlin_int4_moe`,
  they time `fused_experts` with an int4_w4a16 config (collector/vllm/collect_moe.py before its 0.24 upgrade),
  vLLM's Triton WNA16 path, which on Kimi-K2's shape on the H200 takes 1.5-6x the time of 0.24's Marlin MoE.
  vLLM serves such checkpoints by Marlin's MoE kernel (GPTQ, AWQ and compressed-tensors WNA16 MoE methods), the
  kernel SGLang's tables time, so vLLM's preset takes SGLang's form (`benchmarks/ship_fits.py`, `"tables":
  "sglang"`), and only the vLLM and SGLang presets take it at all, vLLM's from compute capability 7.5 (Turing Marlin,
  PR #29901) and SGLang's from 8.0 (predict.marlin_moe; not a GGUF or bitsandbytes file's experts). Against the tables the fit did not read (below: vLLM 0.24's and SGLang 0.5.14's
  Kimi-K2 rows), the tensor-parallel rows at TP 1-8 (I' 2,048 to 256) sit within ±0.1 of the form (median
  log(measured / predicted) +0.03 to +0.09 on the H100, -0.06 to +0.05 on the H200, vLLM's table); at TP 16 and
  32 (I' 128 and 64, narrower than any fitted width, read at 256) +0.20 to +0.44; under expert parallelism +0.1
  at EP 4 rising to +1.1 at EP 128 with the rank's own rows counted: there Marlin's MoE writes every routed
  pair's output (another rank's as zeros), runs the activation over all of them and sums them all
  (fused_marlin_moe with an expert_map). Since 2026-12-07 Marlin's rows are counted so (fitting.masked_rows: moe_rows'
  `zeros`, as vLLM's Triton kernel's were; the rows the fit reads have no expert parallelism, so the form is
  unchanged): all of vLLM 0.24's Kimi-K2 rows went from 0.186 / 57 % to 0.171 / 65 % on the H200 and 0.200 / 56 %
  to 0.179 / 64 % on the H100 (at EP 128 the counted bytes double, 69 to 140 MB a call), and the step model
  counts the same under --ep-attention tp (Engine.masked_experts). SGLang's expert-parallel rows, which would
  show it too, are left out: moe_rows_kept.
* Fitted knot values are not all physical on their own (an e_compute above 1 at isl = 1 where a work-item factor
  of 0.3 multiplies it): use the products, as `predict` does.
"""
GPU_NAMES = {"a100_sxm": "A100", "h100_sxm": "H100", "h200_sxm": "H200", "b200_sxm": "B200", "l40s": "L40S",
             "rtx_pro_6000_server": "RTX PRO 6000"}
TARGET = (0.10, 0.90)


def write_json(args, systems, results):
    doc = dict(
        source=dict(package="aiconfigurator-core", version=package_version(systems, args.source_version),
                    repository="ai-dynamo/aiconfigurator (Apache-2.0)", date=_dt.date.today().isoformat(),
                    script="benchmarks/fit_kernels.py", data_option="--data <unzipped aiconfigurator_core/systems>"),
        model="t = fixed_s + max(flops / (peak * e_compute), bytes / (bandwidth * e_memory)) per class, with the "
              "size dependences of `forms`; a parameter written {knot: value} is interpolated linearly in log2 of "
              "its size and log of its value, flat outside the knots; a *_factor multiplies the efficiency of its "
              "term; l2_* parameters apply to rows whose working set fits in L2 (the benchmarks' replay), the "
              "others to rows that reach DRAM, which is what a real step's kernels do; tile: the fitted kernel "
              "tile (GEMM: M rows; decode: KV tokens, and whether a sliding-window row reads KV per query head; "
              "prefill: prompt tokens), 1 = none",
        forms=FORMS,
        specs={g: dict(SPECS[g]) for g in SPECS},
        metric="cv: k-fold over whole shapes (GEMM: (n, k); attention: (heads, kv heads, head dim); "
               "collectives: one message size), fit on the other folds, predict the held-out; median_abs_log = median "
               "|ln(measured / predicted)|, within_30 = share with |measured / predicted - 1| <= 0.30; dram = rows "
               "whose working set does not fit in L2",
        fits=[],
    )
    for (gpu, engine, cls), r in results.items():
        doc["fits"].append(dict(
            gpu=gpu, engine=engine, cls=cls, source=r["info"], rows=r["n_rows"], rows_l2_resident=r["n_l2"],
            shapes=r["n_shapes"], tile=r["tile"], peak_flops=r["peak"], params=F.params(r["names"], r["theta"]),
            smallest_5_median_us=round(r["floor_us"], 2),
            cv=dict(folds=r["folds"], dram=r["score_dram"], all=r["score_all"]), in_sample_dram=r["fit_dram"],
            system_yaml=r["yaml"], **({"ranges": r["ranges"]} if r.get("ranges") else {}),
            **({"unseen_tables": r["unseen"]} if r.get("unseen") else {})))
    args.json.write_text(json.dumps(doc, indent=1) + "\n")


def cell(s) -> str:
    if s is None or s["median_abs_log"] is None:
        return "–"
    ok = s["median_abs_log"] <= TARGET[0] and s["within_30"] >= TARGET[1]
    return f"{s['median_abs_log']:.3f} / {100 * s['within_30']:.0f}%" + ("" if ok else " ✗")


def write_md(args, results, version):
    gpus = [g for g in GPUS if any(k[0] == g for k in results)]
    engines = [e for e in ENGINES if any(k[1] == e for k in results)]
    classes = [c for c in CLASSES if any(k[2] == c for k in results)]

    def get(g, e, c):
        return results.get((g, "nccl" if c in NCCL else e, c))

    L = ["# Per-kernel-class cost parameters fitted to AIConfigurator's measured kernel tables", "",
         "Generated by `benchmarks/fit_kernels.py` (its docstring says how to fetch the data; nothing of it is kept "
         f"here) from the tables of `aiconfigurator-core` {version} (ai-dynamo/aiconfigurator, Apache-2.0): "
         "one GPU's kernel latencies measured by NVIDIA per engine and engine version. Parameters, provenance "
         "(file, checksum, engine version folder, kernel source, rows) and the figures below are in "
         "`benchmarks/kernel_fits.json`.", "",
         "Each class is modelled as `t = fixed + max(FLOPs / (peak × e_compute), bytes / (bandwidth × e_memory))` "
         "on the datasheet peak and DRAM bandwidth (dense; docs' hardware_specs), FLOPs and bytes by hand from "
         "each row's shape, fitted on log t toward Huber's M-estimator (least squares, then up to four refits with "
         "each row weighted by min(1, 1.345 s / |residual|), s = 1.4826 x the residuals' median absolute "
         "deviation: fitting.fit), so that a few shapes measured otherwise do not pull the form off the rest. "
         "The efficiencies depend on size where the data needed it:", ""]
    for c in classes:
        L.append(f"* `{c}`: {FORMS[c]}")
    L += ["", "`_pad`/`_t`: M or the KV length rounded up to the kernel's tile (a discrete parameter chosen by the "
          "fit). Rows whose working set fits in L2 (the benchmark replays the same weights or KV, so they read "
          "from L2) get memory efficiencies of their own (`l2_*`): the `fixed` cost is shared, and the DRAM "
          "efficiencies, which a real step's kernels see, come from the other rows only.", "",
          f"**Held out**: whole shapes, {args.folds} folds of them (GEMM: an (n, k) pair; attention: a (heads, KV "
          "heads, head dim) triple); collectives: one message size at all rank counts, each in turn. Each fold is "
          "fitted on the others and predicts its own rows. Figures: median |ln(measured / predicted)| / share of "
          "rows within ±30 % (|measured / predicted − 1| ≤ 0.30), on the rows that reach DRAM; ✗ = short of the "
          f"target (≤ {TARGET[0]:.2f} and ≥ {100 * TARGET[1]:.0f} %).", ""]
    for e in engines:
        L += [f"## {e}: cross-validated, DRAM rows", "",
              "| class | " + " | ".join(GPU_NAMES.get(g, g) for g in gpus) + " |",
              "|---|" + "---|" * len(gpus)]
        for c in classes:
            if c in NCCL and e != engines[0]:
                continue
            L.append(f"| {c} | " + " | ".join(cell(get(g, e, c)["score_dram"]) if get(g, e, c) else "–"
                                                for g in gpus) + " |")
        L.append("")
    e = engines[0]
    L += [f"## {e}: cross-validated, all rows (L2-resident ones with their own memory efficiencies)", "",
          "| class | " + " | ".join(GPU_NAMES.get(g, g) for g in gpus) + " |", "|---|" + "---|" * len(gpus)]
    for c in classes:
        L.append(f"| {c} | " + " | ".join(cell(get(g, e, c)["score_all"]) if get(g, e, c) else "–"
                                            for g in gpus) + " |")
    L += ["", f"## {e}: fixed cost per kernel, µs: fitted `fixed` (median of the 5 smallest measured rows)", "",
          "| class | " + " | ".join(GPU_NAMES.get(g, g) for g in gpus) + " |", "|---|" + "---|" * len(gpus)]
    for c in classes:
        row = []
        for g in gpus:
            r = get(g, e, c)
            if not r:
                row.append("–")
                continue
            fx = [float(np.exp(v)) * 1e6 for n, v in zip(r["names"], r["theta"]) if n.startswith("fixed_s")]
            row.append("/".join(f"{x:.1f}" for x in fx) + f" ({r['floor_us']:.1f})")
        L.append(f"| {c} | " + " | ".join(row) + " |")
    L += ["", "Collectives: fixed at 2/4/8 ranks.", "", "## Sources", "",
          "| gpu | engine | class | table (version folder) | kernel source | rows (L2) | tile |",
          "|---|---|---|---|---|---|---|"]
    for (g, en, c), r in results.items():
        inf = r["info"]
        less = f", less {inf['less']['file'].split('/data/')[-1]}" if inf.get("less") else ""  # static_scale
        L.append(f"| {g} | {en} | {c} | {inf['file'].split('/data/')[-1]}{less} | {inf['kernel_source']} | "
                 f"{r['n_rows']} ({r['n_l2']}) | {r['tile']} |")
    L.append("")
    unseen = [(g, en, c, u) for (g, en, c), r in results.items() for u in r.get("unseen") or ()]
    if unseen:
        L += ["## Tables the fit did not read", "",
              "A fused-MoE form against the current tables of the same kernel on the same GPU that its fit did not "
              "read: another engine's table of one model shape (no fit takes one), and the engine's own current "
              "table where it holds one shape and the fit read an older version's of the same kernel "
              "(fit_kernels.unseen_tables). Median |ln(measured / predicted)| / within ±30 %, DRAM rows: all, and "
              "those without expert parallelism.", "",
              "| gpu | form (engine, class) | table | kernel source | shapes | rows: all | rows: no EP |",
              "|---|---|---|---|---|---|---|"]
        for g, en, c, u in unseen:
            L.append(f"| {GPU_NAMES.get(g, g)} | {en} {c} | {u['file'].split('/data/')[-1]} | {u['kernel_source']} | "
                     f"{', '.join(u['shapes'])} | {cell(u['score_dram'])} ({u['score_dram']['rows']}) | "
                     f"{cell(u['score_dram_tp'])} ({u['score_dram_tp']['rows']}) |")
        L.append("")
    short = [(GPU_NAMES.get(g, g), en, c, r["score_dram"]) for (g, en, c), r in results.items()
             if cell(r["score_dram"]).endswith("✗")]
    fall = ["## Where it falls short", "",
            "Cross-validated on DRAM rows, short of the target:", ""]
    for en in engines + ["nccl"]:
        items = [f"{g} {c} ({cell(sc)[:-2]})" for g, e2, c, sc in short if e2 == en]
        if items:
            fall.append(f"* {en}: " + "; ".join(items))
    fall += ["", NOTES.strip(), ""]
    i = L.index("## Sources")
    L[i:i] = fall
    args.md.write_text("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
