"""Reading a report as a person reads it, whatever the terminal's width."""

from __future__ import annotations

import re


def unwrap(text: str) -> str:
    """The report as one line per statement: a prose line wrapped to the terminal's width (a long line, then
    lines indented by 4 or more) joined back, so a test can look for a whole sentence. Table rows are not
    prose: a sweep's rows start with spaces and a number, the kernel table's rows with their name. The
    measured step's numbered distances ("  1 below the slope: ...") are prose."""
    out: list[str] = []
    prose, last = False, 0
    for line in text.split("\n"):
        if prose and last >= 80 and line.startswith("    ") and line.strip() and not line.lstrip().startswith("-"):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
            prose = bool(line) and not line.startswith("-") and \
                (not line.startswith(" ") or re.match(r" {1,3}(?:[A-Za-z]|\d [a-z])", line) is not None)
        last = len(line)
    return "\n".join(out)
