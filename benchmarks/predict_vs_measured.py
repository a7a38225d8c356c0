"""Predicted against measured decode steps on this machine, side by side in one run.

    python benchmarks/predict_vs_measured.py [--context 256] [--steps 8] [--rounds 3]

Runs `roofcalc measure` once (the roof and the kernel curves), then `roofcalc profile` for
TinyLlama-1.1B, SmolLM2-135M and Qwen3-0.6B (config in benchmarks/configs/, from the model
card's config.json) in fp32 at batch 1 and 8, and puts each step's `predicted_s` (and its range)
beside the measured TPOT: the median over --rounds profiles of each case, interleaved (this is a
shared, noisy VM; one profile of a host-bound small model can move by a third). The profile never
feeds the prediction here (no --update): the prediction uses only what `measure` found. About five
minutes; needs the [torch] extra.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
MODELS = ("TinyLlama/TinyLlama-1.1B", "HuggingFaceTB/SmolLM2-135M", str(HERE / "configs" / "qwen3-0.6b.json"))
BATCHES = (1, 8)


def run(args: list[str]) -> str:
    out = subprocess.run([sys.executable, "-m", "roofcalc", *args], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"roofcalc {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        profile = str(Path(tmp) / "me.json")
        t0 = time.perf_counter()
        run(["measure", "--out", profile, "-q"])
        print(f"measure: {time.perf_counter() - t0:.0f} s", flush=True)
        cases = [(model, batch) for model in MODELS for batch in BATCHES]
        docs: dict = {case: [] for case in cases}
        for _ in range(args.rounds):
            for model, batch in cases:
                docs[(model, batch)].append(json.loads(run(
                    ["profile", model, "--hw-file", profile, "--batch", str(batch), "--context", str(args.context),
                     "--steps", str(args.steps), "--prefill", "skip", "-q", "--format", "json"])))
        rows = []
        for model, batch in cases:
            runs = docs[(model, batch)]
            st = runs[0]["step"]  # the prediction is the same in every round: one measured profile
            measured = statistics.median(d["profile"]["tpot_s"] for d in runs)
            spread = ", ".join(f"{d['profile']['tpot_s'] * 1e3:.1f}" for d in runs)
            name = runs[0]["model"]["name"].split("/")[-1]
            rows.append((name, batch, st["predicted_s"], st["predicted_lower_s"], st["predicted_upper_s"],
                         measured, measured / st["predicted_s"] - 1))
            print(f"{name:28s} B={batch:<2d} predicted {st['predicted_s'] * 1e3:7.1f} ms "
                  f"[{st['predicted_lower_s'] * 1e3:6.1f}, {st['predicted_upper_s'] * 1e3:6.1f}]  "
                  f"measured {measured * 1e3:7.1f} ms ({spread})  error {100 * rows[-1][-1]:+5.1f}%", flush=True)
    errors = [abs(r[-1]) for r in rows]
    inside = sum(r[3] <= r[5] <= r[4] for r in rows)
    print(f"median |error| {100 * statistics.median(errors):.1f}%, worst {100 * max(errors):.1f}%, "
          f"{inside} of {len(rows)} inside [lower, upper]  (goal: median <= 15%, worst <= 30%)")


if __name__ == "__main__":
    main()
