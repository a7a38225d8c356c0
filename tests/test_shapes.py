"""Reading configs: the catalog, family defaults, traps, and every kind of bad input."""

from __future__ import annotations

import dataclasses
import json

import pytest

from roofcalc import RoofcalcError, Workload, analyze, catalog, load_config, load_shape, shape_from_config
from roofcalc.families import FAMILIES as FAMILY_DEFAULTS
from roofcalc.sources import find_in_catalog
from textutil import unwrap  # noqa: E402

SUPPORTED = [e for e in catalog() if e.supported]
MINIMAL = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512, vocab_size=1000)


@pytest.mark.parametrize("entry", SUPPORTED, ids=lambda e: e.hub_id)
def test_catalog_parameter_counts_equal_published(entry):
    """Each count is the model's published exact parameter count (source in the catalog entry)."""
    analysis = analyze(load_shape(entry.hub_id), Workload.decode(1, 1))
    assert analysis.params == entry.params_total, entry.params_source


def test_catalog_covers_the_core_families():
    families = {e.config["model_type"] for e in SUPPORTED}
    assert families == set(FAMILY_DEFAULTS)
    assert len(SUPPORTED) == len(catalog()) == 35


@pytest.mark.parametrize("entry", [e for e in catalog() if e.params_active is not None], ids=lambda e: e.hub_id)
def test_catalog_moe_active_parameter_counts(entry):
    """Active = total less the (E − k) routed experts a token does not use, in every MoE layer."""
    analysis = analyze(load_shape(entry.hub_id), Workload.decode(1, 1))
    assert analysis.active_params == entry.params_active, entry.params_source


def test_aliases_resolve_exactly_and_case_insensitively():
    assert find_in_catalog("TinyLlama/TinyLlama-1.1B").hub_id == "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    assert find_in_catalog("tinyllama/tinyllama-1.1b-chat-v1.0").hub_id == "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    assert find_in_catalog("llama-2-7b").hub_id == "meta-llama/Llama-2-7b-hf"
    assert find_in_catalog("TinyLlama-1.1B") is None  # no substring matching
    assert find_in_catalog("TinyLlama/TinyLlama-1.1") is None


def test_explicit_head_dim_wins():
    gemma7 = load_shape("google/gemma-7b")  # head_dim 256 while 3072 / 16 = 192
    assert (gemma7.head_dim, gemma7.q_dim, gemma7.d_model) == (256, 4096, 3072)
    q = analyze(gemma7, Workload.decode(1, 10)).kernel("q_proj")
    assert q.params == 3072 * 4096  # q_proj maps 3072 -> 16·256


def test_family_traps():
    qwen2 = load_shape("Qwen/Qwen2.5-7B")
    assert qwen2.qkv_bias and not qwen2.o_bias  # hard-coded in Qwen2Attention, no config key
    assert qwen2.sliding_window is None  # sliding_window is in the file but use_sliding_window is false
    assert load_shape("Qwen/Qwen3-8B").qk_norm
    gemma = load_shape("google/gemma-2b")
    assert gemma.tie_word_embeddings and gemma.activation == "gelu_tanh" and gemma.embed_scale
    assert load_shape("mistralai/Mistral-7B-v0.1").sliding_window == 4096
    assert load_shape("mistralai/Mistral-7B-v0.3").sliding_window is None  # "sliding_window": null


def minimal(model_type: str, **extra) -> dict:
    """The smallest config of a family, in that family's own key names."""
    cfg = dict(MINIMAL, model_type=model_type)
    if model_type == "gpt2":
        cfg = dict(model_type="gpt2", n_embd=256, n_layer=2, n_head=8, vocab_size=1000)
    if model_type == "opt":
        cfg["ffn_dim"] = cfg.pop("intermediate_size")
    if model_type.startswith("deepseek"):
        cfg.update(n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=64)
    if model_type in ("mixtral", "qwen3_moe"):  # roofcalc requires the expert count and top-k
        cfg.update({"num_local_experts" if model_type == "mixtral" else "num_experts": 8, "num_experts_per_tok": 2})
    if model_type == "gpt2" and "hidden_size" in extra:
        extra = {"n_embd": extra.pop("hidden_size"), "n_head": extra.pop("num_attention_heads"), **extra}
    return {**cfg, **extra}


