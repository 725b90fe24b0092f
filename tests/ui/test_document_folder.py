"""The builder with a folder of documents: the file picker says which types the loader reads and offers sample
folders; after a run, the loader's output view lists the files read (with their record counts) and the skipped ones
with why, and its card says `warning`."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen, User

from flowbuilder.flow import Edge, Flow, Layout, NodeSpec, Position
from flowbuilder.formats.native import load_flow, save_flow
from flowbuilder.ui.canvas import FlowCanvas
from tests.waiting import wait_stable

from .test_browser import css, shot, wait_animations_done, wait_until
from .test_browser import open_builder as open_browser
from .test_user_journeys import open_builder, wait_for

HANDBOOK = Path(__file__).resolve().parents[2] / "data" / "qa-handbook"


def folder_flow(folder: Path) -> Path:
    """loader.file over a team folder (two good files, one truncated Word file) -> splitter.markdown."""
    team = folder / "team"
    team.mkdir()
    shutil.copy(HANDBOOK / "onboarding.pptx", team / "onboarding.pptx")
    shutil.copy(HANDBOOK / "test-data.html", team / "test-data.html")
    (team / "roadmap.docx").write_bytes((HANDBOOK / "bug-triage.docx").read_bytes()[:4000])
    flow = Flow(
        name="Team folder",
        nodes=[
            NodeSpec(id="loader", type="loader.file", name="Team folder", config={"path": "team"}),
            NodeSpec(id="splitter", type="splitter.markdown", config={"chunk_size": 400, "chunk_overlap": 0}),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "ui-folder"}),
        ],
        edges=[Edge(source="loader", source_port="records", target="splitter", target_port="documents")],
        layout=Layout(
            positions={"loader": Position(x=0, y=0), "splitter": Position(x=320, y=0), "store": Position(x=640, y=0)}
        ),
    )
    path = folder / "team.json"
    save_flow(flow, path)
    return path


async def test_picker_lists_the_loader_types_and_offers_a_sample_folder(
    user: User, builder: Callable[..., None]
) -> None:
    from flowbuilder.examples import data_dir

    page = await open_builder(user, builder)
    user.find(FlowCanvas).trigger("node_click", {"id": "loader", "kind": "fbnode"})
    user.find(marker="pick-path").click()
    await user.should_see("Choose a file")
    await user.should_see("Reads .csv, .tsv, .json, .pdf, .txt, .md, .markdown, .xlsx", retries=5)
    await user.should_see(".docx, .pptx, .odt, .html, .htm, .epub; or a folder of them.")
    user.find(marker="pick-folder-qa-handbook").click()
    expected = (data_dir() / "qa-handbook").resolve()
    await wait_for(lambda: page.state.flow.node("loader").config.get("path") == str(expected))


@pytest.mark.browser
def test_loader_output_lists_files_read_and_skipped(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    open_browser(screen, builder, flow_path=folder_flow(tmp_path))
    css(screen, '.vue-flow__node[data-id="splitter"] .fb-title')[0].click()
    screen.click("Run to selected")
    wait_until(lambda: css(screen, '.vue-flow__node[data-id="splitter"] .fb-status-ok'), timeout=60)
    status = css(screen, '.vue-flow__node[data-id="loader"] .fb-status-text')[0].text
    assert status.startswith("1 of 3 files skipped: roadmap.docx: not a readable Word document"), status
    assert css(screen, '.vue-flow__node[data-id="loader"] .fb-status-warning')
    css(screen, '.vue-flow__node[data-id="loader"] .fb-title')[0].click()
    screen.should_contain("7 records from 2 files, 1 skipped")
    screen.should_contain("files read (2)")
    table = wait_until(lambda: css(screen, ".fb-out-files tbody tr"))
    rows = [row.text.split() for row in table]  # type: ignore[union-attr]
    assert rows == [["onboarding.pptx", "6"], ["test-data.html", "1"]], rows
    box = wait_until(lambda: css(screen, ".fb-out-skipped"))[0]  # type: ignore[index]
    assert "1 file(s) skipped" in box.text and "roadmap.docx: not a readable Word document" in box.text
    box.location_once_scrolled_into_view  # noqa: B018  (scrolls the box into view for the screenshot)
    wait_stable(lambda: box.rect, what="the scrolled output")
    shot(screen, "loader-folder-output")


@pytest.mark.browser
def test_picker_in_chromium_shows_the_types_and_folders(screen: Screen, builder: Callable[..., None]) -> None:
    open_browser(screen, builder)
    css(screen, '.vue-flow__node[data-id="loader"] .fb-title')[0].click()
    wait_until(lambda: css(screen, ".fb-side [data-field=path]"))
    next(b for b in css(screen, ".fb-side button") if "folder_open" in b.text).click()
    # the dialog fades in: a caption not yet displayed has no text for the browser
    text = wait_until(lambda: next((c.text for c in css(screen, ".fb-file-types") if c.is_displayed()), ""))
    assert ".docx" in text and ".epub" in text, text
    folders = [b.text for b in css(screen, ".fb-folder-choice")]
    assert any("qa-handbook" in text and "10 files" in text for text in folders), folders
    wait_animations_done(screen)  # the picker dialog has opened
    shot(screen, "file-picker-types")


async def test_chat_reply_says_the_folder_was_read_in_part(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    path = folder_flow(tmp_path)
    flow = load_flow(path)
    flow.nodes += [NodeSpec(id="question", type="chat.input"), NodeSpec(id="embedder", type="embedder.local")]
    store = flow.node("store")
    store.config = {"collection": "ui-folder-chat", "k": 2, "persist_directory": str(tmp_path / "chroma")}
    flow.edges += [
        Edge(source="splitter", source_port="chunks", target="store", target_port="documents"),
        Edge(source="embedder", source_port="embedder", target="store", target_port="embedder"),
        Edge(source="question", source_port="message", target="store", target_port="query"),
    ]
    save_flow(flow, path)
    page = await open_builder(user, builder, flow_path=path)
    user.find(marker="chat-input").type("who keeps the test accounts?")
    user.find(marker="chat-send").click()
    await wait_for(lambda: "store" in page.session.results and not page.runner.running, timeout=120)
    await user.should_see("“Team folder” read 2 files and skipped 1", retries=40)
    await user.should_see("Not searched: roadmap.docx")
