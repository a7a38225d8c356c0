"""--pp for a traced model: each stage cut from the trace by the layer each kernel ran in.

Two oracles. The hand model's stage (roofcalc.parallel.stage_kernels, held to hand arithmetic in
tests/test_parallel.py): the same config traced and cut must give its projections, collectives, send,
cache write, weights, parameters and memory. And the whole trace: the stages together run every
kernel of the whole step once, and hold every parameter and every byte of cache once (a tied lm_head's
copy of the table aside)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from roofcalc import Workload, shape_from_config  # noqa: E402
from roofcalc.calculator import DTYPES, analyze  # noqa: E402
from roofcalc.cli import main  # noqa: E402
from roofcalc.parallel import Parallel, StageAnalysis, stage_kernels, stage_layers  # noqa: E402
from roofcalc.trace import hf_config, trace  # noqa: E402
from roofcalc.trace.pipeline import TracedStages  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_parallel_traced import DENSE, MOE, TRACED_NAMES, _kernel, collectives_of, experts_cost  # noqa: E402
from test_trace import config  # noqa: E402

TABLE = 1000 * 256  # the configs' vocabulary x hidden size: a tied lm_head's copy on the last stage


def _stages(cfg: dict, wl: Workload, par: Parallel, micro_batches: int):
    micro = replace(wl, batch=wl.batch // micro_batches)
    whole = trace(cfg, "t", wl, use_cache=False)
    st = TracedStages(cfg, "t", None, "ideal", hf_config(cfg, "t")[0])
    return whole, [st.stage(micro, par, s, micro_batches=micro_batches, batch=wl.batch, full=whole)
                   for s in range(par.pp)]


@pytest.mark.parametrize("name", ["llama", "llama-tied", "qwen3", "gemma"])
@pytest.mark.parametrize("tp", [1, 2])
def test_a_traced_stage_equals_the_hand_models_stage(name, tp):
    """Three layers on two stages (layers 0-1, then 2), 4 sequences in 2 micro-batches: each stage's
    projections, collectives (the send to the next stage's same rank among them), cache write and
    attention move the hand stage's bytes and FLOPs; its parameters, weights, KV cache and memory (the
    cache of all 4 sequences) are the hand stage's. A tied lm_head holds the table on the last stage."""
    cfg = dict(DENSE[name], num_hidden_layers=3)
    wl = Workload.decode(4, 17, cache_update="in-place")
    par = Parallel(tp=tp, pp=2)
    shape = shape_from_config(cfg, "t")
    micro = replace(wl, batch=2)
    whole, stages = _stages(cfg, wl, par, 2)
    for s, traced in enumerate(stages):
        sub, kernels = stage_kernels(shape, micro, 2, s, tp)
        hand = StageAnalysis(sub, micro, tuple(kernels), parallel=par, full=analyze(shape, wl), stage=s,
                             layers=stage_layers(3, 2)[s], micro_batches=2, batch=4)
        compared = 0
        for h in hand.kernels:
            if h.kind in ("matmul", "collective") or h.name == "kv_cache_write":
                t = _kernel(traced, TRACED_NAMES.get(h.name, h.name))
                assert (t.cost.bytes, t.cost.matmul_flops, t.count, t.params) == \
                    (h.cost.bytes, h.cost.matmul_flops, h.count, h.params), (s, h.name)
                assert (t.message_bytes, t.link_bytes, t.group, t.ranks) == \
                    (h.message_bytes, h.link_bytes, h.group, h.ranks), (s, h.name)
                compared += 1
        assert compared >= (6 if s else 8)
        assert sum(k.kind == "collective" for k in traced.kernels) == sum(k.kind == "collective" for k in hand.kernels)
        att, hatt = _kernel(traced, "attention").cost, hand.kernel("attention").cost
        assert (att.kv_read_bytes, att.matmul_flops) == (hatt.kv_read_bytes, hatt.matmul_flops)
        assert (traced.params, traced.weight_storage_bytes, traced.kv_bytes_per_token, traced.memory_bytes,
                traced.cached_sequences) == (hand.params, hand.weight_storage_bytes, hand.kv_bytes_per_token,
                                             hand.memory_bytes, hand.cached_sequences), s
        assert (traced.stage, traced.layers, traced.shape.n_layers) == (s, hand.layers, hand.shape.n_layers)
    assert stages[0].full.params == whole.params == analyze(shape, wl).params


