"""The native flow file: versioned, canonical JSON.

Saving is canonical (keys in model order, two-space indent, UTF-8, trailing newline), so loading a
saved file and saving it again gives the same bytes. Older versions are migrated on load; a newer or
unknown version is refused with a message that says which versions this build reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flowbuilder.errors import FlowFileError, UnsupportedFormatError
from flowbuilder.flow import FORMAT_NAME, FORMAT_VERSION, Flow
from flowbuilder.formats.limits import check_counts, check_size, parse_untrusted_json, strict_dumps
from flowbuilder.registry import default_registry


def _migrate_v0(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (pre-release): nodes keyed by id with inline positions, edges as ``"id.port"`` strings."""
    nodes: list[dict[str, Any]] = []
    positions: dict[str, dict[str, float]] = {}
    for node_id, node in (data.get("nodes") or {}).items():
        x, y = (node.get("position") or [0, 0])[:2]
        positions[node_id] = {"x": float(x), "y": float(y)}
        nodes.append(
            {"id": node_id, "type": node["type"], "name": node.get("name", ""), "config": node.get("config", {})}
        )
    edges = []
    for edge in data.get("edges") or []:
        source, source_port = str(edge["source"]).rsplit(".", 1)
        target, target_port = str(edge["target"]).rsplit(".", 1)
        edges.append({"source": source, "source_port": source_port, "target": target, "target_port": target_port})
    return {
        "format": FORMAT_NAME,
        "version": 1,
        "name": data.get("name", "Untitled flow"),
        "nodes": nodes,
        "edges": edges,
        "layout": {"positions": positions},
    }


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _migrate_v0}


NodeMigration = Callable[[dict[str, Any]], dict[str, Any]]
NODE_MIGRATIONS: dict[str, dict[str, NodeMigration]] = {}
"""Node type -> {what changed: a function from a saved node dict to its new form}, for types no class describes
any more (a removed or renamed type: key ``"type"``); a registered type carries its own in
``Node.migrations`` (:func:`node_migrations` merges both). The key names the
change the node-schema snapshot test (tests/formats/test_node_schema.py) looks for: ``"type"`` (the
type was renamed: the migration sets the new ``type``), ``"config.FIELD"`` (a field was renamed,
retyped or its default changed) or ``"port.NAME"`` (a port was renamed: the migration rewrites
nothing in the node; edges are fixed by :func:`migrate_nodes`). Each migration must be idempotent."""


def node_migrations(type_name: str) -> dict[str, NodeMigration]:
    """Every migration of ``type_name``: its class's ``migrations`` (the node describes its own history),
    then :data:`NODE_MIGRATIONS` (types no class describes any more)."""
    registry = default_registry()
    own = dict(registry.get(type_name).migrations) if type_name in registry else {}
    return {**own, **NODE_MIGRATIONS.get(type_name, {})}


def migrate_nodes(data: dict[str, Any]) -> dict[str, Any]:
    """Apply every node migration to a native flow dict (saved flows keep working after node changes)."""
    for node in data.get("nodes") or []:
        if isinstance(node, dict):
            for migration in node_migrations(str(node.get("type"))).values():
                node.update(migration(dict(node)))
    return data


FOREIGN_NAMES = {"n8n": "n8n", "langflow": "LangFlow", "flowise": "Flowise", "dify": "Dify"}
"""Each foreign format's name as its users write it."""


def detect_format(data: object) -> str:
    """``flowbuilder``, ``n8n``, ``langflow``, ``flowise``, ``dify`` or ``unknown`` for parsed JSON or YAML."""
    if not isinstance(data, dict):
        return "unknown"
    if data.get("format") == FORMAT_NAME:
        return "flowbuilder"
    if isinstance(data.get("nodes"), list) and isinstance(data.get("connections"), dict):
        return "n8n"
    if is_dify(data):
        return "dify"
    if is_flowise(data):
        return "flowise"
    inner = data.get("data")
    if isinstance(inner, dict) and isinstance(inner.get("nodes"), list) and isinstance(inner.get("edges"), list):
        return "langflow"
    if isinstance(data.get("nodes"), list) and isinstance(data.get("edges"), list) and "data" not in data:
        # A LangFlow export of only the graph part (``{"nodes", "edges", "viewport"}``).
        first = data["nodes"][0] if data["nodes"] else {}
        if isinstance(first, dict) and isinstance(first.get("data"), dict) and "node" in first["data"]:
            return "langflow"
    return "unknown"


