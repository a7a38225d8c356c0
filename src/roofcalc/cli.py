"""The command line: parse, call the library, print. No formulas here."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .errors import RoofcalcError

DEFAULT_BATCH = 1
DEFAULT_CONTEXT = 500  # the seed's worked example
DEFAULT_DTYPE = "fp16"  # the seed's


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        raise RoofcalcError(f"{message} (see '{self.prog} --help')")


def positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _main_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="roofcalc",
        description="Per-kernel FLOPs, bytes and arithmetic intensity of a transformer's decode or prefill step, "
        "from its HuggingFace config.json. Other commands: 'roofcalc models' lists the offline catalog.",
    )
    p.add_argument("model", help="a config.json, a folder holding one, a catalog name (roofcalc models) or a hub id")
    p.add_argument("--batch", "-b", type=positive_int, help=f"sequences per step, B (default {DEFAULT_BATCH})")
    phase = p.add_mutually_exclusive_group()
    phase.add_argument("--context", "-s", type=positive_int,
                       help=f"decode: KV length the new token attends to, itself included (default {DEFAULT_CONTEXT})")
    phase.add_argument("--prompt", "-p", type=positive_int, help="prefill a prompt of this many tokens instead of decoding")
    p.add_argument("--dtype", help=f"weights, activations and KV cache (default {DEFAULT_DTYPE}): fp32 bf16 fp16 fp8")
    p.add_argument("--weight-dtype", help="weights only: fp32 bf16 fp16 fp8 int8 int4")
    p.add_argument("--act-dtype", help="activations only")
    p.add_argument("--kv-dtype", help="KV cache only (also int8)")
    p.add_argument("--group-size", type=positive_int, default=128, help="int8/int4 weights: values per fp16 scale (default 128)")
    p.add_argument("--full-rectangle", action="store_true",
                   help="prefill: count every (query, key) pair, as dense attention and FLOP counters do (default: causal)")
    p.add_argument("--logits", choices=("last", "all"), default="last",
                   help="prefill: lm_head on the last token of each sequence (default) or on every position")
    p.add_argument("--family", help="read a config whose model_type roofcalc does not know as this family (e.g. llama)")
    p.add_argument("--format", "-f", choices=("table", "markdown", "csv", "json"), default="table")
    return p


def _workload(args: argparse.Namespace):
    from .calculator import Workload, dtype

    base = args.dtype or DEFAULT_DTYPE
    kw = dict(
        weight_dtype=dtype(args.weight_dtype or base),
        act_dtype=dtype(args.act_dtype or base),
        kv_dtype=dtype(args.kv_dtype or base),
        group_size=args.group_size,
        causal=not args.full_rectangle,
        logits_all=args.logits == "all",
    )
    if kw["act_dtype"].quantized:
        raise RoofcalcError(f"activations cannot be {kw['act_dtype'].name}; use --weight-dtype for integer weights")
    batch = args.batch or DEFAULT_BATCH
    if args.prompt:
        return Workload.prefill(batch, args.prompt, **kw)
    return Workload.decode(batch, args.context or DEFAULT_CONTEXT, **kw)


def run_main(argv: Sequence[str]) -> str:
    from . import report
    from .calculator import analyze
    from .shapes import load_shape

    args = _main_parser().parse_args(argv)
    defaults = {name for name in ("batch", "context", "dtype") if getattr(args, name) is None}
    if args.prompt:
        defaults.discard("context")
    if args.weight_dtype or args.act_dtype or args.kv_dtype:
        defaults.discard("dtype")
    workload = _workload(args)
    shape = load_shape(args.model, family=args.family)
    return report.render(analyze(shape, workload), args.format, defaults)


def run_models(argv: Sequence[str]) -> str:
    from tabulate import tabulate

    from .shapes import SUPPORTED_FAMILIES, catalog

    p = _Parser(prog="roofcalc models", description="List the built-in offline catalog of model configs.")
    p.parse_args(argv)
    rows = []
    for e in catalog():
        c = e.config
        rows.append([e.hub_id, c["model_type"], f"{e.params_total:,}", ", ".join(e.aliases),
                     "yes" if e.supported else "not yet"])
    table = tabulate(rows, headers=["hub id", "model_type", "parameters", "aliases", "supported"], tablefmt="simple",
                     disable_numparse=True)
    return (f"{table}\n\nNames match exactly (case-insensitive); any other hub id is read from the HF cache or the hub."
            f"\nSupported families: {', '.join(SUPPORTED_FAMILIES)}.\n")


COMMANDS = {"models": run_models}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            out = COMMANDS[argv[0]](argv[1:])
        else:
            out = run_main(argv)
    except RoofcalcError as exc:
        print(f"roofcalc: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:  # roofcalc ... | head
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
