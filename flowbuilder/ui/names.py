"""Names people know: a display name for every node type and the names n8n and LangFlow use for it, so
the palette reads "Vector Store Retriever" (type id in small print) and a search for "Split Text",
"LLM" or "chat" finds the node. Both live on the node class
(``display_name``, ``aliases``); a class without one gets a name made from its type id. Plain Python (no NiceGUI)."""

from __future__ import annotations

from flowbuilder.registry import NodeClass


def display_name(cls: NodeClass) -> str:
    own = getattr(cls, "display_name", "")
    if own:
        return str(own)
    # "reranker.cross_encoder" -> "Cross Encoder Reranker": the tail names the kind, the head the family
    head, _, tail = cls.type_name.partition(".")
    words = (tail or head).replace("_", " ").title()
    return f"{words} {head.title()}" if tail else words


def aliases(cls: NodeClass) -> tuple[str, ...]:
    return tuple(getattr(cls, "aliases", ()) or ())


def search_text(cls: NodeClass) -> str:
    """Everything a search matches: name, type id, category, description and aliases (lower case)."""
    return " ".join((display_name(cls), cls.type_name, cls.category, cls.description(), *aliases(cls))).lower()


def matches(cls: NodeClass, query: str) -> bool:
    """Every word of the query appears somewhere (so "vector store" and "Split Text" both work)."""
    haystack = search_text(cls)
    return all(word in haystack for word in query.lower().split())


def unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    index = 2
    while f"{name} {index}" in taken:
        index += 1
    return f"{name} {index}"
