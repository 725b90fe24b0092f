"""Vector-store nodes: add chunks idempotently, output a ``vector_store`` service and, given a query, hits."""

from flowbuilder.nodes.vectorstores import chroma, pinecone, qdrant  # noqa: F401
