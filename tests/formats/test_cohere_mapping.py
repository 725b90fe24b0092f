"""n8n's Embeddings Cohere and LangFlow's Cohere Embeddings <-> ``embedder.cohere``, both ways and with --local."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.formats.convert import convert_data, export_flow, import_file
from flowbuilder.trust.providers import CredentialRef

FIXTURES = Path(__file__).parent / "fixtures"
N8N = FIXTURES / "n8n" / "cohere_embeddings_rag.json"
LANGFLOW = FIXTURES / "langflow" / "cohere_embeddings_rag.json"


def test_n8n_embeddings_cohere_imports_with_its_model_and_credential() -> None:
    flow, report = import_file(N8N)
    chosen, default = flow.node("embeddings-cohere"), flow.node("embeddings-cohere1")
    assert chosen.type == default.type == "embedder.cohere"
    assert chosen.config == {"model": "embed-multilingual-v3.0"}
    assert default.config == {"model": "embed-english-v2.0"}  # what n8n uses when the export omits it
    assert chosen.credentials == {"api_key": CredentialRef(provider="cohere", name="CohereApi account")}
    edges = {e.key for e in flow.edges}
    assert "embeddings-cohere.embedder->handbook.embedder" in edges
    assert "embeddings-cohere1.embedder->insert-handbook.embedder" in edges
    assert report.unsupported_count == 0 and not report.warnings


def test_langflow_cohere_embeddings_imports_with_its_model_timeout_and_key_reference() -> None:
    flow, report = import_file(LANGFLOW)
    node = flow.node("CohereEmbeddings-bbbbb")
    assert node.type == "embedder.cohere"
    assert node.config == {"model": "embed-english-v3.0", "timeout": 30.0}
    assert node.credentials == {"api_key": CredentialRef(provider="cohere", name="COHERE_API_KEY")}
    assert "CohereEmbeddings-bbbbb.embedder->Chroma-ccccc.embedder" in {e.key for e in flow.edges}
    assert report.unsupported_count == 0


@pytest.mark.parametrize(("source", "to"), [(N8N, "n8n"), (N8N, "langflow"), (LANGFLOW, "langflow"), (LANGFLOW, "n8n")])
def test_the_cohere_embedder_survives_export_and_import(source: Path, to: str) -> None:
    flow, _ = import_file(source)
    data, _warnings = export_flow(flow, to)
    text = json.dumps(data)
    assert ("embeddingsCohere" if to == "n8n" else '"CohereEmbeddings"') in text
    again, report = convert_data(json.loads(text), to, f"<{to}>")
    models = sorted(n.config.get("model", "") for n in again.nodes if n.type == "embedder.cohere")
    assert models == sorted(n.config["model"] for n in flow.nodes if n.type == "embedder.cohere")
    assert report.unsupported_count == 0
    embedder = next(n for n in again.nodes if n.type == "embedder.cohere")
    assert embedder.credentials["api_key"].provider == "cohere"
    assert any(e.source == embedder.id and e.source_port == "embedder" for e in again.edges)


@pytest.mark.parametrize("source", [N8N, LANGFLOW])
def test_local_swaps_the_cohere_embedder_for_the_offline_one(source: Path) -> None:
    flow, report = import_file(source, local=True)
    assert not [n for n in flow.nodes if n.type == "embedder.cohere"]
    swapped = [s for s in report.local_swaps if s.detail == "embedder.cohere -> embedder.local"]
    assert swapped and all(flow.node(s.node).type == "embedder.local" for s in swapped)
    assert all(flow.node(s.node).credentials == {} for s in swapped)
    assert not [c for c in report.credentials if c.node in {s.node for s in swapped}]
