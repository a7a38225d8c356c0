"""--tp for a traced model: each kernel's rank share read off its config class's base_model_tp_plan.

The oracle is the hand model's rank (roofcalc.parallel), which tests/test_parallel.py holds to a real
distributed run of transformers' own plan: the same config traced and split by the plan must give the
same projections, collectives, attention, weights and KV cache, kernel by kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from roofcalc import Workload, shape_from_config  # noqa: E402
from roofcalc.calculator import DTYPES  # noqa: E402
from roofcalc.cli import main  # noqa: E402
from roofcalc.parallel import Parallel, analyze_parallel  # noqa: E402
from roofcalc.trace import hf_config, trace  # noqa: E402
from roofcalc.trace.parallel import traced_rank  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASE = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512, vocab_size=1000,
            pad_token_id=0)
DENSE = {"llama": dict(BASE, model_type="llama", num_key_value_heads=2),
         "llama-tied": dict(BASE, model_type="llama", num_key_value_heads=2, tie_word_embeddings=True),
         "qwen3": dict(BASE, model_type="qwen3", num_key_value_heads=2, head_dim=32),
         "mistral": dict(BASE, model_type="mistral", num_key_value_heads=2, sliding_window=None),
         "qwen2": dict(BASE, model_type="qwen2", num_key_value_heads=2),
         "gemma": dict(BASE, model_type="gemma", num_key_value_heads=2, head_dim=32),
         "phi3": dict(BASE, model_type="phi3", num_key_value_heads=2)}


def _rank(cfg: dict, wl: Workload, tp: int):
    return traced_rank(trace(cfg, "t", wl, view="ideal", use_cache=False), Parallel(tp=tp), hf_config(cfg, "t")[0])


def _kernel(a, hand_name: str):
    """The traced kernel a hand kernel is: the same module name, or one ending in '.' + it."""
    hits = [k for k in a.kernels if k.name == hand_name or k.name.endswith("." + hand_name)]
    assert len(hits) == 1, (hand_name, [k.name for k in hits])
    return hits[0]


TRACED_NAMES = {"embed.all_reduce": "embed_tokens.all_reduce", "kv_cache_write": "kv_cache_update"}


@pytest.mark.parametrize("name", sorted(DENSE))
@pytest.mark.parametrize("tp", [2, 4])
def test_a_traced_rank_equals_the_hand_models_rank(name, tp):
    """Every projection, collective, the cache write and the attention core of one --tp rank, traced and
    split by the config class's plan, move the hand model's rank's bytes and FLOPs exactly (the same
    kernels agree unsplit: tests/test_trace.py); so do the rank's weights, KV cache and parameters. With
    4 ranks and 2 KV heads each rank keeps one, replicated, on both paths."""
    cfg = DENSE[name]
    if tp == 4 and cfg["model_type"] == "phi3":
        pytest.skip("the hand model's gathered plan refuses 2 KV heads on 4 ranks too")
    wl = Workload.decode(2, 17, cache_update="in-place")
    hand = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(tp=tp))
    rank = _rank(cfg, wl, tp)
    compared = 0
    for h in hand.kernels:
        if h.kind in ("matmul", "collective") or h.name == "kv_cache_write":
            t = _kernel(rank, TRACED_NAMES.get(h.name, h.name))
            assert (t.cost.bytes, t.cost.matmul_flops, t.count, t.params) == \
                (h.cost.bytes, h.cost.matmul_flops, h.count, h.params), h.name
            assert (t.message_bytes, t.link_bytes, t.group) == (h.message_bytes, h.link_bytes, h.group), h.name
            compared += 1
    att, hatt = _kernel(rank, "attention").cost, hand.kernel("attention").cost
    assert (att.kv_read_bytes, att.matmul_flops) == (hatt.kv_read_bytes, hatt.matmul_flops)
    assert sum(k.kind == "collective" for k in rank.kernels) == sum(k.kind == "collective" for k in hand.kernels)
    assert compared >= 10
    assert (rank.params, rank.weight_storage_bytes, rank.kv_bytes_per_token, rank.memory_bytes) == \
        (hand.params, hand.weight_storage_bytes, hand.kv_bytes_per_token, hand.memory_bytes)
    assert rank.full.params == hand.full.params


MOE = {"mixtral": dict(BASE, model_type="mixtral", num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                       sliding_window=None),
       "qwen3_moe": dict(BASE, model_type="qwen3_moe", num_key_value_heads=2, head_dim=32, num_experts=4,
                         num_experts_per_tok=2, moe_intermediate_size=128)}


@pytest.mark.parametrize("name", sorted(MOE))
def test_traced_experts_split_on_their_width_as_the_hand_models_are(name):
    """transformers' moe_tp_experts: every rank holds every routed expert at half its width, the router
    whole, one all-reduce after the experts. The trace runs the experts as two grouped matmuls (the
    hand model as gate_up_proj and down_proj): their FLOPs and weight bytes together, every collective,
    the rank's parameters, weights, KV cache and matmul FLOPs equal the hand model's --tp 2 rank."""
    cfg = MOE[name]
    wl = Workload.decode(2, 17, cache_update="in-place")
    hand = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(tp=2))
    rank = _rank(cfg, wl, 2)

    def experts(a):
        ks = [k for k in a.kernels if "experts" in k.name and k.kind == "matmul"]
        return sum(k.cost.matmul_flops * k.count for k in ks), sum(k.cost.weight_bytes * k.count for k in ks)

    def collectives(a):
        return [(k.role, k.count, k.message_bytes, k.link_bytes) for k in a.kernels if k.kind == "collective"]

    assert experts(rank) == experts(hand)
    assert collectives(rank) == collectives(hand) and len(collectives(hand)) == 4
    assert _kernel(rank, "mlp.experts.all_reduce").count == 2
    assert (rank.params, rank.weight_storage_bytes, rank.kv_bytes_per_token, rank.memory_bytes,
            rank.totals.matmul_flops) == (hand.params, hand.weight_storage_bytes, hand.kv_bytes_per_token,
                                          hand.memory_bytes, hand.totals.matmul_flops)


def test_a_prefill_rank_splits_every_projection_as_the_hand_model_does():
    """Prefill: 2 sequences of 16 tokens, every projection and collective on 32 rows."""
    cfg = DENSE["llama"]
    wl = Workload.prefill(2, 16)
    hand, rank = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(tp=2)), _rank(cfg, wl, 2)
    for h in hand.kernels:
        if h.kind in ("matmul", "collective"):
            t = _kernel(rank, TRACED_NAMES.get(h.name, h.name))
            assert (t.cost.bytes, t.cost.flops, t.message_bytes) == (h.cost.bytes, h.cost.flops, h.message_bytes)


def test_the_ops_between_a_split_and_its_reduction_run_on_the_ranks_share():
    """Llama at --tp 2, decode of 2 sequences: SiLU runs on [2, 512 / 2] (256 FLOPs x 2 tokens = 512,
    one a element) and reads and writes that in fp16 (2 x 256 x 2 bytes = 1,024 each); the norms
    before the split run whole on every rank (the trace's own count, unchanged)."""
    cfg = DENSE["llama"]
    wl = Workload.decode(2, 17)
    one = trace(cfg, "t", wl, view="ideal", use_cache=False)
    rank = _rank(cfg, wl, 2)
    act = rank.kernel("mlp.act_fn").cost
    assert (act.flops, act.act_read_bytes, act.act_write_bytes) == (512, 1024, 1024)
    assert rank.kernel("input_layernorm").cost == one.kernel("input_layernorm").cost
    assert rank.kernel("norm").cost == one.kernel("norm").cost


def test_a_ranks_shape_column_shows_its_share():
    """The shape column of the ops a rank runs on its share: llama's 8 query heads, 2 KV heads and F = 512 on
    2 ranks are 4, 1 and 256 (the trace's [B, heads, S, H] and [B, S, F]). Where an operand has a split width
    on two axes (8 keys and 8 heads) the text cannot say which: it stays the whole model's and says so."""
    cfg = DENSE["llama"]
    rank = _rank(cfg, Workload.decode(2, 17), 2)
    assert rank.kernel("self_attn.attention").dims == "[2,4,1,32]x[2,1,17,32]"
    assert rank.kernel("self_attn.kv_cache_update").dims == "[2,1,17,32]"
    assert rank.kernel("mlp.act_fn").dims == "[2,1,256]"
    assert rank.kernel("input_layernorm").dims == "[2,1,256]"  # whole on every rank: D, not split
    clash = _rank(cfg, Workload.decode(8, 8), 2)
    assert clash.kernel("self_attn.attention").dims == "[8,8,1,32]x[8,2,8,32] (all ranks)"


FALCON_180B = ROOT / "docs" / "configs" / "falcon-180B.json"


def _falcon_caches_every_query_head() -> bool:
    """transformers' Falcon (new_decoder_architecture) cached K and V broadcast to every query head through
    5.24; 5.25 runs it through the shared attention interface (repeat_kv inside attention) and caches its KV
    heads. A traced count is what the installed release computes."""
    import transformers

    return tuple(int(x) for x in transformers.__version__.split(".")[:2]) < (5, 25)


def test_falcon_180b_at_tp_4():
    """tiiuae/falcon-180B's sizes (docs/configs/falcon-180B.json, as TensorRT-LLM's performance overview
    lists them for the model, which it runs at TP 4 and 8): D = 14,848, 80 layers, 232 heads of
    64, 8 KV heads, the MLP 4D = 59,392 wide, vocabulary 65,024, attention and MLP side by side
    (new_decoder_architecture), bf16. FalconConfig has no base_model_tp_plan in transformers 5.24 or 5.25, so
    the plan is vLLM's Falcon: the fused query_key_value split by whole heads (232/4 = 58 query heads
    and 8/4 = 2 KV groups a rank: (58 + 2 x 2) x 64 = 3,968 outputs), dense on 14,848/4 = 3,712 inputs,
    dense_h_to_4h on 59,392/4 = 14,848 outputs, dense_4h_to_h on 14,848 inputs, lm_head on 65,024/4 =
    16,256 logits; one all-reduce a layer (dense skips its own, the two partial outputs are summed
    first) and one after the vocab-parallel embedding: 80 + 1 = 81, each of 1 token x 14,848 x 2 bytes
    = 29,696; one all-gather of the 16,256 logits (32,512 bytes a rank)."""
    cfg = json.loads(FALCON_180B.read_text())
    b = DTYPES["bf16"]
    wl = Workload.decode(1, 1024, weight_dtype=b, act_dtype=b, kv_dtype=b)
    rank = _rank(cfg, wl, 4)
    sizes = {n: rank.kernel(n).sizes for n in ("self_attention.query_key_value", "self_attention.dense",
                                                "mlp.dense_h_to_4h", "mlp.dense_4h_to_h", "lm_head")}
    assert [(z.n, z.k) for z in sizes.values()] == [(3968, 14848), (14848, 3712), (14848, 14848),
                                                   (14848, 14848), (16256, 14848)]
    reduces = [k for k in rank.kernels if k.role == "all_reduce"]
    assert sum(k.count for k in reduces) == 81
    assert {k.message_bytes for k in reduces} == {29696}
    assert [k.name for k in reduces] == ["transformer.word_embeddings.all_reduce", "mlp.dense_4h_to_h.all_reduce"]
    gather = [k for k in rank.kernels if k.role == "all_gather"]
    assert [(k.name, k.message_bytes) for k in gather] == [("lm_head.all_gather", 32512)]
    # a rank's parameters: per layer query_key_value 14,848 x 3,968, dense 3,712 x 14,848, the MLP
    # 2 x 14,848 x 14,848 and two LayerNorms (weight and bias) whole, 4 x 14,848; the embedding's
    # quarter (lm_head is tied to it) and ln_f whole
    layer = 14848 * 3968 + 3712 * 14848 + 2 * 14848 * 14848 + 4 * 14848
    assert rank.params == 80 * layer + 65024 * 14848 // 4 + 2 * 14848
    assert rank.weight_storage_bytes == 2 * rank.params
    # through transformers 5.24 Falcon cached its keys and values broadcast to the 232 query heads: a rank
    # its 58; from 5.25 its 8 KV heads: a rank its 8/4 = 2
    assert rank.kv_bytes_per_token == 80 * 2 * (58 if _falcon_caches_every_query_head() else 2) * 64 * 2


def test_falcons_cache_splits_over_more_ranks_than_kv_heads():
    """tiiuae/falcon-40b (benchmarks/configs/published: 128 heads of 64, 8 KV groups, 60 layers) at --tp 16,
    more ranks than KV groups: its query_key_value keeps one KV group a rank (replicated): (8 + 2 x 1) x 64 =
    640 outputs. Through transformers 5.24 Falcon cached K and V broadcast to every query head, so the KV
    groups did not bound the split: a rank cached its 128/16 = 8 query heads', 60 x 2 x 8 x 64 x 2 bytes a
    token; from 5.25 it caches its KV heads, a rank its one replicated group: 60 x 2 x 1 x 64 x 2."""
    cfg = json.loads((ROOT / "benchmarks" / "configs" / "published" / "tiiuae--falcon-40b.json").read_text())
    b = DTYPES["bf16"]
    rank = _rank(cfg, Workload.decode(1, 64, weight_dtype=b, act_dtype=b, kv_dtype=b), 16)
    assert rank.kv_bytes_per_token == 60 * 2 * (8 if _falcon_caches_every_query_head() else 1) * 64 * 2
    assert rank.kernel("self_attention.query_key_value").sizes.n == 640


def test_a_sequential_falcon_reduces_twice_a_layer():
    """Falcon with attention then the MLP (parallel_attn false, the old decoder): vLLM's plan all-reduces
    after dense and after dense_4h_to_h, 2 a layer x 2 layers, and one after the embedding."""
    cfg = dict(model_type="falcon", hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
               new_decoder_architecture=False, multi_query=False, parallel_attn=False, bias=False, alibi=False,
               vocab_size=1000)
    rank = _rank(cfg, Workload.decode(2, 17), 2)
    reduces = [k for k in rank.kernels if k.role == "all_reduce"]
    assert sorted((k.name, k.count) for k in reduces) == [("mlp.dense_4h_to_h.all_reduce", 2),
                                                          ("self_attention.dense.all_reduce", 2),
                                                          ("transformer.word_embeddings.all_reduce", 1)]


GPT_OSS_120B = ROOT / "benchmarks" / "configs" / "published" / "openai--gpt-oss-120b.json"


def test_gpt_oss_120b_at_tp_8_by_vllms_plan(capsys):
    """openai/gpt-oss-120b (its published config.json: D = 2,880, 36 layers, 64 query heads and 8 KV heads of
    64, 128 experts of width I = 2,880, top 4, vocabulary 201,088, biased projections, attention sinks) at --tp 8.
    transformers 5.25's GptOssConfig plan splits the embedding alone, so the plan is vLLM's gpt-oss: q/k/v by
    whole heads (64/8 = 8 query heads and 8/8 = 1 KV head a rank: 512 and 64 outputs), o_proj on 512 inputs
    (its bias whole), the router whole, the experts every one at 1/8 of its width (gate and up onto
    2 x 2,880 / 8 = 720), lm_head on 201,088 / 8 = 25,136 logits. transformers 5.25 traces the experts as one
    kernel (mlp.experts)."""
    import transformers

    if any(".*." in key for key in transformers.GptOssConfig.base_model_tp_plan):
        pytest.skip("this transformers' GptOssConfig plan splits its layers itself")
    cfg = json.loads(GPT_OSS_120B.read_text())
    b = DTYPES["bf16"]
    wl = Workload.decode(1, 1024, weight_dtype=b, act_dtype=b, kv_dtype=b)
    rank = _rank(cfg, wl, 8)
    sizes = {n: rank.kernel(n).sizes for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                "self_attn.o_proj", "mlp.router", "mlp.experts", "lm_head")}
    assert [(z.n, z.k) for z in sizes.values()] == [(512, 2880), (64, 2880), (64, 2880), (2880, 512), (128, 2880),
                                                   (720, 2880), (25136, 2880)]
    # an all-reduce after the vocab-parallel embedding, after o_proj and after the experts in each layer: 1 + 2 x 36
    # = 73, each of 1 token x 2,880 x 2 bytes = 5,760; one all-gather of the 25,136 logits (50,272 bytes a rank)
    reduces = [k for k in rank.kernels if k.role == "all_reduce"]
    assert sum(k.count for k in reduces) == 73 and {k.message_bytes for k in reduces} == {5760}
    assert [(k.name, k.message_bytes) for k in rank.kernels if k.role == "all_gather"] == [("lm_head.all_gather", 50272)]
    # the experts' one kernel reads its input and writes its (partial) output whole: 1 x 2,880 x 2 = 5,760 bytes
    experts = rank.kernel("mlp.experts")
    assert experts.cost.act_write_bytes == 5760
    # its FLOPs and weights an eighth of the whole kernel's (every expert on 1/8 of its width)
    whole = next(k for k in trace(cfg, "t", wl, view="ideal", use_cache=False).kernels if k.name == "mlp.experts")
    assert experts.cost.matmul_flops == whole.cost.matmul_flops // 8
    # in the eager view the kernel also moves its intermediates (gate/up's 2I-wide output and the activation's):
    # those are the rank's 1/8; the input and the partial output, 5,760 bytes each, stay whole
    eager = trace(cfg, "t", wl, view="eager", use_cache=False)
    e_whole = next(k for k in eager.kernels if k.name == "mlp.experts").cost
    e_rank = traced_rank(eager, Parallel(tp=8), hf_config(cfg, "t")[0]).kernel("mlp.experts").cost
    assert e_whole.act_read_bytes > 4 * 5760
    assert e_rank.act_read_bytes == 5760 + (e_whole.act_read_bytes - 5760) // 8
    assert e_rank.act_write_bytes == 5760 + (e_whole.act_write_bytes - 5760) // 8
    # a rank's parameters, per layer: q 2,880 x 512 + 512, k and v 2,880 x 64 + 64 each, o_proj 512 x 2,880 + 2,880,
    # the router 2,880 x 128 + 128, the experts 128 x (2,880 x 5,760 + 5,760 + 2,880 x 2,880 + 2,880) / 8, two norms
    # 2 x 2,880 and 64 / 8 = 8 sinks; the embedding's and lm_head's eighth and the final norm whole
    layer = (2880 * 512 + 512) + 2 * (2880 * 64 + 64) + (512 * 2880 + 2880) + (2880 * 128 + 128) + \
        128 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880) // 8 + 2 * 2880 + 8
    assert rank.params == 36 * layer + 2 * 201088 * 2880 // 8 + 2880
    assert rank.weight_storage_bytes == 2 * rank.params
    assert rank.kv_bytes_per_token == 36 * 2 * 1 * 64 * 2  # K and V of its one KV head
    # the checkpoint's MXFP4 experts (half a byte a weight and a one-byte scale for each 32: 17/32 of a byte): an
    # eighth of each layer's stacks, 128 x (2,880 x 5,760 + 2,880 x 2,880) weights, 2 - 17/32 bytes lighter each
    mx = _rank(cfg, Workload.decode(1, 1024, weight_dtype=DTYPES["mxfp4"], act_dtype=b, kv_dtype=b, group_size=32), 8)
    stacks = 128 * (2880 * 5760 + 2880 * 2880)
    assert mx.params == rank.params
    assert mx.weight_storage_bytes == rank.weight_storage_bytes - 36 * (stacks * 2 - stacks * 17 // 32) // 8
    assert main([str(GPT_OSS_120B), "--hw", "H100-SXM", "--tp", "8", "--dtype", "bf16"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # a whole request (prefill, then a sweep of decode steps fitted on traced probes): its rank's rounded-down shares
    # leave the fit 2.2e-5 off a direct trace, inside the check's tolerance (sweep.check_corners)
    assert main([str(GPT_OSS_120B), "--hw", "H200", "--tp", "8", "--batch", "8", "--prompt", "1024",
                 "--generate", "1024"]) == 0
    assert "vLLM's plan for gpt-oss, as GptOssConfig's base_model_tp_plan splits no layer" in out



def test_llama4s_dense_experts_are_split_in_a_ranks_weights():
    """llama4_text (D = 256, 8 heads and 2 KV heads of 32, 4 experts of width I = 512 run as one dense batched
    matmul, a shared expert of 512, vocabulary 1,000) at --tp 2: transformers' plan splits the experts' stacks
    (gate_up_proj packed_rowwise, down_proj colwise), bare parameters of the experts module, and a rank holds half
    of them (it held them whole, and a Llama-4 at --tp 8 did not fit on eight GPUs). Per layer: the two norms
    whole, q and o 256 x 256 / 2, k and v 256 x 64 / 2, the router 256 x 4 whole, the shared expert's three
    256 x 512 / 2, the stacks 4 x (256 x 1,024 + 512 x 256) / 2; the embedding and lm_head 1,000 x 256 / 2 each,
    the final norm whole."""
    cfg = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
               intermediate_size=512, intermediate_size_mlp=512, vocab_size=1000, pad_token_id=0, head_dim=32,
               num_local_experts=4, num_experts_per_tok=1, model_type="llama4_text")
    b = DTYPES["bf16"]
    rank = _rank(cfg, Workload.decode(2, 16, weight_dtype=b, act_dtype=b, kv_dtype=b), 2)
    layer = 2 * 256 + 2 * (256 * 256 // 2) + 2 * (256 * 64 // 2) + 256 * 4 + 3 * (256 * 512 // 2) + \
        4 * (256 * 1024 + 512 * 256) // 2
    assert rank.params == 2 * layer + 2 * (1000 * 256 // 2) + 256
    assert rank.weight_storage_bytes == 2 * rank.params
    # and the shape text says the rank's share, each stack's I = 512 (2I = 1,024 onto it) halved, for the ops
    # between the two matmuls too: routed (this, the ideal view: 2 token-expert rows) and in the eager view's
    # dense batched matmuls (every token through each of the 4 experts)
    for view, names, texts in (("ideal", ("routed_experts", "routed_experts#2"), ("[2,256]x[4,256,512]", "[2,256]",
                                                                                  "[2,256]x[4,256,256]")),
                               ("eager", ("bmm", "bmm#2"), ("[4,2,256]x[4,256,512]", "[4,2,256]",
                                                            "[4,2,256]x[4,256,256]"))):
        r = rank if view == "ideal" else traced_rank(trace(cfg, "t", rank.workload, view="eager", use_cache=False),
                                                     Parallel(tp=2), hf_config(cfg, "t")[0])
        dims = {k.name.split("[")[0]: k.dims for k in r.kernels if k.name.startswith("feed_forward.experts.")}
        assert tuple(dims[f"feed_forward.experts.{n}"] for n in (names[0], "act_fn", names[1])) == texts

def test_a_moe_layers_own_body_runs_on_whole_rows_where_a_dense_layer_of_the_same_path_splits():
    """llama4_text with interleave_moe_layer_step 2: layer 0 a dense MLP (feed_forward.gate_proj colwise: its
    body's product on the rank's 1,024 / 2 columns), layer 1 a MoE whose feed_forward splits only its shared
    expert (its body adds the shared expert's output to the routed experts', each all-reduced: whole rows of
    D = 256). Decode at B = 2, --tp 2: the dense product 2 x 512 FLOPs, the MoE's add 2 x 256 (it was counted at
    2 x 128, the dense layer's split carried to every layer with the same module path)."""
    cfg = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
               intermediate_size=512, intermediate_size_mlp=1024, vocab_size=1000, pad_token_id=0, head_dim=32,
               num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2, model_type="llama4_text")
    b = DTYPES["bf16"]
    rank = _rank(cfg, Workload.decode(2, 16, weight_dtype=b, act_dtype=b, kv_dtype=b), 2)
    by_name = {k.name: k for k in rank.kernels}
    assert by_name["feed_forward.mul"].cost.flops == 2 * 512 and by_name["feed_forward.mul"].dims == "[2,1,512]"
    assert by_name["feed_forward.add"].cost.flops == 2 * 256 and by_name["feed_forward.add"].dims == "[2,256]"


def _refusal(tmp_path, capsys, cfg: dict, *flags: str) -> str:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--hw", "h100", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_a_model_with_no_plan_is_refused_in_one_line(tmp_path, capsys):
    """BioGPT's config class carries no base_model_tp_plan, and roofcalc knows no serving plan for it."""
    err = _refusal(tmp_path, capsys, dict(model_type="biogpt", hidden_size=256, num_hidden_layers=2,
                                          num_attention_heads=8, intermediate_size=512, vocab_size=1000), "--tp", "2")
    assert "BioGptConfig has no base_model_tp_plan" in err


def test_what_the_traced_plan_does_not_split_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """A style the traced plan does not model (transformers registers unit_colwise and sequence_parallel,
    among others) is refused where a kernel runs in it: here Llama's plan with its MLP's gate_proj in
    sequence_parallel; 3 ranks do not split 8 heads (as the hand families refuse it); 2 ranks split 12 heads
    and neither split 3 KV heads nor are split by them."""
    import transformers

    plan = dict(transformers.LlamaConfig.base_model_tp_plan, **{"layers.*.mlp.gate_proj": "sequence_parallel"})
    monkeypatch.setattr(transformers.LlamaConfig, "base_model_tp_plan", plan)
    err = _refusal(tmp_path, capsys, DENSE["llama"], "--trace", "--tp", "2")
    assert "mlp.gate_proj is 'sequence_parallel'" in err
    monkeypatch.undo()
    err = _refusal(tmp_path, capsys, DENSE["llama"], "--trace", "--tp", "3")
    assert "--tp 3 does not divide num_attention_heads 8" in err
    err = _refusal(tmp_path, capsys, dict(DENSE["llama"], hidden_size=384, num_attention_heads=12,
                                          num_key_value_heads=3), "--trace", "--tp", "2")
    assert "--tp 2 and 3 KV heads" in err



def test_a_traced_tp_list_gives_each_sizes_single_step(capsys):
    """A --tp list of a traced model: each size's step is the single --tp step's (the same roofline of
    the same rank), --tp 1 the unsplit trace's."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import tp_sweep
    from roofcalc.roofline import roofline

    cfg = DENSE["llama"]
    wl = Workload.decode(2, 17)
    one = trace(cfg, "t", wl, view="ideal", use_cache=False)
    hw = find_hardware("h100")
    sw = tp_sweep(one.shape, wl, [1, 2, 4], hw, traced=(one, hf_config(cfg, "t")[0], None))
    assert sw.points[0].step_s == roofline(one, hw).step.times.predicted_s
    for p in sw.points[1:]:
        assert p.step_s == roofline(_rank(cfg, wl, p.tp), hw).step.times.predicted_s
        assert p.sequences == 2 and p.gpus == p.tp


def test_experts_kept_only_in_the_expert_parallel_plan_split_on_their_width():
    """transformers 5.25 moved the routed experts out of base_model_tp_plan into base_model_ep_plan
    (grouped_gemm weights under an ep_dispatch_experts module); --tp takes the rules 5.24's plan held for
    them (packed_colwise gate_up, rowwise down, moe_tp_experts around them), and adds none where the
    tensor-parallel plan names the experts itself (5.24)."""
    from roofcalc.trace.parallel import _experts_on_width

    ep = {"layers.*.mlp.experts.gate_up_proj": "grouped_gemm", "layers.*.mlp.experts.down_proj": "grouped_gemm",
          "layers.*.mlp.experts": "ep_dispatch_experts"}
    attention = {"layers.*.self_attn.q_proj": "colwise", "layers.*.self_attn.o_proj": "rowwise"}
    assert _experts_on_width(ep, attention) == {"layers.*.mlp.experts": "moe_tp_experts",
                                               "layers.*.mlp.experts.gate_up_proj": "packed_colwise",
                                               "layers.*.mlp.experts.down_proj": "rowwise"}
    own = {**attention, "layers.*.mlp.experts.gate_up_proj": "packed_colwise",
           "layers.*.mlp.experts.down_proj": "rowwise", "layers.*.mlp.experts": "moe_tp_experts"}
    assert _experts_on_width(ep, own) == {}
    assert _experts_on_width({}, attention) == {}


def experts_cost(a) -> tuple[int, int]:
    """The routed experts' matmul FLOPs and weight bytes in a step (the trace's grouped matmuls, or the hand
    model's gate_up_proj and down_proj)."""
    ks = [k for k in a.kernels if "experts" in k.name and k.kind == "matmul"]
    return sum(k.cost.matmul_flops * k.count for k in ks), sum(k.cost.weight_bytes * k.count for k in ks)


def collectives_of(a) -> list:
    """Each collective's role, count, message and link bytes, group and ranks, in order of those."""
    return sorted((k.role, k.count, k.message_bytes, k.link_bytes, k.group, k.ranks) for k in a.kernels
                  if k.kind == "collective")


EP_LAYOUTS = {"ep2-b4": (Parallel(ep=2), 4), "tp2-ep2-b4": (Parallel(tp=2, ep=2), 4),
              "ep2-tpattn-b4": (Parallel(ep=2, ep_attention="tp"), 4),
              "ep4-tpattn-b1": (Parallel(ep=4, ep_attention="tp"), 1),
              "ep2-tpattn-b64": (Parallel(ep=2, ep_attention="tp"), 64)}


@pytest.mark.parametrize("name", sorted(MOE))
def test_a_traced_rank_of_a_masking_engine_writes_and_activates_every_pair(name):
    """Under a masking engine's fused MoE (Parallel.masked_experts: vLLM's and SGLang's Triton and Marlin kernels) a
    traced --ep-attention tp rank counts as the hand model does: its experts' matmuls keep the rank's FLOPs and
    reads (⌈T·k/N⌉ rows: at batch 4 with k = 2 on 2 ranks, 4 of the 8), their writes are every row's, and the ops
    between and after them (activation, routing weights, sum) run over every row: all 8 where the rank's own count
    was its 4, twice (to the byte: a share rounds down); the rest of the rank is as it was."""
    from roofcalc.trace.parallel import traced_expert_parallel

    cfg, wl = MOE[name], Workload.decode(4, 17, cache_update="in-place")
    own = traced_expert_parallel((cfg, "t", None), wl, Parallel(ep=2, ep_attention="tp"), "ideal", merge=False)
    masked = traced_expert_parallel((cfg, "t", None), wl, Parallel(ep=2, ep_attention="tp", masked_experts=True),
                                    "ideal", merge=False)

    def twice(a, b):  # b is every row's count of what a counted on half of them
        return 2 * a <= b <= 2 * a + 1

    kinds = set()
    for k0, k1 in zip(own.kernels, masked.kernels, strict=True):
        assert k0.name == k1.name
        if ".experts." not in k0.name or k0.kind == "collective":
            assert k1 == k0, k0.name
            continue
        c0, c1 = k0.cost, k1.cost
        if k0.kind == "matmul":
            assert (c1.matmul_flops, c1.act_read_bytes, c1.weight_bytes) == (c0.matmul_flops, c0.act_read_bytes,
                                                                             c0.weight_bytes)
            assert twice(c0.act_write_bytes, c1.act_write_bytes) and c0.act_write_bytes
        else:
            assert all(twice(getattr(c0, f), getattr(c1, f)) for f in ("flops", "act_read_bytes", "act_write_bytes"))
        kinds.add(k0.kind)
    assert kinds == {"matmul", "elementwise"}  # (the test reaches both kinds of kernel that mask)


@pytest.mark.parametrize("layout", sorted(EP_LAYOUTS))
@pytest.mark.parametrize("name", sorted(MOE))
def test_a_traced_expert_parallel_rank_equals_the_hand_models(name, layout):
    """Expert parallelism on a traced MoE gives the hand model's rank (tests/test_parallel.py holds
    --ep-attention tp to a real run of transformers' expert-parallel plan): its experts' FLOPs and weight
    bytes, every collective (where it runs, its message and ranks), parameters, weights, KV cache, memory
    and matmul FLOPs. --ep 2 with data-parallel attention traces the step at 2 of the 4 sequences and gives
    the rank 2 of the 4 experts, reading its share of what all 4 sequences reach, between an all-to-all
    dispatch and combine (with --tp 2, each group's experts at half their width, the all-to-alls between
    ranks 2 apart); --ep-attention tp splits attention by heads over the ranks, each holding E/N whole
    experts on its share of the token-expert rows, the experts a step reaches on the busiest rank (at batch
    1 with k = 2 of 4 experts on 4 ranks, one)."""
    from roofcalc.trace.parallel import traced_expert_parallel

    par, batch = EP_LAYOUTS[layout]
    cfg = MOE[name]
    wl = Workload.decode(batch, 17, cache_update="in-place")
    hand = analyze_parallel(shape_from_config(cfg, "t"), wl, par)
    rank = traced_expert_parallel((cfg, "t", None), wl, par, "ideal")

    assert experts_cost(rank) == experts_cost(hand)
    assert collectives_of(rank) == collectives_of(hand) and collectives_of(hand)
    assert (rank.params, rank.weight_storage_bytes, rank.kv_bytes_per_token, rank.memory_bytes,
            rank.totals.matmul_flops) == (hand.params, hand.weight_storage_bytes, hand.kv_bytes_per_token,
                                          hand.memory_bytes, hand.totals.matmul_flops)
    assert rank.full.params == hand.full.params and rank.parallel == par
    # the shape line's F: split with the experts on their width, whole where each rank holds whole experts of a
    # model whose F is the experts' width (Mixtral: 512; Qwen3-MoE's unused dense width splits either way)
    assert rank.shape.d_ff == hand.shape.d_ff == (512 if par.tp_attention and name == "mixtral" else
                                                  cfg["intermediate_size"] // par.tp // (par.ep if par.tp_attention
                                                                                         else 1))


def test_traced_ep_from_the_command_line(tmp_path, capsys):
    """--trace --ep 2 prints one rank's table with its all-to-alls, --ep-attention tp one without them; a
    batch that does not split is refused in one line."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps(MOE["mixtral"]))
    assert main([str(path), "--trace", "--ep", "2", "--batch", "4", "--hw", "h100"]) == 0
    out = capsys.readouterr().out
    assert "parallel  --ep 2: every number below is one rank's, of 2 GPUs: 2 of the 4 routed experts" in out
    assert "mlp.experts.dispatch" in out and "mlp.experts.combine_all_to_all" in out
    assert main([str(path), "--trace", "--ep", "2", "--ep-attention", "tp", "--hw", "h100"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 of the 4 routed experts at their whole width, and attention" in out and "all_to_all" not in out
    # a sweep's header speaks of any batch: the rank runs B/2 of each step's B (the column counts all of them)
    assert main([str(path), "--trace", "--ep", "2", "--batch", "4,8", "--context", "100,200", "--hw", "h100"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "attention and the dense layers for B/2 of each step's B sequences (the batch column counts all" in out
    for flags in (["--ep", "2", "--batch", "3"],):
        assert main([str(path), "--trace", *flags, "--hw", "h100"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--ep" in err


def test_a_traced_ep_list_gives_each_sizes_single_step():
    """An --ep list of a traced MoE: each size's step is the single --ep step's (the same roofline of the same
    rank), and its sequences the whole batch's."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import tp_sweep
    from roofcalc.roofline import roofline
    from roofcalc.trace.parallel import traced_expert_parallel
    from roofcalc.trace.pipeline import TracedStages

    cfg = MOE["mixtral"]
    wl = Workload.decode(8, 17)
    one = trace(cfg, "t", wl, view="ideal", use_cache=False)
    config = hf_config(cfg, "t")[0]
    hw = find_hardware("h100")
    sw = tp_sweep(one.shape, wl, [1, 2, 4], hw, axis="ep", traced=(one, config, TracedStages(cfg, "t", None, "ideal",
                                                                                             config)))
    assert sw.points[0].step_s == roofline(one, hw).step.times.predicted_s
    for p in sw.points[1:]:
        rank = traced_expert_parallel((cfg, "t", None), wl, Parallel(ep=p.tp), "ideal")
        assert p.step_s == roofline(rank, hw).step.times.predicted_s
        assert p.sequences == 8 and p.gpus == p.tp


def test_a_traced_tp_sweep_is_the_single_steps_at_its_corners(tmp_path, capsys):
    """A batch x context sweep of a traced model at --tp 2: at each point of a 2 x 2 grid (every point a
    corner, which the sweep fits exactly) its FLOPs, bytes, memory and predicted step are the single --tp 2
    step's at that batch and context."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(DENSE["llama"], torch_dtype="bfloat16")))
    flags = [str(path), "--trace", "--tp", "2", "--hw", "h100", "--format", "json"]
    assert main(flags + ["--batch", "1,8", "--context", "100,1000"]) == 0
    sweep = json.loads(capsys.readouterr().out)
    assert sweep["parallel"]["tp"] == 2 and len(sweep["points"]) == 4
    for p in sweep["points"]:
        assert main(flags + ["--batch", str(p["batch"]), "--context", str(p["context"])]) == 0
        one = json.loads(capsys.readouterr().out)["step"]
        assert (p["flops"], p["bytes"], p["memory_bytes"]) == (one["flops"], one["bytes"], one["memory_bytes"])
        assert p["predicted_s"] == pytest.approx(one["predicted_s"], rel=1e-9)


def test_mxfp4_experts_split_over_expert_parallel_ranks():
    """GPT-OSS's experts stored in MXFP4 (half a byte a weight and a one-byte scale for each 32), 2 layers of 8
    experts, gate_up 256 x 1024 and down 512 x 256 each: 2 x 8 x (262,144 + 131,072) = 6,291,456 expert
    weights, 3,145,728 + 196,608 = 3,342,336 bytes. At --ep 2 a rank holds half of them, whatever their format:
    3,145,728 parameters and 1,671,168 bytes fewer than the model (in bf16 the parameters alike). Their
    biases (8 x 1,280 a layer) stay whole on each rank."""
    from test_trace import config

    from roofcalc.trace.parallel import traced_expert_parallel

    cfg = config("gpt_oss")
    bf16 = DTYPES["bf16"]
    for weights in ("mxfp4", "bf16"):
        wl = Workload.decode(4, 17, weight_dtype=DTYPES[weights], act_dtype=bf16, kv_dtype=bf16)
        whole = trace(cfg, "t", wl, use_cache=False)
        rank = traced_expert_parallel((cfg, "t", None), wl, Parallel(ep=2), "ideal")
        assert whole.expert_params == 6_291_456
        assert whole.params - rank.params == 3_145_728
        if weights == "mxfp4":
            assert whole.weight_storage_bytes - rank.weight_storage_bytes == 1_671_168


EP_SWEPT = {"mixtral-ep2": ("mixtral", Parallel(ep=2)), "qwen3_moe-tp2-ep2": ("qwen3_moe", Parallel(tp=2, ep=2)),
            "qwen3_moe-ep4": ("qwen3_moe", Parallel(ep=4))}


@pytest.mark.parametrize("layout", sorted(EP_SWEPT))
def test_a_traced_ep_sweep_is_the_single_steps_and_the_hand_models(layout, tmp_path, capsys):
    """A batch x context sweep of a traced MoE over --ep ranks: fitted from four traced probes at a rank's
    1 and 2 sequences, its experts' weight bytes read off the whole step's tokens at every batch (a rank's
    share of the experts every rank's sequences reach, not linear in the batch). At every point of a 2 x 3
    grid, four fitted rather than probed, it gives the single traced step's FLOPs, bytes, memory and time,
    and the hand model's --ep sweep's weight bytes, KV bytes and memory; the verdicts' batches (KV
    overtaking the weights, the largest that fits) are the hand sweep's too (ideal view: --impl cuda-graph)."""
    name, par = EP_SWEPT[layout]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(MOE[name], torch_dtype="bfloat16")))
    flags = [str(path), "--tp", str(par.tp), "--ep", str(par.ep), "--hw", "h100", "--impl", "cuda-graph",
             "--format", "json"]
    grid = ["--batch", f"{par.ep},{6 * par.ep}", "--context", "20,40,60"]
    assert main(flags + ["--trace"] + grid) == 0
    traced = json.loads(capsys.readouterr().out)
    assert main(flags + grid) == 0
    hand = json.loads(capsys.readouterr().out)
    assert len(traced["points"]) == len(hand["points"]) == 6
    for p, h in zip(traced["points"], hand["points"]):
        assert main(flags + ["--trace", "--batch", str(p["batch"]), "--context", str(p["context"])]) == 0
        one = json.loads(capsys.readouterr().out)["step"]
        assert (p["flops"], p["bytes"], p["memory_bytes"]) == (one["flops"], one["bytes"], one["memory_bytes"])
        assert p["predicted_s"] == pytest.approx(one["predicted_s"], rel=1e-9)
        assert (p["batch"], p["context"], p["weight_bytes"], p["kv_bytes"], p["memory_bytes"]) == \
            (h["batch"], h["context"], h["weight_bytes"], h["kv_bytes"], h["memory_bytes"])
    keys = ("kv_over_weights_batch", "max_batch")
    assert [{k: v[k] for k in keys} for v in traced["verdicts"]] == [{k: v[k] for k in keys} for v in hand["verdicts"]]


