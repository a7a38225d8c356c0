"""Family-specific counts by hand: MoE weights read, MLA (naive and absorbed), fp8 block weights,
learned positions, soft-capping, partial rotary; and the bad configs of these families."""

from __future__ import annotations

import re

import pytest

from roofcalc import RoofcalcError, Workload, analyze, dtype, load_shape, shape_from_config
from roofcalc.calculator import touched_experts

MIXTRAL_EXPERT = 3 * 14336 * 4096 * 2  # gate, up, down of one expert, fp16: 352,321,536 bytes


def test_mixtral_batch_1_reads_two_of_eight_experts():
    a = analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(1, 500))
    experts = a.kernel("experts.gate_up_proj").cost.weight_bytes + a.kernel("experts.down_proj").cost.weight_bytes
    assert experts == 2 * MIXTRAL_EXPERT  # 704,643,072 per layer
    # per layer: 2 experts + q, o 4096²·2 = 33,554,432 each + k, v 4096·1024·2 = 8,388,608 each
    #            + router 8·4096·2 = 65,536 + 2 RMSNorm weights 2·4096·2 = 16,384  -> 788,611,072, x 32
    # + the embedding row 4096·2 + final norm 4096·2 + lm_head 32000·4096·2 = 262,144,000
    per_layer = 2 * MIXTRAL_EXPERT + 2 * 33_554_432 + 2 * 8_388_608 + 65_536 + 16_384
    assert a.totals.weight_bytes == 32 * per_layer + 8_192 + 8_192 + 262_144_000 == 25_497_714_688
    # FLOPs follow top-2: 2 experts x 3 matmuls x 2·4096·14336 per token
    assert a.kernel("experts.gate_up_proj").cost.matmul_flops + a.kernel("experts.down_proj").cost.matmul_flops == \
        2 * 3 * 2 * 4096 * 14336


def test_mixtral_batch_64_reads_nearly_every_expert():
    a = analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(64, 500))
    # uniform routing: 8 · (1 − (1 − 2/8)^64) = 8 − 8·0.75^64 = 7.99999992 experts touched
    touched = 8 * (1 - 0.75 ** 64)
    assert 8 - touched < 1e-7
    experts = a.kernel("experts.gate_up_proj").cost.weight_bytes + a.kernel("experts.down_proj").cost.weight_bytes
    assert experts == round(touched * 2 * 14336 * 4096 * 2) + round(touched * 14336 * 4096 * 2)
    assert 8 * MIXTRAL_EXPERT - experts < 30  # all 8 experts but for a few bytes
    # the FLOPs still follow top-2: 64 tokens x 2 experts
    assert a.kernel("experts.down_proj").cost.matmul_flops == 64 * 2 * 2 * 14336 * 4096
    every = analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(64, 500, experts="all"))
    only_k = analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(64, 500, experts="topk"))
    assert every.kernel("experts.down_proj").cost.weight_bytes == 8 * 14336 * 4096 * 2
    assert only_k.kernel("experts.down_proj").cost.weight_bytes == 2 * 14336 * 4096 * 2


def test_touched_experts():
    assert touched_experts(8, 2, 1, "expected") == 2  # one token: exactly k
    assert touched_experts(8, 2, 2, "expected") == pytest.approx(8 * (1 - 0.75 ** 2))  # 3.5
    assert touched_experts(8, 8, 5, "expected") == 8
    assert touched_experts(256, 8, 10 ** 6, "expected") == pytest.approx(256)


def test_qwen3_moe_layers_and_active_parameters():
    s = load_shape("Qwen/Qwen3-30B-A3B")
    assert s.layer_mlp_types == ("moe",) * 48  # decoder_sparse_step 1, mlp_only_layers []
    a = analyze(s, Workload.decode(1, 10))
    # 128 experts of 3 · 2048 · 768 = 4,718,592 parameters; a token uses 8 of them in each of 48 layers
    assert a.params - a.active_params == 48 * 120 * 4_718_592


