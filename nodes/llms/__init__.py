"""Chat-model nodes: ``llm.openai``, ``llm.groq``, ``llm.ollama`` and ``llm.local``
(shared code in :mod:`flowbuilder.nodes.llms.base`)."""

from flowbuilder.nodes.llms import groq, local, ollama, openai  # noqa: F401  (registers the nodes)
