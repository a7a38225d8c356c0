"""The roofline plot. matplotlib is imported here only, lazily, with the Agg backend and the object API."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import RoofcalcError
from .roofline import Roof, Roofline

INDIGO = "#2b53d8"  # left of the measured ridge: memory-bound (the seed's colours)
AMBER = "#b26a12"  # right of it: compute-bound
NOMINAL_GREY = "0.55"
SUFFIXES = (".png", ".svg")


def check_plot_path(path: str) -> None:
    """Fail before any work if the plot cannot be written."""
    p = Path(path)
    if p.suffix.lower() not in SUFFIXES:
        raise RoofcalcError(f"--plot {path}: the file must end in .png or .svg")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise RoofcalcError(f"--plot {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise RoofcalcError(f"--plot {path}: not writable")


def _fmt_rate(x: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g} {prefix}FLOP/s"
    return f"{x:.3g} FLOP/s"


def plot_points(r: Roofline) -> list[dict]:
    """What the plot marks: every kernel instance, the whole step and every measured point.

    A kernel with a measured time sits at its achieved FLOP/s; one without sits where the model
    predicts it (FLOPs over the larger of its floor and its launch cost), drawn hollow.
    """
    roof = r.roof
    pts = []
    for p in r.step.placements:
        c = p.kernel.cost
        if not c.flops or not c.bytes:
            continue  # zero-FLOP kernels (gathers, copies) have no place on a FLOP/s axis
        measured = p.measured_s is not None
        predicted = c.flops / p.predicted_s
        y = p.achieved_flop_per_s if measured else predicted
        pts.append(dict(name=p.kernel.name, x=c.intensity, y=y, measured=measured,
                        fraction=y / roof.attainable(c.intensity), predicted=predicted if measured else None))
    st = r.step
    step_pred = st.flops / st.predicted_lower_s
    step_y = st.achieved_flop_per_s if st.tpot_s is not None else step_pred
    pts.append(dict(name="decode step" if r.analysis.workload.phase == "decode" else "prefill step",
                    x=st.intensity, y=step_y, measured=st.tpot_s is not None,
                    fraction=step_y / roof.attainable(st.intensity),
                    predicted=step_pred if st.tpot_s is not None else None))
    for p in r.points:
        pts.append(dict(name=p.name, x=p.intensity, y=p.achieved_flop_per_s, measured=True,
                        fraction=p.roof_fraction(roof)))
    for p in pts:
        p["color"] = INDIGO if p["x"] < roof.ridge else AMBER
    return pts


def roofline_figure(r: Roofline):
    """A matplotlib Figure: nominal roof dashed grey, measured roof solid blue, the measured ridge dotted,
    numbered points (indigo left of the ridge, amber right) and a key listing each point's numbers."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.figure import Figure

    pts = plot_points(r)
    xs = [p["x"] for p in pts] + [r.nominal.ridge]
    ys = [p["y"] for p in pts] + [p["predicted"] for p in pts if p.get("predicted")] + [r.nominal.peak_flop_per_s]
    lo_x, hi_x = min(xs) / 4, max(max(xs) * 4, r.nominal.ridge * 20)
    fig = Figure(figsize=(13, 6.5), layout="constrained")
    ax, key = fig.subplots(1, 2, width_ratios=[2.1, 1])
    _draw_roofs(ax, r.nominal, r.measured, lo_x, hi_x, measured_color=INDIGO, measured_lw=2.5, ridge_label=True)
    lines = []
    clusters: dict[tuple[int, int], list[int]] = {}  # points that would print on top of each other
    for i, p in enumerate(pts, 1):
        face = p["color"] if p["measured"] else "white"
        if p.get("predicted"):  # a measured point beside its prediction, joined by a dotted line
            ax.plot([p["x"], p["x"]], [p["predicted"], p["y"]], ":", color=p["color"], lw=1, gid=f"gap-{i}")
            ax.plot([p["x"]], [p["predicted"]], "o", ms=5, mfc="white", mec=p["color"], mew=1, gid=f"predicted-{i}")
        ax.plot([p["x"]], [p["y"]], "o", ms=7, mfc=face, mec=p["color"], mew=1.5, gid=f"point-{i}")
        clusters.setdefault((round(np.log10(p["x"]) * 25), round(np.log10(p["y"]) * 25)), []).append(i)
        how = f"measured, predicted {_fmt_rate(p['predicted'])}" if p.get("predicted") else \
            ("measured" if p["measured"] else "predicted")
        lines.append(f"{i:>2} {p['name'][:24]:<24} AI {p['x']:<7.3g} {_fmt_rate(p['y']):>14} "
                     f"{100 * p['fraction']:>5.3g}% of roof, {how}")
    for members in clusters.values():
        p = pts[members[0] - 1]
        ax.annotate(",".join(map(str, members)), (p["x"], p["y"]), textcoords="offset points", xytext=(6, 4),
                    fontsize=8, color=p["color"])
    ax.set_ylim(min(ys) / 5, max(ys) * 3)
    ax.legend(loc="lower right", fontsize=8)
    w = r.analysis.workload
    what = (f"decode B={w.batch} S={w.kv_len}" if w.phase == "decode" else f"prefill B={w.batch} T={w.query_tokens}")
    fig.suptitle(f"{r.analysis.shape.name} · {what} · {w.compute_dtype.name} · {r.hardware.name} "
                 f"({'measured' if r.measured else 'nominal'} roof) · {r.step.impl}", fontsize=11)
    key.axis("off")
    key.text(0, 1, "hollow: predicted (floor or launch cost); filled: measured, joined to its prediction\n\n"
             + "\n".join(lines),
             va="top", ha="left", family="monospace", fontsize=7.5, transform=key.transAxes)
    return fig


