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
gemma-4-31B, Nemotron-3-Nano, Qwen3.6-27B, Llama-4-Maverick) are copies of config text found in public repositories, each named
with its card's figure in configs/published/SOURCES.md (which also names the one correction made to a file
written from memory: InternVL3-1B-hf's untied lm_head). For each:

* the main job, `roofcalc FILE --format json` (in-process): exit 0, or a one-line refusal (exit 2);
* roofcalc's total parameters against the count the model's card, hub files or paper state (PUBLISHED, the
  most precise figure found, with where it is stated): within CARD_TOLERANCE (3%), or outside it, each such
  model with the reason printed beside it (OUTSIDE_WHY: mostly a rounded name, "7B", with no exact figure
  published, or a name that counts a part of the model); a model with no figure found is counted apart;
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
    "google/gemma-3-4b-it": (4.301e9, "4.301B: 417M vision, 675M embedding, 3,209M other; Gemma 3 report "
                             "(arXiv:2503.19786) Table 1"),
    "google/gemma-3-1b-it": (1.000e9, "1.000B: 302M embedding, 698M other; Gemma 3 report Table 1"),
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
    # arXiv:2409.12191, Table 1 (model descriptions: vision encoder and LLM sizes per model)
    "Qwen/Qwen2-VL-2B-Instruct": (2.175e9, "675M vision + 1.5B LLM, Qwen2-VL paper Table 1"),
    # the card as copied in a GitHub repository (index file 69766305105, the EXAONE-4.0-1.2B-GGUF card); its 1.07B
    # without embeddings is this count less the tied 102400 x 2048 embedding: 1.279B - 0.210B = 1.070B
    "LGAI-EXAONE/EXAONE-4.0-1.2B": (1.28e9, "1.28B, 'Model Size' in its card's 1.2B tables"),
    "arcee-ai/AFM-4.5B": (4.5e9, "4.5B"),
    # github.com/microsoft/BitNet README.md (commit 027d95b7cdc55e3644a2b451370a0a60f04e5569); the card's "2B" matches
    # the count without the tied 128256 x 2560 embedding: 2.413B - 0.328B = 2.084B
    "microsoft/bitnet-b1.58-2B-4T": (2.4e9, "2.4B, github.com/microsoft/BitNet README, Official Models"),
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
    # 938M: index file 70133883388 (a small-VLM audit whose figures it says come from the hub API); 0.9B: the
    # InternVL3 report (arXiv:2504.10479) Table 1 as a summary quotes it (index file 55794825236). The checkpoint's
    # lm_head is its own tensor (the original's config: tie_word_embeddings false; transformers' converter copies
    # its llm_config into text_config), so the config file here says false: 802.2M tied + 151674 x 896 = 938.1M.
    "OpenGVLab/InternVL3-1B-hf": (938e6, "938M, the hub's safetensors total (InternVL3-1B's weights)"),
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
    "google/gemma-3-27b-it": (27.433e9, "27.433B: 417M vision, 1,416M embedding, 25,600M other; Gemma 3 "
                              "report Table 1"),
    "tiiuae/falcon-mamba-7b": (7.27e9, "7.27B"),
    "EleutherAI/gpt-neo-1.3B": (1.3e9, "1.3B"),
    "allenai/OLMo-1B-hf": (1.18e9, "1.18B"),
    "adept/persimmon-8b-base": (8e9, "8B by its name"),
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
    "Qwen/Qwen2-57B-A14B-Instruct": (57e9, "57B / 14B activated: Qwen2 technical report (arXiv:2407.10671) Table 1"),
    "deepseek-ai/DeepSeek-V4-Flash": (284e9, "284B / 13B"),
    "zai-org/GLM-5.1": (754e9, "754B"),
    # 35B / 3B on its card; the checkpoint's count holds one MTP layer roofcalc does not count (see Qwen3.5-4B):
    # 35,951,822,704 - 35,107,181,936 = 844,640,768 = fc 8,388,608 + attention 27,262,976 + 256 experts
    # 805,306,368 + shared expert 3,145,728 + router and gate 526,336 + norms 10,752, H = 2048.
    "Qwen/Qwen3.5-35B-A3B": (35_951_822_704, "35,951,822,704 in its safetensors, MTP layer included; "
                                          "35B / 3B on its card"),
    # The safetensors hold one MTP layer that transformers does not build and roofcalc does not count (a decode
    # step without speculative decoding never runs it): 4,659,865,088 - 4,539,265,536 = 120,599,552 = mtp.fc
    # 2H x H (13,107,200) + a full-attention layer (q with gate 20,971,520, k and v 5,242,880, o 10,485,760, MLP
    # 3 x 2560 x 9216 = 70,778,880) + its seven norms (13,312), H = 2560.
    # each count "in its safetensors": the weight statistics of the model report SOURCES.md names for its config
    "Qwen/Qwen3.5-4B": (4_659_865_088, "4,659,865,088 in its safetensors, MTP layer included"),
    "Qwen/Qwen3-VL-30B-A3B-Instruct": (31_070_754_032, "31,070,754,032 in its safetensors"),
    # 30.7B on NVIDIA's model page; the checkpoint's count is 2,304 above roofcalc's: the vision tower's
    # std_bias and std_scale (1152 each), buffers transformers' Gemma4VisionModel registers when standardize is set.
    "google/gemma-4-31B-it": (31_273_088_876, "31,273,088,876 in its safetensors; 30.7B on NVIDIA's page"),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": (31.6e9, "31.6B / 3.6B"),
    # Qwen3.5-27B's config was not found; Qwen3.6-27B, the same architecture, was. Its MTP layer, not counted (see
    # Qwen3.5-4B): 27,781,427,952 - 27,356,728,560 = 424,699,392 = fc 52,428,800 + q 62,914,560 + k, v 10,485,760
    # + o 31,457,280 + MLP 267,386,880 + norms 26,112, H = 5120.
    "Qwen/Qwen3.6-27B": (27_781_427_952, "27,781,427,952 in its safetensors, MTP layer included"),
    # 402B: the hub page's safetensors figure, as a source audit quotes it (index file 71524097643); 400B / 17B:
    # the Llama 4 card, github.com/meta-llama/llama-models models/llama4/MODEL_CARD.md
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": (402e9, "402B on its hub page (safetensors); 400B / 17B "
                                                              "on its card, the vision encoder included"),
}

