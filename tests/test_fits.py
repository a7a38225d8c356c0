"""Which measured kernel tables a device's fixed costs come from (data/kernel_fits.json, AIConfigurator 0.12's
vLLM and NCCL tables): its own where it was measured, else the measured GPU of its generation by compute
capability (CUDA C++ Programming Guide: 7.0 Volta, 7.5 Turing, 8.0/8.6 Ampere, 8.9 Ada, 9.0 Hopper, 10.0 and
12.0 Blackwell: 12.0 the GB20x chips of the RTX PRO 6000 and the RTX 5090), else the five measured GPUs' medians;
the header says which. Collectives: a measured GPU's own; a GPU on PCIe without tables the PCIe box measured with
peer-to-peer or without it; an NVLink GPU without tables none (the default link model)."""

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
                                     (8.9, "Ada"), (9.0, "Hopper"), (10.0, "Blackwell"), (12.0, "Blackwell GB20x")])
def test_generation_by_compute_capability(cc, gen):
    assert generation(cc) == gen


@pytest.mark.parametrize("name, fits, how, links", [
    ("H100-SXM", "h100_sxm", "measured", "h100_sxm"), ("A100-80GB", "a100_sxm", "measured", "a100_sxm"),
    ("L40S", "l40s", "measured", "l40s"), ("RTX-PRO-6000", "rtx_pro_6000_server", "measured", "rtx_pro_6000_server"),
    # 8.6: Ampere; a datacenter card on PCIe: the peer-to-peer box's collectives, a GeForce card the host's
    ("A10G", "a100_sxm", "nearest", "rtx_pro_6000_server"), ("RTX3090", "a100_sxm", "nearest", "l40s"),
    ("L4", "l40s", "nearest", "rtx_pro_6000_server"), ("RTX4090", "l40s", "nearest", "l40s"),  # 8.9: Ada
    # 9.0 Hopper; 12.0 the GB20x chip the RTX PRO 6000 was measured with
    ("H100-PCIe", "h100_sxm", "nearest", "rtx_pro_6000_server"), ("RTX5090", "rtx_pro_6000_server", "nearest", "l40s"),
    # older than any measured: Ampere's; an NVLink GPU without tables: no measured box of its link
    ("T4", "a100_sxm", "nearest", "rtx_pro_6000_server"), ("V100-SXM2", "a100_sxm", "nearest", ""),
    ("MI300X", "", "", ""),  # no NVIDIA generation: the medians
])
def test_each_gpu_takes_its_own_or_its_generations_fixed_costs(name, fits, how, links):
    hw, m = _model(name)
    assert hw.fits == (fits, how)
    assert (m.fitted, m.fitted_how) == (fits, how)
    shipped = kernel_fits()["gpus"]
    for cls in ("gemm", "gemv", "attention", "attention_compute"):
        want = shipped[fits]["fixed_s"][cls] if fits else GPU_FIXED[cls].expected
        assert m.fixed_s[cls].expected == pytest.approx(want)
    # the collectives' fits: the measured GPU's own (NVLink inside its node, or its own PCIe box), the PCIe box of
    # a GPU on PCIe, none for another link
    assert m.links == links
    assert sorted(m.collectives) == (["all_gather", "all_reduce", "all_to_all"] if links else [])
    if links:
        assert m.collectives["all_reduce"][8][0] == shipped[links]["all_reduce"]["8"]["fixed_s"]


def test_nearest_fits_is_the_measured_gpu_of_the_generation():
    assert nearest_fits(8.7) == "a100_sxm" and nearest_fits(9.0) == "h100_sxm" and nearest_fits(6.1) == "a100_sxm"


@pytest.mark.parametrize("name, words", [
    ("H100-SXM", "GEMM and attention kernels and collectives fitted on H100-SXM's measured kernels, AIConfigurator "
                 "0.12 vLLM"),
    ("A10G", "GEMM and attention kernels as fitted on A100-SXM's, its generation's measured GPU (Ampere), on this "
             "device's datasheet roofs"),
    ("T4", "GEMM and attention kernels as fitted on A100-SXM's, the nearest measured generation (Ampere; no Turing "
           "GPU measured), on this device's datasheet roofs, AIConfigurator 0.12 vLLM"),
    ("RTX4090", "GEMM kernels' memory side and fixed cost (their compute side: the default efficiencies, a GeForce "
                "card's) and attention kernels as fitted on L40S's, its generation's measured GPU (Ada)"),
    # fp32 compute: the forms were fitted on 16- and 8-bit tables, so only the fixed costs are the H100's
    ("H100-SXM --dtype fp32", "kernels' fixed costs (GEMM and attention: the default efficiencies, as for any fp32 "
                              "step: the forms were measured in 16 and 8 bits) and collectives fitted on H100-SXM's"),
    ("MI300X", "fixed costs: the five measured GPUs' medians (no kernel tables for this device)"),
])
def test_the_header_says_where_the_fixed_costs_come_from(name, words, capsys):
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw", *name.split()]) == 0
    assert words in unwrap(capsys.readouterr().out)


def test_a_cpu_has_no_fixed_costs_and_says_nothing_of_them(capsys):
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw", "EPYC-9654"]) == 0
    assert "fixed costs" not in unwrap(capsys.readouterr().out)


# --------------------------------------------------------------------------- fitted GEMM and attention forms
# The step model reads each measured GPU's fitted forms (predict.GemmFit, predict.AttentionFit) from
# data/kernel_fits.json, written by benchmarks/ship_fits.py from the fit; benchmarks/shipped_fits.py runs every
# measured row through them (the same figures as the fit's). Here: the reading rules by hand, and measured rows.

import math  # noqa: E402
import json  # noqa: E402
from dataclasses import replace as dataclasses_replace  # noqa: E402

from roofcalc import Workload, analyze, load_shape  # noqa: E402
from roofcalc.predict import AttentionFit, GemmFit, default_model  # noqa: E402
from roofcalc.calculator import DTYPES  # noqa: E402
from roofcalc.roofline import roofline  # noqa: E402


def _form(gpu: str, dtype: str = "bf16") -> GemmFit:
    return GemmFit.from_doc(kernel_fits()["gpus"][gpu]["gemm"][dtype], "test")


def test_a_gemm_form_reads_its_knots_geometrically_and_pads_m_to_its_tile():
    from dataclasses import replace

    shipped = _form("h100_sxm")
    assert shipped.tile in (1, 64, 128, 256)  # fit_kernels' TILES["gemm"]: the one the fit chose
    f = replace(shipped, tile=64)  # the reading rules at a tile of 64 rows
    ec = dict(f.e_compute)
    em = dict(f.e_memory)
    # at a knot, N = K = 4096 (the factors' reference, 1): the knot's own values
    assert f.efficiencies(16, 4096, 4096) == pytest.approx((ec[16.0], em[16.0]))
    # M = 32 lies halfway between the knots 16 and 64 in log2: the geometric mean; 32 <= tile: no padding
    assert f.efficiencies(32, 4096, 4096) == pytest.approx((math.sqrt(ec[16.0] * ec[64.0]),
                                                              math.sqrt(em[16.0] * em[64.0])))
    # M = 100 > 64 rows is padded to 128 (two tiles of 64): the compute side does 128/100 of the work
    e100 = math.exp(math.log(ec[64.0]) + (math.log(ec[256.0]) - math.log(ec[64.0])) * (math.log2(100) - 6) / 2)
    assert f.efficiencies(100, 4096, 4096)[0] == pytest.approx(e100 * 100 / 128)
    # N = 2048 halfway between the N knots 1024 and 4096 (factor 1): the square root of the 1024 knot's factor
    n1024 = dict(f.n_compute)[1024.0]
    assert f.efficiencies(16, 2048, 4096)[0] == pytest.approx(ec[16.0] * math.sqrt(n1024))
    # beyond the last knot: flat
    assert f.efficiencies(1 << 20, 4096, 4096) == pytest.approx(f.efficiencies(32768, 4096, 4096))


def test_a_decode_attention_form_reads_its_kv_in_tiles():
    d = kernel_fits()["gpus"]["h100_sxm"]["attention"]["decode_bf16kv"]
    f = AttentionFit.from_doc(d, "test")
    assert (f.kind, f.tile, f.per_head) == ("decode", 64, False)
    em = dict(f.e_memory)
    items = dict(f.items_mem)
    # batch 1 of 8 KV heads (8 work items: a knot), 32 query heads of 128 (the head dim's factor 1), 1024 keys
    # (a knot; 16 tiles of 64, no padding): the knots' own values, the compute side the class's one e_compute
    c, m, series = f.terms((1, 32, 8, 1, 1024, 128, 0, 2.0))
    assert m == pytest.approx(em[1024.0] * items[8.0])
    assert c == pytest.approx(d["e_compute"][0][1])
    assert series == pytest.approx(8 * d["item_s"])
    # 1000 keys are read as 1024 (16 tiles of 64): the same time for 1000/1024 of the bytes and FLOPs
    c2, m2, _ = f.terms((1, 32, 8, 1, 1000, 128, 0, 2.0))
    assert m2 == pytest.approx(m * 1000 / 1024) and c2 == pytest.approx(c * 1000 / 1024)


def test_a_windowed_decode_that_reads_per_query_head_counts_its_heads():
    """A windowed decode form fitted with per_head (FlashAttention-2 without GQA packing under a window) reads
    its KV once per query head: 32 query heads over 8 KV heads read 4x the KV bytes a packed kernel reads, so
    the memory side's share of the kernel's own (packed) bytes is a quarter, and there are 32 work items; the
    form's GQA factor at a ratio of 4 (a knot) multiplies it."""
    d = dict(kernel_fits()["gpus"]["h100_sxm"]["attention"]["decode_swa_bf16kv"], per_head=True)
    f = AttentionFit.from_doc(d, "test")
    em, items = dict(f.e_memory), dict(f.items_mem)
    ratio = dict(f.hd_mem).get(128, 1.0)  # 1: the reference head dim
    _, m, series = f.terms((1, 32, 8, 1, 1024, 128, 4096, 2.0))
    # 32 work items: between the knots 8 and 64 (log2 5 of 3..6: two thirds of the way), geometrically
    between = math.exp(math.log(items[8.0]) + (math.log(items[64.0]) - math.log(items[8.0])) * 2 / 3)
    gqa = dict(f.gqa_mem)[4.0]  # every windowed form has a GQA factor
    assert m == pytest.approx(em[1024.0] * between * ratio * gqa / 4)
    assert series == pytest.approx(32 * d["item_s"])


