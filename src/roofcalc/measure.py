"""Measuring the roof of the machine at hand: memory bandwidth, matmul FLOP/s, dispatch overhead.

CPU: numpy only. The bandwidth streams (a copy, and the seed's y = x + 1) run on arrays far
larger than the last-level cache, split across one thread per core (numpy releases the GIL
for both), counting the bytes read and the bytes written. Matmuls go to numpy's BLAS, which
is multi-threaded. CUDA: torch, timed with CUDA events after a warm-up and a synchronisation.

Every figure is the best and the median of several runs; the profile keeps the best (the roof
is what the hardware can do), the record keeps both.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from .dtypes import torch_names
from .errors import RoofcalcError
from .hardware import Hardware, find_hardware, hardware_catalog

CPU_DTYPES = ("fp32",)  # what numpy's BLAS computes natively (fp16 is emulated, bf16 absent)
# measured with torch on the CPU when it is installed: bf16, fp16
CPU_TORCH_DTYPES = tuple(d for d in torch_names() if d not in CPU_DTYPES)
CUDA_TORCH = torch_names(compute=True)  # name -> torch dtype's name: fp32, tf32 (float32 tensors), fp16, bf16
CUDA_DTYPES = tuple(CUDA_TORCH)
MATMUL_SIZES_CPU = (1024, 2048, 4096)
MATMUL_SIZES_CUDA = (4096, 8192, 16384)
SLOW_MATMUL_S = 1.0  # a CPU matmul this slow is compute-bound already; larger sizes are not tried
GIB = 1 << 30


@dataclass(frozen=True)
class Sample:
    """Repeated timings of one workload of ``work`` units (bytes or FLOPs)."""

    name: str
    work: float
    seconds: tuple[float, ...]

    @property
    def best_s(self) -> float:
        return min(self.seconds)

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best_rate(self) -> float:
        return self.work / self.best_s

    @property
    def median_rate(self) -> float:
        return self.work / self.median_s

    @property
    def spread(self) -> float:
        """(median − best) / best: how repeatable the runs were."""
        return self.median_s / self.best_s - 1

    @property
    def apart(self) -> float:
        """The slowest run over the fastest (for a curve point, its slowest pass over its fastest)."""
        return max(self.seconds) / self.best_s if self.best_s > 0 else 1.0


@dataclass(frozen=True)
class Measurement:
    device: str  # "cpu" | "cuda"
    name: str  # what the machine calls itself
    copy: Sample
    add: Sample  # y = x + 1
    matmuls: dict  # compute dtype -> tuple of Samples, one per size
    dispatch: Sample  # one trivial op, work = 1
    memory_bytes: float | None
    notes: tuple[str, ...] = field(default=())
    read: Sample | None = None  # a read-only stream (CPU)
    curves: "Curves | None" = None  # kernel efficiencies over shapes (measure_curves)
    trust: "Trust | None" = None  # what may have spoilt the timings (trust_check)
    compute_capability: float | None = None  # a CUDA GPU's (8.0 an A100): the defaults it takes (its int4 factor)

    def __repr__(self) -> str:  # one line (its samples hold every run's timings: thousands in full)
        peaks = ", ".join(f"{d} {self.peak(d).best_rate / 1e12:.3g} TFLOP/s" for d in self.matmuls)
        warned = len(self.trust.warnings()) if self.trust is not None else 0
        return (f"Measurement({self.device}: {self.name}, {self.bandwidth_bytes_per_s / 1e9:.3g} GB/s, {peaks}, "
                f"curves {'yes' if self.curves is not None else 'no'}, {warned} warning{'s' * (warned != 1)})")

    @property
    def streams(self) -> tuple[Sample, ...]:
        return (self.copy, self.add) + ((self.read,) if self.read else ())

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """The roof's slope: the fastest stream's best run."""
        return max(s.best_rate for s in self.streams)

    def peak(self, dtype: str) -> Sample:
        return max(self.matmuls[dtype], key=lambda s: s.best_rate)

    @property
    def launch_overhead_s(self) -> float:
        return self.dispatch.median_s

    def profile(self, nominal: "Hardware | str | None") -> Hardware:
        """This measurement as a Hardware profile; ``nominal``: the catalog entry (or its name) it is compared with."""
        if isinstance(nominal, str):
            from .hardware import find_hardware

            nominal = find_hardware(nominal)
        peaks = {d: self.peak(d).best_rate for d in self.matmuls}
        model = self.curves.model(self) if self.curves is not None else None
        return Hardware(
            name=f"{self.name} (measured)", bandwidth_bytes_per_s=self.bandwidth_bytes_per_s, peak_flop_per_s=peaks,
            launch_overhead_s=self.launch_overhead_s, memory_bytes=self.memory_bytes,
            kind="gpu" if self.device == "cuda" else "cpu", nominal=nominal.name if nominal else None,
            source=f"roofcalc measure, {time.strftime('%Y-%m-%d')}: best of {len(self.copy.seconds)} runs",
            efficiency=model, compute_capability=self.compute_capability,
        )


VIEW_OPS = {"aten::view", "aten::_unsafe_view", "aten::transpose", "aten::unsqueeze", "aten::slice", "aten::expand",
            "aten::t", "aten::detach", "aten::alias", "aten::select", "aten::permute", "aten::squeeze",
            "aten::as_strided", "aten::split", "aten::unbind", "aten::lift_fresh", "aten::reshape", "aten::empty",
            "aten::empty_like", "aten::empty_strided", "aten::contiguous", "aten::split_with_sizes", "aten::chunk",
            "aten::narrow", "aten::_reshape_alias", "aten::resolve_conj", "aten::resolve_neg", "aten::result_type",
            "aten::size", "aten::is_nonzero", "aten::item", "aten::_local_scalar_dense"}


class Progress:
    """Progress of a long command (measure, profile) on stderr: a tqdm bar with the time left when stderr is a
    terminal and tqdm is installed, a line per step when stderr is a file or a pipe (a log keeps them), nothing
    when ``quiet``. Calling it with a step's words begins that step (and ends the one before); ``tick`` begins
    one without a line of its own; ``plan(n)`` adds n steps to the total the bar counts down; ``note`` is a
    line either way (above the bar on a terminal)."""

    def __init__(self, command: str, total: int = 0, quiet: bool = False, stream=None):
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.started = 0
        self.bar = None
        self.mode = "off" if quiet or self.stream is None else "bar" if _isatty(self.stream) else "lines"
        if self.mode == "bar":
            try:
                from tqdm import tqdm
            except ImportError:  # measure on a CPU needs numpy alone; tqdm comes with the torch extra
                self.mode = "lines"
            else:
                self.bar = tqdm(total=total or None, desc=f"roofcalc {command}", file=self.stream, leave=False,
                                dynamic_ncols=True, unit="step", mininterval=0.25,
                                bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}, {remaining} left{postfix}")

    def plan(self, steps: int) -> None:
        self.total += steps
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()

    def __call__(self, message: str) -> None:
        if self.mode == "lines":
            print(f"roofcalc {self.command}: {message}", file=self.stream, flush=True)
        self.tick(message)

    def tick(self, message: str) -> None:
        if self.bar is not None:
            if self.started and self.bar.n < self.total:
                self.bar.update(1)
            self.bar.set_postfix_str(message if len(message) <= 48 else message[:47] + "…", refresh=True)  # room for the bar
        self.started += 1

    def note(self, message: str) -> None:
        if self.bar is not None:
            self.bar.write(f"roofcalc {self.command}: {message}", file=self.stream)
        elif self.mode == "lines":
            print(f"roofcalc {self.command}: {message}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()  # the bar leaves no line behind: the report follows
            self.bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _isatty(stream) -> bool:
    """Whether ``stream`` is a terminal that a bar can be drawn on (a pty that reports no size is not: tqdm
    draws nothing on zero rows)."""
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False
    try:
        size = os.get_terminal_size(stream.fileno())
        return size.columns >= 20 and size.lines > 0
    except (AttributeError, ValueError, OSError):  # no file descriptor (a stand-in): its word is taken
        return True


def _plan(progress, steps: int) -> None:
    """Add steps to a Progress's total (a plain callable, as tests pass, has none)."""
    if hasattr(progress, "plan"):
        progress.plan(steps)


