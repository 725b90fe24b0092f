"""Stage tables of the output inspector: each leg's rank and score, the RRF sum, rendered on a page."""

from __future__ import annotations

from pathlib import Path

from nicegui import ui
from nicegui.testing import User

from flowbuilder.data import Document, Hit
from flowbuilder.executor import NodeResult
from flowbuilder.node import RunContext
from flowbuilder.nodes.hybrid.fusion import FusionConfig, FusionNode
from flowbuilder.ui.outputs import hit_rows, render_result, stage_table


def hits(*records: str, leg: str | None = None) -> list[Hit]:
    out = []
    for i, record in enumerate(records, start=1):
        legs = {leg: {"rank": i, "score": 10.0 - i}} if leg else {}
        doc = Document(text=f"text of {record}", metadata={"record_id": record})
        out.append(Hit(document=doc, score=1.0 - i / 10, rank=i, id=record, legs=legs))
    return out


def fusion_result(tmp_path: Path) -> NodeResult:
    ctx = RunContext("fusion", data_dir=tmp_path)
    node = FusionNode(FusionConfig(names=["dense", "keyword"]))
    outputs = node.run({"hits": [hits("A", "B", "C"), hits("C", "A", leg="keyword")]}, ctx)
    return NodeResult("fusion", "retriever.fusion", "ok", outputs, node.summarize(outputs), 0.01, None, ctx.details)


def test_stage_table_has_a_rank_and_score_column_per_leg(tmp_path: Path) -> None:
    fused = fusion_result(tmp_path).outputs["hits"]
    columns, rows = stage_table(hit_rows(fused))
    names = [c["name"] for c in columns]
    assert names == [
        "rank",
        "record",
        "score",
        "dense #",
        "dense score",
        "keyword #",
        "keyword score",
        "explain",
        "text",
    ]
    a = next(r for r in rows if r["record"] == "A")
    assert (a["dense #"], a["keyword #"], a["explain"]) == (1, 2, "1/61 + 1/62")
    b = next(r for r in rows if r["record"] == "B")
    assert b["keyword #"] is None and b["keyword score"] is None  # the keyword leg missed B


def test_plain_hits_have_no_leg_columns() -> None:
    columns, _ = stage_table(hit_rows(hits("A")))
    assert [c["name"] for c in columns] == ["rank", "record", "score", "text"]
    tagged = [h.model_copy(update={"legs": {"keyword": {"rank": h.rank, "score": h.score}}}) for h in hits("A", "B")]
    columns, _ = stage_table(hit_rows(tagged))  # a leg that repeats rank and score is not shown twice
    assert [c["name"] for c in columns] == ["rank", "record", "score", "text"]


async def test_inspector_shows_every_stage_of_a_fusion(user: User, tmp_path: Path) -> None:
    result = fusion_result(tmp_path)

    @ui.page("/stages")
    def page() -> None:
        render_result(result, "RRF")

    await user.open("/stages")
    await user.should_see("dense hits (3)", retries=50)  # a loaded machine renders slowly
    await user.should_see("keyword hits (2)")
    await user.should_see("fused (3)")
    tables = list(user.find(kind=ui.table).elements)
    assert len(tables) == 4  # the output, the two legs, the fused details
    with_legs = [t for t in tables if {"dense #", "keyword #", "explain"} <= {c["name"] for c in t.columns}]  # type: ignore[attr-defined]
    assert len(with_legs) == 2  # the output hits and the fused rows of the details
    assert all(t.rows[0]["explain"] == "1/61 + 1/62" for t in with_legs)  # type: ignore[attr-defined]
