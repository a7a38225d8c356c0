"""Model shapes: the only module that knows HuggingFace config.json key names.

A config is data, never code: it is read as JSON, checked, and turned into a frozen
:class:`ModelShape`.  Where a key is absent, the family's default is the default of the
transformers config class of that ``model_type`` (tests check each one against the class).
An explicit ``head_dim`` always wins over ``hidden_size / num_attention_heads``.

Letters (the vocabulary of "How to Scale Your Model", jax-ml/scaling-book):
L layers, D d_model, N query heads, K KV heads, H head dim, F d_ff, V vocab.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RoofcalcError

CATALOG_PATH = Path(__file__).parent / "data" / "models.json"

# Sanity limits: a config beyond these is a typo or a corrupted file, not a model.
MAX_DIM = 1 << 20  # d_model, d_ff, heads, head_dim
MAX_LAYERS = 10_000
MAX_VOCAB = 1 << 24

ACTIVATIONS = {  # HF name -> roofcalc name
    "silu": "silu",
    "swish": "silu",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu": "gelu",
    "relu": "relu",
}


# --------------------------------------------------------------------------- config keys


def _int(cfg: dict, key: str, default: Any = None, *, required: bool = False, limit: int = MAX_DIM) -> Any:
    """A positive integer under ``key`` (or ``default`` when the key is absent or null)."""
    value = cfg.get(key)
    if value is None:
        if required:
            raise RoofcalcError(f"config.json has no '{key}'; every {cfg.get('model_type', 'model')} config needs it")
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise RoofcalcError(f"'{key}' must be a positive integer, got {value!r}")
    if value <= 0:
        raise RoofcalcError(f"'{key}' must be a positive integer, got {value}")
    if value > limit:
        raise RoofcalcError(f"'{key}' = {value:,} is beyond any real model (limit {limit:,}); check the config")
    return value


def _bool(cfg: dict, key: str, default: bool) -> bool:
    value = cfg.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RoofcalcError(f"'{key}' must be true or false, got {value!r}")
    return value


def _activation(name: Any, key: str) -> str:
    if name not in ACTIVATIONS:
        raise RoofcalcError(f"'{key}' = {name!r} is not an activation roofcalc knows ({', '.join(sorted(ACTIVATIONS))})")
    return ACTIVATIONS[name]


def _layer_types(cfg: dict, n_layers: int, window: int | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """Per-layer attention type; an explicit ``layer_types`` list wins."""
    explicit = cfg.get("layer_types")
    if explicit is None:
        return default
    names = {"full_attention": "full", "sliding_attention": "sliding"}
    if not isinstance(explicit, list) or len(explicit) != n_layers or any(t not in names for t in explicit):
        raise RoofcalcError(
            f"'layer_types' must list {n_layers} entries of 'full_attention' or 'sliding_attention'"
        )
    types = tuple(names[t] for t in explicit)
    if "sliding" in types and window is None:
        raise RoofcalcError("'layer_types' names sliding layers but 'sliding_window' is null")
    return types


# Defaults of transformers' config class for each model_type (checked in tests against the classes):
#   num_key_value_heads when absent (None: = num_attention_heads, MHA), head_dim when absent
#   (None: hidden_size / num_attention_heads), tie_word_embeddings when absent, sliding_window when absent.
FAMILY_DEFAULTS = {
    "llama": (None, None, False, None),
    "mistral": (8, None, False, 4096),
    "qwen2": (32, None, False, None),
    "qwen3": (32, 128, False, None),
    "gemma": (16, 256, True, None),
    "gemma2": (4, 256, True, 4096),
    "phi3": (None, None, False, None),
    "mixtral": (8, None, False, None),
    "qwen3_moe": (4, None, False, None),
    "deepseek_v2": (32, None, False, None),
    "deepseek_v3": (128, None, False, None),
    "gpt2": (None, None, True, None),
    "gpt_neox": (None, None, False, None),
    "opt": (None, None, True, None),
    "phi": (None, None, False, None),
}
SUPPORTED_FAMILIES = tuple(sorted(FAMILY_DEFAULTS))

# Module names of each role, as the family's transformers code names its modules. Kernels carry
# these names; roles not listed take the Llama names. Collisions inside one model are prefixed
# (GPT-2's attn.c_proj and mlp.c_proj; OPT's per-layer and final final_layer_norm).
LLAMA_NAMES = {
    "embed": "embed_tokens", "pos_embed": "embed_positions", "input_norm": "input_layernorm",
    "q": "q_proj", "k": "k_proj", "v": "v_proj", "qkv": "qkv_proj", "o": "o_proj",
    "post_attn_norm": "post_attention_layernorm", "pre_mlp_norm": "pre_feedforward_layernorm",
    "post_mlp_norm": "post_feedforward_layernorm", "gate": "gate_proj", "up": "up_proj", "gate_up": "gate_up_proj",
    "down": "down_proj", "fc_in": "fc1", "fc_out": "fc2", "final_norm": "norm", "lm_head": "lm_head",
}
FAMILY_NAMES = {
    "gpt2": {"embed": "wte", "pos_embed": "wpe", "input_norm": "ln_1", "qkv": "c_attn", "o": "attn.c_proj",
             "post_attn_norm": "ln_2", "fc_in": "c_fc", "fc_out": "mlp.c_proj", "final_norm": "ln_f"},
    "gpt_neox": {"embed": "embed_in", "qkv": "query_key_value", "o": "dense", "fc_in": "dense_h_to_4h",
                 "fc_out": "dense_4h_to_h", "final_norm": "final_layer_norm"},
    "opt": {"input_norm": "self_attn_layer_norm", "o": "out_proj", "post_attn_norm": "final_layer_norm",
            "final_norm": "decoder.final_layer_norm"},
    "phi": {"o": "dense", "final_norm": "final_layernorm"},
}


@dataclass(frozen=True)
class MoE:
    """Routed experts (and shared ones) replacing the MLP in some layers."""

    n_experts: int  # E routed experts
    top_k: int  # k experts per token
    d_expert: int  # each expert's FFN width
    d_shared: int = 0  # the shared-expert MLP's width (0: none); DeepSeek: moe_intermediate_size x n_shared_experts


@dataclass(frozen=True)
class MLA:
    """DeepSeek's multi-head latent attention: K and V are cached as one compressed latent."""

    q_lora_rank: int | None  # None: a plain q_proj
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def cached_per_token(self) -> int:
        """Values cached per token per layer: the latent and the shared rotary key."""
        return self.kv_lora_rank + self.qk_rope_head_dim


