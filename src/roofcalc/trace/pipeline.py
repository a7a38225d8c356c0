"""One pipeline stage of a traced model (``--pp``): its layers' kernels, weights and cache.

A stage holds a run of the decoder layers (``roofcalc.parallel.stage_layers``: as even as possible, the
first stages one more), as the hand models' stages do. The traced step's kernels are cut by the layer
each ran in: a kernel outside the layers runs on the stage whose layers ran before it, the first stage's
where none had (the embedding, the rotary tables), the last stage's after the last layer (the final
norm, lm_head). Each stage but the last sends its hidden states [B·T, D] to the next.

A stage's weights are its modules' (the trace keeps each module's parameters and layer): a module in a
layer is its layer's stage's; one outside the layers is the stage of the first kernel that ran in it,
the first stage's where none ran (a vision tower the text step never runs, an encoder the checkpoint
keeps). A tied lm_head on the last stage holds a copy of the embedding table, as vLLM's pipeline builds
it (``tied_head_copy``). Its cache is its layers' cache layers (keys, values, a recurrent layer's states).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..calculator import Analyzer
from ..errors import RoofcalcError
from ..parallel import PipelineAnalyzer, StageFields
from .parallel import TracedRankAnalysis


@dataclass(frozen=True)
class TracedStageAnalysis(StageFields, TracedRankAnalysis):
    """One rank of a traced pipeline stage on one micro-batch; its memory holds the cache of every sequence."""

    @property
    def memory_bytes(self) -> int:  # the cache grows with the sequences held
        return self.traced_param_bytes + self.traced_cache_bytes * self.cached_sequences // self.workload.batch


def stage_cut(doc: dict, traced: list, n_layers: int, pp: int) -> list[int]:
    """The stage each traced kernel (in execution order) runs on."""
    from ..parallel import stage_layers

    spans = stage_layers(n_layers, pp)
    layers = [k.layer for k in traced if k.layer is not None]
    if not layers:
        raise RoofcalcError(f"--pp for a traced {doc['class']}: its trace ran no decoder layers to cut")
    if max(layers) >= n_layers:
        raise RoofcalcError(f"--pp for a traced {doc['class']}: its trace numbers {max(layers) + 1} layers, its "
                            f"config {n_layers}")

    def of(layer: int) -> int:
        return next(s for s, (a, b) in enumerate(spans) if a <= layer < b)

    out, current = [], 0
    for k in traced:
        if k.layer is not None:
            current = of(k.layer)
        out.append(current)
    return out


def stage_weights(doc: dict, traced: list, owner: list[int], n_layers: int, pp: int, stage: int,
                  deltas: dict) -> tuple[int, int]:
    """(parameters, bytes) the stage's modules hold (a quantized module's bytes as stored; on the first
    stage, the encoders the checkpoint keeps beside its text model)."""
    from ..parallel import stage_layers

    modules = doc.get("module_params")
    if modules is None:  # pragma: no cover - a trace of an older format is traced again
        raise RoofcalcError("--pp for a traced model needs a trace with its modules' parameters")
    spans = stage_layers(n_layers, pp)
    first_run: dict[str, int] = {}
    for k, s in zip(traced, owner):
        first_run.setdefault(k.module, s)
    params = nbytes = 0
    for module, (count, size, layer) in modules.items():
        if layer is not None:
            home = next((s for s, (a, b) in enumerate(spans) if a <= layer < b), 0)
        else:
            home = next((s for m, s in first_run.items() if m == module or m.startswith(module + ".")), 0) \
                if module else 0
        if home == stage:
            params += count
            nbytes += size + deltas.get(module, 0)
    if stage == 0 and "params" in (doc.get("encoders") or {}):
        params += doc["encoders"]["params"]
        nbytes += doc["encoders"]["param_bytes"]
    return params, nbytes


def tied_copies(kernels: list, stage: int, pp: int) -> tuple[list, int, int]:
    """The stage's kernels with a tied head's copy of the table on its kernel, and the copies' (parameters,
    bytes): on the last stage of several, a matmul outside the layers that reads a weight no module of its
    own holds (lm_head tied to the embedding) owns a copy of it, as ``roofcalc.parallel.tied_head_copy``."""
    if stage != pp - 1 or pp == 1:
        return kernels, 0, 0
    out, params, nbytes = [], 0, 0
    for k in kernels:
        if k.layer is None and k.kind == "matmul" and not k.params and not k.function and k.sizes \
                and k.ideal.weight_bytes:
            copy = k.sizes[1] * k.sizes[2]
            params, nbytes = params + copy, nbytes + k.ideal.weight_bytes
            k = replace(k, params=copy, param_bytes=k.ideal.weight_bytes)
        out.append(k)
    return out, params, nbytes


def stage_cache(doc: dict, n_layers: int, pp: int, stage: int) -> tuple[int, int]:
    """(bytes a token adds, bytes after the step) of the stage's cache layers."""
    from ..parallel import stage_layers

    per_layer = doc.get("cache_layers") or []
    if not per_layer:
        if doc["kv_bytes_per_token"] or doc["cache_bytes"]:
            raise RoofcalcError(f"--pp for a traced {doc['class']}: its cache does not tell its layers apart")
        return 0, 0
    if len(per_layer) != n_layers:
        raise RoofcalcError(f"--pp for a traced {doc['class']}: its cache holds {len(per_layer)} layers, its "
                            f"config {n_layers} decoder layers")
    a, b = stage_layers(n_layers, pp)[stage]
    return sum(x[0] for x in per_layer[a:b]), sum(x[1] for x in per_layer[a:b])


