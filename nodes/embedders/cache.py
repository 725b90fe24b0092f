"""The on-disk embedding cache and the base class every embedder service shares.

Vectors are keyed by the embedder's ``model_id`` and the sha256 of the exact text sent to the model
(prefixes included), and stored as float32 blobs in ``<data dir>/embeddings.sqlite``. A re-run of a
flow therefore embeds nothing it has embedded before, whichever node or collection asked first.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from flowbuilder.nodes.embedders.batching import QueryBatcher
from flowbuilder.services import ProgressCallback

CACHE_FILE_NAME = "embeddings.sqlite"
_SQLITE_MAX_PARAMS = 500  # stay well below SQLite's host-parameter limit per statement


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """A sqlite3 table ``(model, hash) -> float32 vector``; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        # WAL lets a UI process read while a CLI run writes the same cache file.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings ("
            " model TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL,"
            " PRIMARY KEY (model, hash)) WITHOUT ROWID"
        )
        self._db.commit()

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        with self._lock:
            for start in range(0, len(unique), _SQLITE_MAX_PARAMS):
                part = unique[start : start + _SQLITE_MAX_PARAMS]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({marks})", [model, *part]
                )
                for digest, blob in rows:
                    found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [(model, digest, np.asarray(vector, dtype=np.float32).tobytes()) for digest, vector in items]
        if not rows:
            return
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO embeddings (model, hash, vector) VALUES (?, ?, ?)", rows)
            self._db.commit()

    def count(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                row = self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()
            else:
                row = self._db.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", [model]).fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


_CACHES: dict[Path, EmbeddingCache] = {}
_CACHES_LOCK = threading.Lock()
_BATCHER_LOCK = threading.Lock()


def open_cache(data_dir: Path) -> EmbeddingCache:
    """The process-wide cache object for ``data_dir`` (one sqlite connection per file)."""
    path = (data_dir / CACHE_FILE_NAME).resolve()
    with _CACHES_LOCK:
        cache = _CACHES.get(path)
        if cache is None:
            cache = _CACHES[path] = EmbeddingCache(path)
        return cache


class CachingEmbedder:
    """Implements the Embedder protocol around ``_embed_batch``; only cache misses reach the model.

    Subclasses set ``model_id``, ``max_tokens`` and ``batch_size`` and implement ``_embed_batch``
    (and ``_probe_dimension`` when the dimension is not known up front). ``model_batches`` and
    ``model_texts`` count what was actually sent to the model, so callers can see the cache work.
    """

    model_id: str = ""
    max_tokens: int | None = None
    batch_size: int = 32
    document_prefix: str = ""
    query_prefix: str = ""

    def __init__(self, cache: EmbeddingCache | None) -> None:
        self.cache = cache
        self.model_batches = 0
        self.model_texts = 0
        self._dimension: int | None = None

    # -- the protocol -------------------------------------------------------------------------

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed_query("dimension probe"))
        return self._dimension

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> list[list[float]]:
        matrix = self.embed_documents_array(texts, progress)
        return matrix.tolist()

    def embed_query(self, text: str) -> list[float]:
        # Concurrent searches (a server) send their questions together: one model call for all of them.
        return self._queries.embed(self.query_prefix + text).tolist()

    @property
    def _queries(self) -> QueryBatcher:
        batcher = self.__dict__.get("_query_batcher")
        if batcher is None:
            with _BATCHER_LOCK:
                batcher = self.__dict__.setdefault(
                    "_query_batcher", QueryBatcher(lambda t: self._embed_prepared(t, None))
                )
        return batcher

    def count_tokens(self, text: str) -> int | None:
        return None

    # -- helpers -----------------------------------------------------------------------------

    def embed_documents_array(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """Like ``embed_documents`` but returns a float32 ``(n, dimension)`` array (no list copy)."""
        return self._embed_prepared([self.document_prefix + t for t in texts], progress)

    def _embed_prepared(self, texts: list[str], progress: ProgressCallback | None) -> np.ndarray:
        total = len(texts)
        if total == 0:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        digests = [text_hash(t) for t in texts]
        known: dict[str, np.ndarray] = self.cache.get_many(self.model_id, digests) if self.cache else {}
        missing: dict[str, str] = {}
        for digest, text in zip(digests, texts, strict=True):
            if digest not in known:
                missing.setdefault(digest, text)
        multiplicity = Counter(digests)
        done = total - sum(multiplicity[d] for d in missing)
        if progress is not None:
            progress(done, total)
        order = self._batch_order(list(missing.values()))
        miss_digests = list(missing)
        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]

        def deliver(number: int, vectors: Sequence[Sequence[float]] | np.ndarray) -> None:
            # Runs in the caller's thread, batch by batch as they come back: each goes into the cache at
            # once, so a failure later (or a killed process) resumes from everything delivered so far.
            nonlocal done
            batch_idx = batches[number]
            matrix = np.asarray(vectors, dtype=np.float32)
            self.model_batches += 1
            self.model_texts += len(batch_idx)
            fresh = [(miss_digests[i], matrix[j]) for j, i in enumerate(batch_idx)]
            known.update(fresh)
            if self.cache is not None:
                self.cache.put_many(self.model_id, fresh)
            done += sum(multiplicity[digest] for digest, _ in fresh)
            if progress is not None:
                progress(min(done, total), total)

        self._embed_batches([[missing[miss_digests[i]] for i in batch] for batch in batches], deliver)
        matrix = np.stack([known[d] for d in digests]).astype(np.float32, copy=False)
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        return matrix

    def _embed_batches(self, batches: list[list[str]], deliver: Callable[[int, np.ndarray], None]) -> None:
        """Embed every batch and hand each result to ``deliver(number, vectors)``; one after another here,
        several in flight for a server (:class:`flowbuilder.nodes.embedders.remote.RemoteEmbedder`)."""
        for number, texts in enumerate(batches):
            deliver(number, np.asarray(self._embed_batch(texts), dtype=np.float32))

    def _batch_order(self, texts: list[str]) -> list[int]:
        """The order in which misses are sent; the local model sorts by length to pad less."""
        return list(range(len(texts)))

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]] | np.ndarray:
        raise NotImplementedError
