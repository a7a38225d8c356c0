"""Turning an :class:`Analysis` into records, JSON, CSV and text tables.

The JSON record (``to_record``) is the stable API; README.md documents its schema. The text
formats show the same numbers, rounded with SI prefixes by ``roofcalc.units``, the one number formatter.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from typing import TYPE_CHECKING, Any, Iterable

from .errors import RoofcalcError
from .calculator import Analysis, Cost, Kernel
from .predict import MOE_BASE, MOE_FUSED, TABLE_ENGINES, range_band, range_name
from .roofline import FASTER_THAN_FLOOR, FLAG_MULTIPLE, Roof, Roofline, gpus_of
from .shapes import PER_CHANNEL
from .units import capacity, ms, pct, ratio, ridge, share, si, sig

if TYPE_CHECKING:
    from .sweep import BatchVerdicts, Sweep


def instance_of(obj: object, module: str, name: str) -> bool:
    """isinstance against a class of roofcalc.sweep or roofcalc.parallel, which the main job does not import
    (startup): where the module is not imported, nothing can be an instance of its classes."""
    cls = getattr(sys.modules.get(f"{__package__}.{module}"), name, None)  # None too while it is being imported
    return cls is not None and isinstance(obj, cls)

SCHEMA_VERSION = 5  # 2: predicted_s and the efficiency model; predicted_lower_s / predicted_upper_s are the floors and the
# pessimistic end. 3: one overhead model: the launch model's fields (launch_overhead_s, t_launch_s, sum_launch_s, dominant,
# launch_share_of_gap) are gone; a kernel's bound is memory, compute, link or fixed, with t_fixed_s beside it. 4: on a GPU
# with fitted kernels the range is calibrated (predicted_s x e^+-range_band, the step's range_band); 0: as in 2. 5: the
# calibrated range is asymmetric: predicted_s x e^-range_band_below to x e^range_band_above (range_band is gone)
FORMATS = ("table", "markdown", "csv", "json")


# the MLA modes (Workload.mla) in the header's words
MLA_WORDS = {"naive": "naive: the latent expanded every step, as transformers computes it",
             "absorbed": "absorbed: attention over the latent", "serving": "serving: absorbed for a decode step, "
             "expanded for a prefill, as vLLM, SGLang and TensorRT-LLM run it"}


def _finite(x: float) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else x


# --------------------------------------------------------------------------- records


def cost_record(c: Cost) -> dict[str, Any]:
    return {
        "flops": c.flops,
        "matmul_flops": c.matmul_flops,
        "bytes": c.bytes,
        "weight_bytes": c.weight_bytes,
        "activation_bytes": c.activation_bytes,
        "kv_bytes": c.kv_bytes,
        "read_bytes": c.read_bytes,
        "write_bytes": c.write_bytes,
        "intensity": _finite(c.intensity),
    }


def kernel_record(k: Kernel) -> dict[str, Any]:
    rec = {"name": k.name, "kind": k.kind, "scope": k.scope, "count": k.count, "shape": k.dims,
           **cost_record(k.cost), "params": k.params}
    if k.kind == "collective":
        rec.update(collective=k.role, message_bytes=k.message_bytes, link_bytes=k.link_bytes, group=k.group)
    return rec


def model_record(a: Analysis) -> dict[str, Any]:
    s = a.shape
    return {
        "name": s.name,
        "model_type": s.model_type,
        "family": s.family,
        "source": a.source,
        **({"bytes_view": a.view, "traced": a.note, "config_ignored": list(a.check.ignored),
            "config_defaulted": dict(a.check.defaulted)} if a.source == "traced" else {}),
        **({"family_defaults": dict(s.borrowed_defaults)} if s.borrowed else {}),
        **({"family_why": s.borrowed_why} if getattr(s, "borrowed_why", "") else {}),  # (read so without --family)
        **({"config_class_defaults": dict(s.class_defaults)} if s.class_defaults else {}),
        "n_layers": s.n_layers,
        "d_model": s.d_model,
        "n_heads": s.n_heads,
        "n_kv_heads": s.n_kv_heads,
        "head_dim": s.head_dim,
        "d_ff": s.d_ff,
        "vocab_size": s.vocab_size,
        "tie_word_embeddings": s.tie_word_embeddings,
        "sliding_window": s.sliding_window,
        "params": a.params,
        "language_model_params": a.language_params,
        "weight_bytes": a.weight_storage_bytes,
        "kv_bytes_per_token": a.kv_bytes_per_token,
    }


def workload_record(a: Analysis) -> dict[str, Any]:
    w = a.workload
    rec: dict[str, Any] = {"phase": w.phase, "batch": w.batch}
    if w.phase == "decode":
        rec["context"] = w.kv_len
    else:
        rec["prompt"] = w.query_tokens
        rec["causal"] = w.causal
        rec["logits"] = "all" if w.logits_all else "last"
    if w.ubatch and w.phase == "prefill":
        rec["ubatch"] = w.ubatch
    rec.update(query_tokens=w.query_tokens, kv_len=w.kv_len, cache_update=w.cache_update, attention=w.attention,
               eager_ops=w.eager_ops, tp_layout=w.tp_layout,
               weight_dtype=w.weight_dtype.name, act_dtype=w.act_dtype.name, kv_dtype=w.kv_dtype.name, compute_dtype=w.compute_dtype.name)
    if w.weight_dtype.quantized:
        rec["group_size"] = w.weight_group
    rec.update(gguf_record(a.shape, w))
    if getattr(a.shape, "mla", None) is not None:  # DeepSeek's latent attention as this step counts it (--mla, or the engine's)
        rec["mla"] = w.mla
    return rec


def gguf_record(shape, w) -> dict[str, str]:
    """A GGUF file's type, and the formats it stores the embedding and output tables in (calculator.gguf_table);
    nothing for any other checkpoint."""
    if not getattr(w, "gguf", ""):
        return {}
    from .calculator import gguf_table

    return {"gguf": w.gguf, "gguf_embedding": gguf_table(shape, w, False), "gguf_output": gguf_table(shape, w, True)}


def roof_record(roof: Roof | None) -> dict[str, Any] | None:
    if roof is None:
        return None
    return {"bandwidth_bytes_per_s": roof.bandwidth_bytes_per_s, "peak_flop_per_s": roof.peak_flop_per_s,
            "ridge_flop_per_byte": roof.ridge}


def _bytes(n):
    """A count of bytes as JSON writes every other (an int; None kept): a memory given as 80GiB is read as a float."""
    return None if n is None else int(round(n))


def hardware_record(r: Roofline | Sweep) -> dict[str, Any]:
    hw = r.hardware
    measured = roof_record(r.measured)
    if measured is not None:
        measured["bandwidth_ratio"] = r.measured.bandwidth_bytes_per_s / r.nominal.bandwidth_bytes_per_s
        measured["peak_ratio"] = r.measured.peak_flop_per_s / r.nominal.peak_flop_per_s
    if instance_of(r, "sweep", "Sweep"):
        compute, impl = r.dtypes.compute_dtype.name, r.impl
    else:
        compute, impl = r.compute_dtype, r.step.impl
    from .predict import efficiency_record

    return {"name": hw.name, "source": hw.source, "compute_dtype": compute, "memory_bytes": _bytes(hw.memory_bytes),
            "nominal": roof_record(r.nominal), "measured": measured,
            "verdict_roof": "measured" if r.measured else "nominal",
            "impl": impl,
            "efficiency": None if r.model is None else efficiency_record(r.model),
            "efficiency_of": None if r.model is None else r.model.relative_to,
            # the measured kernel tables the GEMM and attention fixed costs come from (data/kernel_fits.json):
            # "measured" the device's own, "nearest" its generation's measured GPU; null: the medians
            "kernel_fits": None if r.model is None or not r.model.fitted else
            {"gpu": r.model.fitted, "how": r.model.fitted_how, "tables": r.model.fitted_tables,
             "gemm": bool(r.model.gemm_fits), "attention": attention_fitted(r),
             # a GeForce card's GEMM forms give their memory side only: "default" compute side (gemm_memory_only)
             "gemm_compute": None if not r.model.gemm_fits else "default" if r.model.gemm_memory_only else "fitted",
             "kernel_db": r.model.db is not None},
            # the measured GPU (or PCIe box) whose fitted collectives the step takes, and whose all-reduce: the
            # engine's own as measured in its CUDA graph ("engine"), or NCCL's; null: the default link model
            "collectives": None if r.model is None or not r.model.links else
            {"gpu": r.model.links, "all_reduce": "engine" if "all_reduce.nccl" in r.model.collectives else "nccl"}}


def placement_record(r: Roofline) -> list[dict[str, Any]]:
    out = []
    for p in r.step.placements:
        out.append({"t_compute_s": p.t_compute_s, "t_memory_s": p.t_memory_s, "t_floor_s": p.t_floor_s,
                    "t_expected_s": p.t_expected_s, "efficiency": p.efficiency,
                    "efficiency_class": p.efficiency_class, "efficiency_source": p.efficiency_source,
                    "t_fixed_s": p.t_fixed_s, "launches": p.launches, "bound": p.bound, "error": p.error,
                    "measured_s": p.measured_s, "achieved_flop_per_s": p.achieved_flop_per_s,
                    "roof_fraction": p.roof_fraction, "floor_multiple": p.floor_multiple, "flagged": p.flagged,
                    "faster_than_floor": p.faster_than_floor,
                    **({"hop": p.hop} if p.kernel.kind == "collective" else {})})
    return out


def band_record(band: tuple) -> dict[str, float]:
    """A calibrated range's widths in log (StepTimes.band): below and above predicted_s; 0 and 0 where the range
    is the floors to the pessimistic ends."""
    below, above = band or (0.0, 0.0)
    return {"range_band_below": below, "range_band_above": above}


def step_record(r: Roofline) -> dict[str, Any]:
    st = r.step
    t = st.times
    return {
        "flops": st.flops, "bytes": st.bytes, "intensity": st.intensity,
        "sum_floor_s": st.sum_floor_s, "step_floor_s": st.step_floor_s,
        "launches_per_layer": st.launches_per_layer, "launches_per_step": st.launches_per_step,
        "graph_replayed": st.graphed, "memory_bytes": r.memory_bytes, "capacity_bytes": _bytes(r.capacity_bytes), "fits": r.fits,
        "recurrent_state_bytes": recurrent_state_bytes(r.analysis),
        "predicted_s": st.predicted_s, "predicted_lower_s": st.predicted_lower_s,
        "predicted_upper_s": st.predicted_upper_s, **band_record(t.band), "device_s": t.device_s, "device_upper_s": t.device_upper_s,
        "host_s": t.host_s, "host_upper_s": t.host_upper_s, "overlap": t.overlap, "step_bound": st.bound,
        "serial_host_s": t.serial_s, "serial_host_upper_s": t.serial_upper_s,
        "engine": engine_record(r.model, st.impl, r.analysis.workload, r.analysis.shape, r.hardware.compute_capability),
        "device_parts_s": {"memory": t.memory_s, "compute": t.compute_s, "communication": t.comm_s,
                           "fixed": t.fixed_s},
        "tpot_s": st.tpot_s, "achieved_flop_per_s": st.achieved_flop_per_s,
        # the measured step under 0.9x its floors on the roof in use (faster_lines' rule); None without --tpot
        "faster_than_floor": None if st.tpot_s is None else bool(st.tpot_s < FASTER_THAN_FLOOR * st.sum_floor_s),
        "roof_fraction": st.roof_fraction, "floor_multiple": st.floor_multiple, "gap_s": st.gap_s,
        "batching_headroom": st.batching_headroom, "batching_reach": batching_reach(r),
    }


def batching_reach(r) -> float | None:
    """How far batching can raise a decode step's attainable FLOP/s at its context, as slope_words says it: to the
    ridge (batching_headroom) where the AI reaches it, else to the AI's limit as the batch grows (the KV cache grows
    with it); 1 under the flat roof; None for a prefill or a traced model (a traced decode: its sweep says)."""
    st = r.step
    if r.analysis.workload.phase != "decode" or r.analysis.source == "traced":
        return None
    if st.intensity >= r.roof.ridge:
        return 1.0
    from .sweep import step_batch_verdicts

    v = step_batch_verdicts(r)
    if v is None:
        return None
    return (v.ridge if v.ridge_batch is not None else v.intensity_limit) / st.intensity


def attention_kernel(engine, w=None, shape=None, compute_capability: float | None = None) -> str:
    """The attention kernel a step runs under an engine preset: the unfused one where the workload ``w`` runs it
    (--attention unfused), else the one the engine picks on a GPU of ``compute_capability``, its latent-attention
    kernel for a ``shape`` with DeepSeek's attention (Engine.attention_on)."""
    if getattr(w, "attention", "fused") == "unfused":
        return "unfused, by --attention"
    return engine.attention_on(compute_capability, getattr(shape, "mla", None) is not None,
                               getattr(shape, "family", "") or "")


def engine_record(m, impl: str, w=None, shape=None, compute_capability: float | None = None) -> dict[str, Any] | None:
    """The engine preset's fields (engines.py), with the launch model the step used and the attention kernel it
    runs (attention_kernel; its general wording in attention_general)."""
    name = m.engine_host.engine if m is not None else ""
    if not name:
        return None
    from .engines import ENGINES

    e = ENGINES[name]
    rec = {**e.record(), "impl_used": impl, "impl_by_hand": impl != e.impl,
           "int4_kernel": (m.engine_host.int4_kernel or "marlin") if _int4(w) else None,
           "attention": attention_kernel(e, w, shape, compute_capability), "attention_general": e.attention}
    if getattr(w, "attention", "fused") == "unfused":
        rec.update(attention_source="roofcalc --attention unfused")
    return rec


def point_records(r: Roofline) -> list[dict[str, Any]]:
    return [{"name": p.name, "flops": p.flops, "bytes": p.bytes, "seconds": p.seconds, "intensity": p.intensity,
             "achieved_flop_per_s": p.achieved_flop_per_s, "roof_fraction": p.roof_fraction(r.roof),
             "faster_than_floor": p.faster_than_floor(r.roof)}
            for p in r.points]


