"""The command line: parse, call the library, print. No formulas here."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Sequence

from .errors import NoKVCache, RoofcalcError
from .inputs import kernel_times, parse_quantity, parse_sizes, percent, positive_int, torch_install

DEFAULT_BATCH = 1
DEFAULT_CONTEXT = 500  # the README's worked example: TinyLlama on a T4
DEFAULT_DTYPE = "fp16"
DEFAULT_HW = "T4"


# other tools' names for an option of ours (vLLM's and SGLang's serve and benchmark flags among them), for the
# did-you-mean of an unrecognized option that no spelling of ours is close to
SYNONYMS = {"--gpu": "--hw", "--device": "--hw", "--hardware": "--hw", "--batch-size": "--batch",
            "--tensor-parallel-size": "--tp", "--tensor-parallel": "--tp", "--tp-size": "--tp",
            "--pipeline-parallel-size": "--pp", "--pp-size": "--pp", "--ep-size": "--ep",
            "--input-len": "--prompt", "--output-len": "--generate", "--seq-len": "--context",
            "--kv-cache-dtype": "--kv-dtype", "--quantization": "--weight-dtype", "--precision": "--dtype"}
# other tools' options with no counterpart here, whose spelling is close to one of ours that means something else
# (SGLang's --dp-size is not --group-size): no did-you-mean for them
NO_COUNTERPART = {"--dp-size", "--data-parallel-size", "--num-prompts", "--load-format", "--max-model-len",
                  "--decode", "--max-num-seqs", "--gpu-memory-utilization"}


class _Parser(argparse.ArgumentParser):
    """One line and exit 2 for bad options; no abbreviations (argparse would read --tp as --tpot)."""

    def __init__(self, *a, **k):
        super().__init__(*a, allow_abbrev=False, **k)
        self._argv: list[str] = []

    def parse_args(self, args=None, namespace=None):
        self._argv = [str(a) for a in (sys.argv[1:] if args is None else args)]  # (the words an error points at)
        return super().parse_args(args, namespace)

    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        raise RoofcalcError(f"{message}{self._did_you_mean(message)} (see '{self.prog} --help')")

    def _did_you_mean(self, message: str) -> str:
        """'; did you mean --batch?' for the first unrecognized option that is close to one of this command's
        (--batchs, --tpo); --out names the main command's -o / --output."""
        import difflib

        if not message.startswith("unrecognized arguments:"):
            return ""
        known = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
        words = message.split(":", 1)[1].split()
        argv = getattr(self, "_argv", [])
        at = next((i for i in range(1, len(argv)) if argv[i] == (words or [""])[0] and argv[i - 1].endswith(",")), None)
        # the list's first piece, less a flag written onto it (--batch=4, or -b4,)
        before = re.sub(r"^(--[\w-]+=|-\w)", "", argv[at - 1]) if at is not None else ""
        if at is not None and re.fullmatch(r"[\d,._:]+", before) and all(re.fullmatch(r"[\d,._:]+", w) for w in words):
            given, i = argv[at - 1], at
            while i < len(argv) and given.endswith(",") and re.fullmatch(r"[\d,._:]+", argv[i]):
                given, i = given + argv[i], i + 1  # each piece after one that ends with a comma, no more
            flag = argv[at - 2] if at >= 2 and argv[at - 2].startswith("-") and not given.startswith("-") else ""
            return f"; a list is one argument: {flag + ' ' if flag else ''}{given} (no spaces), or quote it"
        for word in words:
            flag = word.split("=", 1)[0].replace("_", "-")  # (another tool's --batch_size is our --batch-size)
            if not flag.startswith("--") or flag in NO_COUNTERPART:
                continue
            if flag == "--out" and "--output" in known:
                return "; did you mean -o / --output?"
            if SYNONYMS.get(flag) in known:  # another tool's name for one of ours
                return f"; did you mean {SYNONYMS[flag]}?"
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
            if close:
                return f"; did you mean {close[0]}?"
        return ""


# the commands, each with its line in the overview; any other first word is a model (roofcalc MODEL [options]):
# a model whose name is a command's is given as a path (./profile) or by its hub id
SUMMARIES = {
    "models": "list the offline catalog of model configs",
    "hardware": "list the hardware catalog (nominal, dense datasheet peaks)",
    "measure": "measure this machine's roof and kernel curves; write a profile for --hw-file",
    "profile": "run a model on this machine (PyTorch) and put its measured times beside roofcalc's floors",
    "help": "this overview, or a command's help (roofcalc help COMMAND)",
}


class _MainParser(_Parser):
    """The bare-model form, whose help is the overview: every command (argparse's own listing), then the
    model's options. The commands are listed by a twin of this parser that is never used to parse, so a
    first word that is not a command stays the model."""

    listing = False

    def format_help(self) -> str:
        return super().format_help() if self.listing else _main_parser(listing=True).format_help()


def _main_parser(listing: bool = False) -> argparse.ArgumentParser:
    p = _MainParser(
        prog="roofcalc",
        usage=f"%(prog)s [-h] [--version] MODEL [options]\n       %(prog)s {{{','.join(SUMMARIES)}}} ...",
        description="Per-kernel FLOPs, bytes and arithmetic intensity of a transformer's decode or prefill step, "
        "from its HuggingFace config.json, on the roofline of a device. 'roofcalc help COMMAND' or "
        "'roofcalc COMMAND --help' shows a command's options.",
    )
    p.listing = listing
    if listing:
        commands = p.add_subparsers(title="commands", dest="command")
        for name, summary in SUMMARIES.items():
            commands.add_parser(name, help=summary, add_help=False)
        p._action_groups.insert(0, p._action_groups.pop())  # the commands first, then the model's arguments
    p.add_argument("model", metavar="MODEL",
                   help="a config.json, a folder holding one, a catalog name (roofcalc models) or a hub id")
    from . import __version__

    p.add_argument("--version", action="version", version=f"roofcalc {__version__}",
                   help="print the version and exit")
    sizes = "; a list (1,4,16) or a range (1..256 doubles, 512..4096:512 steps) sweeps"
    p.add_argument("--batch", "-b", help=f"sequences per step, B (default {DEFAULT_BATCH}){sizes}")
    phase = p.add_mutually_exclusive_group()
    phase.add_argument("--context", "-s",
                       help=f"decode: KV length the new token attends to, itself included (default {DEFAULT_CONTEXT})"
                       f"{sizes}")
    phase.add_argument("--prompt", "-p", help=f"prefill a prompt of this many tokens instead of decoding{sizes}")
    p.add_argument("--generate", "-n", type=positive_int,
                   help="with --prompt: a whole request generating this many tokens (time to first token, total time, "
                   "mean time per output token)")
    p.add_argument("--dtype", help="weights, activations and KV cache: fp32 bf16 fp16 fp8 (default: the checkpoint's "
                   f"torch_dtype where the device computes in it, else the same width; {DEFAULT_DTYPE} if it declares none)")
    p.add_argument("--weight-dtype", help="weights only: fp32 bf16 fp16 fp8 (every weight cast, the embedding "
                   "and lm_head too, no scales), fp8-t fp8-ch fp8-b128 (an FP8 checkpoint's linears, one scale a "
                   "tensor / an output row with the input's per token / a 128 x 128 block; the embedding and lm_head "
                   "kept in 16 bits, as those checkpoints keep them), int8 int4 ternary, "
                   "nvfp4 nvfp4a16 (NVIDIA's FP4: W4A4 where the GPU has FP4 GEMMs, else W4A16; W4A16), q4_0 q8_0 (llama.cpp's: int4, int8 in groups of 32), or mxfp4 (the "
                   "experts of a mixture of experts) (default: the checkpoint's quantization_config, else --dtype)")
    p.add_argument("--act-dtype", help="activations only")
    p.add_argument("--kv-dtype", help="KV cache only (also int8)")
    p.add_argument("--group-size", type=positive_int, help="int8/int4 weights: values per fp16 scale (default: the "
                   "checkpoint's quantization_config, else 128)")
    p.add_argument("--full-rectangle", action="store_true",
                   help="prefill: count every (query, key) pair, as dense attention and FLOP counters do (default: causal)")
    p.add_argument("--attention", type=str.lower, choices=("fused", "unfused"), default="fused",
                   help="attention as one fused kernel (FlashAttention, PyTorch SDPA: default), or unfused: its score "
                   "matrix written and read between kernels, 20 bytes a score (llama.cpp without -fa; transformers' "
                   "attn_implementation='eager' moves 24)")
    p.add_argument("--ubatch", type=positive_int, default=None, metavar="TOKENS",
                   help="with --attention unfused: the prompt in micro-batches of this many tokens, each scoring "
                   "its queries against every position up to its end (llama.cpp's -ub; default: 512 under --engine "
                   "llama.cpp, its own default, else the whole prompt at once, as transformers' eager attention)")
    p.add_argument("--logits", type=str.lower, choices=("last", "all"), default="last",
                   help="prefill: lm_head on the last token of each sequence (default) or on every position")
    p.add_argument("--experts", type=str.lower, choices=("expected", "all", "topk"), default="expected",
                   help="MoE: expert weights a step reads: the expected distinct experts under uniform routing "
                   "(default), all of them, or exactly top-k")
    p.add_argument("--mla", type=str.lower, choices=("naive", "absorbed", "serving"), default=None,
                   help="DeepSeek attention: naive (what transformers computes: the latent is expanded every step), "
                   "absorbed (attention over the latent), or serving (absorbed for decode, expanded for prefill). "
                   "Default: the --engine's (serving under vllm, sglang, trtllm), else naive")
    p.add_argument("--family", help="read a config whose model_type roofcalc does not know as this family (e.g. llama)")
    p.add_argument("--tp", default="1", help="tensor-parallel ranks: every number is one rank's, collectives "
                   "included; a list (1,2,4,8) compares them at one batch and context (default 1)")
    p.add_argument("--micro-batches", type=positive_int,
                   help="with --pp: micro-batches a step's batch is cut into (default: --pp when the batch splits into "
                   "them, over the --ep ranks too; else 1)")
    for flag, what in (("--pp", "pipeline stages: the slowest stage's kernels on one micro-batch, and the step "
                        "the stages make"),
                       ("--ep", "expert-parallel ranks: E/N routed experts each, attention data-parallel over B/N "
                        "sequences, all-to-all dispatch and combine; with --tp, each of the N groups is --tp ranks")):
        p.add_argument(flag, default="1", help=f"{what}; a list compares them at one batch and context (default 1)")
    p.add_argument("--ep-attention", type=str.lower, choices=("dp", "tp"), default=None,
                   help="with --ep: attention data-parallel over B/N sequences (dp, the default) or split by heads "
                   "over the N ranks for every sequence (tp, as vLLM runs expert parallelism without data "
                   "parallelism: an all-reduce after o_proj and after the experts, no all-to-all)")
    p.add_argument("--trace", action="store_true",
                   help="count the kernels by tracing transformers' own modeling code on the meta device (needs "
                   "torch; automatic for a model_type without a hand model)")
    p.add_argument("--revision", help="a hub id's branch, tag or commit (the hub library's own revision handling); "
                   "the catalog is not used then")
    p.add_argument("--format", "-f", type=_format_name, choices=("table", "markdown", "csv", "json"), default="table",
                   help="the report as a table for the terminal (default), a markdown table (md too), CSV or JSON")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the report (any --format, a sweep's too) to FILE instead of standard output ('-': "
                   "standard output)")
    p.add_argument("--wide", action="store_true",
                   help="every column of the kernel table (default: the most important ones that fit the terminal, "
                   "100 columns when it is unknown)")
    r = p.add_argument_group("roofline")
    r.add_argument("--hw", help=f"hardware from the catalog (roofcalc hardware; default {DEFAULT_HW})")
    r.add_argument("--measured-bw", help="your measured bandwidth with its unit, e.g. 270GB/s, 250GiB/s or 2.7e11B/s")
    r.add_argument("--measured-flops", help="your measured matmul peak with its unit, e.g. 50TFLOP/s")
    r.add_argument("--hw-file", help="a JSON hardware profile with measured values (README: schema)")
    _add_engine(r)
    r.add_argument("--impl", type=str.lower, choices=("hf-eager", "fused", "cuda-graph"),
                   help="how kernels are launched, by hand: overrides the engine's (default: the engine's; hf's is "
                   "hf-eager, transformers' eager modules)")
    r.add_argument("--launch-overhead", help="cost of one kernel launch, e.g. 5us (default: the hardware's)")
    r.add_argument("--host-overhead", help="host time per eager op under --impl hf-eager, e.g. 15us (default: the "
                   "profile's measured value, else the documented default)")
    r.add_argument("--tpot", help="your measured step time (time per output token in decode), e.g. 15ms")
    r.add_argument("--kernel-times", help="measured seconds per kernel instance: CSV 'name,seconds' (a header's time "
                   "column names its unit: 'name,us') or JSON {name: s}")
    r.add_argument("--point", action="append", default=[], metavar="NAME:FLOPS:BYTES:SECONDS",
                   help="another measured workload to place on the roof (repeatable); SECONDS bare, or a time "
                        "with its unit (2.75ms)")
    r.add_argument("--record", action="store_true", help="print the record table: nominal vs measured, with ratios")
    r.add_argument("--plot", metavar="FILE.png|FILE.svg", help="draw the roofline with every kernel and point")
    r.add_argument("--html", metavar="FILE.html", help="one self-contained HTML page of the report: interactive "
                   "charts, sortable tables (needs plotly: pip install '.[html]' in roofcalc's checkout)")
    r.add_argument("--memory", help="device memory for the 'fits' verdict, e.g. 80GB or 80GiB (default: the hardware's)")
    r.add_argument("--min-gain", metavar="PERCENT",
                   help="sweeps: the tokens/s gain below which a doubling of the batch no longer pays (default 10%%)")
    return p