def test_deepseek_v2_lite_mla_naive_and_absorbed():
    s = load_shape("deepseek-ai/DeepSeek-V2-Lite")
    m = s.mla
    assert (m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim) == \
        (None, 512, 128, 64, 128)
    assert s.layer_mlp_types == ("dense",) + ("moe",) * 26  # first_k_dense_replace 1
    naive = analyze(s, Workload.decode(1, 1000, act_dtype=dtype("bf16"), kv_dtype=dtype("bf16"),
                                       weight_dtype=dtype("bf16")))
    # the cache holds kv_lora_rank + rope = 576 values per token per layer: 27 · 576 · 2 = 31,104 bytes
    assert naive.kv_bytes_per_token == 31_104
    # naive: kv_b_proj expands all 1000 latents into 16 heads x (128 + 128) every step
    assert naive.kernel("kv_b_proj").cost.matmul_flops == 2 * 1000 * 512 * 16 * 256
    assert naive.kernel("kv_b_proj").cost.kv_read_bytes == 1000 * 512 * 2
    # attention: QKᵀ over 192 dims and PV over 128, 16 heads, 1000 keys
    assert naive.kernel("attention").cost.matmul_flops == 2 * 16 * 1000 * 192 + 2 * 16 * 1000 * 128
    absorbed = analyze(s, Workload.decode(1, 1000, act_dtype=dtype("bf16"), kv_dtype=dtype("bf16"),
                                          weight_dtype=dtype("bf16"), mla="absorbed"))
    # absorbed: 16 heads attend over the 576-value latent (scores) and its 512-value part (PV)
    att = absorbed.kernel("attention").cost
    assert att.matmul_flops == 2 * 16 * 1000 * 576 + 2 * 16 * 1000 * 512
    assert att.kv_read_bytes == 1000 * 576 * 2  # the latent read once, shared by every head
    assert absorbed.kernel("q_absorb").cost.matmul_flops == 2 * 16 * 128 * 512
    assert absorbed.kernel("v_up").cost.matmul_flops == 2 * 16 * 512 * 128
    # the two halves of kv_b_proj hold its parameters, so totals agree
    assert absorbed.params == naive.params == 15_706_484_224
    assert absorbed.totals.flops < naive.totals.flops / 5
    # serving (what vLLM, SGLang and TensorRT-LLM run): a decode step absorbed, a prefill expanded
    kw = dict(act_dtype=dtype("bf16"), kv_dtype=dtype("bf16"), weight_dtype=dtype("bf16"))
    serving = analyze(s, Workload.decode(1, 1000, mla="serving", **kw))
    assert [k.name for k in serving.kernels] == [k.name for k in absorbed.kernels]
    assert serving.totals == absorbed.totals
    for mla in ("naive", "serving"):
        pre = analyze(s, Workload.prefill(1, 256, mla=mla, **kw))
        assert pre.kernel("kv_b_proj").cost.matmul_flops == 2 * 256 * 512 * 16 * 256  # 256 latents expanded
        assert not any(k.name == "q_absorb" for k in pre.kernels)
    assert analyze(s, Workload.prefill(1, 256, mla="serving", **kw)).totals == \
        analyze(s, Workload.prefill(1, 256, mla="naive", **kw)).totals


def test_mxfp4_stores_the_experts_alone():
    """Mixtral-8x7B with MXFP4 experts (gpt-oss's format: 4-bit values, one byte of scale per 32 inputs):
    32 layers x 8 experts x 3 x 4096 x 14336 = 45,097,156,608 expert values in 45,097,156,608 x 17/32 =
    23,957,864,448 bytes; the other 46,702,792,704 - 45,097,156,608 = 1,605,636,096 parameters in fp16,
    3,211,272,192 bytes: 27,169,136,640 in all."""
    s = load_shape("mistralai/Mixtral-8x7B-v0.1")
    a = analyze(s, Workload.decode(1, 10, weight_dtype=dtype("mxfp4")))
    assert a.params == 46_702_792_704
    assert a.weight_storage_bytes == 23_957_864_448 + 3_211_272_192
    assert a.kernel("q_proj").cost.weight_bytes == 4096 * 4096 * 2  # attention stays fp16


