"""Control-flow and utility nodes of real exports: routing, loops, alternative triggers, code, webhooks,
LangFlow agents, knowledge bases, structured output and the conversions the source tools do implicitly."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from flowbuilder.executor import Executor
from flowbuilder.flow import Edge
from flowbuilder.formats.code_summary import summarize_code
from flowbuilder.formats.convert import convert_data, export_flow, import_file, structure_problems
from flowbuilder.formats.mapping import find_key_shaped
from flowbuilder.graph import analyze
from flowbuilder.outputs import is_hits
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

FIXTURES = Path(__file__).parent / "fixtures"
CONTROL = FIXTURES / "n8n" / "control_flow_rag.json"
AGENTS = FIXTURES / "langflow" / "agent_knowledge_structured.json"
PRE10_AGENT = FIXTURES / "langflow" / "pre10_vector_store_agent.json"
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "VWO_500_Test_Cases.csv"


def no_credentials(tmp_path: Path) -> CredentialResolver:
    return CredentialResolver({}, store=CredentialStore(tmp_path / "none.json"), environ={})


def small_csv(tmp_path: Path, rows: int = 6) -> Path:
    target = tmp_path / "cases.csv"
    with SAMPLE.open(encoding="utf-8-sig", newline="") as fin, target.open("w", encoding="utf-8", newline="") as fout:
        writer = csv.writer(fout)
        for i, row in enumerate(csv.reader(fin)):
            if i > rows:
                break
            writer.writerow(row)
    return target


def test_n8n_routing_nodes_are_absorbed_with_what_was_not_evaluated() -> None:
    flow, report = import_file(CONTROL)
    types = {n.id: n.type for n in flow.nodes}
    assert not {"edit-fields", "if", "split-out", "loop-over-items"} & set(types)
    notes = {o.source_name: o.note for o in report.nodes}
    assert notes["If"].startswith("absorbed: If: the condition is not evaluated")
    assert notes["Edit Fields"].endswith("static: channel='web'")  # the literal field is kept
    assert any(e.parameter.endswith("[0].value") and "$json.body.question" in e.expression for e in report.expressions)
    edges = {e.key for e in flow.edges}
    # the webhook is the served flow's entry and Respond to Webhook its answer, through the absorbed nodes
    assert types["webhook"] == "chat.input" and types["respond-to-webhook"] == "chat.output"
    assert "webhook.message->ai-agent.message" in edges
    assert "ai-agent.answer->respond-to-webhook.message" in edges
    assert any("POST /webhook/ask-handbook" in w for w in report.warnings)


def test_n8n_split_in_batches_loop_is_folded_into_one_pass_and_the_flow_exports() -> None:
    flow, report = import_file(CONTROL)
    folded = [w for w in report.warnings if "loop folded into one pass" in w]
    assert folded and "'Supabase Insert'" in folded[0]
    assert "'Supabase Insert' -main-> 'Loop Over Items': closed a loop (see the warning)" in report.connections_dropped
    assert structure_problems(flow) == []
    data, _ = export_flow(flow, "n8n")  # no cycle: the exporter takes it
    assert {n["name"] for n in data["nodes"]} >= {"Supabase Insert", "AI Agent"}


def test_n8n_other_loops_are_reported_with_their_nodes_and_the_rest_imports() -> None:
    node: Any = {"typeVersion": 1, "position": [0, 0], "parameters": {}}
    data = {
        "name": "retry loop",
        "nodes": [
            {**node, "name": "Start", "type": "n8n-nodes-base.manualTrigger"},
            {**node, "name": "Fix", "type": "n8n-nodes-base.code", "typeVersion": 2, "parameters": {"jsCode": "x"}},
            {**node, "name": "Check", "type": "n8n-nodes-base.if", "typeVersion": 2},
            {**node, "name": "Loader", "type": "n8n-nodes-base.extractFromFile"},
        ],
        "connections": {
            "Start": {"main": [[{"node": "Fix", "type": "main", "index": 0}]]},
            "Fix": {"main": [[{"node": "Check", "type": "main", "index": 0}]]},
            "Check": {"main": [[{"node": "Loader", "type": "main", "index": 0}], [{"node": "Fix", "type": "main"}]]},
        },
    }
    flow, report = convert_data(data, "n8n", "<retry>")
    loop = [w for w in report.warnings if "a loop through" in w]
    assert loop and "'Check'" in loop[0] and "runs once here" in loop[0]
    assert structure_problems(flow) == []
    assert {n.type for n in flow.nodes} >= {"input.file", "loader.file", "placeholder.unsupported"}


def test_code_nodes_are_summarised_never_run_and_skipped_off_the_path(tmp_path: Path) -> None:
    flow, report = import_file(CONTROL, local=True, resolver=no_credentials(tmp_path))
    note = next(o.note for o in report.nodes if o.source_name == "Log Question")
    assert note.startswith("code, never run here (JavaScript, 2 lines: reads every item; transforms each item)")
    graph = analyze(flow, resolver=no_credentials(tmp_path))
    assert graph.issues == []  # the code node feeds nothing: the run goes around it
    assert [w.node_id for w in graph.warnings] == ["log-question"]
    assert "feeds no other node, so runs skip it" in graph.warnings[0].message


def test_summaries_read_the_text_only() -> None:
    js = "const out = [];\nfor (const i of $input.all()) { out.push(i.json.text.replace(/\\s+/g, ' ')); }\n"
    js += "return { context: out.join('\\n') };"
    assert summarize_code(js) == (
        "JavaScript, 3 lines: reads every item; joins text; cleans or rewrites text; returns {context}"
    )
    assert summarize_code("import requests\nrequests.get(url)", "Python").startswith("Python, 2 lines: calls a web API")
    assert summarize_code("") == "no code"


def test_two_triggers_into_one_loader_are_alternatives_and_the_run_uses_the_one_given(tmp_path: Path) -> None:
    resolver = no_credentials(tmp_path)
    flow, _ = import_file(CONTROL, local=True, resolver=resolver)
    into_path = [e.source for e in flow.edges if e.target == "default-data-loader" and e.target_port == "path"]
    assert into_path == ["on-form-submission", "google-drive-trigger"]
    graph = analyze(flow, resolver=resolver)
    assert any("2 alternatives (on-form-submission.path, google-drive-trigger.path)" in n for n in graph.notes)
    sample = small_csv(tmp_path)
    executor = Executor(resolver=resolver, data_dir=tmp_path / "data")
    run = executor.run(flow, inputs={"google-drive-trigger": str(sample)}, to="supabase-insert", use_cache=False)
    assert run.ok, {r.node_id: r.error for r in run.failed()}
    assert run.results["on-form-submission"].status == "unused"
    assert "alternative to 'google-drive-trigger'" in run.results["on-form-submission"].summary
    assert run.results["default-data-loader"].outputs["records"]  # the Drive file's rows were read
    # no input at all: the first alternative runs and says what it needs (nothing silently empty)
    run = executor.run(flow, to="supabase-insert", use_cache=False)
    assert run.results["google-drive-trigger"].status == "unused"
    assert run.results["on-form-submission"].status == "failed"


def test_langflow_agent_gets_its_built_in_model_and_structured_output_extracts_fields(tmp_path: Path) -> None:
    flow, report = import_file(AGENTS)
    agent = flow.node("Agent-g1")
    assert agent.type == "agent.tools" and agent.config == {"system_message": "Use the tools.", "max_steps": 8}
    model = flow.node("Agent-g1-model")
    assert model.type == "llm.openai" and model.config == {"model": "gpt-4o-mini"}
    assert "Agent-g1-model.model->Agent-g1.model" in {e.key for e in flow.edges}
    structured = flow.node("StructuredOutput-s1")
    assert structured.type == "extract.fields" and structured.config["fields"] == {"keywords": ""}
    assert structured.config["instructions"] == "Extract search keywords"
    assert {"OpenAIModel-k1.model->StructuredOutput-s1.model", "OpenAIModel-k1.answer->StructuredOutput-s1.text"} <= {
        e.key for e in flow.edges
    }
    assert any("looked up by name in the text" in w for w in report.warnings)
    assert flow.node("TextInput-t1").type == "chat.input" and flow.node("TextInput-t1").config == {
        "text": "password reset"
    }
    local, _ = import_file(AGENTS, local=True, resolver=no_credentials(tmp_path))
    assert local.node("Agent-g1-model").type == "llm.ollama"
    assert analyze(local, resolver=no_credentials(tmp_path)).issues == []


def test_hits_and_records_into_text_ports_get_the_parser_the_source_tool_implied(tmp_path: Path) -> None:
    flow, report = import_file(AGENTS, local=True, resolver=no_credentials(tmp_path))
    edges = {e.key for e in flow.edges}
    assert flow.node("KnowledgeBase-b1").type == "vectorstore.chroma"
    assert flow.node("KnowledgeBase-b1").config["collection"] == "qa_kb"  # the knowledge base's name
    assert flow.node("KnowledgeBase-b1-as-text").type == "parser.stringify"
    assert {
        "KnowledgeBase-b1.hits->KnowledgeBase-b1-as-text.items",
        "KnowledgeBase-b1-as-text.text->ChatOutput-o2.message",
    } <= edges
    assert "ParserComponent-p1-as-text.text->AstraDB-a1.query" in edges  # rows into a search query
    assert any("ChatOutput-o2: takes answer but KnowledgeBase-b1.hits gives hits" in w for w in report.warnings)
    # AstraDB embedded on its server: --local gives the swapped stores one offline embedder
    assert {
        "local-embedder.embedder->AstraDB-a1.embedder",
        "local-embedder.embedder->KnowledgeBase-b1.embedder",
    } <= edges


def test_langflow_knowledge_run_offline_retrieves_what_the_flow_ingested(tmp_path: Path) -> None:
    resolver = no_credentials(tmp_path)
    flow, _ = import_file(AGENTS, local=True, resolver=resolver)
    cases = small_csv(tmp_path)
    flow.node("File-f1").config["path"] = str(cases)
    # its query comes from an LLM's keywords (no model offline): ask with the chat input instead
    flow.edges = [e for e in flow.edges if e.target != "AstraDB-a1" or e.target_port != "query"]
    flow.edges.append(Edge(source="ChatInput-q1", source_port="message", target="AstraDB-a1", target_port="query"))
    executor = Executor(resolver=resolver, data_dir=tmp_path / "data")
    run = executor.run(flow, inputs="locked account", to="AstraDB-a1", use_cache=False, base_dir=tmp_path)
    hits = run.results["AstraDB-a1"].outputs.get("hits")
    assert is_hits(hits), run.results["AstraDB-a1"].error
    with cases.open(encoding="utf-8", newline="") as handle:
        ingested = {row["Scenario TID"] for row in csv.DictReader(handle)}
    found = [h.document.metadata["record_id"] for h in hits]
    # the store's k (4) distinct rows of the file the flow loaded, each hit the text of its own row
    assert len(found) == 4 and len(set(found)) == 4 and set(found) <= ingested, (found, ingested)
    assert all(h.document.text.startswith(h.document.metadata["record_id"] + ",") for h in hits)


def test_pre10_vector_store_agent_maps_the_store_info_to_a_search_tool(tmp_path: Path) -> None:
    flow, report = import_file(PRE10_AGENT, local=True, resolver=no_credentials(tmp_path))
    tool = flow.node("VectorStoreInfo-i1")
    assert tool.type == "retriever.tool" and tool.config == {
        "name": "Staff_handbook",
        "description": "Policies for staff",
    }
    edges = {e.key for e in flow.edges}
    assert {"Chroma-v1.store->VectorStoreInfo-i1.store", "VectorStoreInfo-i1.tool->VectorStoreAgent-a1.tools"} <= edges
    assert "ChatOpenAI-c1.model->VectorStoreAgent-a1.model" in edges
    assert report.unsupported_count == 0
    assert analyze(flow, resolver=no_credentials(tmp_path)).issues == []


def test_langflow_directory_becomes_a_folder_loader_with_the_folder_name_only() -> None:
    template = {"path": {"value": "/Users/someone/Documents/testcases"}, "recursive": {"value": True}}
    node = {"id": "Directory-d1", "data": {"type": "Directory", "node": {"template": template}}}
    flow, report = convert_data({"name": "x", "data": {"nodes": [node], "edges": []}}, "langflow", "<dir>")
    assert flow.node("Directory-d1").type == "loader.file"
    assert flow.node("Directory-d1").config == {"path": "testcases", "mode": "records"}
    assert any("subfolders are not read" in w and "/Users/someone" in w for w in report.warnings)


def test_served_n8n_flow_writes_its_mcp_server_trigger_back() -> None:
    flow, _ = import_file(FIXTURES / "n8n" / "mcp_server_trigger.json")
    assert flow.meta["mcp"]["n8n_trigger"]["path"] == "handbook-mcp"
    data, warnings = export_flow(flow, "n8n")
    trigger = [n for n in data["nodes"] if n["type"] == "@n8n/n8n-nodes-langchain.mcpTrigger"]
    assert len(trigger) == 1 and trigger[0]["parameters"] == {"path": "handbook-mcp"}
    links = [link for out in data["connections"].values() for group in out.get("ai_tool", []) for link in group]
    into = [link for link in links if link["node"] == trigger[0]["name"]]
    assert len(into) == 2
    assert any(w.startswith("serving: written as n8n's MCP Server Trigger") for w in warnings)


def test_n8n_file_trigger_becomes_the_langflow_file_upload_not_a_lost_connection() -> None:
    flow, _ = import_file(CONTROL)
    data, warnings = export_flow(flow, "langflow", lossy=False)  # nothing left out: no refusal
    types = [n["data"]["type"] for n in data["data"]["nodes"]]
    assert "File" in types
    names = {n["data"]["node"]["display_name"] for n in data["data"]["nodes"]}
    assert not {"On form submission", "Google Drive Trigger"} & names  # folded into the File upload
    assert not any("left out" in w and ".path->" in w for w in warnings)
    assert any("is the upload of File node(s)" in w for w in warnings)


def test_a_field_named_after_a_secret_that_holds_its_own_name_is_not_a_secret() -> None:
    mapping = {"model": [{"metadata": {"param_mapping": {"api_key": "api_key", "model": "model_name"}}}]}
    assert list(find_key_shaped(mapping)) == []
    assert list(find_key_shaped({"id": "AstraVectorStoreComponent-0WT85"})) == []
    assert [v for _, v in find_key_shaped({"api_key": "sk-FAKEplaintext0123456789abcdefABCDEF"})]


def test_row_labeller_exports_to_n8n_as_the_data_loader_with_the_exact_template_reported() -> None:
    flow, _ = import_file(Path(__file__).parent / "corpus" / "langflow__AI_3X_Naive_RAG_Imporve_Chunk.json")
    assert any(n.type == "labeller.row" for n in flow.nodes)
    data, warnings = export_flow(flow, "n8n", lossy=False)  # nothing is left out any more
    line = next(w for w in warnings if "row labeller exported as n8n's data loader" in w)
    assert 'Scenario TID: {{ $json["Scenario TID"] }}' in line and "JSON mode" in line
    types = {n["name"]: n["type"] for n in data["nodes"]}
    splitter_links = [
        (source, link["node"])
        for source, out in data["connections"].items()
        for group in out.get("ai_textSplitter", [])
        for link in group
    ]
    assert splitter_links and all(types[target].endswith("documentDefaultDataLoader") for _, target in splitter_links)


def test_a_store_filled_elsewhere_gets_an_ingest_branch_so_the_first_offline_run_has_hits(tmp_path: Path) -> None:
    resolver = no_credentials(tmp_path)
    flow, report = import_file(AGENTS, local=True, resolver=resolver)
    added = ["KnowledgeBase-b1-file", "KnowledgeBase-b1-loader", "KnowledgeBase-b1-splitter"]
    assert [flow.node(n).type for n in added] == ["input.file", "loader.file", "splitter.recursive"]
    assert "KnowledgeBase-b1-splitter.chunks->KnowledgeBase-b1.documents" in {e.key for e in flow.edges}
    assert any(
        i.node == "KnowledgeBase-b1" and "the source filled it elsewhere" in i.detail for i in report.local_swaps
    )
    assert flow.find_node("AstraDB-a1-file") is None  # that store is written by the flow itself
    executor = Executor(resolver=resolver, data_dir=tmp_path / "data")
    inputs = {"KnowledgeBase-b1-file": str(small_csv(tmp_path))}
    run = executor.run(flow, inputs=inputs, to="KnowledgeBase-b1", use_cache=False, base_dir=tmp_path)
    assert is_hits(run.results["KnowledgeBase-b1"].outputs.get("hits")), run.results["KnowledgeBase-b1"].error


def test_webhook_and_respond_to_webhook_are_written_back_to_n8n() -> None:
    flow, _ = import_file(CONTROL)
    data, _ = export_flow(flow, "n8n")
    types = {n["name"]: (n["type"], n["parameters"]) for n in data["nodes"]}
    assert types["Webhook"][0] == "n8n-nodes-base.webhook" and types["Webhook"][1]["path"] == "ask-handbook"
    assert types["Respond to Webhook"][0] == "n8n-nodes-base.respondToWebhook"
    again, _ = convert_data(data, "n8n", "<again>")
    assert {"webhook.message->ai-agent.message", "ai-agent.answer->respond-to-webhook.message"} <= {
        e.key for e in again.edges
    }


def test_an_n8n_import_is_the_same_file_in_every_process(tmp_path: Path) -> None:
    """Absorbed Edit Fields and routing nodes are bridged in the file's order: the saved connections must not
    depend on the process's string hashing (they did: seeds 1 and 3 wrote different files)."""
    written = []
    for seed in ("1", "3"):
        out = tmp_path / f"seed{seed}.json"
        subprocess.run(
            [sys.executable, "-m", "flowbuilder", "import", str(CONTROL), "-o", str(out)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
            capture_output=True,
        )
        written.append(out.read_text())
    assert written[0] == written[1]
