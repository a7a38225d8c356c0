"""Regenerate the figures the README shows, from the commands it prints.

    python docs/make_figures.py            # the roofline and the sweep (a second)
    python docs/make_figures.py --profile  # also the profile figure (measures this machine: ~1 minute, [torch])
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from roofcalc.cli import main

DOCS = Path(__file__).parent
COMMANDS = {
    "roofline-tinyllama-t4.png": ["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s", "--measured-flops",
                                  "50TFLOP/s", "--tpot", "15ms", "--point", "matmul 4096:137438953472:100663296:0.00275",
                                  "--point", "x + 1:1e8:4e8:0.00148"],
    "sweep-tinyllama-t4.png": ["TinyLlama/TinyLlama-1.1B", "--batch", "1..512", "--context", "512,2048,8192"],
}


def run(args: list[str]) -> None:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    if code:
        sys.exit(f"roofcalc {' '.join(args)} failed")


if __name__ == "__main__":
    for name, args in COMMANDS.items():
        run([*args, "--plot", str(DOCS / name)])
        print(f"wrote docs/{name}")
    if "--profile" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            run(["measure", "--out", f"{tmp}/me.json", "-q"])
            run(["profile", "TinyLlama/TinyLlama-1.1B", "--hw-file", f"{tmp}/me.json", "--context", "200", "-q",
                 "--plot", str(DOCS / "profile-tinyllama-cpu.png")])
        print("wrote docs/profile-tinyllama-cpu.png")
