"""Readable PDF text (layout extraction + repairs) and the RAG Explorer's window splitter."""

from __future__ import annotations

from pathlib import Path

from flowbuilder.executor import Executor
from flowbuilder.flow import Flow
from flowbuilder.nodes.loaders import _pdf_pages
from flowbuilder.nodes.pdf_text import clean_pages
from flowbuilder.nodes.splitters import split_window

PRD = Path(__file__).resolve().parents[2] / "data" / "VWO_Login_Dashboard_PRD.pdf"


def words_per_line(text: str) -> float:
    lines = [line for line in text.splitlines() if line.strip()]
    return sum(len(line.split()) for line in lines) / len(lines)


def test_prd_reads_in_lines_not_one_word_per_line() -> None:
    plain, layout = _pdf_pages(PRD, "plain"), _pdf_pages(PRD)
    assert len(plain) == len(layout) == 7
    assert words_per_line("\n".join(plain)) < 2  # pypdf's plain mode: one word per line
    assert words_per_line("\n".join(layout)) > 5
    text = "\n".join(layout)
    assert "Existing Features\n\n   ● Clean Interface Design: Modern, minimalist login form" in text
    assert "\ufb01" not in text and "input fields" in text  # the ﬁ ligature folded
    assert "  " not in text.replace("\n   ", "\n")  # no column padding left inside lines


def test_running_headers_footers_page_numbers_and_hyphenation() -> None:
    topics = ["billing", "exports", "security", "sharing"]
    pages = [
        f"ACME Handbook — confidential\n\nSection {n}: {topic}\nThe {topic} rules are long enough to be a body line "
        f"with a connec-\ntion at the line end.\nMore about {topic} here.\n\nPage {n} of 4"
        for n, topic in enumerate(topics, start=1)
    ]
    cleaned = clean_pages(pages)
    for n, page in enumerate(cleaned, start=1):
        assert "ACME Handbook" not in page and f"Page {n} of 4" not in page
        assert page.startswith(f"Section {n}: ") and "connection at the line end." in page
    # too few pages to call a line "running": kept; a number inside the body stays
    two = clean_pages(["Title line\nBody 12 apples here\nmore body\nand more\nlast body line", "Title line\nOther"])
    assert two[0].startswith("Title line") and "Body 12 apples" in two[0]


def test_loader_keeps_page_numbers_in_metadata(tmp_path: Path) -> None:
    flow = Flow.model_validate(
        {"name": "pdf", "nodes": [{"id": "loader", "type": "loader.file", "config": {"path": str(PRD)}}], "edges": []}
    )
    run = Executor(data_dir=tmp_path).run(flow)
    records = run.results["loader"].outputs["records"]
    assert [r.metadata["page"] for r in records] == list(range(1, 8))
    assert records[1].text.startswith("Existing Features")


def test_window_splitter_cuts_at_paragraph_then_sentence_then_space() -> None:
    paragraph = "Alpha beta gamma. " * 50  # 900 chars of sentences
    text = paragraph + "\n\n" + paragraph + "\n\n" + paragraph
    chunks = split_window(text, 1200, 200)
    assert all(len(c.text) <= 1200 for c in chunks)
    assert chunks[0].end == len(paragraph.rstrip())  # the paragraph break (900) lies in 840..1200
    sentences = split_window("Word " * 100 + "end. " + "word " * 400, 600, 100)
    assert sentences[0].text.endswith("end.")  # no paragraph break: the sentence end in the last 30%
    spaces = split_window("word " * 400, 600, 100)
    assert all(c.text.split()[-1] == "word" and c.text[0] != " " for c in spaces)  # never mid-word
    assert spaces[1].start < spaces[0].end  # the windows overlap
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert all(i in covered for i, char in enumerate(text) if not char.isspace())  # nothing lost
    assert split_window("x" * 1000, 300, 50)[0].text == "x" * 300  # no break at all: a hard cut
