"""Measuring a model on the machine at hand: time per output token and per-kernel times.

The real transformers model is built from its config with random weights (no download, no
remote code), on the chosen device and dtype. A prefill of S − 1 tokens fills the cache, then
decode steps run at context S (the cache is cropped back after each step, so every step
attends to the same S positions); their median is the TPOT. PROFILED_STEPS more steps run under
torch.profiler, one at a time, with every module's forward, the cache update and the rotary function
marked, so each ATen op can be credited to one of roofcalc's kernels; each kernel's time is its
median over the steps that credited it (one step's is not enough: on a CPU one concatenation of a
growing cache of a few MB took 3-4 ms in one profiled step and 0.3 in the next). On a CPU the cache
write is timed instead in the timed steps, outside the profiler (each layer's update, the median
step's total), and what the profiled steps credited it is kept beside it:

* an op inside a module whose name is a kernel's name (q_proj, down_proj, lm_head, the norms)
  belongs to that kernel (``attention[sliding]`` and the like by the layer it runs in);
* inside the attention module, the cache update is ``kv_cache_write``, the rotary functions
  (``apply_rotary*``) are ``rotary`` and the other computing ops (sdpa, or matmul and softmax)
  are ``attention``;
* inside the MLP, the activation module and the multiply are ``act_mul`` (``act`` ungated); a
  MoE layer's expert GEMMs are split between ``experts.gate_up_proj`` and ``experts.down_proj``
  by FLOPs, and its token sorting, gathers and scatter-adds are ``experts.combine``;
* additions directly in a decoder layer are its residual adds, in order; ops in the CausalLM's
  own forward after lm_head are Gemma 2's ``logit_softcap``.

Whatever is left (the rotary table, masks, glue copies) is reported as time outside the kernels.
"""

from __future__ import annotations

import inspect
import math
import statistics
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from .calculator import Analysis, Workload, analyze, dtype
from .dtypes import torch_names
from .errors import RoofcalcError
from .hardware import hw_file_warnings  # noqa: F401 (profile's own, and the CLI's)
from .measure import SOURCE_SPREAD, VIEW_OPS, LoadReading, LoadWatch, Progress, when_idle
from .shapes import shape_from_config
from .sources import load_config
from .units import ms

TORCH_DTYPES = tuple(torch_names())  # fp32, bf16, fp16
ATTENTION_OPS = ("scaled_dot_product", "aten::matmul", "aten::bmm", "aten::softmax", "aten::_softmax", "flash", "efficient")
MARK = "roofcalc::"


def _needs_torch(missing: str) -> RoofcalcError:
    """The one-line error of a profile without PyTorch or transformers, naming the missing one and the install."""
    from .inputs import torch_install

    return RoofcalcError(f"roofcalc profile needs PyTorch and transformers ({missing} is missing): {torch_install()}")


def _torch_present() -> None:
    """_torch()'s one-line error where PyTorch or transformers is not installed, without importing them (seconds):
    a run that will fail on its model first fails at once."""
    import importlib.util

    for name in ("torch", "transformers"):
        if importlib.util.find_spec(name) is None:
            raise _needs_torch(name)


def _torch():
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise _needs_torch(exc.name) from None
    return torch, transformers


@dataclass
class KernelTime:
    name: str
    seconds: float = 0.0  # all instances in a step (median_profile: the median over the profiled steps)
    ops: int = 0  # ATen ops credited to it


@dataclass
class ProfileResult:
    analysis: Analysis
    device: str
    tpot_s: float  # median decode step
    step_times_s: tuple[float, ...]
    ttft_s: float | None  # the prefill (None: the cache was filled with random values instead)
    profiled_step_s: float  # median wall time of the steps run under the profiler (it adds its own overhead)
    kernels: dict  # roofcalc kernel name -> KernelTime
    other_s: float  # op time not credited to any kernel
    other_ops: dict = field(default_factory=dict)  # op name -> seconds, every op credited to no kernel
    other_count: int = 0  # ATen ops credited to no kernel
    load: LoadReading | None = None  # the load average around the run (measure.LoadWatch)
    profiled_steps_s: tuple[float, ...] = ()  # each profiled step's wall time
    profiled_sums_s: tuple[float, ...] = ()  # each profiled step's op time, credited or not
    cache_write_profiled_s: float | None = None  # on a CPU: what the profiled steps credited the cache write, whose
    #                                              kernels (cache_write_kernels) hold its time outside the profiler
    cache_write_kernels: tuple[str, ...] = ()

    @property
    def biggest_other_ops(self) -> dict:
        """The five ops outside the kernels that took longest."""
        return dict(sorted(self.other_ops.items(), key=lambda kv: -kv[1])[:5])

    @property
    def kernel_times(self) -> dict[str, float]:
        """Seconds per kernel instance, for :func:`roofcalc.roofline.roofline`."""
        out = {}
        for k in self.analysis.kernels:
            t = self.kernels.get(k.name)
            if t is not None and t.seconds > 0:
                out[k.name] = t.seconds / k.count
        return out

    @property
    def unmatched(self) -> list[str]:
        return [k.name for k in self.analysis.kernels if k.name not in self.kernel_times]

    @property
    def kernel_sum_s(self) -> float:
        """The kernels' measured seconds a step: each kernel's median over the profiled steps (on a CPU the cache
        write's from the timed steps), so not one step's sum (profiled_sums_s holds those)."""
        return sum(t.seconds for t in self.kernels.values())


