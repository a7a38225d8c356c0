"""Which fused-MoE shapes SGLang ships a tuned Triton configuration for: benchmarks/sglang_moe_configs.json.

SGLang's Triton fused-MoE kernel takes its tile sizes from a JSON file named by the rank's experts E, its expert
width N (w2's last dimension, the width over TP) and the GPU's name, looked up in the package's
``.../triton_utils/configs/triton_<version>/`` folders (the installed Triton's first, then the others:
fused_moe_triton_config.py, get_moe_configs). Without one it runs get_default_config's tiles, which for 16-bit
weights above E tokens are 64 x 64 x 32 (SGLang 0.5.10 and 0.5.14; vLLM 0.24's default grows its tiles with the
tokens instead, vllm/model_executor/layers/fused_moe/fused_moe.py). AIConfigurator's SGLang collector looks the
configuration up the same way (collector/sglang/collect_moe.py: get_moe_configs, else get_default_config), so a
row of its tables ran tuned tiles exactly where such a file exists for the version it ran.

This script lists them from the SGLang wheels of the versions whose tables are fitted (benchmarks/fit_kernels.py
reads the list; each fitted SGLang MoE form ships its GPU's list for predict):

    pip download --no-deps sglang==0.5.14 sglang==0.5.10 -d wheels/
    python benchmarks/sglang_moe_configs.py wheels/sglang-0.5.14-*.whl wheels/sglang-0.5.10-*.whl

Only the 16-bit files (no ``dtype=`` in the name) of the GPUs AIConfigurator measured are kept.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# AIConfigurator's system names and the device names SGLang writes in its file names (torch's device name, blanks
# as underscores)
DEVICES = {"a100_sxm": "NVIDIA_A100-SXM4-80GB", "h100_sxm": "NVIDIA_H100_80GB_HBM3", "h200_sxm": "NVIDIA_H200",
           "b200_sxm": "NVIDIA_B200", "l40s": "NVIDIA_L40S",
           "rtx_pro_6000_server": "NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition"}
NAME = re.compile(r"E=(\d+),N=(\d+),device_name=([^,]+)\.json$")  # a 16-bit file: nothing after the device


def listing(wheel: Path) -> dict:
    """{"version", "wheel", "sha256", "folders", "bf16": {system: [[E, N], ...]}} of one SGLang wheel."""
    version = re.match(r"sglang-([^-]+)-", wheel.name).group(1)
    out: dict = {name: set() for name in DEVICES}
    folders = set()
    by_device = {d: s for s, d in DEVICES.items()}
    with zipfile.ZipFile(wheel) as z:
        for path in z.namelist():
            if "/moe/" not in path or "/configs/triton_" not in path:
                continue
            m = NAME.search(path.rsplit("/", 1)[-1])
            if m and m.group(3) in by_device:
                folders.add(path.rsplit("/", 2)[0] + "/")
                out[by_device[m.group(3)]].add((int(m.group(1)), int(m.group(2))))
    return {"version": version, "wheel": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()[:16],
            "folders": sorted(folders), "bf16": {s: sorted(map(list, v)) for s, v in out.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wheels", nargs="+", type=Path, help="sglang-<version>-*.whl files")
    ap.add_argument("--out", type=Path, default=HERE / "sglang_moe_configs.json")
    args = ap.parse_args()
    doc = {"what": "the (experts, width over TP) pairs with a tuned 16-bit Triton fused-MoE configuration in each "
                   "SGLang wheel, by AIConfigurator system name", "script": "benchmarks/sglang_moe_configs.py",
           "versions": {}}
    for wheel in args.wheels:
        d = listing(wheel)
        doc["versions"][d.pop("version")] = d
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    for v, d in doc["versions"].items():
        print(v, {s: len(p) for s, p in d["bf16"].items()})


if __name__ == "__main__":
    main()
