"""The seven chunking strategies of the chunking lab: exact offsets, nothing lost, heading paths, and
what makes each one different (fixed windows, whole sentences, semantic cuts with reasons, markdown
blocks kept whole, parent-child metadata)."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from flowbuilder.data import Document
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.embedders.local import LocalEmbedder
from flowbuilder.nodes.parent_child import ParentChildSplitter, ParentChildSplitterConfig
from flowbuilder.nodes.sentence_splitters import (
    SemanticSplitter,
    SemanticSplitterConfig,
    SentenceSplitter,
    SentenceSplitterConfig,
)
from flowbuilder.nodes.splitters import (
    FixedSplitter,
    FixedSplitterConfig,
    MarkdownSplitter,
    MarkdownSplitterConfig,
    RecursiveSplitter,
    RecursiveSplitterConfig,
)
from flowbuilder.nodes.splitting.blocks import heading_label, parse_blocks

DOCS = Path(__file__).resolve().parents[2] / "data" / "docs"


@functools.cache
def _embedder() -> LocalEmbedder:
    # the test sandbox's data dir: sentences embedded by one test are not embedded again by the next
    return LocalEmbedder(cache_dir=Path(os.environ["FLOWBUILDER_DATA_DIR"]))


def _docs() -> list[Document]:
    return [
        Document(text=p.read_text(encoding="utf-8"), metadata={"source": p.name, "record_id": p.name})
        for p in sorted(DOCS.glob("*.md"))
    ]


STRATEGIES: dict[str, tuple[type[Node[Any]], BaseModel]] = {
    "fixed300": (FixedSplitter, FixedSplitterConfig(chunk_size=300)),
    "fixed300_overlap": (FixedSplitter, FixedSplitterConfig(chunk_size=300, chunk_overlap=60)),
    "recursive": (RecursiveSplitter, RecursiveSplitterConfig(chunk_size=400, chunk_overlap=50)),
    "sentence": (SentenceSplitter, SentenceSplitterConfig(chunk_size=400)),
    "semantic": (SemanticSplitter, SemanticSplitterConfig()),
    "markdown": (MarkdownSplitter, MarkdownSplitterConfig(chunk_size=600)),
    "parent_child": (ParentChildSplitter, ParentChildSplitterConfig(child_size=250, child_overlap=40)),
}


def _split(name: str, documents: list[Document], ctx: RunContext | None = None) -> list[Document]:
    node_class, config = STRATEGIES[name]
    inputs: dict[str, Any] = {"documents": documents}
    if node_class is SemanticSplitter:
        inputs["embedder"] = _embedder()
    chunks: list[Document] = node_class(config).run(inputs, ctx or RunContext(name))["chunks"]
    return chunks


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_offsets_slice_the_source_exactly_and_nothing_is_lost(name: str) -> None:
    documents = _docs()[:2] if name == "semantic" else _docs()  # two pages keep the sentence embedding quick
    chunks = _split(name, documents)
    by_source = {d.metadata["source"]: d.text for d in documents}
    covered = {source: bytearray(len(text)) for source, text in by_source.items()}
    for chunk in chunks:
        source, start, end = chunk.metadata["source"], chunk.metadata["start"], chunk.metadata["end"]
        body = by_source[source][start:end]
        if name == "markdown" and chunk.metadata["heading_path"]:
            assert chunk.text == chunk.metadata["heading_path"] + "\n\n" + body
        else:
            assert chunk.text == body
        assert chunk.metadata["record_id"] == source
        assert "heading_path" in chunk.metadata, "chunks of a markdown file carry their heading path"
        covered[source][start:end] = b"\x01" * (end - start)
    if name in ("markdown", "parent_child"):  # section headings travel in the heading path instead
        paths = " > ".join(c.metadata["heading_path"] for c in chunks)
        for source, text in by_source.items():
            for block in parse_blocks(text):
                if block.kind == "heading" and heading_label(block) in paths:
                    covered[source][block.start : block.end] = b"\x01" * (block.end - block.start)
    for source, text in by_source.items():
        lost = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[source][i]]
        assert not lost, f"{name} lost {text[lost[0] : lost[0] + 40]!r} of {source}"
    for source in by_source:
        indexes = [c.metadata["chunk_index"] for c in chunks if c.metadata["source"] == source]
        assert indexes == list(range(len(indexes)))


def test_fixed_windows_cut_anywhere_and_overlap_exactly() -> None:
    text = "abcdefghij" * 10
    chunks = FixedSplitter(FixedSplitterConfig(chunk_size=30, chunk_overlap=10)).run(
        {"documents": [Document(text=text)]}, RunContext("f")
    )["chunks"]
    assert [(c.metadata["start"], c.metadata["end"]) for c in chunks] == [
        (0, 30),
        (20, 50),
        (40, 70),
        (60, 90),
        (80, 100),
    ]
    assert all(text[c.metadata["start"] : c.metadata["end"]] == c.text for c in chunks)
    with pytest.raises(ValidationError, match="smaller than chunk_size"):
        FixedSplitterConfig(chunk_size=100, chunk_overlap=100)


def test_fixed_300_cuts_facts_that_structure_aware_chunkers_keep_whole() -> None:
    text = (DOCS / "security.md").read_text(encoding="utf-8")
    fact = "ten recovery codes"
    for name, whole in [("fixed300", False), ("sentence", True), ("markdown", True), ("semantic", True)]:
        chunks = _split(name, [Document(text=text, metadata={"source": "security.md", "record_id": "security.md"})])
        assert any(fact in c.text for c in chunks) is whole, name


SENTENCES = """# Notes

