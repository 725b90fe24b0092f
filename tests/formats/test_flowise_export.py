"""Export to Flowise, checked against what Flowise's own code requires of a saved chatflow.

Flowise has no JSON schema for chatflows. What it requires is in its code (FlowiseAI/Flowise, read at the commit
recorded in ``flowbuilder/formats/flowise_nodes.json``), and :func:`chatflow_problems` checks each rule:

- ``packages/ui/src/utils/genericHelper.js`` ``initNode``: a node's ``data`` carries its definition's name, version,
  type, category and baseClasses; each input whose type is a field type is an ``inputParam`` and any other an
  ``inputAnchor`` (id ``<nodeId>-input-<name>-<type>``, the credential first among the params); ``inputs`` has a key
  per input; the outputs are ``outputAnchors`` (one ``<nodeId>-output-<name>-<baseClasses joined by |>``, or an
  ``options`` anchor whose chosen option is ``outputs.output``). The definitions themselves (names, types,
  versions, baseClasses) are the recorded facts, which the exporter writes from; they are checked apart against
  saved chatflows (:func:`test_the_recorded_facts_agree_with_saved_chatflows`).
- ``isValidConnection``: an edge's target type (the handle's last ``-`` part) is one of its source's types, and a
  non-list anchor takes one edge (the type rule for the links the exporter makes; a kept node's own links are as
  its file had them).
- ``packages/server/src/utils/index.ts`` ``resolveVariables`` / ``getVariableValue``: Flowise's runner takes a
  connection from the target's ``inputs[anchor]`` (``{{<source>.data.instance}}``, a list for a list anchor), not
  from the edge: each edge has its reference and each reference its edge.
- ``getEndingNodes``: a node nothing reads is a Chain, an Agent or an Engine.
- ``packages/server/src/services/validation/index.ts`` ``validateFlowData``: every node is connected; every
  required field (not optional, shown by its show/hide rules) has a value; a required credential is chosen (the
  one thing an export never carries: listed apart, not a problem).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.adapters import our_defaults
from flowbuilder.formats.convert import LossyExportError, convert_data, export_flow, import_file
from flowbuilder.formats.flowise_export import FIELD_TYPES, facts
from flowbuilder.formats.mapping import PLACEHOLDER
from flowbuilder.formats.native import load_flow, save_flow

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures" / "flowise"
CORPUS = Path(__file__).parent / "corpus_public"
FLOWISE_FILES = sorted(FIXTURES.glob("*.json")) + sorted(CORPUS.glob("flowise__*.json"))
DEMO_FLOWS = [ROOT / "flows" / f for f in ("pdf_rag.json", "naive_csv_rag.json", "row_labelled_csv_rag.json",
                                          "langflow_improved_csv_rag.json", "agent_rag.json")]  # fmt: skip
ENDING = ("Chains", "Agents", "Engine", "Multi Agents", "Sequential Agents")
_REF = re.compile(r"^\{\{([^{}.]+)\.data\.instance\}\}$")


def _types(handle: str) -> list[str]:
    return [t.strip() for t in handle.split("-")[-1].split("|")]


def _shown(param: dict[str, Any], inputs: dict[str, Any]) -> bool:
    """validateFlowData's show/hide test: a field whose show rule fails (or hide rule holds) is not checked."""
    for key, value in (param.get("show") or {}).items():
        if inputs.get(key) != value:
            return False
    hide = param.get("hide") or {}
    return not (hide and all(inputs.get(k) == v for k, v in hide.items()))


