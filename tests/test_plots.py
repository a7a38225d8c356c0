"""Every plot roofcalc draws, read the way a person reads it: no label on another label or a marker,
nothing outside the figure, every label near its point (or joined to it by a leader line), legend
entries told apart by more than a dash pattern, the legend listing what is drawn (matplotlib's own
text extents)."""

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
    from matplotlib.text import Text

    # an annotation's text alone: its own extent adds its leader line, which runs to the marker
    return [(t, Text.get_window_extent(t, r)) for t in texts if t.get_visible() and t.get_text().strip()]


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


# the stated reach of a label: its box within 12 points of its marker's edge (a marker is 7 points
# across), or, with a leader line to the point, within 90 points of the point
REACH_PT, LEADER_PT, MARKER_PT = 12, 90, 7


def _box_distance(box, px, py):
    dx = max(box.x0 - px, 0, px - box.x1)
    dy = max(box.y0 - py, 0, py - box.y1)
    return (dx * dx + dy * dy) ** 0.5


def _check_reach(fig, labels):
    """Every label lies within its stated reach of the point it annotates; on a roofline every number in
    a shared label names a point whose marker touches that point (within a marker's width)."""
    pt = fig.dpi / 72
    points, centres = {}, []
    for ax in fig.axes:
        for ln in ax.get_lines():
            gid = ln.get_gid() or ""
            if gid.startswith(("point-", "predicted-")):
                (px, py), = ax.transData.transform(ln.get_xydata()[:1])
                centres.append((px, py))
                if gid.startswith("point-") and gid.count("-") == 1:
                    points[gid[len("point-"):]] = (px, py)
    for t, box in labels:
        (px, py), = t.axes.transData.transform([t.xy])
        far = _box_distance(box, px, py)
        mine = [(px, py)]
        for n in t.get_text().split(",") if t.get_text()[0].isdigit() else ():
            qx, qy = points[n]
            assert ((qx - px) ** 2 + (qy - py) ** 2) ** 0.5 <= MARKER_PT * pt + 0.5, (t.get_text(), n)
            mine.append((qx, qy))
        if t.arrow_patch is None:  # beside its point: no other marker nearer to it than its own
            assert far <= (MARKER_PT / 2 + REACH_PT) * pt + 0.5, (t.get_text(), far / pt)
            near = min(_box_distance(box, qx, qy) for qx, qy in mine)
            for cx, cy in centres:
                if all(abs(cx - qx) + abs(cy - qy) > 1 for qx, qy in mine):
                    assert _box_distance(box, cx, cy) >= near - 0.5, (t.get_text(), "reads as another point's")
        else:
            assert far <= LEADER_PT * pt + 0.5, (t.get_text(), far / pt)


def _look(h):
    """What tells a legend entry apart: a line or none, its colour, its marker and the marker's face."""
    from matplotlib.colors import to_rgb

    line = h.get_linestyle() not in ("None", "none", "", " ")
    marker = h.get_marker() if h.get_marker() not in (None, "None", "none", "", " ") else None
    color = to_rgb(h.get_color() if line else h.get_markeredgecolor())
    face = None if marker is None else to_rgb(h.get_markerfacecolor())
    return line, color, marker, face


def _apart(c1, c2) -> bool:  # colours a reader tells apart: 0.25 apart in RGB at least (grey 0.55 vs 0.1: 0.78)
    return sum((a - b) ** 2 for a, b in zip(c1, c2)) ** 0.5 > 0.25


def _check_legends(fig):
    """No two legend entries differ by their dash pattern alone: each differs in colour, marker, marker
    face or in having a line at all."""
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        looks = [(t.get_text(), _look(h)) for t, h in zip(leg.get_texts(), leg.legend_handles)]
        for i, (na, a) in enumerate(looks):
            for nb, b in looks[i + 1:]:
                assert a[0] != b[0] or a[2] != b[2] or _apart(a[1], b[1]) or \
                    (a[3] is not None and b[3] is not None and _apart(a[3], b[3])), (na, nb)


def _check(fig):
    _check_legends(fig)
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
    _check_reach(fig, labels)
    return labels


T4 = find_hardware("T4")


def _key(fig):
    return next(t for t, _ in _texts(fig) if t.get_gid() == "key").get_text().splitlines()


def _shown(labels):
    return {int(n) for t, _ in labels for n in t.get_text().split(",")}


