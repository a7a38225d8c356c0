"""Time a 100 x 1,000 (batch x context) decode grid for a 7B model (target: at most 1 s).

    python benchmarks/sweep.py [--model meta-llama/Llama-2-7b-hf] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from roofcalc import load_shape
from roofcalc.roofline import Roof
from roofcalc.sweep import decode_grid


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="meta-llama/Llama-2-7b-hf")
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    shape = load_shape(args.model)
    batches = np.arange(1, 101)
    contexts = np.linspace(128, 32768, 1000).astype(np.int64)
    roof = Roof(2039e9, 312e12)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        grid = decode_grid(shape, batches, contexts, roof)
        times.append(time.perf_counter() - t0)
    print(f"{args.model}: {grid.flops.size:,} grid points, median {statistics.median(times) * 1e3:.1f} ms "
          f"over {args.repeat} runs (target <= 1000 ms)")


if __name__ == "__main__":
    main()