def _no_empty_files(args: argparse.Namespace) -> None:
    """A file option given as an empty string is refused by its name (never read as absent: profile --hw-file ''
    would otherwise measure the device, nor as the current folder)."""
    for flag in ("hw_file", "kernel_times", "hw_catalog"):
        value = getattr(args, flag, None)
        if value is not None and not value.strip():
            raise RoofcalcError(f"--{flag.replace('_', '-')} is empty; give a file")


def _check_profile_out(path: str) -> None:
    """measure --out replaces a hardware profile, never another JSON file (a model's config.json, a report): an
    existing file must read as a profile (an object with its bandwidth or peaks)."""
    import json
    import os

    if not os.path.isfile(path):
        return
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        doc = None
    if not (isinstance(doc, dict) and ("bandwidth_bytes_per_s" in doc or "peak_flop_per_s" in doc)):
        raise RoofcalcError(f"--out {path} holds something other than a hardware profile, which the measurement would "
                            f"replace: give a new file, or a profile to measure again")


def _check_outputs(args: argparse.Namespace) -> None:
    """Every file the run writes besides --output (the plot, the page), checked before any is written: a run that
    fails on one writes none. One path given for both is refused (the second would overwrite the first)."""
    import os

    if args.plot is not None:
        _check_plot(args.plot)
    html = getattr(args, "html", None)
    if html is not None:
        from .page import check_html_path

        check_html_path(html)
    if args.plot is not None and html is not None and \
            os.path.abspath(os.path.expanduser(args.plot)) == os.path.abspath(os.path.expanduser(html)):
        raise RoofcalcError(f"--plot and --html name one file ({args.plot}); give each its own")


def _check_plot(path: str) -> None:
    """--plot's file, checked before any work: an empty name would otherwise make no plot without a word."""
    from .plotting import check_plot_path

    if not path.strip():
        raise RoofcalcError("--plot is empty; give a file name such as roofline.png or roofline.svg")
    check_plot_path(path)


def _gguf(args: argparse.Namespace) -> None:
    """--weight-dtype q4_0 or q8_0 as the integer format and group they are; a K-quant, which mixes block formats
    by tensor, refused with the rule that gives its size."""
    import re

    from .calculator import GGUF_FILE_TYPES

    name = (args.weight_dtype or "").strip().lower()
    if name in GGUF_FILE_TYPES:
        args.gguf = name  # (a GGUF format: the engines that load such a file, _engine_weights; its tables, Workload)
        fmt, group = GGUF_FILE_TYPES[name]
        if args.group_size not in (None, group):
            raise RoofcalcError(f"--weight-dtype {name} holds {group} weights a scale; drop --group-size "
                                f"{args.group_size}")
        args.weight_dtype, args.group_size = fmt, group
    elif re.fullmatch(r"q[2-6]_k(_[sml]|_xs)?", name):
        raise RoofcalcError(f"llama.cpp's {name.upper()} mixes block formats by tensor; give its size: --weight-dtype "
                            f"int4 --group-size 32 is 4.5 bits a weight (Mistral-7B's Q4_K_M file: 4.06 GB for 7.24 B "
                            f"weights)")


def _engine_weights(args: argparse.Namespace, hw, weights: str | None = None, where: str | None = None) -> None:
    """Refuse a weight format the --engine preset's engine does not run, each with its reason: a GGUF block format
    (q4_0, q8_0) outside llama.cpp, vLLM (its GGUF loader from v0.5.5, PR #5191: not the vllm-v0 preset's versions)
    and SGLang (PR #2287) (TensorRT-LLM and gpt-fast load no GGUF file; transformers dequantizes one to 16 or 32 bits
    as it loads it: its docs' GGUF page); fp8 weights under llama.cpp (GGUF has no FP8 type) or under vLLM below
    compute capability 7.5 (vLLM's docs, features/quantization/llm_compressor/fp8: "FP8 models will run on compute
    capability >= 7.5 (Turing) as weight-only W8A16, utilizing FP8 Marlin", since PR #29901's Turing Marlin; 8.0
    before it; FP8 GEMMs from 8.9);
    --int4-kernel under llama.cpp (it runs its own q4 kernels). ``weights``: the format as resolved (a dtype name,
    a checkpoint's declared one) and ``where`` what gave it; by default the flags as typed."""
    from .calculator import dtype

    engine = getattr(args, "engine_preset", None)
    if engine is None:
        return
    gguf = getattr(args, "gguf", None)
    if weights is None:
        flag = "--weight-dtype" if args.weight_dtype else "--dtype" if args.dtype else ""
        weights, where = (args.weight_dtype or args.dtype or ""), f"{flag} {args.weight_dtype or args.dtype}"
        if gguf:
            where = f"--weight-dtype {gguf}"
    fp8 = bool(weights) and dtype(weights).name.startswith("fp8")  # (e4m3, float8: fp8's aliases)
    if gguf and engine.name in ("trtllm", "trtllm-0.6", "gpt-fast", "vllm-v0"):
        bits = "8-bit weights are --weight-dtype int8" if gguf == "q8_0" else "4-bit weights are --weight-dtype int4"
        raise RoofcalcError(f"{where}: --engine {engine.name} loads no GGUF file (llama.cpp's format); its {bits}")
    if gguf and engine.name == "hf":
        raise RoofcalcError(f"{where}: transformers dequantizes a GGUF file to 16 or 32 bits as it loads it; run it "
                            f"with --engine llama.cpp (or vllm, sglang), or give the dtype it computes in")
    if engine.name == "llama.cpp" and fp8:
        raise RoofcalcError(f"{where}: GGUF has no FP8 type; llama.cpp's 8-bit weights are q8_0")
    if engine.name == "llama.cpp" and getattr(args, "int4_kernel", None) is not None:
        raise RoofcalcError(f"--int4-kernel {args.int4_kernel}: a CUDA engine's int4 kernel; llama.cpp runs its own "
                            f"(--weight-dtype q4_0)")
    cc = getattr(hw, "compute_capability", None)
    if engine.name == "vllm" and fp8 and cc is not None and cc < 7.5:
        raise RoofcalcError(f"{where}: vLLM runs fp8 weights from compute capability 7.5 (FP8 Marlin from Turing, FP8 "
                            f"GEMMs from 8.9); {hw.name} is {cc:.1f}")


def _check_dtypes(args: argparse.Namespace) -> None:
    """The dtype flags as given: none empty, llama.cpp's names as the format they are (_gguf), each one roofcalc
    knows; before a model is read, and again (at no cost) where the workload is built."""
    from .calculator import dtype

    for flag, value in (("--dtype", args.dtype), ("--weight-dtype", args.weight_dtype), ("--act-dtype", args.act_dtype),
                        ("--kv-dtype", args.kv_dtype)):
        if value is not None and not value.strip():
            raise RoofcalcError(f"{flag} is empty; give a dtype such as fp16")
    _gguf(args)
    for value in (args.dtype, args.weight_dtype, args.act_dtype, args.kv_dtype):
        if value is not None:
            dtype(value)


def _workload_kw(args: argparse.Namespace, shape=None) -> dict:
    """Workload keywords from the flags; a checkpoint's declared weight format (quantization_config)
    is the weight dtype unless --dtype or --weight-dtype says otherwise."""
    from .calculator import DEFAULT_GROUP, dtype, group_breaks

    _check_dtypes(args)
    base = args.dtype or DEFAULT_DTYPE
    given = getattr(args, "dtype_flag", args.dtype)  # --dtype as typed (run_main may fill args.dtype in)
    declared = shape.weight_format if shape is not None and not given else None
    if shape is not None and shape.weight_format_refusal and not given and not args.weight_dtype:
        raise RoofcalcError(shape.weight_format_refusal)
    weights = dtype(args.weight_dtype or declared or base)
    if declared and not args.weight_dtype:  # the checkpoint's format, as the flags' are checked before it is read
        _engine_weights(args, _hardware(args)[0], weights.name, f"{shape.name}'s quantization_config ({weights.name})")
    if declared and not args.weight_dtype and shape.weight_scope == "experts" and not weights.experts_only:
        from dataclasses import replace

        weights = replace(weights, experts_only=True)  # the checkpoint quantizes its routed experts alone (Kimi-K2.5)
    if weights.group and args.group_size not in (None, weights.group):
        raise RoofcalcError(f"{weights.name} holds {weights.group} weights a scale, its format's own; drop --group-size "
                            f"{args.group_size}")
    if args.group_size and shape is not None and shape.d_model % args.group_size:  # a group lies along a matmul's
        # input, the hidden size for q/k/v and the MLP's up projections (GPTQ's and AWQ's loaders refuse one that
        # does not divide it; the MLP's width, some models' not a multiple of 128, is left to the count's rounding,
        # as the default group is)
        fits = max((g for g in (32, 64, 128, 256) if shape.d_model % g == 0), default=None)
        raise RoofcalcError(f"--group-size {args.group_size} does not divide the hidden size {shape.d_model}: a "
                            f"group's weights lie along a matmul's input"
                            + (f" (e.g. --group-size {fits})" if fits else "")
                            + ("; leaving --group-size out takes 128 as a what-if, each row's last group short"
                               if args.group_size == DEFAULT_GROUP else ""))
    group = args.group_size or (shape.weight_group if declared and not args.weight_dtype and shape.weight_group
                                else None)
    if shape is not None and not args.group_size and group_breaks(shape.d_model, group, weights):  # the checkpoint's
        # own group, as --group-size's is
        raise RoofcalcError(f"{shape.name}: its quantization_config's group_size {group} does not divide the hidden "
                            f"size {shape.d_model} (a group's weights lie along a matmul's input; GPTQ's and AWQ's "
                            f"loaders refuse it)")
    kw = dict(
        weight_dtype=weights,
        act_dtype=dtype(args.act_dtype or base),
        # (an engine's own default cache type, llama.cpp's f16: engines.Engine.kv_default)
        kv_dtype=dtype(args.kv_dtype or _engine(args).kv_default or base),
        group_size=group,
        causal=not args.full_rectangle,
        attention=args.attention,
        ubatch=_ubatch(args),
        logits_all=args.logits == "all",
        experts=args.experts,
        mla=_mla(args),
        # eager transformers appends to its DynamicCache by concatenation (a traced model's eager view counts it);
        # an --engine's own cache update unless --impl is given by hand
        cache_update=_cache_update(args),
        # hf-eager's RMSNorm, rotary and activation as transformers' eager ops move their bytes (the traced view's rule)
        eager_ops=getattr(args, "impl", None) == "hf-eager",
        # the split under --tp: transformers' plan, or the serving engines' (a MoE layer's one all-reduce, Phi-3's heads)
        tp_layout=_engine(args).tp_layout,
        # a GGUF file's embedding and output tables as llama.cpp's quantizer stores them (calculator.gguf_table)
        gguf=getattr(args, "gguf", None) or "",
    )
    if shape is not None:
        _engine_ran(args, shape.name, shape.moe is not None, shape.mla is not None)
    if kw["act_dtype"].quantized:
        raise RoofcalcError(f"activations cannot be {kw['act_dtype'].name}; use --weight-dtype for integer weights")
    if kw["weight_dtype"].experts_only and shape is not None and shape.moe is None and shape.activation != "traced":
        raise RoofcalcError(f"{shape.name} has no experts: {kw['weight_dtype'].name} stores a mixture of experts' "
                            f"expert weights (use int4 or int8 for every linear)")
    # a weight format whose GEMMs the device cannot compute (FP8 on a T4) runs as an engine runs it there
    from .roofline import weights_on_device

    hw, profile = _hardware(args)
    kw["weight_dtype"], args.weights_why = weights_on_device(kw["weight_dtype"], kw["act_dtype"], hw, profile)
    return kw


