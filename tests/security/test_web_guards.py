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


@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://127.0.0.1:3000", "https://127.0.0.1"])
def test_serve_compares_origin_on_scheme_host_and_port_and_forbids_framing(tmp_path: Path, origin: str) -> None:
    """The real ``serve`` app (not only the guard alone): another port or scheme on this machine is another
    site, refused before the flow runs; every answer forbids framing."""
    from starlette.testclient import TestClient

    from flowbuilder.serving.http_app import build_http_app

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("id,text\nr1,hello there\n", encoding="utf-8")
    path = tmp_path / "rows.json"
    save_flow(search_flow("rows", "data", "rows", "db", k=2), path)
    app = build_http_app(FlowService(path, data_dir=tmp_path / "state"), host="127.0.0.1")
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    refused = client.post("/ask", json={"question": "hello"}, headers={"origin": origin})
    assert refused.status_code == 403 and "Origin" in refused.json()["error"], refused.text
    assert refused.headers["content-security-policy"] == "frame-ancestors 'none'"
    page = client.get("/search", params={"q": "hello", "k": 1}, headers={"origin": "http://127.0.0.1:8000"})
    assert page.status_code == 200 and "hello there" in page.text, page.text
    assert page.headers["content-security-policy"] == "frame-ancestors 'none'"


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_serve_refuses_what_another_site_makes_a_browser_send(tmp_path: Path, site: str) -> None:
    """An ``<img src="http://127.0.0.1:8000/search?q=...">`` on any page makes a GET without Origin: its answer
    cannot be read, but the search would run. Browsers mark it ``Sec-Fetch-Site``; the real ``serve`` app refuses
    it in one line before the flow runs, while the user's own address bar (``none``), this server's pages
    (``same-origin``) and clients that send no such header (curl, MCP clients) still search."""
    from starlette.testclient import TestClient

    from flowbuilder.serving.http_app import build_http_app

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("id,text\nr1,hello there\n", encoding="utf-8")
    path = tmp_path / "rows.json"
    save_flow(search_flow("rows", "data", "rows", "db", k=2), path)
    app = build_http_app(FlowService(path, data_dir=tmp_path / "state"), host="127.0.0.1")
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    image = {"sec-fetch-site": site, "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image"}
    refused = client.get("/search", params={"q": "hello", "k": 1}, headers=image)
    assert refused.status_code == 403, refused.text
    message = refused.json()["error"]
    assert f"Sec-Fetch-Site: {site}" in message and "\n" not in message and "hello there" not in refused.text
    link = {"sec-fetch-site": site, "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}
    assert client.get("/search", params={"q": "hello", "k": 1}, headers=link).status_code == 403
    assert client.post("/ask", json={"question": "hello"}, headers={"sec-fetch-site": site}).status_code == 403
    for own in ({"sec-fetch-site": "none"}, {"sec-fetch-site": "same-origin"}, {}):
        page = client.get("/search", params={"q": "hello", "k": 1}, headers=own)
        assert page.status_code == 200 and "hello there" in page.text, (own, page.text)
