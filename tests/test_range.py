"""The step's range: calibrated on a GPU with fitted kernels, the floors to the pessimistic ends elsewhere.

The calibrated half-widths are data/calibration.json's (benchmarks/calibrate.py writes them from NVIDIA
AIConfigurator 0.12's measured serving runs, which this repo does not keep, and benchmarks/published.py's cases);
every expected value below is that file's number and hand arithmetic, or the step's own floors and pessimistic
ends.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from roofcalc.calculator import Workload, analyze, dtype
from roofcalc.hardware import find_hardware
from roofcalc.parallel import Parallel, analyze_parallel
from roofcalc.predict import StepTimes, calibration, calibrated_band
from roofcalc.roofline import roofline
from roofcalc.sources import load_shape

ROOT = Path(__file__).resolve().parent.parent


def test_the_calibration_says_where_it_comes_from():
    """Two sources per GPU count: the 910 serving runs benchmarks/silicon.py predicts and the 36 published cases of
    benchmarks/published.py (25 on one GPU, 11 on several; docs/validation.md); the band is the larger of their
    quantiles, so it holds at least 80 % of each."""
    published = _bench("published")
    doc = calibration()
    assert doc["coverage"] == 0.8 and "silicon_sample.csv" in doc["sources"]["serving"]
    b = doc["bands"]
    assert b["one_gpu"]["sources"]["serving"]["runs"] + b["several_gpus"]["sources"]["serving"]["runs"] == 910
    assert (b["one_gpu"]["sources"]["published"]["runs"], b["several_gpus"]["sources"]["published"]["runs"]) == \
        (len(published.CASES), len(published.CASES_MULTI))
    for g in b.values():  # the larger source's band, rounded up in the 4th decimal (the source's own, to 4)
        larger = g["sources"][g["from"]]["band"]
        assert larger == max(s["band"] for s in g["sources"].values())
        assert larger - 1e-4 <= g["band"] <= larger + 1e-4
    assert calibrated_band() == (b["one_gpu"]["band"], b["several_gpus"]["band"])


def test_the_shipped_band_is_the_step_models_own():
    """The published cases' half of the calibration, recomputed from the step model as it is now, equals the one
    shipped: a change that moves the predictions fails here until benchmarks/calibrate.py is run again (the
    serving runs' half needs AIConfigurator's data, which the repo does not keep)."""
    calibrate = _bench("calibrate")
    scores = calibrate.published_scores()
    for g, got in scores.items():
        shipped = calibration()["bands"][g]["sources"]["published"]["band"]
        assert calibrate.conformal_band(got) == pytest.approx(shipped, abs=1e-4)


def test_a_calibrated_range_by_hand():
    """predicted 10 ms (device 10, host 2, overlapped) at band 0.25: e^±0.25 = x0.7788 and x1.2840; a floor of
    9 ms lifts the lower end to it."""
    t = StepTimes(floor_s=0.006, device_s=0.010, device_upper_s=0.020, host_s=0.002, host_upper_s=0.003,
                  compute_s=0.0, overlap=True, band=0.25)
    assert t.predicted_s == 0.010
    assert t.predicted_lower_s == pytest.approx(0.007788, rel=1e-4)
    assert t.predicted_upper_s == pytest.approx(0.012840, rel=1e-4)
    assert t.holds(0.012) and not t.holds(0.0130) and not t.holds(0.0077)
    high_floor = StepTimes(0.009, 0.010, 0.020, 0.002, 0.003, 0.0, True, band=0.25)
    assert high_floor.predicted_lower_s == 0.009
    bounds = StepTimes(0.006, 0.010, 0.020, 0.002, 0.003, 0.0, True)  # no band: floors to pessimistic ends
    assert (bounds.predicted_lower_s, bounds.predicted_upper_s) == (0.006, 0.020)


def test_the_worked_example_takes_the_one_gpu_band_and_a_cpu_keeps_its_floors():
    """TinyLlama on the default T4 (fitted kernels: the A100's, its generation's) takes the one-GPU band; the same
    step on a CPU (no fitted kernels) ranges from its floors to its pessimistic ends."""
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    wl = Workload.decode(1, 500, **{k: dtype("fp16") for k in ("weight_dtype", "act_dtype", "kv_dtype")})
    st = roofline(analyze(shape, wl), find_hardware("T4")).step
    one, _ = calibrated_band()
    assert st.times.band == one
    assert st.predicted_lower_s == pytest.approx(max(st.sum_floor_s, st.predicted_s * math.exp(-one)), rel=1e-12)
    assert st.predicted_upper_s == pytest.approx(st.predicted_s * math.exp(one), rel=1e-12)
    assert st.predicted_lower_s > st.sum_floor_s  # host-bound: the floors lie far below
    bf16 = Workload.decode(1, 500, **{k: dtype("bf16") for k in ("weight_dtype", "act_dtype", "kv_dtype")})
    cpu = roofline(analyze(shape, bf16), find_hardware("cpu")).step
    assert cpu.times.band == 0.0
    assert cpu.predicted_lower_s == pytest.approx(cpu.sum_floor_s, rel=1e-12)
    assert cpu.predicted_upper_s == pytest.approx(cpu.times.device_upper_s + cpu.times.host_upper_s, rel=1e-12)


def test_a_step_with_collectives_takes_the_several_gpu_band():
    shape = load_shape("meta-llama/Llama-2-70b-hf")
    r = roofline(analyze_parallel(shape, Workload.decode(1, 1000), Parallel(8)), find_hardware("H100-SXM"),
                 impl="cuda-graph")
    assert any(p.kernel.kind == "collective" for p in r.step.placements)
    _, several = calibrated_band()
    assert r.step.times.band == several
    assert r.step.predicted_upper_s / r.step.predicted_s == pytest.approx(math.exp(several), rel=1e-12)


def test_every_stage_of_a_pipeline_takes_the_several_gpu_band():
    """--pp 2 alone: stage 0 sends its activations on (a collective-kind term), the last stage has no collective;
    both run on two GPUs, so both take the several-GPU band, in the single step and in the sweep."""
    from roofcalc.parallel import PipelineAnalyzer, StageAnalyzer, pipeline_roofline
    from roofcalc.sweep import sweep

    shape, h100 = load_shape("TinyLlama/TinyLlama-1.1B"), find_hardware("H100")
    _, several = calibrated_band()
    par = Parallel(1, pp=2)
    last = StageAnalyzer(shape, par, 1, 2)(Workload.decode(2, 500))
    assert not any(k.kind == "collective" for k in last.kernels)
    assert roofline(last, h100, impl="cuda-graph").step.times.band == several
    r = pipeline_roofline(shape, Workload.decode(2, 500), 2, 2, h100, impl="cuda-graph")
    assert r.step.times.band == several
    g = sweep(shape, h100, batches=[2], contexts=[500], impl="cuda-graph", analyzer=PipelineAnalyzer(shape, par)).grid
    assert g.predicted_upper_s[0, 0] / g.predicted_s[0, 0] == pytest.approx(math.exp(several), rel=1e-9)


def test_a_profiles_own_kernels_take_no_band():
    """The calibration describes the shipped fitted kernels: a model whose kernels a profile fitted on its own GPU
    (own_fits) is not calibrated, and ranges from its floors."""
    from roofcalc.predict import default_model, own_fits

    fitted = default_model("gpu", fits="h100_sxm")
    assert fitted.band == calibrated_band()
    assert own_fits(fitted, {"gemm": {}, "attention": {}}, "a profile").band == ()


def test_a_pipeline_grid_keeps_its_floors_apart_from_its_range():
    """Under --pp the grid's floors are the stages' floors combined (Σ stages + (M − 1) x the slowest), not the
    range's lower end."""
    from roofcalc.parallel import PipelineAnalyzer
    from roofcalc.sweep import sweep

    shape = load_shape("TinyLlama/TinyLlama-1.1B")  # eager: host-bound, far above its floors
    sw = sweep(shape, find_hardware("H100"), batches=[1], contexts=[1000], impl="hf-eager",
               analyzer=PipelineAnalyzer(shape, Parallel(1, pp=2)))
    g = sw.grid
    assert g.floor_s[0, 0] < g.predicted_lower_s[0, 0] < g.predicted_s[0, 0] < g.predicted_upper_s[0, 0]
    assert g.predicted_upper_s[0, 0] / g.predicted_s[0, 0] == pytest.approx(math.exp(calibrated_band()[1]), rel=1e-9)


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


