"""Splitters: chunk-for-chunk equality with LangChain, exact offsets, record tracing, and the known
naive / improved / per-record figures on the VWO test-case CSV run through the real executor."""

from __future__ import annotations

import csv
import functools
import io
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter
from pypdf import PdfReader

from flowbuilder.data import Document
from flowbuilder.errors import FlowValidationError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import EmptyConfig, RunContext
from flowbuilder.nodes.parent_child import ParentChildSplitter, ParentChildSplitterConfig
from flowbuilder.nodes.splitters import (
    CharacterSplitter,
    CharacterSplitterConfig,
    MarkdownSplitter,
    MarkdownSplitterConfig,
    RecordSplitter,
    RecursiveSplitter,
    RecursiveSplitterConfig,
)
from flowbuilder.nodes.splitting.textsplit import split_character, split_recursive, unescape_separator
from flowbuilder.portvalues import port_value_problems

ROOT = Path(__file__).resolve().parents[2]
CSV_PATH = ROOT / "data" / "VWO_500_Test_Cases.csv"
PDF_PATH = ROOT / "data" / "VWO_Login_Dashboard_PRD.pdf"

# the Parser pattern of LangFlow's "AI 3X Naive RAG Improve Chunk" flow, copied verbatim
IMPROVED_TEMPLATE = (
    "Scenario TID: {Scenario TID}\nDescription: {TestCase Description}\nPreCondition: {PreCondition}\n"
    "Test Steps: {TestSteps}\nExpected Result: {Expected Result}"
)

SIZES = [(1000, 200), (500, 50), (200, 0), (1200, 200)]

logging.getLogger("langchain_text_splitters").setLevel(logging.ERROR)  # its per-chunk size warnings


@functools.cache
def _csv_text() -> str:
    return CSV_PATH.read_text(encoding="utf-8-sig")


@functools.cache
def _pdf_text() -> str:
    return "\n\n".join(page.extract_text() for page in PdfReader(str(PDF_PATH)).pages)


def _csv_rows() -> list[str]:
    return _csv_text().split("\n")[1:-1]  # the file has no quoted newlines: one line per row


_rng = random.Random(7)
EDGE_TEXTS = {
    "empty": "",
    "blank": "  \n\n \t ",
    "one-char": "a",
    "blank-lines": "a\n\n\n\nb\n\n\n\n\nc\n",
    "no-separators": "x" * 2500,
    "padded": "   lead and trail   \n\n   next para  \n",
    "repetitive": "aaaa aaaa aaaa aaaa " * 150,
    "random": "".join(_rng.choice("ab \n") for _ in range(4000)),
    "unicode": "Ünïcödé — ✓ 漢字 " * 120 + "\n\n" + "emoji 🙂 " * 80,
}


def _recursive_texts() -> list[tuple[str, str]]:
    texts = [("csv-raw", _csv_text()), ("pdf", _pdf_text())]
    return texts + list(EDGE_TEXTS.items())


@pytest.mark.parametrize(("size", "overlap"), SIZES)
@pytest.mark.parametrize("keep", [True, False, "end"])
def test_recursive_equals_langchain(size: int, overlap: int, keep: Any) -> None:
    for name, text in _recursive_texts():
        expected = RecursiveCharacterTextSplitter(
            chunk_size=size, chunk_overlap=overlap, keep_separator=keep
        ).split_text(text)
        got = [c.text for c in split_recursive(text, size, overlap, keep_separator=keep)]
        assert got == expected, f"{name} {size}/{overlap} keep={keep}"


@pytest.mark.parametrize(("size", "overlap"), SIZES)
def test_recursive_equals_langchain_per_row(size: int, overlap: int) -> None:
    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    for row in _csv_rows():
        assert [c.text for c in split_recursive(row, size, overlap)] == splitter.split_text(row)


@pytest.mark.parametrize("separators", [["\n"], [" ", ""], ["|", "\n\n", "."], ["LOGIN", ","]])
def test_recursive_custom_separators_equal_langchain(separators: list[str]) -> None:
    for name, text in [("csv", _csv_text()[:60000]), ("pdf", _pdf_text()), *EDGE_TEXTS.items()]:
        for size, overlap in [(300, 30), (1000, 0)]:
            for keep in (True, False):
                expected = RecursiveCharacterTextSplitter(
                    chunk_size=size, chunk_overlap=overlap, separators=separators, keep_separator=keep
                ).split_text(text)
                got = [c.text for c in split_recursive(text, size, overlap, separators, keep)]
                assert got == expected, f"{name} {separators} {size}/{overlap} keep={keep}"


