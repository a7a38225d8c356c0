"""`roofcalc measure --device cuda` fits the step model's kernel forms on the GPU it measures (measure.fit_curves,
roofcalc.fitting) and writes them into the profile (efficiency.fits), which predict reads back (predict.own_fits).

The oracle for the fit is a known form: points generated from the H100's shipped forms (data/kernel_fits.json,
fitted on AIConfigurator's measured H100 tables) with 2 % noise, on the grid a GPU's measure times. The fit must
recover them and predict's evaluation of the written document must be the fit's own."""

from __future__ import annotations

import json
import math
import random

import pytest

import roofcalc.measure as M
from roofcalc.cli import main
from roofcalc.hardware import load_profile
from roofcalc.predict import AttentionFit, GemmFit, kernel_fits

np = pytest.importorskip("numpy")

H100 = kernel_fits()["gpus"]["h100_sxm"]
PEAK, BW = H100["roofs"]["bf16"], H100["roofs"]["bandwidth"]
NOISE = 0.02  # lognormal sigma of the generated times: a GPU's run-to-run spread is a few percent


def gemm_time(f: GemmFit, m, k, n) -> float:
    """The form predict.GemmFit evaluates: fixed + max(2·M·N·K / (P·e_c), bytes / (B·e_m)), 16-bit operands."""
    comp, mem = f.efficiencies(m, n, k)
    return f.fixed_s + max(2 * m * n * k / (PEAK * comp), 2 * (m * k + n * k + m * n) / (BW * mem))


def attention_time(f: AttentionFit, attn, flops, nbytes) -> float:
    comp, mem, series = f.terms(attn)
    return f.fixed_s + max(flops / (PEAK * comp), nbytes / (BW * mem)) + series


def synthetic_curves(noise: float = NOISE, seed: int = 0) -> M.Curves:
    """The CUDA grid's points timed by the shipped H100 forms, each point's three passes 2 % apart."""
    rng = random.Random(seed)
    jitter = lambda t: tuple(t * math.exp(rng.gauss(0, noise)) for _ in range(3))  # noqa: E731
    gemm = GemmFit.from_doc(H100["gemm"]["bf16"], "h100")
    mm = tuple((r, k, n, M.Sample("mm", 2.0 * r * k * n, jitter(gemm_time(gemm, r, k, n))))
               for k, n in M.CURVE_SHAPES_CUDA for r in M.CURVE_ROWS_CUDA)
    dec = AttentionFit.from_doc(H100["attention"]["decode_bf16kv"], "h100")
    n_heads, kv_heads, hd = M.ATTENTION_HEADS
    att = []
    for b, s in M.ATTENTION_POINTS_CUDA:
        f, y = M._sdpa_cost(b, 1, s, 2)
        att.append((b, s, f, y, M.Sample("sdpa", f, jitter(attention_time(dec, (b, n_heads, kv_heads, 1, s, hd, 0, 2),
                                                                          f, y)))))
    pre = AttentionFit.from_doc(H100["attention"]["prefill_bf16kv"], "h100")
    pf = []
    for s in M.PREFILL_TOKENS_CUDA:
        f, y = M._sdpa_cost(1, s, s, 2, causal=True)
        pf.append((s, f, y, M.Sample("prefill", f, jitter(attention_time(pre, (1, n_heads, n_heads, s, s, hd, 0, 2),
                                                                         f, y)))))
    return M.Curves(mm, tuple(att), tuple(pf), (), 0, 2, "bf16")


@pytest.fixture(scope="module")
def fitted():
    c = synthetic_curves()
    fits = M.fit_curves(c, PEAK, BW)
    fits["source"] = "roofcalc measure, bf16 on a synthetic H100"
    return c, fits


def test_the_fit_recovers_a_known_form_on_shapes_it_did_not_see(fitted):
    _, fits = fitted
    sc = fits["scores"]
    # each weight shape (8), decode point (9) and prompt length (8) held out in turn and predicted by the fit of
    # the others: within a few times the 2 % noise of the median (a broken fit or form misses by tens of percent)
    assert sc["gemm"]["held_out"]["median_abs_log"] < 0.05 and sc["gemm"]["held_out"]["within_30"] == 1.0
    assert sc["decode_bf16kv"]["held_out"]["median_abs_log"] < 0.06
    assert sc["prefill_bf16kv"]["held_out"]["median_abs_log"] < 0.12
    for cls in ("gemm", "decode_bf16kv", "prefill_bf16kv"):
        assert sc[cls]["in_sample"]["median_abs_log"] < 0.05
        assert 0 < sc[cls]["spread"] <= 1  # the pessimistic end covers every point's slowest pass
    # the fixed costs come back near the forms' own: 3.0 us (GEMM), 10.7 - 1.7 us (decode, less the cache
    # write the table's call included), prefill's 12.9 - 1.7 us
    for got, want in ((fits["gemm"]["bf16"]["fixed_s"], H100["gemm"]["bf16"]["fixed_s"]),
                      (fits["attention"]["decode_bf16kv"]["fixed_s"], H100["attention"]["decode_bf16kv"]["fixed_s"]),
                      (fits["attention"]["prefill_bf16kv"]["fixed_s"],
                       H100["attention"]["prefill_bf16kv"]["fixed_s"])):
        assert abs(math.log(got / want)) < 0.25


