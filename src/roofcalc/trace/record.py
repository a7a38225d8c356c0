"""The ATen dispatch recorder: every op a step runs, its module, its calling function, FLOPs and storages."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path


ATTENTION_FUNCTIONS = ("attention_forward", "sdpa_attention_forward", "eager_attention_forward",
                       "flash_attention_forward", "flex_attention_forward")
NO_DATA_OPS = {"_unsafe_view", "alias", "detach", "lift_fresh", "_reshape_alias", "empty", "empty_like",
               "empty_strided", "new_empty", "new_empty_strided", "resize_", "set_", "_local_scalar_dense", "sym_size",
               "sym_stride", "sym_numel", "sym_storage_offset"}
ARITHMETIC = {"add", "sub", "mul", "div", "neg", "pow", "rsqrt", "sqrt", "exp", "log", "tanh", "sigmoid", "silu",
              "gelu", "relu", "softmax", "_softmax", "_safe_softmax", "mean", "sum", "cos", "sin", "erf", "reciprocal",
              "where", "maximum", "minimum", "clamp", "native_layer_norm", "rsub", "abs", "addcmul", "addcdiv",
              "masked_fill", "_log_softmax", "var_mean", "topk", "sort", "cumsum", "argmax", "max", "min"}
# expert matmuls over [E, K, N] weight stacks: torch's grouped matmul, and transformers' per-expert loop
# (its fallback where the grouped kernel does not take the dtype), one op on the meta device
GROUPED_MATMULS = ("_grouped_mm", "grouped_mm_fallback")
# the code of functions outside transformers that name a kernel as a modeling-code function does (the routed
# experts a trace runs in place of a dense program: patches._llama4_routed)
KERNEL_FUNCTIONS: set = set()
# the inner functions of transformers' decorators (a hub kernel's reference fallback runs inside "wrapped"):
# a kernel is named by the function they wrap
DECORATOR_SHIMS = {"wrapped", "wrapper", "wrapped_func", "wrapped_fn", "inner"}


@dataclass
class _Op:
    name: str  # aten op, without overload
    group: tuple[str, str]  # (module path, function or "op:<name>")
    instance: int  # which run of that group this op belongs to
    flops: int
    matmul_flops: int
    reads: list  # (storage key, bytes)
    writes: list
    launches: int
    dims: str
    experts: tuple | None = None  # (E, k, ((storage key, full bytes), ...)): expert weights read in part
    sizes: tuple | None = None  # a matmul's (m, n, k): rows, outputs, reduction depth


def _storage_key(t) -> int:
    return t.untyped_storage()._cdata


def _nbytes(t) -> int:
    """Bytes a tensor's op touches: its elements, but no more than its storage holds (an expanded view)."""
    n = t.numel() * t.element_size()
    try:
        return min(n, t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):  # pragma: no cover - a storage-less tensor
        return n


def _cpu_attention(torch) -> dict:
    """The fused attention scaled_dot_product_attention runs on real CPU tensors (a trace on the CPU), whose FLOPs
    torch's counter does not count: the two matmuls' 2·B·H·Tq·Tk·(Dq + Dv), the full rectangle, as its formula
    for the GPU kernels and the meta device's math ops count them (H the query's heads)."""
    op = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if op is None:  # pragma: no cover - a torch without it
        return {}

    def flops(query, key, value, *args, out_val=None, **kwargs) -> int:
        b, h, tq, dq = query.shape
        return 2 * b * h * tq * key.shape[-2] * (dq + value.shape[-1])

    return {op: flops}


