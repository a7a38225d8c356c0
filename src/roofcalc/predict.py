"""What a step will take: kernel efficiency, host overhead, and one step model for every caller.

A floor (``roofline.py``) is what no kernel can beat. A prediction adds what real kernels and a
real host lose (docs/conventions.md, "Predicted time"):

    t_kernel = fixed + max(FLOPs / (P · e_compute), bytes / (B · e_memory))
                                  e: the fraction of the roof that kind of kernel reaches;
                                  fixed: what the smallest kernel of its class takes on the
                                  device (a collective's latency is its fixed cost)
    device   = Σ count · t_kernel
    host     = host ops · seconds per op   hf-eager: Python and dispatch of every eager op;
                                           fused: one launch call per kernel;
                                           cuda-graph: one graph replay per step (a step of
                                           more tokens than the engine replays a graph for:
                                           one launch call per kernel, EngineHost.graphed)
    step     = max(device, host) where host and device overlap (a GPU: the CPU queues work
               ahead), device + host where they cannot (a CPU does both)

This is the only overhead model: every report, sweep, rank, pipeline stage and ``profile`` reads
its times and its verdicts from here. A kernel is bound by one of KERNEL_BOUNDS (the largest
term of its expected time), a step by one of STEP_BOUNDS.

``predicted_s`` uses the expected efficiencies and overheads. The range around it
[``predicted_lower_s``, ``predicted_upper_s``] is, on a GPU whose kernels come from measured
tables, the prediction times e^-below to times e^above, both calibrated on measured steps (serving
runs, published engine measurements and the held-out sets) to hold 80 % of each, on GPUs of its kind (its own
tables, or the nearest measured GPU's: calibrated_band) (data/calibration.json;
never below the floors); elsewhere (a CPU, a measured profile's own efficiencies) the floors (every efficiency 1,
no host time: nothing beats them) to the pessimistic ends. The floors stay ``floor_s`` either way. :func:`step_times` computes all of it on scalars or on
numpy arrays, so a single step, every sweep and ``roofcalc profile`` share one model.

Efficiencies are fractions of a roof: the defaults (``DEFAULTS``) of the datasheet roof, each
with the published measurement it comes from; a measured profile's of its own measured roof.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Mapping

from .errors import RoofcalcError

CLASSES = ("gemv", "gemm", "gemm_fp8", "attention", "attention_compute", "stream")
DEQUANT = ("int8", "int4", "mxfp4", "nvfp4", "nvfp4a16")
# What bounds one kernel: the largest term of its expected time (a collective's link is its memory side).
KERNEL_BOUNDS = ("memory", "compute", "link", "fixed")
# What bounds a step: the host where it outlasts the device, else the kind of kernel time that takes most.
STEP_BOUNDS = ("memory", "compute", "host", "communication", "fixed")


@dataclass(frozen=True)
class Efficiency:
    """A fraction of the roof (or, for overheads, seconds), expected and at its pessimistic end."""

    expected: float
    pessimistic: float
    source: str = "default"  # "default" | "measured"
    note: str = ""  # where the number comes from

    def pick(self, pessimistic: bool) -> float:
        return self.pessimistic if pessimistic else self.expected


# Fractions of the *datasheet* roof, GPUs. Each cites the measurement it comes from; none is
# fitted to the cases docs/validation.md checks (those are other engines' end-to-end figures).
# Streams: RRZE-HPC/gpu-benches gpu-stream, the copy-like "scale" kernel on NVIDIA GPUs: A100-40GB 89 %,
# A100-80GB 85 %, H100 PCIe 85 %, GH200 79 %, V100 90 %, L40 90 % of datasheet; median 0.87, low end 0.79.
# 16-bit GEMMs: stas00/ml-engineering's MAMF table and zzc0721/torch-performance-test-data (torch
# matmuls), NVIDIA datacenter parts: A100 SXM 86.9 %, A100 PCIe 81.1 %, H100 SXM 80.3 %, GH200 83.6 %,
# H100 PCIe 66 %, V100 78 %, T4 66 %, A10G 99 %, A40 82 %; median 0.811, low end 0.66. GeForce parts
# reach their (fp32-accumulate) datasheet peak: RTX 4090 165-168 of 165.2, RTX 5090 above it.
GPU_DEFAULTS = {
    "stream": Efficiency(0.87, 0.79, note="RRZE gpu-stream 'scale' on A100-40/80GB, H100 PCIe, GH200, V100, L40: "
                         "79-90 % of datasheet bandwidth, median 87 %"),
    "gemv": Efficiency(0.685, 0.63, note="NVIDIA aiconfigurator 0.12 silicon database, A100 Llama-2-7B decode "
                       "GEMMs at 63-74% of speed of light (midpoint; pessimistic: 63%)"),
    "gemm": Efficiency(0.811, 0.66, note="16-bit big GEMMs on NVIDIA datacenter GPUs (stas00 MAMF, torch matmul "
                       "benchmarks): 66-99 % of datasheet peak, median 81.1 %"),
    "gemm_fp8": Efficiency(1181 / 1979, 1073.6 / 1979, note="DeepGEMM README: FP8 GEMMs at M = 4096, K = 7168 on "
                           "H800 reach 1058 and 1304 of 1979 TFLOP/s (mean 1181); pessimistic: its CUTLASS baseline "
                           "at the same shapes, 1074 (1.1x slower); other depths by GEMM_FP8_DEPTH"),
    # Dao-AILab/flash-attention issue #1572 (2025), batch decode of 16 sequences, 32 heads of 128, fp16, paged
    # KV (pages of 8): FlashInfer on the issue author's H20 (4.0 TB/s) reads 524,288,000 bytes of KV cache
    # (2000 keys) in 164.4 us, 3190 GB/s; FA3 on an H100 (3350 GB/s), 1796 GB/s. The expected value is
    # the serving engines' kernel, the pessimistic one FA3's; other sizes by ATTENTION_SIZE
    "attention": Efficiency(3190.0 / 4000, 1796 / 3350, note="flash-attention issue #1572, batch decode of 524 MB of "
                            "KV cache: FlashInfer at 3190 of 4000 GB/s (H20), FA3 at 1796 of 3350 (H100); other "
                            "sizes by ATTENTION_SIZE"),
    "attention_compute": Efficiency(0.60, 0.50, note="FlashAttention-2 (Dao, 2023): forward pass at 50-73% of "
                                    "A100 peak (60% expected, 50% pessimistic)"),
}
# A GEMM with few rows fills few output tiles, so it reaches less of the compute roof than a big one
# (tile and wave quantization: NVIDIA's "Matrix Multiplication Background" guide). The same DeepGEMM
# table, medians at each M: 288 TFLOP/s at M = 64, 521.5 at M = 128, 1041.5 at M = 4096; relative to
# M = 4096 that is 0.277 and 0.501. The defaults scale every compute dtype's GEMM efficiency by it
# (read in log M, 1 from M = 4096 up, 0.277 below M = 64); a measured curve replaces it.
GEMM_ROWS = ((64.0, 288 / 1041.5), (128.0, 521.5 / 1041.5), (4096.0, 1.0))
# Its pessimistic end: the same table's CUTLASS-based baseline (each row's TFLOP/s over its
# "speedup"), an expert-tuned implementation of the same shapes. Medians 171.8 TFLOP/s at M = 64,
# 283.3 at M = 128, 975.9 at M = 4096; relative to M = 4096, 0.176 and 0.290. Few-row GEMMs vary
# most between implementations (1.4-2.7x at M = 64 and 128, 1.0-1.2x at M = 4096).
GEMM_ROWS_LOW = ((64.0, 171.8 / 975.9), (128.0, 283.3 / 975.9), (4096.0, 1.0))
# An FP8 GEMM with a short reduction depth K runs a short main loop per output tile, so loading,
# scaling and writing the tile weigh more. The same table at M = 4096, by K (N varies with it):
# K = 512: 590, 1536: 990, 2048: 1025, 7168: 1058 and 1304 (mean 1181), 16384: 1358 TFLOP/s. The
# factor is relative to K = 7168 (the gemm_fp8 class), read in log K, flat beyond the ends. Its
# pessimistic end keeps the class's spread at one depth (1058 of 1181: the two K = 7168 shapes).
GEMM_FP8_DEPTH = ((512.0, 590 / 1181), (1536.0, 990 / 1181), (2048.0, 1025 / 1181), (7168.0, 1.0),
                  (16384.0, 1358 / 1181))

# A decode attention kernel streams its KV cache well only when there is enough of it to spread over the
# GPU: the same issue's runs by the bytes they read (batch 16; 128, 2000, 4000 and 32000 keys).
# FlashInfer (expected): 33,554,432 B in 18.79 us (1786 GB/s, 0.446 of 4000), 524,288,000 B 0.797,
# 1,048,576,000 B in 321.4 us (0.816), 8,388,608,000 B in 2474.9 us (0.847). FA3 (pessimistic): 1226,
# 1796 and 1849 GB/s of 3350 at the first three. Factors relative to 524 MB, read in log bytes, flat
# beyond the ends; the defaults only (a measured profile's attention is its own).
ATTENTION_SIZE = ((33_554_432.0, 0.4464 / 0.7975), (524_288_000.0, 1.0), (1_048_576_000.0, 0.8156 / 0.7975),
                  (8_388_608_000.0, 0.8474 / 0.7975))
ATTENTION_SIZE_LOW = ((33_554_432.0, 1226 / 1796), (524_288_000.0, 1.0), (1_048_576_000.0, 1849 / 1796))

# Weight-only int8 / int4 GEMVs dequantize on the fly: their bandwidth relative to a 16-bit GEMV
# on the same GPU, from gpt-fast's README (A100-80GB, batch 1): bf16 1397 GB/s, int8 1069 GB/s,
# int4 (group 32) 863 GB/s. For int4 that is the pessimistic end: Marlin, the FP16xINT4 kernel serving
# engines run GPTQ and AWQ checkpoints with, "delivers essentially ideal speedups at all batchsizes,
# enabling the maximum possible 3.87x speedup up to batchsizes around 16-32" over FP16 weights at group
# 128 on an A10 (IST-DASLab/marlin README): the 16-bit GEMV's share of bandwidth, a factor of 1.
GPU_DEQUANT = {
    "int8": Efficiency(1069.20 / 1397.31, 1069.20 / 1397.31, note="gpt-fast README, A100: int8 GEMVs stream "
                       "1069 GB/s where bf16 ones stream 1397 GB/s (0.77)"),
    "int4": Efficiency(1.0, 862.69 / 1397.31, note="Marlin README (A10, group 128): int4 GEMVs at the ideal 3.87x "
                       "of FP16 up to batch 16-32, the 16-bit GEMV's share of bandwidth (1.0); pessimistic: gpt-fast "
                       "README, A100: int4 (group 32) GEMVs stream 863 GB/s where bf16 ones stream 1397 GB/s (0.62)"),
    # No published GEMV figure for MXFP4 weights was found; the nearest is the same 4-bit group-32 kernel's
    "mxfp4": Efficiency(862.69 / 1397.31, 862.69 / 1397.31, note="no published MXFP4 GEMV figure found: gpt-fast's "
                        "int4 (group 32) one, 863 of bf16's 1397 GB/s on an A100 (0.62)"),
    # NVFP4 weights computing in 16 bits run FP4 Marlin: vLLM's MarlinNvFp4LinearKernel, Marlin's kernel with FP4
    # values and FP8 group scales, and SGLang's (0.5.14 server_args.py: --fp4-gemm-backend "auto" selects "marlin on
    # SM80-SM90"); no published figure of its own was found: Marlin's int4 one
    "nvfp4": Efficiency(1.0, 862.69 / 1397.31, note="W4A16 (FP4 Marlin, vLLM's and SGLang's): no published figure of its own found; "
                        "Marlin's int4 one (its README, A10, group 128: the ideal 3.87x of FP16, 1.0); pessimistic: "
                        "gpt-fast's int4 GEMV, 863 of bf16's 1397 GB/s on an A100 (0.62)"),
    "nvfp4a16": Efficiency(1.0, 862.69 / 1397.31, note="FP4 Marlin (vLLM's and SGLang's): no published figure of its own found; "
                           "Marlin's int4 one (its README, A10, group 128: the ideal 3.87x of FP16, 1.0); pessimistic: "
                           "gpt-fast's int4 GEMV, 863 of bf16's 1397 GB/s on an A100 (0.62)"),
}
# Marlin was written for Ampere; on Hopper it stays well short of that ideal. inclusionAI/humming pull request #2
# (2026-03-24, "Device: H100", dense n = k = 8192, channelwise, fp16 activations, TFLOPS): at M = 1 torch's 16-bit
# GEMM runs 2.30 TFLOPS (134,217,728 FLOPs in 58.4 us: 134.25 MB at 2.30 TB/s) and marlin-w4a16 4.98 (26.9 us:
# 33.6 MB at 1.25 TB/s), 0.542 of the 16-bit GEMM's bandwidth; its marlin-w8a16, 3.46 TFLOPS (38.8 us: 67.1 MB at
# 1.73 TB/s), is 0.752, beside gpt-fast's A100 int8 0.77 above. Hopper GPUs (compute capability 9.x) take it.
_MARLIN_H100 = ((33_554_432 + 16_384 + 32_768) / (134_217_728 * 2 / 4.98e12)  # int4 weights, scales, x, y: B/s
                / ((134_217_728 + 16_384 + 16_384) / (134_217_728 * 2 / 2.30e12)))  # over fp16 weights, x, y: B/s
HOPPER_INT4 = Efficiency(_MARLIN_H100, _MARLIN_H100,
                         note="inclusionAI/humming PR #2, H100, n = k = 8192 channelwise, M = 1: marlin-w4a16 streams "
                         "1.25 TB/s where torch's 16-bit GEMM streams 2.30 TB/s (0.54)")
# On a GA100 (A100, A800: compute capability 8.0) Marlin stays short of that ideal on real layers, the more the smaller
# the layer: the same README's assets/models.png (IST-DASLab/marlin @ 2f6d7c1; group 128, batch 16, the summed time of
# a Transformer block's linear layers, bench.py's MODELS) has its speedup over FP16 PyTorch at 3.69-3.85 on the A10,
# 3.40-3.87 on the RTX A6000 and 3.60-4.25 on the RTX 3090 (the ideal 3.87, the factor 1 above), but on the A100 2.22
# (Llama 7B's layers), 2.80 (13B), 3.04 (33B), 3.20 (65B) and 3.64 (Falcon 180B), read off the figure. On a GA100
# int4's factor is taken as 1 - c (int4 bytes of the matmul's weight / 1 MB)^-a, c = 3.3 and a = 0.72 the least
# squares of log(bar / the step model's speedup) over the five models (benchmarks/int4_kernels.py, marlin_points();
# two parameters for five bars, each within 4 %), written at 8 MB to 512 MB and read in log bytes, flat beyond. The
# figure's layers run from 8.7 MB (Llama 7B's 4,096 x 4,096) to 576 MB: below about 20 MB the values rest on the form
# more than on a bar. Taken at every batch on the memory side (the figure is at batch 16; the README's A10 curve,
# assets/peak.png, is flat from 1 to 32), by every int4 kernel (as Marlin's factor 1 was); its pessimistic end stays
# gpt-fast's A100 figure (0.617), or the factor where that is lower.
GA100_INT4_SIZE = ((8e6, 0.2616), (16e6, 0.5517), (32e6, 0.7279), (64e6, 0.8348), (128e6, 0.8997), (256e6, 0.9391),
                   (512e6, 0.963))
# AutoAWQ's GEMM kernel (gemm_forward_4bit_cuda_m16n128k32: WQLinear_GEMM, and vLLM's `awq` quantization, which runs
# the same code) dequantizes each int4 weight tile in registers for every tile of 16 input rows it computes (rows past
# M masked, not skipped), so its rate levels off far below the tensor cores' past a few tiles, and one row costs
# nearly a tile's time. SqueezeBits/QUICK README @ 1180eba (arXiv 2402.10076), M x 8192 x 8192 on an A100, TFLOP/s
# of AutoAWQ's GEMM: M = 1 2.94, 16 34.23, 32 48.83, 64 57.43, 128 58.46 (FP16's 1.4, 22.6, 46.4, 91.9, 157.4).
# Taken to be bound by the dequantizing arithmetic on the SMs' CUDA cores, not their tensor cores (roofcalc's
# reading: no source says so), another NVIDIA GPU scales the rates by its datasheet fp32 rate over the A100's 19.5
# TFLOP/s. The same README's RTX 4090, RTX A6000 and L40 rows do not bear that out (benchmarks/int4_kernels.py): the
# scaled ceiling lies above those GPUs' tensor rate, so it never binds there, while the A6000 (twice the A100's fp32
# rate) measured 46 TFLOP/s at M = 128 against the A100's 58. So those three GPUs take their own rows
# (AWQ_GEMM_MEASURED, from the same table: RTX 4090 at M = 1, 64, 128: 3.11, 91.39, 104.36; RTX A6000 2.21, 44.85,
# 46.05; L40 2.41, 72.9, 64.28 TFLOP/s), and the scaled A100 rows stay for the others, unverified. Read as log rate
# linear in log M, flat beyond the ends.
AWQ_GEMM = ((1.0, 2.94e12), (16.0, 34.23e12), (32.0, 48.83e12), (64.0, 57.43e12), (128.0, 58.46e12))
AWQ_GEMM_FP32 = 19.5e12  # the A100's datasheet fp32 FLOP/s, which AWQ_GEMM's rates were measured beside
AWQ_GEMM_MEASURED = {  # the catalog's GPU name: its own measured rates (M, FLOP/s), taken unscaled
    "RTX4090": ((1.0, 3.11e12), (64.0, 91.39e12), (128.0, 104.36e12)),
    "RTX-A6000": ((1.0, 2.21e12), (64.0, 44.85e12), (128.0, 46.05e12)),
    "L40": ((1.0, 2.41e12), (64.0, 72.9e12), (128.0, 64.28e12)),
}
# The kernel an int4 (W4A16) matmul runs, by the engine that runs it: (its own GEMM is AutoAWQ's, capped at
# AWQ_GEMM, else Marlin-like, near the 16-bit GEMM's rate (GPU_DEQUANT); the tokens of a step from which the engine
# instead dequantizes the whole weight to 16 bits and runs its 16-bit GEMM, 0: never; what runs it; the report's
# words). The dequantizing kernel reads the int4 weight and writes 2 bytes a value, in series with the GEMM, which
# then reads those.
INT4_KERNELS = {  # name: (AutoAWQ's GEMM?, switch, what runs it, the report's words)
    "marlin": (False, 0, "Marlin-like (vLLM's awq_marlin / gptq_marlin from v0.5.3, SGLang, transformers 5's "
                         "GPT-QModel kernels, TensorRT-LLM's): near the 16-bit GEMM's rate at any size",
               "Marlin-like kernels"),
    "autoawq": (True, 1024, "AutoAWQ's GEMM from v0.2.0 (PR #316, 2024-01-24; awq/modules/linear/gemm.py: "
                            "batch x tokens >= 1024 dequantizes): its kernel below 1,024 tokens, the 16-bit GEMM from "
                            "there (transformers 4.x loading AWQ checkpoints through it)",
                "AutoAWQ's GEMM kernel, dequantized to 16 bits from 1,024 tokens"),
    "autoawq-0.1": (True, 0, "AutoAWQ's GEMM before v0.2.0: its kernel at every size",
                    "AutoAWQ's GEMM kernel (before v0.2.0)"),
    "vllm-awq": (True, 256, "vLLM's `awq` quantization from v0.3.0 (PR #2566: num_tokens >= 256 dequantizes): "
                            "AutoAWQ's kernel below 256 tokens, the 16-bit GEMM from there (AWQ checkpoints' default "
                            "before awq_marlin, v0.5.3; --quantization awq after)",
                 "vLLM's awq kernel (AutoAWQ's GEMM), dequantized to 16 bits from 256 tokens"),
    "exllama": (False, 8, "AutoGPTQ's exllama kernel (transformers 4.x and optimum loading GPTQ checkpoints through "
                          "AutoGPTQ; its autogptq_post_init: matmul_recons_thd = 8, exllama's default; q4_matmul "
                          "reconstructs from x_height >= it): its GEMV below 8 rows, the 16-bit GEMM from there",
                "AutoGPTQ's exllama kernel, dequantized to 16 bits from 8 rows"),
    "exllamav2": (False, 51, "ExLlamaV2's GPTQ kernel (AutoGPTQ's exllamav2 backend, and vLLM's `gptq` before "
                             "gptq_marlin: csrc/quantization/gptq/q_gemm.cu, size_m > MAX_Q_GEMM_ROWS = 50 "
                             "reconstructs the FP16 matrix, then cuBLAS): its kernel to 50 rows, the 16-bit GEMM from "
                             "51",
                  "ExLlamaV2's GPTQ kernel, dequantized to 16 bits past 50 rows"),
}


def int4_cap(kernel: str, fp32_flop_per_s: float, peak_flop_per_s: float, bandwidth_bytes_per_s: float,
             gpu: str = "") -> tuple:
    """The KernelModel's ``int4_cap`` of an int4 ``kernel`` (INT4_KERNELS) on a GPU of datasheet ``fp32_flop_per_s``
    and a roof of 16-bit ``peak_flop_per_s`` and ``bandwidth_bytes_per_s``: AutoAWQ's GEMM as shares of the peak by
    rows M (the GPU's own measured rates where AWQ_GEMM_MEASURED has its catalog name ``gpu``, else AWQ_GEMM scaled by
    the fp32 rates; () for a Marlin-like GEMM), the rows from which the engine dequantizes the weights and runs its
    16-bit GEMM (0: never), and the bandwidth that dequantizing runs at; () for Marlin-like kernels at every size."""
    awq, switch = INT4_KERNELS[kernel][:2]
    if not awq and not switch:
        return ()
    own = AWQ_GEMM_MEASURED.get(gpu)
    s = 1.0 if own else fp32_flop_per_s / AWQ_GEMM_FP32
    curve = tuple((m, r * s / peak_flop_per_s) for m, r in own or AWQ_GEMM) if awq else ()
    return curve, int(switch), float(bandwidth_bytes_per_s)


# Host seconds per eager op: transformers' Python modules and PyTorch's dispatcher, measured with
# `roofcalc measure` on the development machine (a 2-vCPU AMD EPYC VM, transformers 5.24, torch
# 2.13): a two-layer Llama decode step, 89 ops in 1.39 ms, 15.6 us per op on CPU tensors. On a GPU
# each op also calls the CUDA launch API, which the worked example puts at 5-10 us: 15 + 5
# expected, 15 + 10 pessimistic.
HOST_PER_OP = Efficiency(20e-6, 25e-6, note="roofcalc measure on a 2-vCPU EPYC VM: a transformers Llama decode "
                         "step at 15.6 us per op on CPU tensors, plus a CUDA launch of 5 us (pessimistic 10 us: the "
                         "worked example's 5-10 us)")
LAUNCH = Efficiency(5e-6, 10e-6, note="the worked example: one kernel launch costs 5-10 us")
# Collectives: NCCL's ring all-reduce reaches 230-250 GB/s of bus bandwidth on 8 A100 SXM4 over NVLink 3
# (300 GB/s a direction): 0.80 expected, 0.77 at the low end (nccl-tests reference figures quoted by
# docs.alayanew.com, "NCCL-tests in practice", 2026); NVIDIA/nccl issue #1455 finds the same share on
# 8 H100 SXM (ring busbw 365-370 of 450 GB/s, 2 to 8 GPUs).
LINK = Efficiency(0.80, 230 / 300, note="nccl-tests ring all-reduce: 230-250 GB/s bus bandwidth of 300 on 8 A100 "
                  "SXM4 (docs.alayanew.com), 365-370 of 450 on 8 H100 SXM (NVIDIA/nccl #1455)")
# A small collective costs a fixed time besides its bytes: 6 us for a small all-reduce of 2 H100s under
# CUDA graphs (NVIDIA/nccl issue #1259, NCCL 2.20), 12.5 us on 8 H20s in one node (deepseek-ai/DeepEP
# issue #303, nccl-tests at 4-16 bytes); across two nodes of 8 H20s over InfiniBand NDR, 46-47 us
# (NVIDIA/nccl issue #1244).
LATENCY = {"link": Efficiency(6e-6, 12.5e-6, note="small all-reduces inside a node: 6 us on 2 H100s (NVIDIA/nccl "
                              "#1259), 12.5 us on 8 H20s (deepseek-ai/DeepEP #303)"),
           "network": Efficiency(46e-6, 47.5e-6, note="small all-reduces over two nodes of 8 H20s, InfiniBand NDR: "
                                 "46-47.5 us (NVIDIA/nccl #1244)")}
# The fixed cost of one GPU kernel: what the smallest kernel of its class takes whatever its size.
# NVIDIA AIConfigurator 0.12.0 (pip aiconfigurator-core, Apache-2.0), vLLM tables (0.24.0; A100 0.14.0),
# the median of each table's five fastest rows, on A100 SXM, H100 SXM, H200 SXM, B200 SXM and L40S:
#   GEMM (bf16, one linear of a CUDA graph of six)     2.51, 2.49, 2.44, 1.79, 1.68 us: median 2.44
#   activation quantization (scale_matrix: one elementwise pass)  -, 1.90, 1.73, 1.74, 1.47 us: median 1.735
#   decode attention (generation_attention)           10.67, 9.96, 9.71, 8.51, 7.17 us: median 9.71
#   prefill attention (context_attention)             10.68, 10.01, 9.81, 7.41, 5.95 us: median 9.81
# Both attention calls also write the new K and V into the cache, one elementwise kernel that roofcalc
# counts apart (kv_cache_write): its fixed cost is taken off theirs. Pessimistic ends: the slowest GPU.
# One figure for every GPU until per-GPU fits replace it; a kernel of n launches pays it n times.
_STREAM_FIXED = 1.735e-6
GPU_FIXED = {
    "gemv": Efficiency(2.44e-6, 2.51e-6, note="AIConfigurator 0.12 vLLM GEMM tables, the five fastest rows on "
                       "A100/H100/H200/B200/L40S: 1.68-2.51 us, median 2.44"),
    "gemm": Efficiency(2.44e-6, 2.51e-6, note="AIConfigurator 0.12 vLLM GEMM tables, the five fastest rows on "
                       "A100/H100/H200/B200/L40S: 1.68-2.51 us, median 2.44"),
    "attention": Efficiency(9.71e-6 - _STREAM_FIXED, 10.67e-6 - 1.90e-6, note="AIConfigurator 0.12 vLLM decode "
                            "attention, the five fastest rows: 7.17-10.67 us, median 9.71, less the cache write's "
                            "elementwise kernel"),
    "attention_compute": Efficiency(9.81e-6 - _STREAM_FIXED, 10.68e-6 - 1.90e-6, note="AIConfigurator 0.12 vLLM "
                                    "prefill attention, the five fastest rows: 5.95-10.68 us, median 9.81, less the "
                                    "cache write's elementwise kernel"),
    "stream": Efficiency(_STREAM_FIXED, 1.90e-6, note="AIConfigurator 0.12 vLLM activation quantization "
                         "(scale_matrix), the five fastest rows on H100/H200/B200/L40S: 1.47-1.90 us, median 1.735"),
}
CPU_HOST_PER_OP = Efficiency(15e-6, 25e-6, note="roofcalc measure on a 2-vCPU EPYC VM: a transformers Llama "
                             "decode step at 15.6 us per op; pessimistic +10 us")


@dataclass(frozen=True)
class EngineHost:
    """An engine's host time per step outside its kernels (scheduler, sampler, detokenizer): a fixed part
    and a part per sequence of the step. ``overlap``: it runs while the device runs (an overlap or async
    scheduler) and joins the host's side of the step; else the device waits for it, every step. Presets
    and their sources: engines.py; the default, none, is transformers' generate as the worked example."""

    fixed_s: Efficiency = Efficiency(0.0, 0.0, note="none")
    per_sequence_s: Efficiency = Efficiency(0.0, 0.0, note="none")
    overlap: bool = False
    engine: str = ""  # the preset's name (engines.ENGINES), "" for none
    tables: str = ""  # whose measured kernel tables the preset runs on (TABLE_ENGINES), "" for its name's
    # decode attention reads a GQA group's KV once per query head (a kernel with no group sharing)
    decode_every_head: bool = False
    # the kernel its int4 (W4A16) matmuls run (INT4_KERNELS; "" is "marlin")
    int4_kernel: str = ""
    # more host time per step when the step runs on several GPUs (the engine's worker RPC), else none
    ranks_s: Efficiency = Efficiency(0.0, 0.0, note="none")
    # how it runs weight-only int4 experts: "marlin" by Marlin's MoE kernel (engines.Engine.marlin_moe); "" by other
    # kernels (an engine without it); or the checkpoint's format whose experts it runs by that format's own kernels
    # where it would otherwise run Marlin's ("GGUF", "bitsandbytes": engines.marlin_host)
    marlin_moe: str = ""
    marlin_capability: float = 0.0  # the least compute capability it runs that kernel on (engines.Engine)
    # the most tokens a step may hold and still replay its CUDA graph (0: any); a step of more launches each kernel,
    # as --impl fused (engines.Engine.graph_tokens: llama.cpp's, one)
    graph_tokens: int = 0

    def graphed(self, impl: str, tokens):
        """Whether a step of ``tokens`` (a number or an array) under ``impl`` replays a CUDA graph."""
        if impl != "cuda-graph":
            return False
        if not self.graph_tokens:
            return True
        return _where(tokens <= self.graph_tokens, True, False) if _is_array(tokens) else tokens <= self.graph_tokens

    @property
    def table_engine(self) -> str:
        """The engine whose measured kernel tables (and collectives) this preset names (TABLE_ENGINES, or another
        engine's name: vLLM's tables then, with_fits)."""
        return self.tables or self.engine

    @property
    def tables_used(self) -> str:
        """Whose measured kernel tables the preset runs on: its own engine's where measured, else vLLM's."""
        return self.table_engine if self.table_engine in TABLE_ENGINES else "vllm"

    def seconds(self, sequences, pessimistic: bool = False, gpus: int = 1):
        ranks = self.ranks_s.pick(pessimistic) if gpus > 1 else 0.0
        return self.fixed_s.pick(pessimistic) + sequences * self.per_sequence_s.pick(pessimistic) + ranks

    @property
    def none(self) -> bool:
        return not any((self.fixed_s.expected, self.fixed_s.pessimistic, self.per_sequence_s.expected,
                        self.per_sequence_s.pessimistic, self.ranks_s.expected, self.ranks_s.pessimistic))

    @property
    def waited(self) -> bool:
        """Whether the device waits for this host time every step (StepTimes.serial_s) rather than overlapping it."""
        return not self.none and not self.overlap


