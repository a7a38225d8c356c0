"""Traced kernels re-costed for weights stored in a quantized format (int8, int4, fp8, mxfp4, ternary)."""

from __future__ import annotations

import math
from dataclasses import replace

from ..calculator import Workload
from ..errors import RoofcalcError


def _quantized(traced: list, doc: dict, wl: Workload, config) -> tuple[list, int, dict]:
    """The kernels and the weights' bytes of a checkpoint whose decoder layers' weight matrices are stored in
    ``wl.weight_dtype`` (int8 / int4 with a scale per group, fp8 with a scale per block), as the hand models
    count them: each [n_out, n_in] matrix (a stack of experts' too) of a module the layers run is
    linear_weight_bytes; embeddings, lm_head, norms, biases, routers (an output per expert, or a single gate)
    and modules the step never runs (a vision tower) keep the float dtype. The trace itself runs in the
    activation dtype: FLOPs and activations do not change. Also each re-stored module's change in bytes
    (a pipeline stage's weights are its modules')."""
    from ..calculator import linear_weight_bytes
    from ..calculator import traced_expert_bytes

    text = getattr(config, "get_text_config", lambda: config)()
    n_experts = next((v for k in ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
                      for c in (text, config) if isinstance(v := getattr(c, k, None), int)), 0)
    float_size = wl.act_dtype.bits // 8
    shapes = doc.get("weight_shapes", {})

    def stored(m) -> int:
        return math.prod(m) * float_size

    def quant(m) -> int:
        return math.prod(m[:-2]) * linear_weight_bytes(m[-1], m[-2], wl, experts=True)

    def mats(module: str) -> list:
        return [m for m in shapes.get(module, []) if m[-2] not in (1, n_experts)]  # routers stay float

    def dense(k) -> bool:  # a matmul of every token over whole expert stacks (Llama-4's experts in transformers)
        return k.experts is None and bool(k.function) and any(len(m) == 3 for m in mats(k.module))

    runs = {k.module for k in traced if k.layer is not None and k.kind == "matmul" and (
        not k.function or k.experts or dense(k)) and (k.experts or dense(k) or not wl.weight_dtype.experts_only)}
    if not runs and wl.weight_dtype.experts_only:
        raise RoofcalcError(f"{doc['class']} runs no experts: {wl.weight_dtype.name} stores a mixture of experts' "
                            f"expert weights (use int4 or int8 for every linear)")
    deltas = {module: sum(quant(m) - stored(m) for m in mats(module)) for module in runs}
    total = doc["param_bytes"] + sum(deltas.values())
    out = []
    for k in traced:
        if k.module not in runs or not mats(k.module):
            out.append(k)
            continue
        by_bytes = {stored(m): quant(m) for m in mats(k.module)}  # each matrix's bytes, as traced -> as stored
        delta = deltas[k.module]  # a kernel that holds the module's weights carries their change
        if k.experts is not None:  # the expert stacks it reads, by their stored bytes
            n_exp, top_k, fulls = k.experts
            new_experts = (n_exp, top_k, tuple(by_bytes.get(f, f) for f in fulls))
            change = {c: traced_expert_bytes(new_experts, wl.tokens, wl.experts)
                      - traced_expert_bytes(k.experts, wl.tokens, wl.experts) for c in ("ideal", "eager")}
            k = replace(k, experts=new_experts, role="experts", param_bytes=k.param_bytes + delta if k.param_bytes else 0)
        elif k.kind == "matmul" and dense(k):  # the stack it reads whole, by its stored bytes
            change = {c: by_bytes.get(getattr(k, c).weight_bytes, getattr(k, c).weight_bytes) - getattr(k, c).weight_bytes
                      for c in ("ideal", "eager")}
            k = replace(k, role="linear", param_bytes=k.param_bytes + change["eager"] if k.param_bytes else 0)
        elif not k.function:  # a leaf linear: it reads its whole weight
            change = {"ideal": delta, "eager": delta}
            k = replace(k, role="linear", param_bytes=k.param_bytes + delta if k.param_bytes else 0)
        else:
            out.append(k)
            continue
        out.append(replace(k, ideal=replace(k.ideal, weight_bytes=k.ideal.weight_bytes + change["ideal"]),
                           eager=replace(k.eager, weight_bytes=k.eager.weight_bytes + change["eager"])))
    return out, total, deltas


def _gguf_tables(traced: list, doc: dict, wl: Workload, shape) -> tuple[list, int, dict]:
    """The kernels of a workload whose weights a GGUF file holds (``wl.gguf``) with the embedding's and the output's
    tables (each module holding a [vocab, width] matrix outside the layers: the embedding's gather, lm_head's
    GEMM) stored as llama.cpp's quantizer stores them (calculator.gguf_table, Workload.table_bytes), the rows a
    gather reads and lm_head's whole table alike; the weights' change in bytes, and each module's (a pipeline
    stage's weights are its modules')."""
    from ..calculator import gguf_tied

    width, vocab = shape.embed_dim or shape.d_model, shape.vocab_size
    size = max(1, wl.act_dtype.bits // 8)  # traced in the activation dtype, the float dtype of a scaled format's tables
    # a tied table the file holds twice (GPT-2's): lm_head owns its copy
    copy = wl.table_bytes(shape, vocab * width, True) if shape.tie_word_embeddings and not gguf_tied(shape, wl) else 0

    def restored(nbytes: int, output: bool) -> int:
        return wl.table_bytes(shape, nbytes // size, output) if nbytes else 0

    out, deltas = [], {}
    for k in traced:
        tables = [m for m in doc.get("weight_shapes", {}).get(k.module, []) if sorted(m[-2:]) == sorted((vocab, width))]
        # a tied lm_head owns no weight of its own to list: its GEMM's [n, k] is the table's
        tied = k.kind == "matmul" and k.sizes is not None and sorted(k.sizes[-2:]) == sorted((vocab, width))
        if k.layer is not None or not (tables or tied) or k.function:  # (the module's call: its gather or its GEMM)
            out.append(k)
            continue
        output = k.kind == "matmul"
        owned = restored(k.param_bytes, output) or (copy if output else 0)
        if owned != k.param_bytes:
            deltas[k.module] = deltas.get(k.module, 0) + owned - k.param_bytes
        out.append(replace(k, param_bytes=owned,
                           ideal=replace(k.ideal, weight_bytes=restored(k.ideal.weight_bytes, output)),
                           eager=replace(k.eager, weight_bytes=restored(k.eager.weight_bytes, output))))
    return out, sum(deltas.values()), deltas