def _sizes(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...] | None]:
    """(batches, contexts, prompts) from the flags; exactly one of contexts and prompts is None."""
    from .calculator import MAX_BATCH, MAX_TOKENS

    batches = parse_sizes(args.batch, "batch", MAX_BATCH) if args.batch is not None else (DEFAULT_BATCH,)
    if args.prompt is not None:
        return batches, None, parse_sizes(args.prompt, "prompt", MAX_TOKENS)
    if args.generate is not None:
        raise RoofcalcError("--generate needs --prompt: a request prefills its prompt, then generates")
    contexts = parse_sizes(args.context, "context", MAX_TOKENS) if args.context is not None else (DEFAULT_CONTEXT,)
    return batches, contexts, None


def _workload(args: argparse.Namespace, shape=None):
    from .calculator import Workload

    batches, contexts, prompts = _sizes(args)
    kw = _workload_kw(args, shape)
    if prompts is not None:
        return Workload.prefill(batches[0], prompts[0], **kw)
    return Workload.decode(batches[0], contexts[0], **kw)


def _find_hardware(name: str, flag: str = "--hw"):
    """A catalog entry by name or alias; a name that is none of them is refused with the closest ones
    (hardware.find_hardware's words), naming the flag or file that gave it."""
    from .hardware import find_hardware

    try:
        return find_hardware(name)
    except RoofcalcError as exc:
        raise RoofcalcError(str(exc) if flag == "--hw" else f"{flag}: {exc}") from None


def _check_family(family: str | None) -> None:
    """--family, before the model is read: a family roofcalc has a hand model for, or the closest ones."""
    from .families import FAMILIES, SUPPORTED_FAMILIES
    from .inputs import did_you_mean, one_line

    if family is None or family in FAMILIES:
        return
    if not family.strip():
        raise RoofcalcError("--family is empty; give a family such as llama")
    hint = did_you_mean(family.replace("-", "_"), {name: name for name in FAMILIES})
    raise RoofcalcError(f"--family '{one_line(family)[:80]}' is not a family roofcalc models{f' ({hint})' if hint else ''}"
                        f"; supported: {', '.join(SUPPORTED_FAMILIES)}")


def _check_output(path: str | None, inputs: dict[str, str | None]):
    """--output, checked before any work (see inputs.check_output); None without it, or for '-' (standard output,
    as the Unix tools read it)."""
    import os

    if path is None or path == "-":
        return None
    from .inputs import check_output

    model = next(iter(inputs), None)  # the model is a file only where one is there by its name
    if model is not None and inputs[model] and not os.path.exists(os.path.expanduser(inputs[model])):
        inputs = {k: v for k, v in inputs.items() if k != model}
    return check_output(path, inputs)


def _emit(text: str, output, fmt: str) -> str:
    """The document for stdout, or, with --output, written to its file (a line on stderr says so)."""
    if output is None:
        return text
    from .inputs import one_line, write_output

    write_output(output, text)
    print(f"roofcalc: wrote the {fmt} report to {one_line(str(output))[:200]}", file=sys.stderr)
    return ""


def _own_nominal(args: argparse.Namespace, profile) -> bool:
    """Whether the --hw-file is its own nominal roof: a CPU's or TPU's that `measure` found no catalog entry for, run
    without --hw, as `roofcalc profile` takes it (a GPU's is compared with the default T4, as documented)."""
    return profile is not None and not profile.nominal and not args.hw and profile.kind != "gpu"


def _hardware(args: argparse.Namespace):
    """(catalog entry, measured profile or None)."""
    from .hardware import load_profile

    if args.hw is not None and not args.hw.strip():
        raise RoofcalcError("--hw is empty; give a name from 'roofcalc hardware'")
    profile = load_profile(args.hw_file) if args.hw_file is not None else None
    if _own_nominal(args, profile):
        return profile, profile
    hw_name = args.hw or (profile.nominal if profile and profile.nominal else DEFAULT_HW)
    hw = _find_hardware(hw_name, "--hw" if args.hw else f"the profile {args.hw_file}'s nominal")
    if profile and profile.kind != hw.kind:  # a CPU's measurement against a GPU's datasheet says nothing either
        which = f"--hw {args.hw}" if args.hw else f"the profile's nominal {hw.name}"
        raise RoofcalcError(f"{which} is a {hw.kind} and the profile {args.hw_file} measured a {profile.kind}: its "
                            f"roof against that datasheet says nothing; name a {profile.kind} ('roofcalc hardware' "
                            f"lists them)" + ("" if args.hw else " as its 'nominal'"))
    if args.hw and profile and profile.nominal:  # a T4's measurement against an H100's datasheet says nothing
        theirs = _find_hardware(profile.nominal, f"the profile {args.hw_file}'s nominal")
        if theirs.name != hw.name:
            raise RoofcalcError(f"--hw {args.hw} and the profile {args.hw_file}'s nominal {theirs.name} disagree: its "
                                f"measurement is of a {theirs.name}; drop --hw (its nominal is compared with), or "
                                f"edit its 'nominal'")
    return hw, profile


def _roof_warnings(args: argparse.Namespace, result) -> list[str]:
    """Lines where the measured roof is not what it seems: a figure above its datasheet's (another device's, or a
    cache's), a flag that replaces the profile's own figure."""
    from . import report
    from .hardware import load_profile
    from .roofline import Roofline
    from .units import si

    r = result.points[0].result if hasattr(result, "points") and not hasattr(result, "nominal") else result
    profile = load_profile(args.hw_file) if args.hw_file else None
    # (a single step's report says its roof's warnings itself, report.roof_warning_lines; a sweep's are said here)
    lines = [] if isinstance(result, Roofline) else report.roof_warning_lines(r, _own_nominal(args, profile))
    if profile is not None:
        for flag, value, theirs in (("--measured-bw", args.measured_bw,
                                     f"bandwidth ({si(profile.bandwidth_bytes_per_s, 'B/s')})"),
                                    ("--measured-flops", args.measured_flops, "peak")):
            if value is not None:
                lines.append(f"override  {flag} {value} replaces the measured {theirs} of the profile "
                             f"'{profile.name}'")
    return lines


def _revision(args: argparse.Namespace) -> str | None:
    rev = getattr(args, "revision", None)
    if rev is not None and not rev.strip():
        raise RoofcalcError("--revision is empty; give a branch, tag or commit")
    return rev


def is_sweep(args: argparse.Namespace) -> bool:
    batches, contexts, prompts = _sizes(args)
    return args.generate is not None or len(batches) > 1 or len(contexts or prompts) > 1


def _roof_kw(args: argparse.Namespace, profile, shape=None) -> dict:
    """The roof, launch, host and memory options every roofline and sweep takes, parsed once."""
    def q(flag, kind, usual=""):
        return _quantity(args, flag, kind, usual)

    return dict(measured_bw=q("--measured-bw", "bandwidth"), measured_flops=q("--measured-flops", "flops"),
                measured_profile=profile, impl=args.impl, launch_overhead_s=q("--launch-overhead", "time", "us"),
                host_overhead_s=q("--host-overhead", "time", "us"), capacity_bytes=q("--memory", "size"),
                engine_host=_engine_host(args, shape))


def _quantity(args: argparse.Namespace, flag: str, kind: str, usual: str = ""):
    """A flag's quantity with its unit (inputs.parse_quantity), an error naming the flag; None where not given."""
    value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
    if value is None:
        return None
    try:
        return parse_quantity(value, kind, usual)
    except RoofcalcError as exc:
        raise RoofcalcError(f"{flag} {exc}") from None


def _format_name(value: str) -> str:
    """--format's value, any case, ``md`` for markdown (the file extension's name, as pandoc takes it)."""
    value = value.lower()
    return "markdown" if value == "md" else value


def build_sweep(args: argparse.Namespace, shape=None):
    from .sweep import sweep

    for flag, value in (("--tpot", args.tpot), ("--kernel-times", args.kernel_times), ("--point", args.point),
                        ("--record", args.record)):
        if value:
            one = ("a single --batch and --prompt with it, and no --generate (a whole request is many steps)"
                   if getattr(args, "generate", None) else "a single --batch and --prompt with it"
                   if getattr(args, "prompt", None) else "a single --batch and --context with it")
            raise RoofcalcError(f"{flag} describes one measured step; give {one}")
    if args.kernel_db:
        raise RoofcalcError("--kernel-db reads one step's kernels; a sweep takes their fits: drop one")
    batches, contexts, prompts = _sizes(args)
    shape, traced = shape if shape is not None else load_model(args)
    kw = _workload_kw(args, shape)
    par = _parallel(args, shape, traced, kw)
    if par.gpus > 1 and traced is None:
        from .parallel import PipelineAnalyzer, rank_analyzer, shard

        from .calculator import Workload

        # refuse a size that does not divide, or a family with no plan, before sweeping (in the engine's layout)
        shard(shape, par.ep if par.tp_attention else par.tp, Workload.decode(1, 1, tp_layout=kw["tp_layout"]))
        kw["analyzer"] = PipelineAnalyzer(shape, par, args.micro_batches) if par.pp > 1 else rank_analyzer(shape, par)
    if traced is not None:
        from .trace import TracedEPAnalyzer, TracedEPTPAnalyzer, TracedRankAnalyzer, analyzer, hf_config

        cfg, name, label = traced
        view = "eager" if args.impl == "hf-eager" else "ideal"
        if par.pp > 1:
            from .trace.pipeline import TracedPipelineAnalyzer, TracedStages

            stages = TracedStages(cfg, name, label, view, hf_config(cfg, name)[0])
            kw["analyzer"] = TracedPipelineAnalyzer(shape, par, args.micro_batches, stages)
        elif par.tp_attention:
            kw["analyzer"] = TracedEPTPAnalyzer(cfg, name, label, view, par)
        elif par.ep > 1:
            kw["analyzer"] = TracedEPAnalyzer(cfg, name, label, view, par)
        elif par.tp > 1:
            kw["analyzer"] = TracedRankAnalyzer(cfg, name, label, view, par)
        else:
            kw["analyzer"] = analyzer(cfg, name, label, view=view)
    hardware, profile = _hardware(args)
    return sweep(
        shape, hardware, batches=batches, contexts=contexts, prompts=prompts, generate=args.generate,
        min_gain=percent(args.min_gain or MIN_GAIN), **_roof_kw(args, profile, shape), **kw,
    )