def test_the_band_a_run_needs_by_hand():
    """One part, expected 10 ms, floors 6 ms: a run at 12 ms needs log(1.2) = 0.1823 above; at 8 ms log(10/8) =
    0.2231 below; at 5 ms no band (under the floors). Two parts (10, floors 9) and (10, floors 0) at 12 ms: the
    first stays at 9, so the second must come to 3 = 10·e^-b, b = log(10/3) = 1.2040."""
    need = _bench("silicon").band_needed
    assert need(0.012, [(0.010, 0.006)]) == pytest.approx(math.log(1.2), abs=1e-9)
    assert need(0.008, [(0.010, 0.006)]) == pytest.approx(math.log(1.25), abs=1e-9)
    assert need(0.005, [(0.010, 0.006)]) == math.inf
    assert need(0.012, [(0.010, 0.009), (0.010, 0.0)]) == pytest.approx(math.log(10 / 3), abs=1e-9)


def test_the_conformal_band_by_hand():
    """Nine runs: the ceil(10 x 0.8) = 8th smallest score; four: the ceil(5 x 0.8) = 4th, the largest; three are
    too few for 80 % (ceil(4 x 0.8) = 4th of three); a run no band holds (inf) counts as the largest."""
    band = _bench("calibrate").conformal_band
    scores = [0.09, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.01]
    assert band(scores) == 0.08
    assert band([0.1, 0.2, 0.3, 0.4]) == 0.4
    assert band([0.08, math.inf, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07]) == 0.08  # the 8th of nine
    assert band([0.1, math.inf, 0.3, 0.2, 0.5]) == math.inf  # ceil(6 x 0.8) = 5th of five: the inf
    with pytest.raises(ValueError):
        band([0.1, 0.2, 0.3])


def test_a_calibrated_range_is_informative_however_wide(monkeypatch):
    """profile.prediction_check judges the floors-to-pessimistic range by the spread its sources allow
    (SOURCE_SPREAD); a calibrated range's width is what measured steps needed, so it says something even where
    e^band passes that spread: a several-GPU band of 0.708 (e^0.708 = 2.03 > 2, the one calibrate.py wrote
    before the trtllm-0.6 preset), put in the calibration file's place as calibrate.with_band does."""
    import roofcalc.predict as P
    from roofcalc.measure import SOURCE_SPREAD
    from roofcalc.profile import prediction_check

    monkeypatch.setitem(P._DATA, "calibration.json",
                        {"coverage": 0.8, "bands": {g: {"band": 0.708} for g in ("one_gpu", "several_gpus")}})
    r = roofline(analyze_parallel(load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(1, 1000), Parallel(8)),
                 find_hardware("H100-SXM"), impl="cuda-graph")
    assert math.exp(r.step.times.band) > SOURCE_SPREAD
    check = prediction_check(r.step)
    assert check["calibrated"] and check["informative"]
    assert check["upper_over_lower"] > check["bound"]  # what the sources' rule alone would have refused