class _Recorder:
    def __init__(self, torch, model, top_k: int | None = None, experts: str = "expected"):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        flop_registry = {**flop_registry, **_cpu_attention(torch)}

        self.torch, self.model = torch, model
        self.top_k, self.experts = top_k, experts
        self.ops: list[_Op] = []
        self.keep: list = []  # every tensor seen stays alive: storage keys are never reused mid-trace
        self.stack: list = []  # (path, module) of the modules running
        self.names = {m: n for n, m in model.named_modules()}
        paths: dict = {}
        for n, m in model.named_modules(remove_duplicate=False):
            paths.setdefault(m, []).append(n)
        self.shared = {m for m, ps in paths.items() if len(ps) > 1}  # one module under several paths
        self.leaf = {m for m in model.modules() if not any(True for _ in m.children())}
        self.instances: dict[tuple[str, str], int] = {}
        self.last_group: tuple[str, str] | None = None
        import transformers

        self.tf_root = str(Path(transformers.__file__).parent)
        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                recorder.record(func, args, kwargs, out, flop_registry)
                return out

        self.mode = Mode()
        self.hooks = []
        for m in model.modules():
            self.hooks.append(m.register_forward_pre_hook(self._enter))
            self.hooks.append(m.register_forward_hook(self._leave))

    def _enter(self, module, _args):
        name = self.names.get(module, "?")
        if module in self.shared and self.stack:  # named by the module that runs it (XLM's one GELU in every
            outer, parent = self.stack[-1]  # layer's ffn), not by the first path that holds it
            name = next((f"{outer}.{attr}" if outer else attr for attr, child in parent.named_children()
                         if child is module), name)
        self.stack.append((name, module))

    def _leave(self, module, _args, _out):
        self.stack.pop()

    def close(self):
        for h in self.hooks:
            h.remove()

    def restart(self) -> None:
        """Forget the ops recorded so far (a step run again)."""
        self.ops.clear()
        self.instances.clear()
        self.last_group = None

    def fused(self, fn):
        """``fn`` (scaled_dot_product_attention) as one kernel: on a GPU it is one fused launch that
        reads q, k, v (and a mask) and writes its output; the meta device runs it as its math ops."""
        torch, recorder = self.torch, self

        def call(*args, **kwargs):
            start = len(recorder.ops)
            out = fn(*args, **kwargs)
            run = recorder.ops[start:]
            if not run:
                return out
            ins = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
            reads, seen = [], set()
            for t in ins:
                key = _storage_key(t)
                if key not in seen:
                    seen.add(key)
                    reads.append((key, _nbytes(t)))
            first = run[0]
            group, instance = first.group, first.instance
            if group[1].startswith("op:"):  # called straight from a forward (Falcon's): named for what it is,
                group = (group[0], "attention")  # not for the first op the meta device runs it as
                if group != recorder.last_group:
                    recorder.instances[group] = recorder.instances.get(group, 0) + 1
                instance = recorder.instances[group]
                if recorder.instances.get(first.group) == first.instance and not any(
                        o.group == first.group and o.instance == first.instance for o in recorder.ops[:start]):
                    recorder.instances[first.group] -= 1  # that op's run held nothing but the attention
                recorder.last_group = group
            del recorder.ops[start:]
            recorder.ops.append(_Op("scaled_dot_product_attention", group, instance,
                                    sum(o.flops for o in run), sum(o.matmul_flops for o in run), reads,
                                    [(_storage_key(out), _nbytes(out))], 1,
                                    "x".join(f"[{','.join(map(str, t.shape))}]" for t in ins[:2])))
            return out

        return call

    def _function(self) -> str | None:
        """The outermost modeling-code function between the running module's forward and this op."""
        frame, found = sys._getframe(3), None
        while frame is not None:
            code = frame.f_code
            if code.co_name == "forward" and "self" in frame.f_locals and \
                    isinstance(frame.f_locals["self"], self.torch.nn.Module):
                return found
            if code in KERNEL_FUNCTIONS:
                found = code.co_name
            elif code.co_filename.startswith(self.tf_root) and not code.co_name.startswith("_") and \
                    code.co_name not in DECORATOR_SHIMS and \
                    os.sep + "utils" + os.sep not in code.co_filename[len(self.tf_root):]:  # decorators
                found = code.co_name if "cache_utils" not in code.co_filename else "kv_cache_update"
                if "masking_utils" in code.co_filename:
                    found = "attention_mask"
            frame = frame.f_back
        return found

    def record(self, func, args, kwargs, out, registry) -> None:
        torch = self.torch
        name = func._overloadpacket.__name__
        flat_in = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        flat_out = [a for a in torch.utils._pytree.tree_leaves(out) if isinstance(a, torch.Tensor)]
        # every tensor an op touched stays alive to the end: a storage key (its address) freed mid-trace could be
        # another tensor's later, which would then read as the first one's (an input never an op's output too:
        # one made outside the recorded ops)
        self.keep.extend(flat_out)
        self.keep.extend(flat_in)
        if func.is_view or name in NO_DATA_OPS:
            return
        module, mod_obj = self.stack[-1] if self.stack else ("", None)
        fn = None
        # a leaf module is one kernel whatever it calls; elsewhere the calling function names the kernel
        if mod_obj is None or mod_obj not in self.leaf:
            fn = self._function()
        if fn is not None and any(fn.endswith(a) for a in ATTENTION_FUNCTIONS):
            fn = "attention"
        leaf = mod_obj is not None and mod_obj in self.leaf
        group = (module, "" if leaf else fn or f"op:{name}")
        if group != self.last_group:
            self.instances[group] = self.instances.get(group, 0) + 1
            self.last_group = group
        f = registry.get(func._overloadpacket)
        mm = int(f(*args, **kwargs, out_val=out)) if f is not None else 0
        expert_share = None
        launches = 1
        if name in GROUPED_MATMULS:  # [tokens·k, K] rows over [E, K, N] expert weights
            a, b = flat_in[0], flat_in[1]
            mm = 2 * a.shape[0] * a.shape[-1] * b.shape[-1]
            if self.top_k and b.dim() == 3:  # the experts the tokens reach (roofcalc's --experts rule)
                from ..calculator import touched_experts

                n_exp = b.shape[0]
                touched = touched_experts(n_exp, self.top_k, max(1, a.shape[0] // self.top_k), self.experts)
                expert_share = (_storage_key(b), touched / n_exp, n_exp)
                if name == "grouped_mm_fallback":  # one mm per expert that has tokens
                    launches = max(1, round(touched))
        elementwise = sum(t.numel() for t in flat_out) if name in ARITHMETIC else 0
        seen, reads, experts = set(), [], None
        for i, t in enumerate(flat_in):
            key = _storage_key(t)
            if key in seen:
                continue
            seen.add(key)
            nbytes = _nbytes(t)
            if name in ("embedding", "index_select") and i == 0:  # a gather reads the rows it gathers
                nbytes = min(nbytes, sum(_nbytes(o) for o in flat_out))
            if expert_share is not None and key == expert_share[0]:
                experts = (expert_share[2], self.top_k, ((key, nbytes),))
                nbytes = round(nbytes * expert_share[1])
            reads.append((key, nbytes))
        writes = [(_storage_key(t), _nbytes(t)) for t in flat_out]
        operands = [t for t in flat_in if t.dim() >= 2][:2]  # addmm's bias is not an operand
        dims = "x".join(f"[{','.join(map(str, t.shape))}]" for t in operands) if mm else \
            (f"[{','.join(map(str, flat_out[0].shape))}]" if flat_out else "")
        sizes = None
        if mm and len(operands) == 2:  # [.., m, k] x [.., k, n]: the rows every leading dimension adds up to
            a, b = (tuple(int(x) for x in t.shape) for t in operands)
            sizes = (math.prod(a[:-1]), b[-1], a[-1])
        self.ops.append(_Op(name, group, self.instances[group], mm + elementwise, mm, reads, writes, launches, dims,
                            experts, sizes))