def test_a_tied_hand_stage_holds_a_copy_of_the_table():
    """Llama tied, 3 layers at --pp 2: the last stage holds layer 2 (q and o 256 x 256, k and v 256 x 64,
    the MLP 3 x 256 x 512, two norms of 256: 557,568), the final norm (256) and lm_head's copy of the
    1000 x 256 table; the first stage layers 0-1 and the table it gathers from."""
    cfg = dict(DENSE["llama-tied"], num_hidden_layers=3)
    shape, wl = shape_from_config(cfg, "t"), Workload.decode(1, 17)
    layer = 2 * 256 * 256 + 2 * 256 * 64 + 3 * 256 * 512 + 2 * 256
    first, last = (sum(k.params * k.count for k in stage_kernels(shape, wl, 2, s)[1]) for s in range(2))
    assert (first, last) == (TABLE + 2 * layer, layer + 256 + TABLE)
    assert analyze(shape, wl).params == TABLE + 3 * layer + 256  # the model itself holds the table once


# traced-only architectures: Mamba-2 hybrids (recurrent states in the cache), routed experts, short
# convolutions, sliding and full layers of different heads, per-layer inputs (tests/test_trace.py's configs)
PARTITIONED = ["bamba", "granitemoehybrid", "falcon_h1", "lfm2", "qwen2_moe", "gpt_oss", "gemma4"]


@pytest.mark.parametrize("model_type", PARTITIONED)
def test_the_stages_cut_the_whole_traced_step(model_type):
    """The two stages together run the whole step's kernels once each (their FLOPs and bytes sum to
    the whole's, the send aside) and hold its parameters, weight bytes, cache bytes and KV bytes a
    token once each, besides a tied lm_head's fp16 copy of the 1000 x 256 table."""
    cfg = config(model_type)
    wl = Workload.decode(2, 17)
    whole, stages = _stages(cfg, wl, Parallel(pp=2), 1)

    def total(a, field):
        return sum(getattr(k.cost, field) * k.count for k in a.kernels if k.role != "send")

    for field in ("flops", "matmul_flops", "bytes", "weight_bytes", "kv_read_bytes", "kv_write_bytes"):
        assert sum(total(a, field) for a in stages) == total(whole, field), field
    tied = whole.kernel("lm_head").params == 0
    assert sum(a.params for a in stages) == whole.params + TABLE * tied
    assert sum(a.weight_storage_bytes for a in stages) == whole.weight_storage_bytes + 2 * TABLE * tied
    assert sum(a.traced_cache_bytes for a in stages) == whole.traced_cache_bytes
    assert sum(a.kv_bytes_per_token for a in stages) == whole.kv_bytes_per_token
    assert [k.role for k in stages[0].kernels].count("send") == 1 and "send" not in [k.role for k in stages[1].kernels]


def test_a_quantized_stage_holds_its_layers_as_stored():
    """int4 weights: the stages' weight bytes sum to the whole's (each linear's packed bytes on the stage
    of its layer), the tied table's fp16 copy besides."""
    cfg = dict(DENSE["llama-tied"], num_hidden_layers=3)
    wl = Workload.decode(2, 17, weight_dtype=DTYPES["int4"])
    whole, stages = _stages(cfg, wl, Parallel(pp=2), 1)
    assert whole.weight_storage_bytes < 2 * whole.params  # int4 layers
    assert sum(a.weight_storage_bytes for a in stages) == whole.weight_storage_bytes + 2 * TABLE
    assert stages[1].kernel("self_attn.q_proj").param_bytes == whole.kernel("self_attn.q_proj").param_bytes


