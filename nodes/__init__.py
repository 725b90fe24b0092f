"""Flowbuilder's built-in node types, one module per family.

Importing this package registers every built-in node with the default registry. Each module only
imports from ``flowbuilder``'s public API; provider SDKs are imported lazily inside the nodes.
"""

from flowbuilder.nodes import (
    agent,
    chat,
    embedders,
    extract_fields,
    extractive,
    http_tool,
    hybrid,
    inputs,
    labeller,
    llms,
    loaders,
    mcp_tool,
    mistral,
    parent_child,
    prompts,
    query_rewrite,
    rerankers,
    retrievers,
    sentence_splitters,
    splitters,
    url_loader,
    utility,
    vectorstores,
)

__all__ = [
    "agent",
    "chat",
    "embedders",
    "extract_fields",
    "extractive",
    "http_tool",
    "hybrid",
    "inputs",
    "labeller",
    "llms",
    "loaders",
    "mcp_tool",
    "mistral",
    "parent_child",
    "prompts",
    "query_rewrite",
    "rerankers",
    "retrievers",
    "sentence_splitters",
    "splitters",
    "url_loader",
    "utility",
    "vectorstores",
]
