"""Multi-view (parent-child) indexing, and returning parents from hits on their views.

``indexer.views`` turns each record (or section) into several small texts to embed, each pointing to
its parent by metadata: ``parent_id``, ``parent_text`` (the whole record) and ``view`` (``whole``,
``field``, ``sentence``). A short field such as a test case's description is matched far better by
a question than the long record it belongs to. ``retriever.parents`` then maps hits on any view
(or on ``splitter.parent_child`` children, which carry the same metadata) back to their parents,
best rank first, one hit per parent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.hybrid.fusion import hit_key, stage_rows
from flowbuilder.nodes.io import HitsIn
from flowbuilder.nodes.vectorstores.common import document_id
from flowbuilder.portvalues import Chunks, Hits, Records
from flowbuilder.registry import register_node

View = Literal["whole", "field", "sentence"]
_SENTENCE_END = re.compile(r"\s*\|\s+|(?<=[.!?])\s+|\s*\n+\s*")


def parent_id_of(doc: Document) -> str:
    meta = doc.metadata
    if meta.get("parent_id"):
        return str(meta["parent_id"])
    if meta.get("record_id") is not None:
        return str(meta["record_id"])
    return document_id(doc)


def sentences(text: str, min_chars: int) -> list[str]:
    """Sentences, lines and ``|``-separated steps of ``text``, merged forward until ``min_chars`` long."""
    pieces: list[str] = []
    pending = ""
    for part in _SENTENCE_END.split(text):
        part = part.strip()
        if not part:
            continue
        pending = f"{pending} {part}".strip() if pending else part
        if len(pending) >= min_chars:
            pieces.append(pending)
            pending = ""
    if pending:
        if pieces and len(pending) < min_chars:
            pieces[-1] = f"{pieces[-1]} {pending}"
        else:
            pieces.append(pending)
    return pieces


def field_text(doc: Document, fields: Sequence[str], label: bool) -> str:
    columns = doc.metadata.get("columns")
    values = columns if isinstance(columns, dict) else doc.metadata
    parts = []
    for name in fields:
        value = values.get(name)
        if value is not None and str(value).strip():
            parts.append(f"{name}: {value}" if label else str(value).strip())
    return "\n".join(parts)


def make_views(
    documents: Sequence[Document],
    views: Sequence[View],
    *,
    fields: Sequence[str] = (),
    label_fields: bool = False,
    min_sentence_chars: int = 30,
) -> tuple[list[Document], dict[str, Any]]:
    """The view chunks of every document and counts for the details. A view text shared by several
    parents (a boilerplate sentence) is dropped: it cannot point to one parent and matches them all."""
    candidates: list[tuple[View, str, Document]] = []  # (view, text, parent)
    missing_field = 0
    for doc in documents:
        for view in views:
            if view == "whole":
                candidates.append((view, doc.text, doc))
            elif view == "field":
                text = field_text(doc, fields, label_fields)
                if text:
                    candidates.append((view, text, doc))
                else:
                    missing_field += 1
            else:
                for piece in sentences(doc.text, min_sentence_chars):
                    candidates.append((view, piece, doc))
    owners: dict[str, set[str]] = {}
    for _view, text, doc in candidates:
        owners.setdefault(text, set()).add(parent_id_of(doc))
    out: list[Document] = []
    seen: set[tuple[str, str]] = set()
    shared = 0
    for view, text, doc in candidates:
        parent = parent_id_of(doc)
        if len(owners[text]) > 1:
            shared += 1
            continue
        if (parent, text) in seen:  # the same text as two views of one parent: index it once
            continue
        seen.add((parent, text))
        metadata = {**doc.metadata, "parent_id": parent, "parent_text": doc.text, "view": view}
        out.append(Document(text=text, metadata=metadata))
    counts = Counter(d.metadata["view"] for d in out)
    details = {
        "parents": len(documents),
        "views": dict(counts),
        "dropped_shared_texts": shared,
        "records_without_field": missing_field,
    }
    return out, details


def _default_views() -> list[View]:
    return ["whole", "field"]


class ViewsConfig(BaseModel):
    """Settings of ``indexer.views``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    views: list[View] = Field(
        default_factory=_default_views,
        description="Views of each record to index: whole text, chosen field(s), sentence-level children.",
    )
    fields: list[str] = Field(
        default_factory=list, description="Columns (or metadata keys) of the 'field' view, e.g. TestCase Description."
    )
    label_fields: bool = Field(False, description="Prefix each field value with its column name.")
    min_sentence_chars: int = Field(30, ge=1, le=2000, description="Shorter sentences are merged with the next.")


