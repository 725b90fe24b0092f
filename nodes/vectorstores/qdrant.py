"""Qdrant: embedded local mode on disk (``QdrantClient(path=...)``) or a server URL.

Each chunk is one point with a named dense vector (from the connected embedder) and a named sparse
BM25 vector (term frequencies with BM25 saturation; Qdrant applies the IDF itself through the
``idf`` modifier), so one collection serves dense, sparse and Qdrant's own hybrid query (prefetch
dense top n + sparse top n, fused by RRF). Payloads follow LangChain's convention
(``page_content`` + ``metadata``) so collections written by LangChain-based tools read the same.
The collection's metadata records the embedder's ``model_id``; another embedder is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str
from flowbuilder.formats.n8n_table import LC, STORE_IN, STORE_OUT, index_locator
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.hybrid.fusion import fuse, stage_rows
from flowbuilder.nodes.hybrid.terms import english_stopwords, tokenize
from flowbuilder.nodes.vectorstores.common import (
    FOLDER_FIELD,
    SOURCE_FIELD,
    SYNC_DESCRIPTION,
    EmbeddingStore,
    StoredMatch,
    StoreIn,
    StoreNodeMixin,
    StoreOut,
    SyncMode,
    collection_name_problem,
    embed_array,
    finish_store_run,
    folder_address,
    models_mismatch_message,
    safe_suffix,
    store_details,
    store_inputs,
    sync_inputs,
)
from flowbuilder.registry import register_node
from flowbuilder.services import Embedder
from flowbuilder.trust.pathguard import PathKind
from flowbuilder.trust.providers import CredentialSlot

PROVIDER = "qdrant"
DENSE, SPARSE = "dense", "sparse"
MODEL_KEY = "flowbuilder:embedding_model"
SearchMode = Literal["hybrid", "dense", "sparse"]
_K1, _B, _AVG_LEN = 1.2, 0.75, 256.0  # FastEmbed's Qdrant/bm25 defaults, so scores look familiar
_SPARSE_SPACE = 2**31 - 1
_PAGE = 1000

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


_ID_NAMESPACE = uuid.UUID("6f1c1b1e-6b5a-4d3e-9a53-1f0b7c2a9d10")
ID_FIELD = "fb_id"
"""Payload field with the chunk's Flowbuilder id (``<source key>#<hash>``): Qdrant ids must be UUIDs."""


def point_id(doc_id: str) -> str:
    """The point's UUID, derived from the chunk id so the same chunk always lands on the same point."""
    return str(uuid.uuid5(_ID_NAMESPACE, doc_id))


def doc_id_of(point: Any) -> str:
    payload = getattr(point, "payload", None) or {}
    return str(payload.get(ID_FIELD) or point.id)


class SparseBM25:
    """Text to a sparse vector: hashed term ids, BM25-saturated term frequencies (IDF added by Qdrant)."""

    def __init__(self) -> None:
        self.stopwords = english_stopwords()

    @staticmethod
    def term_id(term: str) -> int:
        return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "big") % _SPARSE_SPACE

    def document(self, text: str) -> tuple[list[int], list[float]]:
        terms = tokenize(text, self.stopwords)
        counts = Counter(self.term_id(t) for t in terms)
        norm = _K1 * (1 - _B + _B * len(terms) / _AVG_LEN)
        ids = sorted(counts)
        return ids, [counts[i] * (_K1 + 1) / (counts[i] + norm) for i in ids]

    def query(self, text: str) -> tuple[list[int], list[float]]:
        ids = sorted({self.term_id(t) for t in tokenize(text, self.stopwords)})
        return ids, [1.0] * len(ids)


def local_client(path: Path) -> Any:
    """One client per folder for the whole process: embedded Qdrant allows a single opener per folder."""
    from qdrant_client import QdrantClient

    key = str(path.resolve())
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            if path.exists() and not path.is_dir():  # a flow's path may name any file (the schema fuzz found it)
                raise NodeError(f"{path} is a file; the store's path must be a folder (or empty for the default)")
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise NodeError(
                    f"Cannot create the embedded Qdrant store's folder {path}: {exc.strerror or exc}"
                ) from None
            try:
                client = QdrantClient(path=key)
            except Exception as exc:
                raise NodeError(
                    f"Cannot open the embedded Qdrant store at {path}: {exc}. Another program (or a Flowbuilder "
                    "server) may hold it; close it or choose another path."
                ) from None
            _clients[key] = client
        return client


