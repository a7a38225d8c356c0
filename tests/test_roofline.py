"""Roofline placement: the seed's worked numbers, published figures, the plot, bad input."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from roofcalc import RoofcalcError, Workload, analyze, dtype, load_shape
from roofcalc.calculator import elementwise, matmul
from roofcalc.cli import main
from roofcalc.hardware import find_hardware, hardware_catalog, load_profile, save_profile
from roofcalc.inputs import parse_quantity
from roofcalc.predict import default_model
from roofcalc.roofline import Point, Roof, parse_point, place, roofline

FP16 = dtype("fp16")
TINY = load_shape("TinyLlama/TinyLlama-1.1B")
T4 = find_hardware("T4")
SEED_ROOF = Roof(270e9, 50e12)  # the seed's example measured roof


def test_seed_ridges():
    assert T4.ridge("fp16") == pytest.approx(203.125)  # 65e12 / 320e9 (seed: 203)
    assert SEED_ROOF.ridge == pytest.approx(185.185, abs=1e-3)  # 50e12 / 270e9 (seed: 185)


def test_seed_decode_floor_and_tpot_point():
    # The seed's arithmetic: 2.2 GB / 320 GB/s = 6.875 ms ≈ 6.9 ms ...
    assert Roof(320e9, 65e12).floor(2.2e9, 2.2e9) == pytest.approx(6.875e-3)
    # ... but a step reads 2,084,028,416 bytes (the embedding table is gathered, not read; the new token's K and
    # V written in place and each kernel fused, as the seed counts them): 2,084,028,416 / 320e9 = 6.513 ms. The seed
    # rounds the table in.
    step = analyze(TINY, Workload.decode(1, 500, cache_update="in-place", eager_ops=False))
    assert Roof(320e9, 65e12).floor(step.totals.flops, step.totals.bytes) == pytest.approx(2_084_028_416 / 320e9)
    # The seed's point: 2.2 GFLOP in 15 ms = 146.7 GFLOP/s, 146.7 / 270 = 54% of the measured roof at AI 1.
    seed_point = Point("decode b=1", 2.2e9, 2.2e9, 0.015)
    assert seed_point.achieved_flop_per_s == pytest.approx(146.67e9, rel=1e-3)
    assert seed_point.roof_fraction(SEED_ROOF) == pytest.approx(0.5432, abs=1e-4)
    # roofcalc's own count: 2,161,694,976 FLOPs / 0.015 s = 144.1 GFLOP/s at AI 1.0373 (roof 280.1 GFLOP/s): 51%
    verdict = place(step, SEED_ROOF, tpot_s=0.015)
    assert verdict.achieved_flop_per_s == pytest.approx(2_161_694_976 / 0.015)
    assert verdict.roof_fraction == pytest.approx((2_161_694_976 / 0.015) / (270e9 * 2_161_694_976 / 2_084_028_416))


def test_matmul_4096_on_the_flat_roof_and_x_plus_1_on_the_slope():
    mm = matmul(4096, 4096, 4096, weight_bytes=4096 * 4096 * 2, act=FP16)
    assert mm.flops == 2 * 4096**3  # ≈ 137 GFLOP
    assert mm.bytes == 6 * 4096**2  # read A, read B, write C, 2 bytes each ≈ 100 MB
    assert mm.intensity == pytest.approx(4096 / 3)  # ≈ 1365 (seed)
    assert SEED_ROOF.attainable(mm.intensity) == SEED_ROOF.peak_flop_per_s  # right of the ridge: the flat roof
    small = matmul(256, 256, 256, weight_bytes=256 * 256 * 2, act=FP16)
    assert small.intensity == pytest.approx(256 / 3)  # ≈ 85 < 203: memory-bound (seed)
    x_plus_1 = elementwise(10**8, 1, reads=1, writes=1, act=FP16)
    assert x_plus_1.intensity == 0.25  # n FLOPs over 2n + 2n bytes (seed)
    z = elementwise(10**8, 1, reads=2, writes=1, act=FP16)
    assert z.intensity == pytest.approx(1 / 6)  # z = x + y: n over 6n (seed)


@pytest.mark.parametrize("impl", ["hf-eager", "fused"])
def test_rmsnorm_and_silu_are_bound_by_their_fixed_cost_on_t4(impl):
    """The worked example: a norm's bytes take 0.04 us (0.24 us as eager ops), far less than running a kernel at
    all costs."""
    step = analyze(TINY, Workload.decode(1, 500, eager_ops=impl == "hf-eager"))
    verdict = place(step, Roof(320e9, 65e12), impl=impl, model=default_model("gpu"))
    by_name = {p.kernel.name: p for p in verdict.placements}
    # RMSNorm: 12,288 bytes / 320 GB/s = 0.0384 us fused; as eager ops 2,048 x 36 + 4,096 = 77,824 B, 0.243 us
    # (docs/conventions.md, "Bytes"); SiLU x up: 33,792 B -> 0.106 us; the fixed cost of one elementwise kernel
    # is 1.735 us (predict.GPU_FIXED), paid once per launch (8 and 2 eager ops, 1 fused)
    norm, act = by_name["input_layernorm"], by_name["act_mul"]
    assert norm.t_floor_s == pytest.approx({"hf-eager": 77_824, "fused": 12_288}[impl] / 320e9)
    assert norm.t_fixed_s == pytest.approx({"hf-eager": 8, "fused": 1}[impl] * 1.735e-6)
    assert act.t_fixed_s == pytest.approx({"hf-eager": 2, "fused": 1}[impl] * 1.735e-6)
    assert norm.bound == act.bound == "fixed"
    # q_proj: 8,396,800 B / 320 GB/s = 26.2 us, at 0.685 of the roof 38.3 us > its 2.44 us fixed cost
    assert by_name["q_proj"].bound == "memory"
    q, k, v = (by_name[n] for n in ("q_proj", "k_proj", "v_proj"))
    if impl == "hf-eager":
        assert q.t_expected_s == pytest.approx(8_396_800 / 320e9 / 0.685 + 2.44e-6)
    else:  # fused: q/k/v run as one GEMM (one launch, one fixed cost), each kernel its share of it by floors
        floors = q.t_floor_s + k.t_floor_s + v.t_floor_s
        assert q.t_floor_s == pytest.approx(8_396_800 / 320e9)
        assert q.t_expected_s + k.t_expected_s + v.t_expected_s == pytest.approx(floors / 0.685 + 2.44e-6)
        assert q.t_fixed_s == pytest.approx(2.44e-6 * q.t_floor_s / floors)


def test_cuda_graph_pays_one_replay_a_step():
    step = analyze(TINY, Workload.decode(1, 500))
    m = default_model("gpu")
    graph = place(step, Roof(320e9, 65e12), impl="cuda-graph", model=m)
    fused = place(step, Roof(320e9, 65e12), impl="fused", model=m)
    # the host: one graph replay of 5 us (predict.LAUNCH), where fused calls 10 x 22 + 3 = 223 launches
    assert graph.times.host_s == pytest.approx(5e-6)
    assert fused.times.host_s == pytest.approx(fused.launches_per_step * 5e-6)
    # the device runs the same kernels either way: the same fixed costs and device time
    assert graph.times.device_s == pytest.approx(fused.times.device_s)
    assert graph.bound == "memory"


def test_step_launch_counts_and_predicted_range():
    step = analyze(TINY, Workload.decode(1, 500))
    v = place(step, Roof(320e9, 65e12), impl="hf-eager")
    # per layer: 2 RMSNorms × 8 + q, k, v, o 4 + rotary 10 + cache write 2 + attention 1 + 2 residual adds
    #            + gate, up, down 3 + act_mul 2 = 40
    assert v.launches_per_layer == 40
    assert v.launches_per_step == 40 * 22 + 1 + 8 + 1  # + embedding, final norm, lm_head = 890
    # no kernel model (place's default): every efficiency 1, no fixed cost, no host time: the floors
    assert v.predicted_lower_s == v.predicted_s == v.predicted_upper_s == v.sum_floor_s
    assert v.times.host_s == 0 and all(p.t_fixed_s == 0 for p in v.placements)
    fused = place(step, Roof(320e9, 65e12), impl="fused")
    # norm 1 + qkv 1 + rotary 1 + cache 1 + attention 1 + o 1 + post-norm 1 + gate_up 1 + act 1 + down 1 = 10
    assert fused.launches_per_layer == 10


def test_the_step_bound_is_one_of_its_kinds_of_time():
    """The step's bound names the largest of the host and the device's parts, which add up to the device."""
    step = analyze(TINY, Workload.decode(1, 500))
    for impl in ("hf-eager", "fused", "cuda-graph"):
        t = place(step, Roof(320e9, 65e12), impl=impl, model=default_model("gpu")).times
        parts = {"memory": t.memory_s, "compute": t.compute_s, "communication": t.comm_s, "fixed": t.fixed_s}
        assert sum(parts.values()) == pytest.approx(t.device_s)
        want = "host" if t.host_s > t.device_s else max(parts, key=parts.get)
        assert t.bound == want, impl
    # hf-eager: 890 eager ops x 20 us = 17.8 ms of host against about 11 ms of device time
    assert place(step, Roof(320e9, 65e12), model=default_model("gpu")).bound == "host"


def test_published_ridges_and_gemm_intensities():
    # NVIDIA Matrix Multiplication Background guide: V100 FP16 ops:byte 125 / 0.9 = 138.9
    assert find_hardware("V100").ridge("fp16") == pytest.approx(138.9, abs=0.05)

    def gemm_ai(m, n, k):  # the guide's intensity for 2-byte elements: MNK / (MK + NK + MN)
        return matmul(m, n, k, weight_bytes=2 * k * n, act=FP16).intensity

    assert gemm_ai(8192, 8192, 8192) == pytest.approx(2730, abs=1)  # 8192 / 3 = 2730.7
    assert gemm_ai(8192, 128, 8192) == pytest.approx(124.1, abs=0.05)
    assert gemm_ai(512, 4096, 1024) == pytest.approx(315, abs=0.1)  # linear 1024 -> 4096 at batch 512
    assert gemm_ai(1, 4096, 1024) == pytest.approx(1, abs=0.01)  # at batch 1
    # "How to Scale Your Model": TPU v5e 1.97e14 / 8.2e11 ≈ 240 (GCP docs: 819 GB/s -> 240.5)
    assert find_hardware("TPU-v5e").ridge("bf16") == pytest.approx(240, abs=1)
    # H100 SXM: 9.89e14 / 3.35e12 = 295 (the book's own arithmetic)
    assert find_hardware("H100-SXM").ridge("bf16") == pytest.approx(295, abs=0.5)


def test_hardware_catalog_and_names():
    names = {h.name for h in hardware_catalog()}
    for required in ("T4", "V100-SXM2", "A10G", "A10", "L4", "L40S", "A100-40GB", "A100-80GB", "A100-40GB-PCIe",
                     "A100-80GB-PCIe", "H100-SXM", "H100-PCIe", "H100-NVL", "H200", "B200", "RTX3090", "RTX4090",
                     "RTX5090", "MI300X", "MI325X", "TPU-v5e"):
        assert required in names
    assert any(h.kind == "cpu" for h in hardware_catalog())
    assert find_hardware("a100-80gb").name == find_hardware("A100").name == "A100-80GB"
    assert find_hardware("h100 sxm").name == "H100-SXM"
    # the device's own name, as nvidia-smi and rocm-smi print it (AIConfigurator's tables record "NVIDIA H100 80GB
    # HBM3" for the SXM card): vendor and brand words left out, never a near name's datasheet (the A10G is not the
    # A10, 70 against 125 TFLOP/s; the L4 not the L40)
    for given, entry in (("NVIDIA A10G", "A10G"), ("nvidia-a10g", "A10G"), ("NVIDIA L4", "L4"), ("Tesla T4", "T4"),
                         ("NVIDIA GeForce RTX 4090", "RTX4090"), ("AMD Instinct MI300X", "MI300X"),
                         ("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
                         ("NVIDIA H200 NVL", "H200-NVL"), ("NVIDIA GH200 480GB", "GH200")):
        assert find_hardware(given).name == entry, given
    with pytest.raises(RoofcalcError, match="unknown hardware 'Z9000'; known: T4"):
        find_hardware("Z9000")
    with pytest.raises(RoofcalcError, match="T4 has no bf16 peak"):
        T4.peak("bf16")
    assert find_hardware("RTX4090").peak("fp16") == 165.2e12  # fp32 accumulate, not the 330 headline
    # the A10 is not AWS's A10G: NVIDIA's datasheet gives it 125 dense fp16 TFLOP/s (72 SMs x 1.695 GHz x 1,024)
    assert find_hardware("a10").name == "A10" and find_hardware("A10").peak("fp16") == 125e12
    assert find_hardware("A10G").peak("fp16") == 70e12
    # the H100 NVL, per GPU: 3.9 TB/s and half the datasheet's sparse 1,671 fp16 TFLOP/s
    nvl = find_hardware("H100-NVL")
    assert nvl.bandwidth_bytes_per_s == 3.9e12 and nvl.peak("bf16") == 835.5e12
    # the H200 NVL (a PCIe card, not the SXM H200): the H200's 4.8 TB/s and 141 GB, the H100 NVL's compute (the
    # H200 datasheet: 1,671 sparse fp16 TFLOP/s, half of it dense); its NVLink bridge joins at most 4 cards, so a
    # group of 8 is refused rather than priced at the bridge's rate
    h200_nvl = find_hardware("H200-NVL")
    assert h200_nvl.bandwidth_bytes_per_s == find_hardware("H200").bandwidth_bytes_per_s == 4.8e12
    assert h200_nvl.peak("bf16") == 835.5e12 < find_hardware("H200").peak("bf16")
    assert h200_nvl.gpus_per_node == 4
    from roofcalc.cli import main

    with pytest.raises(RoofcalcError, match="--tp 8 spans more than one node of 4 GPUs"):
        from roofcalc.cli import run_main

        run_main(["TinyLlama/TinyLlama-1.1B", "--hw", "H200-NVL", "--tp", "8"])
    # the export parts: the A100's and H100's memory and compute, NVLink at 400 GB/s (200 a direction)
    for export, full in (("A800-80GB", "A100-80GB"), ("H800", "H100-SXM")):
        e, f = find_hardware(export), find_hardware(full)
        assert (e.bandwidth_bytes_per_s, e.peak_flop_per_s) == (f.bandwidth_bytes_per_s, f.peak_flop_per_s)
        assert e.link_bytes_per_s == 200e9 < f.link_bytes_per_s
    # GeForce parts at their fp32-accumulate rate: the RTX 4080's 76 SMs x 2.505 GHz x 512 = 97.5 TFLOP/s,
    # the RTX 3080's 68 x 1.71 GHz x 512 = 59.5
    assert find_hardware("RTX4080").peak("fp16") == 97.5e12 and find_hardware("RTX3080").peak("fp16") == 59.5e12
    # a professional GA102 runs fp32 accumulate at full rate: the RTX A6000's 84 x 1.8 GHz x 1,024 = 154.8
    assert find_hardware("a6000").peak("fp16") == 154.8e12


def test_units():
    assert parse_quantity("270GB/s", "bandwidth") == 270e9
    assert parse_quantity("2.0TB/s", "bandwidth") == 2e12
    assert parse_quantity("50TFLOP/s", "flops") == 50e12
    assert parse_quantity("3e11B/s", "bandwidth") == 3e11  # base units, written out
    assert parse_quantity("250GiB/s", "bandwidth") == 250 * 2 ** 30
    assert parse_quantity("80GiB", "size") == 80 * 2 ** 30 and parse_quantity("80GB", "size") == 80e9
    assert parse_quantity("0.015s", "time") == pytest.approx(0.015)
    for bare, kind, hint in (("270", "bandwidth", "did you mean 270GB/s"), ("50", "flops", "did you mean 50TFLOP/s"),
                             ("15", "time", "did you mean 15ms"), ("80", "size", "did you mean 80GB or 80GiB"),
                             ("270G", "bandwidth", "did you mean 270GB/s"), ("80G", "size", "did you mean 80GB")):
        with pytest.raises(RoofcalcError, match=hint):
            parse_quantity(bare, kind)
    with pytest.raises(RoofcalcError, match="did you mean 5us"):  # a launch's or a host op's cost: microseconds
        parse_quantity("5", "time", "us")
    assert parse_quantity("80MB", "size") == 80e6  # bytes, written out
    assert parse_quantity("80B", "size", bounded=False) == 80  # an array's size, which its own check bounds
    # outside what a real device or step has (inputs.PLAUSIBLE: 1 ns to a day, 1 kB/s to 1 PB/s, 1 kFLOP/s to
    # 1 EFLOP/s, 1 MB to 1 PB): a slipped unit or exponent, refused with its range, never an overflowing table
    for bad, kind, says in (("1e-300s", "time", "under any real step or kernel time"), ("1e9s", "time", "over any"),
                            ("25.8B/s", "bandwidth", "under any real bandwidth"), ("2700TB/s", "bandwidth", "over"),
                            ("1e-5FLOP/s", "flops", "under any real compute rate"), ("80B", "size", "under any real "
                                                                                         "device memory")):
        with pytest.raises(RoofcalcError, match=says):
            parse_quantity(bad, kind)
    # a lower-case b is a bit: a link's 400 Gb/s is 400 / 8 = 50 GB/s, never read as 400 GB/s
    for bits, says in (("270Gb/s", "270 Gbit/s = 33.75 GB/s"), ("270Gbps", "270 Gbit/s = 33.75 GB/s"),
                       ("400Gbit/s", "400 Gbit/s = 50 GB/s"), ("2.7e11b/s", r"= 3.375e\+10 B/s"),
                       ("250Gib/s", "250 Gibit/s = 31.25 GiB/s")):
        with pytest.raises(RoofcalcError, match=f"in bits .* {says}"):
            parse_quantity(bits, "bandwidth")
    # and a size in bits alike: 8 Gb of memory is 1 GB
    with pytest.raises(RoofcalcError, match="in bits .* 8 Gbit = 1 GB "):
        parse_quantity("8Gb", "size")
    assert parse_quantity("270GBps", "bandwidth") == parse_quantity("270GBytes/s", "bandwidth") == 270e9
    assert parse_quantity("15ms", "time") == pytest.approx(0.015)
    assert parse_quantity("5us", "time") == pytest.approx(5e-6)
    for bad, kind in (("fast", "bandwidth"), ("270GB/h", "bandwidth"), ("-3GB/s", "bandwidth"), ("0", "flops"),
                      ("15 parsecs", "time")):
        with pytest.raises(RoofcalcError):
            parse_quantity(bad, kind)


def test_points_and_kernel_times():
    assert parse_point("matmul 4096:137438953472:100663296:0.00275").intensity == pytest.approx(4096 / 3)
    for bad in ("nocolons", "a:b:c:d", "x:1:1:-1", "x:1:1:-1ms", "x:1:1:5kg", "x:1:1:infms", "x:1e300:1e-300:1",
                "x:1:1:1e-300"):
        with pytest.raises(RoofcalcError):
            parse_point(bad)
    # the time with its unit, as --tpot takes it: 2.75 ms is 0.00275 s; a bare number is seconds, as its name says
    assert parse_point("m:1:1:2.75ms").seconds == parse_point("m:1:1:0.00275").seconds == pytest.approx(0.00275)
    assert parse_point("m:1:1:5 us").seconds == pytest.approx(5e-6)
    step = analyze(TINY, Workload.decode(1, 500))
    # q_proj at 4x its 31.1 us floor on the 270 GB/s roof is flagged (3x its floor: its 2.44 us fixed cost is
    # less); RMSNorm at 100x its floor, 4.6 us, is below its fixed cost (8 eager ops x 1.735 us = 13.9 us):
    # bound by it, not flagged
    q_floor = 8_396_800 / 270e9
    v = place(step, SEED_ROOF, kernel_times={"q_proj": 4 * q_floor, "input_layernorm": 100 * 12_288 / 270e9},
              model=default_model("gpu"))
    by_name = {p.kernel.name: p for p in v.placements}
    assert by_name["q_proj"].flagged and by_name["q_proj"].floor_multiple == pytest.approx(4)
    assert by_name["q_proj"].roof_fraction == pytest.approx(0.25)  # memory-bound: at 4x its floor it gets 1/4 of the roof
    assert not by_name["input_layernorm"].flagged and by_name["input_layernorm"].bound == "fixed"
    with pytest.raises(RoofcalcError, match="kernel times name kernels this model has not: qproj"):
        place(step, SEED_ROOF, kernel_times={"qproj": 1e-5})


def test_profile_round_trip(tmp_path):
    from roofcalc.hardware import Hardware

    hw = Hardware("T4 (measured)", 270e9, {"fp16": 50e12}, launch_overhead_s=6e-6, nominal="T4", source="test")
    save_profile(hw, str(tmp_path / "t4.json"))
    back = load_profile(str(tmp_path / "t4.json"))
    assert back == hw
    sized = Hardware("RTX 4090 (measured)", 9e11, {"bf16": 1.5e14}, nominal="RTX4090", compute_capability=8.9,
                     l2_bytes=72e6, l2="72 MB, the card's")  # every field comes back, the L2 too
    save_profile(sized, str(tmp_path / "4090.json"))
    assert load_profile(str(tmp_path / "4090.json")) == sized
    r = roofline(analyze(TINY, Workload.decode(1, 500)), T4, measured_profile=back)
    assert r.measured.ridge == pytest.approx(185.185, abs=1e-3)
    assert r.model.launch_s.expected == 6e-6  # a schema-1 profile's dispatch is the cost of one launch


# --------------------------------------------------------------------------- the plot


def test_figure_lines_points_and_colours():
    from roofcalc.plotting import AMBER, INDIGO, roofline_figure

    r = roofline(analyze(TINY, Workload.decode(1, 500)), T4, measured_bw=270e9, measured_flops=50e12, tpot_s=0.015,
                 points=(parse_point("matmul 4096:137438953472:100663296:0.00275"), parse_point("x + 1:1e8:4e8:0.0015")))
    fig = roofline_figure(r)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    lines = {ln.get_gid(): ln for ln in ax.get_lines() if ln.get_gid()}
    nominal, measured, ridge = lines["nominal-roof"], lines["measured-roof"], lines["ridge"]
    assert nominal.get_linestyle() == "--" and measured.get_linestyle() == "-"
    assert measured.get_color() == INDIGO
    assert ridge.get_xdata()[0] == pytest.approx(50e12 / 270e9)
    # the measured roof's flat part is 50 TFLOP/s
    assert max(measured.get_ydata()) == pytest.approx(50e12)
    points = [ln for gid, ln in lines.items() if gid.startswith("point-")]
    # 18 kernels, of which embed_tokens and kv_cache_write have no FLOPs, + the step + 2 points = 19
    assert len(points) == 19
    coords = {(round(ln.get_xdata()[0], 3), ln.get_markeredgecolor()) for ln in points}
    assert (round(4096 / 3, 3), AMBER) in coords  # the matmul: right of the ridge
    assert (0.25, INDIGO) in coords  # x + 1: left of it
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("203" in t for t in legend) and any("185" in t for t in legend)
    assert "T4" in fig.get_suptitle() and "TinyLlama" in fig.get_suptitle()


def test_png_and_svg_are_written(tmp_path, capsys):
    png, svg = tmp_path / "r.png", tmp_path / "r.svg"
    assert main(["TinyLlama/TinyLlama-1.1B", "--plot", str(png)]) == 0
    assert main(["TinyLlama/TinyLlama-1.1B", "--plot", str(svg), "--measured-bw", "270GB/s"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert ET.parse(svg).getroot().tag.endswith("svg")


# --------------------------------------------------------------------------- the CLI


def test_cli_shows_both_roofs_and_tpot_verdict(capsys):
    assert main(["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s", "--measured-flops", "50TFLOP/s",
                 "--tpot", "15ms", "--record"]) == 0
    out = capsys.readouterr().out
    assert "ridge 203 FLOP/byte" in out and "ridge 185 FLOP/byte" in out
    # the step moves 2,069,028,864 weight + 3,713,024 activation + 33,769,472 KV bytes: attention reads 500
    # positions x 1,024 bytes in each of 22 layers, and the eager DynamicCache's concatenation reads 499 and
    # writes 500 of them (22 x 1,534,976). 2,106,511,360 B / 15 ms = 140.4 GB/s = 52% of 270 GB/s
    assert "52% of the measured roof" in out
    assert "bandwidth (GB/s)" in out and "84%" in out  # 270 / 320


def test_cli_nominal_roof_is_said(capsys):
    main(["TinyLlama/TinyLlama-1.1B"])
    out = capsys.readouterr().out
    assert "hardware  T4 (default)" in out and "verdicts use the nominal roof" in out


def test_cli_json_has_units_in_keys(capsys, tmp_path):
    times = tmp_path / "times.csv"
    times.write_text("name,seconds\nq_proj,0.0001\n")
    main(["TinyLlama/TinyLlama-1.1B", "--format", "json", "--tpot", "15ms", "--kernel-times", str(times)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["hardware"]["nominal"]["ridge_flop_per_byte"] == pytest.approx(203.125)
    assert doc["step"]["tpot_s"] == pytest.approx(0.015)
    q = next(k for k in doc["kernels"] if k["name"] == "q_proj")
    assert q["measured_s"] == pytest.approx(1e-4) and q["floor_multiple"] == pytest.approx(1e-4 / (8_396_800 / 320e9))
    assert {"t_floor_s", "t_fixed_s", "bound", "launches", "roof_fraction"} <= set(q)


BAD = [
    (["--hw", "Z9000"], "unknown hardware 'Z9000'; known: T4"),
    (["--measured-bw", "fast"], "'fast' is not a bandwidth"),
    (["--measured-bw=-270GB/s"], "is not a bandwidth"),
    (["--measured-bw", "0GB/s"], "must be positive"),
    (["--measured-bw", "270"], "has no unit: did you mean 270GB/s"),
    # a bare time under 1 is likelier seconds (a 38 ms step) than milliseconds (38 us); 38 likelier ms
    (["--tpot", "0.038"], "'0.038' has no unit: did you mean 0.038s?"),
    (["--tpot", "38"], "'38' has no unit: did you mean 38ms? (base units are written out: 38s)"),
    (["--measured-flops", "50TB/s"], "is not a rate"),
    # the exa prefix is read (2 EFLOP/s = 2e18), then refused as over any real rate (1e18 FLOP/s, inputs.PLAUSIBLE)
    (["--measured-flops", "2EFLOP/s"], "'2EFLOP/s' is over any real compute rate"),
    (["--tpot", "15 parsecs"], "is not a time"),
    (["--dtype", "bf16"], "T4 has no bf16 peak"),
    (["--plot", "/nonexistent-dir/r.png"], "does not exist"),
    (["--plot", "r.pdf"], "must end in .png or .svg"),
    (["--point", "oops"], "is not NAME:FLOPS:BYTES:SECONDS"),
    (["--hw-file", "/nonexistent.json"], "cannot read hardware profile"),
]


@pytest.mark.parametrize("args,message", BAD)
def test_cli_bad_roofline_input(args, message, capsys):
    assert main(["TinyLlama/TinyLlama-1.1B", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofcalc: error: ") and err.count("\n") == 1 and message in err, err


def test_cli_kernel_times_naming_unknown_kernels(tmp_path, capsys):
    times = tmp_path / "t.json"
    times.write_text(json.dumps({"q_proj": 1e-4, "flash_attn_fwd": 2e-5}))
    assert main(["TinyLlama/TinyLlama-1.1B", "--kernel-times", str(times)]) == 2
    assert "flash_attn_fwd" in capsys.readouterr().err
    # a serving engine's fused modules (vLLM's qkv_proj, gate_up_proj) are split over the kernels they are here, by
    # the parts' shares of their bytes (each part's bytes from the same JSON)
    times.write_text(json.dumps({"qkv_proj": 1.1e-4, "gate_up_proj": 5.2e-4}))
    assert main(["TinyLlama/TinyLlama-1.1B", "--engine", "vllm", "--kernel-times", str(times), "--format", "json"]) == 0
    ks = {k["name"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    qkv = ks["q_proj"]["bytes"] + ks["k_proj"]["bytes"] + ks["v_proj"]["bytes"]
    assert ks["q_proj"]["measured_s"] == pytest.approx(1.1e-4 * ks["q_proj"]["bytes"] / qkv)
    assert ks["k_proj"]["measured_s"] == pytest.approx(1.1e-4 * ks["k_proj"]["bytes"] / qkv)
    assert ks["gate_proj"]["measured_s"] == ks["up_proj"]["measured_s"] == pytest.approx(5.2e-4 / 2)  # equal shapes
    # a fused module given beside one of its parts: which time is which is not known, refused
    times.write_text(json.dumps({"qkv_proj": 1.1e-4, "q_proj": 5e-5}))
    assert main(["TinyLlama/TinyLlama-1.1B", "--engine", "vllm", "--kernel-times", str(times)]) == 2
    err = capsys.readouterr().err
    assert "qkv_proj is q_proj + k_proj + v_proj here (a fused GEMM" in err and err.count("\n") == 1
    # and the other way: Phi-3's own module is fused (qkv_proj); some of its parts' times given: refused
    times.write_text(json.dumps({"q_proj": 5e-5, "k_proj": 2e-5}))
    assert main(["microsoft/Phi-3-mini-4k-instruct", "--kernel-times", str(times)]) == 2
    assert "q_proj + k_proj + v_proj is qkv_proj here, one kernel given their sum" in capsys.readouterr().err
    # every part: their sum is the fused module's time
    times.write_text(json.dumps({"q_proj": 5e-5, "k_proj": 2e-5, "v_proj": 2e-5}))
    assert main(["microsoft/Phi-3-mini-4k-instruct", "--kernel-times", str(times), "--format", "json"]) == 0
    ks = {k["name"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert ks["qkv_proj"]["measured_s"] == pytest.approx(9e-5)


@pytest.mark.parametrize("text, seconds", [("name,seconds\nq_proj,3.1e-5\n", 3.1e-5), ("q_proj,3.1e-5\n", 3.1e-5),
                                           ("name,us\nq_proj,31\n", 31e-6), ("kernel,time_ms\nq_proj,0.031\n", 31e-6),
                                           ("name,time (ns)\nq_proj,31000\n", 31e-6)])
def test_a_kernel_times_header_names_its_unit(tmp_path, text, seconds):
    """A CSV header's time column gives the unit its times are in: 'name,us' / 'q_proj,31' is 31 µs, not 31 s."""
    from roofcalc.inputs import kernel_times

    path = tmp_path / "t.csv"
    path.write_text(text)
    assert kernel_times(str(path)) == {"q_proj": pytest.approx(seconds, rel=1e-12)}


