"""The fake LLM server against the real openai, groq and ollama SDKs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fakes.llm_server import FakeLLMServer, fake_embedding, running_server

TOOL = {
    "type": "function",
    "function": {
        "name": "search_documents",
        "description": "Search.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server(embedding_dim=8)


def test_openai_chat_plain_stream_tools_and_embeddings(server: FakeLLMServer) -> None:
    import openai

    client = openai.OpenAI(api_key="sk-test-123", base_url=server.openai_base_url, max_retries=0)
    server.reply("Hello there")
    result = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    assert result.choices[0].message.content == "Hello there"
    assert result.usage is not None and result.usage.completion_tokens == 2
    request = server.requests[-1]
    assert request.path == "/v1/chat/completions"
    assert request.authorization == "Bearer sk-test-123"
    assert request.body["messages"] == [{"role": "user", "content": "Hi"}]

    server.reply("one two three")
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "count"}], stream=True
    )
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert pieces == ["one", " two", " three"]

    server.reply_tool_call("search_documents", {"query": "login"})
    result = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "find"}], tools=[TOOL]
    )
    call = result.choices[0].message.tool_calls[0]
    assert call.function.name == "search_documents"
    assert json.loads(call.function.arguments) == {"query": "login"}
    assert server.requests[-1].body["tools"] == [TOOL]

    server.reply_tool_call("search_documents", {"query": "streamed"})
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "find"}], tools=[TOOL], stream=True
    )
    arguments = "".join(
        tc.function.arguments or "" for c in stream if c.choices for tc in c.choices[0].delta.tool_calls or []
    )
    assert json.loads(arguments) == {"query": "streamed"}

    embeddings = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
    assert server.requests[-1].body["encoding_format"] == "base64"
    assert embeddings.data[0].embedding == pytest.approx(fake_embedding("a", 8), abs=1e-6)
    assert len(embeddings.data) == 2
    assert next(m.id for m in client.models.list()) == "gpt-4o-mini"


def test_groq_chat_stream_and_auth_header(server: FakeLLMServer) -> None:
    import groq

    client = groq.Groq(api_key="gsk-test", base_url=server.groq_base_url, max_retries=0)
    server.reply("Fast answer")
    stream = client.chat.completions.create(
        model="llama-3.1-8b-instant", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "Fast answer"
    assert server.requests[-1].path == "/openai/v1/chat/completions"
    assert server.requests[-1].authorization == "Bearer gsk-test"
    assert server.requests[-1].body["stream"] is True


def test_ollama_chat_stream_tools_embed_and_tags(server: FakeLLMServer) -> None:
    import ollama

    client = ollama.Client(host=server.ollama_host)
    server.reply("Local answer here")
    response = client.chat(model="llama3.2", messages=[{"role": "user", "content": "Hi"}])
    assert response.message.content == "Local answer here"
    assert server.requests[-1].body["stream"] is False

    server.reply("a b")
    parts = [p.message.content for p in client.chat(model="llama3.2", messages=[], stream=True)]
    assert "".join(parts) == "a b" and len(parts) == 3  # two tokens and the final done line

    server.reply_tool_call("search_documents", {"query": "x"})
    response = client.chat(model="llama3.2", messages=[{"role": "user", "content": "find"}], tools=[TOOL])
    assert response.message.tool_calls[0].function.arguments == {"query": "x"}
    assert server.requests[-1].body["tools"][0]["function"]["name"] == "search_documents"

    assert client.embed(model="nomic-embed-text", input=["q"]).embeddings[0] == pytest.approx(fake_embedding("q", 8))
    assert client.embeddings(model="nomic-embed-text", prompt="q").embedding == pytest.approx(fake_embedding("q", 8))
    assert "llama3.2:latest" in [m.model for m in client.list().models]


def test_failure_injection_and_recovery(server: FakeLLMServer) -> None:
    import ollama
    import openai

    client = openai.OpenAI(api_key="sk-x", base_url=server.openai_base_url, max_retries=2)
    server.fail("chat", 429, times=1)
    result = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    assert result.choices[0].message.content == "Fake reply to: Hi"
    assert len(server.requests_to("chat")) == 2

    server.fail("openai", 401)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="gpt-4o-mini", messages=[])

    server.fail("ollama", 500)
    with pytest.raises(ollama.ResponseError) as info:
        ollama.Client(host=server.ollama_host).chat(model="llama3.2", messages=[])
    assert info.value.status_code == 500


def test_delay_makes_the_client_time_out(server: FakeLLMServer) -> None:
    import openai

    server.delay("chat", 2.0)
    client = openai.OpenAI(api_key="sk-x", base_url=server.openai_base_url, max_retries=0, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="gpt-4o-mini", messages=[])


def test_strict_models_answers_404() -> None:
    import openai

    with FakeLLMServer(strict_models=True) as server:
        client = openai.OpenAI(api_key="sk-x", base_url=server.openai_base_url, max_retries=0)
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="no-such-model", messages=[])