class ParentsOut(TypedDict):
    """The output ports of ``retriever.parents``."""

    hits: Annotated[Hits, "Parent records, one per parent, best first."]


class ViewsIn(TypedDict):
    """The input ports of ``indexer.views``."""

    documents: Annotated[Records, "Records or sections: the parents."]


class ViewsOut(TypedDict):
    """The output ports of ``indexer.views``."""

    chunks: Annotated[Chunks, "View chunks with parent_id, parent_text and view."]


@register_node
class ViewsIndexerNode(Node[ViewsConfig, ViewsIn, ViewsOut]):
    """Index several views of each record (a field, sentences, the whole), each pointing to its parent."""

    type_name = "indexer.views"
    display_name = "Multi-view Indexer"
    aliases = ("Multi Vector Retriever", "parent document", "index")
    category = "Splitters"
    Config = ViewsConfig

    @classmethod
    def config_problems(cls, config: ViewsConfig) -> list[tuple[str | None, str]]:
        problems: list[tuple[str | None, str]] = []
        if not config.views:
            problems.append((None, "Choose at least one view (whole, field, sentence)."))
        if "field" in config.views and not config.fields:
            problems.append((None, "The 'field' view needs fields: name the column(s), e.g. TestCase Description."))
        return problems

    def run(self, inputs: ViewsIn, ctx: RunContext) -> ViewsOut:
        c = self.config
        for _port, problem in self.config_problems(c):
            raise NodeError(problem)
        documents = inputs["documents"]
        if not documents:
            raise NodeError("Input 'documents' is empty: connect a loader or labeller with records.")
        chunks, details = make_views(
            documents, c.views, fields=c.fields, label_fields=c.label_fields, min_sentence_chars=c.min_sentence_chars
        )
        if "field" in c.views and details["records_without_field"] == len(documents):
            raise NodeError(
                f"None of the {len(documents)} records has the field(s) {', '.join(c.fields)}; "
                "check the column names (CSV headers are case-sensitive)."
            )
        ctx.details.update(details)
        ctx.details["sample"] = [{"view": d.metadata["view"], "text": d.text[:160]} for d in chunks[:6]]
        return {"chunks": chunks}


def return_parents(hits: Sequence[Hit], keep: int = 0) -> list[Hit]:
    """One hit per parent (best rank wins), with the parent's text; the matched view's text goes to
    ``matched_text`` and ``matched_view``. Hits without ``parent_id`` are their own parent."""
    out: list[Hit] = []
    seen: set[str] = set()
    for hit in sorted(hits, key=lambda h: h.rank):
        meta = hit.document.metadata
        parent = meta.get("parent_id")
        key = f"parent:{parent}" if parent else hit_key(hit)
        if key in seen:
            continue
        seen.add(key)
        if parent and isinstance(meta.get("parent_text"), str):
            metadata = {k: v for k, v in meta.items() if k != "parent_text"}
            metadata.update(matched_text=hit.document.text, matched_view=meta.get("view", ""))
            document = Document(text=meta["parent_text"], metadata=metadata)
        else:
            document = hit.document
        out.append(hit.model_copy(update={"document": document, "rank": len(out) + 1}))
        if keep and len(out) >= keep:
            break
    return out


class ParentsConfig(BaseModel):
    """Settings of ``retriever.parents``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    keep: int = Field(5, ge=0, le=1000, description="Parents returned; 0 = all.")


@register_node
class ParentsRetrieverNode(Node[ParentsConfig, HitsIn, ParentsOut]):
    """Map hits on views or child chunks to their parent records, deduplicated, best first."""

    type_name = "retriever.parents"
    display_name = "Parent Document Retriever"
    aliases = ("retriever", "parent", "small-to-big")
    category = "Retrieval"
    Config = ParentsConfig

    def run(self, inputs: HitsIn, ctx: RunContext) -> ParentsOut:
        hits = inputs["hits"]
        parents = return_parents(hits, self.config.keep)
        with_parent = sum(1 for h in hits if h.document.metadata.get("parent_id"))
        if hits and not with_parent:
            ctx.warn("no hit carries parent_id: connect hits of indexer.views or splitter.parent_child chunks")
        elif not hits:
            ctx.warn("no hits came in: nothing to map to parents")
        ctx.details.update({"hits_in": len(hits), "with_parent_id": with_parent, "parents": stage_rows(parents)})
        return {"hits": parents}
