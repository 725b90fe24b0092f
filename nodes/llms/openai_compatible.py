"""A chat model over the Chat Completions API, shared by the OpenAI and Groq SDKs (same shapes, same errors)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, ClassVar

from flowbuilder.data import ChatMessage
from flowbuilder.errors import ProviderError
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.base import (
    BaseChatModel,
    ChatModelNode,
    TokenCallback,
    neutral_tool_call,
    scrub,
    to_openai_messages,
)


class OpenAICompatibleChatModel(BaseChatModel):
    """``chat()`` through ``openai.OpenAI`` or ``groq.Groq``; errors become one :class:`ProviderError`."""

    def __init__(
        self,
        *,
        provider: str,
        sdk: str,
        client_class: str,
        env_var: str,
        model: str,
        api_key: str,
        base_url: str | None,
        temperature: float,
        max_tokens: int | None,
        timeout: float,
        max_retries: int,
        usage_in_stream: bool,
    ) -> None:
        super().__init__(model=model, api_key=api_key, temperature=temperature, max_tokens=max_tokens, timeout=timeout)
        self.provider = provider
        self._sdk_name = sdk
        self._client_class = client_class
        self._env_var = env_var
        self.base_url = base_url
        self.max_retries = max_retries
        self._usage_in_stream = usage_in_stream

    @property
    def where(self) -> str:
        return self.base_url or f"the {self.provider} API"

    def _sdk(self) -> Any:
        return importlib.import_module(self._sdk_name)

    def _make_client(self) -> Any:
        factory = getattr(self._sdk(), self._client_class)
        return factory(
            api_key=self._api_key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
        )

    def _request(self, messages: Sequence[ChatMessage], tools: list[dict[str, Any]]) -> dict[str, Any]:
        self.last_request = to_openai_messages(messages)
        request: dict[str, Any] = {"model": self.model, "messages": self.last_request, "temperature": self.temperature}
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if tools:
            request["tools"] = tools
        return request

    def _send(self, request: dict[str, Any], on_token: TokenCallback | None) -> ChatMessage:
        if on_token is not None:
            return self._stream(request, on_token)
        return self._read_response(self.client().chat.completions.create(**request))

    def _read_response(self, response: Any) -> ChatMessage:
        if not response.choices:
            raise ProviderError(self.provider, f"{self.where} returned no choices for model '{self.model}'.")
        message = response.choices[0].message
        calls = [
            neutral_tool_call(call.id, call.function.name, call.function.arguments)
            for call in (message.tool_calls or [])
        ]
        if response.usage is not None:
            self.last_usage = _usage(response.usage)
        return ChatMessage(role="assistant", content=message.content or "", tool_calls=calls)

    def _stream(self, request: dict[str, Any], on_token: TokenCallback) -> ChatMessage:
        if self._usage_in_stream:
            request["stream_options"] = {"include_usage": True}
        stream = self.client().chat.completions.create(stream=True, **request)
        try:
            return self._read_stream(stream, on_token)
        finally:
            stream.close()  # also when a cancel interrupts on_token: free the connection now

    def _read_stream(self, stream: Any, on_token: TokenCallback) -> ChatMessage:
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finished = False
        for chunk in stream:
            usage = getattr(chunk, "usage", None) or getattr(getattr(chunk, "x_groq", None), "usage", None)
            if usage is not None:
                self.last_usage = _usage(usage)
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            finished = finished or bool(chunk.choices[0].finish_reason)
            if delta.content:
                content.append(delta.content)
                on_token(delta.content)
            for part in delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                if part.id:
                    call["id"] = part.id
                if part.function is not None:
                    call["name"] += part.function.name or ""
                    call["arguments"] += part.function.arguments or ""
        if not finished:
            raise self.incomplete_stream(self.where, "".join(content))
        tool_calls = [neutral_tool_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())]
        return ChatMessage(role="assistant", content="".join(content), tool_calls=tool_calls)

    def available_models(self) -> list[str]:
        """Model ids the server lists, or [] when it cannot say."""
        try:
            listing = self.client().models.list()
            # openai returns a page to iterate; groq a response object with ``data``
            models = listing.data if hasattr(listing, "data") else listing
            return sorted(str(model.id) for model in models)
        except Exception:
            return []

    def _error(self, exc: Exception) -> ProviderError:
        sdk = self._sdk()
        model = f"model '{self.model}'"
        if isinstance(exc, sdk.AuthenticationError):
            return ProviderError(
                self.provider,
                f"{self.where} rejected the API key (401) for {model}. Bind a valid key with "
                f"--cred {self.provider}.api_key=... or set {self._env_var}.",
            )
        if isinstance(exc, sdk.PermissionDeniedError):
            return ProviderError(
                self.provider, f"the API key may not use {model} (403); check the key's project and model access."
            )
        if isinstance(exc, sdk.RateLimitError):
            return ProviderError(
                self.provider,
                f"rate limit or quota exceeded (429) for {model} after {self.max_retries} retries. "
                "Wait a moment and run again, raise max_retries, or check your plan's limits.",
            )
        if isinstance(exc, sdk.NotFoundError):
            models = self.available_models()
            listing = f" Available models: {', '.join(models[:25])}." if models else ""
            return ProviderError(
                self.provider,
                f"{model} was not found at {self.where} (404). Set the node's model to one the server offers.{listing}",
            )
        if isinstance(exc, sdk.APITimeoutError):
            return ProviderError(self.provider, self.timeout_message(self.where, self.max_retries + 1))
        if isinstance(exc, sdk.APIConnectionError):
            return ProviderError(
                self.provider,
                f"cannot connect to {self.where} for {model}. Check the node's base_url and your network connection.",
            )
        if isinstance(exc, sdk.APIStatusError):
            detail = scrub(str(getattr(exc, "message", "") or exc), self._api_key)
            return ProviderError(self.provider, f"{self.where} answered HTTP {exc.status_code} for {model}: {detail}")
        return ProviderError(
            self.provider, f"calling {model} failed: {type(exc).__name__}: {scrub(str(exc), self._api_key)}"
        )


def _usage(usage: Any) -> dict[str, Any]:
    dump = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
    keep = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {key: dump[key] for key in keep if dump.get(key) is not None}


class OpenAICompatibleChatNode(ChatModelNode):
    """The node half of ``llm.openai`` and ``llm.groq``: subclasses name the provider, SDK and key variable."""

    provider: ClassVar[str]
    sdk: ClassVar[str]
    client_class: ClassVar[str]
    env_var: ClassVar[str]
    usage_in_stream: ClassVar[bool] = True
    """Ask for usage in the stream (``stream_options``); Groq rejects it and reports usage by itself."""

    @classmethod
    def sdk_base_url(cls, base_url: str) -> str | None:
        """The configured ``base_url`` as the SDK wants it; None = the provider's public API."""
        return base_url or None

    def build_model(self, ctx: RunContext) -> OpenAICompatibleChatModel:
        config = self.config
        return OpenAICompatibleChatModel(
            provider=self.provider,
            sdk=self.sdk,
            client_class=self.client_class,
            env_var=self.env_var,
            model=config.model,
            api_key=ctx.secret("api_key"),
            base_url=self.sdk_base_url(config.base_url),
            temperature=config.temperature,
            max_tokens=config.max_tokens or None,
            timeout=config.timeout,
            max_retries=config.max_retries,
            usage_in_stream=self.usage_in_stream,
        )
