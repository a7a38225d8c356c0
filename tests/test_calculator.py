"""The seed document's TinyLlama kernel table, computed; every expected number is derived beside it.

TinyLlama-1.1B: L=22, D=2048, N=32, K=4, H=64 (K·H = 256), F=5632, V=32000, untied.
Decode, batch 1, context 500, fp16 (2 bytes) everywhere, the new token's K and V written in place (the seed
table's arithmetic; the library's default, transformers' concatenating cache, is tested apart), unless a test
says otherwise.
"""

from __future__ import annotations

import pytest

from roofcalc import RoofcalcError, Workload, analyze, dtype, load_shape
from roofcalc.calculator import keys_read, score_pairs

TINY = load_shape("TinyLlama/TinyLlama-1.1B")


@pytest.fixture(scope="module")
def step():
    return analyze(TINY, Workload.decode(batch=1, context=500, cache_update="in-place", eager_ops=False))


def test_linear_kernels_match_seed_table(step):
    q = step.kernel("q_proj").cost
    assert q.flops == 8_388_608  # 2 · 1 · 2048 · 2048
    # weights 2048·2048·2 = 8,388,608 + input 2048·2 + output 2048·2 = 8,396,800 ≈ 8.4 MB (seed: 8.4 MB)
    assert q.bytes == 8_396_800
    assert step.kernel("k_proj").cost.flops == 1_048_576  # 2 · 2048 · 256
    assert step.kernel("v_proj").cost.flops == 1_048_576
    for name in ("gate_proj", "up_proj", "down_proj"):
        assert step.kernel(name).cost.flops == 23_068_672  # 2 · 2048 · 5632
    assert step.kernel("lm_head").cost.flops == 131_072_000  # 2 · 2048 · 32000, once per step
    assert step.kernel("lm_head").count == 1 and step.kernel("q_proj").count == 22


def test_attention_counts_both_matmuls(step):
    """The seed's row says ≈ 2 M FLOPs: that is QKᵀ alone. QKᵀ and PV together are ≈ 4.1 M."""
    a = step.kernel("attention").cost
    assert a.matmul_flops == 4_096_000  # QKᵀ 2·32·500·64 = 2,048,000, PV the same
    assert a.flops == 4_096_000 + 5 * 32 * 500  # + softmax, 5 FLOPs per score = 4,176,000
    assert a.kv_bytes == 512_000  # K and V: 2 · 500 · 256 · 2 bytes ≈ 0.5 MB (seed: ≈ 0.5 MB)
    assert a.activation_bytes == 2 * 2048 * 2  # reads q (N·H = 2048 values), writes the output


def test_elementwise_kernels_match_seed_table(step):
    norm = step.kernel("input_layernorm").cost
    assert norm.flops == 4 * 2048  # ≈ 8 K (seed)
    assert norm.bytes == 2048 * 2 * 2 + 2048 * 2  # read x, write y, read the weight: 12,288 ≈ 12 KB (seed)
    act = step.kernel("act_mul").cost
    assert act.flops == 3 * 5632  # 16,896 ≈ 17 K (seed)
    assert act.bytes == 3 * 5632 * 2  # read gate and up, write: 33,792 ≈ 34 KB (seed)
    add = step.kernel("attn_residual").cost
    assert (add.flops, add.bytes) == (2048, 3 * 2048 * 2)  # y = a + b: 1 FLOP, 3 tensors per element


