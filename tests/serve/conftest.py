"""Shared for the serve tests: one `flowbuilder serve` process over the demo flow for the whole session.

The demo flow ingests 500 rows (~25 s) the first time; every process and in-process service here uses
the test sandbox's FLOWBUILDER_DATA_DIR (a tmp folder set by tests/conftest.py), so later ones find the
collection and the embedding cache already filled.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from flowbuilder.flow import Edge, Flow, NodeSpec
from tests.fakes.llm_server import free_port
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
DEMO_FLOW = ROOT / "flows" / "row_labelled_csv_rag.json"
QUESTION = "How is an email with two dots in a row handled at login?"
TOKEN = "serve-test-token-5f1c9a"


def subprocess_env() -> dict[str, str]:
    """The test sandbox's environment with this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def search_flow(name: str, loader_path: str, collection: str, persist_directory: str, k: int) -> Flow:
    """A file loader, one chunk per record, the local embedder and Chroma, searched with the chat input."""
    return Flow(
        name=name,
        nodes=[
            NodeSpec(id="loader", type="loader.file", config={"path": loader_path, "mode": "records"}),
            NodeSpec(id="splitter", type="splitter.record"),
            NodeSpec(id="embedder", type="embedder.local"),
            NodeSpec(
                id="store",
                type="vectorstore.chroma",
                config={"collection": collection, "persist_directory": persist_directory},
            ),
            NodeSpec(id="question", type="chat.input"),
            NodeSpec(id="retriever", type="retriever.vector", config={"k": k}),
        ],
        edges=[
            Edge(source="loader", source_port="records", target="splitter", target_port="documents"),
            Edge(source="splitter", source_port="chunks", target="store", target_port="documents"),
            Edge(source="embedder", source_port="embedder", target="store", target_port="embedder"),
            Edge(source="store", source_port="store", target="retriever", target_port="store"),
            Edge(source="question", source_port="message", target="retriever", target_port="query"),
        ],
    )


def wait_healthy(process: subprocess.Popen[bytes], url: str, headers: dict[str, str], log: Path) -> None:
    """Until ``url``/health answers 200 (180 s); if the process exits first, fail with the end of its ``log``."""

    def healthy() -> bool:
        assert process.poll() is None, f"flowbuilder serve exited: {log.read_text()[-2000:]}"
        return httpx.get(url + "/health", headers=headers, timeout=10).status_code == 200

    wait_until(healthy, 180, "flowbuilder serve to answer /health")  # a cold start on a loaded machine


@dataclass
class Served:
    url: str
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@contextmanager
def serving(flow: Path, log: Path, *options: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``flowbuilder serve FLOW`` on a free loopback port, its stderr in ``log``: ``(url, process)``; stopped after."""
    port = free_port()
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "flowbuilder", "serve", str(flow), "--port", str(port), *options],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=subprocess_env(),
        )
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("serve") / "stderr.txt"
    with serving(DEMO_FLOW, log, "--token", TOKEN) as (url, process):
        served = Served(url, TOKEN, process, log)
        wait_healthy(process, served.url, served.auth, log)
        # Waits for the ingest (the server's warm-up holds the same lock).
        # 500 rows embedded first: minutes on a loaded 2-core machine (a ceiling, not a wait)
        first = httpx.get(served.url + "/search", params={"q": QUESTION, "k": 1}, headers=served.auth, timeout=900)
        assert first.status_code == 200, first.text
        yield served
