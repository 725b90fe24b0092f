"""What the chat-model nodes share: the Config, the node's run, message and tool conversion.

A provider module supplies a :class:`ChatModel` implementation (``chat(messages, tools, on_token)``)
and a node class that builds it. :class:`ChatMessage.tool_calls` entries use one neutral shape in
Flowbuilder, whatever the provider::

    {"id": "call_1", "name": "search_documents", "arguments": {"query": "login"}}

(plus ``"arguments_error"`` with the raw text when a model sent arguments that are not a JSON
object). Providers convert to and from their own shapes here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

from flowbuilder.data import ChatMessage
from flowbuilder.errors import FlowbuilderError, ProviderError
from flowbuilder.node import ConfigT, Node, RunContext
from flowbuilder.nodes.io import ChatIn, ChatOut
from flowbuilder.services import Tool
from flowbuilder.trust.terminal import excerpt

TokenCallback = Callable[[str], None]


class LLMConfig(BaseModel):
    """Settings common to every chat model; subclasses change the defaults of ``model`` and ``base_url``."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field("", description="Model name as the provider spells it.")
    temperature: float = Field(
        0.2, ge=0.0, le=2.0, description="Sampling temperature; low values answer more consistently."
    )
    max_tokens: int | None = Field(
        None, ge=0, description="Longest answer in tokens; empty or 0 (unlimited in LangFlow) = provider default."
    )
    timeout: float = Field(60.0, gt=0, description="Seconds to wait for the provider before giving up.")
    max_retries: int = Field(
        2, ge=0, description="Retries after a rate limit or a network error.", json_schema_extra={"advanced": True}
    )
    base_url: str = Field(
        "", description="Server address; empty = the provider's public API.", json_schema_extra={"advanced": True}
    )
    system_message: str = Field(
        "", description="System instructions sent before the prompt.", json_schema_extra={"multiline": True}
    )
    stream: bool = Field(True, description="Stream the answer token by token into the run's events.")
    when_unreachable: Literal["error", "extractive"] = Field(
        "error",
        description=(
            "When the model does not answer (no server, model not pulled, key refused): 'error' fails the node; "
            "'extractive' quotes the prompt's numbered chunks instead (answer.extractive, no generation) and marks "
            "the node with a warning that says so."
        ),
    )


def tool_spec(tool: Tool) -> dict[str, Any]:
    """A tool as the OpenAI-style function-calling APIs (OpenAI, Groq, Ollama) describe it."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters_schema()},
    }


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as a dict, and the raw text when they are not a JSON object."""
    if isinstance(raw, dict):
        return dict(raw), None
    if raw is None or raw == "":
        return {}, None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {}, str(raw)
    return (value, None) if isinstance(value, dict) else ({}, str(raw))


def neutral_tool_call(call_id: str, name: str, raw_arguments: Any) -> dict[str, Any]:
    arguments, error = parse_arguments(raw_arguments)
    call: dict[str, Any] = {"id": call_id, "name": name, "arguments": arguments}
    if error is not None:
        call["arguments_error"] = error
    return call


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Flowbuilder messages in the Chat Completions shape (OpenAI and Groq)."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            item["content"] = message.content or None
            item["tool_calls"] = [
                {
                    "id": call.get("id", ""),
                    "type": "function",
                    "function": {"name": call.get("name", ""), "arguments": json.dumps(call.get("arguments", {}))},
                }
                for call in message.tool_calls
            ]
        if message.role == "tool":
            item["tool_call_id"] = message.tool_call_id or ""
        elif message.name:
            item["name"] = message.name
        converted.append(item)
    return converted


def to_ollama_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Flowbuilder messages in Ollama's ``/api/chat`` shape (arguments are objects, tool results name the tool)."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            if not message.content:
                del item["content"]  # the ollama client drops it too; details must show what was sent
            item["tool_calls"] = [
                {"function": {"name": call.get("name", ""), "arguments": call.get("arguments", {})}}
                for call in message.tool_calls
            ]
        if message.role == "tool" and message.name:
            item["tool_name"] = message.name
        converted.append(item)
    return converted


def scrub(text: str, secret: str | None) -> str:
    """A provider's error text without the key (some echo part of it back): a short, escaped excerpt."""
    if secret:
        text = text.replace(secret, "***")
    return excerpt(text, 200)


