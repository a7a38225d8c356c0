"""Engines as presets: how a serving or generation engine runs a model (``--engine``).

Each preset names what the step model needs of an engine: the launch model (``impl``: eager ops,
fused launches, or one CUDA graph replay per decode step), how its KV cache takes a token, its
attention kernel (words only: the kernel's efficiency stays the class's, predict.py), and its host
time per step outside the kernels (scheduler, sampler, detokenizer): a fixed part and a part per
sequence, and whether it overlaps the device. Every figure cites the published profile or
measurement it comes from; "derived" marks roofcalc's arithmetic on it. Where no figure is
published the preset says so and models what its source describes. docs/conventions.md
("Engines") tabulates them.

The default, ``hf``, is the worked example's: transformers' eager ``generate``, exactly the model
``--impl hf-eager`` always was (no host time outside the eager ops is added).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RoofcalcError
from .predict import EngineHost, Efficiency

DEFAULT_ENGINE = "hf"


@dataclass(frozen=True)
class Engine:
    """One engine preset; every field with its source."""

    name: str
    words: str  # what it is, for the report
    impl: str  # the launch model: hf-eager, fused or cuda-graph (roofline.launches)
    impl_source: str
    cache_update: str  # "concat" (the cache is copied to append a token) or "in-place"
    cache_source: str
    attention: str  # the attention kernel it runs, in words
    attention_source: str
    host_fixed_s: Efficiency  # host seconds per step outside the kernels, whatever the batch
    host_per_sequence_s: Efficiency  # ... and per sequence of the step
    host_overlap: bool  # the host work runs while the device runs (an overlap / async scheduler)
    host_source: str
    ranks: str  # how the host time grows with tensor-parallel ranks: what the sources say
    tables: str = ""  # whose measured kernel tables it runs on where they differ from its name (TABLE_ENGINES)
    decode_every_head: bool = False  # its decode kernel reads a GQA group's KV once per query head
    host_ranks_s: Efficiency = Efficiency(0.0, 0.0, note="none")  # more host seconds per step on several GPUs
    no_pipeline: str = ""  # why the engine runs no pipeline parallelism (--pp refused), with its source; "" runs it
    no_expert_parallel: str = ""  # why it runs no expert parallelism (--ep refused), with its source; "" runs it
    ep_by_heads: str = ""  # why its expert parallelism splits attention by heads alone (--ep-attention tp), with its
    # source; "" runs either split
    no_moe: str = ""  # why it runs no mixture of experts (such a model refused), with its source; "" runs them
    no_mla: str = ""  # why it runs no latent attention (DeepSeek's; such a model refused), with its source
    # experts of an expert-parallel rank (--ep-attention tp) run every token of the step, their rows not routed to
    # them zeroed afterwards (vLLM 0.2.6-0.2.7), with its source; "" runs each expert on its routed rows alone
    dense_experts: str = ""
    # under --ep-attention tp, whether each rank's fused MoE call writes and activates every routed pair of the step
    # (the other ranks' experts' pairs masked to zero), with its source; "" runs the rank's own pairs alone
    masked_experts: str = ""
    # the KV cache's dtype where the engine fixes its own default whatever the weights' (llama.cpp's f16), with its
    # source; "" keeps the model's dtype
    kv_default: str = ""
    kv_source: str = ""
    # DeepSeek's latent attention as it runs it (Workload.mla; --mla by hand wins): "naive" as transformers computes
    # it, "serving" absorbed for a decode step and expanded for a prefill
    mla: str = "naive"
    mla_source: str = ""
    # the kernel it runs AWQ checkpoints of AutoAWQ's GEMM layout with (predict.INT4_KERNELS); other int4 weights
    # run Marlin-like kernels under every preset
    awq_kernel: str = "marlin"
    awq_kernel_source: str = ("Marlin-like: vLLM's awq_marlin from v0.5.3 (PR #6612), SGLang's, transformers 5's "
                              "GPT-QModel kernels (PR #41567), TensorRT-LLM's own W4A16 GEMMs")
    # its split under --tp (Workload.tp_layout; the preset alone sets it): "transformers" as transformers' plan
    # splits a model, "serving" as the serving engines do where the two differ: a MoE layer with shared experts
    # beside its routed ones (DeepSeek's, Qwen2-MoE's, Llama-4's, any model laid out so) summed with them before one
    # all-reduce, where the plan reduces each; Phi-3's heads split as Llama's, where the plan gathers every head; a
    # gated delta net (Qwen3-Next's, Qwen3.5's linear attention) split by heads, where the plan gathers it;
    # Nemotron-H's Mamba-2 mixers and MLPs split, where the plan runs them whole; GLM's and GLM-4-0414's MLP split,
    # where the plan gathers it; OLMo-2's, OLMo-3's and MiniMax-M2's heads split (their q and k norms over every
    # head all-gathered, or their sums of squares all-reduced), where the plan gathers every head
    # the dtype it loads an fp32 checkpoint's weights in under its default dtype ("auto"): "" keeps fp32 (no source
    # read for the preset); "vllm": the platform's first supported dtype, bf16 from compute capability 8.0, fp16
    # below, fp16 skipped for the model types vLLM refuses it for; "fp16"; "bf16" (llama.cpp's GGUF conversion);
    # "sglang": bf16 for a gemma, else fp16
    # (fp32_dtype; its source in fp32_source)
    fp32_as: str = ""
    fp32_source: str = ""
    # whether it runs weight-only int4 experts (GPTQ, AWQ, compressed-tensors' pack-quantized) by Marlin's MoE
    # kernel, with its source; "" runs them otherwise (their linears' kernels, as GEMM forms): the fitted int4 fused
    # MoE form (fitting.MOE_FORMATS "int4") applies only under such a preset (predict.marlin_moe)
    marlin_moe: str = ""
    marlin_capability: float = 0.0  # the least compute capability it runs Marlin's MoE kernel on (marlin_moe's source)
    # the attention kernel it picks by the GPU, where its choice depends on it: (least compute capability, below
    # this one, the kernel for heads with their own KV, the kernel for DeepSeek's latent attention), the first that
    # holds the GPU's; a GPU none holds (or of unknown capability) is named by ``attention``. Its source is
    # attention_source's
    attention_by_gpu: tuple = ()
    # a family's own latent-attention kernel where the engine picks one for it: (least compute capability, below this
    # one, the families, the kernel), before attention_by_gpu
    latent_by_family: tuple = ()
    # under its CUDA graphs, the most tokens a step may hold and still replay its graph (0: any), with its source: a
    # step of more launches each kernel, as --impl fused (predict.EngineHost.graphed)
    graph_tokens: int = 0
    graph_source: str = ""
    tp_layout: str = "transformers"
    tp_layout_source: str = ("transformers' base_model_tp_plan: a shared expert's down_proj rowwise (its own "
                             "all-reduce) beside the routed experts' MoeExpertsParallel; Phi-3's qkv_proj and "
                             "gate_up_proj colwise_gather_output; Qwen3-Next's and Qwen3.5's linear attention "
                             "colwise_gather_output; Nemotron-H's Mamba-2 mixers and MLPs whole (its plan names its "
                             "attention alone); GLM's and GLM-4-0414's gate_up_proj, OLMo-2's, OLMo-3's and "
                             "MiniMax-M2's q, k and v colwise_gather_output; kept for a preset whose own split was "
                             "not read")

    def workload_kw(self, impl: str | None = None) -> dict:
        """The Workload fields this preset sets, as --engine sets them where no flag says otherwise: how its cache
        takes a token, DeepSeek's attention as it runs it, its split under --tp, and (its launch model eager)
        transformers' eager ops' bytes. ``impl``: a launch model given by hand (--impl), whose cache update is its
        own (concatenation under hf-eager, in place otherwise), as the command line takes it."""
        launch = impl or self.impl
        cache = self.cache_update if impl is None else "concat" if impl == "hf-eager" else "in-place"
        return dict(cache_update=cache, mla=self.mla, tp_layout=self.tp_layout, eager_ops=launch == "hf-eager")

    def check_model(self, name: str, experts: bool, mla: bool) -> None:
        """Refuse a model this engine never ran: routed experts (no_moe), DeepSeek's latent attention (no_mla),
        each with its source."""
        if self.no_moe and experts:
            raise RoofcalcError(f"--engine {self.name} ran no mixture of experts ({self.no_moe}): {name} has routed "
                                f"experts")
        if self.no_mla and mla:
            raise RoofcalcError(f"--engine {self.name} ran no latent attention ({self.no_mla}): {name} has it")

    def fp32_dtype(self, model_type: str, compute_capability: float | None) -> str | None:
        """The dtype this engine loads an fp32 checkpoint in by default (fp32_as), None where it keeps fp32 or no
        source was read for it. ``model_type`` as a shape names it: a multimodal config's "gemma3 (text_config:
        gemma3_text)", whose top-level type vLLM reads (its hf_config) and whose text model's SGLang reads (its
        hf_text_config)."""
        top, _, text = model_type.partition(" (text_config: ")
        text = text.removesuffix(")") or top
        if self.fp32_as in ("fp16", "bf16"):
            return self.fp32_as
        if self.fp32_as == "sglang":
            return "bf16" if text.startswith("gemma") else "fp16"
        model_type = top
        if self.fp32_as == "vllm":
            supported = ["bf16", "fp16"] if (compute_capability or 0) >= 8.0 else ["fp16"]
            supported = [d for d in supported if not (d == "fp16" and model_type in _VLLM_NO_FP16)]
            return supported[0] if supported else None
        return None

    def attention_on(self, compute_capability: float | None, mla: bool = False, family: str = "") -> str:
        """The attention kernel it runs on a GPU of this compute capability (attention_by_gpu; a ``family``'s own
        latent-attention kernel first, latent_by_family), else ``attention``."""
        cc = compute_capability
        if cc is None:
            return self.attention
        if mla:
            own = next((k for lo, hi, families, k in self.latent_by_family if lo <= cc < hi and family in families), "")
            if own:
                return own
        return next((latent if mla else heads for lo, hi, heads, latent in self.attention_by_gpu if lo <= cc < hi),
                    self.attention)

    @property
    def host(self) -> EngineHost:
        """What the step model (predict.step_times) takes of the preset."""
        return EngineHost(self.host_fixed_s, self.host_per_sequence_s, self.host_overlap, self.name,
                          tables=self.tables, decode_every_head=self.decode_every_head, ranks_s=self.host_ranks_s,
                          marlin_moe="marlin" if self.marlin_moe else "", marlin_capability=self.marlin_capability,
                          graph_tokens=self.graph_tokens)

    @property
    def graphs(self) -> bool:
        return self.impl == "cuda-graph"

    def record(self) -> dict:
        """The preset's fields for the JSON report."""
        def eff(e: Efficiency) -> dict:
            return {"expected": e.expected, "pessimistic": e.pessimistic, "note": e.note}

        return {"name": self.name, "words": self.words, "impl": self.impl, "impl_source": self.impl_source,
                "cache_update": self.cache_update, "cache_source": self.cache_source, "attention": self.attention,
                "attention_source": self.attention_source, "host_fixed_s": eff(self.host_fixed_s),
                "host_per_sequence_s": eff(self.host_per_sequence_s), "host_overlap": self.host_overlap,
                "host_source": self.host_source, "ranks": self.ranks, "host_ranks_s": eff(self.host_ranks_s),
                "mla": self.mla, "mla_source": self.mla_source, "tp_layout": self.tp_layout,
                "tp_layout_source": self.tp_layout_source, "awq_kernel": self.awq_kernel,
                "awq_kernel_source": self.awq_kernel_source,
                "tables": self.host.tables_used, "decode_every_head": self.decode_every_head,
                "fp32_as": self.fp32_as or None, "fp32_source": self.fp32_source or None,
                "kv_default": self.kv_default or None, "kv_source": self.kv_source or None,
                "marlin_moe_source": self.marlin_moe or None, "masked_experts_source": self.masked_experts or None, "graph_tokens": self.graph_tokens or None,
                "graph_source": self.graph_source or None}


