"""The traced backend: kernel costs read off the real transformers modeling code, for any architecture.

The model is built from its config on PyTorch's ``meta`` device (shapes only: no weights, nothing
downloaded, never remote code). A prefill, and for a decode step the step after it with the KV cache
the prefill left, run under a dispatch mode that records every ATen op: the module it ran in, the
modeling-code function that called it, its FLOPs (torch's own FLOP formulas,
``torch.utils.flop_counter``) and the storages it reads and writes.

Ops are grouped into roofcalc's kernels: each leaf module (a projection, a norm, a router, the
experts) is one; so is each modeling-code function called from a forward (the attention core, the
rotary embedding, the cache update, ``repeat_kv``); the remaining ops of a forward body are one
kernel per op. Layers whose kernels cost the same are merged into one row with a count.

Bytes come in two views. *eager*: every op reads its inputs and writes its outputs (views move
nothing), what transformers' eager code moves; its launches are the ops. *ideal*: each kernel reads
what it did not itself produce and writes what something outside it reads, once, as a fused kernel
would; the cache update writes only the new positions (the hand models' convention). An embedding
gather reads the rows it gathers, never the whole table.

Elementwise FLOPs: one per output element of each arithmetic op (torch's formulas count matmuls
and attention only); matmul FLOPs are torch's.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import math
import os
import re
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .calculator import Analysis, Analyzer, Cost, Kernel, MatmulSizes, Workload
from .errors import NoKVCache, RoofcalcError
from .inputs import one_line
from .shapes import ModelShape

TRACE_FORMAT = 11  # 11: a matmul's sizes (m, n, k) as integers; the cache file format (2: expert weights carry their full bytes; 3: recurrent states in the
# cache; 4: the keys and values of an encoder-decoder cache; 5: each module's weight shapes; 6: which logits;
# 7: sizes read under another name and rotary keys read into rope_parameters are no longer listed as ignored;
# 8: kernels named by the function a decorator wraps; 9: module lists of one entry per layer under other names
# are layers; 10: a wrapper's experts per token read from its text config, Kimi-K2.5's)
ATTENTION_FUNCTIONS = ("attention_forward", "sdpa_attention_forward", "eager_attention_forward",
                       "flash_attention_forward", "flex_attention_forward")
NO_DATA_OPS = {"_unsafe_view", "alias", "detach", "lift_fresh", "_reshape_alias", "empty", "empty_like",
               "empty_strided", "new_empty", "new_empty_strided", "resize_", "set_", "_local_scalar_dense", "sym_size",
               "sym_stride", "sym_numel", "sym_storage_offset"}
ARITHMETIC = {"add", "sub", "mul", "div", "neg", "pow", "rsqrt", "sqrt", "exp", "log", "tanh", "sigmoid", "silu",
              "gelu", "relu", "softmax", "_softmax", "_safe_softmax", "mean", "sum", "cos", "sin", "erf", "reciprocal",
              "where", "maximum", "minimum", "clamp", "native_layer_norm", "rsub", "abs", "addcmul", "addcdiv",
              "masked_fill", "_log_softmax", "var_mean", "topk", "sort", "cumsum", "argmax", "max", "min"}
# the inner functions of transformers' decorators (a hub kernel's reference fallback runs inside "wrapped"):
# a kernel is named by the function they wrap
DECORATOR_SHIMS = {"wrapped", "wrapper", "wrapped_func", "wrapped_fn", "inner"}
# config keys that size the model: ignored or defaulted, they mean another model is traced
DIMENSION_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                  "intermediate_size", "vocab_size", "head_dim", "n_embd", "n_layer", "n_head", "d_model",
                  "num_layers", "num_heads", "ffn_dim", "n_inner", "multi_query", "num_local_experts", "num_experts",
                  "n_routed_experts", "moe_intermediate_size", "num_experts_per_tok")
# one size under several names: a checkpoint may write a legacy name beside the one its class reads (Mamba's
# n_layer beside num_hidden_layers, LFM2's num_heads beside num_attention_heads; Hunyuan-A13B's per-layer
# moe_intermediate_size, whose experts transformers sizes by intermediate_size)
SIZE_NAMES = (("hidden_size", "n_embd", "d_model"), ("num_hidden_layers", "n_layer", "num_layers"),
              ("num_attention_heads", "n_head", "num_heads"),
              ("intermediate_size", "ffn_dim", "n_inner", "moe_intermediate_size"),
              ("num_local_experts", "num_experts", "n_routed_experts"))
GENERIC_KEYS = {"architectures", "auto_map", "model_type", "torch_dtype", "dtype", "transformers_version",
                "_name_or_path", "bos_token_id", "eos_token_id", "pad_token_id", "quantization_config", "use_cache",
                "tie_word_embeddings", "is_decoder", "id2label", "label2id", "task_specific_params",
                "output_attentions", "output_hidden_states", "return_dict", "torch_dtype", "problem_type"}
TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _need_torch(model_type: str):
    try:
        import torch
        import transformers

        transformers.logging.set_verbosity_error()  # its notes on the config are not the user's output
    except ImportError:
        raise RoofcalcError(f"model_type '{model_type}' has no hand model in roofcalc, and tracing it needs torch and "
                            f"transformers: pip install 'roofcalc[torch]'") from None
    return torch, transformers


# --------------------------------------------------------------------------- the config

@dataclass(frozen=True)
class ConfigCheck:
    class_name: str
    ignored: tuple[str, ...]  # keys the config gives that its class does not read
    defaulted: tuple[tuple[str, Any], ...]  # size keys the class reads that the config leaves to the default


def hf_config(cfg: dict, name: str):
    """transformers' config object for ``cfg`` and what it ignored or defaulted; refusals name why."""
    torch, transformers = _need_torch(str(cfg.get("model_type")))
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        from .families import SUPPORTED_FAMILIES

        near = _nearest_family(cfg)
        hint = (f"read it as a hand-modelled family with --family {near} (one of {', '.join(SUPPORTED_FAMILIES)}) "
                f"if its modeling code is that family's" if near else
                f"no hand-modelled family ({', '.join(SUPPORTED_FAMILIES)}) reads its keys either: its sizes "
                f"are under names of its own")
        raise RoofcalcError(
            f"{name}: model_type '{one_line(str(model_type))[:60]}' is not a model transformers "
            f"{transformers.__version__} can build (remote code only?), and roofcalc never runs remote code; "
            + hint)
    cls = CONFIG_MAPPING[model_type]
    reads = set(inspect.signature(cls.__init__).parameters) | set(getattr(cls, "attribute_map", {}) or {})
    reads |= _modeling_reads(model_type)
    try:  # what the class itself writes into a config.json it saves
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reads |= set(cls().to_dict())
    except Exception:  # a class whose defaults do not build alone
        pass
    for base in cls.__mro__[1:]:
        if base.__name__ == "PreTrainedConfig" or base.__name__ == "PretrainedConfig":
            reads |= set(inspect.signature(base.__init__).parameters)
    sub = set((getattr(cls, "sub_configs", None) or {}).keys())
    ignored = tuple(sorted(k for k in cfg if k not in reads and k not in GENERIC_KEYS and k not in sub
                           and not k.startswith("_")))
    _check_sizes(cfg, name)
    kwargs = {k: v for k, v in cfg.items() if k not in ("model_type", "quantization_config", "auto_map")}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = cls(**kwargs)
    except Exception as exc:  # transformers' own validation
        raise RoofcalcError(f"{name}: transformers cannot build a {cls.__name__} from this config "
                            f"({type(exc).__name__}: {one_line(str(exc))[:160]})") from None
    # a multimodal class may move flattened text keys into its text config (Qwen2.5-VL's checkpoints
    # write them so): a key a sub-config holds with the given value was read (the config itself keeps
    # any unknown key as an attribute, so only its sub-configs tell)
    parts = [getattr(config, k) for k in sorted(sub) if hasattr(getattr(config, k, None), "to_dict")]
    ignored = tuple(k for k in ignored if not any(_holds(c, k, cfg[k]) for c in parts)
                    and not _in_rope(config, k, cfg[k]) and not _read_as(config, reads, k, cfg[k]))
    lost = [k for k in ignored if k in DIMENSION_KEYS]
    if lost:
        raise RoofcalcError(f"{name}: transformers' {cls.__name__} does not read {', '.join(lost)}: tracing it would "
                            f"build the class's default model, not this one (a text config flattened under a "
                            f"multimodal model_type?); give the config its own model_type")
    defaults = {}
    try:
        sig = inspect.signature(cls.__init__).parameters
        for k in DIMENSION_KEYS:
            if k in sig and k not in cfg and sig[k].default is not inspect.Parameter.empty:
                defaults[k] = sig[k].default
    except (TypeError, ValueError):  # pragma: no cover - a class without a signature
        pass
    return config, ConfigCheck(cls.__name__, ignored, tuple(sorted(defaults.items())))