def test_a_windowed_decode_with_a_work_item_a_query_head_reads_its_kv_once_a_kv_head():
    """A windowed decode form fitted with items_per_head (FlashAttention-2 under a window: no GQA packing, so a
    work item a query head, the group's KV read once from DRAM and shared through L2) runs 32 work items for 32
    query heads over 8 KV heads, as per_head does, but its memory side is the packed kernel's bytes at the work
    items' factor: no quarter. Without a window the same form runs 8 work items (a KV head each)."""
    d = dict(kernel_fits()["gpus"]["h100_sxm"]["attention"]["decode_swa_bf16kv"], per_head=False,
             items_per_head=True)
    f = AttentionFit.from_doc(d, "test")
    em, items = dict(f.e_memory), dict(f.items_mem)
    _, m, series = f.terms((1, 32, 8, 1, 1024, 128, 4096, 2.0))
    between = math.exp(math.log(items[8.0]) + (math.log(items[64.0]) - math.log(items[8.0])) * 2 / 3)
    assert m == pytest.approx(em[1024.0] * between * dict(f.gqa_mem)[4.0])
    assert series == pytest.approx(32 * d["item_s"])
    _, m0, series0 = f.terms((1, 32, 8, 1, 1024, 128, 0, 2.0))
    assert series0 == pytest.approx(8 * d["item_s"]) and m0 == pytest.approx(em[1024.0] * items[8.0]
                                                                              * dict(f.gqa_mem)[4.0])


def test_l2_misses_by_hand():
    """The share of a second read that misses L2 when x = sweep / L2 of the data passes between the two reads: none
    while the pass fits (x <= 1). "keeps" (L2 keeps L2's worth of the pass): 1 - 1/x, so 1/3 at x = 1.5 and 1/2 at
    x = 2. "random" (random replacement): m with 1 - m = exp(-x m); at x = 1.5, m = 0.58281 (exp(-0.874217) =
    0.417188 = 1 - 0.582812), at x = 2, m = 0.79681 (exp(-1.59362) = 0.203188 = 1 - 0.796812). Numbers and
    arrays alike."""
    import numpy as np

    from roofcalc.fitting import l2_misses
    from roofcalc.predict import _l2_misses

    assert _l2_misses(96.0, 96.0) == 0.0 and _l2_misses(50.0, 96.0, "random") == 0.0
    assert _l2_misses(144.0, 96.0) == pytest.approx(1 / 3) and _l2_misses(192.0, 96.0) == pytest.approx(0.5)
    assert _l2_misses(144.0, 96.0, "random") == pytest.approx(0.582812, abs=1e-6)
    assert _l2_misses(192.0, 96.0, "random") == pytest.approx(0.796812, abs=1e-6)
    for x in (1.01, 1.5, 3.0, 10.0):  # the defining equation itself
        m = _l2_misses(x, 1.0, "random")
        assert 0 < m < 1 and 1 - m == pytest.approx(math.exp(-x * m), abs=1e-12)
    sweeps = np.array([50.0, 96.0, 144.0, 192.0])
    for policy in ("keeps", "random"):
        assert l2_misses(sweeps, 96.0, policy) == pytest.approx([_l2_misses(float(s), 96.0, policy) for s in sweeps])
    with pytest.raises(ValueError):
        _l2_misses(144.0, 96.0, "lru")


def test_the_fits_decode_cost_rereads_what_l2_no_longer_holds():
    """fitting.decode_cost under FlashAttention-2's windowed grid (per_head "l2" / "l2-random"): 2 sequences, 32
    query heads over 8 KV heads of 128, 1,024 keys of 16-bit KV, a window of 4,096. One query head's pass over the
    batch is 2·1024·128·2·2 = 1,048,576 bytes. With an L2 of two thirds of it (x = 1.5), "l2" misses a third, so
    the 24 other query heads add 8 counted heads: 16 heads' KV, 2·2·16·1024·128·2 = 16,777,216 bytes (+ q and out
    32,768, + the new K and V 8,192); "l2-random" misses 0.582812 (test_l2_misses_by_hand): 8 + 24·0.582812 =
    21.98749 heads. With an L2 that holds the pass, both are the "items" count: the KV once a KV head."""
    from roofcalc.fitting import decode_cost

    args = (2, 32, 8, 1024, 128, 2.0, 4096, 1)
    items = decode_cost(*args, "items")
    keeps = decode_cost(*args, "l2", l2=1_048_576 / 1.5)
    random = decode_cost(*args, "l2-random", l2=1_048_576 / 1.5)
    assert (keeps["items"], keeps["bytes"]) == (64, pytest.approx(16_777_216 + 32_768 + 8_192))
    assert random["bytes"] == pytest.approx(2 * 2 * 21.98749 * 1024 * 128 * 2 + 32_768 + 8_192, rel=1e-6)
    for mode in ("l2", "l2-random"):
        assert decode_cost(*args, mode, l2=1_048_576)["bytes"] == items["bytes"]
        assert decode_cost(2, 32, 8, 1024, 128, 2.0, 0, 1, mode, l2=1.0)["items"] == 16  # no window: packed


def test_a_windowed_decode_form_rereads_what_l2_no_longer_holds():
    """A windowed FlashAttention-2 form with l2_reread: one sequence of 32 query heads over 8 KV heads, 1,024 keys
    of head dim 128 in 16 bits, a window of 4,096. One query head's pass is 1·1024·128·2·2 = 524,288 bytes; with an
    L2 of half that ("keeps": misses 1/2) the 24 other query heads read 12 heads' more, 20 where 8 are counted, so
    the memory side is the items form's times 8/20; with an L2 that holds the pass it is the items form's. The
    fitting's document carries the L2 it was fitted with."""
    from roofcalc.fitting import attention_doc

    base = dict(kernel_fits()["gpus"]["h100_sxm"]["attention"]["decode_swa_bf16kv"], per_head=False,
                items_per_head=True)
    attn = (1, 32, 8, 1, 1024, 128, 4096, 2.0)
    _, m_items, s_items = AttentionFit.from_doc(base, "test").terms(attn)
    half = AttentionFit.from_doc({**base, "l2_reread": {"l2_bytes": 262_144.0, "policy": "keeps"}}, "test")
    _, m, series = half.terms(attn)
    assert m == pytest.approx(m_items * 8 / 20) and series == pytest.approx(s_items)
    held = AttentionFit.from_doc({**base, "l2_reread": {"l2_bytes": 524_288.0, "policy": "random"}}, "test")
    assert held.terms(attn)[1] == pytest.approx(m_items)
    params = {"fixed_s": 1e-5, "e_compute": 0.3, "e_memory": {1.0: 0.8}}
    doc = attention_doc(params, "decode", [16, "l2-random"], l2=96e6)
    assert doc["items_per_head"] and doc["l2_reread"] == {"l2_bytes": 96e6, "policy": "random"}
    with pytest.raises(ValueError):
        attention_doc(params, "decode", [16, "l2"])


def test_the_shipped_windowed_forms_reread_as_the_fit_counted():
    """The shipped FlashAttention-2 windowed forms carry the L2 they were fitted with, and the step model's memory
    side moves with the reread exactly as fitting.decode_cost's KV bytes do: a form's memory efficiency with
    l2_reread over the same form without it is the KV bytes without over with (g / (g + (h - g)·misses)), for
    300 sequences of 32 query heads over 8 KV heads, 1,000 keys (tiled), head dim 128. In 16 bits one head's
    pass is 300·L_t·128·2·2 bytes, about 155 MB at L_t = 1,008: past the L40S's 96 MiB, so the heads reread; in 8
    bits (77 MB) it fits and nothing changes. An array of batches reads element by element as numbers."""
    import dataclasses

    import numpy as np

    from roofcalc.fitting import decode_cost

    for gpu, l2, policy in (("l40s", 96 * 2**20, "random"), ("rtx_pro_6000_server", 128 * 2**20, "keeps")):
        f = AttentionFit.from_doc(kernel_fits()["gpus"][gpu]["attention"]["decode_swa_bf16kv"], "test")
        assert f.l2_reread == (l2, policy) and f.items_per_head
        plain = dataclasses.replace(f, l2_reread=())
        mode = {"random": "l2-random", "keeps": "l2"}[policy]
        for b, e in ((300, 2.0), (300, 1.0), (2048, 2.0)):
            attn = (b, 32, 8, 1, 1000, 128, 4096, e)
            kv = [decode_cost(b, 32, 8, 1000, 128, e, 4096, f.tile, m, l2=l2)["bytes"] - 2 * b * 32 * 128 * 2
                  - 2 * b * 8 * 128 * e for m in ("items", mode)]
            assert f.terms(attn)[1] / plain.terms(attn)[1] == pytest.approx(kv[0] / kv[1], rel=1e-9)
            assert (kv[1] > kv[0]) == (b * f.tile * math.ceil(1000 / f.tile) * 128 * 2 * e > l2)
        batches = np.array([[300.0, 2048.0]])
        m = f.terms((batches, 32, 8, 1, 1000, 128, 4096, 2.0))[1]
        assert m.shape == (1, 2) and list(m[0]) == pytest.approx([f.terms((300, 32, 8, 1, 1000, 128, 4096, 2.0))[1],
                                                                  f.terms((2048, 32, 8, 1, 1000, 128, 4096, 2.0))[1]])


def test_a_profiles_l2_reread_must_be_one_the_step_model_takes():
    """A form whose l2_reread names another policy, no L2 size or no per-query-head work items is refused as a
    form (ValueError, which a profile's reader turns into its one-line error)."""
    base = dict(kernel_fits()["gpus"]["l40s"]["attention"]["decode_swa_bf16kv"])
    for bad in ({"l2_bytes": 96e6, "policy": "lru"}, {"l2_bytes": 0.0, "policy": "keeps"},
                {"l2_bytes": float("nan"), "policy": "random"}):
        with pytest.raises(ValueError):
            AttentionFit.from_doc({**base, "l2_reread": bad}, "test")
    with pytest.raises(ValueError):
        AttentionFit.from_doc({**base, "items_per_head": False}, "test")


