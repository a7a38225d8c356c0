"""roofcalc's counts against the real transformers modeling code under FlopCounterMode.

Every weight matmul and both attention matmuls (QKᵀ and PV) must equal the counter exactly,
per layer, in prefill and in decode, at two (batch, length) points per family; so must the
whole-model total. The counter counts attention without a causal discount, so the prefill
comparison uses roofcalc's full-rectangle option; a decode step after a prefill of P tokens
attends to P + 1 keys. Weight bytes and KV-cache bytes are checked against the real model's
parameters and the real cache.
"""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_oracle import MLP, PROJECTIONS, build, cache_bytes, param_bytes, run  # noqa: E402

from roofcalc import Workload, analyze, shape_from_config  # noqa: E402

BASE = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=688, vocab_size=1000)

FAMILIES = {
    "llama": dict(BASE, model_type="llama", num_key_value_heads=2),
    "llama-mha-biases": dict(BASE, model_type="llama", attention_bias=True, mlp_bias=True, tie_word_embeddings=True),
    # window 8 is shorter than every prompt below: prefill masks, decode reads the last 8 keys
    "mistral": dict(BASE, model_type="mistral", num_key_value_heads=4, sliding_window=8),
    "qwen2": dict(BASE, model_type="qwen2", num_key_value_heads=2),
    # explicit head_dim 64 != 256 / 8
    "qwen3": dict(BASE, model_type="qwen3", num_key_value_heads=2, head_dim=64),
    # explicit head_dim 48, one KV head, tied embeddings, GeGLU
    "gemma": dict(BASE, model_type="gemma", num_key_value_heads=1, head_dim=48),
}
POINTS = [(1, 16), (3, 9)]  # (batch, prompt length)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request):
    cfg = FAMILIES[request.param]
    return cfg, build(cfg)


def _check_layers(counts, analysis, n_layers):
    for i in range(n_layers):
        for name in PROJECTIONS + MLP + ("attention",):
            assert analysis.kernel(name).cost.matmul_flops == counts.layer(i, name), (i, name)


@pytest.mark.parametrize("batch,prompt", POINTS)
def test_prefill_and_decode_match_flop_counter(family, batch, prompt):
    cfg, model = family
    shape = shape_from_config(cfg, "test")
    prefill_counts, decode_counts, _ = run(model, batch, prompt, all_logits=True)

    prefill = analyze(shape, Workload.prefill(batch, prompt, causal=False, logits_all=True))
    _check_layers(prefill_counts, prefill, cfg["num_hidden_layers"])
    assert prefill.kernel("lm_head").cost.matmul_flops == prefill_counts.module("lm_head")
    assert prefill.totals.matmul_flops == prefill_counts.flops["Global"]

    decode = analyze(shape, Workload.decode(batch, prompt + 1))
    _check_layers(decode_counts, decode, cfg["num_hidden_layers"])
    assert decode.kernel("lm_head").cost.matmul_flops == decode_counts.module("lm_head")
    assert decode.totals.matmul_flops == decode_counts.flops["Global"]


def test_prefill_last_token_logits_match_generate(family):
    """``logits_to_keep=1`` (what generate does) is roofcalc's default prefill lm_head."""
    cfg, model = family
    prefill_counts, _, _ = run(model, 2, 8, all_logits=False)
    prefill = analyze(shape_from_config(cfg, "test"), Workload.prefill(2, 8, causal=False))
    assert prefill.kernel("lm_head").cost.matmul_flops == prefill_counts.module("lm_head")
    assert prefill.totals.matmul_flops == prefill_counts.flops["Global"]


def test_weight_bytes_equal_real_parameters(family):
    cfg, model = family
    analysis = analyze(shape_from_config(cfg, "test"), Workload.decode(1, 4))
    assert analysis.weight_storage_bytes == param_bytes(model)  # fp16 model, fp16 workload
    assert analysis.params == sum(p.numel() for p in model.parameters())


def test_kv_cache_bytes_per_token_equal_real_cache(family):
    cfg, model = family
    shape = shape_from_config(cfg, "test")
    batch, prompt = 2, 6
    _, _, cache = run(model, batch, prompt)  # the decode step appends to the same cache
    tokens = prompt + 1  # shorter than mistral's window of 8: every token stays cached
    analysis = analyze(shape, Workload.decode(batch, tokens))
    assert cache_bytes(cache) == batch * tokens * analysis.kv_bytes_per_token


