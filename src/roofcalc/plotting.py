"""The roofline plot. matplotlib is imported here only, lazily, with the Agg backend and the object API."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import RoofcalcError
from .roofline import Roofline

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
        y = p.achieved_flop_per_s if measured else c.flops / p.predicted_s
        pts.append(dict(name=p.kernel.name, x=c.intensity, y=y, measured=measured,
                        fraction=y / roof.attainable(c.intensity)))
    st = r.step
    step_y = st.achieved_flop_per_s if st.tpot_s is not None else st.flops / st.predicted_lower_s
    pts.append(dict(name="decode step" if r.analysis.workload.phase == "decode" else "prefill step",
                    x=st.intensity, y=step_y, measured=st.tpot_s is not None,
                    fraction=step_y / roof.attainable(st.intensity)))
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
    ys = [p["y"] for p in pts] + [r.nominal.peak_flop_per_s]
    lo_x, hi_x = min(xs) / 4, max(max(xs) * 4, r.nominal.ridge * 20)
    ai = np.logspace(np.log10(lo_x), np.log10(hi_x), 400)

    fig = Figure(figsize=(13, 6.5), layout="constrained")
    ax, key = fig.subplots(1, 2, width_ratios=[2.1, 1])
    nom = r.nominal
    ax.loglog(ai, np.minimum(nom.peak_flop_per_s, nom.bandwidth_bytes_per_s * ai), "--", color=NOMINAL_GREY, lw=1.5,
              label=f"nominal roof, ridge {nom.ridge:.0f} FLOP/byte", gid="nominal-roof")
    if r.measured is not None:
        m = r.measured
        ax.loglog(ai, np.minimum(m.peak_flop_per_s, m.bandwidth_bytes_per_s * ai), "-", color=INDIGO, lw=2.5,
                  label=f"measured roof, ridge {m.ridge:.0f} FLOP/byte", gid="measured-roof")
    ridge = r.roof.ridge
    ax.axvline(ridge, color="0.6", lw=1, ls=":", gid="ridge",
               label=f"{'measured' if r.measured else 'nominal'} ridge {ridge:.0f}")
    lines = []
    clusters: dict[tuple[int, int], list[int]] = {}  # points that would print on top of each other
    for i, p in enumerate(pts, 1):
        face = p["color"] if p["measured"] else "white"
        ax.plot([p["x"]], [p["y"]], "o", ms=7, mfc=face, mec=p["color"], mew=1.5, gid=f"point-{i}")
        clusters.setdefault((round(np.log10(p["x"]) * 25), round(np.log10(p["y"]) * 25)), []).append(i)
        how = "measured" if p["measured"] else "predicted"
        lines.append(f"{i:>2} {p['name'][:24]:<24} AI {p['x']:<7.3g} {_fmt_rate(p['y']):>14} "
                     f"{100 * p['fraction']:>5.3g}% of roof  {how}")
    for members in clusters.values():
        p = pts[members[0] - 1]
        ax.annotate(",".join(map(str, members)), (p["x"], p["y"]), textcoords="offset points", xytext=(6, 4),
                    fontsize=8, color=p["color"])
    ax.set_ylim(min(ys) / 5, max(ys) * 3)
    ax.set_xlim(lo_x, hi_x)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (FLOP/s)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize=8)
    w = r.analysis.workload
    what = (f"decode B={w.batch} S={w.kv_len}" if w.phase == "decode" else f"prefill B={w.batch} T={w.query_tokens}")
    fig.suptitle(f"{r.analysis.shape.name} · {what} · {w.compute_dtype.name} · {r.hardware.name} "
                 f"({'measured' if r.measured else 'nominal'} roof) · {r.step.impl}", fontsize=11)
    key.axis("off")
    key.text(0, 1, "hollow: predicted (floor or launch cost); filled: measured\n\n" + "\n".join(lines),
             va="top", ha="left", family="monospace", fontsize=7.5, transform=key.transAxes)
    return fig


def save_roofline(r: Roofline, path: str) -> None:
    check_plot_path(path)
    fig = roofline_figure(r)
    try:
        fig.savefig(path, dpi=150)
    except OSError as exc:
        raise RoofcalcError(f"--plot {path}: {exc.strerror}") from None
