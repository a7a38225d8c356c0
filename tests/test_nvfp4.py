"""NVFP4 checkpoints and NVIDIA ModelOpt's quantization_config.

NVFP4 (NVIDIA's 4-bit float format) stores FP4 (E2M1) values in groups of 16 sharing one FP8 (E4M3) scale, and
one fp32 scale per matrix: vLLM's ModelOptNvFp4LinearMethod loads ``weight`` [N, K/2] (two values a byte),
``weight_scale`` [N, K/16] in float8_e4m3fn and ``weight_scale_2`` / ``input_scale`` as fp32 scalars. W4A4
checkpoints (ModelOpt's quant_algo NVFP4, compressed-tensors' NVFP4 scheme) quantize the input too and run the
GEMM on Blackwell's FP4 tensor cores; vLLM runs them W4A16 with its FP4 Marlin kernel on an older GPU (compute
capability 7.5 and up: ModelOptNvFp4Config.get_min_capability). W4A16 checkpoints (W4A16_NVFP4, NVFP4A16) never
quantize the input.
"""

from __future__ import annotations

import json

import pytest

from roofcalc import Workload, analyze, load_config, shape_from_config
from roofcalc.calculator import dtype
from roofcalc.hardware import find_hardware
from roofcalc.roofline import weights_on_device


def tiny(q: dict | None = None) -> dict:
    cfg = load_config("TinyLlama/TinyLlama-1.1B")[0]
    return dict(cfg, quantization_config=q) if q is not None else cfg


def modelopt(algo: str, **kw) -> dict:
    return {"quant_method": "modelopt", "quant_algo": algo, **kw}


@pytest.mark.parametrize("q,fmt", [
    (modelopt("FP8", kv_cache_scheme={"type": "float", "num_bits": 8}, ignore=["lm_head"]), "fp8-t"),
    (modelopt("fp8_per_channel_per_token", ignore=["lm_head"]), "fp8-ch"),  # ModelOpt may write it lower-case
    (modelopt("NVFP4", group_size=16, ignore=["lm_head"]), "nvfp4"),
    (modelopt("W4A16_NVFP4", group_size=16), "nvfp4a16"),
    # hf_quant_config.json's layout, its exclusion list under exclude_modules
    ({"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                   "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}},
     "nvfp4"),
])
def test_modelopt_quant_algos(q, fmt):
    s = shape_from_config(tiny(q), "t")
    assert (s.weight_format, s.weight_format_refusal, s.weight_scope) == (fmt, "", "")


@pytest.mark.parametrize("q,message", [
    (modelopt("MIXED_PRECISION", quantized_layers={
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
        "model.layers.0.mlp.gate_proj": {"quant_algo": "NVFP4", "group_size": 16}}),
     "mixes formats by layer \\(FP8, NVFP4\\).*--weight-dtype fp8-t or --weight-dtype nvfp4"),
    (modelopt("W4A8_AWQ"), "quant_algo 'W4A8_AWQ' is not read"),
    (modelopt("NVFP4", group_size=32), "group_size must be 16"),
    (modelopt("NVFP4", ignore=["model.layers.*.self_attn*"]), "keeps the attention in 16 bits"),
])
def test_modelopt_configs_roofcalc_cannot_count_are_refused(q, message):
    import re

    assert re.search(message, shape_from_config(tiny(q), "t").weight_format_refusal)


def test_modelopt_exclusions_are_shell_wildcards():
    """vLLM reads ModelOpt's exclusion list with fnmatch: "*" crosses dots, and a pattern names whole modules
    ("*mlp.gate", the router, is not "mlp.gate_proj"). A Qwen3-MoE checkpoint that keeps its router and its
    attention in 16 bits quantizes the routed experts alone."""
    cfg = load_config("Qwen/Qwen3-30B-A3B")[0]
    router_only = shape_from_config(dict(cfg, quantization_config=modelopt(
        "NVFP4", group_size=16, ignore=["lm_head", "*mlp.gate"])), "t")
    assert (router_only.weight_format, router_only.weight_scope) == ("nvfp4", "")
    experts = shape_from_config(dict(cfg, quantization_config=modelopt(
        "NVFP4", group_size=16, ignore=["lm_head", "*mlp.gate", "*self_attn*"])), "t")
    assert (experts.weight_format, experts.weight_scope) == ("nvfp4", "experts")


