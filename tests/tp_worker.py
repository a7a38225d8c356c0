"""One rank of a real tensor-parallel run (torch.distributed, gloo, CPU): load a saved model with
transformers' own plan (tp_plan="auto"), prefill, then one decode step, and write what the rank ran:
its FLOPs (FlopCounterMode) and every collective with its input bytes (a dispatch mode over the
c10d ops), and the routed experts' FLOPs apart. Run by tests/test_parallel.py through torch.distributed.run;
a sixth argument ``ep`` runs transformers' expert-parallel plan instead (DistributedConfig(tp_size=N, ep_size=N):
attention split by heads over the N ranks, E/N whole experts a rank on the batch they share, an all-reduce
summing the experts' outputs).

Routed experts split on their width under tensor parallelism, as serving engines and roofcalc's --tp split
them: transformers' own styles for it (packed_colwise gate_up, rowwise down, moe_tp_experts around them)
were in the MoE config classes' plans through 5.24; 5.25 moved the experts to an expert-parallel plan
(whole experts a rank), so there the same three rules are handed to the run as an override of the plan.
DeepSeek-V3's attention likewise (MLA_TP)."""

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

EXPERTS_TP = {"model.layers.*.mlp.experts.gate_up_proj": "packed_colwise",
              "model.layers.*.mlp.experts.down_proj": "rowwise",
              "model.layers.*.mlp.experts": "moe_tp_experts"}
# Qwen2-MoE's plan names no shared expert (transformers would run it whole on every rank): roofcalc splits it as
# Qwen3.5-MoE's plan splits its own (roofcalc.trace.parallel.SHARED_EXPERT), and the run is handed the same rules
SHARED_TP = {"model.layers.*.mlp.shared_expert.gate_proj": "colwise", "model.layers.*.mlp.shared_expert.up_proj": "colwise",
             "model.layers.*.mlp.shared_expert.down_proj": "rowwise"}
# DeepSeek-V3's plan named no attention module through transformers 5.24 (every rank ran every head); 5.25 gives
# it DeepSeek-V2's MLA rules, which roofcalc follows, so a 5.24 run is handed them
MLA_TP = {"model.layers.*.self_attn.q_proj": "colwise", "model.layers.*.self_attn.q_b_proj": "colwise",
          "model.layers.*.self_attn.kv_a_proj_with_mqa": "mla_kv_a_proj", "model.layers.*.self_attn.kv_b_proj": "colwise",
          "model.layers.*.self_attn.o_proj": "rowwise"}
COLLECTIVES = {"all_reduce": "all_reduce", "allreduce_": "all_reduce", "all_gather_into_tensor": "all_gather",
               "allgather_": "all_gather", "all_to_all_single": "all_to_all", "alltoall_base_": "all_to_all",
               "send": "send", "broadcast_": "broadcast"}


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


def _experts(fc) -> int:
    """The routed experts' FLOPs: every layer's ``mlp.experts`` module (not its shared experts)."""
    return sum(sum(v.values()) for k, v in fc.get_flop_counts().items() if k.endswith(".mlp.experts"))


def main() -> None:
    warnings.simplefilter("ignore")
    transformers.logging.set_verbosity_error()
    path, out_dir, batch, prompt = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    ep, pp = sys.argv[5:] == ["ep"], sys.argv[5:] == ["pp"]
    rank = int(os.environ["RANK"])
    # eager attention: its matmuls are visible to FlopCounterMode (the CPU sdpa kernel is not)
    # and the experts' eager loop (one linear per expert reached), whose matmuls it counts too
    config = transformers.AutoConfig.from_pretrained(path)
    # routed experts under layers.*.mlp.experts (Nemotron-H's config holds expert sizes, and its pattern here no
    # expert layer)
    moe = config.model_type in ("mixtral", "qwen3_moe", "deepseek_v2", "deepseek_v3", "minicpm5_moe", "qwen2_moe",
                                 "qwen3_next")
    own = getattr(type(config), "base_model_tp_plan", None) or {}
    rules = {}
    if moe and not ep and not any(".experts" in k for k in own):  # 5.25 on: the experts' TP rules handed over
        rules.update(EXPERTS_TP)
    if getattr(config, "shared_expert_intermediate_size", 0) and not ep and not any("shared_expert" in k for k in own):
        rules.update(SHARED_TP)
    if config.model_type == "deepseek_v3" and not any("self_attn" in k for k in own):  # through 5.24: V2's MLA rules
        rules.update({k: v for k, v in MLA_TP.items()  # q_proj, or q_b_proj after a q LoRA: the one it has
                      if not k.endswith(".q_proj" if config.q_lora_rank else ".q_b_proj")})
    plan = dict(distributed_config=transformers.DistributedConfig(tp_plan=rules)) if rules else dict(tp_plan="auto")
    if pp:  # transformers' pipeline: a stage a rank, layers as even as they go (the first stages one more)
        plan = dict(distributed_config=transformers.DistributedConfig(pp_size=int(os.environ["WORLD_SIZE"])))
    if ep:
        world = int(os.environ["WORLD_SIZE"])
        plan = dict(distributed_config=transformers.DistributedConfig(tp_size=world, ep_size=world,
                                                                      **({"tp_plan": rules} if rules else {})))
    model = transformers.AutoModelForCausalLM.from_pretrained(path, **plan, dtype=torch.float32,
                                                              attn_implementation="eager",
                                                              **({"experts_implementation": "eager"} if moe else {})
                                                              ).eval()
    # inference only: FlopCounterMode's module tracker hooks the gradients of a module's inputs, which fails on a
    # parameter handed to a module call (Nemotron-H's Mamba mixer under the plan)
    model.requires_grad_(False)
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
        record["prefill"] = {"flops": fc.get_total_flops(), "collectives": mode.seen, "experts": _experts(fc)}
        cache = out.past_key_values
        mode = Collectives()
        with mode, FlopCounterMode(display=False) as fc:
            model(input_ids=torch.zeros((batch, 1), dtype=torch.long), past_key_values=cache, use_cache=True)
        record["decode"] = {"flops": fc.get_total_flops(), "collectives": mode.seen, "experts": _experts(fc)}
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(record, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
