"""The command line as a user meets it: output formats, errors, exit codes, start-up imports."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import subprocess
import sys

import pytest

from roofcalc import Workload
from roofcalc.cli import main
from textutil import unwrap


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, unwrap(out), err


def test_main_job_prints_header_table_and_totals(capsys):
    code, out, err = run(["TinyLlama/TinyLlama-1.1B"], capsys)
    assert code == 0 and err == ""
    assert "TinyLlama/TinyLlama-1.1B-Chat-v1.0" in out
    assert "1,100,048,384 parameters" in out and "2,200,096,768 bytes of weights" in out
    assert "22,528 bytes per token" in out
    assert "batch B=1 (default)" in out and "context S=500 (default)" in out
    for name in ("embed_tokens", "input_layernorm", "q_proj", "k_proj", "v_proj", "rotary", "kv_cache_write",
                 "attention", "o_proj", "attn_residual", "post_attention_layernorm", "gate_proj", "up_proj",
                 "act_mul", "down_proj", "mlp_residual", "norm", "lm_head"):
        assert f"\n{name} " in out
    # FLOPs give way on a 100-column terminal (AI and bytes stay); --wide shows them
    assert "8.39 M" not in out and "8.39 M" in run(["TinyLlama/TinyLlama-1.1B", "--wide"], capsys)[1]  # q_proj's 8,388,608


def test_the_library_default_step_is_the_command_line_default(capsys):
    """roofcalc.analyze(shape, Workload.decode()) and `roofcalc MODEL --format json` with no options describe one
    step: the same workload (batch 1, context 500, fp16, the concatenating cache of the default --impl
    hf-eager) and, kernel by kernel, the same FLOPs and bytes."""
    import roofcalc

    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--format", "json"], capsys)
    assert code == 0
    cli = json.loads(out)
    lib = roofcalc.to_record(roofcalc.analyze(roofcalc.load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode()))
    assert lib["workload"] == cli["workload"]
    fields = ("name", "count", "flops", "matmul_flops", "bytes", "weight_bytes", "activation_bytes", "kv_bytes",
              "read_bytes", "write_bytes", "intensity")
    assert [[k[f] for f in fields] for k in lib["kernels"]] == [[k[f] for f in fields] for k in cli["kernels"]]
    assert lib["totals"] == cli["totals"]
    # the sizes: the command line's batch, context, and the default context's tokens of the forward pass it
    # runs for a model with no decode step (tests/test_trace.py: a model without a KV cache)
    from roofcalc.cli import DEFAULT_BATCH, DEFAULT_CONTEXT

    assert (Workload.decode().batch, Workload.decode().kv_len) == (DEFAULT_BATCH, DEFAULT_CONTEXT)
    assert (Workload.prefill().batch, Workload.prefill().query_tokens) == (DEFAULT_BATCH, DEFAULT_CONTEXT)
    # the step's AI: 2,161,694,976 FLOPs (tests/test_roofline.py) over the in-place step's 2,084,028,416 bytes
    # (ibid.) + the concatenation's 499 old positions read and written again, 2 · 499 · 22,528 = 22,482,944, + the
    # eager ops' extra bytes (docs/conventions.md, "Bytes"): 45 RMSNorms x 2,048 x (36 - 4) = 2,949,120, 22 rotaries
    # x (32 + 4) x 64 x (20 - 4) = 811,008, 22 SiLU x up x 5,632 x (10 - 6) = 495,616: 2,110,767,104 bytes, AI 1.0241
    assert cli["totals"]["intensity"] == 2_161_694_976 / 2_110_767_104


def test_json_schema(capsys):
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--format", "json", "--batch", "4", "--context", "1024"], capsys)
    doc = json.loads(out)
    assert code == 0
    assert set(doc) == {"schema_version", "model", "workload", "kernels", "totals", "hardware", "step", "points",
                        "warnings", "ignored", "engine_verdict"}
    assert doc["warnings"] == doc["ignored"] == []  # always there, [] for none
    # TinyLlama at batch 4 under transformers' eager generate on the T4 is host-bound: the engine line's words
    assert doc["engine_verdict"].startswith("host-bound under hf: under --engine vllm (CUDA graphs)")
    m = doc["model"]
    assert (m["n_layers"], m["d_model"], m["n_heads"], m["n_kv_heads"], m["head_dim"], m["d_ff"], m["vocab_size"]) == (
        22, 2048, 32, 4, 64, 5632, 32000)
    assert m["params"] == 1_100_048_384
    w = doc["workload"]
    assert (w["phase"], w["batch"], w["context"], w["weight_dtype"]) == ("decode", 4, 1024, "fp16")
    names = [k["name"] for k in doc["kernels"]]
    assert names[0] == "embed_tokens" and names[-2:] == ["norm", "lm_head"]
    for k in doc["kernels"]:
        assert k["kind"] in ("matmul", "attention", "elementwise", "memory")
        assert k["scope"] in ("layer", "model")
        assert k["bytes"] == k["weight_bytes"] + k["activation_bytes"] + k["kv_bytes"]
    q = next(k for k in doc["kernels"] if k["name"] == "q_proj")
    assert q["flops"] == 2 * 4 * 2048 * 2048 and q["count"] == 22 and q["kind"] == "matmul"
    t = doc["totals"]
    assert t["flops"] == sum(k["flops"] * k["count"] for k in doc["kernels"])
    assert t["bytes"] == sum(k["bytes"] * k["count"] for k in doc["kernels"])


def test_csv_has_exact_integers_under_the_json_keys(capsys):
    _, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    q = next(r for r in rows if r["name"] == "q_proj")
    assert int(q["flops"]) == 8_388_608 and int(q["bytes"]) == 8_396_800
    assert rows[-1]["name"] == "step total" and rows[-1]["scope"] == "step"
    assert {r["scope"] for r in rows[:-1]} == {"layer", "model"}
    _, js, _ = run(["TinyLlama/TinyLlama-1.1B", "--format", "json"], capsys)
    assert list(rows[0]) == list(json.loads(js)["kernels"][0])  # the same fields, in the same order
    # a sweep's points name their model, hardware and dtypes, so runs concatenate
    _, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1,2", "--hw", "A100", "--format", "csv"], capsys)
    pts = list(csv.DictReader(io.StringIO(out)))
    # (TinyLlama's checkpoint is bf16, and an A100 computes in it: bf16 when no --dtype is given)
    assert {(p["model"], p["hardware"], p["compute_dtype"], p["impl"]) for p in pts} == \
        {("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "A100-80GB", "bf16", "hf-eager")}


def test_markdown_is_a_table(capsys):
    _, out, _ = run(["TinyLlama/TinyLlama-1.1B", "-f", "markdown"], capsys)
    assert "| kernel" in out and "|---" in out.replace(":", "-").replace(" ", "")


def test_prefill_header(capsys):
    _, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--prompt", "128", "--batch", "2"], capsys)
    assert "prefill, batch B=2, prompt T=128, causal, logits for last token only" in out


def test_models_lists_catalog(capsys):
    code, out, _ = run(["models", "--wide"], capsys)
    assert code == 0 and "TinyLlama/TinyLlama-1.1B-Chat-v1.0" in out
    mixtral = next(line for line in out.splitlines() if line.startswith("mistralai/Mixtral-8x7B-v0.1"))
    assert "46,702,792,704" in mixtral and "12,879,925,248" in mixtral  # total, active (catalog, published)


def test_a_quantized_config_declares_its_format_and_group_size(tmp_path, capsys):
    """TinyLlama as a GPTQ 4-bit checkpoint. Its 22 layers' linears hold 22 x (2 x 2048² + 2 x 2048·256 +
    3 x 2048·5632) = 968,884,224 weights. Group 32 has 1/32 - 1/128 = 3/128 more fp16 scales per weight
    than the default 128: 968,884,224 x 3/128 x 2 = 45,416,448 bytes more. group_size -1 is one scale per
    output row: 22 x (q 2048 + k 256 + v 256 + o 2048 + gate 5632 + up 5632 + down 2048 = 17,920 rows) x 2
    = 788,480 bytes of scales, where group 128 has 968,884,224 / 128 x 2 = 15,138,816."""
    from roofcalc.sources import catalog

    cfg = next(e for e in catalog() if e.hub_id == "TinyLlama/TinyLlama-1.1B-Chat-v1.0").config
    sizes = {}
    for group in (32, -1):
        path = tmp_path / f"g{group}.json"
        path.write_text(json.dumps(dict(cfg, quantization_config={"quant_method": "gptq", "bits": 4,
                                                                  "group_size": group})))
        for extra in ([], ["--group-size", "128"]):
            code, out, _ = run([str(path), "--format", "json", *extra], capsys)
            assert code == 0
            sizes[group, bool(extra)] = json.loads(out)["model"]["weight_bytes"]
    assert sizes[32, True] == sizes[-1, True]  # --group-size overrides the declared group
    assert sizes[32, False] - sizes[32, True] == 45_416_448
    assert sizes[32, True] - sizes[-1, False] == 15_138_816 - 788_480
    # llm-compressor's W4A16 (compressed-tensors: int 4-bit weights, a scale per group of 128) is int4 at group 128
    w4a16 = {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}, "input_activations": None}
    fp8 = {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
           "input_activations": {"num_bits": 8, "type": "float", "dynamic": True, "strategy": "token"}}
    w8a8 = {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
            "input_activations": {"num_bits": 8, "type": "int", "dynamic": True}}
    for label, group in (("w4a16", w4a16), ("fp8", fp8), ("w8a8", w8a8), ("hqq", None)):
        q = {"quant_method": "hqq"} if group is None else \
            {"quant_method": "compressed-tensors", "config_groups": {"group_0": dict(group, targets=["Linear"])}}
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(dict(cfg, quantization_config=q)))
        code, out, err = run([str(path), "--format", "json", "--hw", "H100-SXM"], capsys)
        if label == "w4a16":
            assert code == 0 and json.loads(out)["model"]["weight_bytes"] == sizes[32, True]
        elif label == "fp8":
            assert code == 0 and json.loads(out)["workload"]["weight_dtype"] == "fp8-ch"
        else:  # integer GEMMs, or a method roofcalc does not read: refused, and read with the flag it names
            assert code == 2 and err.count("\n") == 1 and "--weight-dtype" in err
            code, out, _ = run([str(path), "--format", "json", "--weight-dtype", "int8"], capsys)
            assert code == 0 and json.loads(out)["workload"]["weight_dtype"] == "int8"


ERRORS = [
    (["missing/config.json"], "no such file"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "0"], "--batch: 0 is not a size; sizes start at 1"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "-3"], "--batch"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1.5"], "not a whole number"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1000000000000"], "beyond any real workload"),
    (["TinyLlama/TinyLlama-1.1B", "--dtype", "fp12"], "unknown dtype 'fp12'"),
    (["TinyLlama/TinyLlama-1.1B", "--act-dtype", "int4"], "activations cannot be int4"),
    (["TinyLlama/TinyLlama-1.1B", "--weight-dtype", "mxfp4"], "has no experts: mxfp4 stores"),
    (["TinyLlama/TinyLlama-1.1B", "--context", "5", "--prompt", "3"], "not allowed with argument"),
    (["mistralai/Mixtral-8x7B-v0.1", "--experts", "most"], "invalid choice: 'most'"),
    ([], "the following arguments are required: MODEL"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", ""], "--batch is empty"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1,,4"], "empty item"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "256..1"], "runs backwards"),
    (["TinyLlama/TinyLlama-1.1B", "--context", "512,x"], "not a whole number or a range"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1,1000000000000"], "beyond any real workload"),
    (["TinyLlama/TinyLlama-1.1B", "--generate", "16"], "--generate needs --prompt"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1,2", "--tpot", "5ms"], "describes one measured step"),
    # a whole request: the options it allows named (--context is refused beside --prompt)
    (["TinyLlama/TinyLlama-1.1B", "--prompt", "512", "--generate", "8", "--tpot", "5ms"],
     "give a single --batch and --prompt with it, and no --generate"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1,2", "--min-gain", "0"], "between 0 and 100"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1,2", "--memory", "lots"], "a size like 80GB"),
    # an empty --plot name is refused, not a step without its plot
    (["TinyLlama/TinyLlama-1.1B", "--plot", ""], "--plot is empty"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1,2", "--plot", ""], "--plot is empty"),
    (["TinyLlama/TinyLlama-1.1B", "--kernel-times", ""], "--kernel-times is empty; give a file"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1..0"], "--batch: the range '1..0' must end at 1 or more"),
    (["TinyLlama/TinyLlama-1.1B", "--point", "a:1:1:1ms", "--point", "a:2:2:2ms"], "--point 'a' is given twice"),
    (["TinyLlama/TinyLlama-1.1B", "--hw-file", " "], "--hw-file is empty; give a file"),
    (["profile", "TinyLlama/TinyLlama-1.1B", "--hw-file", ""], "--hw-file is empty; give a file"),  # not: measure first
    # a --size no machine holds is refused before an array is allocated: 1e30 bytes is 9.3e20 GiB
    (["measure", "--size", "1e30B"], "two arrays of 9.313e+20 GiB each are more than the"),
    (["measure", "--size", "1KB"], "at least 16MiB per array"),
]


@pytest.mark.parametrize("args,message", ERRORS)
def test_errors_are_one_line_exit_2(args, message, capsys):
    code, out, err = run(args, capsys)
    assert code == 2 and out == ""
    assert err.startswith("roofcalc: error: ") and err.count("\n") == 1, err
    assert message in err


def test_bad_config_files_exit_2(tmp_path, capsys):
    cases = {
        "not_json.json": "hello",
        "array.json": "[1, 2]",
        "truncated.json": '{"model_type": "llama", "hidden_size": 20',
        "heads.json": json.dumps({"model_type": "llama", "hidden_size": 100, "num_hidden_layers": 2,
                                  "num_attention_heads": 3, "intermediate_size": 8, "vocab_size": 10}),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        code, out, err = run([str(tmp_path / name)], capsys)
        assert code == 2 and err.startswith("roofcalc: error: ") and err.count("\n") == 1, (name, err)
    (tmp_path / "empty").mkdir()
    code, _, err = run([str(tmp_path / "empty")], capsys)
    assert code == 2 and "has no config.json" in err


def _roofcalc(args, hf_home, offline=True):
    """A fresh process: huggingface_hub reads HF_HOME and HF_HUB_OFFLINE when it is imported."""
    env = {"HF_HOME": str(hf_home), "PATH": "/usr/bin:/bin"}
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-m", "roofcalc", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_unknown_hub_id_offline_exits_2(tmp_path):
    proc = _roofcalc(["nobody/nothing-7b"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("roofcalc: error: ") and "HF_HUB_OFFLINE" in proc.stderr
    assert "pass the path" in proc.stderr and proc.stderr.count("\n") == 1
    # a catalog's hub id at a revision the cache lacks: the catalog's own is offered, not a wrong "not in the
    # catalog, did you mean ..."
    proc = _roofcalc(["TinyLlama/TinyLlama-1.1B-Chat-v1.0", "--revision", "main"], tmp_path)
    assert proc.returncode == 2 and proc.stderr == (
        "roofcalc: error: 'TinyLlama/TinyLlama-1.1B-Chat-v1.0' at revision 'main' is not in the HF cache, and the "
        "hub is not asked (offline); the catalog holds TinyLlama/TinyLlama-1.1B-Chat-v1.0's config: drop --revision "
        "to use it\n")


def test_hub_id_is_read_from_the_hf_cache_offline(tmp_path):
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(dict(
        model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        vocab_size=100)))
    (tmp_path / "hub" / "models--acme--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny" / "refs" / "main").write_text("abc123")
    proc = _roofcalc(["acme/tiny", "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"]["d_model"] == 64
    # --revision: another snapshot, under a tag, read through the hub library's own revision lookup
    other = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "def456"
    other.mkdir()
    (other / "config.json").write_text(json.dumps(dict(
        model_type="llama", hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
        vocab_size=100)))
    (tmp_path / "hub" / "models--acme--tiny" / "refs" / "v2").write_text("def456")
    proc = _roofcalc(["acme/tiny", "--revision", "v2", "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"]["d_model"] == 128
    proc = _roofcalc(["acme/tiny", "--revision", "v3"], tmp_path)  # not in the cache, and offline
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_main_job_imports_nothing_heavy():
    # nor roofcalc's sweep and parallel modules, which a single step on one GPU does not use (startup: their
    # dataclasses take about 10 ms to build, benchmarks/startup.py)
    code = ("import sys, io, contextlib\nfrom roofcalc.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['TinyLlama/TinyLlama-1.1B'])\n"
            "print(sorted(m for m in ('numpy', 'matplotlib', 'torch', 'transformers', 'huggingface_hub', 'pandas', "
            "'tqdm', 'plotly', 'roofcalc.sweep', 'roofcalc.parallel') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_submodules_not_imported_are_attributes_still():
    # a bare `import roofcalc` leaves roofcalc.sweep and roofcalc.parallel unimported (startup), and the README's
    # `roofcalc.sweep.sweep(...)` still works: the package imports them on first use
    code = ("import sys, roofcalc\nprint('roofcalc.sweep' in sys.modules, 'roofcalc.parallel' in sys.modules)\n"
            "print(callable(roofcalc.sweep.sweep), roofcalc.parallel.Parallel is roofcalc.calculator.Parallel)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "True", "True"]


# --------------------------------------------------------------------------- sweeps


def test_batch_sweep_table_and_verdicts(capsys):
    # fused kernels write the cache in place, as tests/test_sweep.py's hand derivations count it
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1,4,16,64,128", "--context", "2048", "--impl",
                          "fused"], capsys)
    assert code == 0 and err == ""
    rows = [line.split() for line in out.splitlines() if line.strip() and line.split()[0] in ("1", "4", "16", "64", "128")]
    assert [r[0] for r in rows] == ["1", "4", "16", "64", "128"]
    assert all(r[1] == "2048" and r[-1] == "yes" for r in rows)
    # the verdicts tests/test_sweep.py derives by hand, in words
    assert "KV-cache bytes per step overtake weight bytes from batch 45" in out
    assert "it never reaches the nominal ridge 203 at this context" in out
    # the T4's 16 GiB: (17,179,869,184 - 2,200,096,768 weights) / (2048 · 22,528 KV bytes) = 324.7
    assert "the largest batch that fits in 16 GiB" in out and ": 324" in out


def test_sweep_marks_what_does_not_fit(capsys):
    # Llama-2-7B fp16 on an H100's 80 GiB at S=4096: (85,899,345,920 - 13,476,831,232) / 2,147,483,648
    # = 33.7, so 33 sequences fit and 34 do not (the 80e9 case is derived in tests/test_sweep.py)
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--batch", "33,34", "--context", "4096", "--hw", "H100"], capsys)
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()[:2] in (["33", "4096"], ["34", "4096"])}
    assert lines["33"].rstrip().endswith("yes") and lines["34"].rstrip().endswith("NO: does not fit")
    assert "largest batch that fits in 80 GiB" in out and ": 33\n" in out


def test_sweep_json_has_one_record_per_point_and_the_verdicts(capsys):
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1..8", "--context", "512,2048", "--format", "json",
                        "--memory", "4GiB"], capsys)
    doc = json.loads(out)
    assert code == 0
    assert set(doc) == {"schema_version", "model", "workload", "hardware", "engine", "points", "verdicts",
                        "warnings", "ignored", "engine_verdict"}
    # no --engine: the worked example's engine, transformers' eager generate, named in the record and on each point
    assert doc["engine"]["name"] == "hf" and doc["engine"]["impl_used"] == "hf-eager"
    assert {p["engine"] for p in doc["points"]} == {"hf"}
    assert [(p["batch"], p["context"]) for p in doc["points"]] == [(b, s) for b in (1, 2, 4, 8) for s in (512, 2048)]
    p = doc["points"][0]
    assert set(p) >= {"flops", "weight_bytes", "kv_bytes", "intensity", "intensity_per_batch", "floor_s",
                      "step_s", "tokens_per_s", "tpot_s", "bound", "memory_bytes", "fits"}
    assert doc["hardware"]["capacity_bytes"] == 4 * 2 ** 30
    assert [v["context"] for v in doc["verdicts"]] == [512, 2048]
    # (4 GiB - 2,200,096,768) / (2048 · 22,528 = 46,137,344) = 45.4 -> 45
    assert doc["verdicts"][1]["max_batch"] == 45


def test_sweep_csv_and_markdown(capsys):
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1,2", "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["batch"] for r in rows] == ["1", "2"]
    assert int(rows[1]["flops"]) > int(rows[0]["flops"]) and rows[0]["context"] == "500"
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--context", "512..2048", "--format", "markdown"], capsys)
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert code == 0 and table[0].split("|")[1].strip() == "batch" and len(table) == 2 + 3  # 512, 1024, 2048


def test_markdown_nests_a_line_that_continues_the_one_above(capsys):
    """The roof's second line ("          measured none given ...") continues the "roof" item: a nested item,
    not a bullet of its own that starts with blanks."""
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--format", "markdown"], capsys)
    assert code == 0 and "\n  - measured none given" in out
    assert not any(line.startswith("-  ") for line in out.splitlines())
    from roofcalc.report import markdown_bullets

    lines = ["roof      nominal  320 GB/s", "          measured none given", "", "| a |", "|---|"]
    assert markdown_bullets(lines) == ["- roof      nominal  320 GB/s", "  - measured none given", "", "| a |",
                                       "|---|"]


def test_prefill_and_request_sweeps(capsys):
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--prompt", "128,512", "--batch", "1,8"], capsys)
    assert code == 0 and "TTFT ms" in out and "prompt tokens/s" in out
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--prompt", "512", "--generate", "64", "--format", "json"], capsys)
    [p] = json.loads(out)["points"]
    assert code == 0 and p["generate"] == 64
    assert p["total_s"] == pytest.approx(p["ttft_s"] + 63 * p["mean_tpot_s"])


@pytest.mark.parametrize("extra", [["--batch", "1,4,16", "--context", "512,4096"], ["--prompt", "64,256", "--batch", "1,2"],
                                   ["--prompt", "64", "--generate", "8", "--batch", "1,2"]])
def test_sweep_plots(tmp_path, capsys, extra):
    path = tmp_path / "sweep.svg"
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", *extra, "--plot", str(path)], capsys)
    assert code == 0 and err == ""
    svg = path.read_text()
    assert svg.count("<svg") == 1
    if extra[1] == "1,4,16":
        assert 'id="nominal-roof' in svg and 'id="memory-limit-0' in svg and 'id="point-2-1' in svg


def test_declared_fp8_weights_and_family_options(capsys):
    code, out, _ = run(["deepseek-ai/DeepSeek-V3", "--hw", "H100"], capsys)
    assert code == 0 and "fp8-b128 (the checkpoint's quantization_config)" in out and "MLA: q LoRA 1536" in out
    assert "\nkv_b_proj " in out and "\nq_absorb " not in out  # naive by default: what transformers computes
    code, out, _ = run(["deepseek-ai/DeepSeek-V3", "--hw", "H100", "--mla", "absorbed", "--dtype", "bf16"], capsys)
    assert code == 0 and "\nq_absorb " in out and "\nv_up " in out and "weights bf16" in out
    code, out, _ = run(["mistralai/Mixtral-8x7B-v0.1", "--batch", "64", "--experts", "topk", "--wide"], capsys)
    assert code == 0 and "on 2 of 8 experts" in out and "weights read per step: topk" in out


def test_a_single_step_says_whether_it_fits_by_the_sweeps_rule(capsys):
    # Llama-2-7B fp16: 13,476,831,232 bytes of weights (all 6,738,415,616 parameters x 2); KV cache
    # 2·32 layers·32 heads·128·2 bytes = 524,288 per token, x 16 x 4096 = 34,359,738,368; 47.84 GB in all
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--batch", "16", "--context", "4096", "--format", "json"], capsys)
    step = json.loads(out)["step"]
    assert step["memory_bytes"] == 13_476_831_232 + 34_359_738_368
    assert step["capacity_bytes"] == 16 * 2 ** 30 and step["fits"] is False  # the default T4's 16 GiB
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--batch", "16", "--context", "4096"], capsys)
    assert "= 47.8 GB: does NOT fit in 16 GiB" in out
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--batch", "16", "--context", "4096", "--memory", "80GB"], capsys)
    assert "fits in 80 GB" in out
    # the sweep says the same at that point
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--batch", "16,17", "--context", "4096", "--format", "json"], capsys)
    point = json.loads(out)["points"][0]
    assert point["memory_bytes"] == step["memory_bytes"] and point["fits"] is False


def test_the_single_step_and_the_sweep_agree_on_the_ridge(capsys):
    code, single, _ = run(["TinyLlama/TinyLlama-1.1B", "--context", "512", "--tpot", "15ms", "--impl", "fused"], capsys)
    code, swept, _ = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1,8", "--context", "512", "--impl", "fused"], capsys)
    # both: the AI tends to the same limit at this context and never reaches the T4's ridge of 203
    assert "tends to 142 FLOP/byte" in single and "tends to 142 FLOP/byte" in swept
    assert "never reaches the nominal ridge 203" in single and "never reaches the nominal ridge 203" in swept
    # eager transformers concatenates its cache (three times the KV bytes a step): a lower limit, the same in both
    code, single, _ = run(["TinyLlama/TinyLlama-1.1B", "--context", "512", "--tpot", "15ms"], capsys)
    code, swept, _ = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1,8", "--context", "512"], capsys)
    limit = re.search(r"tends to ([\d.]+) FLOP/byte", single).group(1)
    assert float(limit) < 142 and f"tends to {limit} FLOP/byte" in swept


def test_the_default_dtype_is_the_checkpoints_where_the_device_computes_in_it(capsys):
    # TinyLlama's config says torch_dtype bfloat16: bf16 on an A100; fp16 (the same width) on the T4,
    # which has no bf16 peak, so the worked example stays fp16 on a T4; --dtype always wins
    for args, dt, why in ((["--hw", "A100"], "bf16", "(the checkpoint's torch_dtype)"),
                          ([], "fp16", "(the checkpoint is bf16; T4 has no bf16 peak, so fp16, the same width)"),
                          (["--hw", "A100", "--dtype", "fp16"], "fp16", "")):
        code, out, _ = run(["TinyLlama/TinyLlama-1.1B", *args], capsys)
        line = next(x for x in out.splitlines() if x.startswith("dtypes"))
        assert code == 0 and f"compute {dt}" in line and why in line, line
    # GPT-2's config declares none: fp16, said so
    code, out, _ = run(["openai-community/gpt2"], capsys)
    assert "compute fp16 (default: the config declares no torch_dtype)" in out
    # a weight format alone leaves the activations and the cache to the checkpoint's dtype; fp8 weights by
    # channel compute in fp8, and the header gives each dtype its own reason
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "H100", "--weight-dtype", "fp8-ch"], capsys)
    line = next(x for x in out.splitlines() if x.startswith("dtypes"))
    assert line == ("dtypes    weights fp8-ch, activations bf16 (the checkpoint's torch_dtype), KV cache bf16, "
                    "compute fp8 (the weights' format)")


def test_an_asymptote_just_under_the_ridge_does_not_print_as_the_ridge():
    """Llama-2-70B at --tp 4 on an H100 (ridge 989.4e12 / 3.35e12 = 295.3) tends to 294.7 FLOP/byte at
    context 1000: three digits would print both as 295."""
    from roofcalc.report import _apart

    assert _apart(294.7, 295.3) == ("294.7", "295.3")
    assert _apart(102.4, 295.3) == ("102", "295")
    assert _apart(50.61, 295.3) == ("50.6", "295")


# --------------------------------------------------------------------------- commands, help, --output, did you mean

COMMAND_NAMES = ("models", "hardware", "measure", "profile", "help")


def test_the_usage_line_and_the_overview_list_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    overview = capsys.readouterr().out
    usage = overview.split("\n\n")[0]
    assert "roofcalc [-h] [--version] MODEL [options]" in usage
    assert "roofcalc {" + ",".join(COMMAND_NAMES) + "} ..." in usage
    commands = overview[overview.index("commands:"):overview.index("positional arguments:")]
    for name in COMMAND_NAMES:
        assert re.search(rf"^    {name} +\w", commands, re.M), name
    assert "--batch" in overview and "--output" in overview  # the model's options follow
    code, out, _ = run(["help"], capsys)  # roofcalc help: the same overview
    assert code == 0 and out == unwrap(overview)


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_help_command_is_the_commands_own_help(name, capsys):
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    own = capsys.readouterr().out
    assert own.startswith(f"usage: roofcalc {name}")
    code, out, _ = run(["help", name], capsys)
    assert code == 0 and out == unwrap(own)


def test_help_for_a_command_that_is_not_one(capsys):
    code, out, err = run(["help", "mesure"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no command 'mesure' (did you mean measure?)" in err


def test_a_first_word_that_is_no_command_is_the_model(tmp_path, capsys, monkeypatch):
    """Only the five command names are commands; a model folder of that name is given as a path."""
    from roofcalc.sources import catalog

    cfg = next(e for e in catalog() if e.hub_id == "TinyLlama/TinyLlama-1.1B-Chat-v1.0").config
    (tmp_path / "profile").mkdir()
    (tmp_path / "profile" / "config.json").write_text(json.dumps(cfg))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["./profile", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["model"]["name"] == "profile"
    code, out, _ = run(["--batch", "2", "TinyLlama/TinyLlama-1.1B", "--format", "json"], capsys)  # options first
    assert code == 0 and json.loads(out)["workload"]["batch"] == 2


def test_every_option_of_every_command_has_help():
    import argparse

    from roofcalc.cli import PARSERS, _main_parser

    parsers = {name: build() for name, build in PARSERS.items()}
    parsers["overview"] = _main_parser(listing=True)
    assert set(parsers) == {"roofcalc", "overview", *COMMAND_NAMES}
    for name, parser in parsers.items():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                assert [a.dest for a in action._choices_actions] == list(COMMAND_NAMES)
                for choice in action._choices_actions:
                    assert choice.help and choice.help.strip(), (name, choice.dest)
                continue
            assert action.help and action.help.strip() and action.help != argparse.SUPPRESS, \
                (name, action.option_strings or action.dest)


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_output_writes_the_document_to_a_file(fmt, tmp_path, capsys):
    for args in (["TinyLlama/TinyLlama-1.1B"], ["TinyLlama/TinyLlama-1.1B", "--batch", "1,4,16"]):  # step, sweep
        main([*args, "--format", fmt])
        printed = capsys.readouterr().out
        path = tmp_path / f"report.{fmt}"
        code = main([*args, "--format", fmt, "-o", str(path)])
        out, err = capsys.readouterr()
        assert code == 0 and out == ""
        assert err == f"roofcalc: wrote the {fmt} report to {path}\n"
        assert path.read_text() == printed
    code = main(["TinyLlama/TinyLlama-1.1B", "--output", str(path)])  # an existing file is replaced
    assert code == 0 and path.read_text().startswith("model     TinyLlama")


def test_output_refuses_what_it_cannot_write_and_the_inputs(tmp_path, capsys):
    from roofcalc.sources import catalog

    cfg = next(e for e in catalog() if e.hub_id == "TinyLlama/TinyLlama-1.1B-Chat-v1.0").config
    config = tmp_path / "model" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(cfg))
    hw = tmp_path / "hw.json"
    hw.write_text(json.dumps({"name": "mine", "bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}}))
    times = tmp_path / "times.csv"
    times.write_text("q_proj,1e-5\n")
    (tmp_path / "link.json").symlink_to(hw)
    m = "TinyLlama/TinyLlama-1.1B"
    cases = [
        ([m, "-o", str(tmp_path / "no" / "r.txt")], "folder"),
        ([m, "-o", str(tmp_path)], "is a folder"),
        ([m, "-o", str(tmp_path / "r.txt") + "/"], "names a folder (it ends in '/'); give a file name such as "),
        ([m, "--html", str(tmp_path / "r.html") + "/"], "--html " + str(tmp_path / "r.html") + "/ names a folder"),
        ([m, "--plot", str(tmp_path / "r.png") + "/"], "--plot " + str(tmp_path / "r.png") + "/ names a folder"),
        # every output checked before any is written: a bad page writes no plot either
        ([m, "--plot", str(tmp_path / "r.png"), "--html", str(tmp_path / "adir")], "the file must end in .html"),
        ([m, "--plot", str(tmp_path / "r.png"), "--html", str(tmp_path / "no" / "r.html")], "does not exist"),
        ([m, "-o", ""], "--output is empty"),
        ([m, "-o", "/dev/null"], "not a regular file"),
        ([str(config), "-o", str(config)], "is the model's config.json"),
        ([str(config.parent), "-o", str(config)], "is the model's config.json"),  # the folder's config.json
        ([m, "--hw-file", str(hw), "-o", str(hw)], "is the --hw-file profile"),
        ([m, "--hw-file", str(tmp_path / "link.json"), "-o", str(hw)], "is the --hw-file profile"),  # a link to it
        ([m, "--hw-file", str(hw), "-o", str(tmp_path / ".." / tmp_path.name / "hw.json")], "is the --hw-file"),
        ([m, "--kernel-times", str(times), "-o", str(times)], "is the --kernel-times file"),
        ([m, "--plot", str(tmp_path / "r.png"), "-o", str(tmp_path / "r.png")], "is the --plot image"),
    ]
    before = {p: p.read_text() for p in (config, hw, times)}
    for args, message in cases:
        code, out, err = run(args, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and message in err, (args, err)
    assert {p: p.read_text() for p in before} == before  # nothing the command reads was touched
    assert not any((tmp_path / name).exists() for name in ("r.txt", "r.html", "r.png"))  # nor a file it was not named
    import os

    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        code, _, err = run([m, "-o", str(locked / "r.txt")], capsys)
        assert code == 2 and "permission denied" in err


CLOSE_NAMES = [  # each misspelt name and what the one-line error suggests
    (["llama2-7b"], "(did you mean llama-2-7b or llama-2-70b?)"),  # catalog aliases
    (["tinylama"], "(did you mean tinyllama?)"),
    (["gpt-2"], "(did you mean gpt2?)"),
    (["TinyLama/TinyLlama-1.1B"], "(did you mean TinyLlama/TinyLlama-1.1B?)"),  # a catalog alias; the hub unreached
    (["qwen/qwen3-8"], "(did you mean Qwen/Qwen3-8B?)"),  # a hub id of the catalog
    (["acme/tiny-lama"], "(did you mean acme/tiny-llama?)"),  # the HF cache's
    (["mixtral"], "(did you mean mixtral-8x7b or mixtral-8x22b?)"),  # the names that hold what was typed
    # difflib's closest (Llama-3.1-8B) does not hold 'llama-3-8b': the names that do, first
    (["meta-llama/Llama-3-8B"], "(did you mean llama-3-8b, meta-llama/Meta-Llama-3-8B or meta-llama/Llama-3.1-8B?)"),
    (["TinyLlama/TinyLlama-1.1B", "--hw", "h10"], "unknown hardware 'h10' (did you mean H100-SXM?); known: T4"),
    # the closest names as find_hardware reads the device's own name, its vendor words left out
    (["TinyLlama/TinyLlama-1.1B", "--hw", "Tesla V100-SXM2-16GB"], "(did you mean V100-SXM2?)"),
    (["TinyLlama/TinyLlama-1.1B", "--hw", "rtx 4900"], "(did you mean RTX4090 or RTX4080?)"),
    (["TinyLlama/TinyLlama-1.1B", "--family", "lama"], "--family 'lama' is not a family roofcalc models (did you "
                                                       "mean llama?)"),
    (["TinyLlama/TinyLlama-1.1B", "--family", "qwen-2"], "(did you mean qwen2?)"),
    (["measure", "--nominal", "H20O"], "--nominal: unknown hardware 'H20O' (did you mean H200?)"),
    # a name that begins two catalog names is offered both, before difflib's nearest; a short one a character off
    (["TinyLlama/TinyLlama-1.1B", "--hw", "A100-PCIe"], "(did you mean A100-40GB-PCIe, A100-80GB-PCIe or H100-PCIe?)"),
    (["TinyLlama/TinyLlama-1.1B", "--hw", "T5"], "(did you mean T4?)"),
    (["TinyLlama/TinyLlama-1.1B", "--hw", "4090"], "(did you mean RTX4090?)"),  # a model number alone
    # a mistyped option: the command's closest (--out is the measure command's; the main one writes -o)
    (["TinyLlama/TinyLlama-1.1B", "--batchs", "4"], "unrecognized arguments: --batchs 4; did you mean --batch?"),
    # a list typed with a space after its comma is two arguments to the shell: the second is said to belong to it
    (["TinyLlama/TinyLlama-1.1B", "--batch", "4,", "8"], "unrecognized arguments: 8; a list is one argument: "
                                                        "--batch 4,8 (no spaces), or quote it"),
    (["TinyLlama/TinyLlama-1.1B", "--batch=4,", "8"], "a list is one argument: --batch=4,8 (no spaces)"),
    (["TinyLlama/TinyLlama-1.1B", "--batch", "1,", "8", "16"], "a list is one argument: --batch 1,8 (no spaces)"),
    (["TinyLlama/TinyLlama-1.1B", "-b4,", "8"], "a list is one argument: -b4,8 (no spaces)"),
    (["TinyLlama/TinyLlama-1.1B", "--out", "r.txt"], "--out r.txt; did you mean -o / --output?"),
    # another tool's name for an option (cli.SYNONYMS: vLLM's --tensor-parallel-size)
    (["TinyLlama/TinyLlama-1.1B", "--gpu", "H100"], "--gpu H100; did you mean --hw?"),
    (["TinyLlama/TinyLlama-1.1B", "--tensor-parallel-size", "2"], "--tensor-parallel-size 2; did you mean --tp?"),
    (["TinyLlama/TinyLlama-1.1B", "--batch_size", "2"], "--batch_size 2; did you mean --batch?"),  # underscores
    (["TinyLlama/TinyLlama-1.1B", "--pp-size", "2"], "--pp-size 2; did you mean --pp?"),
    # one with no counterpart here gets no suggestion (SGLang's --dp-size is not --group-size)
    (["TinyLlama/TinyLlama-1.1B", "--dp-size", "2"], "unrecognized arguments: --dp-size 2 (see 'roofcalc --help')"),
]


def test_a_measured_gpu_is_named_as_hw_takes_it():
    """The name a report gives a measured GPU ("fitted on A100-SXM's measured kernels") is one --hw reads, as the
    GPU whose kernels were measured."""
    from roofcalc.hardware import find_hardware, measured_gpu_name
    from roofcalc.predict import kernel_fits

    for gpu in kernel_fits()["gpus"]:
        assert find_hardware(measured_gpu_name(gpu)).fits == (gpu, "measured"), gpu


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """An HF cache holding acme/tiny-llama (a folder name is all the suggestions read) and a hub that cannot be
    reached: no test touches the network."""
    from huggingface_hub import constants

    from roofcalc import sources

    (tmp_path / "models--acme--tiny-llama").mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(sources, "_reachable", lambda url, timeout_s=1.5: False)
    return sources


@pytest.mark.parametrize("args,hint", CLOSE_NAMES)
def test_did_you_mean(args, hint, capsys, offline_hub):
    code, out, err = run(args, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert hint in err, err


def test_no_suggestion_for_a_name_far_from_every_one(capsys, offline_hub):
    for args in (["nobody/nothing-7b"], ["zzz"], ["TinyLlama/TinyLlama-1.1B", "--hw", "Z9000"]):
        code, _, err = run(args, capsys)
        assert code == 2 and "did you mean" not in err, err
    # a stray number no list came before is no list split by a space (a model name or a hardware name with a comma)
    for args in (["TinyLlama/TinyLlama-1.1B", "32"], ["TinyLlama/TinyLlama-1.1B,", "8"],
                 ["TinyLlama/TinyLlama-1.1B", "--hw", "T4,", "8"]):
        code, _, err = run(args, capsys)
        assert code == 2 and "unrecognized arguments: " in err and "a list" not in err, args
    _, _, err = run(["nobody/nothing-7b"], capsys)  # today's message when the hub is not reached
    assert "https://huggingface.co cannot be reached; download its config.json" in err


def _hub_error(name):
    """An error of the hub library's, as hf_hub_download raises it on the hub's answer (no network)."""
    from types import SimpleNamespace

    from huggingface_hub import errors

    return getattr(errors, name)("the hub's message", response=SimpleNamespace(headers={}, request=None,
                                                                               status_code=404))


@pytest.mark.parametrize("error,message", [
    ("RepositoryNotFoundError", "'TinyLama/TinyLlama-1.1B' does not exist on the hub (a private repo needs hf auth "
                                "login) (did you mean TinyLlama/TinyLlama-1.1B?)"),
    ("GatedRepoError", "'TinyLama/TinyLlama-1.1B' is gated on the hub: accept its terms"),
    ("RevisionNotFoundError", "has no revision"),
    ("EntryNotFoundError", "has no config.json on the hub"),
])
def test_the_hub_saying_no_is_told_apart_from_no_hub(error, message, capsys, offline_hub, monkeypatch):
    monkeypatch.setattr(offline_hub, "_reachable", lambda url, timeout_s=1.5: True)

    def fetch(repo_id, revision):
        if error == "EntryNotFoundError":
            from huggingface_hub import errors

            raise errors.EntryNotFoundError("no config.json")
        raise _hub_error(error)

    monkeypatch.setattr(offline_hub, "_fetch", fetch)
    code, out, err = run(["TinyLama/TinyLlama-1.1B"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert message in err, err
    monkeypatch.setattr(offline_hub, "_fetch", lambda repo_id, revision: (_ for _ in ()).throw(ConnectionError()))
    _, _, err = run(["TinyLama/TinyLlama-1.1B"], capsys)  # the network lost on the way: no verdict on the id
    assert "cannot fetch 'TinyLama/TinyLlama-1.1B' from the hub (ConnectionError)" in err


@pytest.mark.parametrize("gpu", [False, True])
def test_install_lines_say_which_torch_to_install(gpu, capsys, monkeypatch):
    import shutil

    from roofcalc import cli, inputs
    from roofcalc.errors import RoofcalcError

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi" if gpu and name == "nvidia-smi" else None)
    monkeypatch.setattr(sys, "platform", "linux")
    line = inputs.torch_install()
    if gpu:  # PyPI's torch for Linux is a CUDA build
        assert line == "pip install '.[torch]' in roofcalc's checkout (PyPI's torch for Linux is a CUDA build)"
    else:  # a CPU build first, or pip fetches the CUDA one
        assert line.startswith("pip install torch --index-url https://download.pytorch.org/whl/cpu && "
                               "pip install '.[torch]' in roofcalc's checkout")

    def needs_torch(argv):  # trace.py and collectives.py say the bare extra: the CLI says the whole line
        raise RoofcalcError("counting by trace needs PyTorch: pip install '.[torch]' in roofcalc's checkout")

    monkeypatch.setitem(cli.COMMANDS, "models", needs_torch)
    code, _, err = run(["models"], capsys)
    assert code == 2 and err == f"roofcalc: error: counting by trace needs PyTorch: {line}\n"
    monkeypatch.setattr(sys, "platform", "win32")
    assert gpu == ("pytorch.org/get-started" in inputs.torch_install())  # elsewhere, pytorch.org's CUDA build


def test_an_fp8_checkpoint_runs_on_the_default_t4(capsys):
    """Llama-2-7B with FP8 weights (one byte each, a 4-byte scale per matrix) on the default T4, which has no FP8
    GEMMs: weight-only, as vLLM runs FP8 checkpoints from compute capability 7.5 (FP8 Marlin), so the weights
    stay 8-bit and the GEMMs compute in fp16; on a V100 (7.0) the weights are dequantized to fp16 at load."""
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--weight-dtype", "fp8-t", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["workload"]["weight_dtype"] == "fp8-t" and doc["workload"]["compute_dtype"] == "fp16"
    q = next(k for k in doc["kernels"] if k["name"] == "q_proj")
    assert q["weight_bytes"] == 4096 * 4096 + 4
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--weight-dtype", "fp8-t"], capsys)
    assert code == 0 and "T4 has no fp8 GEMMs: the fp8-t weights compute in fp16, weight-only" in out
    code, out, _ = run(["meta-llama/Llama-2-7b-hf", "--weight-dtype", "fp8-t", "--hw", "V100", "--format", "json"],
                       capsys)
    doc = json.loads(out)
    assert code == 0 and doc["workload"]["weight_dtype"] == "fp16"
    assert next(k for k in doc["kernels"] if k["name"] == "q_proj")["weight_bytes"] == 4096 * 4096 * 2
    # unscaled fp8 weights (--weight-dtype fp8) compute in fp8: where there is none, one line names the scaled ones
    for hw in ("T4", "V100", "A100"):
        code, out, err = run(["meta-llama/Llama-2-7b-hf", "--weight-dtype", "fp8", "--hw", hw], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and "--weight-dtype fp8-t" in err, hw
    code, _, err = run(["meta-llama/Llama-2-7b-hf", "--dtype", "fp8", "--hw", "A100"], capsys)
    assert code == 2 and "A100-80GB has no fp8 peak" in err  # fp8 activations too: no such device


# --------------------------------------------------------------------------- words: ratios named, speed-ups positive

WORKED = ["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s", "--measured-flops", "50TFLOP/s"]


def _ms(seconds):
    from roofcalc.units import ms

    return ms(seconds)


def _step(args, capsys):
    code, out, _ = run(args + ["--format", "json"], capsys)
    assert code == 0
    return json.loads(out)["step"]


def test_the_measured_step_names_the_roof_of_each_floor_and_the_gap_the_model_predicts(capsys):
    """The worked example's 15 ms step: its multiple of the measured roof's floor (the kernels' floors
    summed), and the step model's time above the floors said against the measured 7.2 ms gap, not as
    'of it' when it is more than the gap. The numbers are the JSON record's, combined here by hand."""
    st = _step(WORKED + ["--tpot", "15ms"], capsys)
    floors, predicted = st["sum_floor_s"], st["predicted_s"]
    code, out, _ = run(WORKED + ["--tpot", "15ms", "--record"], capsys)
    assert code == 0
    # 15 ms / 7.82 ms of floors = 1.92
    assert f"1.92x the measured roof's floor ({_ms(floors)} ms, the kernels' floors summed)" in out
    assert round(0.015 / floors, 2) == 1.92
    gap, model = 0.015 - floors, predicted - floors  # 7.18 ms measured above the floors; 9.98 ms predicted
    assert model > gap
    assert (f"1 below the slope: {_ms(gap)} ms above the floors is overhead and kernel efficiency; the step model "
            f"predicts {_ms(model)} ms above the floors, {_ms(model - gap)} ms more than measured (measured step / "
            f"predicted step {0.015 / predicted:.2f}: inside the 80% range)") in out
    assert st["predicted_lower_s"] <= 0.015 <= st["predicted_upper_s"]
    assert "ms of it" not in out and "9.980" not in out  # 17.8 - 7.82 = 9.98: three digits
    # the record table: 15 ms over the nominal roof's floor of the whole step, 2,110,767,104 bytes / 320 GB/s =
    # 6.596 ms (tests above: the eager step's bytes): 2.27
    assert re.search(r"step time \(ms\) +6\.6 \(floor\) +15 +2\.27x the nominal floor", out)
    assert re.search(r"step achieved \(GFLOP/s\) +328 \(roof at AI\) +144 +52% of the measured roof", out)


