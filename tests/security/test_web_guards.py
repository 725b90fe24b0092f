"""Issue 30's web and MCP items: approvals keyed per node kind; an unknown ``flow://chunks/{source}`` is one
line and no traceback. (Origin on scheme, host and port and frame-ancestors: tests/serve/test_netguard.py.)"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from flowbuilder.cli import main
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.serving.mcp_server import build_mcp_server
from flowbuilder.serving.service import FlowService
from tests.serve.conftest import search_flow


def test_approvals_are_keyed_per_node_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Approving an origin for loader.url does not let a tool.http call it (nor the other way round)."""
    nodes = [
        NodeSpec(id="page", type="loader.url", config={"urls": ["https://intranet.example/wiki"]}),
        NodeSpec(id="tool", type="tool.http", config={"url": "https://intranet.example/api/delete"}),
    ]
    path = tmp_path / "flow.json"
    save_flow(Flow(name="two kinds", nodes=nodes), path)
    assert main(["validate", str(path), "--allow-endpoint", "loader.url=https://intranet.example"]) == 1
    out = capsys.readouterr().out
    assert "node 'tool'" in out and "node 'page'" not in out
    assert "--allow-endpoint tool.http/default=https://intranet.example" in out
    assert main(["validate", str(path), "--allow-endpoint", "tool.http=https://intranet.example"]) == 1
    out = capsys.readouterr().out
    assert "node 'page'" in out and "node 'tool'" not in out


def test_an_unknown_chunk_source_is_one_line_and_no_traceback(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("id,text\nr1,hello there\n", encoding="utf-8")
    flow = search_flow("rows", "data", "rows", "db", k=2)
    flow.nodes = [n.model_copy(update={"type": "embedder.wordllama"}) if n.id == "embedder" else n for n in flow.nodes]
    path = tmp_path / "rows.json"
    save_flow(flow, path)
    service = FlowService(path, data_dir=tmp_path / "state")

    async def read(uri: str) -> str:
        async with Client(build_mcp_server(service)) as client:
            try:
                result = await client.read_resource(uri)
            except MCPError as exc:  # what the client is told
                return f"error: {exc}"
            return result.contents[0].text  # type: ignore[union-attr]

    caplog.set_level(logging.DEBUG)
    assert "hello there" in anyio.run(read, "flow://chunks/rows.csv")
    caplog.clear()
    message = anyio.run(read, "flow://chunks/nope.csv")
    assert message.startswith("error: ")
    assert "no chunks from source 'nope.csv'" in message and "flow://chunks" in message and "\n" not in message
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