@pytest.mark.parametrize(
    ("size", "overlap", "separator", "keep"),
    [
        (1000, 200, "\n", False),
        (1000, 0, "\n", False),
        (500, 50, "\n", "start"),
        (1200, 200, "\n", "end"),
        (1000, 200, "\n\n", False),
        (200, 0, "\n\n", "end"),
        (200, 0, " ", False),
        (500, 50, " ", "start"),
        (1000, 200, ". ", "end"),
        (200, 0, "", False),
        (50, 10, "", "start"),
    ],
)
def test_character_equals_langchain(size: int, overlap: int, separator: str, keep: Any) -> None:
    texts = [("csv", _csv_text()), ("pdf", _pdf_text()), *EDGE_TEXTS.items()]
    if separator == "":
        texts = [(n, t[:20000]) for n, t in texts]  # one piece per character: keep LangChain's side quick
    for name, text in texts:
        expected = CharacterTextSplitter(
            separator=separator, chunk_size=size, chunk_overlap=overlap, keep_separator=keep
        ).split_text(text)
        got = [c.text for c in split_character(text, separator, size, overlap, keep)]
        assert got == expected, f"{name} sep={separator!r} {size}/{overlap} keep={keep}"


@pytest.mark.parametrize(("name", "text"), [("csv", None), ("pdf", None)])
def test_offsets_match_langchain_start_index_and_slice_exactly(name: str, text: str | None) -> None:
    text = _csv_text() if name == "csv" else _pdf_text()
    for size, overlap in SIZES:
        ours = split_recursive(text, size, overlap)
        theirs = RecursiveCharacterTextSplitter(
            chunk_size=size, chunk_overlap=overlap, add_start_index=True
        ).create_documents([text])
        assert [c.start for c in ours] == [d.metadata["start_index"] for d in theirs]
        for chunk in ours:
            assert text[chunk.start : chunk.end] == chunk.text
        if name == "csv":  # (the PDF text has blank lines: LangChain joins "a\n\nb" pieces as "a\nb")
            for chunk in split_character(text, "\n", size, overlap):
                assert text[chunk.start : chunk.end] == chunk.text


def test_offsets_stay_exact_on_repetitive_text() -> None:
    text = "ab " * 400
    for chunk in split_recursive(text, 50, 10):
        assert text[chunk.start : chunk.end] == chunk.text
    # LangChain drops the empty pieces between doubled separators, so the chunk is no substring;
    # the offsets still span exactly the region it was made from
    text = "alpha\n\n\nbeta\n\n\ngamma"
    (chunk,) = split_character(text, "\n", 100, 0)
    assert chunk.text == "alpha\nbeta\ngamma"
    assert (chunk.start, chunk.end) == (0, len(text))


def test_unescape_separator_like_langflow() -> None:
    assert unescape_separator("\\n") == "\n"
    assert unescape_separator("\\n\\n") == "\n\n"
    assert unescape_separator("/n") == "\n"
    assert unescape_separator("/t") == "\t"
    assert unescape_separator(". ") == ". "


def _ctx() -> RunContext:
    return RunContext("splitter")


def test_chunks_keep_metadata_and_add_offsets() -> None:
    record = Document(text="one two three four five six", metadata={"source": "f.csv", "row": 3, "record_id": "R3"})
    node = RecursiveSplitter(RecursiveSplitterConfig(chunk_size=10, chunk_overlap=0))
    chunks = node.run({"documents": [record]}, _ctx())["chunks"]
    assert [c.text for c in chunks] == ["one two", "three", "four five", "six"]
    assert [c.metadata["chunk_index"] for c in chunks] == [0, 1, 2, 3]
    for chunk in chunks:
        assert chunk.metadata["record_id"] == "R3" and chunk.metadata["row"] == 3
        assert record.text[chunk.metadata["start"] : chunk.metadata["end"]] == chunk.text
        assert "record_ids" not in chunk.metadata
    assert node.summarize({"chunks": chunks}) == "4 chunks"


def test_record_ids_name_every_overlapped_record() -> None:
    parts = ["alpha beta", "gamma delta epsilon", "zeta", "eta theta iota kappa"]
    text = "\n".join(parts)
    spans, position = [], 0
    for i, part in enumerate(parts):
        spans.append([f"R{i}", position, position + len(part)])
        position += len(part) + 1
    document = Document(text=text, metadata={"source": "x", "record_spans": spans})
    node = CharacterSplitter(CharacterSplitterConfig(separator=" ", chunk_size=12, chunk_overlap=0))
    chunks = node.run({"documents": [document]}, _ctx())["chunks"]
    assert chunks
    for chunk in chunks:
        start, end = chunk.metadata["start"], chunk.metadata["end"]
        brute = [rid for rid, s, e in spans if s < end and e > start]
        assert chunk.metadata["record_ids"] == brute
        assert "record_spans" not in chunk.metadata
    expected = [["R0"], ["R0", "R1"], ["R1"], ["R1", "R2", "R3"], ["R3"], ["R3"]]
    assert [c.metadata["record_ids"] for c in chunks] == expected


