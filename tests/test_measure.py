"""roofcalc measure and roofcalc profile on this machine: honest, consistent, and clear when they cannot run."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from contextlib import nullcontext
from types import SimpleNamespace

import pytest

np = pytest.importorskip("numpy")

from roofcalc import RoofcalcError, Workload, analyze, shape_from_config  # noqa: E402
from roofcalc.cli import main  # noqa: E402
from roofcalc.hardware import load_profile  # noqa: E402
from roofcalc.measure import cuda_capability, measure, write_profile  # noqa: E402
from roofcalc.profile import PROFILED_STEPS, KernelTime, ProfileResult, median_profile  # noqa: E402
from roofcalc.roofline import Roof  # noqa: E402
from textutil import unwrap  # noqa: E402

@pytest.fixture(scope="module")
def measured():
    return measure("cpu", repeats=5, nbytes=96 << 20, quiet=True, passes=2)  # 3x the 32 MiB L3 here


def test_bandwidth_and_flops_are_positive_and_physical(measured):
    """What holds however loaded the machine is: every run timed, rates positive and within what any
    CPU of this kind does (how repeatable they are is benchmarks/measure_vs_c.py's to report, not a
    test's to assert on a shared 2-core VM)."""
    for s in (*measured.streams, measured.peak("fp32")):
        assert len(s.seconds) >= 2 and all(0 < t < 60 for t in s.seconds)
        assert s.median_s >= s.best_s and s.best_rate > 0
    assert 1e8 < measured.bandwidth_bytes_per_s < 1e13  # 0.1 GB/s .. 10 TB/s
    assert 1e8 < measured.peak("fp32").best_rate < 1e15  # 0.1 GFLOP/s .. 1 PFLOP/s
    assert 0 < measured.dispatch.median_s < 1e-2


def test_copy_sits_left_of_the_ridge_and_the_big_matmul_right(measured):
    roof = Roof(measured.bandwidth_bytes_per_s, measured.peak("fp32").best_rate)
    # y = x + 1 on fp32: 1 FLOP per 4 bytes read + 4 written = 0.125 FLOP/byte
    assert 0.125 < roof.ridge / 4
    # an n³ fp32 matmul: 2n³ FLOPs over 3·n²·4 bytes = n/6 = 683 at n = 4096
    n = 4096
    assert measured.peak("fp32").name == f"matmul {n}" or roof.ridge < 2 * n ** 3 / (3 * n * n * 4) / 4
    assert 2 * n ** 3 / (3 * n * n * 4) > 4 * roof.ridge
    # the measured roof is below the cheapest datasheet CPU in the catalog's sense: a sanity bound
    assert roof.bandwidth_bytes_per_s < 1e12 and roof.peak_flop_per_s < 1e14


def test_curves_become_the_profiles_kernel_model(measured, tmp_path, capsys):
    pytest.importorskip("torch")
    c = measured.curves
    # 8 values of M on 4 weight shapes; 4 decode attention points and one prefill
    assert [r for r, _, _, _ in c.matmul] == [1, 4, 8, 16, 64, 256, 1024, 4096] * 4
    assert len(c.attention) == 4 and len(c.prefill_attention) == 1
    assert c.host_ops > 20 and all(0 < x < 1e-3 for x in c.host_per_op)  # tens of ops, microseconds each
    # two passes: every point holds each pass's median, and the host one value per pass
    assert len(c.host_per_op) == 2 and all(len(smp.seconds) == 2 for *_, smp in c.matmul + c.attention)
    model = measured.profile(None).efficiency
    # (rows, weight bytes, e) at 8 rows for each of 4 fp32 weights: 256x512, 512x1024, 1024x3072 and 2048x5632
    # x 4 bytes
    assert model.relative_to == "measured" and len(model.curves["matmul"]) == 32
    assert sorted({w for _, w, _ in model.curves["matmul"]}) == [524_288, 2_097_152, 12_582_912, 46_137_344]
    for name, e in model.classes.items():
        assert 0 < e.pessimistic <= e.expected <= 1, name
    assert {model.classes[n].source for n in ("gemv", "gemm", "attention", "attention_compute", "stream")} == \
        {"measured"}
    # written and read back (schema 2), then used by the main job: every kernel's efficiency is measured
    path = tmp_path / "me.json"
    write_profile(measured, None, str(path))
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 2 and doc["efficiency"]["curves"]["matmul"]
    hw = load_profile(str(path))
    assert hw.efficiency.curves == model.curves and hw.efficiency.host_per_op_s.expected == \
        model.host_per_op_s.expected
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw", "EPYC-9654", "--hw-file", str(path), "--dtype", "fp32",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k["efficiency_source"] for k in out["kernels"]} == {"measured"}
    assert out["hardware"]["efficiency_of"] == "measured"
    # host and device add up on a CPU: predicted = device + 890 ops x the measured host time per op
    st = out["step"]
    assert st["overlap"] is False and st["predicted_s"] == pytest.approx(st["device_s"] + st["host_s"])
    assert st["host_s"] == pytest.approx(st["launches_per_step"] * model.host_per_op_s.expected)


def test_a_schema_1_profile_still_loads(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"name": "my T4", "bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13},
                                "launch_overhead_s": 5e-6, "nominal": "T4"}))
    hw = load_profile(str(path))
    assert hw.efficiency is None and hw.bandwidth_bytes_per_s == 2.7e11
    path.write_text(json.dumps({"schema_version": 9, "bandwidth_bytes_per_s": 1, "peak_flop_per_s": {"fp16": 1}}))
    with pytest.raises(RoofcalcError, match="schema_version 9"):
        load_profile(str(path))