_NONE = "no published figure"
# the model types vLLM's config/model.py refuses fp16 for (_FLOAT16_NOT_SUPPORTED_MODELS: 'Numerical instability')
_VLLM_NO_FP16 = ("gemma2", "gemma3", "gemma3_text", "plamo2", "glm4")
# vLLM V0 with Ray workers: llama-2-7b at batch 1 on A100s, 2,000 tokens generated, took 24.2 s at TP 1 and at TP 2,
# 20.2 s with the PR and 17.0 s at TP 2 under the multiprocessing executor of PR #3466 (vllm-project/vllm PR #3763's
# table): (24.2 - 17.0) s / 2,000 = 3.6 ms a step of exposed worker RPC (derived). V1 runs neither that executor
# path nor V0's scheduler, and no figure at TP > 1 is published for it.
_VLLM_RANKS = ("no published figure for V1 at TP > 1: V0's Ray workers cost 3.6 ms a step at TP 2 (vLLM PR #3763: "
               "llama-2-7b, 2,000 tokens in 24.2 s with Ray, 17.0 s with PR #3466's multiprocessing executor; derived), "
               "a path V1 does not take; not modelled")
_NO_RANKS = ("no published figure: SGLang issue #1857 ('TP8 scheduling overhead is very high for small model, "
             "Llama 3 8B on AMD') and arXiv 2603.22774 (CPU-induced slowdowns persist in multi-GPU serving "
             "with CUDA graphs) say it grows, with no per-step ms; not modelled")