def to_record(a: Analysis | Roofline) -> dict[str, Any]:
    """The JSON document: model, workload, kernels (per instance, execution order), totals (per step);
    with a roofline also hardware, step and points, and the roofline fields in each kernel."""
    r = a if isinstance(a, Roofline) else None
    an = r.analysis if r else a
    if not isinstance(an, Analysis):
        raise RoofcalcError(f"to_record takes an Analysis (roofcalc.analyze) or a Roofline (roofcalc.roofline.roofline)"
                            f", got {type(a).__name__}" + ("; a sweep's is roofcalc.report.sweep_record" if
                                                           hasattr(a, "grid") else
                                                           "; a --tp/--pp/--ep comparison's is "
                                                           "roofcalc.report.tp_sweep_record" if
                                                           instance_of(a, "parallel", "TPSweep") else ""))
    doc = {
        "schema_version": SCHEMA_VERSION,
        "model": model_record(an),
        "workload": workload_record(an),
        "kernels": [kernel_record(k) for k in an.kernels],
        "totals": cost_record(an.totals),
    }
    if r is not None:
        for k, extra in zip(doc["kernels"], placement_record(r)):
            k.update(extra)
        doc["hardware"] = hardware_record(r)
        doc["step"] = step_record(r)
        doc["points"] = point_records(r)
        # what the table says may be wrong, in words, [] for nothing (the command line adds its own flags' to it)
        doc["warnings"] = [line.split(None, 1)[1] for line in warning_lines(r) if line.startswith(("warning ", "faster "))]
    par = an.parallel
    if par is not None and par.gpus > 1:
        doc["parallel"] = {"tp": par.tp, "pp": par.pp, "ep": par.ep, "ep_attention": par.ep_attention, "dense_experts": par.dense_experts, "masked_experts": par.masked_experts,
                           "gpus": par.gpus, "per": "rank", "model_params": an.full.params,
                           # the step's sequences over all ranks (the command line's --batch), where the workload's
                           # are a rank's B/ep (data-parallel attention), as a sweep's batch column counts them
                           "batch": an.workload.batch * (par.ep if par.ep > 1 and not par.tp_attention else 1)}
    if an.note_pipeline:
        pipe, memory = an.note_pipeline
        doc["parallel"].update(per="stage", stage=an.stage, layers=list(an.layers), micro_batches=pipe.micro_batches,
                               batch=an.batch, stage_s=list(pipe.stage_s), engine_host_s=pipe.host_s,
                               step_s=pipe.step_s, bubble=pipe.bubble,
                               tokens_per_s=an.batch / pipe.step_s, largest_stage_memory_bytes=memory)
    return doc


def _counts_on(fmt: str, w, hardware) -> bool:
    """Whether a run on ``hardware`` (None: any) would count weights of the format ``fmt`` in it, not dequantized at
    load (roofline.weights_on_device: an FP8 checkpoint on a GPU without FP8 Marlin is 16-bit in memory)."""
    if hardware is None:
        return True
    from .calculator import dtype
    from .errors import RoofcalcError
    from .roofline import weights_on_device

    try:
        return weights_on_device(dtype(fmt), w.act_dtype, hardware, None)[0].name == fmt
    except RoofcalcError:
        return False


def to_json(a: Analysis | Roofline) -> str:
    return json.dumps(to_record(a), indent=2)


# --------------------------------------------------------------------------- text


def header_lines(a: Analysis, defaults: Iterable[str] = (), *, swept_batch: bool = False, hardware=None) -> list[str]:
    """The lines above a table; ``swept_batch``: the batch is a sweep's column, not the header's."""
    s, w = a.shape, a.workload
    defaulted = set(defaults)
    if a.parallel is not None and a.parallel.gpus > 1:
        from .parallel import ep_plan_words, tp_plan_words

    def d(key: str) -> str:
        return " (default)" if key in defaulted else ""

    kv_note = f", sliding window {s.sliding_window}" if s.sliding_window else ""
    if s.mla:
        m = s.mla
        heads = (f"N={s.n_heads} heads, MLA: q {'LoRA ' + str(m.q_lora_rank) if m.q_lora_rank else 'plain'}, "
                 f"KV latent {m.kv_lora_rank} + rope {m.qk_rope_head_dim} cached, qk {m.qk_head_dim} / v {m.v_head_dim} "
                 f"per head ({MLA_WORDS.get(w.mla, w.mla)})")
    else:  # a traced model whose layers differ in heads or head size prints each kind of layer's
        heads = getattr(a, "heads_text", "") or f"N={s.n_heads} heads / K={s.n_kv_heads} KV heads x H={s.head_dim}"
    if _states_only(a):  # Mamba, xLSTM, RWKV-style: no attention layer, a recurrent state per sequence
        heads = "no attention (a recurrent state per sequence instead of a KV cache)"
    lines = [
        f"model     {s.name}  [{s.model_type}]",
        *([f"source    {a.note}; bytes: {a.view} view ("
           + ("every op reads its inputs and writes its outputs, as --impl hf-eager runs it" if a.view == "eager" else
              "each kernel reads and writes its tensors once, as a fused kernel would") + ")"
           + (f"; the config class ignored {', '.join(a.check.ignored)}" if a.check.ignored else "")
           + (f"; defaults taken: {', '.join(f'{k}={v}' for k, v in a.check.defaulted)}" if a.check.defaulted else "")]
          if a.source == "traced" else []),
        *([f"parallel  --tp {a.parallel.tp}: every number below is one rank's, of {a.parallel.gpus} GPUs "
           f"({getattr(a, 'plan_words', '') or tp_plan_words(s, w, a.parallel)}); "
           f"the model holds {a.full.params:,} parameters "
           f"in all"]
          if a.parallel is not None and a.parallel.tp > 1 else []),
        *([f"parallel  --ep {a.parallel.ep}: every number below is one rank's, of {a.parallel.gpus} GPUs: "
           + (getattr(a, "ep_words", "") or ep_plan_words(s, a.parallel, w.batch, swept_batch))
           + f"; the model holds {a.full.params:,} parameters in all"]
          if a.parallel is not None and a.parallel.ep > 1 else []),
        *([pipeline_line(a)] if a.note_pipeline else []),
        *([f"config    the text_config leaves {', '.join(k for k, _ in s.class_defaults)} to its config class, as "
           f"transformers does: {', '.join(f'{k}={v}' for k, v in s.class_defaults)}"] if s.class_defaults else []),
        *([f"family    read as {s.family} ({s.borrowed_why or '--family'}); absent keys took {s.family}'s defaults: "
           + (", ".join(f"{k}={v}" for k, v in s.borrowed_defaults) or "none")] if s.borrowed else []),
        f"shape     {shape_scope(a)}L={s.n_layers} layers{layer_scope(a)}, D={s.d_model}, {heads}, "
        f"F={s.d_ff}, V={s.vocab_size}{', tied embeddings' if s.tie_word_embeddings else ''}{kv_note}",
    ]
    if s.moe:
        e = s.moe
        n_moe = s.layer_mlp_types.count("moe")
        shared = f" + a shared MLP of {e.d_shared}" if e.d_shared else ""
        whole = getattr(a, "full", None) if a.parallel is not None and a.parallel.gpus > 1 else None
        counts = whole or a  # one rank's kernels hold a share of the experts: the model's own counts
        ep = getattr(a.parallel, "ep", 1) if a.parallel is not None else 1
        held = f", {e.n_experts // ep} a rank," if ep > 1 and e.n_experts % ep == 0 else ""  # --ep: E/N on each
        read = "all of a rank's (each runs every token: --engine vllm-v0)" if \
            getattr(a.parallel, "dense_experts", False) else w.experts
        lines.append(f"experts   {n_moe} of {s.n_layers} layers: {e.n_experts} experts{held} of width {e.d_expert}, "
                     f"top-{e.top_k}"
                     f"{shared}; weights read per step: {read} ({'the model: ' if whole else ''}"
                     f"{counts.params - counts.active_params:,} parameters idle per token, {counts.active_params:,} "
                     f"active)")
    declared = f" (the checkpoint's quantization_config{f', in {s.weight_format_where}' if s.weight_format_where else ''}{', the routed experts alone' if s.weight_scope == 'experts' else ''})" if s.weight_format == w.weight_dtype.name else ""
    device_why = any(k.startswith("weights-why:") for k in defaulted)  # the device's own format (weights_on_device)
    if s.weight_format and s.weight_format != w.weight_dtype.name and not getattr(w, "gguf", "") and not device_why \
            and _counts_on(s.weight_format, w, hardware):
        # the checkpoint's own format, which this workload does not count (a library Workload's default dtype, or a
        # --weight-dtype given over it): said, so that a report of 16-bit weights is not taken for the checkpoint's
        declared = (f"; the checkpoint's quantization_config declares {s.weight_format}"
                    f"{' (the routed experts alone)' if s.weight_scope == 'experts' else ''}, which this workload "
                    f"does not count: Workload(weight_dtype={s.weight_format!r}) or --weight-dtype "
                    f"{s.weight_format} does")
    group = "" if not w.weight_dtype.quantized else \
        ", one scale a row" if w.weight_group >= PER_CHANNEL else f", group {w.weight_group}"
    if group and w.group_size is None and not w.weight_dtype.group and isinstance(s.d_model, int) and \
            w.weight_group < PER_CHANNEL and s.d_model % w.weight_group:  # the default, as a what-if
        group += (f" by default; the hidden size {s.d_model} is no multiple of it, so each row's last group holds "
                  f"{s.d_model % w.weight_group}")
    if getattr(w, "gguf", ""):  # a GGUF file's tables as llama.cpp's quantizer stores them (calculator.gguf_table)
        from .calculator import gguf_table

        from .calculator import gguf_tied

        tied = gguf_tied(s, w)
        head = "" if tied else f", output.weight {gguf_table(s, w, True).upper()}" + (
            " (a copy of the tied table, as its converter writes it)" if s.tie_word_embeddings else "")
        embed = f"token_embd.weight {gguf_table(s, w, False).upper()}" + (" (tied: lm_head's)" if tied else "")
        group += f", as a {w.gguf.upper()} GGUF file stores it: {embed}{head}"
    language = a.language_params
    share = f" ({language:,} of them the language model{f'; {s.encoders_note}' if s.encoders_note else ''})" \
        if language is not None and language < a.params else f" ({s.encoders_note})" if s.encoders_note else ""
    lines.append(f"size      {a.params:,} parameters{share}, {a.weight_storage_bytes:,} bytes of weights ({w.weight_dtype.name}"
                 f"{group}{declared}), "
                 f"KV cache {a.kv_bytes_per_token:,} bytes per token ({w.kv_dtype.name})")
    if w.phase == "decode":
        what = f"decode one token, batch B={w.batch}{d('batch')}, context S={w.kv_len}{d('context')} (the new token included)" + \
            ("; the cache appended by concatenation (transformers' DynamicCache)"
             if w.cache_update == "concat" and not _states_only(a) else "")
    else:
        traced = a.source == "traced"
        chunked = w.attention == "unfused" and w.ubatch and w.ubatch < w.query_tokens
        mask = "the model's own mask" if traced else (
            f"every pair of each micro-batch's score matrix (up to {w.ubatch:,} queries each, by every position up "
            f"to its end)" if chunked else "every pair of its score matrix") if w.attention == "unfused" \
            else "causal" if w.causal else "full rectangle (no causal discount)"
        logits = "every position" if w.logits_all or a.logits == "all" else "last token only"
        what = f"prefill, batch B={w.batch}{d('batch')}, prompt T={w.query_tokens}, {mask}, logits for {logits}" + \
            next((f" ({k.split(':', 1)[1]})" for k in defaulted if k.startswith("forward-why:")), "")
    what += attention_words(w)
    lines.append(f"workload  {what}")
    why = d('dtype') + next((f" ({k.split(':', 1)[1]})" for k in defaulted if k.startswith("dtype-why:")), "")
    act = " (--act-dtype)" if "act-given" in defaulted else why  # why the activations' dtype is what it is
    act_why, compute_why = "", act
    if w.compute_dtype.name != w.act_dtype.name:  # the GEMMs compute in the weights' dtype or format: the
        # reason given is the activations'
        act_why, compute_why = act, f" (the weights' {'format' if w.weight_dtype.computes else 'dtype'})"
    weights_why = next((f" ({k.split(':', 1)[1]})" for k in defaulted if k.startswith("weights-why:")), "")
    kv = a.shape.kv_format_declared
    kv_why = f" (the checkpoint declares an {kv} KV cache, which engines may or may not take: --kv-dtype {kv} " \
        f"counts it)" if kv and kv != w.kv_dtype.name else \
        next((f" ({k.split(':', 1)[1]})" for k in defaulted if k.startswith("kv-why:")), "")
    lines.append(f"dtypes    weights {w.weight_dtype.name}{weights_why}, activations {w.act_dtype.name}{act_why}, "
                 f"KV cache {w.kv_dtype.name}{kv_why}, compute {w.compute_dtype.name}{compute_why}")
    return lines


def shape_scope(a) -> str:
    """'per rank: ' where the shape line gives one rank's shard (--tp splits heads, widths and the vocabulary;
    a pipeline stage holds some of the layers), '' where it is the whole model's."""
    full = a.full
    if full is None:
        return ""
    s, f = a.shape, full.shape
    sharded = (s.n_heads, s.n_kv_heads, s.d_ff, s.vocab_size, s.moe) != (f.n_heads, f.n_kv_heads, f.d_ff, f.vocab_size,
                                                                         f.moe)
    if s.n_layers != f.n_layers:  # a pipeline stage's rank
        return "per rank: "
    if sharded:  # with --pp, a sweep's header counts one --tp rank's share of every stage
        return "per --tp rank: " if a.parallel.pp > 1 else "per rank: "
    return ""


def layer_scope(a) -> str:
    """Whose layers L counts where a pipeline cuts them: one stage's, or every stage's together."""
    if a.parallel is None or a.parallel.pp == 1:
        return ""
    if a.note_pipeline:
        return f" (stage {a.stage}'s, of {a.full.shape.n_layers})"
    return f" (all {a.parallel.pp} stages')"


def predicted_words(st, a) -> str:
    """"predicted 17.8 ms (80% range 14.6 to 33.3 ms)", and for a pipeline stage's step the whole pipeline's: the
    time line's words (and a notebook's, frames.repr_html)."""
    return (f"predicted {ms(st.predicted_s)} ms ({range_name(st.times.band)} {ms(st.predicted_lower_s)} to "
            f"{ms(st.predicted_upper_s)} ms)" + (
                f" for stage {a.stage} on one micro-batch (the pipeline's whole step: {ms(a.note_pipeline[0].step_s)} "
                f"ms)" if getattr(a, "note_pipeline", None) else ""))


def bound_words(st) -> str:
    """The step's bound (one of STEP_BOUNDS) in words."""
    host = {"hf-eager": "Python and dispatch of every eager op", "fused": "one launch call per kernel",
            "cuda-graph": "a graph replay per step"}[st.impl]
    if st.impl == "cuda-graph" and not getattr(st, "graphed", True):  # more tokens than its engine replays a graph for
        host = "one launch call per kernel, no graph replayed"
    eh = st.model.engine_host if st.model is not None else None
    if st.bound == "host" and st.times.serial_s and eh is not None:  # an engine's own time, waited for
        host += f", then {eh.engine}'s host time outside the kernels, which the device waits for"
    elif st.bound == "host" and eh is not None and eh.engine and (eh.fixed_s.expected or eh.per_sequence_s.expected):
        host += f", and {eh.engine}'s host time outside the kernels, per step and per sequence"
    return {"host": f"bound by the host ({host})", "memory": "bound by memory traffic",
            "communication": "bound by communication (the collectives between GPUs)",
            "compute": "bound by compute",
            "fixed": "bound by the kernels' fixed costs (many kernels too small for their work to count)"}[st.bound]


def efficiency_words(r) -> str:
    m = r.model
    if m is None:
        return "roof"
    return {"measured": "measured efficiencies of the profile",
            "measured roof": "default efficiencies moved onto the measured roof (docs/conventions.md)",
            "ideal": "ideal efficiencies (1)"}.get(m.relative_to, "default efficiencies (docs/conventions.md)") \
        + fixed_cost_words(r) + link_words(r) + \
        (f"; {m.db.words} (--kernel-db)" if getattr(m, "db", None) is not None else "")


TABLE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}  # the engines whose tables were measured