NO_ENGINE_HOST = EngineHost()


@dataclass(frozen=True)
class GemmFit:
    """A measured GPU's fitted GEMM cost (data/kernel_fits.json, cross-validated in docs/kernel_fits.md):

        t = fixed + max(2·M_tile·N·K / (P · e_c(M)·f_c(N)·f_c(K)), bytes / (B · e_m(M)·f_m(N)·f_m(K)))
            [+ 3·M·K / (B · e_quant): an fp8 GEMM's input quantization, in series]

    each efficiency and factor piecewise linear in log e over log2 of its size between the fitted knots,
    flat beyond them; M_tile is M rounded up as the kernels tile it (to the next power of two up to ``tile``
    rows, then to a multiple of ``tile``). Fractions of the datasheet roofs the fit used; ``scale_c`` and
    ``scale_m`` move them onto another roof (a measured one, KernelModel.on_roof)."""

    fixed_s: float
    tile: int
    e_compute: tuple
    e_memory: tuple
    n_compute: tuple
    k_compute: tuple
    n_memory: tuple
    k_memory: tuple
    e_quant: float = 0.0  # fp8: the input quantization's share of the bandwidth (0: none)
    source: str = ""
    value_bytes: float = 1.0  # bytes a weight and an input value take in the fitted form (NVFP4: 0.5 + 1/16 scale)
    scale_c: float = 1.0
    scale_m: float = 1.0

    @classmethod
    def from_doc(cls, d: Mapping, source: str) -> "GemmFit":
        pts = lambda name: tuple((float(x), float(e)) for x, e in d[name])  # noqa: E731
        return cls(float(d["fixed_s"]), int(d["tile"] or 1), pts("e_compute"), pts("e_memory"),
                   pts("n_factor_compute"), pts("k_factor_compute"), pts("n_factor_memory"),
                   pts("k_factor_memory"), float(d.get("e_quant") or 0.0), source,
                   value_bytes=float(d.get("value_bytes") or 1.0))

    def efficiencies(self, rows, width, depth):
        """(compute-side e, memory-side e) at M = ``rows`` (a number or an array), N = ``width`` and
        K = ``depth`` (0: unknown, factor 1), the tile's padding taken into the compute side."""
        tiled = _tiled(rows, self.tile)
        comp = _interp_geo(rows, self.e_compute) * rows / tiled
        mem = _interp_geo(rows, self.e_memory)
        if width:
            comp, mem = comp * _interp_geo(width, self.n_compute), mem * _interp_geo(width, self.n_memory)
        if depth:
            comp, mem = comp * _interp_geo(depth, self.k_compute), mem * _interp_geo(depth, self.k_memory)
        return _minimum(comp * self.scale_c, 1.0), _minimum(mem * self.scale_m, 1.0)

    def quant_s(self, t_memory, rows, width, depth):
        """An fp8 GEMM's input quantization in series: 3·M·K bytes at e_quant of the bandwidth, from the
        GEMM's own memory time (its bytes M·K + N·K + 2·M·N at 1-byte weights and inputs, fp16 outputs; NVFP4's
        at ``value_bytes``)."""
        if not self.e_quant or not (width and depth):
            return 0.0
        # (fp8's form keeps the 1-byte input it was first written with; NVFP4's counts its input as roofcalc does, in
        # 16 bits, so that its quantization reads 3·M·K bytes at e_quant whatever M)
        own = (2.0 if self.value_bytes < 1 else 1.0) * rows * depth + self.value_bytes * width * depth + 2 * rows * width
        # not capped at 1: the quantization's bytes are not the floor's, and its input is often still in L2
        return t_memory * (3 * rows * depth / own) / (self.e_quant * self.scale_m)


