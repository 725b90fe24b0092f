"""The path issue and its Approve button as a user sees them (a screenshot in headless Chromium)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen

from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow

from .test_browser import click, open_builder, shot

pytestmark = pytest.mark.browser


def test_an_untrusted_path_shows_its_approve_button(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    outside = tmp_path / "shared" / "team.csv"
    outside.parent.mkdir()
    outside.write_text("id,text\nr1,row\n", encoding="utf-8")
    folder = tmp_path / "flow"
    folder.mkdir()
    flow = Flow(
        name="Reads a shared file",
        nodes=[
            NodeSpec(id="loader", type="loader.file", config={"path": str(outside)}),
            NodeSpec(id="splitter", type="splitter.record"),
            NodeSpec(id="embedder", type="embedder.local"),
        ],
        edges=[Edge(source="loader", source_port="records", target="splitter", target_port="documents")],
    )
    save_flow(flow, folder / "shared.json")
    open_builder(screen, builder, flow_path=folder / "shared.json")
    screen.should_contain(f"Would read {outside}")
    shot(screen, "approve-path")
    click(screen, ".fb-approve")  # the issue list is drawn again when the layout lands: never a stale button
    screen.should_contain(f"Let this flow read the files in {outside.parent}?")
    shot(screen, "approve-path-dialog")