def _memory_check(torch, device: str, need: int) -> None:
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
    else:
        from .measure import available_memory_bytes

        free = available_memory_bytes()
    if free is not None and need > free:
        raise RoofcalcError(f"the model needs about {need / 1e9:.1f} GB here (weights, KV cache, activations) and "
                            f"only {free / 1e9:.1f} GB is free; pick a smaller --batch, --context or --dtype")


def _fill(torch, model) -> None:
    """Random weights, fast: one random block tiled over every parameter (values do not change timing)."""
    gen = torch.Generator().manual_seed(0)
    base = (torch.rand(1 << 20, generator=gen) * 0.04 - 0.02)
    with torch.no_grad():
        for p in model.parameters():
            flat = p.view(-1)
            block = base.to(device=p.device, dtype=p.dtype)
            for i in range(0, flat.numel(), block.numel()):
                n = min(block.numel(), flat.numel() - i)
                flat[i:i + n].copy_(block[:n])


def build_model(cfg: dict, device: str, torch_dtype):
    torch, transformers = _torch()
    hf_cfg = transformers.AutoConfig.for_model(**cfg)
    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # pragma: no cover - other transformers versions
        no_init_weights = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if no_init_weights is not None:
            with no_init_weights(), torch.device(device):
                model = transformers.AutoModelForCausalLM.from_config(hf_cfg, dtype=torch_dtype)
        else:  # pragma: no cover
            with torch.device(device):
                model = transformers.AutoModelForCausalLM.from_config(hf_cfg, dtype=torch_dtype)
    _fill(torch, model)
    return model.eval(), hf_cfg


@contextmanager
def _marks(torch, model, cache):
    """record_function ranges around every module's forward, the cache update and rotary."""
    from torch.autograd.profiler import record_function

    handles, open_ranges = [], []
    for name, module in model.named_modules():
        if not name:
            continue

        def pre(mod, args, _name=name):
            r = record_function(MARK + "module:" + _name)
            r.__enter__()
            open_ranges.append(r)

        def post(mod, args, out):
            open_ranges.pop().__exit__(None, None, None)
            return None  # anything else would replace the module's output

        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    original_update = cache.update

    def update(*a, **k):
        with record_function(MARK + "kv_cache_write"):
            return original_update(*a, **k)

    cache.update = update
    modeling = sys.modules[type(model).__module__]
    originals = {n: f for n, f in vars(modeling).items() if n.startswith("apply_rotary") and callable(f)}

    def marked(fn):
        def rotary(*a, **k):
            with record_function(MARK + "rotary"):
                return fn(*a, **k)
        return rotary

    for n, f in originals.items():
        setattr(modeling, n, marked(f))
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        cache.update = original_update
        for n, f in originals.items():
            setattr(modeling, n, f)


@contextmanager
def _silent_stderr():
    """torch's profiler announces its start and stop on file descriptor 2; the user asked for a table."""
    import os

    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _marks_of(event) -> list[str]:
    """The roofcalc ranges enclosing an op, innermost first."""
    out, e = [], event.cpu_parent
    while e is not None:
        if e.name.startswith(MARK):
            out.append(e.name[len(MARK):])
        e = e.cpu_parent
    return out


def _layer_of(marks: list[str]) -> int | None:
    for m in marks:
        parts = m.split(":", 1)[-1].split(".")
        for i in range(len(parts) - 1):
            if parts[i] in ("layers", "h") and parts[i + 1].isdigit():
                return int(parts[i + 1])
    return None