def link_words(r) -> str:
    """Where a step with collectives on the link takes their fitted costs from, where that is not said already:
    a PCIe box measured in place of this GPU's own, and an engine's own all-reduce."""
    m = r.model
    if m is None or not m.links or not any(p.kernel.kind == "collective" and p.hop == "link"
                                          for p in r.step.placements):
        return ""
    from .hardware import PCIE_BOXES

    out = ""
    if m.links != m.fitted or m.fitted_how != "measured":
        out += f"; collectives as measured over PCIe on {PCIE_BOXES[m.links]}, on this device's link"
    if "all_reduce.nccl" in m.collectives and any(p.kernel.role == "all_reduce" and p.hop == "link"
                                                  for p in r.step.placements):  # (--ep's all-to-alls: none)
        name = TABLE_NAMES[m.fitted_tables]
        out += (f"; all-reduce: {name}'s as measured inside its CUDA graph (its own where the GPUs allow it, "
                f"NCCL's at the slow end)")
    return out


def attention_fitted(r) -> bool:
    """Whether the step's attention calls take a fitted form (predict.KernelModel.attention_fit): a GPU with fitted
    attention tables may still have none for a call (DeepSeek's latent attention: head dim 576 against the tables'
    256 at most)."""
    m = r.model
    if m is None or not m.attention_fits:
        return False
    step = getattr(r, "step", None)
    if step is not None:
        return any(m.attention_fit(p.term.attn) is not None for p in step.placements if p.kernel.kind == "attention")
    from .roofline import attention_sizes  # a sweep: its calls' head dims and KV dtype are its one step's

    return any(m.attention_fit(attention_sizes(k)) is not None for k in r.header_analysis().kernels
               if k.kind == "attention")


def _every_pair_unforms(r, m, key: str, tables: str) -> str:
    """"; under --ep 2 TensorRT-LLM's kernel for these experts runs every routed pair on each rank ..." where the
    measured GPU's own fused form for the experts' format runs every pair (predict.MoEFit.every_pair: TensorRT-LLM's
    fp8 block-scale MoE on SM120) but this step does not take the form (a GeForce card takes none): its experts
    kernels' GEMM forms count every pair (KernelModel.every_pair_unfused), said so; "" otherwise."""
    lead = next((p for p in r.step.placements if p.moe and p.moe[0] == key), None)
    if lead is None or lead.moe[3] <= lead.moe[1] or key not in m.every_pair_unfused:
        return ""
    ep = lead.moe[3] / lead.moe[1]
    words = (f"; under --ep {ep:g} {tables}'s kernel for these experts runs every routed pair on each rank (another "
             f"rank's at a zero weight), and the GEMM forms here count them: ×{ep:g} the rank's GEMM work")
    if getattr(getattr(r.analysis, "parallel", None), "ep_attention", "") == "dp":
        words += (" (the upper count: under data-parallel attention with an all-to-all a rank runs only the pairs of "
                  "the tokens it receives)")
    return words


def fixed_cost_words(r) -> str:
    """Where the kernels' fitted costs come from: the device's own measured kernels, the nearest measured GPU's,
    or (fixed costs only) the five measured GPUs' medians."""
    m = r.model
    if m is not None and m.fitted_how == "profile":
        what = " and ".join(x for x, fits in (("GEMM", m.gemm_fits), ("attention", attention_fitted(r))) if fits)
        return (f"; {what} kernels fitted on this GPU's own ({m.fitted}; elementwise: the medians)" if what else
                f"; no form fitted on this GPU's own ({m.fitted}) holds this step's attention calls" if
                m.attention_fits else
                f"; no kernel form fitted on this GPU's own ({m.fitted}: its curves held too few points); fixed "
                f"costs: the defaults")
    if m is None or not m.fixed_s or all(e.source == "measured" for e in m.fixed_s.values()):
        return ""
    from .hardware import measured_gpu_name

    gpu = measured_gpu_name(m.fitted)
    default = "the default efficiencies" + (f", as for any {r.compute_dtype} step: the forms were measured in 16 "
                                            f"and 8 bits" if r.compute_dtype not in ("bf16", "fp16", "fp8", "fp4")
                                            else ", a GeForce card's" if r.hardware.segment == "consumer" else "")
    attention = attention_fitted(r)
    if m.attention_fits and not attention and any(p.kernel.kind == "attention" for p in r.step.placements):
        default = f"{default}; no fitted table holds this step's attention calls"
    what = ("GEMM kernels' memory side and fixed cost (their compute side: the default efficiencies, a GeForce "
            "card's) and attention kernels" if m.gemm_memory_only and m.gemm_fits and attention else
            "GEMM and attention kernels" if m.gemm_fits and attention else
            f"attention kernels (GEMMs: {default})" if attention else
            f"GEMM kernels (attention: {default})" if m.gemm_fits else
            f"kernels' fixed costs (GEMM and attention: {default})")
    tables = TABLE_NAMES.get(m.fitted_tables, "vLLM")
    # a model's routed experts with no fused MoE form (an engine whose MoE tables are not fitted, a GPU without them,
    # or none for the experts' weight format): no fused MoE call (predict.fuse_moe) whose format has a form
    fused = [p.moe[0] for p in r.step.placements if p.moe and len(p.moe) == MOE_FUSED and p.moe[0] in m.moe_fits]
    other = m.moe_fits[fused[0]].tables if fused else ""
    if getattr(r.analysis.shape, "moe", None) is None and not any(
            getattr(p.kernel, "expert_weights", None) is not None for p in r.step.placements):  # a traced model's too
        moe = ""
    elif fused:
        lead = next(p for p in r.step.placements if p.moe and len(p.moe) == MOE_FUSED and p.moe[0] in m.moe_fits)
        experts, inter = lead.moe[1], lead.moe[MOE_BASE + 2]
        form = m.moe_fits[lead.moe[0]]
        words = "" if other else form.untuned_words(experts, inter)
        lent = (f"the same Marlin MoE kernel; {tables}'s tables here hold no int4 rows of two model shapes or more"
                if lead.moe[0] == "int4" else
                f"the same Triton kernel; {tables}'s table here holds no balanced-routing rows")
        from .fitting import moe_kernel_name, moe_kernel_scales
        from .predict import moe_kernel_source

        source = moe_kernel_source(r.hardware, m.fitted_tables or m.engine_host.engine, lead.moe[0])
        kernel = moe_kernel_name(source)
        scales = moe_kernel_scales(source, getattr(r.analysis.shape, "weight_act_scales", "") == "dynamic")
        moe = (f"; routed experts: {TABLE_NAMES[other]}'s fused MoE, fitted ({lent})" if other else
               f"; routed experts: {tables}'s fused MoE, fitted" + (f" ({kernel}, as its tables measured it"
                                                                   + (f": {scales}" if scales else "") + ")"
                                                                   if kernel else ""))
        if m.engine_host.engine in ("", "hf"):  # transformers' generate: no serving engine's fused MoE kernel
            moe += (", a stand-in: transformers runs the experts as its own grouped matmuls (its experts "
                    "implementation), which no table measured")
        elif m.engine_host.engine not in TABLE_ENGINES:  # gpt-fast, llama.cpp, the older presets: their own code
            moe += f", a stand-in: {m.engine_host.engine} runs the experts in its own code, which no table measured"
        if words:  # SGLang's default tiles (predict.MoEFit)
            from .predict import _geo

            x = float(lead.moe[MOE_BASE])
            moe += (f" at its default tiles (its package has {words} on {gpu}): ×{_geo(x, form.untuned):.2f} the "
                    f"tuned compute rate at {f'{x:,.0f}' if x >= 100 else f'{x:.3g}'} tokens an expert")
        par = getattr(r.analysis, "parallel", None)
        if lead.moe[0] == "int4" and getattr(par, "ep", 1) > 1 and not getattr(par, "masked_experts", False):
            # docs/kernel_fits.md, "int4 fused MoE": counted where each rank holds every token (masked_experts)
            moe += (f"; under --ep {par.ep} with data-parallel attention each rank's call is counted on its own "
                    f"routed rows (an all-to-all dispatch); where the engine gives each rank every token (vLLM's "
                    f"default all-gather dispatch) Marlin's MoE kernel also writes, activates and sums every routed "
                    f"pair, as --ep-attention tp counts")
        slow = form.misaligned_words(inter)
        if slow:  # a rank's width the tables ran slower (predict.MOE_ALIGN)
            moe += f"; {slow}"
        pad = form.padded_words(lead.moe[MOE_BASE + 1], inter)
        if pad:  # the sizes the engine's MXFP4 kernel stores the experts at (fitting.mxfp4_padding)
            moe += f"; {pad}"
        every = form.every_pair_words(experts, lead.moe[3])
        if every:  # a kernel that runs every routed pair on each EP rank (fitting.EVERY_PAIR)
            moe += f"; {every}"
            if getattr(getattr(r.analysis, "parallel", None), "ep_attention", "") == "dp":
                moe += (" (the upper count: under data-parallel attention with an all-to-all a rank runs only the "
                        "pairs of the tokens it receives)")
    else:
        from .calculator import fused_moe_class

        key = fused_moe_class(r.analysis.workload)
        why = (" for their weight format" if key not in m.moe_fits else
               ": their experts are not one gated-MLP call, the call the form describes")
        int4 = ""
        if key == "int4" and key not in m.moe_fits:  # Marlin's MoE kernel's form, where this step does not run it
            from .predict import marlin_moe_why

            why_not = marlin_moe_why(m.engine_host, r.hardware.compute_capability)
            int4 = f" ({why_not})" if why_not else ""
        # unfused experts kernels are timed as the GEMMs they are (predict.kernel_terms: the weight format's
        # GEMM form where one is fitted, else the defaults)
        how = "the GEMM forms, each kernel's rows as one GEMM" if m.matmul_fit() is not None else \
            "the default efficiencies"
        par = getattr(r.analysis, "parallel", None)
        if getattr(par, "dense_experts", False):  # vllm-v0's expert parallelism (engines.Engine.dense_experts)
            forms = "the GEMM forms' memory side, the default compute side (a GeForce card's)" if \
                m.gemm_memory_only else how.split(',')[0]
            moe = (f"; routed experts: plain GEMMs, each of a rank's {r.analysis.shape.moe.n_experts // par.ep} "
                   f"experts on every token (its output weighted by the routing, zero for tokens routed elsewhere: "
                   f"vLLM PR #2090), on {forms}")
        else:
            moe = ("; routed experts: the GEMM forms' memory side, the default compute side (a GeForce card takes no "
                   "fused-MoE form)" if m.gemm_memory_only else f"; routed experts: {how}{int4}" if int4 else
                   f"; routed experts: {how} (no fused-MoE form of {tables}'s fitted here"
                   + (why + ")" if m.moe_fits else ")"))
        moe += _every_pair_unforms(r, m, key, tables)
    # an attention form the preset takes from another engine's tables on this GPU (benchmarks/ship_fits.py)
    lent = {m.attention_fit(p.term.attn) for p in r.step.placements if p.kernel.kind == "attention"} - {None}
    moe += "".join(f"; {f.kind} attention: {TABLE_NAMES[f.tables]}'s form ({tables}'s {gpu} table is not used: "
                   f"docs/kernel_fits.md)" for f in sorted(lent, key=lambda f: f.kind) if f.tables)
    moe += gdn_words(r, m, tables)
    if m.fitted_how == "measured":
        return (f"; {what} and collectives fitted on {gpu}'s measured kernels, AIConfigurator 0.12 {tables} "
                f"(elementwise: the medians){moe}")
    if m.fitted_how == "nearest":
        from .hardware import generation, measured_generation

        gen, theirs = generation(r.hardware.compute_capability), measured_generation(m.fitted)
        near = f"its generation's measured GPU ({gen})" if gen == theirs else \
            f"the nearest measured generation ({theirs}; no {gen} GPU measured)"
        return (f"; {what} as fitted on {gpu}'s, {near}, on this device's datasheet roofs, AIConfigurator 0.12 "
                f"{tables} (elementwise: the medians){moe}")
    if r.hardware.kind == "gpu":
        return "; fixed costs: the five measured GPUs' medians (no kernel tables for this device)"
    return ""


def gdn_words(r: Roofline, m, tables: str) -> str:
    """The predict line's words for a step's gated-delta-net calls on their fitted forms (predict.GdnFit): whose
    tables, another engine's where the preset's lack the class, and a stand-in under transformers' generate."""
    from .predict import GDN_CLASSES

    calls = sorted({p.term.gdn[0] for p in r.step.placements if p.term.gdn and p.term.gdn[0] in m.gdn_fits},
                   key=list(GDN_CLASSES).index)
    if not calls:
        return ""
    lent = [f"{c} {TABLE_NAMES[m.gdn_fits[c].tables]}'s" for c in calls if m.gdn_fits[c].tables]
    words = f"; gated delta nets ({', '.join(calls)}): {tables}'s kernels, fitted"
    if lent:
        words += f" ({', '.join(lent)}: {tables}'s tables hold no rows of it)"
    if m.engine_host.engine not in TABLE_ENGINES:  # an engine whose own kernels no gdn table measured
        words += (f", a stand-in: {m.engine_host.engine or 'hf'} runs them in its own kernels (transformers: "
                  f"flash-linear-attention's and causal-conv1d's where installed), which no table measured")
    return words


def host_words(r: Roofline) -> str:
    st, m = r.step, r.model
    if m is None:
        return "not modelled"
    if st.impl == "hf-eager":
        return f"{st.launches_per_step} eager ops x {m.host_per_op_s.expected * 1e6:.3g} us" + engine_host_words(m, st.gpus)
    if st.graphed:
        return f"one graph replay, {m.launch_s.expected * 1e6:.3g} us" + engine_host_words(m, st.gpus)
    return f"{st.launches_per_step} launches x {m.launch_s.expected * 1e6:.3g} us" + ungraphed_words(st, m) + \
        engine_host_words(m, st.gpus)


def ungraphed_words(st, m) -> str:
    """Why a step under cuda-graph launches each kernel: its engine replays its graph for fewer tokens alone."""
    if st.impl != "cuda-graph" or st.graphed:
        return ""
    n = m.engine_host.graph_tokens
    return (f" (each kernel launched: {m.engine_host.engine} replays its CUDA graph for a step of {n} token"
            f"{'s' if n > 1 else ''} alone, and this one holds {st.tokens:,})")


def engine_host_words(m, gpus: int = 1) -> str:
    """The engine's host time outside its kernels (engines.py), where it has any (its part on several GPUs where
    the step runs on them)."""
    e = m.engine_host
    if e.none:
        return ""
    parts = [f"{e.fixed_s.expected * 1e3:.3g} ms"] if e.fixed_s.expected else []
    parts += [f"{e.per_sequence_s.expected * 1e6:.3g} us per sequence"] if e.per_sequence_s.expected else []
    parts += [f"{e.ranks_s.expected * 1e3:.3g} ms on several GPUs"] if e.ranks_s.expected and gpus > 1 else []
    if not parts:
        return ""
    return f" + {e.engine}'s {' + '.join(parts)} outside the kernels " + \
        ("(overlapping the device)" if e.overlap and m.overlap else "(the device waits for it)")