def test_predict_evaluates_the_written_form_as_the_fit_did(fitted):
    """Two implementations of one form, fitting.evaluate (the fit's) and predict.GemmFit / AttentionFit (the step
    model's): the written document, read by predict, gives the fit's in-sample score (parameters are written to
    4 significant figures, so to 0.002)."""
    c, fits = fitted
    g = GemmFit.from_doc(fits["gemm"]["bf16"], "own")
    got = np.median([abs(math.log(smp.median_s / gemm_time(g, r, k, n))) for r, k, n, smp in c.matmul])
    assert got == pytest.approx(fits["scores"]["gemm"]["in_sample"]["median_abs_log"], abs=0.002)
    d = AttentionFit.from_doc(fits["attention"]["decode_bf16kv"], "own")
    n_heads, kv_heads, hd = M.ATTENTION_HEADS
    got = np.median([abs(math.log(smp.median_s / attention_time(d, (b, n_heads, kv_heads, 1, s, hd, 0, 2), f, y)))
                     for b, s, f, y, smp in c.attention])
    assert got == pytest.approx(fits["scores"]["decode_bf16kv"]["in_sample"]["median_abs_log"], abs=0.002)


def _profile(tmp_path, fits, c, name="NVIDIA H100 80GB HBM3", compute_capability=None):
    curves = M.Curves(c.matmul, c.attention, c.prefill_attention, (), 0, 2, "bf16", fits=fits)
    # the synthetic GPU's roof is the H100 datasheet's, which the forms are fractions of
    copy = M.Sample("copy", BW * 1e-3, (1e-3,) * 3)
    mat = {"bf16": (M.Sample("matmul 8192", PEAK * 1e-2, (1e-2,) * 3),)}
    m = M.Measurement("cuda", name, copy, copy, mat, M.Sample("launch", 1, (5e-6,) * 3), 80e9,
                      curves=curves, compute_capability=compute_capability)
    nominal, _ = M.closest_nominal(m, None)
    path = tmp_path / f"{name.split()[1].lower()}.json"
    M.write_profile(m, nominal, str(path))
    return m, path