def _tick(progress, message: str) -> None:
    if hasattr(progress, "tick"):
        progress.tick(message)


def _time(fn: Callable[[], object], repeats: int, warmup: int = 1) -> tuple[float, ...]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return tuple(out)


# --------------------------------------------------------------------------- trust
# What spoils a timing on a shared machine, watched while measure and profile run: other processes' load,
# runs or passes of one quantity far apart. Each is a warning line that says what to do; the profile that
# `measure --out` writes and profile's JSON keep the figures (Trust.record).

SOURCE_SPREAD = 2.0  # the widest a cited default's pessimistic end lies from its expected one (one kernel launch at
# 5-10 us, predict.LAUNCH; every other default is nearer): runs or passes of one quantity at least this far apart
# say the machine changed under the measurement rather than how the kernel varies, and a prediction whose upper end
# lies further above its expected time than this has a range wider than its sources allow (profile; the defaults
# reach 2x on launch-bound steps and never more: tests/test_measure.py checks them over the catalog)
LOAD_PER_CORE = 1.0  # a 1-minute load average from other processes of one task per core (Linux counts runnable
# and uninterruptible tasks): on average every core had other work, so the timings shared the cores
LOAD_WINDOW_S = 60.0  # the load average's time constant (the 1-minute figure decays as exp(-t / 60 s))


def when_idle(command: str) -> str:
    return f"re-run `roofcalc {command}` on an idle machine"


def load_average() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _cpu_seconds() -> float:
    """CPU seconds this process and its finished children have used (user and system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# other processes' CPU use during a run, as cores kept busy on average, at or above which its timings shared the
# cores: half a core (one busy process on a 2-core machine is a whole core, and halved a 2-thread copy's rate
# in a run here, with the 1-minute load average still at 0.37 at its start: the average lags, this does not)
OTHERS_CORES = 0.5


def _busy_seconds() -> float | None:
    """CPU seconds every process on the machine has used since boot (Linux /proc/stat's first line: user, nice,
    system, irq, softirq and steal; not idle or iowait), None where there is no /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
        if fields[0] != "cpu":
            return None
        ticks = [int(x) for x in fields[1:9]]
        return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class LoadWatch:
    """The load average when a measurement starts and when it ends, and this run's own share of the end:
    its CPU seconds over its wall time is the cores it kept busy, which the 1-minute average holds at
    1 − exp(−wall / 60 s) of their weight after ``wall`` seconds."""

    def __init__(self, load=None, cpu=None, clock=None, machine=None):
        self._load, self._cpu, self._clock = load or load_average, cpu or _cpu_seconds, clock or time.perf_counter
        self._machine = machine or _busy_seconds
        self.cores = os.cpu_count() or 1
        self.start = self._load()
        self.t0, self.cpu0, self.machine0 = self._clock(), self._cpu(), self._machine()

    def stop(self) -> "LoadReading":
        end, wall = self._load(), max(self._clock() - self.t0, 1e-9)
        mine = self._cpu() - self.cpu0
        busy = mine / wall
        own = busy * (1 - math.exp(-wall / LOAD_WINDOW_S))
        machine = self._machine()
        # the others' CPU during the run, as cores kept busy: the machine's busy seconds less this run's own
        others = None if machine is None or self.machine0 is None else max(0.0, machine - self.machine0 - mine) / wall
        return LoadReading(self.cores, self.start, end, own, others)


@dataclass(frozen=True)
class LoadReading:
    cores: int
    start: float | None  # 1-minute load average when the measurement began (None: not available)
    end: float | None  # ... and when it ended, this run's own work in it
    own: float = 0.0  # this run's estimated share of ``end``
    others_cpu: float | None = None  # other processes' CPU during the run, cores kept busy on average (/proc/stat)

    @property
    def others_end(self) -> float | None:
        return None if self.end is None else max(0.0, self.end - self.own)

    @property
    def busy(self) -> bool:
        """Other processes' CPU during the run at OTHERS_CORES cores or more; where the machine does not say it
        (no /proc/stat), their load (this run's own taken out at the end) at LOAD_PER_CORE a core or more. The
        load average lags by its minute: a job that ended just before the run still holds it up (at 1.5 a minute
        after two busy cores stopped), where the machine's CPU time says the run had the cores."""
        if self.others_cpu is not None:
            return self.shared
        return self._loaded

    @property
    def _loaded(self) -> bool:
        limit = LOAD_PER_CORE * self.cores
        return any(x is not None and x >= limit for x in (self.start, self.others_end))

    @property
    def shared(self) -> bool:
        return self.others_cpu is not None and self.others_cpu >= OTHERS_CORES

    def warning(self, command: str) -> str | None:
        if not self.busy:
            return None
        loaded = self.others_cpu is None and self._loaded
        at = ", ".join(f"{x:.2g} at {w}" for x, w in ((self.start, "start"), (self.others_end, "end")) if x is not None)
        cpu = f"other processes kept {self.others_cpu:.2g} of {self.cores} cores busy during the run" if \
            self.shared else ""
        said = "; ".join(x for x in (f"load {at} on {self.cores} cores" if loaded and at else "", cpu) if x)
        return f"warning   {said}: {when_idle(command)}"

    def record(self) -> dict:
        return {"cores": self.cores, "load_average_1min_start": self.start, "load_average_1min_end": self.end,
                "this_run_at_end": self.own, "others_at_end": self.others_end,
                "limit": LOAD_PER_CORE * self.cores, "others_cpu_cores": self.others_cpu,
                "others_cpu_limit": OTHERS_CORES}


@dataclass(frozen=True)
class Trust:
    """What may have spoilt a measurement: the load around it, and how far apart the runs of each roof
    figure and the passes of each curve point were (slowest over fastest)."""

    load: LoadReading
    runs: tuple[tuple[str, float], ...]  # (roof figure, its slowest run over its fastest)
    passes: tuple[tuple[str, float], ...]  # (curve point, its slowest pass over its fastest); empty with one pass
    command: str = "measure"

    def warnings(self) -> list[str]:
        out = [w for w in (self.load.warning(self.command),) if w]
        far = [(n, x) for n, x in self.runs if x >= SOURCE_SPREAD]
        if far:
            name, x = max(far, key=lambda nx: nx[1])
            out.append(f"warning   {name} runs {x:.2g}x apart: {when_idle(self.command)}")
        far = [x for _, x in self.passes if x >= SOURCE_SPREAD]
        if far:
            out.append(f"warning   curve passes {max(far):.2g}x apart at {len(far)} of {len(self.passes)} points: "
                       f"{when_idle(self.command)}")
        return out

    def record(self) -> dict:
        return {**self.load.record(), "spread_limit": SOURCE_SPREAD, "runs_apart": dict(self.runs),
                "passes_apart": dict(self.passes), "warnings": [w.split(None, 1)[1] for w in self.warnings()]}


def trust_check(m: "Measurement", load: LoadReading) -> Trust:
    """The runs of the roof's figures (each stream, each dtype's peak) and the passes of each curve point of
    ``m``, slowest over fastest, with the load around them."""
    runs = [(f"{s.name} stream", s.apart) for s in m.streams]
    runs += [(f"{d} {m.peak(d).name} peak", m.peak(d).apart) for d in m.matmuls]  # the size the roof takes
    passes = []
    c = m.curves
    if c is not None:
        points = [smp for *_, smp in c.matmul + c.attention + c.prefill_attention]
        if points and min(len(smp.seconds) for smp in points) > 1:
            passes = [(smp.name, smp.apart) for smp in points]
        if len(c.host_per_op) > 1:
            passes.append(("host per op", max(c.host_per_op) / min(c.host_per_op)))
    return Trust(load, tuple(runs), tuple(passes))


# --------------------------------------------------------------------------- the machine