def test_deepseek_v3_fp8_block_weights_from_quantization_config():
    s = load_shape("deepseek-ai/DeepSeek-V3")
    assert s.weight_format == "fp8-b128"  # quant_method fp8, weight_block_size [128, 128]
    a = analyze(s, Workload.decode(1, 10, weight_dtype=dtype("fp8-b128"), act_dtype=dtype("bf16")))
    # q_b_proj 1536 -> 128 · 192 = 24576: 37,748,736 fp8 bytes + (24576/128) · (1536/128) = 2304 fp32 scales
    assert a.kernel("q_b_proj").cost.weight_bytes == 1536 * 24576 + 192 * 12 * 4
    # the embedding, norms, router and lm_head stay in bf16 (fp32 router, as transformers keeps it)
    assert a.kernel("lm_head").cost.weight_bytes == 129280 * 7168 * 2
    assert a.kernel("mlp.gate").cost.weight_bytes == (7168 * 256 + 256) * 4
    # the GEMMs run in fp8: transformers' FP8Linear quantizes its input per token and group of 128 and runs
    # DeepGEMM or its Triton block-fp8 GEMM (integrations/finegrained_fp8.py, fp8_linear), as engines do
    assert a.workload.compute_dtype.name == "fp8"


def test_fp8_checkpoints_with_a_scale_per_row_or_per_matrix():
    """Llama 3.1's FBGEMM FP8 checkpoints and compressed-tensors FP8 by channel store each decoder linear in
    fp8 with one fp32 scale per output row, by tensor one per matrix; the embedding, the norms and lm_head
    stay in bf16, and the GEMMs run in fp8 (fp8 activations per token)."""
    from roofcalc import load_config

    cfg = load_config("TinyLlama/TinyLlama-1.1B")[0]
    fbgemm = shape_from_config(dict(cfg, quantization_config={"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
                                                              "modules_to_not_convert": ["lm_head"]}), "t")
    assert fbgemm.weight_format == "fp8-ch"
    channel = {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}
    tensor = {"weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}
    for strategy, fmt in ((channel, "fp8-ch"), (tensor, "fp8-t")):
        q = {"quant_method": "compressed-tensors", "config_groups": {"group_0": dict(strategy, targets=["Linear"])}}
        assert shape_from_config(dict(cfg, quantization_config=q), "t").weight_format == fmt
    bf16 = dtype("bf16")
    rows = analyze(fbgemm, Workload.decode(1, 10, weight_dtype=dtype("fp8-ch"), act_dtype=bf16, kv_dtype=bf16))
    per_matrix = analyze(fbgemm, Workload.decode(1, 10, weight_dtype=dtype("fp8-t"), act_dtype=bf16, kv_dtype=bf16))
    # q_proj 2048 -> 2048: 4,194,304 fp8 bytes and 2048 fp32 row scales (8,192 bytes), or one (4 bytes)
    assert rows.kernel("q_proj").cost.weight_bytes == 2048 * 2048 + 2048 * 4
    assert per_matrix.kernel("q_proj").cost.weight_bytes == 2048 * 2048 + 4
    assert rows.kernel("lm_head").cost.weight_bytes == 32000 * 2048 * 2  # bf16
    # the whole model: 22 layers of q, k, v, o, gate, up, down (2048·2048·2 + 2048·256·2 + 3·2048·5632 =
    # 44,040,192 values, 2048 + 256 + 256 + 2048 + 5632 + 5632 + 2048 = 17,920 rows) in fp8 with their scales;
    # the embedding and lm_head (2 x 65,536,000 values) and 45 norms of 2048 in bf16
    linear = 22 * (44_040_192 + 17_920 * 4)
    assert rows.weight_storage_bytes == linear + 2 * 65_536_000 * 2 + 45 * 2048 * 2
    assert rows.params == 1_100_048_384
    assert rows.workload.compute_dtype.name == "fp8"


def test_gemma2_alternates_sliding_layers_and_soft_caps():
    s = load_shape("google/gemma-2-9b")
    assert s.layer_types[:4] == ("sliding", "full", "sliding", "full") and s.sliding_window == 4096
    a = analyze(s, Workload.decode(1, 8192))
    # sliding layers read 4096 keys, global ones all 8192; 16 heads x 256, 8 KV heads
    assert a.kernel("attention[sliding]").cost.kv_read_bytes == 2 * 4096 * 8 * 256 * 2
    assert a.kernel("attention[full]").cost.kv_read_bytes == 2 * 8192 * 8 * 256 * 2
    assert a.kernel("attention[full]").count == a.kernel("attention[sliding]").count == 21
    # softmax 5 + soft-capping 3 FLOPs per score on top of the two matmuls
    att = a.kernel("attention[full]").cost
    assert att.flops - att.matmul_flops == (5 + 3) * 16 * 8192
    assert a.kernel("logit_softcap").cost.flops == 3 * 256000
    assert [k.name for k in a.kernels if k.name.endswith("layernorm")] == [
        "input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"]


def test_gpt2_learned_positions_tied_head_and_fused_qkv():
    a = analyze(load_shape("openai-community/gpt2"), Workload.decode(1, 100))
    assert a.kernel("wpe").params == 1024 * 768
    assert a.kernel("c_attn").params == 768 * 3 * 768 + 3 * 768  # fused q, k, v with biases
    assert a.kernel("lm_head").params == 0  # tied to wte
    assert a.kernel("lm_head").cost.weight_bytes == 50257 * 768 * 2
    assert "rotary" not in [k.name for k in a.kernels]


def test_opt_position_offset_and_pythia_phi_partial_rotary():
    opt = analyze(load_shape("facebook/opt-1.3b"), Workload.decode(1, 10))
    assert opt.kernel("embed_positions").params == (2048 + 2) * 2048  # OPT's offset of 2
    pythia = load_shape("EleutherAI/pythia-1b")
    assert (pythia.head_dim, pythia.rotary_dim, pythia.block) == (256, 64, "parallel")  # rotary_pct 0.25
    phi = load_shape("microsoft/phi-2")
    assert (phi.head_dim, phi.rotary_dim, phi.block, phi.lm_head_bias) == (80, 32, "parallel_shared", True)
    r = analyze(phi, Workload.decode(1, 10)).kernel("rotary")
    assert r.cost.flops == 3 * (32 + 32) * 32  # 3 FLOPs x (32 q + 32 k heads) x 32 rotated dims


MOE = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512, vocab_size=1000)


