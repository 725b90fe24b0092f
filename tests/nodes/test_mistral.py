"""``embedder.mistral`` and ``llm.mistral``: the official mistralai SDK against a local Mistral fake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.data import ChatMessage
from flowbuilder.errors import ProviderError
from flowbuilder.node import RunContext
from flowbuilder.nodes.mistral.chat import MistralChat, MistralChatConfig
from flowbuilder.nodes.mistral.embeddings import MistralEmbedderConfig, MistralEmbedderNode
from tests.fakes.llm_server import fake_embedding
from tests.fakes.mistral_server import FakeMistralServer

KEY = "mk-test-key-0123456789"


@pytest.fixture
def server() -> Iterator[FakeMistralServer]:
    server = FakeMistralServer(embedding_dim=8, api_key=KEY).start()
    try:
        yield server
    finally:
        server.stop()


def ctx(key: str = KEY) -> RunContext:
    return RunContext("mistral", secrets={"api_key": key})


def test_embedder_sends_texts_and_returns_the_servers_vectors(server: FakeMistralServer, tmp_path: Path) -> None:
    node = MistralEmbedderNode(MistralEmbedderConfig(base_url=server.mistral_url, cache=False))
    embedder = node.run({}, ctx())["embedder"]
    vectors = embedder.embed_documents(["login with email", "reset password"])
    for vector, text in zip(vectors, ["login with email", "reset password"], strict=True):
        assert list(map(float, vector)) == pytest.approx(fake_embedding(text, 8), abs=1e-5)
    [request] = server.requests_to("/v1/embeddings")
    assert request.body == {"model": "mistral-embed", "input": ["login with email", "reset password"]}
    assert request.authorization == f"Bearer {KEY}"


def test_embedder_bad_key_is_one_clear_line_without_the_key(server: FakeMistralServer) -> None:
    node = MistralEmbedderNode(MistralEmbedderConfig(base_url=server.mistral_url + "/v1", cache=False))
    embedder = node.run({}, ctx("mk-wrong-key-999999999"))["embedder"]
    with pytest.raises(ProviderError) as error:
        embedder.embed_documents(["x"])
    assert "401" in str(error.value) and "api_key" in str(error.value) and "mk-wrong" not in str(error.value)


def _chat(server: FakeMistralServer, **config: Any) -> MistralChat:
    return MistralChat(MistralChatConfig(base_url=server.mistral_url, **config))


def test_chat_answers_and_streams(server: FakeMistralServer) -> None:
    server.reply("Use the reset link.")
    context = ctx()
    out = _chat(server, stream=False, max_tokens=32).run({"prompt": "Forgot password?"}, context)
    assert out["answer"] == "Use the reset link."
    request = server.requests[-1]
    assert request.path == "/v1/chat/completions" and request.body["model"] == "mistral-small-latest"
    assert request.body["max_tokens"] == 32 and request.body["messages"][-1]["content"] == "Forgot password?"
    assert context.details["usage"]["completion_tokens"] == 4

    server.reply("Streamed answer here.")
    tokens: list[str] = []
    model = _chat(server).run({}, ctx())["model"]
    reply = model.chat([ChatMessage(role="user", content="hi")], on_token=tokens.append)
    assert reply.content == "Streamed answer here." and len(tokens) > 1 and "".join(tokens) == reply.content
    assert server.requests[-1].body["stream"] is True
    assert model.last_usage and model.last_usage["total_tokens"] > 0


def test_chat_tool_calls_in_the_neutral_shape(server: FakeMistralServer) -> None:
    class Search:
        name = "search_documents"
        description = "Search the knowledge base."

        def parameters_schema(self) -> dict[str, Any]:
            return {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}

        def call(self, arguments: dict[str, Any]) -> str:
            return ""

    model = _chat(server).run({}, ctx())["model"]
    for streamed in (False, True):
        server.reply_tool_call("search_documents", {"query": "2FA"})
        reply = model.chat(
            [ChatMessage(role="user", content="find")],
            tools=[Search()],
            on_token=None if not streamed else (lambda t: None),
        )
        [call] = reply.tool_calls
        assert call["name"] == "search_documents" and call["arguments"] == {"query": "2FA"}
        assert server.requests[-1].body["tools"][0]["function"]["name"] == "search_documents"


def test_chat_unknown_model_and_rate_limit_say_what_to_do(server: FakeMistralServer) -> None:
    server.strict_models = True
    with pytest.raises(ProviderError, match=r"404.*model name"):
        _chat(server, model="no-such-model", stream=False).run({"prompt": "x"}, ctx())
    server.strict_models = False
    server.fail("chat", 429)
    with pytest.raises(ProviderError, match="429"):
        _chat(server, stream=False).run({"prompt": "x"}, ctx())
