"""Where the expected value misses on published steps, and whether one factor for every step would mend it.

    python benchmarks/residuals.py              # about 30 s; no network, no kernel tables needed

Every step of the held-out sets as the range's calibration takes them (heldout.CALIBRATION_ONE and
CALIBRATION_SEVERAL) and of benchmarks/published.py, each predicted as those scripts predict it (published.predict:
the datasheet roof, the defaults, the fitted kernel costs). r = log(measured time / predicted time): above 0 the step
ran slower than the expected value said (a request's tokens/s turned into time).

It prints, for one GPU and for several:
* r's median, its median absolute value, and the share within ±30 % (|measured / predicted - 1| <= 0.30), by what
  the step is (decode step, prefill, whole request) and how it runs (--impl), and by source (the sources with
  the most steps);
* the split check of one factor for every step: the median r of half the sources (drawn at random, 20 draws)
  taken as a factor on the predicted time of the other half, and that half's median |r| before and after; and
  what the one-GPU factor, fitted on all held-out steps, would do to published.py's cases.

It changes nothing: it says where the step model's expected value stands and whether a correction of that kind would
be worth making (docs/validation.md, "Held out").
"""

from __future__ import annotations

import argparse
import collections
import math
import random
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

DRAWS = 20  # random halves of the sources in the split check


def residual(c, predicted: float) -> float:
    """log(measured time / predicted time) of a published.Case: a request's unit is tokens/s (more is faster)."""
    return math.log(predicted / c.measured) if c.what == "request" else math.log(c.measured / predicted)


def residuals(cases) -> tuple[list[tuple[object, float]], list[tuple[object, str]]]:
    """(case, r) for every case roofcalc predicts, and (case, reason) for those it refuses."""
    import published
    from roofcalc.errors import RoofcalcError

    done, refused = [], []
    for c in cases:
        try:
            done.append((c, residual(c, published.predict(c)[0])))
        except RoofcalcError as exc:
            refused.append((c, str(exc)))
    return done, refused


def stats(rs: list[float]) -> str:
    within = sum(abs(math.exp(r) - 1) <= 0.30 for r in rs) / len(rs)
    return (f"{len(rs):4d} steps  median r {statistics.median(rs):+.3f}  median |r| "
            f"{statistics.median(abs(r) for r in rs):.3f}  within ±30 % {within:4.0%}")


def source_label(source: str) -> str:
    """A source's name as far as its commit (``... @ 6a25a6d``), which tells two folders of one repository apart."""
    head, at, rest = source.partition(" @ ")
    return (head + at + rest.split()[0].rstrip(":,")) if at and rest else source.split(": ")[0]


def table(rows: list[tuple[object, float]], key, top: int | None = None, width: int = 58) -> list[str]:
    groups = collections.defaultdict(list)
    for c, r in rows:
        groups[key(c)].append(r)
    order = sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))
    return [f"  {str(k)[:width]:{width}s} {stats(v)}" for k, v in order[:top]]


def split_check(rows: list[tuple[object, float]], draws: int = DRAWS) -> tuple[float, float]:
    """Median over ``draws`` random halves of the sources of (the other half's median |r|, its median |r - c|), c the
    median r of the half drawn: what one factor for every step, fitted on some sources, does on others."""
    sources = sorted({c.source for c, _ in rows})
    before, after = [], []
    for seed in range(draws):
        rng = random.Random(seed)
        drawn = set(rng.sample(sources, len(sources) // 2))
        shift = statistics.median(r for c, r in rows if c.source in drawn)
        rest = [r for c, r in rows if c.source not in drawn]
        before.append(statistics.median(abs(r) for r in rest))
        after.append(statistics.median(abs(r - shift) for r in rest))
    return statistics.median(before), statistics.median(after)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", type=int, default=12, help="how many sources to list (those with the most steps)")
    args = p.parse_args()
    import heldout
    import published

    one, refused_one = residuals(heldout.CALIBRATION_ONE)
    several, refused_several = residuals(heldout.CALIBRATION_SEVERAL)
    seen, refused_seen = residuals(published.CASES)
    for title, rows, refused in (("Held-out steps on one GPU", one, refused_one),
                                 ("Held-out steps on several GPUs", several, refused_several)):
        print(f"\n{title}: {stats([r for _, r in rows])}"
              + (f" ({len(refused)} refused: {'; '.join(why[:80] for _, why in refused)})" if refused else ""))
        print("\n by step and --impl:")
        print("\n".join(table(rows, lambda c: f"{c.what}, {c.impl}")))
        print(f"\n by source (the {args.sources} with the most steps):")
        print("\n".join(table(rows, lambda c: source_label(c.source), args.sources, width=88)))
        before, after = split_check(rows)
        print(f"\n one factor for every step, fitted on half the sources ({DRAWS} random halves): the other half's "
              f"median |r| {before:.3f} before, {after:.3f} after")
    shift = statistics.median(r for _, r in one)
    print(f"\nbenchmarks/published.py's {len(seen)} one-GPU cases"
          + (f" ({len(refused_seen)} refused)" if refused_seen else "") + ": median |r| "
          f"{statistics.median(abs(r) for _, r in seen):.3f}; with the one-GPU held-out steps' median r ({shift:+.3f}) "
          f"as a factor: {statistics.median(abs(r - shift) for _, r in seen):.3f}")


if __name__ == "__main__":
    main()
