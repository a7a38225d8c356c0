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

import json
from dataclasses import replace

from ..calculator import Analyzer, AttentionSizes, Cost, Kernel, Workload, check_group, fused_moe_class
from ..errors import RoofcalcError
from ..inputs import one_line
from .cache import TRACE_FORMAT, _cache_dir, _cache_key, keep
from .config import ConfigCheck, hf_config
from .group import TracedKernel, _layer_split, _sizes, fused_moe_parts, fused_roles, merged_layers
from .quantized import _gguf_tables, _quantized
from .shape import layer_heads, shape_of, traced_shape
from .result import TracedAnalysis
from .step import _check_workload, routed_kernels, trace_raw


def _parts_note(params: int, language: int | None, encoders: dict) -> str:
    """How a multimodal model's encoders were counted (the size line gives the language model's share)."""
    if "error" in encoders:
        return f"; its encoders are not counted (transformers did not build them: {encoders['error']})"
    if language is None or language >= params or not encoders:
        return ""
    return f"; its encoders counted on transformers' {encoders['class']}, built on the meta device"


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


class TracedRankAnalyzer(TraceAnalyzer):
    """One --tp rank of a traced model's step at any workload, for the sweeps: each workload traced once and
    split by the config class's plan (:func:`roofcalc.trace.parallel.traced_rank`)."""

    def __init__(self, cfg: dict, name: str, label: str | None, view: str, parallel):
        super().__init__(cfg, name, label, view)
        self.parallel, self.config = parallel, hf_config(cfg, name)[0]
        self.ranks = {}

    def __call__(self, wl: Workload):
        from .parallel import traced_rank

        if wl not in self.ranks:
            self.ranks[wl] = traced_rank(super().__call__(wl), self.parallel, self.config)
        return self.ranks[wl]


class TracedEPAnalyzer(TraceAnalyzer):
    """One --ep rank of a traced model for the sweeps (data-parallel attention, --tp inside), addressed by
    the sequences its attention runs: a workload of batch b is the step of ep x b sequences over every
    rank (:func:`roofcalc.trace.parallel.traced_expert_parallel`), as the hand models' LocalBatchAnalyzer."""

    def __init__(self, cfg: dict, name: str, label: str | None, view: str, parallel):
        super().__init__(cfg, name, label, view)
        self.parallel, self.ranks, self.full = parallel, {}, None

    @property
    def scale(self) -> int:
        return self.parallel.ep

    @property
    def expert_ranks(self) -> int:  # the rank's share of what every rank's tokens reach
        return self.parallel.ep

    def __call__(self, wl: Workload):
        from .parallel import swept_ep_rank, traced_expert_parallel

        if wl not in self.ranks:
            a = traced_expert_parallel((self.cfg, self.name, self.label), replace(wl, batch=wl.batch * self.scale),
                                       self.parallel, self.view, merge=False, full=self.full)
            self.full = a.full  # the whole model's parameters: traced once for the sweep
            self.ranks[wl] = swept_ep_rank(a, self.parallel)
        return self.ranks[wl]