MHA_ONLY = ("gpt2", "gpt_neox", "opt", "phi", "deepseek_v2", "deepseek_v3")  # no GQA in the modeling code


@pytest.mark.parametrize("model_type", sorted(FAMILY_DEFAULTS))
def test_absent_keys_take_the_transformers_class_default(model_type):
    """Oracle: the transformers config class built from the same keys."""
    transformers = pytest.importorskip("transformers")
    for extra in ({}, {"num_attention_heads": 16, "hidden_size": 512}):
        cfg = minimal(model_type, **extra)
        ref = transformers.AutoConfig.for_model(**cfg)
        n_heads = ref.num_attention_heads
        ref_kv = n_heads if model_type in MHA_ONLY else ref.num_key_value_heads
        try:
            ours = shape_from_config(cfg, "t")
        except RoofcalcError:
            # the class default does not divide the heads: transformers cannot build it either
            assert n_heads % ref_kv != 0
            continue
        assert ours.n_kv_heads == ref_kv
        if ours.mla is None:
            assert ours.head_dim == (getattr(ref, "head_dim", None) or ref.hidden_size // n_heads)
        else:
            assert (ours.mla.kv_lora_rank, ours.mla.q_lora_rank) == (ref.kv_lora_rank, ref.q_lora_rank)
        assert ours.tie_word_embeddings == ref.tie_word_embeddings
        assert ours.sliding_window == getattr(ref, "sliding_window", None)
        if ours.moe is not None:
            assert ours.moe.n_experts == getattr(ref, "num_local_experts", None) or ref.num_experts
            assert ours.moe.top_k == ref.num_experts_per_tok


@pytest.mark.parametrize("model_type", sorted(FAMILY_DEFAULTS))
def test_a_text_configs_absent_sizes_take_the_class_defaults(model_type):
    """Oracle: transformers' config class with no keys at all. Inside a multimodal config's text_config the
    class fills absent sizes, and published checkpoints rely on it; each record's class_sizes are those."""
    transformers = pytest.importorskip("transformers")
    ref = transformers.AutoConfig.for_model(model_type=model_type)
    f = FAMILY_DEFAULTS[model_type]
    keys = (f.d_model_key, f.n_layers_key, f.n_heads_key, f.d_ff_key, "vocab_size")
    assert f.class_sizes == tuple(getattr(ref, k) for k in keys)


# LLaVA-1.5-7B's published config.json (llava-hf/llava-1.5-7b-hf), the architectural keys: its text_config
# gives only the vocabulary and leaves Llama's sizes to LlamaConfig
LLAVA_15 = {"model_type": "llava", "image_token_index": 32000, "projector_hidden_act": "gelu", "torch_dtype": "float16",
            "text_config": {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096, "model_type": "llama",
                            "rms_norm_eps": 1e-05, "torch_dtype": "float16", "vocab_size": 32064},
            "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                              "model_type": "clip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 24,
                              "patch_size": 14, "projection_dim": 768, "vocab_size": 32000},
            "vision_feature_layer": -2, "vocab_size": 32064}


def test_llava_15s_text_config_reads_with_llamas_class_sizes():
    s = shape_from_config(LLAVA_15, "llava-1.5-7b")
    assert dict(s.class_defaults) == {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                                      "intermediate_size": 11008}
    assert (s.vocab_size, s.n_kv_heads) == (32064, 32)
    # Llama-2-7B's 6,738,415,616 parameters (the catalog's, its model card's) with 64 more vocabulary rows
    # in the embedding and in lm_head: 6,738,415,616 + 2 x 64 x 4096 = 6,738,939,904
    assert analyze(s, Workload.decode(1, 10)).params == 6_738_939_904
    # the same keys at the top level are still refused: a config of its own must give its sizes
    with pytest.raises(RoofcalcError, match="no 'hidden_size'"):
        shape_from_config(LLAVA_15["text_config"], "t")


def test_absent_kv_heads_is_mha_for_llama():
    assert shape_from_config(dict(MINIMAL, model_type="llama")).n_kv_heads == 8


