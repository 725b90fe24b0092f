"""The ``Inputs``/``Outputs`` shapes that several built-in nodes share (one key per port, typed by
:data:`flowbuilder.portvalues.PYTHON_TYPES`): they are those nodes' only port declaration
(:func:`flowbuilder.portvalues.shape_ports`); a node's own shapes live next to it."""

from __future__ import annotations

from typing import Annotated, NotRequired, TypedDict

from flowbuilder.portvalues import Answer, Chunks, Hits, Prompt, Records, Text
from flowbuilder.services import ChatModel, Embedder, Retriever


class NoInputs(TypedDict):
    """A node fed by its config or the run input, not by connections."""


class DocumentsIn(TypedDict):
    """The input of every splitter: the records to cut into chunks."""

    documents: Records


class ChunksOut(TypedDict):
    """The output of every splitter."""

    chunks: Chunks


class RecordsIn(TypedDict):
    """A records transform's input (the row labeller)."""

    records: Records


class RecordsOut(TypedDict):
    """A node that gives records (the file loader, the row labeller)."""

    records: Records


class EmbedderOut(TypedDict):
    """Every embedder's output: the Embedder service."""

    embedder: Embedder


class HitsIn(TypedDict):
    """A hits transform's input (the parent retriever)."""

    hits: Annotated[Hits, "Hits on views/children (from a store, keyword or fusion)."]


class SearchOut(TypedDict):
    """A retriever's result for the question, and the retriever itself (for an agent or a rewrite)."""

    hits: Annotated[Hits, "The best matches, best first."]
    retriever: Annotated[Retriever, "The same search as a service."]


class ChatIn(TypedDict):
    """Every chat model's inputs: an optional prompt to answer and system instructions."""

    prompt: NotRequired[Annotated[Prompt, "The prompt to answer; leave unconnected to only provide the model."]]
    system: NotRequired[Annotated[Text, "System instructions; overrides the config's system message."]]


class ChatOut(TypedDict):
    """Every chat model's outputs: the answer (when a prompt came) and the model service."""

    answer: NotRequired[Annotated[Answer, "The model's answer to the prompt."]]
    """Only when a prompt was connected."""
    model: Annotated[ChatModel, "The configured model, for an agent."]