@pytest.mark.parametrize("text, said", [("name,time\nq_proj,31\n", "'time' names no unit"),
                                        ("q_proj,3e-5\nq_proj,4e-5\n", "'q_proj' is given twice"),
                                        ('{"q_proj": 3e-5, "q_proj": 4e-5}', "'q_proj' is given twice"),
                                        ('{"q_proj": "3e-5"}', 'must be a number of seconds, not "3e-5"'),
                                        ('{"q_proj": {"us": 31}}', 'must be a number of seconds, not {"us": 31}'),
                                        ('{"q_proj": {"a": [{"x": 1}]}}', 'not {"a": [{"x": 1}]}'),
                                        # a CSV whose first name begins with '[' is CSV still: its name is read
                                        ("[q_proj],1e-5\n", "name kernels this model has not: [q_proj]"),
                                        ("[1, 2]", "is not a JSON object of kernel name -> seconds"),
                                        ("q_proj,1e-300\n", "the time for q_proj, 1e-300 s, is outside any real "
                                                             "kernel's (1e-09 to 86400 s)"),
                                        # a profiler's totals over every call (nsys's, the torch profiler's)
                                        ("name,Total Time (ns)\nq_proj,2496000\n", "is a total over every call"),
                                        ("name,Self CUDA total (ms)\nq_proj,2.5\n", "is a total over every call"),
                                        # the unit written in each row, no header
                                        ("q_proj,78us\no_proj,78us\n", "a time's unit goes in a header row"),
                                        # the columns swapped
                                        ("us,name\n78,q_proj\n", "the columns are the kernel's name, then its time"),
                                        ("q_proj,78 seconds\n", "a time's unit goes in a header row"),
                                        ("q_proj,30\u03bcs\n", "a time's unit goes in a header row")])
