"""Roofline arithmetic: pure math, no I/O.

attainable(AI) = min(P, B·AI)  (Williams, Waterman & Patterson, CACM 2009)

Per kernel: t_compute = FLOPs / P, t_memory = bytes / B, t_floor = max of the two; a collective's
memory side is its link where that is slower. :func:`kernel_term` is that rule, once, for a single
step (scalars) and every sweep (numpy arrays). What a kernel and a step are expected to take, and
what bounds them, is the one step model's (predict.py): this module places kernels on a roof and
asks it. :func:`device` resolves the roofs, efficiencies and capacity once for both. Verdicts use the
measured roof when there is one (only it says what distance is yours), else the nominal roof.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Mapping, NamedTuple

from .calculator import EAGER_ACTIVATION_OPS, Analysis, AttentionSizes, Cost, Kernel
from .errors import RoofcalcError
from .families import FAMILIES
from .hardware import Hardware
from .predict import (MOE_BASE, MOE_FUSED, KernelModel, StepTimes, _maximum, default_model, every_pair_words,
                      form_source, kernel_class, moe_db_read, step_times)

# The worked example: a GEMM should measure 1.2-2x its floor, "above 3x the kernel has a problem"; a
# norm at 100x its floor is no problem, it is the cost of running a kernel at all. One rule: a measured
# kernel is flagged above 3x the least a real kernel takes, its floor or its fixed cost if that is larger.
FLAG_MULTIPLE = 3.0
# The other side: a measured time under 0.9x its floor on the roof in use ran faster than that roof allows (10 %
# for the timer's and the roof's own noise): on the datasheet roof the figure is wrong (its unit, per step or per
# kernel), on a measured roof the measurement of the roof is low.
FASTER_THAN_FLOOR = 0.9

# GPU kernel launches per kernel instance under each implementation profile, by kernel role.
#
# hf-eager: transformers' eager PyTorch modules, one launch per ATen op that computes (views and
# metadata ops launch nothing). Counted op by op on transformers 5.24's decode step, per family;
# tests/test_oracle.py checks every family's layer against a real one (TorchDispatchMode, the
# difference of a 3-layer and a 2-layer model, 16-bit and fp32). Entries are (16-bit, fp32):
# casts to and from fp32 are no-ops in an fp32 model.
#   RMSNorm: to(fp32), pow, mean, add eps, rsqrt, mul, to(dtype), mul weight = (8, 6); Gemma's
#     (1 + weight) adds a cast and an add: (10, 7). LayerNorm: native_layer_norm = 1.
#   rotary: x·cos, neg, cat (rotate_half), ·sin, add, for q and for k = 10; a partial rotary
#     (NeoX, Phi; Phi-3 splits too) concatenates the rotated and the passed dims back: 12;
#     DeepSeek: V2's complex-number form (6, 2): casts to fp32 and back, and a multiply each (its complex
#     views launch nothing); V3's interleaved form 14.
#   the cache update: cat K, cat V = 2. attention: one SDPA = 1 (one fused kernel, as a GPU runs it;
#     a CPU may run its math fallback's ops instead, which the counts leave out); OPT scales q first: 2;
#     Gemma 2 runs eager attention (repeat_kv clones, bmm, scale, soft-cap ÷ tanh ×, mask add, softmax,
#     bmm): (12, 10); DeepSeek's latent expansion, its concatenations and one SDPA: 7 (its new_empty
#     allocates: no launch).
#   SiLU × up = 2; a plain GELU 1, but gelu_new is a Python formula of 8 ops; learned positions:
#     gather + add = 2; logit soft-capping 3; every linear, add, gather = 1.
#   MoE routers: Mixtral (6, 5), Qwen3-MoE (5, 3), DeepSeek-V2 (5, 4), DeepSeek-V3 (15, 14), and where
#     norm_topk_prob renormalizes the top-k weights 2 more (Qwen3-MoE) or 3 (DeepSeek-V3, its default); the
#     experts as transformers 5 runs them by default (grouped_mm), whatever the batch: 8 ops to sort
#     the (token, expert) pairs, gather their rows, count them per expert and run the gate/up grouped
#     matmul; 2 (SiLU, × up); (7, 6) for the down grouped matmul, the routing weights and the sum back
#     into the tokens (6 in Qwen3-MoE). (The per-expert loop, experts_implementation="eager", is
#     not the default.)
# fused: what serving engines (vLLM, TensorRT-LLM) run: one GEMM for q/k/v, one for gate/up,
#   residual adds fused into the following norm, SiLU×up one kernel, rotary one kernel, one grouped
#   GEMM per expert projection.
# cuda-graph: the fused kernels replayed from one CUDA graph: the launch cost is paid once per step (where the
#   engine replays it: llama.cpp's for a one-token step alone, predict.EngineHost.graphed).
HF_EAGER = {"embed": 1, "pos_embed": 2, "rms_norm": (8, 6), "layer_norm": 1, "rotary": 10, "kv_cache_write": 2,
            "attention": 1, "act_mul": 2, "act": 1, "softcap": 3, "combine": 0, "attention_scores": 5}
# attention_scores (--attention unfused): eager_attention_forward's ops after QKᵀ (attention's one): × scaling,
# + mask, softmax, .to(dtype), PV; under fused / cuda-graph llama.cpp's after K·Q: soft_max_ext, the fp32 → fp16
# copy of its output, PV
# A family's own counts (Gemma's RMSNorm, Phi-3's rotary and mask, the MoE routers...) are in its
# record (roofcalc.families, ``eager`` and ``eager_experts``).
HF_EAGER_EXPERTS = {"experts.gate_up_proj": 8, "experts.down_proj": (7, 6)}  # a MoE layer's grouped experts
HF_EAGER_ACTIVATION = EAGER_ACTIVATION_OPS  # HF activations implemented as a formula of eager ops
FUSED = {"embed": 1, "pos_embed": 1, "rms_norm": 1, "layer_norm": 1, "rotary": 1, "kv_cache_write": 1, "attention": 1,
         "act_mul": 1, "act": 1, "softcap": 1, "residual": 0, "linear": 1, "router": 1, "experts": 1, "combine": 1,
         "rider": 0, "attention_scores": 3}  # rider: a traced op fused into the kernel before it (the mul of SiLU-and-mul: trace.group)
# fused q/k/v and gate/up GEMMs: the k, v and up projections ride on the q and gate launches (a traced
# model's too, by the projection's own name: self_attn.k_proj, mlp.up_proj); Qwen3.5's gated delta net's z and a
# projections on its qkv and b ones (vLLM's and SGLang's MergedColumnParallelLinear of [k, k, v, v] and [HV, HV]:
# vllm model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py, sglang srt/models/qwen3_5.py)
FUSED_RIDERS = {"k_proj", "v_proj", "up_proj", "shared_experts.up_proj", "in_proj_z", "in_proj_a"}
IMPLS = ("hf-eager", "fused", "cuda-graph")


def weight_format(kernel: Kernel, weight_dtype) -> str:
    """'int8' / 'int4' for a kernel whose weights are stored in that integer format and dequantized
    on the fly (the decoder layers' linears and experts, OPT's project_in/out; likewise mxfp4, and nvfp4 where
    it runs W4A16), 'fp8-b128' for fp8 weights in 128 x 128 blocks (a GEMM of its own where an engine's tables
    measured one), else '' (NVFP4 W4A4 GEMMs run in fp4, the compute dtype's own); 'float' for a decoder linear
    kept in 16 bits by a format of the routed experts alone whose GEMMs compute in fp8 or fp4 (an NVFP4 checkpoint
    that leaves its attention in bf16): it computes at the 16-bit peak (kernel_term), in the 16-bit GEMM form."""
    if weight_dtype.experts_only and weight_dtype.computes and kernel.role == "linear" and kernel.kind == "matmul" \
            and kernel.scope == "layer":
        return "float"  # a 16-bit linear beside experts computing in fp8 or fp4: at the 16-bit peak (kernel_term)
    if not (weight_dtype.quantized or weight_dtype.block) or kernel.role not in ("linear", "experts") or \
            weight_dtype.experts_only and kernel.role != "experts" or weight_dtype.quantized and weight_dtype.computes:
        return ""
    return weight_dtype.name if kernel.scope == "layer" or kernel.name.startswith("project_") else ""


def _pick(entry, act_dtype: str) -> int:
    return entry if isinstance(entry, int) else entry[act_dtype == "fp32"]


def launches(kernel: Kernel, impl: str, act_dtype: str = "fp16", shape=None) -> int:
    """GPU kernel launches (eager ops under hf-eager) one instance of ``kernel`` costs under ``impl``
    (cuda-graph: the same kernels, replayed from one graph: the host pays one replay a step).
    ``shape`` (the model's :class:`ModelShape`) selects its family's eager counts."""
    base = kernel.name.split("[")[0]
    role = kernel.role or base
    if impl == "hf-eager" and kernel.launches:  # traced: the ops transformers ran
        return kernel.launches
    if impl == "hf-eager":
        record = FAMILIES.get(shape.family) if shape is not None else None
        family = record.eager_counts if record is not None else {}
        if role == "experts":
            return _pick(dict(record.eager_experts if record else ()).get(base, HF_EAGER_EXPERTS.get(base, 1)),
                         act_dtype)
        if role == "act" and shape is not None and shape.hf_activation in HF_EAGER_ACTIVATION:
            return HF_EAGER_ACTIVATION[shape.hf_activation]
        count = _pick(family.get(role, HF_EAGER.get(role, 1)), act_dtype)
        if role == "router" and shape is not None and shape.moe is not None:
            count += shape.moe.router_extra_ops  # norm_topk_prob's renormalization, V3's group mask copy
        return count
    if impl in ("fused", "cuda-graph"):
        if base in FUSED_RIDERS or (kernel.launches and base.rsplit(".", 1)[-1] in FUSED_RIDERS):
            return 0
        return FUSED.get(role, 1)
    raise RoofcalcError(f"unknown --impl '{impl}'; use {', '.join(IMPLS)}")




@dataclass(frozen=True)
class Roof:
    bandwidth_bytes_per_s: float
    peak_flop_per_s: float
    link_bytes_per_s: float | None = None  # one direction of one GPU's link to its peers (collectives)
    gpus_per_node: int | None = None  # a collective over more ranks than this crosses the network
    network_bytes_per_s: float | None = None  # one direction of one GPU's share of the network
    # the compute peak over the 16-bit one (fp8, fp4 compute; else 1): a matmul whose weights stay 16-bit while
    # the format's other GEMMs compute in fp8 or fp4 (weight_format "float") computes at the 16-bit peak
    float_ratio: float = 1.0

    @property
    def ridge(self) -> float:
        """FLOP/byte where the slope meets the flat roof."""
        return self.peak_flop_per_s / self.bandwidth_bytes_per_s

    def attainable(self, intensity: float) -> float:
        return min(self.peak_flop_per_s, self.bandwidth_bytes_per_s * intensity)

    def hop(self, group: int, ranks: tuple[int, int] = ()) -> str:
        """Where a collective of ``group`` ranks runs: "link" inside a node, "network" across nodes. One
        that spans ``ranks`` (first, last global rank: a pipeline stage's sends, an all-to-all between
        tensor-parallel groups) leaves the node when those two sit on different nodes (ranks fill node
        after node)."""
        node = self.gpus_per_node
        if not node:
            return "link"
        if ranks:
            return "network" if ranks[0] // node != ranks[1] // node else "link"
        return "network" if group > node else "link"

    def link_rate(self, group: int, ranks: tuple[int, int] = ()) -> float:
        """Bytes a second one rank sends to its peers in a collective of ``group`` ranks: its link, or
        the network where the ring crosses nodes (its slowest hop) or a send goes to another node."""
        if not self.link_bytes_per_s:
            raise RoofcalcError("this hardware has no interconnect figure; --tp needs one (hardware.json "
                                "'link_bytes_per_s', or a --hw-file that gives it)")
        node = self.gpus_per_node
        if self.hop(group, ranks) == "network":
            if not self.network_bytes_per_s:
                what = (f"a collective between ranks {ranks[0]}-{ranks[1]} crosses" if ranks else
                        f"--tp {group} spans")
                raise RoofcalcError(f"{what} more than one node of {node} GPUs, and this hardware has no network "
                                    f"figure (hardware.json 'network_bytes_per_s')")
            return self.network_bytes_per_s
        return self.link_bytes_per_s

    def t_compute(self, flops: float) -> float:
        return flops / self.peak_flop_per_s

    def t_memory(self, nbytes: float) -> float:
        return nbytes / self.bandwidth_bytes_per_s

    def floor(self, flops: float, nbytes: float) -> float:
        return max(self.t_compute(flops), self.t_memory(nbytes))


def weights_on_device(weights, act, hardware: Hardware, profile: Hardware | None = None):
    """(weight dtype, why) of a weight format whose GEMMs compute in a dtype the device lacks, as an engine
    runs that checkpoint there; (weights, "") where the device has it. vLLM's FP8 docs: "FP8 computation is
    supported on NVIDIA GPUs with compute capability >= 8.9 ... FP8 models will run on compute capability >=
    7.5 (Turing) as weight-only W8A16, utilizing FP8 Marlin": the weights stay FP8 in memory and the GEMMs
    compute in the activation dtype. NVFP4 likewise: vLLM's ModelOptNvFp4Config takes compute capability 7.5
    and up, and where the GPU has no FP4 GEMMs (before Blackwell) runs the weights W4A16 with its FP4 Marlin
    kernel (MarlinNvFp4LinearKernel). Elsewhere (a V100, a CPU) the weights are dequantized to the activation
    dtype at load: their memory and bytes are 16-bit."""
    from dataclasses import replace

    from .calculator import DTYPES

    peaks = set(hardware.peak_flop_per_s) & set((profile or hardware).peak_flop_per_s)
    if weights.name == "fp8" and act.bits > 8 and "fp8" not in peaks:  # unscaled fp8 weights compute in fp8
        raise RoofcalcError(f"{hardware.name} has no fp8 GEMMs; fp8 weights with {act.name} activations run there as "
                            f"an FP8 checkpoint's do, with their scales: --weight-dtype fp8-t (one a tensor), fp8-ch "
                            f"(one a channel) or fp8-b128 (one a 128 x 128 block)")
    if weights.name == "nvfp4a16" and (hardware.compute_capability or 0) < 7.5:  # no FP4 Marlin kernel there
        return act, (f"{hardware.name} has no weight-only fp4 kernel: the {weights.name} weights are dequantized to "
                     f"{act.name} at load")
    if not weights.computes or weights.computes in peaks:
        return weights, ""
    if act.name not in peaks and act.name in ("bf16", "fp16"):  # a bf16 checkpoint on a T4 runs in fp16
        act = DTYPES["fp16" if "fp16" in peaks else "bf16"]
    lacks = f"{hardware.name} has no {weights.computes} GEMMs" if weights.computes not in hardware.peak_flop_per_s \
        else f"the hardware profile measured no {weights.computes} peak"
    if (hardware.compute_capability or 0) >= 7.5:
        runs = ("FP4 Marlin runs them (vLLM's MarlinNvFp4LinearKernel, from compute capability 7.5; SGLang's "
                "--fp4-gemm-backend marlin, its default on SM80-SM90)" if weights.computes == "fp4" else
                f"vLLM's {weights.computes.upper()} Marlin runs them")
        return replace(weights, computes=""), (f"{lacks}: the {weights.name} weights compute in {act.name}, "
                                               f"weight-only W{weights.bits}A{act.bits} as {runs}")
    return act, (f"{hardware.name} has no {weights.computes} GEMMs nor a weight-only {weights.computes} kernel: "
                 f"the {weights.name} weights are dequantized to {act.name} at load")


def peak_over_16bit(hardware: Hardware, compute_dtype: str, default: float = 1.0) -> float:
    """A compute dtype's peak over the device's 16-bit one (bf16, else fp16): what an fp8 or fp4 GEMM's roof is
    to a 16-bit one's; ``default`` where the device lacks either."""
    sixteen = next((hardware.peak_flop_per_s[d] for d in ("bf16", "fp16") if d in hardware.peak_flop_per_s), 0.0)
    peak = hardware.peak_flop_per_s.get(compute_dtype, 0.0)
    return peak / sixteen if peak and sixteen else default


def roofs(nominal: Hardware, compute_dtype: str, measured_bw: float | None = None,
          measured_flops: float | None = None, measured: Hardware | None = None) -> tuple[Roof, Roof | None]:
    """(nominal roof, measured roof or None). A measured profile fills what flags leave out."""
    ratio = peak_over_16bit(nominal, compute_dtype) if compute_dtype in ("fp8", "fp4") else 1.0
    nom = Roof(nominal.bandwidth_bytes_per_s, nominal.peak(compute_dtype), nominal.link_bytes_per_s,
               nominal.gpus_per_node, nominal.network_bytes_per_s, ratio)
    bw = measured_bw or (measured.bandwidth_bytes_per_s if measured else None)
    peak = measured_flops or (measured.peak_flop_per_s.get(compute_dtype) if measured else None)
    if bw is None and peak is None:
        return nom, None
    if measured is not None and peak is None:
        raise RoofcalcError(f"the hardware profile has no measured {compute_dtype} peak; add it or pass --measured-flops")
    # one measured number alone: the other side of the roof stays nominal, and the header says so
    link = (measured.link_bytes_per_s if measured else None) or nom.link_bytes_per_s
    return nom, Roof(bw or nom.bandwidth_bytes_per_s, peak or nom.peak_flop_per_s, link, nom.gpus_per_node,
                     nom.network_bytes_per_s, nom.float_ratio)


class Term(NamedTuple):
    """What :func:`roofcalc.predict.step_times` takes of one kernel: scalars for a single step, numpy
    arrays (each on the least shape it needs; they broadcast) for a sweep."""

    count: int
    t_compute_s: Any  # FLOPs over the roof's peak
    t_memory_s: Any  # bytes over its bandwidth; a collective's link time where that is slower
    kind: str
    rows: Any  # M of a matmul (1 for any other kernel)
    weight_format: str  # int8 / int4 ... weights dequantize on the fly, fp8-b128 block-scaled ("" else)
    size_bytes: Any  # what its efficiency is read at: a matmul's weight bytes, attention's KV cache read,
    # a collective's message
    depth: int  # K of a matmul (0 for any other kernel)
    hop: str  # a collective's "link" or "network", "" for any other kernel
    launches: Any  # device kernels one instance runs (per kernel, or one per batch)
    collective: tuple  # (op, ranks) of a collective, () for any other kernel
    width: int = 0  # N of a matmul (0 for any other kernel, or a matmul whose N is unknown)
    # an attention call's sizes for a fitted attention class (predict.AttentionFit.terms), () for any other kernel
    attn: tuple = ()
    # a fused MoE layer's experts kernel: (class key, the rank's experts, part, the layer's experts) as the kernel
    # holds it, then, once
    # predict.fuse_moe has seen its layer, + (tokens per expert, H, I', Σ t_compute, Σ t_memory, Σ floor)
    moe: tuple = ()
    # a GEMM of a fused group (q/k/v, gate/up: one GEMM under the fused launch models), once predict.fuse_gemms has
    # seen it: (Σ t_compute, Σ t_memory, Σ floor, Σ N, Σ weight bytes, the group's launches); () for any other
    group: tuple = ()
    # a gated delta net's call (predict.GDN_CLASSES): (class, sequences, tokens a sequence, bytes it moves)
    # (predict.GdnFit); () for any other kernel
    gdn: tuple = ()


def attention_sizes(kernel: Kernel, batch=None, kv_len=None, window: int | None = None, context=None) -> tuple:
    """An attention call's sizes as a fitted attention class reads them: (batch, query heads, KV heads, queries,
    keys, head dim, window, KV bytes per value, context), () for any other kernel. ``batch``, ``kv_len`` and
    ``context`` (numbers or arrays, a sweep's) and ``window`` replace the kernel's own; the bytes per value are
    its KV read over the values it reads; the context, the positions before a window caps the keys (a window
    binds where the context passes it)."""
    z = kernel.sizes
    if kernel.kind != "attention" or not isinstance(z, AttentionSizes):
        return ()
    values = 2 * z.batch * z.kv_len * z.kv_heads * z.head_dim
    per_value = kernel.cost.kv_read_bytes / values if values else 0.0
    return (z.batch if batch is None else batch, z.heads, z.kv_heads, z.q_len, z.kv_len if kv_len is None else kv_len,
            z.head_dim, kernel.window if window is None else window, per_value,
            (z.context or z.kv_len) if context is None else context)


def gdn_modules(kernels) -> frozenset:
    """The modules of a step that run a gated delta rule (a ``*gated_delta_rule`` op: Qwen3-Next's and Qwen3.5's
    linear attention), whose causal convs are the fitted gdn classes' (another mixer's conv, Mamba-2's or LFM2's, is
    not)."""
    return frozenset(k.name.rpartition(".")[0] for k in kernels if "gated_delta_rule" in k.name.rpartition(".")[2])


def gdn_sizes(kernel: Kernel, workload, modules: frozenset, impl: str, batch=None, tokens=None) -> tuple:
    """A gated delta net's call as its fitted class reads it (predict.GdnFit): (class, sequences, tokens a
    sequence: 1 in a decode step), () for any other kernel: a kernel of a module in ``modules`` (gdn_modules) whose
    op is one of the classes', under a launch model that runs the engines' fused kernels (not hf-eager, which runs
    transformers' torch code op by op and is counted in its eager view). ``batch`` and ``tokens`` (a sweep's arrays)
    replace the workload's."""
    from .predict import gdn_class

    cls = gdn_class(kernel.name)
    if not cls or impl == "hf-eager" or kernel.name.rpartition(".")[0] not in modules:
        return ()
    b = workload.batch if batch is None else batch
    return cls, b, 1 if workload.phase == "decode" else workload.query_tokens if tokens is None else tokens


def link_time(kernel: Kernel, roof: Roof, link_bytes):
    """A collective's time on its link: the bytes this rank sends over one direction of it (0 for any
    other kernel)."""
    if kernel.kind != "collective":
        return 0.0
    return link_bytes / roof.link_rate(kernel.group, kernel.ranks)


def kernel_term(kernel: Kernel, roof: Roof, launches, weight_format: str = "", *, count: int | None = None,
                cost: Cost | None = None, rows=None, message=None, link=None, attn: tuple | None = None,
                gdn: tuple = ()) -> Term:
    """One kernel on ``roof``, as the step model takes it: the single step's and every sweep's one rule
    for its compute and memory times, a collective's link and hop, and the size its efficiency is read
    at. ``count``, ``cost``, ``rows``, ``message`` and ``link`` (a collective's message and the bytes it
    sends over its link) and ``attn`` (an attention call's sizes, attention_sizes) are the kernel's own unless
    given: a sweep gives its costs as numpy arrays, ``launches`` too (one per batch where it changes with the
    batch)."""
    count = kernel.count if count is None else count
    cost = kernel.cost if cost is None else cost
    rows = kernel.rows if rows is None else rows
    t_c, t_m = roof.t_compute(cost.flops), roof.t_memory(cost.bytes)
    if weight_format == "float":  # 16-bit weights beside fp8 / fp4 GEMMs: the 16-bit peak (weight_format)
        t_c = t_c * roof.float_ratio
    if kernel.kind != "collective":
        size = cost.kv_read_bytes if kernel.kind == "attention" else cost.weight_bytes
        return Term(count, t_c, t_m, kernel.kind, rows, weight_format, size, kernel.depth, "", launches, (),
                    kernel.width, attention_sizes(kernel) if attn is None else attn, kernel.moe,
                    gdn=(*gdn, cost.bytes) if gdn else ())
    t_m = _maximum(t_m, link_time(kernel, roof, kernel.link_bytes if link is None else link))  # link or HBM copy
    return Term(count, t_c, t_m, kernel.kind, rows, weight_format,
                kernel.message_bytes if message is None else message, kernel.depth,
                roof.hop(kernel.group, kernel.ranks), launches, (kernel.role, kernel.group))


@dataclass(frozen=True)
class Placement:
    """One kernel instance on the roof."""

    kernel: Kernel
    roof: Roof
    launches: int  # eager ops (hf-eager) or kernel launches one instance costs the host
    measured_s: float | None = None
    model: KernelModel | None = field(default=None, repr=False)  # the efficiencies that turn its floor into an
    # expected time (the step's one model: left out of a placement's repr)
    weight_format: str = ""  # int8 / int4 weights dequantize on the fly; fp8-b128 block-scaled
    moe: tuple = ()  # a fused MoE layer's experts kernel: its layer's sums (predict.fuse_moe), () else
    group: tuple = ()  # a GEMM of a fused group (q/k/v, gate/up): the group's sums (predict.fuse_gemms), () else
    gdn: tuple = ()  # a gated delta net's call: (class, sequences, tokens a sequence) (gdn_sizes), () else

    @cached_property
    def term(self) -> Term:
        """What :func:`roofcalc.predict.step_times` needs of this kernel (:func:`kernel_term`)."""
        t = kernel_term(self.kernel, self.roof, self.launches, self.weight_format, gdn=self.gdn)
        return t._replace(moe=self.moe, group=self.group) if self.moe or self.group else t

    @property
    def t_link_s(self) -> float:
        """A collective's time on the link: the bytes this rank sends over one direction of it."""
        return link_time(self.kernel, self.roof, self.kernel.link_bytes)

    @cached_property
    def _expected(self) -> tuple[float, str]:
        """(expected seconds, bound) from the one step model (ideal efficiencies without a model)."""
        from .predict import kernel_bound

        work, fixed, side = self._terms
        return work + fixed, kernel_bound(self.kernel.kind, work, fixed, side)

    @cached_property
    def _terms(self) -> tuple:
        """(work seconds, fixed seconds, compute-bound?) of the one step model (predict.kernel_terms), whose sum
        is the expected time: a fused MoE layer's kernels take their share of its one fitted call."""
        from .predict import ideal, kernel_terms

        t = self.term
        return kernel_terms(self.model or ideal(), t.t_compute_s, t.t_memory_s, t.kind, t.rows, t.weight_format,
                            t.size_bytes, depth=t.depth, hop=t.hop, launches=t.launches, collective=t.collective,
                            width=t.width, attn=t.attn, moe=t.moe, group=t.group, gdn=t.gdn)

    @property
    def hop(self) -> str:
        """A collective's "link" or "network" (its fixed latency), "" for any other kernel."""
        return self.term.hop

    @property
    def efficiency_class(self) -> str:
        """The class whose efficiency bounds the kernel: gemv or gemm, attention or attention_compute, stream."""
        return kernel_class(self.kernel.kind, bool(self._terms[2]))

    @property
    def t_expected_s(self) -> float:
        """FLOPs over the achievable FLOP/s or bytes over the achievable bandwidth, the larger: what one
        instance should take on this device."""
        return self._expected[0]

    @property
    def t_fixed_s(self) -> float:
        """The fixed part of the expected time: the class's fixed cost (a collective's latency; a fitted class's
        fitted one; a fused MoE layer's kernel its share of the call's)."""
        return float(self._terms[1])

    @property
    def efficiency(self) -> float:
        """The fraction of the roof this kernel is expected to reach: its floor over its expected time."""
        t = self.t_expected_s
        return self.t_floor_s / t if t else 1.0

    @property
    def efficiency_source(self) -> str:
        words = self._efficiency_source()
        moe, m = self.term.moe, self.model
        if m is not None and len(moe) == MOE_FUSED and moe[0] in m.every_pair_unfused and moe[0] not in m.moe_fits \
                and self.kernel.kind == "matmul":
            every = every_pair_words(moe[1], moe[3])  # a GeForce card's experts GEMMs at every pair (kernel_terms)
            words += f"; {every}" if every else ""
        return words

    def _efficiency_source(self) -> str:
        if self.model is None:
            return "ideal"
        if self.kernel.kind == "matmul" and "matmul" in self.model.curves:
            return "measured"
        fused = self.model.moe_fits.get(self.term.moe[0]) if len(self.term.moe) == MOE_FUSED else None
        if fused is not None and fused.source:
            words = fused.untuned_words(self.term.moe[1], self.term.moe[MOE_BASE + 2])
            slow = fused.misaligned_words(self.term.moe[MOE_BASE + 2])
            pad = fused.padded_words(self.term.moe[MOE_BASE + 1], self.term.moe[MOE_BASE + 2])
            every = fused.every_pair_words(self.term.moe[1], self.term.moe[3])
            read = moe_db_read(self.model, self.term.moe)
            db = "" if read is None else "its call the table's measured one (--kernel-db)" if read[1] else \
                "its work between the fit's and the table's nearest call, scaled (--kernel-db)"
            return (f"{fused.source}; at SGLang's default tiles ({words})" if words else fused.source) + \
                "".join(f"; {w}" for w in (slow, pad, every, db) if w)
        t = self.term
        own = self.model.gdn_fits.get(t.gdn[0]) if t.gdn else None
        if own is not None:  # a gated delta net's call on its fitted form (predict.GdnFit)
            return f"{own.source}: the fitted {t.gdn[0]} form"
        if self.kernel.kind in ("matmul", "attention"):  # (a measured matmul curve said so above)
            if t.group and self.kernel.kind == "matmul":  # a fused group's one GEMM: its sizes (kernel_terms)
                words = form_source(self.model, "matmul", t.rows, t.weight_format, t.group[4], t.depth, t.group[3])
            else:
                words = form_source(self.model, t.kind, t.rows, t.weight_format, t.size_bytes, t.depth, t.width, t.attn)
            fit = self.model.attention_fit(t.attn) if self.kernel.kind == "attention" else None
            reread = fit.reread_words(t.attn) if fit is not None else ""  # a windowed call that rereads past L2
            if words or reread:
                return "; ".join(w for w in (words or self.model.classes[self.efficiency_class].source, reread) if w)
        if self.kernel.kind == "collective" and self.hop == "link" and \
                self.model.collective_fit(*self.term.collective) is not None:
            from .hardware import measured_gpu_name

            return f"fitted on {measured_gpu_name(self.model.links)}'s measured collectives"
        return self.model.classes[self.efficiency_class].source

    @property
    def t_compute_s(self) -> float:
        return self.term.t_compute_s

    @property
    def t_memory_s(self) -> float:
        """Bytes over the bandwidth; a collective's bytes over its link too, whichever is slower."""
        return self.term.t_memory_s

    @property
    def t_floor_s(self) -> float:
        return max(self.t_compute_s, self.t_memory_s)

    @property
    def bound(self) -> str:
        """One of KERNEL_BOUNDS (predict.py): memory, compute, link or fixed, the largest term of the
        kernel's expected time; a collective's bytes are "link" where its link is slower than its copy."""
        bound = self._expected[1]
        if bound == "link" and self.t_link_s < self.roof.t_memory(self.kernel.cost.bytes):
            return "memory"
        return bound

    @property
    def t_best_s(self) -> float:
        """The least a real kernel of this size takes: its floor, or its fixed cost where that is larger; on a
        CPU (host and device in series, no fixed cost), whose profiler times each eager op with its dispatch, its
        floor plus its eager ops' dispatch (launches x the host's time per op)."""
        if self.dispatch_s:
            return self.t_floor_s + self.dispatch_s
        return max(self.t_floor_s, self.t_fixed_s)

    @property
    def dispatch_s(self) -> float:
        """A CPU kernel's eager ops' dispatch (launches x host per op); 0 where host and device overlap (a GPU)."""
        m = self.model
        if m is None or m.overlap or self.t_fixed_s:
            return 0.0
        return self.launches * m.host_per_op_s.expected

    @property
    def intensity(self) -> float:
        return self.kernel.cost.intensity

    @property
    def achieved_flop_per_s(self) -> float | None:
        return None if self.measured_s is None else self.kernel.cost.flops / self.measured_s

    @property
    def roof_fraction(self) -> float | None:
        """Achieved FLOP/s over the roof's height at this AI (None without a measured time)."""
        if self.measured_s is None or not self.kernel.cost.flops:
            return None
        return self.achieved_flop_per_s / self.roof.attainable(self.intensity)

    @property
    def floor_multiple(self) -> float | None:
        return None if self.measured_s is None else self.measured_s / self.t_floor_s

    @property
    def flagged(self) -> bool:
        """The one rule (FLAG_MULTIPLE): measured above 3x the least a real kernel of its size takes."""
        return self.measured_s is not None and self.measured_s > FLAG_MULTIPLE * self.t_best_s

    @property
    def faster_than_floor(self) -> bool:
        """Measured under FASTER_THAN_FLOOR x its floor on this roof: faster than the roof allows."""
        return self.measured_s is not None and self.measured_s < FASTER_THAN_FLOOR * self.t_floor_s

    @property
    def t_as_timed_s(self) -> float:
        """The expected time as a profiler times the kernel: on a CPU (host and device in series) each eager op
        with its dispatch, which the step model puts in the host part (t_expected_s plus dispatch_s); on a GPU
        the expected time itself."""
        return self.t_expected_s + self.dispatch_s

    @property
    def error(self) -> float | None:
        """Measured over expected as timed (t_as_timed_s), minus 1 (None without a measured time)."""
        return None if self.measured_s is None else self.measured_s / self.t_as_timed_s - 1



@dataclass(frozen=True)
class Point:
    """A measured workload: FLOPs and bytes are computed, only the time is measured."""

    name: str
    flops: float
    bytes: float
    seconds: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def achieved_flop_per_s(self) -> float:
        return self.flops / self.seconds

    def roof_fraction(self, roof: Roof) -> float:
        return self.achieved_flop_per_s / roof.attainable(self.intensity)

    def faster_than_floor(self, roof: Roof) -> bool:
        """Its time under FASTER_THAN_FLOOR x its floor on ``roof`` (above 1 / 0.9 of the roof at its AI)."""
        return self.roof_fraction(roof) * FASTER_THAN_FLOOR > 1.0


def parse_point(text: str) -> Point:
    """NAME:FLOPS:BYTES:SECONDS, e.g. 'matmul 4096:1.374e11:1.007e8:2.75e-3' (read by roofcalc.inputs)."""
    from .inputs import point

    return Point(*point(text))


@dataclass(frozen=True)
class StepVerdict:
    """The whole step on the roof."""

    placements: tuple[Placement, ...]
    roof: Roof
    impl: str
    flops: int
    bytes: int
    tpot_s: float | None = None
    n_layers: int = 1
    model: KernelModel | None = None
    sequences: int = 1  # the step's sequences: an engine's host time per sequence (predict.EngineHost)
    gpus: int = 1  # the GPUs it runs on (Parallel.gpus): with its collectives, the range's band
    tokens: int = 1  # the step's tokens (B·T): whether it replays the engine's CUDA graph (predict.EngineHost.graphed)

    @property
    def graphed(self) -> bool:
        """Whether the step replays a CUDA graph: under cuda-graph, unless the engine replays one for steps of
        fewer tokens alone (llama.cpp: one)."""
        host = self.model.engine_host if self.model is not None else None
        return self.impl == "cuda-graph" and (host is None or bool(host.graphed(self.impl, self.tokens)))

    def __repr__(self) -> str:  # one line (its placements carry the whole kernel model each): .placements has them
        return (f"StepVerdict(predicted {self.predicted_s * 1e3:.4g} ms [{self.predicted_lower_s * 1e3:.4g}, "
                f"{self.predicted_upper_s * 1e3:.4g}], {self.bound}-bound, {len(self.placements)} kernels placed, "
                f"impl {self.impl})")

    @cached_property
    def times(self) -> StepTimes:
        """The step model (predict.py) over every kernel: floors, expected device and host time
        (computed once: every report line reads it)."""
        from .predict import ideal

        return step_times([p.term for p in self.placements], self.model or ideal(), self.impl, self.launches_per_step,
                          self.sequences, self.gpus, self.tokens)

    @property
    def predicted_s(self) -> float:
        """The expected step time: the kernels at their expected efficiency, with the host's time."""
        return self.times.predicted_s

    @property
    def bound(self) -> str:
        """What bounds the step: one of STEP_BOUNDS (predict.py)."""
        return self.times.bound

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def sum_floor_s(self) -> float:
        return sum(p.t_floor_s * p.kernel.count for p in self.placements)

    @property
    def step_floor_s(self) -> float:
        """The whole step as one workload: max(FLOPs / P, bytes / B)."""
        return self.roof.floor(self.flops, self.bytes)

    @property
    def launches_per_step(self) -> int:
        return sum(p.launches * p.kernel.count for p in self.placements)

    @property
    def launches_per_layer(self) -> float:
        """Per decoder layer, averaged over the layers (kinds of layer can differ: dense or MoE)."""
        layer = [p for p in self.placements if p.kernel.scope == "layer"]
        total = sum(p.launches * p.kernel.count for p in layer)
        if not self.n_layers:  # a traced model whose config names no layer count
            return total
        return total / self.n_layers if total % self.n_layers else total // self.n_layers

    @property
    def predicted_lower_s(self) -> float:
        """The range's lower end (predict.StepTimes): calibrated on a GPU with fitted kernels, else the floors."""
        return self.times.predicted_lower_s

    @property
    def predicted_upper_s(self) -> float:
        """The range's upper end (predict.StepTimes): calibrated on a GPU with fitted kernels, else every
        efficiency and overhead at the low end of its source's range."""
        return self.times.predicted_upper_s

    # ---- a measured step time (TPOT in decode)
    @property
    def achieved_flop_per_s(self) -> float | None:
        return None if self.tpot_s is None else self.flops / self.tpot_s

    @property
    def roof_fraction(self) -> float | None:
        return None if self.tpot_s is None else self.achieved_flop_per_s / self.roof.attainable(self.intensity)

    @property
    def floor_multiple(self) -> float | None:
        return None if self.tpot_s is None else self.tpot_s / self.sum_floor_s

    @property
    def gap_s(self) -> float | None:
        """Distance 1, in time: measured minus the floors (overhead plus kernel efficiency)."""
        return None if self.tpot_s is None else self.tpot_s - self.sum_floor_s

    @property
    def batching_headroom(self) -> float:
        """Distance 2: how far along the slope the ridge is (×) from this AI."""
        return self.roof.ridge / self.intensity


# a serving engine's fused modules (vLLM's, SGLang's: QKVParallelLinear qkv_proj, MergedColumnParallelLinear
# gate_up_proj), the kernels roofcalc counts apart
FUSED_NAMES = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


def fused_times(analysis: Analysis, times: dict) -> dict:
    """Kernel times named as another implementation fuses its GEMMs (FUSED_NAMES), mapped onto this model's
    kernels: a fused module's time (vLLM's ``qkv_proj``) split over the parts this model runs apart by their shares
    of the fused GEMM's bytes (its weights and activations: what a memory-bound GEMM's time follows), and the parts'
    times, every part given, added into the module this model fuses them in (Phi-3's ``qkv_proj``). Where some
    of the parts are given beside it, or only some, the names stay as given (``place`` refuses them, saying
    which)."""
    have = {k.name: k for k in analysis.kernels}
    # each module path the names use (a traced model's "self_attn.", "mlp.shared_expert."; a hand model's none)
    prefixes = {n.rpartition(".")[0] + "." if "." in n else "" for n in (*times, *have)}
    for prefix in sorted(prefixes):
        for name, names in FUSED_NAMES.items():
            fused, parts = prefix + name, [prefix + p for p in names]
            if fused in times and fused not in have and all(p in have for p in parts) and \
                    not set(parts) & set(times):
                total = sum(have[p].cost.bytes for p in parts)
                seconds = times.pop(fused)
                times.update({p: seconds * have[p].cost.bytes / total for p in parts})
            elif fused in have and fused not in times and all(p in times for p in parts) and \
                    not any(p in have for p in parts):
                times[fused] = sum(times.pop(p) for p in parts)
    return times


def place(analysis: Analysis, roof: Roof, *, impl: str = "hf-eager",
          kernel_times: Mapping[str, float] | None = None, tpot_s: float | None = None,
          model: KernelModel | None = None) -> StepVerdict:
    times = fused_times(analysis, dict(kernel_times or {}))
    unknown = sorted(set(times) - {k.name for k in analysis.kernels})
    if unknown:
        names = ", ".join(k.name for k in analysis.kernels)
        have = {k.name for k in analysis.kernels}
        fused = [f"{n} is {' + '.join(FUSED_NAMES[n])} here" for n in unknown
                 if n in FUSED_NAMES and set(FUSED_NAMES[n]) <= have]
        fused += [f"{' + '.join(parts)} is {n} here, one kernel given their sum" for n, parts in FUSED_NAMES.items()
                  if n in have and set(parts) & set(unknown)]  # a model whose own module is fused (Phi-3's qkv_proj)
        hint = (f"; {'; '.join(fused)} (a fused GEMM and its parts are one kernel or several as the model's modules "
                f"are: split a fused time by the parts' shares of its bytes, or add the parts' times)") if fused else ""
        raise RoofcalcError(f"kernel times name kernels this model has not: {', '.join(unknown)} (it has: {names})"
                            + hint)
    wdt = analysis.workload.weight_dtype
    gdn = gdn_modules(analysis.kernels)
    placements = tuple(
        Placement(k, roof, launches(k, impl, analysis.workload.act_dtype.name, analysis.shape),
                  times.get(k.name), model, weight_format(k, wdt), gdn=gdn_sizes(k, analysis.workload, gdn, impl))
        for k in analysis.kernels
    )
    from .predict import fuse_gemms, fuse_moe

    # a fused GEMM group's kernels (q/k/v, gate/up under the fused launch models) and a fused MoE layer's experts
    # kernels: their group's sums, as the step model reads them
    fused = fuse_gemms([p.term for p in placements])
    if any(k.moe for k in analysis.kernels):
        fused = fuse_moe(fused)
    placements = tuple(replace(p, moe=t.moe, group=t.group) if t.moe or t.group else p
                       for p, t in zip(placements, fused))
    totals = analysis.totals
    return StepVerdict(placements, roof, impl, totals.flops, totals.bytes, tpot_s, analysis.shape.n_layers, model,
                       analysis.workload.batch, gpus_of(analysis), analysis.workload.tokens)


def gpus_of(analysis_or_analyzer) -> int:
    """The GPUs a step (an analysis, or a sweep's analyzer) runs on: its Parallel's, else one."""
    parallel = getattr(analysis_or_analyzer, "parallel", None)
    return parallel.gpus if parallel is not None else 1


@dataclass(frozen=True)
class Roofline:
    """Everything the roofline report shows: both roofs, the step, the extra points."""

    analysis: Analysis
    hardware: Hardware
    compute_dtype: str
    nominal: Roof
    measured: Roof | None
    step: StepVerdict
    points: tuple[Point, ...] = field(default=())
    model: KernelModel | None = None
    capacity_bytes: float | None = None  # the device's memory (None: unknown)
    profile_name: str | None = None  # the measured profile's own name (--hw-file)
    # the device is the measured profile itself (one that names no datasheet in 'nominal'), not a catalog entry it
    # is compared with: its figures are the nominal roof (Device.profile_is_hardware)
    profile_is_hardware: bool = False

    @property
    def roof(self) -> Roof:
        """The roof verdicts are made on: the measured one when there is one."""
        return self.measured or self.nominal

    @property
    def own_nominal(self) -> bool:
        """Whether the measured profile is its own nominal roof (a CPU's or TPU's that names no catalog datasheet,
        cli._own_nominal): its nominal and measured roofs are one, and no share of a datasheet is said."""
        return self.profile_is_nominal and self.measured == self.nominal

    @property
    def profile_is_nominal(self) -> bool:
        """Whether the nominal roof is the measured profile's own figures (it names no catalog datasheet), whether
        or not a --measured-bw or --measured-flops then moved the measured roof off them."""
        return self.measured is not None and self.profile_is_hardware

    @property
    def memory_bytes(self) -> int:
        """Weights + the KV cache of this step's sequences: the rule every sweep uses too."""
        return self.analysis.memory_bytes

    @property
    def fits(self) -> bool | None:
        return None if self.capacity_bytes is None else self.memory_bytes <= self.capacity_bytes

    def _repr_html_(self) -> str:  # a notebook shows the placed kernels as a table (roofcalc.frames)
        from .frames import repr_html

        return repr_html(self)

    def __repr__(self) -> str:  # one line, not every placement's kernel model (hundreds of kB)
        return (f"Roofline({self.analysis.shape.name!r} on {self.hardware.name}, "
                f"{'measured' if self.measured else 'nominal'} roof: {self.step!r})")


@dataclass(frozen=True)
class Device:
    """The device a step or a sweep runs on, resolved once: both roofs, the efficiencies and
    overheads (the :class:`KernelModel`), and the memory capacity."""

    hardware: Hardware
    compute_dtype: str
    nominal: Roof
    measured: Roof | None
    model: KernelModel
    capacity_bytes: float | None  # the device's memory (None: unknown)
    profile: Hardware | None = None  # the measured profile (--hw-file)

    @property
    def roof(self) -> Roof:
        """The roof verdicts are made on: the measured one when there is one."""
        return self.measured or self.nominal

    @property
    def profile_name(self) -> str | None:
        return self.profile.name if self.profile is not None else None

    @property
    def profile_is_hardware(self) -> bool:
        """The measured profile is the device itself (it names no datasheet: its own figures the nominal roof), not
        a catalog entry's datasheet it is compared with, whatever the two are named."""
        return self.profile is not None and self.hardware is self.profile


def as_device(hardware, measured_profile, who: str) -> tuple[Hardware, Hardware | None]:
    """(the catalog entry, the measured profile or None) a library call takes, as the command line's --hw and
    --hw-file: ``hardware`` a catalog name or a Hardware; a measured profile given as the hardware
    (hardware.load_profile's, as ``roofcalc measure`` writes it: it names its nominal, or holds measured
    efficiencies) is read as --hw-file reads it: against its nominal's datasheet, or as its own where it names
    none."""
    from .hardware import find_hardware

    if isinstance(hardware, str):
        hardware = find_hardware(hardware)
    if not isinstance(hardware, Hardware):
        raise RoofcalcError(f"{who}: hardware must be a Hardware (roofcalc.hardware.find_hardware, load_profile) or "
                            f"a catalog name, got {type(hardware).__name__}")
    if measured_profile is None and (hardware.nominal or hardware.efficiency is not None):
        measured_profile = hardware
        hardware = find_hardware(hardware.nominal) if hardware.nominal else hardware
    return hardware, measured_profile


def device(hardware: Hardware, compute_dtype: str, *, measured_bw: float | None = None,
           measured_flops: float | None = None, measured_profile: Hardware | None = None,
           launch_overhead_s: float | None = None, host_overhead_s: float | None = None,
           capacity_bytes: float | None = None, engine_host=None, kernel_db: bool = False) -> Device:
    """The device context every single step and sweep uses. ``capacity_bytes`` defaults to the
    measured profile's memory, else the hardware's; ``engine_host`` is the engine's host time per step
    (roofcalc.engines); ``kernel_db``: GEMM and attention times read from the measured tables (kerneldb)."""
    from .inputs import PLAUSIBLE, number

    given = {}
    for what, value, kind, unit in (("measured_bw", measured_bw, "bandwidth", "bytes a second: 270e9 for 270 GB/s"),
                                    ("measured_flops", measured_flops, "flops", "FLOP a second: 50e12 for 50 "
                                     "TFLOP/s"),
                                    ("launch_overhead_s", launch_overhead_s, "time", "seconds: 5e-6 for 5 us"),
                                    ("host_overhead_s", host_overhead_s, "time", "seconds: 20e-6 for 20 us"),
                                    ("capacity_bytes", capacity_bytes, "size", "bytes: 16e9 for 16 GB")):
        if value is None:
            continue
        # the library's as the command line's: a finite number in the range no real device leaves (0 is not
        # "none"), in base units, which a figure in GB/s or TFLOP/s given bare is far below
        lo, hi = PLAUSIBLE[kind]
        try:
            given[what] = number(value, what, lo, hi)  # (a Python float: numpy's float32 would stay float32)
        except RoofcalcError as exc:
            raise RoofcalcError(f"{exc} (in {unit})") from None
    measured_bw, measured_flops = given.get("measured_bw"), given.get("measured_flops")
    launch_overhead_s, host_overhead_s = given.get("launch_overhead_s"), given.get("host_overhead_s")
    capacity_bytes = given.get("capacity_bytes")
    nominal, measured = roofs(hardware, compute_dtype, measured_bw, measured_flops, measured_profile)
    model = kernel_model(hardware, nominal, measured, measured_profile, launch_overhead_s, host_overhead_s,
                         compute_dtype, engine_host, kernel_db)
    if capacity_bytes is None:
        capacity_bytes = (measured_profile.memory_bytes if measured_profile else None) or hardware.memory_bytes
    return Device(hardware, compute_dtype, nominal, measured, model, capacity_bytes, measured_profile)


def roofline(analysis: Analysis, hardware: Hardware, *, measured_bw: float | None = None,
             measured_flops: float | None = None, measured_profile: Hardware | None = None,
             impl: str | None = None, launch_overhead_s: float | None = None,
             kernel_times: Mapping[str, float] | None = None, tpot_s: float | None = None,
             points: tuple[Point, ...] = (), host_overhead_s: float | None = None,
             capacity_bytes: float | None = None, engine_host=None, kernel_db: bool = False,
             engine=None) -> Roofline:
    """One step of ``analysis`` on ``hardware`` (a Hardware, or a catalog name: "A100"), placed on its roofs and
    predicted; ``points``: Point objects or (name, FLOPs, bytes, seconds) tuples. ``engine``: a preset ("vllm",
    roofcalc.engines.ENGINES) as --engine gives it: its launch model (unless ``impl``), its host time, and the
    workload it runs, which ``analysis`` must have been built with (Engine.workload_kw); ``impl`` alone: hf-eager
    unless given."""
    from .engines import library_engine

    if not isinstance(analysis, Analysis):
        raise RoofcalcError(f"roofline takes an Analysis (roofcalc.analyze(shape, workload)), got "
                            f"{type(analysis).__name__}")
    impl, engine_host, fields = library_engine(engine, engine_host, impl, analysis.shape, "roofline")
    wl = analysis.workload
    if fields:
        checked = {"cache_update": True, "eager_ops": True, "mla": analysis.shape.mla is not None,
                   "tp_layout": getattr(getattr(analysis, "parallel", None), "gpus", 1) > 1}
        wrong = [f"{k} {getattr(wl, k)!r} (the preset's: {v!r})" for k, v in fields.items()
                 if checked[k] and getattr(wl, k) != v]
        if wrong:
            raise RoofcalcError(f"roofline: the analysis's workload has {', '.join(wrong)}: build it with the "
                                f"preset's fields, Workload.decode(..., **roofcalc.engines.find_engine(name)"
                                f".workload_kw())")
    hardware, measured_profile = as_device(hardware, measured_profile, "roofline")
    from .inputs import PLAUSIBLE, number

    low, high = PLAUSIBLE["time"]
    if tpot_s is not None:  # a measured step: a real one's time, as --tpot takes it
        tpot_s = number(tpot_s, "tpot_s", low, high)
    if kernel_times is not None:  # a mapping of kernel name to seconds (a dict, a pandas Series)
        if not hasattr(kernel_times, "items"):
            raise RoofcalcError(f"roofline: kernel_times is a mapping of kernel name to seconds (a dict or a pandas "
                                f"Series), got {type(kernel_times).__name__}")
        kernel_times = {name: number(seconds, f"kernel_times[{name!r}]", low, high)
                        for name, seconds in kernel_times.items()}
    try:
        points = tuple(p if isinstance(p, Point) else Point(*p) for p in points)
    except TypeError:
        raise RoofcalcError("roofline: each point is a Point or a (name, FLOPs, bytes, seconds) tuple") from None
    # each figure finite and above 0, as --point takes them (a point of no FLOPs or bytes has no place on a roofline)
    points = tuple(Point(str(p.name), *(number(x, f"point {p.name!r}: {what}", 0.0, low_open=True)
                                        for x, what in ((p.flops, "FLOPs"), (p.bytes, "bytes"),
                                                        (p.seconds, "seconds")))) for p in points)
    d = device(hardware, analysis.workload.compute_dtype.name, measured_bw=measured_bw, measured_flops=measured_flops,
               measured_profile=measured_profile, launch_overhead_s=launch_overhead_s,
               host_overhead_s=host_overhead_s, capacity_bytes=capacity_bytes, engine_host=engine_host,
               kernel_db=kernel_db)
    step = place(analysis, d.roof, impl=impl, kernel_times=kernel_times, tpot_s=tpot_s, model=d.model)
    return Roofline(analysis, hardware, d.compute_dtype, d.nominal, d.measured, step, tuple(points), d.model,
                    d.capacity_bytes, d.profile_name, d.profile_is_hardware)


def with_kernel_db(model: KernelModel, hardware: Hardware, profile: Hardware | None, engine: str) -> KernelModel:
    """``model`` with its measured GPU's tables read directly (--kernel-db; roofcalc.kerneldb)."""
    from dataclasses import replace

    from .kerneldb import KernelDB

    if profile is not None and profile.efficiency is not None:
        raise RoofcalcError("--kernel-db and a profile's measured efficiencies conflict: give one")
    if hardware.fits[1] != "measured":
        raise RoofcalcError(f"--kernel-db: no measured tables for {hardware.name} (A100 H100 H200 B200 L40S "
                            f"RTX-PRO-6000)")
    return replace(model, db=KernelDB(hardware.kernel_fits, engine))


def kernel_model(hardware: Hardware, nominal: Roof, measured: Roof | None, profile: Hardware | None = None,
                 launch_overhead_s: float | None = None, host_overhead_s: float | None = None,
                 compute_dtype: str = "fp16", engine_host=None, kernel_db: bool = False) -> KernelModel:
    """The efficiencies a prediction uses: a measured profile's own where it has them, else the
    defaults for the kind of device, moved onto the measured roof when there is one."""
    from dataclasses import replace

    from .predict import Efficiency

    if profile is not None and profile.efficiency is not None:
        model = profile.efficiency
        if profile.kind == "gpu" and profile.compute_capability is None and hardware.kind == "gpu":
            # a profile that does not say its GPU's compute capability (written before measure recorded it, or
            # on ROCm) takes the catalog entry's it runs against: its default int4 factor the device's, as --hw's
            from .predict import device_dequant

            model = device_dequant(model, hardware.compute_capability)
    else:
        # a profile that says whether its box's GPUs reach each other peer to peer says which PCIe box's
        # collectives it takes; its catalog entry's otherwise
        box = hardware if profile is None or profile.pcie_p2p is None else replace(hardware, pcie_p2p=profile.pcie_p2p)
        model = default_model((profile or hardware).kind, hardware.segment, *hardware.fits,
                              engine=getattr(engine_host, "table_engine", ""), links=box.links[0],
                              compute_capability=hardware.compute_capability)
        if hardware.fits[1] == "nearest":  # another GPU's forms: a windowed FlashAttention-2 form rereads at
            # this GPU's L2, where its file or the catalog says it
            model = model.with_l2(profile.l2_bytes if profile is not None and profile.l2_bytes else hardware.l2_bytes)
        if measured is not None:
            model = model.on_roof(measured.bandwidth_bytes_per_s / nominal.bandwidth_bytes_per_s,
                                  measured.peak_flop_per_s / nominal.peak_flop_per_s)
        if profile is not None:  # a schema-1 profile: its measured dispatch is the cost of one launch
            model = replace(model, launch_s=Efficiency(profile.launch_overhead_s, profile.launch_overhead_s,
                                                       "measured", "the profile's launch_overhead_s"))
    if getattr(engine_host, "decode_every_head", False) and model.attention_fits:  # the engine's decode kernel
        # reads a group's KV once per query head, on the fitted forms and on a profile's own alike
        model = replace(model, attention_fits={k: replace(f, every_head=True) if f.kind == "decode" else f
                                               for k, f in model.attention_fits.items()})
    if profile is not None and profile.link_bytes_per_s and profile.link_latency_s is not None:
        # a measured link (roofcalc measure --collectives): its bus bandwidth is what collectives reach,
        # and its smallest all-reduce is their fixed cost inside a node
        lat = profile.link_latency_s
        model = replace(model, link=Efficiency(1.0, 1.0, "measured", "the profile's measured bus bandwidth"),
                        latency={**model.latency, "link": Efficiency(lat, lat, "measured", "the profile's smallest "
                                                                     "all-reduce")},
                        collectives={}, links="")  # the link measured here, not a measured box's
    if kernel_db and getattr(engine_host, "decode_every_head", False):
        raise RoofcalcError(f"--kernel-db: engine {engine_host.engine}'s decode kernel is not the one its measured "
                            f"tables ran (they time today's {engine_host.table_engine}); drop --kernel-db")
    if kernel_db:
        model = with_kernel_db(model, hardware, profile, getattr(engine_host, "table_engine", ""))
    model = model.for_compute(compute_dtype, peak_over_16bit(hardware, "fp8", 2.0), peak_over_16bit(hardware, "fp4", 4.0))
    if launch_overhead_s is not None and launch_overhead_s < 0:
        raise RoofcalcError("the launch overhead cannot be negative")
    if launch_overhead_s is not None:
        model = replace(model, launch_s=Efficiency(launch_overhead_s, launch_overhead_s, "given", "--launch-overhead"))
    if host_overhead_s is not None:
        model = replace(model, host_per_op_s=Efficiency(host_overhead_s, host_overhead_s, "given", "--host-overhead"))
    if engine_host is None:  # the library's default engine is the command line's: transformers' eager generate
        from .engines import DEFAULT_ENGINE, ENGINES

        engine_host = ENGINES[DEFAULT_ENGINE].host
    model = replace(model, engine_host=engine_host)  # an engine's host time outside its kernels (engines.py)
    from .predict import int4_cap, marlin_moe

    model = marlin_moe(model, engine_host, hardware.compute_capability)  # int4 experts' fused form: Marlin's alone

    fp32 = hardware.peak_flop_per_s.get("fp32")
    if engine_host.int4_kernel and compute_dtype in ("fp16", "bf16") and fp32 and hardware.compute_capability is not None:
        roof = measured if measured is not None else nominal  # CUDA kernels, on the roof the fractions are of
        model = replace(model, int4_cap=int4_cap(engine_host.int4_kernel, fp32, roof.peak_flop_per_s,
                                                 roof.bandwidth_bytes_per_s, hardware.name))
    return model