def _resolver(analysis: Analysis):
    """name -> the kernel that layer ``i`` runs under that name (``attention[sliding]`` where layers differ)."""
    from .calculator import _label, _layer_groups

    names = {k.name for k in analysis.kernels}
    shape = analysis.shape
    keys = [k for k, _ in _layer_groups(shape)]

    def resolve(base: str, layer: int | None) -> str | None:
        if base in names:
            return base
        if layer is not None:
            typed = f"{base}[{_label((shape.layer_types[layer], shape.layer_mlp_types[layer]), keys)}]"
            if typed in names:
                return typed
        return None

    return resolve


SOFTCAP_OPS = ("aten::div", "aten::tanh", "aten::mul")


def _credit(event, marks: list[str], names: set[str], layer_adds: dict, analysis: Analysis,
            resolve=None) -> str | None:
    """The roofcalc kernel an op belongs to, or None."""
    op = event.name
    resolve = resolve or _resolver(analysis)
    layer = _layer_of(marks)
    if not marks:  # the CausalLM's own forward, after lm_head: Gemma 2's logit soft-capping
        return "logit_softcap" if op in SOFTCAP_OPS and "logit_softcap" in names else None
    for m in marks:
        if m in ("kv_cache_write", "rotary"):
            return resolve(m, layer)
        path = m.split(":", 1)[1]
        parts = path.split(".")
        leaf, leaf2 = parts[-1], ".".join(parts[-2:])
        for candidate in (leaf2, leaf):
            hit = resolve(candidate, layer)
            if hit is not None:
                return hit
        if leaf in ("act_fn", "act", "activation_fn"):
            for group in ("shared_experts", "experts"):
                if group in parts:
                    return resolve(f"{group}.act_mul", layer)
            return resolve("act_mul", layer) or resolve("act", layer)
        if leaf == "experts":
            # the expert GEMMs are split between the two projections by FLOPs; the token sorting,
            # gathers, routing-weight multiplies and scatter-adds are the combine
            return "experts" if op in ("aten::mm", "aten::bmm", "aten::linear", "aten::addmm", "aten::matmul") or \
                "grouped_mm" in op else "experts.combine"
        if leaf == "shared_experts":
            return "shared_experts.act_mul" if op in ("aten::mul", "aten::mul_") else None
        if leaf in ("self_attn", "attn", "attention"):
            if any(a in op for a in ATTENTION_OPS):
                return resolve("attention", layer)
            return None
        if leaf in ("mlp", "feed_forward"):
            if op in ("aten::mul", "aten::mul_"):
                return "act_mul" if "act_mul" in names else None
            if op in ("aten::add", "aten::add_") and "shared_experts.add" in names:
                return "shared_experts.add"
            return None
        if parts[-2:-1] and parts[-2] in ("layers", "h") and leaf.isdigit():
            if op in ("aten::add", "aten::add_"):
                i = layer_adds.get(path, 0)
                layer_adds[path] = i + 1
                return ("attn_residual", "mlp_residual")[min(i, 1)]
            return None
    return None


MAX_PREFILL_S = 60.0  # a prefill predicted to take longer than this fills the cache with random values instead


def _fill_cache(torch, cache, shape, batch: int, tokens: int, device: str, torch_dtype) -> None:
    """The cache a prefill of ``tokens`` tokens would leave, with random values (no compute)."""
    for layer in range(shape.n_layers):
        if shape.mla:
            k = torch.randn(batch, 1, tokens, shape.mla.kv_lora_rank, device=device, dtype=torch_dtype)
            v = torch.randn(batch, 1, tokens, shape.mla.qk_rope_head_dim, device=device, dtype=torch_dtype)
        else:
            k = torch.randn(batch, shape.n_kv_heads, tokens, shape.head_dim, device=device, dtype=torch_dtype)
            v = torch.randn_like(k)
        cache.update(k, v, layer)


def profile_inputs(source: str, *, device: str = "cpu", dtype_name: str = "fp32", context: int = 500,
                   family: str | None = None):
    """(config, name, shape) of the model to profile, once every input is checked: what ``roofcalc profile``
    refuses, it refuses here, before it measures the device."""
    if dtype_name not in TORCH_DTYPES:
        raise RoofcalcError(f"--dtype {dtype_name}: profile runs fp32, bf16 or fp16")
    if device not in ("cpu", "cuda"):
        raise RoofcalcError(f"--device {device}: use cpu or cuda")
    if context < 2:
        raise RoofcalcError("--context must be at least 2 (a prefill of context - 1 tokens, then the step)")
    _torch_present()
    cfg, name, _, _ = load_config(source)  # a model that cannot be read fails before torch's seconds of import
    shape = shape_from_config(cfg, name, family)
    torch, _ = _torch()
    if device == "cuda" and not torch.cuda.is_available():
        raise RoofcalcError("--device cuda: no CUDA device is visible to PyTorch here (use --device cpu)")
    return cfg, name, shape