def close_local_clients() -> None:
    """Release the embedded stores' folder locks (tests, shutdown)."""
    with _clients_lock:
        for client in _clients.values():
            client.close()
        _clients.clear()


def _forget_local_client(client: Any) -> None:
    """Close ``client`` and drop it from the per-folder cache, so the next run reads the folder again."""
    with _clients_lock:
        for key, cached in list(_clients.items()):
            if cached is client:
                del _clients[key]
    with contextlib.suppress(Exception):
        client.close()


class _CommitOnce:
    """A collection's sqlite connection whose ``with connection:`` blocks do not commit.

    qdrant-client's local mode wraps each point's write in ``with connection:``, i.e. one transaction
    (and one fsync, ~15-20 ms on this disk) per point. Seen through this, those blocks join one
    transaction that :func:`batched_writes` commits once for the whole batch."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def __enter__(self) -> sqlite3.Connection:
        return self._connection

    def __exit__(self, *exc: object) -> None:
        return None  # an error propagates; batched_writes rolls the whole batch back

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


_batch_locks: dict[int, threading.RLock] = {}


def _local_persistence(client: Any, collection: str) -> Any:
    """The embedded collection's persistence object (with its sqlite ``storage`` connection), or None for a
    server, an in-memory store, or a qdrant-client whose local mode is laid out differently."""
    collections = getattr(getattr(client, "_client", None), "collections", None)
    persistence = getattr(collections.get(collection), "storage", None) if isinstance(collections, dict) else None
    connection = getattr(persistence, "storage", None)
    return persistence if isinstance(connection, sqlite3.Connection | _CommitOnce) else None


@contextlib.contextmanager
def batched_writes(client: Any, collection: str) -> Iterator[None]:
    """Run the upserts/deletes inside as one sqlite transaction in embedded Qdrant (a no-op for a server,
    which takes a batch per request already). All or nothing: on an error after something was written the
    batch is rolled back and the client is dropped, because its in-memory points already include part of
    the batch; the next run reopens the folder, so memory and disk agree again."""
    persistence = _local_persistence(client, collection)
    if persistence is None:
        yield
        return
    with _clients_lock:
        lock = _batch_locks.setdefault(id(persistence), threading.RLock())
    with lock:
        connection = persistence.storage
        if isinstance(connection, _CommitOnce):  # already inside a batch on this thread
            yield
            return
        persistence.storage = _CommitOnce(connection)
        try:
            yield
            connection.commit()
        except BaseException:
            written = connection.in_transaction
            with contextlib.suppress(Exception):
                connection.rollback()
            persistence.storage = connection
            if written:
                _forget_local_client(client)
            raise
        finally:
            persistence.storage = connection


def server_client(url: str, api_key: str | None) -> Any:
    from qdrant_client import QdrantClient
    from qdrant_client.http.exceptions import UnexpectedResponse

    try:
        client = QdrantClient(url=url, api_key=api_key or None, timeout=30, check_compatibility=False)
        client.get_collections()
    except UnexpectedResponse as exc:
        if exc.status_code in (401, 403):
            raise ProviderError(
                PROVIDER, f"the server at {url} refused the API key ({exc.status_code}); check the api_key credential."
            ) from None
        raise ProviderError(PROVIDER, f"the server at {url} answered {exc.status_code}: {exc.reason_phrase}") from None
    except Exception as exc:
        raise ProviderError(
            PROVIDER,
            f"no Qdrant server answers at {url} ({type(exc).__name__}); start one or clear url to use "
            "the embedded store.",
        ) from None
    return client


def open_collection(client: Any, name: str, embedder: Embedder, location: str) -> None:
    """Create ``name`` with dense + sparse vectors, or check the existing one was filled by this embedder."""
    from qdrant_client import models

    problem = collection_name_problem(name)
    if problem:
        raise NodeError(problem)
    where = f"Qdrant collection '{name}' at {location}"
    suggestion = f"{name}-{safe_suffix(embedder.model_id)}"[:255]
    if not client.collection_exists(name):
        client.create_collection(
            name,
            vectors_config={DENSE: models.VectorParams(size=int(embedder.dimension), distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata={MODEL_KEY: embedder.model_id},
        )
        return
    info = client.get_collection(name)
    params = info.config.params
    vectors = params.vectors if isinstance(params.vectors, dict) else {}
    if DENSE not in vectors or SPARSE not in (params.sparse_vectors or {}):
        raise NodeError(
            f"{where} has no '{DENSE}' dense and '{SPARSE}' sparse vectors (it was made by another tool). "
            f"Use a new collection name such as '{suggestion}'."
        )
    existing = (info.config.metadata or {}).get(MODEL_KEY)
    if existing is not None and existing != embedder.model_id:
        raise NodeError(models_mismatch_message(where, str(existing), embedder.model_id, suggestion))
    if int(vectors[DENSE].size) != int(embedder.dimension):
        raise NodeError(
            f"{where} holds {vectors[DENSE].size}-d vectors but embedder '{embedder.model_id}' makes "
            f"{embedder.dimension}-d ones. Use a new collection name such as '{suggestion}'."
        )


def qdrant_filter(where: dict[str, Any] | None) -> Any:
    """``{"record_id": "A"}`` as a Qdrant filter on the payload's metadata (equality or a list = any of)."""
    if not where:
        return None
    from qdrant_client import models

    conditions = []
    for key, value in where.items():
        match = models.MatchAny(any=list(value)) if isinstance(value, list) else models.MatchValue(value=value)
        conditions.append(models.FieldCondition(key=f"metadata.{key}", match=match))
    return models.Filter(must=conditions)