def last_level_cache_bytes() -> int:
    """The largest CPU cache (Linux sysfs); 64 MiB when it cannot be read."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes) if sizes else 64 << 20


def available_memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def total_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"


MIN_STREAM_BYTES = 16 << 20  # below this a bandwidth array sits in the last-level cache of any recent CPU or GPU


def check_stream_size(nbytes: int, text: str) -> None:
    """Refuse a CPU --size before anything is allocated: each bandwidth run holds two arrays of ``nbytes``
    (x and y), which must fit in the memory free now (available_memory_bytes; unknown: not checked)."""
    if nbytes < MIN_STREAM_BYTES:
        raise RoofcalcError(f"--size {text}: at least 16MiB per array, or the arrays sit in a cache")
    free = available_memory_bytes()
    if free is not None and 2 * nbytes > free:
        raise RoofcalcError(f"--size {text}: two arrays of {nbytes / GIB:.4g} GiB each are more than the "
                            f"{free / GIB:.2f} GiB of memory free; give a smaller size such as 512MiB")


def stream_bytes(requested: int | None = None) -> int:
    """Bytes per array: 8x the last-level cache (at least 256 MiB), at most 1/8 of free memory."""
    want = requested or max(8 * last_level_cache_bytes(), 256 << 20)
    free = available_memory_bytes()
    if free is not None:
        want = min(want, free // 8)
    if want < 16 << 20:
        raise RoofcalcError(f"too little free memory to measure bandwidth ({(free or 0) / GIB:.2f} GiB free)")
    return want


# --------------------------------------------------------------------------- CPU


def cpu_read_bandwidth(nbytes: int, repeats: int = 7, threads: int | None = None) -> Sample:
    """A read-only stream (a sum) over ``nbytes``. A CPU writes a line only after reading it
    (write-allocate), so a copy moves 3 bytes for every 2 it counts, and a read-dominated kernel
    (a GEMV streaming its weights) can go faster than the copy figure."""
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor

    threads = threads or os.cpu_count() or 1
    n = nbytes // 4
    x = np.ones(n, dtype=np.float32)
    bounds = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        seconds = _time(lambda: list(pool.map(lambda b: np.add.reduce(x[b[0]:b[1]]), bounds)), repeats)
    return Sample("read (sum)", n * 4, seconds)


def cpu_bandwidth(nbytes: int, repeats: int = 7, threads: int | None = None) -> tuple[Sample, Sample]:
    """(copy, y = x + 1) on float32 arrays of ``nbytes`` each: every run reads nbytes and writes nbytes."""
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor

    threads = threads or os.cpu_count() or 1
    n = nbytes // 4
    x = np.ones(n, dtype=np.float32)
    y = np.empty_like(x)
    y.fill(0)  # touch every page before timing
    bounds = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        def run(op):
            list(pool.map(lambda b: op(y[b[0]:b[1]], x[b[0]:b[1]]), bounds))

        copy = _time(lambda: run(lambda dst, src: np.copyto(dst, src)), repeats)
        add = _time(lambda: run(lambda dst, src: np.add(src, np.float32(1), out=dst)), repeats)
    moved = 2 * n * 4
    return Sample("copy", moved, copy), Sample("y = x + 1", moved, add)


def cpu_matmul(sizes=MATMUL_SIZES_CPU, repeats: int = 3, progress: Callable[[str], None] | None = None) -> tuple[Sample, ...]:
    """Square fp32 matmuls through numpy's BLAS: 2·N³ FLOPs each."""
    import numpy as np

    rng = np.random.default_rng(0)
    out = []
    for n in sizes:
        if progress:
            progress(f"fp32 matmul {n} x {n}")
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        c = np.empty((n, n), dtype=np.float32)
        out.append(Sample(f"matmul {n}", 2.0 * n ** 3, _time(lambda: np.matmul(a, b, out=c), repeats)))
    return tuple(out)


def cpu_torch_matmul(dtype: str, sizes=MATMUL_SIZES_CPU, repeats: int = 3, progress=None) -> tuple[Sample, ...]:
    """Square bf16 / fp16 matmuls through torch on the CPU (what a CPU-side transformers run uses)."""
    try:
        import torch
    except ImportError:
        from .inputs import torch_install

        raise RoofcalcError(f"measuring {dtype} matmuls on the CPU needs PyTorch: {torch_install()}") from None
    t = getattr(torch, torch_names()[dtype])
    gen = torch.Generator().manual_seed(0)
    out = []
    for n in (256, 512) + tuple(sizes):
        if progress:
            progress(f"{dtype} matmul {n} x {n} (torch)")
        a, b = torch.randn(n, n, generator=gen).to(t), torch.randn(n, n, generator=gen).to(t)
        out.append(Sample(f"matmul {n}", 2.0 * n ** 3, _time(lambda: torch.matmul(a, b), repeats)))
        if out[-1].best_s > SLOW_MATMUL_S:  # without native bf16/fp16 units, larger sizes only take longer
            break
    return tuple(out)


def cpu_dispatch(repeats: int = 2001) -> Sample:
    """One trivial op: torch's when torch is installed (what transformers' eager modules pay per
    op), else numpy's."""
    try:
        import torch
    except ImportError:
        import numpy as np

        a = np.zeros(8, dtype=np.float32)
        return Sample("numpy add on 8 values", 1, _time(lambda: np.add(a, 1, out=a), repeats, warmup=50))
    a = torch.zeros(8)
    return Sample("torch add_ on 8 values", 1, _time(lambda: a.add_(1), repeats, warmup=50))


# --------------------------------------------------------------------------- CUDA


def _torch_cuda():
    try:
        import torch
    except ImportError:
        from .inputs import torch_install

        raise RoofcalcError(f"measuring a CUDA device needs PyTorch: {torch_install()}") from None
    if not torch.cuda.is_available():
        raise RoofcalcError("--device cuda: no CUDA device is visible to PyTorch here (use --device cpu)")
    return torch


def _cuda_time(torch, fn, repeats: int, warmup: int = 3) -> tuple[float, ...]:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3)
    return tuple(out)