def test_written_profile_round_trips_through_hw_file(measured, tmp_path, capsys):
    path = tmp_path / "me.json"
    write_profile(measured, None, str(path))
    hw = load_profile(str(path))
    assert hw.bandwidth_bytes_per_s == measured.bandwidth_bytes_per_s
    assert hw.peak_flop_per_s == {"fp32": measured.peak("fp32").best_rate}
    assert hw.launch_overhead_s == measured.launch_overhead_s
    code = main(["TinyLlama/TinyLlama-1.1B", "--hw", "EPYC-9654", "--hw-file", str(path), "--dtype", "fp32",
                 "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["hardware"]["measured"]["bandwidth_bytes_per_s"] == measured.bandwidth_bytes_per_s
    # the measured dispatch is the one model's cost of a launch
    assert doc["hardware"]["efficiency"]["launch_s"]["expected"] == measured.launch_overhead_s


@pytest.mark.parametrize("args,message", [
    (["measure", "--dtype", "fp8"], "--dtype fp8"),
    (["measure", "--out", "/no/such/folder/p.json"], "does not exist"),
    (["measure", "--out", "kernel_times.csv"], "--out kernel_times.csv: the file must end in .json"),  # a profile is
    (["measure", "--out", ""], "--out is empty"),  # JSON: not written over the user's CSV, image or config
    (["measure", "--out", "."], "--out .: the file must end in .json"),
    (["measure", "--size", "lots"], "a size like"),
    (["measure", "--passes", "3", "--no-curves"], "--no-curves skips them"),
    (["measure", "--passes", "0"], "--passes"),
    (["profile", "TinyLlama/TinyLlama-1.1B", "--dtype", "int4"], "invalid choice"),
])
def test_measure_and_profile_bad_input(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("model, message", [
    ("TinyLama", "did you mean tinyllama?"),  # a misspelt catalog name
    ("./no/such/config.json", "no such file"),
])
def test_profile_refuses_a_model_it_cannot_read_before_it_measures(model, message, capsys, monkeypatch):
    """Without --hw-file, profile measures the device first (a minute); a model it cannot read is refused before
    that, in one line."""
    pytest.importorskip("torch")
    import roofcalc.measure

    def never(*a, **k):
        raise AssertionError("the device was measured before the model was read")

    monkeypatch.setattr(roofcalc.measure, "measure", never)
    assert main(["profile", model]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cuda_that_is_not_there(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    for args in (["measure", "--device", "cuda"], ["profile", "TinyLlama/TinyLlama-1.1B", "--device", "cuda",
                                                   "--hw-file", "x.json"]):
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2 and ("no CUDA device" in err or "cannot read hardware profile" in err), err


class _WallClockEvent:
    """torch.cuda.Event as the CUDA path uses it, reading the wall clock (CPU ops are synchronous)."""

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):  # milliseconds, as CUDA events report
        return (end.t - self.t) * 1e3


class _ShimStream:
    def wait_stream(self, other) -> None:
        pass


def _no_capture(graph):
    """A CPU cannot capture a CUDA graph: the shim refuses, as a GPU does a call it cannot capture (measure then
    times the call eagerly and says so)."""
    raise RuntimeError("the shim captures no CUDA graph")


class _CudaOnCpu:
    """torch as the CUDA measuring path sees it, run on the CPU: tensors asked for on "cuda" are made
    on the CPU and the events read the wall clock. It checks the path's plumbing (sizes, bytes and FLOPs
    counted, dtypes, the TF32 switch, the written profile), not a GPU's behaviour."""

    def __init__(self, torch, free: int):
        self._torch = torch
        self.cuda = SimpleNamespace(is_available=lambda: True, synchronize=lambda: None, Event=_WallClockEvent,
                                    mem_get_info=lambda: (free, 4 * free), get_device_name=lambda: "Shim GPU",
                                    get_device_capability=lambda: (9, 0),
                                    Stream=_ShimStream, current_stream=_ShimStream, stream=lambda s: nullcontext(),
                                    CUDAGraph=object, graph=_no_capture)
        self.backends = SimpleNamespace(cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=True)))
        self.tf32_seen = []

    def __getattr__(self, name):
        attr = getattr(self._torch, name)
        if name in ("ones", "zeros", "randn", "empty_like"):
            def on_cpu(*args, device=None, **kw):
                assert device in (None, "cuda")
                if name == "randn":
                    self.tf32_seen.append((kw.get("dtype"), self.backends.cuda.matmul.allow_tf32))
                return attr(*args, **kw)
            return on_cpu
        return attr


def test_a_rocm_device_records_no_cuda_compute_capability():
    """torch.cuda.get_device_capability on ROCm gives the AMD chip's gfx version (an MI300X's 9.4), which is not a
    CUDA compute capability: a profile measured there records none, as the catalog's MI300X has none."""
    def fake(hip):
        return SimpleNamespace(version=SimpleNamespace(hip=hip), cuda=SimpleNamespace(get_device_capability=lambda: (9, 4)))

    assert cuda_capability(fake(None)) == 9.4
    assert cuda_capability(fake("6.2.41133")) is None


def test_a_curve_point_is_timed_as_a_cuda_graph_replay():
    """measure._graphed warms the calls up on a side stream, captures them once, and hands back the graph's
    replay; where capture fails it hands back the calls themselves (timed eagerly; cuda_measure counts them)."""
    import roofcalc.measure as measure_module

    log = []

    class Graph:
        def replay(self):
            log.append("replay")

    class Capture:
        def __init__(self, graph):
            log.append("capture")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    fake = SimpleNamespace(cuda=SimpleNamespace(Stream=_ShimStream, current_stream=_ShimStream,
                                                stream=lambda s: nullcontext(), synchronize=lambda: None,
                                                CUDAGraph=Graph, graph=Capture))

    def calls():
        log.append("calls")

    replay = measure_module._graphed(fake, calls)
    assert log == ["calls", "capture", "calls"]  # one warm-up, then the calls run once under capture
    replay()
    assert log[-1] == "replay" and replay.__self__.__class__ is Graph
    fake.cuda.graph = _no_capture
    assert measure_module._graphed(fake, calls) is calls
    eager = []
    t = measure_module._cuda_graph_time(_CudaOnCpu(pytest.importorskip("torch"), free=1 << 20), calls, 2, eager)
    assert eager == [calls] and len(t) == 2


def test_the_cuda_measuring_path_on_a_shim(monkeypatch, tmp_path, capsys):
    torch = pytest.importorskip("torch")
    import roofcalc.measure as measure_module

    # free memory for the 256-square matmul and not the 512 one: a, b and the product in fp32 must
    # fit in half of what is free, 3 * 256² * 4 = 786,432 bytes, so free = 1,572,864
    shim = _CudaOnCpu(torch, free=1_572_864)
    monkeypatch.setattr(measure_module, "_torch_cuda", lambda: shim)
    monkeypatch.setattr(measure_module, "MATMUL_SIZES_CUDA", (128, 256, 512))
    out = tmp_path / "gpu.json"
    argv = ["measure", "--device", "cuda", "--size", "8MiB", "--repeats", "3", "-q", "--out", str(out), "--no-curves"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Shim GPU" in text
    hw = load_profile(str(out))
    assert hw.kind == "gpu" and hw.memory_bytes == 4 * 1_572_864
    assert sorted(hw.peak_flop_per_s) == ["bf16", "fp16", "fp32", "tf32"]
    assert hw.launch_overhead_s > 0

    m = measure_module.measure("cuda", repeats=2, nbytes=8 << 20, quiet=True, curves=False)
    # 8 MiB of fp32 = 2,097,152 values; each is read (4 bytes) and written (4 bytes): 16,777,216 bytes
    assert m.copy.work == m.add.work == 16_777_216
    for d in ("fp32", "tf32", "fp16", "bf16"):
        # 2·n³ FLOPs: 4,194,304 at n = 128 and 33,554,432 at n = 256; 512 does not fit
        assert [(s.name, s.work) for s in m.matmuls[d]] == [("matmul 128", 4_194_304), ("matmul 256", 33_554_432)]
        assert all(len(s.seconds) == 2 and min(s.seconds) > 0 for s in m.matmuls[d])
    # TF32 on only for the tf32 matmuls, and the caller's setting (on, here) back afterwards
    assert {(dt, on) for dt, on in shim.tf32_seen} == {(torch.float32, False), (torch.float32, True),
                                                          (torch.float16, False), (torch.bfloat16, False)}
    assert shim.backends.cuda.matmul.allow_tf32 is True
    assert m.dispatch.work == 1 and m.launch_overhead_s > 0

    # the curves' CUDA path: the same torch code as on the CPU, timed by the events (host time left out:
    # it builds a transformers model on the device, which a shim cannot)
    # (small shapes: fp16 matmuls on a CPU without fp16 units are slow)
    monkeypatch.setattr(measure_module, "CURVE_ROWS_CUDA", (1, 16))
    monkeypatch.setattr(measure_module, "CURVE_SHAPES_CUDA", ((256, 512),))
    monkeypatch.setattr(measure_module, "ATTENTION_POINTS_CUDA", ((1, 256),))
    monkeypatch.setattr(measure_module, "PREFILL_TOKENS_CUDA", (512,))
    c = measure_module.measure_curves(shim, "cuda", "fp16", 2, lambda msg: None,
                                      timer=lambda fn, r: measure_module._cuda_time(shim, fn, r), host=False)
    # 2 rows x 1 weight shape; a 1 x 256 x 512 GEMV is 2·256·512 = 262,144 FLOPs
    assert len(c.matmul) == 2 and c.matmul[0][3].work == 262_144 and c.itemsize == 2
    # decode SDPA at B=1, S=256 over 32 heads of 64: QKᵀ + PV = 4·32·256·64 = 2,097,152 FLOPs; reads Q
    # (32·64) and writes O (32·64), reads K and V of 4 KV heads: 2·256·4·64, all at 2 bytes = 270,336
    assert c.attention[0][2:4] == (2_097_152, 270_336)
    assert c.host_per_op == () and c.model(m).classes["attention"].source == "measured"
    with pytest.raises(RoofcalcError, match="--dtype int8"):
        measure_module.measure("cuda", dtypes=["int8"], quiet=True)
    with pytest.raises(RoofcalcError, match="do not fit in the 0.00 GiB of GPU memory free"):
        measure_module.measure("cuda", nbytes=10 ** 30, quiet=True)  # beyond any allocation: refused in one line
    shim.cuda.mem_get_info = lambda: (100_000, 400_000)  # not even the 128-square matmul fits
    with pytest.raises(RoofcalcError, match="GB of GPU memory is free"):
        measure_module.measure("cuda", nbytes=1 << 16, quiet=True)


def test_profile_without_torch_names_the_extra(tmp_path):
    """Without an NVIDIA GPU (no nvidia-smi on PATH) a CPU build of torch first; with one (a stand-in
    nvidia-smi on PATH, on Linux), PyPI's torch, a CUDA build."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "from roofcalc.cli import main\n"
            "sys.exit(main(['profile', 'TinyLlama/TinyLlama-1.1B']))")
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\n")
    (tmp_path / "nvidia-smi").chmod(0o755)
    lines = {str(tmp_path / "none"): "pip install torch --index-url https://download.pytorch.org/whl/cpu && "
                                     "pip install '.[torch]' in roofcalc's checkout (a CPU build of torch first: no NVIDIA GPU here)",
             str(tmp_path): "pip install '.[torch]' in roofcalc's checkout (PyPI's torch for Linux is a CUDA build)"}
    for path, line in lines.items():
        if not sys.platform.startswith("linux") and "CUDA" in line:
            continue
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             env={"PATH": path, "PYTHONPATH": ":".join(sys.path)})
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.strip() == ("roofcalc: error: roofcalc profile needs PyTorch and transformers (torch is "
                                      f"missing): {line}")


class _Terminal:
    """A stderr that says it is a terminal (or not), keeping what is written."""

    def __init__(self, tty: bool):
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("tty", [True, False])
def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere(tty, monkeypatch):
    pytest.importorskip("tqdm")
    from roofcalc.measure import Progress

    err = _Terminal(tty)
    monkeypatch.setattr(sys, "stderr", err)
    with Progress("measure") as progress:  # sys.stderr decides, as measure and profile make theirs
        progress.plan(3)
        progress("the streams")
        progress.tick("a matmul")  # a step without a line of its own
        progress("the host")
        progress.note("a note")
    if tty:  # tqdm's bar, redrawn in place with the time left, and no step lines
        assert "\r" in err.text and "left, a matmul" in err.text and "roofcalc measure" in err.text
        assert "roofcalc measure: the streams" not in err.text and "roofcalc measure: a note\n" in err.text
        assert "67%" in err.text  # 2 of the 3 steps done when the last begins
    else:
        assert err.text == ("roofcalc measure: the streams\nroofcalc measure: the host\n"
                            "roofcalc measure: a note\n")
    quiet = _Terminal(tty)
    with Progress("measure", 3, quiet=True, stream=quiet) as progress:
        progress("the streams")
        progress.note("a note")
    assert quiet.text == ""


def test_measure_shows_its_progress_by_what_stderr_is(monkeypatch):
    """The real measure with a fake stderr: the bar on a terminal, a line a step on a file (one small matmul and
    a short dispatch loop, to keep it quick)."""
    pytest.importorskip("tqdm")
    from roofcalc import measure as measure_module

    matmul, dispatch = measure_module.cpu_matmul, measure_module.cpu_dispatch
    monkeypatch.setattr(measure_module, "MATMUL_SIZES_CPU", (256,))
    monkeypatch.setattr(measure_module, "cpu_matmul", lambda repeats, progress: matmul((256,), 1, progress))
    monkeypatch.setattr(measure_module, "cpu_dispatch", lambda: dispatch(101))
    for tty in (True, False):
        err = _Terminal(tty)
        monkeypatch.setattr(sys, "stderr", err)
        measure("cpu", repeats=1, nbytes=16 << 20, curves=False)
        if tty:  # redrawn in place, then cleared: the report that follows starts on a clean line
            assert "\r" in err.text and " left, fp32 matmul 256 x 256" in err.text and "\n" not in err.text
            assert err.text.endswith("\r") and err.text.rsplit("\r", 2)[1].strip() == ""
        else:  # the streams, the one matmul size, the dispatch overhead
            lines = err.text.splitlines()
            assert len(lines) == 3 and all(line.startswith("roofcalc measure: ") for line in lines), lines
            assert lines[1] == "roofcalc measure: fp32 matmul 256 x 256"


def test_profile_refuses_a_model_that_does_not_fit():
    pytest.importorskip("torch")
    from roofcalc.profile import profile_model

    # Llama-3.1-405B in fp32: 405,853,388,800 parameters x 4 bytes = 1,623 GB of weights alone
    with pytest.raises(RoofcalcError, match=r"needs about 1[0-9]{3}\.\d GB"):
        profile_model("meta-llama/Llama-3.1-405B", dtype_name="fp32", quiet=True)


SMALL = dict(model_type="llama", hidden_size=1024, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=4,
             intermediate_size=4096, vocab_size=32000, max_position_embeddings=512)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    pytest.importorskip("torch")
    from roofcalc.profile import profile_model

    path = tmp_path_factory.mktemp("small") / "config.json"
    path.write_text(json.dumps(SMALL))
    return profile_model(str(path), context=64, steps=5, quiet=True)


def test_profile_credits_every_kernel(profiled):
    names = [k.name for k in profiled.analysis.kernels]
    assert set(profiled.kernel_times) | set(profiled.unmatched) == set(names)
    assert profiled.unmatched == []  # the Llama family maps completely
    assert profiled.tpot_s > 0 and profiled.ttft_s > 0


def test_measured_matmuls_are_not_faster_than_their_floor(profiled, measured):
    """Honesty, not speed: no weight matmul beats its floor on the measured roof. The weights (2 layers
    of 64 MB and two 128 MB tables, fp32) are far larger than the 32 MiB cache, so they stream from
    memory. The roof and the kernels are measured at different moments of a shared 2-core VM, whose
    bandwidth has moved by 1.9x between runs under load: a kernel must take at least 0.4x its floor
    (crediting it a fraction of its ops would show as far less)."""
    roof = Roof(measured.bandwidth_bytes_per_s, measured.peak("fp32").best_rate)
    for k in profiled.analysis.kernels:
        if k.kind == "matmul":
            floor = roof.floor(k.cost.flops, k.cost.bytes)
            assert profiled.kernel_times[k.name] >= 0.4 * floor, (k.name, profiled.kernel_times[k.name], floor)


def test_profiled_steps_combine_by_median():
    """Each kernel's time is its median over the profiled steps that credited it; the time outside the kernels and
    each op there the median over all steps (0 where a step had none); the wall time the median step's; each step's
    own op time kept. Three steps by hand: kv_cache_write 3.4, 0.3 and 0.9 ms -> 0.9 ms; q_proj 1, 2 and 3 -> 2;
    attention credited in two steps only (4 and 5) -> 4.5; outside 0.1, 0.5, 0.2 -> 0.2; walls 10, 12, 11 -> 11;
    the steps' op times 3.4 + 1 + 4 + 0.1 = 8.5, 0.3 + 2 + 5 + 0.5 = 7.8, 0.9 + 3 + 0.2 = 4.1."""
    an = analyze(shape_from_config({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                                    "num_hidden_layers": 1, "intermediate_size": 128, "vocab_size": 100}),
                 Workload.decode(1, 8))

    def run(times: dict, other: float, wall: float, ops: dict) -> ProfileResult:
        kernels = {k: KernelTime(k, v * 1e-3, 2) for k, v in times.items()}
        return ProfileResult(an, "cpu", 0.011, (0.011,), None, wall * 1e-3, kernels, other * 1e-3,
                             {k: v * 1e-3 for k, v in ops.items()}, 3)

    runs = [run({"kv_cache_write": 3.4, "q_proj": 1.0, "attention": 4.0}, 0.1, 10, {"aten::arange": 0.1}),
            run({"kv_cache_write": 0.3, "q_proj": 2.0, "attention": 5.0}, 0.5, 12, {"aten::arange": 0.2,
                                                                                    "aten::to": 0.3}),
            run({"kv_cache_write": 0.9, "q_proj": 3.0}, 0.2, 11, {"aten::to": 0.2})]
    m = median_profile(runs)
    assert {k: round(t.seconds * 1e3, 9) for k, t in m.kernels.items()} == \
        {"kv_cache_write": 0.9, "q_proj": 2.0, "attention": 4.5}
    assert m.kernels["q_proj"].ops == 2
    assert m.other_s == pytest.approx(0.2e-3)
    assert m.other_ops == pytest.approx({"aten::arange": 0.1e-3, "aten::to": 0.2e-3})  # medians of (.1,.2,0), (0,.3,.2)
    assert m.profiled_step_s == pytest.approx(11e-3) and m.profiled_steps_s == pytest.approx((10e-3, 12e-3, 11e-3))
    assert m.profiled_sums_s == pytest.approx((8.5e-3, 7.8e-3, 4.1e-3))
    assert median_profile(runs[:1]).profiled_steps_s == (10e-3,)


def test_cpu_cache_write_timed_outside_the_profiler(profiled):
    """On a CPU the cache write's time is its updates' own wall time in the timed steps (the profiler slows a growing
    cache's concatenation), and what the profiled steps credited it is kept beside it."""
    write = profiled.kernels["kv_cache_write"]
    assert profiled.cache_write_profiled_s is not None and profiled.cache_write_profiled_s > 0
    assert 0 < write.seconds < profiled.tpot_s and write.ops > 0


def test_cpu_cache_write_timed_by_layer_type(tmp_path):
    """A model whose layers differ (Gemma 2: sliding-window and full layers, its context past the 16-token window)
    has a cache-write kernel per kind of layer; each takes its own layers' updates, timed outside the profiler."""
    pytest.importorskip("torch")
    from roofcalc.profile import profile_model

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma2", "hidden_size": 64, "intermediate_size": 128,
                                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                                "num_hidden_layers": 4, "vocab_size": 256, "sliding_window": 16,
                                "max_position_embeddings": 256, "query_pre_attn_scalar": 16}))
    r = profile_model(str(path), context=40, steps=3, quiet=True)
    assert set(r.cache_write_kernels) == {"kv_cache_write[sliding]", "kv_cache_write[full]"}
    assert all(r.kernels[name].seconds > 0 for name in r.cache_write_kernels)
    assert r.unmatched == []


