"""Every mapping table entry names real things, and a default node survives export and import."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.adapters import Adapter, our_defaults, port_names
from flowbuilder.formats.convert import convert_data, export_flow
from flowbuilder.formats.langflow import LangflowImporter
from flowbuilder.formats.langflow_table import LANGFLOW_TABLE
from flowbuilder.formats.n8n import N8nImporter
from flowbuilder.formats.n8n_table import BASE, LC, N8N_TABLE
from flowbuilder.registry import default_registry

TABLES = {"n8n": N8N_TABLE, "langflow": LANGFLOW_TABLE}
ENTRIES = [(fmt, a) for fmt, table in TABLES.items() for a in table.adapters]
IDS = [f"{fmt}:{a.ours}<-{a.theirs.rsplit('.', 1)[-1]}" for fmt, a in ENTRIES]
N8N_CONNECTIONS = {
    "main", "ai_embedding", "ai_languageModel", "ai_document", "ai_textSplitter", "ai_tool", "ai_memory",
    "ai_reranker", "ai_vectorStore", "ai_retriever",
}  # fmt: skip
IMPORTERS = {"n8n": N8nImporter, "langflow": LangflowImporter}
# Parameters an import-only entry needs to map at all (an HTTP request must fetch a document).
IMPORT_PARAMS: dict[str, dict[str, Any]] = {
    BASE + "httpRequest": {"url": "https://example.com/handbook.pdf"},
    # an MCP Tools node that only names a server in LangFlow's settings stays a placeholder
    "MCPTools": {"mcp_server": {"value": {"name": "fetch", "config": {"command": "uvx", "args": ["x"]}}}},
}
# Export-only entries: what their foreign node reads back as.
EXPORTED_AS = {"embedder.local": "embedder.ollama"}
# Defaults a format has no form for: the export must say so instead of round-tripping.
LOSSY_DEFAULTS = {("langflow", "labeller.row"): "an empty template (label every column) has no LangFlow form"}


@pytest.mark.parametrize(("fmt", "adapter"), ENTRIES, ids=IDS)
def test_every_type_field_and_port_the_entry_names_exists(fmt: str, adapter: Adapter) -> None:
    registry = default_registry()
    assert adapter.ours in registry, f"{adapter.ours} is not a registered node type"
    fields = registry.get(adapter.ours).Config.model_fields
    for param in adapter.params:
        assert param.ours in fields, f"{adapter.ours} has no config field {param.ours!r}"
    ins, outs = port_names(adapter.ours, "in"), port_names(adapter.ours, "out")
    assert set(adapter.inputs) | set(adapter.in_aliases.values()) <= ins
    assert set(adapter.outputs) | set(adapter.out_aliases.values()) <= outs
    if adapter.hook:
        assert callable(adapter.hook) or hasattr(IMPORTERS[fmt], f"_hook_{adapter.hook}"), f"no hook {adapter.hook!r}"
    if fmt == "n8n":
        assert adapter.theirs.startswith((LC, BASE))
        assert set(adapter.inputs.values()) | set(adapter.outputs.values()) <= N8N_CONNECTIONS
        assert adapter.version in adapter.versions
    elif adapter.export:  # an import-only entry is never written, so it needs no export description
        shown = {o["name"] for o in adapter.extra.get("outputs", ())}
        assert set(adapter.outputs.values()) <= shown, "every output handle is described for export"


@pytest.mark.parametrize(("fmt", "adapter"), [e for e in ENTRIES if e[1].export], ids=lambda v: getattr(v, "ours", v))
def test_a_default_node_round_trips(fmt: str, adapter: Adapter) -> None:
    flow = Flow(name="one node", nodes=[NodeSpec(id="n", type=adapter.ours, name="Node")])
    data, warnings = export_flow(flow, fmt)
    if (fmt, adapter.ours) in LOSSY_DEFAULTS:
        assert any(LOSSY_DEFAULTS[fmt, adapter.ours] in w for w in warnings), warnings
        return
    again, report = convert_data(json.loads(json.dumps(data)), fmt, f"<{fmt}>")
    expected = EXPORTED_AS.get(adapter.ours, adapter.ours)
    found = [n for n in again.nodes if n.type == expected]
    assert found, f"{adapter.ours} came back as {[n.type for n in again.nodes]}"
    node = found[0]
    assert report.unsupported_count == 0
    if adapter.imports:
        defaults = our_defaults(adapter.ours)
        for param in adapter.params:
            if param.export:
                got = node.config.get(param.ours, defaults.get(param.ours))
                assert got == defaults.get(param.ours), f"{adapter.ours}.{param.ours}: {got!r}"


@pytest.mark.parametrize(
    ("fmt", "adapter"), [e for e in ENTRIES if not e[1].export], ids=lambda v: getattr(v, "theirs", v)
)
def test_an_import_only_entry_maps_its_foreign_node(fmt: str, adapter: Adapter) -> None:
    params = IMPORT_PARAMS.get(adapter.theirs, {})
    if fmt == "langflow":
        node: dict[str, Any] = {"id": "Source", "data": {"type": adapter.theirs, "node": {"template": params}}}
        data: dict[str, Any] = {"name": "x", "data": {"nodes": [node], "edges": []}}
    else:
        node = {
            "name": "Source",
            "type": adapter.theirs,
            "typeVersion": adapter.version,
            "position": [0, 0],
            "parameters": params,
        }
        data = {"name": "x", "nodes": [node], "connections": {}}
    flow, report = convert_data(data, fmt, f"<{fmt}>")
    if adapter.hook == "route":  # a reroute point is absorbed: its connections pass straight through
        assert not flow.nodes and report.nodes[0].note.startswith("absorbed: ")
        assert any(w.startswith("'Source': absorbed") for w in report.warnings), report.warnings
        return
    assert flow.nodes[0].type == adapter.ours
    if adapter.note:
        assert any(w.startswith(("'Source'", "Source:")) for w in report.warnings), report.warnings


def test_lists_node_types_without_a_mapping(capsys: pytest.CaptureFixture[str]) -> None:
    registry = set(default_registry().names()) - {"placeholder.unsupported"}
    core = {"chat.input", "loader.file", "splitter.recursive", "embedder.openai", "vectorstore.chroma", "llm.openai"}
    for fmt, table in TABLES.items():
        unmapped = sorted(registry - {a.ours for a in table.adapters if a.export})
        with capsys.disabled():  # shown in every run: the list is the point of this test
            print(f"\n{fmt}: no export mapping for {', '.join(unmapped) or 'nothing'}")
        assert not core & set(unmapped)  # the types every course RAG flow is made of are always mapped


def test_the_formats_agree_on_what_local_swaps_a_node_for() -> None:
    """``--local`` reads the swap from the entry that exports a type, in whichever table comes first."""
    swaps: dict[str, set[Any]] = {}
    for table in TABLES.values():
        for ours, adapter in table.by_ours.items():
            swaps.setdefault(ours, set()).add(adapter.local)
    both = {ours: found for ours, found in swaps.items() if all(ours in t.by_ours for t in TABLES.values())}
    assert {ours: found for ours, found in both.items() if len(found) > 1} == {}
    assert {swap.target for found in swaps.values() for swap in found if swap} <= set(default_registry().names())


@pytest.mark.parametrize(("fmt", "adapter"), [e for e in ENTRIES if e[1].kept], ids=lambda v: getattr(v, "theirs", v))
def test_a_kept_entry_stays_a_placeholder_that_names_its_replacement(fmt: str, adapter: Adapter) -> None:
    assert not (adapter.export or adapter.params or adapter.inputs or adapter.outputs)
    assert adapter.local or adapter.replace or adapter.hits or adapter.hook, "a kept entry says what the engines use"
    assert TABLES[fmt].importer(adapter.theirs) is None and TABLES[fmt].entry(adapter.theirs) is adapter
