"""The traced backend against independent oracles, on model types roofcalc has no hand model for.

For each: the real transformers model built from a small random config runs under FlopCounterMode
(tests/hf_oracle.py); every leaf module's matmul FLOPs and each layer's attention core must equal the
trace's kernels exactly, prefill and decode; the parameters equal the real model's; the KV bytes per
token times the tokens equal the real cache's bytes. FlopCounterMode has no formula for the grouped
expert matmul, so MoE experts are checked by hand arithmetic instead."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_oracle import build, cache_bytes, run  # noqa: E402

from roofcalc import RoofcalcError, Workload, analyze, shape_from_config  # noqa: E402
from roofcalc.cli import main  # noqa: E402
from roofcalc.trace import trace, trace_raw  # noqa: E402
from textutil import unwrap  # noqa: E402

BASE = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, intermediate_size=512,
            vocab_size=1000, pad_token_id=0)
TYPES = {
    "gemma3_text": dict(BASE, head_dim=32, sliding_window=64),
    "cohere": BASE,
    "starcoder2": BASE,
    "olmo2": BASE,
    "stablelm": BASE,
    "gpt_bigcode": dict(n_embd=256, n_layer=2, n_head=8, vocab_size=1000, multi_query=True),
    "falcon": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, vocab_size=1000),
    "qwen2_moe": dict(BASE, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=128,
                      shared_expert_intermediate_size=256),
    "gpt_oss": dict(BASE, num_local_experts=8, num_experts_per_tok=2, head_dim=32, sliding_window=64),
    "olmo3": BASE,
    "seed_oss": BASE,
    "exaone4": BASE,
    "apertus": BASE,
    "granite": BASE,
    "smollm3": BASE,
    "glm4": dict(BASE, head_dim=32),
    "bitnet": dict(BASE, tie_word_embeddings=True),
    # types whose config classes leave a size unset (Nemotron's KV heads, Ministral's and Hunyuan's head_dim),
    # so their class defaults do not build: a checkpoint's config sets it
    "nemotron": BASE,
    "ministral": dict(BASE, head_dim=32, sliding_window=64, layer_types=["sliding_attention", "full_attention"]),
    "hunyuan_v1_dense": dict(BASE, head_dim=32),
    # hybrids: a Mamba-2 layer, then an attention layer (Bamba; Granite 4.0-H's type, with routed and shared
    # experts)
    "bamba": dict(BASE, attn_layer_indices=[1], mamba_n_heads=16, mamba_d_head=32, mamba_d_state=16,
                  mamba_n_groups=1, mamba_expand=2),
    "granitemoehybrid": dict(BASE, layer_types=["mamba", "attention"], mamba_n_heads=16, mamba_d_head=32,
                             mamba_d_state=16, mamba_n_groups=1, mamba_expand=2, num_local_experts=4,
                             num_experts_per_tok=2, shared_intermediate_size=256),
    # Falcon-H1 (attention and Mamba-2 side by side in every layer), LFM2 (short convolutions and attention)
    "falcon_h1": dict(BASE, mamba_n_heads=16, mamba_d_head=32, mamba_d_ssm=512, mamba_d_state=16, mamba_n_groups=1),
    "lfm2": dict(BASE, layer_types=["conv", "full_attention"]),
    # recurrent Gemma: two RG-LRU blocks, then local attention; it makes its cache inside its forward,
    # keeps the recurrent states in its modules, and returns no cache: the trace hands it one
    "recurrent_gemma": dict(hidden_size=256, num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=1,
                            head_dim=32, lru_width=256, attention_window_size=64, intermediate_size=768,
                            vocab_size=1000, block_types=["recurrent", "recurrent", "attention"], pad_token_id=0),
    # mixtures of experts in every layer
    "olmoe": dict(BASE, num_experts=4, num_experts_per_tok=2),
    "phimoe": dict(BASE, num_local_experts=4, num_experts_per_tok=2),
    # encoder-style models run as decoders: they look for padding tokens in the ids to warn of a missing mask
    "roformer": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512,
                     vocab_size=1000, pad_token_id=0, is_decoder=True),
    "megatron-bert": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512,
                          vocab_size=1000, pad_token_id=0, is_decoder=True),
    # two of the newest in transformers 5.24 (their modeling files are copyright 2026)
    "granite_swa": BASE,
    "flint": BASE,
    # Gemma 4 as its checkpoints write it: the multimodal type around a text config (per-layer inputs,
    # a wider full-attention layer); its masks search the position ids for packed sequences
    "gemma4": dict(text_config=dict(BASE, model_type="gemma4_text", head_dim=32, sliding_window=64,
                                    layer_types=["sliding_attention", "full_attention"],
                                    vocab_size_per_layer_input=1000, hidden_size_per_layer_input=16,
                                    per_layer_config={"01": {"head_dim": 64}}),
                   vision_config=None, audio_config=None),
    # vision-language models whose language part has no causal LM class: the image-text model decodes
    # text from token ids alone (Qwen2.5-VL with multimodal rotary sections; Qwen3-VL)
    "qwen2_5_vl": dict(text_config=dict(BASE, model_type="qwen2_5_vl_text", layer_types=["full_attention"] * 2,
                                        rope_parameters={"rope_type": "default", "rope_theta": 1e6,
                                                         "mrope_section": [4, 6, 6]}),
                       vision_config=dict(depth=1, hidden_size=64, intermediate_size=128, num_heads=2,
                                          out_hidden_size=256)),
    "qwen3_vl": dict(text_config=dict(BASE, model_type="qwen3_vl_text", head_dim=32,
                                      rope_parameters={"rope_type": "default", "rope_theta": 5e6,
                                                       "mrope_section": [4, 6, 6], "mrope_interleaved": True}),
                     vision_config=dict(depth=1, hidden_size=64, intermediate_size=128, num_heads=2,
                                        out_hidden_size=256, deepstack_visual_indexes=[])),
    # models that make their own all-ones padding mask (BioGPT; BART's decoder as a causal LM)
    "biogpt": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512,
                   vocab_size=1000, pad_token_id=0),
    # DBRX: its expert loop asks which experts the router chose (nonzero), so the trace runs its experts as
    # grouped matmuls; the oracle runs the loop on CPU tensors, with real routing
    "dbrx": dict(d_model=256, n_heads=8, n_layers=2, vocab_size=1000, max_seq_len=128, pad_token_id=0,
                 attn_config=dict(kv_n_heads=2, rope_theta=10000, clip_qkv=8),
                 ffn_config=dict(ffn_hidden_size=128, moe_num_experts=4, moe_top_k=2)),
    # JetMoE: experts in its attention (query and output projections) and its MLP; its router counts each
    # expert's tokens with tolist, so the trace runs each expert stack as one grouped matmul
    "jetmoe": dict(hidden_size=256, num_hidden_layers=2, num_key_value_heads=2, kv_channels=32, intermediate_size=256,
                   num_local_experts=4, num_experts_per_tok=2, vocab_size=1000, pad_token_id=0),
    # Blenderbot's causal LM sizes its own cache by its encoder's layers: the trace hands it one that grows
    "blenderbot": dict(d_model=256, encoder_layers=1, decoder_layers=2, decoder_attention_heads=8,
                       encoder_attention_heads=8, decoder_ffn_dim=512, encoder_ffn_dim=512, vocab_size=1000,
                       pad_token_id=0),
    "bart": dict(d_model=256, decoder_layers=2, decoder_attention_heads=8, decoder_ffn_dim=512, encoder_layers=2,
                 encoder_attention_heads=8, encoder_ffn_dim=512, vocab_size=1000, pad_token_id=0),
    # models whose code reads tensor values (XLM's and ProphetNet's asserts on their inputs): traced on the
    # CPU with random weights; XLM's decode step takes the whole sequence and runs the new position
    "xlm": dict(emb_dim=256, n_layers=2, n_heads=8, vocab_size=1000, causal=True),
    "prophetnet": dict(hidden_size=256, num_encoder_layers=1, num_decoder_layers=2, num_encoder_attention_heads=8,
                       num_decoder_attention_heads=8, encoder_ffn_dim=512, decoder_ffn_dim=512, vocab_size=1000,
                       ngram=2, pad_token_id=0),
}
POINTS = [(1, 9), (3, 5)]  # (batch, prompt); decode attends to prompt + 1 keys


def config(model_type: str) -> dict:
    return dict(TYPES[model_type], model_type=model_type)


# the oracle runs these on CPU tensors with random weights: their masks read the position ids' values, or
# their warnings the ids', which the meta device has not (eager attention, so the counter sees its matmuls)
ON_CPU = {"gemma4", "biogpt", "bart", "blenderbot", "roformer", "megatron-bert", "dbrx", "jetmoe", "xlm", "prophetnet"}
WHOLE = {"xlm"}


@pytest.fixture(scope="module", params=sorted(TYPES))
def traced(request):
    cfg = config(request.param)
    if request.param in ON_CPU:
        return cfg, build(cfg, dtype=torch.bfloat16, device="cpu", attn="eager")
    return cfg, build(cfg, dtype=torch.bfloat16)


def _check(doc: dict, counts, model) -> None:
    """Every leaf module the counter saw, and each attention core, equals the traced kernel's matmul FLOPs."""
    by_module: dict[str, int] = {}
    attention: dict[str, int] = {}
    for k in doc["kernels"]:
        mm = k["ideal"]["matmul_flops"]
        if k["function"] == "":
            by_module[k["module"]] = by_module.get(k["module"], 0) + mm
        elif k["function"] == "attention":
            attention[k["module"]] = attention.get(k["module"], 0) + mm
    leaves = {n for n, m in model.named_modules() if not any(True for _ in m.children())}
    # the counter names a module by the model class and its path: 'LlamaForCausalLM.model.layers.0.mlp'
    paths = {k.split(".", 1)[1]: v for k, v in counts.flops.items() if "." in k}
    checked = 0
    for path, flops in paths.items():
        if path in leaves and flops:
            assert by_module.get(path) == flops, path
            checked += 1
    for path, mm in by_module.items():  # a module the trace runs as one kernel (DBRX's experts), children included
        if path not in leaves and path in paths:
            assert mm == paths[path], path
            checked += 1
    for path, mm in attention.items():  # the counter credits the attention module with its children too
        # the outermost counted modules below it (JetMoE's expert stacks run without their parent's forward)
        below = [k for k in paths if k.startswith(path + ".")]
        children = sum(paths[k] for k in below if not any(k.startswith(o + ".") for o in below))
        assert mm == paths.get(path, 0) - children, path
        checked += 1
    assert checked >= 4


def _has_experts(cfg: dict) -> bool:
    return any(k in cfg for k in ("num_experts", "num_local_experts"))


@pytest.mark.parametrize("batch,prompt", POINTS)
def test_traced_kernels_equal_flop_counter(traced, batch, prompt):
    cfg, model = traced
    prefill_counts, decode_counts, _ = run(model, batch, prompt, all_logits=False,
                                           whole=cfg["model_type"] in WHOLE)
    for wl, counts in ((Workload.prefill(batch, prompt, weight_dtype=_bf16(), act_dtype=_bf16(), kv_dtype=_bf16()),
                        prefill_counts),
                       (Workload.decode(batch, prompt + 1, weight_dtype=_bf16(), act_dtype=_bf16(),
                                        kv_dtype=_bf16()), decode_counts)):
        doc = trace_raw(cfg, "t", wl)
        _check(doc, counts, model)
        total = sum(k["ideal"]["matmul_flops"] for k in doc["kernels"])
        if not _has_experts(cfg) or cfg["model_type"] in ON_CPU:  # on the CPU the counter sees the expert loop
            assert total == counts.flops["Global"]
        else:  # the grouped expert matmuls: 2·(tokens·k)·D·2F up and 2·(tokens·k)·F·D down, per MoE layer
            d, k = cfg["hidden_size"], cfg["num_experts_per_tok"]
            f = cfg.get("moe_intermediate_size") or cfg["intermediate_size"]
            rows = wl.tokens * k
            experts = cfg["num_hidden_layers"] * (2 * rows * d * 2 * f + 2 * rows * f * d)
            assert total == counts.flops["Global"] + experts


def _bf16():
    from roofcalc.calculator import DTYPES

    return DTYPES["bf16"]


def test_parameters_and_kv_cache_equal_the_real_model(traced):
    cfg, model = traced
    batch, prompt = 2, 6
    _, _, cache = run(model, batch, prompt, whole=cfg["model_type"] in WHOLE)
    doc = trace_raw(cfg, "t", Workload.decode(batch, prompt + 1, weight_dtype=_bf16(), act_dtype=_bf16(),
                                              kv_dtype=_bf16()))
    # a checkpoint's tensors: the parameters and the persistent buffers (DeepSeek-V3's score correction,
    # Apertus' xIELU constants), never rotary's inv_freq
    persistent = set(model.state_dict())
    buffers = sum(b.numel() for n, b in model.named_buffers() if n in persistent)
    assert doc["params"] == sum(p.numel() for p in model.parameters()) + buffers
    # run() returns the cache after its decode step too: prompt + 1 positions
    assert cache_bytes(cache) == batch * (prompt + 1) * doc["kv_bytes_per_token"]


def _reachable_tensors(x, seen=None):
    """Every tensor an object holds, through its attributes, dicts and lists (each once)."""
    seen = set() if seen is None else seen
    if isinstance(x, torch.Tensor):
        if id(x) not in seen:
            seen.add(id(x))
            yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _reachable_tensors(v, seen)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _reachable_tensors(v, seen)
    elif hasattr(x, "__dict__") and not isinstance(x, type):
        for v in vars(x).values():
            yield from _reachable_tensors(v, seen)


HYBRIDS = ("bamba", "granitemoehybrid")  # one Mamba-2 layer, then one attention layer


@pytest.mark.parametrize("model_type", sorted(HYBRIDS))
def test_a_hybrid_models_cache_holds_its_recurrent_states(model_type):
    """A Mamba-2 layer and an attention layer: the cache is the attention layer's keys and values (per
    token) and the Mamba layer's convolution and recurrent state (per sequence, any length); the traced
    memory holds every tensor the real cache holds, and only the keys and values grow with S."""
    cfg = config(model_type)
    model = build(cfg, dtype=torch.bfloat16)
    bf = _bf16()
    for prompt in (6, 11):
        out = model(input_ids=torch.zeros((2, prompt), dtype=torch.long, device="meta"), use_cache=True)
        # every tensor but a layer's position counter (transformers 5.25 keeps an int64 scalar,
        # cumulative_length_linear, on each linear-attention layer: bookkeeping, not the model's state)
        real = sum(t.numel() * t.element_size() for t in _reachable_tensors(out.past_key_values.layers)
                   if t.dim() > 0 or t.is_floating_point())
        doc = trace_raw(cfg, "b", Workload.prefill(2, prompt, weight_dtype=bf, act_dtype=bf, kv_dtype=bf))
        assert doc["cache_bytes"] == real
        # one attention layer, 2 KV heads of 32, K and V in bf16: 256 bytes a token
        assert doc["kv_bytes_per_token"] == 2 * 2 * 32 * 2
        states = real - 2 * prompt * doc["kv_bytes_per_token"]
        if prompt == 6:
            first = states
    assert states == first > 0  # the same states at both lengths


