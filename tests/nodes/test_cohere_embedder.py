"""``embedder.cohere``: the official cohere SDK against the loopback Cohere fake (``POST /v2/embed``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flowbuilder.cli import main
from flowbuilder.errors import CredentialError, ProviderError
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.cohere import CohereEmbedder, CohereEmbedderConfig, CohereEmbedderNode
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.egress import node_problems
from tests.fakes.cohere_server import FakeCohereServer
from tests.fakes.llm_server import fake_embedding, free_port

KEY = "co-SECRET-embed-key-0123456789"
TEXTS = [f"ticket {i}: the login form rejects an email with two dots" for i in range(200)]


@pytest.fixture
def server() -> Iterator[FakeCohereServer]:
    with FakeCohereServer(api_key=KEY) as fake:
        yield fake


def embedder(server: FakeCohereServer, key: str = KEY, data_dir: Path | None = None, **config: Any) -> CohereEmbedder:
    node = CohereEmbedderNode(CohereEmbedderConfig(base_url=server.url, **{"cache": False, **config}))
    out = node.run({}, RunContext("emb", secrets={"api_key": key}, data_dir=data_dir))
    assert isinstance(out["embedder"], CohereEmbedder)
    return out["embedder"]


def embeds(server: FakeCohereServer) -> list[Any]:
    return [r for r in server.requests if r.path == "/v2/embed"]


def test_documents_go_out_as_search_document_in_batches_of_at_most_96(server: FakeCohereServer) -> None:
    emb = embedder(server, max_in_flight=2)
    assert emb.dimension == 1024  # known for the model: no request needed
    vectors = emb.embed_documents(TEXTS)
    requests = embeds(server)
    assert sorted(len(r.body["texts"]) for r in requests) == [8, 96, 96]
    assert {r.body["input_type"] for r in requests} == {"search_document"}
    assert {r.body["model"] for r in requests} == {"embed-english-v3.0"}
    assert {r.authorization for r in requests} == {f"Bearer {KEY}"}
    for text, vector in zip(TEXTS, vectors, strict=True):  # each vector is its own text's, in order
        assert vector == pytest.approx(fake_embedding(f"search_document:{text}", 1024), abs=1e-6)


def test_a_question_goes_out_as_search_query_and_gets_its_own_vector(server: FakeCohereServer) -> None:
    emb = embedder(server, model="embed-english-light-v3.0")
    question = "why is my email rejected"
    vector = emb.embed_query(question)
    [request] = embeds(server)
    assert request.body["input_type"] == "search_query" and request.body["texts"] == [question]
    assert vector == pytest.approx(fake_embedding(f"search_query:{question}", 384), abs=1e-6)
    assert vector != pytest.approx(emb.embed_documents([question])[0], abs=1e-6)


def test_the_cache_keeps_documents_and_questions_apart_and_a_rerun_sends_nothing(
    server: FakeCohereServer, tmp_path: Path
) -> None:
    first = embedder(server, cache=True, data_dir=tmp_path)
    documents = first.embed_documents(TEXTS[:10])
    question = first.embed_query(TEXTS[0])  # the same text as a question: a different vector
    assert len(embeds(server)) == 2
    again = embedder(server, cache=True, data_dir=tmp_path)
    assert np.allclose(again.embed_documents(TEXTS[:10]), documents, atol=1e-6)
    assert again.embed_query(TEXTS[0]) == pytest.approx(question, abs=1e-6)
    assert len(embeds(server)) == 2  # both came from the cache
    assert again.model_id == "cohere/embed-english-v3.0"


def test_a_429_is_retried_then_reported_when_it_persists(server: FakeCohereServer) -> None:
    server.fail(429, times=1)
    emb = embedder(server)
    assert emb.embed_documents(["refund policy"])[0] == pytest.approx(
        fake_embedding("search_document:refund policy", 1024), abs=1e-6
    )
    assert emb.retries == 1 and len(embeds(server)) == 2
    server.fail(429, times=5)
    with pytest.raises(ProviderError, match=r"rate limit exceeded .*\(429, after retries\).*Trial key"):
        embedder(server, max_retries=1).embed_documents(["x"])


def test_errors_are_one_clear_line_without_the_key(server: FakeCohereServer) -> None:
    with pytest.raises(ProviderError, match=r"rejected the API key \(401\).*api_key") as info:
        embedder(server, key="co-WRONG-key-999999").embed_documents(["x"])
    assert "co-WRONG" not in str(info.value)
    with pytest.raises(ProviderError, match=r"model 'embed-nope' does not exist .*embed-english-v3.0"):
        embedder(server, model="embed-nope").embed_documents(["x"])
    node = CohereEmbedderNode(CohereEmbedderConfig(base_url=f"http://127.0.0.1:{free_port()}", cache=False))
    unreachable = node.run({}, RunContext("emb", secrets={"api_key": KEY}))["embedder"]
    with pytest.raises(ProviderError, match="is not reachable"):
        unreachable.embed_documents(["x"])
    with pytest.raises(CredentialError, match="api_key"):
        CohereEmbedderNode(CohereEmbedderConfig()).run({}, RunContext("emb"))


def test_many_batches_failing_say_which_batch_and_what_is_kept(server: FakeCohereServer, tmp_path: Path) -> None:
    emb = embedder(server, cache=True, data_dir=tmp_path, batch_size=50, max_in_flight=1)
    emb.embed_documents(TEXTS[:50])
    server.fail(500, times=10)
    with pytest.raises(ProviderError, match=r"batch 1 of 2 .*answered 500.*already embedded are in the embedding"):
        embedder(server, cache=True, data_dir=tmp_path, batch_size=50, max_retries=0, max_in_flight=1).embed_documents(
            TEXTS[:150]
        )


def resolver(tmp_path: Path, **kwargs: Any) -> CredentialResolver:
    return CredentialResolver({"cohere": KEY}, store=CredentialStore(tmp_path / "c.json"), environ={}, **kwargs)


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("", None),  # Cohere's own API
        ("https://api.cohere.com", None),
        ("https://api.cohere.ai/v2", None),
        ("http://api.cohere.com", "unsafe-credential"),  # the key in clear text
        ("https://cohere.attacker.example", "unsafe-credential"),
        ("http://127.0.0.1:8123", "unsafe-credential"),  # another user's server on this machine
    ],
)
def test_the_key_goes_only_to_cohere_unless_approved(tmp_path: Path, url: str, code: str | None) -> None:
    config = CohereEmbedderConfig(base_url=url)
    problems = node_problems("emb", CohereEmbedderNode, config, {}, resolver(tmp_path))
    assert [p.code for p in problems] == ([code] if code else [])
    if code:
        assert problems[0].detail["provider"] == "cohere"
        approved = resolver(tmp_path, approved=[("cohere", url)])
        assert node_problems("emb", CohereEmbedderNode, config, {}, approved) == []


def test_a_flow_ingests_and_searches_through_cohere_once_the_endpoint_is_approved(
    server: FakeCohereServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "handbook.txt").write_text(
        "\n\n".join(f"Policy {i}: refunds are paid within {i + 3} days of a return." for i in range(12)),
        encoding="utf-8",
    )
    flow = Flow(
        name="cohere rag",
        nodes=[
            NodeSpec(id="loader", type="loader.file", config={"path": "handbook.txt"}),
            NodeSpec(id="splitter", type="splitter.recursive", config={"chunk_size": 80, "chunk_overlap": 0}),
            NodeSpec(id="embedder", type="embedder.cohere", config={"base_url": server.url}),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "cohere-e2e"}),
            NodeSpec(id="question", type="chat.input"),
            NodeSpec(id="retriever", type="retriever.vector", config={"k": 2}),
        ],
        edges=[
            Edge(source="loader", source_port="records", target="splitter", target_port="documents"),
            Edge(source="splitter", source_port="chunks", target="store", target_port="documents"),
            Edge(source="embedder", source_port="embedder", target="store", target_port="embedder"),
            Edge(source="store", source_port="store", target="retriever", target_port="store"),
            Edge(source="question", source_port="message", target="retriever", target_port="query"),
        ],
    )
    path = tmp_path / "flow.json"
    save_flow(flow, path)
    run = ["run", str(path), "--input", "how fast are refunds paid", "--cred", f"cohere={KEY}"]
    assert main(run) == 1  # a Cohere key to a server on this machine: refused before anything is sent
    refused = capsys.readouterr()
    assert "unsafe-credential" in refused.err and KEY not in refused.out + refused.err
    assert server.requests == []
    assert main([*run, "--allow-endpoint", f"cohere={server.url}"]) == 0, capsys.readouterr().err
    kinds = [r.body["input_type"] for r in embeds(server)]
    assert kinds.count("search_query") == 1 and kinds.count("search_document") >= 1
    documents = sum(len(r.body["texts"]) for r in embeds(server) if r.body["input_type"] == "search_document")
    assert documents == 12