@pytest.mark.parametrize("name", sorted(MOE))
def test_a_traced_ep_tp_rank_at_any_batch_is_its_trace(name):
    """--ep 4 --ep-attention tp (every sequence on every rank): a sweep reads the rank at a batch it has not traced
    (TracedEPTPAnalyzer.at_batch) off the whole step's traces at one and two sequences, costs and rows extended
    linearly but for the experts' weights, then split. At 3, 5 and 37 sequences (⌈3·2/4⌉ = 2, ⌈10/4⌉ = 3 and
    ⌈74/4⌉ = 19 expert rows) every kernel's cost, rows, collective message and sizes (an attention call's batch
    among them) equal the rank split from a trace at that batch."""
    from roofcalc.trace import TracedEPTPAnalyzer

    an = TracedEPTPAnalyzer(MOE[name], "t", None, "ideal", Parallel(ep=4, ep_attention="tp"))
    for batch, rows in ((3, 2), (5, 3), (37, 19)):
        wl = Workload.decode(batch, 17)
        read, traced = an.at_batch(wl), an(wl)
        assert [k.name for k in read.kernels] == [k.name for k in traced.kernels]
        for k, t in zip(read.kernels, traced.kernels):
            assert (k.cost, k.rows, k.message_bytes, k.sizes) == (t.cost, t.rows, t.message_bytes, t.sizes), \
                (batch, k.name)
        assert {k.rows for k in traced.kernels if k.expert_weights} == {rows}


