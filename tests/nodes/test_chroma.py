"""vectorstore.chroma with the real local embedder: embedded on disk, and against a real `chroma run` server."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.data import Document
from flowbuilder.errors import NodeError, ProviderError, RunCancelledError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.local import LocalEmbedder
from flowbuilder.nodes.vectorstores.chroma import ChromaConfig, ChromaNode, ChromaStore
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests import servers

CSV_PATH = Path(__file__).resolve().parents[2] / "data" / "VWO_500_Test_Cases.csv"
LABELLED_COLUMNS = ("Scenario TID", "TestCase Description", "PreCondition", "TestSteps", "Expected Result", "Priority")


def vwo_records() -> list[Document]:
    with CSV_PATH.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    docs = []
    for number, row in enumerate(rows, start=1):
        text = "\n".join(f"{col}: {row[col]}" for col in LABELLED_COLUMNS if row.get(col))
        metadata = {
            "source": CSV_PATH.name,
            "row": number,
            "record_id": row["Scenario TID"],
            "record_ids": [row["Scenario TID"]],
            "record_spans": [[row["Scenario TID"], 0, len(text)]],
            "columns": {"Priority": row["Priority"]},
            "module": row["Scenario TID"].split("-")[0],
        }
        docs.append(Document(text=text, metadata=metadata))
    return docs


def run_chroma(
    config: dict[str, Any],
    embedder: Any,
    data_dir: Path,
    documents: list[Document] | None = None,
    query: str | None = None,
) -> tuple[dict[str, Any], RunContext]:
    ctx = RunContext("store", data_dir=data_dir)
    inputs: dict[str, Any] = {"embedder": embedder}
    if documents is not None:
        inputs["documents"] = [documents]
    if query is not None:
        inputs["query"] = query
    return ChromaNode(ChromaConfig(**config)).run(inputs, ctx), ctx


@pytest.fixture(scope="module")
def records() -> list[Document]:
    return vwo_records()


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, records: list[Document]) -> dict[str, Any]:
    data_dir = tmp_path_factory.mktemp("data")
    embedder = LocalEmbedder(cache_dir=data_dir)
    outputs, ctx = run_chroma({"collection": "vwo-tests", "k": 5}, embedder, data_dir, records)
    return {"data_dir": data_dir, "embedder": embedder, "outputs": outputs, "details": ctx.details}


def test_ingests_all_500_rows_with_details(ingested: dict[str, Any]) -> None:
    details = ingested["details"]
    assert details["count"] == 500
    assert details["added"] == 500
    assert details["already_present"] == 0
    assert details["collection"] == "vwo-tests"
    assert details["location"] == str(ingested["data_dir"] / "chroma")
    sample = details["sample_vector"]
    assert sample["dimension"] == 384 and len(sample["values"]) == 8
    assert "hits" not in ingested["outputs"]  # no query connected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How is an email with two dots in a row handled at login?", "INVALID-011"),
        ("What happens when the login email has no @ sign?", "INVALID-004"),
        ("Can a user log in with an email address that contains a plus alias?", "VALID-003"),
    ],
)
def test_sensible_records_are_in_the_top_5(ingested: dict[str, Any], question: str, expected: str) -> None:
    store: ChromaStore = ingested["outputs"]["store"]
    hits = store.search(question, 5)
    ids = [hit.document.metadata["record_id"] for hit in hits]
    assert expected in ids, ids
    assert [hit.rank for hit in hits] == [1, 2, 3, 4, 5]
    assert all(hits[i].score >= hits[i + 1].score for i in range(4))


def test_score_is_cosine_similarity_and_metadata_round_trips(ingested: dict[str, Any], records: list[Document]) -> None:
    store: ChromaStore = ingested["outputs"]["store"]
    embedder: LocalEmbedder = ingested["embedder"]
    target = records[10]
    hits = store.search(target.text, 1)
    assert hits[0].document.text == target.text
    query_vector = embedder.embed_query(target.text)
    doc_vector = embedder.embed_documents([target.text])[0]
    cosine = sum(a * b for a, b in zip(query_vector, doc_vector, strict=True))
    assert hits[0].score == pytest.approx(cosine, abs=1e-3)
    # lists and dicts went in as JSON strings and come back as they were
    assert hits[0].document.metadata == target.metadata


def test_where_filter_and_min_score(ingested: dict[str, Any]) -> None:
    store: ChromaStore = ingested["outputs"]["store"]
    hits = store.search("email validation at login", 5, where={"module": "SUPPORT"})
    assert hits and all(h.document.metadata["module"] == "SUPPORT" for h in hits)
    two_keys = store.search("email validation", 3, where={"module": "LOGIN", "row": {"$lte": 40}})
    assert len(two_keys) == 3 and all(h.document.metadata["row"] <= 40 for h in two_keys)
    unfiltered = store.search("email validation at login", 5)
    threshold = (unfiltered[1].score + unfiltered[2].score) / 2
    assert len(store.search("email validation at login", 5, min_score=threshold)) == 2
    with pytest.raises(NodeError, match="metadata filter"):
        store.search("x", 2, where={"row": {"$regex": 1}})


def test_reingest_adds_nothing_and_embeds_nothing(ingested: dict[str, Any], records: list[Document]) -> None:
    data_dir = ingested["data_dir"]
    fresh = LocalEmbedder(cache_dir=data_dir)
    _, ctx = run_chroma({"collection": "vwo-tests"}, fresh, data_dir, records)
    assert ctx.details["added"] == 0
    assert ctx.details["already_present"] == 500
    assert ctx.details["count"] == 500
    assert fresh.model_texts == 0  # existing ids were skipped before embedding


def test_cache_serves_a_new_collection_without_model_calls(ingested: dict[str, Any], records: list[Document]) -> None:
    data_dir = ingested["data_dir"]
    fresh = LocalEmbedder(cache_dir=data_dir)
    _, ctx = run_chroma({"collection": "vwo-copy"}, fresh, data_dir, records[:50])
    assert ctx.details["added"] == 50
    assert fresh.model_batches == 0 and fresh.model_texts == 0


def test_query_input_outputs_hits(ingested: dict[str, Any]) -> None:
    outputs, ctx = run_chroma(
        {"collection": "vwo-tests", "k": 3},
        ingested["embedder"],
        ingested["data_dir"],
        query="consecutive dots in the email address",
    )
    assert [h.rank for h in outputs["hits"]] == [1, 2, 3]
    assert outputs["hits"][0].document.metadata["record_id"] == "INVALID-011"
    assert ctx.details["sync"].startswith("none") and not ctx.warning


class OtherModel(LocalEmbedder):
    model_id = "test/other-model"


def test_refuses_a_collection_filled_by_another_embedder(ingested: dict[str, Any]) -> None:
    with pytest.raises(NodeError) as info:
        run_chroma({"collection": "vwo-tests"}, OtherModel(), ingested["data_dir"], query="x")
    message = str(info.value)
    assert "local/all-MiniLM-L6-v2-int8" in message and "test/other-model" in message
    assert "new collection name" in message


@pytest.mark.parametrize("name", ["t", "has space", "bad/slash", "-edge-", "x" * 513])
def test_invalid_collection_names(tmp_path: Path, name: str) -> None:
    assert ChromaNode.config_problems(ChromaConfig(collection=name))
    with pytest.raises(NodeError, match="3 to 512 characters"):
        run_chroma({"collection": name}, LocalEmbedder(), tmp_path)


def test_progress_and_cancel(tmp_path: Path, records: list[Document]) -> None:
    import threading

    events: list[dict[str, Any]] = []
    cancel = threading.Event()

    def emit(kind: str, data: dict[str, Any]) -> None:
        if kind == "progress":
            events.append(data)
            cancel.set()  # cancel after the first progress report

    ctx = RunContext("store", data_dir=tmp_path, emit=emit, cancel_event=cancel)
    node = ChromaNode(ChromaConfig(collection="cancel-me", batch_size=16))
    with pytest.raises(RunCancelledError):
        node.run({"embedder": LocalEmbedder(batch_size=8, cache_dir=tmp_path), "documents": [records[:64]]}, ctx)
    assert events and events[0]["total"] == 64


def test_flow_through_the_executor(ingested: dict[str, Any]) -> None:
    """embedder.local -> vectorstore.chroma -> retriever.vector, run by the real executor."""
    flow = Flow(
        name="t",
        nodes=[
            NodeSpec(id="emb", type="embedder.local"),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "vwo-tests"}),
            NodeSpec(id="ask", type="chat.input", config={"text": "consecutive dots in email"}),
            NodeSpec(id="ret", type="retriever.vector", config={"k": 2}),
        ],
        edges=[
            Edge(source="emb", source_port="embedder", target="store", target_port="embedder"),
            Edge(source="store", source_port="store", target="ret", target_port="store"),
            Edge(source="ask", source_port="message", target="ret", target_port="query"),
        ],
    )
    # the collection was filled by the fixture (the node run by itself, in the data dir); this flow has no loader
    # and only reads it: another flow's state, so it names the folder and the user approves that collection
    folder = ingested["data_dir"] / "chroma"
    flow.nodes[1].config["persist_directory"] = str(folder)
    refused = Executor(data_dir=ingested["data_dir"]).run(flow)
    assert not refused.ok and "untrusted-store" in str(refused.results["store"].error)
    approved = CredentialResolver(store=CredentialStore(folder / "none.json"), stores=[f"chroma:{folder}:vwo-tests"])
    result = Executor(resolver=approved, data_dir=ingested["data_dir"]).run(flow)
    assert result.ok, [r.error for r in result.failed()]
    hits = result.results["ret"].outputs["hits"]
    assert len(hits) == 2 and hits[0].document.metadata["record_id"] == "INVALID-011"


# -- a real Chroma server -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with servers.chroma_server(tmp_path_factory.mktemp("chroma-server")) as port:
        yield port


@pytest.mark.slow
def test_server_mode_against_real_chroma(
    chroma_server: int, tmp_path: Path, ingested: dict[str, Any], records: list[Document]
) -> None:
    config = {"collection": "remote-vwo", "server_host": "127.0.0.1", "server_port": chroma_server, "k": 5}
    embedder = LocalEmbedder(cache_dir=ingested["data_dir"])  # cached vectors: fast
    outputs, ctx = run_chroma(config, embedder, tmp_path, records[:200])
    assert ctx.details["count"] == 200 and ctx.details["location"] == f"http://127.0.0.1:{chroma_server}"
    assert not (tmp_path / "chroma").exists()  # nothing embedded on disk
    outputs, ctx = run_chroma(
        config, embedder, tmp_path, records[:200], query="valid login with an email address that has dots in it"
    )
    assert ctx.details["added"] == 0 and ctx.details["count"] == 200
    assert "VALID-007" in [h.document.metadata["record_id"] for h in outputs["hits"]]
    assert outputs["hits"][0].document.metadata["record_ids"] == [outputs["hits"][0].document.metadata["record_id"]]
    with pytest.raises(NodeError, match="test/other-model"):
        run_chroma(config, OtherModel(), tmp_path, query="x")


def test_server_mode_unreachable(tmp_path: Path) -> None:
    port = servers.free_port()
    with pytest.raises(ProviderError, match=f"no Chroma server is reachable at http://127.0.0.1:{port}"):
        run_chroma({"server_host": "127.0.0.1", "server_port": port}, LocalEmbedder(), tmp_path, query="x")


def test_a_blank_question_gives_no_hits(tmp_path: Path) -> None:
    # a value of the wrong type never reaches run: tests/core/test_port_values.py checks that the executor names it
    outputs, _ = run_chroma({}, LocalEmbedder(), tmp_path, query="  ")
    assert "store" in outputs and "hits" not in outputs
