"""Fusion of ranked hit lists: Reciprocal Rank Fusion or a weighted sum of normalised scores.

Every fused hit keeps, per input ("leg"), the rank and score it had there in ``Hit.legs`` and the
arithmetic behind its fused score in ``Hit.explain`` (``1/61 + 1/62``), so a table can show why a
record came first. Hits of different legs are the same hit when they name the same record chunk:
same stored id, else same source + record id + text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.data import Hit
from flowbuilder.errors import NodeError
from flowbuilder.node import Node, RunContext
from flowbuilder.portvalues import Hits
from flowbuilder.registry import register_node

FusionMethod = Literal["rrf", "weighted"]
FuseBy = Literal["chunk", "parent"]
DEFAULT_LEG = "dense"
"""Name of an input whose hits carry no leg of their own: plain vector-store retrieval."""


def hit_key(hit: Hit, by: str = "chunk") -> str:
    """What makes two hits the same: the chunk (stored id, else source + record + text), or with
    ``by="parent"`` the parent record of a view or child chunk (``parent_id``)."""
    parent = hit.document.metadata.get("parent_id") if by == "parent" else None
    if parent:
        return f"parent:{parent}"
    if hit.id:
        return hit.id
    meta = hit.document.metadata
    return f"{meta.get('source', '')}\x1f{meta.get('record_id', '')}\x1f{hit.document.text}"


def leg_name_of(hits: Sequence[Hit]) -> str | None:
    """The leg a retriever already tagged its hits with (e.g. ``keyword``), if they all share exactly one."""
    names = {tuple(h.legs) for h in hits}
    if len(names) == 1:
        only = next(iter(names))
        if len(only) == 1:
            return only[0]
    return None


def leg_names(inputs: Sequence[Sequence[Hit]], names: Sequence[str]) -> list[str]:
    """One unique name per input: the configured one, else the retriever's tag, else ``dense``/``fused``."""
    out: list[str] = []
    for i, hits in enumerate(inputs):
        name = names[i].strip() if i < len(names) and names[i].strip() else None
        if name is None:
            name = leg_name_of(hits) or (DEFAULT_LEG if all(not h.legs for h in hits) else "fused")
        base, n = name, 2
        while name in out:
            name, n = f"{base}{n}", n + 1
        out.append(name)
    return out


@dataclass
class _Entry:
    hit: Hit
    score: float = 0.0
    terms: list[str] = field(default_factory=list)
    legs: dict[str, dict[str, float]] = field(default_factory=dict)


def _normalised(hits: Sequence[Hit]) -> list[float]:
    """Min-max scaled scores of one leg, so cosine and BM25 scores can be added (all equal -> 1)."""
    scores = [h.score for h in hits]
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [1.0 if high == low else (s - low) / (high - low) for s in scores]


def fuse(
    inputs: Sequence[Sequence[Hit]],
    *,
    method: FusionMethod = "rrf",
    k: int = 60,
    weights: Sequence[float] = (),
    names: Sequence[str] = (),
    top_n: int = 0,
    keep: int = 10,
    by: FuseBy = "chunk",
) -> list[Hit]:
    """Fuse ranked lists into one, best first. ``top_n`` (0 = all) cuts each input before fusing;
    ``keep`` (0 = all) cuts the result. RRF: sum of ``w / (k + rank)``; weighted: sum of ``w * min-max score``.
    ``by="parent"`` fuses records rather than chunks: several views of one record in a leg count once,
    at the best of their ranks (ranks are renumbered per leg after that merge)."""
    if k < 0:
        raise NodeError(f"The RRF constant k must be 0 or more, got {k}.")
    if weights and len(weights) != len(inputs):
        raise NodeError(
            f"{len(weights)} weights were given for {len(inputs)} connected hit lists; give one weight per input "
            "(in connection order) or none."
        )
    legs = leg_names(inputs, names)
    entries: dict[str, _Entry] = {}
    for index, (leg, hits) in enumerate(zip(legs, inputs, strict=True)):
        cut = _distinct(hits, by)
        cut = cut[:top_n] if top_n else cut
        weight = float(weights[index]) if weights else 1.0
        scaled = _normalised(cut) if method == "weighted" else []
        for position, hit in enumerate(cut):
            rank = position + 1
            entry = entries.setdefault(hit_key(hit, by), _Entry(hit))
            entry.legs[leg] = {"rank": rank, "score": float(hit.score)}
            w = "" if weight == 1.0 else f"{weight:g}*"
            if method == "rrf":
                entry.score += weight / (k + rank)
                entry.terms.append(f"{w}1/{k + rank}")
            else:
                entry.score += weight * scaled[position]
                entry.terms.append(f"{w}{scaled[position]:.3f}")
    ranked = sorted(entries.values(), key=lambda e: -e.score)  # stable: ties keep first-seen order
    if keep:
        ranked = ranked[:keep]
    fused: list[Hit] = []
    for rank, entry in enumerate(ranked, start=1):
        legs_of = {**{k_: v for k_, v in entry.hit.legs.items() if k_ not in legs}, **entry.legs}
        fused.append(
            entry.hit.model_copy(
                update={"score": entry.score, "rank": rank, "legs": legs_of, "explain": " + ".join(entry.terms)}
            )
        )
    return fused