AXES = ("tp", "pp", "ep")


def _sizes_of(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """The ranks given on each parallel axis (--tp, --pp, --ep), each a size or a list."""
    sizes = {axis: parse_sizes(str(getattr(args, axis, "1")), axis, 1024) for axis in AXES}
    if getattr(args, "ep_attention", "dp") == "tp" and max(sizes["ep"]) == 1:
        raise RoofcalcError("--ep-attention tp says how --ep ranks split attention; give it with --ep N (N > 1)")
    return sizes


def _swept_axis(args: argparse.Namespace) -> str | None:
    """The one parallel axis given as a list, if any."""
    lists = [axis for axis, sizes in _sizes_of(args).items() if len(sizes) > 1]
    if len(lists) > 1:
        raise RoofcalcError(f"give a list to one of --tp, --pp and --ep at a time (got lists for "
                            f"{' and '.join('--' + a for a in lists)})")
    return lists[0] if lists else None


def _parallel(args: argparse.Namespace, shape=None, traced=None, workload=None, hardware=None):
    """The step's split over GPUs as the flags give it (``shape`` and ``traced``, the model as load_model read it:
    whether its experts' ranks write every routed pair, _masked_experts; ``workload`` and ``hardware`` where the
    caller has them already, not read again)."""
    from .calculator import Parallel

    sizes = _sizes_of(args)
    for axis, values in sizes.items():
        if len(values) > 1:
            raise RoofcalcError(f"a list of --{axis} compares one step; give it alone")
    return Parallel(sizes["tp"][0], sizes["pp"][0], sizes["ep"][0], getattr(args, "ep_attention", "dp"),
                    dense_experts=_dense_experts(args),
                    masked_experts=_masked_experts(args, shape, traced, workload, hardware))


def _masked_experts(args: argparse.Namespace, shape=None, traced=None, workload=None, hardware=None) -> bool:
    """Whether the engine's expert-parallel ranks, every token on each (--ep-attention tp), write and activate every
    routed pair in their fused MoE call, another rank's masked: an engine that maps another rank's experts out
    (engines.Engine.masked_experts) running a kernel that then writes their rows (fitting.masked_rows: Triton's and
    Marlin's, not FlashInfer's or TensorRT-LLM's), the fitted form's for the step's GPU and expert format, or its
    own unfitted one (Triton's). A traced model's experts are those its trace names (its shape holds no MoE record)."""
    if not (_engine(args).masked_experts and getattr(args, "ep_attention", "dp") == "tp") or shape is None or \
            (traced is None and getattr(shape, "moe", None) is None):
        return False
    from .calculator import Workload, fused_moe_class
    from .fitting import masked_rows
    from .predict import moe_kernel_source

    # (a Workload, or the sweep's workload fields, as the caller has them)
    wl = workload if isinstance(workload, Workload) else \
        Workload.decode(1, 1, **(workload if workload is not None else _workload_kw(args, shape)))
    hw = hardware if hardware is not None else _hardware(args)[0]
    source = moe_kernel_source(hw, _engine(args).name, fused_moe_class(wl))
    return not source or masked_rows(source)


def _dense_experts(args: argparse.Namespace) -> bool:
    """Whether the engine's expert-parallel ranks run every token through each of their experts (vllm-v0 under
    --ep-attention tp: engines.Engine.dense_experts)."""
    return bool(_engine(args).dense_experts) and getattr(args, "ep_attention", "dp") == "tp"


def build_tp_sweep(args: argparse.Namespace, shape=None):
    from .parallel import Parallel, tp_sweep

    axis = _swept_axis(args) or "tp"
    for flag, value in (("--tpot", args.tpot), ("--kernel-times", args.kernel_times), ("--point", args.point),
                        ("--record", args.record), ("--plot", args.plot)):
        if value:
            raise RoofcalcError(f"{flag} describes one step; a --{axis} list compares several")
    if is_sweep(args):
        raise RoofcalcError(f"a --{axis} list compares one step: give one --batch and one --context (or --prompt)")
    shape, traced = shape if shape is not None else load_model(args)
    sizes = _sizes_of(args)
    base = Parallel(**{a: sizes[a][0] for a in AXES if a != axis},  # the other axes, fixed
                    ep_attention=getattr(args, "ep_attention", "dp"), dense_experts=_dense_experts(args),
                    masked_experts=_masked_experts(args, shape, traced))
    if args.micro_batches and axis != "pp" and base.pp == 1:
        raise RoofcalcError("--micro-batches is for --pp")
    workload = _workload(args, shape)
    hardware, profile = _hardware(args)
    one = None
    if traced is not None:  # a --tp or --pp list of a traced model: its step traced once, split at each size
        from .trace import hf_config, trace
        from .trace.pipeline import TracedStages

        cfg, name, label = traced
        view, config = "eager" if args.impl == "hf-eager" else "ideal", hf_config(cfg, name)[0]
        one = (trace(cfg, name, workload, label, view=view), config, TracedStages(cfg, name, label, view, config))
    return tp_sweep(
        shape, workload, sizes[axis], hardware, min_gain=percent(args.min_gain or MIN_GAIN), axis=axis,
        micro_batches=args.micro_batches, base=base, traced=one, **_roof_kw(args, profile, shape))


def load_model(args: argparse.Namespace):
    """The model's shape, and (config, name) when its kernels come from a trace: a model_type without
    a hand model (transformers knows hundreds), or any model with --trace."""
    from .errors import UnsupportedModelType
    from .shapes import shape_from_config
    from .sources import load_config, with_encoders

    cfg, name, _, _ = load_config(args.model, _revision(args))
    if not getattr(args, "trace", False):
        try:
            return with_encoders(shape_from_config(cfg, name, args.family), cfg, name), None
        except UnsupportedModelType:
            latent = _latent_as_deepseek(args, cfg, name)
            if latent is not None:
                return latent, None
    elif args.family:
        raise RoofcalcError("--trace reads the config as transformers does; --family is for the hand models")
    from .trace import traced_shape

    shape, traced = traced_shape(cfg, name)
    # a traced model's experts and latent attention, as its config names them
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    experts = any(isinstance(text.get(k), int) and not isinstance(text.get(k), bool) and text.get(k) > 1
                  for k in ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"))
    args.traced_latent = isinstance(text.get("kv_lora_rank"), int)  # (a trace expands it: _ignored, the warning)
    _engine_ran(args, shape.name, experts, "kv_lora_rank" in text)
    return shape, traced


def _latent_as_deepseek(args: argparse.Namespace, cfg: dict, name: str):
    """A model_type with no hand model whose (text) config holds DeepSeek's latent attention (Kimi-K2's, Kimi-K2.5's),
    where the step absorbs it (--mla absorbed or serving, an engine preset's): the hand DeepSeek-V3 model's shape,
    which counts the attention over the latent as serving engines decode it, where a trace counts transformers'
    expansion of every cached token by kv_b_proj, every step. None where the attention stays naive, --family was
    given, or the config holds what DeepSeek-V3's record cannot read (a sparse attention's indexer): traced."""
    from .families import LATENT_FAMILY
    from .shapes import shape_from_config
    from .sources import with_encoders

    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    if args.family or _mla(args) == "naive" or not all(isinstance(text.get(k), int) for k in (
            "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")):
        return None
    try:
        shape = with_encoders(shape_from_config(cfg, name, LATENT_FAMILY), cfg, name)
    except RoofcalcError as exc:  # (said in the traced step's warning)
        reason = str(exc).split(": ", 1)[-1].split("; ")[0]  # its first clause: what the record cannot hold
        args.latent_refused = re.sub(r"^read as \S+ \(--family\), ", "", reason)
        return None
    from dataclasses import replace

    how = f"--mla {args.mla}" if args.mla else f"the {args.engine_preset.name} preset"
    why = f"its latent attention, which {how} runs over the latent; a trace counts transformers' expansion of every " \
          f"cached token each step"
    if isinstance(text.get("index_topk"), int):  # DeepSeek-V3.2's sparse attention: an indexer picks the keys
        why += "; its sparse attention is not counted (the warning below)"
        args.latent_sparse = text["index_topk"]
    return replace(shape, borrowed_why=why)


def _engine_ran(args: argparse.Namespace, name: str, experts: bool, mla: bool) -> None:
    """Refuse a model the --engine preset's engine never ran: routed experts (Engine.no_moe), DeepSeek's latent
    attention (Engine.no_mla), each with its source."""
    _engine(args).check_model(name, experts, mla)


def build_roofline(args: argparse.Namespace, shape=None):
    from .calculator import analyze
    from .roofline import roofline

    shape, traced = shape if shape is not None else load_model(args)
    workload = _workload(args, shape)
    hardware, profile = _hardware(args)
    parallel = _parallel(args, shape, traced, workload, hardware)
    # the measured figures, read (and refused where bad) before any model work: a pipeline says them ignored
    # (_ignored), every other step places them
    measured = dict(kernel_times=kernel_times(args.kernel_times) if args.kernel_times is not None else None,
                    tpot_s=_quantity(args, "--tpot", "time"), points=_points(args.point))
    if traced is not None:
        from .trace import trace

        cfg, name, label = traced
        view = "eager" if args.impl == "hf-eager" else "ideal"
        if parallel.pp > 1:  # its stages cut from the trace by layer, each rank by its config class's plan
            from .parallel import default_micro_batches, pipeline_roofline
            from .trace import hf_config
            from .trace.pipeline import TracedStages

            micro = args.micro_batches or default_micro_batches(workload.batch, parallel)
            return pipeline_roofline(shape, workload, parallel.pp, micro, hardware, tp=parallel.tp, ep=parallel.ep,
                                     traced=TracedStages(cfg, name, label, view, hf_config(cfg, name)[0]),
                                     kernel_db=args.kernel_db, **_roof_kw(args, profile, shape))
        if parallel.ep > 1:  # its experts kernels over the ranks
            from .trace.parallel import traced_expert_parallel

            analysis = traced_expert_parallel(traced, workload, parallel, view)
        else:
            analysis = trace(cfg, name, workload, label, view=view)
            if parallel.tp > 1:
                from .trace import hf_config
                from .trace.parallel import traced_rank

                analysis = traced_rank(analysis, parallel, hf_config(cfg, name)[0])
    elif parallel.pp > 1:
        from .parallel import default_micro_batches, pipeline_roofline

        micro = args.micro_batches or default_micro_batches(workload.batch, parallel)
        return pipeline_roofline(shape, workload, parallel.pp, micro, hardware, tp=parallel.tp, ep=parallel.ep,
                                 kernel_db=args.kernel_db, **_roof_kw(args, profile, shape))
    elif parallel.gpus > 1:
        from .parallel import analyze_parallel

        analysis = analyze_parallel(shape, workload, parallel)
    else:
        analysis = analyze(shape, workload)
    return roofline(analysis, hardware, **_roof_kw(args, profile, shape), kernel_db=args.kernel_db, **measured)


def _points(given: list[str]) -> tuple:
    """The --point workloads, a name given twice refused (which one a line names would not be known), as a kernel
    given twice in --kernel-times is."""
    from .roofline import parse_point

    points = tuple(parse_point(p) for p in given)
    names = [p.name for p in points]
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise RoofcalcError(f"--point '{twice}' is given twice; give each workload its own name")
    return points


def choose_dtype(config_dtype: str | None, hw, profile=None, unread: str | None = None) -> tuple[str, str]:
    """(dtype, why) when no dtype flag is given: the checkpoint's torch_dtype where the device (and a
    measured profile) computes in it, else the same-width type it has (a bf16 checkpoint runs as fp16
    on a T4, as users run it there), else what it has."""
    peaks = set(hw.peak_flop_per_s) & set((profile or hw).peak_flop_per_s)
    device = f"the profile '{profile.name}'" if profile is not None else hw.name
    if config_dtype is None:
        if DEFAULT_DTYPE in peaks:
            return DEFAULT_DTYPE, ("default: the config declares no torch_dtype" if unread is None else
                                   f"default: the config's torch_dtype '{unread}' is none PyTorch computes in")
        config_dtype = DEFAULT_DTYPE
    if config_dtype in peaks:
        return config_dtype, "the checkpoint's torch_dtype"
    from .dtypes import same_width

    same = same_width(config_dtype)
    if same in peaks:
        return same, f"the checkpoint is {config_dtype}; {device} has no {config_dtype} peak, so {same}, the same width"
    for d in (DEFAULT_DTYPE, "bf16", "fp32"):
        if d in peaks:
            return d, f"the checkpoint is {config_dtype}; {device} has no {config_dtype} peak, so {d}"
    return config_dtype, "the checkpoint's torch_dtype"


def term_width() -> int:
    """The terminal's width when stdout is one, else 100."""
    import os
    import shutil

    if sys.stdout is not None and sys.stdout.isatty():
        return shutil.get_terminal_size((100, 24)).columns
    try:
        return max(40, int(os.environ.get("COLUMNS", "100")))
    except ValueError:
        return 100


def run_main(argv: Sequence[str]) -> str:
    from . import report

    args = _main_parser().parse_args(argv)
    _no_empty_files(args)
    _resolve_engine(args)
    _check_family(args.family)
    output = _check_output(args.output, {"the model's config.json": args.model, "the --hw-file profile": args.hw_file,
                                         "the --kernel-times file": args.kernel_times, "the --plot image": args.plot,
                                         "the --html page": getattr(args, "html", None)})
    defaults = {name for name in ("batch", "context", "dtype", "hw") if getattr(args, name) is None}
    if args.prompt:
        defaults.discard("context")
    if args.act_dtype and args.kv_dtype and args.weight_dtype:  # else some follow the checkpoint's dtype
        defaults.discard("dtype")
    if args.hw_file:
        defaults.discard("hw")
    args.dtype_flag = args.dtype
    percent(args.min_gain or MIN_GAIN)  # a value a sweep refuses is refused on a single step too
    device = _hardware(args)[0]  # a hardware name or profile, the sizes, the parallel axes and the engine's weight
    _sizes(args)  # formats refused before a model is read (a trace takes seconds)
    _swept_axis(args)
    _check_dtypes(args)
    _engine_weights(args, device)
    if args.trace and args.attention != "fused":
        raise RoofcalcError("--attention unfused is for hand-modelled families (a traced model's attention is one "
                            "fused call)")
    shape = load_model(args)
    if "dtype" in defaults:  # no dtype flag: the checkpoint's own, where the device computes in it
        hw, profile = _hardware(args)
        config_dtype, loaded = shape[0].config_dtype, None
        unread = getattr(shape[0], "config_dtype_unread", None)
        # a serving engine loads an fp32 checkpoint in 16 bits under its dtype "auto", and takes a config that
        # declares no torch_dtype for fp32 (vLLM, SGLang: _get_and_verify_dtype's config_dtype = torch.float32;
        # vLLM reads the weight files' dtypes first, which a config alone does not have)
        undeclared = config_dtype is None and unread is None and args.engine_preset.fp32_as not in ("", "bf16")
        if config_dtype == "fp32" or undeclared:
            loaded = args.engine_preset.fp32_dtype(shape[0].model_type, hw.compute_capability)
        args.dtype, why = choose_dtype(loaded or ("fp32" if undeclared else config_dtype), hw, profile, unread)
        if undeclared and not loaded and args.dtype == "fp32":  # taken for fp32, and kept (vLLM's fp16 refusals)
            why = (f"the config declares no torch_dtype, which the {args.engine_preset.name} preset takes for fp32 "
                   f"and keeps: it runs {shape[0].model_type} in no 16-bit type {hw.name} has")
        if loaded:  # what the engine loads it in, then what the device computes that in
            engine_words = (f"the config declares no torch_dtype, which the {args.engine_preset.name} preset takes "
                            f"for fp32 and loads in {loaded}" if undeclared else
                            f"the checkpoint is fp32; the {args.engine_preset.name} preset loads it in {loaded}")
            how = ("as its GGUF converter writes it (convert_hf_to_gguf.py --outtype auto)"
                   if args.engine_preset.fp32_as == "bf16" else "as its dtype 'auto' does")
            why = f"{engine_words}, {how}" if args.dtype == loaded else \
                why.replace(f"the checkpoint is {loaded}", engine_words, 1)
        defaults.discard("dtype")
        defaults.add("dtype-why:" + why)
        if args.act_dtype:  # the activations (and a GEMM computing in them) follow the flag, not the checkpoint
            defaults.add("act-given")
    _check_outputs(args)
    try:
        result = _build(args, shape)
    except NoKVCache as exc:
        # a model without a KV cache (an encoder) has no decode step: with no context asked for, the
        # user gets what running it costs, a forward pass over the default context's tokens
        if "context" not in defaults or args.generate is not None or _swept_axis(args) is not None:
            raise
        args.prompt = str(DEFAULT_CONTEXT)
        defaults.add(f"forward-why:{exc.why}: a forward pass over "
                     f"{DEFAULT_CONTEXT} tokens (the default context) instead of a decode step")
        result = _build(args, shape)
    if getattr(args, "weights_why", ""):
        defaults.add("weights-why:" + args.weights_why)
    if not args.kv_dtype and _engine(args).kv_default:  # the engine's own cache type (Engine.kv_default)
        defaults.add(f"kv-why:{_engine(args).name}'s default cache type")
    out = report.render(result, args.format, defaults, record=args.record, width=None if args.wide else term_width())
    # the footer's lines beside the report's own (the profile's warnings, the engine verdict, the options ignored):
    # labelled lines, each of them in the terminal's table, Markdown's list and the page alike
    footer = []
    if args.hw_file:  # the profile's own measurement warned: say so here too
        from .hardware import hw_file_warnings

        footer += hw_file_warnings(args.hw_file)
    footer += _roof_warnings(args, result)
    from .roofline import Roofline

    if not isinstance(result, Roofline):  # (a single step says it on its workload line, and in its JSON warnings)
        batches, contexts, prompts = _sizes(args)
        farthest = max(contexts) if contexts else max(prompts) + (args.generate or 1) - 1
        footer += report.positions_lines(shape[0], farthest)
    if getattr(args, "latent_sparse", None):  # DeepSeek-V3.2's indexer, which the hand DeepSeek-V3 model has not
        footer.append(f"warning   {shape[0].name}'s sparse attention is not counted: read as DeepSeek-V3, every "
                      f"cached key is attended, not the index_topk {args.latent_sparse:,} its indexer picks, and the "
                      f"indexer itself (its weights on every rank, its scoring of every key) is left out")
    if getattr(args, "traced_latent", False) and _mla(args) != "naive":  # an absorbed attention a trace cannot count
        how = f"--mla {args.mla}" if args.mla else f"the {args.engine_preset.name} preset"
        remedy = ("without --trace the hand model counts it" if getattr(args, "trace", False) else
                  f"the hand model that counts it cannot read this config: {args.latent_refused}"
                  if getattr(args, "latent_refused", None) else "")
        footer.append(f"warning   {shape[0].name}'s latent attention is traced as transformers runs it: every cached "
                      f"token expanded by kv_b_proj, every step; {how} attends over the latent itself, far less work "
                      f"at a long context, which a trace cannot count" + (f" ({remedy})" if remedy else ""))
    # (the engine verdict builds the step again under another engine: only where a report, JSON or a page shows it)
    engine = _engine_verdict(args, shape, result, None).strip() if args.format in ("table", "markdown", "json") or \
        args.html is not None else ""
    footer += [engine] if engine else []
    ignored = _ignored(args, shape[0])
    footer += [f"ignored   {x}" for x in ignored]
    # the warnings a table shows (the footer's, and the report's own of a step's measured kernels), for JSON's list
    # and CSV's stderr: a format that drops the table's prose keeps what says a figure may be wrong
    warned = [line.split(None, 1)[1] for line in (report.warning_lines(result, points=args.format != "csv")
                                                   if isinstance(result, Roofline) else []) + footer
              if line.startswith(("warning ", "override ", "faster "))]
    if args.format == "table":
        out += "".join(line + "\n" for line in report.wrap_lines(footer, None if args.wide else term_width()))
    elif args.format == "markdown":  # bullets of the footer's list, as Markdown's other footer lines are
        out += "".join(f"- {line}\n" for line in footer)
    elif args.format == "json":  # the document's own lists, [] for none (indented by 2, as every one)
        import json

        doc = json.loads(out)
        # the engine verdict's words, as the table's footer line says them (null: no step is host-bound)
        doc.update(ignored=ignored, warnings=warned, engine_verdict=engine.split(None, 1)[1] if engine else None)
        out = json.dumps(doc, indent=2) + "\n"
    elif args.format == "csv":  # its rows stay the table's; the options it ignored and the warnings on stderr
        for x in ignored:
            print(f"roofcalc: ignored: {x}", file=sys.stderr)
        for x in warned:
            print(f"roofcalc: warning: {x}", file=sys.stderr)
    if args.plot:
        from .plotting import save_plot

        save_plot(result, args.plot)
        if args.format in ("table", "markdown"):
            out += f"\nplot      written to {args.plot}\n"
    if args.html is not None:  # the page (page.py) imports plotly; nothing else does
        from .page import save_page

        save_page(result, args.html, defaults, record=args.record, notes=footer)
        out += f"html      written to {args.html}\n" if args.format in ("table", "markdown") else ""
    return _emit(out, output, args.format)


def _build(args: argparse.Namespace, shape):
    if _swept_axis(args) is not None:
        return build_tp_sweep(args, shape)
    if is_sweep(args):
        return build_sweep(args, shape)
    return build_roofline(args, shape)


def _add_engine(p) -> None:
    """--engine of the main command and profile, and --int4-kernel."""
    from .engines import DEFAULT_ENGINE, ENGINES
    from .predict import INT4_KERNELS

    p.add_argument("--kernel-db", action="store_true", help="GEMM, decode-attention and fused-MoE times read from "
                   "NVIDIA AIConfigurator's measured tables (the nearest measured shape, scaled) instead of their fits: "
                   "A100, H100, H200, B200, L40S, RTX PRO 6000; single steps; needs the kernel-db extra")
    p.add_argument("--engine", metavar="NAME", help=f"how the model runs: {' | '.join(ENGINES)}: its launch "
                   "model, attention kernel, KV cache update and host time per step outside the kernels, each "
                   f"cited (docs/conventions.md; default {DEFAULT_ENGINE}: transformers' eager generate; vllm is "
                   "vLLM's V1 engine, vllm-v0 its releases 0.2.6 to 0.4.2)")
    p.add_argument("--int4-kernel", type=str.lower, choices=tuple(INT4_KERNELS), help="the kernel int4 (GPTQ, AWQ) matmuls run: "
                   "marlin (near the 16-bit GEMM's rate, on an A100 below it on small layers: every preset's but "
                   "vllm-v0's for AWQ checkpoints); AutoAWQ's GEMM kernel as autoawq (AutoAWQ 0.2+, transformers "
                   "4.x's AWQ), autoawq-0.1 (before 0.2) or vllm-awq (vLLM's awq quantization: its default before "
                   "v0.5.3); AutoGPTQ's exllama (transformers 4.x's GPTQ) or exllamav2 (also vLLM's gptq), which "
                   "dequantize the weights from 8 and 51 rows")


def _resolve_engine(args: argparse.Namespace) -> None:
    """The --engine preset (a bad name: one line with the closest), and the launch model: --impl by hand where
    given, else the engine's."""
    from .engines import DEFAULT_ENGINE, find_engine

    if hasattr(args, "ep_attention"):  # (given or not: an ignored line says when it changes nothing)
        args.ep_attention_given, args.ep_attention = args.ep_attention is not None, args.ep_attention or "dp"
    args.engine_preset = find_engine(args.engine if args.engine is not None else DEFAULT_ENGINE)
    if args.engine_preset.name != DEFAULT_ENGINE:  # the presets' figures are CUDA engines' on NVIDIA GPUs
        hw = (_hardware(args)[0] if hasattr(args, "hw") else None)
        if hw is not None and (hw.kind != "gpu" or hw.compute_capability is None):
            other = "a " + hw.kind if hw.kind != "gpu" else "not one"
            graphs = " or --impl cuda-graph" if hw.kind == "gpu" else ""  # graphs replay on ROCm too (vLLM)
            raise RoofcalcError(f"--engine {args.engine_preset.name}'s figures are NVIDIA GPUs'; {hw.name} is "
                                f"{other}: use --engine hf{graphs}")
    preset = args.engine_preset
    if preset.no_pipeline and max(parse_sizes(str(getattr(args, "pp", "1")), "pp", 1024)) > 1:
        raise RoofcalcError(f"--engine {preset.name} runs no pipeline parallelism ({preset.no_pipeline}): drop --pp")
    if max(parse_sizes(str(getattr(args, "ep", "1")), "ep", 1024)) > 1:
        if preset.no_expert_parallel:
            raise RoofcalcError(f"--engine {preset.name} runs no expert parallelism ({preset.no_expert_parallel}): "
                                f"drop --ep")
        if preset.ep_by_heads and getattr(args, "ep_attention", "dp") != "tp":
            raise RoofcalcError(f"--engine {preset.name} runs expert parallelism with attention split by heads only "
                                f"({preset.ep_by_heads}): add --ep-attention tp")
    args.impl_by_hand = args.impl is not None
    if args.impl is None:
        args.impl = args.engine_preset.impl


def _engine(args: argparse.Namespace):
    """The engine preset of the command line (hf where none was resolved)."""
    from .engines import DEFAULT_ENGINE, ENGINES

    return getattr(args, "engine_preset", None) or ENGINES[DEFAULT_ENGINE]


def _engine_host(args: argparse.Namespace, shape=None):
    """What the step model takes of the engine preset, with the kernel its int4 matmuls run: --int4-kernel where
    given, else the preset's for an AWQ checkpoint of AutoAWQ's GEMM layout (``shape``'s weight_method), else
    Marlin-like; a GGUF file's (--weight-dtype q4_0) or a bitsandbytes checkpoint's experts not by Marlin's MoE
    kernel (engines.marlin_host)."""
    from dataclasses import replace

    from .engines import marlin_host

    engine = _engine(args)
    kernel = getattr(args, "int4_kernel", None)
    if kernel is None and getattr(shape, "weight_method", "") == "awq":
        kernel = engine.awq_kernel
    host = replace(engine.host, int4_kernel=kernel) if kernel else engine.host
    # a GGUF file's or a bitsandbytes checkpoint's experts run the engine's own kernels for it, not Marlin's MoE
    return marlin_host(host, getattr(shape, "weight_method", "") if not getattr(args, "weight_dtype", None) else "",
                       gguf=bool(getattr(args, "gguf", None)))


def _mla(args: argparse.Namespace) -> str:
    """DeepSeek's attention: --mla as given, else the engine's (engines.Engine.mla)."""
    if args.mla is not None:
        return args.mla
    preset = getattr(args, "engine_preset", None)
    return preset.mla if preset is not None else "naive"


def _ubatch(args: argparse.Namespace) -> int:
    """An unfused prompt's micro-batch: --ubatch as given; under --engine llama.cpp its n_ubatch's default, 512
    (llama.cpp common/common.h: n_ubatch = 512, since pull request #6017 split it from n_batch, whose default
    it was); else 0, the whole prompt at once (transformers' eager attention)."""
    if args.ubatch is not None:
        return args.ubatch
    preset = getattr(args, "engine_preset", None)
    return 512 if args.attention == "unfused" and preset is not None and preset.name == "llama.cpp" else 0


def _cache_update(args: argparse.Namespace) -> str:
    """How the KV cache takes a token: the engine's, unless --impl is given by hand (then as it always was:
    concatenation under hf-eager, in place otherwise)."""
    if getattr(args, "engine_preset", None) is not None and not getattr(args, "impl_by_hand", False):
        return args.engine_preset.cache_update
    return "concat" if getattr(args, "impl", None) == "hf-eager" else "in-place"


def quantized_int4(args: argparse.Namespace, s) -> bool:
    """Whether the run's weights are int4 (given, or the checkpoint's where no dtype flag says otherwise)."""
    given = args.weight_dtype or (None if getattr(args, "dtype_flag", args.dtype) else s.weight_format)
    return (given or "").startswith(("int4", "q4"))


MIN_GAIN = "10%"  # --min-gain's default: a doubling of the batch that gains less no longer pays


def _ignored(args: argparse.Namespace, s) -> list[str]:
    """The options given that change nothing in this run (a prefill's option on a decode step, a pipeline's without
    --pp, a kind of layer the model has not) and a range's end its steps do not reach, each in words: accepted,
    but said, never silently dropped."""
    from .inputs import unreached_ends

    import os

    decode = not args.prompt
    quantized = (args.weight_dtype or s.weight_format or "").startswith(("int", "q4", "q8"))
    sizes = _sizes_of(args)
    piped, no_ep = max(sizes["pp"]) > 1, max(sizes["ep"]) == 1
    return [what for given, what in (
        (args.micro_batches is not None and args.pp in (None, "1"),
         f"--micro-batches {args.micro_batches}: a pipeline's (--pp); this step has one stage"),
        (args.full_rectangle and decode, "--full-rectangle: a prefill's (--prompt); a decode step's one query "
                                         "attends every key"),
        (args.full_rectangle and args.attention == "unfused" and not decode,
         "--full-rectangle: an unfused attention computes its whole score matrix anyway (--attention unfused)"),
        (args.ubatch is not None and args.attention != "unfused",
         f"--ubatch {args.ubatch}: an unfused attention's (--attention unfused); a fused one scores each pair once"),
        (args.ubatch is not None and args.attention == "unfused" and decode,
         f"--ubatch {args.ubatch}: a prompt's (--prompt); a decode step's one query is one micro-batch"),
        (args.logits == "all" and decode, "--logits all: a prefill's (--prompt); a decode step computes one "
                                          "position's logits"),
        (args.experts != "expected" and s.moe is None, f"--experts {args.experts}: {s.name} has no experts"),
        (args.min_gain is not None and not is_sweep(args) and _swept_axis(args) is None,
         f"--min-gain {args.min_gain}: a sweep's (a list of --batch, --context or --prompt); one step has no doubling"),
        (getattr(args, "int4_kernel", None) is not None and not quantized_int4(args, s),
         f"--int4-kernel {getattr(args, 'int4_kernel', None)}: int4 weights' (GPTQ, AWQ); these are not int4"),
        (args.revision is not None and os.path.exists(os.path.expanduser(args.model)),
         f"--revision {args.revision}: a hub id's; {args.model} is a local file"),
        (args.record and args.format == "json", "--record: the table's (the JSON holds the nominal and measured figures "
                                                "it compares)"),
        (args.record and args.format == "csv", "--record: the table's (the CSV holds the kernels; the JSON, --format "
                                               "json, the nominal and measured figures it compares)"),
        (bool(args.point) and args.format == "csv" and not piped,
         "--point: the CSV holds the kernels and the step; the points are the JSON's (--format json: points[])"),
        (args.experts != "expected" and s.moe is not None and _dense_experts(args),
         f"--experts {args.experts}: under --engine vllm-v0's expert parallelism each rank's experts all run every "
         f"token, whatever the routing"),
        (args.mla not in (None, "naive") and s.mla is None and not getattr(args, "traced_latent", False),
         f"--mla {args.mla}: {s.name} has no latent attention"),
        (args.mla not in (None, "naive") and getattr(args, "traced_latent", False),
         f"--mla {args.mla}: {s.name}'s latent attention is traced as transformers runs it (see the warning)"),
        (args.launch_overhead is not None and args.impl == "hf-eager",
         f"--launch-overhead {args.launch_overhead}: under --impl hf-eager the host's time per eager op is the "
         f"cost (--host-overhead)"),
        (args.host_overhead is not None and args.impl != "hf-eager",
         f"--host-overhead {args.host_overhead}: only --impl hf-eager pays a host time per eager op"),
        (getattr(args, "ep_attention_given", False) and args.ep_attention == "dp" and no_ep,
         "--ep-attention dp: how --ep ranks split attention; this step runs no --ep"),
        *((bool(given) and piped,
           f"{flag} {given if isinstance(given, str) else ' '.join(given or ())}: a pipeline's (--pp) report is its "
           f"slowest stage on one micro-batch, which a measured step or kernel does not time; the pipeline line "
           f"holds the step's prediction")
          for flag, given in (("--tpot", args.tpot), ("--kernel-times", args.kernel_times), ("--point", args.point))),
        (args.group_size is not None and not quantized,
         f"--group-size {args.group_size}: only int8 and int4 weights have groups (--weight-dtype)"),
    ) if given] + [end for what in ("batch", "context", "prompt") if getattr(args, what, None) is not None
                   for end in unreached_ends(getattr(args, what), what)]


def _layout_words(result, layout: str) -> str:
    """What another engine's split under --tp (Workload.tp_layout) changes in a report's step (one step, a --tp
    comparison's largest size, a sweep's header step), in words: where it runs shared experts, Phi-3, a gated
    delta net (Qwen3-Next's, Qwen3.5's linear attention) or Nemotron-H's Mamba-2 mixers."""
    if getattr(result, "points", None) and hasattr(result.points[-1], "result"):
        result = result.points[-1].result
    a = result.header_analysis() if hasattr(result, "header_analysis") else getattr(result, "analysis", None)
    par, w = getattr(a, "parallel", None), getattr(a, "workload", None)
    if par is None or par.gpus <= 1 or w is None or w.tp_layout == layout:
        return ""  # (one GPU: nothing to import)
    from dataclasses import replace

    from .parallel import GATHERED_FAMILIES, one_moe_reduce

    there = replace(w, tp_layout=layout)
    words = []
    if any("shared_expert" in k.name for k in a.kernels) and one_moe_reduce(there, par) != one_moe_reduce(w, par):
        words.append(", one all-reduce a MoE layer" if one_moe_reduce(there, par) else
                     ", the shared experts' all-reduce apart")
    if getattr(a.shape, "family", "") in GATHERED_FAMILIES and (par.tp > 1 or par.tp_attention):
        words.append(", Phi-3's heads split" if layout == "serving" else ", Phi-3's heads gathered")
    verdict = getattr(a, "split_verdict", ())  # a traced rank's: its split in the serving engines' layout
    if verdict and (par.tp > 1 or par.tp_attention):
        words.append(", " + verdict[layout != "serving"])
    return "".join(words)


def _engine_verdict(args: argparse.Namespace, shape, result, width) -> str:
    """Where a step is bound by the host under the chosen engine (one step, a --tp comparison's sizes, a sweep's
    points): what it would take under an engine with CUDA graphs, by the same step model, and the verdict that
    changes with it (one line; none where no step is host-bound)."""
    from .engines import comparison_engine
    from .report import instance_of
    from .roofline import Roofline

    tp_sweep = instance_of(result, "parallel", "TPSweep")
    hw = result.points[0].result.hardware if tp_sweep else getattr(result, "hardware", None)
    if hw is None or hw.kind != "gpu" or hw.compute_capability is None:
        return ""  # the presets compared are CUDA engines' on NVIDIA GPUs
    if isinstance(result, Roofline):
        hit = result.step.bound == "host"
    elif tp_sweep:
        hit = [p.tp for p in result.points if p.step.bound == "host"]
    elif instance_of(result, "sweep", "Sweep") and getattr(result.grid, "bound", None) is not None:
        import numpy as np  # a sweep has imported it; a single step does not

        hit = np.asarray(result.grid.bound, dtype=object) == "host"
        hit = hit if hit.any() else None
    else:
        return ""
    if hit is None or hit is False or (isinstance(hit, list) and not hit):
        return ""
    from copy import copy

    from . import report

    here, other = _engine(args), comparison_engine(_engine(args))
    # --impl by hand in place of an engine's own graphs: the engine's own launches are the comparison (what the
    # user changed), not another engine's
    # (an engine that replays its graph for a few tokens alone, llama.cpp, is held against another engine's, as ever)
    own = getattr(args, "impl_by_hand", False) and args.impl != here.impl and here.graphs and not here.graph_tokens
    other = here if own else other
    alt = copy(args)
    alt.engine, alt.impl = other.name, None
    unfused = getattr(args, "attention", "fused") == "unfused"
    alt.attention, alt.ubatch = "fused", None  # (a serving engine's attention is one fused kernel)
    _resolve_engine(alt)
    if getattr(args, "traced_latent", False) and not getattr(args, "trace", False) and _mla(alt) != "naive":
        shape = load_model(alt)  # a latent the other engine absorbs: read as that run reads it (_latent_as_deepseek)
    try:
        _engine_weights(alt, hw)  # (the weight formats it does not run: refused, as --engine would refuse them)
        r = _build(alt, shape)
    except RoofcalcError as exc:  # its split refuses what this one runs (Phi-3's heads at a --tp that does not
        return f"engine    host-bound under {here.name}; --engine {other.name} would refuse it: {exc}"  # divide them)
    # an engine with graphs whose own host time the device waits for (vllm-v0, llama.cpp) differs by that overlap
    overlapped = here.graphs and not here.host_overlap and other.host_overlap
    model = shape[0] if isinstance(shape, tuple) else shape
    mla = getattr(model, "mla", None) is not None and args.mla is None and other.mla != here.mla
    under = (f"under {other.name}'s own launches (CUDA graphs, not --impl {args.impl}" if own else
             f"under --engine {other.name} (CUDA graphs{', its host time overlapping the device' if overlapped else ''}")
    under += (f"{', DeepSeek attention ' + other.mla if mla else ''}{_layout_words(result, other.tp_layout)}"
             f"{', attention fused' if unfused else ''}"
             f"{', read as DeepSeek-V3: its sparse attention and indexer not counted' if getattr(alt, 'latent_sparse', None) else ''})")
    here_name = f"{here.name} with --impl {args.impl}" if own else here.name
    if isinstance(result, Roofline):
        there, mine = r.step.predicted_s, result.step.predicted_s
        piped = (getattr(r.analysis, "note_pipeline", None), getattr(result.analysis, "note_pipeline", None))
        if all(piped):  # a pipeline's report is its slowest stage on one micro-batch: the steps are the pipelines'
            there, mine = piped[0][0].step_s, piped[1][0].step_s
        than = "as here" if report.ms(there) == report.ms(mine) else \
            f"{there / mine:.2g}x this step's time" if there > mine else f"{mine / there:.2g}x this step's speed"
        line = (f"engine    host-bound under {here_name}: {under} the step would take {report.ms(there)} "
                f"ms ({than}), {r.step.bound}-bound")
    elif tp_sweep:
        sizes = ", ".join(str(p.tp) for p in r.points)
        line = (f"engine    host-bound at --{result.axis} {', '.join(map(str, hit))} under {here_name}: {under} "
                f"--{result.axis} {sizes} would take {', '.join(report.ms(p.step_s) for p in r.points)} ms "
                f"({', '.join(p.step.bound for p in r.points)})")
        mine, theirs = result.stops_paying, r.stops_paying
        if (mine and mine[0]) != (theirs and theirs[0]):
            there = f"a step up stops paying at --{result.axis} {theirs[0]}" if theirs else "no size swept stops paying"
            here_ = f"at --{result.axis} {mine[0]}" if mine else "never, in the sizes swept"
            line += f"; there {there} (here it stops {here_})"
    else:
        import numpy as np

        step = np.asarray(r.grid.predicted_s, dtype=float)
        bounds = sorted(set(np.asarray(r.grid.bound, dtype=object)[hit].tolist()))
        request = hasattr(r.grid, "mean_tpot_s")  # a whole request's points: its steps' bound holding most time
        unit, scale = ("s", 1.0) if request and step[hit].min() >= 1.0 else ("ms", 1e3)
        lo, hi = (report.ms(x * scale / 1e3) for x in (step[hit].min(), step[hit].max()))
        took = f"it would take {lo} {unit}" if hit.sum() == 1 else \
            f"they would take {lo} {unit}" if lo == hi else f"they would take {lo} to {hi} {unit}"
        what = "requests" if request else "points"
        line = (f"engine    {int(hit.sum())} of {hit.size} {what} host-bound under {here_name}: {under} {took} "
                f"({'most of its time ' if request and hit.sum() == 1 else 'most of their time ' if request else ''}"
                f"{', '.join(bounds)}-bound)")
        mine = [v.doubling_batch for v in result.verdicts]
        theirs = [v.doubling_batch for v in r.verdicts]

        def batches(values) -> str:  # one per context swept, or one for all
            words = [f"{x:,}" if x else "never" for x in values]
            return words[0] if len(set(words)) == 1 else ", ".join(words) + " (by context)"

        if mine != theirs:
            line += f"; doubling the batch stops paying at {batches(theirs)} there (here at {batches(mine)})"
    return "\n".join(report.wrap_lines([line], width)) + "\n"


def _add_quiet(p: argparse.ArgumentParser) -> None:
    """--quiet of the long commands (measure, profile)."""
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress on stderr (else a bar with the time left on a terminal, a line a step when "
                   "stderr is a file or a pipe)")


def _listing_parser(name: str, description: str):
    """The parser of a catalog listing (``roofcalc models``, ``roofcalc hardware``): --wide alone."""
    def build() -> argparse.ArgumentParser:
        p = _Parser(prog=f"roofcalc {name}", description=description)
        p.add_argument("--wide", action="store_true", help="every column, whatever the terminal's width")
        return p

    return build


_hardware_parser = _listing_parser("hardware", "List the built-in hardware catalog (nominal, dense peaks).")
_models_parser = _listing_parser("models", "List the built-in offline catalog of model configs.")


def run_hardware(argv: Sequence[str]) -> str:
    from . import report
    from .hardware import hardware_catalog

    width = None if _hardware_parser().parse_args(argv).wide else term_width()
    return report.hardware_table(hardware_catalog(), width)


def run_models(argv: Sequence[str]) -> str:
    from . import report
    from .families import SUPPORTED_FAMILIES
    from .sources import catalog

    width = None if _models_parser().parse_args(argv).wide else term_width()
    return report.models_table(catalog(), SUPPORTED_FAMILIES, width)


def _measure_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="roofcalc measure",
                description="Measure this machine's roof: memory bandwidth (copy and y = x + 1), matmul FLOP/s per "
                "compute dtype, and the dispatch overhead of one op; print them against the closest catalog entry "
                "and write a profile for --hw-file. A progress bar with the time left shows on a terminal.")
    p.add_argument("--device", type=str.lower, choices=("cpu", "cuda"), default="cpu",
                   help="the CPU (numpy; default) or the first CUDA GPU (PyTorch)")
    p.add_argument("--dtype", help="compute dtypes to measure, comma-separated (cpu: fp32; cuda: fp32,tf32,fp16,bf16)")
    p.add_argument("--out", "-o", metavar="PROFILE.json", help="write the measured profile here")
    p.add_argument("--nominal", help="the catalog entry to compare with (default: the closest by name)")
    p.add_argument("--repeats", type=positive_int, default=7, help="runs of each measurement (default 7)")
    p.add_argument("--size", help="bytes per bandwidth array (default: 8x the last-level cache, at least 256 MiB, "
                   "at most 1/8 of free memory), e.g. 512MiB")
    p.add_argument("--no-curves", action="store_true",
                   help="skip the kernel curves (matmuls over M, attention, host time per op): the roof alone")
    p.add_argument("--passes", type=positive_int,
                   help="passes over the kernel curves, each point the median of its passes (default 5 on a CPU, "
                   "3 on a GPU; more on a machine whose load changes)")
    p.add_argument("--collectives", action="store_true",
                   help="also measure all-reduce, all-gather and all-to-all between --nproc processes (gloo on "
                   "the CPU, NCCL with --device cuda): the profile's link, for --tp")
    p.add_argument("--nproc", type=positive_int, default=2, help="processes for --collectives (default 2)")
    _add_quiet(p)
    return p


def run_measure(argv: Sequence[str]) -> str:
    from .measure import Progress, closest_nominal, measure, report, write_profile

    args = _measure_parser().parse_args(argv)
    if args.out is not None:  # before the run: a profile is JSON, in a folder that exists (not over a CSV or a plot)
        from .inputs import check_writable

        check_writable(args.out, "--out", (".json",))
        _check_profile_out(args.out)
    if args.dtype is not None and not args.dtype.strip():
        raise RoofcalcError("--dtype is empty; give compute dtypes such as fp32 or fp32,bf16")
    dtypes = [d.strip() for d in args.dtype.split(",")] if args.dtype is not None else None
    nbytes = int(parse_quantity(args.size, "size", bounded=False)) if args.size is not None else None
    if nbytes is not None and args.device == "cpu":  # a GPU's arrays are refused when torch cannot allocate them
        from .inputs import one_line
        from .measure import check_stream_size

        check_stream_size(nbytes, one_line(args.size)[:40])
    if args.nproc > 1 and not args.collectives and args.nproc != 2:
        raise RoofcalcError("--nproc is for --collectives")
    if args.collectives:  # before minutes of measuring the roof
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            raise RoofcalcError(f"measuring collectives needs PyTorch: {torch_install()}")
    if args.nominal is not None:  # a misspelt name is refused before minutes of measuring, not after
        _find_hardware(args.nominal, "--nominal")
    from .measure import LoadWatch

    watch = LoadWatch()  # the load before anything runs, the collectives' processes included in this run's own
    links = None
    if args.collectives:  # first, while this process is idle: threads still spinning after the matmuls
        from .collectives import measure_collectives  # took the cores from gloo's processes (8 ms, not 1,

        with Progress("collectives", 1, args.quiet) as progress:  # for a 4 KiB all-reduce here)
            progress(f"collectives between {args.nproc} processes")
            links = measure_collectives(args.nproc, args.device, max(3, args.repeats))
    if args.passes is not None and args.no_curves:
        raise RoofcalcError("--passes is for the kernel curves; --no-curves skips them")
    m = measure(args.device, dtypes, args.repeats, nbytes, quiet=args.quiet, curves=not args.no_curves,
                passes=args.passes, watch=watch)
    nominal, why = closest_nominal(m, args.nominal)
    if args.out:
        write_profile(m, nominal, args.out, links)
    out = report(m, nominal, why, args.out)
    if links is not None:
        from .collectives import report_lines

        out += "\n".join(report_lines(links)) + "\n"
    return out


def _profile_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="roofcalc profile",
                description="Build the real transformers model from its config with random weights, run a prefill "
                "and decode steps on this machine, and put its measured TPOT and per-kernel times (torch.profiler) "
                f"next to roofcalc's floors. Needs PyTorch: {torch_install()}. A progress bar with the time left "
                "shows on a terminal.")
    p.add_argument("model", metavar="MODEL", help="a config.json, a folder holding one, a catalog name or a hub id")
    p.add_argument("--device", type=str.lower, choices=("cpu", "cuda"), default="cpu",
                   help="run the model on the CPU (default) or the first CUDA GPU")
    from .dtypes import torch_names

    p.add_argument("--dtype", type=str.lower, choices=tuple(torch_names()), default="fp32",
                   help="weights, activations and cache (default fp32)")
    p.add_argument("--batch", "-b", type=positive_int, default=1, help="sequences per step (default 1)")
    p.add_argument("--context", "-s", type=positive_int, default=DEFAULT_CONTEXT,
                   help=f"positions each decode step attends to, itself included (default {DEFAULT_CONTEXT})")
    p.add_argument("--steps", type=positive_int, default=8, help="decode steps timed for the median TPOT (default 8)")
    p.add_argument("--hw-file", help="a measured profile (roofcalc measure --out); default: measure this device first")
    p.add_argument("--prefill", type=str.lower, choices=("auto", "run", "skip"), default="auto",
                   help="fill the cache by a real prefill (run, which also times it) or with random values (skip); "
                   "auto runs it unless the measured peak says it would take over a minute")
    _add_engine(p)
    p.add_argument("--impl", type=str.lower, choices=("hf-eager", "fused", "cuda-graph"),
                   help="the launch model of the prediction beside the measurement, by hand: overrides the engine's "
                   "(default: the engine's; hf's is hf-eager, transformers' eager modules, which is what runs)")
    p.add_argument("--family", help="read an unknown model_type as this family")
    p.add_argument("--format", "-f", type=_format_name, choices=("table", "markdown", "csv", "json"), default="table",
                   help="the report as a table for the terminal (default), a markdown table (md too), CSV or JSON")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the report to FILE instead of standard output ('-': standard output)")
    p.add_argument("--wide", action="store_true", help="every column of the kernel table")
    p.add_argument("--plot", metavar="FILE.png|FILE.svg", help="the roofline with the measured kernels and step")
    p.add_argument("--html", metavar="FILE.html", help="one self-contained HTML page of the step with the measured "
                   "kernels placed (needs plotly: pip install '.[html]' in roofcalc's checkout)")
    p.add_argument("--update", action="store_true",
                   help="write what was measured (matmul and attention efficiencies, host time per op) back into "
                   "the --hw-file profile, so the next prediction uses this model's own kernels; not where the "
                   "run's own timings warned (the profile is left as it was, exit status 1)")
    p.add_argument("--update-anyway", action="store_true",
                   help="--update even where the run's timings warned, each figure's note saying what it warned of")
    _add_quiet(p)
    return p


