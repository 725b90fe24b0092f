"""How a store ingest spends its time: batch n is written while batch n+1 is embedded, batches hold texts of
like lengths, and the last batch (the one write nothing hides) goes in short slices. On the real embedded
Chroma store; the embedder is a deterministic stand-in that records what it was given."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

import numpy as np

from flowbuilder.data import Document
from flowbuilder.nodes.vectorstores.chroma import ChromaStore, open_collection, persistent_client
from flowbuilder.nodes.vectorstores.common import TAIL_SLICE
from tests.nodes.test_store_flows import HashEmbedder


class RecordingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.started = threading.Event()  # set when the second call begins

    def embed_documents(self, texts: list[str], progress: Any = None) -> list[list[float]]:
        self.calls.append(list(texts))
        if len(self.calls) == 2:
            self.started.set()
        return super().embed_documents(texts, progress)


class RecordingStore(ChromaStore):
    """The real Chroma store, noting each write; the first write waits (a bounded time) for the second
    batch's embedding to begin, which happens only if writing and embedding overlap."""

    def __init__(self, *args: Any, embedder: RecordingEmbedder, **kwargs: Any) -> None:
        super().__init__(*args, embedder=embedder, **kwargs)
        self.writes: list[list[str]] = []
        self.overlapped: bool | None = None

    def _write(self, part: list[tuple[str, Document]], vectors: np.ndarray) -> None:
        if not self.writes:
            assert isinstance(self.embedder, RecordingEmbedder)
            self.overlapped = self.embedder.started.wait(timeout=20)
        self.writes.append([doc.text for _, doc in part])
        super()._write(part, vectors)


def test_writes_overlap_embedding_batches_are_length_sorted_and_the_tail_is_sliced(tmp_path: Path) -> None:
    # 600 chunks whose lengths arrive shuffled: 256 + 256 + 88, the last cut into 64 + 24
    rng = np.random.default_rng(7)
    lengths = rng.permutation(600) + 5
    docs = [Document(text=f"{i:03d} " + "x" * int(n), metadata={"source": "cases.csv"}) for i, n in enumerate(lengths)]
    embedder = RecordingEmbedder()
    client = persistent_client(tmp_path / "chroma")
    collection = open_collection(client, "pipeline", embedder, "test")
    store = RecordingStore(collection, embedder=embedder, location="test")

    report = store.sync_documents(docs, batch_size=256)

    assert report.added == 600 and store.count() == 600
    assert store.overlapped is True  # batch 1 was still being written when batch 2's embedding began
    assert [len(w) for w in store.writes] == [256, 256, TAIL_SLICE, 600 - 512 - TAIL_SLICE]
    assert [len(c) for c in embedder.calls] == [len(w) for w in store.writes]  # one embedding per write
    sizes = [[len(text) for text in write] for write in store.writes]
    assert all(write == sorted(write) for write in sizes)
    for shorter, longer in itertools.pairwise(sizes):
        assert max(shorter) <= min(longer)  # like lengths batched together
    assert sorted(text for write in store.writes for text in write) == sorted(d.text for d in docs)
