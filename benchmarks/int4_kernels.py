"""AutoAWQ's GEMM kernel against its published kernel timings on four GPUs, and the rule a GPU without its own
timings takes, tried on the three GPUs it was not read from; Marlin's README figure against the Marlin-like form (a
GA100's int4 factor by layer size, GA100_INT4_SIZE, is read from its A100 bars: --marlin-points fits it), and that
factor against TensorRT-LLM's own int4 kernel on the A100 (--data: AIConfigurator's systems folder, as
benchmarks/fit_kernels.py takes it).

    python benchmarks/int4_kernels.py [--data DIR] [--marlin-points]

roofcalc's int4 matmuls run a Marlin-like kernel unless the engine runs AutoAWQ's GEMM (`--int4-kernel autoawq`,
`autoawq-0.1`, `vllm-awq`): the GPU's own measured rates where SqueezeBits/QUICK's README @ 1180eba (arXiv
2402.10076) has them (predict.AWQ_GEMM on the A100, AWQ_GEMM_MEASURED on the RTX 4090, RTX A6000 and L40), else the
A100's scaled by the GPU's datasheet fp32 rate. This script predicts one M x 8192 x 8192 matmul of int4 weights in
groups of 128 (fp16 scales) under that kernel, and the same matmul in fp16 for comparison, on the GPU's datasheet
roof with the default efficiencies and its fitted kernel costs, as the step model does, beside the README's TFLOP/s
of AutoAWQ's GEMM and of FP16 (cuBLAS) at each M. Every GPU's own rows are seen (the form reads them); the check is
the last two columns: the three other GPUs predicted by the A100's rows scaled by the fp32 rate, the rule every GPU
without its own rows takes (chosen before those rows were read), and Marlin-like for comparison.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from roofcalc.dtypes import DTYPES
from roofcalc.calculator import Workload, linear_weight_bytes
from roofcalc.hardware import find_hardware
from roofcalc.predict import EngineHost, int4_cap, kernel_time
from roofcalc.roofline import Roof, kernel_model

N = K = 8192
QUICK = "SqueezeBits/QUICK README @ 1180eba (M x 8192 x 8192, TFLOP/s)"
# (GPU, M, FP16 TFLOP/s, AutoAWQ GEMM TFLOP/s): the README's kernel table, every FP16 and AWQ figure
ROWS = (
    *(("A100-80GB", m, f, a) for m, f, a in ((1, 1.4, 2.94), (16, 22.6, 34.23), (32, 46.4, 48.83), (64, 91.9, 57.43),
                                              (128, 157.4, 58.46))),
    *((gpu, m, f, a) for gpu, rows in (
        ("RTX4090", ((1, 0.8, 3.11), (64, 56.4, 91.39), (128, 138.2, 104.36))),
        ("RTX-A6000", ((1, 0.7, 2.21), (64, 39.4, 44.85), (128, 81.7, 46.05))),
        ("L40", ((1, 0.7, 2.41), (64, 44.4, 72.9), (128, 148.0, 64.28)))) for m, f, a in rows),
)


def predict(gpu: str, m: int, int4: bool, kernel: str = "autoawq-0.1", scaled: bool = False) -> float:
    """Seconds of one m x N x K matmul on ``gpu``: int4 g128 weights under ``kernel`` (``scaled``: the A100's rates
    scaled by the fp32 rate, as a GPU without its own takes them), or fp16 ones."""
    hw = find_hardware(gpu)
    roof = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16"))
    model = kernel_model(hw, roof, None, engine_host=EngineHost(int4_kernel=kernel if int4 else ""))
    if int4 and scaled:
        model = replace(model, int4_cap=int4_cap(kernel, hw.peak_flop_per_s["fp32"], roof.peak_flop_per_s,
                                                 roof.bandwidth_bytes_per_s))
    wl = Workload("decode", 1, 1, 1, weight_dtype=DTYPES["int4" if int4 else "fp16"], group_size=128)
    weights = linear_weight_bytes(K, N, wl)
    flops = 2 * m * N * K
    bytes_ = weights + 2 * m * K + 2 * m * N
    t, _ = kernel_time(model, flops / roof.peak_flop_per_s, bytes_ / roof.bandwidth_bytes_per_s, "matmul", m,
                       "int4" if int4 else "", weights, depth=K, width=N)
    return float(t)


def main() -> None:
    print(f"AutoAWQ's GEMM (roofcalc --int4-kernel autoawq-0.1) against {QUICK}; measured / predicted is of time\n")
    print("| GPU | M | FP16 measured | FP16 predicted | AWQ measured | AWQ predicted (own rows) | measured / predicted "
          "| A100's scaled: predicted | measured / predicted | Marlin-like: predicted | measured / predicted |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")
    logs = {"own rows (seen)": [], "others by the A100's scaled (check)": [], "others Marlin-like": []}
    for gpu, m, fp16, awq in ROWS:
        flops = 2 * m * N * K
        p16, own, scaled, marlin = (flops / predict(gpu, m, *q) / 1e12 for q in (
            (False,), (True,), (True, "autoawq-0.1", True), (True, "marlin")))
        logs["own rows (seen)"].append(abs(math.log(own / awq)))
        other = gpu != "A100-80GB"
        if other:
            logs["others by the A100's scaled (check)"].append(abs(math.log(scaled / awq)))
            logs["others Marlin-like"].append(abs(math.log(marlin / awq)))
        cells = f"{scaled:.1f} | {scaled / awq:.2f} | {marlin:.1f} | {marlin / awq:.2f}" if other else "– | – | – | –"
        print(f"| {gpu} | {m} | {fp16:.1f} | {p16:.1f} | {awq:.1f} | {own:.1f} | {own / awq:.2f} | {cells} |")
    for role, v in logs.items():
        within = sum(x <= math.log(1.3) for x in v)
        print(f"\n{role}: {len(v)} rows, median |log(measured / predicted)| = {statistics.median(v):.3f}, "
              f"{within} of {len(v)} within 30 %")


# Marlin (IST-DASLab/marlin @ 2f6d7c1): bench.py's layer shapes (K, N) of a Transformer block's linear layers, and
# the README's assets/models.png, Marlin's speedup over FP16 PyTorch (CUTLASS) on their summed time at batch 16,
# group 128, read off the figure (bars to the nearest 0.05 or so): A10, RTX 3090, RTX A6000, A100
MARLIN = "IST-DASLab/marlin README @ 2f6d7c1 (assets/models.png; bench.py's layers, batch 16, group 128)"
MARLIN_LAYERS = {
    "Llama 7B": ((4096, 3 * 4096), (4096, 4096), (4096, 2 * 10752), (10752, 4096)),
    "Llama 13B": ((5120, 3 * 5120), (5120, 5120), (5120, 2 * 13568), (13568, 5120)),
    "Llama 33B": ((6656, 3 * 6656), (6656, 6656), (6656, 2 * 17664), (17664, 6656)),
    "Llama 65B": ((8192, 3 * 8192), (8192, 8192), (8192, 2 * 21760), (21760, 8192)),
    "Falcon 180B": ((14848, 14848 * 5 + 1024), (14848 * 5, 14848)),
}
MARLIN_GPUS = ("A10", "RTX3090", "RTX-A6000", "A100-80GB")
MARLIN_BARS = {"Llama 7B": (3.69, 3.60, 3.40, 2.22), "Llama 13B": (3.79, 3.69, 3.65, 2.80),
               "Llama 33B": (3.83, 4.14, 3.78, 3.04), "Llama 65B": (3.85, 4.05, 3.87, 3.20),
               "Falcon 180B": (3.75, 4.25, 3.81, 3.64)}


def marlin_speedup(gpu: str, layers, m: int = 16, size: tuple | None = None) -> tuple[float, list[float]]:
    """The step model's FP16 time over its int4 (Marlin-like, group 128) time, summed over ``layers`` at ``m`` rows
    on ``gpu``'s datasheet roof (``size``: GA100_INT4_SIZE's points to try in its place), and the layers' int4
    weight bytes."""
    hw = find_hardware(gpu)
    roof = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16"))
    model = kernel_model(hw, roof, None, engine_host=EngineHost(int4_kernel="marlin"))
    if size is not None:
        model = replace(model, dequant_size={**model.dequant_size, "int4": size})
    total = {True: 0.0, False: 0.0}
    weights = []
    for k, n in layers:
        for int4 in (True, False):
            wl = Workload("decode", 1, 1, 1, weight_dtype=DTYPES["int4" if int4 else "fp16"], group_size=128)
            w = linear_weight_bytes(k, n, wl)
            t, _ = kernel_time(model, 2 * m * n * k / roof.peak_flop_per_s,
                               (w + 2 * m * k + 2 * m * n) / roof.bandwidth_bytes_per_s, "matmul", m,
                               "int4" if int4 else "", w, depth=k, width=n)
            total[int4] += float(t)
            if int4:
                weights.append(w)
    return total[False] / total[True], weights


MARLIN_GRID = (8e6, 16e6, 32e6, 64e6, 128e6, 256e6, 512e6)  # int4 bytes at which GA100_INT4_SIZE is written


def marlin_form(c: float, alpha: float) -> tuple[tuple[float, float], ...]:
    """The factor 1 - c (bytes / 1 MB)^-alpha written at MARLIN_GRID (clipped to [0.05, 1])."""
    return tuple((x, round(min(1.0, max(0.05, 1.0 - c * (x / 1e6) ** -alpha)), 4)) for x in MARLIN_GRID)


def marlin_points() -> tuple[tuple[float, float], ...]:
    """GA100_INT4_SIZE from the figure's A100 bars: the factor of a matmul's int4 bytes x taken as 1 - c (x / 1 MB)^-a
    (it rises toward Marlin's ideal as the layer grows; two parameters for five bars), c and a the least squares of
    log(bar / predicted speedup) over the five models, the step model reading the written points in log bytes for
    each layer; a grid of c (0.05 steps) and a (0.02 steps)."""
    col = MARLIN_GPUS.index("A100-80GB")
    best = (math.inf, 0.0, 0.0)
    for c in (i / 20 for i in range(1, 80)):
        for alpha in (i / 50 for i in range(1, 75)):
            pts = marlin_form(c, alpha)
            sq = sum(math.log(MARLIN_BARS[name][col] / marlin_speedup("A100-80GB", layers, size=pts)[0]) ** 2
                     for name, layers in MARLIN_LAYERS.items())
            best = min(best, (sq, c, alpha))
    print(f"c = {best[1]}, alpha = {best[2]}")
    return marlin_form(best[1], best[2])


def marlin_table() -> None:
    """The figure's bars beside the step model's speedups, every GPU of it."""
    print(f"\nMarlin-like int4 against {MARLIN}: speedup over FP16, bar / predicted\n")
    print("| GPU | " + " | ".join(MARLIN_LAYERS) + " |\n|---|" + "---|" * len(MARLIN_LAYERS))
    for i, gpu in enumerate(MARLIN_GPUS):
        cells = []
        for name, layers in MARLIN_LAYERS.items():
            s, _ = marlin_speedup(gpu, layers)
            cells.append(f"{MARLIN_BARS[name][i]:.2f} / {s:.2f}")
        print(f"| {gpu} | " + " | ".join(cells) + " |")


def trt_check(data: str) -> None:
    """The GA100 factor against a kernel it was not read from: TensorRT-LLM's own int4 weight-only GEMM
    (AIConfigurator's A100 SXM table, gemm/trtllm/1.0.0, int4_wo, the WeightOnlyQuantMatmul plugin), its rows of
    M <= 16 whose six replayed copies of the weight (the collector's count) pass the 40 MB L2, against the step
    model's Marlin-like int4 matmul on the A100 with the factor and without it (Marlin's ideal, 1)."""
    import pandas as pd

    d = pd.read_parquet(f"{data}/data/a100_sxm/gemm/trtllm/1.0.0/gemm_perf.parquet")
    d = d[(d.gemm_dtype == "int4_wo") & (d.m <= 16)]
    hw = find_hardware("A100-80GB")
    roof = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16"))
    model = kernel_model(hw, roof, None, engine_host=EngineHost(int4_kernel="marlin"))
    ideal = replace(model, dequant_size={})
    wl = Workload("decode", 1, 1, 1, weight_dtype=DTYPES["int4"], group_size=128)
    logs: dict = {"with the factor": [], "without (Marlin's ideal)": []}
    by_size: dict = {}
    for r in d.itertuples():
        m, n, k = int(r.m), int(r.n), int(r.k)
        w = linear_weight_bytes(k, n, wl)
        if 6 * w < 40 * 2**20:  # six layers in L2 (the A100 SXM's 40 MiB): L2-resident, not a step's
            continue
        for (_, v), mm in zip(logs.items(), (model, ideal)):
            t, _ = kernel_time(mm, 2 * m * n * k / roof.peak_flop_per_s,
                               (w + 2 * m * k + 2 * m * n) / roof.bandwidth_bytes_per_s, "matmul", m, "int4", w,
                               depth=k, width=n)
            v.append(math.log(r.latency * 1e-3 / float(t)))
        by_size.setdefault(min(7, int(math.log2(max(w / 1e6, 1.0)))), []).append(logs["with the factor"][-1])
    print("\nTensorRT-LLM's int4 weight-only GEMM on the A100 (M <= 16, DRAM rows) against the Marlin-like form:")
    for name, v in logs.items():
        within = sum(abs(x) <= math.log(1.3) for x in v)
        print(f"  {name}: {len(v)} rows, median log(measured / predicted) {statistics.median(v):+.3f}, median |log| "
              f"{statistics.median(map(abs, v)):.3f}, {within} within 30 % ({100 * within / len(v):.0f} %)")
    print("  with the factor, by the weight's int4 bytes: " + "; ".join(
        f"{f'{2 ** b} MB and up' if b == 7 else f'{2 ** b}-{2 ** (b + 1)} MB'} {len(v)} rows, median "
        f"{statistics.median(v):+.3f}"
        for b, v in sorted(by_size.items())))


if __name__ == "__main__":
    import sys

    if "--marlin-points" in sys.argv[1:]:
        print(marlin_points())
    else:
        main()
        marlin_table()
        if "--data" in sys.argv[1:]:
            trt_check(sys.argv[sys.argv.index("--data") + 1])