def attention_words(w, prompt: bool | None = None) -> str:
    """How a step's attention runs where it is not one fused kernel (--attention unfused), else nothing;
    ``prompt``: whether it runs a prompt (a sweep's dtypes are a decode step's whatever it sweeps)."""
    if getattr(w, "attention", "fused") == "fused":
        return ""
    prompt = w.phase == "prefill" if prompt is None else prompt
    chunks = f", the prompt in micro-batches of {w.ubatch:,}" if w.ubatch and prompt else ""
    return f"; attention unfused: its score matrix written and read between its kernels (attention_scores{chunks})"


def engine_words(m, impl: str, w=None, shape=None, compute_capability: float | None = None) -> str:
    """The engine a prediction models (--engine), and an --impl given by hand over its own; its attention
    kernel on a GPU of ``compute_capability`` (Engine.attention_on; the latent one for a ``shape`` with DeepSeek's
    attention), or the unfused attention ``w`` (the workload) runs by --attention; where its decode kernel reads a GQA
    group's KV once per query head (EngineHost.decode_every_head) and ``shape`` has groups, how many times the KV
    bytes counted that is (the attention's efficiency holds the rereads; the bytes stay the ideal's)."""
    name = m.engine_host.engine if m is not None else ""
    if not name:
        return ""
    from .engines import ENGINES

    e = ENGINES[name]
    kernel = attention_kernel(e, w, shape, compute_capability)
    group = shape.n_heads / shape.n_kv_heads if shape is not None and getattr(shape, "n_kv_heads", 0) else 1
    reread = (f"; each query head reads its group's KV, {group:g}x the KV bytes counted (the attention's efficiency "
              f"holds the rereads)") if m.engine_host.decode_every_head and group > 1 and \
        getattr(w, "phase", "") == "decode" and getattr(shape, "mla", None) is None else ""
    return f"; engine {name} (attention: {kernel})" + \
        (f" with --impl {impl} by hand (its own: {e.impl})" if impl != e.impl else "") + reread + int4_words(m, w)


def _int4(w) -> bool:
    return getattr(getattr(w, "weight_dtype", None), "name", "") == "int4"


def int4_words(m, w) -> str:
    """The kernel an int4 workload's matmuls run where it is not Marlin-like and the step model took it (an NVIDIA
    GPU computing in 16 bits: KernelModel.int4_cap), with whether the engine preset or --int4-kernel chose it."""
    kernel = m.engine_host.int4_kernel if m is not None else ""
    if not kernel or kernel == "marlin" or not _int4(w) or not m.int4_cap:
        return ""
    from .engines import ENGINES

    by = "the engine's" if ENGINES.get(m.engine_host.engine) and ENGINES[m.engine_host.engine].awq_kernel == kernel \
        else "--int4-kernel"
    from .predict import INT4_KERNELS

    return f"; int4 matmuls: {INT4_KERNELS[kernel][3]} ({kernel}, {by})"


def nodes_words(hw, gpus: int) -> str:
    """Where a layout's GPUs outnumber one node's (the catalog's gpus_per_node): how many nodes, and that the
    collectives spanning them run over the network (Roof.hop); "" inside one node."""
    node = getattr(hw, "gpus_per_node", None)
    if not node or gpus <= node:
        return ""
    return (f"; {gpus} GPUs span {-(-gpus // node)} nodes of {node}: a collective across them runs over the network, "
            f"not the link")


def roof_lines(r: Roofline, defaults: Iterable[str] = ()) -> list[str]:
    hw, nom, mea = r.hardware, r.nominal, r.measured
    d = " (default)" if "hw" in set(defaults) else ""
    gpus = getattr(getattr(r.analysis, "parallel", None), "gpus", 1) or 1
    lines = [f"hardware  {hw.name}{d}, {r.compute_dtype} compute{'; ' + hw.source if hw.source else ''}"
             f"{nodes_words(hw, gpus)}",
             f"roof      nominal  {si(nom.bandwidth_bytes_per_s, 'B/s')}, {si(nom.peak_flop_per_s, 'FLOP/s')}, "
             f"ridge {ridge(nom.ridge)} FLOP/byte"]
    if r.own_nominal:  # a profile that names no datasheet: one roof, no share of a nominal to say
        lines[1] = (f"roof      measured ('{r.profile_name}') {si(mea.bandwidth_bytes_per_s, 'B/s')}, "
                    f"{si(mea.peak_flop_per_s, 'FLOP/s')}, ridge {ridge(mea.ridge)} FLOP/byte, its own nominal (the "
                    f"profile names no datasheet in 'nominal'); verdicts use the measured roof")
    elif mea is None:
        lines.append("          measured none given: verdicts use the nominal roof (pass --measured-bw/--measured-flops "
                     "or --hw-file)")
    else:
        named = f" ('{r.profile_name}')" if r.profile_name else ""
        of = "nominal"
        if r.profile_is_nominal:  # the profile's own figures, a flag's beside them: no datasheet to take a share of
            lines[1] += ": the profile's own (it names no datasheet in 'nominal')"
            of = "the profile's"
        lines.append(f"          measured{named} {si(mea.bandwidth_bytes_per_s, 'B/s')} "
                     f"({share(mea.bandwidth_bytes_per_s / nom.bandwidth_bytes_per_s)} of {of}), "
                     f"{si(mea.peak_flop_per_s, 'FLOP/s')} ({share(mea.peak_flop_per_s / nom.peak_flop_per_s)} of "
                     f"{of}), "
                     f"ridge {ridge(mea.ridge)} FLOP/byte; verdicts use the measured roof")
    if r.model is not None:
        lines.append(f"predict   {efficiency_words(r)}; host {host_words(r)}{engine_words(r.model, r.step.impl, r.analysis.workload, r.analysis.shape, hw.compute_capability)}")
    lines.append(memory_line(r))
    return lines


def _apart(x: float, y: float) -> tuple[str, str]:
    """x and y with the fewest significant digits (3 or more) at which they print differently: an
    asymptote just under the ridge must not read as the ridge itself."""
    def show(v: float, extra: int) -> str:
        return f"{v:.{extra}f}" if abs(v) >= 100 else f"{v:.{3 + extra}g}"

    for extra in range(6):
        a, b = show(x, extra), show(y, extra)
        if a != b:
            break
    return a, b


# what keeps a decode step's AI from growing without bound as its batch does: bytes that grow with each sequence
GROWING = "the KV cache and the activations"


def slope_words(r: Roofline) -> str:
    """Distance 2 in words: what batching can do at this context, as the sweep's verdicts say it."""
    st, roof_name = r.step, "measured" if r.measured else "nominal"
    if st.intensity >= r.roof.ridge:  # under the flat roof: no slope left to climb
        return (f"none: the step's AI {ratio(st.intensity)} is right of the {roof_name} ridge {ridge(r.roof.ridge)} "
                f"FLOP/byte, under the flat roof; more sequences or tokens a step add FLOPs, not attainable FLOP/s")
    if r.analysis.source == "traced" and r.analysis.workload.phase == "decode":  # its verdicts need its sweep
        return (f"the ridge is {st.batching_headroom:.3g}x the step's AI, further right; how far batching takes a "
                f"traced model's "
                f"AI, its sweep says (--batch 1..512)")
    from .sweep import step_batch_verdicts

    v = step_batch_verdicts(r)
    if v is None and r.analysis.workload.phase == "decode":  # a pipeline's stage (step_batch_verdicts)
        return (f"the ridge is {st.batching_headroom:.3g}x the step's AI, further right; a pipeline's step is not "
                f"linear in the batch: its sweep (--batch 1..512) shows how far batching takes it")
    if v is None:  # prefill: more tokens per step, not more sequences
        return (f"the ridge is {st.batching_headroom:.3g}x the step's AI, further right; a longer prompt or more "
                f"sequences per step "
                f"raise the AI toward it")
    if v.ridge_batch is None:
        limit, at = _apart(v.intensity_limit, v.ridge)
        return (f"the step's AI tends to {limit} FLOP/byte as the batch grows (its bytes grow with it: "
                f"{GROWING}): it never reaches the {roof_name} ridge {at} at this context; batching can raise the "
                f"attainable FLOP/s to {v.intensity_limit / st.intensity:.3g}x this step's at most")
    fits = "" if v.max_batch is None or v.ridge_batch <= v.max_batch else f" (more than fits: {v.max_batch:,})"
    return (f"the step's AI reaches the {roof_name} ridge {ridge(v.ridge)} FLOP/byte at batch {v.ridge_batch:,}{fits}; "
            f"batching can raise the attainable FLOP/s to {v.ridge / st.intensity:.3g}x this step's before the roof")


def pipeline_line(a) -> str:
    pipe, memory = a.note_pipeline
    n, w = len(pipe.stage_s), a.workload
    stages = ", ".join(ms(t) for t in pipe.stage_s)
    ep = a.parallel.ep
    share = f" ({w.batch} a rank over --ep {ep})" if ep > 1 else ""
    host = f" + the engine's host time the device waits for, once a step ({ms(pipe.host_s)} ms)" if pipe.host_s else ""
    return (f"pipeline  --pp {n}, {pipe.micro_batches} micro-batch(es) of {a.batch // pipe.micro_batches}{share} of the "
            f"{a.batch} sequences: every "
            f"number below is stage {a.stage} (layers {a.layers[0]}-{a.layers[1] - 1}), the slowest, on one "
            f"micro-batch; the whole step = the stages in turn + {pipe.micro_batches - 1} x the slowest{host} = "
            f"{ms(pipe.step_s)} ms (stages {stages} ms), {100 * pipe.bubble:.0f}% of the stages' time idle (the "
            f"bubble), {sig(a.batch / pipe.step_s)} tokens/s; the largest stage holds {si(memory, 'B')}")


def _states_only(a) -> bool:
    """A traced model whose cache holds no keys and values, only recurrent states (Mamba, xLSTM)."""
    return a.source == "traced" and a.kv_bytes_per_token == 0 and \
        a.traced_cache_bytes > 0


def recurrent_state_bytes(a) -> int:
    """A traced hybrid's (or a state-space model's) recurrent states for the sequences it holds: its memory beyond
    the weights, an unfused prefill's live scores and the keys and values, the same size at every length (0 for a
    model without, and where a sliding window holds fewer positions than the context). From the memory, which a
    pipeline stage holds for every micro-batch (its traced cache is one micro-batch's)."""
    if getattr(a, "source", "") != "traced":
        return 0
    from .calculator import unfused_score_buffer_bytes

    w = a.workload
    cache = a.memory_bytes - a.weight_storage_bytes - unfused_score_buffer_bytes(a.shape, w)
    return max(0, cache - a.kv_bytes_per_token * a.cached_sequences * w.kv_len)


def memory_line(r: Roofline) -> str:
    """The single step's memory verdict, by the sweep's rule: weights + KV cache against the device."""
    from .calculator import unfused_score_buffer_bytes

    a, w = r.analysis, r.analysis.workload
    live = unfused_score_buffer_bytes(a.shape, w)  # an unfused prefill's score matrix, one layer's
    need, kv = r.memory_bytes, r.memory_bytes - a.weight_storage_bytes - live
    # a pipeline stage holds the cache of the step's sequences (its ranks' share of them), not one micro-batch's
    cached = a.cached_sequences
    states = recurrent_state_bytes(a)
    window = getattr(a.shape, "sliding_window", None)
    held = (f"; a sliding window of {window:,} caps what its layers hold" if window and window < w.kv_len and
            kv - states < a.kv_bytes_per_token * cached * w.kv_len * 0.999 else "")
    cache = (f"{si(kv - states, 'B')} of KV cache ({cached:,} x {w.kv_len:,} positions{held})" if kv > states else "")
    if states > 0:
        cache = " + ".join(filter(None, (cache, f"{si(states, 'B')} of recurrent state ({cached:,} sequence{'s' * (cached != 1)})")))
    scores = f" + {si(live, 'B')} of unfused scores (one layer's matrix, fp32)" if live else ""
    what = (f"memory    {si(a.weight_storage_bytes, 'B')} of weights + "
            f"{cache or si(kv, 'B') + ' of KV cache'}{scores} = {si(need, 'B')}")
    if r.capacity_bytes is None:
        return what + "; the device's memory is unknown (pass --memory)"
    if r.fits:
        return what + f": fits in {capacity(r.capacity_bytes)}"
    room = capacity(r.capacity_bytes)
    if room == si(need, "B"):  # too close to tell apart at three digits: the bytes
        room = f"{room} ({int(need):,} bytes needed, {int(r.capacity_bytes):,} there)"
    return what + f": does NOT fit in {room} (weights + KV cache{' + scores' if live else ''} only; pass --memory to " \
                  f"change it)"


def time_column(name: str, seconds: list[float | None]) -> tuple[str, list[str]]:
    """A column of times in one unit, the one that suits its largest value (us, or ms from 10 ms)."""
    values = [t for t in seconds if t is not None]
    unit, scale = ("ms", 1e3) if values and max(values) >= 1e-2 else ("us", 1e6)
    return f"{name} {unit}", ["" if t is None else sig(t * scale) for t in seconds]


# (header, priority): on a narrow terminal the highest priorities go first; 0 always stays
KERNEL_COLUMNS = {"kernel": 0, "count": 0, "shape": 4, "FLOPs": 2, "bytes": 1, "weights": 5, "activations": 5,
                  "KV cache": 5, "AI": 1, "% step bytes": 3, "floor": 1, "eff": 1, "expected": 0, "launches": 4,
                  "fixed": 4, "bound": 1, "measured": 0, "% roof": 3, "x floor": 1, "error": 1, "flag": 0}


def kernel_columns(r: Roofline) -> list[tuple[str, int, list[str]]]:
    """The kernel table as columns: (header, priority, cells)."""
    pl = r.step.placements
    total_bytes = r.analysis.totals.bytes
    measured = any(p.measured_s is not None for p in pl)
    cols = [("kernel", [p.kernel.name for p in pl]), ("count", [f"x{p.kernel.count}" for p in pl]),
            ("shape", [p.kernel.dims for p in pl]), ("FLOPs", [si(p.kernel.cost.flops) for p in pl]),
            ("bytes", [si(p.kernel.cost.bytes, "B") for p in pl]),
            ("weights", [si(p.kernel.cost.weight_bytes, "B") for p in pl]),
            ("activations", [si(p.kernel.cost.activation_bytes, "B") for p in pl]),
            ("KV cache", [si(p.kernel.cost.kv_bytes, "B") for p in pl]),
            ("AI", [ratio(p.kernel.cost.intensity) for p in pl]),
            ("% step bytes", [f"{100 * p.kernel.count * p.kernel.cost.bytes / total_bytes:.1f}" for p in pl]),
            ("floor", None), ("eff", [f"{p.efficiency:.2f}" for p in pl]), ("expected", None),
            ("fixed", None), ("launches", [str(p.launches) for p in pl]), ("bound", [p.bound for p in pl])]
    times = {"floor": [p.t_floor_s for p in pl], "expected": [p.t_expected_s for p in pl],
             "fixed": [p.t_fixed_s for p in pl]}
    if measured:
        cols += [("measured", None), ("% roof", [pct(p.roof_fraction) for p in pl]),
                 ("x floor", ["" if p.floor_multiple is None else sig(p.floor_multiple) for p in pl]),
                 ("error", ["" if p.error is None else f"{100 * p.error:+.0f}%" for p in pl]),
                 ("flag", [flag_cell(p) for p in pl])]
        times["measured"] = [p.measured_s for p in pl]
    out = []
    for name, cells in cols:
        header = name
        if cells is None:
            header, cells = time_column(name, times[name])
        out.append((header, KERNEL_COLUMNS[name], cells))
    return out


