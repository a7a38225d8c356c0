"""Calibrate the step's range: the widths in log below and above the prediction that hold 80 % of measured steps.

    python benchmarks/calibrate.py --data /tmp/aic/x/aiconfigurator_core    # writes src/roofcalc/data/calibration.json

Three sources of measured steps, each run scored by the side it falls on and the least width on that side whose
range holds it (the range: the prediction x e^above above; each step's floors or its prediction x e^-below, the
larger, below; a step faster than its floors no width holds):
* the serving runs benchmarks/silicon.py predicts (NVIDIA AIConfigurator 0.12's silicon_sample.csv: vLLM, SGLang
  and TensorRT-LLM on H100, H200 and B200, 910 runs; silicon.band_needed);
* the published engine measurements benchmarks/published.py predicts (25 on one GPU, 11 on several; seen while
  choosing defaults);
* the held-out sets of benchmarks/heldout.py as each set is run (heldout.CALIBRATION_ONE and CALIBRATION_SEVERAL:
  174 on one GPU, 131 on several, each first run before it calibrated anything; from then on seen).

For each kind of GPU (one measured itself, whose kernels its own tables fitted; one that takes the nearest measured
GPU's fits, scaled by its datasheet: hardware.Hardware.fits) and for a step on one GPU and on several, the range is
the narrowest (least below + above) that holds, in every source, split conformal prediction's share:
ceil((n + 1) x 80 %) of the source's n runs of that kind (conformal_range), so that a population unlike one of them
(the serving runs are predicted more closely than published figures of older engines) is not promised a range it
would not get. Calibrating each kind apart (Mondrian conformal prediction: the share holds within each) keeps a GPU
measured itself from paying for the spread of those that are not. It need not be symmetric: published steps run
slower than predicted far more often than faster. A new held-out set is the check (and `--check`: the rule
calibrated on half the held-out sets, the share of the other half it holds); run this again whenever the step
model's predictions move.
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

CALIBRATION = ROOT / "src" / "roofcalc" / "data" / "calibration.json"
COVERAGE = 0.8  # the share of measured steps the range is to hold (issue: "at least 80 % inside")
GROUPS = ("one_gpu", "several_gpus")
KINDS = ("measured", "nearest")  # a GPU measured itself, one that takes the nearest measured GPU's fits (Hardware.fits)


BELOW, ABOVE = "below", "above"  # the side of the prediction a run falls on (slower: above)


def conformal_count(n: int, coverage: float = COVERAGE) -> int:
    """Split conformal prediction's rank: ceil((n + 1) × coverage) of n calibration runs held. For one fixed family
    of nested ranges that holds at least ``coverage`` of a new run exchangeable with them; the range here is also
    chosen on these runs (its two widths), so it is a target, not a guarantee: the held-out sets' split check
    (--check) says how far it carries."""
    k = math.ceil((n + 1) * coverage)
    if k > n:
        raise ValueError(f"{n} runs are too few for a {coverage:.0%} range")
    return k


MIN_RUNS = next(n for n in range(1, 10) if math.ceil((n + 1) * COVERAGE) <= n)  # 4: the fewest runs an 80 % range
# can be calibrated on


def conformal_range(sources: dict[str, list[tuple[str, float]]], coverage: float = COVERAGE) -> tuple[float, float]:
    """The narrowest range (least below + above, in log) that holds, in every source, conformal_count of its runs.
    A run is (side, need): it is held where the range's width on its side is at least need (inf: none holds it).
    For each candidate below width (0 or a run's need), each source's above width is the least that makes up its
    count; the range takes the largest of those, and the pair with the least sum (a tie: the lesser below)."""
    need = {name: (sorted(v for side, v in runs if side == BELOW), sorted(v for side, v in runs if side == ABOVE),
                   conformal_count(len(runs), coverage)) for name, runs in sources.items()}
    best = (math.inf, math.inf, math.inf)
    for below in sorted({0.0, *(v for lo, _, _ in need.values() for v in lo if math.isfinite(v))}):
        above = 0.0
        for lo, hi, k in need.values():
            rest = k - sum(v <= below for v in lo)  # what the runs above the prediction must make up
            above = max(above, hi[rest - 1] if 0 < rest <= len(hi) else 0.0 if rest <= 0 else math.inf)
        if below + above < best[0]:
            best = (below + above, below, above)
    return best[1], best[2]


def held(runs: list[tuple[str, float]], below: float, above: float) -> int:
    """How many of ``runs`` the range (below, above) holds."""
    return sum(v <= (below if side == BELOW else above) for side, v in runs)


@contextlib.contextmanager
def with_band(below: float, above: float):
    """The step model with every kind's and both GPU counts' range at (below, above) (in the calibration file's
    place, which predict reads once), the file's own restored after."""
    import roofcalc.predict as P

    saved = P._DATA.get("calibration.json")
    P._DATA["calibration.json"] = {"coverage": COVERAGE, "bands": {
        kind: {g: {BELOW: below, ABOVE: above} for g in GROUPS} for kind in KINDS}}
    try:
        yield
    finally:
        if saved is None:
            P._DATA.pop("calibration.json")
        else:
            P._DATA["calibration.json"] = saved


def case_score(c) -> tuple[str, float] | None:
    """A published or held-out case's side and need: above, log(measured / predicted) of its time (its printed
    range's upper end is the prediction x e^above, a sum of steps' too); below, the least width whose printed
    range's lower end (each step's floors or prediction x e^-below, the larger, summed) comes down to it, by
    bisection; inf where none up to e^4 does (faster than its floors). None: a step with no calibrated range."""
    import published

    tokens = c.what == "request"  # tokens/s: a slower run is a smaller figure

    def inside(below: float, above: float) -> bool:
        with with_band(below, above):
            _, lo, hi = published.predict(c)
        return lo <= c.measured <= hi

    with with_band(0.0, 0.0):
        p, lo0, hi0 = published.predict(c)
    if not math.isclose(lo0 if tokens else hi0, p, rel_tol=1e-9):  # no calibrated range (a GPU without fitted
        return None  # kernels: the floors to the pessimistic ends), which the calibration does not describe
    slower = c.measured <= p if tokens else c.measured >= p
    if slower:
        need = abs(math.log(c.measured / p))
        if not inside(0.0, need + 1e-9):  # the upper end is not the prediction x e^above: a step model change
            raise AssertionError(f"{c.model} ({c.note}): the range's upper end is not predicted x e^above")
        return ABOVE, need
    lo, hi = 0.0, 4.0
    if not inside(hi, 0.0):
        return BELOW, math.inf
    for _ in range(24):  # to 4 / 2^24: well inside the 4th decimal the range is written to
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if inside(mid, 0.0) else (mid, hi)
    return BELOW, hi


def kind_of(hw: str) -> str:
    """A GPU's kind for the range (KINDS): "measured" where its own tables fitted its kernels, "nearest" where it
    takes the nearest measured GPU's (Hardware.fits)."""
    from roofcalc.hardware import find_hardware

    return find_hardware(hw).fits[1]


def case_scores(one, several) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """Each case's (side, need), by the kind of its GPU (KINDS) and by GPU count; a case roofcalc refuses, or one on
    a GPU without fitted kernels (no calibrated range), is left out."""
    from roofcalc.errors import RoofcalcError

    import collections

    out: dict = {kind: {g: [] for g in GROUPS} for kind in KINDS}
    refused: collections.Counter = collections.Counter()
    for group, cases in (("one_gpu", one), ("several_gpus", several)):
        for c in cases:
            try:
                score = case_score(c)
            except RoofcalcError as exc:
                refused[str(exc).split(" (")[0][:100]] += 1
                continue
            if score is not None:
                out[kind_of(c.hw)][group].append(score)
    if refused:  # said, so that a run without the tracing extra (every traced case refused) is seen for what it is
        print(f"{sum(refused.values())} case(s) refused, left out: "
              + "; ".join(f"{n} x {why}" for why, n in refused.most_common(5)), file=sys.stderr)
    return out


def published_scores() -> dict:
    import published

    return case_scores(published.CASES, published.CASES_MULTI)


def heldout_scores() -> dict:
    import heldout

    return case_scores(heldout.CALIBRATION_ONE, heldout.CALIBRATION_SEVERAL)


def kind_runs(runs: dict[str, list], pooled: dict[str, list]) -> tuple[dict[str, list], bool]:
    """The sources a kind's range is calibrated on, and whether they are every kind's (``pooled``): those with
    enough runs of the kind for an 80 % range (MIN_RUNS: a source that lacks the kind, as the serving runs lack GPUs
    of the nearest kind, or holds too few runs of it, is left to the others), else, where none has, every kind's
    runs of the sources with enough of them. ValueError where no source has enough runs even then."""
    enough = {name: r for name, r in runs.items() if len(r) >= MIN_RUNS}
    if enough:
        return enough, False
    enough = {name: r for name, r in pooled.items() if len(r) >= MIN_RUNS}
    if not enough:
        raise ValueError(f"no source has {MIN_RUNS} runs for an {COVERAGE:.0%} range")
    return enough, True


def kind_range(runs: dict[str, list], pooled: dict[str, list]) -> tuple[float, float]:
    """conformal_range over a kind's sources (kind_runs)."""
    return conformal_range(kind_runs(runs, pooled)[0])


def split_check(serving: dict, published: dict) -> None:
    """How the rule carries to sets it did not see: the range calibrated, for each kind of GPU, on the serving runs,
    the published cases and half the held-out sets, and the share of the other half's steps it holds (odd sets
    against even ones, the first half against the second, and the other way round)."""
    import heldout

    scores = {n: case_scores(one, several) for n, (one, several) in heldout.CALIBRATION_SETS.items()}
    sets = sorted(scores)
    halves = (tuple(sets[0::2]), tuple(sets[1::2]), tuple(sets[:len(sets) // 2]), tuple(sets[len(sets) // 2:]))
    for fit in halves:
        rest = tuple(n for n in scores if n not in fit)
        for g in GROUPS:
            inside = total = 0
            parts = []
            runs = {kind: {"serving": serving[kind][g], "published": published[kind][g],
                           "heldout": [r for n in fit for r in scores[n][kind][g]]} for kind in KINDS}
            pooled = {name: [r for kind in KINDS for r in runs[kind][name]] for name in runs[KINDS[0]]}
            for kind in KINDS:
                other = [r for n in rest for r in scores[n][kind][g]]
                if not other:
                    continue
                below, above = kind_range(runs[kind], pooled)
                inside, total = inside + held(other, below, above), total + len(other)
                parts.append(f"{kind} x{math.exp(-below):.3f} to x{math.exp(above):.3f} (width "
                             f"{math.exp(below + above):.2f}) holds {held(other, below, above)} of {len(other)}")
            print(f"fitted with sets {fit}, {g}: sets {rest}: {inside} of {total} inside; " + "; ".join(parts))


def serving_scores(data: Path) -> dict:
    """Each serving run's side and least width (silicon.band_needed), by the kind of its GPU and GPU count."""
    import silicon

    kept, _ = silicon.runs(data / "systems" / "silicon_sample.csv")
    cache: dict = {}
    out: dict = {kind: {g: [] for g in GROUPS} for kind in KINDS}
    for r in kept:
        *_, parts = silicon.predict(r, data / "model_configs", cache)
        side = ABOVE if r.tpot_s >= sum(p for p, _ in parts) else BELOW
        out[kind_of(silicon.SYSTEMS[r.system])]["one_gpu" if r.tp == 1 else "several_gpus"].append(
            (side, silicon.band_needed(r.tpot_s, parts)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the unzipped aiconfigurator_core folder")
    ap.add_argument("--check", action="store_true", help="write nothing: calibrate on half the held-out sets and "
                    "report the share of the other half's steps the range holds (split_check)")
    args = ap.parse_args()
    csv = args.data / "systems" / "silicon_sample.csv"
    if not csv.is_file():
        sys.exit(f"calibrate.py: no systems/silicon_sample.csv under {args.data}")
    t0 = time.perf_counter()
    with with_band(0.0, 0.0):  # the predictions do not depend on the range
        serving = serving_scores(args.data)
    if args.check:
        split_check(serving, published_scores())
        return
    sources = {"serving": serving, "published": published_scores(), "heldout": heldout_scores()}
    print(f"scored every run in {time.perf_counter() - t0:.0f} s")
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    bands: dict = {}
    for kind in KINDS:
        for g in GROUPS:
            own_runs = {name: s[kind][g] for name, s in sources.items()}
            runs, pooled = kind_runs(own_runs, {name: [r for k in KINDS for r in s[k][g]]
                                                for name, s in sources.items()})
            below, above = conformal_range(runs)
            if math.isinf(below + above):
                sys.exit(f"calibrate.py: more than {1 - COVERAGE:.0%} of a source's {kind} {g} runs no range holds "
                         f"(below their floors): the step model, not the range, needs mending")
            below, above = (math.ceil(x * 1e4) / 1e4 for x in (below, above))  # rounded up: edge runs stay inside
            per = {}
            for name, r in runs.items():
                own = conformal_range({name: r})
                per[name] = {"runs": len(r), "held": held(r, below, above), "needed": conformal_count(len(r)),
                             "slower": sum(side == ABOVE for side, _ in r),
                             "not_held": sum(math.isinf(v) for _, v in r),
                             "own": {BELOW: round(own[0], 4), ABOVE: round(own[1], 4)}}
            # pooled: each source's runs of this kind among every kind's that set the range; else the runs of a
            # source too few to calibrate on (fewer than MIN_RUNS), left out
            counts = {name: len(r) for name, r in own_runs.items() if r and (pooled or len(r) < MIN_RUNS)}
            band = {BELOW: below, ABOVE: above, "sources": per}
            if counts:
                band["pooled, this kind's runs" if pooled else "left out, too few runs"] = counts
            bands.setdefault(kind, {})[g] = band
            print(f"{kind} {g}: x{math.exp(-below):.3f} to x{math.exp(above):.3f} (width "
                  f"{math.exp(below + above):.2f}); "
                  + ", ".join(f"{k} holds {v['held']} of {v['runs']} (needs {v['needed']}; its own "
                              f"x{math.exp(-v['own'][BELOW]):.2f} to x{math.exp(v['own'][ABOVE]):.2f})"
                              for k, v in per.items()))
    doc = {"coverage": COVERAGE,
           "sources": {"serving": "NVIDIA AIConfigurator 0.12 (aiconfigurator-core, Apache-2.0), "
                                  "systems/silicon_sample.csv: the aggregated serving runs benchmarks/silicon.py "
                                  "predicts (vLLM, SGLang and TensorRT-LLM on H100, H200 and B200; Llama-3.1 8B and "
                                  "70B, Qwen3-32B; 1 to 8 GPUs), sha256 "
                                  + hashlib.sha256(csv.read_bytes()).hexdigest()[:16],
                       "published": "benchmarks/published.py: published engine measurements (seen while choosing "
                                    "defaults)",
                       "heldout": "benchmarks/heldout.py: the held-out sets as each set is run (CALIBRATION_ONE, "
                                  "CALIBRATION_SEVERAL), each first run before it calibrated anything"},
           "kinds": {"measured": "a GPU whose kernels its own measured tables fitted",
                     "nearest": "a GPU that takes the nearest measured GPU's fits, scaled by its datasheet"},
           "rule": "per kind of GPU (Mondrian: each kind apart) and GPU count, the narrowest range (least below + "
                   "above) that holds, in every source, ceil((n+1) x coverage) of its n runs of that kind (split "
                   "conformal prediction); a run is held where the range's width on its side (above: predicted x "
                   "e^above; below: each step's max(floors, predicted x e^-below)) reaches the least that holds it "
                   "(inf below the floors); a source with fewer than four runs of a kind (too few for 80 %) is left "
                   "out of its range, and a kind no source has four runs of takes every kind's runs together",
           "step_model": f"roofcalc at {commit or 'unknown commit'}", "date": datetime.date.today().isoformat(),
           "bands": bands}
    CALIBRATION.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CALIBRATION.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
