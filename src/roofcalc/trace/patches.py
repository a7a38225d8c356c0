"""What the trace patches into transformers while a step runs: masks, positional rotaries, expert loops."""

from __future__ import annotations

import contextlib

from .record import KERNEL_FUNCTIONS


def _expert_matmul_fallback(torch):
    """transformers' grouped-matmul experts (``grouped_mm``, its default) call ``torch._grouped_mm``, whose
    fast kernel is bf16 only: on a GPU another dtype runs ATen's fallback, one matmul per expert that has
    tokens, and the meta device refuses it outright ("Expected inputs of BF16 type"). For weights in any
    other dtype transformers' dispatcher is made to take its own fallback instead,
    ``transformers::grouped_mm_fallback``: the same per-expert loop of ``mm`` (each token through its k
    experts: the grouped matmul's FLOPs, the weights of the experts reached), which runs on meta tensors
    as one op of the grouped matmul's shape. bf16 runs as before. Returns the undo."""
    try:
        from transformers.integrations import moe
    except ImportError:  # pragma: no cover - a transformers without grouped experts
        return lambda: None
    can = getattr(moe, "_can_use_grouped_mm", None)
    if can is None or not hasattr(torch.ops.transformers, "grouped_mm_fallback"):
        return lambda: None

    def bf16_only(input, weight, offs):
        return weight.dtype == torch.bfloat16 and can(input, weight, offs)

    moe._can_use_grouped_mm = bf16_only

    def undo():
        moe._can_use_grouped_mm = can

    return undo


def _grouped_mm(torch):
    """The grouped matmul the substitute expert loops run: transformers' own dispatcher (so another dtype
    than bf16 takes its per-expert fallback, as :func:`_expert_matmul_fallback` makes it), else torch's."""
    try:
        from transformers.integrations.moe import _grouped_mm as grouped
    except ImportError:  # pragma: no cover - an older transformers
        return lambda input, weight, offs: torch._grouped_mm(input, weight, offs=offs)
    return grouped


def _one_sequence_per_row(transformers):
    """A traced step holds one unpadded sequence per batch row. transformers' masks find that out by
    reading tensor values a meta tensor does not have: they look for several sequences packed into a
    row in the position ids (Gemma 4, Moshi), and whether a padding mask the model made for itself is
    all ones before they skip it (BioGPT, BART's decoder). Answer both as for no packing and no
    padding, without reading: no packed sequences, and the mask decision (causal or bidirectional) of a
    model given no padding mask (as a Llama is). Encoder-style models (RoFormer, RemBERT, BigBird) look for padding tokens in
    the ids to warn of a missing mask: there are none, so that warning is skipped. Returns the undo."""
    try:
        from transformers import masking_utils, modeling_utils
    except ImportError:  # an older transformers without these functions
        return lambda: None
    pretrained = modeling_utils.PreTrainedModel
    warn = pretrained.__dict__.get("warn_if_padding_and_no_attention_mask")
    if warn is not None:
        pretrained.warn_if_padding_and_no_attention_mask = lambda self, input_ids, attention_mask: None
    saved = {name: getattr(masking_utils, name, None) for name in ("find_packed_sequence_indices",
                                                                  "_ignore_causal_mask_sdpa",
                                                                  "_ignore_bidirectional_mask_sdpa")}
    if saved["find_packed_sequence_indices"] is not None:
        masking_utils.find_packed_sequence_indices = lambda position_ids: None

    def unpadded(ignore):
        def call(padding_mask, *args, **kwargs):
            meta = padding_mask is not None and getattr(padding_mask, "device", None) is not None and \
                padding_mask.device.type == "meta"
            return ignore(None if meta else padding_mask, *args, **kwargs)

        return call

    for name in ("_ignore_causal_mask_sdpa", "_ignore_bidirectional_mask_sdpa"):
        if saved[name] is not None:
            setattr(masking_utils, name, unpadded(saved[name]))

    def undo():
        for name, fn in saved.items():
            if fn is not None:
                setattr(masking_utils, name, fn)
        if warn is not None:
            pretrained.warn_if_padding_and_no_attention_mask = warn

    return undo


