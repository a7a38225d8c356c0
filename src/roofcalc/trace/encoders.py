"""A multimodal model's encoders (vision and audio towers, their projectors): the parameters a checkpoint holds
beside its language model, counted on the meta device."""

from __future__ import annotations

import json
import warnings

from ..inputs import one_line

# the key under which a multimodal config traced through its text_config carries the whole config, so the
# trace can count the encoders the text model leaves out (a private key: no config class is handed it)
WHOLE_KEY = "_multimodal_config"

_MEMO: dict[tuple[str, str], dict] = {}
MAX_ENCODER_LAYERS = 1_000  # the deepest published towers have tens of layers (InternViT-6B: 45)


def _unique(torch, modules) -> tuple[int, int]:
    """(parameters, bytes) of what ``modules`` save in a checkpoint (their state dict: parameters and persistent
    buffers, as the text model is counted), a tied one counted once."""
    from .record import _storage_key

    seen, n, nb = set(), 0, 0
    for m in modules:
        for p in m.state_dict(keep_vars=True).values():
            key = _storage_key(p)
            if key not in seen:
                seen.add(key)
                n += p.numel()
                nb += p.numel() * p.element_size()
    return n, nb


def language_part(model):
    """The language model inside a multimodal model (its decoder), or None for a model that is one."""
    get = getattr(model, "get_decoder", None)
    try:
        decoder = get() if callable(get) else None
    except Exception:  # a class whose decoder is not found by name
        decoder = None
    if decoder is None or decoder is model or getattr(model, "model", None) is decoder:
        return None  # a causal LM: its decoder is its own body
    return decoder


def language_params(torch, model) -> int | None:
    """Parameters of a multimodal model's language model and its output head, or None where the model is
    only a language model."""
    decoder = language_part(model)
    if decoder is None:
        return None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return _unique(torch, [decoder] + ([head] if head is not None else []))[0]


def encoder_params(torch, transformers, whole: dict, name: str, dtype) -> dict:
    """The encoders of the multimodal config ``whole``: its base model (transformers' AutoModel: the towers,
    projectors and language model) built on the meta device in ``dtype``, less its language model.
    ``{"params", "param_bytes", "class"}``, or ``{"error"}`` where it does not build."""
    key = (json.dumps(whole, sort_keys=True, default=str), str(dtype))
    if key not in _MEMO:
        from .config import hf_config

        try:
            config, _ = hf_config(whole, name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.device("meta"):
                    model = transformers.AutoModel.from_config(config, dtype=dtype)
            decoder = language_part(model)
            if decoder is None:
                raise ValueError(f"{type(model).__name__} holds no language model apart")
            n, nb = _unique(torch, [model])
            ln, lnb = _unique(torch, [decoder])
            _MEMO[key] = {"params": n - ln, "param_bytes": nb - lnb, "class": type(model).__name__}
        except Exception as exc:  # counted without them, and the header says so
            _MEMO[key] = {"error": f"{type(exc).__name__}: {one_line(str(exc))[:120]}"}
    return _MEMO[key]


def model_encoders(whole: dict, name: str) -> dict:
    """The encoders of a multimodal checkpoint whose language model is hand-modelled (LLaVA around a Llama):
    their parameters, counted as the trace counts them (transformers' base model on the meta device, less its
    language model), kept on disk by the config so that a second run imports nothing. ``{"params", "class"}``,
    ``{"error"}`` where transformers does not build them, ``{"missing"}`` without torch and transformers."""
    import hashlib
    import importlib.metadata
    import importlib.util

    from .cache import _cache_dir, keep

    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None:
        missing = " and ".join(m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None)
        return {"missing": f"counting them builds the model on PyTorch's meta device; {missing} not installed "
                           f"here (pip install '.[torch]' in roofcalc's checkout)"}
    for part, sub in whole.items():  # an encoder of absurd depth would take minutes to build, even on meta
        if part != "text_config" and isinstance(sub, dict):
            deep = next((f"{k}={v}" for k, v in sub.items() if isinstance(v, int) and not isinstance(v, bool)
                         and v > MAX_ENCODER_LAYERS and ("layers" in k or k == "depth")), None)
            if deep:
                return {"error": f"{part}'s {deep} is beyond any real encoder (limit {MAX_ENCODER_LAYERS:,})"}
    version = importlib.metadata.version("transformers")
    # "count" 2: the towers' state dicts (persistent buffers too), not their parameters alone
    key = hashlib.sha256(json.dumps({"cfg": whole, "tf": version, "count": 2}, sort_keys=True,
                                    default=str).encode()).hexdigest()
    path = _cache_dir().parent / "encoders" / f"{key[:32]}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and (isinstance(doc.get("params"), int) or "error" in doc):
            return doc
    except (OSError, ValueError):
        pass
    import torch
    import transformers

    doc = dict(encoder_params(torch, transformers, whole, name, torch.bfloat16))  # a copy: the memo keeps its bytes
    doc.pop("param_bytes", None)  # the bytes follow the workload's float dtype
    keep(path, doc)
    return doc
