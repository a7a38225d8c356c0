"""Tensor parallelism checked on a real distributed run: transformers' own tensor-parallel plan
(tp_plan="auto") on 2 and 4 gloo ranks of this CPU. Each rank's FLOPs (FlopCounterMode) and its
collectives, in number, kind and input bytes, must equal roofcalc's per-rank table for the same --tp."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from roofcalc import RoofcalcError, Workload, shape_from_config
from roofcalc.calculator import DTYPES
from roofcalc.parallel import Parallel, analyze_parallel, shard, stage_kernels

BASE = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512, vocab_size=1000)
CASES = [("llama", 2, dict(BASE, model_type="llama", num_key_value_heads=2)),
         ("qwen3", 2, dict(BASE, model_type="qwen3", num_key_value_heads=2, head_dim=32)),
         ("llama", 4, dict(BASE, model_type="llama", num_key_value_heads=4)),
         # tied: lm_head's shards are the embedding's, whose lookup still ends in an all-reduce (not Gemma's
         # scaled embedding, below, which transformers runs without one)
         ("llama", 2, dict(BASE, model_type="llama", num_key_value_heads=2, tie_word_embeddings=True)),
         # every other family roofcalc shards has a transformers plan too
         ("mistral", 2, dict(BASE, model_type="mistral", num_key_value_heads=2, sliding_window=None)),
         ("qwen2", 2, dict(BASE, model_type="qwen2", num_key_value_heads=2)),
         ("gemma", 2, dict(BASE, model_type="gemma", num_key_value_heads=2, head_dim=32)),
         ("gemma2", 2, dict(BASE, model_type="gemma2", num_key_value_heads=2, head_dim=32, sliding_window=64)),
         # routed experts: every rank holds every expert at half its width, one all-reduce after them
         ("mixtral", 2, dict(BASE, model_type="mixtral", num_key_value_heads=2, num_local_experts=4,
                             num_experts_per_tok=2, sliding_window=None)),
         ("qwen3_moe", 2, dict(BASE, model_type="qwen3_moe", num_key_value_heads=2, head_dim=32, num_experts=4,
                               num_experts_per_tok=2, moe_intermediate_size=128)),
         # a plain MLP and biases (phi: q/k/v and fc1 split, dense and fc2 reduced), and GPT-NeoX's fused
         # query_key_value split head by head
         ("phi", 2, dict(BASE, model_type="phi")),
         ("gpt_neox", 2, dict(BASE, model_type="gpt_neox")),
         # Phi-3's own plan: qkv_proj and gate_up_proj gather their outputs, every head runs on every rank
         ("phi3", 2, dict(BASE, model_type="phi3", num_key_value_heads=2, pad_token_id=0)),
         # MLA (q and kv_b split by heads, the latent whole), a dense first layer, then routed and shared experts
         ("deepseek_v2", 2, dict(BASE, model_type="deepseek_v2", num_key_value_heads=8, moe_intermediate_size=128,
                                 n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                                 kv_lora_rank=64, q_lora_rank=None, qk_rope_head_dim=16, qk_nope_head_dim=32,
                                 v_head_dim=32, pad_token_id=0, n_group=1, topk_group=1, topk_method="greedy")),
         # DeepSeek-V3: MLA split by heads as V2 (transformers 5.25's plan; handed to a 5.24 run), q LoRA
         ("deepseek_v3", 2, dict(BASE, model_type="deepseek_v3", num_key_value_heads=8, moe_intermediate_size=128,
                                 n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                                 kv_lora_rank=64, q_lora_rank=96, qk_rope_head_dim=16, qk_nope_head_dim=32,
                                 v_head_dim=32, pad_token_id=0, n_group=1, topk_group=1))]
# types with no hand model, whose plans hold styles of their own: Granite-SWA's attention sinks (a bare
# parameter split by heads, local_params on the attention module); the traced rank alone is checked on them
TRACED_ONLY = [("granite_swa", 2, dict(BASE, model_type="granite_swa", num_key_value_heads=2, pad_token_id=0)),
               # Nemotron-H: every block's module is "mixer"; its plan splits the attention mixer alone, the
               # Mamba-2 and MLP mixers run whole on every rank
               ("nemotron_h", 2, dict(model_type="nemotron_h", hybrid_override_pattern="M-*-", hidden_size=256,
                                      intermediate_size=512, num_attention_heads=8, num_key_value_heads=2,
                                      head_dim=32, mamba_num_heads=8, mamba_head_dim=64, ssm_state_size=16,
                                      n_groups=1, conv_kernel=4, expand=2, chunk_size=64, mlp_hidden_act="relu2",
                                      vocab_size=1000, residual_in_fp32=False, pad_token_id=0)),
               # Qwen2-MoE: routed experts and a shared expert (with its sigmoid gate) its plan does not name, split
               # as Qwen3.5-MoE's plan splits its own; biased q/k/v
               ("qwen2_moe", 2, dict(BASE, model_type="qwen2_moe", num_key_value_heads=2, num_experts=4,
                                     num_experts_per_tok=2, moe_intermediate_size=128,
                                     shared_expert_intermediate_size=256, pad_token_id=0)),
               # Qwen3-Next: gated delta nets (every in-projection and out_proj colwise_gather_output: every head
               # and the whole recurrent state on every rank, three all-gathers a layer) between full-attention
               # layers, routed experts and a gated shared expert
               ("qwen3_next", 2, dict(BASE, model_type="qwen3_next", num_hidden_layers=4, num_key_value_heads=2,
                                      head_dim=32, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=128,
                                      shared_expert_intermediate_size=256, linear_num_key_heads=4,
                                      linear_num_value_heads=8, linear_key_head_dim=32, linear_value_head_dim=32,
                                      linear_conv_kernel_dim=4, full_attention_interval=2, pad_token_id=0)),
               # MiniCPM5-MoE (transformers 5.25 on): k_proj and v_proj "unit_colwise", whole KV heads a rank; a
               # gated query (q_gate_proj, colwise); a dense first layer. (With fewer KV heads than ranks the real
               # run fails in 5.25: its attention repeats the replicated head for every global query head.)
               ("minicpm5_moe", 2, dict(BASE, model_type="minicpm5_moe", num_key_value_heads=2, head_dim=32,
                                        moe_intermediate_size=128, n_routed_experts=4, num_experts_per_tok=2,
                                        pad_token_id=0))]
BATCH, PROMPT = 2, 5
FP32 = dict(weight_dtype=DTYPES["fp32"], act_dtype=DTYPES["fp32"], kv_dtype=DTYPES["fp32"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(tmp_path_factory, family: str, n: int, cfg: dict, *extra: str) -> list[dict]:
    """Save a model of ``cfg`` (seed 0) and run tests/tp_worker.py on ``n`` gloo ranks: each rank's record."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    root = tmp_path_factory.mktemp(f"{'-'.join(extra) or 'tp'}-{family}-{n}")
    config = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(root / "model")
    worker = Path(__file__).with_name("tp_worker.py")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(n), "--master_port",
           str(_free_port()), str(worker), str(root / "model"), str(root), str(BATCH), str(PROMPT), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads((root / f"rank{r}.json").read_text()) for r in range(n)]


@pytest.fixture(scope="module", params=CASES + TRACED_ONLY,
                ids=lambda c: f"{c[0]}{'-tied' if c[2].get('tie_word_embeddings') else ''}-tp{c[1]}")
def real_run(request, tmp_path_factory):
    family, tp, cfg = request.param
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if cfg["model_type"] not in CONFIG_MAPPING:
        pytest.skip(f"this transformers has no {cfg['model_type']}")
    return cfg, tp, _launch(tmp_path_factory, family, tp, cfg)


MOE_CASES = [c for c in CASES if c[0] in ("mixtral", "qwen3_moe", "deepseek_v2", "deepseek_v3")]


@pytest.fixture(scope="module", params=MOE_CASES, ids=lambda c: f"{c[0]}-ep{c[1]}")
def real_ep_run(request, tmp_path_factory):
    family, ep, cfg = request.param
    return cfg, ep, _launch(tmp_path_factory, family, ep, cfg, "ep")


def _ours(cfg: dict, tp: int, wl: Workload):
    a = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(tp))
    collectives = []
    for k in a.kernels:
        if k.kind == "collective":
            collectives += [[k.role, k.message_bytes]] * k.count
    return a, collectives


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_per_rank_flops_and_collectives_equal_a_real_tensor_parallel_run(real_run, phase):
    """E.g. llama, 2 layers, batch 2, decode on 2 ranks: an all-reduce for the embedding, two per layer of
    2·1·256·4 = 2,048 bytes, and an all-gather of the last logits, 2·1·(1000 / 2)·4 = 4,000 bytes."""
    cfg, tp, ranks = real_run
    if (cfg["model_type"], tp, cfg) in TRACED_ONLY:  # no hand model: a traced model's path alone (the test below)
        with pytest.raises(RoofcalcError, match="is not supported"):
            shape_from_config(cfg, "t")
        return
    wl = Workload.prefill(BATCH, PROMPT, causal=False, **FP32) if phase == "prefill" else \
        Workload.decode(BATCH, PROMPT + 1, **FP32)
    ours, collectives = _ours(cfg, tp, wl)
    for rank in ranks:
        assert rank["params"] == ours.params  # the rank's own shards (tied weights once)
        assert rank[phase]["flops"] == ours.totals.matmul_flops
        assert sorted(map(tuple, rank[phase]["collectives"])) == sorted(map(tuple, collectives))


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_a_traced_rank_equals_a_real_tensor_parallel_run(real_run, phase):
    """The same config traced and split by its config class's plan (roofcalc.trace.parallel.traced_rank, the
    path of a model_type without a hand model) gives each real rank's parameters, FLOPs and collectives:
    DeepSeek's MLA too (the latent projection, its norm and the latent cache whole on every rank, q_b_proj
    and kv_b_proj by heads), and a rowwise bias whole (Phi, GPT-NeoX). The trace counts a prefill's
    attention as FlopCounterMode does, the whole rectangle (tests/test_trace.py)."""
    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank

    cfg, tp, ranks = real_run
    wl = Workload.prefill(BATCH, PROMPT, **FP32) if phase == "prefill" else Workload.decode(BATCH, PROMPT + 1, **FP32)
    rank_of = traced_rank(trace(cfg, "t", wl, use_cache=False), Parallel(tp), hf_config(cfg, "t")[0])
    collectives = []
    for k in rank_of.kernels:
        if k.kind == "collective":
            collectives += [(k.role, k.message_bytes)] * k.count
    for rank in ranks:
        assert (rank["params"], rank[phase]["flops"]) == (rank_of.params, rank_of.totals.matmul_flops)
        # (on a mismatch, both sides whole: the real rank's in the order it ran them, the traced rank's by kernel)
        assert sorted(map(tuple, rank[phase]["collectives"])) == sorted(collectives), \
            (rank[phase]["collectives"], [(k.name, k.role, k.message_bytes, k.count) for k in rank_of.kernels
                                          if k.kind == "collective"])
    if phase == "decode" and cfg["model_type"] == "llama" and tp == 2:
        assert sorted(map(tuple, collectives)) == sorted([("all_reduce", 2048)] * 5 + [("all_gather", 4000)])


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_expert_parallel_ranks_with_split_attention_equal_a_real_run(real_ep_run, phase):
    """--ep 2 --ep-attention tp against transformers' own expert-parallel plan on 2 gloo ranks
    (DistributedConfig(tp_size=2, ep_size=2): attention, the dense MLPs and the shared experts split as
    under --tp, each rank 2 whole routed experts of 4, run on the batch both ranks hold, an all-reduce
    summing the experts' outputs; DeepSeek-V3's attention handed V2's rules under 5.24, tests/tp_worker.py).
    Each rank's parameters and collectives equal roofcalc's rank's, and so do its FLOPs outside the routed
    experts. The routed experts' own FLOPs follow where the random router sends each token (here one rank
    took every pair of a layer, the other none), so it is their sum over the ranks that is checked: every
    routed pair once, 2 x roofcalc's rank, which takes T·k/2 of them."""
    cfg, ep, ranks = real_ep_run
    wl = Workload.prefill(BATCH, PROMPT, causal=False, **FP32) if phase == "prefill" else \
        Workload.decode(BATCH, PROMPT + 1, **FP32)
    ours = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(ep=ep, ep_attention="tp"))
    collectives = sorted((k.role, k.message_bytes) for k in ours.kernels if k.kind == "collective"
                         for _ in range(k.count))
    experts = sum(k.cost.matmul_flops * k.count for k in ours.kernels
                  if k.kind == "matmul" and k.name.startswith("experts."))
    assert experts > 0
    for rank in ranks:
        assert rank["params"] == ours.params
        assert sorted(map(tuple, rank[phase]["collectives"])) == collectives
        assert rank[phase]["flops"] - rank[phase]["experts"] == ours.totals.matmul_flops - experts
    assert sum(rank[phase]["experts"] for rank in ranks) == ep * experts


PP_CASES = [("llama", 2, dict(BASE, model_type="llama", num_key_value_heads=2, num_hidden_layers=3,
                             tie_word_embeddings=True)),
            ("gemma2", 2, dict(BASE, model_type="gemma2", num_key_value_heads=2, head_dim=32, sliding_window=64)),
            ("mixtral", 2, dict(BASE, model_type="mixtral", num_key_value_heads=2, num_local_experts=4,
                                num_experts_per_tok=2, sliding_window=None))]


@pytest.fixture(scope="module", params=PP_CASES, ids=lambda c: f"{c[0]}-pp{c[1]}")
def real_pp_run(request, tmp_path_factory):
    family, pp, cfg = request.param
    return cfg, pp, _launch(tmp_path_factory, family, pp, cfg, "pp")


def test_pipeline_stages_equal_a_real_pipeline_run(real_pp_run):
    """--pp 2 against transformers' own pipeline (DistributedConfig(pp_size=2), from 5.24: a stage a rank,
    the layers as even as they go, the first stages one more, as roofcalc cuts them), on a prefill of 2 x 5
    tokens: each stage's parameters (a tied llama's last stage holding its copy of the table: 557,568 +
    256 + 256,000 = 813,824), its FLOPs outside the routed experts and its send of the hidden states
    [B·T, D] to the next stage (2 x 5 x 256 x 4 = 10,240 bytes) equal roofcalc's stage, hand-modelled and
    traced. The routed experts' FLOPs follow the random router and are checked in sum. The run also
    broadcasts the logits from the last stage to every rank (its generate() returns them on each), which a
    serving pipeline does not: left out. Decode is not compared: there the run's first stage attends over
    the new token alone (2,048 attention FLOPs a layer where the 6 cached positions make 12,288), the
    cache its pipeline hands back on that rank being empty."""
    phase = "prefill"
    from roofcalc.trace import hf_config
    from roofcalc.trace.pipeline import TracedStages

    if not hasattr(__import__("transformers"), "DistributedConfig"):
        pytest.skip("this transformers has no DistributedConfig")
    cfg, pp, ranks = real_pp_run
    shape = shape_from_config(cfg, "t")
    wl = Workload.prefill(BATCH, PROMPT, causal=False, **FP32) if phase == "prefill" else \
        Workload.decode(BATCH, PROMPT + 1, **FP32)
    traced_wl = Workload.prefill(BATCH, PROMPT, **FP32) if phase == "prefill" else wl  # traced: the whole rectangle
    whole = analyze_parallel(shape, wl, Parallel())
    layouts = TracedStages(cfg, "t", None, "ideal", hf_config(cfg, "t")[0])
    traced_whole = layouts.whole(traced_wl)
    total_experts = 0
    for s, rank in enumerate(ranks):
        hand = stage_kernels(shape, wl, pp, s)[1]
        traced = layouts.stage(traced_wl, Parallel(pp=pp), s, micro_batches=1, batch=BATCH, full=traced_whole).kernels
        for kernels in (hand, traced):
            experts = sum(k.cost.matmul_flops * k.count for k in kernels if "experts" in k.name)
            assert rank[phase]["flops"] - rank[phase]["experts"] == \
                sum(k.cost.matmul_flops * k.count for k in kernels) - experts, s
            assert [list(c) for c in rank[phase]["collectives"] if c[0] == "send"] == \
                [["send", k.message_bytes] for k in kernels if k.role == "send"], s
        total_experts += rank[phase]["experts"]
        assert rank["params"] == sum(k.params * k.count for k in hand)
        assert rank["params"] == layouts.stage(traced_wl, Parallel(pp=pp), s, micro_batches=1, batch=BATCH,
                                               full=traced_whole).params
    assert total_experts == sum(k.cost.matmul_flops * k.count for k in whole.kernels if "experts" in k.name)


