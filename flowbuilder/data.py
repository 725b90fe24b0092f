"""Values that travel on data ports.

A :class:`Document` is a record (a CSV row, a PDF page, a file) or a chunk of one; the metadata keeps
where it came from (``source``, ``row`` or ``page``, ``record_id``) and, for chunks, where in the
record's text it lies (``start``, ``end``, ``chunk_index``), so that a fact can be traced through
every stage. A :class:`Hit` is a retrieved chunk with its score and rank.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Document(BaseModel):
    """A record or a chunk: text plus metadata that says where it came from."""

    model_config = ConfigDict(frozen=False)

    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def source(self) -> str:
        return str(self.metadata.get("source", ""))

    @property
    def record_id(self) -> str | None:
        value = self.metadata.get("record_id")
        return None if value is None else str(value)


class Hit(BaseModel):
    """A chunk returned by a search.

    ``score`` is a similarity where higher is better; each store documents what it computes
    (cosine similarity for Chroma and Pinecone with the cosine metric). ``legs`` keeps each
    fused or reranked input's rank and score, so every stage of a hybrid flow stays visible.
    """

    document: Document
    score: float
    rank: int
    id: str = ""
    # Per-stage provenance filled by fusion and rerankers: leg name -> {"rank": 1-based, "score": ...}.
    # Plain retrieval leaves it empty, so readers must treat a missing leg as "not found by that leg".
    legs: dict[str, dict[str, float]] = Field(default_factory=dict)
    # Human-readable arithmetic behind ``score`` (e.g. "1/61 + 1/62" for RRF); empty when trivial.
    explain: str = ""


class ChatMessage(BaseModel):
    """One message of a conversation as sent to or received from a chat model."""

    role: str
    content: str = ""
    name: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None