def _expected(name: str, node_id: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(inputParams, inputAnchors) as (name, type, id) from the recorded definition, as initNode lays them out."""
    node = facts()[name]
    params = [("credential", "credential", f"{node_id}-input-credential-credential")] if node.get("credential") else []
    anchors = []
    for item in node["inputs"]:
        row = (item["name"], item["type"], f"{node_id}-input-{item['name']}-{item['type']}")
        (params if item["type"] in FIELD_TYPES else anchors).append(row)
    return params, anchors


def _outputs(data: dict[str, Any]) -> dict[str, str]:
    """Output handle id -> output name, for the output Flowise will give (the chosen option)."""
    found: dict[str, str] = {}
    for anchor in data.get("outputAnchors") or []:
        if anchor.get("type") == "options":
            chosen = (data.get("outputs") or {}).get("output")
            found.update({o["id"]: o["name"] for o in anchor.get("options") or [] if o.get("name") == chosen})
        else:
            found[anchor["id"]] = anchor["name"]
    return found


def chatflow_problems(chatflow: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What Flowise would refuse or break on in a chatflow (see the module docstring), and the nodes that need a
    credential chosen in Flowise."""
    problems: list[str] = []
    credentials: list[str] = []
    nodes = {n["id"]: n for n in chatflow["nodes"]}
    edges = chatflow["edges"]
    for node_id, node in nodes.items():
        data = node["data"]
        name = data.get("name")
        if data.get("id") != node_id:
            problems.append(f"{node_id}: data.id is {data.get('id')!r}")
        known = facts().get(name)
        if known is None:
            continue  # a kept Flowise node written back as it was imported (its handles are checked below)
        for key in ("version", "type", "category", "baseClasses"):
            if data.get(key) != known[key]:
                problems.append(f"{node_id}: {key} {data.get(key)!r}, Flowise's {name} has {known[key]!r}")
        params, anchors = _expected(name, node_id)
        if [(p["name"], p["type"], p["id"]) for p in data["inputParams"]] != params:
            problems.append(f"{node_id}: inputParams are not {name}'s fields")
        if [(a["name"], a["type"], a["id"]) for a in data["inputAnchors"]] != anchors:
            problems.append(f"{node_id}: inputAnchors are not {name}'s connections")
        missing = {i["name"] for i in known["inputs"]} - set(data["inputs"])
        if missing:
            problems.append(f"{node_id}: inputs lack {sorted(missing)}")
        if known.get("outputs"):
            (anchor,) = data["outputAnchors"]
            expected = [f"{node_id}-output-{o['name']}-{'|'.join(o['baseClasses'])}" for o in known["outputs"]]
            if anchor["type"] != "options" or [o["id"] for o in anchor["options"]] != expected:
                problems.append(f"{node_id}: output options are not {name}'s outputs")
            if data["outputs"].get("output") not in {o["name"] for o in known["outputs"]}:
                problems.append(f"{node_id}: outputs.output {data['outputs'].get('output')!r} is no output of {name}")
        elif name != "stickyNote" or data["outputAnchors"]:
            (anchor,) = data["outputAnchors"]
            if anchor["id"] != f"{node_id}-output-{name}-{'|'.join(known['baseClasses'])}":
                problems.append(f"{node_id}: output anchor id {anchor['id']!r}")
        for param in data["inputParams"]:  # validateFlowData
            value = data["inputs"].get(param["name"])
            if param.get("optional") or not _shown(param, data["inputs"]) or value not in (None, ""):
                continue
            if param["type"] == "credential":
                credentials.append(node_id)
            else:
                problems.append(f"{node_id}: {param['name']} is required")
    linked: dict[tuple[str, str], list[str]] = {}
    for edge in edges:
        source, target = nodes.get(edge["source"]), nodes.get(edge["target"])
        if source is None or target is None:
            problems.append(f"edge {edge['id']}: a missing node")
            continue
        if edge["sourceHandle"] not in _outputs(source["data"]):
            problems.append(f"edge {edge['id']}: {edge['sourceHandle']!r} is not an output {source['id']} gives")
        inputs = target["data"]["inputAnchors"] + target["data"]["inputParams"]  # a field may take a variable
        anchor = next((a for a in inputs if a["id"] == edge["targetHandle"]), None)
        if anchor is None:
            problems.append(f"edge {edge['id']}: {edge['targetHandle']!r} is no input of {target['id']}")
            continue
        described = source["data"].get("name") in facts() and target["data"].get("name") in facts()
        if described and not set(_types(edge["targetHandle"])) & set(_types(edge["sourceHandle"])):
            problems.append(f"edge {edge['id']}: {source['id']} gives no {anchor['type']}")
        linked.setdefault((target["id"], anchor["name"]), []).append(source["id"])
        if len(linked[(target["id"], anchor["name"])]) > 1 and not anchor.get("list"):
            problems.append(f"{target['id']}.{anchor['name']} takes one connection")
        value = target["data"]["inputs"].get(anchor["name"])
        reference = f"{{{{{source['id']}.data.instance}}}}"
        if (anchor.get("list") and reference not in (value or [])) or (not anchor.get("list") and value != reference):
            problems.append(f"{target['id']}.inputs.{anchor['name']} does not name {source['id']} ({value!r})")
    for node_id, node in nodes.items():  # every reference has its edge
        for key, value in node["data"].get("inputs", {}).items():
            for item in value if isinstance(value, list) else [value]:
                found = _REF.match(item) if isinstance(item, str) else None
                if found and found.group(1) not in linked.get((node_id, key), []):
                    problems.append(f"{node_id}.inputs.{key} names {found.group(1)} with no edge")
    connected = {e["source"] for e in edges} | {e["target"] for e in edges}
    for node_id, node in nodes.items():
        if node["data"].get("name") != "stickyNote" and node_id not in connected:
            problems.append(f"{node_id}: not connected to anything")
    sources, targets = {e["source"] for e in edges}, {e["target"] for e in edges}
    endings = [nodes[i] for i in targets - sources]
    for node in endings:
        if (
            node["data"].get("category") not in ENDING
            and (node["data"].get("outputs") or {}).get("output") != "EndingNode"
        ):
            problems.append(f"{node['id']}: an ending node must be a Chain, an Agent or an Engine")
    if not endings and len(nodes) > 1:
        problems.append("no ending node")
    return problems, credentials


def _effective(flow: Flow) -> tuple[dict[str, tuple[str, str]], set[str]]:
    nodes = {}
    for node in flow.nodes:
        config = {**our_defaults(node.type), **node.config}
        if node.type == PLACEHOLDER:  # a kept node: its Flowise data, not where it sat on the canvas, and its
            data = dict((config.get("original") or {}).get("data") or {})  # links as edges, not as references
            data["inputs"] = {k: v for k, v in (data.get("inputs") or {}).items() if v != "" and not _is_reference(v)}
            config["original"] = data
        nodes[node.id] = (node.type, json.dumps(config, sort_keys=True, default=str))
    return nodes, {e.key for e in flow.edges}


def _is_reference(value: Any) -> bool:
    values = value if isinstance(value, list) else [value]
    return bool(values) and all(isinstance(v, str) and _REF.match(v) for v in values)


def _is_agentflow(path: Path) -> bool:
    return "agentflow" in path.name or '"agentFlow"' in path.read_text(encoding="utf-8")


_MULTI_AGENT = re.compile(r'"category": ?"(Multi Agents|Sequential Agents)"')


def _is_multi_agent(path: Path) -> bool:
    """Flowise's multi-agent canvas (Agentflow v1 supervisor/workers, Sequential Agents): exported as a chatflow."""
    return bool(_MULTI_AGENT.search(path.read_text(encoding="utf-8")))


# -- the facts ---------------------------------------------------------------------------------------------
def test_every_flowise_node_the_exporter_writes_is_recorded() -> None:
    from flowbuilder.formats.flowise_table import FLOWISE_TABLE
    from flowbuilder.registry import default_registry

    written = set()
    for cls in default_registry():
        entry = FLOWISE_TABLE.exporter(cls.type_name)
        if entry is not None and not entry.extra.get("fold") and entry.hook != "loader":
            written.add(entry.theirs)
    written |= {"conversationalRetrievalQAChain", "llmChain", "conversationChain", "promptTemplate", "stickyNote",
                "bufferWindowMemory", "csvFile", "pdfFile", "fileLoader"}  # fmt: skip
    assert written <= set(facts()), sorted(written - set(facts()))
    for name, node in facts().items():
        assert node["source"].startswith("packages/components/nodes/") and node["source"].endswith(".ts"), name
        assert node["baseClasses"] and node["baseClasses_from"], name
        assert all(i["name"] and i["type"] for i in node["inputs"]), name


def test_the_recorded_facts_agree_with_saved_chatflows() -> None:
    """Where a saved chatflow (a public one in the corpus) has a node at the recorded version, its anchors,
    fields and (unless derived) baseClasses are the recorded ones: the facts are checked against Flowise's own
    output, not only against the .ts files they were read from."""
    compared = 0
    for path in FLOWISE_FILES:
        raw = json.loads(path.read_text(encoding="utf-8"))
        graph = json.loads(raw["flowData"]) if isinstance(raw.get("flowData"), str) else raw
        for node in graph.get("nodes", []):
            data = node.get("data") or {}
            known = facts().get(data.get("name"))
            if known is None or data.get("version") != known["version"] or not data.get("inputParams"):
                continue  # another version, or a node written by hand (no description)
            params, anchors = _expected(data["name"], node["id"])
            # Flowise adds an input now and then without a new version: a saved node of the recorded version has
            # a subset of the recorded anchors, each with the recorded type. Fields come and go without a new
            # version too (chatOpenAI 8.3 saved by an older Flowise has proxyUrl and imageResolution, which
            # 3.1.3 no longer has): a field both have has the recorded type
            assert {(a["name"], a["type"]) for a in data["inputAnchors"]} <= {(n, t) for n, t, _ in anchors}, path
            recorded = {n: t for n, t, _ in params}
            saved = {p["name"]: p["type"] for p in data["inputParams"] if p["name"] in recorded}
            assert saved == {n: recorded[n] for n in saved}, path
            assert len(saved) >= len(data["inputParams"]) / 2, path  # mostly the same fields: the same node
            if known["baseClasses_from"] == "literal":  # the rest follow the LangChain release
                assert data["baseClasses"] == known["baseClasses"], (path.name, data["name"])
            compared += 1
    assert compared >= 3, f"only {compared} saved nodes at a recorded version: the facts went unchecked"


# -- exports -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", DEMO_FLOWS, ids=lambda p: p.name)
def test_the_demo_flows_export_whole_and_pass_flowises_checks(path: Path) -> None:
    data, warnings = export_flow(load_flow(path), "flowise", lossy=False)
    problems, credentials = chatflow_problems(data)
    assert problems == []
    assert credentials == []  # all local: Ollama's chat and embeddings need no key
    names = {n["data"]["name"] for n in data["nodes"]}
    assert {"chatOllama", "ollamaEmbedding", "chroma"} <= names
    assert names & {"conversationalRetrievalQAChain", "toolAgent"}
    text = json.dumps(data)
    assert "FILE-STORAGE::" in text and "base64" not in text  # the file is named, never included
    assert any("upload it in Flowise" in w for w in warnings)


def test_a_rag_flow_becomes_loader_splitter_store_and_qa_chain() -> None:
    flow = load_flow(ROOT / "flows" / "pdf_rag.json")
    data, _ = export_flow(flow, "flowise", lossy=False)
    nodes = {n["data"]["name"]: n["data"] for n in data["nodes"]}
    assert nodes["pdfFile"]["inputs"]["textSplitter"] == "{{recursiveCharacterTextSplitter_0.data.instance}}"
    assert nodes["chroma"]["inputs"]["document"] == ["{{pdfFile_0.data.instance}}"]
    assert nodes["chroma"]["outputs"] == {"output": "retriever"}
    retriever = flow.node("retriever").config.get("k", 4)
    assert nodes["chroma"]["inputs"]["topK"] == retriever  # the retriever's k is the store's Top K
    chain = nodes["conversationalRetrievalQAChain"]
    assert "{context}" in chain["inputs"]["responsePrompt"] and "{question}" in chain["inputs"]["responsePrompt"]
    assert "{chat_history}" in chain["inputs"]["rephrasePrompt"]
    splitter = flow.node("splitter").config
    assert nodes["recursiveCharacterTextSplitter"]["inputs"]["chunkSize"] == splitter["chunk_size"]


def _cloud_flow() -> Flow:
    """Cloud parts (OpenAI, Pinecone, Cohere rerank, Groq), a score threshold over another store, an LLM chain."""
    nodes = [
        NodeSpec(id="load", type="loader.file", config={"path": "manual.pdf"}),
        NodeSpec(id="split", type="splitter.recursive", config={"chunk_size": 500, "separators": ["\n\n", "\n"]}),
        NodeSpec(id="embed", type="embedder.openai", config={"model": "text-embedding-3-small"}),
        NodeSpec(id="store", type="vectorstore.pinecone", config={"index": "docs"}),
        NodeSpec(id="chat", type="chat.input"),
        NodeSpec(id="search", type="retriever.vector", config={"k": 8}),
        NodeSpec(id="rerank", type="reranker.cohere", config={"keep": 3}),
        NodeSpec(id="prompt", type="prompt.template"),
        NodeSpec(id="model", type="llm.openai", config={"model": "gpt-4o-mini", "temperature": 0.1}),
        NodeSpec(id="answer", type="chat.output"),
        NodeSpec(id="faq", type="vectorstore.chroma", config={"collection": "faq"}),
        NodeSpec(id="local_embed", type="embedder.local"),
        NodeSpec(id="close", type="retriever.vector", config={"k": 5, "min_score": 0.5}),
        NodeSpec(id="faq_prompt", type="prompt.template"),
        NodeSpec(id="faq_model", type="llm.ollama"),
        NodeSpec(id="faq_answer", type="chat.output"),
        NodeSpec(id="title_prompt", type="prompt.template", config={"template": "A title for: {question}"}),
        NodeSpec(id="title_model", type="llm.groq"),
        NodeSpec(id="title", type="chat.output"),
    ]
    wires = [("load", "records", "split", "documents"), ("split", "chunks", "store", "documents"),
             ("embed", "embedder", "store", "embedder"), ("store", "store", "search", "store"),
             ("chat", "message", "search", "query"), ("search", "hits", "rerank", "hits"),
             ("chat", "message", "rerank", "query"), ("rerank", "hits", "prompt", "context"),
             ("chat", "message", "prompt", "question"), ("prompt", "prompt", "model", "prompt"),
             ("model", "answer", "answer", "message"),
             ("load", "records", "faq", "documents"), ("local_embed", "embedder", "faq", "embedder"),
             ("faq", "store", "close", "store"), ("chat", "message", "close", "query"),
             ("close", "hits", "faq_prompt", "context"), ("chat", "message", "faq_prompt", "question"),
             ("faq_prompt", "prompt", "faq_model", "prompt"), ("faq_model", "answer", "faq_answer", "message"),
             ("chat", "message", "title_prompt", "question"),
             ("title_prompt", "prompt", "title_model", "prompt"),
             ("title_model", "answer", "title", "message")]  # fmt: skip
    edges = [Edge(source=a, source_port=b, target=c, target_port=d) for a, b, c, d in wires]
    return Flow(name="cloud", nodes=nodes, edges=edges)


def test_cloud_parts_retrievers_and_chains_pass_flowises_checks() -> None:
    data, warnings = export_flow(_cloud_flow(), "flowise", lossy=False)
    problems, credentials = chatflow_problems(data)
    assert problems == []
    nodes = {n["id"]: n["data"] for n in data["nodes"]}
    keyed = ("openAIEmbeddings", "pinecone", "cohereRerankRetriever", "chatOpenAI")  # Groq's key is optional there
    assert sorted(credentials) == sorted(i for i, d in nodes.items() if d["name"] in keyed)
    by_name = {d["name"]: d for d in nodes.values()}
    assert by_name["pinecone"]["outputs"] == {"output": "retriever"} and by_name["pinecone"]["inputs"]["topK"] == 8
    rerank = by_name["cohereRerankRetriever"]
    assert rerank["inputs"]["baseRetriever"] == "{{store.data.instance}}".replace("store", by_name["pinecone"]["id"])
    assert rerank["inputs"]["topK"] == 3
    threshold = by_name["similarityThresholdRetriever"]
    assert threshold["inputs"]["minSimilarityScore"] == 50 and threshold["inputs"]["maxK"] == 5
    assert by_name["chroma"]["outputs"] == {"output": "vectorStore"}  # the threshold retriever takes the store
    chains = [d for d in nodes.values() if d["name"] == "conversationalRetrievalQAChain"]
    assert sorted(c["inputs"]["vectorStoreRetriever"] for c in chains) == sorted(
        f"{{{{{d['id']}.data.instance}}}}" for d in (rerank, threshold)
    )
    assert by_name["llmChain"]["inputs"]["prompt"] == f"{{{{{by_name['promptTemplate']['id']}.data.instance}}}}"
    assert by_name["recursiveCharacterTextSplitter"]["inputs"]["separators"] == '["\\n\\n", "\\n"]'
    assert any("credentials are never exported" in w for w in warnings)


def test_what_flowise_cannot_connect_is_left_out_and_said() -> None:
    """A score-threshold retriever under a Cohere reranker: Flowise's reranker takes a vector store retriever
    only (its type), so the link is left out, and the export refused without --lossy."""
    flow = _cloud_flow()
    flow.node("search").config["min_score"] = 0.3
    with pytest.raises(LossyExportError, match="does not connect"):
        export_flow(flow, "flowise", lossy=False)


def test_a_model_asked_directly_is_a_conversation_chain_with_a_memory() -> None:
    flow = Flow(
        name="chat",
        nodes=[
            NodeSpec(id="q", type="chat.input"),
            NodeSpec(id="m", type="llm.ollama"),
            NodeSpec(id="a", type="chat.output"),
        ],
        edges=[
            Edge(source="q", source_port="message", target="m", target_port="prompt"),
            Edge(source="m", source_port="answer", target="a", target_port="message"),
        ],
    )
    data, warnings = export_flow(flow, "flowise", lossy=False)
    assert chatflow_problems(data) == ([], [])
    assert {n["data"]["name"] for n in data["nodes"]} == {"chatOllama", "conversationChain", "bufferWindowMemory"}
    assert any("needs a memory" in w for w in warnings)


@pytest.mark.parametrize(
    "path", [p for p in FLOWISE_FILES if not _is_agentflow(p) and not _is_multi_agent(p)], ids=lambda p: p.name
)
def test_a_flowise_file_round_trips_and_passes_flowises_checks(path: Path) -> None:
    """Import, export, import again: the same nodes (type and settings, defaults filled), the same connections,
    and the export passes the checks above (kept nodes written back as they were imported)."""
    flow, report = import_file(path)
    data, _ = export_flow(flow, "flowise", lossy=True)
    again, _ = convert_data(json.loads(json.dumps(data)), "flowise", f"{path.name} (again)")
    assert _effective(again) == _effective(flow)
    problems, _ = chatflow_problems(data)
    if report.connections_dropped:  # what the import could not carry (a chain's output into a field) is gone
        problems = [p for p in problems if "ending node" not in p and "not connected" not in p]
    assert [p for p in problems if p not in _empty_in(path)] == []


@pytest.mark.parametrize("path", [p for p in FLOWISE_FILES if _is_multi_agent(p)], ids=lambda p: p.name)
def test_a_multi_agent_flowise_file_exports_as_a_chatflow_flowise_accepts(path: Path) -> None:
    """A multi-agent file (supervisor/workers, Sequential Agents) is exported as a chatflow: a different Flowise
    canvas, so not the same nodes again (the supervisor becomes a tool agent, which Flowise gives a memory), but
    a chatflow that passes Flowise's checks, except what the file itself leaves empty or unconnected."""
    flow, report = import_file(path)
    data, _ = export_flow(flow, "flowise", lossy=True)
    assert data["nodes"]
    problems, _ = chatflow_problems(data)
    dropped = re.findall(r"([\w-]+)\.[\w-]+->([\w-]+)\.", " ".join(report.connections_dropped))
    unconnected = {f"{node}: not connected to anything" for pair in dropped for node in pair}
    assert [p for p in problems if p not in _empty_in(path) and p not in unconnected] == []


def _empty_in(path: Path) -> set[str]:
    """The "<node>: <field> is required" lines for each required field the file itself leaves empty (a template's
    file, a user's index name): the export keeps those empty too, and Flowise would say the same of the original."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    graph = json.loads(raw["flowData"]) if isinstance(raw.get("flowData"), str) else raw
    empty = set()
    for node in graph["nodes"]:
        inputs = node["data"].get("inputs") or {}
        for item in facts().get(node["data"].get("name"), {}).get("inputs", []):
            if not item.get("optional") and inputs.get(item["name"]) in (None, "", []):
                empty.add(f"{node['id']}: {item['name']} is required")
    return empty


def test_an_export_that_would_lose_nodes_is_refused_unless_lossy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    native = tmp_path / "hybrid.json"
    save_flow(load_flow(ROOT / "flows" / "hybrid_csv_rag.json"), native)
    out = tmp_path / "hybrid.flowise.json"
    assert main(["export", str(native), "--to", "flowise", "-o", str(out)]) != 0
    err = capsys.readouterr().err
    assert "retriever.keyword" in err and "--lossy" in err and not out.exists()
    assert main(["export", str(native), "--to", "flowise", "-o", str(out), "--lossy"]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["nodes"]
    ok = tmp_path / "pdf.flowise.json"
    assert main(["export", str(ROOT / "flows" / "pdf_rag.json"), "--to", "flowise", "-o", str(ok)]) == 0
    assert chatflow_problems(json.loads(ok.read_text(encoding="utf-8")))[0] == []


def test_no_secret_and_no_other_formats_node_reaches_a_flowise_export() -> None:
    flow = _cloud_flow()
    flow.node("model").config["base_url"] = "https://api.example.com/v1?key=sk-abcdefghijklmnopqrstuvwxyz123456"
    kept = NodeSpec(id="kept", type=PLACEHOLDER, config={"source_format": "n8n", "original_type": "x",
                                                         "original": {"type": "x"}, "input_names": [],
                                                         "output_names": []})  # fmt: skip
    flow.nodes.append(kept)
    data, warnings = export_flow(flow, "flowise", lossy=True)
    text = json.dumps(data)
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in text
    assert any("kept" in w and "left out" in w for w in warnings)


def test_validate_names_what_replaces_a_kept_node() -> None:
    """A kept node's validate problem names its replacement from the format's entry (no import circle: the
    importer writes it into the placeholder's config)."""
    from flowbuilder.graph import analyze
    from flowbuilder.trust.credentials import CredentialResolver

    flow, _ = import_file(CORPUS / "flowise__marketplace314_context_chat_engine.json")
    kept = [n for n in flow.nodes if n.config.get("original_type") == "chatOpenAI_LlamaIndex"]
    assert kept and all(n.config["replace"] == "llm.ollama (--local)" for n in kept)
    graph = analyze(flow, resolver=CredentialResolver())
    said = [str(i) for i in [*graph.issues, *graph.warnings] if i.node_id in {n.id for n in kept}]
    assert said and all("replace it with llm.ollama (--local), or disable it" in i for i in said), said
    assert not [i for i in graph.issues if i.code == "dangling-edge"]  # a kept model the chain asks is wired
