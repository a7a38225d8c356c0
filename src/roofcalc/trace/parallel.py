"""One tensor-parallel rank of a traced model (``--tp``), by its config class's own plan.

transformers' config classes carry ``base_model_tp_plan``: module paths of the base model (``layers.*`` for
every layer) mapped to a style. A model's whole plan is its causal-LM class's ``_tp_plan`` (lm_head),
the config's plan, and the input embedding vocab-parallel where the base model has ``embed_tokens``
(transformers' ``init_parallel_plans``). A config class whose plan splits no layer (none at all: Falcon's;
the embedding alone: gpt-oss's from transformers 5.25) and a serving plan roofcalc knows (:data:`SERVING_PLANS`)
takes that one; one with no plan and none known is refused.

Each traced kernel gets its rank's share, from the plan:

- ``colwise`` / ``packed_colwise``: the linear's outputs split, n / N (a fused q/k/v keeps whole heads:
  N/T query heads and max(1, K/T) KV heads a rank, the KV heads replicated when fewer than the ranks, as
  the hand plan does); FLOPs, weights and the output N-th. ``unit_colwise`` (transformers'
  UnitColwiseParallel, on k and v projections): the same, whole heads a rank, each replicated over N/K
  ranks where there are fewer KV heads than ranks.
- ``rowwise`` / ``packed_rowwise``: the inputs split, k / N; FLOPs, weights and the input N-th; an
  all-reduce of the output (m × n activations) follows it. ``rowwise_split_input`` alike, its input
  the whole (gathered) activation.
- ``colwise_gather_output`` (lm_head): n / N, then an all-gather of the outputs.
- ``embedding_rowwise``: vocab-parallel, 1/N of the table a rank, an all-reduce of the rows looked up
  (none for an embedding tied to lm_head under transformers' plan, as ``roofcalc.parallel`` has it).
- ``replicate`` / ``replicated_with_grad_allreduce``, and every module the plan does not name: whole.

Every other kernel of a module that holds a ``colwise`` entry (the attention core, rotary on q and k,
the cache update, the activation between gate/up and down) works on the rank's heads or width: its
FLOPs and activations N-th, its KV bytes 1/min(N, K)-th (the cache update's everything: it moves the
rank's KV heads alone); a weight it reads (a per-head norm's) is whole. A module counts as split in the
layers where one of its own kernels is split (Nemotron-H's ``mixer`` is an attention block split by heads
in some layers, a Mamba-2 or MLP block run whole in others). A weight matmul inside such a
module that the plan does not name runs whole where it reads the layer's hidden state (a router), and
is refused otherwise; so are the styles this module does not model yet (``embedding_colwise``). Multi-head
latent attention (``mla_kv_a_proj``, transformers' MlaKvAProjParallel): the latent projection whole,
and the latents' norms and the latent cache's update whole on every rank; ``kv_b_proj`` (colwise)
reads the latent cache whole and makes its heads' keys and values. A rowwise projection's bias is added
once after the reduction: whole on every rank. ``moe_tp_experts`` (routed experts): every rank holds
every expert at 1/N of its width; the grouped matmul onto the experts' width keeps its input and 1/N of
its outputs, the one back to the hidden size 1/N of its input, and one all-reduce after the experts sums
their partial outputs (transformers' MoeExpertsParallel). A shared expert beside them (a module in the block
that holds the experts: ``mlp.shared_expert`` beside ``mlp.experts``) runs its rowwise all-reduce, as the plan
says; in the serving engines' layout (``Workload.tp_layout == "serving"``) it runs none, and the experts'
all-reduce follows the block's last kernel, the sum of the two, as vLLM, SGLang and TensorRT-LLM reduce them.
That layout splits Phi-3 as Llama (:data:`SERVING_SPLITS`), where transformers' plan gathers every head, and a
gated delta net (Qwen3-Next's, Qwen3.5's linear attention) by heads, where the plan gathers it, a Mamba-2
mixer (Nemotron-H's, Bamba's, Granite 4.0-H's) by heads and groups and a Mamba-1 mixer (Jamba's) on its inner width,
Nemotron-H's and Jamba's MLPs and Granite 4.0-H's shared MLP as Llama's, where the plan runs them whole: the
in-projections colwise, out_proj rowwise with an all-reduce, and the module's ops, the conv weights they read and
its recurrent and conv states 1/N a rank (``Plan.states``, :class:`RecurrentState`: its heads must divide). An op of
such a mixer after a rowwise projection and before the next colwise one runs on the reduced whole (a Mamba-1
mixer's x_proj is rowwise, the norms of its outputs whole on every rank). Mamba, FalconMamba and Mamba-2, which have no plan, take
vLLM's with their mixers' states in every layout.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field, replace

from ..calculator import AttentionSizes, Cost, Kernel, MatmulSizes
from ..errors import RoofcalcError
from .group import recurrent_conv
from .result import TracedAnalysis

COLUMN = ("colwise", "packed_colwise", "unit_colwise")  # unit_colwise: whole KV heads, replicated below N
ROW = ("rowwise", "packed_rowwise")
WHOLE = ("replicate", "replicated_with_grad_allreduce")
# local_params marks a module whose own entries split its bare parameters (attention sinks): nothing of its own
KNOWN = COLUMN + ROW + WHOLE + ("rowwise_split_input", "colwise_gather_output", "colwise_rep", "embedding_rowwise",
                                "rowwise_partial", "moe_tp_experts", "mla_kv_a_proj", "local_params")


# vLLM's split of a Llama-like model: q, k and v a QKVParallelLinear, o_proj a RowParallelLinear, the MLP's gate and
# up a MergedColumnParallelLinear and down_proj a RowParallelLinear, a VocabParallelEmbedding and a ParallelLMHead
LLAMA_PLAN = {"layers.*.self_attn.q_proj": "colwise", "layers.*.self_attn.k_proj": "colwise",
              "layers.*.self_attn.v_proj": "colwise", "layers.*.self_attn.o_proj": "rowwise",
              "layers.*.mlp.gate_proj": "colwise", "layers.*.mlp.up_proj": "colwise", "layers.*.mlp.down_proj": "rowwise",
              "embed_tokens": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _falcon_plan(config) -> dict[str, str]:
    """vLLM's Falcon (vllm/model_executor/models/falcon.py): query_key_value a QKVParallelLinear (whole heads
    a rank, the KV heads replicated when fewer than the ranks), dense and dense_4h_to_h RowParallelLinear,
    dense_h_to_4h ColumnParallelLinear, a VocabParallelEmbedding and a ParallelLMHead. Where attention and
    the MLP run side by side (parallel_attn or new_decoder_architecture) dense skips its all-reduce and one
    all-reduce sums the two partial outputs after dense_4h_to_h."""
    side_by_side = bool(getattr(config, "parallel_attn", False) or getattr(config, "new_decoder_architecture", False))
    return {"h.*.self_attention.query_key_value": "colwise",
            "h.*.self_attention.dense": "rowwise_partial" if side_by_side else "rowwise",
            "h.*.mlp.dense_h_to_4h": "colwise", "h.*.mlp.dense_4h_to_h": "rowwise",
            "word_embeddings": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _gpt_oss_plan(config) -> dict[str, str]:
    """vLLM's gpt-oss (vllm/model_executor/models/gpt_oss.py): q, k and v one QKVParallelLinear (whole heads a
    rank) with the attention sinks of the rank's heads, o_proj a RowParallelLinear, the router a plain
    nn.Linear whole on every rank, the routed experts a FusedMoE split on their width (each rank every
    expert's 1/N slice of the intermediate size, reduce_results: one all-reduce after them; whole experts
    only with --enable-expert-parallel), a VocabParallelEmbedding and a ParallelLMHead."""
    return {"layers.*.self_attn.q_proj": "colwise", "layers.*.self_attn.k_proj": "colwise",
            "layers.*.self_attn.v_proj": "colwise", "layers.*.self_attn.o_proj": "rowwise",
            "layers.*.self_attn.sinks": "colwise", "layers.*.mlp.experts": "moe_tp_experts",
            "embed_tokens": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _gpt2_plan(config) -> dict[str, str]:
    """vLLM's GPT-2 (vllm/model_executor/models/gpt2.py): c_attn a QKVParallelLinear (whole heads a rank), attn.c_proj
    and mlp.c_proj RowParallelLinear, mlp.c_fc ColumnParallelLinear, wte a VocabParallelEmbedding (the tied head
    with it), wpe whole: Megatron-LM's split of GPT-2 (arXiv:1909.08053)."""
    return {"h.*.attn.c_attn": "colwise", "h.*.attn.c_proj": "rowwise", "h.*.mlp.c_fc": "colwise",
            "h.*.mlp.c_proj": "rowwise", "wte": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _gpt_bigcode_plan(config) -> dict[str, str]:
    """vLLM's GPT-BigCode, StarCoder's (vllm/model_executor/models/gpt_bigcode.py): c_attn a QKVParallelLinear of
    the query heads and the one KV head of multi-query attention, which every rank holds whole (QKVParallelLinear
    replicates KV heads fewer than the ranks), attn.c_proj and mlp.c_proj RowParallelLinear, mlp.c_fc
    ColumnParallelLinear, wte a VocabParallelEmbedding (the tied head with it), wpe whole: GPT-2's names."""
    return _gpt2_plan(config)


def _bloom_plan(config) -> dict[str, str]:
    """vLLM's BLOOM (vllm/model_executor/models/bloom.py): query_key_value a QKVParallelLinear (whole heads a rank,
    their ALiBi slopes with them; transformers builds the bias for every head, which the trace counts whole), dense and dense_4h_to_h RowParallelLinear, dense_h_to_4h ColumnParallelLinear,
    word_embeddings a VocabParallelEmbedding (the tied head with it)."""
    return {"h.*.self_attention.query_key_value": "colwise", "h.*.self_attention.dense": "rowwise",
            "h.*.mlp.dense_h_to_4h": "colwise", "h.*.mlp.dense_4h_to_h": "rowwise",
            "word_embeddings": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _mpt_plan(config) -> dict[str, str]:
    """vLLM's MPT (vllm/model_executor/models/mpt.py): Wqkv a QKVParallelLinear (whole heads a rank, their ALiBi
    slopes with them), out_proj and ffn.down_proj RowParallelLinear, ffn.up_proj ColumnParallelLinear, wte a
    VocabParallelEmbedding that is also the head (MPT's embeddings are tied)."""
    return {"blocks.*.attn.Wqkv": "colwise", "blocks.*.attn.out_proj": "rowwise", "blocks.*.ffn.up_proj": "colwise",
            "blocks.*.ffn.down_proj": "rowwise", "wte": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _persimmon_plan(config) -> dict[str, str]:
    """vLLM's Persimmon (vllm/model_executor/models/persimmon.py): query_key_value a QKVParallelLinear (whole heads a
    rank; q_layernorm and k_layernorm over one head's width, whole on every rank, on the rank's heads), dense and
    dense_4h_to_h RowParallelLinear, dense_h_to_4h ColumnParallelLinear, a VocabParallelEmbedding and a
    ParallelLMHead."""
    return {"layers.*.self_attn.query_key_value": "colwise", "layers.*.self_attn.dense": "rowwise",
            "layers.*.mlp.dense_h_to_4h": "colwise", "layers.*.mlp.dense_4h_to_h": "rowwise",
            "embed_tokens": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _stablelm_plan(config) -> dict[str, str]:
    """vLLM's StableLM (vllm/model_executor/models/stablelm.py): q, k and v a QKVParallelLinear, o_proj and down_proj
    RowParallelLinear, gate and up a MergedColumnParallelLinear, a VocabParallelEmbedding and a ParallelLMHead:
    Llama's split. (vLLM's file has no per-head q/k LayerNorm, StableLM-2-12B's ModuleList of one a head: here every
    head's norm still runs on every rank, at the rank's share of the activations, so such a config's rank counts
    those launches and norm weights N/T times over.)"""
    return dict(LLAMA_PLAN)


def _opt_plan(config) -> dict[str, str]:
    """vLLM's OPT (vllm/model_executor/models/opt.py): q/k/v_proj one QKVParallelLinear, out_proj and fc2
    RowParallelLinear, fc1 ColumnParallelLinear, embed_tokens a VocabParallelEmbedding, the learned positions and
    project_in/out whole (ReplicatedLinear)."""
    return {"decoder.layers.*.self_attn.q_proj": "colwise", "decoder.layers.*.self_attn.k_proj": "colwise",
            "decoder.layers.*.self_attn.v_proj": "colwise", "decoder.layers.*.self_attn.out_proj": "rowwise",
            "decoder.layers.*.fc1": "colwise", "decoder.layers.*.fc2": "rowwise",
            "decoder.embed_tokens": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _qwen3_vl_plan(config) -> dict[str, str]:
    """vLLM's Qwen3-VL and Qwen3-VL-MoE run their language model as Qwen3's and Qwen3-MoE's (qwen3_vl.py:
    'class Qwen3LLMModel(Qwen3Model)'; qwen3_vl_moe.py: 'class Qwen3MoeLLMModel(Qwen3MoeModel)'): q/k/v one
    QKVParallelLinear (whole heads a rank, q_norm and k_norm a head's width), o_proj a RowParallelLinear, the MLP's
    gate and up a MergedColumnParallelLinear and down_proj a RowParallelLinear, or the routed experts a FusedMoE
    split on their width with the router whole on every rank, a VocabParallelEmbedding and a ParallelLMHead. The
    vision tower is not split here (it runs whole on every rank in roofcalc's count)."""
    text = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    # (a MoE model's dense layers, its mlp_only_layers, as Qwen3-MoE's)
    return {**LLAMA_PLAN, "layers.*.mlp.experts": "moe_tp_experts"} if getattr(text, "num_experts", 0) else \
        dict(LLAMA_PLAN)


# multimodal wrappers whose config class has no plan while their text config's class has one that splits layers:
# transformers builds a composite model's plan from its parts', and the serving engines run the language model by
# it. Qwen2-VL and Qwen2.5-VL: vLLM's qwen2_vl.py and qwen2_5_vl.py build it with
# init_vllm_registered_model(..., architectures=["Qwen2ForCausalLM"]); Kimi-K2.5: vLLM's kimi_k25.py with
# architectures=["DeepseekV3ForCausalLM"] (SGLang's KimiK25ForConditionalGeneration subclasses
# DeepseekV3ForCausalLM); GLM-4.1V and GLM-4.5V: transformers' plan alone (vLLM's glm4_1v.py not read). Others
# (an encoder-decoder's, a talker beside a thinker, a text plan that splits no layer) stay refused.
TEXT_PLAN_WRAPPERS = {"qwen2_vl", "qwen2_5_vl", "kimi_k25", "glm4v", "glm4v_moe"}

# config classes whose plan in transformers splits no layer (none at all, or the embedding alone), with the
# plan a serving engine runs them by
SERVING_PLANS = {"falcon": ("vLLM's plan for Falcon", _falcon_plan),
                 "gpt_oss": ("vLLM's plan for gpt-oss", _gpt_oss_plan),
                 "gpt2": ("vLLM's plan for GPT-2", _gpt2_plan), "opt": ("vLLM's plan for OPT", _opt_plan),
                 "gpt_bigcode": ("vLLM's plan for GPT-BigCode", _gpt_bigcode_plan),
                 "bloom": ("vLLM's plan for BLOOM", _bloom_plan), "mpt": ("vLLM's plan for MPT", _mpt_plan),
                 "persimmon": ("vLLM's plan for Persimmon", _persimmon_plan),
                 "stablelm": ("vLLM's plan for StableLM", _stablelm_plan),
                 **{t: ("vLLM's plan for Qwen3-VL's language model", _qwen3_vl_plan)
                    for t in ("qwen3_vl", "qwen3_vl_moe", "qwen3_vl_text", "qwen3_vl_moe_text")}}


@dataclass(frozen=True)
class RecurrentState:
    """A recurrent module (a gated delta net, a Mamba-2 or Mamba-1 mixer, LFM2's short convolution) the serving engines
    split by heads: the config's head counts a rank takes 1/N of, each with its head width (``heads``: a config name,
    or a tuple of names whose product it is (Jamba's mixer width, mamba_expand x hidden_size), or a number where the
    module's channels are its heads, LFM2's hidden size of width 1); the conv's channels as
    multiples of those widths (``conv``: a gated delta net's conv runs on q, k and v, 2 key widths and a value
    width); and whether the module's own weights (its gated norm's) split too (``own_weights``: a Mamba-2 mixer's
    norm, over the groups' width, does; a gated delta net's, over one head's width and shared by every head, stays
    whole)."""

    heads: tuple
    conv: tuple
    own_weights: bool = False
    # a head count the engines replicate on every rank where it is 1 (a Mamba-2 mixer's single group: vLLM's
    # MambaMixer2 gives each rank the group's B and C whole, its heads' z, x and dt 1/N, and all-reduces its gated
    # norm's sums of squares), "" where none is
    replicated: str = ""
    # a projection of the module that transformers runs as a bare matmul of its weight and whose bias the scan adds
    # (a Mamba-1 mixer's dt_proj: ``dt_proj.weight @ time_step``, the kernel ``<mixer>.mm``), so no kernel holds its
    # weight or its bias: both split with its outputs (vLLM's ColumnParallelLinear dt_proj, skip_bias_add)
    bare_proj_bias: bool = False


@dataclass(frozen=True)
class ServingSplit:
    """How the serving engines split a config class's layers where transformers' plan splits them otherwise: the
    plan's layer styles taken as the engines run them (``styles``: a style for another, every module of it;
    ``keys``: a layer module's own, added or in place of the plan's), the layer modules whose recurrent state the
    engines split by heads with them (``states``: module -> :class:`RecurrentState`), whose split that is
    (``why``), and an engine verdict's words for it (``verdict``)."""

    why: str
    styles: dict = field(default_factory=dict)
    keys: dict = field(default_factory=dict)
    states: dict = field(default_factory=dict)  # layer module -> RecurrentState
    model: dict = field(default_factory=dict)  # a model-level module's style (lm_head's, where the plan has none)
    verdict: tuple = ()  # an engine verdict's words for what the split changes: (serving's, transformers')
    # a layer module's norm over every head's width (OLMo-2's and MiniMax-M2's q_norm and k_norm) as the engines run
    # it with the heads split: "gather" (the rank's share all-gathered, the norm whole on every rank, the rank's
    # share taken again) or "reduce" (on the rank's share with its weight's share, the sums of squares all-reduced,
    # one fp32 value a token and a norm, in one all-reduce after the layer's last such norm)
    norms: dict = field(default_factory=dict)


# A gated delta net (Qwen3-Next's, Qwen3.5's linear attention): transformers' plan gathers its projections'
# outputs (colwise_gather_output on every in-projection and on out_proj), so every rank runs every head and holds
# the whole recurrent state. vLLM (model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py), SGLang (srt/models/
# qwen3_next.py, qwen3_5.py) and TensorRT-LLM (_torch/models/modeling_qwen3_next.py) split it by heads as attention
# is: the in-projections and the causal conv column-parallel, A_log and dt_bias and the conv and recurrent states
# 1/N a rank, out_proj row-parallel with one all-reduce.
GDN_SERVING = ("vLLM, SGLang and TensorRT-LLM split a gated delta net by heads (in-projections and conv "
               "column-parallel, A_log, dt_bias and the conv and recurrent states 1/N a rank, out_proj row-parallel "
               "with an all-reduce; transformers' plan gathers every head and the whole state on every rank)")
_GDN_STATE = {"linear_attn": RecurrentState((("linear_num_key_heads", "linear_key_head_dim"),
                                             ("linear_num_value_heads", "linear_value_head_dim")), (2, 1))}


def _gdn_keys(*projections: str) -> dict:
    return {**{f"linear_attn.{p}": "colwise" for p in projections}, "linear_attn.out_proj": "rowwise",
            "linear_attn.A_log": "colwise", "linear_attn.dt_bias": "colwise"}


# A Mamba-2 mixer (Nemotron-H's): transformers' plan splits Nemotron-H's attention alone and runs its Mamba-2
# mixers, MLPs and shared experts whole on every rank. vLLM (models/nemotron_h.py, layers/mamba/mamba_mixer2.py:
# MambaMixer2 asserts that N divides num_heads and n_groups, or n_groups is 1) splits the mixer by heads and groups
# (in_proj a MergedColumnParallelLinear of z, x, B, C and dt each 1/N; conv1d column-parallel; A, D and dt_bias 1/N;
# the gated norm's weight 1/N, each rank its own groups; out_proj a RowParallelLinear with its all-reduce; the SSM
# and conv states 1/N), the MLP as Llama's (up_proj ColumnParallelLinear, down_proj RowParallelLinear) and the shared
# experts likewise, summed with the routed experts' partial output (SGLang's nemotron_h.py: one all-reduce of the
# sum). A single group each rank holds whole (RecurrentState.replicated). transformers' NemotronHForCausalLM has no
# _tp_plan (lm_head whole on every rank); vLLM's is a ParallelLMHead (the vocabulary split, the logits gathered).
NEMOTRON_H_SERVING = ("vLLM and SGLang split its Mamba-2 mixers by heads and groups (in_proj and conv "
                      "column-parallel, A, D, dt_bias, the gated norm's weight and the SSM and conv states 1/N a "
                      "rank, out_proj row-parallel with an all-reduce), its MLPs and shared experts as Llama's and "
                      "lm_head by the vocabulary (transformers' plan splits its attention alone and runs the rest "
                      "whole on every rank)")
_MAMBA2_STATE = {"mixer": RecurrentState((("mamba_num_heads", "mamba_head_dim"), ("n_groups", "ssm_state_size")),
                                         (1, 2), own_weights=True, replicated="n_groups")}
_GDN_WORDS = ("the linear attention split by heads", "the linear attention gathered")
# Bamba's and Granite 4.0-H's Mamba-2 mixers (one group each): transformers' plans name their attention (and Bamba's
# MLP) alone. vLLM (models/bamba.py, granitemoehybrid.py: MambaMixer2 with n_groups=config.mamba_n_groups) splits
# the heads and holds the single group's B and C whole on every rank (RecurrentState.replicated), and Granite
# 4.0-H's shared MLP as Llama's (granitemoeshared.py: input_linear MergedColumnParallelLinear, output_linear
# RowParallelLinear with its own all-reduce, beside the experts' own: two a layer).
MAMBA2_SERVING = ("vLLM splits its Mamba-2 mixers by heads (in_proj and conv column-parallel with its single group's "
                  "B and C whole on every rank, A, D, dt_bias and the gated norm's weight 1/N a rank, the norm's sums "
                  "of squares all-reduced, out_proj row-parallel with an all-reduce){}; transformers' plan runs "
                  "{} whole on every rank")


def _mamba2_keys(mixer: str) -> dict:
    """A Mamba-2 mixer's split as vLLM's MambaMixer2 runs it: in_proj column-parallel, out_proj row-parallel, A_log,
    D and dt_bias 1/N a rank."""
    return {f"{mixer}.in_proj": "colwise", f"{mixer}.out_proj": "rowwise", f"{mixer}.A_log": "colwise",
            f"{mixer}.D": "colwise", f"{mixer}.dt_bias": "colwise"}


_MAMBA_KEYS = _mamba2_keys("mamba")
_MAMBA_STATE = {"mamba": RecurrentState((("mamba_n_heads", "mamba_d_head"), ("mamba_n_groups", "mamba_d_state")),
                                        (1, 2), own_weights=True, replicated="mamba_n_groups")}

# A Mamba-1 mixer (Mamba's, FalconMamba's, Jamba's): vLLM's MambaMixer (layers/mamba/mamba_mixer.py; models/mamba.py
# runs Mamba and FalconMamba by it, models/jamba.py Jamba's mamba layers) splits the inner width I: in_proj a
# MergedColumnParallelLinear (x and the gate z, each I/N), conv1d column-parallel, x_proj a RowParallelLinear onto
# dt, B and C (dt_rank + 2 state) all-reduced on every rank, their norms (Jamba's and FalconMamba's) on the reduced
# whole, dt_proj column-parallel (its bias added in the scan), A and D 1/N, out_proj a RowParallelLinear; the conv
# and SSM states 1/N a rank. transformers runs dt_proj as a bare matmul of its weight (the kernel ``mm``).
MAMBA1_SERVING = ("vLLM splits its Mamba-1 mixers on their inner width (in_proj, conv1d and dt_proj "
                  "column-parallel, x_proj row-parallel with an all-reduce of dt, B and C, A, D and the conv and SSM "
                  "states 1/N a rank, out_proj row-parallel with an all-reduce){}")


def _mamba1_keys(mixer: str) -> dict:
    return {f"{mixer}.in_proj": "colwise", f"{mixer}.x_proj": "rowwise", f"{mixer}.mm": "colwise",
            f"{mixer}.out_proj": "rowwise", f"{mixer}.A_log": "colwise", f"{mixer}.D": "colwise"}


def _mamba1_state(width) -> RecurrentState:
    return RecurrentState(((width, 1),), (1,), bare_proj_bias=True)


# Mamba-2 (Mamba-Codestral): vLLM's mamba2.py runs its mixer as MambaMixer2 with the config's n_groups and num_heads,
# as Nemotron-H's above (N must divide both, or one group held whole)
_MAMBA2_MIXER = {"mixer": RecurrentState((("num_heads", "head_dim"), ("n_groups", "state_size")), (1, 2),
                                         own_weights=True, replicated="n_groups")}


def _mamba_plan(config) -> dict[str, str]:
    """vLLM's Mamba and FalconMamba (vllm/model_executor/models/mamba.py): the mixers as MambaMixer splits them
    (:data:`MAMBA1_SERVING`), a VocabParallelEmbedding and a ParallelLMHead (tied to it where the config ties them)."""
    return {**{f"layers.*.{key}": style for key, style in _mamba1_keys("mixer").items()},
            "embeddings": "embedding_rowwise", "lm_head": "colwise_gather_output"}


def _mamba2_plan(config) -> dict[str, str]:
    """vLLM's Mamba-2 (vllm/model_executor/models/mamba2.py): the mixers as MambaMixer2 splits them (in_proj and the
    conv column-parallel by heads and groups, A, D, dt_bias and the gated norm's weight 1/N, out_proj row-parallel),
    a VocabParallelEmbedding and a ParallelLMHead."""
    return {**{f"layers.*.{key}": style for key, style in _mamba2_keys("mixer").items()},
            "embeddings": "embedding_rowwise", "lm_head": "colwise_gather_output"}


# the attention-free models' serving plans, with the recurrent state each splits (a third item)
SERVING_PLANS.update({"mamba": ("vLLM's plan for Mamba", _mamba_plan, {"mixer": _mamba1_state("intermediate_size")}),
                      "falcon_mamba": ("vLLM's plan for FalconMamba", _mamba_plan,
                                       {"mixer": _mamba1_state("intermediate_size")}),
                      "mamba2": ("vLLM's plan for Mamba-2", _mamba2_plan, _MAMBA2_MIXER)})


# GLM (glm-4-9b-chat-hf) and GLM-4-0414: transformers' plans gather the fused gate_up_proj's outputs (its comment:
# "we need to replicate here due to the `chunk` operation"), so every rank runs the MLP's activation on the whole
# width; vLLM runs both MLPs as Llama's (glm.py: 'class GlmForCausalLM(LlamaForCausalLM)'; glm4.py: 'from .llama
# import LlamaMLP as Glm4MLP'), a MergedColumnParallelLinear giving each rank its share of the gate and of the up
# projection, down_proj row-parallel.
GLM_SERVING = ServingSplit("vLLM runs its MLP as Llama's (gate and up projections split on the width, down_proj "
                           "row-parallel; transformers' plan gathers the fused gate_up_proj's outputs, the activation "
                           "on the whole width on every rank)",
                           styles={"colwise_gather_output": "colwise", "rowwise_split_input": "rowwise"},
                           verdict=("the MLP split", "the MLP gathered"))

# OLMo-2, OLMo-3, OLMoE and FlexOlmo: transformers' plans gather q, k and v (their norm, q_norm and k_norm, spans
# every head's width: "we need to replicate here due to the added norm on q and k"), so every rank runs every head.
# vLLM (olmo2.py, which runs OLMo-3 too: Olmo2Attention._apply_qk_norm; olmoe.py: OlmoeAttention._apply_qk_norm, the
# same; flex_olmo.py: FlexOlmoAttention(OlmoeAttention)) splits the heads:
# qkv_proj column-parallel, the rank's q and k all-gathered, the norms on the whole width, the rank's share taken
# again, o_proj row-parallel. MiniMax-M2: its plan gathers q, k and v too; vLLM (minimax_m2.py, MiniMaxText01RMSNormTP
# .forward_qk in layers/mamba/linear_attn.py) splits the heads and runs each norm on the rank's share with its
# weight's share, the two norms' sums of squares in one all-reduce of [tokens, 2] fp32.
_HEADS_STYLES = {"colwise_gather_output": "colwise", "rowwise_split_input": "rowwise"}
OLMO2_SERVING = ServingSplit("vLLM splits its heads (qkv_proj column-parallel, o_proj row-parallel; the rank's q and k "
                             "all-gathered for q_norm and k_norm over every head, then split again; transformers' "
                             "plan gathers q, k and v and runs every head on every rank)",
                             styles=_HEADS_STYLES, norms={"self_attn.q_norm": "gather", "self_attn.k_norm": "gather"},
                             verdict=("the heads split", "every head on every rank"))
MINIMAX_M2_SERVING = ServingSplit("vLLM splits its heads (qkv_proj column-parallel, o_proj row-parallel; q_norm and "
                                  "k_norm on the rank's share, their sums of squares in one all-reduce; "
                                  "transformers' plan gathers q, k and v and runs every head on every rank)",
                                  styles=_HEADS_STYLES,
                                  norms={"self_attn.q_norm": "reduce", "self_attn.k_norm": "reduce"},
                                  verdict=("the heads split", "every head on every rank"))

# Hunyuan-7B (hunyuan_v1_dense), LFM2 and Falcon-H1: transformers 5.25's plans split the embedding alone, so every
# rank would run every layer whole; vLLM splits them (each read in its model file):
# - hunyuan_v1.py: HunYuanAttention's q, k and v a QKVParallelLinear, o_proj a RowParallelLinear, its
#   query_layernorm and key_layernorm over one head's width (no collective), HunYuanMLP's gate and up a
#   MergedColumnParallelLinear, down_proj a RowParallelLinear: Llama's split;
# - lfm2.py and layers/mamba/short_conv.py: attention as Llama's (q_layernorm and k_layernorm per head), the MLP's
#   w1 and w3 a MergedColumnParallelLinear and w2 a RowParallelLinear, and the short convolution's in_proj a
#   MergedColumnParallelLinear of its three chunks (B, C and x each 1/N), the depthwise conv's weight 1/N of the
#   channels, out_proj a RowParallelLinear (the block's one collective), its conv state 1/N a rank
#   (mamba_utils.py: the state's width divided by the ranks);
# - falcon_h1.py: the Mamba-2 mixer as Bamba's (MambaMixer2, a single group whole on every rank), attention and
#   MLP as Llama's, the attention's and the mixer's outputs each all-reduced by its own RowParallelLinear before
#   the parallel hybrid sums them (two all-reduces, then the MLP's).
_LLAMA_ATTENTION = {"self_attn.q_proj": "colwise", "self_attn.k_proj": "colwise", "self_attn.v_proj": "colwise"}
HUNYUAN_SERVING = ServingSplit("vLLM splits it as Llama (q, k and v by heads, o_proj row-parallel, the MLP on its "
                               "width; transformers' plan splits no layer)",
                               keys={**_LLAMA_ATTENTION, "self_attn.o_proj": "rowwise", "mlp.gate_proj": "colwise",
                                     "mlp.up_proj": "colwise", "mlp.down_proj": "rowwise"},
                               verdict=("its layers split", "every layer whole on every rank"))
_LFM2_CONV_MLP = {"feed_forward.w1": "colwise", "feed_forward.w3": "colwise", "feed_forward.w2": "rowwise",
                  "conv.in_proj": "packed_colwise", "conv.out_proj": "rowwise"}
_LFM2_STATE = {"conv": RecurrentState((("hidden_size", 1),), (1,))}
LFM2_SERVING = ServingSplit("vLLM splits its attention by heads, its MLPs on their width and its short convolutions "
                            "by channels (in_proj's three chunks and the conv 1/N a rank, out_proj row-parallel with "
                            "an all-reduce, the conv state 1/N; transformers' plan splits no layer)",
                            keys={**_LLAMA_ATTENTION, "self_attn.out_proj": "rowwise", **_LFM2_CONV_MLP},
                            states=_LFM2_STATE, verdict=("its layers split", "every layer whole on every rank"))
# LFM2-MoE (lfm2_moe.py): its attention as LFM2's (transformers' plan splits it), its short convolutions and its
# dense layers' MLPs as LFM2's, its routed experts on their width with one all-reduce (FusedMoE with
# reduce_results=False, then maybe_all_reduce_tensor_model_parallel; no shared expert)
LFM2_MOE_SERVING = ServingSplit("vLLM splits its short convolutions by channels (in_proj's three chunks and the conv "
                                "1/N a rank, out_proj row-parallel with an all-reduce, the conv state 1/N) and its "
                                "dense MLPs on their width; transformers' plan runs them whole on every rank",
                                keys=_LFM2_CONV_MLP, states=_LFM2_STATE,
                                verdict=("the short convolutions and MLPs split", "the short convolutions and MLPs "
                                                                                  "whole"))
FALCON_H1_SERVING = ServingSplit(MAMBA2_SERVING.format(", its attention by heads and its MLPs on their width, the "
                                                       "attention's and the mixer's outputs each all-reduced",
                                                       "every layer"),
                                 keys={**_MAMBA_KEYS, **_LLAMA_ATTENTION, "self_attn.o_proj": "rowwise",
                                       "feed_forward.gate_proj": "colwise", "feed_forward.up_proj": "colwise",
                                       "feed_forward.down_proj": "rowwise"},
                                 states=_MAMBA_STATE, verdict=("its layers split", "every layer whole on every rank"))
# Jamba (vllm/model_executor/models/jamba.py): its Mamba-1 mixers as MambaMixer splits them (MAMBA1_SERVING, the
# mixer's width mamba_expand x hidden_size), its dense MLPs as Llama's (``LlamaMLP as JambaMLP``), its routed experts a
# FusedMoE with reduce_results (as the plan's, on their width), the router a ReplicatedLinear; transformers' plan splits
# its attention alone.
JAMBA_SERVING = ServingSplit(MAMBA1_SERVING.format(" and its dense MLPs as Llama's; transformers' plan runs them "
                                                   "whole on every rank"),
                             keys={**_mamba1_keys("mamba"), "feed_forward.gate_proj": "colwise",
                                   "feed_forward.up_proj": "colwise", "feed_forward.down_proj": "rowwise"},
                             states={"mamba": _mamba1_state(("mamba_expand", "hidden_size"))},
                             verdict=("the Mamba mixers and MLPs split", "the Mamba mixers and MLPs whole"))

# config classes whose layers the serving engines split otherwise than transformers' plan. Phi-3: its plan gathers
# the fused qkv_proj and gate_up_proj outputs (every head on every rank); vLLM (phi3.py: 'class
# Phi3ForCausalLM(LlamaForCausalLM)'), SGLang (llama.py, the same) and TensorRT-LLM (modeling_phi3.py) run it as
# Llama, heads and width split. GLM and GLM-4-0414 (and GLM-4.1V's text model): their MLPs (GLM_SERVING). OLMo-2,
# OLMo-3 and MiniMax-M2: their heads (OLMO2_SERVING, MINIMAX_M2_SERVING). Qwen3-Next and Qwen3.5: their gated delta
# nets (GDN_SERVING). Nemotron-H: its Mamba-2 mixers, MLPs and shared experts (NEMOTRON_H_SERVING). Bamba and Granite
# 4.0-H: their Mamba-2 mixers (MAMBA2_SERVING).
SERVING_SPLITS = {
    "phi3": ServingSplit("vLLM, SGLang and TensorRT-LLM run it, as Llama (heads and width split; transformers' plan "
                         "gathers every head on every rank)",
                         styles={"colwise_gather_output": "colwise", "rowwise_split_input": "rowwise"}),
    **{t: GLM_SERVING for t in ("glm", "glm4", "glm4v_text")},
    **{t: OLMO2_SERVING for t in ("olmo2", "olmo3", "olmoe", "flex_olmo")},
    "minimax_m2": MINIMAX_M2_SERVING,
    "qwen3_next": ServingSplit(GDN_SERVING, keys=_gdn_keys("in_proj_qkvz", "in_proj_ba"), states=_GDN_STATE,
                               verdict=_GDN_WORDS),
    **{t: ServingSplit(GDN_SERVING, keys=_gdn_keys("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"),
                       states=_GDN_STATE, verdict=_GDN_WORDS) for t in ("qwen3_5_text", "qwen3_5_moe_text")},
    "nemotron_h": ServingSplit(NEMOTRON_H_SERVING, keys={
        **_mamba2_keys("mixer"), "mixer.up_proj": "colwise", "mixer.down_proj": "rowwise",
        "mixer.shared_experts.up_proj": "colwise", "mixer.shared_experts.down_proj": "rowwise"},
        states=_MAMBA2_STATE, model={"lm_head": "colwise_gather_output"},
        verdict=("the Mamba-2 mixers, MLPs and lm_head split", "the Mamba-2 mixers, MLPs and lm_head whole")),
    "bamba": ServingSplit(MAMBA2_SERVING.format("", "them"), keys=_MAMBA_KEYS, states=_MAMBA_STATE,
                          verdict=("the Mamba-2 mixers split", "the Mamba-2 mixers whole")),
    "granitemoehybrid": ServingSplit(
        MAMBA2_SERVING.format(" and its shared MLP as Llama's", "both"),
        keys={**_MAMBA_KEYS, "shared_mlp.input_linear": "colwise", "shared_mlp.output_linear": "rowwise"},
        states=_MAMBA_STATE, verdict=("the Mamba-2 mixers and shared MLP split", "the Mamba-2 mixers and shared MLP "
                                                                                  "whole")),
    "hunyuan_v1_dense": HUNYUAN_SERVING, "lfm2": LFM2_SERVING, "lfm2_moe": LFM2_MOE_SERVING,
    "falcon_h1": FALCON_H1_SERVING, "jamba": JAMBA_SERVING}


@dataclass(frozen=True)
class Plan:
    entries: dict  # module path (base model's, ``layers.*`` for every layer) -> style
    source: str  # where it comes from, in words
    transformers: bool  # transformers' own plan (a tied embedding then runs without its all-reduce)
    states: dict = field(default_factory=dict)  # layer modules whose recurrent state a rank holds 1/N of (ServingSplit)
    norms: dict = field(default_factory=dict)  # layer norms over every head's width, as the engines run them split

    @property
    def name(self) -> str:
        """The plan's name alone, for a sentence that goes on (its source up to the first comma)."""
        return self.source.split(",")[0]


def serving_split(model_type: str, config=None) -> ServingSplit | None:
    """The serving engines' split of ``model_type`` where it differs from transformers' plan (:data:`SERVING_SPLITS`),
    by its own type or, for a multimodal checkpoint, its text config's (Qwen3.5's ``qwen3_5`` holds a
    ``qwen3_5_text``); None elsewhere."""
    text = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    return SERVING_SPLITS.get(model_type) or SERVING_SPLITS.get(getattr(text, "model_type", None) or "")


def model_plan(model_type: str, config_class: str, model_class: str, config=None, serving: bool = False) -> Plan:
    """The plan transformers shards ``model_class`` by (the class's ``_tp_plan``, the config's
    ``base_model_tp_plan``, a vocab-parallel ``embed_tokens``), else a serving plan, else refused; ``serving``:
    the serving engines' layout, whose split of a model in :data:`SERVING_SPLITS` differs."""
    import transformers

    config_cls = getattr(transformers, config_class, None)
    base = dict(getattr(config_cls, "base_model_tp_plan", None) or {})
    # a multimodal wrapper with no plan of its own takes its text config's (TEXT_PLAN_WRAPPERS)
    text = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    inherited = ""
    if not base and model_type in TEXT_PLAN_WRAPPERS and text is not None and text is not config and \
            any(".*." in key for key in getattr(type(text), "base_model_tp_plan", None) or {}):
        inherited, config_cls = config_class, type(text)
        config_class, base = config_cls.__name__, dict(config_cls.base_model_tp_plan)
    if model_type in SERVING_PLANS and not any(".*." in key for key in base):
        words, build, *states = SERVING_PLANS[model_type]
        why = "'s base_model_tp_plan splits no layer in" if base else " has no base_model_tp_plan in"
        return Plan(build(config), f"{words}, as {config_class}{why} transformers {transformers.__version__}", False,
                    dict(*states))
    if not base:
        raise RoofcalcError(f"--tp for a traced {model_type}: its config class {config_class} has no "
                            f"base_model_tp_plan in transformers {transformers.__version__}, so roofcalc has no plan "
                            f"to split it by")
    head = dict(getattr(getattr(transformers, model_class, None), "_tp_plan", None) or {})
    experts = _experts_on_width(getattr(config_cls, "base_model_ep_plan", None) or {}, base)
    latent = _mla_by_heads(config, base)
    shared = _shared_expert_on_width(config, base)
    indexer = _indexer_whole(config, {**base, **latent})
    entries = {"embed_tokens": "embedding_rowwise", **head, **base, **experts, **latent, **shared, **indexer}
    words = f"{config_class}'s base_model_tp_plan (transformers {transformers.__version__})"
    if inherited:
        words += f", the text config's of {inherited}, which has none of its own"
    if experts:
        words += (", the routed experts split on their width (5.25 moved them to an expert-parallel plan; 5.24's "
                  "plan and serving engines' tensor parallelism split them so)")
    if shared:
        words += (", its shared expert split as Qwen3.5-MoE's plan splits its own (the plan names none, so "
                  "transformers would run it whole on every rank; vLLM and SGLang split it)")
    if latent:
        words += (", its latent attention split by heads as DeepSeek-V2's plan splits it (from 5.25 DeepSeek-V3's "
                  "too; vLLM and SGLang split MLA heads under TP)")
    states, norms = {}, {}
    split = serving_split(model_type, config) if serving else None
    if split is not None:
        entries = {key: split.styles.get(style, style) if ".*." in key else style for key, style in entries.items()}
        entries.update({f"layers.*.{key}": style for key, style in split.keys.items()})
        entries.update(split.model)
        states, norms = dict(split.states), dict(split.norms)
        words += f", its layers split as {split.why}"
    return Plan(entries, words, True, states, norms)


MLA_HEADS = {"layers.*.self_attn.q_proj": "colwise", "layers.*.self_attn.q_b_proj": "colwise",
             "layers.*.self_attn.kv_a_proj_with_mqa": "mla_kv_a_proj", "layers.*.self_attn.kv_b_proj": "colwise",
             "layers.*.self_attn.o_proj": "rowwise"}


def _mla_by_heads(config, tp_plan: dict) -> dict:
    """DeepSeek-V2's rules for multi-head latent attention (transformers' DeepseekV2Config plan), for a
    config with a latent (``kv_lora_rank``) whose plan names no attention module (DeepSeek-V3's through
    transformers 5.24: every rank ran every head)."""
    text = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    if not isinstance(getattr(text, "kv_lora_rank", None), int) or any("self_attn" in key for key in tp_plan):
        return {}
    return dict(MLA_HEADS)


def _indexer_whole(config, tp_plan: dict) -> dict:
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2's, GLM-5's: ``index_n_heads``) whole on every
    rank, as the plans leave it (transformers replicates what its plan does not name) and as vLLM and SGLang run it
    (vLLM's deepseek_v2.py Indexer: wq_b, wk and weights_proj each a ReplicatedLinear; SGLang's the same): its
    projections, its score over the cached keys and its own key cache, where the plan splits the attention around it
    by heads."""
    text = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    if not isinstance(getattr(text, "index_n_heads", None), int) or not any("self_attn" in k for k in tp_plan):
        return {}
    return {"layers.*.self_attn.indexer": "replicate"}


SHARED_EXPERT = {"layers.*.mlp.shared_expert.gate_proj": "colwise", "layers.*.mlp.shared_expert.up_proj": "colwise",
                 "layers.*.mlp.shared_expert.down_proj": "rowwise"}


def _shared_expert_on_width(config, tp_plan: dict) -> dict:
    """Qwen3.5-MoE's rules for a shared expert (transformers' Qwen3_5MoeConfig plan: gate and up colwise, down
    rowwise), for a config with one (``shared_expert_intermediate_size``: Qwen1.5/Qwen2-MoE) whose plan names
    none, which transformers would then run whole on every rank where serving engines split it
    (vLLM's qwen2_moe.py: the shared expert's gate_up a MergedColumnParallelLinear, down a RowParallelLinear)."""
    text = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    if not getattr(text, "shared_expert_intermediate_size", 0) or any("shared_expert" in key for key in tp_plan) \
            or not any(key.startswith("layers.*.mlp.") for key in tp_plan):  # its MLP elsewhere (Nemotron-H's mixer)
        return {}
    return dict(SHARED_EXPERT)


def _experts_on_width(ep_plan: dict, tp_plan: dict) -> dict:
    """The routed experts' tensor-parallel rules where transformers keeps them only in its expert-parallel plan
    (5.25 on: ``grouped_gemm`` weights under an ``ep_dispatch_experts`` module, whole experts a rank): the
    rules its plans held through 5.24, gate_up ``packed_colwise``, down ``rowwise`` and ``moe_tp_experts``
    around them, so that ``--tp`` splits a traced MoE as the hand models and serving engines do."""
    out = {}
    for module, style in ep_plan.items():
        if style != "ep_dispatch_experts" or any(k == module or k.startswith(module + ".") for k in tp_plan):
            continue
        out[module] = "moe_tp_experts"
        for key, inner in ep_plan.items():
            if key.startswith(module + ".") and inner == "grouped_gemm":
                leaf = key.rsplit(".", 1)[1]
                out[key] = "rowwise" if "down" in leaf else "packed_colwise" if "gate_up" in leaf else "colwise"
    return out


def _key_patterns(entries) -> tuple[list, list]:
    """(layer patterns: (the path inside a layer, style), model-level: (path, style))."""
    layer, model = [], []
    for key, style in entries.items():
        head, sep, tail = key.partition(".*.")
        (layer if sep else model).append((tail if sep else key, style))
    return layer, model


def _base(k: Kernel) -> str:
    return k.name.split("[", 1)[0].split("#", 1)[0]


def _style(k: Kernel, layer_keys, model_keys) -> str | None:
    name = _base(k)
    keys = layer_keys if k.scope == "layer" else model_keys
    for pattern, style in keys:
        if fnmatch.fnmatchcase(name, pattern) or (k.scope == "model" and name.endswith("." + pattern)):
            return style
    return None


def _scaled(c: Cost, num: int, den: int, *, weights: bool = True, read: bool = True, write: bool = True,
            kv: tuple[int, int] | None = None) -> Cost:
    def s(v, on=True, frac=(num, den)):
        return v * frac[0] // frac[1] if on else v

    kv = kv or (num, den)
    return Cost(flops=s(c.flops), matmul_flops=s(c.matmul_flops), weight_bytes=s(c.weight_bytes, weights),
                act_read_bytes=s(c.act_read_bytes, read), act_write_bytes=s(c.act_write_bytes, write),
                kv_read_bytes=s(c.kv_read_bytes, frac=kv), kv_write_bytes=s(c.kv_write_bytes, frac=kv))


@dataclass(frozen=True)
class TracedRankAnalysis(TracedAnalysis):
    """One tensor-parallel rank of a traced model: its kernels (collectives in place), weights and cache."""

    parallel: "object" = None
    full: TracedAnalysis | None = None
    note_pipeline: tuple | None = None
    plan_words: str = ""  # the header's account of the plan
    split_verdict: tuple = ()  # what the serving engines' split changes, in words (ServingSplit.verdict), if it differs
    ep_words: str = ""  # the header's account of --ep
    spacing: int = 1  # the least common multiple of the shares its costs are rounded down to (a sweep's probe step)


def _check(what: str, value: int, tp: int, module: str) -> None:
    if value % tp:
        raise RoofcalcError(f"--tp {tp} does not divide {module}'s {what} {value}: each rank must hold a whole share")


def _no_routed_experts(a: TracedAnalysis) -> RoofcalcError:
    """--ep's refusal for a traced model with no routed experts (none, or experts counted as transformers runs
    them, every token through every one: Llama-4's in the eager view)."""
    why = (" in transformers' eager program (every token through every expert): --impl fused or cuda-graph runs "
           "them routed") if a.dense_experts else ""
    return RoofcalcError(f"--ep splits routed experts, and the traced {a.shape.model_type} runs none{why}")


def traced_rank(a: TracedAnalysis, parallel, config, shared_apart: bool = False) -> TracedRankAnalysis:
    """One rank of ``a`` (a traced step, layers merged or not) under ``parallel.tp`` ranks; ``config``:
    transformers' config object it was traced from. With ``parallel.tp_attention`` (``--ep N
    --ep-attention tp``) the N ranks split everything but the routed experts as ``--tp N`` does, and hold
    E/N of the experts at their whole width (:func:`_expert_rows`) where ``--tp`` splits each on its width.
    ``shared_apart``: a shared expert keeps its own all-reduce whatever the layout (--ep's all-to-alls beside)."""
    from ..calculator import touched_experts
    from ..parallel import collective, vocab_share

    whole_experts = bool(getattr(parallel, "tp_attention", False))
    tp = parallel.ep if whole_experts else parallel.tp
    s, wl = a.shape, a.workload
    if s.mla is not None:
        raise RoofcalcError(f"--tp for a traced {s.model_type}: its latent attention (MLA) is not split by roofcalc's "
                            f"traced plan yet")
    if whole_experts and not any(k.expert_weights is not None for k in a.kernels):  # (Llama-4's experts run dense)
        raise _no_routed_experts(a)
    config_class = a.check.class_name if a.check is not None else ""
    plan = model_plan(s.family, config_class, a.model_class, config, serving=wl.tp_layout == "serving")
    layer_keys, model_keys = _key_patterns(plan.entries)
    for path, style in layer_keys + model_keys:  # a style not modelled: refused where a kernel runs in it
        if style not in KNOWN and any(fnmatch.fnmatchcase(_base(k), path) or fnmatch.fnmatchcase(_base(k), path + ".*")
                                      for k in a.kernels):
            raise RoofcalcError(f"--tp for a traced {s.model_type}: {path} is {style!r} in {plan.name}, which "
                                f"roofcalc does not split yet")
    # routed experts split on their width (transformers' moe_tp_experts): every kernel under the module
    experts = {p for p, style in layer_keys if style == "moe_tp_experts"}
    # modules whose outputs are split on the ranks: every other kernel in them runs on the rank's share
    sharded = {p.rpartition(".")[0] for p, style in layer_keys if style in COLUMN} - experts
    n, kv = s.n_heads, s.n_kv_heads

    # which of those modules a layer splits: a module path one kind of layer splits may hold another kind's
    # whole module (Nemotron-H's "mixer": attention split by heads, a Mamba mixer or an MLP whole)
    layers_of = {id(k): ls for k, ls in zip(a.kernels, a.kernel_layers)} if len(a.kernel_layers) == len(a.kernels) \
        else {}
    # (the module a split kernel sits in, not every module above it: Llama-4's MoE layer splits its shared expert,
    # while the MoE's own body, which the dense layers' module path names too, runs on whole rows)
    split_in: dict[int, set] = {}
    for k in a.kernels:
        if k.scope == "layer" and _style(k, layer_keys, model_keys) in COLUMN:
            homes = [p for p in sharded if _base(k).startswith(p + ".")]
            for layer in layers_of.get(id(k), ()):
                split_in.setdefault(layer, set()).update(homes and [max(homes, key=len)])

    # modules the plan keeps whole with everything in them (DeepSeek Sparse Attention's indexer inside split
    # attention: _indexer_whole)
    whole_modules = {p for p, style in layer_keys if style in WHOLE}
    # where each split projection runs in the step's order (a.kernels: each op where a layer first runs it): an op of
    # a split module before its first column-parallel projection or after its last row-parallel one runs on the
    # whole hidden state (Falcon-H1's multipliers on the mixer's input and on the MLP's reduced output), and so does
    # one of a recurrent mixer between a row-parallel projection and the next column-parallel one (on_whole_rows)
    order = {id(k): i for i, k in enumerate(a.kernels)}
    projections: dict[str, list] = {}
    for k in a.kernels:
        style = _style(k, layer_keys, model_keys) if k.scope == "layer" else None
        if style in COLUMN or style in ROW:
            homes = [p for p in sharded if _base(k).startswith(p + ".")]
            if homes:
                projections.setdefault(max(homes, key=len), []).append((order[id(k)], style in ROW,
                                                                        set(layers_of.get(id(k), ()))))

    def on_whole_rows(k: Kernel, home: str) -> bool:
        """Whether ``k``, in ``home`` (a split module), runs before the module's first column-parallel projection or
        after its last row-parallel one, or, in a recurrent mixer (``plan.states``), after a row-parallel projection,
        whose output the all-reduce made whole, and before the next column-parallel one (a Mamba-1 mixer's norms of
        dt, B and C between x_proj and dt_proj, which read x_proj's output alone). Elsewhere an op between them may
        read the projections' split outputs too (Doge's attention, after its rowwise dt_proj, runs on the rank's
        heads). The rows' order is that of the layer each first runs in, so ``k`` is held against the projections
        that first run in its own first layer (a row only later layers run, a global layer's attention, sits after
        the first layer's o_proj and says nothing of its place)."""
        layers = set(layers_of.get(id(k), ()))
        first = min(layers, default=None)
        mine = [(i, row) for i, row, ls in projections.get(home, ()) if first is None or min(ls, default=None) == first]
        i = order[id(k)]
        before = [(j, row) for j, row in mine if j < i]
        if not before:
            return any(not row for _, row in mine)
        return max(before)[1] and (home in plan.states or all(j < i for j, _ in mine))

    def inside(k: Kernel, whole_weights: bool = False) -> bool:
        """Whether ``k`` runs on a rank's share of a split module's activations: a kernel the plan does not name
        or, with ``whole_weights``, one it keeps whole on every rank (q_layernorm, replicated, over one head's
        width: the rank's heads pass through it)."""
        style = _style(k, layer_keys, model_keys) if k.scope == "layer" else None
        if k.scope != "layer" or style is not None and not (whole_weights and style in WHOLE) or \
                any(_base(k).startswith(m + ".") for m in whole_modules):  # (in a module the plan keeps whole)
            return False
        homes = [p for p in sharded if _base(k).startswith(p + ".")]
        layers = layers_of.get(id(k), ())
        return bool(homes) and (not layers or any(p in split_in.get(x, ()) for x in layers for p in homes)) and \
            not on_whole_rows(k, max(homes, key=len))

    # multi-head latent attention (mla_kv_a_proj: the latent projection whole on every rank, transformers'
    # MlaKvAProjParallel): the latent cache, and the norms of the latents (q_a_layernorm, kv_a_layernorm),
    # run whole on every rank, as vLLM's MLA under TP keeps the latent cache whole on each rank
    mla = "mla_kv_a_proj" in plan.entries.values()
    text = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    latents = {getattr(text, key, None) for key in ("q_lora_rank", "kv_lora_rank")} - {None} if mla else set()
    # a module whose recurrent state the ranks split by heads (a gated delta net, a Mamba-2 mixer, in the serving
    # engines' layout): its heads divide, and its kernels move 1/N of the state where attention's move their KV
    # heads' share
    state_widths = []  # a rank's share of them, for the shape text: the heads, their widths, the conv's channels
    replicated = {}  # state module -> the channels of its projection and conv each rank holds whole (one group's)
    for module, spec in plan.states.items():
        widths, whole = [], 0
        for (count, width), coef in zip(spec.heads, spec.conv):
            names = count if isinstance(count, tuple) else (count,)
            values = [getattr(text, name, None) for name in names]
            if not all(isinstance(v, int) for v in values):
                continue
            value, count = math.prod(values), " x ".join(names)
            widths.append(value * (width if isinstance(width, int) else getattr(text, width, 0) or 0))
            if value == 1 and count == spec.replicated:
                whole += coef * widths[-1]
                continue
            if value % tp:
                raise RoofcalcError(f"--tp {tp} does not divide {module}'s {count} {value}: each rank must hold a "
                                    f"whole share")
            state_widths += [value, widths[-1]]
        if len(widths) == len(spec.conv) and not whole:
            state_widths.append(sum(c * w for c, w in zip(spec.conv, widths)))
        if whole and tp > 1 and len(widths) == len(spec.conv):
            channels = sum(c * w for c, w in zip(spec.conv, widths))  # the conv's
            replicated[module] = (whole, channels)
            if (channels - whole) % tp == 0:
                state_widths.append((channels, (channels - whole) // tp + whole))
    # the layers where a state module runs its conv: the module's path may name other blocks in other layers
    # (Nemotron-H's "mixer": attention, an MLP or the experts elsewhere)
    state_layers = {module: {x for k in a.kernels if _under(_base(k), module) and recurrent_conv(_base(k))
                             for x in layers_of.get(id(k), ())} for module in plan.states}

    def state_module(k: Kernel) -> str:
        """The recurrent state module ``k`` runs in, or ""."""
        for module in plan.states:
            if k.scope == "layer" and _under(_base(k), module) and \
                    (not layers_of or set(layers_of.get(id(k), ())) & state_layers[module]):
                return module
        return ""

    def state_of(k: Kernel):
        """The RecurrentState of the module ``k`` runs in, or None."""
        return plan.states.get(state_module(k))

    # the outputs of each state module's column-parallel projections (in_proj's z, x, B, C and dt): an op on them
    # runs on the rank's share of that width, a single group's B and C whole
    state_proj = {module: {k.sizes.n for k in a.kernels if k.scope == "layer" and _under(_base(k), module)
                           and isinstance(k.sizes, MatmulSizes) and _style(k, layer_keys, model_keys) in COLUMN
                           and (not layers_of or set(layers_of.get(id(k), ())) & state_layers[module])}
                  for module in plan.states}

    # whether the ranks split the attention heads (Phi-3's gathered plan: every head on every rank); a recurrent
    # state's ops, which move its state as attention's move their keys and values, say nothing of them (a model with
    # no attention, Mamba's)
    heads_split = not mla and any(k.cost.kv_bytes and inside(k) and state_of(k) is None for k in a.kernels)

    def rank_channels(k: Kernel, n: int) -> int:
        """A rank's share of ``n`` channels of a state module's projection or conv: 1/N, but a single group's,
        which every rank holds whole."""
        whole = replicated.get(state_module(k), (0, 0))[0]
        if whole and (n - whole) % tp == 0:
            return (n - whole) // tp + whole
        _check("outputs", n, tp, _base(k))
        return n // tp

    cached = _cached_heads(a) or kv  # the heads the cache holds (transformers' Falcon: every query head's)
    kv_share = (min(tp, cached) if cached else tp) if heads_split else 1  # a rank's: 1/tp, one head at least
    if heads_split and n and n % tp:  # as the hand families refuse it (parallel.Parallel's check)
        raise RoofcalcError(f"--tp {tp} does not divide num_attention_heads {n}: each rank must hold a whole share")
    if heads_split and kv and kv % tp and tp % kv:
        raise RoofcalcError(f"--tp {tp} and {kv} KV heads: one must divide the other (split the KV heads, or "
                            f"replicate each over tp / K ranks)")
    hd = s.head_dim
    # a rank's widths, for the shape text of the ops it runs on its share (its heads, KV heads, MLP width)
    rank_widths = _width_map(((n, n // tp if n % tp == 0 else n), (cached, cached // kv_share if heads_split else cached),
                              (n * hd, (n // tp) * hd if n % tp == 0 else n * hd),
                              (cached * hd, (cached // kv_share if heads_split else cached) * hd),
                              (s.d_ff, s.d_ff // tp if s.d_ff and s.d_ff % tp == 0 else s.d_ff),
                              # other MLPs' widths, and a recurrent module's projections (a single group's whole)
                              *((z.n, rank_channels(k, z.n)) for k in a.kernels if k.scope == "layer"
                                and _style(k, layer_keys, model_keys) in COLUMN and isinstance(z := k.sizes, MatmulSizes)
                                and z.n % tp == 0 and z.n not in (kv * hd, n * hd + 2 * kv * hd)),
                              *(w if isinstance(w, tuple) else (w, w // tp) for w in state_widths)))
    tied = next((k.params == 0 for k in a.kernels if _style(k, layer_keys, model_keys) == "colwise_gather_output"),
                s.tie_word_embeddings)  # a first pipeline stage has no lm_head: the config says
    out: list[Kernel] = []
    shares = {tp, kv_share}  # every share a cost is rounded down to (⌊c·n/d⌋: the d of n/d in lowest terms)
    expert_bytes = 0  # the experts' weights a step's layers hold, whole (their module's, on no kernel)
    state_weights = 0  # a split state module's weights read by its ops and held by none of its kernels (the conv's)
    state_extra = 0  # a rank's conv state beyond 1/N of the whole: one group's, held whole on every rank
    # a serving engine sums a shared expert's partial output with the routed experts' and all-reduces the sum once
    # (Workload.tp_layout): the shared expert (a module beside the experts, in the block that holds them) reduces
    # nothing of its own, and the experts' all-reduce follows the run of the block's kernels after the experts
    # (its last, the sum)
    moe_blocks = {p.rpartition(".")[0] for p in experts} - {""}

    def block_of(k: Kernel) -> str:  # the block a shared expert's kernel sits in, beside the experts ("" if none)
        module = _base(k).rpartition(".")[0]
        block = module.rpartition(".")[0]
        return block if k.scope == "layer" and module not in experts and block in moe_blocks else ""

    def layers(k: Kernel) -> tuple:  # the layers a row ran in where known, else the kind of layer its name tags
        return tuple(layers_of.get(id(k)) or (k.name.partition("[")[2],))

    # each experts module's last kernel in a layer: its all-reduce follows it, once for every layer it is the
    # last of (a row merged over layers, or not: rows merge where they cost the same, so one module's rows may
    # be merged and not); where a shared expert's joins it, after the block's kernels that follow it
    last, shared = {}, set()
    for i, k in enumerate(a.kernels):
        home = next((p for p in experts if k.scope == "layer" and _under(_base(k), p)), None)
        for layer in layers(k) if k.scope == "layer" else ():
            if home is not None:
                last[(home, layer)] = i
            block = block_of(k) if wl.tp_layout == "serving" and not shared_apart else ""
            if block and _style(k, layer_keys, model_keys) in ROW + ("rowwise_split_input",):
                shared.add((block, layer))
    joined = {(home.rpartition(".")[0], layer) for home, layer in last} & shared  # (block, layer): one all-reduce

    def block_end(i: int, block: str, layer) -> int:
        while i + 1 < len(a.kernels) and a.kernels[i + 1].scope == "layer" and \
                _under(_base(a.kernels[i + 1]), block) and layer in layers(a.kernels[i + 1]):
            i += 1
        return i

    ends: dict[int, dict[str, int]] = {}  # kernel index -> the all-reduces after it: name -> the layers it ends
    for (home, layer), i in last.items():
        block = home.rpartition(".")[0]
        at = block_end(i, block, layer) if (block, layer) in joined else i
        name = _base(a.kernels[at]) if at != i else home
        ends.setdefault(at, {})
        ends[at][name] = ends[at].get(name, 0) + 1
    summed = False  # a shared expert's all-reduce left to the experts'

    def reduce_after(j: int) -> None:
        kj = a.kernels[j]
        for name, n_layers in ends.get(j, {}).items():
            out.append(collective(f"{name}.all_reduce{_layer_tag(kj)}", "all_reduce",
                                  wl.act_dtype.nbytes(wl.tokens * s.d_model), tp,
                                  n_layers if layers_of.get(id(kj)) else kj.count, kj.scope,
                                  f"[{wl.tokens},{s.d_model}]"))
    # the routed experts' width I (their down matmul's depth) and a rank's, for the shape text of the ops between
    # their matmuls (not where I is the hidden size, which those ops' other tensors hold whole: gpt-oss's)
    expert_widths = _width_map((z.k, z.k // tp) for x in a.kernels if x.scope == "layer"
                               and any(_under(_base(x), p) for p in experts) and isinstance(z := x.sizes, MatmulSizes)
                               and z.n == s.d_model and z.k != s.d_model and z.k % tp == 0)
    for i, k in enumerate(a.kernels):
        if i:
            reduce_after(i - 1)  # the experts' all-reduce, after the kernel it follows
        style = _style(k, layer_keys, model_keys)
        name = _base(k)
        home = next((p for p in experts if k.scope == "layer" and _under(name, p)), None)
        if home is not None:
            if whole_experts:
                ew = next(x.expert_weights for x in a.kernels if x.expert_weights is not None)
                reached = touched_experts(ew[0], ew[1], wl.tokens, wl.experts)
                rows = wl.tokens * ew[1]
                out.append(_expert_rows(k, tp, wl, min(ew[0] // tp, math.ceil(reached / tp - 1e-9)),
                                        (-(-rows // tp), rows), masked=getattr(parallel, "masked_experts", False)))
            else:
                out.append(_expert_share(k, tp, s, home, wl.act_dtype.nbytes(wl.tokens * s.d_model), expert_widths))
            if k.expert_weights is not None and not k.params:  # (a kernel that holds them splits them itself)
                expert_bytes += sum(k.expert_weights[2]) * k.count
            continue
        if k.expert_weights is not None:
            raise RoofcalcError(f"--tp for a traced {s.model_type}: its experts ({name}) are not split by "
                                f"roofcalc's traced plan yet")
        if style in COLUMN + ROW + ("rowwise_split_input", "rowwise_partial", "colwise_gather_output", "colwise_rep"):
            z = k.sizes
            if not isinstance(z, MatmulSizes):
                raise RoofcalcError(f"--tp for a traced {s.model_type}: {name} is {style!r} in {plan.name}, but "
                                    f"its trace is not one matmul")
            if style in COLUMN + ("colwise_gather_output", "colwise_rep"):
                if z.n == n * hd + 2 * kv * hd and kv != n and style in COLUMN:  # a fused q/k/v: whole heads a rank
                    _check("attention heads", n, tp, name)
                    rank_n = (n // tp + 2 * max(1, kv // tp)) * hd
                elif z.n == kv * hd and kv < n and style in COLUMN:  # k or v of grouped heads
                    rank_n = max(1, kv // tp) * hd
                elif k.scope == "model" and z.n == s.vocab_size:  # lm_head: the rank's rows of the vocabulary
                    rank_n = vocab_share(z.n, tp)
                else:
                    rank_n = rank_channels(k, z.n)
                cost = _scaled(k.cost, rank_n, z.n, read=False, kv=(1, 1))  # its input (an MLA latent cache) whole
                shares.add(z.n // math.gcd(rank_n, z.n))
                sizes = MatmulSizes(z.m, rank_n, z.k)
            else:
                _check("inputs", z.k, tp, name)
                cost = _scaled(k.cost, 1, tp, write=False)
                sizes = MatmulSizes(z.m, z.n, z.k // tp)
            frac = (sizes.n * sizes.k, z.n * z.k)
            params, param_bytes = k.params * frac[0] // frac[1], k.param_bytes * frac[0] // frac[1]
            if not k.params and k.cost.weight_bytes and getattr(state_of(k), "bare_proj_bias", False):
                # a projection run as a bare matmul of its weight (a Mamba-1 mixer's dt_proj): its weight and its
                # bias, which the scan reads, are held by no kernel and split with its outputs
                state_weights += (k.cost.weight_bytes - cost.weight_bytes
                                  + wl.float_weight_dtype.nbytes(z.n - sizes.n)) * k.count
            bias = k.params - z.n * z.k if k.params > z.n * z.k else 0
            if bias and sizes.n == z.n:  # a rowwise bias is added once, after the reduction: whole on every rank
                bias_bytes = wl.float_weight_dtype.nbytes(bias)
                params = (k.params - bias) // tp + bias
                param_bytes = (k.param_bytes - bias_bytes) // tp + bias_bytes
                cost = replace(cost, weight_bytes=(k.cost.weight_bytes - bias_bytes) // tp + bias_bytes)
            out.append(replace(k, cost=cost, sizes=sizes, dims=sizes.text, params=params, param_bytes=param_bytes))
            if style in ROW + ("rowwise_split_input",) and block_of(k) and k.scope == "layer" and \
                    all((block_of(k), layer) in joined for layer in layers(k)):
                summed = True
            elif style in ROW + ("rowwise_split_input",):
                out.append(collective(f"{k.name}.all_reduce", "all_reduce", wl.act_dtype.nbytes(z.m * z.n), tp,
                                      k.count, k.scope, f"[{z.m},{z.n}]"))
            elif style in ("colwise_gather_output", "colwise_rep"):
                out.append(collective(f"{k.name}.all_gather", "all_gather", wl.act_dtype.nbytes(z.m * sizes.n), tp,
                                      k.count, k.scope, f"[{z.m},{sizes.n}]"))
            continue
        if style == "embedding_rowwise":  # the rank's ceil(V / N) rows (vocab_share: uneven shards, or padded)
            rows = vocab_share(s.vocab_size, tp)
            out.append(replace(k, params=k.params * rows // s.vocab_size,
                               param_bytes=k.param_bytes * rows // s.vocab_size))
            if not (tied and plan.transformers and k.cost.flops):  # a tied, scaled embedding (Gemma's) runs none
                out.append(collective(f"{k.name}.all_reduce", "all_reduce", k.cost.act_write_bytes, tp, k.count,
                                      k.scope, k.dims))
            continue
        if style in WHOLE and k.kind != "matmul" and inside(k, whole_weights=True):  # a norm over one head's
            # width the plan replicates (LFM2-MoE's q_layernorm): its weight whole, the rank's heads through it
            dims = _rank_dims(k.dims, rank_widths)  # (its share: the rank's query heads, or its KV heads)
            found = [_TENSOR.search(d) for d in (k.dims, dims)]
            if not all(found) or dims.endswith("(all ranks)"):  # which axis is the rank's cannot be told: whole
                out.append(k)
                continue
            whole_n, rank_n = (math.prod(int(x) for x in m.group(1).split(",")) for m in found)
            out.append(replace(k, cost=_scaled(k.cost, rank_n, whole_n, weights=False), dims=dims))
            shares.add(whole_n // math.gcd(rank_n, whole_n))
            continue
        if inside(k) and k.kind == "matmul" and k.params and isinstance(k.sizes, MatmulSizes) and \
                k.sizes.k == s.d_model:  # a projection of the layer's whole hidden state the plan leaves out
            out.append(k)  # (a router): whole on every rank, as transformers replicates what its plan leaves out
            continue
        if inside(k) and mla and (k.cost.kv_write_bytes or k.params in latents):
            out.append(k)  # the latent cache's update, a latent's norm: whole
            continue
        mode = next((m for module, m in plan.norms.items() if k.scope == "layer" and _under(name, module)), None)
        if mode is not None and inside(k) and k.params:  # a norm over every head's width, the heads split
            width = k.params
            if kv % tp or width % tp:
                raise RoofcalcError(f"--tp {tp} and {kv} KV heads: vLLM's split of {s.model_type} norms each rank's "
                                    f"share of k, which needs --tp to divide the KV heads (transformers' plan, "
                                    f"--engine hf, gathers every head instead)")
            if mode == "gather":  # the rank's share all-gathered, the norm whole on every rank
                out.append(collective(f"{k.name}.all_gather", "all_gather", wl.act_dtype.nbytes(wl.tokens * width // tp),
                                      tp, k.count, k.scope, f"[{wl.tokens},{width // tp}]"))
                out.append(k)
                continue
            out.append(replace(k, cost=_scaled(k.cost, 1, tp), params=k.params // tp, param_bytes=k.param_bytes // tp,
                               dims=_rank_dims(k.dims, rank_widths)))
            reduced = [m for m, x in plan.norms.items() if x == "reduce"]
            if _under(name, reduced[-1]):  # the layer's last: one all-reduce of every such norm's sums of squares
                out.append(collective(f"{k.name}.all_reduce", "all_reduce", 4 * wl.tokens * len(reduced), tp,
                                      k.count, k.scope, f"[{wl.tokens},{len(reduced)}]"))
            continue
        if inside(k) and (spec := state_of(k)) is not None:  # a split recurrent state's ops: 1/N of its heads,
            # their state and the weights they read (the conv's, A_log's, dt_bias's: vLLM's conv1d column-parallel),
            # and the weight the kernel's own module holds (its gated norm's) where the engines split it
            weights = not k.params or spec.own_weights
            whole, channels = replicated.get(state_module(k), (0, 0))
            # the conv's channels (its op and its activation): 1/N, but one group's whole on every rank
            # (the conv's op by its name; an op between by the width it runs on: the conv's channels, or in_proj's
            # outputs (Falcon-H1's multiplier on them); the gate's activation on the heads' width alone is 1/N)
            width = channels if recurrent_conv(_base(k)) else 0 if k.kind == "matmul" or k.cost.kv_bytes else \
                _op_width(k.dims, {channels, *state_proj.get(state_module(k), ())}, wl.query_tokens)
            on_conv = bool(whole and width)
            frac = (rank_channels(k, width), width) if on_conv else (1, tp)
            cost = _scaled(k.cost, *frac, weights=weights)
            state_extra += (cost.kv_write_bytes - k.cost.kv_write_bytes // tp) * k.count if whole and on_conv else 0
            if not k.params and recurrent_conv(_base(k)):  # (the conv's weight and bias, held by no kernel; A_log,
                # D and dt_bias, read by other ops, are the module's bare parameters, split below)
                state_weights += (k.cost.weight_bytes - cost.weight_bytes) * k.count
            own = dict(params=k.params // tp, param_bytes=k.param_bytes // tp) if k.params and weights else {}
            dims = _state_lead_dims(k.dims, rank_widths, wl.batch, wl.tokens, bool(k.cost.kv_bytes)) or \
                _rank_dims(k.dims, rank_widths, lead=recurrent_conv(_base(k)))
            out.append(replace(k, cost=cost, dims=dims,
                               **own))
            if whole and k.params and spec.own_weights:  # the gated norm over every rank's heads: its sums of
                # squares all-reduced, one fp32 value a token (vLLM's Mixer2RMSNormGated with a single group)
                out.append(collective(f"{k.name}.all_reduce", "all_reduce", 4 * wl.tokens, tp, k.count, k.scope,
                                      f"[{wl.tokens},1]"))
            continue
        if inside(k):
            if k.kind == "matmul" and k.params:
                raise RoofcalcError(f"--tp for a traced {s.model_type}: {name} multiplies a weight inside a module "
                                    f"{plan.name} splits, but the plan does not name it")
            share = kv_share if k.cost.kv_write_bytes else tp  # the cache update moves the rank's KV heads alone
            z = k.sizes  # an attention call's: the rank's query heads and the KV heads it caches (none where the
            # ranks do not split whole query heads: its class's efficiency then, as before it had sizes)
            sizes = z if not isinstance(z, AttentionSizes) or not heads_split else None if z.heads % tp else \
                replace(z, heads=z.heads // tp, kv_heads=max(1, z.kv_heads // kv_share))
            out.append(replace(k, cost=_scaled(k.cost, 1, share, weights=False, kv=(1, kv_share)), sizes=sizes,
                               dims=_rank_dims(k.dims, rank_widths)))
            continue
        out.append(k)
    if a.kernels:
        reduce_after(len(a.kernels) - 1)
    rank_params = sum(k.params * k.count for k in out if k.kind != "collective")
    owned = sum(k.params * k.count for k in a.kernels)
    owned_bytes = sum(k.param_bytes * k.count for k in a.kernels)
    rank_bytes = sum(k.param_bytes * k.count for k in out if k.kind != "collective")
    expert_params = a.expert_params or (expert_bytes // wl.weight_dtype.nbytes(1) if expert_bytes else 0)
    if state_weights:  # the conv weights a split state module's ops read: held by no kernel, 1/N on a rank
        rank_bytes -= state_weights
        rank_params -= state_weights // wl.float_weight_dtype.nbytes(1)
    if expert_bytes:  # the experts' weights: 1/N of each on a rank
        owned_bytes += expert_bytes
        rank_bytes += expert_bytes // tp
        owned += expert_params
        rank_params += expert_params // tp
    for path, leaf, numel, nbytes, layer in a.bare_params:  # a bare parameter the plan splits (attention sinks)
        if expert_bytes and layer is not None and any(path == p or path.startswith(p + ".") for p in experts):
            continue  # the routed experts' stacks: split above (Llama-4's, which run dense, by the plan here)
        style = next((st for pattern, st in (layer_keys if layer is not None else model_keys)
                      if fnmatch.fnmatchcase(f"{path}.{leaf}", pattern)), None)
        if style in COLUMN + ROW:
            _check("parameter", numel, tp, f"{path}.{leaf}")
            rank_params -= numel - numel // tp
            rank_bytes -= nbytes - nbytes // tp
    widths = {k.sizes.k for k in a.kernels if k.expert_weights is not None and isinstance(k.sizes, MatmulSizes)
              and k.sizes.n == s.d_model}  # the routed experts' width I (their down matmul's depth)
    widths |= {k.sizes.n // 2 for k in a.kernels if k.expert_weights is not None and isinstance(k.sizes, MatmulSizes)
               and _base(k) in experts}  # or half the width of the kernel that runs them whole (onto 2I, then back)
    split_ff = s.d_ff and s.d_ff % tp == 0 and not (whole_experts and widths == {s.d_ff})  # F the experts' I: whole
    # a dense MLP's up projections (onto F, or onto 2F fused), where F is no routed expert's width: F splits where
    # one of them splits its outputs, not where the plan gathers them all (GLM-4-0414's mlp: the activation runs on
    # the whole width on every rank)
    ups = [k for k in a.kernels if k.scope == "layer" and k.expert_weights is None and isinstance(k.sizes, MatmulSizes)
           and s.d_ff not in widths and k.sizes.n in (s.d_ff, 2 * s.d_ff) and k.sizes.k == s.d_model]
    split_ff = split_ff and (not ups or any(_style(k, layer_keys, model_keys) in COLUMN for k in ups))
    # (a plan that gathers its projections' outputs, Phi-3's in transformers, runs every head and the whole MLP width
    # on every rank: the shape per rank says so)
    # (latent attention split by heads: the rank's query heads and the heads its latent expands to, the latent
    # itself whole)
    rank_shape = replace(s, n_heads=n // tp if n % tp == 0 and (heads_split or mla) else n,
                         n_kv_heads=max(1, kv // tp) if heads_split or mla and kv == n and n % tp == 0 else kv,
                         d_ff=s.d_ff // tp if split_ff and (sharded or experts) else s.d_ff,
                         vocab_size=vocab_share(s.vocab_size, tp))
    return TracedRankAnalysis(
        rank_shape, wl, tuple(out), source=a.source, view=a.view,
        traced_kv_bytes_per_token=a.traced_kv_bytes_per_token // kv_share,
        traced_cache_bytes=_rank_cache_bytes(a, kv_share, tp if plan.states else 1) + state_extra,
        traced_params=a.traced_params - owned + rank_params,
        traced_param_bytes=a.traced_param_bytes - owned_bytes + rank_bytes,
        check=a.check, note=a.note, logits=a.logits, layer_heads=a.layer_heads, language_params=a.language_params,
        parallel=parallel, full=a, plan_words=plan_words(plan, summed) + _whole_mixers(a, plan, sharded, wl),
        expert_params=expert_params // tp,
        spacing=math.lcm(*shares), split_verdict=getattr(serving_split(s.family, config), "verdict", ()))


def _rank_cache_bytes(a: TracedAnalysis, kv_share: int, state_share: int) -> int:
    """A rank's cache: its KV heads' share of the keys and values, ``state_share`` of the recurrent states (a hybrid's:
    the cache beyond its keys and values, the same at every length; whole on every rank unless its modules split:
    a Mamba mixer run whole, a gated delta net under transformers' gathered plan)."""
    kv = min(a.traced_cache_bytes, a.traced_kv_bytes_per_token * a.workload.batch * a.workload.kv_len)
    return kv // kv_share + (a.traced_cache_bytes - kv) // state_share


def _cached_heads(a: TracedAnalysis) -> int:
    """The KV heads a layer's cache holds, from the traced cache (K and V of H each per token in every layer
    that runs attention: a hybrid's attention layers alone), or 0 where that does not come out whole (layers
    that differ, recurrent states)."""
    s, w = a.shape, a.workload
    layers = s.n_layers
    if len(a.kernel_layers) == len(a.kernels):  # a hybrid: the layers that run attention hold keys and values
        held = {x for k, ls in zip(a.kernels, a.kernel_layers) if k.kind == "attention" and k.cost.kv_read_bytes
                for x in ls}
        layers = len(held) if 0 < len(held) < layers else layers
    per_head = 2 * layers * w.kv_dtype.nbytes(s.head_dim) if s.head_dim and layers else 0
    if not per_head or a.traced_kv_bytes_per_token % per_head:
        return 0
    return a.traced_kv_bytes_per_token // per_head


def _under(name: str, module: str) -> bool:
    """Whether a kernel named ``name`` ran in ``module``: one of its ops (``mlp.experts.down_proj``), or the
    module whole as one kernel (``mlp.experts``: gpt-oss's experts in transformers 5.25)."""
    return name == module or name.startswith(module + ".")


def _layer_tag(k: Kernel) -> str:
    """The kind of layer a merged row names (``[3]``), for the collective after it."""
    return "[" + k.name.partition("[")[2] if "[" in k.name else ""


def _expert_share(k: Kernel, tp: int, s, home: str, io: int = 0, widths: dict | None = None) -> Kernel:
    """A kernel of routed experts split on their width: a grouped matmul on the hidden size (gate/up)
    keeps its input and 1/N of its outputs, one back to the hidden size (down) 1/N of its input and its
    whole (partial) output; their FLOPs and weights 1/N; the ops between 1/N of everything. A kernel that is
    the whole experts MLP (gpt-oss's): its input and its partial output (``io`` bytes each, the step's tokens
    at the hidden size) whole, and what else it moves (its intermediates, in the eager view) 1/N. ``widths``:
    the experts' width and the rank's (an op between the matmuls says its share, as :func:`_rank_dims`)."""
    z = k.sizes
    if isinstance(z, MatmulSizes) and _base(k) == home:  # the whole experts MLP in one kernel (gate and up onto
        if z.n % tp:  # z.n = 2I, then down): its input and its (partial) output whole, its FLOPs and weights 1/N
            raise RoofcalcError(f"--tp {tp} for a traced {s.model_type}: {home}'s width {z.n} does not divide")
        c = k.cost
        cost = replace(_scaled(c, 1, tp, read=False, write=False),
                       act_read_bytes=min(c.act_read_bytes, io) + max(0, c.act_read_bytes - io) // tp,
                       act_write_bytes=min(c.act_write_bytes, io) + max(0, c.act_write_bytes - io) // tp)
        sizes = MatmulSizes(z.m, z.n // tp, z.k)
    elif isinstance(z, MatmulSizes):
        if z.k == s.d_model and z.n % tp == 0:
            cost, sizes = _scaled(k.cost, 1, tp, read=False), MatmulSizes(z.m, z.n // tp, z.k)
        elif z.n == s.d_model and z.k % tp == 0:
            cost, sizes = _scaled(k.cost, 1, tp, write=False), MatmulSizes(z.m, z.n, z.k // tp)
        else:
            raise RoofcalcError(f"--tp {tp} for a traced {s.model_type}: {_base(k)} in {home} neither reads nor "
                                f"writes the hidden size {s.d_model} whole, or its width does not divide")
    if isinstance(z, MatmulSizes):
        ew = k.expert_weights
        return replace(k, cost=cost, sizes=sizes, dims=_grouped_dims(k.dims, sizes), params=k.params // tp,
                       param_bytes=k.param_bytes // tp,
                       expert_weights=None if ew is None else (ew[0], ew[1], tuple(b // tp for b in ew[2])))
    return replace(k, cost=_scaled(k.cost, 1, tp, weights=False), dims=_rank_dims(k.dims, widths or {}))


def _width_map(pairs) -> dict[int, int]:
    """Whole width -> a rank's, for the widths a rank splits; a width that two splits would map apart is left out."""
    out: dict[int, int] = {}
    clash = set()
    for whole, rank in pairs:
        if not whole or whole == rank:
            continue
        if out.get(whole, rank) != rank:
            clash.add(whole)
        out[whole] = rank
    return {w: r for w, r in out.items() if w not in clash}


_TENSOR = re.compile(r"\[([\d,]+)\]")


def _op_width(dims: str, widths: set, tokens: int) -> int:
    """The channel width an elementwise op runs on, of ``widths``, from its first operand's shape text: its last
    axis ([batch, tokens, width]), or its second where the last is the sequence's ``tokens`` (a conv's layout,
    [batch, width, tokens]); 0 where neither is one of them (a batch or token count that happens to equal a
    width is not taken for it)."""
    m = _TENSOR.search(dims or "")
    shape = [int(x) for x in m.group(1).split(",")] if m else []
    if shape and shape[-1] in widths:
        return shape[-1]
    return shape[1] if len(shape) >= 3 and shape[1] in widths and shape[-1] == tokens else 0


def _rank_dims(dims: str, widths: dict[int, int], lead: bool = False) -> str:
    """An op's shape text (its operands' shapes, from the trace) for a rank's share: in each operand the one axis
    that is a split width (heads, KV heads, their widths, the MLP's) takes the rank's; the first operand's first
    axis (the batch, or the rows), a later operand's where it is the same, and a head's width (the last of four or
    more) are never split (with ``lead``, a conv's, a later operand leading with a split width, its weight,
    splits there alone). An operand with two such axes cannot say which is split: the text then stays the whole
    model's and says so."""
    if not widths:
        return dims
    ambiguous = False
    rows = []  # the first operand's first axis (the batch, or the rows)

    def one(m: re.Match) -> str:
        nonlocal ambiguous
        shape = [int(x) for x in m.group(1).split(",")]
        last = len(shape) - 1 if len(shape) >= 4 else len(shape)
        # ``lead``: a later operand that does not lead with the rows leads with its channels (a conv's weight)
        channels = bool(lead and rows and shape[0] != rows[0] and shape[0] in widths)
        rows.append(shape[0])
        at = [0] if channels else [i for i, x in enumerate(shape) if 0 < i < last and x in widths]
        if len(at) > 1:
            ambiguous = True
        elif at:
            shape[at[0]] = widths[shape[at[0]]]
        return "[" + ",".join(map(str, shape)) + "]"

    out = _TENSOR.sub(one, dims)
    return f"{dims} (all ranks)" if ambiguous else out


def _state_lead_dims(dims: str, widths: dict[int, int], batch: int, tokens: int, state_update: bool) -> str:
    """A recurrent mixer's op whose operands lead with a split width rather than the batch or the tokens, as the
    rank runs it: a Mamba mixer's ops on A ([I, N] or [H]: no axis of the first operand is the batch or the
    tokens), or a Mamba-2 state update's (``state_update``: it moves the state) [B·H, head dim, N], the batch and
    heads flattened; that axis alone takes the rank's share, the others (a head's width, the state size, which may
    equal a head count) stay. "" elsewhere (the generic rewrite then applies): an op whose first operand holds an
    axis equal to the batch or the tokens says nothing sure of its first axis."""
    shapes = [[int(x) for x in m.group(1).split(",")] for m in _TENSOR.finditer(dims)]
    if not shapes:
        return ""
    lead = shapes[0][0]
    if state_update:
        if lead % batch or lead // batch not in widths or lead == batch:
            return ""
        rank = batch * widths[lead // batch]
    elif lead in widths and not set(shapes[0]) & {batch, tokens}:
        rank = widths[lead]
    else:
        return ""
    return _TENSOR.sub(lambda m: "[" + ",".join(str(rank) if i == 0 and int(x) == lead else x
                                               for i, x in enumerate(m.group(1).split(","))) + "]", dims)


_GROUPED = re.compile(r"^\[(\d+),(\d+)\]x\[(\d+),(\d+),(\d+)\]$")  # a grouped matmul's [m,k]x[E,k,n]
_BATCHED = re.compile(r"^\[(\d+),(\d+),(\d+)\]x\[(\d+),(\d+),(\d+)\]$")  # a bmm over a stack: [E,m,k]x[E,k,n]


def _grouped_dims(dims: str, sizes: MatmulSizes | None = None, experts: int | None = None) -> str:
    """A grouped matmul's shape text for a rank's share: its rows and widths from ``sizes``, its experts
    ``experts``; any other text as it was."""
    m = _GROUPED.match(dims)
    b = _BATCHED.match(dims) if m is None and sizes is not None and experts is None else None
    if b is not None:  # every token through every expert of the stack (Llama-4's eager experts): the rank's widths
        return f"[{b.group(1)},{b.group(2)},{sizes.k}]x[{b.group(4)},{sizes.k},{sizes.n}]"
    if m is None:
        return dims
    rows, k, e, _, n = (int(x) for x in m.groups())
    if sizes is not None:
        rows, k, n = sizes.m, sizes.k, sizes.n
    e = experts if experts is not None else e
    return f"[{rows},{k}]x[{e},{k},{n}]"


def _expert_rows(k: Kernel, ep: int, wl, held: int, share: tuple[int, int], masked: bool = False) -> Kernel:
    """A kernel of routed experts on the busiest of ``ep`` ranks that each hold E/ep experts at their whole
    width and run every sequence (``roofcalc.parallel.ep_tp_kernels``' rule): its FLOPs and activations on
    share[0] of its share[1] token-expert rows; a grouped matmul reads the weights of the ``held`` experts
    the step reaches on that rank. ``masked`` (the engine's fused MoE maps the other ranks' experts out and writes
    their rows as zeros: Parallel.masked_experts): a matmul's FLOPs and reads stay the rank's rows, its writes
    are every row's, and the ops between and after the matmuls (the activation, the routing weights, the sum)
    run over every row, as the hand model counts them."""
    from ..calculator import traced_expert_bytes
    from ..parallel import _share

    num, den = share
    cost = _share(k.cost, share)
    if masked:
        cost = replace(cost, act_write_bytes=k.cost.act_write_bytes) if k.kind == "matmul" else k.cost
    moe = (k.moe[0], k.moe[1] // ep, *k.moe[2:]) if k.moe else ()  # a fused MoE call over the rank's E/ep experts
    ew = k.expert_weights
    if ew is None:
        return replace(k, cost=cost, moe=moe)
    if ew[0] % ep:
        raise RoofcalcError(f"--ep {ep} does not divide the {ew[0]} routed experts: each rank must hold a whole share")
    other = k.cost.weight_bytes - traced_expert_bytes(ew, wl.tokens, wl.experts)  # any weight but the experts'
    per = sum(ew[2]) // ew[0]  # one expert's weights in this kernel
    sizes = replace(k.sizes, m=-(-k.sizes.m * num // den)) if isinstance(k.sizes, MatmulSizes) else k.sizes
    return replace(k, cost=replace(cost, weight_bytes=other + held * per), sizes=sizes, params=k.params // ep, moe=moe,
                   dims=_grouped_dims(k.dims, sizes if isinstance(sizes, MatmulSizes) else None, ew[0] // ep),
                   param_bytes=k.param_bytes // ep, expert_weights=(ew[0] // ep, ew[1], tuple(b // ep for b in ew[2])))


def _whole_mixers(a: TracedAnalysis, plan: Plan, sharded: set, wl) -> str:
    """The header's words where the serving engines' layout leaves a recurrent mixer whole on every rank, as
    transformers' plan runs it, for want of a split roofcalc models (a hybrid with none in :data:`SERVING_SPLITS`);
    "" elsewhere."""
    if wl.tp_layout != "serving":
        return ""
    mixers = sorted({_base(k).rpartition(".")[0] for k in a.kernels if k.scope == "layer" and recurrent_conv(_base(k))
                     and not any(_under(_base(k), m) for m in list(plan.states) + list(sharded))} - {""})
    return (f"; its recurrent mixers ({', '.join(mixers)}) whole on every rank, as transformers' plan runs them: the "
            f"serving engines' split of them (by heads) is not modelled for this model" if mixers else "")


def plan_words(plan: Plan, summed: bool = False) -> str:
    """The header's account of a traced rank's plan; ``summed``: a shared expert's all-reduce left to the routed
    experts' (Workload.tp_layout)."""
    from ..parallel import ONE_REDUCE_WORDS

    if not any(".*." in key for key in plan.entries):  # (LFM2's, Hunyuan's, Falcon-H1's in transformers 5.25)
        split = [key for key, style in plan.entries.items() if style not in WHOLE]
        return (f"{plan.source}: it splits no layer ({' and '.join(split) or 'nothing'} alone), so every rank runs "
                f"every layer whole, as transformers' tensor parallelism would")
    joint = "rowwise_partial" in plan.entries.values()
    # a layer module whose projections the plan gathers (transformers' for Phi-3, for a gated delta net): whole
    gathered = sorted({key.partition(".*.")[2].rpartition(".")[0] for key, style in plan.entries.items()
                       if ".*." in key and style == "colwise_gather_output"} - {""})
    return (f"{plan.source}: colwise projections split their outputs, rowwise ones their inputs with an "
            + ("all-reduce a layer, of attention's and the MLP's partial outputs summed" if joint
               else "all-reduce each")
            + (f", but {ONE_REDUCE_WORDS}" if summed else "")
            + ", the ops between on the rank's heads and width"
            + (f", but {' and '.join(gathered)} gather{'s' * (len(gathered) == 1)} "
               f"{'its' if len(gathered) == 1 else 'their'} projections' outputs (colwise_gather_output), so every "
               f"rank runs the ops after them whole" if gathered else "")
            + "; norms and residuals whole")





def ep_words(n_exp: int, parallel, sequences: str | None = None) -> str:
    """The header's account of a traced --ep rank whose attention runs ``sequences`` (words; None: a
    sweep's rank, whose batch is a column)."""
    from ..parallel import SWEPT_EP_SEQUENCES

    ep, tp = parallel.ep, parallel.tp
    sequences = sequences or SWEPT_EP_SEQUENCES.format(ep=ep)
    return (f"{n_exp // ep} of the {n_exp} routed experts"
            + (f" (each at 1/{tp} of its width: --ep {ep} groups of --tp {tp} ranks)" if tp > 1 else "")
            + f", and attention and the dense layers for {sequences} (data-parallel attention); all-to-all "
            f"dispatch and combine around the experts (the trace's experts kernels, each layer's first and last)")


def swept_ep_rank(a: TracedRankAnalysis, parallel) -> TracedRankAnalysis:
    """An --ep rank's analysis for a sweep's header, whose batch is a column: its account of the sequences
    the rank runs in words of any batch (:func:`ep_words`)."""
    n = next(k.expert_weights[0] for k in a.kernels if k.expert_weights is not None)
    return replace(a, ep_words=ep_words(n, parallel))


def traced_ep_rank(local: TracedAnalysis, wl, parallel, full: TracedAnalysis, first: int = 0) -> TracedRankAnalysis:
    """One expert-parallel rank of a traced step (``--ep N``, data-parallel attention, as
    ``roofcalc.parallel.ep_kernels`` runs a hand model): ``local`` is the step traced at the rank's B/N
    of ``wl``'s sequences; ``full`` the whole step's trace. The rank holds E/N of the routed experts: each
    experts kernel reads the weights of its share of the experts the whole step's tokens reach (touched
    experts at ``wl``'s tokens, over N), and the rank holds 1/N of the experts' weights. Its tokens go to
    their experts' ranks in an all-to-all before a layer's first experts kernel (dispatch) and come back
    in another after its last (combine): [B/N·T·k, D] each. With ``parallel.tp`` > 1, ``local`` is one
    --tp rank of that trace (its experts at 1/T of their width) and the all-to-alls run between the ranks
    of the same tensor-parallel index (T apart: they span all T·N ranks, from global rank ``first``: a
    pipeline stage's)."""
    from ..calculator import traced_expert_bytes
    from ..parallel import collective

    ep, s = parallel.ep, local.shape
    experts = [k for k in local.kernels if k.expert_weights is not None]
    if not experts:
        raise _no_routed_experts(local)
    n_exp, top_k = experts[0].expert_weights[:2]
    if n_exp % ep:
        raise RoofcalcError(f"--ep {ep} does not divide the {n_exp} routed experts: each rank must hold a whole share")
    lw = local.workload
    message = lw.act_dtype.nbytes(lw.tokens * top_k * s.d_model)
    dims = f"[{lw.tokens}x{top_k},{s.d_model}]"
    span = (first, first + ep * parallel.tp - 1)
    first, last = {}, {}  # the first and last experts kernel of each kind of layer
    for i, k in enumerate(local.kernels):
        if k.expert_weights is not None:
            first.setdefault(_layer_tag(k), i)
            last[_layer_tag(k)] = i
    out, expert_bytes = [], 0
    for i, k in enumerate(local.kernels):
        if k.moe:  # a fused MoE call's part: the call runs over the rank's E/N experts
            k = replace(k, moe=(k.moe[0], k.moe[1] // ep, *k.moe[2:]))
        if k.expert_weights is not None:
            home = _base(k).rsplit(".", 1)[0] if "." in _base(k) and not _base(k).endswith("experts") else _base(k)
            ew = k.expert_weights
            if i == first[_layer_tag(k)]:
                out.append(replace(collective(f"{home}.dispatch{_layer_tag(k)}", "all_to_all", message, ep, k.count,
                                              k.scope, dims), ranks=span))
            expert_bytes += sum(ew[2]) * k.count
            reads = k.cost.weight_bytes - traced_expert_bytes(ew, lw.tokens, lw.experts) + \
                traced_expert_bytes(ew, wl.tokens, wl.experts, ep)
            out.append(replace(k, cost=replace(k.cost, weight_bytes=reads), dims=_grouped_dims(k.dims, None, n_exp // ep)))
            if i == last[_layer_tag(k)]:
                out.append(replace(collective(f"{home}.combine_all_to_all{_layer_tag(k)}", "all_to_all", message, ep,
                                              k.count, k.scope, dims), ranks=span))
            continue
        out.append(k)
    kept = expert_bytes // ep
    expert_params = local.expert_params or expert_bytes // wl.weight_dtype.nbytes(1)
    words = ep_words(n_exp, parallel, f"{lw.batch} of the {wl.batch} sequences")
    return TracedRankAnalysis(
        s, lw, tuple(out), source=local.source, view=local.view,
        traced_kv_bytes_per_token=local.traced_kv_bytes_per_token, traced_cache_bytes=local.traced_cache_bytes,
        traced_params=local.traced_params - (expert_params - expert_params // ep),
        traced_param_bytes=local.traced_param_bytes - (expert_bytes - kept),
        check=local.check, note=local.note, logits=local.logits, layer_heads=local.layer_heads,
        language_params=local.language_params, model_class=local.model_class, parallel=parallel, full=full,
        plan_words=getattr(local, "plan_words", ""), ep_words=words, expert_params=expert_params // ep,
        spacing=getattr(local, "spacing", 1))


def traced_expert_parallel(traced: tuple, workload, parallel, view: str, merge: bool = True,
                           full: TracedAnalysis | None = None) -> TracedRankAnalysis:
    """One --ep rank of a traced model's step (``traced``: its config, name and label): with data-parallel
    attention traced at its B/N sequences (one --tp rank of them by the config class's plan), its experts
    split over the ranks (:func:`traced_ep_rank`); with --ep-attention tp split as --tp N splits it, each
    rank E/N whole experts (:func:`traced_rank`). ``merge``: as :func:`roofcalc.trace.trace`'s; ``full``: the
    whole model's trace at any workload, for its parameters (a sweep's, traced once), with data-parallel
    attention in place of tracing the whole step again."""
    from ..parallel import Parallel
    from . import hf_config, trace

    if getattr(parallel, "dense_experts", False):  # before tracing anything
        raise RoofcalcError("a traced model's experts run on their routed rows: an engine whose expert-parallel ranks "
                            "run every token through each expert (--engine vllm-v0) is modelled for the hand "
                            "families alone")
    if not parallel.tp_attention and workload.batch % parallel.ep:  # before tracing anything
        raise RoofcalcError(f"--batch {workload.batch} does not split over --ep {parallel.ep}: each rank runs "
                            f"attention for B/{parallel.ep} of the sequences")
    cfg, name, label = traced
    config = hf_config(cfg, name)[0]
    whole = full if full is not None and not parallel.tp_attention else \
        trace(cfg, name, workload, label, view=view, merge=merge or not parallel.tp_attention)
    if parallel.tp_attention:
        rank = traced_rank(whole, parallel, config)
        plan = model_plan(whole.shape.family, whole.check.class_name if whole.check else "", whole.model_class, config)
        # (and the serving engines' split, where it differs from the plan)
        split = serving_split(whole.shape.family, config) if workload.tp_layout == "serving" else None
        how = plan.name + (f"; {split.why}" if split is not None else "")
        n = next(k.expert_weights[0] for k in whole.kernels if k.expert_weights is not None)
        ep = parallel.ep
        return replace(rank, full=whole, ep_words=(
            f"{n // ep} of the {n} routed experts at their whole width, and attention, the dense layers and the "
            f"vocabulary split over the {ep} ranks as --tp {ep} splits them ({how}), for "
            f"every sequence (tensor-parallel attention); no all-to-all: each rank runs its experts on the tokens "
            f"routed to them" + (", its fused MoE call writing and activating every routed pair of the step (another "
                                 "rank's masked to zero, by the engine's expert map)"
                                 if getattr(parallel, "masked_experts", False) else "")
            + " and one all-reduce sums their outputs"))
    local = trace(cfg, name, replace(workload, batch=workload.batch // parallel.ep), label, view=view, merge=merge)
    if parallel.tp > 1:  # (the shared experts reduced apart: roofcalc.parallel.one_moe_reduce)
        local = traced_rank(local, Parallel(tp=parallel.tp), config, shared_apart=True)
    return traced_ep_rank(local, workload, parallel, whole)

__all__ = ["Plan", "SERVING_PLANS", "TracedRankAnalysis", "ep_words", "swept_ep_rank", "model_plan", "plan_words", "traced_ep_rank", "traced_expert_parallel",
           "traced_rank"]
