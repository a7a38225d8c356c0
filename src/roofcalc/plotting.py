"""The roofline plot. matplotlib is imported here only, lazily, with its object API (no pyplot): Agg draws and saves,
and the session's own backend (a notebook's inline one) is never switched."""

from __future__ import annotations

import math

from .errors import RoofcalcError
from .roofline import Roof, Roofline
from .units import capacity, ratio, si, sig
from .units import ridge as ridge_words

INDIGO = "#2b53d8"  # left of the measured ridge: memory-bound (the seed's colours)
AMBER = "#b26a12"  # right of it: compute-bound
RED = "#c62828"  # a flagged kernel's ring: measured above 3x the least it can take (Placement.flagged)
NOMINAL_GREY = "0.55"
RIDGE = "0.1"  # the ridge dotted near-black: its legend entry differs from the grey nominal roof in colour too
SUFFIXES = (".png", ".svg")


def check_plot_path(path: str) -> None:
    """Fail before any work if the plot cannot be written."""
    from .inputs import check_writable

    check_writable(path, "--plot", SUFFIXES)


def _fmt_rate(x: float) -> str:
    return si(x, "FLOP/s")


def plot_points(r: Roofline) -> list[dict]:
    """What the plot marks: every kernel instance, the whole step and every measured point.

    A kernel with a measured time sits at its achieved FLOP/s; one without sits where the model
    predicts it (FLOPs over its expected time), drawn hollow.
    """
    roof = r.roof
    pts = []
    for p in r.step.placements:
        c = p.kernel.cost
        if not c.flops or not c.bytes:
            continue  # zero-FLOP kernels (gathers, copies) have no place on a FLOP/s axis
        measured = p.measured_s is not None
        predicted = c.flops / p.t_expected_s
        y = p.achieved_flop_per_s if measured else predicted
        pts.append(dict(name=p.kernel.name, x=c.intensity, y=y, measured=measured,
                        fraction=y / roof.attainable(c.intensity), predicted=predicted if measured else None,
                        flagged=p.flagged))
    st = r.step
    step_pred = st.flops / st.predicted_s
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


def off_axis(r: Roofline) -> list[dict]:
    """The kernels a FLOP/s axis cannot place (AI 0: a gather, a cache write, a copy), each with its bytes
    and time (measured where given, else expected), for the key to name."""
    out = []
    for p in r.step.placements:
        c = p.kernel.cost
        if c.flops and c.bytes:
            continue
        measured = p.measured_s is not None
        out.append(dict(name=p.kernel.name, bytes=c.bytes, seconds=p.measured_s if measured else p.t_expected_s,
                        measured=measured))
    return out


# --------------------------------------------------------------------------- labels that do not collide

LABEL_REACH_PT = 12  # a label without a leader line lies within this many points of its marker's edge
LEADER_REACH_PT = 90  # one that needs a leader line to find room: its box within this many points of the point
MARKER_PT = 7  # the points' marker size (diameter, points)

# offsets (points) of a label beside its marker, nearest first; ha/va keep the text clear of it
_NEAR = [(dx * k, dy * k, ha, va) for k in (1, 2) for dx, dy, ha, va in (
    (6, 5, "left", "bottom"), (6, -5, "left", "top"), (-6, 5, "right", "bottom"), (-6, -5, "right", "top"),
    (0, 8, "center", "bottom"), (0, -8, "center", "top"), (9, 0, "left", "center"), (-9, 0, "right", "center"))]