def test_gpt_oss_mxfp4_checkpoint_stores_its_experts_in_mxfp4():
    """gpt-oss checkpoints declare quant_method mxfp4: the experts' stacks in MXFP4 (4 bits a value and one
    byte of scale per 32), every other tensor (attention, router, biases, embeddings) in bf16. The small
    config's experts: 2 layers x 8 x (256 x 2·512 gate_up + 512 x 256 down) = 6,291,456 values, stored in
    6,291,456 x (1/2 + 1/32) = 3,342,336 bytes."""
    # as the checkpoints write it: legacy rotary keys, which transformers 5 reads into rope_parameters
    yarn = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
            "beta_slow": 1.0, "truncate": False}
    cfg = dict(config("gpt_oss"), quantization_config={"quant_method": "mxfp4"}, rope_theta=150000, rope_scaling=yarn)
    b = _bf16()
    shape = trace(cfg, "t", Workload.decode(1, 12, weight_dtype=b, act_dtype=b, kv_dtype=b), use_cache=False)
    assert shape.shape.weight_format == "mxfp4"
    assert shape.check.ignored == ()  # rope_theta and rope_scaling were read
    from roofcalc.calculator import DTYPES

    wl = Workload.decode(1, 12, weight_dtype=DTYPES["mxfp4"], act_dtype=b, kv_dtype=b)
    a = trace(cfg, "t", wl, use_cache=False)
    experts = 2 * 8 * (256 * 2 * 512 + 512 * 256)
    assert experts == 6_291_456
    assert a.weight_storage_bytes == (a.params - experts) * 2 + 3_342_336
    # q_proj 256 -> 8 heads x 32 and its bias, bf16 as the checkpoint keeps them
    assert a.kernel("self_attn.q_proj").cost.weight_bytes == (256 * 8 * 32 + 8 * 32) * 2
    # a model without experts has nothing MXFP4 stores
    with pytest.raises(RoofcalcError, match="runs no experts"):
        trace(config("cohere"), "t", wl, use_cache=False)


def test_a_bitnet_checkpoint_stores_ternary_weights_packed():
    """BitNet b1.58's checkpoints (quant_method bitnet, offline) pack each decoder linear's ternary weights four
    to a byte, with one bf16 scale per matrix (transformers' BitLinear); embeddings and norms stay bf16. The
    small config: 2 layers x (q, o 256·256 + k, v 256·64 + gate, up, down 256·512) = 1,114,112 values in
    278,528 bytes, + 2 x 7 scales of 2 bytes; the tied embedding 1000·256 and the norms (per layer input,
    post-attention and attention sub-norm of 256, the MLP sub-norm of 512; the final 256: 2,816) in bf16."""
    cfg = dict(config("bitnet"), quantization_config={"quant_method": "bitnet", "linear_class": "autobitlinear",
                                                      "quantization_mode": "offline"})
    from roofcalc.calculator import DTYPES
    from roofcalc.trace import traced_shape

    shape, (use, name, label) = traced_shape(cfg, "b")
    assert shape.weight_format == "ternary"
    b = _bf16()
    a = trace(use, name, Workload.decode(1, 12, weight_dtype=DTYPES["ternary"], act_dtype=b, kv_dtype=b), label,
              use_cache=False)
    assert a.weight_storage_bytes == 278_528 + 2 * 7 * 2 + 1000 * 256 * 2 + 2_816 * 2
    assert a.workload.compute_dtype.name == "bf16"  # unpacked for a bf16 GEMM


def test_gpt_oss_20b_as_published():
    """openai/gpt-oss-20b's config.json (tests/configs; the model card, arXiv:2508.10925, gives 20.9B
    parameters). By hand, a layer: q 2880 x 4096 + 4096 bias, k and v 2880 x 512 + 512 each, o 4096 x
    2880 + 2880, 64 sinks (26,550,144); two norms (5,760); the router 2880 x 32 + 32 (92,192); the experts'
    gate_up 32 x 2880 x 5760 and down 32 x 2880 x 2880 with their biases (796,538,880): 823,186,976, x 24 =
    19,756,487,424; the embedding and lm_head 201,088 x 2880 each and the final norm: 20,914,757,184. Its
    MXFP4 experts' 24 x 796,262,400 values take 17/32 byte each (10,152,345,600 bytes), the other
    1,804,459,584 parameters two: 13,761,264,768 bytes of weights. Attention: 8 KV heads x 64, K and V,
    in 24 layers, bf16: 49,152 bytes a token."""
    from pathlib import Path

    from roofcalc.calculator import DTYPES

    cfg = json.loads((Path(__file__).parent / "configs" / "gpt-oss-20b.json").read_text())
    b = _bf16()
    a = trace(cfg, "gpt-oss-20b", Workload.decode(1, 64, weight_dtype=DTYPES["mxfp4"], act_dtype=b, kv_dtype=b),
              use_cache=False)
    assert a.params == 24 * 823_186_976 + 2 * 201_088 * 2880 + 2880 == 20_914_757_184
    assert round(a.params / 1e8) == 209  # the model card's 20.9B
    assert a.weight_storage_bytes == 10_152_345_600 + 2 * 1_804_459_584 == 13_761_264_768
    assert a.kv_bytes_per_token == 24 * 2 * 8 * 64 * 2 == 49_152
    assert a.shape.weight_format == "mxfp4" and a.check.ignored == ("experts_per_token", "initial_context_length")


def test_dbrx_instruct_as_published():
    """databricks/dbrx-instruct's config.json (tests/configs; its model card: 132B total parameters, 36B
    active). By hand, a layer: norm 6144; Wqkv 6144 x (6144 + 2 x 8 x 128); out_proj 6144 x 6144; norm
    6144; router 6144 x 16; w1, v1 and w2 of 16 experts x 10752 x 6144 (3,170,893,824): 3,259,084,800, x 40
    = 130,363,392,000; wte and lm_head 100,352 x 6144 each, norm_f 6144: 131,596,523,520. At decode batch
    1 the step reads 4 of the 16 experts (top-4): a quarter of their bytes."""
    from pathlib import Path

    cfg = json.loads((Path(__file__).parent / "configs" / "dbrx-instruct.json").read_text())
    b = _bf16()
    a = trace(cfg, "dbrx", Workload.decode(1, 64, weight_dtype=b, act_dtype=b, kv_dtype=b), view="ideal",
              use_cache=False)
    assert a.params == 40 * 3_259_084_800 + 2 * 100_352 * 6144 + 6144 == 131_596_523_520
    assert round(a.params / 1e9) == 132
    experts = a.kernel("ffn.experts.mlp")
    assert experts.count == 40 and experts.cost.weight_bytes == 3 * 16 * 10752 * 6144 * 2 // 4


def test_experts_read_the_experts_their_tokens_reach():
    """qwen2_moe at decode batch 1: top-2 of 8 experts, so a quarter of each expert weight is read
    (1,048,576 bytes of bf16 gate_up for 8 experts of [2·128, 256] -> 262,144)."""
    a = trace(config("qwen2_moe"), "t", Workload.decode(1, 12), view="ideal", use_cache=False)
    up = a.kernel("mlp.experts.grouped_mm_experts_forward")
    assert up.cost.weight_bytes == 8 * 2 * 128 * 256 * 2 // 4


def test_experts_per_token_are_read_under_every_name_a_config_class_gives_them():
    """Hunyuan-A13B writes its top-k as a list of one a layer (moe_topk, which its config class maps
    num_experts_per_tok to), Aria's text config as moe_topk, Gemma 4's as top_k_experts: a decode step of batch 1
    reads the k experts its token reaches, not every expert (the trace had read all 64 of Hunyuan-A13B's, 6.3x its
    weights a step). Hunyuan's experts here: 4 of width 512 (BASE's intermediate_size, as the test of its
    ignored keys above says), top 2, fp32: gate_up 4·2·512·256·4 bytes, half of it read."""
    from types import SimpleNamespace

    from roofcalc.calculator import DTYPES
    from roofcalc.trace.step import experts_per_token

    hunyuan = dict(BASE, model_type="hunyuan_v1_moe", head_dim=32, num_experts=4, moe_topk=[2, 2])
    a = trace(hunyuan, "h", Workload.decode(1, 12, weight_dtype=DTYPES["fp32"], act_dtype=DTYPES["fp32"],
                                            kv_dtype=DTYPES["fp32"]), view="ideal", use_cache=False)
    up = next(k for k in a.kernels if k.expert_weights is not None)
    assert up.cost.weight_bytes == 4 * 2 * 512 * 256 * 4 // 2
    assert experts_per_token(SimpleNamespace(moe_topk=2)) == 2  # Aria's text config
    assert experts_per_token(SimpleNamespace(top_k_experts=8)) == 8  # Gemma 4's
    assert experts_per_token(SimpleNamespace(num_experts_per_tok=[8, 8, 4])) is None  # layers that differ
    assert experts_per_token(SimpleNamespace(ffn_config=SimpleNamespace(moe_top_k=4))) == 4  # DBRX's


# fp32 mixtures of experts: the grouped-matmul kernel takes bf16 only, so their experts run as transformers'
# per-expert fallback loop. Qwen3-MoE and Mixtral run transformers' grouped_mm experts; DBRX the trace's own
# substitute loop (which calls the same dispatcher)
FP32_MOE = {
    "qwen3_moe": dict(BASE, head_dim=32, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=128),
    "mixtral": dict(BASE, num_local_experts=8, num_experts_per_tok=2),
    "dbrx": TYPES["dbrx"],
}


@pytest.mark.parametrize("model_type", sorted(FP32_MOE))
def test_a_mixture_of_experts_traces_in_fp32(model_type):
    """In fp32 the experts run transformers' per-expert loop (grouped_mm_fallback; the meta device refuses
    the grouped kernel's fp32): the matmul FLOPs equal FlopCounterMode's on the real model run in fp32 on CPU
    tensors, its experts as their eager loop; the parameters equal its. The bf16 trace runs the grouped kernel,
    with the same FLOPs; its expert kernels launch one op per matmul where the fp32 loop launches one mm per
    expert reached: prefill of 3 x 9 = 27 tokens, top-2 of 8 experts, 8·(1 − (6/8)^27) = 7.99 -> 8 experts,
    so 8 − 1 = 7 launches more per expert matmul (DBRX's 4 experts: 4·(1 − (2/4)^27) -> 4, so 3 more)."""
    from roofcalc.calculator import DTYPES

    cfg = dict(FP32_MOE[model_type], model_type=model_type)
    fp32, bf16 = DTYPES["fp32"], _bf16()
    model = build(cfg, dtype=torch.float32, device="cpu", attn="eager", eager_experts=True)
    prefill_counts, decode_counts, _ = run(model, 3, 9, all_logits=False)
    for wl, counts in ((Workload.prefill(3, 9, weight_dtype=fp32, act_dtype=fp32, kv_dtype=fp32), prefill_counts),
                       (Workload.decode(3, 10, weight_dtype=fp32, act_dtype=fp32, kv_dtype=fp32), decode_counts)):
        doc = trace_raw(cfg, "t", wl)
        assert doc.get("device") is None  # on the meta device
        assert sum(k["ideal"]["matmul_flops"] for k in doc["kernels"]) == counts.flops["Global"]
    assert doc["params"] == sum(p.numel() for p in model.parameters())
    prefill = Workload.prefill(3, 9, weight_dtype=fp32, act_dtype=fp32, kv_dtype=fp32)
    wide, half = {}, {}
    for into, w in ((wide, prefill), (half, Workload.prefill(3, 9, weight_dtype=bf16, act_dtype=bf16, kv_dtype=bf16))):
        for k in trace_raw(cfg, "t", w)["kernels"]:  # each module's first expert kernel: the gate/up matmul, which
            if k["experts"]:  # in bf16 has no cast the fp32 run lacks (the down matmul's casts the sum back)
                into.setdefault((k["module"], k["function"]), k)
    assert wide and sorted(wide) == sorted(half)
    for key, k in wide.items():  # the same FLOPs; one launch more per expert reached less the one grouped op
        stacks = len(k["experts"][2])  # the expert weight stacks it multiplies (DBRX's one kernel holds 3)
        assert k["ideal"]["matmul_flops"] == half[key]["ideal"]["matmul_flops"]
        assert k["launches"] - half[key]["launches"] == (3 if model_type == "dbrx" else 7) * stacks, key


def test_ideal_view_equals_the_hand_model_where_both_count_the_same_kernel():
    """Llama traced: every projection and the MLP, norms, KV write and attention core move the hand
    model's bytes exactly; rotary differs (docs/conventions.md: the trace reads cos and sin per head group).
    The ideal view writes the new positions in place, as the hand model's in-place cache does."""
    cfg = dict(BASE, model_type="llama")
    wl = Workload.decode(2, 17, cache_update="in-place", eager_ops=False)  # the ideal view's fused kernels
    hand = analyze(shape_from_config(cfg, "t"), wl)
    tr = trace(cfg, "t", wl, view="ideal", use_cache=False)
    pairs = {"self_attn.q_proj": "q_proj", "self_attn.k_proj": "k_proj", "self_attn.v_proj": "v_proj",
             "self_attn.o_proj": "o_proj", "mlp.gate_proj": "gate_proj", "mlp.up_proj": "up_proj",
             "mlp.down_proj": "down_proj", "input_layernorm": "input_layernorm", "norm": "norm", "lm_head": "lm_head",
             "self_attn.kv_cache_update": "kv_cache_write"}
    for traced_name, hand_name in pairs.items():
        t, h = tr.kernel(traced_name), hand.kernel(hand_name)
        assert (t.cost.bytes, t.cost.matmul_flops, t.count) == (h.cost.bytes, h.cost.matmul_flops, h.count), traced_name
    att = tr.kernel("self_attn.attention").cost
    assert (att.kv_read_bytes, att.matmul_flops) == (hand.kernel("attention").cost.kv_read_bytes,
                                                      hand.kernel("attention").cost.matmul_flops)
    assert tr.params == hand.params and tr.kv_bytes_per_token == hand.kv_bytes_per_token
    assert tr.totals.matmul_flops == hand.totals.matmul_flops


def test_a_cache_update_of_views_of_one_storage_counts_k_and_v():
    """GPT-2 splits K and V out of its fused c_attn output, views of one storage: the ideal view's update still
    reads and writes both: 2 sequences x (K and V) x 8 heads x 32 x 2 bytes (fp16) = 2,048 read and 2,048 written a
    layer, as the hand model does."""
    cfg = dict(model_type="gpt2", n_embd=256, n_head=8, n_layer=2, n_inner=1024, vocab_size=1024, n_positions=128)
    wl = Workload.decode(2, 17, cache_update="in-place", eager_ops=False)
    tr = trace(cfg, "t", wl, view="ideal", use_cache=False)
    hand = analyze(shape_from_config(cfg, "t"), wl)
    t, h = tr.kernel("attn.kv_cache_update").cost, hand.kernel("kv_cache_write").cost
    assert (t.act_read_bytes, t.kv_write_bytes) == (h.act_read_bytes, h.kv_write_bytes) == (2 * 2 * 8 * 32 * 2,) * 2


