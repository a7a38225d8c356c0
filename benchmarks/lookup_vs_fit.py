"""Would reading AIConfigurator's measured times directly beat the fitted kernel model on shapes it does not hold?

    python benchmarks/lookup_vs_fit.py --data /tmp/aic/x/aiconfigurator_core/systems   (needs pandas, pyarrow)

A user's kernel is a table row only where the table measured that exact shape; for any other shape a direct read
is the nearest measured shape, scaled. This script holds out whole shapes in the same 10 folds as
benchmarks/fit_kernels.py's cross-validation (GEMM: an (n, k) pair; decode attention: a (heads, KV heads, head
dim) triple) and predicts each held-out row two ways:

* lookup: the row of the nearest training shape (in log n and log k, or log heads, log KV heads and head dim)
  at the same M (GEMM) or the same batch and KV length (decode) or prompt (prefill) and window, its time scaled by the ratio of the two shapes'
  roofline floors (max(FLOPs / peak, bytes / bandwidth), plus the fitted fixed cost on both);
* fit: the fitted model's cross-validated prediction (docs/kernel_fits.md), from benchmarks/kernel_fits.json.

It prints each one's median |ln(measured / predicted)| and share within ±30 % on the DRAM rows. The fit is
offered by the tool; a direct read would be offered only if it came out better.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import fit_kernels as fk  # noqa: E402


def floors(cls: str, R: dict, spec: dict) -> np.ndarray:
    ct, mt, _ = fk.times(cls, R, spec)
    return np.maximum(ct, mt)


def lookup(cls: str, R: dict, spec: dict, fixed: float, folds: np.ndarray) -> np.ndarray:
    """Each row predicted from the nearest shape of the other folds at the same M (or batch and KV length)."""
    floor = floors(cls, R, spec)
    if cls.startswith("gemm"):
        shape = np.stack([np.log2(R["n"]), np.log2(R["k"])], axis=1)
        at = [tuple(x) for x in np.stack([R["m"]], axis=1)]
    else:
        shape = np.stack([np.log2(R["h"]), np.log2(R["g"]), np.log2(R["hd"])], axis=1)
        at = [tuple(x) for x in np.stack([R["b"], R["kvlen"] if cls.startswith("decode") else R["isl"], R["w"]],
                                         axis=1)]
    by_at: dict = {}
    for i, a in enumerate(at):
        by_at.setdefault(a, []).append(i)
    pred = np.full(len(floor), np.nan)
    for rows in by_at.values():
        rows = np.array(rows)
        for i in rows:
            others = rows[folds[rows] != folds[i]]
            if not len(others):
                continue
            j = others[np.argmin(np.sum((shape[others] - shape[i]) ** 2, axis=1))]
            pred[i] = fixed + (R["t"][j] - fixed) * floor[i] / floor[j] if R["t"][j] > fixed else \
                R["t"][j] * floor[i] / floor[j]
    return pred


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="the unzipped aiconfigurator_core/systems folder")
    ap.add_argument("--gpus", default=",".join(fk.GPUS))
    args = ap.parse_args()
    systems = args.data.resolve()
    fits = {(f["gpu"], f["cls"]): f for f in json.loads((HERE / "kernel_fits.json").read_text())["fits"]
            if f["engine"] == "vllm"}
    cur = fk.current_versions(systems)
    print(f"{'gpu':9s} {'class':14s} {'rows':>6s}  lookup: median|log| within30 (rows it reaches)   "
          f"fit, cross-validated: median|log| within30")
    for gpu in args.gpus.split(","):
        spec = fk.SPECS[gpu]
        loaded = fk.load(systems, gpu, "vllm", cur)
        for cls in ("gemm_bf16", "gemm_fp8", "decode_bf16kv", "decode_fp8kv", "prefill_bf16kv", "prefill_fp8kv"):
            if cls not in loaded:
                continue
            R, _ = loaded[cls]
            f = fits[(gpu, cls)]
            R = dict(R)
            cost = {"gemm": lambda: fk.gemm_cost(R, 1, spec), "decode": lambda: fk.decode_cost(R, (1, False), spec),
                    "prefill": lambda: fk.prefill_cost(R, 1, spec)}[cls.split("_")[0]]()
            R.update(cost)
            folds = fk.folds_of(R["group"], 10)
            pred = lookup(cls, R, spec, f["params"]["fixed_s"], folds)
            dram = ~R["l2"] & np.isfinite(pred)
            s = fk.score(R["t"][dram], pred[dram])
            cv = f["cv"]["dram"]
            print(f"{gpu:9s} {cls:14s} {int((~R['l2']).sum()):6d}  {s['median_abs_log']:.3f}  {s['within_30']:.1%}"
                  f" ({int(dram.sum())}){'':22s}{cv['median_abs_log']:.3f}  {cv['within_30']:.1%}", flush=True)


if __name__ == "__main__":
    main()
