"""The node types real exports use beyond the course flows: one fixture per format exercises them all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.formats.convert import convert_data, export_flow, import_file
from flowbuilder.formats.native import dump_flow
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = Path(__file__).parent / "corpus"
N8N_CLOUD = FIXTURES / "n8n" / "cloud_sources_rag.json"


def no_credentials(tmp_path: Path) -> CredentialResolver:
    return CredentialResolver({}, store=CredentialStore(tmp_path / "none.json"), environ={})


def test_n8n_cloud_sources_become_file_inputs_with_what_to_fetch() -> None:
    flow, report = import_file(N8N_CLOUD)
    types = {n.id: n.type for n in flow.nodes}
    assert types["google-drive-trigger"] == types["download-file"] == "input.file"
    assert types["when-clicking-test-workflow"] == "input.file"
    assert types["extract-from-file"] == "loader.file"
    assert types["download-handbook"] == "loader.file" and flow.node("download-handbook").config == {
        "path": "handbook.pdf"
    }
    assert types["post-to-slack"] == "placeholder.unsupported"  # an API call, not a document
    warnings = "\n".join(report.warnings)
    assert "download a file from folder 'Policies'" in warnings
    assert "fetched https://example.com/docs/handbook.pdf" in warnings
    assert "POST https://hooks.slack.com/services/x" in warnings and "does not call APIs" in warnings


def test_n8n_edit_fields_static_values_fill_expressions_and_pass_connections_through() -> None:
    flow, report = import_file(N8N_CLOUD)
    set_fields = next(o for o in report.nodes if o.source_name == "Set Fields")
    assert set_fields.note.startswith("absorbed: static values file_url=")
    assert "when-clicking-test-workflow.path->download-handbook.path" in {e.key for e in flow.edges}
    assert not any("Set Fields" in e.expression and e.parameter == "url" for e in report.expressions)


def test_n8n_mistral_vector_store_tools_and_retrievers_map() -> None:
    flow, report = import_file(N8N_CLOUD)
    types = {n.id: n.type for n in flow.nodes}
    assert types["embeddings-mistral-cloud"] == "embedder.mistral"
    assert flow.node("mistral-cloud-chat-model").type == "llm.mistral"
    assert flow.node("mistral-cloud-chat-model").config["model"] == "mistral-large-latest"
    tool = flow.node("answer-questions-with-a-vector-store")
    assert tool.type == "retriever.tool" and tool.config == {
        "name": "handbook",
        "description": "Policies from the handbook",
        "k": 5,
    }
    assert flow.node("vector-store-retriever").config == {"k": 3}
    edges = {e.key for e in flow.edges}
    assert "qdrant-vector-store.store->answer-questions-with-a-vector-store.store" in edges
    assert "pinecone-vector-store.store->vector-store-retriever.store" in edges
    placeholders = {o.source_name: o.note for o in report.nodes if o.unsupported}
    assert all(note.startswith("replace with") or "does not" in note for note in placeholders.values()), placeholders
    assert "vectorstore.chroma" in placeholders["Supabase Vector Store"]
    qdrant = flow.node("qdrant-vector-store")
    assert qdrant.type == "vectorstore.qdrant"
    assert qdrant.config == {"search": "dense", "collection": "handbook"}  # n8n searches dense; Edit Fields value


def test_n8n_local_swaps_stores_for_chroma_with_the_same_collection_and_validates_but_for_real_gaps(
    tmp_path: Path,
) -> None:
    resolver = no_credentials(tmp_path)
    flow, report = import_file(N8N_CLOUD, local=True, resolver=resolver)
    assert flow.node("supabase-vector-store").type == "vectorstore.chroma"
    assert flow.node("supabase-vector-store").config["collection"] == "documents"
    assert flow.node("embeddings-mistral-cloud").type == "embedder.local"
    assert flow.node("mistral-cloud-chat-model").type == "llm.ollama"
    edges = {e.key for e in flow.edges}
    # the upstream download's records go to the splitter; the store's own loader is disabled
    assert "download-handbook.records->recursive-character-text-splitter.documents" in edges
    assert flow.node("default-data-loader").disabled
    assert "extract-from-file.records->policies-store.documents" in edges
    codes = sorted((i.code, i.node_id) for i in analyze(flow, resolver=resolver).issues)
    # the MCP server the file names (even on this machine) needs approval; the Slack post at the end of a branch
    # has no offline equivalent: --local leaves it unwired and says so, and the rest validates
    assert codes == [("untrusted-endpoint", "mcp-client")]
    assert not [e for e in flow.edges if "post-to-slack" in (e.source, e.target)]
    assert any(s.node == "post-to-slack" and "left unwired" in s.detail for s in report.local_swaps)


def test_n8n_question_and_answer_chain_becomes_prompt_retriever_and_model() -> None:
    flow, _ = import_file(N8N_CLOUD)
    chain = flow.node("question-and-answer-chain")
    assert chain.type == "prompt.template"
    assert "{context}" in chain.config["template"] and chain.config["template"].endswith("Question: {question}")
    assert {
        "vector-store-retriever.hits->question-and-answer-chain.context",
        "when-chat-message-received.message->question-and-answer-chain.question",
        "when-chat-message-received.message->vector-store-retriever.query",
        "question-and-answer-chain.prompt->mistral-cloud-chat-model.prompt",
    } <= {e.key for e in flow.edges}


def test_n8n_export_of_the_import_never_wires_a_splitter_into_ai_document() -> None:
    flow, _ = import_file(N8N_CLOUD)
    data, _warnings = export_flow(flow, "n8n")
    types = {n["name"]: n["type"].rsplit(".", 1)[-1] for n in data["nodes"]}
    for source, outputs in data["connections"].items():
        for conn_type, groups in outputs.items():
            for link in (link for group in groups for link in group):
                assert link["node"] in types, link
                if conn_type == "ai_document":
                    assert types[source] == "documentDefaultDataLoader", (source, link)
                if conn_type == "ai_vectorStore":
                    assert types[source].startswith("vectorStore"), (source, link)
    assert {"retrieverVectorStore", "vectorStoreSupabase", "vectorStoreQdrant", "mcpClientTool"} <= set(types.values())
    again, _ = convert_data(json.loads(json.dumps(data)), "n8n", "<n8n>")
    assert {n.type for n in again.nodes} >= {"embedder.mistral", "llm.mistral", "retriever.tool", "retriever.vector"}


LF_MISTRAL = FIXTURES / "langflow" / "mistral_astra_rag.json"
LF_PRE10 = FIXTURES / "langflow" / "pre10_vector_store.json"


def test_langflow_mistral_type_convert_and_astra(tmp_path: Path) -> None:
    flow, report = import_file(LF_MISTRAL)
    types = {n.id: n.type for n in flow.nodes}
    assert types["MistalAIEmbeddings-ddddd"] == "embedder.mistral"
    assert flow.node("MistalAIEmbeddings-ddddd").credentials["api_key"].name == "MISTRAL_API_KEY"
    assert "base_url" not in flow.node("MistalAIEmbeddings-ddddd").config  # the public endpoint is our default
    assert types["MistralModel-iiiii"] == "llm.mistral"
    assert types["TypeConverterComponent-bbbbb"] == "util.passthrough"
    assert "TypeConverterComponent-bbbbb.value->SplitText-ccccc.documents" in {e.key for e in flow.edges}
    astra = next(o for o in report.nodes if o.source_name == "AstraDB-eeeee")
    assert astra.unsupported and "vectorstore.chroma" in astra.note
    resolver = no_credentials(tmp_path)
    local, _ = import_file(LF_MISTRAL, local=True, resolver=resolver)
    assert local.node("AstraDB-eeeee").type == "vectorstore.chroma"
    assert local.node("AstraDB-eeeee").config == {"collection": "handbook"}
    edges = {e.key for e in local.edges}
    # the placeholder's LangFlow handles are rewired onto Chroma's ports
    assert {
        "SplitText-ccccc.chunks->AstraDB-eeeee.documents",
        "MistalAIEmbeddings-ddddd.embedder->AstraDB-eeeee.embedder",
        "ChatInput-fffff.message->AstraDB-eeeee.query",
        "AstraDB-eeeee.hits->ParserComponent-ggggg.items",
    } <= edges
    assert analyze(local, resolver=resolver).issues == []


def test_langflow_pre10_edges_between_mapped_nodes_are_kept() -> None:
    flow, report = import_file(LF_PRE10)
    edges = {e.key for e in flow.edges}
    assert "RecursiveCharacterTextSplitter-k2.chunks->Chroma-k4.documents" in edges
    assert "OpenAIEmbeddings-k3.embedder->Chroma-k4.embedder" in edges
    # the web page loader fetches the page once its server is approved; the report says which server
    assert "WebBaseLoader-k1.records->RecursiveCharacterTextSplitter-k2.documents" in edges
    assert flow.node("WebBaseLoader-k1").type == "loader.url"
    assert flow.node("WebBaseLoader-k1").config == {"urls": ["https://example.com/faq"]}
    assert any("fetches https://example.com/faq: approve each server" in w for w in report.warnings)
    assert flow.node("RecursiveCharacterTextSplitter-k2").config["separators"] == ["\n\n", "\n"]
    assert report.connections_dropped == []


@pytest.mark.parametrize("model", ["CohereModel", "AnthropicModel", "GoogleGenerativeAIModel", "AzureOpenAIModel"])
def test_local_rewires_a_swapped_langflow_chat_model_onto_the_new_ports(tmp_path: Path, model: str) -> None:
    def node(node_id: str, kind: str, outputs: list[str]) -> dict:  # type: ignore[type-arg]
        template = {"input_value": {"value": ""}, "api_key": {"value": "COHERE_API_KEY", "password": True,
                    "load_from_db": True}}  # fmt: skip
        return {"id": node_id, "data": {"id": node_id, "type": kind,
                "node": {"template": template, "outputs": [{"name": o} for o in outputs]}}}  # fmt: skip

    def edge(src: str, out: str, tgt: str, field: str) -> dict:  # type: ignore[type-arg]
        return {"source": src, "target": tgt, "data": {"sourceHandle": {"id": src, "name": out},
                "targetHandle": {"id": tgt, "fieldName": field}}}  # fmt: skip

    data = {"name": "cohere", "data": {
        "nodes": [node("ChatInput-a", "ChatInput", ["message"]), node(f"{model}-b", model, ["text_output"]),
                  node("ChatOutput-c", "ChatOutput", ["message"])],
        "edges": [edge("ChatInput-a", "message", f"{model}-b", "input_value"),
                  edge(f"{model}-b", "text_output", "ChatOutput-c", "input_value")]}}  # fmt: skip
    plain, report = convert_data(data, "langflow", "<lf>")
    assert plain.node(f"{model}-b").type == "placeholder.unsupported"
    assert "llm.ollama" in next(o.note for o in report.nodes if o.source_name == f"{model}-b")
    resolver = no_credentials(tmp_path)
    local, _ = convert_data(data, "langflow", "<lf>", local=True, resolver=resolver)
    assert local.node(f"{model}-b").type == "llm.ollama"
    assert {e.key for e in local.edges} == {
        f"ChatInput-a.message->{model}-b.prompt",
        f"{model}-b.answer->ChatOutput-c.message",
    }
    assert analyze(local, resolver=resolver).issues == []


def test_n8n_mcp_client_tool_becomes_tool_mcp() -> None:
    flow, _ = import_file(N8N_CLOUD)
    mcp = flow.node("mcp-client")
    assert mcp.type == "tool.mcp"
    assert mcp.config == {
        "transport": "http",
        "url": "http://127.0.0.1:8765/mcp",
        "selection": "selected",
        "tools": ["search_handbook"],
    }
    assert "mcp-client.tool->ai-agent.tools" in {e.key for e in flow.edges}
    data, _ = export_flow(flow, "n8n")
    [node] = [n for n in data["nodes"] if n["name"] == "MCP Client"]
    assert (
        node["parameters"]["endpointUrl"] == "http://127.0.0.1:8765/mcp" and node["parameters"]["include"] == "selected"
    )


def test_n8n_cohere_reranker_follows_a_load_mode_retriever_or_is_kept_disabled() -> None:
    flow, report = import_file(CORPUS / "n8n__Advance_RAG_cohere.json")
    [reranker] = [n for n in flow.nodes if n.type == "reranker.cohere"]
    assert reranker.disabled and reranker.config["model"] == "rerank-v3.5"
    assert any("reranks inside" in w and "retriever.tool" in w for w in report.warnings)
    lc = "@n8n/n8n-nodes-langchain."
    nodes = [
        {"name": "Chat", "type": lc + "chatTrigger", "typeVersion": 1.1, "position": [0, 0], "parameters": {}},
        {"name": "KB", "type": lc + "vectorStoreInMemory", "typeVersion": 1.1, "position": [200, 0],
         "parameters": {"mode": "load", "memoryKey": "kb", "topK": 8, "useReranker": True}},
        {"name": "Rerank", "type": lc + "rerankerCohere", "typeVersion": 1, "position": [200, 200],
         "parameters": {"topN": 2}},
        {"name": "Emb", "type": lc + "embeddingsOllama", "typeVersion": 1, "position": [0, 200], "parameters": {}},
    ]  # fmt: skip
    connections = {
        "Chat": {"main": [[{"node": "KB", "type": "main", "index": 0}]]},
        "Rerank": {"ai_reranker": [[{"node": "KB", "type": "ai_reranker", "index": 0}]]},
        "Emb": {"ai_embedding": [[{"node": "KB", "type": "ai_embedding", "index": 0}]]},
    }
    flow, _ = convert_data({"name": "r", "nodes": nodes, "connections": connections}, "n8n", "<n8n>")
    edges = {e.key for e in flow.edges}
    assert {"kb-retriever.hits->rerank.hits", "chat.message->rerank.query", "chat.message->kb-retriever.query"} <= edges
    assert flow.node("rerank").config == {"model": "rerank-v3.5", "keep": 2} and not flow.node("rerank").disabled
    data, _ = export_flow(flow, "n8n")
    kb = next(n for n in data["nodes"] if n["parameters"].get("mode") == "load")
    assert kb["parameters"]["useReranker"] is True
    assert data["connections"]["Rerank"]["ai_reranker"][0][0]["node"] == kb["name"]


LF_COHERE = FIXTURES / "langflow" / "cohere_rerank_rag.json"
LF_MCP = FIXTURES / "langflow" / "mcp_tools_agent.json"
COHERE_KEY = "k3Yq9vT2mZx8LpW4nR7sB1cD6fH0jQ5u"  # the plaintext key pasted into the fixture's api_key field


def test_langflow_cohere_rerank_maps_both_ways_and_never_carries_its_key() -> None:
    flow, report = import_file(LF_COHERE)
    rerank = flow.node("CohereRerank-ddddd")
    assert rerank.type == "reranker.cohere"
    assert rerank.config == {"model": "rerank-multilingual-v3.0", "keep": 2}
    edges = {e.key for e in flow.edges}
    assert {
        "Chroma-ccccc.hits->CohereRerank-ddddd.hits",
        "ChatInput-aaaaa.message->CohereRerank-ddddd.query",
        "CohereRerank-ddddd.hits->ParserComponent-eeeee.items",  # a Parser after hits stringifies them
    } <= edges
    assert report.connections_dropped == [] and report.unsupported_count == 0
    assert [(s.node, s.parameter) for s in report.secrets_found] == [("CohereRerank-ddddd", "api_key")]
    assert "api_key" not in rerank.credentials  # a plaintext key gives no reference
    assert COHERE_KEY not in dump_flow(flow) and COHERE_KEY not in json.dumps(report.to_dict())
    data, _ = export_flow(flow, "langflow")
    assert COHERE_KEY not in json.dumps(data)
    component = next(n for n in data["data"]["nodes"] if n["data"]["type"] == "CohereRerank")
    template = component["data"]["node"]["template"]
    assert template["top_n"]["value"] == 2 and template["model"]["value"] == "rerank-multilingual-v3.0"
    assert template["api_key"]["value"] == "" and template["api_key"]["password"] is True
    again, _ = convert_data(json.loads(json.dumps(data)), "langflow", "<lf>")
    assert again.node("CohereRerank-ddddd").config == rerank.config
    assert {e.key for e in again.edges} >= edges


def test_langflow_cohere_rerank_global_variable_becomes_a_credential_reference() -> None:
    data = json.loads(LF_COHERE.read_text())
    node = next(n for n in data["data"]["nodes"] if n["id"] == "CohereRerank-ddddd")
    node["data"]["node"]["template"]["api_key"] = {"value": "COHERE_API_KEY", "password": True, "load_from_db": True}
    flow, report = convert_data(data, "langflow", "<lf>")
    ref = flow.node("CohereRerank-ddddd").credentials["api_key"]
    assert (ref.provider, ref.name) == ("cohere", "COHERE_API_KEY")
    assert report.secrets_found == []
    exported, _ = export_flow(flow, "langflow")
    component = next(n for n in exported["data"]["nodes"] if n["data"]["type"] == "CohereRerank")
    field = component["data"]["node"]["template"]["api_key"]
    assert (field["value"], field["load_from_db"]) == ("COHERE_API_KEY", True)


def test_langflow_mcp_tools_stdio_needs_approval_and_secrets_stay_out(tmp_path: Path) -> None:
    flow, report = import_file(LF_MCP)
    stdio, http, registry = (flow.node(f"MCPTools-{x}") for x in ("aaaaa", "bbbbb", "ccccc"))
    assert (stdio.type, stdio.config) == (
        "tool.mcp",
        {
            "transport": "stdio",
            "command": "uvx",
            "args": ["mcp-server-fetch"],
            "env": {"LOG_LEVEL": "info"},
            "token_env": "GITHUB_TOKEN",  # the bound token slot fills the variable the secret was in
        },
    )
    assert (http.type, http.config) == (
        "tool.mcp",
        {
            "transport": "http",
            "url": "http://127.0.0.1:8765/mcp",
            "headers": {"X-Team": "rag"},
            "token_header": "Authorization",
            "token_prefix": "Bearer ",
        },
    )
    # only a name from LangFlow's MCP settings: nothing to run, so a placeholder that names tool.mcp
    assert registry.type == "placeholder.unsupported"
    outcome = next(o for o in report.nodes if o.source_name == "MCPTools-ccccc")
    assert outcome.unsupported and "tool.mcp" in outcome.note
    assert "MCPTools-aaaaa.tool->Agent-ddddd.tools" in {e.key for e in flow.edges}
    assert {(s.node, s.parameter) for s in report.secrets_found} == {
        ("MCPTools-aaaaa", "mcp_server.config.env.GITHUB_TOKEN"),
        ("MCPTools-bbbbb", "mcp_server.config.headers.Authorization"),
    }
    saved = dump_flow(flow) + json.dumps(report.to_dict())
    assert "ghp_Zx81kQ2mW9vT4nL7sB3cD6fH0jR5uYp1aE2" not in saved and "s3cr3tT0kenValue998877" not in saved
    warnings = "\n".join(report.warnings)
    assert "`LOG_LEVEL=info uvx mcp-server-fetch`" in warnings and "--allow-command" in warnings
    assert "MCPTools-bbbbb: MCP server 'docs' starts" not in warnings  # a URL starts no program
    issues = analyze(flow, resolver=no_credentials(tmp_path)).issues
    assert [i.node_id for i in issues if i.code == "untrusted-command"] == ["MCPTools-aaaaa"]


N8N_MCP_SERVER = FIXTURES / "n8n" / "mcp_server_trigger.json"


def test_n8n_mcp_server_trigger_becomes_serving_and_its_tools_become_search_tools(tmp_path: Path) -> None:
    from flowbuilder.serving.service import FlowService

    flow, report = import_file(N8N_MCP_SERVER)
    types = {n.id: n.type for n in flow.nodes}
    # the trigger is no node (and no placeholder); the two tools wired into it are kept
    assert "placeholder.unsupported" not in types.values() and "mcp-server-trigger" not in types
    assert types["handbook-search-tool"] == types["answer-questions-with-a-vector-store"] == "retriever.tool"
    [outcome] = [n for n in report.nodes if n.source_name == "MCP Server Trigger"]
    assert not outcome.unsupported and not outcome.targets
    assert "served by `flowbuilder serve FLOW`" in outcome.note and "`flowbuilder mcp FLOW`" in outcome.note
    assert "Serve tab" in outcome.note and "'search_handbook'" in outcome.note and "'policies'" in outcome.note
    text = report.to_text()
    assert "-ai_tool-> 'MCP Server Trigger'" not in text  # not a dropped connection: the note explains it
    assert "authentication: 'bearerAuth': give `flowbuilder serve FLOW --token TOKEN`" in text
    # what `flowbuilder serve` offers: the n8n tool names and descriptions, carried in the tool configs
    service = FlowService(flow, base_dir=tmp_path, resolver=no_credentials(tmp_path), data_dir=tmp_path / "data")
    tools = {s.name: (s.node_id, s.description, s.default_k) for s in service.searches}
    assert tools == {
        "search_handbook": ("handbook-search-tool", "Search the employee handbook for policies", 3),
        "policies": ("answer-questions-with-a-vector-store", "Answer questions about expense policies", 4),
    }