def test_tinyllama_real_config_matches_counter_and_published_figures():
    """The catalog's TinyLlama config itself, prefill 128 then one decode step (129 keys), batch 1.

    The counter's totals for this config: 267,764,367,360 FLOPs (prefill, logits at every position)
    and 2,092,089,344 (decode)."""
    from roofcalc.sources import find_in_catalog

    entry = find_in_catalog("TinyLlama/TinyLlama-1.1B")
    model = build(entry.config)
    prefill_counts, decode_counts, _ = run(model, 1, 128)
    shape = shape_from_config(entry.config, entry.hub_id)
    prefill = analyze(shape, Workload.prefill(1, 128, causal=False, logits_all=True))
    decode = analyze(shape, Workload.decode(1, 129))
    _check_layers(prefill_counts, prefill, 22)
    _check_layers(decode_counts, decode, 22)
    assert prefill.kernel("q_proj").cost.matmul_flops == 1_073_741_824  # 2 · 128 · 2048 · 2048
    assert decode.kernel("attention").cost.matmul_flops == 1_056_768  # 2 · 2 · 32 · 129 · 64
    assert prefill.totals.matmul_flops == prefill_counts.flops["Global"] == 267_764_367_360
    assert decode.totals.matmul_flops == decode_counts.flops["Global"] == 2_092_089_344


class _OpCounter:
    """Counts the ATen ops that compute (views and metadata ops launch nothing); SDPA is one op, one fused
    kernel as a GPU runs it (on a CPU, heads of unequal widths, DeepSeek's, or a boolean mask, Phi-3's,
    fall back to its math ops, which a GPU's fused kernel does not run)."""

    VIEWS = {"view", "_unsafe_view", "transpose", "unsqueeze", "slice", "expand", "t", "detach", "alias", "select",
             "permute", "squeeze", "as_strided", "split", "split_with_sizes", "unbind", "lift_fresh", "_reshape_alias",
             "view_as_complex", "view_as_real",  # DeepSeek-V2's rotary: a complex view of the same storage
             "empty", "empty_like", "empty_strided", "new_empty"}  # allocations launch nothing either

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if func.__name__.split(".")[0] not in counter.VIEWS and not counter.inside:
                    counter.n += 1
                return func(*args, **(kwargs or {}))

        self.n = 0
        self.inside = False  # within one SDPA call
        self.mode = Mode()

    @contextlib.contextmanager
    def counting(self):
        """The mode, with torch's SDPA counted as one op."""
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def fused(*args, **kwargs):
            self.n += 1
            self.inside = True
            try:
                return sdpa(*args, **kwargs)
            finally:
                self.inside = False

        torch.nn.functional.scaled_dot_product_attention = fused
        try:
            with self.mode:
                yield
        finally:
            torch.nn.functional.scaled_dot_product_attention = sdpa


def _eager_families():
    from test_oracle_families import FAMILIES as OTHERS

    cases = {"llama": dict(BASE, model_type="llama", num_key_value_heads=2),
             "gemma": dict(FAMILIES["gemma"])}
    for name, (cfg, _) in OTHERS.items():
        cfg = dict(cfg)
        if name.startswith("deepseek"):
            cfg["first_k_dense_replace"] = 0  # every layer MoE: the added layer is like the others
        if name == "qwen3_moe":
            cfg["decoder_sparse_step"] = 1
        cases[name] = cfg
    # norm_topk_prob renormalizes the top-k routing weights: set against each family's class default
    cases["qwen3_moe+norm_topk_prob"] = dict(cases["qwen3_moe"], norm_topk_prob=True)
    cases["deepseek_v3-norm_topk_prob"] = dict(cases["deepseek_v3"], norm_topk_prob=False)
    # two groups of experts (DeepSeek-V3 has 8): the expanded group mask is copied when reshaped
    cases["deepseek_v3+groups"] = dict(cases["deepseek_v3"], n_group=2, topk_group=1)
    return cases


EAGER_CASES = _eager_families()


@pytest.mark.parametrize("dtype_name", ["bf16", "fp32"])
@pytest.mark.parametrize("family_name", sorted(EAGER_CASES))
def test_hf_eager_launches_per_layer_equal_aten_ops_of_a_real_layer(family_name, dtype_name):
    """The hf-eager launch table against the ops a transformers layer dispatches in a decode step at
    batch 1 (the difference between a 3-layer and a 2-layer model; CPU, real weights)."""
    import warnings

    import transformers

    from roofcalc import dtype as rc_dtype
    from roofcalc.roofline import Roof, place

    cfg = EAGER_CASES[family_name]
    layers_key = "n_layer" if "n_layer" in cfg else "num_hidden_layers"
    tdtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    counts = {}
    for layers in (2, 3):
        conf = transformers.AutoConfig.for_model(**{**cfg, layers_key: layers})  # experts as transformers runs them
        attn = "eager" if family_name == "gemma2" else "sdpa"
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(conf, dtype=tdtype, attn_implementation=attn).eval()
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            cache = model(input_ids=torch.zeros((1, 8), dtype=torch.long), use_cache=True).past_key_values
            counter = _OpCounter()
            with counter.counting():
                model(input_ids=torch.zeros((1, 1), dtype=torch.long), past_key_values=cache, use_cache=True,
                      logits_to_keep=1)
        counts[layers] = counter.n
    shape = shape_from_config(cfg, family_name)
    d = rc_dtype(dtype_name)
    step = analyze(shape, Workload.decode(1, 9, weight_dtype=d, act_dtype=d, kv_dtype=d))
    verdict = place(step, Roof(1e12, 1e14), impl="hf-eager")
    assert verdict.launches_per_layer == counts[3] - counts[2]
