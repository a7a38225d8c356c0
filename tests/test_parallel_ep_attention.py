"""--ep N --ep-attention tp: experts split over N ranks, attention split by heads over the same ranks.

Checked by hand arithmetic, and its attention against --tp N's (which tests/test_parallel.py holds
to a real distributed run of transformers' plan)."""

from __future__ import annotations

import functools

import pytest

from roofcalc import RoofcalcError, Workload, shape_from_config
from roofcalc.cli import main
from roofcalc.parallel import Parallel, analyze_parallel

BASE = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=512, vocab_size=1000,
            model_type="mixtral", num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2,
            sliding_window=None)


def _rank(batch: int, ep: int = 2):
    shape = shape_from_config(BASE, "t")
    wl = Workload.decode(batch, 17)
    return shape, wl, analyze_parallel(shape, wl, Parallel(ep=ep, ep_attention="tp"))


def test_attention_is_split_as_tp_splits_it():
    """q/k/v, o_proj, the cache write, the attention core and o_proj's all-reduce on each of 2 ranks are
    --tp 2's, for all 4 sequences (not B/2 of them, as data-parallel attention runs)."""
    shape, wl, rank = _rank(4)
    tp = analyze_parallel(shape, wl, Parallel(tp=2))
    for name in ("q_proj", "k_proj", "v_proj", "o_proj", "kv_cache_write", "attention", "o_proj.all_reduce",
                 "embed.all_reduce", "lm_head", "lm_head.all_gather"):
        assert rank.kernel(name).cost == tp.kernel(name).cost, name
    assert rank.workload.batch == 4


def test_the_experts_by_hand_at_batch_4():
    """E = 8 experts, k = 2, 2 ranks of 4 experts each; 4 tokens reach 8·(1 − (1 − 2/8)^4) = 5.47 of the
    experts, so the busiest rank holds ⌈5.47/2⌉ = 3 of them: gate_up_proj reads 3 x 256 x 1,024 x 2
    bytes = 1,572,864, down_proj 3 x 512 x 256 x 2 = 786,432, each on ⌈4·2/2⌉ = 4 token rows (gate_up
    2·4·256·1,024 = 2,097,152 FLOPs). A rank holds 4 x (256 x 1,024 + 512 x 256) = 1,572,864 expert
    parameters a layer. Collectives: an all-reduce after o_proj and after the experts' combine (2 a
    layer x 2 layers), one after the embedding, each of 4 x 256 x 2 = 2,048 bytes; the logits'
    all-gather; no all-to-all."""
    _, _, rank = _rank(4)
    gate_up, down = rank.kernel("experts.gate_up_proj"), rank.kernel("experts.down_proj")
    assert (gate_up.cost.weight_bytes, down.cost.weight_bytes) == (1572864, 786432)
    assert gate_up.sizes.m == down.sizes.m == 4 and gate_up.cost.matmul_flops == 2097152
    assert gate_up.params + down.params == 1572864
    reduces = [k for k in rank.kernels if k.role == "all_reduce"]
    assert sum(k.count for k in reduces) == 5 and {k.message_bytes for k in reduces} == {2048}
    assert rank.kernel("experts.combine.all_reduce").count == 2
    assert not [k for k in rank.kernels if k.role == "all_to_all"]
    # each rank holds every sequence's cache for its 1 of the 2 KV heads: 2 layers x K and V x 32 x 2 bytes
    assert rank.kv_bytes_per_token == 2 * 2 * 32 * 2


def test_at_batch_1_the_busiest_rank_reads_a_whole_expert():
    """One token picks 2 of 8 experts on 8 ranks of one expert each: the rank the step waits for reads its
    whole expert (256 x 1,024 x 2 bytes for gate_up), on 1 token row; the others idle."""
    _, _, rank = _rank(1, ep=8)
    gate_up = rank.kernel("experts.gate_up_proj")
    assert gate_up.cost.weight_bytes == 256 * 1024 * 2 and gate_up.sizes.m == 1


def test_refusals(capsys, tmp_path):
    import json

    with pytest.raises(RoofcalcError, match="without --tp and --pp"):
        Parallel(tp=2, ep=2, ep_attention="tp")
    with pytest.raises(RoofcalcError, match="dp or tp"):
        Parallel(ep=2, ep_attention="x")
    path = tmp_path / "m.json"
    path.write_text(json.dumps(BASE))
    assert main([str(path), "--hw", "h100", "--ep-attention", "tp"]) == 2  # no --ep: the flag would do nothing
    err = capsys.readouterr().err
    assert "give it with --ep N" in err and err.count("\n") == 1