@dataclass(frozen=True)
class AttentionFit:
    """A measured GPU's fitted attention call (data/kernel_fits.json, cross-validated in docs/kernel_fits.md),
    on B sequences, N query heads, K KV heads, head dim H, L keys (decode) or a prompt of S tokens (prefill):

        decode   t = fixed + max(4·B·N·L_t·H / (P · e_c), KV bytes at L_t / (B · e_m(L_t)·f(B·K)·f(H)·f(N/K)
                                                          ·f_MHA(B·K)·f(window)))
                     + B·K · item_s                      (a time per work item, in series)
        prefill  t = fixed + max(FLOPs at S_t / (P · e_c(S)·f(H)·f(N/K)·f(items)·f(window)),
                                 bytes / (B · e_m(S)·f(H)·f(N/K)))   items: B·N·⌈S/128⌉ query tiles

    L_t and S_t: L and S rounded up to the kernel's tile (its KV and query tiles); a windowed decode with
    ``per_head`` reads its KV once per query head (FlashAttention-2 gives up its GQA packing under a window), one
    with ``items_per_head`` runs B·N work items but reads its KV once per KV head (the group's shared in L2), and
    with ``l2_reread`` too, the group's other N - K query heads read again what L2 no longer holds of one head's
    pass over the batch (_l2_misses of its B·L_t·H·2·e bytes of K and V, e bytes a value: K counted heads become
    K + (N - K)·misses), and
    with ``every_head`` every decode call does: it is read as an MHA call of N heads (B·N work items, the factors
    at N/K = 1, the MHA one), each head reading its group's KV, K/N of those reads the counted bytes (an engine's
    kernel that shares no group's KV).
    f_MHA: a second work-item factor where N = K (a kernel that splits a GQA group's KV across blocks but not
    an MHA head's); f(window): where the context (the positions before the window's cap) passes the window.
    Knot curves as GemmFit's; a head-dim factor is the fitted one at that head dim, 1 elsewhere; ``peak_ratio``
    moves a compute efficiency of an fp8 peak onto the 16-bit one the roof has."""

    kind: str  # "decode" | "prefill"
    fixed_s: float
    tile: int
    per_head: bool
    peak_ratio: float
    e_compute: tuple
    e_memory: tuple
    item_s: float = 0.0
    window_factor: float = 1.0
    items_mem: tuple = ()
    gqa_comp: tuple = ()
    gqa_mem: tuple = ()
    items_comp: tuple = ()
    hd_comp: tuple = ()  # ((head dim, factor), ...)
    hd_mem: tuple = ()
    source: str = ""
    scale_c: float = 1.0
    scale_m: float = 1.0
    mha_items_mem: tuple = ()
    window_mem: float = 1.0
    mmha_mem: tuple = ()  # TensorRT-LLM's fallback decode kernel: a factor by query heads per KV head
    mmha_rule: tuple = ()  # (SMs, largest XQA group, heuristic?): where it runs (fitting.mmha_rows)
    # decode: an MHA call of the N query heads, each reading its group's KV (an engine whose kernel shares no
    # group's KV: EngineHost.decode_every_head, set by roofline.kernel_model)
    every_head: bool = False
    tables: str = ""  # another engine's form the preset takes on this GPU (benchmarks/ship_fits.py), "" for its own
    # a windowed decode call's work items one a query head, its KV read once a KV head (fitting.decode_cost's
    # per_head "items": FlashAttention-2 under a window, the group's KV shared through L2)
    items_per_head: bool = False
    # with items_per_head: (L2 bytes, policy) where the group's other query heads read again from DRAM what L2 no
    # longer holds of one query head's pass over the batch (fitting.L2_REREAD: FlashAttention-2's grid order)
    l2_reread: tuple = ()
    # TensorRT-LLM's decode: (SMs, largest XQA group, heuristic?), the rule of the rows its XQA kernel runs, which
    # alone take the tile (fitting.xqa_rows); its fallback kernel and an MHA call read the KV token by token
    tile_xqa: tuple = ()

    @classmethod
    def from_doc(cls, d: Mapping, source: str) -> "AttentionFit":
        pts = lambda name: tuple((float(x), float(e)) for x, e in d.get(name, ()))  # noqa: E731
        hd = lambda name: tuple(sorted((int(k), float(v)) for k, v in d.get(name, {}).items()))  # noqa: E731
        mm = d.get("mmha")
        return cls(d["kind"], float(d["fixed_s"]), int(d["tile"] or 1), bool(d["per_head"]), float(d["peak_ratio"]),
                   pts("e_compute"), pts("e_memory"), float(d.get("item_s") or 0.0), float(d.get("window_factor", 1.0)),
                   pts("items_factor_mem"), pts("gqa_factor"), pts("gqa_factor_mem"), pts("items_factor"),
                   hd("hd_factor"), hd("hd_factor_mem"), source, mha_items_mem=pts("mha_items_factor_mem"),
                   window_mem=float(d.get("window_factor_mem", 1.0)),
                   mmha_mem=tuple((float(x), float(e)) for x, e in mm["factor_mem"]) if mm else (),
                   mmha_rule=(int(mm["sms"]), int(mm["max_group"]), bool(mm["heuristic"])) if mm else (),
                   tables=d.get("tables", ""), items_per_head=bool(d.get("items_per_head", False)),
                   l2_reread=_l2_reread(d),
                   tile_xqa=_tile_xqa(d))

    def _decode_length(self, b, h, g, kv):
        """The KV length a decode call reads: ``kv`` rounded up to the tile (TensorRT-LLM's tile is XQA's: an MHA
        call and its fallback kernel read token by token)."""
        lt = _ceil_to(kv, self.tile)
        if self.tile_xqa:
            lt = kv if h <= g else _where(_mmha_runs(self.tile_xqa, b, h, g, kv), kv, lt)
        return lt

    def reread_words(self, attn) -> str:
        """"... a query head's pass over the batch, 80 MiB, passes L2 (72 MiB): the group's 24 other query heads
        reread 19% of it" where this windowed decode rereads (l2_reread); "" where it does not (or for a sweep). In
        MiB, the unit L2 is given in."""
        b, h, g, _, kv, d, w, e = attn[:8]
        if not (self.kind == "decode" and self.items_per_head and self.l2_reread and w) or \
                _is_array(b, kv) or h <= g:
            return ""
        sweep = b * self._decode_length(b, h, g, kv) * d * 2 * e
        misses = _l2_misses(sweep, *self.l2_reread)
        if not misses:
            return ""
        return (f"FlashAttention-2 under a window: a query head's pass over the batch, {sweep / 2**20:,.0f} MiB, "
                f"passes L2 ({self.l2_reread[0] / 2**20:,.0f} MiB): the group's {h - g:g} other query heads reread "
                f"{misses:.0%} of it")

    def mmha(self, b, h, g, kv):
        """Whether TensorRT-LLM runs this decode call on its fallback kernel (fitting.mmha_rows' rule: more
        query heads per KV head than XQA takes, or too little work for its heuristic); numbers or arrays."""
        return _mmha_runs(self.mmha_rule, b, h, g, kv)

    def terms(self, attn):
        """(compute-side e, memory-side e, seconds in series) of a call of sizes ``attn``
        (batch, heads, kv_heads, q_len, kv_len, head_dim, window, KV bytes per value[, context]), batch and
        lengths numbers or arrays."""
        b, h, g, q, kv, d, w = attn[:7]
        share = 1.0  # every_head: an MHA call of the N query heads, each reading its group's KV (K/N of the reads
        if self.every_head and self.kind == "decode":  # the counted bytes hold)
            share, g = g / h, h
        ratio = h / g
        f_hd_c, f_hd_m = (dict(self.hd_comp).get(d, 1.0), dict(self.hd_mem).get(d, 1.0))
        f_gqa_c = _interp_geo(ratio, self.gqa_comp) if self.gqa_comp else 1.0
        f_gqa_m = _interp_geo(ratio, self.gqa_mem) if self.gqa_mem else 1.0
        if self.kind == "decode":
            lt = self._decode_length(b, h, g, kv)
            heads = h if self.per_head and w else g
            items = b * (h if self.items_per_head and w else heads)
            if self.items_per_head and self.l2_reread and w:  # the group's other query heads reread what L2
                # no longer holds of one query head's pass over the batch (K and V at the tiled length)
                heads = g + (h - g) * _l2_misses(b * lt * d * 2 * attn[7], *self.l2_reread)
            comp = _interp_geo(1.0, self.e_compute) * kv / lt
            mem = (_interp_geo(lt, self.e_memory) * f_hd_m * f_gqa_m * kv * g / (lt * heads)
                   * (_interp_geo(items, self.items_mem) if self.items_mem else 1.0))
            if self.mha_items_mem and h == g:
                mem = mem * _interp_geo(items, self.mha_items_mem)
            if w and self.window_mem != 1.0:  # the window binds: the context passes it
                mem = mem * _where((attn[8] if len(attn) > 8 else kv) > w, self.window_mem, 1.0)
            if self.mmha_mem:  # TensorRT-LLM's fallback kernel: each query head reads its group's KV, partly
                # through L2 (never under every_head, whose call is MHA)
                mem = mem * _where(self.mmha(b, h, g, kv), _interp_geo(ratio, self.mmha_mem), 1.0)
            series = items * self.item_s
        else:
            st = _ceil_to(q, self.tile)
            pairs, pairs_t = _pairs(q, w), _pairs(st, w)
            comp = _interp_geo(q, self.e_compute) * f_hd_c * f_gqa_c * pairs / pairs_t
            if self.items_comp:  # work items: B·N query tiles of 128
                comp = comp * _interp_geo(b * h * _ceil_to(q, 128) / 128, self.items_comp)
            if w:
                comp = comp * _where(q > w, self.window_factor, 1.0)
            mem = _interp_geo(q, self.e_memory) * f_hd_m * f_gqa_m
            series = 0.0
        comp = comp * self.peak_ratio
        # every_head: the MHA call's efficiency, capped as any call's, then K/N of it (its reads per counted byte)
        return _minimum(comp * self.scale_c, 1.0), _minimum(mem * self.scale_m, 1.0) * share, series


# A gated delta net's kernels (Qwen3-Next's and Qwen3.5's linear attention), by the traced op each one is: the
# decode step's state update (the engines' fused_recurrent_gated_delta_rule kernels), the prefill's chunked rule
# (their chunk_gated_delta_rule), and the causal conv before it, a decode step's (causal_conv1d_update) and a
# prefill's (causal_conv1d_fn). AIConfigurator's gdn_perf tables time each of the four under vLLM, SGLang and
# TensorRT-LLM (benchmarks/fit_kernels.py, GdnFit).
GDN_CLASSES = {"gdn_decode": "recurrent_gated_delta_rule", "gdn_prefill": "chunk_gated_delta_rule",
               "gdn_conv_update": "causal_conv1d_update", "gdn_conv": "causal_conv1d_fn"}
GDN_PREFILL = ("gdn_prefill", "gdn_conv")  # the classes of a prefill: a sequence's tokens in turn


def gdn_class(name: str) -> str:
    """The gated-delta-net class of a traced kernel (by its op, the name's last part), "" for any other."""
    op = name.rpartition(".")[2].split("[")[0].split("#")[0]
    return next((cls for cls, key in GDN_CLASSES.items() if op.endswith(key)), "")


def gdn_items(cls: str, nbytes, b, s):
    """A gated-delta-net call's parallel work (numbers or arrays), from its counted bytes (fitting.gdn_counts) and
    its b sequences of s tokens: the (sequence, value head) pairs of the delta rule, b·hv, and the conv's b·C/128
    (its C channels in heads of 128). The bytes give them exactly at the tables' head dims (128) and approximately
    at others, which no table measured."""
    if cls == "gdn_decode":
        return nbytes / (8 * 128 * 128 + 2 * 128 + 2 * 128 + 6)
    if cls == "gdn_prefill":
        return nbytes / ((2 * 128 + 2 * 128 + 6) * s + 4 * 128 * 128)
    if cls == "gdn_conv_update":
        return b * nbytes / (14 * b + 8) / 128
    return b * nbytes / (4 * b * s + 6 * b + 8) / 128


@dataclass(frozen=True)
class GdnFit:
    """A measured GPU's fitted gated-delta-net call (data/kernel_fits.json, cross-validated in docs/kernel_fits.md):

        t = fixed + max(FLOPs / (P · e_c(bytes)·f(items)·f(tokens)), bytes / (B · e_m(bytes)·f_m(items))) + b·seq_s

    on the FLOPs and bytes roofcalc counts for it (fitting.gdn_counts), items its parallel work (gdn_items), tokens
    a prefill's tokens a sequence, b its sequences (seq_s: a prefill's only). Knot curves as GemmFit's; a factor
    curve absent is 1."""

    fixed_s: float
    e_compute: tuple
    e_memory: tuple
    items_comp: tuple = ()
    items_mem: tuple = ()
    tokens_comp: tuple = ()
    seq_s: float = 0.0
    source: str = ""
    scale_c: float = 1.0
    scale_m: float = 1.0
    tables: str = ""  # another engine's form the preset takes on this GPU (benchmarks/ship_fits.py), "" for its own

    @classmethod
    def from_doc(cls, d: Mapping, source: str) -> "GdnFit":
        pts = lambda name: tuple((float(x), float(e)) for x, e in d.get(name, ()))  # noqa: E731
        return cls(float(d["fixed_s"]), pts("e_compute"), pts("e_memory"), pts("items_factor"),
                   pts("items_factor_mem"), pts("tokens_factor"), float(d.get("seq_s") or 0.0), source,
                   tables=d.get("tables", ""))

    def terms(self, gdn: tuple):
        """(compute-side e, memory-side e, seconds in series) of a call (class, sequences, tokens a sequence, bytes
        it moves: Term.gdn), numbers or arrays."""
        cls, b, s, nbytes = gdn
        items = gdn_items(cls, nbytes, b, s)
        comp = _interp_geo(nbytes, self.e_compute) * (_interp_geo(items, self.items_comp) if self.items_comp else 1.0)
        if self.tokens_comp and cls in GDN_PREFILL:
            comp = comp * _interp_geo(s, self.tokens_comp)
        mem = _interp_geo(nbytes, self.e_memory) * (_interp_geo(items, self.items_mem) if self.items_mem else 1.0)
        series = b * self.seq_s if cls in GDN_PREFILL else 0.0
        return _minimum(comp * self.scale_c, 1.0), _minimum(mem * self.scale_m, 1.0), series


# The rank's expert width I' a fused-MoE form takes as aligned: a multiple of 16. The measured tables' rows of other
# widths (Nemotron-3 Nano's 1,856 and a 704-wide model's at TP 8, 16 and 32) run slower at every size on some
# kernels' tables (vLLM's Triton kernel on H100 and H200: about twice the time; its fp8 kernel on the L40S far
# more), where the K of the down GEMM is not a whole number of a 16-bit tensor-core MMA's K, 16;
# fitting.moe_design fits the factors per table, and a table keeps them only where they predict its held-out shapes
# better (benchmarks/fit_kernels.py run_class; none for MXFP4 experts, which the engines pad to an aligned width).
MOE_ALIGN = 16


@dataclass(frozen=True)
class MoEFit:
    """A measured GPU's fitted fused MoE layer (data/kernel_fits.json, cross-validated in docs/kernel_fits.md): the
    routed experts of one layer on one rank as vLLM's FusedMoE runs them in one call (top-k selection, the
    tokens' alignment to experts, gate/up, SiLU-and-multiply, down, the weighted sum; AIConfigurator's
    collector/vllm/collect_moe.py, benchmarks/fit_kernels.py moe_rows), or SGLang's or TensorRT-LLM's fused MoE
    for their presets (the same form on their own tables):

        t = fixed + max(FLOPs / (P · e_c(x)·f_c(H)·f_c(I')), bytes / (B · e_m(x)·f_m(H)·f_m(I'))) + pairs · pair_s

    x = tokens per expert (T·k/E), H the hidden size, I' the rank's expert width, pairs the routed (token,
    expert) pairs the rank runs (T·k, the sort and alignment's work, in series); FLOPs and bytes are roofcalc's
    three experts kernels' (gate_up_proj, act_mul, down_proj: 2·T·k·3·H·I' and the touched experts' weights,
    E·(1 − (1 − k/E)^T) of them under uniform routing, plus activations). Knot curves as GemmFit's; ``peak_ratio``
    moves a compute efficiency of the fp8 (fp4) peak onto the 16-bit one the roof has (as AttentionFit's). H and I'
    are read inside the ranges the table measured (``ranges``: beyond them, as the nearest measured size: the
    factors' outer knots are not pinned by any row). The efficiencies are not capped at 1 (the form's product:
    above 1 where the fixed cost overlaps a small call's streaming); the call's time is held at its floor
    instead (_moe_share; fitting.evaluate's ``cap``, with which the form is cross-validated)."""

    fixed_s: float
    pair_s: float
    peak_ratio: float
    e_compute: tuple
    e_memory: tuple
    h_compute: tuple
    i_compute: tuple
    h_memory: tuple
    i_memory: tuple
    source: str = ""
    scale_c: float = 1.0
    scale_m: float = 1.0
    ranges: tuple = ()  # ((H lo, H hi), (I' lo, I' hi)) the table measured; () for no limit
    tables: str = ""  # another engine's tables the form was fitted on ("sglang": vLLM's A100 has no balanced rows)
    # a memory-side factor by the distinct experts the call reads on the rank (FlashInfer's CUTLASS kernel's
    # tables: fitting.moe_design), 1 at one expert; () for none
    t_memory: tuple = ()
    # SGLang's Triton kernel: a compute-side factor by tokens per expert for a shape it has no tuned tiles for on this
    # GPU (get_default_config's 64 x 64 x 32), and the (experts on the rank, width over TP) pairs it has them for
    # (benchmarks/sglang_moe_configs.py); () for none
    untuned: tuple = ()
    tuned: frozenset = frozenset()
    # (compute-side, memory-side) factors for a call whose rank's expert width I' is not a multiple of MOE_ALIGN
    # (fitting.moe_design: the tables' rows of such widths run slower at every size); () for none
    misaligned: tuple = ()
    # (I' multiple, H multiple) the kernel stores MXFP4 experts at (fitting.mxfp4_padding; 0: as is): the form was
    # fitted on the padded sizes and is read there (padded_shares); () for none; and the bytes a weight of the
    # table's format, which the stored work's bytes are counted with
    pad: tuple = ()
    pad_weight_bytes: float = 0.0
    # (bytes a weight, scale block) where the kernel runs every routed pair on each expert-parallel rank, another
    # rank's at a zero weight through one of its own experts (fitting.EVERY_PAIR: TensorRT-LLM's fp8 block-scale
    # MoE on SM120): the form was fitted on those rows and is read at them (every_pair_work); () for a kernel that
    # runs the rank's own pairs only
    every_pair: tuple = ()

    @classmethod
    def from_doc(cls, d: Mapping, source: str) -> "MoEFit":
        pts = lambda name: tuple((float(x), float(e)) for x, e in d[name])  # noqa: E731
        r = d.get("ranges") or {}
        ranges = tuple((float(r[k][0]), float(r[k][1])) for k in ("hidden", "inter")) if r else ()
        return cls(float(d["fixed_s"]), float(d.get("pair_s") or 0.0), float(d["peak_ratio"]), pts("e_compute"),
                   pts("e_memory"),
                   pts("h_factor_compute"), pts("i_factor_compute"), pts("h_factor_memory"), pts("i_factor_memory"),
                   source, ranges=ranges, t_memory=pts("t_factor_memory") if d.get("t_factor_memory") else (),
                   tables=d.get("tables", ""),
                   untuned=pts("untuned_factor_compute") if d.get("untuned_factor_compute") else (),
                   tuned=frozenset((int(e), int(n)) for e, n in d.get("tuned", ())),
                   misaligned=(float(d["misaligned_factor_compute"]), float(d["misaligned_factor_memory"]))
                   if d.get("misaligned_factor_compute") else (),
                   pad=(int(d["pad"]["inter"]), int(d["pad"]["hidden"])) if d.get("pad") else (),
                   pad_weight_bytes=float(d["pad"]["weight_bytes"]) if d.get("pad") else 0.0,
                   every_pair=(float(d["every_pair"]["weight_bytes"]), int(d["every_pair"]["block"]))
                   if d.get("every_pair") else ())

    @staticmethod
    def _shape(experts, inter) -> tuple[int, int]:
        """(experts on the rank, expert width) as whole numbers (or any two sizes: padded_words passes the hidden
        size first); a sweep's array of either holds one shape."""
        if _is_array(experts) or _is_array(inter):
            import numpy as np

            experts, inter = (np.asarray(v, dtype=float).flat[0] for v in (experts, inter))
        return int(experts), int(round(float(inter)))

    def is_tuned(self, experts, inter) -> bool:
        """Whether the engine runs tuned tiles for ``experts`` on the rank and its expert width ``inter`` (as the
        kernel stores it, ``pad``: SGLang looks its configuration up by the stored width): always, but for SGLang's
        Triton kernel on a shape its package has no configuration for."""
        return not self.untuned or self._shape(experts, self.padded(0, inter)[1]) in self.tuned

    def untuned_words(self, experts, inter) -> str:
        """"no tuned configuration for E experts of width W" for a shape run at the default tiles, else ""."""
        if self.is_tuned(experts, inter):
            return ""
        e, w = self._shape(experts, self.padded(0, inter)[1])
        return f"no tuned configuration for {e:,} experts of width {w:,}"

    def is_misaligned(self, inter) -> bool:
        """Whether the form takes its own factors for its rank's expert width ``inter``: one not a multiple of
        MOE_ALIGN, on a form whose table's rows of such widths gave it factors (``misaligned``)."""
        return bool(self.misaligned) and self._shape(0, inter)[1] % MOE_ALIGN != 0

    def misaligned_words(self, inter) -> str:
        """"expert width W a rank, not a multiple of 16: x... the memory rate, x... the compute rate of an aligned
        width" for a misaligned call (is_misaligned), else ""."""
        if not self.is_misaligned(inter):
            return ""
        c, m = self.misaligned
        return (f"expert width {self._shape(0, inter)[1]:,} a rank, not a multiple of {MOE_ALIGN}: ×{m:.2f} the "
                f"memory rate, ×{c:.2f} the compute rate of an aligned width")

    def padded(self, hidden, inter) -> tuple:
        """(H, I') as the kernel stores the experts (``pad``): each rounded up to its multiple."""
        if not self.pad:
            return hidden, inter
        return _ceil_to(hidden, self.pad[1]), _ceil_to(inter, self.pad[0])

    def padded_shares(self, per_expert, hidden, inter, touched, experts) -> tuple:
        """(compute share, memory share): the model's FLOPs and bytes over the ones the kernel runs at the sizes it
        stores the experts at (``pad``), both counted as the fit counts a call (fitting.moe_cost: a gated call,
        ``per_expert`` tokens per expert over the rank's ``experts``, ``touched`` of them read, the weights at
        ``pad_weight_bytes``). A prediction's counted FLOPs and bytes, the model's, over the form's
        efficiencies times these shares are the stored work over the form's own (its fit's) efficiencies:
        H·I' / (H_pad·I'_pad) on the compute side, exactly; on the memory side a share nearer 1 where the
        activations (2·H + 6·I' a routed row, which grow less) weigh against the weights. (1, 1) without padding."""
        if not self.pad:
            return 1.0, 1.0
        from .fitting import moe_cost

        hp, ip = self.padded(hidden, inter)
        rows = per_expert * experts
        real, stored = (moe_cost(rows, touched, experts, h, i, self.pad_weight_bytes)["bytes"]
                        for h, i in ((hidden, inter), (hp, ip)))
        share_m = real / stored
        return hidden * inter / (hp * ip), share_m if _is_array(share_m) and share_m.ndim else float(share_m)

    def padded_words(self, hidden, inter) -> str:
        """"MXFP4 experts stored padded by the kernel: width 360 → 384 a rank" (and the hidden size where it grows)
        where the kernel's padding (``pad``) makes the stored experts larger than the model's, else ""."""
        if not self.pad:
            return ""
        (hp, ip), (h, i) = (self._shape(*self.padded(hidden, inter)), self._shape(hidden, inter))
        grew = [f"width {i:,} → {ip:,} a rank"] if ip != i else []
        grew += [f"hidden {h:,} → {hp:,}"] if hp != h else []
        return f"MXFP4 experts stored padded by the kernel: {', '.join(grew)}" if grew else ""

    def every_pair_work(self, per_expert, rank_experts: int, experts: int, hidden, inter, touched):
        """(tokens per expert, compute factor, memory factor, experts read) of a call as the kernel runs it: where it
        runs every routed pair on each of ep = E / (the rank's experts) ranks (``every_pair``), the layer's T·k
        pairs over the rank's experts, ep times the rank's own, their FLOPs ep times, their bytes the experts read
        (the rank's reached and the two another rank's pairs are clamped to, its first and last: a middle rank's,
        the step's slowest; rank 0's, which the measured tables time, has only its last, fitting.balanced_routing)
        and every pair's activations (fitting.moe_cost, gated, at the form's bytes a weight and scale block) over
        the rank's own; (per_expert, 1, 1, touched) otherwise."""
        return every_pair_work(self.every_pair, per_expert, rank_experts, experts, hidden, inter, touched)

    def every_pair_words(self, rank_experts: int, experts: int) -> str:
        """"every routed pair on each of the 8 ranks (another rank's at a zero weight): ×8 the rank's GEMM work"
        where the kernel runs them (``every_pair``) under expert parallelism, else ""."""
        return every_pair_words(rank_experts, experts) if self.every_pair else ""

    def efficiencies(self, per_expert, hidden, inter, touched=1.0, experts=0):
        """(compute-side e, memory-side e) at ``per_expert`` tokens per expert (a number or an array), hidden size
        ``hidden``, the rank's expert width ``inter``, ``touched`` distinct experts read on the rank and its
        ``experts`` (0: a shape taken as tuned, is_tuned). With ``pad``, the form is read at the sizes the kernel
        stores the experts at (a prediction takes these times padded_shares)."""
        slow = _geo(per_expert, self.untuned) if experts and not self.is_tuned(experts, inter) else 1.0
        mis_c, mis_m = self.misaligned if self.is_misaligned(inter) else (1.0, 1.0)
        hidden, inter = self.padded(hidden, inter)
        if self.ranges:
            (h_lo, h_hi), (i_lo, i_hi) = self.ranges
            hidden, inter = _minimum(_maximum(hidden, h_lo), h_hi), _minimum(_maximum(inter, i_lo), i_hi)
        comp = _geo(per_expert, self.e_compute) * _interp_geo(hidden, self.h_compute) * \
            _interp_geo(inter, self.i_compute)
        mem = _geo(per_expert, self.e_memory) * _interp_geo(hidden, self.h_memory) * \
            _interp_geo(inter, self.i_memory)
        if self.t_memory:
            mem = mem * _geo(touched, self.t_memory)
        return comp * slow * mis_c * self.peak_ratio * self.scale_c, mem * mis_m * self.scale_m


