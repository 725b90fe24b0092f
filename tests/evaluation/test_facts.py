"""One rule for "this chunk holds the fact": compare (retrieval), eval (answers, chunks) and the pages agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.answers import AnswerResult, contains_fact, judge_answer
from flowbuilder.evaluation.facts import fact_spans, fold, holds_fact
from flowbuilder.evaluation.metrics import is_relevant, judge_hits
from flowbuilder.evaluation.questions import Question, load_questions
from flowbuilder.nodes.loaders import FileLoaderConfig, load_file
from flowbuilder.nodes.pdf_text import drop_footnote_markers

ROOT = Path(__file__).resolve().parents[2]
PRD = ROOT / "data" / "VWO_Login_Dashboard_PRD.pdf"


@pytest.mark.parametrize(
    ("text", "fact", "held"),
    [
        ("Optional 2FA support for enhanced security6\n", "support for enhanced security", True),
        ("free trial signup for new users5 and more", "signup for new users and more", True),
        ("Clear messages for failed authentication\n    attempts7", "failed authentication attempts", True),
        ("Ｆｕｌｌ-width ﬁle names", "full width file names", True),
        ("Pass **`--device`** to `login`", "pass --device to login", True),
        ("See [the billing page](billing.md#plans) for plans", "the billing page for plans", True),
        ("Press <kbd>Ctrl</kbd>+<kbd>K</kbd>", "press ctrl k", True),
        ("| Plan | Seats |\n|---|---|\n| Team | 10 |", "team 10", True),
        ("You get 100 recovery codes", "10 recovery codes", False),
        ("IPv4 only", "ipv6 only", False),
        ("the category page", "cat", False),
        ("users", "users5", False),
    ],
)
def test_the_rule(text: str, fact: str, held: bool) -> None:
    assert holds_fact(text, fact) is held
    assert contains_fact(text, fact) is held  # eval's name for it is the same rule
    question = Question("q", "?", (), fact)
    assert is_relevant(Document(text=text), question, "strict") is held
    assert is_relevant(Document(text=text), question, "lenient") is held


def test_fold_and_spans_point_into_the_text() -> None:
    text = "Users get **10 recovery codes**.\nNew users5 see a tour."
    assert fold(text) == " users get 10 recovery codes new users5 see a tour "
    [(start, end)] = fact_spans(text, "10 recovery codes")
    assert text[start:end] == "10 recovery codes"
    [(start, end)] = fact_spans(text, "new users see")
    assert text[start:end] == "New users5 see"


def test_pdf_reader_drops_footnote_markers_but_not_words_ending_in_digits() -> None:
    text = "analysis12. The login\nfor new users5\nenhanced security6, html5 and base64.\nOAuth2\nversion 3.10"
    assert drop_footnote_markers(text) == (
        "analysis. The login\nfor new users\nenhanced security, html5 and base64.\nOAuth2\nversion 3.10"
    )
    raw = " ".join(_raw_layout_pages())
    pages = [r.text for r in load_file(PRD, FileLoaderConfig())]
    for word in ("users5", "security6", "attempts7"):
        assert word in raw
        assert not any(word in page for page in pages), word
        assert word[:-1] in " ".join(pages)


def _raw_layout_pages() -> list[str]:
    """The PRD's pages as pypdf's layout mode gives them, before the reader's repairs: markers glued on."""
    from pypdf import PdfReader

    return [" ".join(page.extract_text(extraction_mode="layout").split()) for page in PdfReader(PRD).pages]


def test_eval_and_compare_agree_on_which_chunk_holds_a_fact() -> None:
    # The PRD's raw text keeps its footnote markers glued to words: the case where eval's whole-word check and
    # compare's substring check used to disagree. Every chunk, every question: one verdict.
    chunks = [Document(text=page[i : i + 600]) for page in _raw_layout_pages() for i in range(0, len(page), 400)]
    questions = [q for q in load_questions(ROOT / "data" / "questions" / "prd_questions.jsonl") if q.fact]
    hits = [Hit(document=c, score=1.0, rank=n) for n, c in enumerate(chunks, start=1)]
    agreed = 0
    for question in questions:
        retrieval = judge_hits(question, hits, len(hits), relevance="strict")
        shown = AnswerResult(question, "wrong", hits=hits).to_dict()["chunks"]
        assert [c["holds_fact"] for c in shown] == retrieval.relevant, question.id
        agreed += sum(retrieval.relevant)
        # An answer quoting a chunk that retrieval counts is judged to hold the fact, and cited from a holder.
        for n, relevant in enumerate(retrieval.relevant, start=1):
            if relevant:
                verdict, _ = judge_answer(question, f"[{n}] {chunks[n - 1].text}", hits, [n])
                assert verdict == "correct", (question.id, n)
                break
    assert agreed >= len(questions)  # every fact is in some chunk, so the check compared real verdicts
