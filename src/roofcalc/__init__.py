"""roofcalc: where every kernel of a transformer's decode and prefill step sits on the roofline.

Library API (the CLI is a thin layer over it)::

    import roofcalc
    shape = roofcalc.load_shape("TinyLlama/TinyLlama-1.1B")      # path, catalog name or hub id
    step = roofcalc.analyze(shape, roofcalc.Workload.decode(batch=1, context=500))
    step.kernel("q_proj").cost.flops                              # 8388608
    roofcalc.to_record(step)                                      # the JSON document, as a dict
    roofcalc.to_pandas(step)                                      # one row per kernel (needs pandas)
"""

from .calculator import DTYPES, Analysis, Cost, DType, Kernel, Workload, analyze, dtype, kv_bytes_per_token
from .errors import RoofcalcError
from .report import render, to_record
from .shapes import ModelShape, shape_from_config
from .sources import catalog, load_config, load_shape

__version__ = "0.1.0"

# The submodules a single step does not import (startup), reachable as attributes after a bare `import roofcalc`
# all the same (PEP 562): `roofcalc.sweep.sweep(...)` imports roofcalc.sweep on first use.
_LAZY = ("sweep", "parallel", "collectives", "fitting", "frames", "kerneldb", "measure", "page", "plotting", "profile",
         "trace")


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_pandas(result):
    """A result as a pandas DataFrame: one row per kernel, or per point of a sweep (roofcalc.frames)."""
    from .frames import to_pandas as frame

    return frame(result)


def step_to_pandas(result):
    """A single step's totals, times and bound as a one-row DataFrame (roofcalc.frames)."""
    from .frames import step_to_pandas as frame

    return frame(result)

__all__ = [
    "DTYPES", "Analysis", "Cost", "DType", "Kernel", "ModelShape", "RoofcalcError", "Workload", "analyze",
    "catalog", "dtype", "kv_bytes_per_token", "load_config", "load_shape", "render", "shape_from_config",
    "step_to_pandas", "to_pandas", "to_record",
]