def test_a_profile_carries_its_fits_and_the_step_takes_them(fitted, tmp_path, capsys):
    c, fits = fitted
    m, path = _profile(tmp_path, fits, c)
    doc = json.loads(path.read_text())
    assert doc["efficiency"]["fits"]["gemm"]["bf16"] == fits["gemm"]["bf16"]
    assert "curves" not in doc["efficiency"]  # the fitted forms take the matmuls, not a curve
    hw = load_profile(str(path))
    assert hw.efficiency.fitted_how == "profile" and set(hw.efficiency.attention_fits) == {"decode_bf16kv",
                                                                                            "prefill_bf16kv"}
    # loaded and saved, the same profile (the fits included)
    again = tmp_path / "again.json"
    from roofcalc.hardware import save_profile

    save_profile(hw, str(again), keep=doc)
    assert json.loads(again.read_text()) == doc

    args = ["meta-llama/Meta-Llama-3-8B", "--batch", "16", "--context", "2048", "--dtype", "bf16", "--engine", "vllm",
            "--format", "json"]
    assert main(args + ["--hw-file", str(path)]) == 0
    own = json.loads(capsys.readouterr().out)
    assert main(args + ["--hw", "h100"]) == 0
    shipped = json.loads(capsys.readouterr().out)
    assert own["hardware"]["kernel_fits"]["how"] == "profile"
    # forms refitted on points of the shipped forms predict the step the shipped forms predict: within 3 %
    # (the fit's own error on the shapes the step runs, 1-4 % above)
    ratio = own["step"]["predicted_s"] / shipped["step"]["predicted_s"]
    assert abs(math.log(ratio)) < 0.03
    # and its range is the fit's (every slowest pass covered), not a default's tens of times wider
    assert own["step"]["predicted_upper_s"] / own["step"]["predicted_s"] < 1.3
    assert main(args[:-2] + ["--hw-file", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "GEMM and attention kernels fitted on this GPU's own (roofcalc measure, bf16 on a synthetic H100" in text
    lines = M.curve_lines(m)
    assert lines[0].startswith("fitted    bf16 kernels on this roof") and max(map(len, lines)) <= 100


def test_a_measured_profile_takes_its_own_gpus_int4_factor(fitted, tmp_path):
    """measure records the GPU's compute capability (torch.cuda.get_device_capability) and writes the int4 factor the
    defaults give that GPU, so --hw-file predicts int4 as --hw does: Hopper's 0.542 (inclusionAI/humming PR #2), a
    GA100's by layer size (GA100_INT4_SIZE, Marlin README's A100 figure; 0.2616 at 8 MB). A profile written before
    measure recorded it takes its nominal catalog entry's; an int4 factor of the profile's own stays as given."""
    from roofcalc import Workload, analyze, load_shape
    from roofcalc.dtypes import dtype
    from roofcalc.hardware import find_hardware
    from roofcalc.predict import GA100_INT4_SIZE, GPU_DEQUANT, HOPPER_INT4, efficiencies
    from roofcalc.roofline import kernel_model, roofline, roofs

    c, fits = fitted
    _, path = _profile(tmp_path, fits, c, compute_capability=9.0)
    doc = json.loads(path.read_text())
    assert doc["compute_capability"] == 9.0 and doc["efficiency"]["int4"]["expected"] == HOPPER_INT4.expected
    assert load_profile(str(path)).efficiency.dequant["int4"] == HOPPER_INT4

    def int4_factor(profile, w=8e6):
        """int4's memory-side efficiency over the same matmul's 16-bit weights, at w bytes of weight."""
        hw = find_hardware(profile.nominal)
        m = kernel_model(hw, *roofs(hw, "bf16", measured=profile), profile)
        kw = dict(weight_bytes=w, depth=4096, width=4096)
        return efficiencies(m, "matmul", 1, "int4", **kw)[1] / efficiencies(m, "matmul", 1, "", **kw)[1]

    # written before measure recorded the capability: no capability, and Marlin's generic 1.0 as a default
    doc.pop("compute_capability")
    doc["efficiency"]["int4"] = {"expected": 1.0, "pessimistic": GPU_DEQUANT["int4"].pessimistic,
                                 "source": "default", "note": GPU_DEQUANT["int4"].note}
    path.write_text(json.dumps(doc))
    old = load_profile(str(path))
    assert old.efficiency.dequant["int4"].expected == 1.0  # no capability of its own:
    assert int4_factor(old) == pytest.approx(HOPPER_INT4.expected)  # its nominal's (H100-SXM-80GB, 9.0)
    # a GA100's profile: the factor by layer size, 0.2616 at 8 MB, as the A100's catalog entry gives it
    _, a100 = _profile(tmp_path, fits, c, name="NVIDIA A100-SXM4-80GB", compute_capability=8.0)
    ga100 = load_profile(str(a100))
    assert ga100.nominal.startswith("A100") and ga100.efficiency.dequant_size["int4"] is GA100_INT4_SIZE
    assert int4_factor(ga100) == pytest.approx(0.2616) and int4_factor(ga100, 128e6) == pytest.approx(0.8997)
    # an int4 factor of the profile's own stays, without the size table
    doc = json.loads(a100.read_text())
    doc["efficiency"]["int4"] = {"expected": 1.0, "pessimistic": 1.0, "source": "measured", "note": "my own"}
    mine_path = tmp_path / "mine.json"
    mine_path.write_text(json.dumps(doc))
    mine = load_profile(str(mine_path))
    assert mine.efficiency.dequant["int4"].note == "my own" and "int4" not in mine.efficiency.dequant_size
    assert int4_factor(mine) == pytest.approx(1.0)
    # so Llama-2-7B's int4 decode (layers of 8.4-45 MB) under CUDA graphs runs slower under the GA100's factor
    shape = load_shape("meta-llama/Llama-2-7b-hf")
    wl = Workload.decode(1, 500, weight_dtype=dtype("int4"), act_dtype=dtype("bf16"), kv_dtype=dtype("bf16"))
    hw = find_hardware(ga100.nominal)
    assert roofline(analyze(shape, wl), hw, measured_profile=ga100, impl="cuda-graph").step.predicted_s > \
        roofline(analyze(shape, wl), hw, measured_profile=mine, impl="cuda-graph").step.predicted_s


@pytest.mark.parametrize("edit, message", [
    (lambda f: f["gemm"]["bf16"].__setitem__("e_memory", [[1.0, -0.5]]), "efficiency.fits.gemm.bf16 holds a value"),
    (lambda f: f["gemm"]["bf16"].pop("tile"), "efficiency.fits.gemm.bf16 is not a fitted form"),
    (lambda f: f["attention"].__setitem__("decode_mla", {}), "efficiency.fits.attention has no class 'decode_mla'"),
    (lambda f: f["gemm"].__setitem__("int4", {}), "efficiency.fits.gemm has no dtype 'int4'"),
    (lambda f: f.__setitem__("gemm", [1, 2]), "efficiency.fits must be an object"),
    (lambda f: f["attention"]["decode_bf16kv"].__setitem__("kind", "prefill"), "must be of kind decode"),
])
def test_a_broken_fit_in_a_profile_is_refused_in_one_line(fitted, tmp_path, capsys, edit, message):
    c, fits = fitted
    _, path = _profile(tmp_path, json.loads(json.dumps(fits)), c)
    doc = json.loads(path.read_text())
    edit(doc["efficiency"]["fits"])
    path.write_text(json.dumps(doc))
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_cpu_profile_with_fits_is_refused(fitted, tmp_path, capsys):
    c, fits = fitted
    _, path = _profile(tmp_path, fits, c)
    doc = json.loads(path.read_text())
    doc["kind"] = "cpu"
    path.write_text(json.dumps(doc))
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(path)]) == 2
    assert "fitted kernel forms; this profile is a cpu's" in capsys.readouterr().err


