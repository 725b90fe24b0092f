"""EditorState: checked edits, undo/redo, clipboard and auto-layout (plain Python, no browser)."""

from __future__ import annotations

import pytest

from flowbuilder.errors import InvalidConnectionError, UnknownNodeTypeError
from flowbuilder.flow import Flow
from flowbuilder.ui.forms import form_fields
from flowbuilder.ui.state import EditorState


@pytest.fixture
def state() -> EditorState:
    return EditorState(Flow())


def test_connect_accepts_compatible_ports(state: EditorState) -> None:
    loader = state.add_node("loader.file", 0, 0)
    splitter = state.add_node("splitter.recursive", 300, 0)
    edge = state.connect(loader, "records", splitter, "documents")
    assert [e.key for e in state.flow.edges] == [edge.key] == ["loader-file.records->splitter-recursive.documents"]


def test_connect_refuses_a_mismatch_naming_both_types(state: EditorState) -> None:
    loader = state.add_node("loader.file", 0, 0)
    store = state.add_node("vectorstore.chroma", 300, 0)
    with pytest.raises(InvalidConnectionError) as info:
        state.connect(loader, "records", store, "embedder")
    message = str(info.value)
    assert "records" in message and "embedder" in message
    assert state.flow.edges == []


def test_connect_refuses_unknown_port_listing_ports_and_cycles(state: EditorState) -> None:
    a = state.add_node("util.passthrough", 0, 0)
    b = state.add_node("util.passthrough", 300, 0)
    with pytest.raises(InvalidConnectionError, match=r"no output 'nope'.*value \(any\)"):
        state.connect(a, "nope", b, "value")
    state.connect(a, "value", b, "value")
    with pytest.raises(InvalidConnectionError, match="cycle"):
        state.connect(b, "value", a, "value")


def test_single_input_is_replaced_not_doubled(state: EditorState) -> None:
    a = state.add_node("loader.file", 0, 0)
    b = state.add_node("loader.file", 0, 200)
    s = state.add_node("splitter.recursive", 300, 0)
    state.connect(a, "records", s, "documents")
    state.connect(b, "records", s, "documents")
    assert [(e.source, e.target) for e in state.flow.edges] == [(b, s)]


def test_unknown_type_is_refused(state: EditorState) -> None:
    with pytest.raises(UnknownNodeTypeError, match="splitter"):
        state.add_node("splitter.recursiv")


def test_undo_redo_walks_history(state: EditorState) -> None:
    a = state.add_node("loader.file", 0, 0)
    s = state.add_node("splitter.recursive", 300, 0)
    state.connect(a, "records", s, "documents")
    assert len(state.flow.edges) == 1
    assert state.undo()
    assert state.flow.edges == [] and len(state.flow.nodes) == 2
    assert state.undo()
    assert state.flow.node_ids() == [a]
    assert state.redo() and state.redo()
    assert len(state.flow.edges) == 1
    assert not state.redo()
    state.undo()
    state.add_node("util.passthrough")  # a new edit drops the redo branch
    assert not state.can_redo


def test_typing_in_one_field_is_one_undo_step(state: EditorState) -> None:
    s = state.add_node("splitter.recursive")
    for size in (5, 50, 500):
        assert state.set_config_value(s, "chunk_size", size) == {}
    assert state.flow.node(s).config["chunk_size"] == 500
    state.undo()
    assert "chunk_size" not in state.flow.node(s).config


def test_invalid_config_is_refused_with_pydantic_message(state: EditorState) -> None:
    s = state.add_node("splitter.recursive")
    errors = state.set_config_value(s, "chunk_size", "many")
    assert "chunk_size" in errors and "integer" in errors["chunk_size"]
    assert "chunk_size" not in state.flow.node(s).config


def test_delete_removes_node_and_its_edges_and_undo_restores(state: EditorState) -> None:
    a = state.add_node("loader.file", 0, 0)
    s = state.add_node("splitter.recursive", 300, 0)
    state.connect(a, "records", s, "documents")
    assert state.remove([s]) == [s]
    assert state.flow.node_ids() == [a] and state.flow.edges == []
    assert s not in state.flow.layout.positions
    state.undo()
    assert state.flow.node_ids() == [a, s] and len(state.flow.edges) == 1


