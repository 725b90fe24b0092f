"""Chroma: an embedded on-disk store (PersistentClient) or a Chroma server (HttpClient).

Vectors always come from the connected embedder; Chroma's own default embedding function is never
used (it would download a model). The collection's metadata records the embedder's ``model_id`` and
``dimension`` so a collection is never searched with vectors of another model.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import Document
from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str, positive_int, to_str
from flowbuilder.formats.n8n_table import LC, STORE_IN, STORE_OUT
from flowbuilder.node import Node, RunContext
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
    and_where,
    answer_query,
    collection_name_problem,
    decode_metadata,
    encode_metadata,
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
from flowbuilder.trust.egress import Destination
from flowbuilder.trust.pathguard import PathKind

PROVIDER = "chroma"
MODEL_KEY = "flowbuilder:embedding_model"
DIMENSION_KEY = "flowbuilder:dimension"
_ID_LOOKUP_BATCH = 1000


class ChromaStore(EmbeddingStore):
    """The VectorStore service of ``vectorstore.chroma``.

    ``search`` returns :class:`Hit` objects whose ``score`` is the **cosine similarity** of the query
    and the chunk, ``1 - cosine distance`` (the collection uses ``hnsw:space = cosine``): 1 means the
    same direction, 0 unrelated. ``min_score`` drops hits below it; ``where`` is a Chroma metadata
    filter (``{"source": "a.csv"}``, ``{"row": {"$lte": 10}}``; several keys are combined with $and).
    """

    default_batch_size = 256

    def __init__(self, collection: Any, embedder: Embedder, location: str) -> None:
        self.collection = collection
        self.embedder = embedder
        self.name: str = collection.name
        self.location = location

    def __repr__(self) -> str:
        return f"ChromaStore({self.name!r} at {self.location})"

    def count(self) -> int:
        return int(self.collection.count())

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _ID_LOOKUP_BATCH):
            result = self.collection.get(ids=list(ids[start : start + _ID_LOOKUP_BATCH]), include=[])
            found.update(result["ids"])
        return found

    def all_ids(self) -> set[str]:
        return set(self.collection.get(include=[])["ids"])

    def ids_of_sources(self, sources: Sequence[str]) -> set[str]:
        # ``source`` too: chunks stored before fb_source existed still belong to their source
        where = {"$or": [{SOURCE_FIELD: {"$in": list(sources)}}, {"source": {"$in": list(sources)}}]}
        return set(self.collection.get(where=where, include=[])["ids"])

    def ids_in_folders(self, folders: Sequence[str], known_sources: Sequence[str] = ()) -> set[str]:
        return set(self.collection.get(where={FOLDER_FIELD: {"$in": list(folders)}}, include=[])["ids"])

    def delete_ids(self, ids: Sequence[str]) -> None:
        size = _max_batch(self.collection)
        for start in range(0, len(ids), size):
            self.collection.delete(ids=list(ids[start : start + size]))

    def _batch_size(self, requested: int) -> int:
        return max(1, min(requested, _max_batch(self.collection)))

    def _write(self, part: list[tuple[str, Document]], vectors: np.ndarray) -> None:
        # upsert, not add: a batch written twice (a cluster retrying a batch whose worker died after
        # writing part of it, two workers with the same chunk) leaves each id once, as it was
        self.collection.upsert(
            ids=[doc_id for doc_id, _ in part],
            embeddings=vectors,
            documents=[doc.text for _, doc in part],
            metadatas=[{**encode_metadata(doc.metadata), SOURCE_FIELD: doc.source} for _, doc in part],
        )

    def _query(self, vector: Sequence[float], k: int, where: dict[str, Any] | None) -> Iterator[StoredMatch]:
        try:
            result = self.collection.query(
                query_embeddings=[list(vector)],
                n_results=k,
                where=and_where(where),
                include=["documents", "metadatas", "distances"],
            )
        except Exception as exc:
            raise _query_error(exc, where) from None
        ids = result["ids"][0]
        documents = (result.get("documents") or [[]])[0] or []
        metadatas = (result.get("metadatas") or [[]])[0] or []
        distances = (result.get("distances") or [[]])[0] or []
        for doc_id, text, metadata, distance in zip(ids, documents, metadatas, distances, strict=False):
            yield doc_id, 1.0 - float(distance), text or "", decode_metadata(dict(metadata or {}))


def _max_batch(collection: Any) -> int:
    try:
        return int(collection._client.get_max_batch_size())
    except Exception:
        return 5000


def _query_error(exc: Exception, where: dict[str, Any] | None) -> NodeError:
    if where:
        return NodeError(
            f"Chroma rejected the metadata filter {where}: {exc}. Use e.g. {{'source': 'file.csv'}} or "
            "{'row': {'$lte': 10}} (operators $eq $ne $gt $gte $lt $lte $in $nin)."
        )
    return ProviderError(PROVIDER, f"query failed: {exc}")


_SETTINGS_KW: dict[str, Any] = {"anonymized_telemetry": False}


LOCK_NAME = "flowbuilder.lock"
_LOCK_TIMEOUT_S = 600.0


_LOCK_POLL_S = 0.5


@contextlib.contextmanager
def persist_lock(path: Path, ctx: RunContext | None = None) -> Iterator[None]:
    """Hold the persist directory's lock (a file in it): two runs creating or filling the same embedded
    store take turns; without it, both create Chroma's tables at once and one fails ("table already exists").
    While another run (maybe another process) holds it, the wait is said in the run log and on the card, and
    a cancel ends it; after ``_LOCK_TIMEOUT_S`` the node fails naming the lock file."""
    from filelock import FileLock, Timeout

    if path.exists() and not path.is_dir():
        raise NodeError(f"{path} is a file; the persist directory must be a folder (or empty for the default)")
    path.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path / LOCK_NAME))
    started = time.monotonic()
    said = False
    while True:
        try:
            lock.acquire(timeout=_LOCK_POLL_S)
            break
        except Timeout:
            waited = time.monotonic() - started
            if waited >= _LOCK_TIMEOUT_S:
                raise NodeError(
                    f"Another run has held the Chroma store at {path} for {_LOCK_TIMEOUT_S:.0f} s; wait for it to "
                    f"finish or delete {path / LOCK_NAME} if no run is active."
                ) from None
            if ctx is not None:
                if not said:  # once in the log; the card's progress line says it while it lasts
                    ctx.log(f"Waiting for another run using the Chroma store at {path} (cancel to stop waiting).")
                    said = True
                ctx.progress(0, 0, f"waiting {waited:.0f} s for another run using this store")
    try:
        yield
    finally:
        lock.release()


def persistent_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    path.mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=str(path), settings=Settings(**_SETTINGS_KW))
    except Exception as exc:
        raise NodeError(f"Cannot open the Chroma store at {path}: {exc}. Choose another persist_directory.") from None


def http_client(host: str, port: int) -> Any:
    import chromadb
    from chromadb.config import Settings

    try:
        client = chromadb.HttpClient(host=host, port=port, settings=Settings(**_SETTINGS_KW))
        client.heartbeat()
    except Exception:
        raise ProviderError(
            PROVIDER,
            f"no Chroma server is reachable at http://{host}:{port}: start one with "
            f"`chroma run --host {host} --port {port} --path <dir>`, or clear server_host to use the embedded store.",
        ) from None
    return client


def open_collection(client: Any, name: str, embedder: Embedder, location: str) -> Any:
    """Get or create ``name``; refuse a collection that another embedder filled."""
    import chromadb.errors

    problem = collection_name_problem(name)
    if problem:
        raise NodeError(problem)
    try:
        collection = client.get_collection(name, embedding_function=None)
    except chromadb.errors.NotFoundError:
        metadata = {MODEL_KEY: embedder.model_id, DIMENSION_KEY: int(embedder.dimension), "hnsw:space": "cosine"}
        try:
            return client.create_collection(name, metadata=metadata, embedding_function=None)
        except chromadb.errors.ChromaError:
            collection = client.get_collection(name, embedding_function=None)  # created meanwhile
    metadata = collection.metadata or {}
    existing = metadata.get(MODEL_KEY)
    suggestion = f"{name}-{safe_suffix(embedder.model_id)}"[:512]
    where = f"Chroma collection '{name}' at {location}"
    if existing is not None and existing != embedder.model_id:
        raise NodeError(models_mismatch_message(where, str(existing), embedder.model_id, suggestion))
    dimension = metadata.get(DIMENSION_KEY)
    if dimension is not None and int(str(dimension)) != int(embedder.dimension):
        raise NodeError(
            f"{where} holds {dimension}-d vectors but embedder '{embedder.model_id}' makes {embedder.dimension}-d "
            f"ones. Use a new collection name such as '{suggestion}'."
        )
    if existing is None and collection.count() > 0:
        raise NodeError(
            f"{where} was not created by Flowbuilder and does not say which embedder filled it. "
            f"Use a new collection name such as '{suggestion}'."
        )
    return collection


class ChromaConfig(BaseModel):
    """Settings of ``vectorstore.chroma``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    collection: str = Field("flowbuilder", description="Collection name: 3-512 of letters, digits, '.', '_', '-'.")
    persist_directory: str = Field(
        "",
        description="Folder of the embedded store (relative to the flow file); empty = this flow's own folder in "
        "the data dir.",
    )
    server_host: str = Field("", description="Set to use a Chroma server (chroma run) instead of the embedded store.")
    server_port: int = Field(8000, ge=1, le=65535, description="Port of the Chroma server.")
    k: int = Field(4, ge=1, le=1000, description="Hits returned for the query.")
    min_score: float | None = Field(None, description="Drop hits whose cosine similarity is below this.")
    where: dict[str, Any] = Field(default_factory=dict, description='Metadata filter, e.g. {"source": "a.csv"}.')
    batch_size: int = Field(256, ge=1, description="Chunks embedded and added per batch.")
    sync: SyncMode = Field("incremental", description=SYNC_DESCRIPTION)


