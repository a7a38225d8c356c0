"""Model families as data: one frozen record per transformers ``model_type`` roofcalc models by hand.

A record says where the family's config keeps each dimension, what its config class defaults to
when a key is absent (tests check every default against the class), and the traits its modeling
code hard-codes: norm kind, block layout, gated MLP, fused projections, biases, rotary share,
learned positions, experts, latent attention, its module names and its eager launch counts.
:func:`roofcalc.shapes.shape_from_config` reads any config through its family's record; nothing
else in roofcalc knows a family by name. Adding a family is adding one record here (and its tests).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    """A yes/no trait: fixed by the modeling code (``key`` None), or read from ``key`` with the
    config class's ``default``."""

    key: str | None = None
    default: bool = False


@dataclass(frozen=True)
class Experts:
    """Where a mixture-of-experts family keeps its expert counts, and which layers have experts."""

    count_key: str  # the number of routed experts
    width_key: str | None = "moe_intermediate_size"  # each expert's width; None: the dense d_ff (Mixtral)
    width_default: int | None = None  # the class default when absent (None: the key is required)
    layout: str = "all"  # "all" | "sparse_step" (decoder_sparse_step, mlp_only_layers) | "first_k_dense"
    first_dense_default: int = 0  # first_k_dense_replace when absent
    shared: bool = False  # n_shared_experts of the expert width each
    router_bias: bool = False  # a per-expert score correction, router kept in fp32 (DeepSeek-V3)
    # norm_topk_prob: (its class default, the eager ops renormalizing the top-k weights adds to the router)
    renormalize: tuple[bool, int] = (False, 0)


# Launch counts of transformers' eager modules, by kernel role, where a family differs from the
# common table in roofline.py (which says how each was counted). Entries are (16-bit, fp32) or one
# count for both.
EagerCounts = tuple[tuple[str, "int | tuple[int, int]"], ...]


@dataclass(frozen=True)
class Family:
    model_type: str
    # where the dimensions are kept, where the family renames them (GPT-2's n_embd, n_layer, n_head)
    d_model_key: str = "hidden_size"
    n_layers_key: str = "num_hidden_layers"
    n_heads_key: str = "num_attention_heads"
    d_ff_key: str = "intermediate_size"
    d_ff_default: int | None = None  # None: required (unless d_ff_per_d)
    d_ff_per_d: int = 0  # GPT-2: n_inner absent means 4·D
    gqa: bool = True  # reads num_key_value_heads (else every head has its own K and V)
    kv_default: int | None = None  # num_key_value_heads when absent; None: = num_attention_heads
    head_dim_key: bool = True  # reads head_dim (else hidden_size / num_attention_heads)
    head_dim_default: int | None = None
    tie_default: bool = False
    window_default: int | None = None  # sliding_window when absent
    layers: str = "full"  # "full" | "window" (all sliding when a window is set) | "alternate" (even layers
    #                       sliding) | "qwen" (use_sliding_window: layers from max_window_layers on)
    window_required: bool = False
    act_keys: tuple[str, ...] = ("hidden_act",)  # the first that is set names the activation
    act_default: str = "silu"
    gelu_is_tanh: bool = False  # Gemma reads a legacy "gelu" as the tanh approximation
    norm: str = "rms"  # "rms" | "layer"
    block: str = "sequential"  # | "parallel" (two norms) | "parallel_shared" (one norm) | "sandwich"
    parallel_residual: Flag | None = None  # NeoX: use_parallel_residual false makes it sequential
    gated_mlp: bool = True
    fused_qkv: bool = False
    fused_gate_up: bool = False
    qkv_bias: Flag = Flag("attention_bias")
    o_bias: Flag = Flag("attention_bias")
    mlp_bias: Flag = Flag()
    qk_norm: Flag = Flag()
    rotary_keys: tuple[str, ...] = ("partial_rotary_factor",)  # () with learned positions
    rotary_default: float = 1.0
    positions: tuple[str, int, int] | None = None  # learned table: (key, class default, extra rows)
    embed_proj_key: str | None = None  # OPT's word_embed_proj_dim
    embed_scale: bool = False  # embeddings × sqrt(D)
    lm_head_bias: bool = False
    softcaps: tuple[tuple[str, float], tuple[str, float]] | None = None  # (attention, final logits)
    final_norm_off: tuple[tuple[str, bool, bool], ...] = ()  # (key, value that drops it, class default)
    experts: Experts | None = None
    mla: bool = False  # DeepSeek's latent attention
    names: tuple[tuple[str, str], ...] = ()  # role -> module name, where it differs from Llama's
    eager: EagerCounts = ()
    eager_experts: EagerCounts = ()
    # the config class's defaults for (D, L, N, F, V), filled only inside a multimodal config's text_config,
    # where the published checkpoints leave them to the class (LLaVA-1.5's Llama, PaliGemma 2's Gemma 2)
    class_sizes: tuple[int, int, int, int | None, int] = (4096, 32, 32, 11008, 32000)
    # llama.cpp's converter writes a tied embedding twice, as token_embd.weight and output.weight
    # (convert_hf_to_gguf.py GPT2Model: "GPT2 output is tied to (same as) wte in original model"): a GGUF file of
    # the family holds both tables (calculator.gguf_tied)
    gguf_two_tables: bool = False

    @property
    def eager_counts(self) -> dict:
        return dict(self.eager)


