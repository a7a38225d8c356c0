"""Where configs come from: a file or folder, the built-in catalog, the HF cache, the hub.

Finding and reading a config is separate from building its shape (:mod:`roofcalc.shapes`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RoofcalcError
from .families import FAMILIES
from .shapes import ModelShape, shape_from_config

CATALOG_PATH = Path(__file__).parent / "data" / "models.json"


@dataclass(frozen=True)
class CatalogEntry:
    hub_id: str
    aliases: tuple[str, ...]
    config: dict
    params_total: int
    params_active: int | None
    params_source: str

    @property
    def supported(self) -> bool:
        return self.config.get("model_type") in FAMILIES


_catalog: tuple[CatalogEntry, ...] | None = None


def catalog() -> tuple[CatalogEntry, ...]:
    """The built-in offline catalog (package data ``data/models.json``)."""
    global _catalog
    if _catalog is None:
        raw = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
        _catalog = tuple(
            CatalogEntry(
                hub_id=m["hub_id"],
                aliases=tuple(m.get("aliases", ())),
                config=m["config"],
                params_total=m["params"]["total"],
                params_active=m["params"].get("active"),
                params_source=m["params"]["source"],
            )
            for m in raw["models"]
        )
    return _catalog


def find_in_catalog(name: str) -> CatalogEntry | None:
    """Exact (case-insensitive) match on a hub id or a documented alias; never a substring."""
    key = name.strip().lower()
    for entry in catalog():
        if key == entry.hub_id.lower() or key in (a.lower() for a in entry.aliases):
            return entry
    return None


HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def _read_json(path: Path) -> Any:
    from .inputs import read_json

    # NaN and Infinity allowed, as transformers reads them (Nemotron-H's "time_step_limit": [0.0, Infinity]);
    # every key roofcalc reads as a size is checked a finite number in range where it is read
    return read_json(path, "config", constants=True)


def _reachable(url: str, timeout_s: float = 1.5) -> bool:
    """Whether a TCP connection to the host of ``url`` opens within ``timeout_s`` (DNS included).

    huggingface_hub retries an unreachable hub for ~30 s; this probe answers in under 2 s."""
    import socket
    import threading
    from urllib.parse import urlparse

    parsed = urlparse(url)
    host, port = parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80)
    result: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s + 0.5)
    return bool(result and result[0])


def _hub_config(repo_id: str, revision: str | None = None) -> Path:
    """config.json of a hub repo at ``revision`` (a branch, tag or commit; the hub library's default
    when None): the local HF cache first, then the hub unless offline."""
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "2")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "2")
    how = "download its config.json and pass the path (roofcalc ./config.json), or pick a catalog name (roofcalc models)"
    try:
        from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers brings it
        raise RoofcalcError(f"'{repo_id}' is not in the catalog and huggingface_hub is not installed; {how}") from None
    from .inputs import env_name_offline, one_line

    try:
        cached = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # the hub library's own validation of the id (HFValidationError)
        raise RoofcalcError(f"'{one_line(repo_id)}' is not a valid hub id (owner/name of letters, digits, '-', '_' "
                            f"and '.', not starting or ending with '.' or '-', no '--' or '..')") from None
    if isinstance(cached, str):
        return Path(cached)
    if constants.HF_HUB_OFFLINE:  # HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE
        var = env_name_offline() or "HF_HUB_OFFLINE"
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache and {var} is set; {how}")
    if not _reachable(constants.ENDPOINT):
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache, and {constants.ENDPOINT} "
                            f"cannot be reached; {how}")
    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision, etag_timeout=2))
    except Exception as exc:  # repo missing, gated, network lost...
        raise RoofcalcError(f"cannot fetch '{repo_id}' from the hub ({type(exc).__name__}); {how}") from None


def load_config(source: str, revision: str | None = None) -> tuple[dict, str, str, CatalogEntry | None]:
    """Resolve ``source`` to (config dict, model name, origin, catalog entry or None).

    In order: a path to a config.json or a folder holding one; a catalog hub id or alias;
    any other hub id (HF cache, then the hub).
    """
    from .inputs import one_line

    if not isinstance(source, str) or not source.strip():
        raise RoofcalcError("no model given: pass a config.json, a folder, a catalog name or a hub id")
    if len(source) > 1024 or any(not ch.isprintable() for ch in source):
        raise RoofcalcError(f"'{one_line(source)[:80]}' is not a file, a catalog name or a hub id")
    path = Path(os.path.expanduser(source))
    try:
        path.stat()
        exists = True
    except OSError as exc:
        if exc.errno not in (2, 20):  # not "no such file": a loop, a name too long, no permission
            raise RoofcalcError(f"cannot read {one_line(source)[:200]}: {exc.strerror}") from None
        exists = False
    if path.is_dir():
        file = path / "config.json"
        if not file.is_file():
            raise RoofcalcError(f"folder {one_line(str(path))[:200]} has no config.json")
        return _read_json(file), str(path), "file", None
    if exists:  # a regular file, or a pipe or device that the reader refuses by what it is
        return _read_json(path), str(path), "file", None
    entry = find_in_catalog(source) if revision is None else None  # a revision asks the hub, not the catalog
    if entry is not None:
        return dict(entry.config), entry.hub_id, "catalog", entry
    if source.endswith(".json") or source.startswith((".", "/", "~")) or os.sep in source and not HUB_ID.match(source):
        raise RoofcalcError(f"no such file: {source}")
    if not HUB_ID.match(source):
        raise RoofcalcError(
            f"'{source}' is not a file, a catalog name or a hub id (owner/name); 'roofcalc models' lists the catalog"
        )
    return _read_json(_hub_config(source, revision)), source + (f"@{revision}" if revision else ""), "hub", None


def load_shape(source: str, family: str | None = None, revision: str | None = None) -> ModelShape:
    """Read a model shape from a path, a catalog name or a hub id (at ``revision`` for a hub id)."""
    cfg, name, _, _ = load_config(source, revision)
    return shape_from_config(cfg, name, family)