def _read_as(config, reads: set, key: str, value) -> bool:
    """Whether the class read the size ``key`` holds under another of its names, at the same value."""
    names = next((n for n in SIZE_NAMES if key in n), ())
    if isinstance(value, list) and value and all(v == value[0] for v in value):
        value = value[0]  # the same size in every layer
    return any(other != key and other in reads and _holds(config, other, value) for other in names)


def _in_rope(config, key: str, value) -> bool:
    """Whether a rotary key given at the top (rope_theta, partial_rotary_factor, or a rope_scaling object)
    was read into the config's rope_parameters, as transformers 5 reads them."""
    rope = getattr(config, "rope_parameters", None)
    if not isinstance(rope, dict):
        return False
    # one set of parameters, or one per kind of layer (Gemma 3: full and sliding attention)
    sets = [r for r in rope.values() if isinstance(r, dict)] or [rope]
    if key == "rope_scaling" and isinstance(value, dict):
        return any(all(r.get("rope_type" if k == "type" else k) == v for k, v in value.items()) for r in sets)
    return any(key in r and r[key] == value for r in sets)  # rope_theta, partial_rotary_factor (Phi-3)


def _holds(config, key: str, value) -> bool:
    """Whether the built config holds ``key`` at ``value`` (rotary keys inside its rope_parameters)."""
    try:
        if getattr(config, key) == value:
            return True
    except Exception:  # an attribute the config does not have, or one that raises
        pass
    rope = getattr(config, "rope_parameters", None)
    return isinstance(rope, dict) and key in rope and rope[key] == value


MAX_TRACED_LAYERS = 512  # 4x the deepest published decoder (Llama-3.1-405B: 126); building more takes minutes


def _check_sizes(cfg: dict, name: str, depth: int = 0) -> None:
    """Size keys are positive integers within the hand models' limits, before anything is built: the
    config's own and its sub-configs' (a vision tower's depth and widths are built too)."""
    from .shapes import MAX_DIM, MAX_PARAMS, MAX_VOCAB

    if depth < 2:
        for key, sub in cfg.items():
            if isinstance(sub, dict) and key.endswith("_config"):
                _check_sizes(sub, f"{name}: {key}", depth + 1)
    sizes = {}
    for key in DIMENSION_KEYS + (("depth",) if depth else ()):
        value = cfg.get(key)
        if value is None or key == "multi_query":
            continue
        limit = MAX_TRACED_LAYERS if key in ("num_hidden_layers", "n_layer", "num_layers", "depth") else \
            MAX_VOCAB if key == "vocab_size" else MAX_DIM
        # a size per layer (Gemma 3n's intermediate_size, Hunyuan-A13B's moe_intermediate_size)
        values = value if isinstance(value, list) and value and len(value) <= MAX_TRACED_LAYERS else [value]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= limit:
                raise RoofcalcError(f"{name}: '{key}' must be a positive integer of at most {limit:,}, "
                                    f"got {one_line(repr(value))[:40]}")
        sizes[key] = max(values)
    d = sizes.get("hidden_size") or sizes.get("n_embd") or sizes.get("d_model") or 1
    layers = sizes.get("num_hidden_layers") or sizes.get("n_layer") or sizes.get("num_layers") or 1
    width = max(d, sizes.get("intermediate_size", 0), sizes.get("ffn_dim", 0), sizes.get("n_inner", 0))
    experts = max(1, sizes.get("num_local_experts", 0), sizes.get("num_experts", 0), sizes.get("n_routed_experts", 0))
    estimate = layers * (4 * d * d + 3 * d * width * experts) + 2 * sizes.get("vocab_size", 0) * d
    if estimate > MAX_PARAMS:
        raise RoofcalcError(f"{name}: these dimensions make about {estimate:.2g} parameters, beyond any real model "
                            f"(limit {MAX_PARAMS:.0e}); check the config")


_READS: dict[str, frozenset] = {}


def _modeling_reads(model_type: str) -> frozenset:
    """Config keys the modeling code reads itself (``config.head_dim``, ``getattr(config, "head_dim", ...)``):
    a config class may leave a key to its modeling code (Qwen3-MoE's head_dim)."""
    if model_type not in _READS:
        import importlib

        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        keys: set[str] = set()
        cls_name = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type)
        if cls_name:
            try:
                import transformers

                module = importlib.import_module(getattr(transformers, cls_name).__module__)
                text = inspect.getsource(module)
                keys |= set(re.findall(r"config\.(\w+)", text))
                keys |= set(re.findall(r"getattr\(\s*(?:self\.)?config\s*,\s*[\"'](\w+)", text))
            except (AttributeError, ImportError, OSError, TypeError):
                pass
        _READS[model_type] = frozenset(keys)
    return _READS[model_type]


