"""Edits after a run, unsaved work, reloads and shortcuts: "changed since last run" replaces stale badges,
New and Open ask before discarding edits, the open flow survives a reload, the template gallery."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen, User
from selenium.webdriver import ActionChains
from selenium.webdriver.common.keys import Keys

from flowbuilder.ui.canvas import FlowCanvas
from flowbuilder.ui.files import AUTOSAVE_NAME
from flowbuilder.ui.gallery import templates, thumbnail_svg
from flowbuilder.ui.run_panel import fold_events
from flowbuilder.ui.session import PAGES
from tests.waiting import wait_stable

from .test_browser import click, css, send_file, shot, wait_until
from .test_browser import open_builder as open_browser
from .test_user_journeys import canvas_of, open_builder, wait_for


async def test_an_edit_marks_the_node_and_its_dependants_changed_since_last_run(
    user: User, builder: Callable[..., None]
) -> None:
    page = await open_builder(user, builder)
    page.state.remove(["store"])
    page.state.add_node("util.passthrough", 900, 0)
    page.state.connect("splitter", "chunks", "util-passthrough", "value")
    page.refresh()
    user.find(marker="run").click()
    await wait_for(lambda: (canvas_of(user).node_data("util-passthrough") or {}).get("status") == "ok")
    # the run is over once its results are the session's (what "changed since last run" compares against): the
    # cards turn "ok" from the run's events a moment before that, and an edit in between has nothing to differ from
    await wait_for(lambda: not page.runner.running and "util-passthrough" in page.session.results)
    assert (canvas_of(user).node_data("splitter") or {})["summary"].endswith("chunks")
    # the splitter's chunk size changes: its "N chunks" and its dependant's badge are now stale
    assert page.state.set_config_value("splitter", "chunk_size", 25) == {}
    page.refresh()
    for node_id in ("splitter", "util-passthrough"):
        data = canvas_of(user).node_data(node_id) or {}
        assert data["status"] == "changed" and data["summary"] == "changed since last run", (node_id, data)
    assert (canvas_of(user).node_data("loader") or {})["status"] == "ok"  # upstream: still true
    # moving a node is not an edit of what it computes
    user.find(FlowCanvas).trigger("nodes_moved", [{"id": "loader", "x": 5, "y": 5}])
    page.refresh()
    assert (canvas_of(user).node_data("loader") or {})["status"] == "ok"
    # the next run clears it
    user.find(marker="run").click()
    await wait_for(lambda: (canvas_of(user).node_data("splitter") or {}).get("status") == "ok")


def test_warning_status_is_an_amber_badge_with_its_reason() -> None:
    from flowbuilder.executor import RunEvent

    events = [
        RunEvent(
            "node_finished",
            "store",
            {"summary": "0 chunks", "duration": 0.1, "status": "warning", "warning": "collection 'vwo' is empty"},
        ),
        RunEvent("node_finished", "loader", {"summary": "3 records", "duration": 0.1}),
    ]
    patches, _, lines = fold_events(events)
    assert patches["store"]["status"] == "warning" and patches["store"]["summary"] == "collection 'vwo' is empty"
    assert patches["loader"]["status"] == "ok"
    assert any("⚠ store" in line for line in lines)


async def test_new_asks_before_discarding_edits_and_offers_templates(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    page.state.rename("loader", "My loader")
    page.update_title()
    assert page.state.dirty
    user.find(marker="new").click()
    await user.should_see("New flow")
    await user.should_see("Row-labelled CSV RAG")  # an example, with its one-line description
    user.find(marker="template-naive_csv_rag").click()
    await user.should_see("Discard unsaved changes?")
    user.find(marker="keep-editing").click()
    assert page.state.flow.node("loader").name == "My loader"
    user.find(marker="new").click()
    user.find(marker="template-naive_csv_rag").click()
    user.find(marker="discard").click()
    await wait_for(lambda: page.state.flow.name == "Naive CSV RAG")
    assert not page.state.dirty


async def test_the_open_flow_survives_a_reload(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    page = await open_builder(user, builder)
    page.state.rename("loader", "Renamed before reload")
    page.refresh()
    assert (tmp_path / "workspace" / AUTOSAVE_NAME).is_file()
    await user.open("/")
    await user.should_see(kind=FlowCanvas)
    assert user.client is not None
    again = PAGES[user.client.id]
    assert again is not page
    assert again.state.flow.node("loader").name == "Renamed before reload"
    assert again.state.dirty  # still unsaved, and it says so


def test_gallery_lists_every_example_with_a_thumbnail() -> None:
    found = templates()
    assert len(found) >= 5
    for template in found:
        assert template.description and template.description.endswith(".")
        assert template.thumbnail.count("<rect") == template.nodes
    assert "<line" in thumbnail_svg(__import__("flowbuilder.formats.native", fromlist=["x"]).load_flow(found[0].path))


async def test_shortcuts_save_and_list(user: User, builder: Callable[..., None]) -> None:
    await open_builder(user, builder)
    canvas = user.find(FlowCanvas)
    canvas.trigger("shortcut", {"name": "help", "nodes": [], "edges": []})
    await user.should_see("Keyboard shortcuts")
    await user.should_see("Ctrl+Enter")
    canvas.trigger("shortcut", {"name": "save", "nodes": [], "edges": []})
    await user.should_see("Save flow as")  # the small flow is not in the workspace yet


GALLERY_BOX_JS = """const r = document.querySelector('.fb-template').closest('.q-card').getBoundingClientRect();
return [r.x, r.y, r.width, r.height, getComputedStyle(document.querySelector('.q-dialog__inner')).opacity];"""


@pytest.mark.browser
def test_keyboard_shortcuts_and_gallery_in_chromium(screen: Screen, builder: Callable[..., None]) -> None:
    open_browser(screen, builder)
    css(screen, ".vue-flow__pane")[0].click()
    ActionChains(screen.selenium).send_keys("?").perform()
    screen.should_contain("Keyboard shortcuts")
    shot(screen, "shortcuts")
    ActionChains(screen.selenium).send_keys(Keys.ESCAPE).perform()
    wait_until(lambda: not [d for d in css(screen, ".fb-shortcuts") if d.is_displayed()])
    ActionChains(screen.selenium).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
    screen.should_contain("Save flow as")
    ActionChains(screen.selenium).send_keys(Keys.ESCAPE).perform()
    wait_until(lambda: not [d for d in css(screen, ".q-dialog") if d.is_displayed()])
    screen.click("note_add")
    screen.should_contain("Blank flow")
    wait_until(lambda: len(css(screen, ".fb-template svg")) >= 6)
    wait_stable(lambda: screen.selenium.execute_script(GALLERY_BOX_JS), what="the gallery's opening animation")
    shot(screen, "template-gallery")


async def test_file_field_picker_chooses_from_data(user: User, builder: Callable[..., None]) -> None:
    from flowbuilder.examples import data_dir

    page = await open_builder(user, builder)
    user.find(FlowCanvas).trigger("node_click", {"id": "loader", "kind": "fbnode"})
    user.find(marker="pick-path").click()
    await user.should_see("Choose a file")
    await user.should_see("VWO_500_Test_Cases.csv", retries=5)
    user.find(marker="pick-VWO_500_Test_Cases.csv").click()
    expected = (data_dir() / "VWO_500_Test_Cases.csv").resolve()
    await wait_for(lambda: page.state.flow.node("loader").config.get("path") == str(expected))


@pytest.mark.browser
def test_file_field_picker_uploads_into_the_workspace(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    open_browser(screen, builder)
    page = next(iter(PAGES.values()))
    css(screen, '.vue-flow__node[data-id="loader"] .fb-title')[0].click()
    wait_until(lambda: css(screen, ".fb-side [data-field=path]"))
    click(screen, ".fb-side button", text="folder_open")
    source = tmp_path / "my notes.txt"
    source.write_text("hello", encoding="utf-8")
    send_file(screen, '.fb-file-upload input[type="file"]', source)
    wait_until(lambda: page.state.flow.node("loader").config.get("path", "").endswith("my_notes.txt"))
    stored = tmp_path / "workspace" / "uploads" / "my_notes.txt"
    assert stored.read_text(encoding="utf-8") == "hello"


async def test_a_long_ingest_runs_in_the_background_with_progress(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    """500 rows into Chroma with the local embedder takes a while: meanwhile the page answers (inspector,
    edits), the store's card shows progress, and Cancel stops it."""
    from flowbuilder.examples import data_dir
    from flowbuilder.flow import Edge, Flow, NodeSpec
    from flowbuilder.formats.native import save_flow

    flow = Flow(
        name="Big ingest",
        nodes=[
            NodeSpec(id="loader", type="loader.file", config={"path": str(data_dir() / "VWO_500_Test_Cases.csv")}),
            NodeSpec(id="embedder", type="embedder.local", config={"cache": False}),
            NodeSpec(
                id="store",
                type="vectorstore.chroma",
                config={"collection": "ui-bg", "persist_directory": str(tmp_path / "chroma"), "batch_size": 16},
            ),
        ],
        edges=[
            Edge(source="loader", source_port="records", target="store", target_port="documents"),
            Edge(source="embedder", source_port="embedder", target="store", target_port="embedder"),
        ],
    )
    path = tmp_path / "big.json"
    save_flow(flow, path)
    page = await open_builder(user, builder, flow_path=path)
    user.find(marker="run").click()
    await wait_for(lambda: (canvas_of(user).node_data("store") or {}).get("progress") is not None, timeout=120)
    assert page.runner.running
    progress = (canvas_of(user).node_data("store") or {})["progress"]
    assert progress["total"] >= 500 and 0 <= progress["done"] < progress["total"]
    # the page still answers: select a node, edit a setting, all while the ingest runs
    user.find(FlowCanvas).trigger("node_click", {"id": "loader", "kind": "fbnode"})
    assert page.inspector.node_id == "loader"
    assert page.state.set_config_value("store", "k", 7) == {}
    assert page.runner.running
    page.runner.cancel()
    await wait_for(lambda: not page.runner.running, timeout=120)
    # cancelled mid-ingest: the store says so, and it did not go on to embed every row
    assert (canvas_of(user).node_data("store") or {}).get("status") == "cancelled"
    import chromadb

    stored = chromadb.PersistentClient(path=str(tmp_path / "chroma")).get_or_create_collection("ui-bg").count()
    assert stored < 500


def test_command_line_advice_is_put_in_ui_words() -> None:
    from flowbuilder.ui.widgets import failure_text, ui_words

    ollama = (
        "Node 'llm' (llm.ollama) failed: Ollama: cannot reach the Ollama server at http://127.0.0.1:1 for model "
        "'llama3.2'. Start Ollama with `ollama serve`; or use llm.openai / llm.groq instead and bind a key with "
        "--cred api_key=... (or set OPENAI_API_KEY / GROQ_API_KEY)."
    )
    text = failure_text("llm", ollama)
    assert "--cred" not in text and text.endswith("bind a key (Bind a key).") and text.startswith("Ollama: cannot")
    assert ui_words("no file to load: set the node's path or run with --input loader=PATH") == (
        "no file to load: set the node's path or type it into the Run input box"
    )
    assert "--" not in ui_words("Bind a valid key with --cred api_key=... or set OPENAI_API_KEY.")
