"""Reading what comes from outside: files and numbers, each checked once, or one line of RoofcalcError.

Files are read only if they are regular files, up to a size bound (a FIFO or /dev/zero would
never end); JSON documents refuse NaN and Infinity, run-away nesting and integers of thousands
of digits; numbers must be finite and within a stated range.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from .errors import RoofcalcError

MAX_FILE_BYTES = 64 << 20  # a config, a profile or a list of kernel times is far smaller


def one_line(message: str) -> str:
    """A message as one line: newlines and other control characters inside values shown escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in message)


def read_text(path: str | Path, what: str, limit: int = MAX_FILE_BYTES) -> str:
    """The text of a regular file of at most ``limit`` bytes (UTF-8, a byte-order mark allowed)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise RoofcalcError(f"cannot read {what} {one_line(str(path))[:200]}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a pipe, a device?)"
        raise RoofcalcError(f"{what} {one_line(str(path))[:200]} is {kind}; pass a file")
    if st.st_size > limit:
        raise RoofcalcError(f"{what} {one_line(str(path))[:200]} is {st.st_size:,} bytes; at most {limit:,} are read")
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise RoofcalcError(f"cannot read {what} {one_line(str(path))[:200]}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RoofcalcError(f"{what} {one_line(str(path))[:200]} is not UTF-8 text") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str, where: str) -> Any:
    """JSON without NaN or Infinity, nesting or digits without end."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise RoofcalcError(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                            f"is it truncated?") from None
    except RecursionError:
        raise RoofcalcError(f"{where} nests too deeply to be a config or a profile") from None
    except ValueError as exc:  # NaN / Infinity, or an integer of more than 4,300 digits
        raise RoofcalcError(f"{where}: {one_line(str(exc))[:160]}") from None


def read_json(path: str | Path, what: str) -> Any:
    return parse_json(read_text(path, what), f"{what} {one_line(str(path))[:200]}")


def number(value: Any, what: str, lo: float = 0.0, hi: float = math.inf, *, low_open: bool = False) -> float:
    """A finite real number (not a bool, not a string) in [lo, hi] ((lo, hi] with ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RoofcalcError(f"{what} must be a number, got {one_line(repr(value))[:60]}")
    try:
        x = float(value)
    except OverflowError:
        raise RoofcalcError(f"{what} is too large") from None
    if not math.isfinite(x) or x > hi or x < lo or (low_open and x == lo):
        bound = f"above {lo:g}" if low_open else f"at least {lo:g}"
        raise RoofcalcError(f"{what} must be a finite number {bound}" + ("" if hi == math.inf else f" and at most {hi:g}")
                            + f", got {one_line(repr(value))[:60]}")
    return x


def text(value: Any, what: str, limit: int = 200) -> str:
    if not isinstance(value, str):
        raise RoofcalcError(f"{what} must be a string, got {one_line(repr(value))[:60]}")
    return one_line(value)[:limit]


def env_name_offline() -> str | None:
    """The offline variable that is set, by its own name (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE)."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return name
    return None