def test_a_list_of_ep_sizes_counts_every_sequence_once():
    """Tensor-parallel attention runs the whole batch on every rank: tokens/s is B / step, not N·B / step."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import tp_sweep

    shape = shape_from_config(BASE, "t")
    sw = tp_sweep(shape, Workload.decode(4, 17), [2, 4], find_hardware("h100"), axis="ep",
                  base=Parallel(ep_attention="tp"))
    for p in sw.points:
        assert p.sequences == 4 and p.tokens_per_s == pytest.approx(4 / p.step_s)


def test_a_sweep_is_the_single_steps_at_every_point_and_its_verdicts_hold_on_them():
    """A batch x context sweep under --ep 8 --ep-attention tp: the busiest rank's expert rows (⌈2B/8⌉) and
    experts (⌈reached/8⌉) are not linear in B, so the grid takes those kernels' costs at each batch; every
    point equals the single step's (FLOPs, bytes, memory, times), batches 3 and 5 included (⌈6/8⌉ = 1,
    ⌈10/8⌉ = 2 rows). The verdicts, on a measured roof of ridge 8 FLOP/byte (2 TB/s, 16 TFLOP/s), are
    held to single steps searched batch by batch: the first batch whose AI reaches the ridge (at context
    17; never at 300, where the AI tends to 2.6), the first whose KV bytes exceed its weight bytes, and
    the AI's limit against the step at 2^20 sequences."""
    from roofcalc.hardware import find_hardware
    from roofcalc.parallel import RankAnalyzer
    from roofcalc.roofline import roofline
    from roofcalc.sweep import sweep

    shape, h100, par = shape_from_config(BASE, "t"), find_hardware("h100"), Parallel(ep=8, ep_attention="tp")
    roof = dict(measured_bw=2e12, measured_flops=1.6e13)
    batches, contexts = [1, 3, 5, 16, 64], [17, 300]
    fused = dict(eager_ops=False)  # CUDA graphs of fused kernels
    sw = sweep(shape, h100, batches=batches, contexts=contexts, impl="cuda-graph", analyzer=RankAnalyzer(shape, par),
               **roof, **fused)
    for i, b in enumerate(batches):
        for j, s in enumerate(contexts):
            one = roofline(analyze_parallel(shape, Workload.decode(b, s, **fused), par), h100, impl="cuda-graph",
                           **roof)
            assert sw.grid.flops[i, j] == one.analysis.totals.flops, (b, s)
            assert sw.grid.bytes[i, j] == one.analysis.totals.bytes, (b, s)
            assert sw.grid.memory_bytes[i, j] == one.analysis.memory_bytes
            assert sw.grid.step_s[i, j] == pytest.approx(one.step.times.predicted_s, rel=1e-12)
    assert analyze_parallel(shape, Workload.decode(5, 17), par).kernel("experts.gate_up_proj").sizes.m == 2

    def for_good(holds):
        """The smallest batch from which ``holds`` is true at every batch up to 1,024 (None: not at 1,024)."""
        out = None
        for b in range(1024, 0, -1):
            if not holds(b):
                return out
            out = b
        return out

    @functools.lru_cache(maxsize=None)
    def step(b, s):
        return analyze_parallel(shape, Workload.decode(b, s, **fused), par).totals

    # the AI is a saw in B: at context 17 it first reaches 8 FLOP/byte at batch 53 (14 rows a rank), falls
    # below it at 54 to 56 (14 rows, more tokens' activations) and stays above it from 57 (15 rows)
    assert [step(b, 17).flops >= 8 * step(b, 17).bytes for b in range(52, 59)] == [0, 1, 0, 0, 0, 1, 1]
    for v, s in zip(sw.verdicts, contexts):
        assert v.ridge == pytest.approx(8)
        first = for_good(lambda b: step(b, s).flops >= 8 * step(b, s).bytes)
        assert v.ridge_batch == first and (first is None) == (s == 300), s
        assert v.kv_over_weights_batch == for_good(lambda b: step(b, s).kv_bytes > step(b, s).weight_bytes), s
        big = step(1 << 20, s)
        assert v.intensity_limit == pytest.approx(big.flops / big.bytes, rel=1e-3)


