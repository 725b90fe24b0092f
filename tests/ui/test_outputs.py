"""The output inspector's and chat panel's text helpers (pure functions, no page)."""

from __future__ import annotations

from flowbuilder.data import Document, Hit
from flowbuilder.streaming import StreamedSample
from flowbuilder.ui.outputs import _short, documents_heading, documents_table
from flowbuilder.ui.widgets import FULL_TEXT_CHARS, failure_text, hit_where


def test_failure_text_drops_the_node_lead_only() -> None:
    error = "Node 'llm' (llm.ollama) failed: Ollama: cannot reach the server. Start it."
    assert failure_text("llm", error) == "Ollama: cannot reach the server. Start it."
    assert failure_text("other", error) == error  # a different node's message is left whole
    assert failure_text("llm", "plain message") == "plain message"


def test_short_values_inline_and_long_ones_in_a_block() -> None:
    assert _short("llama3.2") == "llama3.2"
    assert _short("two\nlines") is None
    assert _short("x" * 500) is None
    assert _short([0.54881, 0.5]) == "[0.549, 0.500]"
    assert _short({"a": 1}) is None
    assert _short(3) == "3"


def test_documents_table_orders_trace_columns_and_keeps_long_text_bounded() -> None:
    docs = [
        Document(
            text="y" * (FULL_TEXT_CHARS + 50),
            metadata={"source": "a.csv", "record_id": "R1", "columns": {"k": "v"}, "start": 0, "end": 9},
        )
    ]
    columns, rows = documents_table(docs)
    names = [c["name"] for c in columns]
    assert names[:4] == ["i", "record_id", "text", "length"]
    assert names.index("start") < names.index("end") < names.index("source") < names.index("columns")
    assert rows[0]["length"] == FULL_TEXT_CHARS + 50
    assert len(rows[0]["text"]) == FULL_TEXT_CHARS + 2 and rows[0]["text"].endswith(" …")
    assert rows[0]["columns"] == '{"k": "v"}'


def test_hit_where_names_record_source_and_chunk() -> None:
    doc = Document(text="t", metadata={"source": "cases.csv", "record_ids": ["A", "B"], "chunk_index": 2})
    assert hit_where(Hit(document=doc, score=0.5, rank=1)) == ("A, B", "cases.csv · chunk 2")


def test_a_streamed_output_says_it_keeps_only_the_first_documents() -> None:
    docs = [Document(text="abc"), Document(text="abcde")]
    assert documents_heading("records", docs) == "records: 2 documents · chars min 3 / avg 4 / max 5"
    streamed = documents_heading("records", StreamedSample.of(docs, 100_000))
    assert streamed.startswith("records: 100000 documents, streamed: the first 2 are kept")
