"""roofcalc's predictions against published measurements of real engines.

    python benchmarks/published.py            # the table in docs/validation.md, and its summary
    python benchmarks/published.py --tables vllm    # every case on vLLM's kernel tables

Every case runs on the catalog's *datasheet* roof with the *default* efficiencies and host
overheads (roofcalc/predict.py) and, on a GPU with measured kernel tables, the fitted kernels of
its engine's tables (TensorRT-LLM's cases: TensorRT-LLM's; the others: vLLM's): nothing here is
measured on this machine, and no default was fitted to these cases (gpt-fast's int8 and int4 figures are where the dequantizing factors come
from, so they are not among them). A case is a decode step (TPOT), a prefill (TTFT) or a whole
static batch of requests (output tokens/s), as the source reports it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass

GPT_FAST = "gpt-fast README (pytorch-labs/gpt-fast): A100-80GB at 330 W, batch 1, 5-token prompt, 200 new tokens"
PT_BLOG = "PyTorch blog 'Accelerating Generative AI with PyTorch II: GPT, Fast' (2023): A100-80GB at 330 W, batch 1"
MLC = "mlc-ai/llm-perf-bench pull request #1 (2023-08): RTX 4090, batch 1"
H2O = "h2oai/h2ogpt perf.md: transformers backend, 16-bit, batch 1, summarization"
TRT = "TensorRT-LLM docs/source/performance.md, v0.8.0"
TRT_06 = "TensorRT-LLM docs/source/performance.md: throughput tables 'updated for v0.6.1', latency tables 'from v0.5'"
# TensorRT-LLM's FP8 ("FP8 Per Tensor" and "FP8 KV Cache" in its quantization docs): the GEMMs' weights and
# inputs in fp8 with one scale per tensor, the KV cache in fp8, every other tensor (activations between
# kernels, embeddings, lm_head) in fp16, as vLLM's FP8 docs also describe W8A8 ("all Linear modules (except
# for the final lm_head)" quantized with a per-tensor scale)
FP8 = dict(dtype="fp16", weight_dtype="fp8-t", kv_dtype="fp8")


@dataclass(frozen=True)
class Case:
    what: str  # "decode" (seconds per token), "prefill" (TTFT), "request" (output tokens/s), "first-token" (a
    #            prefill of prompt - 1 tokens, then one decode step at context prompt: an engine whose first token
    #            comes from a decode step, as LMDeploy's TurboMind before v0.1.0 did)
    model: str
    hw: str
    impl: str
    dtype: str
    measured: float  # seconds (decode, prefill) or output tokens per second (request)
    source: str
    batch: int = 1
    context: int = 0  # decode: positions attended
    prompt: int = 0
    generate: int = 0
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    group_size: int = 128
    note: str = ""
    tp: int = 1  # tensor-parallel GPUs (request cases then report output tokens/s per GPU)
    cache: str = "in-place"  # how the engine's KV cache takes a token: "concat" for transformers' DynamicCache
    attention: str = "fused"  # "unfused": the score matrix written and read between kernels (llama.cpp before its
    #                           FlashAttention, pull request #5021 of 2024-04-30)
    ubatch: int = 0  # an unfused attention's prompt in micro-batches of this many tokens (llama.cpp's 512)
    tables: str = ""  # the engine preset whose measured kernel tables the fitted costs come from: "trtllm" for
    #                   TensorRT-LLM's, "trtllm-0.6" for its versions before XQA (those tables, GQA decode per head)
    host: bool = False  # the preset's host time outside the kernels too (a seen re-run; the sets above take none)
    int4_kernel: str = ""  # the kernel its int4 matmuls run where it is not Marlin-like (predict.INT4_KERNELS)
    gguf: str = ""  # a llama.cpp GGUF file's type (q4_0, q8_0): its embedding and output tables as it stores them

    def __post_init__(self):
        # a case of an engine whose kernels AIConfigurator measured takes that engine's tables (a rule, applied
        # to every case of this seen set; the held-out set keeps vLLM's, as it was run before the rule);
        # TensorRT-LLM before v0.7 (v0.5 and v0.6.1 here) had no XQA kernel: the trtllm-0.6 preset
        if not self.tables and self.source in (TRT, TRT_06):
            object.__setattr__(self, "tables", "trtllm-0.6" if self.source == TRT_06 else "trtllm")


def _dtypes(name: str) -> dict:
    """A TensorRT-LLM table's precision as roofcalc's dtypes: its FP8 recipe, or one dtype throughout."""
    return dict(FP8) if name == "fp8" else dict(dtype=name, kv_dtype=name)


CASES = (
    # decode, batch 1: TPOT = 1 / tokens per second; the context is the middle of the generation
    Case("decode", "meta-llama/Llama-2-7b-hf", "A100-80GB", "cuda-graph", "bf16", 1 / 104.9, GPT_FAST, context=105,
         note="torch.compile (reduce-overhead: CUDA graphs)"),
    Case("decode", "meta-llama/Llama-2-7b-hf", "A100-80GB", "hf-eager", "bf16", 1 / 25.5, PT_BLOG, context=105,
         note="the blog's eager starting point (gpt-fast's model, no compile)"),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX4090", "fused", "fp16", 1 / 191.0, MLC, context=256,
         weight_dtype="int4", group_size=32, note="MLC LLM q4f16_1 (context not stated: 256 assumed)"),
    Case("decode", "meta-llama/Llama-2-13b-hf", "RTX4090", "fused", "fp16", 1 / 108.8, MLC, context=256,
         weight_dtype="int4", group_size=32, note="MLC LLM q4f16_1"),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX4090", "fused", "fp16", 1 / 152.56, MLC, context=256,
         weight_dtype="int4", group_size=128, note="ExLlama, GPTQ 4-bit"),
    Case("decode", "meta-llama/Llama-2-13b-hf", "RTX4090", "fused", "fp16", 1 / 93.88, MLC, context=256,
         weight_dtype="int4", group_size=128, note="ExLlama, GPTQ 4-bit"),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX4090", "hf-eager", "fp16", 1 / 40.9252, H2O, context=2048,
         note="HF generate (context not stated: 2048 assumed)", cache="concat"),
    Case("decode", "meta-llama/Llama-2-7b-hf", "A100-80GB", "hf-eager", "fp16", 1 / 30.9821, H2O, context=2048,
         note="HF generate", cache="concat"),
    Case("decode", "meta-llama/Llama-2-7b-hf", "RTX3090", "hf-eager", "fp16", 1 / 18.0571, H2O, context=2048,
         note="HF generate", cache="concat"),
    # prefill, batch 1: time to first token
    *(Case("prefill", "meta-llama/Llama-2-7b-hf", hw, "fused", measured=ms / 1e3, source=TRT, prompt=p, **_dtypes(dt),
           note="first-token latency table")
      for hw, dt, p, ms in (("H100-SXM", "fp8", 128, 6.4), ("H100-SXM", "fp8", 2048, 31.0),
                            ("H200", "fp8", 128, 5.8), ("H200", "fp8", 2048, 30.1),
                            ("A100-80GB", "fp16", 128, 16.1), ("A100-80GB", "fp16", 2048, 120.5),
                            ("L40S", "fp8", 128, 14.3), ("L40S", "fp8", 2048, 79.0))),
    # whole static batches: output tokens/s over prefill + generation
    *(Case("request", "meta-llama/Llama-2-7b-hf", hw, "fused", measured=tps, source=TRT, batch=b, prompt=p,
           generate=n, **_dtypes(dt), note="throughput table (out tok/s/GPU)")
      for hw, dt, b, p, n, tps in (("A100-80GB", "fp16", 256, 128, 128, 5353), ("A100-80GB", "fp16", 32, 128, 2048, 1518),
                                   ("A100-80GB", "fp16", 32, 2048, 128, 547), ("A100-80GB", "fp16", 16, 2048, 2048, 613),
                                   ("H100-SXM", "fp8", 896, 128, 128, 20241), ("H100-SXM", "fp8", 120, 128, 2048, 6922),
                                   ("H100-SXM", "fp8", 64, 2048, 128, 2170), ("H100-SXM", "fp8", 56, 2048, 2048, 2816))),
)


# More than one GPU: Llama-2-70B under tensor parallelism (TensorRT-LLM's own plan: Megatron-style, the
# one roofcalc's --tp models), on DGX-class nodes (NVLink / NVSwitch).
CASES_MULTI = (
    *(Case("request", "meta-llama/Llama-2-70b-hf", hw, "fused", measured=tps, source=TRT_06, batch=b, prompt=p,
           generate=n, **_dtypes(dt), tp=tp, note="throughput table (out tok/s/GPU)")
      for hw, dt, b, tp, p, n, tps in (("H100-SXM", "fp8", 1024, 2, 128, 128, 2657),
                                       ("H100-SXM", "fp8", 480, 4, 128, 2048, 1486),
                                       ("H100-SXM", "fp8", 96, 2, 2048, 128, 306),
                                       ("H100-SXM", "fp8", 64, 2, 2048, 2048, 547),
                                       ("A100-80GB", "fp16", 1280, 4, 128, 128, 670),
                                       ("A100-80GB", "fp16", 240, 4, 128, 2048, 525),
                                       ("A100-80GB", "fp16", 120, 4, 2048, 128, 79))),
    *(Case("prefill", "meta-llama/Llama-2-70b-hf", hw, "fused", measured=ms / 1e3, source=TRT_06, prompt=p, **_dtypes(dt),
           tp=tp, note="first-token latency table")
      for hw, dt, tp, p, ms in (("H100-SXM", "fp8", 4, 128, 26), ("H100-SXM", "fp8", 4, 2048, 109),
                                ("A100-80GB", "fp16", 4, 128, 47), ("A100-80GB", "fp16", 4, 2048, 377))),
)


def predict(c: Case) -> tuple[float, float, float]:
    """(predicted, lower, upper) in the case's own unit, on the datasheet roof with default efficiencies."""
    from roofcalc import load_shape
    from roofcalc.calculator import dtype
    from roofcalc.errors import UnsupportedModelType
    from roofcalc.hardware import find_hardware
    from roofcalc.sweep import sweep

    kw = dict(weight_dtype=dtype(c.weight_dtype or c.dtype), act_dtype=dtype(c.dtype),
              kv_dtype=dtype(c.kv_dtype or c.dtype), group_size=c.group_size, cache_update=c.cache,
              eager_ops=c.impl == "hf-eager",
              attention=c.attention, ubatch=c.ubatch, gguf=c.gguf)
    hw = find_hardware(c.hw)
    traced = None
    try:
        shape = load_shape(c.model)
    except UnsupportedModelType:  # a model_type with no hand model: traced, as the command line does
        from roofcalc.sources import load_config
        from roofcalc.trace import traced_shape

        shape, traced = traced_shape(*load_config(c.model)[:2])
    if c.tables:  # the engine's measured kernel tables (and its decode kernel's rule), no host time of its preset
        from roofcalc.engines import ENGINES
        from roofcalc.predict import EngineHost

        e = ENGINES[c.tables] if c.tables in ENGINES else None
        kw["engine_host"] = EngineHost(engine=c.tables) if e is None else e.host if c.host else \
            EngineHost(engine=e.name, tables=e.tables, decode_every_head=e.decode_every_head)
        if e is not None:  # DeepSeek's attention as the engine runs it (the command line's --engine default)
            kw["mla"] = e.mla
            kw["tp_layout"] = e.tp_layout  # and its split under --tp (a MoE layer's one all-reduce, Phi-3's heads)
    if c.int4_kernel:  # the engine's int4 kernel (and its switch to the 16-bit GEMM) on whatever else it takes
        from roofcalc.predict import EngineHost

        kw["engine_host"] = dataclasses.replace(kw.get("engine_host") or EngineHost(), int4_kernel=c.int4_kernel)
    view = "eager" if c.impl == "hf-eager" else "ideal"
    if traced is not None:  # each workload traced once (one rank's, split by the config class's plan)
        from roofcalc.parallel import Parallel
        from roofcalc.trace import TraceAnalyzer, TracedRankAnalyzer

        kw["analyzer"] = TracedRankAnalyzer(*traced, view, Parallel(c.tp)) if c.tp > 1 else TraceAnalyzer(*traced, view)
    elif c.tp > 1:  # one rank's step; every rank runs it at once
        from roofcalc.parallel import Parallel, RankAnalyzer

        kw["analyzer"] = RankAnalyzer(shape, Parallel(c.tp))
    if c.what == "decode":
        g = sweep(shape, hw, batches=[c.batch], contexts=[c.context], impl=c.impl, **kw).grid
    elif c.what == "prefill":
        g = sweep(shape, hw, batches=[c.batch], prompts=[c.prompt], impl=c.impl, **kw).grid
    elif c.what == "first-token":  # the two steps in turn: their times, and their ranges' ends, add up
        pre = sweep(shape, hw, batches=[c.batch], prompts=[c.prompt - 1], impl=c.impl, **kw).grid
        step = sweep(shape, hw, batches=[c.batch], contexts=[c.prompt], impl=c.impl, **kw).grid
        return tuple(float(a[0, 0] + b[0, 0]) for a, b in ((pre.predicted_s, step.predicted_s),
                                                           (pre.predicted_lower_s, step.predicted_lower_s),
                                                           (pre.predicted_upper_s, step.predicted_upper_s)))
    else:
        g = sweep(shape, hw, batches=[c.batch], prompts=[c.prompt], generate=c.generate, impl=c.impl, **kw).grid
    t = tuple(float(x[0, 0]) for x in (g.predicted_s, g.predicted_lower_s, g.predicted_upper_s))
    if c.what == "request":  # tokens/s (per GPU): the fastest time gives the most tokens
        tokens = c.batch * c.generate / c.tp
        return tokens / t[0], tokens / t[2], tokens / t[1]
    return t