def profile_model(source: str, *, device: str = "cpu", dtype_name: str = "fp32", batch: int = 1,
                  context: int = 500, steps: int = 8, family: str | None = None, quiet: bool = False,
                  peak_flop_per_s: float | None = None, prefill: bool | None = None, inputs=None) -> ProfileResult:
    """``prefill``: run the real prefill (True), fill the cache with random values (False), or decide
    (None): the real one unless ``peak_flop_per_s`` says it would take more than a minute. ``inputs``:
    profile_inputs' answer for these arguments, where the caller has it."""
    torch, transformers = _torch()
    cfg, name, shape = inputs or profile_inputs(source, device=device, dtype_name=dtype_name, context=context,
                                                family=family)
    watch = LoadWatch()
    d = dtype(dtype_name)
    # the profiled step runs transformers' eager modules and its DynamicCache, which concatenates its cache every step
    analysis = analyze(shape, Workload.decode(batch, context, weight_dtype=d, act_dtype=d, kv_dtype=d,
                                              cache_update="concat", eager_ops=True))
    # a layer's working memory (its tensors once each, not the eager ops' traffic)
    prefill_step = analyze(shape, Workload.prefill(batch, context - 1, weight_dtype=d, act_dtype=d, kv_dtype=d,
                                                   eager_ops=False))
    work = prefill_step.totals.activation_bytes // max(1, shape.n_layers)
    need = int(1.1 * (analysis.weight_storage_bytes + batch * context * analysis.kv_bytes_per_token + 4 * work))
    _memory_check(torch, device, need)
    torch_dtype = getattr(torch, torch_names()[dtype_name])

    # the bar's steps: building the model, filling its cache, the warm-up step, each timed step, the profiled ones
    with Progress("profile", 3 + steps + PROFILED_STEPS, quiet) as say:
        say(f"building {name} ({analysis.weight_storage_bytes / 1e9:.2f} GB of {dtype_name} weights) on {device}")
        model, hf_cfg = build_model(cfg, device, torch_dtype)
        cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        cache = transformers.DynamicCache(config=hf_cfg)
        ids = torch.zeros((batch, context - 1), dtype=torch.long, device=device)
        one = torch.zeros((batch, 1), dtype=torch.long, device=device)

        def sync():
            if device == "cuda":
                torch.cuda.synchronize()

        def step():
            model(input_ids=one, use_cache=True, **{cache_kw: cache})
            sync()
            cache.crop(-1)  # back to context - 1 cached tokens: every step attends to `context` positions

        if prefill is None:
            estimate = prefill_step.totals.flops / peak_flop_per_s if peak_flop_per_s else 0.0
            prefill = estimate <= MAX_PREFILL_S
            if not prefill:
                say.note(f"a prefill of {context - 1} tokens would take about {estimate:.0f} s at the measured "
                         f"{peak_flop_per_s / 1e9:.3g} GFLOP/s; filling the cache with random values instead")
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sync()
            t0 = time.perf_counter()
            if prefill:
                say(f"prefill of {batch} x {context - 1} tokens")
                model(input_ids=ids, use_cache=True, logits_to_keep=1, **{cache_kw: cache})
            else:
                say.tick(f"the cache of {batch} x {context - 1} tokens filled with random values")
                _fill_cache(torch, cache, shape, batch, context - 1, device, torch_dtype)
            if hasattr(cache, "activate_past_recording"):  # sliding-window layers: keep what crop() rolls back
                cache.activate_past_recording()
            sync()
            ttft = time.perf_counter() - t0 if prefill else None
            say(f"{steps} decode steps at context {context}")
            step()  # warm-up
            times, writes = [], []
            resolve = _resolver(analysis)
            with _timed_updates(cache, device == "cpu") as spent:
                for i in range(steps):
                    say.tick(f"decode step {i + 1} of {steps} at context {context}")
                    n = len(spent)
                    t0 = time.perf_counter()
                    step()
                    times.append(time.perf_counter() - t0)
                    per: dict[str, float] = {}
                    for layer, seconds in spent[n:]:  # each layer's update to its kernel (kv_cache_write[sliding]...)
                        name = resolve("kv_cache_write", layer)
                        if name is not None:
                            per[name] = per.get(name, 0.0) + seconds
                    writes.append(per)
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
            runs = []
            for i in range(PROFILED_STEPS):
                say(f"step {i + 1} of {PROFILED_STEPS} under torch.profiler")
                with _marks(torch, model, cache), _silent_stderr(), profile(activities=activities) as prof:
                    t0 = time.perf_counter()
                    step()
                    profiled = time.perf_counter() - t0
                runs.append(_attribute(prof, analysis, device, statistics.median(times), tuple(times), ttft, profiled))
    result = median_profile(runs)
    timed = tuple(dict.fromkeys(name for per in writes for name in per))
    if timed:  # a CPU's cache updates, timed outside the profiler
        result.cache_write_profiled_s = sum(result.kernels[n].seconds for n in timed if n in result.kernels)
        for name in timed:
            ops = result.kernels[name].ops if name in result.kernels else 0
            result.kernels[name] = KernelTime(name, statistics.median(per.get(name, 0.0) for per in writes), ops)
        result.cache_write_kernels = timed
    result.load = watch.stop()
    return result


