"""Model shapes: a parsed config.json read through its family's record into a frozen :class:`ModelShape`.

A config is data, never code. Its family's record (:mod:`roofcalc.families`) says which keys hold
what and what the transformers config class defaults to when a key is absent; one
:class:`ConfigReader` checks every key once. An explicit ``head_dim`` always wins over
``hidden_size / num_attention_heads``. Where configs come from is :mod:`roofcalc.sources`.

Letters (the vocabulary of "How to Scale Your Model", jax-ml/scaling-book):
L layers, D d_model, N query heads, K KV heads, H head dim, F d_ff, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .errors import RoofcalcError, UnsupportedModelType
from .families import FAMILIES, LLAMA_NAMES, STRUCTURAL_KEYS, SUPPORTED_FAMILIES, Family, Flag
from .inputs import one_line

# Sanity limits: a config beyond these is a typo or a corrupted file, not a model.
MAX_DIM = 1 << 20  # d_model, d_ff, heads, head_dim
MAX_LAYERS = 10_000
MAX_VOCAB = 1 << 24
MAX_PARAMS = 10 ** 14  # 50x the largest published model (about 2e12): beyond it a config is a typo

ACTIVATIONS = {  # HF name -> roofcalc name
    "silu": "silu",
    "swish": "silu",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu": "gelu",
    "relu": "relu",
}


# --------------------------------------------------------------------------- reading one config


def _show(value: Any) -> str:
    return one_line(repr(value))[:60]


class ConfigReader:
    """One config's keys, each checked once; it remembers which keys it read and which defaults it took."""

    def __init__(self, cfg: dict, family: Family, sub_config: bool = False):
        self.cfg, self.family = cfg, family
        self.read: set[str] = set()
        self.defaults: dict[str, Any] = {}
        # a multimodal config's text_config: transformers' class fills absent sizes, and checkpoints rely on it
        self.class_sizes = {}
        if sub_config:
            f = family
            self.class_sizes = {k: v for k, v in zip((f.d_model_key, f.n_layers_key, f.n_heads_key, f.d_ff_key,
                                                      "vocab_size"), f.class_sizes) if v is not None}
        self.class_defaults: dict[str, int] = {}

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        value = self.cfg.get(key)
        if value is None and default is not None:
            self.defaults[key] = default
        return value

    def int(self, key: str, default: Any = None, *, required: bool = False, limit: int = MAX_DIM) -> Any:
        """A positive integer under ``key`` (``default`` when the key is absent or null)."""
        value = self.get(key, default)
        if value is None and required and key in self.class_sizes:
            value = self.class_defaults[key] = self.class_sizes[key]
        if value is None:
            if required:
                raise RoofcalcError(f"config.json has no '{key}'; every {self.family.model_type} config needs it")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise RoofcalcError(f"'{key}' must be a positive integer, got {_show(value)}")
        if value > limit:
            raise RoofcalcError(f"'{key}' = {value:,} is beyond any real model (limit {limit:,}); check the config")
        return value

    def count(self, key: str, default: int, limit: int = MAX_LAYERS) -> int:
        """A whole number (0 allowed) under ``key``."""
        value = self.get(key, default)
        value = default if value is None else value
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
            raise RoofcalcError(f"'{key}' must be a whole number of at most {limit:,}, got {_show(value)}")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise RoofcalcError(f"'{key}' must be true or false, got {_show(value)}")
        return value

    def flag(self, flag: Flag) -> bool:
        return flag.default if flag.key is None else self.bool(flag.key, flag.default)

    def positive(self, key: str, default: float) -> float:
        value = self.get(key, default)
        value = default if value is None else value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e30:
            raise RoofcalcError(f"'{key}' must be a positive number, got {_show(value)}")
        return float(value)

    def fraction(self, keys: tuple[str, ...], default: float) -> float:
        """A fraction in (0, 1] under the first key present (also inside rope_parameters)."""
        rope = self.cfg.get("rope_parameters") if isinstance(self.cfg.get("rope_parameters"), dict) else {}
        for key in keys:
            self.read.add(key)
            for where in (self.cfg, rope):
                if where.get(key) is not None:
                    value = where[key]
                    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                        raise RoofcalcError(f"'{key}' must be a fraction in (0, 1], got {_show(value)}")
                    return float(value)
        self.defaults[keys[0]] = default
        return default

    def activation(self) -> tuple[str, str]:
        """(roofcalc's name, the config's own name) of the MLP activation."""
        f = self.family
        for i, key in enumerate(f.act_keys):
            name = self.get(key)
            if name is not None or key in self.cfg and i == len(f.act_keys) - 1:
                break  # a null activation is no activation (only Gemma's hidden_activation falls back)
        else:
            key, name = f.act_keys[0], f.act_default
            self.defaults[key] = name
        if f.gelu_is_tanh and name == "gelu":
            return "gelu_tanh", name
        if not isinstance(name, str) or name not in ACTIVATIONS:
            raise RoofcalcError(f"'{key}' = {_show(name)} is not an activation roofcalc knows "
                                f"({', '.join(sorted(ACTIVATIONS))})")
        return ACTIVATIONS[name], name

    def unrepresented(self) -> dict[str, Any]:
        """Keys that shape a model in some family, set in this config, that its family never read."""
        return {k: v for k, v in self.cfg.items() if k in STRUCTURAL_KEYS and k not in self.read and v}

