"""Models that do not fit one GPU, on H100-SXM: one rank's step at each way of splitting them.

    python benchmarks/parallel_cases.py

Llama-2-70B (fp16) at batch 1 and 64 on --tp 1, 4 and 8; Mixtral-8x7B (bf16) at --tp 2 and --ep 8;
DeepSeek-V3 (its fp8 blocks) on 8 and 16 GPUs (--ep 8 and 16; 16 is two HGX nodes, whose
all-to-alls cross the network) and as --tp 8 --ep 2, with MLA absorbed (as serving engines decode
it). Context 2000, CUDA graphs. For each: whether
a rank's weights and KV cache fit in 80 GiB, the rank's FLOPs and bytes, its collectives (count x
message bytes, and where they run), the predicted step and the collectives' share of it. No
measurement: every number is roofcalc's, from the catalog's configs and the H100 datasheet.
"""

from __future__ import annotations

from collections import Counter

from roofcalc import Workload
from roofcalc.calculator import DTYPES
from roofcalc.hardware import find_hardware
from roofcalc.parallel import Parallel, analyze_parallel
from roofcalc.roofline import roofline
from roofcalc.sources import load_shape

CASES = [
    ("meta-llama/Llama-2-70b-hf", "fp16", 1, Parallel(1)), ("meta-llama/Llama-2-70b-hf", "fp16", 1, Parallel(4)),
    ("meta-llama/Llama-2-70b-hf", "fp16", 1, Parallel(8)), ("meta-llama/Llama-2-70b-hf", "fp16", 64, Parallel(1)),
    ("meta-llama/Llama-2-70b-hf", "fp16", 64, Parallel(4)), ("meta-llama/Llama-2-70b-hf", "fp16", 64, Parallel(8)),
    ("mistralai/Mixtral-8x7B-v0.1", "bf16", 64, Parallel(1)), ("mistralai/Mixtral-8x7B-v0.1", "bf16", 64, Parallel(2)),
    ("mistralai/Mixtral-8x7B-v0.1", "bf16", 64, Parallel(ep=8)),
    ("deepseek-ai/DeepSeek-V3", "fp8-b128", 64, Parallel(ep=8)), ("deepseek-ai/DeepSeek-V3", "fp8-b128", 64, Parallel(ep=16)),
    ("deepseek-ai/DeepSeek-V3", "fp8-b128", 64, Parallel(8, ep=2)),
]
CONTEXT = 2000


def main() -> None:
    h100 = find_hardware("H100")
    print("| model | split | GPUs | batch | memory / GPU | fits | FLOPs / rank | bytes / rank | collectives / rank "
          "| step | communication |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, wdtype, batch, par in CASES:
        act = "bf16" if wdtype != "fp16" else "fp16"
        wl = Workload.decode(batch, CONTEXT, weight_dtype=DTYPES[wdtype], act_dtype=DTYPES[act], kv_dtype=DTYPES[act],
                             mla="absorbed" if "DeepSeek" in name else "naive",
                             cache_update="in-place", eager_ops=False)  # as the CUDA-graph step below runs
        r = roofline(analyze_parallel(load_shape(name), wl, par), h100, impl="cuda-graph")
        st, a = r.step, r.analysis
        comm = Counter()
        for p in st.placements:
            if p.kernel.kind == "collective":
                comm[(p.kernel.role, p.kernel.message_bytes, p.hop)] += p.kernel.count
        colls = ", ".join(f"{n} {role} x {msg:,} B ({hop})" for (role, msg, hop), n in sorted(comm.items())) or "none"
        split = " ".join(f"--{ax} {getattr(par, ax)}" for ax in ("tp", "ep") if getattr(par, ax) > 1) or "one GPU"
        share = st.times.comm_s / st.times.device_s
        print(f"| {name.split('/')[1]} | {split} | {par.gpus} | {batch} | {a.memory_bytes / 1e9:.1f} GB | "
              f"{'yes' if r.fits else 'NO'} | {a.totals.flops / 1e9:,.0f} G | {a.totals.bytes / 1e9:.2f} GB | {colls} | "
              f"{st.times.predicted_s * 1e3:.2f} ms | {100 * share:.1f}% |")


if __name__ == "__main__":
    main()
