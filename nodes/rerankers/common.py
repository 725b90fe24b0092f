"""What every reranker shares: its ports, input checks and how new scores become re-ordered hits.

A reranker takes the hits of a retrieval stage and the question, scores the first ``candidates``
hits with its own model and keeps the best ``keep``. The returned hits are copies (upstream
outputs may be cached and shown elsewhere): ``score`` and ``rank`` are the reranker's, the
reranker's rank and score go into ``legs["rerank"]``, and a hit that had no legs keeps its
retrieval rank and score as ``legs["retrieval"]`` so the before/after stays visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

from flowbuilder.capabilities import Capability
from flowbuilder.data import Hit
from flowbuilder.errors import NodeError
from flowbuilder.node import Node
from flowbuilder.portvalues import Hits, Text

RERANK_LEG = "rerank"
CATEGORY = "Rerankers"


class RerankConfig(BaseModel):
    """Fields every reranker has."""

    model_config = ConfigDict(extra="forbid")

    candidates: int = Field(10, ge=1, le=1000, description="How many of the incoming hits to score (best first).")
    keep: int = Field(4, ge=1, le=1000, description="How many hits to keep after reranking.")


class RerankIn(TypedDict):
    """The input ports of ``reranker.cohere``, ``reranker.cross_encoder``."""

    hits: Annotated[Hits, "The hits to rerank (from a retriever, a store or a fusion)."]
    query: Annotated[Text, "The question the hits are judged against."]


RerankConfigT = TypeVar("RerankConfigT", bound=RerankConfig, default=RerankConfig)
RerankInputsT = TypeVar("RerankInputsT", bound=RerankIn, default=RerankIn)


class RerankedOut(TypedDict):
    """The output ports of ``reranker.cohere``, ``reranker.cross_encoder``, ``reranker.llm``."""

    hits: Annotated[Hits, "The best 'keep' hits by the reranker's score."]


class RerankerNode(Node[RerankConfigT, RerankInputsT, RerankedOut]):
    """Shared ports of ``reranker.*``: hits and the question in, re-ordered hits out."""

    category = CATEGORY
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.RERANKS})
    Config = RerankConfig

    @classmethod
    def config_problems(cls, config: RerankConfigT) -> list[tuple[str | None, str]]:
        if config.keep > config.candidates:
            return [(None, f"keep ({config.keep}) is larger than candidates ({config.candidates}); lower keep.")]
        return []


def question(inputs: RerankIn) -> str:
    """The question the hits are judged against; a blank one is a NodeError (the executor checked the types)."""
    query = inputs["query"]
    if not query.strip():
        raise NodeError("Input 'query' is empty: connect the question (a chat input) to the reranker.")
    return query


def reorder(candidates: Sequence[Hit], scores: Sequence[float], keep: int) -> list[Hit]:
    """Copies of ``candidates`` sorted by ``scores`` (ties keep the incoming order), the first ``keep``."""
    if len(scores) != len(candidates):
        raise NodeError(f"the reranker returned {len(scores)} scores for {len(candidates)} candidates")
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    result: list[Hit] = []
    for new_rank, index in enumerate(order[:keep], start=1):
        old = candidates[index]
        hit = old.model_copy(deep=True)
        if not hit.legs:
            hit.legs["retrieval"] = {"rank": old.rank, "score": old.score}
        hit.legs[RERANK_LEG] = {"rank": new_rank, "score": float(scores[index])}
        hit.score = float(scores[index])
        hit.rank = new_rank
        result.append(hit)
    return result


def score_table(candidates: Sequence[Hit], scores: Sequence[float]) -> list[dict[str, Any]]:
    """One row per candidate for the output inspector: where it was, what it scored."""
    rows = []
    for hit, score in zip(candidates, scores, strict=True):
        meta = hit.document.metadata
        rows.append(
            {
                "input_rank": hit.rank,
                "input_score": round(hit.score, 4),
                "rerank_score": round(float(score), 4),
                "record": meta.get("record_id") or meta.get("source") or "",
                "text": hit.document.text[:160],
            }
        )
    return rows