def test_a_gap_larger_than_the_model_predicts_is_split_into_its_predicted_part_and_the_rest(capsys):
    st = _step(WORKED + ["--tpot", "40ms"], capsys)
    floors, predicted = st["sum_floor_s"], st["predicted_s"]
    gap, model = 0.040 - floors, predicted - floors  # 32.2 ms above the floors, 10.0 ms of it predicted
    code, out, _ = run(WORKED + ["--tpot", "40ms"], capsys)
    assert (f"the step model predicts {_ms(model)} ms of it, {_ms(gap - model)} ms it does not explain "
            f"(measured step / predicted step {0.040 / predicted:.2f}: above the 80% range)") in out
    assert 0.040 > st["predicted_upper_s"]


def test_a_slower_step_up_in_gpus_is_called_slower_with_a_positive_number(capsys):
    """TinyLlama under hf-eager is host-bound: two H100s take longer than one (the host's time does not
    shrink and an all-reduce is added), which the verdict says as 'N% slower', N = step(2) / step(1) - 1."""
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "H100", "--tp", "1,2,4,8", "--format", "json"], capsys)
    steps = {p["tp"]: p["step_s"] for p in json.loads(out)["tp_points"]}
    assert steps[2] > steps[1]
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "H100", "--tp", "1,2,4,8"], capsys)
    assert code == 0
    assert (f"scaling   adding GPUs stops paying at --tp 2: the step is {100 * (steps[2] / steps[1] - 1):.1f}% slower "
            f"than at the --tp before it (less than 10% faster)") in out


