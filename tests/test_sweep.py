"""The decode grid (arrays) against the scalar calculator, point by point."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from roofcalc import RoofcalcError, Workload, analyze, dtype, load_shape  # noqa: E402
from roofcalc.roofline import Roof, place  # noqa: E402
from roofcalc.inputs import parse_sizes  # noqa: E402
from roofcalc.sweep import batch_verdicts, decode_grid, prefill_grid, request_grid  # noqa: E402

ROOF = Roof(320e9, 65e12)
MODELS = ["TinyLlama/TinyLlama-1.1B", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen3-8B", "google/gemma-2b", "google/gemma-2-9b",
          "mistralai/Mixtral-8x7B-v0.1", "deepseek-ai/DeepSeek-V2-Lite", "openai-community/gpt2", "microsoft/phi-2"]


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(MODELS), b=st.integers(1, 512), s=st.integers(1, 20_000))
def test_grid_equals_scalar_calculator(model, b, s):
    shape = load_shape(model)
    grid = decode_grid(shape, [1, b], [s, 7], ROOF)
    step = analyze(shape, Workload.decode(b, s))
    verdict = place(step, ROOF)
    t = step.totals
    assert grid.flops[1, 0] == t.flops
    assert grid.bytes[1, 0] == t.bytes
    assert grid.weight_bytes[1, 0] == t.weight_bytes
    assert grid.kv_bytes[1, 0] == t.kv_bytes
    assert grid.floor_s[1, 0] == pytest.approx(verdict.sum_floor_s, rel=1e-12)
    assert grid.times.host_s[1, 0] == pytest.approx(verdict.times.host_s)


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(MODELS), b=st.integers(1, 1024), s=st.integers(1, 20_000),
       impl=st.sampled_from(["hf-eager", "fused", "cuda-graph"]), hw=st.sampled_from(["A100", "T4", "H100", "EPYC-9654"]),
       dt=st.sampled_from(["fp16", "int4"]))
def test_every_sweep_time_equals_the_single_step_report(model, b, s, impl, hw, dt):
    """The one step model: a sweep's predicted, lower and upper times at any point are the single-step
    report's (roofline()), with the default efficiencies and host model of that device."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import roofline
    from roofcalc.sweep import sweep

    shape, device = load_shape(model), find_hardware(hw)
    compute = "bf16" if hw == "EPYC-9654" else "fp16"
    kw = dict(weight_dtype=dtype(compute if dt == "fp16" else dt), act_dtype=dtype(compute), kv_dtype=dtype(compute))
    sw = sweep(shape, device, batches=[1, b], contexts=[s, 7], impl=impl, **kw)
    r = roofline(analyze(shape, Workload.decode(b, s, **kw)), device, impl=impl)
    g, st_ = sw.grid, r.step
    i, j = g.batches.tolist().index(b), g.contexts.tolist().index(s)  # (a sweep's sizes ascending, each once)
    assert g.predicted_s[i, j] == pytest.approx(st_.predicted_s, rel=1e-12)
    assert g.predicted_lower_s[i, j] == pytest.approx(st_.predicted_lower_s, rel=1e-12)
    assert g.predicted_upper_s[i, j] == pytest.approx(st_.predicted_upper_s, rel=1e-12)
    assert g.bound[i, j] == st_.bound
    pre = sweep(shape, device, batches=[b], prompts=[min(s, 64)], impl=impl, **kw).grid
    rp = roofline(analyze(shape, Workload.prefill(b, min(s, 64), **kw)), device, impl=impl).step
    assert pre.predicted_s[0, 0] == pytest.approx(rp.predicted_s, rel=1e-12)
    assert pre.predicted_upper_s[0, 0] == pytest.approx(rp.predicted_upper_s, rel=1e-12)


TP_MODELS = ["meta-llama/Llama-2-70b-hf", "mistralai/Mixtral-8x7B-v0.1", "Qwen/Qwen3-8B", "google/gemma-2b"]


