"""Which flow a run belongs to, and the flow's own folder in the data dir.

State a flow leaves behind (the default Chroma and Qdrant stores, chat memory, keyword indexes) lives in
``<data dir>/flows/<scope key>/``, never in a folder every flow shares. The scope key identifies *a flow*:

- a flow file: its real path (symlinks followed) together with the ``flow_id`` in its ``meta``. A copy or a
  rename is another flow (another path), and a file written over the user's flow (an import saved under the
  same name) is another flow too: importing gives a new ``flow_id``, so copying the id field claims nothing
  without the path, and the path claims nothing without the id;
- a flow without a file (the builder's unsaved flow): its folder and ``flow_id``;
- a flow built in code with neither: one scope for all of them (its programmer's own, like the path rules).

Moving a flow file therefore starts a new scope: its stores are ingested again (the embedding cache keeps
that cheap) and the old folder stays until the user deletes it. ``scope.json`` in each folder names the flow
for people reading the data dir.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets as random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FLOWS_FOLDER = "flows"
ID_KEY = "flow_id"
"""Key of ``Flow.meta`` holding the flow's random id (given at creation and import)."""


@dataclass(frozen=True)
class FlowScope:
    """A flow's identity for the state it leaves in the data dir."""

    key: str
    """16 hex digits, the name of the flow's folder in the data dir."""
    label: str
    """Who it is, for people: the flow file's path, or what kind of flow has none."""
    file: Path | None = None
    """The flow file (real path), when there is one."""

    def state_dir(self, data_dir: Path) -> Path:
        """``<data dir>/flows/<key>``: where this flow's stores, memory and indexes live by default."""
        return data_dir / FLOWS_FOLDER / self.key

    def prepare(self, data_dir: Path) -> Path:
        """The state dir, created, with ``scope.json`` naming the flow."""
        folder = self.state_dir(data_dir)
        folder.mkdir(parents=True, exist_ok=True)
        marker = folder / "scope.json"
        if not marker.exists():
            tmp = folder / f".scope.{os.getpid()}.tmp"
            tmp.write_text(json.dumps({"flow": self.label}, ensure_ascii=False), encoding="utf-8")
            tmp.replace(marker)
        return folder


def new_flow_id() -> str:
    """A random id for a flow made in the builder."""
    return random.token_hex(16)


def imported_flow_id(data: Any) -> str:
    """The id an imported flow gets: a digest of the file it came from (so an import is the same file in every
    process), never the id the file carries: with the flow file's path it makes the scope, so an import saved
    over the user's flow is another flow."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(("import\0" + text).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def flow_id_of(meta: Any) -> str:
    value = meta.get(ID_KEY) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def flow_scope(meta: Any = None, flow_file: str | Path | None = None, base_dir: Path | None = None) -> FlowScope:
    """The scope of a flow with ``meta`` saved as ``flow_file`` (else kept in ``base_dir``, else built in code)."""
    flow_id = flow_id_of(meta)
    if flow_file is not None:
        real = Path(os.path.realpath(os.path.expanduser(str(flow_file))))
        return FlowScope(_digest("file", str(real), flow_id), str(real), real)
    if base_dir is not None:
        folder = os.path.realpath(base_dir)
        return FlowScope(_digest("folder", folder, flow_id), f"a flow without a file in {folder}")
    return FlowScope(_digest("code", flow_id), "a flow built in code")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def scope_label(data_dir: Path, key: str) -> str:
    """What ``scope.json`` of scope ``key`` says (for messages about stores another flow wrote)."""
    try:
        data = json.loads((data_dir / FLOWS_FOLDER / key / "scope.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"flow {key}"
    return str(data.get("flow") or f"flow {key}") if isinstance(data, dict) else f"flow {key}"


__all__ = [
    "FLOWS_FOLDER",
    "ID_KEY",
    "FlowScope",
    "flow_id_of",
    "flow_scope",
    "imported_flow_id",
    "new_flow_id",
    "scope_label",
]