def run_profile(argv: Sequence[str]) -> str:
    from . import report
    from .hardware import load_profile
    from .hardware import hw_file_warnings
    from .profile import _torch_present, profile_inputs, profile_lines, profile_model, profile_record, profile_trust
    from .roofline import roofline

    args = _profile_parser().parse_args(argv)
    _no_empty_files(args)
    _resolve_engine(args)
    args.update = args.update or args.update_anyway
    if args.update and not args.hw_file:
        raise RoofcalcError("--update writes into the --hw-file profile; give one (roofcalc measure --out me.json)")
    if args.update and args.impl != "hf-eager":  # profile runs transformers eagerly: its host time is per eager op
        raise RoofcalcError(f"--update writes the host time per eager op the profiled run spent; under --impl "
                            f"{args.impl} it has no such count (drop --engine/--impl)")
    _check_family(args.family)
    output = _check_output(args.output, {"the model's config.json": args.model, "the --hw-file profile": args.hw_file,
                                         "the --plot image": args.plot, "the --html page": getattr(args, "html", None)})
    _torch_present()  # says which extra to install before any work (importing torch waits for the model's check)
    if args.plot is not None:
        _check_plot(args.plot)
    if args.html is not None:  # before minutes of work: the path, and plotly (page.py alone imports it)
        from .page import _plotly, check_html_path

        check_html_path(args.html)
        _plotly()
    # the model and the run's sizes, before the device is measured (a minute's work)
    inputs = profile_inputs(args.model, device=args.device, dtype_name=args.dtype, context=args.context,
                            family=args.family)
    first = ()  # the warnings of the measurement the profile comes from
    if args.hw_file:
        hw_profile = load_profile(args.hw_file)
        first = hw_file_warnings(args.hw_file)
        kind = "cpu" if args.device == "cpu" else "gpu"
        if hw_profile.kind != kind:  # a GPU's roof (and overlap) for a run on the CPU, or the other way round
            raise RoofcalcError(f"--hw-file {args.hw_file} is a {hw_profile.kind}'s profile and --device {args.device} "
                                f"runs on a {kind}: give it \"kind\": \"{kind}\" if it measured this device, or "
                                f"measure it (roofcalc measure --device {args.device} --out FILE)")
    else:
        from dataclasses import replace

        from .measure import closest_nominal, measure

        m = measure(args.device, [args.dtype], repeats=3, quiet=args.quiet, passes=2)  # quick: `measure` does more
        nominal, _ = closest_nominal(m, None)
        hw_profile = m.profile(nominal)
        # the device's measurement, apart from the profiled run's own warnings below it
        first = [w.replace("warning   ", "warning   measuring the device: ", 1)
                 for w in replace(m.trust, command="profile").warnings()]
    result = profile_model(args.model, device=args.device, dtype_name=args.dtype, batch=args.batch,
                           context=args.context, steps=args.steps, family=args.family, quiet=args.quiet,
                           peak_flop_per_s=hw_profile.peak_flop_per_s.get(args.dtype),
                           prefill={"run": True, "skip": False, "auto": None}[args.prefill], inputs=inputs)
    nominal_hw = _find_hardware(hw_profile.nominal, "the profile's nominal") if hw_profile.nominal else hw_profile
    r = roofline(result.analysis, nominal_hw, measured_profile=hw_profile, impl=args.impl,
                 kernel_times=result.kernel_times, tpot_s=result.tpot_s,
                 engine_host=_engine_host(args, getattr(result.analysis, "shape", None)))
    if args.plot:
        from .plotting import save_plot

        save_plot(r, args.plot)
    updated, refused = None, False
    trust = profile_trust(result, r, first)
    spoilt = [w.split(None, 1)[1] for w in trust.run_warnings()]
    if args.update and spoilt and not args.update_anyway:  # figures its own checks say not to keep: left unwritten
        refused = True
        updated = (f"not updated {args.hw_file}: this run's timings warned ({len(spoilt)} below), and its figures "
                   f"would replace the profile's; profile again on an idle machine, or give --update-anyway to "
                   f"write them with the warnings in their notes")
    elif args.update:
        import time
        from dataclasses import replace

        from .hardware import save_profile
        from .profile import updated_model

        note = (f"roofcalc profile {args.model} ({args.dtype}, batch {args.batch}, context {args.context}), "
                f"{time.strftime('%Y-%m-%d')}")
        # what this run's own timings warned of (written by --update-anyway alone): the efficiencies' and the host's
        # notes end with it, and hw_file_warnings says so in every later report on the profile; the device
        # measurement's warnings, and the profile's own, stay where they are (a clean run clears the notes)
        warned = spoilt
        said = f"; its run warned ({len(warned)}): " + "; ".join(warned) if warned else ""
        from .inputs import read_json

        original = read_json(args.hw_file, "hardware profile")  # what it holds beyond the schema stays
        save_profile(replace(hw_profile, efficiency=updated_model(result, r, note, said)), args.hw_file,
                     keep=original)
        updated = f"updated   {args.hw_file}: this run's matmul and attention efficiencies and host time per op"
        if warned:
            updated += (f", written though the run warned ({len(warned)} below: the efficiencies' and the host's "
                        f"notes say so; the matmul curve's points hold no note, and a later run replaces only "
                        f"those at its own sizes)")
    lines = profile_lines(result, r, trust)
    if args.html is not None:
        from .page import save_page

        save_page(r, args.html, notes=lines)
    if args.format == "json":
        import json

        doc = report.to_record(r)
        doc["profile"] = {**profile_record(result, trust), "updated": bool(updated) and not refused}
        out = _emit(json.dumps(doc, indent=2) + "\n", output, args.format)
    else:
        width = None if args.wide else term_width()
        out = report.render(r, args.format, width=width)
        if args.format in ("table", "markdown"):
            lines = [f"- {line}" for line in lines] if args.format == "markdown" else report.wrap_lines(lines, width)
            out += "\n" + "\n".join(lines) + "\n"
            if args.plot:
                out += f"plot      written to {args.plot}\n"
            if args.html is not None:
                out += f"html      written to {args.html}\n"
            if updated:
                out += updated + "\n"
        out = _emit(out, output, args.format)
    if refused:  # the report, and exit status 1: --update did not do what it was asked
        if args.format not in ("table", "markdown") or output is not None:
            print(f"roofcalc: {updated}", file=sys.stderr)
        return Output(out, 1)
    return out


