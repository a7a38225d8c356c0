"""The kernel cost model: FLOPs and bytes of every kernel of a decode or prefill step.

Conventions (stated once; docs/conventions.md explains each):

* FLOPs are actual floating-point operations, not MACs: a matmul is 2·M·N·K.
* Every kernel reads its inputs once and writes its outputs once from and to memory
  (an ideal kernel: no re-reads, no spills). Bytes are bytes, never bits.
* A matmul reads its weights, reads its input and writes its output once.
* Attention counts both QKᵀ and PV over all query heads, plus softmax; it reads Q and the
  K and V cache of the positions it attends to and writes its output.
* Elementwise kernels count a fixed number of FLOPs per element (the ``*_FLOPS_PER_ELEMENT``
  constants below).
* Costs are per single kernel instance; ``count`` says how many instances a step runs, and
  the layer count is applied in exactly one place (:func:`analyze`).

Letters (jax-ml/scaling-book): B batch, T query tokens per sequence, S KV length,
D d_model, N query heads, K KV heads, H head dim, F d_ff, V vocab, L layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from .dtypes import COMPUTE_TYPES, DTYPE_ALIASES, DTYPES, SCALE_BYTES, DType, dtype  # noqa: F401 (the library's names)
from .errors import RoofcalcError
from .families import FAMILIES
from .shapes import PER_CHANNEL, ModelShape

# quantized weights' values per scale where none is given (GPTQ's and AWQ's usual group, 128)
DEFAULT_GROUP = 128

# FLOPs per element of the elementwise kernels. Fused-kernel arithmetic, not every
# instruction; these reproduce the seed table's ≈8 K (RMSNorm) and ≈17 K (SiLU×up) for
# TinyLlama at batch 1.
RMSNORM_FLOPS_PER_ELEMENT = 4  # x², Σ, × rsqrt(mean), × weight
ROTARY_FLOPS_PER_ELEMENT = 3  # x·cos + rotate_half(x)·sin
RESIDUAL_FLOPS_PER_ELEMENT = 1  # x + y
SOFTMAX_FLOPS_PER_SCORE = 5  # max, subtract, exp, sum, divide (the 1/√H scale folds into Q)
EMBED_SCALE_FLOPS_PER_ELEMENT = 1  # Gemma's × √D
LAYERNORM_FLOPS_PER_ELEMENT = 5  # Σx, x − μ, (x − μ)², × rstd·weight, + bias
SOFTCAP_FLOPS_PER_ELEMENT = 3  # Gemma 2: / cap, tanh, × cap (tanh counted as one op)
COMBINE_FLOPS_PER_ELEMENT = 2  # MoE: × routing weight, + into the token's output
POSITION_ADD_FLOPS_PER_ELEMENT = 1  # learned positions: token embedding + position embedding
ACTIVATION_FLOPS_PER_ELEMENT = {  # the activation itself; the × up of a gated MLP adds 1
    "silu": 2,  # x · σ(x), σ counted as one op
    "gelu_tanh": 8,  # 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    "gelu": 8,  # erf form, counted like the tanh form
    "relu": 1,
}

MAX_BATCH = 1 << 20
MAX_TOKENS = 1 << 24


# --------------------------------------------------------------------------- data types (roofcalc.dtypes)


BLOCK_SCALE_BYTES = 4  # one fp32 scale (weight_scale_inv) per 128 x 128 block of fp8 weights
# llama.cpp's block formats: (bytes of a block, weights in it); ggml-common.h: block_q4_0 (an fp16 scale and 32
# 4-bit values), block_q8_0 (an fp16 scale and 32 int8 values), block_q6_K (256 6-bit values in ql[128] and
# qh[64], 16 int8 sub-block scales and an fp16 super-block scale: 210 bytes, 6.5625 bits a weight)
GGML_BLOCKS = {"q4_0": (18, 32), "q8_0": (34, 32), "q6_K": (210, 256)}
# the GGUF file types --weight-dtype names (q4_0, q8_0), as roofcalc's integer formats (weight dtype, group): their
# linears' blocks are exactly these, 4.5 and 8.5 bits a weight
GGUF_FILE_TYPES = {"q4_0": ("int4", 32), "q8_0": ("int8", 32)}
# the model types whose GGUF output table llama.cpp's quantizer keeps in Q8_0 whatever the file's type (its
# LLM_ARCH_FALCON test in llama_tensor_get_type)
GGUF_Q8_OUTPUT = frozenset({"falcon"})
def gguf_tied(s: ModelShape, wl: "Workload") -> bool:
    """Whether a GGUF file holds one table for the embedding and lm_head: a tied model's, unless its family's
    converter writes the table twice (families.Family.gguf_two_tables: GPT-2's), each then quantized as an untied
    model's."""
    family = FAMILIES.get(s.family or s.model_type)
    return s.tie_word_embeddings and not (family is not None and family.gguf_two_tables)


def gguf_table(s: ModelShape, wl: "Workload", output: bool) -> str:
    """The block format a GGUF file of ``wl.gguf``'s type stores the embedding table in (``output`` False) or the
    output table (lm_head's), as llama.cpp's quantizer picks it (src/llama-quant.cpp, llama_tensor_get_type):
    output.weight, or token_embd.weight where the embeddings are tied (no output.weight), takes Q6_K unless the
    file's type is Q8_0 or the model is Falcon or its rows are not a multiple of 256 wide (Q8_0 there); an untied
    token_embd.weight keeps the file's type. "" for a workload that is not a GGUF file's."""
    if not wl.gguf:
        return ""
    if not (output or gguf_tied(s, wl)):
        return wl.gguf
    width = s.embed_dim or s.d_model
    return "q8_0" if wl.gguf == "q8_0" or s.model_type in GGUF_Q8_OUTPUT or width % 256 else "q6_K"
EXPERT_MODES = ("expected", "all", "topk")
MLA_MODES = ("naive", "absorbed", "serving")
CACHE_UPDATES = ("in-place", "concat")
TP_LAYOUTS = ("transformers", "serving")
ATTENTION_MODES = ("fused", "unfused")
# An unfused attention's score matrix, per (query, key) pair and head, 10 bytes written and 10 read between its
# kernels. llama.cpp before FlashAttention (llama.cpp's llm_build_kqv without flash_attn): K·Q written in fp32 (4),
# soft_max_ext reads it and writes fp32 (4 + 4), the PV matmul's fp32 input converted to fp16 (4 read, 2 written)
# and read by cuBLAS (2). transformers' eager attention (eager_attention_forward) in 16 bits moves 24: QKᵀ written (2),
# × scaling (2 + 2), the mask added (2 + 2), softmax in fp32 (2 + 4), cast back (4 + 2), read by PV (2); llama.cpp's
# 20 are counted.
UNFUSED_SCORE_BYTES_WRITTEN = 10
UNFUSED_SCORE_BYTES_READ = 10
# HF activations that transformers computes as a Python formula of eager ops, and the tensors those ops read
# (gelu_new: pow, ×c, + x, ×c, tanh, + 1, 0.5·x, × — two of them read two tensors); every other activation is
# one op reading one tensor
EAGER_ACTIVATION_OPS = {"gelu_new": 8}
EAGER_ACTIVATION_READS = {"gelu_new": 10}


# --------------------------------------------------------------------------- the workload


@dataclass(frozen=True)
class Workload:
    """One forward step: B sequences, each with T new query tokens attending to S positions.

    A decode step is T = 1, S = context (the new token included); a prefill is T = S = prompt.
    """

    phase: str  # "decode" | "prefill"
    batch: int  # B
    query_tokens: int  # T
    kv_len: int  # S
    weight_dtype: DType = DTYPES["fp16"]
    act_dtype: DType = DTYPES["fp16"]
    kv_dtype: DType = DTYPES["fp16"]
    # quantized weights: values per scale, along the input dimension; None: DEFAULT_GROUP, rounded where it does not
    # divide the hidden size (a group given is checked against it: check_group)
    group_size: int | None = None
    causal: bool = True  # prefill: count only the score pairs a causal mask keeps
    logits_all: bool = False  # prefill: lm_head on every position (else the last one only)
    experts: str = "expected"  # MoE weights read: expected distinct experts (uniform routing) | all | topk
    # DeepSeek attention: as transformers computes it | absorbed (as serving engines decode) | serving (absorbed for a
    # decode step, expanded for a prefill: what vLLM, SGLang and TensorRT-LLM run, engines.Engine.mla)
    mla: str = "naive"
    # how the KV cache takes the new tokens: written in place (a serving engine's paged or static cache), or
    # concatenated (transformers' DynamicCache: torch.cat reads the whole cache and writes it again, every step).
    # The default is the CLI's: its default engine is transformers' eager generate (--impl hf-eager)
    cache_update: str = "concat"
    # attention as one fused kernel (FlashAttention, PyTorch SDPA's fused kernels), or unfused: the score matrix
    # written and read between its kernels (llama.cpp without flash attention, transformers' eager attention)
    attention: str = "fused"
    # an unfused attention's prompt in micro-batches of this many tokens, each scoring its queries against every
    # cached position up to its end (llama.cpp's n_ubatch, 512 by default); 0: the whole prompt at once
    # (transformers' eager attention)
    ubatch: int = 0
    # bytes as transformers' eager modules move them (--impl hf-eager): an RMSNorm, rotary and the activation run
    # as several ATen ops, each reading its inputs and writing its output (a traced model's eager view counts
    # every op so); else each of those kernels reads and writes its tensors once, as a fused kernel would. The
    # default is the CLI's, as the cache update's
    eager_ops: bool = True
    # under tensor parallelism, whose split of the model: transformers' plan ("transformers"), or the serving engines'
    # ("serving": vLLM, SGLang, TensorRT-LLM; engines.Engine.tp_layout), which differ where a MoE layer has shared
    # experts (the engines sum them with the routed experts' partial output and all-reduce once, where the plan
    # reduces each) and for Phi-3 (the engines split its heads as Llama's, where the plan gathers every head)
    tp_layout: str = "transformers"
    # the weights as a llama.cpp GGUF file of this type holds them ("q4_0", "q8_0"; weight_dtype is then int4 or
    # int8 in groups of 32): its embedding and output tables are stored as llama.cpp's quantizer writes them
    # (gguf_table, table_bytes), not in the float dtype; "" for any other checkpoint
    gguf: str = ""

    def __post_init__(self) -> None:
        if self.phase not in ("decode", "prefill"):
            raise RoofcalcError(f"phase must be 'decode' or 'prefill', not {self.phase!r}")
        for name in ("weight_dtype", "act_dtype", "kv_dtype"):  # a dtype's name, as the command line takes it
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, dtype(getattr(self, name)))
            elif not isinstance(getattr(self, name), DType):
                raise RoofcalcError(f"{name} must be a dtype name (fp16, int4...) or a DType, got "
                                    f"{type(getattr(self, name)).__name__}")
        for name in ("batch", "query_tokens", "kv_len", "group_size"):  # numpy's integers as Python's
            value = getattr(self, name)
            if hasattr(value, "__index__") and not isinstance(value, (bool, int)) and type(value).__module__ == "numpy":
                object.__setattr__(self, name, int(value))
        for label, value, limit in (("batch", self.batch, MAX_BATCH), ("query tokens", self.query_tokens, MAX_TOKENS),
                                    ("context", self.kv_len, MAX_TOKENS), ("group size", self.group_size, MAX_TOKENS)):
            if label == "group size" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise RoofcalcError(f"{label} must be a positive integer, got {value!r}")
            if value > limit:
                raise RoofcalcError(f"{label} {value:,} is beyond any real workload (limit {limit:,})")
        if self.query_tokens > self.kv_len:
            raise RoofcalcError(f"{self.query_tokens} query tokens cannot attend to only {self.kv_len} positions")
        if self.kv_dtype.quantized and self.kv_dtype.bits != 8 or self.kv_dtype.block:
            raise RoofcalcError(f"the KV cache takes fp32, bf16, fp16, fp8 or int8, not {self.kv_dtype.name}")
        if self.act_dtype.scaled:
            raise RoofcalcError(f"activations take fp32, bf16, fp16 or fp8, not {self.act_dtype.name}")
        if self.experts not in EXPERT_MODES:
            raise RoofcalcError(f"experts must be one of {', '.join(EXPERT_MODES)}, not {self.experts!r}")
        if self.mla not in MLA_MODES:
            raise RoofcalcError(f"mla must be one of {', '.join(MLA_MODES)}, not {self.mla!r}")
        if self.cache_update not in CACHE_UPDATES:
            raise RoofcalcError(f"cache_update must be one of {', '.join(CACHE_UPDATES)}, not {self.cache_update!r}")
        if self.attention not in ATTENTION_MODES:
            raise RoofcalcError(f"attention must be one of {', '.join(ATTENTION_MODES)}, not {self.attention!r}")
        if isinstance(self.ubatch, bool) or not isinstance(self.ubatch, int) or self.ubatch < 0:
            raise RoofcalcError(f"the micro-batch must be a positive number of tokens, got {self.ubatch!r}")
        if self.tp_layout not in TP_LAYOUTS:
            raise RoofcalcError(f"tp_layout must be one of {', '.join(TP_LAYOUTS)}, not {self.tp_layout!r}")
        if not isinstance(self.eager_ops, bool):
            raise RoofcalcError(f"eager_ops must be True or False, not {self.eager_ops!r}")
        if self.gguf and (self.gguf not in GGUF_FILE_TYPES or (self.weight_dtype.name, self.weight_group)
                          != GGUF_FILE_TYPES[self.gguf]):
            raise RoofcalcError(f"gguf must be one of {', '.join(GGUF_FILE_TYPES)} with its weights (int4 or int8 "
                                f"in groups of 32), not {self.gguf!r} with {self.weight_dtype.name} in groups of "
                                f"{self.weight_group}")

    # the command line's defaults: batch 1, context 500 (its worked example); the prompt of its one default
    # prefill, the forward pass it runs for a model with no decode step, is the default context's 500 tokens
    @classmethod
    def decode(cls, batch: int = 1, context: int = 500, **kw) -> "Workload":
        return cls("decode", batch, 1, context, **kw)

    @classmethod
    def prefill(cls, batch: int = 1, prompt: int = 500, **kw) -> "Workload":
        return cls("prefill", batch, prompt, prompt, **kw)

    @property
    def tokens(self) -> int:
        """B·T: rows of every token-wise kernel."""
        return self.batch * self.query_tokens

    @property
    def weight_group(self) -> int:
        """Values per scale of quantized weights: the format's own group (MXFP4: 32), else group_size."""
        return self.weight_dtype.group or self.group_size or DEFAULT_GROUP

    def table_bytes(self, s: ModelShape, n: int, output: bool) -> int:
        """Bytes of ``n`` values of the embedding table (``output`` False) or the output table (lm_head's; a tied
        head's, the embedding's too): the float dtype, or as a GGUF file stores it (gguf_table)."""
        fmt = gguf_table(s, self, output)
        if not fmt:
            return self.float_weight_dtype.nbytes(n)
        size, per = GGML_BLOCKS[fmt]
        return -(-n // per) * size

    @property
    def float_weight_dtype(self) -> DType:
        """Embeddings, norms, biases, routers and lm_head: the weight dtype unless it is a scaled format."""
        return self.act_dtype if self.weight_dtype.scaled else self.weight_dtype

    @property
    def compute_dtype(self) -> DType:
        """What the matmuls compute in: dequantized weights in the activation dtype (W4A16, W8A16, ternary); fp8
        weights with row, tensor or 128 x 128 block scales in fp8 (roofline.weights_on_device: in the
        activation dtype on a GPU without fp8 GEMMs); NVFP4 W4A4 weights in fp4."""
        if self.weight_dtype.computes:
            c = self.weight_dtype.computes
            return DTYPES.get(c) or COMPUTE_TYPES[c]
        return self.act_dtype if self.weight_dtype.dequantized else self.weight_dtype


@dataclass(frozen=True)
class Parallel:
    """How a step is split over GPUs (roofcalc.parallel builds the ranks' steps from it)."""

    tp: int = 1  # tensor-parallel ranks
    pp: int = 1  # pipeline stages
    ep: int = 1  # expert-parallel ranks (with tp: ep data-parallel groups of tp ranks each)
    ep_attention: str = "dp"  # with ep: attention data-parallel over B/ep sequences ("dp") or split by heads ("tp")
    # with ep_attention "tp": each rank's experts run every token of the step, the rows not routed to them zeroed
    # after (vLLM 0.2.6-0.2.7, engines.Engine.dense_experts); False runs each expert on its routed rows alone
    dense_experts: bool = False
    # with ep_attention "tp": each rank's fused MoE call writes and activates every routed pair of the step, the pairs
    # of the other ranks' experts masked to zero (vLLM's and SGLang's expert map over Triton's and Marlin's MoE
    # kernels: engines.Engine.masked_experts); its GEMMs read the rank's own rows alone
    masked_experts: bool = False

    def __post_init__(self) -> None:
        for name, n in (("tp", self.tp), ("pp", self.pp), ("ep", self.ep)):
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1024:
                raise RoofcalcError(f"--{name} must be a whole number of ranks from 1 to 1024, got {n!r}")
        if self.ep_attention not in ("dp", "tp"):
            raise RoofcalcError(f"--ep-attention is dp or tp, not {self.ep_attention!r}")
        if (self.dense_experts or self.masked_experts) and self.ep_attention != "tp":
            raise RoofcalcError("dense or masked experts run under --ep-attention tp alone")
        if self.dense_experts and self.masked_experts:
            raise RoofcalcError("a rank's experts run every token (dense) or their own rows with the others masked, "
                                "not both")
        if self.ep_attention == "tp" and (self.tp > 1 or self.pp > 1):
            raise RoofcalcError("--ep-attention tp splits attention over the --ep ranks themselves: give it without "
                                "--tp and --pp")

    @property
    def tp_attention(self) -> bool:
        """Expert parallelism with attention split by heads over the same ranks (--ep-attention tp)."""
        return self.ep > 1 and self.ep_attention == "tp"

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.ep


# --------------------------------------------------------------------------- cost records


@dataclass(frozen=True)
class Cost:
    """FLOPs and bytes of one kernel instance (or a sum of them). Exact integers."""

    flops: int = 0
    matmul_flops: int = 0  # the part done as matmuls (QKᵀ, PV, GEMMs): what a FLOP counter sees
    weight_bytes: int = 0  # weights read
    act_read_bytes: int = 0
    act_write_bytes: int = 0
    kv_read_bytes: int = 0
    kv_write_bytes: int = 0

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __mul__(self, n: int) -> "Cost":
        return Cost(*(getattr(self, f.name) * n for f in fields(self)))

    __rmul__ = __mul__

    @property
    def activation_bytes(self) -> int:
        return self.act_read_bytes + self.act_write_bytes

    @property
    def kv_bytes(self) -> int:
        return self.kv_read_bytes + self.kv_write_bytes

    @property
    def read_bytes(self) -> int:
        return self.weight_bytes + self.act_read_bytes + self.kv_read_bytes

    @property
    def write_bytes(self) -> int:
        return self.act_write_bytes + self.kv_write_bytes

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.write_bytes

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte."""
        return self.flops / self.bytes if self.bytes else math.inf


@dataclass(frozen=True)
class MatmulSizes:
    """A matmul's work as integers: an [m, k] activation times a [k, n] weight (experts: per expert run)."""

    m: int  # rows: the tokens it runs on
    n: int  # outputs
    k: int  # the reduction depth: inputs

    @property
    def text(self) -> str:
        return f"[{self.m},{self.k}]x[{self.k},{self.n}]"


@dataclass(frozen=True)
class AttentionSizes:
    """An attention call's work as integers: B sequences of q_len queries over kv_len keys each."""

    batch: int
    heads: int  # query heads
    kv_heads: int  # key/value heads (MLA: 1, the shared latent)
    q_len: int
    kv_len: int  # the keys each query reads (a sliding window's at most)
    head_dim: int  # the width a score reduces over (MLA: the latent's)
    context: int = 0  # the positions the queries see before a window caps them (0: kv_len)


@dataclass(frozen=True)
class Kernel:
    """One kernel of the step: its cost per instance and how many instances a step runs."""

    name: str  # the model's own module name where it has one (q_proj, down_proj, lm_head...)
    kind: str  # "matmul" | "attention" | "elementwise" | "memory"
    scope: str  # "layer" | "model"
    count: int  # instances per step
    dims: str  # the operand shapes, e.g. [B·T, D]x[D, N·H]
    cost: Cost
    params: int = 0  # parameters this kernel's module owns (0 for a tied lm_head)
    param_bytes: int = 0  # bytes those parameters take in memory
    role: str = ""  # what it does, whatever the family calls it (rms_norm, linear, experts...); launch models key on it
    launches: int = 0  # traced kernels: the eager ops one instance runs (0: the family's launch table)
    expert_weights: tuple | None = None  # traced: (E, k, full bytes of each expert weight it reads in part)
    message_bytes: int = 0  # collectives: the per-rank input buffer
    link_bytes: int = 0  # collectives: bytes one rank sends over its link (ring algorithm)
    group: int = 0  # collectives: the ranks taking part
    window: int = 0  # the attention window of the layers running it (0: they attend to every position)
    ranks: tuple[int, int] = ()  # collectives: the first and last global ranks it spans, where not 0 to group - 1
    # (ranks fill node after node, so it leaves a node exactly when these two sit on different nodes): a pipeline
    # send's from the stage's first to the next stage's last; an all-to-all between tensor-parallel groups'
    sizes: MatmulSizes | AttentionSizes | None = None  # its work as integers (dims is their display, not data)
    # a routed-experts kernel of a fused MoE layer: (fitted class key, the rank's experts, part, the layer's
    # experts), () for any other
    # (predict.MoEFit: the layer's gate_up, act_mul, down and combine share one fitted time)
    moe: tuple = ()

    @property
    def rows(self) -> int:
        """M of a matmul (1 for any other kernel): what its efficiency is read at."""
        return self.sizes.m if isinstance(self.sizes, MatmulSizes) else 1

    @property
    def depth(self) -> int:
        """K of a matmul, its reduction depth (0 for any other kernel, or a matmul whose K is unknown)."""
        return self.sizes.k if isinstance(self.sizes, MatmulSizes) else 0

    @property
    def width(self) -> int:
        """N of a matmul, its outputs (0 for any other kernel, or a matmul whose N is unknown)."""
        return self.sizes.n if isinstance(self.sizes, MatmulSizes) else 0

    @property
    def step_cost(self) -> Cost:
        return self.cost * self.count


class Analyzer:
    """A step's :class:`Analysis` at any workload, for the sweeps, where the hand model's is not the one:
    a trace's, or one rank's. A sweep fits its costs bilinear from a few probes and holds the grid's
    corners to ``single``."""

    traced = True  # its costs are a trace's: fitted over a sweep, not derived
    scale = 1  # --ep: a workload of batch b is the step of scale x b sequences over every rank
    parallel = None  # the Parallel it runs under (None: one device)
    memory_grid = None  # (b, s, **workload) -> exact memory at every point, where it knows it
    describe = None  # () -> a header line of its own (a pipeline's)

    def __call__(self, wl: "Workload") -> "Analysis":
        raise NotImplementedError

    def single(self, wl: "Workload") -> "Analysis":
        """The single step's own analysis, which a sweep's corners must equal."""
        return self(wl)

    expert_ranks = 1  # --ep: a rank's tokens are 1/N of those its experts' share is read at
    exact_batches = False  # its costs taken at each batch where they are not bilinear (one rank's analysis)
    batch_period = 1  # batches over which its costs repeat a pattern that is not linear in B (1: none)

    def at_batch(self, wl: "Workload") -> "Analysis":
        """The step at ``wl`` for a sweep's grid and verdicts, at the sweep's probe context (``exact_batches``):
        its own analysis, or one that equals it more cheaply (a trace extended from its probes)."""
        return self(wl)

    def expert_bytes(self, expert_weights: tuple, tokens: int, mode: str) -> int:
        """Bytes a traced experts kernel (``Kernel.expert_weights``) reads when the analyzer's rank routes
        ``tokens`` tokens (:func:`traced_expert_bytes`): with ``expert_ranks`` N, the rank's 1/N share of the
        experts every rank's N x ``tokens`` tokens reach."""
        n = self.expert_ranks
        return traced_expert_bytes(expert_weights, tokens * n, mode, n)


# --------------------------------------------------------------------------- primitives


def matmul(m: int, n: int, k: int, *, weight_bytes: int, act: DType, bias_bytes: int = 0) -> Cost:
    """An [m, k] activation times a [k, n] weight: 2·m·n·k FLOPs (a multiply and an add per
    multiply-accumulate). Reads the weight (and bias) once and the input once, writes the
    output once. A bias adds m·n FLOPs that FLOP counters leave out (matmul_flops)."""
    mm = 2 * m * n * k
    return Cost(
        flops=mm + (m * n if bias_bytes else 0),
        matmul_flops=mm,
        weight_bytes=weight_bytes + bias_bytes,
        act_read_bytes=act.nbytes(m * k),
        act_write_bytes=act.nbytes(m * n),
    )


def linear_weight_bytes(n_in: int, n_out: int, wl: Workload, experts: bool = False) -> int:
    """Bytes of an [n_out, n_in] weight (an expert's, if ``experts``); quantized formats add one fp16
    scale per group of ``group_size`` inputs of each output row (MXFP4: one byte per 32; NVFP4 one per 16 and an
    fp32 one per matrix), block-scaled fp8 one fp32 scale per block. A format of expert weights only leaves the others in the float dtype."""
    w = wl.weight_dtype
    if w.experts_only and not experts:
        return wl.float_weight_dtype.nbytes(n_in * n_out)
    if w.block:
        return w.nbytes(n_in * n_out) + -(-n_out // w.block) * -(-n_in // w.block) * BLOCK_SCALE_BYTES
    scales = n_out * -(-n_in // wl.weight_group) * w.scale_bytes if w.quantized else 0
    return w.nbytes(n_in * n_out) + scales + n_out * w.row_scale + w.tensor_scale


def elementwise(n_elements: int, flops_per_element: int, *, reads: int, writes: int, act: DType,
                weight_bytes: int = 0) -> Cost:
    """``reads`` input tensors and ``writes`` output tensors of ``n_elements`` values each."""
    return Cost(
        flops=flops_per_element * n_elements,
        weight_bytes=weight_bytes,
        act_read_bytes=act.nbytes(reads * n_elements),
        act_write_bytes=act.nbytes(writes * n_elements),
    )


def _sum_min(lo: int, hi: int, cap: int) -> int:
    """Σ min(v, cap) for v = lo..hi."""
    if hi < lo:
        return 0
    below_hi = min(hi, cap)
    part = (lo + below_hi) * (below_hi - lo + 1) // 2 if below_hi >= lo else 0
    return part + cap * max(0, hi - max(lo - 1, cap))


def score_pairs(wl: Workload, window: int | None) -> int:
    """(query, key) pairs one head of one sequence scores.

    Query i (0-based) of the T new tokens sits at position p = S - T + i and, under a causal
    mask, sees keys max(0, p - W + 1)..p: min(p + 1, W) of them. Without the causal
    discount (``causal=False``) every query scores all S keys, masked or not, as a dense
    attention kernel (and PyTorch's FLOP counter) does.
    """
    t, s = wl.query_tokens, wl.kv_len
    if not wl.causal:
        return t * s
    return _sum_min(s - t + 1, s, window or s)


def computed_pairs(wl: Workload, window: int | None) -> int:
    """(query, key) pairs one head of one sequence computes: a fused attention's score_pairs; an unfused one
    multiplies and writes its whole score matrix, masked or not, window or not: T·S at once, or with
    micro-batches of u tokens (``wl.ubatch``) each one's u queries against every position up to its end,
    Σ u_c·(S − T + end_c)."""
    if wl.attention == "fused":
        return score_pairs(wl, window)
    t, s, u = wl.query_tokens, wl.kv_len, wl.ubatch
    if not u or u >= t:
        return t * s
    full = t // u  # micro-batches of u, then a last one of t - full·u
    pairs = full * u * (s - t) + u * u * full * (full + 1) // 2
    return pairs + (t - full * u) * s


def unfused_score_buffer_bytes(s: ModelShape, wl: Workload) -> int:
    """An unfused prefill's live score matrix: one layer's, one micro-batch's (B·N·u·S scores, fp32 as
    llama.cpp writes K·Q); 0 for a fused attention or a decode step (its B·N·S scores are small)."""
    if wl.attention == "fused" or wl.phase != "prefill" or not s.n_heads:
        return 0
    return 4 * wl.batch * s.n_heads * min(wl.ubatch or wl.query_tokens, wl.query_tokens) * wl.kv_len


def keys_read(wl: Workload, window: int | None) -> int:
    """Cached positions attention reads per sequence: all S, or the last T + W - 1 under a window."""
    return wl.kv_len if window is None else min(wl.kv_len, wl.query_tokens + window - 1)


# --------------------------------------------------------------------------- the kernels


def experts_dims(sizes: MatmulSizes, touched: float, experts: int, local: bool = False) -> str:
    """How an experts kernel prints: its matmul on the share of the experts its tokens reach."""
    return f"{sizes.text} on {touched:.3g} of {experts}{' local' if local else ''} experts"


def linear(name: str, n_in: int, n_out: int, s: ModelShape, wl: Workload, *, bias: bool = False,
           rows: int | None = None, weight_bytes: int | None = None, params: int | None = None,
           scope: str = "layer", role: str = "linear", float_weight: bool = False) -> Kernel:
    """A weight GEMM (GEMV at B·T = 1): [rows, n_in] × [n_in, n_out]. ``float_weight``: a weight
    kept in the float dtype whatever the linears' format (routers)."""
    rows = wl.tokens if rows is None else rows
    if weight_bytes is not None:
        wb = weight_bytes
    else:
        wb = wl.float_weight_dtype.nbytes(n_in * n_out) if float_weight else \
            linear_weight_bytes(n_in, n_out, wl, experts=role == "experts")
    bias_bytes = wl.float_weight_dtype.nbytes(n_out) if bias else 0
    cost = matmul(rows, n_out, n_in, weight_bytes=wb, act=wl.act_dtype, bias_bytes=bias_bytes)
    own = n_in * n_out + (n_out if bias else 0) if params is None else params
    sizes = MatmulSizes(rows, n_out, n_in)
    return Kernel(name, "matmul", scope, 1, sizes.text, cost, params=own, param_bytes=(wb if own else 0) + bias_bytes,
                  role=role, sizes=sizes)


def norm(name: str, width: int, rows: int, s: ModelShape | None, wl: Workload, scope: str = "layer",
         layer_norm: bool | None = None) -> Kernel:
    """RMSNorm (reads x and the weight, writes y) or LayerNorm (also a bias) over ``width`` values
    of each of ``rows`` rows."""
    ln = s.norm == "layer" if layer_norm is None else layer_norm
    n_params = 2 * width if ln else width
    w = wl.float_weight_dtype.nbytes(n_params)
    per = LAYERNORM_FLOPS_PER_ELEMENT if ln else RMSNORM_FLOPS_PER_ELEMENT
    cost = elementwise(rows * width, per, reads=1, writes=1, act=wl.act_dtype, weight_bytes=w)
    if wl.eager_ops and not ln:  # LayerNorm is one op (native_layer_norm) either way
        read, written = eager_rms_norm_bytes(wl.act_dtype, gemma=_gemma_norm(s))
        cost = replace(cost, act_read_bytes=read * rows * width, act_write_bytes=written * rows * width)
    return Kernel(name, "elementwise", scope, 1, f"[{rows},{width}]", cost, params=n_params, param_bytes=w,
                  role="layer_norm" if ln else "rms_norm")


def _gemma_norm(s: ModelShape | None) -> bool:
    """Gemma's RMSNorm multiplies by (1 + weight) in fp32 before its cast back: its family counts 10 eager ops in
    16 bits (roofline.py), two more than Llama's 8, both on the weight."""
    fam = FAMILIES.get(s.model_type) if s is not None else None
    return fam is not None and fam.eager_counts.get("rms_norm") == (10, 7)


def eager_rms_norm_bytes(act: DType, gemma: bool = False) -> tuple[int, int]:
    """Bytes read and written per element by transformers' eager RMSNorm: x.to(fp32), pow(2), mean, (+ eps, rsqrt:
    one value a row), × rsqrt, .to(dtype), × weight. In 16 bits 20 read and 16 written (36, where a fused kernel
    moves 4); Gemma's multiplies in fp32 and casts last, 22 and 18; in fp32 the casts launch nothing: 16 and 12."""
    a = act.nbytes(1)
    if a >= 4:
        return 4 + 4 + 4 + 4, 4 + 4 + 4  # pow, mean, ×rsqrt, ×weight read; pow, ×rsqrt, ×weight write
    if gemma:  # the cast in, pow, mean, ×rsqrt, ×(1 + weight) in fp32, the cast out
        return a + 4 + 4 + 4 + 4 + 4, 4 + 4 + 4 + 4 + a
    return a + 4 + 4 + 4 + 4 + a, 4 + 4 + 4 + a + a  # the cast in, pow, mean, ×rsqrt, the cast out, ×weight


def rms_norm(name: str, width: int, rows: int, wl: Workload, scope: str = "layer") -> Kernel:
    """An RMSNorm whatever the family's own norm (MLA's latent norms are RMSNorms in every case)."""
    return norm(name, width, rows, None, wl, scope, layer_norm=False)


def rotary(s: ModelShape, wl: Workload, q_heads: int | None = None, k_heads: int | None = None) -> Kernel:
    """RoPE on q and k: the rotated dims of the query and key heads; reads q, k and the cos/sin rows,
    writes q, k."""
    nq = s.n_heads if q_heads is None else q_heads
    nk = s.n_kv_heads if k_heads is None else k_heads
    n = wl.tokens * (nq + nk) * s.rotary_dim
    cos_sin = wl.act_dtype.nbytes(2 * wl.tokens * s.rotary_dim)
    cost = elementwise(n, ROTARY_FLOPS_PER_ELEMENT, reads=1, writes=1, act=wl.act_dtype)
    cost = replace(cost, act_read_bytes=cost.act_read_bytes + cos_sin)
    if wl.eager_ops and s.mla is None:  # DeepSeek's latent rope runs other ops: counted as fused
        # transformers' apply_rotary_pos_emb, for q and for k: x·cos, neg (half), cat (rotate_half), ·sin, add: 5.5
        # tensors read and 4.5 written (cos and sin as fused: once); a partial rotary splits x (views) and cats the
        # rotated dims back to the passed ones: one more read and write of the whole head
        whole = wl.tokens * (nq + nk) * s.head_dim if s.rotary_dim < s.head_dim else 0
        a = wl.act_dtype
        cost = replace(cost, act_read_bytes=a.nbytes(11 * n) // 2 + a.nbytes(whole) + cos_sin,
                       act_write_bytes=a.nbytes(9 * n) // 2 + a.nbytes(whole))
    return Kernel("rotary", "elementwise", "layer", 1, f"[{wl.tokens},{nq}+{nk},{s.rotary_dim}]", cost, role="rotary")


def kv_values_per_token(s: ModelShape) -> int:
    """Values one token adds to one layer's cache: K and V of every KV head, or MLA's latent."""
    return s.mla.cached_per_token if s.mla else 2 * s.kv_dim


def kv_cache_write(s: ModelShape, wl: Workload, window: int | None = None) -> Kernel:
    """Appends the new tokens' K and V (B·T·K·H values each; MLA: the latent) to the cache. Concatenated
    (transformers' DynamicCache), the layer's cache is read and written whole: its P = keys_read positions
    (the last T + W - 1 under a window) are written, the P - T old ones read."""
    per = kv_values_per_token(s)
    n = wl.tokens * per
    old = wl.batch * (keys_read(wl, window) - wl.query_tokens) * per if wl.cache_update == "concat" else 0
    cost = Cost(act_read_bytes=wl.act_dtype.nbytes(n), kv_read_bytes=wl.kv_dtype.nbytes(old),
                kv_write_bytes=wl.kv_dtype.nbytes(n + old))
    what = f"[{wl.tokens},{s.mla.cached_per_token}]" if s.mla else f"2x[{wl.tokens},{s.n_kv_heads},{s.head_dim}]"
    return Kernel("kv_cache_write", "memory", "layer", 1, what, cost, role="kv_cache_write")


def attention(s: ModelShape, wl: Workload, window: int | None) -> Kernel:
    """Scaled dot-product attention over all N query heads (GQA shares each KV head among N/K):
    QKᵀ 2·B·N·pairs·H + PV 2·B·N·pairs·H FLOPs, softmax (and Gemma 2's soft-capping) on every
    score; reads Q and the K and V of the positions attended, writes the output."""
    b, t = wl.batch, wl.query_tokens
    pairs = computed_pairs(wl, window)  # (an unfused attention's whole score matrix)
    mm = 2 * b * s.n_heads * pairs * s.head_dim * 2  # QKᵀ and PV
    per_score = SOFTMAX_FLOPS_PER_SCORE + (SOFTCAP_FLOPS_PER_ELEMENT if s.attn_softcap else 0)
    keys = keys_read(wl, window)
    cost = Cost(
        flops=mm + per_score * b * s.n_heads * pairs,
        matmul_flops=mm,
        act_read_bytes=wl.act_dtype.nbytes(b * t * s.q_dim),
        act_write_bytes=wl.act_dtype.nbytes(b * t * s.q_dim),
        kv_read_bytes=wl.kv_dtype.nbytes(2 * b * keys * s.kv_dim),
    )
    w = f",window {window}" if window else ""
    return Kernel("attention", "attention", "layer", 1,
                  f"B{b}:[{t}q,{keys}kv]x{s.n_heads}h/{s.n_kv_heads}kv x{s.head_dim}{w}", cost, role="attention",
                  sizes=AttentionSizes(b, s.n_heads, s.n_kv_heads, t, keys, s.head_dim, wl.kv_len))


def residual(name: str, s: ModelShape, wl: Workload) -> Kernel:
    cost = elementwise(wl.tokens * s.d_model, RESIDUAL_FLOPS_PER_ELEMENT, reads=2, writes=1, act=wl.act_dtype)
    return Kernel(name, "elementwise", "layer", 1, f"[{wl.tokens},{s.d_model}]", cost, role="residual")


def act_mul(s: ModelShape, wl: Workload, width: int | None = None, rows: int | None = None,
            name: str = "act_mul") -> Kernel:
    """act(gate) × up: reads gate and up, writes one tensor of rows·F values."""
    width, rows = width or s.d_ff, wl.tokens if rows is None else rows
    per = ACTIVATION_FLOPS_PER_ELEMENT[s.activation] + 1
    cost = elementwise(rows * width, per, reads=2, writes=1, act=wl.act_dtype)
    if wl.eager_ops:  # act(gate) as its own op(s), then × up: each op writes a tensor
        ops, reads = EAGER_ACTIVATION_OPS.get(s.hf_activation, 1), EAGER_ACTIVATION_READS.get(s.hf_activation, 1)
        cost = replace(cost, act_read_bytes=wl.act_dtype.nbytes((reads + 2) * rows * width),
                       act_write_bytes=wl.act_dtype.nbytes((ops + 1) * rows * width))
    return Kernel(name, "elementwise", "layer", 1, f"[{rows},{width}]", cost, role="act_mul")


def act(s: ModelShape, wl: Workload) -> Kernel:
    """The activation of a plain (ungated) MLP: reads and writes B·T·F values."""
    eager = wl.eager_ops and s.hf_activation in EAGER_ACTIVATION_OPS  # a formula of eager ops, each writing it
    cost = elementwise(wl.tokens * s.d_ff, ACTIVATION_FLOPS_PER_ELEMENT[s.activation],
                       reads=EAGER_ACTIVATION_READS[s.hf_activation] if eager else 1,
                       writes=EAGER_ACTIVATION_OPS[s.hf_activation] if eager else 1, act=wl.act_dtype)
    return Kernel("act", "elementwise", "layer", 1, f"[{wl.tokens},{s.d_ff}]", cost, role="act")


def embed_tokens(s: ModelShape, wl: Workload) -> Kernel:
    """A gather: reads the B·T rows it needs (not the table), writes them as activations."""
    width = s.embed_dim or s.d_model
    n = wl.tokens * width
    flops = EMBED_SCALE_FLOPS_PER_ELEMENT * n if s.embed_scale else 0
    cost = Cost(flops=flops, weight_bytes=wl.table_bytes(s, n, output=False), act_write_bytes=wl.act_dtype.nbytes(n))
    table = s.vocab_size * width
    return Kernel(s.name_of("embed"), "memory", "model", 1, f"{wl.tokens} row(s) of [{s.vocab_size},{width}]",
                  cost, params=table, param_bytes=wl.table_bytes(s, table, output=False), role="embed")


def position_embed(s: ModelShape, wl: Workload) -> Kernel:
    """Learned positions: gathers B·T rows of the position table and adds them to the token embeddings."""
    w = wl.float_weight_dtype
    n = wl.tokens * s.d_model
    cost = Cost(flops=POSITION_ADD_FLOPS_PER_ELEMENT * n, weight_bytes=w.nbytes(n),
                act_read_bytes=wl.act_dtype.nbytes(n), act_write_bytes=wl.act_dtype.nbytes(n))
    table = s.position_rows * s.d_model
    return Kernel(s.name_of("pos_embed"), "memory", "model", 1, f"{wl.tokens} row(s) of [{s.position_rows},{s.d_model}]",
                  cost, params=table, param_bytes=w.nbytes(table), role="pos_embed")


def _logit_rows(s: ModelShape, wl: Workload) -> int:
    return wl.batch if wl.phase == "decode" or not wl.logits_all else wl.tokens


def lm_head(s: ModelShape, wl: Workload) -> Kernel:
    """Logits for every sequence in decode; in prefill for the last token of each sequence
    (what ``generate`` does) unless ``logits_all``. A tied head reads the embedding table."""
    width = s.embed_dim or s.d_model
    table = wl.table_bytes(s, s.vocab_size * width, output=True)
    own = 0 if s.tie_word_embeddings else s.vocab_size * width
    k = linear(s.name_of("lm_head"), width, s.vocab_size, s, wl, rows=_logit_rows(s, wl), weight_bytes=table,
               params=own + (s.vocab_size if s.lm_head_bias else 0), bias=s.lm_head_bias, scope="model")
    if wl.gguf and s.tie_word_embeddings and not gguf_tied(s, wl):  # its own copy of the table in the file
        k = replace(k, param_bytes=k.param_bytes + table)
    return k


def logit_softcap(s: ModelShape, wl: Workload) -> Kernel:
    n = _logit_rows(s, wl) * s.vocab_size
    cost = elementwise(n, SOFTCAP_FLOPS_PER_ELEMENT, reads=1, writes=1, act=wl.act_dtype)
    return Kernel("logit_softcap", "elementwise", "model", 1, f"[{_logit_rows(s, wl)},{s.vocab_size}]", cost,
                  role="softcap")


# ---- mixture of experts


def traced_expert_bytes(expert_weights: tuple, tokens: int, mode: str, ranks: int = 1) -> int:
    """Bytes of expert weights a traced kernel reads when ``tokens`` tokens are routed: each weight's
    full bytes times the share of experts they reach, rounded as the trace rounds them; on one of
    ``ranks`` expert-parallel ranks that each hold E/ranks experts, its 1/ranks of that share."""
    n_exp, top_k, fulls = expert_weights
    share = touched_experts(n_exp, top_k, tokens, mode) / ranks / n_exp
    return sum(round(full * share) for full in fulls)


def touched_experts(n_experts: int, top_k: int, tokens: int, mode: str) -> float:
    """Distinct experts whose weights a step reads. "expected": uniform, independent routing of
    ``tokens`` tokens to k of E experts each, E·(1 − (1 − k/E)^tokens) (an assumption: real routers
    are skewed); "all": E; "topk": k (every token picks the same experts)."""
    if mode == "all":
        return float(n_experts)
    if mode == "topk" or tokens == 1:
        return float(top_k)
    return n_experts * -math.expm1(tokens * math.log1p(-top_k / n_experts)) if top_k < n_experts else float(n_experts)


def fused_moe_class(wl: Workload) -> str:
    """The fitted fused-MoE class (predict.MoEFit) whose expert weight format this is: 16-bit weights "bf16",
    fp8 with one scale per 128 x 128 block "fp8_block", fp8 with one scale per tensor "fp8", MXFP4 experts with
    16-bit activations "mxfp4", NVFP4 experts "nvfp4" (W4A4: fitted only where the GPU's tables run it so, on FP4 tensor
    cores), weight-only int4 experts with 16-bit activations "int4" (fitting.MOE_FORMATS); "" for any other (the
    experts kernels keep the GEMM forms)."""
    w = wl.weight_dtype
    if w.name == "mxfp4" and wl.act_dtype.bits == 16:
        return "mxfp4"
    if w.name == "nvfp4" and w.computes == "fp4":  # (W4A16 where the device has no FP4 peak: FP4 Marlin, not this)
        return "nvfp4"
    if w.name == "int4" and wl.act_dtype.bits == 16:  # Marlin's MoE kernel, where the engine runs it (predict.marlin_moe)
        return "int4"
    if w.experts_only or w.quantized:
        return ""
    if w.bits == 16:
        return "bf16"
    if w.bits == 8 and w.block == 128:
        return "fp8_block"
    if w.bits == 8 and w.tensor_scale and not w.row_scale:
        return "fp8"
    return ""


def moe_kernels(s: ModelShape, wl: Workload) -> list[Kernel]:
    """Router, the routed experts (FLOPs for k experts per token; weight bytes for the experts
    touched) and the shared experts."""
    moe, d, t = s.moe, s.d_model, wl.tokens
    rows = t * moe.top_k
    touched = touched_experts(moe.n_experts, moe.top_k, t, wl.experts)
    # DeepSeek-V3's router also holds a per-expert score correction (e_score_correction_bias), and
    # transformers keeps both in fp32
    v3 = moe.router_bias  # the score correction, and an fp32 router
    router_params = d * moe.n_experts + (moe.n_experts if v3 else 0)
    router_bytes = (DTYPES["fp32"] if v3 else wl.float_weight_dtype).nbytes(router_params)
    ks = [linear("mlp.gate", d, moe.n_experts, s, wl, weight_bytes=router_bytes, params=router_params,
                 role="router")]
    per_gate_up = linear_weight_bytes(d, 2 * moe.d_expert, wl, experts=True)
    per_down = linear_weight_bytes(moe.d_expert, d, wl, experts=True)
    key = fused_moe_class(wl)
    for name, n_in, n_out, per in (("experts.gate_up_proj", d, 2 * moe.d_expert, per_gate_up),
                                   ("experts.down_proj", moe.d_expert, d, per_down)):
        k = linear(name, n_in, n_out, s, wl, rows=rows, weight_bytes=round(touched * per),
                   params=moe.n_experts * n_in * n_out, role="experts")
        k = replace(k, param_bytes=moe.n_experts * per, dims=experts_dims(k.sizes, touched, moe.n_experts),
                    moe=(key, moe.n_experts, name.split(".")[1], moe.n_experts, moe.top_k) if key else ())
        ks.append(k)
        if name == "experts.gate_up_proj":
            ks.append(replace(act_mul(s, wl, moe.d_expert, rows, name="experts.act_mul"),
                              moe=(key, moe.n_experts, "act_mul", moe.n_experts, moe.top_k) if key else ()))
    combine = elementwise(rows * d, COMBINE_FLOPS_PER_ELEMENT, reads=1, writes=0, act=wl.act_dtype)
    combine = replace(combine, act_read_bytes=combine.act_read_bytes + wl.act_dtype.nbytes(rows),
                      act_write_bytes=wl.act_dtype.nbytes(t * d))
    ks.append(Kernel("experts.combine", "elementwise", "layer", 1, f"[{t}x{moe.top_k},{d}]", combine, role="combine",
                     moe=(key, moe.n_experts, "combine", moe.n_experts, moe.top_k) if key else ()))  # the fused call's weighted sum
    if moe.d_shared:
        ks += [linear("shared_experts.gate_proj", d, moe.d_shared, s, wl),
               linear("shared_experts.up_proj", d, moe.d_shared, s, wl),
               act_mul(s, wl, moe.d_shared, name="shared_experts.act_mul"),
               linear("shared_experts.down_proj", moe.d_shared, d, s, wl),
               residual("shared_experts.add", s, wl)]
    return ks


# ---- multi-head latent attention


def mla_kernels(s: ModelShape, wl: Workload, window: int | None) -> list[Kernel]:
    """DeepSeek's attention. "naive" is what transformers computes: the cached latent is expanded
    by kv_b_proj into every head's K and V at every step. "absorbed" folds kv_b_proj's two halves
    into the query (q_absorb) and the output (v_up) and attends over the latent itself (one
    shared 'KV head' of kv_lora_rank + rope values), as serving engines decode. "serving" is what they run:
    absorbed for a decode step, naive (expanded) for a prefill, where the expansion costs less than the
    latent's larger dot products."""
    m, d, t, b = s.mla, s.d_model, wl.tokens, wl.batch
    n, act, kvd = s.n_heads, wl.act_dtype, wl.kv_dtype
    ks = []
    if m.q_lora_rank:
        ks += [linear("q_a_proj", d, m.q_lora_rank, s, wl, bias=s.qkv_bias),
               rms_norm("q_a_layernorm", m.q_lora_rank, t, wl),
               linear("q_b_proj", m.q_lora_rank, n * m.qk_head_dim, s, wl)]
    else:
        ks.append(linear("q_proj", d, n * m.qk_head_dim, s, wl))
    ks += [linear("kv_a_proj_with_mqa", d, m.cached_per_token, s, wl, bias=s.qkv_bias),
           rms_norm("kv_a_layernorm", m.kv_lora_rank, t, wl),
           rotary(s, wl, q_heads=n, k_heads=1),
           kv_cache_write(s, wl, window)]
    pairs = score_pairs(wl, window)
    keys = keys_read(wl, window)
    softmax = SOFTMAX_FLOPS_PER_SCORE * b * n * pairs
    wdims = f",window {window}" if window else ""
    if wl.mla == "naive" or wl.mla == "serving" and wl.phase == "prefill":
        expanded = n * (m.qk_nope_head_dim + m.v_head_dim)
        kv_b = linear("kv_b_proj", m.kv_lora_rank, expanded, s, wl, rows=b * keys)
        # it reads the latent from the cache, not an activation
        kv_b = replace(kv_b, cost=replace(kv_b.cost, act_read_bytes=0, kv_read_bytes=kvd.nbytes(b * keys * m.kv_lora_rank)))
        mm = 2 * b * n * pairs * m.qk_head_dim + 2 * b * n * pairs * m.v_head_dim
        cost = Cost(flops=mm + softmax, matmul_flops=mm,
                    act_read_bytes=act.nbytes(t * n * m.qk_head_dim + b * keys * expanded),
                    kv_read_bytes=kvd.nbytes(b * keys * m.qk_rope_head_dim),
                    act_write_bytes=act.nbytes(t * n * m.v_head_dim))
        ks += [kv_b, Kernel("attention", "attention", "layer", 1,
                            f"B{b}:[{wl.query_tokens}q,{keys}kv]x{n}h x{m.qk_head_dim}/{m.v_head_dim}{wdims}", cost,
                            role="attention", sizes=AttentionSizes(b, n, n, wl.query_tokens, keys, m.qk_head_dim,
                                                                 wl.kv_len))]
    else:
        latent = m.cached_per_token
        q_abs = linear("q_absorb", m.qk_nope_head_dim, m.kv_lora_rank, s, wl, rows=t * n,
                       params=n * m.qk_nope_head_dim * m.kv_lora_rank,
                       weight_bytes=n * linear_weight_bytes(m.kv_lora_rank, m.qk_nope_head_dim, wl))
        mm = 2 * b * n * pairs * latent + 2 * b * n * pairs * m.kv_lora_rank
        cost = Cost(flops=mm + softmax, matmul_flops=mm,
                    act_read_bytes=act.nbytes(t * n * latent), kv_read_bytes=kvd.nbytes(b * keys * latent),
                    act_write_bytes=act.nbytes(t * n * m.kv_lora_rank))
        v_up = linear("v_up", m.kv_lora_rank, m.v_head_dim, s, wl, rows=t * n,
                      params=n * m.v_head_dim * m.kv_lora_rank,
                      weight_bytes=n * linear_weight_bytes(m.kv_lora_rank, m.v_head_dim, wl))
        ks += [q_abs, Kernel("attention", "attention", "layer", 1,
                             f"B{b}:[{wl.query_tokens}q,{keys}kv]x{n}h over the latent x{latent}{wdims}", cost,
                             role="attention", sizes=AttentionSizes(b, n, 1, wl.query_tokens, keys, latent, wl.kv_len)),
           v_up]
    ks.append(linear(s.name_of("o"), n * m.v_head_dim, d, s, wl, bias=s.o_bias))
    return ks


# ---- one decoder layer


def attention_scores(s: ModelShape, wl: Workload, window: int | None) -> Kernel:
    """An unfused attention's score matrix between its kernels (``wl.attention == "unfused"``): every score the
    attention kernel computes (computed_pairs, per head and sequence: its whole matrix, masked or not) written
    and read UNFUSED_SCORE_BYTES_WRITTEN and _READ times over (the softmax's FLOPs stay the attention kernel's)."""
    pairs = computed_pairs(wl, window)
    scores = wl.batch * s.n_heads * pairs
    cost = Cost(act_read_bytes=UNFUSED_SCORE_BYTES_READ * scores, act_write_bytes=UNFUSED_SCORE_BYTES_WRITTEN * scores)
    return Kernel("attention_scores", "elementwise", "layer", 1, f"B{wl.batch}:{s.n_heads}h x {pairs:,} scores", cost,
                  role="attention_scores")


def attention_block(s: ModelShape, wl: Workload, window: int | None) -> list[Kernel]:
    """The projections, rotary, cache write, attention (and an unfused one's score matrix) and output projection."""
    if s.mla:
        if wl.attention != "fused":
            raise RoofcalcError("unfused attention is counted for multi-head attention; a latent attention (MLA) "
                                "runs as --mla says")
        return mla_kernels(s, wl, window)
    d, rows = s.d_model, wl.tokens
    if s.fused_qkv:
        ks = [linear(s.name_of("qkv"), d, s.q_dim + 2 * s.kv_dim, s, wl, bias=s.qkv_bias)]
    else:
        ks = [linear(s.name_of("q"), d, s.q_dim, s, wl, bias=s.qkv_bias),
              linear(s.name_of("k"), d, s.kv_dim, s, wl, bias=s.qkv_bias),
              linear(s.name_of("v"), d, s.kv_dim, s, wl, bias=s.qkv_bias)]
    if s.qk_norm:  # Qwen3: RMSNorm over each head's H values, before rotary (Phi: LayerNorm)
        ks += [norm("q_norm", s.head_dim, rows * s.n_heads, s, wl),
               norm("k_norm", s.head_dim, rows * s.n_kv_heads, s, wl)]
    if s.rotary_dim:
        ks.append(rotary(s, wl))
    ks += [kv_cache_write(s, wl, window), attention(s, wl, window)]
    if wl.attention == "unfused":
        ks.append(attention_scores(s, wl, window))
    ks.append(linear(s.name_of("o"), s.q_dim, d, s, wl, bias=s.o_bias))
    return ks


def mlp_block(s: ModelShape, wl: Workload, mlp_type: str) -> list[Kernel]:
    if mlp_type == "moe":
        return moe_kernels(s, wl)
    d, f, bias = s.d_model, s.d_ff, s.mlp_bias
    if not s.gated_mlp:
        return [linear(s.name_of("fc_in"), d, f, s, wl, bias=bias), act(s, wl),
                linear(s.name_of("fc_out"), f, d, s, wl, bias=bias)]
    if s.fused_gate_up:
        up = [linear(s.name_of("gate_up"), d, 2 * f, s, wl, bias=bias)]
    else:
        up = [linear(s.name_of("gate"), d, f, s, wl, bias=bias), linear(s.name_of("up"), d, f, s, wl, bias=bias)]
    return up + [act_mul(s, wl), linear(s.name_of("down"), f, d, s, wl, bias=bias)]


def decoder_layer(s: ModelShape, wl: Workload, layer_type: str, mlp_type: str = "dense") -> list[Kernel]:
    """One decoder layer's kernels in execution order, as the model's ``forward`` runs them."""
    d, rows = s.d_model, wl.tokens
    window = s.sliding_window if layer_type == "sliding" else None
    attn, mlp = attention_block(s, wl, window), mlp_block(s, wl, mlp_type)
    first = norm(s.name_of("input_norm"), d, rows, s, wl)
    if s.block == "parallel_shared":  # Phi: x + attn(ln(x)) + mlp(ln(x))
        return [first, *attn, *mlp, residual("attn_residual", s, wl), residual("mlp_residual", s, wl)]
    second = norm(s.name_of("post_attn_norm"), d, rows, s, wl)
    if s.block == "parallel":  # NeoX: x + attn(ln1(x)) + mlp(ln2(x))
        return [first, *attn, second, *mlp, residual("attn_residual", s, wl), residual("mlp_residual", s, wl)]
    if s.block == "sandwich":  # Gemma 2: norms before and after attention and MLP
        return [first, *attn, second, residual("attn_residual", s, wl), norm(s.name_of("pre_mlp_norm"), d, rows, s, wl),
                *mlp, norm(s.name_of("post_mlp_norm"), d, rows, s, wl), residual("mlp_residual", s, wl)]
    return [first, *attn, residual("attn_residual", s, wl), second, *mlp, residual("mlp_residual", s, wl)]


def model_head(s: ModelShape, wl: Workload) -> tuple[list[Kernel], list[Kernel]]:
    """(the kernels before the first layer, the kernels after the last)."""
    before = [embed_tokens(s, wl)]
    if s.embed_dim:
        before.append(linear("project_in", s.embed_dim, s.d_model, s, wl, scope="model"))
    if s.position_rows:
        before.append(position_embed(s, wl))
    after = [norm(s.name_of("final_norm"), s.d_model, wl.tokens, s, wl, scope="model")] if s.final_norm else []
    if s.embed_dim:
        after.append(linear("project_out", s.d_model, s.embed_dim, s, wl, scope="model"))
    after.append(lm_head(s, wl))
    if s.final_softcap:
        after.append(logit_softcap(s, wl))
    return before, after


# --------------------------------------------------------------------------- the step


@dataclass(frozen=True)
class Analysis:
    """Every kernel of one step of ``shape`` under ``workload``, in execution order. The hand model's;
    a trace (``roofcalc.trace.TracedAnalysis``), one rank's and one pipeline stage's
    (``roofcalc.parallel``) are subclasses that set what differs."""

    shape: ModelShape
    workload: Workload
    kernels: tuple[Kernel, ...]

    # what the other kinds of analysis set (class attributes here, fields of theirs)
    source = "hand"  # "hand" or "traced"
    logits = "last"  # the positions lm_head runs on ("all": a traced model without logits_to_keep)
    traced_cache_bytes = 0  # a trace's real cache after the step (recurrent states included)
    parallel = None  # roofcalc.parallel.Parallel for one rank's step
    full = None  # the whole model's Analysis, for one rank's step
    note_pipeline = None  # (Pipeline, the largest stage's memory) for a pipeline stage

    @property
    def cached_sequences(self) -> int:
        """The sequences whose KV cache this step's memory holds."""
        return self.workload.batch

    @property
    def totals(self) -> Cost:
        total = Cost()
        for k in self.kernels:
            total = total + k.step_cost
        return total

    @property
    def params(self) -> int:
        """Every parameter of the checkpoint: a multimodal model's encoders included, as model cards count them."""
        return sum(k.params * k.count for k in self.kernels) + self.shape.encoder_params

    @property
    def language_params(self) -> int | None:
        """A multimodal model's language model (its kernels' parameters), or None for a language model alone."""
        return sum(k.params * k.count for k in self.kernels) if self.shape.encoder_params else None

    @property
    def active_params(self) -> int:
        """Parameters one token uses: a MoE layer's routed experts count k of E."""
        moe = self.shape.moe
        total = 0
        for k in self.kernels:
            if k.role == "experts":
                total += k.params * moe.top_k // moe.n_experts * k.count
            else:
                total += k.params * k.count
        return total

    @property
    def weight_storage_bytes(self) -> int:
        """Bytes all the model's weights take in memory (the whole embedding table included; a multimodal
        model's encoders in the float dtype, as a quantized checkpoint keeps them)."""
        return sum(k.param_bytes * k.count for k in self.kernels) + \
            self.workload.act_dtype.nbytes(self.shape.encoder_params)

    @property
    def kv_bytes_per_token(self) -> int:
        return kv_bytes_per_token(self.shape, self.workload.kv_dtype)

    @property
    def memory_bytes(self) -> int:
        """What the step needs in device memory: every weight, and the KV cache of its B sequences at
        S positions, and an unfused prefill's live score matrix (unfused_score_buffer_bytes; nothing else:
        activations, the allocator's slack and workspaces are not counted)."""
        w = self.workload
        return self.weight_storage_bytes + kv_cache_bytes(self.shape, w.kv_dtype, w.batch, w.kv_len) + \
            unfused_score_buffer_bytes(self.shape, w)

    def _repr_html_(self) -> str:  # a notebook shows the kernels as a table (roofcalc.frames)
        from .frames import repr_html

        return repr_html(self)

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise RoofcalcError(f"no kernel named {name!r}; this step's: {', '.join(k.name for k in self.kernels)}")


def kv_cache_bytes(s: ModelShape, kv: DType, batch, tokens):
    """Bytes the KV cache of ``batch`` sequences of ``tokens`` positions holds in every layer (a
    sliding layer keeps its last W). Scalars or numpy arrays; the one memory rule of every report."""
    per = kv.nbytes(kv_values_per_token(s))
    cached = 0
    for (layer_type, _), n in _layer_groups(s):
        if layer_type == "full":
            cached = cached + n * tokens
        elif hasattr(tokens, "shape"):
            import numpy as np

            cached = cached + n * np.minimum(tokens, s.sliding_window)
        else:
            cached = cached + n * min(tokens, s.sliding_window)
    return batch * cached * per


def kv_bytes_per_token(s: ModelShape, kv: DType) -> int:
    """K and V of one token in every layer: 2·L·K·H values (MLA: L·(kv_lora_rank + rope dims))."""
    return kv.nbytes(s.n_layers * kv_values_per_token(s))


def _layer_groups(s: ModelShape) -> list[tuple[tuple[str, str], int]]:
    """((attention type, MLP type), number of layers of that kind), in order of first appearance."""
    groups: dict[tuple[str, str], int] = {}
    for key in zip(s.layer_types, s.layer_mlp_types):
        groups[key] = groups.get(key, 0) + 1
    return list(groups.items())


def _label(key: tuple[str, str], keys: list[tuple[str, str]]) -> str:
    """What tells apart the layer kinds that differ: 'sliding', 'moe', or 'sliding,moe'."""
    parts = []
    if len({k[0] for k in keys}) > 1:
        parts.append(key[0])
    if len({k[1] for k in keys}) > 1:
        parts.append(key[1])
    return ",".join(parts)


def layer_kernels(shape: ModelShape, workload: Workload, merge: bool = True) -> list[tuple[Kernel, int, int | None]]:
    """(kernel, layers running it, its attention window) for every per-layer kernel, kinds of layer
    merged where a kernel costs the same in each (``merge``; without it every kind of layer keeps its
    own rows, so the rows are the same at every workload: what a sweep fits). Each kernel carries its
    window too."""
    groups = _layer_groups(shape)
    keys = [k for k, _ in groups]
    per_group = [decoder_layer(shape, workload, t, m) for (t, m), _ in groups]
    by_name: dict[str, list[tuple[Kernel, tuple[str, str], int]]] = {}
    order: list[str] = []
    for kernels, (key, n) in zip(per_group, groups):
        for k in kernels:
            if k.name not in by_name:
                order.append(k.name)
            by_name.setdefault(k.name, []).append((k, key, n))
    out = []
    for name in order:
        variants = by_name[name]
        window = lambda key: shape.sliding_window if key[0] == "sliding" else None  # noqa: E731
        # attention under a window is another kernel than full attention even where it costs the same (a
        # context inside the window): engines run a windowed variant, whose measured cost is its own
        one_window = variants[0][0].kind != "attention" or len({window(v[1]) for v in variants}) == 1
        if len(variants) == 1:
            k, key, n = variants[0]
            out.append((replace(k, count=n, window=window(key) or 0), n, window(key)))
        elif merge and one_window and len(variants) == len(groups) and \
                all(v[0].cost == variants[0][0].cost for v in variants):
            # the same in every kind of layer (its window matters only to attention, kept apart above)
            w = window(variants[0][1])
            out.append((replace(variants[0][0], count=shape.n_layers, window=w or 0), shape.n_layers, w))
        elif merge and one_window and len({v[0].cost for v in variants}) == 1 and len(variants) < len(groups):
            n = sum(v[2] for v in variants)  # only some kinds of layer run it, at one cost
            w = window(variants[0][1])
            out.append((replace(variants[0][0], count=n, window=w or 0), n, w))
        else:
            for k, key, n in variants:
                out.append((replace(k, name=f"{k.name}[{_label(key, keys)}]", count=n, window=window(key) or 0), n,
                            window(key)))
    return out


def check_group(d_model: int | None, name: str, workload: Workload) -> None:
    """A group size given for quantized weights must divide the hidden size: a group's weights lie along a
    matmul's input, the hidden size for q/k/v and the MLP's up projections (GPTQ's and AWQ's loaders refuse one
    that does not divide it). The default group (None) is rounded where it does not, as the MLP's width is."""
    g = workload.group_size
    if group_breaks(d_model, g, workload.weight_dtype):
        raise RoofcalcError(f"group size {g} does not divide the hidden size {d_model} of {name}: a "
                            f"group's weights lie along a matmul's input")


def group_breaks(d_model: int | None, group: int | None, weights: DType) -> bool:
    """Whether quantized ``weights`` in groups of ``group`` values (None: the default) cannot lie along a matmul
    input of ``d_model`` (check_group's rule; the command line's for a checkpoint's own group)."""
    return group is not None and weights.quantized and not weights.group and group < PER_CHANNEL and \
        isinstance(d_model, int) and d_model % group != 0


def check_analyze_args(shape, workload) -> None:
    """What analyze takes, refused in one line where it is something else: a ModelShape of a hand-modelled family
    (a traced model's step is roofcalc.trace.trace's) and a Workload."""
    if not isinstance(shape, ModelShape):
        hint = " (roofcalc.load_shape(name) reads one)" if isinstance(shape, (str, dict)) else ""
        raise RoofcalcError(f"analyze takes a ModelShape{hint}, got {type(shape).__name__}")
    if not isinstance(workload, Workload):
        raise RoofcalcError(f"analyze takes a Workload (Workload.decode(...) or Workload.prefill(...)), got "
                            f"{type(workload).__name__}")
    if shape.activation == "traced":
        raise RoofcalcError(f"{shape.name}: a traced shape ({shape.model_type}) has no hand model to analyze; "
                            f"roofcalc.trace.trace(cfg, name, workload, view='eager') on roofcalc.load_config(source)"
                            f"[:2] traces its step (view='ideal' for a fused engine's bytes), as the command line "
                            f"does")


def analyze(shape: ModelShape, workload: Workload, merge: bool = True) -> Analysis:
    """All kernels of one step; per-layer kernels carry count = the number of layers running them.

    Layers of different kinds (full / sliding attention, dense / MoE MLP) share every kernel they
    have in common at the same cost; a kernel whose cost differs between them gets one row per
    kind (``attention[sliding]``), and a kernel only some layers run counts only those.
    """
    check_analyze_args(shape, workload)
    check_group(shape.d_model, shape.name, workload)
    before, after = model_head(shape, workload)
    merged = [k for k, _, _ in layer_kernels(shape, workload, merge)]
    return Analysis(shape, workload, (*before, *merged, *after))
