"""Every plot roofcalc draws, read the way a person reads it: no label on another label or a marker,
nothing outside the figure, the legend listing what is drawn (matplotlib's own text extents)."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")
from roofcalc import Workload, analyze, load_shape  # noqa: E402
from roofcalc.hardware import find_hardware  # noqa: E402
from roofcalc.roofline import parse_point, roofline  # noqa: E402
from roofcalc.sweep import sweep  # noqa: E402


def _texts(fig):
    """Every text the figure draws, with its window extent (the canvas is drawn first): titles, axis
    labels, the tick labels of ticks inside the view, legends, annotations and the key."""
    from roofcalc.plotting import _agg

    _agg(fig).draw()
    r = fig.canvas.get_renderer()
    texts = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        for axis, (lo, hi) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            texts += [tick.label1 for tick in axis.get_major_ticks() if lo <= tick.get_loc() <= hi]
        if ax.get_legend() is not None:
            texts += list(ax.get_legend().get_texts())
    return [(t, t.get_window_extent(r)) for t in texts if t.get_visible() and t.get_text().strip()]


def _labels(fig):
    """The point labels: the annotations on the axes."""
    from matplotlib.text import Annotation

    return [(t, box) for t, box in _texts(fig) if isinstance(t, Annotation)]


def _markers(fig):
    """Pixel boxes of every point marker (lines whose gid says they are points)."""
    from matplotlib.transforms import Bbox

    out = []
    for ax in fig.axes:
        for ln in ax.get_lines():
            gid = ln.get_gid() or ""
            if gid.startswith(("point-", "predicted-")):
                (px, py), = ax.transData.transform(ln.get_xydata()[:1])
                rad = ln.get_markersize() * fig.dpi / 72 / 2
                out.append(Bbox.from_extents(px - rad, py - rad, px + rad, py + rad))
    return out


def _overlap(a, b) -> bool:
    return not (a.x1 <= b.x0 or b.x1 <= a.x0 or a.y1 <= b.y0 or b.y1 <= a.y0)


def _check(fig):
    frame = fig.bbox
    texts = _texts(fig)
    for t, box in texts:  # every artist inside the figure
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1 and frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, \
            t.get_text()[:40]
    labels = _labels(fig)
    for i, (a, box_a) in enumerate(labels):
        for b, box_b in labels[i + 1:]:
            assert not _overlap(box_a, box_b), (a.get_text(), b.get_text())
        for m in _markers(fig):
            assert not _overlap(box_a, m), a.get_text()
    return labels


T4 = find_hardware("T4")


def test_the_worked_example_plot_has_no_label_on_another():
    from roofcalc.plotting import roofline_figure

    tiny = load_shape("TinyLlama/TinyLlama-1.1B")
    r = roofline(analyze(tiny, Workload.decode(1, 500)), T4, measured_bw=270e9, measured_flops=50e12, tpot_s=0.015,
                 points=(parse_point("matmul 4096:137438953472:100663296:0.00275"), parse_point("x + 1:1e8:4e8:0.00148")))
    fig = roofline_figure(r)
    labels = _check(fig)
    # every point is numbered in the key; the labels on the plot name the points they sit by
    key = next(t for t, _ in _texts(fig) if t.get_gid() == "key").get_text().splitlines()
    assert len(key) == 19 and key[16].startswith("17  decode step")
    shown = {int(n) for t, _ in labels for n in t.get_text().split(",")}
    assert shown <= set(range(1, 20)) and len(shown) >= 15
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "measured (filled)" in legend and "predicted (hollow)" in legend


def test_nothing_measured_means_no_measured_entry_in_the_legend():
    from roofcalc.plotting import roofline_figure

    r = roofline(analyze(load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode(1, 500)), T4)
    fig = roofline_figure(r)
    _check(fig)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "predicted (hollow)" in legend and "measured (filled)" not in legend


def test_a_twenty_kernel_profile_like_plot_and_a_moe_model():
    from roofcalc.plotting import roofline_figure

    # Gemma 2: 20 kernels in a step, all given measured times (as profile gives them)
    g2 = analyze(load_shape("google/gemma-2-9b"), Workload.decode(1, 500))
    times = {k.name: 5e-5 * (i % 7 + 1) for i, k in enumerate(g2.kernels)}
    assert len(g2.kernels) >= 20
    _check(roofline_figure(roofline(g2, find_hardware("A100"), kernel_times=times, tpot_s=0.05)))
    mix = analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(8, 2048))
    _check(roofline_figure(roofline(mix, find_hardware("H100"), impl="fused")))


@pytest.mark.parametrize("kw", [dict(batches=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512], contexts=[512, 2048, 8192]),
                                dict(batches=[1, 8], prompts=[128, 512, 2048, 8192]),
                                dict(batches=[1, 4, 16, 64], prompts=[512], generate=64)])
def test_sweep_plots_have_no_label_on_another_and_legends_for_every_line(kw):
    from roofcalc.plotting import sweep_figure

    sw = sweep(load_shape("TinyLlama/TinyLlama-1.1B"), T4, **kw)
    fig = sweep_figure(sw)
    _check(fig)
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        named = {t.get_text() for t in leg.get_texts()}
        for ln in ax.get_lines():  # every labelled line is in the legend
            if ln.get_label() and not ln.get_label().startswith("_") and ln.get_xydata().size:
                assert ln.get_label() in named, ln.get_label()
    # decode at 16 GiB: S=8192 fits up to B=81 ((17,179,869,184 - 2,200,096,768) / (8192 · 22,528) = 81.2)
    if "contexts" in kw:
        right = fig.axes[1]
        names = {t.get_text() for t in right.get_legend().get_texts()}
        assert "memory limit, S=8,192: B=81" in names and "does not fit, S=8,192" in names
        assert "tokens/s, S=512" in names
