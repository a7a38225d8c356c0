"""The model's own KV cache after a step: its tensors, recurrent states, bytes and bytes per token."""

from __future__ import annotations

from .record import _storage_key


def _cache_of(out):
    """The cache a forward returns (``past_key_values``, or ``cache`` in newer transformers), if any."""
    for attr in ("past_key_values", "cache"):
        try:
            value = getattr(out, attr, None)
        except Exception:  # an alias property that raises on an output without it
            value = None
        if value is not None:
            return value
    return None


def _handed_cache(transformers, config):
    """A cache to hand a model whose forward makes one and returns none: the one it would make."""
    return transformers.DynamicCache(config=config)


def _filled(cache) -> bool:
    """Whether a forward wrote to ``cache``. Its own count asks its first layer (transformers 5.25: a
    recurrent layer, which holds no positions, where recurrent Gemma's first attention layer is its third),
    so every layer's keys are asked too."""
    if cache is None:
        return False
    try:
        if cache.get_seq_length() > 0:
            return True
    except Exception:  # a cache whose layers cannot say (it was not filled)
        pass
    for layer in getattr(cache, "layers", None) or ():
        keys = getattr(layer, "keys", None)
        if keys is not None and hasattr(keys, "numel") and keys.numel() > 0:
            return True
    return False


def _cache_storages(torch, cache) -> set:
    if cache is None:
        return set()
    return {_storage_key(t) for t in _cache_tensors(torch, cache) + _state_tensors(torch, cache)}


def _layers(cache) -> list:
    """The cache's layers; an encoder-decoder cache's self-attention and cross-attention layers (a
    BERT-style decoder run as a causal LM keeps its keys and values there, the cross part empty)."""
    if hasattr(cache, "self_attention_cache"):
        return _layers(cache.self_attention_cache) + _layers(getattr(cache, "cross_attention_cache", None))
    return list(getattr(cache, "layers", []) or [])


def _state_tensors(torch, cache) -> list:
    """A hybrid model's recurrent layers' cache (Mamba, gated delta nets: transformers' linear-attention
    layers): a convolution and a recurrent state per sequence, the same size at every length."""
    out = []
    for layer in _layers(cache):
        for attr in ("conv_states", "recurrent_states"):
            states = getattr(layer, attr, None)
            if isinstance(states, dict):
                out.extend(t for t in states.values() if isinstance(t, torch.Tensor))
            elif isinstance(states, torch.Tensor):
                out.append(states)
    return out


def _cache_tensors(torch, cache) -> list:
    out = []
    for layer in _layers(cache):
        for attr in ("keys", "values"):
            t = getattr(layer, attr, None)
            if isinstance(t, torch.Tensor):
                out.append(t)
    if not out:  # a legacy tuple cache
        out = [t for t in torch.utils._pytree.tree_leaves(cache) if isinstance(t, torch.Tensor)]
    return out


def _per_token(torch, cache, batch: int) -> int:
    """KV bytes one token adds in every layer: each cached tensor's bytes over its B x positions
    (a sliding layer keeps fewer positions, not fewer bytes per position)."""
    total = 0
    for t in _cache_tensors(torch, cache) if cache is not None else ():
        positions = batch * (t.shape[-2] if t.dim() >= 2 else 1)
        if positions:
            total += t.numel() * t.element_size() // positions
    return total


def _cache_bytes(torch, cache) -> int:
    """The whole cache: keys and values, and a hybrid model's recurrent states."""
    if cache is None:
        return 0
    return sum(t.numel() * t.element_size() for t in _cache_tensors(torch, cache) + _state_tensors(torch, cache))


def _per_layer(torch, cache, batch: int) -> list[list[int]]:
    """Each cache layer's [bytes a token adds, bytes after the step] (a pipeline stage holds its layers'):
    keys and values, and a recurrent layer's states; a legacy cache's per-layer tuples alike; [] where the
    cache has no layers to tell apart."""
    if cache is None:
        return []
    layers = _layers(cache)
    if not layers and isinstance(cache, (tuple, list)):  # a legacy cache: a tuple of tensors per layer
        layers = [entry for entry in cache if isinstance(entry, (tuple, list))]
    out = []
    for layer in layers:
        if isinstance(layer, (tuple, list)):
            kv, states = [t for t in layer if isinstance(t, torch.Tensor)], []
        else:
            kv = [t for t in (getattr(layer, "keys", None), getattr(layer, "values", None)) if isinstance(t, torch.Tensor)]
            states = []
            for attr in ("conv_states", "recurrent_states"):
                value = getattr(layer, attr, None)
                states += [t for t in (value.values() if isinstance(value, dict) else (value,))
                           if isinstance(t, torch.Tensor)]
        per_token = 0
        for t in kv:
            positions = batch * (t.shape[-2] if t.dim() >= 2 else 1)
            if positions:
                per_token += t.numel() * t.element_size() // positions
        out.append([per_token, sum(t.numel() * t.element_size() for t in kv + states)])
    return out
