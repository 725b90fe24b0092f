"""Import/export of n8n and LangFlow flows: the real corpus, round trips, malformed input, secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.flow import Edge, Flow, Layout, NodeSpec, Note, Position, Viewport
from flowbuilder.formats.convert import convert_data, export_flow, import_file
from flowbuilder.formats.langflow import decode_handle, encode_handle
from flowbuilder.formats.native import load_flow
from flowbuilder.graph import analyze
from flowbuilder.registry import default_registry
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

REPO = Path(__file__).resolve().parents[2]
# Seven real public exports shipped with the tests (also in ../shared/corpus/flows).
CORPUS = Path(__file__).parent / "corpus"
FIXTURES = Path(__file__).parent / "fixtures"
VWO_CSV = REPO / "data" / "VWO_500_Test_Cases.csv"

CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.json"))
COURSE_FLOWS = [
    "n8n__AI3X_Basic_RAG.json",
    "langflow__AI_3X_Naive_RAG.json",
    "langflow__AI_3X_Naive_RAG_Imporve_Chunk.json",
]
NAIVE, IMPROVED = "langflow__AI_3X_Naive_RAG.json", "langflow__AI_3X_Naive_RAG_Imporve_Chunk.json"


def no_credentials(tmp_path: Path) -> CredentialResolver:
    return CredentialResolver({}, store=CredentialStore(tmp_path / "none.json"), environ={})


def source_node_count(path: Path) -> int:
    data = json.loads(path.read_text(encoding="utf-8"))
    return len(data["nodes"]) if "connections" in data else len(data["data"]["nodes"])


def edge_set(flow: Flow) -> set[str]:
    return {e.key for e in flow.edges}


# -- the real corpus ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_corpus_file_imports_and_every_node_is_accounted_for(name: str, tmp_path: Path) -> None:
    out = tmp_path / "flow.json"
    assert main(["import", str(CORPUS / name), "-o", str(out), "--report-json"]) == 0
    flow = load_flow(out)
    flow2, report = import_file(CORPUS / name)
    assert flow == flow2
    assert len(report.nodes) == source_node_count(CORPUS / name)  # never a silent skip
    assert len(flow.notes) == report.notes
    for outcome in report.nodes:
        assert outcome.targets or outcome.note.startswith("note ")
    placeholders = [n for n in flow.nodes if n.type == "placeholder.unsupported"]
    assert len(placeholders) == report.unsupported_count


@pytest.mark.parametrize("name", COURSE_FLOWS)
def test_course_flows_map_every_node_to_a_real_node(name: str) -> None:
    flow, report = import_file(CORPUS / name)
    assert report.unsupported_count == 0
    registry = default_registry()
    for spec in flow.nodes:
        assert spec.type != "placeholder.unsupported"
        assert spec.type in registry, spec.type


def test_n8n_basic_rag_structure() -> None:
    flow, report = import_file(CORPUS / "n8n__AI3X_Basic_RAG.json")
    types = {n.id: n.type for n in flow.nodes}
    assert types["on-form-submission"] == "input.file"
    assert types["when-chat-message-received"] == "chat.input"
    assert types["pinecone-vector-store-tool"] == "retriever.tool"
    assert len(flow.notes) == 3 and flow.notes[0].text.startswith("## Objective")
    assert {
        "on-form-submission.path->default-data-loader.path",
        "default-data-loader.records->recursive-character-text-splitter.documents",
        "recursive-character-text-splitter.chunks->store-the-docs-to-vector-db.documents",
        "embeddings-openai-small.embedder->store-the-docs-to-vector-db.embedder",
        "embeddings-openai.embedder->pinecone-vector-store.embedder",
        "pinecone-vector-store.store->pinecone-vector-store-tool.store",
        "pinecone-vector-store-tool.tool->rag-agent.tools",
        "brain-gpt-5-mini.model->rag-agent.model",
        "model-chat-memory.memory->rag-agent.memory",
        "when-chat-message-received.message->rag-agent.message",
    } == edge_set(flow)
    splitter = flow.node("recursive-character-text-splitter")
    assert splitter.config == {"chunk_size": 1000, "chunk_overlap": 200}
    assert flow.node("pinecone-vector-store-tool").config["k"] == 3
    assert flow.node("brain-gpt-5-mini").config["model"] == "gpt-5-mini"
    assert flow.node("store-the-docs-to-vector-db").config["index"] == "ai3x-1536"
    assert flow.node("store-the-docs-to-vector-db").credentials["api_key"].name == "Pinecone account"
    assert flow.position("on-form-submission") == Position(x=-192, y=-112)
    text = report.to_text()
    assert "one source node became 2" in text
    assert "Recursive Character Text Splitter.chunkSize = 1000" in text
    assert "={{ $now.toISO() }}" in text
    assert all("{{" not in json.dumps(n.config) for n in flow.nodes)  # expressions never reach a config


def test_langflow_improved_flow_structure() -> None:
    flow, _report = import_file(CORPUS / IMPROVED)
    labeller = flow.node("ParserComponent-hRRZi")
    assert labeller.type == "labeller.row"
    assert labeller.config["join"] is True and labeller.config["template"].startswith("Scenario TID: {Scenario TID}")
    assert flow.node("ParserComponent-tvQQM").type == "parser.stringify"
    assert flow.node("ParserComponent-tvQQM").config["template"] == "Text: {text}"
    assert flow.node("File-XydKH").config == {"path": "VWO_500_Test_Cases.csv", "mode": "records"}
    assert flow.node("SplitText-4y721").config == {
        "separator": "\n",
        "chunk_size": 1000,
        "chunk_overlap": 0,
        "keep_separator": "none",
    }
    assert flow.node("OpenAIModel-Ip8za").credentials["api_key"].name == "OPENAI_API_KEY"
    assert "Prompt-Template-aoo3l" in {e.target for e in flow.edges if e.target_port in ("question", "context")}
    assert flow.layout.viewport.zoom == pytest.approx(0.4534966818087762)
    assert len(flow.notes) == 1 and flow.notes[0].width == 888


def test_langflow_naive_flow_one_chroma_does_both() -> None:
    flow, _ = import_file(CORPUS / NAIVE)
    chroma = [e.target_port for e in flow.edges if e.target == "Chroma-UiLnB"]
    assert sorted(chroma) == ["documents", "embedder", "query"]
    assert flow.node("File-XydKH").config["mode"] == "whole"
    assert flow.node("ParserComponent-3yv4e").config == {"template": "{text}", "separator": "\n"}


# -- round trips --------------------------------------------------------------------------------------


def canonical(flow: Flow) -> tuple[Any, ...]:
    """Nodes (type, config, credentials, disabled, position), edges and notes keyed by node name."""
    name = {n.id: n.name or n.id for n in flow.nodes}
    nodes = sorted(
        (
            name[n.id],
            n.type,
            json.dumps(n.config, sort_keys=True),
            json.dumps({k: v.model_dump() for k, v in n.credentials.items()}),
            n.disabled,
            flow.position(n.id).x,
            flow.position(n.id).y,
        )
        for n in flow.nodes
    )
    edges = sorted((name[e.source], e.source_port, name[e.target], e.target_port) for e in flow.edges)
    notes = sorted((n.text, n.width, n.height, flow.position(n.id).x, flow.position(n.id).y) for n in flow.notes)
    return nodes, edges, notes


def roundtrip(flow: Flow, fmt: str) -> Flow:
    data, _warnings = export_flow(flow, fmt)
    data = json.loads(json.dumps(data))  # what a file would hold
    again, _report = convert_data(data, fmt, f"<{fmt}>")
    return again


def native_n8n_shaped() -> Flow:
    nodes = [
        NodeSpec(id="upload", type="input.file", name="Upload"),
        NodeSpec(id="loader", type="loader.file", name="Loader"),
        NodeSpec(id="split", type="splitter.recursive", name="Split", config={"chunk_size": 800, "chunk_overlap": 100}),
        NodeSpec(
            id="emb",
            type="embedder.openai",
            name="Emb",
            config={"model": "text-embedding-3-large"},
            credentials={"api_key": {"provider": "openai", "name": "work"}},
        ),  # type: ignore[dict-item]
        NodeSpec(id="store", type="vectorstore.pinecone", name="Store", config={"index": "docs"}),
        NodeSpec(id="chat", type="chat.input", name="Chat"),
        NodeSpec(
            id="agent", type="agent.tools", name="Agent", config={"system_message": "Use the tool.", "max_steps": 6}
        ),
        NodeSpec(id="llm", type="llm.groq", name="LLM", config={"model": "llama-3.1-8b-instant", "temperature": 0.1}),
        NodeSpec(id="mem", type="memory.window", name="Mem", config={"window": 7}, disabled=True),
        NodeSpec(id="kb", type="vectorstore.pinecone", name="KB", config={"index": "docs"}),
        NodeSpec(
            id="kb-tool",
            type="retriever.tool",
            name="KB (tool)",
            config={"name": "kb", "k": 6, "description": "Find passages"},
        ),
        NodeSpec(id="emb2", type="embedder.openai", name="Emb2"),
    ]
    wires = [
        ("upload", "path", "loader", "path"), ("loader", "records", "split", "documents"),
        ("split", "chunks", "store", "documents"), ("emb", "embedder", "store", "embedder"),
        ("chat", "message", "agent", "message"), ("llm", "model", "agent", "model"),
        ("mem", "memory", "agent", "memory"), ("kb", "store", "kb-tool", "store"),
        ("kb-tool", "tool", "agent", "tools"), ("emb2", "embedder", "kb", "embedder"),
    ]  # fmt: skip
    positions = {n.id: Position(x=10.0 * i, y=-5.0 * i) for i, n in enumerate(nodes)}
    positions["kb-tool"] = Position(x=positions["kb"].x, y=positions["kb"].y + 160)  # n8n draws both roles as one node
    return Flow(
        name="RT",
        nodes=nodes,
        edges=[Edge(source=a, source_port=b, target=c, target_port=d) for a, b, c, d in wires],
        notes=[Note(id="sticky-note", text="hello", width=200, height=100, color="4")],
        layout=Layout(positions={**positions, "sticky-note": Position(x=-50, y=-60)}),
    )


def test_native_n8n_native_keeps_nodes_config_edges_positions() -> None:
    flow = native_n8n_shaped()
    again = roundtrip(flow, "n8n")
    before, after = canonical(flow), canonical(again)
    assert before[1] == after[1]  # edges
    assert before[2] == after[2]  # notes
    by_name = {n[0]: n for n in after[0]}
    for node in before[0]:
        name, type_name, config, creds, disabled, x, y = node
        got = by_name[name.replace("KB (tool)", "KB (tool)")]
        assert got[1] == type_name and got[4] == disabled and (got[5], got[6]) == (x, y), name
        assert {k: v for k, v in json.loads(got[2]).items() if k in json.loads(config)} == json.loads(config), name
        if type_name != "retriever.tool":
            # a bound account comes back as it was; an unbound key slot comes back bound to the provider's
            # default account (an n8n node names a credential wherever it takes one), never to a key
            slots = default_registry().get(type_name).credential_slots
            want = json.loads(creds) or {
                slot.name: {"provider": slot.provider, "name": "default"} for slot in slots if slot.required
            }
            assert json.loads(got[3]) == want, name


def native_langflow_shaped() -> Flow:
    nodes = [
        NodeSpec(id="file", type="loader.file", name="CSV", config={"path": "cases.csv", "mode": "records"}),
        NodeSpec(
            id="label",
            type="labeller.row",
            name="Label",
            config={"template": "ID: {id}\n{text}", "join": True, "separator": "\n"},
        ),
        NodeSpec(
            id="split",
            type="splitter.character",
            name="Split",
            config={"separator": "\n", "chunk_size": 500, "chunk_overlap": 0, "keep_separator": "end"},
        ),
        NodeSpec(
            id="emb",
            type="embedder.ollama",
            name="Emb",
            config={"model": "nomic-embed-text", "base_url": "http://127.0.0.1:11434"},
        ),
        NodeSpec(
            id="db",
            type="vectorstore.chroma",
            name="DB",
            config={"collection": "c1", "persist_directory": "./db", "k": 5},
        ),
        NodeSpec(id="chat", type="chat.input", name="Chat", config={"text": "hello"}),
        NodeSpec(id="fmt", type="parser.stringify", name="Fmt", config={"template": "{text}", "separator": "\n---\n"}),
        NodeSpec(
            id="prompt", type="prompt.template", name="Prompt", config={"template": "Context: {context}\nQ: {question}"}
        ),
        NodeSpec(
            id="llm",
            type="llm.openai",
            name="LLM",
            config={"model": "gpt-4o-mini", "temperature": 0.0, "max_tokens": 300},
            credentials={"api_key": {"provider": "openai", "name": "OPENAI_API_KEY"}},
        ),  # type: ignore[dict-item]
        NodeSpec(id="out", type="chat.output", name="Out"),
    ]
    wires = [
        ("file", "records", "label", "records"), ("label", "records", "split", "documents"),
        ("split", "chunks", "db", "documents"), ("emb", "embedder", "db", "embedder"),
        ("chat", "message", "db", "query"),
        ("db", "hits", "fmt", "items"), ("fmt", "text", "prompt", "context"), ("chat", "message", "prompt", "question"),
        ("prompt", "prompt", "llm", "prompt"), ("llm", "answer", "out", "message"),
    ]  # fmt: skip
    return Flow(
        name="LF RT",
        nodes=nodes,
        edges=[Edge(source=a, source_port=b, target=c, target_port=d) for a, b, c, d in wires],
        notes=[Note(id="n1", text="# Read me", width=300, height=200)],
        layout=Layout(
            positions={**{n.id: Position(x=1.5 * i, y=2.5 * i) for i, n in enumerate(nodes)}, "n1": Position(x=9, y=9)},
            viewport=Viewport(x=3, y=4, zoom=0.7),
        ),
    )


def test_native_langflow_native_keeps_nodes_config_edges_positions() -> None:
    flow = native_langflow_shaped()
    again = roundtrip(flow, "langflow")
    assert canonical(again) == canonical(flow)
    assert again.layout.viewport == flow.layout.viewport


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_import_export_import_keeps_the_mapped_graph(name: str) -> None:
    flow, _ = import_file(CORPUS / name)
    fmt = "n8n" if name.startswith("n8n") else "langflow"
    again = roundtrip(flow, fmt)
    assert {n.id: n.type for n in again.nodes} == {n.id: n.type for n in flow.nodes}
    assert edge_set(again) == edge_set(flow)
    for spec in flow.nodes:
        other = again.node(spec.id)
        assert other.config == spec.config, spec.id
        assert other.credentials == spec.credentials, spec.id
        assert again.position(spec.id) == flow.position(spec.id)
    assert [n.text for n in again.notes] == [n.text for n in flow.notes]


def test_langflow_export_handles_match_the_ui_encoding() -> None:
    data, _ = export_flow(native_langflow_shaped(), "langflow")
    edges = data["data"]["edges"]
    assert len(edges) == 10
    for edge in edges:
        assert edge["sourceHandle"] == encode_handle(edge["data"]["sourceHandle"])
        assert decode_handle(edge["targetHandle"]) == edge["data"]["targetHandle"]
        assert edge["id"].startswith(f"xy-edge__{edge['source']}{edge['sourceHandle']}-{edge['target']}")
    types = {n["data"]["type"] for n in data["data"]["nodes"]}
    assert {"File", "ParserComponent", "SplitText", "Chroma", "Prompt Template", "OpenAIModel", "note"} <= types
    llm = next(n for n in data["data"]["nodes"] if n["data"]["type"] == "OpenAIModel")
    key = llm["data"]["node"]["template"]["api_key"]
    assert key["value"] == "OPENAI_API_KEY" and key["load_from_db"] is True and key["password"] is True


def test_n8n_export_shape_and_credential_references() -> None:
    data, warnings = export_flow(native_n8n_shaped(), "n8n")
    names = {n["name"]: n for n in data["nodes"]}
    store = names["KB"]
    assert store["parameters"]["mode"] == "retrieve-as-tool" and store["parameters"]["topK"] == 6
    assert store["credentials"] == {"pineconeApi": {"id": None, "name": "default"}}
    assert names["Emb"]["credentials"] == {"openAiApi": {"id": None, "name": "work"}}
    assert data["connections"]["Split"]["ai_textSplitter"] == [
        [{"node": "Loader", "type": "ai_textSplitter", "index": 0}]
    ]
    assert data["connections"]["Loader"]["ai_document"][0][0]["node"] == "Store"
    assert data["connections"]["Upload"]["main"][0][0]["node"] == "Store"
    assert data["connections"]["KB"]["ai_tool"][0][0]["node"] == "Agent"
    assert all(isinstance(n["position"], list) and len(n["position"]) == 2 for n in data["nodes"])
    assert names["Sticky Note"]["type"] == "n8n-nodes-base.stickyNote"
    assert names["Mem"]["disabled"] is True
    assert warnings == []


def test_export_cli_writes_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flowbuilder.formats.native import save_flow

    src = tmp_path / "rt.json"
    save_flow(native_langflow_shaped(), src)
    out = tmp_path / "rt.langflow.json"
    assert main(["export", str(src), "--to", "langflow", "-o", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert len(data["data"]["nodes"]) == 11
    assert "Wrote langflow export" in capsys.readouterr().out


# -- fixtures: expressions, disabled, placeholders, pre-1.0 ---------------------------------------------


def test_n8n_small_fixture(tmp_path: Path) -> None:
    flow, report = import_file(FIXTURES / "n8n_small.json", resolver=no_credentials(tmp_path))
    assert flow.node("chat").name == "Chat"  # trailing space trimmed; id slugified
    assert flow.node("memory").disabled is True and flow.node("memory").config == {"window": 8}
    assert flow.node("kb-store-tool").config == {"name": "kb_search", "k": 4, "description": "Search the KB"}
    assert "temperature" not in flow.node("model").config  # expression: our default, not the expression
    expressions = {(e.node, e.parameter): e.expression for e in report.expressions}
    assert expressions[("KB Store", "topK")] == "={{ 2 + 3 }}"
    assert expressions[("Model", "options.temperature")] == "={{ $json.temp }}"
    http = flow.node("http-request")
    assert (
        http.type == "placeholder.unsupported" and http.config["original"]["parameters"]["url"] == "https://example.com"
    )
    assert "my-agent.answer->http-request.main" in edge_set(flow)
    assert any("n8n-managed" in w for w in report.warnings)
    bound = {c.node: c.bound for c in report.credentials}
    assert bound["kb-store"] is False and bound["model"] is False
    issues = analyze(flow, resolver=no_credentials(tmp_path)).issues
    assert any(i.code == "missing-credential" and i.node_id == "kb-store" for i in issues)
    assert any(i.code == "unsupported-node" and "httpRequest" in i.message for i in issues)


def test_n8n_local_swaps_and_validates(tmp_path: Path) -> None:
    flow, report = import_file(FIXTURES / "n8n_small.json", local=True, resolver=no_credentials(tmp_path))
    types = {n.id: n.type for n in flow.nodes}
    assert types["kb-store"] == "vectorstore.chroma" and flow.node("kb-store").config["collection"] == "kb-index"
    assert types["model"] == "llm.ollama" and types["mistral-embeddings"] == "embedder.local"
    assert "mistral-embeddings.embedder->kb-store.embedder" in edge_set(flow)
    assert {s.node for s in report.local_swaps} == {"kb-store", "model", "mistral-embeddings", "http-request"}
    assert "left unwired" in next(s.detail for s in report.local_swaps if s.node == "http-request")
    assert all(not n.credentials for n in flow.nodes)


def test_cred_option_binds_a_slot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "f.json"
    code = main(
        [
            "import",
            str(FIXTURES / "n8n_small.json"),
            "-o",
            str(out),
            "--report-json",
            "--cred",
            "pinecone/Pinecone prod=pc-secret-123",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    bound = {c["node"]: c["bound"] for c in report["credentials"]}
    assert bound["kb-store"] is True
    assert "pc-secret-123" not in captured.out + captured.err + out.read_text(encoding="utf-8")


def test_langflow_pre10_pipe_handles() -> None:
    flow, report = import_file(FIXTURES / "langflow_pre10.json")
    # the legacy chat model feeds the agent's model port; the playground chat becomes a chat input
    assert edge_set(flow) == {
        "ChatOpenAI-z0sH5.model->VectorStoreAgent-FOmxY.model",
        "VectorStoreAgent-FOmxY-input.message->VectorStoreAgent-FOmxY.message",
    }
    assert report.unsupported_count == 0
    assert flow.node("ChatOpenAI-z0sH5").config == {"model": "gpt-3.5-turbo"}  # a password-flagged plain field
    assert flow.position("VectorStoreAgent-FOmxY") == Position(x=500, y=20)


# -- secrets ------------------------------------------------------------------------------------------

PLAINTEXT = (
    "sk-FAKEplaintext0123456789abcdefABCDEF",
    "hunter2-not-key-shaped-secret",
    "AstraCS:plaintext-astra-token-value",
)


@pytest.mark.parametrize("report_json", [False, True])
def test_plaintext_secrets_never_leave_the_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], report_json: bool
) -> None:
    out = tmp_path / "flow.json"
    args = ["import", str(FIXTURES / "langflow_plaintext_secret.json"), "-o", str(out)] + (
        ["--report-json"] if report_json else []
    )
    assert main(args) == 0
    captured = capsys.readouterr()
    written = out.read_text(encoding="utf-8")
    for secret in PLAINTEXT:
        assert secret not in written and secret not in captured.out and secret not in captured.err
    text = captured.out
    assert "OpenAIModel-bbbbb" in text and "api_key" in text and "AstraDB-ddddd" in text
    flow = load_flow(out)
    assert edge_set(flow) == {
        "ChatInput-aaaaa.message->OpenAIModel-bbbbb.prompt",  # decoded from the compact œ handle (no edge.data)
        "OpenAIModel-bbbbb.answer->ChatOutput-eeeee.message",  # decoded from the spaced œ handle
        "OpenAIEmbeddings-ccccc.embedder->AstraDB-ddddd.embedding_model",
    }
    assert flow.node("OpenAIModel-bbbbb").credentials == {}
    for fmt in ("n8n", "langflow"):
        exported = json.dumps(export_flow(flow, fmt)[0])
        assert all(secret not in exported for secret in PLAINTEXT)


def test_embedded_code_is_never_run(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import_file(FIXTURES / "langflow_plaintext_secret.json")
    assert "PWNED" not in capfd.readouterr().out


# -- malformed input -------------------------------------------------------------------------------------


def _bad_inputs(tmp_path: Path) -> dict[str, Path]:
    files = {
        "truncated": ('{"name": "x", "nodes": [{"type": "a"', "not valid JSON"),
        "unknown": ('{"hello": "world"}', "not an n8n, LangFlow, Flowise or Dify export"),
        "n8n-missing": ('{"nodes": [{"parameters": {}}], "connections": {}}', 'has no "type"'),
        "lf-missing": ('{"data": {"nodes": [{"id": "A-1", "data": {}}], "edges": []}}', 'has no "data.type"'),
        "lf-nodes-wrong": (
            '{"data": {"nodes": [{"id": "A-1", "data": {"type": "File", "node": []}}], "edges": []}}',
            "not an object",
        ),
        "n8n-conn": (
            '{"nodes": [{"type": "x.y", "name": "a"}], "connections": {"a": {"main": [[{"index": 0}]]}}}',
            "no target node",
        ),
    }
    paths = {}
    for name, (text, _) in files.items():
        path = tmp_path / "in" / f"{name}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths[name] = path
    return paths


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("truncated", "not valid JSON"),
        ("unknown", "not an n8n, LangFlow, Flowise or Dify export"),
        ("n8n-missing", 'has no "type"'),
        ("lf-missing", 'has no "data.type"'),
        ("lf-nodes-wrong", "not an object"),
        ("n8n-conn", "no target node"),
    ],
)
def test_malformed_input_is_one_clear_line(
    case: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _bad_inputs(tmp_path)[case]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["import", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(path) in err and expected in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert list(work.iterdir()) == []  # nothing written


def test_huge_file_is_refused_without_reading_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    out = tmp_path / "out.json"
    assert main(["import", str(big), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(big) in err and "MB" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_failed_import_leaves_an_existing_output_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("keep me", encoding="utf-8")
    bad = _bad_inputs(tmp_path)["lf-missing"]
    assert main(["import", str(bad), "-o", str(out)]) == 2
    assert out.read_text(encoding="utf-8") == "keep me"


def test_native_flow_is_not_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flowbuilder.formats.native import save_flow

    src = tmp_path / "native.json"
    save_flow(native_langflow_shaped(), src)
    assert main(["import", str(src), "-o", str(tmp_path / "x.json")]) == 2
    assert "already a Flowbuilder flow" in capsys.readouterr().err


# -- --local and running the imported course flows ----------------------------------------------------


@pytest.mark.parametrize("name", [NAIVE, IMPROVED])
def test_local_course_flows_validate_without_credentials(name: str, tmp_path: Path) -> None:
    resolver = no_credentials(tmp_path)
    plain, _ = import_file(CORPUS / name, resolver=resolver)
    assert any(i.code == "missing-credential" for i in analyze(plain, resolver=resolver).issues)
    flow, report = import_file(CORPUS / name, local=True, resolver=resolver)
    assert analyze(flow, resolver=resolver).issues == []
    assert {n.type for n in flow.nodes} >= {"embedder.local", "llm.ollama"}
    assert report.local_swaps and report.credentials == []


@pytest.mark.slow
@pytest.mark.skipif(not VWO_CSV.is_file(), reason=f"{VWO_CSV} is missing")
@pytest.mark.parametrize(("name", "chunks"), [(IMPROVED, 481), (NAIVE, 501)])
def test_imported_course_flow_chunks_the_vwo_csv(name: str, chunks: int, tmp_path: Path) -> None:
    from flowbuilder.executor import Executor

    flow, _ = import_file(CORPUS / name, local=True)
    flow.node("File-XydKH").config["path"] = str(VWO_CSV)
    result = Executor(resolver=no_credentials(tmp_path)).run(flow, to="SplitText-4y721", use_cache=False)
    split = result.results["SplitText-4y721"]
    assert split.status == "ok", split.error
    assert len(split.outputs["chunks"]) == chunks
    if name == NAIVE:
        header = VWO_CSV.read_text(encoding="utf-8-sig").splitlines()[0]
        assert split.outputs["chunks"][0].text == header
    else:
        assert split.outputs["chunks"][0].text.startswith("Scenario TID: ")


def test_cli_validate_names_the_unbound_slot_and_local_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("FLOWBUILDER_CREDENTIALS", str(tmp_path / "no-credentials.json"))
    remote, local = tmp_path / "remote.json", tmp_path / "local.json"
    assert main(["import", str(CORPUS / NAIVE), "-o", str(remote)]) == 0
    assert main(["import", str(CORPUS / NAIVE), "-o", str(local), "--local"]) == 0
    capsys.readouterr()
    assert main(["validate", str(remote)]) == 1
    out = capsys.readouterr().out
    assert "missing-credential" in out and "'api_key'" in out and "OpenAIModel-d1qd3" in out
    assert main(["validate", str(local)]) == 0