@pytest.mark.parametrize("cfg,message", [
    (dict(MOE, model_type="mixtral", num_experts_per_tok=2), "needs 'num_local_experts'"),
    (dict(MOE, model_type="qwen3_moe", num_experts=8), "needs 'num_experts_per_tok'"),
    (dict(MOE, model_type="mixtral", num_local_experts=4, num_experts_per_tok=6), "more than the 4 experts"),
    (dict(MOE, model_type="deepseek_v3", num_experts_per_tok=2, moe_intermediate_size=64), "needs 'n_routed_experts'"),
    (dict(MOE, model_type="mixtral", num_local_experts=0, num_experts_per_tok=2), "must be a positive integer"),
    (dict(MOE, model_type="phi3", sliding_window=0), "'sliding_window' must be a positive integer"),
    (dict(MOE, model_type="gemma2", sliding_window=0), "'sliding_window' must be a positive integer"),
    (dict(MOE, model_type="gpt_neox", rotary_pct=1.5), "fraction"),
    (dict(MOE, model_type="qwen3_moe", num_experts=8, num_experts_per_tok=2, mlp_only_layers="all"), "list of layer"),
])
def test_bad_family_configs(cfg, message):
    with pytest.raises(RoofcalcError, match=message):
        shape_from_config(cfg, "t")


@pytest.mark.parametrize("cfg,message", [
    (dict(MOE, model_type="deepseek_v3", n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=64,
          quantization_config={"quant_method": "fp8", "weight_block_size": [64, 64]}), "only \\[128, 128\\]"),
    (dict(MOE, model_type="llama", quantization_config={"quant_method": "hqq"}), "quant_method 'hqq'"),
    # a known method at a width no format here holds: said so, not "not known"
    (dict(MOE, model_type="llama", quantization_config={"quant_method": "gptq", "bits": 3}), "gptq at bits 3"),
])
def test_unreadable_quantization_configs_are_refused_unless_overridden(cfg, message, tmp_path, capsys):
    """The shape keeps why its declared weights cannot be read; the command line refuses it in one line
    unless --weight-dtype (or --dtype) says what to read instead."""
    import json

    from roofcalc.cli import main

    assert re.search(message, shape_from_config(cfg, "t").weight_format_refusal)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err)
    assert main([str(path), "--weight-dtype", "int4"]) == 0


