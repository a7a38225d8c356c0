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
    d_ff: int  # F
    vocab_size: int  # V
    tie_word_embeddings: bool
    qkv_bias: bool  # bias on q_proj, k_proj, v_proj
    o_bias: bool  # bias on o_proj
    mlp_bias: bool  # bias on gate_proj, up_proj, down_proj
    qk_norm: bool  # per-head RMSNorm on q and k (Qwen3)
    activation: str  # "silu" | "gelu_tanh" | "gelu" | "relu"
    embed_scale: bool  # embeddings multiplied by sqrt(D) (Gemma)
    rotary_dim: int  # head dims that rotary touches (H unless partial)
    sliding_window: int | None
    layer_types: tuple[str, ...]  # "full" | "sliding", one per layer
    max_position_embeddings: int | None = None
    family: str = ""  # the family the config was read as (= model_type unless --family)

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim


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


# Per-family readers. Defaults are those of transformers' config class for the model_type
# (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, GemmaConfig), checked in tests.
FAMILY_DEFAULTS = {
    # family: (num_key_value_heads when absent (None = MHA), head_dim when absent (None = D/N),
    #          tie_word_embeddings when absent, sliding_window when absent)
    "llama": (None, None, False, None),
    "mistral": (8, None, False, 4096),
    "qwen2": (32, None, False, None),
    "qwen3": (32, 128, False, None),
    "gemma": (16, 256, True, None),
}
SUPPORTED_FAMILIES = tuple(sorted(FAMILY_DEFAULTS))


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
    if fam not in FAMILY_DEFAULTS:
        hint = "" if family else " (or pass --family NAME to read it as one of them)"
        raise RoofcalcError(
            f"{name}: model_type '{fam}' is not supported; supported: {', '.join(SUPPORTED_FAMILIES)}{hint}"
        )
    kv_default, hd_default, tie_default, window_default = FAMILY_DEFAULTS[fam]

    d = _int(cfg, "hidden_size", required=True)
    n_layers = _int(cfg, "num_hidden_layers", required=True, limit=MAX_LAYERS)
    n_heads = _int(cfg, "num_attention_heads", required=True)
    d_ff = _int(cfg, "intermediate_size", required=True)
    vocab = _int(cfg, "vocab_size", required=True, limit=MAX_VOCAB)
    n_kv = _int(cfg, "num_key_value_heads", kv_default if kv_default is not None else n_heads)
    head_dim = _int(cfg, "head_dim", hd_default)
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

    if fam == "gemma":
        # transformers reads Gemma's legacy hidden_act "gelu" as the tanh approximation.
        act_key = "hidden_activation" if cfg.get("hidden_activation") is not None else "hidden_act"
        act_name = cfg.get(act_key, "gelu_pytorch_tanh")
        activation = "gelu_tanh" if act_name == "gelu" else _activation(act_name, act_key)
    else:
        activation = _activation(cfg.get("hidden_act", "silu"), "hidden_act")

    window = _int(cfg, "sliding_window", None) if "sliding_window" in cfg else window_default
    if fam == "mistral":
        types = ("sliding",) * n_layers if window is not None else ("full",) * n_layers
    elif fam in ("qwen2", "qwen3") and _bool(cfg, "use_sliding_window", False):
        first = _int(cfg, "max_window_layers", 28, limit=MAX_LAYERS)
        types = tuple("sliding" if i >= first else "full" for i in range(n_layers))
        if window is None:
            raise RoofcalcError(f"{name}: 'use_sliding_window' is true but 'sliding_window' is null")
    else:
        types = ("full",) * n_layers
    types = _layer_types(cfg, n_layers, window, types)

    attention_bias = _bool(cfg, "attention_bias", False)
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
        qkv_bias=True if fam == "qwen2" else (attention_bias and fam != "mistral"),
        o_bias=attention_bias and fam not in ("qwen2", "mistral"),
        mlp_bias=_bool(cfg, "mlp_bias", False) if fam == "llama" else False,
        qk_norm=fam == "qwen3",
        activation=activation,
        embed_scale=fam == "gemma",
        rotary_dim=head_dim,
        sliding_window=window if "sliding" in types else None,
        layer_types=types,
        max_position_embeddings=_int(cfg, "max_position_embeddings", None, limit=1 << 30),
        family=fam,
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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RoofcalcError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise RoofcalcError(f"{path} is not a text file; pass a config.json") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RoofcalcError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); is it truncated?"
        ) from None


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


def _hub_config(repo_id: str) -> Path:
    """config.json of a hub repo: the local HF cache first, then the hub unless offline."""
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "2")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "2")
    how = "download its config.json and pass the path (roofcalc ./config.json), or pick a catalog name (roofcalc models)"
    try:
        from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers brings it
        raise RoofcalcError(f"'{repo_id}' is not in the catalog and huggingface_hub is not installed; {how}") from None
    cached = try_to_load_from_cache(repo_id, "config.json")
    if isinstance(cached, str):
        return Path(cached)
    if constants.HF_HUB_OFFLINE:  # HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache and HF_HUB_OFFLINE is set; {how}")
    if not _reachable(constants.ENDPOINT):
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache, and {constants.ENDPOINT} "
                            f"cannot be reached; {how}")
    try:
        return Path(hf_hub_download(repo_id, "config.json", etag_timeout=2))
    except Exception as exc:  # repo missing, gated, network lost...
        raise RoofcalcError(f"cannot fetch '{repo_id}' from the hub ({type(exc).__name__}); {how}") from None


def load_config(source: str) -> tuple[dict, str, str, CatalogEntry | None]:
    """Resolve ``source`` to (config dict, model name, origin, catalog entry or None).

    In order: a path to a config.json or a folder holding one; a catalog hub id or alias;
    any other hub id (HF cache, then the hub).
    """
    path = Path(os.path.expanduser(source))
    if path.is_dir():
        file = path / "config.json"
        if not file.is_file():
            raise RoofcalcError(f"folder {path} has no config.json")
        return _read_json(file), str(path), "file", None
    if path.is_file():
        return _read_json(path), str(path), "file", None
    entry = find_in_catalog(source)
    if entry is not None:
        return dict(entry.config), entry.hub_id, "catalog", entry
    if source.endswith(".json") or source.startswith((".", "/", "~")) or os.sep in source and not HUB_ID.match(source):
        raise RoofcalcError(f"no such file: {source}")
    if not HUB_ID.match(source):
        raise RoofcalcError(
            f"'{source}' is not a file, a catalog name or a hub id (owner/name); 'roofcalc models' lists the catalog"
        )
    return _read_json(_hub_config(source)), source, "hub", None


def load_shape(source: str, family: str | None = None) -> ModelShape:
    """Read a model shape from a path, a catalog name or a hub id."""
    cfg, name, _, _ = load_config(source)
    return shape_from_config(cfg, name, family)