def test_a_gpu_taking_another_gpus_windowed_form_rereads_at_its_own_l2(capsys, tmp_path):
    """An RTX 4090 (72 MiB of L2, the catalog's) takes the L40S's windowed FlashAttention-2 form by its generation
    and rereads at its own L2: 128 sequences of 32 query heads over 8 KV heads, 1,024 keys, head dim 128, 16-bit
    KV pass over 128·1024·128·2·2 = 67,108,864 bytes, inside both L2s (x = 0.889 on the 4090): no reread; at 160
    sequences (83,886,080 bytes: x = 1.111 on the 4090, 0.833 on the L40S) the 4090's form rereads and the
    L40S's does not. A GPU the catalog gives no L2 (an RTX 6000 Ada) keeps the L40S's; a hardware
    file's l2_bytes must be a positive number."""
    from roofcalc.predict import _l2_misses

    models = {}
    for name in ("RTX4090", "L40S", "RTX-6000-Ada"):
        hw = find_hardware(name)
        models[name] = kernel_model(hw, Roof(hw.bandwidth_bytes_per_s, hw.peak("bf16")), None, compute_dtype="bf16")
    swa = {k: m.attention_fits["decode_swa_bf16kv"] for k, m in models.items()}
    assert swa["RTX4090"].l2_reread == (72 * 2**20, "random") and swa["L40S"].l2_reread == (96 * 2**20, "random")
    assert swa["RTX-6000-Ada"].l2_reread == (96 * 2**20, "random")
    lt = swa["L40S"].tile * math.ceil(1024 / swa["L40S"].tile)
    for b in (128, 160):
        attn = (b, 32, 8, 1, 1024, 128, 4096, 2.0)
        m4090 = swa["RTX4090"].terms(attn)[1]
        plain = dataclasses_replace(swa["RTX4090"], l2_reread=()).terms(attn)[1]
        misses = _l2_misses(b * lt * 128 * 4, 72 * 2**20, "random")
        assert m4090 == pytest.approx(plain * 8 / (8 + 24 * misses)) and (misses > 0) == (b == 160)
        l40s_plain = dataclasses_replace(swa["L40S"], l2_reread=())
        assert swa["L40S"].terms(attn)[1] == pytest.approx(l40s_plain.terms(attn)[1])
    # the words the kernel's efficiency source takes: x = 83,886,080 / 75,497,472 (80 MiB over 72) = 1.11111,
    # m = 0.19310 (1 - m = 0.80690 = exp(-1.11111 m)), 19 %
    assert swa["RTX4090"].reread_words((160, 32, 8, 1, 1024, 128, 4096, 2.0)) == (
        "FlashAttention-2 under a window: a query head's pass over the batch, 80 MiB, passes L2 (72 MiB): the "
        "group's 24 other query heads reread 19% of it")
    assert swa["RTX4090"].reread_words((128, 32, 8, 1, 1024, 128, 4096, 2.0)) == ""
    assert swa["RTX4090"].reread_words((160, 32, 8, 1, 1024, 128, 0, 2.0)) == ""  # no window: packed
    from roofcalc.hardware import hardware_catalog

    sized = [h for h in hardware_catalog() if h.l2_bytes]  # each L2 as its source labels it, its MB read as MiB
    assert {h.name for h in sized} == {"L4", "RTX4080", "RTX4090", "RTX5090"}
    assert all(h.l2.startswith(f"{h.l2_bytes / 2**20:g} MB") for h in sized)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x", "bandwidth_bytes_per_s": 3e11, "peak_flop_per_s": {"fp16": 6e13},
                               "compute_capability": 8.9, "l2_bytes": -1}))
    code = main(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "l2_bytes" in err and len(err.strip().splitlines()) == 1


def test_tensorrt_llms_tile_is_xqas_alone():
    """TensorRT-LLM's decode tile applies to the rows its XQA kernel runs (fitting.xqa_rows), not to an MHA call
    nor to its fallback kernel's. fitting.decode_cost, 4 sequences of 100 keys, head dim 128, 16-bit KV, a tile
    of 64: a GQA row (32 query heads over 8 KV heads) reads L_t = 128 keys, 2·4·8·128·128·2 = 2,097,152 bytes of
    KV; untiled (the fallback's), 100 keys, 1,638,400. predict.AttentionFit.tile_xqa reads a call the same way:
    an XQA call as the tiled form, an MHA call and a call of 64 query heads a KV head (past XQA's 32: the
    fallback) as the untiled one; a GPU's rule (SMs 132, largest group 32, heuristic) as the H100's."""
    import numpy as np

    from roofcalc.fitting import decode_cost, xqa_rows

    args = (4, 32, 8, 100, 128, 2.0, 0, 64, False)
    write_qo = 2 * 4 * 32 * 128 * 2 + 2 * 4 * 8 * 128 * 2
    assert decode_cost(*args, tiled=np.array(True))["bytes"] == 2_097_152 + write_qo
    assert decode_cost(*args, tiled=np.array(False))["bytes"] == 1_638_400 + write_qo
    rule = dict(sms=132, max_group=32, heuristic=True)
    assert list(xqa_rows([32, 8, 64, 32], [8, 8, 1, 8], [64, 64, 64, 1], [1000, 1000, 1000, 100], **rule)) == \
        [True, False, False, False]  # GQA; MHA; a group of 64; too little work (4·8·1·max(100/128, 1) < 132)
    base = dict(kernel_fits()["gpus"]["h100_sxm"]["attention"]["decode_bf16kv"], tile=64)
    tiled, untiled = AttentionFit.from_doc(base, "t"), AttentionFit.from_doc({**base, "tile": 1}, "t")
    xqa = AttentionFit.from_doc({**base, "tile_xqa": rule}, "t")
    for attn, like in (((64, 32, 8, 1, 1000, 128, 0, 2.0), tiled), ((64, 8, 8, 1, 1000, 128, 0, 2.0), untiled),
                       ((64, 64, 1, 1, 1000, 128, 0, 2.0), untiled)):
        assert xqa.terms(attn)[:2] == pytest.approx(like.terms(attn)[:2])
    # the heuristic: one sequence of 100 keys is too little work for XQA (4·8·1·1 = 32 < 132 SMs), untiled; 64
    # sequences (2,048) run on XQA, tiled to 128 keys; a sweep of both reads element by element
    one, many = (xqa.terms((b, 32, 8, 1, 100.0, 128, 0, 2.0))[1] for b in (1, 64))
    assert one == pytest.approx(untiled.terms((1, 32, 8, 1, 100.0, 128, 0, 2.0))[1])
    assert many == pytest.approx(tiled.terms((64, 32, 8, 1, 100.0, 128, 0, 2.0))[1])
    assert list(xqa.terms((np.array([[1.0, 64.0]]), 32, 8, 1, 100.0, 128, 0, 2.0))[1][0]) == pytest.approx([one, many])
    with pytest.raises(ValueError):  # one dispatch, written twice, must agree
        AttentionFit.from_doc({**base, "tile_xqa": rule, "mmha": dict(rule, sms=142, factor_mem=[[2.0, 1.0]])}, "t")
    kv = np.array([[1000.0, 1024.0]])  # a sweep reads element by element
    assert xqa.terms((64, 32, 8, 1, kv, 128, 0, 2.0))[1][0] == pytest.approx(
        [xqa.terms((64, 32, 8, 1, 1000.0, 128, 0, 2.0))[1], xqa.terms((64, 32, 8, 1, 1024.0, 128, 0, 2.0))[1]])


def test_a_fitted_kernels_pessimistic_end_is_never_below_the_defaults():
    """The pessimistic work of a fitted GEMM is the slower of the fit at the classes' spread and the defaults'
    own pessimistic end: at M = 64 (a small GEMM) the defaults' CUTLASS reading (GEMM_ROWS_LOW) is slower."""
    from roofcalc.predict import GEMM_ROWS_LOW, GPU_DEFAULTS, kernel_terms

    m = default_model("gpu", fits="h100_sxm").for_compute("bf16")
    t_c, t_m = 1e-5, 1e-6  # compute-side floor 10 us, memory 1 us
    work, _, _ = kernel_terms(m, t_c, t_m, "matmul", 64, pessimistic=True, depth=4096, width=4096)
    e_fit = m.gemm_fit.efficiencies(64, 4096, 4096)[0] * GPU_DEFAULTS["gemm"].pessimistic / GPU_DEFAULTS["gemm"].expected
    e_default = GPU_DEFAULTS["gemm"].pessimistic * GEMM_ROWS_LOW[0][1]  # M = 64: the table's first row
    assert work == pytest.approx(max(t_c / e_fit, t_c / e_default)) and e_default < e_fit


def test_fitted_forms_move_onto_a_measured_roof_and_fp8_quantizes_its_input():
    """On a measured roof at half the datasheet bandwidth and peak a datasheet fraction e is 2e there (at most
    1); an fp8 GEMM adds 3·M·K bytes of input quantization at its fitted share of the bandwidth, read off the
    GEMM's own memory time: bytes M·K + N·K + 2·M·N (1-byte weights and inputs, 16-bit outputs)."""
    m = default_model("gpu", fits="h100_sxm")
    half = m.on_roof(0.5, 0.5).for_compute("bf16")
    base = m.for_compute("bf16")
    for (a, b) in zip(half.gemm_fit.efficiencies(16, 4096, 4096), base.gemm_fit.efficiencies(16, 4096, 4096)):
        assert a == pytest.approx(min(1.0, 2 * b))
    fp8 = m.for_compute("fp8").gemm_fit
    mm, n, k = 16, 4096, 4096
    t_m = (mm * k + n * k + 2 * mm * n) / 3.35e12
    assert fp8.quant_s(t_m, mm, n, k) == pytest.approx(3 * mm * k / 3.35e12 / fp8.e_quant)


def test_fp8_attention_shares_are_moved_onto_the_fp8_peak_and_fp32_takes_the_defaults():
    """The fitted attention's compute share is a fraction of the 16-bit peak; under fp8 compute the roof's peak
    is the fp8 one (the H100's 1978.9 over 989.4 TFLOP/s: 2.0001x), so the share there is half as large; a
    step computing in fp32 takes the defaults (the tables measured 16 bits and fp8)."""
    hw = find_hardware("H100-SXM")
    roof = Roof(hw.bandwidth_bytes_per_s, hw.peak("fp8"))
    fp8 = kernel_model(hw, roof, None, compute_dtype="fp8")
    b16 = kernel_model(hw, Roof(hw.bandwidth_bytes_per_s, hw.peak("bf16")), None, compute_dtype="bf16")
    attn = (1, 32, 8, 2048, 2048, 128, 0, 2.0)
    ratio = hw.peak("fp8") / hw.peak("bf16")
    assert fp8.attention_fits["prefill_bf16kv"].terms(attn)[0] == pytest.approx(
        b16.attention_fits["prefill_bf16kv"].terms(attn)[0] / ratio)
    f32 = kernel_model(hw, Roof(hw.bandwidth_bytes_per_s, hw.peak("fp32")), None, compute_dtype="fp32")
    assert f32.gemm_fit is None and not f32.attention_fits


def test_which_fitted_attention_class_a_call_takes():
    m = default_model("gpu", fits="h100_sxm")
    pick = lambda *attn: m.attention_fit(attn)  # noqa: E731
    fits = m.attention_fits
    assert pick(4, 32, 8, 1, 4096, 128, 0, 2.0) is fits["decode_bf16kv"]
    assert pick(4, 32, 8, 1, 4096, 128, 4096, 2.0) is fits["decode_swa_bf16kv"]
    assert pick(4, 32, 8, 1, 4096, 128, 0, 1.0) is fits["decode_fp8kv"]
    assert pick(1, 32, 8, 2048, 2048, 128, 0, 2.0) is fits["prefill_bf16kv"]
    assert pick(1, 32, 8, 16, 2048, 128, 0, 2.0) is None  # a chunk after a cached prefix: no table measures it
    assert pick(4, 128, 1, 1, 4096, 576, 0, 2.0) is None  # MLA's latent (576 wide): another kernel


def test_fp8_gemms_take_the_fp8_form_and_a_gpu_without_one_the_defaults():
    h100 = default_model("gpu", fits="h100_sxm")
    assert h100.for_compute("fp8").gemm_fit is h100.gemm_fits["fp8"]
    assert h100.for_compute("bf16").gemm_fit is h100.gemm_fits["bf16"]
    assert default_model("gpu", fits="a100_sxm").for_compute("fp8").gemm_fit is None  # Ampere: no fp8 tables


def test_geforce_cards_take_the_gemm_forms_memory_side_and_keep_their_compute_peak():
    """An RTX 4090 (AD102) takes the L40S's (AD102) fitted GEMM forms for a matmul's memory side and fixed cost,
    as fractions of its own datasheet bandwidth, and the attention forms; its compute side stays the GeForce default
    (CONSUMER_GEMM, 1.0 of its fp32-accumulate peak, times GEMM_ROWS' few-row factor), which the L40S's fitted
    compute side (measured against its own, full-rate peak) does not describe; it takes no fused MoE form.
    The oracle at every point: the compute side is the model's without fitted forms (the defaults, as before),
    the memory side the same forms' read as a GPU of the nearest kind reads them (gemm_memory_only off)."""
    import itertools
    from dataclasses import replace

    from roofcalc.engines import find_engine
    from roofcalc.predict import CONSUMER_GEMM, GEMM_ROWS, efficiencies, _interp_log

    hw, m = _model("RTX4090")
    _, l40s = _model("L40S")
    assert m.gemm_memory_only and not l40s.gemm_memory_only and m.attention_fits and not m.moe_fits
    assert m.gemm_fit.e_memory == l40s.gemm_fit.e_memory and m.gemm_fit.fixed_s == l40s.gemm_fit.fixed_s
    for rows in (1, 16, 4096):  # q_proj of Llama-2-7B: N = K = 4,096
        comp, mem = efficiencies(m, "matmul", rows, "", False, 33_554_432.0, 4096, (), 4096)
        l_comp, l_mem = efficiencies(l40s, "matmul", rows, "", False, 33_554_432.0, 4096, (), 4096)
        assert mem == pytest.approx(l_mem, rel=1e-12)  # the same die's memory side
        assert comp == pytest.approx(CONSUMER_GEMM.expected * _interp_log(rows, GEMM_ROWS), rel=1e-12)
    assert comp == 1.0 and l_comp < 1.0  # M = 4,096: the 4090's own peak; the L40S's fit below its own
    points = 0
    for name, engine, compute in itertools.product(("RTX3090", "RTX4090", "RTX5090"), ("hf", "trtllm", "sglang"),
                                                   ("fp16", "fp8", "fp4")):
        hw = find_hardware(name)
        if compute not in hw.peak_flop_per_s:
            continue
        m = kernel_model(hw, Roof(hw.bandwidth_bytes_per_s, hw.peak(compute)), None, compute_dtype=compute,
                         engine_host=find_engine(engine).host)
        assert m.gemm_memory_only and m.gemm_fits and not any(k.endswith("_wo") for k in m.gemm_fits)
        nearest = replace(m, gemm_memory_only=False)
        for fmt, rows, slow in itertools.product(("", "float", "int8", "int4", "fp8-b128", "nvfp4"),
                                                 (1, 16, 256, 4096), (False, True)):
            args = ("matmul", rows, fmt, slow, 16_777_216.0, 4096, (), 4096)
            comp, mem = efficiencies(m, *args)
            assert comp == efficiencies(m.unfitted, *args)[0] and mem == efficiencies(nearest, *args)[1]
            points += 1
    assert points == (3 + 2 + 1) * 3 * 48  # fp16 on all three, fp8 on the 4090 and 5090, fp4 on the 5090; 3 engines


# Measured rows of AIConfigurator 0.12's H100 SXM vLLM 0.24.0 tables (gemm_perf.parquet: torch.nn.functional.linear,
# bf16; generation_attention_perf.parquet and context_attention_perf.parquet: vllm_flash_attn_fa3, bf16 KV, 32 query
# heads, 8 KV heads of 128, no window), latency in ms. Llama-3-8B has these shapes (hidden 4096, 32 heads, 8 KV
# heads). The rows are in the fit's sample; each must be within ±30 %, the per-kernel accuracy asked of the fits
# (docs/kernel_fits.md scores every class by its share of rows within ±30 %).
DECODE_ROWS = {"q_proj": 0.014767110347747803,  # m 64, n 4096, k 4096
               "k_proj": 0.00833422193924586,  # m 64, n 1024, k 4096
               "attention": 0.353573}  # batch 64, step 4095 (4096 keys), with the new token's cache write
PREFILL_ATTENTION = 0.089003  # batch 1, isl 2048, with the cache write


def _kernels(wl, impl):
    """Llama-3-8B's kernels on an H100 SXM: eager (each projection its own GEMM, as the table measures one) or
    under CUDA graphs (the cache write one kernel, as in the measured attention call)."""
    r = roofline(analyze(load_shape("meta-llama/Meta-Llama-3-8B"), wl), find_hardware("H100-SXM"), impl=impl)
    return {p.kernel.name: p for p in r.step.placements}



def test_an_mha_decode_takes_its_own_work_item_factor():
    """The A100's vLLM table holds GQA and MHA rows; a kernel that splits a GQA group's KV across blocks does not
    split an MHA head's, so the rows with as many KV heads as query heads take a second work-item factor."""
    d = kernel_fits()["gpus"]["a100_sxm"]["attention"]["decode_bf16kv"]
    f = AttentionFit.from_doc(d, "test")
    mha = dict(f.mha_items_mem)
    assert mha, "the A100's decode form has an MHA factor"
    # 8 work items (a knot) of 8 KV heads: MHA (8 query heads) against GQA (32 query heads) at the same bytes per
    # KV head; the GQA call's memory share holds no MHA factor, the MHA call's is the GQA one times the knot
    _, m_mha, _ = f.terms((1, 8, 8, 1, 1024, 128, 0, 2.0))
    _, m_gqa, _ = f.terms((1, 32, 8, 1, 1024, 128, 0, 2.0))
    assert m_mha == pytest.approx(min(1.0, m_gqa * mha[8.0]))


def test_a_windowed_decode_whose_context_passes_the_window_takes_the_window_factor():
    """The H100's windowed fp8-KV decode runs slower once the context passes its window than at the same keys
    inside it: the factor applies where the call's context (the 9th size) passes the window, not at the
    window itself, and a call without its context (8 sizes) is read as not passing it."""
    d = kernel_fits()["gpus"]["h100_sxm"]["attention"]["decode_swa_fp8kv"]
    f = AttentionFit.from_doc(d, "test")
    assert f.window_mem == d["window_factor_mem"] < 1
    inside = f.terms((8, 32, 8, 1, 4096, 128, 4096, 1.0, 4096))[1]
    past = f.terms((8, 32, 8, 1, 4096, 128, 4096, 1.0, 32768))[1]
    assert past == pytest.approx(inside * f.window_mem)
    assert f.terms((8, 32, 8, 1, 4096, 128, 4096, 1.0))[1] == pytest.approx(inside)


def test_the_step_model_reads_the_context_past_a_window():
    """A windowed model's decode past its window reads the same keys as at the window, and takes the window
    factor on a measured GPU (Mistral-7B v0.1, window 4,096: its config.json): the memory side of its time,
    less the fixed cost and the time per work item, over the window factor."""
    shape = load_shape("mistralai/Mistral-7B-v0.1")
    assert shape.sliding_window == 4096
    b16 = DTYPES["bf16"]
    kw = dict(weight_dtype=b16, act_dtype=b16, kv_dtype=b16, cache_update="in-place")
    d = kernel_fits()["gpus"]["h100_sxm"]["attention"]["decode_swa_bf16kv"]
    assert d["window_factor_mem"] < 1
    work = []
    for s in (4096, 8192):
        r = roofline(analyze(shape, Workload.decode(8, s, **kw)), find_hardware("H100-SXM"), impl="cuda-graph")
        p = {q.kernel.name: q for q in r.step.placements}["attention"]
        assert p.bound == "memory"
        work.append(p.t_expected_s - d["fixed_s"] - 8 * 8 * d["item_s"])  # 8 sequences x 8 KV heads
    assert work[1] == pytest.approx(work[0] / d["window_factor_mem"], rel=1e-6)
    # a sweep across the window reads each context as the single step does
    from roofcalc.sweep import sweep

    sw = sweep(shape, find_hardware("H100-SXM"), batches=[8], contexts=[4096, 4097], impl="cuda-graph", **kw).grid
    for j, s in enumerate((4096, 4097)):
        r = roofline(analyze(shape, Workload.decode(8, s, **kw)), find_hardware("H100-SXM"), impl="cuda-graph")
        assert sw.predicted_s[0, j] == pytest.approx(r.step.predicted_s, rel=1e-12)
    assert sw.predicted_s[0, 1] > sw.predicted_s[0, 0]


def test_the_step_model_predicts_measured_h100_kernels_within_30_percent():
    """Each kernel takes its fitted form (its time is the form's, by hand from GemmFit), and lands within ±30 %
    of the measured row (the per-kernel accuracy asked of the fits; these rows are in the fit's sample)."""
    b16 = DTYPES["bf16"]
    bf = dict(weight_dtype=b16, act_dtype=b16, kv_dtype=b16, cache_update="in-place")
    k = _kernels(Workload.decode(64, 4096, **bf), "hf-eager")
    fit = _form("h100_sxm")
    for name, n in (("q_proj", 4096), ("k_proj", 1024)):
        p = k[name]
        e_c, e_m = fit.efficiencies(64, n, 4096)
        assert p.t_expected_s == pytest.approx(fit.fixed_s + max(p.t_compute_s / e_c, p.t_memory_s / e_m))
        assert p.t_expected_s == pytest.approx(DECODE_ROWS[name] * 1e-3, rel=0.30)
    k = _kernels(Workload.decode(64, 4096, **bf), "cuda-graph")
    call = k["attention"].t_expected_s + k["kv_cache_write"].t_expected_s
    assert call == pytest.approx(DECODE_ROWS["attention"] * 1e-3, rel=0.30)
    k = _kernels(Workload.prefill(1, 2048, **bf), "cuda-graph")
    call = k["attention"].t_expected_s + k["kv_cache_write"].t_expected_s
    assert call == pytest.approx(PREFILL_ATTENTION * 1e-3, rel=0.30)


# --------------------------------------------------------------------------- fitted collectives
# A measured GPU's all-reduce, all-gather and all-to-all inside its node are fitted on AIConfigurator 0.12's NCCL
# table (nccl-tests' all_reduce_perf, all_gather_perf, alltoall_perf, fp16): fixed(ranks) + link bytes / (link
# x e_link(ranks, size)), the size nccl-tests' own (an all-gather's whole output, an all-to-all's per-rank buffer;
# predict.nccl_size). The knots below are data/kernel_fits.json's h100_sxm "all_gather" and "all_to_all".
H100_LINK = 450e9  # NVLink 4, one direction (hardware.json H100-SXM)


def test_an_h100_expert_parallel_step_takes_the_fitted_all_to_all():
    """Mixtral-8x7B bf16, --ep 8, decode at batch 64 on H100 SXM: the dispatch all-to-all's buffer is 8 tokens x
    top-2 x 4096 x 2 bytes = 131,072 (nccl-tests' size), 7/8 of it, 114,688 bytes, sent over NVLink. 131,072 =
    2^17 lies halfway (in log2) between the knots 65,536 (0.1623) and 262,144 (0.1033) of e_link_8: their
    geometric mean; plus the fitted fixed_s_8, 8.158 us. The pessimistic end: the defaults' link spread
    (LINK: 230/300 over 0.80), the fixed cost as fitted."""
    from roofcalc.parallel import Parallel, analyze_parallel
    from roofcalc.predict import LINK

    bf = {k: DTYPES["bf16"] for k in ("weight_dtype", "act_dtype", "kv_dtype")}
    r = roofline(analyze_parallel(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(64, 1000, **bf),
                                  Parallel(ep=8)), find_hardware("H100-SXM"), impl="cuda-graph").step
    (p,) = [p for p in r.placements if p.kernel.name == "experts.dispatch"]
    assert (p.kernel.role, p.kernel.group, p.kernel.message_bytes, p.kernel.link_bytes) == ("all_to_all", 8, 131_072,
                                                                                            114_688)
    assert p.hop == "link" and p.t_floor_s == pytest.approx(114_688 / H100_LINK)
    e = math.sqrt(0.1623 * 0.1033)
    assert p.t_expected_s == pytest.approx(114_688 / H100_LINK / e + 8.158e-6)
    from roofcalc.predict import kernel_terms

    t = p.term
    work, fixed, _ = kernel_terms(p.model, t.t_compute_s, t.t_memory_s, t.kind, t.rows, weight_bytes=t.size_bytes,
                                  pessimistic=True, hop=t.hop, collective=t.collective)
    assert work == pytest.approx(114_688 / H100_LINK / (e * LINK.pessimistic / LINK.expected))
    assert fixed == pytest.approx(8.158e-6)


def test_a_fitted_all_gather_reads_its_share_at_its_whole_output():
    """Llama-2-70B fp16, --tp 8, decode at batch 1 on H100 SXM: the logits' all-gather has a per-rank input of
    32,000 / 8 x 2 = 8,000 bytes and sends 7 x 8,000 = 56,000 of them (7/8 of the output). Its share of the link
    is read at the output, 8 x 8,000 = 64,000 bytes (nccl-tests' all-gather size), between the knots 16,384
    (0.2523) and 65,536 (0.1079) of e_link_8, log2(64,000) - 14 of the 2 between them; fixed_s_8 11.44 us."""
    from roofcalc.parallel import Parallel, analyze_parallel

    r = roofline(analyze_parallel(load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(1, 1000), Parallel(8)),
                 find_hardware("H100-SXM"), impl="cuda-graph").step
    (p,) = [p for p in r.placements if p.kernel.role == "all_gather"]
    assert (p.kernel.group, p.kernel.message_bytes, p.kernel.link_bytes) == (8, 8_000, 56_000)
    e = math.exp(math.log(0.2523) + (math.log(0.1079) - math.log(0.2523)) * (math.log2(64_000) - 14) / 2)
    assert p.t_expected_s == pytest.approx(56_000 / H100_LINK / e + 11.44e-6)


def test_a_fitted_collective_takes_the_nearest_measured_rank_count_and_only_inside_a_node():
    """The tables measure 2, 4 and 8 ranks: 3 ranks take the 4-rank fit (log2 3 = 1.585 lies nearer 2 than 1),
    6 the 8-rank one (2.585: nearer 3 than 2), 16 the 8-rank one; across nodes the network's default latency
    (46 us, NVIDIA/nccl #1244) and share of the link stay."""
    from roofcalc.predict import kernel_terms

    m = default_model("gpu", fits="h100_sxm")
    fixed = {(op, n): kernel_terms(m, 0.0, 1e-6, "collective", 1, weight_bytes=4096, hop="link",
                                   collective=(op, n))[1] for op in ("all_gather", "all_to_all") for n in (3, 6, 16)}
    assert fixed == pytest.approx({("all_gather", 3): 7.565e-6, ("all_gather", 6): 11.44e-6,
                                   ("all_gather", 16): 11.44e-6, ("all_to_all", 3): 7.041e-6,
                                   ("all_to_all", 6): 8.158e-6, ("all_to_all", 16): 8.158e-6})
    work, fix, _ = kernel_terms(m, 0.0, 1e-6, "collective", 1, weight_bytes=4096, hop="network",
                                collective=("all_to_all", 16))
    assert (work, fix) == pytest.approx((1e-6 / 0.80, 46e-6))


# Rows of AIConfigurator 0.12's H100 SXM NCCL table, aiconfigurator_core/systems/data/h100_sxm/comm/nccl/2.27.3/
# nccl_perf.parquet (fp16, "half"; message_size in elements of nccl-tests' size; latency in ms; each configuration
# measured twice, the fit takes their median). Both rows are in the fit's sample; the step model must land within
# ±30 % of them (the per-kernel accuracy asked of the fits).
#   alltoall,   num_gpus 8, message_size 65,536 (131,072 bytes a rank): latency 0.00991 and 0.00980
#   all_gather, num_gpus 8, message_size 131,072 (262,144 bytes of output, 32,768 a rank): 0.01355 and 0.01344
def test_the_step_model_predicts_measured_h100_collectives_within_30_percent():
    from roofcalc.parallel import Parallel, analyze_parallel, collective
    from roofcalc.roofline import Placement

    bf = {k: DTYPES["bf16"] for k in ("weight_dtype", "act_dtype", "kv_dtype")}
    r = roofline(analyze_parallel(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(64, 1000, **bf),
                                  Parallel(ep=8)), find_hardware("H100-SXM"), impl="cuda-graph").step
    (dispatch,) = [p for p in r.placements if p.kernel.name == "experts.dispatch"]  # 131,072 bytes, 8 ranks
    assert dispatch.kernel.message_bytes == 131_072
    assert dispatch.t_expected_s == pytest.approx((0.00991 + 0.00980) / 2 * 1e-3, rel=0.30)
    # an all-gather of 32,768 bytes a rank over 8 ranks, on the same step's roof and model
    gather = Placement(collective("gather", "all_gather", 32_768, 8, 1, "layer", "[16384]"), dispatch.roof, 1,
                       model=dispatch.model)
    assert gather.kernel.link_bytes == 7 * 32_768 and gather.hop == "link"
    assert gather.t_expected_s == pytest.approx((0.01355 + 0.01344) / 2 * 1e-3, rel=0.30)


# --------------------------------------------------------------------------- an engine's own all-reduce
# vLLM, SGLang and TensorRT-LLM reduce a tensor-parallel step's activations with their own all-reduce inside the
# decode step's CUDA graph, not with NCCL; AIConfigurator 0.12 measured each (comm/<engine>/<version>/
# custom_allreduce_perf.parquet, the graph rows, bf16), fitted in the all-reduce's form (data/kernel_fits.json
# "custom_all_reduce"; SGLang's and TensorRT-LLM's in kernel_fits_engines.json). h100_sxm's vLLM one at 8 ranks:
# fixed_s 4.819 us, e_link at 16,384 bytes 0.2058 (NCCL's: 16.12 us).
def test_an_engine_preset_reduces_with_its_own_all_reduce():
    """Llama-2-70B fp16, --tp 8, decode at batch 1 on H100 SXM under --engine vllm: o_proj's all-reduce reduces
    one token's 8,192 values, 16,384 bytes (a knot), sending 2 x 7/8 of them, 28,672 bytes, over NVLink. Under
    the default engine (transformers' eager TP: torch.distributed, NCCL) the NCCL fit's 8-rank fixed cost."""
    from roofcalc.engines import ENGINES
    from roofcalc.parallel import Parallel, analyze_parallel

    a = analyze_parallel(load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(1, 1000), Parallel(8))
    hw = find_hardware("H100-SXM")

    def reduce_of(**kw):
        step = roofline(a, hw, impl="cuda-graph", **kw).step
        (p,) = [p for p in step.placements if p.kernel.name == "o_proj.all_reduce"]
        return p

    p = reduce_of(engine_host=ENGINES["vllm"].host)
    assert (p.kernel.message_bytes, p.kernel.link_bytes, p.hop) == (16_384, 28_672, "link")
    assert p.t_expected_s == pytest.approx(4.819e-6 + 28_672 / H100_LINK / 0.2058)
    assert p.model.links == "h100_sxm" and p.model.collectives["all_reduce"][8][0] == 4.819e-6
    shipped = kernel_fits()["gpus"]["h100_sxm"]
    assert reduce_of().t_fixed_s == pytest.approx(shipped["all_reduce"]["8"]["fixed_s"])  # NCCL's: 16.12 us
    from roofcalc.predict import engine_fits

    trt = engine_fits()["gpus"]["h100_sxm"]["trtllm"]["custom_all_reduce"]["8"]["fixed_s"]
    assert reduce_of(engine_host=ENGINES["trtllm"].host).t_fixed_s == pytest.approx(trt)
    # the slow end: never below NCCL's, to which an engine falls back (NCCL's 8-rank fit: fixed 16.12 us, e_link
    # 0.2516 at 16,384 bytes), both at the defaults' link spread (LINK: 230/300 over 0.80)
    from roofcalc.predict import LINK, kernel_terms

    t = p.term
    work, fixed, _ = kernel_terms(p.model, t.t_compute_s, t.t_memory_s, t.kind, t.rows, weight_bytes=t.size_bytes,
                                  pessimistic=True, hop=t.hop, collective=t.collective)
    spread = LINK.pessimistic / LINK.expected
    assert (work, fixed) == pytest.approx((28_672 / H100_LINK / (0.2516 * spread), 16.12e-6))


# Rows of AIConfigurator 0.12's H100 SXM vLLM 0.24.0 custom all-reduce table (comm/vllm/0.24.0/
# custom_allreduce_perf.parquet, kernel_source vLLM_custom_graph, bfloat16, 8 GPUs; message_size in elements,
# latency in ms), in the fit's sample: 8,192 elements (16 KiB) 0.005310; 524,288 (1 MiB) 0.014968.
@pytest.mark.parametrize("elements, ms", [(8_192, 0.005310), (524_288, 0.014968)])
def test_the_step_model_predicts_measured_vllm_all_reduces_within_30_percent(elements, ms):
    from roofcalc.parallel import collective
    from roofcalc.predict import default_model
    from roofcalc.roofline import Placement

    m = default_model("gpu", fits="h100_sxm", engine="vllm")
    roof = Roof(3.35e12, 989.4e12, link_bytes_per_s=H100_LINK, gpus_per_node=8)
    p = Placement(collective("reduce", "all_reduce", 2 * elements, 8, 1, "layer", f"[{elements}]"), roof, 1, model=m)
    assert p.kernel.link_bytes == 2 * 7 * 2 * elements // 8
    assert p.t_expected_s == pytest.approx(ms * 1e-3, rel=0.30)


def test_a_pcie_gpu_without_tables_takes_the_pcie_box_of_its_kind():
    """An A100 PCIe (peer to peer between datacenter cards) takes the collectives of the RTX PRO 6000 Server box
    (peer to peer over PCIe), as shares of its own Gen4 link, 31.5 GB/s; an RTX 4090 (no peer-to-peer on GeForce
    cards) the L40S box's, through the host. Llama-2-7B fp16 --tp 2, decode at batch 1: o_proj's all-reduce of
    4,096 values, 8,192 bytes, sends 8,192 of them (2 x 1/2); 8,192 bytes lies halfway in log2 between the 2-rank
    knots 4,096 and 16,384, their geometric mean: RTX PRO 6000 (0.3596, 0.2688), fixed 6.334 us; L40S (0.4431,
    0.3898), fixed 6.228 us."""
    from roofcalc.parallel import Parallel, analyze_parallel

    a = analyze_parallel(load_shape("meta-llama/Llama-2-7b-hf"), Workload.decode(1, 1000), Parallel(2))
    for name, fixed, lo, hi in (("A100-80GB-PCIe", 6.334e-6, 0.3596, 0.2688), ("RTX4090", 6.228e-6, 0.4431, 0.3898)):
        step = roofline(a, find_hardware(name), impl="cuda-graph").step
        (p,) = [p for p in step.placements if p.kernel.name == "o_proj.all_reduce"]
        assert (p.kernel.message_bytes, p.kernel.link_bytes) == (8_192, 8_192)
        assert p.t_expected_s == pytest.approx(fixed + 8_192 / 31.5e9 / math.sqrt(lo * hi))


def test_the_rtx_pro_6000_is_measured_and_the_rtx_5090_takes_its_chip():
    """The RTX PRO 6000 Blackwell (GB202) is a measured GPU (AIConfigurator's rtx_pro_6000_server tables); its
    catalog peaks are derived from the datasheet's 4,000 AI TOPS, FP4 with 2:4 sparsity: dense FP4 2,000, FP8
    1,000, BF16 500 TFLOP/s (each half the one before; FP32 accumulate at full rate). The RTX 5090 (compute
    capability 12.0, the same GB202) takes its fits rather than the B200's (10.0)."""
    pro, g5090 = find_hardware("RTX-PRO-6000"), find_hardware("RTX5090")
    assert pro.fits == ("rtx_pro_6000_server", "measured") and pro.pcie_p2p is True
    assert pro.peak_flop_per_s["fp8"] == 4000e12 / 2 / 2 and pro.peak_flop_per_s["bf16"] == 4000e12 / 2 / 2 / 2
    roofs = kernel_fits()["gpus"]["rtx_pro_6000_server"]["roofs"]
    assert (roofs["bf16"], roofs["fp8"], roofs["bandwidth"]) == (500e12, 1000e12, 1792e9)  # the fit's own roofs
    assert g5090.compute_capability == pro.compute_capability == 12.0
    assert g5090.fits == ("rtx_pro_6000_server", "nearest") and g5090.pcie_p2p is False


def test_a_profile_says_which_pcie_box_and_a_measured_link_wins():
    """A --hw-file that says whether its box's cards reach each other peer to peer takes that PCIe box's
    collectives, whatever its catalog entry's default (an RTX 4090 box patched for peer-to-peer: the RTX PRO 6000
    box's); one that measured its own link (roofcalc measure --collectives: link_bytes_per_s, link_latency_s) takes
    that link and its smallest all-reduce, no measured box's fits."""
    from roofcalc.hardware import hardware_from_dict

    base = {"bandwidth_bytes_per_s": 1.0e12, "peak_flop_per_s": {"fp16": 1.6e14}, "nominal": "RTX4090"}
    hw = find_hardware("RTX4090")
    roof = Roof(1.0e12, 1.6e14)
    patched = hardware_from_dict({**base, "pcie_p2p": True}, "p2p.json")
    assert kernel_model(hw, roof, None, profile=patched).links == "rtx_pro_6000_server"
    assert kernel_model(hw, roof, None, profile=hardware_from_dict(base, "plain.json")).links == "l40s"
    # the L40S has a measured box of its own (through the host); one said to be peer to peer takes the other box
    l40s = find_hardware("L40S")
    assert kernel_model(l40s, roof, None).links == "l40s"
    assert kernel_model(l40s, roof, None, profile=patched).links == "rtx_pro_6000_server"
    assert kernel_model(l40s, roof, None, profile=hardware_from_dict({**base, "pcie_p2p": False}, "host.json")
                        ).links == "l40s"
    measured = hardware_from_dict({**base, "link_bytes_per_s": 20e9, "link_latency_s": 50e-6}, "link.json")
    m = kernel_model(hw, roof, None, profile=measured)
    assert m.collectives == {} and m.links == "" and m.latency["link"].expected == 50e-6


# Rows of AIConfigurator 0.12's A100 SXM TensorRT-LLM 1.0.0 GEMM table (gemm/trtllm/1.0.0/gemm_perf.parquet, the
# WeightOnlyQuantMatmul plugin; latency in ms), in the fit's sample: int4_wo m = 1, n = k = 4,096: 0.020480.
A100_TRT_INT4_M1 = 0.020480


def test_a_weight_only_matmul_takes_its_engines_measured_form():
    """Llama-2-7B with int4 weights (group 128), decode at batch 1 on an A100 SXM: under --engine trtllm o_proj
    (m = 1, n = k = 4,096; not in a fused group as q/k/v are) takes TensorRT-LLM's fitted int4 weight-only form, its own fixed cost and efficiencies
    and no dequantizing factor (the table measured the dequantizing kernel), and lands within 30 % of the
    measured row; under --engine vllm it keeps the 16-bit form times the int4 dequantizing factor (on a GA100, by the
    weight's size: Marlin's A100 figure)."""
    from roofcalc.engines import ENGINES
    from roofcalc.predict import GPU_DEQUANT, engine_fits

    kw = dict(weight_dtype=DTYPES["int4"], act_dtype=DTYPES["fp16"], kv_dtype=DTYPES["fp16"],
              cache_update="in-place")
    a = analyze(load_shape("meta-llama/Llama-2-7b-hf"), Workload.decode(1, 256, **kw))
    hw = find_hardware("A100-80GB")

    def o_proj(engine):
        step = roofline(a, hw, impl="cuda-graph", engine_host=ENGINES[engine].host).step
        return {p.kernel.name: p for p in step.placements}["o_proj"]

    p = o_proj("trtllm")
    wo = GemmFit.from_doc(engine_fits()["gpus"]["a100_sxm"]["trtllm"]["gemm"]["int4_wo"], "test")
    e_c, e_m = wo.efficiencies(1, 4096, 4096)
    assert p.t_expected_s == pytest.approx(wo.fixed_s + max(p.t_compute_s / e_c, p.t_memory_s / e_m))
    assert p.t_expected_s == pytest.approx(A100_TRT_INT4_M1 * 1e-3, rel=0.30)
    p = o_proj("vllm")
    bf16 = _form("a100_sxm")
    e_c, e_m = bf16.efficiencies(1, 4096, 4096)
    # a GA100's int4 factor at o_proj's 8.65 MB (4,096² weights at 4 bits, a 16-bit scale per 128): between 8 and 16 MB
    weight = 4096 * 4096 // 2 + 4096 * 4096 // 128 * 2
    f = GPU_DEQUANT["int4"].expected * (0.2616 + (0.5517 - 0.2616) * math.log2(weight / 8e6))
    assert p.t_expected_s == pytest.approx(bf16.fixed_s + max(p.t_compute_s / e_c, p.t_memory_s / (e_m * f)))
    # TensorRT-LLM's own int4 kernel measured 20.5 us there: Marlin's A100 figure puts vLLM's within 30 % of it
    assert p.t_expected_s == pytest.approx(A100_TRT_INT4_M1 * 1e-3, rel=0.30)


# A row of AIConfigurator 0.12's H100 SXM SGLang 0.5.14 GEMM table (gemm/sglang/0.5.14/gemm_perf.parquet,
# fp8_block, kernel_source sglang_deepgemm_gemm_nt_f8f8bf16; latency in ms), in the fit's sample: m = 64,
# n = k = 4,096: 0.011895.
H100_SGLANG_FP8_BLOCK_M64 = 0.011895


def test_block_scaled_fp8_weights_compute_in_fp8_and_take_their_engines_form():
    """Llama-3-8B with fp8 weights in 128 x 128 blocks, decode at batch 64 on an H100 SXM: the GEMMs compute in
    fp8 (transformers' FP8Linear and the engines quantize the input per token and group of 128); under
    --engine sglang o_proj (m = 64, n = k = 4,096) takes SGLang's fitted block form (DeepGEMM, its input's
    quantization in series) and lands within 30 % of the measured row; under --engine vllm, whose block rows are
    not timed in a CUDA graph, the per-tensor fp8 form."""
    from roofcalc.engines import ENGINES
    from roofcalc.predict import engine_fits

    kw = dict(weight_dtype=DTYPES["fp8-b128"], act_dtype=DTYPES["bf16"], kv_dtype=DTYPES["bf16"],
              cache_update="in-place")
    wl = Workload.decode(64, 1024, **kw)
    assert wl.compute_dtype.name == "fp8"
    a = analyze(load_shape("meta-llama/Meta-Llama-3-8B"), wl)

    def o_proj(engine):
        step = roofline(a, find_hardware("H100-SXM"), impl="cuda-graph", engine_host=ENGINES[engine].host).step
        return {p.kernel.name: p for p in step.placements}["o_proj"]

    for engine, form in (("sglang", engine_fits()["gpus"]["h100_sxm"]["sglang"]["gemm"]["fp8_block"]),
                         ("vllm", kernel_fits()["gpus"]["h100_sxm"]["gemm"]["fp8"])):
        p = o_proj(engine)
        f = GemmFit.from_doc(form, "test")
        e_c, e_m = f.efficiencies(64, 4096, 4096)
        assert p.t_expected_s == pytest.approx(f.fixed_s + max(p.t_compute_s / e_c, p.t_memory_s / e_m)
                                               + f.quant_s(p.t_memory_s, 64, 4096, 4096))
        if engine == "sglang":
            assert p.t_expected_s == pytest.approx(H100_SGLANG_FP8_BLOCK_M64 * 1e-3, rel=0.30)


# Rows of AIConfigurator 0.12's H200 SXM TensorRT-LLM 1.3.0rc20 tables (latency in ms), m = 1, n = k = 8,192:
# gemm/trtllm/1.3.0rc20/gemm_perf.parquet, fp8 (per tensor, kernel_source torch_flow): 0.030032; and
# quantize/trtllm/1.3.0rc20/computescale_perf.parquet, m = 1, k = 8,192 (the dynamic input scale the GEMM row
# includes and a served static-scale checkpoint does not run): 0.0071968. As served: 0.030032 - 0.0071968.
H200_TRT_FP8_M1 = 0.030032
H200_TRT_SCALE_M1 = 0.0071968


def test_tensorrt_llms_fp8_gemm_is_fitted_as_served():
    """Llama-2-70B with per-tensor fp8 weights, decode at batch 1 on an H200 under --engine trtllm: o_proj
    (m = 1, n = k = 8,192) takes TensorRT-LLM's fitted fp8 form, fitted on the rows less the dynamic input scale
    (benchmarks/fit_kernels.py static_scale), so it lands within 30 % of the row less that part (22.8 us) and
    nearer it than the row as timed (30.0 us); the shipped form names the table it was less."""
    from roofcalc.engines import ENGINES
    from roofcalc.predict import engine_fits

    fp8 = engine_fits()["gpus"]["h200_sxm"]["trtllm"]["gemm"]["fp8"]
    assert "computescale_perf" in fp8["source"]["less"]["file"]
    kw = dict(weight_dtype=DTYPES["fp8-t"], act_dtype=DTYPES["fp16"], kv_dtype=DTYPES["fp16"],
              cache_update="in-place")
    a = analyze(load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(1, 256, **kw))
    r = roofline(a, find_hardware("H200"), impl="cuda-graph", engine_host=ENGINES["trtllm"].host)
    assert r.model.fitted_tables == "trtllm"
    used, shipped = r.model.matmul_fit("fp8-t"), GemmFit.from_doc(fp8, "")
    assert (used.fixed_s, used.e_compute, used.e_memory) == (shipped.fixed_s, shipped.e_compute, shipped.e_memory)
    t = {p.kernel.name: p for p in r.step.placements}["o_proj"].t_expected_s
    served = (H200_TRT_FP8_M1 - H200_TRT_SCALE_M1) * 1e-3
    assert t == pytest.approx(served, rel=0.30)
    assert abs(math.log(t / served)) < abs(math.log(t / (H200_TRT_FP8_M1 * 1e-3)))


def test_tensorrt_llms_fallback_decode_kernel_runs_where_its_dispatch_says():
    """fitting.mmha_rows, TensorRT-LLM's decode dispatch (common/attentionOp.cpp, decoderXQAImplJIT): XQA takes 2
    to 32 query heads per KV head when 4 * KV heads * batch * max(1, keys / 128) reaches the SM count; else the
    fallback kernel runs. On an H100's 132 SMs: 8 KV heads, batch 1, 512 keys is 4 * 8 * 1 * 4 = 128 < 132
    (fallback), at batch 2 it is 256 (XQA); 64 query heads on one KV head is past XQA's 32 at any batch; MHA
    is never marked (its fallback reads no more than it would). SM100 (B200): past 16, and no heuristic."""
    from roofcalc.fitting import mmha_rows

    h100 = dict(sms=132, max_group=32, heuristic=True)
    got = mmha_rows([32, 32, 64, 32, 32], [8, 8, 1, 32, 8], [1, 2, 1024, 1, 1], [512, 512, 65536, 512, 66], **h100)
    assert got.tolist() == [True, False, True, False, True]  # the last: 4 * 8 * 1 * max(1, 66/128) = 32 < 132
    b200 = dict(sms=148, max_group=16, heuristic=False)
    assert mmha_rows([32, 24, 16], [8, 1, 1], [1, 1, 1], [512, 512, 512], **b200).tolist() == [False, True, False]


@pytest.mark.parametrize("rule", [(132, 32, True), (148, 16, False)])
def test_the_step_models_fallback_rule_is_the_fits(rule):
    """AttentionFit.mmha (the step model's, on plain numbers: the main job imports no numpy) and fitting.mmha_rows
    (the fit's, on arrays) are one rule written twice: they agree at every point of a grid of group sizes,
    batches and key counts around the heuristic's edge, for an H100 and a B200."""
    import itertools
    from dataclasses import replace

    from roofcalc.fitting import mmha_rows
    from roofcalc.predict import engine_fits

    f = replace(AttentionFit.from_doc(engine_fits()["gpus"]["h200_sxm"]["trtllm"]["attention"]["decode_bf16kv"],
                                      "test"), mmha_rule=rule)
    grid = list(itertools.product((1, 2, 4, 8, 16, 24, 32, 48, 64), (1, 2, 8, 32), (1, 2, 3, 64, 256),
                                  (1, 66, 128, 512, 4096)))
    heads = [g * kv for g, kv, _, _ in grid]
    rows = mmha_rows(heads, [kv for _, kv, _, _ in grid], [b for _, _, b, _ in grid], [k for *_, k in grid],
                     sms=rule[0], max_group=rule[1], heuristic=rule[2])
    assert [bool(f.mmha(b, h, kv, k)) for h, (_, kv, b, k) in zip(heads, grid)] == rows.tolist()


def test_a_tensorrt_llm_decode_on_its_fallback_kernel_takes_its_factor():
    """Under --engine trtllm the H200's decode form carries the fallback kernel's factor (by query heads per KV
    head; each query head reads its group's KV, through L2) and the rule for where it runs; a call XQA runs
    is read as without it, a call the fallback runs takes the factor at its group size (64: a knot)."""
    from dataclasses import replace

    from roofcalc.predict import engine_fits

    d = engine_fits()["gpus"]["h200_sxm"]["trtllm"]["attention"]["decode_bf16kv"]
    assert {k: d["mmha"][k] for k in ("sms", "max_group", "heuristic")} == dict(sms=132, max_group=32,
                                                                                 heuristic=True)
    f = AttentionFit.from_doc(d, "test")
    plain = replace(f, mmha_mem=(), mmha_rule=())
    knots = dict(f.mmha_mem)
    assert knots[64.0] < 0.2  # 64 query heads reading one KV head's keys: far below one read per KV head
    xqa = (64, 32, 8, 1, 4096, 128, 0, 2.0)
    assert f.terms(xqa) == plain.terms(xqa)
    fallback = (64, 64, 1, 1, 4096, 128, 0, 2.0)
    assert f.terms(fallback)[1] == pytest.approx(min(1.0, plain.terms(fallback)[1] * knots[64.0]))
    small = (1, 32, 8, 1, 512, 128, 0, 2.0)  # 4 * 8 * 1 * 4 = 128 < 132: the heuristic sends it to the fallback
    assert f.terms(small)[1] == pytest.approx(min(1.0, plain.terms(small)[1] * knots[4.0]))
    # the vLLM forms have no such kernel
    assert "mmha" not in kernel_fits()["gpus"]["h200_sxm"]["attention"]["decode_bf16kv"]


# The datasheet roofs the fits divide by (benchmarks/fit_kernels.py SPECS): dense BF16 FLOP/s and DRAM bytes/s of
# the H100 SXM and H200 (989.4 T; 3.35 and 4.8 TB/s), HGX B200 (2,250 T; 8 TB/s), L40S (362.05 T; 864 GB/s) and
# RTX PRO 6000 Server (500 T; 1,792 GB/s).
FIT_SPECS = {"h100_sxm": (989.4e12, 3350e9), "h200_sxm": (989.4e12, 4800e9), "b200_sxm": (2250e12, 8000e9),
             "l40s": (362.05e12, 864e9), "rtx_pro_6000_server": (500e12, 1792e9)}
# Rows of AIConfigurator 0.12's TensorRT-LLM 1.3.0rc20 decode tables (attention/trtllm/1.3.0rc20/
# generation_attention_perf.parquet, kv_cache_dtype bfloat16, num_heads 64, num_key_value_heads 1, head_dim 128,
# step = KV length - 1): batch, KV length, latency in µs. Each runs TensorRT-LLM's fallback kernel (64 query heads
# a KV head, past XQA's 32; 16 on the B200): the KV, 2·batch·length·128·2 bytes, is 64 MiB at 32 x 4,096 and
# 128 MiB at 32 x 8,192 or 64 x 4,096, past half of each L2 (50, 50, 126, 96, 128 MiB).
FALLBACK_ROWS = {
    "h100_sxm": ((32, 4096, 657.7), (32, 8192, 1309.2)),
    "h200_sxm": ((32, 8192, 1314.4),),
    "b200_sxm": ((32, 8192, 1196.8),),
    "l40s": ((32, 8192, 1544.2),),
    "rtx_pro_6000_server": ((64, 4096, 1102.6), (32, 8192, 1154.2)),
}


def test_every_tensorrt_llm_16_bit_decode_form_times_its_fallback_kernels_rows():
    """TensorRT-LLM's fallback decode kernel reads its group's KV once per query head, through L2: the rows above
    read their KV (once) at 0.014-0.10 of each DRAM datasheet (H100: 134,217,728 B / 1,309.2 µs = 102.5 GB/s of
    3,350; RTX PRO 6000: 134,217,728 / 1,102.6 µs = 121.7 of 1,792; B200: 112.1 of 8,000). Under --engine trtllm
    each GPU's shipped 16-bit-KV form must time them within 30 %, the call and its cache write as the step model
    counts them. The
    fit anchors the fallback's factor on the rows past half L2, whether or not the KV fits (benchmarks/
    fit_kernels.py decode_l2_rows): counted only past L2, the RTX PRO 6000's rested on 10 rows, fitted to 1 at
    every group size, and a form without it times the rows 5-10x too fast."""
    from dataclasses import replace

    from roofcalc.predict import default_model, kernel_time

    for gpu, rows in FALLBACK_ROWS.items():
        m = default_model("gpu", fits=gpu, engine="trtllm")
        form = m.attention_fits["decode_bf16kv"]
        assert form.mmha_mem, gpu
        plain = replace(m, attention_fits={**m.attention_fits, "decode_bf16kv": replace(form, mmha_mem=())})
        spec = FIT_SPECS[gpu]
        for b, kv, us in rows:
            flops, moved = 4 * b * 64 * kv * 128, 2 * b * 64 * 128 * 2 + 2 * b * kv * 128 * 2
            attn = (b, 64, 1, 1, kv, 128, 0, 2.0, kv)
            write = kernel_time(m, 0.0, 2 * b * 128 * 4 / spec[1], "memory", 1)[0]
            t, t0 = (kernel_time(x, flops / spec[0], moved / spec[1], "attention", 1, attn=attn)[0] + write
                     for x in (m, plain))
            assert abs(us * 1e-6 / t - 1) <= 0.30, (gpu, b, kv, us, t)
            assert us * 1e-6 / t0 > 3.0, (gpu, b, kv)  # without the factor: far too fast


def test_int4_weights_on_hopper_take_marlins_measured_h100_bandwidth():
    """inclusionAI/humming PR #2 (H100, n = k = 8,192 channelwise, M = 1): torch's 16-bit GEMM 2.30 TFLOPS, marlin-w4a16
    4.98. 2 x 8,192² = 134,217,728 FLOPs: 58.36 us for 134,250,496 bytes (weights, x, y) = 2.300 TB/s; 26.95 us for
    33,603,584 bytes (int4 weights, 8,192 fp16 scales, x, y) = 1.247 TB/s; 1.247 / 2.300 = 0.542. Hopper GPUs take
    it; Ampere keeps Marlin's README ideal (1.0), a GA100 by layer size (below)."""
    from roofcalc.predict import HOPPER_INT4, default_model
    from roofcalc.roofline import roofline

    t16, t4 = 134_217_728 / 2.30e12, 134_217_728 / 4.98e12
    assert HOPPER_INT4.expected == pytest.approx((33_603_584 / t4) / (134_250_496 / t16), rel=1e-9)
    assert HOPPER_INT4.expected == pytest.approx(0.542, abs=5e-4)
    assert default_model("gpu", compute_capability=9.0).dequant["int4"] is HOPPER_INT4
    assert default_model("gpu", compute_capability=8.0).dequant["int4"].expected == 1.0
    from roofcalc.dtypes import dtype

    shape = load_shape("meta-llama/Llama-2-7b-hf")
    wl = Workload.decode(1, 500, weight_dtype=dtype("int4"), act_dtype=dtype("fp16"), kv_dtype=dtype("fp16"))
    for hw, factor in (("H100", HOPPER_INT4.expected), ("H200", HOPPER_INT4.expected), ("A100", 1.0)):
        assert roofline(analyze(shape, wl), find_hardware(hw)).model.dequant["int4"].expected == factor, hw


def _int4_kernels():
    """benchmarks/int4_kernels.py: Marlin's layer shapes (its bench.py), its README figure's bars and the step model's
    speedup over FP16 on them."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "int4_kernels.py"
    spec = importlib.util.spec_from_file_location("int4_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("int4_kernels", mod)
    spec.loader.exec_module(mod)
    return mod


def test_int4_weights_on_a_ga100_take_marlins_a100_speedups_by_layer_size():
    """Marlin's README figure (IST-DASLab/marlin @ 2f6d7c1, assets/models.png): at batch 16 Marlin runs a block's linear
    layers 2.22 (Llama 7B), 2.80, 3.04, 3.20 and 3.64 (Falcon 180B) times faster than FP16 on the A100, where the ideal
    is 3.87 (4 bits and a 16-bit scale per 128 weights against 16 bits). A GA100 (compute capability 8.0) takes int4's
    factor by the matmul's int4 bytes, 1 - 3.3 (bytes / 1 MB)^-0.72 (benchmarks/int4_kernels.py marlin_points: two
    parameters for the five bars), and gives each bar within 5 %; the A10 and the RTX A6000 (compute capability 8.6) keep
    the factor 1 and their own bars of the figure within 6 %. Its pessimistic end stays gpt-fast's 0.617 where the
    factor is above it."""
    from dataclasses import replace

    from roofcalc.predict import GA100_INT4_SIZE, GPU_DEQUANT, Efficiency, efficiencies

    for x, f in GA100_INT4_SIZE:
        assert f == pytest.approx(1 - 3.3 * (x / 1e6) ** -0.72, abs=5e-5)
    assert [x for x, _ in GA100_INT4_SIZE] == [8e6 * 2 ** i for i in range(7)]
    assert default_model("gpu", compute_capability=8.0).dequant_size["int4"] is GA100_INT4_SIZE
    for cc in (8.6, 8.9, 9.0, 7.5):
        assert not default_model("gpu", compute_capability=cc).dequant_size, cc
    k = _int4_kernels()
    # the figure's bars as the script holds them (read off assets/models.png): Llama 7B to Falcon 180B
    assert [k.MARLIN_BARS[name][k.MARLIN_GPUS.index("A100-80GB")] for name in k.MARLIN_LAYERS] == [2.22, 2.80, 3.04,
                                                                                                   3.20, 3.64]
    assert k.MARLIN_LAYERS["Llama 7B"] == ((4096, 12288), (4096, 4096), (4096, 21504), (10752, 4096))
    for gpu in ("A100-80GB", "A10", "RTX-A6000"):
        col = k.MARLIN_GPUS.index(gpu)
        for name, layers in k.MARLIN_LAYERS.items():
            assert k.marlin_speedup(gpu, layers)[0] == pytest.approx(k.MARLIN_BARS[name][col],
                                                                     rel=0.05 if gpu == "A100-80GB" else 0.06), gpu
    # read in log bytes between the points: 45.4 MB (Llama 7B's gate and up) between 32 and 64 MB
    hw = find_hardware("A100-80GB")
    m = kernel_model(hw, Roof(hw.bandwidth_bytes_per_s, hw.peak("fp16")), None)
    flat = replace(m, dequant_size={}, dequant={**m.dequant, "int4": Efficiency(1.0, 1.0)})

    def factor(w, pessimistic=False):
        kw = dict(weight_bytes=w, pessimistic=pessimistic, depth=4096, width=4096)
        return (efficiencies(m, "matmul", 1, "int4", **kw)[1] / efficiencies(flat, "matmul", 1, "int4", **kw)[1])

    w = 45_416_448.0
    assert factor(w) == pytest.approx(0.7279 + (0.8348 - 0.7279) * math.log2(w / 32e6), rel=1e-9)
    assert factor(2e6) == factor(8e6) == pytest.approx(0.2616) and factor(1e9) == pytest.approx(0.963)
    assert factor(2e6, True) == pytest.approx(0.2616)  # below gpt-fast's 0.617: the factor
    assert factor(1e9, True) == pytest.approx(GPU_DEQUANT["int4"].pessimistic)  # above it: gpt-fast's


def test_the_fits_decode_cost_counts_flashattention2s_windowed_work_items():
    """fitting.decode_cost for 2 sequences of 32 query heads over 8 KV heads of 128, 1,024 keys in 16-bit KV, a window
    of 4,096: packed (per_head False), 2·8 work items and the KV read once a KV head, 2·2·2·8·1024·128 = 8,388,608
    bytes (+ q and out 2·2·32·128·2 = 32,768, + the new K and V 2·2·8·128·2 = 8,192); per_head True, 2·32 items and
    4x the KV bytes; "items" (FlashAttention-2 under a window), 2·32 items and the packed bytes; without a window
    "items" is the packed count."""
    from roofcalc.fitting import decode_cost

    args = (2, 32, 8, 1024, 128, 2.0)
    packed, per_head, items = (decode_cost(*args, 4096, 1, mode) for mode in (False, True, "items"))
    assert (packed["items"], packed["bytes"]) == (16, 8_388_608 + 32_768 + 8_192)
    assert (per_head["items"], per_head["bytes"]) == (64, 4 * 8_388_608 + 32_768 + 8_192)
    assert (items["items"], items["bytes"]) == (64, packed["bytes"])
    assert decode_cost(*args, 0, 1, "items")["items"] == 16
    # a numpy bool (or 0/1) reads as its truth: np.False_ is the packed count, not the work-items variant
    import numpy as np

    assert decode_cost(*args, 4096, 1, np.False_)["items"] == 16
    assert decode_cost(*args, 4096, 1, np.True_)["bytes"] == per_head["bytes"]


@pytest.mark.parametrize("hw_name, engine, dtype, words", [
    ("H100-SXM", "vllm", "bf16", "AIConfigurator 0.12.0 h100_sxm vllm tables, fitted (docs/kernel_fits.md)"),
    ("H100-SXM", "trtllm", "fp8", "AIConfigurator 0.12.0 h100_sxm trtllm tables, fitted (docs/kernel_fits.md)"),
    ("RTX4090", "vllm", "fp16", "AIConfigurator 0.12.0 l40s vllm tables, fitted (docs/kernel_fits.md), the nearest "
                                "measured GPU's"),
])
def test_a_kernel_names_the_fitted_form_its_expected_time_comes_from(hw_name, engine, dtype, words):
    """A kernel's efficiency source (JSON, CSV) names the fitted form exactly where one gives its expected time:
    the oracle is the same step without its fitted GEMM and attention forms (KernelModel.unfitted), which changes
    a kernel's time where, and only where, a form gives it. Llama-2-7B decoding at batch 8 over 1,024 tokens: its
    projections (fused q/k/v and gate/up groups under the serving engines) and attention take the forms, its
    norms, rotary and residuals the default stream class. A GeForce card's GEMMs take the form's memory side only
    (gemm_memory_only), and say so."""
    from dataclasses import replace

    from roofcalc.engines import ENGINES

    d = DTYPES[dtype]
    wl = Workload.decode(8, 1024, weight_dtype=d, act_dtype=d, kv_dtype=d, cache_update="in-place")
    eng = ENGINES[engine]
    r = roofline(analyze(load_shape("meta-llama/Llama-2-7b-hf"), wl), hw_name, impl=eng.impl, engine_host=eng.host)
    kinds = set()
    for p in r.step.placements:
        moved = replace(p, model=p.model.unfitted).t_expected_s != pytest.approx(p.t_expected_s, rel=1e-12)
        assert p.efficiency_source.startswith(words) == moved, p.kernel.name
        assert moved == (p.kernel.kind in ("matmul", "attention")), p.kernel.name
        if p.kernel.kind == "matmul":
            assert ("its memory side and fixed cost" in p.efficiency_source) == (hw_name == "RTX4090")
        else:
            assert p.efficiency_source == words or p.efficiency_source == "default"
        kinds.add(p.kernel.kind)
    assert {"matmul", "attention", "elementwise"} <= kinds


def test_the_header_and_json_say_whether_the_steps_attention_takes_a_fitted_form(capsys):
    """DeepSeek-V3's latent attention reads a 576-wide head (512 latent + 64 rotary), above the fitted tables'
    256 at most (KernelModel.attention_fit): on an H200 under SGLang its GEMMs take the fitted forms and its
    attention the defaults, which the header, JSON's kernel_fits.attention and the kernel's efficiency source
    all say; Llama-3-8B's attention on the same GPU takes the fitted form."""
    args = ["--hw", "H200", "--engine", "sglang", "--batch", "32", "--context", "4096"]
    for model, fitted in (("deepseek-ai/DeepSeek-V3", False), ("meta-llama/Meta-Llama-3-8B", True)):
        assert main([model, *args, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        att = next(k for k in doc["kernels"] if k["name"] == "attention")
        assert doc["hardware"]["kernel_fits"]["attention"] is fitted
        assert (att["efficiency_source"] != "default") is fitted
        assert main([model, *args]) == 0
        out = unwrap(capsys.readouterr().out)
        assert ("GEMM and attention kernels" in out) is fitted
        assert ("GEMM kernels (attention: the default efficiencies; no fitted table holds this step's attention "
                "calls)" in out) is not fitted


def test_an_int4_gemms_source_says_its_kernel_caps_it_and_a_measured_curve_leaves_attention_its_fit():
    """Two kernels whose time only part of a fitted form gives. Llama-2-7B's 512-token prefill on an H100 under
    vLLM with AutoAWQ's int4 GEMM: below the rows at which the engine dequantizes, the compute side is at most
    AutoAWQ's own rate (KernelModel.int4_cap), which its source says; where that binds, the time is the same
    without the fitted forms (the oracle). A profile's measured matmul curve replaces the GEMM forms ("measured")
    and leaves the attention form, whose name its source keeps (and whose time the form moves)."""
    from dataclasses import replace

    from roofcalc.engines import ENGINES

    d = DTYPES["fp16"]
    eng = ENGINES["vllm"]
    wl = Workload.prefill(1, 512, weight_dtype=DTYPES["int4"], act_dtype=d, kv_dtype=d, cache_update="in-place")
    r = roofline(analyze(load_shape("meta-llama/Llama-2-7b-hf"), wl), "H100-SXM", impl=eng.impl,
                 engine_host=replace(eng.host, int4_kernel="autoawq"))
    words = "its compute side at most the int4 GEMM kernel's own rate (--int4-kernel)"
    q = next(p for p in r.step.placements if p.kernel.name == "q_proj")
    caps = [p for p in r.step.placements if p.kernel.kind == "matmul" and p.weight_format == "int4"]
    assert caps and all(p.efficiency_source.endswith(words) for p in caps) and q in caps
    assert replace(q, model=q.model.unfitted).t_expected_s == pytest.approx(q.t_expected_s, rel=1e-12)  # it binds
    wl = Workload.decode(8, 1024, weight_dtype=d, act_dtype=d, kv_dtype=d, cache_update="in-place")
    r = roofline(analyze(load_shape("meta-llama/Llama-2-7b-hf"), wl), "H100-SXM", impl=eng.impl, engine_host=eng.host)
    for p in r.step.placements:
        if p.kernel.kind not in ("matmul", "attention"):
            continue
        curved = replace(p, model=replace(p.model, curves={"matmul": ((1, 1e6, 0.5), (4096, 1e8, 0.8))}))
        if p.kernel.kind == "matmul":
            assert curved.efficiency_source == "measured"
        else:
            assert curved.efficiency_source.startswith("AIConfigurator 0.12.0 h100_sxm vllm tables, fitted")
            unfitted = replace(curved, model=curved.model.unfitted)
            assert unfitted.t_expected_s != pytest.approx(curved.t_expected_s, rel=1e-6)
