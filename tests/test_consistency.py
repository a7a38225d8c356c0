"""One report never contradicts itself: the table, the JSON and the step model say the same.

Each workload below (families, implementations, batch, prefill, tensor, pipeline and expert parallelism,
a measured step, measured kernels) runs twice, as a table and as JSON. Every kernel's bound is one word
of the one vocabulary and the same in both; the step's bound is the one the step model's parts give;
"flagged" is the one rule in both; no field of the old launch model survives; every line of the table
fits 100 columns.
"""

from __future__ import annotations

import json

import pytest

from roofcalc.cli import main
from roofcalc.predict import KERNEL_BOUNDS, STEP_BOUNDS
from roofcalc.roofline import FLAG_MULTIPLE

T = "TinyLlama/TinyLlama-1.1B"
TIMES = {"q_proj": 1e-4, "input_layernorm": 8e-6, "kv_cache_write": 14e-3, "lm_head": 6e-4, "act_mul": 2e-6}
CASES = [
    [T], [T, "--impl", "fused"], [T, "--impl", "cuda-graph"], [T, "--batch", "64", "--context", "2048"],
    [T, "--prompt", "512"], [T, "--hw", "H100", "--batch", "256", "--impl", "cuda-graph"],
    [T, "--measured-bw", "270GB/s", "--measured-flops", "50TFLOP/s", "--tpot", "15ms"],
    [T, "--tpot", "15ms", "--kernel-times", "TIMES"], [T, "--impl", "fused", "--kernel-times", "TIMES"],
    [T, "--hw", "EPYC-9654", "--dtype", "fp32"], [T, "--weight-dtype", "int4", "--group-size", "128"],
    ["meta-llama/Llama-2-7b-hf", "--batch", "16", "--context", "4096"],
    ["Qwen/Qwen2.5-7B", "--prompt", "2048"], ["Qwen/Qwen2.5-7B", "--prompt", "2048", "--impl", "fused"],
    ["mistralai/Mistral-7B-v0.1", "--context", "8000"], ["google/gemma-2-9b", "--batch", "4"], ["Qwen/Qwen3-30B-A3B", "--hw", "H100", "--batch", "16"],
    ["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--batch", "8"],
    ["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--ep", "8", "--batch", "64", "--impl", "cuda-graph"],
    ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "4", "--batch", "64", "--context", "1000"],
    ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "8", "--impl", "cuda-graph"],
    ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "4", "--pp", "2", "--batch", "8", "--impl", "fused"],
    ["meta-llama/Llama-2-7b-hf", "--hw", "H100", "--weight-dtype", "fp8-t", "--kv-dtype", "fp8", "--batch", "64",
     "--context", "2048"],
    ["deepseek-ai/DeepSeek-V2-Lite", "--hw", "H100", "--batch", "32"],
    ["microsoft/Phi-3-mini-4k-instruct", "--hw", "A100", "--tp", "2"],
]


def _run(args, capsys, tmp_path):
    times = tmp_path / "times.json"
    times.write_text(json.dumps(TIMES))
    args = [str(times) if a == "TIMES" else a for a in args]
    assert main(args + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(args + ["--wide"]) == 0
    wide = capsys.readouterr().out
    assert main(args) == 0
    narrow = capsys.readouterr().out
    return doc, wide, narrow


def _table(text: str) -> dict[str, dict[str, str]]:
    """The kernel table's rows by kernel name, each cell under its header (columns split on 2+ spaces)."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("kernel "))
    dashes = lines[head + 1]
    spans, start = [], 0
    for part in dashes.split("  "):
        if part:
            spans.append((start, start + len(part)))
        start += len(part) + 2
    def cells(line):
        return [line[a:b].strip() for a, b in spans]
    headers = cells(lines[head])
    rows = {}
    for line in lines[head + 2:]:
        if not line.strip():
            break
        row = dict(zip(headers, cells(line)))
        rows[row["kernel"]] = row
    return rows


@pytest.mark.parametrize("args", CASES, ids=[" ".join(a) for a in CASES])
def test_no_document_holds_two_verdicts(args, capsys, tmp_path):
    doc, wide, narrow = _run(args, capsys, tmp_path)
    st = doc["step"]
    # the old launch model is gone, in the JSON and in the text
    for gone in ("sum_launch_s", "dominant", "launch_share_of_gap"):
        assert gone not in st
    assert "launch_overhead_s" not in doc["hardware"]
    assert "overhead" not in {k["bound"] for k in doc["kernels"]}
    assert "launch    " not in narrow and "launch-bound" not in wide
    # the step's bound: the host where it outlasts the device, else the largest of the device's parts
    assert st["step_bound"] in STEP_BOUNDS
    parts = st["device_parts_s"]
    assert sum(parts.values()) == pytest.approx(st["device_s"])
    host_wins = st["host_s"] > st["device_s"]
    assert st["step_bound"] == ("host" if host_wins else max(parts, key=parts.get))
    words = {"host": "bound by the host", "memory": "bound by memory traffic", "compute": "bound by compute",
             "communication": "bound by communication", "fixed": "bound by the kernels' fixed costs"}
    assert words[st["step_bound"]] in " ".join(narrow.split())
    # every kernel: one bound word, the same in the table; one flag rule, the same in the table
    rows = _table(wide)
    for k in doc["kernels"]:
        assert k["bound"] in KERNEL_BOUNDS
        terms = {"fixed": k["t_fixed_s"], "work": k["t_expected_s"] - k["t_fixed_s"]}
        assert (k["bound"] == "fixed") == (terms["fixed"] > terms["work"]), k["name"]
        row = rows[k["name"]]
        assert row["bound"] == k["bound"], k["name"]
        if k["measured_s"] is not None:
            assert k["flagged"] == (k["measured_s"] > FLAG_MULTIPLE * max(k["t_floor_s"], k["t_fixed_s"]))
            assert (row["flag"] != "") == k["flagged"], k["name"]
        else:
            assert not k["flagged"]
    # the default report fits 100 columns
    assert max(len(line) for line in narrow.splitlines()) <= 100


SWEEPS = [
    [T, "--batch", "1,4,16,64,128", "--context", "2048"], [T, "--batch", "1..512", "--context", "512,2048,8192"],
    [T, "--batch", "1,8", "--prompt", "128,512"], [T, "--batch", "1,8", "--prompt", "128", "--generate", "16"],
    ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "1,2,4,8", "--batch", "64", "--context", "1000"],
    ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "4", "--pp", "2", "--batch", "1,8,64", "--context",
     "1000,4000", "--impl", "cuda-graph"],
    ["mistralai/Mixtral-8x7B-v0.1", "--hw", "H100", "--ep", "2,4,8", "--batch", "64", "--impl", "cuda-graph"],
    ["models"], ["hardware"],
]


@pytest.mark.parametrize("args", SWEEPS, ids=[" ".join(a) for a in SWEEPS])
def test_every_line_fits_100_columns(args, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(args) == 0
    out = capsys.readouterr().out
    long = [line for line in out.splitlines() if len(line) > 100]
    assert not long, long[0]