def roof_warning_lines(r, own_nominal: bool | None = None) -> list[str]:
    """A warning where the measured roof of ``r`` (a Roofline, or a sweep with ``own_nominal`` said) is not what it
    seems against its datasheet: above it by over 5 % (another device's figure, or a cache's), or under 1 % of it
    (no real run of the device reaches so little: a figure in the wrong unit, or another device's). None where the
    profile is its own nominal (no datasheet to hold it to)."""
    from .units import share, si

    nom, mea = r.nominal, r.measured
    own = r.profile_is_nominal if own_nominal is None else own_nominal
    if mea is None or own:
        return []
    lines = []
    for what, got, sheet, unit in (("bandwidth", mea.bandwidth_bytes_per_s, nom.bandwidth_bytes_per_s, "B/s"),
                                   ("peak", mea.peak_flop_per_s, nom.peak_flop_per_s, "FLOP/s")):
        if sheet and got > 1.05 * sheet:
            lines.append(f"warning   the measured {what}, {si(got, unit)}, is {share(got / sheet)} of "
                         f"{r.hardware.name}'s datasheet {si(sheet, unit)}: a figure above the datasheet is "
                         f"another device's or a cache's; check it")
        elif sheet and got < 0.01 * sheet:
            lines.append(f"warning   the measured {what}, {si(got, unit)}, is {share(got / sheet)} of "
                         f"{r.hardware.name}'s datasheet {si(sheet, unit)}: a figure that low is in the wrong unit "
                         f"(GB/s or TFLOP/s written in base units?) or another device's; check it")
    return lines


def warning_lines(r: Roofline, points: bool = True) -> list[str]:
    """Every warning a single step's report gives of its own figures (the measured roof against its datasheet,
    a measured figure faster than its floor, the measured kernels against the measured step, a time in the wrong
    unit), as the table prints them; JSON's ``warnings`` list holds their words."""
    return roof_warning_lines(r) + faster_lines(r) + kernel_sum_lines(r) + slow_unit_lines(r, points=points) + \
        position_lines(r)


def position_lines(r: Roofline) -> list[str]:
    """A step reading past the config's positions (the context of a decode step, the prompt of a prefill), as a
    warning line, as a sweep's and a request's reports say it."""
    return positions_lines(r.analysis.shape, r.analysis.workload.kv_len)


def positions_lines(shape, positions: int) -> list[str]:
    """A warning where a step (a sweep's farthest) reads ``positions`` past the config's max_position_embeddings."""
    if not shape.max_position_embeddings or positions <= shape.max_position_embeddings:
        return []
    return [f"warning   {positions:,} positions are past the config's max_position_embeddings "
            f"({shape.max_position_embeddings:,}): the model was not built for positions that far"]


# the timers' noise, 10 %: a measured kernel this much over its expected time is an anomaly to list, and the
# measured kernels this much over the measured step disagree with it (kernel_sum_lines)
ANOMALY_OVER = 1.1


def kernel_sum_lines(r: Roofline) -> list[str]:
    """A warning where the measured kernels of one step (--kernel-times, each times its count) add up to more than
    the measured step (--tpot) by over 10 % (the timers' noise): one of the two is of another run, or in another
    unit. `roofcalc profile` says the same of its own timings."""
    st = r.step
    timed = [(p.measured_s * p.kernel.count) for p in st.placements if p.measured_s is not None]
    if st.tpot_s is None or not timed or sum(timed) <= ANOMALY_OVER * st.tpot_s:
        return []
    return [f"warning   the measured kernels add up to {ms(sum(timed))} ms a step, more than the measured step "
            f"({ms(st.tpot_s)} ms): the kernel times and the TPOT are of different runs, or one is in another unit; "
            f"check them"]




def anomaly_lines(r: Roofline, n: int = 3) -> list[str]:
    """The measured kernels that lose the most time against their expected time, largest first, of those more than
    ANOMALY_OVER times it."""
    # against the expected time as the profiler times it (a CPU's: with each op's dispatch, Placement.t_as_timed_s)
    worst = sorted((((p.measured_s - p.t_as_timed_s) * p.kernel.count, p) for p in r.step.placements
                    if p.measured_s is not None and p.measured_s > ANOMALY_OVER * p.t_as_timed_s),
                   key=lambda x: -x[0])  # (ties: in order)
    out = []
    for excess, p in worst[:n]:
        label = measured_label(p)
        timed = " with its ops' dispatch" if p.dispatch_s else ""
        out.append(f"{p.kernel.name}: +{ms(excess)} ms a step over its expected time{timed} (x{p.kernel.count}, "
                   f"{sig(p.measured_s * 1e6)} us each, {sig(p.floor_multiple)}x its floor"
                   + (f", {label}" if label else "") + ")")
    if not out:
        return []
    return ["anomalies " + out[0]] + [f"          {line}" for line in out[1:]]


def faster_lines(r: Roofline) -> list[str]:
    """The measured figures (the step, a kernel, a --point) faster than their floor on the roof in use, by the one
    rule (roofline.FASTER_THAN_FLOOR), each said by what it beats: the datasheet roof's floor too (impossible: a
    figure or its unit is wrong), or only a measured roof's (the roof was measured low). One line for each kind."""
    roof, st, nom = r.roof, r.step, r.nominal
    impossible: list[str] = []
    low: list[str] = []

    def put(words: str, beats_datasheet: bool) -> None:
        (impossible if r.measured is None or beats_datasheet else low).append(words)

    if st.tpot_s is not None and st.tpot_s < FASTER_THAN_FLOOR * st.sum_floor_s:
        put(f"the step ({ms(st.tpot_s)} ms against floors of {ms(st.sum_floor_s)} ms)",
            st.tpot_s < FASTER_THAN_FLOOR * sum(_nominal_floor(r, p) * p.kernel.count for p in st.placements))
    for p in st.placements:
        if p.faster_than_floor:
            put(f"{p.kernel.name} ({sig(p.measured_s * 1e6)} us against a floor of {sig(p.t_floor_s * 1e6)} us)",
                p.measured_s < FASTER_THAN_FLOOR * _nominal_floor(r, p))
    for q in r.points:
        if q.faster_than_floor(roof):
            put(f"point {q.name} ({pct(q.roof_fraction(roof))} of the roof at its AI)", q.faster_than_floor(nom))
    head = f"under {FASTER_THAN_FLOOR:g}x the floor on the {'measured' if r.measured else 'nominal'} roof"
    out = []
    if impossible:
        why = ("faster than the datasheet allows" if r.measured is None else
               "faster than this profile's own roof allows (it names no datasheet)" if r.own_nominal else
               "faster than even the datasheet allows (the nominal roof's floors too)")
        out.append(f"faster    {'; '.join(impossible)}: {head}, {why}: check each figure and its unit (ms or us; a "
                   f"step's time or a kernel's)")
    if low:
        out.append(f"faster    {'; '.join(low)}: {head}, not the datasheet's: the measured roof does not bound them "
                   f"(a bandwidth or a peak measured low, or a figure in the wrong unit): treat their % of roof as a "
                   f"sign the roof is low")
    return out


# a measured figure this many times its expected time (a kernel's, as timed) or its prediction (the step's), or
# under this share of the roof (a --point's), is taken for a unit read wrong: microseconds read as seconds make a
# million, milliseconds a thousand; no kernel of this model's sizes runs 300x its expected time unless it waits on
# something else
SLOW_UNIT = 300.0
# a --point has no fixed cost of its own: it is held to its floor plus the least a launched kernel takes, about 10
# us (the fitted fixed costs of AIConfigurator's smallest measured kernels: 4-5 us a GEMM, 9-12 us a decode
# attention; docs/kernel_fits.md), so that a small kernel timed right is not taken for a unit read wrong
POINT_LAUNCH_S = 10e-6


def _nominal_floor(r: Roofline, p) -> float:
    """A placed kernel's floor on the nominal (datasheet) roof: its compute and memory times on the roof in use
    rescaled to the datasheet's peak and bandwidth (a collective's link time as it is)."""
    nom, roof = r.nominal, r.roof
    t_c = p.t_compute_s * roof.peak_flop_per_s / nom.peak_flop_per_s
    t_m = p.t_memory_s if p.kernel.kind == "collective" else \
        p.t_memory_s * roof.bandwidth_bytes_per_s / nom.bandwidth_bytes_per_s
    return max(t_c, t_m)


def slow_unit_lines(r: Roofline, points: bool = True) -> list[str]:
    """A warning for each measured figure so slow that its unit was likely read wrong (SLOW_UNIT times its expected
    time or more): a bare number in a kernel-times file or a --point is seconds, so 78 meant as microseconds is 78 s.
    ``points``: the --point figures too (not where the output leaves the points out: CSV)."""
    st, out = r.step, []
    slow = [p for p in st.placements if p.measured_s is not None and p.measured_s >= SLOW_UNIT * p.t_as_timed_s]
    if slow:
        out.append("warning   " + "; ".join(f"{p.kernel.name} {sig(p.measured_s * 1e6)} us, {sig(p.measured_s / p.t_as_timed_s)}x "
                                            f"its expected time" for p in slow[:4])
                   + (f" and {len(slow) - 4} more" if len(slow) > 4 else "")
                   + ": check the kernel times' unit (a file's bare numbers are seconds; a header row 'name,us' "
                     "reads microseconds)")
    if st.tpot_s is not None and st.tpot_s >= SLOW_UNIT * st.predicted_s:
        out.append(f"warning   the measured step, {ms(st.tpot_s)} ms, is {sig(st.tpot_s / st.predicted_s)}x the "
                   f"predicted {ms(st.predicted_s)} ms: check --tpot's unit")
    for q in r.points if points else ():
        least = r.roof.floor(q.flops, q.bytes) + POINT_LAUNCH_S
        if q.seconds >= SLOW_UNIT * least:
            out.append(f"warning   point {q.name}, {ms(q.seconds)} ms, is {sig(q.seconds / least)}x its floor and a "
                       f"launch ({ms(least)} ms): check its time's unit (the fourth field; a bare number is seconds)")
    return out


def measured_label(p) -> str:
    """The one flag rule (Placement.flagged) in words: above 3x the least a real kernel of its size
    takes, its floor or (where larger) its fixed cost."""
    if not p.flagged:
        return ""
    return f"above {FLAG_MULTIPLE:g}x " + ("its floor and its ops' dispatch" if p.dispatch_s else
                                           "its fixed cost" if p.t_fixed_s > p.t_floor_s else "its floor")


def flag_cell(p) -> str:
    """The table's flag column: the flag rule's words (measured_label), or, for a kernel measured faster than its
    floor (the faster line's rule), that it was."""
    return measured_label(p) or (f"under {FASTER_THAN_FLOOR:g}x its floor" if p.faster_than_floor else "")


def markdown_bullets(lines: list[str]) -> list[str]:
    """A report's labelled lines as a Markdown list: a labelled line ("roof      nominal ...") one item, a line
    that continues the one above it without a label (the roof's "          measured ...") an item nested under
    it; blank lines and tables (a record table's "|" rows) as they are."""
    out = []
    for line in lines:
        if not line.strip() or line.startswith(("|", "-" * 3)):
            out.append(line)
        elif line[:1].isspace() and out and out[-1].startswith(("- ", "  - ")):
            out.append(f"  - {line.strip()}")
        else:
            out.append(f"- {line.strip()}")
    return out


def wrap_lines(lines: list[str], width: int | None) -> list[str]:
    """Prose lines wrapped on words to ``width`` (None: as they are), each continuation indented to where
    its line's text starts after the label ("roof      ", "  fits      ", "  1 "). Tables are fitted by
    their columns (fit_columns), not wrapped."""
    if width is None:
        return lines
    import re
    import textwrap

    out = []
    for line in lines:
        if len(line) <= width or "\n" in line:  # a table (the record table) is fitted, not wrapped
            out.append(line)
            continue
        label = re.match(r" *\S+ {2,}| *\d+ ", line)  # "roof      ", "  fits      ", "  1 "
        lead = len(line) - len(line.lstrip())
        # a line with no padded label ("predicted TPOT ...") continues under the header's text column, 10
        indent = len(label.group(0)) if label and len(label.group(0)) <= 12 else lead + 2 if lead else 10
        out += textwrap.wrap(line, width, subsequent_indent=" " * indent, break_long_words=False,
                             break_on_hyphens=False) or [line]
    return out


def fit_columns(cols, width: int | None):
    """Drop the least important columns (highest priority first, rightmost first) until the
    'simple' table fits ``width`` characters; None keeps every column."""
    if width is None:
        return cols
    cols = list(cols)

    def table_width(cs):  # tabulate pads each header by 2 (its MIN_PADDING); a cell's lines wrap it
        return sum(max(len(h) + 2, *(len(line) for c in cells for line in c.split("\n"))) for h, _, cells in cs) \
            + 2 * (len(cs) - 1)

    while table_width(cols) > width:
        worst = max(range(len(cols)), key=lambda i: (cols[i][1], i))
        if cols[worst][1] == 0:
            break
        cols.pop(worst)
    return cols


def kernel_rows(r: Roofline, human: bool = True, width: int | None = None) -> tuple[list[str], list[list[Any]]]:
    cols = fit_columns(kernel_columns(r), width)
    headers = [h for h, _, _ in cols]
    rows = [list(row) for row in zip(*(cells for _, _, cells in cols))]
    return headers, rows


