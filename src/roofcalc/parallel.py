"""More than one GPU: one rank's kernels and the collectives between ranks, for tensor (--tp), expert
(--ep) and pipeline (--pp) parallelism and their combinations; the sweeps over them.

The plan is transformers' own ``base_model_tp_plan`` for the Llama-style families (and
Megatron-style serving's): q, k, v, gate and up projections column-parallel (each rank holds 1/N of
the heads and of the MLP width), o and down row-parallel (each rank multiplies its slice, then an
all-reduce sums the partial outputs), the embedding vocab-parallel (each rank looks up the rows it
holds, an all-reduce completes them; a tied embedding shares lm_head's shards, and transformers runs a
tied, scaled one, Gemma's, without that all-reduce) and lm_head column-parallel with an all-gather of
the logits.
Norms, rotary and residuals are replicated. KV heads are split; when there are fewer KV heads than
ranks each rank keeps one (replicated, as vLLM does). Routed experts (Mixtral, Qwen3-MoE) follow
transformers' ``moe_tp_experts``: every rank holds every expert, 1/N of its width (gate_up
column-parallel, down row-parallel), the router is replicated, and one all-reduce sums the experts'
combined output. Shared experts (DeepSeek's) split like an MLP with an all-reduce of their own, or, in the
serving engines' layout (``Workload.tp_layout == "serving"``: vLLM, SGLang, TensorRT-LLM), summed with the
routed experts' partial output under one all-reduce (:func:`one_moe_reduce`: not where --ep moves tokens in
all-to-alls); that layout splits Phi-3's heads as Llama's too (:func:`gathered`).

Collectives are kernels of kind ``collective``. ``message_bytes`` is the per-rank input buffer (what
NCCL's tests call the size of an all-reduce); the bytes a rank moves over its link follow the ring
algorithm NCCL's tests use for bus bandwidth: an all-reduce moves 2(n−1)/n of the message, an
all-gather (n−1) times the per-rank input.

Expert parallelism (``ep_kernels``): E/N routed experts a rank, attention data-parallel over B/N of
the sequences, all-to-all dispatch and combine; with --tp each of the N groups is T tensor-parallel
ranks. ``--ep-attention tp`` (``ep_tp_kernels``) splits attention by heads over the same N ranks
instead, every sequence on every rank, an all-reduce after the experts in place of the all-to-alls.
A traced model's --tp is ``roofcalc.trace.parallel``'s, by its config class's plan. Pipelines (``stage_kernels``, ``pipeline_roofline``): consecutive layers a stage, the step the
stages in turn plus the slowest once per further micro-batch. Ranks fill node after node; a
collective whose ranks span nodes runs on the network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .calculator import Analysis, Analyzer, Cost, Kernel, Parallel, Workload, analyze, experts_dims, gguf_tied
from .errors import RoofcalcError
from .shapes import ModelShape

TP_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2",  # separate q/k/v, gated MLP, one plan
               "mixtral", "qwen3_moe",  # the same attention; every expert split on its width (moe_tp_experts)
               "phi", "gpt_neox",  # a plain MLP (fc1 / dense_h_to_4h column-, fc2 / dense_4h_to_h row-parallel);
               # GPT-NeoX's fused query_key_value is laid out head by head, so a column split gives each rank whole heads
               # MLA: q and kv_b split by heads, the latent (kv_a) whole; shared experts split too. DeepSeek-V3's
               # plan had no attention entries through transformers 5.24 (every rank ran every head); 5.25 gives it
               # V2's, which is how vLLM and SGLang split MLA under tensor parallelism too
               "deepseek_v2", "deepseek_v3",
               # transformers has no plan for these two; vLLM's split (vllm/model_executor/models/gpt2.py: c_attn a
               # QKVParallelLinear, by heads; attn.c_proj and mlp.c_proj RowParallelLinear; c_fc ColumnParallelLinear;
               # wte a VocabParallelEmbedding; opt.py likewise for q/k/v_proj, out_proj, fc1, fc2 and embed_tokens;
               # the learned positions whole), Megatron-LM's split of GPT-2 (arXiv:1909.08053)
               "gpt2", "opt")
NO_TRANSFORMERS_PLAN = ("gpt2", "opt")  # split as vLLM splits them (above)


GATHERED_FAMILIES = ("phi3",)  # transformers' plan: fused qkv_proj and gate_up_proj colwise_gather_output,
# o_proj and down_proj rowwise_split_input (every rank gathers the fused outputs and runs every head)


def gathered(shape: ModelShape, wl: Workload | None = None) -> bool:
    """Whether a rank runs ``shape`` by transformers' gathered plan (Phi-3's: every head on every rank); the serving
    engines' layout (``wl.tp_layout``) splits its heads as Llama's (engines.Engine.tp_layout_source)."""
    return shape.family in GATHERED_FAMILIES and (wl is None or wl.tp_layout != "serving")


def shard(shape: ModelShape, tp: int, wl: Workload | None = None) -> ModelShape:
    """One tensor-parallel rank's shape: 1/tp of the heads, the KV heads, the MLP width and the vocab
    (Phi-3's gathered plan keeps every head and the whole MLP width; ``wl``: the step, whose layout says which)."""
    if tp == 1:
        return shape
    whole_heads = gathered(shape, wl)
    if not whole_heads and shape.family not in TP_FAMILIES + GATHERED_FAMILIES:
        raise RoofcalcError(f"roofcalc has no tensor-parallel plan for {shape.family} yet (it shards "
                            f"{', '.join(TP_FAMILIES + GATHERED_FAMILIES)})")
    moe = shape.moe
    # (the vocabulary need not divide: transformers 5.25's shards are uneven, "the last rank then holds a shorter
    # slice" (distributed/tensor_parallel.py), and vLLM pads it to a multiple of 64 first; a rank holds
    # ceil(V / N) rows, the largest share, vocab_share)
    checks = [] if whole_heads else [("num_attention_heads", shape.n_heads), ("intermediate_size", shape.d_ff)]
    if moe is not None and moe.d_expert != shape.d_ff:
        checks.append(("moe_intermediate_size", moe.d_expert))
    if moe is not None and moe.d_shared:
        checks.append(("the shared experts' width", moe.d_shared))
    for what, value in checks:
        if value % tp:
            raise RoofcalcError(f"--tp {tp} does not divide {what} {value}: each rank must hold a whole share")
    if whole_heads:
        return replace(shape, vocab_size=vocab_share(shape.vocab_size, tp))
    rank = replace(shape, d_ff=shape.d_ff // tp, vocab_size=vocab_share(shape.vocab_size, tp),
                   moe=None if moe is None else replace(moe, d_expert=moe.d_expert // tp, d_shared=moe.d_shared // tp))
    k = shape.n_kv_heads
    if k % tp and tp % k:
        raise RoofcalcError(f"--tp {tp} and num_key_value_heads {k}: one must divide the other (split the KV "
                            f"heads, or replicate each over tp / K ranks)")
    return replace(rank, n_heads=shape.n_heads // tp, n_kv_heads=max(1, k // tp))


def base_name(k: Kernel) -> str:
    """A kernel's module name without the kind of layer a sweep's unmerged rows carry (``o_proj[full]``)."""
    return k.name.split("[", 1)[0]


def link_bytes(op: str, message_bytes, group: int):
    """Bytes one rank sends over its link in a ring collective (integers, or numpy integer arrays of
    messages): an all-reduce 2(n−1)/n of its message, an all-gather n−1 times its input, an all-to-all
    (n−1)/n of it (uniform: that share goes to other ranks); a pipeline send all of it."""
    if op == "send":
        return message_bytes
    return {"all_reduce": 2 * (group - 1) * message_bytes // group,
            "all_gather": (group - 1) * message_bytes,
            "all_to_all": (group - 1) * message_bytes // group}[op]


class RankAnalyzer(Analyzer):
    """One rank's analysis at any workload, for the sweeps (``analyzer``): a hand model, exact at every
    point, so a sweep's corners differing from it is a bug, not a fit."""

    traced = False
    exact_batches = True

    def __init__(self, shape: ModelShape, parallel: "Parallel"):
        self.shape, self.parallel = shape, parallel

    kv_rows = 1  # sequences whose KV cache a rank holds, per sequence of the sweep's batch

    @property
    def batch_period(self) -> int:
        """Batches over which a step's costs repeat their pattern: --ep-attention tp's busiest rank runs
        ⌈B·k/N⌉ of the expert rows, a saw of period N/gcd(k, N) in B (1: linear in B)."""
        if not self.parallel.tp_attention or self.shape.moe is None:
            return 1
        return self.parallel.ep // math.gcd(self.shape.moe.top_k, self.parallel.ep)

    def analysis(self, wl: Workload, merge: bool) -> Analysis:
        return analyze_parallel(self.shape, wl, self.parallel, merge=merge)

    def __call__(self, wl: Workload) -> Analysis:
        """The sweep's rows: every kind of layer its own, so they are the same at every workload."""
        return self.analysis(wl, merge=False)

    def single(self, wl: Workload) -> Analysis:
        """The single step's own analysis (kinds of layer merged), which a sweep's corners must equal."""
        return self.analysis(wl, merge=True)

    def memory_grid(self, b, s, **workload_kw):
        """A rank's weights and KV cache at every (batch, context) of a sweep, exactly (a sliding
        window's cache stops growing at W): the weights do not change with the workload."""
        from .calculator import kv_cache_bytes

        a = self(Workload.decode(1, 2, **workload_kw))
        return a.weight_storage_bytes + kv_cache_bytes(a.shape, a.workload.kv_dtype, b * self.kv_rows, s)


class LocalBatchAnalyzer(RankAnalyzer):
    """One expert-parallel rank for the sweeps, addressed by the sequences its attention runs: a workload
    of batch b is the step of ``scale`` · b sequences over all ranks (``--ep``). The sweep probes and
    fits in that rank's own batch, where every cost is linear, and reports the whole step's batch."""

    @property
    def scale(self) -> int:
        return self.parallel.ep

    def analysis(self, wl: Workload, merge: bool) -> Analysis:
        return analyze_parallel(self.shape, replace(wl, batch=wl.batch * self.scale), self.parallel, merge=merge)


def rank_analyzer(shape: ModelShape, parallel: "Parallel") -> RankAnalyzer:
    """A sweep's analyzer of one rank of ``shape`` under ``parallel`` (no pipeline): addressed by its attention's
    sequences under --ep with data-parallel attention (LocalBatchAnalyzer), else by the step's."""
    return LocalBatchAnalyzer(shape, parallel) if parallel.ep > 1 and not parallel.tp_attention else \
        RankAnalyzer(shape, parallel)


def collective(name: str, op: str, message_bytes: int, group: int, count: int, scope: str, dims: str) -> Kernel:
    """A collective of ``group`` ranks on a per-rank input of ``message_bytes`` (it reads and writes HBM
    like a copy; the link carries ``link_bytes``)."""
    moved = link_bytes(op, message_bytes, group)
    out = group * message_bytes if op == "all_gather" else message_bytes
    return Kernel(name, "collective", scope, count, dims, Cost(act_read_bytes=message_bytes, act_write_bytes=out),
                  role=op, message_bytes=message_bytes, link_bytes=moved, group=group)


def tp_kernels(shape: ModelShape, wl: Workload, tp: int, merge: bool = True) -> list[Kernel]:
    """One rank's kernels in execution order, the collectives in place (``merge``: as :func:`analyze`)."""
    if tp > 1 and gathered(shape, wl):
        return gathered_tp_kernels(shape, wl, tp, merge)
    rank = analyze(shard(shape, tp, wl), wl, merge)
    if tp == 1:
        return list(rank.kernels)
    return with_tp_collectives(shape, wl, tp, rank.kernels)


def gathered_tp_kernels(shape: ModelShape, wl: Workload, tp: int, merge: bool = True) -> list[Kernel]:
    """Phi-3's plan in transformers: each rank computes 1/N of the fused qkv_proj and gate_up_proj
    outputs and all-gathers them (colwise_gather_output), so attention, its KV cache and act_mul run
    whole on every rank; o_proj and down_proj take their rank's slice of that input and 1/N of the
    weight, then all-reduce (rowwise_split_input). Embedding and lm_head are vocab-parallel as in the
    other plans."""
    return with_gathered_collectives(shape, wl, tp, analyze(shard(shape, tp), wl, merge).kernels)


def vocab_share(vocab: int, tp: int) -> int:
    """The rows of the vocabulary the rank the step waits for holds: ceil(V / N) (transformers' uneven shards;
    vLLM's padding to a multiple of 64 adds at most 63 rows a rank more)."""
    return -(-vocab // tp)


def with_gathered_collectives(shape: ModelShape, wl: Workload, tp: int, kernels) -> list[Kernel]:
    """A rank's kernels under the gathered plan (of the whole model, or of a pipeline stage), from those
    of the vocab-split shape: the fused projections cut to the rank's slice, each followed by its
    collective."""
    from .calculator import linear

    for what, value in (("num_attention_heads x head_dim (qkv_proj's output)", shape.q_dim + 2 * shape.kv_dim),
                        ("intermediate_size", shape.d_ff), ("hidden_size", shape.d_model)):
        if value % tp:
            raise RoofcalcError(f"--tp {tp} does not divide {what} {value}: each rank must hold a whole share")
    act, rows = wl.act_dtype, wl.tokens
    hidden = act.nbytes(rows * shape.d_model)
    out: list[Kernel] = []
    for k in kernels:
        if base_name(k) in (shape.name_of("qkv"), shape.name_of("gate_up"), shape.name_of("o"), shape.name_of("down")):
            n_in, n_out = k.sizes.k, k.sizes.n
            column = base_name(k) in (shape.name_of("qkv"), shape.name_of("gate_up"))
            part = linear(k.name, n_in, n_out // tp, shape, wl) if column else linear(k.name, n_in // tp, n_out, shape, wl)
            out.append(replace(k, cost=part.cost, params=part.params, param_bytes=part.param_bytes, dims=part.dims))
            if column:
                out.append(collective(f"{k.name}.all_gather", "all_gather", act.nbytes(rows * n_out // tp), tp, k.count,
                                      "layer", f"[{rows},{n_out // tp}]"))
            else:
                out.append(collective(f"{k.name}.all_reduce", "all_reduce", hidden, tp, k.count, "layer",
                                      f"[{rows},{shape.d_model}]"))
            continue
        out.append(k)
        out.extend(_vocab_collective(shape, wl, tp, k))
    return out


def with_tp_collectives(shape: ModelShape, wl: Workload, tp: int, kernels,
                        parallel: Parallel | None = None) -> list[Kernel]:
    """A rank's kernels (of the whole model, or of a pipeline stage) with the tensor-parallel
    collectives in place after the kernels that need them; ``parallel``: the step's split, where it is more than
    ``tp`` ranks (a MoE layer's reduction depends on it: :func:`shared_summed`)."""
    rows = wl.tokens
    hidden = wl.act_dtype.nbytes(rows * shape.d_model)
    down = shape.name_of("down") if shape.gated_mlp else shape.name_of("fc_out")  # fc2 in a plain MLP
    # the row-parallel kernels, each followed by an all-reduce of its partial outputs
    shared = f"shared_experts.{shape.name_of('down')}"
    reduced = {down, shared, shape.name_of("o")}
    # a serving engine sums the routed and the shared experts' partial outputs first and all-reduces the sum once
    # (Workload.tp_layout), after the add that sums them
    once = shared_summed(shape, wl, parallel)
    if once:
        reduced = (reduced - {shared}) | {"shared_experts.add"}
    out: list[Kernel] = []
    for k in kernels:
        out.append(k)
        if base_name(k) in reduced or (k.role == "combine" and not once):  # the experts' summed output: each rank
            out.append(collective(f"{k.name}.all_reduce", "all_reduce", hidden, tp, k.count, "layer",  # ran a slice
                                  f"[{rows},{shape.d_model}]"))
        else:
            out.extend(_vocab_collective(shape, wl, tp, k))
    return out


def _vocab_collective(shape: ModelShape, wl: Workload, tp: int, k: Kernel) -> list[Kernel]:
    """The collective after a vocab-parallel kernel: the embedding's all-reduce of its rows (each rank looks up
    the rows of its share of the vocabulary, as vLLM's VocabParallelEmbedding and transformers' plan do;
    transformers' tied, scaled embedding, Gemma's, shares lm_head's shards and runs without it, as
    tests/test_parallel.py sees on a real run), lm_head's all-gather of the logits; none after another kernel."""
    act, rows = wl.act_dtype, wl.tokens
    if k.name == shape.name_of("embed") and not (shape.tie_word_embeddings and shape.embed_scale):
        width = shape.embed_dim or shape.d_model  # OPT-350m's embedding is word_embed_proj_dim wide, before project_in
        return [collective("embed.all_reduce", "all_reduce", act.nbytes(rows * width), tp, 1, "model",
                           f"[{rows},{width}]")]
    if k.name == shape.name_of("lm_head"):
        n = vocab_share(shape.vocab_size, tp)
        logit_rows = rows if wl.logits_all or wl.phase == "decode" else wl.batch
        return [collective("lm_head.all_gather", "all_gather", act.nbytes(logit_rows * n), tp, 1, "model",
                           f"[{logit_rows},{n}]")]
    return []


def ep_kernels(shape: ModelShape, wl: Workload, ep: int, stride: int = 1, merge: bool = True) -> list[Kernel]:
    """One expert-parallel rank: E/ep routed experts, and attention and the dense layers for B/ep of the
    sequences (data-parallel attention, as DeepSeek-V3's own deployment and SGLang's run it). Each
    rank's tokens go to their experts' ranks in an all-to-all (dispatch) and come back in another
    (combine): k copies of each token, (ep−1)/ep of them to other ranks under uniform routing. With
    ``stride`` tensor-parallel ranks a group (``shape`` already one such rank's), the all-to-alls run
    between the ranks of the same tensor-parallel index, ``stride`` apart."""
    check_ep(shape, wl, ep)
    local = replace(wl, batch=wl.batch // ep)
    return with_ep_experts(shape, wl, ep, analyze(shape, local, merge).kernels, stride)


def check_ep(shape: ModelShape, wl: Workload, ep: int, what: str = "--batch") -> None:
    moe = shape.moe
    if moe is None:
        raise RoofcalcError(f"--ep splits routed experts, and {shape.family} has none")
    if moe.n_experts % ep:
        raise RoofcalcError(f"--ep {ep} does not divide the {moe.n_experts} routed experts: each rank must hold a "
                            f"whole share")
    if wl.batch % ep:
        raise RoofcalcError(f"{what} {wl.batch} does not split over --ep {ep}: each rank runs attention for B/{ep} "
                            f"of the sequences")


def with_ep_experts(shape: ModelShape, wl: Workload, ep: int, kernels, stride: int = 1, first: int = 0) -> list[Kernel]:
    """A rank's kernels for B/ep of ``wl``'s sequences (of the whole model, or of a pipeline stage) with
    its E/ep experts and the all-to-alls around them; those span global ranks ``first`` to
    ``first`` + ep·stride − 1."""
    from .calculator import touched_experts

    moe = shape.moe
    if ep == 1:
        return list(kernels)
    local = replace(wl, batch=wl.batch // ep)
    # the experts of this rank see tokens from every rank: the global batch decides which are reached
    touched = touched_experts(moe.n_experts, moe.top_k, wl.tokens, wl.experts) / ep
    message = local.act_dtype.nbytes(local.tokens * moe.top_k * shape.d_model)
    dims = f"[{local.tokens}x{moe.top_k},{shape.d_model}]"
    span = (first, first + ep * stride - 1)
    out: list[Kernel] = []
    for k in kernels:
        if k.role == "experts":
            per = k.param_bytes // moe.n_experts
            k = replace(k, params=k.params // ep, param_bytes=k.param_bytes // ep,
                        cost=replace(k.cost, weight_bytes=round(touched * per)),
                        dims=experts_dims(k.sizes, touched, moe.n_experts // ep, local=True),
                        moe=(k.moe[0], moe.n_experts // ep, *k.moe[2:]) if k.moe else ())
            if base_name(k) == "experts.gate_up_proj":
                out.append(replace(collective("experts.dispatch", "all_to_all", message, ep, k.count, "layer", dims),
                                   ranks=span))
        out.append(k)
        if k.role == "experts" and base_name(k) == "experts.down_proj":
            out.append(replace(collective("experts.combine_all_to_all", "all_to_all", message, ep, k.count, "layer",
                                          dims), ranks=span))
    return out


@dataclass(frozen=True)
class RankAnalysis(Analysis):
    """One tensor-parallel rank's step: its kernels (collectives included), parameters and memory."""

    parallel: Parallel = Parallel()
    full: Analysis | None = None  # the unsharded model (parameters, header)
    note_pipeline: tuple | None = None  # (Pipeline, the largest stage's memory) for a pipeline stage

    @property
    def params(self) -> int:  # the rank's own share; a multimodal model's encoders whole on every rank (as its
        return sum(k.params * k.count for k in self.kernels) + self.shape.encoder_params  # weight bytes count them)


def ep_tp_kernels(shape: ModelShape, wl: Workload, ep: int, merge: bool = True,
                  dense: bool = False, masked: bool = False) -> tuple[ModelShape, list[Kernel]]:
    """(the rank's shape, its kernels) for expert parallelism with tensor-parallel attention
    (``--ep-attention tp``, as vLLM runs Mixtral with expert parallelism and no data parallelism): every
    rank runs all B sequences; attention, the dense MLPs, the shared experts and the vocabulary split
    over the ``ep`` ranks as ``--tp ep`` splits them (an all-reduce after o_proj and down_proj); each
    rank holds E/ep routed experts at their whole width. The hidden states are whole on every rank
    after that all-reduce, so no token moves: each rank runs its experts on the tokens routed to them,
    combines their weighted outputs into a partial sum and one all-reduce completes it (the all-reduce
    tensor parallelism puts after the experts). The table is the rank the step waits for: of the R
    experts a step reaches (uniform routing, :func:`touched_experts`) it holds ⌈R/ep⌉, at most E/ep
    (the reached experts spread as evenly as they can: at batch 1 with k = 2 of 8 experts on 8 ranks,
    one whole expert), and ⌈T·k/ep⌉ of the T·k token-expert rows. ``dense`` (vLLM 0.2.6-0.2.7,
    engines.Engine.dense_experts): each of the rank's E/ep experts runs all T tokens, its output times each
    token's routing weight for it (zero where the token went elsewhere) and added into the partial sum: every
    rank holds and reads E/ep experts and runs T·E/ep rows, whatever the routing. ``masked`` (vLLM's and SGLang's
    fused MoE, engines.Engine.masked_experts): the rank's call writes every one of the T·k rows' outputs, the other
    ranks' zeroed, and its activation and weighted sum run over all of them: the experts kernels' GEMMs read the
    rank's ⌈T·k/ep⌉ rows (and their FLOPs are those), their writes, the activation and the combine's reads are
    all T·k rows' (fitting.moe_cost's ``pairs``, as the fitted forms count those kernels' measured rows)."""
    from .calculator import touched_experts

    moe = shape.moe
    if moe is None:
        raise RoofcalcError(f"--ep splits routed experts, and {shape.family} has none")
    if moe.n_experts % ep:
        raise RoofcalcError(f"--ep {ep} does not divide the {moe.n_experts} routed experts: each rank must hold a "
                            f"whole share")
    if dense and shape.family != "mixtral":  # PR #2090 changed mixtral.py alone; 0.3.0's fused MoE replaced it
        raise RoofcalcError(f"--engine vllm-v0 ran expert parallelism for Mixtral alone (vLLM PR #2090, v0.2.6: "
                            f"mixtral.py), not {shape.family}: use --engine vllm, or --tp")
    rank = shard(shape, ep, wl)
    rank = replace(rank, moe=replace(rank.moe, d_expert=moe.d_expert))  # the routed experts keep their width
    if shape.d_ff == moe.d_expert and "dense" not in rank.layer_mlp_types:  # F is the experts' width (Mixtral):
        rank = replace(rank, d_ff=shape.d_ff)  # whole, as they are
    reached = touched_experts(moe.n_experts, moe.top_k, wl.tokens, wl.experts)
    held = min(moe.n_experts // ep, math.ceil(reached / ep - 1e-9))  # the busiest rank's reached experts
    rows = wl.tokens * moe.top_k
    share = (-(-rows // ep), rows)  # its token-expert rows, of all of them
    out: list[Kernel] = []
    local, mult = moe.n_experts // ep, {}
    for k in analyze(rank, wl, merge).kernels:
        if dense and (k.role in ("experts", "combine") or base_name(k) == "experts.act_mul"):
            for op, ops in _dense_expert_ops(rank, wl, moe, k):  # each op once a local expert, every token
                mult[op.name] = local * ops
                out.append(op)
            continue
        if k.role == "experts":
            per = k.param_bytes // moe.n_experts
            sizes = replace(k.sizes, m=share[0])
            cost = replace(_share(k.cost, share), weight_bytes=held * per)
            if masked:  # every pair's output written, another rank's as zeros
                cost = replace(cost, act_write_bytes=k.cost.act_write_bytes)
            k = replace(k, params=k.params // ep, param_bytes=k.param_bytes // ep, sizes=sizes, cost=cost,
                        dims=experts_dims(sizes, held, moe.n_experts // ep, local=True),
                        moe=(k.moe[0], moe.n_experts // ep, *k.moe[2:]) if k.moe else ())
        elif base_name(k) == "experts.act_mul":
            k = k if masked else replace(k, cost=_share(k.cost, share))  # (masked: over every pair)
        elif k.role == "combine":  # its experts' outputs, into a partial sum over every token
            k = k if masked else replace(k, cost=replace(_share(k.cost, share), act_write_bytes=k.cost.act_write_bytes))
        out.append(k)
    if ep > 1:  # one all-reduce a layer after its experts' summed outputs (one GPU: none)
        out = with_tp_collectives(shape, wl, ep, out)
    return rank, [replace(k, count=k.count * mult[k.name]) if k.name in mult else k for k in out]


def _dense_expert_ops(rank: ModelShape, wl: Workload, moe, k: Kernel) -> list[tuple[Kernel, int]]:
    """A MoE layer's kernel as vLLM 0.2.6-0.2.7 ran it for each of a rank's experts on all T tokens (PR #2090,
    mixtral.py's MixtralMoE.forward and MixtralMLP), with how many ops each row stands for: w1 and w3 two
    GEMMs [T, D] x [D, F] (ReplicatedLinear, no fused gate_up), SiLU of w1's and its product with w3's, w2
    [T, F] x [F, D]; then ``selected_experts == idx``, the routing weights times that mask and their sum over
    the k picks (three ops on [T, k]: one row of three), and the output's ``mul_`` by that weight and ``add_``
    into the partial sum (two ops on [T, D]: one row of two, the all-reduce after it). Counts are per expert;
    the caller multiplies them by the rank's experts."""
    from .calculator import DTYPES, elementwise, linear

    t, d, f = wl.tokens, rank.d_model, moe.d_expert
    act = wl.act_dtype
    if k.role == "experts":
        per = k.param_bytes // moe.n_experts  # one expert's weights of this kernel
        if base_name(k) == "experts.gate_up_proj":
            return [(replace(linear(f"experts.{w}", d, f, rank, wl, rows=t, weight_bytes=per // 2,
                                    params=k.params // moe.n_experts // 2, role="experts"), count=k.count), 1)
                    for w in ("w1", "w3")]
        return [(replace(linear("experts.w2", f, d, rank, wl, rows=t, weight_bytes=per,
                                params=k.params // moe.n_experts, role="experts"), count=k.count), 1)]
    if k.role == "combine":
        f32 = DTYPES["fp32"]
        # eq (reads the [T, k] int64 picks, writes a mask), mul by the fp32 weights (reads both, writes fp32),
        # sum over k (reads [T, k], writes [T]): per op, a third of those bytes
        mask = replace(elementwise(t * moe.top_k, 1, reads=0, writes=0, act=f32),
                       act_read_bytes=(8 + 1 + 4 + 4) * t * moe.top_k // 3,
                       act_write_bytes=(1 + 4) * t * moe.top_k // 3 + 4 * t // 3)
        # mul_ (reads and writes [T, D]) and add_ (reads two, writes one): per op 1.5 reads and one write
        scaled = replace(elementwise(t * d, 1, reads=0, writes=1, act=act),
                         act_read_bytes=act.nbytes(3 * t * d) // 2 + 4 * t // 2)
        return [(Kernel("experts.route_weight", "elementwise", "layer", k.count, f"[{t},{moe.top_k}]", mask,
                        role="act"), 3),
                (Kernel("experts.combine", "elementwise", "layer", k.count, f"[{t},{d}]", scaled, role="combine"), 2)]
    # SiLU of w1's output, then times w3's (two ops: each reads and writes [T, F], the product reading two)
    silu = elementwise(t * f, 4, reads=1, writes=1, act=act)
    prod = elementwise(t * f, 1, reads=2, writes=1, act=act)
    return [(Kernel("experts.act", "elementwise", "layer", k.count, f"[{t},{f}]", silu, role="act"), 1),
            (Kernel("experts.mul", "elementwise", "layer", k.count, f"[{t},{f}]", prod, role="act_mul"), 1)]


def _share(c: Cost, frac: tuple[int, int]) -> Cost:
    """A kernel's cost on frac[0] of its frac[1] rows (its FLOPs and activations; weights and KV set apart)."""
    num, den = frac
    return replace(c, flops=c.flops * num // den, matmul_flops=c.matmul_flops * num // den,
                   act_read_bytes=c.act_read_bytes * num // den, act_write_bytes=c.act_write_bytes * num // den)


def analyze_parallel(shape: ModelShape, wl: Workload, parallel: Parallel, merge: bool = True) -> Analysis:
    """One rank's step (``merge``: kinds of layer merged where a kernel costs the same, as :func:`analyze`)."""
    if parallel.gpus == 1 and parallel.dense_experts and shape.moe is not None:  # vLLM 0.2.6's one GPU (an --ep
        # list's 1) ran its experts as its ranks did: each on every token, no collective
        rank, kernels = ep_tp_kernels(shape, wl, 1, merge, dense=True)
        return RankAnalysis(rank, wl, tuple(kernels), parallel=parallel, full=analyze(shape, wl))
    if parallel.gpus == 1:
        return analyze(shape, wl, merge)
    if parallel.tp_attention:
        rank, kernels = ep_tp_kernels(shape, wl, parallel.ep, merge, dense=parallel.dense_experts,
                                      masked=parallel.masked_experts)
        return RankAnalysis(rank, wl, tuple(kernels), parallel=parallel, full=analyze(shape, wl))
    if parallel.ep > 1:  # with tp: ep data-parallel groups of tp ranks; each expert at 1/tp of its width
        check_ep(shape, wl, parallel.ep)
        tp, local = parallel.tp, replace(wl, batch=wl.batch // parallel.ep)
        rank = shard(shape, tp, wl)
        kernels = ep_kernels(rank, wl, parallel.ep, stride=tp, merge=merge)
        if tp > 1:
            kernels = with_tp_collectives(shape, local, tp, kernels, parallel)
        return RankAnalysis(rank, local, tuple(kernels), parallel=parallel, full=analyze(shape, wl))
    return RankAnalysis(shard(shape, parallel.tp, wl), wl, tuple(tp_kernels(shape, wl, parallel.tp, merge)), parallel=parallel,
                        full=analyze(shape, wl))


ONE_REDUCE_WORDS = ("the routed and shared experts' partial outputs summed before one all-reduce, as vLLM, SGLang "
                    "and TensorRT-LLM run them (transformers' plan reduces each)")


def one_moe_reduce(wl: Workload, parallel: Parallel | None = None) -> bool:
    """Whether a MoE layer's shared and routed experts are summed before one all-reduce on ``parallel``'s ranks: in
    the serving engines' layout (Workload.tp_layout), but not where expert parallelism moves the tokens in
    all-to-alls (vLLM's FusedMoE.must_reduce_shared_expert_outputs: 'With EP and all2all kernels' the shared
    experts' output is reduced early)."""
    return wl.tp_layout == "serving" and not (parallel is not None and parallel.ep > 1 and not parallel.tp_attention)


def shared_summed(shape: ModelShape, wl: Workload, parallel: Parallel | None = None) -> bool:
    """Whether a rank of ``shape`` sums its MoE layers' shared and routed experts before one all-reduce."""
    return shape.moe is not None and bool(shape.moe.d_shared) and one_moe_reduce(wl, parallel)


def tp_plan_words(shape: ModelShape, wl: Workload | None = None, parallel: Parallel | None = None) -> str:
    """How a rank splits ``shape``'s family, in words (the rules are above): transformers' plan, or the serving
    engines' split where ``wl``'s layout takes it and it differs (``parallel``: the step's)."""
    once = wl is not None and shared_summed(shape, wl, parallel)
    if shape.family in GATHERED_FAMILIES and not gathered(shape, wl):
        plan = (f"the serving engines' split of {shape.family}, as Llama's (vLLM, SGLang and TensorRT-LLM run it so; "
                f"transformers' plan gathers every head on every rank): qkv_proj and gate_up_proj column-parallel "
                f"by heads and width, o_proj and down_proj row-parallel with an all-reduce each, ")
    elif shape.family in GATHERED_FAMILIES:
        plan = (f"transformers' tensor-parallel plan for {shape.family}: qkv_proj and gate_up_proj column-parallel "
                f"with their outputs all-gathered, so every head and its KV cache run on every rank; o_proj and "
                f"down_proj row-parallel on their slice of the input, an all-reduce each; ")
    elif shape.mla is not None:
        plan = ("transformers' tensor-parallel plan (DeepSeek-V3's from 5.25, as vLLM and SGLang split it): q and "
                "kv_b_proj column-parallel by heads, the cached latent whole on every rank, o_proj row-parallel with "
                "an all-reduce; gate/up column-parallel, down row-parallel with an all-reduce, the shared experts "
                + ("split likewise with no all-reduce of their own, " if once else "likewise, "))
    elif shape.family in NO_TRANSFORMERS_PLAN:
        plan = (f"vLLM's tensor-parallel split of {shape.family} (transformers has no plan for it; Megatron-LM's "
                f"split of GPT-2): attention by heads, {shape.name_of('o')} row-parallel with an all-reduce; "
                f"{shape.name_of('fc_in')} column-parallel, {shape.name_of('fc_out')} row-parallel with an all-reduce, "
                f"the learned positions whole, ")
    else:
        plan = ("transformers' tensor-parallel plan: q/k/v, gate/up column-parallel, o/down row-parallel with an "
                "all-reduce each, ")
    if shape.moe is not None:
        plan += ("every routed expert split on its width" + ("" if once else " with one all-reduce after them")
                 + " (transformers 5.24's rules; 5.25 keeps the experts in its expert-parallel plan), "
                 + (f"{ONE_REDUCE_WORDS}, " if once else "") + "the router whole, ")
    return plan + "vocab-parallel embedding and lm_head"


SWEPT_EP_SEQUENCES = "B/{ep} of each step's B sequences (the batch column counts all of them)"  # a sweep's rank


def ep_plan_words(shape: ModelShape, parallel: Parallel, batch: int, swept_batch: bool = False) -> str:
    """How --ep splits the experts and the sequences, in words; ``swept_batch``: the batch is a sweep's column."""
    ep, tp, n = parallel.ep, parallel.tp, shape.moe.n_experts
    if parallel.tp_attention:
        return (f"{n // ep} of the {n} routed experts at their whole width, and attention, the dense layers and "
                f"the vocabulary split over the {ep} ranks as --tp {ep} splits them, for every sequence "
                f"(tensor-parallel attention, an all-reduce after o_proj); no all-to-all: each rank runs its "
                + ("experts on every token, each output weighted by the routing (zero for the tokens routed "
                   "elsewhere: --engine vllm-v0)" if parallel.dense_experts else
                   "experts on the tokens routed to them, its fused MoE call writing and activating every routed "
                   "pair of the step (another rank's masked to zero, by the engine's expert map)"
                   if parallel.masked_experts else "experts on the tokens routed to them")
                + " and one all-reduce sums their outputs")
    return (f"{n // ep} of the {n} routed experts"
            + (f" (each at 1/{tp} of its width: --ep {ep} groups of --tp {tp} ranks)" if tp > 1 else "")
            + ", and attention and the dense layers for "
            + (SWEPT_EP_SEQUENCES.format(ep=ep) if swept_batch
               else f"{batch} of the {batch * ep} sequences")
            + " (data-parallel attention); all-to-all dispatch and combine around the experts")


__all__ = ["GATHERED_FAMILIES", "Parallel", "RankAnalysis", "TP_FAMILIES", "analyze_parallel",
           "collective", "ep_kernels", "ep_tp_kernels", "shard", "tp_kernels"]


# --------------------------------------------------------------------------- a sweep over --tp

@dataclass(frozen=True)
class TPPoint:
    """One size of the swept axis (--tp, --ep or --pp) at the same workload: its roofline (one rank's
    step; for --pp, the slowest stage on one micro-batch, with the pipeline it sets the pace of)."""

    tp: int  # the size along the swept axis
    result: "object"  # roofline.Roofline
    axis: str = "tp"

    @property
    def parallel(self) -> Parallel:
        return getattr(self.result.analysis, "parallel", None) or Parallel()

    @property
    def gpus(self) -> int:
        """Every GPU the step runs on: the swept size times the other axes' fixed sizes."""
        return self.parallel.gpus

    @property
    def step(self):
        return self.result.step

    @property
    def _pipeline(self):
        return getattr(self.result.analysis, "note_pipeline", None)

    @property
    def step_s(self) -> float:
        """The whole step: one rank's (tp, ep: all ranks run at once), or the pipeline's."""
        pipe = self._pipeline
        return pipe[0].step_s if pipe else self.step.times.predicted_s

    @property
    def comm_s(self) -> float:
        """The collectives' expected device time in one rank's step; a pipeline's on its step's path (every
        stage's collectives and send for the first micro-batch, the slowest stage's for each of the others)."""
        pipe = self._pipeline
        if pipe and pipe[0].stage_comm_s:
            return pipe[0].comm_s
        return sum(p.t_expected_s * p.kernel.count for p in self.step.placements if p.kernel.kind == "collective")

    @property
    def comm_share(self) -> float:
        """comm_s's share of the device time (a pipeline's on its step's path)."""
        pipe = self._pipeline
        device = pipe[0].device_s if pipe and pipe[0].stage_device_s else self.step.times.device_s
        return self.comm_s / device if device else 0.0

    @property
    def sequences(self) -> int:
        """The step's sequences over all ranks: an expert-parallel rank runs B/N of them, a stage one
        micro-batch."""
        a = self.result.analysis
        if self._pipeline:
            return a.batch
        return a.workload.batch * (1 if self.parallel.tp_attention else self.parallel.ep)

    @property
    def tokens_per_s(self) -> float:
        wl = self.result.analysis.workload
        per_sequence = 1 if wl.phase == "decode" else wl.query_tokens
        return self.sequences * per_sequence / self.step_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s / self.gpus

    @property
    def memory_bytes(self) -> int:
        """One GPU's weights and KV cache (the largest stage's, for --pp)."""
        pipe = self._pipeline
        return pipe[1] if pipe else self.result.analysis.memory_bytes

    @property
    def fits(self) -> bool | None:
        cap = self.result.capacity_bytes
        return None if cap is None else self.memory_bytes <= cap


def stops_paying_at(rates, min_gain: float) -> int | None:
    """The first k of a ladder of sizes whose step up to k + 1 raises ``rates`` (tokens/s, a step's speed) by less
    than ``min_gain``, unless a larger size makes up for it: n steps up from k, (1 + min_gain)^n times the rate (a
    size that dips does not stop scaling that pays again past it; steps that each gain a little do not add up to
    one that pays); None where none stops. The --tp/--pp/--ep comparison's rule, and the doubling verdict's."""
    for k in range(len(rates) - 1):
        if rates[k + 1] / rates[k] - 1 < min_gain and all(rates[k + n] / rates[k] < (1 + min_gain) ** n
                                                          for n in range(2, len(rates) - k)):
            return k
    return None


@dataclass(frozen=True)
class TPSweep:
    points: tuple[TPPoint, ...]
    min_gain: float
    axis: str = "tp"
    base: Parallel = Parallel()  # the other axes' fixed sizes

    @property
    def fewest_fitting(self) -> int | None:
        """The fewest GPUs (of those swept) on which a rank's weights and KV cache fit."""
        return next((p.gpus for p in self.points if p.fits), None)

    @property
    def paying_from(self) -> int:
        """The index of the point the verdict on scaling starts from: the fewest GPUs that fit (a size that does
        not fit is no step to compare against), the first point where none fits or the capacity is unknown."""
        return next((i for i, p in enumerate(self.points) if p.fits), 0)

    @property
    def stops_paying(self) -> tuple[int, float] | None:
        """(size, gain) at the first step up, from the fewest GPUs that fit (paying_from), where the step gets less
        than min_gain faster, unless a larger size swept makes up for it (stops_paying_at, over the steps' speeds)."""
        points = self.points[self.paying_from:]
        k = stops_paying_at([1 / p.step_s for p in points], self.min_gain)
        return None if k is None else (points[k + 1].tp, points[k].step_s / points[k + 1].step_s - 1)

    def _repr_html_(self) -> str:  # a notebook shows the sizes compared as a table (roofcalc.frames)
        from .frames import repr_html

        return repr_html(self)


def tp_sweep(shape: ModelShape, wl: Workload, tps, hardware, *, min_gain: float = 0.10, axis: str = "tp",
             micro_batches: int | None = None, base: Parallel = Parallel(), traced=None, **roofline_kw) -> TPSweep:
    """The same step at every size in ``tps`` along ``axis`` ("tp", "ep" or "pp"), the other axes at
    ``base``'s sizes: one rank's roofline each (with a pipeline, the slowest stage's on
    ``micro_batches`` micro-batches, default :func:`default_micro_batches`). ``traced``: a traced
    model's step (its :class:`~roofcalc.trace.TracedAnalysis`, transformers' config and its
    :class:`~roofcalc.trace.pipeline.TracedStages`), split over each --tp by its config class's plan
    and over each --pp by its layers."""
    from .roofline import roofline

    points = []
    for n in sorted(set(tps)):
        par = replace(base, **{axis: n})
        if par.pp > 1:
            micro = micro_batches or default_micro_batches(wl.batch, par)
            r = pipeline_roofline(shape, wl, par.pp, micro, hardware, tp=par.tp, ep=par.ep,
                                  traced=traced[2] if traced is not None else None, **roofline_kw)
        elif traced is not None:
            from .trace.parallel import traced_rank

            one, config, layouts = traced
            rank = layouts.expert_rank(wl, par) if par.ep > 1 else traced_rank(one, par, config) if par.tp > 1 else one
            r = roofline(rank, hardware, **roofline_kw)
        else:
            r = roofline(analyze_parallel(shape, wl, par), hardware, **roofline_kw)
        points.append(TPPoint(n, r, axis))
    return TPSweep(tuple(points), min_gain, axis, base)


# --------------------------------------------------------------------------- pipeline parallelism

def stage_layers(n_layers: int, pp: int) -> list[tuple[int, int]]:
    """[start, end) of each stage's layers: as even as possible, the first stages one more."""
    if pp > n_layers:
        raise RoofcalcError(f"--pp {pp} is more stages than the model's {n_layers} layers")
    base, extra = divmod(n_layers, pp)
    out, start = [], 0
    for s in range(pp):
        end = start + base + (1 if s < extra else 0)
        out.append((start, end))
        start = end
    return out


def stage_kernels(shape: ModelShape, wl: Workload, pp: int, stage: int, tp: int = 1,
                  ep: int = 1, merge: bool = True) -> tuple[ModelShape, list[Kernel]]:
    """(the stage's shape, its kernels at ``wl``): its layers; the embedding on the first stage, the final
    norm and lm_head on the last; a send of the hidden states [B·T, D] to the next stage. With ``tp``,
    one tensor-parallel rank of the stage: its shards and collectives, and its send to the same rank of
    the next stage. With ``ep``, one expert-parallel rank of it: B/ep of ``wl``'s sequences, E/ep
    experts and the all-to-alls (``tp`` ranks in each of its ``ep`` groups). Stage s holds global ranks
    s·g to s·g + g − 1 (g = tp·ep): a send leaves the node when the stage's first rank and the next
    stage's last sit on different nodes."""
    from .calculator import layer_kernels, model_head

    g = tp * ep
    if g > 1:
        rank = shard(shape, tp, wl)
        local = wl
        if ep > 1:
            check_ep(shape, wl, ep, "a micro-batch of")
            local = replace(wl, batch=wl.batch // ep)
        sub, kernels = stage_kernels(rank, local, pp, stage, merge=merge)
        kernels = [replace(k, ranks=(stage * g, (stage + 2) * g - 1)) if k.role == "send" else k for k in kernels]
        kernels = with_ep_experts(rank, wl, ep, kernels, stride=tp, first=stage * g)
        if tp == 1:
            return sub, kernels
        if gathered(shape, wl):
            return sub, with_gathered_collectives(shape, local, tp, kernels)
        return sub, with_tp_collectives(shape, local, tp, kernels, Parallel(tp, pp, ep))
    start, end = stage_layers(shape.n_layers, pp)[stage]
    sub = replace(shape, n_layers=end - start, layer_types=shape.layer_types[start:end],
                  mlp_types=shape.mlp_types[start:end] if shape.mlp_types else ())
    before, after = model_head(shape, wl)
    kernels = [k for k, _, _ in layer_kernels(sub, wl, merge)]
    if stage == 0:
        kernels = before + kernels
    if stage == pp - 1:
        # (a GGUF file that holds the tied table twice gives lm_head its own already: calculator.gguf_tied)
        copy = pp > 1 and shape.tie_word_embeddings and (not wl.gguf or gguf_tied(shape, wl))
        kernels = kernels + (tied_head_copy(shape, wl, after) if copy else after)
    else:
        kernels.append(send_kernel(wl, shape.d_model, stage))
    return sub, kernels


def send_kernel(wl: Workload, d_model: int, stage: int) -> Kernel:
    """Stage ``stage``'s send of its hidden states [B·T, D] to the next stage."""
    message = wl.act_dtype.nbytes(wl.tokens * d_model)
    return Kernel("pp.send", "collective", "model", 1, f"[{wl.tokens},{d_model}]", Cost(act_read_bytes=message),
                  role="send", message_bytes=message, link_bytes=message, group=2, ranks=(stage, stage + 1))


def tied_head_copy(shape: ModelShape, wl: Workload, after: list[Kernel]) -> list[Kernel]:
    """The last stage's kernels, its tied lm_head owning a copy of the embedding table: the first stage
    holds the table for the embedding and the last one for the logits (vLLM 0.24's LlamaModel builds
    ``embed_tokens`` on the first pipeline rank, and on the last too where the embeddings are tied; its
    ``lm_head`` then ties to it)."""
    width = shape.embed_dim or shape.d_model
    table = shape.vocab_size * width
    return [replace(k, params=k.params + table, param_bytes=k.param_bytes + wl.table_bytes(shape, table, output=True))
            if k.name == shape.name_of("lm_head") else k for k in after]


@dataclass(frozen=True)
class StageFields:
    """What a pipeline stage's analysis adds to its rank's (hand-modelled or traced: StageAnalysis,
    trace.pipeline.TracedStageAnalysis), put after the rank's fields."""

    stage: int = 0
    layers: tuple[int, int] = (0, 0)
    micro_batches: int = 1
    batch: int = 1  # the whole step's sequences (over every expert-parallel rank)

    @property
    def cached_sequences(self) -> int:
        """A stage holds the cache of its ranks' share of every sequence, not one micro-batch's."""
        return self.batch // self.parallel.ep


@dataclass(frozen=True)
class StageAnalysis(StageFields, RankAnalysis):
    """One pipeline stage on one micro-batch; its memory holds the KV cache of every sequence."""

    @property
    def memory_bytes(self) -> int:
        from .calculator import kv_cache_bytes

        w = self.workload
        return self.weight_storage_bytes + kv_cache_bytes(self.shape, w.kv_dtype, self.cached_sequences, w.kv_len)


def pipeline_step_s(stage_s, micro_batches: int):
    """The pipeline's step from each stage's time on one micro-batch: the first micro-batch through
    every stage, then one slowest-stage time for each of the others, Σ stages + (M − 1) · the slowest.
    Scalars (one step) or numpy arrays of one shape (a sweep's grids, point by point)."""
    from functools import reduce

    from .predict import _maximum

    return sum(stage_s) + (micro_batches - 1) * reduce(_maximum, stage_s)


def stage_times(t):
    """A pipeline stage's (expected, lower, upper) time on its micro-batch without the engine's host time the
    device waits for (StepTimes.serial_s), which the pipeline pays once a step (pipeline_host); numbers or a
    sweep's arrays."""
    t = replace(t, serial_s=0.0, serial_upper_s=0.0)
    return t.predicted_s, t.predicted_lower_s, t.predicted_upper_s


def pipeline_host(model, sequences, gpus: int, band: tuple = ()):
    """The engine's host time the device waits for (EngineHost, overlap False), once a pipeline step for all
    its sequences: its scheduler and sampler run once for the step, not once a stage. (expected, lower, upper)."""
    import math

    e = getattr(model, "engine_host", None)
    if e is None or not e.waited:
        return 0.0, 0.0, 0.0
    s = e.seconds(sequences, gpus=gpus)
    if band:
        return s, s * math.exp(-band[0]), s * math.exp(band[1])
    return s, 0.0, e.seconds(sequences, True, gpus)


@dataclass(frozen=True)
class Pipeline:
    """Every stage's step on a micro-batch, and the whole step they make."""

    stage_s: tuple[float, ...]  # each stage's predicted time for one micro-batch (without the engine's host time)
    micro_batches: int
    slowest: int
    host_s: float = 0.0  # the engine's host time the device waits for, once a step (pipeline_host)
    stage_comm_s: tuple = ()  # each stage's collectives and send on one micro-batch (expected device time)
    stage_device_s: tuple = ()  # each stage's device time on one micro-batch

    def _on_path(self, per_stage: tuple) -> float:
        """A per-stage quantity on the step's path, as step_s takes the stages: every stage's for the first
        micro-batch, then the slowest stage's for each of the others (0 where none is kept)."""
        return sum(per_stage) + (self.micro_batches - 1) * per_stage[self.slowest] if per_stage else 0.0

    @property
    def comm_s(self) -> float:
        """The collectives and sends on the step's path."""
        return self._on_path(self.stage_comm_s)

    @property
    def device_s(self) -> float:
        """The device time on the step's path."""
        return self._on_path(self.stage_device_s)

    @property
    def step_s(self) -> float:
        """The first micro-batch through every stage, then one slowest-stage time for each of the others, then
        the engine's host time."""
        return pipeline_step_s(self.stage_s, self.micro_batches) + self.host_s

    @property
    def bubble(self) -> float:
        """The share of the stages' time spent idle."""
        busy = self.micro_batches * sum(self.stage_s)
        return 1 - busy / (len(self.stage_s) * self.step_s)


def pipeline_roofline(shape: ModelShape, wl: Workload, pp: int, micro_batches: int, hardware, *, tp: int = 1,
                      ep: int = 1, traced=None, **roofline_kw):
    """The slowest stage's roofline on one micro-batch, with the pipeline it sets the pace of (each stage
    ``tp`` · ``ep`` ranks: one rank's table). ``traced``: a traced model's stages
    (:class:`roofcalc.trace.pipeline.TracedStages`) in place of the hand model's."""
    from .roofline import roofline

    if wl.batch % micro_batches:
        raise RoofcalcError(f"--batch {wl.batch} does not split into {micro_batches} micro-batches")
    micro = replace(wl, batch=wl.batch // micro_batches)
    par = Parallel(tp=tp, pp=pp, ep=ep)
    spans = stage_layers(shape.n_layers, pp)  # more stages than layers: refused before tracing
    full = analyze(shape, wl) if traced is None else traced.whole(wl)
    results = []
    for s in range(pp):
        if traced is not None:
            a = traced.stage(micro, par, s, micro_batches=micro_batches, batch=wl.batch, full=full)
        else:
            sub, kernels = stage_kernels(shape, micro, pp, s, tp, ep)
            a = StageAnalysis(sub, replace(micro, batch=micro.batch // ep), tuple(kernels), parallel=par, full=full,
                              stage=s, layers=spans[s], micro_batches=micro_batches, batch=wl.batch)
        results.append(roofline(a, hardware, **roofline_kw))
    times = tuple(stage_times(r.step.times)[0] for r in results)
    slowest = max(range(pp), key=lambda i: times[i])
    r = results[slowest]
    comm = tuple(sum(p.t_expected_s * p.kernel.count for p in x.step.placements if p.kernel.kind == "collective")
                 for x in results)
    pipe = Pipeline(times, micro_batches, slowest, pipeline_host(r.model, wl.batch, par.gpus)[0], comm,
                    tuple(x.step.times.device_s for x in results))
    memory = max(x.analysis.memory_bytes for x in results)
    return replace(r, analysis=replace(r.analysis, note_pipeline=(pipe, memory)))


# --------------------------------------------------------------------------- a batch x context sweep over a pipeline

class StageAnalyzer(RankAnalyzer):
    """One rank of pipeline stage ``stage`` on one micro-batch, for the sweeps: a workload of batch b is
    one of ``micro`` micro-batches of a step of b·micro sequences (whose KV cache the stage holds)."""

    def __init__(self, shape: ModelShape, parallel: Parallel, stage: int, micro: int):
        super().__init__(shape, parallel)
        self.stage, self.micro = stage, micro
        self.kv_rows = micro  # the stage holds the cache of every micro-batch

    def analysis(self, wl: Workload, merge: bool) -> Analysis:
        pp, tp, ep = self.parallel.pp, self.parallel.tp, self.parallel.ep
        micro = replace(wl, batch=wl.batch * ep)  # with --ep, b is a rank's share of the micro-batch
        sub, kernels = stage_kernels(self.shape, micro, pp, self.stage, tp, ep, merge=merge)
        return StageAnalysis(sub, wl, tuple(kernels), parallel=self.parallel, stage=self.stage,
                             layers=stage_layers(self.shape.n_layers, pp)[self.stage], micro_batches=self.micro,
                             batch=micro.batch * self.micro)


class PipelineAnalyzer(RankAnalyzer):
    """A sweep over a pipeline (``--pp``, with ``--tp`` inside each stage): called with a workload it
    gives one tensor-parallel rank of the whole model (the sweep's header); :meth:`micro` says how many
    micro-batches a step of B sequences is cut into, as the single step does."""

    def __init__(self, shape: ModelShape, parallel: Parallel, micro_batches: int | None = None):
        super().__init__(shape, parallel)
        self.micro_batches = micro_batches
        stage_layers(shape.n_layers, parallel.pp)  # more stages than layers: refused before sweeping

    def __call__(self, wl: Workload) -> Analysis:
        tp, ep = self.parallel.tp, self.parallel.ep
        if ep > 1:  # the header's rank: b of the step's ep·b sequences
            a = analyze_parallel(self.shape, replace(wl, batch=wl.batch * ep), Parallel(tp, ep=ep))
            return replace(a, parallel=self.parallel)
        return RankAnalysis(shard(self.shape, tp, wl), wl, tuple(tp_kernels(self.shape, wl, tp)), parallel=self.parallel,
                            full=analyze(self.shape, wl))

    def stage(self, s: int, micro: int) -> StageAnalyzer:
        """Stage ``s``'s analyzer, each workload one of ``micro`` micro-batches."""
        return StageAnalyzer(self.shape, self.parallel, s, micro)

    def describe(self) -> str:
        """The sweep header's line: what each row's numbers are."""
        pp, m = self.parallel.pp, self.micro_batches
        spans = ", ".join(f"{a}-{b - 1}" for a, b in stage_layers(self.shape.n_layers, pp))
        micro = f"{m} micro-batches" if m else f"{pp} micro-batches where {pp} divides the batch, else 1"
        return (f"pipeline  --pp {pp} stages (layers {spans}), {micro}: each row's step is the whole pipeline's, "
                f"the stages in turn + (M - 1) x the slowest (its floor and upper end alike); its FLOPs, bytes and "
                f"bound are the slowest stage's on one micro-batch, its memory the largest stage's; no batch "
                f"verdicts (the pipeline's step is not linear in the batch)")

    def micro(self, batch: int) -> int:
        """Micro-batches of a step of ``batch`` sequences: --micro-batches, else the stages where each
        micro-batch then splits over --ep, else 1 (the single step's rule, :func:`default_micro_batches`)."""
        m = self.micro_batches or default_micro_batches(batch, self.parallel)
        if batch % m:
            raise RoofcalcError(f"--batch {batch} does not split into {m} micro-batches")
        if (batch // m) % self.parallel.ep:
            raise RoofcalcError(f"a micro-batch of {batch // m} sequences does not split over --ep "
                                f"{self.parallel.ep}: each rank runs attention for B/{self.parallel.ep} of them")
        return m


def default_micro_batches(batch: int, parallel: Parallel) -> int:
    """--pp stages' worth of micro-batches when the batch splits into them (over --ep ranks too), else 1."""
    pp = parallel.pp
    return pp if batch % (pp * parallel.ep) == 0 else 1