def save_roofline(r: Roofline, path: str) -> None:
    save_plot(r, path)


def save_plot(r, path: str) -> None:
    """The roofline of one step, or the two panels of a sweep (:class:`roofcalc.sweep.Sweep`)."""
    check_plot_path(path)
    fig = roofline_figure(r) if isinstance(r, Roofline) else sweep_figure(r)
    try:
        fig.savefig(path, dpi=150)
    except OSError as exc:
        raise RoofcalcError(f"--plot {path}: {exc.strerror}") from None


# --------------------------------------------------------------------------- sweeps

SERIES = ("#2b53d8", "#b26a12", "#1a8a5a", "#b8326e", "#6b4fbb", "#4a7d8c")  # one colour per context or prompt
MAX_SERIES = len(SERIES)


def _pick(n: int) -> list[int]:
    """At most MAX_SERIES indices, evenly spread, first and last included."""
    if n <= MAX_SERIES:
        return list(range(n))
    return sorted({round(i * (n - 1) / (MAX_SERIES - 1)) for i in range(MAX_SERIES)})


def _draw_roofs(ax, nominal: Roof, measured: Roof | None, lo_x: float, hi_x: float, *,
                measured_color: str = "0.15", measured_lw: float = 2, ridge_label: bool = False) -> None:
    """Nominal roof dashed grey, measured roof solid, the verdict roof's ridge dotted; log axes."""
    import numpy as np

    ai = np.logspace(np.log10(lo_x), np.log10(hi_x), 400)
    ax.loglog(ai, np.minimum(nominal.peak_flop_per_s, nominal.bandwidth_bytes_per_s * ai), "--", color=NOMINAL_GREY,
              lw=1.5, label=f"nominal roof, ridge {nominal.ridge:.0f} FLOP/byte", gid="nominal-roof")
    if measured is not None:
        ax.loglog(ai, np.minimum(measured.peak_flop_per_s, measured.bandwidth_bytes_per_s * ai), "-",
                  color=measured_color, lw=measured_lw, label=f"measured roof, ridge {measured.ridge:.0f} FLOP/byte",
                  gid="measured-roof")
    ridge = (measured or nominal).ridge
    label = f"{'measured' if measured else 'nominal'} ridge {ridge:.0f}" if ridge_label else None
    ax.axvline(ridge, color="0.6", lw=1, ls=":", gid="ridge", label=label)
    ax.set_xlim(lo_x, hi_x)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (FLOP/s)")
    ax.grid(True, which="both", alpha=0.25)


