"""The fitted fused MoE layer (predict.MoEFit, data/kernel_fits.json's "moe", fitted by benchmarks/fit_kernels.py on
AIConfigurator 0.12's vLLM moe_perf tables): the reading rules by hand from the shipped knots, the split of the
one fitted time over roofcalc's experts kernels (and the combine, whose weighted sum is inside the fused call),
and measured rows predicted by the step model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roofcalc import Workload, analyze, load_shape
from roofcalc.calculator import DTYPES
from roofcalc.hardware import find_hardware
from roofcalc.predict import MoEFit, default_model, kernel_fits
from roofcalc.roofline import roofline

EXPERTS = ("experts.gate_up_proj", "experts.act_mul", "experts.down_proj")
FUSED = EXPERTS + ("experts.combine",)  # the fused call's four kernels: the weighted sum is inside it


def _fit(gpu: str = "h100_sxm", key: str = "bf16") -> MoEFit:
    return MoEFit.from_doc(kernel_fits()["gpus"][gpu]["moe"][key], "test")


def test_the_five_gpus_with_balanced_tables_ship_their_classes():
    """H100, H200, B200 and L40S have balanced-routing vLLM MoE tables; the A100's (vLLM 0.14) holds power-law
    routing only, so the A100 ships SGLang's A100 form (the same Triton kernel, adapted), marked as SGLang's,
    bf16 only (the A100 has no fp8)."""
    gpus = kernel_fits()["gpus"]
    for gpu in ("h100_sxm", "h200_sxm", "b200_sxm", "l40s"):
        assert {"bf16", "fp8_block"} <= set(gpus[gpu]["moe"])
        # their own forms, but int4's (Marlin's MoE kernel: SGLang's tables, test_int4_experts_take_marlins_...)
        assert all("tables" not in f for k, f in gpus[gpu]["moe"].items() if k != "int4")
    assert "fp8" in gpus["h100_sxm"]["moe"]
    # NVFP4 experts (W4A4) where the tables hold nvfp4 rows: the GPUs with FP4 tensor cores, on their FP4 peak
    # (B200: 9 / 2.25 PFLOP/s dense = 4 times the bf16 peak; RTX PRO 6000: 2,000 / 500)
    for gpu in ("b200_sxm", "rtx_pro_6000_server"):
        assert gpus[gpu]["moe"]["nvfp4"]["peak_ratio"] == 4.0
    assert not any("nvfp4" in gpus[gpu]["moe"] for gpu in ("a100_sxm", "h100_sxm", "h200_sxm", "l40s"))
    assert set(gpus["a100_sxm"]["moe"]) == {"bf16", "int4"} and gpus["a100_sxm"]["moe"]["bf16"]["tables"] == "sglang"
    assert "/sglang/" in gpus["a100_sxm"]["moe"]["bf16"]["source"]["file"]
    assert default_model("gpu", fits="a100_sxm").moe_fits["bf16"].tables == "sglang"


def test_a_moe_form_reads_its_knots_geometrically():
    f = _fit()
    ec, em = dict(f.e_compute), dict(f.e_memory)
    # at a knot of tokens per expert, H = I' = 4096 (the factors' reference, 1): the knot's own values
    assert f.efficiencies(16, 4096, 4096) == pytest.approx((ec[16.0], em[16.0]))
    # 8 tokens per expert, halfway between the knots 4 and 16 in log2: the geometric mean
    assert f.efficiencies(8, 4096, 4096)[1] == pytest.approx(math.sqrt(em[4.0] * em[16.0]))
    # below one token per expert too (a decode of few tokens over many experts), a single step as a sweep's array:
    # 0.5 halfway between the knots 0.25 and 1
    assert f.efficiencies(0.5, 4096, 4096)[1] == pytest.approx(math.sqrt(em[0.25] * em[1.0]))
    assert float(f.efficiencies(np.array([0.5]), 4096, 4096)[1][0]) == pytest.approx(math.sqrt(em[0.25] * em[1.0]))
    # I' = 2048, halfway between the knots 1024 and 4096 (factor 1): the square root of the 1024 knot's factor
    i1024 = dict(f.i_memory)[1024.0]
    assert f.efficiencies(16, 4096, 2048)[1] == pytest.approx(em[16.0] * math.sqrt(i1024))


def test_sizes_beyond_the_measured_ones_read_as_the_nearest_measured_one():
    """Each table measured H and I' over a range (its rows: moe_ranges; H100 bf16: H 2,048-6,144, I' 16-16,384;
    fp8 block: H 2,048-7,168, I' 512-16,384); a size beyond is read at the range's end, not toward a factor knot
    no row pins: a form whose H factor at the 16,384 knot is 0.003 (a knot with no row near it may fall anywhere
    the least-squares fit leaves it) reads H 16,384 as H at the range's end."""
    from dataclasses import replace

    for key in ("bf16", "fp8_block"):
        f = _fit(key=key)
        (h_lo, h_hi), (i_lo, i_hi) = f.ranges
        doc = kernel_fits()["gpus"]["h100_sxm"]["moe"][key]["ranges"]
        assert (h_lo, h_hi, i_lo, i_hi) == (*doc["hidden"], *doc["inter"])
        assert h_hi < 16384
        wild = replace(f, h_compute=tuple((x, 0.003 if x == 16384.0 else e) for x, e in f.h_compute),
                       h_memory=tuple((x, 0.003 if x == 16384.0 else e) for x, e in f.h_memory))
        assert any(x == 16384.0 for x, _ in wild.h_compute)
        assert wild.efficiencies(16, 16384, 2048) == wild.efficiencies(16, h_hi, 2048)
        unclamped = replace(wild, ranges=())  # without the ranges: read at the 0.003 knot itself
        assert unclamped.efficiencies(16, 16384, 2048)[0] < 0.01 * f.efficiencies(16, 4096, 2048)[0]
        # below the range too, the width's own factor aside (bf16: i_lo / 4 = 4, not a multiple of 16: MoEFit.misaligned)
        aligned = replace(f, misaligned=())
        assert aligned.efficiencies(16, 4096, i_lo / 4) == aligned.efficiencies(16, 4096, i_lo)


def test_no_fused_call_is_below_its_roof():
    """The fitted efficiencies are a product of knots that may pass 1 (a side's knots are free where the other
    side binds all the rows near them: a fit once shipped the H100 fp8-block form's e_compute at 3.8); a call
    where such a side binds is held at its floor, the three experts kernels' summed FLOPs and bytes on the
    roof: a form of knots at 3 shows it."""
    from dataclasses import replace

    from roofcalc.predict import kernel_terms

    m = default_model("gpu", fits="h100_sxm")
    fast = replace(m.moe_fits["bf16"], e_compute=((1.0, 3.0),), e_memory=((1.0, 3.0),), pair_s=0.0)
    m = replace(m, moe_fits={"bf16": fast})
    sum_c, sum_m = 1e-3, 4e-4  # one layer's three experts kernels as fuse_moe sums them: compute-bound, 1 ms
    moe = ("bf16", 8, "gate_up_proj", 8, 2, 4096.0, 4096, 4096, sum_c, sum_m, sum_c)
    e_c, _ = fast.efficiencies(4096.0, 4096, 4096)
    assert fast.fixed_s + sum_c / e_c < sum_c  # the form alone: faster than the roof
    work, fixed, _ = kernel_terms(m, sum_c, sum_m, "matmul", 4096 * 8, moe=moe)
    assert work + fixed == pytest.approx(sum_c)  # held at it (this kernel's floor is the whole sum: share 1)


# Measured rows of AIConfigurator 0.12's H100 SXM vLLM 0.24.0 table (data/h100_sxm/moe/vllm/0.24.0/moe_perf.parquet,
# moe_dtype bfloat16, kernel_source vllm_unquantizedfusedmoe_triton_tritonexperts, distribution balanced,
# moe_tp_size 1, moe_ep_size 1), latency in ms: Mixtral-8x7B's experts (hidden 4096, inter 14336, top 2 of 8)
# and Qwen3-30B-A3B's (hidden 2048, inter 768, top 8 of 128). The rows are in the fit's sample; each must be
# within ±30 %, the per-kernel accuracy asked of the fits.
ROWS = {("mistralai/Mixtral-8x7B-v0.1", 1): 0.258741, ("mistralai/Mixtral-8x7B-v0.1", 64): 0.969189,
        ("Qwen/Qwen3-30B-A3B", 1): 0.049072, ("Qwen/Qwen3-30B-A3B", 64): 0.431941}


def _experts(model: str, batch: int, names=EXPERTS):
    b16 = DTYPES["bf16"]
    wl = Workload.decode(batch, 1024, weight_dtype=b16, act_dtype=b16, kv_dtype=b16, cache_update="in-place")
    r = roofline(analyze(load_shape(model), wl), find_hardware("H100-SXM"), impl="cuda-graph")
    return [p for p in r.step.placements if p.kernel.name in names], r


@pytest.mark.parametrize("model, batch", sorted(ROWS))
def test_the_step_model_predicts_measured_moe_layers_within_30_percent(model, batch):
    """The three experts kernels and the combine of one layer add up to the fitted form over the three's summed
    FLOPs and bytes and the layer's routed pairs (by hand from MoEFit), split over the four in proportion to
    their floors, and land within ±30 % of the measured row."""
    ks, r = _experts(model, batch, FUSED)
    assert [p.kernel.name for p in ks] == list(FUSED)
    shape = load_shape(model)
    moe, n_layers = shape.moe, ks[0].kernel.count
    f = _fit()
    t_c = sum(p.t_compute_s for p in ks[:3])  # the form's FLOPs and bytes: fitting.moe_cost's, the GEMM side's
    t_m = sum(p.t_memory_s for p in ks[:3])
    e_c, e_m = f.efficiencies(batch * moe.top_k / moe.n_experts, shape.d_model, moe.d_expert)
    fused = f.fixed_s + max(t_c / e_c, t_m / e_m) + f.pair_s * batch * moe.top_k  # T·k routed pairs
    each = [p.t_expected_s for p in ks]
    assert sum(each) == pytest.approx(fused)
    assert sum(p.t_fixed_s for p in ks) == pytest.approx(f.fixed_s)  # the call's fixed cost, shared the same way
    floors = [p.t_floor_s for p in ks]
    assert each[0] / each[2] == pytest.approx(floors[0] / floors[2])  # the split by floors
    assert each[3] / each[0] == pytest.approx(floors[3] / floors[0])
    assert abs(ROWS[(model, batch)] * 1e-3 / sum(each) - 1) <= 0.30  # within ±30 % as fitting.score counts it
    # the step adds the same: its expected device time holds each layer's experts at the fused time
    assert r.step.times.device_s >= n_layers * fused