@dataclass(frozen=True)
class MoE:
    """Routed experts (and shared ones) replacing the MLP in some layers."""

    n_experts: int  # E routed experts
    top_k: int  # k experts per token
    d_expert: int  # each expert's FFN width
    d_shared: int = 0  # the shared-expert MLP's width (0: none); DeepSeek: moe_intermediate_size x n_shared_experts
    router_bias: bool = False  # a per-expert score correction, the router kept in fp32 (DeepSeek-V3)
    router_extra_ops: int = 0  # eager ops beyond the router's table: renormalizing the top-k weights
    # (norm_topk_prob), copying DeepSeek-V3's group mask (n_group > 1)


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
    weight_group: int | None = None  # and its values per scale (GPTQ/AWQ group_size; a whole row: PER_CHANNEL)
    weight_format_refusal: str = ""  # why the declared format cannot be read (the CLI refuses unless overridden)
    weight_format_where: str = ""  # where the quantization_config was found: "" the file's top, or "text_config"
    weight_scope: str = ""  # the linears it quantizes: "" every decoder linear, "experts" the routed experts alone
    # its quant_method as an engine's kernel choice reads it (_method): "awq" for AutoAWQ's GEMM layout, "awq-gemv"
    # and the like for its others, "gptq", ...; "" none declared
    weight_method: str = ""
    # an FP8 checkpoint's activation scales as its quantization_config declares them (quant_method fp8's
    # activation_scheme: "dynamic" or "static"; "" none declared), which decide vLLM's fused-MoE kernel
    weight_act_scales: str = ""
    # the KV cache format its quantization_config declares ("fp8": ModelOpt's kv_cache_quant_algo FP8, a
    # kv_cache_scheme of 8-bit floats), which an engine may take or not: reported, not taken (--kv-dtype)
    kv_format_declared: str | None = None
    config_dtype: str | None = None  # the checkpoint's torch_dtype (or dtype): fp32, bf16, fp16, or None
    config_dtype_unread: str | None = None  # a torch_dtype given that is none of those (said, not guessed at)
    names: tuple[tuple[str, str], ...] = ()  # role -> module name overrides
    hf_activation: str = ""  # the config's own activation name (gelu_new runs as several eager ops)
    borrowed: bool = False  # read through another family's record (--family)
    borrowed_defaults: tuple[tuple[str, Any], ...] = ()  # then: absent keys that family's defaults filled
    borrowed_why: str = ""  # why it was, where no --family said so (a latent attention a serving engine absorbs)
    # a multimodal config's text_config: absent sizes its config class filled (LLaVA-1.5 leaves Llama's to it)
    class_defaults: tuple[tuple[str, int], ...] = ()
    # a multimodal checkpoint read through its text_config: the parameters its encoders hold beside the language
    # model (vision or audio towers, projectors; counted by sources.with_encoders), or why they are not counted
    multimodal: bool = False
    encoder_params: int = 0
    encoders_note: str = ""

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


