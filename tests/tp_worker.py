"""One rank of a real tensor-parallel run (torch.distributed, gloo, CPU): load a saved model with
transformers' own plan (tp_plan="auto"), prefill, then one decode step, and write what the rank ran:
its FLOPs (FlopCounterMode) and every collective with its input bytes (a dispatch mode over the
c10d ops). Run by tests/test_parallel.py through torch.distributed.run."""

from __future__ import annotations

import json
import os
import sys
import warnings

import torch
import torch.distributed as dist
import transformers
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

COLLECTIVES = {"all_reduce": "all_reduce", "allreduce_": "all_reduce", "all_gather_into_tensor": "all_gather",
               "allgather_": "all_gather", "all_to_all_single": "all_to_all", "alltoall_base_": "all_to_all"}


class Collectives(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._overloadpacket.__name__
        if name in COLLECTIVES and ("c10d" in str(func)):
            first = next(t for t in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor))
            self.seen.append([COLLECTIVES[name], first.numel() * first.element_size()])
        return func(*args, **kwargs)


def main() -> None:
    warnings.simplefilter("ignore")
    transformers.logging.set_verbosity_error()
    path, out_dir, batch, prompt = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rank = int(os.environ["RANK"])
    # eager attention: its matmuls are visible to FlopCounterMode (the CPU sdpa kernel is not)
    # and the experts' eager loop (one linear per expert reached), whose matmuls it counts too
    moe = any(k in transformers.AutoConfig.from_pretrained(path).to_dict()
              for k in ("num_local_experts", "num_experts", "n_routed_experts"))
    model = transformers.AutoModelForCausalLM.from_pretrained(path, tp_plan="auto", dtype=torch.float32,
                                                              attn_implementation="eager",
                                                              **({"experts_implementation": "eager"} if moe else {})
                                                              ).eval()
    local = [p.to_local() if hasattr(p, "to_local") else p for p in model.parameters()]
    # a checkpoint's tensors: the parameters and the persistent buffers (DeepSeek-V3's score correction)
    persistent = set(model.state_dict())
    buffers = sum(b.numel() for n, b in model.named_buffers() if n in persistent)
    record = {"params": sum(t.numel() for t in local) + buffers, "tied": model.config.tie_word_embeddings}
    with torch.no_grad():
        ids = torch.zeros((batch, prompt), dtype=torch.long)
        mode = Collectives()
        with mode, FlopCounterMode(display=False) as fc:
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        record["prefill"] = {"flops": fc.get_total_flops(), "collectives": mode.seen}
        cache = out.past_key_values
        mode = Collectives()
        with mode, FlopCounterMode(display=False) as fc:
            model(input_ids=torch.zeros((batch, 1), dtype=torch.long), past_key_values=cache, use_cache=True)
        record["decode"] = {"flops": fc.get_total_flops(), "collectives": mode.seen}
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(record, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