# Why a total lies outside CARD_TOLERANCE of its card's figure, for each model where it does: the card states only a
# rounded name, or a name that counts a part of the model. Each sum is this benchmark's count (the oracle's real-size
# model holds the same parameters where the model is traced); "embedding" is vocab x d_model, twice when untied.
OUTSIDE_WHY: dict[str, str] = {
    "CohereLabs/c4ai-command-r7b-12-2024": "7B matches the count less its tied 256000 x 4096 embedding: "
                                           "8.028B - 1.049B = 6.979B",
    "CohereLabs/aya-vision-8b": "8B matches its Command R7B language model, 8.028B; SigLIP2 tower and connector "
                                "add 0.440B",
    "llava-hf/llava-v1.6-mistral-7b-hf": "7B matches its Mistral-7B language model, 7.242B; CLIP tower and "
                                         "projector add 0.324B",
    "adept/persimmon-8b-base": "8B matches the count less one of its two 262144 x 4096 embeddings: 9.397B - "
                               "1.074B = 8.323B",
    "allenai/OLMo-2-1124-7B": "the name rounds 7.299B down; no exact figure found",
    "allenai/Olmo-3-1025-7B": "the name rounds 7.298B down; no exact figure found",
    "baidu/ERNIE-4.5-21B-A3B-PT": "the name rounds 21.825B down; no exact figure found",
    "bigcode/starcoder2-15b": "the name rounds 15.656B down; no exact figure found",
    "bigcode/starcoderbase-1b": "the name rounds 1.137B down; no exact figure found",
    "jetmoe/jetmoe-8b": "the name rounds 8.522B down; no exact figure found",
    "kyutai/helium-1-preview-2b": "the name rounds 2.173B down; no exact figure found",
    "tiiuae/falcon-40b": "the name rounds 41.303B down; no exact figure found",
    "zai-org/GLM-4-9B-0414": "the name rounds 9.400B down; no exact figure found",
    "zai-org/glm-4-9b-chat-hf": "the name rounds 9.400B down; no exact figure found",
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


def card_check(hub: str, params: int) -> tuple[str, bool | None, str]:
    """The card's figure beside roofcalc's total: (text, within CARD_TOLERANCE or None without a figure,
    the summary's line for a total outside it)."""
    card, words = PUBLISHED.get(hub, (None, "not listed"))
    if card is None:
        return f"card ? ({words})", None, ""
    off = params / card - 1
    if abs(off) <= CARD_TOLERANCE:
        return f"card {words}: {off:+.1%}", True, ""
    why = OUTSIDE_WHY.get(hub, "NO REASON GIVEN")
    return (f"card {words}: {off:+.1%} OUTSIDE {CARD_TOLERANCE:.0%}\n    why: {why}", False,
            f"{hub} {off:+.1%}: {why}")


def main() -> None:
    warnings.simplefilter("ignore")
    files = sorted((HERE / "configs" / "published").glob("*.json"))
    if len(sys.argv) > 1:
        files = [f for f in files if any(a.lower() in f.name.lower() for a in sys.argv[1:])]
    ran = refused = 0
    cards: dict[bool | None, list[str]] = {True: [], False: [], None: []}
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
        words, ok, outside = card_check(hub, m["params"])
        cards[ok].append(outside or hub)
        line = f"{hub:50s} {m['source']:6s} {m['params'] / 1e9:8.2f}B {seconds:4.1f} s\n    {words}"
        if m["source"] == "traced":  # each part on its own line, so that none runs past 100 columns
            try:
                line += "\n    " + oracle(cfg)
            except AssertionError as exc:
                line += f"\n    ORACLE DIFFERS: {exc}"
        print(line, flush=True)
    print(f"{ran} of {len(files)} published configs ran, {refused} refused in one line")
    print(f"parameters: {len(cards[True])} within {CARD_TOLERANCE:.0%} of a stated count; "
          f"{len(cards[False])} outside, each for its reason:")
    for entry in cards[False]:
        print(f"    {entry}")
    print(f"    and {len(cards[None])} with no figure found" + (f": {', '.join(cards[None])}" if cards[None] else ""))


if __name__ == "__main__":
    main()