def _nearest_family(cfg: dict) -> str | None:
    """The hand family to suggest for a remote-code config: the likeliest by its keys that reads it at all
    (ChatGLM's num_layers and padded_vocab_size no family reads: None)."""
    from .families import SUPPORTED_FAMILIES
    from .shapes import shape_from_config

    keys = set(cfg)
    first = "mixtral" if keys & {"num_local_experts"} else "deepseek_v3" if keys & {"kv_lora_rank", "q_lora_rank"} \
        else "qwen3_moe" if keys & {"n_routed_experts", "num_experts"} else "gpt2" if keys & {"n_embd", "n_layer"} \
        else "llama"
    for family in [first, "llama"] + [f for f in SUPPORTED_FAMILIES if f not in (first, "llama")]:
        try:
            shape_from_config(cfg, "t", family=family)
            return family
        except RoofcalcError:
            continue
    return None


# --------------------------------------------------------------------------- recording ops

@dataclass
class _Op:
    name: str  # aten op, without overload
    group: tuple[str, str]  # (module path, function or "op:<name>")
    instance: int  # which run of that group this op belongs to
    flops: int
    matmul_flops: int
    reads: list  # (storage key, bytes)
    writes: list
    launches: int
    dims: str
    experts: tuple | None = None  # (E, k, ((storage key, full bytes), ...)): expert weights read in part
    sizes: tuple | None = None  # a matmul's (m, n, k): rows, outputs, reduction depth


def _storage_key(t) -> int:
    return t.untyped_storage()._cdata


def _nbytes(t) -> int:
    """Bytes a tensor's op touches: its elements, but no more than its storage holds (an expanded view)."""
    n = t.numel() * t.element_size()
    try:
        return min(n, t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):  # pragma: no cover - a storage-less tensor
        return n