def test_copy_paste_gives_fresh_ids_internal_edges_and_offset(state: EditorState) -> None:
    a = state.add_node("loader.file", 10, 20)
    s = state.add_node("splitter.recursive", 300, 20)
    state.connect(a, "records", s, "documents")
    state.set_config_value(s, "chunk_size", 321)
    assert state.copy([a, s]) == 2
    new_ids = state.paste()
    assert len(new_ids) == 2 and not set(new_ids) & {a, s}
    assert len(state.flow.edges) == 2
    pasted_edge = state.flow.edges[-1]
    assert (pasted_edge.source, pasted_edge.target) == tuple(new_ids)
    assert state.flow.node(new_ids[1]).config["chunk_size"] == 321
    assert state.flow.position(new_ids[0]).x == 50 and state.flow.position(new_ids[0]).y == 60
    again = state.paste()
    assert state.flow.position(again[0]).x == 90  # a second paste does not land on the first
    state.undo()
    assert len(state.flow.nodes) == 4


def test_notes_are_added_edited_and_deleted(state: EditorState) -> None:
    note = state.add_note("hello", 5, 5)
    state.set_note_text(note, "hello world")
    assert state.flow.notes[0].text == "hello world"
    state.remove([note])
    assert state.flow.notes == []


def test_auto_layout_layers_left_to_right_and_puts_services_under_their_consumer(state: EditorState) -> None:
    loader = state.add_node("loader.file")
    splitter = state.add_node("splitter.recursive")
    store = state.add_node("vectorstore.chroma")
    embedder = state.add_node("embedder.local")
    state.connect(loader, "records", splitter, "documents")
    state.connect(splitter, "chunks", store, "documents")
    state.connect(embedder, "embedder", store, "embedder")
    state.auto_layout()
    pos = {n: state.flow.position(n) for n in (loader, splitter, store, embedder)}
    assert pos[loader].x < pos[splitter].x < pos[store].x
    assert pos[loader].y == pos[splitter].y == pos[store].y
    # the embedder is a sub-node: same column as the store, below it
    assert abs(pos[embedder].x - pos[store].x) < 1
    assert pos[embedder].y > pos[store].y + 60
    state.undo()
    assert state.flow.position(embedder).x == 0 and state.flow.position(embedder).y == 0


def test_auto_layout_spreads_several_sub_nodes_under_an_agent(state: EditorState) -> None:
    agent = state.add_node("agent.tools")
    model = state.add_node("llm.ollama")
    memory = state.add_node("memory.window")
    state.connect(model, "model", agent, "model")
    state.connect(memory, "memory", agent, "memory")
    state.auto_layout()
    a, m, mem = (state.flow.position(n) for n in (agent, model, memory))
    assert m.y > a.y and mem.y > a.y and m.y == mem.y
    assert abs(m.x - mem.x) >= 230  # side by side, not stacked


def test_form_fields_from_config_schema() -> None:
    state = EditorState(Flow())
    schema = state.registry.get("splitter.character").Config.model_json_schema()
    fields = {f.name: f for f in form_fields(schema)}
    assert fields["chunk_size"].kind == "integer"
    assert fields["keep_separator"].kind == "select" and set(fields["keep_separator"].options) == {
        "none",
        "start",
        "end",
    }
    store = {f.name: f for f in form_fields(state.registry.get("vectorstore.chroma").Config.model_json_schema())}
    assert store["where"].kind == "json"
    assert store["min_score"].nullable and store["min_score"].kind == "number"
    prompt = {f.name: f for f in form_fields(state.registry.get("prompt.template").Config.model_json_schema())}
    assert prompt["template"].kind == "textarea"
    llm = {f.name: f for f in form_fields(state.registry.get("llm.ollama").Config.model_json_schema())}
    assert llm["stream"].kind == "switch"


def test_fold_events_shortens_badges_but_logs_everything() -> None:
    from flowbuilder.executor import RunEvent
    from flowbuilder.ui.run_panel import fold_events

    events = [
        RunEvent("node_failed", "llm", {"error": "Node 'llm' (llm.ollama) failed: Ollama: down", "duration": 0.2}),
        RunEvent("node_skipped", "answer", {"reason": "upstream node 'llm' failed"}),
        RunEvent("node_skipped", "off", {"reason": "disabled"}),
    ]
    patches, tokens, lines = fold_events(events)
    assert patches["answer"] == {"status": "skipped", "summary": "skipped: 'llm' failed"}
    assert patches["off"]["status"] == "disabled"
    assert patches["llm"]["status"] == "failed" and patches["llm"]["error"].endswith("Ollama: down")
    assert "– answer: skipped (upstream node 'llm' failed)" in lines and tokens == []
