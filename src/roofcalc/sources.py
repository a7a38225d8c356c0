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
from .shapes import QUANT_FILE, ModelShape, shape_from_config

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


def hf_cache_dir() -> Path:
    """The HF cache's hub folder, as the hub library finds it (HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub)."""
    try:
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)
    except ImportError:  # pragma: no cover - transformers brings it
        home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
        return Path(os.path.expanduser(os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub")))


def cached_model_ids(limit: int = 10_000) -> list[str]:
    """The model ids the HF cache holds (its folders models--OWNER--NAME), at most ``limit``."""
    ids = []
    try:
        with os.scandir(hf_cache_dir()) as entries:
            for entry in entries:
                if len(ids) >= limit:
                    break
                parts = entry.name.split("--", 2)
                if len(parts) == 3 and parts[0] == "models" and all(parts[1:]):
                    ids.append(f"{parts[1]}/{parts[2]}")
    except OSError:  # no cache yet
        pass
    return ids


def model_names(cache: bool = True) -> dict[str, str]:
    """Every model name roofcalc reads without a path, lower-case -> as written: the catalog's hub ids and
    aliases, and (with ``cache``) the ids in the HF cache."""
    names: dict[str, str] = {}
    for entry in catalog():
        for name in (entry.hub_id, *entry.aliases):
            names.setdefault(name.lower(), name)
    for name in cached_model_ids() if cache else ():
        names.setdefault(name.lower(), name)
    return names


def _suggest(source: str) -> str:
    """' (did you mean X?)' for the catalog's and the HF cache's names closest to ``source``, or ''."""
    from .inputs import did_you_mean

    names = {k: v for k, v in model_names().items() if v != source}
    # the names that hold what was typed (its repository part): 'mixtral' for mixtral-8x7b, 'Llama-3-8B' for
    # meta-llama/Meta-Llama-3-8B, shortest first, before difflib's closest
    from .inputs import close_names

    tail = source.rsplit("/", 1)[-1].lower()
    holding = sorted({v for k, v in names.items() if len(tail) >= 3 and tail in k.lower()}, key=lambda v: (len(v), v))
    closest = close_names(source, names)
    # where difflib's closest already holds it, that one alone; else the names that hold it first
    hint = did_you_mean(source, names, first=[] if closest and tail in closest[0].lower() else holding[:2])
    return f" ({hint})" if hint else ""


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


def _fetch(repo_id: str, revision: str | None) -> str:
    """Download a hub repo's config.json (the hub library's own cache and revision handling)."""
    from huggingface_hub import hf_hub_download

    return hf_hub_download(repo_id, "config.json", revision=revision, etag_timeout=2)


def _hub_failure(repo_id: str, revision: str | None, exc: Exception, how: str) -> str:
    """What the hub's answer says, in one line: no such repo, a gated one, no such revision or file."""
    try:
        from huggingface_hub import errors
    except ImportError:  # pragma: no cover - a hub library without its errors module
        errors = None
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if errors is not None and isinstance(exc, errors.GatedRepoError):
        return (f"'{repo_id}' is gated on the hub: accept its terms on https://huggingface.co/{repo_id} and log in "
                f"(hf auth login), or {how}")
    if errors is not None and isinstance(exc, errors.RepositoryNotFoundError) or status == 404 and \
            not (errors is not None and isinstance(exc, (errors.RevisionNotFoundError, errors.EntryNotFoundError))):
        return (f"'{repo_id}' does not exist on the hub (a private repo needs hf auth login){_suggest(repo_id)}; "
                f"'roofcalc models' lists the catalog")
    if errors is not None and isinstance(exc, errors.RevisionNotFoundError):
        return f"'{repo_id}' has no revision '{revision}' on the hub; give a branch, tag or commit it has"
    if errors is not None and isinstance(exc, errors.EntryNotFoundError):
        return f"'{repo_id}'{f' at {revision}' if revision else ''} has no config.json on the hub; {how}"
    return f"cannot fetch '{repo_id}' from the hub ({type(exc).__name__}); {how}"


def _hub_config(repo_id: str, revision: str | None = None) -> Path:
    """config.json of a hub repo at ``revision`` (a branch, tag or commit; the hub library's default
    when None): the local HF cache first, then the hub unless offline."""
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "2")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "2")
    how = "download its config.json and pass the path (roofcalc ./config.json), or pick a catalog name (roofcalc models)"
    try:
        from huggingface_hub import constants, try_to_load_from_cache
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
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache and {var} is set"
                            f"{_suggest(repo_id)}; {how}")
    if not _reachable(constants.ENDPOINT):  # the hub cannot say whether the id exists
        raise RoofcalcError(f"'{repo_id}' is not in the catalog or the HF cache, and {constants.ENDPOINT} "
                            f"cannot be reached{_suggest(repo_id)}; {how}")
    try:
        return Path(_fetch(repo_id, revision))
    except Exception as exc:  # repo missing, gated, network lost...
        raise RoofcalcError(_hub_failure(repo_id, revision, exc, how)) from None


