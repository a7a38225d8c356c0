"""Roofline arithmetic: pure math, no I/O.

attainable(AI) = min(P, B·AI)  (Williams, Waterman & Patterson, CACM 2009)

Per kernel: t_compute = FLOPs / P, t_memory = bytes / B, t_floor = max of the two;
t_launch = launches × launch overhead. The bound is ``overhead`` when the launch cost
exceeds the floor, else ``compute`` or ``memory``, whichever floor is larger.
Verdicts use the measured roof when there is one (only it says what distance is yours),
else the nominal roof.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from .calculator import Analysis, Kernel
from .errors import RoofcalcError
from .hardware import Hardware

FLAG_FLOOR_MULTIPLE = 3.0  # a kernel above 3× its bandwidth floor "has a problem"

# GPU kernel launches per kernel instance under each implementation profile, by kernel role.
# hf-eager: transformers' eager PyTorch modules, one launch per ATen op that computes:
#   RMSNorm (LlamaRMSNorm in 16-bit): to(fp32), pow, mean, add eps, rsqrt, mul, to(dtype), mul weight = 8
#   (in fp32 the two casts are no-ops: 6); LayerNorm: one native_layer_norm = 1;
#   rotary (apply_rotary_pos_emb): for q and for k: x·cos, neg, cat (rotate_half), ·sin, add = 5 + 5;
#   kv_cache_write: the cache update writes K and V = 2; attention: one SDPA kernel;
#   act_mul: act(gate), × up = 2; learned positions: gather + add = 2; soft-capping: /, tanh, × = 3;
#   every linear, add, gather = 1; a MoE layer's experts loop over the experts that got tokens
#   (Kernel.eager_launches). tests/test_oracle.py counts the ATen ops of a real transformers Llama
#   layer against this table; for the other families the table is the same per role, not checked op by op.
# fused: what serving engines (vLLM, TensorRT-LLM) run: one GEMM for q/k/v, one for gate/up,
#   residual adds fused into the following norm, SiLU×up one kernel, rotary one kernel, one grouped
#   GEMM per expert projection.
# cuda-graph: the fused kernels replayed from one CUDA graph: the launch cost is paid once per step.
HF_EAGER = {"embed": 1, "pos_embed": 2, "rms_norm": 8, "layer_norm": 1, "rotary": 10, "kv_cache_write": 2,
            "attention": 1, "act_mul": 2, "act": 1, "softcap": 3}
FUSED = {"embed": 1, "pos_embed": 1, "rms_norm": 1, "layer_norm": 1, "rotary": 1, "kv_cache_write": 1, "attention": 1,
         "act_mul": 1, "act": 1, "softcap": 1, "residual": 0, "linear": 1, "router": 1, "experts": 1, "combine": 1}
# fused q/k/v and gate/up GEMMs: the k, v and up projections ride on the q and gate launches
FUSED_RIDERS = {"k_proj", "v_proj", "up_proj", "shared_experts.up_proj"}
IMPLS = ("hf-eager", "fused", "cuda-graph")


def launches(kernel: Kernel, impl: str, act_dtype: str = "fp16") -> int:
    """GPU kernel launches one instance of ``kernel`` costs under ``impl`` (cuda-graph: the same
    kernels, but :attr:`StepVerdict.sum_launch_s` charges one launch per step)."""
    role = kernel.role or kernel.name.split("[")[0]
    if impl == "hf-eager":
        if kernel.eager_launches is not None:
            return kernel.eager_launches
        if role == "rms_norm" and act_dtype == "fp32":
            return HF_EAGER[role] - 2  # the casts to and from fp32 are no-ops
        return HF_EAGER.get(role, 1)
    if impl in ("fused", "cuda-graph"):
        if kernel.name.split("[")[0] in FUSED_RIDERS:
            return 0
        return FUSED.get(role, 1)
    raise RoofcalcError(f"unknown --impl '{impl}'; use {', '.join(IMPLS)}")


@dataclass(frozen=True)
class Roof:
    bandwidth_bytes_per_s: float
    peak_flop_per_s: float

    @property
    def ridge(self) -> float:
        """FLOP/byte where the slope meets the flat roof."""
        return self.peak_flop_per_s / self.bandwidth_bytes_per_s

    def attainable(self, intensity: float) -> float:
        return min(self.peak_flop_per_s, self.bandwidth_bytes_per_s * intensity)

    def t_compute(self, flops: float) -> float:
        return flops / self.peak_flop_per_s

    def t_memory(self, nbytes: float) -> float:
        return nbytes / self.bandwidth_bytes_per_s

    def floor(self, flops: float, nbytes: float) -> float:
        return max(self.t_compute(flops), self.t_memory(nbytes))


def roofs(nominal: Hardware, compute_dtype: str, measured_bw: float | None = None,
          measured_flops: float | None = None, measured: Hardware | None = None) -> tuple[Roof, Roof | None]:
    """(nominal roof, measured roof or None). A measured profile fills what flags leave out."""
    nom = Roof(nominal.bandwidth_bytes_per_s, nominal.peak(compute_dtype))
    bw = measured_bw or (measured.bandwidth_bytes_per_s if measured else None)
    peak = measured_flops or (measured.peak_flop_per_s.get(compute_dtype) if measured else None)
    if bw is None and peak is None:
        return nom, None
    if measured is not None and peak is None:
        raise RoofcalcError(f"the hardware profile has no measured {compute_dtype} peak; add it or pass --measured-flops")
    # one measured number alone: the other side of the roof stays nominal, and the header says so
    return nom, Roof(bw or nom.bandwidth_bytes_per_s, peak or nom.peak_flop_per_s)


@dataclass(frozen=True)
class Placement:
    """One kernel instance on the roof."""

    kernel: Kernel
    roof: Roof
    launches: int
    launch_overhead_s: float
    measured_s: float | None = None

    @property
    def t_compute_s(self) -> float:
        return self.roof.t_compute(self.kernel.cost.flops)

    @property
    def t_memory_s(self) -> float:
        return self.roof.t_memory(self.kernel.cost.bytes)

    @property
    def t_floor_s(self) -> float:
        return max(self.t_compute_s, self.t_memory_s)

    @property
    def t_launch_s(self) -> float:
        return self.launches * self.launch_overhead_s

    @property
    def predicted_s(self) -> float:
        """The larger of the floor and the launch cost: what one instance should take at best."""
        return max(self.t_floor_s, self.t_launch_s)

    @property
    def bound(self) -> str:
        if self.t_launch_s > self.t_floor_s:
            return "overhead"
        return "compute" if self.t_compute_s > self.t_memory_s else "memory"

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
        """Above 3× the floor and not explained by launch overhead: the kernel has a problem."""
        m = self.floor_multiple
        return m is not None and m > FLAG_FLOOR_MULTIPLE and self.bound != "overhead"


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


def parse_point(text: str) -> Point:
    """NAME:FLOPS:BYTES:SECONDS, e.g. 'matmul 4096:1.374e11:1.007e8:2.75e-3'."""
    parts = text.rsplit(":", 3)
    if len(parts) != 4 or not parts[0]:
        raise RoofcalcError(f"--point '{text}' is not NAME:FLOPS:BYTES:SECONDS")
    try:
        flops, nbytes, seconds = (float(x) for x in parts[1:])
    except ValueError:
        raise RoofcalcError(f"--point '{text}': FLOPS, BYTES and SECONDS must be numbers") from None
    if not (flops > 0 and nbytes > 0 and seconds > 0) or math.inf in (flops, nbytes, seconds):
        raise RoofcalcError(f"--point '{text}': FLOPS, BYTES and SECONDS must be positive")
    return Point(parts[0], flops, nbytes, seconds)


@dataclass(frozen=True)
class StepVerdict:
    """The whole step on the roof."""

    placements: tuple[Placement, ...]
    roof: Roof
    impl: str
    launch_overhead_s: float
    flops: int
    bytes: int
    tpot_s: float | None = None

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
    def launches_per_layer(self) -> int:
        return sum(p.launches for p in self.placements if p.kernel.scope == "layer")

    @property
    def sum_launch_s(self) -> float:
        if self.impl == "cuda-graph":
            return self.launch_overhead_s  # one graph launch per step
        return self.launches_per_step * self.launch_overhead_s

    @property
    def predicted_lower_s(self) -> float:
        """Full overlap of CPU launching and GPU work."""
        return max(self.sum_floor_s, self.sum_launch_s)

    @property
    def predicted_upper_s(self) -> float:
        """No overlap: every launch waits for the GPU and the GPU for every launch."""
        return self.sum_floor_s + self.sum_launch_s

    @property
    def dominant(self) -> str:
        return "launch overhead" if self.sum_launch_s > self.sum_floor_s else "the kernels' floors"

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
    def launch_share_of_gap(self) -> float | None:
        """How much of distance 1 the launch model explains (with no overlap)."""
        gap = self.gap_s
        return None if gap is None or gap <= 0 else min(1.0, self.sum_launch_s / gap)

    @property
    def batching_headroom(self) -> float:
        """Distance 2: how far along the slope the ridge is (×) from this AI."""
        return self.roof.ridge / self.intensity


def place(analysis: Analysis, roof: Roof, *, impl: str = "hf-eager", launch_overhead_s: float = 5e-6,
          kernel_times: Mapping[str, float] | None = None, tpot_s: float | None = None) -> StepVerdict:
    if launch_overhead_s < 0:
        raise RoofcalcError("the launch overhead cannot be negative")
    times = dict(kernel_times or {})
    unknown = sorted(set(times) - {k.name for k in analysis.kernels})
    if unknown:
        names = ", ".join(k.name for k in analysis.kernels)
        raise RoofcalcError(f"kernel times name kernels this model has not: {', '.join(unknown)} (it has: {names})")
    graph = impl == "cuda-graph"
    placements = tuple(
        Placement(k, roof, launches(k, impl, analysis.workload.act_dtype.name), 0.0 if graph else launch_overhead_s,
                  times.get(k.name))
        for k in analysis.kernels
    )
    totals = analysis.totals
    return StepVerdict(placements, roof, impl, launch_overhead_s, totals.flops, totals.bytes, tpot_s)


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

    @property
    def roof(self) -> Roof:
        """The roof verdicts are made on: the measured one when there is one."""
        return self.measured or self.nominal


def roofline(analysis: Analysis, hardware: Hardware, *, measured_bw: float | None = None,
             measured_flops: float | None = None, measured_profile: Hardware | None = None,
             impl: str = "hf-eager", launch_overhead_s: float | None = None,
             kernel_times: Mapping[str, float] | None = None, tpot_s: float | None = None,
             points: tuple[Point, ...] = ()) -> Roofline:
    compute = analysis.workload.compute_dtype.name
    nominal, measured = roofs(hardware, compute, measured_bw, measured_flops, measured_profile)
    overhead = launch_overhead_s
    if overhead is None:
        overhead = measured_profile.launch_overhead_s if measured_profile else hardware.launch_overhead_s
    step = place(analysis, measured or nominal, impl=impl, launch_overhead_s=overhead, kernel_times=kernel_times,
                 tpot_s=tpot_s)
    return Roofline(analysis, hardware, compute, nominal, measured, step, tuple(points))
