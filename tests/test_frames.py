"""Results as DataFrames: kernel rows only, the step's totals apart, what each row is of in its columns."""

from __future__ import annotations

import subprocess
import sys

import pytest

import roofcalc
from roofcalc.hardware import find_hardware
from roofcalc.roofline import roofline
from roofcalc.sweep import sweep

pd = pytest.importorskip("pandas")
TINY = roofcalc.load_shape("TinyLlama/TinyLlama-1.1B")


def test_a_step_is_one_row_per_kernel_and_its_totals_apart():
    r = roofline(roofcalc.analyze(TINY, roofcalc.Workload.decode(1, 500)), find_hardware("T4"))
    df = roofcalc.to_pandas(r)
    # 18 kernel rows (15 per layer + embedding, final norm, lm_head); no "step total" row among them
    assert len(df) == 18 and "step total" not in set(df["name"])
    assert {"model", "hardware", "engine", "impl", "weight_dtype", "compute_dtype", "t_floor_s", "t_expected_s",
            "bound", "flops", "bytes"} <= set(df.columns)
    assert set(df["engine"]) == {"hf"}  # the default engine, transformers' eager generate
    assert set(df["hardware"]) == {"T4"} and set(df["model"]) == {"TinyLlama/TinyLlama-1.1B-Chat-v1.0"}
    # the rows are the JSON record's kernels: Σ count x flops is the step's FLOPs (2,161,694,976 in the README,
    # with the concatenated cache; the library's default writes it in place: same FLOPs)
    assert int((df["count"] * df["flops"]).sum()) == r.analysis.totals.flops
    step = roofcalc.step_to_pandas(r)
    assert len(step) == 1 and step.loc[0, "total_flops"] == r.analysis.totals.flops
    # the step's FLOPs, bytes and intensity are the totals': one column each, total_*
    assert not {"flops", "bytes", "intensity"} & set(step.columns) and len(set(step.columns)) == step.shape[1]
    # a column measured for some kernels is float, NaN where a kernel was not measured (not None in objects)
    timed = roofcalc.to_pandas(roofline(r.analysis, find_hardware("T4"), kernel_times={"q_proj": 5e-5}))
    assert timed["measured_s"].dtype == float and timed["error"].dtype == float
    assert timed["measured_s"].isna().sum() == 17 and timed.loc[timed["name"] == "q_proj", "measured_s"].item() == 5e-5
    # and nothing measured: the same columns float, all NaN (a frame of several runs concatenates as numbers)
    assert all(df[c].dtype == float and df[c].isna().all() for c in
               ("measured_s", "error", "achieved_flop_per_s", "roof_fraction", "floor_multiple"))
    with pytest.raises(roofcalc.RoofcalcError, match="no kernel named 'nope'; this step's: embed_tokens, "):
        r.analysis.kernel("nope")
    assert step.loc[0, "predicted_s"] == pytest.approx(r.step.predicted_s) and step.loc[0, "step_bound"] == r.step.bound


def test_a_sweep_is_one_tidy_frame():
    sw = sweep(TINY, find_hardware("T4"), batches=[1, 4, 16], contexts=[512, 2048])
    df = roofcalc.to_pandas(sw)
    assert len(df) == 3 * 2 and list(df[["batch", "context"]].itertuples(index=False, name=None)) == \
        [(b, s) for b in (1, 4, 16) for s in (512, 2048)]
    assert {"model", "hardware", "engine", "predicted_s", "tokens_per_s", "bound", "fits"} <= set(df.columns)
    assert set(df["engine"]) == {"hf"}  # the default engine, as a single step's rows say


