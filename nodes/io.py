"""The ``Inputs``/``Outputs`` shapes that several built-in nodes share (one key per port, typed by
:data:`flowbuilder.portvalues.PYTHON_TYPES`); a node's own shapes live next to it."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from flowbuilder.portvalues import Chunks, Hits, Records, Text, Tools
from flowbuilder.services import ChatModel, Embedder, Retriever


class NoInputs(TypedDict):
    """A node fed by its config or the run input, not by connections."""


class DocumentsIn(TypedDict):
    documents: Records


class ChunksOut(TypedDict):
    chunks: Chunks


class RecordsIn(TypedDict):
    records: Records


class RecordsOut(TypedDict):
    records: Records


class EmbedderOut(TypedDict):
    embedder: Embedder


class ToolOut(TypedDict):
    tool: Tools


class HitsIn(TypedDict):
    hits: Hits


class HitsOut(TypedDict):
    hits: Hits


class SearchOut(TypedDict):
    """A retriever's result for the question, and the retriever itself (for an agent or a rewrite)."""

    hits: Hits
    retriever: Retriever


class ChatIn(TypedDict):
    prompt: NotRequired[Text]
    system: NotRequired[Text]


class ChatOut(TypedDict):
    answer: NotRequired[Text]
    """Only when a prompt was connected."""
    model: ChatModel
