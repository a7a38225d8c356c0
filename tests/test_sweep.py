"""The decode grid (arrays) against the scalar calculator, point by point."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from roofcalc import Workload, analyze, load_shape  # noqa: E402
from roofcalc.roofline import Roof, place  # noqa: E402
from roofcalc.sweep import decode_grid  # noqa: E402

ROOF = Roof(320e9, 65e12)
MODELS = ["TinyLlama/TinyLlama-1.1B", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen3-8B", "google/gemma-2b"]


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
    assert grid.launch_s == pytest.approx(verdict.sum_launch_s)


def test_tinyllama_kv_term_bends_intensity_below_batch():
    """Context 2048, batch 64: weights are read once, KV grows with B·S, so AI < 64."""
    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    grid = decode_grid(shape, [64], [2048], ROOF)
    # KV read per step: 64 sequences · 2048 tokens · 22,528 bytes = 2,952,790,016 bytes, as much as
    # 1.4× the 2,069,024,768 bytes of weights: AI is far below B
    assert grid.kv_bytes[0, 0] == 64 * 2048 * 22_528 + 64 * 22_528  # reads + the new tokens' writes
    assert grid.intensity[0, 0] < 64 / 2


def test_memory_needed():
    shape = load_shape("meta-llama/Llama-2-7b-hf")
    grid = decode_grid(shape, [1, 2], [4096], ROOF)
    # weights 6,738,415,616 · 2 bytes + B · 4096 tokens · (2 · 32 layers · 4096 · 2 bytes = 524,288 per token)
    assert grid.memory_bytes[1, 0] == 2 * 6_738_415_616 + 2 * 4096 * 524_288


def test_monotonic_in_batch_and_context():
    shape = load_shape("mistralai/Mistral-7B-v0.1")
    b, s = [1, 2, 4, 8, 64, 256], [1, 100, 4095, 4096, 4097, 30000]
    grid = decode_grid(shape, b, s, ROOF)
    for arr in (grid.floor_s, grid.kv_bytes, grid.flops, grid.memory_bytes):
        assert (np.diff(arr, axis=0) >= 0).all() and (np.diff(arr, axis=1) >= 0).all()
