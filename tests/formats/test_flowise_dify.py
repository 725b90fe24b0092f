"""Flowise and Dify imports: the tables name real things, each fixture imports as its entries say, runs
offline with --local, and the readers refuse what no real file holds (YAML aliases, tags, deep nesting).

The fixtures (``fixtures/flowise``, ``fixtures/dify``) are small flows written for these tests in each tool's
export format; the public files of users are in ``corpus_public`` (see its README).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.errors import FlowbuilderError, FlowFileError, UnsupportedFormatError
from flowbuilder.formats.adapters import Adapter, port_names
from flowbuilder.formats.convert import convert_data, export_flow, import_file, read_export
from flowbuilder.formats.dify import DifyImporter
from flowbuilder.formats.dify_table import DIFY_TABLE
from flowbuilder.formats.flowise import FlowiseImporter, handle_name, uploaded_names
from flowbuilder.formats.flowise_table import FLOWISE_TABLE
from flowbuilder.formats.mapping import PLACEHOLDER
from flowbuilder.formats.native import dump_flow
from flowbuilder.graph import analyze
from flowbuilder.registry import default_registry
from flowbuilder.trust.credentials import CredentialResolver

FIXTURES = Path(__file__).parent / "fixtures"
FLOWISE = sorted((FIXTURES / "flowise").glob("*.json"))
DIFY = sorted((FIXTURES / "dify").glob("*.yml"))
TABLES = {"flowise": (FLOWISE_TABLE, FlowiseImporter), "dify": (DIFY_TABLE, DifyImporter)}
ENTRIES = [(fmt, a) for fmt, (table, _) in TABLES.items() for a in table.adapters]
REMOTE = {"embedder.openai", "embedder.cohere", "embedder.mistral", "llm.openai", "llm.groq", "llm.mistral",
          "vectorstore.pinecone"}  # fmt: skip


@pytest.mark.parametrize(("fmt", "adapter"), ENTRIES, ids=[f"{f}:{a.ours}<-{a.theirs}" for f, a in ENTRIES])
def test_every_type_field_port_and_hook_an_entry_names_exists(fmt: str, adapter: Adapter) -> None:
    registry = default_registry()
    assert adapter.ours in registry, f"{adapter.ours} is not a registered node type"
    fields = registry.get(adapter.ours).Config.model_fields
    for param in adapter.params:
        assert param.ours in fields, f"{adapter.ours} has no config field {param.ours!r}"
    for name in adapter.preset:
        assert name in fields
    ins, outs = port_names(adapter.ours, "in"), port_names(adapter.ours, "out")
    if adapter.ours != PLACEHOLDER and adapter.hook not in ("prompt", "qa", "llm", "template"):
        assert set(adapter.inputs) | set(adapter.in_aliases.values()) <= ins
    assert set(adapter.outputs) | set(adapter.out_aliases.values()) <= outs or adapter.ours == PLACEHOLDER
    if adapter.hook:
        importer = TABLES[fmt][1]
        assert hasattr(importer, f"_hook_{adapter.hook}"), f"no hook {adapter.hook!r} in the {fmt} importer"
    if adapter.local is not None:
        assert adapter.local.target in registry


def test_the_fixtures_are_found() -> None:
    assert len(FLOWISE) >= 3 and len(DIFY) >= 4


@pytest.mark.parametrize("path", [*FLOWISE, *DIFY], ids=lambda p: p.name)
def test_a_fixture_imports_and_validates_offline_with_no_remote_node(path: Path) -> None:
    flow, report = import_file(path)
    assert report.source_format == ("flowise" if path in FLOWISE else "dify")
    assert flow.nodes and report.nodes
    local, local_report = import_file(path, local=True)
    types = {n.type for n in local.nodes}
    assert not types & REMOTE, f"remote nodes left with --local: {types & REMOTE}"
    graph = analyze(local, resolver=CredentialResolver(), base_dir=path.parent)
    assert not graph.issues, [str(i) for i in graph.issues]
    assert local_report.to_text()


def test_flowise_chain_becomes_chat_store_prompt_model_output() -> None:
    flow, report = import_file(FIXTURES / "flowise" / "pdf_qa_chain_pinecone.json")
    by_id = {n.id: n for n in flow.nodes}
    assert by_id["pdfFile_0"].config == {"path": "handbook.pdf"}  # the uploaded file's name, never its content
    assert by_id["pinecone_0"].type == "vectorstore.pinecone" and by_id["pinecone_0"].config["k"] == 3
    assert by_id["recursiveCharacterTextSplitter_0"].config == {"chunk_size": 800, "chunk_overlap": 200}
    prompt = by_id["conversationalRetrievalQAChain_0"]
    assert prompt.type == "prompt.template"
    assert "{context}" in prompt.config["template"] and "{question}" in prompt.config["template"]
    keys = {e.key for e in flow.edges}
    assert {
        "pdfFile_0.records->recursiveCharacterTextSplitter_0.documents",
        "recursiveCharacterTextSplitter_0.chunks->pinecone_0.documents",
        "chat-input.message->pinecone_0.query",
        "pinecone_0.hits->conversationalRetrievalQAChain_0.context",
        "conversationalRetrievalQAChain_0.prompt->chatOpenAI_0.prompt",
        "chatOpenAI_0.answer->chatOpenAI_0-output.message",
    } <= keys
    # credentials are references to the Flowise credential, never values; the inline key is not carried
    assert by_id["chatOpenAI_0"].credentials["api_key"].name == "flowise-4a9b4d36"
    assert "sk-proj-" not in dump_flow(flow) and "sk-proj-" not in report.to_text()
    assert any("openAIApiKey" in s.parameter for s in report.secrets_found)
    assert report.notes == 1 and flow.notes[0].text.startswith("Upload the handbook")


def test_flowise_saved_record_and_tool_agent() -> None:
    flow, _report = import_file(FIXTURES / "flowise" / "tool_agent_retriever_record.json")
    assert flow.name == "QA agent"  # the chatflow record's name; its flowData is the graph
    by_id = {n.id: n for n in flow.nodes}
    assert by_id["retrieverTool_0"].config["name"] == "search_test_cases"
    assert by_id["csvFile_0"].config == {"path": "test_cases.csv", "mode": "records"}
    assert by_id["bufferWindowMemory_0"].config["window"] == 3
    assert by_id["calculator_0"].type == PLACEHOLDER  # a tool we do not have: skipped, the agent runs without it
    assert "memoryVectorStore_0.store->retrieverTool_0.store" in {e.key for e in flow.edges}
    graph = analyze(flow)
    assert not [i for i in graph.issues if i.node == "calculator_0"]


def test_agentflow_v2_maps_start_retriever_llm_and_reply() -> None:
    flow, report = import_file(FIXTURES / "flowise" / "agentflow_v2_document_store.json")
    types = {n.id: n.type for n in flow.nodes}
    assert types["retrieverAgentflow_0-store"] == PLACEHOLDER  # a Flowise Document Store: --local swaps it
    assert types["directReplyAgentflow_0"] == "chat.output"
    assert types["customFunctionAgentflow_0"] == PLACEHOLDER
    prompt = next(n for n in flow.nodes if n.id == "llmAgentflow_0-prompt")
    assert "{question}" in prompt.config["template"] and "{retrieverAgentflow_0}" in prompt.config["template"]
    assert any("absorbed" in o.note for o in report.nodes if o.source_name == "conditionAgentflow_0")
    local, _ = import_file(FIXTURES / "flowise" / "agentflow_v2_document_store.json", local=True)
    store = next(n for n in local.nodes if n.id == "retrieverAgentflow_0-store")
    assert store.type == "vectorstore.chroma" and store.config["collection"] == "flowise_Handbook"


def test_dify_chatflow_knowledge_base_code_and_routes() -> None:
    flow, report = import_file(FIXTURES / "dify" / "chatflow_knowledge_base.yml")
    store = next(n for n in flow.nodes if n.id == "search-the-handbook")
    assert store.type == PLACEHOLDER and store.config["original_type"] == "knowledge-retrieval"
    prompt = next(n for n in flow.nodes if n.type == "prompt.template")
    # the code node is never run: its one input (the search results) goes on to the model's context
    assert "search-the-handbook.result->answer-prompt.context" in {e.key for e in flow.edges}
    assert '{{"answer": "..."}}' in prompt.config["template"]  # Dify's literal braces stay literal
    text = report.to_text()
    assert "code" in text and "never run" in text and "--local" in text
    assert not any(n.type == "chat.output" and n.name == "No question" for n in flow.nodes)  # a fixed reply
    local, local_report = import_file(FIXTURES / "dify" / "chatflow_knowledge_base.yml", local=True)
    swapped = next(n for n in local.nodes if n.id == "search-the-handbook")
    assert swapped.type == "vectorstore.chroma" and swapped.config["collection"].startswith("dify_kb_6b0e1f7a")
    assert any("run with --input" in s.detail for s in local_report.local_swaps)  # the file the user gives


def test_dify_workflow_file_template_aggregator_http() -> None:
    flow, _report = import_file(FIXTURES / "dify" / "workflow_file_template.yml")
    keys = {e.key for e in flow.edges}
    assert "document-file.path->read-the-document.path" in keys  # a file input read by a loader
    assert "answer-model.answer->answer.message" in keys  # through the variable aggregator
    template = next(n for n in flow.nodes if n.id == "build-the-request")
    assert template.config["template"] == "Document:\n{text}\n\nQuestion: {query}"
    notify = next(n for n in flow.nodes if n.id == "notify")
    assert notify.type == PLACEHOLDER and not [e for e in flow.edges if "notify" in (e.source, e.target)]
    model = next(n for n in flow.nodes if n.id == "answer-model")
    assert model.type == PLACEHOLDER and model.config["original_type"] == "model:deepseek"


def test_dify_chat_app_and_knowledge_pipeline() -> None:
    flow, _ = import_file(FIXTURES / "dify" / "chat_app_datasets.yml")
    model = next(n for n in flow.nodes if n.type == "llm.ollama")
    assert model.config == {"model": "llama3.2", "temperature": 0.1}
    prompt = next(n for n in flow.nodes if n.type == "prompt.template")
    assert prompt.config["template"].startswith("You help QA engineers") and "{context}" in prompt.config["template"]
    pipeline, _report = import_file(FIXTURES / "dify" / "knowledge_pipeline.yml")
    chunker = next(n for n in pipeline.nodes if n.type == "splitter.recursive")
    assert chunker.config["chunk_size"] == 600 and chunker.config["chunk_overlap"] == 60  # the pipeline's variables
    assert chunker.config["separators"][0] == "\n\n"
    keys = {e.key for e in pipeline.edges}
    assert "file-read.records->general-chunker.documents" in keys
    assert "general-chunker.chunks->knowledge-base.documents" in keys
    assert {n.type for n in pipeline.nodes} >= {"input.file", "loader.file", "embedder.openai"}


def test_a_first_offline_run_fills_the_swapped_knowledge_base_and_finds_hits(tmp_path: Path) -> None:
    from flowbuilder.executor import Executor
    from flowbuilder.outputs import is_hits

    rows = ["id,title,steps", *(f"T{i},Login case {i},Enter user {i} and a wrong password {i}" for i in range(8))]
    (tmp_path / "cases.csv").write_text("\n".join(rows) + "\nLOCK1,Locked account,A locked user cannot log in\n")
    flow, _ = import_file(FIXTURES / "dify" / "chatflow_knowledge_base.yml", local=True)
    file_input = next(n.id for n in flow.nodes if n.type == "input.file")
    run = Executor(resolver=CredentialResolver(), data_dir=tmp_path / "data").run(
        flow,
        inputs={"*": "Can a locked account log in?", file_input: str(tmp_path / "cases.csv")},
        to="search-the-handbook",
        use_cache=False,
        base_dir=tmp_path,
    )
    hits = run.results["search-the-handbook"].outputs.get("hits")
    assert is_hits(hits) and hits, run.failed()
    assert "Locked account" in hits[0].document.text


def test_yaml_aliases_tags_and_deep_nesting_are_one_clear_line(tmp_path: Path) -> None:
    cases = {
        "bomb.yml": "a: &a [x, x, x]\nb: [*a, *a, *a]\n",
        "tag.yml": "app: !!python/object/apply:os.system ['true']\nkind: app\nversion: '1'\n",
        "deep.yml": "".join(" " * (2 * i) + f"k{i}:\n" for i in range(150)),
        "inf.yml": "kind: app\nversion: .inf\napp: {mode: workflow}\n",
        "broken.yml": "app: [unclosed\n",
        "notdify.yml": "name: something else\nsteps: [1, 2]\n",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(FlowbuilderError) as caught:
            import_file(path)
        message = str(caught.value)
        assert "\n" not in message.strip() and name in message, message
    assert "alias" in _error(tmp_path / "bomb.yml")
    assert "not an n8n, LangFlow, Flowise or Dify export" in _error(tmp_path / "notdify.yml")


def _error(path: Path) -> str:
    with pytest.raises(FlowbuilderError) as caught:
        import_file(path)
    return str(caught.value)


def test_dify_api_export_wrapper_is_read(tmp_path: Path) -> None:
    text = (FIXTURES / "dify" / "chat_app_datasets.yml").read_text(encoding="utf-8")
    wrapped = tmp_path / "app.json"
    wrapped.write_text(json.dumps({"data": text}))
    data, kind = read_export(wrapped)
    assert kind == "dify" and data["app"]["name"] == "Test case assistant"


def test_malformed_flowise_and_dify_are_one_line(tmp_path: Path) -> None:
    bad_flowise = {"nodes": [{"id": "x", "data": {"name": "pdfFile", "inputs": []}}], "edges": []}
    with pytest.raises(FlowFileError, match=r"data\.inputs"):
        convert_data(bad_flowise, "flowise", "bad.json")
    bad_dify = {"app": {"mode": "workflow"}, "kind": "app", "version": "0.1", "workflow": {"graph": {"nodes": 3}}}
    with pytest.raises(FlowFileError, match="Dify workflow needs"):
        convert_data(bad_dify, "dify", "bad.yml")
    with pytest.raises(UnsupportedFormatError):
        read_export(_write(tmp_path / "x.json", {"hello": "world"}))


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_handles_and_uploads() -> None:
    assert handle_name("faiss_0-output-retriever-Faiss|VectorStoreRetriever", "faiss_0", "output") == "retriever"
    assert handle_name("textFile_0-input-textSplitter-TextSplitter", "textFile_0", "input") == "textSplitter"
    assert uploaded_names("data:application/pdf;base64,AAAA,filename:a.pdf") == ["a.pdf"]
    assert uploaded_names('FILE-STORAGE::["b.csv","c.txt"]') == ["b.csv", "c.txt"]
    assert uploaded_names("data:text/plain;base64,AAAA") == []


def test_flowise_and_dify_imports_export_to_n8n_and_langflow() -> None:
    for path in (
        FIXTURES / "flowise" / "pdf_qa_chain_pinecone.json",
        FIXTURES / "dify" / "chatflow_knowledge_base.yml",
    ):
        flow, _ = import_file(path, local=True)
        for fmt in ("n8n", "langflow"):
            data, _ = export_flow(flow, fmt)
            assert data


def test_agentflow_v1_workers_give_their_tools_to_the_supervisor_agent() -> None:
    def node(nid: str, name: str, inputs: dict[str, object]) -> dict[str, object]:
        return {"id": nid, "position": {"x": 0, "y": 0}, "data": {"id": nid, "name": name, "inputs": inputs}}

    def edge(source: str, output: str, target: str, inp: str) -> dict[str, str]:
        return {"source": source, "sourceHandle": f"{source}-output-{output}-X", "target": target,
                "targetHandle": f"{target}-input-{inp}-X"}  # fmt: skip

    data = {
        "nodes": [
            node("chatOllama_0", "chatOllama", {"modelName": "llama3.2"}),
            node("supervisor_0", "supervisor", {"supervisorPrompt": "Route the work."}),
            node("worker_0", "worker", {"workerName": "Researcher"}),
            node("memoryVectorStore_0", "memoryVectorStore", {}),
            node("ollamaEmbedding_0", "ollamaEmbedding", {}),
            node("retrieverTool_0", "retrieverTool", {"name": "docs"}),
        ],
        "edges": [
            edge("chatOllama_0", "chatOllama", "supervisor_0", "model"),
            edge("supervisor_0", "supervisor", "worker_0", "supervisor"),
            edge("retrieverTool_0", "retrieverTool", "worker_0", "tools"),
            edge("ollamaEmbedding_0", "ollamaEmbedding", "memoryVectorStore_0", "embeddings"),
            edge("memoryVectorStore_0", "retriever", "retrieverTool_0", "retriever"),
        ],
    }
    flow, report = convert_data(data, "flowise", "team.json")
    keys = {e.key for e in flow.edges}
    assert "retrieverTool_0.tool->supervisor_0.tools" in keys
    assert "chatOllama_0.model->supervisor_0.model" in keys
    assert next(n for n in flow.nodes if n.id == "supervisor_0").config["system_message"] == "Route the work."
    assert any("worker" in o.note for o in report.nodes if o.source_name == "worker_0")


def test_a_kept_node_that_feeds_nothing_we_run_is_left_unwired() -> None:
    def node(nid: str, name: str, inputs: dict[str, object]) -> dict[str, object]:
        return {"id": nid, "position": {"x": 0, "y": 0}, "data": {"id": nid, "name": name, "inputs": inputs}}

    data = {
        "nodes": [
            node("chatOllama_0", "chatOllama", {}),
            node("chatOllama_1", "chatOllama", {}),
            node("moderation_0", "inputModerationOpenAI", {}),
            node("conversationChain_0", "conversationChain", {}),
        ],
        "edges": [
            {"source": "chatOllama_0", "sourceHandle": "chatOllama_0-output-chatOllama-X", "target": "moderation_0",
             "targetHandle": "moderation_0-input-model-X"},
            {"source": "moderation_0", "sourceHandle": "moderation_0-output-moderation_0-X",
             "target": "conversationChain_0", "targetHandle": "conversationChain_0-input-inputModeration-X"},
            {"source": "chatOllama_1", "sourceHandle": "chatOllama_1-output-chatOllama-X",
             "target": "conversationChain_0", "targetHandle": "conversationChain_0-input-model-X"},
        ],
    }  # fmt: skip
    flow, report = convert_data(data, "flowise", "moderated.json")
    assert not [e for e in flow.edges if "moderation_0" in (e.source, e.target)]
    assert any("moderation_0" in line for line in report.connections_dropped)
    assert not analyze(flow).issues
