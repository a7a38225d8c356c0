"""roofcalc: where every kernel of a transformer's decode and prefill step sits on the roofline.

Library API (the CLI is a thin layer over it)::

    import roofcalc
    shape = roofcalc.load_shape("TinyLlama/TinyLlama-1.1B")      # path, catalog name or hub id
    step = roofcalc.analyze(shape, roofcalc.Workload.decode(batch=1, context=500))
    step.kernel("q_proj").cost.flops                              # 8388608
    roofcalc.to_record(step)                                      # the JSON document, as a dict
"""

from .calculator import DTYPES, Analysis, Cost, DType, Kernel, Workload, analyze, dtype, kv_bytes_per_token
from .errors import RoofcalcError
from .report import render, to_record
from .shapes import ModelShape, shape_from_config
from .sources import catalog, load_config, load_shape

__version__ = "0.1.0"

__all__ = [
    "DTYPES", "Analysis", "Cost", "DType", "Kernel", "ModelShape", "RoofcalcError", "Workload", "analyze",
    "catalog", "dtype", "kv_bytes_per_token", "load_config", "load_shape", "render", "shape_from_config",
    "to_record",
]
