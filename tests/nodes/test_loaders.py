"""The file loader on the real VWO CSV and PRD PDF, and on small files written by each test."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from flowbuilder.errors import NodeError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig, dedupe_headers

ROOT = Path(__file__).resolve().parents[2]
CSV_PATH = ROOT / "data" / "VWO_500_Test_Cases.csv"
PDF_PATH = ROOT / "data" / "VWO_Login_Dashboard_PRD.pdf"


def load(path: Path | str, **config: object) -> list:
    node = FileLoader(FileLoaderConfig(path=str(path), **config))
    return node.run({}, RunContext("loader"))["records"]


def test_vwo_csv_one_record_per_row() -> None:
    records = load(CSV_PATH)
    raw = CSV_PATH.read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(raw)))
    assert len(records) == len(rows) - 1 == 500
    first = records[0]
    assert first.metadata["source"] == "VWO_500_Test_Cases.csv"
    assert first.metadata["row"] == 1
    assert first.metadata["record_id"] == "LOGIN-001"
    assert first.text == raw.split("\n")[1]
    columns = first.metadata["columns"]
    assert list(columns)[:1] == ["Scenario TID"]  # BOM stripped from the first header
    assert "Expected Result" in columns and "Expected Result.1" in columns
    assert columns["TestCase Description"] == rows[1][1]
    assert columns["Expected Result.1"] == rows[1][7]
    assert records[-1].metadata["row"] == 500
    assert len({r.record_id for r in records}) == 500
    assert "start" not in first.metadata
    node = FileLoader(FileLoaderConfig(path=str(CSV_PATH)))
    assert node.summarize({"records": records}) == "500 records"


def test_vwo_csv_whole_mode_spans_point_at_each_row() -> None:
    (document,) = load(CSV_PATH, mode="whole")
    raw = CSV_PATH.read_text(encoding="utf-8-sig")
    assert document.text == raw
    assert not document.text.startswith("\ufeff")
    spans = document.metadata["record_spans"]
    lines = raw.split("\n")
    assert len(spans) == 500
    assert spans[0] == ["LOGIN-001", len(lines[0]) + 1, len(lines[0]) + 1 + len(lines[1])]
    for (record_id, start, end), line in zip(spans, lines[1:], strict=False):
        assert document.text[start:end] == line
        assert line.startswith(f'"{record_id}"')
    node = FileLoader(FileLoaderConfig(path=str(CSV_PATH), mode="whole"))
    assert node.summarize({"records": [document]}) == "1 document (500 records)"


def test_duplicate_and_blank_headers_follow_pandas() -> None:
    assert dedupe_headers(["A", "B", "A", "A"]) == ["A", "B", "A.1", "A.2"]
    # pandas renames the second "A" to "A.1", finds that taken and moves on to "A.1.1"
    assert dedupe_headers(["A", "A.1", "A"]) == ["A", "A.1", "A.1.1"]
    assert dedupe_headers(["x", "", "y", ""]) == ["x", "Unnamed: 1", "y", "Unnamed: 3"]


def test_bom_quoted_newlines_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    content = 'id,Note,Note\r\nA-1,"line one\r\nline two",x\r\n\r\nA-2,"say ""hi""",y\r\n'
    path.write_bytes(b"\xef\xbb\xbf" + content.encode("utf-8"))
    records = load(path)
    assert [r.record_id for r in records] == ["A-1", "A-2"]
    assert [r.metadata["row"] for r in records] == [1, 2]
    assert records[0].metadata["columns"] == {"id": "A-1", "Note": "line one\r\nline two", "Note.1": "x"}
    assert records[0].text == 'A-1,"line one\r\nline two",x'
    assert records[1].metadata["columns"]["Note"] == 'say "hi"'
    (whole,) = load(path, mode="whole")
    assert whole.text == content
    for (record_id, start, end), record in zip(whole.metadata["record_spans"], records, strict=True):
        assert record_id == record.record_id
        assert whole.text[start:end] == record.text