@contextmanager
def _timed_updates(cache, on: bool):
    """On a CPU, (layer, wall time) of each cache update (transformers' concatenation of a layer's K and V) in a
    list, outside the profiler: under it a step's concatenations (the cache's and rotary's) took 1x to 24x their
    unprofiled time from one profiled step to the next, in one run of four (docs/validation.md, "This machine"). A
    GPU's updates are asynchronous: its profiled device times stand."""
    spent: list[tuple[int | None, float]] = []
    if not on:
        yield spent
        return
    original = cache.update

    def update(*a, **k):
        layer = a[2] if len(a) > 2 else k.get("layer_idx")
        t0 = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            spent.append((layer if isinstance(layer, int) else None, time.perf_counter() - t0))

    cache.update = update
    try:
        yield spent
    finally:
        cache.update = original


PROFILED_STEPS = 3  # steps run under the profiler; each kernel's time is its median over them


def median_profile(runs: list[ProfileResult]) -> ProfileResult:
    """One ProfileResult of several profiled steps (the same model and step): each kernel's seconds the median over
    the steps that credited it (one that did not saw none of its ops take time), the time outside the kernels and
    each op there the median over all of them (0 where a step had none), the profiled step's wall time the median
    one; each step's own wall time and op time are kept (profiled_steps_s, profiled_sums_s)."""
    med = statistics.median
    kernels = {}
    for name in dict.fromkeys(name for r in runs for name in r.kernels):
        credited = [r.kernels[name] for r in runs if name in r.kernels]
        kernels[name] = KernelTime(name, med(k.seconds for k in credited), credited[0].ops)
    other_ops = {op: med(r.other_ops.get(op, 0.0) for r in runs) for op in dict.fromkeys(o for r in runs
                                                                                          for o in r.other_ops)}
    walls = tuple(r.profiled_step_s for r in runs)
    return replace(runs[0], kernels=kernels, other_s=med(r.other_s for r in runs), other_ops=other_ops,
                   other_count=round(med(r.other_count for r in runs)), profiled_step_s=med(walls),
                   profiled_steps_s=walls, profiled_sums_s=tuple(r.kernel_sum_s + r.other_s for r in runs))


def _attribute(prof, analysis: Analysis, device: str, tpot: float, times, ttft: float, profiled: float) -> ProfileResult:
    names = {k.name for k in analysis.kernels}
    kernels: dict[str, KernelTime] = {}
    other: dict[str, float] = {}
    other_count = 0
    layer_adds: dict[str, int] = {}
    experts = [k for k in analysis.kernels if k.role == "experts"]
    resolve = _resolver(analysis)
    for e in prof.events():
        if not e.name.startswith("aten::") or e.name in VIEW_OPS:
            continue
        parent = e.cpu_parent
        if parent is not None and parent.name.startswith("aten::"):
            continue  # counted with its top-level op
        seconds = (e.device_time_total if device == "cuda" else e.cpu_time_total) / 1e6
        if seconds <= 0:
            continue
        target = _credit(e, _marks_of(e), names, layer_adds, analysis, resolve)
        if target == "experts" and experts:  # one module runs both expert projections: split by FLOPs
            total = sum(k.cost.flops for k in experts) or 1
            for k in experts:
                kernels.setdefault(k.name, KernelTime(k.name)).seconds += seconds * k.cost.flops / total
            continue
        if target is None or target not in names:
            other[e.name] = other.get(e.name, 0.0) + seconds
            other_count += 1
            continue
        kt = kernels.setdefault(target, KernelTime(target))
        kt.seconds += seconds
        kt.ops += 1
    return ProfileResult(analysis, device, tpot, times, ttft, profiled, kernels, sum(other.values()), other,
                         other_count)


# --------------------------------------------------------------------------- what the timings are worth