def test_step_bytes_and_header(step):
    # parameters: per layer q,o 2·2048² + k,v 2·2048·256 + MLP 3·2048·5632 + 2 norms 2·2048 = 44,044,288;
    # ·22 = 968,974,336; + embed 32000·2048 + lm_head 32000·2048 + final norm 2048 = 1,100,048,384
    assert step.params == 1_100_048_384
    assert step.weight_storage_bytes == 2 * 1_100_048_384  # 2,200,096,768 (the seed's "2.2 GB")
    # A step reads every weight but the embedding table (a gather reads only the batch's rows):
    # 2,200,096,768 - 32000·2048·2 (131,072,000) = 2,069,024,768, plus 1 row of 2048·2 bytes.
    # The seed's "2.2 GB read per step" rounds in the unread embedding table.
    assert step.totals.weight_bytes == 2_069_024_768 + 2048 * 2
    assert step.kv_bytes_per_token == 22_528  # 2 (K, V) · 22 layers · 256 · 2 bytes (seed: 22.5 KB)
    # KV read by attention: 500 tokens · 22,528 = 11,264,000 (seed: "11 MB at 500 tokens"),
    # plus the new token written: 22 layers · 2 · 256 · 2 = 22,528
    assert step.totals.kv_bytes == 500 * 22_528 + 22_528
    assert step.totals.intensity == pytest.approx(1.0, abs=0.05)  # seed: AI ≈ 1 at batch 1


def test_the_default_cache_is_concatenated_as_transformers_does():
    """The default Workload is the command line's default engine, transformers' eager generate, whose
    DynamicCache concatenates: kv_cache_write reads a layer's 499 old positions and writes all 500."""
    default = analyze(TINY, Workload.decode())
    assert default.workload.cache_update == "concat"
    # attention reads 500 · 22,528; the write reads 499 · 22,528 and writes 500 · 22,528: 1,499 · 22,528
    assert default.totals.kv_bytes == (500 + 499 + 500) * 22_528
    assert Workload.prefill().cache_update == "concat"


def test_decode_intensity_grows_with_batch():
    """Weights are read once per step whatever B: at B = 16 the linear kernels' AI ≈ 16."""
    big = analyze(TINY, Workload.decode(batch=16, context=500))
    q = big.kernel("q_proj").cost
    # FLOPs 2·16·2048² over bytes 2048²·2 (weights) + 16·2048·2 (input) + 16·2048·2 (output)
    # = 16 / (1 + 32/2048) = 15.754
    assert q.intensity == pytest.approx(16 / (1 + 32 / 2048))


def test_prefill_causal_and_full_rectangle():
    causal = analyze(TINY, Workload.prefill(batch=2, prompt=128))
    full = analyze(TINY, Workload.prefill(batch=2, prompt=128, causal=False))
    # causal pairs per head: 1 + 2 + ... + 128 = 128·129/2 = 8256; full: 128² = 16384
    per_pair = 2 * 2 * 2 * 32 * 64  # two matmuls (QKᵀ, PV) · 2 FLOPs per MAC · B = 2 · N = 32 · H = 64
    assert causal.kernel("attention").cost.matmul_flops == per_pair * 8256
    assert full.kernel("attention").cost.matmul_flops == per_pair * 16384
    # the same weights and token counts otherwise
    assert causal.kernel("q_proj").cost == full.kernel("q_proj").cost
    assert causal.kernel("q_proj").cost.flops == 2 * 256 * 2048 * 2048  # M = B·T = 256 rows


def test_prefill_lm_head_last_token_or_all():
    last = analyze(TINY, Workload.prefill(batch=2, prompt=128)).kernel("lm_head").cost
    every = analyze(TINY, Workload.prefill(batch=2, prompt=128, logits_all=True)).kernel("lm_head").cost
    assert last.flops == 2 * 2 * 2048 * 32000  # one row per sequence
    assert every.flops == 2 * 256 * 2048 * 32000  # B·T rows


def test_score_pairs_and_window():
    # decode (T = 1) at S = 100, window 8: the new token sees the last 8 keys
    assert score_pairs(Workload.decode(1, 100), 8) == 8
    assert keys_read(Workload.decode(1, 100), 8) == 8
    assert score_pairs(Workload.decode(1, 100), None) == 100
    # prefill T = S = 10, window 4: queries see 1, 2, 3, 4, 4, 4, 4, 4, 4, 4 keys = 34
    assert score_pairs(Workload.prefill(1, 10), 4) == 34
    assert keys_read(Workload.prefill(1, 10), 4) == 10  # every key is someone's
    # no window: 1 + ... + 10 = 55
    assert score_pairs(Workload.prefill(1, 10), None) == 55