def test_overlap_larger_than_size_is_a_config_problem() -> None:
    assert CharacterSplitter.config_problems(CharacterSplitterConfig(chunk_size=100, chunk_overlap=200))
    assert not RecursiveSplitter.config_problems(RecursiveSplitterConfig(chunk_size=100, chunk_overlap=100))
    flow = Flow(
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(CSV_PATH)}),
            NodeSpec(id="split", type="splitter.recursive", config={"chunk_size": 100, "chunk_overlap": 200}),
        ],
        edges=[Edge(source="load", source_port="records", target="split", target_port="documents")],
    )
    with pytest.raises(FlowValidationError, match="chunk_overlap"):
        Executor().run(flow)


def test_wrong_input_type_is_named_by_the_port_check() -> None:
    # the executor refuses it before run (tests/core/test_port_values.py runs one through a flow)
    problems = port_value_problems(RecordSplitter.inputs, "input", {"documents": "just text"})
    assert problems == ["input 'documents' expects records (a list of Documents), got str"]


# ---------------------------------------------------------------- the known figures, through the executor


def _run(flow: Flow) -> dict[str, Any]:
    result = Executor().run(flow, use_cache=False)
    assert result.ok, [r.error for r in result.failed()]
    return result.results


def _cut_records(document_spans: list[list[Any]], chunks: list[Document]) -> set[str]:
    """Records that no chunk contains whole."""
    whole: set[str] = set()
    ranges = sorted((c.metadata["start"], c.metadata["end"]) for c in chunks)
    for record_id, start, end in document_spans:
        if any(s <= start and end <= e for s, e in ranges):
            whole.add(record_id)
    return {r for r, _, _ in document_spans} - whole


def test_naive_whole_csv_gives_501_chunks_and_a_lonely_header() -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(CSV_PATH), "mode": "whole"}),
            NodeSpec(
                id="split",
                type="splitter.character",
                config={"separator": "\\n", "chunk_size": 1000, "chunk_overlap": 200},
            ),
        ],
        edges=[Edge(source="load", source_port="records", target="split", target_port="documents")],
    )
    results = _run(flow)
    chunks = results["split"].outputs["chunks"]
    assert results["split"].summary == "501 chunks"
    assert len(chunks) == 501
    header = _csv_text().split("\n")[0]
    assert chunks[0].text == header
    assert chunks[0].metadata["record_ids"] == []
    labels = next(csv.reader(io.StringIO(header)))
    for chunk in chunks[1:]:
        assert not any(f'"{label}"' in chunk.text for label in labels)
        assert len(chunk.metadata["record_ids"]) == 1
    # LangChain via LangFlow's Split Text on the same text gives the same chunks
    expected = CharacterTextSplitter(separator="\n", chunk_size=1000, chunk_overlap=200).split_text(_csv_text())
    assert [c.text for c in chunks] == expected


def _improved_flow(splitter: NodeSpec) -> Flow:
    return Flow(
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(CSV_PATH)}),
            NodeSpec(id="label", type="labeller.row", config={"template": IMPROVED_TEMPLATE, "join": True}),
            splitter,
        ],
        edges=[
            Edge(source="load", source_port="records", target="label", target_port="records"),
            Edge(source="label", source_port="records", target=splitter.id, target_port="documents"),
        ],
    )


def test_improved_labelled_join_gives_481_chunks_cutting_480_records() -> None:
    splitter = NodeSpec(
        id="split", type="splitter.character", config={"separator": "\n", "chunk_size": 1000, "chunk_overlap": 0}
    )
    results = _run(_improved_flow(splitter))
    (joined,) = results["label"].outputs["records"]
    chunks = results["split"].outputs["chunks"]
    assert results["split"].summary == "481 chunks"
    spans = joined.metadata["record_spans"]
    assert len(spans) == 500
    starts = {start for _, start, _ in spans}
    assert sum(1 for c in chunks if c.metadata["start"] in starts) == 1
    assert len(_cut_records(spans, chunks)) == 480
    expected = CharacterTextSplitter(separator="\n", chunk_size=1000, chunk_overlap=0).split_text(joined.text)
    assert [c.text for c in chunks] == expected
    assert chunks[0].text.startswith("Scenario TID: LOGIN-001\nDescription: Verify Login - page load\n")


def test_one_record_per_chunk_cuts_none() -> None:
    results = _run(_improved_flow(NodeSpec(id="split", type="splitter.record")))
    (joined,) = results["label"].outputs["records"]
    chunks = results["split"].outputs["chunks"]
    assert len(chunks) == 500 and results["split"].summary == "500 chunks"
    assert _cut_records(joined.metadata["record_spans"], chunks) == set()
    assert chunks[0].metadata["record_id"] == "LOGIN-001"
    assert chunks[0].metadata["record_ids"] == ["LOGIN-001"]
    assert chunks[0].text.startswith("Scenario TID: LOGIN-001\n")


