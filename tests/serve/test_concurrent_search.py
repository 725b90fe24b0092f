"""Searches run concurrently over one exclusive ingest; a changed source file is ingested again, alone."""

from __future__ import annotations

import csv
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flowbuilder.executor import RunEvent
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.serving.rwlock import ReadWriteLock
from flowbuilder.serving.service import FlowService
from tests.serve.conftest import ROOT
from tests.waiting import wait_until

SOURCE = ROOT / "data" / "VWO_500_Test_Cases.csv"


def small_csv(path: Path, rows: int) -> Path:
    with SOURCE.open(encoding="utf-8-sig", newline="") as src, path.open("w", encoding="utf-8", newline="") as out:
        reader = csv.reader(src)
        writer = csv.writer(out)
        for i, row in enumerate(reader):
            if i > rows:
                break
            writer.writerow(row)
    return path


def search_flow(csv_path: Path, collection: str) -> Flow:
    return Flow(
        name="concurrent search",
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(csv_path), "mode": "records"}),
            NodeSpec(id="label", type="labeller.row"),
            NodeSpec(id="split", type="splitter.record"),
            NodeSpec(id="embed", type="embedder.local"),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": collection}),
            NodeSpec(id="question", type="chat.input"),
            NodeSpec(id="retriever", type="retriever.vector", config={"k": 3}),
        ],
        edges=[
            Edge(source="load", source_port="records", target="label", target_port="records"),
            Edge(source="label", source_port="records", target="split", target_port="documents"),
            Edge(source="split", source_port="chunks", target="store", target_port="documents"),
            Edge(source="embed", source_port="embedder", target="store", target_port="embedder"),
            Edge(source="store", source_port="store", target="retriever", target_port="store"),
            Edge(source="question", source_port="message", target="retriever", target_port="query"),
        ],
    )


class Recorder:
    def __init__(self) -> None:
        self.started: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, event: RunEvent) -> None:
        if event.kind == "node_started" and event.node_id:
            with self.lock:
                self.started.append(event.node_id)


def test_concurrent_searches_share_one_ingest_and_batch_their_questions(tmp_path: Path) -> None:
    service = FlowService(search_flow(small_csv(tmp_path / "rows.csv", 20), "concurrent"), base_dir=tmp_path)
    recorder = Recorder()
    service.progress = recorder
    service.search("warm-up", 1)  # ingests (exclusively)
    assert recorder.started.count("store") == 1
    questions = [f"How is login case {i} with two dots in the email handled?" for i in range(40)]
    with ThreadPoolExecutor(40) as pool:
        results = list(pool.map(lambda q: service.search(q, 3), questions))
    assert all(len(r.hits) == 3 for r in results)  # none failed, each got its own answer
    assert [r.query for r in results] == questions
    assert recorder.started.count("store") == 1  # the searches read the ingested store, never re-synced it
    # over the ingest, a search logs no per-node lines and analyses the flow once for all 40
    assert recorder.started.count("retriever") == 1
    assert list(service._analyses) == [(id(service._search_flow("retriever", 3)), "retriever")]
    assert len({tuple(h.id for h in r.hits) for r in results}) > 1  # each ran its own search
    assert [len(service.search("two dots", k).hits) for k in (1, 5)] == [1, 5]  # k is each search's own
    store = service._snapshot["store"].outputs["store"]
    batcher = store.embedder._queries
    assert batcher.calls < 41 and batcher.largest > 1  # questions that came together were embedded together


def test_a_changed_source_is_ingested_again_before_the_next_search(tmp_path: Path) -> None:
    path = small_csv(tmp_path / "rows.csv", 5)
    service = FlowService(search_flow(path, "refresh"), base_dir=tmp_path)
    service.refresh_seconds = 0.0
    recorder = Recorder()
    service.progress = recorder
    service.search("login", 1)
    service.search("login page", 1)
    assert recorder.started.count("store") == 1
    small_csv(path, 8)  # the file grows (its size changes, whatever the clock): the store must mirror it
    result = service.search("email field", 1)
    assert recorder.started.count("store") == 2 and result.hits
    assert service._snapshot["store"].outputs["store"].count() == 8


def test_a_writer_waits_for_readers_and_blocks_new_ones() -> None:
    lock = ReadWriteLock()
    log: list[str] = []
    reading = threading.Event()
    release = threading.Event()

    def reader(name: str, hold: threading.Event | None) -> None:
        with lock.reading():
            log.append(f"{name} in")
            reading.set()
            if hold is not None:
                hold.wait(5)
            log.append(f"{name} out")

    def writer() -> None:
        with lock.writing():
            log.append("writer")

    first = threading.Thread(target=reader, args=("r1", release))
    first.start()
    reading.wait(5)
    w = threading.Thread(target=writer)
    w.start()
    wait_until(lambda: lock._writers_waiting == 1, 5, "the writer to queue")
    late = threading.Thread(target=reader, args=("r2", None))
    late.start()
    # both the writer and r2 are parked on the lock's condition (CPython's Condition keeps its waiters there)
    wait_until(lambda: len(lock._cond._waiters) == 2, 5, "r2 to queue behind the writer")  # type: ignore[attr-defined]
    assert log == ["r1 in"]  # the writer waits for r1; r2 waits behind the writer
    release.set()
    for thread in (first, w, late):
        thread.join(5)
    assert log == ["r1 in", "r1 out", "writer", "r2 in", "r2 out"]