def _zero(note: str) -> Efficiency:
    return Efficiency(0.0, 0.0, note=note)


# vLLM: the gap between two decode steps of the V1 prototype (AsyncLLM, PR #9826), Llama-2-7b at batch 256 on
# ShareGPT: "about 5-6ms (token gap)" (vllm-project/vllm issue #10634). One batch size is published, so all of
# it is taken as per-sequence work (derived: 5.5 ms / 256 = 21.5 us, 6 ms / 256 = 23.4 us pessimistic).
# Async scheduling (PR #19970: "the scheduler operate[s] one step ahead of the current execution") is on
# unless disabled (vllm/config/scheduler.py: "async_scheduling: bool | None = None", "If set to False, disable
# async scheduling") from vLLM 0.14.0 (PR #27614, merged 2025-12-29; 0.13.0 and before: `async_scheduling: bool =
# False`, off unless --async-scheduling): the work overlaps the device. PR #19970 saw "no significant latency
# improvement ... for batch size 1 scenarios, as scheduler overhead in those cases is already minimal"; no published
# per-step figure for V1 before 0.14 without it was found, so the preset takes it overlapped for every V1. PR #11133
# measured what stays exposed at batch 256 with CUDA graphs, "150-170us", which this preset does not add.
_VLLM_PER_SEQ = Efficiency(5.5e-3 / 256, 6e-3 / 256, note="derived: vLLM issue #10634, 5-6 ms between decode "
                           "steps at batch 256 (Llama-2-7b, V1 prototype), / 256 sequences")
# llama.cpp: with CUDA graphs, "CUDA Graph Execution ... is responsible for around 85-90% of the time taken in
# evaluating each token.." and "The remaining 10-15% of the time is taken by CPU activities" (ggml-org/llama.cpp
# issue #7456; llama2 Q4_K_M 7B/13B on A100 and H100). At the 6.10 ms per token of llama-2-7b Q4_K_M on an
# H100-PCIe with graphs (issue #6763: 163.83 tok/s) that is 0.61-0.92 ms (derived: 0.125 x 6.10 = 0.76 ms
# expected, 0.15 x 6.10 = 0.92 ms pessimistic). The device waits for it: sampling runs on the CPU between
# graph executions.
_LLAMACPP_FIXED = Efficiency(0.125 * 1000 / 163.83 * 1e-3, 0.15 * 1000 / 163.83 * 1e-3,
                             note="derived: llama.cpp issue #7456, 10-15 % of each token on the CPU with CUDA graphs, "
                             "at issue #6763's 6.10 ms per token (llama-2-7b Q4_K_M, H100-PCIe)")

# vLLM V0's host time per step, from Vidur's profile of a V0-derived engine (Sarathi-Serve) on an A100
# (microsoft/vidur data/profiling/a100/cpu_overheads.csv @ 0633efa, Llama-2-7b-hf, tensor_parallel_degree 1, batch
# 8 to 64 by 8): SCHEDULE + SAMPLER_E2E + PREPARE_INPUTS_E2E + PROCESS_MODEL_OUTPUTS, ms per step. Their medians'
# least-squares line over the eight batches is 1.202 ms + 0.100 ms a sequence (batch 8: 0.165 + 0.888 + 0.293 +
# 0.624 = 1.970 ms; batch 64: 0.952 + 1.370 + 1.163 + 4.108 = 7.594 ms); their means' 2.019 ms + 0.171 ms a
# sequence, taken as the pessimistic end (derived). The engine waits for all of it: V0's LLMEngine.step schedules,
# runs the model and processes its output in turn (output processing overlapped only from v0.6.0, PR #7049).
_V0_FIXED = Efficiency(1.202e-3, 2.019e-3, note="derived: Vidur's a100 cpu_overheads.csv (V0-derived engine, "
                       "Llama-2-7b, batch 8-64), medians' line (means' pessimistic)")
