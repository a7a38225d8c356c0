"""Results as pandas DataFrames, for notebooks: the JSON records' numbers, one row per kernel or point.

pandas is imported here only, when a frame is asked for (``pip install '.[pandas]'`` in roofcalc's checkout). Columns keep
the records' names, units in them (``t_floor_s``, ``bytes``, ``intensity`` in FLOP/byte); each row says
what it is of (model, hardware, dtypes, implementation, parallel layout), so frames of several runs concatenate.
"""

from __future__ import annotations

from typing import Any

from .errors import RoofcalcError


def _pandas():
    try:
        import pandas
    except ImportError:
        raise RoofcalcError("DataFrames need pandas: pip install '.[pandas]' in roofcalc's checkout") from None
    return pandas


def _ident(doc: dict[str, Any]) -> dict[str, Any]:
    """What a row is of: the model, the hardware, the dtypes, the implementation, the workload and the parallel
    layout (tp, pp, ep: 1 on one GPU; the numbers are then one rank's; ep_attention "dp" or "tp"); the batch is the
    step's sequences over all ranks, as a sweep's rows count them (a rank's workload runs B/ep under --ep)."""
    w, hw, par = doc["workload"], doc.get("hardware") or {}, doc.get("parallel") or {}
    engine = (doc.get("step") or {}).get("engine") or {}
    ident = {"model": doc["model"]["name"], "hardware": hw.get("name"), "engine": engine.get("name"),
             "impl": hw.get("impl"), "phase": w["phase"], "batch": par.get("batch", w["batch"])}  # (the step's)
    ident.update({k: w[k] for k in ("context", "prompt") if k in w})
    ident.update({k: w[k] for k in ("weight_dtype", "act_dtype", "kv_dtype", "compute_dtype")})
    ident.update({axis: par.get(axis, 1) for axis in ("tp", "pp", "ep")})
    ident["ep_attention"] = par.get("ep_attention", "dp")
    ident["attention"] = w.get("attention", "fused")
    ident["ubatch"] = w.get("ubatch", 0)
    return ident


def rows(result) -> list[dict[str, Any]]:
    """The rows of a result: one per kernel (per instance, execution order) of a single step (an Analysis or a
    Roofline), or one per point of a sweep or a --tp/--pp/--ep comparison, each saying what it is of."""
    from .parallel import TPSweep
    from .report import sweep_point_records, to_record, tp_sweep_record
    from .sweep import Sweep

    if isinstance(result, Sweep):
        return sweep_point_records(result)
    if isinstance(result, TPSweep):
        doc = tp_sweep_record(result)
        return [{"model": doc["model"]["name"], "hardware": doc["hardware"]["name"],
                 "engine": (doc["engine"] or {}).get("name"),
                 **{k: v for k, v in point.items() if k != "collectives"}} for point in doc[f"{doc['axis']}_points"]]
    from .calculator import Analysis
    from .errors import RoofcalcError
    from .roofline import Roofline

    if not isinstance(result, (Analysis, Roofline)):
        raise RoofcalcError(f"to_pandas takes an Analysis, a Roofline, a sweep or a --tp/--pp/--ep comparison, got "
                            f"{type(result).__name__}")
    doc = to_record(result)
    ident = _ident(doc)
    return [{**ident, **k} for k in doc["kernels"]]


def to_pandas(result):
    """:func:`rows` as a DataFrame. The step's totals are apart: :func:`step_to_pandas`. A column of numbers with
    gaps (a kernel measured or not: measured_s, error...) is float with NaN for the gaps, not objects holding None."""
    pd = _pandas()
    frame = pd.DataFrame(rows(result))
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object or not values.isna().any():
            continue
        if values.isna().all() and column in MEASURED_COLUMNS:  # nothing measured: NaN, the column still numbers
            frame[column] = values.astype(float)
        elif not values.isna().all() and \
                all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values.dropna()):
            frame[column] = pd.to_numeric(values)
    return frame


# a kernel row's figures that only a measurement gives (--kernel-times, --tpot): numbers, None where none was given
MEASURED_COLUMNS = frozenset({"measured_s", "error", "achieved_flop_per_s", "roof_fraction", "floor_multiple"})


def step_to_pandas(result):
    """The single step's totals (and, with a roofline, its times and bound) as a one-row frame."""
    from .report import to_record

    from .errors import RoofcalcError
    from .sweep import Sweep

    if isinstance(result, Sweep):
        raise RoofcalcError("step_to_pandas takes one step (an Analysis or a Roofline); a sweep's points are "
                            "roofcalc.to_pandas(sweep)")
    pd = _pandas()
    doc = to_record(result)
    row = {**_ident(doc), **{f"total_{k}": v for k, v in doc["totals"].items()}}
    for k, v in (doc.get("step") or {}).items():  # the step's flops, bytes and intensity are the totals' (kept
        if not isinstance(v, dict) and k not in doc["totals"]:  # once, as total_*)
            row[k] = v
    for k, v in ((doc.get("step") or {}).get("device_parts_s") or {}).items():
        row[f"device_{k}_s"] = v
    return pd.DataFrame([row])


def repr_html(result) -> str:
    """What a notebook shows for a result (IPython calls its ``_repr_html_``): its rows as an HTML table,
    without the columns every row shares (what they are of is one line above the table)."""
    import html

    from tabulate import tabulate

    table = rows(result)
    same = {k for k in table[0] if all(r.get(k) == table[0][k] for r in table)} if len(table) > 1 else set()
    shared = ", ".join(f"{k} {table[0][k]}" for k in table[0]
                       if k in same and table[0][k] is not None and not isinstance(table[0][k], (dict, list)))
    cells = [{k: v for k, v in r.items() if k not in same and not isinstance(v, (dict, list))} for r in table]
    step = ""
    if hasattr(result, "step") and hasattr(result.step, "predicted_s"):  # a single step: its time first, as the report
        from .report import bound_words, predicted_words
        from .units import ms

        st = result.step
        step = (f"<p><b>step</b> {html.escape(predicted_words(st, result.analysis))}: {html.escape(bound_words(st))}"
                + (f"; measured {ms(st.tpot_s)} ms" if st.tpot_s is not None else "") + "</p>")
    return step + f"<p>{html.escape(shared)}</p>" + tabulate(cells, headers="keys", tablefmt="html")
