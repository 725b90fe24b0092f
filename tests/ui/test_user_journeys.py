"""Python-side journeys with NiceGUI's simulated user (no browser, no JavaScript): canvas events are
triggered as the browser would send them, and we check the state, the props and the notifications."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import User

from flowbuilder.formats.native import load_flow
from flowbuilder.trust.providers import CredentialRef
from flowbuilder.ui.app import BuilderPage
from flowbuilder.ui.canvas import FlowCanvas
from flowbuilder.ui.session import PAGES
from tests.waiting import wait_until_async

from .conftest import N8N_COURSE_FILE


async def open_builder(user: User, builder: Callable[..., None], **kwargs: object) -> BuilderPage:
    builder(**kwargs)
    await user.open("/")
    await user.should_see(kind=FlowCanvas)
    assert user.client is not None
    assert user.client.id in PAGES, (user.client.id, list(PAGES))
    return PAGES[user.client.id]


def canvas_of(user: User) -> FlowCanvas:
    return next(iter(user.find(FlowCanvas).elements))  # type: ignore[return-value]


async def wait_for(condition: Callable[[], object], timeout: float = 20.0) -> None:
    await wait_until_async(condition, timeout)


async def test_page_shows_flow_nodes_as_canvas_props(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    canvas = canvas_of(user)
    ids = [n["id"] for n in canvas.props["nodes"]]
    assert ids == ["loader", "splitter", "store"]
    store = canvas.props["nodes"][2]["data"]
    # service input drawn as such, and validation issues on the node before any run
    assert {p["name"]: p["kind"] for p in store["inputs"]}["embedder"] == "service"
    assert any(i["port"] == "embedder" and "not connected" in i["message"] for i in store["issues"])
    assert page.state.flow.name == "Small CSV flow"
    await user.should_see("Compare chunking")


async def test_connect_refused_with_both_types_then_accepted(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    canvas = user.find(FlowCanvas)
    canvas.trigger(
        "connect", {"source": "loader", "sourceHandle": "records", "target": "store", "targetHandle": "embedder"}
    )
    await user.should_see("Cannot connect records to embedder")
    assert len(page.state.flow.edges) == 1
    canvas.trigger(
        "connect", {"source": "splitter", "sourceHandle": "chunks", "target": "store", "targetHandle": "documents"}
    )
    assert [e.key for e in page.state.flow.edges][-1] == "splitter.chunks->store.documents"
    assert len(canvas_of(user).props["edges"]) == 2


async def test_drop_click_move_delete_undo_copy_paste(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    canvas = user.find(FlowCanvas)
    canvas.trigger("drop_node", {"type": "embedder.local", "x": 640, "y": 220})
    assert "embedder-local" in page.state.flow.node_ids()
    assert page.state.flow.position("embedder-local").y == 220
    # click-to-add from the palette (no browser: placed right of the others)
    user.find(marker="palette-util.passthrough").click()
    await wait_for(lambda: "util-passthrough" in page.state.flow.node_ids())
    canvas.trigger("nodes_moved", [{"id": "loader", "x": 11, "y": 22}])
    assert page.state.flow.position("loader").x == 11
    canvas.trigger("shortcut", {"name": "delete", "nodes": ["splitter"], "edges": []})
    assert "splitter" not in page.state.flow.node_ids() and page.state.flow.edges == []
    canvas.trigger("shortcut", {"name": "undo"})
    assert "splitter" in page.state.flow.node_ids() and len(page.state.flow.edges) == 1
    canvas.trigger("shortcut", {"name": "redo"})
    assert "splitter" not in page.state.flow.node_ids()
    canvas.trigger("shortcut", {"name": "undo"})
    canvas.trigger("shortcut", {"name": "copy", "nodes": ["loader", "splitter"], "edges": []})
    canvas.trigger("shortcut", {"name": "paste"})
    assert len(page.state.flow.nodes) == 7
    assert len(page.state.flow.edges) == 2
    assert len(canvas_of(user).props["nodes"]) == 7


async def test_inspector_edits_config_and_shows_pydantic_errors(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    user.find(FlowCanvas).trigger("node_click", {"id": "splitter", "kind": "fbnode"})
    await user.should_see("splitter.recursive")
    field = next(iter(user.find(marker="field-chunk_size").elements))
    field.value = 120  # type: ignore[attr-defined]
    assert page.state.flow.node("splitter").config["chunk_size"] == 120
    overlap = next(iter(user.find(marker="field-chunk_overlap").elements))
    overlap.value = -5  # type: ignore[attr-defined]  # the number input's min clamps it
    assert page.state.flow.node("splitter").config["chunk_overlap"] == 0
    separators = next(iter(user.find(marker="field-separators").elements))
    separators.value = '"not a list"'  # type: ignore[attr-defined]
    assert separators.error and "valid list" in separators.error  # type: ignore[attr-defined]  # pydantic's message
    assert "separators" not in page.state.flow.node("splitter").config
    # a JSON field
    user.find(FlowCanvas).trigger("node_click", {"id": "store", "kind": "fbnode"})
    where = next(iter(user.find(marker="field-where").elements))
    where.value = "{not json"  # type: ignore[attr-defined]
    assert "not valid JSON" in where.error  # type: ignore[attr-defined]
    where.value = '{"source": "cases.csv"}'  # type: ignore[attr-defined]
    assert page.state.flow.node("store").config["where"] == {"source": "cases.csv"}


async def test_credential_bound_for_session_is_never_sent_back(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    user.find(FlowCanvas).trigger("drop_node", {"type": "embedder.openai", "x": 0, "y": 300})
    node_id = "embedder-openai"
    await user.should_see("unbound")
    secret_field = next(iter(user.find(marker="secret-api_key").elements))
    secret_field.value = "sk-test-SECRET-123456"  # type: ignore[attr-defined]
    user.find(marker="bind-api_key").click()
    await user.should_see("bound for this session")
    assert secret_field.value == ""  # type: ignore[attr-defined]
    assert page.session.resolver.explicit["openai/default"] == "sk-test-SECRET-123456"  # OpenAI's account only
    assert page.state.flow.node(node_id).credentials["api_key"] == CredentialRef(provider="openai", name="default")
    dumped = json.dumps(canvas_of(user).props) + page.state.flow.model_dump_json()
    assert "SECRET" not in dumped


async def test_run_shows_badges_and_outputs(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    page.state.remove(["store"])
    page.refresh()
    user.find(marker="run").click()
    await wait_for(lambda: "splitter" in page.session.results)
    await wait_for(lambda: (canvas_of(user).node_data("splitter") or {}).get("status") == "ok")
    data = canvas_of(user).node_data("splitter") or {}
    assert data["summary"].endswith("chunks") and data["duration"] is not None
    assert (canvas_of(user).node_data("loader") or {})["summary"] == "3 records"
    user.find(FlowCanvas).trigger("node_click", {"id": "splitter", "kind": "fbnode"})
    await user.should_see(kind=ui.table)
    rows = [row for table in user.find(kind=ui.table).elements for row in table.rows]  # type: ignore[attr-defined]
    assert {"LOGIN_001", "LOGIN_002", "LOGIN_003"} <= {r.get("record_id") for r in rows}
    assert all(r["start"] is not None and r["end"] > r["start"] for r in rows)  # chunk boundaries shown
    await user.should_see("chars min")
    # compact table: record id next to the row number, then the text (full, clamped in the browser)
    table = next(iter(user.find(kind=ui.table).elements))
    assert [c["name"] for c in table.columns][:4] == ["i", "record_id", "text", "length"]  # type: ignore[attr-defined]
    assert "body-cell" in table.slots and "fb-clamp" in str(table.slots["body-cell"].template)
    assert any(r["text"].startswith("LOGIN_002,") for r in rows)
    assert all(len(r["text"]) == r["length"] for r in rows)  # not cut in Python
    # the second run is served from the executor's cache
    user.find(marker="run").click()
    await wait_for(lambda: (canvas_of(user).node_data("splitter") or {}).get("status") == "cached")


async def test_run_with_issues_marks_nodes_and_does_not_run(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    user.find(marker="run").click()
    await user.should_see("Not run")
    assert page.session.results == {}
    issues = (canvas_of(user).node_data("store") or {})["issues"]
    assert any(i["port"] == "embedder" for i in issues)


async def test_run_to_selected_runs_only_ancestors(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    await user.should_not_see(marker="run-to")  # it needs a selection, so it leaves the header's room to others
    user.find(FlowCanvas).trigger("node_click", {"id": "loader", "kind": "fbnode"})
    await user.should_see(marker="run-to")
    user.find(marker="run-to").click()
    await wait_for(lambda: "loader" in page.session.results)
    assert set(page.session.results) == {"loader"}


async def test_save_open_and_export(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    page = await open_builder(user, builder)
    page.state.set_config_value("splitter", "chunk_size", 77)
    with user:
        page.files.save()  # the small flow lives outside the workspace: asks for a name
    await user.should_see("Save flow as")
    next(iter(user.find(marker="save-name").elements)).value = "mine"  # type: ignore[attr-defined]
    user.find(marker="save-confirm").click()
    saved = tmp_path / "workspace" / "mine.json"
    await wait_for(saved.exists)
    assert load_flow(saved).node("splitter").config["chunk_size"] == 77
    with user:
        page.files.blank()  # (New itself opens the template gallery)
        assert page.state.flow.nodes == []
        assert page.files.open_path(saved)
        assert page.state.flow.node("splitter").config["chunk_size"] == 77
        name = page.files.export("flowbuilder")
    assert name == "Small_CSV_flow.flow.json"
    await wait_for(lambda: bool(user.download.http_responses))
    assert b'"chunk_size": 77' in user.download.http_responses[-1].content
    with user:
        assert page.files.export("n8n") == "Small_CSV_flow.n8n.json"
    await wait_for(lambda: len(user.download.http_responses) == 2)
    exported = json.loads(user.download.http_responses[-1].content)
    assert "connections" in exported and len(exported["nodes"]) >= 2


async def test_import_n8n_course_file(user: User, builder: Callable[..., None]) -> None:
    if not N8N_COURSE_FILE.exists():
        pytest.skip("course file not present")
    page = await open_builder(user, builder)
    with user:
        assert page.files.import_bytes(N8N_COURSE_FILE.read_bytes(), N8N_COURSE_FILE.name)
    assert len(page.state.flow.nodes) >= 4
    assert {n["id"] for n in canvas_of(user).props["nodes"]} >= set(page.state.flow.node_ids())
    await user.should_see("Import report")


async def test_import_garbage_is_refused_clearly(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    with user:
        assert not page.files.import_bytes(b"{not json", "broken.json")
    await user.should_see("broken.json")
    assert page.state.flow.name == "Small CSV flow"


async def test_chat_panel_runs_the_flow_per_message(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    from flowbuilder.flow import Edge, Flow, NodeSpec
    from flowbuilder.formats.native import save_flow

    chat_flow = tmp_path / "chat.json"
    save_flow(
        Flow(
            name="Echo chat",
            nodes=[NodeSpec(id="question", type="chat.input"), NodeSpec(id="answer", type="chat.output")],
            edges=[Edge(source="question", source_port="message", target="answer", target_port="message")],
        ),
        chat_flow,
    )
    page = await open_builder(user, builder, flow_path=chat_flow)
    await user.should_see("Each message runs the flow")
    user.find(marker="chat-input").type("hello flow")
    user.find(marker="chat-send").click()
    await wait_for(lambda: "answer" in page.session.results)
    await user.should_see("hello flow", retries=20)
    labels = [el for el in user.find(kind=ui.label).elements if "fb-chat-answer" in el.classes]
    assert [el.text for el in labels] == ["hello flow"]  # type: ignore[attr-defined]


async def test_question_in_run_input_is_not_taken_as_a_file_path(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    page.state.remove(["store"])
    page.run_input.value = "How is an email with two dots handled?"
    user.find(marker="run").click()
    await wait_for(lambda: "splitter" in page.session.results)
    assert page.session.results["loader"].status == "ok"
    assert page.session.results["loader"].summary == "3 records"


async def test_chat_shows_retrieved_chunks_per_answer(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    """Real local embedder + embedded Chroma on the 3-row CSV; the answer lists the hits with scores."""
    from flowbuilder.flow import NodeSpec

    from .conftest import chat_flow

    answer = [NodeSpec(id="answer", type="chat.output")]
    path = chat_flow(tmp_path, "ui-chat-test", answer, [("context", "text", "answer", "message")], "Hits chat")
    page = await open_builder(user, builder, flow_path=path)
    user.find(marker="chat-input").type("two dots in the email")
    user.find(marker="chat-send").click()
    await wait_for(lambda: "answer" in page.session.results, timeout=120)
    await user.should_see("2 retrieved chunks (store)", retries=20)
    await user.should_see("LOGIN_002")  # the matching record is the top hit, shown with its id
    # one card per hit: rank, score badge, record id, source · chunk, and the whole text (clamped in CSS)
    cards = [el for el in user.find(kind=ui.element).elements if "fb-hit" in el.classes]
    assert len(cards) == 2

    def part(card: ui.element, cls: str) -> str:
        return next(el.text for el in card.descendants() if cls in el.classes)  # type: ignore[attr-defined]

    by_rank = {part(card, "fb-hit-rank"): card for card in cards}
    assert sorted(by_rank) == ["#1", "#2"]
    top = by_rank["#1"]
    assert 0.0 < float(part(by_rank["#2"], "fb-hit-score")) <= float(part(top, "fb-hit-score")) <= 1.0
    assert part(top, "fb-hit-id") == "LOGIN_002", [part(c, "fb-hit-id") for c in cards]
    assert part(top, "fb-hit-where").startswith("cases.csv")
    assert "two dots in a row in the email" in part(top, "fb-clamp")  # the full text, not cut in Python


async def test_chat_failure_is_a_readable_warning(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    """A node failing upstream of chat.output: the reply says which node failed and why, without its lead."""
    from flowbuilder.flow import Edge, Flow, NodeSpec
    from flowbuilder.formats.native import save_flow

    flow = Flow(
        name="Broken chat",
        nodes=[
            NodeSpec(id="question", type="chat.input"),
            NodeSpec(id="loader", type="loader.file", config={"path": "missing.csv"}),
            NodeSpec(id="context", type="parser.stringify"),
            NodeSpec(id="answer", type="chat.output"),
        ],
        edges=[
            Edge(source="loader", source_port="records", target="context", target_port="items"),
            Edge(source="context", source_port="text", target="answer", target_port="message"),
        ],
    )
    path = tmp_path / "broken.json"
    save_flow(flow, path)
    page = await open_builder(user, builder, flow_path=path)
    user.find(marker="chat-input").type("anything")
    user.find(marker="chat-send").click()
    await wait_for(lambda: "loader" in page.session.results)
    await user.should_see("No answer: “loader” failed", retries=20)
    boxes = [el for el in user.find(kind=ui.element).elements if "fb-chat-warning" in el.classes]
    assert len(boxes) == 1 and "fb-box-warning" in boxes[0].classes
    body = [el.text for el in user.find(kind=ui.label).elements if "fb-box-text" in el.classes]  # type: ignore[attr-defined]
    assert len(body) == 1 and "missing.csv" in body[0] and not body[0].startswith("Node 'loader'")
    assert not [el for el in user.find(kind=ui.label).elements if "fb-chat-answer" in el.classes]


async def test_side_tabs_switch_without_slide_animation(user: User, builder: Callable[..., None]) -> None:
    """The slide animation drew the previous panel at the left edge of the narrow side column."""
    page = await open_builder(user, builder)
    assert "animated" not in page.panels.props and "keep-alive" not in page.panels.props
    page.panels.set_value(page.tab_chat)
    await user.should_see("This flow has no chat.input node")


async def test_palette_categories_in_rag_order_with_full_descriptions(user: User, builder: Callable[..., None]) -> None:
    from flowbuilder.ui.palette import CATEGORY_ORDER

    page = await open_builder(user, builder)
    shown = list(page.palette.groups)
    assert shown == [c for c in CATEGORY_ORDER if c in shown]  # every built-in category in the RAG order
    assert shown[:3] == ["Inputs", "Chat", "Loaders"] and shown[-1] == "Imported"
    # the (ellipsised) description is also the item's tooltip, in full
    item = page.palette.items["loader.file"]
    description = page.state.registry.get("loader.file").description()
    tooltip = next(el for el in item.descendants() if isinstance(el, ui.tooltip))
    assert f"<div>{html.escape(description)}</div>" in "".join(
        str(getattr(el, "content", "")) for el in tooltip.descendants()
    )


def test_unknown_categories_go_before_imported() -> None:
    from flowbuilder.ui.palette import category_rank

    ordered = sorted(["Imported", "Zeta pack", "Inputs", "Alpha pack", "Utility"], key=category_rank)
    assert ordered == ["Inputs", "Utility", "Alpha pack", "Zeta pack", "Imported"]


async def test_empty_inspector_shows_flow_overview_and_issues(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    await user.should_see("Small CSV flow")
    await user.should_see("3 nodes · 1 connection")
    await user.should_see("1 issue to fix before a run")
    await user.should_see("store · embedder")
    # clicking the issue selects its node: the inspector switches to the store's settings
    user.find(marker="issue-store").click()
    assert page.selected == "store" and page.inspector.node_id == "store"
    await user.should_see("vectorstore.chroma")
    # back to the overview; fixing the issue updates the list
    page.select(None, None)
    page.state.add_node("embedder.local", 600, 300)
    page.state.connect("embedder-local", "embedder", "store", "embedder")
    page.refresh()
    await user.should_see("4 nodes · 2 connections")
    await user.should_see("Ready to run: no validation issues.")


async def test_page_import_and_export_run_off_the_event_loop(user: User, builder: Callable[..., None]) -> None:
    """The page's upload and download paths convert in a worker thread with a time limit."""
    page = await open_builder(user, builder)
    with user:
        assert not await page.files.import_bytes_async(b"[" * 10_000 + b"]" * 10_000, "deep.json")
    await user.should_see("nested too deeply")
    with user:
        assert await page.files.import_bytes_async(N8N_COURSE_FILE.read_bytes(), N8N_COURSE_FILE.name)
    assert len(page.state.flow.nodes) >= 4
    with user:
        name = await page.files.export_async("langflow")
    assert name is not None and name.endswith(".langflow.json")
    await wait_for(lambda: bool(user.download.http_responses))
    assert "nodes" in json.loads(user.download.http_responses[-1].content)["data"]
