"""data/questions/vwo500_tail.jsonl: gold = an area's rows with one priority, worded without copying the rows."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from flowbuilder.evaluation.questions import load_questions
from tests.retrieval.test_userworded_questions import _shingles

REPO = Path(__file__).resolve().parents[2]
CSV = REPO / "data" / "VWO_500_Test_Cases.csv"
QUESTIONS = REPO / "data" / "questions" / "vwo500_tail.jsonl"


def _rows() -> list[list[str]]:
    with CSV.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle))[1:]


def _raw() -> list[dict[str, object]]:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_gold_is_every_row_of_the_area_with_that_priority_and_the_priority_matters() -> None:
    rows = _rows()
    questions = load_questions(QUESTIONS)
    assert len(questions) >= 70
    for question, data in zip(questions, _raw(), strict=True):
        module, topic, priority = str(data["module"]), str(data["topic"]), str(data["priority"])
        group = [
            r for r in rows if r[1].startswith(f"Verify {module} - ") and re.search(topic, r[1].split(" - ", 1)[1])
        ]
        assert list(question.gold) == [r[0] for r in group if r[12] == priority] and question.gold, question.id
        # The area alone does not answer it: it also holds rows of another priority.
        assert len({r[12] for r in group}) > 1, question.id
        # No fact: with several gold rows compare would judge by the fact alone, and "Critical" is in 110 rows.
        assert question.fact is None and data["kind"] == "priority", question.id
        # Worded as a tester asks: neither the CSV's module name nor a 5-word phrase of a gold row.
        assert not re.search(rf"\b{re.escape(module)}\b", question.question, re.IGNORECASE), question.id
        by_id = {r[0]: r for r in rows}
        for gold in question.gold:
            shared = _shingles(question.question) & _shingles(" ".join(by_id[gold]))
            assert not shared, f"{question.id} copies {' '.join(next(iter(shared)))!r} from {gold}"


def test_the_priority_lies_past_the_embedders_limit_in_naive_lines() -> None:
    """The physics the set relies on: MiniLM never reads a naive line's Priority column."""
    from flowbuilder.nodes.embedders.local import LocalEmbedder

    embedder = LocalEmbedder()
    lines = CSV.read_text(encoding="utf-8-sig").splitlines()[1:]
    gold = {g for q in load_questions(QUESTIONS) for g in q.gold}
    for line in lines:
        if line[1 : line.index('"', 1)] in gold:
            offset = embedder.truncation_offset(line)
            assert offset is not None and offset < line.rindex('","', 0, line.rindex('","')), line[:12]
