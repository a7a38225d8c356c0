"""Every console example in the README prints what the README shows.

A ```console block opens with ``$ roofcalc ARGS`` (continued by trailing backslashes); the lines under it
are what the command prints, in order, numbers included. The README may leave lines out: a line ``...``
stands for any number of lines, and ``(...)`` inside a line for any text, so a block may show the lines
its prose is about. Without ``...`` the block is the whole output. A block whose output is measured on the
machine that ran it (``measure``, ``profile``) is marked by an HTML comment ``<!-- measured -->`` on the
line before it; it is not run, and every other console block must be.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from roofcalc.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
MEASURED = "<!-- measured -->"


def console_blocks(text: str):
    """(line number, command args, expected lines, measured?) of every ```console block."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```console":
            measured = i > 0 and lines[i - 1].strip() == MEASURED
            start = i + 1
            j = start
            while lines[j].strip() != "```":
                j += 1
            body = lines[start:j]
            command = body[0]
            k = 1
            while command.endswith("\\"):
                command = command[:-1] + " " + body[k].strip()
                k += 1
            assert command.startswith("$ roofcalc"), f"README.md:{start + 1}: a console block opens with $ roofcalc"
            out.append((start + 1, shlex.split(command[2:])[1:], body[k:], measured))
            i = j
        i += 1
    return out


def _pattern(line: str) -> re.Pattern:
    parts = [re.escape(p) for p in line.rstrip().split("(...)")]
    return re.compile("(.*)".join(parts) + r"\Z")


def missing(expected: list[str], printed: list[str]) -> str | None:
    """The first expected line the output lacks (in order), or None. Without '...' lines the output must be
    exactly as long as the block."""
    printed = [p.rstrip() for p in printed]
    gaps = any(e.strip() == "..." for e in expected)
    pos = 0
    for e in expected:
        if e.strip() == "...":
            continue
        pat = _pattern(e)
        if not gaps:
            if pos >= len(printed) or not pat.match(printed[pos]):
                return e
            pos += 1
            continue
        while pos < len(printed) and not pat.match(printed[pos]):
            pos += 1
        if pos == len(printed):
            return e
        pos += 1
    if not gaps and pos != len(printed):
        return f"(the output goes on: {printed[pos]!r})"
    return None


BLOCKS = console_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_checked_examples():
    # the worked example, its measured roof, the sweep, the trace, tensor, expert and pipeline parallelism
    assert sum(not m for *_, m in BLOCKS) >= 8


@pytest.mark.parametrize("line,args,expected", [(n, a, e) for n, a, e, m in BLOCKS if not m],
                         ids=[f"README.md:{n}" for n, _, _, m in BLOCKS if not m])
def test_readme_example_prints_what_the_readme_shows(line, args, expected, capsys, tmp_path, monkeypatch):
    if any(a.endswith(".json") and a.startswith("docs/") for a in args) or "--trace" in args:
        pytest.importorskip("torch")
        import transformers

        # a traced example is printed with one transformers release (the README says which); another
        # release names itself and may count otherwise (tests/test_parallel_traced.py checks both)
        printed = set(re.findall(r"transformers (\d+\.\d+\.\d+)", "\n".join(expected)))
        if printed and transformers.__version__ not in printed:
            pytest.skip(f"printed with transformers {', '.join(sorted(printed))}; {transformers.__version__} "
                        f"is installed")
    monkeypatch.chdir(README.parent)
    monkeypatch.setenv("COLUMNS", "100")
    args = [str(tmp_path / Path(a).name) if a.endswith((".png", ".svg", ".html")) else a for a in args]
    code = main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    gone = missing(expected, out.splitlines())
    assert gone is None, f"README.md:{line}: roofcalc {' '.join(args)} does not print\n  {gone}\nit prints:\n{out}"


def test_the_readmes_comparison_document_names_every_key(capsys):
    """The README's field list of a --tp/--ep/--pp list's JSON names every key its points and verdicts carry, and
    no key they lack (a word of the list followed by ',' or a space and '(' is a key)."""
    import json

    text = README.read_text(encoding="utf-8")
    block = text[text.index("<axis>_points[]"):]
    block = block[:block.index("```")]
    listed = set(re.findall(r"(?<![\w(])([a-z_<>]+_?[a-z_<>]*)(?=,| \(|\n| *$)", block))
    assert main(["meta-llama/Llama-2-7b-hf", "--hw", "H100", "--tp", "1,2", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    keys = {k.replace("tp", "<axis>") if k in ("tp", "stops_paying_at_tp") else k
            for k in (*doc["tp_points"][0], *doc["verdicts"])}
    keys.discard("collectives")  # listed as collectives[]
    assert "collectives[]" in block and keys <= listed, keys - listed
    assert {k for k in listed if k in {"gpus", "fits", "bound"} or k.endswith(("_s", "_share", "_gpu", "_fit"))} <= keys
