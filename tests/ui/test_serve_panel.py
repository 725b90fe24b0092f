"""The Serve panel with NiceGUI's simulated user: refuses an unsafe bind, serves the open flow on
loopback (a real HTTP server), shows client configs without the token, and stops."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from nicegui.testing import User

from flowbuilder.serving.client_config import TOKEN_PLACEHOLDER
from flowbuilder.ui.serve_panel import _RUNNING
from tests.fakes.llm_server import free_port

from .test_user_journeys import open_builder, wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "flows"


async def test_serve_panel_starts_and_stops_serving(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    panel = page.serve
    await user.should_not_see("Client configuration (HTTP)")  # a hidden tab is drawn when it is shown
    page.panels.set_value(page.tab_serve)
    await user.should_see("Client configuration (HTTP)")
    await user.should_see("None: no retrieval node is fed by a chat input.")

    panel.host.value = "0.0.0.0"
    panel.start()
    await user.should_see("without a token")
    assert not _RUNNING

    port = free_port()
    panel.host.value = "127.0.0.1"
    panel.port.value = port
    panel.token.value = "panel-secret-token"
    panel.start()
    try:
        await wait_for(lambda: port in _RUNNING)
        await user.should_see(f"Serving 'Small CSV flow' at http://127.0.0.1:{port}/mcp")
        await user.should_see(TOKEN_PLACEHOLDER)
        await user.should_not_see("panel-secret-token")
        auth = {"Authorization": "Bearer panel-secret-token"}
        health = httpx.get(f"http://127.0.0.1:{port}/health", headers=auth, timeout=10)
        assert health.json()["flow"] == "Small CSV flow"
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 401
    finally:
        panel.stop()
    assert port not in _RUNNING
    await user.should_see("Not serving.")
    try:
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
        raise AssertionError("still serving after Stop")
    except httpx.TransportError:
        pass


async def test_serve_tab_describes_the_flow_open_now(user: User, builder: Callable[..., None]) -> None:
    """Loaded while the Serve tab is on screen or while another tab is, the panel lists the open flow's tools."""
    page = await open_builder(user, builder)
    page.panels.set_value(page.tab_serve)
    await user.should_see("None: no retrieval node is fed by a chat input.")
    assert page.files.open_path(EXAMPLES / "naive_csv_rag.json")  # shown: drawn again at once
    await user.should_see("Search 'Naive CSV RAG'")
    await user.should_not_see("None: no retrieval node is fed by a chat input.")
    page.panels.set_value(page.tab_node)
    assert page.files.open_path(EXAMPLES / "hybrid_csv_rag.json")  # hidden: drawn when shown
    page.panels.set_value(page.tab_serve)
    await user.should_see("Search 'Hybrid CSV RAG")
    await user.should_not_see("Search 'Naive CSV RAG'")
