"""What a node type does that code elsewhere asks about, declared on the node class (``Node.capabilities``).

Code outside a node's own module never compares type names: it asks the registry which types have a
capability (:meth:`flowbuilder.registry.NodeRegistry.the`, :meth:`~flowbuilder.registry.NodeRegistry.has`), so a
node pack's prompt-like node is served and evaluated like ``prompt.template``, and renaming a type touches its
module and its mapping entries only. ``tests/core/test_capabilities.py`` fails when a quoted built-in type name
appears anywhere else in the package.

Some capabilities are *roles* the format engines and fixes fill by adding a node: exactly one registered type
may claim each (:data:`SINGULAR`), or one per kind of service it gives (:data:`ONE_PER_KIND`: the offline
embedder, the offline chat model...). The registry refuses a second claimant.
"""

from __future__ import annotations

from enum import StrEnum


class Capability(StrEnum):
    """One thing a node type does that other code relies on (see the module docstring)."""

    RENDERS_PROMPT = "renders_prompt"
    """Fills a ``template`` into the prompt a model gets, with a ``context_chars`` budget: served as an MCP
    prompt; ``eval`` finds the prompt upstream of the answer; ``compare`` judges hit@chars at its budget."""
    ANSWERS = "answers"
    """Shows the flow's answer to the user (its one output is what they read): ``eval``'s and the chat's
    answer, the end of a RAG path."""
    LOCAL_ONLY = "local_only"
    """Runs on this machine with no key and sends nothing (unless a config field names a server): the builder
    may ingest through it in the background as soon as a flow opens."""
    OFFLINE_SWAP = "offline_swap"
    """What ``import --local`` swaps remote nodes giving the same service for (one per service kind)."""
    DEFAULT_SOURCE = "default_source"
    """What a fix adds for an empty required input of its output's type (one per output type)."""
    SCREENING = "screening"
    """The fast embedder ``compare --screening`` swaps every embedder for."""
    FILE_INPUT = "file_input"
    """Gives the path of the run's file: the entry of an ingest branch the engines add."""
    LOADS_FILES = "loads_files"
    """The file loader: reads a file (or folder) into records; what n8n's data loader becomes."""
    SPLITS = "splits"
    """Cuts records into chunks (every splitter): what n8n's loader takes as its text-splitter sub-node."""
    DEFAULT_SPLITTER = "default_splitter"
    """The splitter the engines add when a foreign loader splits by itself or ``--local`` adds an ingest."""
    LABELS_ROWS = "labels_rows"
    """Renders table rows as labelled text records (LangFlow's Parser over rows)."""
    STRINGIFIES = "stringifies"
    """Turns hits, records or chunks into one text (the repair for a list wired into a text port)."""
    STORE_RETRIEVER = "store_retriever"
    """Searches a connected store for the question: a foreign store's "retrieve" mode."""
    STORE_TOOL = "store_tool"
    """Offers a connected store to an agent as a search tool: a foreign store's "retrieve as tool" mode."""
    RERANKS = "reranks"
    """Re-orders hits by a score of its own (what n8n wires into a store as ``ai_reranker``)."""
    KEYWORD_SEARCH = "keyword_search"
    """Finds chunks by keyword over its ``documents`` input (and a ``query``), giving ``hits``: what stands in for
    a store's dense search while the builder's background ingest still fills the store (flowbuilder/standin.py)."""


SINGULAR = frozenset(
    {
        Capability.SCREENING,
        Capability.FILE_INPUT,
        Capability.LOADS_FILES,
        Capability.DEFAULT_SPLITTER,
        Capability.LABELS_ROWS,
        Capability.STRINGIFIES,
        Capability.STORE_RETRIEVER,
        Capability.STORE_TOOL,
        Capability.KEYWORD_SEARCH,
    }
)
"""Roles that one registered type fills: the engines add a node of that type."""
ONE_PER_KIND = frozenset({Capability.OFFLINE_SWAP, Capability.DEFAULT_SOURCE})
"""Roles one type fills per type of output port (the offline embedder, the offline chat model...)."""