def test_compressed_tensors_nvfp4_schemes():
    """compressed-tensors' preset schemes (quant_scheme.py): NVFP4A16, weights alone, float 4-bit by
    tensor_group of 16; NVFP4 adds input_activations of the same kind."""
    w = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}

    def ct(group):
        return {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                "config_groups": {"group_0": dict(group, targets=["Linear"])}, "ignore": ["lm_head"]}

    assert shape_from_config(tiny(ct({"weights": w})), "t").weight_format == "nvfp4a16"
    assert shape_from_config(tiny(ct({"weights": w, "input_activations": dict(w, dynamic="local")})),
                             "t").weight_format == "nvfp4"
    refused = shape_from_config(tiny(ct({"weights": w, "input_activations": {"num_bits": 8, "type": "int"}})), "t")
    assert "int8 activations" in refused.weight_format_refusal


def test_nvfp4_bytes_by_hand():
    s = shape_from_config(tiny(modelopt("NVFP4", group_size=16, ignore=["lm_head"])), "t")
    bf16 = dtype("bf16")
    a = analyze(s, Workload.decode(1, 10, weight_dtype=dtype("nvfp4"), act_dtype=bf16, kv_dtype=bf16))
    # q_proj 2048 -> 2048: 4,194,304 values at half a byte, 2048 x 128 fp8 group scales, one fp32 tensor scale
    assert a.kernel("q_proj").cost.weight_bytes == 2048 * 2048 // 2 + 2048 * 128 + 4
    # k_proj 2048 -> 256; down_proj 5632 -> 2048 (5632 / 16 = 352 groups a row)
    assert a.kernel("k_proj").cost.weight_bytes == 2048 * 256 // 2 + 256 * 128 + 4
    assert a.kernel("down_proj").cost.weight_bytes == 5632 * 2048 // 2 + 2048 * 352 + 4
    # the whole model: 22 layers of 44,040,192 linear values (0.5 + 1/16 bytes each) and 7 tensor scales; the
    # embedding and lm_head (2 x 65,536,000 values) and 45 norms of 2048 in bf16
    assert a.weight_storage_bytes == 22 * (44_040_192 * 9 // 16 + 7 * 4) + 2 * 65_536_000 * 2 + 45 * 2048 * 2
    assert a.kernel("lm_head").cost.weight_bytes == 32000 * 2048 * 2
    assert a.workload.compute_dtype.name == "fp4"


@pytest.mark.parametrize("hw,computes,why", [
    ("B200", "fp4", ""),  # FP4 tensor cores (HGX B200 datasheet: 9 PFLOP/s dense)
    ("RTX-PRO-6000", "fp4", ""),
    ("H100", "", "H100-SXM has no fp4 GEMMs: the nvfp4 weights compute in bf16, weight-only W4A16 as FP4 Marlin "
                 "runs them (vLLM's MarlinNvFp4LinearKernel, from compute capability 7.5; SGLang's --fp4-gemm-backend "
                 "marlin, its default on SM80-SM90)"),
    ("T4", "", "weight-only W4A16"),  # compute capability 7.5: vLLM's floor for NVFP4
])
def test_nvfp4_runs_w4a4_on_blackwell_and_w4a16_before(hw, computes, why):
    w, reason = weights_on_device(dtype("nvfp4"), dtype("bf16"), find_hardware(hw))
    assert (w.name, w.computes) == ("nvfp4", computes) and why in reason and bool(reason) == bool(why)
    assert w.dequantized == (not computes)


def test_nvfp4_below_turing_is_dequantized_at_load():
    w, reason = weights_on_device(dtype("nvfp4"), dtype("fp16"), find_hardware("V100"))
    assert w.name == "fp16" and "dequantized to fp16 at load" in reason


def test_nvfp4_w4a16_checkpoints_compute_in_16_bits_everywhere():
    w, reason = weights_on_device(dtype("nvfp4a16"), dtype("bf16"), find_hardware("B200"))
    assert (w.computes, reason, w.dequantized) == ("", "", True)
    # below compute capability 7.5, and off NVIDIA's GPUs, there is no FP4 Marlin kernel: dequantized at load
    for hw in ("V100", "MI300X", "EPYC-9654"):
        w, reason = weights_on_device(dtype("nvfp4a16"), dtype("fp16"), find_hardware(hw))
        assert w.name == "fp16" and reason.endswith("the nvfp4a16 weights are dequantized to fp16 at load")


def test_fp4_gemms_take_the_fitted_nvfp4_form():
    """On the B200 an NVFP4 matmul computing in fp4 takes the form fitted on AIConfigurator's NVFP4 GEMM table
    (vLLM 0.24, benchmarks/fit_kernels.py), not the fp8 one; on the H100 (no FP4 GEMMs) the 16-bit form with the
    W4A16 dequantizing factor."""
    from roofcalc.roofline import kernel_model, roofs

    b200 = find_hardware("B200")
    fp4 = kernel_model(b200, roofs(b200, "fp4")[0], None, compute_dtype="fp4")
    assert fp4.gemm_fit is fp4.gemm_fits["nvfp4"] and fp4.gemm_fit != fp4.gemm_fits["fp8"]
    assert fp4.gemm_fit.value_bytes == 0.5 + 1 / 16
    h100 = find_hardware("H100")
    w4a16 = kernel_model(h100, roofs(h100, "bf16")[0], None, compute_dtype="bf16")
    assert w4a16.gemm_fit is w4a16.gemm_fits["bf16"] and "nvfp4" in w4a16.dequant


def test_command_line_reads_an_nvfp4_checkpoint(tmp_path, capsys):
    from roofcalc.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny(modelopt("NVFP4", group_size=16, ignore=["lm_head"]))))
    assert main([str(path), "--hw", "B200", "--engine", "vllm"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "nvfp4, group 16 (the checkpoint's quantization_config)" in out and "compute fp4" in out
    assert main([str(path), "--hw", "H100"]) == 0
    assert ("W4A16 as FP4 Marlin runs them (vLLM's MarlinNvFp4LinearKernel, from compute capability 7.5; SGLang's "
            "--fp4-gemm-backend marlin, its default on SM80-SM90)") in " ".join(capsys.readouterr().out.split())


def test_a_group_size_against_the_formats_own_is_refused(tmp_path, capsys):
    from roofcalc.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny(modelopt("NVFP4", group_size=16, ignore=["lm_head"]))))
    assert main([str(path), "--group-size", "64"]) == 2
    assert capsys.readouterr().err.strip().endswith("nvfp4 holds 16 weights a scale, its format's own; drop "
                                                    "--group-size 64")
    assert main([str(path), "--group-size", "16"]) == 0


