"""--engine presets: their fields and sources, the default left as it was, the host term they add, --impl by hand."""

from __future__ import annotations

import json

import pytest

from roofcalc.cli import main
from roofcalc.engines import ENGINES, find_engine
from roofcalc.errors import RoofcalcError
from textutil import unwrap

TINY = "docs/configs/starcoder2-tiny.json"


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, unwrap(out), err


def step(args, capsys) -> dict:
    code, out, err = run([*args, "--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out)["step"]


def test_each_preset_names_its_launch_model_cache_and_host_time():
    assert list(ENGINES) == ["hf", "vllm", "sglang", "trtllm", "gpt-fast", "llama.cpp", "trtllm-0.6", "vllm-v0"]
    hf = ENGINES["hf"]
    # the worked example: transformers' eager modules, DynamicCache's torch.cat, no host time added
    assert (hf.impl, hf.cache_update, hf.host_overlap) == ("hf-eager", "concat", False)
    assert hf.host.none
    # every other engine decodes under CUDA graphs with a cache written in place (engines.py cites each)
    for name in ("vllm", "sglang", "trtllm", "gpt-fast", "llama.cpp", "vllm-v0"):
        assert (ENGINES[name].impl, ENGINES[name].cache_update) == ("cuda-graph", "in-place"), name
    # vLLM: issue #10634's 5-6 ms between decodes at batch 256, per sequence, overlapping the device
    v = ENGINES["vllm"]
    assert v.host_per_sequence_s.expected == pytest.approx(5.5e-3 / 256)
    assert v.host_per_sequence_s.pessimistic == pytest.approx(6e-3 / 256)
    assert v.host_fixed_s.expected == 0 and v.host_overlap
    # SGLang, TensorRT-LLM and gpt-fast: no published figure; their overlap hides it (nothing beyond the replay)
    for name in ("sglang", "trtllm", "gpt-fast"):
        assert ENGINES[name].host.none and ENGINES[name].host_overlap, name
    # llama.cpp: 10-15 % of a 6.10 ms token (1000 / 163.83 tok/s) on the CPU, waited for
    c = ENGINES["llama.cpp"]
    assert c.host_fixed_s.expected == pytest.approx(0.125 * 6.1039e-3, rel=1e-4)
    assert c.host_fixed_s.pessimistic == pytest.approx(0.15 * 6.1039e-3, rel=1e-4)
    assert not c.host_overlap and c.host_per_sequence_s.expected == 0
    # vLLM V0: Vidur's A100 profile (cpu_overheads.csv, Llama-2-7b, TP 1, batch 8-64), the sum of scheduler, sampler,
    # input preparation and output processing a step: the least-squares line of its medians, 1.202 ms + 0.100 ms a
    # sequence (of its means, 2.019 + 0.171: pessimistic), waited for; Ray workers (vLLM PR #3763):
    # (24.2 s - 17.0 s) / 2,000 tokens = 3.6 ms a step more on several GPUs
    v0 = ENGINES["vllm-v0"]
    assert (v0.host_fixed_s.expected, v0.host_fixed_s.pessimistic) == (1.202e-3, 2.019e-3)
    assert (v0.host_per_sequence_s.expected, v0.host_per_sequence_s.pessimistic) == (0.100e-3, 0.171e-3)
    assert v0.host_ranks_s.expected == pytest.approx((24.2 - 17.0) / 2000) and not v0.host_overlap
    assert (v0.tables, v0.decode_every_head) == ("vllm", False)
    for e in ENGINES.values():  # every field carries its source
        assert all((e.impl_source, e.cache_source, e.attention, e.attention_source, e.host_source, e.ranks)), e.name
        assert e.host_fixed_s.note and e.host_per_sequence_s.note, e.name


def test_names_forgive_case_and_spelling_but_refuse_others():
    assert find_engine("vLLM").name == "vllm" and find_engine("llamacpp").name == "llama.cpp"
    assert find_engine("gpt_fast").name == "gpt-fast"
    # the vllm preset is vLLM's V1 engine: its version's name says so too (vllm-v0 is the engine before it)
    assert find_engine("vllm-v1").name == "vllm" and find_engine("vLLM_V0").name == "vllm-v0"
    with pytest.raises(RoofcalcError, match="did you mean vllm"):
        find_engine("vlm")


def test_bad_engine_is_one_line_with_did_you_mean(capsys):
    for args in (["tinyllama", "--engine", "vlm"], ["profile", "tinyllama", "--engine", "vlm"]):
        code, out, err = run(args, capsys)
        assert code == 2 and out == ""
        # one line naming every preset (114 characters with them all)
        assert err.count("\n") == 1 and "--engine 'vlm': did you mean vllm? " in err and len(err.strip()) <= 114
        assert "(hf vllm sglang trtllm gpt-fast llama.cpp trtllm-0.6 vllm-v0)" in err


def test_the_default_is_engine_hf_and_its_numbers_have_not_moved(capsys):
    _, plain, _ = run(["tinyllama"], capsys)
    _, hf, _ = run(["tinyllama", "--engine", "hf"], capsys)
    _, by_hand, _ = run(["tinyllama", "--engine", "hf", "--impl", "hf-eager"], capsys)
    assert plain == hf == by_hand
    assert "host 890 eager ops x 20 us; engine hf (attention: PyTorch SDPA)" in plain
    st = step(["tinyllama"], capsys)
    # hf adds no host time: 890 eager ops x 20 us (predict.HOST_PER_OP), nothing waited for
    assert st["host_s"] == pytest.approx(890 * 20e-6) and st["serial_host_s"] == 0
    assert st["engine"]["name"] == "hf" and not st["engine"]["impl_by_hand"]


def test_vllm_is_cuda_graph_plus_its_host_time_per_sequence(capsys):
    for batch in (1, 8):
        graph = step(["tinyllama", "--impl", "cuda-graph", "--batch", str(batch)], capsys)
        vllm = step(["tinyllama", "--engine", "vllm", "--batch", str(batch)], capsys)
        assert vllm["device_s"] == graph["device_s"]  # the same kernels and cache update
        # by hand: one graph replay of 5 us (predict.LAUNCH) + B x 5.5 ms / 256 (engines.py), overlapping
        assert graph["host_s"] == pytest.approx(5e-6)
        assert vllm["host_s"] == pytest.approx(5e-6 + batch * 5.5e-3 / 256)
        assert vllm["host_upper_s"] == pytest.approx(10e-6 + batch * 6e-3 / 256)
        assert vllm["predicted_s"] == pytest.approx(max(vllm["device_s"], 5e-6 + batch * 5.5e-3 / 256))
        assert vllm["engine"]["name"] == "vllm" and vllm["engine"]["impl_used"] == "cuda-graph"


def test_llama_cpp_adds_a_host_time_the_device_waits_for(capsys):
    graph = step(["tinyllama", "--impl", "cuda-graph"], capsys)
    cpp = step(["tinyllama", "--engine", "llama.cpp"], capsys)
    waited = 0.125 * 1000 / 163.83 * 1e-3  # 12.5 % of issue #6763's 6.10 ms token
    assert cpp["serial_host_s"] == pytest.approx(waited)
    assert cpp["predicted_s"] == pytest.approx(graph["predicted_s"] + waited)
    _, out, _ = run(["tinyllama", "--engine", "llama.cpp"], capsys)
    assert "then 0.763 ms of the engine's host time the device waits for" in " ".join(out.split())


def test_llama_cpp_replays_its_graph_for_a_one_token_step_alone(capsys):
    """ggml-cuda turns its CUDA graphs off for a step of more than one token ('disabling CUDA graphs due to batch size
    > 1'): under --engine llama.cpp a decode step of one sequence replays one graph; several sequences' decode and a
    prompt launch each kernel (the host's launches x 5 us, the kernels' count as under --impl fused), and say so;
    a sweep's points are the single steps'. vLLM's graphs take any batch."""
    one = step(["tinyllama", "--engine", "llama.cpp", "--hw", "RTX4090"], capsys)
    four = step(["tinyllama", "--engine", "llama.cpp", "--hw", "RTX4090", "--batch", "4"], capsys)
    fused = step(["tinyllama", "--impl", "fused", "--hw", "RTX4090", "--batch", "4"], capsys)
    assert one["graph_replayed"] and not four["graph_replayed"]
    assert one["host_s"] == pytest.approx(5e-6) and four["host_s"] == pytest.approx(four["launches_per_step"] * 5e-6)
    assert four["launches_per_step"] == fused["launches_per_step"] and four["host_s"] == pytest.approx(fused["host_s"])
    prompt = step(["tinyllama", "--engine", "llama.cpp", "--hw", "RTX4090", "--prompt", "64"], capsys)
    assert not prompt["graph_replayed"]
    assert step(["tinyllama", "--engine", "vllm", "--hw", "RTX4090", "--batch", "4"], capsys)["graph_replayed"]
    _, out, _ = run(["tinyllama", "--engine", "llama.cpp", "--hw", "RTX4090", "--batch", "4"], capsys)
    assert "(each kernel launched: llama.cpp replays its CUDA graph for a step of 1 token alone, and this one holds " \
           "4)" in out and "(cuda-graph, no graph replayed)" in out
    code, out, _ = run(["tinyllama", "--engine", "llama.cpp", "--hw", "RTX4090", "--batch", "1,4", "--format", "json"],
                       capsys)
    points = {p["batch"]: p["predicted_s"] for p in json.loads(out)["points"]}
    assert points[1] == pytest.approx(one["predicted_s"]) and points[4] == pytest.approx(four["predicted_s"])


def test_llama_cpp_keeps_its_kv_cache_in_f16_whatever_the_weights(capsys):
    """llama.cpp's cache type is f16 unless -ctk / -ctv say otherwise (common/common.h: cache_type_k = GGML_TYPE_F16):
    a bf16 model's cache under --engine llama.cpp is fp16, said in the dtypes line; --kv-dtype still wins; vLLM keeps
    the model's dtype."""
    doc = json.loads(run(["llama-3-8b", "--engine", "llama.cpp", "--hw", "RTX4090", "--format", "json"], capsys)[1])
    assert (doc["workload"]["weight_dtype"], doc["workload"]["kv_dtype"]) == ("bf16", "fp16")
    assert "KV cache fp16 (llama.cpp's default cache type)" in run(["llama-3-8b", "--engine", "llama.cpp", "--hw",
                                                                    "RTX4090"], capsys)[1]
    doc = json.loads(run(["llama-3-8b", "--engine", "llama.cpp", "--hw", "RTX4090", "--kv-dtype", "int8", "--format",
                          "json"], capsys)[1])
    assert doc["workload"]["kv_dtype"] == "int8"
    doc = json.loads(run(["llama-3-8b", "--engine", "vllm", "--hw", "RTX4090", "--format", "json"], capsys)[1])
    assert doc["workload"]["kv_dtype"] == "bf16"


def test_vllm_v0_waits_for_its_host_time_and_adds_ray_on_several_gpus(capsys):
    """vLLM V0: a graph replay, then the device waits for 1.202 ms + 0.100 ms a sequence (engines.py, Vidur's
    medians), and 3.6 ms more when the step runs on several GPUs (Ray workers, vLLM PR #3763); the kernels are
    vllm's own (the same tables)."""
    for batch in (1, 8):
        graph = step(["tinyllama", "--impl", "cuda-graph", "--batch", str(batch)], capsys)
        v0 = step(["tinyllama", "--engine", "vllm-v0", "--batch", str(batch)], capsys)
        waited = 1.202e-3 + batch * 0.100e-3
        assert v0["device_s"] == graph["device_s"] and v0["host_s"] == pytest.approx(5e-6)
        assert v0["serial_host_s"] == pytest.approx(waited)
        assert v0["predicted_s"] == pytest.approx(graph["predicted_s"] + waited)
    args = ["llama-2-7b", "--hw", "A100-80GB", "--engine", "vllm-v0"]
    one, two = step(args, capsys), step([*args, "--tp", "2"], capsys)
    assert one["serial_host_s"] == pytest.approx(1.302e-3) and two["serial_host_s"] == pytest.approx(4.902e-3)
    assert two["engine"]["host_ranks_s"]["expected"] == pytest.approx(3.6e-3)
    _, out, _ = run([*args, "--tp", "2"], capsys)
    assert "vllm-v0's 1.2 ms + 100 us per sequence + 3.6 ms on several GPUs outside the kernels (the device " \
           "waits for it)" in " ".join(out.split())
    _, out, _ = run(args, capsys)  # on one GPU the words leave the Ray workers' time out, as the step does
    assert "vllm-v0's 1.2 ms + 100 us per sequence outside the kernels (the device waits for it)" in " ".join(out.split())
    _, out, _ = run([*args, "--batch", "1,8"], capsys)  # a sweep's header: what overlaps is the launches alone
    assert "outside the kernels (the device waits for it); the launches and the device overlap" in " ".join(out.split())
    _, out, _ = run([*args, "--tp", "4"], capsys)  # host-bound there: the header names the time waited for
    assert "bound by the host (a graph replay per step, then vllm-v0's host time outside the kernels, which the " \
           "device waits for)" in " ".join(out.split())
    _, out, _ = run([*args, "--tp", "1,2,4"], capsys)  # host-bound at --tp 4: what V1 changes is the overlap
    assert "host-bound at --tp 4 under vllm-v0: under --engine vllm (CUDA graphs, its host time overlapping the " \
           "device) --tp 1, 2, 4 would take" in " ".join(out.split())


def test_a_pipeline_pays_the_engines_waited_host_time_once_a_step(capsys):
    """--pp 2 under llama.cpp: each stage's time without the engine's host time, the step = the stages in turn (one
    micro-batch) + that host time once, 12.5 % of issue #6763's 6.10 ms token = 0.763 ms; a sweep's pipeline point
    is the single step's. vllm-v0 refuses --pp: vLLM 0.4.2 had none."""
    waited = 0.125 * 1000 / 163.83 * 1e-3
    args = ["llama-2-7b", "--hw", "A100-80GB", "--engine", "llama.cpp", "--pp", "2"]
    code, out, err = run([*args, "--format", "json"], capsys)
    assert code == 0, err
    par = json.loads(out)["parallel"]
    assert par["engine_host_s"] == pytest.approx(waited)
    assert par["step_s"] == pytest.approx(sum(par["stage_s"]) + waited)
    stage = json.loads(out)["step"]  # the slowest stage's own step waits for the same time once
    assert par["stage_s"][1] == pytest.approx(stage["predicted_s"] - stage["serial_host_s"])
    code, out, err = run([*args, "--batch", "1,2", "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["points"][0]["step_s"] == pytest.approx(par["step_s"], rel=1e-9)
    for pp in ("2", "1,2"):
        code, out, err = run(["llama-2-7b", "--hw", "A100-80GB", "--engine", "vllm-v0", "--pp", pp], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "--engine vllm-v0 runs no pipeline parallelism (vLLM 0.4.2 vllm/config.py: 'Pipeline parallelism " \
               "is not supported yet.'): drop --pp" in err


def test_a_preset_refuses_an_expert_parallel_layout_its_engine_never_ran(capsys):
    """llama.cpp splits a model by layers or rows (--split-mode), gpt-fast shards every expert over its ranks (--tp),
    neither runs expert parallelism: --ep refused, a list too. vLLM 0.2.6-0.2.7 gave each tensor-parallel rank
    whole experts with attention by heads (PR #2090), never data-parallel attention with an all-to-all: --ep runs
    under --ep-attention tp alone. The serving presets run either."""
    mix = ["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--batch", "8"]
    for engine, ep, words in (("llama.cpp", "2", "--engine llama.cpp runs no expert parallelism (llama.cpp "
                               "common/arg.cpp: --split-mode"),
                              ("gpt-fast", "1,2", "--engine gpt-fast runs no expert parallelism (gpt-fast "
                               "mixtral-moe/tp.py"),
                              ("vllm-v0", "8", "--engine vllm-v0 runs expert parallelism with attention split by "
                               "heads only (vLLM PR #2090 (v0.2.6")):
        code, out, err = run([*mix, "--engine", engine, "--ep", ep], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, (engine, err)
    assert run([*mix, "--engine", "vllm-v0", "--ep", "8", "--ep-attention", "tp"], capsys)[0] == 0
    assert run([*mix, "--engine", "gpt-fast", "--tp", "2"], capsys)[0] == 0
    for engine in ("vllm", "sglang", "trtllm"):
        assert run([*mix, "--engine", engine, "--ep", "8"], capsys)[0] == 0, engine


def test_an_old_preset_refuses_a_model_its_engine_never_ran(capsys):
    """TensorRT-LLM's release notes list Mixture of Experts support and the Mixtral-8x7B model first in 0.7.1:
    trtllm-0.6 (v0.5 and v0.6) refuses a model with routed experts. vLLM's DeepSeek-V2 support (PR #4650) came
    after 0.4.2: vllm-v0 refuses latent attention, and runs Mixtral (0.2.5 on). Each refusal one line, exit 2."""
    a100 = ["--hw", "A100-80GB"]
    for model, engine, words in (
            ("mistralai/Mixtral-8x7B-v0.1", "trtllm-0.6", "--engine trtllm-0.6 ran no mixture of experts "
             "(TensorRT-LLM's release notes list 'Mixture of Experts support' and the 'Mixtral-8x7B model' first "
             "in 0.7.1): mistralai/Mixtral-8x7B-v0.1 has routed experts"),
            ("deepseek-ai/DeepSeek-V2-Lite", "trtllm-0.6", "--engine trtllm-0.6 ran no mixture of experts"),
            ("deepseek-ai/DeepSeek-V2-Lite", "vllm-v0", "--engine vllm-v0 ran no latent attention (vLLM PR #4650"),
            # a traced model's experts, as its config names them (gpt-oss: num_local_experts 32)
            ("benchmarks/configs/gpt-oss-20b.json", "trtllm-0.6", "--engine trtllm-0.6 ran no mixture of experts")):
        for extra in ([], ["--batch", "1,8"], ["--prompt", "128"]):
            code, out, err = run([model, *a100, "--engine", engine, *extra], capsys)
            assert code == 2 and out == "" and err.count("\n") == 1 and words in err, (model, engine, extra, err)
    assert run(["mistralai/Mixtral-8x7B-v0.1", *a100, "--engine", "vllm-v0"], capsys)[0] == 0
    assert run(["llama-2-7b", *a100, "--engine", "trtllm-0.6"], capsys)[0] == 0


def test_vllm_v0_expert_parallel_ranks_run_every_token_through_their_experts(capsys):
    """vLLM 0.2.6's expert parallelism (PR #2090, mixtral.py; issue #2459 asks to skip it): each rank runs every
    one of its E/ep experts on all T tokens, op by op (MixtralMLP's w1 and w3 GEMMs, SiLU, the product, w2; the
    mask, the routing weights times it and their sum: three ops; the output's mul_ and add_: two), and one
    all-reduce a layer. Mixtral-8x7B (D 4,096, F 14,336, 8 experts, top 2), a prefill of 8 x 512 = 4,096 tokens on
    --ep 2: a rank's w1 GEMM is 2 x 4,096 x 4,096 x 14,336 = 481,036,337,152 FLOPs for each of its 4 experts (32
    layers: 128 of them), its weights 4,096 x 14,336 x 2 bytes = 117,440,512 each; vLLM's routed rows are
    ceil(4,096 x 2 / 2) = 4,096 a rank, one gate_up GEMM of 2 x 4,096 x 4,096 x 28,672 FLOPs a layer: the dense
    rank does 8 / 2 = E / k = 4x the FLOPs. At --ep 8, batch 1 (decode) the rank holds one expert and reads it
    either way. Another family's expert parallelism under vllm-v0 is refused: PR #2090 changed mixtral.py alone."""
    mix = ["mistralai/Mixtral-8x7B-v0.1", "--hw", "A100-80GB", "--ep-attention", "tp", "--format", "json"]

    def doc(*extra):
        code, out, err = run([*mix, *extra], capsys)
        assert code == 0, err
        return json.loads(out)

    def kernel(d, name):
        return next(k for k in d["kernels"] if k["name"] == name)

    dense = doc("--engine", "vllm-v0", "--ep", "2", "--prompt", "512", "--batch", "8")
    routed = doc("--engine", "vllm", "--ep", "2", "--prompt", "512", "--batch", "8")
    assert dense["parallel"]["dense_experts"] is True and routed["parallel"]["dense_experts"] is False
    w1, w3, w2 = (kernel(dense, f"experts.{w}") for w in ("w1", "w3", "w2"))
    assert (w1["count"], w1["flops"], w1["weight_bytes"]) == (128, 2 * 4096 * 4096 * 14336, 4096 * 14336 * 2)
    assert (w3["flops"], w2["flops"]) == (w1["flops"], w1["flops"])
    r = kernel(routed, "experts.gate_up_proj")
    assert (r["count"], r["flops"]) == (32, 2 * 4096 * 4096 * 28672)
    assert w1["count"] * (w1["flops"] + w3["flops"]) == 4 * r["count"] * r["flops"]
    # the ops after the GEMMs, per expert: SiLU and the product once each, three routing ops, two to combine
    counts = {n: kernel(dense, f"experts.{n}")["count"] for n in ("act", "mul", "route_weight", "combine")}
    assert counts == {"act": 128, "mul": 128, "route_weight": 3 * 128, "combine": 2 * 128}
    # one all-reduce a layer after the experts' summed outputs, whatever the experts a rank holds
    assert kernel(dense, "experts.combine.all_reduce")["count"] == 32
    # the rank holds E/ep experts' weights in all: 4 x (w1 + w3 + w2) x 32 layers, no more (model parameters)
    assert sum(k["params"] * k["count"] for k in (w1, w3, w2)) == 32 * 4 * 3 * 4096 * 14336
    one = doc("--engine", "vllm-v0", "--ep", "8")
    assert sum(kernel(one, f"experts.{w}")["weight_bytes"] for w in ("w1", "w3", "w2")) * 32 == \
        sum(kernel(doc("--engine", "vllm", "--ep", "8"), f"experts.{w}_proj")["weight_bytes"] for w in ("gate_up", "down")) * 32
    out = " ".join(run([*mix[:-2], "--engine", "vllm-v0", "--ep", "2"], capsys)[1].split())
    assert "each rank runs its experts on every token, each output weighted by the routing" in out
    assert "routed experts: plain GEMMs, each of a rank's 4 experts on every token" in out
    assert "weights read per step: all of a rank's (each runs every token: --engine vllm-v0)" in out
    # an --ep list's 1: one GPU of 0.2.6 ran its experts alike (each on every token), with no collective
    sweep = json.loads(run([*mix, "--engine", "vllm-v0", "--ep", "1,2"], capsys)[1])
    assert sweep["ep_points"][0]["communication_s"] == 0 and sweep["ep_points"][1]["communication_s"] > 0
    code, out, err = run(["Qwen/Qwen3-30B-A3B", "--hw", "A100-80GB", "--engine", "vllm-v0", "--ep", "4",
                          "--ep-attention", "tp"], capsys)
    assert code == 2 and err.count("\n") == 1 and "ran expert parallelism for Mixtral alone (vLLM PR #2090" in err


def test_impl_by_hand_overrides_the_engine_and_the_header_says_so(capsys):
    st = step(["tinyllama", "--engine", "vllm", "--impl", "hf-eager"], capsys)
    eager = step(["tinyllama", "--impl", "hf-eager"], capsys)
    # the eager launch model and, as --impl hf-eager always had, the concatenating cache: the device is eager's
    assert st["device_s"] == eager["device_s"] and st["launches_per_step"] == eager["launches_per_step"] == 890
    assert st["host_s"] == pytest.approx(890 * 20e-6 + 5.5e-3 / 256)  # vLLM's scheduler stays
    assert st["engine"]["impl_used"] == "hf-eager" and st["engine"]["impl_by_hand"]
    _, out, _ = run(["tinyllama", "--engine", "vllm", "--impl", "hf-eager"], capsys)
    # the default T4 (compute capability 7.5) is below FlashAttention's 8.0: vLLM takes FlashInfer there
    assert "engine vllm (attention: FlashInfer) with --impl hf-eager by hand (its own: cuda-graph)" in out


@pytest.mark.parametrize("engine, hw, model, kernel", [
    # vllm/platforms/cuda.py _get_backend_priorities and fa_utils.get_flash_attn_version: FA3 on 9.x, FlashInfer
    # first on 10.x, FA2 elsewhere from 8.0; the latent kernels FLASH_ATTN_MLA on 9.x, FLASHINFER_MLA on 10.x
    ("vllm", "a100", "tinyllama", "FlashAttention 2"), ("vllm", "h100", "tinyllama", "FlashAttention 3"),
    ("vllm", "b200", "tinyllama", "FlashInfer"), ("vllm", "a100", "deepseek-v2-lite", "Triton MLA"),
    ("vllm", "h200", "deepseek-v2-lite", "FlashAttention MLA"),
    # SGLang server_args.py _get_default_attn_backend: fa3 on Hopper, trtllm_mha on SM100, else flashinfer
    ("sglang", "l40s", "tinyllama", "FlashInfer"), ("sglang", "h200", "tinyllama", "FlashAttention 3"),
    ("sglang", "b200", "tinyllama", "TensorRT-LLM's MHA (trtllm_mha)"),
    ("sglang", "b200", "deepseek-v2-lite", "FlashInfer MLA"),
    # ... and trtllm_mla on SM100 for DeepseekV3ForCausalLM (_handle_model_specific_adjustments)
    ("sglang", "b200", "deepseek-v3", "TensorRT-LLM's MLA (trtllm_mla)"),
    # below compute capability 7.5 neither FlashAttention nor FlashInfer: vLLM's TRITON_ATTN, SGLang's triton
    ("vllm", "v100", "tinyllama", "Triton attention"), ("vllm", "v100", "deepseek-v2-lite", "Triton MLA"),
])
def test_the_attention_kernel_named_is_the_one_the_engine_picks_on_that_gpu(engine, hw, model, kernel, capsys):
    st = step([model, "--engine", engine, "--hw", hw], capsys)
    assert st["engine"]["attention"] == kernel and st["engine"]["attention_general"] == ENGINES[engine].attention
    _, out, _ = run([model, "--engine", engine, "--hw", hw], capsys)
    assert f"engine {engine} (attention: {kernel})" in unwrap(out)
    # a sweep's header and JSON name it too
    code, out, _ = run([model, "--engine", engine, "--hw", hw, "--batch", "1,8"], capsys)
    assert code == 0 and f"engine {engine} (attention: {kernel})" in unwrap(out)
    assert step([model, "--engine", engine, "--hw", hw], capsys)["engine"]["attention"] == \
        json.loads(run([model, "--engine", engine, "--hw", hw, "--batch", "1,8", "--format", "json"],
                       capsys)[1])["engine"]["attention"]


def test_the_host_bound_line_appears_only_when_host_bound(capsys):
    # hf at batch 1: 17.8 ms of host over about 11 ms of device (test_roofline): the line, under vLLM
    _, out, _ = run(["tinyllama"], capsys)
    vllm = step(["tinyllama", "--engine", "vllm"], capsys)
    assert vllm["step_bound"] == "memory"
    hf = step(["tinyllama"], capsys)
    # and how it stands against this step: 17.8 / 10.4 ms, 1.7x its speed
    assert (f"engine    host-bound under hf: under --engine vllm (CUDA graphs) the step would take "
            f"{vllm['predicted_s'] * 1e3:.3g} ms ({hf['predicted_s'] / vllm['predicted_s']:.2g}x this step's speed), "
            f"memory-bound") in out
    # the JSON carries the line's words (engine_verdict), null where no step is host-bound
    _, js, _ = run(["tinyllama", "--format", "json"], capsys)
    assert json.loads(js)["engine_verdict"] == " ".join(out.split("engine    ")[1].split("\n\n")[0].split("\nignored")[0]
                                                       .split())
    _, js, _ = run(["tinyllama", "--engine", "vllm", "--format", "json"], capsys)
    assert json.loads(js)["engine_verdict"] is None
    _, out, _ = run(["tinyllama", "--engine", "vllm"], capsys)
    assert "host-bound" not in out  # memory-bound: no line
    # a tiny model at batch 256 under vLLM: 256 x 21.5 us = 5.5 ms of scheduling outlasts its kernels; the
    # line holds it against SGLang, whose overlap scheduler adds nothing beyond the replay
    big = step([TINY, "--hw", "H100", "--engine", "vllm", "--batch", "256"], capsys)
    assert big["step_bound"] == "host" and big["host_s"] == pytest.approx(5e-6 + 5.5e-3)
    sgl = step([TINY, "--hw", "H100", "--engine", "sglang", "--batch", "256"], capsys)
    _, out, _ = run([TINY, "--hw", "H100", "--engine", "vllm", "--batch", "256"], capsys)
    assert (f"host-bound under vllm: under --engine sglang (CUDA graphs) the step would take "
            f"{sgl['predicted_s'] * 1e3:.3g} ms ({big['predicted_s'] / sgl['predicted_s']:.2g}x this step's speed), "
            f"{sgl['step_bound']}-bound") in out
    # --impl hf-eager by hand under vLLM: what changed the step is the launch model given, so the line holds it
    # against vLLM's own (its CUDA graphs), not against another engine
    own = step(["tinyllama", "--engine", "vllm"], capsys)
    _, out, _ = run(["tinyllama", "--engine", "vllm", "--impl", "hf-eager"], capsys)
    line = " ".join(out.split("engine    ")[1].split("\n\n")[0].split("\nignored")[0].split())
    assert line.startswith(f"host-bound under vllm with --impl hf-eager: under vllm's own launches (CUDA graphs, not "
                           f"--impl hf-eager) the step would take {own['predicted_s'] * 1e3:.3g} ms"), line
    # llama.cpp replays its graph for one token alone: at batch 8 its own launches are no graphs, so the line still
    # holds the step against vLLM's
    _, out, _ = run(["tinyllama", "--hw", "H100", "--engine", "llama.cpp", "--impl", "fused", "--batch", "8"], capsys)
    assert "host-bound under llama.cpp: under --engine vllm (CUDA graphs" in out


def test_a_tp_comparison_and_a_batch_sweep_say_which_engine_would_change_them(capsys):
    _, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "1,2,4,8", "--context", "1000"], capsys)
    assert "host-bound at --tp 1, 2, 4, 8 under hf: under --engine vllm (CUDA graphs) --tp 1, 2, 4, 8 would take" in out
    _, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "1,2,4,8", "--context", "1000",
                     "--engine", "vllm"], capsys)
    assert "host-bound" not in out
    _, out, _ = run(["tinyllama", "--batch", "1,8,64"], capsys)
    assert "points host-bound under hf: under --engine vllm (CUDA graphs) they would take" in out
    # one point host-bound: its one time, not a range from it to itself
    _, out, _ = run(["tinyllama", "--prompt", "128,512,2048", "--batch", "1,8"], capsys)
    line = " ".join(out.split("engine    1 of 6 points host-bound under hf:")[1].split("\n\n")[0].split())
    assert line.startswith("under --engine vllm (CUDA graphs) it would take ") and " to " not in line
    # a whole request: the bound holding most of its time (its decode steps', 17.8 ms each of host under hf on the
    # T4 against about 11 ms of device), and what the same request takes under vLLM, as its own report says
    from roofcalc.units import sig

    req = ["tinyllama", "--prompt", "512", "--generate", "128"]
    _, js, _ = run([*req, "--engine", "vllm", "--format", "json"], capsys)
    there = json.loads(js)["points"][0]["total_s"]
    _, out, _ = run(req, capsys)
    line = " ".join(out.split("engine    ")[1].split("\n\n")[0].split())
    assert line == (f"1 of 1 requests host-bound under hf: under --engine vllm (CUDA graphs) it would take "
                    f"{sig(there)} s (most of its time memory-bound)"), line


def test_a_cuda_engine_preset_is_refused_off_an_nvidia_gpu_and_never_suggested_there(capsys):
    """The presets' figures are CUDA engines' on NVIDIA GPUs: on a CPU or a GPU without a CUDA compute capability
    (MI300X) a preset other than hf is one line, exit 2; and the host-bound comparison line, which suggests one,
    is not printed there."""
    for hw, what in (("EPYC-9654", "is a cpu"), ("MI300X", "is not one")):
        code, out, err = run(["tinyllama", "--hw", hw, "--engine", "vllm"], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and f"{hw} {what}: use --engine hf" in err and len(err.strip()) <= 120
        assert ("--impl cuda-graph" in err) == (hw == "MI300X")  # a GPU's engine may replay graphs there (ROCm)
        code, out, err = run(["tinyllama", "--hw", hw], capsys)
        assert code == 0 and "--engine vllm" not in out


def test_every_head_reads_a_groups_kv_once_per_query_head():
    """AttentionFit.every_head (the trtllm-0.6 preset's decode): a GQA decode call is read as an MHA call of its
    N query heads, each reading its group's KV: B·N work items, the group factor at N/K = 1, the MHA items factor,
    no masked-MHA fallback factor, and K/N of those reads the counted bytes. A form with a flat memory
    efficiency of 0.8, an items factor from 0.5 at 8 items to 1 at 64, a group factor from 1 at MHA to 0.6 at 8
    query heads per KV head, an MHA items factor from 0.5 at 8 items to 1 at 512 (each log-log between, flat
    beyond), 0.1 us per item and a fallback factor of 0.7 at group 8; a call of B = 4 sequences, N = 64 query
    heads on K = 8 KV heads, 1,024 keys of 128 (XQA's heuristic, 4 x 8 x 4 x 1024/128 = 1,024 >= 132 SMs, keeps
    it off the fallback)."""
    from dataclasses import replace

    from roofcalc.predict import AttentionFit

    fit = AttentionFit("decode", 5e-6, 1, False, 1.0, ((1.0, 0.5),), ((1.0, 0.8), (1e6, 0.8)), item_s=1e-7,
                       items_mem=((8.0, 0.5), (64.0, 1.0)), gqa_mem=((1.0, 1.0), (8.0, 0.6)),
                       mha_items_mem=((8.0, 0.5), (512.0, 1.0)), mmha_mem=((2.0, 0.9), (8.0, 0.7)),
                       mmha_rule=(132, 32, True))
    call = (4, 64, 8, 1, 1024, 128, 0, 1.0)
    _, mem, series = fit.terms(call)
    # today's kernel: B·K = 32 items, log2 32 = 5 two thirds of the way from 3 to 6: 0.5^(1/3); group factor 0.6
    assert mem == pytest.approx(0.8 * 0.6 * 0.5 ** (1 / 3)) and series == pytest.approx(32 * 1e-7)
    _, mem, series = replace(fit, every_head=True).terms(call)
    # per query head: 256 items (items factor 1, beyond 64; the MHA one at log2 256 = 8, five sixths of the way
    # from 3 to 9: 0.5^(1/6)), group factor 1, 8/64 of the reads counted, no fallback factor
    assert mem == pytest.approx(0.8 * 0.5 ** (1 / 6) * 8 / 64) and series == pytest.approx(256 * 1e-7)
    # an MHA call is the same either way
    mha = (4, 8, 8, 1, 1024, 128, 0, 1.0)
    assert replace(fit, every_head=True).terms(mha) == fit.terms(mha)
    # the MHA call's efficiency is capped at 1 before K/N of it is taken: a form at 1.2 gives 1 x 8/64, so the
    # GQA call is never faster than its per-head reads at the full rate (a new user's trial found 1.2 x 8/64)
    fast = replace(fit, e_memory=((1.0, 1.2), (1e6, 1.2)), items_mem=(), mha_items_mem=(), every_head=True)
    assert fast.terms(call)[1] == pytest.approx(8 / 64)


def _attention(args, capsys) -> dict:
    code, out, err = run([*args, "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    return next(k for k in doc["kernels"] if k["kind"] == "attention"), doc["step"]


def test_trtllm_0_6_is_trtllms_tables_with_gqa_decode_per_query_head(capsys):
    """--engine trtllm-0.6 (TensorRT-LLM before XQA): TensorRT-LLM's measured tables, fused launches, and a GQA
    decode reading its group's KV once per query head. TinyLlama (32 query heads on 4 KV heads) at batch 64 and
    1,024 keys on the H100: its attention's memory side is 1/8 of trtllm's efficiency before the items factor,
    which at 8x the items can only rise (at most to 1), so the call takes more than twice as long; Llama-2-7B
    (32 heads, 32 KV heads: MHA) takes the same time under both."""
    e = ENGINES["trtllm-0.6"]
    assert (e.impl, e.cache_update, e.tables, e.decode_every_head) == ("fused", "in-place", "trtllm", True)
    assert e.host.none and e.host.table_engine == "trtllm"
    args = ["--hw", "H100-SXM", "--batch", "64", "--context", "1024"]
    old, st = _attention(["tinyllama", *args, "--engine", "trtllm-0.6"], capsys)
    new, _ = _attention(["tinyllama", *args, "--engine", "trtllm", "--impl", "fused"], capsys)
    assert old["bound"] == new["bound"] == "memory"
    assert old["t_floor_s"] == new["t_floor_s"] and old["t_expected_s"] > 2 * new["t_expected_s"]
    assert st["engine"]["name"] == "trtllm-0.6" and st["engine"]["decode_every_head"]
    assert st["engine"]["tables"] == "trtllm" and ENGINES["hf"].record()["tables"] == "vllm"
    mha_old, _ = _attention(["llama-2-7b", *args, "--engine", "trtllm-0.6"], capsys)
    mha_new, _ = _attention(["llama-2-7b", *args, "--engine", "trtllm", "--impl", "fused"], capsys)
    assert mha_old["t_expected_s"] == mha_new["t_expected_s"]
    code, out, _ = run(["tinyllama", *args, "--engine", "trtllm-0.6"], capsys)
    assert "AIConfigurator 0.12 TensorRT-LLM" in out
    assert "engine trtllm-0.6 (attention: masked MHA for every decode call (no XQA))" in out


def test_trtllm_on_the_a100_takes_vllms_decode_form(capsys):
    """TensorRT-LLM 1.0's A100 decode table reads less KV than it names (its GQA rows of more than 200 MB of KV
    at a median 1.20x the A100's 2,039 GB/s: benchmarks/decode_roof_check.py), so benchmarks/ship_fits.py gives
    TensorRT-LLM's preset on the A100 vLLM's A100 decode form, marked as another engine's, and the header says so;
    its prefill form and the H100's decode form stay TensorRT-LLM's own."""
    from dataclasses import replace

    from roofcalc.predict import default_model

    trt = default_model("gpu", fits="a100_sxm", engine="trtllm").attention_fits
    vllm = default_model("gpu", fits="a100_sxm", engine="vllm").attention_fits
    assert trt["decode_bf16kv"].tables == "vllm" and vllm["decode_bf16kv"].tables == ""
    assert replace(trt["decode_bf16kv"], tables="", source=vllm["decode_bf16kv"].source) == vllm["decode_bf16kv"]
    assert trt["prefill_bf16kv"].tables == "" and trt["prefill_bf16kv"] != vllm["prefill_bf16kv"]
    assert default_model("gpu", fits="h100_sxm", engine="trtllm").attention_fits["decode_bf16kv"].tables == ""
    note = "decode attention: vLLM's form (TensorRT-LLM's A100-SXM table is not used: docs/kernel_fits.md)"
    assert note in run(["tinyllama", "--hw", "A100-80GB", "--engine", "trtllm"], capsys)[1]
    assert note in run(["tinyllama", "--hw", "A10G", "--engine", "trtllm"], capsys)[1]  # Ampere: the A100's forms
    for other in (["--hw", "A100-80GB", "--engine", "vllm"], ["--hw", "H100-SXM", "--engine", "trtllm"],
                  ["--hw", "A100-80GB", "--engine", "trtllm", "--prompt", "512"]):
        assert "attention: vLLM's form" not in run(["tinyllama", *other], capsys)[1]


def test_trtllm_0_6_refuses_the_kernel_db(capsys):
    """The measured tables time today's decode kernel, not the one trtllm-0.6 models: --kernel-db is refused in
    one line, exit 2."""
    code, out, err = run(["tinyllama", "--hw", "H100-SXM", "--engine", "trtllm-0.6", "--kernel-db"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--kernel-db: engine trtllm-0.6's decode kernel is not the one its measured tables ran" in err


def test_the_serving_engines_run_deepseeks_attention_absorbed_for_decode(capsys):
    """vLLM, SGLang and TensorRT-LLM decode DeepSeek's MLA over the latent and prefill it expanded (each preset cites
    its code: engines.py); --mla by hand wins; hf keeps transformers' expansion. DeepSeek-V2-Lite, batch 1, context
    1,000: the naive step reads every cached latent into kv_b_proj (the kernel is there), the absorbed one runs
    q_absorb and v_up instead."""
    assert {e.name: e.mla for e in ENGINES.values()} == {
        "hf": "naive", "vllm": "serving", "sglang": "serving", "trtllm": "serving", "gpt-fast": "naive",
        "llama.cpp": "naive", "trtllm-0.6": "naive", "vllm-v0": "naive"}
    assert all(e.mla_source for e in ENGINES.values() if e.mla != "naive")
    base = ["deepseek-ai/DeepSeek-V2-Lite", "--hw", "H100", "--dtype", "bf16"]

    def names(extra):
        extra = extra if "--prompt" in extra else [*extra, "--context", "1000"]
        code, out, err = run([*base, *extra, "--format", "json"], capsys)
        assert code == 0, err
        return {k["name"] for k in json.loads(out)["kernels"]}

    assert "kv_b_proj" in names([]) and "q_absorb" not in names([])
    for engine in ("vllm", "sglang", "trtllm"):
        got = names(["--engine", engine])
        assert "q_absorb" in got and "v_up" in got and "kv_b_proj" not in got
    assert "kv_b_proj" in names(["--engine", "vllm", "--mla", "naive"])
    assert "kv_b_proj" in names(["--engine", "vllm", "--prompt", "256"])  # a prefill: expanded
    code, out, _ = run([*base, "--context", "1000", "--engine", "vllm"], capsys)
    assert code == 0
    assert "serving: absorbed for a decode step, expanded for a prefill, as vLLM, SGLang and TensorRT-LLM run it" in out
    for extra, mla in (([], "naive"), (["--engine", "sglang"], "serving"), (["--engine", "sglang", "--mla", "absorbed"],
                                                                          "absorbed")):
        code, out, _ = run([*base, "--context", "1000", *extra, "--format", "json"], capsys)
        assert code == 0 and json.loads(out)["workload"]["mla"] == mla  # the mode the step counted
    # the host-bound default's verdict names the other engine's attention too: it moves the step as well
    code, out, _ = run([*base, "--context", "1000"], capsys)
    assert code == 0 and "under --engine vllm (CUDA graphs, DeepSeek attention serving)" in out


def test_a_serving_engine_loads_an_fp32_checkpoint_in_16_bits(capsys):
    """gemma-2-9b's config declares float32. Under dtype 'auto' vLLM (V1) loads it in bf16 on an H100 (its first
    supported dtype from compute capability 8.0; fp16 is refused for gemma2 besides), SGLang in bf16 (a gemma model
    type), vLLM 0.4.2 in fp16; transformers' eager generate keeps the checkpoint's fp32, as do the presets whose
    loader was not read. Weights: 9,241,705,984 parameters x 2 bytes = 18,483,411,968 in 16 bits, x 4 in fp32."""
    def weights(engine, hw="H100"):
        assert main(["gemma-2-9b", "--hw", hw, "--engine", engine, "-f", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        return doc["workload"]["weight_dtype"], doc["model"]["weight_bytes"]

    assert weights("vllm") == weights("sglang") == ("bf16", 18_483_411_968)
    assert weights("vllm-v0") == ("fp16", 18_483_411_968)
    # llama.cpp runs the GGUF its converter writes: --outtype auto writes a float32 checkpoint in bf16
    assert weights("llama.cpp") == ("bf16", 18_483_411_968)
    assert main(["gemma-2-9b", "--hw", "H100", "--engine", "llama.cpp"]) == 0
    assert "llama.cpp preset loads it in bf16, as its GGUF converter writes it (convert_hf_to_gguf.py --outtype " \
        "auto)" in " ".join(capsys.readouterr().out.split())
    assert weights("hf") == weights("trtllm") == ("fp32", 36_966_823_936)
    # on a T4 (compute capability 7.5: fp16 and fp32) vLLM refuses fp16 for gemma2, and runs fp32
    assert weights("vllm", "T4") == ("fp32", 36_966_823_936)
    assert main(["gemma-2-9b", "--hw", "H100", "--engine", "vllm"]) == 0
    assert "the checkpoint is fp32; the vllm preset loads it in bf16, as its dtype 'auto' does" in unwrap(capsys.readouterr().out)
    # a llama-family fp32 config: fp16 below compute capability 8.0 under vLLM, fp16 under SGLang on any GPU
    assert find_engine("vllm").fp32_dtype("llama", 7.5) == "fp16" and find_engine("vllm").fp32_dtype("llama", 9.0) \
        == "bf16" and find_engine("sglang").fp32_dtype("llama", 9.0) == "fp16"
    # --dtype given wins over the engine's loading
    assert main(["gemma-2-9b", "--hw", "H100", "--engine", "vllm", "--dtype", "fp32", "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["weight_dtype"] == "fp32"
    # loaded in bf16, then on a T4 (no bf16 peak) computed in fp16: both steps said
    assert main(["gemma-2-9b", "--hw", "T4", "--engine", "sglang"]) == 0
    assert "(the checkpoint is fp32; the sglang preset loads it in bf16; T4 has no bf16 peak, so fp16, the same " \
        "width)" in unwrap(capsys.readouterr().out)
    # --act-dtype and --kv-dtype alone: the weights still follow the checkpoint as the engine loads it
    assert main(["gemma-2-9b", "--hw", "H100", "--engine", "vllm", "--act-dtype", "bf16", "--kv-dtype", "bf16",
                 "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["weight_dtype"] == "bf16"


def test_a_config_that_declares_no_dtype_is_fp32_to_a_serving_engine(tmp_path, capsys):
    """vLLM's and SGLang's _get_and_verify_dtype take a config without torch_dtype for float32 (config_dtype =
    torch.float32), then load it as they load an fp32 checkpoint: bf16 under vLLM on an H100, fp16 under SGLang
    (not a gemma); transformers' eager generate has no such rule, and roofcalc's default (fp16) stands. Weights:
    TinyLlama's 1,100,048,384 parameters x 2 bytes = 2,200,096,768 either way."""
    from roofcalc.sources import find_in_catalog

    cfg = {k: v for k, v in find_in_catalog("TinyLlama").config.items() if k not in ("torch_dtype", "dtype")}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))

    def dtype(engine):
        assert main([str(path), "--hw", "H100", "--engine", engine, "-f", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        return doc["workload"]["weight_dtype"], doc["model"]["weight_bytes"]

    assert dtype("vllm") == ("bf16", 2_200_096_768)
    assert dtype("sglang") == dtype("hf") == ("fp16", 2_200_096_768)
    assert main([str(path), "--hw", "H100", "--engine", "vllm"]) == 0
    assert ("the config declares no torch_dtype, which the vllm preset takes for fp32 and loads in bf16, as its "
            "dtype 'auto' does") in unwrap(capsys.readouterr().out)
    # a model type vLLM runs in no fp16 (gemma2), on a GPU with no bf16 (a T4, compute capability 7.5): taken for
    # fp32 and kept so, as the same config declaring float32 is (gemma-2-9b's 9,241,705,984 parameters x 4 bytes)
    gemma = {k: v for k, v in find_in_catalog("gemma-2-9b").config.items() if k not in ("torch_dtype", "dtype")}
    path.write_text(json.dumps(gemma))
    assert main([str(path), "--hw", "T4", "--engine", "vllm", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["workload"]["weight_dtype"], doc["model"]["weight_bytes"]) == ("fp32", 36_966_823_936)
    assert main([str(path), "--hw", "T4", "--engine", "vllm"]) == 0
    assert "which the vllm preset takes for fp32 and keeps: it runs gemma2 in no 16-bit type T4 has" in \
        unwrap(capsys.readouterr().out)


def test_a_multimodal_fp32_checkpoint_is_loaded_by_the_model_type_each_engine_reads():
    """vLLM decides by the top-level model_type (its hf_config), SGLang by the text model's (hf_text_config): a
    PaliGemma around a Gemma 2 loads in bf16 under SGLang (a gemma text model), in bf16 under vLLM on an H100; a
    Gemma 3 on a T4 (no bf16) stays fp32 under vLLM (gemma3 is refused fp16), fp16 under SGLang's rule."""
    vllm, sglang = find_engine("vllm"), find_engine("sglang")
    assert sglang.fp32_dtype("paligemma (text_config: gemma2)", 9.0) == "bf16"
    assert sglang.fp32_dtype("llava (text_config: llama)", 9.0) == "fp16"
    assert vllm.fp32_dtype("paligemma (text_config: gemma2)", 9.0) == "bf16"
    assert vllm.fp32_dtype("gemma3 (text_config: gemma3_text)", 7.5) is None
    assert vllm.fp32_dtype("paligemma (text_config: gemma2)", 7.5) == "fp16"  # paligemma itself is not refused


def test_the_library_takes_an_engine_as_the_command_line_does(capsys):
    """roofline(..., engine="vllm") and sweep(..., engine="vllm") give the step `--engine vllm` gives (its CUDA graphs,
    its cache written in place, its host time), to the last digit; an analysis built without the preset's workload
    is refused by name, as is a model the preset's engine never ran, and engine with engine_host."""
    import roofcalc
    from roofcalc.roofline import roofline
    from roofcalc.sweep import sweep

    shape = roofcalc.load_shape("meta-llama/Llama-2-7b-hf")
    wl = roofcalc.Workload.decode(8, 2048, **find_engine("vllm").workload_kw())
    step = roofline(roofcalc.analyze(shape, wl), "H100", engine="vllm").step
    assert main(["meta-llama/Llama-2-7b-hf", "--hw", "H100", "--engine", "vllm", "-b", "8", "--context", "2048",
                 "--dtype", "fp16", "-f", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)["step"]
    assert step.impl == "cuda-graph" and step.predicted_s == cli["predicted_s"]
    assert sweep(shape, "H100", batches=[8], contexts=[2048], engine="vllm").grid.predicted_s[0, 0] == \
        cli["predicted_s"]
    with pytest.raises(RoofcalcError, match="the analysis's workload has cache_update 'concat' \\(the preset's: "
                                            "'in-place'\\)"):
        roofline(roofcalc.analyze(shape, roofcalc.Workload.decode(8, 2048)), "H100", engine="vllm")
    with pytest.raises(RoofcalcError, match="--engine trtllm-0.6 ran no mixture of experts"):
        sweep(roofcalc.load_shape("mistralai/Mixtral-8x7B-v0.1"), "H100", batches=[1], contexts=[500],
              engine="trtllm-0.6")
    with pytest.raises(RoofcalcError, match="give engine \\(a preset\\) or engine_host"):
        roofline(roofcalc.analyze(shape, wl), "H100", engine="vllm", engine_host=find_engine("vllm").host)


def test_a_decode_kernel_that_rereads_a_group_says_how_many_times(capsys):
    """trtllm-0.6 decodes with masked MHA, each query head reading its GQA group's KV (decode_every_head): the header
    says how many times the counted KV bytes that is, Llama-3.1-8B's 32 query heads over 8 KV heads, 4x; the bytes
    and the floor stay the ideal's (one read a KV head), as under vLLM, whose kernel reads a group's KV once."""
    def run(engine):
        assert main(["llama-3.1-8b", "--hw", "H100", "--engine", engine, "-b", "8", "--context", "2000"]) == 0
        return unwrap(capsys.readouterr().out)

    old, vllm = run("trtllm-0.6"), run("vllm")
    assert "each query head reads its group's KV, 4x the KV bytes counted (the attention's efficiency holds the " \
        "rereads)" in old and "rereads" not in vllm
    row = [next(line for line in out.splitlines() if line.startswith("attention ")).split()[2:5] for out in (old, vllm)]
    assert row[0] == row[1]  # bytes, AI and floor alike


def test_the_engines_all_reduce_is_named_where_the_step_runs_one(capsys):
    """The predict line names the engine's own all-reduce (its CUDA graph's) where the rank runs an all-reduce
    (--tp 2), not where it runs none (--ep 2 with data-parallel attention: all-to-alls alone)."""
    base = ["mixtral-8x7b", "--hw", "H100", "--engine", "vllm", "--batch", "64"]
    _, out, _ = run([*base, "--tp", "2"], capsys)
    assert "all-reduce: vLLM's as measured inside its CUDA graph" in unwrap(out)
    _, out, _ = run([*base, "--ep", "2"], capsys)
    assert "all_to_all" in out and "all-reduce: vLLM's" not in unwrap(out)


def test_a_pipelines_engine_line_is_of_the_whole_step(capsys):
    """A --pp report's table is its slowest stage on one micro-batch; the engine line's time is the other engine's
    whole pipeline step (its JSON parallel.step_s), against this run's, not a stage's."""
    base = ["mixtral-8x7b", "--hw", "H100", "--pp", "2", "--batch", "4"]
    _, js, _ = run([*base, "--engine", "vllm", "--format", "json"], capsys)
    there = json.loads(js)["parallel"]["step_s"]
    _, js, _ = run([*base, "--format", "json"], capsys)
    doc = json.loads(js)
    assert doc["engine_verdict"].startswith(f"host-bound under hf: under --engine vllm (CUDA graphs) the step would "
                                            f"take {there * 1e3:.3g} ms "
                                            f"({doc['parallel']['step_s'] / there:.2g}x this step's speed)")
