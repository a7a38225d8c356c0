"""One step traced: the model built from its config and run under the recorder, on the meta device or the CPU."""

from __future__ import annotations

import contextlib
import inspect
import re
import warnings

from ..calculator import Workload
from ..dtypes import torch_names
from ..errors import NoKVCache, RoofcalcError
from ..inputs import one_line
from .cache import TRACE_FORMAT, _kernel_doc
from .config import _need_torch, hf_config
from .encoders import WHOLE_KEY, encoder_params, language_params
from .group import _layer_lists, _layer_split, group_ops
from .kvcache import _cache_bytes, _cache_of, _cache_storages, _cache_tensors, _filled, _handed_cache, _per_layer, \
    _per_token, _state_tensors
from .patches import _expert_matmul_fallback, _grouped_experts, _one_sequence_per_row, _positional_rotaries, \
    _routed_experts, _unrecorded_chunked_rules
from .record import _Recorder, _storage_key


TORCH_DTYPES = torch_names()  # fp32, bf16, fp16: what a traced model runs in

# where config classes keep the experts a token reaches: most as num_experts_per_tok (Ernie's moe_k and LongCat's
# moe_topk through their attribute maps), Aria's text config as moe_topk, Gemma 4's as top_k_experts, DBRX's in its
# ffn_config; Hunyuan-A13B's is a list of one top-k a layer (its config class maps num_experts_per_tok to it)
TOP_K_NAMES = ("num_experts_per_tok", "top_k", "moe_topk", "top_k_experts")


def experts_per_token(config) -> int | None:
    """The experts each token reaches (the routed experts' top-k) from a config or its text config, None where it
    names none. A list of one per layer (Hunyuan-A13B's ``moe_topk``) gives its value where every layer's is the
    same; layers that differ give None (each expert's weights then counted in full, as a dense program reads
    them)."""
    inner = getattr(config, "get_text_config", lambda: config)()  # a wrapper's (Kimi-K2.5's) is its text config's
    for c in (config, inner):
        for name in TOP_K_NAMES:
            v = getattr(c, name, None)
            if isinstance(v, (list, tuple)) and v and len(set(v)) == 1:
                v = v[0]
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
    v = getattr(getattr(config, "ffn_config", None), "moe_top_k", None)  # DBRX keeps it in its ffn_config
    return v if isinstance(v, int) and v > 0 else None

def _check_workload(wl: Workload) -> None:
    """What a trace runs in (trace._trace has taken a one-byte KV cache back to the activations' dtype)."""
    for what, d in (("weights", wl.weight_dtype), ("activations", wl.act_dtype), ("KV cache", wl.kv_dtype)):
        if d.name not in TORCH_DTYPES and not (what == "weights" and d.scaled):
            raise RoofcalcError(f"a traced model runs in fp32, bf16 or fp16 (its weights also int8, int4, mxfp4, fp8-b128, fp8-ch, fp8-t or ternary; "
                                f"its KV cache also fp8 or int8 under 16-bit activations); {what} {d.name} is for "
                                f"hand-modelled families")
    if not wl.act_dtype == wl.kv_dtype or not (wl.weight_dtype == wl.act_dtype or wl.weight_dtype.scaled):
        raise RoofcalcError("a traced model runs weights, activations and KV cache in one dtype (weights may be "
                            "int8, int4, mxfp4, fp8-b128, fp8-ch, fp8-t or ternary besides, the KV cache fp8 or int8 "
                            "under 16-bit activations); give --dtype, and --weight-dtype and --kv-dtype for those")
    if not wl.causal:
        raise RoofcalcError("--full-rectangle is for hand-modelled families (a traced model runs its own mask)")
    if wl.attention != "fused":
        raise RoofcalcError("--attention unfused is for hand-modelled families (a traced model's attention is one "
                            "fused call)")


def _auto_class(transformers, model_type: str):
    """The auto class that builds this model_type's decoding model: a causal LM, or, for a vision-language
    model whose language part has no causal LM of its own (Qwen2.5-VL, Qwen3-VL), the whole image-text
    model, which decodes text from token ids alone (its vision tower then runs no op)."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)

    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


class _NotOnMeta(Exception):
    """The model's own code could not run on meta tensors (it reads a value, or mixes devices)."""

    def __init__(self, why: str, param_bytes: int, params: int):
        super().__init__(why)
        self.why, self.param_bytes, self.params = why, param_bytes, params