def marlin_moe_why(engine_host, compute_capability: float | None) -> str:
    """Why a step does not run weight-only int4 experts by Marlin's MoE kernel, whose fitted fused form
    (fitting.MOE_FORMATS "int4", measured under SGLang and vLLM) then does not apply; "" where it does: an engine
    that runs them by other kernels (EngineHost.marlin_moe "": transformers, llama.cpp, TensorRT-LLM), a checkpoint
    whose experts the engine runs by that format's own kernels (a GGUF or bitsandbytes one: engines.marlin_host), or
    a GPU below the engine's least compute capability for it (EngineHost.marlin_capability) or of unknown one."""
    marlin = getattr(engine_host, "marlin_moe", "")
    if not marlin:
        return "int4 experts take Marlin's fused MoE form under --engine vllm and sglang alone"
    if marlin != "marlin":
        return f"a {marlin} checkpoint's experts run the engine's own {marlin} kernels, not Marlin's fused MoE kernel"
    least = engine_host.marlin_capability
    if (compute_capability or 0) < least:
        return f"its int4 experts' kernel, Marlin's MoE, needs compute capability {least:.1f}"
    return ""


def marlin_moe(m: "KernelModel", engine_host, compute_capability: float | None) -> "KernelModel":
    """``m`` without the fitted int4 fused-MoE form where the step does not run Marlin's MoE kernel
    (marlin_moe_why): there its int4 experts keep the GEMM forms."""
    if "int4" not in m.moe_fits or not marlin_moe_why(engine_host, compute_capability):
        return m
    return replace(m, moe_fits={k: v for k, v in m.moe_fits.items() if k != "int4"})


def _geo(x, pts):
    """A knot curve ((x, e), ...) at ``x`` (a number or an array, below 1 too: tokens per expert): log e linear
    in log x between knots, flat beyond them."""
    if _is_array(x):
        return _interp_geo(x, pts)
    lx, kx, ke = math.log(max(x, 1e-30)), [math.log(p[0]) for p in pts], [math.log(p[1]) for p in pts]
    if lx <= kx[0]:
        return pts[0][1]
    for x0, x1, e0, e1 in zip(kx, kx[1:], ke, ke[1:]):
        if lx <= x1:
            return math.exp(e0 + (e1 - e0) * (lx - x0) / (x1 - x0))
    return pts[-1][1]


def fuse_gemms(terms) -> list:
    """The step's terms with each fused GEMM group given its sums: a GEMM that launches (q_proj, gate_proj) and the
    GEMMs that ride on its launch (no launch of their own under the fused launch models: k_proj and v_proj,
    up_proj; roofline.FUSED_RIDERS), of the same input (depth K) and count, run as one GEMM of their summed widths
    N, as vLLM's QKVParallelLinear and MergedColumnParallelLinear and gpt-fast's wqkv do. A rider joins the latest
    launching GEMM of its depth and count before it (a pipeline stage lists a layer kind's kernels apart: q_proj of
    the sliding layers, then of the full ones, then their k_proj). Each member gets (Σ t_compute, Σ t_memory,
    Σ floor, Σ N, Σ weight bytes, the group's launches), read by kernel_terms as its share of the one GEMM; a GEMM
    that launches alone, and every other term, as they are; terms already grouped are left. Scalars or arrays (a
    sweep's)."""
    out = list(terms)
    groups: dict[int, list[int]] = {}
    latest: dict[tuple, int] = {}  # (K, count) -> the latest launching GEMM's index
    for i, t in enumerate(out):
        if t.kind != "matmul" or t.moe or t.group or getattr(t, "gdn", ()):  # (a gated delta net's conv: its own)
            continue
        no_launch = not t.launches.any() if _is_array(t.launches) else t.launches == 0  # a sweep's: one per batch
        if not no_launch:
            latest[(t.depth, t.count)] = i
            groups[i] = [i]
        elif (t.depth, t.count) in latest:
            groups[latest[(t.depth, t.count)]].append(i)
    for lead, members in groups.items():
        if len(members) < 2:
            continue
        ts = [out[g] for g in members]
        sums = (sum(g.t_compute_s for g in ts), sum(g.t_memory_s for g in ts),
                sum(_maximum(g.t_compute_s, g.t_memory_s) for g in ts), sum(g.width for g in ts),
                sum(g.size_bytes for g in ts), out[lead].launches)
        for g in members:
            out[g] = out[g]._replace(group=sums)
    return out


# A fused MoE layer's experts kernel's Term.moe: (class key, the rank's experts, part, the layer's experts, top-k),
# then, once fuse_moe has seen its layer, + (tokens per expert, H, I', sum t_compute, sum t_memory, sum floor)
MOE_BASE, MOE_FUSED = 5, 11


def fuse_moe(terms) -> list:
    """The step's terms with each fused MoE layer's experts kernels (Term.moe: a gate_up_proj, then its act_mul
    and down_proj, and the combine after them, past any collective between; or one "experts" kernel that runs
    them all, its sizes gate_up's) given their layer's sums: (tokens
    per expert, H, I', Σ t_compute, Σ t_memory, Σ floor) after the call's (class key, the rank's experts, part,
    the layer's experts), the experts counts the gate_up_proj's for all four (under EP only the experts
    kernels hold the rank's share: the four are one call). The FLOP and byte sums are the three GEMM-side
    kernels' (the fitted form's, fitting.moe_cost); the floor sum has the combine's too, so that the fused
    call's one time, weighted sum included, is split over the four. Terms already fused, and every other term,
    as they are. Scalars or arrays (a sweep's)."""
    out = list(terms)
    i = 0
    while i < len(out):
        t = out[i]
        if len(t.moe) != MOE_BASE or t.moe[2] not in ("gate_up_proj", "experts"):
            i += 1
            continue
        group = [i]
        j = i + 1
        while t.moe[2] == "gate_up_proj" and j < len(out) and len(out[j].moe) == MOE_BASE and \
                out[j].moe[2] in ("act_mul", "down_proj"):
            group.append(j)
            j += 1
            if out[j - 1].moe[2] == "down_proj":
                break
        k = j
        while k < len(out) and out[k].kind == "collective":
            k += 1
        combine = k if k < len(out) and len(out[k].moe) == MOE_BASE and out[k].moe[2] == "combine" else None
        sums = [0.0, 0.0, 0.0]
        for g in group + ([combine] if combine is not None else []):
            tc, tm = out[g].t_compute_s, out[g].t_memory_s
            gemm_side = g != combine
            sums = [sums[0] + tc * gemm_side, sums[1] + tm * gemm_side, sums[2] + _maximum(tc, tm)]
        sizes = (t.rows / t.moe[1], t.depth, t.width / 2)
        for g in group + ([combine] if combine is not None else []):
            own = out[g].moe
            out[g] = out[g]._replace(moe=(own[0], t.moe[1], own[2], *t.moe[3:MOE_BASE]) + sizes + tuple(sums))
        i = j
    return out


def _pairs(s, w):
    """Causal query-key pairs of a prompt of s tokens, under a window of w keys (0: none)."""
    full = s * (s + 1) / 2
    if not w:
        return full
    return _where(s > w, w * (w + 1) / 2 + (s - w) * w, full)


def _ceil_to(x, tile: int):
    """x rounded up to a multiple of ``tile``."""
    if tile <= 1:
        return x
    if _is_array(x):
        import numpy as np

        return np.ceil(np.asarray(x, dtype=float) / tile) * tile
    return math.ceil(x / tile) * tile


def _mmha_runs(rule: tuple, b, h, g, kv):
    """fitting.mmha_rows' rule ((SMs, largest XQA group, heuristic?)) for one call: whether TensorRT-LLM runs it
    on its fallback kernel; numbers or arrays."""
    sms, max_group, heuristic = rule
    group = h / g
    if not heuristic:
        return group > max_group
    small = 4 * g * b * _maximum(kv / 128, 1.0) < sms
    if _is_array(small) or _is_array(group):
        import numpy as np

        return (group > 1) & ((group > max_group) | np.asarray(small))
    return group > 1 and (group > max_group or bool(small))


def _tile_xqa(d: Mapping) -> tuple:
    """A TensorRT-LLM decode form's ``tile_xqa`` rule as (SMs, largest XQA group, heuristic?), () where it has none;
    ValueError where its fallback kernel's rule (``mmha``) says otherwise: one dispatch, written twice."""
    t = d.get("tile_xqa")
    if not t:
        return ()
    rule = (int(t["sms"]), int(t["max_group"]), bool(t["heuristic"]))
    m = d.get("mmha")
    if m and (int(m["sms"]), int(m["max_group"]), bool(m["heuristic"])) != rule:
        raise ValueError(f"tile_xqa {dict(t)} is not the form's mmha rule")
    return rule


def _l2_reread(d: Mapping) -> tuple:
    """An attention form's ``l2_reread`` ({"l2_bytes", "policy"}) as (L2 bytes, policy), () where it has none;
    ValueError where it is not one a windowed work-item form can take."""
    r = d.get("l2_reread")
    if not r:
        return ()
    l2, policy = float(r["l2_bytes"]), str(r["policy"])
    if policy not in ("keeps", "random") or not (math.isfinite(l2) and l2 > 0) or not d.get("items_per_head"):
        raise ValueError(f"l2_reread {dict(r)} needs a policy 'keeps' or 'random', an L2 size in bytes above 0 "
                         f"and items_per_head")
    return l2, policy


def _l2_misses(sweep, l2: float, policy: str = "keeps"):
    """The share of a second read that misses an L2 of ``l2`` bytes when ``sweep`` bytes pass through it between
    the two reads (fitting.L2_REREAD): none while the pass fits (x = sweep / l2 <= 1); else 1 - 1 / x where L2
    keeps l2 bytes of the pass ("keeps"), or under random replacement ("random") the miss share m solving
    1 - m = exp(-x m) (a line survives the x m l2 bytes of misses between its two reads; Newton's method from
    m = 1, where the concave function converges from above). A number or an array."""
    if policy not in ("keeps", "random"):
        raise ValueError(f"unknown L2 policy {policy!r}")
    if _is_array(sweep):
        import numpy as np

        x = np.asarray(sweep, dtype=float) / l2 if l2 > 0 else np.zeros(np.shape(sweep))
        past = np.isfinite(x) & (x > 1)
        if policy == "keeps":
            return np.where(past, 1.0 - 1.0 / np.where(past, x, 2.0), 0.0)
        xs = np.where(past, x, 2.0)  # the iteration on a fitting x alone (no overflow where none is asked)
        m = np.ones_like(xs)
        for _ in range(40):
            q = np.exp(-xs * m)
            m = m - (1.0 - m - q) / (xs * q - 1.0)
        return np.where(past, np.clip(m, 0.0, 1.0), 0.0)
    x = float(sweep) / l2 if l2 > 0 else 0.0
    if not (math.isfinite(x) and x > 1):
        return 0.0
    if policy == "keeps":
        return 1.0 - 1.0 / x
    m = 1.0
    for _ in range(40):
        m = m - (1.0 - m - math.exp(-x * m)) / (x * math.exp(-x * m) - 1.0)
    return min(max(m, 0.0), 1.0)


def _tiled(rows, tile: int):
    """M as the kernels tile it: the next power of two up to ``tile`` rows, then a multiple of ``tile``."""
    if tile <= 1:
        return rows
    if _is_array(rows):
        import numpy as np

        r = np.maximum(np.asarray(rows, dtype=float), 1.0)
        return np.where(r <= tile, 2.0 ** np.ceil(np.log2(r)), np.ceil(r / tile) * tile)
    r = max(float(rows), 1.0)
    return 2.0 ** math.ceil(math.log2(r)) if r <= tile else math.ceil(r / tile) * tile


def _interp_geo(x, pts):
    """A fitted knot curve ((x, e), ...) at ``x``: log e linear in log x between knots, flat beyond them."""
    if _is_array(x):
        import numpy as np

        lx = np.log(np.maximum(np.asarray(x, dtype=float), 1e-30))
        return np.exp(np.interp(lx, [math.log(p[0]) for p in pts], [math.log(p[1]) for p in pts]))
    return math.exp(_interp_log(x, [(p[0], math.log(p[1])) for p in pts]))


