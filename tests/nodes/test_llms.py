"""llm.openai / llm.groq / llm.ollama: the real SDKs against the local fake server (tests/fakes/llm_server.py)."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.data import ChatMessage
from flowbuilder.errors import CredentialError, ProviderError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.base import ChatModelNode, LLMConfig
from flowbuilder.nodes.llms.groq import GroqChat, GroqChatConfig, groq_base_url
from flowbuilder.nodes.llms.ollama import OllamaChat, OllamaChatConfig
from flowbuilder.nodes.llms.openai import OpenAIChat, OpenAIChatConfig
from flowbuilder.services import ChatModel
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.http import approvals
from tests.fakes.llm_server import FakeLLMServer, free_port, running_server

KEY = "sk-test-SECRET-0123456789"


@dataclass(frozen=True)
class Provider:
    name: str
    type_name: str
    node: type[ChatModelNode]
    config: type[LLMConfig]
    route: str
    model: str
    uses_key: bool

    def base_url(self, server: FakeLLMServer) -> str:
        return {"openai": server.openai_base_url, "groq": server.groq_base_url}.get(self.name, server.ollama_host)

    def closed_url(self) -> str:
        port = free_port()
        return f"http://127.0.0.1:{port}" + ("/v1" if self.name == "openai" else "")


PROVIDERS = {
    "openai": Provider(
        "openai", "llm.openai", OpenAIChat, OpenAIChatConfig, "/v1/chat/completions", "gpt-4o-mini", True
    ),
    "groq": Provider(
        "groq", "llm.groq", GroqChat, GroqChatConfig, "/openai/v1/chat/completions", "llama-3.1-8b-instant", True
    ),
    "ollama": Provider("ollama", "llm.ollama", OllamaChat, OllamaChatConfig, "/api/chat", "llama3.2", False),
}
LABEL = {"openai": "OpenAI", "groq": "Groq", "ollama": "Ollama"}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server(embedding_dim=8)


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Provider:
    return PROVIDERS[request.param]


def make_node(provider: Provider, base_url: str, **config: Any) -> ChatModelNode:
    return provider.node(provider.config(base_url=base_url, **config))


def make_ctx(events: list[tuple[str, dict[str, Any]]] | None = None, key: str | None = KEY) -> RunContext:
    def emit(kind: str, data: dict[str, Any]) -> None:
        if events is not None:
            events.append((kind, data))

    return RunContext("llm", secrets={"api_key": key} if key else {}, emit=emit)


# ----------------------------------------------------------------------------- answers


def test_answers_a_prompt_without_streaming(server: FakeLLMServer, provider: Provider) -> None:
    server.reply("Login uses email and password.")
    node = make_node(provider, provider.base_url(server), stream=False, max_tokens=64, system_message="Be brief.")
    ctx = make_ctx(key=KEY if provider.uses_key else None)
    outputs = node.run({"prompt": "How do I log in?"}, ctx)

    assert outputs["answer"] == "Login uses email and password."
    assert isinstance(outputs["model"], ChatModel)
    [request] = server.requests
    assert request.path == provider.route
    assert request.body["model"] == provider.model
    sent = [{"role": m["role"], "content": m["content"]} for m in request.body["messages"]]
    assert sent == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How do I log in?"}]
    assert ctx.details["messages"] == request.body["messages"]
    assert ctx.details["usage"]["completion_tokens"] == 5
    if provider.name == "ollama":
        assert request.body["stream"] is False
        assert request.body["options"] == {"temperature": 0.2, "num_predict": 64}
        assert "authorization" not in request.headers  # no key bound for Ollama below
    else:
        assert request.body.get("stream") in (None, False)
        assert request.body["temperature"] == 0.2 and request.body["max_tokens"] == 64
        assert request.authorization == f"Bearer {KEY}"


def test_the_system_input_overrides_the_configured_system_message(server: FakeLLMServer) -> None:
    node = make_node(PROVIDERS["openai"], server.openai_base_url, stream=False, system_message="config")
    node.run({"prompt": "q", "system": "from the port"}, make_ctx())
    assert server.requests[-1].body["messages"][0] == {"role": "system", "content": "from the port"}


def test_streams_tokens_as_events(server: FakeLLMServer, provider: Provider) -> None:
    server.reply("Click the Sign in button.")
    events: list[tuple[str, dict[str, Any]]] = []
    outputs = make_node(provider, provider.base_url(server)).run({"prompt": "How?"}, make_ctx(events))

    tokens = [data["text"] for kind, data in events if kind == "token"]
    assert len(tokens) == 5
    assert "".join(tokens) == outputs["answer"] == "Click the Sign in button."
    assert server.requests[-1].body["stream"] is True
    if provider.name == "openai":
        assert server.requests[-1].body["stream_options"] == {"include_usage": True}


def test_without_a_prompt_only_provides_the_model(server: FakeLLMServer, provider: Provider) -> None:
    ctx = make_ctx()
    outputs = make_node(provider, provider.base_url(server)).run({}, ctx)
    assert set(outputs) == {"model"}
    assert outputs["model"].model == provider.model and outputs["model"].provider == LABEL[provider.name]
    assert server.requests == []
    assert KEY not in repr(outputs["model"])


def test_model_tool_calls_come_back_in_the_neutral_shape(server: FakeLLMServer, provider: Provider) -> None:
    class Search:
        name = "search_documents"
        description = "Search the knowledge base."

        def parameters_schema(self) -> dict[str, Any]:
            return {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}

        def call(self, arguments: dict[str, Any]) -> str:
            return ""

    model = make_node(provider, provider.base_url(server)).run({}, make_ctx())["model"]
    for streamed in (False, True):
        server.reply_tool_call("search_documents", {"query": "password reset"})
        tokens: list[str] = []
        messages = [ChatMessage(role="user", content="find it")]
        reply = model.chat(messages, tools=[Search()], on_token=tokens.append if streamed else None)
        assert reply.content == "" and tokens == []
        [call] = reply.tool_calls
        assert call["name"] == "search_documents" and call["arguments"] == {"query": "password reset"}
        assert call["id"]
        assert server.requests[-1].body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "search_documents",
                    "description": "Search the knowledge base.",
                    "parameters": Search().parameters_schema(),
                },
            }
        ]


def test_executor_run_streams_tokens_and_keeps_the_key_out_of_events(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reply("Use the reset link.")
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="prompt", type="prompt.template", config={"template": "Q: {question}"}),
            NodeSpec(id="llm", type="llm.groq", config={"base_url": server.groq_base_url}),
            NodeSpec(id="out", type="chat.output"),
        ],
        edges=[
            Edge(source="in", source_port="message", target="prompt", target_port="question"),
            Edge(source="prompt", source_port="prompt", target="llm", target_port="prompt"),
            Edge(source="llm", source_port="answer", target="out", target_port="message"),
        ],
    )
    resolver = CredentialResolver(
        {"groq.api_key": KEY},
        store=CredentialStore(tmp_path / "creds.json"),
        environ={},
        approved=approvals(server.url),
    )
    events: list[RunEvent] = []
    run = Executor(resolver=resolver, data_dir=tmp_path).run(flow, inputs="Forgot password?", on_event=events.append)

    assert run.ok, [r.error for r in run.failed()]
    assert run.results["out"].outputs["message"] == "Use the reset link."
    tokens = [e for e in events if e.kind == "token"]
    assert [e.node_id for e in tokens] == ["llm"] * 4
    assert "".join(e.data["text"] for e in tokens) == "Use the reset link."
    assert server.requests[-1].body["messages"] == [{"role": "user", "content": "Q: Forgot password?"}]
    assert server.requests[-1].authorization == f"Bearer {KEY}"
    assert KEY not in json.dumps([e.to_dict() for e in events], default=str)


# ------------------------------------------------------------------------------ errors


def provider_error(node: ChatModelNode, ctx: RunContext | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        node.run({"prompt": "hello"}, ctx or make_ctx())
    message = str(info.value)
    assert KEY not in message
    assert "0123456789" not in message
    return info.value


def test_bad_key_401(server: FakeLLMServer, provider: Provider) -> None:
    server.fail("chat", 401, message=f"Incorrect API key provided: {KEY}")
    error = provider_error(make_node(provider, provider.base_url(server), stream=False))
    message = str(error)
    assert message.startswith(f"{LABEL[provider.name]}: ")
    assert provider.model in message
    assert "401" in message and ".api_key=" in message
    assert len(server.requests_to("chat")) == 1  # never retried


def test_rate_limit_429_after_retries(server: FakeLLMServer, provider: Provider) -> None:
    server.fail("chat", 429)
    error = provider_error(make_node(provider, provider.base_url(server), max_retries=1))
    assert "429" in str(error) and provider.model in str(error)
    expected_requests = 1 if provider.name == "ollama" else 2  # the ollama client does not retry
    assert len(server.requests_to("chat")) == expected_requests


@pytest.mark.parametrize("name", ["openai", "groq"])
def test_one_429_then_success_recovers(server: FakeLLMServer, name: str) -> None:
    provider = PROVIDERS[name]
    server.fail("chat", 429, times=1)
    server.reply("ok now")
    outputs = make_node(provider, provider.base_url(server), max_retries=2).run({"prompt": "hi"}, make_ctx())
    assert outputs["answer"] == "ok now"
    assert len(server.requests_to("chat")) == 2


def test_connection_refused(provider: Provider) -> None:
    error = provider_error(make_node(provider, provider.closed_url(), max_retries=0))
    message = str(error)
    assert provider.model in message
    if provider.name == "ollama":
        assert "ollama serve" in message and "ollama pull llama3.2" in message
        assert "--cred openai.api_key=" in message and "OPENAI_API_KEY" in message
    else:
        assert "cannot connect" in message and "base_url" in message


def test_timeout(server: FakeLLMServer, provider: Provider) -> None:
    server.delay("chat", 3.0)
    error = provider_error(make_node(provider, provider.base_url(server), timeout=0.3, max_retries=0))
    assert "0.3 s" in str(error) and "timeout" in str(error)


@pytest.mark.parametrize("name", ["openai", "groq"])
def test_timeout_reports_the_real_wait_and_the_retries(server: FakeLLMServer, name: str) -> None:
    provider = PROVIDERS[name]
    server.delay("chat", 3.0)
    error = provider_error(make_node(provider, provider.base_url(server), timeout=0.3, max_retries=1))
    assert "2 attempts of 0.3 s each" in str(error)
    waited = re.search(r"gave up after (\d+) s", str(error))
    assert waited is not None and int(waited.group(1)) >= 1  # two 0.3 s attempts plus the SDK's back-off


def test_a_stream_cut_before_its_end_is_an_error(server: FakeLLMServer, provider: Provider) -> None:
    server.reply("The answer is forty-two and here is why it matters.")
    server.cut_stream(after_events=3)
    events: list[tuple[str, dict[str, Any]]] = []
    error = provider_error(make_node(provider, provider.base_url(server), max_retries=0), make_ctx(events))
    assert "ended before the model finished" in str(error) and "incomplete" in str(error)
    assert any(kind == "token" for kind, _ in events)  # some text did arrive: still not a success


def test_unknown_model_404_lists_available_models(provider: Provider) -> None:
    with FakeLLMServer(strict_models=True, models=[provider.model, "other-model"]) as server:
        error = provider_error(make_node(provider, provider.base_url(server), model="no-such-model", max_retries=0))
    message = str(error)
    assert "no-such-model" in message and "404" in message and "other-model" in message
    if provider.name == "ollama":
        assert "ollama pull no-such-model" in message


def test_server_error_500_is_one_provider_error(server: FakeLLMServer, provider: Provider) -> None:
    server.fail("chat", 500, message="boom")
    error = provider_error(make_node(provider, provider.base_url(server), max_retries=0))
    assert "500" in str(error)


@pytest.mark.parametrize("name", ["openai", "groq"])
def test_an_unbound_key_is_a_credential_error(server: FakeLLMServer, name: str) -> None:
    provider = PROVIDERS[name]
    with pytest.raises(CredentialError, match="api_key"):
        make_node(provider, provider.base_url(server)).run({"prompt": "x"}, make_ctx(key=None))
    assert server.requests == []


def test_ollama_sends_an_optional_key_as_bearer(server: FakeLLMServer) -> None:
    make_node(PROVIDERS["ollama"], server.ollama_host, stream=False).run({"prompt": "x"}, make_ctx())
    assert server.requests[-1].authorization == f"Bearer {KEY}"


def test_groq_base_url_accepts_a_url_copied_with_openai_v1() -> None:
    assert groq_base_url("https://api.groq.com/openai/v1/") == "https://api.groq.com"
    assert groq_base_url("") is None


# ------------------------------------------------------------------------------- live


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY")
def test_live_openai() -> None:
    ctx = RunContext("llm", secrets={"api_key": os.environ["OPENAI_API_KEY"]})
    outputs = OpenAIChat(OpenAIChatConfig(stream=False)).run({"prompt": "Reply with the word: pong"}, ctx)
    assert "pong" in outputs["answer"].lower()


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("GROQ_API_KEY"), reason="needs GROQ_API_KEY")
def test_live_groq() -> None:
    ctx = RunContext("llm", secrets={"api_key": os.environ["GROQ_API_KEY"]})
    outputs = GroqChat(GroqChatConfig(stream=False)).run({"prompt": "Reply with the word: pong"}, ctx)
    assert "pong" in outputs["answer"].lower()


def test_cancelling_while_streaming_stops_the_node(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reply("one two three four five")
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="llm", type="llm.openai", config={"base_url": server.openai_base_url}),
        ],
        edges=[Edge(source="in", source_port="message", target="llm", target_port="prompt")],
    )
    resolver = CredentialResolver(
        {"openai.api_key": KEY},
        store=CredentialStore(tmp_path / "creds.json"),
        environ={},
        approved=approvals(server.url),
    )
    cancel = threading.Event()
    tokens: list[str] = []

    def on_event(event: RunEvent) -> None:
        if event.kind == "token":
            tokens.append(event.data["text"])
            cancel.set()

    run = Executor(resolver=resolver, data_dir=tmp_path).run(flow, inputs="go", on_event=on_event, cancel_event=cancel)
    assert run.cancelled
    assert run.results["llm"].status == "cancelled"
    assert tokens == ["one"]


def test_max_tokens_zero_means_the_provider_default(server: FakeLLMServer) -> None:
    make_node(PROVIDERS["openai"], server.openai_base_url, stream=False, max_tokens=0).run({"prompt": "x"}, make_ctx())
    assert "max_tokens" not in server.requests[-1].body