class QdrantStore(EmbeddingStore):
    """The VectorStore service of ``vectorstore.qdrant``.

    ``search`` scores depend on ``mode``: dense = cosine similarity; sparse = BM25 (saturated tf x
    Qdrant's IDF); hybrid = Qdrant's RRF score ``sum 1/(k + rank)`` over the dense and sparse
    prefetches, with each leg's rank and score in ``Hit.legs``.
    """

    default_batch_size = 256

    def __init__(
        self,
        client: Any,
        collection: str,
        embedder: Embedder,
        location: str,
        *,
        mode: SearchMode = "hybrid",
        prefetch: int = 20,
        rrf_k: int = 60,
    ) -> None:
        self.client = client
        self.name = collection
        self.embedder = embedder
        self.location = location
        self.mode: SearchMode = mode
        self.prefetch = prefetch
        self.rrf_k = rrf_k
        self.sparse = SparseBM25()

    def __repr__(self) -> str:
        return f"QdrantStore({self.name!r} at {self.location})"

    def count(self) -> int:
        return int(self.client.count(self.name, exact=True).count)

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        by_point = {point_id(i): i for i in ids}
        found: set[str] = set()
        points_ids = list(by_point)
        for start in range(0, len(points_ids), _PAGE):
            points = self.client.retrieve(self.name, ids=points_ids[start : start + _PAGE], with_payload=False)
            found.update(by_point[str(p.id)] for p in points)
        return found

    def all_ids(self) -> set[str]:
        return {doc_id for doc_id, _ in self._scroll([ID_FIELD])}

    def ids_of_sources(self, sources: Sequence[str]) -> set[str]:
        from qdrant_client import models

        condition = models.FieldCondition(key=SOURCE_FIELD, match=models.MatchAny(any=list(sources)))
        return {doc_id for doc_id, _ in self._scroll([ID_FIELD], models.Filter(must=[condition]))}

    def ids_in_folders(self, folders: Sequence[str], known_sources: Sequence[str] = ()) -> set[str]:
        from qdrant_client import models

        condition = models.FieldCondition(key=f"metadata.{FOLDER_FIELD}", match=models.MatchAny(any=list(folders)))
        return {doc_id for doc_id, _ in self._scroll([ID_FIELD], models.Filter(must=[condition]))}

    def all_documents(self) -> list[tuple[str, Document]]:
        """Every stored chunk (keyword indexes mirror the store through this)."""
        return [(doc_id, _document(payload)) for doc_id, payload in self._scroll(True)]

    def _scroll(self, payload: bool | list[str], where: Any = None) -> Iterator[tuple[str, dict[str, Any]]]:
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.name, scroll_filter=where, limit=_PAGE, offset=offset, with_payload=payload, with_vectors=False
            )
            for p in points:
                yield doc_id_of(p), p.payload or {}
            if offset is None:
                break

    def delete_ids(self, ids: Sequence[str]) -> None:
        from qdrant_client import models

        with batched_writes(self.client, self.name):
            for start in range(0, len(ids), _PAGE):
                selector = models.PointIdsList(points=[point_id(i) for i in ids[start : start + _PAGE]])
                self.client.delete(self.name, points_selector=selector)

    def _write(self, part: list[tuple[str, Document]], vectors: np.ndarray) -> None:
        from qdrant_client import models

        points = []
        for (doc_id, doc), vector in zip(part, vectors, strict=True):
            indices, values = self.sparse.document(doc.text)
            points.append(
                models.PointStruct(
                    id=point_id(doc_id),
                    vector={DENSE: vector.tolist(), SPARSE: models.SparseVector(indices=indices, values=values)},
                    payload={
                        "page_content": doc.text,
                        "metadata": doc.metadata,
                        ID_FIELD: doc_id,
                        SOURCE_FIELD: doc.source,
                    },
                )
            )
        try:
            with batched_writes(self.client, self.name):
                self.client.upsert(self.name, points=points, wait=True)
        except sqlite3.Error as exc:
            raise NodeError(
                f"writing {len(points)} chunks to Qdrant collection '{self.name}' at {self.location} failed: {exc}; "
                "none of them was stored (the chunks written before are kept): run again to add the rest."
            ) from None

    def _query(self, vector: Sequence[float], k: int, where: dict[str, Any] | None) -> Iterator[StoredMatch]:
        response = self.client.query_points(
            self.name, query=list(vector), using=DENSE, limit=k, query_filter=qdrant_filter(where), with_payload=True
        )
        for p in response.points:
            doc = _document(p.payload)
            yield doc_id_of(p), float(p.score), doc.text, doc.metadata

    def _points(self, query: Any, using: str | None, k: int, where: dict[str, Any] | None, **kw: Any) -> list[Hit]:
        try:
            response = self.client.query_points(
                self.name, query=query, using=using, limit=k, query_filter=qdrant_filter(where), with_payload=True, **kw
            )
        except Exception as exc:
            raise ProviderError(PROVIDER, f"query on '{self.name}' failed: {exc}") from None
        return [
            Hit(document=_document(p.payload), score=float(p.score), rank=i, id=doc_id_of(p))
            for i, p in enumerate(response.points, start=1)
        ]

    def _vectors(self, query: str) -> tuple[list[float], Any]:
        """The dense vector and the sparse vector (None when no word of the question is a term) of a question."""
        from qdrant_client import models

        indices, values = self.sparse.query(query)
        sparse = models.SparseVector(indices=indices, values=values) if indices else None
        return self.embedder.embed_query(query), sparse

    def legs_for(
        self, query: str, k: int, where: dict[str, Any] | None, vectors: tuple[list[float], Any] | None = None
    ) -> dict[str, list[Hit]]:
        """The dense and sparse rankings of one question (the hybrid query's prefetches)."""
        dense, sparse = vectors or self._vectors(query)
        return {
            DENSE: self._points(dense, DENSE, k, where),
            SPARSE: self._points(sparse, SPARSE, k, where) if sparse is not None else [],
        }

    def hybrid(
        self, queries: Sequence[str], k: int, where: dict[str, Any] | None = None
    ) -> tuple[list[Hit], dict[str, list[Hit]]]:
        """Qdrant's own hybrid query: dense top n + sparse top n per question variant, fused by RRF in
        Qdrant. Returns the hits (legs filled from the separate rankings) and those rankings."""
        from qdrant_client import models

        prefetches = []
        rankings: dict[str, list[Hit]] = {}
        filt = qdrant_filter(where)
        for number, query in enumerate(queries, start=1):
            suffix = f":q{number}" if len(queries) > 1 else ""
            dense, sparse = vectors = self._vectors(query)
            prefetches.append(models.Prefetch(query=dense, using=DENSE, limit=self.prefetch, filter=filt))
            if sparse is not None:
                prefetches.append(models.Prefetch(query=sparse, using=SPARSE, limit=self.prefetch, filter=filt))
            legs = self.legs_for(query, self.prefetch, where, vectors)
            rankings.update({f"{name}{suffix}": hits for name, hits in legs.items()})
        # Qdrant counts positions from 0 (1/(k + position)); k + 1 there is 1/(k + rank) here, as in retriever.fusion
        rrf = models.RrfQuery(rrf=models.Rrf(k=self.rrf_k + 1))
        fused_by_qdrant = self._points(rrf, None, k, None, prefetch=prefetches)
        # our own RRF over the same rankings explains each score (and checks Qdrant's arithmetic)
        explained = {h.id: h for h in fuse(list(rankings.values()), names=list(rankings), k=self.rrf_k, keep=0)}
        hits = []
        for hit in fused_by_qdrant:
            mine = explained.get(hit.id)
            update = {"legs": mine.legs, "explain": mine.explain} if mine else {}
            hits.append(hit.model_copy(update=update))
        return hits, rankings

    def search(
        self, query: str, k: int, where: dict[str, Any] | None = None, min_score: float | None = None
    ) -> list[Hit]:
        if k < 1:
            raise NodeError(f"k must be at least 1, got {k}.")
        if self.mode == "dense":
            return self.search_vector(self.embedder.embed_query(query), k, where, min_score)
        hits = self.legs_for(query, k, where)[SPARSE] if self.mode == "sparse" else self.hybrid([query], k, where)[0]
        return [h for h in hits if min_score is None or h.score >= min_score]


