"""Every reader applies the same limits: a file on the command line and an upload in the builder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.errors import FlowFileError
from flowbuilder.formats.limits import MAX_NODES
from flowbuilder.ui.formats_bridge import import_data, parse_upload


def n8n_export(count: int) -> dict[str, Any]:
    nodes = [
        {
            "id": f"n{i}",
            "name": f"Note {i}",
            "type": "n8n-nodes-base.stickyNote",
            "typeVersion": 1,
            "position": [i * 10, 0],
            "parameters": {"content": "x"},
        }
        for i in range(count)
    ]
    return {"name": "big", "nodes": nodes, "connections": {}}


def langflow_export(count: int) -> dict[str, Any]:
    nodes = [
        {
            "id": f"note-{i}",
            "type": "noteNode",
            "position": {"x": i, "y": 0},
            "data": {"id": f"note-{i}", "type": "note", "node": {"description": "x", "template": {}}},
        }
        for i in range(count)
    ]
    return {"name": "big", "data": {"nodes": nodes, "edges": []}}


def native_flow(count: int) -> dict[str, Any]:
    nodes = [{"id": f"c{i}", "type": "chat.input", "config": {}} for i in range(count)]
    return {"format": "flowbuilder", "version": 1, "name": "big", "nodes": nodes, "edges": []}


@pytest.mark.parametrize("make", [n8n_export, langflow_export, native_flow])
def test_the_builder_upload_refuses_one_node_over_the_limit(make: Any) -> None:
    content = json.dumps(make(MAX_NODES + 1)).encode()
    with pytest.raises(FlowFileError, match=f"{MAX_NODES + 1:,} nodes"):
        import_data(parse_upload(content, "big.json"), "big.json")


@pytest.mark.parametrize("make", [n8n_export, langflow_export])
def test_the_command_line_refuses_the_same_file(make: Any, tmp_path: Path, capsys: Any) -> None:
    source = tmp_path / "big.json"
    source.write_text(json.dumps(make(MAX_NODES + 1)))
    assert main(["import", str(source), "-o", str(tmp_path / "out.json")]) == 2
    assert f"{MAX_NODES + 1:,} nodes" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_under_the_limit_the_builder_upload_imports() -> None:
    flow, report = import_data(parse_upload(json.dumps(n8n_export(50)).encode(), "notes.json"), "notes.json")
    assert report is not None and len(flow.notes) == 50