_V0_PER_SEQ = Efficiency(0.100e-3, 0.171e-3, note="derived: the same line's slope")
# V0's tensor-parallel workers under Ray: vllm-project/vllm PR #3763's table (llama-2-7b, batch 1, 2,000 tokens on
# A100s): 24.2 s at TP 1 and at TP 2 with Ray workers, 17.0 s at TP 2 with PR #3466's multiprocessing executor:
# (24.2 - 17.0) / 2,000 = 3.6 ms a step more on several GPUs (derived; one figure, so both ends). Vidur's
# RAY_COMM_TIME_MEDIAN in the file above, 3.06 ms at TP 2 and 3.13 ms at TP 4 (batch 8), agrees; it grows with
# the batch there (6.49 and 8.34 ms at batch 64), which the one published end-to-end figure does not say: not
# modelled. The preset covers vLLM from its CUDA graphs (0.2.6) to the last release that decoded with
# PagedAttention (0.4.2): later V0 releases changed the decode kernel, the TP executor and the output processing.
_V0_RANKS = Efficiency(3.6e-3, 3.6e-3, note="derived: vLLM PR #3763, Ray workers vs multiprocessing at TP 2 "
                       "(24.2 s vs 17.0 s for 2,000 tokens)")

# DeepSeek's latent attention in the serving engines: the latent absorbed into the query and output for a decode
# step, K and V expanded by kv_b_proj for a prefill
_MLA_VLLM = ("vllm/v1/attention/backends/mla/common.py: 'the compute friendly approach for \"prefill\"' (K and V "
             "up-projected) 'and the data-movement friendly approach for \"decode\"' (attention over the latent)")
_MLA_SGLANG = ("sglang python/sglang/srt/models/deepseek_v2.py: a decode batch runs AttnForwardMethod.MLA (the absorbed "
               "latent attention); an extend without a cached prefix runs MHA_CHUNKED_KV (K and V expanded; PR #5113)")
_MLA_TRTLLM = ("TensorRT-LLM tensorrt_llm/_torch/modules/attention.py (MLA): forward_context_default expands K and V by "
               "kv_b_proj; the generation phase runs forward_absorption_generation")

# the serving engines' split under tensor parallelism where it differs from transformers' plan: each builds a MoE
# layer's shared expert without its own reduction, adds its partial output to the routed experts' and all-reduces
# the sum once; each runs Phi-3 as Llama (heads split, not gathered); each splits a gated delta net by heads; and
# vLLM splits Nemotron-H's Mamba-2 mixers by heads and groups and its MLPs as Llama's
_SERVING_VLLM = ("vllm/model_executor/models/deepseek_v2.py, qwen2_moe.py, llama4.py: the shared expert built with "
                 "reduce_results=False and one all-reduce of the routed and shared outputs summed "
                 "(fused_moe/layer.py, FusedMoE.must_reduce_shared_expert_outputs: 'When just tensor-parallel is "
                 "used, it is not required to reduce the shared_experts results immediately'; with expert "
                 "parallelism's all-to-all kernels they are reduced early); phi3.py: 'class "
                 "Phi3ForCausalLM(LlamaForCausalLM)'; model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py "
                 "(QwenGatedDeltaNetAttention): a gated delta net's in-projections MergedColumnParallelLinear, conv1d "
                 "ColumnParallelLinear, A_log and dt_bias 1/N a rank, out_proj RowParallelLinear; nemotron_h.py and "
                 "layers/mamba/mamba_mixer2.py: the Mamba-2 mixer's in_proj a MergedColumnParallelLinear of z, x, B, C "
                 "and dt, conv1d column-parallel, A, D, dt_bias and the gated norm's weight 1/N a rank, out_proj "
                 "RowParallelLinear; the MLP's up_proj ColumnParallelLinear, down_proj RowParallelLinear; bamba.py and "
                 "granitemoehybrid.py: MambaMixer2 with its single group's B and C on every rank (n_groups 1), "
                 "Granite's shared MLP input_linear MergedColumnParallelLinear, output_linear RowParallelLinear; "
                 "glm.py 'class GlmForCausalLM(LlamaForCausalLM)', glm4.py 'from .llama import LlamaMLP as Glm4MLP'; "
                 "olmo2.py (OLMo-2 and OLMo-3): qkv_proj QKVParallelLinear, _apply_qk_norm all-gathers the rank's q "
                 "and k, norms them whole and takes the rank's share again; minimax_m2.py: "
                 "MiniMaxText01RMSNormTP.forward_qk, q_norm and k_norm on the rank's share with their sums of "
                 "squares in one all-reduce")
_SERVING_SGLANG = ("sglang python/sglang/srt/models/deepseek_v2.py, qwen2_moe.py, llama4.py: the shared expert built "
                   "with reduce_results=False, 'final_hidden_states + shared_output', then one "
                   "tensor_model_parallel_all_reduce; llama.py: 'class Phi3ForCausalLM(LlamaForCausalLM): pass'; "
                   "qwen3_next.py (Qwen3GatedDeltaNet) and qwen3_5.py: a gated delta net's in-projections and conv1d "
                   "column-parallel, A_log and dt_bias 1/N a rank, out_proj RowParallelLinear; nemotron_h.py: the "
                   "routed and shared experts' outputs summed before one tensor_model_parallel_all_reduce (its "
                   "Mamba-2 mixer taken as vLLM's: not read)")
