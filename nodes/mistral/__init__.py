"""Mistral AI through the official ``mistralai`` SDK: ``embedder.mistral`` and ``llm.mistral``."""

from flowbuilder.nodes.mistral import chat, embeddings  # noqa: F401  (registers the nodes)
