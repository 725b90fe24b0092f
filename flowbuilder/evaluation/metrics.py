"""Ranking metrics judged on records and facts, not chunk ids, so they survive re-chunking.

Two relevance modes decide whether a retrieved chunk is *relevant* to a question:

* ``lenient`` (the default): its metadata names a gold record (``record_id``, or ``record_ids`` for a
  chunk of a multi-record text) or its text contains the question's fact (``facts.holds_fact``:
  case, spacing, punctuation, markdown markup and PDF footnote markers ignored). A chunk holding
  only half of a record still counts.
* ``strict``: its text contains the question's fact; for a question without a fact, it holds a gold
  record *whole* (the record's span lies inside the chunk). Which records a chunk holds whole is
  traced from the splitter's input by a :data:`WholeRecords` lookup (see
  ``chunk_stats.WholeRecordIndex``); without one, a fact-less question finds nothing.

Per question we keep the rank of the first relevant chunk; the aggregate metrics are computed over
answerable questions only:

* hit@1 / hit@k: share of questions with a relevant chunk at rank 1 / within the top k;
* MRR: mean of 1/rank of the first relevant chunk (0 when none is in the top k);
* recall@k: share of a question's gold records carried by the top k (a question with only a fact
  counts 1 when the fact is found; with exactly one gold record, finding its fact counts too);
* hit@chars N: share of questions whose evidence lies within the first N characters of the context the
  prompt would get (the top k rendered as the prompt renders hits, cut at N; see :func:`within_budget`),
  so strategies are compared at an equal prompt budget, not by how much text they stuff in;
* nDCG@k: binary gains, where a chunk gains only if it brings a gold item not seen at a better rank,
  so a record split over two chunks is not counted twice (the ideal puts every gold item first).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from flowbuilder.context import DEFAULT_CONTEXT_CHARS, hit_blocks
from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.facts import holds_fact
from flowbuilder.evaluation.questions import Question

_SPACES = re.compile(r"\s+")

Relevance = Literal["lenient", "strict"]
RELEVANCE_MODES: tuple[Relevance, ...] = get_args(Relevance)
RELEVANCE_HELP: dict[Relevance, str] = {
    "lenient": "a chunk is relevant if its metadata names a gold record or it contains the fact",
    "strict": "a chunk is relevant if it contains the fact, or for a question without one the whole gold record",
}
"""One line per mode, for the CLI's help and the UI."""

WholeRecords = Callable[[Document], Collection[str]]
"""The record ids a retrieved chunk holds whole (empty when it cannot be traced)."""


def default_relevance(questions: Iterable[Question]) -> Relevance:
    """``strict`` when the set carries facts (a fact is the evidence; a chunk naming the record but cut
    before the fact does not answer), ``lenient`` for a set of gold records only."""
    return "strict" if any(q.fact for q in questions) else "lenient"


def check_relevance(value: str) -> Relevance:
    """``value`` as a relevance mode, or ValueError listing the modes."""
    for mode in RELEVANCE_MODES:
        if value == mode:
            return mode
    raise ValueError(f"unknown relevance mode '{value}'; use one of: {', '.join(RELEVANCE_MODES)}")