# Module names of each role as Llama's transformers code names them; a family's ``names`` override
# them. Collisions inside one model are prefixed (GPT-2's attn.c_proj and mlp.c_proj; OPT's per-layer
# and final final_layer_norm).
LLAMA_NAMES = {
    "embed": "embed_tokens", "pos_embed": "embed_positions", "input_norm": "input_layernorm",
    "q": "q_proj", "k": "k_proj", "v": "v_proj", "qkv": "qkv_proj", "o": "o_proj",
    "post_attn_norm": "post_attention_layernorm", "pre_mlp_norm": "pre_feedforward_layernorm",
    "post_mlp_norm": "post_feedforward_layernorm", "gate": "gate_proj", "up": "up_proj", "gate_up": "gate_up_proj",
    "down": "down_proj", "fc_in": "fc1", "fc_out": "fc2", "final_norm": "norm", "lm_head": "lm_head",
}

NONE = Flag()
ALWAYS = Flag(None, True)
GEMMA_ACT = dict(act_keys=("hidden_activation", "hidden_act"), act_default="gelu_pytorch_tanh", gelu_is_tanh=True)
DEEPSEEK = dict(gqa=False, head_dim_key=False, mla=True)

_RECORDS = (
    Family("llama", mlp_bias=Flag("mlp_bias")),
    Family("mistral", kv_default=8, window_default=4096, layers="window", qkv_bias=NONE, o_bias=NONE,
           class_sizes=(4096, 32, 32, 14336, 32000)),
    Family("qwen2", kv_default=32, layers="qwen", qkv_bias=ALWAYS, o_bias=NONE,  # bias hard-coded on q, k, v
           class_sizes=(4096, 32, 32, 22016, 151936)),
    Family("qwen3", kv_default=32, head_dim_default=128, layers="qwen", qk_norm=ALWAYS,
           class_sizes=(4096, 32, 32, 22016, 151936)),
    Family("gemma", kv_default=16, head_dim_default=256, tie_default=True, embed_scale=True, **GEMMA_ACT,
           eager=(("rms_norm", (10, 7)),), class_sizes=(3072, 28, 16, 24576, 256000)),
    Family("gemma2", kv_default=4, head_dim_default=256, tie_default=True, window_default=4096, layers="alternate",
           class_sizes=(2304, 26, 8, 9216, 256000),
           window_required=True, embed_scale=True, block="sandwich", **GEMMA_ACT,
           softcaps=(("attn_logit_softcapping", 50.0), ("final_logit_softcapping", 30.0)),
           eager=(("rms_norm", (10, 7)), ("attention", (12, 10)))),
    Family("phi3", layers="window", fused_qkv=True, fused_gate_up=True, qkv_bias=NONE, o_bias=NONE,
           class_sizes=(3072, 32, 32, 8192, 32064),
           eager=(("rotary", 12),)),
    Family("mixtral", kv_default=8, layers="window", qkv_bias=NONE, o_bias=NONE,
           class_sizes=(4096, 32, 32, 14336, 32000),
           experts=Experts("num_local_experts", width_key=None), eager=(("router", (6, 5)),)),
    Family("qwen3_moe", kv_default=4, layers="qwen", qk_norm=ALWAYS, o_bias=NONE,
           class_sizes=(2048, 24, 32, 6144, 151936),
           experts=Experts("num_experts", width_default=768, layout="sparse_step", renormalize=(False, 2)),
           eager=(("router", (5, 3)),), eager_experts=(("experts.down_proj", 6),)),
    Family("deepseek_v2", **DEEPSEEK, experts=Experts("n_routed_experts", layout="first_k_dense", shared=True),
           class_sizes=(4096, 32, 32, 11008, 102400),
           eager=(("router", (5, 4)), ("rotary", (6, 2)), ("attention", 4))),
    Family("deepseek_v3", **DEEPSEEK, class_sizes=(7168, 61, 128, 18432, 129280),
           experts=Experts("n_routed_experts", layout="first_k_dense", first_dense_default=3, shared=True,
                           router_bias=True, renormalize=(True, 3)),
           eager=(("router", (15, 14)), ("rotary", 14), ("attention", 4))),
    Family("gpt2", d_model_key="n_embd", n_layers_key="n_layer", n_heads_key="n_head", d_ff_key="n_inner",
           class_sizes=(768, 12, 12, None, 50257),
           d_ff_per_d=4, gqa=False, head_dim_key=False, tie_default=True, act_keys=("activation_function",),
           act_default="gelu_new", norm="layer", gated_mlp=False, fused_qkv=True,
           qkv_bias=ALWAYS, o_bias=ALWAYS, mlp_bias=ALWAYS, rotary_keys=(), rotary_default=0.0,
           positions=("n_positions", 1024, 0), gguf_two_tables=True,
           names=(("embed", "wte"), ("pos_embed", "wpe"), ("input_norm", "ln_1"), ("qkv", "c_attn"),
                  ("o", "attn.c_proj"), ("post_attn_norm", "ln_2"), ("fc_in", "c_fc"), ("fc_out", "mlp.c_proj"),
                  ("final_norm", "ln_f"))),
    Family("gpt_neox", gqa=False, head_dim_key=False, act_default="gelu", norm="layer", block="parallel",
           class_sizes=(6144, 44, 64, 24576, 50432),
           parallel_residual=Flag("use_parallel_residual", True), gated_mlp=False, fused_qkv=True,
           qkv_bias=Flag("attention_bias", True), o_bias=Flag("attention_bias", True),
           mlp_bias=Flag("attention_bias", True), rotary_keys=("rotary_pct", "partial_rotary_factor"),
           rotary_default=0.25, eager=(("rotary", 12),),
           names=(("embed", "embed_in"), ("qkv", "query_key_value"), ("o", "dense"), ("fc_in", "dense_h_to_4h"),
                  ("fc_out", "dense_4h_to_h"), ("final_norm", "final_layer_norm"))),
    Family("opt", d_ff_key="ffn_dim", d_ff_default=3072, gqa=False, head_dim_key=False, tie_default=True,
           class_sizes=(768, 12, 12, 3072, 50272),
           act_keys=("activation_function",), act_default="relu", norm="layer", gated_mlp=False,
           qkv_bias=Flag("enable_bias", True), o_bias=Flag("enable_bias", True), mlp_bias=Flag("enable_bias", True),
           rotary_keys=(), rotary_default=0.0, positions=("max_position_embeddings", 2048, 2),  # OPT's offset of 2
           embed_proj_key="word_embed_proj_dim",
           final_norm_off=(("do_layer_norm_before", False, True), ("_remove_final_layer_norm", True, False)),
           eager=(("attention", 2),),
           names=(("input_norm", "self_attn_layer_norm"), ("o", "out_proj"), ("post_attn_norm", "final_layer_norm"),
                  ("final_norm", "decoder.final_layer_norm"))),
    Family("phi", head_dim_key=False, act_default="gelu_new", norm="layer", block="parallel_shared",
           class_sizes=(2048, 24, 32, 8192, 51200),
           gated_mlp=False, qkv_bias=ALWAYS, o_bias=ALWAYS, mlp_bias=ALWAYS, rotary_default=0.5,
           qk_norm=Flag("qk_layernorm"), lm_head_bias=True, eager=(("rotary", 12),),
           names=(("o", "dense"), ("final_norm", "final_layernorm"))),
)
FAMILIES: dict[str, Family] = {f.model_type: f for f in _RECORDS}
SUPPORTED_FAMILIES = tuple(sorted(FAMILIES))
# the record that reads a config of another model_type holding DeepSeek's latent attention (Kimi-K2's), where a
# serving engine absorbs it and a trace would count transformers' expansion (cli._latent_as_deepseek)
LATENT_FAMILY = "deepseek_v3"