def test_kernel_times_add_up_to_the_step(profiled):
    """The ops credited to kernels plus the rest make up the profiled step; the credited ones most of it (of that
    step, or of the median step where the shared machine stalled the process between two ops of the profiled one:
    a stall between ops is in the step's wall time and in no op's)."""
    total = profiled.kernel_sum_s + profiled.other_s  # each kernel's median (the cache write timed outside)
    assert len(profiled.profiled_steps_s) == len(profiled.profiled_sums_s) == PROFILED_STEPS
    for ops, wall in zip(profiled.profiled_sums_s, profiled.profiled_steps_s):  # each profiled step's own
        assert ops <= 1.05 * wall
    assert 0.5 * min(profiled.profiled_step_s, profiled.tpot_s) < total
    assert profiled.other_s < 0.25 * total
    per_step = sum(profiled.kernel_times[k.name] * k.count for k in profiled.analysis.kernels)
    assert per_step == pytest.approx(profiled.kernel_sum_s)


def test_profile_cli_prints_the_table_and_the_gap(tmp_path, capsys, measured):
    pytest.importorskip("torch")
    cfg, prof = tmp_path / "config.json", tmp_path / "me.json"
    cfg.write_text(json.dumps(SMALL))
    write_profile(measured, None, str(prof))
    code = main(["profile", str(cfg), "--context", "32", "--steps", "3", "--hw-file", str(prof), "-q",
                 "--plot", str(tmp_path / "p.svg")])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"measured (us|ms)", out) and "gap       measured" in out and "unmatched none" in out
    svg = (tmp_path / "p.svg").read_text()
    assert svg.count("<svg") == 1 and 'id="measured-roof' in svg
    assert 'id="predicted-2' in svg and 'id="gap-2' in svg  # q_proj measured, beside its prediction
    shape = shape_from_config(SMALL, "t")
    assert analyze(shape, Workload.decode(1, 32)).kernel("q_proj").cost.flops == 2 * 1024 * 1024


