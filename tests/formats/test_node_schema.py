"""Node-schema snapshot: a change to a node's config or ports that would break saved flows fails until a
migration is registered in ``flowbuilder.formats.native.NODE_MIGRATIONS`` (as ComfyUI guards workflows).

Allowed without a migration: new node types, new config fields with a default, new optional input ports,
new output ports. Refresh the snapshot after an allowed change (or a migrated one) with
``FLOWBUILDER_UPDATE_SNAPSHOT=1 pytest tests/formats/test_node_schema.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.formats.native import NODE_MIGRATIONS, flow_from_data, node_migrations
from flowbuilder.registry import default_registry

SNAPSHOT = Path(__file__).parent / "node_schema_snapshot.json"
DYNAMIC = {"placeholder.unsupported"}  # ports come from the imported node, not the class


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except TypeError:
        return repr(value)
    return value


def current_schema() -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for cls in default_registry():
        fields: dict[str, Any] = {}
        for name, info in cls.Config.model_fields.items():
            annotation = info.annotation
            shown = annotation.__name__ if isinstance(annotation, type) else str(annotation)
            entry: dict[str, Any] = {"type": shown.replace("typing.", "")}
            if info.is_required():
                entry["required"] = True
            else:
                default = info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]
                entry["default"] = _jsonable(default)
            fields[name] = entry
        node: dict[str, Any] = {"config": fields}
        if cls.type_name not in DYNAMIC:
            node["inputs"] = {
                p.name: {"type": p.type.value, "required": p.required, "multiple": p.multiple}
                for p in cls.input_ports(None)
            }
            node["outputs"] = {p.name: p.type.value for p in cls.output_ports(None)}
        schema[cls.type_name] = node
    return dict(sorted(schema.items()))


def breaking_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What would break a saved flow, each as ``type: what`` with the migration key it needs."""
    problems: list[str] = []
    for type_name, before in old.items():
        migrations = node_migrations(type_name)
        after = new.get(type_name)
        if after is None:
            if "type" not in migrations:
                problems.append(f"{type_name}: node type removed or renamed (needs migration 'type')")
            continue
        for name, field in before["config"].items():
            key = f"config.{name}"
            now = after["config"].get(name)
            if key in migrations:
                continue
            if now is None:
                problems.append(f"{type_name}: config field {name!r} removed or renamed (needs {key!r})")
            elif now.get("type") != field.get("type"):
                problems.append(f"{type_name}: {name!r} changed type {field['type']} -> {now['type']} ({key!r})")
            elif now.get("default", "<required>") != field.get("default", "<required>"):
                old_default, new_default = field.get("default", "<required>"), now.get("default", "<required>")
                problems.append(f"{type_name}: {name!r} default {old_default!r} -> {new_default!r} ({key!r})")
        for name, field in after["config"].items():
            if name not in before["config"] and field.get("required") and f"config.{name}" not in migrations:
                problems.append(f"{type_name}: new config field {name!r} has no default (needs 'config.{name}')")
        for side in ("inputs", "outputs"):
            for name, port in before.get(side, {}).items():
                now_port = after.get(side, {}).get(name)
                if f"port.{name}" in migrations:
                    continue
                if now_port is None:
                    problems.append(f"{type_name}: {side[:-1]} port {name!r} removed or renamed (needs 'port.{name}')")
                elif (now_port["type"] if side == "inputs" else now_port) != (
                    port["type"] if side == "inputs" else port
                ):
                    problems.append(f"{type_name}: {side[:-1]} port {name!r} changed type (needs 'port.{name}')")
        for name, port in after.get("inputs", {}).items():
            if name not in before.get("inputs", {}) and port["required"] and f"port.{name}" not in migrations:
                problems.append(f"{type_name}: new required input {name!r}: saved flows leave it unconnected")
    return problems


def test_no_node_change_breaks_saved_flows() -> None:
    new = current_schema()
    if os.environ.get("FLOWBUILDER_UPDATE_SNAPSHOT"):
        old = json.loads(SNAPSHOT.read_text(encoding="utf-8")) if SNAPSHOT.exists() else {}
        assert not breaking_changes(old, new), "add migrations before refreshing the snapshot"
        SNAPSHOT.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    old = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    problems = breaking_changes(old, new)
    assert not problems, "changes that break saved flows:\n" + "\n".join(problems)


def test_the_check_catches_a_renamed_field_and_a_changed_default() -> None:
    old = current_schema()
    new = json.loads(json.dumps(old))
    new["splitter.recursive"]["config"]["size"] = new["splitter.recursive"]["config"].pop("chunk_size")
    new["memory.window"]["config"]["window"]["default"] = 9
    new["chat.output"]["inputs"]["extra"] = {"type": "text", "required": True, "multiple": False}
    new["vectorstore.chroma"]["config"]["sync_mode"] = {"type": "str", "default": "full"}  # allowed
    problems = breaking_changes(old, new)
    assert len(problems) == 3, problems
    NODE_MIGRATIONS.setdefault("splitter.recursive", {})["config.chunk_size"] = lambda node: node
    try:
        assert len(breaking_changes(old, new)) == 2
    finally:
        del NODE_MIGRATIONS["splitter.recursive"]


@pytest.mark.parametrize("type_name", sorted(json.loads(SNAPSHOT.read_text(encoding="utf-8"))))
def test_snapshot_type_is_registered_or_migrated(type_name: str) -> None:
    assert type_name in default_registry() or "type" in NODE_MIGRATIONS.get(type_name, {})


def test_a_node_class_carries_its_own_migrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """A renamed field migrates on load through the class's ``migrations`` (its description), no side table."""

    def renamed(node: dict[str, Any]) -> dict[str, Any]:
        config = dict(node.get("config") or {})
        if "size" in config:
            config["window"] = config.pop("size")
        return {**node, "config": config}

    cls = default_registry().get("memory.window")
    monkeypatch.setattr(cls, "migrations", {"config.window": renamed})
    saved = {
        "format": "flowbuilder",
        "version": 1,
        "name": "old",
        "nodes": [{"id": "m", "type": "memory.window", "config": {"size": 3}}],
        "edges": [],
    }
    flow = flow_from_data(saved, "old.json")
    assert flow.node("m").config == {"window": 3}
    assert "config.window" in node_migrations("memory.window")
