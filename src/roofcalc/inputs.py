"""Every outside input passes here: each is checked once and comes out as a value or one line of RoofcalcError.

- files: read only if they are regular files, up to a size bound (a FIFO or /dev/zero would never
  end); JSON documents refuse run-away nesting and integers of thousands of digits, and NaN and Infinity
  except in a config.json (Python's json and transformers read them: Nemotron-H's time_step_limit holds
  Infinity), whose keys roofcalc reads are each checked finite and in range where it reads them;
- numbers: finite and within a stated range; command-line integers are ASCII digits only;
- quantities with units (270GB/s, 250GiB/s, 50TFLOP/s, 15ms, 80GiB), lists and ranges of sizes,
  percentages, measured points, kernel-time files.

Configs are read key by key through their family's record (roofcalc.shapes.ConfigReader, which uses
these checks); hardware profiles through roofcalc.hardware.hardware_from_dict.
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import re
import stat
from pathlib import Path
from typing import Any

from .errors import RoofcalcError

MAX_FILE_BYTES = 64 << 20  # a config, a profile or a list of kernel times is far smaller


def one_line(message: str) -> str:
    """A message as one line: newlines and other control characters inside values shown escaped."""
    if message.isprintable():
        return message
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


class Pairs(list):
    """A JSON object's (key, value) pairs in the order given, a key given twice kept twice (parse_json's
    ``pairs``: json.loads would keep the last silently)."""


def parse_json(text: str, where: str, constants: bool = False, pairs: bool = False) -> Any:
    """JSON without nesting or digits without end; without NaN or Infinity unless ``constants`` (a config.json,
    read as transformers reads it: each key roofcalc uses is checked where it is read). ``pairs``: each object
    as its Pairs, so that a caller can refuse a key given twice."""
    hook = {"object_pairs_hook": Pairs} if pairs else {}
    try:
        return json.loads(text, **hook) if constants else json.loads(text, parse_constant=_no_constant, **hook)
    except json.JSONDecodeError as exc:
        raise RoofcalcError(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                            f"is it truncated?") from None
    except RecursionError:
        raise RoofcalcError(f"{where} nests too deeply to be a config or a profile") from None
    except ValueError as exc:  # NaN / Infinity, or an integer of more than 4,300 digits
        raise RoofcalcError(f"{where}: {one_line(str(exc))[:160]}") from None


def read_json(path: str | Path, what: str, constants: bool = False) -> Any:
    return parse_json(read_text(path, what), f"{what} {one_line(str(path))[:200]}", constants)


def number(value: Any, what: str, lo: float = 0.0, hi: float = math.inf, *, low_open: bool = False) -> float:
    """A finite real number (not a bool, not a string) in [lo, hi] ((lo, hi] with ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy's scalars too (a DataFrame's cell)
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


# --------------------------------------------------------------------------- command-line values


