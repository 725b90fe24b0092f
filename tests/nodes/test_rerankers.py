"""reranker.llm (OpenAI SDK against the fake server) and reranker.cohere (cohere SDK against a fake Cohere)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from flowbuilder.errors import CredentialError, NodeError, ProviderError
from flowbuilder.nodes.rerankers.cohere_rerank import CohereRerankConfig, CohereReranker
from flowbuilder.nodes.rerankers.common import RerankConfig, RerankerNode
from flowbuilder.nodes.rerankers.llm_judge import LLMJudgeConfig, LLMJudgeReranker, parse_score
from flowbuilder.registry import default_registry
from tests.fakes.cohere_server import FakeCohereServer
from tests.fakes.llm_server import FakeLLMServer, free_port, running_server
from tests.nodes.rerank_helpers import KEY, PASSAGES, ctx, make_hits, openai_model


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server(embedding_dim=8)


@pytest.fixture
def cohere_server() -> Iterator[FakeCohereServer]:
    with FakeCohereServer(api_key="co-SECRET-key") as fake:
        yield fake


def test_parse_score() -> None:
    assert parse_score("8") == 8.0
    assert parse_score("Score (0-10): 7.5/10") == 7.5
    assert parse_score("I'd say 10.") == 10.0
    assert parse_score("85 points, so 9") == 9.0
    assert parse_score("no idea") is None


def test_llm_judge_reorders_and_keeps_k(server: FakeLLMServer) -> None:
    # One scripted reply per candidate, in input order: the 3rd and 2nd passages are the best.
    for reply in ["2", "Score: 6", "9", "garbled"]:
        server.reply(reply)
    node = LLMJudgeReranker(LLMJudgeConfig(candidates=4, keep=2))
    context = ctx("judge")
    started = time.perf_counter()
    out = node.run({"hits": make_hits(), "query": "How do refunds work?", "model": openai_model(server)}, context)
    wall = time.perf_counter() - started
    hits = out["hits"]
    assert [h.id for h in hits] == ["PAY-3", "SEC-2"]
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].score == 9.0
    assert hits[0].legs["rerank"] == {"rank": 1, "score": 9.0}
    assert hits[0].legs["retrieval"] == {"rank": 3, "score": 0.7}
    # every candidate was sent once, with the question and its passage
    sent = [r.body["messages"][0]["content"] for r in server.requests_to("chat")]
    assert len(sent) == 4
    assert "How do refunds work?" in sent[2] and PASSAGES[2][1] in sent[2]
    assert context.details["unparsed"] == [4]
    seconds = context.details["seconds"]
    assert 0 < seconds <= round(wall, 3)  # four calls to a server: measurable, and within the node's run
    assert context.details["seconds_per_candidate"] == pytest.approx(seconds / 4, abs=0.001)
    assert [row["rerank_score"] for row in context.details["scores"]] == [2.0, 6.0, 9.0, 0.0]


def test_llm_judge_scores_only_the_candidates(server: FakeLLMServer) -> None:
    server.responder = None
    for reply in ["1", "3"]:
        server.reply(reply)
    node = LLMJudgeReranker(LLMJudgeConfig(candidates=2, keep=2))
    out = node.run({"hits": make_hits(), "query": "q", "model": openai_model(server)}, ctx())
    assert [h.id for h in out["hits"]] == ["SEC-2", "PAY-1"]
    assert len(server.requests_to("chat")) == 2


def test_llm_judge_input_errors(server: FakeLLMServer) -> None:
    node = LLMJudgeReranker(LLMJudgeConfig())
    with pytest.raises(NodeError, match="'query' is empty"):
        node.run({"hits": make_hits(), "query": " ", "model": openai_model(server)}, ctx())
    assert LLMJudgeReranker.config_problems(LLMJudgeConfig(prompt="Rate {question}"))
    assert RerankerNode.config_problems(RerankConfig(candidates=3, keep=5))


def test_llm_judge_provider_error_names_the_provider(server: FakeLLMServer) -> None:
    server.fail("chat", 401)
    node = LLMJudgeReranker(LLMJudgeConfig(candidates=2, keep=1))
    with pytest.raises(ProviderError) as info:
        node.run({"hits": make_hits(), "query": "q", "model": openai_model(server, max_retries=0)}, ctx())
    assert "OpenAI" in str(info.value) and KEY not in str(info.value)


def test_llm_judge_can_keep_the_incoming_order_with_a_warning(server: FakeLLMServer) -> None:
    server.fail("chat", 500, message="model is down")
    node = LLMJudgeReranker(LLMJudgeConfig(candidates=4, keep=2, if_model_fails="continue"))
    context = ctx()
    hits = make_hits()
    out = node.run({"hits": hits, "query": "q", "model": openai_model(server, max_retries=0)}, context)
    assert [h.id for h in out["hits"]] == [h.id for h in hits[:2]]  # not reranked: never dressed up as reranked
    assert all("rerank" not in h.legs for h in out["hits"])
    assert "not reranked" in context.warning and KEY not in context.warning


def _cohere(fake: FakeCohereServer | None, **config: Any) -> CohereReranker:
    base = fake.url if fake is not None else f"http://127.0.0.1:{free_port()}"
    return CohereReranker(CohereRerankConfig(base_url=base, **config))


def test_cohere_reranks_with_the_official_sdk(cohere_server: FakeCohereServer) -> None:
    node = _cohere(cohere_server, candidates=4, keep=3)
    context = ctx("cohere", {"api_key": "co-SECRET-key"})
    out = node.run({"hits": make_hits(), "query": "how many recovery codes with two-factor"}, context)
    hits = out["hits"]
    assert hits[0].id == "SEC-2"
    assert hits[0].legs["rerank"]["rank"] == 1 and hits[0].legs["retrieval"]["rank"] == 2
    assert len(hits) == 3
    assert hits[0].score == pytest.approx(4 / 7, abs=1e-5)  # recovery, codes, two, factor of 7 words
    request = cohere_server.requests[-1]
    assert request.path == "/v2/rerank"
    assert request.headers["authorization"] == "Bearer co-SECRET-key"
    assert request.body["model"] == "rerank-v3.5"
    assert request.body["documents"] == [text for _, text in PASSAGES]
    assert request.body["top_n"] == 4
    assert [row["record"] for row in context.details["scores"]] == ["PAY-1", "SEC-2", "PAY-3", "SEC-4"]


def test_cohere_errors_are_clear_and_never_show_the_key(cohere_server: FakeCohereServer) -> None:
    hits = make_hits()
    with pytest.raises(ProviderError, match=r"refused \(401\)") as info:
        _cohere(cohere_server).run({"hits": hits, "query": "q"}, ctx("c", {"api_key": "co-WRONG-key"}))
    assert "co-WRONG-key" not in str(info.value)
    with pytest.raises(ProviderError, match=r"not found \(404\).*model"):
        _cohere(cohere_server, model="rerank-nope").run(
            {"hits": hits, "query": "q"}, ctx("c", {"api_key": "co-SECRET-key"})
        )
    with pytest.raises(ProviderError, match="cannot reach"):
        _cohere(None, max_retries=0).run({"hits": hits, "query": "q"}, ctx("c", {"api_key": "co-SECRET-key"}))
    with pytest.raises(CredentialError, match="api_key"):
        _cohere(cohere_server).run({"hits": hits, "query": "q"}, ctx("c"))


def test_cohere_rate_limit_retries_then_reports(cohere_server: FakeCohereServer) -> None:
    secrets = {"api_key": "co-SECRET-key"}
    cohere_server.fail(429, times=1)
    out = _cohere(cohere_server, max_retries=1).run({"hits": make_hits(), "query": "refunds"}, ctx("c", secrets))
    assert out["hits"][0].id == "PAY-3"
    assert len(cohere_server.requests) == 2  # the SDK retried once after the 429
    cohere_server.fail(429, times=5)
    with pytest.raises(ProviderError, match=r"rate limited \(429\).*Trial key"):
        _cohere(cohere_server, max_retries=0).run({"hits": make_hits(), "query": "q"}, ctx("c", secrets))


def test_cohere_with_no_hits_sends_nothing(cohere_server: FakeCohereServer) -> None:
    out = _cohere(cohere_server).run({"hits": [], "query": "q"}, ctx("c", {"api_key": "co-SECRET-key"}))
    assert out["hits"] == [] and cohere_server.requests == []


def test_rerankers_are_registered_with_shared_ports() -> None:
    registry = default_registry()
    for name in ("reranker.llm", "reranker.cohere", "reranker.cross_encoder"):
        cls = registry.get(name)
        assert cls.category == "Rerankers"
        assert [p.name for p in cls.inputs][:2] == ["hits", "query"]
        assert [p.name for p in cls.outputs] == ["hits"]
    assert [s.provider for s in registry.get("reranker.cohere").credential_slots] == ["cohere"]


def test_reranked_hits_keep_their_legs_in_outputs(server: FakeLLMServer) -> None:
    from flowbuilder.outputs import score_meaning, to_jsonable

    for reply in ["3", "8"]:
        server.reply(reply)
    node = LLMJudgeReranker(LLMJudgeConfig(candidates=2, keep=2))
    hits = node.run({"hits": make_hits(), "query": "q", "model": openai_model(server)}, ctx())["hits"]
    data = to_jsonable(hits)
    assert data[0]["legs"] == {"retrieval": {"rank": 2, "score": 0.8}, "rerank": {"rank": 1, "score": 8.0}}
    assert "legs" not in to_jsonable(make_hits())[0]  # plain retrieval stays as it was
    assert score_meaning(hits) == "reranker score" and score_meaning(make_hits()) == "cosine similarity"