def _layer_types(r: ConfigReader, n_layers: int, window: int | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """Per-layer attention type; an explicit ``layer_types`` list wins."""
    explicit = r.get("layer_types")
    if explicit is None:
        return default
    names = {"full_attention": "full", "sliding_attention": "sliding"}
    if not isinstance(explicit, list) or len(explicit) != n_layers or \
            any(not isinstance(t, str) or t not in names for t in explicit):
        raise RoofcalcError(f"'layer_types' must list {n_layers} entries of 'full_attention' or 'sliding_attention'")
    types = tuple(names[t] for t in explicit)
    if "sliding" in types and window is None:
        raise RoofcalcError("'layer_types' names sliding layers but 'sliding_window' is null")
    return types


def _attention_layers(r: ConfigReader, name: str, n_layers: int) -> tuple[int | None, tuple[str, ...]]:
    """(sliding window, per-layer attention types) by the family's layer rule."""
    f, cfg = r.family, r.cfg
    if f.layers == "full" and cfg.get("layer_types") is None:
        return None, ("full",) * n_layers
    if "sliding_window" in cfg:
        window = r.int("sliding_window", None)
    else:
        window = r.get("sliding_window", f.window_default) or f.window_default
    if f.layers == "window":
        types = ("sliding" if window is not None else "full",) * n_layers
    elif f.layers == "alternate":
        types = tuple("sliding" if i % 2 == 0 else "full" for i in range(n_layers))
    elif f.layers == "qwen" and r.bool("use_sliding_window", False):
        first = r.int("max_window_layers", 28, limit=MAX_LAYERS)
        types = tuple("sliding" if i >= first else "full" for i in range(n_layers))
        if window is None:
            raise RoofcalcError(f"{name}: 'use_sliding_window' is true but 'sliding_window' is null")
    else:
        types = ("full",) * n_layers
    if f.window_required and window is None:
        raise RoofcalcError(f"{name}: a {f.model_type} config needs 'sliding_window' (its local layers)")
    types = _layer_types(r, n_layers, window, types)
    return (window if "sliding" in types else None), types


def _moe(r: ConfigReader, name: str, n_layers: int, d_ff: int) -> tuple[MoE, tuple[str, ...]]:
    """Routed experts: how many, top-k, widths, and which layers have them."""
    x, fam = r.family.experts, r.family.model_type
    # The expert count and top-k decide every MoE number; a config without them is refused rather
    # than read with the config class's default (8 or 256 experts is a guess, not a fact).
    for key in (x.count_key, "num_experts_per_tok"):
        if r.get(key) is None:
            raise RoofcalcError(f"{name}: a {fam} config needs '{key}' "
                                f"({'the number of routed experts' if key == x.count_key else 'experts per token'})")
    n_exp = r.int(x.count_key)
    top_k = r.int("num_experts_per_tok")
    if top_k > n_exp:
        raise RoofcalcError(f"{name}: num_experts_per_tok {top_k} is more than the {n_exp} experts ({x.count_key})")
    d_expert = d_ff if x.width_key is None else \
        r.int(x.width_key, x.width_default, required=x.width_default is None)
    shared = r.count("n_shared_experts", 0, limit=n_exp) if x.shared else 0
    default, ops = x.renormalize
    extra = ops if ops and r.bool("norm_topk_prob", default) else 0
    # DeepSeek-V3's group-limited routing: its group mask, expanded over each group's experts, is copied
    # when reshaped (one more eager op), unless there is one group (8 in its config class)
    if x.router_bias and r.int("n_group", 8) > 1:
        extra += 1
    moe = MoE(n_exp, top_k, d_expert, d_expert * shared, router_bias=x.router_bias, router_extra_ops=extra)
    if x.layout == "sparse_step":
        step = r.int("decoder_sparse_step", 1, limit=MAX_LAYERS)
        dense_only = r.get("mlp_only_layers") or []
        if not isinstance(dense_only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense_only):
            raise RoofcalcError(f"{name}: 'mlp_only_layers' must be a list of layer indices")
        return moe, tuple("moe" if i not in dense_only and (i + 1) % step == 0 else "dense" for i in range(n_layers))
    if x.layout == "first_k_dense":
        first = r.count("first_k_dense_replace", x.first_dense_default)
        return moe, tuple("dense" if i < first else "moe" for i in range(n_layers))
    return moe, ("moe",) * n_layers


def _mla(r: ConfigReader) -> MLA:
    # absent: the config class's default 1536; null: no q LoRA (a plain q_proj), as in V2-Lite
    q_lora = None if "q_lora_rank" in r.cfg and r.cfg["q_lora_rank"] is None else r.int("q_lora_rank", 1536)
    r.read.add("q_lora_rank")
    return MLA(
        q_lora_rank=q_lora,
        kv_lora_rank=r.int("kv_lora_rank", 512),
        qk_nope_head_dim=r.int("qk_nope_head_dim", 128),
        qk_rope_head_dim=r.int("qk_rope_head_dim", 64),
        v_head_dim=r.int("v_head_dim", 128),
    )


QUANT_FILE = "hf_quant_config.json"  # NVIDIA ModelOpt's quantization config beside config.json (sources._quant_file)


def declared_weights(cfg: dict, name: str, used: dict | None = None, shape: "ModelShape | None" = None) -> dict:
    """The ModelShape fields of the checkpoint's quantization_config: its weight format and group, where it was
    found and the linears it covers, or why they cannot be read (a refusal only where nothing overrides the
    format). ``cfg`` is the whole config.json, ``used`` the part its sizes were read from (``cfg`` itself or
    its text_config); the quantization_config is looked for there first, then in the other: a wrapper's top
    (Devstral-Small-2's mistral3, its sizes in text_config) or its text_config (Kimi-K2.5's). ``shape`` (or,
    without one, ``used``'s keys) names the decoder's linears, against which its exclusion list is read."""
    used = cfg if used is None else used
    text = cfg.get("text_config")
    other = cfg if used is not cfg else text if isinstance(text, dict) else None
    where, holder = next(((("" if d is cfg else "text_config"), d) for d in (used, other)
                          if isinstance(d, dict) and d.get("quantization_config") is not None), ("", used))
    q = holder.get("quantization_config")
    if isinstance(q, dict) and q.get("read_from") == QUANT_FILE:  # sources._quant_file's
        where = QUANT_FILE
    try:
        fmt, group = _declared(holder, name)
        sized = used if "num_hidden_layers" in used or not isinstance(text, dict) else text  # a traced wrapper's
        scope = _scope(holder.get("quantization_config"), fmt, name, shape, sized)
    except RoofcalcError as exc:
        return {"weight_format_refusal": str(exc), "weight_format_where": where,
                "kv_format_declared": _kv_declared(holder.get("quantization_config"))}
    return {"weight_format": fmt, "weight_group": group, "weight_format_where": where, "weight_scope": scope,
            "kv_format_declared": _kv_declared(holder.get("quantization_config")),
            "weight_method": _method(holder.get("quantization_config")),
            "weight_act_scales": _act_scales(holder.get("quantization_config"))}


def _act_scales(q: Any) -> str:
    """An FP8 quantization_config's activation_scheme ("dynamic" or "static"), "" for any other or none."""
    if not isinstance(q, dict) or str(q.get("quant_method", "")).lower() != "fp8":
        return ""
    scheme = q.get("activation_scheme")
    return scheme if scheme in ("dynamic", "static") else ""


def _method(q: Any) -> str:
    """A quantization_config's quant_method as an engine's choice of kernel reads it: AutoAWQ's checkpoints by their
    "version" ("gemm", its default, is "awq": the layout of its GEMM kernel; "gemv", "exllama", ... "awq-gemv"), the
    others by the method's name (lower case); "" where none is given."""
    if not isinstance(q, dict):
        return ""
    method = one_line(str(q.get("quant_method", "")).lower())[:40]
    if method == "awq":
        version = one_line(str(q.get("version") or "gemm").lower())[:20]
        return "awq" if version == "gemm" else f"awq-{version}"
    return method


def _modelopt_inner(q: dict) -> dict:
    """The object a ModelOpt config keeps its settings in: its "quantization" object where it has one (as
    hf_quant_config.json writes it), else the quantization_config itself (config.json's layout)."""
    return q["quantization"] if isinstance(q.get("quantization"), dict) else q


def _kv_declared(q) -> str | None:
    """"fp8" where a quantization_config declares an fp8 KV cache: ModelOpt's kv_cache_quant_algo (at the top or
    in its "quantization" object), a kv_cache_scheme of 8-bit floats (compressed-tensors', ModelOpt's
    config.json); else None."""
    if not isinstance(q, dict):
        return None
    inner = _modelopt_inner(q)
    scheme = q.get("kv_cache_scheme")
    if str(inner.get("kv_cache_quant_algo") or "").upper() == "FP8" or isinstance(scheme, dict) and \
            scheme.get("type") == "float" and scheme.get("num_bits") == 8:
        return "fp8"
    return None


# --------------------------------------------------------------------------- which linears a checkpoint quantizes

_PREFIXES = ("model.layers.{}.", "model.language_model.layers.{}.", "language_model.model.layers.{}.")
_EXCLUSION_KEYS = {"compressed-tensors": "ignore", "bitsandbytes": "llm_int8_skip_modules"}


def _modelopt_skip(q: dict) -> tuple[str, Any]:
    """(field, value) of a ModelOpt config's exclusion list: "ignore" in config.json's quantization_config,
    "exclude_modules" in older ones and in hf_quant_config.json's "quantization" object."""
    inner = _modelopt_inner(q)
    field = "ignore" if "ignore" in inner else "exclude_modules"
    return field, inner.get(field)


def _matcher(pattern: str, name: str):
    """compressed-tensors' "re:" patterns (re.match on the module's full name); else a module name, which
    matches that module and those inside it, wherever it sits in the tree ("lm_head", "model.vision_tower",
    gpt-oss's "model.layers.*.self_attn")."""
    import re

    try:
        if pattern.startswith("re:"):
            rx = re.compile(pattern[3:])
            return lambda n: rx.match(n) is not None
        body = r"\.".join(re.escape(part).replace(r"\*", "[^.]*") for part in pattern.split("."))
        rx = re.compile(rf"(?:.*\.)?{body}(?:\..*)?")
        return lambda n: rx.fullmatch(n) is not None
    except re.error:
        raise RoofcalcError(f"{name}: quantization_config module pattern {_show(pattern)} is not a regular expression") \
            from None


def _wildcard(pattern: str):
    """ModelOpt's exclusion patterns: shell wildcards over the module's full name (fnmatch, as vLLM reads them;
    "*" crosses dots: "*mlp.gate", "model.layers.*.self_attn*"), a plain name also matching the modules inside
    it ("lm_head", "model.visual")."""
    from fnmatch import fnmatchcase

    return lambda n: fnmatchcase(n, pattern) or fnmatchcase(n, f"{pattern}.*") or fnmatchcase(n, f"*.{pattern}") \
        or fnmatchcase(n, f"*.{pattern}.*")


def _linears(shape: "ModelShape | None", cfg: dict) -> dict[str, tuple[tuple[int, ...], tuple[str, ...]]]:
    """The decoder's linears by kind: (layer indices, module names in a layer), from the hand model's shape,
    or for a traced one from its config's keys (DeepSeek's MLA and expert keys, Llama's names otherwise)."""
    def key(k):
        v = cfg.get(k)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    if shape is not None:
        n, mla, types = shape.n_layers, shape.mla is not None, shape.layer_mlp_types
        q_lora = shape.mla.q_lora_rank is not None if shape.mla else True
        shared = bool(shape.moe and shape.moe.d_shared)
        family = shape.family
    else:
        n, mla, q_lora = min(key("num_hidden_layers"), MAX_LAYERS), "kv_lora_rank" in cfg, cfg.get("q_lora_rank") is not None
        experts = any(key(k) for k in ("n_routed_experts", "num_experts", "num_local_experts"))
        first = min(key("first_k_dense_replace"), n)
        types = ("dense",) * first + ("moe",) * (n - first) if experts else ("dense",) * n
        shared, family = bool(key("n_shared_experts")), str(cfg.get("model_type"))
    if mla:
        attn = (("self_attn.q_a_proj", "self_attn.q_b_proj") if q_lora else ("self_attn.q_proj",)) + \
            ("self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj", "self_attn.o_proj")
    elif shape is not None and shape.fused_qkv:
        attn = (f"self_attn.{shape.name_of('qkv')}", f"self_attn.{shape.name_of('o')}")
    else:
        attn = tuple(f"self_attn.{shape.name_of(r) if shape else LLAMA_NAMES[r]}" for r in ("q", "k", "v", "o"))
    gated = shape is None or shape.gated_mlp
    mlp = tuple(f"mlp.{shape.name_of(r) if shape else LLAMA_NAMES[r]}"
                for r in (("gate", "up", "down") if gated else ("fc_in", "fc_out")))
    dense = tuple(i for i, t in enumerate(types) if t == "dense")
    moe = tuple(i for i, t in enumerate(types) if t == "moe")
    box = "block_sparse_moe" if family == "mixtral" else "mlp"
    one = "shared_expert" if family.startswith("qwen") else "shared_experts"
    kinds = {"attention": (tuple(range(n)), attn), "dense MLP": (dense, mlp),
             "shared experts": (moe if shared else (), tuple(f"mlp.{one}.{m}" for m in ("gate_proj", "up_proj", "down_proj"))),
             "routed experts": (moe, tuple(f"{box}.experts.0.{m}" for m in (("w1", "w2", "w3") if box != "mlp" else
                                                                            ("gate_proj", "up_proj", "down_proj"))))}
    return {k: v for k, v in kinds.items() if v[0]}


def _scope(q: Any, fmt: str | None, name: str, shape: "ModelShape | None", cfg: dict) -> str:
    """The linears a quantization_config covers, read off its exclusion list (compressed-tensors' ignore,
    modules_to_not_convert, bitsandbytes' llm_int8_skip_modules): "" every decoder linear (the list names
    only modules outside the decoder's layers: lm_head, a vision tower), "experts" the routed experts alone
    (Kimi-K2.5: attention, shared experts and the dense layers' MLP ignored). A split roofcalc cannot count
    (the attention alone kept in 16 bits) is refused, with the flag that reads every linear one way."""
    if not isinstance(q, dict) or fmt is None or fmt == "mxfp4":  # MXFP4 is the experts' format already
        return ""
    method = one_line(str(q.get("quant_method", "")).lower())[:40]
    if method == "modelopt":
        field, given = _modelopt_skip(q)
    else:
        field = _EXCLUSION_KEYS.get(method, "modules_to_not_convert")
        given = q.get(field)
    skip = given or []
    skip = [skip] if isinstance(skip, str) else skip
    if not isinstance(skip, list) or not all(isinstance(m, str) for m in skip):
        raise RoofcalcError(f"{name}: {method} {field} must be a list of module names, got {_show(given)}")
    if not skip:
        return ""
    matchers = [_wildcard(m) if method == "modelopt" else _matcher(m, name) for m in skip[:1000]]
    kept: dict[str, str] = {}  # kind -> "all" | "part" of its linears kept in 16 bits
    for kind, (layers, modules) in _linears(shape, cfg).items():
        hits = [any(f(p.format(i) + m) for p in _PREFIXES for f in matchers) for i in layers for m in modules]
        if any(hits):
            kept[kind] = "all" if all(hits) else "part"
    kinds = _linears(shape, cfg)
    if not kept:
        return ""
    if "routed experts" in kinds and "routed experts" not in kept and set(kept) == set(kinds) - {"routed experts"} \
            and all(v == "all" for v in kept.values()):
        return "experts"
    shown = ", ".join(f"{'' if v == 'all' else 'part of '}the {k}" for k, v in kept.items())
    raise RoofcalcError(f"{name}: its quantization_config ({field}) keeps {shown} in 16 bits and quantizes the other "
                        f"linears, a split roofcalc does not count; pass --weight-dtype {fmt} to count every linear "
                        f"in {fmt}, or bf16 for none")


PER_CHANNEL = 1 << 24  # group_size -1: one scale per output row (a group wider than any row)


def _group(g, name: str) -> int | None:
    """A declared group size: values per scale, -1 for one scale per output row (PER_CHANNEL)."""
    if g is None or g == -1:
        return None if g is None else PER_CHANNEL
    if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= PER_CHANNEL:
        raise RoofcalcError(f"{name}: quantization_config group_size must be a positive integer or -1, got {_show(g)}")
    return g


def _declared(cfg: dict, name: str) -> tuple[str | None, int | None]:
    """(weight dtype, values per scale) a quantization_config declares (None: the checkpoint's float dtype;
    no group declared)."""
    q = cfg.get("quantization_config")
    if q is None:
        return None, None
    if not isinstance(q, dict):
        raise RoofcalcError(f"{name}: 'quantization_config' must be an object")
    method = one_line(str(q.get("quant_method", "")).lower())[:40]
    if method == "fp8":
        block = q.get("weight_block_size")
        if block is None:  # AutoFP8's checkpoints: a scale per matrix
            return "fp8-t", None
        if block != [128, 128]:
            raise RoofcalcError(f"{name}: fp8 weight_block_size {_show(block)} is not supported (only [128, 128])")
        return "fp8-b128", None
    if method == "fbgemm_fp8":  # FP8 (E4M3) weights with a scale per output row, activations fp8 per token
        return "fp8-ch", None  # its modules_to_not_convert: read by _scope
    if method == "bitnet":  # BitNet b1.58: "offline" checkpoints store ternary weights packed; "online" float ones
        mode = q.get("quantization_mode", "offline")
        if mode not in ("offline", "online"):
            raise RoofcalcError(f"{name}: bitnet quantization_mode must be \"offline\" or \"online\", got {_show(mode)}")
        return ("ternary" if mode == "offline" else None), None
    if method == "mxfp4":  # gpt-oss: the experts in MXFP4, the rest in the checkpoint's float dtype
        return "mxfp4", None
    if method == "compressed-tensors":
        return _compressed(q, name)
    if method == "modelopt":
        return _modelopt(q, name)
    bits = q.get("bits") or q.get("w_bit")
    if method in ("gptq", "awq") and isinstance(bits, int) and bits in (4, 8):
        return f"int{bits}", _group(q.get("group_size", q.get("q_group_size")), name)
    if method in ("gptq", "awq"):  # a known method at a width roofcalc's formats do not hold (GPTQ's 2 or 3 bits)
        raise RoofcalcError(f"{name}: quantization_config {method} at bits {_show(bits)}: roofcalc counts 4- and "
                            f"8-bit weights alone; pass --weight-dtype")
    if method == "bitsandbytes":
        for key in ("load_in_4bit", "load_in_8bit", "bnb_4bit_use_double_quant"):
            if q.get(key) is not None and not isinstance(q[key], bool):
                raise RoofcalcError(f"{name}: bitsandbytes {key} must be true or false, got {_show(q[key])}")
        if q.get("load_in_4bit"):
            # NF4 in blocks of 64 values with an absmax each (bitsandbytes' Params4bit): 8-bit absmaxes when
            # double-quantized, one byte per 64 values as int4 at group 128 with fp16 scales has (to 4 bytes
            # of nested fp32 scale per 16,384); fp32 ones otherwise, 4 bytes per 64 as at group 32
            return "int4", 128 if q.get("bnb_4bit_use_double_quant") else 32
        return "int8", PER_CHANNEL  # LLM.int8(): int8 weights with a scale per output row
    raise RoofcalcError(f"{name}: quantization_config quant_method '{method}' is not known; pass --weight-dtype")


def _compressed(q: dict, name: str) -> tuple[str, int | None]:
    """(weight dtype, values per scale) of a compressed-tensors quantization_config (llm-compressor's
    checkpoints): one config group whose weights are 4- or 8-bit integers with a scale per group or per
    output row (W4A16, W8A16), or 8-bit floats (FP8, with fp8 activations or none). Integer activations
    (W8A8-INT8 GEMMs) are not modelled: refused, with the flag that reads the weights alone."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1 or not isinstance(next(iter(groups.values())), dict):
        raise RoofcalcError(f"{name}: a compressed-tensors quantization_config with other than one config group is "
                            f"not read; pass --weight-dtype")
    group = next(iter(groups.values()))
    w, a = group.get("weights"), group.get("input_activations")
    if not isinstance(w, dict):
        raise RoofcalcError(f"{name}: compressed-tensors config group without weights; pass --weight-dtype")
    bits, kind, strategy = w.get("num_bits"), w.get("type"), w.get("strategy")
    if isinstance(a, dict) and a.get("type") == "int":
        raise RoofcalcError(f"{name}: compressed-tensors int{a.get('num_bits')} activations (integer GEMMs) are not "
                            f"modelled; pass --weight-dtype int8 to read its weights as W8A16")
    if kind == "float" and bits == 8 and strategy in ("tensor", "channel"):
        return ("fp8-t" if strategy == "tensor" else "fp8-ch"), None
    if kind == "float" and bits == 8 and strategy == "block" and w.get("block_structure") == [128, 128]:
        return "fp8-b128", None
    if kind == "float" and bits == 4 and strategy == "tensor_group" and w.get("group_size") == 16:
        # NVFP4 (compressed-tensors' preset schemes NVFP4 and NVFP4A16): FP8 scales per 16 values and a global
        # one; the input quantized to NVFP4 too (W4A4) or left in 16 bits
        both = isinstance(a, dict) and a.get("type") == "float" and a.get("num_bits") == 4
        if a is not None and not both:
            what = f"{_show(a.get('type'))} {_show(a.get('num_bits'))}-bit" if isinstance(a, dict) else _show(a)
            raise RoofcalcError(f"{name}: compressed-tensors NVFP4 weights with {what} activations are not read; "
                                f"pass --weight-dtype")
        return ("nvfp4" if both else "nvfp4a16"), None
    if kind == "int" and bits in (4, 8) and strategy in ("group", "channel"):
        g = w.get("group_size") if strategy == "group" else -1
        if g is None:
            raise RoofcalcError(f"{name}: compressed-tensors group_size must be a positive integer, got null")
        return f"int{bits}", _group(g, name)
    raise RoofcalcError(f"{name}: compressed-tensors weights {_show(kind)} {_show(bits)}-bit by {_show(strategy)} "
                        f"are not read; pass --weight-dtype")


# ModelOpt's quant_algo values (upper-cased, as vLLM's ModelOptQuantConfigBase reads them) and the weight
# format each is: FP8 with a scale a tensor (and a static input scale), by channel with per-token inputs;
# NVFP4 computing in fp4 (W4A4) or W4A16
_MODELOPT = {"FP8": "fp8-t", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-ch", "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4a16"}


def _modelopt(q: dict, name: str) -> tuple[str | None, None]:
    """The weight format of NVIDIA ModelOpt's quantization_config (quant_method "modelopt": its quant_algo at
    the top, or in a "quantization" object as its hf_quant_config.json writes it). A checkpoint that mixes
    formats by layer (MIXED_PRECISION) is refused with the flags that read every linear one way."""
    inner = _modelopt_inner(q)
    algo = one_line(str(inner.get("quant_algo") or "")).upper()[:40]
    if not algo and inner.get("quant_algo") is None and "quant_algo" in inner:  # a KV cache alone is quantized
        return None, None
    if algo == "MIXED_PRECISION":
        layers = inner.get("quantized_layers")
        algos = sorted({one_line(str(v.get("quant_algo"))).upper()[:40] for v in layers.values()
                        if isinstance(v, dict)}) if isinstance(layers, dict) else []
        known = [_MODELOPT[a] for a in algos if a in _MODELOPT]
        hint = " or ".join(f"--weight-dtype {f}" for f in known) if known else "--weight-dtype"
        raise RoofcalcError(f"{name}: its ModelOpt quantization_config mixes formats by layer "
                            f"({', '.join(algos) or 'none listed'}), which roofcalc does not count; pass {hint} to "
                            f"count every linear in one")
    if algo not in _MODELOPT:
        raise RoofcalcError(f"{name}: ModelOpt quant_algo {_show(algo or None)} is not read (only "
                            f"{', '.join(_MODELOPT)}); pass --weight-dtype")
    group = inner.get("group_size")
    if _MODELOPT[algo].startswith("nvfp4") and group not in (None, 16):
        raise RoofcalcError(f"{name}: ModelOpt {algo} group_size must be 16 (NVFP4's), got {_show(group)}")
    return _MODELOPT[algo], None


def _unread_dtype(cfg: dict) -> str | None:
    """A torch_dtype (or dtype) the config gives that _config_dtype does not read ('float8'), as written."""
    value = cfg.get("torch_dtype", cfg.get("dtype"))
    return None if value is None or _config_dtype(cfg) is not None else one_line(str(value))[:40]


def _config_dtype(cfg: dict) -> str | None:
    """The dtype the checkpoint was saved in: torch_dtype (transformers 4) or dtype (5), if one of ours."""
    value = cfg.get("torch_dtype", cfg.get("dtype"))
    from .dtypes import from_config

    return from_config(value)


def shape_from_config(cfg: Any, name: str = "model", family: str | None = None, *,
                      sub_config: bool = False) -> ModelShape:
    """Build a :class:`ModelShape` from a parsed config.json, read through its family's record.

    ``family`` reads a config whose ``model_type`` roofcalc does not know as a known family (a
    fine-tune with a custom type); it is never guessed. Keys of the config that the borrowed family
    cannot represent are refused by name; the defaults it supplied are kept in ``borrowed_defaults``.
    ``sub_config``: ``cfg`` is a multimodal config's text_config, whose absent sizes take the config
    class's defaults, as transformers fills them (kept in ``class_defaults``); a top-level config must
    give its sizes.
    """
    if not isinstance(cfg, dict):
        raise RoofcalcError(f"{name}: config.json must hold a JSON object, got {type(cfg).__name__}")
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise RoofcalcError(f"{name}: config.json's 'model_type' must be a name such as \"llama\", got "
                            f"{one_line(repr(model_type))[:40]}")
    if not model_type:
        raise RoofcalcError(f"{name}: config.json has no 'model_type'; pass --family to say which family it is")
    model_type = one_line(model_type)[:80]
    text = cfg.get("text_config")
    if model_type not in FAMILIES and isinstance(text, dict) and isinstance(text.get("model_type"), str) and (
            family is None and text["model_type"] in FAMILIES or
            family in FAMILIES and FAMILIES[family].d_model_key not in cfg and FAMILIES[family].d_model_key in text):
        # a multimodal config (vision + language): the language model is what decodes; under --family, a
        # wrapper whose sizes are all in its text_config (Kimi-K2.5's kimi_k25 around a DeepSeek-V3) reads that
        inner = _shape_from_config(text, name, family, sub_config=family is None)
        # the checkpoint's dtype is often written only at the top (Mistral-Small-3.1, Gemma 3); so may its
        # quantization_config be (Devstral-Small-2's FP8)
        return replace(inner, model_type=f"{model_type} (text_config: {one_line(str(text['model_type']))[:60]})",
                       multimodal=True, config_dtype=inner.config_dtype or _config_dtype(cfg),
                       config_dtype_unread=None if inner.config_dtype or _config_dtype(cfg) else
                       inner.config_dtype_unread or _unread_dtype(cfg),
                       **declared_weights(cfg, name, text, inner))
    shape = _shape_from_config(cfg, name, family, sub_config=sub_config)
    return replace(shape, **declared_weights(cfg, name, cfg, shape))


def _shape_from_config(cfg: dict, name: str, family: str | None, *, sub_config: bool) -> ModelShape:
    """The shape of one config dict (a top-level config or a text_config), before its quantization_config."""
    model_type = one_line(cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else "")[:80]
    if not model_type:
        raise RoofcalcError(f"{name}: config.json has no 'model_type'; pass --family to say which family it is")
    fam = FAMILIES.get(family or model_type)
    if fam is None:
        hint = "" if family else " (or pass --family NAME to read it as one of them)"
        raise (RoofcalcError if family else UnsupportedModelType)(f"{name}: model_type '{one_line(family or model_type)[:80]}' is not supported; "
                            f"supported: {', '.join(SUPPORTED_FAMILIES)}{hint}")
    r = ConfigReader(cfg, fam, sub_config)
    shape = _build(r, name, model_type)
    _check_size(shape, name)
    if r.class_defaults:
        shape = replace(shape, class_defaults=tuple(r.class_defaults.items()))
    if fam.model_type == model_type:
        return shape
    lost = r.unrepresented()
    if lost:
        shown = ", ".join(f"{k}={_show(v)}" for k, v in sorted(lost.items()))
        raise RoofcalcError(f"{name}: read as {fam.model_type} (--family), the config's {shown} would be dropped: "
                            f"{fam.model_type} has no place for them; pick the family whose modeling code has them, "
                            f"or remove them from the config if they do not apply")
    return replace(shape, borrowed=True, borrowed_defaults=tuple(sorted((k, v) for k, v in r.defaults.items())))


def _check_size(s: ModelShape, name: str) -> None:
    """Refuse a config whose dimensions, each within its limit, multiply into no real model."""
    experts = (s.moe.n_experts * s.moe.d_expert + s.moe.d_shared) if s.moe else 0
    per_layer = s.d_model * (2 * s.q_dim + 2 * s.kv_dim) + 3 * s.d_model * max(s.d_ff, experts)
    estimate = s.n_layers * per_layer + 2 * s.vocab_size * s.d_model
    if estimate > MAX_PARAMS:
        raise RoofcalcError(f"{name}: these dimensions make about {estimate:.2g} parameters, beyond any real model "
                            f"(limit {MAX_PARAMS:.0e}); check the config")


def _build(r: ConfigReader, name: str, model_type: str) -> ModelShape:
    f = r.family
    d = r.int(f.d_model_key, required=True)
    n_layers = r.int(f.n_layers_key, required=True, limit=MAX_LAYERS)
    n_heads = r.int(f.n_heads_key, required=True)
    d_ff_default = f.d_ff_per_d * d if f.d_ff_per_d else f.d_ff_default
    d_ff = r.int(f.d_ff_key, d_ff_default, required=d_ff_default is None)
    vocab = r.int("vocab_size", required=True, limit=MAX_VOCAB)
    # MLA's num_key_value_heads is nominal; GPT-2, NeoX and OPT have no GQA
    n_kv = r.int("num_key_value_heads", f.kv_default or n_heads) if f.gqa else n_heads
    if f.mla:
        r.read.add("num_key_value_heads")  # nominal under MLA: DeepSeek's configs write it, its attention ignores it
    head_dim = r.int("head_dim", f.head_dim_default) if f.head_dim_key else None
    if head_dim is None:
        if d % n_heads:
            raise RoofcalcError(f"{name}: hidden_size {d} is not divisible by num_attention_heads {n_heads}; "
                                "set 'head_dim' explicitly if the model uses one")
        head_dim = d // n_heads
    if n_heads % n_kv:
        raise RoofcalcError(f"{name}: num_attention_heads {n_heads} is not a multiple of num_key_value_heads {n_kv}")
    activation, hf_activation = r.activation()
    window, types = _attention_layers(r, name, n_layers)
    # the rotated share of each head: transformers reads partial_rotary_factor (top level, or inside
    # rope_parameters) for every rotary family, NeoX also rotary_pct; Phi-4-mini rotates 96 of 128
    rotary_dim = int(head_dim * r.fraction(f.rotary_keys, f.rotary_default)) if f.rotary_keys else 0
    position_rows = 0
    if f.positions:
        key, default, extra = f.positions
        position_rows = r.int(key, default, limit=1 << 30) + extra
    embed_dim = None
    if f.embed_proj_key:
        proj = r.int(f.embed_proj_key, d)
        embed_dim = proj if proj != d else None
    moe, mlp_types = _moe(r, name, n_layers, d_ff) if f.experts else (None, ())
    mla = _mla(r) if f.mla else None
    if mla is not None:
        head_dim = mla.v_head_dim  # q_dim = N·v_head_dim feeds o_proj
        rotary_dim = mla.qk_rope_head_dim
    attn_cap, final_cap = (r.positive(k, v) for k, v in f.softcaps) if f.softcaps else (None, None)
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
        tie_word_embeddings=r.bool("tie_word_embeddings", f.tie_default),
        qkv_bias=r.flag(f.qkv_bias),
        o_bias=r.flag(f.o_bias),
        mlp_bias=r.flag(f.mlp_bias),
        qk_norm=r.flag(f.qk_norm),
        activation=activation,
        embed_scale=f.embed_scale,
        rotary_dim=rotary_dim,
        sliding_window=window,
        layer_types=types,
        # GPT-2's config names its learned positions n_positions (transformers maps the one to the other)
        max_position_embeddings=r.int("max_position_embeddings", None, limit=1 << 30) or
        r.int("n_positions", None, limit=1 << 30),
        family=f.model_type,
        norm=f.norm,
        block=f.block if f.parallel_residual is None or r.flag(f.parallel_residual) else "sequential",
        gated_mlp=f.gated_mlp,
        fused_qkv=f.fused_qkv,
        fused_gate_up=f.fused_gate_up,
        position_rows=position_rows,
        lm_head_bias=f.lm_head_bias,
        attn_softcap=attn_cap,
        final_softcap=final_cap,
        embed_dim=embed_dim,
        final_norm=all(r.bool(key, default) != drops for key, drops, default in f.final_norm_off),
        moe=moe,
        mlp_types=mlp_types,
        mla=mla,
        config_dtype=_config_dtype(r.cfg),
        config_dtype_unread=_unread_dtype(r.cfg),
        names=f.names,
        hf_activation=hf_activation,
    )