@settings(max_examples=25, deadline=None)
@given(model=st.sampled_from(TP_MODELS), tp=st.sampled_from([2, 4, 16]), b=st.integers(1, 1024),
       s=st.integers(1, 20_000), impl=st.sampled_from(["hf-eager", "fused", "cuda-graph"]))
def test_every_tp_sweep_time_equals_the_single_step_report(model, tp, b, s, impl):
    """--tp in a sweep: one rank's step at any point is the single-step report's, its collectives timed on
    the link (NVLink) or, for 16 ranks over 8-GPU nodes, the network, as there."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import Parallel, RankAnalyzer, analyze_parallel
    from roofcalc.roofline import roofline
    from roofcalc.sweep import sweep

    shape, device = load_shape(model), find_hardware("H100")
    if shape.n_heads % tp:  # gemma-2b's 8 heads do not split 16 ways
        tp = 4
    par = Parallel(tp)
    sw = sweep(shape, device, batches=[1, b], contexts=[s, 7], impl=impl, analyzer=RankAnalyzer(shape, par))
    r = roofline(analyze_parallel(shape, Workload.decode(b, s), par), device, impl=impl).step
    g = sw.grid
    i, j = g.batches.tolist().index(b), g.contexts.tolist().index(s)  # (a sweep's sizes ascending, each once)
    assert g.flops[i, j] == analyze_parallel(shape, Workload.decode(b, s), par).totals.flops
    assert g.predicted_s[i, j] == pytest.approx(r.predicted_s, rel=1e-12)
    assert g.predicted_lower_s[i, j] == pytest.approx(r.predicted_lower_s, rel=1e-12)
    assert g.predicted_upper_s[i, j] == pytest.approx(r.predicted_upper_s, rel=1e-12)
    assert g.bound[i, j] == r.bound
    pre = sweep(shape, device, batches=[b], prompts=[min(s, 64)], impl=impl, analyzer=RankAnalyzer(shape, par)).grid
    rp = roofline(analyze_parallel(shape, Workload.prefill(b, min(s, 64)), par), device, impl=impl).step
    assert pre.predicted_s[0, 0] == pytest.approx(rp.predicted_s, rel=1e-12)


def test_a_tp_sweep_times_its_collectives_on_the_link():
    """Llama-2-70B, --tp 4, batch 64, context 1000, fp16 on H100 (NVLink 4: 450 GB/s a direction): an
    all-reduce of 64 x 8192 x 2 = 1,048,576 bytes sends 2 x 3/4 of it, 1,572,864 bytes, in 3.495 us;
    the sweep's floor counts 161 of them (80 layers x 2 + the embedding) beside the kernels."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import Parallel, RankAnalyzer, analyze_parallel
    from roofcalc.roofline import roofs

    shape, device = load_shape("meta-llama/Llama-2-70b-hf"), find_hardware("H100")
    roof = roofs(device, "fp16")[0]
    assert roof.link_bytes_per_s == 450e9
    par = Parallel(4)
    g = decode_grid(shape, [64], [1000], roof, analyzer=RankAnalyzer(shape, par))
    a = analyze_parallel(shape, Workload.decode(64, 1000), par)
    comm = [k for k in a.kernels if k.kind == "collective" and k.role == "all_reduce"]
    assert sum(k.count for k in comm) == 161 and {k.link_bytes for k in comm} == {1_572_864}
    without = place(a, roof).sum_floor_s - sum(k.count * 1_572_864 / 450e9 for k in comm)
    gather = [k for k in a.kernels if k.role == "all_gather"][0]  # 64 x 8000 x 2 bytes, 3 copies sent
    assert gather.link_bytes == 3 * 64 * 8000 * 2
    assert g.floor_s[0, 0] == pytest.approx(place(a, roof).sum_floor_s, rel=1e-12)
    assert g.floor_s[0, 0] - without == pytest.approx(161 * 1_572_864 / 450e9, rel=1e-9)