def normalise(text: str) -> str:
    """NFKC (PDF ligatures such as "ﬁ" become "fi"), lower-case, every run of whitespace one space.

    For display and record matching; whether a text holds a fact is :func:`facts.holds_fact`."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower()


def chunk_records(document: Document) -> set[str]:
    """The record ids a chunk carries: its ``record_id`` and every entry of ``record_ids``."""
    found: set[str] = set()
    record_id = document.metadata.get("record_id")
    if record_id is not None and str(record_id):
        found.add(str(record_id))
    many = document.metadata.get("record_ids")
    if isinstance(many, list | tuple):
        found.update(str(r) for r in many if r is not None)
    elif isinstance(many, str) and many:
        # Stores keep only scalar metadata; a list may come back as JSON or a comma-joined string.
        found.update(_string_list(many))
    return found


def _string_list(value: str) -> list[str]:
    if value.startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list):
            return [str(item) for item in parsed if item is not None]
    return [part.strip() for part in value.split(",") if part.strip()]


def _fact_item(question: Question) -> str:
    # With one gold record the fact is that record's evidence; otherwise it stands for itself.
    return question.gold[0] if len(question.gold) == 1 else "fact"


def gold_found(
    document: Document,
    question: Question,
    relevance: Relevance = "lenient",
    whole_records: WholeRecords | None = None,
) -> set[str]:
    """The gold items (record ids, or ``"fact"``) this chunk supplies for ``question``."""
    has_fact = holds_fact(document.text, question.fact)
    if relevance == "strict":
        if question.fact:
            return {_fact_item(question)} if has_fact else set()
        whole = set(whole_records(document)) if whole_records is not None else set()
        return whole & set(question.gold)
    items = chunk_records(document) & set(question.gold)
    if has_fact:
        items.add(_fact_item(question))
    return items


def is_relevant(
    document: Document,
    question: Question,
    relevance: Relevance = "lenient",
    whole_records: WholeRecords | None = None,
) -> bool:
    return bool(gold_found(document, question, relevance, whole_records))


def gold_items(question: Question, relevance: Relevance = "lenient") -> set[str]:
    """What recall counts: the gold records, or the fact when there are none.

    Strict mode with a fact judges by the fact alone, so with several gold records the fact is the one item.
    """
    if relevance == "strict" and question.fact:
        return {_fact_item(question)}
    if question.gold:
        return set(question.gold)
    return {"fact"} if question.fact else set()


@dataclass
class QuestionOutcome:
    """How one question fared in one flow."""

    question: Question
    hits: list[Hit]
    relevant: list[bool]
    """Per retrieved hit (in rank order): does it carry gold evidence?"""
    first_rank: int | None
    """1-based rank of the first relevant chunk in the top k, or None."""
    recall: float
    ndcg: float
    gold_ranks: dict[str, int | None] = field(default_factory=dict)
    """Per gold record: the best rank of a chunk carrying it, or None when it is not in the top k."""
    relevance: Relevance = "lenient"
    """The mode that judged ``relevant``."""
    whole: list[list[str]] | None = None
    """Per hit: the record ids it holds whole (strict mode with a lookup only)."""
    chars_hit: bool = False
    """hit@chars: the evidence lies within the first ``chars`` characters of the context the prompt gets."""
    chars: int = DEFAULT_CONTEXT_CHARS

    @property
    def answerable(self) -> bool:
        return self.question.answerable

    def to_dict(self, with_hits: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.question.id,
            "question": self.question.question,
            "gold": list(self.question.gold),
            "answerable": self.answerable,
            "first_rank": self.first_rank,
            "recall": self.recall,
            "ndcg": self.ndcg,
            "gold_ranks": self.gold_ranks,
            "relevance": self.relevance,
            "hit@chars": self.chars_hit,
            "chars": self.chars,
        }
        if with_hits:
            data["hits"] = []
            for index, (hit, rel) in enumerate(zip(self.hits, self.relevant, strict=True)):
                item: dict[str, Any] = {
                    "rank": hit.rank,
                    "score": hit.score,
                    "relevant": rel,
                    "records": sorted(chunk_records(hit.document)),
                }
                if self.whole is not None:
                    item["whole_records"] = self.whole[index]
                item["text"] = hit.document.text
                data["hits"].append(item)
        return data


def judge_hits(
    question: Question,
    hits: Sequence[Hit],
    k: int,
    *,
    relevance: Relevance = "lenient",
    whole_records: WholeRecords | None = None,
    chars: int = DEFAULT_CONTEXT_CHARS,
    context: Sequence[Hit] | None = None,
) -> QuestionOutcome:
    """Judge the top ``k`` of ``hits`` (taken in the order given) in the ``relevance`` mode.

    ``whole_records`` tells strict mode which records a chunk holds whole (lenient ignores it); ``chars``
    is the context budget hit@chars is judged at, over ``context`` (the hits the flow's prompt gets, when
    the flow returns a different number than ``k``; default: the top ``k``).
    """
    top = list(hits)[:k]
    supplied = [gold_found(hit.document, question, relevance, whole_records) for hit in top]
    relevant = [bool(items) for items in supplied]
    first_rank = next((i + 1 for i, rel in enumerate(relevant) if rel), None)
    wanted = gold_items(question, relevance)
    gold_ranks: dict[str, int | None] = {}
    for gold in question.gold:
        gold_ranks[gold] = next((i + 1 for i, items in enumerate(supplied) if gold in items), None)
    seen: set[str] = set()
    dcg = 0.0
    for index, items in enumerate(supplied):
        new = (items & wanted) - seen if wanted else set()
        if new:
            dcg += 1.0 / math.log2(index + 2)
            seen |= new
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(wanted), k)))
    ndcg = dcg / ideal if ideal else 0.0
    recall = len(seen) / len(wanted) if wanted else 0.0
    whole = (
        [sorted(whole_records(hit.document)) for hit in top]
        if relevance == "strict" and whole_records is not None
        else None
    )
    if context is None:
        chars_hit = within_budget(question, top, supplied, chars, relevance)
    else:
        sent = list(context)
        found = [gold_found(hit.document, question, relevance, whole_records) for hit in sent]
        chars_hit = within_budget(question, sent, found, chars, relevance)
    return QuestionOutcome(
        question, top, relevant, first_rank, recall, ndcg, gold_ranks, relevance, whole, chars_hit, chars
    )


def within_budget(
    question: Question, hits: Sequence[Hit], supplied: Sequence[set[str]], chars: int, relevance: Relevance
) -> bool:
    """hit@chars for one question: does a relevant hit's evidence lie within the first ``chars`` characters
    of the hits as the prompt renders them (numbered, with their source line)?

    A hit holding the fact counts when the fact itself is inside the budget. A hit relevant by its record
    counts when it lies whole inside the budget (strict) or starts inside it (lenient)."""
    fact = question.fact
    for (start, text_start, end), hit, items in zip(hit_blocks(hits), hits, supplied, strict=True):
        if not items or start >= chars:
            continue
        if fact and holds_fact(hit.document.text, fact):
            if holds_fact(hit.document.text[: max(0, chars - text_start)], fact):
                return True
            continue
        if end <= chars or (relevance == "lenient" and text_start < chars):
            return True
    return False


@dataclass(frozen=True)
class Metrics:
    """Retrieval metrics over a question set (hit@1, hit@k, MRR, hit@chars), and how many they cover."""

    k: int
    questions: int
    """Answerable questions the metrics are computed over."""
    unanswerable: int
    """Questions with no gold (reported, not scored)."""
    hit_at_1: float
    hit_at_k: float
    mrr: float
    recall_at_k: float
    ndcg_at_k: float
    hit_at_chars: float = 0.0
    chars: int = DEFAULT_CONTEXT_CHARS
    """The context budget hit@chars was judged at."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "questions": self.questions,
            "unanswerable": self.unanswerable,
            "hit@1": self.hit_at_1,
            "hit@k": self.hit_at_k,
            "mrr": self.mrr,
            "recall@k": self.recall_at_k,
            "ndcg@k": self.ndcg_at_k,
            "hit@chars": self.hit_at_chars,
            "chars": self.chars,
        }