Dr. Smith signed off at 3 p.m. on the release, e.g. version 1.2.3 of the client. The next step is review.

| Code | Meaning |
|---|---|
| A1. | First. Second. |
| B2. | Third. |

```python
x = 1. ; y = 2.
print("a. b. c.")
```

Short one. Another short one.
"""


def test_sentence_splitter_keeps_abbreviations_tables_and_code_whole() -> None:
    chunks = SentenceSplitter(SentenceSplitterConfig(chunk_size=60)).run(
        {"documents": [Document(text=SENTENCES, metadata={"source": "n.md"})]}, RunContext("s")
    )["chunks"]
    texts = [c.text for c in chunks]
    assert any(
        t.startswith("# Notes\n\nDr. Smith signed off at 3 p.m. on the release, e.g. version 1.2.3") for t in texts
    )
    table = SENTENCES[SENTENCES.index("| Code") : SENTENCES.index("| Third. |") + len("| Third. |")]
    code = SENTENCES[SENTENCES.index("```python") : SENTENCES.index('c.")\n```') + len('c.")\n```')]
    assert table in texts  # one unit: never sentence-split, and too big to share a 60-character chunk
    assert code + "\n\nShort one." in texts  # whole, with the sentence after it while that fits
    assert texts[1:2] == ["The next step is review."] and texts[-1] == "Another short one."
    assert all(c.metadata["heading_path"] == "# Notes" for c in chunks)


def test_sentence_overlap_repeats_the_last_sentence() -> None:
    text = "One is here. Two is here. Three is here. Four is here."
    chunks = SentenceSplitter(SentenceSplitterConfig(chunk_size=30, overlap_sentences=1)).run(
        {"documents": [Document(text=text)]}, RunContext("s")
    )["chunks"]
    assert [c.text for c in chunks] == [
        "One is here. Two is here.",
        "Two is here. Three is here.",
        "Three is here. Four is here.",
    ]


TOPICS = (
    "Cats are small furry pets. Cats purr when they are happy. Kittens like to play with yarn. "
    "A cat sleeps most of the day. "
    "The invoice is due at the end of the month. Late payments incur a fee. Refunds take five business days. "
    "Billing questions go to the accounts team."
)


def test_semantic_cuts_where_the_topic_changes_and_says_why() -> None:
    ctx = RunContext("sem")
    node = SemanticSplitter(SemanticSplitterConfig(breakpoint="percentile", percentile=15, min_chunk_size=50))
    chunks = node.run(
        {"documents": [Document(text=TOPICS, metadata={"source": "t.txt"})], "embedder": _embedder()}, ctx
    )["chunks"]
    assert [c.text.split(".")[0] for c in chunks] == [
        "Cats are small furry pets",
        "The invoice is due at the end of the month",
    ]
    assert chunks[0].metadata["cut_reason"] == "start of document"
    assert chunks[1].metadata["cut_reason"].startswith("similarity ")
    assert chunks[1].metadata["cut_similarity"] < 0.3
    assert ctx.details["cuts"] == [
        {"source": "t.txt", "offset": TOPICS.index("The invoice"), "reason": chunks[1].metadata["cut_reason"]}
    ]
    assert "15th percentile" in ctx.details["breakpoint"]


def test_semantic_threshold_and_size_limit() -> None:
    document = Document(text=TOPICS)
    never = SemanticSplitter(SemanticSplitterConfig(breakpoint="threshold", threshold=-1, max_chunk_size=10_000))
    assert len(never.run({"documents": [document], "embedder": _embedder()}, RunContext("s"))["chunks"]) == 1
    sized = SemanticSplitter(
        SemanticSplitterConfig(breakpoint="threshold", threshold=-1, min_chunk_size=0, max_chunk_size=120)
    )
    chunks = sized.run({"documents": [document], "embedder": _embedder()}, RunContext("s"))["chunks"]
    assert len(chunks) > 2 and all(len(c.text) <= 120 for c in chunks)
    assert all(c.metadata["cut_reason"].startswith("max_chunk_size 120") for c in chunks[1:])
    with pytest.raises(ValidationError, match="min_chunk_size"):
        SemanticSplitterConfig(min_chunk_size=500, max_chunk_size=100)


def test_semantic_without_embedder_is_a_clear_error() -> None:
    from flowbuilder.portvalues import port_value_problems

    problems = port_value_problems(SemanticSplitter.inputs, "input", {"documents": [Document(text=TOPICS)]})
    assert problems == [
        "required input 'embedder' expects embedder (an Embedder: count_tokens, dimension, "
        "embed_documents, embed_query, max_tokens, model_id), got nothing"
    ]


GUIDE = (
    """Guide