def chroma_location(config: ChromaConfig, base_dir: Path | None, data_dir: Path) -> tuple[str, Path | None]:
    """``(location, persist path or None for a server)``: where this node's collection lives; ``data_dir`` is where
    default stores live (a run's :attr:`~flowbuilder.node.RunContext.state_dir`: the flow's own folder)."""
    if config.server_host:
        return f"http://{config.server_host}:{config.server_port}", None
    from flowbuilder.trust.places import resolve_path

    path = resolve_path(config.persist_directory, base_dir) if config.persist_directory else data_dir / "chroma"
    return str(path), path


@register_node
class ChromaNode(StoreNodeMixin, Node[ChromaConfig, StoreIn, StoreOut]):
    """Store chunks in Chroma (embedded on disk or a server) and search them by cosine similarity."""

    type_name = "vectorstore.chroma"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "vectorstore.chroma",
                LC + "vectorStoreInMemory",
                (1, 1.1),
                inputs=STORE_IN,
                outputs=STORE_OUT,
                hook="store",
                params=(Param("collection", "memoryKey", "vector_store_key"),),
                note="n8n's in-memory store becomes an embedded Chroma collection",
                fixed={"options": {}},
            ),
        ),
        "langflow": (
            Adapter(
                "vectorstore.chroma",
                "Chroma",
                also=("ChromaVectorStoreComponent",),
                display="Chroma DB",
                **LF.STORE_PORTS,
                params=(
                    Param("collection", "collection_name", to_ours=nonempty_str),
                    Param("persist_directory", "persist_directory", to_ours=to_str),
                    LF.int_param("k", "number_of_results", 4),
                    Param("server_host", "chroma_server_host", to_ours=nonempty_str),
                    Param(
                        "server_port", "chroma_server_http_port", to_ours=positive_int, widget="IntInput", kind="int"
                    ),
                ),
                ignore=(
                    "chroma_server_grpc_port",
                    "chroma_server_ssl_enabled",
                    "search_type",
                    "allow_duplicates",
                    "chroma_server_cors_allow_origins",
                    "limit",
                ),
                extra=LF.STORE_EXTRA,
            ),
        ),
        "flowise": (
            FW.store(
                "vectorstore.chroma",
                "chroma",
                Param("collection", "collectionName", to_ours=nonempty_str),
                Param("server_host", "chromaURL", to_ours=nonempty_str),
            ),
            FW.store(
                "vectorstore.chroma",
                "memoryVectorStore",
                note="Flowise's in-memory store: an embedded Chroma collection here (kept on disk between runs)",
            ),
            FW.store(
                "vectorstore.chroma",
                "faiss",
                ignore=("basePath",),
                note="a FAISS index: an embedded Chroma collection here (the index folder is not read)",
            ),
        ),
        "dify": (
            # The ports a swapped knowledge base has (what --local rewires its placeholder's links onto).
            Adapter(
                "vectorstore.chroma",
                "dataset",
                imports=False,
                export=False,
                inputs={"documents": "documents", "embedder": "embedder", "query": "query"},
                outputs={"hits": "result", "store": "store"},
            ),
        ),
    }

    capabilities = frozenset({Capability.LOCAL_ONLY, Capability.OFFLINE_SWAP})
    display_name = "Chroma Vector Store"
    aliases = ("Chroma DB", "vector store", "vector db", "database", "index")
    category = "Vector stores"
    Config = ChromaConfig

    @classmethod
    def config_problems(cls, config: ChromaConfig) -> list[tuple[str | None, str]]:
        problem = collection_name_problem(config.collection)
        return [(None, problem)] if problem else []

    @classmethod
    def config_paths(cls, config: ChromaConfig) -> list[tuple[str, str, PathKind]]:
        return (
            []
            if config.server_host or not config.persist_directory.strip()
            else [("persist_directory", config.persist_directory, "store")]
        )

    @classmethod
    def destinations(cls, config: ChromaConfig) -> list[Destination]:
        host = config.server_host.strip()
        if not host:
            return []
        bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if any(ch in bare for ch in "/@?#[]") or (":" in bare and not host.startswith("[")):
            raise ValueError(
                f"'server_host' takes a host name such as 127.0.0.1 (the port is 'server_port'), not {host[:80]!r}"
            )
        return [Destination("server_host", f"http://{host}:{config.server_port}", "chroma", local=True)]

    @classmethod
    def reachable_by_workers(cls, config: ChromaConfig) -> bool:
        return bool(config.server_host.strip())

    @classmethod
    def collection_address(cls, config: ChromaConfig, base_dir: Path | None) -> str | None:
        """``chroma:<location>:<collection>``: two nodes with the same address share one collection."""
        if config.server_host:
            return f"chroma:http://{config.server_host}:{config.server_port}:{config.collection}"
        return folder_address("chroma", config.persist_directory, base_dir, config.collection)

    def run(self, inputs: StoreIn, ctx: RunContext) -> StoreOut:
        c = self.config
        embedder, query, documents = store_inputs(inputs)
        problem = collection_name_problem(c.collection)
        if problem:
            raise NodeError(problem)
        location, path = chroma_location(c, ctx.base_dir, ctx.state_dir)
        if path is not None and c.persist_directory:
            ctx.check_path(path, "store", "persist_directory")
        with persist_lock(path, ctx) if path is not None else contextlib.nullcontext():
            client = persistent_client(path) if path is not None else http_client(c.server_host, c.server_port)
            store = ChromaStore(open_collection(client, c.collection, embedder, location), embedder, location)
            report = sync_inputs(store, inputs, documents, ctx, mode=c.sync, batch_size=c.batch_size)
        ctx.headline = finish_store_run(store, report, ctx, label=f"collection {c.collection}")
        sample = report.sample if report else None
        if sample is None and documents:
            sample = embedder.embed_documents([documents[0].text])[0]  # cached: nothing new is embedded
        outputs, sample = answer_query(store, query, k=c.k, where=c.where, min_score=c.min_score, sample=sample)
        score = "cosine similarity (1 - cosine distance)"
        ctx.details.update(
            {
                "collection": c.collection,
                "location": location,
                **store_details(store, sample, score=score, count=ctx.details["count"]),
            }
        )
        return outputs
