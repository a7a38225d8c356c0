"""Would reading AIConfigurator's measured times directly beat the fitted kernel model on shapes it does not hold?

    python benchmarks/lookup_vs_fit.py --data /tmp/aic/x/aiconfigurator_core/systems   (needs pandas, pyarrow)

A user's kernel is a table row only where the table measured that exact shape; for any other shape a direct read
is the nearest measured shape, scaled. This script holds out whole shapes in the same 10 folds as
benchmarks/fit_kernels.py's cross-validation (GEMM: an (n, k) pair; decode attention: a (heads, KV heads, head
dim) triple) and predicts each held-out row two ways:

* lookup: as `--kernel-db` reads a kernel (roofcalc.kerneldb.Nearest), from the other folds' rows only: the
  fitted fixed cost plus the time beyond it of the nearest row in log2 of (M, N, K), or (batch, KV length or
  prompt, heads, KV heads, head dim), scaled by the ratio of the two rows' roofline floors;
* fit: the fitted model's cross-validated prediction (docs/kernel_fits.md), from benchmarks/kernel_fits.json.

Fused MoE (vLLM's tables; whole shapes, an (H, I, top-k, E) layer, held out in the fit's folds): the nearest
measured call in log2 of (the rank's routed rows, H, I', the rank's experts, every routed pair T*k), scaled by
the floors (fitting.moe_cost), and a third way, the geometric mean of that read and the fit's cross-validated
prediction, which is what `--kernel-db` takes off the measured shapes (the fit is re-run here, as
fit_kernels.py runs it, for its per-row predictions: about 30 s a GPU).

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

sys.path.insert(0, str(HERE.parent / "src"))
from roofcalc.kerneldb import Nearest  # noqa: E402


def floors(cls: str, R: dict, spec: dict) -> np.ndarray:
    ct, mt, _ = fk.times(cls, R, spec)
    return np.maximum(ct, mt)


def keys(cls: str, R: dict) -> np.ndarray:
    """What --kernel-db's lookup measures distance in (roofcalc.kerneldb): log2 of (M, N, K) for a GEMM, of
    (batch, KV length, heads, KV heads, head dim) for decode, of (batch, prompt, heads, KV heads, head dim)
    for prefill, of (routed rows, H, I', experts, routed pairs, tokens) for a fused MoE call."""
    if cls.startswith("gemm"):
        cols = [R["m"], R["n"], R["k"]]
    elif cls.startswith("moe"):  # a fused MoE call: the rank's routed rows, H, I', the rank's experts, every pair,
        cols = [R["rows"], R["hidden_model"], R["inter_model"], R["experts"], R["pairs"],  # the model's sizes, not
                R["tokens"]]  # an MXFP4 kernel's stored ones (fit_kernels.moe_rows); the tokens (top-k)
    else:
        cols = [R["b"], R["kvlen"] if cls.startswith("decode") else R["isl"], R["h"], R["g"], R["hd"]]
    return np.log2(np.maximum(np.stack(cols, axis=1), 1.0))


def lookup(cls: str, R: dict, spec: dict, fixed: float, folds: np.ndarray) -> np.ndarray:
    """Each row predicted as --kernel-db predicts a kernel (roofcalc.kerneldb.Nearest) from the rows of the
    other folds only: the fitted fixed cost plus the nearest row's time beyond it, scaled by the floors."""
    floor, key = floors(cls, R, spec), keys(cls, R)
    pred = np.full(len(floor), np.nan)
    for f in np.unique(folds):
        train, test = folds != f, np.flatnonzero(folds == f)
        table = Nearest(key[train], R["t"][train], floor[train], fixed)
        for i in test:
            pred[i] = fixed + table.work(2.0 ** key[i], floor[i])
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
        for cls in fk.CLASSES[:-1]:  # every class but the all-reduce (not read from the tables by --kernel-db)
            if cls not in loaded:
                continue
            R, _ = loaded[cls]
            f = fits[(gpu, cls)]
            R = dict(R)
            cost = {"gemm": lambda: fk.gemm_cost(R, 1, spec), "decode": lambda: fk.decode_cost(R, (1, False), spec),
                    "prefill": lambda: fk.prefill_cost(R, 1, spec)}[cls.split("_")[0]]()  # tiles: none (as --kernel-db)
            R.update(cost)
            folds = fk.folds_of(R["group"], 10)
            pred = lookup(cls, R, spec, f["params"]["fixed_s"], folds)
            dram = ~R["l2"] & np.isfinite(pred)
            s = fk.score(R["t"][dram], pred[dram])
            cv = f["cv"]["dram"]
            print(f"{gpu:9s} {cls:14s} {int((~R['l2']).sum()):6d}  {s['median_abs_log']:.3f}  {s['within_30']:.1%}"
                  f" ({int(dram.sum())}){'':22s}{cv['median_abs_log']:.3f}  {cv['within_30']:.1%}", flush=True)
    print(f"\n{'gpu':9s} {'class':14s} {'rows':>6s}  lookup: median|log| within30   geometric mean of the two   "
          f"fit, cross-validated")
    for gpu in args.gpus.split(","):
        moe(systems, gpu, cur, fits)


def moe(systems: Path, gpu: str, cur: dict, fits: dict) -> None:
    """The fused MoE classes: the direct read, the fit, and their geometric mean, on held-out shapes."""
    spec = fk.SPECS[gpu]
    for cls, (R, _) in fk.load_moe(systems, gpu, "vllm", cur).items():
        res = fk.run_class(cls, R, spec, 10)  # the fit's cross-validated predictions, row by row
        R = res["R"]
        pred = lookup(cls, R, spec, fits[(gpu, cls)]["params"]["fixed_s"], fk.folds_of(R["group"], 10))
        dram = ~R["l2"]
        out = [fk.score(R["t"][dram], p[dram]) for p in (pred, np.sqrt(pred * res["cv"]), res["cv"])]
        print(f"{gpu:9s} {cls:14s} {int(dram.sum()):6d}  " + "   ".join(
            f"{s['median_abs_log']:.3f}  {s['within_30']:.1%}" for s in out), flush=True)


if __name__ == "__main__":
    main()
