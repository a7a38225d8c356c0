"""The header's ModelShape of a traced model, read off transformers' config object."""

from __future__ import annotations

from ..errors import RoofcalcError
from ..inputs import one_line
from ..shapes import ModelShape
from .config import _need_torch, hf_config
from .encoders import WHOLE_KEY


def _nested(config, part: str, key: str) -> int:
    """An integer a config keeps in a sub-object of its own (DBRX's ffn_config), else 0."""
    v = getattr(getattr(config, part, None), key, None)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def layer_heads(config, span: tuple[int, int] | None = None) -> tuple[tuple[str, int, int, int, int], ...]:
    """(layer type, N heads, K KV heads, H head size, layers) for each kind of layer, in the order they first
    run, where the layers differ in heads or head size: a heterogeneous config's per-layer configs (Gemma 4's
    full-attention layers take global_head_dim and num_global_key_value_heads); () where every layer is alike.
    ``span``: layers [start, end) alone (a pipeline stage's)."""
    try:
        text = getattr(config, "get_text_config", lambda: config)()
        if not getattr(text, "is_heterogeneous", False):
            return ()
        layers = list(text.per_layer_config)
        kinds = list(getattr(text, "layer_types", None) or ())
    except Exception:  # a config whose per-layer view does not build
        return ()
    groups: dict[tuple, int] = {}
    for i, layer in enumerate(layers):
        if span is not None and not span[0] <= i < span[1]:
            continue
        sizes = []
        for key in ("num_attention_heads", "num_key_value_heads", "head_dim"):
            v = getattr(layer, key, None)
            if not isinstance(v, int) or isinstance(v, bool):
                return ()
            sizes.append(v)
        kind = str(kinds[i]) if i < len(kinds) else "layer"
        groups[(kind, *sizes)] = groups.get((kind, *sizes), 0) + 1
    if len({k[1:] for k in groups}) < 2:
        return ()
    return tuple((*k, n) for k, n in groups.items())


def heads_text(groups) -> str:
    """The header's heads for layers that differ: 'N=8 heads / K=8 KV heads x H=256 (25 sliding layers),
    2 x 512 (5 full layers)'."""
    def where(kind: str, n: int) -> str:
        word = kind[:-len("_attention")] if kind.endswith("_attention") else kind
        return f"{n} {word} layer{'s' if n != 1 else ''}"

    if len({g[1] for g in groups}) == 1:
        first, *rest = groups
        return (f"N={first[1]} heads / K={first[2]} KV heads x H={first[3]} ({where(first[0], first[4])})"
                + "".join(f", {g[2]} x {g[3]} ({where(g[0], g[4])})" for g in rest))
    return ", ".join(f"N={g[1]} heads / K={g[2]} KV heads x H={g[3]} ({where(g[0], g[4])})" for g in groups)


def shape_of(config, model_type: str, name: str, cfg: dict) -> ModelShape:
    """The header's letters, read from transformers' own config object (a multimodal one's text config)."""
    try:
        text = getattr(config, "get_text_config", lambda: config)()
    except Exception:  # pragma: no cover - a config without a text part
        text = config

    def get(*keys, default=None):
        for k in keys:
            for c in (text, config):
                try:
                    v = getattr(c, k, None)
                except Exception:  # a per-layer attribute that refuses a single value (Gemma 4)
                    v = None
                if isinstance(v, int) and not isinstance(v, bool):
                    return v
        return default

    # an encoder-decoder config read as its causal LM (BART's family) is its decoder
    d = get("hidden_size", "n_embd", "d_model", default=0)
    n_heads = get("decoder_attention_heads", "num_attention_heads", "n_head", "num_heads", default=1)
    n_kv = get("num_key_value_heads", "num_kv_heads", default=1 if getattr(text, "multi_query", False) is True
               else n_heads)
    n_layers = get("decoder_layers", "num_hidden_layers", "n_layer", "num_layers", default=0)
    head_dim = get("head_dim", default=d // n_heads if n_heads else 0)
    groups = layer_heads(config)
    if groups:  # layers that differ: the commonest kind's (the header prints each kind's)
        _, n_heads, n_kv, head_dim, _ = max(groups, key=lambda g: g[4])
    window = get("sliding_window", default=None)
    kinds = getattr(text, "layer_types", None)
    if isinstance(kinds, (list, tuple)) and kinds and not any("sliding" in str(k) for k in kinds):
        window = None  # a window the class keeps but no layer uses (Dots1's 4096)
    from ..shapes import _config_dtype, declared_weights

    return ModelShape(
        name=name, model_type=model_type, n_layers=n_layers, d_model=d, n_heads=n_heads, n_kv_heads=n_kv,
        head_dim=head_dim, d_ff=get("decoder_ffn_dim", "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size",
                                    default=0) or _nested(config, "ffn_config", "ffn_hidden_size") or 4 * d,
        vocab_size=get("vocab_size", default=0), tie_word_embeddings=getattr(config, "tie_word_embeddings", False) is True,
        qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm=False, activation="traced", embed_scale=False,
        rotary_dim=0, sliding_window=window, layer_types=("full",) * n_layers, family=model_type,
        config_dtype=_config_dtype(cfg), **declared_weights(cfg, name),
    )


def traced_shape(cfg: dict, name: str) -> tuple[ModelShape, tuple[dict, str, str]]:
    """(the header's shape, what :func:`trace` takes) for a config read by tracing; a multimodal config
    is traced through its ``text_config`` (the language model is what decodes)."""
    try:
        return _traced_shape(cfg, name)
    except RoofcalcError:
        raise
    except Exception as exc:  # a config class roofcalc has not met
        raise RoofcalcError(f"{name}: transformers cannot read this config ({type(exc).__name__}: "
                            f"{one_line(str(exc))[:160]})") from None


def _causal_lm(model_type: str) -> bool:
    """Whether transformers builds a causal LM from this model_type itself (Mllama's and Emu3's text
    configs it does not: their causal LM is built from the whole config)."""
    _need_torch(model_type)
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def _traced_shape(cfg: dict, name: str) -> tuple[ModelShape, tuple[dict, str, str]]:
    use, label = cfg, str(cfg.get("model_type"))
    text = cfg.get("text_config")
    if isinstance(text, dict) and isinstance(text.get("model_type"), str) and _causal_lm(text["model_type"]):
        use, label = text, f"{one_line(label)[:60]} (text_config: {one_line(text['model_type'])[:60]})"
        top = {k: cfg[k] for k in ("torch_dtype", "dtype") if k in cfg}
        if top and not any(k in text for k in ("torch_dtype", "dtype")):
            use = dict(text, **top)  # the checkpoint's dtype, often written only at the top (Gemma 3)
        if cfg.get("quantization_config") is not None and text.get("quantization_config") is None:
            use = dict(use, quantization_config=cfg["quantization_config"])  # so may its quantization_config be
            # (Devstral-Small-2's FP8 on its mistral3 wrapper); transformers' config class is built without it
        if any(isinstance(v, dict) and k.endswith("_config") and k not in ("text_config", "quantization_config")
               for k, v in cfg.items()):  # a vision or audio tower beside it: the trace counts its parameters
            use = dict(use, **{WHOLE_KEY: cfg})
    elif isinstance(text, dict) and not any(k in cfg for k in ("torch_dtype", "dtype")):
        inner = {k: text[k] for k in ("torch_dtype", "dtype") if k in text}
        if inner:  # the whole model traced, its dtype written only in its text_config (Qwen3-VL)
            use = dict(cfg, **inner)
    config, _ = hf_config(use, name)
    return shape_of(config, label, name, use), (use, name, label)
