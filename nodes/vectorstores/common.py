"""What the vector-store nodes share: ids, metadata encoding, ports, the ingest and search steps, details."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict, cast

import numpy as np

from flowbuilder.chunk_ids import FOLDER_FIELD as FOLDER_FIELD  # re-exported for the stores
from flowbuilder.chunk_ids import document_id as document_id  # re-exported: nodes import it from here
from flowbuilder.chunk_ids import folders_of, source_key, unique_documents
from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext, summarize_outputs
from flowbuilder.portvalues import Chunks, Hits, Text
from flowbuilder.services import Embedder, VectorStore
from flowbuilder.streaming import Batches, is_stream

JSON_KEYS_FIELD = "fb_json_keys"
"""Metadata field listing the keys stored as JSON strings (stores accept only scalar values)."""
MODEL_FIELD = "fb_embedding_model"
"""Metadata field recording which embedder made a vector (Pinecone has no collection metadata)."""
TEXT_FIELD = "text"
"""Pinecone keeps the chunk text in this metadata field (LangChain's convention)."""
SOURCE_FIELD = "fb_source"
"""Metadata field naming the chunk's source ("" when it has none): what incremental sync groups by."""

"""Record metadata naming the folder a loader read the record's file from (``loader.file`` on a folder): the run
covers every file of that folder, so incremental sync also removes the chunks of files no longer in it."""

SyncMode = Literal["incremental", "full", "append"]
SYNC_DESCRIPTION = (
    "How the collection follows this node's input: incremental = for each source ingested now, remove its "
    "chunks this run no longer produces (other sources stay); full = keep exactly this run's chunks; "
    "append = only add (old chunks stay)."
)

Progress = Callable[[int, int], None]


def encode_metadata(metadata: dict[str, Any], *, allow_string_lists: bool = False) -> dict[str, Any]:
    """Scalars kept as they are; lists and dicts as JSON strings (named in ``fb_json_keys``); None dropped."""
    out: dict[str, Any] = {}
    json_keys: list[str] = []
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, str | int | float | bool) or (allow_string_lists and _is_string_list(value)):
            out[key] = value
        else:
            out[key] = json.dumps(value, ensure_ascii=False, default=str)
            json_keys.append(key)
    if json_keys:
        out[JSON_KEYS_FIELD] = json.dumps(json_keys)
    return out


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def decode_metadata(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The original metadata back from :func:`encode_metadata` (internal fields removed)."""
    metadata = dict(stored or {})
    json_keys = metadata.pop(JSON_KEYS_FIELD, None)
    metadata.pop(MODEL_FIELD, None)
    metadata.pop(SOURCE_FIELD, None)
    if isinstance(json_keys, str):
        for key in json.loads(json_keys):
            if isinstance(metadata.get(key), str):
                with contextlib.suppress(ValueError):
                    metadata[key] = json.loads(metadata[key])
    return metadata


def and_where(where: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{"a": 1, "b": 2}`` as ``{"$and": [{"a": 1}, {"b": 2}]}`` (Chroma wants one key per filter)."""
    if not where:
        return None
    if len(where) == 1:
        return dict(where)
    return {"$and": [{key: value} for key, value in where.items()]}


def sample_vector_details(vector: Sequence[float] | None, dimension: int) -> dict[str, Any]:
    values = [round(float(v), 6) for v in (vector or [])[:8]]
    return {"values": values, "dimension": dimension}


_COLLECTION_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")


def collection_name_problem(name: str) -> str | None:
    if _COLLECTION_NAME.match(name):
        return None
    bad = sorted({ch for ch in name if not re.match(r"[a-zA-Z0-9._-]", ch)})
    if bad:
        why = f"it contains {', '.join(repr(c) for c in bad)}"
    elif not 3 <= len(name) <= 512:
        why = f"it has {len(name)} characters"
    else:
        why = "it must start and end with a letter or digit"
    return (
        f"Collection name '{name}' is not valid ({why}): use 3 to 512 characters from letters, digits, '.', '_' "
        "and '-', starting and ending with a letter or digit, e.g. 'vwo_test_cases'."
    )


def models_mismatch_message(store: str, existing: str, ours: str, suggestion: str) -> str:
    return (
        f"{store} was filled by embedder '{existing}' but this flow uses '{ours}'; vectors of different models "
        f"cannot be compared. Use the same embedder, or a new collection name such as '{suggestion}'."
    )


def safe_suffix(model_id: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", model_id).strip("-._")[:40] or "new"


def embed_array(embedder: Embedder, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
    """Embed as a float32 array, without a list round trip when the embedder offers one."""
    fast = getattr(embedder, "embed_documents_array", None)
    if callable(fast):
        return np.asarray(fast(texts, progress), dtype=np.float32)
    return np.asarray(embedder.embed_documents(texts, progress), dtype=np.float32)


TAIL_SLICE = 64
"""Chunks per write in a sync's last batch: the one write no embedding hides, kept short."""

StorePair = tuple[str, Document]


def _store_batches(new: Iterable[list[StorePair]], size: int, whole: bool) -> Iterator[tuple[list[StorePair], int]]:
    """``(batch, total)`` for each store batch of ``size``; ``total`` is the count so far plus this part's
    (0 when streamed: the total is not known). Each part is cut after sorting by text length: batches of like
    lengths, as the embedder alone would make over the whole list (cut in arrival order, each store batch
    would mix short and long texts and pad every short one)."""
    done = 0
    for chunk in new:
        total = done + len(chunk) if whole else 0
        ordered = sorted(chunk, key=lambda pair: len(pair[1].text)) if len(chunk) > size else chunk
        for start in range(0, len(ordered), size):
            batch = ordered[start : start + size]
            yield batch, total
            done += len(batch)


def _sliced(batch: list[StorePair], size: int) -> list[list[StorePair]]:
    return [batch[start : start + size] for start in range(0, len(batch), size)] or [batch]


def _file_changes(sources: set[str], added: dict[str, int], kept: dict[str, int], stale: set[str]) -> dict[str, int]:
    """Per source (a file): ``new`` (nothing of it was stored before), ``changed`` (chunks added or removed),
    ``unchanged``; ``removed``: sources whose chunks were all removed because this run no longer has them."""
    prefixes = {f"{source_key(source)}#": source for source in sources}
    removed_from = {doc_id[:17] for doc_id in stale}
    counts = {"new": 0, "changed": 0, "removed": len(removed_from - set(prefixes)), "unchanged": 0}
    for prefix, source in prefixes.items():
        if not added.get(source) and prefix not in removed_from:
            counts["unchanged"] += 1
        elif not kept.get(source) and prefix not in removed_from:
            counts["new"] += 1
        else:
            counts["changed"] += 1
    return counts


StoredMatch = tuple[str, float, str, dict[str, Any]]
"""``(id, score, text, metadata)`` of one search result, as a store reads it back (best first)."""


@dataclass
class SyncReport:
    """What one sync did to a collection."""

    mode: str
    added: int = 0
    removed: int = 0
    kept: int = 0
    duplicates_dropped: int = 0
    sample: list[float] | None = None
    files: dict[str, int] | None = None
    """For chunks read from a folder: how many files (sources) are ``new``, ``changed``, ``removed``,
    ``unchanged`` since the collection was last synced."""

    def line(self, count: int) -> str:
        """``+241 added, −120 removed, 0 kept; 361 in collection``; from a folder, first ``3 files changed
        (1 new), 1 removed, 41 unchanged; ``."""
        line = f"+{self.added} added, \u2212{self.removed} removed, {self.kept} kept; {count} in collection"
        return f"{self.files_line()}; {line}" if self.files is not None else line

    def files_line(self) -> str:
        files = self.files or {}
        changed = files.get("new", 0) + files.get("changed", 0)
        new = f" ({files['new']} new)" if files.get("new") else ""
        noun = "file" if changed == 1 else "files"
        return (
            f"{changed} {noun} changed{new}, {files.get('removed', 0)} removed, {files.get('unchanged', 0)} unchanged"
        )

    def details(self) -> dict[str, Any]:
        details = {
            "sync": self.mode,
            "added": self.added,
            "removed": self.removed,
            "kept": self.kept,
            "already_present": self.kept,
            "duplicates_dropped": self.duplicates_dropped,
        }
        if self.files is not None:
            details["files"] = dict(self.files)
        return details


class EmbeddingStore:
    """Ingest (with sync), search and count for every VectorStore service; only the store calls differ.

    A store implements these primitives and inherits the sync semantics (``sync_documents``):

    - ``existing_ids(ids)``: which of these ids are stored;
    - ``all_ids()``: every stored id (used by ``full`` sync, and by the default ``ids_of_sources``);
    - ``ids_of_sources(sources)``: ids of the stored chunks of these sources (default: the ids whose
      ``<source key>#`` prefix matches; override with a metadata filter on ``fb_source`` when cheaper);
    - ``delete_ids(ids)``; ``_write(part, vectors)`` (store one batch of new chunks with their vectors);
    - ``_query(vector, k, where)`` (the nearest stored chunks) and ``count()``.

    ``empty_reason`` is set by the node when the collection is empty, so retrievers can say why.
    """

    embedder: Embedder
    name: str
    default_batch_size: ClassVar[int] = 256
    empty_reason: str = ""

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        raise NotImplementedError

    def all_ids(self) -> set[str]:
        raise NotImplementedError

    def ids_of_sources(self, sources: Sequence[str]) -> set[str]:
        prefixes = {f"{source_key(source)}#" for source in sources}
        return {doc_id for doc_id in self.all_ids() if doc_id[:17] in prefixes}

    def ids_in_folders(self, folders: Sequence[str], known_sources: Sequence[str] = ()) -> set[str]:
        """Ids of the stored chunks whose ``folder`` metadata is one of ``folders`` (files a loader read from
        them). The chunks of ``known_sources`` may be left out: the caller has them from ``ids_of_sources``."""
        raise NotImplementedError

    def delete_ids(self, ids: Sequence[str]) -> None:
        raise NotImplementedError

    def _batch_size(self, requested: int) -> int:
        """The batch size actually used; a store with a per-request limit lowers it."""
        return requested

    def _write(self, part: list[tuple[str, Document]], vectors: np.ndarray) -> None:
        raise NotImplementedError

    def _query(self, vector: Sequence[float], k: int, where: dict[str, Any] | None) -> Iterable[StoredMatch]:
        raise NotImplementedError

    def add_documents(
        self, documents: Sequence[Document], *, batch_size: int | None = None, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Add the documents not already stored (append sync); returns counts and a sample vector."""
        report = self.sync_documents(documents, "append", batch_size=batch_size, progress=progress)
        return {**report.details(), "sample": report.sample}

    def sync_documents(
        self,
        documents: Sequence[Document] | Batches,
        mode: str = "incremental",
        *,
        batch_size: int | None = None,
        progress: Progress | None = None,
    ) -> SyncReport:
        """Make the collection follow ``documents`` as ``mode`` says; only chunks not yet stored are embedded.

        ``documents`` may be a stream of batches (:class:`~flowbuilder.streaming.Batches`): each batch is
        looked up, embedded and written as it comes, and only the ids are kept to the end (to know what is
        stale), so memory stays a batch deep. New chunks are written before stale ones are deleted, so an
        interrupted sync never loses a source.
        """
        if mode not in ("incremental", "full", "append"):
            raise NodeError(f"sync must be incremental, full or append, got '{mode}'.")
        wanted: set[str] = set()
        sources: set[str] = set()
        folders: set[str] = set()
        added_by_source: dict[str, int] = {}
        kept_by_source: dict[str, int] = {}
        report = SyncReport(mode=mode)
        streamed = isinstance(documents, Batches)
        seen = [0]

        def new_parts() -> Iterator[list[tuple[str, Document]]]:
            for batch in documents if isinstance(documents, Batches) else [documents]:
                ids, docs, duplicates = unique_documents(batch, wanted)
                present = self.existing_ids(ids)
                report.kept += len(present)
                report.duplicates_dropped += duplicates
                sources.update(doc.source for doc in docs)
                folders.update(folders_of(docs))
                seen[0] += len(batch)
                new = []
                for doc_id, doc in zip(ids, docs, strict=True):
                    counter = kept_by_source if doc_id in present else added_by_source
                    counter[doc.source] = counter.get(doc.source, 0) + 1
                    if doc_id not in present:
                        new.append((doc_id, doc))
                report.added += len(new)
                yield new

        def estimate(done: int) -> int:
            if not isinstance(documents, Batches):
                return report.added
            return max(report.added, round(report.added * documents.estimate(seen[0]) / max(seen[0], 1)), done)

        step = None if progress is None else (lambda done, _total: progress(done, estimate(done)))
        elsewhere = documents.written_elsewhere(self) if isinstance(documents, Batches) else None
        if elsewhere is None:
            report.sample = self._embed_and_write(new_parts(), batch_size, step, whole=not streamed)
        else:  # a cluster's workers embedded and wrote the batches (flowbuilder.cluster): what they did
            wanted, sources, folders = elsewhere.wanted, elsewhere.sources, elsewhere.folders
            report.added, report.kept = elsewhere.added, elsewhere.kept
            report.duplicates_dropped = elsewhere.duplicates
        stale: set[str] = set()
        if mode == "full":
            stale = self.all_ids() - wanted
        elif mode == "incremental":
            stale = self.ids_of_sources(sorted(sources)) - wanted if sources else set()
            if folders:  # the run read these folders whole: a file no longer in them is gone
                stale |= self.ids_in_folders(sorted(folders), sorted(sources)) - wanted
        if stale:
            self.delete_ids(sorted(stale))
        report.removed = len(stale)
        if folders:
            report.files = _file_changes(sources, added_by_source, kept_by_source, stale)
        return report

    def _embed_and_write(
        self,
        new: Iterable[list[tuple[str, Document]]],
        batch_size: int | None,
        progress: Progress | None,
        *,
        whole: bool = True,
    ) -> list[float] | None:
        """Embed and write the new chunks batch by batch, pipelined: batch n is written on a writer thread
        while batch n+1 is embedded (the embedder releases the GIL), so the store's write time hides behind
        the embedding. Only the last write has nothing to hide behind, so the last batch goes in slices of
        ``TAIL_SLICE``. At most one batch waits to be written, so memory stays one batch deep. ``new`` comes
        in parts (one list, or one per streamed batch); ``whole``: the parts are all there is, so progress
        totals are exact."""
        sample: list[float] | None = None
        size = self._batch_size(batch_size or self.default_batch_size)
        done = 0
        with ThreadPoolExecutor(1, thread_name_prefix="store-write") as writer:
            pending: Future[None] | None = None
            parts = _store_batches(new, size, whole)
            current = next(parts, None)
            while current is not None:
                following = next(parts, None)  # one ahead: is this the last batch?
                batch, total = current
                slices = [batch] if following is not None else _sliced(batch, TAIL_SLICE)
                for part in slices:

                    def step(finished: int, _total: int, offset: int = done, whole_total: int = total) -> None:
                        if progress is not None:
                            progress(offset + finished, whole_total or offset + finished)

                    vectors = embed_array(self.embedder, [doc.text for _, doc in part], step)
                    if sample is None and len(vectors):
                        sample = vectors[0].tolist()
                    if pending is not None:
                        pending.result()  # the previous batch is in the store (or its error is raised here)
                    pending = writer.submit(self._write, part, vectors)
                    done += len(part)
                current = following
            if pending is not None:
                pending.result()
            if progress is not None and done:
                progress(done, done)
        return sample

    def search(
        self, query: str, k: int, where: dict[str, Any] | None = None, min_score: float | None = None
    ) -> list[Hit]:
        return self.search_vector(self.embedder.embed_query(query), k, where, min_score)

    def search_vector(
        self, vector: Sequence[float], k: int, where: dict[str, Any] | None = None, min_score: float | None = None
    ) -> list[Hit]:
        if k < 1:
            raise NodeError(f"k must be at least 1, got {k}.")
        hits: list[Hit] = []
        for doc_id, score, text, metadata in self._query(vector, k, where):
            if min_score is not None and score < min_score:
                continue
            document = Document(text=text, metadata=metadata)
            hits.append(Hit(document=document, score=score, rank=len(hits) + 1, id=doc_id))
        return hits

    def count(self) -> int:
        raise NotImplementedError


class StoreIn(TypedDict):
    """A store node's inputs: chunks to mirror (one batch per connection; a stream of batches when the executor
    streams its chain, see :mod:`flowbuilder.streaming`), the embedder, a question."""

    documents: NotRequired[Annotated[list[Chunks], "Chunks to add (idempotent)."]]
    embedder: Annotated[Embedder, "Embeds the chunks and the questions."]
    query: NotRequired[Annotated[Text, "When connected, also search and output hits."]]


class StoreOut(TypedDict):
    """The output ports of ``vectorstore.chroma``, ``vectorstore.pinecone``, ``vectorstore.qdrant``."""

    store: Annotated[VectorStore, "The store, for retrievers and tools."]
    hits: NotRequired[Annotated[Hits, "Top-k results for the connected query."]]
    """Only when a question came in."""


def store_inputs(inputs: StoreIn) -> tuple[Embedder, str | None, Sequence[Document]]:
    """The ``embedder``, ``query`` (None when absent or blank) and ``documents`` (all connections, or the stream of
    batches when the executor streams the chain) of a store node."""
    query = inputs.get("query")
    question = query if query and query.strip() else None
    documents: Any = inputs.get("documents", [])
    if is_stream(documents):
        return inputs["embedder"], question, cast(Batches, documents[0] if isinstance(documents, list) else documents)
    return inputs["embedder"], question, [doc for batch in documents for doc in batch]


def answer_query(
    store: EmbeddingStore,
    query: str | None,
    *,
    k: int,
    where: dict[str, Any] | None,
    min_score: float | None,
    sample: list[float] | None,
) -> tuple[StoreOut, list[float] | None]:
    """The node's outputs (``hits`` only when a query came in) and the sample vector for the details."""
    outputs: StoreOut = {"store": store}
    if query is not None:
        query_vector = store.embedder.embed_query(query)
        sample = sample or query_vector
        outputs["hits"] = store.search_vector(query_vector, k, where or None, min_score)
    return outputs, sample


def store_details(store: EmbeddingStore, sample: Sequence[float] | None, *, score: str, count: int) -> dict[str, Any]:
    """The details every store node shows after its own (where the store is)."""
    embedder = store.embedder
    return {
        "embedder": embedder.model_id,
        "count": count,
        "score": score,
        "sample_vector": sample_vector_details(sample, int(embedder.dimension)),
    }


def sync_inputs(
    store: EmbeddingStore,
    inputs: Mapping[str, Any],
    documents: Sequence[Document],
    ctx: RunContext,
    *,
    mode: str,
    batch_size: int | None = None,
) -> SyncReport | None:
    """Sync the collection with the ``documents`` input, or None when there is nothing to sync from:
    the input is not connected (a node that only reads), or its branch delivered nothing (disabled,
    failed): then the collection is left as it is rather than emptied. First, before anything is read or
    written, the collection must be one this flow may open (:meth:`RunContext.claim_collection`)."""
    ctx.claim_collection(store.count())
    if "documents" not in inputs or "documents" in ctx.missing_inputs:
        return None
    return store.sync_documents(
        documents, mode, batch_size=batch_size, progress=lambda done, total: ctx.progress(done, total, "embedding")
    )


def store_warning(label: str, count: int, report: SyncReport | None, ctx: RunContext) -> str:
    """Why this result must not look fine ("" when it is fine): an empty collection, an ingest branch that
    did not deliver."""
    missing = ctx.missing_inputs.get("documents")
    if missing:
        if count == 0:
            return f"{label} is empty: its ingest branch {missing}"
        return f"its ingest branch {missing}, so nothing was synced; searching the {count} chunks already in {label}"
    if count > 0:
        return ""
    if report is not None:
        return f"{label} is empty: the connected documents held no chunks"
    causes = [cause for cause in ctx.writers.values() if cause != "ok"]
    if causes:
        return f"{label} is empty: its ingest branch {causes[0]}"
    if ctx.writers:
        return f"{label} is empty: its ingest branch produced no chunks"
    return (
        f"{label} is empty: nothing in this flow writes to it; connect chunks to its documents input "
        "(or to another store node with the same collection)"
    )


def finish_store_run(store: EmbeddingStore, report: SyncReport | None, ctx: RunContext, *, label: str) -> str:
    """Count, warn when the result would mislead, record the sync in the details; returns the summary line."""
    count = store.count()
    warning = store_warning(label, count, report, ctx)
    store.empty_reason = warning if count == 0 else ""
    if warning:
        ctx.warn(warning)
    ctx.details.update(report.details() if report is not None else {"sync": "none (nothing connected to documents)"})
    ctx.details["count"] = count
    if report is None:
        return f"{count} in collection ({'not synced' if 'documents' in ctx.missing_inputs else 'read only'})"
    return report.line(count)


def folder_address(kind: str, folder: str, base_dir: Path | None, collection: str) -> str:
    """``<kind>:<folder>:<collection>`` of an embedded store (the data dir's default folder when ``folder`` is
    empty): two nodes with the same address share one collection, whatever relative path names it."""
    if not folder:
        return f"{kind}:<data dir>/{kind}:{collection}"
    from flowbuilder.trust.places import resolve_path

    where = resolve_path(folder, base_dir) if base_dir else Path(folder)
    return f"{kind}:{Path(str(where).rstrip('/')).as_posix().removeprefix('./')}:{collection}"


class StoreNodeMixin:
    """What every store node shares beyond its store: the summary starts with the sync line, set as the run's
    ``ctx.headline`` (``+241 added, −120 removed, 0 kept; 361 in collection``), and the result is never reused from the
    cache: the collection is state outside the flow (another run or flow may have changed it since), so
    every run syncs it again; that costs an id lookup, not embeddings."""

    cacheable = False
    stream_in: ClassVar[str | None] = "documents"

    @classmethod
    def reachable_by_workers(cls, config: Any) -> bool:
        """Whether every machine of a cluster can write this node's collection: a server (Chroma's
        ``chroma run``, a Qdrant server, Pinecone), not a folder on this machine (``--ray`` needs one)."""
        return False

    def summarize(self, outputs: Mapping[str, Any]) -> str:
        ports = cast(Any, self).output_ports(cast(Any, self).config)
        return summarize_outputs(ports, outputs).replace("vector_store ready", "").strip(", ")
