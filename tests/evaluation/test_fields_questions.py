"""data/questions/vwo500_fields.jsonl: every gold set is exactly the CSV rows the question asks about."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from flowbuilder.evaluation.questions import load_questions

REPO = Path(__file__).resolve().parents[2]
CSV = REPO / "data" / "VWO_500_Test_Cases.csv"
QUESTIONS = REPO / "data" / "questions" / "vwo500_fields.jsonl"


def test_gold_sets_are_the_rows_with_that_module_priority_and_automation() -> None:
    with CSV.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    questions = load_questions(QUESTIONS)
    assert len(questions) >= 30
    raw = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    for question, data in zip(questions, raw, strict=True):
        module, priority, automated = data["module"], data["priority"], data.get("automated")
        expected = [
            row[0]
            for row in rows
            if row[1].startswith(f"Verify {module} - ") and row[12] == priority and automated in (None, row[13])
        ]
        assert list(question.gold) == expected and expected, question.id
        # Worded as a tester asks: the module's name from the CSV is not copied into the question.
        assert not re.search(rf"\b{re.escape(module)}\b", question.question, re.IGNORECASE), question.id
        assert priority.lower() in question.question.lower() or "priority" in question.question.lower()