def _positional_rotaries(torch, model, dtype, positions: int):
    """Rotary embeddings that read their position ids' values cannot run on meta tensors, which hold none:
    dynamic (NTK) scaling grows its frequencies with the step's last position (transformers'
    ``dynamic_rope_update``), Phi-3.5-MoE's longrope rotary picks its scale by it. Each such module (found by running
    it once on meta tensors) runs its own forward on the CPU instead, on the step's real positions (one
    unpadded sequence per row, the first at ``start[0]``) and with the buffers its class computes from the
    config, and hands meta tensors of its outputs' shapes on: the ops it records are the module's own,
    those that read the positions included (a GPU runs them too). Returns (the undo, ``start``)."""
    start, patched = [0], []
    base = torch.arange(positions)
    x, ids = torch.empty((1, 1, 1), dtype=dtype, device="meta"), torch.zeros((1, 1), dtype=torch.long, device="meta")
    for module in model.modules():
        if not hasattr(module, "rope_init_fn") and "inv_freq" not in dict(module.named_buffers(recurse=False)):
            continue
        try:
            module.forward(x, ids)
            continue
        except RuntimeError as exc:  # reads a value: "Tensor.item() cannot be called on meta tensors"
            if "meta" not in str(exc):
                continue
        except Exception:  # another signature (per-layer-type rotaries): it runs as it is
            continue
        try:
            twin = type(module)(module.config)
        except Exception:  # a class that cannot be rebuilt alone: the trace refuses as before
            continue

        def forward(x, position_ids, *args, _twin=twin, **kwargs):
            at = base[start[0]:start[0] + position_ids.shape[-1]].expand(position_ids.shape)
            out = _twin.forward(torch.empty(0, dtype=x.dtype), at, *args, **kwargs)
            return tuple(torch.empty(t.shape, dtype=t.dtype, device=x.device) for t in out)

        module.forward = forward
        patched.append(module)

    def undo():
        for module in patched:
            del module.forward

    return undo, start