class BaseChatModel:
    """Common state of the provider chat models: the request settings, what was last sent and what it cost."""

    provider: str = ""

    def __init__(
        self, *, model: str, api_key: str | None, temperature: float, max_tokens: int | None, timeout: float
    ) -> None:
        self.model = model
        self._api_key = api_key  # only for the SDK client and for scrubbing error texts; never shown
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self._client: Any = None
        """The SDK client, made on first use (it holds the key)."""
        self.last_request: list[dict[str, Any]] = []
        """The messages of the last call exactly as sent to the provider (for ``details``)."""
        self.last_usage: dict[str, Any] | None = None
        self.elapsed = 0.0
        """Seconds the last failed call took, retries included."""

    def client(self) -> Any:
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        """The provider's SDK client (the SDK is imported here, lazily)."""
        raise NotImplementedError

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[Tool] = (),
        on_token: TokenCallback | None = None,
    ) -> ChatMessage:
        """The model's reply; streamed through ``on_token`` when given. Any SDK failure becomes a ProviderError."""
        return self._call(self._request(messages, [tool_spec(tool) for tool in tools]), on_token)

    def _call(self, request: dict[str, Any], on_token: TokenCallback | None) -> ChatMessage:
        """Send a built request; any SDK failure becomes a ProviderError."""
        self.last_usage = None
        started = time.monotonic()
        try:
            return self._send(request, on_token)
        except FlowbuilderError:
            raise
        except Exception as exc:  # the SDKs raise many kinds; _error turns each into what to do about it
            self.elapsed = time.monotonic() - started  # the real wait, retries included, for the message
            raise self._error(exc) from None

    def timeout_message(self, where: str, attempts: int) -> str:
        """Says how long the user really waited: the per-attempt timeout times the attempts, not the timeout."""
        tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
        return (
            f"no answer from {where} for model '{self.model}': {tries} of {self.timeout:g} s each, "
            f"gave up after {self.elapsed:.0f} s. Raise the node's timeout or try again later."
        )

    def incomplete_stream(self, where: str, received: str) -> ProviderError:
        """A stream that ended before the model said it was done is an error, never a short answer."""
        return ProviderError(
            self.provider,
            f"the answer stream from {where} for model '{self.model}' ended before the model finished "
            f"({len(received)} characters received); the answer is incomplete: run again.",
        )

    def _request(self, messages: Sequence[ChatMessage], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The provider's request body; also records the converted messages in ``last_request``."""
        raise NotImplementedError

    def _send(self, request: dict[str, Any], on_token: TokenCallback | None) -> ChatMessage:
        raise NotImplementedError

    def _error(self, exc: Exception) -> ProviderError:
        raise NotImplementedError

    def __repr__(self) -> str:  # never show the client (it holds the key)
        return f"<{type(self).__name__} {self.provider}/{self.model}>"


class ChatSettings(NamedTuple):
    """What the shared run of a chat node reads from its config."""

    system_message: str
    stream: bool
    extractive_fallback: bool = False
    """Answer extractively when the model does not answer (``when_unreachable: extractive``)."""


class ChatNode(Node[ConfigT, ChatIn, ChatOut]):
    """Shared run of ``llm.*``: answer the prompt when it is connected, always provide the model."""

    category = "Models"
    cacheable = False

    def build_model(self, ctx: RunContext) -> BaseChatModel:
        raise NotImplementedError

    def settings(self) -> ChatSettings:
        raise NotImplementedError

    def run(self, inputs: ChatIn, ctx: RunContext) -> ChatOut:
        config = self.settings()
        model = self.build_model(ctx)
        ctx.details["provider"] = model.provider
        ctx.details["model"] = model.model
        prompt = inputs.get("prompt")
        if prompt is None:
            ctx.details["mode"] = "model only (no prompt connected)"
            return {"model": model}
        messages: list[ChatMessage] = []
        system = inputs.get("system") or config.system_message
        if system:
            messages.append(ChatMessage(role="system", content=str(system)))
        messages.append(ChatMessage(role="user", content=str(prompt)))

        def on_token(text: str) -> None:
            ctx.check_cancelled()
            ctx.token(text)

        try:
            reply = model.chat(messages, on_token=on_token if config.stream else None)
        except ProviderError as exc:
            if not config.extractive_fallback:
                raise
            return {"answer": _extractive_instead(str(prompt), exc, ctx), "model": model}
        finally:
            ctx.details["messages"] = model.last_request
        if model.last_usage:
            ctx.details["usage"] = model.last_usage
        return {"answer": reply.content, "model": model}

    def summarize(self, outputs: ChatOut) -> str:
        answer = outputs.get("answer")
        return _preview(answer) if answer is not None else "chat_model ready"


LLMConfigT = TypeVar("LLMConfigT", bound=LLMConfig, default=LLMConfig)


class ChatModelNode(ChatNode[LLMConfigT]):
    """A chat node on the shared :class:`LLMConfig` (a provider's config adds to it)."""

    Config: ClassVar[type[BaseModel]] = LLMConfig

    def settings(self) -> ChatSettings:
        c = self.config
        return ChatSettings(c.system_message, c.stream, c.when_unreachable == "extractive")


def _extractive_instead(prompt: str, exc: ProviderError, ctx: RunContext) -> str:
    """The ``when_unreachable: extractive`` answer; the node's warning names the failure and the stand-in."""
    from flowbuilder.nodes.extractive import answer_from_prompt

    try:
        extraction = answer_from_prompt(prompt, ctx)
    except FlowbuilderError as why:
        raise ProviderError(
            exc.provider, f"{str(exc).removeprefix(exc.provider + ': ')} (and no extractive answer: {why})"
        ) from None
    ctx.details["fallback"] = {"path": "extractive", "reason": str(exc), **extraction.details()}
    ctx.warn(
        f"the model did not answer ({exc}); answered extractively: quotes from the retrieved chunks, no generation"
    )
    return extraction.answer


def _preview(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
