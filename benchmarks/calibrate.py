"""Calibrate the step's range: the half-width in log around the prediction that holds 80 % of measured steps.

    python benchmarks/calibrate.py --data /tmp/aic/x/aiconfigurator_core    # writes src/roofcalc/data/calibration.json

Two sources of measured steps, each scored run by run with the least band whose range holds it (the range: the
prediction x e^band above; each step's floors or its prediction x e^-band, the larger, below; a step faster
than its floors no band holds):
* the serving runs benchmarks/silicon.py predicts (NVIDIA AIConfigurator 0.12's silicon_sample.csv: vLLM, SGLang
  and TensorRT-LLM on H100, H200 and B200, 910 runs; silicon.band_needed);
* the published engine measurements benchmarks/published.py predicts (25 on one GPU, 11 on several; seen while
  choosing defaults), by bisection on the range each prints.

For a step on one GPU and for one on several, the band is the larger of the two sources' split-conformal
quantiles (conformal_band): the least band that holds 80 % of each source's runs, so that a population unlike
one of them (the serving runs are predicted more closely than published figures of older engines) is not
promised a range it would not get. The held-out sets (benchmarks/heldout.py) are the check; run this again
whenever the step model's predictions move.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

CALIBRATION = ROOT / "src" / "roofcalc" / "data" / "calibration.json"
COVERAGE = 0.8  # the share of measured steps the range is to hold (issue: "at least 80 % inside")
GROUPS = ("one_gpu", "several_gpus")


def conformal_band(scores: list[float], coverage: float = COVERAGE) -> float:
    """The half-width b in log of the range that holds ``coverage`` of steps like these: split conformal
    prediction's quantile, the ceil((n + 1) × coverage)-th smallest score of the n calibration runs (a run's score:
    the least b whose range holds it), which holds at least ``coverage`` of a new run exchangeable with them."""
    ranked = sorted(scores)
    k = math.ceil((len(ranked) + 1) * coverage)
    if k > len(ranked):
        raise ValueError(f"{len(ranked)} runs are too few for a {coverage:.0%} range")
    return ranked[k - 1]


@contextlib.contextmanager
def with_band(band: float):
    """The step model with both bands at ``band`` (in the calibration file's place, which predict reads once),
    the file's own restored after."""
    import roofcalc.predict as P

    saved = P._DATA.get("calibration.json")
    P._DATA["calibration.json"] = {"coverage": COVERAGE, "bands": {g: {"band": band} for g in GROUPS}}
    try:
        yield
    finally:
        if saved is None:
            P._DATA.pop("calibration.json")
        else:
            P._DATA["calibration.json"] = saved


def published_scores() -> dict[str, list[float]]:
    """Each published case's least band whose printed range holds its measurement (bisection: the range widens
    with the band), by GPU count; inf where none up to e^±4 does (faster than its floors, or 55x off)."""
    import published

    out: dict[str, list[float]] = {g: [] for g in GROUPS}
    for group, cases in (("one_gpu", published.CASES), ("several_gpus", published.CASES_MULTI)):
        for c in cases:
            def inside(b: float) -> bool:
                with with_band(b):
                    _, lo, hi = published.predict(c)
                return lo <= c.measured <= hi

            lo, hi = 0.0, 4.0
            if not inside(hi):
                out[group].append(math.inf)
                continue
            for _ in range(24):  # to 4 / 2^24: well inside the 4th decimal the band is written to
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if inside(mid) else (mid, hi)
            out[group].append(hi)
    return out


def serving_scores(data: Path) -> dict[str, list[float]]:
    """Each serving run's least band (silicon.band_needed), by GPU count."""
    import silicon

    kept, _ = silicon.runs(data / "systems" / "silicon_sample.csv")
    cache: dict = {}
    out: dict[str, list[float]] = {g: [] for g in GROUPS}
    for r in kept:
        *_, parts = silicon.predict(r, data / "model_configs", cache)
        out["one_gpu" if r.tp == 1 else "several_gpus"].append(silicon.band_needed(r.tpot_s, parts))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the unzipped aiconfigurator_core folder")
    args = ap.parse_args()
    csv = args.data / "systems" / "silicon_sample.csv"
    if not csv.is_file():
        sys.exit(f"calibrate.py: no systems/silicon_sample.csv under {args.data}")
    with with_band(0.0):  # the predictions do not depend on the band
        serving = serving_scores(args.data)
    sources = {"serving": serving, "published": published_scores()}
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    bands = {}
    for g in GROUPS:
        per = {name: {"runs": len(s[g]), "band": conformal_band(s[g]), "not_held": sum(map(math.isinf, s[g]))}
               for name, s in sources.items()}
        band = max(v["band"] for v in per.values())
        if math.isinf(band):
            sys.exit(f"calibrate.py: more than {1 - COVERAGE:.0%} of a source's {g} runs no band holds (below their "
                     f"floors): the step model, not the range, needs mending")
        bands[g] = {"band": math.ceil(band * 1e4) / 1e4,  # rounded up: the quantile's own run stays inside
                    "from": max(per, key=lambda k: per[k]["band"]),
                    "sources": {k: {**v, "band": round(v["band"], 4)} for k, v in per.items()}}
        print(f"{g}: " + ", ".join(f"{k} ±{v['band']:.4f} ({v['runs']} runs)" for k, v in per.items())
              + f" -> ±{bands[g]['band']:.4f}")
    doc = {"coverage": COVERAGE,
           "sources": {"serving": "NVIDIA AIConfigurator 0.12 (aiconfigurator-core, Apache-2.0), "
                                  "systems/silicon_sample.csv: the aggregated serving runs benchmarks/silicon.py "
                                  "predicts (vLLM, SGLang and TensorRT-LLM on H100, H200 and B200; Llama-3.1 8B and "
                                  "70B, Qwen3-32B; 1 to 8 GPUs), sha256 "
                                  + hashlib.sha256(csv.read_bytes()).hexdigest()[:16],
                       "published": "benchmarks/published.py: published engine measurements (seen while choosing "
                                    "defaults)"},
           "rule": "per GPU count, the larger of the sources' split-conformal quantiles: the ceil((n+1) x coverage)-th "
                   "smallest score of a source's n runs, a run's score the least band whose range (predicted x "
                   "e^band above, each step's max(floors, predicted x e^-band) below) holds it (inf below the floors)",
           "step_model": f"roofcalc at {commit or 'unknown commit'}", "date": datetime.date.today().isoformat(),
           "bands": bands}
    CALIBRATION.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CALIBRATION.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
