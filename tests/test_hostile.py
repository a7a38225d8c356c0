"""Hostile and odd input on every surface the main job reads: each ends in exit 0 with output, or exit 2
with exactly one line on stderr; never a traceback, a hang or a second line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from roofcalc.cli import main

M = "TinyLlama/TinyLlama-1.1B"

ARGS = [  # command lines (model first unless the case is about it)
    [M, "--batch", "²"], [M, "--batch", "١٢"], [M, "--batch", ""], [M, "--batch", "0"], [M, "--batch", "-3"],
    [M, "--batch", "1e3"], [M, "--batch", "9" * 5000], [M, "--batch", "1..0"], [M, "--batch", "1,,2"],
    [M, "--context", "99999999999"], [M, "--prompt", "0"], [M, "--generate", "5"], [M, "--generate", "0"],
    [M, "--dtype", ""], [M, "--dtype", "fp7"], [M, "--weight-dtype", ""], [M, "--kv-dtype", "int4"],
    [M, "--hw", ""], [M, "--hw", "A100\n"], [M, "--hw", "nope"],
    [M, "--measured-bw", ""], [M, "--measured-bw", "1e999"], [M, "--measured-bw", "inf"], [M, "--measured-bw", "nan"],
    [M, "--measured-bw", "270 GB/s"], [M, "--measured-bw", "-270GB/s"], [M, "--measured-bw", "２７０GB/s"],
    [M, "--measured-flops", "1e999TFLOP/s"], [M, "--tpot", "1e999"], [M, "--tpot", "0ms"], [M, "--tpot", "15 parsecs"],
    [M, "--launch-overhead", "-5us"], [M, "--host-overhead", "inf"], [M, "--memory", "1e999"], [M, "--memory", ""],
    [M, "--memory", "80GiB"], [M, "--min-gain", "200%"], [M, "--point", "x:1:2"], [M, "--point", "x:inf:1:1"],
    [M, "--point", ":1:1:1"], [M, "--plot", "/nonexistent/x.png"], [M, "--plot", "x.pdf"],
    [M, "--tp", "3"], [M, "--tpo", "4ms"], [M, "--batc", "2"],  # --tp 3 does not divide; no abbreviations
    [M, "--impl", "jax"], [M, "--format", "xml"], [M, "--experts", "some"],
    [""], ["   "], ["\n"], ["a" * 5000], ["org/na--me"], ["org/name."], ["org/name\n"], ["/etc"], ["/dev/null"],
    ["./no/such/config.json"], ["../../x"], ["~nobody/x.json"],
    ["--version"], ["models", "--x"], ["hardware", "extra"], ["measure", "--size", ""], ["measure", "--size", "1e999"],
    ["measure", "--dtype", "fp8"], ["measure", "--repeats", "0"], ["profile", M, "--batch", "²"],
]


def _assert_clean(code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err
    assert code in (0, 2), (code, err)
    if code == 2:
        assert out == "" and err.count("\n") == 1 and err.startswith("roofcalc: error: "), err
    else:
        assert out.strip()


@pytest.mark.parametrize("args", ARGS, ids=lambda a: " ".join(a)[:40].encode("unicode_escape").decode())
def test_hostile_command_lines(args, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    try:
        code = main(list(args))
    except SystemExit as exc:  # --version exits through argparse with its one line
        code = exc.code
    out, err = capsys.readouterr()
    _assert_clean(code, out, err)


CONFIGS = [  # config.json documents
    '{"model_type": "llama", "hidden_act": []}', '{"model_type": "llama", "hidden_act": {}}',
    '{"model_type": "llama", "layer_types": [[1]]}', "[" * 100_000 + "]" * 100_000, '{"x": ' + "9" * 5000 + "}",
    '{"model_type": "llama", "hidden_size": NaN}', '{"model_type": "llama", "hidden_size": Infinity}', "\ufeff{}",
    "", "{", "null", "[]", '"llama"', '{"model_type": null}', '{"model_type": ["llama"]}',
    '{"model_type": "llama", "hidden_size": "2048"}', '{"model_type": "llama", "hidden_size": true}',
    '{"model_type": "llama", "hidden_size": 2048.5}', '{"model_type": "llama", "num_hidden_layers": 0}',
    '{"model_type": "llama", "num_attention_heads": 3, "hidden_size": 64}',
    '{"model_type": "mixtral", "num_local_experts": 8}',
    # declared weight formats and a multimodal text_config, malformed
    *(json.dumps({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
                  "intermediate_size": 512, "vocab_size": 1000, "quantization_config": q}) for q in (
        {"quant_method": "fbgemm_fp8", "modules_to_not_convert": 5},
        {"quant_method": "fbgemm_fp8", "modules_to_not_convert": [[1, 2]]},
        {"quant_method": "bitnet", "quantization_mode": ["offline"]},
        {"quant_method": "bitsandbytes", "load_in_4bit": "yes"},
        {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": [1]})),
    '{"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": "big"}}',
    '{"model_type": "llava", "text_config": {"model_type": "deepseek_v3", "vocab_size": 1000000000}}',
    '{"model_type": "llava", "text_config": {"model_type": "gpt2"}}',
]


@pytest.mark.parametrize("doc", CONFIGS, ids=lambda d: d[:30].encode("unicode_escape").decode())
def test_hostile_configs(doc, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(doc, encoding="utf-8")
    code = main([str(path)])
    out, err = capsys.readouterr()
    _assert_clean(code, out, err)


SMALL = ('"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8, '
         '"intermediate_size": 512, "vocab_size": 1000')


@pytest.mark.parametrize("extra", ['"time_step_limit": [0.0, Infinity]', '"unused": NaN', '"unused": -Infinity'])
def test_config_non_finite_numbers_in_unused_keys_are_read(extra, tmp_path, capsys):
    """Python's json and transformers read NaN and Infinity (Nemotron-H-56B's config.json writes
    "time_step_limit": [0.0, Infinity]): a config holding one in a key roofcalc never reads runs."""
    path = tmp_path / "config.json"
    path.write_text("{" + SMALL + ", " + extra + "}", encoding="utf-8")
    code = main([str(path)])
    out, err = capsys.readouterr()
    assert code == 0 and err == "" and "L=2 layers, D=256" in out


@pytest.mark.parametrize("key, value, shown", [("hidden_size", "Infinity", "inf"), ("vocab_size", "NaN", "nan"),
                                               ("head_dim", "-Infinity", "-inf"),
                                               ("partial_rotary_factor", "NaN", "nan")])
def test_config_non_finite_sizes_are_refused(key, value, shown, tmp_path, capsys):
    """A key roofcalc reads as a size (or a fraction of one) refuses NaN and Infinity in one line, naming it."""
    doc = json.loads("{" + SMALL + "}")
    doc.pop(key, None)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc)[:-1] + f', "{key}": {value}}}', encoding="utf-8")
    code = main([str(path)])
    out, err = capsys.readouterr()
    _assert_clean(code, out, err)
    assert code == 2 and f"'{key}'" in err and shown in err


PROFILES = [
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "launch_overhead_s": "5us"},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "launch_overhead_s": None},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "launch_overhead_s": [1]},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "launch_overhead_s": True},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "nominal": 4},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "aliases": "t4"},
    {"bandwidth_bytes_per_s": "2.7e11", "peak_flop_per_s": {"fp16": 5e13}},
    {"bandwidth_bytes_per_s": True, "peak_flop_per_s": {"fp16": 5e13}},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "kind": "abacus"},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "efficiency": {"gemv": 0.7}},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "efficiency": {"gemv": {"expected": 7}}},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "efficiency": {"curves": {"matmul": [[1]]}}},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "schema_version": "2"},
    {"bandwidth_bytes_per_s": 2.7e11, "peak_flop_per_s": {"fp16": 5e13}, "name": "my T4\nsecond line"},
]


@pytest.mark.parametrize("doc", PROFILES, ids=lambda d: json.dumps(d)[60:100])
def test_hostile_hardware_profiles(doc, tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    code = main([M, "--hw-file", str(path)])
    out, err = capsys.readouterr()
    _assert_clean(code, out, err)
    path.write_text('{"bandwidth_bytes_per_s": NaN, "peak_flop_per_s": {"fp16": Infinity}}')
    code = main([M, "--hw-file", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and "NaN" in err
    _assert_clean(code, out, err)


KERNEL_TIMES = ["q_proj,inf\n", "q_proj,nan\n", "q_proj,-1\n", "q_proj\n", '{"q_proj": "fast"}', '{"q_proj": true}',
                "[1, 2]", '{"q_proj": 1e999}', '{"q_proj": NaN}', b"\xff\xfe\x00q_proj,1\n", "nope,1e-5\n", "q_proj,1e-5\nq_proj\n"]


@pytest.mark.parametrize("doc", KERNEL_TIMES, ids=lambda d: str(d)[:20].encode("unicode_escape").decode())
def test_hostile_kernel_times(doc, tmp_path, capsys):
    path = tmp_path / "t.csv"
    (path.write_bytes if isinstance(doc, bytes) else path.write_text)(doc)
    code = main([M, "--kernel-times", str(path)])
    out, err = capsys.readouterr()
    _assert_clean(code, out, err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_pipes_devices_and_loops_are_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for args in ([M, "--kernel-times", str(fifo)], [M, "--hw-file", str(fifo)], [M, "--kernel-times", "/dev/zero"],
                 [M, "--hw-file", "/dev/zero"], [str(fifo)], [str(loop)], [M, "--hw-file", str(loop)]):
        r = subprocess.run([sys.executable, "-m", "roofcalc", *args], capture_output=True, text=True, timeout=60)
        _assert_clean(r.returncode, r.stdout, r.stderr)
        assert r.returncode == 2
        assert "no such file" not in r.stderr  # each is named for what it is
        assert ("symbolic links" if args[-1].endswith("loop") else "not a regular file") in r.stderr, r.stderr


def test_stdout_closed_or_full_is_one_line():
    for shell in ("{exe} -m roofcalc {m} >&-", "{exe} -m roofcalc {m} > /dev/full"):
        r = subprocess.run(shell.format(exe=sys.executable, m=M), shell=True, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot write the output" in r.stderr, r.stderr


def test_an_empty_value_is_refused_not_read_as_the_default(capsys):
    for args in ([M, "--dtype", ""], [M, "--hw", ""], [M, "--measured-bw", ""], [M, "--memory", ""],
                 ["measure", "--size", ""], ["measure", "--dtype", ""]):
        assert main(args) == 2, args
        out, err = capsys.readouterr()
        _assert_clean(2, out, err)


TRACED = [  # configs of types without a hand model: they go to the traced backend (with torch installed)
    '{"model_type": "starcoder2", "hidden_size": 256, "num_hidden_layers": 100000, "num_attention_heads": 8, '
    '"intermediate_size": 512, "vocab_size": 1000}',
    '{"model_type": "starcoder2", "hidden_size": 1048576, "num_hidden_layers": 500, "num_attention_heads": 8, '
    '"intermediate_size": 1048576, "vocab_size": 1000}',
    '{"model_type": "starcoder2", "hidden_size": "x"}', '{"model_type": "starcoder2", "hidden_size": 250}',
    '{"model_type": "cohere", "text_config": []}', '{"model_type": "starcoder2", "rope_parameters": 7}',
    '{"model_type": "gpt_oss", "num_local_experts": 0}', '{"model_type": "internlm2"}', '{"model_type": "llava"}',
    '{"model_type": "bert", "vocab_size": -1}', '{"model_type": "starcoder2", "hidden_act": "nope"}',
]


@pytest.mark.parametrize("doc", TRACED, ids=lambda d: d[:40])
def test_hostile_configs_of_traced_types(doc, tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("ROOFCALC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(doc, encoding="utf-8")
    code = main([str(path)])
    out, err = capsys.readouterr()
    _assert_clean(code, out, err)
