"""Family records: one per family, read by one reader; --family never drops a key silently."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from roofcalc import RoofcalcError, Workload, analyze, shape_from_config
from roofcalc.cli import main
from roofcalc.families import FAMILIES, Family, Flag
from roofcalc.sources import find_in_catalog
from textutil import unwrap  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src" / "roofcalc"


def custom(hub_id: str, **changes) -> dict:
    cfg = dict(find_in_catalog(hub_id).config, model_type="my_finetune", **changes)
    return {k: v for k, v in cfg.items() if v is not ...}


def test_borrowed_family_refuses_keys_it_cannot_represent_and_names_them():
    with pytest.raises(RoofcalcError, match=r"sliding_window=4096 would be dropped"):
        shape_from_config(custom("mistralai/Mistral-7B-v0.1"), "m", family="llama")
    with pytest.raises(RoofcalcError, match=r"num_experts_per_tok=2, num_local_experts=8 would be dropped"):
        shape_from_config(custom("mistralai/Mixtral-8x7B-v0.1"), "m", family="mistral")
    # read as its own family, the same keys are all read
    assert shape_from_config(custom("mistralai/Mixtral-8x7B-v0.1"), "m", family="mixtral").moe.n_experts == 8


def test_keys_set_to_nothing_are_not_a_loss():
    cfg = custom("TinyLlama/TinyLlama-1.1B", sliding_window=None, n_shared_experts=0, use_sliding_window=False)
    assert shape_from_config(cfg, "t", family="llama").sliding_window is None


def test_borrowed_defaults_are_listed_in_the_header_and_the_json(tmp_path, capsys):
    cfg = custom("TinyLlama/TinyLlama-1.1B", num_key_value_heads=..., tie_word_embeddings=...)
    shape = shape_from_config(cfg, "t", family="llama")
    defaults = dict(shape.borrowed_defaults)
    # LlamaConfig: num_key_value_heads None means MHA (= the 32 heads); tie_word_embeddings False
    assert defaults["num_key_value_heads"] == 32 and defaults["tie_word_embeddings"] is False
    assert shape.borrowed and not shape_from_config(dict(cfg, model_type="llama"), "t").borrowed
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main([str(path), "--family", "llama"]) == 0
    out = unwrap(capsys.readouterr().out)
    assert re.search(r"read as llama \(--family\); absent keys took llama's defaults: .*num_key_value_heads=32", out)
    assert main([str(path), "--family", "llama", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["model"]["family_defaults"]["num_key_value_heads"] == 32


def test_a_new_family_is_one_record(monkeypatch):
    """A family added as one record is read, counted and launched through it alone."""
    record = dataclasses.replace(FAMILIES["llama"], model_type="llama_qk", qk_norm=Flag(None, True))
    monkeypatch.setitem(FAMILIES, "llama_qk", record)
    cfg = dict(find_in_catalog("TinyLlama/TinyLlama-1.1B").config, model_type="llama_qk")
    shape = shape_from_config(cfg, "t")
    plain = shape_from_config(dict(cfg, model_type="llama"), "t")
    assert shape.qk_norm and not plain.qk_norm
    extra = analyze(shape, Workload.decode(1, 8)).params - analyze(plain, Workload.decode(1, 8)).params
    assert extra == 22 * 2 * 64  # a q_norm and a k_norm weight of H = 64 per layer, 22 layers


def test_records_are_frozen_and_named_by_their_model_type():
    for name, record in FAMILIES.items():
        assert isinstance(record, Family) and record.model_type == name
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.norm = "x"


@pytest.mark.parametrize("module", ["calculator", "roofline", "predict", "sweep", "profile", "report", "plotting",
                                    "cli"])
def test_no_module_outside_the_records_compares_family_names(module):
    text = (SRC / f"{module}.py").read_text()
    names = "|".join(map(re.escape, FAMILIES))
    assert not re.search(r"(family|model_type|fam)\s*(==|!=|in)\s*[(\[{{]?\s*[\"']", text)
    assert not re.search(rf"[\"']({names})[\"']", text), "a family named outside roofcalc.families"