def test_llama2_70b_fits_on_four_h100s_not_one():
    """Llama-2-70B fp16: 137,953,296,384 bytes of weights; a quarter of the sharded ones per rank (the
    norms replicated) fits an H100's 80 GiB at batch 1, context 4096."""
    from roofcalc.sources import load_shape

    shape = load_shape("meta-llama/Llama-2-70b-hf")
    wl = Workload.decode(1, 4096)
    one = analyze_parallel(shape, wl, Parallel(1))
    four = analyze_parallel(shape, wl, Parallel(4))
    assert one.memory_bytes > 80 * 2 ** 30 > four.memory_bytes
    # norms (80 layers x 2 x 8192 + 8192 final) are on every rank; everything else is split four ways
    norms = (80 * 2 + 1) * 8192 * 2
    assert four.weight_storage_bytes == (one.weight_storage_bytes - norms) // 4 + norms


def test_mixtral_8x7b_fits_on_two_h100s_not_one():
    """Mixtral-8x7B bf16, 46,702,792,704 parameters: every rank holds every expert at half its width; the
    norms (32 layers x 2 x 4096 + 4096) and the routers (32 x 4096 x 8) stay whole on both."""
    from roofcalc.sources import load_shape

    shape = load_shape("mistralai/Mixtral-8x7B-v0.1")
    wl = Workload.decode(1, 4096)
    one = analyze_parallel(shape, wl, Parallel(1))
    two = analyze_parallel(shape, wl, Parallel(2))
    assert one.params == 46_702_792_704
    assert one.memory_bytes > 80 * 2 ** 30 > two.memory_bytes
    whole = (32 * 2 + 1) * 4096 + 32 * 4096 * 8
    assert two.params == (one.params - whole) // 2 + whole
    # two all-reduces a layer (after o_proj, after the experts) and one for the untied embedding, of
    # 1 token x 4096 x 2 bytes; the logits gathered, 32000 / 2 x 2 bytes from each rank
    comm = [(k.role, k.message_bytes, k.count) for k in two.kernels if k.kind == "collective"]
    assert sorted(comm) == sorted([("all_reduce", 8192, 1), ("all_reduce", 8192, 32), ("all_reduce", 8192, 32),
                                   ("all_gather", 32000, 1)])


def test_sizes_that_do_not_divide_are_refused_by_name_but_the_vocabulary():
    shape = shape_from_config(dict(BASE, model_type="llama", num_key_value_heads=2), "t")
    with pytest.raises(RoofcalcError, match="does not divide num_attention_heads 8"):
        shard(shape, 3)
    from roofcalc.sources import load_shape

    # a vocabulary need not divide: GPT-2's 50,257 over 2 ranks, the rank the step waits for holding ceil(50,257 / 2)
    # = 25,129 rows (transformers 5.25's uneven shards; vLLM pads it to 50,304 first, 25,152 a rank)
    assert shard(load_shape("openai-community/gpt2"), 2).vocab_size == 25_129
    with pytest.raises(RoofcalcError, match="does not divide moe_intermediate_size 100"):
        shard(shape_from_config(dict(BASE, model_type="qwen3_moe", num_key_value_heads=2, num_experts=4,
                                     num_experts_per_tok=2, moe_intermediate_size=100), "q"), 8)


def test_gpt2_and_opt_split_as_vllm_splits_them():
    """transformers has no tensor-parallel plan for GPT-2 or OPT; vLLM splits them (vllm/model_executor/models/gpt2.py,
    opt.py) as Megatron-LM split GPT-2: c_attn by heads (a QKVParallelLinear), attn.c_proj and mlp.c_proj
    row-parallel with their biases whole, c_fc column-parallel, the vocabulary split, the learned positions whole.
    A GPT-2 of D = 256, 8 heads, 2 layers, FFN 1,024, vocab 1,024 and 128 positions at --tp 4, one rank's parameters:
    wte 1,024 x 256 / 4 = 65,536; wpe 128 x 256 = 32,768; a layer's ln_1 and ln_2 2 x 512, c_attn 256 x 192 + 192 =
    49,344, attn.c_proj 64 x 256 + 256 = 16,640, c_fc 256 x 256 + 256 = 65,792, mlp.c_proj 256 x 256 + 256 = 65,792:
    198,592 a layer, 397,184 for two; ln_f 512; the lm_head tied: 496,000."""
    from roofcalc.parallel import tp_plan_words

    gpt2 = shape_from_config(dict(model_type="gpt2", n_embd=256, n_head=8, n_layer=2, n_inner=1024, vocab_size=1024,
                                  n_positions=128), "g")
    wl = Workload.decode(2, 100)
    rank = analyze_parallel(gpt2, wl, Parallel(4))
    assert rank.params == 496_000
    mm = {k.name: k.dims for k in rank.kernels if k.kind == "matmul"}
    assert mm == {"c_attn": "[2,256]x[256,192]", "attn.c_proj": "[2,64]x[64,256]", "c_fc": "[2,256]x[256,256]",
                  "mlp.c_proj": "[2,256]x[256,256]", "lm_head": "[2,256]x[256,256]"}
    # an all-reduce of [B, D] after the embedding and after each row-parallel linear, the logits gathered
    comm = [(k.name, k.role, k.count) for k in rank.kernels if k.kind == "collective"]
    assert comm == [("embed.all_reduce", "all_reduce", 1), ("attn.c_proj.all_reduce", "all_reduce", 2),
                    ("mlp.c_proj.all_reduce", "all_reduce", 2), ("lm_head.all_gather", "all_gather", 1)]
    assert "vLLM's tensor-parallel split of gpt2 (transformers has no plan for it" in tp_plan_words(gpt2)
    opt = shape_from_config(dict(BASE, model_type="opt", ffn_dim=512, max_position_embeddings=128,
                                 word_embed_proj_dim=256), "o")
    comm = [k.name for k in analyze_parallel(opt, wl, Parallel(2)).kernels if k.kind == "collective"]
    assert comm == ["embed.all_reduce", "out_proj.all_reduce", "fc2.all_reduce", "lm_head.all_gather"]


def test_a_tp_sweep_finds_the_fewest_gpus_that_fit_and_where_scaling_stops():
    """Llama-2-70B fp16 on H100s, batch 1, context 4096. --tp 1: 137,953,296,384 bytes of weights +
    327,680 x 4096 of KV = 139,295,473,664 > 80 GiB (85,899,345,920). --tp 2: (137,953,296,384 − 2,637,824
    of replicated norms) / 2 + 2,637,824 = 68,977,967,104, + 163,840 x 4096 = 69,649,055,744: it fits."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import tp_sweep
    from roofcalc.sources import load_shape

    shape = load_shape("meta-llama/Llama-2-70b-hf")
    sw = tp_sweep(shape, Workload.decode(1, 4096), [1, 2, 4], find_hardware("H100"), impl="cuda-graph")
    assert [p.result.analysis.memory_bytes for p in sw.points[:2]] == [139_295_473_664, 69_649_055_744]
    assert [p.fits for p in sw.points] == [False, True, True] and sw.fewest_fitting == 2
    # under hf-eager the host's time per eager op does not shrink with more GPUs: nothing gets faster than at
    # --tp 2, the fewest that fit (--tp 1, which does not fit, is no step to compare against)
    eager = tp_sweep(shape, Workload.decode(1, 4096), [1, 2, 4], find_hardware("H100"), impl="hf-eager")
    assert eager.stops_paying is not None and eager.stops_paying[0] == 4 and eager.stops_paying[1] < 0.10


@pytest.mark.parametrize("steps, fits, stop", [
    ((10.0, 9.5, 5.0), (True, True, True), None),  # 9.5 only 5 % faster than 10, but 5 is 100 % faster than 10
    ((10.0, 9.5, 8.9), (True, True, True), (2, 10.0 / 9.5 - 1)),  # 10 / 8.9 = 1.12, under two steps' 1.1² = 1.21
    ((10.0, 9.5, 8.2), (True, True, True), None),  # 10 / 8.2 = 1.22: two steps' worth past the dip
    ((10.0, 11.0, 8.0), (False, True, True), None),  # from 2, the fewest that fit: 11 / 8 - 1 = 37.5 %
    ((10.0, 11.0, 10.5), (False, True, True), (4, 11.0 / 10.5 - 1)),
    ((10.0, 11.0, 10.5), (None, None, None), (2, 10.0 / 11.0 - 1)),  # capacity unknown: from the first
])
def test_scaling_stops_paying_where_no_larger_size_pays_again(steps, fits, stop):
    """A size that dips does not stop scaling that pays again past it, and a size that does not fit is no step to
    compare against (Mixtral-8x7B's --pp 1 does not fit an H100 and runs faster than --pp 2; --pp 4 faster
    still): sizes 1, 2, 4 with these steps, min_gain 10 %."""
    from types import SimpleNamespace

    from roofcalc.parallel import TPSweep

    sweep = TPSweep(tuple(SimpleNamespace(tp=n, step_s=t, fits=f) for n, t, f in zip((1, 2, 4), steps, fits)), 0.10)
    got = sweep.stops_paying
    assert (got is None) == (stop is None) and (got is None or (got[0] == stop[0] and got[1] == pytest.approx(stop[1])))


def test_steps_that_each_gain_a_little_stop_paying_at_the_first():
    """Five sizes each 4 % faster than the one before (1.04⁴ = 1.17 over four steps, under 1.1⁴ = 1.46): scaling
    stops paying at the first step up, --tp 2, not where the small gains add up past one step's 10 %."""
    from types import SimpleNamespace

    from roofcalc.parallel import TPSweep

    points = tuple(SimpleNamespace(tp=2 ** i, step_s=1.04 ** -i, fits=True) for i in range(5))
    assert TPSweep(points, 0.10).stops_paying == (2, pytest.approx(0.04))


def test_the_verdict_says_so_when_only_the_largest_size_fits(capsys):
    """Llama-2-7B fp16 at batch 8 over 2,048 tokens on a T4 (16 GB): 13.5 GB of weights and 8.6 GB of KV cache fit
    only at --tp 2 of --tp 1,2, so there is nothing larger to compare it with, and the verdict says that."""
    from roofcalc.cli import main

    assert main(["meta-llama/Llama-2-7b-hf", "--hw", "T4", "--batch", "8", "--context", "2048", "--tp", "1,2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("fits the fewest GPUs on which weights and KV cache fit: 2 (of --tp 1, 2) scaling --tp 2, the fewest "
            "GPUs that fit, is the largest swept: no larger size to compare it with") in out


def test_the_command_line_sweeps_batches_and_contexts_on_one_rank(capsys):
    """Llama-2-70B at --tp 4: per rank 34,490,302,464 bytes of weights ((137,953,296,384 − 2,637,824 of
    norms) / 4 + 2,637,824) and 81,920 bytes of KV a token (2 of the 8 KV heads, 80 layers, K and V,
    128 x 2 bytes): the sweep's memory is the rank's."""
    from roofcalc.cli import main

    assert main(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "4", "--batch", "1,64", "--context",
                 "1000", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    pts = {p["batch"]: p for p in doc["points"]}
    assert pts[1]["memory_bytes"] == 34_490_302_464 + 1000 * 81_920
    # a sweep's parallel record has no batch of its own (a single step's is a number): each point carries its own
    assert "batch" not in doc["parallel"] and doc["parallel"]["tp"] == 4
    assert pts[64]["memory_bytes"] == 34_490_302_464 + 64 * 1000 * 81_920


def test_an_expert_parallel_sweep_is_the_single_steps_at_every_batch(capsys):
    """Mixtral-8x7B bf16 --ep 8 on H100s: the sweep's batch is the step's (8 sequences a rank at B = 64),
    and every point equals the single step's; the verdicts' batches are the step's, each rank's times 8,
    and hold on the single-step path (KV bytes overtake the rank's weight bytes at that batch, not 8
    sequences earlier; the largest batch fits and 8 more do not)."""
    from roofcalc.cli import main
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import LocalBatchAnalyzer
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape
    from roofcalc.sweep import sweep

    shape, h100, bf16 = load_shape("mistralai/Mixtral-8x7B-v0.1"), find_hardware("H100"), \
        {k: DTYPES["bf16"] for k in FP32}
    par = Parallel(ep=8)
    sw = sweep(shape, h100, batches=[8, 24, 64], contexts=[1000, 3000], impl="cuda-graph",
               analyzer=LocalBatchAnalyzer(shape, par), **bf16)
    assert list(sw.grid.batches) == [8, 24, 64]
    for i, b in enumerate((8, 24, 64)):
        for j, s in enumerate((1000, 3000)):
            one = roofline(analyze_parallel(shape, Workload.decode(b, s, **bf16), par), h100, impl="cuda-graph")
            assert sw.grid.step_s[i, j] == pytest.approx(one.step.times.predicted_s, rel=1e-12)
            assert sw.grid.memory_bytes[i, j] == one.analysis.memory_bytes
            assert sw.grid.tokens_per_s[i, j] == pytest.approx(b / one.step.times.predicted_s, rel=1e-12)
    v = sw.verdicts[0]

    def step(b):
        return analyze_parallel(shape, Workload.decode(b, 1000, **bf16), par).totals

    kv = v.kv_over_weights_batch
    assert kv % 8 == 0 and step(kv).kv_bytes > step(kv).weight_bytes
    assert step(kv - 8).kv_bytes <= step(kv - 8).weight_bytes
    fit = v.max_batch

    def memory(b):
        return analyze_parallel(shape, Workload.decode(b, 1000, **bf16), par).memory_bytes

    assert fit % 8 == 0 and memory(fit) <= 80 * 2 ** 30 < memory(fit + 8)
    # the single step's JSON names the step's batch beside its rank's workload (8 a rank), as the sweep's rows do
    from roofcalc.report import to_record

    one = to_record(roofline(analyze_parallel(shape, Workload.decode(64, 1000, **bf16), par), h100, impl="cuda-graph"))
    assert (one["workload"]["batch"], one["parallel"]["batch"]) == (8, 64)
    # a pipeline's decode step has no batch verdicts (its sweep has none either): distance 2 says so, not a prefill's
    from roofcalc.parallel import pipeline_roofline
    from roofcalc.report import render

    piped = render(pipeline_roofline(load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(8, 500), 2, 2, h100,
                                     tpot_s=0.03))
    assert "a pipeline's step is not linear in the batch" in " ".join(piped.split())
    assert "a longer prompt" not in piped
    assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--ep", "8", "--batch", "12,64"]) == 2
    assert "--batch 12 does not split over --ep 8" in capsys.readouterr().err


def test_a_pipeline_sweep_is_the_single_steps_at_every_point(capsys):
    """Llama-2-70B fp16 --tp 4 --pp 2 on H100s: at every batch (micro-batches: 2 where 2 divides it, else 1)
    and context, the sweep's step, memory and tokens/s are the single step's pipeline (tests above
    check that by hand); prefills and whole requests likewise (a request = its prefill + its decode
    steps, each a pipeline step)."""
    from roofcalc.cli import main
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import PipelineAnalyzer, pipeline_roofline
    from roofcalc.sources import load_shape
    from roofcalc.sweep import sweep

    shape, h100 = load_shape("meta-llama/Llama-2-70b-hf"), find_hardware("H100")
    par = Parallel(4, pp=2)

    def single(wl):
        b = wl.batch
        r = pipeline_roofline(shape, wl, 2, 2 if b % 2 == 0 else 1, h100, tp=4, impl="cuda-graph")
        return r.analysis.note_pipeline

    sw = sweep(shape, h100, batches=[1, 8, 64], contexts=[1000, 4000], impl="cuda-graph",
               analyzer=PipelineAnalyzer(shape, par))
    assert sw.verdicts == ()
    for i, b in enumerate((1, 8, 64)):
        for j, s in enumerate((1000, 4000)):
            pipe, memory = single(Workload.decode(b, s))
            assert sw.grid.step_s[i, j] == pytest.approx(pipe.step_s, rel=1e-12)
            assert sw.grid.memory_bytes[i, j] == memory
            assert sw.grid.tokens_per_s[i, j] == pytest.approx(b / pipe.step_s, rel=1e-12)
            assert sw.grid.predicted_lower_s[i, j] < pipe.step_s < sw.grid.predicted_upper_s[i, j]
    pre = sweep(shape, h100, batches=[2, 3], prompts=[128], impl="cuda-graph", analyzer=PipelineAnalyzer(shape, par))
    for i, b in enumerate((2, 3)):
        assert pre.grid.ttft_s[i, 0] == pytest.approx(single(Workload.prefill(b, 128))[0].step_s, rel=1e-12)
    req = sweep(shape, h100, batches=[2], prompts=[128], generate=3, impl="cuda-graph",
                analyzer=PipelineAnalyzer(shape, par))
    want = single(Workload.prefill(2, 128))[0].step_s + sum(single(Workload.decode(2, c))[0].step_s for c in (129, 130))
    assert req.grid.total_s[0, 0] == pytest.approx(want, rel=1e-12)
    assert main(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "4", "--pp", "2", "--batch", "2,3",
                 "--context", "1000", "--micro-batches", "2"]) == 2
    assert "--batch 3 does not split into 2 micro-batches" in capsys.readouterr().err
    # expert-parallel stages: Mixtral --ep 2 --pp 2, micro-batches 2 where 4 divides the batch, else 1
    mixtral = load_shape("mistralai/Mixtral-8x7B-v0.1")
    par = Parallel(pp=2, ep=2)
    sw = sweep(mixtral, h100, batches=[2, 6, 8], contexts=[1000, 2000], impl="cuda-graph",
               analyzer=PipelineAnalyzer(mixtral, par))
    for i, (b, m) in enumerate(((2, 1), (6, 1), (8, 2))):
        for j, s in enumerate((1000, 2000)):
            r = pipeline_roofline(mixtral, Workload.decode(b, s), 2, m, h100, ep=2, impl="cuda-graph")
            pipe, memory = r.analysis.note_pipeline
            assert sw.grid.step_s[i, j] == pytest.approx(pipe.step_s, rel=1e-12)
            assert sw.grid.memory_bytes[i, j] == memory
    assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--ep", "2", "--pp", "2", "--batch", "3",
                 "--context", "1000,2000"]) == 2
    assert "a micro-batch of 3 sequences does not split over --ep 2" in capsys.readouterr().err


