"""``llm.ollama``: a model served by a local (or remote) Ollama server; no key needed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import ChatMessage
from flowbuilder.errors import ProviderError
from flowbuilder.formats import dify_table as DF
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str
from flowbuilder.formats.n8n_table import CHAT_OUT, LC, chat_params
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.base import (
    BaseChatModel,
    ChatModelNode,
    LLMConfig,
    TokenCallback,
    neutral_tool_call,
    scrub,
    to_ollama_messages,
)
from flowbuilder.nodes.ollama_client import API_KEY_SLOT, make_client
from flowbuilder.registry import register_node

DEFAULT_HOST = "http://127.0.0.1:11434"
PROVIDER = "Ollama"


class OllamaChatConfig(LLMConfig):
    """Settings of ``llm.ollama``: the saved config, and the inspector's form."""

    model: str = Field("llama3.2", description="A model pulled on the Ollama server (`ollama list`).")
    base_url: str = Field(DEFAULT_HOST, description="The Ollama server.", json_schema_extra={"advanced": True})


class OllamaChatModel(BaseChatModel):
    """``chat()`` through ``ollama.Client``; errors become one :class:`ProviderError`."""

    provider = PROVIDER

    def __init__(
        self,
        *,
        model: str,
        host: str,
        api_key: str | None,
        temperature: float,
        max_tokens: int | None,
        timeout: float,
    ) -> None:
        super().__init__(model=model, api_key=api_key, temperature=temperature, max_tokens=max_tokens, timeout=timeout)
        self.host = host
        self._call_count = 0

    def _make_client(self) -> Any:
        return make_client(self.host, self.timeout, self._api_key)

    def _request(self, messages: Sequence[ChatMessage], tools: list[dict[str, Any]]) -> dict[str, Any]:
        self.last_request = to_ollama_messages(messages)
        options: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            options["num_predict"] = self.max_tokens
        request: dict[str, Any] = {"model": self.model, "messages": self.last_request, "options": options}
        if tools:
            request["tools"] = tools
        return request

    def _send(self, request: dict[str, Any], on_token: TokenCallback | None) -> ChatMessage:
        if on_token is None:
            return self._read([self.client().chat(stream=False, **request)], None)
        parts = self.client().chat(stream=True, **request)
        try:
            return self._read(parts, on_token)
        finally:
            parts.close()  # ends the HTTP stream at once when a cancel interrupts on_token

    def _read(self, parts: Any, on_token: TokenCallback | None) -> ChatMessage:
        content: list[str] = []
        calls: list[dict[str, Any]] = []
        done = False
        for part in parts:
            message = part.message
            if message.content:
                content.append(message.content)
                if on_token is not None:
                    on_token(message.content)
            for call in message.tool_calls or []:
                # Ollama gives tool calls no id; the agent needs one to pair results with calls.
                self._call_count += 1
                calls.append(neutral_tool_call(f"call_{self._call_count}", call.function.name, call.function.arguments))
            if part.done:
                done = True
                prompt_tokens, completion_tokens = part.prompt_eval_count, part.eval_count
                if prompt_tokens is not None or completion_tokens is not None:
                    self.last_usage = {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": (prompt_tokens or 0) + (completion_tokens or 0),
                    }
        if not done:
            raise self.incomplete_stream(f"the Ollama server at {self.host}", "".join(content))
        return ChatMessage(role="assistant", content="".join(content), tool_calls=calls)

    def available_models(self) -> list[str]:
        try:
            return sorted(str(m.model) for m in self.client().list().models)
        except Exception:
            return []

    def _error(self, exc: Exception) -> ProviderError:
        import httpx
        import ollama

        model = f"model '{self.model}'"
        if isinstance(exc, ConnectionError | httpx.ConnectError):
            return ProviderError(
                PROVIDER,
                f"cannot reach the Ollama server at {self.host} for {model}. Start Ollama with `ollama serve` and "
                f"fetch the model with `ollama pull {self.model}` (or set the node's base_url to where Ollama runs); "
                "or use llm.openai / llm.groq instead and bind a key with --cred openai.api_key=... "
                "(or set OPENAI_API_KEY / GROQ_API_KEY).",
            )
        if isinstance(exc, httpx.TimeoutException):
            return ProviderError(
                PROVIDER,
                self.timeout_message(f"the Ollama server at {self.host}", 1)
                + " A first request loads the model and can be slow.",
            )
        if isinstance(exc, ollama.ResponseError):
            status = exc.status_code
            if status == 404:
                models = self.available_models()
                listing = f" Models on this server: {', '.join(models)}." if models else " No models are pulled yet."
                return ProviderError(
                    PROVIDER,
                    f"{model} is not available on the Ollama server at {self.host} (404). "
                    f"Run `ollama pull {self.model}` or choose a pulled model.{listing}",
                )
            if status in (401, 403):
                return ProviderError(
                    PROVIDER,
                    f"the Ollama server at {self.host} refused the request ({status}) for {model}. If it needs a key, "
                    "bind one with --cred ollama.api_key=... or set OLLAMA_API_KEY (a key goes to a server on this "
                    "machine once you approve it: --allow-endpoint ollama=URL).",
                )
            if status == 429:
                return ProviderError(
                    PROVIDER,
                    f"the Ollama server at {self.host} is rate limiting requests (429) for {model}. "
                    "Wait a moment and run again.",
                )
            detail = scrub(str(exc.error), self._api_key)
            return ProviderError(
                PROVIDER, f"the Ollama server at {self.host} answered HTTP {status} for {model}: {detail}"
            )
        return ProviderError(
            PROVIDER, f"calling {model} at {self.host} failed: {type(exc).__name__}: {scrub(str(exc), self._api_key)}"
        )


