"""--ep N --ep-attention tp: experts split over N ranks, attention split by heads over the same ranks.

Checked by hand arithmetic, and its attention against --tp N's (which tests/test_parallel.py holds
to a real distributed run of transformers' plan)."""

from __future__ import annotations

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
    assert main([str(path), "--hw", "h100", "--ep", "2", "--ep-attention", "tp", "--batch", "1,4"]) == 2
    err = capsys.readouterr().err
    assert "describes one step" in err and err.count("\n") == 1
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