class Output(str):
    """A command's document with the exit status it ends with where that is not 0 (profile --update refused)."""

    def __new__(cls, text: str, status: int):
        obj = super().__new__(cls, text)
        obj.status = status
        return obj


def _help_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="roofcalc help", description="Show the overview of roofcalc, or one command's help.")
    p.add_argument("command", nargs="?", metavar="COMMAND",
                   help=f"the command whose help to show: {', '.join(SUMMARIES)} (default: the overview)")
    return p


def run_help(argv: Sequence[str]) -> str:
    from .inputs import did_you_mean, one_line

    args = _help_parser().parse_args(argv)
    if args.command is None:
        return _main_parser(listing=True).format_help()
    if args.command not in PARSERS:
        hint = did_you_mean(args.command, {name: name for name in SUMMARIES})
        raise RoofcalcError(f"no command '{one_line(args.command)[:60]}'{f' ({hint})' if hint else ''}; the commands "
                            f"are {', '.join(SUMMARIES)}, and 'roofcalc MODEL --help' is the model's options")
    return PARSERS[args.command]().format_help()


COMMANDS = {"models": run_models, "hardware": run_hardware, "measure": run_measure, "profile": run_profile,
            "help": run_help}
# every parser a user meets, by command ("roofcalc": the bare-model form)
PARSERS = {"roofcalc": _main_parser, "models": _models_parser, "hardware": _hardware_parser,
           "measure": _measure_parser, "profile": _profile_parser, "help": _help_parser}


