"""Recorded ops grouped into kernels, and identical layers' kernels merged into one row with a count."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..calculator import Cost, Kernel, MatmulSizes
from .record import GROUPED_MATMULS, _Op


_LAYER = re.compile(r"^(.*?\b(?:layers|h|blocks|layer|decoder\.layers))\.(\d+)(?:\.(.*))?$")


def _layer_split(path: str, lists: tuple[str, ...] = ()) -> tuple[int | None, str, str]:
    """(layer index or None, the path inside the layer, the prefix): 'model.layers.3.mlp.up_proj' ->
    (3, 'mlp.up_proj', 'model.layers'). ``lists``: module lists of one entry per layer under other names,
    a model that keeps each part of its layers in a list of its own (XLM: 'transformer.attentions.3.q_lin'
    -> (3, 'attentions.q_lin', 'transformer'))."""
    m = _LAYER.match(path)
    if m:
        return int(m[2]), m[3] or "", m[1]
    for prefix in lists:
        if path.startswith(prefix + "."):
            index, _, rest = path[len(prefix) + 1:].partition(".")
            if index.isdigit():
                outer, _, own = prefix.rpartition(".")
                return int(index), own + ("." + rest if rest else ""), outer
    return None, path, ""


def _layer_lists(torch, model, layers) -> tuple[str, ...]:
    """The model's module lists of one entry per layer that are not named as layers (XLM's attentions,
    ffns, layer_norm1 and layer_norm2)."""
    if not isinstance(layers, int) or layers < 1:
        return ()
    return tuple(n for n, m in model.named_modules()
                 if n and isinstance(m, torch.nn.ModuleList) and len(m) == layers and not _LAYER.match(n + ".0"))


@dataclass(frozen=True)
class TracedKernel:
    name: str
    layer: int | None
    module: str  # the module path it ran in
    function: str  # "" for a leaf module; the modeling-code function, "attention" or "op:<aten op>"
    kind: str
    dims: str
    ideal: Cost
    eager: Cost
    launches: int
    params: int
    param_bytes: int
    experts: tuple | None = None  # (E, k, (full bytes of each expert weight read in part, ...))
    sizes: tuple | None = None  # a matmul's (m, n, k)
    role: str = ""  # "linear" or "experts" for a decoder layer's weights in a quantized format (they dequantize)


def fused_roles(kernels: list[TracedKernel]) -> list[TracedKernel]:
    """The roles the fused launch models read (``roofline.FUSED``) on a decoder layer's own ops: its residual
    adds (``add`` in the layer's body: "residual", riding on the norm after them, as serving engines' fused
    add-and-norm kernels run them), the product that follows a module's activation (``<mlp>.mul`` after
    ``<mlp>.act_fn``, ``activation_fn`` or ``act``: "rider", one SiLU-and-mul kernel with it), and a gated delta
    net's and a Mamba-2 mixer's decode ops as the engines' kernels (:func:`_recurrent_riders`). Every other kernel
    as it is."""
    out, acts = [], set()
    for k in kernels:
        if k.layer is not None and not k.role and k.kind == "elementwise":
            prefix = k.name.rpartition(".")[0]
            if k.name == "add":
                k = replace(k, role="residual")
            elif k.name.rpartition(".")[2] in ("act_fn", "activation_fn", "act"):
                acts.add((k.layer, prefix))
            elif k.name == f"{prefix}.mul" and (k.layer, prefix) in acts:
                k = replace(k, role="rider")
        out.append(k)
    riders = _recurrent_riders(out)
    in_place = _state_in_place(out)
    return [replace(k, role="rider" if i in riders else k.role, ideal=in_place.get(i, k.ideal))
            for i, k in enumerate(out)]


# a recurrent module's state update, by the op transformers runs it in, and whether the engines run the ops before
# its conv as a kernel: a gated delta net's unpacking of its projections (one copy: SGLang's
# fused_qkvzba_split_reshape_cat, vLLM's cat), a Mamba-2 mixer's A = -exp(A_log) (vLLM's mamba_mixer2.py computes
# it as the weights load: none)
STATE_UPDATES = {"gated_delta_rule": True, "selective_state_update": False}


# the causal conv's own kernel where transformers calls the causal-conv1d package's functions (a decode step's
# update, a prefill's whole conv): the engines' kernel of the same name
CONV_KERNELS = ("causal_conv1d_update", "causal_conv1d_fn")


def recurrent_conv(name: str) -> bool:
    """Whether a traced op is a recurrent mixer's causal conv or transformers' bookkeeping of it (its
    ``causal_conv1d_*`` functions: a gated delta net's, a Mamba-2 mixer's)."""
    return "conv1d" in name


def _recurrent_riders(kernels: list[TracedKernel]) -> set[int]:
    """A recurrent mixer's decode ops that ride on another's launch, as vLLM and SGLang run a decode step's layer in
    a few kernels between its projections: a gated delta net (a module in a layer that runs a ``*gated_delta_rule``
    op: Qwen3-Next's and Qwen3.5's linear attention; vLLM model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py,
    SGLang layers/attention/linear/gdn_backend.py) and a Mamba-2 mixer (``*selective_state_update``: Nemotron-H's,
    Bamba's, Granite 4.0-H's, Falcon-H1's, Zamba2's; vLLM model_executor/layers/mamba/mamba_mixer2.py). Each runs the
    causal conv with its SiLU and its state's update as one kernel (causal_conv1d_update); the state update with
    what computes its inputs and its output and state written in place as one (a gated delta net's gates, beta =
    sigmoid(b) and g = -exp(A_log) softplus(a + dt_bias), in fused_sigmoid_gating_delta_rule_update or
    fused_recurrent_gated_delta_rule_packed_decode; Mamba-2's dt softplus and D skip in selective_state_update);
    and the gated norm as one. Here: in each such module's run of ops (its weight matmuls aside), the ops before
    the conv ride on the first of them (a gated delta net's unpacking, one copy) or all ride (Mamba-2's A,
    STATE_UPDATES), transformers' count of the conv's steps (a cache counter no engine runs) rides wherever it is,
    those after the conv up to the next op that is not its activation ride on the conv, and the ops from there
    through the state update and those after it up to the gated norm (its output's and its state's writes,
    transformers' copy of the state before it) ride on the state update; the rest as they are. A gated delta
    net's prefill takes the same grouping around its chunked delta rule (one kernel, where the engines run several);
    a Mamba-2 prefill runs no selective_state_update and stays as it is."""
    modules = {(k.layer, k.name.rpartition(".")[0], key) for k in kernels if k.layer is not None
               for key in STATE_UPDATES if key in k.name.rpartition(".")[2]}
    riders: set[int] = set()
    for layer, module, key in modules:
        run = [i for i, k in enumerate(kernels) if k.layer == layer and k.name.startswith(module + ".")
               and not (k.kind == "matmul" and k.params)]
        names = [kernels[i].name[len(module) + 1:] for i in run]
        # the conv's kernel: the engines' (causal_conv1d_update, causal_conv1d_fn) where transformers calls it, else
        # the first conv op holding the state (transformers' own conv, a prefill's state copy beside it riding on it)
        conv = next((j for j, n in enumerate(names) if n.split("[")[0].split("#")[0].endswith(CONV_KERNELS)), None)
        if conv is None:
            conv = next((j for j, n in enumerate(names) if recurrent_conv(n) and kernels[run[j]].ideal.kv_bytes), None)
        rule = next((j for j, n in enumerate(names) if key in n), None)
        if conv is None or rule is None or rule < conv:
            continue
        book = [i for i, n in zip(run[:conv], names[:conv]) if recurrent_conv(n)]
        before = [i for i in run[:conv] if i not in book]
        riders.update(book + (before[1:] if STATE_UPDATES[key] else before))
        j = conv + 1
        while j < rule and (names[j] in ("silu", "act", "act_fn") or recurrent_conv(names[j])):
            riders.add(run[j])  # the conv's activation (and the step count, where it follows)
            j += 1
        riders.update(run[j:rule])  # what computes the state update's inputs: in its kernel
        j = rule + 1
        while j < len(run) and not kernels[run[j]].params:
            riders.add(run[j])  # its output and its state, written by the state update's kernel (in place)
            j += 1
    return riders


def _state_in_place(kernels: list[TracedKernel]) -> dict:
    """The ideal (fused) costs of a recurrent mixer's state update where transformers copies the state around it
    (new ideal Cost by kernel index). transformers' decode reads the cache's state into a copy (Mamba-2:
    ``mamba2_scan_forward``, 2 · state bytes), updates the copy (the state update's own read and write) and copies
    the result back into the cache (``mamba2_scan_forward#2``; a gated delta net's ``kv_cache_update`` after its
    delta rule, which read the cache itself): three passes over the state, or two. vLLM's and SGLang's kernels
    (selective_state_update, fused_recurrent_gated_delta_rule_*) read the cache's state and write it in place: one
    read and one write. Here: a copy before the update (it reads the cache, writes no cache) and a copy after it (it
    writes the cache, reads none), each in the update's module and layer, lose the state's bytes (what else they move
    stays), and the update's own read and write of that state count as the cache's; the copy after only where the
    update reads the cache's state (a decode step: a prefill's chunked rule starts from none, and the engines copy
    its final state into the cache too). The eager view keeps transformers' copies."""
    out: dict = {}
    for i, k in enumerate(kernels):
        if k.layer is None or not any(key in k.name.rpartition(".")[2] for key in STATE_UPDATES):
            continue
        module = k.name.rpartition(".")[0]
        run = [j for j, x in enumerate(kernels) if x.layer == k.layer and x.name.startswith(module + ".")
               and not (x.kind == "matmul" and x.params)]
        at = run.index(i)
        cost = k.ideal
        before = next((j for j in reversed(run[:at]) if kernels[j].ideal.kv_read_bytes
                       and not kernels[j].ideal.kv_write_bytes and not recurrent_conv(kernels[j].name)), None)
        copy = kernels[before].ideal if before is not None else None
        if copy is not None and copy.act_write_bytes >= copy.kv_read_bytes and cost.act_read_bytes >= copy.kv_read_bytes:
            state = copy.kv_read_bytes  # the update reads the cache's state, not a copy of it
            cost = replace(cost, act_read_bytes=cost.act_read_bytes - state, kv_read_bytes=cost.kv_read_bytes + state)
            out[before] = replace(copy, kv_read_bytes=0, act_write_bytes=copy.act_write_bytes - state)
        after = next((j for j in run[at + 1:] if kernels[j].ideal.kv_write_bytes
                      and not kernels[j].ideal.kv_read_bytes), None)
        copy = kernels[after].ideal if after is not None else None
        if copy is not None and cost.kv_read_bytes and copy.act_read_bytes >= copy.kv_write_bytes \
                and cost.act_write_bytes >= copy.kv_write_bytes:
            state = copy.kv_write_bytes  # and writes it there in place
            cost = replace(cost, act_write_bytes=cost.act_write_bytes - state,
                           kv_write_bytes=cost.kv_write_bytes + state)
            out[after] = replace(copy, kv_write_bytes=0, act_read_bytes=copy.act_read_bytes - state)
        if cost != k.ideal:
            out[i] = cost
    return out


def _experts_home(name: str) -> str:
    """The routed experts' module a kernel ran in (``mlp.experts`` of ``mlp.experts.act_fn[3]``), or ""."""
    parts = name.split("[")[0].split(".")
    if "experts" not in parts:
        return ""
    return ".".join(parts[:len(parts) - parts[::-1].index("experts")])


def fused_moe_parts(kernels, key: str) -> tuple:
    """``kernels`` (roofcalc Kernels, in order) with each routed-experts module's run tagged as the hand models
    tag theirs (``Kernel.moe``: the fused-MoE class ``key``, its experts, the part, its experts, top-k), so that
    the step prices the run as one fused MoE call (predict.fuse_moe). A run (a module's consecutive kernels in a
    layer) is a fused MoE call when it is one the fitted class describes: a grouped matmul onto 2I (gate and up),
    the kernels between (act_mul), one back from I (down_proj) and at most one after it (combine); or one kernel,
    the module itself, that runs the whole gated experts MLP (gpt-oss's in transformers 5.25: part "experts"; its
    sizes are the gate and up projection's, onto 2I, and its two expert stacks gate_up's and down's, the first
    twice the second, their scales aside). Any other run (experts that are not a gated MLP, attention experts), and every run when
    ``key`` is "" (a format with no fitted class), as it is."""
    out = list(kernels)
    if not key:
        return tuple(out)
    runs: list[list[int]] = []
    for i, k in enumerate(out):
        home = _experts_home(k.name) if k.scope == "layer" else ""
        where = (home, k.name.partition("[")[2])
        if home and runs and runs[-1][0] == where and runs[-1][1][-1] == i - 1:
            runs[-1][1].append(i)
        elif home:
            runs.append((where, [i]))
    for (home, _), idx in runs:
        one = out[idx[0]]
        ew = one.expert_weights
        if len(idx) == 1 and one.name.split("[")[0] == home and ew is not None and len(ew[2]) == 2 and \
                abs(ew[2][0] / max(ew[2][1], 1) - 2) < 0.02 and isinstance(one.sizes, MatmulSizes):  # (its
            # stacks' scales, a block's per 128 x 128 of 2I x H and H x I, move the 2:1 by a percent at most)
            out[idx[0]] = replace(one, moe=(key, ew[0], "experts", ew[0], ew[1]))
            continue
        mats = [j for j in idx if out[j].expert_weights is not None]
        if len(mats) != 2 or mats[0] != idx[0] or idx.index(mats[1]) < len(idx) - 2:
            continue
        up, down = out[mats[0]].sizes, out[mats[1]].sizes
        if not (isinstance(up, MatmulSizes) and isinstance(down, MatmulSizes) and up.n == 2 * down.k):
            continue
        n, top_k = out[mats[0]].expert_weights[:2]
        for j in idx:
            part = "gate_up_proj" if j == mats[0] else "down_proj" if j == mats[1] else \
                "act_mul" if j < mats[1] else "combine"
            out[j] = replace(out[j], moe=(key, n, part, n, top_k))
    return tuple(out)


def _classify(key: int, nbytes: int, write: bool, weights: set, cache: set) -> Cost:
    if key in weights and not write:
        return Cost(weight_bytes=nbytes)
    if key in cache:
        return Cost(kv_write_bytes=nbytes) if write else Cost(kv_read_bytes=nbytes)
    return Cost(act_write_bytes=nbytes) if write else Cost(act_read_bytes=nbytes)


def group_ops(ops: list[_Op], weights: set, cache: set, old_cache: set, finals: set,
              module_params: dict[str, tuple[int, int]], lists: tuple[str, ...] = ()) -> list[TracedKernel]:
    """Kernels in execution order, one per (group, run of that group); ``lists`` as :func:`_layer_split`."""
    producer: dict[int, tuple] = {}
    consumers: dict[int, set] = {}
    for op in ops:
        inst = (op.group, op.instance)
        for key, _ in op.reads:
            consumers.setdefault(key, set()).add(inst)
        for key, _ in op.writes:
            producer.setdefault(key, inst)
    runs: dict[tuple, list[_Op]] = {}
    for op in ops:
        runs.setdefault((op.group, op.instance), []).append(op)
    kernels = []
    for inst, run in runs.items():
        (module, fn), _ = inst
        eager = Cost()
        for op in run:
            for key, nb in op.reads:
                eager = eager + _classify(key, nb, False, weights, cache)
            for key, nb in op.writes:
                eager = eager + _classify(key, nb, True, weights, cache)
        ideal = Cost()
        read_keys, write_keys = {}, {}
        for op in run:
            for key, nb in op.reads:
                if producer.get(key) != inst:
                    read_keys[key] = max(read_keys.get(key, 0), nb)
            for key, nb in op.writes:
                outside = consumers.get(key, set()) - {inst}
                if outside or key in finals:
                    write_keys[key] = max(write_keys.get(key, 0), nb)
        if fn == "kv_cache_update":  # the new positions only: read them, write them once; op by op, as K and V
            # can be views of one storage (GPT-2's split of its fused c_attn output), which one key would count once
            new = 0
            for op in run:
                fresh: dict[int, int] = {}
                for key, nb in op.reads:
                    if producer.get(key) != inst and key not in old_cache and key not in cache:
                        fresh[key] = max(fresh.get(key, 0), nb)
                new += sum(fresh.values())
            ideal = Cost(act_read_bytes=new, kv_write_bytes=new)
        else:
            for key, nb in read_keys.items():
                ideal = ideal + _classify(key, nb, False, weights, cache)
            for key, nb in write_keys.items():
                ideal = ideal + _classify(key, nb, True, weights, cache)
        flops = sum(op.flops for op in run)
        mm = sum(op.matmul_flops for op in run)
        ideal, eager = replace(ideal, flops=flops, matmul_flops=mm), replace(eager, flops=flops, matmul_flops=mm)
        layer, inner, _ = _layer_split(module, lists)
        short = inner if layer is not None else module.split(".", 1)[-1] if module.startswith("model.") else module
        if short == "language_model" or short.startswith("language_model."):  # a multimodal model's decoder,
            short = short[len("language_model."):] or "model"  # named as a causal LM's: norm, model.arange
        if fn == "attention":
            name, kind = (f"{short}.attention" if short else "attention"), "attention"
        elif fn and not fn.startswith("op:"):
            name, kind = (f"{short}.{fn}" if short else fn), "elementwise"
        elif fn:
            name, kind = (f"{short}.{fn[3:]}" if short else fn[3:]), "elementwise"
        else:
            name = short or "model"
            kind = "matmul" if mm else "elementwise"
        if mm and kind == "elementwise":
            kind = "matmul"
        if not flops and kind == "elementwise" and not eager.weight_bytes:
            kind = "memory"
        params, pbytes = module_params.get(module, (0, 0)) if not fn else (0, 0)
        mm_op = next((op for op in run if op.matmul_flops), None)
        dims = mm_op.dims if mm_op is not None else run[0].dims
        sizes = mm_op.sizes if mm_op is not None and kind == "matmul" else None
        if sizes is not None and not fn and mm_op.name not in GROUPED_MATMULS:  # a linear prints as the hand models do
            dims = MatmulSizes(*sizes).text
        parts = {key: nb for op in run if op.experts for key, nb in op.experts[2]}
        first = next((op.experts for op in run if op.experts), None)
        experts = (first[0], first[1], tuple(parts.values())) if first else None
        kernels.append(TracedKernel(name, layer, module, fn or "", kind, dims, ideal, eager,
                                    sum(op.launches for op in run), params, pbytes,
                                    experts, sizes))
    # a model whose layers are entries of several lists runs its residuals between them in the module that
    # holds the lists (XLM's transformer): those ops belong to the layer whose entries ran last
    outers = {p.rpartition(".")[0] for p in lists}
    layer = None
    for i, k in enumerate(kernels):
        if k.layer is not None and any(k.module.startswith(p + ".") for p in lists):
            layer = k.layer
        elif k.layer is None and layer is not None and k.module in outers:
            kernels[i] = replace(k, layer=layer)
    return kernels


def merge_layers(kernels: list[TracedKernel], view: str) -> list[Kernel]:
    """roofcalc kernels: identical layers' kernels become one row with a count. A name that runs
    twice in one layer (the experts' two grouped matmuls) is numbered: name, name#2."""
    return merged_layers(kernels, view)[0]


def merged_layers(kernels: list[TracedKernel], view: str) -> tuple[list[Kernel], list[tuple]]:
    """:func:`merge_layers`' rows, and the layers each row ran in (() for one outside the layers)."""
    seen: dict[tuple, int] = {}
    numbered = []
    for k in kernels:
        n = seen[(k.layer, k.name)] = seen.get((k.layer, k.name), 0) + 1
        numbered.append(replace(k, name=k.name if n == 1 else f"{k.name}#{n}"))
    kernels = numbered
    rows: dict[tuple, list] = {}
    for k in kernels:
        cost = k.ideal if view == "ideal" else k.eager
        key = (k.name, k.kind, k.dims, cost, k.launches, k.params, k.param_bytes, k.experts)
        if key in rows:
            rows[key][1] += 1
            rows[key][2].append(k.layer)
        else:
            rows[key] = [k, 1, [k.layer]]
    names: dict[str, int] = {}
    for (name, *_rest) in rows:
        names[name] = names.get(name, 0) + 1
    out, taken, layer_sets = [], {}, []
    for (name, kind, dims, cost, launches, params, pbytes, _), (k, n, layers) in rows.items():
        layer_sets.append(tuple(x for x in layers if x is not None))
        label = name
        if names[name] > 1:  # the same module costs differently in different layers (sliding, dense/MoE)
            label = f"{name}[{k.layer}]" if k.layer is not None else f"{name}[{taken.get(name, 0)}]"
            taken[name] = taken.get(name, 0) + 1
        scope = "layer" if k.layer is not None else "model"
        out.append(Kernel(label, kind, scope, n, dims, cost, params=params, param_bytes=pbytes, role=k.role,
                          launches=launches, expert_weights=k.experts, sizes=_sizes(k)))
    return out, layer_sets


def _sizes(k: TracedKernel) -> MatmulSizes | None:
    return MatmulSizes(*k.sizes) if k.sizes else None