def _dbrx_experts(torch, module):
    """DBRX: DbrxExperts hands its GLU each expert the router reached (``nonzero``)."""
    grouped = _grouped_mm(torch)

    def glu(self, hidden_states, top_k_index, top_k_weights):  # DbrxExpertGLU on every (token, expert) pair
        k, d = top_k_index.shape[-1], hidden_states.shape[-1]
        stack = (self.moe_num_experts, self.ffn_hidden_size, d)
        expert_ids, order = torch.sort(top_k_index.reshape(-1))
        rows = hidden_states[order // k]
        offsets = torch.cumsum(torch.histc(expert_ids.float(), bins=self.moe_num_experts, min=0,
                                           max=self.moe_num_experts - 1), dim=0, dtype=torch.int32)
        gate = grouped(rows, self.w1.view(stack).transpose(1, 2), offsets)
        up = grouped(rows, self.v1.view(stack).transpose(1, 2), offsets)
        out = grouped(self.activation_fn.forward(gate) * up, self.w2.view(stack), offsets)
        out = out * top_k_weights.reshape(-1)[order, None]
        return torch.zeros_like(hidden_states).index_add_(0, order // k, out)

    def experts(self, hidden_states, top_k_index, top_k_weights):
        batch = hidden_states.shape[0]
        flat = hidden_states.reshape(-1, self.hidden_size)
        return self.mlp(flat, top_k_index, top_k_weights).view(batch, -1, self.hidden_size)

    return {module.DbrxExpertGLU: glu, module.DbrxExperts: experts}, (module.DbrxExpertGLU,)


def _jetmoe_experts(torch, module):
    """JetMoE: its router hands each expert stack the count of tokens it reached (``tolist``), and the
    stack splits its rows by them; here the counts stay a tensor, the offsets of one grouped matmul."""
    grouped = _grouped_mm(torch)

    def gating(self, hidden_states):  # JetMoeTopKGating, its counts per expert kept on the device
        logits = self.layer(hidden_states).float()
        top_logits, top_experts = logits.topk(self.top_k, dim=1)
        gates = torch.softmax(top_logits, dim=1).type_as(hidden_states).flatten()
        counts = torch.zeros((hidden_states.shape[0], self.num_experts), dtype=torch.long,
                             device=hidden_states.device).scatter(1, top_experts, 1).sum(0)
        _, order = top_experts.flatten().sort(0)
        return order, order.div(self.top_k, rounding_mode="trunc"), gates[order], counts, logits

    def stack(self, inputs, expert_size):  # JetMoeParallelExperts: every row through its expert
        offsets = torch.cumsum(expert_size, dim=0, dtype=torch.int32)
        return grouped(inputs, self.weight.transpose(1, 2), offsets)

    return {module.JetMoeTopKGating: gating, module.JetMoeParallelExperts: stack}, ()


# model package -> (module name, substitutes): expert loops that read routing values
_EXPERT_LOOPS = {"dbrx": ("modeling_dbrx", _dbrx_experts), "jetmoe": ("modeling_jetmoe", _jetmoe_experts)}


def _grouped_experts(torch, model_type: str):
    """Expert loops that ask which experts a batch reached (``nonzero`` or ``tolist`` on the router's
    choice, as DBRX's and JetMoE's do) cannot run on meta tensors, which hold no values. In a trace such
    an experts module runs as one grouped matmul per expert weight stack, as transformers' own
    ``grouped_mm`` experts run Mixtral's: the same FLOPs (each token through its k experts) and, through
    the recorder, the weights of the experts the batch reaches. The modules and their weights are the
    model's own. Returns (the undo, the classes whose modules are each one kernel)."""
    if model_type not in _EXPERT_LOOPS:
        return (lambda: None), ()
    import importlib

    name, substitutes = _EXPERT_LOOPS[model_type]
    try:
        module = importlib.import_module(f"transformers.models.{model_type}.{name}")
    except ImportError:  # pragma: no cover - a transformers without the model
        return (lambda: None), ()
    forwards, one_kernel = substitutes(torch, module)
    return _swap_forwards(forwards), one_kernel


def _swap_forwards(forwards: dict):
    """Each class's forward replaced by its substitute; returns the undo."""
    undo = [(cls, cls.__dict__["forward"]) for cls in forwards]
    for cls, fn in forwards.items():
        cls.forward = fn

    def restore():
        for cls, fn in undo:
            cls.forward = fn

    return restore


def _llama4_routed(torch, module):
    """Llama-4: Llama4TextMoe runs every token through every expert (one dense batched matmul over each
    stack, the rows of experts the router did not pick scaled by zero), which is what transformers computes
    and what the eager view counts. A fused MoE (vLLM's, SGLang's) runs each token through the k experts
    its router picked: the router's top-k and sigmoid, the rows sorted by expert and scaled by their scores
    (Llama-4 scales the experts' input, not their output), one grouped matmul per stack, the rows summed
    back per token, as transformers' own ``grouped_mm`` experts run Mixtral's (their ops one kernel per
    stack, :data:`record.KERNEL_FUNCTIONS`), then added onto the shared expert's output. The modules and
    their weights are the model's own."""
    grouped = _grouped_mm(torch)

    def routed_experts(self, hidden_states, index, scores):  # Llama4TextExperts on each (token, expert) pair
        k = index.shape[-1]
        expert_ids, order = torch.sort(index.reshape(-1))
        tokens = order // k
        rows = hidden_states[tokens] * scores.reshape(-1)[order, None]
        offsets = torch.cumsum(torch.histc(expert_ids.float(), bins=self.num_experts, min=0,
                                           max=self.num_experts - 1), dim=0, dtype=torch.int32)
        gate, up = grouped(rows, self.gate_up_proj, offsets).chunk(2, dim=-1)
        out = grouped(up * self.act_fn(gate), self.down_proj, offsets)
        return torch.zeros_like(hidden_states).index_add_(0, tokens, out)

    def router(self, hidden_states):  # Llama4Router: the k picked experts' scores, not a row of every expert's
        logits = torch.nn.functional.linear(hidden_states, self.weight, self.bias)
        top, index = torch.topk(logits, self.top_k, dim=1)
        return torch.sigmoid(top.float()).to(hidden_states.dtype), index, logits

    def experts(self, hidden_states, index, scores):
        return routed_experts(self, hidden_states, index, scores)

    def moe(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        scores, index, logits = self.router(hidden_states)
        routed = self.experts(hidden_states, index, scores)
        return self.shared_expert(hidden_states) + routed, logits

    KERNEL_FUNCTIONS.add(routed_experts.__code__)
    return {module.Llama4Router: router, module.Llama4TextExperts: experts, module.Llama4TextMoe: moe}


# model package -> (module name, substitutes): experts transformers computes densely (every token through every
# expert); the ideal view is traced again with the routed program a fused MoE runs (trace_raw's "routed")
_DENSE_EXPERTS = {"llama4": ("modeling_llama4", _llama4_routed)}


def _routed_experts(torch, model, apply: bool = True) -> tuple:
    """(the undo, True) when ``model`` runs modules of a modeling file :data:`_DENSE_EXPERTS` names, its routed
    substitutes put in place if ``apply``; else (a no-op, False). Another model imports nothing of it; a
    transformers whose classes there are not the ones substituted is refused in one line."""
    import importlib

    from ..errors import RoofcalcError

    paths = {type(m).__module__ for m in model.modules()}
    for package, (name, substitutes) in _DENSE_EXPERTS.items():
        path = f"transformers.models.{package}.{name}"
        if path not in paths:
            continue
        module = importlib.import_module(path)
        try:
            forwards = substitutes(torch, module)
        except AttributeError as exc:
            raise RoofcalcError(f"{path} is not what roofcalc's routed program for its experts replaces ({exc}); "
                                f"use --impl hf-eager, which counts transformers' own program") from None
        return (_swap_forwards(forwards) if apply else (lambda: None)), True
    return (lambda: None), False


# transformers' chunked gated delta rule (Qwen3-Next's, Qwen3.5's, OLMo-Hybrid's linear attention) scans a prompt's
# chunks in a Python loop, each chunk a dozen ops that a meta tensor runs through PyTorch's Python reference
# implementations: filling a decode step's cache at context 8,000 took about 8 s a trace for Qwen3-Next
CHUNKED_RULES = ("torch_chunk_gated_delta_rule",)


@contextlib.contextmanager
def _unrecorded_chunked_rules(torch, model):
    """While a decode step's context fills its cache unrecorded on the meta device: each modeling module's chunked
    gated delta rule returns its output and final state at their shapes and dtypes, without the scan (the pass
    is not recorded and a meta tensor holds no values; the step traced after it runs the recurrent rule as it
    is). Outside, nothing changes."""
    import sys

    modules = {sys.modules.get(type(m).__module__) for m in model.modules()} - {None}
    saved = [(mod, name, getattr(mod, name)) for mod in modules for name in CHUNKED_RULES if hasattr(mod, name)]

    def shapes_only(query, key, value, g=None, beta=None, chunk_size=64, initial_state=None,
                    output_final_state=False, **kwargs):
        batch, length, _, k_dim = key.shape
        v_heads, v_dim = value.shape[-2:]
        out = torch.empty((batch, length, v_heads, v_dim), dtype=query.dtype, device=query.device)
        state = torch.empty((batch, v_heads, k_dim, v_dim), dtype=torch.float32, device=query.device) \
            if output_final_state else None
        return out, state

    for mod, name, _ in saved:
        setattr(mod, name, shapes_only)
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)