def test_a_sweep_checks_its_corners_against_the_single_step(monkeypatch):
    import roofcalc.sweep as sweep_module
    from roofcalc.hardware import find_hardware

    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    real = sweep_module.decode_grid

    def off_by_a_little(*a, **k):  # a grid whose step model drifted from the scalar path
        g = real(*a, **k)
        from dataclasses import replace

        return replace(g, times=replace(g.times, device_s=g.times.device_s * 1.001))

    monkeypatch.setattr(sweep_module, "decode_grid", off_by_a_little)
    with pytest.raises(AssertionError, match="differs from the single step"):
        sweep_module.sweep(shape, find_hardware("A100"), batches=[1, 8], contexts=[128, 4096], impl="cuda-graph")


# TinyLlama (L=22, D=2048, N=32, K=4, H=64, F=5632, V=32000) decode at context S=2048, fp16, the new token's K and
# V written in place (IN_PLACE), by hand.
# FLOPs per sequence, per layer:
#   q, o 2·D·D = 8,388,608 each; k, v 2·D·256 = 1,048,576 each; gate, up, down 2·D·F = 23,068,672 each
#   -> linears 88,080,384
#   attention QKᵀ + PV 4·S·N·H = 16,777,216, softmax 5·N·S = 327,680 -> 17,104,896
#   RMSNorm 2 x 4·D = 16,384; rotary 3·(N+K)·H = 6,912; residuals 2 x D = 4,096; SiLU×up 3·F = 16,896
#   -> 105,229,568 per layer, x 22 = 2,315,050,496
# + final norm 4·D = 8,192 + lm_head 2·D·V = 131,072,000  -> 2,446,130,688 per sequence
TINY_FLOPS_PER_SEQ = 2_446_130_688
# Bytes per sequence that are not weights shared by the batch (fp16, 2 bytes a value):
#   per layer: norms 2 x (D + D)·2 = 16,384; q (D + D)·2 = 8,192; k, v (D + 256)·2 = 4,608 each;
#   rotary (2304 in + 128 cos/sin + 2304 out)·2 = 9,472; cache write reads 512 values = 1,024;
#   attention reads q, writes out 2 x D·2 = 8,192; o 8,192; residuals 2 x 3·D·2 = 24,576;
#   gate, up, down (D + F)·2 = 15,360 each; SiLU×up 3·F·2 = 33,792  -> 165,120, x 22 = 3,632,640
#   + embedding row gathered 4,096 (weight bytes) and written 4,096, final norm 8,192,
#   lm_head reads 4,096, writes V·2 = 64,000  -> 3,717,120
TINY_ACT_PER_SEQ = 3_717_120
#   KV cache: reads 2048 positions, writes 1, x 22,528 bytes = 46,159,872
TINY_KV_PER_SEQ = (2048 + 1) * 22_528
# Weight bytes every step reads whatever the batch: 2,069,024,768 (tests/test_calculator.py derives it)
TINY_WEIGHTS = 2_069_024_768
IN_PLACE = dict(cache_update="in-place", eager_ops=False)  # the arithmetic above: a serving engine's cache and fused
# kernels, not the default concat and eager ops


