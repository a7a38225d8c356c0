"""Write the fitted kernel costs the tool ships (src/roofcalc/data/kernel_fits.json) from the fit's output.

    python benchmarks/fit_kernels.py --data DIR     # writes benchmarks/kernel_fits.json (see its docstring)
    python benchmarks/ship_fits.py                  # this: the part the step model reads

What ships, per measured GPU (vLLM tables; NCCL for the collectives), with the fit's provenance:
* each kernel class's fixed cost (``fixed_s``: gemm and gemv, attention, attention_compute): the fitted fixed
  cost of the 16-bit GEMM, decode attention and prefill attention forms below, the one each of those kernels
  pays; decode and prefill attention less the elementwise cache write their calls include (roofcalc's
  kv_cache_write pays its own, predict.GPU_FIXED). (The median of each table's five fastest rows,
  ``smallest_5_median_us``, is what the defaults of a GPU without tables take the median of over the five.)
* the all-reduce's, all-gather's and all-to-all's fitted fixed cost at 2, 4 and 8 ranks and share of the link by
  message size (``e_link_N``, bytes to share; ``all_reduce``, ``all_gather``, ``all_to_all``), cross-validated in
  docs/kernel_fits.md; the bytes are nccl-tests' size: the all-reduce's buffer, the all-gather's whole output
  (ranks x each rank's input), the all-to-all's per-rank buffer; and each engine's own all-reduce inside its CUDA
  graph in the same form (``custom_all_reduce``: vLLM's with the vLLM forms, SGLang's and TensorRT-LLM's with
  theirs);
* the GEMM classes' fitted forms (``gemm``: bf16, and fp8 per tensor, fp8 block-scaled and NVFP4 where measured;
  NVFP4's with the bytes a weight or input value takes in its form, ``value_bytes``), the model that
  docs/kernel_fits.md cross-validates: fixed cost, M tile, e_compute(M) and e_memory(M) as knots, the N and K
  factors with the reference knot (4,096: factor 1) written in, fp8's activation-quantization efficiency;
* the fused MoE classes' fitted forms (``moe``: bf16, fp8 per tensor, fp8 block-scaled, MXFP4, NVFP4 and int4
  weights, where measured: moe_form), cross-validated in docs/kernel_fits.md;
* the attention classes' fitted forms (``attention``: decode with and without a window, prefill; 16-bit and
  fp8 KV), their factors' references written in (attention_form).
Each GPU's forms from the vLLM tables, and in data/kernel_fits_engines.json those of SGLang's and TensorRT-LLM's
tables (what ``--engine sglang`` and ``--engine trtllm`` take; read only for them). The DRAM parameters only: a step's weights and KV are read from DRAM (the l2_* ones describe the benchmark's
replays, which read the same weights or KV again and again).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from roofcalc import fitting as F  # noqa: E402  (the forms' documents, as measure writes them too)

STREAM_FIXED_US = 1.735  # predict.GPU_FIXED["stream"]: the cache write's elementwise kernel


NCCL_OPS = {"allreduce": "all_reduce", "allgather": "all_gather", "alltoall": "all_to_all"}  # fit class -> op


def link_form(f: dict) -> dict:
    """A fitted collective's fixed cost and share of the link by size at each fitted rank count, as
    predict.KernelModel.collectives reads them."""
    p = f["params"]
    return {str(ranks): {"fixed_s": p[f"fixed_s_{ranks}"],
                         "e_link": sorted([float(k), v] for k, v in p[f"e_link_{ranks}"].items())}
            for ranks in (2, 4, 8) if f"fixed_s_{ranks}" in p}


def gemm_form(f: dict) -> dict:
    """A GEMM class's DRAM parameters as predict.GemmFit reads them (fitting.gemm_doc), with the fit's provenance."""
    nvfp4 = {"value_bytes": 0.5 + 1 / 16} if f["cls"] == "gemm_nvfp4" else {}  # fit_kernels.GEMM_FORMATS, its scales
    return {**F.gemm_doc(f["params"], f["tile"], f["peak_flops"], f["system_yaml"]["mem_bw"]), **nvfp4,
            "source": f["source"], "cv_dram": f["cv"]["dram"]}


def attention_form(f: dict, bf16_peak: float, l2: float = 0.0) -> dict:
    """A decode or prefill attention class's DRAM parameters as predict.AttentionFit reads them
    (fitting.attention_doc, each factor's reference written in), with the fit's provenance; ``peak_ratio``: the
    fit's compute peak over the bf16 one (2 where the attention runs in fp8). ``fixed_s``: the fitted fixed cost
    less the cache write's elementwise kernel, which each measured call includes and roofcalc counts apart (its
    kv_cache_write pays its own fixed cost)."""
    kind = "decode" if f["cls"].startswith("decode") else "prefill"
    doc = F.attention_doc(f["params"], kind, f["tile"], STREAM_FIXED_US * 1e-6, f["peak_flops"] / bf16_peak,
                          mmha=f["source"].get("mmha_rule"), l2=l2)
    head = ("kind", "fixed_s", "fixed_s_fitted", "tile", "per_head", "peak_ratio", "e_compute", "e_memory", "item_s",
            "window_factor")
    return {**{k: doc[k] for k in head}, "source": f["source"], "cv_dram": f["cv"]["dram"],
            **{k: v for k, v in doc.items() if k not in head}}


BORROWED_MOE = ("vLLM's MoE table of this GPU holds no balanced-routing rows (power-law only); SGLang's times the "
                "same Triton kernel (python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py: adapted from vLLM's "
                "fused_moe.py), so vLLM's preset takes SGLang's fitted form")


BORROWED_INT4 = ("vLLM's MoE tables of this GPU hold no int4 rows of two model shapes or more (the H100's and H200's "
                 "Kimi-K2's alone, the A100's none), so no form is fitted on them; SGLang's time the same Marlin MoE "
                 "kernel over ten (sgl-kernel's csrc/moe/marlin_moe_wna16, as vLLM's csrc/moe/"
                 "marlin_moe_wna16: fused_marlin_moe), so vLLM's preset takes SGLang's fitted form; against vLLM's "
                 "own table it is docs/kernel_fits.md's \"Tables the fit did not read\"")


# A table whose rows are not what they name: the preset takes vLLM's form of the same GPU and class instead
NOT_SHIPPED = {("a100_sxm", "trtllm", "decode_bf16kv"): (
    "TensorRT-LLM 1.0's A100 decode table runs faster than the A100's DRAM allows: its rows of more than 200 MB of "
    "KV read at a median 1.20x the datasheet's 2,039 GB/s where query heads share a KV head (63 % of them above "
    "it, up to 1.69x) and 0.79x where they do not (11 % above); no other table's median passes 0.86x, nor more "
    "than 1 % of its rows 1x. Its rows read less KV than they name, so TensorRT-LLM's preset on the A100 takes "
    "vLLM's decode form (docs/kernel_fits.md, \"TensorRT-LLM's A100 decode table\")")}


TABLE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
BORROWED_GDN = ("{engine}'s gdn table of this GPU holds no rows of this kernel; the engines each run their own copy "
                "of flash-linear-attention's Triton kernels for it, so the preset takes {lender}'s fitted form")


UNTUNED = ("untuned_factor_compute", "tuned")  # SGLang's factor for shapes without tuned tiles, and its list


def moe_form(f: dict, bf16_peak: float) -> dict:
    """A fused MoE class's DRAM parameters as predict.MoEFit reads them (fitting.moe_doc), with the fit's
    provenance; ``peak_ratio``: the fit's compute peak over the bf16 one (2 for the fp8 classes, 4 for nvfp4's FP4)."""
    block = F.MOE_FORMATS[f["cls"][4:]][2]
    source = dict(f["source"])
    tuned = source.get("tuned_configs", {}).get("pairs", ())
    if tuned:  # the list once, as the form's "tuned"
        source["tuned_configs"] = {k: v for k, v in source["tuned_configs"].items() if k != "pairs"}
    pad = source.get("padded_to")  # the sizes an MXFP4 kernel stores its experts at (fitting.mxfp4_padding)
    wb = F.MOE_FORMATS[f["cls"][4:]][1]  # and the bytes a weight its stored work is counted with
    # a kernel that runs every routed pair on each EP rank (fitting.EVERY_PAIR): the weight's bytes and scale block
    # the step model counts the extra pairs' work with (predict.MoEFit.every_pair)
    every = {"every_pair": {"weight_bytes": wb, "block": block}} if source.get("every_pair_on_each_rank") else {}
    return {**F.moe_doc(f["params"], f["peak_flops"] / bf16_peak, block, f.get("ranges"), tuned),
            **({"pad": {**pad, "weight_bytes": wb}} if pad and any(pad.values()) else {}), **every, "source": source,
            "cv_dram": f["cv"]["dram"]}


def main() -> None:
    doc = json.loads((ROOT / "benchmarks" / "kernel_fits.json").read_text())
    out = {"source": {**doc["source"], "from": "benchmarks/kernel_fits.json", "by": "benchmarks/ship_fits.py"},
           "gpus": {}}
    for f in doc["fits"]:
        spec = doc["specs"][f["gpu"]]  # the datasheet roofs the fits are fractions of
        roofs = {"bf16": spec["bf16"], "fp8": spec["fp8"], **({"fp4": spec["fp4"]} if spec.get("fp4") else {}),
                 "bandwidth": spec["bw"]}
        gpu = out["gpus"].setdefault(f["gpu"], {"roofs": roofs, "fixed_s": {},
                                                          **{op: {} for op in NCCL_OPS.values()}})
        if f["cls"] in NCCL_OPS:
            op = NCCL_OPS[f["cls"]]
            gpu[op] = link_form(f)
            gpu[f"{op}_source"] = f["source"]
            continue
        # the vLLM tables' forms at the top; SGLang's and TensorRT-LLM's (the --engine presets') under "engines"
        where = gpu if f["engine"] == "vllm" else gpu.setdefault("engines", {}).setdefault(f["engine"], {})
        if f["cls"] == "custom_allreduce":
            where["custom_all_reduce"] = link_form(f)
            where["custom_all_reduce_source"] = f["source"]
        elif f["cls"].startswith("gemm_"):
            where.setdefault("gemm", {})[f["cls"][5:]] = gemm_form(f)
        elif f["cls"].startswith("moe_"):
            where.setdefault("moe", {})[f["cls"][4:]] = moe_form(f, doc["specs"][f["gpu"]]["bf16"])
        elif f["cls"] in F.GDN_CLASSES:
            where.setdefault("gdn", {})[f["cls"]] = {**F.gdn_doc(f["params"]), "source": f["source"],
                                                     "cv_dram": f["cv"]["dram"]}
        elif f["cls"].startswith(("decode", "prefill")):
            where.setdefault("attention", {})[f["cls"]] = attention_form(f, doc["specs"][f["gpu"]]["bf16"],
                                                                                doc["specs"][f["gpu"]]["l2"])
        if f["engine"] != "vllm":
            continue
        name = {"gemm_bf16": "gemm", "decode_bf16kv": "attention", "prefill_bf16kv": "attention_compute"}.get(f["cls"])
        if name is None:
            continue
        seconds = f["params"]["fixed_s"] - (0.0 if name == "gemm" else STREAM_FIXED_US * 1e-6)
        gpu["fixed_s"][name] = round(seconds, 12)
        gpu["fixed_s"]["gemv"] = gpu["fixed_s"].get("gemm", gpu["fixed_s"].get("gemv"))
        gpu.setdefault("fixed_source", {})[name] = f["source"]
    # a GPU whose vLLM MoE table holds no balanced-routing rows (the A100's: power-law only) takes SGLang's fused MoE
    # forms for vLLM's preset: SGLang's Triton MoE kernel is vLLM's, adapted (its fused_moe_triton/fused_moe.py)
    for name, gpu in out["gpus"].items():
        sglang = gpu.get("engines", {}).get("sglang", {}).get("moe") or {}
        triton = {k: v for k, v in sglang.items() if k != "int4"}
        if triton and not gpu.get("moe"):
            # without SGLang's factor for shapes it has no tuned tiles for: vLLM's default tiles grow with the
            # tokens (vllm/model_executor/layers/fused_moe/fused_moe.py, get_default_config), SGLang's do not
            gpu["moe"] = {k: {**{n: x for n, x in v.items() if n not in UNTUNED}, "tables": "sglang",
                              "why": BORROWED_MOE} for k, v in triton.items()}
        # int4 experts: Marlin's MoE kernel under both engines; vLLM's tables hold one shape of it (no fit)
        if "int4" in sglang and "int4" not in gpu.get("moe", {}):
            gpu.setdefault("moe", {})["int4"] = {**sglang["int4"], "tables": "sglang", "why": BORROWED_INT4}
    # a gated-delta-net class an engine's tables lack (vLLM's A100 has no gdn table, its L40S and RTX PRO 6000 no
    # prefill rows; TensorRT-LLM's A100 none): the first of SGLang's, vLLM's and TensorRT-LLM's that has it, named
    for name, gpu in out["gpus"].items():
        forms = {"vllm": gpu.get("gdn", {}), **{e: v.get("gdn", {}) for e, v in gpu.get("engines", {}).items()}}
        for engine in ("vllm", "sglang", "trtllm"):
            own = gpu if engine == "vllm" else gpu.setdefault("engines", {}).setdefault(engine, {})
            for cls in F.GDN_CLASSES:
                lender = next((e for e in ("sglang", "vllm", "trtllm") if e != engine and cls in forms.get(e, {})
                               and "tables" not in forms[e][cls]), None)
                if cls not in own.get("gdn", {}) and lender:
                    own.setdefault("gdn", {})[cls] = {**forms[lender][cls], "tables": lender,
                                                      "why": BORROWED_GDN.format(engine=TABLE_NAMES[engine],
                                                                                 lender=TABLE_NAMES[lender])}
    for (name, engine, cls), why in NOT_SHIPPED.items():
        gpu = out["gpus"].get(name, {})
        own = gpu.get("engines", {}).get(engine, {}).get("attention", {})
        assert cls in own and cls in gpu.get("attention", {}), f"{name} {engine} {cls}: not in the fit any more"
        own[cls] = {**gpu["attention"][cls], "tables": "vllm", "why": why}
    # the other engines' forms in a file of their own, read only for their presets (the main job reads less)
    engines = {"source": out["source"], "gpus": {g: v.pop("engines") for g, v in out["gpus"].items() if "engines" in v}}
    for doc_out, name in ((out, "kernel_fits.json"), (engines, "kernel_fits_engines.json")):
        path = ROOT / "src" / "roofcalc" / "data" / name
        text = json.dumps(doc_out, indent=1)
        # a knot, [x, value], on one line
        text = re.sub(r"\[\s+(-?[0-9.e+-]+),\s+(-?[0-9.e+-]+)\s+\]", r"[\1, \2]", text)
        path.write_text(text + "\n")
        print(f"wrote {path.relative_to(ROOT)}: {', '.join(doc_out['gpus'])}")


if __name__ == "__main__":
    main()