def test_a_modelopt_folder_whose_config_has_no_quantization_config_reads_hf_quant_config(tmp_path, capsys):
    """Older ModelOpt exports keep the quantization config beside config.json, in hf_quant_config.json
    ({"producer", "quantization": {...}}), which vLLM reads when config.json has none; roofcalc reads it for a
    folder (or a config.json in it) and says where it found it. A config.json with its own is read as it is."""
    from roofcalc.cli import main

    (tmp_path / "config.json").write_text(json.dumps(tiny()))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                             "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}))
    for source in (tmp_path, tmp_path / "config.json"):
        assert main([str(source), "--hw", "B200"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert "(nvfp4, group 16 (the checkpoint's quantization_config, in hf_quant_config.json))" in out
        # the fp8 KV cache it declares is reported, not taken (an engine's choice): --kv-dtype counts it
        assert "KV cache bf16 (the checkpoint declares an fp8 KV cache, which engines may or may not take: " \
               "--kv-dtype fp8 counts it)" in out
    (tmp_path / "config.json").write_text(json.dumps(tiny(modelopt("FP8", ignore=["lm_head"]))))
    assert main([str(tmp_path), "--hw", "B200", "--kv-dtype", "fp8"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(fp8-t (the checkpoint's quantization_config))" in out and "declares" not in out


def test_a_given_act_dtype_is_not_called_the_checkpoints(tmp_path, capsys):
    from roofcalc.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny(modelopt("NVFP4", group_size=16, ignore=["lm_head"]))))
    assert main([str(path), "--hw", "H100", "--act-dtype", "fp16"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "activations fp16, KV cache bf16, compute fp16 (--act-dtype)" in out


def test_a_hub_snapshot_in_the_hf_cache_reads_its_hf_quant_config(tmp_path):
    """A hub id read from the HF cache (offline) whose snapshot holds ModelOpt's hf_quant_config.json beside a
    config.json without a quantization_config (the checkpoint downloaded whole, as an engine does)."""
    import subprocess
    import sys

    snapshot = tmp_path / "hub" / "models--acme--tiny-fp8" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(tiny()))
    (snapshot / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}}))
    (tmp_path / "hub" / "models--acme--tiny-fp8" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny-fp8" / "refs" / "main").write_text("abc123")
    env = {"HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "roofcalc", "acme/tiny-fp8", "--hw", "H100", "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # TinyLlama's 22 layers of 44,040,192 linear weights in fp8 with one fp32 scale a matrix (7 a layer), the
    # embedding and lm_head (2 x 65,536,000) and 45 norms of 2048 in bf16
    assert doc["model"]["weight_bytes"] == 22 * (44_040_192 + 7 * 4) + 2 * 65_536_000 * 2 + 45 * 2048 * 2


def test_16bit_attention_beside_nvfp4_experts_computes_at_the_16bit_peak():
    """A ModelOpt NVFP4 MoE checkpoint that keeps its attention (and router) in bf16 quantizes the routed experts
    alone: those compute in fp4 on the B200, its 16-bit projections at the 16-bit peak in the 16-bit GEMM form,
    exactly as the same projections of the bf16 checkpoint do."""
    from roofcalc.roofline import roofline

    cfg = load_config("Qwen/Qwen3-30B-A3B")[0]
    s = shape_from_config(dict(cfg, quantization_config=modelopt(
        "NVFP4", group_size=16, ignore=["lm_head", "*mlp.gate", "*self_attn*"])), "t")
    assert s.weight_scope == "experts"
    from dataclasses import replace

    bf16, b200 = dtype("bf16"), find_hardware("B200")
    wl = Workload.prefill(8, 2048, weight_dtype=replace(dtype("nvfp4"), experts_only=True), act_dtype=bf16,
                          kv_dtype=bf16, cache_update="in-place")
    ref = Workload.prefill(8, 2048, weight_dtype=bf16, act_dtype=bf16, kv_dtype=bf16, cache_update="in-place")
    got = roofline(analyze(s, wl), b200, impl="cuda-graph")
    want = roofline(analyze(s, ref), b200, impl="cuda-graph")
    by = lambda r: {p.kernel.name: p for p in r.step.placements}  # noqa: E731
    for name in ("q_proj", "o_proj"):
        assert by(got)[name].kernel.cost == by(want)[name].kernel.cost
        assert by(got)[name].t_compute_s == pytest.approx(by(want)[name].t_compute_s)
        assert by(got)[name].t_expected_s == pytest.approx(by(want)[name].t_expected_s)
    gate_up = by(got)["experts.gate_up_proj"]
    assert gate_up.t_compute_s == pytest.approx(gate_up.kernel.cost.flops / 9e15)  # the fp4 peak
    assert got.compute_dtype == "fp4"


def test_more_modelopt_and_compressed_tensors_corners(tmp_path, capsys):
    from roofcalc.cli import main

    # ModelOpt with no weight algorithm: the KV cache alone is quantized; the weights stay in the float dtype
    kv_only = shape_from_config(tiny({"quant_method": "modelopt", "quant_algo": None, "kv_cache_quant_algo": "FP8"}),
                                "t")
    assert (kv_only.weight_format, kv_only.weight_format_refusal, kv_only.kv_format_declared) == (None, "", "fp8")
    # compressed-tensors NVFP4 weights whose input_activations is not an object: one line, exit 2
    w = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}
    q = {"quant_method": "compressed-tensors",
         "config_groups": {"group_0": {"targets": ["Linear"], "weights": w, "input_activations": "nvfp4"}}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny(q)))
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NVFP4 weights with 'nvfp4' activations are not read" in err
    # a malformed ModelOpt exclusion list shows the value it holds
    bad = shape_from_config(tiny({"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4",
                                                                               "exclude_modules": 5}}), "t")
    assert bad.weight_format_refusal.endswith("exclude_modules must be a list of module names, got 5")


def test_nvfp4_routed_experts_take_the_fused_moe_form_fitted_on_fp4_tables(capsys):
    """NVFP4 experts run as one fused MoE call where the GPU's tables measured it (AIConfigurator's vLLM 0.24 B200
    table, nvfp4 rows: FlashInfer's TensorRT-LLM NVFP4 MoE; fitting.MOE_FORMATS "nvfp4", 9/16 of a byte a weight,
    on the FP4 peak), not as plain GEMMs. DeepSeek-V3 at --tp 8, batch 32, context 4,096 is a memory-bound decode
    whose experts read 9/16 of a byte a weight against fp8's 1 (+ a 4-byte scale per 128 x 128 block): its NVFP4
    step is the faster. The H100 has no FP4 tables (nor FP4 tensor cores): its experts keep the GEMM forms, said so."""
    from roofcalc.cli import main

    base = ["deepseek-v3", "--hw", "B200", "--tp", "8", "--engine", "vllm", "--batch", "32", "--context", "4096",
            "--format", "json"]
    times = {}
    for fmt in ("nvfp4", "fp8-b128"):
        assert main([*base, "--weight-dtype", fmt]) == 0
        doc = json.loads(capsys.readouterr().out)
        experts = [k for k in doc["kernels"] if k["name"] == "experts.gate_up_proj"][0]
        assert experts["efficiency_source"].startswith("AIConfigurator 0.12.0 b200_sxm vllm tables, fitted")
        times[fmt] = doc["step"]["predicted_s"]
    assert times["nvfp4"] < times["fp8-b128"]
    assert main(base[:-2] + ["--weight-dtype", "nvfp4"]) == 0
    assert "routed experts: vLLM's fused MoE, fitted" in " ".join(capsys.readouterr().out.split())
    assert main(["deepseek-v3", "--hw", "H100", "--tp", "8", "--engine", "vllm", "--weight-dtype", "nvfp4"]) == 0
    assert "routed experts: the GEMM forms" in " ".join(capsys.readouterr().out.split())


def test_nvfp4_experts_running_w4a16_keep_the_gemm_forms(tmp_path, capsys):
    """A B200 profile that measured no FP4 peak (roofcalc measure measures fp32, tf32, fp16 and bf16) runs NVFP4
    weight-only (W4A16, as FP4 Marlin runs them): its experts are not the W4A4 kernel the nvfp4 fused-MoE form was
    fitted on, and keep the GEMM forms, as on the H100."""
    from roofcalc.cli import main

    prof = tmp_path / "b200.json"
    prof.write_text(json.dumps({"name": "my B200", "nominal": "B200", "kind": "gpu", "bandwidth_bytes_per_s": 7.5e12,
                                "peak_flop_per_s": {"bf16": 2.0e15, "fp16": 2.0e15}}))
    assert main(["deepseek-v3", "--hw-file", str(prof), "--tp", "8", "--engine", "vllm", "--weight-dtype", "nvfp4"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "W4A16" in out and "routed experts: the GEMM forms" in out
