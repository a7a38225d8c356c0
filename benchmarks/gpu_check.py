"""The CUDA paths of `roofcalc measure` and `roofcalc profile`, checked on a real GPU in one short run.

    python benchmarks/gpu_check.py [--model TinyLlama/TinyLlama-1.1B] [--out gpu.json]

Measures the device (bandwidth, fp32/tf32/fp16/bf16 matmul peaks, launch overhead, and the bf16
kernel curves: matmuls over M, N and K, decode and prefill attention, the host's time per eager op, and
that time on deeper and wider Llamas than measure's own),
fits the step model's GEMM, decode and prefill attention forms on them (each shape held out in turn:
the per-kernel target, median |log| <= 0.10 and 90 % within 30 %, is checked), writes the profile,
then profiles the model in bf16 at batch 1 and 8, context 500, and prints predicted against measured
TPOT (the one step model on the measured profile with its own fitted kernels, and on the datasheet
roof with the shipped fits or defaults). It checks what must hold whatever the GPU:
positive, consistent figures (the copy left of the ridge, the big matmul right of it), every
kernel matched, no weight matmul faster than its floor on the measured roof (10% slack), the
op times of each profiled step within its wall time. Exits 1 on a failed check. About five
minutes on an H100-class GPU.
"""

from __future__ import annotations

import argparse
import sys

from roofcalc.errors import RoofcalcError
from roofcalc.hardware import load_profile
from roofcalc.measure import _host_per_op, closest_nominal, measure, report, write_profile
from roofcalc.profile import profile_model
from roofcalc.roofline import Roof, roofline


HOST_SHAPES = (  # (what, _host_per_op's keywords): measure's own, deeper, wider, and both at the profile's context
    ("measure's: 2 layers, hidden 64", {}),
    ("22 layers (TinyLlama's depth), hidden 64", {"layers": 22}),
    ("2 layers, TinyLlama's width", {"hidden": 2048, "intermediate": 5632, "vocab": 32000}),
    ("22 layers, TinyLlama's width, context 500", {"layers": 22, "hidden": 2048, "intermediate": 5632,
                                                   "vocab": 32000, "context": 500}),
    ("the same, waiting for the device each step", {"layers": 22, "hidden": 2048, "intermediate": 5632,
                                                    "vocab": 32000, "context": 500, "sync": True}),
)