class TracedEPTPAnalyzer(TraceAnalyzer):
    """One --ep rank of a traced model with attention split by heads (--ep-attention tp) for the sweeps: every
    sequence on every rank, each workload traced and split (:func:`roofcalc.trace.parallel.traced_expert_parallel`).
    The busiest rank's expert rows (⌈T·k/N⌉) and experts (min(E/N, ⌈reached/N⌉)) are not linear in B, so a grid
    takes the rank at each of its batches (``exact_batches``), and the verdicts' parts that do not change with
    the context come from the whole step's probes at one and two sequences, whose costs are linear in B but for
    the experts' weights, split again at every batch (:meth:`at_batch`)."""

    exact_batches = True

    def __init__(self, cfg: dict, name: str, label: str | None, view: str, parallel):
        super().__init__(cfg, name, label, view)
        self.parallel, self.config, self.ranks = parallel, hf_config(cfg, name)[0], {}

    def __call__(self, wl: Workload):
        from .parallel import traced_expert_parallel

        if wl not in self.ranks:
            self.ranks[wl] = traced_expert_parallel((self.cfg, self.name, self.label), wl, self.parallel, self.view,
                                                    merge=False)
        return self.ranks[wl]

    @property
    def batch_period(self) -> int:
        """--ep N's ⌈B·k/N⌉ rows repeat every N/gcd(k, N) batches."""
        import math

        a = next(iter(self.ranks.values()), None) or self(Workload.decode(1, 2))  # any rank the sweep traced
        k = next(k.expert_weights[1] for k in a.kernels if k.expert_weights)
        return self.parallel.ep // math.gcd(k, self.parallel.ep)

    def at_batch(self, wl: Workload):
        """The rank at ``wl`` without tracing it: the whole step at wl.batch sequences is its probes' at one and
        two (at wl's context) extended linearly, costs and rows (every cost of a trace is linear in B at one
        context, but the experts' weights, which are read again at the batch's reach), then split as a traced
        step is (:func:`roofcalc.trace.parallel.traced_rank`). A sweep holds its grid to direct traces."""
        from dataclasses import fields

        from ..calculator import MatmulSizes, traced_expert_bytes
        from .parallel import traced_rank

        if wl.batch <= 2:
            return self(wl)
        w1, w2 = (super(TracedEPTPAnalyzer, self).__call__(replace(wl, batch=b)) for b in (1, 2))
        if [k.name for k in w1.kernels] != [k.name for k in w2.kernels]:  # no line through steps of other programs
            return self(wl)

        def line(v1: int, v2: int) -> int:
            return v1 + (wl.batch - 1) * (v2 - v1)

        kernels = []
        for k1, k2 in zip(w1.kernels, w2.kernels):
            ew, reads = k1.expert_weights, {}
            if ew is not None:  # the weights besides the experts', then the experts' the batch reaches
                other = k1.cost.weight_bytes - traced_expert_bytes(ew, w1.workload.tokens, wl.experts)
                reads = {"weight_bytes": other + traced_expert_bytes(ew, wl.tokens, wl.experts)}
            cost = Cost(**{f.name: reads.get(f.name, line(getattr(k1.cost, f.name), getattr(k2.cost, f.name)))
                           for f in fields(Cost)})
            sizes = k1.sizes
            if isinstance(sizes, MatmulSizes):
                sizes = replace(sizes, m=line(k1.sizes.m, k2.sizes.m))
            elif isinstance(sizes, AttentionSizes) and isinstance(k2.sizes, AttentionSizes):  # its sequences
                sizes = replace(sizes, batch=line(k1.sizes.batch, k2.sizes.batch))
            kernels.append(replace(k1, cost=cost, sizes=sizes))
        return traced_rank(replace(w1, workload=wl, kernels=tuple(kernels)), self.parallel, self.config)


def _experts_note(routed: bool, dense: bool) -> str:
    """The header's account of experts transformers computes densely (Llama-4's): which program this view counts."""
    if routed:
        return ("; its experts as a fused MoE runs them, each token through the k its router picks (transformers' "
                "eager code runs every token through every expert)")
    if dense:
        return ("; its experts as transformers' eager code runs them, every token through every expert (a fused MoE "
                "reads the k its router picks: --impl fused or cuda-graph, or a serving --engine)")
    return ""


