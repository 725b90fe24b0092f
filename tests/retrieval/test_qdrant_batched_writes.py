"""Embedded Qdrant writes a batch per sqlite transaction (not a point per transaction), all or nothing,
and the store still mirrors what feeds it."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from flowbuilder.data import Document
from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.vectorstores.qdrant import (
    QdrantConfig,
    QdrantNode,
    QdrantStore,
    _local_persistence,
    close_local_clients,
)


class HashEmbedder:
    """Deterministic 384-d vectors from the text's hash: this file tests the store's writes, not the model."""

    model_id = "test/hash-384"
    dimension = 384
    max_tokens = None

    def embed_documents(self, texts: Sequence[str], progress: object = None) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        digest = hashlib.sha512(text.encode()).digest()
        return [digest[i % len(digest)] / 255 + 0.01 for i in range(384)]

    def count_tokens(self, text: str) -> int | None:
        return None


def chunks(count: int, source: str = "cases.csv", start: int = 0) -> list[Document]:
    return [
        Document(text=f"case {n}: the login form rejects an email with two dots", metadata={"source": source, "row": n})
        for n in range(start, start + count)
    ]


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    close_local_clients()


def run(folder: Path, docs: list[Document], sync: str = "incremental", batch_size: int = 5) -> tuple[QdrantStore, dict]:
    ctx = RunContext("qdrant", data_dir=folder)
    config = QdrantConfig(collection="cases", batch_size=batch_size, sync=sync)
    out = QdrantNode(config).run({"embedder": HashEmbedder(), "documents": [docs]}, ctx)
    return out["store"], ctx.details


def traced(store: QdrantStore) -> list[str]:
    """The SQL statements the collection's sqlite connection runs from now on."""
    persistence = _local_persistence(store.client, store.name)
    assert persistence is not None, "embedded Qdrant's persistence was not found: batching would be off"
    statements: list[str] = []
    persistence.storage.set_trace_callback(statements.append)
    return statements


def stored_rows(folder: Path) -> int:
    database = next((folder / "qdrant").rglob("storage.sqlite"))
    with sqlite3.connect(database) as connection:
        return int(connection.execute("SELECT count(*) FROM points").fetchone()[0])


def test_each_batch_is_one_transaction_and_deletes_are_one(folder: Path) -> None:
    store, _ = run(folder, chunks(2))
    statements = traced(store)
    store, details = run(folder, chunks(12, start=2), sync="append")  # 12 new chunks in batches of 5
    assert details["added"] == 12
    assert statements.count("COMMIT") == 3, statements.count("COMMIT")  # was 12: one per point
    assert sum(s.startswith("INSERT OR REPLACE") for s in statements) == 12
    statements.clear()
    store, details = run(folder, chunks(4, start=2))  # incremental: 10 stale chunks of this source go
    assert details["removed"] == 10 and details["count"] == 4
    assert statements.count("COMMIT") == 1
    assert sum(s.startswith("DELETE") for s in statements) == 10
    close_local_clients()  # as after a restart: what is on disk is what the next run sees
    assert stored_rows(folder) == 4
    store, details = run(folder, chunks(4, start=2))
    assert (details["added"], details["kept"], details["count"]) == (0, 4, 4)


def test_a_failed_batch_leaves_nothing_half_written_and_the_next_run_completes_it(folder: Path) -> None:
    store, _ = run(folder, chunks(3))
    persistence = _local_persistence(store.client, store.name)
    assert persistence is not None
    # a real sqlite failure (as a full disk would give) at the table's 11th row: the 3rd point of batch 2
    persistence.storage.execute(
        "CREATE TEMP TRIGGER full_disk BEFORE INSERT ON points WHEN (SELECT count(*) FROM points) >= 10 "
        "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    with pytest.raises(NodeError, match=r"writing 5 chunks to Qdrant collection 'cases' .* failed: disk full"):
        run(folder, chunks(10, start=3), sync="append")
    # batch 1 (5 chunks) committed, batch 2 rolled back whole: no half batch on disk
    assert stored_rows(folder) == 8
    store, details = run(folder, chunks(13))  # a new client reads the folder; the run completes the rest
    assert (details["added"], details["kept"], details["count"]) == (5, 8, 13)
    close_local_clients()
    assert stored_rows(folder) == 13
