"""Turning port values into JSON and into short text, for the CLI, the UI and reports."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from flowbuilder.data import Document, Hit


def to_jsonable(value: Any, max_items: int | None = None) -> Any:
    """A JSON-friendly copy of a port value; services become a short description."""
    if isinstance(value, Hit):
        data: dict[str, Any] = {
            "rank": value.rank,
            "score": round(value.score, 6),
            "id": value.id,
            "text": value.document.text,
            "metadata": to_jsonable(value.document.metadata),
        }
        # per-stage ranks and scores (fusion, rerankers) only when a stage filled them
        if value.legs:
            data["legs"] = to_jsonable(value.legs)
        if value.explain:
            data["explain"] = value.explain
        return data
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, max_items) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = list(value)[:max_items] if max_items is not None else list(value)
        return [to_jsonable(v, max_items) for v in items]
    return describe_service(value)


def describe_service(value: Any) -> str:
    """``<embedder local/all-MiniLM-L6-v2-int8, 384 dims>``-style text for a service object."""
    parts = [type(value).__name__]
    for attr in ("model_id", "model", "name", "provider"):
        if isinstance(getattr(value, attr, None), str):
            parts.append(getattr(value, attr))
            break
    return "<" + " ".join(parts) + ">"


def score_meaning(hits: list[Hit]) -> str:
    """What ``Hit.score`` means for a list of hits: a reranker's score, a fused score or the store's similarity."""
    if hits and all("rerank" in h.legs for h in hits):
        return "reranker score"
    if hits and all(h.explain for h in hits):
        return "fused score"
    return "cosine similarity"


def hit_line(hit: Hit, width: int = 90) -> str:
    meta = hit.document.metadata
    label = meta.get("record_id") or meta.get("source") or hit.id
    where = meta.get("source", "")
    text = " ".join(hit.document.text.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"[{hit.rank}] score {hit.score:.3f}  {label}  ({where})\n      {text}"


def is_hits(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Hit) for v in value)


def is_documents(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Document) for v in value)
