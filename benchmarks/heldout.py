"""roofcalc against published measurements it was never tuned to: the held-out set.

    python benchmarks/heldout.py            # its tables and summaries (docs/validation.md, "Held out")

These cases were collected from sources, engines and GPUs that benchmarks/published.py does not hold, and
written down here (with each engine's way of running, below) before roofcalc was ever run on them: no
default, fitted parameter or rule was chosen while looking at them, and none may be. A case that leads to a
change becomes "seen" and moves to benchmarks/published.py. Every case runs as published.py runs its own:
the catalog's datasheet roof, the default efficiencies and host costs, the fitted kernel costs where the GPU
has them. Where a source leaves a length out, the case says what was assumed.

How each engine runs a decode step, from its own docs and code (fixed before the first run):
* vLLM (buildkite CI, 2024; the premAI runs of January 2024): CUDA graphs for decode (`--enforce-eager`
  defaults to False), a paged cache written in place: `cuda-graph`. vLLM of October 2023 (llm-perf-bench's
  commit acbed3e) predates its CUDA graphs: `fused`.
* gpt-fast: `torch.compile(mode="reduce-overhead")`, CUDA graphs, a static cache written in place: `cuda-graph`.
* MLC LLM (2023), TensorRT-LLM and Optimum-Nvidia (TensorRT engines, January 2024), DeepSpeed-FastGen,
  llama.cpp of January 2024 (before its CUDA graphs): their own fused kernels, one launch each: `fused`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from published import Case, markdown, rows  # noqa: E402

VLLM_CI = ("vLLM nightly performance benchmark (buildkite.com/vllm/performance-benchmark, builds 9513, 9523, "
           "9555; .buildkite/nightly-benchmarks/tests/latency-tests.json): batch 8, 32 input and 128 output "
           "tokens, dummy bf16 weights, mean end-to-end latency")
LLM_PERF = ("mlc-ai/llm-perf-bench README.md @ d401356 (2023-11-14): fp16, batch 1, prompt 'What is the meaning of "
            "life?' (7 tokens), 256 tokens decoded, A100 PCIe ('all numbers are based on PCIe, not NVLink')")
GPT_FAST_TP = ("pytorch-labs/gpt-fast README.md @ 0f925b5, Tensor Parallelism table: 8xA100-80GB power-limited to "
               "330 W, batch 1, 5-token prompt (200 new tokens, its default: context 105 assumed, as published.py)")
LLAMA_CPP = ("llama.cpp pull requests #4766 (RTX 4090, ggerganov, 2024-01-10) and its RTX 3090 comparison "
             "table (JohannesGaessler, 'master' column): llama-bench tg128 and pp512")
PREMAI = ("premAI-io/benchmarks docs/llama2.md @ 004a252 (data of 2024-01-26): Llama-2-7B on an A100 80GB, batch 1, "
          "prompt 'Write an essay about the transformer model architecture', 512 new tokens (context 256 assumed)")

BF16 = dict(dtype="bf16")
FP16 = dict(dtype="fp16")


def _per_gpu(tokens_per_s: float, tp: int) -> float:
    """published.py's request cases are output tokens/s per GPU: a stream's tokens/s over its GPUs."""
    return tokens_per_s / tp


CASES = (
    # vLLM CI, one GPU: a whole batch of 8 requests; output tokens/s = 8 x 128 / end-to-end latency
    *(Case("request", "meta-llama/Meta-Llama-3-8B", hw, "cuda-graph", measured=8 * 128 / (ms / 1e3), source=VLLM_CI,
           batch=8, prompt=32, generate=128, note="vLLM CI latency_llama8B_tp1", **BF16)
      for hw, ms in (("A100-80GB", 1579.27), ("H200", 834.059), ("H100-SXM", 997.542))),
    # llama.cpp, January 2024: tg128 (128 tokens from an empty cache: context 64 in the middle), pp512
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX4090", "fused", measured=1 / 61.03, source=LLAMA_CPP, context=64,
         note="llama.cpp tg128, F16 (codellama-7b)", **FP16),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX4090", "fused", measured=1 / 98.13, source=LLAMA_CPP, context=64,
         weight_dtype="int8", group_size=32, note="llama.cpp tg128, Q8_0 (codellama-7b)", **FP16),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX3090", "fused", measured=1 / 48.52, source=LLAMA_CPP, context=64,
         note="llama.cpp tg128, F16", **FP16),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX3090", "fused", measured=1 / 121.82, source=LLAMA_CPP, context=64,
         weight_dtype="int4", group_size=32, note="llama.cpp tg128, Q4_0", **FP16),
    *(Case("prefill", "meta-llama/Llama-2-7b-hf", hw, "fused", measured=512 / tps, source=LLAMA_CPP, prompt=512,
           note=f"llama.cpp pp512, {fmt}", **FP16, **({"weight_dtype": "int4", "group_size": 32} if fmt == "Q4_0" else {}))
      for hw, fmt, tps in (("RTX4090", "F16", 11048.22), ("RTX4090", "Q4_0", 7979.85),
                           ("RTX3090", "F16", 4184.85), ("RTX3090", "Q4_0", 3408.18))),
    # premAI, A100 80GB, batch 1
    *(Case("decode", "meta-llama/Llama-2-7b-hf", "A100-80GB", impl, measured=1 / tps, source=PREMAI, context=256,
           note=engine, **FP16)
      for engine, impl, tps in (("vLLM", "cuda-graph", 90.54), ("TensorRT-LLM", "fused", 101.94),
                                ("Optimum-Nvidia", "fused", 109.09), ("DeepSpeed", "fused", 81.44))),
)

CASES_MULTI = (
    # vLLM CI under tensor parallelism (NVLink nodes)
    *(Case("request", model, hw, "cuda-graph", measured=_per_gpu(8 * 128 / (ms / 1e3), tp), source=VLLM_CI, batch=8,
           prompt=32, generate=128, tp=tp, note=f"vLLM CI {name}", **BF16)
      for model, name, tp, hw, ms in (
          ("meta-llama/Meta-Llama-3-70B", "latency_llama70B_tp4", 4, "A100-80GB", 3990.59),
          ("meta-llama/Meta-Llama-3-70B", "latency_llama70B_tp4", 4, "H200", 2075.08),
          ("meta-llama/Meta-Llama-3-70B", "latency_llama70B_tp4", 4, "H100-SXM", 2444.47),
          ("mistralai/Mixtral-8x7B-v0.1", "latency_mixtral8x7B_tp2", 2, "A100-80GB", 3643.84),
          ("mistralai/Mixtral-8x7B-v0.1", "latency_mixtral8x7B_tp2", 2, "H200", 1921.1),
          ("mistralai/Mixtral-8x7B-v0.1", "latency_mixtral8x7B_tp2", 2, "H100-SXM", 2326.97))),
    # llm-perf-bench: Llama-2-70B fp16 on A100 PCIe, one stream of 256 tokens after a 7-token prompt
    *(Case("request", "meta-llama/Llama-2-70b-hf", "A100-80GB-PCIe", "fused", measured=_per_gpu(tps, tp),
           source=LLM_PERF, prompt=7, generate=256, tp=tp, note=engine, **FP16,
           **({"weight_dtype": "int4", "group_size": 32} if "q4f16" in engine else {}))
      for engine, tp, tps in (("MLC LLM", 2, 17.0), ("MLC LLM", 4, 26.6), ("MLC LLM", 8, 38.8),
                              ("vLLM acbed3e", 2, 15.27), ("vLLM acbed3e", 4, 17.64), ("vLLM acbed3e", 8, 14.32),
                              ("MLC LLM q4f16_1", 2, 40.9))),
    # gpt-fast README: decode at batch 1 under its tensor parallelism (A100-80GB SXM nodes)
    *(Case("decode", model, "A100-80GB", "cuda-graph", measured=1 / tps, source=GPT_FAST_TP, context=105, tp=tp,
           note="gpt-fast, torch.compile (CUDA graphs)", **BF16)
      for model, tp, tps in (("meta-llama/Llama-2-7b-hf", 2, 168.84), ("meta-llama/Llama-2-7b-hf", 4, 254.02),
                             ("meta-llama/Llama-2-7b-hf", 8, 328.43), ("meta-llama/Llama-2-70b-hf", 2, 21.32),
                             ("meta-llama/Llama-2-70b-hf", 4, 38.01), ("meta-llama/Llama-2-70b-hf", 8, 62.50))),
)


def _run(cases):
    """rows(), a case roofcalc refuses reported with its one-line reason rather than stopping the table."""
    from roofcalc.errors import RoofcalcError

    done, refused = [], []
    for c in cases:
        try:
            done += rows([c])
        except RoofcalcError as exc:
            refused.append((c, str(exc)))
    return done, refused


if __name__ == "__main__":
    for title, cases in (("One GPU", CASES), ("More than one GPU (tensor parallelism)", CASES_MULTI)):
        done, refused = _run(cases)
        print(f"\n{title}:\n")
        print(markdown(done))
        for c, why in refused:
            print(f"refused: {c.model} on {c.tp}x {c.hw} ({c.note}): {why}")