def test_ambiguous_kernel_times_are_refused(tmp_path, capsys, text, said):
    """A time column whose name gives no unit, a kernel given twice (which time was meant?) and a time given as a
    string: one line, exit 2, never a guess."""
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert main(["TinyLlama/TinyLlama-1.1B", "--kernel-times", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and said in err, err


def test_cli_hardware_lists_ridges(capsys):
    assert main(["hardware"]) == 0
    out = capsys.readouterr().out
    assert "T4" in out and "203 (fp16)" in out and "H100-SXM" in out


# ---- the predictive step model (predict.py)

def test_ideal_model_predicts_the_floors_exactly():
    from roofcalc.predict import ideal

    for wl in (Workload.decode(1, 500), Workload.decode(64, 2048), Workload.prefill(2, 512)):
        for impl in ("hf-eager", "fused", "cuda-graph"):
            v = place(analyze(TINY, wl), SEED_ROOF, impl=impl, model=ideal())
            assert v.predicted_s == v.predicted_lower_s == v.predicted_upper_s == v.sum_floor_s


def test_expected_time_is_the_floor_over_the_class_efficiency():
    from roofcalc.predict import Efficiency, KernelModel

    def e(x):
        return Efficiency(x, x / 2)

    m = KernelModel({"gemv": e(0.5), "gemm": e(0.8), "attention": e(0.25), "attention_compute": e(0.6),
                     "stream": e(0.9)}, {"int8": e(0.75), "int4": e(0.5)}, Efficiency(20e-6, 40e-6),
                    Efficiency(5e-6, 10e-6), overlap=True)
    v = place(analyze(TINY, Workload.decode(1, 500)), SEED_ROOF, impl="hf-eager", model=m)  # eager ops' bytes
    q = {p.kernel.name: p for p in v.placements}
    # q_proj at batch 1 is memory-bound: 8,396,800 B / 270 GB/s / 0.5
    assert q["q_proj"].t_expected_s == pytest.approx(8_396_800 / 270e9 / 0.5)
    assert q["input_layernorm"].t_expected_s == pytest.approx(77_824 / 270e9 / 0.9)  # 8 eager ops: 36 B a value
    assert q["attention"].efficiency_class == "attention" and q["attention"].efficiency == 0.25
    # host: 890 eager ops x 20 us = 17.8 ms; the device part is far less at batch 1, and they overlap
    t = v.times
    assert t.host_s == pytest.approx(890 * 20e-6)
    assert t.device_s == pytest.approx(sum(p.t_expected_s * p.kernel.count for p in v.placements))
    assert v.predicted_s == pytest.approx(max(t.device_s, 890 * 20e-6)) and v.bound == "host"
    assert v.predicted_upper_s == pytest.approx(max(t.device_upper_s, 890 * 40e-6))
    # no overlap (a CPU): device + host
    from dataclasses import replace

    cpu = place(analyze(TINY, Workload.decode(1, 500)), SEED_ROOF, impl="hf-eager", model=replace(m, overlap=False))
    assert cpu.predicted_s == pytest.approx(t.device_s + t.host_s)
    # cuda-graph: one replay of 5 us; then the kernels bound the step
    g = place(analyze(TINY, Workload.decode(1, 500)), SEED_ROOF, impl="cuda-graph", model=m)
    assert g.times.host_s == 5e-6 and g.bound == "memory"
    # int4 weights: the linear GEMVs stream at 0.5 x 0.5 of the roof; lm_head stays 16-bit
    w4 = place(analyze(TINY, Workload.decode(1, 500, weight_dtype=dtype("int4"))), SEED_ROOF, model=m)
    w4k = {p.kernel.name: p for p in w4.placements}
    assert w4k["q_proj"].efficiency == 0.25 and w4k["lm_head"].efficiency == 0.5


def test_defaults_move_onto_a_measured_roof():
    from roofcalc.predict import GPU_DEFAULTS, default_model

    m = default_model("gpu").on_roof(270 / 320, 50 / 65)
    # a GEMV at 68.5% of the datasheet 320 GB/s is 0.685 / (270/320) = 81.2% of a measured 270 GB/s
    assert m.classes["gemv"].expected == pytest.approx(0.685 * 320 / 270)
    assert m.classes["gemm"].expected == pytest.approx(min(1.0, 0.811 * 65 / 50))
    assert all(e.note for e in GPU_DEFAULTS.values())  # every default names its source


def test_fp8_gemms_are_read_at_their_depth_and_rows_from_deepgemms_table():
    import math

    from roofcalc.calculator import AttentionSizes, MatmulSizes, linear
    from roofcalc.predict import default_model, efficiencies

    m = default_model("gpu").for_compute("fp8")
    # DeepGEMM README, H800, M = 4096: K = 7168 -> 1058 and 1304 TFLOP/s (mean 1181) of 1979
    assert efficiencies(m, "matmul", 4096, depth=7168)[0] == pytest.approx(1181 / 1979)
    assert efficiencies(m, "matmul", 4096, depth=512)[0] == pytest.approx(590 / 1979)  # K = 512 row
    assert efficiencies(m, "matmul", 4096, depth=256)[0] == pytest.approx(590 / 1979)  # flat beyond the ends
    # K = 4096 lies between 2048 (1025) and 7168 (1181) at log(2) / log(3.5) = 0.5533 of the way
    t = math.log(2) / math.log(3.5)
    assert efficiencies(m, "matmul", 4096, depth=4096)[0] == pytest.approx((1025 + t * (1181 - 1025)) / 1979)
    # M = 128, pessimistic: the CUTLASS baseline, 1073.6 at K = 7168 and M = 4096, times its
    # M = 128 median over its M = 4096 median, 283.3 / 975.9
    assert efficiencies(m, "matmul", 128, pessimistic=True, depth=7168)[0] == pytest.approx(
        1073.6 / 1979 * 283.3 / 975.9)
    # 16-bit GEMMs have no depth factor (the source is FP8 only); a depth of 0 (unknown) is none either
    m16 = default_model("gpu")
    assert efficiencies(m16, "matmul", 4096, depth=512) == efficiencies(m16, "matmul", 4096, depth=0)
    assert efficiencies(m, "matmul", 4096, depth=0)[0] == pytest.approx(1181 / 1979)
    # K is the reduction depth the kernel carries as an integer; its display string is derived from it
    k = linear("q_a_proj", 7168, 1536, TINY, Workload.decode(4, 10))
    assert (k.rows, k.depth, k.dims) == (4, 7168, "[4,7168]x[7168,1536]")
    assert k.sizes == MatmulSizes(m=4, n=1536, k=7168)
    attn = analyze(TINY, Workload.decode(4, 500)).kernel("attention")
    assert (attn.rows, attn.depth) == (1, 0)
    assert attn.sizes == AttentionSizes(batch=4, heads=32, kv_heads=4, q_len=1, kv_len=500, head_dim=64, context=500)


def test_decode_attention_is_read_at_the_kv_bytes_it_streams():
    """flash-attention issue #1572, batch decode of 16 x 32 heads of 128 (fp16): FlashInfer reads 524,288,000
    bytes in 164.4 us (3190 of the H20's 4000 GB/s) and 1,048,576,000 in 321.4 us (0.8156); 33,554,432 in
    18.79 us (0.4464). FA3 on an H100, the pessimistic end: 1796 and 1849 of 3350 GB/s."""
    import math

    from roofcalc.predict import Efficiency, KernelModel, default_model, efficiencies

    m = default_model("gpu")
    assert efficiencies(m, "attention", 1, weight_bytes=524_288_000)[1] == pytest.approx(3190 / 4000)
    assert efficiencies(m, "attention", 1, weight_bytes=33_554_432)[1] == pytest.approx(0.4464)
    assert efficiencies(m, "attention", 1, weight_bytes=1 << 20)[1] == pytest.approx(0.4464)  # flat below
    mid = math.sqrt(524_288_000 * 1_048_576_000)  # halfway in log bytes
    assert efficiencies(m, "attention", 1, weight_bytes=mid)[1] == pytest.approx((0.7975 + 0.8156) / 2)
    assert efficiencies(m, "attention", 1, pessimistic=True, weight_bytes=1_048_576_000)[1] == \
        pytest.approx(1849 / 3350)
    # a model of its own (a measured profile's, or one built by hand) has no size factors
    one = Efficiency(0.5, 0.5)
    mine = KernelModel({c: one for c in ("gemv", "gemm", "attention", "attention_compute", "stream")}, {}, one, one,
                       overlap=True)
    assert efficiencies(mine, "attention", 1, weight_bytes=33_554_432)[1] == 0.5


def test_a_measured_matmul_curve_is_read_in_log_rows_and_log_weight_bytes():
    from roofcalc.predict import curve_at

    curve = ((1.0, 1e6, 0.2), (100.0, 1e6, 0.6), (1.0, 1e8, 0.6), (100.0, 1e8, 0.9))
    assert curve_at(curve, 1, 1e6) == pytest.approx(0.2)
    assert curve_at(curve, 10, 1e6) == pytest.approx(0.4)  # halfway in log rows: (0.2 + 0.6) / 2
    assert curve_at(curve, 10, 1e7) == pytest.approx((0.4 + 0.75) / 2)  # and halfway in log bytes
    assert curve_at(curve, 1e4, 1e9) == pytest.approx(0.9) and curve_at(curve, 1, 1) == pytest.approx(0.2)  # flat ends
    import numpy as np

    grid = curve_at(curve, np.array([[1.0], [10.0]]), np.array([[1e6, 1e7]]))
    assert grid == pytest.approx(np.array([[0.2, 0.4], [0.4, 0.575]]))


def test_labels_and_anomalies_come_from_what_was_measured(tmp_path, capsys):
    # kv_cache_write measured at 14 ms per instance: its floor (the concatenated cache, 1,024,000 B / 270 GB/s)
    # is 3.79 us, its fixed cost 2 launches x 1.735 us = 3.47 us: 3,690x the larger. Flagged, and listed
    # first (22 x 14 ms = 308 ms lost a step). q_proj at 1.2x its floor is not.
    q_floor = 8_396_800 / 270e9
    times = tmp_path / "t.json"
    times.write_text(json.dumps({"kv_cache_write": 14e-3, "q_proj": 1.2 * q_floor, "input_layernorm": 8e-6}))
    assert main(["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s", "--kernel-times", str(times), "--wide"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("kv_cache_write"))
    assert row.rstrip().endswith("above 3x its floor")
    q = next(line for line in out.splitlines() if line.startswith("q_proj"))
    assert "above 3x" not in q
    first = next(line for line in out.splitlines() if line.startswith("anomalies "))
    assert first.startswith("anomalies kv_cache_write: +308 ms a step")
    # input_layernorm: 8 us against its fixed cost of 8 eager ops x 1.735 us = 13.9 us: not flagged, and its
    # bound is its fixed cost
    norm = next(line for line in out.splitlines() if line.startswith("input_layernorm"))
    assert norm.split()[-1] != "floor" and " fixed " in norm


def test_consumer_gpus_reach_their_gemm_peak_by_default():
    from roofcalc.roofline import kernel_model, roofs

    def gemm(name):
        hw = find_hardware(name)
        nominal, _ = roofs(hw, "fp16")
        return kernel_model(hw, nominal, None).classes["gemm"].expected

    # GeForce: RTX 4090 torch matmuls at 165-168 of 165.2 TFLOP/s; datacenter parts: the MAMF median 81.1 %
    assert gemm("RTX4090") == 1.0 and gemm("RTX3090") == 1.0 and gemm("A100") == 0.811 and gemm("T4") == 0.811


def test_catalog_memory_is_the_cards_capacity_in_its_own_unit():
    """Each entry's capacity equals its datasheet's figure read as binary GB (JEDEC's memory GB):
    an A100 '80GB' card holds 80 GiB = 85,899,345,920 bytes (nvidia-smi: 81,920 MiB)."""
    import re

    from roofcalc.hardware import CATALOG_PATH

    entries = json.loads(CATALOG_PATH.read_text())["hardware"]
    by_name = {hw.name: hw for hw in hardware_catalog()}
    for e in entries:
        quoted = re.match(r"(?:12 channels x one )?([\d,]+) Gi?B", e["memory_datasheet"])
        count = 12 if e["memory_datasheet"].startswith("12 channels") else 1
        assert quoted, e["name"]
        assert by_name[e["name"]].memory_bytes == count * int(quoted[1].replace(",", "")) * 2 ** 30, e["name"]
        assert e["memory"].endswith("GiB") and "memory_bytes" not in e
    assert find_hardware("A100-80GB").memory_bytes == 85_899_345_920


def test_fp8_weights_run_on_devices_without_fp8_gemms_as_engines_run_them():
    """vLLM's FP8 docs: FP8 GEMMs need compute capability >= 8.9; from 7.5 (Turing) FP8 checkpoints run as
    weight-only W8A16 (FP8 Marlin). Below that (a V100, 7.0; a CPU) the weights are dequantized at load."""
    from roofcalc.roofline import weights_on_device

    fp8, bf16 = dtype("fp8-t"), dtype("bf16")
    for hw, kept in (("H100", "fp8"), ("L4", "fp8")):  # FP8 tensor cores: the GEMMs compute in fp8
        w, why = weights_on_device(fp8, bf16, find_hardware(hw))
        assert w == fp8 and w.computes == kept and why == ""
    for hw, act in (("T4", "fp16"), ("A100", "bf16")):  # 7.5 and 8.0: FP8 weights, 16-bit compute
        w, why = weights_on_device(fp8, bf16, find_hardware(hw))
        assert (w.name, w.bits, w.computes) == ("fp8-t", 8, "") and "weight-only" in why and act in why
        wl = Workload.decode(1, 500, weight_dtype=w, act_dtype=dtype(act), kv_dtype=dtype(act))
        assert wl.compute_dtype.name == act  # the GEMMs compute in the activation dtype
        # Llama-2-7B's q_proj: 4096 x 4096 weights at one byte each, plus one 4-byte scale a matrix
        q = analyze(load_shape("meta-llama/Llama-2-7b-hf"), wl).kernel("q_proj")
        assert q.cost.weight_bytes == 4096 * 4096 + 4
    for hw in ("V100", "EPYC-9654"):
        w, why = weights_on_device(fp8, bf16, find_hardware(hw))
        assert w.bits == 16 and not w.scaled and "dequantized" in why


def test_one_kernel_term_on_scalars_and_numpy_arrays():
    """kernel_term is the single step's and the grid's one rule: given a kernel's costs as numpy arrays
    (one element per workload) it says, element by element, exactly what each workload's own scalar
    term says. Llama-2-70B on --tp 4 of H100s (450 GB/s a direction of NVLink 4, 3.35 TB/s HBM3, the
    catalog's datasheet figures) runs matmuls, attention and all-reduces."""
    import numpy as np

    from roofcalc.calculator import Cost
    from roofcalc.parallel import Parallel, analyze_parallel, link_bytes
    from roofcalc.roofline import kernel_term, roofs

    shape, roof = load_shape("meta-llama/Llama-2-70b-hf"), roofs(find_hardware("H100"), "fp16")[0]
    steps = [analyze_parallel(shape, Workload.decode(b, s), Parallel(4)).kernels for b, s in ((1, 100), (64, 1000),
                                                                                            (8, 4000))]
    assert {k.kind for k in steps[0]} == {"matmul", "attention", "collective", "elementwise", "memory"}
    for kernels in zip(*steps):
        k = kernels[0]
        assert len({x.name for x in kernels}) == 1
        cost = Cost(**{f: np.array([getattr(x.cost, f) for x in kernels]) for f in
                       ("flops", "weight_bytes", "act_read_bytes", "act_write_bytes", "kv_read_bytes",
                        "kv_write_bytes")})
        message = np.array([x.message_bytes for x in kernels])
        grid = kernel_term(k, roof, 1, count=k.count, cost=cost, rows=np.array([x.rows for x in kernels]),
                           message=message, link=link_bytes(k.role, message, k.group) if k.group else None)
        for j, x in enumerate(kernels):
            one = kernel_term(x, roof, 1)
            assert (one.count, one.kind, one.depth, one.hop, one.collective) == \
                (grid.count, grid.kind, grid.depth, grid.hop, grid.collective), x.name
            for f in ("t_compute_s", "t_memory_s", "rows", "size_bytes"):
                assert np.broadcast_to(getattr(grid, f), (3,))[j] == getattr(one, f), (x.name, f)
    # by hand: at batch 64 an all-reduce of 64 x 8192 x 2 = 1,048,576 bytes reads and writes 2,097,152 bytes of
    # HBM (0.63 us at 3.35 TB/s) and sends 2 x 3/4 of its message, 1,572,864 bytes, over NVLink: 3.50 us
    ar = next(x for x in steps[1] if x.role == "all_reduce")
    t = kernel_term(ar, roof, 1)
    assert t.t_memory_s == 1_572_864 / 450e9 and t.size_bytes == 1_048_576
    assert (t.hop, t.collective, t.t_compute_s) == ("link", ("all_reduce", 4), 0.0)  # it counts no FLOPs
    # and a matmul: q_proj at batch 64 on one rank, 64 x 8192 x 2048 (8192 / 4 columns): 2·64·8192·2048 FLOPs at
    # 989.4 TFLOP/s dense fp16; its weight, 8192 x 2048 x 2 bytes, the size its efficiency is read at
    q = next(x for x in steps[1] if x.name == "q_proj")
    t = kernel_term(q, roof, 1)
    assert t.t_compute_s == 2 * 64 * 8192 * 2048 / 989.4e12 and (t.rows, t.depth, t.size_bytes) == (64, 8192,
                                                                                                    8192 * 2048 * 2)


def test_fused_qkv_and_gate_up_run_as_one_gemm_each():
    """Under a fused launch model k_proj and v_proj ride on q_proj's launch and up_proj on gate_proj's
    (roofline.FUSED_RIDERS): one GEMM each, of the summed widths N, as vLLM's QKVParallelLinear and
    MergedColumnParallelLinear run them. Llama-3-8B on H100 SXM at batch 1 (fitted GEMMs): q/k/v is one GEMM of
    N = 4096 + 1024 + 1024 = 6144 over K = 4096; the three add up to that GEMM's time on their summed FLOPs and
    bytes (kernel_terms at N = 6144, one launch), each its share by floors; under hf-eager they stay three."""
    from roofcalc.hardware import find_hardware
    from roofcalc.predict import kernel_terms
    from roofcalc.roofline import roofline

    shape = load_shape("meta-llama/Meta-Llama-3-8B")
    step = analyze(shape, Workload.decode(1, 1000))
    fused = {p.kernel.name: p for p in roofline(step, find_hardware("H100-SXM"), impl="cuda-graph").step.placements}
    q, k, v, gate, up = (fused[n] for n in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"))
    assert (q.kernel.width, k.kernel.width, v.kernel.width, q.kernel.depth) == (4096, 1024, 1024, 4096)
    sc = sum(p.t_compute_s for p in (q, k, v))
    sm = sum(p.t_memory_s for p in (q, k, v))
    work, fixed, _ = kernel_terms(q.model, sc, sm, "matmul", 1, depth=4096, launches=1, width=6144)
    assert q.t_expected_s + k.t_expected_s + v.t_expected_s == pytest.approx(work + fixed)
    floors = q.t_floor_s + k.t_floor_s + v.t_floor_s
    assert k.t_expected_s == pytest.approx((work + fixed) * k.t_floor_s / floors)
    assert gate.t_expected_s == pytest.approx(up.t_expected_s)  # one GEMM of 2 x 14336, halves of equal floors
    eager = {p.kernel.name: p for p in roofline(step, find_hardware("H100-SXM"), impl="hf-eager").step.placements}
    alone = kernel_terms(q.model, k.t_compute_s, k.t_memory_s, "matmul", 1, depth=4096, launches=1, width=1024)
    assert eager["k_proj"].t_expected_s == pytest.approx(sum(alone[:2]))


def test_a_profiles_memory_needs_its_unit_and_the_refusal_names_the_file(tmp_path):
    """A hardware file's "memory": "80" is not 80 bytes: it is refused, naming the file and the field."""
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"name": "mine", "kind": "gpu", "memory": "80", "bandwidth_bytes_per_s": 2e12,
                                "peak_flop_per_s": {"fp16": 3e14}}))
    with pytest.raises(RoofcalcError, match=r"mine\.json: memory: '80' has no unit: did you mean 80GB or 80GiB"):
        load_profile(str(path))
    path.write_text(json.dumps({"name": "mine", "kind": "gpu", "memory": "80GiB", "bandwidth_bytes_per_s": 2e12,
                                "peak_flop_per_s": {"fp16": 3e14}}))
    assert load_profile(str(path)).memory_bytes == 80 * 2 ** 30


def test_kernels_that_lose_the_same_time_are_listed_in_order():
    """Two measured kernels over their expected time by the same amount (a profile's rounded times often tie):
    the anomaly lines list both, the first in the step's order first, where sorting the pairs had compared the
    kernels themselves and raised TypeError. Each here: 30 us measured against 20 expected, once a step, so
    +0.01 ms; a third at 25 us loses 0.005 ms and comes last."""
    from types import SimpleNamespace

    from roofcalc.report import anomaly_lines

    def placement(name, measured_s):
        return SimpleNamespace(measured_s=measured_s, t_expected_s=20e-6, t_as_timed_s=20e-6, dispatch_s=0.0,
                               kernel=SimpleNamespace(name=name, count=1), floor_multiple=3.0, flagged=False)

    r = SimpleNamespace(step=SimpleNamespace(placements=[placement("a", 30e-6), placement("b", 30e-6),
                                                          placement("c", 25e-6), placement("d", 21e-6)]))
    names = [line.replace("anomalies ", "").split(":")[0].strip() for line in anomaly_lines(r, n=4)]
    # d, 21 us against 20, is within the timers' noise (ANOMALY_OVER, 10 %): no anomaly, though four are asked for
    assert names == ["a", "b", "c"]


def test_a_step_and_its_roofline_print_in_one_line():
    """A notebook cell or a log line holding a roofline prints one line (its placements carry the whole kernel
    model each: a quarter of a megabyte in full), with the predicted step, its range and its bound as the report
    gives them."""
    from roofcalc import Workload, analyze, load_shape
    from roofcalc.roofline import roofline

    r = roofline(analyze(load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode(1, 500)), "T4")
    text = repr(r)
    assert "\n" not in text and len(text) < 300 and len(repr(r.step.placements[0])) < 3000
    st = r.step
    assert (f"predicted {st.predicted_s * 1e3:.4g} ms [{st.predicted_lower_s * 1e3:.4g}, "
            f"{st.predicted_upper_s * 1e3:.4g}], {st.bound}-bound, {len(st.placements)} kernels placed") in text


def test_library_calls_on_the_wrong_object_say_what_they_take():
    """render of an Analysis (counts, no roof), roofline_figure of a sweep, a sweep of neither contexts nor prompts:
    one RoofcalcError each, saying what the call takes, never an AttributeError."""
    from roofcalc.plotting import roofline_figure
    from roofcalc.report import render
    from roofcalc.sweep import sweep

    a = analyze(TINY, Workload.decode(1, 500))
    with pytest.raises(RoofcalcError, match="render takes a Roofline"):
        render(a)
    sw = sweep(TINY, "T4", batches=(1, 2), contexts=(500,))  # a catalog name, as roofline() takes it
    with pytest.raises(RoofcalcError, match="drawn by sweep_figure"):
        roofline_figure(sw)
    with pytest.raises(RoofcalcError, match="contexts \\(decode\\) or prompts \\(prefill, request\\): give one"):
        sweep(TINY, "T4", batches=(1, 2))
    # a keyword neither the sweep's nor a Workload's is named (engine is the sweep's: a preset, as --engine)
    with pytest.raises(RoofcalcError, match="sweep: no keyword engines; it takes the workload's .* and engine"):
        sweep(TINY, "T4", batches=(1, 2), contexts=(500,), engines="vllm")


def test_library_inputs_of_the_wrong_kind_are_refused_in_one_line():
    """Every library entry point refuses what it does not take with a RoofcalcError saying what it takes: a model
    name or a shape where an Analysis goes, a Workload that is a string, kernel times as a list, a measured point
    of no bytes or negative FLOPs (no place on a roofline, as --point refuses it), and a plot of the wrong kind
    points to the call that makes the right one."""
    from roofcalc import to_pandas, to_record
    from roofcalc.plotting import roofline_figure, save_plot, sweep_figure
    from roofcalc.roofline import Point, roofline
    from roofcalc.sweep import sweep

    a = analyze(TINY, Workload.decode(1, 500))
    for call, words in ((lambda: analyze("llama-2-7b", Workload.decode()), "analyze takes a ModelShape "
                         "\\(roofcalc.load_shape\\(name\\) reads one\\), got str"),
                        (lambda: analyze(TINY, "decode"), "analyze takes a Workload"),
                        (lambda: roofline(TINY, "T4"), "roofline takes an Analysis"),
                        (lambda: to_record(TINY), "to_record takes an Analysis"),
                        (lambda: to_pandas({}), "to_pandas takes an Analysis"),
                        (lambda: roofline(a, "T4", kernel_times=[("q_proj", 4e-5)]), "kernel_times is a mapping"),
                        (lambda: roofline(a, "T4", points=(Point("z", 1e9, 0, 1e-3),)),
                         "point 'z': bytes must be a finite number above 0"),
                        (lambda: roofline(a, "T4", points=(Point("neg", -1, 1e8, 2.75e-3),)),
                         "point 'neg': FLOPs must be a finite number above 0"),
                        (lambda: roofline_figure(a), "roofcalc.roofline.roofline\\(analysis, hardware\\) places it"),
                        (lambda: sweep_figure(roofline(a, "T4")), "drawn by roofline_figure or save_plot"),
                        (lambda: save_plot(a, "x.png"), "has no roof yet")):
        with pytest.raises(RoofcalcError, match=words):
            call()
    sw = sweep(TINY, "T4", batches=(1, 2), contexts=(500,))
    with pytest.raises(RoofcalcError, match="a sweep's is roofcalc.report.sweep_record"):
        to_record(sw)


def test_library_figures_in_base_units_are_held_to_the_command_lines_ranges():
    """measured_bw, measured_flops and capacity_bytes are in base units: 270 (a figure in GB/s given bare) is
    270 B/s, under the 1 kB/s no device reaches, and refused as --measured-bw 270 is, saying the unit; a numpy
    scalar (a DataFrame's cell) is a number; a roof above its datasheet (900 GB/s against the T4's 320: 281 %) is
    warned of in render's lines and in to_record's ``warnings``, as the command line's JSON lists it."""
    import numpy as np

    from roofcalc import to_record
    from roofcalc.report import render
    from roofcalc.roofline import roofline

    a = analyze(TINY, Workload.decode(1, 500))
    with pytest.raises(RoofcalcError, match="measured_bw must be .* got 270 \\(in bytes a second: 270e9 for 270 GB/s"):
        roofline(a, "T4", measured_bw=270)
    with pytest.raises(RoofcalcError, match="capacity_bytes must be .* \\(in bytes: 16e9 for 16 GB\\)"):
        roofline(a, "T4", capacity_bytes=80)
    r = roofline(a, "T4", measured_flops=np.float32(50e12), tpot_s=np.float32(0.015),
                 capacity_bytes=np.int64(16_000_000_000), kernel_times={"q_proj": np.float32(4e-5)})
    # (float32 holds 50e12 as 50,000,000,188,416: a Python float of that value, not a float32, flows on)
    assert type(r.measured.peak_flop_per_s) is float and r.measured.peak_flop_per_s == 50_000_000_188_416
    assert r.capacity_bytes == 16e9
    assert to_record(r)["warnings"] == []  # 50 of 65 TFLOP/s: nothing to warn of
    over = roofline(a, "T4", measured_bw=900e9)
    words = "the measured bandwidth, 900 GB/s, is 281% of T4's datasheet 320 GB/s"
    assert any(w.startswith(words) for w in to_record(over)["warnings"])
    assert words in " ".join(render(over).split())


def test_a_figure_leaves_the_sessions_matplotlib_backend_as_it_was():
    """A notebook's inline backend stays its own after roofcalc draws: the figures are built with matplotlib's
    object API (Figure, an Agg canvas of their own), never matplotlib.use."""
    matplotlib = pytest.importorskip("matplotlib")
    from roofcalc.plotting import roofline_figure, sweep_figure
    from roofcalc.roofline import roofline
    from roofcalc.sweep import sweep

    before = matplotlib.get_backend()
    matplotlib.use("svg")  # any backend other than Agg stands in for the notebook's
    try:
        roofline_figure(roofline(analyze(TINY, Workload.decode(1, 500)), "T4"))
        sweep_figure(sweep(TINY, "T4", batches=(1, 2), contexts=(500,)))
        assert matplotlib.get_backend() == "svg"
    finally:
        matplotlib.use(before)


def test_a_cpu_kernels_error_is_against_its_expected_time_with_its_ops_dispatch():
    """On a CPU the profiler times each eager op with its dispatch, which the step model puts in the host part
    (host and device in series): a kernel's error and its anomaly line compare the measured time with its expected
    time plus its ops' dispatch (launches x the host's time per op), as the flag rule does. TinyLlama's RMSNorm in
    fp32, 6 eager ops (its casts are no-ops: roofline.HF_EAGER): measured at exactly that sum, its error is 0 and
    it is no anomaly."""
    from roofcalc.report import anomaly_lines
    from roofcalc.roofline import roofline

    a = analyze(TINY, Workload.decode(1, 500, eager_ops=True, cache_update="concat", weight_dtype="fp32",
                                      act_dtype="fp32", kv_dtype="fp32"))
    first = roofline(a, "EPYC-9654")
    p = next(x for x in first.step.placements if x.kernel.name == "input_layernorm")
    assert p.launches == 6 and p.dispatch_s > 0 and p.dispatch_s == pytest.approx(6 * first.model.host_per_op_s.expected)
    assert p.t_as_timed_s == pytest.approx(p.t_expected_s + p.dispatch_s)
    r = roofline(a, "EPYC-9654", kernel_times={"input_layernorm": p.t_as_timed_s})
    q = next(x for x in r.step.placements if x.kernel.name == "input_layernorm")
    assert q.error == pytest.approx(0.0, abs=1e-12) and anomaly_lines(r) == []
    gpu = next(x for x in roofline(a, "A100-80GB").step.placements if x.kernel.name == "input_layernorm")
    assert gpu.dispatch_s == 0 and gpu.t_as_timed_s == gpu.t_expected_s  # a GPU's host overlaps: nothing added


def test_a_micro_sign_is_a_microsecond_and_a_kernel_under_its_floor_is_flagged_so(tmp_path, capsys):
    """--tpot 38µs (a micro sign, or a Greek mu) is 38us; a kernel measured under 0.9x its floor says so in the
    table's flag column, as the faster line does: TinyLlama's q_proj reads 8,396,800 bytes, 26.2 us at the T4's
    320 GB/s, so 1 us is under it."""
    from roofcalc.inputs import parse_quantity

    assert parse_quantity("38µs", "time") == parse_quantity("38\u03bcs", "time") == pytest.approx(38e-6)
    mu, micro = parse_point("mm:1e12:4e8:38\u03bcs"), parse_point("mm:1e12:4e8:38\u00b5s")
    assert mu.seconds == micro.seconds == parse_point("mm:1e12:4e8:38us").seconds == pytest.approx(38e-6)
    header = tmp_path / "mu.csv"
    header.write_text("name,\u03bcs\nq_proj,31\n")  # a Greek mu in the header, as a micro sign
    assert main(["TinyLlama/TinyLlama-1.1B", "--kernel-times", str(header), "-f", "json"]) == 0
    assert next(k for k in json.loads(capsys.readouterr().out)["kernels"] if k["name"] == "q_proj")["measured_s"] \
        == pytest.approx(31e-6)
    times = tmp_path / "t.csv"
    times.write_text("name,us\nq_proj,1\n")
    assert main(["TinyLlama/TinyLlama-1.1B", "--kernel-times", str(times), "--wide"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("q_proj "))
    assert row.rstrip().endswith("under 0.9x its floor")


def test_a_library_workload_that_leaves_out_the_checkpoints_format_says_so():
    """The library's Workload defaults to 16 bits; a checkpoint that declares its own format (DeepSeek-V3's fp8 in
    128 x 128 blocks) counted so is said to be in the report's size line, naming how to count the checkpoint's;
    a workload that counts it says nothing of the kind."""
    from roofcalc import Workload, analyze, load_shape, render

    shape = load_shape("deepseek-v3")
    text = " ".join(render(roofline(analyze(shape, Workload.decode()), "H100")).split())
    assert "bytes of weights (fp16; the checkpoint's quantization_config declares fp8-b128, which this workload " \
           "does not count: Workload(weight_dtype='fp8-b128') or --weight-dtype fp8-b128 does)" in text
    text = " ".join(render(roofline(analyze(shape, Workload.decode(weight_dtype="fp8-b128")), "H100")).split())
    assert "declares" not in text and "(fp8-b128 (the checkpoint's quantization_config))" in text