def prediction_check(st) -> dict:
    """Whether the step's range says anything: its upper ÷ lower against the bound its sources allow, the
    lower-end-to-expected distance widened by SOURCE_SPREAD (no cited default's pessimistic end lies further
    from its expected one); wider, the range is not informative, and a measurement inside it is no sign the
    prediction held. A calibrated range (predict.StepTimes.band) is informative as it is: its width is what
    measured steps needed (data/calibration.json), not a spread of sources."""
    lower, expected, upper = st.predicted_lower_s, st.predicted_s, st.predicted_upper_s
    width = upper / lower if lower > 0 else math.inf
    bound = SOURCE_SPREAD * expected / lower if lower > 0 else math.inf
    informative = bool(st.times.band) or width <= bound * (1 + 1e-9)  # exactly at the bound: still informative
    return {"lower_s": lower, "predicted_s": expected, "upper_s": upper, "upper_over_lower": width,
            "bound": bound, "informative": informative, "calibrated": bool(st.times.band)}


@dataclass(frozen=True)
class ProfileTrust:
    """What may have spoilt a profile's timings, and whether its prediction's range says anything."""

    load: LoadReading | None
    steps_apart: float  # the slowest timed decode step over the fastest
    kernel_sum_s: float  # the profiled step's ops credited to kernels
    tpot_s: float  # the timed steps' median
    expected_ratio: float  # the step model's step over its device time: what TPOT / kernel sum should be near
    prediction: dict  # prediction_check
    verdict: str  # "inside", "outside" or "not informative" (inside a range that says nothing)
    # the device measurement's: the --hw-file's (hardware.hw_file_warnings), or those of the measurement this run
    # made first (no --hw-file)
    measure_warnings: tuple[str, ...] = ()
    profiled_apart: float = 1.0  # the slowest profiled step over the fastest (the kernel times are their medians)

    @property
    def host_s(self) -> float | None:
        """TPOT less the kernels' sum; None where the kernels took longer than the step (no host time to tell)."""
        left = self.tpot_s - self.kernel_sum_s
        return left if left >= 0 else None

    @property
    def step_over_kernels(self) -> float | None:
        return self.tpot_s / self.kernel_sum_s if self.kernel_sum_s > 0 else None

    def warnings(self) -> list[str]:
        """Every warning: the device measurement's (measure_warnings), this run's own timings' (run_warnings), and
        a range that says nothing."""
        out = [*self.measure_warnings, *self.run_warnings()]
        if not self.prediction["informative"]:
            out.append("warning   the range is not informative: run `roofcalc measure --out` again on an idle "
                       "machine")
        return out

    def run_warnings(self) -> list[str]:
        """What spoilt this run's own timings (a busy machine, steps far apart, kernels that outlast the step, a
        step far off its kernels' sum): the figures `profile --update` would write are not to be kept."""
        again = when_idle("profile")
        out = []
        if self.load is not None and self.load.warning("profile"):
            out.append(self.load.warning("profile"))
        if self.steps_apart >= SOURCE_SPREAD:
            out.append(f"warning   decode steps up to {self.steps_apart:.2g}x apart: {again}")
        if self.profiled_apart >= SOURCE_SPREAD:
            out.append(f"warning   profiled steps up to {self.profiled_apart:.2g}x apart (each kernel's time is their "
                       f"median): {again}")
        if self.host_s is None:
            out.append(f"warning   kernels' sum {ms(self.kernel_sum_s)} ms > TPOT {ms(self.tpot_s)} ms, timings "
                       f"disagree: {again}")
        ratio = self.step_over_kernels
        if ratio is not None and ratio > SOURCE_SPREAD * self.expected_ratio:
            out.append(f"warning   TPOT {ratio:.2g}x the kernels' sum (the model expects {self.expected_ratio:.2g}x): "
                       f"{again}")
        return out

    def record(self) -> dict:
        return {**(self.load.record() if self.load is not None else {}), "spread_limit": SOURCE_SPREAD,
                "steps_apart": self.steps_apart, "profiled_apart": self.profiled_apart, "measured_host_s": self.host_s,
                "kernels_exceed_step": self.host_s is None, "step_over_kernels": self.step_over_kernels,
                "expected_step_over_kernels": self.expected_ratio, "prediction": self.prediction,
                "verdict": self.verdict, "warnings": [w.split(None, 1)[1] for w in self.warnings()]}