@dataclass(frozen=True)
class KernelModel:
    """Efficiencies per class of kernel and the host's overheads, for one device."""

    classes: Mapping[str, Efficiency]
    dequant: Mapping[str, Efficiency]
    host_per_op_s: Efficiency
    launch_s: Efficiency
    overlap: bool  # host and device run at once (GPU) or one after the other (CPU)
    # measured matmul efficiency: ((rows M, weight bytes, e), ...), read in log M and log bytes
    curves: Mapping[str, tuple[tuple[float, float, float], ...]] = field(default_factory=dict)
    relative_to: str = "datasheet"  # what the fractions are of: "datasheet", "measured roof" (the defaults
    # moved onto a measured roof), "measured" (a profile's own), "ideal"
    depth: tuple[tuple[float, float], ...] = ()  # GEMMs' compute side by reduction depth K: ((K, factor), ...)
    # a weight format's dequantizing factor by the matmul's weight bytes: format -> ((bytes, factor), ...), read in log
    # bytes, times ``dequant``'s expected end (its pessimistic end where that is lower): GA100_INT4_SIZE on a GA100
    dequant_size: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    # decode attention's memory side by the KV bytes it reads: ((bytes, factor), ...) expected and pessimistic
    attention_size: tuple[tuple[float, float], ...] = ()
    attention_size_low: tuple[tuple[float, float], ...] = ()
    link: Efficiency = LINK  # a collective's share of its link
    latency: Mapping[str, Efficiency] = field(default_factory=lambda: dict(LATENCY))  # per collective, by hop
    # seconds the smallest kernel of a class takes on the device, whatever its size (absent: 0)
    fixed_s: Mapping[str, Efficiency] = field(default_factory=dict)
    # a measured GPU's collectives inside a node, fitted (data/kernel_fits.json): op (FITTED_COLLECTIVES) -> ranks
    # -> (fixed seconds, ((nccl-tests' size in bytes, share of the link), ...)), read as fitted: log share linear
    # in log size between the knots (_interp_geo) at nccl_size; other collectives take link and latency
    collectives: Mapping[str, Mapping[int, tuple]] = field(default_factory=dict)
    fitted: str = ""  # the measured tables the fitted parts come from ("" : none)
    fitted_how: str = ""  # "measured": the device's own; "nearest": the measured GPU of its generation
    fitted_tables: str = ""  # whose kernels were measured: "vllm", "sglang" or "trtllm" (TABLE_ENGINES)
    links: str = ""  # the measured GPU (or PCIe box) whose fitted collectives ``collectives`` holds
    engine_host: EngineHost = NO_ENGINE_HOST  # the engine's host time per step outside its kernels
    # a measured GPU's fitted GEMMs by compute dtype ("bf16", "fp8") and, where an engine's tables measured
    # them, by weight format ("int8_wo", "int4_wo", "fp8_block"), and the one its matmuls run (for_compute)
    gemm_fits: Mapping[str, GemmFit] = field(default_factory=dict)
    gemm_fit: GemmFit | None = None
    # a GeForce card's: its fitted GEMM forms (the nearest measured GPU's) give a matmul's memory side and fixed cost
    # only; its compute side stays the default class's (CONSUMER_GEMM: these cards reach their own fp32-accumulate
    # datasheet peak, which the measured datacenter cards' fitted compute sides do not describe)
    gemm_memory_only: bool = False
    # a measured GPU's fitted attention calls by class (decode_bf16kv, decode_swa_fp8kv, prefill_bf16kv, ...)
    attention_fits: Mapping[str, AttentionFit] = field(default_factory=dict)
    # a measured GPU's fitted fused MoE layers by expert weight format ("bf16", "fp8", "fp8_block", "mxfp4", "nvfp4":
    # MoEFit)
    moe_fits: Mapping[str, MoEFit] = field(default_factory=dict)
    # a measured GPU's fitted gated-delta-net calls by class (GDN_CLASSES: GdnFit)
    gdn_fits: Mapping[str, GdnFit] = field(default_factory=dict)
    # a GeForce card's, which takes no fused MoE form: by expert weight format, the (bytes a weight, scale block) of
    # its generation's fused form where that kernel runs every routed pair on each rank (MoEFit.every_pair): its
    # experts kernels' GEMM forms count every pair under expert parallelism (kernel_terms, every_pair_work)
    every_pair_unfused: Mapping[str, tuple] = field(default_factory=dict)
    # --kernel-db: the measured tables read directly (kerneldb.KernelDB), the fitted forms' expected work replaced
    db: Any = None
    # a profile's own fitted forms as written (measure.fit_curves; own_fits), written back by efficiency_record
    own: Mapping[str, Any] = field(default_factory=dict)
    # the range's (below, above) widths in log, for one GPU and for several, calibrated on measured steps of
    # models whose kernels come from the measured tables, on GPUs of this one's kind (fitted_how: with_fits,
    # calibrated_band; data/calibration.json); (): the floors to the pessimistic ends
    band: tuple = ()
    # the 16-bit GEMM class a model computing in fp8 or fp4 replaced (for_compute): a 16-bit linear beside them
    # (roofline.weight_format "float") takes it
    gemm_16bit: Efficiency | None = None
    # an int4 matmul's kernel where it is not Marlin-like at every size (INT4_KERNELS, int4_cap): (((rows M, share
    # of the roof's peak), ...) of AutoAWQ's GEMM (() for a Marlin-like GEMM), rows from which the engine
    # dequantizes the weight and runs its 16-bit GEMM instead (0: never), the roof's bandwidth in bytes/s); () for
    # Marlin-like kernels throughout
    int4_cap: tuple = ()

    @cached_property
    def unfitted(self) -> "KernelModel":
        """The same model without its fitted GEMM and attention forms: the defaults' efficiencies, whose
        pessimistic ends (the slowest published implementations) bound a fitted kernel's pessimistic end."""
        return replace(self, gemm_fits={}, gemm_fit=None, attention_fits={}, moe_fits={}, gdn_fits={}, db=None)

    def matmul_fit(self, weight_format: str = "") -> "GemmFit | None":
        """The fitted GEMM a matmul of ``weight_format`` runs: the weight-only form of its integer weights
        (int8, int4) where its engine's tables measured one and the matmul computes in 16 bits, the
        block-scaled fp8 form of fp8-b128 weights computing in fp8 where they measured one, else the compute
        dtype's (gemm_fit); None on a measured curve (it comes first) or without fits."""
        if self.curves.get("matmul") or self.gemm_fit is None:
            return None
        if weight_format == "float":  # a 16-bit linear beside fp8 / fp4 GEMMs (roofline.weight_format)
            return self.gemm_fits.get("bf16", self.gemm_fit)
        if weight_format in ("int8", "int4"):
            own, runs = self.gemm_fits.get(f"{weight_format}_wo"), "bf16"
        elif weight_format == "fp8-b128":
            own, runs = self.gemm_fits.get("fp8_block"), "fp8"
        else:
            return self.gemm_fit
        # (by value: on_roof rescales every form, the active one apart)
        return own if own is not None and self.gemm_fit == self.gemm_fits.get(runs) else self.gemm_fit

    def attention_fit(self, attn) -> "AttentionFit | None":
        """The fitted class of an attention call of sizes ``attn`` (AttentionFit.terms), if one covers it: one
        query (decode: windowed or not) or a whole prompt without a cached prefix (prefill), a head dim of at
        most 256 (the tables' largest; MLA's latent of 512 is another kernel), KV in 16 bits or one byte."""
        if not self.attention_fits or not attn:
            return None
        b, h, g, q, kv, d, w, per_value = attn[:8]
        if d > 256 or _is_array(q) or not per_value:
            return None
        kv_kind = "fp8kv" if per_value <= 1 else "bf16kv"
        if q == 1:
            return self.attention_fits.get(f"decode_swa_{kv_kind}" if w else f"decode_{kv_kind}")
        if not _is_array(kv) and q == kv:
            return self.attention_fits.get(f"prefill_{kv_kind}")
        return None

    def collective_fit(self, op: str, group: int, nccl: bool = False):
        """(fixed seconds, share-of-link curve) of a fitted collective ``op`` at the fitted rank count nearest
        ``group`` (in log2), or None; ``nccl``: NCCL's where an engine's own replaces it (fitted_collectives)."""
        fits = self.collectives.get(f"{op}.nccl" if nccl and f"{op}.nccl" in self.collectives else op)
        if not fits or group < 2:
            return None
        return fits[min(fits, key=lambda r: abs(math.log2(r) - math.log2(group)))]

    def fixed(self, kind: str, compute_side, pessimistic: bool = False):
        """The fixed cost of one kernel of ``kind`` on the side of the roof that bounds it."""
        if not self.fixed_s:
            return 0.0
        both = [self.fixed_s.get(kernel_class(kind, side)) for side in (True, False)]
        comp, mem = (e.pick(pessimistic) if e is not None else 0.0 for e in both)
        return comp if comp == mem else _where(compute_side, comp, mem)

    def for_compute(self, compute_dtype: str, fp8_over_16bit: float = 2.0, fp4_over_16bit: float = 4.0) -> "KernelModel":
        """FP8 GEMMs reach less of their (twice higher) peak than 16-bit ones: their own class, and
        for the defaults their own depth factor (GEMM_FP8_DEPTH); a fitted GPU's fp8 GEMM form (none:
        the fitted 16-bit form is not taken for an fp8 GEMM, the defaults are). The fitted forms were
        measured in 16 bits and fp8: another compute dtype (fp32, tf32) takes the defaults. Under fp8 the
        roof's peak is the fp8 one (``fp8_over_16bit`` times the 16-bit peak), and the fitted attention
        calls' compute shares, fractions of the 16-bit peak, are moved onto it. NVFP4's W4A4 GEMMs (fp4,
        ``fp4_over_16bit`` times the 16-bit peak) take their fitted form where the GPU's tables measured one
        (B200, RTX PRO 6000), else the fp8 class and form on the fp4 peak (claimed, not measured: the share of
        their peak fp8 GEMMs reach of theirs)."""
        low = {"fp8": fp8_over_16bit, "fp4": fp4_over_16bit}.get(compute_dtype)
        if compute_dtype not in ("bf16", "fp16", "fp8", "fp4") and (self.gemm_fits or self.attention_fits or
                                                                     self.moe_fits or self.every_pair_unfused or
                                                                     self.gdn_fits):
            self = replace(self, gemm_fits={}, gemm_fit=None, attention_fits={}, moe_fits={}, every_pair_unfused={},
                           gdn_fits={})
        if low and self.gdn_fits:  # the gated delta nets' compute shares (of the 16-bit peak) onto the fp8 (fp4) one
            self = replace(self, gdn_fits={k: replace(f, scale_c=f.scale_c / low) for k, f in self.gdn_fits.items()})
        if low and self.moe_fits:  # the fused MoE forms' compute shares onto the fp8 (fp4) peak
            self = replace(self, moe_fits={k: replace(f, scale_c=f.scale_c / low) for k, f in self.moe_fits.items()})
        if self.gemm_fits:
            form = self.gemm_fits.get("nvfp4") if compute_dtype == "fp4" else None
            self = replace(self, gemm_fit=form or self.gemm_fits.get("fp8" if low else "bf16"))
        if low and self.attention_fits:
            self = replace(self, attention_fits={k: replace(f, scale_c=f.scale_c / low)
                                                 for k, f in self.attention_fits.items()})
        if self.db is not None:
            self = replace(self, db=self.db.with_compute(compute_dtype))
        if not low or "gemm_fp8" not in self.classes:
            return self
        defaults = self.relative_to in ("datasheet", "measured roof") and self.classes["gemm_fp8"].source == "default"
        return replace(self, classes={**self.classes, "gemm": self.classes["gemm_fp8"]}, gemm_16bit=self.classes["gemm"],
                       depth=GEMM_FP8_DEPTH if defaults else self.depth)

    def with_l2(self, l2_bytes: float | None) -> "KernelModel":
        """The same model on a GPU whose L2 holds ``l2_bytes``: each attention form that rereads what L2 no longer
        holds (AttentionFit.l2_reread, fitted at its own GPU's L2) rereads at this one's. None: as it is."""
        if not l2_bytes or not any(f.l2_reread for f in self.attention_fits.values()):
            return self
        return replace(self, attention_fits={k: replace(f, l2_reread=(float(l2_bytes), f.l2_reread[1]))
                                             if f.l2_reread else f for k, f in self.attention_fits.items()})

    def on_roof(self, bandwidth_ratio: float, peak_ratio: float) -> "KernelModel":
        """The same model on a roof other than the one its fractions are of: a datasheet fraction
        e is e / ratio of a roof at ``ratio`` × datasheet (at most 1)."""
        if self.relative_to != "datasheet" or (bandwidth_ratio == 1 and peak_ratio == 1):
            return self
        compute = {"gemm", "gemm_fp8", "attention_compute"}

        def scale(name: str, e: Efficiency) -> Efficiency:
            r = peak_ratio if name in compute else bandwidth_ratio
            return replace(e, expected=min(1.0, e.expected / r), pessimistic=min(1.0, e.pessimistic / r))

        fits = {k: replace(f, scale_c=f.scale_c / peak_ratio, scale_m=f.scale_m / bandwidth_ratio)
                for k, f in self.gemm_fits.items()}
        active = replace(self.gemm_fit, scale_c=self.gemm_fit.scale_c / peak_ratio,
                         scale_m=self.gemm_fit.scale_m / bandwidth_ratio) if self.gemm_fit else None
        attention = {k: replace(f, scale_c=f.scale_c / peak_ratio, scale_m=f.scale_m / bandwidth_ratio)
                     for k, f in self.attention_fits.items()}
        moe = {k: replace(f, scale_c=f.scale_c / peak_ratio, scale_m=f.scale_m / bandwidth_ratio)
               for k, f in self.moe_fits.items()}
        gdn = {k: replace(f, scale_c=f.scale_c / peak_ratio, scale_m=f.scale_m / bandwidth_ratio)
               for k, f in self.gdn_fits.items()}
        cap = (tuple((r, e / peak_ratio) for r, e in self.int4_cap[0]), self.int4_cap[1],
               self.int4_cap[2] * bandwidth_ratio) if self.int4_cap else ()
        return replace(self, classes={n: scale(n, e) for n, e in self.classes.items()}, relative_to="measured roof",
                       gemm_fits=fits, gemm_fit=active, attention_fits=attention, moe_fits=moe, gdn_fits=gdn,
                       int4_cap=cap)


def ideal() -> KernelModel:
    """Every efficiency 1 and no host time: predicted_s is then the sum of the floors."""
    one = Efficiency(1.0, 1.0, note="ideal")
    zero = Efficiency(0.0, 0.0, note="ideal")
    return KernelModel({c: one for c in CLASSES}, {d: one for d in DEQUANT}, zero, zero, overlap=True,
                       relative_to="ideal", link=one, latency={"link": zero, "network": zero}, fixed_s={})


CONSUMER_GEMM = Efficiency(1.0, 1.0, note="GeForce GPUs reach their fp32-accumulate datasheet peak in torch matmuls: "
                           "RTX 4090 165-168 of 165.2 TFLOP/s, RTX 5090 above spec (zzc0721/torch-performance-test-data)")


def default_model(kind: str, segment: str = "datacenter", fits: str = "", how: str = "measured",
                  engine: str = "", links: str = "", compute_capability: float | None = None) -> KernelModel:
    """The built-in model for a kind of device ("gpu", "cpu", "tpu") and, for GPUs, its segment
    ("datacenter" or "consumer": GeForce cards reach their fp32-accumulate GEMM peak); ``fits`` names the
    measured GPU whose fitted kernels and collectives replace the five GPUs' medians (data/kernel_fits.json), as
    ``engine`` (the engine whose tables an --engine preset takes: EngineHost.table_engine) runs them where its
    tables were measured (with_fits); ``links``, for a GPU without tables of its own, the measured PCIe box whose
    collectives it takes (hardware.Hardware.links)."""
    if kind == "cpu":
        return KernelModel(dict(GPU_DEFAULTS), dict(GPU_DEQUANT), CPU_HOST_PER_OP, Efficiency(0.0, 0.0, note="no "
                           "launches on a CPU"), overlap=False, attention_size=ATTENTION_SIZE,
                           attention_size_low=ATTENTION_SIZE_LOW)  # no fixed cost measured on a CPU: none
    classes = dict(GPU_DEFAULTS)
    if segment == "consumer":
        classes["gemm"] = CONSUMER_GEMM
    dequant = dict(GPU_DEQUANT)
    if compute_capability is not None and 9.0 <= compute_capability < 10.0:  # Hopper: Marlin short of its ideal
        dequant["int4"] = HOPPER_INT4
        for name in ("nvfp4", "nvfp4a16"):  # W4A16 NVFP4 runs FP4 Marlin: int4's Marlin figure, as elsewhere
            dequant[name] = replace(HOPPER_INT4, note="FP4 Marlin (vLLM's and SGLang's): no published figure of its own found; "
                                    "Marlin's int4 one on Hopper (" + HOPPER_INT4.note + ")")
    dequant_size = {}
    if compute_capability is not None and 8.0 <= compute_capability < 8.1:  # GA100: Marlin short of it on small layers
        dequant_size = {name: GA100_INT4_SIZE for name in ("int4", "nvfp4", "nvfp4a16")}  # FP4 Marlin: int4's, as above
        for name in dequant_size:
            dequant[name] = replace(dequant[name], note=dequant[name].note + "; on a GA100 times 1 - 3.3 (int4 MB of "
                                    "the weight)^-0.72 (0.26 at 8 MB, 0.73 at 32, 0.90 at 128): Marlin README's A100 "
                                    "speedups by model, assets/models.png (GA100_INT4_SIZE)")
    # a TPU runs a step as one XLA program (the catalog's source): no kernel launches, and the GPU kernels' fixed
    # costs (measured on NVIDIA GPUs) are not a TPU's; none measured on one, so none is charged
    model = KernelModel(classes, dequant, HOST_PER_OP, LAUNCH, overlap=True, attention_size=ATTENTION_SIZE,
                        attention_size_low=ATTENTION_SIZE_LOW, fixed_s={} if kind == "tpu" else dict(GPU_FIXED),
                        dequant_size=dequant_size)
    if fits:
        model = with_fits(model, fits, how, consumer=segment == "consumer", engine=engine)
    if links and (links != fits or how != "measured"):
        model = replace(model, collectives=fitted_collectives(links, engine), links=links)
    return model


_DATA: dict[str, dict] = {}  # the package's data files, by name, each read once


def data_json(name: str) -> dict:
    """One of the package's data files (data/NAME), read once."""
    if name not in _DATA:
        import json
        from pathlib import Path

        _DATA[name] = json.loads((Path(__file__).parent / "data" / name).read_text(encoding="utf-8"))
    return _DATA[name]


def kernel_fits() -> dict:
    """The fitted kernel costs the package ships (benchmarks/ship_fits.py writes them)."""
    return data_json("kernel_fits.json")


def engine_fits() -> dict:
    """SGLang's and TensorRT-LLM's fitted kernel forms (data/kernel_fits_engines.json), for their presets."""
    return data_json("kernel_fits_engines.json")