def rows(cases=CASES):
    out = []
    for c in cases:
        p, lo, hi = predict(c)
        out.append((c, p, lo, hi))
    return out


def summary(rs) -> dict:
    inside = sum(lo <= c.measured <= hi for c, _, lo, hi in rs)
    logs = [abs(math.log(c.measured / p)) for c, p, _, _ in rs]
    widths = [hi / lo for _, _, lo, hi in rs]
    return {"cases": len(rs), "inside": inside, "median_abs_log": statistics.median(logs),
            "median_width": statistics.median(widths)}


def _fmt(c: Case, x: float) -> str:
    if c.what == "request":
        return f"{x:,.0f} tok/s" if x >= 100 else f"{x:.3g} tok/s"
    return f"{x * 1e3:.3g} ms"


def markdown(rs) -> str:
    # the ratio is of the row's own unit: in a tok/s row below 1 is slower than predicted, in an ms row faster
    lines = ["| # | case | engine (impl) | measured | predicted | [lower, upper] | measured / predicted (row's unit) "
             "| inside |",
             "|---|---|---|---|---|---|---|---|"]
    for i, (c, p, lo, hi) in enumerate(rs, 1):
        wl = {"decode": f"decode B={c.batch} S={c.context}", "prefill": f"prefill P={c.prompt}",
              "first-token": f"first token P={c.prompt}",
              "request": f"B={c.batch} P={c.prompt} N={c.generate}"}[c.what]
        dt = f"fp8 (W8A8 per tensor, KV {c.kv_dtype or c.dtype}, {c.dtype} between)" if c.weight_dtype == "fp8-t" else \
            c.dtype + (f" W{c.weight_dtype[3:]} g{c.group_size}" if (c.weight_dtype or "").startswith("int") else
                       f" weights {c.weight_dtype}" if c.weight_dtype else "")
        on = f"{c.tp}x {c.hw} (TP {c.tp})" if c.tp > 1 else c.hw
        lines.append(f"| {i} | {c.model.split('/')[-1]} {dt} on {on}, {wl} | {c.note} ({c.impl}) | "
                     f"{_fmt(c, c.measured)} | {_fmt(c, p)} | [{_fmt(c, lo)}, {_fmt(c, hi)}] | "
                     f"{c.measured / p:.2f} | {'yes' if lo <= c.measured <= hi else 'no'} |")
    s = summary(rs)
    lines += ["", f"{s['inside']} of {s['cases']} inside [lower, upper] ({100 * s['inside'] / s['cases']:.0f}%); median "
              f"|log(measured / predicted)| = {s['median_abs_log']:.3f} (log 1.25 = {math.log(1.25):.3f}); median "
              f"upper / lower = {s['median_width']:.2f}"]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    def tables(cases):
        if "--tables" in sys.argv:  # one engine's tables for every case (what the rule above changes)
            return tuple(dataclasses.replace(c, tables=sys.argv[sys.argv.index("--tables") + 1]) for c in cases)
        return cases

    print(markdown(rows(tables(CASES))))
    print("\nMore than one GPU (tensor parallelism):\n")
    print(markdown(rows(tables(CASES_MULTI))))