def test_quantized_weights_count_their_scales():
    w4 = analyze(TINY, Workload.decode(1, 500, weight_dtype=dtype("int4"), group_size=128))
    q = w4.kernel("q_proj").cost
    # 2048·2048 values · 0.5 byte = 2,097,152 + 2048 rows · (2048/128 = 16 groups) · 2 bytes = 65,536
    assert q.weight_bytes == 2_097_152 + 65_536
    assert q.flops == 8_388_608  # FLOPs do not change with the weight format
    assert w4.workload.compute_dtype.name == "fp16"  # W4A16 computes in fp16
    # norms, embeddings and lm_head stay in the activation dtype
    assert w4.kernel("lm_head").cost.weight_bytes == 32000 * 2048 * 2
    assert w4.kernel("input_layernorm").cost.weight_bytes == 2048 * 2


def test_a_concatenated_cache_is_read_and_written_whole():
    """transformers' DynamicCache appends by torch.cat: each layer reads its old cache and writes it whole.
    TinyLlama, batch 2 at S = 100: a token's K and V in a layer are 2 x 4 heads x 64 x 2 bytes = 1,024; the
    write reads 2 x 99 old positions (202,752 bytes) and writes 2 x 100 (204,800), where in place it writes
    the 2 new ones (2,048). A prefill has no old cache: the same either way."""
    cat = analyze(TINY, Workload.decode(2, 100, cache_update="concat")).kernel("kv_cache_write").cost
    put = analyze(TINY, Workload.decode(2, 100, cache_update="in-place")).kernel("kv_cache_write").cost
    assert (cat.kv_read_bytes, cat.kv_write_bytes) == (2 * 99 * 1024, 2 * 100 * 1024)
    assert (put.kv_read_bytes, put.kv_write_bytes) == (0, 2 * 1024)
    assert cat.act_read_bytes == put.act_read_bytes == 2 * 1024  # the new K and V come in either way
    assert analyze(TINY, Workload.prefill(2, 64, cache_update="concat")).totals == \
        analyze(TINY, Workload.prefill(2, 64, cache_update="in-place")).totals
    # under a sliding window the layer holds the last W - 1 + T positions: Mistral-7B's 4096 at S = 10,000
    # (8 KV heads x 128 x 2 (K, V) x 2 bytes = 4,096 a token): reads 4,095, writes 4,096
    w = analyze(load_shape("mistralai/Mistral-7B-v0.1"), Workload.decode(1, 10_000, cache_update="concat"))
    k = next(k for k in w.kernels if k.name.startswith("kv_cache_write")).cost
    assert (k.kv_read_bytes, k.kv_write_bytes) == (4095 * 4096, 4096 * 4096)
    with pytest.raises(RoofcalcError, match="cache_update"):
        Workload.decode(1, 10, cache_update="append")


def test_fp32_doubles_every_byte():
    """Of fused kernels (an eager RMSNorm's casts to and from fp32 launch nothing in an fp32 model: below)."""
    fp16 = analyze(TINY, Workload.decode(1, 500, eager_ops=False))
    fp32 = analyze(TINY, Workload.decode(1, 500, weight_dtype=dtype("fp32"), act_dtype=dtype("fp32"),
                                         kv_dtype=dtype("fp32"), eager_ops=False))
    assert fp32.totals.bytes == 2 * fp16.totals.bytes
    assert fp32.totals.flops == fp16.totals.flops


def test_layer_count_applied_once(step):
    per_layer = sum(k.cost.flops for k in step.kernels if k.scope == "layer")
    per_model = sum(k.cost.flops for k in step.kernels if k.scope == "model")
    assert step.totals.flops == 22 * per_layer + per_model


@pytest.mark.parametrize("kw", [dict(batch=0), dict(batch=-1), dict(batch=1.5), dict(batch=10**12), dict(context=0)])
def test_bad_workloads_are_refused(kw):
    with pytest.raises(RoofcalcError):
        Workload.decode(**kw)


