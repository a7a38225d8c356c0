"""Which of the causal LMs the installed transformers knows roofcalc can trace (and the vision-language
models whose language part has no causal LM class, traced as their image-text model): each type's
config class with its own defaults, cut to at most 4 layers, read as the command line reads it (a
multimodal config through its text_config), decode at batch 2 and context 12 (a model that keeps no KV
cache, a prefill of 12 tokens, as the command line shows it). Prints one line per type that fails and a
count; the run is also a check that every failure is one line of RoofcalcError."""

from __future__ import annotations

import collections
import sys
import time
import warnings

LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
LIST_KEYS = ("layer_types", "mlp_only_layers", "attn_layer_indices", "layers_block_type", "block_types")


def _cut(cfg: dict) -> dict:
    """At most 4 layers, and every per-layer list cut to match (a list as long as the layers)."""
    cfg = dict(cfg)
    layers = next((cfg[k] for k in LAYER_KEYS if isinstance(cfg.get(k), int)), None)
    for key in LAYER_KEYS:
        if isinstance(cfg.get(key), int) and cfg[key] > 4:
            cfg[key] = 4
    for key, value in list(cfg.items()):
        if isinstance(value, list) and len(value) > 4 and (key in LIST_KEYS or len(value) == layers):
            cfg[key] = value[:4]
    return cfg


def small_config(model_type: str, cut: bool = True) -> dict | None:
    """The class's default config as a dict, with at most 4 layers (per-layer lists cut to match), its
    text_config too."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cfg = CONFIG_MAPPING[model_type]().to_dict()
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_") and k != "transformers_version"}
    cfg["model_type"] = model_type
    if not cut:
        return cfg
    cfg = _cut(cfg)
    if isinstance(cfg.get("text_config"), dict):
        cfg["text_config"] = _cut(cfg["text_config"])
    return cfg


def main() -> None:
    warnings.simplefilter("ignore")
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)

    from roofcalc import RoofcalcError, Workload
    from roofcalc.errors import NoKVCache
    from roofcalc.trace import trace, traced_shape

    forward_only = set()

    def run(cfg: dict, model_type: str) -> None:  # as the command line does: a multimodal config by its text_config
        _, (use, name, label) = traced_shape(cfg, model_type)
        try:
            trace(use, name, Workload.decode(2, 12), label, use_cache=False)
        except NoKVCache:  # an encoder or RWKV: no decode step, and the command line shows its forward pass
            trace(use, name, Workload.prefill(2, 12), label, use_cache=False)
            forward_only.add(model_type)

    # the causal LMs, and the vision-language models roofcalc traces as their image-text model (their
    # language part has no causal LM class of its own: Qwen2.5-VL, Qwen3-VL, GLM-4.1V...)
    vision = sorted(set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES) - set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES))
    types = sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) + vision
    if len(sys.argv) > 1:
        types = [t for t in types if t in sys.argv[1:]]
    ok, failed, kinds = collections.Counter(), [], collections.Counter()
    started = time.perf_counter()
    for model_type in types:
        try:
            try:
                run(small_config(model_type), model_type)
            except RoofcalcError:  # the cut is this script's, not the class's (a per-layer list, or a second
                # layer count such as xLSTM's num_blocks, may not survive it): the class's own layers
                run(small_config(model_type, cut=False), model_type)
            ok[model_type in vision] += 1
        except RoofcalcError as exc:
            failed.append((model_type, str(exc)))
            kinds[str(exc).split("(", 1)[-1].split(":", 1)[0][:40]] += 1
        except Exception as exc:  # the class default itself does not build: not roofcalc's to trace
            failed.append((model_type, f"config: {type(exc).__name__}: {str(exc)[:100]}"))
            kinds["the class default config"] += 1
    for model_type, why in failed:
        print(f"  {model_type:28s} {why[:170]}")
    n_vision = sum(t in vision for t in types)
    print(f"{ok[False]} of {len(types) - n_vision} causal LM types ({len(forward_only)} of them keep no KV cache: a "
          f"forward pass, as the command line shows them) and {ok[True]} of {n_vision} other vision-language "
          f"types traced in {time.perf_counter() - started:.0f} s; failures by kind: "
          + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))


if __name__ == "__main__":
    main()
