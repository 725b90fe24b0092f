"""Pinecone: a hosted index, reached by name (control plane lookup) or directly by its host.

Pinecone has no collection metadata, so every vector carries the embedder's ``model_id`` in its
metadata (``fb_embedding_model``); before use the node checks the index dimension against the
embedder and samples one stored vector to check the model, and refuses a mismatch. The chunk text is
kept in the ``text`` metadata field (LangChain's convention).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.data import Document
from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str, offline_store, to_str
from flowbuilder.formats.n8n_table import LC, STORE_IN, STORE_OUT, index_locator
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.vectorstores.common import (
    FOLDER_FIELD,
    MODEL_FIELD,
    SOURCE_FIELD,
    SYNC_DESCRIPTION,
    TEXT_FIELD,
    EmbeddingStore,
    StoredMatch,
    StoreIn,
    StoreNodeMixin,
    StoreOut,
    SyncMode,
    answer_query,
    decode_metadata,
    encode_metadata,
    finish_store_run,
    models_mismatch_message,
    source_key,
    store_details,
    store_inputs,
    sync_inputs,
)
from flowbuilder.registry import register_node
from flowbuilder.services import Embedder
from flowbuilder.trust.providers import CredentialSlot

PROVIDER = "pinecone"
INT_KEYS_FIELD = "fb_int_keys"
"""Pinecone stores numbers as floats; these keys are turned back into ints on the way out."""
_UPSERT_BATCH = 100  # Pinecone's recommended upsert size (requests must stay under 2 MB)
_FETCH_BATCH = 100  # ids travel in the query string of GET /vectors/fetch
_DELETE_BATCH = 1000  # Pinecone deletes at most 1000 ids per request


class PineconeStore(EmbeddingStore):
    """The VectorStore service of ``vectorstore.pinecone``.

    ``search`` returns hits whose ``score`` is the index metric's score as Pinecone computes it: the
    **cosine similarity** for a ``cosine`` index (the default), the dot product for ``dotproduct``.
    ``where`` is a Pinecone metadata filter (``{"source": "a.csv"}``, ``{"row": {"$lte": 10}}``).
    """

    default_batch_size = _UPSERT_BATCH

    def __init__(self, index: Any, embedder: Embedder, *, name: str, namespace: str, location: str) -> None:
        self.index = index
        self.embedder = embedder
        self.name = name
        self.namespace = namespace
        self.location = location

    def __repr__(self) -> str:
        return f"PineconeStore({self.name!r}, namespace={self.namespace!r})"

    def _call(self, what: str, func: Callable[..., Any], **kwargs: Any) -> Any:
        try:
            return func(**kwargs)
        except Exception as exc:
            raise pinecone_error(exc, self.location, what) from None

    def stats(self) -> Any:
        return self._call("describe_index_stats", self.index.describe_index_stats)

    def count(self) -> int:
        namespaces = self.stats().namespaces or {}
        summary = namespaces.get(self.namespace)
        return int(summary.vector_count) if summary is not None else 0

    def check_embedder(self) -> None:
        """Refuse an index of another dimension, or one whose vectors another embedder made."""
        stats = self.stats()
        dimension = getattr(stats, "dimension", None)
        if dimension and int(dimension) != int(self.embedder.dimension):
            raise NodeError(
                f"Pinecone index '{self.name}' holds {dimension}-d vectors but embedder '{self.embedder.model_id}' "
                f"makes {self.embedder.dimension}-d ones. Use an index of dimension {self.embedder.dimension}."
            )
        summary = (stats.namespaces or {}).get(self.namespace)
        if summary is None or not summary.vector_count:
            return
        probe = [0.0] * int(self.embedder.dimension)
        probe[0] = 1.0
        result = self._call(
            "query", self.index.query, vector=probe, top_k=1, namespace=self.namespace, include_metadata=True
        )
        for match in result.matches or []:
            existing = (match.metadata or {}).get(MODEL_FIELD)
            if existing and existing != self.embedder.model_id:
                where = f"Pinecone index '{self.name}' (namespace '{self.namespace}')"
                raise NodeError(
                    models_mismatch_message(where, existing, self.embedder.model_id, "another index or namespace")
                )

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _FETCH_BATCH):
            part = list(ids[start : start + _FETCH_BATCH])
            result = self._call("fetch", self.index.fetch, ids=part, namespace=self.namespace)
            found.update(result.vectors or {})
        return found

    def _list_ids(self, prefix: str | None) -> set[str]:
        """Ids by prefix through ``GET /vectors/list`` (pages followed by the SDK)."""
        pages = self._call("list", lambda: list(self.index.list(prefix=prefix, namespace=self.namespace)))
        return {item.id for page in pages for item in page.vectors if item.id}

    def all_ids(self) -> set[str]:
        return self._list_ids(None)

    def ids_of_sources(self, sources: Sequence[str]) -> set[str]:
        # Pinecone lists ids by prefix (its documented way to find a document's chunks), not by metadata
        found: set[str] = set()
        for source in sources:
            found |= self._list_ids(f"{source_key(source)}#")
        return found

    def ids_in_folders(self, folders: Sequence[str], known_sources: Sequence[str] = ()) -> set[str]:
        # Pinecone lists ids, not metadata: every chunk of a source shares its id prefix and its folder, so one
        # fetched chunk per source not already known says whether the whole source came from these folders
        known = {f"{source_key(source)}#" for source in known_sources}
        by_prefix: dict[str, list[str]] = {}
        for doc_id in self.all_ids():
            if doc_id[:17] not in known:
                by_prefix.setdefault(doc_id[:17], []).append(doc_id)
        wanted = set(folders)
        found: set[str] = set()
        firsts = [ids[0] for ids in by_prefix.values()]
        for start in range(0, len(firsts), _FETCH_BATCH):
            part = firsts[start : start + _FETCH_BATCH]
            result = self._call("fetch", self.index.fetch, ids=part, namespace=self.namespace)
            for doc_id, vector in (result.vectors or {}).items():
                if (getattr(vector, "metadata", None) or {}).get(FOLDER_FIELD) in wanted:
                    found.update(by_prefix[doc_id[:17]])
        return found

    def delete_ids(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _DELETE_BATCH):
            part = list(ids[start : start + _DELETE_BATCH])
            self._call("delete", self.index.delete, ids=part, namespace=self.namespace)

    def _write(self, part: list[tuple[str, Document]], vectors: np.ndarray) -> None:
        records = [
            (doc_id, vector.tolist(), self._metadata(doc)) for (doc_id, doc), vector in zip(part, vectors, strict=True)
        ]
        self._call("upsert", self.index.upsert, vectors=records, namespace=self.namespace)

    def _metadata(self, doc: Document) -> dict[str, Any]:
        metadata = encode_metadata(doc.metadata, allow_string_lists=True)
        int_keys = [k for k, v in metadata.items() if isinstance(v, int) and not isinstance(v, bool)]
        if int_keys:
            metadata[INT_KEYS_FIELD] = int_keys
        metadata[TEXT_FIELD] = doc.text
        metadata[MODEL_FIELD] = self.embedder.model_id
        metadata[SOURCE_FIELD] = doc.source
        return metadata

    def _query(self, vector: Sequence[float], k: int, where: dict[str, Any] | None) -> Iterator[StoredMatch]:
        kwargs: dict[str, Any] = {
            "vector": list(map(float, vector)),
            "top_k": k,
            "namespace": self.namespace,
            "include_metadata": True,
        }
        if where:
            kwargs["filter"] = dict(where)
        result = self._call("query", self.index.query, **kwargs)
        for match in result.matches or []:
            stored = dict(match.metadata or {})
            text = str(stored.pop(TEXT_FIELD, ""))
            int_keys = stored.pop(INT_KEYS_FIELD, None) or []
            metadata = decode_metadata(stored)
            for key in int_keys:
                if isinstance(metadata.get(key), float):
                    metadata[key] = int(metadata[key])
            yield match.id, float(match.score), text, metadata


def pinecone_error(exc: Exception, location: str, what: str) -> NodeError:
    """A Pinecone SDK exception as one line that says what to do (never the key)."""
    from pinecone.errors import exceptions as pe

    if isinstance(exc, NodeError):
        return exc
    if isinstance(exc, pe.UnauthorizedError | pe.ForbiddenError):
        status = getattr(exc, "status_code", 401)
        return ProviderError(
            PROVIDER,
            f"{location} rejected the API key ({status}): bind a valid key to the node's `api_key` slot "
            "(provider pinecone).",
        )
    if isinstance(exc, pe.RateLimitError):
        return ProviderError(
            PROVIDER, f"{location} is rate limiting (429, after retries): wait and run again, or ingest fewer chunks."
        )
    if isinstance(exc, pe.PineconeTimeoutError):
        return ProviderError(PROVIDER, f"{location} did not answer in time ({what}): check the host and try again.")
    if isinstance(exc, pe.PineconeConnectionError):
        return ProviderError(PROVIDER, f"Pinecone is not reachable at {location}: check `host` and the network.")
    if isinstance(exc, pe.ApiError):
        body = getattr(exc, "body", None)
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return ProviderError(PROVIDER, f"{what} at {location} failed ({exc.status_code}): {message or exc}")
    if isinstance(exc, pe.PineconeError):
        return ProviderError(PROVIDER, f"{what} at {location} failed: {exc}")
    return ProviderError(PROVIDER, f"{what} at {location} failed: {type(exc).__name__}: {exc}")


def connect(api_key: str, index_name: str, host: str) -> tuple[Any, str]:
    """``(index, location)``: by ``host`` straight to the data plane, else by name through the control plane."""
    import pinecone

    if host:
        if "://" not in host:
            host = f"https://{host}"
        try:
            client = pinecone.Pinecone(api_key=api_key)
            return client.Index(host=host), host
        except Exception as exc:
            raise pinecone_error(exc, host, "connect") from None
    if not index_name:
        raise NodeError("Set `index` (the index name) or `host` (the index host from the Pinecone console).")
    client = pinecone.Pinecone(api_key=api_key)
    location = f"Pinecone index '{index_name}'"
    try:
        return client.index(name=index_name), location
    except Exception as exc:
        from pinecone.errors import exceptions as pe

        if isinstance(exc, pe.NotFoundError):
            try:
                names = sorted(i.name for i in client.indexes.list())
            except Exception:
                names = []
            listed = f" Indexes in this project: {', '.join(names)}." if names else " The project has no indexes."
            raise ProviderError(
                PROVIDER, f"there is no index named '{index_name}'.{listed} Create it in the Pinecone console."
            ) from None
        raise pinecone_error(exc, location, "describe index") from None


class PineconeConfig(BaseModel):
    """Settings of ``vectorstore.pinecone``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    index: str = Field("", description="Index name (looked up through Pinecone's control plane).")
    host: str = Field("", description="Index host from the console; when set, used directly.")
    namespace: str = Field("", description="Namespace inside the index.")
    k: int = Field(4, ge=1, le=1000, description="Hits returned for the query.")
    min_score: float | None = Field(None, description="Drop hits whose score is below this.")
    where: dict[str, Any] = Field(default_factory=dict, description='Metadata filter, e.g. {"source": "a.csv"}.')
    metric: str = Field("cosine", description="The index metric (cosine, dotproduct, euclidean); scores follow it.")
    sync: SyncMode = Field("incremental", description=SYNC_DESCRIPTION)


