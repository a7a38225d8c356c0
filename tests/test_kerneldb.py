"""--kernel-db: GEMM and attention times read from NVIDIA AIConfigurator's measured tables (the optional
aiconfigurator-core package): the nearest measured shape, its time beyond the fitted fixed cost scaled by the
ratio of the roofline floors. benchmarks/lookup_vs_fit.py measures how it compares with the fit."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from roofcalc.cli import main
from roofcalc.kerneldb import Nearest


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_nearest_shape_in_log2_scaled_by_the_floors():
    # two measured GEMMs at M = 1, K = 4096: N = 4096 (15 us, floor 10 us) and N = 8192 (25 us, floor 20 us);
    # fixed cost 3 us. N = 6000 lies nearer 8192 in log2 (13 - 12.55 = 0.45 against 0.55): that row's 22 us
    # beyond the fixed cost, times a floor of 14.6 us over its 20
    t = Nearest(np.log2([[1, 4096, 4096], [1, 8192, 4096]]), np.array([15e-6, 25e-6]), np.array([10e-6, 20e-6]),
                3e-6)
    assert t.work((1, 6000, 4096), 14.6e-6) == pytest.approx(22e-6 * 14.6 / 20)
    assert t.work((1, 4096, 4096), 10e-6) == pytest.approx(12e-6)  # a measured shape: its own time less the fixed
    # a row faster than the fixed cost leaves no work beyond it
    assert Nearest(np.log2([[1, 128, 128]]), np.array([2e-6]), np.array([1e-7]), 3e-6).work((1, 128, 128), 1e-7) == 0


def test_without_the_package_it_says_how_to_install_it(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "aiconfigurator_core" else real(name, *a))
    code, out, err = run(["meta-llama/Meta-Llama-3-8B", "--hw", "H100", "--kernel-db"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "pip install '.[kernel-db]' in roofcalc's checkout" in err
    assert len(err.strip()) <= 100


@pytest.mark.parametrize("args, words", [
    (["--hw", "T4"], "no measured tables for T4 (A100 H100 H200 B200 L40S RTX-PRO-6000)"),  # no stand-in
    (["--hw", "H100", "--batch", "1,8"], "--kernel-db reads one step's kernels; a sweep takes their fits"),
])
def test_it_reads_one_step_on_a_measured_gpu(args, words, capsys):
    code, out, err = run(["meta-llama/Meta-Llama-3-8B", "--kernel-db", *args], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err and len(err.strip()) <= 100


needs_tables = pytest.mark.skipif(importlib.util.find_spec("aiconfigurator_core") is None,
                                  reason="the kernel-db extra (aiconfigurator-core) is not installed")


@needs_tables
def test_a_measured_shape_takes_its_measured_time(capsys):
    """Llama-3-8B's q_proj at batch 64 is the H100 vLLM 0.24.0 table's row m 64, n 4096, k 4096 (bf16,
    torch.nn.functional.linear): 0.014767110347747803 ms, which the step takes as it is (one launch: the fitted
    fixed cost plus the row's time beyond it)."""
    import json

    code, out, _ = run(["meta-llama/Meta-Llama-3-8B", "--hw", "H100", "--kernel-db", "--batch", "64",
                        "--context", "4096", "--dtype", "bf16", "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    q = next(k for k in doc["kernels"] if k["name"] == "q_proj")
    assert q["t_expected_s"] == pytest.approx(0.014767110347747803e-3, rel=1e-9)
    assert q["efficiency_source"] == ("AIConfigurator 0.12.0 h100_sxm vllm tables, fitted (docs/kernel_fits.md); "
                                      "its work the nearest measured shape's (--kernel-db)")
    assert doc["hardware"]["kernel_fits"]["kernel_db"] is True
    assert doc["hardware"]["kernel_fits"]["gemm_compute"] == "fitted"  # the H100's own forms, both sides


def test_a_read_says_whether_the_table_measured_those_very_sizes():
    t = Nearest(np.log2([[2, 4096, 14336, 8, 2], [8, 4096, 14336, 8, 8]]), np.array([259e-6, 700e-6]),
                np.array([210e-6, 840e-6]), 43e-6)
    assert t.read((2, 4096, 14336, 8, 2), 210e-6) == (pytest.approx(216e-6), True)
    # 6 rows lie nearer 8 in log2 (3 - 2.585 = 0.415 against 0.585): that row's 657 us beyond the fixed cost,
    # times a floor of 630 us over its 840
    work, exact = t.read((6, 4096, 14336, 8, 6), 630e-6)
    assert not exact and work == pytest.approx(657e-6 * 630 / 840)


class _Tables:
    """A stand-in for the measured tables: every fused MoE call read as ``seconds`` beyond the fixed cost, measured
    (``exact``) or another shape's; nothing else read. ``asked`` keeps what each read was asked."""

    def __init__(self, seconds: float, exact: bool):
        self.seconds, self.exact, self.asked = seconds, exact, []
        self.words = "a stand-in's tables"

    def with_compute(self, compute):
        return self

    def work(self, *args):
        return None

    def moe_work(self, *args):
        self.asked.append(args)
        return self.seconds, self.exact


@pytest.mark.parametrize("exact", [True, False])
def test_a_fused_moe_call_takes_a_measured_shape_as_it_is_and_another_with_the_fit(exact, capsys, monkeypatch):
    """Mixtral-8x7B at batch 1 on an H100 (vLLM's fused MoE fit): a layer's four experts kernels (gate_up, act_mul,
    down, the weighted sum) share one call's time, the fit's fixed cost plus its work. With --kernel-db the work is
    the table's where the table measured that very call, else the geometric mean of the two calls' times (the
    table's, another shape's scaled, and the fit's; fixed cost included, as benchmarks/lookup_vs_fit.py scores
    them): here a stand-in table reads 300 us beyond the fixed cost, and the fit's call is what the run without
    it says."""
    import json

    import roofcalc.kerneldb
    from roofcalc.predict import kernel_fits

    args = ["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--dtype", "bf16", "--format", "json"]

    def call(doc):
        return sum(k["t_expected_s"] for k in doc["kernels"] if k["name"] in
                   ("experts.gate_up_proj", "experts.act_mul", "experts.down_proj", "experts.combine"))

    assert main(args) == 0
    fitted = call(json.loads(capsys.readouterr().out))
    fixed = kernel_fits()["gpus"]["h100_sxm"]["moe"]["bf16"]["fixed_s"]
    monkeypatch.setattr(roofcalc.kerneldb, "KernelDB", lambda *a, **k: _Tables(300e-6, exact))
    assert main(args + ["--kernel-db"]) == 0
    doc = json.loads(capsys.readouterr().out)
    read = call(doc)
    # each of the call's kernels says which way its time was read (JSON's efficiency_source)
    words = "its call the table's measured one" if exact else "its work between the fit's and the table's nearest"
    assert all(words in k["efficiency_source"] for k in doc["kernels"] if k["name"].startswith("experts."))
    call = fixed + 300e-6 if exact else ((300e-6 + fixed) * fitted) ** 0.5
    assert read == pytest.approx(call, rel=1e-9)
    assert fitted - fixed != pytest.approx(300e-6, rel=0.05)  # the two ways differ: the test can tell them apart


@pytest.mark.parametrize("layout", [[], ["--ep-attention", "tp"]])
def test_under_expert_parallelism_a_layers_four_kernels_ask_for_one_call(layout, capsys, monkeypatch):
    """Mixtral-8x7B (8 experts, top-2) at --ep 2, batch 8: a rank holds 4 experts, and the 8 tokens' 16 routed
    pairs reach them half and half, 8 rows; with attention split by heads (--ep-attention tp) every rank sees
    the 8 tokens, and the rank's experts their 8 rows too. gate_up, act_mul, down and the weighted sum are one
    call: each asks the tables for (8 rows, H 4,096, I' 14,336, 4 experts of the layer's 8, top-2)."""
    import roofcalc.kerneldb

    tables = _Tables(300e-6, False)
    monkeypatch.setattr(roofcalc.kerneldb, "KernelDB", lambda *a, **k: tables)
    assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--dtype", "bf16", "--ep", "2", "--batch", "8",
                 "--kernel-db", *layout]) == 0
    capsys.readouterr()
    assert tables.asked and set(tables.asked) == {("bf16", 8.0, 4096, 14336.0, 4, 8, 2)}


def test_a_measured_moe_call_is_one_of_the_same_tokens_and_top_k():
    """A table row of 64 tokens routed top-2 over 8 whole experts (128 rows, 128 pairs, H 4,096, I' 14,336): a
    call of those 64 tokens is the measured one; 32 tokens top-4 route as many rows and pairs through the same
    GEMMs but another top-k selection and weighted sum, so the row is only its nearest, not its measurement."""
    import numpy as np

    from roofcalc.kerneldb import KernelDB, Nearest

    db = object.__new__(KernelDB)
    db.bf16, db.fp8, db.bw = 989e12, 1979e12, 3.35e12
    db.forms = {"moe_bf16": {"source": {}, "block": 0}}
    floor = float(db.moe_floor("moe_bf16", 128.0, 8.0, 8.0, 4096, 14336.0, 128.0, db.forms["moe_bf16"]))
    db._tables = {"moe_bf16": Nearest(np.log2([[128, 4096, 14336, 8, 128, 64]]), np.array([500e-6]),
                                      np.array([floor]), 20e-6)}
    assert db.moe_work("bf16", 128.0, 4096, 14336.0, 8, 8, 2) == (pytest.approx(480e-6), True)
    assert db.moe_work("bf16", 128.0, 4096, 14336.0, 8, 8, 4) == (pytest.approx(480e-6), False)


@needs_tables
def test_a_measured_fused_moe_call_takes_its_measured_time(capsys):
    """Mixtral-8x7B at batch 1 on an H100 in bf16 is the H100 vLLM 0.24.0 MoE table's balanced row num_tokens 1,
    hidden 4096, inter 14336, top-2 of 8 experts, TP 1, EP 1 (vllm_unquantizedfusedmoe_triton_tritonexperts):
    0.258741 ms, which a layer's four experts kernels take together."""
    import json

    code, out, _ = run(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--kernel-db", "--dtype", "bf16",
                        "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    call = sum(k["t_expected_s"] for k in doc["kernels"] if k["name"] in
               ("experts.gate_up_proj", "experts.act_mul", "experts.down_proj", "experts.combine"))
    assert call == pytest.approx(0.258741e-3, rel=1e-5)


def test_a_steps_batching_verdict_takes_the_fits_under_kernel_db(capsys, monkeypatch):
    """--kernel-db reads one step's kernels; what batching would do (the sweep behind a single report's distance
    along the slope, and JSON's batching_reach) takes their fits, as a sweep does: a fused MoE call read from a
    stand-in table (one number, not one per batch) must not reach the sweep's arrays."""
    import json

    import roofcalc.kerneldb

    monkeypatch.setattr(roofcalc.kerneldb, "KernelDB", lambda *a, **k: _Tables(300e-6, False))
    args = ["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--dtype", "bf16", "--kernel-db", "--tpot", "20ms"]
    assert main(args) == 0 and "2 along the slope:" in capsys.readouterr().out
    assert main(args + ["--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"]["batching_reach"] > 1