def test_a_doubling_that_loses_tokens_per_second_says_fewer():
    from dataclasses import replace

    from roofcalc import load_shape
    from roofcalc.hardware import find_hardware
    from roofcalc.report import verdict_lines
    from roofcalc.sweep import sweep

    sw = sweep(load_shape("TinyLlama/TinyLlama-1.1B"), find_hardware("T4"), batches=[1, 2], contexts=[512])
    v = replace(sw.verdicts[0], doubling_batch=64, doubling_gain=-0.05)  # batch 128 gives 5% fewer tokens/s
    lines = verdict_lines(replace(sw, verdicts=(v,)))
    assert "  doubling  stops paying at batch 64: batch 128 gives 5.0% fewer tokens/s (less than 10% more)" in lines
    v = replace(v, doubling_gain=0.075)
    assert any("batch 128 gives only 7.5% more tokens/s (less than 10% more)" in line
               for line in verdict_lines(replace(sw, verdicts=(v,))))
    # where the doubled batch, or the batch itself, is more than fits, the line says which
    for top, tail in ((128, "(less than 10% more)"), (100, "(less than 10% more) (batch 128 does not fit)"),
                      (50, "(less than 10% more) (beyond what fits)")):
        line = next(x for x in verdict_lines(replace(sw, verdicts=(replace(v, max_batch=top),)))
                    if x.startswith("  doubling"))
        assert line.endswith(tail), (top, line)