def test_tinyllama_kv_term_bends_intensity_below_batch():
    """Context 2048, batch 64: AI = 64·f / (W + 64·(a + kv)); without the KV term it would be 67.9."""
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    grid = decode_grid(shape, [64], [2048], ROOF, **IN_PLACE)
    flops = 64 * TINY_FLOPS_PER_SEQ  # 156,552,364,032
    nbytes = TINY_WEIGHTS + 64 * (TINY_ACT_PER_SEQ + TINY_KV_PER_SEQ)  # 5,261,152,256
    assert grid.flops[0, 0] == flops
    assert grid.bytes[0, 0] == nbytes
    assert grid.kv_bytes[0, 0] == 64 * TINY_KV_PER_SEQ  # 2,954,231,808: 1.43x the weights
    assert grid.intensity[0, 0] == pytest.approx(flops / nbytes, rel=1e-15)  # 29.756
    no_kv = flops / (TINY_WEIGHTS + 64 * TINY_ACT_PER_SEQ)  # 67.86: AI ≈ B while KV bytes are small
    assert grid.intensity[0, 0] == pytest.approx(no_kv * (nbytes - 64 * TINY_KV_PER_SEQ) / nbytes, rel=1e-15)
    assert 29.7 < grid.intensity[0, 0] < 29.8 < 64 < no_kv


def test_intensity_close_to_batch_while_kv_is_small():
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    grid = decode_grid(shape, [1, 2, 4, 8], [16], ROOF, **IN_PLACE)
    # at S=16 the KV cache is 16·22,528 = 360 kB per sequence (the new token written in place) against 2.07 GB
    # of weights, and each fp16 weight (2 bytes) does one multiply-add (2 FLOPs) per sequence: AI ≈ B
    assert np.allclose(grid.intensity[:, 0] / grid.batches, 1.0, atol=0.015)


def test_verdicts_tinyllama_context_2048():
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    [v] = batch_verdicts(shape, [2048], ROOF, 16e9, **IN_PLACE)
    # AI(B) -> f / (a + kv) = 2,446,130,688 / 49,876,992 = 49.04 < ridge 65e12 / 320e9 = 203: never
    assert v.intensity_limit == pytest.approx(TINY_FLOPS_PER_SEQ / (TINY_ACT_PER_SEQ + TINY_KV_PER_SEQ), rel=1e-12)
    assert v.ridge_batch is None
    # KV B·46,159,872 > weights 2,069,024,768 + B·4,096 (the gathered embedding rows) <=> B > 44.83
    assert v.kv_over_weights_batch == 45
    # 16e9 >= 2,200,096,768 (weights in memory) + B·2048·22,528  <=>  B <= 299.1
    assert v.max_batch == 299


def test_ridge_batch_on_a_low_ridge_roof():
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    roof = Roof(1e12, 20e12)  # ridge 20 FLOP/byte
    [v] = batch_verdicts(shape, [2048], roof, **IN_PLACE)
    # B·f >= 20·(W + B·(a + kv))  <=>  B >= 20·2,069,024,768 / (2,446,130,688 - 20·49,876,992) = 28.57
    assert v.ridge_batch == 29
    grid = decode_grid(shape, [28, 29], [2048], roof, **IN_PLACE)
    assert grid.intensity[0, 0] < 20 <= grid.intensity[1, 0]
    assert v.max_batch is None  # no capacity given


def test_largest_fitting_batch_llama2_7b_on_80gb():
    shape = load_shape("meta-llama/Llama-2-7b-hf")
    [v4k, v2k] = batch_verdicts(shape, [4096, 2048], ROOF, 80e9)
    # weights 6,738,415,616 params x 2 bytes = 13,476,831,232; KV per token 2·32·4096·2 = 524,288 bytes
    # S=4096: (80e9 - 13,476,831,232) / (4096 · 524,288 = 2,147,483,648) = 30.98 -> 30
    assert v4k.max_batch == 30
    # S=2048: 66,523,168,768 / 1,073,741,824 = 61.95 -> 61
    assert v2k.max_batch == 61
    grid = decode_grid(shape, [30, 31], [4096], ROOF)
    assert grid.fits(80e9)[:, 0].tolist() == [True, False]


