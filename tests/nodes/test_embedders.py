"""Embedders: the real local ONNX model, and the real openai / ollama SDKs against tests/fakes/llm_server.py."""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flowbuilder.errors import CredentialError, NodeError, ProviderError
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders import local
from flowbuilder.nodes.embedders.cache import EmbeddingCache, text_hash
from flowbuilder.nodes.embedders.local import LocalEmbedder, LocalEmbedderConfig, LocalEmbedderNode
from flowbuilder.nodes.embedders.ollama import OllamaEmbedder, OllamaEmbedderConfig, OllamaEmbedderNode
from flowbuilder.nodes.embedders.openai import OpenAIEmbedder, OpenAIEmbedderConfig, OpenAIEmbedderNode
from flowbuilder.services import Embedder
from tests.fakes.llm_server import FakeLLMServer, fake_embedding, free_port

KEY = "sk-test-embed-secret-789"


# -- local ------------------------------------------------------------------------------------


def test_local_embedder_vectors_are_normalised_and_meaningful() -> None:
    embedder = LocalEmbedder()
    assert isinstance(embedder, Embedder)
    vectors = np.array(
        embedder.embed_documents(
            ["How many backup codes do I get?", "You receive 10 recovery codes", "The weather is sunny in Lisbon"]
        )
    )
    assert vectors.shape == (3, 384) and embedder.dimension == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > 0.5 and unrelated < 0.2


def test_local_batching_padding_and_order_do_not_change_vectors() -> None:
    texts = ["short", "a much longer sentence " * 20, "medium length text about login emails"]
    batched = np.array(LocalEmbedder(batch_size=3).embed_documents(texts))
    single = np.array([LocalEmbedder(batch_size=1).embed_documents([t])[0] for t in texts])
    # int8 dynamic quantisation sees the padded batch, so vectors agree closely but not bit for bit
    assert np.all(np.sum(batched * single, axis=1) > 0.999)


def test_local_truncates_at_256_tokens_and_counts_tokens() -> None:
    embedder = LocalEmbedder()
    assert embedder.max_tokens == 256
    assert embedder.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    long_text = "word " * 600
    assert embedder.count_tokens(long_text) == 602
    # everything after token 256 is cut: adding text at the end changes nothing
    a, b = embedder.embed_documents([long_text, long_text + " completely different ending about rockets"])
    assert float(np.dot(a, b)) > 0.9999


def test_local_truncation_offset_is_where_the_model_stops_reading() -> None:
    embedder = LocalEmbedder()
    assert embedder.truncation_offset("How do we verify the Remember Me checkbox?") is None
    assert embedder.truncation_offset("a " * 254) is None  # 254 pieces + [CLS] + [SEP] = exactly the limit
    assert embedder.truncation_offset("a " * 255) == 2 * 254 - 1  # just after the 254th "a"
    text = "Verify that the login page rejects an expired password reset token. " * 40
    offset = embedder.truncation_offset(text)
    assert offset is not None and 0 < offset < len(text)
    assert abs(embedder.count_tokens(text[:offset]) - embedder.max_tokens) <= 1
    # the model reads exactly that prefix: the same vector with or without the rest
    whole, prefix = embedder.embed_documents([text, text[:offset]])
    assert float(np.dot(whole, prefix)) > 0.9999


def test_local_progress_per_batch_and_cache(tmp_path: Path) -> None:
    embedder = LocalEmbedder(batch_size=4, cache_dir=tmp_path)
    calls: list[tuple[int, int]] = []
    texts = [f"test case number {i}" for i in range(10)] + ["test case number 3"]  # one repeat
    first = embedder.embed_documents(texts, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 11) and calls[-1] == (11, 11) and len(calls) == 1 + 3
    assert embedder.model_texts == 10  # the repeat is embedded once
    again = LocalEmbedder(batch_size=4, cache_dir=tmp_path)
    second = again.embed_documents(texts)
    assert again.model_batches == 0 and again.model_texts == 0
    assert np.allclose(first, second)
    assert (tmp_path / "embeddings.sqlite").is_file()
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    stored = cache.get_many(local.MODEL_ID, [text_hash("test case number 0")])
    assert stored[text_hash("test case number 0")].dtype == np.float32
    assert cache.count(local.MODEL_ID) == 10