def moe_kernel_source(hardware, engine: str, cls: str) -> str:
    """The kernel source (AIConfigurator's name) of the fitted fused-MoE form of class ``cls`` that a step on
    ``hardware`` under the preset ``engine`` takes (its own tables for SGLang and TensorRT-LLM, vLLM's for any
    other, as with_fits picks them), "" where none is fitted (the engine's own kernels, unnamed)."""
    gpu, _ = hardware.fits if hardware is not None else ("", "")
    if not gpu or not cls:
        return ""
    if engine in ("sglang", "trtllm"):
        form = ((engine_fits()["gpus"].get(gpu) or {}).get(engine) or {}).get("moe", {}).get(cls)
    else:
        form = (kernel_fits()["gpus"].get(gpu) or {}).get("moe", {}).get(cls)
    source = (form or {}).get("source")
    if isinstance(source, dict):
        return str(source.get("kernel_source") or "")
    if isinstance(source, (list, tuple)):
        return str(source[0]) if source else ""
    return str(source or "")


def calibration() -> dict:
    """The range's calibration (data/calibration.json, benchmarks/calibrate.py writes it)."""
    return data_json("calibration.json")


def calibrated_band(how: str = "measured") -> tuple[tuple[float, float], tuple[float, float]]:
    """The range's (below, above) widths in log for a step on one GPU and on several (StepTimes.band), on a GPU of
    the kind ``how``: "measured" (its kernels fitted on its own tables) or "nearest" (the nearest measured GPU's
    fits, scaled by its datasheet), each calibrated on measured steps of its own kind."""
    b = calibration()["bands"][how]
    return tuple((b[g]["below"], b[g]["above"]) for g in ("one_gpu", "several_gpus"))


TABLE_ENGINES = ("vllm", "sglang", "trtllm")  # the engines whose kernel tables AIConfigurator measured


# The collectives fitted on AIConfigurator's NCCL tables (nccl-tests' all_reduce_perf, all_gather_perf and
# alltoall_perf).
FITTED_COLLECTIVES = ("all_reduce", "all_gather", "all_to_all")


def nccl_size(op: str, message, group: int):
    """The size nccl-tests (and so the fit's share of the link) gives a collective whose per-rank input is
    ``message`` bytes (parallel.py's message_bytes): an all-gather's whole output, ``group`` inputs (its -b size:
    AllGatherGetCollByteCount sends size / ranks a rank); an all-reduce's and an all-to-all's own buffer. The link
    bytes are the same on both sides: parallel.link_bytes' (n-1) x input is (n-1)/n of that output."""
    return message * group if op == "all_gather" else message


def with_fits(m: KernelModel, gpu: str, how: str = "measured", consumer: bool = False, engine: str = "") -> KernelModel:
    """``m`` with one measured GPU's fitted fixed costs per class, its fitted GEMMs (GemmFit) and its
    fitted collectives (FITTED_COLLECTIVES; AIConfigurator 0.12's vLLM and NCCL tables; cross-validated in
    docs/kernel_fits.md). Their pessimistic ends keep the defaults' spread (fixed costs: the slowest of the five
    GPUs over their median; a GEMM's efficiencies: the gemm and gemv classes' pessimistic over expected; a
    collective's share of the link: the defaults' LINK spread, its fixed cost as fitted). ``how`` "nearest": a
    GPU without tables takes the fixed costs of the measured GPU of its generation as they are (a fixed cost
    is launch, synchronization and a minimal pass over the chip, which no datasheet figure scales), its GEMMs'
    and attention calls' efficiencies as fractions of its own datasheet roofs, and not its collectives (another
    link). Attention calls (AttentionFit) keep the attention classes' spread. ``engine``: SGLang's or
    TensorRT-LLM's own tables for their presets (each class where measured), vLLM's for every other engine
    (vLLM's 16-bit GEMM is PyTorch's F.linear, what transformers and gpt-fast call too). ``consumer``: a GeForce
    card, whose GEMMs take the forms' memory side and fixed cost (an fp8 or fp4 form's input quantization too) but
    keep their compute side at the default (KernelModel.gemm_memory_only), and which takes no fused MoE form (each
    carries its compute side) and no weight-only int8 / int4 form (TensorRT-LLM's plugin on the A100: a rate its
    dequantization sets, not the memory system)."""
    doc = kernel_fits()
    g = doc["gpus"][gpu]
    tables = engine if engine in TABLE_ENGINES else "vllm"
    where = (f"AIConfigurator {doc['source']['version']} {gpu} {tables} tables, fitted (docs/kernel_fits.md)"
             + (", the nearest measured GPU's" if how == "nearest" else ""))
    own = engine_fits()["gpus"].get(gpu, {}).get(tables, {}) if tables != "vllm" else {}
    def fitted(name: str, seconds: float) -> Efficiency:  # the defaults' spread to the pessimistic end
        base = GPU_FIXED[name]
        return Efficiency(seconds, seconds * base.pessimistic / base.expected, note=where)

    fixed = dict(m.fixed_s)
    for name, seconds in g["fixed_s"].items():
        fixed[name] = fitted(name, seconds)
    fits = {dtype: GemmFit.from_doc(d, where) for dtype, d in {**g.get("gemm", {}), **own.get("gemm", {})}.items()
            if not (consumer and dtype.endswith("_wo"))}  # a weight-only plugin's form is its dequantization's
    attention = {cls: AttentionFit.from_doc(d, where)
                 for cls, d in {**g.get("attention", {}), **own.get("attention", {})}.items()}
    if "bf16" in fits:  # the class fixed costs are the 16-bit forms' (attention's less the cache write's kernel)
        fixed["gemm"] = fixed["gemv"] = fitted("gemm", fits["bf16"].fixed_s)
    for name, cls in (("attention", "decode_bf16kv"), ("attention_compute", "prefill_bf16kv")):
        if cls in attention:
            fixed[name] = fitted(name, attention[cls].fixed_s)
    # the engine's own fused MoE (vLLM's FusedMoE, SGLang's Triton kernel, TensorRT-LLM's CUTLASS one: fit_kernels.load_moe)
    # (a form fitted on another engine's tables says whose: ship_fits' "tables")
    moe = {key: MoEFit.from_doc(d, where.replace(f" {tables} tables", f" {d['tables']} tables") if d.get("tables")
                                else where) for key, d in (g if tables == "vllm" else own).get("moe", {}).items()}
    every = {key: f.every_pair for key, f in moe.items() if f.every_pair} if consumer else {}
    moe = moe if not consumer else {}
    # the engine's gated-delta-net kernels (their gdn_perf tables: fit_kernels.load_gdn); a class its tables lack,
    # another engine's where ship_fits lent it ("tables")
    gdn = {cls: GdnFit.from_doc(d, where.replace(f" {tables} tables", f" {d['tables']} tables") if d.get("tables")
                                else where) for cls, d in (g if tables == "vllm" else own).get("gdn", {}).items()}
    m = replace(m, fixed_s=fixed, fitted=gpu, fitted_how=how, gemm_fits=fits, gemm_fit=fits.get("bf16"),
                gemm_memory_only=consumer,
                attention_fits=attention, fitted_tables=tables, moe_fits=moe, every_pair_unfused=every,
                gdn_fits=gdn, band=calibrated_band(how))
    if how == "nearest":
        return m
    return replace(m, collectives=fitted_collectives(gpu, engine), links=gpu)


def fitted_collectives(gpu: str, engine: str = "") -> dict:
    """A measured GPU's fitted collectives (FITTED_COLLECTIVES: NCCL's, nccl-tests' runs), op -> ranks -> (fixed
    seconds, ((size, share of the link), ...)); under an engine whose own all-reduce AIConfigurator measured
    (TABLE_ENGINES: vLLM's custom all-reduce, SGLang's, TensorRT-LLM's, each inside its CUDA graph), that one as
    the all-reduce, where the GPU has it, and NCCL's under "all_reduce.nccl" (the slow end: kernel_terms)."""
    g = kernel_fits()["gpus"][gpu]
    read = lambda doc: {int(r): (v["fixed_s"], tuple((b, e) for b, e in v["e_link"]))  # noqa: E731
                        for r, v in doc.items()}
    out = {op: read(g[op]) for op in FITTED_COLLECTIVES if g.get(op)}
    if engine in TABLE_ENGINES:
        own = g if engine == "vllm" else engine_fits()["gpus"].get(gpu, {}).get(engine, {})
        if own.get("custom_all_reduce"):  # NCCL's kept apart: the engine's own all-reduce's slow end
            out["all_reduce.nccl"], out["all_reduce"] = out.get("all_reduce"), read(own["custom_all_reduce"])
    return {op: fits for op, fits in out.items() if fits}



OWN_ATTENTION = ("decode_bf16kv", "decode_fp8kv", "decode_swa_bf16kv", "decode_swa_fp8kv", "prefill_bf16kv",
                 "prefill_fp8kv")


def own_fits(m: KernelModel, doc: Any, where: str) -> KernelModel:
    """``m`` with the kernel forms a measurement fitted on its own GPU (a profile's ``efficiency.fits``, written
    by measure.fit_curves): its 16-bit GEMM (GemmFit) and its attention classes (AttentionFit), fractions of the
    profile's own measured roof, and the fixed costs they carry as the gemm, gemv, attention and
    attention_compute classes' (their pessimistic ends at the defaults' spread, as with_fits). A form that does
    not read is refused in one line naming it."""
    if not isinstance(doc, dict) or not isinstance(doc.get("gemm", {}), dict) or \
            not isinstance(doc.get("attention", {}), dict):
        raise RoofcalcError(f"{where}: efficiency.fits must be an object with 'gemm' and 'attention' objects")
    unknown = sorted(set(doc) - {"gemm", "attention", "source", "dtype", "peak_flops", "bandwidth", "scores"})
    if unknown:
        raise RoofcalcError(f"{where}: efficiency.fits has no key {', '.join(map(repr, unknown))} (it holds 'gemm' "
                            f"and 'attention' forms, as roofcalc measure writes them)")
    source = str(doc.get("source") or f"{where}'s measurement")

    def read(what: str, build, d):
        try:
            f = build(d, source)
            knots = [p for name in ("e_compute", "e_memory", "n_compute", "k_compute", "n_memory", "k_memory",
                                    "items_mem", "gqa_comp", "gqa_mem", "items_comp") for p in getattr(f, name, ())]
            values = [f.fixed_s, getattr(f, "item_s", 0.0)] + [x for p in knots for x in p] + \
                [v for name in ("hd_comp", "hd_mem") for _, v in getattr(f, name, ())]
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise RoofcalcError(f"{where}: efficiency.fits.{what} is not a fitted form ({type(e).__name__}: "
                                f"{e})") from None
        if not all(math.isfinite(v) for v in values) or min(values) < 0 or not 0 <= f.fixed_s < 1 or \
                any(x <= 0 or e <= 0 for x, e in knots) or not (f.e_compute and f.e_memory) or f.tile < 1:
            raise RoofcalcError(f"{where}: efficiency.fits.{what} holds a value out of range (knots and "
                                f"efficiencies must be positive, fixed_s in seconds)")
        return f

    gemm = {}
    for dtype, d in doc.get("gemm", {}).items():
        if dtype not in ("bf16", "fp8"):
            raise RoofcalcError(f"{where}: efficiency.fits.gemm has no dtype '{dtype}' (use bf16, fp8)")
        gemm[dtype] = read(f"gemm.{dtype}", GemmFit.from_doc, d)
    attention = {}
    for cls, d in doc.get("attention", {}).items():
        if cls not in OWN_ATTENTION:
            raise RoofcalcError(f"{where}: efficiency.fits.attention has no class '{cls}' (use "
                                f"{', '.join(OWN_ATTENTION)})")
        attention[cls] = read(f"attention.{cls}", AttentionFit.from_doc, d)
        if attention[cls].kind != cls.split("_")[0]:
            raise RoofcalcError(f"{where}: efficiency.fits.attention.{cls} must be of kind {cls.split('_')[0]}")
    fixed = dict(m.fixed_s)

    def measured(name: str, seconds: float) -> Efficiency:
        base = GPU_FIXED[name]
        return Efficiency(seconds, seconds * base.pessimistic / base.expected, "measured", source)

    if "bf16" in gemm:
        fixed["gemm"] = fixed["gemv"] = measured("gemm", gemm["bf16"].fixed_s)
    for name, cls in (("attention", "decode_bf16kv"), ("attention_compute", "prefill_bf16kv")):
        if cls in attention:
            fixed[name] = measured(name, attention[cls].fixed_s)
    return replace(m, gemm_fits=gemm, gemm_fit=gemm.get("bf16"), attention_fits=attention, fixed_s=fixed,
                   fitted=source, fitted_how="profile", fitted_tables="roofcalc measure",
                   own={**doc, "source": source}, band=())  # its own kernels: no calibration of its steps


def device_dequant(m: KernelModel, compute_capability: float | None) -> KernelModel:
    """``m`` (a measured profile's model) with the dequantizing factors the defaults give a GPU of
    ``compute_capability`` (Hopper's int4, a GA100's int4 by layer size) where it holds a default: an entry
    written back as the default, at the generic defaults' numbers or at the device's own. An entry of other
    numbers (measured, given, or edited) is the profile's own and stays, without a size table."""
    if compute_capability is None:
        return m
    own = default_model("gpu", compute_capability=compute_capability)
    dequant, size = dict(m.dequant), {}
    for name, e in m.dequant.items():
        mine = own.dequant.get(name)
        if mine is None or e.source != "default" or (e.expected, e.pessimistic) not in (
                (mine.expected, mine.pessimistic), (GPU_DEQUANT[name].expected, GPU_DEQUANT[name].pessimistic)):
            continue
        dequant[name] = mine
        if name in own.dequant_size:
            size[name] = own.dequant_size[name]
    return replace(m, dequant=dequant, dequant_size=size)


def model_from_profile(doc: Any, kind: str, where: str, compute_capability: float | None = None) -> KernelModel:
    """A profile's ``efficiency`` object (schema 2) over the defaults of its kind of device; a GPU's
    ``compute_capability`` (the profile's own) gives the defaults' dequantizing factors for it (device_dequant)."""
    base = default_model(kind)
    if doc is None:
        return base
    if not isinstance(doc, dict):
        raise RoofcalcError(f"{where}: 'efficiency' must be an object")
    classes, dequant, curves, fixed = dict(base.classes), dict(base.dequant), {}, dict(base.fixed_s)
    host, launch = base.host_per_op_s, base.launch_s
    fits = None
    for name, value in doc.items():
        if name == "curves":
            curves = _curves(value, where)
            continue
        if name == "fits":
            fits = value
            continue
        if name == "fixed_s":
            if not isinstance(value, dict) or set(value) - set(CLASSES):
                raise RoofcalcError(f"{where}: efficiency.fixed_s must map a class ({', '.join(CLASSES)}) to "
                                    f"{{'expected': seconds, ...}}")
            fixed.update({n: _efficiency(v, f"{where}: efficiency.fixed_s.{n}", seconds=True)
                          for n, v in value.items()})
            continue
        e = _efficiency(value, f"{where}: efficiency.{name}", seconds=name in ("host_per_op_s", "launch_s"))
        if name in CLASSES:
            classes[name] = e
        elif name in DEQUANT:
            dequant[name] = e
        elif name == "host_per_op_s":
            host = e
        elif name == "launch_s":
            launch = e
        else:
            raise RoofcalcError(f"{where}: unknown efficiency '{name}' (use {', '.join(CLASSES + DEQUANT)}, "
                                f"host_per_op_s, launch_s, fixed_s, curves)")
    # a default attention efficiency (absent, or written back as the default it was) keeps its size factors
    default_attention = classes["attention"].source == "default"
    model = KernelModel(classes, dequant, host, launch, base.overlap, curves, relative_to="measured",
                        attention_size=base.attention_size if default_attention else (),
                        attention_size_low=base.attention_size_low if default_attention else (), fixed_s=fixed)
    if fits is not None:
        if kind != "gpu":
            raise RoofcalcError(f"{where}: efficiency.fits are a GPU's fitted kernel forms; this profile is a {kind}'s")
        model = own_fits(model, fits, where)
    return device_dequant(model, compute_capability) if kind == "gpu" else model


