"""Keyword retrieval: BM25 (``bm25s``) or plain keyword overlap, over the chunks a store holds.

The index mirrors its source. When a vector store is connected, the chunks are read back from it
(so a store synced incrementally or fully, with rows deleted, gives the same index); otherwise the
``documents`` input is indexed. The index is saved next to the store's data (or under the data dir)
with a signature of the chunk ids and the scorer's settings: a restart with unchanged content loads it
from disk instead of rebuilding, and any change to the content rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.hybrid.fusion import fuse, stage_rows
from flowbuilder.nodes.hybrid.terms import english_stopwords, tokenize
from flowbuilder.nodes.vectorstores.common import decode_metadata, unique_documents
from flowbuilder.portvalues import Chunks, Hits, Text
from flowbuilder.registry import register_node
from flowbuilder.services import Retriever, VectorStore

Scorer = Literal["bm25", "overlap"]
LEG = "keyword"
_INDEX_FORMAT = 1
_PAGE = 1000


class KeywordIndex:
    """A keyword index over fixed chunks. ``search`` returns hits with the raw scorer score:
    BM25 (k1, b) or overlap = the share of the question's distinct terms found in the chunk (0..1)."""

    def __init__(
        self,
        ids: Sequence[str],
        docs: Sequence[Document],
        *,
        scorer: Scorer = "bm25",
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: bool = True,
        bm25: Any = None,
    ) -> None:
        self.ids = list(ids)
        self.docs = list(docs)
        self.scorer = scorer
        self.k1, self.b = k1, b
        self.stopwords = english_stopwords() if stopwords else frozenset()
        self.use_stopwords = stopwords
        self._terms: list[frozenset[str]] = []
        self._bm25 = bm25
        if scorer == "overlap":
            self._terms = [frozenset(tokenize(d.text, self.stopwords)) for d in self.docs]
        elif bm25 is None and self.docs:
            import bm25s

            self._bm25 = bm25s.BM25(k1=k1, b=b)
            corpus = [tokenize(d.text, self.stopwords) or ["\x00empty"] for d in self.docs]
            self._bm25.index(corpus, show_progress=False)

    def __len__(self) -> int:
        return len(self.docs)

    def settings(self) -> dict[str, Any]:
        return {"format": _INDEX_FORMAT, "scorer": self.scorer, "k1": self.k1, "b": self.b, "stop": self.use_stopwords}

    def scores(self, query: str) -> np.ndarray:
        terms = tokenize(query, self.stopwords)
        if not self.docs:
            return np.zeros(0, dtype=np.float32)
        if self.scorer == "overlap":
            wanted = set(terms)
            if not wanted:
                return np.zeros(len(self.docs), dtype=np.float32)
            return np.array([len(wanted & t) / len(wanted) for t in self._terms], dtype=np.float32)
        known = [t for t in terms if t in self._bm25.vocab_dict]
        if not known:
            return np.zeros(len(self.docs), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(known), dtype=np.float32)

    def search(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Hit]:
        """The ``k`` best chunks with a score above 0 (a chunk sharing no term is not a match)."""
        scores = self.scores(query)
        if where:
            mask = np.array([_matches(d.metadata, where) for d in self.docs], dtype=bool)
            scores = np.where(mask, scores, 0.0)
        if not len(scores):
            return []
        count = min(k, int((scores > 0).sum()))
        if count == 0:
            return []
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.lexsort((top, -scores[top]))]  # score desc, then corpus order for ties
        hits = []
        for rank, i in enumerate(top, start=1):
            score = float(scores[i])
            hits.append(
                Hit(
                    document=self.docs[i],
                    score=score,
                    rank=rank,
                    id=self.ids[i],
                    legs={LEG: {"rank": rank, "score": score}},
                )
            )
        return hits

    def save(self, folder: Path, signature: str) -> None:
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with (tmp / "docs.jsonl").open("w", encoding="utf-8") as out:
            for doc_id, doc in zip(self.ids, self.docs, strict=True):
                out.write(json.dumps({"id": doc_id, "text": doc.text, "metadata": doc.metadata}, default=str) + "\n")
        if self._bm25 is not None:
            self._bm25.save(str(tmp / "bm25"))
        (tmp / "index.json").write_text(json.dumps({"signature": signature, **self.settings()}), encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)

    @classmethod
    def load(cls, folder: Path, signature: str) -> KeywordIndex | None:
        """The saved index if its signature matches, else None (missing, stale or unreadable)."""
        try:
            info = json.loads((folder / "index.json").read_text(encoding="utf-8"))
            if info.get("signature") != signature or info.get("format") != _INDEX_FORMAT:
                return None
            ids, docs = [], []
            for line in (folder / "docs.jsonl").read_text(encoding="utf-8").splitlines():
                item = json.loads(line)
                ids.append(item["id"])
                docs.append(Document(text=item["text"], metadata=item["metadata"]))
            bm25 = None
            if info["scorer"] == "bm25" and docs:
                import bm25s

                bm25 = bm25s.BM25.load(str(folder / "bm25"))
        except (OSError, ValueError, KeyError):
            return None
        return cls(ids, docs, scorer=info["scorer"], k1=info["k1"], b=info["b"], stopwords=info["stop"], bm25=bm25)