def test_local_model_checksum_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    fake_model = tmp_path / "model.onnx"
    fake_model.write_bytes(b"not a model")
    with pytest.raises(NodeError, match=r"sha256 .* expected 8199be6f.*pip install --force-reinstall"):
        local.load_session(fake_model)
    with pytest.raises(NodeError, match="missing"):
        local.load_session(tmp_path / "absent.onnx")
    local.verify_model(local.default_model_path())  # the installed file passes


def test_local_node_outputs_an_embedder_service(tmp_path: Path) -> None:
    ctx = RunContext("emb", data_dir=tmp_path)
    out = LocalEmbedderNode(LocalEmbedderConfig(batch_size=8)).run({}, ctx)
    assert isinstance(out["embedder"], Embedder)
    assert ctx.details == {"model_id": "local/all-MiniLM-L6-v2-int8", "dimension": 384, "max_tokens": 256}
    assert out["embedder"].cache is not None
    ctx2 = RunContext("emb", data_dir=tmp_path)
    assert LocalEmbedderNode(LocalEmbedderConfig(cache=False)).run({}, ctx2)["embedder"].cache is None


# -- fake server ------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(embedding_dim=8, strict_models=True) as fake:
        yield fake


def _unpack(b64: str) -> list[float]:
    raw = base64.b64decode(b64)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


# -- openai -------------------------------------------------------------------------------------


def test_openai_embeds_through_the_sdk_with_cache(server: FakeLLMServer, tmp_path: Path) -> None:
    embedder = OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url, batch_size=2, cache_dir=tmp_path)
    vectors = embedder.embed_documents(["alpha", "beta", "gamma"])
    assert vectors[1] == pytest.approx(fake_embedding("beta", 8), abs=1e-6)
    requests = server.requests_to("/v1/embeddings")
    assert len(requests) == 2  # batch_size 2
    assert requests[0].authorization == f"Bearer {KEY}"
    assert requests[0].body["model"] == "text-embedding-3-small"
    assert sorted(r.body["input"] for r in requests) == [["alpha", "beta"], ["gamma"]]  # two batches in flight
    assert requests[0].body.get("encoding_format") == "base64"  # the SDK's default, decoded by the SDK
    assert embedder.dimension == 1536  # known model; the fake answers 8-d vectors regardless
    # cache: a fresh embedder sends only the new text
    again = OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url, cache_dir=tmp_path)
    again.embed_documents(["alpha", "beta", "gamma", "delta"])
    assert server.requests_to("/v1/embeddings")[-1].body["input"] == ["delta"]
    assert again.model_texts == 1


def test_openai_dimensions_change_model_id_and_request(server: FakeLLMServer) -> None:
    embedder = OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url, dimensions=4)
    assert embedder.model_id == "openai/text-embedding-3-small@4" and embedder.dimension == 4
    assert len(embedder.embed_query("hello")) == 4
    assert server.requests_to("/v1/embeddings")[-1].body["dimensions"] == 4


def test_openai_401_names_the_slot_and_hides_the_key(server: FakeLLMServer) -> None:
    server.fail("embeddings", 401, message=f"Incorrect API key provided: {KEY}")
    embedder = OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url)
    with pytest.raises(ProviderError) as info:
        embedder.embed_query("x")
    assert "401" in str(info.value) and "`api_key` slot" in str(info.value)
    assert KEY not in str(info.value)
    assert len(server.requests_to("/v1/embeddings")) == 1  # no retry on 401


def test_openai_429_after_retries(server: FakeLLMServer) -> None:
    server.fail("embeddings", 429)
    with pytest.raises(ProviderError, match=r"rate limit or quota exceeded .*429"):
        OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url, max_retries=2).embed_query("x")
    assert len(server.requests_to("/v1/embeddings")) == 3  # retried twice (RemoteEmbedder; the SDK's are off)


