"""The Fix button beside a required input left empty: it says what it does, does it in one click, and the
issue is gone (the source tool's implicit input made explicit, e.g. a store's embedder)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen, User

from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow

from .conftest import CSV_TEXT
from .test_browser import css, shot, wait_until
from .test_browser import open_builder as browser_open
from .test_user_journeys import open_builder


def store_without_embedder(folder: Path, *extra: NodeSpec) -> Path:
    (folder / "cases.csv").write_text(CSV_TEXT, encoding="utf-8")
    flow = Flow(
        name="Store with no embedder",
        nodes=[
            NodeSpec(id="loader", type="loader.file", config={"path": "cases.csv", "mode": "records"}),
            NodeSpec(id="store", type="vectorstore.chroma", name="Knowledge", config={"collection": "fix-test"}),
            *extra,
        ],
        edges=[Edge(source="loader", source_port="records", target="store", target_port="documents")],
    )
    path = folder / "fix.json"
    save_flow(flow, path)
    return path


async def test_fix_adds_the_offline_embedder_the_store_needs(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    page = await open_builder(user, builder, flow_path=store_without_embedder(tmp_path))
    await user.should_see("required input 'embedder' (embedder) is not connected")
    assert [(i.code, i.node_id, i.port) for i in page.state.issues(page.session.resolver)] == [
        ("missing-input", "store", "embedder")
    ]
    user.find(marker="overview-fix").click()
    await user.should_see("Fixed: Add a Local Embeddings (MiniLM) node and connect it to 'embedder'.")
    added = [n for n in page.state.flow.nodes if n.type == "embedder.local"]
    assert len(added) == 1
    assert any(
        e.source == added[0].id and e.target == "store" and e.target_port == "embedder" for e in page.state.flow.edges
    )
    assert page.state.issues(page.session.resolver) == []
    await user.should_see("Ready to run: no validation issues.")
    # one undo step at a time: the connection, then the node
    page.state.undo()
    assert not [e for e in page.state.flow.edges if e.target_port == "embedder"]


async def test_fix_connects_the_embedder_the_flow_already_has(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    spare = NodeSpec(id="emb", type="embedder.local", name="My embedder")
    page = await open_builder(user, builder, flow_path=store_without_embedder(tmp_path, spare))
    page.show_issues(page.state.issues(page.session.resolver))
    user.find(marker="log-fix").click()
    await user.should_see("Fixed: Connect 'My embedder' (embedder) to 'embedder'.")
    assert [n.id for n in page.state.flow.nodes] == ["loader", "store", "emb"]  # nothing added
    assert [(e.source, e.target_port) for e in page.state.flow.edges if e.target == "store"] == [
        ("loader", "documents"),
        ("emb", "embedder"),
    ]
    await user.should_see("No validation issues.")


@pytest.mark.browser
def test_fix_in_a_real_browser(screen: Screen, builder: Callable[..., None], tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text(CSV_TEXT, encoding="utf-8")
    flow = Flow(
        name="Store with no embedder",
        nodes=[
            NodeSpec(id="loader", type="loader.file", config={"path": "cases.csv", "mode": "records"}),
            NodeSpec(id="splitter", type="splitter.recursive", config={"chunk_size": 200}),
            NodeSpec(id="store", type="vectorstore.chroma", name="Knowledge", config={"collection": "fix-browser"}),
        ],
        edges=[
            Edge(source="loader", source_port="records", target="splitter", target_port="documents"),
            Edge(source="splitter", source_port="chunks", target="store", target_port="documents"),
        ],
    )
    path = tmp_path / "fix.json"
    save_flow(flow, path)
    browser_open(screen, builder, flow_path=path)
    [button] = wait_until(lambda: css(screen, ".fb-overview-issue .fb-fix"))  # type: ignore[misc]
    shot(screen, "fix-button-before")
    button.click()
    wait_until(lambda: len(css(screen, ".vue-flow__node")) == 4)
    wait_until(lambda: not css(screen, ".fb-fix"))
    screen.should_contain("Ready to run: no validation issues.")
    shot(screen, "fix-button-after")
