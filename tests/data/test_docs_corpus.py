"""The help-centre corpus (data/docs) and its question set are fit for a chunking study."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowbuilder.evaluation.questions import load_questions
from flowbuilder.nodes.loaders import FileLoaderConfig, load_file

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "data" / "docs"
QUESTIONS = ROOT / "data" / "questions" / "docs.jsonl"


def _pages() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}


def _five_grams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 5]) for i in range(len(words) - 4)}


def test_pages_are_help_centre_sized_with_headings_code_and_tables() -> None:
    pages = _pages()
    assert len(pages) >= 7
    for name, text in pages.items():
        assert 900 <= len(text) <= 1400, f"{name}: {len(text)} characters"
        assert re.search(r"^#{1,3} |^[=-]{3,}$", text, re.M), f"{name}: no heading"
    assert sum("```" in t for t in pages.values()) >= 5
    assert sum(bool(re.search(r"^\|---", t, re.M)) for t in pages.values()) >= 3
    # one page uses setext headings so the markdown splitter's support for them is exercised
    assert any(re.search(r"^=+$", t, re.M) for t in pages.values())


def test_record_ids_the_loader_gives_are_the_file_names() -> None:
    for path in sorted(DOCS.glob("*.md")):
        [record] = load_file(path, FileLoaderConfig())
        assert record.metadata["record_id"] == path.name


def test_questions_name_their_page_and_quote_a_fact_from_it() -> None:
    pages = _pages()
    questions = load_questions(QUESTIONS)
    assert len(questions) >= 36
    assert len({q.id for q in questions}) == len(questions)
    answerable = [q for q in questions if q.extra.get("answerable", True)]
    unanswerable = [q for q in questions if not q.extra.get("answerable", True)]
    assert len(unanswerable) >= 5
    for q in unanswerable:
        assert q.gold == () and not q.fact and not q.answerable, q.id
    for q in answerable:
        file = q.extra["file"]
        assert q.gold == (file,), q.id
        assert q.fact and q.fact in pages[file], f"{q.id}: fact {q.fact!r} is not in {file}"


def test_questions_are_worded_differently_from_the_docs() -> None:
    corpus_grams = set().union(*(_five_grams(t) for t in _pages().values()))
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        copied = _five_grams(data["question"]) & corpus_grams
        assert not copied, f"{data['id']} copies {' '.join(sorted(copied)[0])!r} from the docs"


@pytest.mark.parametrize("size", [300])
def test_some_facts_straddle_a_fixed_size_boundary(size: int) -> None:
    pages = _pages()
    cut = 0
    for q in load_questions(QUESTIONS):
        if q.fact and q.extra.get("file"):
            start = pages[q.extra["file"]].index(q.fact)
            cut += start // size != (start + len(q.fact) - 1) // size
    assert cut >= 5
    kinds = {q.extra.get("kind") for q in load_questions(QUESTIONS)}
    assert {"table", "code", "prose", "no-answer"} <= kinds