@register_node
class PineconeNode(StoreNodeMixin, Node[PineconeConfig, StoreIn, StoreOut]):
    """Store chunks in a Pinecone index and search them (needs an API key)."""

    type_name = "vectorstore.pinecone"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "vectorstore.pinecone",
                LC + "vectorStorePinecone",
                (1, 1.1, 1.2, 1.3),
                inputs=STORE_IN,
                outputs=STORE_OUT,
                hook="store",
                params=(
                    Param("index", "pineconeIndex", "", to_theirs=index_locator),
                    Param("namespace", "options.pineconeNamespace", ""),
                ),
                fixed={"options": {}},
                local=offline_store("index", "namespace"),
            ),
        ),
        "langflow": (
            Adapter(
                "vectorstore.pinecone",
                "Pinecone",
                also=("PineconeVectorStoreComponent",),
                display="Pinecone",
                **LF.STORE_PORTS,
                params=(
                    Param("index", "index_name", to_ours=to_str),
                    Param("namespace", "namespace", to_ours=to_str),
                    LF.int_param("k", "number_of_results", 4),
                    Param(
                        "metric",
                        "distance_strategy",
                        "Cosine",
                        to_ours=LF.metric_in,
                        to_theirs=LF.metric_out,
                        widget="DropdownInput",
                    ),
                ),
                extra={**LF.STORE_EXTRA, "secret": "pinecone_api_key"},
                local=offline_store("index", "namespace"),
            ),
        ),
        "flowise": (
            FW.store(
                "vectorstore.pinecone",
                "pinecone",
                Param("index", "pineconeIndex", to_ours=nonempty_str),
                Param("namespace", "pineconeNamespace", to_ours=nonempty_str),
                local=offline_store("index", "namespace"),
            ),
        ),
    }
    display_name = "Pinecone Vector Store"
    aliases = ("Pinecone", "vector store", "vector db", "database")
    category = "Vector stores"
    Config = PineconeConfig
    credential_slots = (CredentialSlot("api_key", "pinecone"),)

    @classmethod
    def config_problems(cls, config: PineconeConfig) -> list[tuple[str | None, str]]:
        if not config.index and not config.host:
            return [(None, "Set `index` (the index name) or `host` (the index host from the Pinecone console).")]
        return []

    @classmethod
    def collection_address(cls, config: PineconeConfig, base_dir: Path | None) -> str | None:
        """``pinecone:<index or host>:<namespace>``: two nodes with the same address share the vectors."""
        return f"pinecone:{config.host or config.index}:{config.namespace}"

    @classmethod
    def reachable_by_workers(cls, config: PineconeConfig) -> bool:
        return True  # a service every machine reaches

    def run(self, inputs: StoreIn, ctx: RunContext) -> StoreOut:
        c = self.config
        embedder, query, documents = store_inputs(inputs)
        index, location = connect(ctx.secret("api_key"), c.index, c.host)
        store = PineconeStore(index, embedder, name=c.index or c.host, namespace=c.namespace, location=location)
        store.check_embedder()
        report = sync_inputs(store, inputs, documents, ctx, mode=c.sync)
        label = f"Pinecone index {store.name}" + (f" namespace {c.namespace}" if c.namespace else "")
        ctx.headline = finish_store_run(store, report, ctx, label=label)
        sample = report.sample if report else None
        outputs, sample = answer_query(store, query, k=c.k, where=c.where, min_score=c.min_score, sample=sample)
        score = f"{c.metric} (as computed by Pinecone)"
        ctx.details.update(
            {
                "index": store.name,
                "namespace": c.namespace,
                **store_details(store, sample, score=score, count=ctx.details["count"]),
            }
        )
        return outputs