def test_openai_unknown_model_lists_models(server: FakeLLMServer) -> None:
    with pytest.raises(ProviderError, match=r"model 'text-embedding-9' does not exist.*text-embedding-3-small"):
        OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url, model="text-embedding-9").embed_query("x")


def test_openai_connection_refused() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ProviderError, match=f"{url} is not reachable"):
        OpenAIEmbedder(api_key=KEY, base_url=url, timeout=2).embed_query("x")


@pytest.mark.slow
def test_openai_timeout(server: FakeLLMServer) -> None:
    server.delay("embeddings", 3.0)
    with pytest.raises(ProviderError, match=r"did not answer within 0.5 s"):
        OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url, timeout=0.5).embed_query("x")


def test_openai_node_needs_the_credential(server: FakeLLMServer, tmp_path: Path) -> None:
    config = OpenAIEmbedderConfig(base_url=server.openai_base_url)
    with pytest.raises(CredentialError, match="api_key"):
        OpenAIEmbedderNode(config).run({}, RunContext("emb", data_dir=tmp_path))
    out = OpenAIEmbedderNode(config).run({}, RunContext("emb", data_dir=tmp_path, secrets={"api_key": KEY}))
    assert isinstance(out["embedder"], Embedder) and KEY not in repr(out["embedder"])


# -- ollama -------------------------------------------------------------------------------------


def test_ollama_embeds_with_prefixes(server: FakeLLMServer, tmp_path: Path) -> None:
    embedder = OllamaEmbedder(
        model="nomic-embed-text",
        base_url=server.ollama_host,
        document_prefix="search_document: ",
        query_prefix="search_query: ",
        cache_dir=tmp_path,
    )
    docs = embedder.embed_documents(["login page", "password reset"])
    assert docs[0] == pytest.approx(fake_embedding("search_document: login page", 8), abs=1e-6)
    body = server.requests_to("/api/embed")[-1].body
    assert body["model"] == "nomic-embed-text"
    assert body["input"] == ["search_document: login page", "search_document: password reset"]
    query = embedder.embed_query("login page")
    assert query == pytest.approx(fake_embedding("search_query: login page", 8), abs=1e-6)
    assert embedder.dimension == 768 and embedder.model_id == "ollama/nomic-embed-text"


def test_ollama_unknown_model_says_pull_and_lists(server: FakeLLMServer) -> None:
    embedder = OllamaEmbedder(model="mxbai-embed-large", base_url=server.ollama_host)
    with pytest.raises(ProviderError, match=r"ollama pull mxbai-embed-large.*nomic-embed-text"):
        embedder.embed_query("x")


@pytest.mark.parametrize(("status", "expected"), [(401, "401 unauthorized"), (429, r"rate limiting \(429\)")])
def test_ollama_status_errors(server: FakeLLMServer, status: int, expected: str) -> None:
    server.fail("/api/embed", status)
    with pytest.raises(ProviderError, match=expected):
        OllamaEmbedder(model="nomic-embed-text", base_url=server.ollama_host, max_retries=1).embed_query("x")


def test_ollama_connection_refused_says_start_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ProviderError, match=f"Ollama is not reachable at {url}: start it with `ollama serve`"):
        OllamaEmbedder(model="nomic-embed-text", base_url=url).embed_query("x")


def test_ollama_timeout(server: FakeLLMServer) -> None:
    server.delay("/api/embed", 2.0)
    with pytest.raises(ProviderError, match=r"did not answer within 0\.5 s"):
        OllamaEmbedder(model="nomic-embed-text", base_url=server.ollama_host, timeout=0.5).embed_query("x")


def test_ollama_node(server: FakeLLMServer, tmp_path: Path) -> None:
    ctx = RunContext("emb", data_dir=tmp_path)
    out = OllamaEmbedderNode(OllamaEmbedderConfig(base_url=server.ollama_host)).run({}, ctx)
    embedder: Any = out["embedder"]
    assert embedder.document_prefix == "search_document: " and embedder.query_prefix == "search_query: "
    assert len(embedder.embed_query("x")) == 8