def test_the_worked_example_plot_has_no_label_on_another():
    from roofcalc.plotting import roofline_figure

    tiny = load_shape("TinyLlama/TinyLlama-1.1B")
    r = roofline(analyze(tiny, Workload.decode(1, 500)), T4, measured_bw=270e9, measured_flops=50e12, tpot_s=0.015,
                 points=(parse_point("matmul 4096:137438953472:100663296:0.00275"), parse_point("x + 1:1e8:4e8:0.00148")))
    fig = roofline_figure(r)
    labels = _check(fig)
    # the key numbers every point: TinyLlama's 18 kernels less the 2 with no FLOPs, the step, 2 points = 19;
    # then a line that says what is left off and one line for each of the 2
    key = _key(fig)
    assert len(key) == 19 + 3 and key[16].startswith("17  decode step")
    # the point's AI as the report prints it: 137,438,953,472 FLOPs / 100,663,296 bytes = 1,365.3 -> "1,365" (not
    # the plot's own 3 significant digits, 1,370, which would contradict the text report beside it)
    assert key[17].startswith("18  matmul 4096   AI 1,365 ·")
    assert _shown(labels) == set(range(1, 20))  # every point is labelled on the plot, near it
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "measured (filled)" in legend and "predicted (hollow)" in legend


def test_kernels_with_no_flops_are_named_as_left_off_the_plot():
    """A gather and a cache write have no FLOPs (AI 0): a log FLOP/s axis has no place for them, so the
    key names them, with their bytes and time, under a line that says why."""
    from roofcalc.plotting import roofline_figure

    # the cache written in place, as a serving engine writes it (the default, transformers' concatenation,
    # rewrites the whole cache: the arithmetic below is the in-place write's)
    a = analyze(load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode(1, 500, cache_update="in-place"))
    zero = [k.name for k in a.kernels if k.cost.flops == 0]
    assert zero == ["embed_tokens", "kv_cache_write"]  # the embedding's row gather, the cache's append
    fig = roofline_figure(roofline(a, T4, kernel_times={"kv_cache_write": 4e-6}))
    _check(fig)
    key = _key(fig)
    i = key.index("not on the plot: AI 0 (no FLOPs to place on a FLOP/s axis)")
    assert [line.split()[0] for line in key[i + 1:]] == zero
    # kv_cache_write reads the new token's K and V (2 x 4 KV heads x 64 x 2 bytes = 1,024) and writes them
    # into the cache (1,024): 2,048 bytes, in the 4 us given: 2,048 / 4e-6 = 512 MB/s
    write = next(k for k in a.kernels if k.name == "kv_cache_write")
    assert write.cost.bytes == 2048
    assert key[i + 2].split() == ["kv_cache_write", "2.05", "kB", "in", "4.00", "us", "(measured)", "·", "512",
                                  "MB/s"]
    assert "(predicted)" in key[i + 1]


def _profile_like():
    """TinyLlama fp32 decode on a CPU as `roofcalc profile` measured it for docs/profile-tinyllama-cpu.png:
    each kernel's achieved rate read off that figure's key (GFLOP/s), as a time = its FLOPs / the rate.
    Nine kernels sit at AI 0.5 within a factor 1.6 of one another."""
    from roofcalc.calculator import DTYPES

    rates = {"input_layernorm": 0.0505, "q_proj": 7.1, "k_proj": 5.06, "v_proj": 5.62, "rotary": 0.0524,
             "attention": 8.66, "o_proj": 7.32, "attn_residual": 0.129, "post_attention_layernorm": 0.065,
             "gate_proj": 8.12, "up_proj": 8.09, "act_mul": 0.300, "down_proj": 8.31, "mlp_residual": 0.0638,
             "norm": 0.042, "lm_head": 8.14}
    fp32 = DTYPES["fp32"]
    a = analyze(load_shape("TinyLlama/TinyLlama-1.1B"),
                Workload.decode(1, 200, weight_dtype=fp32, act_dtype=fp32, kv_dtype=fp32))
    times = {k.name: k.cost.flops / (rates[k.name] * 1e9) for k in a.kernels if k.name in rates}
    times.update(embed_tokens=2e-6, kv_cache_write=3e-6)
    return roofline(a, find_hardware("EPYC-9654"), measured_bw=26e9, measured_flops=1.8e11, kernel_times=times,
                    tpot_s=0.27)


def test_a_stack_of_kernels_at_one_intensity_keeps_every_label_by_its_point():
    from roofcalc.plotting import roofline_figure

    from roofcalc.plotting import plot_points

    r = _profile_like()
    at_half = [p["name"] for p in plot_points(r) if abs(p["x"] - 0.5) < 0.01]
    # the seven GEMVs of a layer, lm_head (AI ~ 2 FLOPs / 4 bytes of an fp32 weight) and the step itself
    assert len(at_half) == 9 and "decode step" in at_half
    fig = roofline_figure(r)
    labels = _check(fig)
    assert _shown(labels) == set(range(1, 18))  # 16 kernels with FLOPs and the step, every one labelled


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
    labels = _check(roofline_figure(roofline(g2, find_hardware("A100"), kernel_times=times, tpot_s=0.05)))
    # Gemma 2's 22 kernels (attention twice: its sliding layers run a windowed kernel, its full ones another)
    # less its cache write (no FLOPs), and the step: 22 points, each labelled
    assert _shown(labels) == set(range(1, 23))
    mix = analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(8, 2048))
    labels = _check(roofline_figure(roofline(mix, find_hardware("H100"), impl="fused")))
    assert _shown(labels) == set(range(1, 19))  # 19 kernels less embed_tokens and kv_cache_write, + the step