def test_family_override_reads_custom_types_explicitly():
    cfg = dict(MINIMAL, model_type="my_finetune")
    with pytest.raises(RoofcalcError, match="--family"):
        shape_from_config(cfg)
    assert shape_from_config(cfg, family="llama").family == "llama"


# --------------------------------------------------------------------------- bad input

BAD_CONFIGS = [
    ([1, 2], "must hold a JSON object"),
    ({**MINIMAL}, "no 'model_type'"),
    ({**MINIMAL, "model_type": 123}, "'model_type' must be a name such as \"llama\", got 123"),
    ({"model_type": "llama", **{k: v for k, v in MINIMAL.items() if k != "hidden_size"}}, "no 'hidden_size'"),
    ({**MINIMAL, "model_type": "llama", "num_hidden_layers": 0}, "'num_hidden_layers' must be a positive integer"),
    ({**MINIMAL, "model_type": "llama", "hidden_size": -256}, "'hidden_size' must be a positive integer"),
    ({**MINIMAL, "model_type": "llama", "hidden_size": 256.5}, "'hidden_size' must be a positive integer"),
    ({**MINIMAL, "model_type": "llama", "hidden_size": "256"}, "'hidden_size' must be a positive integer"),
    ({**MINIMAL, "model_type": "llama", "hidden_size": 250}, "not divisible by num_attention_heads"),
    ({**MINIMAL, "model_type": "llama", "num_key_value_heads": 3}, "not a multiple of num_key_value_heads 3"),
    ({**MINIMAL, "model_type": "llama", "vocab_size": 10**12}, "beyond any real model"),
    ({**MINIMAL, "model_type": "llama", "hidden_act": "swiglu9"}, "not an activation"),
    ({**MINIMAL, "model_type": "mistral", "sliding_window": 0}, "'sliding_window' must be a positive integer"),
    ({**MINIMAL, "model_type": "bert"}, "model_type 'bert' is not supported"),
]


@pytest.mark.parametrize("cfg,message", BAD_CONFIGS)
def test_bad_configs_say_what_is_wrong(cfg, message):
    with pytest.raises(RoofcalcError, match=message):
        shape_from_config(cfg, "t")


def test_paths(tmp_path):
    cfg = dict(MINIMAL, model_type="llama")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert load_config(str(tmp_path))[0] == cfg  # a folder
    assert load_config(str(tmp_path / "config.json"))[0] == cfg  # the file
    with pytest.raises(RoofcalcError, match="has no config.json"):
        load_config(str(tmp_path / ".."))
    with pytest.raises(RoofcalcError, match="no such file"):
        load_config(str(tmp_path / "missing.json"))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(json.dumps(cfg)[:40])
    with pytest.raises(RoofcalcError, match="not valid JSON"):
        load_config(str(truncated))


def test_not_a_name_at_all():
    with pytest.raises(RoofcalcError, match="not a file, a catalog name or a hub id"):
        load_config("what is this")


def test_a_multimodal_config_is_read_through_its_text_config():
    # a Mistral-3-style vision-language config: the language model sits in text_config
    text = dict(model_type="mistral", hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=512, vocab_size=1000, head_dim=64)
    cfg = dict(model_type="mistral3", text_config=text, vision_config={"model_type": "pixtral", "hidden_size": 64})
    shape = shape_from_config(cfg, "vlm")
    assert shape.model_type == "mistral3 (text_config: mistral)" and shape.d_model == 256 and shape.n_layers == 2
    # the same language model, marked multimodal so that its encoders are counted beside it (sources.with_encoders)
    assert shape == dataclasses.replace(shape_from_config(text, "vlm"), model_type=shape.model_type, multimodal=True)
    # the checkpoint's dtype written only at the top (as Mistral-Small-3.1's config.json writes it) is read;
    # one in the text config wins
    assert shape_from_config(dict(cfg, torch_dtype="bfloat16"), "vlm").config_dtype == "bf16"
    assert shape_from_config(dict(cfg, torch_dtype="bfloat16", text_config=dict(text, torch_dtype="float16")),
                             "vlm").config_dtype == "fp16"