def is_dify(data: dict[str, Any]) -> bool:
    """A Dify DSL document: an app (``kind: app``) or a Knowledge Pipeline (``kind: rag_pipeline``)."""
    if data.get("kind") in ("app", "rag_pipeline") and isinstance(data.get("version"), str | int | float):
        return isinstance(data.get("workflow") or data.get("model_config") or data.get("app"), dict)
    app = data.get("app")
    return (
        isinstance(app, dict)
        and isinstance(app.get("mode"), str)
        and (isinstance(data.get("workflow"), dict) or isinstance(data.get("model_config"), dict))
    )


def is_flowise(data: dict[str, Any]) -> bool:
    """A Flowise chatflow or agentflow: ``{"nodes", "edges"}`` whose nodes carry ``data.name`` and
    ``data.inputs`` (LangFlow's carry ``data.node``); a saved chatflow record holds it as ``flowData`` (text or
    an object)."""
    if isinstance(data.get("flowData"), str | dict) and data.get("format") != FORMAT_NAME:
        return True
    nodes, edges = data.get("nodes"), data.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        return False
    for node in nodes[:20]:
        inner = node.get("data") if isinstance(node, dict) else None
        if isinstance(inner, dict) and "node" not in inner and isinstance(inner.get("name"), str):
            return any(k in inner for k in ("inputs", "inputAnchors", "inputParams", "baseClasses"))
    return False


def read_json_file(path: Path) -> Any:
    """Read and parse a JSON file with one clear error per problem (missing, too big, not JSON)."""
    return parse_untrusted_json(read_text_file(path), path)


def read_text_file(path: Path) -> str:
    """A flow file's text (UTF-8, a BOM dropped), with one clear error per problem (missing, too big)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise FlowFileError(path, "no such file") from None
    except OSError as exc:
        raise FlowFileError(path, f"cannot read it ({exc.strerror})") from None
    if path.is_dir():
        raise FlowFileError(path, "is a folder, not a flow file")
    check_size(path, size)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise FlowFileError(path, "is not UTF-8 text; a flow file is JSON or YAML") from None
    except OSError as exc:
        raise FlowFileError(path, f"cannot read it ({exc.strerror})") from None
    return text


def flow_from_data(data: object, origin: object = "<flow>") -> Flow:
    """Build a :class:`Flow` from parsed native JSON, migrating older versions."""
    kind = detect_format(data)
    if kind in FOREIGN_NAMES:
        raise UnsupportedFormatError(
            origin,
            f"is a {FOREIGN_NAMES[kind]} export, not a Flowbuilder flow; convert it with: flowbuilder import {origin}",
        )
    if kind != "flowbuilder" or not isinstance(data, dict):
        raise UnsupportedFormatError(
            origin,
            'is not a Flowbuilder flow (expected "format": "flowbuilder"), nor an n8n, LangFlow, Flowise or Dify '
            "export",
        )
    check_counts(origin, data.get("nodes"), data.get("edges"))
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise FlowFileError(origin, f'has no integer "version" (found {version!r}); this build reads versions 0 to 1')
    if version > FORMAT_VERSION:
        raise FlowFileError(
            origin,
            f"is flow format version {version}, newer than this Flowbuilder reads (up to {FORMAT_VERSION}); "
            "upgrade Flowbuilder to open it",
        )
    while version < FORMAT_VERSION:
        if version not in MIGRATIONS:
            raise FlowFileError(origin, f"is flow format version {version}, which no migration reads")
        try:
            data = MIGRATIONS[version](data)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise FlowFileError(origin, f"version {version} file could not be migrated: {exc!r}") from None
        version = int(data["version"])
    if NODE_MIGRATIONS or any(cls.migrations for cls in default_registry()):
        data = migrate_nodes(data)
    try:
        return Flow.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'top level'}: {err['msg']}" for err in exc.errors()[:8]
        )
        raise FlowFileError(origin, f"is not a valid flow: {problems}") from None


def load_flow(path: str | os.PathLike[str]) -> Flow:
    """Load a native flow file."""
    file = Path(path)
    return flow_from_data(read_json_file(file), file)


def dump_flow(flow: Flow) -> str:
    """Canonical JSON text of a flow (what :func:`save_flow` writes)."""
    data = flow.model_dump(mode="json")
    return strict_dumps(data, indent=2) + "\n"


def save_flow(flow: Flow, path: str | os.PathLike[str]) -> None:
    """Write a flow atomically: a failed write leaves any existing file as it was."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(dump_flow(flow), file)


def write_text_atomic(text: str, file: Path) -> None:
    """Write ``text`` through a temporary file so that a failure leaves any existing file (and no debris)."""
    tmp = file.with_name(f".{file.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(file)
    finally:
        tmp.unlink(missing_ok=True)
