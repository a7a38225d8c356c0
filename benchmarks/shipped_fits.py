"""Check that the kernel costs the tool ships predict the measured tables as the fit does.

    python benchmarks/shipped_fits.py --data /tmp/aic/x/aiconfigurator_core/systems   (needs pandas, pyarrow)

benchmarks/fit_kernels.py fits each GPU's kernel classes and cross-validates them (docs/kernel_fits.md);
benchmarks/ship_fits.py writes the fitted parameters into src/roofcalc/data/kernel_fits.json; the step model reads
them there (predict.GemmFit, predict.AttentionFit). This script runs every measured row of AIConfigurator's vLLM
GEMM and attention tables through the step model's own kernel time (predict.kernel_time on the GPU's default
model) with roofcalc's own FLOPs and bytes for the call (calculator.attention: 4·B·N·pairs·H FLOPs, Q read and
output written in 16 bits, K and V read at the cache's bytes per value; the new token's K and V written by
roofcalc's kv_cache_write, an elementwise kernel added to each attention row, as the measured call includes it),
and prints the median |ln(measured / predicted)| and the share within ±30 % on the rows that reach DRAM, beside
the fit's own in-sample figures (kernel_fits.json). The two agree where the shipped evaluator is the fitted
model; they differ by what roofcalc counts otherwise than the fit's formulas (an fp8 cache's prefill reads).
These rows are the fit's own (in sample); the held-out figures are docs/kernel_fits.md's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402

import fit_kernels as fk  # noqa: E402
from roofcalc.predict import default_model, kernel_time  # noqa: E402

CLASSES = ("gemm_bf16", "gemm_fp8", "decode_bf16kv", "decode_fp8kv", "decode_swa_bf16kv", "decode_swa_fp8kv",
           "prefill_bf16kv", "prefill_fp8kv")


def attention_rows(m, cls: str, R: dict, spec: dict) -> np.ndarray:
    """roofcalc's time for each measured attention row: the attention call and the cache write beside it."""
    decode = cls.startswith("decode")
    out = []
    for i in range(len(R["t"])):
        b, h, g, d, e, w = (R[x][i] for x in ("b", "h", "g", "hd", "e", "w"))
        b, h, g, d, w = int(b), int(h), int(g), int(d), int(w)
        if decode:
            q, kv = 1, int(R["kvlen"][i])
            pairs = kv
        else:
            q = kv = int(R["isl"][i])
            pairs = q * (q + 1) // 2 if not w or q <= w else w * (w + 1) // 2 + (q - w) * w
        flops = 4 * b * h * pairs * d
        keys = kv if decode else q
        kv_read = 2 * b * keys * g * d * e if decode else 2 * b * q * g * d * e
        moved = 2 * b * q * h * d * 2 + kv_read
        attn = (b, h, g, q, kv, d, w, float(e), int(R["context"][i]) if decode else q)  # context: before the window
        t = kernel_time(m, flops / spec["bf16"], moved / spec["bw"], "attention", 1, attn=attn)[0]
        write = 2 * b * q * g * d * (2 + e)  # the new K and V read in 16 bits and written at the cache's bytes
        t += kernel_time(m, 0.0, write / spec["bw"], "memory", 1)[0]
        out.append(t)
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="the unzipped aiconfigurator_core/systems folder")
    args = ap.parse_args()
    systems = args.data.resolve()
    fits = {(f["gpu"], f["cls"]): f for f in json.loads((HERE / "kernel_fits.json").read_text())["fits"]
            if f["engine"] == "vllm"}
    cur = fk.current_versions(systems)
    print(f"{'gpu':9s} {'class':17s} {'rows':>6s}  shipped: median|log| within30   fit in-sample: median|log| within30")
    for gpu in fk.GPUS:
        spec = fk.SPECS[gpu]
        loaded = fk.load(systems, gpu, "vllm", cur)
        for cls in CLASSES:
            if cls not in loaded:
                continue
            R, _ = loaded[cls]
            m = default_model("gpu", fits=gpu).for_compute("fp8" if cls == "gemm_fp8" else "bf16")
            if cls.startswith("gemm"):
                peak = spec["fp8"] if cls == "gemm_fp8" else spec["bf16"]
                cost = fk.gemm_cost(R, 1, spec)  # FLOPs 2mnk (the tile is the model's), bytes as roofcalc's
                pred = np.array([kernel_time(m, fl / peak, by / spec["bw"], "matmul", mm, depth=int(k),
                                             width=int(n))[0]
                                 for fl, by, mm, n, k in zip(cost["flops"], cost["bytes"], R["m"], R["n"], R["k"])])
                dram = ~cost["l2"]
            else:
                pred = attention_rows(m, cls, R, spec)
                dram = ~R["l2"]
            s = fk.score(R["t"][dram], pred[dram])
            ref = fits[(gpu, cls)]["in_sample_dram"]
            print(f"{gpu:9s} {cls:17s} {int(dram.sum()):6d}  {s['median_abs_log']:.3f}  {s['within_30']:.1%}"
                  f"{'':21s}{ref['median_abs_log']:.3f}  {ref['within_30']:.1%}", flush=True)


if __name__ == "__main__":
    main()