_SERVING_TRTLLM = ("TensorRT-LLM tensorrt_llm/_torch/models/modeling_deepseekv3.py and modeling_llama.py (Llama4MoE): "
                   "the shared expert with reduce_output=False, 'shared_output + routed_output', then one allreduce; "
                   "modeling_phi3.py: Phi3Attention(Attention) and GatedMLP, split by heads and width, the fused qkv_proj and "
                   "gate_up_proj weights 'split correctly before sharding to support tp_size >1'; "
                   "modeling_qwen3_next.py: the linear attention (Qwen3NextGatedDeltaNet) split by heads, its output "
                   "all-reduced (fused with the next RMSNorm); Nemotron-H's split not read, taken as vLLM's")
_SERVING_V0 = ("vLLM v0.4.2 model_executor/models/qwen2_moe.py and deepseek.py: the shared expert built with "
               "reduce_results=False, fused_moe's output plus shared_output, then one tensor_model_parallel_all_reduce; "
               "phi3 runs as Llama (v0.4.2's model registry maps Phi3ForCausalLM to llama's LlamaForCausalLM); "
               "Qwen3-Next, Qwen3.5 and Nemotron-H, which v0.4.2 predates, split as the later engines split them")

ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine(
        "hf", "transformers' eager generate (the worked example)", "hf-eager",
        "transformers docs (llm_optims.md): eager PyTorch by default; static cache + torch.compile is opt-in "
        "('for up to a 4x speed up')",
        "concat", "transformers cache_utils.py: DynamicCache, 'the default for generative models', appends by "
        "'torch.cat([self.keys, key_states], dim=-2)'",
        "PyTorch SDPA", "transformers model docs: 'SDPA is used by default for torch>=2.1.1 when an "
        "implementation is available'",
        _zero(f"{_NONE} for generate's loop outside the model's ops: the eager ops' host time (HOST_PER_OP, "
              "roofcalc measure) is the whole host model, as the worked example"),
        _zero(_NONE), False,
        "the eager ops' Python and dispatch (predict.HOST_PER_OP) is the host model; nothing is added",
        _NO_RANKS),
    Engine(
        "vllm", "vLLM (V1 engine)", "cuda-graph",
        "vLLM engine args: enforce_eager 'Default: False' ('If False, we will use CUDA graph'); "
        "docs/design/cuda_graphs.md: FULL_AND_PIECEWISE '(default mode) full CUDA Graph for uniform decode'",
        "in-place", "vllm csrc/cache_kernels.cu reshape_and_cache_flash: paged blocks written in place by "
        "slot_mapping",
        "FlashAttention (FA3 on Hopper)", "vllm/platforms/cuda.py _get_backend_priorities: FLASH_ATTN first, "
        "FLASHINFER first on compute capability 10.x; FLASH_ATTN from 8.0, FLASHINFER from 7.5 "
        "(supports_compute_capability); v1/attention/backends/fa_utils.py get_flash_attn_version: FA3 on 9.x, "
        "else FA2; TRITON_ATTN below 7.5; latent attention: FLASH_ATTN_MLA on 9.x alone, FLASHINFER_MLA on 10.x, "
        "TRITON_MLA elsewhere",
        _zero(f"{_NONE} for V1: the one published gap (issue #10634) is taken per sequence"),
        _VLLM_PER_SEQ, True,
        "vLLM issue #10634 (5-6 ms between decodes at batch 256, V1 prototype), per sequence (derived); "
        "overlapped: async scheduling, on unless disabled from vLLM 0.14.0 (vllm/config/scheduler.py; PR #27614), "
        "opt-in before it (PR #19970: at batch 1 'scheduler overhead ... is already minimal')",
        _VLLM_RANKS, mla="serving", mla_source=_MLA_VLLM, tp_layout="serving",
        attention_by_gpu=((0.0, 7.5, "Triton attention", "Triton MLA"), (7.5, 8.0, "FlashInfer", "Triton MLA"),
                          (8.0, 9.0, "FlashAttention 2", "Triton MLA"), (9.0, 10.0, "FlashAttention 3", "FlashAttention MLA"),
                          (10.0, 11.0, "FlashInfer", "FlashInfer MLA"), (11.0, 13.0, "FlashAttention 2", "Triton MLA")),
        tp_layout_source=_SERVING_VLLM, fp32_as="vllm",
        fp32_source="vllm/config/model.py _resolve_auto_dtype: 'Downcast for float32 models' to the platform's "
        "preferred dtype, vllm/platforms/cuda.py supported_dtypes: bf16 first from compute capability 8.0, fp16 "
        "below ('Pascal, Volta and Turing NVIDIA GPUs, BF16 is not supported'), fp16 not for "
        "_FLOAT16_NOT_SUPPORTED_MODELS (gemma2, gemma3, gemma3_text, plamo2, glm4)",
        marlin_moe="vllm/model_executor/layers/quantization: GPTQMarlinMoEMethod (gptq_marlin.py), AWQMarlinMoEMethod "
        "(awq_marlin.py) and CompressedTensorsWNA16MarlinMoEMethod (compressed_tensors_moe.py) run fused_marlin_moe, "
        "from compute capability 7.5 (Turing since PR #29901, 'add marlin kernel support for turing (sm75)', MoE "
        "included; 8.0 before); AIConfigurator's vLLM 0.24 int4 MoE tables name that kernel (kernel source "
        "..._wna16marlinmoe_marlin_marlinexperts)", marlin_capability=7.5,
        masked_experts="vllm/model_executor/layers/fused_moe: a rank's FusedMoE maps the other ranks' experts to -1 "
        "(expert_map); fused_moe.py's Triton kernel writes zeros for their rows (write_zeros_to_output) and the "
        "activation and moe_sum run over all M x topk rows, as fused_marlin_moe's do (its GEMMs with is_ep)"),
    Engine(
        "sglang", "SGLang (overlap scheduler)", "cuda-graph",
        "SGLang server arguments: '--disable-cuda-graph | Disable cuda graph. | False'",
        "in-place", "sglang mem_cache/memory_pool.py: a token-granular pool, 'kv_buffer[...][loc] = cache_k'",
        "FlashAttention 3 on Hopper, else FlashInfer", "SGLang attention_backend.md: 'FlashAttention 3 "
        "(Default for Hopper Machines...)', 'FlashInfer (Default for Non-Hopper Machines...)'; srt/server_args.py "
        "_get_default_attn_backend: fa3 on Hopper, trtllm_mha on SM100, else flashinfer (from compute capability 7.5; "
        "triton below it and for a model with attention sinks); latent attention: fa3 on Hopper, flashinfer on SM100, "
        "else triton; _handle_model_specific_adjustments: 'Use trtllm_mla as attention backend on sm100 for "
        "DeepseekV3ForCausalLM' (DeepSeek-V3 and R1, Kimi-K2)",
        _zero(f"{_NONE}: the overlap scheduler hides it; modelled as no host time beyond the graph replay"),
        _zero(_NONE), True,
        "SGLang v0.4 blog (2024-12-04): the zero-overhead overlap scheduler, 'turned on by default', shows "
        "'no single idle time on the GPU' over 5 decode batches; no per-step figure is published",
        _NO_RANKS, mla="serving", mla_source=_MLA_SGLANG, tp_layout="serving",
        attention_by_gpu=((0.0, 7.5, "Triton attention", "Triton MLA"), (7.5, 9.0, "FlashInfer", "Triton MLA"),
                          (9.0, 10.0, "FlashAttention 3", "FlashAttention 3 MLA"),
                          (10.0, 11.0, "TensorRT-LLM's MHA (trtllm_mha)", "FlashInfer MLA"),
                          (11.0, 13.0, "FlashInfer", "Triton MLA")),
        latent_by_family=((10.0, 11.0, ("deepseek_v3",), "TensorRT-LLM's MLA (trtllm_mla)"),),
        tp_layout_source=_SERVING_SGLANG, fp32_as="sglang",
        fp32_source="sglang srt/configs/model_config.py _get_and_verify_dtype: under 'auto' a float32 config "
        "'we downcast float32 to bfloat16' for a gemma model type, else 'we use float16 for float32 models'",
        marlin_moe="sglang srt/layers/moe/fused_moe_triton/fused_marlin_moe.py: fused_marlin_moe over sgl-kernel's "
        "moe_wna16_marlin_gemm (csrc/moe/marlin_moe_wna16, Marlin's MoE kernel as vLLM's), which its GPTQ, AWQ and "
        "compressed-tensors WNA16 MoE methods call, from compute capability 8.0 (the kernel's own check: "
        "'marlin_gemm(..) requires CUDA_ARCH >= 8.0'); AIConfigurator's SGLang int4 MoE tables time it "
        "(sglang_marlin_moe)", marlin_capability=8.0,
        masked_experts="sglang srt/layers/moe/fused_moe_triton/fused_moe.py (adapted from vLLM's: write_zeros_to_output "
        "for another rank's experts) and fused_marlin_moe.py (is_ep): the activation and moe_sum_reduce over all M x "
        "topk rows"),
    Engine(
        "trtllm", "TensorRT-LLM (PyTorch backend, overlap scheduler)", "cuda-graph",
        "TensorRT-LLM llm_args.py: cuda_graph_config on by default, 'enabled for batches that consist of "
        "decoding requests *only*'",
        "in-place", "TensorRT-LLM gpt-attention.md: a paged KV cache whose blocks a cache manager hands out; "
        "'The GPT attention operator populates the KV cache.'",
        "TRTLLM backend: masked MHA / XQA for decode", "TensorRT-LLM llm_args.py: attn_backend default 'TRTLLM'; "
        "gpt-attention.md: generation is 'a single kernel called the masked multi-head attention', XQA "
        "'default enabled'",
        _zero(f"{_NONE}: the overlap scheduler hides it; modelled as no host time beyond the graph replay"),
        _zero(_NONE), True,
        "TensorRT-LLM overlap-scheduler docs: 'At step n, the system launches GPU computation for step n+1 "
        "without waiting for CPU tasks', 'Enabled by default'; no per-step figure is published",
        _NO_RANKS, mla="serving", mla_source=_MLA_TRTLLM, tp_layout="serving",
        tp_layout_source=_SERVING_TRTLLM),
    Engine(
        "gpt-fast", "gpt-fast (torch.compile, reduce-overhead)", "cuda-graph",
        "PyTorch blog 'Accelerating Generative AI II' (2023-11-30): torch.compile(decode_one_token, "
        "mode='reduce-overhead', fullgraph=True), i.e. CUDA graphs",
        "in-place", "gpt-fast model.py: a static preallocated cache, 'k_out[:, :, input_pos] = k_val'",
        "Inductor-generated (F.scaled_dot_product_attention)", "the same blog: 'torch.compile actually "
        "generates every single kernel from scratch, including both the matrix multiplications and the "
        "attention'",
        _zero(f"{_NONE}: sampling runs inside the compiled decode step; modelled as no host time beyond the graph "
              "replay"),
        _zero(_NONE), True,
        "gpt-fast generate.py: decode_one_token returns sample(logits) inside the compiled graph, and the "
        "token is drawn by multinomial_sample_one_no_sync, so the loop never waits for the device",
        "gpt-fast README (8 x A100, batch 1): 7B at TP 1/2/4/8 = 104.9/168.84/254.02/328.43 tok/s; the part "
        "that does not shrink with TP is device time (collectives), which the step model counts; no host figure",
        no_expert_parallel="gpt-fast mixtral-moe/tp.py: _apply_tp_moe_ffn shards every expert's w1, w3 and w2 over "
        "the ranks, one all-reduce after them: --tp"),
    Engine(
        "llama.cpp", "llama.cpp (ggml CUDA, CUDA graphs)", "cuda-graph",
        "llama.cpp CMakeLists.txt: GGML_CUDA_GRAPHS_DEFAULT ON in llama.cpp builds (PR #6766)",
        "in-place", "llama.cpp src/llama-kv-cache.cpp: 'ggml_set_rows(ctx, k, k_cur, k_idxs)' into a "
        "preallocated cache",
        "ggml FlashAttention kernels, -fa auto", "ggml/CMakeLists.txt: GGML_CUDA_FA 'compile ggml "
        "FlashAttention CUDA kernels' ON; llama.cpp args: -fa 'default: auto'",
        _LLAMACPP_FIXED, _zero(f"{_NONE} (llama.cpp PR #6766: graphs help at batch 1, 'for batch sizes >> 1 "
                               "it's slower')"), False,
        "llama.cpp issue #7456: 10-15 % of each token is CPU activity between CUDA graph executions; at "
        "issue #6763's 6.10 ms per token, 0.76 ms (0.92 ms pessimistic) per step, derived",
        _NO_RANKS,
        no_expert_parallel="llama.cpp common/arg.cpp: --split-mode 'none', 'layer' (split layers and KV across "
        "GPUs) or 'row' (split rows across GPUs); no expert parallelism",
        fp32_as="bf16", fp32_source="llama.cpp convert_hf_to_gguf.py: --outtype 'auto' (its default in current "
        "versions; 'f16' before) keeps a float16 first tensor in f16 and writes any other in bf16: a float32 "
        "checkpoint's GGUF is bf16",
        kv_default="fp16", kv_source="llama.cpp common/common.h: 'ggml_type cache_type_k = GGML_TYPE_F16;' and "
        "cache_type_v likewise (-ctk / -ctv f16 by default)",
        graph_tokens=1, graph_source="ggml/src/ggml-cuda/ggml-cuda.cu check_node_graph_compatibility: a node of more "
        "than one token 'disabling CUDA graphs due to batch size > 1' (a prompt, or several sequences' decode "
        "launch each kernel)"),
    Engine(
        "trtllm-0.6", "TensorRT-LLM v0.5 and v0.6 (TensorRT engines, C++ runtime, before XQA)", "fused",
        "TensorRT-LLM docs/source/performance.md (v0.6.1): engines built by examples/*/build.py with "
        "--use_gpt_attention_plugin and --enable_context_fmha, run by cpp gptSessionBenchmark; its commands "
        "capture no CUDA graph",
        "in-place", "TensorRT-LLM gpt-attention.md: 'The GPT attention operator populates the KV cache.'",
        "masked MHA for every decode call (no XQA)",
        "TensorRT-LLM release notes: v0.7.1 lists 'FP8 KV cache support for XQA kernel' and 'MMHA optimization "
        "for MQA and GQA' (the XQA kernel reads a GQA group's KV once: docs/source/blogs/XQA-kernel.md); before "
        "it the generation phase is 'a single kernel called the masked multi-head attention' (gpt-attention.md), "
        "launched one block per query head and sequence (decoderMaskedMultiheadAttentionLaunch.h: grid "
        "{num_heads, batch_size}). Modelled as each query head reading its group's KV (AttentionFit.every_head) "
        "on TensorRT-LLM's measured decode form; what L2 saved of those reads in these versions was not measured",
        _zero(f"{_NONE}: a static batch in the C++ runtime; no host time beyond the launches is modelled"),
        _zero(_NONE), False,
        "performance.md (v0.6.1): throughput from gptSessionBenchmark, a static batch run by the C++ runtime; "
        "no per-step host figure is published",
        _NO_RANKS, tables="trtllm", decode_every_head=True,
        no_moe="TensorRT-LLM's release notes list 'Mixture of Experts support' and the 'Mixtral-8x7B model' first in "
        "0.7.1"),
    Engine(
        "vllm-v0", "vLLM V0, 0.2.6 to 0.4.2 (synchronous engine, Ray workers, PagedAttention decode)", "cuda-graph",
        "vLLM v0.4.2 engine/arg_utils.py: 'enforce_eager: bool = False'; worker/model_runner.py captures decode "
        "graphs up to batch 256 and max_seq_len_to_capture (8,192) and runs longer or larger steps eagerly (not "
        "modelled: there a step's kernels outlast their launches)",
        "in-place", "vLLM v0.4.2 csrc/cache_kernels.cu reshape_and_cache: paged blocks written in place by "
        "slot_mapping",
        "FlashAttention-2 prefill (xFormers without the flash_attn package), its own PagedAttention decode",
        "vLLM v0.4.2 attention/backends/flash_attn.py: flash_attn_varlen_func for prefill, "
        "PagedAttention.forward_decode for decode (csrc/attention/attention_kernels.cu: a block per query head, "
        "'kv_head_idx = head_idx / num_queries_per_kv'); decode moved to flash_attn_with_kvcache in v0.4.3 (PR "
        "#4907). Modelled on vLLM's measured decode form: a GQA group's query heads are adjacent blocks that share "
        "their reads through L2 (roofcalc's reading once per query head predicted Qwen2-7B at 30k tokens 1.8x too "
        "slow, docs/validation.md)",
        _V0_FIXED, _V0_PER_SEQ, False,
        "Vidur's A100 profile of a V0-derived engine (microsoft/vidur data/profiling/a100/cpu_overheads.csv): "
        "scheduler, sampler, input preparation and output processing, 1.20 ms + 0.100 ms a sequence (medians; "
        "means 2.02 ms + 0.171 ms, pessimistic), derived; waited for: V0's step runs them in turn",
        "Ray workers: 3.6 ms a step more on several GPUs (vLLM PR #3763: llama-2-7b, 2,000 tokens in 24.2 s with "
        "Ray at TP 2, 17.0 s with PR #3466's multiprocessing executor; derived); the same at any rank count, as "
        "Vidur's RAY_COMM_TIME at batch 8 (3.06 ms at TP 2, 3.13 ms at TP 4; 6.49 and 8.34 ms at batch 64, a "
        "growth with the batch not modelled)",
        tables="vllm", host_ranks_s=_V0_RANKS, tp_layout="serving", tp_layout_source=_SERVING_V0, fp32_as="fp16",
        fp32_source="vLLM v0.4.2 vllm/config.py _get_and_verify_dtype: under 'auto' a float32 config runs in "
        "float16 ('Following the common practice, we use float16 for float32 models')",
        no_pipeline="vLLM 0.4.2 vllm/config.py: 'Pipeline parallelism is not supported yet.'",
        ep_by_heads="vLLM PR #2090 (v0.2.6, mixtral.py's expert_indicies): 'shard whole experts across ranks', "
        "attention by heads, one all-reduce after each; no all-to-all dispatch (v0.3.0's fused MoE, PR #2542, "
        "shards every expert instead: --tp)",
        dense_experts="vLLM PR #2090 (v0.2.6, mixtral.py's MixtralMoE.forward): each of a rank's experts runs every "
        "token, its output multiplied by the token's routing weight for it, zero where the token was not routed to it",
        no_mla="vLLM PR #4650 ('Support Deepseek-V2') was still unmerged on 2024-06-22 (deepseek-ai/DeepSeek-Coder-V2 "
        "issue #19), after 0.4.2",
        awq_kernel="vllm-awq", awq_kernel_source="vLLM v0.4.2 quantization/awq.py: AWQLinearMethod runs ops.awq_gemm "
        "(AutoAWQ's GEMM kernel) below 256 tokens, awq_dequantize and torch.matmul from there (PR #2566, v0.3.0; "
        "before it, 0.2.6-0.2.7, the kernel at every size); awq_marlin came in v0.5.3 (PR #6612)"),
)}


