"""Cold start of the main job against `python -c "import numpy, tabulate"`, side by side.

Runs the two commands alternately in fresh processes, ROUNDS times each, and prints the
medians and the median of the per-round ratios. The target: ratio <= 1.

roofcalc's modules are byte-compiled first, as `pip install` leaves them (numpy's and tabulate's were at
their install): from a source checkout under PYTHONDONTWRITEBYTECODE=1 every run would otherwise compile
them again (about 75 ms on the development machine), a cost no installed roofcalc pays.

    python benchmarks/startup.py [--rounds 21] [--model TinyLlama/TinyLlama-1.1B]
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--model", default="TinyLlama/TinyLlama-1.1B")
    args = p.parse_args()
    for folder in importlib.util.find_spec("roofcalc").submodule_search_locations:
        compileall.compile_dir(folder, quiet=1)
    script = Path(sys.executable).with_name("roofcalc")
    main_job = [str(script) if script.exists() else "roofcalc", args.model]
    baseline = [sys.executable, "-c", "import numpy, tabulate"]
    timed(main_job), timed(baseline)  # warm the file cache: "cold" means a fresh process
    ours, base, ratios = [], [], []
    for _ in range(args.rounds):
        a, b = timed(main_job), timed(baseline)
        ours.append(a), base.append(b), ratios.append(a / b)
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {args.rounds} rounds")
    print(f"roofcalc {args.model}: median {statistics.median(ours) * 1e3:.0f} ms")
    print(f"python -c 'import numpy, tabulate': median {statistics.median(base) * 1e3:.0f} ms")
    print(f"ratio (median of per-round ratios): {statistics.median(ratios):.2f}  (target <= 1)")


if __name__ == "__main__":
    main()
