"""Each decode-attention table against its GPU's DRAM roof: the KV bytes a row names over its measured time.

    python benchmarks/decode_roof_check.py --data /tmp/aic/x/aiconfigurator_core/systems

A decode row of more than 200 MB of KV (past any of these GPUs' L2) must read it from DRAM, so its bytes over
its time cannot pass the datasheet's bandwidth. For the table of each GPU and engine that
benchmarks/fit_kernels.py fits (16-bit KV, no sliding window, every kernel source; KV length step + 1, one token
more than the A100 vLLM table reads; 2 x B x L x KV heads x head dim x 2 bytes), split where query heads share a
KV head (GQA) and where they do not (MHA): the rows, the median and 90th percentile of that ratio, and the share
of rows above 1. A table whose rows pass 1 reads less than it names (benchmarks/ship_fits.py, NOT_SHIPPED).
Needs pandas and pyarrow; a few seconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fit_kernels import ENGINES, GPUS, SPECS, current_versions, pick_version  # noqa: E402

BIG = 200e6  # bytes of KV: past the largest L2 here (the RTX PRO 6000's 128 MiB, fit_kernels.SPECS)


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="the unzipped aiconfigurator_core/systems folder")
    systems = ap.parse_args().data.resolve()
    cur = current_versions(systems)
    print("| GPU | engine (version) | heads | rows > 200 MB | median | 90th pct | share > 1 |")
    print("|---|---|---|---|---|---|---|")
    for gpu in GPUS:
        for engine in ENGINES:
            vdir = pick_version(systems, gpu, "attention", engine, cur)
            path = vdir / "generation_attention_perf.parquet" if vdir else None
            if path is None or not path.exists():
                continue
            d = pd.read_parquet(path)
            d = d[d.kv_cache_dtype.isin(["bfloat16", "float16"])]
            if "window_size" in d:
                d = d[d.window_size == 0]
            kv = 2 * d.batch_size * (d.step + 1) * d.num_key_value_heads * d.head_dim * 2
            ratio = kv / (d.latency * 1e-3) / SPECS[gpu]["bw"]
            for name, sel in (("GQA", d.num_heads > d.num_key_value_heads), ("MHA", d.num_heads == d.num_key_value_heads)):
                r = ratio[(kv > BIG) & sel]
                if len(r):
                    print(f"| {gpu} | {engine} ({vdir.name}) | {name} | {len(r)} | {r.median():.2f} | "
                          f"{r.quantile(0.9):.2f} | {100 * (r > 1).mean():.0f} % |")


if __name__ == "__main__":
    main()