def test_eager_view_counts_the_cache_copy_and_launches_from_the_ops():
    """transformers' DynamicCache concatenates: the eager update reads the old cache and writes the new
    one, 2 layers x K and V x (16 old + 17 new positions) x 2 heads x 32 x 2 bytes per sequence."""
    cfg = dict(BASE, model_type="llama")
    a = trace(cfg, "t", Workload.decode(1, 17), view="eager", use_cache=False)
    upd = a.kernel("self_attn.kv_cache_update")
    assert upd.cost.kv_read_bytes == 2 * 16 * 2 * 32 * 2 and upd.cost.kv_write_bytes == 2 * 17 * 2 * 32 * 2
    assert upd.launches == 2  # cat K, cat V
    assert a.kernel("input_layernorm").launches == 8  # the hand table's RMSNorm in 16-bit (roofline.py)


def test_the_command_line_traces_a_type_without_a_hand_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config("starcoder2")))
    assert main([str(path), "--format", "json", "--impl", "fused"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["source"] == "traced" and doc["model"]["bytes_view"] == "ideal"
    assert any(k["name"] == "self_attn.attention" and k["kind"] == "attention" for k in doc["kernels"])
    assert list((tmp_path / "cache" / "traces").glob("*.json"))  # cached for the next run
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "source    traced: transformers" in out and "eager view" in out


def test_an_attention_called_straight_from_a_forward_is_named_attention():
    """Falcon calls scaled_dot_product_attention in its attention's forward, not through transformers'
    attention functions: its row is an attention kernel named for its module, not for the first op the
    meta device runs it as (it was `self_attention.scalar_tensor`), and the FLOPs are the same ops' FLOPs:
    QK^T and PV at 8 heads x 32 wide over 17 positions, 2 x 2 x 8 x 17 x 32 = 17,408 a layer, plus the
    softmax's elementwise work the trace counts beside them."""
    a = trace(config("falcon"), "f", Workload.decode(1, 17), use_cache=False)
    names = [k.name for k in a.kernels]
    assert "self_attention.attention" in names and not any("scalar_tensor" in n for n in names)
    att = a.kernel("self_attention.attention")
    assert att.kind == "attention" and att.cost.matmul_flops == 2 * 2 * 8 * 17 * 32


def test_refusals_are_one_line(tmp_path, capsys):
    remote = tmp_path / "remote.json"
    remote.write_text(json.dumps(dict(BASE, model_type="internlm2")))
    assert main([str(remote)]) == 2
    err = capsys.readouterr().err
    assert "remote code" in err and "--family llama" in err and err.count("\n") == 1
    # ChatGLM's remote-code config (THUDM/glm-4-9b-chat's keys) names its sizes so that no hand family reads
    # them: no family is suggested
    remote.write_text(json.dumps(dict(model_type="chatglm", num_layers=2, hidden_size=256, ffn_hidden_size=512,
                                      kv_channels=32, num_attention_heads=8, multi_query_group_num=2,
                                      padded_vocab_size=1000)))
    assert main([str(remote)]) == 2
    err = capsys.readouterr().err
    assert "no hand-modelled family" in err and "--family" not in err and err.count("\n") == 1
    flat = tmp_path / "flat.json"  # a text config flattened under a multimodal type: llava reads no hidden_size
    flat.write_text(json.dumps(dict(BASE, model_type="llava")))
    assert main([str(flat)]) == 2
    err = capsys.readouterr().err
    assert "does not read" in err and "hidden_size" in err
    awq = tmp_path / "awq.json"  # a 4-bit checkpoint: its layers' weights in int4, traced in its float dtype
    awq.write_text(json.dumps(dict(config("cohere"), quantization_config={"quant_method": "awq", "bits": 4,
                                                                           "group_size": 128})))
    assert main([str(awq)]) == 0
    assert "bytes of weights (int4, group 128" in capsys.readouterr().out
    assert main([str(awq), "--dtype", "fp16"]) == 0  # traced as fp16, as asked, the checkpoint's int4 said
    assert "bytes of weights (fp16; the checkpoint's quantization_config declares int4, which this workload does " \
           "not count" in " ".join(capsys.readouterr().out.split())
    assert main([str(awq), "--weight-dtype", "fp8", "--hw", "h100"]) == 2  # unscaled fp8 weights would need fp8
    assert "a traced model runs in fp32, bf16 or fp16" in capsys.readouterr().err  # activations
    assert main([str(awq), "--weight-dtype", "fp8"]) == 2  # on the T4, which has no fp8 GEMMs: the scaled formats
    assert "--weight-dtype fp8-t" in capsys.readouterr().err
    deep = tmp_path / "deep.json"  # a vision tower is built too: its depth is bounded like the layers
    deep.write_text(json.dumps(dict(TYPES["qwen2_5_vl"], model_type="qwen2_5_vl",
                                    vision_config=dict(TYPES["qwen2_5_vl"]["vision_config"], depth=100_000))))
    assert main([str(deep)]) == 2
    err = capsys.readouterr().err
    assert "vision_config: 'depth' must be a positive integer of at most 512" in err and err.count("\n") == 1
    with pytest.raises(RoofcalcError, match="one dtype"):
        trace(config("cohere"), "t", Workload.decode(1, 8, weight_dtype=_bf16()))
    zero = tmp_path / "zero.json"  # LongCat-Flash: how many experts compute depends on the router's values
    zero.write_text(json.dumps(dict(model_type="longcat_flash", hidden_size=256, num_layers=1, num_attention_heads=8,
                                    vocab_size=1000, n_routed_experts=4, zero_expert_num=2, moe_topk=2,
                                    expert_ffn_hidden_size=128, ffn_hidden_size=512)))
    assert main([str(zero)]) == 2
    err = capsys.readouterr().err
    assert "2 zero-computation experts" in err and err.count("\n") == 1


def test_a_model_whose_code_reads_values_is_traced_on_the_cpu(tmp_path, capsys, monkeypatch):
    """XLM asserts on its inputs' values (``lengths.max().item()``), which the meta device has not: it runs on
    the CPU with random weights. Its layers are entries of four lists (attentions, layer_norm1, ffns,
    layer_norm2) with one GELU module shared by every ffn, and its residual adds run in the module that holds
    the lists: each is one kernel per layer, counted once per layer."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "xlm.json"
    path.write_text(json.dumps(config("xlm")))
    assert main([str(path), "--format", "json", "--context", "9"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "on the CPU with random weights" in doc["model"]["traced"]
    counts = {k["name"]: k["count"] for k in doc["kernels"]}
    # 2 layers: one row each for their projections, their shared GELU and their two residual adds (the
    # embeddings' add, before the first layer, costs the same as a residual's and joins its row: 2 + 1)
    assert counts["attentions.q_lin"] == counts["ffns.lin1"] == counts["ffns.act"] == counts["layer_norm2"] == 2
    assert counts["transformer.add"] == 3 and counts["transformer.add#2"] == 2
    # too much work to run on the CPU instead: one line that says what to change
    monkeypatch.setattr("roofcalc.trace.step.CPU_TRACE_FLOPS", 1e3)
    assert main([str(path), "--context", "10"]) == 2
    err = capsys.readouterr().err
    assert "did not run on the meta device" in err and "--context" in err and err.count("\n") == 1


def test_attention_on_the_cpu_counts_its_matmuls(monkeypatch):
    """On real CPU tensors scaled_dot_product_attention runs one fused op (_scaled_dot_product_flash_attention_for_cpu)
    that torch's FLOP counter does not count, so a step traced on the CPU had attention at 0 FLOPs. Forced onto the
    CPU, a tiny llama (8 query heads of 32, 2 KV heads) counts QKᵀ and PV as the meta trace does:
    2·B·H·Tq·Tk·(Dq + Dv) = 2·2·8·1·9·64 = 18,432 for a decode step at B = 2 over 9 positions, 2·2·8·7·7·64 =
    100,352 for a prefill of 2 x 7."""
    import roofcalc.trace.step as step

    cfg = dict(BASE, model_type="llama")
    own = step._trace_on

    def on_cpu(cfg, name, wl, read, device, routed=False):
        if device == "meta":
            raise step._NotOnMeta("forced off the meta device", 10**6, 10**5)
        return own(cfg, name, wl, read, device, routed)

    for wl, flops in ((Workload.decode(2, 9), 18_432), (Workload.prefill(2, 7), 100_352)):
        meta = trace(cfg, "t", wl, use_cache=False, merge=False)
        monkeypatch.setattr(step, "_trace_on", on_cpu)
        cpu = trace(cfg, "t", wl, use_cache=False, merge=False)
        monkeypatch.setattr(step, "_trace_on", own)
        assert "on the CPU" in cpu.note
        for a in (meta, cpu):
            assert [k.cost.matmul_flops for k in a.kernels if k.name.startswith("self_attn.attention[")] == [flops] * 2


def test_a_model_that_mixes_float32_into_bf16_is_told_to_run_in_fp32(tmp_path, capsys, monkeypatch):
    """XLNet's relative positions are float32 beside bf16 activations: refused in one line naming --dtype fp32,
    and in fp32 (on the CPU: it reads values) its forward pass has the real model's matmul FLOPs and
    parameters (FlopCounterMode on the model run the same way; XLNet keeps no KV cache, so no decode)."""
    from roofcalc.calculator import DTYPES

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cfg = dict(model_type="xlnet", d_model=256, n_layer=2, n_head=8, d_inner=512, vocab_size=1000)
    path = tmp_path / "xlnet.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--dtype", "bf16"]) == 2
    err = capsys.readouterr().err
    assert "expected scalar type" in err and "try --dtype fp32" in err and err.count("\n") == 1
    fp32 = DTYPES["fp32"]
    doc = trace_raw(cfg, "x", Workload.prefill(2, 7, weight_dtype=fp32, act_dtype=fp32, kv_dtype=fp32))
    assert doc["device"] == "cpu"
    model = build(cfg, dtype=torch.float32, device="cpu", attn="eager")
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        model(input_ids=torch.zeros((2, 7), dtype=torch.long), logits_to_keep=1)
    assert sum(k["ideal"]["matmul_flops"] for k in doc["kernels"]) == fc.get_total_flops()
    assert doc["params"] == sum(p.numel() for p in model.parameters())


def test_a_model_without_a_kv_cache_runs_a_forward_pass_unless_a_decode_is_asked_for(tmp_path, capsys):
    """BERT keeps no KV cache, so it has no decode step: asked for nothing in particular, the command shows
    a forward pass over the default context's 500 tokens, and says so; asked for a decode (--context), it
    refuses in one line. The forward pass is what a direct prefill trace of 500 tokens gives."""
    path = tmp_path / "bert.json"
    cfg = dict(model_type="bert", hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512,
               vocab_size=1000)
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["workload"]["phase"] == "prefill" and doc["workload"]["prompt"] == 500
    direct = trace(cfg, "t", Workload.prefill(1, 500), view="eager", use_cache=False)
    assert doc["totals"]["flops"] == direct.totals.flops
    assert main([str(path)]) == 0
    assert "a forward pass over 500 tokens (the default context) instead of a decode step" in unwrap(capsys.readouterr().out)
    assert main([str(path), "--context", "100"]) == 2
    err = capsys.readouterr().err
    assert "keeps no KV cache" in err and err.count("\n") == 1


def test_a_flattened_text_config_that_the_class_reads_is_traced(tmp_path, capsys):
    """Qwen2.5-VL's checkpoints write the text sizes at the top of config.json (beside vision_config), and
    its config class moves them into its text config: the trace reads them, the model is the config's (its
    parameters the real model's, vision tower included), not the class's default."""
    from roofcalc.trace import traced_shape

    flat = dict(BASE, model_type="qwen2_5_vl", rope_scaling={"type": "mrope", "mrope_section": [4, 6, 6]},
                rope_theta=1e6, vision_config=dict(depth=1, hidden_size=64, intermediate_size=128, num_heads=2,
                                                   out_hidden_size=256))
    shape, (use, name, label) = traced_shape(flat, "q")
    assert (shape.d_model, shape.n_layers, shape.n_kv_heads, shape.vocab_size) == (256, 2, 2, 1000)
    real = build(flat, dtype=torch.bfloat16)
    doc = trace_raw(use, name, Workload.decode(2, 7, weight_dtype=_bf16(), act_dtype=_bf16(), kv_dtype=_bf16()))
    assert doc["params"] == sum(p.numel() for p in real.parameters())
    assert "rope_theta" not in doc["ignored"]  # moved into the text config's rope_parameters
    path = tmp_path / "config.json"
    path.write_text(json.dumps(flat))
    assert main([str(path), "--batch", "2"]) == 0
    assert "L=2 layers, D=256" in capsys.readouterr().out


def test_a_multimodal_configs_top_level_dtype_and_legacy_rope_keys_are_read(tmp_path):
    """Gemma 3's checkpoints write torch_dtype only at the top, beside a text_config whose rope_scaling
    transformers 5 reads into each kind of layer's rope_parameters: the language model traces in the
    checkpoint's dtype, and nothing is listed as ignored."""
    from roofcalc.trace import traced_shape

    cfg = dict(model_type="gemma3", torch_dtype="bfloat16",
               text_config=dict(BASE, model_type="gemma3_text", head_dim=32, sliding_window=64,
                                rope_scaling={"factor": 8.0, "rope_type": "linear"}),
               vision_config=dict(model_type="siglip_vision_model", hidden_size=64, intermediate_size=128,
                                  num_attention_heads=2, num_hidden_layers=1, image_size=28, patch_size=14))
    shape, (use, name, _) = traced_shape(cfg, "g")
    assert shape.config_dtype == "bf16"
    doc = trace_raw(use, name, Workload.decode(1, 5, weight_dtype=_bf16(), act_dtype=_bf16(), kv_dtype=_bf16()))
    assert doc["ignored"] == []
    # Qwen3-VL's checkpoints write their dtype only in the text_config, and the whole model is traced
    qwen3_vl = config("qwen3_vl")
    qwen3_vl["text_config"] = dict(qwen3_vl["text_config"], dtype="bfloat16")
    assert traced_shape(qwen3_vl, "q")[0].config_dtype == "bf16"
    assert traced_shape(config("qwen3_vl"), "q")[0].config_dtype is None  # none written: none read


# --------------------------------------------------------------------------- the hand models checked by their trace

def _short(cfg: dict, layers: int = 4) -> dict:
    """A catalog config cut to its first ``layers`` layers (every per-layer kernel keeps its real shape)."""
    cfg = {k: v for k, v in cfg.items() if k != "quantization_config"}
    key = "num_hidden_layers" if "num_hidden_layers" in cfg else "n_layer"
    cfg[key] = min(cfg[key], layers)
    return cfg


def _catalog():
    from roofcalc.sources import catalog

    return catalog()


@pytest.mark.parametrize("entry", _catalog(), ids=lambda e: e.hub_id)
def test_every_catalog_model_counts_the_same_by_hand_and_by_trace(entry):
    """Matmul FLOPs (decode and prefill), parameters and KV bytes per token agree exactly. The trace runs
    the real mask, whose dense attention computes every (query, key) pair: the hand model's full rectangle."""
    from dataclasses import replace

    cfg = _short(entry.config)
    b = _bf16()
    shape = shape_from_config(cfg, "t")
    for wl in (Workload.decode(2, 33, weight_dtype=b, act_dtype=b, kv_dtype=b),
               Workload.prefill(2, 16, weight_dtype=b, act_dtype=b, kv_dtype=b)):
        hand = analyze(shape, replace(wl, causal=False))
        traced = trace(cfg, "t", wl, view="eager", use_cache=False)
        assert traced.totals.matmul_flops == hand.totals.matmul_flops, wl.phase
        assert traced.params == hand.params
        assert traced.kv_bytes_per_token == hand.kv_bytes_per_token
    # ideal bytes of every weight matmul. Aside: the experts (the trace runs them as grouped matmuls) and
    # the routers (transformers 5's router module also runs the softmax and top-k, whose outputs it writes)
    wl = Workload.decode(2, 33, weight_dtype=b, act_dtype=b, kv_dtype=b)
    hand, traced = analyze(shape, wl), trace(cfg, "t", wl, view="ideal", use_cache=False)
    totals: dict[str, list[int]] = {}
    for k in hand.kernels:
        if k.kind == "matmul" and k.role == "linear":
            totals.setdefault(k.name, [0, 0])[0] += k.count * k.cost.bytes
    for k in traced.kernels:
        base = k.name.split("[")[0]
        hits = [name for name in totals if base == name or base.endswith("." + name)]
        if hits:  # the most specific hand name: shared_experts.gate_proj before gate_proj
            totals[max(hits, key=len)][1] += k.count * k.cost.bytes
    mismatched = {n: v for n, v in totals.items() if v[0] != v[1]}
    assert not mismatched and len(totals) >= 3, mismatched


SAME_LAUNCHES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi", "phi3", "gpt2", "gpt_neox", "opt",
                 "mixtral", "qwen3_moe", "deepseek_v2", "deepseek_v3")


@pytest.mark.parametrize("model_type", SAME_LAUNCHES)
def test_eager_launches_per_layer_equal_the_hand_tables(model_type):
    """The hf-eager launch table (roofline.py, counted on real layers in tests/test_oracle.py) equals the
    traced ops of a decoder layer, for every catalog family."""
    from roofcalc.roofline import launches

    entry = next(e for e in _catalog() if e.config["model_type"] == model_type)
    cfg, b = _short(entry.config), _bf16()
    wl = Workload.decode(1, 33, weight_dtype=b, act_dtype=b, kv_dtype=b)
    hand = analyze(shape_from_config(cfg, "t"), wl)
    traced = trace(cfg, "t", wl, view="eager", use_cache=False)
    per_layer = sum(launches(k, "hf-eager", "bf16", hand.shape) * k.count for k in hand.kernels if k.scope == "layer")
    assert sum(k.launches * k.count for k in traced.kernels if k.scope == "layer") == per_layer


EAGER_BYTES_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gpt2", "gpt_neox", "opt")


@pytest.mark.parametrize("model_type", EAGER_BYTES_FAMILIES)
def test_eager_bytes_of_norms_rotary_and_activation_equal_the_traced_ops(model_type):
    """Under hf-eager the hand model's norms, rotary and activation move the bytes transformers' eager ops move:
    the traced eager view (each real op's inputs read and output written) is the oracle. A prefill of 2 x 16 in
    bf16; within 2 %: the RMSNorm's per-row mean and rsqrt (one value a row) and Gemma's ops on its weight are
    left out of the hand count. (A partial rotary's cat back to the passed dims, Phi's and Phi-3's, is traced
    outside apply_rotary_pos_emb; the experts' activation and DeepSeek's latent rope are not compared.)"""
    entry = next(e for e in _catalog() if e.config["model_type"] == model_type)
    cfg, b = _short(entry.config), _bf16()
    wl = Workload.prefill(2, 16, weight_dtype=b, act_dtype=b, kv_dtype=b, eager_ops=True)
    hand = analyze(shape_from_config(cfg, "t"), wl)
    traced = trace(cfg, "t", wl, view="eager", use_cache=False)

    def traced_role(name: str) -> str | None:
        if "rotary_pos_emb" in name:
            return "rotary"
        if "norm" in name or name.split(".")[-1].startswith("ln"):
            return "norm"
        last = name.split(".")[-1].split("#")[0]
        if last in ("act", "act_fn", "activation_fn") or name.split("#")[0] == "mlp.mul":  # not the other muls
            return "act"
        return None

    hand_role = {"rms_norm": "norm", "layer_norm": "norm", "rotary": "rotary", "act_mul": "act", "act": "act"}
    got: dict[str, list[int]] = {}
    for k in hand.kernels:
        if k.role in hand_role:
            got.setdefault(hand_role[k.role], [0, 0])[0] += k.count * k.cost.bytes
    for k in traced.kernels:
        role = traced_role(k.name)
        if role in got:
            got[role][1] += k.count * k.cost.bytes
    assert {"norm", "act"} <= set(got)
    for role, (h, t) in got.items():
        assert t > 0 and abs(h / t - 1) < 0.02, (role, h, t)


# --------------------------------------------------------------------------- sweeps of a traced model

def _sweep(model_type: str, **kw):
    from roofcalc.hardware import find_hardware
    from roofcalc.sweep import sweep
    from roofcalc.trace import analyzer, traced_shape

    cfg = config(model_type)
    shape, (use, name, label) = traced_shape(cfg, "t")
    an = analyzer(use, name, label, view="ideal")
    return sweep(shape, find_hardware("A100"), impl="fused", analyzer=an, **kw), an


def test_a_traced_decode_sweep_is_exact_at_every_point():
    """The grid is fitted from four probe traces; every point equals a direct trace of that step."""
    from roofcalc.roofline import place

    sw, an = _sweep("cohere", batches=[1, 3, 8], contexts=[5, 17, 40])
    g = sw.grid
    for i, b in enumerate(g.batches):
        for j, s in enumerate(g.contexts):
            direct = trace(config("cohere"), "t", Workload.decode(int(b), int(s)), view="ideal", use_cache=False)
            assert int(g.flops[i, j]) == direct.totals.flops and int(g.bytes[i, j]) == direct.totals.bytes
            assert int(g.memory_bytes[i, j]) == direct.memory_bytes
            st = place(direct, sw.roof, impl="fused", model=sw.model).times
            assert g.predicted_s[i, j] == pytest.approx(st.predicted_s, rel=1e-12)
    assert sw.verdicts and sw.verdicts[0].kv_over_weights_batch is not None



def test_a_traced_step_that_runs_other_ops_at_batch_1_is_swept_one_batch_at_a_time(tmp_path, capsys, monkeypatch):
    """llama4_text's router scores are a transposed view at batch 1 and a copy from batch 2 (a ``clone``
    transformers' eager program runs from batch 2 on), so no fit across batches holds: the grid is fitted one
    batch at a time, every point equal to a direct trace of its step (the sweep used to stop on an
    AssertionError), and the command line prints it."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import place
    from roofcalc.sweep import sweep
    from roofcalc.trace import analyzer, traced_shape

    cfg = dict(BASE, num_local_experts=4, num_experts_per_tok=1, intermediate_size_mlp=512, head_dim=32,
               model_type="llama4_text")
    shape, (use, name, label) = traced_shape(cfg, "t")
    an = analyzer(use, name, label, view="eager")
    one, two = ([k.name for k in an(Workload.decode(b, 5)).kernels] for b in (1, 2))
    assert [k for k in two if k not in one] == ["feed_forward.clone[0]", "feed_forward.clone[1]"]
    sw = sweep(shape, find_hardware("A100"), impl="hf-eager", analyzer=an, batches=[1, 3, 8], contexts=[5, 17, 40])
    g = sw.grid
    assert list(g.batches) == [1, 3, 8] and g.predicted_s.shape == (3, 3)
    for i, b in enumerate(g.batches):
        for j, s in enumerate(g.contexts):
            direct = trace(cfg, "t", Workload.decode(int(b), int(s)), view="eager", use_cache=False)
            assert int(g.flops[i, j]) == direct.totals.flops and int(g.bytes[i, j]) == direct.totals.bytes
            assert int(g.memory_bytes[i, j]) == direct.memory_bytes
            st = place(direct, sw.roof, impl="hf-eager", model=sw.model).times
            assert g.predicted_s[i, j] == pytest.approx(st.predicted_s, rel=1e-12)
            assert g.predicted_upper_s[i, j] == pytest.approx(st.predicted_upper_s, rel=1e-12)
    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--batch", "1,2", "--context", "5,17", "--impl", "hf-eager"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    # its experts run as one dense batched matmul, no routed expert to split: refused in one line (it was a
    # StopIteration traceback under --ep-attention tp)
    assert main([str(path), "--batch", "2", "--context", "5", "--ep", "2", "--ep-attention", "tp"]) == 2
    err = capsys.readouterr().err
    assert "runs none" in err and err.count("\n") == 1, err


def test_llama4s_experts_run_every_token_in_the_eager_view_and_the_routed_ones_in_the_ideal(tmp_path, capsys,
                                                                                              monkeypatch):
    """transformers' Llama4TextMoe runs every token through every expert (one dense batched matmul a stack), what
    the eager view counts; a fused MoE (the ideal view: --impl fused or cuda-graph, a serving engine) runs each
    token through the k its router picked. llama4_text with D = 256, E = 4 experts of I = 512, k = 1, decode at
    B = 2 (T = 2 tokens), by hand, per layer: eager 2·(E·T)·D·2I + 2·(E·T)·I·D = 4,194,304 + 2,097,152 matmul
    FLOPs and every expert's weights, 4·(256·1,024 + 512·256)·2 = 3,145,728 bytes; ideal 2·(k·T)·D·2I +
    2·(k·T)·I·D = 1,048,576 + 524,288 and the experts two tokens reach, E·(1 − (1 − k/E)^T) = 1.75 of 4
    (calculator.touched_experts), 3,145,728 · 1.75 / 4 = 1,376,256 bytes. The rest of the step is the same
    program in both views."""
    cfg = dict(BASE, num_local_experts=4, num_experts_per_tok=1, intermediate_size_mlp=512, head_dim=32,
               model_type="llama4_text")
    wl = Workload.decode(2, 5)
    steps = {view: trace(cfg, "t", wl, view=view, use_cache=False, merge=False) for view in ("eager", "ideal")}

    for layer in range(2):
        for view, flops, nbytes in (("eager", 4_194_304 + 2_097_152, 3_145_728),
                                    ("ideal", 1_048_576 + 524_288, 1_376_256)):
            costs = [k.cost for k in steps[view].kernels
                     if k.name.startswith("feed_forward.experts.") and k.name.endswith(f"[{layer}]")]
            assert sum(c.matmul_flops for c in costs) == flops, view
            assert sum(c.weight_bytes for c in costs) == nbytes, view
    rest = [sum(c.matmul_flops for c in (k.cost for k in steps[v].kernels if "experts" not in k.name or
                                         "shared_expert" in k.name)) for v in ("eager", "ideal")]
    assert rest[0] == rest[1] > 0
    assert steps["eager"].traced_params == steps["ideal"].traced_params
    assert "experts as a fused MoE runs them" in steps["ideal"].note
    assert "experts as transformers' eager code runs them" in steps["eager"].note
    # routed experts split over ranks: --ep with tensor-parallel attention runs (the dense program is refused)
    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--batch", "2", "--context", "5", "--ep", "2", "--ep-attention", "tp",
                 "--impl", "fused"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_llama4s_routed_program_computes_transformers_own_function():
    """The routed program the ideal view traces for Llama-4 (patches._llama4_routed) is the same function as
    transformers' dense one: on the CPU with random weights, k = 2 of E = 4 experts, 3 sequences of 7 tokens,
    the logits agree to float32 rounding (the unpicked experts' rows are scaled by zero in the dense program),
    and the substitute ran."""
    import torch
    import transformers

    from roofcalc.trace.patches import _routed_experts

    cfg = transformers.Llama4TextConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, intermediate_size=96, intermediate_size_mlp=128,
                                        vocab_size=100, pad_token_id=0, head_dim=16, num_local_experts=4,
                                        num_experts_per_tok=2)
    torch.manual_seed(0)
    model = transformers.Llama4ForCausalLM(cfg).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    ids = torch.randint(1, 100, (3, 7))
    moe = type(model.model.layers[0].feed_forward)
    dense_forward = moe.forward
    with torch.no_grad():
        dense = model(ids).logits
        undo, found = _routed_experts(torch, model)
        try:
            assert found and moe.forward is not dense_forward
            routed = model(ids).logits
        finally:
            undo()
    assert moe.forward is dense_forward
    assert dense.abs().max() > 0.1
    torch.testing.assert_close(routed, dense, rtol=1e-5, atol=1e-5)


LLAMA4 = dict(BASE, num_local_experts=4, num_experts_per_tok=1, intermediate_size_mlp=512, head_dim=32,
              model_type="llama4_text")


def test_llama4s_dense_experts_take_a_quantized_format_in_the_eager_view_too():
    """fp8 weights in 128 x 128 blocks (a scale of 4 bytes each) on the tiny llama4_text: transformers' dense
    program reads each expert stack whole, at its stored bytes, gate_up [4, 256, 1,024]: 4 x (256 x 1,024 + 2 x 8
    x 4) = 1,048,832 bytes and down [4, 512, 256]: 4 x (512 x 256 + 4 x 2 x 4) = 524,416 (it read them at 16 bits,
    and a Llama-4's weights came out twice too heavy under --impl hf-eager); the checkpoint's bytes are the same
    in both views."""
    from roofcalc.calculator import DTYPES

    b = DTYPES["bf16"]
    wl = Workload.decode(2, 5, weight_dtype=DTYPES["fp8-b128"], act_dtype=b, kv_dtype=b)
    eager, ideal = (trace(LLAMA4, "t", wl, view=v, use_cache=False, merge=False) for v in ("eager", "ideal"))
    stacks = sorted(k.cost.weight_bytes for k in eager.kernels
                    if k.name.startswith("feed_forward.experts.") and k.name.endswith("[0]") and k.cost.weight_bytes)
    assert stacks == [524_416, 1_048_832]
    assert eager.traced_param_bytes == ideal.traced_param_bytes


def test_the_trace_cache_keeps_each_experts_rule_apart(tmp_path, monkeypatch):
    """--experts expected | all | topk changes the expert weights a traced step reads (here the routed program
    of the tiny llama4_text at batch 2: 4, 2 and 1 ... of 4 experts' stacks: all 4, the top k = 1, and
    E·(1 − (1 − k/E)^2) = 1.75 expected); each rule is cached apart (the second rule asked used to read the
    first one's cache), and the routed program is traced only once the ideal view asks for it."""
    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path))
    stack = 4 * (256 * 1024 + 512 * 256) * 2  # both stacks of a layer, bf16

    def experts_bytes(mode: str, view: str = "ideal", cache: bool = True) -> int:
        a = trace(LLAMA4, "t", Workload.decode(2, 5, experts=mode), view=view, use_cache=cache, merge=False)
        return sum(k.cost.weight_bytes for k in a.kernels if k.name.startswith("feed_forward.experts.")
                   and k.name.endswith("[0]"))

    trace(LLAMA4, "t", Workload.decode(2, 5), view="eager")
    docs = [json.loads(p.read_text()) for p in (tmp_path / "traces").glob("*.json")]
    assert len(docs) == 1 and docs[0]["dense_experts"] and "routed" not in docs[0]
    for mode, share in (("all", 1.0), ("topk", 0.25), ("expected", 1.75 / 4)):
        assert experts_bytes(mode) == experts_bytes(mode, cache=False) == round(stack * share)
    docs = [json.loads(p.read_text()) for p in (tmp_path / "traces").glob("*.json")]
    assert len(docs) == 3 and all("routed" in d for d in docs)


def test_a_transformers_whose_llama4_classes_differ_refuses_llama4_alone(monkeypatch):
    """The routed program replaces Llama4Router, Llama4TextExperts and Llama4TextMoe; a transformers whose
    modeling_llama4 lacks one of them (here: substitutes that ask for a class it has not) refuses a Llama-4's
    ideal view in one line, and every other model's trace never touches them (it used to fail every trace)."""
    from roofcalc.trace import patches

    monkeypatch.setitem(patches._DENSE_EXPERTS, "llama4",
                        ("modeling_llama4", lambda torch, module: {module.Llama4RenamedRouter: None}))
    assert trace(dict(BASE, model_type="llama"), "t", Workload.decode(1, 5), use_cache=False).totals.flops > 0
    with pytest.raises(RoofcalcError, match="not what roofcalc's routed program"):
        trace(LLAMA4, "t", Workload.decode(1, 5), view="ideal", use_cache=False)


def test_a_model_whose_experts_do_not_run_dense_takes_no_routed_program(monkeypatch):
    """The routed program stands in only where the traced step really multiplies every token by an expert weight
    stack (a bmm over a weight: Llama-4's Llama4TextExperts): were transformers to run a model named in
    patches._DENSE_EXPERTS through its routed experts, nothing would be substituted. Here llama's own modeling
    file, named so, has no such matmul: its document claims no dense experts and its views carry no such note."""
    from roofcalc.trace import patches

    monkeypatch.setitem(patches._DENSE_EXPERTS, "llama", ("modeling_llama", lambda torch, module: {}))
    cfg = dict(BASE, model_type="llama")
    assert "dense_experts" not in trace_raw(cfg, "t", Workload.decode(1, 5))
    assert "experts" not in trace(cfg, "t", Workload.decode(1, 5), view="ideal", use_cache=False).note
    assert "dense_experts" in trace_raw(LLAMA4, "t", Workload.decode(1, 5))


def test_a_chunked_attention_is_swept_on_one_side_of_its_chunk(tmp_path, capsys, monkeypatch):
    """llama4_text's chunked layers attend within chunks of attention_chunk_size (16 here): the trace gives
    their attention its sizes up to the chunk's end and none past it. A single context at the chunk's last
    position is fitted on probes below it, every batch equal to a direct trace; a sweep across it is refused
    in one line (it used to print an AttributeError traceback)."""
    from roofcalc.hardware import find_hardware
    from roofcalc.roofline import place
    from roofcalc.sweep import sweep
    from roofcalc.trace import analyzer, traced_shape

    cfg = dict(BASE, num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=1, intermediate_size_mlp=512,
               head_dim=32, attention_chunk_size=16, model_type="llama4_text")
    shape, (use, name, label) = traced_shape(cfg, "t")
    an = analyzer(use, name, label, view="ideal")
    sw = sweep(shape, find_hardware("A100"), impl="fused", analyzer=an, batches=[1, 2, 8], contexts=[16])
    for i, b in enumerate(sw.grid.batches):
        direct = trace(cfg, "t", Workload.decode(int(b), 16), view="ideal", use_cache=False)
        assert int(sw.grid.flops[i, 0]) == direct.totals.flops and int(sw.grid.bytes[i, 0]) == direct.totals.bytes
        st = place(direct, sw.roof, impl="fused", model=sw.model).times
        assert sw.grid.predicted_s[i, 0] == pytest.approx(st.predicted_s, rel=1e-12)
    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    for flags in (["--context", "16,40"], ["--prompt", "15", "--generate", "4"]):
        assert main([str(path), "--batch", "1,2", *flags, "--impl", "fused"]) == 2
        err = capsys.readouterr().err
        assert "changes between contexts 16 and 17" in err and err.count("\n") == 1, err

def test_traced_prefill_and_request_sweeps_trace_their_points():
    sw, _ = _sweep("olmo2", batches=[1, 2], prompts=[4, 9])
    direct = trace(config("olmo2"), "t", Workload.prefill(2, 9), view="ideal", use_cache=False)
    assert int(sw.grid.flops[1, 1]) == direct.totals.flops
    req, _ = _sweep("olmo2", batches=[1, 2], prompts=[4, 9], generate=3)
    assert req.kind == "request" and req.grid.decode_s.shape == (2, 2)


def test_a_traced_sweep_across_a_change_of_program_is_refused(tmp_path, capsys, monkeypatch):
    """gemma3_text's window (64 here) inside the context range: the costs stop being bilinear there,
    and the check against direct traces refuses the sweep rather than interpolate it."""
    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config("gemma3_text")))
    assert main([str(path), "--batch", "1,2", "--context", "16..256"]) == 2
    err = capsys.readouterr().err
    assert "not bilinear" in err and err.count("\n") == 1


