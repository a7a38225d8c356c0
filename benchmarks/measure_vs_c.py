"""roofcalc measure against the references it must come within 10% of (CPU).

* Bandwidth: a plain C copy loop, compiled with -O3 -march=native -fopenmp, over all cores, on
  arrays of the same size, counting the bytes read and written as roofcalc does.
* Matmul: the best numpy/BLAS fp32 figure at any size from 256 to 8192.

Both sides run here, one after the other, several rounds; the medians of the best-of-run
figures are compared.

    python benchmarks/measure_vs_c.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from roofcalc.measure import cpu_bandwidth, cpu_matmul, stream_bytes

C_COPY = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t n = strtoull(argv[1], 0, 10) / sizeof(float);
    int repeats = atoi(argv[2]);
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) { x[i] = 1.0f; y[i] = 0.0f; }
    double best = 1e30;
    for (int r = 0; r < repeats + 1; r++) {
        double t0 = omp_get_wtime();
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) y[i] = x[i];
        double t = omp_get_wtime() - t0;
        if (r > 0 && t < best) best = t;  /* the first run warms up */
    }
    printf("%.6f %f\n", best, y[n / 2]);
    return 0;
}
"""


def c_copy_gbs(nbytes: int, repeats: int) -> float:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise SystemExit("no C compiler here")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "copy.c", Path(tmp) / "copy"
        src.write_text(C_COPY)
        subprocess.run([cc, "-O3", "-march=native", "-fopenmp", str(src), "-o", str(exe)], check=True)
        env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count()), OMP_PROC_BIND="spread")
        out = subprocess.run([str(exe), str(nbytes), str(repeats)], capture_output=True, text=True, check=True, env=env)
    best = float(out.stdout.split()[0])
    return 2 * nbytes / best / 1e9


def best_blas_gflops(repeats: int) -> tuple[float, int]:
    best, where = 0.0, 0
    for n in (256, 512, 1024, 2048, 3072, 4096, 6144, 8192):
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
        np.matmul(a, b)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.matmul(a, b)
            times.append(time.perf_counter() - t0)
        rate = 2 * n ** 3 / min(times) / 1e9
        if rate > best:
            best, where = rate, n
    return best, where


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    nbytes = stream_bytes()
    rows = {"c copy": [], "roofcalc copy": [], "roofcalc y=x+1": [], "blas best": [], "roofcalc matmul": []}
    sizes = []
    for r in range(args.rounds):
        rows["c copy"].append(c_copy_gbs(nbytes, args.repeats))
        copy, add = cpu_bandwidth(nbytes, args.repeats)
        rows["roofcalc copy"].append(copy.best_rate / 1e9)
        rows["roofcalc y=x+1"].append(add.best_rate / 1e9)
        best, n = best_blas_gflops(3)
        rows["blas best"].append(best)
        sizes.append(n)
        rows["roofcalc matmul"].append(max(s.best_rate for s in cpu_matmul(repeats=3)) / 1e9)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.4g}" for k, v in rows.items()), flush=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    bw = max(med["roofcalc copy"], med["roofcalc y=x+1"])
    print(f"\n{os.cpu_count()} cores, arrays of {nbytes / 2**20:.0f} MiB, medians of {args.rounds} rounds:")
    print(f"  bandwidth  C -O3 OpenMP copy {med['c copy']:.4g} GB/s; roofcalc measure {bw:.4g} GB/s "
          f"(copy {med['roofcalc copy']:.4g}, y = x + 1 {med['roofcalc y=x+1']:.4g}): "
          f"ratio {bw / med['c copy']:.3f}")
    print(f"  matmul     best numpy/BLAS fp32 at any size {med['blas best']:.4g} GFLOP/s (at {max(sizes)}); "
          f"roofcalc measure {med['roofcalc matmul']:.4g} GFLOP/s: ratio {med['roofcalc matmul'] / med['blas best']:.3f}")
    print("  target: both ratios at least 0.90")


if __name__ == "__main__":
    main()
