"""A traced step's result: an Analysis whose kernels, parameters and cache are the trace's."""

from __future__ import annotations

from dataclasses import dataclass

from ..calculator import Analysis
from .config import ConfigCheck
from .shape import heads_text


@dataclass(frozen=True)
class TracedAnalysis(Analysis):
    source: str = "traced"
    view: str = "ideal"  # which bytes the kernels carry: ideal | eager
    traced_kv_bytes_per_token: int = 0
    traced_cache_bytes: int = 0  # the real cache after the step
    traced_params: int = 0
    traced_param_bytes: int = 0
    check: ConfigCheck | None = None
    note: str = ""
    logits: str = "last"  # the positions lm_head ran on: "last", or "all" (a model without logits_to_keep)
    layer_heads: tuple = ()  # (layer type, N, K, H, layers) per kind of layer, where the layers differ
    language_params: int | None = None  # a multimodal model's: its language model's share of traced_params
    model_class: str = ""  # the transformers class traced (its _tp_plan names lm_head's split)
    bare_params: tuple = ()  # (path in its layer, name, numel, bytes, layer): a module's own beside its submodules
    expert_params: int = 0  # the routed experts' parameters (stacks on no kernel), whatever format stores them
    kernel_layers: tuple = ()  # the layers each kernel row ran in (merged rows), where known
    dense_experts: bool = False  # its experts counted as transformers computes them, every token through every one

    @property
    def heads_text(self) -> str:
        """The header's heads where the layers differ in heads or head size, else ''."""
        return heads_text(self.layer_heads) if self.layer_heads else ""

    @property
    def params(self) -> int:
        return self.traced_params

    @property
    def active_params(self) -> int:
        return self.traced_params

    @property
    def weight_storage_bytes(self) -> int:
        return self.traced_param_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        return self.traced_kv_bytes_per_token

    @property
    def memory_bytes(self) -> int:
        return self.traced_param_bytes + self.traced_cache_bytes
