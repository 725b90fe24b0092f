"""The Python side of the browser's ELK layout: what the canvas is asked to lay out, and how its answer is
taken (checked, one undo step with the fallback layout before it, notes framed). The layout itself is
tested in Chromium (test_layout_elk.py)."""

from __future__ import annotations

import math

from flowbuilder.flow import Flow, Layout, Note, Position
from flowbuilder.ui.state import EditorState


def rag_state() -> tuple[EditorState, dict[str, str]]:
    state = EditorState(Flow())
    ids = {
        "loader": state.add_node("loader.file"),
        "splitter": state.add_node("splitter.recursive"),
        "store": state.add_node("vectorstore.chroma"),
        "embedder": state.add_node("embedder.local"),
    }
    state.connect(ids["loader"], "records", ids["splitter"], "documents")
    state.connect(ids["splitter"], "chunks", ids["store"], "documents")
    state.connect(ids["embedder"], "embedder", ids["store"], "embedder")
    # every card on one spot (an n8n export's small round nodes), a note round the loader, one round nothing
    state.flow.notes = [Note(id="frame", text="## Load", width=400, height=300), Note(id="free", text="hi")]
    state.flow.layout = Layout(
        positions={
            **{n: Position(x=0, y=0) for n in ids.values()},
            "frame": Position(x=-10, y=-10),
            "free": Position(x=5000, y=5000),
        }
    )
    return state, ids


def test_the_request_names_sub_nodes_data_ports_and_what_each_note_frames() -> None:
    state, ids = rag_state()
    request = state.layout_request()
    assert request["owner"] == {ids["embedder"]: ids["store"]}  # drawn under the store it serves
    nodes = {n["id"]: n for n in request["nodes"]}
    assert [p["name"] for p in nodes[ids["store"]]["inputs"]] == ["documents", "query"]  # data ports only
    assert nodes[ids["store"]]["width"] > 0 and nodes[ids["store"]]["height"] > 0  # estimates; the DOM measures
    notes = {n["id"]: n for n in request["notes"]}
    assert set(notes["frame"]["members"]) == set(ids.values()) and notes["frame"]["header"] > 0
    assert notes["free"]["members"] == [] and notes["free"]["width"] == 220.0
    assert len(request["edges"]) == 3


def test_an_answer_is_taken_whole_and_is_one_undo_step_with_the_fallback_layout() -> None:
    state, ids = rag_state()
    source = dict(state.flow.layout.positions)
    state.auto_layout()  # what an import does first
    assert state.refine_layout
    # the browser is asked to keep what the notes framed in the file, not what the fallback layout covers
    state.flow.layout.positions["free"] = state.flow.layout.positions[ids["loader"]]  # now over a card
    asked = {n["id"]: set(n["members"]) for n in state.layout_request()["notes"]}
    assert asked == {"frame": set(ids.values()), "free": set()}
    state.flow.layout.positions["free"] = Position(x=5000, y=5000)
    fallback = dict(state.flow.layout.positions)
    partial = {"positions": {ids["loader"]: {"x": 1, "y": 2}}}
    assert not state.apply_layout(partial)  # a node left out: nothing changes
    bad = {"positions": {n: {"x": math.nan, "y": 0} for n in ids.values()}}
    assert not state.apply_layout(bad) and not state.apply_layout(
        {"positions": {n: {"x": True, "y": 0} for n in ids.values()}}
    )
    assert state.flow.layout.positions == fallback
    answer = {
        "positions": {n: {"x": 300.0 * i, "y": 50.0} for i, n in enumerate(ids.values())},
        "notes": {
            "frame": {"x": -24, "y": -80, "width": 500, "height": 260},
            "free": {"x": 0, "y": 400, "width": 220, "height": 120},
        },
        "sizes": {ids["store"]: [240, 130]},
    }
    assert state.apply_layout(answer)
    assert not state.refine_layout
    assert state.flow.position(ids["store"]) == Position(x=600, y=50)
    frame = next(n for n in state.flow.notes if n.id == "frame")
    assert (state.flow.position("frame"), frame.width, frame.height) == (Position(x=-24, y=-80), 500, 260)
    assert state.flow.position("free") == Position(x=0, y=400)
    assert not state.needs_layout()
    state.undo()  # the fallback and the browser's layout were one step: back to the file's positions
    assert state.flow.layout.positions == source