@dataclass(frozen=True)
class ModelShape:
    """What the cost model needs to know about a decoder-only transformer."""

    name: str
    model_type: str
    n_layers: int  # L
    d_model: int  # D
    n_heads: int  # N
    n_kv_heads: int  # K
    head_dim: int  # H
    d_ff: int  # F (dense MLP)
    vocab_size: int  # V
    tie_word_embeddings: bool
    qkv_bias: bool  # bias on q, k, v
    o_bias: bool  # bias on the output projection
    mlp_bias: bool  # bias on the MLP's linears
    qk_norm: bool  # per-head RMSNorm on q and k (Qwen3)
    activation: str  # "silu" | "gelu_tanh" | "gelu" | "relu"
    embed_scale: bool  # embeddings multiplied by sqrt(D) (Gemma)
    rotary_dim: int  # head dims that rotary touches (H unless partial); 0 with learned positions
    sliding_window: int | None
    layer_types: tuple[str, ...]  # "full" | "sliding", one per layer
    max_position_embeddings: int | None = None
    family: str = ""  # the family the config was read as (= model_type unless --family)
    norm: str = "rms"  # "rms" | "layer" (LayerNorm with a bias)
    block: str = "sequential"  # | "parallel" (NeoX: two norms) | "parallel_shared" (Phi: one) | "sandwich" (Gemma 2)
    gated_mlp: bool = True  # act(gate) x up -> down; else fc_in -> act -> fc_out
    fused_qkv: bool = False
    fused_gate_up: bool = False
    position_rows: int = 0  # learned position table rows (0: rotary positions)
    lm_head_bias: bool = False
    attn_softcap: float | None = None  # Gemma 2: tanh soft-capping of attention scores
    final_softcap: float | None = None  # and of the logits
    embed_dim: int | None = None  # OPT word_embed_proj_dim when it differs from D (project_in / project_out)
    final_norm: bool = True
    moe: MoE | None = None
    mlp_types: tuple[str, ...] = ()  # "dense" | "moe" per layer (empty: all dense)
    mla: MLA | None = None
    weight_format: str | None = None  # the checkpoint's declared weight dtype (quantization_config)
    config_dtype: str | None = None  # the checkpoint's torch_dtype (or dtype): fp32, bf16, fp16, or None
    names: tuple[tuple[str, str], ...] = ()  # role -> module name overrides
    hf_activation: str = ""  # the config's own activation name (gelu_new runs as several eager ops)

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    def name_of(self, role: str) -> str:
        return dict(self.names).get(role, LLAMA_NAMES[role])

    @property
    def layer_mlp_types(self) -> tuple[str, ...]:
        return self.mlp_types or ("dense",) * self.n_layers


