"""Chat-model nodes: ``llm.openai``, ``llm.groq`` and ``llm.ollama`` (shared code in :mod:`nodes.llms.base`)."""

from nodes.llms import groq, ollama, openai  # noqa: F401  (registers the nodes)
