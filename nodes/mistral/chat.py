"""``llm.mistral``: Mistral AI chat models through the official SDK (answers, streaming, tool calls)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from flowbuilder.data import ChatMessage
from flowbuilder.errors import ProviderError
from flowbuilder.formats import dify_table as DF
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import (
    OFFLINE_CHAT,
    Adapter,
    Mappings,
    Param,
    nonempty_str,
    positive_int,
    to_float,
    to_int,
)
from flowbuilder.formats.n8n_table import CHAT_OUT, LC, ms_to_seconds, no_limit_tokens, seconds_to_ms
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.base import (
    BaseChatModel,
    ChatModelNode,
    LLMConfig,
    TokenCallback,
    neutral_tool_call,
)
from flowbuilder.nodes.llms.openai_compatible import OpenAICompatibleChatModel
from flowbuilder.nodes.mistral.common import DEFAULT_BASE_URL, ENV_VAR, PROVIDER, make_client, mistral_error
from flowbuilder.registry import register_node
from flowbuilder.trust.providers import CredentialSlot


class MistralChatConfig(LLMConfig):
    """Settings of ``llm.mistral``: the saved config, and the inspector's form."""

    model: str = Field("mistral-small-latest", description="Mistral model name, e.g. mistral-small-latest.")


class MistralChatModel(BaseChatModel):
    """The ChatModel service of ``llm.mistral`` (the official ``mistralai`` SDK)."""

    provider = PROVIDER

    def __init__(self, *, base_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base_url = base_url or DEFAULT_BASE_URL

    def _make_client(self) -> Any:
        return make_client(self._api_key or "", self.base_url, self.timeout)

    # Mistral's chat API takes the Chat Completions body (messages, tools, temperature, max_tokens).
    _request = OpenAICompatibleChatModel._request

    def _send(self, request: dict[str, Any], on_token: TokenCallback | None) -> ChatMessage:
        if on_token is None:
            response = self.client().chat.complete(**request)
            if not response.choices:
                raise ProviderError(PROVIDER, f"{self.base_url} returned no choices for model '{self.model}'.")
            message = response.choices[0].message
            self._usage(response.usage)
            calls = [_call(call) for call in (message.tool_calls or [])]
            return ChatMessage(role="assistant", content=_text(message.content), tool_calls=calls)
        content: list[str] = []
        calls_by_index: dict[int, dict[str, Any]] = {}
        with self.client().chat.stream(**request) as stream:
            for event in stream:
                chunk = event.data
                self._usage(getattr(chunk, "usage", None))
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                text = _text(delta.content)
                if text:
                    content.append(text)
                    on_token(text)
                for position, part in enumerate(delta.tool_calls or []):
                    index = part.index if isinstance(part.index, int) else position
                    call = calls_by_index.setdefault(index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = part.id or call["id"]
                    call["name"] += part.function.name or ""
                    arguments = part.function.arguments
                    call["arguments"] += arguments if isinstance(arguments, str) else _json(arguments)
        tool_calls = [neutral_tool_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls_by_index.items())]
        return ChatMessage(role="assistant", content="".join(content), tool_calls=tool_calls)

    def _usage(self, usage: Any) -> None:
        if usage is not None:
            keep = ("prompt_tokens", "completion_tokens", "total_tokens")
            self.last_usage = {key: getattr(usage, key) for key in keep if getattr(usage, key, None) is not None}

    def _error(self, exc: Exception) -> ProviderError:
        return mistral_error(
            exc, where=self.base_url, what=f"model '{self.model}'", timeout=self.timeout, secret=self._api_key
        )


def _text(content: Any) -> str:
    """Message content: a string, or a list of chunks of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(getattr(part, "text", "") or "") for part in content)
    return ""


def _json(value: Any) -> str:
    import json

    return json.dumps(value) if value is not None else ""


def _call(call: Any) -> dict[str, Any]:
    arguments = call.function.arguments
    return neutral_tool_call(call.id or "", call.function.name, arguments)


@register_node
class MistralChat(ChatModelNode[MistralChatConfig]):
    """Answer a prompt with a Mistral AI chat model, or provide the model to an agent."""

    type_name = "llm.mistral"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "llm.mistral",
                LC + "lmChatMistralCloud",
                (1,),
                outputs=CHAT_OUT,
                params=(
                    Param("model", "model", "mistral-small", keep=True),
                    Param("temperature", "options.temperature", 0.7, to_ours=to_float),
                    Param("max_tokens", "options.maxTokens", -1, to_ours=positive_int, to_theirs=no_limit_tokens),
                    Param("timeout", "options.timeout", 60000, to_ours=ms_to_seconds, to_theirs=seconds_to_ms),
                    Param("max_retries", "options.maxRetries", 2, to_ours=to_int),
                ),
                fixed={"options": {}},
                local=OFFLINE_CHAT,
            ),
        ),
        "langflow": (
            Adapter(
                "llm.mistral",
                "MistralModel",
                also=("MistralAIModelComponent",),
                display="MistralAI",
                **LF.LLM_PORTS,
                params=(
                    *LF.LLM_PARAMS,
                    Param("base_url", "mistral_api_base", to_ours=LF.mistral_endpoint, widget="MessageTextInput"),
                ),
                local=OFFLINE_CHAT,
                providers=("mistral", "mistralai"),
            ),
        ),
        "flowise": (
            FW.chat(
                "llm.mistral",
                "chatMistralAI",
                Param("max_tokens", "maxOutputTokens", to_ours=positive_int),
                Param("base_url", "overrideEndpoint", to_ours=nonempty_str),
                local=OFFLINE_CHAT,
                ignore=(*FW.SILENT, "topP", "randomSeed", "safeMode"),
            ),
        ),
        "dify": (
            Adapter(
                "llm.mistral",
                "model:mistralai",
                also=("model:mistral",),
                params=DF.MODEL_PARAMS,
                export=False,
                local=OFFLINE_CHAT,
                providers=("mistral", "mistralai"),
            ),
        ),
    }
    display_name = "Mistral Chat Model"
    aliases = ("LLM", "Mistral Cloud Chat Model", "chat model", "model", "chat")
    Config = MistralChatConfig
    credential_slots = (CredentialSlot("api_key", PROVIDER, description=f"Mistral API key ({ENV_VAR})."),)

    def build_model(self, ctx: RunContext) -> MistralChatModel:
        config = self.config
        return MistralChatModel(
            model=config.model,
            api_key=ctx.secret("api_key"),
            base_url=config.base_url,
            temperature=config.temperature,
            max_tokens=config.max_tokens or None,
            timeout=config.timeout,
        )