def _document(payload: dict[str, Any] | None) -> Document:
    payload = payload or {}
    metadata = payload.get("metadata")
    return Document(
        text=str(payload.get("page_content") or ""), metadata=dict(metadata) if isinstance(metadata, dict) else {}
    )


class QdrantConfig(BaseModel):
    """Settings of ``vectorstore.qdrant``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    collection: str = Field("flowbuilder", description="Collection name: letters, digits, '.', '_', '-'.")
    path: str = Field("", description="Folder of the embedded store; empty = this flow's own folder in the data dir.")
    url: str = Field("", description="Set to use a Qdrant server (e.g. http://localhost:6333) instead of the folder.")
    search: SearchMode = Field("hybrid", description="hybrid: dense + sparse fused by RRF in Qdrant; or one of them.")
    k: int = Field(4, ge=1, le=1000, description="Hits returned for the query.")
    prefetch: int = Field(20, ge=1, le=1000, description="Hybrid: dense top n and sparse top n fetched per question.")
    rrf_k: int = Field(60, ge=1, le=10000, description="Hybrid: RRF constant k in 1/(k + rank).")
    min_score: float | None = Field(None, description="Drop hits scoring below this (meaning depends on search).")
    where: dict[str, Any] = Field(
        default_factory=dict, description='Metadata filter (equality), e.g. {"view": "whole"}.'
    )
    batch_size: int = Field(256, ge=1, description="Chunks embedded and added per batch.")
    sync: SyncMode = Field("incremental", description=SYNC_DESCRIPTION)


@register_node
class QdrantNode(StoreNodeMixin, Node[QdrantConfig, StoreIn, StoreOut]):
    """Store chunks in Qdrant (embedded folder or server) with dense + BM25 sparse vectors; hybrid search."""

    type_name = "vectorstore.qdrant"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "vectorstore.qdrant",
                LC + "vectorStoreQdrant",
                (1, 1.1, 1.2, 1.3),
                inputs=STORE_IN,
                outputs=STORE_OUT,
                hook="store",
                preset={"search": "dense"},  # n8n searches dense vectors only
                params=(Param("collection", "qdrantCollection", "", to_ours=nonempty_str, to_theirs=index_locator),),
                fixed={"options": {}},
            ),
        ),
        "langflow": (
            Adapter(
                "vectorstore.qdrant",
                "Qdrant",
                also=("QdrantVectorStoreComponent",),
                display="Qdrant",
                **LF.STORE_PORTS,
                params=(
                    Param("collection", "collection_name", to_ours=nonempty_str),
                    Param("url", "url", to_ours=nonempty_str),
                    Param("path", "path", to_ours=nonempty_str),
                    LF.int_param("k", "number_of_results", 4),
                ),
                preset={"search": "dense"},
                ignore=(
                    "host",
                    "port",
                    "grpc_port",
                    "prefix",
                    "timeout",
                    "distance_func",
                    "content_payload_key",
                    "metadata_payload_key",
                    "search_type",
                ),
                extra={**LF.STORE_EXTRA, "secret": "api_key"},
            ),
        ),
        "flowise": (
            FW.store(
                "vectorstore.qdrant",
                "qdrant",
                Param("collection", "qdrantCollection", to_ours=nonempty_str),
                Param("url", "qdrantServerUrl", to_ours=nonempty_str),
                preset={"search": "dense"},
            ),
        ),
    }

    capabilities = frozenset({Capability.LOCAL_ONLY})
    display_name = "Qdrant Vector Store"
    aliases = ("Qdrant", "vector store", "vector db", "database")
    category = "Vector stores"
    Config = QdrantConfig
    credential_slots = (
        CredentialSlot("api_key", PROVIDER, required=False, description="Only for a Qdrant server that needs a key."),
    )

    @classmethod
    def config_problems(cls, config: QdrantConfig) -> list[tuple[str | None, str]]:
        problem = collection_name_problem(config.collection)
        return [(None, problem)] if problem else []

    @classmethod
    def config_paths(cls, config: QdrantConfig) -> list[tuple[str, str, PathKind]]:
        return [] if config.url or not config.path.strip() else [("path", config.path, "store")]

    @classmethod
    def collection_address(cls, config: QdrantConfig, base_dir: Path | None) -> str | None:
        """``qdrant:<folder or url>:<collection>``: two nodes with the same address share one collection."""
        if config.url:
            return f"qdrant:{config.url.rstrip('/')}:{config.collection}"
        return folder_address("qdrant", config.path, base_dir, config.collection)

    @classmethod
    def reachable_by_workers(cls, config: QdrantConfig) -> bool:
        return bool(config.url.strip())

    def run(self, inputs: StoreIn, ctx: RunContext) -> StoreOut:
        c = self.config
        embedder, query, documents = store_inputs(inputs)
        if c.url:
            location = c.url
            client = server_client(c.url, ctx.secret("api_key") if ctx.has_secret("api_key") else None)
        else:
            path = ctx.resolve_path(c.path, "store", "path") if c.path else ctx.state_dir / "qdrant"
            location = str(path)
            client = local_client(path)
        open_collection(client, c.collection, embedder, location)
        store = QdrantStore(client, c.collection, embedder, location, mode=c.search, prefetch=c.prefetch, rrf_k=c.rrf_k)
        report = sync_inputs(store, inputs, documents, ctx, mode=c.sync, batch_size=c.batch_size)
        ctx.headline = finish_store_run(store, report, ctx, label=f"collection {c.collection}")
        sample = report.sample if report else None
        outputs: StoreOut = {"store": store}
        questions = [query] if query else []
        if questions:
            if c.search == "hybrid":
                hits, rankings = store.hybrid(questions, c.k, c.where or None)
                ctx.details["stages"] = {name: stage_rows(found) for name, found in rankings.items()}
            else:
                hits = [h for q in questions for h in store.search(q, c.k, c.where or None, None)]
                hits = fuse([hits], names=[c.search], keep=c.k) if len(questions) > 1 else hits
            outputs["hits"] = [h for h in hits if c.min_score is None or h.score >= c.min_score]
            ctx.details["hits"] = stage_rows(outputs["hits"])
            sample = sample or embedder.embed_query(questions[0])
        if sample is None and documents:
            sample = embed_array(embedder, [documents[0].text])[0].tolist()
        score = {
            "hybrid": f"Qdrant RRF 1/({c.rrf_k} + rank) over dense (cosine) and sparse (BM25) top {c.prefetch}",
            "dense": "cosine similarity",
            "sparse": "BM25 (saturated term frequency x Qdrant IDF)",
        }[c.search]
        ctx.details.update(
            {
                "collection": c.collection,
                "location": location,
                **store_details(store, sample, score=score, count=ctx.details["count"]),
            }
        )
        return outputs
