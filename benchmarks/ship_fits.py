"""Write the fitted kernel costs the tool ships (src/roofcalc/data/kernel_fits.json) from the fit's output.

    python benchmarks/fit_kernels.py --data DIR     # writes benchmarks/kernel_fits.json (see its docstring)
    python benchmarks/ship_fits.py                  # this: the part the step model reads

What ships, per measured GPU (vLLM tables; NCCL for the all-reduce), with the fit's provenance:
* each kernel class's fixed cost: the median of its table's five fastest rows (``smallest_5_median_us``), the
  same figure the defaults take the median of over the five GPUs; decode and prefill attention less the
  elementwise cache write their calls include (roofcalc's kv_cache_write pays its own, predict.GPU_FIXED);
* the all-reduce's fitted fixed cost at 2, 4 and 8 ranks and its share of the link by message size
  (``e_link_N``, bytes to share), cross-validated in docs/kernel_fits.md.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STREAM_FIXED_US = 1.735  # predict.GPU_FIXED["stream"]: the cache write's elementwise kernel


def main() -> None:
    doc = json.loads((ROOT / "benchmarks" / "kernel_fits.json").read_text())
    out = {"source": {**doc["source"], "from": "benchmarks/kernel_fits.json", "by": "benchmarks/ship_fits.py"},
           "gpus": {}}
    for f in doc["fits"]:
        gpu = out["gpus"].setdefault(f["gpu"], {"fixed_s": {}, "all_reduce": {}})
        if f["cls"] == "allreduce":
            p = f["params"]
            for ranks in (2, 4, 8):
                if f"fixed_s_{ranks}" in p:
                    gpu["all_reduce"][str(ranks)] = {
                        "fixed_s": p[f"fixed_s_{ranks}"],
                        "e_link": sorted([float(k), v] for k, v in p[f"e_link_{ranks}"].items())}
            gpu["all_reduce_source"] = f["source"]
            continue
        if f["engine"] != "vllm":
            continue
        us = f["smallest_5_median_us"]
        name = {"gemm_bf16": "gemm", "decode_bf16kv": "attention", "prefill_bf16kv": "attention_compute"}.get(f["cls"])
        if name is None:
            continue
        if name != "gemm":
            us -= STREAM_FIXED_US
        gpu["fixed_s"][name] = round(us * 1e-6, 12)
        gpu["fixed_s"]["gemv"] = gpu["fixed_s"].get("gemm", gpu["fixed_s"].get("gemv"))
        gpu.setdefault("fixed_source", {})[name] = f["source"]
    path = ROOT / "src" / "roofcalc" / "data" / "kernel_fits.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}: {', '.join(out['gpus'])}")


if __name__ == "__main__":
    main()