def test_a_gguf_files_tables_in_the_library_and_a_gguf_type_its_weights_contradict():
    """Workload(gguf=...) as --weight-dtype q4_0 sets it: TinyLlama's 32,000 x 2,048 output table in Q6_K, 256,000 blocks of
    256 weights at 210 bytes (53,760,000), its embedding's one row in Q4_0 (64 blocks of 18 bytes);
    a type its weights are not (int4 in groups of 128, Q5_0) is refused."""
    wl = Workload.decode(1, 500, weight_dtype="int4", group_size=32, gguf="q4_0")
    k = {x.name: x for x in analyze(TINY, wl).kernels}
    assert k["lm_head"].cost.weight_bytes == 32000 * 2048 // 256 * 210 == 53_760_000
    assert k["embed_tokens"].cost.weight_bytes == 2048 // 32 * 18
    for kw in (dict(weight_dtype="int4", gguf="q4_0"), dict(weight_dtype="int4", group_size=32, gguf="q5_0"),
               dict(weight_dtype="int8", group_size=32, gguf="q4_0")):
        with pytest.raises(RoofcalcError, match="gguf must be one of q4_0, q8_0"):
            Workload.decode(1, 500, **kw)


def test_prompt_longer_than_context_is_refused():
    with pytest.raises(RoofcalcError):
        Workload("decode", 1, 10, 5)


def test_unfused_attention_writes_and_reads_its_score_matrix():
    """--attention unfused adds one kernel after attention, attention_scores, moving every score the attention
    kernel computes 10 bytes out and 10 bytes in (calculator.UNFUSED_SCORE_BYTES_*: llama.cpp's fp32 K·Q, its
    softmax and the conversion for PV). An unfused attention computes its whole score matrix, masked or not:
    Llama-2-7B (32 heads of 128), a prefill of 512 at once: 512 x 512 = 262,144 scores a head (the causal
    131,328 fused), 8,388,608 a layer, 83,886,080 bytes each way, and the attention kernel's FLOPs 4 x 128 + 5
    (QKᵀ and PV over a head dim of 128, and the softmax) = 517 a score; a decode step of 2 sequences at context 100: 2 x 32 x 100 = 6,400
    scores, 64,000 bytes each way, its FLOPs the fused step's. The other kernels are the fused step's."""
    from dataclasses import replace

    llama = load_shape("meta-llama/Llama-2-7b-hf")
    for wl, scores in ((Workload.prefill(1, 512), 8_388_608), (Workload.decode(2, 100), 6_400)):
        fused, unfused = analyze(llama, wl), analyze(llama, replace(wl, attention="unfused"))
        k = next(k for k in unfused.kernels if k.name == "attention_scores")
        assert (k.kind, k.count, k.cost.flops) == ("elementwise", 32, 0)
        assert k.cost.act_write_bytes == k.cost.act_read_bytes == 10 * scores
        assert [x.name for x in unfused.kernels if x.name != "attention_scores"] == [x.name for x in fused.kernels]
        att = next(x for x in unfused.kernels if x.name == "attention")
        assert att.cost.flops == 517 * scores
        others = [(x.name, x.cost) for x in unfused.kernels if x.name not in ("attention", "attention_scores")]
        assert others == [(x.name, x.cost) for x in fused.kernels if x.name != "attention"]
    decode = Workload.decode(2, 100)
    assert analyze(llama, replace(decode, attention="unfused")).totals.flops == analyze(llama, decode).totals.flops


def test_unfused_attention_in_micro_batches():
    """llama.cpp runs a prompt in micro-batches of n_ubatch tokens (512 by default), each scoring its queries
    against every cached position up to its end: a prompt of 8,192 in 16 of 512 scores 512 x 512 x (1 + ... + 16)
    = 262,144 x 136 = 35,651,584 pairs a head (6 % above the causal 33,558,528); one of 1,000 scores 512 x 512 then
    488 x 1,000 = 750,144; a micro-batch as long as the prompt is the whole rectangle, 512 x 512."""
    from roofcalc.calculator import computed_pairs

    for p, u, pairs in ((8192, 512, 35_651_584), (1000, 512, 750_144), (512, 512, 262_144), (512, 0, 262_144),
                        (512, 4096, 262_144)):
        assert computed_pairs(Workload.prefill(1, p, attention="unfused", ubatch=u), None) == pairs
    assert computed_pairs(Workload.prefill(1, 8192), None) == 33_558_528  # fused: the causal pairs
    with pytest.raises(RoofcalcError, match="micro-batch"):
        Workload.prefill(1, 512, attention="unfused", ubatch=-1)


