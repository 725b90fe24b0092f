"""Exports keep the path from input to answer, or refuse (listing what would be lost) unless --lossy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.convert import export_flow, import_file
from flowbuilder.formats.native import save_flow

CORPUS = Path(__file__).parent / "corpus"
NAIVE = CORPUS / "langflow__AI_3X_Naive_RAG.json"
STARTER = CORPUS / "langflow__starter_Vector_Store_RAG.json"


def _links(data: dict) -> set[tuple[str, str, str]]:  # type: ignore[type-arg]
    types = {n["name"]: n["type"].rsplit(".", 1)[-1] for n in data["nodes"]}
    return {
        (types[source], conn, types[link["node"]])
        for source, outputs in data["connections"].items()
        for conn, groups in outputs.items()
        for group in groups
        for link in group
    }


def test_langflow_rag_path_becomes_n8n_question_and_answer_chain() -> None:
    flow, _ = import_file(NAIVE)
    data, warnings = export_flow(flow, "n8n", lossy=False)
    chain = next(n for n in data["nodes"] if n["type"].endswith("chainRetrievalQa"))
    system = chain["parameters"]["options"]["systemPromptTemplate"]
    template = flow.node("Prompt-Template-8zRJb").config["template"]
    assert "{context}" in system and "{question}" not in system
    assert system.splitlines()[0] == template.splitlines()[0]
    assert {
        ("chatTrigger", "main", "chainRetrievalQa"),
        ("lmChatOpenAi", "ai_languageModel", "chainRetrievalQa"),
        ("retrieverVectorStore", "ai_retriever", "chainRetrievalQa"),
        ("vectorStoreInMemory", "ai_vectorStore", "retrieverVectorStore"),
        ("embeddingsOpenAi", "ai_embedding", "vectorStoreInMemory"),
        ("documentDefaultDataLoader", "ai_document", "vectorStoreInMemory"),
    } <= _links(data)
    modes = sorted(n["parameters"]["mode"] for n in data["nodes"] if n["type"].endswith("vectorStoreInMemory"))
    assert modes == ["insert", "retrieve"]  # the one LangFlow node that ingests and searches becomes two
    assert not [w for w in warnings if "left out" in w]
    assert any("ParserComponent" in w and "joins the retrieved documents" in w for w in warnings)


def test_an_export_that_would_lose_nodes_is_refused_unless_lossy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, _ = import_file(STARTER)
    native = tmp_path / "starter.json"
    save_flow(flow, native)
    out = tmp_path / "starter.n8n.json"
    code = main(["export", str(native), "--to", "n8n", "-o", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and not out.exists()
    assert "would lose" in err and "AstraDB" in err and "--lossy" in err and len(err.strip().splitlines()) == 1
    assert main(["export", str(native), "--to", "n8n", "-o", str(out), "--lossy"]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["nodes"]


def test_local_embedder_exports_as_ollama_all_minilm_with_a_report_line() -> None:
    flow = Flow(name="local", nodes=[NodeSpec(id="emb", type="embedder.local", name="MiniLM")])
    for fmt in ("n8n", "langflow"):
        data, warnings = export_flow(flow, fmt, lossy=False)
        text = json.dumps(data)
        assert "all-minilm" in text and ("embeddingsOllama" in text or "OllamaEmbeddings" in text)
        assert any("embedder.local" in w and "all-minilm" in w for w in warnings)
