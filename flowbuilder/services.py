"""The interfaces of components that travel on service ports.

A node with an ``embedder`` output returns an object that satisfies :class:`Embedder`, and so on.
Consumers depend only on these protocols, never on a provider class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from flowbuilder.data import ChatMessage, Document, Hit

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` by batch work; it raises RunCancelledError to stop."""


@runtime_checkable
class Embedder(Protocol):
    """What an ``embedder`` port carries: turns documents and questions into vectors."""

    # read-only properties: an embedder may compute them (an Ollama model's dimension is probed)
    @property
    def model_id(self) -> str:
        """Stable identity of the model, e.g. ``local/all-MiniLM-L6-v2-int8``; recorded on collections."""
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int | None:
        """The longest input (in the model's tokens) the model reads; longer text is truncated by it."""
        ...

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    def count_tokens(self, text: str) -> int | None: ...


@runtime_checkable
class VectorStore(Protocol):
    """What a ``vector_store`` port carries: a searchable collection."""

    name: str

    def search(
        self, query: str, k: int, where: dict[str, Any] | None = None, min_score: float | None = None
    ) -> list[Hit]: ...

    def count(self) -> int: ...


@runtime_checkable
class Retriever(Protocol):
    """What a ``retriever`` port carries: a search for one question."""

    def retrieve(self, query: str) -> list[Hit]: ...


@runtime_checkable
class Tool(Protocol):
    """What a ``tool`` port carries: something an agent's model may call."""

    name: str
    description: str

    def parameters_schema(self) -> dict[str, Any]: ...

    def call(self, arguments: dict[str, Any]) -> str: ...


class ChatResult(Protocol):
    """A chat model's reply."""

    message: ChatMessage


@runtime_checkable
class ChatModel(Protocol):
    """What a ``chat_model`` port carries: a configured model an agent or a node asks."""

    provider: str
    model: str

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[Tool] = (),
        on_token: Callable[[str], None] | None = None,
    ) -> ChatMessage: ...


@runtime_checkable
class Memory(Protocol):
    """What a ``memory`` port carries: the last exchanges of each chat session."""

    window: int

    def load(self, session_id: str) -> list[ChatMessage]: ...

    def save(self, session_id: str, user: ChatMessage, assistant: ChatMessage) -> None: ...


__all__ = [
    "ChatModel",
    "Document",
    "Embedder",
    "Hit",
    "Memory",
    "ProgressCallback",
    "Retriever",
    "Tool",
    "VectorStore",
]