def test_a_format_without_a_fitted_class_keeps_the_gemm_forms():
    """int8 expert weights (no fitted class) keep the GEMM forms: their kernels carry no fused-MoE tag; int4
    ones (weight-only, 16-bit activations) are the int4 class, Marlin's MoE kernel's."""
    wl = Workload.decode(8, 1024, weight_dtype=DTYPES["int8"], act_dtype=DTYPES["bf16"], kv_dtype=DTYPES["bf16"])
    ks = [k for k in analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), wl).kernels if k.name in EXPERTS]
    assert ks and all(not k.moe for k in ks)
    wl = Workload.decode(8, 1024, weight_dtype=DTYPES["int4"], act_dtype=DTYPES["bf16"], kv_dtype=DTYPES["bf16"])
    ks = [k for k in analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), wl).kernels if k.name in EXPERTS]
    assert ks and all(k.moe[0] == "int4" for k in ks)
    wl = Workload.decode(8, 1024, weight_dtype=DTYPES["fp8-b128"], act_dtype=DTYPES["bf16"], kv_dtype=DTYPES["bf16"])
    ks = [k for k in analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), wl).kernels if k.name in EXPERTS]
    assert all(k.moe[0] == "fp8_block" for k in ks)


def test_the_pessimistic_end_is_never_below_the_fused_expected_time():
    ks, r = _experts("mistralai/Mixtral-8x7B-v0.1", 8)
    assert r.step.times.device_upper_s > r.step.times.device_s


def test_flashinfer_cutlass_forms_read_a_factor_by_the_experts_a_call_reaches():
    """The H100's and H200's per-tensor fp8 tables (FlashInfer's CUTLASS MoE kernel) are fitted with a memory-side
    factor by the distinct experts the call reads on the rank (fitting.moe_design; 1 at one expert); the Triton
    tables (the H100's bf16) have none. The step model reads it at the experts its bytes count, uniform routing's
    E·(1 − (1 − k/E)^T) (calculator.touched_experts)."""
    from roofcalc.calculator import touched_experts
    from roofcalc.predict import touched_on_rank

    fp8 = _fit("h200_sxm", "fp8")
    f = dict(fp8.t_memory)
    assert f[1.0] == 1.0 and set(f) == {1.0, 4.0, 16.0, 64.0, 256.0, 1024.0}
    assert _fit("h100_sxm", "bf16").t_memory == ()
    base = fp8.efficiencies(2, 2048, 768)[1]
    assert fp8.efficiencies(2, 2048, 768, touched=16)[1] == pytest.approx(base * f[16.0])
    # 8 experts: halfway between the knots 4 and 16 in log2, the geometric mean of their factors
    assert fp8.efficiencies(2, 2048, 768, touched=8)[1] == pytest.approx(base * math.sqrt(f[4.0] * f[16.0]))
    # Qwen3-30B-A3B (top 8 of 128) at 1 and 64 tokens; Mixtral (2 of 8) at 3 over EP 2: the rank holds 4
    for tokens, k, e, rank in ((1, 8, 128, 128), (64, 8, 128, 128), (3, 2, 8, 4)):
        assert touched_on_rank(tokens * k / e, rank, e, k) == pytest.approx(
            touched_experts(e, k, tokens, "expected") * rank / e)


def test_the_step_model_reads_the_factor_at_the_layers_experts():
    """Qwen3-30B-A3B in fp8 (one scale a tensor) on the H200 at batch 1 and 4: the fused call's time is the form at
    the touched experts (8 and 128·(1 − (1 − 8/128)^4) = 29.0), by hand from MoEFit."""
    from roofcalc.calculator import touched_experts

    shape = load_shape("Qwen/Qwen3-30B-A3B")
    moe, b16 = shape.moe, DTYPES["bf16"]
    f = _fit("h200_sxm", "fp8")
    for batch in (1, 4):
        wl = Workload.decode(batch, 1024, weight_dtype=DTYPES["fp8-t"], act_dtype=b16, kv_dtype=b16,
                             cache_update="in-place")
        r = roofline(analyze(shape, wl), find_hardware("H200"), impl="cuda-graph")
        ks = [p for p in r.step.placements if p.kernel.name in FUSED]
        t_c = sum(p.t_compute_s for p in ks[:3])
        t_m = sum(p.t_memory_s for p in ks[:3])
        touched = touched_experts(moe.n_experts, moe.top_k, batch, "expected")
        e_c, e_m = f.efficiencies(batch * moe.top_k / moe.n_experts, shape.d_model, moe.d_expert, touched)
        fused = f.fixed_s + max(t_c / e_c, t_m / e_m) + f.pair_s * batch * moe.top_k
        assert sum(p.t_expected_s for p in ks) == pytest.approx(fused)


def test_an_expert_without_a_gate_counts_two_weights():
    """fitting.moe_cost by hand, 4 routed rows over 2 of 8 experts, H 64, I' 32, 16-bit weights. Gated (gate, up,
    down): FLOPs 2·4·3·64·32 = 49,152; weights 2 × 3·64·32·2 = 24,576 bytes; activations 2·4·(64 + 32) = 768
    read by the GEMMs and 2·4·(64 + 5·32) = 1,792 written and passed through: 27,136 bytes. Without a gate (up,
    the activation, down: Nemotron-H's relu2): FLOPs 2·4·2·64·32 = 32,768; weights 2 × 2·64·32·2 = 16,384; the
    GEMMs' reads 768 as before and the outputs 2·4·(64 + 3·32) = 1,280: 18,432 bytes. Block scales of 32 × 32: the gated expert's gate_up of 64 × 64
    and down of 32 × 64 hold 4 + 2 blocks, 24 bytes; the ungated one's up and down of 32 × 64 each 2 + 2, 16."""
    from roofcalc.fitting import moe_cost

    g = moe_cost(4, 2, 8, 64, 32, 2.0)
    u = moe_cost(4, 2, 8, 64, 32, 2.0, gated=False)
    assert (g["flops"], g["bytes"]) == (49152, 27136)
    assert (u["flops"], u["bytes"]) == (32768, 18432)
    assert moe_cost(4, 2, 8, 64, 32, 2.0, block=32)["bytes"] - g["bytes"] == 2 * 24
    assert moe_cost(4, 2, 8, 64, 32, 2.0, block=32, gated=False)["bytes"] - u["bytes"] == 2 * 16
    both = moe_cost(np.array([4, 4]), 2, 8, 64, 32, 2.0, gated=np.array([True, False]))  # per row
    assert list(both["flops"]) == [49152, 32768] and list(both["bytes"]) == [27136, 18432]


def test_the_shapes_left_out_and_counted_without_a_gate_come_from_the_configs(tmp_path):
    """Grouped routing: a config keeping fewer groups than it has (DeepSeek-V3: 8 and 4) names its (H, I, k, E);
    one group (Kimi-K2) or none does not. No gate: a nemotron_h config, at its latent width where it has one and at
    its hidden size (AIConfigurator's case file runs Nemotron-3-Ultra's experts at both, 2,048 and 8,192)."""
    import json

    from roofcalc.fitting import grouped_routing_shapes, ungated_moe_shapes

    configs = {
        "ds.json": dict(model_type="deepseek_v3", hidden_size=7168, moe_intermediate_size=2048, num_experts_per_tok=8,
                        n_routed_experts=256, n_group=8, topk_group=4),
        "kimi.json": dict(model_type="kimi_k2", hidden_size=7168, moe_intermediate_size=2048, num_experts_per_tok=8,
                          n_routed_experts=384, n_group=1, topk_group=1),
        "qwen.json": dict(text_config=dict(model_type="qwen3_moe", hidden_size=4096, moe_intermediate_size=1536,
                                           num_experts_per_tok=8, num_experts=128)),
        "ultra.json": dict(model_type="nemotron_h", hidden_size=8192, moe_latent_size=2048,
                           moe_intermediate_size=5120, num_experts_per_tok=22, n_routed_experts=512, n_group=1),
        "nano.json": dict(model_type="nemotron_h", hidden_size=2688, moe_intermediate_size=1856,
                          num_experts_per_tok=6, n_routed_experts=128),
        "dense.json": dict(model_type="llama", hidden_size=4096),
    }
    for name, c in configs.items():
        (tmp_path / name).write_text(json.dumps(c))
    (tmp_path / "broken.json").write_text("{not json")
    assert grouped_routing_shapes(tmp_path) == {(7168, 2048, 8, 256)}
    assert ungated_moe_shapes(tmp_path) == {(2048, 5120, 22, 512), (8192, 5120, 22, 512), (2688, 1856, 6, 128)}
    # which tables measured them without a gate is the collector's: AIConfigurator's SGLang collector ran every
    # expert gated before its SGLang 0.5.14 upgrade (e23be5a79: is_gated), vLLM's and TensorRT-LLM's never did
    from roofcalc.fitting import ungated_shapes_for

    ungated = {(2048, 5120, 22, 512), (8192, 5120, 22, 512), (2688, 1856, 6, 128)}
    assert ungated_shapes_for(tmp_path, "sglang", "0.5.10") == set()
    assert ungated_shapes_for(tmp_path, "sglang", "0.5.6.post2") == set()
    assert ungated_shapes_for(tmp_path, "sglang", "0.5.14") == ungated
    assert ungated_shapes_for(tmp_path, "vllm", "0.14.0") == ungated
    assert ungated_shapes_for(tmp_path, "trtllm", "1.3.0rc20") == ungated