def test_scaling_book_llama2_13b_kv_cache():
    """jax-ml/scaling-book (inference chapter): 8192 tokens of Llama-2-13B in bf16 take 6.7 GB of KV cache
    (2 · 40 layers · 5120 · 2 bytes = 819,200 bytes per token)."""
    shape = load_shape("meta-llama/Llama-2-13b-hf")
    bf16 = dict(weight_dtype="bf16", act_dtype="bf16", kv_dtype="bf16")
    grid = decode_grid(shape, [1], [8192], ROOF, **{k: dtype(v) for k, v in bf16.items()})
    weights = analyze(shape, Workload.decode(1, 1, **{k: dtype(v) for k, v in bf16.items()})).weight_storage_bytes
    assert grid.memory_bytes[0, 0] - weights == 6_710_886_400


def test_doubling_verdict_matches_the_scalar_calculator():
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    [v] = batch_verdicts(shape, [2048], ROOF, min_gain=0.10)

    def tps(b):
        st = place(analyze(shape, Workload.decode(b, 2048)), ROOF)
        return b / st.predicted_lower_s

    b = v.doubling_batch
    assert tps(2 * b) / tps(b) - 1 == pytest.approx(v.doubling_gain, rel=1e-9)
    assert v.doubling_gain < 0.10
    k = 1
    while k < b:  # every earlier doubling paid at least 10%
        assert tps(2 * k) / tps(k) - 1 >= 0.10
        k *= 2


def test_request_is_prefill_plus_summed_decode_steps():
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    r = request_grid(shape, [3], [16], 5, ROOF)
    ttft = place(analyze(shape, Workload.prefill(3, 16)), ROOF).predicted_lower_s
    decode = [place(analyze(shape, Workload.decode(3, s)), ROOF).predicted_lower_s for s in (17, 18, 19, 20)]
    assert r.ttft_s[0, 0] == pytest.approx(ttft, rel=1e-12)
    assert r.total_s[0, 0] == pytest.approx(ttft + sum(decode), rel=1e-12)
    assert r.mean_tpot_s[0, 0] == pytest.approx(sum(decode) / 4, rel=1e-12)
    assert r.tokens_per_s[0, 0] == pytest.approx(3 * 5 / (ttft + sum(decode)), rel=1e-12)
    # the cache ends holding 16 + 4 tokens of 3 sequences
    assert r.memory_bytes[0, 0] == 2_200_096_768 + 3 * 20 * 22_528
    one = request_grid(shape, [3], [16], 1, ROOF)
    assert one.mean_tpot_s is None and one.total_s[0, 0] == pytest.approx(ttft)


def test_prefill_grid_time_to_first_token_grows_with_prompt_and_batch():
    shape = load_shape("mistralai/Mistral-7B-v0.1")
    g = prefill_grid(shape, [1, 4], [128, 4096, 4097, 8192], ROOF)
    assert (np.diff(g.ttft_s, axis=0) > 0).all() and (np.diff(g.ttft_s, axis=1) > 0).all()
    st = analyze(shape, Workload.prefill(4, 4097)).totals
    assert (g.flops[1, 2], g.bytes[1, 2]) == (st.flops, st.bytes)


def test_memory_needed():
    shape = load_shape("meta-llama/Llama-2-7b-hf")
    grid = decode_grid(shape, [1, 2], [4096], ROOF)
    # weights 6,738,415,616 · 2 bytes + B · 4096 tokens · (2 · 32 layers · 4096 · 2 bytes = 524,288 per token)
    assert grid.memory_bytes[1, 0] == 2 * 6_738_415_616 + 2 * 4096 * 524_288


def test_monotonic_in_batch_and_context():
    shape = load_shape("mistralai/Mistral-7B-v0.1")
    b, s = [1, 2, 4, 8, 64, 256], [1, 100, 4095, 4096, 4097, 30000]
    grid = decode_grid(shape, b, s, ROOF)
    for arr in (grid.floor_s, grid.step_s, grid.kv_bytes, grid.flops, grid.memory_bytes):
        assert (np.diff(arr, axis=0) >= 0).all() and (np.diff(arr, axis=1) >= 0).all()


