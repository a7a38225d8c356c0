"""A step on a CPU profile that names no datasheet (its own nominal roof), as the plot and the page tests take it."""

from __future__ import annotations

import json


def own_nominal_roofline(tmp_path):
    """TinyLlama fp32 at batch 1, context 500, on a made-up CPU profile (28.6 GB/s, 159 GFLOP/s fp32) with no
    'nominal': Roofline.own_nominal."""
    from roofcalc import Workload, analyze, load_shape
    from roofcalc.hardware import load_profile
    from roofcalc.roofline import roofline

    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"name": "some CPU", "kind": "cpu", "bandwidth_bytes_per_s": 2.86e10,
                                "peak_flop_per_s": {"fp32": 1.59e11}}))
    prof = load_profile(str(path))
    fp32 = dict(weight_dtype="fp32", act_dtype="fp32", kv_dtype="fp32")
    return roofline(analyze(load_shape("TinyLlama/TinyLlama-1.1B"), Workload.decode(1, 500, **fp32)), prof,
                    measured_profile=prof)