def test_a_traced_ep_tp_sweep_is_the_single_steps_and_its_verdicts_hold_on_traces(tmp_path, capsys):
    """A batch x context sweep of a traced Mixtral (4 experts, top-2) at --ep 4 --ep-attention tp: at every point
    of a 3 x 2 grid (batches 1, 3 and 8) its FLOPs, bytes, memory and time are the single traced step's; the KV
    verdict's batch holds on direct traces there and at the next (the rows' saw repeats every 4/gcd(2, 4) = 2
    batches), not at the one before; and the hand model's sweep gives the same batch."""
    from roofcalc.trace.parallel import traced_expert_parallel

    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(MOE["mixtral"], torch_dtype="bfloat16")))
    flags = [str(path), "--ep", "4", "--ep-attention", "tp", "--hw", "h100", "--impl", "cuda-graph",
             "--format", "json"]
    assert main(flags + ["--trace", "--batch", "1,3,8", "--context", "20,60"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["points"]) == 6 and doc["parallel"]["ep_attention"] == "tp"
    for p in doc["points"]:
        assert main(flags + ["--trace", "--batch", str(p["batch"]), "--context", str(p["context"])]) == 0
        one = json.loads(capsys.readouterr().out)["step"]
        assert (p["flops"], p["bytes"], p["memory_bytes"]) == (one["flops"], one["bytes"], one["memory_bytes"])
        assert p["predicted_s"] == pytest.approx(one["predicted_s"], rel=1e-9)
    bf16 = {k: DTYPES["bf16"] for k in ("weight_dtype", "act_dtype", "kv_dtype")}
    par = Parallel(ep=4, ep_attention="tp")

    def over(b, s):
        t = traced_expert_parallel((MOE["mixtral"], "t", None), Workload.decode(b, s, **bf16), par, "ideal").totals
        return t.kv_bytes > t.weight_bytes

    for v in doc["verdicts"]:
        b = v["kv_over_weights_batch"]
        assert over(b, v["context"]) and over(b + 1, v["context"]) and not over(b - 1, v["context"]), v
    assert main(flags + ["--batch", "1,3,8", "--context", "20,60"]) == 0
    hand = json.loads(capsys.readouterr().out)
    assert [v["kv_over_weights_batch"] for v in hand["verdicts"]] == [v["kv_over_weights_batch"] for v in doc["verdicts"]]


LAYOUTS = {"one": [], "tp2": ["--tp", "2"], "ep2": ["--ep", "2", "--batch", "4"],
           "pp2-ep2": ["--pp", "2", "--ep", "2", "--batch", "8"]}


@pytest.mark.parametrize("name,layout", [(n, "one") for n in sorted(DENSE)] + [("llama", "tp2")] +
                         [(n, lay) for n in sorted(MOE) for lay in LAYOUTS])
def test_a_traced_step_runs_the_fused_kernels_of_a_serving_engine(name, layout, tmp_path, capsys):
    """Under the fused launch models (--impl cuda-graph, what --engine vllm runs) a traced step launches what the
    hand model's does in each layer: k_proj and v_proj ride on q_proj, up_proj on gate_proj, the residual adds on
    the norms after them, the product after the activation on it (roofline.FUSED, FUSED_RIDERS): 10 launches a
    llama layer (norm, qkv, rotary, cache write, attention, o_proj, norm, gate_up, SiLU-and-mul, down). A traced
    MoE layer's experts (two grouped matmuls and the activation between) are one fused MoE call priced by the
    fitted class, as the hand model's gate_up_proj, act_mul, down_proj and combine are; the hand layer launches
    one more (its combine, which the trace runs inside the second grouped matmul). The step's time is then the
    hand model's within 10 % (the trace's three model-level ops, the position ids and the rotary tables, are
    5.2 us of these 67-190 us steps); before, a traced Mixtral step took 79 us where the hand model's takes 143."""
    flags = LAYOUTS[layout]
    cfg = dict(DENSE.get(name) or MOE[name], torch_dtype="bfloat16", num_hidden_layers=4)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    steps = []
    for trace_flag in ([], ["--trace"]):
        assert main([str(path), *trace_flag, *flags, "--impl", "cuda-graph", "--hw", "h100", "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        steps.append((out["step"]["launches_per_layer"], out.get("parallel", {}).get("step_s") or
                      out["step"]["predicted_s"]))
    (hand_launches, hand_s), (traced_launches, traced_s) = steps
    assert traced_launches == hand_launches - (1 if name in MOE else 0)
    assert traced_s == pytest.approx(hand_s, rel=0.10)


GDN = dict(BASE, num_hidden_layers=4, num_key_value_heads=2, head_dim=32, linear_num_key_heads=4,
           linear_num_value_heads=8, linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
           full_attention_interval=2)


MAMBA2 = dict(model_type="nemotron_h", hybrid_override_pattern="M-*-", hidden_size=256, intermediate_size=512,
              num_attention_heads=8, num_key_value_heads=2, head_dim=32, mamba_num_heads=8, mamba_head_dim=64,
              ssm_state_size=16, n_groups=1, conv_kernel=4, expand=2, chunk_size=64, mlp_hidden_act="relu2",
              vocab_size=1000, residual_in_fp32=False, pad_token_id=0)


@pytest.mark.parametrize("cfg,module,layers,fused", [(dict(GDN, model_type="qwen3_next"), "linear_attn.", (0, 2), 7),
                                                     (dict(GDN, model_type="qwen3_5_text"), "linear_attn.", (0, 2), 6),
                                                     (MAMBA2, "mixer.", (0,), 5)],
                         ids=["qwen3_next", "qwen3_5", "nemotron_h"])
def test_a_recurrent_mixer_runs_the_serving_engines_kernels(cfg, module, layers, fused):
    """Under the fused launch models a recurrent mixer's decode layer launches what vLLM and SGLang run for it
    (trace.group._recurrent_riders). A gated delta net: Qwen3-Next's in_proj_qkvz and in_proj_ba, one copy
    unpacking them, the conv (its SiLU and its state in it), the delta rule (the gates, its output and its state in
    it), the gated norm and out_proj, 7; Qwen3.5's in_proj_qkv with in_proj_z and in_proj_b with in_proj_a as one
    GEMM each (the engines' merged [k, k, v, v] and [HV, HV] projections), no copy, the same three and out_proj, 6.
    A Mamba-2 mixer (Nemotron-H's; vLLM's mamba_mixer2.py): in_proj, the conv, selective_state_update (dt's softplus,
    D's skip, the state in place; transformers' copies of the state before and after it in it), the gated norm and
    out_proj, 5 (its A = -exp(A_log) is computed as vLLM loads the weights: no kernel). transformers' count of the
    conv's steps (a cache counter no engine runs) launches nothing. Eager (hf-eager), every op transformers ran, as
    before (the state update's torch code alone runs a dozen or more)."""
    from roofcalc.roofline import launches

    a = trace(cfg, "t", Workload.decode(2, 6), use_cache=False, merge=False)
    for impl in ("cuda-graph", "fused"):
        per_layer = [sum(launches(k, impl) for k, ls in zip(a.kernels, a.kernel_layers)
                         if ls == (layer,) and k.name.startswith(module)) for layer in layers]
        assert per_layer == [fused] * len(layers), impl
    layer = [k for k, ls in zip(a.kernels, a.kernel_layers) if ls == (layers[-1],) and k.name.startswith(module)]
    assert [launches(k, "hf-eager") for k in layer] == [k.launches for k in layer]
    assert sum(k.launches for k in layer) > 3 * fused


def test_only_a_gated_experts_run_is_priced_as_a_fused_moe_call():
    """A routed-experts module's run is one fused MoE call (Kernel.moe) only where it is what the fitted class
    describes: a grouped matmul onto 2I, the activation, one back from I (OLMoE's and PhiMoE's grouped experts).
    DBRX's experts run as one kernel and JetMoE's attention experts are two plain projections: they stay as they
    are; so does every run in a weight format with no fitted class (int8 here), where int4 experts are the int4
    class's call (Marlin's MoE kernel)."""
    from test_trace import config

    wl = Workload.decode(2, 17)
    for model_type, parts in (("olmoe", ["gate_up_proj", "act_mul", "down_proj"]),
                              ("phimoe", ["gate_up_proj", "act_mul", "down_proj"]), ("dbrx", []), ("jetmoe", [])):
        a = trace(config(model_type), "t", wl, view="ideal", use_cache=False)
        assert [k.moe[2] for k in a.kernels if k.moe] == parts, model_type
        if parts:
            n, top_k = next(k.expert_weights[:2] for k in a.kernels if k.expert_weights)
            assert {k.moe[:2] + k.moe[3:] for k in a.kernels if k.moe} == {("bf16", n, n, top_k)}
    quantized = trace(config("olmoe"), "t", Workload.decode(2, 17, weight_dtype=DTYPES["int8"]), view="ideal",
                      use_cache=False)
    assert not any(k.moe for k in quantized.kernels)
    int4 = trace(config("olmoe"), "t", Workload.decode(2, 17, weight_dtype=DTYPES["int4"]), view="ideal",
                 use_cache=False)
    assert [k.moe[:3] for k in int4.kernels if k.moe] == [("int4", n, p) for p in ("gate_up_proj", "act_mul",
                                                                                    "down_proj")]


@pytest.mark.parametrize("name", sorted(MOE))
def test_the_experts_all_reduce_follows_each_layer_once_however_its_rows_merged(name):
    """The routed experts' all-reduce follows each layer's last experts kernel, once a layer: where a trace
    merged some of a module's rows over the layers and not others (a row of layer 0, one of both layers, one of
    layer 1: rows merge where they cost the same), a rank still has one all-reduce a layer, as with every row
    merged or none."""
    from dataclasses import replace

    cfg, wl = MOE[name], Workload.prefill(2, 5)
    config = hf_config(cfg, "t")[0]
    apart = trace(cfg, "t", wl, use_cache=False, merge=False)
    # the activation's two rows (one a layer) as one row of both layers, where the first of them ran
    rows = [i for i, k in enumerate(apart.kernels) if k.name.startswith("mlp.experts.act_fn[")]
    assert len(rows) == 2 and [apart.kernel_layers[i] for i in rows] == [(0,), (1,)]
    first = apart.kernels[rows[0]]
    kernels = [replace(first, name="mlp.experts.act_fn", count=2) if i == rows[0] else k
               for i, k in enumerate(apart.kernels) if i != rows[1]]
    layers = [(0, 1) if i == rows[0] else ls for i, ls in enumerate(apart.kernel_layers) if i != rows[1]]
    mixed = replace(apart, kernels=tuple(kernels), kernel_layers=tuple(layers))
    for a in (trace(cfg, "t", wl, use_cache=False), apart, mixed):
        rank = traced_rank(a, Parallel(2), config)
        assert sum(k.count for k in rank.kernels if k.name.startswith("mlp.experts.all_reduce")) == 2


def test_a_large_traced_request_is_not_refused_for_rounding(capsys):
    """Falcon-180B at --tp 8, a request of 1,024 sequences (TensorRT-LLM's v0.6.1 throughput row): the grid
    fitted on the trace's probes and the direct trace at its corner differ by 1.4e-9 of 0.237 s (a rank's costs
    are the whole step's over the ranks rounded down: the probes' slope loses a byte a position), which the check
    once took for a change of program and refused."""
    code = main([str(FALCON_180B), "--hw", "A100-80GB", "--tp", "8", "--batch", "1024", "--prompt", "128",
                 "--generate", "128", "--dtype", "fp16", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err


def test_a_ranks_sweep_is_fitted_on_probes_its_shares_apart():
    """gpt-oss-20b (benchmarks/configs/gpt-oss-20b.json: 64 query heads and 8 KV heads of 64) at --tp 4 rounds
    its costs down to quarters: q_proj's 4,096 outputs to 1,024, k/v's 512 to 128, everything else 1/4, the
    cache's 8 KV heads 2 a rank, so its spacing is 4. A sweep fitted on probes one position apart lost the
    rounding from its slope and a grid over batches 1-64 and contexts 512-8,192 ran 2.5e-4 off a direct trace
    (refused); on probes 4 apart every total is within a byte a kernel row of a direct trace (each rounded share
    is off by less than one), which the sweep's own check (sweep.check_corners, at 1e-6) and this one hold."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import Roof
    from roofcalc.sources import load_config
    from roofcalc.sweep import decode_grid
    from roofcalc.trace import TracedRankAnalyzer, traced_shape

    path = str(ROOT / "benchmarks" / "configs" / "gpt-oss-20b.json")
    shape, traced = traced_shape(*load_config(path)[:2])
    an = TracedRankAnalyzer(*traced, "ideal", Parallel(4))
    b = DTYPES["bf16"]
    kw = dict(weight_dtype=b, act_dtype=b, kv_dtype=b)
    assert an(Workload.decode(1, 512, **kw)).spacing == 4
    hw = find_hardware("H100-SXM")
    grid = decode_grid(shape, [1, 7, 64], [512, 3001, 8192], Roof(hw.bandwidth_bytes_per_s, hw.peak("bf16"),
                                                                      link_bytes_per_s=hw.link_bytes_per_s,
                                                                      gpus_per_node=hw.gpus_per_node),
                       analyzer=an, **kw)
    for i, bb in enumerate((1, 7, 64)):
        for j, ss in enumerate((512, 3001, 8192)):
            direct = an(Workload.decode(bb, ss, **kw))
            rows = len(direct.kernels)
            assert abs(int(grid.bytes[i, j]) - direct.totals.bytes) <= rows
            assert abs(int(grid.flops[i, j]) - direct.totals.flops) <= rows
    assert main([path, "--hw", "H100-SXM", "--tp", "4", "--batch", "1..64", "--context", "512..8192",
                 "--format", "csv"]) == 0


def test_traced_attention_sizes_only_where_the_config_describes_the_call(capsys):
    """A traced attention kernel carries its call's sizes (trace.attention_calls: the fitted attention forms on a
    GPU) where its counted KV reads are the config's 2·B·S·K·H values: TinyLlama's decode at B = 2, S = 100
    (32 query heads on 4 KV heads of 64: 2 x 2 x 100 x 4 x 64 values of 2 bytes); split by whole heads under
    --tp 2 (16 on 2); none for gemma-3-1b, whose config has a sliding window (512). Its --tp 8, whose 4 query heads
    do not split over 8 ranks, is refused (as vLLM's assert and a hand family's check refuse it), in one line."""
    from roofcalc.calculator import AttentionSizes
    from roofcalc.sources import load_config
    from roofcalc.trace import TracedRankAnalyzer, traced_shape

    b = DTYPES["bf16"]
    wl = Workload.decode(2, 100, weight_dtype=b, act_dtype=b, kv_dtype=b)
    shape, traced = traced_shape(*load_config("tinyllama")[:2])
    att = next(k for k in trace(*traced[:2], wl, traced[2]).kernels if k.kind == "attention")
    assert att.cost.kv_read_bytes == 2 * 2 * 100 * 4 * 64 * 2
    assert att.sizes == AttentionSizes(2, 32, 4, 1, 100, 64, 100)
    rank = next(k for k in TracedRankAnalyzer(*traced, "ideal", Parallel(2))(wl).kernels if k.kind == "attention")
    assert rank.sizes == AttentionSizes(2, 16, 2, 1, 100, 64, 100)
    gemma = str(ROOT / "benchmarks" / "configs" / "published" / "google--gemma-3-1b-it.json")
    _, g = traced_shape(*load_config(gemma)[:2])
    assert all(k.sizes is None for k in trace(*g[:2], wl, g[2]).kernels if k.kind == "attention")
    assert main([gemma, "--hw", "H100-SXM", "--engine", "trtllm-0.6", "--tp", "8", "--batch", "8", "--context",
                 "256", "--format", "json"]) == 2
    assert capsys.readouterr().err == ("roofcalc: error: --tp 8 does not divide num_attention_heads 4: each rank "
                                       "must hold a whole share\n")


NO_PLAN = {"gpt2": dict(model_type="gpt2", n_embd=256, n_head=8, n_layer=2, n_inner=1024, vocab_size=1024,
                        n_positions=128),
           "opt": dict(model_type="opt", hidden_size=256, num_hidden_layers=2, num_attention_heads=8, ffn_dim=512,
                       vocab_size=1000, max_position_embeddings=128, word_embed_proj_dim=256, pad_token_id=1),
           # OPT-350m's shape: a narrower embedding (word_embed_proj_dim) with project_in and project_out, whole
           "opt-proj": dict(model_type="opt", hidden_size=256, num_hidden_layers=2, num_attention_heads=8, ffn_dim=512,
                            vocab_size=1000, max_position_embeddings=128, word_embed_proj_dim=128, pad_token_id=1)}


@pytest.mark.parametrize("name", sorted(NO_PLAN))
@pytest.mark.parametrize("tp", [2, 4])
def test_gpt2_and_opt_traced_take_vllms_split_as_their_hand_models_do(name, tp):
    """transformers has no plan for GPT2Config or OPTConfig; traced, they take vLLM's split (trace.parallel
    SERVING_PLANS), as their hand models do (tests/test_parallel.py): every projection and collective, the cache
    write (GPT-2's K and V are views of its fused c_attn output, one storage: the trace counts the update op by op),
    the attention core, the rank's parameters, weights and KV cache equal the hand model's rank."""
    cfg = NO_PLAN[name]
    wl = Workload.decode(2, 17, cache_update="in-place")
    hand = analyze_parallel(shape_from_config(cfg, "t"), wl, Parallel(tp=tp))
    rank = _rank(cfg, wl, tp)
    names = {**TRACED_NAMES, "embed.all_reduce": "wte.all_reduce" if name == "gpt2" else "embed_tokens.all_reduce"}
    compared = 0
    for h in hand.kernels:
        if h.kind in ("matmul", "collective") or h.name == "kv_cache_write":
            t = _kernel(rank, names.get(h.name, h.name))
            assert (t.cost.bytes, t.cost.matmul_flops, t.count, t.params, t.message_bytes, t.link_bytes, t.group) == \
                (h.cost.bytes, h.cost.matmul_flops, h.count, h.params, h.message_bytes, h.link_bytes, h.group), h.name
            compared += 1
    assert compared >= 9
    att, hatt = _kernel(rank, "attention").cost, hand.kernel("attention").cost
    assert (att.kv_read_bytes, att.matmul_flops) == (hatt.kv_read_bytes, hatt.matmul_flops)
    assert sum(k.kind == "collective" for k in rank.kernels) == sum(k.kind == "collective" for k in hand.kernels) == 4
    assert (rank.params, rank.weight_storage_bytes, rank.kv_bytes_per_token, rank.memory_bytes) == \
        (hand.params, hand.weight_storage_bytes, hand.kv_bytes_per_token, hand.memory_bytes)