def test_unknown_model_type_read_as_a_family_explicitly():
    cfg = dict(MOE, model_type="my_moe_finetune", num_local_experts=4, num_experts_per_tok=2)
    with pytest.raises(RoofcalcError, match="--family"):
        shape_from_config(cfg, "t")
    assert shape_from_config(cfg, "t", family="mixtral").moe.n_experts == 4


def test_phi3_rotates_only_its_partial_rotary_share():
    """Phi-4-mini's config sets partial_rotary_factor 0.75: 96 of each head's 128 dims rotate. The width
    is checked against the inv_freq buffer the real transformers model builds (one frequency per two
    rotated dims)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from roofcalc import Workload, analyze, shape_from_config

    cfg = dict(model_type="phi3", hidden_size=256, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
               intermediate_size=512, vocab_size=128, partial_rotary_factor=0.75, max_position_embeddings=64,
               pad_token_id=0)
    shape = shape_from_config(cfg, "phi4-mini-like")
    assert shape.head_dim == 128 and shape.rotary_dim == 96  # 0.75 x 128
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**cfg))
    assert 2 * model.model.rotary_emb.inv_freq.numel() == shape.rotary_dim
    # rotary FLOPs at batch 1 decode: 3 per element over (N + K) heads x 96 dims = 3 x 4 x 96 = 1,152
    assert analyze(shape, Workload.decode(1, 8)).kernel("rotary").cost.flops == 1_152


def test_a_deepseek_v3_config_under_another_type_reads_as_deepseek_v3():
    """Kimi K2 ships DeepSeek-V3's architecture under its own remote-code model_type; its config writes
    num_key_value_heads, which MLA's attention does not use, so --family deepseek_v3 must not refuse it as a
    key it would drop. DeepSeek-V3's own config read so has its 671,026,419,200 parameters (the catalog's)."""
    from roofcalc import load_config

    cfg = dict(load_config("deepseek-ai/DeepSeek-V3")[0], model_type="kimi_k2")
    assert cfg["num_key_value_heads"] == 128
    s = shape_from_config(cfg, "k", family="deepseek_v3")
    assert analyze(s, Workload.decode(1, 10)).params == 671_026_419_200


def test_bitsandbytes_checkpoints():
    """bitsandbytes' 4-bit checkpoints store NF4 values in blocks of 64 with one absmax each: 8-bit absmaxes
    when double-quantized (1 byte per 64 values: int4 at group 128 with fp16 scales), fp32 ones otherwise (4
    bytes per 64: group 32); 8-bit ones (LLM.int8()) int8 weights with a scale per row. TinyLlama's q_proj
    (2048 x 2048): 2,097,152 bytes of values, + 2048 x 16 x 2 = 65,536 (group 128) or 2048 x 64 x 2 = 262,144
    (group 32) of scales; int8: 4,194,304 + 2048 x 2."""
    from roofcalc import load_config

    cfg = load_config("TinyLlama/TinyLlama-1.1B")[0]
    nf4 = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    for q, fmt, q_bytes in ((dict(nf4, bnb_4bit_use_double_quant=True), "int4", 2_097_152 + 65_536),
                            (dict(nf4, bnb_4bit_use_double_quant=False), "int4", 2_097_152 + 262_144),
                            ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8", 4_194_304 + 2048 * 2)):
        s = shape_from_config(dict(cfg, quantization_config=q), "t")
        assert s.weight_format == fmt
        wl = Workload.decode(1, 10, weight_dtype=dtype(fmt), group_size=s.weight_group)
        assert analyze(s, wl).kernel("q_proj").cost.weight_bytes == q_bytes