def sweep_figure(sw):
    """Left: every step of the sweep on the roofline (one line per context or prompt, a point per batch;
    hollow where it does not fit in memory). Right: step time and tokens/s against batch (decode),
    time to first token against prompt (prefill), or TTFT, TPOT and tokens/s (request); the memory
    limit marked."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.figure import Figure

    g = sw.grid
    fits = g.fits(sw.capacity_bytes)
    fig = Figure(figsize=(14, 6), layout="constrained")
    left, right = fig.subplots(1, 2)
    w = sw.dtypes
    mem = "memory unknown" if sw.capacity_bytes is None else f"{sw.capacity_bytes / 1e9:.4g} GB"
    fig.suptitle(f"{sw.shape.name} · {sw.kind} sweep · {w.compute_dtype.name} · {sw.hardware.name} "
                 f"({'measured' if sw.measured else 'nominal'} roof, {mem}) · {sw.impl}", fontsize=11)
    if sw.kind == "request":
        return _request_panels(fig, left, right, sw, fits)

    decode = sw.kind == "decode"
    lengths = g.contexts if decode else g.prompts
    step = g.step_s if decode else g.ttft_s
    achieved = g.flops / step
    inten = g.intensity
    xs = np.concatenate([inten.ravel(), [sw.nominal.ridge]])
    _draw_roofs(left, sw.nominal, sw.measured, xs.min() / 4, max(xs.max() * 4, sw.nominal.ridge * 20))
    letter = "S" if decode else "T"
    labelled: list[tuple[float, float]] = []  # (log10 x, log10 y) of the labels drawn so far
    for n, j in enumerate(_pick(len(lengths))):
        c = SERIES[n]
        left.plot(inten[:, j], achieved[:, j], "-", color=c, lw=1, alpha=0.6)
        for i, b in enumerate(g.batches):
            face = c if fits[i, j] else "white"
            left.plot([inten[i, j]], [achieved[i, j]], "o", ms=6, mfc=face, mec=c, mew=1.3, gid=f"point-{i}-{j}")
            at = (float(np.log10(inten[i, j])), float(np.log10(achieved[i, j])))
            if all(abs(at[0] - x) > 0.15 or abs(at[1] - y) > 0.12 for x, y in labelled):  # no label on a label
                labelled.append(at)
                left.annotate(f"B={b}", (inten[i, j], achieved[i, j]), textcoords="offset points", xytext=(4, -10),
                              fontsize=7, color=c)
        left.plot([], [], "o-", color=c, label=f"{letter}={lengths[j]:,}")
    left.set_ylim(achieved.min() / 5, max(achieved.max(), sw.nominal.peak_flop_per_s) * 3)
    left.legend(loc="lower right", fontsize=8, title="hollow: does not fit", title_fontsize=7)
    left.set_title("each step on the roofline (predicted FLOP/s = FLOPs / step time)", fontsize=9)

    if decode:
        tps = g.tokens_per_s
        twin = right.twinx()
        for n, j in enumerate(_pick(len(lengths))):
            c = SERIES[n]
            right.loglog(g.batches, step[:, j] * 1e3, "-o", color=c, ms=4, label=f"step ms, S={lengths[j]:,}")
            twin.loglog(g.batches, tps[:, j], "--s", color=c, ms=3, alpha=0.8)
            v = sw.verdicts[j] if j < len(sw.verdicts) else None
            if v is not None and v.max_batch:
                right.axvline(v.max_batch, color=c, ls=":", lw=1.5, gid=f"memory-limit-{j}")
                right.annotate(f"memory limit B={v.max_batch:,}", (v.max_batch, 1), xycoords=("data", "axes fraction"),
                               rotation=90, va="top", ha="right", fontsize=7, color=c)
        right.set_xlabel("batch B")
        right.set_ylabel("step time = time per output token (ms), solid")
        twin.set_ylabel("tokens/s, all sequences (dashed)")
        right.set_title("step time and tokens/s against batch", fontsize=9)
    else:
        for i in _pick(len(g.batches)):
            c = SERIES[_pick(len(g.batches)).index(i)]
            right.loglog(g.prompts, step[i, :] * 1e3, "-o", color=c, ms=4, label=f"B={g.batches[i]:,}")
            bad = ~fits[i, :]
            if bad.any():
                right.plot(g.prompts[bad], step[i, bad] * 1e3, "x", color="red", ms=8)
        right.set_xlabel("prompt length T (tokens)")
        right.set_ylabel("time to first token (ms); red x: does not fit")
        right.set_title("prefill: time to first token against prompt length", fontsize=9)
    right.grid(True, which="both", alpha=0.25)
    right.legend(loc="upper left", fontsize=8)
    return fig


def _request_panels(fig, left, right, sw, fits):
    g = sw.grid
    tpot = g.mean_tpot_s
    for n, j in enumerate(_pick(len(g.prompts))):
        c = SERIES[n]
        left.loglog(g.batches, g.ttft_s[:, j] * 1e3, "-o", color=c, ms=4, label=f"TTFT, P={g.prompts[j]:,}")
        if tpot is not None:
            left.loglog(g.batches, tpot[:, j] * 1e3, "--s", color=c, ms=3, label=f"mean TPOT, P={g.prompts[j]:,}")
        right.loglog(g.batches, g.tokens_per_s[:, j], "-o", color=c, ms=4, label=f"P={g.prompts[j]:,}")
        bad = ~fits[:, j]
        if bad.any():
            right.plot(g.batches[bad], g.tokens_per_s[bad, j], "x", color="red", ms=8)
    left.set_xlabel("batch B")
    left.set_ylabel("ms")
    left.set_title(f"time to first token and mean time per output token ({g.generate} tokens)", fontsize=9)
    right.set_xlabel("batch B")
    right.set_ylabel("output tokens/s over the whole request; red x: does not fit")
    right.set_title("request throughput against batch", fontsize=9)
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(loc="best", fontsize=8)
    return fig