def _graphed(torch, fn):
    """``fn`` captured once in a CUDA graph: a callable that replays it (its kernels back to back, as a CUDA-graph
    engine runs a step's, with no host dispatch between them), or ``fn`` itself where capture fails. Timed eagerly,
    a small kernel's call waits for the host's dispatch (10-20 us a call through PyTorch) and times that, not the
    kernel; the measured kernel tables the shipped fits come from time their calls in a CUDA graph too
    (AIConfigurator's collectors). The host's own time per op is measured apart (_host_per_op)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture: cuBLAS handles, workspaces, autotuned choices
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            fn()
    except RuntimeError:
        torch.cuda.synchronize()
        return fn
    return graph.replay


def _cuda_graph_time(torch, fn, repeats: int, eager: list) -> tuple[float, ...]:
    """_cuda_time of ``fn`` captured in a CUDA graph (_graphed); a call that could not be captured is timed as it
    is, and counted in ``eager``."""
    replay = _graphed(torch, fn)
    if replay is fn:
        eager.append(fn)
    return _cuda_time(torch, replay, repeats)


def cuda_measure(dtypes, repeats: int, nbytes: int | None, progress, curves: bool = True,
                 passes: int | None = None) -> Measurement:
    torch = _torch_cuda()
    types = {d: getattr(torch, t) for d, t in CUDA_TORCH.items()}
    for d in dtypes:
        if d not in types:
            raise RoofcalcError(f"--dtype {d}: roofcalc measures {', '.join(types)} matmuls on CUDA")
    free, total = torch.cuda.mem_get_info()
    n = (nbytes or min(2 * GIB, free // 8)) // 4
    try:
        x = torch.ones(n, device="cuda")
        y = torch.empty_like(x)
    except (RuntimeError, TypeError, OverflowError, MemoryError):  # OutOfMemoryError is a RuntimeError; a size
        # beyond int64 a TypeError
        raise RoofcalcError(f"--size {n * 4:,} bytes: two arrays of it do not fit in the {free / GIB:.2f} GiB of "
                            f"GPU memory free; give a smaller size such as 512MiB") from None
    sizes = [s for s in MATMUL_SIZES_CUDA if 3 * s * s * 4 <= free // 2]  # a, b and the product, in fp32
    _plan(progress, 1 + len(dtypes) * len(sizes) + 1)  # the streams, each matmul, the launch overhead
    progress("copy and y = x + 1 bandwidth")
    copy = Sample("copy", 8 * n, _cuda_time(torch, lambda: y.copy_(x), repeats))
    add = Sample("y = x + 1", 8 * n, _cuda_time(torch, lambda: torch.add(x, 1, out=y), repeats))
    x = y = None  # free the streams before the matmuls
    if not sizes:
        raise RoofcalcError(f"only {free / 1e9:.2f} GB of GPU memory is free: roofcalc needs "
                            f"{6 * MATMUL_SIZES_CUDA[0] ** 2 * 4 / 1e9:.1f} GB to time a "
                            f"{MATMUL_SIZES_CUDA[0]}-square matmul; free some and run it again")
    matmuls = {}
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32  # the caller's setting, restored after the matmuls
    try:
        for d in dtypes:
            torch.backends.cuda.matmul.allow_tf32 = d == "tf32"
            samples = []
            for size in sizes:
                progress(f"{d} matmul {size} x {size}")
                a = torch.randn(size, size, device="cuda", dtype=types[d])
                b = torch.randn(size, size, device="cuda", dtype=types[d])
                samples.append(Sample(f"matmul {size}", 2.0 * size ** 3, _cuda_time(torch, lambda: a @ b, repeats)))
            matmuls[d] = tuple(samples)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    progress("launch overhead")
    tiny = torch.zeros(1, device="cuda")
    launches = 1000

    def many():
        for _ in range(launches):
            tiny.add_(1)

    per = tuple(t / launches for t in _cuda_time(torch, many, repeats))
    dispatch = Sample("CUDA add_ on 1 value, 1000 back to back", 1, per)
    curve_set = None
    if curves:
        half = next((d for d in ("bf16", "fp16") if d in matmuls), dtypes[0])
        eager: list = []
        curve_set = measure_curves(torch, "cuda", half, repeats, progress,
                                   timer=lambda fn, r: _cuda_graph_time(torch, fn, r, eager),
                                   passes=passes or CURVE_PASSES["cuda"])
        timed = "timed as CUDA graph replays"
        if eager:
            timed = f"{len(eager)} timings eager (not capturable): the host's dispatch included"
            progress(f"{len(eager)} curve timings could not be captured in a CUDA graph and were timed eagerly, the "
                     f"host's dispatch included (small kernels then read slower than a graph runs them)")
        # the kernels' forms on this GPU's own roof: its fastest stream, its fastest 16-bit matmul
        bandwidth = max(copy.best_rate, add.best_rate)
        peak = max(smp.best_rate for smp in matmuls[half]) if half in matmuls else 0.0
        if peak:
            progress(f"fitting the {half} kernels' forms")
            fits = fit_curves(curve_set, peak, bandwidth)
            fits["source"] = (f"roofcalc measure, {half} on {torch.cuda.get_device_name()}, "
                              f"{time.strftime('%Y-%m-%d')}; {timed}")
            curve_set = replace(curve_set, fits=fits)
    return Measurement("cuda", torch.cuda.get_device_name(), copy, add, matmuls, dispatch, float(total),
                       curves=curve_set, compute_capability=cuda_capability(torch))


def cuda_capability(torch) -> float | None:
    """The CUDA compute capability of the current device (8.0 an A100, 9.0 an H100); None on ROCm, whose
    torch.cuda.get_device_capability gives the AMD chip's gfx version (9.4 an MI300X), not a CUDA one."""
    if getattr(getattr(torch, "version", None), "hip", None):
        return None
    major, minor = torch.cuda.get_device_capability()
    return major + minor / 10


# --------------------------------------------------------------------------- kernel curves
# What real kernels reach of the measured roof, over the shapes a transformer step runs: weight
# GEMVs and GEMMs (decode M = 1 … 256, prefill M up to 4096), attention over batch × context,
# and the host's time per op of a real transformers decoder (a tiny one, so device work is
# negligible). roofcalc.predict turns them into each kernel's expected time.

CURVE_ROWS = (1, 4, 8, 16, 64, 256, 1024, 4096)  # 8: a batch-8 GEMV read between 4 and 16 was too fast (46 MB
# weight: 21 % of the roof measured at M = 8, 25 % read between 4 and 16; TinyLlama at batch 8 predicted 434 ms
# without the point, 511 with it, 509-514 measured: docs/validation.md, "This machine")
# (K, N) weights of four sizes, 0.5, 2, 12.6 and 46 MB in fp32 (a 135M model's k_proj to a 1B
# model's gate_proj): a GEMV's efficiency depends on how much it streams as well as on M, and
# falls as the weight shrinks (past the smallest, the curve is read flat)
CURVE_SHAPES = ((256, 512), (512, 1024), (1024, 3072), (2048, 5632))
ATTENTION_POINTS = ((1, 256), (1, 2048), (8, 256), (8, 2048))  # (B, S) of a decode step
PREFILL_TOKENS = (512,)
# A GPU's grid is wider: its kernels' forms are fitted on it (fit_curves: the forms of data/kernel_fits.json,
# which need N and K apart, M from a GEMV to a large GEMM, KV lengths and work items over decade, prompts up to
# 16k), and a GPU times a point in microseconds. (K, N) pairs: N and K each at 1,024, 4,096 and 14,336 (Llama-3-8B's
# MLP), 8,192 square, and 2,048 x 5,632 (TinyLlama's MLP).
CURVE_ROWS_CUDA = (1, 4, 16, 64, 256, 1024, 4096, 16384)
CURVE_SHAPES_CUDA = ((1024, 1024), (4096, 1024), (1024, 4096), (4096, 4096), (4096, 14336), (14336, 4096),
                     (8192, 8192), (2048, 5632))
ATTENTION_POINTS_CUDA = ((1, 256), (1, 2048), (1, 16384), (8, 256), (8, 2048), (8, 16384), (64, 256), (64, 2048),
                         (64, 8192))
PREFILL_TOKENS_CUDA = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
ATTENTION_HEADS = (32, 4, 64)  # N query heads, K KV heads, H: TinyLlama's
MAX_COPIES = 2048  # copies of one operand a curve point cycles through (a 2 MB weight over a 480 MiB cache: 480)
CURVE_FLOPS_PER_RUN = 4e9  # a curve point's calls per timed run stop here (memory-bound points do not reach it)
HOST_LAYERS = 2
# passes over the whole set of curve points: each point's value is the median of its passes' medians, its
# pessimistic end the slowest pass (a shared 2-core VM has slow spells of seconds; five passes of about 13 s
# spread each point over a minute, as a profile's steps are)
CURVE_PASSES = {"cpu": 5, "cuda": 3}