def aggregate(outcomes: Iterable[QuestionOutcome], k: int) -> Metrics:
    """Mean metrics over the answerable questions (zeros when there are none)."""
    items = list(outcomes)
    scored = [o for o in items if o.answerable]
    n = len(scored)
    chars = items[0].chars if items else DEFAULT_CONTEXT_CHARS
    if n == 0:
        return Metrics(k, 0, len(items), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, chars)
    return Metrics(
        k=k,
        questions=n,
        unanswerable=len(items) - n,
        hit_at_1=sum(1 for o in scored if o.first_rank == 1) / n,
        hit_at_k=sum(1 for o in scored if o.first_rank is not None and o.first_rank <= k) / n,
        mrr=sum(1.0 / o.first_rank for o in scored if o.first_rank) / n,
        recall_at_k=sum(o.recall for o in scored) / n,
        ndcg_at_k=sum(o.ndcg for o in scored) / n,
        hit_at_chars=sum(1 for o in scored if o.chars_hit) / n,
        chars=chars,
    )


def compare_ranks(rank_a: int | None, rank_b: int | None) -> str:
    """``"a"``, ``"b"`` or ``"tie"``: the better (smaller) first-relevant rank; missing ranks lose."""
    if rank_a == rank_b:
        return "tie"
    if rank_a is None:
        return "b"
    if rank_b is None:
        return "a"
    return "a" if rank_a < rank_b else "b"
