"""The user-worded question set: gold ids exist, facts sit in their gold rows, and no wording is copied."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flowbuilder.data import Document
from flowbuilder.evaluation.questions import Question, load_questions
from flowbuilder.nodes.loaders import parse_csv

REPO = Path(__file__).resolve().parents[2]
CSV = REPO / "data" / "VWO_500_Test_Cases.csv"
QUESTIONS = REPO / "data" / "questions" / "vwo500_userworded.jsonl"
# Field questions: the answer is that column's value, found nowhere else in the row.
FIELD_OF_KIND = {"priority": ("Priority",), "automated": ("Is Automated",)}
EXPECTED_COLUMNS = ("Expected Result", "Expected Result.1")


@pytest.fixture(scope="module")
def rows() -> dict[str, Document]:
    records = parse_csv(CSV.read_text(encoding="utf-8-sig"), CSV.name)
    return {str(r.record_id): r for r in records}


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    return load_questions(QUESTIONS)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9@/]+", text.lower())


def _shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _kinds() -> dict[str, str]:
    import json

    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return {str(d["id"]): str(d.get("kind", "")) for d in map(json.loads, filter(None, lines))}


def test_enough_questions_and_field_questions(questions: list[Question]) -> None:
    kinds = _kinds()
    assert len(questions) >= 45
    assert sum(kind in ("priority", "automated", "expected_result") for kind in kinds.values()) >= 12


def test_every_gold_id_exists_and_fact_is_in_a_gold_row(rows: dict[str, Document], questions: list[Question]) -> None:
    for question in questions:
        assert question.gold, question.id
        missing = [g for g in question.gold if g not in rows]
        assert not missing, f"{question.id}: unknown gold ids {missing}"
        assert question.fact, question.id
        assert all(question.fact in rows[g].text for g in question.gold), f"{question.id}: fact not in gold row"


def test_field_questions_are_answerable_only_from_that_field(
    rows: dict[str, Document], questions: list[Question]
) -> None:
    kinds = _kinds()
    for question in questions:
        kind = kinds[question.id]
        if kind not in (*FIELD_OF_KIND, "expected_result"):
            continue
        for gold in question.gold:
            columns: dict[str, str] = rows[gold].metadata["columns"]
            fields = FIELD_OF_KIND.get(kind, EXPECTED_COLUMNS)
            if kind in FIELD_OF_KIND:
                assert columns[fields[0]] == question.fact, question.id
            others = [v for k, v in columns.items() if k not in fields and k != "Scenario TID"]
            pattern = re.compile(rf"\b{re.escape(question.fact)}\b")
            assert not any(pattern.search(v) for v in others), f"{question.id}: fact also outside {fields}"
            assert any(question.fact in columns[f] for f in fields), question.id


def test_no_question_copies_a_five_word_phrase_of_its_gold_row(
    rows: dict[str, Document], questions: list[Question]
) -> None:
    for question in questions:
        asked = _shingles(question.question)
        for gold in question.gold:
            shared = asked & _shingles(rows[gold].text)
            assert not shared, f"{question.id} copies {' '.join(next(iter(shared)))!r} from {gold}"


def test_shingle_check_can_fail() -> None:
    assert _shingles("does verify login - page load work?") & _shingles('"Verify Login - page load" work')
