"""One self-contained HTML page of a report (``--html FILE``).

The page holds the report's header lines, its charts and its tables, in one file that needs no
network: plotly.js is inlined, the charts are Plotly figures (hover, zoom and legend toggling built
in), and a few lines of plain JavaScript draw them from their JSON and sort and filter the tables.

Every number comes from the report's own records (``report.to_record``, ``sweep_record``,
``tp_sweep_record``) and is written by its own formatters: nothing is derived here but where a point
sits (a kernel's FLOPs over its expected or measured time, as the PNG plot places it).

Plotly is imported here only, inside functions: the main job never imports it. The page inlines
plotly.js's *basic* bundle (scatter and bar, all the page draws: 1.2 MB, MIT, the plotly.js version
the plotly package bundles, kept as ``data/plotly-basic.min.js``) rather than the 4.8 MB full bundle
``include_plotlyjs=True`` writes, so that a 1,000-point sweep stays under 2 MB; where the two differ
in major version, the full bundle is used.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Iterable

from .errors import RoofcalcError
from .predict import range_name
from .units import ms, pct, ratio, si, sig, us
from .units import ridge as ridge_words

INDIGO = "#2b53d8"  # left of the verdict roof's ridge (the PNG's colours)
AMBER = "#b26a12"  # right of it
NOMINAL_GREY = "#8c8c8c"
MEASURED_BLUE = "#1f3fbf"
GREEN = "#1e8a4c"  # distance 1: below the slope
PURPLE = "#8e44ad"  # distance 2: along the slope (drawn a little below the roof, BELOW times it)
BELOW = 0.6
SUFFIXES = (".html", ".htm")
BASIC_BUNDLE = Path(__file__).with_name("data") / "plotly-basic.min.js"
INSTALL = "pip install '.[html]' in roofcalc's checkout"


# --------------------------------------------------------------------------- entry points


def check_html_path(path: str) -> None:
    """Fail before any work if the page cannot be written."""
    if not path.strip():
        raise RoofcalcError("--html is empty; give a file name such as report.html")
    from .inputs import check_writable

    check_writable(path, "--html", SUFFIXES)


def _plotly():
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise RoofcalcError(f"--html needs plotly: {INSTALL}") from None
    return go


def save_page(result, path: str, defaults: Iterable[str] = (), record: bool = False,
              notes: Iterable[str] = ()) -> None:
    """Write the page of a roofline, a sweep or a --tp/--pp/--ep comparison to ``path``; ``notes``: lines to
    add under the step or the verdicts (what ``roofcalc profile`` measured; the report's footer lines)."""
    check_html_path(path)
    text = page_html(result, defaults, record, notes)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RoofcalcError(f"--html {path}: {exc.strerror}") from None


def page_html(result, defaults: Iterable[str] = (), record: bool = False, notes: Iterable[str] = ()) -> str:
    """The whole page as a string: one :class:`Roofline`, :class:`Sweep` or :class:`TPSweep`."""
    from .parallel import TPSweep
    from .roofline import Roofline
    from .sweep import Sweep

    _plotly()
    defaults = tuple(defaults)
    if isinstance(result, Roofline):
        title, body = _roofline_page(result, defaults, record, list(notes))
    elif isinstance(result, Sweep):
        title, body = _sweep_page(result, defaults, list(notes))
    elif isinstance(result, TPSweep):
        title, body = _tp_page(result, defaults, list(notes))
    else:
        raise RoofcalcError(f"a page shows a Roofline (roofcalc.roofline.roofline(analysis, hardware)), a Sweep "
                            f"(roofcalc.sweep.sweep(shape, hardware, ...)) or a --tp comparison, not a "
                            f"{type(result).__name__}")
    return _document(title, body)


# --------------------------------------------------------------------------- the document


def plotly_js() -> str:
    """plotly.js to inline: the basic bundle where its major version is the plotly package's, else the full one."""
    import plotly.offline

    want = plotly.offline.get_plotlyjs_version()
    if BASIC_BUNDLE.is_file():
        js = BASIC_BUNDLE.read_text(encoding="utf-8")
        have = re.search(r"v(\d+)\.\d+\.\d+", js[:300])
        if have and have.group(1) == want.split(".")[0]:
            return js
    return plotly.offline.get_plotlyjs()


CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px 24px;color:#1d1d1f;max-width:1500px}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:22px 0 6px}
pre{font:12px/1.45 ui-monospace,"DejaVu Sans Mono",monospace;white-space:pre-wrap;background:#f6f7f9;
border:1px solid #e2e4e8;border-radius:4px;padding:8px 10px;margin:6px 0}
.chart{width:100%;border:1px solid #e2e4e8;border-radius:4px;margin:6px 0}
.note{color:#555;font-size:13px;margin:4px 0}
input.filter{font:13px system-ui,sans-serif;padding:3px 6px;width:260px;margin:4px 0}
.grid{font:12px/1.5 ui-monospace,"DejaVu Sans Mono",monospace;width:max-content}
.grid .head,.grid .body>div{display:grid;grid-template-columns:var(--cols)}
.grid .body>div{content-visibility:auto;contain-intrinsic-size:auto 20px}.grid .body>div[hidden]{display:none}
.grid span{padding:1px 0.6ch;border-bottom:1px solid #e8e8e8;text-align:right;white-space:nowrap;overflow:hidden}
.grid .head{position:sticky;top:0;z-index:1;background:#eef0f4;font-weight:bold}
.grid .head span{cursor:pointer;user-select:none}
.grid .head span[data-sort=asc]::after{content:" \\25B2"}.grid .head span[data-sort=desc]::after{content:" \\25BC"}
.grid span.l{text-align:left}.grid .bad span{color:#a02020}
.scroll{max-height:560px;max-width:100%;overflow:auto;display:inline-block;border:1px solid #e2e4e8}
"""

# draws every figure from its JSON, marks the body when all are drawn (tests and benchmarks/page.py read
# data-drawn-ms: milliseconds from navigation start), and sorts (header click) and filters (text box) tables
JS = """
(function () {
  var drawn = [];
  document.querySelectorAll('script.roofcalc-figure').forEach(function (s) {
    var fig = JSON.parse(s.textContent);
    drawn.push(Plotly.newPlot(s.dataset.target, fig.data, fig.layout, {displaylogo: false, responsive: true}));
  });
  Promise.all(drawn).then(function () { document.body.dataset.drawnMs = performance.now().toFixed(1); });
  document.querySelectorAll('.sortable').forEach(function (t) {
    var body = t.querySelector('.body'), heads = t.querySelector('.head').children;
    function key(row, i) {
      var c = row.children[i], v = c.dataset.v !== undefined ? c.dataset.v : c.textContent.replace(/,/g, '').trim();
      if (v === '') return null;
      var n = Number(v);
      return isNaN(n) ? v.toLowerCase() : n;
    }
    Array.prototype.forEach.call(heads, function (th, i) {
      th.addEventListener('click', function () {
        var dir = th.dataset.sort === 'asc' ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { delete h.dataset.sort; });
        th.dataset.sort = dir > 0 ? 'asc' : 'desc';
        var rows = Array.prototype.map.call(body.children, function (r) { return [key(r, i), r]; });
        rows.sort(function (a, b) {
          if (a[0] === null || b[0] === null) return (a[0] === null) - (b[0] === null);
          if (typeof a[0] !== typeof b[0]) return typeof a[0] === 'number' ? -1 : 1;
          return a[0] < b[0] ? -dir : a[0] > b[0] ? dir : 0;
        });
        rows.forEach(function (r) { body.appendChild(r[1]); });
      });
    });
    var box = document.getElementById(t.dataset.filter);
    if (box) box.addEventListener('input', function () {
      var q = box.value.toLowerCase();
      Array.prototype.forEach.call(body.children, function (r) {
        r.hidden = q !== '' && r.textContent.toLowerCase().indexOf(q) < 0;
      });
    });
  });
})();
"""


def _document(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f'<meta name="generator" content="roofcalc">\n<style>{CSS}</style>\n'
            f"<script>{plotly_js()}</script>\n</head>\n<body>\n{body}\n<script>{JS}</script>\n</body></html>\n")


def _pre(lines: list[str], cls: str = "") -> str:
    """Report lines as the terminal shows them, wrapped (their continuations indented) at 150 characters."""
    from .report import wrap_lines

    return f'<pre class="{cls}">' + html.escape("\n".join(wrap_lines(lines, 150))) + "</pre>" if lines else ""


def _figure(fig, target: str, height: int) -> str:
    """A chart's div and its figure JSON (plotly.io's own encoding: numpy arrays as typed arrays)."""
    import plotly.io

    fig.update_layout(height=height)
    data = plotly.io.to_json(fig, validate=True).replace("</", "<\\/")
    return (f'<div id="{target}" class="chart" style="height:{height}px"></div>\n'
            f'<script type="application/json" class="roofcalc-figure" data-target="{target}">{data}</script>')


def _table(table_id: str, headers: list[str], rows: list[list[str]], values: list[list[Any]] | None = None,
           left: Iterable[str] = (), bad: list[bool] | None = None, what: str = "rows") -> str:
    """A sortable, filterable table. ``values``: each cell's sort key (the record's own number) where its text
    does not read as it exactly (a rounded figure); ``left``: headers of text columns; ``bad``: rows to mark (a step that does not fit).

    A grid of rows rather than a <table>: each column as wide as its longest text (monospace), every row
    laid out only when it scrolls into view (content-visibility), so that a 1,000-row table costs the
    page's opening next to nothing."""
    left = set(left)
    widths = [max(len(h) + 2, *(len(row[i]) for row in rows)) + 2 for i, h in enumerate(headers)] if rows else \
        [len(h) + 4 for h in headers]
    cls = ['<span class="l">' if h in left else "<span>" for h in headers]
    out = [f'<input class="filter" id="{table_id}-filter" type="search" placeholder="filter {what}: any text">',
           ' <span class="note">click a header to sort</span><br>',
           f'<div class="scroll"><div class="grid sortable" id="{table_id}" data-filter="{table_id}-filter" '
           f'style="--cols:{" ".join(f"{w}ch" for w in widths)}">',
           '<div class="head">' + "".join(f"{c}{html.escape(h)}</span>" for c, h in zip(cls, headers)) + "</div>",
           '<div class="body">']
    for n, row in enumerate(rows):
        cells = []
        for i, text in enumerate(row):
            v = values[n][i] if values is not None else None
            v = int(v) if isinstance(v, bool) else v
            cell = cls[i]
            if isinstance(v, (int, float)) and text and not _reads_as(text, v):  # its text sorts not as its number
                cell = cell[:-1] + f' data-v="{v!r}">'
            cells.append(cell + html.escape(text) + "</span>")
        out.append(('<div class="bad">' if bad is not None and bad[n] else "<div>") + "".join(cells) + "</div>")
    out.append("</div></div></div>")
    return "\n".join(out)


def _reads_as(text: str, v: float) -> bool:
    """Whether a cell's text reads as its number exactly (17.8 as 17.8; not 449 for 449.44, which would tie
    with 448.98 when sorted)."""
    return _plain_number(text) and float(text.replace(",", "")) == v


def _plain_number(text: str) -> bool:
    """Whether a cell's text, commas dropped, is a number the table sorts by as it reads (17.8, 1,330)."""
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return text.strip().lower() not in ("inf", "nan", "-inf")


def _axes(fig, x_title: str, y_title: str, *, x_log: bool = True, y_log: bool = True, y_suffix: str = "",
          x_suffix: str = "") -> None:
    grid = dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False, showline=True, linecolor="#999", mirror=True,
                ticks="outside")
    fig.update_xaxes(title_text=x_title, type="log" if x_log else "linear", exponentformat="SI",
                     ticksuffix=x_suffix, **grid)
    fig.update_yaxes(title_text=y_title, type="log" if y_log else "linear", exponentformat="SI",
                     ticksuffix=y_suffix, **grid)


def _layout(fig, title: str) -> None:
    fig.update_layout(template="plotly_white", title=dict(text=title, font=dict(size=14), x=0.01),
                      margin=dict(l=70, r=20, t=50, b=55), hovermode="closest",
                      hoverlabel=dict(font=dict(family="DejaVu Sans Mono, monospace", size=12), align="left"),
                      legend=dict(font=dict(size=12), bgcolor="rgba(255,255,255,0.85)", bordercolor="#ccc",
                                  borderwidth=1))


# --------------------------------------------------------------------------- one step on the roofline


def _roof_line(go, roof: dict, lo: float, hi: float, **line):
    bw, peak, ridge = roof["bandwidth_bytes_per_s"], roof["peak_flop_per_s"], roof["ridge_flop_per_byte"]
    xs = [lo, ridge, hi] if lo < ridge < hi else [lo, hi]
    return go.Scatter(x=xs, y=[min(peak, bw * x) for x in xs], mode="lines", line=line, hoverinfo="skip")


def _kernel_hover(k: dict, t_unit) -> str:
    measured = "not measured" if k["measured_s"] is None else \
        f"{t_unit(k['measured_s'])}" + (f", {pct(k['roof_fraction'])} of roof" if k["roof_fraction"] else "") + \
        (" (flagged)" if k["flagged"] else "")
    return "<br>".join([
        f"<b>{html.escape(k['name'])}</b>  x{k['count']} ({k['kind']})",
        f"sizes    {html.escape(str(k['shape']))}",
        f"FLOPs    {si(k['flops'])} ({k['flops']:,})",
        f"bytes    {si(k['bytes'], 'B')} ({k['bytes']:,})",
        f"AI       {ratio(k['intensity'])} FLOP/byte",
        f"floor    {t_unit(k['t_floor_s'])}",
        f"expected {t_unit(k['t_expected_s'])} (eff {k['efficiency']:.2f})",
        f"measured {measured}",
        f"bound    {k['bound']}",
    ])


def _us(t: float | None) -> str:
    return f"{us(t)} us"


def roofline_figure(r):
    """The roofline of one step as a Plotly figure, from the report's record: nominal roof dashed grey,
    measured roof solid blue, both ridges dotted; every kernel (hollow where predicted, filled where
    measured, indigo left of the ridge and amber right of it), the whole step, the --point workloads; the
    step's three distances (below the slope, along it, the roof)."""
    go = _plotly()
    from . import report
    from .sweep import step_batch_verdicts

    doc = report.to_record(r)
    hw, st = doc["hardware"], doc["step"]
    nom, mea = hw["nominal"], hw["measured"]
    verdict = mea or nom
    ridge = verdict["ridge_flop_per_byte"]
    kernels = [k for k in doc["kernels"] if k["flops"] and k["bytes"]]  # a FLOP/s axis has no place for the rest
    xs = [k["intensity"] for k in kernels] + [st["intensity"]] + [p["intensity"] for p in doc["points"]]
    lo, hi = min(xs + [nom["ridge_flop_per_byte"]]) / 4, max(max(xs) * 4, nom["ridge_flop_per_byte"] * 20)
    fig = go.Figure()
    if not r.own_nominal:  # a profile that is its own nominal: one roof, drawn once
        fig.add_trace(_roof_line(go, nom, lo, hi, color=NOMINAL_GREY, width=2, dash="dash").update(
            name=f"nominal roof: {si(nom['bandwidth_bytes_per_s'], 'B/s')}, {si(nom['peak_flop_per_s'], 'FLOP/s')}"))
    if mea:
        fig.add_trace(_roof_line(go, mea, lo, hi, color=MEASURED_BLUE, width=3).update(
            name=f"measured roof: {si(mea['bandwidth_bytes_per_s'], 'B/s')}, {si(mea['peak_flop_per_s'], 'FLOP/s')}"))
    ys = [min(k["flops"] / k["t_expected_s"], k["achieved_flop_per_s"] or 1e300) for k in kernels]
    y_lo = min(ys + [st["flops"] / st["predicted_s"]] + [p["achieved_flop_per_s"] for p in doc["points"]]) / 5
    y_hi = nom["peak_flop_per_s"] * 3
    ridges = ([] if r.own_nominal else [(nom, "nominal", NOMINAL_GREY)]) + \
        ([(mea, "measured", MEASURED_BLUE)] if mea else [])
    for roof, name, color in ridges:  # labelled at the foot of the chart, the lower ridge's label left of its line
        x = roof["ridge_flop_per_byte"]
        left = len(ridges) == 2 and x == min(q["ridge_flop_per_byte"] for q, _, _ in ridges)
        fig.add_trace(go.Scatter(x=[x, x], y=[y_lo, y_hi], mode="lines", hoverinfo="skip", showlegend=False,
                                 line=dict(color=color, width=1.5, dash="dot"), name=f"{name} ridge"))
        fig.add_annotation(x=_log10(x), y=0, yref="paper", yanchor="bottom", xanchor="right" if left else "left",
                           xshift=-3 if left else 3, showarrow=False, font=dict(size=11, color=color),
                           text=f"{name} ridge<br>{ridge_words(x)} FLOP/byte", align="right" if left else "left")
    side = [INDIGO if k["intensity"] < ridge else AMBER for k in kernels]
    t_unit = _us
    fig.add_trace(go.Scatter(
        x=[k["intensity"] for k in kernels], y=[k["flops"] / k["t_expected_s"] for k in kernels], mode="markers",
        name="kernels, predicted (hollow): FLOPs / expected time",
        marker=dict(symbol="circle-open", size=11, color=side, line=dict(width=2)),
        hovertext=[_kernel_hover(k, t_unit) for k in kernels], hoverinfo="text", meta="kernels-predicted"))
    measured = [k for k in kernels if k["measured_s"] is not None]
    if measured:
        fig.add_trace(go.Scatter(
            x=[k["intensity"] for k in measured], y=[k["achieved_flop_per_s"] for k in measured], mode="markers",
            name="kernels, measured (filled)",
            marker=dict(symbol="circle", size=10, color=[INDIGO if k["intensity"] < ridge else AMBER for k in measured],
                        line=dict(width=1, color="white")),
            hovertext=[_kernel_hover(k, t_unit) for k in measured], hoverinfo="text", meta="kernels-measured"))
    step_name = f"{doc['workload']['phase']} step"
    roof = doc["hardware"].get("verdict_roof") or "nominal"
    step_hover = "<br>".join([
        f"<b>the whole {step_name}</b>",
        f"FLOPs    {si(st['flops'])} ({st['flops']:,})",
        f"bytes    {si(st['bytes'], 'B')} ({st['bytes']:,})",
        f"AI       {ratio(st['intensity'])} FLOP/byte",
        f"floor    {ms(st['sum_floor_s'])} ms (sum of the kernels' floors)",
        f"expected {ms(st['predicted_s'])} ms ({range_name(st.get('range_band_above'))} "
        f"{ms(st['predicted_lower_s'])} to {ms(st['predicted_upper_s'])})",
        "measured " + ("not measured (--tpot)" if st["tpot_s"] is None else
                       f"{ms(st['tpot_s'])} ms, {pct(st['roof_fraction'])} of the {roof} roof, "
                       f"{st['floor_multiple']:.2f}x its floor"),
        f"bound    {st['step_bound']}",
    ])
    step_color = INDIGO if st["intensity"] < ridge else AMBER
    fig.add_trace(go.Scatter(x=[st["intensity"]], y=[st["flops"] / st["predicted_s"]], mode="markers",
                             name=f"{step_name}, predicted (hollow)", hovertext=[step_hover], hoverinfo="text",
                             marker=dict(symbol="diamond-open", size=16, color=step_color, line=dict(width=2.5)),
                             meta="step-predicted"))
    pairs = [(k["intensity"], k["flops"] / k["t_expected_s"], k["achieved_flop_per_s"]) for k in measured]
    if st["tpot_s"] is not None:
        fig.add_trace(go.Scatter(x=[st["intensity"]], y=[st["achieved_flop_per_s"]], mode="markers",
                                 name=f"{step_name}, measured (filled): {ms(st['tpot_s'])} ms",
                                 hovertext=[step_hover], hoverinfo="text", meta="step-measured",
                                 marker=dict(symbol="diamond", size=15, color=step_color,
                                             line=dict(width=1, color="white"))))
        pairs.append((st["intensity"], st["flops"] / st["predicted_s"], st["achieved_flop_per_s"]))
    if pairs:
        gx, gy = [], []
        for x, a, b in pairs:
            gx += [x, x, None]
            gy += [a, b, None]
        fig.add_trace(go.Scatter(x=gx, y=gy, mode="lines", line=dict(color="#555", width=1), hoverinfo="skip",
                                 name="measured to predicted (thin line)"))
    if doc["points"]:
        pts = doc["points"]
        fig.add_trace(go.Scatter(
            x=[p["intensity"] for p in pts], y=[p["achieved_flop_per_s"] for p in pts], mode="markers",
            name="--point workloads, measured (squares)", meta="points",
            marker=dict(symbol="square", size=10, color=[INDIGO if p["intensity"] < ridge else AMBER for p in pts]),
            hoverinfo="text", hovertext=[f"<b>{html.escape(p['name'])}</b><br>FLOPs    {si(p['flops'])}<br>bytes    "
                                         f"{si(p['bytes'], 'B')}<br>AI       {ratio(p['intensity'])} FLOP/byte<br>"
                                         f"measured {sig(p['seconds'] * 1e3)} ms, "
                                         f"{si(p['achieved_flop_per_s'], 'FLOP/s')}, {pct(p['roof_fraction'])} "
                                         f"of roof" for p in pts]))
    _layout(fig, _roofline_title(doc, r))
    _axes(fig, "arithmetic intensity (FLOP/byte)", "performance (FLOP/s)")
    fig.update_yaxes(range=[_log10(y_lo), _log10(y_hi)], dtick=1)
    fig.update_xaxes(range=[_log10(lo), _log10(hi)], dtick=1)
    # the batch verdicts come from the hand model's grid (a traced model's step has none to give)
    _distances(go, fig, r, doc, None if r.analysis.source == "traced" else step_batch_verdicts(r))
    fig.update_layout(legend=dict(x=1.01, y=1, xanchor="left", yanchor="top"), margin=dict(r=10))
    return fig


def _log10(x: float) -> float:
    import math

    return math.log10(x)


def _roofline_title(doc: dict, r) -> str:
    w, hw = doc["workload"], doc["hardware"]
    what = f"decode B={w['batch']} S={w['context']}" if w["phase"] == "decode" else \
        f"prefill B={w['batch']} T={w['prompt']}"
    roof = f"measured roof of {r.profile_name}" + ("" if r.own_nominal else f" (nominal: {hw['name']})") \
        if r.profile_name else \
        f"{hw['name']} ({hw['verdict_roof']} roof)"
    return (f"{html.escape(doc['model']['name'])} · {what} · {w['compute_dtype']} · {html.escape(roof)} · "
            f"{hw['impl']}<br><span style='font-size:12px;color:#555'>indigo: left of the {hw['verdict_roof']} "
            f"ridge (memory side); amber: right of it (compute side). Hover a point for its numbers; drag to "
            f"zoom, double-click to reset; click a legend entry to hide it.</span>")


def _distances(go, fig, r, doc: dict, v) -> None:
    """The worked example's three distances from the step, drawn: 1 below the slope (the step to the roof at
    its AI), 2 along the slope (to where batching takes the AI: the ridge, or the AI it tends to), 3 the roof."""
    st, mea = doc["step"], doc["hardware"]["measured"]
    roof = mea or doc["hardware"]["nominal"]
    bw, peak = roof["bandwidth_bytes_per_s"], roof["peak_flop_per_s"]
    x = st["intensity"]
    y = st["achieved_flop_per_s"] if st["tpot_s"] is not None else st["flops"] / st["predicted_s"]
    top = min(peak, bw * x)
    which = "measured" if st["tpot_s"] is not None else "predicted"
    style = dict(color=GREEN, width=3)
    fig.add_trace(go.Scatter(x=[x, x], y=[y, top], mode="lines", line=style, hoverinfo="skip",
                             name=f"1 below the slope: the {which} step is {pct(y / top)} of the roof at its AI"))
    if v is not None:
        end = v.ridge if v.ridge_batch is not None else v.intensity_limit
        words = (f"its AI reaches the ridge at batch {v.ridge_batch:,}" if v.ridge_batch is not None else
                 f"its AI tends to {end:.3g} as the batch grows")
    else:  # toward the ridge
        end = roof["ridge_flop_per_byte"]
        words = ("a longer prompt or more sequences move it toward the ridge" if doc["workload"]["phase"] == "prefill"
                 else "more sequences per step move it toward the ridge")
    if end > x:
        xs = [x, min(end, roof["ridge_flop_per_byte"])]
        if end > roof["ridge_flop_per_byte"]:
            xs.append(end)
        fig.add_trace(go.Scatter(x=xs, y=[min(peak, bw * a) * BELOW for a in xs], mode="lines",
                                 line=dict(color=PURPLE, width=3, dash="dash"), hoverinfo="skip",
                                 name=f"2 along the slope: {words}"))
    # each number where the chart is empty: 1 below and right of the step, pointing at its segment, 2 below the
    # dashed line's middle
    fig.add_annotation(x=_log10(x), y=_log10((y * top) ** 0.5), text=f"<b>1</b> below the slope: {pct(y / top)} of "
                       "the roof", showarrow=True, arrowhead=2, arrowcolor=GREEN, ax=70, ay=70, xanchor="left",
                       font=dict(size=13, color=GREEN), bgcolor="rgba(255,255,255,0.8)")
    if end > x:
        mid = (x * min(end, roof["ridge_flop_per_byte"])) ** 0.5
        fig.add_annotation(x=_log10(mid), y=_log10(min(peak, bw * mid) * BELOW), text="<b>2</b> along the slope",
                           showarrow=False, yshift=-12, xshift=8, xanchor="left", yanchor="top",
                           font=dict(size=13, color=PURPLE), bgcolor="rgba(255,255,255,0.8)")
    # 3 above every roof at the right end, where no kernel sits, its arrow on the flat part of the verdict roof
    hi = 10 ** fig.layout.xaxis.range[1]
    fig.add_annotation(x=_log10(hi) - 0.2, y=_log10(peak), text=f"<b>3</b> the roof: {si(peak, 'FLOP/s')}",
                       showarrow=True, arrowhead=2, ax=-80, ay=-32, arrowcolor=MEASURED_BLUE if mea else "#555",
                       font=dict(size=13, color=MEASURED_BLUE if mea else "#555"), bgcolor="rgba(255,255,255,0.8)")


def _roofline_page(r, defaults, record: bool, notes: list[str] = ()) -> tuple[str, str]:
    from tabulate import tabulate

    from . import report

    doc = report.to_record(r)
    head = report.header_lines(r.analysis, defaults) + report.roof_lines(r, defaults)
    foot = report.totals_lines(r) + ([""] + notes if notes else [])
    if record:
        foot += ["", tabulate(report.record_rows(r), headers=["record", "nominal", "measured", "measured / nominal"],
                              tablefmt="simple", disable_numparse=True)]
    cols = report.kernel_columns(r)
    headers = [h for h, _, _ in cols]
    rows = [list(row) for row in zip(*(cells for _, _, cells in cols))]
    keys = [_KERNEL_KEYS.get(h, _KERNEL_KEYS.get(h.rsplit(" ", 1)[0])) for h in headers]
    values = [[None if key is None else k.get(key) for key in keys] for k in doc["kernels"]]
    if "flag" in headers:  # the flag column sorts as the table reads it: flagged slow 1, none 0, under its floor -1
        i = headers.index("flag")
        for row, k in zip(values, doc["kernels"]):
            row[i] = 1 if k["flagged"] else -1 if k.get("faster_than_floor") else 0
    skipped = [k["name"] for k in doc["kernels"] if not (k["flops"] and k["bytes"])]
    note = (f'<p class="note">Not on the chart (no FLOPs or no bytes: no place on a FLOP/s axis): '
            f'{html.escape(", ".join(skipped))}; the table has them.</p>' if skipped else "")
    w = doc["workload"]
    title = f"roofcalc · {doc['model']['name']} · {w['phase']} · {doc['hardware']['name']}"
    body = "\n".join([
        f"<h1>{html.escape(title)}</h1>", _pre(head, "header"),
        "<h2>The roofline</h2>", _figure(roofline_figure(r), "roofline", 640), note,
        "<h2>Kernels</h2>",
        '<p class="note">Per instance; <i>count</i> is how often a step runs the kernel. Times in the unit the '
        "header names.</p>",
        _table("kernels", headers, rows, values, left=("kernel", "shape", "bound", "flag"), what="kernels",
               bad=[k["flagged"] for k in doc["kernels"]]),
        "<h2>The step</h2>", _pre(foot, "footer")])
    return title, body


_KERNEL_KEYS = {"kernel": "name", "count": "count", "shape": "shape", "FLOPs": "flops", "bytes": "bytes",
                "weights": "weight_bytes", "activations": "activation_bytes", "KV cache": "kv_bytes", "AI": "intensity",
                "floor": "t_floor_s", "eff": "efficiency", "expected": "t_expected_s", "fixed": "t_fixed_s",
                "launches": "launches", "bound": "bound", "measured": "measured_s", "% roof": "roof_fraction",
                "x floor": "floor_multiple", "error": "error", "flag": "flagged"}


# --------------------------------------------------------------------------- sweeps


# per kind: (record key, chart title, axis title, scale) of the step time, tokens/s and memory charts; times in
# ms and memory in GB (10^9 bytes), as the table's columns
_SWEEP_CHARTS = {
    "decode": [("step_s", "step time = time per output token", "step time (ms)", 1e3),
               ("tokens_per_s", "tokens/s, all sequences", "tokens/s", 1),
               ("memory_bytes", "memory: weights + KV cache", "memory (GB)", 1e-9)],
    "prefill": [("ttft_s", "time to first token (the prefill step)", "TTFT (ms)", 1e3),
                ("prompt_tokens_per_s", "prompt tokens/s", "prompt tokens/s", 1),
                ("memory_bytes", "memory: weights + KV cache", "memory (GB)", 1e-9)],
    "request": [("mean_tpot_s", "mean time per output token after the first", "mean TPOT (ms)", 1e3),
                ("tokens_per_s", "output tokens/s over the whole request", "output tokens/s", 1),
                ("memory_bytes", "memory at the end: weights + KV cache", "memory (GB)", 1e-9)],
}


MAX_LEGEND_SERIES = 8  # more contexts (prompts) than this: one trace, its points coloured by the context


def _series_colors(n: int) -> list[str]:
    import plotly.colors

    return plotly.colors.qualitative.Plotly[:n]


def _one_trace(go, np, fig, row, series, groups, key, scale, x_key, s_key, letter, axis, unfit) -> None:
    """Many series: one line trace (grey, a gap between series) and one marker trace whose colour is the
    series' context or prompt, with a colour bar: a 1,000-point page stays small and quick to draw."""
    lx, ly = [], []
    for s in series:
        lx += [p[x_key] for p in groups[s]] + [np.nan]
        ly += [p[key] * scale for p in groups[s]] + [np.nan]
    fig.add_trace(go.Scatter(x=np.array(lx, dtype="f8"), y=np.array(ly, dtype="f8"), mode="lines", hoverinfo="skip",
                             line=dict(color="rgba(120,120,120,0.35)", width=1), showlegend=False), row=row, col=1)
    ordered = [p for s in series for p in groups[s]]
    fig.add_trace(go.Scatter(
        x=np.array([p[x_key] for p in ordered], dtype="i4"), y=np.array([p[key] * scale for p in ordered], dtype="f8"),
        mode="markers", showlegend=False, meta=f"{row}:points",
        marker=dict(size=6, color=np.array([p[s_key] for p in ordered], dtype="i4"), colorscale="Viridis",
                    showscale=row == 1, colorbar=dict(title=dict(text=f"{s_key} ({letter})"), thickness=14,
                                                      len=0.3, y=1, yanchor="top"),
                    symbol=[("circle" if p["fits"] else "x-thin-open") for p in ordered] if unfit else "circle",
                    line=dict(width=1)),
        text=[p.get("bound", "") + ("" if p["fits"] else ("; " if "bound" in p else "") + "does NOT fit")
              for p in ordered],
        hovertemplate=(f"{x_key} %{{x:,}} · {s_key} %{{marker.color:,}}<br>{axis} %{{y:.4r}}<br>%{{text}}"
                       "<extra></extra>")), row=row, col=1)


SWEEP_PANEL_PX = 360  # the height of each of the sweep figure's three panels


def sweep_figure(sw):
    """Step time, tokens/s and memory against batch (three panels, one x axis), a line per context or prompt
    (against the context or prompt, one line, when the batch is one), from the sweep's record; a step that does
    not fit is an x. One figure: one legend for the three (a click hides a context in all), one draw."""
    go = _plotly()
    import numpy as np
    from plotly.subplots import make_subplots

    from . import report
    from .units import capacity

    doc = report.sweep_record(sw)
    kind, pts = sw.kind, doc["points"]
    length = "context" if kind == "decode" else "prompt"
    batches = doc["workload"]["batches"]
    lengths = doc["workload"]["contexts" if kind == "decode" else "prompts"]
    by_batch = len(batches) > 1
    x_key, s_key = ("batch", length) if by_batch else (length, "batch")
    series = lengths if by_batch else batches
    letter = {"context": "S", "prompt": "P" if kind == "request" else "T", "batch": "B"}[s_key]
    colors = _series_colors(len(series))
    groups: dict[int, list[dict]] = {s: [] for s in series}
    for p in pts:
        groups[p[s_key]].append(p)
    charts = list(_SWEEP_CHARTS[kind])
    if kind == "request" and pts[0]["mean_tpot_s"] is None:  # one token: no decode step after the first
        charts[0] = ("ttft_s", "time to first token", "TTFT (ms)", 1e3)
    (t_key, _, t_axis, _), (r_key, _, r_axis, _) = charts[0], charts[1]
    hover = (f"{length} %{{customdata[0]:,}} · batch %{{customdata[1]:,}}<br>{t_axis.split(' (')[0]} "
             f"%{{customdata[2]:.3r}} ms<br>{r_axis} %{{customdata[3]:,.4r}}<br>memory %{{customdata[4]:.3r}} GB"
             f"<br>%{{text}}<extra>{letter}=%{{customdata[5]:,}}</extra>")
    cap = doc["hardware"]["capacity_bytes"]
    unfit = not all(p["fits"] for p in pts)
    many = len(series) > MAX_LEGEND_SERIES
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07,
                        subplot_titles=[f"{title} against {x_key}" for _, title, _, _ in charts])
    for row, (key, title, axis, scale) in enumerate(charts, 1):
        if many:
            _one_trace(go, np, fig, row, series, groups, key, scale, x_key, s_key, letter, axis, unfit)
        for s, color in zip([] if many else series, colors):
            g = groups[s]
            custom = np.array([[p[length], p["batch"], p[t_key] * 1e3, p[r_key], p["memory_bytes"] / 1e9, s]
                               for p in g], dtype="f8")
            fig.add_trace(go.Scatter(
                x=np.array([p[x_key] for p in g], dtype="i4"), y=np.array([p[key] * scale for p in g], dtype="f8"),
                mode="lines+markers", name=f"{letter}={s:,}", legendgroup=str(s), showlegend=row == 1,
                line=dict(color=color, width=1.5),
                marker=dict(color=color, size=7, line=dict(width=1.5, color=color),
                            symbol=[("circle" if p["fits"] else "x-thin-open") for p in g] if unfit else "circle"),
                text=[p.get("bound", "") + ("" if p["fits"] else ("; " if "bound" in p else "") + "does NOT fit")
                      for p in g],
                customdata=custom, hovertemplate=hover, meta=f"{row}:series-{s}"), row=row, col=1)
        if key == "memory_bytes" and cap:
            xs = [min(batches if by_batch else lengths), max(batches if by_batch else lengths)]
            fig.add_trace(go.Scatter(x=xs, y=[cap / 1e9] * 2, mode="lines", hoverinfo="skip",
                                     line=dict(color="#c0392b", width=2, dash="dash"),
                                     name=f"device memory: {capacity(cap)} = {cap / 1e9:.3g} GB"), row=row, col=1)
        fig.update_yaxes(title_text=axis, row=row, col=1)
    what = f"a line per {s_key}" if len(series) > 1 else f"one {s_key}"
    _layout(fig, f"the sweep against {x_key}, {what}" + (" · x: does not fit in memory" if unfit else ""))
    grid = dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False, showline=True, linecolor="#999", mirror=True,
                ticks="outside", type="log", exponentformat="SI")
    fig.update_xaxes(**grid)
    fig.update_yaxes(**grid)
    xs = [p[x_key] for p in pts]
    if max(xs) >= 100 * min(xs):  # two decades or more: labels at 1, 2 and 5 of each (fewer would leave
        fig.update_xaxes(dtick="D2")  # a narrow range unlabelled)
    for row, (key, _, _, scale) in enumerate(charts, 1):
        ys = [p[key] for p in pts if p[key]]
        if ys and max(ys) >= 100 * min(ys):
            fig.update_yaxes(dtick="D2", row=row, col=1)
    fig.update_xaxes(title_text=f"{x_key} ({'sequences' if x_key == 'batch' else 'tokens'})", row=3, col=1)
    fig.update_xaxes(showticklabels=True)  # on every panel, not the bottom one alone
    fig.update_annotations(font=dict(size=13), x=0, xanchor="left")  # the panels' titles, left; the legend right
    if many:  # the colour bar beside the first panel, the memory line's entry beside the last
        fig.update_layout(legend=dict(x=1.02, xanchor="left", y=0, yanchor="bottom"))
    else:
        fig.update_layout(legend=dict(orientation="h", x=1, xanchor="right", y=1.0, yanchor="bottom"))
    fig.update_layout(margin=dict(t=80))
    return fig


def _sweep_page(sw, defaults, notes=()) -> tuple[str, str]:
    from . import report

    doc = report.sweep_record(sw)
    head = report.sweep_header_lines(sw, defaults)
    foot = report.verdict_lines(sw) + list(notes)
    spec = report._SWEEP_COLUMNS[sw.kind]
    pts = doc["points"]
    headers = [h for h, _, _ in spec] + ["fits"]
    rows = [[f(p[key]) for _, key, f in spec] + ["yes" if p["fits"] else "NO: does not fit"] for p in pts]
    values = [[p[key] for _, key, _ in spec] + [int(p["fits"])] for p in pts]
    title = f"roofcalc · {doc['model']['name']} · {sw.kind} sweep · {doc['hardware']['name']}"
    body = [f"<h1>{html.escape(title)}</h1>", _pre(head, "header"),
            _figure(sweep_figure(sw), "sweep", 3 * SWEEP_PANEL_PX + 120)]
    body += [f"<h2>Points ({len(pts):,})</h2>",
             _table("points", headers, rows, values, left=("bound", "fits"), bad=[not p["fits"] for p in pts],
                    what="points"),
             *(["<h2>Verdicts</h2>", _pre(foot, "footer")] if foot else [])]
    return title, "\n".join(body)


# --------------------------------------------------------------------------- --tp / --pp / --ep compared


def tp_figure(tps):
    """Step time and communication (bars) and tokens/s per GPU (a line) at each size of the swept axis."""
    go = _plotly()
    from plotly.subplots import make_subplots

    from . import report

    doc = report.tp_sweep_record(tps)
    axis = doc["axis"]
    pts = doc[f"{axis}_points"]
    xs = [f"--{axis} {p[axis]}" + (f" ({p['gpus']} GPUs)" if p["gpus"] != p[axis] else "") for p in pts]
    fits = [p["fits"] is not False for p in pts]
    label = ["" if f else "does NOT fit" for f in fits]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    hover = [f"--{axis} {p[axis]} on {p['gpus']} GPUs<br>step {ms(p['step_s'])} ms, communication "
             f"{ms(p['communication_s'])} ms ({100 * p['communication_share']:.1f}% of the device time)<br>"
             f"tokens/s {sig(p['tokens_per_s'])} in all, {sig(p['tokens_per_s_per_gpu'])} per GPU<br>"
             f"memory {sig(p['memory_bytes_per_gpu'] / 1e9)} GB per GPU: "
             + ("fits" if p["fits"] else "does NOT fit" if p["fits"] is False else "capacity unknown")
             + f"<br>bound {p['bound']}" for p in pts]
    fig.add_trace(go.Bar(x=xs, y=[p["step_s"] * 1e3 for p in pts], name="step time", marker=dict(color=INDIGO),
                         text=label, textposition="inside", insidetextanchor="end", textfont=dict(color="white"),
                         hovertext=hover, hoverinfo="text", meta="step"), secondary_y=False)
    fig.add_trace(go.Bar(x=xs, y=[p["communication_s"] * 1e3 for p in pts], name="communication (collectives)",
                         marker=dict(color=AMBER), hovertext=hover, hoverinfo="text", meta="communication"),
                  secondary_y=False)
    fig.add_trace(go.Scatter(x=xs, y=[p["tokens_per_s_per_gpu"] for p in pts], mode="lines+markers",
                             name="tokens/s per GPU (right axis)", line=dict(color="#2a9d55", width=2),
                             marker=dict(size=9), hovertext=hover, hoverinfo="text", meta="per-gpu"),
                  secondary_y=True)
    _layout(fig, f"the step at each --{axis}: time (bars, left axis) and tokens/s per GPU (line, right axis)")
    fig.update_layout(barmode="group")
    grid = dict(showgrid=True, gridcolor="#e6e6e6", showline=True, linecolor="#999", exponentformat="SI")
    fig.update_xaxes(title_text=f"--{axis}", **grid)
    fig.update_yaxes(title_text="time per step (ms)", secondary_y=False, rangemode="tozero", **grid)
    fig.update_yaxes(title_text="tokens/s per GPU", secondary_y=True, showgrid=False, rangemode="tozero",
                     tickmode="auto", nticks=6)
    return fig


def _tp_page(tps, defaults, notes=()) -> tuple[str, str]:
    from . import report

    doc = report.tp_sweep_record(tps)
    text = report.render_tp_sweep(tps, "table", defaults, None)
    parts = text.split("\n\n")
    head, verdicts = parts[0].splitlines(), parts[-1].rstrip("\n").splitlines() + list(notes)
    headers, _, _, rows, _ = report.tp_display_rows(tps)
    axis = doc["axis"]
    keys = {axis: axis, "GPUs": "gpus", "memory per GPU GB": "memory_bytes_per_gpu", "fits": "fits",
            "step ms": "step_s", "communication ms": "communication_s", "communication %": "communication_share",
            "tokens/s": "tokens_per_s", "tokens/s per GPU": "tokens_per_s_per_gpu", "bound": "bound"}
    pts = doc[f"{axis}_points"]
    values = [[p.get(keys.get(h, ""), None) for h in headers] for p in pts]
    values = [[int(v) if isinstance(v, bool) else v for v in row] for row in values]
    title = f"roofcalc · {doc['model']['name']} · --{axis} compared · {doc['hardware']['name']}"
    body = "\n".join([f"<h1>{html.escape(title)}</h1>", _pre(head, "header"),
                      _figure(tp_figure(tps), "parallel", 460),
                      f"<h2>--{axis} sizes</h2>",
                      _table("sizes", headers, rows, values, left=("fits", "bound"),
                             bad=[p["fits"] is False for p in pts], what="sizes"),
                      "<h2>Verdicts</h2>", _pre(verdicts, "footer")])
    return title, body
