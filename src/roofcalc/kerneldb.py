"""Kernel times read from NVIDIA AIConfigurator's measured tables directly (``--kernel-db``).

The fitted kernels (predict.GemmFit, predict.AttentionFit) are the default: they need nothing installed. With
the optional ``aiconfigurator-core`` package (``pip install '.[kernel-db]'`` in roofcalc's checkout, Apache-2.0) a user can ask
for the measured tables themselves: each GEMM and decode attention call of the step (READS, below) takes the time
measured for the nearest shape the table holds, scaled by the ratio of the two shapes' roofline floors beyond the fitted fixed
cost. On shapes the tables do not hold (whole shapes held out, the fit's ten folds) that reads closer than the
fit (``benchmarks/lookup_vs_fit.py``: on the H100's vLLM tables a median |log| of 0.033 against the fit's 0.051
for 16-bit GEMMs, 0.012 against 0.033 for decode attention), which is why it is offered.

READS: GEMMs (16-bit and fp8) and decode attention without a window, the classes where this read beat the fit on
held-out shapes (benchmarks/lookup_vs_fit.py, the same rule as here); windowed decode and prefill attention keep
their fits, which came out closer (prefill: the nearest measured prompt at another batch or window is another
kernel's regime). Fused MoE calls (vLLM's, where the fit has them): a call the table measured takes its time; any
other the geometric mean of the two calls' times, the nearest measured call's (scaled) and the fit's, fixed cost
included: on held-out shapes its median |log| is below the fit's on every GPU and dtype (0.046-0.079 against
0.066-0.125; the direct read's alone is lower still on 9 of 14) and its share within ±30 % above the direct
read's on all 14 (against the fit's, from 1.8 points below to 7.7 above).

The tables read are the files the shipped fits were fitted on (data/kernel_fits.json names them), for the
GPUs and engines measured there: one step only (a sweep takes the fits), one measured GPU (no generation's
stand-in: a direct read of another GPU's kernels is not this GPU's).

Nearest: by squared distance in log2 of the sizes, (M, N, K) for a GEMM; (the rank's routed rows, H, I', the
rank's experts, every routed pair, the tokens) for a fused MoE call; (batch, KV length, heads, KV heads,
head dim) for decode, (batch, prompt, heads, KV heads, head dim) for prefill, rows of the table's kernel and
dtype. Floors: the fit's hand formulas (benchmarks/fit_kernels.py: gemm_rows, decode_rows, prefill_rows, moe_rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import RoofcalcError

PACKAGE = "aiconfigurator_core"
INSTALL = "pip install '.[kernel-db]' in roofcalc's checkout"


def systems_dir() -> Path:
    """The installed aiconfigurator-core package's ``systems`` folder (its measured tables), or a clear error."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RoofcalcError(f"--kernel-db needs its extra: {INSTALL}")
    for root in spec.submodule_search_locations:
        if (Path(root) / "systems" / "data").is_dir():
            return Path(root) / "systems"
    raise RoofcalcError(f"--kernel-db: {PACKAGE} has no systems/data tables")


def less_measured(rows, part):
    """GEMM rows (a DataFrame with m, k, latency) less a part measured on its own at each (m, k) (``part``, the
    same columns, repeats taken at their median): TensorRT-LLM's fp8 rows as served, without the dynamic input
    scale their collector times (benchmarks/fit_kernels.py static_scale, which fits them so; --kernel-db reads
    them so). Rows whose (m, k) the part lacks are left out; the caller says whether any may be."""
    part = part.groupby(["m", "k"], as_index=False)["latency"].median().rename(columns={"latency": "less"})
    out = rows.merge(part, on=["m", "k"], how="inner")
    return out.assign(latency=out.latency - out["less"]).drop(columns="less")


@dataclass
class Nearest:
    """Rows of one kernel's table: log2 sizes (N x d), measured seconds, each row's floor seconds, and the
    fitted fixed cost of the class (what every row pays whatever its size)."""

    keys: object  # numpy (N, d): log2 of the sizes
    seconds: object  # numpy (N,)
    floors: object  # numpy (N,)
    fixed_s: float

    def work(self, sizes, floor: float) -> float:
        """The nearest row's time beyond the fixed cost, scaled by the floors' ratio: what a kernel of
        ``sizes`` and roofline floor ``floor`` takes besides its fixed cost."""
        return self.read(sizes, floor)[0]

    def read(self, sizes, floor: float) -> tuple[float, bool]:
        """(work, whether the table measured these very sizes): ``work`` as above."""
        import numpy as np

        q = np.log2(np.maximum(np.asarray(sizes, dtype=float), 1.0))
        d2 = ((self.keys - q) ** 2).sum(axis=1)
        j = int(np.argmin(d2))
        t, f = float(self.seconds[j]), float(self.floors[j])
        return max(t - self.fixed_s, 0.0) * (floor / f if f > 0 else 1.0), bool(d2[j] < 1e-12)


