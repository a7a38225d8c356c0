"""AutoAWQ's GEMM kernel against its published kernel timings on four GPUs, and the rule a GPU without its own
timings takes, tried on the three GPUs it was not read from.

    python benchmarks/int4_kernels.py

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


if __name__ == "__main__":
    main()
