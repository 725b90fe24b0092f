"""A kill -9 in the middle of an ingest loses nothing and duplicates nothing: the next run embeds only what
the embedding cache lacks and writes only what the store lacks.

`flowbuilder run` runs in a subprocess against the loopback fake OpenAI server (slow on purpose), and is
killed with SIGKILL once a few batches are in the embedding cache.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import chromadb

from tests.fakes.llm_server import FakeLLMServer
from tests.serve.conftest import ROOT, subprocess_env
from tests.waiting import wait_until

ROWS = 40


def write_flow(tmp_path: Path, base_url: str) -> Path:
    source = ROOT / "data" / "VWO_500_Test_Cases.csv"
    rows = tmp_path / "rows.csv"
    with source.open(encoding="utf-8-sig", newline="") as src, rows.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        for i, row in enumerate(csv.reader(src)):
            if i > ROWS:
                break
            writer.writerow(row)
    flow = {
        "format": "flowbuilder",
        "version": 1,
        "name": "resume",
        "nodes": [
            {"id": "load", "type": "loader.file", "config": {"path": str(rows), "mode": "records"}},
            {"id": "label", "type": "labeller.row"},
            {"id": "split", "type": "splitter.record"},
            {
                "id": "embed",
                "type": "embedder.openai",
                "config": {"base_url": base_url, "dimensions": 8, "batch_size": 4, "max_in_flight": 1},
            },
            {
                "id": "store",
                "type": "vectorstore.chroma",
                "config": {"collection": "resume", "persist_directory": str(tmp_path / "chroma"), "batch_size": 8},
            },
        ],
        "edges": [
            {"source": "load", "source_port": "records", "target": "label", "target_port": "records"},
            {"source": "label", "source_port": "records", "target": "split", "target_port": "documents"},
            {"source": "split", "source_port": "chunks", "target": "store", "target_port": "documents"},
            {"source": "embed", "source_port": "embedder", "target": "store", "target_port": "embedder"},
        ],
    }
    path = tmp_path / "resume.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    return path


def cached(data_dir: Path) -> int:
    path = data_dir / "embeddings.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not there yet
        return 0


def test_kill_9_mid_ingest_resumes_from_the_cache_without_duplicates(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {**subprocess_env(), "FLOWBUILDER_DATA_DIR": str(data_dir), "OPENAI_API_KEY": "sk-resume-test"}
    with FakeLLMServer(embedding_dim=8) as server:
        server.delay("embeddings", 0.3)
        flow = write_flow(tmp_path, server.openai_base_url)
        # a cloud key goes to a server on this machine only once that server is approved
        approve = f"openai={server.openai_base_url}"
        command = [sys.executable, "-m", "flowbuilder", "run", str(flow), "--allow-endpoint", approve]
        errors = tmp_path / "first-run.err"
        with errors.open("w") as stderr:
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)

            def two_batches_cached() -> bool:
                assert process.poll() is None, f"the first run ended before the kill: {errors.read_text()[-2000:]}"
                return cached(data_dir) >= 16

            wait_until(two_batches_cached, 120, "16 embeddings in the cache")
            os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        before = cached(data_dir)
        assert 16 <= before < ROWS, f"killed too late or too early: {before} of {ROWS} embedded"

        server.clear()
        server.delay("embeddings", 0.01)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        sent = [text for request in server.requests_to("embeddings") for text in request.body["input"]]
        assert len(sent) == ROWS - before  # only what the killed run had not embedded
        assert len(set(sent)) == len(sent)

    collection = chromadb.PersistentClient(path=str(tmp_path / "chroma")).get_collection("resume")
    stored = collection.get(include=["metadatas"])
    assert len(stored["ids"]) == ROWS == len(set(stored["ids"]))
    assert len({m["record_id"] for m in stored["metadatas"] if m}) == ROWS  # every row once
