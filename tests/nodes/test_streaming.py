"""Streaming (flowbuilder.streaming): loader -> labeller -> splitter -> store run batch by batch give the same
store and the same per-node counts as whole lists, keep the store's mirror semantics, and a cancel mid-stream
keeps what was completed. Real components: the WordLlama embedder (local, fast) and Chroma on disk.

Memory is measured by benchmarks/memory_growth.py, never asserted here.
"""

from __future__ import annotations

import csv
import re
import threading
from pathlib import Path
from typing import Any

import chromadb
import pytest

import flowbuilder.streaming as streaming
from flowbuilder.cache import ResultCache
from flowbuilder.executor import Executor, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.streaming import StreamedSample

ROOT = Path(__file__).resolve().parents[2]
ROWS = 90
CHAIN = ("load", "label", "split")


def write_rows(path: Path, rows: int, skip: set[int] | None = None) -> Path:
    source = ROOT / "data" / "VWO_500_Test_Cases.csv"
    with source.open(encoding="utf-8-sig", newline="") as src, path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        for i, row in enumerate(csv.reader(src)):
            if i > rows:
                break
            if i not in (skip or set()):
                writer.writerow(row)
    return path


def flow(csv_path: Path, folder: Path, *, meta_columns: list[str] | None = None) -> Flow:
    return Flow.model_validate(
        {
            "format": "flowbuilder",
            "version": 1,
            "name": "stream",
            "nodes": [
                {"id": "load", "type": "loader.file", "config": {"path": str(csv_path), "mode": "records"}},
                {"id": "label", "type": "labeller.row", "config": {"meta_columns": meta_columns or []}},
                {"id": "split", "type": "splitter.recursive", "config": {"chunk_size": 300, "chunk_overlap": 0}},
                {"id": "embed", "type": "embedder.wordllama"},
                {
                    "id": "store",
                    "type": "vectorstore.chroma",
                    "config": {"collection": "rows", "persist_directory": str(folder), "batch_size": 16},
                },
            ],
            "edges": [
                {"source": "load", "source_port": "records", "target": "label", "target_port": "records"},
                {"source": "label", "source_port": "records", "target": "split", "target_port": "documents"},
                {"source": "split", "source_port": "chunks", "target": "store", "target_port": "documents"},
                {"source": "embed", "source_port": "embedder", "target": "store", "target_port": "embedder"},
            ],
        }
    )


def stored(folder: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    collection = chromadb.PersistentClient(path=str(folder)).get_collection("rows")
    got = collection.get(include=["documents", "metadatas"])
    return {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}


def counts(run: RunResult) -> dict[str, str]:
    """Each node's summary without the streaming remark: the counts users read."""
    return {n: re.sub(r" \(streamed\)$", "", r.summary) for n, r in run.results.items()}


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "BATCH_SIZE", 16)  # several batches out of a small file


def test_stream_gives_the_same_store_and_counts_as_whole_lists(tmp_path: Path, small_batches: None) -> None:
    rows = write_rows(tmp_path / "rows.csv", ROWS)
    events: list[RunEvent] = []
    whole = Executor(stream="never", cache=ResultCache(max_entries=0)).run(flow(rows, tmp_path / "a"))
    streamed = Executor(stream="always", cache=ResultCache(max_entries=0)).run(
        flow(rows, tmp_path / "b"), on_event=events.append
    )
    assert whole.ok and streamed.ok, (whole.failed(), streamed.failed())
    assert stored(tmp_path / "a") == stored(tmp_path / "b")
    assert len(stored(tmp_path / "b")) > ROWS  # split into more chunks than rows: a real check of the chain
    assert counts(whole) == counts(streamed)
    assert streamed.results["load"].summary == f"{ROWS} records (streamed)"
    for node_id, port in (("load", "records"), ("label", "records"), ("split", "chunks")):
        full = whole.results[node_id].outputs[port]
        sample = streamed.results[node_id].outputs[port]
        assert isinstance(sample, StreamedSample) and not isinstance(full, StreamedSample)
        assert sample.total == len(full) and list(sample) == full[: streaming.SAMPLE_SIZE]
        assert streamed.results[node_id].details["streamed"]["batches"] > 1
    assert streamed.results["load"].details["records"] == ROWS
    assert streamed.results["store"].details["count"] == whole.results["store"].details["count"]
    finished = [e.node_id for e in events if e.kind == "node_finished"]
    assert finished == ["embed", "load", "label", "split", "store"]
    assert any(e.kind == "progress" and e.node_id == "store" for e in events)