# SGLang 0.5.14's bf16 Triton fused-MoE rows on the H200, balanced routing, 64 tokens, TP 1 (AIConfigurator 0.12.0,
# systems/data/h200_sxm/moe/sglang/0.5.14/moe_perf.parquet): (H, I, top-k, experts) -> latency in ms
SUPER_H200_ROWS = {(4096, 1024, 10, 512): 2.974124, (6144, 3072, 4, 128): 3.363593, (1024, 2688, 22, 512): 1.989651}


def test_sglang_0_5_14_triton_rows_of_nemotron_3_super_were_measured_gated(tmp_path):
    """Nemotron-3 Super's experts (latent width 1,024, width 2,688, top 22 of 512) have no gate, but SGLang 0.5.14's
    Triton rows of that shape ran three weights an expert (fitting.MEASURED_GATED). At 64 tokens every expert is
    touched (64 * 10 and 64 * 22 routed pairs over 512; 64 * 4 over 128) and the call streams the weights: three of
    H x I in 16 bits an expert, 512 * 3 * 4096 * 1024 * 2 B = 12.88 GB in 2.974 ms = 4.33 TB/s, 128 * 3 * 6144 * 3072
    * 2 = 14.50 GB in 3.364 ms = 4.31 TB/s; Super's counted with three, 512 * 3 * 1024 * 2688 * 2 = 8.46 GB in 1.990 ms
    = 4.25 TB/s, with two 2.83 TB/s: 1.5x slower than these two shapes on the same DRAM."""
    import json

    from roofcalc.fitting import moe_cost, ungated_shapes_for

    def bandwidth(shape, gated):
        h, i, k, e = shape
        c = moe_cost(64 * k, min(e, 64 * k), e, h, i, 2, gated=gated)
        return c["bytes"] / (SUPER_H200_ROWS[shape] * 1e-3)

    others = [bandwidth(s, True) for s in SUPER_H200_ROWS if s[0] != 1024]
    assert max(others) / min(others) < 1.02
    super_shape = (1024, 2688, 22, 512)
    assert abs(bandwidth(super_shape, True) / others[0] - 1) < 0.03
    assert bandwidth(super_shape, False) / others[0] < 0.68
    (tmp_path / "super.json").write_text(json.dumps(dict(
        model_type="nemotron_h", hidden_size=4096, moe_latent_size=1024, moe_intermediate_size=2688,
        num_experts_per_tok=22, n_routed_experts=512)))
    shapes = ungated_shapes_for(tmp_path, "sglang", "0.5.14")
    assert shapes == {super_shape, (4096, 2688, 22, 512)}
    # the Triton kernel's rows ran it gated; another kernel's (FlashInfer's CUTLASS kernel: the RTX PRO 6000's nvfp4
    # rows of it) and another engine's did not
    assert ungated_shapes_for(tmp_path, "sglang", "0.5.14", "sglang_fused_moe_triton") == {(4096, 2688, 22, 512)}
    assert ungated_shapes_for(tmp_path, "sglang", "0.5.14", "sglang_flashinfer_cutlass_moe") == shapes
    assert ungated_shapes_for(tmp_path, "vllm", "0.24.0", "sglang_fused_moe_triton") == shapes



def test_the_header_says_when_routed_experts_take_no_fused_form(capsys):
    """A fused MoE form is fitted on vLLM's and TensorRT-LLM's tables of the H100, H200, B200, L40S and RTX PRO 6000
    (their A100 tables hold no balanced rows: vLLM's preset there takes SGLang's, TensorRT-LLM's none) and on
    SGLang's of all six. Where a model's routed experts get no form, the header says they take the GEMM forms
    (predict.kernel_terms times an unfused experts kernel as a GEMM of its rows: its efficiency source is the
    GEMM tables' own); where they get one, or the model has no routed experts, it does not."""
    import json

    from roofcalc.cli import main

    def header(model, *extra):
        assert main([model, *extra]) == 0
        return " ".join(capsys.readouterr().out.split())

    mixtral, note = "mistralai/Mixtral-8x7B-v0.1", "routed experts: the GEMM forms, each kernel's rows as one GEMM"
    assert main([mixtral, "--hw", "A100-80GB", "--engine", "trtllm", "--format", "json"]) == 0
    kernels = {k["name"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert kernels["experts.gate_up_proj"]["efficiency_source"] == kernels["q_proj"]["efficiency_source"] == \
        "AIConfigurator 0.12.0 a100_sxm trtllm tables, fitted (docs/kernel_fits.md)"
    assert note not in header(mixtral, "--hw", "H100", "--engine", "vllm")
    assert "routed experts: SGLang's fused MoE, fitted" in header(mixtral, "--hw", "H100", "--engine", "sglang")
    # vLLM's A100 table holds no balanced-routing rows: its preset takes SGLang's A100 form (the same Triton kernel)
    assert ("routed experts: SGLang's fused MoE, fitted (the same Triton kernel; vLLM's table here holds no "
            "balanced-routing rows)") in header(mixtral, "--hw", "A100-80GB", "--engine", "vllm")
    assert f"{note} (no fused-MoE form of TensorRT-LLM's fitted here)" in header(mixtral, "--hw", "A100-80GB",
                                                                                 "--engine", "trtllm")
    assert note not in header(mixtral, "--hw", "H100", "--engine", "trtllm")
    assert note not in header("meta-llama/Llama-3.1-8B", "--hw", "H100", "--engine", "trtllm")
    assert note not in header(mixtral, "--hw", "A100-80GB", "--engine", "sglang")
    # SGLang's tables hold bf16 and fp8 block-scaled experts: per-tensor fp8 ones take no fused form
    assert f"{note} (no fused-MoE form of SGLang's fitted here for their weight format)" in \
        header(mixtral, "--hw", "H100", "--engine", "sglang", "--weight-dtype", "fp8")


def test_sglang_and_trtllm_take_their_own_fused_moe_forms():
    """Under --engine sglang and trtllm a measured GPU's routed experts take the forms fitted on the engine's own
    MoE tables (data/kernel_fits_engines.json, as benchmarks/ship_fits.py wrote them from
    benchmarks/kernel_fits.json), not vLLM's."""
    import json
    from pathlib import Path

    fits = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "kernel_fits.json").read_text())["fits"]
    for gpu in ("h100_sxm", "h200_sxm"):
        sglang = default_model("gpu", fits=gpu, engine="sglang").moe_fits
        vllm = default_model("gpu", fits=gpu, engine="vllm").moe_fits
        # int4: Marlin's MoE kernel, fitted on SGLang's tables and taken by vLLM's preset too (its own hold one shape)
        assert set(sglang) == {"bf16", "fp8_block", "mxfp4", "int4"}
        assert set(vllm) == {"bf16", "fp8", "fp8_block", "mxfp4", "int4"}
        own = next(f for f in fits if (f["gpu"], f["engine"], f["cls"]) == (gpu, "sglang", "moe_fp8_block"))
        assert own["source"]["kernel_source"] == "sglang_fused_moe_triton" and own["source"]["ep_rows_left_out"] > 0
        assert sglang["fp8_block"].fixed_s == pytest.approx(own["params"]["fixed_s"], rel=1e-9)
        assert sglang["fp8_block"].fixed_s != vllm["fp8_block"].fixed_s
        trt = default_model("gpu", fits=gpu, engine="trtllm").moe_fits
        own = next(f for f in fits if (f["gpu"], f["engine"], f["cls"]) == (gpu, "trtllm", "moe_fp8_block"))
        # TensorRT-LLM's H100 MXFP4 table holds one model shape: none to hold out, not fitted (the H200's two)
        assert set(trt) == {"bf16", "fp8", "fp8_block"} | ({"mxfp4"} if gpu == "h200_sxm" else set())
        assert own["source"]["kernel_source"] == "moe_torch_flow_cutlass"
        assert trt["fp8_block"].fixed_s == pytest.approx(own["params"]["fixed_s"], rel=1e-9)
    assert not default_model("gpu", fits="a100_sxm", engine="trtllm").moe_fits  # no balanced rows


# gpt-oss-120b's routed experts (H = I = 2,880, top 4 of 128) in MXFP4 under vLLM on the H100, balanced routing, at
# tp 1 and 8 (each expert on 2,880 / 8 = 360 of its width): AIConfigurator 0.12,
# systems/data/h100_sxm/moe/vllm/0.24.0/moe_perf.parquet (moe_dtype w4a16_mxfp4, OpenAI's Triton MoE kernels), ms
GPT_OSS_ROWS = {(8, 1): 0.200635, (64, 1): 0.689093, (8, 8): 0.053019, (64, 8): 0.134896}


