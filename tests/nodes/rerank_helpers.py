"""Shared pieces of the reranker and query-rewrite tests: hits, an OpenAI chat model on the fake server."""

from __future__ import annotations

from typing import Any

from flowbuilder.data import Document, Hit
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.openai import OpenAIChat, OpenAIChatConfig
from flowbuilder.nodes.llms.openai_compatible import OpenAICompatibleChatModel
from tests.fakes.llm_server import FakeLLMServer

KEY = "sk-test-rerank-0123456789"

PASSAGES = [
    ("PAY-1", "Invoices are emailed on the first day of each month."),
    ("SEC-2", "You receive 10 recovery codes when you turn on two-factor authentication."),
    ("PAY-3", "Refunds are paid back to the original card within 5 working days."),
    ("SEC-4", "Passwords must have at least 12 characters."),
]


def make_hits(passages: list[tuple[str, str]] = PASSAGES) -> list[Hit]:
    return [
        Hit(
            document=Document(text=text, metadata={"source": "help.md", "record_id": rid}),
            score=round(0.9 - 0.1 * i, 2),
            rank=i + 1,
            id=rid,
        )
        for i, (rid, text) in enumerate(passages)
    ]


def openai_model(server: FakeLLMServer, **config: Any) -> OpenAICompatibleChatModel:
    node = OpenAIChat(OpenAIChatConfig(base_url=server.openai_base_url, stream=False, **config))
    return node.build_model(RunContext("llm", secrets={"api_key": KEY}))


def ctx(node_id: str = "node", secrets: dict[str, str] | None = None) -> RunContext:
    return RunContext(node_id, secrets=secrets or {})
