"""How long a trace takes: Llama-2-7B (32 layers, the catalog's config read as if it had no hand model),
decode at batch 1 and context 500, and a prefill of 512, each in a fresh process with the trace cache
off. Prints the median of 3 runs of the whole command (interpreter, imports, build on meta, trace) and of
the trace alone. The goal: at most about 5 s on a 2-core development machine."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import torch, transformers
from transformers import LlamaConfig, LlamaForCausalLM  # the modeling code, imported once per process
from roofcalc import Workload
from roofcalc.sources import find_in_catalog
from roofcalc.trace import trace
t1 = time.perf_counter()
cfg = dict(find_in_catalog("meta-llama/Llama-2-7b-hf").config)
wl = Workload.decode(1, 500) if sys.argv[1] == "decode" else Workload.prefill(1, 512)
a = trace(cfg, "llama-2-7b", wl, view="eager", use_cache=False)
t2 = time.perf_counter()
print(json.dumps({"imports_s": t1 - t0, "trace_s": t2 - t1, "kernels": len(a.kernels), "params": a.params}))
"""


def main() -> None:
    for phase in ("decode", "prefill"):
        runs = []
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", CHILD, phase], capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        total = statistics.median(r["imports_s"] + r["trace_s"] for r in runs)
        alone = statistics.median(r["trace_s"] for r in runs)
        print(f"{phase:8s} Llama-2-7B: {total:.2f} s with the imports of torch and transformers, {alone:.2f} s the "
              f"trace alone: build on meta, run, group "
              f"(median of 3; {runs[0]['kernels']} kernel rows, {runs[0]['params']:,} parameters)")


if __name__ == "__main__":
    main()
