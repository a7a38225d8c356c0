"""The config read by transformers' own class: the keys it reads, ignores or defaults, and its sizes checked."""

from __future__ import annotations

import inspect
import re
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import RoofcalcError
from ..inputs import one_line
from .encoders import WHOLE_KEY


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


def quiet_transformers():
    """transformers, imported without the note it prints where PyTorch is missing (roofcalc says in its one line
    what is missing) and set to print only errors (its notes on a config are not the user's output)."""
    import importlib
    import os
    import sys

    if "transformers" not in sys.modules:
        level = os.environ.get("TRANSFORMERS_VERBOSITY")
        os.environ["TRANSFORMERS_VERBOSITY"] = "error"  # read once, as transformers' logging starts
        try:
            importlib.import_module("transformers")
        finally:
            if level is None:
                del os.environ["TRANSFORMERS_VERBOSITY"]
            else:
                os.environ["TRANSFORMERS_VERBOSITY"] = level
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers


def _need_torch(model_type: str):
    """(torch, transformers), or the one line that says which is missing."""
    missing = []
    try:
        import torch
    except ImportError:
        missing.append("torch")
    try:
        transformers = quiet_transformers()
    except ImportError:
        missing.append("transformers")
    if missing:  # (name what is missing: transformers comes with roofcalc, torch with its extra)
        raise RoofcalcError(f"tracing model_type '{model_type}' needs {' and '.join(missing)}, which "
                            f"{'is' if len(missing) == 1 else 'are'} not installed (roofcalc traces a model_type it "
                            f"has no hand model for, and any with --trace): pip install '.[torch]' in roofcalc's "
                            f"checkout")
    return torch, transformers


def known_model_type(model_type, transformers, cfg: dict, name: str) -> None:
    """Refuses a ``model_type`` transformers cannot build in one line (no torch needed to tell, nor would it
    help), with the hand-modelled family whose keys ``cfg`` has, if any."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if isinstance(model_type, str) and model_type in CONFIG_MAPPING:
        return
    if model_type is not None and not isinstance(model_type, str):  # as the hand models' reading says it
        raise RoofcalcError(f"{name}: config.json's 'model_type' must be a name such as \"llama\", got "
                            f"{one_line(repr(model_type))[:40]}")
    from ..families import SUPPORTED_FAMILIES

    near = _nearest_family(cfg)
    hint = (f"read it as a hand-modelled family with --family {near} (one of {', '.join(SUPPORTED_FAMILIES)}) "
            f"if its modeling code is that family's" if near else
            f"no hand-modelled family ({', '.join(SUPPORTED_FAMILIES)}) reads its keys either: its sizes "
            f"are under names of its own")
    raise RoofcalcError(
        f"{name}: model_type '{one_line(str(model_type))[:60]}' is not a model transformers "
        f"{transformers.__version__} can build (remote code only?), and roofcalc never runs remote code; " + hint)


@dataclass(frozen=True)
class ConfigCheck:
    class_name: str
    ignored: tuple[str, ...]  # keys the config gives that its class does not read
    defaulted: tuple[tuple[str, Any], ...]  # size keys the class reads that the config leaves to the default


def hf_config(cfg: dict, name: str):
    """transformers' config object for ``cfg`` and what it ignored or defaulted; refusals name why."""
    try:
        transformers = quiet_transformers()
    except ImportError:
        transformers = None
    model_type = cfg.get("model_type")
    if transformers is not None:  # a model_type it cannot build is refused before torch is asked for
        known_model_type(model_type, transformers, cfg, name)
    torch, transformers = _need_torch(str(model_type))
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    reads = set(inspect.signature(cls.__init__).parameters) | set(getattr(cls, "attribute_map", {}) or {})
    reads |= _modeling_reads(model_type)
    reads |= _class_reads(cls)
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
    kwargs = {k: v for k, v in cfg.items() if k not in ("model_type", "quantization_config", "auto_map",
                                                         WHOLE_KEY)}
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
            if k in sig and k not in cfg and sig[k].default not in (inspect.Parameter.empty, None):
                defaults[k] = sig[k].default  # (None: the class derives it from the sizes given)
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
    from ..shapes import MAX_DIM, MAX_PARAMS, MAX_VOCAB

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


_CLASS_READS: dict[type, frozenset] = {}
# a key the config class's own code consumes beyond its signature: popped from (or looked up in) the
# kwargs its __post_init__ is handed (Gemma 4's global_head_dim, Nemotron-H's hybrid_override_pattern),
# or read off itself (self.key, getattr(self, "key")), not counting plain assignments
_KWARG_USES = (r"kwargs\.(?:pop|get)\(\s*[\"'](\w+)[\"']", r"kwargs\[\s*[\"'](\w+)[\"']\s*\]",
               r"[\"'](\w+)[\"']\s+in\s+kwargs\b", r"getattr\(\s*self\s*,\s*[\"'](\w+)[\"']",
               r"self\.(\w+)\b(?!\s*=(?!=))")


def _class_reads(cls) -> frozenset:
    """Keys the config class (and the model's config classes it derives from) reads in its own code: kwargs
    its __post_init__ pops or looks up, attributes it reads off itself, and properties it defines (Nemotron-H's
    hybrid_override_pattern, computed from the layers_block_type its __post_init__ builds from the key)."""
    if cls not in _CLASS_READS:
        keys: set[str] = set()
        for base in cls.__mro__:
            if not (getattr(base, "__module__", "") or "").startswith("transformers.models."):
                continue  # PreTrainedConfig's own code reads every attribute it serializes
            keys |= {k for k, v in vars(base).items() if isinstance(v, property)}
            try:
                text = inspect.getsource(base)
            except (OSError, TypeError):
                continue
            for pattern in _KWARG_USES:
                keys |= set(re.findall(pattern, text))
        _CLASS_READS[cls] = frozenset(keys)
    return _CLASS_READS[cls]


def _nearest_family(cfg: dict) -> str | None:
    """The hand family to suggest for a remote-code config: the likeliest by its keys that reads it at all
    (ChatGLM's num_layers and padded_vocab_size no family reads: None)."""
    from ..families import SUPPORTED_FAMILIES
    from ..shapes import shape_from_config

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