def test_sweeps_over_gpus_follow_sliding_windows():
    """A sliding layer's attention and cache stop growing at its window: Phi-3-mini (every layer 2047) at
    --tp 2 and Gemma-2-9B (every other layer 4096) at --tp 2 --pp 2, swept across their windows, equal
    the single step at every point, time and memory (the sweep fits from probes at short contexts, where
    sliding and full layers cost the same)."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import PipelineAnalyzer, RankAnalyzer, pipeline_roofline
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape
    from roofcalc.sweep import sweep

    h100 = find_hardware("H100")
    phi3 = load_shape("microsoft/Phi-3-mini-4k-instruct")
    contexts = [100, 2047, 2048, 4000]
    sw = sweep(phi3, h100, batches=[1, 3], contexts=contexts, impl="cuda-graph", analyzer=RankAnalyzer(phi3, Parallel(2)))
    for i, b in enumerate((1, 3)):
        for j, s in enumerate(contexts):
            one = roofline(analyze_parallel(phi3, Workload.decode(b, s), Parallel(2)), h100, impl="cuda-graph")
            assert sw.grid.step_s[i, j] == pytest.approx(one.step.times.predicted_s, rel=1e-12)
            assert sw.grid.memory_bytes[i, j] == one.analysis.memory_bytes
    gemma = load_shape("google/gemma-2-9b")
    contexts = [1000, 8000]
    par = Parallel(2, pp=2)
    sw = sweep(gemma, h100, batches=[2, 8], contexts=contexts, impl="cuda-graph", analyzer=PipelineAnalyzer(gemma, par))
    for i, b in enumerate((2, 8)):
        for j, s in enumerate(contexts):
            pipe, memory = pipeline_roofline(gemma, Workload.decode(b, s), 2, 2, h100, tp=2,
                                             impl="cuda-graph").analysis.note_pipeline
            assert sw.grid.step_s[i, j] == pytest.approx(pipe.step_s, rel=1e-12)
            assert sw.grid.memory_bytes[i, j] == memory


def test_ep_and_pp_lists_compare_sizes_like_a_tp_list(capsys):
    """Mixtral-8x7B bf16 on H100s at batch 64, context 1000. --ep 1: 46,702,792,704 parameters (93.4 GB)
    do not fit 80 GiB; --ep 2 holds half the experts and 32 of the sequences' KV cache (32 x 1000 x
    131,072 bytes: 32 layers x K and V x 8 heads x 128 x 2 bytes) and fits. Every rank runs at once, so
    a step makes all 64 sequences' tokens. --pp: the largest stage's memory, and the pipeline's step."""
    from roofcalc.cli import main
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import tp_sweep
    from roofcalc.sources import load_shape

    shape, wl = load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(64, 1000)
    sw = tp_sweep(shape, wl, [1, 2, 4], find_hardware("H100"), axis="ep", impl="cuda-graph")
    assert [p.fits for p in sw.points] == [False, True, True] and sw.fewest_fitting == 2
    two = sw.points[1]
    rank = analyze_parallel(shape, wl, Parallel(ep=2))
    assert two.memory_bytes == rank.memory_bytes and rank.kv_bytes_per_token * 1000 * 32 == 32 * 1000 * 131_072
    assert two.tokens_per_s == pytest.approx(64 / two.step_s) and two.tokens_per_s_per_gpu == two.tokens_per_s / 2
    pipe = tp_sweep(shape, wl, [1, 2], find_hardware("H100"), axis="pp", impl="cuda-graph").points[1]
    plan, largest = pipe.result.analysis.note_pipeline
    assert pipe.step_s == plan.step_s and pipe.memory_bytes == largest and pipe.tokens_per_s == pytest.approx(
        64 / plan.step_s)
    # its communication, on the step's path as the step takes the stages: each stage's (stage 0's send to
    # stage 1; stage 1, the last, sends nothing) on the first micro-batch, then the slowest stage's for each other
    from roofcalc.parallel import StageAnalysis, stage_kernels, stage_layers
    from roofcalc.roofline import roofline

    micro = Workload.decode(64 // plan.micro_batches, 1000)
    stages = []
    for x in range(2):
        sub, kernels = stage_kernels(shape, micro, 2, x)
        stages.append(roofline(StageAnalysis(sub, micro, tuple(kernels), parallel=Parallel(pp=2), stage=x,
                                             layers=stage_layers(shape.n_layers, 2)[x],
                                             micro_batches=plan.micro_batches, batch=64),
                               find_hardware("H100"), impl="cuda-graph"))
    comm = [sum(q.t_expected_s * q.kernel.count for q in r.step.placements if q.kernel.kind == "collective")
            for r in stages]
    assert comm[0] > 0 and comm[1] == 0  # (the column had shown the slowest stage's alone: 0 when it was the last)
    assert pipe.comm_s == pytest.approx(sum(comm) + (plan.micro_batches - 1) * comm[plan.slowest])
    device = [r.step.times.device_s for r in stages]
    assert pipe.comm_share == pytest.approx(pipe.comm_s / (sum(device) + (plan.micro_batches - 1)
                                                           * device[plan.slowest]))
    assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--ep", "1,2,4", "--context", "1000", "--batch", "64",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["axis"] == "ep" and [p["ep"] for p in doc["ep_points"]] == [1, 2, 4]
    assert doc["verdicts"]["fewest_gpus_that_fit"] == 2
    assert main(["mistralai/Mixtral-8x7B-v0.1", "--ep", "1,2", "--pp", "1,2"]) == 2
    assert "give a list to one of --tp, --pp and --ep at a time" in capsys.readouterr().err
    # the header's experts line: the model's experts and a rank's share of them (8 / 2), at their whole width
    # (Mixtral's 14,336: --ep leaves each expert whole), and no share without --ep
    for flags, words in ((["--ep", "2", "--batch", "2"], "8 experts, 4 a rank, of width 14336, top-2"),
                         (["--tp", "2"], "8 experts of width 7168, top-2")):
        assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", *flags]) == 0
        assert words in " ".join(capsys.readouterr().out.split()), flags


def test_a_list_along_one_axis_keeps_the_others_fixed(capsys):
    """--tp 1,2,4 --pp 2: each point is the single step at --tp n --pp 2 on 2n GPUs (its tokens/s per GPU
    over 2n); --ep 2,4 --tp 2: the --tp 2 --ep n rank on 2n GPUs, all n groups' sequences counted."""
    from roofcalc.cli import main
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import default_micro_batches, pipeline_roofline, tp_sweep
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape

    h100 = find_hardware("H100")
    llama, wl = load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(64, 2000)
    sw = tp_sweep(llama, wl, [1, 2, 4], h100, base=Parallel(pp=2), impl="cuda-graph")
    for p, n in zip(sw.points, (1, 2, 4)):
        r = pipeline_roofline(llama, wl, 2, default_micro_batches(64, Parallel(n, pp=2)), h100, tp=n,
                              impl="cuda-graph")
        pipe, memory = r.analysis.note_pipeline
        assert (p.gpus, p.step_s, p.memory_bytes) == (2 * n, pipe.step_s, memory)
        assert p.tokens_per_s_per_gpu == pytest.approx(64 / pipe.step_s / (2 * n))
    mixtral, bf16 = load_shape("mistralai/Mixtral-8x7B-v0.1"), {k: DTYPES["bf16"] for k in FP32}
    wl = Workload.decode(64, 1000, **bf16)
    sw = tp_sweep(mixtral, wl, [2, 4], h100, axis="ep", base=Parallel(tp=2), impl="cuda-graph")
    for p, n in zip(sw.points, (2, 4)):
        one = roofline(analyze_parallel(mixtral, wl, Parallel(2, ep=n)), h100, impl="cuda-graph")
        assert (p.gpus, p.step_s, p.sequences) == (2 * n, one.step.times.predicted_s, 64)
    assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--ep", "2,4", "--tp", "2", "--batch", "64",
                 "--context", "1000", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fixed"] == {"tp": 2, "pp": 1} and [p["gpus"] for p in doc["ep_points"]] == [4, 8]


def test_the_command_line_compares_tp_sizes(capsys):
    from roofcalc.cli import main

    assert main(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "1,2,4", "--context", "4096",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["tp"] for p in doc["tp_points"]] == [1, 2, 4] and doc["verdicts"]["fewest_gpus_that_fit"] == 2
    kinds = {c["collective"] for c in doc["tp_points"][1]["collectives"]}
    assert kinds == {"all_reduce", "all_gather"}
    assert main(["meta-llama/Llama-2-70b-hf", "--tp", "1,2", "--batch", "1,2"]) == 2
    assert "one --batch" in capsys.readouterr().err


def test_measure_collectives_with_gloo_writes_the_link_into_the_profile(tmp_path):
    """Two gloo processes on this CPU: every collective is timed at every size, the bus bandwidth follows
    nccl-tests' formulas, and --tp on the written profile times its collectives on that link."""
    pytest.importorskip("torch")
    from roofcalc.collectives import bus_bandwidth, measure_collectives
    from roofcalc.hardware import find_hardware, load_profile
    from roofcalc.measure import closest_nominal, measure, write_profile
    from roofcalc.roofline import roofline

    c = measure_collectives(2, "cpu", repeats=3, sizes=(1 << 12, 1 << 16))
    assert c["backend"] == "gloo" and c["nproc"] == 2
    for op in ("all_reduce", "all_gather", "all_to_all"):
        assert len(c[op]) == 2 and all(b > 0 and t > 0 for b, t in c[op])
    # all-reduce of S bytes on 2 ranks: busbw = S / t · 2·1/2 = S / t
    (b0, t0), (b1, t1) = c["all_reduce"]
    assert bus_bandwidth("all_reduce", b1, t1, 2) == pytest.approx(b1 / t1)
    assert c["bus_bytes_per_s"] == max(b0 / t0, b1 / t1) and c["latency_s"] == t0
    m = measure("cpu", None, 2, 16 << 20, quiet=True, curves=False)
    path = tmp_path / "me.json"
    write_profile(m, closest_nominal(m, None)[0], str(path), c)
    profile = load_profile(str(path))
    assert profile.link_bytes_per_s == c["bus_bytes_per_s"] and profile.link_latency_s == c["latency_s"]
    shape = shape_from_config(dict(BASE, model_type="llama", num_key_value_heads=2), "t")
    r = roofline(analyze_parallel(shape, Workload.decode(2, 8, **FP32), Parallel(2)),
                 find_hardware(profile.nominal or "EPYC-9654"), measured_profile=profile)
    o = next(p for p in r.step.placements if p.kernel.name == "o_proj.all_reduce")
    # 2,048 bytes on 2 ranks: the ring sends 2·1/2 x 2,048 = 2,048 bytes over the measured link
    assert o.kernel.link_bytes == 2048
    assert o.t_link_s == pytest.approx(2048 / c["bus_bytes_per_s"])
    # a measured link is what collectives reach (no further share), and its smallest all-reduce their fixed cost
    assert o.t_expected_s == pytest.approx(max(o.t_link_s, 2 * 2048 / r.roof.bandwidth_bytes_per_s) + c["latency_s"])


def test_a_small_collective_costs_its_latency_besides_its_bytes():
    """Llama-2-70B fp16, --tp 4, decode at batch 1 on H100s. An all-reduce of 1 x 8192 x 2 = 16,384 bytes
    sends 2 x 3/4 of it, 24,576 bytes, over NVLink 4's 450 GB/s (54.6 ns), at 80 % of it, plus 6 us (a
    small all-reduce of 2 H100s, NVIDIA/nccl #1259): 6.068 us; 161 of them (80 layers x 2 + the embedding).
    The logits' all-gather sends 3 x 8000 x 2 = 48,000 bytes. The floors have no latency. (An H100 takes the
    all-reduce's and all-gather's fits instead of the 80 % and 6 us: below.)"""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape

    r = roofline(analyze_parallel(load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(1, 1000), Parallel(4)),
                 find_hardware("H100"), impl="cuda-graph").step
    comm = [p for p in r.placements if p.kernel.kind == "collective"]
    ar = [p for p in comm if p.kernel.role == "all_reduce"]
    assert sum(p.kernel.count for p in ar) == 161
    # an H100's all-reduce is its fit on AIConfigurator's NCCL tables (data/kernel_fits.json, h100_sxm): at 4
    # ranks a fixed 9.967 us, and at a 16,384-byte message a share of the link of 0.2697 (a knot of e_link_4)
    for p in ar:
        assert p.t_floor_s == pytest.approx(24_576 / 450e9)
        assert p.t_expected_s == pytest.approx(24_576 / 450e9 / 0.2697 + 9.967e-6)
    # the all-gather is its fit too (h100_sxm all_gather): at 4 ranks a fixed 7.565 us, its share of the link read
    # at nccl-tests' size, the whole output of 4 x 16,000 = 64,000 bytes: between the knots 16,384 (0.157) and
    # 65,536 (0.08887) of e_link_4, log2(64,000) - 14 of the 2 between them, geometrically
    (gather,) = [p for p in comm if p.kernel.role == "all_gather"]
    e_gather = math.exp(math.log(0.157) + (math.log(0.08887) - math.log(0.157)) * (math.log2(64_000) - 14) / 2)
    assert gather.kernel.link_bytes == 48_000 and gather.t_floor_s == pytest.approx(48_000 / 450e9)
    assert gather.t_expected_s == pytest.approx(48_000 / 450e9 / e_gather + 7.565e-6)
    assert r.times.comm_s == pytest.approx(161 * (24_576 / 450e9 / 0.2697 + 9.967e-6) +
                                           48_000 / 450e9 / e_gather + 7.565e-6)
    # over two nodes (--tp 16 on 8-GPU nodes) each collective costs the network's 46 us instead
    r16 = roofline(analyze_parallel(load_shape("meta-llama/Llama-2-70b-hf"), Workload.decode(1, 1000),
                                    Parallel(16)), find_hardware("H100"), impl="cuda-graph").step
    o = next(p for p in r16.placements if p.kernel.name == "o_proj.all_reduce")
    assert o.hop == "network" and o.t_expected_s == pytest.approx(o.t_floor_s / 0.80 + 46e-6)


def test_a_ring_over_more_gpus_than_a_node_runs_at_the_network_rate():
    """Llama-3.1-405B (D = 16,384) decode at batch 32 on H100s (8 per HGX node, NVLink 450 GB/s a
    direction; DGX H100's 8 x 400 Gb/s ConnectX-7: 50 GB/s a GPU). An all-reduce of 32 x 16,384 x 2 =
    1,048,576 bytes sends 2·7/8 of it = 1,835,008 bytes at --tp 8 over NVLink, and 2·15/16 of it =
    1,966,080 bytes at --tp 16 over the network."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape

    shape, h100 = load_shape("meta-llama/Llama-3.1-405B"), find_hardware("H100")
    for tp, moved, rate in ((8, 1_835_008, 450e9), (16, 1_966_080, 50e9)):
        r = roofline(analyze_parallel(shape, Workload.decode(32, 2000), Parallel(tp)), h100)
        o = next(p for p in r.step.placements if p.kernel.name == "o_proj.all_reduce")
        assert (o.kernel.message_bytes, o.kernel.link_bytes) == (1_048_576, moved)
        assert o.t_link_s == pytest.approx(moved / rate)


def test_expert_parallel_mixtral_by_hand():
    """Mixtral-8x7B bf16, --ep 8, decode at batch 64 (8 sequences a rank), context 1000. Each rank holds one
    of the 8 experts: a dispatch all-to-all of 8 tokens x top-2 x 4096 x 2 bytes = 131,072, 7/8 of it =
    114,688 bytes to other ranks. The 64 tokens reach 8·(1 − (6/8)^64) = 7.99999992 experts, 0.99999999 on
    each rank: of one expert's gate_up (2 x 14,336 x 4,096 x 2 = 234,881,024 bytes) it reads 234,881,022."""
    from roofcalc.sources import load_shape

    shape = load_shape("mistralai/Mixtral-8x7B-v0.1")
    a = analyze_parallel(shape, Workload.decode(64, 1000, **{k: DTYPES["bf16"] for k in FP32}), Parallel(ep=8))
    dispatch = a.kernel("experts.dispatch")
    assert (dispatch.message_bytes, dispatch.link_bytes, dispatch.count) == (131_072, 114_688, 32)
    assert a.kernel("experts.combine_all_to_all").message_bytes == 131_072
    up = a.kernel("experts.gate_up_proj")
    assert up.cost.weight_bytes == 234_881_022 and up.params == 2 * 14_336 * 4_096
    assert up.cost.matmul_flops == 2 * (8 * 2) * 4_096 * (2 * 14_336)  # the 16 token copies that arrive
    assert a.workload.batch == 8


def test_deepseek_v3_fits_on_sixteen_h100s_not_eight():
    """DeepSeek-V3 (fp8 blocks) at batch 64, context 2000: each of 8 ranks holds 32 of 256 experts and
    everything else: more than an H100's 80 GiB; 16 ranks (two HGX nodes) hold 16 experts each and fit;
    their all-to-alls cross the nodes and run at the network's 50 GB/s a GPU."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape

    shape, h100 = load_shape("deepseek-ai/DeepSeek-V3"), find_hardware("H100")
    wl = Workload.decode(64, 2000, weight_dtype=DTYPES["fp8-b128"], act_dtype=DTYPES["bf16"], kv_dtype=DTYPES["bf16"])
    eight = roofline(analyze_parallel(shape, wl, Parallel(ep=8)), h100)
    sixteen = roofline(analyze_parallel(shape, wl, Parallel(ep=16)), h100)
    assert eight.analysis.memory_bytes > 80 * 2 ** 30 > sixteen.analysis.memory_bytes
    d = next(p for p in sixteen.step.placements if p.kernel.name == "experts.dispatch")
    # 4 tokens x top-8 x 7168 x 2 bytes = 458,752; 15/16 of it = 430,080 bytes over the network
    assert (d.kernel.message_bytes, d.kernel.link_bytes) == (458_752, 430_080)
    assert d.t_link_s == pytest.approx(430_080 / 50e9)


def test_expert_parallel_refusals():
    from roofcalc.sources import load_shape

    mixtral = load_shape("mistralai/Mixtral-8x7B-v0.1")
    with pytest.raises(RoofcalcError, match="does not divide the 8 routed experts"):
        analyze_parallel(mixtral, Workload.decode(6, 100), Parallel(ep=3))
    with pytest.raises(RoofcalcError, match="--batch 6 does not split over --ep 4"):
        analyze_parallel(mixtral, Workload.decode(6, 100), Parallel(ep=4))
    with pytest.raises(RoofcalcError, match="--batch 1 does not split over --ep 2"):  # the default batch
        analyze_parallel(mixtral, Workload.decode(1, 100), Parallel(ep=2))
    with pytest.raises(RoofcalcError, match="has none"):
        analyze_parallel(load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode(4, 100), Parallel(ep=2))


def test_expert_parallel_groups_of_tensor_parallel_ranks_by_hand():
    """Mixtral-8x7B bf16, --tp 2 --ep 4 (8 GPUs), decode at batch 64, context 1000: 4 data-parallel groups of
    16 sequences, each 2 tensor-parallel ranks. A rank holds half of attention (q, o 4096 x 4096, k, v 4096 x
    1024: 41,943,040 / 2 = 20,971,520), 2 of the 8 experts at half width (8 x 3 x 4096 x 14,336 / 8 =
    176,160,768), the router (4096 x 8 = 32,768) and two norms (8192): 197,173,248 a layer, x 32 =
    6,309,543,936, plus half the embedding and half lm_head (32,000 x 4096 / 2 each) and the final norm:
    6,440,620,032. Its 16 tokens send 16 x top-2 x 4096 x 2 = 262,144 bytes to the experts' groups (3/4 of it
    to others: 196,608), and 64 x 2 / 4 = 32 token copies arrive: gate_up 2 x 32 x 4096 x (2 x 7168) FLOPs.
    The all-reduces (embedding, o_proj, the experts' sum) carry 16 x 4096 x 2 = 131,072 bytes."""
    from roofcalc.sources import load_shape

    shape = load_shape("mistralai/Mixtral-8x7B-v0.1")
    a = analyze_parallel(shape, Workload.decode(64, 1000, **{k: DTYPES["bf16"] for k in FP32}), Parallel(2, ep=4))
    assert a.params == 6_440_620_032 and a.workload.batch == 16 and a.parallel.gpus == 8
    dispatch = a.kernel("experts.dispatch")
    assert (dispatch.message_bytes, dispatch.link_bytes, dispatch.group, dispatch.count) == (262_144, 196_608, 4, 32)
    assert a.kernel("experts.gate_up_proj").cost.matmul_flops == 2 * 32 * 4096 * 2 * 7168
    comm = sorted((k.name, k.role, k.count, k.message_bytes, k.group) for k in a.kernels if k.kind == "collective")
    assert comm == sorted([("embed.all_reduce", "all_reduce", 1, 131_072, 2),
                           ("o_proj.all_reduce", "all_reduce", 32, 131_072, 2),
                           ("experts.dispatch", "all_to_all", 32, 262_144, 4),
                           ("experts.combine_all_to_all", "all_to_all", 32, 262_144, 4),
                           ("experts.combine.all_reduce", "all_reduce", 32, 131_072, 2),
                           ("lm_head.all_gather", "all_gather", 1, 16 * 16_000 * 2, 2)])
    # KV cache: 16 sequences x 1000 positions x 32 layers x 2 x (8 / 2 KV heads x 128) x 2 bytes
    assert a.memory_bytes - a.weight_storage_bytes == 16 * 1000 * 32 * 2 * 4 * 128 * 2


def test_all_to_alls_between_tensor_parallel_groups_cross_nodes():
    """DeepSeek-V3 on 16 H100s (8 a node) as --tp 8 --ep 2: each node is one tensor-parallel group, so the
    all-reduces stay on NVLink while the all-to-alls between the groups (ranks 0 to 15) run on the
    network; --tp 4 --ep 2 fits one node and keeps them on NVLink."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape

    shape, h100 = load_shape("deepseek-ai/DeepSeek-V3"), find_hardware("H100")
    wl = Workload.decode(64, 2000, weight_dtype=DTYPES["fp8-b128"], act_dtype=DTYPES["bf16"], kv_dtype=DTYPES["bf16"])
    for tp, network in ((8, True), (4, False)):
        r = roofline(analyze_parallel(shape, wl, Parallel(tp, ep=2)), h100)
        hops = {p.kernel.role: p.hop for p in r.step.placements if p.kernel.kind == "collective"}
        assert hops == {"all_reduce": "link", "all_gather": "link", "all_to_all": "network" if network else "link"}


def test_pipeline_stages_and_the_step_they_make():
    """Layers split as evenly as possible, the first stages one more; a step is the first micro-batch
    through every stage, then one slowest-stage time per other micro-batch."""
    from roofcalc.parallel import Pipeline, stage_kernels, stage_layers

    assert stage_layers(32, 4) == [(0, 8), (8, 16), (16, 24), (24, 32)]
    assert stage_layers(30, 4) == [(0, 8), (8, 16), (16, 23), (23, 30)]
    pipe = Pipeline((1.0, 1.0, 1.0, 2.0), 4, 3)
    assert pipe.step_s == 5.0 + 3 * 2.0  # 11
    assert pipe.bubble == pytest.approx(1 - 4 * 5.0 / (4 * 11.0))  # 20 of the 44 stage-seconds busy
    from roofcalc.sources import load_shape

    shape = load_shape("meta-llama/Llama-2-7b-hf")
    micro = Workload.decode(4, 1000)
    parts = [stage_kernels(shape, micro, 4, s)[1] for s in range(4)]
    # the embedding on stage 0, lm_head on stage 3; a send of 4 x 4096 x 2 = 32,768 bytes between stages
    assert parts[0][0].name == "embed_tokens" and parts[3][-1].name == "lm_head"
    sends = [k for ks in parts for k in ks if k.name == "pp.send"]
    assert [k.message_bytes for k in sends] == [32_768] * 3
    assert sum(k.params * k.count for ks in parts for k in ks) == 6_738_415_616  # every parameter, once


def test_tensor_parallel_ranks_inside_pipeline_stages():
    """Llama-2-70B fp16, --tp 4 --pp 2 (8 GPUs), decode at batch 64 in 2 micro-batches of 32. A layer's
    rank holds (150,994,944 of attention + 704,643,072 of MLP) / 4 + 16,384 of norms = 213,925,888
    parameters. Stage 1 (layers 40-79) adds the final norm (8,192) and a quarter of lm_head (8192 x 32000 /
    4): 8,622,579,712; stage 0 a quarter of the embedding, 8,622,579,712 too. Stage 0 all-reduces the
    embedding's output and twice a layer, and sends 32 x 8192 x 2 = 524,288 bytes to stage 1; stage 1
    all-reduces twice a layer and gathers the logits."""
    from roofcalc.parallel import stage_kernels
    from roofcalc.sources import load_shape

    shape = load_shape("meta-llama/Llama-2-70b-hf")
    micro = Workload.decode(32, 1000)
    (_, s0), (_, s1) = (stage_kernels(shape, micro, 2, s, tp=4) for s in (0, 1))
    for ks in (s0, s1):
        assert sum(k.params * k.count for k in ks) == 40 * 213_925_888 + 8192 * 32000 // 4 + (8192 if ks is s1 else 0)
    comm0 = sorted((k.role, k.count, k.message_bytes) for k in s0 if k.kind == "collective")
    comm1 = sorted((k.role, k.count, k.message_bytes) for k in s1 if k.kind == "collective")
    hidden = 32 * 8192 * 2
    assert comm0 == sorted([("all_reduce", 1, hidden), ("all_reduce", 40, hidden), ("all_reduce", 40, hidden),
                            ("send", 1, hidden)])
    assert comm1 == sorted([("all_reduce", 40, hidden), ("all_reduce", 40, hidden),
                            ("all_gather", 1, 32 * 8000 * 2)])
    assert Parallel(4, pp=2).gpus == 8


def test_phi3_gathered_plan_inside_pipeline_stages():
    """Phi-3-mini (32 layers) at --tp 2 --pp 2: the two stages' kernels of one rank are the --tp 2 rank's
    (the plan tests/tp_worker.py checks on gloo), cut at layer 16: the same parameters, FLOPs and
    collectives in all, plus stage 0's send of 8 x 3072 x 2 bytes (its micro-batch's hidden states)."""
    from collections import Counter

    from roofcalc.parallel import stage_kernels, tp_kernels
    from roofcalc.sources import load_shape

    shape = load_shape("microsoft/Phi-3-mini-4k-instruct")
    wl = Workload.decode(8, 1000, **{k: DTYPES["bf16"] for k in FP32})
    whole = tp_kernels(shape, wl, 2)
    stages = [stage_kernels(shape, wl, 2, s, tp=2)[1] for s in (0, 1)]
    staged = [k for ks in stages for k in ks if k.role != "send"]

    def tally(ks, what):
        out = Counter()
        for k in ks:
            out[(k.name, k.role, k.message_bytes)] += k.count * what(k)
        return out

    for what in (lambda k: k.params, lambda k: k.cost.flops, lambda k: 1):
        assert tally(staged, what) == tally(whole, what)
    (send,) = [k for k in stages[0] if k.role == "send"]
    assert send.message_bytes == 8 * 3072 * 2
    assert any(k.name == "qkv_proj.all_gather" for k in stages[1])


def test_expert_parallel_ranks_inside_pipeline_stages():
    """Mixtral-8x7B bf16 at --pp 2 with --ep 4 and with --tp 2 --ep 2 (8 GPUs each), a micro-batch of 32:
    one rank's two stages hold, run and communicate what that rank of the unpipelined model does (the
    --ep and --tp --ep ranks, checked by hand above), cut at layer 16, plus stage 0's send of its share
    of the micro-batch: 32 / ep sequences x 4096 x 2 bytes, to the same rank of stage 1 (a stage is 4
    ranks: global ranks 0-3 send to 4-7, inside one 8-GPU node). A stage holds the KV cache of its
    layers for its rank's share of the step's 64 sequences."""
    from collections import Counter

    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import pipeline_roofline, stage_kernels
    from roofcalc.sources import load_shape

    shape = load_shape("mistralai/Mixtral-8x7B-v0.1")
    bf16 = {k: DTYPES["bf16"] for k in FP32}
    micro = Workload.decode(32, 1000, **bf16)

    def tally(ks, what):
        out = Counter()
        for k in ks:
            out[(k.name, k.role, k.message_bytes)] += k.count * what(k)
        return out

    for tp, ep in ((1, 4), (2, 2)):
        whole = analyze_parallel(shape, micro, Parallel(tp, ep=ep)).kernels
        stages = [stage_kernels(shape, micro, 2, s, tp, ep)[1] for s in (0, 1)]
        staged = [k for ks in stages for k in ks if k.role != "send"]
        for what in (lambda k: k.params, lambda k: k.cost.flops, lambda k: k.cost.bytes, lambda k: 1):
            assert tally(staged, what) == tally(whole, what)
        (send,) = [k for k in stages[0] if k.role == "send"]
        assert send.message_bytes == 32 // ep * 4096 * 2 and send.ranks == (0, 7)
    r = pipeline_roofline(shape, Workload.decode(64, 1000, **bf16), 2, 2, find_hardware("H100"), ep=4)
    a = r.analysis
    assert a.workload.batch == 8 and a.parallel.gpus == 8
    # 16 of the 64 sequences a rank, 16 layers x K and V x 8 KV heads x 128 x 2 bytes a position
    assert a.memory_bytes - a.weight_storage_bytes == 16 * 1000 * 16 * 2 * 8 * 128 * 2


def test_a_pipeline_send_between_nodes_runs_on_the_network():
    """Ranks fill node after node (8 H100s a node): at --tp 4 --pp 4 stage s holds ranks 4s to 4s + 3, so
    the sends of stages 0 and 2 (ranks 0-3 to 4-7, 8-11 to 12-15) stay in a node and stage 1's (4-7 to
    8-11) crosses to the second node. At --tp 8 --pp 2 stage 0's send (ranks 0-7 to 8-15) crosses;
    --pp 8 alone keeps its 8 ranks in one node. A send of 32 x 8192 x 2 = 524,288 bytes takes 524,288 /
    450e9 s over NVLink and 524,288 / 50e9 s over the network's 50 GB/s a GPU."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import roofline
    from roofcalc.parallel import StageAnalysis, stage_kernels
    from roofcalc.sources import load_shape

    shape, h100 = load_shape("meta-llama/Llama-2-70b-hf"), find_hardware("H100")
    micro = Workload.decode(32, 1000)

    def send(pp, stage, tp):
        sub, ks = stage_kernels(shape, micro, pp, stage, tp=tp)
        r = roofline(StageAnalysis(sub, micro, tuple(ks), parallel=Parallel(tp, pp=pp)), h100)
        return next(p for p in r.step.placements if p.kernel.name == "pp.send")

    hops = [send(4, s, 4).hop for s in range(3)]
    assert hops == ["link", "network", "link"]
    assert send(4, 1, 4).t_link_s == pytest.approx(524_288 / 50e9)
    assert send(4, 0, 4).t_link_s == pytest.approx(524_288 / 450e9)
    assert send(2, 0, 8).hop == "network"
    assert {send(8, s, 1).hop for s in range(7)} == {"link"}


