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
    assert code == 2 and out == "" and err.count("\n") == 1 and "pip install 'roofcalc[kernel-db]'" in err
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
    assert doc["hardware"]["kernel_fits"]["kernel_db"] is True