@pytest.mark.parametrize("batch, tp", sorted(GPT_OSS_ROWS))
def test_gpt_oss_experts_in_one_kernel_take_the_mxfp4_form(batch, tp):
    """transformers 5.25 traces gpt-oss's experts as one kernel (mlp.experts: gate and up, the clamped SwiGLU,
    down); in MXFP4 it is one fused MoE call (part "experts") and takes the fitted MXFP4 form whole: the fixed
    cost, its FLOPs and bytes at the form's efficiencies (x = 4·B/128 tokens per expert, H 2,880, I' 2,880/tp,
    the touched experts 128·(1 − (1 − 4/128)^B)) and B·4 routed pairs, by hand from MoEFit; within ±30 % of the
    measured layer."""
    import json
    from pathlib import Path

    from roofcalc.calculator import touched_experts
    from roofcalc.parallel import Parallel
    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank

    pytest.importorskip("torch")
    cfg = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "configs" / "published" /
                      "openai--gpt-oss-120b.json").read_text())
    b16 = DTYPES["bf16"]
    wl = Workload.decode(batch, 1024, weight_dtype=DTYPES["mxfp4"], act_dtype=b16, kv_dtype=b16, group_size=32,
                         cache_update="in-place")
    a = trace(cfg, "t", wl, view="ideal", use_cache=False)
    if tp > 1:
        a = traced_rank(a, Parallel(tp=tp), hf_config(cfg, "t")[0])
    r = roofline(a, find_hardware("H100-SXM"), impl="cuda-graph")
    p = next(p for p in r.step.placements if p.kernel.name == "mlp.experts")
    assert p.kernel.moe[:5] == ("mxfp4", 128, "experts", 128, 4)
    f = _fit("h100_sxm", "mxfp4")
    touched = touched_experts(128, 4, batch, "expected")
    e_c, e_m = f.efficiencies(batch * 4 / 128, 2880, 2880 / tp, touched)
    s_c, s_m = f.padded_shares(batch * 4 / 128, 2880, 2880 / tp, touched, 128)  # 360 a rank stored 384 wide
    fused = f.fixed_s + max(p.t_compute_s / (e_c * s_c), p.t_memory_s / (e_m * s_m)) + f.pair_s * batch * 4
    assert p.t_expected_s == pytest.approx(fused)
    assert abs(GPT_OSS_ROWS[(batch, tp)] * 1e-3 / p.t_expected_s - 1) <= 0.30


# SGLang 0.5.14 on the H100, balanced routing, one rank, 4,096 tokens, bf16: AIConfigurator 0.12,
# systems/data/h100_sxm/moe/sglang/0.5.14/moe_perf.parquet (kernel_source sglang_fused_moe_triton), ms. SGLang
# ships tuned tiles for Qwen3-30B-A3B's experts on the H100 (E=128,N=768) and for Mixtral's at TP 2 (E=8,N=7168),
# not at TP 1 (E=8,N=14336): benchmarks/sglang_moe_configs.json, from the 0.5.14 wheel. Mixtral's TP 1 row takes
# 12.97 ms where half its work at TP 2 takes 2.54 ms.
SGLANG_ROWS = {"mistralai/Mixtral-8x7B-v0.1": 12.967715, "Qwen/Qwen3-30B-A3B": 0.780676}


def test_sglang_shapes_without_tuned_tiles_take_their_factor():
    """SGLang's H100 bf16 form carries a compute-side factor by tokens per expert for shapes its package has no
    tuned configuration for (get_default_config's 64 x 64 x 32 tiles), and the shapes it has one for; a tuned shape
    reads the base form, an untuned one the base times the factor, by hand from MoEFit."""
    sglang = default_model("gpu", fits="h100_sxm", engine="sglang").moe_fits["bf16"]
    assert sglang.untuned and (128, 768) in sglang.tuned and (8, 7168) in sglang.tuned and (8, 14336) not in sglang.tuned
    assert sglang.is_tuned(128, 768) and sglang.is_tuned(8, 7168) and not sglang.is_tuned(8, 14336)
    u = dict(sglang.untuned)
    base = sglang.efficiencies(16, 4096, 14336)
    assert sglang.efficiencies(16, 4096, 14336, experts=8) == pytest.approx((base[0] * u[16.0], base[1]))
    assert sglang.efficiencies(16, 4096, 7168, experts=8) == sglang.efficiencies(16, 4096, 7168)
    # the factor is the default tiles' cost: at hundreds of tokens per expert well below 1
    assert u[1024.0] < 0.7
    # vLLM's own default tiles grow with the tokens: its forms, and the A100's borrowed SGLang form, carry none
    for gpu in ("h100_sxm", "h200_sxm", "a100_sxm"):
        assert not default_model("gpu", fits=gpu, engine="vllm").moe_fits["bf16"].untuned


@pytest.mark.parametrize("model", sorted(SGLANG_ROWS))
def test_the_step_model_predicts_sglang_moe_layers_with_and_without_tuned_tiles(model):
    """A 4,096-token prefill's fused MoE layer under --engine sglang on the H100 lands within ±30 % of SGLang's
    measured call, an untuned shape (Mixtral at TP 1) as a tuned one (Qwen3-30B-A3B)."""
    from roofcalc.engines import ENGINES

    b16 = DTYPES["bf16"]
    wl = Workload.prefill(1, 4096, weight_dtype=b16, act_dtype=b16, kv_dtype=b16, cache_update="in-place")
    sglang = ENGINES["sglang"]
    r = roofline(analyze(load_shape(model), wl), find_hardware("H100-SXM"), impl=sglang.impl,
                 engine_host=sglang.host)
    ks = [p for p in r.step.placements if p.kernel.name in FUSED]
    assert [p.kernel.name for p in ks] == list(FUSED)
    assert abs(SGLANG_ROWS[model] * 1e-3 / sum(p.t_expected_s for p in ks) - 1) <= 0.30
    # each kernel's efficiency source (JSON, CSV) says which tiles ran
    untuned = model.startswith("mistralai")
    assert all(("SGLang's default tiles (no tuned configuration for 8 experts of width 14,336)" in p.efficiency_source)
               == untuned for p in ks)


def test_the_header_says_when_sglang_runs_its_default_tiles(capsys):
    """Mixtral's experts at TP 1 have no tuned SGLang file on the H100 (E=8,N=14336): the header says so, with the
    factor at the step's tokens per expert (4,096 tokens x top 2 / 8 experts = 1,024: its knot's value); at TP 2
    (E=8,N=7168, a file) it does not."""
    from roofcalc.cli import main

    f = dict(default_model("gpu", fits="h100_sxm", engine="sglang").moe_fits["bf16"].untuned)[1024.0]
    main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "h100", "--engine", "sglang", "--prompt", "4096"])
    out = " ".join(capsys.readouterr().out.split())
    assert ("no tuned configuration for 8 experts of width 14,336 on H100-SXM): "
            f"×{f:.2f} the tuned compute rate at 1,024 tokens an expert") in out
    main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "h100", "--engine", "sglang", "--prompt", "4096", "--tp", "2"])
    out = " ".join(capsys.readouterr().out.split())
    assert "routed experts: SGLang's fused MoE, fitted" in out and "default tiles" not in out


def test_rows_slower_than_twice_the_work_are_found_by_hand():
    """The fit (benchmarks/fit_kernels.py) and --kernel-db leave out a MoE table's rows that take more than 1.3 / 0.7 =
    1.857x the time of the row of the same shape and tokens with twice the work on the rank (half the EP, or half
    the TP): no cost growing with the work holds both within ±30 % as fitting.evaluate counts it (0.7 p <= t <= 1.3
    p; t_less <= 1.3 p_less <= 1.3 p_more <= 1.3 t_more / 0.7). By hand: EP 2 at 1.90 ms against EP 1's 1.00 (1.90 >
    1.857); TP 4 at 3.00 against TP 2's 1.60 (3.00 > 1.857 x 1.60 = 2.971); TP 2 at 1.60 against TP 1's 1.00 stays
    (1.60 < 1.857), as do EP 4 (0.40), TP 2 EP 2 (2.00 against 1.60 and 1.90), a row with no partner at its token
    count, and EP 3 (no half). A configuration measured twice is taken at its median: EP 1 at 0.90 and 1.30 (median
    1.10) leaves EP 2's 1.90 under 1.857 x 1.10 = 2.043; EP 2 at 1.70 and 2.50 (median 2.10 > 1.857) against EP 1's
    1.00 goes whole, its 1.70 too."""
    import pandas as pd

    from roofcalc.fitting import WORK_CONSISTENT, slower_than_twice_the_work

    assert WORK_CONSISTENT == pytest.approx(1.857, abs=1e-3)

    def frame(rows):
        return pd.DataFrame([dict(num_tokens=t, hidden_size=4096, inter_size=1024, topk=8, num_experts=96,
                                  moe_tp_size=tp, moe_ep_size=ep, latency=ms) for t, tp, ep, ms in rows])

    rows = [(64, 1, 1, 1.00), (64, 1, 2, 1.90), (64, 1, 4, 0.40), (64, 2, 1, 1.60), (64, 2, 2, 2.00),
            (64, 4, 1, 3.00), (128, 1, 2, 1.90), (64, 1, 3, 5.00)]
    assert slower_than_twice_the_work(frame(rows)).tolist() == [False, True, False, False, False, True, False, False]
    twice = [(64, 1, 1, 0.90), (64, 1, 1, 1.30), (64, 1, 2, 1.90)]
    assert slower_than_twice_the_work(frame(twice)).tolist() == [False, False, False]
    own = [(64, 1, 1, 1.00), (64, 1, 2, 1.70), (64, 1, 2, 2.50)]
    assert slower_than_twice_the_work(frame(own)).tolist() == [False, True, True]


def test_widths_not_a_multiple_of_16_are_found_by_hand():
    """moe_misaligned: 1 where the rank's expert width I' is not a multiple of 16. 232 = 16 x 14.5 (Nemotron-3
    Nano's 1,856 at TP 8), 360 = 16 x 22.5 (gpt-oss's 2,880 at TP 8) and 22 are not; 16, 256 and 720 = 16 x 45 are."""
    from roofcalc.fitting import moe_misaligned

    assert moe_misaligned([16, 22, 232, 256, 360, 720]).tolist() == [0, 1, 1, 0, 1, 0]