def test_the_command_line_runs_a_pipeline(capsys):
    from roofcalc.cli import main

    assert main(["meta-llama/Llama-2-7b-hf", "--hw", "A100-80GB", "--pp", "4", "--batch", "16", "--context", "1000",
                 "--impl", "cuda-graph", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    par = doc["parallel"]
    assert par["pp"] == 4 and par["micro_batches"] == 4 and doc["workload"]["batch"] == 4
    assert par["step_s"] == pytest.approx(sum(par["stage_s"]) + 3 * max(par["stage_s"]))
    assert main(["meta-llama/Llama-2-7b-hf", "--pp", "64"]) == 2
    assert "more stages than" in capsys.readouterr().err
    # --tp inside the stages: the JSON says both, and each stage's table is one rank's
    assert main(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "4", "--pp", "2", "--batch", "64", "--context",
                 "1000", "--impl", "cuda-graph", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["parallel"]["tp"] == 4 and doc["parallel"]["pp"] == 2
    assert {k["name"] for k in doc["kernels"] if k["kind"] == "collective"} >= {"o_proj.all_reduce",
                                                                                 "down_proj.all_reduce"}
    # a --tp list inside the stages: 4 and 8 GPUs
    assert main(["meta-llama/Llama-2-70b-hf", "--tp", "2,4", "--pp", "2", "--format", "json"]) == 0
    assert [p["gpus"] for p in json.loads(capsys.readouterr().out)["tp_points"]] == [4, 8]
    assert main(["meta-llama/Llama-2-70b-hf", "--tp", "2,4", "--pp", "1,2"]) == 2
    assert "give a list to one of --tp, --pp and --ep at a time" in capsys.readouterr().err


def test_a_step_can_be_bound_by_communication():
    """TinyLlama over 4 T4s (PCIe Gen3, 15.75 GB/s a direction) at batch 512: each all-reduce of 512 x 2048
    x 2 = 2,097,152 bytes sends 2·3/4 of it = 3,145,728 bytes, 199.7 us on the link; 44 of them (8.8 ms on
    the link alone) outweigh every other kind of kernel time of the step."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import roofline
    from roofcalc.sources import load_shape

    r = roofline(analyze_parallel(load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode(512, 100), Parallel(4)),
                 find_hardware("T4"), impl="cuda-graph")
    o = next(p for p in r.step.placements if p.kernel.name == "o_proj.all_reduce")
    assert o.kernel.link_bytes == 3_145_728 and o.t_link_s == pytest.approx(3_145_728 / 15.75e9)
    assert o.bound == "link" and r.step.bound == "communication"


def _reduces(kernels) -> dict[str, int]:
    """Each all-reduce kernel's name (its layer tag dropped) and how many run."""
    out: dict[str, int] = {}
    for k in kernels:
        if k.role == "all_reduce":
            assert k.message_bytes == 2 * 1 * 256 * 4  # batch 2, one new token each, D 256, fp32
            name = k.name.split("[", 1)[0]
            out[name] = out.get(name, 0) + k.count
    return out


def test_serving_engines_sum_shared_and_routed_experts_before_one_all_reduce(tmp_path, capsys):
    """vLLM, SGLang and TensorRT-LLM build a MoE layer's shared expert without its own reduction and all-reduce the
    routed and shared experts' partial outputs summed (engines.Engine.tp_layout, each engine's model file cited
    there); transformers' plan, which the real runs above check, reduces each. At --tp 2, decode batch 2 of the
    configs above: DeepSeek-V3 (hand model; two layers, the first dense) and Qwen2-MoE (traced; both layers MoE)
    run one all-reduce fewer a MoE layer, each of 2·1·256·4 = 2,048 bytes, and every other kernel as before."""
    from dataclasses import replace

    from roofcalc.cli import main
    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank

    wl = Workload.decode(BATCH, PROMPT + 1, **FP32)
    cfg = next(c for f, _, c in CASES if f == "deepseek_v3")
    each = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(2))
    once = analyze_parallel(shape_from_config(cfg, "t"), replace(wl, tp_layout="serving"), Parallel(2))
    assert _reduces(each.kernels) == {"embed.all_reduce": 1, "o_proj.all_reduce": 2, "down_proj.all_reduce": 1,
                                      "experts.combine.all_reduce": 1, "shared_experts.down_proj.all_reduce": 1}
    assert _reduces(once.kernels) == {"embed.all_reduce": 1, "o_proj.all_reduce": 2, "down_proj.all_reduce": 1,
                                      "shared_experts.add.all_reduce": 1}  # after the add that sums the two
    assert [k for k in once.kernels if k.kind != "collective"] == [k for k in each.kernels if k.kind != "collective"]

    cfg = next(c for f, _, c in TRACED_ONLY if f == "qwen2_moe")
    config = hf_config(cfg, "t")[0]
    ranks = [traced_rank(trace(cfg, "t", w, use_cache=False), Parallel(2), config)
             for w in (wl, replace(wl, tp_layout="serving"))]
    assert [_reduces(r.kernels) for r in ranks] == [
        {"embed_tokens.all_reduce": 1, "self_attn.o_proj.all_reduce": 2, "mlp.shared_expert.down_proj.all_reduce": 2,
         "mlp.experts.all_reduce": 2},
        {"embed_tokens.all_reduce": 1, "self_attn.o_proj.all_reduce": 2, "mlp.add.all_reduce": 2}]
    # (the sum's all-reduce after the block's last kernel, the add of the gated shared output to the routed one)
    names = [k.name.split("[")[0] for k in ranks[1].kernels]
    assert names[names.index("mlp.add.all_reduce") - 1] == "mlp.add" and names.count("mlp.add") == 1
    assert "summed before one all-reduce" in ranks[1].plan_words and "summed before" not in ranks[0].plan_words

    # the command line takes the engine's: transformers' under the default, one a layer under a serving engine
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    for engine, shared in (("hf", 2), ("sglang", 0)):
        assert main([str(path), "--tp", "2", "--hw", "H100", "--engine", engine, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        rows = [k for k in doc["kernels"] if k["name"].startswith("mlp.shared_expert.down_proj.all_reduce")]
        assert sum(k["count"] for k in rows) == shared
        assert doc["workload"]["tp_layout"] == ("transformers" if engine == "hf" else "serving")


LLAMA4_TINY = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                   intermediate_size=512, intermediate_size_mlp=1024, vocab_size=1000, pad_token_id=0, head_dim=32,
                   num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2, model_type="llama4_text")


@pytest.mark.parametrize("flags, fewer", [(("--tp", "2"), True), (("--tp", "2", "--pp", "2"), True),
                                          (("--ep", "2", "--ep-attention", "tp"), True),
                                          (("--ep", "2", "--tp", "2"), False),
                                          (("--ep", "2", "--tp", "2", "--pp", "2", "--batch", "4", "--micro-batches",
                                            "2"), False)],
                         ids=["tp", "tp-pp", "ep-attention-tp", "ep-all-to-all", "ep-all-to-all-pp"])
@pytest.mark.parametrize("family", ["deepseek_v3", "llama4_text"])
def test_one_all_reduce_a_moe_layer_on_every_path_but_all_to_all(tmp_path, capsys, family, flags, fewer):
    """The serving presets' one all-reduce a MoE layer holds on every way roofcalc splits a step: the step under
    --engine sglang runs as many all-reduces as transformers' plan (--engine hf, --impl cuda-graph: the same
    kernels) less the shared experts' own, one a MoE layer, each of the same message; except where --ep moves
    the tokens in all-to-alls, where vLLM reduces the shared experts early (FusedMoE.must_reduce_shared_expert_
    outputs) and the two agree. The DeepSeek-V3 of the real runs above (hand model; 4 layers here, the first
    dense) and a Llama-4 (traced; dense and MoE layers in turn) at batch 2."""
    cfg = dict(next(c for f, _, c in CASES if f == "deepseek_v3"), num_hidden_layers=4) \
        if family == "deepseek_v3" else LLAMA4_TINY
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    from roofcalc.cli import main

    reduces = {}
    for engine in ("hf", "sglang"):
        assert main([str(path), "--hw", "H100", "--batch", "2", "--engine", engine, "--impl", "cuda-graph",
                     *flags, "--format", "json"]) == 0, capsys.readouterr().err
        kernels = json.loads(capsys.readouterr().out)["kernels"]
        reduces[engine] = [k for k in kernels if k.get("collective") == "all_reduce"]
        assert len({k["message_bytes"] for k in reduces[engine]}) == 1
    shared = sum(k["count"] for k in reduces["hf"] if "shared_expert" in k["name"])
    assert shared > 0  # a MoE layer on the rank shown, whose shared experts transformers' plan reduces apart
    count = {e: sum(k["count"] for k in reduces[e]) for e in reduces}
    assert count["sglang"] == count["hf"] - (shared if fewer else 0)
    assert any("shared_expert" in k["name"] and "down_proj" in k["name"] for k in reduces["sglang"]) != fewer


def test_a_sweeps_json_says_the_workload_as_a_single_steps(capsys):
    """A sweep's JSON workload record carries the single step's account of how the engine runs it (the cache
    update, the eager ops' bytes, a MoE layer's reduction, DeepSeek's attention), equal to the single step's
    record of a point: here DeepSeek-V3 at --tp 8 under SGLang and under the default engine."""
    from roofcalc.cli import main

    for engine in ("sglang", "hf"):
        docs = []
        for batch in ("1,2", "2"):
            assert main(["deepseek-ai/DeepSeek-V3", "--hw", "H200", "--tp", "8", "--engine", engine, "--batch", batch,
                         "--format", "json"]) == 0
            docs.append(json.loads(capsys.readouterr().out)["workload"])
        keys = ("attention", "cache_update", "eager_ops", "tp_layout", "mla")
        assert {k: docs[0][k] for k in keys} == {k: docs[1][k] for k in keys}
        assert docs[0]["tp_layout"] == ("serving" if engine == "sglang" else "transformers")


def _both_layouts(cfg: dict):
    """A decode step of ``cfg`` (batch 2 at context 6, fp32, the cache written in place) at --tp 2: (its serving
    workload, transformers' config, the rank under the serving engines' split, the rank under transformers' plan)."""
    from dataclasses import replace

    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank

    wl = Workload.decode(BATCH, PROMPT + 1, **FP32, cache_update="in-place", tp_layout="serving")
    config = hf_config(cfg, "t")[0]
    return (wl, config, traced_rank(trace(cfg, "t", wl, use_cache=False), Parallel(2), config),
            traced_rank(trace(cfg, "t", replace(wl, tp_layout="transformers"), use_cache=False), Parallel(2), config))


def test_phi3_in_the_serving_layout_splits_its_heads_as_llama(capsys):
    """transformers' plan gathers Phi-3's fused qkv_proj and gate_up_proj outputs (every head on every rank, the
    real runs above); vLLM, SGLang and TensorRT-LLM run Phi-3 as Llama (engines.Engine.tp_layout_source), each rank
    its N/T heads, K/T KV heads and F/T of the MLP. The config above (D 256, 8 heads and 2 KV heads of 32, F 512,
    2 layers, vocabulary 1,000) at --tp 2, decode batch 2 at context 6, fp32, the cache written in place: per layer
    qkv_proj 2·2·256·(4 + 2·1)·32 FLOPs, gate_up_proj 2·2·256·2·256, o_proj 2·2·128·256, down_proj 2·2·256·256,
    lm_head 2·2·256·500; the KV cache half the gathered plan's (1 of the 2 KV heads a rank); an all-reduce after
    o_proj and after down_proj (2·256·4 bytes), the embedding's, and lm_head's all-gather (2·500·4), no other.
    The hand model and the traced rank (trace.parallel.SERVING_SPLITS) agree."""
    from dataclasses import replace

    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank

    cfg = next(c for f, _, c in CASES if f == "phi3")
    wl = Workload.decode(BATCH, PROMPT + 1, **FP32, cache_update="in-place", tp_layout="serving")
    hand = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(2))
    gathered = analyze_parallel(shape_from_config(cfg, "t"), replace(wl, tp_layout="transformers"), Parallel(2))
    traced = traced_rank(trace(cfg, "t", wl, use_cache=False), Parallel(2), hf_config(cfg, "t")[0])
    per_layer = 2 * 2 * 256 * 6 * 32 + 2 * 2 * 256 * 2 * 256 + 2 * 2 * 128 * 256 + 2 * 2 * 256 * 256
    for a in (hand, traced):
        weights = sum(k.cost.matmul_flops * k.count for k in a.kernels if k.kind == "matmul" and k.params)
        assert weights == 2 * per_layer + 2 * 2 * 256 * 500
        coll = sorted((k.role, k.message_bytes, k.count) for k in a.kernels if k.kind == "collective")
        assert coll == sorted([("all_reduce", 2 * 256 * 4, 1), ("all_reduce", 2 * 256 * 4, 2),
                               ("all_reduce", 2 * 256 * 4, 2), ("all_gather", 2 * 500 * 4, 1)])
        assert 2 * a.totals.kv_bytes == gathered.totals.kv_bytes
    # and each says so in its shape per rank: 4 heads, 1 KV head, F 256 a rank; every head and F 512 gathered
    traced_gathered = traced_rank(trace(cfg, "t", replace(wl, tp_layout="transformers"), use_cache=False),
                                  Parallel(2), hf_config(cfg, "t")[0])
    for a, heads in ((hand, (4, 1, 256)), (traced, (4, 1, 256)), (gathered, (8, 2, 512)), (traced_gathered, (8, 2, 512))):
        assert (a.shape.n_heads, a.shape.n_kv_heads, a.shape.d_ff) == heads
    # the command line: the header says whose split, and the host-bound default's verdict what vLLM's changes
    from roofcalc.cli import main

    assert main(["microsoft/Phi-3-mini-4k-instruct", "--hw", "H100", "--tp", "2", "--engine", "sglang"]) == 0
    assert "the serving engines' split of phi3" in " ".join(capsys.readouterr().out.split())
    assert main(["microsoft/Phi-3-mini-4k-instruct", "--hw", "H100", "--tp", "2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "gathered, so every head and its KV cache run on every rank" in out and "Phi-3's heads split" in out
    # a --tp the gathered plan runs and the serving split refuses (32 heads on 64 ranks): the verdict says so
    assert main(["microsoft/Phi-3-mini-4k-instruct", "--hw", "H100", "--tp", "64"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--engine vllm would refuse it: --tp 64 does not divide num_attention_heads 32" in out


def test_glm4_in_the_serving_layout_splits_its_mlp_as_llama(tmp_path, capsys):
    """transformers' plan for GLM-4-0414 (glm4) gathers the fused gate_up_proj's outputs and splits down_proj's
    input from the whole width (colwise_gather_output, rowwise_split_input); vLLM runs the MLP as Llama's
    (trace.parallel.GLM_SERVING). A glm4 of D 256, 8 heads and 2 KV heads of 32, F 512, 2 layers, at --tp 2, decode
    batch 2 at context 6, fp32, in place:
    - both: gate_up_proj 2·2·256·(2·512)/2 FLOPs a layer on the rank, down_proj 2·2·256·256 (its input split);
    - gathered: an all-gather of gate_up_proj's rank share a layer, 2·512·4 bytes, and the activation and the
      product after it on the whole width: twice the serving split's bytes, which has no all-gather;
    - the shape per rank: F 512 gathered (the activation's width), 256 under the split."""
    from roofcalc.cli import main

    cfg = dict(BASE, model_type="glm4", num_key_value_heads=2, head_dim=32, pad_token_id=0)
    wl, config, serving, gathered = _both_layouts(cfg)

    def flops(a, name):
        return sum(k.cost.matmul_flops * k.count for k in a.kernels if k.name == name)

    def between(a):  # the MLP's ops after gate_up_proj, not matmuls or collectives
        return sum(k.cost.bytes * k.count for k in a.kernels if k.name.startswith("mlp.")
                   and k.kind not in ("matmul", "collective"))

    for a in (serving, gathered):
        assert flops(a, "mlp.gate_up_proj") == 2 * 2 * 2 * 256 * 1024 // 2
        assert flops(a, "mlp.down_proj") == 2 * 2 * 2 * 256 * 256
    gathers = [(k.name, k.message_bytes, k.count) for k in gathered.kernels if k.role == "all_gather"
               and k.name.startswith("mlp.")]
    assert gathers == [("mlp.gate_up_proj.all_gather", 2 * 512 * 4, 2)]
    assert not [k for k in serving.kernels if k.role == "all_gather" and k.name.startswith("mlp.")]
    assert between(serving) > 0 and between(gathered) == 2 * between(serving)
    assert (serving.shape.d_ff, gathered.shape.d_ff) == (256, 512)
    # the command line: the serving engines' split in the header, and what it changes in the default's verdict
    path = tmp_path / "glm4.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--hw", "H100", "--tp", "2", "--engine", "vllm"]) == 0
    assert "vLLM runs its MLP as Llama's" in " ".join(capsys.readouterr().out.split())
    assert main([str(path), "--hw", "H100", "--tp", "2"]) == 0
    assert "the MLP split" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("family", ["olmo2", "olmoe", "flex_olmo", "minimax_m2"])
def test_a_norm_over_every_head_in_the_serving_layout_splits_the_heads(family, tmp_path, capsys):
    """transformers' plans for OLMo-2, OLMoE, FlexOlmo and MiniMax-M2 gather q, k and v (q_norm and k_norm span every head's width):
    every rank runs every head. vLLM splits the heads (trace.parallel.OLMO2_SERVING, MINIMAX_M2_SERVING). A model of
    D 256, 8 heads and 2 KV heads of 32, 2 layers, at --tp 2, decode batch 2 at context 6, fp32, in place:
    - both layouts: q_proj 2·2·256·(8·32)/2 FLOPs a layer, k_proj and v_proj 2·2·256·(2·32)/2;
    - transformers': an all-gather after q, k and v (2·128·4, 2·32·4 and 2·32·4 bytes), every head's attention on
      the rank, the whole KV cache (2 KV heads);
    - OLMo-2 (OLMoE and FlexOlmo the same: vLLM's olmoe.py) under vLLM: the rank's q and k all-gathered for their norms (2·128·4 and 2·32·4 bytes), the norms whole
      (weights 256 and 64), no all-gather of v; 4 heads and 1 KV head on the rank (half the cache);
    - MiniMax-M2 under vLLM: no all-gather; q_norm and k_norm on the rank's 128 and 32 channels with half their
      weights, one all-reduce of their sums of squares, 2 tokens x 2 norms x 4 bytes = 16 bytes, a layer."""
    from roofcalc.cli import main

    cfg = dict(BASE, model_type=family, num_key_value_heads=2, head_dim=32, pad_token_id=0)
    if family == "minimax_m2":
        cfg.update(num_local_experts=4, num_experts_per_tok=2)
    if family in ("olmoe", "flex_olmo"):
        cfg.update(num_experts=4, num_experts_per_tok=2)
    wl, config, serving, gathered = _both_layouts(cfg)

    def row(a, name):
        return next(k for k in a.kernels if k.name == name)

    for a in (serving, gathered):
        assert row(a, "self_attn.q_proj").cost.matmul_flops == 2 * 2 * 256 * 8 * 32 // 2
        assert row(a, "self_attn.k_proj").cost.matmul_flops == row(a, "self_attn.v_proj").cost.matmul_flops \
            == 2 * 2 * 256 * 2 * 32 // 2

    def collectives(a):
        return sorted((k.name, k.role, k.message_bytes, k.count) for k in a.kernels
                      if k.kind == "collective" and k.name.startswith("self_attn.") and "o_proj" not in k.name)

    assert collectives(gathered) == [("self_attn.k_proj.all_gather", "all_gather", 2 * 32 * 4, 2),
                                     ("self_attn.q_proj.all_gather", "all_gather", 2 * 128 * 4, 2),
                                     ("self_attn.v_proj.all_gather", "all_gather", 2 * 32 * 4, 2)]
    assert (gathered.shape.n_heads, gathered.shape.n_kv_heads) == (8, 2)
    assert (serving.shape.n_heads, serving.shape.n_kv_heads) == (4, 1)
    assert 2 * serving.totals.kv_bytes == gathered.totals.kv_bytes
    if family != "minimax_m2":
        assert collectives(serving) == [("self_attn.k_norm.all_gather", "all_gather", 2 * 32 * 4, 2),
                                        ("self_attn.q_norm.all_gather", "all_gather", 2 * 128 * 4, 2)]
        assert (row(serving, "self_attn.q_norm").params, row(serving, "self_attn.k_norm").params) == (256, 64)
    else:
        assert collectives(serving) == [("self_attn.k_norm.all_reduce", "all_reduce", 2 * 2 * 4, 2)]
        assert (row(serving, "self_attn.q_norm").params, row(serving, "self_attn.k_norm").params) == (128, 32)
        assert 2 * row(serving, "self_attn.q_norm").cost.bytes == row(gathered, "self_attn.q_norm").cost.bytes
    # the command line: the serving engines' split in the header; --tp 4 splits 8 heads but not 2 KV heads' norms
    # under vLLM's split, where transformers' gathered plan runs it
    path = tmp_path / f"{family}.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--hw", "H100", "--tp", "2", "--engine", "vllm"]) == 0
    assert "vLLM splits its heads" in " ".join(capsys.readouterr().out.split())
    assert main([str(path), "--hw", "H100", "--tp", "4", "--engine", "vllm"]) == 2
    assert f"--tp 4 and 2 KV heads: vLLM's split of {family} norms each rank's share of k" in \
        capsys.readouterr().err
    assert main([str(path), "--hw", "H100", "--tp", "4"]) == 0  # transformers' plan gathers every head: it runs


def test_a_gated_delta_net_in_the_serving_layout_splits_by_heads(tmp_path, capsys):
    """transformers' plan gathers a gated delta net's projections (the real runs above: every rank runs all 8
    value heads, three all-gathers a layer); vLLM, SGLang and TensorRT-LLM split it by heads (trace.parallel.
    GDN_SERVING). The Qwen3-Next above (D 256; 2 gated delta nets of 4 key and 8 value heads of 32, conv kernel 4;
    2 attention layers of 8 heads and 2 KV heads of 32) at --tp 2, decode batch 2 at context 6, fp32, in place:
    - a gated delta net's projections split their outputs under both: in_proj_qkvz 2·2·256·(2·4·32 + 2·8·32)/2,
      in_proj_ba 2·2·256·16/2, out_proj 2·2·(8·32)/2·256 (serving: its input split; gathered: its output);
    - its collectives: serving one all-reduce after out_proj (2·256·4 bytes); gathered an all-gather of each
      projection's output, 2·384·4, 2·8·4 and 2·128·4 bytes;
    - the state a rank moves: the recurrent state 2 sequences·8 heads·32·32·4 = 65,536 bytes a layer read by the
      delta rule, the conv state 2·(2·4·32 + 8·32)·4·4 = 16,384 written by the conv, half of each under serving;
    - the rank's cache: its KV head's keys and values, 2 layers·2·6·2·32·4 = 6,144 bytes, under both (1 of the 2
      KV heads), and the states whole (2·(65,536 + 16,384)) or half;
    - its parameters: the conv weight (8·32 + 2·4·32 channels · 4), A_log and dt_bias (8 each) half a layer
      under serving, whole under the gathered plan (whose rank the real run holds);
    and --tp 8 is refused where the 4 key heads do not split, --tp 16 where the 8 attention heads do not."""
    from dataclasses import replace

    from roofcalc.cli import main
    from roofcalc.trace import trace
    from roofcalc.trace.parallel import traced_rank

    cfg = next(c for f, _, c in TRACED_ONLY if f == "qwen3_next")
    wl, config, serving, gathered = _both_layouts(cfg)

    def total(a, name, what):
        return sum(getattr(k.cost, what) * k.count for k in a.kernels if k.name == name)

    for a in (serving, gathered):
        assert total(a, "linear_attn.in_proj_qkvz", "matmul_flops") == 2 * 2 * 2 * 256 * 768 // 2
        assert total(a, "linear_attn.in_proj_ba", "matmul_flops") == 2 * 2 * 2 * 256 * 16 // 2
        assert total(a, "linear_attn.out_proj", "matmul_flops") == 2 * 2 * 2 * 128 * 256
        assert a.traced_kv_bytes_per_token == 2 * 2 * 32 * 4
    coll = {a: sorted((k.name, k.role, k.message_bytes, k.count) for k in a.kernels
                      if k.kind == "collective" and k.name.startswith("linear_attn")) for a in (serving, gathered)}
    assert coll[serving] == [("linear_attn.out_proj.all_reduce", "all_reduce", 2 * 256 * 4, 2)]
    assert coll[gathered] == [("linear_attn.in_proj_ba.all_gather", "all_gather", 2 * 8 * 4, 2),
                              ("linear_attn.in_proj_qkvz.all_gather", "all_gather", 2 * 384 * 4, 2),
                              ("linear_attn.out_proj.all_gather", "all_gather", 2 * 128 * 4, 2)]
    for a, share in ((serving, 2), (gathered, 1)):
        assert total(a, "linear_attn.torch_recurrent_gated_delta_rule", "kv_read_bytes") == 2 * 65_536 // share
        assert total(a, "linear_attn.causal_conv1d_update", "kv_write_bytes") == 2 * 16_384 // share
        assert a.traced_cache_bytes == 6_144 + 2 * (65_536 + 16_384) // share
    assert gathered.params - serving.params == 2 * (512 * 4 // 2 + 8 // 2 + 8 // 2)
    # the conv's shape text on the rank: its 2·4·32 + 8·32 = 512 channels, 256 a rank, in its input and its weight
    # (whose kernel of 4 taps is no head count)
    assert [k.dims for k in serving.kernels if k.name == "linear_attn.causal_conv1d_update"] == \
        ["[2,256,5]x[256,1,4]"]
    with pytest.raises(RoofcalcError, match="--tp 8 does not divide linear_attn's linear_num_key_heads 4"):
        traced_rank(trace(cfg, "t", wl, use_cache=False), Parallel(8), config)
    # and --tp 16 under the gathered plan, where every projection's outputs divide (k_proj's 2·32 = 64) but the
    # attention's 8 heads do not: refused as a hand family's heads are, not run on half a head a rank
    with pytest.raises(RoofcalcError, match="--tp 16 does not divide num_attention_heads 8"):
        traced_rank(trace(cfg, "t", replace(wl, tp_layout="transformers"), use_cache=False), Parallel(16), config)
    # the command line: whose split, in the header; and the host-bound default's verdict says what vLLM's changes
    path = tmp_path / "qwen3_next.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--hw", "H100", "--tp", "2", "--engine", "sglang"]) == 0
    assert "split a gated delta net by heads" in " ".join(capsys.readouterr().out.split())
    # (and under --ep with tensor-parallel attention, which splits the rest as --tp does)
    assert main([str(path), "--hw", "H100", "--ep", "2", "--ep-attention", "tp", "--engine", "sglang"]) == 0
    assert "split a gated delta net by heads" in " ".join(capsys.readouterr().out.split())
    assert main([str(path), "--hw", "H100", "--tp", "2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "but linear_attn gathers its projections' outputs (colwise_gather_output)" in out
    assert "the linear attention split by heads)" in out
    # a multimodal checkpoint whose text config holds the gated delta nets (Qwen3.5-4B: a qwen3_5 holding a
    # qwen3_5_text) takes the split by its text config's type: no all-gather but lm_head's, 24 all-reduces after out_proj
    published = Path(__file__).resolve().parents[1] / "benchmarks" / "configs" / "published" / "Qwen--Qwen3.5-4B.json"
    assert main([str(published), "--hw", "H100", "--tp", "4", "--engine", "vllm", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "split a gated delta net by heads" in " ".join(out.split())
    assert [line.split()[0] for line in out.splitlines() if ".all_gather" in line] == ["lm_head.all_gather"]
    assert any(line.split()[:2] == ["linear_attn.out_proj.all_reduce", "x24"] for line in out.splitlines())


def test_nemotron_h_in_the_serving_layout_splits_its_mamba_mixers_and_mlps():
    """transformers' plan splits Nemotron-H's attention alone (the real run above: its Mamba-2 and MLP blocks whole on
    every rank); vLLM splits the Mamba-2 mixer by heads and groups and the MLP as Llama's (trace.parallel.
    NEMOTRON_H_SERVING). The Nemotron-H above with 2 groups (D 256; Mamba-2 of 8 heads of 64 (I 512), state 16,
    conv kernel 4: conv channels 512 + 2·2·16 = 576, in_proj 2·512 + 2·2·16 + 8 = 1,096; MLP 512; attention of 8
    heads and 2 KV heads of 32) at --tp 2, decode batch 2 at context 6, fp32, in place:
    - serving: in_proj 2·2·256·1096/2 FLOPs, out_proj 2·2·(512/2)·256 then an all-reduce of 2·256·4 bytes, each MLP's
      up_proj 2·2·256·(512/2) and down_proj 2·2·(512/2)·256 then an all-reduce; gathered: all whole, no all-reduce
      but the attention's and the embedding's;
    - the rank's cache: the one attention layer's keys and values of its KV head, 2 sequences·6·2·32·4 = 3,072
      bytes, and the states whole (the SSM state 2·8·64·16·4 = 65,536, the conv state 2·576·4·4 = 18,432) or half;
    - its parameters, whole less serving's: in_proj 256·1096/2, out_proj 512·256/2, the conv's weight and bias
      (576·4 + 576)/2, A_log, D and dt_bias 3·8/2, the gated norm 512/2, two MLPs 2·(256·512 + 512·256)/2 and
      lm_head 256·1000/2 (vLLM's ParallelLMHead; transformers' NemotronHForCausalLM has no plan for it);
    and a mixer of one group as vLLM runs it (below)."""
    from dataclasses import replace

    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank

    cfg = dict(next(c for f, _, c in TRACED_ONLY if f == "nemotron_h"), n_groups=2)
    wl, config, serving, gathered = _both_layouts(cfg)

    def flops(a, name):
        return sum(k.cost.matmul_flops * k.count for k in a.kernels if k.name == name)

    for a, n in ((serving, 2), (gathered, 1)):
        assert flops(a, "mixer.in_proj") == 2 * 2 * 256 * 1096 // n
        assert flops(a, "mixer.out_proj") == 2 * 2 * (512 // n) * 256
        assert flops(a, "mixer.up_proj") == 2 * (2 * 2 * 256 * 512 // n)
        assert flops(a, "mixer.down_proj") == 2 * (2 * 2 * 512 * 256 // n)
        assert a.traced_cache_bytes == 3_072 + (65_536 + 18_432) // n
    reduces = {a: sorted((k.name, k.message_bytes, k.count) for k in a.kernels if k.kind == "collective")
               for a in (serving, gathered)}
    assert reduces[gathered] == [("embeddings.all_reduce", 2 * 256 * 4, 1), ("mixer.o_proj.all_reduce", 2048, 1)]
    # (and lm_head by the vocabulary, as vLLM's ParallelLMHead: an all-gather of 2·500·4 bytes of logits)
    assert reduces[serving] == sorted(reduces[gathered] + [("mixer.down_proj.all_reduce", 2048, 2),
                                                           ("mixer.out_proj.all_reduce", 2048, 1),
                                                           ("lm_head.all_gather", 2 * 500 * 4, 1)])
    assert gathered.params - serving.params == (256 * 1096 + 512 * 256 + 576 * 4 + 576 + 3 * 8 + 512
                                                + 2 * (256 * 512 + 512 * 256) + 256 * 1000) // 2
    # one group (vLLM's MambaMixer2 with n_groups 1): every rank holds the group's B and C whole (2·16 channels of
    # in_proj's 2·512 + 2·16 + 8 = 1,064 and of the conv's 512 + 2·16 = 544), its heads' z, x and dt half; the
    # gated norm's sums of squares all-reduced, one fp32 value a token (2·4 bytes)
    one = dict(cfg, n_groups=1)
    rank = traced_rank(trace(one, "t", wl, use_cache=False), Parallel(2), hf_config(one, "t")[0])
    assert flops(rank, "mixer.in_proj") == 2 * 2 * 256 * ((1064 - 32) // 2 + 32)
    conv = next(k for k in rank.kernels if k.name == "mixer.causal_conv1d_update")
    whole_conv = next(k for k in trace(one, "t", wl, use_cache=False).kernels if k.name == "mixer.causal_conv1d_update")
    assert conv.cost.kv_write_bytes * 544 == whole_conv.cost.kv_write_bytes * (512 // 2 + 32)
    assert ("mixer.norm.all_reduce", "all_reduce", 2 * 4, 1) in [(k.name, k.role, k.message_bytes, k.count)
                                                                 for k in rank.kernels if k.kind == "collective"]
    # its cache: the KV head's 3,072 bytes, half the SSM state (65,536 / 2) and the conv state of 512/2 + 32 of its
    # 544 channels (2 sequences·288·4 positions·4 bytes)
    assert rank.traced_cache_bytes == 3_072 + 65_536 // 2 + 2 * 288 * 4 * 4
    with pytest.raises(RoofcalcError, match="--tp 3 does not divide mixer's mamba_num_heads 8"):
        traced_rank(trace(one, "t", wl, use_cache=False), Parallel(3), hf_config(one, "t")[0])
    # Bamba's mixer (one group; I = 16 heads·32, state 16) split as vLLM runs it: in_proj 2·2·256·((2·512 + 2·16 +
    # 16 - 2·16)/2 + 2·16) FLOPs, out_proj's and the norm's all-reduces; a Mamba-2 hybrid with no serving split
    # modelled (Falcon-H1, whose plan splits no layer) keeps its mixers whole under the serving layout too, and its
    # header says so
    from test_trace import config as traced_config

    bamba = traced_config("bamba")
    rank = traced_rank(trace(bamba, "t", wl, use_cache=False), Parallel(2), hf_config(bamba, "t")[0])
    assert flops(rank, "mamba.in_proj") == 2 * 2 * 256 * ((2 * 512 + 2 * 16 + 16 - 2 * 16) // 2 + 2 * 16)
    assert {"mamba.out_proj.all_reduce", "mamba.norm.all_reduce"} <= {k.name for k in rank.kernels}
    # a hybrid with no serving split modelled for its recurrent mixers (LFM2-MoE's short convolutions, its split
    # taken away here) keeps them whole under the serving layout, and its header says so
    from roofcalc.trace import parallel as trace_parallel

    lfm2 = dict(traced_config("lfm2"), model_type="lfm2_moe", num_dense_layers=2, num_experts=4, num_experts_per_tok=2,
                moe_intermediate_size=128)
    with pytest.MonkeyPatch.context() as mp:
        mp.delitem(trace_parallel.SERVING_SPLITS, "lfm2_moe")
        for layout, said in (("serving", True), ("transformers", False)):
            rank = traced_rank(trace(lfm2, "t", replace(wl, tp_layout=layout), use_cache=False), Parallel(2),
                               hf_config(lfm2, "t")[0])
            assert ("its recurrent mixers (conv) whole on every rank" in rank.plan_words) is said


def _collectives(a) -> list:
    return sorted((k.name, k.message_bytes, k.count) for k in a.kernels if k.kind == "collective")


@pytest.mark.parametrize("family", ["hunyuan_v1_dense", "lfm2", "falcon_h1"])
def test_a_plan_that_splits_no_layer_runs_split_in_the_serving_layout(family):
    """transformers 5.25's plans for Hunyuan-7B, LFM2 and Falcon-H1 split the embedding and lm_head alone (every
    layer whole on every rank); vLLM splits their layers (trace.parallel.HUNYUAN_SERVING, LFM2_SERVING,
    FALCON_H1_SERVING, each read in its model file). The small configs of test_trace (D 256, 8 heads and 2 KV heads
    of 32, F 512, 2 layers, vocabulary 1,000) at --tp 2, decode batch 2 at context 6, fp32, in place; each rank:
    - attention: q_proj 2·2·256·128 FLOPs a layer, k_proj and v_proj 2·2·256·32, o_proj 2·2·128·256, an
      all-reduce of 2·256·4 bytes after it; its KV cache 2 sequences·6 positions·2·1 KV head·32·4 bytes = 3,072
      a layer (6,144 whole);
    - the MLP: gate and up (LFM2's w1 and w3) 2·2·256·256 each, down (w2) 2·2·256·256, an all-reduce after it;
    - LFM2's short convolution (layer 0; layer 1 attention): in_proj 2·2·256·(3·256/2), out_proj 2·2·128·256 and
      its all-reduce, the conv state 2 sequences·128 channels·3 positions·4 bytes = 3,072 (6,144 whole);
    - Falcon-H1's Mamba-2 mixer (16 heads of 32, one group of state 16, conv kernel 4, beside attention in both
      layers): in_proj 2·2·256·((1,072 - 32)/2 + 32) (z and x 2·512, dt 16 split; the group's B and C, 2·16, whole),
      out_proj 2·2·256·256 and its all-reduce; the SSM state 2·16/2·32·16·4 = 32,768 a layer, the conv state
      2·(512/2 + 32)·4·4 = 9,216 (65,536 and 17,408 whole); its multipliers on the mixer's input and the MLP's
      reduced output on the whole hidden state ([2,1,256]);
    transformers' plan: the same projections whole (twice the FLOPs), no all-reduce but the embedding's."""
    from test_trace import config as traced_config

    wl, config, serving, gathered = _both_layouts(traced_config(family))
    del wl, config

    def flops(a, name):
        return sum(k.cost.matmul_flops * k.count for k in a.kernels if k.name == name)

    attention_layers = {"hunyuan_v1_dense": 2, "lfm2": 1, "falcon_h1": 2}[family]
    out = "out_proj" if family == "lfm2" else "o_proj"
    mlp = ({"feed_forward.w1": 256, "feed_forward.w3": 256, "feed_forward.w2": 256} if family == "lfm2" else
           {f"{block}.{p}": 256 for p in ("gate_proj", "up_proj", "down_proj")
            for block in ["feed_forward" if family == "falcon_h1" else "mlp"]})
    down = next(name for name in mlp if name.endswith(("w2", "down_proj")))
    expected = {"self_attn.q_proj": 2 * 2 * 256 * 128 * attention_layers,
                "self_attn.k_proj": 2 * 2 * 256 * 32 * attention_layers,
                f"self_attn.{out}": 2 * 2 * 128 * 256 * attention_layers,
                **{name: 2 * 2 * 256 * width * 2 for name, width in mlp.items()}}
    reduces = [("embed_tokens.all_reduce", 2 * 256 * 4, 1), ("lm_head.all_gather", 2 * 500 * 4, 1),
               (f"self_attn.{out}.all_reduce", 2 * 256 * 4, attention_layers), (f"{down}.all_reduce", 2 * 256 * 4, 2)]
    cache = 3_072 * attention_layers
    if family == "lfm2":
        expected.update({"conv.in_proj": 2 * 2 * 256 * 384, "conv.out_proj": 2 * 2 * 128 * 256})
        reduces.append(("conv.out_proj.all_reduce", 2 * 256 * 4, 1))
        cache += 3_072
    if family == "falcon_h1":
        expected.update({"mamba.in_proj": 2 * 2 * 256 * 552 * 2, "mamba.out_proj": 2 * 2 * 256 * 256 * 2})
        reduces.append(("mamba.out_proj.all_reduce", 2 * 256 * 4, 2))
        cache += (32_768 + 9_216) * 2
        assert {k.dims for k in serving.kernels if k.name in ("mamba.mul", "feed_forward.mul#3")} == {"[2,1,256]"}
        # the multiplier on in_proj's outputs runs on the rank's 552 of them, the gate's SiLU on half the heads'
        # 512 channels (not the conv's 288 of 544)
        rank, whole = ({k.name: k for k in a.kernels} for a in (serving, gathered))
        assert rank["mamba.mul#2"].dims == "[2,1,552]"
        assert rank["mamba.mul#2"].cost.flops * 1072 == whole["mamba.mul#2"].cost.flops * 552
        assert (rank["mamba.silu#2"].dims, 2 * rank["mamba.silu#2"].cost.flops) == \
            ("[2,1,256]", whole["mamba.silu#2"].cost.flops)
    assert {name: flops(serving, name) for name in expected} == expected
    assert all(flops(gathered, name) > expected[name] for name in expected)
    assert _collectives(serving) == sorted(reduces)
    assert _collectives(gathered) == sorted(reduces[:2])
    assert serving.traced_cache_bytes == cache
    assert gathered.traced_cache_bytes == {"hunyuan_v1_dense": 12_288, "lfm2": 12_288,
                                           "falcon_h1": (6_144 + 65_536 + 17_408) * 2}[family]
    assert "splits no layer" in gathered.plan_words and "vLLM splits" in serving.plan_words


# Mamba-1 and Mamba-2 configs at test_trace's sizes (D 256, 2 layers, vocabulary 1,000): a Mamba-1 mixer of inner
# width I 512 (expand 2), state 16, conv kernel 4, dt_rank 16; Mamba-2's of 16 heads of 32 (I 512) in 2 groups
MAMBA1 = dict(model_type="mamba", hidden_size=256, state_size=16, num_hidden_layers=2, vocab_size=1000,
              time_step_rank=16)
JAMBA = dict(model_type="jamba", hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
             intermediate_size=512, vocab_size=1000, pad_token_id=0, attn_layer_period=2, attn_layer_offset=1,
             expert_layer_period=2, expert_layer_offset=1, num_experts=4, num_experts_per_tok=2, mamba_d_state=16,
             mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=16)


def test_jambas_mamba_mixers_and_mlps_split_in_the_serving_layout():
    """transformers' plan splits Jamba's attention alone (roofcalc its routed experts on their width, as 5.24's plan
    did); vLLM's jamba.py runs
    its Mamba-1 mixers as MambaMixer splits them (trace.parallel.MAMBA1_SERVING: in_proj, conv1d and dt_proj
    column-parallel, x_proj row-parallel with an all-reduce, out_proj row-parallel) and its dense MLP as Llama's.
    The small Jamba above (layer 0 a mixer and a dense MLP of 512, layer 1 attention of 8 heads and 2 KV heads of 32
    and 4 experts) at --tp 2, decode batch 2 at context 6, fp32, each rank:
    - serving: in_proj 2·2·256·(2·512/2) FLOPs, x_proj 2·2·(512/2)·48 (dt_rank 16 + 2·16) then an all-reduce of
      2·48·4 bytes, the dt, B and C norms on that reduced whole (transformers' FLOPs), dt_proj (the trace's ``mm``)
      2·2·16·(512/2), out_proj 2·2·(512/2)·256 then an all-reduce of 2·256·4; the MLP's gate and up 2·2·256·256 each,
      down 2·2·256·256 and its all-reduce; transformers' plan: all of them whole, none of those all-reduces;
    - the cache: the attention layer's 2 sequences·6·2·1 KV head·32·4 = 3,072 bytes, the conv state 2·512·4·4 =
      16,384 and the SSM state 2·512·16·4 = 65,536 whole, or half;
    - parameters, whole less serving's: in_proj 256·1024, conv1d 512·4 + 512, x_proj 512·48, dt_proj 16·512 + 512
      (its weight and bias, held by no kernel: transformers runs it as a bare matmul), A_log 512·16, D 512,
      out_proj 512·256, the MLP 3·256·512, each halved. In all, whole 3,082,032: embedding and lm_head 2·256,000,
      the mixer 437,808 (those, and its three norms of 16), the MLP 393,216, attention 163,840, router 1,024,
      experts 4·3·256·512, five norms of 256; a serving rank holds the norms and the router whole and half of the
      rest: (3,082,032 - 2,352) / 2 + 2,352 = 1,542,192."""
    wl, config, serving, gathered = _both_layouts(JAMBA)
    del wl, config

    def flops(a, name):
        return sum(k.cost.matmul_flops * k.count for k in a.kernels if k.name == name)

    for a, n in ((serving, 2), (gathered, 1)):
        assert flops(a, "mamba.in_proj") == 2 * 2 * 256 * 1024 // n
        assert flops(a, "mamba.x_proj") == 2 * 2 * (512 // n) * 48
        assert flops(a, "mamba.mm") == 2 * 2 * 16 * (512 // n)
        assert flops(a, "mamba.out_proj") == 2 * 2 * (512 // n) * 256
        assert all(flops(a, f"feed_forward.{p}") == 2 * 2 * 256 * 512 // n for p in ("gate_proj", "up_proj"))
        assert a.traced_cache_bytes == 3_072 + (16_384 + 65_536) // n
    rank, whole = ({k.name: k for k in a.kernels} for a in (serving, gathered))
    assert all(rank[f"mamba.{x}_layernorm"].cost == whole[f"mamba.{x}_layernorm"].cost for x in ("dt", "b", "c"))
    # the scan's read of A ([I, state]) and its state update ([batch, I, state]) on the rank's 256 of I's 512
    assert (rank["mamba.mamba_scan_forward"].dims, rank["mamba.mamba_selective_state_update"].dims) == \
        ("[256,16]", "[2,256,16]x[2,16,1]")
    assert [c for c in _collectives(serving) if c not in _collectives(gathered)] == [
        ("feed_forward.down_proj.all_reduce", 2 * 256 * 4, 1), ("mamba.out_proj.all_reduce", 2 * 256 * 4, 1),
        ("mamba.x_proj.all_reduce", 2 * 48 * 4, 1)]
    assert gathered.params - serving.params == (256 * 1024 + 512 * 4 + 512 + 512 * 48 + 16 * 512 + 512 + 512 * 16
                                                + 512 + 512 * 256 + 3 * 256 * 512) // 2
    assert (gathered.full.params, serving.params) == (3_082_032, 1_542_192)
    # the header says the split, and no longer that the mixers run whole
    assert "Mamba-1 mixers" in serving.plan_words and "whole on every rank, as transformers'" not in \
        serving.plan_words


def test_a_state_updates_rows_are_the_batch_times_the_ranks_heads_whatever_width_they_equal():
    """A Mamba-2 state update runs on [batch x heads, head dim, state]. test_trace's Bamba (16 heads of 32, one
    group of state 16: conv channels 512 + 2·16 = 544, a rank's 256 + 32 = 288) decoding 34 sequences at --tp 2:
    34·16 = 544 rows, the conv's width by coincidence; the rank's are 34·8 = 272, not the conv's 288."""
    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank
    from test_trace import config as traced_config

    bamba = traced_config("bamba")
    wl = Workload.decode(34, PROMPT + 1, **FP32, cache_update="in-place", tp_layout="serving")
    rank = traced_rank(trace(bamba, "t", wl, use_cache=False), Parallel(2), hf_config(bamba, "t")[0])
    update = next(k for k in rank.kernels if k.name.endswith("selective_state_update"))
    assert update.dims.startswith("[272,") and "x[272," in update.dims


def test_an_op_after_a_rowwise_projection_outside_a_recurrent_mixer_stays_on_the_ranks_heads():
    """Doge's plan has a rowwise dt_proj inside attention, between the colwise q, k and v and the rowwise o_proj; the
    attention after it reads the rank's q, k and v, so it runs on the rank's heads (only a recurrent mixer's ops
    between a rowwise projection and the next colwise one read that projection's reduced output alone). The small
    Doge (D 256, 8 heads and 2 KV heads of 32, 2 layers) at --tp 2 under its plan, decode batch 2 at context 6,
    fp32: the rank's attention reads its one KV head, 2 sequences·6 positions·2·32·4 = 3,072 bytes a layer, half
    the whole's, and does half its FLOPs; its cache 2 layers·3,072 bytes."""
    cfg = dict(model_type="doge", hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
               num_key_value_heads=2, vocab_size=1000, is_moe=False, pad_token_id=0)
    wl, config, serving, gathered = _both_layouts(cfg)
    del wl, config
    rank, whole = ({k.name: k for k in a.kernels} for a in (gathered, gathered.full))
    assert "self_attn.dt_proj.all_reduce" in rank
    assert rank["self_attn.attention"].cost.kv_read_bytes == 3_072 == whole["self_attn.attention"].cost.kv_read_bytes // 2
    assert 2 * rank["self_attn.attention"].cost.flops == whole["self_attn.attention"].cost.flops
    assert gathered.traced_cache_bytes == 2 * 3_072


@pytest.mark.parametrize("family", ["mamba", "falcon_mamba", "mamba2"])
def test_an_attention_free_model_splits_as_vllm_splits_it(family):
    """Mamba, FalconMamba and Mamba-2 have no plan in transformers; vLLM's mamba.py and mamba2.py split them
    (trace.parallel.SERVING_PLANS: the mixers on their inner width or by heads and groups, a VocabParallelEmbedding
    and a ParallelLMHead), in either layout. The configs above at --tp 2, decode batch 2 at context 6, fp32, each
    rank:
    - Mamba-1 (Mamba's, FalconMamba's): in_proj 2·2·256·(1024/2) FLOPs a layer, x_proj 2·2·256·48 then an all-reduce
      of 2·48·4 bytes, out_proj 2·2·256·256 then one of 2·256·4; FalconMamba's weightless dt, B and C norms whole;
      parameters, whole 1,132,288 (the tied embedding 256,000, 2 mixers of 437,760, 3 norms of 256): the norms whole,
      half the rest, (1,132,288 - 768) / 2 + 768 = 566,528; its states 2 layers·(16,384 + 65,536) bytes, halved;
    - Mamba-2 (2 groups): in_proj 2·2·256·(2·512 + 2·2·16 + 16)/2, no all-reduce for its gated norm (each rank
      normalizes its own group); parameters, whole 1,347,040 (embedding and lm_head 2·256,000, 2 mixers of
      417,136 and their norms): (1,347,040 - 768) / 2 + 768 = 673,904; the conv state of 512 + 2·2·16 = 576
      channels (2·576·4·4 = 18,432) and the SSM state (2·16·32·16·4 = 65,536) a layer, halved; --tp 4 divides its
      16 heads but not its 2 groups: refused.
    In every one the embedding's all-reduce (2·256·4 bytes) and lm_head's all-gather (2·500·4)."""
    from dataclasses import replace

    from roofcalc.trace import trace
    from roofcalc.trace.parallel import traced_rank

    cfg = dict(MAMBA1, model_type=family) if family != "mamba2" else \
        dict(MAMBA1, model_type="mamba2", num_heads=16, head_dim=32, n_groups=2, expand=2)
    wl, config, serving, gathered = _both_layouts(cfg)
    assert _collectives(serving) == _collectives(gathered)

    def flops(a, name):
        return sum(k.cost.matmul_flops * k.count for k in a.kernels if k.name == name)

    reduces = [("backbone.embeddings.all_reduce", 2 * 256 * 4, 1), ("lm_head.all_gather", 2 * 500 * 4, 1),
               ("mixer.out_proj.all_reduce", 2 * 256 * 4, 2)]
    if family == "mamba2":
        assert flops(serving, "mixer.in_proj") == 2 * 2 * 2 * 256 * 1104 // 2
        assert (serving.full.params, serving.params) == (1_347_040, 673_904)
        assert serving.traced_cache_bytes == 2 * (18_432 + 65_536) // 2
        # the state update runs on [batch x heads, head dim, state]: the rank's 8 of 16 heads, 2·8 = 16 rows (the
        # state size, 16 too, stays); A's ops on the rank's 8 heads
        rank = {k.name: k for k in serving.kernels}
        assert (rank["mixer.mamba2_selective_state_update"].dims, rank["mixer.exp"].dims) == \
            ("[16,32,16]x[16,16,1]", "[8]")
        with pytest.raises(RoofcalcError, match="--tp 4 does not divide mixer's n_groups 2"):
            traced_rank(trace(cfg, "t", wl, use_cache=False), Parallel(4), config)
    else:
        assert flops(serving, "mixer.in_proj") == 2 * 2 * 2 * 256 * 512
        assert flops(serving, "mixer.x_proj") == 2 * 2 * 2 * 256 * 48
        reduces.append(("mixer.x_proj.all_reduce", 2 * 48 * 4, 2))
        assert (serving.full.params, serving.params) == (1_132_288, 566_528)
        assert serving.traced_cache_bytes == 2 * (16_384 + 65_536) // 2
        if family == "falcon_mamba":
            rank, whole = ({k.name: k for k in a.kernels} for a in (serving, serving.full))
            assert rank["mixer.dt_layernorm"].cost == whole["mixer.dt_layernorm"].cost
        with pytest.raises(RoofcalcError, match="--tp 3 does not divide mixer's intermediate_size 512"):
            traced_rank(trace(cfg, "t", replace(wl, tp_layout="transformers"), use_cache=False), Parallel(3), config)
    assert _collectives(serving) == sorted(reduces)


def test_a_single_groups_op_is_scaled_by_the_width_it_runs_on_not_a_batch_that_equals_one():
    """A Mamba-2 mixer with one group: an elementwise op runs on the conv's channels (544 in the Falcon-H1 config
    above: the group's B and C whole on every rank), on in_proj's outputs (1,072), or on the heads' width alone.
    The width is read where it sits: the last axis ([batch, tokens, width]) or, in the conv's layout
    [batch, channels, tokens], the second; a batch of 544 sequences or a prompt of 3,328 tokens (Granite 4.0-H-Tiny's
    conv channels) is not taken for one."""
    from roofcalc.trace.parallel import _op_width

    widths = {544, 1072}
    assert _op_width("[2,1,1072]", widths, 1) == 1072
    assert _op_width("[2,544,1]", widths, 1) == 544  # the conv's activation, decoding
    assert _op_width("[2,544,100]", widths, 100) == 544  # and over a 100-token prompt
    assert _op_width("[544,1,512]", widths, 1) == 0  # the gate's SiLU at batch 544
    assert _op_width("[1,3328,3072]", {3328}, 3328) == 0  # Granite's gated norm over a 3,328-token prompt


def test_a_layer_kind_that_first_runs_later_splits_its_heads_as_the_first_does():
    """Ministral's sliding and full layers (window 64) at context 100: the full layer's attention and cache update
    are rows of their own, first run in layer 1, after layer 0's o_proj in the step's rows; each rank still runs its
    4 heads and 1 KV head of them, half the whole step's FLOPs and KV bytes, in either layout (an op of a split
    module is held against the projections of its own first layer)."""
    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank
    from test_trace import config as traced_config

    cfg = traced_config("ministral")
    config = hf_config(cfg, "t")[0]
    for layout in ("serving", "transformers"):
        wl = Workload.decode(BATCH, 100, **FP32, cache_update="in-place", tp_layout=layout)
        whole = {k.name: k for k in trace(cfg, "t", wl, use_cache=False).kernels}
        rank = {k.name: k for k in traced_rank(trace(cfg, "t", wl, use_cache=False), Parallel(2), config).kernels}
        for name in ("self_attn.attention[1]", "self_attn.kv_cache_update[1]"):
            assert 2 * rank[name].cost.flops == whole[name].cost.flops
            assert 2 * rank[name].cost.kv_bytes == whole[name].cost.kv_bytes > 0
        assert rank["self_attn.attention[1]"].dims == "[2,4,1,32]x[2,1,100,32]"


@pytest.mark.parametrize("layout", ["serving", "transformers"])
def test_a_sparse_attention_indexer_runs_whole_on_every_rank(layout):
    """DeepSeek-V3.2's and GLM-5's lightning indexer sits inside the attention the plan splits by heads; the plan
    names none of it, and vLLM and SGLang run it whole (ReplicatedLinear projections): every rank runs all 4 of
    its heads, its projections and its key cache whole, while the attention's q_b_proj, kv_b_proj and o_proj split
    (a small deepseek_v32: D 256, 8 heads, q LoRA 64, latent 32 + rope 16, the indexer 4 heads of 32, at --tp 2,
    decode batch 2 at context 6, fp32): q_b_proj 2·2·64·(8/2)·48 FLOPs, the indexer's wq_b 2·2·64·4·32."""
    from roofcalc.trace import hf_config, trace
    from roofcalc.trace.parallel import traced_rank

    cfg = dict(model_type="deepseek_v32", hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
               num_key_value_heads=8, intermediate_size=512, vocab_size=1000, pad_token_id=0, q_lora_rank=64,
               kv_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32, index_n_heads=4,
               index_head_dim=32, index_topk=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=64,
               first_k_dense_replace=1, n_group=1, topk_group=1)
    wl = Workload.decode(BATCH, PROMPT + 1, **FP32, cache_update="in-place", tp_layout=layout)
    whole = trace(cfg, "t", wl, use_cache=False)
    rank = traced_rank(whole, Parallel(2), hf_config(cfg, "t")[0])
    mine = {k.name: k for k in rank.kernels}
    indexer = [k for k in whole.kernels if k.name.startswith("self_attn.indexer.")]
    assert len(indexer) > 10 and all(mine[k.name].cost == k.cost for k in indexer)
    assert mine["self_attn.indexer.wq_b"].cost.matmul_flops == 2 * 2 * 64 * 4 * 32
    assert mine["self_attn.q_b_proj"].cost.matmul_flops == 2 * 2 * 64 * 4 * 48
    assert ("self_attn.o_proj.all_reduce", 2 * 256 * 4, 2) in _collectives(rank)


def test_lfm2_moe_in_the_serving_layout_splits_its_convolutions_and_runs_its_heads_through_its_norms():
    """LFM2-MoE: transformers' plan splits its attention alone (q_layernorm and k_layernorm replicated, over one
    head's width); vLLM splits its short convolutions and dense MLPs as LFM2's (trace.parallel.LFM2_MOE_SERVING). A
    3-layer one (conv, attention, conv; layer 0 dense, D 256, 8 heads and 2 KV heads of 32, F 512, 4 experts of 128,
    top 2) at --tp 2, decode batch 2 at context 6, fp32, in place: conv.in_proj 2·2·256·384 FLOPs in each conv layer
    and out_proj's all-reduce (2·256·4 bytes), w1 2·2·256·256 in the dense layer; the norms run on the rank's
    heads, q_layernorm on 2·4·32 values ([2,1,4,32]: 2·4·32·4 bytes read and as many written, its weight 32·4
    whole), k_layernorm on its one KV head ([2,1,1,32]), under either layout (the plan splits the attention)."""
    from test_trace import config as traced_config

    cfg = dict(traced_config("lfm2"), model_type="lfm2_moe", num_hidden_layers=3, num_dense_layers=1,
               layer_types=["conv", "full_attention", "conv"], num_experts=4, num_experts_per_tok=2,
               moe_intermediate_size=128)
    _, _, serving, gathered = _both_layouts(cfg)

    def flops(a, name):
        return sum(k.cost.matmul_flops * k.count for k in a.kernels if k.name == name)

    assert flops(serving, "conv.in_proj") == 2 * 2 * 2 * 256 * 384 == flops(gathered, "conv.in_proj") // 2
    assert flops(serving, "feed_forward.w1") == 2 * 2 * 256 * 256 == flops(gathered, "feed_forward.w1") // 2
    assert ("conv.out_proj.all_reduce", 2 * 256 * 4, 2) in _collectives(serving)
    assert not [k for k in gathered.kernels if k.name == "conv.out_proj.all_reduce"]
    for a in (serving, gathered):
        q, k = (next(x for x in a.kernels if x.name == f"self_attn.{n}_layernorm") for n in "qk")
        assert (q.dims, k.dims) == ("[2,1,4,32]", "[2,1,1,32]")
        assert (q.cost.act_read_bytes, q.cost.act_write_bytes, q.cost.weight_bytes) == (2 * 4 * 32 * 4,) * 2 + (32 * 4,)