def as_stage(a, *, parallel, full, stage: int, layers: tuple[int, int], micro_batches: int, batch: int,
             plan_words: str = "") -> TracedStageAnalysis:
    """``a`` (a traced stage, or one --tp rank of it) as a pipeline stage's analysis."""
    values = {f.name: getattr(a, f.name) for f in fields(a) if hasattr(a, f.name)}
    values.update(parallel=parallel, full=full, stage=stage, layers=layers, micro_batches=micro_batches,
                  batch=batch)
    if plan_words or "plan_words" not in values:
        values["plan_words"] = plan_words
    return TracedStageAnalysis(**{f.name: values[f.name] for f in fields(TracedStageAnalysis) if f.name in values})


def with_send(kernels: tuple, wl, d_model: int, stage: int, pp: int, group: int) -> tuple:
    """The stage's kernels and, before the last stage, its send to the next (rank r of stage s to rank r of
    stage s + 1: global ranks s·g … (s + 2)·g − 1 span it)."""
    from ..parallel import send_kernel

    if stage == pp - 1:
        return kernels
    send = send_kernel(wl, d_model, stage)
    return kernels + (replace(send, ranks=(stage * group, (stage + 2) * group - 1)),)


class TracedStages:
    """A traced model's pipeline stages (``--pp``, with ``--tp`` inside each by its config class's plan):
    each stage traced at the micro-batch (one trace serves every stage: the trace cache keeps it); and its
    expert-parallel rank (``--ep``), for a list of sizes."""

    def __init__(self, cfg: dict, name: str, label: str | None, view: str, config):
        self.cfg, self.name, self.label, self.view, self.config = cfg, name, label, view, config

    def whole(self, wl):
        """The whole model's traced step (the header's parameters)."""
        from . import trace

        return trace(self.cfg, self.name, wl, self.label, view=self.view)

    def expert_rank(self, wl, parallel):
        """One --ep rank of the step (:func:`roofcalc.trace.parallel.traced_expert_parallel`)."""
        from .parallel import traced_expert_parallel

        return traced_expert_parallel((self.cfg, self.name, self.label), wl, parallel, self.view)

    def stage(self, micro, parallel, s: int, *, micro_batches: int, batch: int, full,
              merge: bool = True) -> TracedStageAnalysis:
        """Stage ``s`` on one micro-batch ``micro``: one --tp rank of it, its send to the next stage
        (``merge``: as :func:`roofcalc.trace.trace`'s)."""
        from ..parallel import Parallel, stage_layers
        from . import trace
        from .parallel import traced_ep_rank, traced_rank

        tp, ep = parallel.tp, parallel.ep
        if micro.batch % ep:
            raise RoofcalcError(f"a micro-batch of {micro.batch} sequences does not split over --ep {ep}: each rank "
                                f"runs attention for B/{ep} of them")
        local = replace(micro, batch=micro.batch // ep)
        a = trace(self.cfg, self.name, local, self.label, view=self.view, stage=(parallel.pp, s), merge=merge)
        words = ""
        if tp > 1:
            a = traced_rank(a, Parallel(tp=tp), self.config, shared_apart=ep > 1)  # (--ep's all-to-alls: apart)
            words = a.plan_words
        if ep > 1 and any(k.expert_weights is not None for k in a.kernels):  # its experts over the --ep groups
            a = traced_ep_rank(a, micro, Parallel(tp=tp, ep=ep), full, first=s * tp * ep)
        a = replace(a, kernels=with_send(a.kernels, local, a.shape.d_model, s, parallel.pp, tp * ep))
        return as_stage(a, parallel=parallel, full=full, stage=s,
                        layers=stage_layers(full.shape.n_layers, parallel.pp)[s], micro_batches=micro_batches,
                        batch=batch, plan_words=words)


class TracedPipelineAnalyzer(PipelineAnalyzer):
    """A sweep over a traced model's pipeline (``--pp``, with --tp and --ep inside each stage): called
    with a workload it gives the header's rank of the whole model; :meth:`stage` each stage's analyzer."""

    traced = True

    def __init__(self, shape, parallel, micro_batches: int | None, stages: TracedStages):
        super().__init__(shape, parallel, micro_batches)
        self.stages, self.memo = stages, {}

    def __call__(self, wl):
        from ..parallel import Parallel
        from .parallel import swept_ep_rank, traced_rank

        if wl not in self.memo:
            tp, ep = self.parallel.tp, self.parallel.ep
            if ep > 1:  # the header's rank: b of the step's ep·b sequences, the batch the sweep's column
                a = swept_ep_rank(self.stages.expert_rank(replace(wl, batch=wl.batch * ep), Parallel(tp, ep=ep)),
                                  Parallel(tp, ep=ep))
            elif tp > 1:
                a = traced_rank(self.stages.whole(wl), Parallel(tp=tp), self.stages.config)
            else:  # the whole model is one rank's
                whole = self.stages.whole(wl)
                a = TracedRankAnalysis(**{f.name: getattr(whole, f.name) for f in fields(whole)}, full=whole)
            self.memo[wl] = replace(a, parallel=self.parallel)
        return self.memo[wl]

    def stage(self, s: int, micro: int) -> "TracedStageAnalyzer":
        return TracedStageAnalyzer(self.stages, self.parallel, s, micro)


class TracedStageAnalyzer(Analyzer):
    """One rank of traced stage ``s`` on one of ``micro`` micro-batches, for the sweeps: a workload of batch
    b is a rank's b sequences of a micro-batch (b·ep over the --ep ranks; the step b·ep·micro), as the hand
    models' StageAnalyzer."""

    def __init__(self, stages: TracedStages, parallel, s: int, micro: int):
        self.stages, self.parallel, self.s, self.micro, self.memo, self.full = stages, parallel, s, micro, {}, None
        self.expert_ranks = parallel.ep  # with --ep, the rank's share of what the micro-batch's tokens reach

    def __call__(self, wl):
        if wl not in self.memo:
            whole = replace(wl, batch=wl.batch * self.parallel.ep)  # the micro-batch over every --ep rank
            if self.full is None:  # the whole model's parameters: traced once (at the rank's first workload)
                self.full = self.stages.whole(wl)
            self.memo[wl] = self.stages.stage(whole, self.parallel, self.s, micro_batches=self.micro,
                                              batch=whole.batch * self.micro, full=self.full, merge=False)
        return self.memo[wl]


__all__ = ["TracedPipelineAnalyzer", "TracedStageAnalysis", "TracedStageAnalyzer", "TracedStages", "as_stage", "stage_cache", "stage_cut", "stage_weights", "tied_copies",
           "with_send"]
