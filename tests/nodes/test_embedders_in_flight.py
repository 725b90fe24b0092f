"""Remote embedders send several batches at once, honour 429 Retry-After, and say which batch failed.

The real OpenAI and Ollama SDKs talk to the loopback fake (tests/fakes/llm_server.py), which records how
many requests it was answering at the same moment.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from flowbuilder.errors import ProviderError
from flowbuilder.nodes.embedders.batching import QueryBatcher
from flowbuilder.nodes.embedders.ollama import OllamaEmbedder
from flowbuilder.nodes.embedders.openai import OpenAIEmbedder
from flowbuilder.nodes.embedders.remote import retry_after_seconds
from tests.fakes.llm_server import FakeLLMServer, fake_embedding
from tests.waiting import wait_until

KEY = "sk-test-in-flight-123"
TEXTS = [f"test case {i}: the login form rejects an email with two dots" for i in range(48)]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(embedding_dim=8) as fake:
        yield fake


def openai(server: FakeLLMServer, **kwargs: object) -> OpenAIEmbedder:
    return OpenAIEmbedder(api_key=KEY, base_url=server.openai_base_url, batch_size=4, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("in_flight", "latency"), [(1, 0.05), (8, 1.5)])
def test_batches_go_out_together_and_come_back_in_order(server: FakeLLMServer, in_flight: int, latency: float) -> None:
    server.delay("embeddings", latency)  # long enough that 8 requests overlap even on a loaded machine
    vectors = openai(server, max_in_flight=in_flight).embed_documents(TEXTS)
    assert len(server.requests_to("embeddings")) == 12
    assert server.max_in_flight == in_flight  # 12 batches of 4: 8 at once when allowed, never more
    for text, vector in zip(TEXTS, vectors, strict=True):  # each vector belongs to its own text
        assert vector == pytest.approx(fake_embedding(text, 8), abs=1e-6)


def test_ollama_sends_batches_in_flight_too(server: FakeLLMServer) -> None:
    server.delay("/api/embed", 0.5)
    embedder = OllamaEmbedder(model="nomic-embed-text", base_url=server.ollama_host, batch_size=4, max_in_flight=3)
    embedder.embed_documents(TEXTS[:24])
    assert server.max_in_flight == 3


def test_429_waits_as_retry_after_says_then_goes_on(server: FakeLLMServer) -> None:
    server.fail("embeddings", 429, times=1, retry_after="2")
    embedder = openai(server, max_in_flight=2)
    vectors = embedder.embed_documents(TEXTS[:32])
    assert vectors[5] == pytest.approx(fake_embedding(TEXTS[5], 8), abs=1e-6)
    assert embedder.retries == 1 and len(server.requests_to("embeddings")) == 9
    # Nothing was sent during the pause the server asked for, by any thread (what was already on its
    # way when the 429 came may arrive just after it); then the rest went out.
    refused = server.failed_at[0]
    assert not [t for t in server.received_at if refused + 0.3 < t < refused + 1.9]
    assert [t for t in server.received_at if t >= refused + 1.9]


def test_a_long_retry_after_is_an_error_not_a_silent_wait(server: FakeLLMServer) -> None:
    server.fail("embeddings", 429, retry_after="3600")
    with pytest.raises(ProviderError, match=r"asks to wait 3600 s"):
        openai(server).embed_query("x")


def test_failed_batch_is_named_and_a_rerun_resumes_from_the_cache(server: FakeLLMServer, tmp_path: Path) -> None:
    server.fail("embeddings", 500, after=2, message="the GPU fell over")
    first = openai(server, max_in_flight=1, max_retries=0, cache_dir=tmp_path)
    with pytest.raises(ProviderError) as info:
        first.embed_documents(TEXTS[:20])
    message = str(info.value)
    assert "batch 3 of 5 (texts 9-12" in message and "the GPU fell over" in message
    assert "2 batch(es) already embedded are in the embedding cache" in message
    server.clear()
    again = openai(server, cache_dir=tmp_path)
    vectors = again.embed_documents(TEXTS[:20])
    sent = [text for r in server.requests_to("embeddings") for text in r.body["input"]]
    assert sorted(sent) == sorted(TEXTS[8:20])  # only what the failed run had not embedded
    assert vectors[0] == pytest.approx(fake_embedding(TEXTS[0], 8), abs=1e-6)


def test_5xx_is_retried_with_backoff(server: FakeLLMServer) -> None:
    server.fail("embeddings", 503, times=2)
    embedder = openai(server, max_retries=3)
    assert embedder.embed_query("hello") == pytest.approx(fake_embedding("hello", 8), abs=1e-6)
    assert embedder.retries == 2


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "2"}) == 2
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < (retry_after_seconds({"Retry-After": date}) or 0) <= 31


def test_query_batcher_embeds_questions_that_arrive_together_in_one_call() -> None:
    gate = threading.Event()
    seen: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.append(list(texts))
        if len(seen) == 1:
            gate.wait(5)  # the first call is slow: the others queue up meanwhile
        return np.array([[float(len(t)), float(i)] for i, t in enumerate(texts)])

    batcher = QueryBatcher(embed)
    results: dict[str, np.ndarray] = {}

    def ask(text: str) -> None:
        results[text] = batcher.embed(text)

    first = threading.Thread(target=ask, args=("a",))
    first.start()
    wait_until(lambda: len(seen) == 1, 5, "the first question's model call")
    others = [threading.Thread(target=ask, args=("q" * n,)) for n in range(2, 12)]
    for thread in others:
        thread.start()
    wait_until(lambda: len(batcher._queue) == 10, 5, "the ten others to queue behind it")
    gate.set()
    for thread in [first, *others]:
        thread.join(5)
    assert seen[0] == ["a"] and len(seen) == 2 and len(seen[1]) == 10  # 11 questions, 2 model calls
    for text, vector in results.items():
        assert vector[0] == len(text)  # each caller got its own row


def test_query_batcher_gives_every_caller_the_error() -> None:
    def embed(texts: list[str]) -> np.ndarray:
        raise ProviderError("openai", "down")

    with pytest.raises(ProviderError, match="down"):
        QueryBatcher(embed).embed("x")