@pytest.mark.parametrize("text, values", [
    ("64", (64,)),
    ("1,4,16,64,128", (1, 4, 16, 64, 128)),
    ("1..256", (1, 2, 4, 8, 16, 32, 64, 128, 256)),
    ("3..100", (3, 6, 12, 24, 48, 96)),  # doubling from 3, never past 100
    ("512..2048:512", (512, 1024, 1536, 2048)),
    ("16,1..4, 2", (1, 2, 4, 16)),  # sorted, no repeats
    ("1_024", (1024,)),
])
def test_parse_sizes(text, values):
    assert parse_sizes(text) == values


@pytest.mark.parametrize("text, message", [
    ("", "empty"), (" , ", "empty"), ("1,,4", "empty item"), ("4,", "empty item"), ("a", "not a whole number"),
    ("1.5", "not a whole number"), ("256..1", "runs backwards"), ("0..8", "start at 1"), ("-4", "negative"),
    ("0", "sizes start at 1"), ("1000000000000", "beyond any real workload"), ("1..10000000000", "beyond"),
    ("1..8:0", "at least 1"), ("1...8", "not a whole number"),
])
def test_parse_sizes_rejects(text, message):
    with pytest.raises(RoofcalcError, match=message):
        parse_sizes(text)


def test_grid_rejects_bad_sizes_and_overflow():
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    for batches, contexts in (([], [1]), ([0], [1]), ([1], [2.5]), ([10 ** 12], [1])):
        with pytest.raises(RoofcalcError):
            decode_grid(shape, batches, contexts, ROOF)
    big = load_shape("meta-llama/Llama-3.1-405B")  # 2^20 x 2^24 x 126 layers overflows 64 bits
    with pytest.raises(RoofcalcError, match="64 bits"):
        decode_grid(big, [1 << 20], [1 << 24], ROOF)


def test_moe_verdicts_agree_with_the_grid_on_both_sides_of_each_answer():
    """For a MoE model the expert weights read are not linear in B (E·(1 − (1 − k/E)^B) experts), so the
    verdicts are found by bisection; the grid, which evaluates each batch directly, must agree at B and B − 1."""
    shape = load_shape("mistralai/Mixtral-8x7B-v0.1")
    roof = Roof(3.35e12, 989e12)  # H100 SXM dense bf16 (datasheet): ridge 295
    [v] = batch_verdicts(shape, [4096], roof)
    b = v.kv_over_weights_batch
    g = decode_grid(shape, [b - 1, b], [4096], roof)
    assert g.kv_bytes[0, 0] <= g.weight_bytes[0, 0] and g.kv_bytes[1, 0] > g.weight_bytes[1, 0]
    [v] = batch_verdicts(shape, [256], Roof(3.35e12, 60e12))  # ridge 17.9: reachable at a short context
    b = v.ridge_batch
    g = decode_grid(shape, [b - 1, b], [256], Roof(3.35e12, 60e12))
    assert g.intensity[0, 0] < 60e12 / 3.35e12 <= g.intensity[1, 0]


def test_integers_at_least_floats_compare_exactly():
    """The verdicts' ridge test, int64 >= float64 on arrays, answers as Python's int-float comparison
    (exact) does, also where the integer is not a float: 2**53 + 3 rounds to 2**53 + 4, so a plain
    numpy comparison would say 2**53 + 3 >= 2.0**53 + 4."""
    from roofcalc.sweep import _at_least

    big = 1 << 53
    pairs = [(big + 3, float(big + 4)), (big + 3, float(big + 2)), (big + 1, float(big)), (big, float(big)),
             (-big - 3, -float(big + 4)), ((1 << 62) + 1, float(1 << 62)), (5, 4.5), (5, 5.5), (-5, -5.5),
             (0, 2.0 ** 63), (0, 2.0 ** 70), (0, -2.0 ** 70), ((1 << 63) - 1, 2.0 ** 63)]
    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(-(1 << 62), 1 << 62))
        pairs.append((n, float(n + int(rng.integers(-300, 300)))))
    left = np.array([p[0] for p in pairs], dtype=np.int64)
    right = np.array([p[1] for p in pairs])
    assert bool(np.int64(big + 3) >= np.float64(big + 4))  # a plain numpy comparison rounds the integer
    assert _at_least(left, right).tolist() == [a >= b for a, b in pairs]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-(1 << 40), 1 << 40), st.integers(0, 1 << 40), st.integers(-(1 << 40), 1 << 40),
                          st.integers(0, 1 << 40)), min_size=1, max_size=12),
       st.floats(0.5, 2000), st.integers(1, 1 << 20))
