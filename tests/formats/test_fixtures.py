"""Every mapping fixture, found by glob: adding a mapping is one table entry plus one fixture here.

Each file in ``fixtures/n8n/`` and ``fixtures/langflow/`` is a small flow in that format that uses the
mapping it was added for. Without a test of its own, each one must:

- import with every node accounted for, and every foreign node whose entry maps it become that node;
- survive export to its own format: each node written as its entry's foreign type, and imported again
  with every node type (an n8n loader without a splitter gains n8n's built-in one) and no new placeholder;
- import with ``--local`` leaving no node that an entry says ``--local`` swaps, and no credential on a
  swapped node.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.formats.adapters import PLACEHOLDER, Table
from flowbuilder.formats.convert import convert_data, export_flow, import_file
from flowbuilder.formats.langflow_table import LANGFLOW_TABLE
from flowbuilder.formats.local import swap_of
from flowbuilder.formats.n8n_table import N8N_TABLE

FIXTURES = Path(__file__).parent / "fixtures"
TABLES: dict[str, Table] = {"n8n": N8N_TABLE, "langflow": LANGFLOW_TABLE}
FILES = sorted((fmt, path) for fmt in TABLES for path in (FIXTURES / fmt).glob("*.json"))
IDS = [f"{fmt}/{path.name}" for fmt, path in FILES]


def _foreign_nodes(fmt: str, data: dict[str, Any]) -> list[tuple[str, str]]:
    """(name or id, foreign type) of each node of the source file."""
    if fmt == "n8n":
        return [(n["name"], n["type"]) for n in data["nodes"]]
    return [(n["id"], n["data"]["type"]) for n in data["data"]["nodes"]]


def test_the_fixtures_are_found() -> None:
    assert {fmt for fmt, _ in FILES} == set(TABLES)
    assert any(path.name == "cohere_embeddings_rag.json" for _, path in FILES)


@pytest.mark.parametrize(("fmt", "path"), FILES, ids=IDS)
def test_a_fixture_imports_with_each_mapped_node_as_its_entry_says(fmt: str, path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    _flow, report = import_file(path)
    foreign = _foreign_nodes(fmt, data)
    assert len(report.nodes) == len(foreign)  # never a silent skip
    table = TABLES[fmt]
    for outcome in report.nodes:
        adapter = table.importer(outcome.source_type)
        if adapter is None or adapter.hook:  # hooks may make other types or keep a placeholder, by design
            continue
        made = {type_name for _, type_name in outcome.targets}
        assert adapter.ours in made, f"{outcome.source_name}: {outcome.source_type} became {made}, not {adapter.ours}"


@pytest.mark.parametrize(("fmt", "path"), FILES, ids=IDS)
def test_a_fixture_survives_export_to_its_own_format(fmt: str, path: Path) -> None:
    flow, _ = import_file(path)
    data, _warnings = export_flow(flow, fmt)
    text = json.dumps(data)
    for spec in flow.nodes:
        if TABLES[fmt].exporter(spec.type) is not None:  # written as one of its entries' foreign types
            theirs = {a.theirs for a in TABLES[fmt].adapters if a.ours == spec.type}
            assert any(json.dumps(t) in text for t in theirs), f"{spec.id} ({spec.type}) is not written as {theirs}"
    again, report = convert_data(json.loads(text), fmt, f"<{fmt}>")
    assert {n.type for n in flow.nodes} <= {n.type for n in again.nodes}
    assert report.unsupported_count == Counter(n.type for n in flow.nodes)[PLACEHOLDER]


@pytest.mark.parametrize(("fmt", "path"), FILES, ids=IDS)
def test_a_fixture_imported_with_local_keeps_no_remote_node(fmt: str, path: Path) -> None:
    before, _ = import_file(path)
    remote = {n.id for n in before.nodes if swap_of(n) is not None}
    flow, report = import_file(path, local=True)
    assert [n.id for n in flow.nodes if swap_of(n) is not None] == []
    assert {s.node for s in report.local_swaps if " -> " in s.detail} >= remote
    assert all(flow.node(node_id).credentials == {} for node_id in remote)