@pytest.mark.parametrize("args,shape", [
    # Llama-2-70B at --tp 4: 64 / 4 = 16 heads, 8 / 4 = 2 KV heads, 28,672 / 4 = 7,168, 32,000 / 4 = 8,000
    (["--tp", "4"], "shape     per rank: L=80 layers, D=8192, N=16 heads / K=2 KV heads x H=128, F=7168, V=8000"),
    # --pp 2: the slowest stage, stage 1, holds layers 40-79 of the 80
    (["--pp", "2", "--batch", "8"],
     "shape     per rank: L=40 layers (stage 1's, of 80), D=8192, N=64 heads / K=8 KV heads x H=128, F=28672, "
     "V=32000"),
    # a pipeline sweep's header: one --tp rank's shards of every stage's layers
    (["--tp", "4", "--pp", "2", "--batch", "1,8", "--context", "1000"],
     "shape     per --tp rank: L=80 layers (all 2 stages'), D=8192, N=16 heads / K=2 KV heads x H=128, F=7168, "
     "V=8000"),
    # --pp alone in a sweep: the whole model's shape, every stage's layers
    (["--pp", "2", "--batch", "1,8", "--context", "1000"],
     "shape     L=80 layers (all 2 stages'), D=8192, N=64 heads / K=8 KV heads x H=128, F=28672, V=32000"),
    ([], "shape     L=80 layers, D=8192, N=64 heads / K=8 KV heads x H=128, F=28672, V=32000"),
])
def test_a_ranks_shape_says_per_rank(args, shape, capsys):
    code, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", *args], capsys)
    assert code == 0 and shape in out.splitlines()


def test_no_output_calls_a_negative_number_faster_or_slower_and_every_ratio_names_its_what(capsys, tmp_path):
    """Across the reports: no '-4.9% faster' (a slowdown says 'slower' with a positive number), and
    every 'Nx' ratio is followed by what it is a multiple of ('the', 'its', 'this')."""
    times = tmp_path / "times.csv"
    times.write_text("q_proj,3.1e-05\nattention,2.4e-05\ninput_layernorm,9e-06\nkv_cache_write,4e-06\n")
    tiny, llama, mix = "TinyLlama/TinyLlama-1.1B", "meta-llama/Llama-2-70b-hf", "mistralai/Mixtral-8x7B-v0.1"
    runs = [
        [tiny], WORKED + ["--tpot", "15ms", "--record"], WORKED + ["--tpot", "40ms", "--kernel-times", str(times)],
        [tiny, "--prompt", "512", "--tpot", "30ms"],
        [tiny, "--batch", "1..512", "--context", "512,2048,8192"], [tiny, "--batch", "1,8", "--prompt", "128,2048"],
        [tiny, "--batch", "1,4", "--prompt", "512", "--generate", "64"],
        [tiny, "--hw", "H100", "--tp", "1,2,4,8"], [tiny, "--hw", "H100", "--tp", "1,2,4,8", "--impl", "cuda-graph"],
        [tiny, "--hw", "H100", "--pp", "1,2,4", "--impl", "cuda-graph"],
        [llama, "--hw", "H100", "--tp", "4", "--tpot", "30ms"], [llama, "--hw", "H100", "--tp", "2", "--pp", "2",
                                                                   "--batch", "8"],
        [llama, "--hw", "H100", "--tp", "4", "--pp", "2", "--batch", "1,8,64", "--context", "1000,4000"],
        [mix, "--hw", "H100", "--ep", "1,2,4,8", "--batch", "8"], [mix, "--hw", "H100", "--ep", "4", "--batch", "8"],
    ]
    speeds, ratios = 0, 0
    for args in runs:
        code, out, err = run(args, capsys)
        assert code == 0, (args, err)
        assert not re.search(r"-\d[\d.,]*\s*%?\s*(faster|slower)", out), args
        speeds += len(re.findall(r"\d[\d.,]*% (?:faster|slower)", out))
        for m in re.finditer(r"(?<![\w.])\d[\d.,]*x (\S+)", out):
            assert m.group(1) in ("the", "its", "this"), (args, m.group(0))
            ratios += 1
    # the scan read verdicts and ratios, not empty reports (a prefill right of the ridge has no ratio to the ridge)
    assert speeds >= 4 and ratios >= 8


