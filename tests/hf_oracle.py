"""Run the real transformers modeling code under PyTorch's FlopCounterMode: an independent oracle.

The model is built from a config dict on the ``meta`` device (no weights are materialised;
attention then goes through an op the counter knows). Counts come back per module path,
each op credited to every ancestor; the attention core of a layer is its ``self_attn`` count
minus its projections (norms, rotary and softmax count 0 in FlopCounterMode).
"""

from __future__ import annotations

import inspect
import re
import warnings
from dataclasses import dataclass

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP = ("gate_proj", "up_proj", "down_proj")


def build(config: dict, dtype=torch.float16, *, device: str = "meta", attn: str | None = None,
          eager_experts: bool = False):
    """The transformers model of ``config``: on ``meta`` (nothing materialised) or on the CPU with random
    weights (MoE routing needs real values). ``attn="eager"`` runs attention as matmuls the counter sees
    (the CPU sdpa kernel is invisible to it; Gemma 2 refuses sdpa); ``eager_experts`` loops over the
    experts with plain linears (the grouped-matmul op is invisible to it)."""
    cfg = transformers.AutoConfig.for_model(**config)
    if eager_experts:
        cfg._experts_implementation = "eager"
    kw = {"attn_implementation": attn} if attn else {}
    torch.manual_seed(0)
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    # a vision-language model without a causal LM class is its image-text model (the checkpoint's class)
    auto = transformers.AutoModelForCausalLM if cfg.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES else \
        transformers.AutoModelForImageTextToText
    with torch.device(device):
        model = auto.from_config(cfg, dtype=dtype, **kw)
    # inference only: FlopCounterMode's module tracker hooks the gradients of a module's inputs, which fails
    # on a parameter passed to a module call (DBRX's expert loop hands each expert's weights to its GLU)
    return model.eval().requires_grad_(False)


def _counts(fc: FlopCounterMode) -> dict[str, int]:
    return {k: sum(v.values()) for k, v in fc.get_flop_counts().items()}


@dataclass
class Counts:
    flops: dict[str, int]  # module path -> FLOPs

    def module(self, suffix: str) -> int:
        hits = [v for k, v in self.flops.items() if k.endswith(suffix)]
        assert len(hits) == 1, f"{suffix}: {len(hits)} modules match"
        return hits[0]

    def layer(self, i: int, name: str) -> int:
        """FLOPs of kernel ``name`` in layer ``i`` (``attention`` = the core, projections removed)."""
        if name == "attention":
            attn = self.module(f"layers.{i}.self_attn")
            return attn - sum(self.flops.get(self._path(i, f"self_attn.{p}"), 0) for p in PROJECTIONS)
        where = "self_attn" if name in PROJECTIONS else "mlp"
        return self.module(f"layers.{i}.{where}.{name}")

    def _path(self, i: int, rest: str) -> str:
        return next(k for k in self.flops if k.endswith(f"layers.{i}.{rest}"))

    # ---- any family: modules found by the name roofcalc gives the kernel
    def find(self, i: int, leaf: str) -> str | None:
        """The module path of ``leaf`` in layer ``i`` (directly under the layer or one block below it)."""
        pat = re.compile(rf"(?:^|\.)(?:layers|h)\.{i}\.(?:(?:mlp|self_attn|attn|attention)\.)?{re.escape(leaf)}$")
        hits = [k for k in self.flops if pat.search(k)]
        assert len(hits) <= 1, (leaf, hits)
        return hits[0] if hits else None

    def of(self, i: int, leaf: str) -> int:
        path = self.find(i, leaf)
        assert path is not None, f"layer {i} has no module {leaf} with FLOPs"
        return self.flops[path]

    def attention_core(self, i: int, projections: list[str]) -> int:
        """The attention module's FLOPs less its projections' (QKᵀ + PV, and nothing else the counter sees)."""
        parent = self.find(i, projections[-1]).rsplit(".", 1)[0]  # the output projection's parent
        inner = sum(v for k, v in self.flops.items() if k.startswith(parent + ".") and k.count(".") == parent.count(".") + 1)
        return self.flops[parent] - inner


def run(model, batch: int, prompt: int, *, all_logits: bool = True, whole: bool = False):
    """A prefill of ``prompt`` tokens, then one decode step (which attends to prompt + 1 keys): its new
    token, or with ``whole`` the whole sequence (XLM's generate hands its forward every token so far, and
    its forward runs only the positions its cache does not hold).

    Returns (prefill counts, decode counts, the cache after the prefill)."""
    kw_cache = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    keep = {} if all_logits else {"logits_to_keep": 1}
    dev = next(model.parameters()).device
    ids = torch.zeros((batch, prompt), dtype=torch.long, device=dev)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        try:
            with FlopCounterMode(display=False) as fc:
                out = model(input_ids=ids, use_cache=True, **keep)
            cache = getattr(out, "past_key_values", None)
        except IndexError:  # its own cache sized by its encoder's layers (Blenderbot's causal LM)
            out = cache = None
        if cache is None and kw_cache in inspect.signature(model.forward).parameters:
            # a model that makes its cache inside its forward and returns none (recurrent Gemma): hand it one
            # (one that grows with the layers where its own is sized wrong)
            handed = transformers.DynamicCache(config=model.config) if out is not None else transformers.DynamicCache()
            with FlopCounterMode(display=False) as fc:
                out = model(input_ids=ids, use_cache=True, **{kw_cache: handed}, **keep)
            cache = handed
        prefill = Counts(_counts(fc))
        one = torch.zeros((batch, prompt + 1 if whole else 1), dtype=torch.long, device=dev)
        with FlopCounterMode(display=False) as fc:
            model(input_ids=one, use_cache=True, **{kw_cache: cache})
        decode = Counts(_counts(fc))
    return prefill, decode, cache


def param_bytes(model, buffers: tuple[str, ...] = ()) -> int:
    """Bytes of the parameters, plus the named buffers that checkpoints store as weights."""
    extra = sum(b.numel() * b.element_size() for n, b in model.named_buffers() if n.endswith(buffers)) if buffers else 0
    return sum(p.numel() * p.element_size() for p in model.parameters()) + extra


def cache_bytes(cache) -> int:
    """The keys and values the cache holds (a hybrid's recurrent layers hold states instead: tests/test_trace.py
    checks those apart)."""
    if hasattr(cache, "self_attention_cache"):  # an encoder-decoder cache (a BERT-style decoder's cross part is empty)
        return cache_bytes(cache.self_attention_cache) + cache_bytes(cache.cross_attention_cache)
    total = 0
    for layer in cache.layers:
        if getattr(layer, "keys", None) is None:
            continue
        total += layer.keys.numel() * layer.keys.element_size() + layer.values.numel() * layer.values.element_size()
    return total