# A model whose code reads tensor values (XLM's and ProphetNet's asserts on its inputs, Reformer's
# buckets) or makes tensors on the default device beside its meta weights (XLNet) cannot run on meta
# tensors. It then runs on the CPU for real, with random weights, when its weights take at most this
# share of the free memory and the step is at most CPU_TRACE_FLOPS (a few seconds to a minute here).
CPU_TRACE_MEMORY_SHARE = 4
CPU_TRACE_FLOPS = 2e12
_MIXED = re.compile(r"scalar type|mixed dtype")  # XLNet's and Reformer's float32 tensors beside bf16 ones


def trace_raw(cfg: dict, name: str, wl: Workload, read=None) -> dict:
    """Trace one step: the kernels in both views, as a JSON-able document (what the cache stores).
    ``read``: :func:`hf_config`'s answer for ``cfg``, when the caller has it. On the meta device; a
    model whose own code cannot run there runs on the CPU, when it is small enough (the document
    says ``"device": "cpu"``)."""
    _check_workload(wl)
    read = read or hf_config(cfg, name)
    try:
        return _trace_on(cfg, name, wl, read, "meta")
    except _NotOnMeta as exc:
        from ..measure import available_memory_bytes

        check = read[1]
        why = f"{name}: the {check.class_name} model did not run on the meta device ({exc.why})"

        def hint(error: str) -> str:
            """Where the model's own code mixes float32 into half-precision tensors: what runs instead."""
            if wl.act_dtype.name == "fp32" or not _MIXED.search(error):
                return ""
            return f"; its code mixes float32 into {wl.act_dtype.name} tensors: try --dtype fp32"

        if not re.search(r"\bmeta\b|device", exc.why):  # its own refusal (an image it needs): the CPU would too
            raise RoofcalcError(why + hint(exc.why)) from None
        free = available_memory_bytes()
        # the prefill before a decode step runs too: every token of the context through every weight once
        tokens = wl.batch * (wl.query_tokens if wl.phase == "prefill" else wl.kv_len)
        flops = 2.0 * exc.params * tokens
        if free is not None and exc.param_bytes * CPU_TRACE_MEMORY_SHARE > free:
            raise RoofcalcError(f"{why}, and its {exc.param_bytes / 1e9:.1f} GB of weights are too large to run "
                                f"on this CPU instead ({free / 1e9:.1f} GB free)") from None
        if flops > CPU_TRACE_FLOPS:
            raise RoofcalcError(f"{why}, and running it on the CPU instead would take about {flops / 1e12:.0f} "
                                f"TFLOP ({wl.batch} x {tokens // wl.batch} tokens): try a smaller --batch or "
                                f"--context") from None
        try:
            doc = _trace_on(cfg, name, wl, read, "cpu")
        except _NotOnMeta as again:
            raise RoofcalcError(f"{why}, nor on the CPU ({again.why}){hint(again.why)}") from None
        doc["device"] = "cpu"
        return doc


def routed_kernels(cfg: dict, name: str, wl: Workload, read, device: str) -> list:
    """The kernels of the routed program a fused MoE runs, for a model whose experts transformers computes
    densely (a document of :func:`trace_raw` with ``"dense_experts"``: Llama-4's), traced on the document's
    device: the ideal view's."""
    try:
        return _trace_on(cfg, name, wl, read or hf_config(cfg, name), device, routed=True)["kernels"]
    except _NotOnMeta as exc:
        raise RoofcalcError(f"{name}: its experts run as a fused MoE did not trace ({exc.why}); --impl hf-eager "
                            f"counts transformers' own program") from None