def test_the_fit_recovers_a_factor_planted_on_misaligned_widths():
    """Rows made by hand from fitting.moe_cost for two layer shapes at TP 1, 2, 4 and 8 (I' 704, 352, 176, 88 and
    1,856, 928, 464, 232; 88 and 232 are not multiples of 16) from 1 to 65,536 tokens, each at a compute efficiency
    of 0.5 and a memory efficiency of 0.7 (so compute-bound above 295 x 0.5 / 0.7 = 211 FLOPs a byte on an H100,
    989 TFLOP/s over 3.35 TB/s: the 232-wide rows at 16,384 and 65,536 tokens, 214 and 271 with their activations,
    which pin the compute factor; the 88-wide rows stay below 114), a fixed 20 us and no time a pair, the
    misaligned rows at half of both efficiencies: the form fitted by fitting.moe_design and fitting.fit finds
    factors of 0.5 on each side, and none where every width is aligned."""
    from roofcalc.fitting import balanced_routing, evaluate, fit, moe_cost, moe_design, params, rows_of

    peak, bw = 989e12, 3.35e12  # an H100 SXM's dense 16-bit peak and bandwidth (its datasheet)
    rows = []
    for hidden, inter, k, experts in ((2048, 704, 8, 128), (4096, 1856, 6, 128)):
        for tp in (1, 2, 4, 8):
            for tokens in (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536):  # the 232-wide rows' last two compute-bound
                r, touched = balanced_routing(tokens, experts, k, 1)
                rows.append((hidden, inter / tp, r, touched, experts, tokens * k))
    hidden, width, r, touched, experts, pairs = (np.array(c, float) for c in zip(*rows))
    cost = moe_cost(r, touched, experts, hidden, width, 2.0)
    ct, mt = cost["flops"] / peak, cost["bytes"] / bw
    slow = np.where(width % 16 != 0, 0.5, 1.0)
    t = 20e-6 + np.maximum(ct / (0.5 * slow), mt / (0.7 * slow))
    assert 0 < (slow < 1).mean() < 1
    R = dict(t=t, x=cost["x"], hidden=hidden, inter=width, pairs=pairs, touched=touched)
    D = moe_design(R)
    assert {"misaligned_factor_compute", "misaligned_factor_memory"} <= set(D.names)
    M = D.mats()
    th = fit(rows_of(M, np.ones(len(t), bool)), ct, mt, pairs, t, D.prior, D.smooth)
    p = params(D.names, th)
    assert p["misaligned_factor_memory"] == pytest.approx(0.5, rel=0.05)
    assert p["misaligned_factor_compute"] == pytest.approx(0.5, rel=0.05)
    assert np.abs(np.log(evaluate(th, M, ct, mt, pairs)[0] / t)).max() < 0.05
    aligned = moe_design({**R, "inter": np.where(width % 16 != 0, 96.0, width)})
    assert not any(n.startswith("misaligned") for n in aligned.names)


def test_a_misaligned_width_takes_the_shipped_forms_factors():
    """A shipped form fitted on a table holding misaligned widths, where the factors predicted its held-out shapes
    better (vLLM's H100 bf16 table: Nemotron-3 Nano's 1,856 and a 704-wide shape at TP 8-32, 768 at TP 32), carries
    the two factors; a call at such a width reads the form's efficiencies times them, an aligned width does not,
    and the report's words say so."""
    from dataclasses import replace

    f = _fit()
    assert f.misaligned and all(0 < x for x in f.misaligned)
    bare = replace(f, misaligned=())
    c, m = f.misaligned
    got, base = f.efficiencies(16, 4096, 232), bare.efficiencies(16, 4096, 232)
    assert got == pytest.approx((base[0] * c, base[1] * m))
    assert f.efficiencies(16, 4096, 256) == bare.efficiencies(16, 4096, 256)
    assert f.is_misaligned(232) and not f.is_misaligned(256) and not bare.is_misaligned(232)
    assert "expert width 232 a rank, not a multiple of 16" in f.misaligned_words(232)
    assert f.misaligned_words(256) == ""


def test_the_header_says_when_a_ranks_expert_width_is_not_a_multiple_of_16(capsys):
    """gpt-oss-20b's experts (2,880 wide) in 16 bits at TP 8 on the H100 under vLLM: 2,880 / 8 = 360 a rank, not a
    multiple of 16 (16 x 22.5), so the header names the width and the shipped form's factors; at TP 4, 720 = 16 x
    45, it does not; on the A100, whose vLLM preset borrows SGLang's A100 form, it names that form's."""
    from pathlib import Path

    from roofcalc.cli import main

    pytest.importorskip("torch")  # a traced model
    c, m = default_model("gpu", fits="h100_sxm", engine="vllm").moe_fits["bf16"].misaligned
    config = Path(__file__).resolve().parents[1] / "benchmarks" / "configs" / "gpt-oss-20b.json"
    args = [str(config), "--hw", "h100", "--engine", "vllm", "--weight-dtype", "bf16"]
    main(args + ["--tp", "8"])
    out = " ".join(capsys.readouterr().out.split())
    assert (f"expert width 360 a rank, not a multiple of 16: ×{m:.2f} the memory rate, ×{c:.2f} the compute rate "
            "of an aligned width") in out
    main(args + ["--tp", "4"])
    out = " ".join(capsys.readouterr().out.split())
    assert "routed experts: vLLM's fused MoE, fitted" in out and "not a multiple of 16" not in out
    # the A100's vLLM preset takes SGLang's A100 form (vLLM's A100 table holds no balanced rows), factors and all
    c, m = default_model("gpu", fits="a100_sxm", engine="vllm").moe_fits["bf16"].misaligned
    main([str(config), "--hw", "A100-80GB", "--engine", "vllm", "--weight-dtype", "bf16", "--tp", "8"])
    out = " ".join(capsys.readouterr().out.split())
    assert "routed experts: SGLang's fused MoE, fitted (the same Triton kernel" in out
    assert (f"expert width 360 a rank, not a multiple of 16: ×{m:.2f} the memory rate, ×{c:.2f} the compute rate "
            "of an aligned width") in out


def test_mxfp4_experts_are_padded_as_each_engines_kernel_stores_them():
    """fitting.mxfp4_padding, from the engines' code (fitting.MXFP4_PADDING names the files): vLLM's Marlin rounds
    I' up to 128 and H to 256, FlashInfer's TensorRT-LLM kernels both to 256, OpenAI's Triton kernels I' to 64;
    SGLang's FlashInfer kernels both to 256 and (SGLang 0.5.14, with the triton_kernels package) its Triton runner
    I' to 64; a kernel whose rule is not known here keeps the sizes. By hand: 360 = 64 x 5.625 -> 64 x 6 = 384; 90
    -> 128 (one 128); 180 -> 256 (two); 2,880 = 256 x 11.25 -> 256 x 12 = 3,072; 2,880 = 64 x 45 stays; 720 = 32 x
    22.5 -> 32 x 23 = 736, = 64 x 11.25 -> 64 x 12 = 768."""
    from roofcalc.fitting import mxfp4_padding, padded

    assert mxfp4_padding("vllm_gptossmxfp4moe_marlin_marlinexperts") == (128, 256)
    assert mxfp4_padding("vllm_gptossmxfp4moe_flashinfer_trtllm_mxfp4_bf16_trtllmmxfp4expertsmonolithic") == (256, 256)
    assert mxfp4_padding("vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic") == (64, 0)
    assert mxfp4_padding("sglang_flashinfer_trtllm_moe") == (256, 256)
    assert mxfp4_padding("sglang_fused_moe_triton") == (64, 0)
    assert mxfp4_padding("moe_torch_flow") == (0, 0)
    assert [padded(w, 64) for w in (360, 2880)] == [384, 2880]
    assert [padded(w, 128) for w in (90, 180)] == [128, 256]
    assert padded(2880, 256) == 3072 and padded(720, 32) == 736 and padded(720, 64) == 768 and padded(720, 0) == 720
    assert padded(np.array([90.0, 360.0]), 64).tolist() == [128.0, 384.0]


def test_a_padded_mxfp4_form_is_read_at_the_sizes_the_kernel_stores():
    """The H100's vLLM MXFP4 form (OpenAI's Triton kernels: I' to 64) was fitted at the padded widths; a call at
    gpt-oss's 360 a rank (TP 8) reads the form's curves at 384, at 2,880 (TP 1, 64 x 45) as is. The L40S's
    (Marlin: I' to 128, H to 256) reads 180 a rank at 256 and H 2,880 at 3,072. The words name what grew."""
    from dataclasses import replace

    f = _fit("h100_sxm", "mxfp4")
    assert f.pad == (64, 0) and f.pad_weight_bytes == 17 / 32
    bare = replace(f, pad=())
    assert f.efficiencies(2.0, 2880, 360) == pytest.approx(bare.efficiencies(2.0, 2880, 384))
    assert f.efficiencies(2.0, 2880, 2880) == pytest.approx(bare.efficiencies(2.0, 2880, 2880))
    assert f.padded_words(2880, 360) == "MXFP4 experts stored padded by the kernel: width 360 → 384 a rank"
    assert f.padded_words(2880, 2880) == "" and bare.padded_words(2880, 360) == ""
    assert f.padded_words(np.array([2880.0, 2880.0]), np.array([360.0, 360.0])).endswith("360 → 384 a rank")
    g = default_model("gpu", fits="l40s", engine="vllm").moe_fits["mxfp4"]
    assert g.pad == (128, 256)
    assert g.efficiencies(2.0, 2880, 180) == pytest.approx(replace(g, pad=()).efficiencies(2.0, 3072, 256))
    assert g.padded_words(2880, 180) == ("MXFP4 experts stored padded by the kernel: width 180 → 256 a rank, "
                                         "hidden 2,880 → 3,072")
    # a 16-bit form carries no padding, and its shares are 1
    assert not _fit("h100_sxm", "bf16").pad and _fit("h100_sxm", "bf16").padded_shares(2.0, 2880, 360, 4, 128) == \
        (1.0, 1.0)