def _one_byte_cache(doc: dict, wl: Workload, name: str) -> dict:
    """A trace taken with its KV cache in the 16-bit activations' dtype, with that cache at one byte a value
    (``wl.kv_dtype``: fp8 or int8, as a serving engine stores it): every kernel's KV reads and writes, the bytes
    per token and the cache (each layer's too) halved (its scales, one per tensor, left out). Only for a cache of
    keys and values alone: a layer of a sliding window holds fewer positions, each halved alike (vLLM's fp8 KV
    cache stores a windowed layer's as any other), but a hybrid's recurrent states (a layer whose bytes are not
    its positions' keys and values) are not what an fp8 KV cache quantizes, and are refused."""
    positions = wl.batch * wl.kv_len
    layers = doc.get("cache_layers") or []
    # a layer holding more than keys and values for at most every position: recurrent states (a layer of no keys,
    # or states beside them), or a layer of no keys at all (recurrent Gemma keeps its recurrent layers' states
    # outside the cache's layers, which then hold nothing); a cache with no layers to tell apart: its whole
    # bytes against every position
    states = any(b > per * positions or not per for per, b in layers) if layers else \
        doc["cache_bytes"] != doc["kv_bytes_per_token"] * positions
    if states:
        raise RoofcalcError(f"{name}: --kv-dtype {wl.kv_dtype.name} for a traced model with layers whose cache is "
                            f"not keys and values (recurrent states; an fp8 KV cache quantizes keys and values "
                            f"alone): give its 16-bit dtype")

    def half(cost: dict) -> dict:
        return {**cost, "kv_read_bytes": cost.get("kv_read_bytes", 0) // 2,
                "kv_write_bytes": cost.get("kv_write_bytes", 0) // 2}

    kernels = [{**k, "ideal": half(k["ideal"]), "eager": half(k["eager"])} for k in doc["kernels"]]
    return {**doc, "kernels": kernels, "kv_bytes_per_token": doc["kv_bytes_per_token"] // 2,
            "cache_bytes": doc["cache_bytes"] // 2, "cache_layers": [[per // 2, b // 2] for per, b in layers]}


def attention_calls(kernels, shape, wl: Workload) -> tuple:
    """``kernels`` with an attention call's sizes (calculator.AttentionSizes: what a GPU's fitted attention class
    reads, roofline.attention_sizes) on each traced attention kernel whose counted KV reads are the config's: B
    sequences of T queries over S keys of K heads of H, 2·B·S·K·H values in the KV cache's dtype. A kernel the
    config does not describe so (a cache of every query head, a latent, heads that differ by layer) keeps none,
    and takes its class's efficiency as before; so does every kernel of a config with a sliding window (a
    traced kernel does not say which layers' window binds: a prefill's KV reads are the same whether it does)."""
    n, kv, d = shape.n_heads, shape.n_kv_heads, shape.head_dim
    if not (n and kv and d) or n % kv or shape.sliding_window:
        return tuple(kernels)
    b, q, keys = wl.batch, wl.query_tokens, wl.kv_len
    values = 2 * b * keys * kv * d
    out = []
    for k in kernels:
        if k.kind == "attention" and k.sizes is None and k.cost.kv_read_bytes == wl.kv_dtype.nbytes(values):
            k = replace(k, sizes=AttentionSizes(b, n, kv, q, keys, d, keys))
        out.append(k)
    return tuple(out)


def trace(cfg: dict, name: str, wl: Workload, label: str | None = None, *, view: str = "ideal",
          use_cache: bool = True, merge: bool = True, stage: tuple[int, int] | None = None) -> TracedAnalysis:
    """The traced step as an :class:`Analysis` whose kernels carry the ``view``'s bytes (ideal | eager);
    ``stage`` (pp, s): pipeline stage s of pp alone, its layers, weights and cache (``trace.pipeline``).

    Results are cached per (config, transformers version, workload shape) under ~/.cache/roofcalc."""
    try:
        return _trace(cfg, name, wl, label, view=view, use_cache=use_cache, merge=merge, stage=stage)
    except RoofcalcError:
        raise
    except Exception as exc:  # modeling code roofcalc has not met: one line, not a traceback
        raise RoofcalcError(f"{name}: tracing {one_line(str(cfg.get('model_type')))[:60]} failed "
                            f"({type(exc).__name__}: {one_line(str(exc))[:160]})") from None


def _trace(cfg: dict, name: str, wl: Workload, label: str | None, *, view: str, use_cache: bool,
           merge: bool, stage: tuple[int, int] | None = None) -> TracedAnalysis:
    if view not in ("ideal", "eager"):
        raise RoofcalcError(f"view must be ideal or eager, not {view!r}")
    # a one-byte KV cache (fp8, int8) under 16-bit activations: traced with the cache in the activations' dtype,
    # its bytes then counted at one byte a value (_one_byte_cache)
    narrow = wl.kv_dtype.name in ("fp8", "int8") and wl.act_dtype.bits == 16
    run = replace(wl, kv_dtype=wl.act_dtype) if narrow else wl
    _check_workload(run)
    config, check = hf_config(cfg, name)
    # the width as transformers reads it (its attribute_map: n_embd, d_model), a multimodal config's text model's
    check_group(getattr(config.get_text_config(), "hidden_size", None), name, wl)
    import transformers

    doc = None
    path = _cache_dir() / f"{_cache_key(cfg, run, transformers.__version__)}.json"
    if use_cache and path.is_file():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if doc.get("format") != TRACE_FORMAT:
                doc = None
        except (OSError, ValueError):
            doc = None
    if doc is None:
        doc = trace_raw(cfg, name, run, (config, check))
        if use_cache:
            keep(path, doc)
    dense = bool(doc.get("dense_experts"))  # experts transformers runs every token through
    routed = view == "ideal" and dense
    if routed:  # experts transformers computes densely, run as a fused MoE runs them (traced once, when asked for)
        if "routed" not in doc:
            doc["routed"] = routed_kernels(cfg, name, run, (config, check), doc.get("device", "meta"))
            if use_cache:
                keep(path, doc)
        doc = {**doc, "kernels": doc["routed"]}
    if narrow:
        doc = _one_byte_cache(doc, wl, name)
    traced = [TracedKernel(k["name"], k["layer"], k["module"], k["function"], k["kind"], k["dims"], Cost(**k["ideal"]), Cost(**k["eager"]),
                           k["launches"], k["params"], k["param_bytes"],
                           (k["experts"][0], k["experts"][1], tuple(k["experts"][2])) if k.get("experts") else None,
                           tuple(k["sizes"]) if k.get("sizes") else None)
              for k in doc["kernels"]]
    traced = fused_roles(traced)
    param_bytes, deltas = doc["param_bytes"], {}
    # the experts' stacks each kernel reads, in elements: traced in the activation dtype, before any re-storing
    float_size = max(1, wl.act_dtype.bits // 8)
    expert_elems = [sum(k.experts[2]) // float_size if k.experts else 0 for k in traced]
    if wl.weight_dtype.scaled:
        traced, param_bytes, deltas = _quantized(traced, doc, wl, config)
    params, language, encoders = doc["params"], doc.get("language_params"), doc.get("encoders") or {}
    if "params" in encoders:  # the towers its text config was traced without, in the float dtype (as a
        params, language = params + encoders["params"], params  # quantized checkpoint keeps them)
        param_bytes += encoders["param_bytes"]
    shape = shape_of(config, label or cfg["model_type"], name, cfg)
    if wl.gguf:  # a GGUF file's embedding and output tables as llama.cpp's quantizer stores them
        traced, change, tables = _gguf_tables(traced, doc, wl, shape)
        param_bytes, deltas = param_bytes + change, {**deltas, **tables}
    kv_per_token, cache_bytes, span = doc["kv_bytes_per_token"], doc["cache_bytes"], None
    bare = tuple((inner, leaf, numel, nbytes, layer)
                 for module, own in (doc.get("bare_params") or {}).items()
                 for layer, inner, _ in [_layer_split(module)] for leaf, (numel, nbytes) in own.items())
    if stage is not None:  # one pipeline stage: its layers' kernels, its modules' weights, its cache layers
        from ..parallel import stage_layers
        from .pipeline import stage_cache, stage_cut, stage_weights, tied_copies

        pp, s = stage
        owner = stage_cut(doc, traced, shape.n_layers, pp)
        towers = params - language if language is not None else 0  # on the first stage
        params, param_bytes = stage_weights(doc, traced, owner, shape.n_layers, pp, s, deltas)
        language = params - towers if towers and s == 0 else None
        kv_per_token, cache_bytes = stage_cache(doc, shape.n_layers, pp, s)
        expert_elems = [e for e, o in zip(expert_elems, owner) if o == s]
        traced, copies, copy_bytes = tied_copies([k for k, o in zip(traced, owner) if o == s], s, pp)
        params, param_bytes = params + copies, param_bytes + copy_bytes
        span = stage_layers(shape.n_layers, pp)[s]
        a, b = span
        bare = tuple(p for p in bare if (p[4] is None and s == 0) or (p[4] is not None and a <= p[4] < b))
        shape = replace(shape, n_layers=b - a, layer_types=shape.layer_types[a:b],
                        mlp_types=shape.mlp_types[a:b] if shape.mlp_types else ())
    if merge:
        merged, kernel_layers = merged_layers(traced, view)
        kernels, kernel_layers = tuple(merged), tuple(kernel_layers)
    else:  # one row per kernel run, named by its layer
        kernel_layers = tuple((k.layer,) if k.layer is not None else () for k in traced)
        kernels = tuple(Kernel(k.name if k.layer is None else f"{k.name}[{k.layer}]", k.kind,
                               "layer" if k.layer is not None else "model", 1, k.dims,
                               k.ideal if view == "ideal" else k.eager, params=k.params, param_bytes=k.param_bytes,
                               launches=k.launches, expert_weights=k.experts, role=k.role, sizes=_sizes(k))
                        for k in traced)
    kernels = attention_calls(fused_moe_parts(kernels, fused_moe_class(wl)), shape, wl)
    return TracedAnalysis(shape, wl, kernels, view=view, traced_kv_bytes_per_token=kv_per_token,
                          traced_cache_bytes=cache_bytes, traced_params=params, language_params=language,
                          traced_param_bytes=param_bytes, check=check, logits=doc["logits"],
                          layer_heads=layer_heads(config, span), model_class=doc["class"], bare_params=bare,
                          expert_params=sum(expert_elems), kernel_layers=kernel_layers,
                          dense_experts=dense and not routed,
                          note=f"traced: transformers {doc['transformers']} {doc['class']} " + (
                              "on the CPU with random weights (its code reads tensor values, which the meta "
                              "device has not)" if doc.get("device") == "cpu" else "on the meta device")
                          + _parts_note(params, language, encoders)
                          + _experts_note(routed, dense))


__all__ = ["ConfigCheck", "TracedAnalysis", "TracedEPAnalyzer", "TracedRankAnalyzer", "analyzer", "hf_config", "trace", "trace_raw", "traced_shape"]