@dataclass(frozen=True)
class Curves:
    """Measured kernels: (name, FLOPs, bytes, Sample) rows per class, and the host per op."""

    matmul: tuple  # (M, K, N, Sample)
    attention: tuple  # (B, S, flops, bytes, Sample)
    prefill_attention: tuple  # (T, flops, bytes, Sample)
    host_per_op: tuple[float, ...]  # seconds per eager op, one value per pass
    host_ops: int  # eager ops of the tiny decoder's step
    itemsize: int  # bytes per element of the measured dtype
    dtype: str
    # the kernels' forms fitted on these points (fit_curves; a GPU's): the efficiency's "fits" document
    fits: dict | None = None

    def _e(self, flops: float, nbytes: float, seconds: float, m: "Measurement") -> float:
        peak = m.peak(self.dtype).best_rate
        return min(1.0, max(flops / peak, nbytes / m.bandwidth_bytes_per_s) / seconds)

    def model(self, m: "Measurement"):
        """A KernelModel: efficiencies relative to this measurement's own roof."""
        from dataclasses import replace

        from .predict import Efficiency, default_model

        base = default_model("gpu" if m.device == "cuda" else "cpu", compute_capability=m.compute_capability)
        classes = dict(base.classes)
        curve = []
        small, big = [], []
        for rows, k, n, smp in self.matmul:
            flops, nbytes = 2.0 * rows * k * n, float(self.itemsize * (k * n + rows * k + rows * n))
            e = self._e(flops, nbytes, smp.median_s, m)
            worst = self._e(flops, nbytes, max(smp.seconds), m)
            curve.append((float(rows), float(self.itemsize * k * n), e))
            (small if rows <= 16 else big if rows >= 1024 else []).append((e, worst))
        curve = tuple(sorted(curve))
        note = f"roofcalc measure, {self.dtype} on {m.name}"
        if small:
            classes["gemv"] = Efficiency(statistics.median(e for e, _ in small), min(w for _, w in small), "measured",
                                         note + ": matmuls with M <= 16")
        if big:
            classes["gemm"] = Efficiency(statistics.median(e for e, _ in big), min(w for _, w in big), "measured",
                                         note + ": matmuls with M >= 1024")
        if self.attention:
            es = [self._e(f, b, smp.median_s, m) for _, _, f, b, smp in self.attention]
            ws = [self._e(f, b, max(smp.seconds), m) for _, _, f, b, smp in self.attention]
            classes["attention"] = Efficiency(statistics.median(es), min(ws), "measured", note + ": decode SDPA")
        if self.prefill_attention:
            es = [self._e(f, b, smp.median_s, m) for _, f, b, smp in self.prefill_attention]
            ws = [self._e(f, b, max(smp.seconds), m) for _, f, b, smp in self.prefill_attention]
            classes["attention_compute"] = Efficiency(statistics.median(es), min(ws), "measured",
                                                      note + ": prefill SDPA")
        stream = [s for s in (m.add, m.copy) if s is not None]
        classes["stream"] = Efficiency(min(1.0, statistics.median(s.median_rate for s in stream) /
                                           m.bandwidth_bytes_per_s),
                                       min(1.0, min(s.work / max(s.seconds) for s in stream) / m.bandwidth_bytes_per_s),
                                       "measured", note + ": copy and y = x + 1 against the best stream")
        host = base.host_per_op_s
        if self.host_per_op:
            host = Efficiency(statistics.median(self.host_per_op), max(self.host_per_op), "measured",
                              f"roofcalc measure: a {HOST_LAYERS}-layer transformers Llama decode step, "
                              f"{self.host_ops} eager ops")
        launch = Efficiency(m.launch_overhead_s, max(m.dispatch.seconds), "measured", m.dispatch.name)
        for names, cls in ((("gemv", "gemm"), "gemm"), (("attention",), "decode_bf16kv"),
                           (("attention_compute",), "prefill_bf16kv")):
            sc = (self.fits or {}).get("scores", {}).get(cls)
            if sc:  # fitted: the work's median share of the roof, the spread that covers every slowest pass
                e = sc["work_efficiency"]
                for name in names:
                    classes[name] = Efficiency(e, e * sc["spread"], "measured", f"{note}: the fitted {cls} "
                                               f"form's work (fixed cost apart); pessimistic: below every "
                                               f"point's slowest pass")
        model = replace(base, classes=classes, host_per_op_s=host, launch_s=launch,
                        curves={} if self.fits else {"matmul": curve}, relative_to="measured")
        if self.fits:  # the fitted forms take the matmuls and the attention calls they cover (predict.own_fits)
            from .predict import own_fits

            model = own_fits(model, self.fits, f"roofcalc measure on {m.name}")
        return model


def _sdpa_cost(b: int, t: int, s: int, itemsize: int, causal: bool = False) -> tuple[float, float]:
    """FLOPs and bytes of SDPA over N heads of H: QKᵀ and PV, Q, K, V read, O written. Decode reads K KV heads;
    the causal prefill is self-attention over N heads (its call passes Q as K and V)."""
    n, k, h = ATTENTION_HEADS
    pairs = t * (t + 1) // 2 if causal else t * s
    kv_heads = n if causal else k
    return 4.0 * b * n * pairs * h, float(itemsize * (2 * b * t * n * h + 2 * b * s * kv_heads * h))


def _each(fn, items) -> None:
    """``fn`` on each item, its result dropped at once (a step's kernels do not keep every output alive; in a
    captured graph a kept output would hold memory for the graph's life)."""
    for item in items:
        fn(item)


