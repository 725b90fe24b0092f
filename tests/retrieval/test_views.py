"""indexer.views and retriever.parents: views point to parents; parents come back deduplicated."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.hybrid.views import (
    ParentsConfig,
    ParentsRetrieverNode,
    ViewsConfig,
    ViewsIndexerNode,
    make_views,
    return_parents,
    sentences,
)

RECORDS = [
    Document(
        text="Scenario: L-1\nDescription: Verify Login - password masking\nOpen the page. Type a password.",
        metadata={"record_id": "L-1", "source": "t.csv", "columns": {"TestCase Description": "password masking"}},
    ),
    Document(
        text="Scenario: L-2\nDescription: Verify Login - dark theme\nOpen the page. Switch the theme.",
        metadata={"record_id": "L-2", "source": "t.csv", "columns": {"TestCase Description": "dark theme"}},
    ),
]


def test_sentences_split_lines_steps_and_merge_short_ones() -> None:
    assert sentences("One. Two is longer here. | Three", 5) == ["One. Two is longer here.", "Three"]
    assert sentences("One. Two is longer here. | Three", 8) == ["One. Two is longer here. Three"]
    assert sentences("a\nbb\nccc", 4) == ["a bb ccc"]
    assert sentences("a\nbb\ncccc", 4) == ["a bb", "cccc"]


def test_views_point_to_parents_and_shared_texts_are_dropped() -> None:
    views, details = make_views(
        RECORDS, ["whole", "field", "sentence"], fields=["TestCase Description"], min_sentence_chars=5
    )
    by_view = {(d.metadata["parent_id"], d.metadata["view"], d.text) for d in views}
    assert ("L-1", "field", "password masking") in by_view
    assert ("L-2", "whole", RECORDS[1].text) in by_view
    assert all(d.metadata["parent_text"] in (RECORDS[0].text, RECORDS[1].text) for d in views)
    assert all(d.metadata["source"] == "t.csv" for d in views)
    # "Open the page." is in both records: it cannot point to one parent
    assert not any(d.text == "Open the page." for d in views)
    assert details["dropped_shared_texts"] == 2 and details["views"]["field"] == 2


def test_node_checks_fields(tmp_path: Path) -> None:
    ctx = RunContext("views", data_dir=tmp_path)
    assert ViewsIndexerNode.config_problems(ViewsConfig(views=["field"]))
    with pytest.raises(NodeError, match="None of the 2 records has the field"):
        ViewsIndexerNode(ViewsConfig(fields=["Nope"])).run({"documents": RECORDS}, ctx)
    out = ViewsIndexerNode(ViewsConfig(fields=["TestCase Description"], label_fields=True)).run(
        {"documents": RECORDS}, ctx
    )
    assert "TestCase Description: dark theme" in [d.text for d in out["chunks"]]


def view_hit(rank: int, parent: str, text: str, view: str) -> Hit:
    parent_text = next(r.text for r in RECORDS if r.metadata["record_id"] == parent)
    meta = {"parent_id": parent, "parent_text": parent_text, "view": view, "record_id": parent}
    legs = {"dense": {"rank": rank, "score": 1.0 / rank}}
    return Hit(
        document=Document(text=text, metadata=meta), score=1.0 / rank, rank=rank, id=f"{parent}{view}", legs=legs
    )


def test_parents_deduplicated_best_rank_wins_with_parent_text() -> None:
    found = [
        view_hit(1, "L-2", "dark theme", "field"),
        view_hit(2, "L-1", "x", "whole"),
        view_hit(3, "L-2", "y", "whole"),
    ]
    parents = return_parents(found)
    assert [h.document.metadata["parent_id"] for h in parents] == ["L-2", "L-1"]
    assert parents[0].document.text == RECORDS[1].text
    assert parents[0].document.metadata["matched_text"] == "dark theme"
    assert parents[0].document.metadata["matched_view"] == "field"
    assert "parent_text" not in parents[0].document.metadata
    assert parents[0].legs == {"dense": {"rank": 1, "score": 1.0}} and [h.rank for h in parents] == [1, 2]
    assert len(return_parents(found, keep=1)) == 1


def test_parents_node_passes_plain_hits_through(tmp_path: Path) -> None:
    plain = Hit(document=Document(text="plain", metadata={"record_id": "P"}), score=0.5, rank=1, id="p")
    ctx = RunContext("parents", data_dir=tmp_path)
    out = ParentsRetrieverNode(ParentsConfig(keep=3)).run({"hits": [plain, view_hit(2, "L-1", "x", "whole")]}, ctx)
    assert [h.document.text for h in out["hits"]] == ["plain", RECORDS[0].text]
    assert ctx.details["with_parent_id"] == 1 and ctx.warning == ""
    plain_only = RunContext("parents", data_dir=tmp_path)
    ParentsRetrieverNode(ParentsConfig()).run({"hits": [plain]}, plain_only)
    assert "no hit carries parent_id" in plain_only.warning


def test_parents_of_splitter_parent_child_children(tmp_path: Path) -> None:
    from flowbuilder.nodes.parent_child import ParentChildSplitter, ParentChildSplitterConfig

    text = "# Billing\n" + "Invoices are sent monthly. " * 20 + "\n# Login\n" + "Use two-step verification. " * 20
    doc = Document(text=text, metadata={"source": "help.md"})
    config = ParentChildSplitterConfig(parents="sections", child_size=120, child_overlap=0)
    children = ParentChildSplitter(config).run({"documents": [doc]}, RunContext("split", data_dir=tmp_path))["chunks"]
    assert len(children) > 4
    found = [Hit(document=c, score=1.0 / (i + 1), rank=i + 1, id=f"c{i}") for i, c in enumerate(reversed(children))]
    parents = return_parents(found)
    assert len(parents) == len({c.metadata["parent_id"] for c in children}) == 2
    assert parents[0].document.text.startswith("# Login") and "two-step" in parents[0].document.metadata["matched_text"]
