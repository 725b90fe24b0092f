"""Content-addressed result cache.

A node's key hashes its type, config, credential references, run input and the keys of the nodes
feeding each of its input ports (Merkle style), so a node is reused exactly when nothing it
depends on changed: changing a retriever's ``k`` changes the retriever's key only, and the
embedding and indexing upstream are reused. Results live in memory and, optionally, on disk as
tagged JSON (data outputs only; a configured service such as an embedder is rebuilt instead).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.data import Document, Hit

log = logging.getLogger(__name__)


def node_key(
    type_name: str,
    config: dict[str, Any],
    credentials: dict[str, Any],
    run_input: object,
    upstream: dict[str, list[str]],
) -> str:
    payload = json.dumps(
        {"t": type_name, "c": config, "cr": credentials, "in": run_input, "up": upstream},
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class CachedResult:
    """One node's cached result: its outputs, summary and inspect-only details."""

    outputs: dict[str, Any]
    summary: str
    details: dict[str, Any] = field(default_factory=dict)


class _Unencodable(Exception):
    pass


def _encode(value: Any) -> Any:
    if isinstance(value, Document):
        return {"__document__": value.model_dump(mode="json")}
    if isinstance(value, Hit):
        return {"__hit__": value.model_dump(mode="json")}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: _encode(v) for k, v in value.items()}}
    raise _Unencodable(type(value).__name__)


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "__document__" in value:
            return Document.model_validate(value["__document__"])
        if "__hit__" in value:
            return Hit.model_validate(value["__hit__"])
        if "__dict__" in value:
            return {k: _decode(v) for k, v in value["__dict__"].items()}
    return value


class ResultCache:
    """Node results by key: always in memory, on disk too when ``directory`` is given."""

    def __init__(self, directory: Path | None = None, max_entries: int = 512) -> None:
        self.directory = directory
        self.max_entries = max_entries
        self._memory: dict[str, CachedResult] = {}
        self._lock = threading.Lock()  # a server runs searches on many threads at once

    def get(self, key: str) -> CachedResult | None:
        hit = self._memory.get(key)
        if hit is not None or self.directory is None:
            return hit
        path = self.directory / f"{key}.json"
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            hit = CachedResult(_decode(data["outputs"]), data["summary"], _decode(data.get("details", {})))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("Ignoring unreadable cache entry %s: %s", path, exc)
            return None
        self._memory[key] = hit
        return hit

    def put(self, key: str, result: CachedResult) -> None:
        if self.max_entries > 0:
            with self._lock:
                while len(self._memory) >= self.max_entries:
                    self._memory.pop(next(iter(self._memory)))
                self._memory[key] = result
        if self.directory is None:
            return
        try:
            payload = {
                "outputs": _encode(result.outputs),
                "summary": result.summary,
                "details": _encode(result.details),
            }
        except _Unencodable:
            return  # services are rebuilt on the next run, which is cheap
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{key}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.directory / f"{key}.json")

    def clear(self) -> None:
        self._memory.clear()

    def __len__(self) -> int:
        return len(self._memory)
