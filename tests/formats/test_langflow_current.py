"""LangFlow as it writes files now: 1.9's type renames (Data/DataFrame -> JSON/Table), 1.10's namespaced
component ids (``ext:<bundle>:<Class>@official``), and a prompt variable nothing feeds (LangFlow fills it
with an empty text and runs)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.convert import convert_data, export_flow
from flowbuilder.formats.langflow import component_type
from flowbuilder.graph import analyze

CORPUS = Path(__file__).parent / "corpus"
# The 1.10 ids of the providers these course files use (lfx's migration table, bundle:Class).
NAMESPACED = {
    "Chroma": "ext:chroma:ChromaVectorStoreComponent@official",
    "OpenAIEmbeddings": "ext:openai:OpenAIEmbeddingsComponent@official",
    "OpenAIModel": "ext:openai:OpenAIModelComponent@official",
    "GroqModel": "ext:groq:GroqModel@official",
    "OllamaEmbeddings": "ext:ollama:OllamaEmbeddingsComponent@official",
}
RENAMED = {"Data": "JSON", "DataFrame": "Table"}


def as_langflow_110(data: dict[str, Any]) -> dict[str, Any]:
    """A course export as LangFlow 1.10 writes it: namespaced ids, JSON/Table output types."""
    new = copy.deepcopy(data)
    for node in new["data"]["nodes"]:
        inner = node["data"]
        inner["type"] = NAMESPACED.get(inner["type"], inner["type"])
        for output in (inner.get("node") or {}).get("outputs") or []:
            output["types"] = [RENAMED.get(t, t) for t in output.get("types") or []]
            if output.get("selected") in RENAMED:
                output["selected"] = RENAMED[output["selected"]]
    for edge in new["data"]["edges"]:
        handle = (edge.get("data") or {}).get("sourceHandle") or {}
        if handle:
            handle["dataType"] = NAMESPACED.get(handle["dataType"], handle["dataType"])
            handle["output_types"] = [RENAMED.get(t, t) for t in handle.get("output_types") or []]
        edge.pop("sourceHandle", None)  # the œ text form: edge.data holds the same
    return new


@pytest.mark.parametrize("name", ["langflow__AI_3X_Naive_RAG.json", "langflow__AI_3x_Naive_RAG_Ollama_Groq.json"])
def test_a_langflow_110_file_imports_as_its_older_form_and_exports_its_ids_back(name: str) -> None:
    data = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    old, _ = convert_data(data, "langflow", name)
    new, report = convert_data(as_langflow_110(data), "langflow", name)
    assert [(n.id, n.type, n.config) for n in new.nodes] == [(n.id, n.type, n.config) for n in old.nodes]
    assert sorted(e.key for e in new.edges) == sorted(e.key for e in old.edges)
    assert not report.connections_dropped
    exported, _ = export_flow(new, "langflow")
    types = {n["data"]["type"] for n in exported["data"]["nodes"]}
    assert types & set(NAMESPACED.values()), "the namespaced ids are written back"
    again, _ = convert_data(exported, "langflow", "again")
    assert sorted(n.type for n in again.nodes) == sorted(n.type for n in new.nodes)


def test_component_type_reads_namespaced_ids() -> None:
    assert component_type("ext:openai:OpenAIEmbeddingsComponent@official") == "OpenAIEmbeddingsComponent"
    assert component_type("ext:openai:OpenAIEmbeddings@official-pre-a") == "OpenAIEmbeddings"
    assert component_type("Prompt Template") == "Prompt Template"


def test_a_prompt_variable_nothing_feeds_is_an_empty_text_not_a_validate_failure() -> None:
    flow = Flow(
        name="chat prompt output",
        nodes=[
            NodeSpec(id="chat", type="chat.input"),
            NodeSpec(id="prompt", type="prompt.template", config={"template": "Q: {question}\nNotes: {notes}"}),
            NodeSpec(id="out", type="chat.output"),
        ],
        edges=[
            Edge(source="chat", source_port="message", target="prompt", target_port="question"),
            Edge(source="prompt", source_port="prompt", target="out", target_port="message"),
        ],
    )
    assert analyze(flow).issues  # natively, an unfed variable is a missing input
    exported, _ = export_flow(flow, "langflow")
    imported, report = convert_data(exported, "langflow", "chat.json")
    prompt = next(n for n in imported.nodes if n.type == "prompt.template")
    assert prompt.config["template"] == "Q: {question}\nNotes: "
    assert any("{notes}" in w and "empty text" in w for w in report.warnings)
    assert not analyze(imported).issues