def profile_trust(p: ProfileResult, r, measure_warnings=()) -> ProfileTrust:
    """The checks on a profile ``p`` placed on its roofline ``r`` (roofline(..., kernel_times, tpot_s))."""
    st = r.step
    pred = prediction_check(st)
    verdict = "outside" if not st.times.holds(p.tpot_s) else "inside" if pred["informative"] else "not informative"
    device = st.times.device_s
    profiled = [x for x in p.profiled_steps_s if x > 0]
    return ProfileTrust(p.load, max(p.step_times_s) / min(p.step_times_s), p.kernel_sum_s, p.tpot_s,
                        st.predicted_s / device if device > 0 else math.inf, pred, verdict, tuple(measure_warnings),
                        max(profiled) / min(profiled) if profiled else 1.0)


def profile_record(p: ProfileResult, trust: ProfileTrust) -> dict:
    """What ``roofcalc profile`` measured, and its trust checks (``--format json``'s ``profile``)."""
    return {"device": p.device, "tpot_s": p.tpot_s, "step_times_s": list(p.step_times_s), "ttft_s": p.ttft_s,
            "profiled_step_s": p.profiled_step_s, "profiled_steps_s": list(p.profiled_steps_s),
            "profiled_sums_s": list(p.profiled_sums_s), "cache_write_profiled_s": p.cache_write_profiled_s,
            "kernel_sum_s": p.kernel_sum_s, "other_s": p.other_s,
            "other_ops_s": p.biggest_other_ops, "unmatched": p.unmatched,
            "kernels": {k: {"seconds_per_step": t.seconds, "ops": t.ops} for k, t in p.kernels.items()},
            "trust": trust.record()}


def _timed_dispatch_words(st) -> str:
    """On a CPU a profiled kernel's time holds its eager ops' dispatch (Placement.dispatch_s), which the step model
    puts in its host part: the host time predicted outside the kernels, as TPOT less the kernels measures it; "" on a
    GPU, whose kernels' times hold none."""
    held = sum(pl.dispatch_s * pl.kernel.count for pl in st.placements)
    if not held:
        return ""
    return (f", {ms(held)} ms of it the kernels' own dispatch, which their profiled times hold: "
            f"{ms(max(0.0, st.times.host_s - held))} ms outside them")


def _median_words(p: ProfileResult) -> str:
    return f" (the median of {', '.join(ms(x) for x in p.profiled_steps_s)} ms)" if len(p.profiled_steps_s) > 1 else ""


VERDICT_WORDS = {"inside": "(inside the range)", "outside": "(outside the range)",
                 "not informative": "(no verdict: the range is not informative)"}


def profile_lines(p: ProfileResult, r, trust: ProfileTrust) -> list[str]:
    """The measured step against the model: predicted vs measured TPOT, the device and host parts, the gap,
    and a warning line for each check that failed."""
    from .predict import range_name
    from .report import host_words

    st = r.step
    t = st.times
    err = p.tpot_s / st.predicted_s - 1
    pred = trust.prediction
    span = f"{range_name(t.band)} {ms(st.predicted_lower_s)} to {ms(st.predicted_upper_s)} ms" + (
        "" if pred["informative"] else f", {pred['upper_over_lower']:.3g}x wide where its sources allow "
                                       f"{pred['bound']:.3g}x: not informative")
    host = trust.host_s
    lines = [
        f"profiled  {p.device}: "
        + (f"prefill of {r.analysis.workload.kv_len - 1} tokens {ms(p.ttft_s)} ms; " if p.ttft_s is not None
           else f"cache of {r.analysis.workload.kv_len - 1} tokens filled with random values (prefill skipped); ")
        + f"{len(p.step_times_s)} decode steps, median TPOT {ms(p.tpot_s)} ms "
        f"(min {ms(min(p.step_times_s))}, max {ms(max(p.step_times_s))})",
        f"predicted TPOT {ms(st.predicted_s)} ms ({span}); measured {ms(p.tpot_s)} ms, {abs(100 * err):.0f}% "
        f"{'above' if err >= 0 else 'below'} the prediction " + VERDICT_WORDS[trust.verdict],
        f"device    predicted {ms(t.device_s)} ms of kernels; the measured ops sum to {ms(p.kernel_sum_s)} ms "
        f"in roofcalc's kernels + {ms(p.other_s)} ms outside them"
        + (f" (each the median of {len(p.profiled_steps_s)} profiled steps"
           + ("; the cache write timed outside the profiler" if p.cache_write_kernels else "") + ")"
           if len(p.profiled_steps_s) > 1 else ""),
        f"host      predicted {ms(t.host_s)} ms ({host_words(r)}){_timed_dispatch_words(st)}; measured TPOT less "
        f"roofcalc's kernels: "
        + ((f"{ms(host)} ms" + (f", {ms(p.other_s)} ms of it the profiled ops outside them" if p.other_s > 0 else "")
            + (" (host and device add up here)" if not t.overlap else " (host and device overlap here)"))
           if host is not None else "none to tell (the kernels' sum exceeds the TPOT)"),
        f"gap       measured {ms(p.tpot_s)} ms = floors {ms(st.sum_floor_s)} ms "
        f"({100 * st.sum_floor_s / p.tpot_s:.0f}% of the measured) + kernels below their roof "
        f"{ms((p.kernel_sum_s - st.sum_floor_s))} ms + outside the kernels {ms(host)} ms; "
        f"the step took {ms(p.profiled_step_s)} ms under the profiler{_median_words(p)}" if host is not None else
        f"gap       measured {ms(p.tpot_s)} ms against floors {ms(st.sum_floor_s)} ms "
        f"({100 * st.sum_floor_s / p.tpot_s:.0f}% of the measured); not split: the profiled step's kernels took "
        f"{ms(p.kernel_sum_s)} ms, {ms(p.kernel_sum_s - p.tpot_s)} ms more than the timed steps' median; "
        f"it took {ms(p.profiled_step_s)} ms under the profiler{_median_words(p)}",
    ]
    # (a kernel faster than its floor: the report's own faster line, above these, says it by what it beats)
    if p.cache_write_profiled_s is not None:
        timed = sum(p.kernels[n].seconds for n in p.cache_write_kernels)
        lines.append(f"cache     {', '.join(p.cache_write_kernels)} timed outside the profiler: {ms(timed)} ms a step "
                     f"(the median of the {len(p.step_times_s)} timed steps); the profiled steps credited "
                     f"{ms(p.cache_write_profiled_s)} ms (on a CPU the profiler can slow a growing cache's concatenation "
                     f"many times over)")
    if p.other_ops:
        lines.append("outside   " + ", ".join(f"{k} {ms(v)} ms" for k, v in p.biggest_other_ops.items()))
    lines.append("unmatched " + (", ".join(p.unmatched) if p.unmatched else "none: every kernel got a measured time"))
    return lines + trust.warnings()