def test_traced_pp_from_the_command_line(tmp_path, capsys):
    """--trace --pp 2 prints the pipeline's line and the slowest stage's table; a --pp list compares the
    sizes; more stages than layers is refused in one line."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(DENSE["llama"], num_hidden_layers=4)))
    assert main([str(path), "--trace", "--pp", "2", "--tp", "2", "--batch", "4", "--hw", "h100"]) == 0
    out = capsys.readouterr().out
    assert "pipeline  --pp 2, 2 micro-batch(es) of 2 of the 4 sequences" in out and "pp.send" in out
    assert "L=2 layers (stage " in out and "base_model_tp_plan" in out
    assert main([str(path), "--trace", "--pp", "1,2,4", "--hw", "h100"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line[:2] in ("1 ", "2 ", "4 ")]
    assert rows == ["1", "2", "4"]
    assert main([str(path), "--trace", "--pp", "8", "--batch", "4", "--context", "100,200", "--hw", "h100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--pp 8" in err


@pytest.mark.parametrize("name", ["mixtral", "qwen3_moe"])
@pytest.mark.parametrize("tp", [1, 2])
def test_a_traced_expert_parallel_stage_equals_the_hand_models(name, tp):
    """--pp 2 --ep 2 (with --tp 1 or 2): 8 sequences in 2 micro-batches of 4, each stage's rank running
    attention for 2 of a micro-batch's 4 and holding 2 of the 4 experts (at 1/tp of their width). Each stage's
    experts FLOPs and weight bytes, its collectives (the all-to-alls over the stage's tp x ep ranks, its send
    to the next stage), parameters, weights, KV cache, memory (its ranks' 4 of the 8 sequences' cache) are the
    hand stage's."""
    cfg = MOE[name]
    wl = Workload.decode(8, 17, cache_update="in-place")
    par = Parallel(tp=tp, pp=2, ep=2)
    shape = shape_from_config(cfg, "t")
    micro = replace(wl, batch=4)
    whole, stages = _stages(cfg, wl, par, 2)

    for s, traced in enumerate(stages):
        sub, kernels = stage_kernels(shape, micro, 2, s, tp, 2)
        hand = StageAnalysis(sub, replace(micro, batch=2), tuple(kernels), parallel=par, full=analyze(shape, wl),
                             stage=s, layers=stage_layers(2, 2)[s], micro_batches=2, batch=8)
        assert experts_cost(traced) == experts_cost(hand), s
        assert collectives_of(traced) == collectives_of(hand) and collectives_of(hand), s
        assert (traced.params, traced.weight_storage_bytes, traced.kv_bytes_per_token, traced.memory_bytes,
                traced.cached_sequences, traced.totals.matmul_flops) == \
            (hand.params, hand.weight_storage_bytes, hand.kv_bytes_per_token, hand.memory_bytes,
             hand.cached_sequences, hand.totals.matmul_flops), s


SWEPT = {"pp2": ("llama", Parallel(pp=2)), "pp2-tp2": ("llama", Parallel(tp=2, pp=2)),
         "pp2-ep2": ("mixtral", Parallel(pp=2, ep=2)), "pp2-tp2-ep2": ("qwen3_moe", Parallel(tp=2, pp=2, ep=2))}


def _json(flags: list, capsys) -> dict:
    assert main(flags) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("layout", sorted(SWEPT))
def test_a_traced_pipeline_sweep_is_the_single_steps_and_the_hand_models(layout, tmp_path, capsys):
    """A batch x context sweep over a traced pipeline (each stage's grid fitted from four traced probes,
    combined as the single step combines its stages) gives at every point of a 2 x 3 grid, four of them
    fitted rather than probed (batch 12 is 3 micro-batches' worth past the probes, contexts 40 and 60 past
    20 and 21), the single traced step's pipeline time, slowest stage's FLOPs and bytes and largest stage's
    memory; and the hand model's sweep's weight bytes, KV bytes and memory (4 layers over 2 stages, the
    ideal view: --impl cuda-graph)."""
    name, par = SWEPT[layout]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(dict(DENSE[name] if name in DENSE else MOE[name], num_hidden_layers=4,
                                    torch_dtype="bfloat16")))
    flags = [str(path), "--pp", str(par.pp), "--tp", str(par.tp), "--ep", str(par.ep), "--hw", "h100", "--impl",
             "cuda-graph", "--format", "json"]
    grid = ["--batch", "4,12", "--context", "20,40,60"]
    traced, hand = _json(flags + ["--trace"] + grid, capsys), _json(flags + grid, capsys)
    assert len(traced["points"]) == len(hand["points"]) == 6
    # the default rule: --pp 2 micro-batches where 2 divides the batch (4 and 12 both)
    assert traced["parallel"]["micro_batches_by_batch"] == hand["parallel"]["micro_batches_by_batch"] == \
        {"4": 2, "12": 2}
    for p, h in zip(traced["points"], hand["points"]):
        one = _json(flags + ["--trace", "--batch", str(p["batch"]), "--context", str(p["context"])], capsys)
        assert p["predicted_s"] == pytest.approx(one["parallel"]["step_s"], rel=1e-9)
        assert (p["flops"], p["bytes"], p["memory_bytes"]) == (one["step"]["flops"], one["step"]["bytes"],
                                                               one["parallel"]["largest_stage_memory_bytes"])
        assert (p["batch"], p["context"], p["weight_bytes"], p["kv_bytes"], p["memory_bytes"]) == \
            (h["batch"], h["context"], h["weight_bytes"], h["kv_bytes"], h["memory_bytes"])