def test_verdicts_bisected_together_agree_with_one_at_a_time(lines, ridge, top):
    """All contexts bisected at once find the batch the one-context bisection finds at each: the
    ridge test (f0 + f1·B >= ridge · (y0 + y1·B + x(B))) with a non-linear x(B) as a MoE's experts."""
    from roofcalc.sweep import _at_least, _batch_function, _first_batch, _first_batches

    def x(b):
        return 1000 * min(b, 64)  # grows, then every expert is touched

    want = [_first_batch(lambda b: f0 + f1 * b >= ridge * (y0 + y1 * b + x(b)), top) for f0, f1, y0, y1 in lines]
    f0, f1, y0, y1 = (np.array(c, dtype=np.int64) for c in zip(*lines))
    xs = _batch_function(x)
    got = _first_batches(lambda b: _at_least(f0 + f1 * b, ridge * (y0 + y1 * b + xs(b))), len(lines), top)
    assert got == want


def test_one_pipeline_formula_for_a_step_and_a_grid():
    """Stages of 1, 3 and 2 ms, 4 micro-batches: 1 + 3 + 2 + 3 x 3 = 15 ms; a grid's every point is the
    step of its own stage times."""
    from roofcalc.parallel import Pipeline, pipeline_step_s

    assert Pipeline((1e-3, 3e-3, 2e-3), 4, 1).step_s == pytest.approx(15e-3, rel=1e-12)
    rng = np.random.default_rng(3)
    stages = [rng.random((4, 5)) * 1e-3 for _ in range(3)]
    grid = pipeline_step_s(stages, 4)
    assert grid.shape == (4, 5)
    for i in range(4):
        for j in range(5):
            assert grid[i, j] == Pipeline(tuple(float(t[i, j]) for t in stages), 4, 0).step_s


def test_every_grid_time_covers_the_grid():
    """Kernels are evaluated on the least shape their costs need (a weight's bytes: one column); the
    step's times still hold one value per point, collectives' too, and equal the single step's."""
    from roofcalc.parallel import Parallel, RankAnalyzer, analyze_parallel

    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    roof = Roof(2039e9, 312e12, 300e9)
    batches, contexts = [1, 3, 64], [5, 700, 9000, 20_000]
    g = decode_grid(shape, batches, contexts, roof, analyzer=RankAnalyzer(shape, Parallel(2)))
    for name in ("floor_s", "device_s", "device_upper_s", "compute_s", "comm_s", "fixed_s"):
        assert getattr(g.times, name).shape == (3, 4), name
    for arr in (g.flops, g.bytes, g.weight_bytes, g.kv_bytes, g.floor_s, g.memory_bytes):
        assert arr.shape == (3, 4)
    for i, b in enumerate(batches):
        for j, s in enumerate(contexts):
            a = analyze_parallel(shape, Workload.decode(b, s), Parallel(2))
            assert int(g.flops[i, j]) == a.totals.flops and int(g.bytes[i, j]) == a.totals.bytes
            assert float(g.times.comm_s[i, j]) == pytest.approx(place(a, roof).times.comm_s, rel=1e-12)


