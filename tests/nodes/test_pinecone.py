"""vectorstore.pinecone: the real pinecone SDK against tests/fakes/pinecone_server.py, with the local embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.data import Document
from flowbuilder.errors import CredentialError, NodeError, ProviderError
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.local import LocalEmbedder
from flowbuilder.nodes.vectorstores.common import MODEL_FIELD, TEXT_FIELD
from flowbuilder.nodes.vectorstores.pinecone import PineconeConfig, PineconeNode, PineconeStore
from tests.fakes.pinecone_server import FakePinecone, matches_filter
from tests.nodes.test_chroma import vwo_records
from tests.ports import reserve_port

KEY = "pk-test-secret-123"


@pytest.fixture(scope="module")
def records() -> list[Document]:
    return vwo_records()


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    return LocalEmbedder(cache_dir=tmp_path_factory.mktemp("emb-cache"))


@pytest.fixture
def server() -> Iterator[FakePinecone]:
    with FakePinecone(api_key=KEY) as fake:
        fake.create_index("vwo", dimension=384)
        yield fake


def run_node(
    config: dict[str, Any],
    embedder: Any,
    tmp_path: Path,
    documents: list[Document] | None = None,
    query: str | None = None,
    key: str | None = KEY,
) -> tuple[dict[str, Any], RunContext]:
    ctx = RunContext("pc", data_dir=tmp_path, secrets={"api_key": key} if key else {})
    inputs: dict[str, Any] = {"embedder": embedder}
    if documents is not None:
        inputs["documents"] = [documents]
    if query is not None:
        inputs["query"] = query
    return PineconeNode(PineconeConfig(**config)).run(inputs, ctx), ctx


def test_ingest_search_and_idempotence_by_host(
    server: FakePinecone, embedder: LocalEmbedder, records: list[Document], tmp_path: Path
) -> None:
    docs = records[150:260]  # the INVALID-* login cases
    config = {"host": server.url, "namespace": "vwo", "k": 5}
    outputs, ctx = run_node(config, embedder, tmp_path, docs)
    assert ctx.details["added"] == len(docs) and ctx.details["count"] == len(docs)
    assert server.vector_count("vwo") == len(docs)
    assert ctx.details["sample_vector"]["dimension"] == 384
    # the wire: the SDK sent our key, the API version and the vectors with text + model metadata
    upserts = server.requests_to("/vectors/upsert")
    assert upserts and all(r.headers["api-key"] == KEY for r in upserts)
    assert upserts[0].headers["x-pinecone-api-version"] == "2026-07"
    first = upserts[0].body["vectors"][0]
    assert len(first["values"]) == 384 and first["metadata"][MODEL_FIELD] == embedder.model_id
    # (batches go shortest text first, so find the chunk the first vector came from by its text)
    source = next(d for d in docs if d.text == first["metadata"][TEXT_FIELD])
    assert first["metadata"]["record_ids"] == [source.record_id]  # a list of strings stays a list
    sent = [v["metadata"][TEXT_FIELD] for r in upserts for v in r.body["vectors"]]
    assert sorted(sent) == sorted(d.text for d in docs)  # every chunk went out, once
    assert upserts[0].body["namespace"] == "vwo"

    # re-ingest: fetched ids exist, nothing is embedded or upserted again
    before = len(server.requests_to("/vectors/upsert"))
    fresh = LocalEmbedder(cache_dir=embedder.cache.path.parent if embedder.cache else None)
    outputs, ctx = run_node(config, fresh, tmp_path, docs, query="consecutive dots in the email address")
    assert ctx.details["added"] == 0 and ctx.details["already_present"] == len(docs)
    assert len(server.requests_to("/vectors/upsert")) == before
    assert fresh.model_texts == 1  # only the question
    hits = outputs["hits"]
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert "INVALID-011" in [h.document.metadata["record_id"] for h in hits]
    query_body = server.requests_to("/query")[-1].body
    assert query_body["topK"] == 5 and query_body["namespace"] == "vwo" and query_body["includeMetadata"] is True


def test_hits_round_trip_metadata_and_cosine_score(
    server: FakePinecone, embedder: LocalEmbedder, records: list[Document], tmp_path: Path
) -> None:
    docs = records[150:200]
    outputs, _ = run_node({"host": server.url}, embedder, tmp_path, docs)
    store: PineconeStore = outputs["store"]
    target = docs[7]
    hit = store.search(target.text, 1)[0]
    assert hit.document.text == target.text
    assert hit.document.metadata == target.metadata  # ints stay ints, dicts/lists come back decoded
    q = embedder.embed_query(target.text)
    d = embedder.embed_documents([target.text])[0]
    assert hit.score == pytest.approx(sum(a * b for a, b in zip(q, d, strict=True)), abs=1e-4)


def test_where_filter_min_score_and_node_query(
    server: FakePinecone, embedder: LocalEmbedder, records: list[Document], tmp_path: Path
) -> None:
    run_node({"host": server.url}, embedder, tmp_path, records[:300])
    store_outputs, _ = run_node({"host": server.url}, embedder, tmp_path)
    store: PineconeStore = store_outputs["store"]
    hits = store.search("email validation", 4, where={"module": {"$in": ["VALID", "SUPPORT"]}})
    assert len(hits) == 4 and {h.document.metadata["module"] for h in hits} <= {"VALID", "SUPPORT"}
    assert server.requests_to("/query")[-1].body["filter"] == {"module": {"$in": ["VALID", "SUPPORT"]}}
    all_hits = store.search("email validation", 4)
    threshold = (all_hits[0].score + all_hits[1].score) / 2
    assert len(store.search("email validation", 4, min_score=threshold)) == 1
    outputs, _ = run_node(
        {"host": server.url, "k": 2, "where": {"row": {"$lte": 80}}}, embedder, tmp_path, query="email autocomplete"
    )
    assert len(outputs["hits"]) == 2 and all(h.document.metadata["row"] <= 80 for h in outputs["hits"])


def test_by_index_name_through_the_control_plane(
    server: FakePinecone, embedder: LocalEmbedder, records: list[Document], tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("PINECONE_CONTROLLER_HOST", server.url)  # the SDK's documented override
    _, ctx = run_node({"index": "vwo"}, embedder, tmp_path, records[:20])
    assert ctx.details["count"] == 20 and ctx.details["index"] == "vwo"
    assert server.requests_to("/indexes/vwo")  # the SDK described the index to find its host
    with pytest.raises(ProviderError, match=r"no index named 'missing'\. Indexes in this project: vwo"):
        run_node({"index": "missing"}, embedder, tmp_path, query="x")


def test_dimension_and_model_mismatch_are_refused(
    server: FakePinecone, embedder: LocalEmbedder, records: list[Document], tmp_path: Path
) -> None:
    server.create_index("small", dimension=8)
    with pytest.raises(NodeError, match=r"holds 8-d vectors .* makes 384-d"):
        run_node({"host": server.url}, embedder, tmp_path, query="x")
    server.data_index = "vwo"
    run_node({"host": server.url}, embedder, tmp_path, records[:5])

    class OtherModel(LocalEmbedder):
        model_id = "test/other-model"

    with pytest.raises(NodeError) as info:
        run_node({"host": server.url}, OtherModel(), tmp_path, query="x")
    assert "local/all-MiniLM-L6-v2-int8" in str(info.value) and "test/other-model" in str(info.value)
    # a namespace of its own is fine
    _, ctx = run_node({"host": server.url, "namespace": "other"}, OtherModel(), tmp_path, query="x")
    assert ctx.details["count"] == 0


def test_401_names_the_slot_and_never_the_key(server: FakePinecone, embedder: LocalEmbedder, tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        run_node({"host": server.url}, embedder, tmp_path, query="x", key="pk-wrong-key-456")
    message = str(info.value)
    assert "401" in message and "`api_key` slot" in message
    assert "pk-wrong-key-456" not in message and KEY not in message
    assert server.requests[-1].headers["api-key"] == "pk-wrong-key-456"


def test_missing_credential(server: FakePinecone, embedder: LocalEmbedder, tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match="api_key"):
        run_node({"host": server.url}, embedder, tmp_path, query="x", key=None)


def test_429_once_recovers_and_persistent_429_is_clear(
    server: FakePinecone, embedder: LocalEmbedder, records: list[Document], tmp_path: Path
) -> None:
    run_node({"host": server.url}, embedder, tmp_path, records[:5])
    asked = len(server.requests_to("/query"))
    expected, _ = run_node({"host": server.url}, embedder, tmp_path, query="login page")
    plain = len(server.requests_to("/query")) - asked  # the queries one search sends
    server.fail("/query", 429, times=1)
    outputs, _ = run_node({"host": server.url}, embedder, tmp_path, query="login page")
    assert len(server.requests_to("/query")) - asked == 2 * plain + 1  # the refused one was asked again
    assert outputs["hits"] == expected["hits"] and len(expected["hits"]) == 4  # the default k, of the 5 stored
    server.fail("/query", 429)
    with pytest.raises(ProviderError, match=r"rate limiting \(429"):
        run_node({"host": server.url}, embedder, tmp_path, query="login page")


@pytest.mark.slow
def test_connection_refused(embedder: LocalEmbedder, tmp_path: Path) -> None:
    port = reserve_port()  # nothing listens there, and no other test process takes it
    with pytest.raises(ProviderError, match=f"not reachable at http://127.0.0.1:{port}"):
        run_node({"host": f"http://127.0.0.1:{port}"}, embedder, tmp_path, query="x")


def test_config_needs_index_or_host() -> None:
    assert PineconeNode.config_problems(PineconeConfig())
    assert not PineconeNode.config_problems(PineconeConfig(index="docs"))


def test_fake_filter_semantics() -> None:
    meta = {"module": "LOGIN", "row": 3, "tags": ["a", "b"]}
    assert matches_filter(meta, {"module": "LOGIN", "row": {"$gte": 3}})
    assert not matches_filter(meta, {"row": {"$gt": 3}})
    assert matches_filter(meta, {"tags": {"$in": ["b"]}})
    assert matches_filter(meta, {"$or": [{"module": "X"}, {"row": {"$lt": 4}}]})
    assert not matches_filter(meta, {"$and": [{"module": "LOGIN"}, {"module": {"$ne": "LOGIN"}}]})
    assert matches_filter(meta, {"missing": {"$nin": ["x"]}})