def totals_lines(r: Roofline) -> list[str]:
    a, st = r.analysis, r.step
    t = a.totals
    # a row tagged with a kind of layer ("attention[1]": a window's layers, the others') runs in that kind's layers
    # only: a layer runs the untagged rows and its own kind's
    rows = [k.name.split("#")[0] for k in a.kernels if k.scope == "layer"]
    kinds: dict[str, int] = {}
    for name in rows:
        if name.endswith("]") and "[" in name:
            kinds[name.rsplit("[", 1)[1]] = kinds.get(name.rsplit("[", 1)[1], 0) + 1
    counts = sorted({len(rows) - sum(kinds.values()) + n for n in kinds.values()} or {len(rows)})
    layers = getattr(a.shape, "n_layers", 0)
    apart = sorted({k.count for k in a.kernels if k.scope == "layer" and 0 < k.count < layers})
    if not kinds and layers and apart and sum(apart) == layers:  # kinds of layer told apart by their rows' counts
        # (DeepSeek-V3's 3 dense layers and 58 MoE layers): a layer runs the rows of every layer and its kind's
        common = sum(1 for k in a.kernels if k.scope == "layer" and k.count >= layers)
        counts = sorted({common + sum(1 for k in a.kernels if k.scope == "layer" and k.count == c) for c in apart})
    per_layer = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    lines = [
        f"step      {si(t.flops, 'FLOP')} ({t.flops:,}), {si(t.bytes, 'B')} moved ({t.bytes:,}), "
        f"AI {ratio(t.intensity)} FLOP/byte",
        f"bytes     weights {t.weight_bytes:,}  activations {t.activation_bytes:,}  KV cache {t.kv_bytes:,}",
        f"kernels   {per_layer} per layer, {sum(k.count for k in a.kernels)} per step; "
        f"launches {st.launches_per_layer:.4g} per layer, {st.launches_per_step} per step ({st.impl}"
        f"{'' if st.graphed or st.impl != 'cuda-graph' else ', no graph replayed'})",
        f"time      {predicted_words(st, a)}: {bound_words(st)}",
        f"          device {ms(st.times.device_s)} ms (floors {ms(st.sum_floor_s)} ms over the kernels' efficiencies)"
        f", host {ms(st.times.host_s)} ms; "
        + ("they overlap: the step takes the larger" if st.times.overlap else "one waits for the other: the step "
           "takes their sum")
        + (f"; then {ms(st.times.serial_s)} ms of the engine's host time the device waits for"
           if st.times.serial_s else ""),
    ]
    if st.tpot_s is not None:
        roof, roof_name = r.roof, "measured" if r.measured else "nominal"
        lines += [
            f"measured  step {ms(st.tpot_s)} ms: {si(st.achieved_flop_per_s, 'FLOP/s')} at AI "
            f"{ratio(st.intensity)}, {pct(st.roof_fraction)} of the {roof_name} roof "
            f"there ({si(roof.attainable(st.intensity), 'FLOP/s')}), {sig(st.floor_multiple)}x the {roof_name} roof's "
            f"floor ({ms(st.sum_floor_s)} ms, the kernels' floors summed)",
            (f"  1 below the {'roof' if st.intensity >= roof.ridge else 'slope'}: {ms(st.gap_s)} ms above the "
             f"floors is overhead and kernel efficiency; " + gap_words(st) if st.gap_s > 0 else
             f"  1 below the {'roof' if st.intensity >= roof.ridge else 'slope'}: none; the measured step is "
             f"{ms(-st.gap_s)} ms under its floors (below: faster)"),
            "  2 along the slope: " + slope_words(r),
            f"  3 the roof: {si(roof.peak_flop_per_s, 'FLOP/s')}; only another device or precision lifts it",
        ]
    lines += roof_warning_lines(r) + anomaly_lines(r) + faster_lines(r) + kernel_sum_lines(r) + slow_unit_lines(r) + \
        position_lines(r)
    for p in r.points:
        lines.append(f"point     {p.name}: AI {ratio(p.intensity)}, {si(p.achieved_flop_per_s, 'FLOP/s')}, "
                     f"{pct(p.roof_fraction(r.roof))} of the {'measured' if r.measured else 'nominal'} roof there "
                     f"({'left of' if p.intensity < r.roof.ridge else 'right of'} the ridge)")
    return lines


def gap_words(st) -> str:
    """How much of the measured step's time above its floors the step model predicts: a share of it where
    the model predicts less, the excess where it predicts more; then the steps' ratio, named."""
    predicted = st.predicted_s - st.sum_floor_s
    if predicted <= st.gap_s:
        said = f"the step model predicts {ms(predicted)} ms of it, {ms(st.gap_s - predicted)} ms it does not explain"
    else:
        said = (f"the step model predicts {ms(predicted)} ms above the floors, {ms(predicted - st.gap_s)} ms more "
                f"than measured")
    where = "inside" if st.times.holds(st.tpot_s) else "above" if st.tpot_s > st.predicted_upper_s else "below"
    return (f"{said} (measured step / predicted step {st.tpot_s / st.predicted_s:.2f}: {where} the "
            f"{range_name(st.times.band)})")


def record_rows(r: Roofline, matmul_point: str | None = None) -> list[list[str]]:
    """The seed's record table: nominal vs measured, and the ratios."""
    nom, mea, st = r.nominal, r.measured, r.step
    roof_name = "measured" if mea else "nominal"  # the verdict roof, which % of roof is of
    rows = [
        ["bandwidth (GB/s)", f"{nom.bandwidth_bytes_per_s / 1e9:.4g}",
         f"{mea.bandwidth_bytes_per_s / 1e9:.4g}" if mea else "", share(mea.bandwidth_bytes_per_s / nom.bandwidth_bytes_per_s) if mea else ""],
        [f"{r.compute_dtype} peak (TFLOP/s)", f"{nom.peak_flop_per_s / 1e12:.4g}",
         f"{mea.peak_flop_per_s / 1e12:.4g}" if mea else "", share(mea.peak_flop_per_s / nom.peak_flop_per_s) if mea else ""],
        ["ridge (FLOP/byte)", ridge(nom.ridge), ridge(mea.ridge) if mea else "", share(mea.ridge / nom.ridge) if mea else ""],
    ]
    if r.own_nominal:  # a profile that names no datasheet: its nominal column is its own measurement
        rows = [[name, "none", measured, ""] for name, _, measured, _ in rows]
    nominal_floor = nom.floor(st.flops, st.bytes)
    if st.tpot_s is not None:
        rows.append(["step time (ms)", f"{_g3(nominal_floor * 1e3)} (floor)", f"{_g3(st.tpot_s * 1e3)}",
                     f"{sig(st.tpot_s / nominal_floor)}x the {'measured' if r.own_nominal else 'nominal'} floor"])
        rows.append(["step achieved (GFLOP/s)", f"{_g3(nom.attainable(st.intensity) / 1e9)} (roof at AI)",
                     f"{_g3(st.achieved_flop_per_s / 1e9)}", f"{pct(st.roof_fraction)} of the {roof_name} roof"])
    for p in r.points:
        rows.append([f"{p.name} achieved (TFLOP/s)", f"{_g3(nom.attainable(p.intensity) / 1e12)} (roof at AI)",
                     f"{_g3(p.achieved_flop_per_s / 1e12)}", f"{pct(p.roof_fraction(r.roof))} of the {roof_name} roof"])
    return rows


def _g3(x: float) -> str:
    """Three significant digits as the record table shows them (6.6, 15, 0.0412), a figure of 1,000 or more whole
    and with its thousands marked (38,000), never an exponent."""
    text = f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"
    return sig(x) if "e" in text else text


def to_text(r: Roofline, fmt: str = "table", defaults: Iterable[str] = (), record: bool = False,
            width: int | None = None) -> str:
    """``width``: the terminal's; the table drops its least important columns to fit (None: all)."""
    from tabulate import tabulate

    tablefmt = {"table": "simple", "markdown": "github"}[fmt]
    headers, rows = kernel_rows(r, width=width if fmt == "table" else None)
    align = ["left" if h in ("kernel", "shape", "bound", "flag") else "right" for h in headers]
    table = tabulate(rows, headers=headers, tablefmt=tablefmt, colalign=align, disable_numparse=True)
    head = header_lines(r.analysis, defaults, hardware=r.hardware) + roof_lines(r, defaults)
    foot = totals_lines(r)
    if record:
        foot += ["", tabulate(record_rows(r), headers=["record", "nominal", "measured", "measured / nominal"],
                              tablefmt=tablefmt, disable_numparse=True)]
    if fmt == "markdown":
        head, foot = markdown_bullets(head), markdown_bullets(foot)
    else:
        if width is not None and len(headers) < len(KERNEL_COLUMNS) - (0 if any(
                p.measured_s is not None for p in r.step.placements) else 5):
            foot.append(f"columns   {len(headers)} shown to fit {width} columns; --wide shows all (Markdown, CSV and "
                        f"JSON always have all)")
        head, foot = wrap_lines(head, width), wrap_lines(foot, width)
    return "\n".join(head + ["", table, ""] + foot) + "\n"


def to_csv(r: Roofline) -> str:
    """One row per kernel with the JSON kernel record's keys and numbers (per instance, exact
    integers, seconds), then one row of scope 'step': the step's totals under the same keys
    (t_floor_s: Σ floors, t_expected_s: predicted_s, launches per step, measured_s:
    the measured step time), and under --pp a row of scope 'pipeline': the whole step's time (the stages in turn)."""
    doc = to_record(r)
    kernels = doc["kernels"]
    keys = list(kernels[0])
    st, t = r.step, r.analysis.totals
    step = {k: "" for k in keys}
    step.update(name="step total", kind="step", scope="step", count=1, shape="", **cost_record(t),
                params=r.analysis.params, t_floor_s=st.sum_floor_s, t_expected_s=st.predicted_s,
                efficiency=st.sum_floor_s / st.predicted_s, launches=st.launches_per_step, t_fixed_s=st.times.fixed_s,
                bound=st.bound, measured_s=st.tpot_s, roof_fraction=st.roof_fraction,
                floor_multiple=st.floor_multiple, achieved_flop_per_s=st.achieved_flop_per_s,
                error=None if st.tpot_s is None else st.tpot_s / st.predicted_s - 1,
                faster_than_floor=None if st.tpot_s is None else st.tpot_s < FASTER_THAN_FLOOR * st.sum_floor_s)
    rows = kernels + [step]
    if r.analysis.note_pipeline:  # --pp: the rows above are the slowest stage's; the whole step is the stages in turn
        pipe = r.analysis.note_pipeline[0]
        rows.append({k: "" for k in keys} | dict(name="pipeline step", kind="step", scope="pipeline", count=1,
                                                 t_expected_s=pipe.step_s))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for row in rows:
        w.writerow({k: "" if v is None else v for k, v in row.items()})
    return buf.getvalue()


def render(r: Roofline | Sweep, fmt: str = "table", defaults: Iterable[str] = (), record: bool = False,
           width: int | None = None) -> str:
    if instance_of(r, "sweep", "Sweep"):
        return render_sweep(r, fmt, defaults, width)
    if instance_of(r, "parallel", "TPSweep"):
        return render_tp_sweep(r, fmt, defaults, width)
    if not hasattr(r, "step"):  # an Analysis (counts alone) has no roof to place its kernels on
        raise RoofcalcError(f"render takes a Roofline (roofcalc.roofline.roofline(analysis, hardware)), a Sweep "
                            f"(roofcalc.sweep.sweep(shape, hardware, ...)) or a --tp comparison, not a "
                            f"{type(r).__name__}")
    if fmt == "json":
        return to_json(r) + "\n"
    if fmt == "csv":
        return to_csv(r)
    return to_text(r, fmt, defaults, record, width)


# --------------------------------------------------------------------------- sweeps


def sweep_point_records(sw: Sweep) -> list[dict[str, Any]]:
    """One record per point, row-major (batch, then context or prompt); exact integers, seconds.
    Each names its model, hardware, dtypes, engine, implementation and parallel layout (tp, pp, ep: 1 on one GPU; the
    numbers are then one rank's; ep_attention: how --ep ranks split attention), so several runs concatenate."""
    g = sw.grid
    fits = g.fits(sw.capacity_bytes)
    w = sw.dtypes
    par = getattr(sw.analyzer, "parallel", None)
    ident = {"model": sw.shape.name, "hardware": sw.hardware.name, "weight_dtype": w.weight_dtype.name,
             "act_dtype": w.act_dtype.name, "kv_dtype": w.kv_dtype.name, "compute_dtype": w.compute_dtype.name,
             "engine": (sw.model.engine_host.engine or None) if sw.model is not None else None,
             "impl": sw.impl, **band_record(range_band(sw.model, gpus_of(sw.analyzer) > 1)),
             **{axis: getattr(par, axis, 1) for axis in ("tp", "pp", "ep")},
             "ep_attention": getattr(par, "ep_attention", "dp"), "attention": w.attention, "ubatch": w.ubatch}
    out = []
    host = sw.model.engine_host if sw.model is not None else None

    def graphed(tokens: int) -> bool:
        """Whether a step of ``tokens`` replays a CUDA graph (a request's: its decode steps')."""
        return sw.impl == "cuda-graph" and (host is None or bool(host.graphed(sw.impl, tokens)))

    # every array read once: some of the grid's are properties computed over the whole grid on each read
    memory, lower = g.memory_bytes, g.predicted_lower_s
    if sw.kind in ("decode", "prefill"):
        flops, nbytes, floor = g.flops, g.bytes, g.floor_s
    if sw.kind == "decode":
        inten, step, upper, tps, bound = g.intensity, g.step_s, g.step_upper_s, g.tokens_per_s, g.bound
        weights, kv = g.weight_bytes, g.kv_bytes
        for i, b in enumerate(g.batches):
            for j, s in enumerate(g.contexts):
                out.append({
                    **ident, "batch": int(b), "context": int(s), "flops": int(flops[i, j]), "bytes": int(nbytes[i, j]),
                    "weight_bytes": int(weights[i, j]), "kv_bytes": int(kv[i, j]),
                    "intensity": float(inten[i, j]), "intensity_per_batch": float(inten[i, j] / b),
                    "floor_s": float(floor[i, j]),
                    "step_s": float(step[i, j]), "step_upper_s": float(upper[i, j]), "tpot_s": float(step[i, j]),
                    "predicted_s": float(step[i, j]), "predicted_lower_s": float(lower[i, j]),
                    "predicted_upper_s": float(upper[i, j]),
                    "tokens_per_s": float(tps[i, j]), "bound": str(bound[i, j]),
                    "memory_bytes": int(memory[i, j]), "fits": bool(fits[i, j]), "graph_replayed": graphed(int(b)),
                })
    elif sw.kind == "prefill":
        inten, ttft, tps, bound, upper = g.intensity, g.ttft_s, g.prompt_tokens_per_s, g.bound, g.predicted_upper_s
        for i, b in enumerate(g.batches):
            for j, p in enumerate(g.prompts):
                out.append({
                    **ident, "batch": int(b), "prompt": int(p), "flops": int(flops[i, j]), "bytes": int(nbytes[i, j]),
                    "intensity": float(inten[i, j]), "floor_s": float(floor[i, j]),
                    "ttft_s": float(ttft[i, j]),
                    "predicted_s": float(ttft[i, j]), "predicted_lower_s": float(lower[i, j]),
                    "predicted_upper_s": float(upper[i, j]),
                    "prompt_tokens_per_s": float(tps[i, j]), "bound": str(bound[i, j]),
                    "memory_bytes": int(memory[i, j]), "fits": bool(fits[i, j]),
                    "graph_replayed": graphed(int(b) * int(p)),
                })
    else:
        total, tpot, tps, upper = g.total_s, g.mean_tpot_s, g.tokens_per_s, g.predicted_upper_s
        ttft, decode = g.ttft_s, g.decode_s
        for i, b in enumerate(g.batches):
            for j, p in enumerate(g.prompts):
                out.append({
                    **ident, "batch": int(b), "prompt": int(p), "generate": g.generate, "ttft_s": float(ttft[i, j]),
                    "decode_s": float(decode[i, j]), "total_s": float(total[i, j]),
                    "predicted_s": float(total[i, j]), "predicted_lower_s": float(lower[i, j]),
                    "predicted_upper_s": float(upper[i, j]),
                    "mean_tpot_s": None if tpot is None else float(tpot[i, j]),
                    "tokens_per_s": float(tps[i, j]), "memory_bytes": int(memory[i, j]),
                    "fits": bool(fits[i, j]), "graph_replayed": graphed(int(b)),
                    # what bounds the steps holding most of the request's time (RequestGrid.bound)
                    "bound": None if g.bound is None else str(g.bound[i, j]),
                })
    return out


def verdict_record(v: BatchVerdicts) -> dict[str, Any]:
    return {"context": v.context, "ridge_flop_per_byte": v.ridge, "intensity_limit": v.intensity_limit,
            "ridge_batch": v.ridge_batch, "kv_over_weights_batch": v.kv_over_weights_batch,
            "max_batch": v.max_batch, "capacity_bytes": _bytes(v.capacity_bytes), "min_gain": v.min_gain,
            "doubling_batch": v.doubling_batch, "doubling_gain": v.doubling_gain,
            "largest_batch_tried": v.largest_batch_tried}


