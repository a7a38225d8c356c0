"""Hardware records: the built-in catalog of nominal peaks, measured profiles, unit parsing.

One schema serves the catalog (``data/hardware.json``) and a user's measured profile
(``--hw-file``), in base units named in the keys:

    {"name": "T4 (measured)", "bandwidth_bytes_per_s": 2.7e11,
     "peak_flop_per_s": {"fp16": 5.0e13}, "launch_overhead_s": 5e-06,
     "memory_bytes": 16e9, "nominal": "T4", "source": "roofcalc measure, 2026-11-29"}

Only ``bandwidth_bytes_per_s`` and ``peak_flop_per_s`` are required in a profile; ``nominal``
names the catalog entry it is measured against.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .dtypes import COMPUTE_DTYPES  # noqa: F401 (the compute dtypes a peak is given for)
from .errors import RoofcalcError

CATALOG_PATH = Path(__file__).parent / "data" / "hardware.json"
PROFILE_VERSION = 2  # 2 adds "efficiency": measured kernel efficiencies and host overhead (README)
PROFILE_VERSIONS = (1, 2)


@dataclass(frozen=True)
class Hardware:
    name: str
    bandwidth_bytes_per_s: float
    peak_flop_per_s: Mapping[str, float]  # by compute dtype
    launch_overhead_s: float = 5e-6
    memory_bytes: float | None = None
    memory: str | None = None  # the capacity as the catalog writes it, in the card's own unit ("80GiB")
    link_bytes_per_s: float | None = None  # one direction of one GPU's link to its peers (NVLink, PCIe)
    gpus_per_node: int | None = None
    link: str = ""  # what the link is, with its source
    link_latency_s: float | None = None  # measured: the smallest all-reduce's time (roofcalc measure --collectives)
    network_bytes_per_s: float | None = None  # one direction of one GPU's share of the network between nodes
    network: str = ""
    kind: str = "gpu"
    source: str = ""
    aliases: tuple[str, ...] = field(default=())
    nominal: str | None = None  # for a measured profile: the catalog entry it is measured against
    efficiency: "object" = None  # roofcalc.predict.KernelModel measured on this device (schema 2), or None
    segment: str = "datacenter"  # GPUs: "datacenter" or "consumer" (GeForce): the default efficiencies differ
    compute_capability: float | None = None  # an NVIDIA GPU's CUDA compute capability (7.5 a T4, 9.0 an H100)
    kernel_fits: str = ""  # the measured GPU whose fitted kernel costs it takes (data/kernel_fits.json), if any
    # a GPU linked to its peers over PCIe (no NVLink): whether the GPUs of a box reach each other peer to peer
    # (True), or only through the host's memory (False); None for an NVLink GPU or a device without peers
    pcie_p2p: bool | None = None
    # the L2 cache in bytes, the vendor's MB read as MiB (2^20 bytes, the unit the device reports and the measured
    # GPUs' fits judge their tables by), and its source; None where the catalog does not say
    # (predict.AttentionFit.l2_reread keeps the fitted GPU's)
    l2_bytes: float | None = None
    l2: str = ""

    def peak(self, compute_dtype: str) -> float:
        if compute_dtype not in self.peak_flop_per_s:
            has = ", ".join(self.peak_flop_per_s)
            raise RoofcalcError(
                f"{self.name} has no {compute_dtype} peak (it has {has}); pick another --dtype or --hw"
            )
        return self.peak_flop_per_s[compute_dtype]

    def ridge(self, compute_dtype: str) -> float:
        return self.peak(compute_dtype) / self.bandwidth_bytes_per_s

    @property
    def fits(self) -> tuple[str, str]:
        """(the measured GPU whose fitted kernel costs this device takes, how): ("h100_sxm", "measured") for a
        GPU measured itself; for an NVIDIA GPU with no tables, the measured GPU of its generation (by compute
        capability) or, older than any, the oldest measured: (gpu, "nearest"); else ("", "")."""
        if self.kernel_fits:
            return self.kernel_fits, "measured"
        if self.kind != "gpu" or self.compute_capability is None:
            return "", ""
        return nearest_fits(self.compute_capability), "nearest"

    @property
    def links(self) -> tuple[str, str]:
        """(the measured GPU whose fitted collectives this device takes, how): a GPU with its own tables, its own
        ("measured"); a GPU on PCIe without them, the PCIe box measured with peer-to-peer (the RTX PRO 6000
        server's) or without it (the L40S's: through the host) ("pcie"), as shares of its own link; else ("", ""),
        the default link model (another NVLink generation: no measured box of it). An L40S said to reach its
        peers peer to peer (a hardware file's "pcie_p2p": true) takes the peer-to-peer box: its own measured box
        had none."""
        if self.kernel_fits and not (self.pcie_p2p and self.kernel_fits == PCIE_HOST):
            return self.kernel_fits, "measured"
        if self.kind != "gpu" or self.pcie_p2p is None:
            return "", ""
        return (PCIE_P2P if self.pcie_p2p else PCIE_HOST), "pcie"


# NVIDIA generations by compute capability (CUDA C++ Programming Guide, "Compute Capabilities"), each with the
# GPU of it whose kernels AIConfigurator measured (data/kernel_fits.json): Pascal, Volta and Turing have none, so
# they take the oldest measured generation's
GENERATIONS = ((6.0, "Pascal", ""), (7.0, "Volta", ""), (7.5, "Turing", ""), (8.0, "Ampere", "a100_sxm"), (8.9, "Ada", "l40s"),
               (9.0, "Hopper", "h100_sxm"), (10.0, "Blackwell", "b200_sxm"),
               (12.0, "Blackwell GB20x", "rtx_pro_6000_server"))
# The two PCIe boxes AIConfigurator measured collectives on: eight RTX PRO 6000 Server cards that reach each other
# peer to peer (42-44 GB/s of all-reduce bus bandwidth at 32 MB on PCIe Gen5), and eight L40S without peer-to-peer
# (through the host: 2.5 GB/s at 8 GPUs). A GPU without tables of its own on PCIe takes one of them.
PCIE_P2P, PCIE_HOST = "rtx_pro_6000_server", "l40s"
PCIE_BOXES = {PCIE_P2P: "eight RTX PRO 6000 Server cards (peer to peer)",
              PCIE_HOST: "eight L40S cards (through the host, no peer-to-peer)"}


def generation(compute_capability: float) -> str:
    """An NVIDIA GPU's generation by its compute capability (8.6: Ampere; 12.0, GeForce Blackwell: Blackwell)."""
    return next((name for cc, name, _ in reversed(GENERATIONS) if compute_capability >= cc), "pre-Pascal")


def measured_generation(gpu: str) -> str:
    """The generation of a measured GPU of data/kernel_fits.json ("a100_sxm": Ampere)."""
    return next(name for _, name, measured in GENERATIONS if measured == gpu) if gpu in {
        g for _, _, g in GENERATIONS} else ""


def measured_gpu_name(gpu: str) -> str:
    """A measured GPU of data/kernel_fits.json as reports name it ("h100_sxm": H100-SXM), "" for none."""
    return {"rtx_pro_6000_server": "RTX-PRO-6000"}.get(gpu, gpu.replace("_sxm", " SXM").upper().replace(" SXM", "-SXM"))


def nearest_fits(compute_capability: float) -> str:
    """The measured GPU of that generation, else the oldest measured (a T4, Turing: the A100 of Ampere)."""
    gen = generation(compute_capability)
    measured = [gpu for _, _, gpu in GENERATIONS if gpu]
    return next((gpu for _, name, gpu in GENERATIONS if name == gen and gpu), measured[0])


def _positive(value: Any, what: str) -> float:
    from .inputs import number

    return number(value, what, 0.0, low_open=True)


# every key a profile or catalog entry may hold (``details`` and ``trust``: what ``roofcalc measure`` writes beside
# the roof, which readers skip; ``memory_datasheet``: the catalog's memory as its datasheet words it)
PROFILE_KEYS = ("schema_version", "name", "aliases", "kind", "segment", "source", "nominal", "bandwidth_bytes_per_s",
                "peak_flop_per_s", "launch_overhead_s", "memory_bytes", "memory", "memory_datasheet",
                "compute_capability", "link_bytes_per_s", "gpus_per_node", "link", "link_latency_s",
                "network_bytes_per_s", "network", "pcie_p2p", "l2_bytes", "l2", "kernel_fits", "efficiency",
                "details", "trust")


def _edits(a: str, b: str) -> int:
    """The fewest one-character insertions, deletions, substitutions and swaps of two neighbours from ``a`` to
    ``b`` (Levenshtein with transpositions, the optimal string alignment: 'memroy' is one edit from 'memory')."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def hardware_from_dict(d: Any, where: str) -> Hardware:
    if not isinstance(d, dict):
        raise RoofcalcError(f"{where}: a hardware profile is a JSON object")
    for key in d:  # a key a character or two off one roofcalc reads is a typo that would be skipped unread; a key
        # of the user's own, further from every one, is kept (save_profile writes it back)
        near = [k for k in PROFILE_KEYS if key not in PROFILE_KEYS and _edits(str(key), k) <= max(1, len(k) // 8)]
        if near:
            raise RoofcalcError(f"{where}: '{key}' is not a key roofcalc reads (did you mean '{near[0]}'?)")
    for key in ("bandwidth_bytes_per_s", "peak_flop_per_s"):
        if key not in d:
            raise RoofcalcError(f"{where}: missing '{key}'")
    peaks = d["peak_flop_per_s"]
    if not isinstance(peaks, dict) or not peaks:
        raise RoofcalcError(f"{where}: 'peak_flop_per_s' must map a compute dtype to FLOP/s, e.g. {{\"fp16\": 5e13}}")
    for k in peaks:
        if k not in COMPUTE_DTYPES:
            raise RoofcalcError(f"{where}: unknown compute dtype '{k}' (use {', '.join(COMPUTE_DTYPES)})")
    from .inputs import number, text

    mem = d.get("memory_bytes")
    memory_text = d.get("memory")  # the card's capacity in its own unit, e.g. "80GiB"
    if memory_text is not None:
        from .inputs import parse_quantity

        if mem is not None:
            raise RoofcalcError(f"{where}: give 'memory' (e.g. \"80GiB\") or 'memory_bytes', not both")
        try:
            mem = parse_quantity(text(memory_text, f"{where}: memory", 40), "size")
        except RoofcalcError as e:  # say which file and field
            raise RoofcalcError(f"{where}: memory: {e}") from None
    version = d.get("schema_version", 1)
    if version not in PROFILE_VERSIONS:
        raise RoofcalcError(f"{where}: profile schema_version {version!r} is not one roofcalc reads "
                            f"({', '.join(map(str, PROFILE_VERSIONS))})")
    kind = d.get("kind", "gpu")
    if kind not in ("gpu", "cpu", "tpu"):
        raise RoofcalcError(f"{where}: 'kind' must be gpu, cpu or tpu")
    cc = None if d.get("compute_capability") is None else \
        number(d["compute_capability"], f"{where}: compute_capability", 1.0, 20.0)
    model = None
    if d.get("efficiency") is not None:
        from .predict import model_from_profile

        model = model_from_profile(d["efficiency"], kind, where, cc)
    aliases = d.get("aliases", [])
    if not isinstance(aliases, list):
        raise RoofcalcError(f"{where}: 'aliases' must be a list of names")
    nominal = d.get("nominal")
    return Hardware(
        name=text(d.get("name", where), f"{where}: name"),
        bandwidth_bytes_per_s=_positive(d["bandwidth_bytes_per_s"], f"{where}: bandwidth_bytes_per_s"),
        peak_flop_per_s={k: _positive(v, f"{where}: peak_flop_per_s.{k}") for k, v in peaks.items()},
        launch_overhead_s=number(d.get("launch_overhead_s", 5e-6), f"{where}: launch_overhead_s", 0.0, 1.0),
        memory_bytes=None if mem is None else _positive(mem, f"{where}: memory_bytes"),
        memory=None if memory_text is None else text(memory_text, f"{where}: memory", 40),
        link_bytes_per_s=None if d.get("link_bytes_per_s") is None else
        _positive(d["link_bytes_per_s"], f"{where}: link_bytes_per_s"),
        gpus_per_node=None if d.get("gpus_per_node") is None else _whole(d["gpus_per_node"], f"{where}: gpus_per_node"),
        link=text(d.get("link", ""), f"{where}: link", 300),
        link_latency_s=None if d.get("link_latency_s") is None else
        number(d["link_latency_s"], f"{where}: link_latency_s", 0.0, 1.0),
        network_bytes_per_s=None if d.get("network_bytes_per_s") is None else
        _positive(d["network_bytes_per_s"], f"{where}: network_bytes_per_s"),
        network=text(d.get("network", ""), f"{where}: network", 300),
        kind=kind,
        source=text(d.get("source", ""), f"{where}: source", 400),
        aliases=tuple(text(a, f"{where}: aliases") for a in aliases),
        nominal=None if nominal is None else text(nominal, f"{where}: nominal"),
        efficiency=model,
        segment=_segment(d.get("segment", "datacenter"), where),
        compute_capability=cc,
        kernel_fits=_fits_name(d.get("kernel_fits", ""), where),
        pcie_p2p=_flag(d.get("pcie_p2p"), f"{where}: pcie_p2p"),
        l2_bytes=None if d.get("l2_bytes") is None else _positive(d["l2_bytes"], f"{where}: l2_bytes"),
        l2=text(d.get("l2", ""), f"{where}: l2", 300),
    )


def _flag(value, what: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise RoofcalcError(f"{what} must be true or false")


def _fits_name(value, where: str) -> str:
    if value == "":
        return ""
    from .predict import kernel_fits

    if value not in kernel_fits()["gpus"]:
        raise RoofcalcError(f"{where}: kernel_fits '{value}' names no measured GPU (use "
                            f"{', '.join(kernel_fits()['gpus'])})")
    return value


def _whole(value, what: str) -> int:
    from .inputs import number

    x = number(value, what, 1, 4096)
    if x != int(x):
        raise RoofcalcError(f"{what} must be a whole number, got {value!r}")
    return int(x)


def _segment(value, where: str) -> str:
    if value not in ("datacenter", "consumer"):
        raise RoofcalcError(f"{where}: 'segment' must be datacenter or consumer")
    return value


@functools.cache
def _raw_catalog() -> list[dict[str, Any]]:
    return json.loads(CATALOG_PATH.read_text(encoding="utf-8"))["hardware"]


@functools.cache
def _entry(i: int) -> Hardware:
    """The catalog's entry ``i``, built once (find_hardware builds only the one it finds: startup)."""
    h = _raw_catalog()[i]
    return hardware_from_dict(h, h["name"])


def hardware_catalog() -> tuple[Hardware, ...]:
    return tuple(_entry(i) for i in range(len(_raw_catalog())))


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


# the vendor and brand words a device's own name starts with (nvidia-smi's "NVIDIA A10G", "Tesla T4", "NVIDIA
# GeForce RTX 4090", rocm-smi's "AMD Instinct MI300X"), which the catalog's names leave out
_VENDOR_WORDS = re.compile(r"^(?:(?:nvidia|tesla|geforce|amd|instinct|radeon|google|cloud)-)+")


def device_key(name: str) -> str:
    """A hardware name as the catalog's are compared: lower case, spaces and '_' as '-', a device's own vendor and
    brand words left out ("NVIDIA A10G" -> "a10g")."""
    return _VENDOR_WORDS.sub("", _norm(name))


def find_hardware(name: str) -> Hardware:
    """A catalog entry by name or documented alias; case-insensitive, spaces and '_' read as '-', a device's own
    vendor and brand words ("NVIDIA A10G", "Tesla T4") left out. Only the entry found is built (startup), once:
    the same object the whole catalog holds."""
    keys = {_norm(name), device_key(name)}
    for i, h in enumerate(_raw_catalog()):
        if keys & {_norm(h["name"]), *(_norm(a) for a in h.get("aliases", ()))}:
            return _entry(i)
    names = ", ".join(h.name for h in hardware_catalog())
    hint = _closest(name)
    raise RoofcalcError(f"unknown hardware '{name}'{f' ({hint})' if hint else ''}; known: {names} (or --hw-file "
                        f"PROFILE.json)")


def _closest(name: str) -> str:
    """'did you mean ...?' for a hardware name that is no entry's, or "": a name that begins a catalog name
    (a100-pcie: its 40 and 80 GB entries), then the closest by difflib; a model number alone (4090: RTX4090); a
    short name difflib finds none for, one a character off it (t5: T4)."""
    from .inputs import close_names, did_you_mean

    names: dict[str, str] = {}
    for hw in hardware_catalog():
        for key in (hw.name, *hw.aliases):
            names.setdefault(_norm(key), hw.name)
    word = device_key(name)  # (its vendor and brand words left out, as find_hardware reads it)
    first = [hw for key, hw in names.items() if len(word) >= 3 and key.startswith(word + "-")]
    if not first and not close_names(word, names) and len(word) >= 3:
        first = [hw for key, hw in names.items() if key.endswith(word) and key[:-len(word)].isalpha()]
    if not first and not close_names(word, names):
        first = [hw for key, hw in names.items() if len(word) <= 3 and len(key) == len(word)
                 and sum(a != b for a, b in zip(key, word)) == 1]
    return did_you_mean(word, names, first=list(dict.fromkeys(first)))


def load_profile(path: str) -> Hardware:
    from .inputs import one_line, read_json

    return hardware_from_dict(read_json(path, "hardware profile"), one_line(str(path))[:200])


def profile_record(hw: Hardware) -> dict[str, Any]:
    """Every field of a profile, as ``hardware_from_dict`` reads it back: a profile loaded and saved is
    the same profile. Fields left unset (None, empty) are left out, as a reader takes them to be."""
    from .predict import efficiency_record

    doc: dict[str, Any] = {"schema_version": PROFILE_VERSION, "name": hw.name,
                           "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s,
                           "peak_flop_per_s": dict(hw.peak_flop_per_s), "launch_overhead_s": hw.launch_overhead_s}
    if hw.memory is not None:  # the capacity in the unit it was given in ("80GiB"), which memory_bytes follows
        doc["memory"] = hw.memory
    elif hw.memory_bytes is not None:
        doc["memory_bytes"] = hw.memory_bytes
    optional = {"link_bytes_per_s": hw.link_bytes_per_s, "gpus_per_node": hw.gpus_per_node, "link": hw.link,
                "link_latency_s": hw.link_latency_s, "network_bytes_per_s": hw.network_bytes_per_s,
                "network": hw.network, "aliases": list(hw.aliases), "nominal": hw.nominal,
                "compute_capability": hw.compute_capability, "kernel_fits": hw.kernel_fits, "pcie_p2p": hw.pcie_p2p,
                "l2_bytes": hw.l2_bytes, "l2": hw.l2}
    doc.update({k: v for k, v in optional.items() if v not in (None, "", [])})
    doc.update(kind=hw.kind, segment=hw.segment, source=hw.source)
    if hw.efficiency is not None:
        doc["efficiency"] = efficiency_record(hw.efficiency)
    return doc


def save_profile(hw: Hardware, path: str, keep: Mapping[str, Any] | None = None) -> None:
    """Write ``hw`` to ``path``. ``keep``: the document the profile was read from; what it holds beyond
    the schema (a measurement's ``details``, a user's own keys) is written back unchanged."""
    doc = {**(keep or {}), **profile_record(hw)}
    write_json(doc, path)


def write_json(doc: Mapping[str, Any], path: str) -> None:
    """Write a JSON document whole or not at all: into a file beside ``path``, then renamed over it."""
    import os

    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        raise RoofcalcError(f"cannot write {path}: {exc.strerror}") from None


def hw_file_warnings(path: str) -> list[str]:
    """A line where the --hw-file's own measurement warned (its ``trust``, as ``roofcalc measure --out`` writes
    it); none for a profile without one."""
    from .inputs import read_json

    doc = read_json(path, "hardware profile")
    trust = doc.get("trust") if isinstance(doc, dict) else None
    n = len(trust.get("warnings") or []) if isinstance(trust, dict) and isinstance(trust.get("warnings"), list) else 0
    out = [f"warning   {n} warning{'s' if n > 1 else ''} in the --hw-file's trust: run `roofcalc measure --out` "
           "again on an idle machine"] if n else []
    # figures `roofcalc profile --update-anyway` wrote from a run whose timings warned (each note ends so)
    eff = doc.get("efficiency") if isinstance(doc, dict) else None
    notes = [v.get("note") for v in eff.values() if isinstance(v, dict)] if isinstance(eff, dict) else []
    classes = eff.get("classes") if isinstance(eff, dict) else None
    notes += [v.get("note") for v in classes.values() if isinstance(v, dict)] if isinstance(classes, dict) else []
    import re

    # each run once: its note's head ("roofcalc profile MODEL (dtype, batch, context), date"), before what was derived
    spoilt = sorted({re.sub(r"(\d{4}-\d\d-\d\d):.*", r"\1", note.split("; its run warned", 1)[0]) for note in notes
                     if isinstance(note, str) and "; its run warned (" in note})
    if spoilt:
        out.append(f"warning   the --hw-file's measured efficiencies come from a profile run whose timings warned "
                   f"({spoilt[0]}{' and others' if len(spoilt) > 1 else ''}; written by --update-anyway): profile "
                   f"again on an idle machine")
    return out