def test_a_sweep_and_a_tp_comparison_name_their_engine_in_json(capsys):
    """A sweep's JSON carries the engine record a single step's does (step.engine), and each point names it."""
    import json

    from roofcalc.cli import main

    for args in (["tinyllama", "-b", "1,8", "--engine", "vllm"],
                 ["meta-llama/Llama-2-7b-hf", "--tp", "1,2", "--hw", "H100-SXM", "--engine", "trtllm"]):
        assert main([*args, "-f", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        name = args[args.index("--engine") + 1]
        assert doc["engine"]["name"] == name and doc["engine"]["impl_used"] == "cuda-graph"
        assert not doc["engine"]["impl_by_hand"]
    assert {p["engine"] for p in json.loads(_json(["tinyllama", "-b", "1,8", "--engine", "vllm"], capsys))["points"]} \
        == {"vllm"}


def _json(args, capsys) -> str:
    from roofcalc.cli import main

    assert main([*args, "-f", "json"]) == 0
    return capsys.readouterr().out


def test_each_row_says_which_parallel_layout_it_is_of():
    """Rows of runs on several GPUs carry the layout (their numbers are one rank's), so frames of a one-GPU run and
    of a --tp 2 run concatenate and stay apart: tp, pp and ep columns, 1 on one GPU."""
    from roofcalc.parallel import Parallel, RankAnalyzer, analyze_parallel

    one = roofcalc.to_pandas(sweep(TINY, find_hardware("H100"), batches=[1, 4], contexts=[512]))
    two = roofcalc.to_pandas(sweep(TINY, find_hardware("H100"), batches=[1, 4], contexts=[512],
                                   analyzer=RankAnalyzer(TINY, Parallel(tp=2))))
    both = pd.concat([one, two])
    assert both.groupby(["tp", "pp", "ep"]).size().to_dict() == {(1, 1, 1): 2, (2, 1, 1): 2}
    step = roofline(analyze_parallel(TINY, roofcalc.Workload.decode(1, 500), Parallel(tp=2)), find_hardware("H100"))
    assert set(roofcalc.to_pandas(step)[["tp", "pp", "ep"]].itertuples(index=False, name=None)) == {(2, 1, 1)}
    # under --ep 2 (data-parallel attention) a rank runs 2 of a step's 4 sequences: the single step's rows and the
    # sweep's both count the step's 4, so the frames join on batch
    from roofcalc.parallel import LocalBatchAnalyzer

    moe, par = roofcalc.load_shape("mistralai/Mixtral-8x7B-v0.1"), Parallel(ep=2)
    swept = roofcalc.to_pandas(sweep(moe, find_hardware("H100"), batches=[4], contexts=[512],
                                     analyzer=LocalBatchAnalyzer(moe, par)))
    single = roofcalc.to_pandas(roofline(analyze_parallel(moe, roofcalc.Workload.decode(4, 512), par),
                                         find_hardware("H100")))
    assert set(swept["batch"]) == set(single["batch"]) == {4}


def test_the_main_job_does_not_import_pandas():
    code = "import roofcalc.cli, sys; roofcalc.cli.main(['TinyLlama/TinyLlama-1.1B']); print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


def test_a_notebook_shows_a_step_as_a_table():
    """IPython shows a result through its _repr_html_: the kernel rows as an HTML table (18 of them, as the
    frame above), the columns every row shares (model, hardware, dtypes) said once above it; no pandas needed."""
    step = roofcalc.analyze(TINY, roofcalc.Workload.decode(1, 500))
    html = step._repr_html_()
    head, table = html.split("</p>")
    assert "model TinyLlama/TinyLlama-1.1B-Chat-v1.0" in head and "weight_dtype fp16" in head
    assert table.startswith("<table") and table.count("<tr>") == 1 + 18 and "<td>q_proj " in table
    code = ("import sys; sys.modules['pandas'] = None; import roofcalc; s = roofcalc.analyze(roofcalc.load_shape("
            "'TinyLlama/TinyLlama-1.1B'), roofcalc.Workload.decode()); print(s._repr_html_().count('<tr>'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "19"


def test_a_notebook_shows_a_placed_step_and_a_sweep_as_tables():
    """A Roofline shows its predicted step time, range and bound as the report's time line says them, then its 18
    placed kernels (with their bounds); a sweep its 3 x 2 points, one row each."""
    r = roofline(roofcalc.analyze(TINY, roofcalc.Workload.decode(1, 500)), find_hardware("T4"))
    html = r._repr_html_()
    assert html.count("<tr>") == 1 + 18 and "hardware T4" in html.split("</p>")[1] and "<th>bound" in html
    line = " ".join(next(x for x in roofcalc.render(r).split("\n\n")[-1].split("\n") if x.startswith("time")).split())
    said = line.split(None, 1)[1].split(":")[0]  # "predicted 17.8 ms (80% range 14.6 to 33.3 ms)"
    assert said.split(" (")[0] in html and said.split(" (")[1].rstrip(")") in html
    sw = sweep(TINY, find_hardware("T4"), batches=[1, 4, 16], contexts=[512, 2048])
    assert sw._repr_html_().count("<tr>") == 1 + 6
    from roofcalc.parallel import tp_sweep

    tps = tp_sweep(roofcalc.load_shape("llama-2-7b"), roofcalc.Workload.decode(1, 500), [1, 2, 4],
                   find_hardware("H100-SXM"))
    assert tps._repr_html_().count("<tr>") == 1 + 3  # one row a --tp size
