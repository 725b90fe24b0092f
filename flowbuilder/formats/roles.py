"""The roles the format engines build structure with, asked of the registered node types' capabilities.

The entries (``n8n_table.py``, ``langflow_table.py``) say what each foreign node becomes; what no single
entry can say is structure between nodes: n8n's data loader takes its splitter as a sub-node, a store's
retrieval modes become retriever or tool nodes, a RAG path folds into n8n's Q&A chain, ``--local`` adds a
file -> loader -> splitter branch to a store nothing fills. The engines speak of these roles and never name
a type: each role is a capability a node class declares (:mod:`flowbuilder.capabilities`).

A role the engines fill by adding a node reads like a constant and resolves through the default registry
when used (``roles.LOADER`` is the type with :attr:`~Capability.LOADS_FILES`); a family is a question
(:func:`splits`, :func:`chat_model`, :func:`store`, :func:`reranks`).
"""

from __future__ import annotations

from flowbuilder.capabilities import Capability
from flowbuilder.ports import PortType
from flowbuilder.registry import NodeClass, default_registry

_ADDED: dict[str, tuple[Capability, PortType | None]] = {
    "FILE_INPUT": (Capability.FILE_INPUT, None),
    "CHAT_INPUT": (Capability.DEFAULT_SOURCE, PortType.MESSAGE),
    "CHAT_OUTPUT": (Capability.ANSWERS, None),
    "PROMPT": (Capability.RENDERS_PROMPT, None),
    "LOADER": (Capability.LOADS_FILES, None),
    "SPLITTER": (Capability.DEFAULT_SPLITTER, None),
    "LABELLER": (Capability.LABELS_ROWS, None),
    "STRINGIFY": (Capability.STRINGIFIES, None),
    "RETRIEVER": (Capability.STORE_RETRIEVER, None),
    "TOOL": (Capability.STORE_TOOL, None),
    # what ``--local`` runs offline (the swaps themselves are the entries' ``local``)
    "OFFLINE_STORE": (Capability.OFFLINE_SWAP, PortType.VECTOR_STORE),
    "OFFLINE_EMBEDDER": (Capability.OFFLINE_SWAP, PortType.EMBEDDER),
    "OFFLINE_CHAT": (Capability.OFFLINE_SWAP, PortType.CHAT_MODEL),
}
"""Role name -> (capability, kind): the type an engine adds for it (for a capability several types may have,
such as a prompt, the first registered: the built-ins register before node packs)."""


def __getattr__(name: str) -> str:
    """``roles.LOADER`` and the other roles in :data:`_ADDED`: the registered type that fills it."""
    if name not in _ADDED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    capability, kind = _ADDED[name]
    return default_registry().the(capability, kind).type_name


def has(type_name: str, capability: Capability) -> bool:
    """Whether the registered ``type_name`` declares ``capability`` (False for an unknown type)."""
    return default_registry().has(type_name, capability)


def store_roles() -> tuple[str, str]:
    """What a store's retrieval mode becomes: a tool for an agent, a retriever on a path."""
    return (__getattr__("TOOL"), __getattr__("RETRIEVER"))


def is_prompt(type_name: str) -> bool:
    """A prompt template (the Q&A chain's system prompt)."""
    return has(type_name, Capability.RENDERS_PROMPT)


def is_answer_output(type_name: str) -> bool:
    """Shows the answer (what n8n's chat answers in)."""
    return has(type_name, Capability.ANSWERS)


def is_chat_input(type_name: str) -> bool:
    """Takes the user's message as the run's text input."""
    cls = _class(type_name)
    return cls is not None and cls.run_input == "text"


def splits(type_name: str) -> bool:
    """Any splitter."""
    return has(type_name, Capability.SPLITS)


def reranks(type_name: str) -> bool:
    """Any reranker."""
    return has(type_name, Capability.RERANKS)


def chat_model(type_name: str) -> bool:
    """Any chat model: it gives a ``chat_model`` service."""
    return _gives(type_name, PortType.CHAT_MODEL)


def store(type_name: str) -> bool:
    """Any vector store: it gives a ``vector_store`` service."""
    return _gives(type_name, PortType.VECTOR_STORE)


def _gives(type_name: str, kind: PortType) -> bool:
    cls = _class(type_name)
    return cls is not None and any(port.type is kind for port in cls.output_ports(None))


def _class(type_name: str) -> NodeClass | None:
    registry = default_registry()
    return registry.get(type_name) if type_name in registry else None