def _distinct(hits: Sequence[Hit], by: FuseBy) -> list[Hit]:
    """A leg's hits best first, each key once (a store may return one record's views several times)."""
    seen: set[str] = set()
    out = []
    for hit in sorted(hits, key=lambda h: h.rank):
        key = hit_key(hit, by)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out


class FusionConfig(BaseModel):
    """Settings of ``retriever.fusion``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    method: FusionMethod = Field("rrf", description="rrf: sum of 1/(k + rank); weighted: weight x min-max score.")
    k: int = Field(60, ge=0, le=10000, description="RRF constant: larger flattens the advantage of the top ranks.")
    weights: list[float] = Field(
        default_factory=list, description="One weight per connected input, in connection order; empty = all 1."
    )
    names: list[str] = Field(
        default_factory=list,
        description="Leg names per input (e.g. dense, keyword); empty = the retriever's own tag, else 'dense'.",
    )
    top_n: int = Field(0, ge=0, le=10000, description="Hits taken from each input before fusing; 0 = all.")
    keep: int = Field(10, ge=0, le=10000, description="Hits kept after fusing; 0 = all.")
    by: FuseBy = Field(
        "chunk", description="chunk: fuse chunks; parent: fuse the records that views/children point to (parent_id)."
    )


class FusionIn(TypedDict):
    """The input ports of ``retriever.fusion``."""

    hits: Annotated[list[Hits], "Two or more hit lists (dense, keyword, views...)."]
    """One hit list per connection."""


class FusedOut(TypedDict):
    """The output ports of ``retriever.fusion``."""

    hits: Annotated[Hits, "Fused hits, best first; legs and explain filled."]


@register_node
class FusionNode(Node[FusionConfig, FusionIn, FusedOut]):
    """Fuse several ranked hit lists (RRF or weighted) and show each leg's rank and score."""

    type_name = "retriever.fusion"
    display_name = "Hybrid Fusion (RRF)"
    aliases = ("hybrid search", "Ensemble Retriever", "reciprocal rank fusion")
    category = "Retrieval"
    Config = FusionConfig

    def run(self, inputs: FusionIn, ctx: RunContext) -> FusedOut:
        c = self.config
        lists = inputs["hits"]
        if not lists:
            raise NodeError("Input 'hits' is empty: connect the hits outputs of two or more retrievers.")
        fused = fuse(
            lists, method=c.method, k=c.k, weights=c.weights, names=c.names, top_n=c.top_n, keep=c.keep, by=c.by
        )
        legs = leg_names(lists, c.names)
        ctx.details["method"] = f"RRF (k = {c.k})" if c.method == "rrf" else "weighted min-max scores"
        ctx.details["inputs"] = {leg: len(hits) for leg, hits in zip(legs, lists, strict=True)}
        ctx.details["stages"] = {leg: stage_rows(hits) for leg, hits in zip(legs, lists, strict=True)}
        ctx.details["fused"] = stage_rows(fused)
        if len(lists) == 1:
            ctx.log("Only one hit list is connected: fusion just re-scores it.")
        empty = [leg for leg, hits in zip(legs, lists, strict=True) if not hits]
        if empty and len(empty) == len(lists):
            ctx.warn("every input hit list is empty: nothing to fuse")
        elif empty:
            ctx.warn(f"input {', '.join(empty)} found nothing: the fused list is only the other legs")
        return {"hits": fused}


def stage_rows(hits: Sequence[Hit], limit: int = 50) -> list[dict[str, Any]]:
    """Compact rows of one stage for the inspector: rank, record, score, legs, explain, a text preview."""
    rows: list[dict[str, Any]] = []
    for hit in hits[:limit]:
        meta = hit.document.metadata
        rows.append(
            {
                "rank": hit.rank,
                "record": str(meta.get("parent_id") or meta.get("record_id") or meta.get("source") or hit.id),
                "score": round(float(hit.score), 4),
                "legs": {
                    name: {"rank": int(v.get("rank", 0)), "score": round(float(v.get("score", 0.0)), 4)}
                    for name, v in hit.legs.items()
                },
                "explain": hit.explain,
                "text": hit.document.text[:160],
            }
        )
    return rows