@pytest.mark.parametrize("gpu, hidden, inter", [("h100_sxm", 2880, 360), ("l40s", 2880, 180), ("l40s", 2880, 90)])
@pytest.mark.parametrize("per_expert", [0.25, 4.0, 64.0, 1024.0])
def test_a_padded_call_takes_the_time_its_form_gives_the_stored_work(gpu, hidden, inter, per_expert):
    """A prediction counts the model's FLOPs and bytes (here fitting.moe_cost at the model's sizes, as the fit counts a
    call) over the form's efficiencies times padded_shares; that is the form's own time for the work the kernel
    runs at its stored sizes (moe_cost at the padded ones over the form's efficiencies there, as the fit was
    cross-validated), on both sides, at every load: few tokens an expert (the weights dominate the bytes) to 1,024
    (the activations, 2·H + 6·I' a row, outweigh them). gpt-oss's 128 experts, top 4, every one on the rank."""
    from dataclasses import replace

    from roofcalc.fitting import moe_cost, padded
    from roofcalc.predict import touched_on_rank

    f = default_model("gpu", fits=gpu, engine="vllm").moe_fits["mxfp4"]
    peak, bw = 989e12, 3.35e12  # any roof: the same on both sides of the equation
    touched = touched_on_rank(per_expert, 128, 128, 4)
    rows = per_expert * 128
    hp, ip = padded(hidden, f.pad[1]), padded(inter, f.pad[0])
    real = moe_cost(rows, touched, 128, hidden, inter, 17 / 32)
    stored = moe_cost(rows, touched, 128, hp, ip, 17 / 32)
    e_c, e_m = f.efficiencies(per_expert, hidden, inter, touched, 128)
    s_c, s_m = f.padded_shares(per_expert, hidden, inter, touched, 128)
    b_c, b_m = replace(f, pad=()).efficiencies(per_expert, hp, ip, touched, 128)
    assert float(real["flops"]) / (peak * e_c * s_c) == pytest.approx(float(stored["flops"]) / (peak * b_c))
    assert float(real["bytes"]) / (bw * e_m * s_m) == pytest.approx(float(stored["bytes"]) / (bw * b_m))
    assert s_c == pytest.approx(hidden * inter / (hp * ip))  # the FLOPs grow with H·I'
    assert s_c <= s_m < 1  # the activations grow less


def test_every_shipped_mxfp4_form_is_padded_as_its_tables_kernel():
    """The padding a shipped MXFP4 form carries (benchmarks/fit_kernels.py load_moe records it by the table's kernel
    source, benchmarks/ship_fits.py writes it) is fitting.mxfp4_padding's for that kernel source, with MXFP4's
    17/32 of a byte a weight; a form of a kernel that stores the sizes as they are carries none."""
    import json
    from importlib import resources

    from roofcalc.fitting import mxfp4_padding

    padded_forms = 0
    for name in ("kernel_fits.json", "kernel_fits_engines.json"):
        doc = json.loads(resources.files("roofcalc").joinpath("data", name).read_text())
        for gpu, d in doc["gpus"].items():
            for engine, forms in (d.items() if name == "kernel_fits_engines.json" else [("vllm", d)]):
                form = (forms.get("moe") or {}).get("mxfp4")
                if not form:
                    continue
                ip, hp = mxfp4_padding(form["source"]["kernel_source"])
                if ip or hp:
                    assert form["pad"] == {"inter": ip, "hidden": hp, "weight_bytes": 17 / 32}, (gpu, engine)
                    padded_forms += 1
                else:
                    assert "pad" not in form, (gpu, engine)
    # vLLM's H100, H200, B200, L40S and RTX PRO 6000 forms; SGLang's H100, H200, B200 and L40S ones
    assert padded_forms == 9


def test_the_fit_recovers_efficiencies_from_rows_run_at_padded_widths():
    """Rows made by hand from fitting.moe_cost at the widths a kernel pads to (gpt-oss's shape, H = I = 2,880, top 4
    of 128, at TP 1-32: I' 2,880, 1,440, 720, 360, 180, 90, stored at 128's multiples, 2,944, 1,536, 768, 384, 256,
    128, and H at 3,072), 1 to 16,384 tokens, at a compute efficiency of 0.5 and a memory efficiency of 0.7 and a
    fixed 20 us: counted at the padded sizes, as benchmarks/fit_kernels.py moe_rows counts them, the form
    (fitting.moe_design and fitting.fit) holds every row within 5 %; counted at the model's sizes it cannot (the
    90- and 180-wide rows do 1.52x the work their sizes say, 128 / 90 and 256 / 180 times 3,072 / 2,880, beside
    1.09-1.14x for the rest, a step no smooth factor in I' holds)."""
    from roofcalc.fitting import balanced_routing, evaluate, fit, moe_cost, moe_design, padded, rows_of

    peak, bw = 989e12, 3.35e12  # an H100 SXM's dense 16-bit peak and bandwidth (its datasheet)
    rows = []
    for tp in (1, 2, 4, 8, 16, 32):
        for tokens in (1, 4, 16, 64, 256, 1024, 4096, 16384):
            r, touched = balanced_routing(tokens, 128, 4, 1)
            rows.append((2880.0, 2880 / tp, r, touched, 128.0, tokens * 4.0))
    hidden, width, r, touched, experts, pairs = (np.array(c, float) for c in zip(*rows))
    hp, ip = padded(hidden, 256), padded(width, 128)
    cost = moe_cost(r, touched, experts, hp, ip, 17 / 32)
    ct, mt = cost["flops"] / peak, cost["bytes"] / bw
    t = 20e-6 + np.maximum(ct / 0.5, mt / 0.7)

    def worst(h, i):
        c = moe_cost(r, touched, experts, h, i, 17 / 32)
        R = dict(t=t, x=c["x"], hidden=h, inter=i, pairs=pairs, touched=touched)
        D = moe_design(R)
        M = D.mats()
        a, b = c["flops"] / peak, c["bytes"] / bw
        th = fit(rows_of(M, np.ones(len(t), bool)), a, b, pairs, t, D.prior, D.smooth)
        return float(np.abs(np.log(evaluate(th, M, a, b, pairs)[0] / t)).max())

    assert worst(hp, ip) < 0.05
    assert worst(hidden, width) > 0.10


def test_padded_shares_by_hand():
    """The L40S's vLLM MXFP4 form (Marlin: I' to 128, H to 256) for gpt-oss at TP 16 (180 a rank, stored 256 wide
    and 3,072 deep), 4 tokens an expert over 128 experts, top 4: 512 routed rows from 128 tokens, which reach
    128·(1 − (31/32)^128) = 125.80 experts. FLOPs share 180·2,880 / (256·3,072) = 518,400 / 786,432 = 0.65918.
    Bytes (fitting.moe_cost: touched·3·H·I'·17/32 + 2·rows·(2·H + 6·I')): the model's 125.80·826,200 +
    1,024·6,840 = 103.94 M + 7.00 M = 110.94 M; stored 125.80·1,253,376 + 1,024·7,680 = 157.68 M + 7.86 M =
    165.54 M; share 0.6702."""
    from roofcalc.predict import touched_on_rank

    g = default_model("gpu", fits="l40s", engine="vllm").moe_fits["mxfp4"]
    touched = touched_on_rank(4.0, 128, 128, 4)
    assert touched == pytest.approx(128 * (1 - (31 / 32) ** 128))
    s_c, s_m = g.padded_shares(4.0, 2880, 180, touched, 128)
    assert s_c == pytest.approx(0.65918, abs=1e-5)
    assert s_m == pytest.approx(0.6702, abs=1e-4)


def test_sglangs_mxfp4_triton_form_looks_its_tiles_up_at_the_stored_width():
    """SGLang's Triton runner on the H100 (its MXFP4 table's kernel) upcasts the experts to 16 bits, stored at a
    multiple of 64, and takes its tiles from the 16-bit configuration files by the stored width: gpt-oss at TP 8
    (360 a rank) is stored 384 wide, and SGLang 0.5.14 ships a tuned configuration for 128 experts of width 384
    on the H100 (benchmarks/sglang_moe_configs.json), none of width 2,880 (TP 1) or 128 (90 at TP 32, stored 128).
    So 360 reads as tuned and takes the form at 384 without the untuned factor; 2,880 takes the factor; 720 (TP 4)
    is stored 768 wide, tuned too."""
    import json
    from dataclasses import replace
    from pathlib import Path

    g = default_model("gpu", fits="h100_sxm", engine="sglang").moe_fits["mxfp4"]
    assert g.pad == (64, 0) and g.untuned
    listed = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "sglang_moe_configs.json").read_text())
    pairs = {tuple(p) for p in listed["versions"]["0.5.14"]["bf16"]["h100_sxm"]}
    assert (128, 384) in pairs and (128, 360) not in pairs and (128, 2880) not in pairs and (128, 128) not in pairs
    assert g.tuned == frozenset(pairs)
    assert g.is_tuned(128, 360) and not g.is_tuned(128, 2880)
    # TP 4: 720 a rank, stored 768 (64 x 12), which has tuned tiles on the H100; 736 (the multiple of 32) has none
    assert (128, 768) in pairs and (128, 736) not in pairs and g.is_tuned(128, 720)
    assert g.untuned_words(128, 90) == "no tuned configuration for 128 experts of width 128"
    bare = replace(g, pad=())
    assert g.efficiencies(64.0, 2880, 360, 100.0, 128) == pytest.approx(bare.efficiencies(64.0, 2880, 384, 100.0, 128))
    # read at 360 itself, the shape would be untuned: the factor (under 1 at 64 tokens an expert) would apply
    assert bare.efficiencies(64.0, 2880, 360, 100.0, 128)[0] < g.efficiencies(64.0, 2880, 360, 100.0, 128)[0]


