"""The traces cached on disk (~/.cache/roofcalc/traces): their format, file names and kernel documents."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..calculator import Workload
from .group import TracedKernel


TRACE_FORMAT = 20  # 20: experts per token under Aria's, Gemma 4's and Hunyuan-A13B's names (a list of one a layer);
# 19: experts transformers computes densely (Llama-4) traced again routed, for the ideal view (the
# cache keyed by --experts too; attention on the CPU counted); 18: a cache update's new positions counted op by op (K and V views of one storage); 17: the parameters a module holds beside its submodules (attention sinks); 16: each module's parameters and layer, each cache layer's bytes (a pipeline stage's share); 15: a multimodal model's encoders counted by their state dicts (persistent buffers too); 14: an attention called straight from a forward named attention; 13: the encoders of a causal LM built from a whole multimodal config (Mllama); 12: a multimodal model's language-model parameters, or the encoders its text config leaves out; 11: a matmul's sizes (m, n, k) as integers; the cache file format (2: expert weights carry their full bytes; 3: recurrent states in the
# cache; 4: the keys and values of an encoder-decoder cache; 5: each module's weight shapes; 6: which logits;
# 7: sizes read under another name and rotary keys read into rope_parameters are no longer listed as ignored;
# 8: kernels named by the function a decorator wraps; 9: module lists of one entry per layer under other names
# are layers; 10: a wrapper's experts per token read from its text config, Kimi-K2.5's)


def _cache_dir() -> Path:
    base = os.environ.get("ROOFCALC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roofcalc")
    return Path(base) / "traces"


def keep(path: Path, doc: dict) -> None:
    """``doc`` written to ``path`` through a renamed temporary file; on a read-only home nothing is kept
    (the work is done again next time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


def _cache_key(cfg: dict, wl: Workload, tf_version: str) -> str:
    doc = json.dumps({"cfg": cfg, "tf": tf_version, "format": TRACE_FORMAT, "phase": wl.phase, "batch": wl.batch,
                      "t": wl.query_tokens, "s": wl.kv_len, "dtype": wl.act_dtype.name, "logits": wl.logits_all,
                      "experts": wl.experts},
                     sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()[:32]


def _kernel_doc(k: TracedKernel) -> dict:
    from dataclasses import asdict

    return {"name": k.name, "layer": k.layer, "module": k.module, "function": k.function, "kind": k.kind, "dims": k.dims, "ideal": asdict(k.ideal),
            "eager": asdict(k.eager), "launches": k.launches, "params": k.params, "param_bytes": k.param_bytes,
            "experts": list(k.experts[:2]) + [list(k.experts[2])] if k.experts else None,
            "sizes": list(k.sizes) if k.sizes else None}