def test_record_splitter_passes_single_records_through() -> None:
    records = [
        Document(text="first", metadata={"record_id": "A"}),
        Document(text="   ", metadata={"record_id": "B"}),
        Document(text="third", metadata={"record_id": "C"}),
    ]
    chunks = RecordSplitter(EmptyConfig()).run({"documents": records}, _ctx())["chunks"]
    assert [(c.text, c.metadata["record_id"], c.metadata["start"], c.metadata["end"]) for c in chunks] == [
        ("first", "A", 0, 5),
        ("third", "C", 0, 5),
    ]


# ---------------------------------------------------------------- markdown


GUIDE = """Intro before any heading.

# Guide

Welcome text.

## Login

Enter your email.

```bash
# not a heading inside code
login --user me
```

### Errors

Wrong password shows an error.

#### Deep detail

Stays in the Errors section.

## Dashboard

Charts and reports.
"""


def test_markdown_splits_on_headings_with_paths() -> None:
    node = MarkdownSplitter(MarkdownSplitterConfig(chunk_size=1000, max_heading_level=3))
    chunks = node.run({"documents": [Document(text=GUIDE, metadata={"source": "guide.md"})]}, _ctx())["chunks"]
    paths = [c.metadata["heading_path"] for c in chunks]
    assert paths == ["", "# Guide", "# Guide > ## Login", "# Guide > ## Login > ### Errors", "# Guide > ## Dashboard"]
    assert chunks[0].text == "Intro before any heading."
    assert chunks[2].text.startswith("# Guide > ## Login\n\nEnter your email.")
    assert "# not a heading inside code" in chunks[2].text
    assert "#### Deep detail" in chunks[3].text
    for chunk in chunks:
        body = GUIDE[chunk.metadata["start"] : chunk.metadata["end"]]
        assert chunk.text.endswith(body) and chunk.metadata["source"] == "guide.md"
    assert [c.metadata["chunk_index"] for c in chunks] == list(range(5))


COOKIES = (
    "### Response\n\nThe base class.\n\n#### Set Cookie\n\nSets a cookie on the response.\n\n"
    + "\n".join(f"* `option_{i}` - what option {i} does to the cookie, and its default." for i in range(12))
    + "\n\n#### Delete Cookie\n\nClears a cookie."
)


def test_a_chunk_cut_from_a_deeper_heading_carries_that_heading() -> None:
    # The list under "#### Set Cookie" spills into a second chunk: the heading is the only place that says
    # what the list is about, so the chunk's path names it. A chunk that starts with a heading shows it once.
    node = MarkdownSplitter(MarkdownSplitterConfig(chunk_size=450, chunk_overlap=0, max_heading_level=3))
    chunks = node.run({"documents": [Document(text=COOKIES, metadata={"source": "r.md"})]}, _ctx())["chunks"]
    paths = [c.metadata["heading_path"] for c in chunks]
    assert "### Response > #### Set Cookie" in paths
    spilled = chunks[paths.index("### Response > #### Set Cookie")]
    assert spilled.text.startswith("### Response > #### Set Cookie\n\n* `option_")
    starts_with_heading = [c for c in chunks if COOKIES[c.metadata["start"] :].startswith("####")]
    assert starts_with_heading and all(c.metadata["heading_path"] == "### Response" for c in starts_with_heading)
    assert all(len(c.text) <= 450 for c in chunks)
    config = ParentChildSplitterConfig(parent_size=450, child_size=200, child_overlap=0)
    children = ParentChildSplitter(config).run(
        {"documents": [Document(text=COOKIES, metadata={"source": "r.md"})]}, _ctx()
    )["chunks"]
    parent_texts = {c.metadata["parent_text"] for c in children}
    assert any(t.startswith("### Response > #### Set Cookie\n\n* `option_") for t in parent_texts)


def test_markdown_level_and_size_bound() -> None:
    node = MarkdownSplitter(MarkdownSplitterConfig(chunk_size=1000, max_heading_level=1))
    chunks = node.run({"documents": [Document(text=GUIDE)]}, _ctx())["chunks"]
    assert [c.metadata["heading_path"] for c in chunks] == ["", "# Guide"]
    long_section = "# Big\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 40 for i in range(30))
    node = MarkdownSplitter(MarkdownSplitterConfig(chunk_size=300, chunk_overlap=0))
    chunks = node.run({"documents": [Document(text=long_section)]}, _ctx())["chunks"]
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 300
        assert chunk.text.startswith("# Big\n\n")
