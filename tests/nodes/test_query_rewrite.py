"""query.rewrite: an OpenAI chat model (real SDK, fake server) rewords the question; every query is
searched and the lists are merged with RRF."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from flowbuilder.data import Hit
from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.nodes.query_rewrite import QueryRewrite, QueryRewriteConfig, parse_variants
from flowbuilder.services import Retriever
from tests.fakes.llm_server import FakeLLMServer, running_server
from tests.nodes.rerank_helpers import ctx, make_hits, openai_model


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server(embedding_dim=8)


class WordRetriever:
    """A real Retriever: the hits sharing most words with the query (ties: corpus order), top k."""

    def __init__(self, k: int = 2) -> None:
        self.k = k
        self.queries: list[str] = []

    def retrieve(self, query: str) -> list[Hit]:
        self.queries.append(query)
        words = set(re.findall(r"\w+", query.lower()))
        scored = []
        for hit in make_hits():
            overlap = len(words & set(re.findall(r"\w+", hit.document.text.lower())))
            if overlap:
                scored.append((overlap, hit))
        scored.sort(key=lambda pair: -pair[0])
        return [h.model_copy(update={"rank": i, "score": float(s)}) for i, (s, h) in enumerate(scored[: self.k], 1)]


def test_parse_variants_cleans_numbering_and_duplicates() -> None:
    reply = (
        'Here are 3 rewordings:\n1. "How do I get my money back?"\n- how do refunds work\n2) Refund timing?\n3. Extra'
    )
    assert parse_variants(reply, "How do refunds work?", 3) == [
        "How do I get my money back?",
        "Refund timing?",
        "Extra",
    ]
    assert parse_variants("", "q", 3) == []
    markdown = "Sure! Here are three alternative phrasings:\n\n"
    markdown += "1. **How can I reset my password?**\nVariant 2: `Forgot password`"
    # the preamble ends with ":" and is skipped; bold, numbering, "Variant 2:" and backticks are removed
    assert parse_variants(markdown, "reset password", 3) == ["How can I reset my password?", "Forgot password"]


def test_rewrite_searches_every_variant_and_merges(server: FakeLLMServer) -> None:
    server.reply("1. When is my card refunded?\n2. How long until money comes back to the card\n3. invoices monthly")
    retriever = WordRetriever(k=2)
    node = QueryRewrite(QueryRewriteConfig(keep=3))
    context = ctx("rewrite")
    out = node.run({"query": "refund", "model": openai_model(server), "retriever": [retriever]}, context)
    assert out["queries"].splitlines() == [
        "refund",
        "When is my card refunded?",
        "How long until money comes back to the card",
        "invoices monthly",
    ]
    assert retriever.queries == out["queries"].splitlines()
    ids = [h.id for h in out["hits"]]
    assert ids[0] == "PAY-3"  # found by two variants
    top = out["hits"][0]
    assert set(top.legs) == {"q1", "q2"}
    assert top.score == pytest.approx(1 / (60 + top.legs["q1"]["rank"]) + 1 / (60 + top.legs["q2"]["rank"]))
    assert top.explain == f"1/{60 + top.legs['q1']['rank']:.0f} + 1/{60 + top.legs['q2']['rank']:.0f}"
    assert "PAY-1" in ids  # only the third variant finds the invoice passage
    # the prompt is the configured one with {n} and {question} filled, and it is shown in details
    sent = server.requests_to("chat")[0].body["messages"][0]["content"]
    assert "Write 3 different rewordings" in sent and "Question: refund" in sent
    assert context.details["prompt"] == sent
    assert context.details["queries"]["q0"] == "refund"
    assert sorted(context.details["legs"]) == ["q0", "q1", "q2", "q3"]
    # the retriever output (what an agent's tool or a reranker calls) rewrites and merges again on every call
    server.reply("1. When is my card refunded?\n2. How long until money comes back to the card\n3. invoices monthly")
    service = out["retriever"]
    assert isinstance(service, Retriever)
    assert [h.id for h in service.retrieve("refund")] == ids
    assert len(server.requests_to("chat")) == 2 and retriever.queries[4:] == out["queries"].splitlines()


def test_rewrite_with_a_custom_prompt_and_fewer_variants(server: FakeLLMServer) -> None:
    server.reply("passwords length")
    node = QueryRewrite(QueryRewriteConfig(n=2, prompt="Give {n} searches for: {question}", keep=1))
    context = ctx()
    out = node.run({"query": "password rules", "model": openai_model(server), "retriever": [WordRetriever()]}, context)
    assert server.requests_to("chat")[0].body["messages"][0]["content"] == "Give 2 searches for: password rules"
    assert out["hits"][0].id == "SEC-4"
    assert "1 usable rewordings of 2" in context.details["note"]


def test_rewrite_errors(server: FakeLLMServer) -> None:
    node = QueryRewrite(QueryRewriteConfig())
    model = openai_model(server)
    with pytest.raises(NodeError, match="Nothing to search"):
        node.run({"query": "q", "model": model}, ctx())
    server.reply("q")  # only repeats the question
    with pytest.raises(NodeError, match=r"no usable rewording.*replied: q"):
        node.run({"query": "q", "model": model, "retriever": [WordRetriever()]}, ctx())


@pytest.mark.parametrize("mode", ["fail", "continue"])
def test_an_unreachable_model_fails_or_searches_the_original_with_a_warning(server: FakeLLMServer, mode: str) -> None:
    server.fail("chat", 500, message="model is down")
    node = QueryRewrite(QueryRewriteConfig(if_model_fails=mode))
    retriever = WordRetriever()
    context = ctx()
    inputs = {"query": "refund card", "model": openai_model(server, max_retries=0), "retriever": [retriever]}
    if mode == "fail":
        with pytest.raises(ProviderError, match="500"):
            node.run(inputs, context)
        return
    out = node.run(inputs, context)
    assert retriever.queries == ["refund card"] and out["hits"]  # the original question alone was searched
    assert "searched the original question only" in context.warning and "500" in context.warning


def test_continue_also_covers_a_reply_with_no_usable_rewording(server: FakeLLMServer) -> None:
    """A tiny local model that only copies the question: with continue the original is searched, with a warning."""
    server.reply("refund card")
    node = QueryRewrite(QueryRewriteConfig(if_model_fails="continue"))
    retriever = WordRetriever()
    context = ctx()
    out = node.run({"query": "refund card", "model": openai_model(server), "retriever": [retriever]}, context)
    assert retriever.queries == ["refund card"] and out["hits"]
    assert "searched the original question only" in context.warning and "no usable rewording" in context.warning
