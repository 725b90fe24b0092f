"""Store sync (incremental / full / append) through the real executor, on every store: embedded Chroma,
a real `chroma run` server and Pinecone (the real SDK against tests/fakes/pinecone_server.py).

Each test writes small CSVs, runs loader -> splitter -> store (+ local MiniLM embedder) and checks the
counts the node reports, the summary line and what a search returns.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.executor import Executor, RunResult
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.http import approvals
from tests.fakes.pinecone_server import FakePinecone
from tests.nodes.test_chroma import chroma_server  # noqa: F401  (the module's real Chroma server)

KEY = "pk-sync-test-key"
ROWS = [
    ("LOGIN_001", "Login with a valid email and password opens the dashboard"),
    ("LOGIN_002", "Login with a wrong password shows an error message"),
    ("LOGIN_003", "Password reset sends an email with a one-time link"),
    ("LOGIN_004", "Two consecutive dots in the email address are rejected"),
    ("LOGIN_005", "Locked account after five failed attempts"),
    ("LOGIN_006", "Remember me keeps the session for thirty days"),
]
_names = itertools.count()


def write_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("id,description\n" + "".join(f"{i},{d}\n" for i, d in rows), encoding="utf-8")
    return path


class Backend:
    """One store kind: its node type and config, and how the executor reaches it."""

    def __init__(self, type_name: str, config: dict[str, Any], executor: Executor) -> None:
        self.type_name = type_name
        self.config = config
        self.executor = executor


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sync-data")  # shared: the embedding cache makes later runs fast


@pytest.fixture(scope="module")
def pinecone_server() -> Iterator[FakePinecone]:
    with FakePinecone(api_key=KEY) as fake:
        yield fake


@pytest.fixture(params=["chroma", "chroma-server", "pinecone"])
def backend(request: pytest.FixtureRequest, data_dir: Path, tmp_path: Path) -> Backend:
    collection = f"sync-{next(_names)}"
    if request.param == "chroma":
        return Backend(
            "vectorstore.chroma",
            {"collection": collection, "persist_directory": str(tmp_path / "chroma")},
            Executor(data_dir=data_dir),
        )
    if request.param == "chroma-server":
        port = request.getfixturevalue("chroma_server")
        config = {"collection": collection, "server_host": "127.0.0.1", "server_port": port}
        return Backend("vectorstore.chroma", config, Executor(data_dir=data_dir))
    fake: FakePinecone = request.getfixturevalue("pinecone_server")
    fake.create_index(collection, dimension=384)
    store = CredentialStore(tmp_path / "creds.json")
    resolver = CredentialResolver({"pinecone.api_key": KEY}, store=store, environ={}, approved=approvals(fake.url))
    return Backend("vectorstore.pinecone", {"host": fake.url}, Executor(resolver=resolver, data_dir=data_dir))


def ingest_flow(backend: Backend, csvs: list[Path], *, chunk_size: int = 1000, **store: Any) -> Flow:
    nodes = [
        NodeSpec(id="emb", type="embedder.local"),
        NodeSpec(id="store", type=backend.type_name, config={**backend.config, **store}),
    ]
    edges = [Edge(source="emb", source_port="embedder", target="store", target_port="embedder")]
    for n, csv_path in enumerate(csvs):
        nodes += [
            NodeSpec(id=f"load{n}", type="loader.file", config={"path": str(csv_path)}),
            NodeSpec(id=f"split{n}", type="splitter.recursive", config={"chunk_size": chunk_size, "chunk_overlap": 0}),
        ]
        edges += [
            Edge(source=f"load{n}", source_port="records", target=f"split{n}", target_port="documents"),
            Edge(source=f"split{n}", source_port="chunks", target="store", target_port="documents"),
        ]
    return Flow(name="sync", nodes=nodes, edges=edges)


def run_ok(backend: Backend, flow: Flow) -> RunResult:
    result = backend.executor.run(flow)
    assert result.ok, [r.error for r in result.failed()]
    return result


def synced(result: RunResult) -> tuple[int, int, int, int]:
    """``(added, removed, kept, count)`` as the store node reported them."""
    d = result.results["store"].details
    return d["added"], d["removed"], d["kept"], d["count"]


def search(backend: Backend, query: str, k: int = 10) -> list[str]:
    flow = Flow(
        name="search",
        nodes=[
            NodeSpec(id="emb", type="embedder.local"),
            NodeSpec(id="ask", type="chat.input", config={"text": query}),
            NodeSpec(id="store", type=backend.type_name, config={**backend.config, "k": k}),
        ],
        edges=[
            Edge(source="emb", source_port="embedder", target="store", target_port="embedder"),
            Edge(source="ask", source_port="message", target="store", target_port="query"),
        ],
    )
    result = run_ok(backend, flow)
    return [hit.document.text for hit in result.results["store"].outputs["hits"]]


def test_edited_and_removed_rows_leave_the_store(backend: Backend, tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "cases.csv", ROWS)
    first = run_ok(backend, ingest_flow(backend, [csv_path]))
    assert synced(first) == (6, 0, 0, 6)
    assert first.results["store"].summary.startswith("+6 added, \u22120 removed, 0 kept; 6 in collection")

    edited = list(ROWS)
    edited[3] = ("LOGIN_004", "Two consecutive dots in the email address are accepted after trimming")
    write_csv(csv_path, edited)
    second = run_ok(backend, ingest_flow(backend, [csv_path]))
    assert synced(second) == (1, 1, 5, 6)
    texts = search(backend, "consecutive dots in the email address")
    assert any("accepted after trimming" in t for t in texts)
    assert not any("are rejected" in t for t in texts)  # the old version of the row is gone

    write_csv(csv_path, edited[:4] + edited[5:])  # LOGIN_005 removed
    third = run_ok(backend, ingest_flow(backend, [csv_path]))
    # LOGIN_005 is gone, and LOGIN_006 moved up a row: it is rewritten with its new row number, never left stale.
    assert synced(third) == (1, 2, 4, 5)
    assert not any("Locked account" in t for t in search(backend, "account locked after failed attempts"))


def test_changed_chunk_size_replaces_every_chunk(backend: Backend, tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "cases.csv", ROWS)
    run_ok(backend, ingest_flow(backend, [csv_path], chunk_size=1000))
    smaller = run_ok(backend, ingest_flow(backend, [csv_path], chunk_size=30))
    added, removed, kept, count = synced(smaller)
    assert removed == 6 and kept == 0 and added == count and count > 6  # only the 30-char chunks remain
    assert all(len(t) <= 30 for t in search(backend, "password reset email", k=count))
    # back to 1000: the whole rows return (their vectors come from the embedding cache)
    assert synced(run_ok(backend, ingest_flow(backend, [csv_path], chunk_size=1000))) == (6, count, 0, 6)


def test_two_sources_in_one_collection(backend: Backend, tmp_path: Path) -> None:
    a = write_csv(tmp_path / "a.csv", ROWS[:3])
    b = write_csv(tmp_path / "b.csv", ROWS[3:])
    assert synced(run_ok(backend, ingest_flow(backend, [a, b]))) == (6, 0, 0, 6)
    # incremental: a run that ingests only a.csv (one row edited) leaves b.csv's chunks alone
    write_csv(a, [ROWS[0], ROWS[1], ("LOGIN_003", "Password reset link expires after one hour")])
    assert synced(run_ok(backend, ingest_flow(backend, [a]))) == (1, 1, 2, 6)
    # append: nothing is removed, the edit is added next to the old version
    write_csv(a, [ROWS[0], ROWS[1], ("LOGIN_003", "Password reset link expires after two hours")])
    assert synced(run_ok(backend, ingest_flow(backend, [a], sync="append"))) == (1, 0, 2, 7)
    # full: the collection holds exactly this run's chunks (b.csv and the appended version go)
    assert synced(run_ok(backend, ingest_flow(backend, [a], sync="full"))) == (0, 4, 3, 3)


def test_unchanged_rerun_embeds_nothing(backend: Backend, tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "cases.csv", ROWS)
    run_ok(backend, ingest_flow(backend, [csv_path]))
    fresh = Executor(resolver=backend.executor.resolver, data_dir=backend.executor.data_dir)  # no result cache
    again = fresh.run(ingest_flow(backend, [csv_path]))
    assert again.ok and again.results["store"].status == "ok"
    assert synced(again) == (0, 0, 6, 6)


def test_pinecone_list_pages_and_delete_shapes(pinecone_server: FakePinecone) -> None:
    """The fake answers GET /vectors/list and POST /vectors/delete as Pinecone does (via the real SDK)."""
    import pinecone

    pinecone_server.create_index("shapes", dimension=2)
    index = pinecone.Pinecone(api_key=KEY).Index(host=pinecone_server.url)
    index.upsert(vectors=[(f"p{n % 2}#{n:03d}", [1.0, float(n)], {"n": n}) for n in range(150)])
    pages = list(index.list(prefix="p1#"))
    assert [len(p.vectors) for p in pages] == [75] and pages[0].vectors[0].id == "p1#001"
    assert sum(len(p.vectors) for p in index.list()) == 150  # two pages of 100 + 50
    index.delete(filter={"n": {"$lt": 10}})
    index.delete(ids=["p0#010", "p1#011"])
    assert pinecone_server.vector_count() == 138