# Qwen3-30B-A3B's routed experts (hidden 2,048, width 768, top 8 of 128) with fp8 weights in 128 x 128 blocks under
# TensorRT-LLM 1.3.0rc20 on the RTX PRO 6000 Server, balanced routing, one rank's call (moe_tp_size 1): AIConfigurator
# 0.12, systems/data/rtx_pro_6000_server/moe/trtllm/1.3.0rc20/moe_perf.parquet (kernel_source
# moe_torch_flow_triton_fp8_block), ms, by (tokens, moe_ep_size). At EP 8 a rank holds 16 experts and its own pairs
# are an eighth of T·8, yet 4,096 tokens take what they take at EP 1: the kernel runs every routed pair. Rows whose
# bytes reach DRAM, as a step's do (at EP 8 and 64 tokens a rank's 16 experts, 75 MB, and the pairs' activations
# stay in the 128 MiB L2: 0.070629 ms, read at L2's rate).
TRT_SM120_ROWS = {(1024, 1): 0.616656, (4096, 1): 1.782693, (1024, 8): 0.483419, (4096, 8): 1.817296}


@pytest.mark.parametrize("tokens, ep", sorted(TRT_SM120_ROWS))
def test_tensorrt_llms_sm120_fp8_block_moe_runs_every_pair_on_each_rank(tokens, ep):
    """TensorRT-LLM's fp8 block-scale MoE on SM120 clamps another rank's expert ids to the rank's own at a zero
    weight and runs every pair (fitting.EVERY_PAIR): the shipped form says so, and under --ep with attention split
    by heads (every rank holds all T tokens) the step model counts a rank's call at all T·8 pairs, ep times its own
    GEMM work (MoEFit.every_pair_work, the efficiencies read at T·8/16 tokens an expert), within ±30 % of the
    measured call (rows in the fit's sample: a check that the step model reads the form as the fit counted the
    rows; counted at the rank's own pairs, the EP 8 rows run 3.2x and 6.1x the prediction); the efficiency source
    says so. At EP 1 nothing changes."""
    from roofcalc.engines import ENGINES
    from roofcalc.parallel import Parallel, analyze_parallel

    trt = ENGINES["trtllm"]
    form = MoEFit.from_doc(kernel_fits_engines_form("rtx_pro_6000_server", "fp8_block"), "test")
    assert form.every_pair == (1.0, 128)
    b16, w = DTYPES["bf16"], DTYPES["fp8-b128"]
    wl = Workload.decode(tokens, 1024, weight_dtype=w, act_dtype=b16, kv_dtype=b16, cache_update="in-place")
    shape = load_shape("Qwen/Qwen3-30B-A3B")
    a = analyze(shape, wl) if ep == 1 else analyze_parallel(shape, wl, Parallel(ep=ep, ep_attention="tp"))
    r = roofline(a, find_hardware("RTX-PRO-6000"), impl=trt.impl, engine_host=trt.host)
    ks = [p for p in r.step.placements if p.kernel.name in FUSED]
    assert [p.kernel.name for p in ks] == list(FUSED) and ks[0].kernel.moe[:5] == ("fp8_block", 128 // ep,
                                                                                  "gate_up_proj", 128, 8)
    assert abs(TRT_SM120_ROWS[(tokens, ep)] * 1e-3 / sum(p.t_expected_s for p in ks) - 1) <= 0.30
    said = f"every routed pair on each of the {ep} ranks (another rank's at a zero weight): ×{ep} the rank's GEMM work"
    assert all((said in p.efficiency_source) == (ep > 1) for p in ks)
    x, f_c, f_m, read = form.every_pair_work(tokens * 8 / 128, 128 // ep, 128, 2048, 768, 3.0)
    assert (x, f_c) == ((tokens * 8 / 16, ep) if ep > 1 else (tokens * 8 / 128, 1.0))
    assert read == (5.0 if ep > 1 else 3.0) and (f_m > 1.0) == (ep > 1)  # a middle rank: its first and last too


def kernel_fits_engines_form(gpu: str, key: str) -> dict:
    from roofcalc.predict import engine_fits

    return engine_fits()["gpus"][gpu]["trtllm"]["moe"][key]


def test_balanced_routing_with_every_pair_by_hand():
    """AIConfigurator's balanced routing (fitting.balanced_routing): 1 token, 128 experts, top 8 on 8 ranks: s =
    ceil(128/8) = 16 and T < s, so the token picks floor(0 + 16j) = 0, 16, ..., 112: rank 0 (experts 0-15) gets one
    pair on one expert; a kernel that runs every pair (fitting.EVERY_PAIR) runs all 8, the other 7 clamped to
    expert 15: two experts read. 16 tokens (T = s): token i picks i + 16j, every expert once; rank 0 gets the 16
    pairs of j = 0 on experts 0-15, and every pair is 128 rows on the same 16."""
    from roofcalc.fitting import balanced_routing

    assert balanced_routing(1, 128, 8, 8) == (1, 1)
    assert balanced_routing(1, 128, 8, 8, every_pair=True) == (8, 2)
    assert balanced_routing(16, 128, 8, 8) == (16, 16)
    assert balanced_routing(16, 128, 8, 8, every_pair=True) == (128, 16)
    assert balanced_routing(16, 128, 8, 1, every_pair=True) == balanced_routing(16, 128, 8, 1) == (128, 128)


@pytest.mark.parametrize("hw, ep, said", [("RTX5090", 2, True), ("RTX5090", 1, False), ("RTX-PRO-6000", 2, False)])
def test_a_geforce_sm120_card_says_its_experts_gemm_forms_count_every_pair(capsys, hw, ep, said):
    """An RTX 5090 (compute capability 12.0) runs TensorRT-LLM's SM120 fp8 block-scale MoE, which runs every routed
    pair on each EP rank, but as a GeForce card it takes no fused MoE form, only the GEMM forms: under --ep they count
    every pair, and its header says so. Not at EP 1 (no other rank's pairs), and not on the RTX PRO 6000, whose fused
    form counts every pair (its words are the form's)."""
    from roofcalc.cli import main

    args = ["Qwen/Qwen3-30B-A3B", "--hw", hw, "--engine", "trtllm", "--weight-dtype", "fp8-b128", "--batch", "256"]
    assert main(args + (["--ep", str(ep), "--ep-attention", "tp"] if ep > 1 else [])) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("and the GEMM forms here count them: ×2 the rank's GEMM work" in out) == said
    if said:
        assert "under --ep 2 TensorRT-LLM's kernel for these experts runs every routed pair on each rank" in out
    if hw == "RTX-PRO-6000":
        assert ("every routed pair on each of the 2 ranks (another rank's at a zero weight): ×2 the rank's GEMM "
                "work") in out
        assert "the upper count" not in out  # attention split by heads: every rank holds all T tokens
        assert main(args + ["--ep", "2"]) == 0  # data-parallel attention (the default): an upper count, said so
        assert ("×2 the rank's GEMM work (the upper count: under data-parallel attention with an all-to-all a rank "
                "runs only the pairs of the tokens it receives)") in " ".join(capsys.readouterr().out.split())


def test_a_geforce_sm120_cards_experts_take_the_same_time_at_every_ep_size_where_compute_bound():
    """The RTX 5090's experts kernels under TensorRT-LLM's fp8 block-scale MoE at EP 2 and 4 (attention split by
    heads: every rank holds all 4,096 tokens): each rank runs all 4,096 x 8 pairs, as the RTX PRO 6000's measured
    rows do (26.2 ms at EP 1, 26.5 ms at EP 128 for 16,384 tokens: docs/validation.md), so where the GEMMs are
    compute-bound their time is EP 1's (the GEMM forms' compute side ep times the rank's own pairs; the
    efficiencies read at ep times the rows), where counted at the rank's own pairs it would be 1/ep of it; the
    activation kernel runs every pair's rows too: EP 1's bytes and time."""
    from roofcalc.engines import ENGINES
    from roofcalc.parallel import Parallel, analyze_parallel

    trt = ENGINES["trtllm"]
    b16, w = DTYPES["bf16"], DTYPES["fp8-b128"]
    shape = load_shape("Qwen/Qwen3-30B-A3B")
    hw = find_hardware("RTX5090")

    def gemms(tokens, ep):
        wl = Workload.decode(tokens, 1024, weight_dtype=w, act_dtype=b16, kv_dtype=b16, cache_update="in-place")
        a = analyze(shape, wl) if ep == 1 else analyze_parallel(shape, wl, Parallel(ep=ep, ep_attention="tp"))
        r = roofline(a, hw, impl=trt.impl, engine_host=trt.host)
        m = r.step.model
        assert m.gemm_memory_only and not m.moe_fits and m.every_pair_unfused == {"fp8_block": (1.0, 128)}
        ks = [p for p in r.step.placements if p.kernel.name in ("experts.gate_up_proj", "experts.down_proj")]
        act = next(p for p in r.step.placements if p.kernel.name == "experts.act_mul")
        assert len(ks) == 2 and all("×" in p.efficiency_source for p in ks) == (ep > 1)
        # the counted FLOPs are the rank's own pairs' (the floor), the time every pair's
        return sum(p.t_expected_s for p in ks), sum(p.t_compute_s for p in ks), {p.bound for p in ks}, act

    one, one_flops, bound, one_act = gemms(4096, 1)
    assert bound == {"compute"} and one_act.bound == "memory"
    for ep in (2, 4):
        t, flops, bound, act = gemms(4096, ep)
        assert bound == {"compute"} and abs(t / one - 1) < 0.05, (ep, t, one)
        assert flops * ep == pytest.approx(one_flops, rel=1e-9)  # the rank's own: 1/ep of the pairs
        # the activation (SiLU x up) over every pair's rows: EP 1's bytes, EP 1's time
        assert act.t_memory_s * ep == pytest.approx(one_act.t_memory_s, rel=1e-9)
        assert abs(act.t_expected_s / one_act.t_expected_s - 1) < 0.05, (ep, act.t_expected_s, one_act.t_expected_s)
    # vLLM's and SGLang's kernels on SM120 run the rank's own pairs: no such count under their presets
    wl = Workload.decode(4096, 1024, weight_dtype=w, act_dtype=b16, kv_dtype=b16, cache_update="in-place")
    a = analyze_parallel(shape, wl, Parallel(ep=2, ep_attention="tp"))
    for engine in ("vllm", "sglang"):
        r = roofline(a, hw, impl=ENGINES[engine].impl, engine_host=ENGINES[engine].host)
        assert r.step.model.every_pair_unfused == {}, engine


def test_int4_experts_take_marlins_fused_form_where_an_engine_runs_it(capsys):
    """Weight-only int4 experts run Marlin's MoE kernel under vLLM and SGLang (engines.Engine.marlin_moe), fitted
    on SGLang 0.5.10's tables of it (on the H100 and H200 its 0.5.14 tables hold Kimi-K2's shape alone:
    benchmarks/fit_kernels.py older_table_with_shapes), which vLLM's preset takes too on the A100, H100 and H200
    (its own tables hold Kimi-K2's shape alone there, none on the A100), marked as SGLang's; no GPU without such a
    table (B200: FlashInfer's TensorRT-LLM kernel under SGLang; L40S, RTX PRO 6000: one shape) ships one. The other
    presets (transformers, TensorRT-LLM), a GPU below the engine's least compute capability for Marlin (vLLM 7.5,
    SGLang 8.0) and a GGUF or bitsandbytes checkpoint's experts keep the GEMM forms."""
    from dataclasses import replace

    from roofcalc.cli import main
    from roofcalc.predict import engine_fits, marlin_moe

    gpus, engines = kernel_fits()["gpus"], engine_fits()["gpus"]
    for gpu in ("a100_sxm", "h100_sxm", "h200_sxm"):
        own = engines[gpu]["sglang"]["moe"]["int4"]
        assert own["source"]["kernel_source"] == "sglang_marlin_moe"
        assert own["source"]["version_folder"] == "0.5.10"
        borrowed = gpus[gpu]["moe"]["int4"]
        assert borrowed["tables"] == "sglang" and borrowed["fixed_s"] == own["fixed_s"]
        assert own["peak_ratio"] == 1.0  # W4A16: the 16-bit peak
    for gpu in ("h100_sxm", "h200_sxm"):
        assert engines[gpu]["sglang"]["moe"]["int4"]["source"]["current_version_one_shape"] == "0.5.14"
    for gpu in ("b200_sxm", "l40s", "rtx_pro_6000_server"):
        assert "int4" not in gpus[gpu]["moe"] and "int4" not in engines[gpu].get("sglang", {}).get("moe", {})

    from roofcalc.engines import find_engine

    b16, h200, mixtral = DTYPES["bf16"], find_hardware("H200"), load_shape("mistralai/Mixtral-8x7B-v0.1")

    def model(engine):
        kw = find_engine(engine).workload_kw() if engine else {}
        wl = Workload.decode(8, 1024, weight_dtype=DTYPES["int4"], act_dtype=b16, kv_dtype=b16, **kw)
        return roofline(analyze(mixtral, wl), h200, engine=engine).model

    assert model("vllm").moe_fits["int4"].tables == "sglang"
    assert "int4" in model("sglang").moe_fits and not model("sglang").moe_fits["int4"].tables
    for engine in (None, "trtllm"):
        assert "int4" not in model(engine).moe_fits
    m = model("vllm")
    assert "int4" in marlin_moe(m, m.engine_host, 7.5).moe_fits  # a T4's: vLLM's Turing Marlin (PR #29901)
    assert "int4" not in marlin_moe(m, m.engine_host, 7.0).moe_fits  # a V100's
    s = model("sglang")
    assert "int4" not in marlin_moe(s, s.engine_host, 7.5).moe_fits and "int4" in marlin_moe(s, s.engine_host, 8.0).moe_fits
    for other in ("", "GGUF", "bitsandbytes"):
        assert "int4" not in marlin_moe(m, replace(m.engine_host, marlin_moe=other), 9.0).moe_fits
    # the command line: a GGUF file's int4 experts run vLLM's GGUF kernels, not Marlin's; transformers runs none
    for args, how in ((["--engine", "vllm", "--weight-dtype", "int4"], "routed experts: SGLang's fused MoE, fitted "
                       "(the same Marlin MoE kernel"),
                      (["--engine", "vllm", "--weight-dtype", "q4_0"], "routed experts: the GEMM forms, each kernel's "
                       "rows as one GEMM (a GGUF checkpoint's experts run the engine's own GGUF kernels"),
                      (["--weight-dtype", "int4"], "(int4 experts take Marlin's fused MoE form under --engine vllm "
                       "and sglang alone)"),
                      (["--engine", "sglang", "--weight-dtype", "int4", "--hw", "V100"], "Marlin's MoE, needs "
                       "compute capability 8.0")):
        hw = [] if "--hw" in args else ["--hw", "H200"]
        assert main(["mixtral-8x7b", *hw, *args]) == 0
        assert how in " ".join(capsys.readouterr().out.split())


# Kimi-K2's routed experts (H 7,168, I 2,048, top 8 of 384) in int4 (group 128) under vLLM 0.24 on the H200 at MoE
# TP 8, balanced routing: AIConfigurator 0.12, systems/data/h200_sxm/moe/vllm/0.24.0/moe_perf.parquet (moe_dtype
# int4_wo, kernel_source vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts), ms by tokens. The int4 form
# is fitted on SGLang 0.5.10's tables; vLLM's own did not enter the fit (benchmarks/fit_kernels.py unseen_tables).
KIMI_ROWS = {1: 0.040747, 8: 0.110549, 64: 0.466464}


@pytest.mark.parametrize("batch", sorted(KIMI_ROWS))
def test_kimi_k25_int4_experts_under_vllm_against_vllms_own_table(batch, tmp_path, capsys):
    """Kimi-K2.5's published config with its experts' group set to the table's 128, under --engine vllm on the H200
    at --tp 8: one layer's four fused kernels (the three experts kernels and the weighted sum) add up within ±30 %
    of vLLM's measured Marlin MoE call, a table the form was not fitted on. The table's routing is balanced: the
    T·8 routed pairs spread over min(384, 8·T) experts, 8 and 64 at T = 1 and 8 (the step model's uniform
    routing reads 384·(1 − (1 − 8/384)^T): 8.0 and 59.4) and all 384 at 64 tokens (512 pairs), which --experts all
    reads (uniform routing, 280.6: fewer weights read than the table's call)."""
    import json
    from pathlib import Path

    from roofcalc.cli import main

    cfg = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "configs" / "published" /
                      "moonshotai--Kimi-K2.5.json").read_text())
    cfg["text_config"]["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 128
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    every = ["--experts", "all"] if batch * 8 >= 384 else []
    assert main([str(path), "--engine", "vllm", "--hw", "H200", "--tp", "8", "--batch", str(batch), "--context",
                 "1024", "--format", "json", *every]) == 0
    doc = json.loads(capsys.readouterr().out)
    ks = {k["name"]: k for k in doc["kernels"]}
    assert ks["experts.gate_up_proj"]["efficiency_source"] != "default"
    layer = sum(ks[name]["t_expected_s"] for name in FUSED)
    assert abs(KIMI_ROWS[batch] * 1e-3 / layer - 1) <= 0.30


def test_the_header_names_the_fused_moe_kernel_the_tables_measured(capsys, tmp_path):
    """Each fitted fused-MoE form names the kernel its table measured (the kernel source's words,
    fitting.moe_kernel_name): vLLM's bf16 experts on the H100 its Triton kernel, its fp8 per-tensor ones FlashInfer's
    CUTLASS kernel (vLLM's pick for static activation scales, which the header says), SGLang's on the B200
    TensorRT-LLM's kernels in FlashInfer."""
    from roofcalc.cli import main

    mixtral = "mistralai/Mixtral-8x7B-v0.1"
    for flags, kernel in ((["--hw", "H100", "--engine", "vllm"], "the Triton fused MoE"),
                          (["--hw", "H100", "--engine", "vllm", "--weight-dtype", "fp8-t"], "FlashInfer's CUTLASS MoE"),
                          (["--hw", "B200", "--engine", "sglang"], "TensorRT-LLM's MoE kernels in FlashInfer")):
        assert main([mixtral, *flags]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert f"fused MoE, fitted ({kernel}, as its tables measured it" in out, flags
        # the per-tensor FP8 kernel is vLLM's pick for static activation scales alone (fitting.moe_kernel_scales:
        # its oracle runs Triton's kernel for dynamic ones)
        assert ("vLLM's pick for per-tensor FP8 experts with static activation scales" in out) == ("fp8-t" in flags)
    # a checkpoint whose quantization_config declares dynamic activation scales is told it runs the other kernel
    import json

    from roofcalc.sources import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**load_config(mixtral)[0],
                                "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}))
    assert main([str(path), "--hw", "H100", "--engine", "vllm"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "this checkpoint declares dynamic ones (its quantization_config's activation_scheme), for which vLLM runs " \
        "the Triton fused MoE, which this form does not describe" in out


def test_the_default_engine_names_the_fused_moe_form_a_stand_in(capsys):
    """Under transformers' generate (the default engine) the routed experts still take the fused-MoE form of the
    tables the defaults come from, and the report says that form stands in for transformers' own experts code;
    under vLLM, whose kernel the form is, it does not."""
    from roofcalc.cli import main

    for engine, said in (("hf", True), ("vllm", False)):
        assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--engine", engine]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert "routed experts: vLLM's fused MoE, fitted" in out
        assert ("a stand-in: transformers runs the experts as its own grouped matmuls" in out) is said