def test_a_traced_moe_sweep_reads_the_experts_each_batch_reaches():
    """qwen2_moe: the grid's expert weights follow E·(1 − (1 − k/E)^B) per batch, as a direct trace
    reads them, at every point."""
    sw, _ = _sweep("qwen2_moe", batches=[1, 2, 5, 64], contexts=[8, 30])
    g = sw.grid
    for i, b in enumerate(g.batches):
        for j, s in enumerate(g.contexts):
            direct = trace(config("qwen2_moe"), "t", Workload.decode(int(b), int(s)), view="ideal", use_cache=False)
            assert int(g.weight_bytes[i, j]) == direct.totals.weight_bytes, (b, s)
            assert int(g.bytes[i, j]) == direct.totals.bytes and int(g.flops[i, j]) == direct.totals.flops


@pytest.mark.parametrize("hub_id,weights", [
    (h, w) for h in ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "Qwen/Qwen2.5-7B", "mistralai/Mixtral-8x7B-v0.1")
    for w in ("int4", "int8", "fp8-b128")] + [("mistralai/Mixtral-8x7B-v0.1", "mxfp4"),
                                             ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "fp8-ch"),
                                             ("mistralai/Mixtral-8x7B-v0.1", "fp8-t")])
def test_quantized_weights_count_the_same_by_hand_and_by_trace(hub_id, weights):
    """A checkpoint whose decoder layers' weights are int4 / int8 (an fp16 scale per 128 inputs) or fp8
    (an fp32 scale per 128 x 128 block, per output row or per matrix), or whose experts are MXFP4 (a byte of scale per 32): the trace
    runs in the activation dtype and stores each layer's weight matrices (the experts' stacks too) as the
    hand model does, embeddings, norms and routers in the float dtype. Every weight's bytes in memory,
    and each linear's bytes read, agree."""
    from dataclasses import replace

    from roofcalc.calculator import DTYPES

    entry = next(e for e in _catalog() if e.hub_id == hub_id)
    cfg, b = _short(entry.config), _bf16()
    wl = Workload.decode(2, 33, weight_dtype=DTYPES[weights], act_dtype=b, kv_dtype=b)
    hand, traced = analyze(shape_from_config(cfg, "t"), wl), trace(cfg, "t", wl, use_cache=False)
    assert traced.weight_storage_bytes == hand.weight_storage_bytes
    assert traced.totals.matmul_flops == analyze(shape_from_config(cfg, "t"), replace(wl, causal=False)).totals.matmul_flops
    totals: dict[str, list[int]] = {}
    for k in hand.kernels:
        if k.kind == "matmul" and k.role == "linear" and k.scope == "layer":
            totals.setdefault(k.name, [0, 0])[0] += k.count * k.cost.weight_bytes
    for k in traced.kernels:
        base = k.name.split("[")[0]
        hits = [name for name in totals if base == name or base.endswith("." + name)]
        if hits:
            totals[max(hits, key=len)][1] += k.count * k.cost.weight_bytes
    assert all(v[0] == v[1] for v in totals.values()) and len(totals) >= 3, totals
    for batch in (1, 2, 64):  # the experts' weights a batch reaches, read off the stacks' quantized bytes
        wl = replace(wl, batch=batch)
        hand, traced = analyze(shape_from_config(cfg, "t"), wl), trace(cfg, "t", wl, use_cache=False)
        assert sum(k.count * k.cost.weight_bytes for k in traced.kernels if k.expert_weights) == \
            sum(k.count * k.cost.weight_bytes for k in hand.kernels if k.role == "experts")