def _number(v: Any, what: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
        raise RoofcalcError(f"{what} must be a number from {lo:g} to {hi:g}, got {v!r}")
    return float(v)


def _efficiency(v: Any, what: str, seconds: bool = False) -> Efficiency:
    lo, hi = (0.0, 1.0) if seconds else (1e-4, 1.0)
    if not isinstance(v, dict) or "expected" not in v:
        raise RoofcalcError(f"{what} must be an object with 'expected' (and 'pessimistic', 'note')")
    exp = _number(v["expected"], f"{what}.expected", lo, hi)
    pes = _number(v.get("pessimistic", exp), f"{what}.pessimistic", lo, hi)
    if (pes < exp) if seconds else (pes > exp):  # the pessimistic end is the slower one
        raise RoofcalcError(f"{what}.pessimistic ({pes:g}) is {'below' if seconds else 'above'} its expected ({exp:g}): "
                            f"the pessimistic end is the slower one, "
                            + ("more seconds" if seconds else "a lower efficiency"))
    source = v.get("source", "measured")  # a profile written back names the defaults it carried as such
    if source not in ("default", "measured", "given"):
        raise RoofcalcError(f"{what}.source must be default, measured or given, got {source!r}")
    return Efficiency(exp, pes, source, str(v.get("note", "")))


def _curves(v: Any, where: str) -> dict:
    what = "[[rows, weight_bytes, efficiency], ...]"
    if not isinstance(v, dict):
        raise RoofcalcError(f"{where}: efficiency.curves must map a class to {what}")
    out = {}
    for name, pts in v.items():
        if name not in ("matmul",):
            raise RoofcalcError(f"{where}: efficiency.curves has no class '{name}' (use matmul)")
        if not isinstance(pts, list) or not pts:
            raise RoofcalcError(f"{where}: efficiency.curves.{name} must be a non-empty list {what}")
        rows = []
        for p in pts:
            if not isinstance(p, list) or len(p) != 3:
                raise RoofcalcError(f"{where}: efficiency.curves.{name} holds {what}")
            rows.append((_number(p[0], f"{where}: curve rows", 1, 1 << 24),
                         _number(p[1], f"{where}: curve weight bytes", 1, 1e15),
                         _number(p[2], f"{where}: curve efficiency", 1e-4, 1.0)))
        out[name] = tuple(sorted(rows))
    return out


def efficiency_record(m: KernelModel) -> dict:
    """The ``efficiency`` object of a hardware profile (and of the JSON report)."""
    doc: dict[str, Any] = {}
    for n, e in list(m.classes.items()) + list(m.dequant.items()) + [("host_per_op_s", m.host_per_op_s),
                                                                      ("launch_s", m.launch_s)]:
        doc[n] = {"expected": e.expected, "pessimistic": e.pessimistic, "source": e.source, "note": e.note}
    if m.fixed_s:
        doc["fixed_s"] = {n: {"expected": e.expected, "pessimistic": e.pessimistic, "source": e.source, "note": e.note}
                          for n, e in m.fixed_s.items()}
    if m.curves:
        doc["curves"] = {k: [list(p) for p in v] for k, v in m.curves.items()}
    if m.own:
        doc["fits"] = dict(m.own)
    return doc


# --------------------------------------------------------------------------- scalars or arrays
# One model for a single step (plain floats: the main job imports no numpy) and a sweep (arrays).


def _is_array(*xs) -> bool:
    return any(hasattr(x, "shape") for x in xs)


def _where(cond, a, b):
    if _is_array(cond, a, b):
        import numpy as np

        out = np.where(cond, a, b)
        return out if out.ndim else out.item()
    return a if cond else b


def _minimum(a, b):
    if _is_array(a, b):
        import numpy as np

        return np.minimum(a, b)
    return min(a, b)


def _maximum(a, b):
    if _is_array(a, b):
        import numpy as np

        return np.maximum(a, b)
    return max(a, b)


def _scalar(x):
    return x.item() if hasattr(x, "shape") and not x.shape else x


# --------------------------------------------------------------------------- per kernel


def kernel_class(kind: str, compute_side: bool) -> str:
    """The efficiency class of a kernel: what it does and which side of its roof bounds it."""
    if kind == "matmul":
        return "gemm" if compute_side else "gemv"
    if kind == "attention":
        return "attention_compute" if compute_side else "attention"
    return "stream"



def efficiencies(m: KernelModel, kind: str, rows, weight_format: str = "", pessimistic: bool = False,
                 weight_bytes=1.0, depth=0, collective: tuple = (), width=0, attn: tuple = ()):
    """(compute-side e, memory-side e) of a kernel, scalars or numpy arrays of ``rows``: its classes'
    fractions; for a matmul the compute side shrinks with few rows (GEMM_ROWS) and, where the model
    has a depth factor, with a short reduction depth K (``depth``, 0: unknown), unless a measured
    curve (read in log rows and log weight bytes) gives both; integer weights dequantize on the
    memory side. For decode attention ``weight_bytes`` is the KV cache it reads: the defaults' memory
    side follows its size (ATTENTION_SIZE). A collective's ``collective`` is (op, ranks, hop) and its
    ``weight_bytes`` the message: a fitted collective inside a node reads its share of the link at its size
    (nccl_size). A
    fitted GPU's matmul takes its fitted form (GemmFit) at M = ``rows``, N = ``width``, K = ``depth``, the
    classes' spread to the pessimistic end; a measured curve still comes first. An attention call of sizes
    ``attn`` that a fitted class covers takes its fitted form (AttentionFit), the attention classes' spread. A
    dequantizing format's factor is read at ``weight_bytes`` where the model has a size table for it (dequant_size)."""
    if kind == "collective":  # the link (or the HBM copy) at NCCL's measured share
        fit = m.collective_fit(*collective[:2]) if collective and collective[2] == "link" else None
        e = m.link.pick(pessimistic)
        if fit is not None:  # the fit's share at this message size; its pessimistic end the defaults' spread
            e = _interp_geo(nccl_size(collective[0], weight_bytes, collective[1]), fit[1]) * \
                (m.link.pessimistic / m.link.expected if pessimistic else 1.0)
        return e, e
    names = {"matmul": ("gemm", "gemv"), "attention": ("attention_compute", "attention")}.get(kind)
    fit = m.attention_fit(attn) if kind == "attention" else None
    if fit is not None:
        comp, mem, _ = fit.terms(attn)
        if pessimistic:
            a, c = m.classes["attention"], m.classes["attention_compute"]
            comp, mem = comp * c.pessimistic / c.expected, mem * a.pessimistic / a.expected
        return comp, mem
    if names is None:
        e = m.classes["stream"].pick(pessimistic)
        return e, e
    comp, mem = (m.classes[n].pick(pessimistic) for n in names)
    if kind == "matmul" and weight_format == "float" and m.gemm_16bit is not None:  # 16-bit beside fp8 / fp4
        comp = m.gemm_16bit.pick(pessimistic)
    gemm = m.matmul_fit(weight_format) if kind == "matmul" else None
    if gemm is not None:
        fitted_comp, mem = gemm.efficiencies(rows, width, depth)
        if pessimistic:
            g, c = m.classes["gemv"], m.classes["gemm"]
            fitted_comp, mem = fitted_comp * c.pessimistic / c.expected, mem * g.pessimistic / g.expected
        if not m.gemm_memory_only:
            comp = fitted_comp
    if (gemm is None or m.gemm_memory_only) and kind == "matmul" and m.relative_to in ("datasheet",
                                                                                      "measured roof"):  # defaults
        comp = comp * _interp_log(rows, GEMM_ROWS_LOW if pessimistic else GEMM_ROWS)
        if m.depth and depth and weight_format != "float":
            comp = comp * _interp_log(depth, m.depth)
    size = m.attention_size_low if pessimistic else m.attention_size
    if kind == "attention" and size and _positive_size(weight_bytes):
        mem = mem * _interp_log(weight_bytes, size)
    curve = m.curves.get("matmul") if kind == "matmul" else None
    if curve:  # the measured curve is the expected value; its class keeps the spread to the pessimistic end
        e = curve_at(curve, rows, weight_bytes)
        g, c = m.classes["gemv"], m.classes["gemm"]
        comp = e * (c.pessimistic / c.expected if pessimistic else 1.0)
        mem = e * (g.pessimistic / g.expected if pessimistic else 1.0)
    if kind == "matmul" and weight_format in m.dequant and not (gemm is not None and gemm is not m.gemm_fit):
        d = m.dequant[weight_format]  # (a weight-only form measured its dequantizing)
        size = m.dequant_size.get(weight_format)
        if size and _positive_size(weight_bytes):  # by the weight's size (GA100_INT4_SIZE)
            f = d.expected * _interp_log(weight_bytes, size)
            mem = mem * (_minimum(f, d.pessimistic) if pessimistic else f)
        else:
            mem = mem * d.pick(pessimistic)
    if kind == "matmul" and weight_format == "int4" and m.int4_cap and m.int4_cap[0]:
        comp = _int4_capped(m, comp, rows, pessimistic)
    return comp, mem


def _int4_capped(m: KernelModel, comp, rows, pessimistic: bool):
    """An int4 matmul's compute side under AutoAWQ's GEMM (KernelModel.int4_cap): its rate at ``rows``, the GEMM
    class's spread to the pessimistic end; the 16-bit GEMM's own from the rows at which the engine switches to it."""
    curve, switch = m.int4_cap[:2]
    cap = _interp_geo(rows, curve)
    if pessimistic:
        c = m.classes["gemm"]
        cap = cap * c.pessimistic / c.expected
    if _is_array(rows):
        import numpy as np

        capped = np.minimum(comp, cap)
        return np.where(np.asarray(rows) >= switch, comp, capped) if switch else capped
    if switch and rows >= switch:
        return comp
    return min(comp, cap)


def _positive_size(x) -> bool:
    """A size to read a curve at: a positive number, or an array of them (a sweep)."""
    if _is_array(x):
        return bool((x > 0).all())
    return x > 1


def kernel_terms(m: KernelModel, t_compute, t_memory, kind: str, rows, weight_format: str = "", weight_bytes=1.0,
                 pessimistic: bool = False, depth=0, hop: str = "", launches=1, collective: tuple = (), width=0,
                 attn: tuple = (), moe: tuple = (), group: tuple = (), gdn: tuple = ()):
    """(work seconds, fixed seconds, compute-bound?) of one kernel instance, scalars or numpy arrays: its work
    is the larger of its FLOPs over the achievable FLOP/s and its bytes over the achievable bandwidth; its
    fixed cost is paid once per device kernel it ``launches``, a collective's is its latency on its ``hop``
    ("link" inside a node, "network" across nodes), a fitted collective's its fitted fixed cost at its ranks, a
    fitted GEMM's its fitted fixed cost (and an fp8 one's input quantization in series, with its work), a fitted
    attention call's its fitted fixed cost (and decode's time per work item in series, with its work). A GEMM of
    a fused group (``group``, fuse_gemms: q/k/v or gate/up run as one GEMM) takes its share of the group's one
    GEMM, by floors."""
    if group and kind == "matmul":
        sum_c, sum_m, sum_floor, sum_width, sum_bytes, n = group
        work, fixed, side = kernel_terms(m, sum_c, sum_m, kind, rows, weight_format, sum_bytes, pessimistic, depth,
                                         hop, n, collective, sum_width, attn)
        share = _floor_share(t_compute, t_memory, sum_floor)
        return share * work, share * fixed, side
    if kind == "matmul" and weight_format == "int4" and m.int4_cap:
        if not _int4_kernel(m, weight_format, weight_bytes, width, depth, moe):
            m = replace(m, int4_cap=())
        elif m.int4_cap[1] and _any_at_least(rows, m.int4_cap[1]):
            return _int4_dequantized(m, t_compute, t_memory, rows, weight_bytes, pessimistic, depth, launches, width)
    coll = (*collective, hop) if collective else ()
    fused = m.moe_fits.get(moe[0]) if len(moe) == MOE_FUSED and m.moe_fits and not m.curves.get("matmul") else None
    if fused is None and len(moe) == MOE_FUSED and moe[0] in m.every_pair_unfused and moe[2] != "combine":
        # no fused form, a kernel that runs every pair: each GEMM's FLOPs ep times (at ep times the rows), its bytes
        # by the layer's ratio (its weights as they were, every pair's activations); the activation's both ep times
        # (all activations); the weighted sum's as it was (its write the rank's tokens', whatever it reads)
        x, hidden, inter = moe[MOE_BASE:MOE_BASE + 3]
        touched = touched_on_rank(x, *moe[1:2], *moe[3:MOE_BASE])
        _, f_c, f_m, _ = every_pair_work(m.every_pair_unfused[moe[0]], x, moe[1], moe[3], hidden, inter, touched)
        f_m = f_c if moe[2] == "act_mul" else f_m
        t_compute, t_memory, rows = t_compute * f_c, t_memory * f_m, rows * f_c
    if fused is not None:
        return _moe_share(m, fused, t_compute, t_memory, kind, rows, weight_format, weight_bytes, pessimistic, depth,
                          width, moe)
    own = m.gdn_fits.get(gdn[0]) if gdn and m.gdn_fits else None
    if own is not None:  # a gated delta net's call on its fitted form (Term.gdn: its class, sizes and bytes)
        e_c, e_m, series = own.terms(gdn)
        side = t_compute / e_c > t_memory / e_m
        if pessimistic:  # the elementwise class's spread, as the fitted attention calls keep the attention classes'
            spread = m.classes["stream"].pessimistic / m.classes["stream"].expected
            e_c, e_m = e_c * spread, e_m * spread
        work = _maximum(t_compute / e_c, t_memory / e_m) + series
        if pessimistic:  # never below the defaults' pessimistic end, as a fitted GEMM's or attention call's
            d_c, d_m = efficiencies(m.unfitted, kind, rows, weight_format, True, weight_bytes, depth, (), width)
            work = _maximum(work, _maximum(t_compute / d_c, t_memory / d_m))
        base = m.fixed_s.get("stream")
        fixed = own.fixed_s * (base.pessimistic / base.expected if pessimistic and base and base.expected else 1.0)
        return work, launches * fixed, side
    e_c, e_m = efficiencies(m, kind, rows, weight_format, pessimistic, weight_bytes, depth, coll, width, attn)
    t_c, t_m = t_compute / e_c, t_memory / e_m
    side = t_c > t_m
    fit = m.matmul_fit(weight_format) if kind == "matmul" else None
    if fit is None and kind == "attention":
        fit = m.attention_fit(attn)
    if fit is not None:  # its own fitted fixed cost (the class's, fixed_s, is its 16-bit form's), the class's spread
        base = m.fixed_s.get("gemm" if kind == "matmul" else "attention")
        spread = base.pessimistic / base.expected if pessimistic and base and base.expected else 1.0
        series = fit.quant_s(t_memory, rows, width, depth) if kind == "matmul" else fit.terms(attn)[2]
        work = _maximum(t_c, t_m) + series
        if pessimistic:  # never below the defaults' pessimistic end: the slowest published implementation's
            # (a weight-only form measured its own dequantizing: the defaults' factor, not its size table)
            base_m = m.unfitted if fit is m.gemm_fit else replace(m.unfitted, dequant_size={})
            d_c, d_m = efficiencies(base_m, kind, rows, weight_format, True, weight_bytes, depth, coll, width)
            work = _maximum(work, _maximum(t_compute / d_c, t_memory / d_m))
        measured = m.db.work(kind, rows, width, depth, attn) if _db_covers(m, kind, weight_format, fit) else None
        if measured is not None:  # --kernel-db: the nearest measured shape's work is the expected value
            work = _maximum(work, measured) if pessimistic else measured
        return work, launches * fit.fixed_s * spread, side
    if kind == "collective":
        fit = m.collective_fit(*collective) if collective and hop == "link" else None
        fixed = fit[0] if fit is not None else m.latency[hop].pick(pessimistic) if hop else 0.0
        nccl = m.collective_fit(*collective, nccl=True) if pessimistic and fit is not None else None
        if nccl is not None and nccl is not fit:  # an engine's own all-reduce: its slow end never below NCCL's, to
            # which the engine falls back (large messages; GPUs its own cannot reach)
            e = _interp_geo(nccl_size(collective[0], weight_bytes, collective[1]), nccl[1]) * \
                m.link.pessimistic / m.link.expected
            work = _maximum(t_c, t_m)
            slow = _maximum(t_compute / e, t_memory / e)
            take = slow + nccl[0] > work + fixed
            return _where(take, slow, work), _where(take, nccl[0], fixed), side
    else:
        fixed = launches * m.fixed(kind, side, pessimistic)
    return _maximum(t_c, t_m), fixed, side


def _db_covers(m: KernelModel, kind: str, weight_format: str, fit) -> bool:
    """Whether --kernel-db's measured tables may give a call on fitted form ``fit`` its work: 16-bit and fp8
    tables, so not a dequantizing format, nor a matmul on its engine's own weight-format form."""
    return m.db is not None and not (kind == "matmul" and (weight_format in m.dequant or fit != m.gemm_fit
                                                           or m.gemm_memory_only))


def form_source(m: KernelModel, kind: str, rows, weight_format: str = "", weight_bytes=1.0, depth=0, width=0,
                attn: tuple = ()) -> str:
    """Where a matmul's or an attention call's efficiencies come from where a fitted form (GemmFit,
    AttentionFit) gives them, as kernel_terms takes it, with what only part of it gives (a GeForce card's memory
    side, a dequantizing factor, an int4 kernel's cap on the compute side, --kernel-db's read); "" where none
    does (the class's defaults, a measured matmul curve, a fused MoE layer's form: Placement.efficiency_source).
    A single step's sizes (scalars), not a sweep's; int4 experts never take a fused MoE form (their engines'
    kernels: calculator.fused_moe_class), so the int4 kernels' rule here is a dense linear's."""
    capped = False
    if kind == "matmul":
        if _int4_kernel(m, weight_format, weight_bytes, width, depth):
            if m.int4_cap[1] and rows >= m.int4_cap[1]:
                weight_format = ""  # dequantized to 16 bits and run on the 16-bit GEMM (_int4_dequantized)
            else:
                capped = bool(m.int4_cap[0])  # its compute side at most the int4 GEMM's own rate (_int4_capped)
        fit = m.matmul_fit(weight_format)
    else:
        fit = m.attention_fit(attn) if kind == "attention" else None
    if fit is None or not fit.source:
        return ""
    words = [fit.source]
    if kind == "matmul" and m.gemm_memory_only:
        words.append("its memory side and fixed cost (the compute side the default gemm class's)")
    if kind == "matmul" and weight_format in m.dequant and fit is m.gemm_fit:
        words.append(f"{weight_format} weights dequantizing at the default factor")
    if capped:
        words.append("its compute side at most the int4 GEMM kernel's own rate (--int4-kernel)")
    if _db_covers(m, kind, weight_format, fit) and m.db.work(kind, rows, width, depth, attn) is not None:
        words.append("its work the nearest measured shape's (--kernel-db)")
    return "; ".join(words)


def _int4_kernel(m: KernelModel, weight_format: str, weight_bytes, width, depth, moe: tuple = ()) -> bool:
    """Whether a matmul runs the int4 kernel KernelModel.int4_cap describes: int4 weights of one dense linear
    (experts run their engines' MoE kernels, not these), on a model that has one (kernel_terms, form_source)."""
    return weight_format == "int4" and bool(m.int4_cap) and not moe and _one_matrix(weight_bytes, width, depth)


def _one_matrix(weight_bytes, width, depth) -> bool:
    """Whether an int4 matmul's ``weight_bytes`` are one N x K = ``width`` x ``depth`` matrix (half a byte a value
    and its scales, under 0.6 bytes a value), not a grouped call's several experts: the int4 kernel forms are a
    dense linear's."""
    if not (width and depth):
        return False
    values = width * depth
    if _is_array(values) or _is_array(weight_bytes):
        import numpy as np

        return bool((np.asarray(weight_bytes) <= 0.6 * np.asarray(values)).all())
    return weight_bytes <= 0.6 * values


def _any_at_least(rows, n) -> bool:
    if _is_array(rows):
        import numpy as np

        return bool((np.asarray(rows) >= n).any())
    return rows >= n


def _int4_dequantized(m: KernelModel, t_compute, t_memory, rows, weight_bytes, pessimistic, depth, launches, width):
    """(work, fixed, compute-bound?) of an int4 matmul the engine runs by dequantizing its M = ``rows`` >= the
    switch (KernelModel.int4_cap): a kernel reading the int4 weight (``weight_bytes``) and writing N·K = ``width`` ×
    ``depth`` values in 16 bits at the stream class's share of the bandwidth, then the 16-bit GEMM on them (its
    memory side reading those 2·N·K bytes for the int4 ones), on the roof's bandwidth (int4_cap's third); rows
    below the switch (a sweep's) run the engine's own kernel."""
    values, per_byte = width * depth, 1.0 / m.int4_cap[2]
    mem16 = t_memory + per_byte * (2.0 * values - weight_bytes)
    work, fixed, side = kernel_terms(m, t_compute, mem16, "matmul", rows, "", 2.0 * values, pessimistic, depth,
                                     launches=launches, width=width)
    deq = per_byte * (weight_bytes + 2.0 * values) / m.classes["stream"].pick(pessimistic)
    work, fixed = work + deq, fixed + launches * m.fixed("stream", False, pessimistic)
    if _is_array(rows):  # a sweep's rows below the switch: the engine's own kernel
        import numpy as np

        own_work, own_fixed, own_side = kernel_terms(replace(m, int4_cap=(m.int4_cap[0], 0, m.int4_cap[2])), t_compute,
                                                     t_memory,
                                                     "matmul", rows, "int4", weight_bytes, pessimistic, depth,
                                                     launches=launches, width=width)
        on = np.asarray(rows) >= m.int4_cap[1]
        return np.where(on, work, own_work), np.where(on, fixed, own_fixed), np.where(on, side, own_side)
    return work, fixed, side


def every_pair_work(every_pair: tuple, per_expert, rank_experts: int, experts: int, hidden, inter, touched):
    """MoEFit.every_pair_work for a kernel that runs every routed pair on each rank, ``every_pair`` its (bytes a
    weight, scale block): (tokens per expert, compute factor, memory factor, experts read); (per_expert, 1, 1,
    touched) for () or one rank."""
    if not every_pair or experts <= rank_experts:
        return per_expert, 1.0, 1.0, touched
    from .fitting import moe_cost

    ep = experts / rank_experts
    read = _minimum(touched + 2.0, float(rank_experts))
    own, every = (moe_cost(per_expert * rank_experts * n, t, rank_experts, hidden, inter, *every_pair)["bytes"]
                  for n, t in ((1.0, touched), (ep, read)))
    ratio = every / own
    return per_expert * ep, ep, ratio if _is_array(ratio) and ratio.ndim else float(ratio), read


def every_pair_words(rank_experts: int, experts: int) -> str:
    """MoEFit.every_pair_words for a kernel that runs every routed pair: "" on one rank."""
    if experts <= rank_experts:
        return ""
    ep = experts / rank_experts
    return f"every routed pair on each of the {ep:g} ranks (another rank's at a zero weight): ×{ep:g} the rank's GEMM work"


def touched_on_rank(per_expert, rank_experts: int, experts: int, top_k: int):
    """Distinct experts of a rank's ``rank_experts`` its tokens reach under uniform routing, as the experts
    kernels' bytes count them (calculator.touched_experts): T = per_expert · E / k tokens, each picking k of E."""
    import numpy as np

    if top_k >= experts:
        return float(rank_experts)
    tokens = np.asarray(per_expert, dtype=float) * experts / top_k
    reached = rank_experts * -np.expm1(tokens * math.log1p(-top_k / experts))
    return reached if _is_array(per_expert) else float(reached)


def _floor_share(t_compute, t_memory, sum_floor):
    """A kernel's share of a group's one time (a fused GEMM group, a fused MoE call): its floor over theirs."""
    own = _maximum(t_compute, t_memory)
    if not _is_array(sum_floor):
        return own / sum_floor
    return _where(sum_floor > 0, own / _maximum(sum_floor, 1e-300), 0.0)


def _moe_share(m: KernelModel, fit: MoEFit, t_compute, t_memory, kind, rows, weight_format, weight_bytes,
               pessimistic, depth, width, moe):
    """(work seconds, fixed seconds, compute-bound?) of one of a fused MoE layer's kernels (its three experts
    kernels and the combine, whose weighted sum runs inside the fused call): the layer's one fitted time (MoEFit
    over the three experts kernels' summed FLOPs and bytes, never below the four kernels' floors) split over the four
    in proportion to their floors, so that they add up to it (the sort's time per routed pair, in series, with the
    work).
    Its pessimistic end as a fitted GEMM's: the efficiencies at
    the gemm and gemv classes' spread, the fixed cost at the gemm class's, the work never below the kernel's own
    at the defaults' pessimistic end (the slowest published implementation)."""
    x, hidden, inter, sum_c, sum_m, sum_floor = moe[MOE_BASE:]
    touched = touched_on_rank(x, *moe[1:2], *moe[3:MOE_BASE])
    # a kernel that runs every routed pair on each EP rank: its work and the tokens per expert it sees
    x_run, f_c, f_m, touched = fit.every_pair_work(x, moe[1], moe[3], hidden, inter, touched)
    sum_c, sum_m = sum_c * f_c, sum_m * f_m
    e_c, e_m = fit.efficiencies(x_run, hidden, inter, touched, moe[1])
    s_c, s_m = fit.padded_shares(x_run, hidden, inter, touched, moe[1])  # MXFP4 experts as the kernel stores them
    e_c, e_m = e_c * s_c, e_m * s_m
    fixed = fit.fixed_s
    # a time per routed pair, in series: every pair of the layer, T·k (the rank's tokens per expert x the layer's
    # experts), as the fit counts them (benchmarks/fit_kernels.py: the pairs before an EP rank's mask)
    sort_s = fit.pair_s * x * moe[3]
    expected = _maximum(sum_c / e_c, sum_m / e_m) + sort_s
    if pessimistic:
        g, c, base = m.classes["gemv"], m.classes["gemm"], m.fixed_s.get("gemm")
        e_c, e_m = e_c * c.pessimistic / c.expected, e_m * g.pessimistic / g.expected
        fixed = fixed * (base.pessimistic / base.expected if base and base.expected else 1.0)
    t_c, t_m = sum_c / e_c, sum_m / e_m
    share = _floor_share(t_compute, t_memory, sum_floor)
    core = _maximum(t_c, t_m) + sort_s
    read = moe_db_read(m, moe)
    if read is not None:  # --kernel-db: a measured call's own time; another's, scaled, with the fit's: the
        # geometric mean of the two calls' times (fixed cost included, as benchmarks/lookup_vs_fit.py scores it:
        # on held-out shapes a lower median |log| than the fit's, a larger share within ±30 % than the read's)
        value = read[0] if read[1] else math.sqrt((read[0] + fit.fixed_s) * (expected + fit.fixed_s)) - fit.fixed_s
        core = _maximum(core, value) if pessimistic else value
    core = _maximum(core, sum_floor - fixed)  # the call never below its kernels' floors (the combine's too)
    work = share * core
    if pessimistic:
        d_c, d_m = efficiencies(m.unfitted, kind, rows, weight_format, True, weight_bytes, depth, (), width)
        work = _maximum(work, _maximum(t_compute / d_c, t_memory / d_m))
    return work, share * fixed, t_c > t_m


def moe_db_read(m: KernelModel, moe: tuple):
    """--kernel-db's read of a fused MoE call of sums ``moe`` (_moe_share): (seconds beyond the fixed cost, whether
    the table measured that very call), or None (no tables, or none of its kind)."""
    if m.db is None:
        return None
    x, hidden, inter = moe[MOE_BASE:MOE_BASE + 3]
    return m.db.moe_work(moe[0], x * moe[1], hidden, inter, moe[1], moe[3], moe[4])


def kernel_time(m: KernelModel, t_compute, t_memory, kind: str, rows, weight_format: str = "", weight_bytes=1.0,
                pessimistic: bool = False, depth=0, hop: str = "", launches=1, collective: tuple = (), width=0,
                attn: tuple = (), moe: tuple = (), group: tuple = ()):
    """(expected seconds, bound) of one kernel instance: its fixed cost plus its work (kernel_terms).
    ``bound`` is one of KERNEL_BOUNDS: the largest term ("link" for a collective's bytes)."""
    work, fixed, side = kernel_terms(m, t_compute, t_memory, kind, rows, weight_format, weight_bytes, pessimistic,
                                     depth, hop, launches, collective, width, attn, moe, group)
    return work + fixed, kernel_bound(kind, work, fixed, side)


def kernel_bound(kind: str, work, fixed, side):
    """One of KERNEL_BOUNDS from a kernel's (work, fixed, compute-bound?) terms: the largest term ("link" for a
    collective's bytes)."""
    by_work = "link" if kind == "collective" else _where(side, "compute", "memory")
    return _where(fixed > work, "fixed", by_work)


def curve_at(curve, rows, weight_bytes):
    """A measured matmul curve ((rows, weight bytes, e), ...) read at (rows, weight bytes): along log
    rows within each measured weight size, then along log bytes between the sizes; flat beyond the
    measured ends. Scalars or numpy arrays."""
    sizes = sorted({w for _, w, _ in curve})
    per_size = [_interp_log(rows, [(r, e) for r, w, e in curve if w == size]) for size in sizes]
    if len(sizes) == 1:
        return per_size[0]
    return _interp_between(weight_bytes, sizes, per_size)


def _interp_between(x, xs, ys):
    """ys[i] (scalars or arrays) at xs[i], read at x linearly in log x, flat beyond the ends."""
    if _is_array(x, *ys):
        import numpy as np

        lx = np.log(np.maximum(np.asarray(x, dtype=float), 1.0))
        out = np.zeros(np.broadcast(lx, *ys).shape)
        out = out + ys[0]
        lxs = [math.log(v) for v in xs]
        for (x0, y0), (x1, y1) in zip(zip(lxs, ys), zip(lxs[1:], ys[1:])):
            t = np.clip((lx - x0) / (x1 - x0), 0.0, 1.0)
            out = np.where(lx > x0, y0 + (y1 - y0) * t, out)
        return out
    lx = math.log(max(x, 1.0))
    lxs = [math.log(v) for v in xs]
    if lx <= lxs[0]:
        return ys[0]
    for x0, x1, y0, y1 in zip(lxs, lxs[1:], ys, ys[1:]):
        if lx <= x1:
            return y0 + (y1 - y0) * (lx - x0) / (x1 - x0)
    return ys[-1]


def _interp_log(rows, curve):
    """A measured curve ((rows, e), ...) read at ``rows``, linearly in log(rows), flat beyond its ends."""
    if _is_array(rows):
        import numpy as np

        return np.interp(np.log(np.maximum(rows, 1.0)), np.log([p[0] for p in curve]), [p[1] for p in curve])
    x = math.log(max(rows, 1.0))
    pts = [(math.log(r), e) for r, e in curve]
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


# --------------------------------------------------------------------------- the step


@dataclass(frozen=True)
class StepTimes:
    """One step's times (scalars, or numpy arrays of one shape for a sweep), in seconds."""

    floor_s: Any  # Σ count · t_floor
    device_s: Any  # Σ count · t_kernel, expected
    device_upper_s: Any  # the same at the pessimistic efficiencies and fixed costs
    host_s: Any  # host ops · seconds per op, expected
    host_upper_s: Any
    compute_s: Any  # the part of device_s spent in compute-bound kernels
    overlap: bool
    comm_s: Any = 0.0  # the part of device_s spent in collectives
    fixed_s: Any = 0.0  # the part of device_s spent in kernels whose fixed cost outweighs their work
    serial_s: Any = 0.0  # an engine's host time the device waits for every step (EngineHost, overlap False)
    serial_upper_s: Any = 0.0
    band: tuple = ()  # the range's (below, above) widths in log around predicted_s (KernelModel.band); (): floors to upper

    def _combine(self, device, host):
        return _maximum(device, host) if self.overlap else device + host

    @property
    def predicted_s(self):
        return self._combine(self.device_s, self.host_s) + self.serial_s

    @property
    def predicted_upper_s(self):
        """predicted_s × e^above where the range is calibrated, else every pessimistic end at once."""
        if self.band:
            return self.predicted_s * math.exp(self.band[1])
        return self._combine(self.device_upper_s, self.host_upper_s) + self.serial_upper_s

    @property
    def predicted_lower_s(self):
        """predicted_s × e^-below where the range is calibrated (never below the floors), else the floors."""
        if self.band:
            return _maximum(self.floor_s, self.predicted_s * math.exp(-self.band[0]))
        return self.floor_s

    def holds(self, measured_s) -> bool:
        """The one rule for "as predicted": a measured step inside [predicted_lower_s, predicted_upper_s]."""
        return self.predicted_lower_s <= measured_s <= self.predicted_upper_s

    @property
    def memory_s(self):
        """The part of device_s spent in memory-bound kernels."""
        return self.device_s - self.compute_s - self.comm_s - self.fixed_s

    @property
    def bound(self):
        """One of STEP_BOUNDS: 'host' where the host outlasts the device (on a GPU) or takes the larger
        share (on a CPU); else 'compute', 'memory', 'communication' or 'fixed', whichever kind of kernel
        takes the most device time."""
        memory = self.memory_s
        if _is_array(memory, self.host_s):  # the same rule on a sweep's grid, as indices into the words
            import numpy as np

            code = np.where(self.compute_s > memory, 1, 0)
            top = np.maximum(self.compute_s, memory)
            code = np.where(self.comm_s > top, 2, code)
            top = np.maximum(top, self.comm_s)
            code = np.where(self.fixed_s > top, 3, code)
            code = np.where(self.host_s + self.serial_s > self.device_s, 4, code)
            words = np.array(["memory", "compute", "communication", "fixed", "host"])[code]
            return words if words.ndim else words.item()
        by_kernels = _where(self.compute_s > memory, "compute", "memory")
        top = _maximum(self.compute_s, memory)
        by_kernels = _where(self.comm_s > top, "communication", by_kernels)
        top = _maximum(top, self.comm_s)
        by_kernels = _where(self.fixed_s > top, "fixed", by_kernels)
        return _where(self.host_s + self.serial_s > self.device_s, "host", by_kernels)


def range_band(m: "KernelModel | None", several: bool) -> tuple:
    """The range's (below, above) widths in log for a step of ``m`` on one GPU or on several (KernelModel.band);
    (): none."""
    return tuple(m.band[several]) if m is not None and m.band else ()


def range_name(band) -> str:
    """A step's range by what it is: calibrated to hold a share of measured steps (StepTimes.band, the calibration's
    coverage; docs/conventions.md, "The range"), or the floors to the pessimistic ends."""
    return f"{calibration()['coverage']:.0%} range" if band else "range"


def host_ops(impl: str, launches_per_step, graphed=True):
    """Host operations a step costs: eager ops, launch calls, or one graph replay (under cuda-graph, where the
    step replays its graph: ``graphed``, a bool or an array; EngineHost.graphed)."""
    if impl == "cuda-graph":
        return _where(graphed, launches_per_step * 0 + 1, launches_per_step) if _is_array(graphed) else \
            (launches_per_step * 0 + 1 if graphed else launches_per_step)
    return launches_per_step


def host_seconds_per_op(m: KernelModel, impl: str) -> Efficiency:
    """What one host operation of ``impl`` costs: an eager op's Python and dispatch, else a launch call
    (fused) or a graph replay (cuda-graph)."""
    return m.host_per_op_s if impl == "hf-eager" else m.launch_s


def step_times(terms, m: KernelModel, impl: str, launches_per_step, sequences=1, gpus: int = 1,
               tokens=None) -> StepTimes:
    """The step from its kernels. ``terms`` holds one tuple per kernel,
    (count, t_compute_s, t_memory_s, kind, rows, weight_format, weight_bytes, depth, hop, launches, collective,
    width, attn),
    where the times may be numpy arrays of one shape (a sweep) and count, kind, weight format, depth and hop (a
    collective's "link" or "network", else "") are per kernel; launches (device kernels one instance runs,
    each paying its class's fixed cost) per kernel or per batch; collective (op, ranks) or (); a collective's
    weight_bytes is its message. ``sequences``: the step's sequences (a number or an array), for the engine's
    host time per sequence (KernelModel.engine_host). ``gpus``: the GPUs the step runs on (Parallel.gpus; a
    pipeline stage's too), which with its collectives picks the range's band (KernelModel.band). ``tokens``: the
    step's tokens (a number or an array; default ``sequences``, a decode step's), which decide whether it replays
    its CUDA graph where the engine replays one for few tokens alone (EngineHost.graphed)."""
    floor = device = upper = compute = comm = fixed = 0.0
    if m.moe_fits or m.every_pair_unfused:
        terms = fuse_moe(terms)
    terms = fuse_gemms(terms)
    several = gpus > 1 or any(t[3] == "collective" for t in terms)  # a step of several GPUs
    for count, t_c, t_m, kind, rows, wfmt, wbytes, depth, hop, n, coll, width, attn, *rest in terms:
        moe = rest[0] if rest else ()
        group = rest[1] if len(rest) > 1 else ()
        gdn = rest[2] if len(rest) > 2 else ()
        work, fix, side = kernel_terms(m, t_c, t_m, kind, rows, wfmt, wbytes, depth=depth, hop=hop, launches=n,
                                       collective=coll, width=width, attn=attn, moe=moe, group=group, gdn=gdn)
        hi_work, hi_fix, _ = kernel_terms(m, t_c, t_m, kind, rows, wfmt, wbytes, pessimistic=True, depth=depth,
                                          hop=hop, launches=n, collective=coll, width=width, attn=attn, moe=moe,
                                          group=group, gdn=gdn)
        t = work + fix
        floor = floor + count * _maximum(t_c, t_m)
        device = device + count * t
        upper = upper + count * (hi_work + hi_fix)
        if kind == "collective":
            comm = comm + count * t
        else:  # each kernel's time under its bound (kernel_time's rule), as numbers rather than words
            by_fixed = fix > work
            compute = compute + count * _where(side & ~by_fixed if _is_array(side, by_fixed) else side and not by_fixed,
                                               t, 0.0)
            fixed = fixed + count * _where(by_fixed, t, 0.0)
    graphed = m.engine_host.graphed(impl, sequences if tokens is None else tokens) if impl == "cuda-graph" else True
    ops = host_ops(impl, launches_per_step, graphed)
    per = host_seconds_per_op(m, impl)
    host, host_hi, serial, serial_hi = ops * per.expected, ops * per.pessimistic, 0.0, 0.0
    engine = m.engine_host
    if not engine.none:  # the engine's host time outside the kernels: beside the launches, or waited for
        extra, extra_hi = engine.seconds(sequences, gpus=gpus), engine.seconds(sequences, True, gpus)
        if engine.overlap:
            host, host_hi = host + extra, host_hi + extra_hi
        else:
            serial, serial_hi = extra, extra_hi
    band = range_band(m, several)
    return StepTimes(_scalar(floor), _scalar(device), _scalar(upper), _scalar(host), _scalar(host_hi),
                     _scalar(compute), m.overlap, _scalar(comm), _scalar(fixed), _scalar(serial), _scalar(serial_hi),
                     band)