def _float(cfg: dict, key: str, default: float | None) -> float | None:
    value = cfg.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise RoofcalcError(f"'{key}' must be a positive number, got {value!r}")
    return float(value)


def _fraction(cfg: dict, keys: tuple[str, ...], default: float) -> float:
    """A fraction in (0, 1] under the first key present (also inside rope_parameters)."""
    rope = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
    for key in keys:
        for where in (cfg, rope):
            if where.get(key) is not None:
                value = where[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                    raise RoofcalcError(f"'{key}' must be a fraction in (0, 1], got {value!r}")
                return float(value)
    return default


def _moe(cfg: dict, name: str, fam: str, n_layers: int, d_ff: int) -> tuple[MoE, tuple[str, ...]]:
    """Routed experts: how many, top-k, widths, and which layers have them."""
    # The expert count and top-k decide every MoE number; a config without them is refused rather
    # than read with the config class's default (8 or 256 experts is a guess, not a fact).
    count_key = {"mixtral": "num_local_experts", "qwen3_moe": "num_experts"}.get(fam, "n_routed_experts")
    for key in (count_key, "num_experts_per_tok"):
        if cfg.get(key) is None:
            raise RoofcalcError(f"{name}: a {fam} config needs '{key}' "
                                f"({'the number of routed experts' if key == count_key else 'experts per token'})")
    n_exp = _int(cfg, count_key)
    top_k = _int(cfg, "num_experts_per_tok")
    if top_k > n_exp:
        raise RoofcalcError(f"{name}: num_experts_per_tok {top_k} is more than the {n_exp} experts ({count_key})")
    if fam == "mixtral":
        moe = MoE(n_exp, top_k, d_ff)
        return moe, ("moe",) * n_layers
    d_expert = _int(cfg, "moe_intermediate_size", 768 if fam == "qwen3_moe" else None, required=fam != "qwen3_moe")
    if fam == "qwen3_moe":
        step = _int(cfg, "decoder_sparse_step", 1, limit=MAX_LAYERS)
        dense_only = cfg.get("mlp_only_layers") or []
        if not isinstance(dense_only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense_only):
            raise RoofcalcError(f"{name}: 'mlp_only_layers' must be a list of layer indices")
        types = tuple("moe" if i not in dense_only and (i + 1) % step == 0 else "dense" for i in range(n_layers))
        return MoE(n_exp, top_k, d_expert), types
    shared = cfg.get("n_shared_experts") or 0
    if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
        raise RoofcalcError(f"{name}: 'n_shared_experts' must be a whole number, got {shared!r}")
    first = cfg.get("first_k_dense_replace", 3 if fam == "deepseek_v3" else 0)
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise RoofcalcError(f"{name}: 'first_k_dense_replace' must be a whole number, got {first!r}")
    types = tuple("dense" if i < first else "moe" for i in range(n_layers))
    return MoE(n_exp, top_k, d_expert, d_expert * shared), types


def _mla(cfg: dict, name: str, fam: str) -> MLA:
    # absent: the config class's default 1536; null: no q LoRA (a plain q_proj), as in V2-Lite
    q_lora = None if "q_lora_rank" in cfg and cfg["q_lora_rank"] is None else _int(cfg, "q_lora_rank", 1536)
    return MLA(
        q_lora_rank=q_lora,
        kv_lora_rank=_int(cfg, "kv_lora_rank", 512),
        qk_nope_head_dim=_int(cfg, "qk_nope_head_dim", 128),
        qk_rope_head_dim=_int(cfg, "qk_rope_head_dim", 64),
        v_head_dim=_int(cfg, "v_head_dim", 128),
    )


def _weight_format(cfg: dict, name: str) -> str | None:
    """The weight dtype a quantization_config declares (None: the checkpoint's float dtype)."""
    q = cfg.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, dict):
        raise RoofcalcError(f"{name}: 'quantization_config' must be an object")
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        block = q.get("weight_block_size")
        if block is None:
            return "fp8"
        if block != [128, 128]:
            raise RoofcalcError(f"{name}: fp8 weight_block_size {block} is not supported (only [128, 128])")
        return "fp8-b128"
    bits = q.get("bits") or q.get("w_bit")
    if method in ("gptq", "awq") and bits in (4, 8):
        return f"int{bits}"
    if method == "bitsandbytes":
        return "int4" if q.get("load_in_4bit") else "int8"
    raise RoofcalcError(f"{name}: quantization_config quant_method '{method}' is not known; pass --weight-dtype")


