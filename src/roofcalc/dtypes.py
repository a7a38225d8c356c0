"""The dtype vocabulary: every dtype name roofcalc reads, each with its facts, held here once.

* :data:`DTYPES` — the storage types of weights, activations and the KV cache (``--dtype``,
  ``--weight-dtype``...). ``DType.torch`` names the torch dtype of the three PyTorch runs (fp32,
  bf16, fp16); it is also how a config.json's ``torch_dtype`` spells the type (transformers writes
  the torch dtype's name without ``torch.``).
* :data:`DTYPE_ALIASES` — the other spellings a user may give: the torch names, and a few more.
* :data:`COMPUTE_DTYPES` — the compute dtypes a device's peak FLOP/s is given for (the hardware
  catalog, a measured profile), among them tf32, a compute mode with no storage type of its own.

The other modules (hardware, measure, profile, the trace, the command line) take their lists and
maps from these. Nothing heavy is imported here: the command line reads it at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RoofcalcError

SCALE_BYTES = 2  # one fp16 scale per group of quantized weights (symmetric; no zero point)


@dataclass(frozen=True)
class DType:
    """A storage type. ``quantized`` types hold integer weights with one fp16 scale per group."""

    name: str
    bits: int
    quantized: bool = False
    block: int = 0  # block-scaled float weights: one fp32 scale per block x block tile (DeepSeek-V3 fp8)
    group: int = 0  # a format's own group along the input dimension (else the workload's group_size)
    scale_bytes: int = SCALE_BYTES  # bytes of one group's scale
    experts_only: bool = False  # the format stores a mixture of experts' expert weights only
    # a checkpoint's linears with one scale per output row or per matrix (bytes of one): FBGEMM and
    # compressed-tensors FP8, BitNet's ternary weights
    row_scale: int = 0
    tensor_scale: int = 0
    computes: str = ""  # the dtype its GEMMs run in, where the format fixes it (fp8 weights with fp8 activations)
    # the torch dtype (torch.<torch>) a PyTorch run holds it in, and a config.json's torch_dtype spelling of it;
    # "" for the types roofcalc never makes tensors of
    torch: str = ""

    @property
    def scaled(self) -> bool:
        """Weights that carry scales: the decoder layers' linears alone (embeddings, norms and lm_head stay in
        the float dtype)."""
        return self.quantized or bool(self.block or self.row_scale or self.tensor_scale)

    @property
    def dequantized(self) -> bool:
        """Scaled weights turned into the activation dtype, whose GEMMs then compute in it."""
        return self.scaled and not self.computes

    def nbytes(self, n_elements: int) -> int:
        """Bytes of ``n_elements`` values (rounded up to a whole byte)."""
        return -(-n_elements * self.bits // 8)


DTYPES = {
    "fp32": DType("fp32", 32, torch="float32"),
    "bf16": DType("bf16", 16, torch="bfloat16"),
    "fp16": DType("fp16", 16, torch="float16"),
    "fp8": DType("fp8", 8),
    # DeepSeek-V3's fp8 weights in 128 x 128 blocks: their GEMMs run in fp8, the input quantized per token and
    # group of 128 (transformers' FP8Linear: DeepGEMM or its Triton block-fp8 GEMM; the engines likewise)
    "fp8-b128": DType("fp8-b128", 8, block=128, computes="fp8"),
    # FBGEMM FP8 (Llama 3.1's FP8 checkpoints) and compressed-tensors FP8 by channel: one fp32 scale per output
    # row; by tensor (and AutoFP8's quant_method fp8): one per matrix. Their GEMMs run in fp8
    "fp8-ch": DType("fp8-ch", 8, row_scale=4, computes="fp8"),
    "fp8-t": DType("fp8-t", 8, tensor_scale=4, computes="fp8"),
    # BitNet b1.58: ternary weights packed four to a byte, one bf16 scale per matrix (transformers' BitLinear),
    # unpacked to the activation dtype for the GEMM
    "ternary": DType("ternary", 2, tensor_scale=2),
    "int8": DType("int8", 8, quantized=True),
    "int4": DType("int4", 4, quantized=True),
    # OCP Microscaling Formats (MX) v1.0: MXFP4 is FP4 (E2M1) values in blocks of 32 sharing one 8-bit (E8M0)
    # scale. gpt-oss checkpoints store their experts so (quant_method "mxfp4"), everything else in bf16, as
    # transformers' Mxfp4 integration loads them: it replaces the experts alone
    "mxfp4": DType("mxfp4", 4, quantized=True, group=32, scale_bytes=1, experts_only=True),
    # NVIDIA's NVFP4: FP4 (E2M1) values in groups of 16 sharing one FP8 (E4M3) scale, and one fp32 scale a matrix
    # (ModelOpt's weight_scale_2; vLLM's ModelOptNvFp4LinearMethod loads weight, weight_scale [N, K/16] in
    # float8_e4m3fn, weight_scale_2 and input_scale as fp32 scalars). nvfp4: W4A4, the input quantized to NVFP4
    # too and the GEMM run on FP4 tensor cores (ModelOpt's quant_algo NVFP4, compressed-tensors' NVFP4 scheme);
    # a GPU without them runs the weights W4A16 (roofline.weights_on_device). nvfp4a16: W4A16 alone (ModelOpt's
    # W4A16_NVFP4, compressed-tensors' NVFP4A16: FP4 Marlin GEMMs, vLLM's and SGLang's, 16-bit activations)
    "nvfp4": DType("nvfp4", 4, quantized=True, group=16, scale_bytes=1, tensor_scale=4, computes="fp4"),
    "nvfp4a16": DType("nvfp4a16", 4, quantized=True, group=16, scale_bytes=1, tensor_scale=4),
}
# compute dtypes with no storage type a user names: what an NVFP4 GEMM computes in (FP4 E2M1 on Blackwell's
# tensor cores)
COMPUTE_TYPES = {"fp4": DType("fp4", 4)}
# the torch names (float32, bfloat16, float16) and a few other spellings
DTYPE_ALIASES = {**{d.torch: name for name, d in DTYPES.items() if d.torch}, "float": "fp32", "half": "fp16",
                 "float8": "fp8", "fp8_e4m3": "fp8", "e4m3": "fp8"}

# The compute dtypes a device's peak FLOP/s is given for, in the hardware catalog's order: the float types,
# tf32 (fp32 values multiplied on the tensor cores at reduced precision, NVIDIA's A100 whitepaper) and int8
# (integer tensor ops: int8 weights here dequantize, so a workload never computes in it); fp4 is NVFP4's (dense
# FP4 tensor FLOP/s, Blackwell)
COMPUTE_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8")
# compute dtypes with no storage type: the torch dtype its tensors hold ("": none roofcalc runs a matmul in)
COMPUTE_ONLY = {"tf32": "float32", "fp4": ""}


def dtype(name: str | DType) -> DType:
    if isinstance(name, DType):
        return name
    key = DTYPE_ALIASES.get(name.lower(), name.lower())
    if key not in DTYPES:
        methods = {"awq": "int4", "gptq": "int4 or int8 (its bits; --group-size its group)", "gguf": "q4_0 or q8_0",
                   "bnb": "int8 or int4", "bitsandbytes": "int8 or int4", "fp4": "nvfp4"}
        hint = f"; {name} is a quantization method: its weights are {methods[key]}" if key in methods else ""
        raise RoofcalcError(f"unknown dtype '{name}'{hint}; use one of {', '.join(DTYPES)} (and for --weight-dtype "
                            f"llama.cpp's q4_0 and q8_0)")
    return DTYPES[key]


def torch_names(compute: bool = False) -> dict[str, str]:
    """roofcalc's name -> the torch dtype's, for what PyTorch runs: the storage types fp32, bf16, fp16; with
    ``compute``, the compute dtypes torch matmuls run in, in :data:`COMPUTE_DTYPES`'s order (tf32 among them,
    on float32 tensors)."""
    if not compute:
        return {name: d.torch for name, d in DTYPES.items() if d.torch}
    names = {name: COMPUTE_ONLY.get(name) or (DTYPES[name].torch if name in DTYPES else "") for name in COMPUTE_DTYPES}
    return {name: t for name, t in names.items() if t}


def from_config(value) -> str | None:
    """roofcalc's name for a config.json's torch_dtype (or dtype) value, if it is one PyTorch runs."""
    return {d.torch: name for name, d in DTYPES.items() if d.torch}.get(value) if isinstance(value, str) else None


def same_width(name: str) -> str | None:
    """The other float type of ``name``'s width that PyTorch runs (bf16 for fp16, fp16 for bf16); None if none."""
    d = DTYPES.get(name)
    if d is None or not d.torch:
        return None
    return next((other for other, e in DTYPES.items() if e.torch and e.bits == d.bits and other != name), None)