def test_a_weight_format_the_engine_does_not_run_is_refused(capsys):
    """A GGUF block format outside the engines that load GGUF files (TensorRT-LLM and gpt-fast load none;
    transformers dequantizes one to 16 or 32 bits as it loads it), fp8 weights under llama.cpp (GGUF has no FP8
    type) or under vLLM below compute capability 7.5 (a V100: 7.0; vLLM's FP8 docs: "FP8 models will run on compute
    capability >= 7.5 (Turing) as weight-only W8A16"), a CUDA engine's int4 kernel under llama.cpp: one
    line each, saying what runs instead. llama.cpp and vLLM take q4_0."""
    m = "meta-llama/Llama-3.1-8B"
    for flags, words in ((["--weight-dtype", "q4_0", "--engine", "trtllm"], "--engine trtllm loads no GGUF file"),
                         (["--weight-dtype", "q8_0", "--engine", "gpt-fast"], "--engine gpt-fast loads no GGUF file"),
                         (["--weight-dtype", "q4_0"], "transformers dequantizes a GGUF file to 16 or 32 bits"),
                         (["--weight-dtype", "fp8-t", "--engine", "llama.cpp"], "GGUF has no FP8 type"),
                         (["--weight-dtype", "int4", "--int4-kernel", "autoawq", "--engine", "llama.cpp"],
                          "llama.cpp runs its own"),
                         (["--weight-dtype", "fp8-t", "--engine", "vllm", "--hw", "V100"],
                          "vLLM runs fp8 weights from compute capability 7.5 (FP8 Marlin from Turing, FP8 GEMMs from "
                          "8.9); V100-SXM2 is 7.0")):
        code, out, err = run([m, *flags], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, flags
    for engine in ("llama.cpp", "vllm", "sglang"):
        assert run([m, "--weight-dtype", "q4_0", "--engine", engine, "--hw", "RTX4090"], capsys)[0] == 0
    # vLLM's GGUF loader came with v0.5.5 (PR #5191): not the vllm-v0 preset's versions; q8_0 names int8
    for flags, words in ((["--weight-dtype", "q4_0", "--engine", "vllm-v0"], "--engine vllm-v0 loads no GGUF file"),
                         (["--weight-dtype", "q8_0", "--engine", "trtllm"], "its 8-bit weights are --weight-dtype int8"),
                         # an alias of fp8, and --dtype: refused as fp8 is, naming the flag typed
                         (["--weight-dtype", "e4m3", "--engine", "llama.cpp"], "--weight-dtype e4m3: GGUF has no FP8"),
                         (["--dtype", "fp8", "--engine", "llama.cpp", "--hw", "H100"], "--dtype fp8: GGUF has no FP8"),
                         # a checkpoint's own fp8 (DeepSeek-V3's block-scaled quantization_config) as a flag's
                         (["deepseek-v3", "--engine", "llama.cpp", "--hw", "H100"],
                          "deepseek-ai/DeepSeek-V3's quantization_config (fp8-b128): GGUF has no FP8 type"),
                         (["--weight-dtype", "fp8-t", "--engine", "vllm", "--hw", "V100"], "V100-SXM2 is 7.0")):
        args = flags if flags[0] == "deepseek-v3" else [m, *flags]
        code, out, err = run(args, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, flags
    # the default engine's verdict (on a host-bound step) says vLLM would refuse the run, not what it would take
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--weight-dtype", "fp8-t", "--hw", "V100"], capsys)
    assert code == 0 and "--engine vllm would refuse it: --weight-dtype fp8-t: vLLM runs fp8 weights from compute " \
        "capability 7.5" in unwrap(out)
    # a T4 (7.5) runs them under vLLM weight-only, W8A16, as FP8 Marlin does
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--weight-dtype", "fp8-t", "--hw", "T4", "--engine", "vllm"], capsys)
    assert code == 0 and "weight-only W8A16 as vLLM's FP8 Marlin runs them" in unwrap(out)


def test_llama_cpp_block_formats_are_the_integer_ones_they_are(capsys):
    """llama.cpp's Q4_0 and Q8_0 hold 32 weights with one fp16 scale, 18 and 34 bytes (ggml-common.h block_q4_0,
    block_q8_0): --weight-dtype q4_0 and q8_0 are int4 and int8 in groups of 32, byte for byte in every linear of
    the layers (q_proj of Llama-2-7B in Q4_0: 4096 x 4096 / 2 + 4096 x 128 x 2 = 9,437,184 bytes); the file's
    tables are its own (the next test). A group size that contradicts the format, or a K-quant (which mixes block
    formats by tensor), or a group that does not divide a matmul's input, is one line naming what to give."""
    for name, fmt, q_bytes in (("q4_0", "int4", 4096 * 4096 // 2 + 4096 * 128 * 2),
                               ("Q8_0", "int8", 4096 * 4096 + 4096 * 128 * 2)):
        docs = []
        for flags in (["--weight-dtype", name], ["--weight-dtype", fmt, "--group-size", "32"]):
            code, out, _ = run(["meta-llama/Llama-2-7b-hf", *flags, "--engine", "llama.cpp", "--format", "json"], capsys)
            assert code == 0
            docs.append(json.loads(out))
        gguf = {"gguf", "gguf_embedding", "gguf_output"}
        assert {k: v for k, v in docs[0]["workload"].items() if k not in gguf} == docs[1]["workload"]
        layers = [[(k["name"], k["weight_bytes"]) for k in d["kernels"] if k["name"] not in ("embed_tokens", "lm_head")]
                  for d in docs]
        assert layers[0] == layers[1] and ("q_proj", q_bytes) in layers[0]
    for flags, words in ((["--weight-dtype", "q4_0", "--group-size", "64"], "drop --group-size 64"),
                         (["--weight-dtype", "Q4_K_M"], "--weight-dtype int4 --group-size 32"),
                         # a group lies along a matmul's input: 7 does not divide the hidden size 4,096
                         (["--weight-dtype", "int4", "--group-size", "7"], "does not divide the hidden size 4096")):
        code, out, err = run(["meta-llama/Llama-2-7b-hf", *flags], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, flags
    # 512 divides the hidden size but not the MLP width 11,008 (2^8 x 43): taken, as the default 128 is on a width
    # it does not divide, its scales rounded up
    assert run(["meta-llama/Llama-2-7b-hf", "--weight-dtype", "int4", "--group-size", "512"], capsys)[0] == 0


def test_a_gguf_files_tables_are_as_llama_cpps_quantizer_writes_them(capsys):
    """llama.cpp's quantizer (src/llama-quant.cpp, llama_tensor_get_type) writes output.weight in Q6_K (210 bytes a
    256 weights, ggml-common.h block_q6_K) unless the file is Q8_0, and keeps token_embd.weight in the file's type;
    a tied model's one table is the output's. Checked against llama.cpp's own load logs:
    * Meta-Llama-3-8B-Instruct.Q4_0.gguf, "type q4_0: 225 tensors, type q6_K: 1 tensors", "model size = 4.33 GiB
      (4.64 BPW)" (ipvm-wg/homestar example-llm-workflows/README.md @ 528c69b);
    * Llama-2-13B in Q4_0, "model size = 6.86 GiB (4.53 BPW)" (llama.cpp commit b18c66c, pull request #4254's
      message).
    With both tables in 16 bits, as before, they came out at 5.61 and 7.26 GiB (6.01 and 4.79 bits a weight)."""
    # llama.cpp's size holds the norm vectors in f32, 2 bytes a value more than roofcalc's 16 bits: 2 a layer and
    # the final one, 65 of 4,096 (Llama-3-8B) and 81 of 5,120 (Llama-2-13B)
    for model, gib, bpw, f32 in (("llama-3-8b", 4.33, 4.64, 65 * 4096 * 2), ("llama-2-13b", 6.86, 4.53, 81 * 5120 * 2)):
        code, out, _ = run([model, "--weight-dtype", "q4_0", "--engine", "llama.cpp", "--hw", "RTX4090",
                            "--format", "json"], capsys)
        doc = json.loads(out)
        nbytes = doc["model"]["weight_bytes"] + f32
        assert code == 0 and round(nbytes / 2 ** 30, 2) == gib
        assert round(nbytes * 8 / doc["model"]["params"], 2) == bpw
        assert (doc["workload"]["gguf_embedding"], doc["workload"]["gguf_output"]) == ("q4_0", "q6_K")
    # Llama-3-8B's lm_head: 128,256 x 4,096 weights, 512 blocks of 256 a row at 210 bytes
    code, out, _ = run(["llama-3-8b", "--weight-dtype", "q4_0", "--engine", "llama.cpp", "--format", "json"], capsys)
    assert next(k for k in json.loads(out)["kernels"] if k["name"] == "lm_head")["weight_bytes"] == 128256 * 16 * 210
    # a Q8_0 file keeps both tables in Q8_0; a tied table (Gemma's) is the output's, Q6_K, read by lm_head whole
    code, out, _ = run(["llama-3-8b", "--weight-dtype", "q8_0", "--engine", "llama.cpp", "--format", "json"], capsys)
    assert (json.loads(out)["workload"]["gguf_embedding"], json.loads(out)["workload"]["gguf_output"]) == ("q8_0",) * 2
    code, out, _ = run(["gemma-2b", "--weight-dtype", "q4_0", "--engine", "llama.cpp", "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["workload"]["gguf_embedding"] == doc["workload"]["gguf_output"] == "q6_K"
    assert next(k for k in doc["kernels"] if k["name"] == "lm_head")["weight_bytes"] == 256000 * 8 * 210
    code, out, _ = run(["gemma-2b", "--weight-dtype", "q4_0", "--engine", "llama.cpp"], capsys)
    assert "as a Q4_0 GGUF file stores it: token_embd.weight Q6_K (tied: lm_head's)" in unwrap(out)
    # GPT-2's converter writes its tied table twice (convert_hf_to_gguf.py GPT2Model): wte's 50,257 x 768 weights in
    # Q4_0 (1,206,168 blocks of 18 bytes) and in Q6_K (150,771 blocks of 210), where int4 in groups of 32 held them
    # once in 16 bits (77,194,752 bytes)
    sizes = []
    for flags in (["--weight-dtype", "q4_0"], ["--weight-dtype", "int4", "--group-size", "32"]):
        code, out, _ = run(["gpt2", *flags, "--engine", "llama.cpp", "--format", "json"], capsys)
        sizes.append(json.loads(out)["model"]["weight_bytes"])
    assert sizes[0] == sizes[1] - 50257 * 768 * 2 + 1_206_168 * 18 + 150_771 * 210
    code, out, _ = run(["gpt2", "--weight-dtype", "q4_0", "--engine", "llama.cpp"], capsys)
    assert "token_embd.weight Q4_0, output.weight Q6_K (a copy of the tied table, as its converter writes it)" in \
        unwrap(out)


@pytest.mark.parametrize("flags", [["llama-2-70b", "--context", "2048", "--tp", "8"],
                                   ["llama-2-70b", "--context", "64", "--tp", "4"],
                                   ["mixtral-8x7b", "--engine", "vllm", "--context", "128", "--ep", "2"],
                                   ["mixtral-8x7b", "--engine", "vllm", "--context", "2048", "--ep", "2",
                                    "--ep-attention", "tp"]])
def test_a_split_steps_slope_is_its_ranks_as_its_sweep_says(capsys, flags):
    """Distance 2 of one rank's step (--tp, --ep with either attention) is the verdict its sweep gives at that
    context, in the step's batch (the --ep rank's own batch times the ranks), not the unsplit model's on one GPU."""
    base = [*flags, "--hw", "H100"]
    code, js, _ = run([*base, "--batch", "4,64", "--format", "json"], capsys)
    v = json.loads(js)["verdicts"][0]
    code, out, _ = run([*base, "--batch", "64", "--tpot", "30ms"], capsys)
    words = unwrap(out).split("2 along the slope: ")[1]
    if v["ridge_batch"] is None:
        assert words.startswith(f"the step's AI tends to {v['intensity_limit']:.3g} FLOP/byte")
    else:
        assert words.startswith(f"the step's AI reaches the nominal ridge 295 FLOP/byte at batch {v['ridge_batch']:,}")
    one = [f for f in base if f not in ("--tp", "--ep", "--ep-attention", "8", "4", "2", "tp")]
    code, js, _ = run([*one, "--batch", "4,64", "--format", "json"], capsys)
    assert json.loads(js)["verdicts"][0] != v  # (one GPU's verdict differs: the test tells them apart)


def test_a_step_right_of_the_ridge_has_no_slope_left_and_a_step_under_its_floors_is_called_faster(capsys, tmp_path):
    """Distance 2 is zero once the step's AI is past the ridge (the roof is flat there), and distance 1 is to the
    roof, not the slope; a measured figure under 0.9x its floor on the roof in use (roofline.FASTER_THAN_FLOOR) is
    called faster than that roof allows, in the text and the JSON, and a slow one is not."""
    tiny = "TinyLlama/TinyLlama-1.1B"
    # a fused prefill (its norms and rotary one kernel each) sits right of the T4's ridge
    code, out, _ = run([tiny, "--prompt", "512", "--impl", "fused", "--tpot", "15ms"], capsys)
    assert code == 0
    code, js, _ = run([tiny, "--prompt", "512", "--impl", "fused", "--tpot", "15ms", "--format", "json"], capsys)
    step = json.loads(js)["step"]
    ridge = 65e12 / 320e9  # the T4's datasheet: 65 TFLOP/s of fp16 over 320 GB/s
    assert step["intensity"] > ridge
    assert (f"2 along the slope: none: the step's AI {step['intensity']:.0f} is right of the nominal ridge "
            f"{ridge:.0f} FLOP/byte, under the flat roof") in out
    assert "1 below the roof: " in out and "further right" not in out
    # the prefill's floors add up to more than 15 ms / 0.9: the step is faster than the datasheet allows
    assert 15e-3 < 0.9 * step["sum_floor_s"]
    assert f"faster    the step (15.0 ms against floors of {step['sum_floor_s'] * 1e3:.3g} ms)" in out
    # a decode step at 15 ms is 2.3x its floors: nothing faster; at 1 ms it is
    code, out, _ = run([tiny, "--tpot", "15ms"], capsys)
    assert code == 0 and "\nfaster " not in out and "1 below the slope: " in out
    # on a measured roof a step faster than its floors there is put to a low roof, unless it beats the datasheet's
    # floors too: TinyLlama's decode floors are 6.60 ms on the T4's datasheet (320 GB/s), 6.60 x 320 / 270 = 7.82 ms
    # at a measured 270 GB/s and 21.1 ms at 100 GB/s; 5 ms is under 0.9 x 6.60 = 5.94 (the datasheet's too), 9 ms is
    # not (a low roof)
    for bw, tpot, words in (("270GB/s", "5ms", "faster than even the datasheet allows"),
                            ("100GB/s", "9ms", "the measured roof does not bound them")):
        code, out, _ = run([tiny, "--measured-bw", bw, "--tpot", tpot], capsys)
        assert code == 0 and words in " ".join(out.split()), (bw, tpot)
    # each figure by what it beats: at 100 GB/s the 9 ms step beats only the measured roof's floors (a low roof),
    # q_proj at 1 us beats the datasheet's 26.2 us too (impossible; 84.0 us at 100 GB/s): two lines, neither taking
    # the other's words
    times = tmp_path / "fast.csv"
    times.write_text("name,us\nq_proj,1\n")
    code, out, _ = run([tiny, "--measured-bw", "100GB/s", "--tpot", "9ms", "--kernel-times", str(times)], capsys)
    fast = [line for line in unwrap(out).splitlines() if line.startswith("faster ")]
    assert code == 0 and len(fast) == 2 and fast[0].startswith("faster    q_proj (1.00 us against a floor of 84.0 us)")
    assert "faster than even the datasheet allows" in fast[0] and "the step" not in fast[0]
    assert fast[1].startswith("faster    the step (9.00 ms") and "not the datasheet's" in fast[1]
    # a --point is held to the datasheet too: 1.1e12 FLOPs in 18.5 us is 59 PFLOP/s, over 900x the T4's 65 TFLOP/s
    code, out, _ = run([tiny, "--measured-bw", "270GB/s", "--point", "mm:1.1e12:4e8:0.0000185"], capsys)
    assert "faster    point mm (" in out and "faster than even the datasheet allows" in unwrap(out)
    # the JSON's step says the same by the same rule (None without a measured step)
    for tpot, fast in (("15ms", False), ("1ms", True)):
        code, js, _ = run([tiny, "--tpot", tpot, "--format", "json"], capsys)
        assert code == 0 and json.loads(js)["step"]["faster_than_floor"] is fast
    code, js, _ = run([tiny, "--format", "json"], capsys)
    assert json.loads(js)["step"]["faster_than_floor"] is None
    times = tmp_path / "t.json"
    times.write_text('{"q_proj": 1e-9, "o_proj": 1e-3}')
    code, js, _ = run([tiny, "--kernel-times", str(times), "--format", "json"], capsys)
    ks = {k["name"]: k for k in json.loads(js)["kernels"]}
    # q_proj reads its 2048 x 2048 fp16 weight, 8.4 MB: 8,388,608 / 320e9 = 26.2 us at least, so 1 ns is faster than the
    # roof; o_proj's 1 ms is 38x that floor: flagged (above 3x), not faster
    assert ks["q_proj"]["faster_than_floor"] and not ks["q_proj"]["flagged"]
    assert ks["o_proj"]["flagged"] and not ks["o_proj"]["faster_than_floor"]
    code, out, _ = run([tiny, "--kernel-times", str(times)], capsys)
    assert "faster    q_proj (0.00100 us against a floor of 26.2 us)" in out and "faster than the datasheet allows" in out
    # kernel times adding up to more than the measured step: gate_proj and up_proj at 1 ms each, x22 layers = 44 ms
    # a step against a TPOT of 15 ms (over 1.1 x 15 = 16.5): said; against 50 ms, not
    times.write_text('{"gate_proj": 1e-3, "up_proj": 1e-3}')
    code, out, _ = run([tiny, "--kernel-times", str(times), "--tpot", "15ms"], capsys)
    assert code == 0 and "warning the measured kernels add up to 44.0 ms a step, more than the measured step (15.0 " \
                         "ms)" in " ".join(out.split())
    code, out, _ = run([tiny, "--kernel-times", str(times), "--tpot", "50ms"], capsys)
    assert code == 0 and "add up to" not in out
    # the formats that drop the table's prose keep its warnings: JSON's list, CSV's stderr (with a measured
    # bandwidth of 400 GB/s, 125 % of the T4's 320 GB/s datasheet, warned too); none where nothing warns
    warn = ["--kernel-times", str(times), "--tpot", "15ms", "--measured-bw", "400GB/s"]
    code, js, _ = run([tiny, *warn, "--format", "json"], capsys)
    said = json.loads(js)["warnings"]
    assert code == 0 and len(said) == 2 and said[0].startswith("the measured bandwidth, 400 GB/s, is 125% of T4's")
    assert said[1].startswith("the measured kernels add up to 44.0 ms a step, more than the measured step (15.0 ms)")
    code, csv_out, err = run([tiny, *warn, "--format", "csv"], capsys)
    assert code == 0 and err.splitlines() == [f"roofcalc: warning: {x}" for x in said] and "warning" not in csv_out
    code, js, _ = run([tiny, "--format", "json"], capsys)
    assert json.loads(js)["warnings"] == [] and json.loads(js)["ignored"] == []
    # a step faster than the datasheet's floors is in the list too, as the table's "faster" line
    code, js, _ = run([tiny, "--tpot", "15us", "--format", "json"], capsys)
    assert json.loads(js)["warnings"][0].startswith("the step (0.0150 ms against floors of")


def test_the_csv_step_row_carries_the_measured_figures_and_a_pipeline_its_whole_step(capsys):
    """The CSV's step row has the JSON step's achieved FLOP/s and error, and under --pp a 'pipeline step' row holds
    the whole step's time (the stages in turn), which the stage rows above it are not."""
    tiny = "TinyLlama/TinyLlama-1.1B"
    _, js, _ = run([tiny, "--tpot", "15ms", "--format", "json"], capsys)
    step = json.loads(js)["step"]
    _, out, _ = run([tiny, "--tpot", "15ms", "--format", "csv"], capsys)
    row = next(r for r in csv.DictReader(io.StringIO(out)) if r["name"] == "step total")
    assert float(row["achieved_flop_per_s"]) == pytest.approx(step["achieved_flop_per_s"])
    assert float(row["error"]) == pytest.approx(15e-3 / step["predicted_s"] - 1)
    _, js, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--pp", "2", "--format", "json"], capsys)
    doc = json.loads(js)
    _, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--pp", "2", "--format", "csv"], capsys)
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(out))}
    whole = float(rows["pipeline step"]["t_expected_s"])
    assert whole == pytest.approx(doc["parallel"]["step_s"]) and whole > float(
        rows["step total"]["t_expected_s"])


def test_what_a_step_cannot_be_is_said_and_what_cannot_be_read_is_refused(capsys, tmp_path):
    """A context past the config's positions is said; a sliding window's cache names the positions it holds; a
    profile whose pessimistic end is the faster one, and a --min-gain that may be a fraction, are refused."""
    code, out, _ = run(["gpt2", "--context", "2000"], capsys)
    # GPT-2's config: n_positions 1024 (its learned position table)
    assert code == 0 and "\nwarning   2,000 positions are past the config's max_position_embeddings (1,024)" in out
    assert out.count("max_position_embeddings") == 1  # one warning line, as a sweep's (not the workload line too)
    # and in the JSON's warnings and the CSV's stderr, as every warning of the table's
    code, out, _ = run(["gpt2", "--context", "2000", "--format", "json"], capsys)
    assert "2,000 positions are past the config's max_position_embeddings (1,024): the model was not built for " \
        "positions that far" in json.loads(out)["warnings"]
    code, out, err = run(["gpt2", "--context", "2000", "--format", "csv"], capsys)
    assert "roofcalc: warning: 2,000 positions are past the config's max_position_embeddings (1,024)" in err
    # a sweep, by its farthest context, and a whole request, by its last step's (1,000 + 100 - 1 positions)
    code, out, _ = run(["gpt2", "--context", "500,2000", "--batch", "1,2"], capsys)
    assert "warning   2,000 positions are past the config's max_position_embeddings (1,024)" in out
    code, out, _ = run(["gpt2", "--prompt", "1000", "--generate", "100", "--format", "json"], capsys)
    assert json.loads(out)["warnings"] == ["1,099 positions are past the config's max_position_embeddings (1,024): "
                                           "the model was not built for positions that far"]
    code, out, _ = run(["gpt2", "--prompt", "1000", "--generate", "25", "--format", "json"], capsys)
    assert json.loads(out)["warnings"] == []  # (its last step reads position 1,024, the last it was built for)
    code, out, _ = run(["mistral-7b-v0.1", "--context", "8192"], capsys)
    # Mistral-7B-v0.1's sliding_window 4096: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes x 4,096 = 537 MB
    assert code == 0 and "537 MB of KV cache (1 x 8,192 positions; a sliding window of 4,096 caps what its layers " \
        "hold)" in out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x", "bandwidth_bytes_per_s": 3e11, "peak_flop_per_s": {"fp16": 6e13},
                               "efficiency": {"gemv": {"expected": 0.5, "pessimistic": 0.9}}}))
    code, _, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(bad)], capsys)
    assert code == 2 and "efficiency.gemv.pessimistic (0.9) is above its expected (0.5)" in err
    bad.write_text(json.dumps({"name": "x", "bandwidth_bytes_per_s": 3e11, "peak_flop_per_s": {"fp16": 6e13},
                               "efficiency": {"fits": {"gemm.bf16": {"x": 1}}}}))
    code, _, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(bad)], capsys)
    assert code == 2 and "efficiency.fits has no key 'gemm.bf16'" in err
    # a measurement whose curves gave no form (a small GPU measures few points) claims no fitted kernel
    bad.write_text(json.dumps({"name": "x", "nominal": "H100", "bandwidth_bytes_per_s": 3e12,
                               "peak_flop_per_s": {"bf16": 7e14}, "efficiency": {"fits": {"gemm": {}, "attention": {}}}}))
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(bad), "--dtype", "bf16"], capsys)
    assert code == 0 and "no kernel form fitted on this GPU's own" in out and "kernels fitted on" not in out
    code, _, err = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1,4", "--min-gain", "0.05"], capsys)
    assert code == 2 and "this is 0.05% (not 5%)" in err
    code, _, err = run(["TinyLlama/TinyLlama-1.1B", "--min-gain", "abc"], capsys)
    assert code == 2 and "is not a percentage" in err
    from roofcalc.sources import load_config

    cfg = dict(load_config("TinyLlama/TinyLlama-1.1B")[0], torch_dtype="float8")  # a dtype no torch tensor has
    (tmp_path / "f8.json").write_text(json.dumps(cfg))
    code, out, _ = run([str(tmp_path / "f8.json")], capsys)
    assert code == 0 and "(default: the config's torch_dtype 'float8' is none PyTorch computes in)" in out
    t4 = tmp_path / "t4.json"
    t4.write_text(json.dumps({"name": "mine", "nominal": "T4", "bandwidth_bytes_per_s": 2.7e11,
                              "peak_flop_per_s": {"fp16": 5e13}}))
    code, _, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(t4), "--hw", "H100"], capsys)
    assert code == 2 and "nominal T4 disagree: its measurement is of a T4" in err
    assert run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(t4), "--hw", "t4"], capsys)[0] == 0
    code, _, err = run(["tinyllama", "--revision", "main"], capsys)  # an alias names no repository to revise
    assert code == 2 and "give its hub id (TinyLlama/TinyLlama-1.1B-Chat-v1.0 --revision main)" in err


