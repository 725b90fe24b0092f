"""Chunk statistics on the VWO 500 CSV, with chunks made by LangChain's own splitter as the reference.

The figures are the ones measured in the design notes: the naive newline split gives 501 chunks and no
column labels; LangFlow's "improved" labelled-and-joined split gives 481 chunks and cuts 480 of 500
records; one labelled record per chunk cuts none.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from langchain_text_splitters import CharacterTextSplitter

from flowbuilder.data import Document
from flowbuilder.evaluation.chunk_stats import ChunkStats, compute_chunk_stats, place_chunks, record_spans

CSV = Path(__file__).resolve().parents[2] / "data" / "VWO_500_Test_Cases.csv"
IMPROVED = "Scenario TID: {0}\nDescription: {1}\nPreCondition: {2}\nTest Steps: {3}\nExpected Result: {4}"


@pytest.fixture(scope="module")
def table() -> tuple[str, list[list[str]]]:
    raw = CSV.read_text(encoding="utf-8-sig")
    return raw, list(csv.reader(raw.splitlines()))


def whole_document(raw: str, rows: list[list[str]]) -> Document:
    spans = []
    offset = raw.index("\n") + 1
    for line, row in zip(raw.split("\n")[1:], rows[1:], strict=False):
        spans.append([row[0], offset, offset + len(line)])
        offset += len(line) + 1
    return Document(text=raw, metadata={"source": CSV.name, "record_spans": spans, "columns": rows[0]})


def langchain_chunks(text: str, separator: str, size: int, overlap: int) -> list[Document]:
    splitter = CharacterTextSplitter(separator=separator, chunk_size=size, chunk_overlap=overlap, add_start_index=True)
    out = []
    for doc in splitter.create_documents([text]):
        start = doc.metadata["start_index"]
        out.append(
            Document(
                text=doc.page_content,
                metadata={"source": CSV.name, "start": start, "end": start + len(doc.page_content)},
            )
        )
    return out


def test_naive_newline_split(table: tuple[str, list[list[str]]]) -> None:
    raw, rows = table
    whole = whole_document(raw, rows)
    stats = compute_chunk_stats([whole], langchain_chunks(raw, "\n", 1000, 200))
    assert stats.chunks == 501
    assert (stats.length_min, stats.length_max) == (223, 1352)
    assert stats.records == 500
    assert stats.records_cut == 0  # only because every row is longer than 1000 and stays whole
    assert stats.chunks_at_record_start == 500  # all but the header chunk
    assert stats.chunks_with_labels == 0


def test_improved_langflow_split_cuts_most_records(table: tuple[str, list[list[str]]]) -> None:
    _, rows = table
    parts, spans, offset = [], [], 0
    for row in rows[1:]:
        text = IMPROVED.format(*row)
        spans.append([row[0], offset, offset + len(text)])
        parts.append(text)
        offset += len(text) + 1
    joined = "\n".join(parts)
    doc = Document(text=joined, metadata={"source": CSV.name, "record_spans": spans, "columns": rows[0]})
    stats = compute_chunk_stats([doc], langchain_chunks(joined, "\n", 1000, 0))
    assert stats.chunks == 481
    assert stats.records_cut == 480
    assert stats.records_cut_share == pytest.approx(0.96)
    assert stats.chunks_at_record_start == 1
    assert stats.chunks_with_labels is not None and stats.chunks_with_labels >= 480


def test_one_labelled_record_per_chunk_cuts_nothing(table: tuple[str, list[list[str]]]) -> None:
    _, rows = table
    records = [
        Document(
            text=IMPROVED.format(*row),
            metadata={"source": CSV.name, "record_id": row[0], "columns": dict(zip(rows[0], row, strict=True))},
        )
        for row in rows[1:]
    ]
    chunks = [
        Document(text=r.text, metadata={**r.metadata, "start": 0, "end": len(r.text), "chunk_index": 0})
        for r in records
    ]
    stats = compute_chunk_stats(records, chunks, count_tokens=lambda t: len(t.split()), max_tokens=100)
    assert (stats.chunks, stats.records, stats.records_cut, stats.chunks_at_record_start) == (500, 500, 0, 500)
    assert stats.chunks_with_labels == 500
    assert stats.chunks_over_token_limit == sum(1 for c in chunks if len(c.text.split()) > 100)
    assert stats.chunks_over_token_limit is not None and 0 < stats.chunks_over_token_limit < 500


def test_cut_and_boundary_on_a_small_text() -> None:
    text = "  AAAA\nBBBB\nCCCC"
    doc = Document(text=text, metadata={"source": "t", "record_spans": [["a", 0, 7], ["b", 7, 11], ["c", 12, 16]]})
    assert [(s.start, s.end) for s in record_spans(doc)] == [(2, 6), (7, 11), (12, 16)]
    chunks = [
        Document(text="AAAA\nBB", metadata={"source": "t", "start": 2, "end": 9}),
        Document(text="BBBB\nCCCC", metadata={"source": "t", "start": 7, "end": 16}),
    ]
    stats = compute_chunk_stats([doc], chunks, columns=[])
    assert stats.records_cut == 0
    assert stats.chunks_at_record_start == 2
    assert stats.chunks_with_labels is None  # no columns known: not measured
    cut = compute_chunk_stats(
        [doc],
        [
            Document(text="AAAA\nBB", metadata={"source": "t", "start": 2, "end": 9}),
            Document(text="BB\nCCCC", metadata={"source": "t", "start": 9, "end": 16}),
        ],
    )
    assert cut.records_cut == 1 and cut.chunks_at_record_start == 1


def test_chunks_without_offsets_are_found_by_text() -> None:
    doc = Document(text="one two three", metadata={"source": "s"})
    placements = place_chunks([doc], [Document(text="two", metadata={"source": "s"})])
    assert [(p.start, p.end) for p in placements] == [(4, 7)]


def _stats_through_nodes(loader_mode: str, steps: list[tuple[str, dict[str, object]]]) -> ChunkStats:
    """Run loader -> steps... with the real nodes (no embedding) and measure the last step's chunks."""
    from flowbuilder.evaluation.compare import run_columns
    from flowbuilder.executor import Executor
    from flowbuilder.flow import Edge, Flow, NodeSpec

    nodes = [NodeSpec(id="loader", type="loader.file", config={"path": str(CSV), "mode": loader_mode})]
    edges = []
    previous, port = "loader", "records"
    for index, (type_name, config) in enumerate(steps):
        node_id = f"step{index}"
        nodes.append(NodeSpec(id=node_id, type=type_name, config=config))
        target_port = "records" if type_name == "labeller.row" else "documents"
        edges.append(Edge(source=previous, source_port=port, target=node_id, target_port=target_port))
        previous, port = node_id, "records" if type_name == "labeller.row" else "chunks"
    run = Executor().run(Flow(nodes=nodes, edges=edges), to=previous)
    assert run.ok, [r.error for r in run.failed()]
    feeder = "loader" if len(steps) == 1 else f"step{len(steps) - 2}"
    inputs = next(iter(run.results[feeder].outputs.values()))
    chunks = run.results[previous].outputs["chunks"]
    return compute_chunk_stats(inputs, chunks, columns=run_columns(run))


def test_known_figures_through_the_real_nodes() -> None:
    naive = _stats_through_nodes("whole", [("splitter.character", {"separator": "\n", "chunk_overlap": 200})])
    assert (naive.chunks, naive.records, naive.records_cut, naive.chunks_with_labels) == (501, 500, 0, 0)
    template = IMPROVED.format(
        *(f"{{{c}}}" for c in ("Scenario TID", "TestCase Description", "PreCondition", "TestSteps", "Expected Result"))
    )
    improved = _stats_through_nodes(
        "records",
        [
            ("labeller.row", {"template": template, "join": True}),
            ("splitter.character", {"separator": "\n", "chunk_size": 1000, "chunk_overlap": 0}),
        ],
    )
    assert (improved.chunks, improved.records_cut, improved.chunks_at_record_start) == (481, 480, 1)
    rows = _stats_through_nodes("records", [("labeller.row", {"template": template}), ("splitter.record", {})])
    assert (rows.chunks, rows.records_cut, rows.chunks_at_record_start, rows.chunks_with_labels) == (500, 0, 500, 500)