# --------------------------------------------------------------------------- quantization_config wherever it is

from pathlib import Path  # noqa: E402

PUBLISHED = Path(__file__).parent.parent / "benchmarks" / "configs" / "published"
# moonshotai/Kimi-K2.5 and mistralai/Devstral-Small-2-24B-Instruct-2512, written by hand from their published
# config.json files (architectural keys and quantization_config; vision_config trimmed)
KIMI_K25 = PUBLISHED / "moonshotai--Kimi-K2.5.json"
DEVSTRAL_2 = PUBLISHED / "mistralai--Devstral-Small-2-24B-Instruct-2512.json"


def _run_json(args, capsys):
    from roofcalc.cli import main

    code = main([*args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_kimi_k25_int4_experts_in_its_text_config(capsys):
    """Kimi-K2.5 (kimi_k25 around a DeepSeek-V3 text_config, read with --family deepseek_v3) keeps its
    compressed-tensors int4 quantization_config inside text_config, ignoring attention, shared experts and
    the dense layer's MLP: the routed experts alone are int4 with an fp16 scale per 32 values.
    Routed experts: 60 MoE layers x 384 experts x 3 x 7168·2048 = 1,014,686,023,680 weights, 0.5 byte each =
    507,343,011,840 bytes, + one 2-byte scale per 32 = 1,014,686,023,680 / 16 = 63,417,876,480 bytes.
    The rest of the 1,026,408,232,448 parameters (Kimi K2's count, README) stay bf16, the router in fp32
    (DeepSeek-V3's gate and its bias): 60 x (384·7168 + 384) = 165,173,760 at 4 bytes = 660,695,040, and
    1,026,408,232,448 - 1,014,686,023,680 - 165,173,760 = 11,557,035,008 at 2 = 23,114,070,016.
    Total: 507,343,011,840 + 63,417,876,480 + 660,695,040 + 23,114,070,016 = 594,535,653,376 bytes."""
    cfg = load_config(str(KIMI_K25))[0]
    s = shape_from_config(cfg, "kimi", family="deepseek_v3")
    assert (s.weight_format, s.weight_group, s.weight_format_where, s.weight_scope) == ("int4", 32, "text_config",
                                                                                      "experts")
    doc = _run_json([str(KIMI_K25), "--family", "deepseek_v3", "--hw", "H100"], capsys)
    # the language model's; its vision tower and projector (counted on transformers' model where torch is
    # installed) come beside it in bf16, outside the quantization_config: 1,026,879,376,368 in all on
    # transformers' whole Kimi-K2.5 (the traced test below), so 471,143,920 encoder parameters
    encoders = doc["model"]["params"] - 1_026_408_232_448
    if doc["model"]["language_model_params"] is None:  # without torch: not counted, and the size line says so
        assert encoders == 0
    else:
        assert doc["model"]["language_model_params"] == 1_026_408_232_448 and encoders == 471_143_920
    assert doc["model"]["weight_bytes"] == 594_535_653_376 + 2 * encoders
    assert doc["workload"]["weight_dtype"] == "int4"
    from roofcalc.cli import main

    assert main([str(KIMI_K25), "--family", "deepseek_v3", "--hw", "H100"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert "(int4, group 32 (the checkpoint's quantization_config, in text_config, the routed experts alone))" in out
    # --weight-dtype overrides the declared scope: int4 on every decoder linear weighs less
    every = _run_json([str(KIMI_K25), "--family", "deepseek_v3", "--hw", "H100", "--weight-dtype", "int4",
                       "--group-size", "32"], capsys)
    assert every["model"]["weight_bytes"] < 594_535_653_376 + 2 * encoders


def test_the_same_quantization_config_at_the_top_reads_the_same():
    """Kimi-K2-Thinking writes the same compressed-tensors block at the top of a kimi_k2 config: the same
    format, group and scope, found at the top."""
    cfg = load_config(str(KIMI_K25))[0]
    flat = dict(cfg["text_config"])
    s = shape_from_config(flat, "k2", family="deepseek_v3")
    assert (s.weight_format, s.weight_group, s.weight_format_where, s.weight_scope) == ("int4", 32, "", "experts")


@pytest.mark.parametrize("ignore, expect", [
    (["lm_head"], ""),  # outside the decoder's layers: every linear int4
    (["re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"], "experts"),
    (["re:.*self_attn.*"], "the attention"),  # attention alone kept: a split roofcalc does not count
    (["re:.*layers\\.0\\.self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|down)_proj.*"],
     "part of the attention"),
])
def test_an_exclusion_list_is_read_against_the_decoders_linears(ignore, expect):
    cfg = json.loads(KIMI_K25.read_text())["text_config"]
    cfg["quantization_config"] = dict(cfg["quantization_config"], ignore=ignore)
    s = shape_from_config(cfg, "k", family="deepseek_v3")
    if expect in ("", "experts"):
        assert s.weight_scope == expect and s.weight_format == "int4" and not s.weight_format_refusal
    else:
        assert s.weight_format is None and expect in s.weight_format_refusal
        assert "--weight-dtype int4" in s.weight_format_refusal and "\n" not in s.weight_format_refusal


def test_devstral_small_2_fp8_on_its_wrapper(capsys):
    """Devstral-Small-2 (mistral3 around a ministral3 text_config) writes its FP8 quantization_config at the top,
    beside text_config: per-tensor FP8 (quant_method fp8, no weight_block_size), vision tower, projector and
    lm_head left out. Its 40 layers' linears: q 5120·4096 + k, v 2 x 5120·1024 + o 4096·5120 + gate, up, down
    3 x 5120·32768 = 555,745,280 a layer, 22,229,811,200 in all, 1 byte each, + a 4-byte scale per matrix
    (280 matrices: 1,120 bytes). Embeddings and the untied lm_head (2 x 131072·5120 = 1,342,177,280) and the
    norms (81 x 5120 = 414,720) stay bf16: 2 x 1,342,592,000 = 2,685,184,000.
    Total: 22,229,811,200 + 1,120 + 2,685,184,000 = 24,914,996,320 bytes; 23,572,403,200 parameters."""
    cfg = load_config(str(DEVSTRAL_2))[0]
    s = shape_from_config(cfg, "devstral", family="mistral")
    assert (s.weight_format, s.weight_format_where, s.weight_scope) == ("fp8-t", "", "")
    doc = _run_json([str(DEVSTRAL_2), "--family", "mistral", "--hw", "H100"], capsys)
    encoders = doc["model"]["params"] - 23_572_403_200  # beside the language model, where torch is installed
    if doc["model"]["language_model_params"] is None:  # without torch: not counted, and the size line says so
        assert encoders == 0
    else:
        assert doc["model"]["language_model_params"] == 23_572_403_200
    assert doc["model"]["weight_bytes"] == 24_914_996_320 + 2 * encoders
    # ministral3 has no hand model: traced by default, the same language model plus its encoders, which the
    # trace counts on transformers' Mistral3Model (tests/test_trace.py holds them to PixtralVisionModel and the
    # projector on the meta device): 438,958,080 parameters, unquantized, 2 bytes each; the hand model read
    # with --family counts the same encoders the same way
    pytest.importorskip("transformers")
    assert encoders == 438_958_080
    doc = _run_json([str(DEVSTRAL_2), "--hw", "H100"], capsys)
    assert doc["model"]["params"] == 23_572_403_200 + 438_958_080
    assert doc["model"]["weight_bytes"] == 24_914_996_320 + 2 * 438_958_080 and doc["workload"]["weight_dtype"] == "fp8-t"


def test_kimi_k25_traced_reads_its_text_configs_quantization(capsys):
    """transformers knows kimi_k25: traced whole by default, its vision tower's 1,026,879,376,368 -
    1,026,408,232,448 = 471,143,920 parameters in bf16 (942,287,840 bytes) beside the hand model's
    594,535,653,376: 595,477,941,216 bytes; the routed experts alone int4, top-8 of 384 read per token."""
    pytest.importorskip("transformers")
    doc = _run_json([str(KIMI_K25), "--hw", "H100"], capsys)
    assert doc["model"]["params"] == 1_026_879_376_368
    assert doc["model"]["weight_bytes"] == 594_535_653_376 + 942_287_840
