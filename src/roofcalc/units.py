"""The one number formatter: how every report, table and plot writes a count, a rate, a time or a size."""

from __future__ import annotations

import math


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """8388608 -> '8.39 M'; decimal prefixes (k = 1e3), as datasheets use."""
    if value == 0:
        return f"0 {unit}".rstrip()
    if math.isinf(value):
        return "inf"
    prefixes = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
    for scale, p in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {p}{unit}"
    return f"{value:.{digits}g} {unit}".rstrip()


def ratio(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def sig(x: float, digits: int = 3) -> str:
    """``digits`` significant digits and never an exponent: 0.0384, 26.2, 1,550, 13,900."""
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return "inf"
    places = digits - 1 - math.floor(math.log10(abs(x)))
    if abs(round(x, places)) >= 10 ** (digits - places):  # 9.9996 rounds up a decade: 10.0, not 10.00
        places -= 1
    if places <= 0:
        return f"{round(x, places):,.0f}"
    return f"{x:.{places}f}"


def ms(seconds: float) -> str:
    return sig(seconds * 1e3)


def us(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e6:.3g}"


def ridge(flop_per_byte: float) -> str:
    """A ridge in FLOP/byte: whole above 10 (185), two significant digits below (a CPU's 5.6, not 6)."""
    return f"{flop_per_byte:.0f}" if flop_per_byte >= 10 else sig(flop_per_byte, 2)


def share(fraction: float) -> str:
    """A share in percent: whole from 1 % (84%), one significant digit below it (0.02%, not 0%)."""
    return f"{100 * fraction:.0f}%" if 100 * fraction >= 0.995 or fraction == 0 else f"{sig(100 * fraction, 1)}%"


def pct(fraction: float | None) -> str:
    return "" if fraction is None else f"{100 * fraction:.0f}%"


def capacity(nbytes: float) -> str:
    """A memory capacity in the unit it was most likely given in: '80 GiB' for a whole number of
    GiB (DRAM capacities are binary), else decimal: '80 GB'."""
    gib = nbytes / 2 ** 30
    if gib >= 1 and gib == int(gib):
        return f"{int(gib)} GiB"
    return f"{nbytes / 1e9:.4g} GB"
