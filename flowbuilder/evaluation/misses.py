"""Why a flow missed a question: the fact was cut, ranked too low, never embedded, or never ingested.

For a question whose gold record or fact is not in a flow's top k, looking at every chunk the flow
ingested (not just the retrieved ones) tells the four causes apart, in this order:

* ``past_token_limit``: chunks that carry the gold evidence exist, but every chunk holding the fact
  holds it past the embedder's token limit (the model never read it);
* ``below_k``: a relevant chunk exists and ranked below k (its rank in a deeper search, and in each
  retrieval leg from ``hit.legs`` when the flow fuses several);
* ``cut``: no chunk is relevant, but the input documents hold the fact (or the whole gold record):
  the splitter cut it across chunks;
* ``no_chunk``: not even the inputs hold it: the loader or a template dropped it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.chunk_stats import record_spans
from flowbuilder.evaluation.facts import fact_spans, holds_fact
from flowbuilder.evaluation.metrics import Relevance, WholeRecords, chunk_records, gold_found
from flowbuilder.evaluation.questions import Question

MissKind = Literal["cut", "below_k", "past_token_limit", "no_chunk"]
MISS_KINDS: tuple[MissKind, ...] = ("cut", "below_k", "past_token_limit", "no_chunk")
MISS_LABELS: dict[MissKind, str] = {
    "cut": "cut across chunks",
    "below_k": "ranked below k",
    "past_token_limit": "past the embedder's token limit",
    "no_chunk": "no chunk holds it",
}
TruncationOffset = Callable[[str], int | None]


@dataclass(frozen=True)
class Miss:
    """Why a question's relevant chunk was not found: the kind of miss and what shows it."""

    kind: MissKind
    detail: str
    rank: int | None = None
    """``below_k``: the rank of the first relevant chunk in the deeper search (None: beyond it)."""
    legs: dict[str, int] = field(default_factory=dict)
    """``below_k``: that chunk's rank in each retrieval leg (``hit.legs``), when the flow fuses several."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": MISS_LABELS[self.kind], "detail": self.detail, "rank": self.rank,
                "legs": self.legs}  # fmt: skip


def leg_ranks(hit: Hit) -> dict[str, int]:
    """``{leg: rank}`` from a fused or reranked hit's ``legs`` (empty for plain retrieval)."""
    legs = getattr(hit, "legs", None)
    if not isinstance(legs, dict):
        return {}
    ranks: dict[str, int] = {}
    for name, value in legs.items():
        rank = value.get("rank") if isinstance(value, dict) else None
        if isinstance(rank, int | float):
            ranks[str(name)] = int(rank)
    return ranks


def fact_read(text: str, fact: str, truncation: TruncationOffset) -> bool:
    """Does the model read some whole occurrence of ``fact`` in ``text`` (before its token limit)?"""
    limit = truncation(text)
    if limit is None:
        return True
    return any(end <= limit for _, end in fact_spans(text, fact))


class MissClassifier:
    """Classifies one flow's misses against everything it ingested; built once per flow evaluation."""

    def __init__(
        self,
        inputs: Sequence[Document],
        chunks: Sequence[Document],
        *,
        relevance: Relevance,
        whole_records: WholeRecords | None = None,
        truncation: TruncationOffset | None = None,
        token_limit: int | None = None,
    ) -> None:
        self.chunks = list(chunks)
        self.relevance = relevance
        self.whole_records = whole_records
        self.truncation = truncation
        self.token_limit = token_limit
        self._chunk_texts = [c.text for c in self.chunks]
        self._input_texts = [d.text for d in inputs]
        self._input_records = {span.record_id for doc in inputs for span in record_spans(doc)}
        self._input_records |= {rid for doc in inputs for rid in chunk_records(doc)}

    def fact_split(self, question: Question) -> bool:
        """The inputs hold the question's fact but no single chunk does."""
        if not question.fact:
            return False
        fact = question.fact
        return not any(holds_fact(t, fact) for t in self._chunk_texts) and any(
            holds_fact(t, fact) for t in self._input_texts
        )

    def classify(self, question: Question, deep_hits: Sequence[Hit], k: int) -> Miss:
        fact = question.fact or ""
        relevant = [
            i for i, chunk in enumerate(self.chunks) if gold_found(chunk, question, self.relevance, self.whole_records)
        ]
        if relevant:
            if fact and self.truncation is not None:
                holders = [self.chunks[i] for i, text in enumerate(self._chunk_texts) if holds_fact(text, fact)]
                truncation = self.truncation
                if holders and not any(fact_read(c.text, question.fact or "", truncation) for c in holders):
                    limit = f"{self.token_limit}-token " if self.token_limit else "token "
                    return Miss(
                        "past_token_limit",
                        f"the fact lies past the embedder's {limit}limit in all {len(holders)} chunk(s) holding it",
                    )
            deep = next(
                (
                    (i + 1, hit)
                    for i, hit in enumerate(deep_hits)
                    if gold_found(hit.document, question, self.relevance, self.whole_records)
                ),
                None,
            )
            if deep is None:
                return Miss("below_k", f"a relevant chunk exists but is not in the top {len(deep_hits)}")
            rank, hit = deep
            legs = leg_ranks(hit)
            per_leg = ", ".join(f"{name} {value}" for name, value in legs.items())
            return Miss(
                "below_k", f"first relevant chunk at rank {rank}" + (f" ({per_leg})" if per_leg else ""), rank, legs
            )
        if fact:
            if any(holds_fact(text, fact) for text in self._input_texts):
                return Miss("cut", "the inputs hold the fact but no single chunk does: the splitter cut it")
            return Miss("no_chunk", "no input or chunk holds the fact: the loader or a template dropped it")
        if set(question.gold) & self._input_records:
            return Miss("cut", "the gold record is in the inputs but no chunk holds it whole")
        return Miss("no_chunk", "no chunk carries the gold record: the loader or a template dropped it")
