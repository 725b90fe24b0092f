"""Question files: parsing, unanswerable questions, and errors that name the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.evaluation.questions import QuestionFileError, load_questions

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reads_gold_fact_and_unanswerable(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        json.dumps({"id": "q1", "question": "Allocation?", "gold": ["ABTEST-018"], "fact": "allocation total"}),
        "",
        "# a comment",
        json.dumps({"id": 2, "question": "Weather on Mars?", "gold": []}),
        json.dumps({"id": "q3", "question": "Only a fact", "fact": "two dots"}),
    )
    questions = load_questions(path)
    assert [q.id for q in questions] == ["q1", "2", "q3"]
    assert questions[0].gold == ("ABTEST-018",) and questions[0].fact == "allocation total"
    assert questions[0].answerable
    assert not questions[1].answerable and questions[1].gold == ()
    assert questions[2].answerable and questions[2].gold == ()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", "line 2: not valid JSON"),
        ('["a list"]', "line 2: expected a JSON object"),
        ('{"id": "x", "gold": []}', 'line 2: "question" must be a non-empty string'),
        ('{"question": "q?", "gold": []}', 'line 2: "id" must be a non-empty string'),
        ('{"id": "x", "question": "q?", "gold": [1]}', 'line 2: "gold" must be a list of record ids'),
        ('{"id": "x", "question": "q?", "fact": ""}', 'line 2: "fact" must be a non-empty string'),
        ('{"id": "q1", "question": "again?"}', "line 2: id 'q1' is already used on line 1"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    path = write(tmp_path, json.dumps({"id": "q1", "question": "ok?", "gold": ["A"]}), line)
    with pytest.raises(QuestionFileError) as info:
        load_questions(path)
    message = str(info.value)
    assert str(path) in message
    assert expected in message


def test_missing_file_lists_available(tmp_path: Path) -> None:
    (tmp_path / "real.jsonl").write_text('{"id": "a", "question": "b"}\n', encoding="utf-8")
    with pytest.raises(QuestionFileError, match=r"no such question file.*real\.jsonl"):
        load_questions(tmp_path / "nope.jsonl")


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(QuestionFileError, match="has no questions"):
        load_questions(write(tmp_path, "", "# only comments"))


@pytest.mark.parametrize("name", ["vwo500_dev.jsonl", "prd_questions.jsonl"])
def test_shipped_question_sets_parse(name: str) -> None:
    questions = load_questions(REPO / "data" / "questions" / name)
    answerable = [q for q in questions if q.answerable]
    assert len(answerable) >= 20
    assert all(q.gold for q in answerable)


def test_prd_facts_are_on_their_gold_pages() -> None:
    from pypdf import PdfReader

    from flowbuilder.evaluation.metrics import normalise

    pdf = REPO / "data" / "VWO_Login_Dashboard_PRD.pdf"
    pages = [normalise(page.extract_text()) for page in PdfReader(pdf).pages]
    for question in load_questions(REPO / "data" / "questions" / "prd_questions.jsonl"):
        if not question.answerable:
            continue
        assert question.fact is not None
        where = [f"{pdf.name}#page{n}" for n, text in enumerate(pages, 1) if normalise(question.fact) in text]
        assert where == list(question.gold), question.id