def test_the_cuda_path_fits_and_writes_its_forms_on_a_shim(monkeypatch, tmp_path, capsys):
    """The plumbing of `measure --device cuda` (test_measure's shim: torch on the CPU, events on the wall
    clock): the curves on a small grid, the fit, the profile's fits and the lines that report them."""
    torch = pytest.importorskip("torch")
    from test_measure import _CudaOnCpu

    shim = _CudaOnCpu(torch, free=1_572_864)
    monkeypatch.setattr(M, "_torch_cuda", lambda: shim)
    monkeypatch.setattr(M, "MATMUL_SIZES_CUDA", (128, 256))
    monkeypatch.setattr(M, "CURVE_ROWS_CUDA", (1, 16, 64))
    monkeypatch.setattr(M, "CURVE_SHAPES_CUDA", ((256, 512), (512, 256)))
    monkeypatch.setattr(M, "ATTENTION_POINTS_CUDA", ((1, 128), (2, 128)))
    monkeypatch.setattr(M, "PREFILL_TOKENS_CUDA", (32, 64))
    monkeypatch.setattr(M, "_cache_bytes", lambda torch, device: 1 << 20)
    monkeypatch.setattr(M, "_host_per_op", lambda torch, device, dtype, progress: (None, 0))
    out = tmp_path / "gpu.json"
    assert main(["measure", "--device", "cuda", "--size", "8MiB", "--repeats", "3", "-q", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fitted    bf16 kernels on this roof" in text and "GEMM              fixed" in text
    doc = json.loads(out.read_text())
    fits = doc["efficiency"]["fits"]
    assert fits["source"].startswith("roofcalc measure, bf16 on Shim GPU")
    # the shim captures no CUDA graph, so every timing falls back to eager and the fit's source says so: (3 rows
    # x 2 weight shapes + 2 decode points + 1 prefill) x 3 passes (CURVE_PASSES["cuda"]) = 27
    assert fits["source"].endswith("; 27 timings eager (not capturable): the host's dispatch included")
    assert set(fits["attention"]) == {"decode_bf16kv", "prefill_bf16kv"} and set(fits["gemm"]) == {"bf16"}
    # 3 rows x 2 weight shapes; 2 decode points; of the 2 prompts the 64-token one is left out: its Q and output,
    # 2·32·64·64·2 = 524,288 bytes, exceed a quarter of the 1,572,864 bytes free (a small GPU measures less)
    assert [fits["scores"][c]["in_sample"]["rows"] for c in ("gemm", "decode_bf16kv", "prefill_bf16kv")] == [6, 2, 1]
    assert fits["scores"]["prefill_bf16kv"]["held_out"] is None  # one shape: nothing to hold out
    assert fits["peak_flops"] == max(doc["peak_flop_per_s"]["bf16"], 0) and fits["bandwidth"] == doc[
        "bandwidth_bytes_per_s"]
    hw = load_profile(str(out))
    assert hw.efficiency.gemm_fit is not None and hw.efficiency.fitted_how == "profile"
    # the shim says compute capability 9.0 (a Hopper GPU): the profile records it and Hopper's int4 factor
    from roofcalc.predict import HOPPER_INT4

    assert doc["compute_capability"] == 9.0 and hw.efficiency.dequant["int4"] == HOPPER_INT4