def measure_curves(torch, device: str, dtype: str, repeats: int, progress, timer=None, host: bool = True,
                   passes: int = 1) -> Curves:
    """The kernel curves with torch on ``device`` (cpu or cuda) in ``dtype``; ``timer(fn, repeats)``
    times one call (on a GPU CUDA events over a replay of the calls captured in a CUDA graph, cuda_measure's
    timer; the wall clock on a CPU). Each point is timed in ``passes``
    passes over the whole set, ``repeats`` runs each; its Sample holds each pass's median, so a slow
    spell of a shared machine moves one pass of every point rather than every run of one point."""
    types = {d: getattr(torch, t) for d, t in CUDA_TORCH.items()}
    t = types[dtype]
    itemsize = torch.tensor([], dtype=t).element_size()
    timer = timer or (lambda fn, r: _time(fn, r))
    def rand(*shape):
        return torch.randn(*shape, device=device, dtype=t)

    # cycle through twice the last cache's bytes (a model's step reads each weight and each sequence's KV
    # cache once, from memory), but no more than an eighth of the free memory
    stream = 2 * _cache_bytes(torch, device)
    free = available_memory_bytes() if device == "cpu" else None
    if free is not None:
        stream = max(64 << 20, min(stream, free // 8))
    gpu_free = torch.cuda.mem_get_info()[0] if device == "cuda" else None
    if gpu_free is not None:
        stream = max(1, min(stream, gpu_free // 8))
    skipped: list[str] = []

    def room(nbytes: float, what: str) -> bool:
        """Whether a point's operands (one copy) fit in a quarter of the GPU's free memory; a point that does
        not is left out, and the progress says so (a small GPU measures the grid's smaller points)."""
        if gpu_free is None or nbytes <= gpu_free / 4:
            return True
        if what not in skipped:
            skipped.append(what)
            progress(f"left out: {what} (needs {nbytes / GIB:.2f} GiB, a quarter of the free memory is "
                     f"{gpu_free / 4 / GIB:.2f})")
        return False

    def copies(*shape):
        """Enough copies of a tensor that cycling through them streams from memory, not a cache (a
        VM may report a last-level cache of hundreds of MiB: a fixed count of copies would sit in it)."""
        one = itemsize * math.prod(shape)
        base = rand(*shape)
        return [base] + [base.clone() for _ in range(max(1, min(MAX_COPIES, -(-stream // one))) - 1)]

    def per_call(fn_over, items, flops: float = 0.0) -> float:
        """The median seconds per call, timing the calls back to back over ``items`` (as a step runs its
        kernels). A call of ``flops`` that the compute roof bounds needs no copies: its weight is reused
        from the cache in any case, and a few copies keep its timing short."""
        if flops:
            items = items[:max(1, min(len(items), int(CURVE_FLOPS_PER_RUN // flops)))]
        return statistics.median(timer(lambda: fn_over(items), repeats)) / len(items)

    mm: dict = {}
    att: dict = {}
    pre: dict = {}
    host_rounds, ops, host_round = [], 0, None
    linear = torch.nn.functional.linear
    nq, nk, h = ATTENTION_HEADS
    sdpa = torch.nn.functional.scaled_dot_product_attention
    import importlib.util

    host = host and importlib.util.find_spec("transformers") is not None  # _host_per_op needs it
    curve_rows, shapes, points, prompts = grid(device)
    # the bar's steps: in each pass every weight shape, the attention, the host (built once before its first pass)
    _plan(progress, passes * (len(shapes) + 1 + host) + host)
    for p in range(passes):
        of = f" (pass {p + 1} of {passes})" if passes > 1 else ""
        progress(f"{dtype} matmul curve{of}: M = {', '.join(map(str, curve_rows))} on {len(shapes)} "
                 f"weight shapes")
        for i, (k, n) in enumerate(shapes):
            if i:
                _tick(progress, f"{dtype} matmul curve{of}: weight {n} x {k}")
            if not room(itemsize * n * k, f"the {n} x {k} weight"):
                continue
            ws = copies(n, k)
            for rows in curve_rows:
                if not room(itemsize * (n * k + rows * (k + n)), f"M = {rows} on the {n} x {k} weight"):
                    continue
                x = rand(rows, k)
                mm.setdefault((rows, k, n), []).append(
                    per_call(lambda items: _each(lambda w: linear(x, w), items), ws, flops=2.0 * rows * k * n))
            ws = None
        progress(f"{dtype} attention{of}: decode at (batch, context) {', '.join(map(str, points))}, "
                 f"and prefills of {', '.join(map(str, prompts))} tokens")
        for b, s in points:
            if not room(itemsize * 2 * b * nk * s * h, f"decode at batch {b}, context {s}"):
                continue
            q = rand(b, nq, 1, h)
            # K KV heads shared by N query heads, as transformers calls SDPA in decode (no mask: enable_gqa)
            kvs = copies(2, b, nk, s, h)
            att.setdefault((b, s), []).append(per_call(
                lambda items: _each(lambda kv: sdpa(q, kv[0], kv[1], enable_gqa=True), items), kvs))
            kvs = None
        for tt in prompts:
            if not room(itemsize * 2 * nq * tt * h, f"a prefill of {tt} tokens"):
                continue
            q = rand(1, nq, tt, h)
            pre.setdefault(tt, []).append(statistics.median(timer(lambda: sdpa(q, q, q, is_causal=True), repeats)))
        if host:
            if host_round is None:
                host_round, ops = _host_per_op(torch, device, t, progress)
            if host_round is not None:
                progress(f"host time per op{of}: a {HOST_LAYERS}-layer transformers Llama decode step")
                host_rounds.append(host_round())
    matmul = tuple((rows, k, n, Sample(f"linear {rows}x{k}x{n}", 2.0 * rows * k * n, tuple(v)))
                   for (rows, k, n), v in mm.items())
    attention = []
    for (b, s), v in att.items():
        f, nbytes = _sdpa_cost(b, 1, s, itemsize)
        attention.append((b, s, f, nbytes, Sample(f"sdpa B{b} S{s}", f, tuple(v))))
    prefill = []
    for tt, v in pre.items():
        f, nbytes = _sdpa_cost(1, tt, tt, itemsize, causal=True)
        prefill.append((tt, f, nbytes, Sample(f"sdpa prefill T{tt}", f, tuple(v))))
    return Curves(matmul, tuple(attention), tuple(prefill), tuple(host_rounds), ops, itemsize, dtype)


def grid(device: str) -> tuple:
    """(rows M, (K, N) weights, decode (B, S) points, prefill prompts) the curves time on ``device``."""
    if device == "cuda":
        return CURVE_ROWS_CUDA, CURVE_SHAPES_CUDA, ATTENTION_POINTS_CUDA, PREFILL_TOKENS_CUDA
    return CURVE_ROWS, CURVE_SHAPES, ATTENTION_POINTS, PREFILL_TOKENS


# the pull of each fitted parameter to its prior and of neighbouring knots to each other, in points' worth
# (fitting.fit's lam x rows): a twentieth of one point, enough to hold a knot no point reaches, too little to
# move one a point pins
LAM = 0.05


def fit_curves(c: Curves, peak: float, bandwidth: float) -> dict:
    """The step model's kernel forms fitted on a GPU's measured curves (roofcalc.fitting, the forms
    benchmarks/fit_kernels.py fits on AIConfigurator's tables): the 16-bit GEMM (fixed cost, M tile, e_compute(M)
    and e_memory(M), N and K factors), decode attention (fixed cost, e_memory over the KV length, a work-item
    factor, a time per work item) and causal prefill attention (fixed cost, e_compute and e_memory over the
    prompt), as fractions of this measurement's roof (``peak``, ``bandwidth``). Each class is also fitted once
    per held-out shape (a weight shape; a decode or prefill point) and scored on it: ``scores`` holds the
    in-sample and held-out median |ln(measured / predicted)| and share within ±30 %. Every point streams from
    memory (the curves cycle through copies of their operands), so no L2 rows."""
    import numpy as np

    from . import fitting as F

    n_heads, kv_heads, hd = ATTENTION_HEADS
    out: dict = {"dtype": c.dtype, "peak_flops": peak, "bandwidth": bandwidth, "gemm": {}, "attention": {},
                 "scores": {}}

    def run(design, cost_of, rows: dict, tiles, groups, lam: float, worst):
        best = None
        for tile in tiles:
            R = {**rows, **cost_of(tile)}
            D = design(R)
            M = D.mats()
            ct, mt, qt = R["flops"] / peak, R["bytes"] / bandwidth, R.get("qt", np.zeros(len(R["t"])))
            th = F.fit(M, ct, mt, qt, R["t"], D.prior, D.smooth, lam=lam)
            pred = F.evaluate(th, M, ct, mt, qt)[0]
            sse = float(np.sum(np.log(pred / R["t"]) ** 2))
            if best is None or sse < best[0]:
                best = (sse, tile, D, M, ct, mt, qt, th, pred, R)
        _, tile, D, M, ct, mt, qt, th, pred, R = best
        held = np.empty_like(R["t"])
        g = np.asarray(groups)
        for name in sorted(set(groups)) if len(set(groups)) > 1 else ():
            te = g == name
            tr = ~te
            th_f = F.fit(F.rows_of(M, tr), ct[tr], mt[tr], qt[tr], R["t"][tr], D.prior, D.smooth, theta0=th,
                         lam=lam)
            held[te] = F.evaluate(th_f, F.rows_of(M, te), ct[te], mt[te], qt[te])[0]
        # the pessimistic end's spread: the fit below every point's slowest pass, and its work efficiency
        f, c_s, m_s = F.evaluate(th, M, ct, mt, qt)[1:4]
        scores = {"in_sample": F.score(R["t"], pred),
                  "held_out": F.score(R["t"], held) if len(set(groups)) > 1 else None,
                  "held_out_by": f"each of {len(set(groups))} shapes in turn (all its points)",
                  "spread": float(min(1.0, np.min(pred / np.asarray(worst)))),
                  "work_efficiency": float(np.median(np.minimum(1.0, np.maximum(ct, mt) / np.maximum(
                      R["t"] - f, 1e-12))))}
        return F.params(D.names, th), tile, scores

    if c.matmul:
        rows_m = np.array([r for r, _, _, _ in c.matmul], float)
        ks = np.array([k for _, k, _, _ in c.matmul], float)
        ns = np.array([n for _, _, n, _ in c.matmul], float)
        t = np.array([smp.median_s for *_, smp in c.matmul])
        worst = [max(smp.seconds) for *_, smp in c.matmul]
        rows = dict(t=t, m=rows_m, n=ns, k=ks, wb=float(c.itemsize))
        lam = LAM / len(t)
        p, tile, sc = run(F.gemm_design, lambda tile: F.gemm_cost(rows_m, ns, ks, c.itemsize, tile), rows,
                          (1, 64, 128, 256), [f"n={int(a)},k={int(b)}" for a, b in zip(ns, ks)], lam, worst)
        out["gemm"]["bf16"] = F.gemm_doc(p, tile, peak, bandwidth)
        out["scores"]["gemm"] = sc
    if c.attention:
        b = np.array([x[0] for x in c.attention], float)
        s = np.array([x[1] for x in c.attention], float)
        t = np.array([x[4].median_s for x in c.attention])
        worst = [max(x[4].seconds) for x in c.attention]
        rows = dict(t=t, b=b, h=np.full_like(b, n_heads), g=np.full_like(b, kv_heads), hd=np.full_like(b, hd))

        def cost(tile):
            d = F.decode_cost(b, n_heads, kv_heads, s, hd, c.itemsize, 0, tile, False, cache_write=False)
            return {**d, "qt": d["items"]}

        p, tile, sc = run(lambda R: F.decode_design(R, head_dims=False), cost, rows, (1,),
                          [f"b={int(x)},s={int(y)}" for x, y in zip(b, s)], LAM / len(t), worst)
        out["attention"]["decode_bf16kv"] = F.attention_doc(p, "decode", tile)
        out["scores"]["decode_bf16kv"] = sc
    if c.prefill_attention:
        s = np.array([x[0] for x in c.prefill_attention], float)
        t = np.array([x[3].median_s for x in c.prefill_attention])
        worst = [max(x[3].seconds) for x in c.prefill_attention]
        one = np.ones_like(s)
        rows = dict(t=t, isl=s, b=one, h=one * n_heads, g=one * n_heads, hd=one * hd, w=0 * one)
        p, tile, sc = run(lambda R: F.prefill_design(R, factors=False),
                          lambda tile: F.prefill_cost(1, s, n_heads, n_heads, hd, 0, c.itemsize, tile,
                                                      cache_write=False),
                          rows, (1,), [f"s={int(x)}" for x in s], LAM / len(t), worst)
        out["attention"]["prefill_bf16kv"] = F.attention_doc(p, "prefill", tile)
        out["scores"]["prefill_bf16kv"] = sc
    return out


def _cache_bytes(torch, device: str) -> int:
    """The last cache a kernel's operands could sit in: the CPU's last level, or the GPU's L2."""
    if device == "cuda":
        try:
            return int(torch.cuda.get_device_properties(0).L2_cache_size)
        except (AttributeError, RuntimeError, AssertionError):
            return 64 << 20
    return last_level_cache_bytes()


def _host_per_op(torch, device: str, torch_dtype, progress, layers: int = HOST_LAYERS, hidden: int = 64,
                 intermediate: int = 128, vocab: int = 256, context: int = 9, sync: bool = False):
    """(one round, its eager ops): a callable that times a tiny transformers Llama decode step (device
    work negligible) 15 times and returns the median seconds per eager op; (None, 0) without transformers.
    The shape's keywords, and ``sync`` (wait for the device after each step, as `profile`'s steps do), let a
    check time deeper or wider models the same way (benchmarks/gpu_check.py)."""
    try:
        import transformers
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return None, 0
    import warnings


    progress(f"host time per op: building a {layers}-layer transformers Llama")
    heads = max(4, hidden // 64)
    cfg = transformers.LlamaConfig(hidden_size=hidden, intermediate_size=intermediate, num_attention_heads=heads,
                                   num_key_value_heads=max(1, heads // 2), num_hidden_layers=layers,
                                   vocab_size=vocab)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device(device):
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype).eval()
    cache = transformers.DynamicCache(config=cfg)
    ids = torch.zeros((1, context - 1), dtype=torch.long, device=device)
    one = torch.zeros((1, 1), dtype=torch.long, device=device)
    count = [0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if "aten::" + func.__name__.split(".")[0] not in VIEW_OPS:
                count[0] += 1
            return func(*args, **(kwargs or {}))

    def step():
        model(input_ids=one, use_cache=True, past_key_values=cache)
        if sync and device == "cuda":
            torch.cuda.synchronize()
        cache.crop(-1)

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model(input_ids=ids, use_cache=True, past_key_values=cache)
        step()
        with Count():
            step()

    def one_round() -> float:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times = _time(step, 15, warmup=2)
            if device == "cuda":
                torch.cuda.synchronize()
        return statistics.median(times) / count[0]

    return one_round, count[0]


# --------------------------------------------------------------------------- both


def closest_nominal(m: Measurement, requested: str | None) -> tuple[Hardware | None, str]:
    """(catalog entry to compare with, why that one)."""
    if requested:
        return find_hardware(requested), "chosen with --nominal"
    words = {w.lower() for w in m.name.replace("-", " ").split()}
    best, score = None, 0
    for hw in hardware_catalog():
        if (hw.kind == "cpu") != (m.device == "cpu"):
            continue
        tokens = {t.lower() for name in (hw.name, *hw.aliases) for t in name.replace("-", " ").split()}
        hit = len(words & tokens - {"nvidia", "amd", "intel", "gb", "sxm", "pcie"})
        if hit > score:
            best, score = hw, hit
    if best is None:
        return None, "no catalog entry of this kind matches its name (pass --nominal NAME)"
    if m.device == "cpu" and not any(t.lower() in m.name.lower() for t in best.name.split("-")[1:]):
        return best, f"the catalog's nearest CPU by name, not this exact part ({m.name})"
    return best, f"matched by name ({m.name})"


def measure(device: str = "cpu", dtypes=None, repeats: int = 7, nbytes: int | None = None,
            quiet: bool = False, curves: bool = True, passes: int | None = None,
            watch: LoadWatch | None = None) -> Measurement:
    """The roof, and with ``curves`` the kernel efficiencies and host overhead (measure_curves, in
    ``passes`` passes: CURVE_PASSES for the device when None); its ``trust`` holds the load from ``watch``
    (started here when None) to the end, and how far apart the runs and passes were."""
    from dataclasses import replace

    if device not in ("cpu", "cuda"):
        raise RoofcalcError(f"--device {device}: use cpu or cuda")
    watch = watch or LoadWatch()
    with Progress("measure", quiet=quiet) as progress:
        if device == "cuda":
            m = cuda_measure(tuple(dtypes or CUDA_DTYPES), repeats, nbytes, progress, curves, passes)
        else:
            m = _cpu_measure(dtypes, repeats, nbytes, progress, curves, passes)
    return replace(m, trust=trust_check(m, watch.stop()))


def _cpu_measure(dtypes, repeats: int, nbytes: int | None, progress, curves: bool, passes: int | None) -> Measurement:
    for d in dtypes or CPU_DTYPES:
        if d not in CPU_DTYPES + CPU_TORCH_DTYPES:
            raise RoofcalcError(f"--dtype {d}: on the CPU roofcalc measures fp32 matmuls (numpy's BLAS) and, with "
                                f"PyTorch installed, bf16 and fp16")
    size = stream_bytes(nbytes)
    threads = os.cpu_count() or 1
    # the bar's steps: the streams, each matmul size (torch's start at 256 and 512), the dispatch overhead
    _plan(progress, 2 + sum(len(MATMUL_SIZES_CPU) + (d != "fp32") * 2 for d in dtypes or CPU_DTYPES))
    progress(f"copy, y = x + 1 and a read-only sum on {size / GIB:.2f} GiB arrays, {threads} threads, "
             f"{repeats} runs each")
    copy, add = cpu_bandwidth(size, repeats, threads)
    read = cpu_read_bandwidth(size, repeats, threads)
    matmuls = {}
    for d in dtypes or CPU_DTYPES:
        if d == "fp32":
            matmuls[d] = cpu_matmul(repeats=max(2, repeats // 2), progress=progress)
        else:
            matmuls[d] = cpu_torch_matmul(d, repeats=max(2, repeats // 2), progress=progress)
    progress("dispatch overhead of a trivial op")
    dispatch = cpu_dispatch()
    curve_set = None
    if curves:
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            curve_set = measure_curves(torch, "cpu", "fp32", max(3, repeats // 2), progress,
                                       passes=passes or CURVE_PASSES["cpu"])
    notes = []
    if "fp32" in matmuls:
        for d in matmuls:
            if d != "fp32":
                ratio = max(x.best_rate for x in matmuls["fp32"]) / max(x.best_rate for x in matmuls[d])
                if ratio > 4:
                    notes.append(f"{d} matmuls run {ratio:.0f}x slower than fp32 here: no native {d} units, and torch "
                                 f"falls back to a slow path (GEMVs and other shapes may take a faster one)")
    llc = last_level_cache_bytes()
    notes.append(f"arrays {size / llc:.0f}x the {llc >> 20} MiB last-level cache")
    if curves and curve_set is None:
        notes.append("no kernel curves (they need PyTorch): predictions use the default efficiencies")
    return Measurement("cpu", cpu_name(), copy, add, matmuls, dispatch, total_memory_bytes(), tuple(notes), read,
                       curve_set)


def compute_bound_note(m: Measurement, dtype: str) -> str:
    """Whether the best matmul was right of the measured ridge (it should be, to measure the flat roof)."""
    s = m.peak(dtype)
    n = int(round((s.work / 2) ** (1 / 3)))
    bytes_fp32 = 3 * n * n * 4
    ai = s.work / bytes_fp32
    ridge = s.best_rate / m.bandwidth_bytes_per_s
    from .units import ridge as ridge_words

    if ai >= 4 * ridge:
        return f"the {n}³ matmul sits at AI {ai:.0f}, {ai / ridge:.0f}x right of the measured ridge: compute-bound"
    return (f"the {n}³ matmul sits at AI {ai:.0f}, only {ai / ridge:.1f}x the measured ridge {ridge_words(ridge)}: it may "
            f"not be compute-bound; the peak is a lower bound")


def _fmt(rate: float, unit: str) -> str:
    from .units import si

    return si(rate, unit, digits=4)


def report(m: Measurement, nominal: Hardware | None, why: str, path: str | None) -> str:
    """The seed's record table: measured against nominal, with ratios; and the details."""
    from tabulate import tabulate

    rows = []

    def ratio(measured: float, nom: float | None) -> str:
        return "" if not nom else f"{100 * measured / nom:.0f}%"

    nom_bw = nominal.bandwidth_bytes_per_s if nominal else None
    rows.append(["bandwidth, copy (GB/s)", f"{m.copy.best_rate / 1e9:.4g}", f"{m.copy.median_rate / 1e9:.4g}",
                 "" if nom_bw is None else f"{nom_bw / 1e9:.4g}", ratio(m.copy.best_rate, nom_bw)])
    rows.append(["bandwidth, y = x + 1 (GB/s)", f"{m.add.best_rate / 1e9:.4g}", f"{m.add.median_rate / 1e9:.4g}",
                 "" if nom_bw is None else f"{nom_bw / 1e9:.4g}", ratio(m.add.best_rate, nom_bw)])
    if m.read is not None:
        rows.append(["bandwidth, read only (GB/s)", f"{m.read.best_rate / 1e9:.4g}", f"{m.read.median_rate / 1e9:.4g}",
                     "" if nom_bw is None else f"{nom_bw / 1e9:.4g}", ratio(m.read.best_rate, nom_bw)])
    for d in m.matmuls:
        s = m.peak(d)
        nom = nominal.peak_flop_per_s.get(d) if nominal else None
        rows.append([f"{d} matmul peak (TFLOP/s, {s.name})", f"{s.best_rate / 1e12:.4g}", f"{s.median_rate / 1e12:.4g}",
                     "" if nom is None else f"{nom / 1e12:.4g}", ratio(s.best_rate, nom)])
        ridge = s.best_rate / m.bandwidth_bytes_per_s
        nom_ridge = nominal.ridge(d) if nominal and nom else None
        rows.append([f"{d} ridge (FLOP/byte)", f"{ridge:.3g}", "", "" if nom_ridge is None else f"{nom_ridge:.3g}",
                     ratio(ridge, nom_ridge)])
    rows.append(["dispatch of one trivial op (us)", f"{m.dispatch.best_s * 1e6:.3g}", f"{m.dispatch.median_s * 1e6:.3g}",
                 "" if nominal is None else f"{nominal.launch_overhead_s * 1e6:.3g}", ""])
    table = tabulate(rows, headers=["record", "best", "median", "nominal", "best / nominal"], tablefmt="simple",
                     disable_numparse=True)
    lines = [f"device    {m.name} ({m.device})",
             f"nominal   {nominal.name + ': ' + why if nominal else why}", "", table, ""]
    for d in m.matmuls:
        sizes = ", ".join(f"{s.name.split()[-1]}: {s.best_rate / 1e9:.4g}" for s in m.matmuls[d])
        lines.append(f"matmul    {d} GFLOP/s by size (best run): {sizes}")
        lines.append(f"          {compute_bound_note(m, d)}")
    spread = max([s.spread for s in m.streams] + [m.peak(d).spread for d in m.matmuls])
    lines.append(f"spread    median is at most {100 * spread:.1f}% slower than best (bandwidth and matmul peaks)")
    lines += curve_lines(m)
    for note in m.notes:
        lines.append(f"note      {note}")
    lines += m.trust.warnings() if m.trust is not None else []
    lines.append(f"profile   the roof uses the best runs: {_fmt(m.bandwidth_bytes_per_s, 'B/s')}, "
                 + ", ".join(f"{d} {_fmt(m.peak(d).best_rate, 'FLOP/s')}" for d in m.matmuls)
                 + f", {m.launch_overhead_s * 1e6:.3g} us per op (the dispatch's median)")
    if path:
        lines.append(f"written   {path} (use it with --hw-file {path})")
    return "\n".join(lines) + "\n"


def curve_details(c: Curves) -> dict:
    return {
        "dtype": c.dtype,
        "matmul": [{"rows": r, "k": k, "n": n, "seconds": list(smp.seconds)} for r, k, n, smp in c.matmul],
        "attention": [{"batch": b, "context": s, "flops": f, "bytes": y, "seconds": list(smp.seconds)}
                      for b, s, f, y, smp in c.attention],
        "prefill_attention": [{"tokens": t, "flops": f, "bytes": y, "seconds": list(smp.seconds)}
                              for t, f, y, smp in c.prefill_attention],
        "host_per_op_s": list(c.host_per_op), "host_ops": c.host_ops,
    }


def curve_lines(m: Measurement) -> list[str]:
    """The curves in words: what each class of kernel reaches of the measured roof."""
    if m.curves is None:
        return []
    model = m.curves.model(m)
    c = model.classes
    if m.curves.fits:
        lines = fit_lines(m.curves.fits)
    else:
        lines = [f"curves    {m.curves.dtype} matmuls reach, of the measured roof at their AI:"]
        for size in sorted({w for _, w, _ in model.curves["matmul"]}):
            pts = ", ".join(f"M={int(r)} {100 * e:.0f}%" for r, w, e in model.curves["matmul"] if w == size)
            lines.append(f"          {size / 1e6:.3g} MB of weights: {pts}")
    lines += [
             f"          decode attention {100 * c['attention'].expected:.0f}% (worst {100 * c['attention'].pessimistic:.0f}%)"
             f", prefill attention {100 * c['attention_compute'].expected:.0f}%, streams "
             f"{100 * c['stream'].expected:.0f}%"]
    if m.curves.host_per_op:
        lines.append(f"host      {model.host_per_op_s.expected * 1e6:.3g} us per eager op (transformers, "
                     f"{m.curves.host_ops} ops a step; passes {', '.join(f'{x * 1e6:.3g}' for x in m.curves.host_per_op)})")
    return lines


FIT_NAMES = {"gemm": "GEMM", "decode_bf16kv": "decode attention", "prefill_bf16kv": "prefill attention"}


def fit_lines(fits: dict) -> list[str]:
    """The fitted forms in words: each class's fixed cost and how well it predicts the points it was not fitted
    on (each shape held out in turn), and in sample."""
    lines = [f"fitted    {fits['dtype']} kernels on this roof: median |ln(measured / predicted)| and share within",
             "          30%, each shape held out in turn (and in sample):"]
    docs = {"gemm": fits["gemm"].get("bf16"), **fits["attention"]}
    for cls, sc in fits["scores"].items():
        d = docs.get(cls) or {}
        held, ins = sc["held_out"], sc["in_sample"]
        held = f"{held['median_abs_log']:.3f} {100 * held['within_30']:3.0f}%" if held else "(one shape)"
        lines.append(f"          {FIT_NAMES.get(cls, cls):<17} fixed {d.get('fixed_s', 0) * 1e6:4.3g} us  held out "
                     f"{held} of {ins['rows']:<3} in sample {ins['median_abs_log']:.3f} {100 * ins['within_30']:3.0f}%")
    return lines


def write_profile(m: Measurement, nominal: Hardware | None, path: str, collectives: dict | None = None) -> None:
    from dataclasses import replace

    from .hardware import profile_record, write_json

    hw = m.profile(nominal)
    if collectives is not None:  # the measured link, which --tp times collectives on
        hw = replace(hw, link_bytes_per_s=collectives["bus_bytes_per_s"], link_latency_s=collectives["latency_s"],
                     link=f"measured: {collectives['backend']} between {collectives['nproc']} processes, the best "
                          f"all-reduce bus bandwidth")
    doc = profile_record(hw)
    doc["details"] = {
        "copy": {"bytes": m.copy.work, "seconds": list(m.copy.seconds)},
        "add": {"bytes": m.add.work, "seconds": list(m.add.seconds)},
        **({"read": {"bytes": m.read.work, "seconds": list(m.read.seconds)}} if m.read else {}),
        "matmul": {d: {s.name: {"flops": s.work, "seconds": list(s.seconds)} for s in m.matmuls[d]}
                   for d in m.matmuls},
        "dispatch": {"what": m.dispatch.name, "seconds_median": m.dispatch.median_s},
        **({"curves": curve_details(m.curves)} if m.curves else {}),
        **({"collectives": collectives} if collectives is not None else {}),
    }
    if m.trust is not None:
        doc["trust"] = m.trust.record()
    write_json(doc, path)