def positive_int(text: str) -> int:
    if not text.isascii():
        raise argparse.ArgumentTypeError(f"'{one_line(text)[:40]}' is not a whole number (digits 0-9)")
    try:
        value = int(text.replace("_", ""), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{one_line(text)[:40]}' is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    if value > 1 << 24:
        raise argparse.ArgumentTypeError(f"{value:,} is beyond any real workload (limit {1 << 24:,})")
    return value


def percent(text: str, what: str = "--min-gain") -> float:
    try:
        if not text.isascii():
            raise ValueError
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise RoofcalcError(f"{what} '{one_line(text)[:40]}' is not a percentage such as 10%") from None
    if not 0 < value < 100:
        raise RoofcalcError(f"{what} {one_line(text)[:40]}: give a percentage between 0 and 100")
    if value < 1 and "%" not in text:  # 0.05: a fraction (5 %) or 0.05 %? a bare number is a percentage
        raise RoofcalcError(f"{what} {one_line(text)[:40]}: a bare number is a percentage, so this is "
                            f"{value:g}% (not {100 * value:g}%); write it with its % sign ({100 * value:g}% or "
                            f"{value:g}%)")
    return value / 100


MAX_GRID_POINTS = 10_000_000  # 80 MB per float64 array
_RANGE = re.compile(r"^(\d+)\.\.(\d+)(?::(\d+))?$")


def parse_sizes(text: str, what: str = "batch", limit: int = 1 << 24) -> tuple[int, ...]:
    """'64', '1,4,16,64', '1..256' (1, 2, 4, … 256: doubling), '512..4096:512' (a step of 512),
    or a mix such as '1,3..96,100'. Sorted, without repeats. Every value in 1 … limit."""
    text = one_line(str(text))
    if not text.isascii():
        raise RoofcalcError(f"--{what} '{text[:60]}': use digits 0-9, such as 1,4,16 or 1..256")
    items = [t.strip().replace("_", "") for t in text.split(",")]
    if not any(items):
        raise RoofcalcError(f"--{what} is empty; give numbers such as 1,4,16 or a range such as 1..256")
    values: set[int] = set()
    for item in items:
        if not item:
            raise RoofcalcError(f"--{what} '{text}' has an empty item; separate numbers with single commas")
        if max((len(run) for run in re.findall(r"\d+", item)), default=0) > 12:
            raise RoofcalcError(f"--{what}: '{item[:20]}...' is beyond any real workload (limit {limit:,})")
        if item.isdigit():
            values.add(int(item))
            continue
        if item.startswith("-") and (item[1:].isdigit() or _RANGE.match(item[1:])):
            raise RoofcalcError(f"--{what}: {item} is negative; sizes start at 1")
        m = _RANGE.match(item)
        if not m:
            k = re.fullmatch(r"(\d+)[kK]", item)  # '8k': a context written as people say it
            raise RoofcalcError(f"--{what}: '{item}' is not a whole number or a range such as 1..256 (doubling) "
                                f"or 512..4096:512 (a fixed step)"
                                + (f"; did you mean {int(k[1]) * 1024} ({k[1]} x 1,024)?" if k else ""))
        lo, hi = int(m[1]), int(m[2])
        if lo < 1:
            raise RoofcalcError(f"--{what}: the range '{item}' must start at 1 or more")
        if hi < 1:
            raise RoofcalcError(f"--{what}: the range '{item}' must end at 1 or more")
        if hi < lo:
            raise RoofcalcError(f"--{what}: the range '{item}' runs backwards; write {hi}..{lo}")
        if hi > limit:
            raise RoofcalcError(f"--{what}: {hi:,} is beyond any real workload (limit {limit:,})")
        if m[3] is None:
            values.update(lo << k for k in range((hi // lo).bit_length()))
        else:
            step = int(m[3])
            if step < 1:
                raise RoofcalcError(f"--{what}: the step of '{item}' must be at least 1")
            if (hi - lo) // step + 1 > MAX_GRID_POINTS:
                raise RoofcalcError(f"--{what}: '{item}' has more than {MAX_GRID_POINTS:,} values")
            values.update(range(lo, hi + 1, step))
    check_sizes(sorted(values), f"--{what}", limit)
    return tuple(sorted(values))


def unreached_ends(text, what: str = "batch") -> list[str]:
    """The ends of ``text``'s ranges (parse_sizes) their steps do not reach, each in words: '1..6' doubles 1 to 4,
    '512..4000:512' steps to 3,584 (the sweep ends short of what was written, and says so)."""
    out = []
    try:
        swept = set(parse_sizes(text, what))
    except RoofcalcError:  # (refused where it is parsed, with its own words)
        return []
    for item in (t.strip().replace("_", "") for t in one_line(str(text)).split(",")):
        m = _RANGE.match(item)
        if not m or int(m[1]) < 1 or int(m[2]) < int(m[1]):
            continue
        lo, hi = int(m[1]), int(m[2])
        last = lo << ((hi // lo).bit_length() - 1) if m[3] is None else \
            lo + (hi - lo) // int(m[3]) * int(m[3]) if int(m[3]) >= 1 else hi
        if last != hi and hi not in swept:  # (an end another item sweeps is swept)
            how = f"{lo:,} doubled" if m[3] is None else f"a step of {int(m[3]):,} from {lo:,}"
            out.append(f"--{what} {item}: {hi:,} is not reached by {how}; the sweep ends at {last:,}")
    return out


def distinct_sizes(values, what: str, limit: int) -> list[int]:
    """A library list of sizes (one number, or any iterable of them) checked as check_sizes checks them, then in
    ascending order with each once, as the command line's lists are (parse_sizes)."""
    if getattr(values, "ndim", None) == 0:  # a 0-d numpy array: its number
        values = values.item()
    values = [values] if isinstance(values, numbers.Real) or not hasattr(values, "__iter__") or \
        isinstance(values, (str, bytes)) else list(values)
    check_sizes(values, what, limit)
    return sorted({int(v) for v in values})


def check_sizes(values, what: str, limit: int) -> None:
    if len(values) == 0:
        raise RoofcalcError(f"no {what} values given")
    for v in values:
        if isinstance(v, (bool, str, bytes)) or not isinstance(v, numbers.Real) or not math.isfinite(v) or int(v) != v:
            raise RoofcalcError(f"{what} must be whole numbers, got {v!r}")
        if v < 1:
            raise RoofcalcError(f"{what}: {v} is not a size; sizes start at 1" if what.startswith("--") else
                                f"{what} must be at least 1, got {v}")
        if v > limit:
            raise RoofcalcError(f"{what} {int(v):,} is beyond any real workload (limit {limit:,})")


# --------------------------------------------------------------------------- quantities with units

_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgtpe]?)\s*(.*?)\s*$", re.IGNORECASE)
_UNITS = {
    "bandwidth": ("b/s", "bytes/s", "byte/s", "bps"),  # the byte's B (a lower-case b, a bit, is refused)
    "flops": ("flop/s", "flops", "flop"),
    "time": ("s", "ms", "us", "µs", "ns"),
    "size": ("b", "byte", "bytes"),
}


def parse_quantity(text: str, kind: str, usual: str = "", bounded: bool = True) -> float:
    """'270GB/s' -> 2.7e11, '250GiB/s' -> 250·2³⁰, '50TFLOP/s' -> 5e13, '15ms' -> 0.015, '80GB' -> 8e10,
    '80GiB' -> 80·2³⁰. Every quantity needs its unit ('2.7e11B/s', '0.015s', '80B'): a bare 270 is refused
    with a hint rather than read as 270 B/s, and a bare 80 rather than read as 80 bytes. ``usual``: the unit
    the hint offers (a time's: ms unless told, "us" for a launch or a host op). ``bounded``: refused outside what a
    real device or step has (PLAUSIBLE); an array's size, which its own check bounds, is not."""
    what = {"bandwidth": "a bandwidth like 270GB/s", "flops": "a rate like 50TFLOP/s", "time": "a time like 15ms",
            "size": "a size like 80GB or 80GiB"}[kind]
    text = one_line(text)
    ascii_text = text.replace("\u00b5", "u").replace("\u03bc", "u")  # a micro sign or a Greek mu: 38µs is 38us
    m = _QUANTITY.match(ascii_text) if ascii_text.isascii() else None
    if not m:
        raise RoofcalcError(f"'{text}' is not {what}")
    number, prefix, unit = float(m.group(1)), m.group(2).lower(), m.group(3).lower()
    raw = m.group(3)
    if kind in ("bandwidth", "size") and (raw[:1] == "b" and not raw.startswith("byte") or raw[:2] == "ib" or
                                          unit.startswith(("bit", "ibit"))):
        # a lower-case b is a bit (a network link's 400 Gb/s is 50 GB/s, 8 Gb of memory 1 GB): never read it as a byte
        per = "/s" if kind == "bandwidth" else ""
        i = "i" if raw[:2] == "ib" else ""
        raise RoofcalcError(f"'{text}' is in bits (a lower-case b); roofcalc takes bytes: "
                            f"{number:g} {m.group(2)}{i}bit{per} = {number / 8:g} {m.group(2).upper()}{i}B{per} (write "
                            f"{number / 8:g}{m.group(2).upper()}{i}B{per}, or "
                            f"{number:g}{m.group(2).upper()}{i}B{per} if bytes were meant)")
    if not unit and number > 0:
        # a bare 270 is not 270 B/s, nor a bare 80 80 bytes: say what was probably meant, and how to give base units
        n = m.group(1)
        # a time under 1 of the usual ms is likelier seconds (0.038 for a 38 ms step) than a 38 us step
        guess = "s" if kind == "time" and (usual or "ms") == "ms" and number < 1 else usual or "ms"
        meant = {"bandwidth": (f"{n}GB/s", f"{n}B/s"), "flops": (f"{n}TFLOP/s", f"{n}FLOP/s"),
                 "time": (f"{n}{guess}", f"{n}s"), "size": (f"{n}GB or {n}GiB", f"{n}B")}[kind]
        base = "" if meant[0] == meant[1] else f" (base units are written out: {meant[1]})"
        raise RoofcalcError(f"'{text}' has no unit: did you mean {meant[0]}?{base}")
    if kind == "time":
        scale = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}.get(prefix + unit)
        if scale is None:
            raise RoofcalcError(f"'{text}' is not {what}")
        value = number * scale
    elif prefix and (kind == "size" and unit in ("ib", "ibyte", "ibytes") or
                     kind == "bandwidth" and unit in ("ib/s", "ibyte/s", "ibytes/s")):  # 80GiB, 250GiB/s
        value = number * 1024 ** "kmgtpe".index(prefix) * 1024
    else:
        if unit and unit not in _UNITS[kind]:
            raise RoofcalcError(f"'{text}' is not {what}")
        value = number * _PREFIX[prefix]
    if not value > 0:
        raise RoofcalcError(f"'{text}' must be positive")
    if not math.isfinite(value) or value > 1e30:
        raise RoofcalcError(f"'{text}' is beyond any real device or workload")
    low, high = PLAUSIBLE[kind]
    if bounded and not low <= value <= high:  # a figure no device or step has: a slip of a unit or an exponent
        raise RoofcalcError(f"'{text}' is {'under' if value < low else 'over'} any real {PLAUSIBLE_WORDS[kind]} "
                            f"({_plain(low, kind)} to {_plain(high, kind)}): check its unit")
    return value


# the widest a real figure of each kind is: a step or kernel time from 1 ns to a day; a bandwidth from 1 kB/s
# to 1 PB/s (an HBM3e GPU's is 8 TB/s); a compute rate from 1 kFLOP/s to 1 EFLOP/s (a GPU's dense fp4 peak is
# about 1.5e16); a memory from 1 MB to 1 PB. Outside them an input is a slip (1e-300s, 8e9TB/s), and the times
# it would give overflow
PLAUSIBLE = {"time": (1e-9, 86_400.0), "bandwidth": (1e3, 1e15), "flops": (1e3, 1e18), "size": (1e6, 1e15)}
PLAUSIBLE_WORDS = {"time": "step or kernel time", "bandwidth": "bandwidth", "flops": "compute rate",
                   "size": "device memory"}


def _plain(x: float, kind: str) -> str:
    unit = {"time": "s", "bandwidth": "B/s", "flops": "FLOP/s", "size": "B"}[kind]
    return f"{x:g} {unit}"


# --------------------------------------------------------------------------- measured points and kernel times


def point(text: str) -> tuple[str, float, float, float]:
    """NAME:FLOPS:BYTES:SECONDS, e.g. 'matmul 4096:1.374e11:1.007e8:2.75e-3'; the time a bare number of seconds
    or a time with its unit, as --tpot takes it ('2.75ms')."""
    parts = text.rsplit(":", 3)
    if len(parts) != 4 or not parts[0]:
        raise RoofcalcError(f"--point '{one_line(text)[:100]}' is not NAME:FLOPS:BYTES:SECONDS")
    parts[3] = parts[3].replace("\u00b5", "u").replace("\u03bc", "u")  # a micro sign or a Greek mu: 38µs is 38us
    if parts[3].strip().isascii() and re.search(r"[a-zA-Z]\s*$", parts[3]) and \
            not re.fullmatch(r"\s*(?:nan|inf|infinity)\s*", parts[3], re.IGNORECASE):  # '2.75ms'
        try:
            parts[3] = repr(parse_quantity(parts[3], "time"))
        except RoofcalcError as exc:
            raise RoofcalcError(f"--point '{one_line(text)[:100]}': {exc}") from None
    try:
        if not all(x.strip().isascii() for x in parts[1:]):
            raise ValueError
        flops, nbytes, seconds = (float(x) for x in parts[1:])
    except ValueError:
        raise RoofcalcError(f"--point '{one_line(text)[:100]}': FLOPS, BYTES and SECONDS must be numbers") from None
    if not (flops > 0 and nbytes > 0 and seconds > 0) or math.inf in (flops, nbytes, seconds):
        raise RoofcalcError(f"--point '{one_line(text)[:100]}': FLOPS, BYTES and SECONDS must be positive")
    low, high = PLAUSIBLE["time"]
    if not (1.0 <= flops <= 1e30 and 1.0 <= nbytes <= 1e30 and low <= seconds <= high):  # 1e300 FLOPs over 1e-300
        # bytes, or a time of 1e-300 s: no workload, and the roof's numbers would overflow
        raise RoofcalcError(f"--point '{one_line(text)[:100]}': FLOPS and BYTES from 1 to 1e30 and SECONDS from "
                            f"{low:g} to {high:g}, as a real workload's")
    return one_line(parts[0])[:100], flops, nbytes, seconds


# a kernel-times CSV header's time column: the unit its name ends in ("time_us", "ms", "seconds") -> seconds per unit
_HEADER_UNITS = (("nanoseconds", 1e-9), ("microseconds", 1e-6), ("milliseconds", 1e-3), ("seconds", 1.0),
                 ("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("sec", 1.0), ("s", 1.0))


def _header_unit(cell: str, where: str) -> float:
    """Seconds per unit of a kernel-times CSV header's time column, by the unit its name ends in: 'seconds',
    'time_s' 1; 'us', 'time_us', 'microseconds' 1e-6; ... A name without one ('time', 'latency') is refused:
    read as seconds, microseconds would be a million times too slow."""
    word = cell.strip().lower().replace("\u03bc", "\u00b5")  # a Greek mu as the micro sign
    if word in ("name", "kernel", "kernel_name", "op", "module"):  # "us,name": the columns swapped
        raise RoofcalcError(f"{where}: the columns are the kernel's name, then its time ('name,us'); the header's "
                            f"second column is {one_line(cell)[:40]!r}")
    if re.search(r"\b(total|sum)\b", word.replace("_", " ")):  # nsys's "Total Time (ns)", torch's "CUDA total"
        raise RoofcalcError(f"{where}: the header's time column {one_line(cell)[:40]!r} is a total over every call; "
                            f"give each kernel's time per call (nsys's 'Avg (ns)', the torch profiler's 'avg')")
    if re.fullmatch(r"[0-9.]+(e[+-]?[0-9]+)?\s*(ns|us|µs|ms|s|sec|seconds)", word):  # "q_proj,78us": a unit in a row
        raise RoofcalcError(f"{where}: a time's unit goes in a header row ('name,us'), its rows bare numbers; "
                            f"{one_line(cell)[:40]!r} is read as the header's time column")
    for unit, scale in _HEADER_UNITS:
        if word == unit or re.search(rf"[\W_]{re.escape(unit)}\)?$", word) or word.endswith(f"({unit})"):
            return scale
    raise RoofcalcError(f"{where}: the header's time column {one_line(cell)[:40]!r} names no unit: write seconds, ms, "
                        f"us or ns (e.g. 'name,time_us')")


def kernel_times(path: str) -> dict[str, float]:
    """Seconds per kernel instance: CSV rows 'name,seconds' (a header row is allowed; its time column's name gives
    the unit: 'name,us' reads microseconds, and a name without a unit is refused) or a JSON object of numbers of
    seconds. A kernel named twice is refused (which time was meant is not known)."""
    import csv

    text = read_text(path, "kernel times")
    where = one_line(path)[:200]
    scale = 1.0
    head = text.lstrip()
    if head.startswith("[") and _json_array(head):  # a CSV whose first name begins with '[' stays CSV
        raise RoofcalcError(f"{where} is not a JSON object of kernel name -> seconds")
    if head.startswith("{"):  # its pairs, a key given twice kept (refused below, as a CSV's row given twice)
        doc = parse_json(text, where, pairs=True)
        if not isinstance(doc, Pairs):
            raise RoofcalcError(f"{where} is not a JSON object of kernel name -> seconds")
        items = list(doc)
        for name, value in items:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise RoofcalcError(f"{where}: the time for {one_line(str(name))[:60]} must be a number of seconds, "
                                    f"not {one_line(json.dumps(_plain_json(value)))[:40]}")
    else:
        try:
            items = [tuple(row) for row in csv.reader(text.splitlines()) if row and not row[0].startswith("#")]
        except csv.Error as exc:
            raise RoofcalcError(f"{where} is not CSV rows of 'name,seconds' ({exc})") from None
        if items and len(items[0]) == 2 and not _is_number(items[0][1]):  # a header row: its time column's unit
            scale = _header_unit(items[0][1], where)
            items = items[1:]
    times = {}
    for item in items:
        if len(item) != 2:
            raise RoofcalcError(f"{where}: each row must be 'name,seconds', got {one_line(','.join(map(str, item)))[:80]!r}")
        name, value = one_line(str(item[0]).strip())[:100], item[1]
        if isinstance(value, bool):
            raise RoofcalcError(f"{where}: the time for {name} must be a number of seconds")
        try:
            seconds = float(value) * scale
        except (TypeError, ValueError, OverflowError):
            raise RoofcalcError(f"{where}: {one_line(str(value))[:40]!r} for {name} is not a number of seconds") from None
        if not seconds > 0 or not math.isfinite(seconds):
            raise RoofcalcError(f"{where}: the time for {name} must be a positive, finite number of seconds")
        low, high = PLAUSIBLE["time"]
        if not low <= seconds <= high:
            raise RoofcalcError(f"{where}: the time for {one_line(str(name))[:60]}, {seconds:g} s, is outside any real "
                                f"kernel's ({low:g} to {high:g} s): check its unit")
        if name in times:
            raise RoofcalcError(f"{where}: {name!r} is given twice; give each kernel one time")
        times[name] = seconds
    if not times:
        raise RoofcalcError(f"{where} holds no kernel times (rows 'name,seconds', or a JSON object)")
    return times


def _json_array(text: str) -> bool:
    """Whether ``text`` is a JSON array (a kernel-times file given as one, refused as not an object)."""
    try:
        return isinstance(json.loads(text), list)
    except ValueError:
        return False


def _plain_json(value: Any) -> Any:
    """A value of parse_json(pairs=True) as JSON shows it: each object's Pairs a dict again, at any depth."""
    if isinstance(value, Pairs):
        return {k: _plain_json(v) for k, v in value}
    if isinstance(value, list):
        return [_plain_json(v) for v in value]
    return value


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except (TypeError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------- names: did you mean


def close_names(name: str, choices: dict[str, str], n: int = 3) -> list[str]:
    """The names shown for the keys of ``choices`` (a key compared, lower-case, -> the name shown) closest to
    ``name`` by difflib's ratio: at least 0.75, and within 0.05 of the best, best first, each shown once."""
    import difflib

    word = name.strip().lower()
    keys = difflib.get_close_matches(word, list(choices), n=3 * n, cutoff=0.75)
    if not keys:
        return []
    best = difflib.SequenceMatcher(None, word, keys[0]).ratio()
    shown: list[str] = []
    for key in keys:
        if choices[key] not in shown and difflib.SequenceMatcher(None, word, key).ratio() >= best - 0.05:
            shown.append(choices[key])
    return shown[:n]


def did_you_mean(name: str, choices: dict[str, str], first: list[str] = ()) -> str:
    """'did you mean X?' (or 'X or Y?') for the closest names, or '' when none is close; ``first``: names the
    caller found closer by a rule of its own, shown before difflib's (three in all)."""
    names = list(dict.fromkeys([*first, *close_names(name, choices)]))[:max(3, len(first))]
    if not names:
        return ""
    return "did you mean " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]) + "?"


# --------------------------------------------------------------------------- install lines

TORCH_EXTRA = "pip install '.[torch]' in roofcalc's checkout"
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def torch_install() -> str:
    """How to install the torch extra on this machine, as one line. Without an NVIDIA GPU (no nvidia-smi on
    PATH) a CPU build of torch first, which pip would otherwise replace by PyPI's CUDA build (gigabytes of CUDA
    libraries); with one, the CUDA build: PyPI's own on Linux, pytorch.org's index elsewhere."""
    import shutil
    import sys

    if shutil.which("nvidia-smi") is None:
        return f"{CPU_TORCH} && {TORCH_EXTRA} (a CPU build of torch first: no NVIDIA GPU here)"
    if sys.platform.startswith("linux"):
        return f"{TORCH_EXTRA} (PyPI's torch for Linux is a CUDA build)"
    return (f"a CUDA build of torch first (https://pytorch.org/get-started/locally/), then {TORCH_EXTRA}")


def with_torch_install(message: str) -> str:
    """A message whose bare 'pip install .[torch]' hint is replaced by this machine's install line."""
    if TORCH_EXTRA in message and CPU_TORCH not in message and "(PyPI's torch" not in message \
            and "a CUDA build of torch first" not in message:
        return message.replace(TORCH_EXTRA, torch_install(), 1)
    return message


# --------------------------------------------------------------------------- the output file


def check_output(path: str, inputs: dict[str, str | None]) -> Path:
    """The --output file, checked before any work: a name, in a folder that exists and can be written, not a
    folder itself, and none of the files the command reads (``inputs``: what it is -> path), which it would destroy."""
    if not path.strip():
        raise RoofcalcError("--output is empty; give a file name such as report.json")
    shown = one_line(path)[:200]
    p = Path(os.path.expanduser(path))
    try:
        resolved = p.resolve()
    except (OSError, RuntimeError) as exc:  # a symbolic-link loop
        raise RoofcalcError(f"--output {shown}: {getattr(exc, 'strerror', None) or exc}") from None
    for what, given in inputs.items():
        if not given:
            continue
        src = Path(os.path.expanduser(given))
        try:
            src = src / "config.json" if src.is_dir() else src  # a model's folder: its config.json is read
            same = src.resolve() == resolved or p.exists() and src.exists() and os.path.samefile(p, src)
        except (OSError, RuntimeError):
            continue
        if same:
            raise RoofcalcError(f"--output {shown} is {what}; write the report to another file")
    if resolved.is_dir():
        raise RoofcalcError(f"--output {shown} is a folder; give a file name such as {shown.rstrip('/')}/report.txt")
    if path.endswith(("/", os.sep)):  # Path() would drop the slash and write a file the user did not name
        raise RoofcalcError(f"--output {shown} names a folder (it ends in '/'); give a file name such as "
                            f"{shown.rstrip('/')}")
    folder = resolved.parent
    if not folder.is_dir():
        raise RoofcalcError(f"--output {shown}: folder {one_line(str(p.parent))[:200]} does not exist")
    if p.exists() and not stat.S_ISREG(p.stat().st_mode):
        raise RoofcalcError(f"--output {shown} is not a regular file (a pipe, a device?); give a file name")
    if not os.access(folder, os.W_OK) or p.exists() and not os.access(p, os.W_OK):  # the file is written beside
        raise RoofcalcError(f"--output {shown}: permission denied")  # itself, then renamed over it
    return p


def write_output(path: Path, text: str) -> None:
    """Write the document; a failure (a full disk) is one line, and the file is left as it was."""
    path = path.resolve()  # through a symbolic link to the file it names
    tmp = path.with_name(f".{path.name}.roofcalc-tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise RoofcalcError(f"cannot write {one_line(str(path))[:200]}: {exc.strerror or exc}") from None


def check_writable(path: str, flag: str, suffixes: tuple[str, ...]) -> None:
    """Fail before any work if ``flag``'s file (a plot, a page) cannot be written: its suffix, its folder, its
    permissions, one line each."""
    if not path.strip():
        raise RoofcalcError(f"{flag} is empty; give a file name ending in {' or '.join(suffixes)}")
    if path.endswith(("/", os.sep)):  # Path() would drop the slash and write a file the user did not name
        raise RoofcalcError(f"{flag} {path} names a folder (it ends in '/'); give a file name ending in "
                            f"{' or '.join(suffixes)}")
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise RoofcalcError(f"{flag} {path}: the file must end in {' or '.join(suffixes)}")
    if p.is_dir():
        raise RoofcalcError(f"{flag} {path} is a folder; give a file name in it")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise RoofcalcError(f"{flag} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise RoofcalcError(f"{flag} {path}: not writable")