def test_id_column_and_fallback_ids(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text("name,code\nAnn,C1\n,C2\nAnn,C3\n", encoding="utf-8")
    assert [r.record_id for r in load(path)] == ["Ann", "people.csv#row2", "Ann#row3"]
    assert [r.record_id for r in load(path, id_column="code")] == ["C1", "C2", "C3"]
    with pytest.raises(NodeError, match=r"id_column 'nope'.*columns: name, code"):
        load(path, id_column="nope")


def test_tsv_and_semicolon_delimiters(tmp_path: Path) -> None:
    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\tb\n1\t2\n", encoding="utf-8")
    assert load(tsv)[0].metadata["columns"] == {"a": "1", "b": "2"}
    semi = tmp_path / "s.csv"
    semi.write_text("a;b\n1;2\n", encoding="utf-8")
    assert load(semi, delimiter=";")[0].metadata["columns"] == {"a": "1", "b": "2"}


def test_row_with_too_many_fields_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,2\n1,2,3\n", encoding="utf-8")
    with pytest.raises(NodeError, match=r"bad.csv: data row 2 \(line 3\) has 3 fields but the header has 2"):
        load(path)


def test_cp1252_file_loads_in_auto_encoding(tmp_path: Path) -> None:
    path = tmp_path / "legacy.csv"
    path.write_bytes("id,text\n1,caf\xe9 \x93quoted\x94\n".encode("latin-1"))
    assert load(path)[0].metadata["columns"]["text"] == "café “quoted”"
    with pytest.raises(NodeError, match="not valid utf-8"):
        load(path, encoding="utf-8")


def test_json_list_of_objects(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    items = [{"id": "J-1", "title": "First", "tags": ["a", "b"]}, {"id": "J-2", "title": "Second", "n": 3}]
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    records = load(path)
    assert [r.record_id for r in records] == ["J-1", "J-2"]
    assert records[0].metadata["columns"] == {"id": "J-1", "title": "First", "tags": '["a", "b"]'}
    assert json.loads(records[1].text) == items[1]
    assert records[1].metadata["row"] == 2
    (whole,) = load(path, mode="whole")
    assert [json.loads(whole.text[s:e]) for _, s, e in whole.metadata["record_spans"]] == items


def test_other_json_is_one_text_record(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"a": 1}', encoding="utf-8")
    (record,) = load(path)
    assert record.text == '{"a": 1}' and record.record_id == "config.json"
    broken = tmp_path / "broken.json"
    broken.write_text('[{"a": 1},', encoding="utf-8")
    with pytest.raises(NodeError, match=r"broken.json: invalid JSON at line 1"):
        load(broken)


def test_pdf_one_record_per_page() -> None:
    records = load(PDF_PATH)
    pages = PdfReader(str(PDF_PATH)).pages
    assert len(records) == len(pages) > 1
    assert [r.metadata["page"] for r in records] == list(range(1, len(pages) + 1))
    assert records[0].record_id == "VWO_Login_Dashboard_PRD.pdf#page1"
    assert records[0].text.startswith("Product Requirements Document: VWO\nLogin Dashboard")  # layout text
    assert load(PDF_PATH, pdf_text="plain")[0].text == pages[0].extract_text()  # pypdf's plain text on request
    assert "row" not in records[0].metadata
    (whole,) = load(PDF_PATH, mode="whole")
    for (record_id, start, end), record in zip(whole.metadata["record_spans"], records, strict=True):
        assert record_id == record.record_id and whole.text[start:end] == record.text


def test_text_and_markdown_are_one_record(tmp_path: Path) -> None:
    for name in ("notes.txt", "guide.md"):
        path = tmp_path / name
        path.write_text("\ufeff# Title\n\nBody\n", encoding="utf-8")
        (record,) = load(path)
        assert record.text == "# Title\n\nBody\n"
        assert record.metadata == {"source": name, "record_id": name}


def test_missing_file_names_it_and_lists_supported_types(tmp_path: Path) -> None:
    with pytest.raises(NodeError, match=r"nothere\.csv: no such file.*\.csv, \.tsv, \.json, \.pdf"):
        load(tmp_path / "nothere.csv")


def test_unsupported_extension(tmp_path: Path) -> None:
    path = tmp_path / "drawing.vsdx"
    path.write_bytes(b"PK")
    with pytest.raises(NodeError, match=r"drawing\.vsdx: unsupported file type '\.vsdx'; supported: \.csv.*\.docx"):
        load(path)


def test_no_path_says_how_to_give_one() -> None:
    with pytest.raises(NodeError, match=r"--input loader=PATH"):
        FileLoader(FileLoaderConfig()).run({}, RunContext("loader"))


def test_encrypted_and_broken_pdfs(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as handle:
        writer.write(handle)
    with pytest.raises(NodeError, match=r"locked\.pdf: the PDF is encrypted"):
        load(locked)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"this is not a pdf at all")
    with pytest.raises(NodeError, match=r"broken\.pdf: not a readable PDF"):
        load(broken)


def test_fingerprint_follows_edits(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_text("a\n1\n", encoding="utf-8")
    config = FileLoaderConfig(path="f.csv")
    first = FileLoader.fingerprint(config, tmp_path, None, {})
    assert first is not None and str(path.resolve()) in first
    other = tmp_path / "g.csv"
    other.write_text("b\n2\n", encoding="utf-8")
    from_port = FileLoader.fingerprint(config, tmp_path, None, {"path": str(other)})
    from_run_input = FileLoader.fingerprint(config, tmp_path, str(other), {})
    assert from_port == from_run_input and from_port is not None and str(other.resolve()) in from_port
    path.write_text("a\n1\n2\n", encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert FileLoader.fingerprint(config, tmp_path, None, {}) != first


def _loader_flow(path: str) -> Flow:
    return Flow(
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": path}),
            NodeSpec(id="split", type="splitter.record"),
        ],
        edges=[Edge(source="load", source_port="records", target="split", target_port="documents")],
    )


def test_executor_relative_path_run_input_and_cache_invalidation(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_text("id,v\nA,1\n", encoding="utf-8")
    executor = Executor()
    result = executor.run(_loader_flow("f.csv"), base_dir=tmp_path)
    assert result.ok and result.results["load"].summary == "1 records"
    path.write_text("id,v\nA,1\nB,2\n", encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    again = executor.run(_loader_flow("f.csv"), base_dir=tmp_path)
    assert again.results["load"].status == "ok" and again.results["load"].summary == "2 records"
    # a run input replaces the configured path
    swapped = executor.run(_loader_flow("f.csv"), base_dir=tmp_path, inputs={"load": str(CSV_PATH)})
    assert swapped.results["load"].summary == "500 records"
    assert swapped.results["split"].summary == "500 chunks"


def test_executor_reports_a_missing_file_without_traceback(tmp_path: Path) -> None:
    result = Executor().run(_loader_flow("missing.csv"), base_dir=tmp_path)
    failed = result.results["load"]
    assert failed.status == "failed"
    assert failed.error is not None and "missing.csv: no such file" in failed.error
    assert "Traceback" not in failed.error
    assert result.results["split"].status == "skipped"