def test_stream_keeps_the_store_a_mirror_of_its_csv(tmp_path: Path, small_batches: None) -> None:
    executor = Executor(stream="always")
    first = executor.run(flow(write_rows(tmp_path / "rows.csv", ROWS), tmp_path / "db"))
    before = stored(tmp_path / "db")
    removed_rows = {5, 6, 40}
    second = executor.run(flow(write_rows(tmp_path / "rows.csv", ROWS, skip=removed_rows), tmp_path / "db"))
    after = stored(tmp_path / "db")
    assert first.ok and second.ok
    gone = {m["record_id"] for _, m in before.values()} - {m["record_id"] for _, m in after.values()}
    assert len(gone) == len(removed_rows)
    assert second.results["load"].summary == f"{ROWS - len(removed_rows)} records (streamed)"
    assert second.results["store"].details["removed"] > 0
    assert second.results["store"].details["count"] == len(after)
    # a second run over the same file embeds nothing new and keeps everything
    third = executor.run(flow(tmp_path / "rows.csv", tmp_path / "db"))
    assert third.results["store"].details["added"] == 0 and third.results["store"].details["removed"] == 0
    assert stored(tmp_path / "db") == after


def test_cancel_mid_stream_keeps_completed_results(tmp_path: Path, small_batches: None) -> None:
    rows = write_rows(tmp_path / "rows.csv", ROWS)
    cancel = threading.Event()

    def on_event(event: RunEvent) -> None:
        if event.kind == "progress" and event.node_id == "store" and event.data.get("done", 0) >= 32:
            cancel.set()

    run = Executor(stream="always").run(flow(rows, tmp_path / "db"), on_event=on_event, cancel_event=cancel)
    assert run.cancelled and not run.ok
    assert run.results["embed"].status == "ok"  # finished before the chain: kept
    assert {run.results[n].status for n in (*CHAIN, "store")} == {"cancelled"}
    assert 0 < run.results["load"].details["streamed"]["items"] < ROWS
    partial = stored(tmp_path / "db")
    assert Executor(stream="never").run(flow(rows, tmp_path / "whole")).ok
    whole = stored(tmp_path / "whole")
    # what the batches before the cancel wrote, and no more: some rows' chunks, not all of them
    assert 0 < len(partial) < len(whole)
    assert 0 < len({meta["row"] for _, meta in partial.values()}) < ROWS
    # the re-run completes, and what was written before the cancel is kept, not written again
    again = Executor(stream="always").run(flow(rows, tmp_path / "db"))
    assert again.ok
    assert again.results["store"].details["kept"] >= len(partial)
    assert stored(tmp_path / "db") == whole


def test_a_member_failing_mid_stream_is_named(tmp_path: Path, small_batches: None) -> None:
    rows = write_rows(tmp_path / "rows.csv", ROWS)
    run = Executor(stream="always").run(flow(rows, tmp_path / "db", meta_columns=["No Such Column"]))
    assert run.results["label"].status == "failed"
    assert "No Such Column" in str(run.results["label"].error) and "label" in str(run.results["label"].error)
    assert run.results["store"].status == "failed" and run.results["store"].blocked_by == "label"
    assert run.results["load"].status == "cancelled"
    assert run.results["embed"].status == "ok"


def test_auto_streams_only_big_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = write_rows(tmp_path / "rows.csv", ROWS)
    executor = Executor(stream="auto")
    small = executor.run(flow(rows, tmp_path / "db"))
    assert not isinstance(small.results["load"].outputs["records"], StreamedSample)
    assert executor.run(flow(rows, tmp_path / "db")).results["label"].status == "cached"
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", rows.stat().st_size)
    big = executor.run(flow(rows, tmp_path / "db"))
    assert isinstance(big.results["load"].outputs["records"], StreamedSample)
    assert big.ok and big.results["store"].details["added"] == 0


def test_run_command_streams_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flowbuilder.cli import main
    from flowbuilder.formats.native import save_flow

    rows = write_rows(tmp_path / "rows.csv", ROWS)
    path = tmp_path / "flow.json"
    save_flow(flow(rows, tmp_path / "db"), path)
    assert main(["run", str(path), "--stream", "always"]) == 0
    out = capsys.readouterr().out
    assert f"{ROWS} records (streamed)" in out
    assert main(["run", str(path), "--stream", "never"]) == 0
    out = capsys.readouterr().out
    assert f"{ROWS} records" in out and "(streamed)" not in out


def test_serving_does_not_list_a_streamed_sample_as_every_chunk(tmp_path: Path, small_batches: None) -> None:
    from flowbuilder.errors import ServeError
    from flowbuilder.serving.service import FlowService

    rows = write_rows(tmp_path / "rows.csv", ROWS)
    streamed = FlowService(flow(rows, tmp_path / "db"), base_dir=tmp_path, executor=Executor(stream="always"))
    with pytest.raises(ServeError, match=r"streamed its .* chunks into 'store'"):
        streamed.chunks()
    whole = FlowService(flow(rows, tmp_path / "db"), base_dir=tmp_path, executor=Executor(stream="never"))
    assert sum(len(chunks) for chunks in whole.chunks().values()) > ROWS