def _config_dtype(cfg: dict) -> str | None:
    """The dtype the checkpoint was saved in: torch_dtype (transformers 4) or dtype (5), if one of ours."""
    value = cfg.get("torch_dtype", cfg.get("dtype"))
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(value) if isinstance(value, str) else None


def shape_from_config(cfg: Any, name: str = "model", family: str | None = None) -> ModelShape:
    """Build a :class:`ModelShape` from a parsed config.json.

    ``family`` reads a config whose ``model_type`` roofcalc does not know as a known family
    (a fine-tune with a custom type); it is never guessed.
    """
    if not isinstance(cfg, dict):
        raise RoofcalcError(f"{name}: config.json must hold a JSON object, got {type(cfg).__name__}")
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise RoofcalcError(f"{name}: config.json has no 'model_type'; pass --family to say which family it is")
    fam = family or model_type
    text = cfg.get("text_config")
    if fam not in FAMILY_DEFAULTS and family is None and isinstance(text, dict) and \
            text.get("model_type") in FAMILY_DEFAULTS:
        # a multimodal config (vision + language): the language model is what decodes
        from dataclasses import replace

        inner = shape_from_config(text, name)
        return replace(inner, model_type=f"{model_type} (text_config: {inner.model_type})")
    if fam not in FAMILY_DEFAULTS:
        hint = "" if family else " (or pass --family NAME to read it as one of them)"
        raise RoofcalcError(
            f"{name}: model_type '{fam}' is not supported; supported: {', '.join(SUPPORTED_FAMILIES)}{hint}"
        )
    kv_default, hd_default, tie_default, window_default = FAMILY_DEFAULTS[fam]
    gpt2 = fam == "gpt2"
    key = {"hidden_size": "n_embd", "num_hidden_layers": "n_layer", "num_attention_heads": "n_head"} if gpt2 else {}

    d = _int(cfg, key.get("hidden_size", "hidden_size"), required=True)
    n_layers = _int(cfg, key.get("num_hidden_layers", "num_hidden_layers"), required=True, limit=MAX_LAYERS)
    n_heads = _int(cfg, key.get("num_attention_heads", "num_attention_heads"), required=True)
    if gpt2:
        d_ff = _int(cfg, "n_inner", 4 * d)
    elif fam == "opt":
        d_ff = _int(cfg, "ffn_dim", 3072)
    else:
        d_ff = _int(cfg, "intermediate_size", required=True)
    vocab = _int(cfg, "vocab_size", required=True, limit=MAX_VOCAB)
    n_kv = _int(cfg, "num_key_value_heads", kv_default if kv_default is not None else n_heads)
    if fam in ("gpt2", "gpt_neox", "opt", "deepseek_v2", "deepseek_v3"):
        n_kv = n_heads  # no GQA in these families (MLA's num_key_value_heads is nominal)
    derived = fam in ("gpt2", "gpt_neox", "opt", "phi", "deepseek_v2", "deepseek_v3")  # no head_dim key read
    head_dim = None if derived else _int(cfg, "head_dim", hd_default)
    if head_dim is None:
        if d % n_heads:
            raise RoofcalcError(
                f"{name}: hidden_size {d} is not divisible by num_attention_heads {n_heads}; "
                "set 'head_dim' explicitly if the model uses one"
            )
        head_dim = d // n_heads
    if n_heads % n_kv:
        raise RoofcalcError(
            f"{name}: num_attention_heads {n_heads} is not a multiple of num_key_value_heads {n_kv}"
        )

    if fam in ("gemma", "gemma2"):
        # transformers reads Gemma's legacy hidden_act "gelu" as the tanh approximation.
        act_key = "hidden_activation" if cfg.get("hidden_activation") is not None else "hidden_act"
        act_name = cfg.get(act_key, "gelu_pytorch_tanh")
        activation = "gelu_tanh" if act_name == "gelu" else _activation(act_name, act_key)
    elif fam in ("gpt2", "opt"):
        act_name = cfg.get("activation_function", "gelu_new" if gpt2 else "relu")
        activation = _activation(act_name, "activation_function")
    else:
        act_name = cfg.get("hidden_act", {"gpt_neox": "gelu", "phi": "gelu_new"}.get(fam, "silu"))
        activation = _activation(act_name, "hidden_act")

    window = _int(cfg, "sliding_window", None) if "sliding_window" in cfg else window_default
    if fam in ("mistral", "phi3", "mixtral"):
        types = ("sliding",) * n_layers if window is not None else ("full",) * n_layers
    elif fam == "gemma2":
        types = tuple("sliding" if i % 2 == 0 else "full" for i in range(n_layers))
    elif fam in ("qwen2", "qwen3", "qwen3_moe") and _bool(cfg, "use_sliding_window", False):
        first = _int(cfg, "max_window_layers", 28, limit=MAX_LAYERS)
        types = tuple("sliding" if i >= first else "full" for i in range(n_layers))
        if window is None:
            raise RoofcalcError(f"{name}: 'use_sliding_window' is true but 'sliding_window' is null")
    else:
        types = ("full",) * n_layers
    if fam == "gemma2" and window is None:
        raise RoofcalcError(f"{name}: a gemma2 config needs 'sliding_window' (its local layers)")
    types = _layer_types(cfg, n_layers, window, types)

    attention_bias = _bool(cfg, "attention_bias", fam == "gpt_neox")
    biased = {"gpt2": True, "opt": _bool(cfg, "enable_bias", True), "phi": True, "gpt_neox": attention_bias}
    # the rotated share of each head: transformers reads partial_rotary_factor (top level, or inside
    # rope_parameters) for every rotary family, NeoX also rotary_pct; Phi-4-mini rotates 96 of 128
    if fam == "gpt_neox":
        rotary_dim = int(head_dim * _fraction(cfg, ("rotary_pct", "partial_rotary_factor"), 0.25))
    elif fam == "phi":
        rotary_dim = int(head_dim * _fraction(cfg, ("partial_rotary_factor",), 0.5))
    elif fam in ("gpt2", "opt"):
        rotary_dim = 0
    else:
        rotary_dim = int(head_dim * _fraction(cfg, ("partial_rotary_factor",), 1.0))
    position_rows = 0
    if gpt2:
        position_rows = _int(cfg, "n_positions", 1024, limit=1 << 30)
    elif fam == "opt":
        position_rows = _int(cfg, "max_position_embeddings", 2048, limit=1 << 30) + 2  # OPT's offset of 2
    embed_dim = None
    if fam == "opt":
        proj = _int(cfg, "word_embed_proj_dim", d)
        embed_dim = proj if proj != d else None
    moe, mlp_types = (None, ())
    if fam in ("mixtral", "qwen3_moe", "deepseek_v2", "deepseek_v3"):
        moe, mlp_types = _moe(cfg, name, fam, n_layers, d_ff)
    mla = _mla(cfg, name, fam) if fam.startswith("deepseek") else None
    if mla is not None:
        head_dim = mla.v_head_dim  # q_dim = N·v_head_dim feeds o_proj
        rotary_dim = mla.qk_rope_head_dim
    bias_all = biased.get(fam)
    return ModelShape(
        name=name,
        model_type=model_type,
        n_layers=n_layers,
        d_model=d,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        d_ff=d_ff,
        vocab_size=vocab,
        tie_word_embeddings=_bool(cfg, "tie_word_embeddings", tie_default),
        # Qwen2 hard-codes bias on q, k, v (not o) with no config key; Mistral has none.
        qkv_bias=bias_all if bias_all is not None else
        (True if fam == "qwen2" else attention_bias and fam not in ("mistral", "phi3", "mixtral")),
        o_bias=bias_all if bias_all is not None else
        attention_bias and fam not in ("qwen2", "mistral", "phi3", "mixtral", "qwen3_moe"),
        mlp_bias=bias_all if bias_all is not None else (_bool(cfg, "mlp_bias", False) if fam == "llama" else False),
        qk_norm=fam in ("qwen3", "qwen3_moe") or (fam == "phi" and _bool(cfg, "qk_layernorm", False)),
        activation=activation,
        embed_scale=fam in ("gemma", "gemma2"),
        rotary_dim=rotary_dim,
        sliding_window=window if "sliding" in types else None,
        layer_types=types,
        max_position_embeddings=_int(cfg, "max_position_embeddings", None, limit=1 << 30),
        family=fam,
        norm="layer" if fam in ("gpt2", "gpt_neox", "opt", "phi") else "rms",
        block={"gpt_neox": "parallel" if _bool(cfg, "use_parallel_residual", True) else "sequential",
               "phi": "parallel_shared", "gemma2": "sandwich"}.get(fam, "sequential"),
        gated_mlp=fam not in ("gpt2", "gpt_neox", "opt", "phi"),
        fused_qkv=fam in ("gpt2", "gpt_neox", "phi3"),
        fused_gate_up=fam == "phi3",
        position_rows=position_rows,
        lm_head_bias=fam == "phi",
        attn_softcap=_float(cfg, "attn_logit_softcapping", 50.0) if fam == "gemma2" else None,
        final_softcap=_float(cfg, "final_logit_softcapping", 30.0) if fam == "gemma2" else None,
        embed_dim=embed_dim,
        final_norm=not (fam == "opt" and (not _bool(cfg, "do_layer_norm_before", True)
                                          or _bool(cfg, "_remove_final_layer_norm", False))),
        moe=moe,
        mlp_types=mlp_types,
        mla=mla,
        weight_format=_weight_format(cfg, name),
        config_dtype=_config_dtype(cfg),
        names=tuple(FAMILY_NAMES.get(fam, {}).items()),
        hf_activation=str(act_name),
    )


