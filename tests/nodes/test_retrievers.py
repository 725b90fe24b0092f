"""retriever.vector and retriever.tool over a real embedded Chroma store and the local embedder."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.local import LocalEmbedder
from flowbuilder.nodes.retrievers import RetrieverConfig, RetrieverToolNode, ToolConfig, VectorRetrieverNode
from flowbuilder.nodes.vectorstores.chroma import ChromaConfig, ChromaNode
from flowbuilder.services import Retriever, Tool, VectorStore
from tests.nodes.test_chroma import vwo_records


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    data_dir = tmp_path_factory.mktemp("retr")
    docs = vwo_records()[150:260]
    ctx = RunContext("store", data_dir=data_dir)
    out = ChromaNode(ChromaConfig(collection="retr")).run(
        {"embedder": LocalEmbedder(cache_dir=data_dir), "documents": [docs]}, ctx
    )
    store = out["store"]
    assert isinstance(store, VectorStore)
    return store


def test_vector_retriever_outputs_hits_and_service(store: VectorStore, tmp_path: Path) -> None:
    ctx = RunContext("ret", data_dir=tmp_path)
    node = VectorRetrieverNode(RetrieverConfig(k=3))
    out = node.run({"store": store, "query": "consecutive dots in the email"}, ctx)
    hits = out["hits"]
    assert len(hits) == 3 and hits[0].document.metadata["record_id"] == "INVALID-011"
    assert ctx.details["scores"] == [round(h.score, 4) for h in hits]
    retriever = out["retriever"]
    assert isinstance(retriever, Retriever)
    again = retriever.retrieve("consecutive dots in the email")
    assert [h.id for h in again] == [h.id for h in hits]
    assert node.summarize(out) == "3 hits, retriever ready"


def test_vector_retriever_where_and_min_score(store: VectorStore, tmp_path: Path) -> None:
    ctx = RunContext("ret", data_dir=tmp_path)
    out = VectorRetrieverNode(RetrieverConfig(k=5, where={"record_id": "INVALID-004"})).run(
        {"store": store, "query": "email"}, ctx
    )
    assert [h.document.metadata["record_id"] for h in out["hits"]] == ["INVALID-004"]
    out = VectorRetrieverNode(RetrieverConfig(k=5, min_score=0.99)).run({"store": store, "query": "email"}, ctx)
    assert out["hits"] == []


def test_vector_retriever_bad_inputs(store: VectorStore, tmp_path: Path) -> None:
    ctx = RunContext("ret", data_dir=tmp_path)
    with pytest.raises(NodeError, match="Input 'query' is empty"):
        VectorRetrieverNode(RetrieverConfig()).run({"store": store, "query": "  "}, ctx)


def test_search_tool(store: VectorStore, tmp_path: Path) -> None:
    ctx = RunContext("tool", data_dir=tmp_path)
    out = RetrieverToolNode(ToolConfig(k=2)).run({"store": store}, ctx)
    tool: Any = out["tool"]
    assert isinstance(tool, Tool)
    assert tool.name == "search_documents" and "knowledge base" in tool.description
    schema = tool.parameters_schema()
    assert schema["required"] == ["query"] and schema["properties"]["query"]["type"] == "string"
    text = tool.call({"query": "email containing two @ symbols"})
    assert len(tool.last_hits) == 2
    assert text.startswith("[1] (VWO_500_Test_Cases.csv, INVALID-008; score ")
    assert re.search(r"^\[2\] \(VWO_500_Test_Cases\.csv, [A-Z]+-\d+; score 0\.\d{3}\)$", text, re.MULTILINE)
    assert tool.last_hits[0].document.text in text
    assert tool.call({}).startswith("Error: the tool needs")


def test_tool_name_must_be_a_function_name() -> None:
    with pytest.raises(ValueError):
        ToolConfig(name="search documents!")
