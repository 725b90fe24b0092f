"""Native flow JSON: byte-stable, versioned, migrated, and clear about bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.errors import FlowFileError, UnsupportedFormatError
from flowbuilder.examples import flows_dir
from flowbuilder.formats.native import dump_flow, load_flow, save_flow

EXAMPLES = sorted(flows_dir().glob("*.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_load_then_save_is_byte_stable(path: Path, tmp_path: Path) -> None:
    flow = load_flow(path)
    out = tmp_path / "copy.json"
    save_flow(flow, out)
    assert out.read_bytes() == path.read_bytes()


def test_examples_exist() -> None:
    assert {p.name for p in EXAMPLES} >= {
        "naive_csv_rag.json",
        "row_labelled_csv_rag.json",
        "pdf_rag.json",
        "agent_rag.json",
    }


def test_layout_is_kept_apart_from_logic() -> None:
    data = json.loads(dump_flow(load_flow(flows_dir() / "naive_csv_rag.json")))
    assert data["format"] == "flowbuilder" and data["version"] == 1
    assert all("position" not in n for n in data["nodes"])
    assert set(data["layout"]["positions"]) >= {n["id"] for n in data["nodes"]}


def test_version_0_is_migrated(tmp_path: Path) -> None:
    old = {
        "format": "flowbuilder",
        "version": 0,
        "name": "old",
        "nodes": {"a": {"type": "util.passthrough", "position": [10, 20]}, "b": {"type": "util.passthrough"}},
        "edges": [{"source": "a.value", "target": "b.value"}],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    flow = load_flow(path)
    assert flow.version == 1 and [n.id for n in flow.nodes] == ["a", "b"]
    assert flow.edges[0].source_port == "value" and flow.position("a").x == 10


def write(tmp_path: Path, text: str, name: str = "f.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"format": "flowbuilder", "version": 2}', "newer than this Flowbuilder reads"),
        ('{"format": "flowbuilder", "version": "x"}', 'no integer "version"'),
        ('{"format": "flowbuilder", "version": 1, "nodes": [{"type": "x"}]}', "nodes.0.id"),
        ('{"format": "flowbuilder", "version": 1, "nodes"', "is not valid JSON (line 1"),
        ('{"something": "else"}', "is not a Flowbuilder flow"),
        ("[1, 2]", "is not a Flowbuilder flow"),
    ],
)
def test_bad_files_get_one_clear_message_naming_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(FlowFileError) as info:
        load_flow(path)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_n8n_file_points_to_import(tmp_path: Path) -> None:
    path = write(tmp_path, '{"nodes": [], "connections": {}}')
    with pytest.raises(UnsupportedFormatError, match="flowbuilder import"):
        load_flow(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FlowFileError, match="no such file"):
        load_flow(tmp_path / "missing.json")


def test_failed_save_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "flow.json"
    flow = load_flow(flows_dir() / "pdf_rag.json")
    save_flow(flow, path)
    before = path.read_bytes()
    flow.meta["bad"] = "x\ud800y"  # a lone surrogate: the JSON text is made, writing it as UTF-8 fails midway
    with pytest.raises(UnicodeEncodeError):
        save_flow(flow, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["flow.json"]  # no half-written temporary file left
