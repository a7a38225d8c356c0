"""Fuzzing every input surface: configs (a generated corpus of every key x every kind of bad value, for
every family), command-line values, hardware profiles and kernel-time files (hypothesis).

Each input must end in exit 0 with sane output (finite numbers, no NaN, no traceback), or exit 2 with
exactly one line on stderr, within a time bound. The counts are printed with ``pytest -s``."""

from __future__ import annotations

import contextlib
import io
import json
import math
import signal
import time

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from roofcalc import RoofcalcError, Workload, analyze, shape_from_config, to_record  # noqa: E402
from roofcalc.cli import main  # noqa: E402
from roofcalc.families import FAMILIES, STRUCTURAL_KEYS  # noqa: E402
from roofcalc.sources import catalog  # noqa: E402

TIME_BOUND_S = 20.0  # per input; the slowest accepted ones take milliseconds (a hang is what this catches)
M = "TinyLlama/TinyLlama-1.1B"
BAD_VALUES = [None, True, False, 0, -1, 1.5, 2 ** 70, 10 ** 400, 1e308, "", "2048", "\n", [], [[1]], {}, {"a": 1},
              "full_attention", [1, 2]]


@contextlib.contextmanager
def bounded(seconds: float = TIME_BOUND_S):
    """Fail (rather than hang) when one input takes longer than ``seconds``."""
    def alarm(*_):
        raise TimeoutError(f"an input ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with bounded(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def finite_numbers(doc) -> bool:
    if isinstance(doc, float):
        return math.isfinite(doc)
    if isinstance(doc, dict):
        return all(finite_numbers(v) for v in doc.values())
    if isinstance(doc, list):
        return all(finite_numbers(v) for v in doc)
    return True


def assert_clean(code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err
    assert code in (0, 2), (code, err)
    if code == 2:
        assert out == "" and err.count("\n") == 1 and err.startswith("roofcalc: error: "), err
    else:
        assert out.strip() and "nan" not in out.lower().split()


# --------------------------------------------------------------------------- configs: a generated corpus

def config_corpus() -> list[tuple[str, dict]]:
    """Every family's catalog config with each of its keys (and each structural key) set to each bad value."""
    seeds = {}
    for entry in catalog():
        seeds.setdefault(entry.config["model_type"], entry.config)
    corpus = []
    for fam, cfg in sorted(seeds.items()):
        for key in sorted(set(cfg) | STRUCTURAL_KEYS | {"model_type", "text_config", "quantization_config",
                                                          "rope_parameters"}):
            for value in BAD_VALUES:
                corpus.append((f"{fam}.{key}={value!r}"[:60], {**cfg, key: value}))
    return corpus


CORPUS = config_corpus()


def test_the_config_corpus_covers_every_family_and_key():
    assert {name.split(".")[0] for name, _ in CORPUS} == set(FAMILIES)
    assert len(CORPUS) > 15 * len(STRUCTURAL_KEYS) * len(BAD_VALUES) * 0.9
    print(f"\nconfig corpus: {len(CORPUS):,} documents")


def test_every_config_in_the_corpus_is_refused_in_one_line_or_counted_sanely():
    accepted = refused = 0
    for i, (name, cfg) in enumerate(CORPUS):
        with bounded():
            try:
                shape = shape_from_config(json.loads(json.dumps(cfg)), "fuzz")
            except RoofcalcError as exc:
                assert "\n" not in str(exc) and len(str(exc)) < 1000, name
                refused += 1
                continue
            a = analyze(shape, Workload.decode(2, 64))
            doc = to_record(a)
        accepted += 1
        assert finite_numbers(doc), name
        assert all(k.cost.flops >= 0 and k.cost.bytes > 0 for k in a.kernels), name
        assert a.params <= 10 ** 14, name
    print(f"\nconfigs: {accepted:,} accepted, {refused:,} refused")
    assert accepted and refused


@pytest.mark.parametrize("start", range(10))
def test_a_sample_of_the_corpus_through_the_command_line(start, tmp_path):
    """One in 25 documents (a fixed sample) end to end: file reading, the table, the exit status."""
    path = tmp_path / "config.json"
    for name, cfg in CORPUS[start::250]:
        path.write_text(json.dumps(cfg))
        assert_clean(*run([str(path)]))


# --------------------------------------------------------------------------- command-line values

OPTION_VALUES = {
    "--batch": "0123456789,.:-_ ²١e", "--context": "0123456789,.:- ", "--prompt": "0123456789,.: ",
    "--measured-bw": "0123456789.e+- kMGTiBsbytes/²", "--measured-flops": "0123456789.e+- kMGTFLOPs/",
    "--tpot": "0123456789.e+- mnuµs", "--launch-overhead": "0123456789.e- mnuµs", "--host-overhead": "0123456789.e-mus",
    "--memory": "0123456789.e+- kMGTiB", "--min-gain": "0123456789.%- e", "--point": "abc 0123456789.e:-",
    "--dtype": "fpbint0123468", "--hw": "AHT0123456789-_ \n", "--impl": "hf-eagrfusdcp", "--experts": "allopkt",
    "--generate": "0123456789", "--format": "jsonmdcv", "--weight-dtype": "intfpb0123468", "--group-size": "0123456789",
    "--tp": "0123456789", "--pp": "012", "--ep": "01248",
}
PLAUSIBLE = {  # values a user would type, mixed in so that many inputs get past the parser
    "--batch": ["1", "4,16", "1..64", "8..32:8"], "--context": ["500", "1..4096", "2048"], "--prompt": ["128", "1..512"],
    "--measured-bw": ["270GB/s", "250GiB/s", "2.7e11B/s"], "--measured-flops": ["50TFLOP/s", "8e12FLOP/s"],
    "--tpot": ["15ms", "0.02s", "900us"], "--launch-overhead": ["5us", "0s"], "--host-overhead": ["20us"],
    "--memory": ["16GB", "80GiB", "1GB"], "--min-gain": ["10%", "50"], "--point": ["mm:1e9:1e6:1e-3"],
    "--dtype": ["fp16", "bf16", "fp32", "fp8"], "--hw": ["A100", "H100", "T4", "EPYC-9654"],
    "--impl": ["hf-eager", "fused", "cuda-graph"], "--experts": ["all", "topk"], "--generate": ["4", "64"],
    "--format": ["json", "md", "csv"], "--weight-dtype": ["int4", "int8", "fp8"], "--group-size": ["64", "128"],
    "--tp": ["2", "4", "3"], "--pp": ["1", "2"], "--ep": ["2", "8"],
}
ALL_OPTIONS = sorted(OPTION_VALUES)


def value_of(option: str):
    return st.text(OPTION_VALUES[option], max_size=12) | st.sampled_from(PLAUSIBLE[option])


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(ALL_OPTIONS), min_size=1, max_size=3, unique=True).flatmap(
    lambda opts: st.tuples(*(st.tuples(st.just(o), value_of(o)) for o in opts))))
