"""The one dtype vocabulary (roofcalc.dtypes): its facts against PyTorch and transformers, and the modules that
take their lists from it."""

from __future__ import annotations

import pytest

import roofcalc
from roofcalc import RoofcalcError
from roofcalc.dtypes import COMPUTE_DTYPES, COMPUTE_ONLY, DTYPES, from_config, same_width, torch_names


def test_the_library_names_are_the_vocabulary():
    from roofcalc import calculator

    assert roofcalc.DTYPES is calculator.DTYPES is DTYPES
    assert roofcalc.DType is calculator.DType and roofcalc.dtype is calculator.dtype


def test_every_spelling_a_user_may_give():
    for given, name in (("float32", "fp32"), ("float", "fp32"), ("BFloat16", "bf16"), ("float16", "fp16"),
                        ("half", "fp16"), ("float8", "fp8"), ("fp8_e4m3", "fp8"), ("E4M3", "fp8"), ("int4", "int4")):
        assert roofcalc.dtype(given).name == name, given
    with pytest.raises(RoofcalcError, match="unknown dtype 'fp12'; use one of fp32, bf16, fp16, fp8, fp8-b128, "
                                            "fp8-ch, fp8-t, ternary, int8, int4, mxfp4, nvfp4, nvfp4a16 \\(and for "
                                            "--weight-dtype llama.cpp's q4_0 and q8_0\\)$"):
        roofcalc.dtype("fp12")


def test_the_torch_names_are_torch_dtypes_of_the_same_width():
    """Each type a PyTorch run holds is a torch dtype of its bits (torch's own element size)."""
    torch = pytest.importorskip("torch")
    assert torch_names() == {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
    for name, t in torch_names().items():
        assert getattr(torch, t).itemsize * 8 == DTYPES[name].bits, name
    # the compute dtypes torch matmuls run in: tf32 multiplies float32 tensors
    assert torch_names(compute=True) == {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def test_a_config_spells_its_dtype_as_transformers_writes_it():
    """transformers writes a config's dtype as the torch dtype's name; roofcalc reads back the same type."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    for name, t in torch_names().items():
        doc = transformers.LlamaConfig(dtype=getattr(torch, t)).to_dict()
        assert from_config(doc.get("dtype", doc.get("torch_dtype"))) == name
    assert from_config("float8_e4m3fn") is None and from_config(None) is None and from_config(16) is None


def test_compute_dtypes_are_storage_types_or_compute_modes():
    assert COMPUTE_DTYPES == ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8")  # the order of the catalog's columns
    assert set(COMPUTE_DTYPES) == (set(COMPUTE_DTYPES) & set(DTYPES)) | set(COMPUTE_ONLY)
    from roofcalc.hardware import COMPUTE_DTYPES as hardware_compute, hardware_catalog

    assert hardware_compute is COMPUTE_DTYPES
    assert {d for hw in hardware_catalog() for d in hw.peak_flop_per_s} <= set(COMPUTE_DTYPES)


def test_the_modules_lists():
    from roofcalc import measure, profile
    from roofcalc.cli import _profile_parser

    assert measure.CUDA_DTYPES == ("fp32", "tf32", "fp16", "bf16")
    assert measure.CPU_TORCH_DTYPES == ("bf16", "fp16")  # fp32 on the CPU is numpy's
    assert profile.TORCH_DTYPES == ("fp32", "bf16", "fp16")
    assert next(a for a in _profile_parser()._actions if a.dest == "dtype").choices == profile.TORCH_DTYPES
    # a device without the checkpoint's 16-bit type computes in the other one
    assert (same_width("bf16"), same_width("fp16"), same_width("fp32"), same_width("fp8")) == ("fp16", "bf16", None, None)