def test_profile_refuses_a_profile_of_another_kind_of_device(tmp_path, capsys):
    """`profile --device cpu` with a --hw-file that does not say it measured a CPU (``kind`` defaults to gpu) would
    take a GPU's overlap of host and device for a CPU that adds them: refused in one line before any work."""
    pytest.importorskip("torch")
    cfg, prof = tmp_path / "config.json", tmp_path / "hand.json"
    cfg.write_text(json.dumps(SMALL))
    prof.write_text(json.dumps({"name": "hand", "bandwidth_bytes_per_s": 2e10, "peak_flop_per_s": {"fp32": 1e11}}))
    assert main(["profile", str(cfg), "--context", "32", "--steps", "3", "--hw-file", str(prof), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--hw-file {prof} is a gpu's profile and --device cpu runs on a cpu" in err


def test_profile_can_fill_the_cache_instead_of_prefilling(tmp_path):
    pytest.importorskip("torch")
    from roofcalc.profile import profile_model

    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    p = profile_model(str(path), context=48, steps=2, quiet=True, prefill=False)
    assert p.ttft_s is None and p.unmatched == []
    # "auto" skips a prefill the measured peak says would take more than a minute: 1 FLOP/s here
    p = profile_model(str(path), context=48, steps=2, quiet=True, peak_flop_per_s=1.0)
    assert p.ttft_s is None


def _family_configs():
    from test_oracle_families import FAMILIES

    return {name: cfg for name, (cfg, _) in FAMILIES.items()}


@pytest.mark.parametrize("family_name", sorted(_family_configs()))
def test_profile_credits_every_kernel_of_every_family(family_name, tmp_path):
    """The profiler's ops land on roofcalc's kernels for every family (small random models, CPU): every
    kernel gets ops, and most ops get a kernel (counted, not timed: a loaded machine can stall any op)."""
    pytest.importorskip("torch")
    from roofcalc.profile import profile_model

    (tmp_path / "config.json").write_text(json.dumps(_family_configs()[family_name]))
    p = profile_model(str(tmp_path), context=16, steps=2, quiet=True)
    assert p.unmatched == []
    assert p.other_count < sum(t.ops for t in p.kernels.values())


def test_the_main_job_runs_on_a_cpu_profile_with_its_defaults(measured, tmp_path, capsys):
    """roofcalc measure --out me.json, then roofcalc MODEL --hw-file me.json: the CPU profile has no fp16
    peak, so the main job computes in what the profile measured and says so."""
    path = tmp_path / "me.json"
    write_profile(measured, None, str(path))
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw", "EPYC-9654", "--hw-file", str(path)]) == 0
    out = unwrap(capsys.readouterr().out)
    line = next(x for x in out.splitlines() if x.startswith("dtypes"))
    assert "compute fp32 (the checkpoint is bf16; the profile '" in line and "has no bf16 peak, so fp32)" in line


# Every field of the profile schema, set to a value other than its default, and keys beyond the schema (a
# measurement's details, a user's own note): what a writer must keep.
EVERY_FIELD = {
    "schema_version": 2, "name": "my H100 (measured)", "bandwidth_bytes_per_s": 2.9e12,
    "peak_flop_per_s": {"bf16": 7.1e14, "fp8": 1.3e15}, "launch_overhead_s": 4e-6, "memory": "80GiB",
    "link_bytes_per_s": 3.6e11, "gpus_per_node": 8, "link": "measured: nccl between 8 processes",
    "link_latency_s": 1.1e-5, "network_bytes_per_s": 4.5e10, "network": "InfiniBand NDR, one port a GPU",
    "aliases": ["mine"], "nominal": "H100", "kind": "gpu", "segment": "consumer", "source": "roofcalc measure",
    "compute_capability": 9.0, "kernel_fits": "h100_sxm",
    "efficiency": {"gemm": {"expected": 0.7, "pessimistic": 0.6, "note": "mine"},
                   "host_per_op_s": {"expected": 1.2e-5, "pessimistic": 2e-5},
                   "curves": {"matmul": [[1, 1048576, 0.5], [64, 1048576, 0.6]]}},
    "details": {"copy": {"bytes": 1, "seconds": [1.0]}}, "my_note": "kept",
}


def _schema_keys(doc):
    return {k: v for k, v in doc.items() if k not in ("efficiency", "details", "my_note")}


def test_a_profile_loaded_and_saved_is_the_same_profile(tmp_path):
    from roofcalc.hardware import save_profile

    src, out = tmp_path / "in.json", tmp_path / "out.json"
    src.write_text(json.dumps(EVERY_FIELD))
    hw = load_profile(str(src))
    save_profile(hw, str(out), keep=EVERY_FIELD)
    doc = json.loads(out.read_text())
    assert _schema_keys(doc) == _schema_keys(EVERY_FIELD)
    assert doc["details"] == EVERY_FIELD["details"] and doc["my_note"] == "kept"
    assert load_profile(str(out)) == hw
    # the efficiency comes back with every class the model holds; the ones the file set keep their numbers
    assert doc["efficiency"]["gemm"]["expected"] == 0.7 and doc["efficiency"]["curves"]["matmul"] == \
        EVERY_FIELD["efficiency"]["curves"]["matmul"]


def test_profile_update_keeps_every_field(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    from roofcalc.profile import ProfileTrust

    # the run's own timing checks (a busy machine's: ProfileTrust.run_warnings) would refuse --update on a loaded
    # machine; that refusal is tested below, and this test is of the fields a written profile keeps
    monkeypatch.setattr(ProfileTrust, "run_warnings", lambda self: [])
    cfg, prof = tmp_path / "config.json", tmp_path / "me.json"
    cfg.write_text(json.dumps(SMALL))
    # a CPU profile (the test runs on the CPU) with every other field set
    mine = {**EVERY_FIELD, "kind": "cpu", "segment": "datacenter", "nominal": "EPYC-9654",
            "peak_flop_per_s": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10}
    prof.write_text(json.dumps(mine))
    code = main(["profile", str(cfg), "--context", "16", "--steps", "2", "--hw-file", str(prof), "-q",
                 "--dtype", "fp32", "--update"])
    assert code == 0, capsys.readouterr().err
    doc = json.loads(prof.read_text())
    assert _schema_keys(doc) == _schema_keys(mine)
    assert doc["details"] == mine["details"] and doc["my_note"] == "kept"
    # the curve gains this run's (rows, weight bytes) points; the file's own (other weight sizes) stay
    assert all(pt in doc["efficiency"]["curves"]["matmul"] for pt in mine["efficiency"]["curves"]["matmul"])
    assert "roofcalc profile" in doc["efficiency"]["attention"]["note"]  # what this run measured went in


@pytest.mark.parametrize("warned, flag", [([], "--update"),
                                          (["warning   decode steps up to 2.5x apart: profile again on an idle machine"],
                                           "--update"),
                                          (["warning   decode steps up to 2.5x apart: profile again on an idle machine"],
                                           "--update-anyway")])
def test_profile_update_keeps_no_figures_its_own_checks_say_not_to(tmp_path, capsys, monkeypatch, warned, flag):
    """--update writes what the run measured; where the run's own timings warned (a busy machine, steps far apart,
    kernels that outlast the step: ProfileTrust.run_warnings, given here so that the test does not hang on the
    machine's load) it leaves the profile as it was, says so and ends with exit status 1. --update-anyway writes
    them, every figure's note carrying the warnings, and every later report on the profile says so. A clean run
    writes no such words."""
    pytest.importorskip("torch")
    from roofcalc.profile import ProfileTrust

    monkeypatch.setattr(ProfileTrust, "run_warnings", lambda self: list(warned))
    cfg, prof = tmp_path / "config.json", tmp_path / "me.json"
    cfg.write_text(json.dumps(SMALL))
    prof.write_text(json.dumps({**EVERY_FIELD, "kind": "cpu", "segment": "datacenter", "nominal": "EPYC-9654",
                                "peak_flop_per_s": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10}))
    before = prof.read_bytes()
    code = main(["profile", str(cfg), "--context", "16", "--steps", "2", "--hw-file", str(prof), "--dtype", "fp32",
                 flag])
    out = " ".join(capsys.readouterr().out.split())
    if warned and flag == "--update":
        assert code == 1 and prof.read_bytes() == before
        assert f"not updated {prof}: this run's timings warned (1 below), and its figures would replace the " \
               "profile's; profile again on an idle machine, or give --update-anyway" in out
        return
    assert code == 0
    note = json.loads(prof.read_text())["efficiency"]["attention"]["note"]
    assert note.startswith("roofcalc profile ")
    code = main([str(cfg), "--hw-file", str(prof), "--dtype", "fp32"])
    later = " ".join(capsys.readouterr().out.split())
    if warned:
        assert note.endswith("; its run warned (1): decode steps up to 2.5x apart: profile again on an idle machine")
        assert "written though the run warned (1 below: the efficiencies' and the host's notes say so; the matmul " \
               "curve's points hold no note" in out
        assert code == 0 and "the --hw-file's measured efficiencies come from a profile run whose timings warned " \
            f"({note.split('; its run warned')[0]}; written by --update-anyway)" in later
        # a clean run's --update then clears it: the later report's warning is not carried into the new notes
        monkeypatch.setattr(ProfileTrust, "run_warnings", lambda self: [])
        assert main(["profile", str(cfg), "--context", "16", "--steps", "2", "--hw-file", str(prof), "--dtype",
                     "fp32", "--update"]) == 0
        capsys.readouterr()
        eff = json.loads(prof.read_text())["efficiency"]
        assert "warned" not in eff["attention"]["note"]
        # a figure the clean run did not measure again keeps its note (the host time per op where, on a loaded
        # machine, the clean run's TPOT is not above its kernels' sum): the later report warns exactly then
        notes = [v.get("note", "") for v in (*eff.values(), *eff.get("classes", {}).values()) if isinstance(v, dict)]
        main([str(cfg), "--hw-file", str(prof), "--dtype", "fp32"])
        assert ("timings warned" in " ".join(capsys.readouterr().out.split())) == \
            any("; its run warned (" in n for n in notes)
    else:
        assert "warned" not in note and "written though" not in out and "timings warned" not in later


# --------------------------------------------------------------------------- trust: fed-in values, no timing


def _fake_measurement(roof_runs=(0.100, 0.101, 0.103), curve_passes=(0.010, 0.011), host_passes=(15e-6, 16e-6)):
    """A Measurement of made-up timings: three streams and one fp32 peak whose runs are ``roof_runs`` seconds,
    two curve points whose passes are ``curve_passes`` (the second point 3x the first's), the host's passes."""
    from roofcalc.measure import Curves, Measurement, Sample

    roof = [Sample(n, 2e9, roof_runs) for n in ("copy", "y = x + 1", "read (sum)")]
    matmuls = {"fp32": (Sample("matmul 4096", 2.0 * 4096 ** 3, roof_runs),)}
    points = ((1, 256, 512, Sample("linear 1x256x512", 2.0 * 256 * 512, curve_passes)),
              (16, 256, 512, Sample("linear 16x256x512", 16 * 2.0 * 256 * 512, tuple(3 * x for x in curve_passes))))
    curves = Curves(points, (), (), host_passes, 89, 4, "fp32")
    return Measurement("cpu", "Fake CPU", roof[0], roof[1], matmuls, Sample("dispatch", 1, (4e-6,)), 8e9,
                       read=roof[2], curves=curves)


def test_trust_warns_of_a_busy_machine_and_far_apart_runs_and_passes():
    from dataclasses import replace

    from roofcalc.measure import LoadReading, report, trust_check

    m = _fake_measurement(roof_runs=(0.100, 0.150, 0.320), curve_passes=(0.010, 0.025),
                          host_passes=(180e-6, 360e-6, 200e-6))
    # load 2.4 at the start on 2 cores, 3.0 at the end of which this run's own work is 0.5: 2.5 besides it
    t = trust_check(m, LoadReading(2, 2.4, 3.0, 0.5))
    # every roof figure's runs 0.320 / 0.100 = 3.2x apart; the curve points' passes 0.025 / 0.010 = 2.5x (both,
    # the second's are 3x the first's), the host's 360 / 180 = 2x: 3 of 3 points at 2x or more, the most 2.5x
    assert t.warnings() == [
        "warning   load 2.4 at start, 2.5 at end on 2 cores: re-run `roofcalc measure` on an idle machine",
        "warning   copy stream runs 3.2x apart: re-run `roofcalc measure` on an idle machine",
        "warning   curve passes 2.5x apart at 3 of 3 points: re-run `roofcalc measure` on an idle machine"]
    assert all(len(line) <= 100 for line in t.warnings())
    text = report(replace(m, trust=t), None, "no catalog entry", None)
    assert all(line in text.splitlines() for line in t.warnings())
    rec = t.record()
    assert rec["others_at_end"] == 2.5 and rec["limit"] == 2 and rec["spread_limit"] == 2.0
    assert rec["runs_apart"]["fp32 matmul 4096 peak"] == pytest.approx(3.2)
    assert rec["passes_apart"] == pytest.approx({"linear 1x256x512": 2.5, "linear 16x256x512": 2.5, "host per op": 2})
    assert rec["warnings"][1] == "copy stream runs 3.2x apart: re-run `roofcalc measure` on an idle machine"

    # clean: load 0.3 at start, 1.2 at the end of which 0.9 is this run's own (0.3 besides it), under 2 cores;
    # runs 0.103 / 0.100 = 1.03x, passes 0.011 / 0.010 = 1.1x, host 16 / 15 = 1.07x apart: no line
    clean = trust_check(_fake_measurement(), LoadReading(2, 0.3, 1.2, 0.9))
    assert clean.warnings() == [] and clean.record()["warnings"] == []
    assert "warning" not in report(replace(_fake_measurement(), trust=clean), None, "no catalog entry", None)
    # one pass a point: nothing to compare, no pass is reported apart
    one = trust_check(_fake_measurement(curve_passes=(0.010,), host_passes=(15e-6,)), LoadReading(2, 0.3, 0.3))
    assert one.passes == () and one.warnings() == []
    # no load average on this platform: the load says nothing either way
    assert LoadReading(2, None, None).warning("measure") is None


def test_a_measurement_prints_in_one_line():
    """A notebook cell holding a Measurement prints one line (its samples keep every run's timings): the device,
    the roof's bandwidth (2e9 bytes in 0.100 s: 20 GB/s) and peak (2 x 4096^3 FLOPs in 0.100 s: 1.37 TFLOP/s)."""
    assert repr(_fake_measurement()) == "Measurement(cpu: Fake CPU, 20 GB/s, fp32 1.37 TFLOP/s, curves yes, 0 warnings)"


def test_the_load_watch_takes_this_runs_own_work_out_of_the_end():
    from roofcalc.measure import LoadReading, LoadWatch

    loads, clock, cpu, machine = iter([0.2, 2.0]), iter([100.0, 160.0]), iter([5.0, 65.0]), iter([1000.0, 1090.0])
    w = LoadWatch(load=lambda: next(loads), cpu=lambda: next(cpu), clock=lambda: next(clock),
                  machine=lambda: next(machine))
    r = w.stop()
    # 60 CPU seconds in 60 s of wall time keep one core busy; after 60 s the 1-minute average holds
    # 1 - exp(-60 / 60) = 0.632 of it: 2.0 - 0.632 = 1.368 is the others' load at the end
    assert r.start == 0.2 and r.end == 2.0 and r.own == pytest.approx(1 - math.exp(-1))
    assert r.others_end == pytest.approx(1.368, abs=1e-3)
    # the machine's busy seconds grew by 90 in those 60 s, 60 of them this run's: the others kept 30 / 60 = 0.5 of
    # a core busy, OTHERS_CORES, so the timings shared the cores, though the load average (0.2 at the start,
    # 1.37 of others at the end, under one task a core on 2 cores) does not say so
    assert r.others_cpu == pytest.approx(0.5)
    assert LoadReading(2, 0.2, 2.0, r.own, r.others_cpu).warning("measure") == (
        "warning   other processes kept 0.5 of 2 cores busy during the run: re-run `roofcalc measure` on an idle "
        "machine")
    assert LoadReading(2, 0.2, 2.0, r.own, 0.4).warning("measure") is None  # under half a core: said nothing
    # a job that kept both cores busy and ended just before the run: the 1-minute average still reads 2.0 at the
    # start (it decays as exp(-t / 60 s)), but the machine's CPU time says the others used 0.05 of a core during
    # it: the run had the cores, and no warning says otherwise; without /proc/stat the average is all there is
    assert LoadReading(2, 2.0, 1.0, 0.3, 0.05).warning("measure") is None
    assert LoadReading(2, 2.0, 1.0, 0.3, None).warning("measure") == (
        "warning   load 2 at start, 0.7 at end on 2 cores: re-run `roofcalc measure` on an idle machine")


def test_measure_records_the_load_and_writes_its_trust(monkeypatch, tmp_path):
    """The real measure (one small matmul, no curves) with a made-up load average on a machine without /proc/stat
    (where it has one, the machine's CPU time during the run is the signal, LoadReading.busy): the load at its start
    in its trust, a warning in its report, the trust in the profile it writes."""
    import os

    from roofcalc import measure as measure_module

    matmul, dispatch = measure_module.cpu_matmul, measure_module.cpu_dispatch
    monkeypatch.setattr(measure_module, "cpu_matmul", lambda repeats, progress: matmul((256,), 2, progress))
    monkeypatch.setattr(measure_module, "cpu_dispatch", lambda: dispatch(101))
    cores = os.cpu_count()
    monkeypatch.setattr(measure_module, "load_average", lambda: 10.0 * cores)
    monkeypatch.setattr(measure_module, "_busy_seconds", lambda: None)
    m = measure("cpu", repeats=2, nbytes=16 << 20, curves=False, quiet=True)
    assert m.trust.load.start == 10.0 * cores and m.trust.load.cores == cores and m.trust.passes == ()
    assert [n for n, _ in m.trust.runs] == ["copy stream", "y = x + 1 stream", "read (sum) stream",
                                           "fp32 matmul 256 peak"]
    text = measure_module.report(m, None, "", None)
    assert f"warning   load {10.0 * cores:.2g} at start, " in text
    write_profile(m, None, str(tmp_path / "me.json"))
    doc = json.loads((tmp_path / "me.json").read_text())
    assert doc["trust"]["load_average_1min_start"] == 10.0 * cores
    assert doc["trust"]["warnings"][0].startswith(f"load {10.0 * cores:.2g} at start, ")
    assert load_profile(str(tmp_path / "me.json")).bandwidth_bytes_per_s == m.bandwidth_bytes_per_s


def test_no_default_puts_a_steps_upper_end_beyond_the_source_spread():
    """profile.prediction_check calls a range not informative where its upper end lies more than SOURCE_SPREAD
    above its expected time, the widest any cited default allows: checked here on the defaults themselves, over
    catalog models, every catalog device and launch model, decode and prefill (the widest, 2x, is a launch-bound
    step: one launch at 5-10 us)."""
    from roofcalc.hardware import hardware_catalog
    from roofcalc.measure import SOURCE_SPREAD
    from roofcalc.roofline import roofline
    from roofcalc import dtype
    from roofcalc.sources import catalog

    entries = {e.hub_id: e for e in catalog()}
    widest = 0.0
    for name in ("openai-community/gpt2-medium", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "Qwen/Qwen3-30B-A3B",
                 "mistralai/Mixtral-8x22B-v0.1", "deepseek-ai/DeepSeek-V2-Lite", "HuggingFaceTB/SmolLM2-135M"):
        shape = shape_from_config(entries[name].config, name)
        for hw in hardware_catalog():
            d = dtype(next(x for x in ("bf16", "fp16", "fp32") if x in hw.peak_flop_per_s))  # one it computes in
            kw = dict(weight_dtype=d, act_dtype=d, kv_dtype=d)
            for wl in (Workload.decode(1, 500, **kw), Workload.decode(64, 4096, **kw), Workload.prefill(1, 2048, **kw)):
                a = analyze(shape, wl)
                for impl in ("hf-eager", "fused", "cuda-graph"):
                    st = roofline(a, hw, impl=impl).step
                    widest = max(widest, st.predicted_upper_s / st.predicted_s)
    assert 1.9 < widest <= SOURCE_SPREAD * (1 + 1e-9)


def _fake_profile(tmp_path, kernel_s, tpot_s, steps=None, load=None, efficiency=None):
    """A ProfileResult of made-up times for SMALL's decode step at batch 1, context 64, on a made-up CPU profile
    (20 GB/s, 200 GFLOP/s): each kernel instance ``kernel_s`` seconds, the timed steps ``steps`` (median
    ``tpot_s``); and its roofline, as run_profile places it."""
    from roofcalc import dtype
    from roofcalc.measure import LoadReading
    from roofcalc.profile import KernelTime, ProfileResult
    from roofcalc.roofline import roofline

    d = dtype("fp32")
    a = analyze(shape_from_config(SMALL, "small"), Workload.decode(1, 64, weight_dtype=d, act_dtype=d, kv_dtype=d,
                                                                   cache_update="concat"))
    kernels = {k.name: KernelTime(k.name, kernel_s * k.count, k.count) for k in a.kernels}
    p = ProfileResult(a, "cpu", tpot_s, steps or (tpot_s,) * 3, None, tpot_s, kernels, 0.0,
                      load=load or LoadReading(2, 0.2, 0.3, 0.1))
    path = tmp_path / "hw.json"
    path.write_text(json.dumps({"name": "test CPU (measured)", "bandwidth_bytes_per_s": 2e10, "peak_flop_per_s":
                                {"fp32": 2e11}, "launch_overhead_s": 5e-6, "kind": "cpu", "nominal": "EPYC-9654",
                                **({"efficiency": efficiency} if efficiency else {})}))
    hw = load_profile(str(path))
    from roofcalc.hardware import find_hardware

    r = roofline(a, find_hardware("EPYC-9654"), measured_profile=hw, kernel_times=p.kernel_times, tpot_s=tpot_s)
    return p, r


def test_profile_says_when_the_kernels_outlast_the_step_never_a_negative_host_time(tmp_path):
    from roofcalc.profile import profile_lines, profile_record, profile_trust

    from roofcalc.units import ms

    n = sum(k.count for k in _fake_profile(tmp_path, kernel_s=0.01, tpot_s=1.0)[0].analysis.kernels)
    p, r = _fake_profile(tmp_path, kernel_s=0.01, tpot_s=0.01 * n * 0.95)  # the step 5% under its kernels' sum
    t = profile_trust(p, r)
    lines = profile_lines(p, r, t)

    assert t.host_s is None and p.kernel_sum_s == pytest.approx(0.01 * n)
    assert f"warning   kernels' sum {ms(0.01 * n)} ms > TPOT {ms(0.0095 * n)} ms, timings disagree: re-run " \
           "`roofcalc profile` on an idle machine" in lines
    host = next(x for x in lines if x.startswith("host "))
    assert host.endswith("measured TPOT less roofcalc's kernels: none to tell (the kernels' sum exceeds the TPOT)")
    gap = next(x for x in lines if x.startswith("gap "))
    assert "not split: the profiled step's kernels took" in gap
    assert not re.search(r"-[\d.,]+ ms", "\n".join(lines))  # no negative time anywhere
    rec = profile_record(p, t)["trust"]
    assert rec["measured_host_s"] is None and rec["kernels_exceed_step"] is True


def test_profiles_host_line_compares_like_with_like(tmp_path):
    """On a CPU each profiled kernel's time holds its eager ops' dispatch, which the step model counts in its host
    part: the host line says how much of the predicted host time that is (Σ count x launches x host per op), and
    what it predicts outside the kernels, beside TPOT less the kernels; the measured remainder holds the profiled
    ops outside roofcalc's kernels, and says how much of it they are."""
    from dataclasses import replace

    from roofcalc.profile import profile_lines, profile_trust
    from roofcalc.units import ms

    n = sum(k.count for k in _fake_profile(tmp_path, kernel_s=0.01, tpot_s=1.0)[0].analysis.kernels)
    p, r = _fake_profile(tmp_path, kernel_s=0.001, tpot_s=0.001 * n + 0.004)
    p = replace(p, other_s=0.0015)
    host = next(x for x in profile_lines(p, r, profile_trust(p, r)) if x.startswith("host "))
    st = r.step
    held = sum(pl.launches * r.model.host_per_op_s.expected * pl.kernel.count for pl in st.placements)
    assert held == pytest.approx(st.times.host_s) and held > 0  # every eager op is a kernel's: all of it held
    assert f"), {ms(held)} ms of it the kernels' own dispatch, which their profiled times hold: 0 ms outside them; " \
        f"measured TPOT less roofcalc's kernels: {ms(0.004)} ms, {ms(0.0015)} ms of it the profiled ops outside " \
        "them (host and device add up here)" in host


def test_profile_says_when_the_step_is_far_slower_than_its_kernels(tmp_path):
    from roofcalc.profile import profile_lines, profile_trust

    p, r = _fake_profile(tmp_path, kernel_s=1e-6, tpot_s=1.0)
    t = profile_trust(p, r)
    expected = r.step.predicted_s / r.step.times.device_s  # the step model's step over its kernels
    ratio = 1.0 / p.kernel_sum_s
    assert ratio > 2 * expected
    assert f"warning   TPOT {ratio:.2g}x the kernels' sum (the model expects {expected:.2g}x): re-run `roofcalc " \
           "profile` on an idle machine" in profile_lines(p, r, t)


def test_profile_warns_of_load_and_far_apart_steps(tmp_path):
    from roofcalc.measure import LoadReading
    from roofcalc.profile import profile_trust

    p, r = _fake_profile(tmp_path, kernel_s=1e-5, tpot_s=0.1, steps=(0.1, 0.1, 0.25), load=LoadReading(2, 3.0, 3.1, 0.1))
    # load 3.0 at start, 3.1 - 0.1 = 3.0 at the end besides this run, on 2 cores; steps 0.25 / 0.1 = 2.5x apart
    assert profile_trust(p, r).warnings()[:2] == [
        "warning   load 3 at start, 3 at end on 2 cores: re-run `roofcalc profile` on an idle machine",
        "warning   decode steps up to 2.5x apart: re-run `roofcalc profile` on an idle machine"]


def test_profile_warns_of_profiled_steps_far_apart(tmp_path):
    """The per-kernel times are the medians of the profiled steps (three, under the profiler): where those run
    5.9x apart (334, 1,920 and 1,980 ms, a run beside another process), a warning says so, as for the timed
    steps; 1.2x apart, none."""
    from dataclasses import replace

    from roofcalc.profile import profile_record, profile_trust

    p, r = _fake_profile(tmp_path, kernel_s=1e-5, tpot_s=0.1)
    far = profile_trust(replace(p, profiled_steps_s=(0.334, 1.92, 1.98)), r)
    assert far.profiled_apart == pytest.approx(1.98 / 0.334)
    assert ("warning   profiled steps up to 5.9x apart (each kernel's time is their median): re-run `roofcalc "
            "profile` on an idle machine") in far.warnings()
    assert profile_record(p, far)["trust"]["profiled_apart"] == pytest.approx(1.98 / 0.334)
    near = profile_trust(replace(p, profiled_steps_s=(0.1, 0.11, 0.12)), r)
    assert not any("profiled steps" in w for w in near.warnings())


def test_a_range_wider_than_its_sources_allow_is_not_informative(tmp_path):
    from roofcalc.profile import profile_lines, profile_record, profile_trust

    # a host time per op measured under load: 15 us expected, 300 us at its slowest pass, 20x apart
    wide = {"host_per_op_s": {"expected": 15e-6, "pessimistic": 300e-6}}
    p, r = _fake_profile(tmp_path, kernel_s=1e-5, tpot_s=1.0, efficiency=wide)
    st = r.step
    p, r = _fake_profile(tmp_path, kernel_s=1e-5, tpot_s=1.8 * st.predicted_s, efficiency=wide)  # +80%
    st = r.step
    assert st.times.holds(p.tpot_s) and st.predicted_upper_s > 2 * st.predicted_s
    t = profile_trust(p, r)
    line = next(x for x in profile_lines(p, r, t) if x.startswith("predicted TPOT"))
    width, bound = st.predicted_upper_s / st.predicted_lower_s, 2 * st.predicted_s / st.predicted_lower_s
    assert f", {width:.3g}x wide where its sources allow {bound:.3g}x: not informative)" in line
    assert line.endswith("80% above the prediction (no verdict: the range is not informative)") and "inside" not in line
    assert "warning   the range is not informative: run `roofcalc measure --out` again on an idle machine" in \
        profile_lines(p, r, t)
    pred = profile_record(p, t)["trust"]["prediction"]
    assert pred["informative"] is False and profile_record(p, t)["trust"]["verdict"] == "not informative"

    # the same step on the profile's own spread (no efficiency given: the defaults), measured at its prediction:
    # informative, inside, and no warning line at all
    p, r = _fake_profile(tmp_path, kernel_s=1e-5, tpot_s=1.0)
    p, r = _fake_profile(tmp_path, kernel_s=r.step.times.device_s / sum(k.count for k in p.analysis.kernels),
                         tpot_s=r.step.predicted_s)
    t = profile_trust(p, r)
    lines = profile_lines(p, r, t)
    assert t.prediction["informative"] is True and t.verdict == "inside"
    assert next(x for x in lines if x.startswith("predicted TPOT")).endswith("0% above the prediction (inside the range)")
    assert [x for x in lines if x.startswith("warning")] == []


def test_profile_repeats_that_its_hw_file_was_measured_with_warnings(tmp_path):
    from roofcalc.profile import hw_file_warnings

    path = tmp_path / "me.json"
    doc = {"name": "x", "bandwidth_bytes_per_s": 1e10, "peak_flop_per_s": {"fp32": 1e11}}
    path.write_text(json.dumps({**doc, "trust": {"warnings": ["load 3 at start, 3 at end on 2 cores: ...",
                                                              "copy stream runs 3.2x apart: ..."]}}))
    assert hw_file_warnings(str(path)) == [
        "warning   2 warnings in the --hw-file's trust: run `roofcalc measure --out` again on an idle machine"]
    assert len(hw_file_warnings(str(path))[0]) <= 100
    for clean in ({**doc, "trust": {"warnings": []}}, doc):  # measured cleanly, or written by hand
        path.write_text(json.dumps(clean))
        assert hw_file_warnings(str(path)) == []


def test_an_output_that_is_a_folder_is_refused_before_any_work(tmp_path, capsys):
    """A folder named like a file (profile.json/, plot.png/) is refused at once, in one line, not after a measurement
    of a minute whose result it could not hold."""
    (tmp_path / "p.json").mkdir()
    (tmp_path / "r.png").mkdir()
    for args, said in ((["measure", "--out", str(tmp_path / "p.json")], "p.json is a folder"),
                       (["TinyLlama/TinyLlama-1.1B", "--plot", str(tmp_path / "r.png")], "r.png is a folder")):
        assert main(args) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and said in err, err


def test_measure_out_replaces_a_profile_and_nothing_else(tmp_path, capsys):
    """measure --out over an existing file that is not a hardware profile (a model's config.json, a JSON report,
    text that is not JSON) is refused before any work, the file untouched; over a profile it would measure again."""
    from roofcalc.cli import _check_profile_out

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 2048}))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    for path in (config, broken):
        before = path.read_text()
        assert main(["measure", "--out", str(path), "--no-curves"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "holds something other than a hardware profile" in err
        assert path.read_text() == before
    profile = tmp_path / "me.json"
    profile.write_text(json.dumps({"name": "mine", "bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}}))
    _check_profile_out(str(profile))  # a profile: measured again, as asked
    _check_profile_out(str(tmp_path / "new.json"))  # a new file


def test_a_profile_given_to_the_library_as_its_hardware_is_read_as_hw_file_reads_it(tmp_path, capsys):
    """roofline(analysis, load_profile(path)) and sweep(shape, load_profile(path), ...) take a measured profile as
    --hw-file does: against its nominal's datasheet, its measured roof and efficiencies, the same step to the last
    digit as the command line's; bad numbers given to the library are refused as the command line refuses them."""
    from roofcalc import load_shape
    from roofcalc.roofline import roofline
    from roofcalc.sweep import sweep

    path = tmp_path / "me.json"
    path.write_text(json.dumps({"name": "my T4", "nominal": "T4", "bandwidth_bytes_per_s": 2.7e11,
                                "peak_flop_per_s": {"fp16": 5e13},
                                "efficiency": {"gemv": {"expected": 0.6, "pessimistic": 0.5}}}))
    assert main(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(path), "--batch", "1,4", "--format", "json"]) == 0
    cli = [p["step_s"] for p in json.loads(capsys.readouterr().out)["points"]]
    shape, hw = load_shape("TinyLlama/TinyLlama-1.1B"), load_profile(str(path))
    kw = dict(cache_update="concat", eager_ops=True)  # transformers' eager generate, the command line's default
    r = roofline(analyze(shape, Workload.decode(1, 500, **kw)), hw)
    assert r.hardware.name == "T4" and r.measured.bandwidth_bytes_per_s == 2.7e11 and r.step.predicted_s == cli[0]
    sw = sweep(shape, hw, batches=(1, 4), contexts=(500,), **kw)
    assert [float(x) for x in sw.grid.step_s[:, 0]] == cli
    a = analyze(shape, Workload.decode(1, 500, weight_dtype="fp16"))  # a dtype by its name, as the flag takes it
    for bad in (dict(tpot_s=-0.015), dict(tpot_s=float("nan")), dict(measured_bw=0), dict(measured_bw=-5e11),
                dict(kernel_times={"q_proj": -1e-5})):
        with pytest.raises(RoofcalcError):
            roofline(a, "T4", **bad)