class KernelDB:
    """One measured GPU's GEMM, attention and fused MoE tables, as the shipped fits name them, and their lookups."""

    def __init__(self, gpu: str, engine: str = "vllm", systems: Path | None = None, compute: str = "bf16"):
        from .predict import TABLE_ENGINES, engine_fits, kernel_fits

        self.gpu, self.compute = gpu, compute
        self.engine = engine if engine in TABLE_ENGINES else "vllm"
        self.systems = systems if systems is not None else systems_dir()
        own = kernel_fits()["gpus"][gpu] if self.engine == "vllm" else \
            engine_fits()["gpus"].get(gpu, {}).get(self.engine, {})
        self.forms = {**{f"gemm_{k}": v for k, v in own.get("gemm", {}).items()}, **own.get("attention", {}),
                      **{f"moe_{k}": v for k, v in own.get("moe", {}).items()}}
        roofs = kernel_fits()["gpus"][gpu]["roofs"]  # the datasheet roofs the fit used (fit_kernels.SPECS)
        self.bf16, self.fp8, self.bw = roofs["bf16"], roofs["fp8"], roofs["bandwidth"]
        self.fp4 = roofs.get("fp4")  # (the FP4 peak NVFP4 MoE calls run on: B200, RTX PRO 6000)
        self._tables: dict = {}

    def _read(self, cls: str):
        if cls in self._tables:
            return self._tables[cls]
        form = self.forms.get(cls)
        if form is None:
            self._tables[cls] = None
            return None
        import numpy as np

        try:
            import pandas as pd
        except ImportError:
            raise RoofcalcError(f"--kernel-db needs pandas and pyarrow ({INSTALL})") from None
        path = self.systems.parent / form["source"]["file"]
        if not path.exists():
            raise RoofcalcError(f"--kernel-db: {form['source']['file']} missing (aiconfigurator-core 0.12.0)")
        df = pd.read_parquet(path)
        df = df[df.kernel_source == form["source"]["kernel_source"].split(" (")[0]]
        fixed = float(form.get("fixed_s_fitted", form["fixed_s"]))
        if cls.startswith("moe"):
            keys, floors, df = self._moe_rows(cls, form, df)
        elif cls.startswith("gemm"):
            fp8 = cls == "gemm_fp8"
            df = df[(df.gemm_dtype == ("fp8" if fp8 else "bfloat16")) & (df.n >= 128) & (df.k >= 128)]
            less = form["source"].get("less")
            if less:  # the rows as served, as fitted: less a part measured on its own
                df = less_measured(df, pd.read_parquet(self.systems.parent / less["file"]))
            m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
            floors = self.gemm_floor(m, n, k, fp8)
            keys = np.log2(np.stack([m, n, k], axis=1))
        else:
            kv = "fp8" if cls.endswith("fp8kv") else "bfloat16"
            df = df[df.kv_cache_dtype == kv]
            if "attn_dtype" in df and df.attn_dtype.nunique() > 1 and (df.attn_dtype == kv).any():
                df = df[df.attn_dtype == kv]
            windowed = df.window_size.to_numpy(float) > 0 if "window_size" in df else np.zeros(len(df), bool)
            df = df[windowed] if "_swa_" in cls else df[~windowed]
            b, h, g, d = (df[c].to_numpy(float) for c in ("batch_size", "num_heads", "num_key_value_heads",
                                                           "head_dim"))
            w = df.window_size.to_numpy(float) if "window_size" in df else np.zeros(len(df))
            e = 1.0 if kv == "fp8" else 2.0
            if cls.startswith("decode"):
                plus_one = form["source"].get("kv_len", "step+1") == "step+1"
                L = np.maximum(df.step.to_numpy(float) + (1 if plus_one else 0), 1)
                L = np.where(w > 0, np.minimum(L, w), L)
                floors = self.decode_floor(b, h, g, d, L, e)
                keys = np.log2(np.stack([b, L, h, g, d], axis=1))
            else:
                s = df.isl.to_numpy(float)
                keep = s >= 16
                b, h, g, d, w, s = (x[keep] for x in (b, h, g, d, w, s))
                df = df[keep]
                floors = self.prefill_floor(b, s, h, g, d, w, e, cls.endswith("fp8kv"))
                keys = np.log2(np.stack([b, s, h, g, d], axis=1))
        table = Nearest(keys, df.latency.to_numpy(float) * 1e-3, floors, fixed)
        self._tables[cls] = table
        return table

    def _moe_rows(self, cls: str, form: dict, df):
        """A fused MoE table's balanced rows as benchmarks/fit_kernels.py fits them (moe_rows): keys log2 of (the
        rank's routed rows, H, I', the rank's experts, every routed pair T*k, the tokens T), floors by
        fitting.moe_cost. T tells apart calls of equal rows and pairs at another top-k (64 tokens x 2 against
        32 x 4): the same GEMMs, another routing and weighted sum. As the fit (benchmarks/fit_kernels.py load_moe):
        the shapes of grouped-routing models left out from vLLM's and SGLang's tables (fitting.grouped_routing_shapes;
        TensorRT-LLM's collector routes without groups), SGLang's expert-parallel rows left out (its collector runs
        the other ranks' pairs on rank 0) and MXFP4 tables' too, experts without a gate counted with two weights
        (fitting.ungated_shapes_for: where the table's collector ran them so), rows slower than twice the work on a rank
        left out (fitting.slower_than_twice_the_work). The table's own engine and version
        are its path's (<system>/moe/<engine>/<version>/: a preset may take another engine's form)."""
        from pathlib import PurePosixPath

        import numpy as np

        from .fitting import (MOE_FORMATS, balanced_routing, grouped_routing_shapes, moe_rows_kept,
                              slower_than_twice_the_work, ungated_shapes_for)

        configs = self.systems.parent / "model_configs"
        dtype = MOE_FORMATS[cls[4:]][0]
        engine, version = PurePosixPath(form["source"]["file"]).parts[-3:-1]
        df, _ = moe_rows_kept(df[df.moe_dtype == dtype], engine, grouped_routing_shapes(configs))
        df = df[~slower_than_twice_the_work(df)]
        ungated = ungated_shapes_for(configs, engine, version, form["source"]["kernel_source"].split(" (")[0])
        T, H, I, k, E, tp, ep = (df[c].to_numpy(int) for c in ("num_tokens", "hidden_size", "inter_size", "topk",
                                                              "num_experts", "moe_tp_size", "moe_ep_size"))
        gated = np.array([s not in ungated for s in zip(H.tolist(), I.tolist(), k.tolist(), E.tolist())], bool)
        cache: dict = {}
        routed = np.array([cache.setdefault(key, balanced_routing(*key)) for key in
                           zip(T.tolist(), E.tolist(), k.tolist(), ep.tolist())], dtype=float).reshape(-1, 2)
        rows, touched, experts, inter, pairs = routed[:, 0], routed[:, 1], E / ep, I / tp, (T * k).astype(float)
        floors = self.moe_floor(cls, rows, touched, experts, H, inter, pairs, form, gated)
        return np.log2(np.maximum(np.stack([rows, H, inter, experts, pairs, T], axis=1), 1.0)), floors, df

    def moe_floor(self, cls: str, rows, touched, experts, hidden, inter, pairs, form: dict, gated=True):
        """A fused MoE call's roofline floor as its fit counts it (fitting.moe_cost: the kernel's FLOPs and the
        touched experts' weights plus activations, fp8 on the fp8 peak; ``gated`` False: experts without a gate), at
        the sizes the kernel stores MXFP4 experts at (the form's ``pad``: fitting.mxfp4_padding)."""
        import numpy as np

        from .fitting import MOE_FORMATS, moe_cost, padded

        _, wb, _, peak = MOE_FORMATS[cls[4:]]
        if form.get("pad"):
            hidden, inter = padded(hidden, form["pad"]["hidden"]), padded(inter, form["pad"]["inter"])
        zeros = bool(form["source"].get("ep_masked_rows_written"))
        c = moe_cost(rows, touched, experts, hidden, inter, wb, int(form.get("block") or 0),
                     pairs=pairs if zeros else None, gated=gated)
        return np.maximum(c["flops"] / getattr(self, peak), c["bytes"] / self.bw)

    def moe_work(self, key: str, rows, hidden, inter, experts, layer_experts, top_k) -> tuple[float, bool] | None:
        """A fused MoE call's measured time beyond the fitted fixed cost, and whether the table measured that very
        call: the nearest measured call (the rank's ``rows`` routed pairs over its ``experts`` of the layer's
        ``layer_experts``, H ``hidden``, I' ``inter``, each token to ``top_k`` experts), scaled by the floors (the
        distinct experts reached as the table's balanced routing reaches them: min(experts, rows)); None where no
        table covers the class."""
        if any(hasattr(x, "shape") for x in (rows, hidden, inter)):
            return None
        cls = f"moe_{key}"
        table = self._read(cls)
        if table is None:
            return None
        pairs = rows * layer_experts / experts  # every routed pair, the other EP ranks' too
        floor = float(self.moe_floor(cls, rows, min(experts, rows), experts, hidden, inter, pairs, self.forms[cls]))
        return table.read((rows, hidden, inter, experts, pairs, pairs / top_k), floor)

    # the floors of benchmarks/fit_kernels.py's hand formulas, on numbers or numpy arrays of rows
    def gemm_floor(self, m, n, k, fp8: bool):
        import numpy as np

        wb = 1.0 if fp8 else 2.0
        return np.maximum(2 * m * n * k / (self.fp8 if fp8 else self.bf16), (wb * (m * k + n * k) + 2 * m * n) / self.bw)

    def decode_floor(self, b, h, g, d, L, e):
        import numpy as np

        return np.maximum(4 * b * h * L * d / self.bf16, (2 * b * g * L * d * e + 4 * b * h * d + 2 * b * g * d * e)
                          / self.bw)

    def prefill_floor(self, b, s, h, g, d, w, e, fp8: bool):
        import numpy as np

        s, w = np.asarray(s, dtype=float), np.asarray(w, dtype=float)
        pairs = np.where((w > 0) & (s > w), w * (w + 1) / 2 + (s - w) * w, s * (s + 1) / 2)
        moved = 4 * b * s * h * d + 4 * b * s * g * d + 2 * b * s * g * d * e
        return np.maximum(4 * b * h * d * pairs / (self.fp8 if fp8 and self.fp8 else self.bf16), moved / self.bw)

    def with_compute(self, compute: str) -> "KernelDB":
        """The same tables for GEMMs computing in ``compute`` (fp8: the fp8 GEMM table)."""
        other = object.__new__(KernelDB)
        other.__dict__.update(self.__dict__, compute=compute if compute in ("fp8", "fp4") else "bf16")
        return other

    def work(self, kind: str, rows, width, depth, attn) -> float | None:
        """The measured time beyond the fitted fixed cost of a matmul (M ``rows``, N ``width``, K ``depth``) or an attention call (sizes
        ``attn``, predict.AttentionFit.terms) by the nearest measured shape, scaled; None where no table
        covers it (an unknown N or K, MLA's latent, a chunk after a cached prefix, another kernel)."""
        if kind == "matmul":
            if not (width and depth) or hasattr(rows, "shape"):
                return None
            fp8 = self.compute == "fp8"
            if self.compute == "fp4":  # no FP4 GEMM table is read: the fitted form
                return None
            table = self._read("gemm_fp8" if fp8 else "gemm_bf16")
            if table is None:
                return None
            return table.work((rows, width, depth), float(self.gemm_floor(rows, width, depth, fp8)))
        if kind != "attention" or not attn or any(hasattr(x, "shape") for x in attn):
            return None
        b, h, g, q, kv, d, w, per_value = attn[:8]
        if d > 256 or not per_value:
            return None
        e = 1.0 if per_value <= 1 else 2.0
        kvk = "fp8kv" if e == 1.0 else "bf16kv"
        if q == 1 and not w:  # decode without a window: where the read beats the fit (below READS)
            table = self._read(f"decode_{kvk}")
            return None if table is None else table.work((b, kv, h, g, d), float(self.decode_floor(b, h, g, d, kv, e)))
        return None  # windowed decode and prefill keep their fits, which read closer on held-out shapes

    @property
    def words(self) -> str:
        from .hardware import measured_gpu_name

        gpu = measured_gpu_name(self.gpu)
        tables = {"sglang": "SGLang", "trtllm": "TensorRT-LLM"}.get(self.engine, "vLLM")
        what = "GEMM, decode attention and fused MoE" if any(c.startswith("moe") for c in self.forms) else \
            "GEMM and decode attention"
        return f"{what} times read from {gpu}'s measured {tables} tables (nearest shape, scaled)"

