"""Hybrid retrieval nodes: keyword search, fusion of ranked lists, multi-view indexing and parents."""

from flowbuilder.nodes.hybrid import fusion, keyword, views  # noqa: F401