# the quantization methods (shapes' weight_method; "" for a format given by hand) whose int4 experts vLLM and SGLang
# run by Marlin's MoE kernel (GPTQ, AWQ, compressed-tensors' WNA16); another's (bitsandbytes, a GGUF file) run the
# engine's own kernels for it
MARLIN_METHODS = ("", "gptq", "awq", "compressed-tensors")


def marlin_host(host, method: str, gguf: bool = False):
    """``host`` (predict.EngineHost) with its int4 experts' kernel as a checkpoint of quantization ``method`` runs
    them: Marlin's MoE kernel where the engine runs it for that method, else the method's name (a GGUF file's
    "GGUF"), which keeps the experts on the GEMM forms (predict.marlin_moe)."""
    from dataclasses import replace

    if host is None or host.marlin_moe != "marlin":
        return host
    if gguf:
        return replace(host, marlin_moe="GGUF")
    return host if method in MARLIN_METHODS else replace(host, marlin_moe=method)


def library_engine(engine, engine_host, impl: str | None, shape, who: str):
    """(impl, engine_host, the Workload fields the preset sets) of a library call's ``engine`` (a preset's name or
    an Engine) as --engine gives them: its launch model unless ``impl`` is given, its host (an AWQ checkpoint's
    kernel, the preset's), and the model refused where the engine never ran it; without one, hf-eager and no
    fields. ``engine_host`` by hand and ``engine`` together are refused."""
    if engine is None:
        return impl or "hf-eager", engine_host, {}
    if engine_host is not None:
        raise RoofcalcError(f"{who}: give engine (a preset) or engine_host (its host time by hand), not both")
    preset = engine if isinstance(engine, Engine) else find_engine(str(engine))
    if shape is not None:
        preset.check_model(shape.name, shape.moe is not None, shape.mla is not None)
    host = marlin_host(preset.host, getattr(shape, "weight_method", ""))
    if getattr(shape, "weight_method", "") == "awq":
        from dataclasses import replace

        host = replace(host, int4_kernel=preset.awq_kernel)
    return impl or preset.impl, host, preset.workload_kw(impl)


