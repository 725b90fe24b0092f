"""Typed ports and the single place that decides whether two ports may be connected.

Two kinds of port exist. *Data* ports carry values produced by a run (records, chunks, hits, text).
*Service* ports carry a configured component (an embedder, a vector store, a chat model, memory, a
tool, a retriever) into the node that uses it: the way n8n's ``ai_*`` sub-nodes and LangFlow's handle
inputs wire a model into its consumer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PortKind(StrEnum):
    """Data (values a run produces) or service (a configured component)."""

    DATA = "data"
    SERVICE = "service"


class PortType(StrEnum):
    """What a port carries; :func:`compatible` decides which may connect."""

    # data
    TEXT = "text"
    RECORDS = "records"
    CHUNKS = "chunks"
    VECTORS = "vectors"
    HITS = "hits"
    MESSAGE = "message"
    PROMPT = "prompt"
    ANSWER = "answer"
    ANY = "any"
    # services
    EMBEDDER = "embedder"
    VECTOR_STORE = "vector_store"
    CHAT_MODEL = "chat_model"
    MEMORY = "memory"
    TOOL = "tool"
    RETRIEVER = "retriever"

    @property
    def kind(self) -> PortKind:
        return PortKind.SERVICE if self in SERVICE_TYPES else PortKind.DATA


SERVICE_TYPES = frozenset(
    {
        PortType.EMBEDDER,
        PortType.VECTOR_STORE,
        PortType.CHAT_MODEL,
        PortType.MEMORY,
        PortType.TOOL,
        PortType.RETRIEVER,
    }
)

# Data types that are the same value seen under another name. Both directions are listed where
# both make sense: a record is a whole chunk and a chunk is a document; any text-like value is text.
_TEXTLIKE = {PortType.TEXT, PortType.MESSAGE, PortType.PROMPT, PortType.ANSWER}
_DOCUMENTS = {PortType.RECORDS, PortType.CHUNKS}


def compatible(source: PortType, target: PortType) -> bool:
    """Whether an output of type ``source`` may feed an input of type ``target``.

    This is the only compatibility rule in Flowbuilder: validation, the canvas and the importers
    all ask here.
    """
    if source == target or PortType.ANY in (source, target):
        return True
    if source.kind is PortKind.SERVICE or target.kind is PortKind.SERVICE:
        return False
    if source in _TEXTLIKE and target in _TEXTLIKE:
        return True
    return source in _DOCUMENTS and target in _DOCUMENTS


@dataclass(frozen=True)
class Port:
    """One input or output of a node.

    :param name: snake_case port name, unique per side of a node.
    :param type: what the port carries.
    :param required: an input that must be connected (ignored for outputs).
    :param multiple: an input that accepts several connections (the node receives a list).
    """

    name: str
    type: PortType
    required: bool = True
    multiple: bool = False
    description: str = ""

    @property
    def kind(self) -> PortKind:
        return self.type.kind

    def describe(self) -> str:
        return f"{self.name} ({self.type.value})"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "type": self.type.value,
            "kind": self.kind.value,
            "required": self.required,
            "multiple": self.multiple,
            "description": self.description,
        }