=====

Setup
-----

Install it with:

```bash
pip install tool
"""
    + "\n".join(f"echo step {i}" for i in range(40))
    + """
```

That installs the tool and its plugins.

Another paragraph that can go elsewhere.

## Limits

| Plan | Limit |
|---|---|
"""
    + "\n".join(f"| plan{i} | {i * 10} |" for i in range(30))
    + "\n"
)


def test_markdown_keeps_code_and_tables_whole_with_intro_and_follow_up() -> None:
    ctx = RunContext("md")
    chunks = MarkdownSplitter(MarkdownSplitterConfig(chunk_size=200)).run(
        {"documents": [Document(text=GUIDE, metadata={"source": "g.md"})]}, ctx
    )["chunks"]
    code_chunk = next(c for c in chunks if "echo step 0" in c.text)
    assert "echo step 39\n```" in code_chunk.text  # the fence is never cut, even past the size
    assert code_chunk.metadata["heading_path"] == "# Guide > ## Setup"  # setext headings are headings
    table_chunk = next(c for c in chunks if "plan0" in c.text)
    assert "| plan29 | 290 |" in table_chunk.text and table_chunk.text.startswith("# Guide > ## Limits\n\n| Plan")
    assert ctx.details["oversize_blocks"] == 2
    small = GUIDE.replace("\n".join(f"echo step {i}" for i in range(40)), "echo hi")
    chunks = MarkdownSplitter(MarkdownSplitterConfig(chunk_size=200)).run(
        {"documents": [Document(text=small)]}, RunContext("m")
    )["chunks"]
    together = next(c for c in chunks if "echo hi" in c.text)
    assert "Install it with:" in together.text and "That installs the tool and its plugins." in together.text


def test_blocks_recognise_setext_atx_fences_and_tables() -> None:
    kinds = [(b.kind, b.level, b.title) for b in parse_blocks(GUIDE)][:5]
    assert kinds == [
        ("heading", 1, "Guide"),
        ("heading", 2, "Setup"),
        ("text", 0, ""),
        ("code", 0, ""),
        ("text", 0, ""),
    ]
    assert [b.kind for b in parse_blocks("a\n\n---\n\n| x |\n|---|\n")] == ["text", "text", "table"]


def test_parent_child_children_carry_their_parent() -> None:
    documents = _docs()
    chunks = _split("parent_child", documents)
    by_source = {d.metadata["source"]: d.text for d in documents}
    parents: dict[str, str] = {}
    for chunk in chunks:
        meta = chunk.metadata
        assert meta["view"] == "child"
        assert chunk.text in meta["parent_text"]
        assert meta["parent_start"] <= meta["start"] < meta["end"] <= meta["parent_end"]
        body = by_source[meta["source"]][meta["parent_start"] : meta["parent_end"]]
        assert meta["parent_text"].endswith(body) and meta["parent_text"].startswith(meta["heading_path"])
        assert parents.setdefault(meta["parent_id"], meta["parent_text"]) == meta["parent_text"]
    assert len(parents) < len(chunks)
    assert all(pid.split("#parent")[0].endswith(".md") for pid in parents)
    assert [c.metadata["parent_id"] for c in _split("parent_child", documents)] == [
        c.metadata["parent_id"] for c in chunks
    ]
    with pytest.raises(ValidationError, match="child_size"):
        ParentChildSplitterConfig(parent_size=200, child_size=300)


def test_unknown_sentence_language_lists_the_supported_ones() -> None:
    with pytest.raises(ValidationError, match="no sentence rules for 'xx'; use one of: am, ar"):
        SentenceSplitterConfig(language="xx")
    with pytest.raises(ValidationError, match="no sentence rules"):
        SemanticSplitterConfig(language="klingon")
    assert SentenceSplitterConfig(language="de").language == "de"