# --------------------------------------------------------------------------- where configs come from


@dataclass(frozen=True)
class CatalogEntry:
    hub_id: str
    aliases: tuple[str, ...]
    config: dict
    params_total: int
    params_active: int | None
    params_source: str

    @property
    def supported(self) -> bool:
        return self.config.get("model_type") in FAMILY_DEFAULTS


_catalog: tuple[CatalogEntry, ...] | None = None


def catalog() -> tuple[CatalogEntry, ...]:
    """The built-in offline catalog (package data ``data/models.json``)."""
    global _catalog
    if _catalog is None:
        raw = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
        _catalog = tuple(
            CatalogEntry(
                hub_id=m["hub_id"],
                aliases=tuple(m.get("aliases", ())),
                config=m["config"],
                params_total=m["params"]["total"],
                params_active=m["params"].get("active"),
                params_source=m["params"]["source"],
            )
            for m in raw["models"]
        )
    return _catalog


def find_in_catalog(name: str) -> CatalogEntry | None:
    """Exact (case-insensitive) match on a hub id or a documented alias; never a substring."""
    key = name.strip().lower()
    for entry in catalog():
        if key == entry.hub_id.lower() or key in (a.lower() for a in entry.aliases):
            return entry
    return None


HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def _read_json(path: Path) -> Any:
    from .inputs import read_json

    return read_json(path, "config")


