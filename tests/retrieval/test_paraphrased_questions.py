"""The held-out paraphrase set (never used to choose a setting): gold ids exist, facts sit in every gold row,
no question copies a 5-word phrase of its gold row, and none repeats a row of the set the examples were tuned on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.data import Document
from flowbuilder.evaluation.questions import Question, load_questions
from flowbuilder.nodes.loaders import parse_csv

from .test_userworded_questions import CSV, _shingles
from .test_userworded_questions import QUESTIONS as TUNED

PARAPHRASED = Path(__file__).resolve().parents[2] / "data" / "questions" / "vwo500_paraphrased.jsonl"


@pytest.fixture(scope="module")
def rows() -> dict[str, Document]:
    return {str(r.record_id): r for r in parse_csv(CSV.read_text(encoding="utf-8-sig"), CSV.name)}


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    return load_questions(PARAPHRASED)


def test_size_and_every_module(questions: list[Question]) -> None:
    assert 40 <= len(questions) <= 60
    modules = {g.split("-")[0] for q in questions for g in q.gold}
    assert modules == {"LOGIN", "ADMIN", "VALID", "INVALID", "ADMINLOGGED", "SUPPORT", "ABTEST"}


def test_gold_exists_and_the_fact_is_in_every_gold_row_only(
    rows: dict[str, Document], questions: list[Question]
) -> None:
    for question in questions:
        assert question.fact and question.gold, question.id
        assert all(g in rows for g in question.gold), question.id
        holding = {rid for rid, row in rows.items() if f"- {question.fact}" in row.text}
        assert holding == set(question.gold), f"{question.id}: the fact is in {sorted(holding)}"


def test_no_five_word_phrase_of_the_gold_row(rows: dict[str, Document], questions: list[Question]) -> None:
    for question in questions:
        for gold in question.gold:
            shared = _shingles(question.question) & _shingles(rows[gold].text)
            assert not shared, f"{question.id} copies {' '.join(next(iter(shared)))!r} from {gold}"


def test_disjoint_from_the_tuning_set(questions: list[Question]) -> None:
    lines = [json.loads(line) for line in TUNED.read_text(encoding="utf-8").splitlines() if line.strip()]
    tuned = {g for item in lines for g in item["gold"]}
    assert not tuned & {g for q in questions for g in q.gold}
