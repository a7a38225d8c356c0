"""Every family roofcalc reads, against the real transformers modeling code under FlopCounterMode.

For each family a small config of that family is built as the real HF model; a prefill and one
decode step run under the counter at two (batch, length) points. Every weight matmul (projections,
MLP, router, experts, MLA's kv_b_proj), the attention core (QKᵀ + PV), lm_head and the model total
must equal roofcalc's count exactly; weight bytes must equal the parameters' bytes and KV bytes per
token the real cache's.

How each is built (hf_oracle.build): dense families on the ``meta`` device (GPT-2 on the CPU); mixture-of-experts
families on the CPU with random weights (routing needs values), experts run as the eager
per-expert loop and attention as eager matmuls (the counter sees neither the grouped-matmul op nor
the CPU sdpa kernel); Gemma 2 with eager attention (it refuses sdpa). Routing is whatever the
random router picks: the counter's expert FLOPs are tokens · k · (2·D·2F + 2·F·D) for any routing,
so the comparison is exact without pinning it. FLOPs are compared in fp32 builds where the
weights are real (fp16 matmuls on the CPU are slow), fp16 on meta.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_oracle import build, cache_bytes, param_bytes, run  # noqa: E402

from roofcalc import Workload, analyze, dtype, shape_from_config  # noqa: E402
from roofcalc.calculator import decoder_layer  # noqa: E402

DIMS = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=1000)
IDS = dict(pad_token_id=0, bos_token_id=0, eos_token_id=0)  # inside the small vocabulary
MOE = dict(device="cpu", attn="eager", eager_experts=True, dtype=torch.float32)

FAMILIES = {
    # (config, build options)
    # GPT-2's forward calls .item() on a mask, which the meta device cannot: real weights on the CPU
    "gpt2": (dict(model_type="gpt2", n_embd=128, n_layer=2, n_head=4, vocab_size=1000, n_positions=64, **IDS),
             dict(device="cpu", attn="eager", dtype=torch.float32)),
    "gpt_neox": (dict(DIMS, model_type="gpt_neox", intermediate_size=344, rotary_pct=0.25,
                      max_position_embeddings=64, **IDS), {}),
    "gpt_neox-sequential": (dict(DIMS, model_type="gpt_neox", intermediate_size=344, use_parallel_residual=False,
                                 **IDS), {}),
    # word_embed_proj_dim 64 != 128: project_in and project_out
    "opt": (dict(DIMS, model_type="opt", ffn_dim=344, word_embed_proj_dim=64, max_position_embeddings=64, **IDS), {}),
    "phi": (dict(DIMS, model_type="phi", intermediate_size=344, partial_rotary_factor=0.4, **IDS), {}),
    # window 8 is shorter than the prompts: prefill masks, decode reads the last 8 keys
    "phi3": (dict(DIMS, model_type="phi3", num_key_value_heads=2, intermediate_size=344, sliding_window=8, **IDS), {}),
    "gemma2": (dict(DIMS, model_type="gemma2", num_key_value_heads=2, head_dim=48, intermediate_size=344,
                    sliding_window=8, **IDS), dict(attn="eager")),
    "mixtral": (dict(DIMS, model_type="mixtral", num_key_value_heads=2, intermediate_size=96, num_local_experts=4,
                     num_experts_per_tok=2, **IDS), MOE),
    # decoder_sparse_step 2: layer 0 dense (intermediate_size), layer 1 MoE
    "qwen3_moe": (dict(DIMS, model_type="qwen3_moe", num_key_value_heads=2, head_dim=32, intermediate_size=200,
                       moe_intermediate_size=64, num_experts=4, num_experts_per_tok=2, decoder_sparse_step=2, **IDS),
                  MOE),
    # MLA without q LoRA (V2-Lite), first layer dense, 2 shared experts
    "deepseek_v2": (dict(DIMS, model_type="deepseek_v2", num_key_value_heads=4, intermediate_size=200, moe_intermediate_size=48,
                         n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=2, first_k_dense_replace=1,
                         kv_lora_rank=32, q_lora_rank=None, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                         n_group=1, topk_group=1, **IDS), MOE),
    # MLA with q LoRA (V3), sigmoid router with a score correction
    "deepseek_v3": (dict(DIMS, model_type="deepseek_v3", num_key_value_heads=4, intermediate_size=200, moe_intermediate_size=48,
                         n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                         kv_lora_rank=32, q_lora_rank=48, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                         n_group=1, topk_group=1, **IDS), MOE),
}
POINTS = [(1, 16), (3, 9)]  # (batch, prompt length)
BUFFERS = ("e_score_correction_bias",)  # a buffer in transformers, a tensor of the checkpoint


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request):
    cfg, opts = FAMILIES[request.param]
    tdtype = opts.pop("dtype", torch.float16) if "dtype" in opts else torch.float16
    model = build(cfg, tdtype, **opts)
    FAMILIES[request.param][1].setdefault("dtype", tdtype)
    return request.param, cfg, model, tdtype


def _dt(tdtype):
    d = dtype("fp32" if tdtype == torch.float32 else "fp16")
    return dict(weight_dtype=d, act_dtype=d, kv_dtype=d)


def _check(counts, analysis, shape, wl):
    """Every matmul and attention kernel of every layer, then the model-level ones and the total."""
    for i in range(shape.n_layers):
        window = shape.sliding_window if shape.layer_types[i] == "sliding" else None
        kernels = decoder_layer(shape, wl, shape.layer_types[i], shape.layer_mlp_types[i])
        matmuls = [k for k in kernels if k.kind == "matmul"]
        for k in matmuls:
            if k.role == "experts":
                continue
            assert k.cost.matmul_flops == counts.of(i, k.name), (i, k.name)
        experts = [k for k in matmuls if k.role == "experts"]
        if experts:  # one module runs both expert projections
            assert sum(k.cost.matmul_flops for k in experts) == counts.of(i, "experts"), (i, "experts")
        attn = next(k for k in kernels if k.name == "attention")
        projections = [k.name for k in matmuls if k.scope == "layer" and k.name.split(".")[0] not in
                       ("mlp", "experts", "shared_experts") and k.name not in
                       (shape.name_of(r) for r in ("gate", "up", "down", "gate_up", "fc_in", "fc_out"))]
        assert attn.cost.matmul_flops == counts.attention_core(i, projections), (i, "attention", window)
    for name in ("lm_head", "project_in", "project_out"):
        if any(k.name == name for k in analysis.kernels):
            assert analysis.kernel(name).cost.matmul_flops == counts.module(name), name
    assert analysis.totals.matmul_flops == counts.flops["Global"]


@pytest.mark.parametrize("batch,prompt", POINTS)
def test_prefill_and_decode_match_flop_counter(family, batch, prompt):
    name, cfg, model, tdtype = family
    shape = shape_from_config(cfg, name)
    prefill_counts, decode_counts, _ = run(model, batch, prompt, all_logits=True)
    wl = Workload.prefill(batch, prompt, causal=False, logits_all=True, **_dt(tdtype))
    _check(prefill_counts, analyze(shape, wl), shape, wl)
    wl = Workload.decode(batch, prompt + 1, **_dt(tdtype))
    _check(decode_counts, analyze(shape, wl), shape, wl)


def test_weight_bytes_equal_real_parameters(family):
    name, cfg, model, tdtype = family
    analysis = analyze(shape_from_config(cfg, name), Workload.decode(1, 4, **_dt(tdtype)))
    assert analysis.weight_storage_bytes == param_bytes(model, BUFFERS)
    n_buffers = sum(b.numel() for n, b in model.named_buffers() if n.endswith(BUFFERS))
    assert analysis.params == sum(p.numel() for p in model.parameters()) + n_buffers


def test_kv_cache_bytes_per_token_equal_real_cache(family):
    """After a prefill of 6 and one decode step: 7 tokens, fewer than any window here (8)."""
    name, cfg, model, tdtype = family
    shape = shape_from_config(cfg, name)
    batch, prompt = 2, 6
    _, _, cache = run(model, batch, prompt)
    analysis = analyze(shape, Workload.decode(batch, prompt + 1, **_dt(tdtype)))
    assert cache_bytes(cache) == batch * (prompt + 1) * analysis.kv_bytes_per_token