def _trace_on(cfg: dict, name: str, wl: Workload, read, device: str, routed: bool = False) -> dict:
    """:func:`trace_raw` on ``device``: "meta", or "cpu" (real tensors, random weights); ``routed``: a model
    whose experts transformers computes densely run as a fused MoE runs them (patches._routed_experts)."""
    config, check = read
    torch, transformers = _need_torch(cfg["model_type"])
    zero = getattr(config, "zero_expert_num", None)
    if isinstance(zero, int) and not isinstance(zero, bool) and zero > 0:
        raise RoofcalcError(f"{name}: {check.class_name}'s router also picks {zero} zero-computation experts, so how "
                            f"many expert matmuls a token runs depends on the router's values, which a trace on the "
                            f"meta device has not; roofcalc does not guess them")
    # fp16 is traced as bf16: the same bytes, and the grouped expert matmul takes only bf16 off a GPU
    dtype = getattr(torch, TORCH_DTYPES["bf16" if wl.act_dtype.name == "fp16" else wl.act_dtype.name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            auto = _auto_class(transformers, cfg["model_type"])
            with torch.device(device):
                model = auto.from_config(config, dtype=dtype).eval()
        except Exception as exc:
            raise RoofcalcError(f"{name}: transformers cannot build a causal LM from this config "
                                f"({type(exc).__name__}: {one_line(str(exc))[:160]})") from None
        stored = dict(model.state_dict(keep_vars=True))  # parameters and persistent buffers: the checkpoint
        weights = {_storage_key(p) for p in model.parameters()} | {_storage_key(t) for t in stored.values()}
        owner = {}
        for key_name, t in stored.items():
            mod_name = key_name.rsplit(".", 1)[0] if "." in key_name else ""
            owner.setdefault(mod_name, []).append(t)
        seen, n_params, p_bytes, module_params, weight_shapes = set(), 0, 0, {}, {}
        for mod_name, own in owner.items():
            count = nb = 0
            for p in own:
                key = _storage_key(p)
                if key in seen:
                    continue  # a tied weight counts once, with the module that owns it first
                seen.add(key)
                count += p.numel()
                nb += p.numel() * p.element_size()
                if p.dim() >= 2:  # a weight matrix (or a stack of experts'): what a quantized checkpoint stores
                    weight_shapes.setdefault(mod_name, []).append(list(p.shape))
            module_params[mod_name] = (count, nb)
            n_params += count
            p_bytes += nb
        # the parameters a module holds beside its submodules (attention sinks): a plan may split them by name
        parents = {n for n, m in model.named_modules() if next(m.children(), None) is not None}
        bare = {}
        for key_name, t in stored.items():
            mod_name, _, leaf = key_name.rpartition(".")
            if mod_name in parents and isinstance(t, torch.nn.Parameter):
                bare.setdefault(mod_name, {})[leaf] = [t.numel(), t.numel() * t.element_size()]
        fwd = inspect.signature(model.forward).parameters
        cache_kw = "cache" if "cache" in fwd else "past_key_values"
        keep = {} if wl.logits_all or "logits_to_keep" not in fwd else {"logits_to_keep": 1}
        rec = _Recorder(torch, model, experts_per_token(config), wl.experts)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        torch.nn.functional.scaled_dot_product_attention = rec.fused(sdpa)
        handed = None  # a cache handed to a model that keeps its own (recurrent Gemma)
        # which may keep its own: takes a cache and is no encoder (BERT-style classes declare is_decoder False)
        keeps_own = cache_kw in fwd and getattr(config, "is_decoder", None) is not False
        unpacked = _one_sequence_per_row(transformers)
        rotaries, first_position = _positional_rotaries(torch, model, dtype, max(wl.kv_len, wl.query_tokens) + 1) \
            if device == "meta" else ((lambda: None), [0])  # real tensors hold their positions
        grouped, one_kernel = _grouped_experts(torch, config.model_type)
        per_expert = _expert_matmul_fallback(torch)
        unroute, dense_experts = _routed_experts(torch, model, apply=routed)
        rec.leaf |= {m for m in model.modules() if isinstance(m, one_kernel)}
        try:
            with torch.no_grad():
                def first_pass(ids, recorded: bool):
                    """``ids`` through the model from an empty cache: (its output, the cache handed to it or
                    None). A model that makes its cache inside its forward and returns none (recurrent Gemma
                    keeps its recurrent states in its modules) is handed the one it would make; one whose
                    own cache is sized by another count of layers than its decoder runs (Blenderbot's
                    causal LM: by its encoder's) is handed one that grows with the layers."""
                    ctx = rec.mode if recorded else contextlib.nullcontext()
                    try:
                        with ctx:
                            out = model(input_ids=ids, use_cache=True, **keep)
                    except IndexError:
                        if cache_kw not in fwd:
                            raise
                        out = None
                    if out is not None and (_cache_of(out) is not None or not keeps_own):
                        return out, None
                    handed = transformers.DynamicCache() if out is None else _handed_cache(transformers, config)
                    if recorded:
                        rec.restart()
                    with ctx:
                        again = model(input_ids=ids, use_cache=True, **{cache_kw: handed}, **keep)
                    if _filled(handed) or out is None:
                        return again, handed if _filled(handed) else None
                    if recorded:  # no cache at all (an encoder): the first run stands
                        rec.restart()
                        with ctx:
                            out = model(input_ids=ids, use_cache=True, **keep)
                    return out, None

                if wl.phase == "prefill":
                    ids = torch.zeros((wl.batch, wl.query_tokens), dtype=torch.long, device=device)
                    old_cache: set = set()
                    out, handed = first_pass(ids, recorded=True)
                else:
                    def decode(whole: bool):
                        """The context less one token into a cache, then the step: its new token, or with
                        ``whole`` the whole sequence (a model that skips the positions its cache holds)."""
                        ids = torch.zeros((wl.batch, wl.kv_len - 1), dtype=torch.long, device=device) \
                            if wl.kv_len > 1 else None
                        cache, handed = None, None
                        if ids is not None:
                            with _unrecorded_chunked_rules(torch, model) if device == "meta" else \
                                    contextlib.nullcontext():
                                out, handed = first_pass(ids, recorded=False)
                            cache = handed if handed is not None else _cache_of(out)
                            if cache is None:
                                why = (f"{check.class_name}'s model keeps no KV cache (a recurrent or cache-less "
                                       f"model)")
                                raise NoKVCache(f"{name}: {why}; roofcalc traces decode steps on a cache: trace "
                                                f"its prefill (--prompt)", why)
                        old_cache = _cache_storages(torch, cache)
                        if cache is not None:  # alive to the end: the step's new tensors never reuse their storage
                            rec.keep.extend(_cache_tensors(torch, cache) + _state_tensors(torch, cache))
                        step = torch.zeros((wl.batch, wl.kv_len if whole else 1), dtype=torch.long, device=device)
                        first_position[0] = wl.kv_len - 1
                        kw = {cache_kw: cache} if cache is not None else {}
                        with rec.mode:
                            out = model(input_ids=step, use_cache=True, **kw, **keep)
                        return out, handed, old_cache

                    try:
                        out, handed, old_cache = decode(whole=False)
                    except RoofcalcError:
                        raise
                    except Exception:
                        # on real tensors, a model whose forward takes the whole sequence and runs only the
                        # positions its cache does not hold (XLM, as its generate calls it) gets it
                        if device == "meta" or wl.kv_len < 2:
                            raise
                        rec.restart()
                        out, handed, old_cache = decode(whole=True)
        except RoofcalcError:
            raise
        except Exception as exc:
            raise _NotOnMeta(f"{type(exc).__name__}: {one_line(str(exc))[:160]}", p_bytes, n_params) from None
        finally:
            torch.nn.functional.scaled_dot_product_attention = sdpa
            unpacked()
            rotaries()
            grouped()
            per_expert()
            unroute()
            rec.close()
    new_cache = _cache_of(out)
    if new_cache is None:  # a cache handed to the model, which fills it and returns none
        new_cache = handed
    cache = _cache_storages(torch, new_cache)
    finals = cache | {_storage_key(t) for t in torch.utils._pytree.tree_leaves(getattr(out, "logits", None))
                      if isinstance(t, torch.Tensor)}
    text = getattr(config, "get_text_config", lambda: config)()
    lists = _layer_lists(torch, model, getattr(text, "num_hidden_layers", None))
    traced = group_ops(rec.ops, weights, cache | old_cache, old_cache, finals, module_params, lists)
    cache_bytes = _cache_bytes(torch, new_cache)
    extra = {}
    if auto is transformers.AutoModelForImageTextToText:  # the whole model, its encoders built (and counted)
        language = language_params(torch, model)
        if language is not None and language < n_params:
            extra["language_params"] = language
    elif isinstance(cfg.get(WHOLE_KEY), dict):  # a text config traced alone: the encoders its checkpoint holds
        extra["encoders"] = encoder_params(torch, transformers, cfg[WHOLE_KEY], name, dtype)
    elif isinstance(cfg.get("text_config"), dict) and any(
            isinstance(v, dict) and k.endswith("_config") and k not in ("text_config", "quantization_config")
            for k, v in cfg.items()):  # a causal LM built from the whole config holds its text model alone
        extra["encoders"] = encoder_params(torch, transformers, cfg, name, dtype)  # (Mllama): count the towers
    # ... and that its program here is still the dense one: a batched matmul over a weight (an expert stack)
    if dense_experts and not routed and any(op.name == "bmm" and any(key in weights for key, _ in op.reads)
                                            for op in rec.ops):
        extra["dense_experts"] = True
    return {**extra,
        "format": TRACE_FORMAT, "transformers": transformers.__version__, "class": type(model).__name__,
        "config_class": check.class_name, "ignored": list(check.ignored), "defaulted": [list(x) for x in check.defaulted],
        "params": n_params, "param_bytes": p_bytes, "cache_bytes": cache_bytes, "weight_shapes": weight_shapes,
        "module_params": {m: [count, nb, _layer_split(m, lists)[0]] for m, (count, nb) in module_params.items()},
        "bare_params": bare,
        "kv_bytes_per_token": _per_token(torch, new_cache, wl.batch),
        "cache_layers": _per_layer(torch, new_cache, wl.batch),
        "logits": "last" if keep else "all",
        "kernels": [_kernel_doc(k) for k in traced],
    }