@pytest.mark.parametrize("hub_id,gguf", [("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "q4_0"),
                                         ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "q8_0"), ("google/gemma-2b", "q4_0"),
                                         ("openai-community/gpt2", "q4_0")])
def test_a_gguf_files_tables_count_the_same_by_hand_and_by_trace(hub_id, gguf):
    """A GGUF file's embedding and output tables as llama.cpp's quantizer writes them (calculator.gguf_table):
    the trace re-stores the embedding's gather and lm_head's GEMM as the hand model does, an untied and a tied
    table (Gemma's) alike, and GPT-2's tied table, which llama.cpp's converter writes twice; the weights in memory
    and each table's bytes read agree, and differ from 16-bit tables."""
    from roofcalc.calculator import DTYPES, GGUF_FILE_TYPES

    entry = next(e for e in _catalog() if e.hub_id == hub_id)
    cfg, f16 = _short(entry.config), DTYPES["fp16"]
    fmt, group = GGUF_FILE_TYPES[gguf]
    wl = Workload.decode(2, 33, weight_dtype=DTYPES[fmt], act_dtype=f16, kv_dtype=f16, group_size=group, gguf=gguf)
    hand, traced = analyze(shape_from_config(cfg, "t"), wl), trace(cfg, "t", wl, use_cache=False)
    assert traced.weight_storage_bytes == hand.weight_storage_bytes
    plain = trace(cfg, "t", Workload.decode(2, 33, weight_dtype=DTYPES[fmt], act_dtype=f16, kv_dtype=f16,
                                            group_size=group), use_cache=False)
    assert plain.weight_storage_bytes > traced.weight_storage_bytes
    for name in (hand.shape.name_of("embed"), hand.shape.name_of("lm_head")):  # (GPT-2's wte)
        def read(a):
            return sum(k.count * k.cost.weight_bytes for k in a.kernels if k.name.split("[")[0].endswith(name))
        assert read(hand) == read(traced) < read(plain), name


# --------------------------------------------------------------------------- configs as checkpoints write them