def test_profile_refuses_a_model_it_cannot_read_before_importing_torch(tmp_path):
    """An unknown hub id fails as the main command does, without torch's seconds of import."""
    code = ("import sys\nfrom roofcalc.cli import main\nrc = main(['profile', 'nosuch/model'])\n"
            "print(rc, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)})
    assert out.stdout.split() == ["2", "False"] and "nosuch/model" in out.stderr


def test_an_option_that_changes_nothing_is_said_not_dropped(capsys):
    """A prefill's option on a decode step, a pipeline's without --pp, a kind of layer the model has not, a host
    cost its --impl does not pay, a group size of unquantized weights: accepted, each said on an 'ignored' line."""
    tiny = "TinyLlama/TinyLlama-1.1B"
    code, out, _ = run([tiny, "--micro-batches", "3", "--full-rectangle", "--experts", "all", "--mla", "absorbed",
                        "--launch-overhead", "50us", "--group-size", "128"], capsys)
    ignored = [line for line in out.splitlines() if line.startswith("ignored")]
    assert code == 0 and [line.split(":")[0] for line in ignored] == [
        "ignored   --micro-batches 3", "ignored   --full-rectangle", "ignored   --experts all", "ignored   --mla absorbed",
        "ignored   --launch-overhead 50us", "ignored   --group-size 128"]
    for args in ([tiny], [tiny, "--prompt", "512", "--full-rectangle", "--logits", "all"],
                 [tiny, "--weight-dtype", "int4", "--group-size", "64"], [tiny, "--impl", "fused", "--launch-overhead", "5us"],
                 ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--pp", "2", "--batch", "8", "--micro-batches", "2"],
                 [tiny, "--batch", "1,2", "--min-gain", "20%"], [tiny, "--weight-dtype", "int4", "--int4-kernel", "exllama"],
                 [tiny, "--record"]):
        code, out, _ = run(args, capsys)
        assert code == 0 and "\nignored" not in out, args
    # a sweep's threshold on one step, an int4 kernel for 16-bit weights, the table's record in JSON
    code, out, _ = run([tiny, "--min-gain", "20%", "--int4-kernel", "exllama"], capsys)
    assert code == 0 and [line.split(":")[0] for line in out.splitlines() if line.startswith("ignored")] == [
        "ignored   --min-gain 20%", "ignored   --int4-kernel exllama"]
    # a pipeline's report is its slowest stage on one micro-batch: a measured step is said, not compared
    code, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--pp", "2", "--batch", "8", "--tpot", "30ms"],
                       capsys)
    assert code == 0 and [line.split(":")[0] for line in out.splitlines() if line.startswith("ignored")] == [
        "ignored   --tpot 30ms"]
    # and read all the same: a bad one is refused, as on any other step
    code, _, err = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--pp", "2", "--batch", "8", "--tpot", "15"],
                       capsys)
    assert code == 2 and "--tpot '15' has no unit" in err
    # the way --ep ranks split attention, with no --ep (dp, the default, given; tp there is refused)
    code, out, _ = run([tiny, "--ep-attention", "dp"], capsys)
    assert code == 0 and [line for line in out.splitlines() if line.startswith("ignored")] == [
        "ignored   --ep-attention dp: how --ep ranks split attention; this step runs no --ep"]
    code, out, _ = run(["mixtral-8x7b", "--ep", "2", "--batch", "2", "--ep-attention", "dp"], capsys)
    assert code == 0 and "\nignored" not in out
    code, out, _ = run([tiny, "--record", "--format", "json"], capsys)
    assert json.loads(out)["ignored"] == ["--record: the table's (the JSON holds the nominal and measured figures it "
                                          "compares)"]
    # the CSV holds neither the record's figures nor the points: said on stderr, naming where they are
    code, out, err = run([tiny, "--record", "--point", "mm:1e12:1e8:0.02", "--format", "csv"], capsys)
    assert code == 0 and "bandwidth" not in out.splitlines()[0] and err.splitlines() == [
        "roofcalc: ignored: --record: the table's (the CSV holds the kernels; the JSON, --format json, the nominal and "
        "measured figures it compares)",
        "roofcalc: ignored: --point: the CSV holds the kernels and the step; the points are the JSON's (--format json: "
        "points[])"]


def test_a_comparison_of_gpu_counts_writes_data_in_csv_and_a_list_in_markdown(capsys):
    """The --tp list's CSV holds the JSON points' values in base units, each row naming its run (as a sweep's
    CSV), not the table's display strings; its Markdown header and verdicts are list items."""
    args = ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "1,2,4,8", "--batch", "64", "--context", "1000",
            "--impl", "cuda-graph"]
    _, js, _ = run(args + ["--format", "json"], capsys)
    points = json.loads(js)["tp_points"]
    _, out, _ = run(args + ["--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["tp"]) for r in rows] == [1, 2, 4, 8] and {r["model"] for r in rows} == {"meta-llama/Llama-2-70b-hf"}
    for r, p in zip(rows, points):
        assert float(r["tokens_per_s"]) == pytest.approx(p["tokens_per_s"]) and r["fits"] == str(p["fits"])
        assert int(r["memory_bytes_per_gpu"]) == p["memory_bytes_per_gpu"] and r["hardware"] == "H100-SXM"
        # each point's range, as the single step at that --tp gives it, and the compute dtype a sweep's CSV names
        assert r["compute_dtype"] == "fp16" and float(r["predicted_lower_s"]) == pytest.approx(p["predicted_lower_s"])
        assert p["predicted_lower_s"] < p["step_s"] < p["predicted_upper_s"]
    _, one, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "8", "--batch", "64", "--context", "1000",
                     "--impl", "cuda-graph", "--format", "json"], capsys)
    step = json.loads(one)["step"]
    assert (points[-1]["predicted_lower_s"], points[-1]["predicted_upper_s"]) == \
        (step["predicted_lower_s"], step["predicted_upper_s"])
    # a --pp comparison's whole step (the stages in turn) has no range: null, not a stage's
    _, pp, _ = run(["meta-llama/Llama-2-7b-hf", "--hw", "H100", "--pp", "1,2", "--format", "json"], capsys)
    pts = json.loads(pp)["pp_points"]
    assert pts[0]["predicted_upper_s"] > pts[0]["step_s"] and pts[1]["predicted_upper_s"] is None
    _, md, _ = run(args + ["--format", "markdown"], capsys)
    head, _, rest = md.partition("\n\n")
    assert all(line.startswith("- ") for line in head.splitlines())
    assert "\n- fits      the fewest GPUs" in md and "\n- scaling   " in md


def test_a_profile_that_warned_of_itself_is_said_in_the_main_job_and_its_page(capsys, tmp_path):
    """A --hw-file whose own measurement holds warnings (its trust) gets a warning line in the report, and the page
    carries the report's footer lines (that warning, the engine verdict) too."""
    pytest.importorskip("plotly")
    path = tmp_path / "me.json"
    path.write_text(json.dumps({"name": "mine", "nominal": "T4", "bandwidth_bytes_per_s": 2.7e11,
                                "peak_flop_per_s": {"fp16": 5e13}, "trust": {"warnings": ["load", "passes apart"]}}))
    page = tmp_path / "p.html"
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(path), "--html", str(page)], capsys)
    line = "warning   2 warnings in the --hw-file's trust: run `roofcalc measure --out` again on an idle machine"
    assert code == 0 and line in out
    text = page.read_text()
    assert html.escape(line) in text
    assert "engine    host-bound under hf" in out and "engine    host-bound under hf" in text
    # a request sweep has no batching verdicts: its page's Verdicts heading holds its engine line alone, and none
    # where no request is host-bound (no empty heading)
    run(["TinyLlama/TinyLlama-1.1B", "--prompt", "512", "--generate", "64", "--batch", "1,8", "--html", str(page)],
        capsys)
    verdicts = page.read_text().split("<h2>Verdicts</h2>")[1].split("</pre>")[0]
    line = verdicts.split(">")[-1].strip()
    assert line.startswith("engine    2 of 2 requests host-bound under hf: under --engine vllm (CUDA graphs) they "
                           "would take ") and "\n" not in line
    run(["TinyLlama/TinyLlama-1.1B", "--prompt", "512", "--generate", "64", "--batch", "1,8", "--engine", "vllm",
         "--html", str(page)], capsys)
    assert "<h2>Verdicts</h2>" not in page.read_text()


