"""Flowbuilder: build, run, inspect and compare RAG flows."""

__version__ = "0.1.0"