def host_by_shape() -> None:
    """Prints the host's time per eager op timed as `measure` times it, on deeper and wider Llamas: whether the
    2-layer figure holds for a whole model's step (a finding to read, not a check)."""
    import statistics

    import torch

    print("\nhost time per eager op by model shape (median of 3 rounds of 15 steps):")
    for what, kw in HOST_SHAPES:
        one_round, ops = _host_per_op(torch, "cuda", torch.bfloat16, lambda message: None, **kw)
        if one_round is None:
            print("  (transformers is not installed)")
            return
        per = statistics.median(one_round() for _ in range(3))
        print(f"  {what}: {ops} ops, {per * 1e6:.1f} us per op, {per * ops * 1e3:.2f} ms per step")
        del one_round
        torch.cuda.empty_cache()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="TinyLlama/TinyLlama-1.1B")
    p.add_argument("--out", default="gpu.json")
    args = p.parse_args()
    failures = []

    def check(ok: bool, what: str) -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    m = measure("cuda", repeats=7)
    nominal, why = closest_nominal(m, None)
    write_profile(m, nominal, args.out)
    print(report(m, nominal, why, args.out))
    for d in m.matmuls:
        roof = Roof(m.bandwidth_bytes_per_s, m.peak(d).best_rate)
        check(m.peak(d).best_rate > 0 and roof.ridge > 0.125 * 4, f"{d}: y = x + 1 (AI 0.125) far left of ridge")
        n = int(round((m.peak(d).work / 2) ** (1 / 3)))
        ai = 2 * n / (3 * (4 if d in ("fp32", "tf32") else 2))  # 2n³ FLOPs over 3n² elements
        check(ai > roof.ridge, f"{d}: the {n}^3 matmul (AI {ai:.0f}) right of the ridge {roof.ridge:.0f}")
    fits = m.curves.fits if m.curves is not None else None
    check(bool(fits) and set(fits["attention"]) == {"decode_bf16kv", "prefill_bf16kv"} and "bf16" in fits["gemm"],
          "the GEMM, decode and prefill attention forms fitted on this GPU's curves (written to the profile)")
    for cls, sc in (fits or {}).get("scores", {}).items():
        held = sc["held_out"] or sc["in_sample"]
        # the per-kernel target for the shipped fits (median |log| <= 0.10, 90 % within 30 %), on this GPU's own
        check(held["median_abs_log"] <= 0.10 and held["within_30"] >= 0.9,
              f"{cls}: held out median |log| {held['median_abs_log']:.3f}, {100 * held['within_30']:.0f}% within "
              f"30% ({sc['held_out_by']})")
    # the profile says which GPU it is (its compute capability), so the int4 factor it holds is the one --hw gives
    import torch

    from roofcalc.measure import cuda_capability
    from roofcalc.predict import default_model

    cc = cuda_capability(torch)  # None on ROCm: no CUDA capability, the generic factor
    own = load_profile(args.out)
    want = default_model("gpu", compute_capability=cc)
    check(own.compute_capability == cc and own.efficiency.dequant["int4"] == want.dequant["int4"]
          and own.efficiency.dequant_size.get("int4") == want.dequant_size.get("int4"),
          f"the profile records compute capability {cc} and its GPU's int4 factor "
          f"({want.dequant['int4'].expected:.3f}{', by layer size' if want.dequant_size else ''})")
    host_by_shape()
    for batch in (1, 8):
        r = profile_model(args.model, device="cuda", dtype_name="bf16", batch=batch, context=500, steps=20)
        roof = Roof(m.bandwidth_bytes_per_s, m.peak("bf16").best_rate)
        print(f"\n{args.model} bf16 batch {batch}: TPOT {r.tpot_s * 1e3:.3f} ms (TTFT {r.ttft_s * 1e3:.1f} ms), "
              f"kernels {r.kernel_sum_s * 1e3:.3f} ms + other {r.other_s * 1e3:.3f} ms, "
              f"profiled steps {', '.join(f'{x * 1e3:.3f}' for x in r.profiled_steps_s)} ms (each kernel its median)")
        check(r.unmatched == [], f"batch {batch}: every kernel matched (unmatched: {r.unmatched})")
        for k in r.analysis.kernels:
            if k.kind == "matmul":
                floor = roof.floor(k.cost.flops, k.cost.bytes)
                t = r.kernel_times.get(k.name, 0)
                check(t >= 0.9 * floor, f"batch {batch}: {k.name} {t * 1e6:.1f} us >= 0.9 x floor {floor * 1e6:.1f} us")
        check(all(ops <= 1.05 * wall for ops, wall in zip(r.profiled_sums_s, r.profiled_steps_s)),
              f"batch {batch}: each profiled step's op times within its wall time")
        hw = load_profile(args.out)
        # the datasheet roof with the defaults: on a GPU of data/kernel_fits.json its fitted fixed costs and
        # all-reduce, elsewhere those of its generation's measured GPU (the predict line says which)
        for label, rl in (("measured profile, its own fitted kernels", roofline(r.analysis, nominal or hw, measured_profile=hw, impl="hf-eager")),
                          ("datasheet + defaults", roofline(r.analysis, nominal, impl="hf-eager") if nominal else None)):
            if rl is None:
                continue
            st = rl.step
            print(f"  predicted ({label}): {st.predicted_s * 1e3:.3f} ms [{st.predicted_lower_s * 1e3:.3f}, "
                  f"{st.predicted_upper_s * 1e3:.3f}], bound by {st.bound}; measured / predicted "
                  f"{r.tpot_s / st.predicted_s:.2f}")
    print(f"\n{len(failures)} failed check(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RoofcalcError as exc:  # no CUDA device, no torch: one line, as the command line says it
        print(f"gpu_check: {exc}", file=sys.stderr)
        sys.exit(2)