def test_the_library_says_what_it_takes(capsys):
    """roofline() takes a catalog name and (name, FLOPs, bytes, seconds) points; the grids refuse a Hardware for
    their Roof in one line; step_to_pandas refuses a sweep."""
    from roofcalc import RoofcalcError, Workload, analyze, load_shape
    from roofcalc.hardware import find_hardware
    from roofcalc.report import to_record
    from roofcalc.roofline import roofline
    from roofcalc.sweep import decode_grid, sweep

    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    r = roofline(analyze(shape, Workload.decode(1, 500)), "T4", points=[("mm", 1.374e11, 1.007e8, 2.75e-3)])
    assert r.hardware.name == "T4" and to_record(r)["points"][0]["name"] == "mm"
    with pytest.raises(RoofcalcError, match="roof must be a roofcalc.roofline.Roof"):
        decode_grid(shape, [1, 4], [512], find_hardware("T4"))
    res = sweep(shape, find_hardware("T4"), batches=[1, 4], contexts=[512])
    # with the sweep's own model a grid is the CLI's; without it, the floors alone
    g = decode_grid(shape, [1, 4], [512], res.roof, model=res.model)
    assert g.step_s[0, 0] == pytest.approx(res.grid.step_s[0, 0])
    assert decode_grid(shape, [1, 4], [512], res.roof).step_s[0, 0] == pytest.approx(res.grid.floor_s[0, 0])
    pd = pytest.importorskip("pandas")
    assert pd is not None
    from roofcalc import step_to_pandas

    with pytest.raises(RoofcalcError, match="step_to_pandas takes one step"):
        step_to_pandas(res)


def test_a_library_sweep_takes_its_sizes_as_the_command_line_does():
    """sweep()'s batches and contexts: each once, ascending (the CLI's -b 4,1,4 sweeps 1 and 4); one number is a
    list of one; a word is refused in one line, not a ValueError."""
    from roofcalc import RoofcalcError, load_shape
    from roofcalc.sweep import sweep

    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    sw = sweep(shape, "T4", batches=[4, 1, 4], contexts=[500, 100, 500])
    assert sw.grid.batches.tolist() == [1, 4] and sw.grid.contexts.tolist() == [100, 500]
    assert sweep(shape, "T4", batches=4, contexts=500).grid.batches.tolist() == [4]
    with pytest.raises(RoofcalcError, match="batch must be whole numbers, got 'a'"):
        sweep(shape, "T4", batches=["a"], contexts=[500])


def test_the_default_group_on_a_hidden_size_it_does_not_divide_is_said_a_what_if(capsys):
    """SmolLM2-135M's hidden size, 576 = 4 x 128 + 64, takes no group of 128: left out, the default 128 runs as a
    what-if (each row's last group 64 wide, 5 scales a row) and the header says so; given, 128 is refused as any
    group that does not divide it, and the message names a group that does (64: 576 = 9 x 64) and the default."""
    code, out, _ = run(["SmolLM2-135M", "--weight-dtype", "int4"], capsys)
    assert code == 0 and ("int4, group 128 by default; the hidden size 576 is no multiple of it, so each row's last "
                          "group holds 64") in unwrap(out)
    code, _, err = run(["SmolLM2-135M", "--weight-dtype", "int4", "--group-size", "128"], capsys)
    assert code == 2 and err.count("\n") == 1 and "(e.g. --group-size 64); leaving --group-size out takes 128 as a " \
        "what-if" in err
    code, _, err = run(["SmolLM2-135M", "--weight-dtype", "int4", "--group-size", "100"], capsys)
    assert code == 2 and err.rstrip().endswith("(e.g. --group-size 64)")
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--weight-dtype", "int4"], capsys)  # 2,048 = 16 x 128
    assert "(int4, group 128), KV" in unwrap(out)


def test_the_library_checks_a_group_size_given_as_the_command_line_does():
    """A group of quantized weights lies along a matmul's input: a group size given that does not divide the hidden
    size (2,048 for TinyLlama) is refused, as --group-size is; none given is the default group, 128 (2,048 =
    16 x 128), whose scales are those of group 128 given; a 16-bit step has no groups to check."""
    from roofcalc import RoofcalcError, Workload, analyze, load_shape
    from roofcalc.sweep import sweep

    shape = load_shape("TinyLlama/TinyLlama-1.1B")
    with pytest.raises(RoofcalcError, match="group size 100 does not divide the hidden size 2048"):
        analyze(shape, Workload.decode(1, 500, weight_dtype="int4", group_size=100))
    with pytest.raises(RoofcalcError, match="group size 100 does not divide"):
        sweep(shape, "T4", batches=[1, 2], contexts=[500], weight_dtype="int4", group_size=100)
    from roofcalc.parallel import Parallel, PipelineAnalyzer

    llama = load_shape("meta-llama/Llama-2-7b-hf")  # a pipeline's stages are counted apart from analyze
    with pytest.raises(RoofcalcError, match="group size 100 does not divide the hidden size 4096"):
        sweep(llama, "H100", batches=[2, 4], contexts=[100], analyzer=PipelineAnalyzer(llama, Parallel(pp=2)),
              weight_dtype="int4", group_size=100)
    default = analyze(shape, Workload.decode(1, 500, weight_dtype="int4"))
    given = analyze(shape, Workload.decode(1, 500, weight_dtype="int4", group_size=128))
    assert default.workload.weight_group == 128 and default.weight_storage_bytes == given.weight_storage_bytes
    assert analyze(shape, Workload.decode(1, 500, group_size=100)).workload.weight_group == 100  # fp16: unread


def test_on_a_cpu_a_kernels_eager_dispatch_is_part_of_the_least_it_takes(capsys, tmp_path):
    """A CPU's profiler times each eager op with its dispatch and the CPU has no fixed cost: a norm of 8 eager ops
    at 212 us is 8 x 20 us (the default host time per op) = 160 us of dispatch above its floor, not a problem;
    a GEMM 220x its floor is."""
    times = tmp_path / "t.csv"
    times.write_text("input_layernorm,0.000212\nq_proj,0.004\n")
    _, js, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "EPYC-9654", "--kernel-times", str(times), "--format", "json"],
                   capsys)
    ks = {k["name"]: k for k in json.loads(js)["kernels"]}
    assert ks["input_layernorm"]["launches"] == 8 and not ks["input_layernorm"]["flagged"]
    assert ks["q_proj"]["flagged"]
    _, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "EPYC-9654", "--kernel-times", str(times)], capsys)
    assert "above 3x its floor and its ops' dispatch" in out


def test_a_layout_past_one_node_says_its_collectives_cross_the_network(capsys):
    """The catalog's H100-SXM is an 8-GPU HGX node (gpus_per_node 8): --tp 16 spans two, and the header says so,
    single step and sweep alike, where each all-reduce row's hop is "network"; --tp 8 stays inside one node."""
    code, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100-SXM", "--tp", "16"], capsys)
    assert code == 0 and "16 GPUs span 2 nodes of 8: a collective across them runs over the network" in unwrap(out)
    code, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100-SXM", "--tp", "16", "--batch", "1,8"], capsys)
    assert code == 0 and "16 GPUs span 2 nodes of 8" in unwrap(out)
    code, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100-SXM", "--tp", "16", "--format", "json"], capsys)
    hops = {k["hop"] for k in json.loads(out)["kernels"] if k.get("kind") == "collective"}
    assert hops == {"network"}
    code, out, _ = run(["meta-llama/Llama-2-70b-hf", "--hw", "H100-SXM", "--tp", "8"], capsys)
    assert code == 0 and "span" not in unwrap(out)


def test_bad_flags_are_refused_before_the_model_is_read(capsys, monkeypatch):
    """A traced model takes seconds to read (torch, a trace); an unknown --hw, a size that is none, two
    parallel lists and a dtype roofcalc does not know are refused before it, each in one line."""
    import roofcalc.cli as cli

    def never(args):
        raise AssertionError("the model was read")

    monkeypatch.setattr(cli, "load_model", never)
    for flags, words in ((["--hw", "H9000"], "unknown hardware 'H9000'"), (["--tp", "0"], "--tp: 0 is not a size"),
                         (["--batch", "-4"], "--batch: -4 is negative"),
                         (["--tp", "1,2", "--ep", "2,4"], "give a list to one of --tp, --pp and --ep"),
                         (["--weight-dtype", "nonsense"], "unknown dtype 'nonsense'"),
                         (["--weight-dtype", "q4_k_m"], "mixes block formats by tensor")):
        code, out, err = run(["benchmarks/configs/published/openai--gpt-oss-120b.json", *flags], capsys)
        assert code == 2 and words in err and err.count("\n") == 1, (flags, err)


def test_unfused_attention_from_the_command_line(capsys):
    """--attention unfused: the header says so, the JSON workload carries it, the kernel table has
    attention_scores (TinyLlama, 32 heads, decode at context 500: 32 x 500 = 16,000 scores of 10 bytes each way,
    320,000 bytes a layer), --tp 2's rank moves half of it (its 16 heads), a decode sweep's grid agrees with its single
    steps (sweep.check_corners, at 1e-9), and a traced model refuses it in one line."""
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["workload"]["attention"] == "unfused"
    k = next(k for k in doc["kernels"] if k["name"] == "attention_scores")
    assert k["bytes"] == 320_000
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--tp", "2", "--hw", "H100-SXM",
                        "--format", "json"], capsys)
    assert code == 0 and next(k for k in json.loads(out)["kernels"] if k["name"] == "attention_scores")["bytes"] == \
        160_000
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused"], capsys)
    assert code == 0 and "attention unfused" in out and "\nattention_scores " in out
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--batch", "1..64",
                        "--context", "128..4096"], capsys)
    assert code == 0
    code, out, err = run(["benchmarks/configs/published/HuggingFaceTB--SmolLM3-3B.json", "--attention", "unfused"],
                         capsys)
    assert code == 2 and "--attention unfused is for hand-modelled families" in err and err.count("\n") == 1
    # a request and a sweep say it too: header, JSON workload and every point (so fused and unfused CSVs differ)
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--prompt", "512", "--generate", "64",
                        "--hw", "H100-SXM"], capsys)
    assert code == 0 and "attention unfused" in out and "(attention: unfused, by --attention)" in out
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--ubatch", "256", "--prompt",
                        "512,1024", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["workload"]["attention"] == "unfused" and doc["workload"]["ubatch"] == 256
    assert {p["attention"] for p in doc["points"]} == {"unfused"}
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--ubatch", "256"], capsys)
    assert code == 0 and "--ubatch 256: an unfused attention's" in out
    # an option that changes nothing is said in every format: JSON's own list, CSV's stderr
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--ubatch", "256", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["ignored"][0].startswith("--ubatch 256: an unfused attention's")
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--ubatch", "256", "--format", "csv"], capsys)
    assert code == 0 and "roofcalc: ignored: --ubatch 256" in err and "ignored" not in out
    # an unfused prefill's memory holds one layer's live score matrix: 32 heads x 32,768 x 32,768 fp32 values =
    # 137,438,953,472 bytes at once (no 80 GiB device holds it), 32 x 512 x 32,768 x 4 = 2,147,483,648 in
    # micro-batches of 512; TinyLlama's weights 2,200,096,768 and KV cache 22,528 x 32,768 = 738,197,504 beside them
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--prompt", "32768", "--hw",
                        "H100-SXM", "--format", "json"], capsys)
    step = json.loads(out)["step"]
    assert code == 0 and step["memory_bytes"] == 2_200_096_768 + 738_197_504 + 137_438_953_472 and not step["fits"]
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--ubatch", "512", "--prompt",
                        "32768,1024", "--hw", "H100-SXM", "--format", "json"], capsys)
    point = next(p for p in json.loads(out)["points"] if p["prompt"] == 32768)
    assert code == 0 and point["memory_bytes"] == 2_200_096_768 + 738_197_504 + 2_147_483_648 and point["fits"]
    assert point["ubatch"] == 512
    # under --engine llama.cpp its own micro-batch, 512, unless given; the JSON's engine names the unfused attention
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--engine", "llama.cpp", "--prompt",
                        "2048", "--hw", "RTX4090", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["workload"]["ubatch"] == 512 and doc["step"]["engine"]["attention"].startswith("unfused")
    # the header says which pairs it counted: each micro-batch's queries by every position up to its end
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--attention", "unfused", "--engine", "llama.cpp", "--prompt",
                        "2048", "--hw", "RTX4090"], capsys)
    assert "every pair of each micro-batch's score matrix (up to 512 queries each, by every position up to its " \
           "end)" in out
    # a GeForce card's GEMMs: the L40S's forms for their memory side, its own default compute side
    fits = doc["hardware"]["kernel_fits"]
    assert (fits["gpu"], fits["how"], fits["gemm"], fits["gemm_compute"]) == ("l40s", "nearest", True, "default")


def test_a_profile_of_no_catalog_kind_is_its_own_nominal_roof(tmp_path, capsys):
    """A CPU `roofcalc measure` found no catalog entry for writes no 'nominal': the main job takes the profile as its
    own nominal roof (as `roofcalc profile` does), not the default T4's datasheet, so the header, the roofs and
    JSON's memory are the profile's: its name, 100 % of nominal, and one memory figure (its 24 GB) throughout."""
    prof = tmp_path / "cpu.json"
    prof.write_text(json.dumps({"name": "some CPU (measured)", "kind": "cpu", "bandwidth_bytes_per_s": 2.86e10,
                                "peak_flop_per_s": {"fp32": 1.59e11}, "memory_bytes": 24e9,
                                "launch_overhead_s": 5e-7, "source": "roofcalc measure"}))
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["hardware"]["name"] == "some CPU (measured)"
    assert doc["hardware"]["memory_bytes"] == doc["step"]["capacity_bytes"] == 24e9
    assert doc["hardware"]["measured"]["bandwidth_ratio"] == 1.0
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--record"], capsys)
    assert "T4" not in out and "hardware  some CPU (measured), fp32 compute" in out
    # a figure faster than its floor on a profile with no datasheet: no datasheet is said to be beaten
    times = tmp_path / "fast.csv"
    times.write_text("name,us\nq_proj,1\n")
    code, fast, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--kernel-times", str(times)], capsys)
    assert code == 0 and "faster than this profile's own roof allows (it names no datasheet)" in fast
    assert "datasheet allows" not in fast
    # one roof, said once: not "100% of nominal" against itself, in the roof line or the record table
    assert "roof      measured ('some CPU (measured)') 28.6 GB/s, 159 GFLOP/s, ridge 5.6 FLOP/byte, its own " \
        "nominal" in unwrap(out) and "of nominal" not in out and "100%" not in out
    assert [line.split()[-2:] for line in out.splitlines() if line.startswith("bandwidth (GB/s)")] == [["none", "28.6"]]
    # a bandwidth over its own: no datasheet to be above, only the profile's figure replaced
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--measured-bw", "50GB/s"], capsys)
    assert code == 0 and "warning" not in out and "override  --measured-bw 50GB/s replaces" in out
    # a GPU profile named as its catalog entry (no 'nominal', --hw naming that entry) is compared with the entry's
    # datasheet all the same: 3 TB/s is 147 % of the A100-80GB's 2,039 GB/s, warned of in a step and in a sweep
    named = tmp_path / "a100.json"
    named.write_text(json.dumps({"name": "A100-80GB", "kind": "gpu", "bandwidth_bytes_per_s": 3e12,
                                 "peak_flop_per_s": {"fp16": 3e14, "bf16": 3e14}}))
    for extra in ([], ["--batch", "1,2"]):
        code, got, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(named), "--hw", "A100-80GB", *extra], capsys)
        assert code == 0 and "147% of A100-80GB's datasheet 2.04 TB/s" in unwrap(got)
    # ... and its share said of the profile's own figure, not of a nominal it does not have: 50 / 28.6 = 175 %
    assert "(175% of the profile's)" in unwrap(out) and "of nominal" not in out
    assert "ridge 5.6 FLOP/byte: the profile's own (it names no datasheet in 'nominal')" in unwrap(out)
    # a GPU's profile with neither is compared with the default T4, as the README says, and takes an engine
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps({"name": "my GPU", "bandwidth_bytes_per_s": 3e11, "peak_flop_per_s": {"fp16": 6e13}}))
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(gpu), "--engine", "vllm"], capsys)
    assert code == 0 and "hardware  T4, fp16 compute" in out