# Config keys that change a model's shape or cost in some family. Under --family, a key of these the
# borrowed family does not read (and that is set to something) is a model it cannot represent.
STRUCTURAL_KEYS = frozenset({
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size", "n_embd", "n_layer",
    "n_head", "n_inner", "ffn_dim", "num_key_value_heads", "head_dim", "tie_word_embeddings", "sliding_window",
    "use_sliding_window", "max_window_layers", "layer_types", "hidden_act", "hidden_activation",
    "activation_function", "attention_bias", "mlp_bias", "enable_bias", "qk_layernorm", "partial_rotary_factor",
    "rotary_pct", "rotary_dim", "use_parallel_residual", "parallel_attn", "n_positions", "word_embed_proj_dim",
    "do_layer_norm_before", "_remove_final_layer_norm", "attn_logit_softcapping", "final_logit_softcapping",
    "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
    "n_shared_experts", "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers",
    "first_k_dense_replace", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    "multi_query", "new_decoder_architecture", "num_kv_heads", "query_pre_attn_scalar", "use_qk_norm",
})


def family(model_type: str) -> Family | None:
    return FAMILIES.get(model_type)


__all__ = ["ALWAYS", "Experts", "FAMILIES", "Family", "Flag", "LLAMA_NAMES", "NONE", "STRUCTURAL_KEYS", "SUPPORTED_FAMILIES",
           "family"]