class _Recorder:
    def __init__(self, torch, model, top_k: int | None = None, experts: str = "expected"):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        self.torch, self.model = torch, model
        self.top_k, self.experts = top_k, experts
        self.ops: list[_Op] = []
        self.keep: list = []  # every output stays alive: storage keys are never reused mid-trace
        self.stack: list = []  # (path, module) of the modules running
        self.names = {m: n for n, m in model.named_modules()}
        paths: dict = {}
        for n, m in model.named_modules(remove_duplicate=False):
            paths.setdefault(m, []).append(n)
        self.shared = {m for m, ps in paths.items() if len(ps) > 1}  # one module under several paths
        self.leaf = {m for m in model.modules() if not any(True for _ in m.children())}
        self.instances: dict[tuple[str, str], int] = {}
        self.last_group: tuple[str, str] | None = None
        import transformers

        self.tf_root = str(Path(transformers.__file__).parent)
        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                recorder.record(func, args, kwargs, out, flop_registry)
                return out

        self.mode = Mode()
        self.hooks = []
        for m in model.modules():
            self.hooks.append(m.register_forward_pre_hook(self._enter))
            self.hooks.append(m.register_forward_hook(self._leave))

    def _enter(self, module, _args):
        name = self.names.get(module, "?")
        if module in self.shared and self.stack:  # named by the module that runs it (XLM's one GELU in every
            outer, parent = self.stack[-1]  # layer's ffn), not by the first path that holds it
            name = next((f"{outer}.{attr}" if outer else attr for attr, child in parent.named_children()
                         if child is module), name)
        self.stack.append((name, module))

    def _leave(self, module, _args, _out):
        self.stack.pop()

    def close(self):
        for h in self.hooks:
            h.remove()

    def restart(self) -> None:
        """Forget the ops recorded so far (a step run again)."""
        self.ops.clear()
        self.instances.clear()
        self.last_group = None

    def fused(self, fn):
        """``fn`` (scaled_dot_product_attention) as one kernel: on a GPU it is one fused launch that
        reads q, k, v (and a mask) and writes its output; the meta device runs it as its math ops."""
        torch, recorder = self.torch, self

        def call(*args, **kwargs):
            start = len(recorder.ops)
            out = fn(*args, **kwargs)
            run = recorder.ops[start:]
            if not run:
                return out
            ins = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
            reads, seen = [], set()
            for t in ins:
                key = _storage_key(t)
                if key not in seen:
                    seen.add(key)
                    reads.append((key, _nbytes(t)))
            first = run[0]
            del recorder.ops[start:]
            recorder.ops.append(_Op("scaled_dot_product_attention", first.group, first.instance,
                                    sum(o.flops for o in run), sum(o.matmul_flops for o in run), reads,
                                    [(_storage_key(out), _nbytes(out))], 1,
                                    "x".join(f"[{','.join(map(str, t.shape))}]" for t in ins[:2])))
            return out

        return call

    def _function(self) -> str | None:
        """The outermost modeling-code function between the running module's forward and this op."""
        frame, found = sys._getframe(3), None
        while frame is not None:
            code = frame.f_code
            if code.co_name == "forward" and "self" in frame.f_locals and \
                    isinstance(frame.f_locals["self"], self.torch.nn.Module):
                return found
            if code.co_filename.startswith(self.tf_root) and not code.co_name.startswith("_") and \
                    code.co_name not in DECORATOR_SHIMS and \
                    os.sep + "utils" + os.sep not in code.co_filename[len(self.tf_root):]:  # decorators
                found = code.co_name if "cache_utils" not in code.co_filename else "kv_cache_update"
                if "masking_utils" in code.co_filename:
                    found = "attention_mask"
            frame = frame.f_back
        return found

    def record(self, func, args, kwargs, out, registry) -> None:
        torch = self.torch
        name = func._overloadpacket.__name__
        flat_in = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        flat_out = [a for a in torch.utils._pytree.tree_leaves(out) if isinstance(a, torch.Tensor)]
        self.keep.extend(flat_out)
        if func.is_view or name in NO_DATA_OPS:
            return
        module, mod_obj = self.stack[-1] if self.stack else ("", None)
        fn = None
        # a leaf module is one kernel whatever it calls; elsewhere the calling function names the kernel
        if mod_obj is None or mod_obj not in self.leaf:
            fn = self._function()
        if fn is not None and any(fn.endswith(a) for a in ATTENTION_FUNCTIONS):
            fn = "attention"
        leaf = mod_obj is not None and mod_obj in self.leaf
        group = (module, "" if leaf else fn or f"op:{name}")
        if group != self.last_group:
            self.instances[group] = self.instances.get(group, 0) + 1
            self.last_group = group
        f = registry.get(func._overloadpacket)
        mm = int(f(*args, **kwargs, out_val=out)) if f is not None else 0
        expert_share = None
        if name == "_grouped_mm":  # [tokens·k, K] rows over [E, K, N] expert weights
            a, b = flat_in[0], flat_in[1]
            mm = 2 * a.shape[0] * a.shape[-1] * b.shape[-1]
            if self.top_k and b.dim() == 3:  # the experts the tokens reach (roofcalc's --experts rule)
                from .calculator import touched_experts

                n_exp = b.shape[0]
                expert_share = (_storage_key(b), touched_experts(n_exp, self.top_k, max(1, a.shape[0] // self.top_k),
                                                                 self.experts) / n_exp, n_exp)
        elementwise = sum(t.numel() for t in flat_out) if name in ARITHMETIC else 0
        seen, reads, experts = set(), [], None
        for i, t in enumerate(flat_in):
            key = _storage_key(t)
            if key in seen:
                continue
            seen.add(key)
            nbytes = _nbytes(t)
            if name in ("embedding", "index_select") and i == 0:  # a gather reads the rows it gathers
                nbytes = min(nbytes, sum(_nbytes(o) for o in flat_out))
            if expert_share is not None and key == expert_share[0]:
                experts = (expert_share[2], self.top_k, ((key, nbytes),))
                nbytes = round(nbytes * expert_share[1])
            reads.append((key, nbytes))
        writes = [(_storage_key(t), _nbytes(t)) for t in flat_out]
        operands = [t for t in flat_in if t.dim() >= 2][:2]  # addmm's bias is not an operand
        dims = "x".join(f"[{','.join(map(str, t.shape))}]" for t in operands) if mm else \
            (f"[{','.join(map(str, flat_out[0].shape))}]" if flat_out else "")
        sizes = None
        if mm and len(operands) == 2:  # [.., m, k] x [.., k, n]: the rows every leading dimension adds up to
            a, b = (tuple(int(x) for x in t.shape) for t in operands)
            sizes = (math.prod(a[:-1]), b[-1], a[-1])
        self.ops.append(_Op(name, group, self.instances[group], mm + elementwise, mm, reads, writes, 1, dims, experts,
                            sizes))


# --------------------------------------------------------------------------- grouping ops into kernels

_LAYER = re.compile(r"^(.*?\b(?:layers|h|blocks|layer|decoder\.layers))\.(\d+)(?:\.(.*))?$")


def _layer_split(path: str, lists: tuple[str, ...] = ()) -> tuple[int | None, str, str]:
    """(layer index or None, the path inside the layer, the prefix): 'model.layers.3.mlp.up_proj' ->
    (3, 'mlp.up_proj', 'model.layers'). ``lists``: module lists of one entry per layer under other names,
    a model that keeps each part of its layers in a list of its own (XLM: 'transformer.attentions.3.q_lin'
    -> (3, 'attentions.q_lin', 'transformer'))."""
    m = _LAYER.match(path)
    if m:
        return int(m[2]), m[3] or "", m[1]
    for prefix in lists:
        if path.startswith(prefix + "."):
            index, _, rest = path[len(prefix) + 1:].partition(".")
            if index.isdigit():
                outer, _, own = prefix.rpartition(".")
                return int(index), own + ("." + rest if rest else ""), outer
    return None, path, ""


def _layer_lists(torch, model, layers) -> tuple[str, ...]:
    """The model's module lists of one entry per layer that are not named as layers (XLM's attentions,
    ffns, layer_norm1 and layer_norm2)."""
    if not isinstance(layers, int) or layers < 1:
        return ()
    return tuple(n for n, m in model.named_modules()
                 if n and isinstance(m, torch.nn.ModuleList) and len(m) == layers and not _LAYER.match(n + ".0"))


@dataclass(frozen=True)
class TracedKernel:
    name: str
    layer: int | None
    module: str  # the module path it ran in
    function: str  # "" for a leaf module; the modeling-code function, "attention" or "op:<aten op>"
    kind: str
    dims: str
    ideal: Cost
    eager: Cost
    launches: int
    params: int
    param_bytes: int
    experts: tuple | None = None  # (E, k, (full bytes of each expert weight read in part, ...))
    sizes: tuple | None = None  # a matmul's (m, n, k)
    role: str = ""  # "linear" or "experts" for a decoder layer's weights in a quantized format (they dequantize)


def _classify(key: int, nbytes: int, write: bool, weights: set, cache: set) -> Cost:
    if key in weights and not write:
        return Cost(weight_bytes=nbytes)
    if key in cache:
        return Cost(kv_write_bytes=nbytes) if write else Cost(kv_read_bytes=nbytes)
    return Cost(act_write_bytes=nbytes) if write else Cost(act_read_bytes=nbytes)


def group_ops(ops: list[_Op], weights: set, cache: set, old_cache: set, finals: set,
              module_params: dict[str, tuple[int, int]], lists: tuple[str, ...] = ()) -> list[TracedKernel]:
    """Kernels in execution order, one per (group, run of that group); ``lists`` as :func:`_layer_split`."""
    producer: dict[int, tuple] = {}
    consumers: dict[int, set] = {}
    for op in ops:
        inst = (op.group, op.instance)
        for key, _ in op.reads:
            consumers.setdefault(key, set()).add(inst)
        for key, _ in op.writes:
            producer.setdefault(key, inst)
    runs: dict[tuple, list[_Op]] = {}
    for op in ops:
        runs.setdefault((op.group, op.instance), []).append(op)
    kernels = []
    for inst, run in runs.items():
        (module, fn), _ = inst
        eager = Cost()
        for op in run:
            for key, nb in op.reads:
                eager = eager + _classify(key, nb, False, weights, cache)
            for key, nb in op.writes:
                eager = eager + _classify(key, nb, True, weights, cache)
        ideal = Cost()
        read_keys, write_keys = {}, {}
        for op in run:
            for key, nb in op.reads:
                if producer.get(key) != inst:
                    read_keys[key] = max(read_keys.get(key, 0), nb)
            for key, nb in op.writes:
                outside = consumers.get(key, set()) - {inst}
                if outside or key in finals:
                    write_keys[key] = max(write_keys.get(key, 0), nb)
        if fn == "kv_cache_update":  # the new positions only: read them, write them once
            new = sum(nb for k, nb in read_keys.items() if k not in old_cache and k not in cache)
            ideal = Cost(act_read_bytes=new, kv_write_bytes=new)
        else:
            for key, nb in read_keys.items():
                ideal = ideal + _classify(key, nb, False, weights, cache)
            for key, nb in write_keys.items():
                ideal = ideal + _classify(key, nb, True, weights, cache)
        flops = sum(op.flops for op in run)
        mm = sum(op.matmul_flops for op in run)
        ideal, eager = replace(ideal, flops=flops, matmul_flops=mm), replace(eager, flops=flops, matmul_flops=mm)
        layer, inner, _ = _layer_split(module, lists)
        short = inner if layer is not None else module.split(".", 1)[-1] if module.startswith("model.") else module
        if short == "language_model" or short.startswith("language_model."):  # a multimodal model's decoder,
            short = short[len("language_model."):] or "model"  # named as a causal LM's: norm, model.arange
        if fn == "attention":
            name, kind = (f"{short}.attention" if short else "attention"), "attention"
        elif fn and not fn.startswith("op:"):
            name, kind = (f"{short}.{fn}" if short else fn), "elementwise"
        elif fn:
            name, kind = (f"{short}.{fn[3:]}" if short else fn[3:]), "elementwise"
        else:
            name = short or "model"
            kind = "matmul" if mm else "elementwise"
        if mm and kind == "elementwise":
            kind = "matmul"
        if not flops and kind == "elementwise" and not eager.weight_bytes:
            kind = "memory"
        params, pbytes = module_params.get(module, (0, 0)) if not fn else (0, 0)
        mm_op = next((op for op in run if op.matmul_flops), None)
        dims = mm_op.dims if mm_op is not None else run[0].dims
        sizes = mm_op.sizes if mm_op is not None and kind == "matmul" else None
        if sizes is not None and not fn and mm_op.name != "_grouped_mm":  # a linear prints as the hand models do
            dims = MatmulSizes(*sizes).text
        parts = {key: nb for op in run if op.experts for key, nb in op.experts[2]}
        first = next((op.experts for op in run if op.experts), None)
        experts = (first[0], first[1], tuple(parts.values())) if first else None
        kernels.append(TracedKernel(name, layer, module, fn or "", kind, dims, ideal, eager, len(run), params, pbytes,
                                    experts, sizes))
    # a model whose layers are entries of several lists runs its residuals between them in the module that
    # holds the lists (XLM's transformer): those ops belong to the layer whose entries ran last
    outers = {p.rpartition(".")[0] for p in lists}
    layer = None
    for i, k in enumerate(kernels):
        if k.layer is not None and any(k.module.startswith(p + ".") for p in lists):
            layer = k.layer
        elif k.layer is None and layer is not None and k.module in outers:
            kernels[i] = replace(k, layer=layer)
    return kernels


def merge_layers(kernels: list[TracedKernel], view: str) -> list[Kernel]:
    """roofcalc kernels: identical layers' kernels become one row with a count. A name that runs
    twice in one layer (the experts' two grouped matmuls) is numbered: name, name#2."""
    seen: dict[tuple, int] = {}
    numbered = []
    for k in kernels:
        n = seen[(k.layer, k.name)] = seen.get((k.layer, k.name), 0) + 1
        numbered.append(replace(k, name=k.name if n == 1 else f"{k.name}#{n}"))
    kernels = numbered
    rows: dict[tuple, list] = {}
    for k in kernels:
        cost = k.ideal if view == "ideal" else k.eager
        key = (k.name, k.kind, k.dims, cost, k.launches, k.params, k.param_bytes, k.experts)
        if key in rows:
            rows[key][1] += 1
        else:
            rows[key] = [k, 1]
    names: dict[str, int] = {}
    for (name, *_rest) in rows:
        names[name] = names.get(name, 0) + 1
    out, taken = [], {}
    for (name, kind, dims, cost, launches, params, pbytes, _), (k, n) in rows.items():
        label = name
        if names[name] > 1:  # the same module costs differently in different layers (sliding, dense/MoE)
            label = f"{name}[{k.layer}]" if k.layer is not None else f"{name}[{taken.get(name, 0)}]"
            taken[name] = taken.get(name, 0) + 1
        scope = "layer" if k.layer is not None else "model"
        out.append(Kernel(label, kind, scope, n, dims, cost, params=params, param_bytes=pbytes, role=k.role,
                          launches=launches, expert_weights=k.experts, sizes=_sizes(k)))
    return out


# --------------------------------------------------------------------------- the traced step

@dataclass(frozen=True)
class TracedAnalysis(Analysis):
    source: str = "traced"
    view: str = "ideal"  # which bytes the kernels carry: ideal | eager
    traced_kv_bytes_per_token: int = 0
    traced_cache_bytes: int = 0  # the real cache after the step
    traced_params: int = 0
    traced_param_bytes: int = 0
    check: ConfigCheck | None = None
    note: str = ""
    logits: str = "last"  # the positions lm_head ran on: "last", or "all" (a model without logits_to_keep)

    @property
    def params(self) -> int:
        return self.traced_params

    @property
    def active_params(self) -> int:
        return self.traced_params

    @property
    def weight_storage_bytes(self) -> int:
        return self.traced_param_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        return self.traced_kv_bytes_per_token

    @property
    def memory_bytes(self) -> int:
        return self.traced_param_bytes + self.traced_cache_bytes


def _nested(config, part: str, key: str) -> int:
    """An integer a config keeps in a sub-object of its own (DBRX's ffn_config), else 0."""
    v = getattr(getattr(config, part, None), key, None)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


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
    window = get("sliding_window", default=None)
    kinds = getattr(text, "layer_types", None)
    if isinstance(kinds, (list, tuple)) and kinds and not any("sliding" in str(k) for k in kinds):
        window = None  # a window the class keeps but no layer uses (Dots1's 4096)
    from .shapes import _config_dtype, declared_weights

    return ModelShape(
        name=name, model_type=model_type, n_layers=n_layers, d_model=d, n_heads=n_heads, n_kv_heads=n_kv,
        head_dim=head_dim, d_ff=get("decoder_ffn_dim", "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size",
                                    default=0) or _nested(config, "ffn_config", "ffn_hidden_size") or 4 * d,
        vocab_size=get("vocab_size", default=0), tie_word_embeddings=getattr(config, "tie_word_embeddings", False) is True,
        qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm=False, activation="traced", embed_scale=False,
        rotary_dim=0, sliding_window=window, layer_types=("full",) * n_layers, family=model_type,
        config_dtype=_config_dtype(cfg), **declared_weights(cfg, name),
    )


def _cache_dir() -> Path:
    base = os.environ.get("ROOFCALC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roofcalc")
    return Path(base) / "traces"


def _cache_key(cfg: dict, wl: Workload, tf_version: str) -> str:
    doc = json.dumps({"cfg": cfg, "tf": tf_version, "format": TRACE_FORMAT, "phase": wl.phase, "batch": wl.batch,
                      "t": wl.query_tokens, "s": wl.kv_len, "dtype": wl.act_dtype.name, "logits": wl.logits_all},
                     sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()[:32]


def _check_workload(wl: Workload) -> None:
    for what, d in (("weights", wl.weight_dtype), ("activations", wl.act_dtype), ("KV cache", wl.kv_dtype)):
        if d.name not in TORCH_DTYPES and not (what == "weights" and d.scaled):
            raise RoofcalcError(f"a traced model runs in fp32, bf16 or fp16 (its weights also int8, int4, mxfp4, fp8-b128, fp8-ch, fp8-t or ternary); "
                                f"{what} {d.name} is for hand-modelled families")
    if not wl.act_dtype == wl.kv_dtype or not (wl.weight_dtype == wl.act_dtype or wl.weight_dtype.scaled):
        raise RoofcalcError("a traced model runs weights, activations and KV cache in one dtype (weights may be "
                            "int8, int4, mxfp4, fp8-b128, fp8-ch, fp8-t or ternary besides); give --dtype, and --weight-dtype for those")
    if not wl.causal:
        raise RoofcalcError("--full-rectangle is for hand-modelled families (a traced model runs its own mask)")


def _one_sequence_per_row(transformers):
    """A traced step holds one unpadded sequence per batch row. transformers' masks find that out by
    reading tensor values a meta tensor does not have: they look for several sequences packed into a
    row in the position ids (Gemma 4, Moshi), and whether a padding mask the model made for itself is
    all ones before they skip it (BioGPT, BART's decoder). Answer both as for no packing and no
    padding, without reading: no packed sequences, and the mask decision (causal or bidirectional) of a
    model given no padding mask (as a Llama is). Encoder-style models (RoFormer, RemBERT, BigBird) look for padding tokens in
    the ids to warn of a missing mask: there are none, so that warning is skipped. Returns the undo."""
    try:
        from transformers import masking_utils, modeling_utils
    except ImportError:  # an older transformers without these functions
        return lambda: None
    pretrained = modeling_utils.PreTrainedModel
    warn = pretrained.__dict__.get("warn_if_padding_and_no_attention_mask")
    if warn is not None:
        pretrained.warn_if_padding_and_no_attention_mask = lambda self, input_ids, attention_mask: None
    saved = {name: getattr(masking_utils, name, None) for name in ("find_packed_sequence_indices",
                                                                  "_ignore_causal_mask_sdpa",
                                                                  "_ignore_bidirectional_mask_sdpa")}
    if saved["find_packed_sequence_indices"] is not None:
        masking_utils.find_packed_sequence_indices = lambda position_ids: None

    def unpadded(ignore):
        def call(padding_mask, *args, **kwargs):
            meta = padding_mask is not None and getattr(padding_mask, "device", None) is not None and \
                padding_mask.device.type == "meta"
            return ignore(None if meta else padding_mask, *args, **kwargs)

        return call

    for name in ("_ignore_causal_mask_sdpa", "_ignore_bidirectional_mask_sdpa"):
        if saved[name] is not None:
            setattr(masking_utils, name, unpadded(saved[name]))

    def undo():
        for name, fn in saved.items():
            if fn is not None:
                setattr(masking_utils, name, fn)
        if warn is not None:
            pretrained.warn_if_padding_and_no_attention_mask = warn

    return undo


def _positional_rotaries(torch, model, dtype, positions: int):
    """Rotary embeddings that read their position ids' values cannot run on meta tensors, which hold none:
    dynamic (NTK) scaling grows its frequencies with the step's last position (transformers'
    ``dynamic_rope_update``), Phi-3.5-MoE's longrope rotary picks its scale by it. Each such module (found by running
    it once on meta tensors) runs its own forward on the CPU instead, on the step's real positions (one
    unpadded sequence per row, the first at ``start[0]``) and with the buffers its class computes from the
    config, and hands meta tensors of its outputs' shapes on: the ops it records are the module's own,
    those that read the positions included (a GPU runs them too). Returns (the undo, ``start``)."""
    start, patched = [0], []
    base = torch.arange(positions)
    x, ids = torch.empty((1, 1, 1), dtype=dtype, device="meta"), torch.zeros((1, 1), dtype=torch.long, device="meta")
    for module in model.modules():
        if not hasattr(module, "rope_init_fn") and "inv_freq" not in dict(module.named_buffers(recurse=False)):
            continue
        try:
            module.forward(x, ids)
            continue
        except RuntimeError as exc:  # reads a value: "Tensor.item() cannot be called on meta tensors"
            if "meta" not in str(exc):
                continue
        except Exception:  # another signature (per-layer-type rotaries): it runs as it is
            continue
        try:
            twin = type(module)(module.config)
        except Exception:  # a class that cannot be rebuilt alone: the trace refuses as before
            continue

        def forward(x, position_ids, *args, _twin=twin, **kwargs):
            at = base[start[0]:start[0] + position_ids.shape[-1]].expand(position_ids.shape)
            out = _twin.forward(torch.empty(0, dtype=x.dtype), at, *args, **kwargs)
            return tuple(torch.empty(t.shape, dtype=t.dtype, device=x.device) for t in out)

        module.forward = forward
        patched.append(module)

    def undo():
        for module in patched:
            del module.forward

    return undo, start


def _dbrx_experts(torch, module):
    """DBRX: DbrxExperts hands its GLU each expert the router reached (``nonzero``)."""

    def glu(self, hidden_states, top_k_index, top_k_weights):  # DbrxExpertGLU on every (token, expert) pair
        k, d = top_k_index.shape[-1], hidden_states.shape[-1]
        stack = (self.moe_num_experts, self.ffn_hidden_size, d)
        expert_ids, order = torch.sort(top_k_index.reshape(-1))
        rows = hidden_states[order // k]
        offsets = torch.cumsum(torch.histc(expert_ids.float(), bins=self.moe_num_experts, min=0,
                                           max=self.moe_num_experts - 1), dim=0, dtype=torch.int32)
        gate = torch._grouped_mm(rows, self.w1.view(stack).transpose(1, 2), offs=offsets)
        up = torch._grouped_mm(rows, self.v1.view(stack).transpose(1, 2), offs=offsets)
        out = torch._grouped_mm(self.activation_fn.forward(gate) * up, self.w2.view(stack), offs=offsets)
        out = out * top_k_weights.reshape(-1)[order, None]
        return torch.zeros_like(hidden_states).index_add_(0, order // k, out)

    def experts(self, hidden_states, top_k_index, top_k_weights):
        batch = hidden_states.shape[0]
        flat = hidden_states.reshape(-1, self.hidden_size)
        return self.mlp(flat, top_k_index, top_k_weights).view(batch, -1, self.hidden_size)

    return {module.DbrxExpertGLU: glu, module.DbrxExperts: experts}, (module.DbrxExpertGLU,)


def _jetmoe_experts(torch, module):
    """JetMoE: its router hands each expert stack the count of tokens it reached (``tolist``), and the
    stack splits its rows by them; here the counts stay a tensor, the offsets of one grouped matmul."""

    def gating(self, hidden_states):  # JetMoeTopKGating, its counts per expert kept on the device
        logits = self.layer(hidden_states).float()
        top_logits, top_experts = logits.topk(self.top_k, dim=1)
        gates = torch.softmax(top_logits, dim=1).type_as(hidden_states).flatten()
        counts = torch.zeros((hidden_states.shape[0], self.num_experts), dtype=torch.long,
                             device=hidden_states.device).scatter(1, top_experts, 1).sum(0)
        _, order = top_experts.flatten().sort(0)
        return order, order.div(self.top_k, rounding_mode="trunc"), gates[order], counts, logits

    def stack(self, inputs, expert_size):  # JetMoeParallelExperts: every row through its expert
        offsets = torch.cumsum(expert_size, dim=0, dtype=torch.int32)
        return torch._grouped_mm(inputs, self.weight.transpose(1, 2), offs=offsets)

    return {module.JetMoeTopKGating: gating, module.JetMoeParallelExperts: stack}, ()


# model package -> (module name, substitutes): expert loops that read routing values
_EXPERT_LOOPS = {"dbrx": ("modeling_dbrx", _dbrx_experts), "jetmoe": ("modeling_jetmoe", _jetmoe_experts)}


def _grouped_experts(torch, model_type: str):
    """Expert loops that ask which experts a batch reached (``nonzero`` or ``tolist`` on the router's
    choice, as DBRX's and JetMoE's do) cannot run on meta tensors, which hold no values. In a trace such
    an experts module runs as one grouped matmul per expert weight stack, as transformers' own
    ``grouped_mm`` experts run Mixtral's: the same FLOPs (each token through its k experts) and, through
    the recorder, the weights of the experts the batch reaches. The modules and their weights are the
    model's own. Returns (the undo, the classes whose modules are each one kernel)."""
    if model_type not in _EXPERT_LOOPS:
        return (lambda: None), ()
    import importlib

    name, substitutes = _EXPERT_LOOPS[model_type]
    try:
        module = importlib.import_module(f"transformers.models.{model_type}.{name}")
    except ImportError:  # pragma: no cover - a transformers without the model
        return (lambda: None), ()
    forwards, one_kernel = substitutes(torch, module)
    undo = [(cls, cls.__dict__["forward"]) for cls in forwards]
    for cls, fn in forwards.items():
        cls.forward = fn

    def restore():
        for cls, fn in undo:
            cls.forward = fn

    return restore, one_kernel


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
        from .measure import available_memory_bytes

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


def _trace_on(cfg: dict, name: str, wl: Workload, read, device: str) -> dict:
    """:func:`trace_raw` on ``device``: "meta", or "cpu" (real tensors, random weights)."""
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
            with torch.device(device):
                model = _auto_class(transformers, cfg["model_type"]).from_config(config, dtype=dtype).eval()
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
        fwd = inspect.signature(model.forward).parameters
        cache_kw = "cache" if "cache" in fwd else "past_key_values"
        keep = {} if wl.logits_all or "logits_to_keep" not in fwd else {"logits_to_keep": 1}
        inner = getattr(config, "get_text_config", lambda: config)()  # a wrapper's (Kimi-K2.5's) is its text config's
        top_k = next((v for c in (config, inner) for v in (getattr(c, "num_experts_per_tok", None),
                                                           getattr(c, "top_k", None)) if v), None) or \
            getattr(getattr(config, "ffn_config", None), "moe_top_k", None)  # DBRX keeps it in its ffn_config
        rec = _Recorder(torch, model, top_k if isinstance(top_k, int) else None, wl.experts)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        torch.nn.functional.scaled_dot_product_attention = rec.fused(sdpa)
        handed = None  # a cache handed to a model that keeps its own (recurrent Gemma)
        # which may keep its own: takes a cache and is no encoder (BERT-style classes declare is_decoder False)
        keeps_own = cache_kw in fwd and getattr(config, "is_decoder", None) is not False
        unpacked = _one_sequence_per_row(transformers)
        rotaries, first_position = _positional_rotaries(torch, model, dtype, max(wl.kv_len, wl.query_tokens) + 1) \
            if device == "meta" else ((lambda: None), [0])  # real tensors hold their positions
        grouped, one_kernel = _grouped_experts(torch, config.model_type)
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
    return {
        "format": TRACE_FORMAT, "transformers": transformers.__version__, "class": type(model).__name__,
        "config_class": check.class_name, "ignored": list(check.ignored), "defaulted": [list(x) for x in check.defaulted],
        "params": n_params, "param_bytes": p_bytes, "cache_bytes": cache_bytes, "weight_shapes": weight_shapes,
        "kv_bytes_per_token": _per_token(torch, new_cache, wl.batch),
        "logits": "last" if keep else "all",
        "kernels": [_kernel_doc(k) for k in traced],
    }


def _quantized(traced: list, doc: dict, wl: Workload, config) -> tuple[list, int]:
    """The kernels and the weights' bytes of a checkpoint whose decoder layers' weight matrices are stored in
    ``wl.weight_dtype`` (int8 / int4 with a scale per group, fp8 with a scale per block), as the hand models
    count them: each [n_out, n_in] matrix (a stack of experts' too) of a module the layers run is
    linear_weight_bytes; embeddings, lm_head, norms, biases, routers (an output per expert, or a single gate)
    and modules the step never runs (a vision tower) keep the float dtype. The trace itself runs in the
    activation dtype: FLOPs and activations do not change."""
    from .calculator import linear_weight_bytes
    from .calculator import traced_expert_bytes

    text = getattr(config, "get_text_config", lambda: config)()
    n_experts = next((v for k in ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
                      for c in (text, config) if isinstance(v := getattr(c, k, None), int)), 0)
    float_size = wl.act_dtype.bits // 8
    shapes = doc.get("weight_shapes", {})

    def stored(m) -> int:
        return math.prod(m) * float_size

    def quant(m) -> int:
        return math.prod(m[:-2]) * linear_weight_bytes(m[-1], m[-2], wl, experts=True)

    def mats(module: str) -> list:
        return [m for m in shapes.get(module, []) if m[-2] not in (1, n_experts)]  # routers stay float

    runs = {k.module for k in traced if k.layer is not None and k.kind == "matmul" and (not k.function or k.experts)
            and (k.experts or not wl.weight_dtype.experts_only)}  # MXFP4: the expert stacks alone
    if not runs and wl.weight_dtype.experts_only:
        raise RoofcalcError(f"{doc['class']} runs no experts: {wl.weight_dtype.name} stores a mixture of experts' "
                            f"expert weights (use int4 or int8 for every linear)")
    total = doc["param_bytes"] + sum(quant(m) - stored(m) for module in runs for m in mats(module))
    out = []
    for k in traced:
        if k.module not in runs or not mats(k.module):
            out.append(k)
            continue
        if k.experts is not None:  # the expert stacks it reads, by their stored bytes
            n_exp, top_k, fulls = k.experts
            by_bytes = {stored(m): quant(m) for m in mats(k.module)}
            new_experts = (n_exp, top_k, tuple(by_bytes.get(f, f) for f in fulls))
            change = {c: traced_expert_bytes(new_experts, wl.tokens, wl.experts)
                      - traced_expert_bytes(k.experts, wl.tokens, wl.experts) for c in ("ideal", "eager")}
            k = replace(k, experts=new_experts, role="experts")
        elif not k.function:  # a leaf linear: it reads its whole weight
            delta = sum(quant(m) - stored(m) for m in mats(k.module))
            change = {"ideal": delta, "eager": delta}
            k = replace(k, role="linear", param_bytes=k.param_bytes + delta if k.param_bytes else 0)
        else:
            out.append(k)
            continue
        out.append(replace(k, ideal=replace(k.ideal, weight_bytes=k.ideal.weight_bytes + change["ideal"]),
                           eager=replace(k.eager, weight_bytes=k.eager.weight_bytes + change["eager"])))
    return out, total


def _kernel_doc(k: TracedKernel) -> dict:
    from dataclasses import asdict

    return {"name": k.name, "layer": k.layer, "module": k.module, "function": k.function, "kind": k.kind, "dims": k.dims, "ideal": asdict(k.ideal),
            "eager": asdict(k.eager), "launches": k.launches, "params": k.params, "param_bytes": k.param_bytes,
            "experts": list(k.experts[:2]) + [list(k.experts[2])] if k.experts else None,
            "sizes": list(k.sizes) if k.sizes else None}


def _sizes(k: TracedKernel) -> MatmulSizes | None:
    return MatmulSizes(*k.sizes) if k.sizes else None


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
    try:
        return cache is not None and cache.get_seq_length() > 0
    except Exception:  # a cache whose layers cannot say (it was not filled)
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


def _auto_class(transformers, model_type: str):
    """The auto class that builds this model_type's decoding model: a causal LM, or, for a vision-language
    model whose language part has no causal LM of its own (Qwen2.5-VL, Qwen3-VL), the whole image-text
    model, which decodes text from token ids alone (its vision tower then runs no op)."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)

    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


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
    elif isinstance(text, dict) and not any(k in cfg for k in ("torch_dtype", "dtype")):
        inner = {k: text[k] for k in ("torch_dtype", "dtype") if k in text}
        if inner:  # the whole model traced, its dtype written only in its text_config (Qwen3-VL)
            use = dict(cfg, **inner)
    config, _ = hf_config(use, name)
    return shape_of(config, label, name, use), (use, name, label)


def analyzer(cfg: dict, name: str, label: str | None = None, *, view: str = "ideal"):
    """``wl -> TracedAnalysis`` for the sweeps: the kernels one row per layer (so every probe has the same
    rows), each workload traced once. Expert weights carry (E, k, full bytes): the sweep reads the
    experts a batch reaches off them, as the trace does."""
    return TraceAnalyzer(cfg, name, label, view)


class TraceAnalyzer(Analyzer):
    """A traced model's step at any workload, each workload traced once."""

    def __init__(self, cfg: dict, name: str, label: str | None, view: str):
        self.cfg, self.name, self.label, self.view, self.memo = cfg, name, label, view, {}

    def __call__(self, wl: Workload) -> TracedAnalysis:
        if wl not in self.memo:
            self.memo[wl] = trace(self.cfg, self.name, wl, self.label, view=self.view, merge=False)
        return self.memo[wl]


def trace(cfg: dict, name: str, wl: Workload, label: str | None = None, *, view: str = "ideal",
          use_cache: bool = True, merge: bool = True) -> TracedAnalysis:
    """The traced step as an :class:`Analysis` whose kernels carry the ``view``'s bytes (ideal | eager).

    Results are cached per (config, transformers version, workload shape) under ~/.cache/roofcalc."""
    try:
        return _trace(cfg, name, wl, label, view=view, use_cache=use_cache, merge=merge)
    except RoofcalcError:
        raise
    except Exception as exc:  # modeling code roofcalc has not met: one line, not a traceback
        raise RoofcalcError(f"{name}: tracing {one_line(str(cfg.get('model_type')))[:60]} failed "
                            f"({type(exc).__name__}: {one_line(str(exc))[:160]})") from None


def _trace(cfg: dict, name: str, wl: Workload, label: str | None, *, view: str, use_cache: bool,
           merge: bool) -> TracedAnalysis:
    if view not in ("ideal", "eager"):
        raise RoofcalcError(f"view must be ideal or eager, not {view!r}")
    _check_workload(wl)
    config, check = hf_config(cfg, name)
    import transformers

    doc = None
    path = _cache_dir() / f"{_cache_key(cfg, wl, transformers.__version__)}.json"
    if use_cache and path.is_file():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if doc.get("format") != TRACE_FORMAT:
                doc = None
        except (OSError, ValueError):
            doc = None
    if doc is None:
        doc = trace_raw(cfg, name, wl, (config, check))
        if use_cache:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(doc), encoding="utf-8")
                tmp.replace(path)
            except OSError:
                pass  # a read-only home: trace again next time
    traced = [TracedKernel(k["name"], k["layer"], k["module"], k["function"], k["kind"], k["dims"], Cost(**k["ideal"]), Cost(**k["eager"]),
                           k["launches"], k["params"], k["param_bytes"],
                           (k["experts"][0], k["experts"][1], tuple(k["experts"][2])) if k.get("experts") else None,
                           tuple(k["sizes"]) if k.get("sizes") else None)
              for k in doc["kernels"]]
    param_bytes = doc["param_bytes"]
    if wl.weight_dtype.scaled:
        traced, param_bytes = _quantized(traced, doc, wl, config)
    shape = shape_of(config, label or cfg["model_type"], name, cfg)
    if merge:
        kernels = tuple(merge_layers(traced, view))
    else:  # one row per kernel run, named by its layer
        kernels = tuple(Kernel(k.name if k.layer is None else f"{k.name}[{k.layer}]", k.kind,
                               "layer" if k.layer is not None else "model", 1, k.dims,
                               k.ideal if view == "ideal" else k.eager, params=k.params, param_bytes=k.param_bytes,
                               launches=k.launches, expert_weights=k.experts, role=k.role, sizes=_sizes(k))
                        for k in traced)
    return TracedAnalysis(shape, wl, kernels, view=view, traced_kv_bytes_per_token=doc["kv_bytes_per_token"],
                          traced_cache_bytes=doc["cache_bytes"], traced_params=doc["params"],
                          traced_param_bytes=param_bytes, check=check, logits=doc["logits"],
                          note=f"traced: transformers {doc['transformers']} {doc['class']} " + (
                              "on the CPU with random weights (its code reads tensor values, which the meta "
                              "device has not)" if doc.get("device") == "cpu" else "on the meta device"))


__all__ = ["ConfigCheck", "TracedAnalysis", "analyzer", "hf_config", "trace", "trace_raw", "traced_shape"]