def _reachable(url: str, timeout_s: float = 1.5) -> bool:
    """Whether a TCP connection to the host of ``url`` opens within ``timeout_s`` (DNS included).

    huggingface_hub retries an unreachable hub for ~30 s; this probe answers in under 2 s."""
    import socket
    import threading
    from urllib.parse import urlparse

    parsed = urlparse(url)
    host, port = parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80)
    result: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s + 0.5)
    return bool(result and result[0])


def _hub_config(repo_id: str, revision: str | None = None) -> Path:
    """config.json of a hub repo at ``revision`` (a branch, tag or commit; the hub library's default
    when None): the local HF cache first, then the hub unless offline."""
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "2")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "2")
    how = "download its config.json and pass the path (roofcalc ./config.json), or pick a catalog name (roofcalc models)"
    try:
        from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers brings it
        raise RoofcalcError(f"'{repo_id}' is not in the catalog and huggingface_hub is not installed; {how}") from None
    from .inputs import env_name_offline, one_line

    try:
        cached = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # the hub library's own validation of the id (HFValidationError)
        raise RoofcalcError(f"'{one_line(repo_id)}' is not a valid hub id (owner/name of letters, digits, '-', '_' "
                            f"and '.', not starting or ending with '.' or '-', no '--' or '..')") from None
    if isinstance(cached, str):
        return Path(cached)
    if constants.HF_HUB_OFFLINE:  # HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE
        var = env_name_offline() or "HF_HUB_OFFLINE"
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache and {var} is set; {how}")
    if not _reachable(constants.ENDPOINT):
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache, and {constants.ENDPOINT} "
                            f"cannot be reached; {how}")
    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision, etag_timeout=2))
    except Exception as exc:  # repo missing, gated, network lost...
        raise RoofcalcError(f"cannot fetch '{repo_id}' from the hub ({type(exc).__name__}); {how}") from None


