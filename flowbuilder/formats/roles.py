"""The node types the format engines build structure with, named once.

The entries (``n8n_table.py``, ``langflow_table.py``) say what each foreign node becomes; what no single
entry can say is structure between nodes: n8n's data loader takes its splitter as a sub-node, a store's
retrieval modes become retriever or tool nodes, a RAG path folds into n8n's Q&A chain, ``--local`` adds a
file -> loader -> splitter branch to a store nothing fills. The engines speak of these roles; only this
module (and the tables) name the types, so a renamed or replaced node type is one line here.
"""

from __future__ import annotations

FILE_INPUT = "input.file"
LOADER = "loader.file"
SPLITTER = "splitter.recursive"
"""The splitter an engine adds (``--local``'s ingest branch)."""
LABELLER = "labeller.row"
STRINGIFY = "parser.stringify"
PROMPT = "prompt.template"
RETRIEVER = "retriever.vector"
TOOL = "retriever.tool"
STORE_ROLES = (TOOL, RETRIEVER)
"""What a store's retrieval mode becomes (a tool for an agent, a retriever on a path)."""
CHAT_INPUT = "chat.input"
CHAT_OUTPUT = "chat.output"

# Families (type-name prefixes): any splitter, chat model, store, reranker.
SPLITTERS = "splitter."
LLMS = "llm."
STORES = "vectorstore."
RERANKERS = "reranker."

# What ``--local`` runs offline (the swaps themselves are the entries' ``local``).
OFFLINE_STORE = "vectorstore.chroma"
OFFLINE_EMBEDDER = "embedder.local"
OFFLINE_CHAT = "llm.ollama"
