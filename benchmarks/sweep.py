"""Time a 100 x 1,000 (batch x context) decode grid for a 7B model (target: the sweep with verdicts in at most 0.2 s).

Two figures, medians of the same runs: the grid alone (costs and floors), and the whole sweep as
the CLI builds it (grid, step times, tokens/s, bounds, fits, and the verdicts at all 1,000 contexts).

    python benchmarks/sweep.py [--model meta-llama/Llama-2-7b-hf] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from roofcalc import load_shape
from roofcalc.roofline import Roof
from roofcalc.hardware import find_hardware
from roofcalc.sweep import decode_grid, sweep


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="meta-llama/Llama-2-7b-hf")
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    shape = load_shape(args.model)
    batches = np.arange(1, 101)
    contexts = np.linspace(128, 32768, 1000).astype(np.int64)
    roof = Roof(2039e9, 312e12)
    hw = find_hardware("A100-80GB")
    grid_times, sweep_times = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        grid = decode_grid(shape, batches, contexts, roof)
        t1 = time.perf_counter()
        sw = sweep(shape, hw, batches=batches, contexts=contexts)
        _ = (sw.grid.step_s, sw.grid.tokens_per_s, sw.grid.bound, sw.grid.fits(sw.capacity_bytes))
        t2 = time.perf_counter()
        grid_times.append(t1 - t0)
        sweep_times.append(t2 - t1)
    print(f"{args.model}: {grid.flops.size:,} grid points over {args.repeat} runs (target: the sweep with verdicts <= 200 ms):\n"
          f"  grid alone          median {statistics.median(grid_times) * 1e3:.1f} ms\n"
          f"  sweep with verdicts median {statistics.median(sweep_times) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
