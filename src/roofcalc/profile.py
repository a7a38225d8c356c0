"""Measuring a model on the machine at hand: time per output token and per-kernel times.

The real transformers model is built from its config with random weights (no download, no
remote code), on the chosen device and dtype. A prefill of S − 1 tokens fills the cache, then
decode steps run at context S (the cache is cropped back after each step, so every step
attends to the same S positions); their median is the TPOT. One more step runs under
torch.profiler, with every module's forward, the cache update and the rotary function marked,
so each ATen op can be credited to one of roofcalc's kernels:

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
import statistics
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

from .calculator import Analysis, Workload, analyze, dtype
from .dtypes import torch_names
from .errors import RoofcalcError
from .measure import VIEW_OPS, Progress
from .shapes import shape_from_config
from .sources import load_config

TORCH_DTYPES = tuple(torch_names())  # fp32, bf16, fp16
ATTENTION_OPS = ("scaled_dot_product", "aten::matmul", "aten::bmm", "aten::softmax", "aten::_softmax", "flash", "efficient")
MARK = "roofcalc::"


def _torch():
    try:
        import torch
        import transformers
    except ImportError as exc:
        from .inputs import torch_install

        raise RoofcalcError(f"roofcalc profile needs PyTorch and transformers ({exc.name} is missing): "
                            f"{torch_install()}") from None
    return torch, transformers


@dataclass
class KernelTime:
    name: str
    seconds: float = 0.0  # all instances in the profiled step
    ops: int = 0  # ATen ops credited to it


@dataclass
class ProfileResult:
    analysis: Analysis
    device: str
    tpot_s: float  # median decode step
    step_times_s: tuple[float, ...]
    ttft_s: float | None  # the prefill (None: the cache was filled with random values instead)
    profiled_step_s: float  # wall time of the step run under the profiler (it adds its own overhead)
    kernels: dict  # roofcalc kernel name -> KernelTime
    other_s: float  # op time not credited to any kernel
    other_ops: dict = field(default_factory=dict)  # op name -> seconds, for the biggest leftovers
    other_count: int = 0  # ATen ops credited to no kernel

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


def profile_model(source: str, *, device: str = "cpu", dtype_name: str = "fp32", batch: int = 1,
                  context: int = 500, steps: int = 8, family: str | None = None, quiet: bool = False,
                  peak_flop_per_s: float | None = None, prefill: bool | None = None) -> ProfileResult:
    """``prefill``: run the real prefill (True), fill the cache with random values (False), or decide
    (None): the real one unless ``peak_flop_per_s`` says it would take more than a minute."""
    torch, transformers = _torch()
    if dtype_name not in TORCH_DTYPES:
        raise RoofcalcError(f"--dtype {dtype_name}: profile runs fp32, bf16 or fp16")
    if device == "cuda" and not torch.cuda.is_available():
        raise RoofcalcError("--device cuda: no CUDA device is visible to PyTorch here (use --device cpu)")
    if device not in ("cpu", "cuda"):
        raise RoofcalcError(f"--device {device}: use cpu or cuda")
    if context < 2:
        raise RoofcalcError("--context must be at least 2 (a prefill of context - 1 tokens, then the step)")
    cfg, name, _, _ = load_config(source)
    shape = shape_from_config(cfg, name, family)
    d = dtype(dtype_name)
    # the profiled step runs transformers' DynamicCache, which concatenates its cache every step
    analysis = analyze(shape, Workload.decode(batch, context, weight_dtype=d, act_dtype=d, kv_dtype=d,
                                              cache_update="concat"))
    prefill_step = analyze(shape, Workload.prefill(batch, context - 1, weight_dtype=d, act_dtype=d, kv_dtype=d))
    work = prefill_step.totals.activation_bytes // max(1, shape.n_layers)
    need = int(1.1 * (analysis.weight_storage_bytes + batch * context * analysis.kv_bytes_per_token + 4 * work))
    _memory_check(torch, device, need)
    torch_dtype = getattr(torch, torch_names()[dtype_name])

    # the bar's steps: building the model, filling its cache, the warm-up step, each timed step, the profiled one
    with Progress("profile", 4 + steps, quiet) as say:
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
            times = []
            for i in range(steps):
                say.tick(f"decode step {i + 1} of {steps} at context {context}")
                t0 = time.perf_counter()
                step()
                times.append(time.perf_counter() - t0)
            say("one step under torch.profiler")
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
            with _marks(torch, model, cache), _silent_stderr(), profile(activities=activities) as prof:
                t0 = time.perf_counter()
                step()
                profiled = time.perf_counter() - t0
    return _attribute(prof, analysis, device, statistics.median(times), tuple(times), ttft, profiled)


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
    biggest = dict(sorted(other.items(), key=lambda kv: -kv[1])[:5])
    return ProfileResult(analysis, device, tpot, times, ttft, profiled, kernels, sum(other.values()), biggest,
                         other_count)


# --------------------------------------------------------------------------- closing the loop


def updated_model(p: ProfileResult, r, note: str):
    """The roofline's kernel model with what the profile measured written in: the matmul curve at
    this step's rows, the GEMV and decode-attention efficiencies (median over the measured
    kernels, floor over measured time), and the host's seconds per op (TPOT minus the kernels'
    time, per eager op, where host and device add up; TPOT per op where a GPU step is host-bound)."""
    import statistics
    from dataclasses import replace

    from .predict import Efficiency

    m = r.model
    classes, curves = dict(m.classes), {k: list(v) for k, v in m.curves.items()}
    by_class: dict[str, list[tuple[int, int, float]]] = {}
    for pl in r.step.placements:
        if pl.measured_s is None or pl.kernel.kind not in ("matmul", "attention") or pl.weight_format:
            continue
        e = min(1.0, pl.t_floor_s / pl.measured_s)
        by_class.setdefault(pl.efficiency_class, []).append((pl.rows, pl.kernel.cost.weight_bytes, e))
    for name, pts in by_class.items():
        es = [e for _, _, e in pts]
        old = classes[name]
        spread = old.pessimistic / old.expected if old.expected else 1.0
        classes[name] = Efficiency(statistics.median(es), statistics.median(es) * spread, "measured", note)
        if name in ("gemv", "gemm"):  # each measured (rows, weight size) replaces the curve's point there
            new = {(float(r_), float(w)): e for r_, w, e in pts}
            kept = [pt for pt in curves.get("matmul", []) if (pt[0], pt[1]) not in new]
            curves["matmul"] = sorted(kept + [(r_, w, e) for (r_, w), e in new.items()])
    ops = r.step.launches_per_step
    host = m.host_per_op_s
    if not m.overlap and p.tpot_s > p.kernel_sum_s:
        per = (p.tpot_s - p.kernel_sum_s) / ops
        host = Efficiency(per, max(per, host.pessimistic), "measured", note + ": TPOT minus the kernels, per op")
    elif m.overlap and p.tpot_s > 1.1 * p.kernel_sum_s:
        per = p.tpot_s / ops
        host = Efficiency(per, max(per, host.pessimistic), "measured", note + ": a host-bound step, TPOT per op")
    return replace(m, classes=classes, host_per_op_s=host, curves={k: tuple(v) for k, v in curves.items()},
                   relative_to="measured")
