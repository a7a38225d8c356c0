"""AutoAWQ's GEMM kernel against its published kernel timings: the A100 rows its form was read from, and the
RTX 4090 rows it was not.

    python benchmarks/int4_kernels.py

roofcalc's int4 matmuls run a Marlin-like kernel unless the engine runs AutoAWQ's GEMM (`--int4-kernel autoawq`, `autoawq-0.1`, `vllm-awq`:
predict.AWQ_GEMM, read from the A100 columns below and scaled to another GPU by its datasheet fp32 rate). This
script predicts one M x 8192 x 8192 matmul of int4 weights in groups of 128 (fp16 scales) under that kernel, and the
same matmul in fp16 for comparison, on the GPU's datasheet roof with the default efficiencies and its fitted
kernel costs, as the step model does, and sets them beside SqueezeBits/QUICK's README @ 1180eba
(arXiv 2402.10076): TFLOP/s of AutoAWQ's GEMM and of FP16 (cuBLAS) at each M. The A100 rows are the form's
own (seen); the RTX 4090, RTX A6000 and L40 rows test its scaling to other GPUs by the fp32 rate, which they do
not bear out (docs/validation.md, "AutoAWQ's GEMM kernel").
"""

from __future__ import annotations

import math
import statistics

from roofcalc.dtypes import DTYPES
from roofcalc.calculator import Workload, linear_weight_bytes
from roofcalc.hardware import find_hardware
from roofcalc.predict import EngineHost, kernel_time
from roofcalc.roofline import Roof, kernel_model

N = K = 8192
QUICK = "SqueezeBits/QUICK README @ 1180eba (M x 8192 x 8192, TFLOP/s)"
# (GPU, M, FP16 TFLOP/s, AutoAWQ GEMM TFLOP/s, role): the README's kernel table, every FP16 and AWQ figure
ROWS = (
    *(("A100-80GB", m, f, a, "seen") for m, f, a in ((1, 1.4, 2.94), (16, 22.6, 34.23), (32, 46.4, 48.83),
                                                      (64, 91.9, 57.43), (128, 157.4, 58.46))),
    *((gpu, m, f, a, "check") for gpu, rows in (
        ("RTX4090", ((1, 0.8, 3.11), (64, 56.4, 91.39), (128, 138.2, 104.36))),
        ("RTX-A6000", ((1, 0.7, 2.21), (64, 39.4, 44.85), (128, 81.7, 46.05))),
        ("L40", ((1, 0.7, 2.41), (64, 44.4, 72.9), (128, 148.0, 64.28)))) for m, f, a in rows),
)


def predict(gpu: str, m: int, int4: bool, kernel: str = "autoawq-0.1") -> float:
    """Seconds of one m x N x K matmul on ``gpu``: int4 g128 weights under ``kernel``, or fp16 ones."""
    hw = find_hardware(gpu)
    roof = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16"))
    engine = EngineHost(int4_kernel=kernel if int4 else "")
    model = kernel_model(hw, roof, None, engine_host=engine)
    wl = Workload("decode", 1, 1, 1, weight_dtype=DTYPES["int4" if int4 else "fp16"], group_size=128)
    weights = linear_weight_bytes(K, N, wl)
    flops = 2 * m * N * K
    bytes_ = weights + 2 * m * K + 2 * m * N
    t, _ = kernel_time(model, flops / roof.peak_flop_per_s, bytes_ / roof.bandwidth_bytes_per_s, "matmul", m,
                       "int4" if int4 else "", weights, depth=K, width=N)
    return float(t)


def main() -> None:
    print(f"AutoAWQ's GEMM (roofcalc --int4-kernel autoawq-0.1) against {QUICK}\n")
    print("| GPU | M | FP16 measured | FP16 predicted | AWQ measured | AWQ predicted | measured / predicted (time) "
          "| Marlin-like predicted | its measured / predicted | |\n|---|---|---|---|---|---|---|---|---|---|")
    logs = {"seen": [], "check": [], "check, Marlin-like": []}
    for gpu, m, fp16, awq, role in ROWS:
        flops = 2 * m * N * K
        p16, p4, pm = (flops / predict(gpu, m, *q) / 1e12 for q in ((False,), (True,), (True, "marlin")))
        ratio, marlin = p4 / awq, pm / awq  # measured time / predicted time = predicted rate / measured rate
        logs[role].append(abs(math.log(ratio)))
        if role == "check":
            logs["check, Marlin-like"].append(abs(math.log(marlin)))
        print(f"| {gpu} | {m} | {fp16:.1f} | {p16:.1f} | {awq:.1f} | {p4:.1f} | {ratio:.2f} | {pm:.1f} | {marlin:.2f} "
              f"| {role} |")
    for role, v in logs.items():
        within = sum(x <= math.log(1.3) for x in v)
        print(f"\n{role}: {len(v)} rows, median |log(measured / predicted)| = {statistics.median(v):.3f}, "
              f"{within} of {len(v)} within 30 %")


if __name__ == "__main__":
    main()