def sweep_record(sw: Sweep) -> dict[str, Any]:
    g = sw.grid
    w = sw.dtypes
    workload: dict[str, Any] = {"phase": sw.kind, "batches": [int(b) for b in g.batches]}
    if sw.kind == "decode":
        workload["contexts"] = [int(s) for s in g.contexts]
    else:
        workload["prompts"] = [int(p) for p in g.prompts]
        workload["causal"], workload["logits"] = w.causal, "all" if w.logits_all else "last"
    if sw.kind == "request":
        workload["generate"] = g.generate
    workload.update(weight_dtype=w.weight_dtype.name, act_dtype=w.act_dtype.name, kv_dtype=w.kv_dtype.name,
                    compute_dtype=w.compute_dtype.name, attention=w.attention, cache_update=w.cache_update,
                    eager_ops=w.eager_ops, tp_layout=w.tp_layout)  # (as a single step's record says them)
    if w.ubatch and sw.kind != "decode":
        workload["ubatch"] = w.ubatch
    hw = hardware_record(sw)
    hw["capacity_bytes"] = _bytes(sw.capacity_bytes)
    head = sw.header_analysis()
    workload.update(gguf_record(head.shape, w))
    if getattr(head.shape, "mla", None) is not None:
        workload["mla"] = w.mla
    doc = {"schema_version": SCHEMA_VERSION, "model": model_record(head), "workload": workload,
           "hardware": hw, "engine": engine_record(sw.model, sw.impl, sw.dtypes, head.shape, sw.hardware.compute_capability),
           "points": sweep_point_records(sw),
           "verdicts": [verdict_record(v) for v in sw.verdicts]}
    par = head.parallel
    if par is not None and par.gpus > 1:  # every point is one rank's (a pipeline's: see "step")
        doc["parallel"] = {"tp": par.tp, "pp": par.pp, "ep": par.ep, "ep_attention": par.ep_attention, "dense_experts": par.dense_experts, "masked_experts": par.masked_experts,
                           "gpus": par.gpus, "per": "rank", "model_params": head.full.params}
        if par.pp > 1:
            doc["parallel"].update(micro_batches=sw.analyzer.micro_batches,  # --micro-batches (null: the rule)
                                   micro_batches_by_batch={str(int(b)): sw.analyzer.micro(int(b))
                                                           for b in sw.grid.batches},
                                   step="the whole pipeline's: the stages in turn + (M - 1) x the slowest; flops and "
                                        "bytes the slowest stage's on one micro-batch, memory the largest stage's")
    return doc


def _ms_cell(seconds):
    return "" if seconds is None else sig(seconds * 1e3)


_SWEEP_COLUMNS = {  # (header, record key, text formatter)
    "decode": [("batch", "batch", str), ("context", "context", str), ("FLOPs", "flops", si),
               ("weights read", "weight_bytes", lambda x: si(x, "B")), ("KV bytes", "kv_bytes", lambda x: si(x, "B")),
               ("AI", "intensity", ratio), ("AI/B", "intensity_per_batch", lambda x: f"{x:.3f}"),
               ("floor ms", "floor_s", _ms_cell),
               ("step=TPOT ms", "step_s", _ms_cell),
               ("upper ms", "predicted_upper_s", _ms_cell),
               ("tokens/s", "tokens_per_s", sig),
               ("bound", "bound", str), ("memory GB", "memory_bytes", lambda x: sig(x / 1e9))],
    "prefill": [("batch", "batch", str), ("prompt", "prompt", str), ("FLOPs", "flops", si),
                ("bytes", "bytes", lambda x: si(x, "B")), ("AI", "intensity", ratio),
                ("floor ms", "floor_s", _ms_cell),
                ("TTFT ms", "ttft_s", _ms_cell),
                ("upper ms", "predicted_upper_s", _ms_cell),
                ("prompt tokens/s", "prompt_tokens_per_s", sig), ("bound", "bound", str),
                ("memory GB", "memory_bytes", lambda x: sig(x / 1e9))],
    "request": [("batch", "batch", str), ("prompt", "prompt", str), ("generate", "generate", str),
                ("TTFT ms", "ttft_s", _ms_cell),
                ("mean TPOT ms", "mean_tpot_s", _ms_cell),
                ("total s", "total_s", sig),
                ("output tokens/s", "tokens_per_s", sig),
                ("memory GB (end)", "memory_bytes", lambda x: sig(x / 1e9))],
}


def _batch(n: int | None) -> str:
    return "" if n is None else f"batch {n:,}"


def verdict_lines(sw: Sweep) -> list[str]:
    """The decode verdicts in words, one block per context."""
    roof_name = "measured" if sw.measured else "nominal"
    cap = sw.capacity_bytes
    lines = []
    held = "weights + KV cache"
    if sw.analyzer is not None:  # a traced hybrid's (a state-space model's) recurrent states count too
        a = sw.header_analysis()
        if recurrent_state_bytes(a):
            held = "weights + KV cache + recurrent state" if a.kv_bytes_per_token else "weights + recurrent state"
    if len(sw.verdicts) > 12:
        return [f"verdicts  for {len(sw.verdicts)} contexts: see --format json ('verdicts')"]
    for v in sw.verdicts:
        lines.append(f"context {v.context:,}:")
        if v.ridge_batch is None:
            limit, at = _apart(v.intensity_limit, v.ridge)
            lines.append(f"  ridge     the step's AI tends to {limit} FLOP/byte as the batch grows (its bytes "
                         f"grow with it: {GROWING}): it never reaches the {roof_name} ridge {at} at this context")
        else:
            fits = "" if v.max_batch is None or v.ridge_batch <= v.max_batch else " (more than fits in memory)"
            lines.append(f"  ridge     the step's AI reaches the {roof_name} ridge {ridge(v.ridge)} FLOP/byte at "
                         f"{_batch(v.ridge_batch)}{fits}; beyond it the step's floor is compute's")
        if v.kv_over_weights_batch is None:
            lines.append("  KV        KV-cache bytes never overtake weight bytes")
        else:
            lines.append(f"  KV        KV-cache bytes per step overtake weight bytes from {_batch(v.kv_over_weights_batch)}")
        if v.max_batch is None:
            lines.append("  memory    the device's capacity is unknown (pass --memory)")
        elif v.max_batch == 0:
            lines.append(f"  memory    not even batch 1 fits in {capacity(cap)} ({held})")
        elif v.max_batch >= v.largest_batch_tried:  # (the verdicts' ladder stops there: more may fit)
            lines.append(f"  memory    every batch up to {v.max_batch:,} fits in {capacity(cap)} ({held}, nothing "
                         f"else), the most the verdicts try")
        else:
            lines.append(f"  memory    the largest batch that fits in {capacity(cap)} ({held}, nothing else): "
                         f"{v.max_batch:,}")
        if v.doubling_batch is None:
            lines.append(f"  doubling  keeps paying up to batch {v.largest_batch_tried:,}: each doubling gains at least "
                         f"{100 * v.min_gain:.0f}% tokens/s, or a larger batch makes up for one that does not")
        else:
            beyond = "" if v.max_batch is None or 2 * v.doubling_batch <= v.max_batch else " (beyond what fits)" \
                if v.doubling_batch > v.max_batch else f" (batch {2 * v.doubling_batch:,} does not fit)"
            gain = (f"only {100 * v.doubling_gain:.1f}% more tokens/s" if v.doubling_gain >= 0 else
                    f"{-100 * v.doubling_gain:.1f}% fewer tokens/s")
            lines.append(f"  doubling  stops paying at {_batch(v.doubling_batch)}: batch {2 * v.doubling_batch:,} gives "
                         f"{gain} (less than {100 * v.min_gain:.0f}% more){beyond}")
    return lines


def sweep_header_lines(sw: Sweep, defaults: Iterable[str] = ()) -> list[str]:
    lines = [line for line in header_lines(sw.header_analysis(), defaults, swept_batch=True, hardware=sw.hardware)
             if not line.startswith("workload")]
    if sw.analyzer is not None and sw.analyzer.describe is not None:
        lines.insert(next((i + 1 for i, line in enumerate(lines) if line.startswith("parallel")), 1),
                     sw.analyzer.describe())
    g = sw.grid
    if sw.kind == "decode":
        what = f"decode one token per sequence, {len(g.batches)} batch(es) x {len(g.contexts)} context(s)"
    elif sw.kind == "prefill":
        what = f"prefill, {len(g.batches)} batch(es) x {len(g.prompts)} prompt length(s)" + \
            next((f" ({k.split(':', 1)[1]})" for k in defaults if k.startswith("forward-why:")), "")
    else:
        what = (f"whole request: prefill the prompt (first token), then {g.generate - 1} decode step(s) at contexts "
                f"P+1 .. P+{g.generate - 1}")
    lines.append(f"workload  {what}{attention_words(sw.dtypes, sw.kind != 'decode')}")
    hw, nom, mea = sw.hardware, sw.nominal, sw.measured
    d = " (default)" if "hw" in set(defaults) else ""
    lines.append(f"hardware  {hw.name}{d}, {sw.dtypes.compute_dtype.name} compute; roof "
                 + (f"measured {si(mea.bandwidth_bytes_per_s, 'B/s')}, {si(mea.peak_flop_per_s, 'FLOP/s')}, "
                    f"ridge {ridge(mea.ridge)}" if mea else
                    f"nominal {si(nom.bandwidth_bytes_per_s, 'B/s')}, {si(nom.peak_flop_per_s, 'FLOP/s')}, "
                    f"ridge {ridge(nom.ridge)} (no measured roof given)")
                 + f"; memory {'unknown' if sw.capacity_bytes is None else capacity(sw.capacity_bytes)}"
                 + nodes_words(hw, gpus_of(sw.analyzer) if sw.analyzer is not None else 1))
    m = sw.model
    limit = m.engine_host.graph_tokens if m is not None else 0
    graph = "" if sw.impl != "cuda-graph" else " (one graph launch per step)" if not limit else \
        (f" (one graph launch for a step of {limit} token{'s' if limit > 1 else ''}, as {m.engine_host.engine} "
         f"replays it; a step of more launches each kernel)")
    per = {"decode": "; each sequence gets one token per step: TPOT = step time",
           "prefill": "; TTFT = the prefill step", "request": ""}[sw.kind]
    if m is not None and m.relative_to == "measured":
        how = "measured efficiencies"
    elif m is not None and m.fitted and m.fitted_how != "profile" and (m.gemm_fits or m.attention_fits):
        from .hardware import measured_gpu_name

        how = (f"efficiencies fitted on {measured_gpu_name(m.fitted)}'s measured kernels (AIConfigurator 0.12 "
               f"{TABLE_NAMES.get(m.fitted_tables, 'vLLM')}{'; its generation' if m.fitted_how == 'nearest' else ''})")
    else:
        how = "default efficiencies"
    host = "" if m is None else (f", {m.host_per_op_s.expected * 1e6:.3g} us per eager op" if sw.impl == "hf-eager"
                                 else f", {m.launch_s.expected * 1e6:.3g} us per launch")
    who = "the launches and the device" if m is not None and m.engine_host.waited else "host and device"
    overlap = "" if m is None else (f"; {who} overlap" if m.overlap else f"; {who} add up")
    lines.append(f"time      predicted: kernel floors at the {how}, with the host's time: --impl {sw.impl}{graph}"
                 f"{host}{'' if m is None else engine_host_words(m, gpus_of(sw.analyzer))}{overlap}"
                 f"{engine_words(m, sw.impl, sw.dtypes, sw.header_analysis().shape, hw.compute_capability)}"
                 f"{per}")
    return lines


# sweep columns that give way first on a narrow terminal (higher goes first; 0 always stays)
SWEEP_PRIORITY = {"batch": 0, "context": 0, "prompt": 0, "generate": 1, "FLOPs": 3, "weights read": 3, "KV bytes": 3,
                  "bytes": 3, "AI": 2, "AI/B": 3, "floor ms": 2, "step=TPOT ms": 0, "TTFT ms": 0, "upper ms": 2,
                  "mean TPOT ms": 0, "total s": 0, "tokens/s": 0, "prompt tokens/s": 0, "output tokens/s": 0,
                  "bound": 1, "memory GB": 1, "memory GB (end)": 1, "fits": 0}