def _longrope(head_dim: int) -> dict:
    """A longrope rotary as Phi-3.5 and Phi-4-mini checkpoints write it: a factor per rotated frequency, and
    an original context of 8 positions, so a step past it takes the long factors."""
    return {"type": "longrope", "short_factor": [1.0] * (head_dim // 2), "long_factor": [2.0] * (head_dim // 2)}


READS_POSITIONS = {
    # dynamic (NTK) scaling grows its frequencies past max_position_embeddings (16 here)
    "cohere": dict(BASE, rope_scaling={"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=16),
    # Phi-3.5-mini / Phi-4-mini: a hand-modelled family, traced with --trace (transformers' longrope picks its
    # factors without reading a value, as a regression check)
    "phi3": dict(BASE, rope_scaling=_longrope(32), original_max_position_embeddings=8, max_position_embeddings=64),
    # Phi-3.5-MoE: its rotary also picks its scale by the step's last position
    "phimoe": dict(BASE, num_local_experts=4, num_experts_per_tok=2, head_dim=32, original_max_position_embeddings=8,
                   max_position_embeddings=64, rope_scaling=dict(_longrope(32), short_mscale=1.2, long_mscale=1.3)),
}


@pytest.mark.parametrize("model_type", sorted(READS_POSITIONS))
@pytest.mark.parametrize("prompt", [5, 20])  # decode before and past the original 8 (16) positions
def test_a_rotary_that_reads_its_positions_traces(model_type, prompt):
    """Dynamic and Phi-3.5-MoE's longrope rotaries read the step's last position (a meta tensor holds none): the
    trace runs them on the real positions. Oracle: the model on CPU tensors under FlopCounterMode, experts as
    their eager loop."""
    cfg = dict(READS_POSITIONS[model_type], model_type=model_type)
    model = build(cfg, dtype=torch.bfloat16, device="cpu", attn="eager", eager_experts=True)
    prefill_counts, decode_counts, cache = run(model, 2, prompt, all_logits=False)
    b = _bf16()
    for wl, counts in ((Workload.prefill(2, prompt, weight_dtype=b, act_dtype=b, kv_dtype=b), prefill_counts),
                       (Workload.decode(2, prompt + 1, weight_dtype=b, act_dtype=b, kv_dtype=b), decode_counts)):
        doc = trace_raw(cfg, "t", wl)
        _check(doc, counts, model)
        assert sum(k["ideal"]["matmul_flops"] for k in doc["kernels"]) == counts.flops["Global"]
    assert doc["params"] == sum(p.numel() for p in model.parameters())
    assert cache_bytes(cache) == 2 * (prompt + 1) * doc["kv_bytes_per_token"]
    if model_type == "phi3":  # and the hand model counts the same
        wl = Workload.decode(2, prompt + 1, weight_dtype=b, act_dtype=b, kv_dtype=b)
        assert trace(cfg, "t", wl, use_cache=False).totals.matmul_flops == \
            analyze(shape_from_config(cfg, "t"), wl).totals.matmul_flops


def test_a_legacy_size_name_beside_the_one_the_class_reads(tmp_path, capsys):
    """Mamba checkpoints write n_layer beside num_hidden_layers, LFM2's num_heads beside num_attention_heads: a
    size the class reads under another name at the same value (in every layer, for a per-layer list) is not a
    lost dimension; at another value it is."""
    from roofcalc.trace import hf_config

    mamba = dict(model_type="mamba", hidden_size=256, state_size=8, num_hidden_layers=3, n_layer=3, vocab_size=1000)
    _, check = hf_config(mamba, "m")
    assert "n_layer" not in check.ignored
    with pytest.raises(RoofcalcError, match="does not read n_layer"):
        hf_config(dict(mamba, n_layer=64), "m")
    lfm2 = dict(TYPES["lfm2"], model_type="lfm2", num_heads=8)
    assert "num_heads" not in hf_config(lfm2, "l")[1].ignored
    # Hunyuan-A13B writes its experts' width per layer as moe_intermediate_size, which transformers does not
    # read: it sizes them by intermediate_size (512 in BASE)
    hunyuan = dict(BASE, model_type="hunyuan_v1_moe", head_dim=32, num_experts=4, moe_topk=[2, 2])
    assert "moe_intermediate_size" not in hf_config(dict(hunyuan, moe_intermediate_size=[512, 512]), "h")[1].ignored
    with pytest.raises(RoofcalcError, match="does not read moe_intermediate_size"):
        hf_config(dict(hunyuan, moe_intermediate_size=[256, 256]), "h")


# Gemma 4 as its checkpoints write it, trimmed (written by hand from the published config.json's keys, not
# downloaded): sliding layers of 8 KV heads x 256, full-attention layers of 2 x 512 (global_head_dim,
# num_global_key_value_heads, keys sharing their values: attention_k_eq_v)
GEMMA4 = dict(model_type="gemma4", vision_config=None, audio_config=None,
              text_config=dict(model_type="gemma4_text", hidden_size=256, num_hidden_layers=3, num_attention_heads=8,
                               num_key_value_heads=8, head_dim=256, global_head_dim=512, num_global_key_value_heads=2,
                               attention_k_eq_v=True, intermediate_size=512, vocab_size=1000, sliding_window=64,
                               layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                               vocab_size_per_layer_input=1000, hidden_size_per_layer_input=16))
# Nemotron-H (nvidia/Nemotron-H-8B-Base-8K's keys, trimmed, by hand): its layers are written as a pattern,
# M Mamba-2, - an MLP, * attention, which its config class turns into layers_block_type
NEMOTRON_H = dict(model_type="nemotron_h", architectures=["NemotronHForCausalLM"], hybrid_override_pattern="M-*-",
                  hidden_size=256, intermediate_size=512, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                  mamba_num_heads=8, mamba_head_dim=64, ssm_state_size=16, n_groups=1, conv_kernel=4, expand=2,
                  chunk_size=64, mlp_hidden_act="relu2", vocab_size=1000, residual_in_fp32=False)


def test_a_header_gives_each_kind_of_layers_heads(tmp_path, capsys):
    """Gemma 4's layers differ in KV heads and head size: the header prints each kind's, as the real model's
    attention modules have them (built from the config on the meta device: K = k_proj's outputs / head size),
    not the hidden size over the heads (256 / 8 = 32); and the keys its class consumes in __post_init__ are
    not listed as ignored."""
    from roofcalc.trace import traced_shape

    model = build(GEMMA4["text_config"], dtype=torch.bfloat16)
    real = []
    for layer in model.model.layers:
        attn = layer.self_attn
        real.append((attn.q_proj.out_features // attn.head_dim, attn.k_proj.out_features // attn.head_dim,
                     attn.head_dim))
    assert real == [(8, 8, 256), (8, 8, 256), (8, 2, 512)]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA4))
    assert main([str(path)]) == 0
    out = unwrap(capsys.readouterr().out)
    assert "N=8 heads / K=8 KV heads x H=256 (2 sliding layers), 2 x 512 (1 full layer)," in out
    assert "ignored" not in out
    _, (use, _, _) = traced_shape(GEMMA4, "g")
    from roofcalc.trace import hf_config

    assert hf_config(use, "g")[1].ignored == ()
    # a model whose layers are alike keeps the one heads text
    gemma3 = config("gemma3_text")
    a = trace(gemma3, "t", Workload.decode(1, 8), use_cache=False)
    assert a.layer_heads == () and a.heads_text == ""


def test_a_key_the_config_class_consumes_is_not_called_ignored(tmp_path, capsys):
    """Nemotron-H's hybrid_override_pattern is popped by its class's __post_init__ into layers_block_type (and
    read back as a property): the class reads it, as its 4 layers show, so no note calls it ignored; a key
    that no code reads still is."""
    from roofcalc.trace import hf_config

    config_obj, check = hf_config(NEMOTRON_H, "n")
    assert config_obj.layers_block_type == ["linear_attention", "mlp", "full_attention", "mlp"]  # transformers 5 names
    assert "hybrid_override_pattern" not in check.ignored
    assert "made_up_key" in hf_config(dict(NEMOTRON_H, made_up_key=1), "n")[1].ignored
    path = tmp_path / "config.json"
    path.write_text(json.dumps(NEMOTRON_H))
    assert main([str(path), "--prompt", "8"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert "shape     L=4 layers," in out and "ignored" not in out


def test_a_multimodal_models_parameters_include_its_encoders(capsys):
    """Devstral-Small-2 (mistral3) is traced through its text config, and its vision encoder and projector
    are counted beside it: the parameters are the language model's plus those of the real transformers
    classes built on the meta device from its vision_config (PixtralVisionModel) and the projector
    (Mistral3MultiModalProjector), and its weight bytes add theirs in bf16 (its quantization_config keeps
    them out of FP8). The projector by hand: RMSNorm 1,024 + patch merger 4·1,024 x 1,024 + 1,024 x 5,120 +
    5,120 x 5,120 = 1,024 + 4,194,304 + 5,242,880 + 26,214,400 = 35,652,608."""
    from transformers.models.mistral3.modeling_mistral3 import Mistral3MultiModalProjector

    from roofcalc.calculator import DTYPES
    from roofcalc.trace import hf_config, traced_shape

    path = PUBLISHED / "mistralai--Devstral-Small-2-24B-Instruct-2512.json"
    cfg = json.loads(path.read_text())
    whole, _ = hf_config(cfg, "d")
    with torch.device("meta"):
        tower = sum(p.numel() for p in transformers.AutoModel.from_config(whole.vision_config).parameters())
        projector = sum(p.numel() for p in Mistral3MultiModalProjector(whole).parameters())
    assert projector == 1024 + 4 * 1024 * 1024 + 1024 * 5120 + 5120 * 5120 == 35_652_608
    _, (use, name, label) = traced_shape(cfg, "d")
    b = DTYPES["bf16"]
    text = trace(use, name, Workload.decode(1, 8, weight_dtype=b, act_dtype=b, kv_dtype=b), label, use_cache=False)
    language = text.language_params
    model = build({k: v for k, v in use.items() if not k.startswith("_")}, dtype=torch.bfloat16)
    assert language == sum(p.numel() for p in model.parameters())  # the text model the trace ran
    assert text.params == language + tower + projector == 24_011_361_280  # the card's 24B
    assert text.weight_storage_bytes == language * 2 + (tower + projector) * 2
    assert "its encoders counted on transformers' Mistral3Model" in text.note
    fp8 = trace(use, name, Workload.decode(1, 8, weight_dtype=DTYPES["fp8-t"], act_dtype=b, kv_dtype=b), label,
                use_cache=False)
    text_fp8 = trace({k: v for k, v in use.items() if not k.startswith("_")}, name,
                     Workload.decode(1, 8, weight_dtype=DTYPES["fp8-t"], act_dtype=b, kv_dtype=b), label,
                     use_cache=False)
    assert fp8.weight_storage_bytes == text_fp8.weight_storage_bytes + (tower + projector) * 2
    assert main([str(path), "--hw", "H100"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert "size      24,011,361,280 parameters (23,572,403,200 of them the language model)" in out


def test_a_hand_modelled_multimodal_models_parameters_include_its_encoders(tmp_path, monkeypatch, capsys):
    """LLaVA-1.5-7B's language model is the hand-modelled Llama; its CLIP tower and projector are counted beside
    it, so the total is what transformers' whole LlavaForConditionalGeneration holds (built on the meta device:
    the oracle), the card's 7B. The projector by hand: 1,024 x 4,096 + 4,096 + 4,096 x 4,096 + 4,096 =
    20,979,712. Weight bytes: the encoders at 2 bytes in fp16 beside the language model's. A second run reads
    the count from the cache; without torch the size line says the encoders are not counted."""
    from roofcalc.sources import load_shape

    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "cache"))
    path = PUBLISHED / "llava-hf--llava-1.5-7b-hf.json"
    from roofcalc.trace import hf_config

    whole, _ = hf_config(json.loads(path.read_text()), "l")
    with torch.device("meta"):
        model = transformers.LlavaForConditionalGeneration(whole)
    real = sum(p.numel() for p in model.parameters())  # (parameters() yields a tied weight once)
    projector = sum(p.numel() for p in model.model.multi_modal_projector.parameters())
    assert projector == 1024 * 4096 + 4096 + 4096 * 4096 + 4096 == 20_979_712
    step = analyze(load_shape(str(path)), Workload.decode())
    language = sum(k.params * k.count for k in step.kernels)
    assert step.language_params == language == 6_738_939_904
    assert step.params == real == 7_063_427_072
    assert step.weight_storage_bytes == sum(k.param_bytes * k.count for k in step.kernels) + 2 * (real - language)
    assert list((tmp_path / "cache" / "encoders").glob("*.json"))  # kept: the next run builds nothing
    assert main([str(path)]) == 0
    assert "size      7,063,427,072 parameters (6,738,939,904 of them the language model; its encoders counted " \
        "on transformers' LlavaModel, built on the meta device), 14,126,854,144 bytes" in unwrap(capsys.readouterr().out)
    import importlib.util

    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "empty"))
    spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "torch" else spec(n, *a))
    assert main([str(path)]) == 0
    assert "size      6,738,939,904 parameters (its encoders are not counted: counting them builds the model on " \
        "PyTorch's meta device; torch not installed here (pip install '.[torch]' in roofcalc's checkout)), 13,477,879,808 bytes" \
        in unwrap(capsys.readouterr().out)


def test_a_causal_lm_built_from_a_whole_multimodal_config_counts_its_encoders(capsys):
    """Llama-3.2-11B-Vision (mllama) is traced through MllamaForCausalLM, which holds the text model alone: its
    vision tower and projector are counted beside it, so the total is what transformers' whole
    MllamaForConditionalGeneration holds on the meta device (the oracle; the card's 10.6B)."""
    from roofcalc.trace import hf_config

    path = PUBLISHED / "meta-llama--Llama-3.2-11B-Vision-Instruct.json"
    whole, _ = hf_config(json.loads(path.read_text()), "m")
    with torch.device("meta"):
        real = sum(p.numel() for p in transformers.MllamaForConditionalGeneration(whole).parameters())
        text = sum(p.numel() for p in transformers.MllamaForCausalLM(whole).parameters())
    assert main([str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["params"] == real and doc["model"]["language_model_params"] == text


def test_a_state_space_models_header_says_recurrent_state_not_kv_cache(tmp_path, capsys):
    """Mamba keeps a convolution and an SSM state per sequence and no keys or values: the header says so, and
    its memory line counts that state per sequence, not a KV cache over positions; a hybrid's (Bamba's) both; a
    sweep's memory verdict names what it holds.
    The small Mamba at batch 3: 2 layers x (a conv state of 2·256 channels x 4 in fp16 + an SSM state of 512 x 8,
    which transformers keeps in fp32) = 2 x 3 x (2,048 x 2 + 4,096 x 4) = 122,880 bytes, as the real cache holds."""
    mamba = tmp_path / "mamba.json"
    mamba.write_text(json.dumps(dict(model_type="mamba", hidden_size=256, state_size=8, num_hidden_layers=2,
                                     vocab_size=1000, conv_kernel=4, expand=2, pad_token_id=0)))
    assert main([str(mamba), "--batch", "3", "--dtype", "fp16"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert "no attention (a recurrent state per sequence instead of a KV cache)" in out
    assert "123 kB of recurrent state (3 sequences)" in out and "concatenation" not in out
    assert main([str(mamba), "--batch", "3", "--dtype", "fp16", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"]["recurrent_state_bytes"] == 2 * 3 * (2_048 * 2 + 4_096 * 4)
    # its reference kernels run inside a hub-kernel decorator's "wrapped": named by the function it wraps
    assert "mixer.causal_conv1d_update" in out and "wrapped" not in out
    bamba = tmp_path / "bamba.json"
    bamba.write_text(json.dumps(config("bamba")))
    assert main([str(bamba), "--batch", "1", "--context", "100", "--dtype", "bf16", "--hw", "A100"]) == 0
    out = unwrap(capsys.readouterr().out)
    # its one attention layer: 2 KV heads of 32, K and V in bf16, 100 positions = 25,600 bytes
    assert "25.6 kB of KV cache (1 x 100 positions) + " in out and "of recurrent state (1 sequence)" in out
    # a sliding window holds fewer positions than the context: its KV cache is what the cache holds, no state
    gemma = tmp_path / "gemma3.json"
    gemma.write_text(json.dumps(config("gemma3_text")))  # 2 layers, one sliding (64), K=2 x H=32
    assert main([str(gemma), "--context", "200", "--dtype", "bf16", "--hw", "A100"]) == 0
    out = unwrap(capsys.readouterr().out)
    # both layers slide; transformers' sliding-window cache keeps window - 1 = 63 positions a layer, of K and V
    # x 2 heads x 32 x 2 bytes = 256 bytes: 2 x 63 x 256 = 32,256 bytes, not 200 positions' 102,400
    assert "32.3 kB of KV cache (1 x 200 positions; a sliding window of 64 caps what its layers hold) = " in out
    assert "recurrent state" not in out
    # a pipeline stage holds every micro-batch's states (its trace one micro-batch's): Bamba at --pp 2, batch 8 in 2
    # micro-batches, holds the same state as in one, and the memory line and the JSON say so
    stage = {}
    for micro in ("2", "1"):
        assert main([str(bamba), "--pp", "2", "--batch", "8", "--micro-batches", micro, "--context", "100", "--dtype",
                     "bf16", "--hw", "A100", "--format", "json"]) == 0
        stage[micro] = json.loads(capsys.readouterr().out)["step"]["recurrent_state_bytes"]
    assert stage["2"] == stage["1"] > 0
    # a sweep's largest batch that fits counts the states too, and says so (Mamba's alone, Bamba's beside its cache)
    for path, held in ((mamba, "(weights + recurrent state, nothing else)"),
                       (bamba, "(weights + KV cache + recurrent state, nothing else)")):
        assert main([str(path), "--batch", "1,2", "--context", "100", "--hw", "A100"]) == 0
        assert held in unwrap(capsys.readouterr().out), path


PUBLISHED = Path(__file__).parent.parent / "benchmarks" / "configs" / "published"
# published configs that a session found failing (each fixed by a rule the tests above check on small configs)
ONCE_FAILING = ("LiquidAI--LFM2-1.2B", "state-spaces--mamba-2.8b-hf", "microsoft--Phi-3.5-MoE-instruct",
                "llava-hf--llava-1.5-7b-hf", "meta-llama--Llama-3.1-405B-Instruct-FP8", "microsoft--bitnet-b1.58-2B-4T",
                "tencent--Hunyuan-A13B-Instruct", "Qwen--Qwen3-VL-8B-Instruct")


@pytest.mark.parametrize("name", sorted(p.stem for p in PUBLISHED.glob("*.json")
                                        if "kimi" not in p.stem.lower() and (p.stem in ONCE_FAILING or json.loads(
                                            p.read_text())["model_type"] in ("llama", "mistral", "qwen2", "qwen3",
                                                                             "gemma2", "phi3", "mixtral", "qwen3_moe",
                                                                             "deepseek_v2", "llava", "llava_next",
                                                                             "paligemma", "mistral3", "internvl",
                                                                             "idefics3"))))
def test_published_configs_run_the_main_job(name, capsys):
    """The main job on published config.json files (benchmarks/configs/published: the hand-modelled ones, and
    those once refused); benchmarks/real_configs.py holds every traced one to FlopCounterMode at real size."""
    assert main([str(PUBLISHED / f"{name}.json"), "--hw", "H100", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["params"] > 0


def test_a_remote_code_deepseek_config_names_the_family_that_reads_it(capsys):
    path = PUBLISHED / "moonshotai--Kimi-K2-Instruct.json"
    assert main([str(path)]) == 2
    assert "--family deepseek_v3" in capsys.readouterr().err
    assert main([str(path), "--family", "deepseek_v3", "--hw", "H100"]) == 0


def test_a_traced_model_places_a_measured_step(capsys):
    """--tpot on a traced model: the three distances, the second pointing to its sweep (whose verdicts the
    trace's own costs give), not the hand model's batch verdicts, which a traced shape does not have."""
    pytest.importorskip("torch")
    assert main(["docs/configs/starcoder2-tiny.json", "--tpot", "1ms"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert "2 along the slope: the ridge is" in out and "its sweep says (--batch 1..512)" in out


def test_an_encoders_saved_buffers_count_as_the_checkpoint_holds_them(capsys):
    """gemma-4-31B-it: its checkpoint holds 31,273,088,876 values (the weight statistics of the model report its
    config comes from; benchmarks/configs/published/SOURCES.md), its vision tower's two persistent buffers
    (std_bias and std_scale, 1,152 each) among them: counted, as the text model's buffers are."""
    pytest.importorskip("torch")
    path = PUBLISHED / "google--gemma-4-31B-it.json"
    assert main([str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["params"] == 31_273_088_876


def test_counting_a_checkpoints_encoders_twice_keeps_their_bytes(tmp_path, monkeypatch):
    """The encoders of one config are counted once per process (a memo): the hand-modelled path's count (no
    bytes: they follow the workload's dtype) must not take the bytes out of what the trace reads later."""
    pytest.importorskip("torch")
    import roofcalc.trace.cache as cache
    from roofcalc.trace.encoders import _MEMO, encoder_params, model_encoders

    monkeypatch.setattr(cache, "_cache_dir", lambda: tmp_path / "traces")  # nothing on disk: counted here
    whole = json.loads((PUBLISHED / "mistralai--Devstral-Small-2-24B-Instruct-2512.json").read_text())
    _MEMO.clear()
    first = model_encoders(whole, "d")
    assert "param_bytes" not in first and first["params"] > 0
    again = encoder_params(torch, transformers, whole, "d", torch.bfloat16)
    assert again["param_bytes"] == 2 * again["params"] == 2 * first["params"]  # bf16: two bytes each


def test_a_traced_model_takes_a_one_byte_kv_cache(capsys):
    """--kv-dtype fp8 or int8 under 16-bit activations: the trace runs its cache in bf16 and counts it at one byte
    a value. TinyLlama traced: 22 layers x 2 (K, V) x 4 KV heads x 64 = 11,264 values a token, 11,264 bytes, as
    the hand model counts it; at batch 2 and 100 positions its attention reads 2 x 100 x 11,264 / 22 = 102,400
    bytes of cache a layer, half the bf16 trace's. A sliding window's layer holds fewer positions, each at one byte
    a value alike (gpt-oss, window 64, 2 KV heads of 32: 2 x 2 x 32 x 2 = 256 bytes a position a layer in bf16; at
    batch 2 and 100 positions its windowed layer's attention reads 2 x 64 x 256 = 32,768 bytes, its full one's
    2 x 100 x 256 = 51,200; in fp8 half of each, and the cache, 51,200 + 2 x 63 x 256 = 83,456 bytes after the
    step (the window's layer keeps 63), half too). A hybrid whose cache holds recurrent states (Bamba) is refused
    in one line: an fp8 KV cache does not quantize them."""
    from roofcalc.calculator import DTYPES
    from roofcalc.sources import load_config
    from roofcalc.trace import traced_shape

    b, f8 = DTYPES["bf16"], DTYPES["fp8"]
    _, traced = traced_shape(*load_config("tinyllama")[:2])
    narrow = trace(*traced[:2], Workload.decode(2, 100, weight_dtype=b, act_dtype=b, kv_dtype=f8), traced[2])
    wide = trace(*traced[:2], Workload.decode(2, 100, weight_dtype=b, act_dtype=b, kv_dtype=b), traced[2])
    assert narrow.kv_bytes_per_token == 22 * 2 * 4 * 64 == wide.kv_bytes_per_token // 2
    att = next(k for k in narrow.kernels if k.kind == "attention")
    assert att.cost.kv_read_bytes == 2 * 100 * 11264 // 22
    assert att.cost.kv_read_bytes * 2 == next(k for k in wide.kernels if k.kind == "attention").cost.kv_read_bytes
    assert main(["tinyllama", "--trace", "--kv-dtype", "int8", "--dtype", "fp16"]) == 0
    assert "KV cache 11,264 bytes per token (int8)" in " ".join(capsys.readouterr().out.split())
    oss = {kv.name: trace(config("gpt_oss"), "t", Workload.decode(2, 100, weight_dtype=b, act_dtype=b, kv_dtype=kv))
           for kv in (b, f8)}
    reads = {name: [k.cost.kv_read_bytes for k in a.kernels if k.kind == "attention"] for name, a in oss.items()}
    assert reads == {"bf16": [32768, 51200], "fp8": [16384, 25600]}
    assert (oss["bf16"].traced_cache_bytes, oss["fp8"].traced_cache_bytes) == (83456, 83456 // 2)
    assert oss["fp8"].kv_bytes_per_token == 256 == oss["bf16"].kv_bytes_per_token // 2
    bamba = str(Path(__file__).parent.parent / "benchmarks" / "configs" / "published" / "ibm-ai-platform--Bamba-9B.json")
    assert main([bamba, "--kv-dtype", "fp8", "--dtype", "bf16", "--hw", "H100-SXM"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "with layers whose cache is not keys and values (recurrent states" in err
    # recurrent Gemma keeps its recurrent layers' states outside the cache's layers (which then hold nothing),
    # beside attention layers of a 2,048 window: refused too, at a context inside the window and past it
    gemma = str(Path(__file__).parent.parent / "benchmarks" / "configs" / "published" /
                "google--recurrentgemma-2b.json")
    for context in ("1024", "4096"):
        assert main([gemma, "--kv-dtype", "fp8", "--dtype", "bf16", "--hw", "H100-SXM", "--context", context]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "with layers whose cache is not keys and values" in err


def test_kernels_per_layer_count_a_layers_own_kind(tmp_path, capsys):
    """gpt-oss alternates windowed and full attention: its attention and cache-update rows are tagged by the kind
    of layer ([0], [1]), each running in half the layers. A layer runs the untagged rows and its own kind's, so the
    header's per-layer count times the layers, plus the model-level rows, is the step's count."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config("gpt_oss")))
    assert main([str(path), "--hw", "H100"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("kernels"))
    per_layer, per_step = (int(x) for x in re.match(r"kernels\s+(\d+) per layer, (\d+) per step", line).groups())
    a = trace(config("gpt_oss"), "t", Workload.decode(1, 500), use_cache=False)
    tagged = [k for k in a.kernels if k.scope == "layer" and k.name.endswith("]")]
    assert tagged and {k.count for k in tagged} == {a.shape.n_layers // 2}
    model_level = sum(k.count for k in a.kernels if k.scope != "layer")
    assert per_layer * a.shape.n_layers + model_level == per_step == sum(k.count for k in a.kernels)


def test_kernels_per_layer_count_a_hand_models_kinds_of_layer(capsys):
    """DeepSeek-V3's hand model runs 3 dense layers and 58 MoE layers (first_k_dense_replace 3, 61 layers): 14 rows
    in every layer (norms, the latent attention's projections and norms, rotary, the cache write, attention, o_proj,
    two residuals), 4 in the dense ones (gate, up, act_mul, down), 10 in the MoE ones (the router, the routed
    experts' gate_up, act_mul, down and combine, the shared expert's gate, up, act_mul, down and its add): 18 and
    24 a layer, and 61·14 + 3·4 + 58·10 + 3 model-level rows = 1,449 a step."""
    from roofcalc.cli import main

    assert main(["deepseek-ai/DeepSeek-V3", "--hw", "H200"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("kernels"))
    assert line.startswith(f"kernels   18-24 per layer, {61 * 14 + 3 * 4 + 58 * 10 + 3} per step;")


def test_tracing_without_torch_names_what_is_missing(monkeypatch):
    """Without torch (transformers comes with roofcalc) the refusal names torch alone, in one line with the
    install hint; without either, both."""
    import sys

    from roofcalc.trace.config import _need_torch

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch then raises ImportError
    with pytest.raises(RoofcalcError, match=r"needs torch, which is not installed .* pip install '\.\[torch\]'"):
        _need_torch("starcoder2")
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(RoofcalcError, match="needs torch and transformers, which are not installed"):
        _need_torch("starcoder2")


def test_without_torch_a_traced_config_is_refused_in_one_line(tmp_path):
    """Without torch, transformers prints a note as it is imported ("PyTorch was not found..."): roofcalc's refusal
    is its one line on stderr all the same (trace.config.quiet_transformers). A model_type transformers does not
    know is refused as such, with the hand-modelled family its keys read as, not sent to install torch (which
    would not help it); one it knows is sent to install torch. A fresh interpreter where torch cannot be
    imported."""
    import json
    import os
    import subprocess
    import sys

    custom = tmp_path / "custom.json"
    custom.write_text(json.dumps({"model_type": "mymodel", "hidden_size": 64, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}))
    falcon = tmp_path / "falcon.json"
    falcon.write_text(json.dumps({"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "vocab_size": 100}))
    code = ("import sys; sys.modules['torch'] = None; from roofcalc.cli import main; "
            "sys.exit(main([sys.argv[1]]))")
    import transformers

    for path, words in ((custom, f"model_type 'mymodel' is not a model transformers {transformers.__version__} can "
                                 f"build"),
                        (falcon, "tracing model_type 'falcon' needs torch, which is not installed")):
        run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert run.returncode == 2 and run.stdout == "", run.stderr
        assert run.stderr.count("\n") == 1 and run.stderr.startswith("roofcalc: error: ") and words in run.stderr
        assert ("with --family llama" in run.stderr) == (path == custom)  # its keys are Llama's names


def test_a_decode_steps_unrecorded_context_skips_the_chunked_scan(monkeypatch):
    """Filling a decode step's cache (unrecorded) on the meta device, a chunked gated delta rule returns its
    output and final state at their shapes without its Python scan over the chunks (trace.patches
    ._unrecorded_chunked_rules): the step traced after it is the one the full scan leaves, kernel for kernel.
    A Qwen3-Next at context 200 (4 chunks of 64)."""
    from test_parallel import TRACED_ONLY

    from roofcalc.trace import patches

    modeling = pytest.importorskip("transformers.models.qwen3_next.modeling_qwen3_next")
    cfg = next(c for f, _, c in TRACED_ONLY if f == "qwen3_next")
    wl = Workload.decode(2, 200)
    calls = []
    rule = modeling.torch_chunk_gated_delta_rule

    def counted(*args, **kwargs):
        calls.append(1)
        return rule(*args, **kwargs)

    monkeypatch.setattr(modeling, "torch_chunk_gated_delta_rule", counted)
    quick = trace(cfg, "t", wl, use_cache=False)
    assert calls == []  # (the stub stood in for it while the context filled the cache)
    monkeypatch.setattr(patches, "CHUNKED_RULES", ())
    full = trace(cfg, "t", wl, use_cache=False)
    assert calls  # the full scan ran, once a gated delta net layer
    assert [(k.name, k.cost, k.count, k.dims) for k in quick.kernels] == \
        [(k.name, k.cost, k.count, k.dims) for k in full.kernels]
    assert quick.traced_cache_bytes == full.traced_cache_bytes


@pytest.mark.parametrize("name, layers, heads, kv_heads", [("Qwen--Qwen3-VL-8B-Instruct", 36, 32, 8),
                                                           ("Qwen--Qwen2.5-VL-3B-Instruct", 36, 16, 2),
                                                           ("Qwen--Qwen2-VL-2B-Instruct", 28, 12, 2)])
def test_qwen_vl_runs_under_tp_by_the_serving_engines_plan(name, layers, heads, kv_heads, capsys):
    """Qwen2-VL's, Qwen2.5-VL's and Qwen3-VL's config classes have no base_model_tp_plan (Qwen3-VL's text config's
    splits the embedding alone); vLLM runs their language model as Qwen2's and Qwen3's (trace.parallel.
    _qwen3_vl_plan). Each at --tp 2 (its config in benchmarks/configs/published; Qwen3-VL-8B 36 layers, 32 heads and
    8 KV heads, Qwen2.5-VL-3B 36, 16 and 2, Qwen2-VL-2B 28, 12 and 2, heads of 128): half the heads and KV heads a
    rank, an all-reduce after o_proj and after down_proj in each layer, the embedding's and lm_head's gather; KV
    cache layers x K and V x KV heads / 2 x 128 x 2 bytes a token a rank (Qwen3-VL-8B: 73,728)."""
    from roofcalc.cli import main

    assert main([str(PUBLISHED / f"{name}.json"), "--tp", "2", "--hw", "H100", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["model"]["n_heads"], doc["model"]["n_kv_heads"]) == (heads // 2, kv_heads // 2)
    assert doc["model"]["kv_bytes_per_token"] == layers * 2 * (kv_heads // 2) * 128 * 2
    collectives = sorted((k["name"], k["count"]) for k in doc["kernels"] if k["kind"] == "collective")
    assert collectives == [("embed_tokens.all_reduce", 1), ("lm_head.all_gather", 1),
                           ("mlp.down_proj.all_reduce", layers), ("self_attn.o_proj.all_reduce", layers)]


@pytest.mark.parametrize("name, layers, heads, q, o", [("moonshotai--Kimi-K2.5", 61, 64, "[1,1536]x[1536,1536]",
                                                         "[1,1024]x[1024,7168]"),
                                                        ("zai-org--GLM-4.1V-9B-Thinking", 40, 32, "[1,4096]x[4096,512]",
                                                         "[1,512]x[512,4096]")])
def test_a_wrapper_with_no_plan_takes_its_text_configs(name, layers, heads, q, o, capsys):
    """Kimi-K2.5's and GLM-4.1V's config classes have no base_model_tp_plan; their text configs' classes have one
    (DeepseekV3Config's, Glm4vTextConfig's), which transformers' composite models take and by which vLLM runs their
    language models. At --tp 8 (configs in benchmarks/configs/published): Kimi-K2.5's 64 heads 8 a rank, q_b_proj
    1,536 -> 8 x 192 = 1,536 and o_proj 8 x 128 = 1,024 -> 7,168; GLM-4.1V's 32 heads of 128 4 a rank, q_proj
    4,096 -> 512, o_proj 512 -> 4,096; an all-reduce after o_proj in every layer."""
    from roofcalc.cli import main

    # (--mla naive: under vLLM's own absorbed attention Kimi-K2.5 is read by the hand DeepSeek-V3 model, below)
    args = [str(PUBLISHED / f"{name}.json"), "--tp", "8", "--engine", "vllm", "--mla", "naive", "--hw", "H200"]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["n_heads"] == heads // 8
    rows = {k["name"]: k for k in doc["kernels"]}
    assert rows["self_attn.q_b_proj" if "Kimi" in name else "self_attn.q_proj"]["shape"] == q
    assert rows["self_attn.o_proj"]["shape"] == o
    assert rows["self_attn.o_proj.all_reduce"]["count"] == layers
    assert main(args) == 0
    assert "the text config's of" in unwrap(capsys.readouterr().out)


@pytest.mark.parametrize("name, layers, heads, kv_heads, attention_out, mlp_out, embedding", [
    ("bigcode--starcoderbase-1b", 24, 16, 1, "attn.c_proj", "mlp.c_proj", "transformer.wte"),
    ("bigscience--bloom-560m", 24, 16, 16, "self_attention.dense", "mlp.dense_4h_to_h", "transformer.word_embeddings"),
    ("mosaicml--mpt-7b", 32, 32, 32, "attn.out_proj", "ffn.down_proj", "transformer.wte"),
    ("adept--persimmon-8b-base", 36, 64, 64, "self_attn.dense", "mlp.dense_4h_to_h", "embed_tokens"),
    ("stabilityai--stablelm-2-1_6b", 24, 32, 32, "self_attn.o_proj", "mlp.down_proj", "embed_tokens")])
def test_a_config_class_with_no_plan_takes_vllms(name, layers, heads, kv_heads, attention_out, mlp_out, embedding,
                                                 capsys):
    """GPT-BigCode, BLOOM, MPT, Persimmon and StableLM have no base_model_tp_plan in transformers 5.25 (refused under
    --tp before); each takes vLLM's split of it (trace.parallel._gpt_bigcode_plan ... _stablelm_plan, each read in
    vLLM's model file): at --tp 2 (configs in benchmarks/configs/published) half the query heads a rank, half the KV
    heads or, for StarCoder's one (multi-query attention), that one on every rank; an all-reduce after the
    attention's output projection and after the MLP's second matmul in every layer, the embedding's, and lm_head's
    all-gather."""
    from roofcalc.cli import main

    assert main([str(PUBLISHED / f"{name}.json"), "--tp", "2", "--hw", "H100", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["model"]["n_heads"], doc["model"]["n_kv_heads"]) == (heads // 2, max(1, kv_heads // 2))
    assert sorted((k["name"], k["count"]) for k in doc["kernels"] if k["kind"] == "collective") == sorted(
        [(f"{attention_out}.all_reduce", layers), (f"{mlp_out}.all_reduce", layers), (f"{embedding}.all_reduce", 1),
         ("lm_head.all_gather", 1)])


@pytest.mark.parametrize("name, mixer_reduces", [("state-spaces--mamba-2.8b-hf", ("x_proj", "out_proj")),
                                                  ("tiiuae--falcon-mamba-7b", ("x_proj", "out_proj")),
                                                  ("mistralai--Mamba-Codestral-7B-v0.1", ("out_proj",))])
def test_an_attention_free_model_takes_vllms_split(name, mixer_reduces, capsys):
    """Mamba, FalconMamba and Mamba-2 have no base_model_tp_plan in transformers 5.25 (refused under --tp before);
    each takes vLLM's split (trace.parallel._mamba_plan, _mamba2_plan: mamba.py, mamba2.py). At --tp 2 (configs in
    benchmarks/configs/published) a rank holds every norm whole and half of every other weight: Mamba-2.8B, 64
    layers, D 2,560, its norms 65·2,560 = 166,400 of its 2,768,345,600 parameters (the model's count in the
    header), (2,768,345,600 - 166,400) / 2 + 166,400 = 1,384,256,000; the mixers' all-reduces in every layer
    (Mamba-1's after x_proj and out_proj, Mamba-2's after out_proj), the embedding's, and lm_head's all-gather."""
    from roofcalc.cli import main

    assert main([str(PUBLISHED / f"{name}.json"), "--tp", "2", "--hw", "H100", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted((k["name"], k["count"]) for k in doc["kernels"] if k["kind"] == "collective") == sorted(
        [*((f"mixer.{p}.all_reduce", 64) for p in mixer_reduces), ("backbone.embeddings.all_reduce", 1),
         ("lm_head.all_gather", 1)])
    if name.startswith("state-spaces"):
        assert doc["model"]["params"] == (2_768_345_600 - 166_400) // 2 + 166_400


def test_a_plan_that_splits_no_layer_says_so(capsys):
    """LFM2's base_model_tp_plan in transformers 5.25 splits the embedding alone (and its class's _tp_plan
    lm_head): at --tp 2 every layer runs whole on every rank, and the header says that, not that projections
    split; the rank's heads and MLP width are the model's."""
    from roofcalc.cli import main

    assert main([str(PUBLISHED / "LiquidAI--LFM2-1.2B.json"), "--tp", "2", "--hw", "H100"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert "it splits no layer (embed_tokens and lm_head alone), so every rank runs every layer whole" in out
    assert "colwise projections split their outputs" not in out
    assert "N=32 heads / K=8 KV heads x H=64, F=12288" in out


def test_a_mamba_state_is_updated_in_place_under_the_fused_launch_models():
    """transformers' Mamba decode copies each layer's SSM state out of the cache, updates the copy and copies it
    back (mamba_scan_forward, mamba_selective_state_update, mamba_scan_forward#2); a serving engine's
    selective_state_update reads the cache's state and writes it in place (trace.group._state_in_place). The small
    Mamba at batch 3, fp32: its state 3 sequences x 2·256 channels x 8 x 4 bytes = 49,152 bytes a layer, read and
    written once by the update in the ideal view, and moved three times over (twice more by the copies) eagerly."""
    from roofcalc.calculator import DTYPES

    cfg = dict(model_type="mamba", hidden_size=256, state_size=8, num_hidden_layers=2, vocab_size=1000,
               conv_kernel=4, expand=2, pad_token_id=0)
    fp32 = DTYPES["fp32"]
    wl = Workload.decode(3, 6, weight_dtype=fp32, act_dtype=fp32, kv_dtype=fp32, cache_update="in-place")
    state = 3 * 2 * 256 * 8 * 4
    ideal = trace(cfg, "t", wl, use_cache=False, view="ideal")
    update = next(k for k in ideal.kernels if k.name == "mixer.mamba_selective_state_update")
    assert (update.cost.kv_read_bytes, update.cost.kv_write_bytes) == (state, state)
    copies = [k for k in ideal.kernels if k.name.startswith("mixer.mamba_scan_forward")]
    assert copies and all(k.cost.kv_bytes == 0 and k.cost.bytes < state for k in copies)
    eager = trace(cfg, "t", wl, use_cache=False, view="eager")
    moved = sum(k.cost.kv_bytes for k in eager.kernels if k.name.startswith("mixer.mamba_scan_forward"))
    assert moved == 3 * state  # read out of the cache (once), read and written back (twice)


def test_a_vocabulary_the_ranks_do_not_divide_splits_unevenly(capsys):
    """Hunyuan-7B's vocabulary, 128,167, over 2 ranks: transformers 5.25 shards it unevenly (the last rank a shorter
    slice) and vLLM pads it; the rank the step waits for holds ceil(128,167 / 2) = 64,084 rows, in the embedding
    and in the tied lm_head (4,096 wide, bf16: 64,084 x 4,096 x 2 bytes its weights)."""
    from roofcalc.cli import main

    assert main([str(PUBLISHED / "tencent--Hunyuan-7B-Instruct.json"), "--tp", "2", "--hw", "H100",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["vocab_size"] == 64_084
    head = next(k for k in doc["kernels"] if k["name"] == "lm_head")
    assert head["weight_bytes"] == 64_084 * 4_096 * 2


def test_a_traced_models_group_size_is_checked_against_its_width_by_any_name():
    """A group size given for int4 weights must divide the hidden size, as a hand model's must; gpt2 names it
    n_embd (768, as transformers' attribute_map reads it as hidden_size): 100 is refused, 128 (768 = 6 x 128)
    traces."""
    cfg = {"model_type": "gpt2", "n_embd": 768, "n_layer": 1, "n_head": 12, "vocab_size": 1000, "n_positions": 64}
    with pytest.raises(RoofcalcError, match="group size 100 does not divide the hidden size 768 of tiny-gpt2"):
        trace(cfg, "tiny-gpt2", Workload.decode(1, 8, weight_dtype="int4", group_size=100), use_cache=False)
    assert trace(cfg, "tiny-gpt2", Workload.decode(1, 8, weight_dtype="int4", group_size=128), use_cache=False).kernels


def test_the_library_route_to_a_traced_model_is_the_one_its_refusals_name(tmp_path, capsys):
    """load_shape refuses a model_type with no hand model, naming roofcalc.trace.trace and analyzer; analyze
    refuses the header's traced shape, naming trace; the route named gives the command line's step: the same
    FLOPs and bytes as `roofcalc CONFIG --format json` (hf-eager: the eager view), at one point and in a sweep."""
    from roofcalc import load_config, load_shape
    from roofcalc.sweep import sweep
    from roofcalc.trace import analyzer, traced_shape

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config("granite")))
    with pytest.raises(RoofcalcError, match=r"roofcalc.trace.trace\(cfg, name, workload, view='eager'\) on "
                                            r"roofcalc.load_config\(source\)\[:2\]"):
        load_shape(str(path))
    cfg, name = load_config(str(path))[:2]
    with pytest.raises(RoofcalcError, match="a traced shape \\(granite\\) has no hand model to analyze"):
        analyze(traced_shape(cfg, name)[0], Workload.decode(1, 500))
    step = trace(cfg, name, Workload.decode(1, 500), view="eager")
    assert main([str(path), "--format", "json"]) == 0
    totals = json.loads(capsys.readouterr().out)["totals"]
    assert (step.totals.flops, step.totals.bytes) == (totals["flops"], totals["bytes"])
    sw = sweep(traced_shape(cfg, name)[0], "T4", batches=[1], contexts=[500], analyzer=analyzer(cfg, name, view="eager"))
    assert sw.grid.flops[0, 0] == totals["flops"] and sw.grid.bytes[0, 0] == totals["bytes"]


def test_a_latent_attention_a_serving_engine_absorbs_is_not_counted_from_a_trace(capsys):
    """A trace counts DeepSeek's attention as transformers runs it: kv_b_proj expands every cached token into every
    head's K and V, every step. Under a preset that decodes over the latent (--engine vllm: --mla serving), a config
    of another model_type holding the latent (Kimi-K2.5's kimi_k25 around a kimi_k2 text config) is read by the
    hand DeepSeek-V3 model, as --family deepseek_v3 reads it (the same FLOPs, bytes and weights), and the header says
    why; transformers' own attention (the default engine, or --mla naive) keeps the trace. A config that record
    cannot read (GLM-5.1's glm_moe_dsa: a head_dim of its own) stays traced, and a warning says what it overcounts;
    DeepSeek-V3.2's indexer is said not counted (every key attended, not its index_topk 2,048)."""
    kimi = str(PUBLISHED / "moonshotai--Kimi-K2.5.json")
    base = [kimi, "--hw", "H200", "--tp", "8", "--engine", "vllm", "--batch", "32", "--context", "4096"]
    assert main([*base, "--format", "json"]) == 0
    auto = json.loads(capsys.readouterr().out)
    assert main([*base, "--family", "deepseek_v3", "--format", "json"]) == 0
    given = json.loads(capsys.readouterr().out)
    assert auto["totals"] == given["totals"] and auto["model"]["weight_bytes"] == given["model"]["weight_bytes"]
    assert auto["model"]["source"] == "hand" and auto["step"]["predicted_s"] == given["step"]["predicted_s"]
    assert main(base) == 0
    assert "family    read as deepseek_v3 (its latent attention, which the vllm preset runs over the latent; a " \
        "trace counts transformers' expansion of every cached token each step)" in capsys.readouterr().out.replace(
            "\n          ", " ")
    assert main([*base, "--mla", "naive", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["source"] == "traced"
    glm = [str(PUBLISHED / "zai-org--GLM-5.1.json"), "--hw", "H200", "--tp", "8", "--engine", "vllm", "--format",
           "json"]
    assert main(glm) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["source"] == "traced" and any(
        "latent attention is traced as transformers runs it" in w for w in doc["warnings"])
    v32 = [str(PUBLISHED / "deepseek-ai--DeepSeek-V3.2-Exp.json"), "--hw", "H200", "--tp", "8", "--engine", "vllm"]
    assert main([*v32, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["family_why"].startswith("its latent attention, which the vllm preset runs over the latent")
    assert any("not the index_topk 2,048 its indexer picks, and the indexer itself" in w for w in doc["warnings"])
    assert main(v32[:-2]) == 0  # the default engine's verdict line under vLLM says what it leaves out too
    assert "read as DeepSeek-V3: its sparse attention and indexer not counted" in unwrap(capsys.readouterr().out)
    # the default engine's verdict builds the step under vLLM as `--engine vllm` reads it, not from the trace
    assert main([kimi, "--hw", "H200", "--tp", "8", "--batch", "32", "--context", "4096"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert f"the step would take {auto['step']['predicted_s'] * 1e3:.3g} ms" in out


def test_the_readme_figures_of_the_latent_route(capsys):
    """README (Parallelism): Kimi-K2.5 at --tp 8 on H200s under --engine vllm, batch 32, context 32,768: 396 ms
    traced (--mla naive: transformers' expansion) and 39.7 ms read by the hand DeepSeek-V3 model; 7.07 ms at the
    default batch and context. The tool's own outputs, pinned so that the README cannot drift from them."""
    kimi = [str(PUBLISHED / "moonshotai--Kimi-K2.5.json"), "--hw", "H200", "--tp", "8", "--engine", "vllm"]
    for extra, figure in ((["--batch", "32", "--context", "32768", "--mla", "naive"], "396 ms"),
                          (["--batch", "32", "--context", "32768"], "39.7 ms"), ([], "7.07 ms")):
        assert main([*kimi, *extra]) == 0
        assert f"time      predicted {figure}" in capsys.readouterr().out
