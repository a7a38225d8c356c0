"""The fitted gated-delta-net calls (predict.GdnFit, data/kernel_fits.json's "gdn", fitted by
benchmarks/fit_kernels.py on AIConfigurator 0.12's linear_attention/gdn_perf tables): the counts the fit reads each
measured row with are the trace's own (the oracle: roofcalc's trace of transformers' torch code), and a traced
Qwen3-Next layer's four calls take their fitted form, read here by hand from the shipped knots."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from roofcalc import Workload  # noqa: E402
from roofcalc.fitting import gdn_counts  # noqa: E402
from roofcalc.predict import GDN_CLASSES, GdnFit, engine_fits, gdn_class, gdn_items, kernel_fits  # noqa: E402
from roofcalc.trace import trace  # noqa: E402

# a small Qwen3-Next at the measured tables' head dims (128) and conv (4): 2 key and 4 value heads
GDN = dict(model_type="qwen3_next", hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512,
           vocab_size=1000, pad_token_id=0, num_key_value_heads=2, head_dim=32, num_experts=4, num_experts_per_tok=2,
           moe_intermediate_size=128, shared_expert_intermediate_size=256, linear_conv_kernel_dim=4,
           full_attention_interval=2, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=128,
           linear_value_head_dim=128)


def _calls(wl) -> dict:
    a = trace(GDN, "t", wl, view="ideal", use_cache=False)
    return {gdn_class(k.name): k for k in a.kernels if gdn_class(k.name)}


@pytest.mark.parametrize("b,s", [(1, 1), (3, 1), (1, 64), (2, 100), (1, 300)])
def test_the_fit_counts_each_measured_call_as_the_trace_counts_it(b, s):
    """gdn_counts (what the fit reads each table row's FLOPs and bytes as) equals the trace's count of the same call,
    decode (s = 1) and prefill (a prompt of 64, 100 padded to two chunks, 300 to five); and the call's parallel work
    read from its bytes (gdn_items) is its b x 4 (sequence, value head) pairs, the conv's b x C / 128 (C = 2 x 2 x
    128 + 4 x 128 = 1,024 channels: 8 heads of 128)."""
    calls = _calls(Workload.decode(b, 50) if s == 1 else Workload.prefill(b, s))
    assert set(calls) == ({"gdn_decode", "gdn_conv_update"} if s == 1 else {"gdn_prefill", "gdn_conv"})
    for cls, k in calls.items():
        flops, nbytes = gdn_counts(cls, b, s, 2, 4)
        assert (flops, nbytes) == (k.cost.flops, k.cost.bytes), cls
        assert gdn_items(cls, k.cost.bytes, b, s) == pytest.approx(b * (4 if cls in ("gdn_decode", "gdn_prefill")
                                                                        else 8))
    with pytest.raises(ValueError, match="head dims 128"):
        gdn_counts("gdn_decode", 1, 1, 2, 4, dk=64)


def _geo(x, pts):
    """A knot curve read by hand: log e linear in log x between knots, flat beyond them."""
    pts = sorted(pts)
    if x <= pts[0][0]:
        return pts[0][1]
    if x >= pts[-1][0]:
        return pts[-1][1]
    (x0, e0), (x1, e1) = next((p, q) for p, q in zip(pts, pts[1:]) if p[0] <= x <= q[0])
    f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(e0) + f * (math.log(e1) - math.log(e0)))


@pytest.mark.parametrize("engine,doc", [("vllm", lambda: kernel_fits()["gpus"]["h200_sxm"]["gdn"]),
                                        ("sglang", lambda: engine_fits()["gpus"]["h200_sxm"]["sglang"]["gdn"])])
@pytest.mark.parametrize("phase,b,n", [("decode", 8, 512), ("prefill", 2, 300)])
def test_a_traced_layers_calls_take_their_engines_fitted_form(engine, doc, phase, b, n):
    """On the H200 under vLLM's and SGLang's presets, each gated-delta-net call's expected time is its engine's
    shipped form read by hand: fixed + max(FLOPs / (989.4 TFLOP/s x e_c), bytes / (4.8 TB/s x e_m)) (+ the
    prefill's b x seq_s), e_c = e_compute(bytes) x items_factor(items) [x tokens_factor(s)], e_m = e_memory(bytes) x
    items_factor_mem(items), each at most 1."""
    from roofcalc.engines import find_engine
    from roofcalc.roofline import roofline

    wl = getattr(Workload, phase)(b, n, **find_engine(engine).workload_kw())
    r = roofline(trace(GDN, "t", wl, view="ideal", use_cache=False), "H200", engine=engine)
    forms = doc()
    s = 1 if wl.phase == "decode" else wl.query_tokens
    seen = set()
    for p in r.step.placements:
        cls = gdn_class(p.kernel.name)
        if not cls:
            continue
        seen.add(cls)
        d = forms[cls]
        flops, nbytes = p.kernel.cost.flops, p.kernel.cost.bytes
        items = gdn_items(cls, nbytes, wl.batch, s)
        e_c = _geo(nbytes, d["e_compute"]) * _geo(items, d["items_factor"])
        if cls in ("gdn_prefill", "gdn_conv"):
            e_c *= _geo(s, d["tokens_factor"])
        e_m = _geo(nbytes, d["e_memory"]) * _geo(items, d["items_factor_mem"])
        work = max(flops / (989.4e12 * min(e_c, 1.0)), nbytes / (4.8e12 * min(e_m, 1.0)))
        series = wl.batch * d["seq_s"] if cls in ("gdn_prefill", "gdn_conv") else 0.0
        assert p.term.launches == 1, cls  # each call its own kernel (a prefill's conv too: its state copy rides)
        assert p.t_expected_s == pytest.approx(d["fixed_s"] + work + series, rel=1e-9), cls
    assert seen == ({"gdn_decode", "gdn_conv_update"} if wl.phase == "decode" else {"gdn_prefill", "gdn_conv"})


def test_every_measured_gpu_ships_every_class_for_every_engine():
    """The four classes for vLLM's, SGLang's and TensorRT-LLM's presets on the six measured GPUs (the A100's tables,
    SGLang 0.5.10's alone, time no chunked rule: its prefill's takes the defaults); a class an engine's tables lack
    is another engine's form, named (ship_fits' "tables"), never its own lent on as if measured."""
    for gpu, g in kernel_fits()["gpus"].items():
        for engine, forms in (("vllm", g.get("gdn", {})),
                              *((e, engine_fits()["gpus"].get(gpu, {}).get(e, {}).get("gdn", {}))
                                for e in ("sglang", "trtllm"))):
            assert set(forms) == set(GDN_CLASSES) - ({"gdn_prefill"} if gpu == "a100_sxm" else set()), (gpu, engine)
            for cls, d in forms.items():
                assert d.get("tables") != engine and (d.get("tables") is None or "why" in d)
                GdnFit.from_doc(d, "test")  # each reads


def _config(tmp_path):
    path = tmp_path / "qwen3-next-small.json"
    path.write_text(json.dumps({**GDN, "architectures": ["Qwen3NextForCausalLM"]}))
    return str(path)


def test_a_sweep_point_is_the_single_step_and_the_upper_end_keeps_the_defaults_floor(tmp_path, capsys):
    """A decode sweep's point and a prefill sweep's point equal the single step of the same sizes (the sweep reads the
    fitted calls at its arrays of batches), and a fitted call's pessimistic work is never below the defaults'
    pessimistic end (as a fitted GEMM's)."""
    from roofcalc.cli import main
    from roofcalc.predict import default_model, kernel_terms

    cfg = _config(tmp_path)
    base = [cfg, "--hw", "H200", "--engine", "sglang", "--format", "json"]
    for one, many in ((["--batch", "8", "--context", "512"], ["--batch", "4,8", "--context", "512"]),
                      (["--batch", "2", "--prompt", "300"], ["--batch", "2", "--prompt", "100,300"])):
        assert main(base + one) == 0
        step = json.loads(capsys.readouterr().out)["step"]
        assert main(base + many) == 0
        size = one[2].strip("-")  # context or prompt
        point = next(p for p in json.loads(capsys.readouterr().out)["points"]
                     if (p["batch"], p[size]) == (int(one[1]), int(one[3])))
        assert point["predicted_s"] == pytest.approx(step["predicted_s"], rel=1e-12)
        assert point["predicted_upper_s"] == pytest.approx(step["predicted_upper_s"], rel=1e-12)
    m = default_model("gpu", fits="h200_sxm", engine="sglang")
    for gdn in (("gdn_decode", 8, 1, 4.2e6), ("gdn_prefill", 2, 300, 3.5e6), ("gdn_conv_update", 8, 1, 1.1e5)):
        t_c, t_m = 1e-7, gdn[3] / 4.8e12
        hi = kernel_terms(m, t_c, t_m, "elementwise", 1, pessimistic=True, gdn=gdn)[0]
        floor = kernel_terms(m.unfitted, t_c, t_m, "elementwise", 1, pessimistic=True)[0]
        assert hi >= floor and kernel_terms(m, t_c, t_m, "elementwise", 1, gdn=gdn)[0] <= hi


def test_only_a_gated_delta_nets_calls_under_fused_kernels_take_the_forms(tmp_path, capsys):
    """hf-eager (transformers' torch code op by op) keeps the defaults; another mixer's conv (a module that runs no
    gated delta rule: Mamba-2's, LFM2's) is not a gated delta net's; a prefill's conv launches its own kernel (the
    state copy beside it rides on it) and pays its fitted fixed cost."""
    from roofcalc.cli import main
    from roofcalc.roofline import gdn_modules, gdn_sizes

    cfg = _config(tmp_path)
    assert main([cfg, "--hw", "H200", "--batch", "8", "--context", "512", "--format", "json"]) == 0  # hf-eager
    doc = json.loads(capsys.readouterr().out)
    assert not any("gdn" in k["efficiency_source"] for k in doc["kernels"])
    assert main([cfg, "--hw", "H200", "--engine", "sglang", "--batch", "2", "--prompt", "300", "--format", "json"]) == 0
    ks = {k["name"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    conv = ks["linear_attn.causal_conv1d_fn"]
    fixed = engine_fits()["gpus"]["h200_sxm"]["sglang"]["gdn"]["gdn_conv"]["fixed_s"]
    assert conv["launches"] == 1 and conv["t_fixed_s"] == pytest.approx(fixed)
    assert ks["linear_attn.causal_conv1d_forward"]["launches"] == 0

    class K:
        def __init__(self, name):
            self.name = name

    mamba = [K("mixer.in_proj"), K("mixer.causal_conv1d_update"), K("mixer.selective_state_update")]
    assert gdn_modules(mamba) == frozenset()
    assert gdn_sizes(mamba[1], Workload.decode(2, 10), gdn_modules(mamba), "cuda-graph") == ()
    net = [K("linear_attn.causal_conv1d_update"), K("linear_attn.torch_recurrent_gated_delta_rule")]
    assert gdn_sizes(net[0], Workload.decode(2, 10), gdn_modules(net), "cuda-graph") == ("gdn_conv_update", 2, 1)
    assert gdn_sizes(net[0], Workload.decode(2, 10), gdn_modules(net), "hf-eager") == ()


def test_a_traced_models_fused_module_times_map_onto_its_kernels():
    """--kernel-times in a serving engine's module names under a traced model's paths: self_attn.qkv_proj split over
    self_attn.q_proj, k_proj and v_proj by their bytes, mlp.shared_expert.gate_up_proj over gate_proj and up_proj."""
    from roofcalc.roofline import roofline

    a = trace(GDN, "t", Workload.decode(2, 64), view="ideal", use_cache=False)
    r = roofline(a, "H200", kernel_times={"self_attn.qkv_proj": 3e-5, "mlp.shared_expert.gate_up_proj": 2e-5})
    got = {p.kernel.name: p for p in r.step.placements if p.measured_s is not None}
    qkv = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"]
    assert set(got) == {*qkv, "mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj"}
    total = sum(got[n].kernel.cost.bytes for n in qkv)
    for n in qkv:
        assert got[n].measured_s == pytest.approx(3e-5 * got[n].kernel.cost.bytes / total)