# farther places, each joined to its point by a leader line: 16 directions, nearest ring first
_FAR = [(r, a) for r in (22, 32, 44, 58, 74, 88) for a in range(0, 360, 360 // 16)]


def _agg(fig):
    """A canvas that can measure text (a bare Figure has none until it is saved)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas


def _overlaps(a, b, pad: float = 1.0) -> bool:
    return not (a.x1 + pad <= b.x0 or b.x1 + pad <= a.x0 or a.y1 + pad <= b.y0 or b.y1 + pad <= a.y0)


def box_distance(box, px: float, py: float) -> float:
    """Pixels from (px, py) to the nearest point of a box (0 inside it)."""
    dx = max(box.x0 - px, 0.0, px - box.x1)
    dy = max(box.y0 - py, 0.0, py - box.y1)
    return (dx * dx + dy * dy) ** 0.5


def _join(labels, to_px, near_px: float, sep: str | None):
    """Groups of labels: with ``sep``, labels whose points lie within ``near_px`` of every other point of
    a group share one label, the texts joined by it, anchored at the group's first point. Each group is
    (x, y, text, colour, the members' pixel positions)."""
    groups: list[list] = []
    for x, y, text, color in labels:
        (px, py), = to_px([(x, y)])
        for g in groups if sep is not None else ():
            if all(((px - qx) ** 2 + (py - qy) ** 2) ** 0.5 <= near_px for qx, qy, *_ in g):
                g.append((px, py, x, y, text, color))
                break
        else:
            groups.append([(px, py, x, y, text, color)])
    return [(g[0][2], g[0][3], (sep or "").join(m[4] for m in g), g[0][5], [(m[0], m[1]) for m in g])
            for g in groups]


def place_labels(fig, ax, labels, markers, fontsize: float = 8, join: str | None = None) -> list:
    """Annotate each (x, y, text, colour) beside its point where the text overlaps no other label, no
    marker, no roof and stays inside the axes: first within LABEL_REACH_PT of the marker, else up to
    LEADER_REACH_PT away with a thin leader line to the point; a label with no free place in reach
    is left out (the caller's key lists every point). ``markers`` are (x, y, diameter in points) in
    data coordinates. ``join``: labels whose markers touch share one label, their texts joined by it.
    Returns the annotations drawn, one per label (after joining), None where none fitted."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    _agg(fig)
    fig.canvas.draw()  # settle the layout: display coordinates are final from here
    fig.set_layout_engine("none")
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    to_px = ax.transData.transform
    pt = fig.dpi / 72
    taken = [Bbox.from_extents(px - rad, py - rad, px + rad, py + rad)
             for (px, py), rad in ((to_px((x, y)), d * pt / 2) for x, y, d in markers)]
    for line in ax.get_lines():  # keep labels off the roofs and the ridge too
        if line.get_gid() in ("nominal-roof", "measured-roof", "ridge") or (line.get_gid() or "").startswith("curve"):
            xy = line.get_xydata()
            for px, py in ax.transData.transform(xy[:: max(1, len(xy) // 120)]):
                taken.append(Bbox.from_extents(px - 2, py - 2, px + 2, py + 2))
    legend = ax.get_legend()
    words = [] if legend is None else [legend.get_window_extent(renderer)]  # what a leader must not cross
    taken += words
    labels = _join(labels, to_px, MARKER_PT * pt, join)
    centres = [tuple(to_px((x, y))) for x, y, _ in markers]

    def own(box, members) -> bool:
        """No other marker nearer the box than its own point: a label reads as the nearest point's."""
        mine = min(box_distance(box, qx, qy) for qx, qy in members)
        others = (c for c in centres if all(abs(c[0] - qx) + abs(c[1] - qy) > 1 for qx, qy in members))
        return all(box_distance(box, *c) >= mine for c in others)

    def free(box) -> bool:
        inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        return inside and not any(_overlaps(box, other) for other in taken)

    out: list = [None] * len(labels)
    reach = (MARKER_PT / 2 + LABEL_REACH_PT) * pt
    for i, (x, y, text, color, members) in enumerate(labels):  # beside the marker first, every label
        (px, py), = to_px([(x, y)])
        for dx, dy, ha, va in _NEAR:
            t = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va,
                            fontsize=fontsize, color=color, annotation_clip=False)
            box = t.get_window_extent(renderer)
            if box_distance(box, px, py) <= reach and free(box) and own(box, members):
                taken.append(box)
                words.append(box)
                out[i] = t
                break
            t.remove()
    for i, (x, y, text, color, _) in enumerate(labels):  # then the rest farther out, with a leader line
        if out[i] is not None:
            continue
        (px, py), = to_px([(x, y)])
        for r, a in _FAR:
            dx, dy = r * math.cos(math.radians(a)), r * math.sin(math.radians(a))
            ha = "left" if dx > 1 else "right" if dx < -1 else "center"
            va = "bottom" if dy > 1 else "top" if dy < -1 else "center"
            t = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va,
                            fontsize=fontsize, color=color, annotation_clip=False,
                            arrowprops=dict(arrowstyle="-", color=color, lw=0.6, alpha=0.8, shrinkA=1,
                                            shrinkB=MARKER_PT / 2 + 0.5))
            t.update_positions(renderer)
            box = Text.get_window_extent(t, renderer)  # the text alone (an annotation's own adds its leader)
            cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
            leader = [Bbox.from_extents(qx - 1, qy - 1, qx + 1, qy + 1)
                      for qx, qy in ((px + (cx - px) * f, py + (cy - py) * f) for f in (0.3, 0.45, 0.6, 0.75))]
            if box_distance(box, px, py) <= LEADER_REACH_PT * pt and free(box) and \
                    not any(_overlaps(c, o, 0) for c in leader for o in words):
                taken += [box, *leader]  # later labels stay off the leader too
                words += [box, *leader]
                out[i] = t
                break
            t.remove()
    return out


def roofline_figure(r: Roofline):
    """A matplotlib Figure: nominal roof dashed grey, measured roof solid blue, the measured ridge dotted,
    numbered points (indigo left of the ridge, amber right; hollow where predicted, filled where
    measured), each number placed where it collides with nothing and within reach of its point (a
    leader line where it sits farther), and a key of every point and of the AI-0 kernels left off.
    A sweep's figure is sweep_figure's."""
    if not hasattr(r, "step"):
        raise RoofcalcError(f"roofline_figure takes one step's Roofline; {_what_to_draw(r)}")
    from matplotlib.figure import Figure  # (the object API: no pyplot, and the session's backend left as it is)
    from matplotlib.lines import Line2D

    pts = plot_points(r)
    xs = [p["x"] for p in pts] + [r.nominal.ridge]
    ys = [p["y"] for p in pts] + [p["predicted"] for p in pts if p.get("predicted")] + [r.nominal.peak_flop_per_s]
    lo_x, hi_x = min(xs) / 4, max(max(xs) * 4, r.nominal.ridge * 20)
    rows = len(pts)
    fig = Figure(figsize=(12.5, max(6.0, 2.2 + 0.2 * rows)), layout="constrained")
    ax, key = fig.subplots(1, 2, width_ratios=[1.5, 1])
    _draw_roofs(ax, r.nominal, r.measured, lo_x, hi_x, measured_color=INDIGO, measured_lw=2.5, ridge_label=True,
                own_nominal=r.own_nominal)
    markers = []
    for i, p in enumerate(pts, 1):
        face = p["color"] if p["measured"] else "white"
        if p.get("predicted"):  # a measured point beside its prediction, joined by a dotted line
            ax.plot([p["x"], p["x"]], [p["predicted"], p["y"]], ":", color=p["color"], lw=1, gid=f"gap-{i}")
            ax.plot([p["x"]], [p["predicted"]], "o", ms=5, mfc="white", mec=p["color"], mew=1, gid=f"predicted-{i}")
            markers.append((p["x"], p["predicted"], 5))
        ax.plot([p["x"]], [p["y"]], "o", ms=MARKER_PT, mfc=face, mec=p["color"], mew=1.5, gid=f"point-{i}")
        if p.get("flagged"):  # the table's flag and JSON's flagged: one rule (Placement.flagged), a red ring
            ax.plot([p["x"]], [p["y"]], "o", ms=MARKER_PT + 6, mfc="none", mec=RED, mew=1.5, gid=f"flagged-{i}")
        markers.append((p["x"], p["y"], MARKER_PT + 6 if p.get("flagged") else MARKER_PT))
    ax.set_ylim(min(ys) / 5, max(ys) * 3)
    kinds = {p["measured"] for p in pts} | ({False} if any(p.get("predicted") for p in pts) else set())
    handles = ax.get_legend_handles_labels()
    extra = []
    if False in kinds:
        extra.append(Line2D([], [], ls="", marker="o", mfc="white", mec="0.3", label="predicted (hollow)"))
    if True in kinds:
        extra.append(Line2D([], [], ls="", marker="o", mfc="0.3", mec="0.3", label="measured (filled)"))
    if any(p.get("flagged") for p in pts):
        extra.append(Line2D([], [], ls="", marker="o", ms=MARKER_PT + 4, mfc="none", mec=RED, mew=1.5,
                            label="flagged: measured above 3x the least it can take"))
    if any(p.get("predicted") for p in pts):  # its small hollow marker tells it from the dotted ridge
        extra.append(Line2D([], [], ls=":", color=INDIGO, lw=1, marker="o", ms=4, mfc="white", mec=INDIGO,
                            label="a measured point to its prediction"))
    ax.legend(handles[0] + extra, handles[1] + [h.get_label() for h in extra], loc="lower right", fontsize=8)
    w = r.analysis.workload
    what = (f"decode B={w.batch} S={w.kv_len}" if w.phase == "decode" else f"prefill B={w.batch} T={w.query_tokens}")
    if r.profile_name:
        roof = f"measured roof of {r.profile_name}" + ("" if r.own_nominal else f" (nominal: {r.hardware.name})")
    else:
        roof = f"{r.hardware.name} ({'measured' if r.measured else 'nominal'} roof)"
    par = getattr(r.analysis, "parallel", None)
    if par is not None and par.gpus > 1:  # the numbers are one rank's: its batch, its experts, its heads
        what += " · one rank of " + " ".join(f"--{axis} {n}" for axis, n in (("tp", par.tp), ("pp", par.pp),
                                                                            ("ep", par.ep)) if n > 1)
    engine = r.model.engine_host.engine if r.model is not None and r.model.engine_host is not None else ""
    launch = f"{engine} ({r.step.impl})" if engine and engine != "hf" else r.step.impl
    fig.suptitle(f"{r.analysis.shape.name} · {what} · {w.compute_dtype.name} · {roof} · {launch}", fontsize=11)
    key.axis("off")
    key_lines = []
    for i, p in enumerate(pts, 1):
        how = f" (predicted {_fmt_rate(p['predicted'])})" if p.get("predicted") else ""
        key_lines.append(f"{i}  {p['name']}   AI {ratio(p['x'])} · {_fmt_rate(p['y'])}{how} · "  # AI as the report prints it
                         f"{_sig(100 * p['fraction'])}% of roof" + (" · flagged" if p.get("flagged") else ""))
    off = off_axis(r)
    if off:
        key_lines.append("not on the plot: AI 0 (no FLOPs to place on a FLOP/s axis)")
        for k in off:
            how = "measured" if k["measured"] else "predicted"
            key_lines.append(f"   {k['name']}   {si(k['bytes'], 'B')} in {sig(k['seconds'] * 1e6)} us ({how}) · "
                             f"{si(k['bytes'] / k['seconds'], 'B/s')}")
    text = key.text(0, 1, "\n".join(key_lines), va="top", ha="left", fontsize=8, transform=key.transAxes,
                    linespacing=1.5, gid="key")
    labels = [(p["x"], p["y"], str(i), p["color"]) for i, p in enumerate(pts, 1)]
    place_labels(fig, ax, labels, markers, join=",")
    _fit_text(fig, key, text)
    return fig


def _sig(x: float) -> str:
    return sig(x)


def _fit_text(fig, ax, text) -> None:
    """Shrink a text until it fits inside its axes (the key must not run off the figure)."""
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    size = text.get_fontsize()
    while size > 5.5:
        box = text.get_window_extent(renderer)
        if box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1:
            return
        size -= 0.5
        text.set_fontsize(size)


def _what_to_draw(x) -> str:
    """What to pass instead of ``x`` to a figure: a sweep's Sweep to sweep_figure, a step's Roofline to
    roofline_figure, an Analysis first to roofline(analysis, hardware)."""
    name = type(x).__name__
    if hasattr(x, "grid"):
        return f"a {name} (a sweep) is drawn by sweep_figure or save_plot"
    if hasattr(x, "kernels") and hasattr(x, "workload"):
        return (f"an {name} has no roof yet: roofcalc.roofline.roofline(analysis, hardware) places it on "
                f"one, and that Roofline is drawn")
    return f"got {name}"


def save_roofline(r: Roofline, path: str) -> None:
    save_plot(r, path)


def save_plot(r, path: str) -> None:
    """The roofline of one step, or the two panels of a sweep (:class:`roofcalc.sweep.Sweep`)."""
    check_plot_path(path)
    fig = roofline_figure(r) if isinstance(r, Roofline) or not hasattr(r, "grid") else sweep_figure(r)
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
                measured_color: str = "0.15", measured_lw: float = 2, ridge_label: bool = False,
                own_nominal: bool = False) -> None:
    """Nominal roof dashed grey, measured roof solid, the verdict roof's ridge dotted; log axes. ``own_nominal``: the
    measured profile is its own nominal (Roofline.own_nominal), one roof drawn once."""
    import numpy as np

    ai = np.logspace(np.log10(lo_x), np.log10(hi_x), 400)
    if not own_nominal:
        ax.loglog(ai, np.minimum(nominal.peak_flop_per_s, nominal.bandwidth_bytes_per_s * ai), "--",
                  color=NOMINAL_GREY, lw=1.5, label=f"nominal roof, ridge {ridge_words(nominal.ridge)} FLOP/byte",
                  gid="nominal-roof")
    if measured is not None:
        ax.loglog(ai, np.minimum(measured.peak_flop_per_s, measured.bandwidth_bytes_per_s * ai), "-",
                  color=measured_color, lw=measured_lw, label=f"measured roof, ridge {ridge_words(measured.ridge)} FLOP/byte",
                  gid="measured-roof")
    ridge = (measured or nominal).ridge
    label = f"{'measured' if measured else 'nominal'} ridge {ridge_words(ridge)}" if ridge_label else None
    ax.axvline(ridge, color=RIDGE, lw=1, ls=":", gid="ridge", label=label)
    ax.set_xlim(lo_x, hi_x)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (FLOP/s)")
    ax.grid(True, which="both", alpha=0.25)