def load_config(source: str, revision: str | None = None) -> tuple[dict, str, str, CatalogEntry | None]:
    """Resolve ``source`` to (config dict, model name, origin, catalog entry or None).

    In order: a path to a config.json or a folder holding one; a catalog hub id or alias;
    any other hub id (HF cache, then the hub).
    """
    from .inputs import one_line

    if not isinstance(source, str) or not source.strip():
        raise RoofcalcError("no model given: pass a config.json, a folder, a catalog name or a hub id")
    if len(source) > 1024 or any(not ch.isprintable() for ch in source):
        raise RoofcalcError(f"'{one_line(source)[:80]}' is not a file, a catalog name or a hub id")
    path = Path(os.path.expanduser(source))
    try:
        path.stat()
    except OSError as exc:
        if exc.errno not in (2, 20):  # not "no such file": a loop, a name too long, no permission
            raise RoofcalcError(f"cannot read {one_line(source)[:200]}: {exc.strerror}") from None
    if path.is_dir():
        file = path / "config.json"
        if not file.is_file():
            raise RoofcalcError(f"folder {path} has no config.json")
        return _read_json(file), str(path), "file", None
    if path.is_file():
        return _read_json(path), str(path), "file", None
    entry = find_in_catalog(source) if revision is None else None  # a revision asks the hub, not the catalog
    if entry is not None:
        return dict(entry.config), entry.hub_id, "catalog", entry
    if source.endswith(".json") or source.startswith((".", "/", "~")) or os.sep in source and not HUB_ID.match(source):
        raise RoofcalcError(f"no such file: {source}")
    if not HUB_ID.match(source):
        raise RoofcalcError(
            f"'{source}' is not a file, a catalog name or a hub id (owner/name); 'roofcalc models' lists the catalog"
        )
    return _read_json(_hub_config(source, revision)), source + (f"@{revision}" if revision else ""), "hub", None


def load_shape(source: str, family: str | None = None, revision: str | None = None) -> ModelShape:
    """Read a model shape from a path, a catalog name or a hub id (at ``revision`` for a hub id)."""
    cfg, name, _, _ = load_config(source, revision)
    return shape_from_config(cfg, name, family)
