"""retriever.fusion: RRF and weighted fusion, legs and explain, per-input top-n and keep-n."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.hybrid.fusion import FusionConfig, FusionNode, fuse, leg_names


def hits(*records: str, scores: list[float] | None = None, leg: str | None = None) -> list[Hit]:
    out = []
    for i, record in enumerate(records):
        score = scores[i] if scores else 1.0 - i / 10
        legs = {leg: {"rank": i + 1, "score": score}} if leg else {}
        doc = Document(text=f"text of {record}", metadata={"record_id": record, "source": "t.csv"})
        out.append(Hit(document=doc, score=score, rank=i + 1, id=f"id-{record}", legs=legs))
    return out


def test_rrf_sums_reciprocal_ranks_and_explains() -> None:
    dense = hits("A", "B", "C")
    keyword = hits("B", "D", "A", leg="keyword")
    fused = fuse([dense, keyword])
    assert [h.document.metadata["record_id"] for h in fused] == ["B", "A", "D", "C"]
    b = fused[0]
    assert b.score == pytest.approx(1 / 62 + 1 / 61)
    assert b.explain == "1/62 + 1/61"
    assert b.legs == {"dense": {"rank": 2, "score": pytest.approx(0.9)}, "keyword": {"rank": 1, "score": 1.0}}
    assert [h.rank for h in fused] == [1, 2, 3, 4]
    assert fused[3].legs.keys() == {"dense"}  # C only came from the dense leg


def test_rrf_k_weights_top_n_and_keep() -> None:
    dense, keyword = hits("A", "B", "C"), hits("C", "B", "A")
    fused = fuse([dense, keyword], k=0, weights=[2.0, 1.0], top_n=2, keep=2)
    # top_n=2 drops A from keyword and C from dense: A = 2/1, B = 2/2 + 1/2, C = 1/1
    assert [(h.document.metadata["record_id"], h.score) for h in fused] == [("A", 2.0), ("B", 1.5)]
    assert fused[1].explain == "2*1/2 + 1/2"


def test_weighted_uses_min_max_scaled_scores() -> None:
    dense = hits("A", "B", scores=[0.8, 0.6])
    keyword = hits("B", "A", scores=[12.0, 2.0])
    fused = fuse([dense, keyword], method="weighted", weights=[0.3, 0.7])
    assert [h.document.metadata["record_id"] for h in fused] == ["B", "A"]
    assert fused[0].score == pytest.approx(0.7) and fused[1].score == pytest.approx(0.3)


def test_leg_names_from_config_tags_and_defaults() -> None:
    assert leg_names([hits("A"), hits("A", leg="keyword"), hits("B")], []) == ["dense", "keyword", "dense2"]
    assert leg_names([hits("A"), hits("B")], ["views", ""]) == ["views", "dense"]


def test_wrong_number_of_weights_is_a_clear_error() -> None:
    with pytest.raises(NodeError, match="2 weights were given for 3 connected hit lists"):
        fuse([hits("A"), hits("B"), hits("C")], weights=[1, 2])


def test_node_runs_on_multiple_connections(tmp_path: Path) -> None:
    ctx = RunContext("fuse", data_dir=tmp_path)
    node = FusionNode(FusionConfig(keep=2))
    out = node.run({"hits": [hits("A", "B"), hits("B", "A", leg="keyword")]}, ctx)
    assert [h.document.metadata["record_id"] for h in out["hits"]] == ["A", "B"]
    assert ctx.details["inputs"] == {"dense": 2, "keyword": 2}
    assert ctx.details["fused"][0]["explain"] == "1/61 + 1/62"
    assert ctx.details["stages"]["keyword"][0]["record"] == "B"
    assert ctx.warning == ""
    half = RunContext("fuse", data_dir=tmp_path)
    node.run({"hits": [hits("A"), []]}, half)
    assert half.warning == "input dense2 found nothing: the fused list is only the other legs"
    with pytest.raises(NodeError, match="Input 'hits' is empty"):
        node.run({"hits": []}, ctx)


def view(record: str, view_name: str, rank: int) -> Hit:
    meta = {"record_id": record, "parent_id": record, "view": view_name}
    doc = Document(text=f"{view_name} of {record}", metadata=meta)
    return Hit(document=doc, score=1.0 / rank, rank=rank, id=f"{record}-{view_name}")


def test_fuse_by_parent_counts_a_records_views_once_per_leg() -> None:
    dense = [view("A", "field", 1), view("B", "whole", 2), view("A", "whole", 3)]
    keyword = [view("B", "whole", 1), view("A", "whole", 2)]
    by_chunk = fuse([dense, keyword])
    assert len(by_chunk) == 3  # A-field, A-whole and B-whole are different chunks
    by_parent = fuse([dense, keyword], by="parent")
    assert [(h.document.metadata["parent_id"], h.explain) for h in by_parent] == [
        ("A", "1/61 + 1/62"),
        ("B", "1/62 + 1/61"),
    ]
    assert by_parent[0].legs["dense"]["rank"] == 1
