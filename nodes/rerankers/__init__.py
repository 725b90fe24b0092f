"""Rerankers: re-order retrieved hits with a stronger judge (an LLM, Cohere, a local cross-encoder)."""

from flowbuilder.nodes.rerankers import cohere_rerank, cross_encoder, llm_judge

__all__ = ["cohere_rerank", "cross_encoder", "llm_judge"]