_NEGATIVE = re.compile(r"^-[0-9.]")


def _negatives_joined(argv: list[str]) -> list[str]:
    """'--tpot -1ms' as '--tpot=-1ms': argparse takes a value like -1ms (a number with a unit) for an option and
    says 'expected one argument'; joined, the option's own check says what is wrong with the value."""
    out: list[str] = []
    for a in argv:
        if _NEGATIVE.match(a) and out and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


def _command_typo(first: str) -> None:
    """Refuse a first word that is no model but close to a command's name ('mesure'), naming the command: a word
    that is a file, a catalog name or a hub id (owner/name) is a model, as always."""
    import difflib
    import os

    if not first or first.startswith("-") or "/" in first or os.path.exists(os.path.expanduser(first)):
        return
    close = difflib.get_close_matches(first.lower(), list(COMMANDS), n=1, cutoff=0.75)
    if not close:
        return
    from .sources import find_in_catalog

    if find_in_catalog(first) is None:
        raise RoofcalcError(f"'{first}' is not a command, a file or a catalog name: did you mean 'roofcalc "
                            f"{close[0]}'? ('roofcalc --help' lists the commands)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = _negatives_joined(list(sys.argv[1:] if argv is None else argv))
    try:
        if argv and argv[0] in COMMANDS:
            out = COMMANDS[argv[0]](argv[1:])
        else:
            _command_typo(argv[0] if argv else "")
            out = run_main(argv)
    except RoofcalcError as exc:
        from .inputs import one_line, with_torch_install

        print(f"roofcalc: error: {one_line(with_torch_install(str(exc)))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    try:
        if sys.stdout is None:
            raise OSError("standard output is closed")
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:  # roofcalc ... | head
        try:
            sys.stdout = None  # nothing more to flush at exit
        finally:
            return 0
    except (OSError, ValueError) as exc:  # stdout full (/dev/full) or closed (>&-)
        sys.stdout = None
        print(f"roofcalc: error: cannot write the output: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    return getattr(out, "status", 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
