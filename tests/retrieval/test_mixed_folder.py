"""The QA handbook: retrieval over the mixed folder (Word, web pages, OpenDocument, EPUB, PowerPoint, text) matches
retrieval over the same pages kept as Markdown, on questions written apart from the pages.

The folder was made from the Markdown pages by pandoc and LibreOffice (scripts/make_document_samples.py); the
question set (data/questions/qa_handbook.jsonl) was only run against it once the readers were done, after they
were checked on another corpus (data/docs converted the same way).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowbuilder.evaluation.compare import FlowComparer
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.examples import flows_dir

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "data" / "qa-handbook-md"
QUESTIONS = ROOT / "data" / "questions" / "qa_handbook.jsonl"
FLOW = flows_dir() / "qa_handbook_rag.json"


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _grams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_questions_hold_facts_from_one_page_and_copy_no_wording() -> None:
    pages = {p.stem: p.read_text(encoding="utf-8") for p in PAGES.glob("*.md")}
    questions = load_questions(QUESTIONS)
    assert len(questions) >= 40
    corpus = set().union(*(_grams(text) for text in pages.values()))
    for question in questions:
        assert not _grams(question.question) & corpus, f"{question.id} copies wording from the pages"
        if question.fact:
            assert question.fact.lower() in pages[question.extra["file"]].lower(), question.id
    assert sum(not q.answerable for q in questions) >= 2


@pytest.mark.slow
def test_mixed_folder_retrieves_as_well_as_the_markdown_pages(tmp_path: Path) -> None:
    flow = json.loads(FLOW.read_text(encoding="utf-8"))
    loader = next(n for n in flow["nodes"] if n["type"] == "loader.file")
    mixed, pages = tmp_path / "mixed.json", tmp_path / "pages.json"
    loader["config"]["path"] = str((FLOW.parent / loader["config"]["path"]).resolve())
    mixed.write_text(json.dumps(flow), encoding="utf-8")
    loader["config"]["path"] = str(PAGES)
    flow["name"] = "the same pages as Markdown"
    pages.write_text(json.dumps(flow), encoding="utf-8")
    comparison = FlowComparer().compare(pages, mixed, load_questions(QUESTIONS), k=5, relevance="strict")
    markdown, folder = comparison.a.metrics, comparison.b.metrics
    assert folder.questions == markdown.questions == 39
    assert markdown.hit_at_k >= 0.85  # the pages themselves are findable, or the comparison says nothing
    assert abs(folder.hit_at_k - markdown.hit_at_k) <= 0.05, (folder.hit_at_k, markdown.hit_at_k)
    assert {c.metadata["source"] for c in comparison.b.chunks} == {
        p.name for p in (ROOT / "data/qa-handbook").iterdir()
    }