def _matches(metadata: dict[str, Any], where: dict[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in where.items())


def signature_of(ids: Sequence[str], settings: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for doc_id in ids:
        digest.update(doc_id.encode() + b"\n")
    return digest.hexdigest()[:32]


def store_documents(store: Any) -> tuple[list[str], list[Document]]:
    """Every chunk a vector store holds, in a stable order. Stores offer ``all_documents()``; Chroma's
    collection is read directly. A store that cannot list its content (Pinecone) gets a clear error."""
    lister = getattr(store, "all_documents", None)
    if callable(lister):
        pairs = list(lister())
    elif getattr(store, "collection", None) is not None and hasattr(store.collection, "get"):
        pairs = []
        offset = 0
        while True:
            page = store.collection.get(include=["documents", "metadatas"], limit=_PAGE, offset=offset)
            for doc_id, text, meta in zip(page["ids"], page["documents"] or [], page["metadatas"] or [], strict=False):
                pairs.append((doc_id, Document(text=text or "", metadata=decode_metadata(dict(meta or {})))))
            if len(page["ids"]) < _PAGE:
                break
            offset += _PAGE
    else:
        raise NodeError(
            f"The connected store ({getattr(store, 'name', type(store).__name__)}) cannot list its chunks for a "
            "keyword index; connect the chunks to this node's 'documents' input instead."
        )
    pairs.sort(key=lambda pair: pair[0])
    return [p[0] for p in pairs], [p[1] for p in pairs]


def index_folder(store: Any, ctx: RunContext, name: str) -> Path:
    """Next to the store's data when it lives on disk, else in the flow's own folder in the data dir."""
    location = getattr(store, "location", None) if store is not None else None
    if isinstance(location, str) and location and not location.startswith("http") and Path(location).is_dir():
        return Path(location) / "keyword-index" / f"{getattr(store, 'name', 'store')}-{name}"
    return ctx.state_dir / "keyword-index" / name


def open_index(
    ids: list[str], docs: list[Document], folder: Path, *, scorer: Scorer, k1: float, b: float, stopwords: bool
) -> tuple[KeywordIndex, bool]:
    """``(index, loaded_from_disk)``: reuse the saved index when the chunks and settings are unchanged."""
    probe = {"format": _INDEX_FORMAT, "scorer": scorer, "k1": k1, "b": b, "stop": stopwords}
    signature = signature_of(ids, probe)
    saved = KeywordIndex.load(folder, signature)
    if saved is not None:
        return saved, True
    index = KeywordIndex(ids, docs, scorer=scorer, k1=k1, b=b, stopwords=stopwords)
    try:
        index.save(folder, signature)
    except OSError as exc:
        raise NodeError(f"Cannot save the keyword index in {folder}: {exc}. Check the folder's permissions.") from None
    return index, False


class KeywordRetriever:
    """The Retriever service of ``retriever.keyword``."""

    def __init__(self, index: KeywordIndex, k: int, where: dict[str, Any] | None = None) -> None:
        self.index, self.k, self.where = index, k, where or None

    def retrieve(self, query: str) -> list[Hit]:
        return self.index.search(query, self.k, self.where)


def queries_of(value: Any) -> list[str]:
    """The ``query`` input: one question, or several variants (a query rewriter's output)."""
    items = value if isinstance(value, list | tuple) else [value]
    queries = [q for q in items if isinstance(q, str) and q.strip()]
    if not queries:
        raise NodeError("Input 'query' is empty: connect a chat input or text with the question.")
    return queries


def _variants(hit: Hit) -> str:
    ranks = ", ".join(f"{name} #{int(leg['rank'])}" for name, leg in hit.legs.items() if name != LEG)
    return f"{hit.explain} ({ranks})"


class KeywordConfig(BaseModel):
    """Settings of ``retriever.keyword``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    scorer: Scorer = Field("bm25", description="bm25 (bm25s) or overlap: share of the question's words in the chunk.")
    k: int = Field(10, ge=1, le=1000, description="How many hits to return.")
    k1: float = Field(1.5, ge=0, le=10, description="BM25 term-frequency saturation.")
    b: float = Field(0.75, ge=0, le=1, description="BM25 length normalisation.")
    stopwords: bool = Field(True, description="Ignore English stopwords (the, is, of...).")
    index_name: str = Field(
        "default", pattern=r"^[A-Za-z0-9._-]{1,64}$", description="Name of the saved index (per store or data dir)."
    )
    where: dict[str, Any] = Field(
        default_factory=dict, description='Metadata filter (equality), e.g. {"view": "whole"}.'
    )


class KeywordIn(TypedDict):
    """The input ports of ``retriever.keyword``."""

    store: NotRequired[Annotated[VectorStore, "Index exactly the chunks this store holds."]]
    documents: NotRequired[Annotated[list[Chunks], "Or index these chunks."]]
    query: Annotated[Text, "The question (or a list of rewritten variants)."]


class KeywordOut(TypedDict):
    """The output ports of ``retriever.keyword``."""

    hits: Annotated[Hits, "Best matches first; score = BM25 or overlap share."]
    retriever: Annotated[Retriever, "The same search as a service."]


@register_node
class KeywordRetrieverNode(Node[KeywordConfig, KeywordIn, KeywordOut]):
    """Find chunks by keywords (BM25 or word overlap); the index mirrors the store and is kept on disk."""

    type_name = "retriever.keyword"
    display_name = "Keyword Retriever (BM25)"
    aliases = ("BM25", "keyword search", "full-text", "retriever")
    category = "Retrieval"
    capabilities = frozenset({Capability.KEYWORD_SEARCH})  # stands in for dense search while a store fills
    Config = KeywordConfig

    @classmethod
    def fingerprint(
        cls, config: KeywordConfig, base_dir: Path | None, run_input: str | None, inputs: Mapping[str, Any]
    ) -> str | None:
        """The store's size: a collection changed by another flow since the cached result re-runs the search
        (an edit that keeps the size is caught on the next change of the store node's inputs)."""
        store = inputs.get("store")
        count = getattr(store, "count", None)
        if not callable(count):
            return None
        try:
            return f"{getattr(store, 'name', '')}:{count()}"
        except Exception:  # an unreachable server: let run() report it
            return None

    def run(self, inputs: KeywordIn, ctx: RunContext) -> KeywordOut:
        c = self.config
        store = inputs.get("store")
        batches = inputs.get("documents")
        if store is not None:
            ids, docs = store_documents(store)
            origin = f"store {store.name}"
        elif batches is not None:
            ids, docs, _dupes = unique_documents(doc for batch in batches for doc in batch)
            origin = "documents input"
        else:
            raise NodeError("Connect a vector store (its chunks are indexed) or chunks to 'documents'.")
        queries = queries_of(inputs["query"])
        folder = index_folder(store, ctx, c.index_name)
        index, loaded = open_index(ids, docs, folder, scorer=c.scorer, k1=c.k1, b=c.b, stopwords=c.stopwords)
        retriever = KeywordRetriever(index, c.k, c.where)
        per_query = [retriever.retrieve(q) for q in queries]
        if len(per_query) == 1:
            hits = per_query[0]
        else:
            # Variants are merged by RRF; the hits stay one "keyword" leg for downstream fusion, the
            # per-variant ranks live in ``explain``.
            names = [f"q{i}" for i in range(1, len(per_query) + 1)]
            fused = fuse(per_query, names=names, keep=c.k)
            hits = [
                h.model_copy(update={"legs": {LEG: {"rank": h.rank, "score": h.score}}, "explain": _variants(h)})
                for h in fused
            ]
        if not docs:
            reason = str(getattr(store, "empty_reason", "") or "") if store is not None else ""
            ctx.warn(f"the keyword index is empty: {reason or f'the {origin} holds no chunks'}")
        ctx.details.update(
            {
                "score": "BM25 (bm25s)" if c.scorer == "bm25" else "keyword overlap (share of question words)",
                "indexed": len(index),
                "source": origin,
                "index_folder": str(folder),
                "index": "loaded from disk" if loaded else "built and saved",
                "queries": queries,
                "hits": stage_rows(hits),
            }
        )
        return {"hits": hits, "retriever": retriever}