def test_command_line_values(pairs):
    args = [M] + [x for pair in pairs for x in pair]
    if any(o == "--generate" for o, _ in pairs) and not any(o == "--prompt" for o, _ in pairs):
        args += ["--prompt", "8"]
    started = time.perf_counter()
    assert_clean(*run(args))
    assert time.perf_counter() - started < TIME_BOUND_S


# --------------------------------------------------------------------------- hardware profiles and kernel times

PROFILE = {"schema_version": 1, "name": "fuzz", "bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13},
           "launch_overhead_s": 5e-6, "memory_bytes": 16e9, "kind": "gpu", "nominal": "T4", "source": "fuzz"}
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False)
                           | st.text(max_size=8), lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.sampled_from(sorted(PROFILE) + ["segment", "aliases", "efficiency", "memory"]),
                       JSON_VALUES, min_size=1, max_size=3))
def test_hardware_profiles(tmp_path_factory, changes):
    path = tmp_path_factory.mktemp("hw") / "profile.json"
    path.write_text(json.dumps({**PROFILE, **changes}))
    assert_clean(*run([M, "--hw-file", str(path)]))


ROW = st.tuples(st.sampled_from(["q_proj", "attention", "lm_head", "nope", "", "name"]),
                st.text("0123456789.e-+inftyNa ", max_size=10) | st.floats().map(repr))


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(ROW, max_size=5), st.sampled_from(["csv", "json"]))
def test_kernel_time_files(tmp_path_factory, rows, kind):
    path = tmp_path_factory.mktemp("kt") / f"times.{kind}"
    if kind == "csv":
        path.write_text("".join(f"{n},{v}\n" for n, v in rows))
    else:
        path.write_text("{" + ",".join(f"{json.dumps(n)}: {v if v else '0'}" for n, v in rows) + "}")
    assert_clean(*run([M, "--kernel-times", str(path)]))
