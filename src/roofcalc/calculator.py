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
from .errors import RoofcalcError
from .shapes import ModelShape

# FLOPs per element of the elementwise kernels. Fused-kernel arithmetic, not every
# instruction; these reproduce the seed table's ≈8 K (RMSNorm) and ≈17 K (SiLU×up) for
# TinyLlama at batch 1.
RMSNORM_FLOPS_PER_ELEMENT = 4  # x², Σ, × rsqrt(mean), × weight
ROTARY_FLOPS_PER_ELEMENT = 3  # x·cos + rotate_half(x)·sin
RESIDUAL_FLOPS_PER_ELEMENT = 1  # x + y
SOFTMAX_FLOPS_PER_SCORE = 5  # max, subtract, exp, sum, divide (the 1/√H scale folds into Q)
EMBED_SCALE_FLOPS_PER_ELEMENT = 1  # Gemma's × √D
ACTIVATION_FLOPS_PER_ELEMENT = {  # the activation itself; the × up of a gated MLP adds 1
    "silu": 2,  # x · σ(x), σ counted as one op
    "gelu_tanh": 8,  # 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    "gelu": 8,  # erf form, counted like the tanh form
    "relu": 1,
}

MAX_BATCH = 1 << 20
MAX_TOKENS = 1 << 24


# --------------------------------------------------------------------------- data types


@dataclass(frozen=True)
class DType:
    """A storage type. ``quantized`` types hold integer weights with one fp16 scale per group."""

    name: str
    bits: int
    quantized: bool = False

    def nbytes(self, n_elements: int) -> int:
        """Bytes of ``n_elements`` values (rounded up to a whole byte)."""
        return -(-n_elements * self.bits // 8)


DTYPES = {
    "fp32": DType("fp32", 32),
    "bf16": DType("bf16", 16),
    "fp16": DType("fp16", 16),
    "fp8": DType("fp8", 8),
    "int8": DType("int8", 8, quantized=True),
    "int4": DType("int4", 4, quantized=True),
}
DTYPE_ALIASES = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
                 "float8": "fp8", "fp8_e4m3": "fp8", "e4m3": "fp8"}
SCALE_BYTES = 2  # one fp16 scale per group of quantized weights (symmetric; no zero point)