def find_engine(name: str) -> Engine:
    """A preset by name (case and '_' for '-' forgiven); any other name is refused with the closest."""
    from .inputs import did_you_mean, one_line

    if not name.strip():
        raise RoofcalcError(f"--engine is empty; give one of {', '.join(ENGINES)}")
    key = name.strip().lower().replace("_", "-")
    key = {"vllm-v1": "vllm", "vllmv1": "vllm"}.get(key, key)  # the vllm preset is V1 (vllm-v0 the engine before)
    key = {"tensorrt-llm": "trtllm", "tensorrtllm": "trtllm", "trt-llm": "trtllm", "transformers": "hf",
           "llamacpp": "llama.cpp", "llama-cpp": "llama.cpp"}.get(key, key)  # the engines' own names
    for engine in ENGINES.values():
        if key in (engine.name, engine.name.replace(".", ""), engine.name.replace("-", "")):
            return engine
    hint = did_you_mean(key, {n: n for n in ENGINES})
    what = hint if hint else "not a preset"
    raise RoofcalcError(f"--engine '{one_line(name)[:40]}': {what} ({' '.join(ENGINES)})")


def comparison_engine(engine: Engine) -> Engine:
    """The engine with CUDA graphs a host-bound verdict is held against: vLLM, or SGLang under vLLM itself."""
    return ENGINES["sglang"] if engine.name == "vllm" else ENGINES["vllm"]