def test_unfused_attention_is_refused_where_it_is_not_counted():
    with pytest.raises(RoofcalcError, match="attention must be one of fused, unfused"):
        Workload.decode(1, 10, attention="flash")
    with pytest.raises(RoofcalcError, match="latent attention"):
        analyze(load_shape("deepseek-ai/DeepSeek-V2-Lite"), Workload.decode(1, 10, attention="unfused"))


def test_eager_ops_move_the_bytes_of_transformers_eager_modules():
    """Under --impl hf-eager (eager_ops) an RMSNorm, rotary and SiLU × up run as transformers' eager ops, each
    reading its inputs and writing its output. TinyLlama's prefill of 2 x 64 tokens in fp16 (D = 2,048, 32 query
    and 4 KV heads of 64, F = 5,632), per element:
    RMSNorm: x.to(fp32) 2 + 4, pow 4 + 4, mean 4, × rsqrt 4 + 4, .to(fp16) 4 + 2, × weight 2 + 2 = 36 (fused: 4);
    rotary, per element of q and k: x·cos 2 + 2, neg of a half 1 + 1, cat 2 + 2, ·sin 2 + 2, add 4 + 2 = 20
    (fused: 4); SiLU × up, per element of F: SiLU 2 + 2, × up 4 + 2 = 10 (fused: 6)."""
    fused = analyze(TINY, Workload.prefill(2, 64, cache_update="in-place", eager_ops=False))
    eager = analyze(TINY, Workload.prefill(2, 64, cache_update="in-place", eager_ops=True))
    rows = 2 * 64
    n_norm, n_rot, n_act = rows * 2048, rows * (32 + 4) * 64, rows * 5632
    w = 2048 * 2  # the norm's fp16 weight, read once either way
    cos_sin = 2 * rows * 64 * 2  # read once either way
    assert fused.kernel("input_layernorm").cost.bytes == 4 * n_norm + w
    assert eager.kernel("input_layernorm").cost.bytes == 36 * n_norm + w
    assert (fused.kernel("rotary").cost.bytes, eager.kernel("rotary").cost.bytes) == (4 * n_rot + cos_sin,
                                                                                      20 * n_rot + cos_sin)
    assert (fused.kernel("act_mul").cost.bytes, eager.kernel("act_mul").cost.bytes) == (6 * n_act, 10 * n_act)
    # the weights, the GEMMs, the FLOPs and the KV cache are the same
    assert eager.totals.flops == fused.totals.flops
    assert eager.kernel("q_proj").cost == fused.kernel("q_proj").cost
    # in fp32 the RMSNorm's two casts launch nothing: pow 4 + 4, mean 4, × rsqrt 4 + 4, × weight 4 + 4 = 28
    f32 = dict(weight_dtype=dtype("fp32"), act_dtype=dtype("fp32"), kv_dtype=dtype("fp32"), cache_update="in-place")
    eager32 = analyze(TINY, Workload.prefill(2, 64, eager_ops=True, **f32))
    assert eager32.kernel("input_layernorm").cost.bytes == 28 * n_norm + 2048 * 4


def test_the_command_line_counts_eager_bytes_under_hf_eager_only(capsys):
    """hf-eager (the default engine's) counts the eager ops' bytes; --impl fused does not; the JSON says which."""
    import json

    from roofcalc.cli import main

    for impl, eager in (("hf-eager", True), ("fused", False)):
        main(["TinyLlama/TinyLlama-1.1B", "--prompt", "64", "--impl", impl, "--format", "json"])
        doc = json.loads(capsys.readouterr().out)
        assert doc["workload"]["eager_ops"] is eager
        norm = next(k for k in doc["kernels"] if k["name"] == "input_layernorm")
        assert norm["bytes"] == (36 if eager else 4) * 64 * 2048 + 2048 * 2