def test_a_sweep_from_the_command_line(tmp_path, capsys):
    """--ep 2 --ep-attention tp with lists of batches and contexts prints one rank's sweep: the whole batch
    on every rank (no B/2), no all-to-all."""
    import json

    path = tmp_path / "m.json"
    path.write_text(json.dumps(BASE))
    assert main([str(path), "--hw", "h100", "--ep", "2", "--ep-attention", "tp", "--batch", "1,4", "--context",
                 "17,300", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["batch"] for p in doc["points"]] == [1, 1, 4, 4]
    assert doc["parallel"]["ep_attention"] == "tp" and {p["ep_attention"] for p in doc["points"]} == {"tp"}
    _, _, rank = _rank(4)
    assert next(p for p in doc["points"] if p["batch"] == 4 and p["context"] == 17)["flops"] == rank.totals.flops


def test_the_experts_line_of_a_rank_counts_the_model(capsys):
    """A rank holds a share of the experts (--ep) or of each expert (--tp): its header's idle and active counts
    are the whole model's, the single GPU's (Mixtral-8x7B: 46,702,792,704 parameters, 12,879,925,248 active a
    token), said so, under every layout."""
    from roofcalc.calculator import analyze
    from roofcalc.sources import load_shape

    whole = analyze(load_shape("mistralai/Mixtral-8x7B-v0.1"), Workload.decode(8, 1000))
    want = (f"(the model: {whole.params - whole.active_params:,} parameters idle per token, "
            f"{whole.active_params:,} active)")
    for flags in (["--ep", "8", "--ep-attention", "tp"], ["--ep", "8"], ["--tp", "2"], []):
        assert main(["mistralai/Mixtral-8x7B-v0.1", "--hw", "h100", *flags, "--batch", "8", "--context", "1000"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert (want in out) == bool(flags) and f"{whole.active_params:,} active)" in out, flags


def test_a_masking_engines_rank_writes_and_activates_every_pair():
    """vLLM's and SGLang's fused MoE on an expert-parallel rank with every token (engines.Engine.masked_experts):
    the other ranks' experts' pairs are written as zeros and go through the activation and the weighted sum. At
    batch 4 on 2 ranks, T·k = 8 pairs, 4 of them the rank's own: the GEMMs read and compute the rank's 4 rows as
    before (gate_up reads 4 x 256 x 2 bytes of input), but gate_up writes all 8 rows of 2 x 512 (8 x 1,024 x 2 =
    16,384 bytes, not 8,192), SiLU×up reads 8 x 1,024 and writes 8 x 512 values (24,576 bytes), down writes 8 x 256
    x 2 = 4,096 bytes and the combine reads all 8 rows. The command line takes it under --engine vllm and sglang, not
    trtllm (CUTLASS grouped GEMMs over the rank's permuted rows alone)."""
    shape = shape_from_config(BASE, "t")
    wl = Workload.decode(4, 17, eager_ops=False)  # (SiLU×up one kernel, as the serving engines run it)
    own = analyze_parallel(shape, wl, Parallel(ep=2, ep_attention="tp"))
    masked = analyze_parallel(shape, wl, Parallel(ep=2, ep_attention="tp", masked_experts=True))
    g0, g1 = own.kernel("experts.gate_up_proj"), masked.kernel("experts.gate_up_proj")
    assert g0.cost.matmul_flops == g1.cost.matmul_flops and g0.cost.act_read_bytes == g1.cost.act_read_bytes == 4 * 256 * 2
    assert (g0.cost.act_write_bytes, g1.cost.act_write_bytes) == (8192, 16384)
    act = masked.kernel("experts.act_mul").cost
    assert act.act_read_bytes + act.act_write_bytes == 8 * (1024 + 512) * 2
    assert masked.kernel("experts.down_proj").cost.act_write_bytes == 8 * 256 * 2
    assert masked.kernel("experts.combine").cost.act_read_bytes == \
        analyze_parallel(shape, wl, Parallel(ep=1)).kernel("experts.combine").cost.act_read_bytes
    with pytest.raises(RoofcalcError, match="under --ep-attention tp alone"):
        Parallel(ep=2, masked_experts=True)


def test_the_engines_that_mask_are_vllm_and_sglang_on_the_kernels_that_do(capsys):
    """Masked where the engine maps another rank's experts out (vLLM, SGLang) and the fused MoE kernel its fitted form
    was measured on writes their rows (fitting.masked_rows): Mixtral's bf16 experts on the H100, vLLM's and SGLang's
    Triton kernel; not TensorRT-LLM's, nor vLLM's fp8 per-tensor experts on the H100 (FlashInfer's CUTLASS kernel),
    nor on the B200 (TensorRT-LLM's kernels through FlashInfer); a T4, with no form of its own, takes the engine's
    Triton kernel. A traced model's ranks are counted so too (its experts as its trace names them)."""
    import json

    for flags, masked in ((["--engine", "vllm"], True), (["--engine", "sglang"], True), (["--engine", "trtllm"], False),
                          (["--engine", "vllm", "--weight-dtype", "fp8-t"], False),
                          (["--engine", "vllm", "--hw", "B200"], False), (["--engine", "vllm", "--hw", "T4"], True),
                          (["--engine", "vllm", "--trace"], True)):
        model = "qwen3-30b-a3b" if "--trace" in flags else "mixtral-8x7b"
        assert main([model, "--hw", "H100", *flags, "--ep", "8", "--ep-attention", "tp", "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["parallel"]["masked_experts"] is masked, flags
    with pytest.raises(RoofcalcError, match="not both"):
        Parallel(ep=2, ep_attention="tp", dense_experts=True, masked_experts=True)
