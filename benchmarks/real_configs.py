"""Published config.json files of popular models, as a new user would hand them to roofcalc.

Each file in benchmarks/configs/published/ holds a model's architectural keys as its hub repository publishes
them (token ids, dropout and initializer keys left out), written down from the published files without the
network (each checked against its model card's parameter count below, which a wrong size would miss); the two
of 2026, Kimi-K2.5 and Devstral-Small-2, from their hub files as remembered (architectural keys and the
quantization_config; their vision_config cut to a few keys: Devstral-Small-2's keeps those that size its
Pixtral tower, which the trace counts beside the text model it runs; Kimi-K2.5's tower takes its class's
defaults for the keys cut, so its share of the total is its class's default). Two are abridged where a value changes no count: the
longrope factor lists of Phi-4-mini and Phi-3.5-MoE (1.0 in place of their published floats). The 2025-26
ones added after them (DeepSeek-R1, DeepSeek-V4-Flash, GLM-5.1, Qwen3.5 dense and MoE, Qwen3-VL-30B-A3B,
gemma-4-31B, Nemotron-3-Nano) are copies of config text found in public repositories, each named with
its card's figure in configs/published/SOURCES.md. For each:

* the main job, `roofcalc FILE --format json` (in-process): exit 0, or a one-line refusal (exit 2);
* roofcalc's total parameters against the total the model card states (PUBLISHED): within
  CARD_TOLERANCE (3%, the issue's chosen bound; a card's "7B" may stand for anything from 6.5B to 7.5B,
  so a total outside it is a line to look at, not a wrong count), or outside; a file whose card gives no figure is counted apart;
* for a traced model, the oracle of tests/test_trace.py on the real config at its real size: transformers'
  model built on the meta device runs a prefill of 6 tokens and a decode step at batch 2 under
  FlopCounterMode; every leaf module's and each attention core's matmul FLOPs must equal the trace's, the
  parameters the real model's, and the KV bytes per token the real cache's. A model whose own code reads
  tensor values cannot run on meta; its trace is checked on a small config on the CPU in the tests instead.

Run: python benchmarks/real_configs.py [NAME-FRAGMENT ...]   (needs the [torch] extra; about a minute)
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tests"))

# each model card's stated parameter count: (total as a number, or None where no card figure was
# found; the card's words, a mixture of experts' active count after the slash). A card's figure is
# rounded ("7B"), so a total within CARD_TOLERANCE of it agrees with the card.
CARD_TOLERANCE = 0.03
PUBLISHED: dict[str, tuple[float | None, str]] = {
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": (109e9, "109B / 17B, the vision encoder included"),
    "Qwen/Qwen3-Next-80B-A3B-Instruct": (80e9, "80B / 3B"),
    "zai-org/GLM-4.5-Air": (106e9, "106B / 12B"),
    "baidu/ERNIE-4.5-21B-A3B-PT": (21e9, "21B / 3B"),
    "baidu/ERNIE-4.5-0.3B-PT": (0.36e9, "0.36B"),
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": (24e9, "24B, the vision encoder included"),
    "google/gemma-3-4b-it": (4e9, "4B, the vision encoder included"),
    "google/gemma-3-1b-it": (1e9, "1B"),
    "CohereLabs/c4ai-command-r7b-12-2024": (7e9, "7B"),
    "ibm-granite/granite-4.0-h-tiny": (7e9, "7B / 1B"),
    "state-spaces/mamba-2.8b-hf": (2.8e9, "2.8B"),
    "ai21labs/AI21-Jamba-Mini-1.5": (52e9, "52B / 12B"),
    "tiiuae/falcon-7b": (7e9, "7B"),
    "tiiuae/falcon-40b": (40e9, "40B"),
    "bigcode/starcoder2-15b": (15e9, "15B"),
    "bigcode/starcoderbase-1b": (1e9, "1B"),
    "stabilityai/stablelm-2-1_6b": (1.6e9, "1.6B"),
    "allenai/OLMo-2-1124-7B": (7e9, "7B"),
    "Qwen/Qwen1.5-MoE-A2.7B": (14.3e9, "14.3B / 2.7B"),
    "LiquidAI/LFM2-1.2B": (1.2e9, "1.2B"),
    "HuggingFaceTB/SmolLM3-3B": (3e9, "3B"),
    "llava-hf/llava-1.5-7b-hf": (7e9, "7B, the vision encoder included"),
    "microsoft/Phi-4-mini-instruct": (3.8e9, "3.8B"),
    "Qwen/Qwen2-VL-2B-Instruct": (2e9, "2B"),
    "LGAI-EXAONE/EXAONE-4.0-1.2B": (1.2e9, "1.2B"),
    "arcee-ai/AFM-4.5B": (4.5e9, "4.5B"),
    "microsoft/bitnet-b1.58-2B-4T": (2e9, "2B"),
    "unsloth/llama-3-8b-bnb-4bit": (8e9, "8B"),
    "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4": (8e9, "8B"),
    "meta-llama/Llama-3.1-405B-Instruct-FP8": (405e9, "405B"),
    "Qwen/Qwen3-8B-FP8": (8.2e9, "8.2B"),
    "mistralai/Mistral-Nemo-Base-2407": (12e9, "12B"),
    "google/gemma-2-27b": (27e9, "27B"),
    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4": (7.6e9, "7.6B"),
    "microsoft/Phi-3.5-MoE-instruct": (42e9, "42B / 6.6B"),
    "deepseek-ai/DeepSeek-V2-Lite-Chat": (15.7e9, "15.7B / 2.4B"),
    "MiniMaxAI/MiniMax-M2": (230e9, "230B / 10B"),
    "tencent/Hunyuan-A13B-Instruct": (80e9, "80B / 13B"),
    "zai-org/GLM-4-9B-0414": (9e9, "9B"),
    "zai-org/glm-4-9b-chat-hf": (9e9, "9B"),
    "ibm-granite/granite-3.3-8b-instruct": (8e9, "8B"),
    "ibm-granite/granite-3.1-3b-a800m-instruct": (3.3e9, "3.3B / 0.8B"),
    "allenai/OLMoE-1B-7B-0924": (6.9e9, "6.9B / 1.3B"),
    "EleutherAI/gpt-j-6b": (6e9, "6B"),
    "bigscience/bloom-560m": (560e6, "560M"),
    "mosaicml/mpt-7b": (6.7e9, "6.7B"),
    "Salesforce/codegen-350M-mono": (350e6, "350M"),
    "google/paligemma2-3b-pt-224": (3e9, "3B, the vision encoder included"),
    "llava-hf/llava-v1.6-mistral-7b-hf": (7e9, "7B, the vision encoder included"),
    "meta-llama/Llama-3.2-11B-Vision-Instruct": (10.6e9, "10.6B, the vision encoder included"),
    "HuggingFaceTB/SmolVLM-256M-Instruct": (256e6, "256M, the vision encoder included"),
    "OpenGVLab/InternVL3-1B-hf": (1e9, "1B, the vision encoder included"),
    "openai/gpt-oss-120b": (117e9, "117B / 5.1B"),
    "mistralai/Mamba-Codestral-7B-v0.1": (7.3e9, "7.3B"),
    "moonshotai/Kimi-K2-Instruct": (1e12, "1T / 32B"),
    "mistralai/Mixtral-8x22B-v0.1": (141e9, "141B / 39B"),
    "Qwen/Qwen3-235B-A22B": (235e9, "235B / 22B"),
    "deepseek-ai/DeepSeek-V3.2-Exp": (671e9, "671B / 37B"),
    "CohereLabs/aya-vision-8b": (8e9, "8B, the vision encoder included"),
    "zai-org/GLM-4.1V-9B-Thinking": (10e9, "10B, the vision encoder included"),
    "Qwen/Qwen2.5-VL-3B-Instruct": (3.75e9, "3.75B, the vision encoder included"),
    "Qwen/Qwen3-VL-8B-Instruct": (8.77e9, "8.77B, the vision encoder included"),
    "google/gemma-3-27b-it": (27e9, "27B, the vision encoder included"),
    "tiiuae/falcon-mamba-7b": (7.27e9, "7.27B"),
    "EleutherAI/gpt-neo-1.3B": (1.3e9, "1.3B"),
    "allenai/OLMo-1B-hf": (1.18e9, "1.18B"),
    "adept/persimmon-8b-base": (8e9, "8B by its name; 9.4B on its hub page"),
    "nvidia/Minitron-4B-Base": (4.2e9, "4.2B"),
    "RWKV/rwkv-4-169m-pile": (169e6, "169M"),
    "google/recurrentgemma-2b": (2.7e9, "2.7B"),
    "facebook/xglm-564M": (564e6, "564M"),
    "microsoft/biogpt": (347e6, "347M"),
    "kyutai/helium-1-preview-2b": (2e9, "2B"),
    "ByteDance-Seed/Seed-OSS-36B-Instruct": (36e9, "36B"),
    "moonshotai/Kimi-K2.5": (1e12, "1T / 32B, the vision encoder included"),
    "mistralai/Devstral-Small-2-24B-Instruct-2512": (24e9, "24B, the vision encoder included"),
    "jetmoe/jetmoe-8b": (8e9, "8B / 2.2B"),
    "CohereForAI/c4ai-command-r-v01": (35e9, "35B"),
    "ibm-ai-platform/Bamba-9B": (9.78e9, "9.78B"),
    "swiss-ai/Apertus-8B-2509": (8e9, "8B"),
    "tencent/Hunyuan-7B-Instruct": (7.5e9, "7.5B"),
    "allenai/Olmo-3-1025-7B": (7e9, "7B"),
    # added from the cards (or their copies) that benchmarks/configs/published/SOURCES.md names
    "deepseek-ai/DeepSeek-R1": (671e9, "671B / 37B"),
    "deepseek-ai/DeepSeek-V4-Flash": (284e9, "284B / 13B"),
    "zai-org/GLM-5.1": (754e9, "754B"),
    "Qwen/Qwen3.5-35B-A3B": (35e9, "35B / 3B, the vision encoder included"),
    "Qwen/Qwen3.5-4B": (None, "no figure found; 4B by its name"),
    "Qwen/Qwen3-VL-30B-A3B-Instruct": (None, "no figure found; 30B / 3B by its name"),
    "google/gemma-4-31B-it": (30.7e9, "30.7B"),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": (31.6e9, "31.6B / 3.6B"),
}


def main_job(path: Path) -> tuple[int, dict | None, str, float]:
    """`roofcalc PATH --format json --hw H100` as the command line runs it: (exit code, document, error, s)."""
    from roofcalc.cli import main

    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(path), "--format", "json", "--hw", "H100"])
    doc = json.loads(out.getvalue()) if code == 0 else None
    return code, doc, err.getvalue().strip(), time.perf_counter() - started


def oracle(cfg: dict) -> str:
    """The trace of the real config against FlopCounterMode, the real parameters and the real cache."""
    import torch
    from hf_oracle import build, cache_bytes, run
    from test_trace import _check

    from roofcalc import Workload
    from roofcalc.calculator import DTYPES
    from roofcalc.errors import NoKVCache
    from roofcalc.trace import trace_raw, traced_shape

    bf = DTYPES["bf16"]
    _, (use, _, _) = traced_shape(cfg, cfg["model_type"])
    model = build({k: v for k, v in use.items() if not k.startswith("_")}, dtype=torch.bfloat16)  # the text model
    batch, prompt = 2, 6
    try:
        prefill, decode, cache = run(model, batch, prompt, all_logits=False)
    except RuntimeError as exc:
        if "meta" not in str(exc):
            raise
        return "the real model reads tensor values (not runnable on meta); small config checked in the tests"
    for wl, counts in ((Workload.prefill(batch, prompt, weight_dtype=bf, act_dtype=bf, kv_dtype=bf), prefill),
                       (Workload.decode(batch, prompt + 1, weight_dtype=bf, act_dtype=bf, kv_dtype=bf), decode)):
        try:
            doc = trace_raw(use, "t", wl)
        except NoKVCache:  # RWKV: no decode step on a cache; its forward pass is what the command line shows
            return "keeps no KV cache: prefill per-module FLOPs equal"
        _check(doc, counts, model)  # asserts, module by module
    persistent = set(model.state_dict())
    real = sum(p.numel() for p in model.parameters()) + \
        sum(b.numel() for n, b in model.named_buffers() if n in persistent)
    kv = cache_bytes(cache) == batch * (prompt + 1) * doc["kv_bytes_per_token"]
    return ("per-module FLOPs equal" + ("; parameters equal" if doc["params"] == real else f"; PARAMETERS {real:,}")
            + ("; KV bytes equal" if kv else "; KV BYTES DIFFER"))


def card_check(hub: str, params: int) -> tuple[str, bool | None]:
    """The card's figure beside roofcalc's total: (text, within CARD_TOLERANCE; None without a figure)."""
    card, words = PUBLISHED.get(hub, (None, "not listed"))
    if card is None:
        return f"card ? ({words})", None
    off = params / card - 1
    ok = abs(off) <= CARD_TOLERANCE
    return f"card {words}: {off:+.1%}{'' if ok else f' OUTSIDE {CARD_TOLERANCE:.0%}'}", ok


def main() -> None:
    warnings.simplefilter("ignore")
    files = sorted((HERE / "configs" / "published").glob("*.json"))
    if len(sys.argv) > 1:
        files = [f for f in files if any(a.lower() in f.name.lower() for a in sys.argv[1:])]
    ran = refused = 0
    cards = {True: 0, False: 0, None: 0}
    for f in files:
        hub = f.stem.replace("--", "/")
        cfg = json.loads(f.read_text())
        code, doc, err, seconds = main_job(f)
        if code != 0:
            refused += 1
            print(f"{hub:50s} exit {code} in {seconds:.1f} s: {err}")
            continue
        ran += 1
        m = doc["model"]
        words, ok = card_check(hub, m["params"])
        cards[ok] += 1
        line = f"{hub:50s} {m['source']:6s} {m['params'] / 1e9:8.2f}B {seconds:4.1f} s\n    {words}"
        if m["source"] == "traced":  # each part on its own line, so that none runs past 100 columns
            try:
                line += "\n    " + oracle(cfg)
            except AssertionError as exc:
                line += f"\n    ORACLE DIFFERS: {exc}"
        print(line, flush=True)
    print(f"{ran} of {len(files)} published configs ran, {refused} refused in one line")
    print(f"parameters within {CARD_TOLERANCE:.0%} of the card: {cards[True]} of {cards[True] + cards[False]}"
          f" with a card figure ({cards[False]} outside); {cards[None]} without a card figure")

if __name__ == "__main__":
    main()
