"""AutoAWQ's GEMM kernel as an int4 matmul's compute-side ceiling (--int4-kernel autoawq, autoawq-0.1, vllm-awq):
SqueezeBits/QUICK README @ 1180eba, M x 8192 x 8192 on an A100, AutoAWQ's GEMM at 2.94, 34.23, 48.83, 57.43 and
58.46 TFLOP/s for M = 1, 16, 32, 64, 128 (predict.AWQ_GEMM), scaled to another GPU by its datasheet fp32 rate over
the A100's 19.5 TFLOP/s; the engines' switches to dequantize + the 16-bit GEMM from AutoAWQ's gemm.py (v0.2.0:
1,024 tokens) and vLLM's awq.py (v0.3.0: 256 tokens)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from roofcalc.cli import main
from roofcalc.hardware import find_hardware
from roofcalc.predict import EngineHost, efficiencies
from roofcalc.roofline import Roof, kernel_model


def _model(gpu: str, kernel: str, measured: Roof | None = None):
    hw = find_hardware(gpu)
    nominal = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16"))
    return hw, kernel_model(hw, nominal, measured, engine_host=EngineHost(int4_kernel=kernel))


def _compute_e(m, rows, fmt="int4"):
    return efficiencies(m, "matmul", rows, fmt, depth=8192, width=8192)[0]


@pytest.mark.parametrize("rows, tflops", [(1, 2.94), (16, 34.23), (32, 48.83), (64, 57.43), (128, 58.46)])
def test_the_a100s_ceiling_is_quicks_measured_rate(rows, tflops):
    """On the A100 the ceiling is the measured rate itself, over the 312 TFLOP/s fp16 peak (the datasheet's)."""
    _, m = _model("A100-80GB", "autoawq-0.1")
    marlin = _model("A100-80GB", "marlin")[1]
    assert _compute_e(m, rows) == pytest.approx(min(tflops / 312, _compute_e(marlin, rows)), rel=1e-12)
    assert _compute_e(m, rows) == pytest.approx(tflops / 312, rel=1e-12)  # below the 16-bit GEMM's at every M


def test_between_the_knots_log_rate_is_linear_in_log_rows_and_flat_beyond():
    _, m = _model("A100-80GB", "autoawq-0.1")
    # M = 8 halfway between 1 and 16 in log M: the geometric mean of 2.94 and 34.23
    assert _compute_e(m, 4) == pytest.approx(math.sqrt(2.94 * 34.23) / 312, rel=1e-9)
    assert _compute_e(m, 4096) == pytest.approx(58.46 / 312, rel=1e-12)
    # a sweep's rows (numpy) read the same values
    rows = np.array([1.0, 4.0, 100.0, 4096.0])
    assert np.allclose(_compute_e(m, rows), [_compute_e(m, float(r)) for r in rows], rtol=1e-12)


def test_other_gpus_scale_it_by_their_datasheet_fp32_rate():
    """H100 SXM: fp32 67 TFLOP/s, fp16 989.4: 58.46 x 67 / 19.5 = 200.9 TFLOP/s, 0.203 of its peak."""
    _, m = _model("H100-SXM", "autoawq-0.1")
    assert _compute_e(m, 128) == pytest.approx(58.46e12 * 67 / 19.5 / 989.4e12, rel=1e-9)
    assert _compute_e(m, 128) == pytest.approx(0.2031, abs=1e-4)


@pytest.mark.parametrize("kernel, switch", [("autoawq", 1024), ("vllm-awq", 256)])
def test_from_the_engines_switch_the_16_bit_gemm_runs(kernel, switch):
    _, m = _model("A100-80GB", kernel)
    marlin = _model("A100-80GB", "marlin")[1]
    assert _compute_e(m, switch - 1) == pytest.approx(58.46 / 312, rel=1e-12)
    assert _compute_e(m, switch) == _compute_e(marlin, switch) > 0.5  # the fitted 16-bit GEMM, uncapped
    rows = np.array([float(switch - 1), float(switch)])
    assert np.allclose(_compute_e(m, rows), [58.46 / 312, _compute_e(marlin, switch)], rtol=1e-12)


def test_only_int4_matmuls_and_only_awq_kernels_are_capped():
    _, awq = _model("A100-80GB", "autoawq-0.1")
    _, marlin = _model("A100-80GB", "marlin")
    assert marlin.int4_cap == ()
    assert _compute_e(awq, 512, "int8") == _compute_e(marlin, 512, "int8")
    assert _compute_e(awq, 512, "") == _compute_e(marlin, 512, "")
    assert _compute_e(awq, 512) < _compute_e(marlin, 512)


def test_a_measured_roof_keeps_the_kernels_rate():
    """A measured peak of half the datasheet's: the ceiling's share of it doubles, the same FLOP/s."""
    hw = find_hardware("A100-80GB")
    measured = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16") / 2)
    _, m = _model("A100-80GB", "autoawq-0.1", measured)
    assert _compute_e(m, 128) == pytest.approx(58.46 / 156, rel=1e-12)


def test_the_pessimistic_end_keeps_the_gemm_classs_spread():
    _, m = _model("A100-80GB", "autoawq-0.1")
    g = m.classes["gemm"]
    low = efficiencies(m, "matmul", 128, "int4", pessimistic=True, depth=8192, width=8192)[0]
    assert low <= 58.46 / 312 * g.pessimistic / g.expected + 1e-15


def _json(args, capsys):
    assert main(args + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_command_line_names_the_kernel_and_its_prefill_slows(capsys):
    base = ["TinyLlama/TinyLlama-1.1B", "--hw", "A100-80GB", "--weight-dtype", "int4", "--prompt", "512"]
    marlin = _json(base, capsys)
    awq = _json(base + ["--int4-kernel", "autoawq-0.1"], capsys)
    assert marlin["step"]["engine"]["int4_kernel"] == "marlin"
    assert awq["step"]["engine"]["int4_kernel"] == "autoawq-0.1"
    assert awq["step"]["predicted_s"] > 1.1 * marlin["step"]["predicted_s"]
    assert main(base + ["--int4-kernel", "autoawq-0.1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "int4 matmuls: AutoAWQ's GEMM kernel (before v0.2.0) (autoawq-0.1, --int4-kernel)" in out
    assert main(base + ["--int4-kernel", "exllama"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "int4 matmuls: AutoGPTQ's exllama kernel, dequantized to 16 bits from 8 rows (exllama, --int4-kernel)" in out
    # a 16-bit model runs no int4 matmul: nothing said, nothing changed, no kernel in the record
    plain = ["TinyLlama/TinyLlama-1.1B", "--hw", "A100-80GB", "--prompt", "512"]
    awq16 = _json(plain + ["--int4-kernel", "autoawq"], capsys)
    assert _json(plain, capsys)["step"]["predicted_s"] == awq16["step"]["predicted_s"]
    assert awq16["step"]["engine"]["int4_kernel"] is None
    # off NVIDIA (a CPU) no int4 kernel form is taken, and none is named
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw", "cpu", "--weight-dtype", "int4", "--int4-kernel", "autoawq"]) == 0
    assert "int4 matmuls" not in capsys.readouterr().out


def test_an_unknown_int4_kernel_is_refused_in_one_line(capsys):
    assert main(["TinyLlama/TinyLlama-1.1B", "--int4-kernel", "machete"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--int4-kernel" in err[0] and "vllm-awq" in err[0]


def _awq_config(tmp_path, **quant):
    """Qwen1.5-7B's config (benchmarks/configs) with an AWQ quantization_config as AutoAWQ writes it."""
    from pathlib import Path

    cfg = json.loads((Path(__file__).parent.parent / "benchmarks" / "configs" / "qwen1.5-7b.json").read_text())
    cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, **quant}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_the_checkpoints_awq_layout_is_read():
    from roofcalc.shapes import declared_weights

    base = {"quant_method": "awq", "bits": 4, "group_size": 128}
    assert declared_weights({"quantization_config": base}, "m")["weight_method"] == "awq"
    assert declared_weights({"quantization_config": {**base, "version": "GEMM"}}, "m")["weight_method"] == "awq"
    assert declared_weights({"quantization_config": {**base, "version": "gemv"}}, "m")["weight_method"] == "awq-gemv"
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128}
    assert declared_weights({"quantization_config": gptq}, "m")["weight_method"] == "gptq"


def test_vllm_v0_runs_an_awq_checkpoint_with_its_awq_kernel_and_the_others_with_marlin(tmp_path, capsys):
    awq = _awq_config(tmp_path)
    args = [awq, "--hw", "A100-80GB", "--prompt", "128"]
    assert _json(args + ["--engine", "vllm-v0"], capsys)["step"]["engine"]["int4_kernel"] == "vllm-awq"
    assert _json(args, capsys)["step"]["engine"]["int4_kernel"] == "marlin"  # hf: transformers 5's kernels
    assert _json(args + ["--engine", "vllm"], capsys)["step"]["engine"]["int4_kernel"] == "marlin"
    # --int4-kernel by hand wins over the preset's; a prompt of 128 tokens (below vLLM's 256) runs the slower kernel
    v0 = _json(args + ["--engine", "vllm-v0"], capsys)
    marlin = _json(args + ["--engine", "vllm-v0", "--int4-kernel", "marlin"], capsys)
    assert marlin["step"]["engine"]["int4_kernel"] == "marlin"
    assert v0["step"]["predicted_s"] > 1.5 * marlin["step"]["predicted_s"]
    # from 256 tokens vLLM dequantizes and runs its 16-bit GEMM: slower than Marlin-like kernels by the dequantizing
    # (test_dequantizing_runs_in_series_with_the_16_bit_gemm), far less than its own kernel's cap
    long = [awq, "--hw", "A100-80GB", "--prompt", "512", "--engine", "vllm-v0"]
    t_v0, t_marlin = (_json(long + k, capsys)["step"]["predicted_s"] for k in ([], ["--int4-kernel", "marlin"]))
    t_capped = _json(long + ["--int4-kernel", "autoawq-0.1"], capsys)["step"]["predicted_s"]
    assert t_marlin < t_v0 < 1.5 * t_marlin < t_capped
    gemv = _awq_config(tmp_path, version="gemv")  # AutoAWQ's GEMV layout is another kernel: not this form
    assert _json([gemv, "--hw", "A100-80GB", "--engine", "vllm-v0"], capsys)["step"]["engine"]["int4_kernel"] == \
        "marlin"


def _one_matmul(kernel: str, m: int, n: int = 8192, k: int = 8192, gpu: str = "A100-80GB"):
    """(seconds, model) of one m x n x k matmul of int4 weights in groups of 128 under ``kernel``."""
    from roofcalc.calculator import Workload, linear_weight_bytes
    from roofcalc.dtypes import DTYPES
    from roofcalc.predict import kernel_time

    hw, model = _model(gpu, kernel)
    weights = linear_weight_bytes(k, n, Workload("decode", 1, 1, 1, weight_dtype=DTYPES["int4"], group_size=128))
    t, _ = kernel_time(model, 2 * m * n * k / hw.peak("fp16"),
                       (weights + 2 * m * k + 2 * m * n) / hw.bandwidth_bytes_per_s, "matmul", m, "int4", weights,
                       depth=k, width=n)
    return float(t), weights, hw, model


def test_dequantizing_runs_in_series_with_the_16_bit_gemm():
    """vLLM's awq at M = 512 (past its 256): a kernel reading the int4 weight (8,192² x (0.5 + 2/128) bytes =
    34,603,008) and writing 8,192² values in 16 bits (134,217,728 bytes) at the stream class's 0.87 of 2,039 GB/s,
    plus its fixed cost, before the 16-bit GEMM, which is compute-bound at M = 512 so its reading 16-bit weights
    costs nothing more: the difference to a Marlin-like kernel is the dequantizing kernel alone."""
    t_awq, weights, hw, model = _one_matmul("vllm-awq", 512)
    t_marlin = _one_matmul("marlin", 512)[0]
    assert weights == 8192 * 8192 // 2 + 8192 * 64 * 2 == 34_603_008
    stream = model.classes["stream"].expected
    assert stream == pytest.approx(0.87)
    dequant = (34_603_008 + 134_217_728) / (2.039e12 * stream) + model.fixed_s["stream"].expected
    assert t_awq - t_marlin == pytest.approx(dequant, rel=1e-9)
    assert dequant == pytest.approx(96.9e-6, rel=0.01)  # 168.8 MB at 1,774 GB/s = 95.2 us, + 1.7 us fixed


@pytest.mark.parametrize("kernel, switch", [("exllama", 8), ("exllamav2", 51)])
def test_gptqs_exllama_kernels_dequantize_from_their_thresholds(kernel, switch):
    """AutoGPTQ's exllama reconstructs from 8 rows (x_height >= matmul_recons_thd = 8), ExLlamaV2's GPTQ kernel
    (vLLM's gptq) past 50 (size_m > MAX_Q_GEMM_ROWS): Marlin-like below, the dequantizing above."""
    assert _one_matmul(kernel, switch - 1)[0] == _one_matmul("marlin", switch - 1)[0]
    assert _one_matmul(kernel, switch)[0] > _one_matmul("marlin", switch)[0] + 90e-6
    # and no AutoAWQ cap: its own kernel is not AutoAWQ's
    assert _model("A100-80GB", kernel)[1].int4_cap[0] == ()


def test_a_sweeps_rows_take_the_kernel_each_side_of_the_switch():
    """A sweep's rows (numpy) on both sides of vLLM's 256: each row as the single-step model gives it."""
    from roofcalc.predict import kernel_terms

    _, weights, hw, model = _one_matmul("vllm-awq", 1)
    rows = np.array([64.0, 255.0, 256.0, 1024.0])
    t_c = 2 * rows * 8192 * 8192 / hw.peak("fp16")
    t_m = (weights + 2 * rows * 8192 * 2) / hw.bandwidth_bytes_per_s
    work, fixed, _ = kernel_terms(model, t_c, t_m, "matmul", rows, "int4", weights, depth=8192, width=8192)
    one = [kernel_terms(model, float(c), float(mm), "matmul", float(r), "int4", weights, depth=8192, width=8192)
           for c, mm, r in zip(t_c, t_m, rows)]
    assert np.allclose(work + fixed, [w + f for w, f, _ in one], rtol=1e-12)


@pytest.mark.parametrize("kernel", ["autoawq-0.1", "vllm-awq", "exllama"])
def test_a_grouped_experts_call_keeps_marlin_like_kernels(kernel):
    """A traced MoE's grouped experts matmul: 60 experts' int4 weights of 2,816 x 2,048 in one call (their bytes
    60 times one matrix's). Neither the AutoAWQ cap nor the dequantizing applies: equal to Marlin-like, never
    faster."""
    from roofcalc.calculator import Workload, linear_weight_bytes
    from roofcalc.dtypes import DTYPES
    from roofcalc.predict import kernel_terms

    hw, model = _model("A100-80GB", kernel)
    marlin = _model("A100-80GB", "marlin")[1]
    one = linear_weight_bytes(2048, 2816, Workload("decode", 1, 1, 1, weight_dtype=DTYPES["int4"], group_size=128))
    experts = 60 * one
    for rows in (16.0, 256.0, 4096.0):
        t_c = 2 * rows * 2816 * 2048 / hw.peak("fp16")
        t_m = (experts + 2 * rows * (2048 + 2816)) / hw.bandwidth_bytes_per_s
        got = kernel_terms(model, t_c, t_m, "matmul", rows, "int4", experts, depth=2048, width=2816)
        want = kernel_terms(marlin, t_c, t_m, "matmul", rows, "int4", experts, depth=2048, width=2816)
        assert got[0] + got[1] == want[0] + want[1]


@pytest.mark.parametrize("gpu, rows, tflops, peak", [("RTX-A6000", 128, 46.05, 154.8), ("L40", 64, 72.9, 181.05),
                                                     ("RTX4090", 128, 104.36, 165.2)])
def test_a_gpu_with_its_own_measured_rows_takes_them_unscaled(gpu, rows, tflops, peak):
    """The README's RTX A6000, L40 and RTX 4090 rows are those GPUs' own: the ceiling is the measured rate over the
    catalog's fp16 peak (154.8, 181.05, 165.2 TFLOP/s), not the A100's scaled by the fp32 rate (58.46 x 38.7 / 19.5
    = 116 TFLOP/s on the A6000, above its measured 46)."""
    _, m = _model(gpu, "autoawq-0.1")
    assert m.int4_cap[0][-1][1] == pytest.approx(
        {"RTX-A6000": 46.05, "L40": 64.28, "RTX4090": 104.36}[gpu] / peak, rel=1e-12)
    assert efficiencies(m, "matmul", rows, "int4", depth=8192, width=8192)[0] <= tflops / peak + 1e-12
    assert _compute_e(m, rows) == pytest.approx(min(tflops / peak, _compute_e(_model(gpu, "marlin")[1], rows)),
                                                rel=1e-12)