def dtype(name: str | DType) -> DType:
    if isinstance(name, DType):
        return name
    key = DTYPE_ALIASES.get(name.lower(), name.lower())
    if key not in DTYPES:
        raise RoofcalcError(f"unknown dtype '{name}'; use one of {', '.join(DTYPES)}")
    return DTYPES[key]


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
    group_size: int = 128  # quantized weights: values per scale, along the input dimension
    causal: bool = True  # prefill: count only the score pairs a causal mask keeps
    logits_all: bool = False  # prefill: lm_head on every position (else the last one only)

    def __post_init__(self) -> None:
        if self.phase not in ("decode", "prefill"):
            raise RoofcalcError(f"phase must be 'decode' or 'prefill', not {self.phase!r}")
        for label, value, limit in (("batch", self.batch, MAX_BATCH), ("query tokens", self.query_tokens, MAX_TOKENS),
                                    ("context", self.kv_len, MAX_TOKENS), ("group size", self.group_size, MAX_TOKENS)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise RoofcalcError(f"{label} must be a positive integer, got {value!r}")
            if value > limit:
                raise RoofcalcError(f"{label} {value:,} is beyond any real workload (limit {limit:,})")
        if self.query_tokens > self.kv_len:
            raise RoofcalcError(f"{self.query_tokens} query tokens cannot attend to only {self.kv_len} positions")
        if self.kv_dtype.quantized and self.kv_dtype.bits != 8 or self.act_dtype.quantized:
            raise RoofcalcError("activations take fp32, bf16, fp16 or fp8; the KV cache also int8")

    @classmethod
    def decode(cls, batch: int = 1, context: int = 500, **kw) -> "Workload":
        return cls("decode", batch, 1, context, **kw)

    @classmethod
    def prefill(cls, batch: int = 1, prompt: int = 512, **kw) -> "Workload":
        return cls("prefill", batch, prompt, prompt, **kw)

    @property
    def tokens(self) -> int:
        """B·T: rows of every token-wise kernel."""
        return self.batch * self.query_tokens

    @property
    def float_weight_dtype(self) -> DType:
        """Embeddings, norms, biases and lm_head: the weight dtype unless it is an integer format."""
        return self.act_dtype if self.weight_dtype.quantized else self.weight_dtype

    @property
    def compute_dtype(self) -> DType:
        """What the matmuls compute in: integer weights are dequantized to the activation dtype (W4A16)."""
        return self.act_dtype if self.weight_dtype.quantized else self.weight_dtype


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

    @property
    def step_cost(self) -> Cost:
        return self.cost * self.count


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


def linear_weight_bytes(n_in: int, n_out: int, wl: Workload) -> int:
    """Bytes of an [n_out, n_in] weight; quantized formats add one fp16 scale per group of
    ``group_size`` inputs of each output row."""
    w = wl.weight_dtype
    scales = n_out * -(-n_in // wl.group_size) * SCALE_BYTES if w.quantized else 0
    return w.nbytes(n_in * n_out) + scales


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


def keys_read(wl: Workload, window: int | None) -> int:
    """Cached positions attention reads per sequence: all S, or the last T + W - 1 under a window."""
    return wl.kv_len if window is None else min(wl.kv_len, wl.query_tokens + window - 1)


# --------------------------------------------------------------------------- the kernels


def linear(name: str, n_in: int, n_out: int, s: ModelShape, wl: Workload, *, bias: bool = False,
           rows: int | None = None, weight_bytes: int | None = None, params: int | None = None,
           scope: str = "layer") -> Kernel:
    """A weight GEMM (GEMV at B·T = 1): [rows, n_in] × [n_in, n_out]."""
    rows = wl.tokens if rows is None else rows
    wb = linear_weight_bytes(n_in, n_out, wl) if weight_bytes is None else weight_bytes
    bias_bytes = wl.float_weight_dtype.nbytes(n_out) if bias else 0
    cost = matmul(rows, n_out, n_in, weight_bytes=wb, act=wl.act_dtype, bias_bytes=bias_bytes)
    own = n_in * n_out + (n_out if bias else 0) if params is None else params
    return Kernel(name, "matmul", scope, 1, f"[{rows},{n_in}]x[{n_in},{n_out}]", cost,
                  params=own, param_bytes=(wb if own else 0) + bias_bytes)


def rms_norm(name: str, width: int, rows: int, wl: Workload, scope: str = "layer") -> Kernel:
    """RMSNorm over ``width`` values of each of ``rows`` rows: reads x and the weight, writes y."""
    w = wl.float_weight_dtype.nbytes(width)
    cost = elementwise(rows * width, RMSNORM_FLOPS_PER_ELEMENT, reads=1, writes=1, act=wl.act_dtype, weight_bytes=w)
    return Kernel(name, "elementwise", scope, 1, f"[{rows},{width}]", cost, params=width, param_bytes=w)


def rotary(s: ModelShape, wl: Workload) -> Kernel:
    """RoPE on q and k: rotated dims of N + K heads; reads q, k and the cos/sin rows, writes q, k."""
    n = wl.tokens * (s.n_heads + s.n_kv_heads) * s.rotary_dim
    cos_sin = wl.act_dtype.nbytes(2 * wl.tokens * s.rotary_dim)
    cost = elementwise(n, ROTARY_FLOPS_PER_ELEMENT, reads=1, writes=1, act=wl.act_dtype)
    cost = replace(cost, act_read_bytes=cost.act_read_bytes + cos_sin)
    return Kernel("rotary", "elementwise", "layer", 1, f"[{wl.tokens},{s.n_heads}+{s.n_kv_heads},{s.rotary_dim}]", cost)


def kv_cache_write(s: ModelShape, wl: Workload) -> Kernel:
    """Appends the new tokens' K and V (B·T·K·H values each) to the cache."""
    n = 2 * wl.tokens * s.kv_dim
    cost = Cost(act_read_bytes=wl.act_dtype.nbytes(n), kv_write_bytes=wl.kv_dtype.nbytes(n))
    return Kernel("kv_cache_write", "memory", "layer", 1, f"2x[{wl.tokens},{s.n_kv_heads},{s.head_dim}]", cost)


def attention(s: ModelShape, wl: Workload, window: int | None) -> Kernel:
    """Scaled dot-product attention over all N query heads (GQA shares each KV head among N/K):
    QKᵀ 2·B·N·pairs·H + PV 2·B·N·pairs·H FLOPs, softmax on every score; reads Q and the K and V
    of the positions attended, writes the output."""
    b, t = wl.batch, wl.query_tokens
    pairs = score_pairs(wl, window)
    mm = 2 * b * s.n_heads * pairs * s.head_dim * 2  # QKᵀ and PV
    keys = keys_read(wl, window)
    cost = Cost(
        flops=mm + SOFTMAX_FLOPS_PER_SCORE * b * s.n_heads * pairs,
        matmul_flops=mm,
        act_read_bytes=wl.act_dtype.nbytes(b * t * s.q_dim),
        act_write_bytes=wl.act_dtype.nbytes(b * t * s.q_dim),
        kv_read_bytes=wl.kv_dtype.nbytes(2 * b * keys * s.kv_dim),
    )
    w = f",window {window}" if window else ""
    return Kernel("attention", "attention", "layer", 1,
                  f"B{b}:[{t}q,{keys}kv]x{s.n_heads}h/{s.n_kv_heads}kv x{s.head_dim}{w}", cost)


def residual(name: str, s: ModelShape, wl: Workload) -> Kernel:
    cost = elementwise(wl.tokens * s.d_model, RESIDUAL_FLOPS_PER_ELEMENT, reads=2, writes=1, act=wl.act_dtype)
    return Kernel(name, "elementwise", "layer", 1, f"[{wl.tokens},{s.d_model}]", cost)


def act_mul(s: ModelShape, wl: Workload) -> Kernel:
    """act(gate) × up: reads gate and up, writes one tensor of B·T·F values."""
    per = ACTIVATION_FLOPS_PER_ELEMENT[s.activation] + 1
    cost = elementwise(wl.tokens * s.d_ff, per, reads=2, writes=1, act=wl.act_dtype)
    return Kernel("act_mul", "elementwise", "layer", 1, f"[{wl.tokens},{s.d_ff}]", cost)


def embed_tokens(s: ModelShape, wl: Workload) -> Kernel:
    """A gather: reads the B·T rows it needs (not the table), writes them as activations."""
    w = wl.float_weight_dtype
    n = wl.tokens * s.d_model
    flops = EMBED_SCALE_FLOPS_PER_ELEMENT * n if s.embed_scale else 0
    cost = Cost(flops=flops, weight_bytes=w.nbytes(n), act_write_bytes=wl.act_dtype.nbytes(n))
    table = s.vocab_size * s.d_model
    return Kernel("embed_tokens", "memory", "model", 1, f"{wl.tokens} row(s) of [{s.vocab_size},{s.d_model}]",
                  cost, params=table, param_bytes=w.nbytes(table))


def lm_head(s: ModelShape, wl: Workload) -> Kernel:
    """Logits for every sequence in decode; in prefill for the last token of each sequence
    (what ``generate`` does) unless ``logits_all``. A tied head reads the embedding table."""
    rows = wl.batch if wl.phase == "decode" or not wl.logits_all else wl.tokens
    table = wl.float_weight_dtype.nbytes(s.vocab_size * s.d_model)
    own = 0 if s.tie_word_embeddings else s.vocab_size * s.d_model
    return linear("lm_head", s.d_model, s.vocab_size, s, wl, rows=rows, weight_bytes=table, params=own, scope="model")


def decoder_layer(s: ModelShape, wl: Workload, layer_type: str) -> list[Kernel]:
    """One decoder layer's kernels in execution order, as the model's ``forward`` runs them."""
    d, rows = s.d_model, wl.tokens
    window = s.sliding_window if layer_type == "sliding" else None
    ks = [
        rms_norm("input_layernorm", d, rows, wl),
        linear("q_proj", d, s.q_dim, s, wl, bias=s.qkv_bias),
        linear("k_proj", d, s.kv_dim, s, wl, bias=s.qkv_bias),
        linear("v_proj", d, s.kv_dim, s, wl, bias=s.qkv_bias),
    ]
    if s.qk_norm:  # Qwen3: RMSNorm over each head's H values, before rotary
        ks += [rms_norm("q_norm", s.head_dim, rows * s.n_heads, wl), rms_norm("k_norm", s.head_dim, rows * s.n_kv_heads, wl)]
    ks += [
        rotary(s, wl),
        kv_cache_write(s, wl),
        attention(s, wl, window),
        linear("o_proj", s.q_dim, d, s, wl, bias=s.o_bias),
        residual("attn_residual", s, wl),
        rms_norm("post_attention_layernorm", d, rows, wl),
        linear("gate_proj", d, s.d_ff, s, wl, bias=s.mlp_bias),
        linear("up_proj", d, s.d_ff, s, wl, bias=s.mlp_bias),
        act_mul(s, wl),
        linear("down_proj", s.d_ff, d, s, wl, bias=s.mlp_bias),
        residual("mlp_residual", s, wl),
    ]
    return ks


# --------------------------------------------------------------------------- the step


@dataclass(frozen=True)
class Analysis:
    """Every kernel of one step of ``shape`` under ``workload``, in execution order."""

    shape: ModelShape
    workload: Workload
    kernels: tuple[Kernel, ...]

    @property
    def totals(self) -> Cost:
        total = Cost()
        for k in self.kernels:
            total = total + k.step_cost
        return total

    @property
    def params(self) -> int:
        return sum(k.params * k.count for k in self.kernels)

    @property
    def weight_storage_bytes(self) -> int:
        """Bytes all the model's weights take in memory (the whole embedding table included)."""
        return sum(k.param_bytes * k.count for k in self.kernels)

    @property
    def kv_bytes_per_token(self) -> int:
        return kv_bytes_per_token(self.shape, self.workload.kv_dtype)

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(name)


def kv_bytes_per_token(s: ModelShape, kv: DType) -> int:
    """K and V of one token in every layer: 2·L·K·H values."""
    return kv.nbytes(2 * s.n_layers * s.kv_dim)


def _layer_groups(s: ModelShape) -> list[tuple[str, int]]:
    """(layer type, number of layers of that type), in order of first appearance."""
    groups: dict[str, int] = {}
    for t in s.layer_types:
        groups[t] = groups.get(t, 0) + 1
    return list(groups.items())


def analyze(shape: ModelShape, workload: Workload) -> Analysis:
    """All kernels of one step; per-layer kernels carry count = the number of layers running them.

    Layers of different attention types (full / sliding) share every kernel but attention;
    a kernel whose cost differs between them gets one row per type (``attention[sliding]``).
    """
    groups = _layer_groups(shape)
    per_group = [decoder_layer(shape, workload, t) for t, _ in groups]
    merged: list[Kernel] = []
    for variants in zip(*per_group):  # the same kernel in each layer type
        if all(v.cost == variants[0].cost for v in variants):
            merged.append(replace(variants[0], count=shape.n_layers))
        else:
            merged += [replace(v, name=f"{v.name}[{t}]", count=n) for v, (t, n) in zip(variants, groups)]
    final_norm = rms_norm("norm", shape.d_model, workload.tokens, workload, scope="model")
    kernels = (embed_tokens(shape, workload), *merged, final_norm, lm_head(shape, workload))
    return Analysis(shape, workload, kernels)

