"""roofcalc against NVIDIA AIConfigurator's measured serving runs: the time per output token of real engines.

    pip download --no-deps -d /tmp/aic aiconfigurator-core==0.12.0
    cd /tmp/aic && unzip -q aiconfigurator_core-0.12.0-*.whl 'aiconfigurator_core/systems/*' \
        'aiconfigurator_core/model_configs/*' -d x
    python benchmarks/silicon.py --data /tmp/aic/x/aiconfigurator_core      # roofcalc's own environment
    python benchmarks/silicon.py --data /tmp/aic/x/aiconfigurator_core --nvfp4    # the NVFP4 runs alone
    python benchmarks/silicon.py --data /tmp/aic/x/aiconfigurator_core --gpt-oss  # vLLM's gpt-oss-120b runs alone

The package (ai-dynamo/aiconfigurator, Apache-2.0) ships `systems/silicon_sample.csv`: 5,221 end-to-end serving
runs NVIDIA measured on real GPUs (vLLM, SGLang and TensorRT-LLM of 2025-2026; H100, H200, B200, B300, GB200),
each with its model, precision, parallelism, input and output lengths, concurrency and measured TTFT and TPOT
(ms), and `model_configs/` with the models' HF config.json. Nothing of it is kept in this repo. At its first run
no default, fit or rule of roofcalc had been chosen while looking at these runs; later changes were, so they are
seen (docs/validation.md). They are one of the three sources benchmarks/calibrate.py calibrates the range on
(band_needed: the least width on a run's side of its prediction that holds it).

What is predicted, and how (fixed before the first run):
* The rows: aggregated serving ("agg": prefill and decode on the same GPUs), one pipeline stage, no attention
  data parallelism, of the dense models whose configs roofcalc reads (Llama-3.1-8B and 70B, Qwen3-32B), in bf16
  or fp8 (per-tensor W8A8: `fp8-t`; block-scaled weights: `fp8-b128`, whose GEMMs compute in fp8 where the GPU
  has fp8; at first run they were read at the 16-bit peak, as that dtype was then defined); NVFP4 rows are left
  out (no such dtype at first run). `--nvfp4` predicts the NVFP4 rows alone (`nvfp4`: W4A4 on the B200's FP4
  tensor cores, the fitted gemm_nvfp4 form of the run's engine; the same rules otherwise, fixed before their
  first run), apart: they are not among the runs the range is calibrated on.
* `--gpt-oss` predicts vLLM's gpt-oss-120b runs alone (added once roofcalc split a traced gpt-oss under --tp and
  fitted MXFP4 fused MoE; rules fixed before their first run): tensor parallelism only (MoE TP = TP, no expert or
  attention data parallelism), the published checkpoint as it is (MXFP4 experts, bf16 elsewhere: the CSV labels
  these runs' quantization "nvfp4" on the H100 and H200 too, which have no FP4, so the label is not read), traced
  from model_configs' config (transformers has the model; no hand model), the same rules otherwise; apart, not
  calibrated on.
* `--kimi` predicts vLLM's Kimi-K2.5 runs with its published int4 experts alone (gemm_quant_mode int4_wo; added
  2026-12-07 with the int4 fused MoE form, whose fit read kernel tables only; rules fixed before their first run):
  tensor parallelism only (MoE TP = TP), the published checkpoint as it is (compressed-tensors int4 in groups of
  32 on the routed experts, bf16 elsewhere: its quantization_config), read as the command line reads it under
  `--engine vllm` (the hand DeepSeek-V3 model on its text_config, the latent attention as vLLM runs it), the same
  rules otherwise; apart, not calibrated on.
* `--ep` predicts the runs with expert parallelism and attention split by heads alone (added 2026-12-07, when
  `--ep N --ep-attention tp` and the engines' masked experts had been built from engine code and kernel tables;
  rules fixed before their first run): aggregated serving, one pipeline stage, no attention data parallelism,
  MoE TP 1 and MoE EP = TP = N > 1 (each of N GPUs holds E/N routed experts whole and 1/N of every head:
  `--ep N --ep-attention tp`); other layouts (MoE TP x EP, attention TP x DP) are left out. The MoE models whose
  checkpoints roofcalc reads in FP8 (MiniMax-M2.5, DeepSeek-R1, Qwen3-235B-A22B-FP8, Qwen3.5-397B-A17B), rows
  whose gemm_quant_mode is fp8 or fp8_block, each read as its published FP8 checkpoint is: fp8 in blocks of 128 x
  128 (`fp8-b128`; the quantization_config of MiniMax-M2.5's, DeepSeek-R1's and Qwen3-235B-A22B-FP8's configs;
  Qwen's FP8 releases of Qwen3.5 are block-quantized the same way: fp8, weight_block_size [128, 128]), the label's
  per-tensor or
block not read. NVFP4 rows are left out (which modules an NVFP4 checkpoint quantizes is in its
  hf_quant_config.json, which roofcalc does not read). Each configuration is read as the command line reads it
  (`roofcalc CONFIG --hw GPU --engine BACKEND --ep N --ep-attention tp --weight-dtype fp8-b128 --act-dtype bf16
  --kv-dtype bf16`: hand models for DeepSeek-V3's and Qwen3-MoE's families, traced ones for MiniMax-M2 and
  Qwen3.5; the engine's masked experts where the command line counts them), the same TPOT rule; no speculative
  decoding (the CSV does not say). Apart, not calibrated on.
* The engine: `--engine` of the row's backend (vllm, sglang, trtllm): its launch model (CUDA graphs), its cache
  written in place, its host time per step, and the kernel tables AIConfigurator measured for it (the fitted
  forms, docs/kernel_fits.md), on the catalog's datasheet roof. The KV cache at the activations' dtype (bf16):
  the CSV does not say, and the engines' default is the model's dtype.
* TPOT at concurrency c (the row's batch_size) with prompts of I tokens and O generated: each of the c running
  requests takes one token a step, at a context of I + O/2 on average; while one request generates its O tokens,
  each of the other c - 1 slots takes a new request whose prompt is prefilled between the decode steps
  (chunked prefill mixes it into them). So

      TPOT = t_decode(batch c, context I + O/2) + t_prefill(c - 1 prompts of I tokens) / O

  with each step's expected time (and the range's ends the same way) from roofcalc's step model; one rank's
  step under --tp. Queueing, a batch that is not full and the scheduler's choices are not modelled.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

SYSTEMS = {"h100_sxm": "H100-SXM", "h200_sxm": "H200", "b200_sxm": "B200"}
# the CSV's model_path -> the config file of model_configs/ (an -Instruct or FP8 checkpoint has its base's shape)
MODELS = {"meta-llama/Llama-3.1-8B-Instruct": "meta-llama--Meta-Llama-3.1-8B_config.json",
          "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama--Meta-Llama-3.1-8B_config.json",
          "meta-llama/Llama-3.1-70B": "meta-llama--Meta-Llama-3.1-70B_config.json",
          "Qwen/Qwen3-32B": "Qwen--Qwen3-32B_config.json"}
WEIGHTS = {"": "bf16", "fp8": "fp8-t", "fp8_block": "fp8-b128"}  # gemm_quant_mode -> roofcalc's weight dtype


@dataclass(frozen=True)
class Run:
    id: str
    backend: str
    version: str
    model: str
    system: str
    quant: str  # gemm_quant_mode ("" for bf16)
    tp: int
    isl: int
    osl: int
    concurrency: int
    tpot_s: float


# --ep: the CSV's model_path -> the config of its published FP8 checkpoint in model_configs/ (module docstring)
EP_MODELS = {"MiniMaxAI/MiniMax-M2.5": "MiniMaxAI--MiniMax-M2.5_config.json",
             "deepseek-ai/DeepSeek-R1": "deepseek-ai--DeepSeek-R1_config.json",
             "Qwen/Qwen3-235B-A22B-FP8": "Qwen--Qwen3-235B-A22B-FP8_config.json",
             "Qwen/Qwen3.5-397B-A17B": "Qwen--Qwen3.5-397B-A17B_config.json"}
GPT_OSS = "openai/gpt-oss-120b"
KIMI = "moonshotai/Kimi-K2.5"


def runs(csv: Path, nvfp4: bool = False, gpt_oss: bool = False, kimi: bool = False,
         ep: bool = False) -> tuple[list[Run], dict]:
    """The rows predicted, and how many of each kind were left out; ``nvfp4``: the NVFP4 rows alone; ``gpt_oss``:
    vLLM's gpt-oss-120b rows alone; ``kimi``: vLLM's Kimi-K2.5 rows with its published int4 experts alone; ``ep``:
    the FP8 MoE runs with expert parallelism and attention split by heads alone (``tp`` is then the EP size)."""
    import csv as _csv

    kept, left = [], {}

    def skip(why: str) -> None:
        left[why] = left.get(why, 0) + 1

    with csv.open(newline="", encoding="utf-8") as f:
        for r in _csv.DictReader(f):
            if r["mode"] != "agg":
                skip("disaggregated")
                continue
            if ep:
                size = float(r["moe_ep_size"] or 1)
                if r["model_path"] not in EP_MODELS:
                    skip("not an FP8 MoE model of the list")
                    continue
                if size == 1 or float(r["moe_tp_size"] or 1) != 1 or float(r["tp_size"] or 1) != size or \
                        float(r["attention_dp_size"] or 1) != 1:
                    skip("not MoE EP = TP with no attention data parallelism")
                    continue
                if r["gemm_quant_mode"] not in ("fp8", "fp8_block"):
                    skip(f"weights {r['gemm_quant_mode'] or 'bf16'}")
                    continue
            elif kimi:
                if r["model_path"] != KIMI or r["backend"] != "vllm" or r["gemm_quant_mode"] != "int4_wo":
                    skip("not vLLM's int4 Kimi-K2.5")
                    continue
                if float(r["moe_tp_size"] or 1) != float(r["tp_size"] or 1) or float(r["moe_ep_size"] or 1) != 1:
                    skip("expert parallelism")
                    continue
            elif gpt_oss:
                if r["model_path"] != GPT_OSS or r["backend"] != "vllm":
                    skip("not vLLM's gpt-oss-120b")
                    continue
                if float(r["moe_tp_size"] or 1) != float(r["tp_size"] or 1) or float(r["moe_ep_size"] or 1) != 1:
                    skip("expert parallelism")
                    continue
            elif r["model_path"] not in MODELS:
                skip("a model not here (MoE or not in the list)")
                continue
            if r["system"] not in SYSTEMS:
                skip(f"system {r['system']}")
                continue
            quant = "mxfp4" if gpt_oss else "int4" if kimi else "fp8-b128" if ep else r["gemm_quant_mode"] or ""
            if not (gpt_oss or kimi or ep) and ((quant == "nvfp4") != nvfp4 or quant not in WEIGHTS and not nvfp4):
                skip(f"weights {quant}")
                continue
            pp, dp = float(r["pp_size"] or 1), float(r["attention_dp_size"] or 1)
            if pp != 1 or dp > 1:
                skip("pipeline or attention data parallelism")
                continue
            if not r["silicon_tpot_ms"]:
                skip("no TPOT")
                continue
            kept.append(Run(r["id"], r["backend"], r["backend_version"], r["model_path"], r["system"], quant,
                            int(float(r["tp_size"] or 1)), int(r["isl"]), int(r["osl"]), int(float(r["batch_size"])),
                            float(r["silicon_tpot_ms"]) / 1e3))
    return kept, left


def ep_grid(run: Run, configs: Path, cache: dict, batch: int, **axis):
    """An --ep run's step grid as the command line builds it (module docstring: its flags), the model read once a
    configuration; ``axis``: contexts=[...] for a decode step, prompts=[...] for a prefill."""
    import copy

    from roofcalc import cli

    key = ("ep", run.model, run.system, run.backend, run.tp)
    if key not in cache:
        argv = [str(configs / EP_MODELS[run.model]), "--hw", SYSTEMS[run.system], "--engine", run.backend,
                "--ep", str(run.tp), "--ep-attention", "tp", "--weight-dtype", run.quant, "--act-dtype", "bf16",
                "--kv-dtype", "bf16"]
        args = cli._main_parser().parse_args(argv)
        cli._resolve_engine(args)
        cli._check_dtypes(args)
        cli._engine_weights(args, cli._hardware(args)[0])
        args.dtype_flag = args.dtype
        cache[key] = args, cli.load_model(args)
    args, shape = cache[key]
    step = copy.copy(args)
    step.batch = str(batch)
    step.context = ",".join(map(str, axis.get("contexts", []))) or None
    step.prompt = ",".join(map(str, axis.get("prompts", []))) or None
    return cli.build_sweep(step, shape).grid


def predict(run: Run, configs: Path, cache: dict) -> tuple:
    """(expected, lower, upper) TPOT in seconds (module docstring), the prefills' share of the expected, and the
    parts the range's lower end is made of: ((expected, floors) of the decode step, (expected, floors) of the
    prefills' share), for the calibration (lower_end)."""
    from roofcalc import load_shape
    from roofcalc.calculator import dtype
    from roofcalc.engines import find_engine
    from roofcalc.hardware import find_hardware
    from roofcalc.sweep import sweep

    if run.model in EP_MODELS:  # (--ep) the command line's own reading
        c = run.concurrency
        dec = ep_grid(run, configs, cache, c, contexts=[run.isl + run.osl // 2])
        pre = ep_grid(run, configs, cache, c - 1, prompts=[run.isl]) if c > 1 else None
        return _tpot(run, dec, pre)
    key = (run.model, run.tp)
    if key not in cache and run.model == KIMI:  # the hand DeepSeek-V3 model on its text_config, as the command
        # line reads it under --engine vllm (cli._latent_as_deepseek)
        from roofcalc.parallel import Parallel, RankAnalyzer

        shape = load_shape(str(configs / "moonshotai--Kimi-K2.5_config.json"), family="deepseek_v3")
        cache[key] = shape, RankAnalyzer(shape, Parallel(run.tp))
    if key not in cache and run.model == GPT_OSS:  # traced (no hand model), one rank by vLLM's gpt-oss plan
        from roofcalc.parallel import Parallel
        from roofcalc.sources import load_config
        from roofcalc.trace import TraceAnalyzer, TracedRankAnalyzer, traced_shape

        traced = traced_shape(*load_config(str(configs / "openai--gpt-oss-120b_config.json"))[:2])
        shape = traced[0]
        cache[key] = shape, (TracedRankAnalyzer(*traced[1], "ideal", Parallel(run.tp)) if run.tp > 1 else
                             TraceAnalyzer(*traced[1], "ideal"))
    if key not in cache:
        shape = load_shape(str(configs / MODELS[run.model]))
        analyzer = None
        if run.tp > 1:
            from roofcalc.parallel import Parallel, RankAnalyzer

            analyzer = RankAnalyzer(shape, Parallel(run.tp))
        cache[key] = shape, analyzer
    shape, analyzer = cache[key]
    engine = find_engine(run.backend)
    weights = dtype(WEIGHTS.get(run.quant, run.quant))
    if run.model == KIMI:  # its quantization_config: int4 in groups of 32, the routed experts alone
        from dataclasses import replace

        assert (shape.weight_format, shape.weight_group, shape.weight_scope) == ("int4", 32, "experts")
        weights = replace(weights, experts_only=True)
    kw = dict(weight_dtype=weights, act_dtype=dtype("bf16"), kv_dtype=dtype("bf16"),
              **({"group_size": 32} if run.quant in ("mxfp4", "int4") else {}),
              **({"mla": engine.mla} if run.model == KIMI else {}),
              cache_update=engine.cache_update, eager_ops=engine.impl == "hf-eager", impl=engine.impl,
              tp_layout=engine.tp_layout,
              engine_host=engine.host, analyzer=analyzer)
    hw = find_hardware(SYSTEMS[run.system])
    c = run.concurrency
    dec = sweep(shape, hw, batches=[c], contexts=[run.isl + run.osl // 2], **kw).grid
    pre = sweep(shape, hw, batches=[c - 1], prompts=[run.isl], **kw).grid if c > 1 else None
    return _tpot(run, dec, pre)


def _tpot(run: Run, dec, pre) -> tuple:
    """predict's tuple from the decode step's grid and the c - 1 prefills' (None at concurrency 1)."""
    ends = [float(x[0, 0]) for x in (dec.predicted_s, dec.predicted_lower_s, dec.predicted_upper_s)]
    decode = ends[0]
    parts = [(decode, float(dec.floor_s[0, 0]))]
    if pre is not None:
        ends = [t + float(x[0, 0]) / run.osl
                for t, x in zip(ends, (pre.predicted_s, pre.predicted_lower_s, pre.predicted_upper_s))]
        parts.append((float(pre.predicted_s[0, 0]) / run.osl, float(pre.floor_s[0, 0]) / run.osl))
    return ends[0], ends[1], ends[2], 1 - decode / ends[0], tuple(parts)


def band_needed(measured: float, parts) -> float:
    """The least half-width b whose range holds ``measured``: the range is Σ parts' expected × e^b above, and
    Σ max(floors, expected × e^-b) below (each step's lower end never under its floors: predict.StepTimes); a
    run faster than the floors' sum no band holds (inf)."""
    expected = sum(p for p, _ in parts)
    if sum(f for _, f in parts) > measured or expected <= 0:
        return math.inf
    if measured >= expected:
        return math.log(measured / expected)

    def lower(b: float) -> float:
        return sum(max(f, p * math.exp(-b)) for p, f in parts)

    lo, hi = 0.0, math.log(expected / measured)  # the band that would hold it with no floors
    while lower(hi) > measured:  # a floor holds one part up: further
        if hi > 50:
            return math.inf
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if lower(mid) <= measured else (mid, hi)
    return hi


def summary(rows) -> dict:
    inside = sum(lo <= r.tpot_s <= hi for r, _, lo, hi, *_ in rows)
    logs = [math.log(r.tpot_s / p) for r, p, *_ in rows]
    return {"runs": len(rows), "inside": inside, "share_inside": inside / len(rows),
            "median_log": statistics.median(logs), "median_abs_log": statistics.median(abs(x) for x in logs),
            "within_30": sum(abs(x) <= math.log(1.3) for x in logs) / len(rows),
            "median_width": statistics.median(hi / lo for _, _, lo, hi, *_ in rows)}


def table(groups: dict) -> str:
    lines = ["| group | runs | measured / predicted, median | median \\|log\\| | within ±30 % | inside [lower, upper] "
             "| median upper / lower |", "|---|---|---|---|---|---|---|"]
    for name, rows in groups.items():
        s = summary(rows)
        lines.append(f"| {name} | {s['runs']} | {math.exp(s['median_log']):.2f} | {s['median_abs_log']:.3f} | "
                     f"{100 * s['within_30']:.0f} % | {s['inside']} ({100 * s['share_inside']:.0f} %) | "
                     f"{s['median_width']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the unzipped aiconfigurator_core folder")
    ap.add_argument("--rows", action="store_true", help="print every run's row too")
    ap.add_argument("--nvfp4", action="store_true", help="the NVFP4 runs alone (not calibrated on)")
    ap.add_argument("--gpt-oss", action="store_true", help="vLLM's gpt-oss-120b runs alone (not calibrated on)")
    ap.add_argument("--kimi", action="store_true", help="vLLM's int4 Kimi-K2.5 runs alone (not calibrated on)")
    ap.add_argument("--model", default="", help="only the runs whose model_path holds this text (a part of a set, "
                    "to see what a change did to it)")
    ap.add_argument("--system", default="", help="only the runs on this system (the CSV's: h200_sxm, b200_sxm, ...)")
    ap.add_argument("--ep", action="store_true", help="the FP8 MoE runs with expert parallelism and attention split "
                    "by heads alone (not calibrated on)")
    args = ap.parse_args()
    csv, configs = args.data / "systems" / "silicon_sample.csv", args.data / "model_configs"
    if not csv.is_file() or not configs.is_dir():
        sys.exit(f"silicon.py: no systems/silicon_sample.csv and model_configs/ under {args.data}")
    kept, left = runs(csv, args.nvfp4, args.gpt_oss, args.kimi, args.ep)
    if args.model:
        left[f"model_path without {args.model!r}"] = sum(args.model not in r.model for r in kept)
        kept = [r for r in kept if args.model in r.model]
    if args.system:
        left[f"system not {args.system}"] = sum(r.system != args.system for r in kept)
        kept = [r for r in kept if r.system == args.system]
    cache: dict = {}
    rows = [(r, *predict(r, configs, cache)) for r in kept]
    print(f"{len(rows)} runs predicted; left out: " + ", ".join(f"{n} {why}" for why, n in sorted(left.items())))
    groups: dict = {"all": rows}
    for name, pick in (("one GPU", lambda r: r.tp == 1), ("2-8 GPUs", lambda r: r.tp > 1)):
        groups[name] = [x for x in rows if pick(x[0])]
    for attr in ("backend", "system", "model"):
        for value in sorted({getattr(x[0], attr) for x in rows}):
            groups[f"{attr} {value}"] = [x for x in rows if getattr(x[0], attr) == value]
    for name, pick in (("concurrency <= 16", lambda r: r.concurrency <= 16), ("concurrency 17-64",
                       lambda r: 16 < r.concurrency <= 64), ("concurrency > 64", lambda r: r.concurrency > 64)):
        groups[name] = [x for x in rows if pick(x[0])]
    # (after the first run) how much of the predicted TPOT is other requests' prefills: the part the model of a
    # serving step is least sure of
    for name, lo, hi in (("prefills < 10 % of the TPOT", 0, 0.1), ("prefills 10-30 %", 0.1, 0.3),
                         ("prefills > 30 %", 0.3, 1.01)):
        groups[name] = [x for x in rows if lo <= x[4] < hi]
    print()
    print(table({k: v for k, v in groups.items() if v}))
    if args.rows:
        print()
        print("| run | measured ms | predicted ms | [lower, upper] | measured / predicted | prefills' share |")
        print("|---|---|---|---|---|---|")
        for r, p, lo, hi, share, _ in rows:
            print(f"| {r.id} | {r.tpot_s * 1e3:.2f} | {p * 1e3:.2f} | [{lo * 1e3:.2f}, {hi * 1e3:.2f}] | "
                  f"{r.tpot_s / p:.2f} | {100 * share:.0f} % |")


if __name__ == "__main__":
    main()
