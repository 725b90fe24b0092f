"""Evaluation question sets as JSONL: one ``{"id", "question", "gold", "fact"}`` object per line.

``gold`` lists record ids (a CSV's ``Scenario TID`` such as ``ABTEST-018``, or ``<file>#page<N>``);
``fact`` is an optional string that appears in the relevant text. A question with ``gold: []`` and
no fact has no answer in the corpus: it is kept and reported, but left out of the hit metrics.
Blank lines and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.errors import FlowFileError

MAX_QUESTION_FILE_BYTES = 10 * 1024 * 1024
_KNOWN_KEYS = {"id", "question", "gold", "fact"}


class QuestionFileError(FlowFileError):
    """A question file is missing, unreadable or has a bad line (named by its number)."""


@dataclass(frozen=True)
class Question:
    """One evaluation question: its words, gold record ids and the fact an answer must hold."""

    id: str
    question: str
    gold: tuple[str, ...] = ()
    fact: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def answerable(self) -> bool:
        """False for a question whose answer is not in the corpus (no gold record and no fact)."""
        return bool(self.gold) or bool(self.fact)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "question": self.question, "gold": list(self.gold)}
        if self.fact:
            data["fact"] = self.fact
        return data


def parse_question(data: object, where: str) -> Question:
    """One parsed JSON value as a :class:`Question`; ``where`` ("file:line") goes into every error."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    qid = data.get("id")
    if not isinstance(qid, str | int) or isinstance(qid, bool) or str(qid).strip() == "":
        raise ValueError('"id" must be a non-empty string')
    text = data.get("question")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('"question" must be a non-empty string')
    gold = data.get("gold", [])
    if isinstance(gold, str):
        gold = [gold]
    if not isinstance(gold, list) or not all(isinstance(g, str) and g.strip() for g in gold):
        raise ValueError('"gold" must be a list of record ids (strings), e.g. ["ABTEST-018"]; use [] for none')
    fact = data.get("fact")
    if fact is not None and (not isinstance(fact, str) or not fact.strip()):
        raise ValueError('"fact" must be a non-empty string when given (leave it out for none)')
    extra = {k: v for k, v in data.items() if k not in _KNOWN_KEYS}
    return Question(str(qid).strip(), text.strip(), tuple(g.strip() for g in gold), fact, extra)


def load_questions(path: str | os.PathLike[str]) -> list[Question]:
    """Read a JSONL question file; a bad line raises :class:`QuestionFileError` naming file and line."""
    file = Path(path)
    if not file.exists():
        folder = file.parent if file.parent.is_dir() else None
        available = sorted(p.name for p in folder.glob("*.jsonl")) if folder else []
        hint = f"; question files in {folder}: {', '.join(available)}" if available else ""
        raise QuestionFileError(file, f"no such question file{hint}")
    if file.is_dir():
        raise QuestionFileError(file, "is a folder; give a .jsonl question file")
    if file.stat().st_size > MAX_QUESTION_FILE_BYTES:
        raise QuestionFileError(file, f"is larger than {MAX_QUESTION_FILE_BYTES // (1024 * 1024)} MB")
    try:
        lines = file.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise QuestionFileError(file, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise QuestionFileError(file, f"cannot read it ({exc.strerror})") from None
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise QuestionFileError(file, f"line {number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        try:
            question = parse_question(data, f"{file}:{number}")
        except ValueError as exc:
            raise QuestionFileError(file, f"line {number}: {exc}") from None
        if question.id in seen:
            raise QuestionFileError(
                file,
                f"line {number}: id '{question.id}' is already used on line {seen[question.id]}; ids must be unique",
            )
        seen[question.id] = number
        questions.append(question)
    if not questions:
        raise QuestionFileError(file, 'has no questions; write one JSON object per line: {"id", "question", "gold"}')
    return questions