# --------------------------------------------------------------------------- closing the loop


def updated_model(p: ProfileResult, r, note: str, warned: str = ""):
    """The roofline's kernel model with what the profile measured written in: the matmul curve at
    this step's rows, the GEMV and decode-attention efficiencies (median over the measured
    kernels, floor over measured time), and the host's seconds per op (TPOT minus the kernels'
    time, per eager op, where host and device add up; TPOT per op where a GPU step is host-bound).
    ``warned``: what the run's checks warned of, ending each figure's note (after how it was derived)."""
    import statistics
    from dataclasses import replace

    from .predict import DEQUANT, Efficiency

    m = r.model
    classes, curves = dict(m.classes), {k: list(v) for k, v in m.curves.items()}
    by_class: dict[str, list[tuple[int, int, float]]] = {}
    for pl in r.step.placements:
        if pl.measured_s is None or pl.kernel.kind not in ("matmul", "attention") or pl.weight_format in DEQUANT:
            continue
        e = min(1.0, pl.t_floor_s / pl.measured_s)
        by_class.setdefault(pl.efficiency_class, []).append((pl.term.rows, pl.kernel.cost.weight_bytes, e))
    for name, pts in by_class.items():
        es = [e for _, _, e in pts]
        old = classes[name]
        spread = old.pessimistic / old.expected if old.expected else 1.0
        classes[name] = Efficiency(statistics.median(es), statistics.median(es) * spread, "measured", note + warned)
        if name in ("gemv", "gemm"):  # each measured (rows, weight size) replaces the curve's point there
            new = {(float(r_), float(w)): e for r_, w, e in pts}
            kept = [pt for pt in curves.get("matmul", []) if (pt[0], pt[1]) not in new]
            curves["matmul"] = sorted(kept + [(r_, w, e) for (r_, w), e in new.items()])
    ops = r.step.launches_per_step
    host = m.host_per_op_s
    if not m.overlap and p.tpot_s > p.kernel_sum_s:
        per = (p.tpot_s - p.kernel_sum_s) / ops
        host = Efficiency(per, max(per, host.pessimistic), "measured", note + ": TPOT minus the kernels, per op" + warned)
    elif m.overlap and p.tpot_s > 1.1 * p.kernel_sum_s:
        per = p.tpot_s / ops
        host = Efficiency(per, max(per, host.pessimistic), "measured", note + ": a host-bound step, TPOT per op" + warned)
    return replace(m, classes=classes, host_per_op_s=host, curves={k: tuple(v) for k, v in curves.items()},
                   relative_to="measured")