def test_a_small_roof_is_printed_with_the_digits_it_needs(tmp_path, capsys):
    """A CPU's measured roof against an H100's datasheet: 28.6 GB/s is 0.85 % of 3.35 TB/s and 159 GFLOP/s 0.24 %
    of the H100's 67 TFLOP/s fp32; its ridge 159e9 / 28.6e9 = 5.56 FLOP/byte. Shares under 1 % and ridges under 10
    keep a significant digit ("0.9%", "0.2%", "5.6"), where whole numbers read "1%", "0%" and "6"."""
    from roofcalc.units import ridge, share

    assert (ridge(185.2), ridge(5.5569), share(0.84), share(0.0085), share(0.0024), share(0.0)) == \
        ("185", "5.6", "84%", "0.9%", "0.2%", "0%")
    prof = tmp_path / "cpu.json"
    prof.write_text(json.dumps({"name": "some CPU", "kind": "gpu", "bandwidth_bytes_per_s": 2.86e10,
                                "peak_flop_per_s": {"fp32": 1.59e11}, "nominal": "H100"}))
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof)], capsys)
    assert code == 0
    assert "28.6 GB/s (0.9% of nominal), 159 GFLOP/s (0.2% of nominal), ridge 5.6 FLOP/byte" in " ".join(out.split())


def test_a_profile_of_one_kind_is_refused_against_a_datasheet_of_another(tmp_path, capsys):
    """A CPU's measured roof against an H100's datasheet (--hw, or the profile's own 'nominal') says nothing: one
    line, exit 2; against a CPU entry it runs."""
    prof = tmp_path / "cpu.json"
    doc = {"name": "some CPU", "kind": "cpu", "bandwidth_bytes_per_s": 2.86e10, "peak_flop_per_s": {"fp32": 1.59e11}}
    prof.write_text(json.dumps(doc))
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--hw", "H100"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--hw H100 is a gpu and the profile {prof} measured a cpu" in err
    prof.write_text(json.dumps(dict(doc, nominal="H100")))
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof)], capsys)
    assert code == 2 and "the profile's nominal H100-SXM is a gpu" in err and "as its 'nominal'" in err
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--hw", "EPYC-9654"], capsys)
    assert code == 2  # its nominal (H100) and --hw disagree
    prof.write_text(json.dumps(doc))
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--hw", "EPYC-9654"], capsys)
    assert code == 0 and "hardware  EPYC-9654" in out


def test_a_measured_roof_above_its_datasheet_or_over_a_profile_is_said(tmp_path, capsys):
    """500 GB/s on a T4 (320 GB/s on its datasheet) is 156 %: a figure above the datasheet is another device's or
    a cache's, and the report says so under the table; a --measured-bw over a profile's own bandwidth replaces it,
    and the report says that too (the roof line names the profile)."""
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--measured-bw", "500GB/s"], capsys)
    assert code == 0
    assert ("warning   the measured bandwidth, 500 GB/s, is 156% of T4's datasheet 320 GB/s: a figure above the "
            "datasheet is another device's or a cache's; check it") in out
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s"], capsys)
    assert code == 0 and "warning" not in out and "override" not in out
    # 2 GB/s is 2 / 320 = 0.6 % of the datasheet: under 1 %, said too; 25.8 B/s (GB/s written in base units) is
    # under any real bandwidth (1 kB/s, inputs.PLAUSIBLE): refused in one line
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--measured-bw", "2GB/s"], capsys)
    assert code == 0 and " ".join(out.split()).count("warning the measured bandwidth, 2 GB/s, is 0.6% of ") == 1
    assert "a figure that low is in the wrong unit (GB/s or TFLOP/s written in base units?)" in " ".join(out.split())
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--measured-bw", "25.8B/s"], capsys)
    assert code == 2 and out == "" and err == ("roofcalc: error: --measured-bw '25.8B/s' is under any real bandwidth "
                                               "(1000 B/s to 1e+15 B/s): check its unit\n")
    prof = tmp_path / "t4.json"
    prof.write_text(json.dumps({"name": "my T4", "bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13},
                                "nominal": "T4"}))
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof), "--measured-bw", "100GB/s"], capsys)
    assert code == 0 and "measured ('my T4') 100 GB/s" in out
    assert "override  --measured-bw 100GB/s replaces the measured bandwidth (270 GB/s) of the profile 'my T4'" in out


def test_a_profiles_misspelt_key_and_unknown_nominal_are_refused_by_name(tmp_path, capsys):
    """A key a character off one roofcalc reads would be skipped unread (here the bandwidth was also given, so the
    table would look right): refused with the key it is near; a key of the user's own, far from every one, is
    left alone. An unknown 'nominal' names the file and the key, with or without a near name."""
    base = {"name": "x", "bandwidth_bytes_per_s": 3e11, "peak_flop_per_s": {"fp16": 6e13}, "my_note": "lab box"}
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(dict(base, bandwith_bytes_per_s=3e11)))
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof)], capsys)
    assert code == 2 and err == (f"roofcalc: error: {prof}: 'bandwith_bytes_per_s' is not a key roofcalc reads "
                                 f"(did you mean 'bandwidth_bytes_per_s'?)\n")
    # two neighbours swapped is one edit too: memroy_bytes would leave the memory at the default, unread
    prof.write_text(json.dumps(dict(base, memroy_bytes=8e10)))
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof)], capsys)
    assert code == 2 and "'memroy_bytes' is not a key roofcalc reads (did you mean 'memory_bytes'?)" in err
    for nominal, near in (("T5", " (did you mean T4?)"), ("Zorg", "")):
        prof.write_text(json.dumps(dict(base, nominal=nominal)))
        code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof)], capsys)
        assert code == 2 and err.startswith(f"roofcalc: error: the profile {prof}'s nominal: unknown hardware "
                                            f"'{nominal}'{near}; known: T4, ")
    prof.write_text(json.dumps(base))
    assert run(["TinyLlama/TinyLlama-1.1B", "--hw-file", str(prof)], capsys)[0] == 0


def test_json_says_how_far_batching_reaches_as_the_text_does(capsys):
    """The worked example on its measured roof (270 GB/s, 50 TFLOP/s: ridge 185): the KV cache keeps the AI below
    the ridge at this context, so batching raises the attainable FLOP/s to the AI's limit over the step's AI at
    most, the text's figure; JSON's batching_reach is that figure, and batching_headroom the ridge's (ridge / AI)."""
    args = ["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s", "--measured-flops", "50TFLOP/s"]
    code, out, _ = run(args + ["--format", "json"], capsys)
    st = json.loads(out)["step"]
    assert st["batching_headroom"] == pytest.approx(50e12 / 270e9 / st["intensity"])
    assert 1 < st["batching_reach"] < st["batching_headroom"]
    code, out, _ = run(args + ["--tpot", "15ms"], capsys)  # (the distances are said beside a measured step)
    assert f"batching can raise the attainable FLOP/s to {st['batching_reach']:.3g}x this step's at most" in out
    # a prefill (here right of the H100's ridge) says what longer prompts do, not batching's reach: null
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "H100", "--prompt", "8192", "--format", "json"], capsys)
    st = json.loads(out)["step"]
    assert st["intensity"] > 989e12 / 3.35e12 and st["batching_reach"] is None


def test_a_range_end_its_steps_do_not_reach_is_said(capsys):
    """'1..6' doubles 1 to 4 and '512..4000:512' steps to 3,584 (512 + 6 x 512): the sweep ends short of what was
    written, and an 'ignored' line says where; a range that lands on its end ('1..8') says nothing."""
    from roofcalc.inputs import parse_sizes, unreached_ends

    assert parse_sizes("1..6") == (1, 2, 4) and parse_sizes("512..4000:512")[-1] == 3584
    assert unreached_ends("1..8,16") == [] and unreached_ends("3..96") == [] and unreached_ends("1..6,6") == []
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--batch", "1..6", "--context", "512..4000:512"], capsys)
    assert code == 0
    assert "ignored --batch 1..6: 6 is not reached by 1 doubled; the sweep ends at 4" in " ".join(out.split())
    assert ("ignored --context 512..4000:512: 4,000 is not reached by a step of 512 from 512; the sweep ends at "
            "3,584") in " ".join(out.split())


def test_a_checkpoint_group_that_does_not_divide_the_hidden_size_is_refused(tmp_path, capsys):
    """A quantization_config's group_size is refused as --group-size is where it does not divide the hidden size
    (TinyLlama: 2,048; 100 does not divide it, 128 does): a group's weights lie along a matmul's input."""
    from roofcalc.sources import catalog

    cfg = next(e for e in catalog() if e.hub_id == "TinyLlama/TinyLlama-1.1B-Chat-v1.0").config
    for group, code in ((100, 2), (128, 0)):
        path = tmp_path / f"g{group}" / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps({**cfg, "quantization_config": {"quant_method": "awq", "bits": 4, "version": "gemm",
                                                                   "group_size": group, "zero_point": True}}))
        got, out, err = run([str(path)], capsys)
        assert got == code, err
        if code:
            assert out == "" and err.count("\n") == 1 and \
                "its quantization_config's group_size 100 does not divide the hidden size 2048" in err


def test_a_figure_slow_enough_to_be_a_unit_read_wrong_is_said(capsys, tmp_path):
    """A kernel time 300x or more its expected time, a step 300x its prediction, a --point 300x its floor and a 10 us
    launch: a bare number meant in microseconds read as seconds (a million times), or ms as s (a thousand).
    TinyLlama's q_proj on the T4 expects 26.2 us (8,388,608 bytes / 320 GB/s, above its fixed cost): 31 read as
    seconds is over a million times that. JSON's warnings carry them too; a small kernel timed right as a point
    (a residual add, 12,288 bytes: 38 ns on the T4, 2.5 us measured) is not taken for one."""
    tiny = "TinyLlama/TinyLlama-1.1B"
    times = tmp_path / "t.csv"
    times.write_text("q_proj,31\n")
    code, out, _ = run([tiny, "--kernel-times", str(times)], capsys)
    assert code == 0 and "warning   q_proj 31,000,000 us, " in out and "check the kernel times' unit" in out
    code, js, _ = run([tiny, "--kernel-times", str(times), "--tpot", "17s", "--point", "mm:1.1e12:4e8:18.5",
                       "--point", "residual:2048:12288:2.5us", "-f", "json"], capsys)
    warned = json.loads(js)["warnings"]
    assert any("check --tpot's unit" in w for w in warned) and any(w.startswith("point mm, 18,500 ms, is ")
                                                                   for w in warned)
    assert not any("residual" in w for w in warned)
    # the CSV leaves the points out (said ignored), and so their warnings
    code, _, err = run([tiny, "--point", "mm:1.1e12:4e8:18.5", "-f", "csv"], capsys)
    assert code == 0 and "ignored: --point" in err and "point mm," not in err
    # 31 us read right, a 17 ms step (2.6x its 6.6 ms floors) and an 18.5 ms point: no such warning
    times.write_text("name,us\nq_proj,31\n")
    code, out, _ = run([tiny, "--kernel-times", str(times), "--tpot", "17ms", "--point", "mm:1.1e12:4e8:0.0185"],
                       capsys)
    assert code == 0 and "unit" not in " ".join(line for line in out.splitlines() if line.startswith("warning"))


def test_a_command_mistyped_is_named_not_read_as_a_model(capsys):
    """A first word close to a command's name that is no file or catalog name ('mesure', 'profil tinyllama') is
    refused in one line naming the command; a catalog name stays a model."""
    for argv, command in ((["mesure"], "measure"), (["profil", "tinyllama"], "profile"), (["hardwre"], "hardware")):
        code, out, err = run(argv, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1, argv
        assert f"'{argv[0]}' is not a command, a file or a catalog name: did you mean 'roofcalc {command}'?" in err
    assert run(["gpt2"], capsys)[0] == 0


def test_a_sweep_says_when_every_batch_its_verdicts_try_fits(capsys):
    """Where memory holds every batch of the verdicts' ladder (its top, largest_batch_tried), the memory verdict
    says so, not that its top is the largest that fits: Mixtral over 8 H100s at a context of 2 (about 11.7 GB of
    weights a rank, and 2 positions of KV a sequence)."""
    args = ["mixtral-8x7b", "--hw", "H100", "--ep", "8", "--ep-attention", "tp", "--batch", "4,8", "--context", "2"]
    code, js, _ = run([*args, "--format", "json"], capsys)
    v = json.loads(js)["verdicts"][0]
    assert code == 0 and v["max_batch"] == v["largest_batch_tried"]
    code, out, _ = run(args, capsys)
    assert f"every batch up to {v['max_batch']:,} fits in 80 GiB" in unwrap(out) and "the largest batch" not in out


def test_json_writes_every_count_of_bytes_as_an_int(capsys):
    """The H100's 80 GiB (85,899,345,920 bytes, read from a size in GiB as a float) is an int in JSON wherever it is
    written, as every other count of bytes is (step.memory_bytes)."""
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "H100", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["hardware"]["memory_bytes"] == doc["step"]["capacity_bytes"] == 80 * 2 ** 30
    assert all(type(x) is int for x in (doc["hardware"]["memory_bytes"], doc["step"]["capacity_bytes"],
                                        doc["step"]["memory_bytes"]))
    code, out, _ = run(["TinyLlama/TinyLlama-1.1B", "--hw", "H100", "--batch", "1,2", "--format", "json"], capsys)
    doc = json.loads(out)
    assert type(doc["hardware"]["capacity_bytes"]) is int and type(doc["verdicts"][0]["capacity_bytes"]) is int


def test_format_md_is_markdown(capsys):
    """`--format md` (the extension's name) is the markdown report, byte for byte."""
    assert run(["TinyLlama/TinyLlama-1.1B", "--format", "md"], capsys)[1] == \
        run(["TinyLlama/TinyLlama-1.1B", "--format", "markdown"], capsys)[1]