def load_config(source: str, revision: str | None = None) -> tuple[dict, str, str, CatalogEntry | None]:
    """Resolve ``source`` to (config dict, model name, origin, catalog entry or None).

    In order: a path to a config.json or a folder holding one; a catalog hub id or alias;
    any other hub id (HF cache, then the hub).
    """
    from .inputs import one_line

    if isinstance(source, dict):
        raise RoofcalcError("load_shape reads a config.json, a folder, a catalog name or a hub id; a config already "
                            "read as a dict is roofcalc.shape_from_config(config, name)")
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
        return _quant_file(_read_json(file), path), str(path), "file", None
    if exists:  # a regular file, or a pipe or device that the reader refuses by what it is
        cfg = _read_json(path)
        return (_quant_file(cfg, path.parent) if path.name == "config.json" else cfg), str(path), "file", None
    entry = find_in_catalog(source) if revision is None else None  # a revision asks the hub, not the catalog
    if entry is not None:
        return dict(entry.config), entry.hub_id, "catalog", entry
    if source.endswith(".json") or source.startswith((".", "/", "~")) or os.sep in source and not HUB_ID.match(source):
        raise RoofcalcError(f"no such file: {source}")
    if not HUB_ID.match(source):
        entry = find_in_catalog(source) if revision is not None else None
        if entry is not None:  # a catalog alias names no repository to take a revision of: say its hub id
            raise RoofcalcError(f"--revision reads a hub id, and '{source}' is a catalog name: give its hub id "
                                f"({entry.hub_id} --revision {revision}), or drop --revision")
        raise RoofcalcError(f"'{source}' is not a file, a catalog name or a hub id (owner/name){_suggest(source)}; "
                            f"'roofcalc models' lists the catalog")
    try:
        file = _hub_config(source, revision)  # a snapshot of the HF cache: ModelOpt's file beside it, where downloaded
    except RoofcalcError as exc:
        entry = find_in_catalog(source) if revision is not None and "not in the catalog" in str(exc) else None
        if entry is None:
            raise
        # the catalog holds this hub id (at the revision its entry cites), not the revision asked for: say so
        why = "cannot be reached" if "cannot be reached" in str(exc) else "is not asked (offline)"
        raise RoofcalcError(f"'{source}' at revision '{revision}' is not in the HF cache, and the hub {why}; the "
                            f"catalog holds {entry.hub_id}'s config: drop --revision to use it") from None
    return _quant_file(_read_json(file), file.parent), source + (f"@{revision}" if revision else ""), "hub", None


def _quant_file(cfg, folder: Path):
    """A checkpoint folder's config with the quantization config NVIDIA ModelOpt writes beside it
    (hf_quant_config.json: {"producer": ..., "quantization": {"quant_algo": ...}}; vLLM reads it when config.json
    has no quantization_config) as its quantization_config, marked with where it came from; the config as it is
    where it has its own, or the folder no such file (a hub id's snapshot in the HF cache holds it only where the
    checkpoint was downloaded whole: roofcalc itself fetches config.json alone)."""
    if not isinstance(cfg, dict) or "quantization_config" in cfg or \
            isinstance(cfg.get("text_config"), dict) and "quantization_config" in cfg["text_config"]:
        return cfg
    file = folder / QUANT_FILE
    if not file.is_file():
        return cfg
    q = _read_json(file)
    if not isinstance(q, dict):
        raise RoofcalcError(f"{file}: must hold a JSON object")
    return dict(cfg, quantization_config={"quant_method": "modelopt", **q, "read_from": QUANT_FILE})


def load_shape(source: str, family: str | None = None, revision: str | None = None) -> ModelShape:
    """Read a model shape from a path, a catalog name or a hub id (at ``revision`` for a hub id)."""
    from .errors import UnsupportedModelType

    cfg, name, _, _ = load_config(source, revision)
    try:
        shape = shape_from_config(cfg, name, family)
    except UnsupportedModelType as exc:  # the library's words: the command line traces such a model itself
        raise UnsupportedModelType(str(exc).replace(
            "(or pass --family NAME to read it as one of them)",
            "(or family='NAME' to read it as one of them; with torch, roofcalc.trace.trace(cfg, name, workload, "
            "view='eager') on roofcalc.load_config(source)[:2] traces its step as the command line does, and "
            "roofcalc.trace.analyzer(cfg, name, view='eager') is a sweep's analyzer=)")) from None
    return with_encoders(shape, cfg, name)


def with_encoders(shape: ModelShape, cfg: dict, name: str) -> ModelShape:
    """A multimodal checkpoint's shape with its encoders' parameters, so that its parameter count and weight
    memory are the checkpoint's, as its model card states them (counted as a traced model's are)."""
    if not shape.multimodal:
        return shape
    from dataclasses import replace

    from .trace.encoders import model_encoders

    found = model_encoders(cfg, name)
    if "params" in found:
        return replace(shape, encoder_params=found["params"],
                       encoders_note=f"its encoders counted on transformers' {found['class']}, built on the meta device")
    why = found.get("missing") or f"transformers did not build them: {found['error']}"
    return replace(shape, encoders_note=f"its encoders are not counted: {why}")