@pytest.mark.parametrize("kw", [dict(batches=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512], contexts=[512, 2048, 8192]),
                                dict(batches=[1, 8], prompts=[128, 512, 2048, 8192]),
                                dict(batches=[1, 4, 16, 64], prompts=[512], generate=64)])
def test_sweep_plots_have_no_label_on_another_and_legends_for_every_line(kw):
    from roofcalc.plotting import sweep_figure

    import re

    from roofcalc.report import render_sweep

    sw = sweep(load_shape("TinyLlama/TinyLlama-1.1B"), T4, **kw)
    fig = sweep_figure(sw)
    _check(fig)
    # the title's memory in the text report's unit: the T4's 16 GiB (17,179,869,184 bytes), not 17.18 GB
    memory = re.search(r"; memory (\S+ \S+)", render_sweep(sw)).group(1)
    assert memory == "16 GiB" and f"{memory})" in fig._suptitle.get_text() and " GB" not in fig._suptitle.get_text()
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


def test_the_plot_rings_the_kernels_the_table_and_json_flag(tmp_path, capsys):
    """One rule flags a kernel (measured above 3x the least a kernel of its size takes): the table's flag, JSON's
    flagged and the plot's red ring (gid flagged-N) mark the same kernels. The worked example with input_layernorm
    at 100 us and q_proj at 200 us: each above 3x its least, both flagged, both ringed, no other."""
    import json

    from roofcalc.cli import main

    times = tmp_path / "k.json"
    times.write_text(json.dumps({"input_layernorm": 1e-4, "q_proj": 2e-4}))
    svg = tmp_path / "p.svg"
    assert main(["TinyLlama/TinyLlama-1.1B", "--kernel-times", str(times), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    flagged = [k["name"] for k in doc["kernels"] if k["flagged"]]
    assert flagged == ["input_layernorm", "q_proj"]
    assert main(["TinyLlama/TinyLlama-1.1B", "--kernel-times", str(times), "--plot", str(svg)]) == 0
    text = svg.read_text()
    assert text.count('id="flagged-') == 2 and "flagged: measured above 3x the least it can take" in text


def test_the_plot_title_names_one_rank_of_the_layout_and_the_engine(tmp_path, capsys):
    """Under --ep 8 every number is one rank's (its 8 of 64 sequences, its one expert), so the title says so, and
    the engine the step runs under beside its launch model; the worked example's title keeps its launch model
    alone (transformers' eager generate, the default)."""
    from roofcalc.cli import main

    svg = tmp_path / "p.svg"
    assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--ep", "8", "--batch", "64", "--engine", "vllm",
                 "--plot", str(svg)]) == 0
    text = svg.read_text().replace("- -", "--")  # an SVG comment holds no "--": matplotlib writes "- -"
    assert "decode B=8 S=500 · one rank of --ep 8 · bf16 · H100-SXM (nominal roof) · vllm (cuda-graph)" in text
    assert main(["TinyLlama/TinyLlama-1.1B", "--plot", str(svg)]) == 0
    text = svg.read_text()
    assert "decode B=1 S=500 · fp16 · T4 (nominal roof) · hf-eager" in text and "one rank" not in text
    capsys.readouterr()


def test_a_profile_that_is_its_own_nominal_draws_one_roof(tmp_path):
    """A CPU profile that names no datasheet is its own nominal (Roofline.own_nominal): the plot draws its roof
    once, the measured one, and its title names no nominal beside it, as the report's roof line says one roof."""
    from own_roof import own_nominal_roofline
    from roofcalc.plotting import roofline_figure

    r = own_nominal_roofline(tmp_path)
    assert r.own_nominal
    fig = roofline_figure(r)
    gids = [line.get_gid() for line in fig.axes[0].get_lines()]
    assert "measured-roof" in gids and "nominal-roof" not in gids
    assert "measured roof of some CPU ·" in fig._suptitle.get_text() and "(nominal:" not in fig._suptitle.get_text()
    # against a datasheet (the T4's) both roofs are drawn and the title names the nominal
    t4 = roofline(analyze(load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode(1, 500)), T4, measured_bw=2e11)
    assert not t4.own_nominal and "nominal-roof" in [line.get_gid() for line in roofline_figure(t4).axes[0].get_lines()]