def render_sweep(sw: Sweep, fmt: str = "table", defaults: Iterable[str] = (), width: int | None = None) -> str:
    records = sweep_point_records(sw)
    if fmt == "json":
        return json.dumps(sweep_record(sw), indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(records[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: "" if v is None else v for k, v in r.items()} for r in records)
        return buf.getvalue()
    from tabulate import tabulate

    spec = _SWEEP_COLUMNS[sw.kind]
    columns = [(h, SWEEP_PRIORITY[h], [f(r[key]) for r in records]) for h, key, f in spec]
    columns.append(("fits", 0, ["yes" if r["fits"] else "NO: does not fit" for r in records]))
    shown = fit_columns(columns, width if fmt == "table" else None)
    headers = [h for h, _, _ in shown]
    rows = [list(row) for row in zip(*(cells for _, _, cells in shown))]
    align = ["left" if h in ("bound", "fits") else "right" for h in headers]
    table = tabulate(rows, headers=headers, tablefmt={"table": "simple", "markdown": "github"}[fmt],
                     colalign=align, disable_numparse=True)
    head = sweep_header_lines(sw, defaults)
    foot = []
    if not all(r["fits"] for r in records):
        foot.append("fits      rows marked NO need more memory (weights + KV cache) than the device has; their "
                    "times are what the step would cost, were there room")
    foot += verdict_lines(sw)
    if len(shown) < len(columns):
        foot.append(f"columns   {len(shown)} of {len(columns)} shown to fit {width} columns; --wide shows all "
                    f"(Markdown, CSV and JSON always have all)")
    if fmt == "markdown":
        head, foot = markdown_bullets(head), markdown_bullets(foot)
    elif fmt == "table":
        head, foot = wrap_lines(head, width), wrap_lines(foot, width)
    return "\n".join(head + ["", table, ""] + foot) + "\n"


# --------------------------------------------------------------------------- a profiled model


# --------------------------------------------------------------------------- a sweep over --tp

# (CSV header, value, cell, table header, priority: on a narrow terminal the highest go first; 0 stays)
TP_COLUMNS = (("tp", "tp", str, "tp", 0),
              ("memory per GPU GB", "memory_bytes", lambda x: sig(x / 1e9), "GB per GPU", 0),
              ("fits", "fits", None, "fits", 0), ("step ms", "step_s", lambda x: sig(x * 1e3), "step ms", 0),
              ("communication ms", "comm_s", lambda x: sig(x * 1e3), "comm ms", 2),
              ("communication %", "comm_share", lambda x: f"{100 * x:.1f}", "comm %", 1),
              ("tokens/s", "tokens_per_s", lambda x: sig(x), "tokens/s", 0),
              ("tokens/s per GPU", "tokens_per_s_per_gpu", lambda x: sig(x), "per GPU", 1),
              ("bound", "bound", str, "bound", 1))


def _tp_value(p, key):
    if key == "tp":
        return p.tp
    if key == "bound":
        return p.step.times.bound
    return getattr(p, key)


AXIS_WORDS = {
    "tp": "one rank's step at each --tp, by transformers' tensor-parallel plan (docs/conventions.md)",
    "ep": "one rank's step at each --ep: E/N routed experts, attention for B/N of the sequences, all-to-all "
          "dispatch and combine (docs/conventions.md)",
    "ep-tp": "one rank's step at each --ep: E/N routed experts, attention split by heads over the N ranks "
             "for every sequence, an all-reduce after o_proj and after the experts (--ep-attention tp)",
    "pp": "the pipeline's step at each --pp: the stages in turn, then the slowest stage once per other "
          "micro-batch; memory is the largest stage's, and communication the collectives and sends between "
          "stages on that path (every stage's for the first micro-batch, the slowest stage's for each of the "
          "others), its share of the device time on the same path",
}


def _tp_range(p) -> dict[str, Any]:
    """A --tp/--ep/--pp point's range about its step_s, as a single step's (predicted_lower_s, predicted_upper_s
    and the calibrated widths); null for a pipeline (a --pp point above 1), whose whole step (the stages in turn)
    has none."""
    if p._pipeline:
        return dict.fromkeys(("predicted_lower_s", "predicted_upper_s", "range_band_below", "range_band_above"))
    st = p.step
    return {"predicted_lower_s": st.predicted_lower_s, "predicted_upper_s": st.predicted_upper_s,
            **band_record(st.times.band)}


def tp_sweep_record(tps) -> dict[str, Any]:
    first = tps.points[0].result
    a = first.analysis
    full = a.full or a
    stop = tps.stops_paying
    return {
        "schema_version": SCHEMA_VERSION, "model": model_record(full), "workload": workload_record(a),
        "hardware": {**hardware_record(first), "capacity_bytes": _bytes(first.capacity_bytes),
                     "link_bytes_per_s": first.hardware.link_bytes_per_s},
        "engine": engine_record(first.model, first.step.impl, a.workload, a.shape, first.hardware.compute_capability),
        "axis": tps.axis,
        "fixed": {a: getattr(tps.base, a) for a in ("tp", "pp", "ep") if a != tps.axis},
        "ep_attention": tps.base.ep_attention, "dense_experts": tps.base.dense_experts, "masked_experts": tps.base.masked_experts,
        f"{tps.axis}_points": [{tps.axis: p.tp, "gpus": p.gpus, "memory_bytes_per_gpu": p.memory_bytes,
                       "fits": p.fits, "step_s": p.step_s, **_tp_range(p), "communication_s": p.comm_s,
                       "communication_share": p.comm_share, "tokens_per_s": p.tokens_per_s,
                       "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu, "bound": p.step.times.bound,
                       "collectives": [kernel_record(q.kernel) for q in p.step.placements
                                       if q.kernel.kind == "collective"]} for p in tps.points],
        "verdicts": {"fewest_gpus_that_fit": tps.fewest_fitting, "min_gain": tps.min_gain,
                     f"stops_paying_at_{tps.axis}": stop[0] if stop else None,
                     "gain_there": stop[1] if stop else None},
    }


def tp_display_rows(tps):
    """(headers, short headers, priorities, rows of display strings, the fixed axes' words) of a --tp/--pp/--ep
    comparison's table, as the terminal, Markdown and the page show it."""
    rows = []
    for p in tps.points:
        row = []
        for _, key, show, _, _ in TP_COLUMNS:
            v = _tp_value(p, key)
            row.append(("unknown" if v is None else "yes" if v else "NO") if key == "fits" else show(v))
        rows.append(row)
    headers = [tps.axis if h == "tp" else h for h, *_ in TP_COLUMNS]
    short = [tps.axis if c[3] == "tp" else c[3] for c in TP_COLUMNS]
    priorities = [c[4] for c in TP_COLUMNS]
    fixed = [f"--{a} {getattr(tps.base, a)}" for a in ("tp", "pp", "ep") if a != tps.axis and getattr(tps.base, a) > 1]
    if fixed:  # the GPUs are more than the swept size
        for names in (headers, short):
            names.insert(1, "GPUs")
        priorities.insert(1, 0)
        for row, p in zip(rows, tps.points):
            row.insert(1, str(p.gpus))
    return headers, short, priorities, rows, fixed


def render_tp_sweep(tps, fmt: str = "table", defaults: Iterable[str] = (), width: int | None = None) -> str:
    from tabulate import tabulate

    if fmt == "json":
        return json.dumps(tp_sweep_record(tps), indent=2) + "\n"
    headers, short, priorities, rows, fixed = tp_display_rows(tps)
    if fmt == "csv":  # the JSON points' values in base units, each row naming its run (runs concatenate)
        doc = tp_sweep_record(tps)
        first = tps.points[0].result
        w_ = first.analysis.workload
        ident = {"model": doc["model"].get("name", first.analysis.shape.name), "hardware": first.hardware.name,
                 "weight_dtype": w_.weight_dtype.name, "act_dtype": w_.act_dtype.name, "kv_dtype": w_.kv_dtype.name,
                 "compute_dtype": w_.compute_dtype.name,
                 "engine": (first.model.engine_host.engine or None) if first.model is not None else None,
                 "impl": first.step.impl, "axis": tps.axis, **{f"fixed_{k}": v for k, v in doc["fixed"].items()},
                 "ep_attention": tps.base.ep_attention, "batch": w_.batch, "context": w_.kv_len}
        records = [{**ident, **{k: v for k, v in pt.items() if k != "collectives"}}
                   for pt in doc[f"{tps.axis}_points"]]
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(records[0]), lineterminator="\n")
        w.writeheader()
        w.writerows({k: "" if v is None else v for k, v in r.items()} for r in records)
        return buf.getvalue()
    first = tps.points[0].result
    a = first.analysis
    full = a.full or a
    hw = first.hardware
    link = f"link {sig(hw.link_bytes_per_s / 1e9)} GB/s a direction ({hw.link})" if hw.link_bytes_per_s else \
        "no link figure"
    lines = [line for line in header_lines(full, defaults) if not line.startswith(("size", "source"))]
    lines.append(f"hardware  {hw.name} x N: {link}; memory "
                 f"{'unknown' if first.capacity_bytes is None else capacity(first.capacity_bytes)} per GPU")
    axis_words = AXIS_WORDS["ep-tp"] if tps.base.ep_attention == "tp" else AXIS_WORDS[tps.axis]
    if tps.base.dense_experts:  # vllm-v0's expert parallelism (engines.Engine.dense_experts)
        axis_words += "; each rank's experts run every token, weighted by the routing (--engine vllm-v0)"
    elif getattr(tps.base, "masked_experts", False):  # vLLM's and SGLang's expert map (engines.Engine.masked_experts)
        axis_words += ("; each rank's fused MoE call writes, activates and sums every routed pair of the step, "
                       "another rank's masked to zero")
    traced_plan = next((w for w in (getattr(p.result.analysis, "plan_words", "") for p in tps.points) if w), "")
    if traced_plan:  # a traced model's --tp list: its config class's plan (roofcalc.trace.parallel)
        axis_words = f"one rank's step at each --tp, by {traced_plan}"
    elif tps.axis == "tp" and a.workload.tp_layout == "serving":  # the serving engines' split where it differs
        from .parallel import tp_plan_words

        plan = tp_plan_words(full.shape, a.workload, tps.points[-1].result.analysis.parallel)
        axis_words = f"one rank's step at each --tp, by {plan}"
    lines.append(f"parallel  {axis_words}"
                 + (f", each with {' and '.join(fixed)}" if fixed else "")
                 + "; communication: the collectives' expected time, and its share of the device time")
    if fmt == "markdown":
        table = tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True)
    else:
        cols = fit_columns([(h, pr, [row[i] for row in rows]) for i, (h, pr) in enumerate(zip(short, priorities))],
                           width)
        table = tabulate([list(r) for r in zip(*(cells for _, _, cells in cols))], headers=[h for h, _, _ in cols],
                         tablefmt="simple", disable_numparse=True)
    first_fit = next((p for p in tps.points if p.fits), None)
    swept = ", ".join(str(p.tp) for p in tps.points)
    where = "none" if first_fit is None else \
        f"{first_fit.gpus}" + (f" (--{tps.axis} {first_fit.tp})" if fixed else "")
    verdicts = [f"  fits      the fewest GPUs on which weights and KV cache fit: {where} (of --{tps.axis} {swept})"]
    stop = tps.stops_paying
    if stop:
        how = (f"only {100 * stop[1]:.1f}% faster" if stop[1] >= 0 else
               f"{100 * (1 / (1 + stop[1]) - 1):.1f}% slower")  # gain = before / now - 1; slower: now / before - 1
        verdicts.append(f"  scaling   adding GPUs stops paying at --{tps.axis} {stop[0]}: the step is {how} than at "
                        f"the --{tps.axis} before it (less than {100 * tps.min_gain:.0f}% faster)")
    else:
        start = tps.points[tps.paying_from]
        points = tps.points[tps.paying_from:]
        since = f" from --{tps.axis} {start.tp} (the fewest GPUs that fit)" if tps.paying_from else ""
        if len(points) == 1:
            verdicts.append(f"  scaling   --{tps.axis} {start.tp}, the fewest GPUs that fit, is the largest swept: no "
                            f"larger size to compare it with")
        elif all(a.step_s / b.step_s - 1 >= tps.min_gain for a, b in zip(points, points[1:])):
            verdicts.append(f"  scaling   every step up in --{tps.axis}{since} makes the step at least "
                            f"{100 * tps.min_gain:.0f}% faster")
        else:  # a size that dips, and a larger one that pays past it
            last = points[-1]
            verdicts.append(f"  scaling   adding GPUs has not stopped paying at --{tps.axis} {last.tp}: its step is "
                            f"{100 * (start.step_s / last.step_s - 1):.1f}% faster than at --{tps.axis} {start.tp}"
                            f"{' (the fewest GPUs that fit)' if tps.paying_from else ''}, though a size between "
                            f"gains less than {100 * tps.min_gain:.0f}% on the one before it")
    if fmt == "table":
        lines, verdicts = wrap_lines(lines, width), wrap_lines(verdicts, width)
    elif fmt == "markdown":  # a list, as the other reports' Markdown (bare lines would run into one paragraph)
        lines, verdicts = markdown_bullets(lines), markdown_bullets([v.strip() for v in verdicts])
    return "\n".join(lines) + "\n\n" + table + "\n\n" + "\n".join(verdicts) + "\n"


# --------------------------------------------------------------------------- the catalogs


def _listing(cols, width: int | None, notes: list[str]) -> str:
    """A catalog as a table that gives way column by column to ``width``, with its notes wrapped."""
    from tabulate import tabulate

    shown = fit_columns(cols, width)
    headers = [h for h, _, _ in shown]
    rows = [list(row) for row in zip(*(cells for _, _, cells in shown))]
    table = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)
    if width is not None:  # the notes are paragraphs: wrapped flush left (no label to indent under)
        import textwrap

        notes = [line for note in notes for line in textwrap.wrap(note, width, break_long_words=False)]
    if len(shown) < len(cols):
        notes = notes + wrap_lines([f"columns   {len(shown)} of {len(cols)} shown to fit {width} columns; "
                                    f"--wide shows all"], width)
    return table + "\n\n" + "\n".join(notes) + "\n"


def hardware_table(catalog, width: int | None = None) -> str:
    """``roofcalc hardware``: every entry's roof and memory; the rarer dtypes and the aliases give way first."""
    from .hardware import COMPUTE_DTYPES

    def peak(hw, d):
        return f"{hw.peak_flop_per_s[d] / 1e12:.4g}" if d in hw.peak_flop_per_s else ""

    main = ["fp16" if "fp16" in hw.peak_flop_per_s else "bf16" for hw in catalog]
    priority = {"fp32": 2, "tf32": 4, "fp16": 0, "bf16": 0, "fp8": 1, "fp4": 3, "int8": 3}
    cols = [("name", 0, [hw.name for hw in catalog]),
            ("GB/s", 0, [f"{hw.bandwidth_bytes_per_s / 1e9:.4g}" for hw in catalog]),
            *((f"{d} TFLOP/s", priority[d], [peak(hw, d) for hw in catalog]) for d in COMPUTE_DTYPES),
            ("ridge FLOP/B", 1, [f"{hw.ridge(m):.0f} ({m})" for hw, m in zip(catalog, main)]),
            ("memory", 0, [hw.memory or ("" if hw.memory_bytes is None else f"{hw.memory_bytes / 1e9:.4g}GB")
                           for hw in catalog]),
            ("link GB/s", 2, ["" if hw.link_bytes_per_s is None else f"{hw.link_bytes_per_s / 1e9:.4g}"
                              for hw in catalog]),
            ("aliases", 5, [", ".join(hw.aliases) for hw in catalog])]
    return _listing(cols, width, [
        "Dense datasheet peaks (no 2:4 sparsity); GeForce fp16/bf16 with fp32 accumulate. Memory is the card's "
        "capacity (GiB = 2^30 bytes); link: one direction of its NVLink or PCIe link, for --tp. Names and aliases "
        "match case-insensitively.",
        "Each entry's source is printed in the report header and kept in the JSON output."])


def _name_lines(names, room: int) -> str:
    """Names joined by commas in lines of at most ``room`` characters, a line break between names; a name
    longer than the room breaks after a hyphen or slash."""
    import re

    lines, line = [], ""
    for i, name in enumerate(names):
        word = name + ("," if i < len(names) - 1 else "")
        for part in re.findall(r".{1,%d}(?:[-/]|$)|.{1,%d}" % (room - 1, room), word) if len(word) > room else [word]:
            if line and len(line) + 1 + len(part) > room:
                lines.append(line)
                line = part
            else:
                line = f"{line} {part}" if line and not line.endswith(("-", "/")) else line + part
    return "\n".join(lines + [line])


def models_table(catalog, families, width: int | None = None) -> str:
    """``roofcalc models``: the offline catalog; long alias lists wrap to the terminal's width."""
    cols = [("hub id", 0, [e.hub_id for e in catalog]), ("model_type", 1, [e.config["model_type"] for e in catalog]),
            ("parameters", 0, [f"{e.params_total:,}" for e in catalog]),
            ("active per token", 2, ["" if e.params_active is None else f"{e.params_active:,}" for e in catalog])]
    aliases = [", ".join(e.aliases) for e in catalog]
    gave_way = []
    if width is not None:  # the aliases take the room the other columns leave (at least 20), wrapped on commas
        used = [max(len(h) + 2, *(len(c) for c in cells)) + 2 for h, _, cells in cols]
        room = width - sum(used)
        if room < 20:  # the active parameters give way to the names a user types
            cols, room = cols[:3], room + used[3]
            gave_way = [f"columns   'active per token' left out to fit {width} columns; --wide shows it"]
        aliases = [_name_lines(e.aliases, max(room, 20)) for e in catalog]
    cols.append(("aliases", 1, aliases))
    return _listing(cols, width, [
        "Names match exactly (case-insensitive); any other hub id is read from the HF cache or the hub.",
        f"Hand-modelled families: {', '.join(families)}. Any other model_type transformers knows is read by tracing "
        f"its modeling code (needs the [torch] extra; --trace forces it)."] + gave_way)