def sweep_figure(sw):
    """Left: every step of the sweep on the roofline (one line per context or prompt, a point per batch;
    hollow where it does not fit in memory). Right: step time and tokens/s against batch (decode),
    time to first token against prompt (prefill), or TTFT, TPOT and tokens/s (request); the memory
    limit marked."""
    if not hasattr(sw, "grid"):
        raise RoofcalcError("sweep_figure takes a sweep (roofcalc.sweep); "
                            + ("a Roofline of one step is drawn by roofline_figure or save_plot" if hasattr(sw, "step")
                               else _what_to_draw(sw)))
    import numpy as np
    from matplotlib.figure import Figure  # (the object API: no pyplot, and the session's backend left as it is)

    g = sw.grid
    fits = g.fits(sw.capacity_bytes)
    fig = Figure(figsize=(14, 6), layout="constrained")
    left, right = fig.subplots(1, 2)
    w = sw.dtypes
    mem = "memory unknown" if sw.capacity_bytes is None else capacity(sw.capacity_bytes)  # as the text says it
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
    labels, markers = [], []
    for n, j in enumerate(_pick(len(lengths))):
        c = SERIES[n]
        left.plot(inten[:, j], achieved[:, j], "-", color=c, lw=1, alpha=0.6, gid=f"curve-{j}")
        for i, b in enumerate(g.batches):
            face = c if fits[i, j] else "white"
            left.plot([inten[i, j]], [achieved[i, j]], "o", ms=6, mfc=face, mec=c, mew=1.3, gid=f"point-{i}-{j}")
            markers.append((inten[i, j], achieved[i, j], 6))
            labels.append((inten[i, j], achieved[i, j], f"B={b:,}", c))
        left.plot([], [], "o-", color=c, label=f"{letter}={lengths[j]:,}")
    if not fits.all():
        from matplotlib.lines import Line2D

        left.add_line(Line2D([], [], ls="", marker="o", mfc="white", mec="0.3", label="does not fit in memory"))
    left.set_ylim(achieved.min() / 5, max(achieved.max(), sw.nominal.peak_flop_per_s) * 3)
    left.legend(loc="lower right", fontsize=8)
    left.set_title("each step on the roofline (predicted FLOP/s = FLOPs / step time)", fontsize=9)

    if decode:
        tps = g.tokens_per_s
        twin = right.twinx()
        for n, j in enumerate(_pick(len(lengths))):
            c = SERIES[n]
            right.loglog(g.batches, step[:, j] * 1e3, "-o", color=c, ms=4, label=f"step ms, S={lengths[j]:,}")
            twin.loglog(g.batches, tps[:, j], "--s", color=c, ms=3, alpha=0.8, label=f"tokens/s, S={lengths[j]:,}")
            bad = ~fits[:, j]
            if bad.any():
                right.plot(g.batches[bad], step[bad, j] * 1e3, "x", color=c, ms=8, mew=1.5,
                           label=f"does not fit, S={lengths[j]:,}")
            v = sw.verdicts[j] if j < len(sw.verdicts) else None
            if v is not None and v.max_batch:
                right.axvline(v.max_batch, color=c, ls=":", lw=1.5, gid=f"memory-limit-{j}",
                              label=f"memory limit, S={lengths[j]:,}: B={v.max_batch:,}")
        right.set_xlabel("batch B (sequences)")
        right.set_ylabel("step time = time per output token (ms)")
        twin.set_ylabel("tokens/s, all sequences")
        right.set_title("step time (solid) and tokens/s (dashed) against batch", fontsize=9)
        h1, l1 = right.get_legend_handles_labels()
        h2, l2 = twin.get_legend_handles_labels()
        right.legend(h1 + h2, l1 + l2, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=7)
    else:
        for n, i in enumerate(_pick(len(g.batches))):
            c = SERIES[n]
            right.loglog(g.prompts, step[i, :] * 1e3, "-o", color=c, ms=4, label=f"B={g.batches[i]:,}")
            bad = ~fits[i, :]
            if bad.any():
                right.plot(g.prompts[bad], step[i, bad] * 1e3, "x", color=c, ms=8, mew=1.5,
                           label=f"does not fit, B={g.batches[i]:,}")
        right.set_xlabel("prompt length T (tokens)")
        right.set_ylabel("time to first token (ms)")
        right.set_title("prefill: time to first token against prompt length", fontsize=9)
        right.legend(loc="upper left", fontsize=8)
    right.grid(True, which="both", alpha=0.25)
    place_labels(fig, left, labels, markers, fontsize=7)
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
            right.plot(g.batches[bad], g.tokens_per_s[bad, j], "x", color=c, ms=8, mew=1.5,
                       label=f"does not fit, P={g.prompts[j]:,}")
    left.set_xlabel("batch B (sequences)")
    left.set_ylabel("time (ms)")
    left.set_title(f"time to first token and mean time per output token ({g.generate} tokens)", fontsize=9)
    right.set_xlabel("batch B (sequences)")
    right.set_ylabel("output tokens/s over the whole request")
    right.set_title("request throughput against batch", fontsize=9)
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(loc="best", fontsize=8)
    return fig
