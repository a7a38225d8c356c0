"""Which measured kernel tables a device's fixed costs come from (data/kernel_fits.json, AIConfigurator 0.12's
vLLM and NCCL tables): its own where it was measured, else the measured GPU of its generation by compute
capability (CUDA C++ Programming Guide: 7.0 Volta, 7.5 Turing, 8.0/8.6 Ampere, 8.9 Ada, 9.0 Hopper, 10.0 and
12.0 Blackwell), else the five measured GPUs' medians; the header says which."""

from __future__ import annotations

import pytest

from roofcalc.cli import main
from roofcalc.hardware import generation, find_hardware, nearest_fits
from roofcalc.predict import GPU_FIXED, kernel_fits
from roofcalc.roofline import kernel_model, Roof
from textutil import unwrap


def _model(name: str):
    hw = find_hardware(name)
    roof = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16" if "fp16" in hw.peak_flop_per_s else "bf16"))
    return hw, kernel_model(hw, roof, None)


@pytest.mark.parametrize("cc, gen", [(5.2, "pre-Pascal"), (6.1, "Pascal"), (7.0, "Volta"), (7.5, "Turing"), (8.0, "Ampere"), (8.6, "Ampere"),
                                     (8.9, "Ada"), (9.0, "Hopper"), (10.0, "Blackwell"), (12.0, "Blackwell")])
def test_generation_by_compute_capability(cc, gen):
    assert generation(cc) == gen


@pytest.mark.parametrize("name, fits, how", [
    ("H100-SXM", "h100_sxm", "measured"), ("A100-80GB", "a100_sxm", "measured"), ("L40S", "l40s", "measured"),
    ("A10G", "a100_sxm", "nearest"), ("RTX3090", "a100_sxm", "nearest"),  # 8.6: Ampere
    ("L4", "l40s", "nearest"), ("RTX4090", "l40s", "nearest"),  # 8.9: Ada
    ("H100-PCIe", "h100_sxm", "nearest"), ("RTX5090", "b200_sxm", "nearest"),  # 9.0 Hopper; 12.0 Blackwell
    ("T4", "a100_sxm", "nearest"), ("V100-SXM2", "a100_sxm", "nearest"),  # older than any measured: Ampere's
    ("MI300X", "", ""),  # no NVIDIA generation: the medians
])
def test_each_gpu_takes_its_own_or_its_generations_fixed_costs(name, fits, how):
    hw, m = _model(name)
    assert hw.fits == (fits, how)
    assert (m.fitted, m.fitted_how) == (fits, how)
    shipped = kernel_fits()["gpus"]
    for cls in ("gemm", "gemv", "attention", "attention_compute"):
        want = shipped[fits]["fixed_s"][cls] if fits else GPU_FIXED[cls].expected
        assert m.fixed_s[cls].expected == pytest.approx(want)
    # the all-reduce fit is the measured GPU's own (NVLink inside its node), never lent to another link
    assert bool(m.all_reduce) == (how == "measured")


def test_nearest_fits_is_the_measured_gpu_of_the_generation():
    assert nearest_fits(8.7) == "a100_sxm" and nearest_fits(9.0) == "h100_sxm" and nearest_fits(6.1) == "a100_sxm"


@pytest.mark.parametrize("name, words", [
    ("H100-SXM", "fixed costs and all-reduce fitted on H100-SXM's kernels, AIConfigurator 0.12 vLLM"),
    ("A10G", "fixed costs from A100-SXM's kernels, its generation's measured GPU (Ampere), AIConfigurator 0.12 vLLM"),
    ("T4", "fixed costs from A100-SXM's kernels, the nearest measured generation (Ampere; no Turing GPU measured), "
           "AIConfigurator 0.12 vLLM"),
    ("MI300X", "fixed costs: the five measured GPUs' medians (no kernel tables for this device)"),
])
def test_the_header_says_where_the_fixed_costs_come_from(name, words, capsys):
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw", name]) == 0
    assert words in unwrap(capsys.readouterr().out)


def test_a_cpu_has_no_fixed_costs_and_says_nothing_of_them(capsys):
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw", "EPYC-9654"]) == 0
    assert "fixed costs" not in unwrap(capsys.readouterr().out)
