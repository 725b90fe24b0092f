"""Embedder nodes: each outputs an ``embedder`` service (see flowbuilder.services.Embedder).

Every embedder keeps an on-disk cache (:mod:`flowbuilder.nodes.embedders.cache`) so only new texts reach the model.
"""

from flowbuilder.nodes.embedders import (
    cohere,  # noqa: F401
    local,  # noqa: F401
    ollama,  # noqa: F401
    openai,  # noqa: F401
    wordllama,  # noqa: F401
)