@register_node
class OllamaChat(ChatModelNode[OllamaChatConfig]):
    """Answer a prompt with a model on an Ollama server, or provide the model to an agent."""

    type_name = "llm.ollama"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "llm.ollama",
                LC + "lmChatOllama",
                (1,),
                outputs=CHAT_OUT,
                params=chat_params("llama3.2"),
                fixed={"options": {}},
            ),
        ),
        "langflow": (
            Adapter(
                "llm.ollama",
                "OllamaModel",
                also=("ChatOllamaComponent",),
                display="Ollama",
                **LF.LLM_PORTS,
                providers=("ollama",),
                params=(*LF.LLM_PARAMS, Param("base_url", "base_url", to_ours=LF.api_base, widget="MessageTextInput")),
            ),
        ),
        "flowise": (
            FW.chat(
                "llm.ollama",
                "chatOllama",
                Param("base_url", "baseUrl", "http://localhost:11434", to_ours=nonempty_str),
                # Flowise's Ollama LLM node (completions) reads the same fields; the chat API answers the same
                # prompt here, and the user's model and server are kept (a placeholder lost them on --local).
                also=("ollama",),
                ignore=(
                    *FW.SILENT,
                    "think",
                    "jsonMode",
                    "keepAlive",
                    "topP",
                    "topK",
                    "mirostat",
                    "mirostatEta",
                    "mirostatTau",
                    "numCtx",
                    "numGpu",
                    "numThread",
                    "repeatLastN",
                    "repeatPenalty",
                    "stop",
                    "tfsZ",
                    "numGqa",
                ),
            ),
        ),
        "dify": (Adapter("llm.ollama", "model:ollama", params=DF.MODEL_PARAMS, export=False, providers=("ollama",)),),
    }

    capabilities = frozenset({Capability.OFFLINE_SWAP})
    display_name = "Ollama Chat Model"
    aliases = ("LLM", "Ollama", "chat model", "local model", "model", "chat")
    Config = OllamaChatConfig
    credential_slots = (API_KEY_SLOT,)

    def build_model(self, ctx: RunContext) -> OllamaChatModel:
        config = self.config
        return OllamaChatModel(
            model=config.model,
            host=config.base_url or DEFAULT_HOST,
            api_key=ctx.secret("api_key") if ctx.has_secret("api_key") else None,
            temperature=config.temperature,
            max_tokens=config.max_tokens or None,
            timeout=config.timeout,
        )