def test_a_sweep_and_a_single_step_resolve_one_device(tmp_path):
    """roofline() and sweep() take their roofs, efficiencies, overheads and capacity from one
    resolution (roofline.device): the same inputs give the same device on both paths. The profile
    here is made up (a measured 2.9 TB/s and 700 TFLOP/s of an H100, a measured link and its latency,
    its own efficiencies); the flags override a launch and a host overhead."""
    import json

    from roofcalc.hardware import find_hardware, load_profile
    from roofcalc.roofline import device, roofline
    from roofcalc.sweep import sweep

    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "schema_version": 2, "name": "my H100", "bandwidth_bytes_per_s": 2.9e12, "peak_flop_per_s": {"fp16": 7e14},
        "launch_overhead_s": 4e-6, "memory_bytes": 60e9, "kind": "gpu", "nominal": "H100", "source": "test",
        "link_bytes_per_s": 3.6e11, "link_latency_s": 8e-6,
        "efficiency": {"gemv": {"expected": 0.8, "pessimistic": 0.7}, "stream": {"expected": 0.9, "pessimistic": 0.8},
                       "host_per_op_s": {"expected": 1.2e-5, "pessimistic": 2e-5}}}))
    shape, hw, profile = load_shape("TinyLlama/TinyLlama-1.1B"), find_hardware("H100"), load_profile(str(path))
    for kw in (dict(measured_profile=profile, launch_overhead_s=3e-6), dict(measured_bw=2e12, host_overhead_s=9e-6),
               dict(capacity_bytes=1e9), {}):
        d = device(hw, "fp16", **kw)
        r = roofline(analyze(shape, Workload.decode(4, 100)), hw, **kw)
        sw = sweep(shape, hw, batches=[1, 4], contexts=[100], **kw)
        for got in (r, sw):
            assert (got.nominal, got.measured, got.model, got.capacity_bytes) == \
                (d.nominal, d.measured, d.model, d.capacity_bytes)
        assert r.profile_name == d.profile_name and r.roof == sw.roof == d.roof
    # what the resolution reads: the profile's memory (60 GB) before the card's (80 GiB), a flag before both;
    # its measured link, its latency and its bandwidth
    assert device(hw, "fp16", measured_profile=profile).capacity_bytes == 60e9
    assert device(hw, "fp16").capacity_bytes == hw.memory_bytes == 80 * 2 ** 30
    assert device(hw, "fp16", measured_profile=profile, capacity_bytes=1e9).capacity_bytes == 1e9
    d = device(hw, "fp16", measured_profile=profile, launch_overhead_s=3e-6)
    assert d.measured.link_bytes_per_s == 3.6e11 and d.model.latency["link"].expected == 8e-6
    assert (d.measured.bandwidth_bytes_per_s, d.model.launch_s.expected) == (2.9e12, 3e-6)


@pytest.mark.parametrize("tps, stop", [
    ((100, 200, 206, 340, 680), None),  # 200 to 206 gains 3 %, but 340 is 1.7x 200, past two doublings' 1.21x
    ((100, 200, 206, 240, 250), 1),  # 250 / 200 = 1.25 over three doublings, under 1.1³ = 1.33: stops at batch 2
    ((100, 104, 108.2, 112.5, 117), 0),  # 4 % a doubling: stops at the first, however far the ladder runs
    ((100, 200, 400, 800), None),
])
def test_batching_stops_paying_where_no_larger_batch_pays_again(tps, stop):
    """The doubling verdict's rule (parallel.stops_paying_at, the --tp comparison's too): a dip in one doubling
    (an RTX 3090's q_proj under vLLM runs 0.65, 0.33 and 0.49 of its roof at batches 32, 64 and 128) does not stop
    batching that pays again past it; min_gain 10 %."""
    import numpy as np

    from roofcalc.parallel import stops_paying_at

    assert stops_paying_at(np.array(tps, float), 0.10) == stop
