"""loader.file on real documents: the QA handbook folder (written by pandoc and LibreOffice, data/qa-handbook), the
demo CSV as a workbook, and workbooks LibreOffice Calc saved (tests/nodes/fixtures/documents)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from flowbuilder.data import Document
from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig, load_file
from flowbuilder.nodes.splitters import MarkdownSplitter, MarkdownSplitterConfig

ROOT = Path(__file__).resolve().parents[2]
HANDBOOK = ROOT / "data" / "qa-handbook"
PAGES = ROOT / "data" / "qa-handbook-md"
FIXTURES = Path(__file__).parent / "fixtures" / "documents"


def load(path: Path, **config: object) -> list[Document]:
    return load_file(path, FileLoaderConfig(**config))  # type: ignore[arg-type]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@pytest.mark.parametrize(
    "name",
    [
        "test-strategy.docx",
        "bug-triage.docx",
        "release-checklist.docx",
        "environments.html",
        "test-data.html",
        "automation-guidelines.htm",
        "performance-testing.odt",
    ],
)
def test_text_documents_keep_every_word_headings_lists_and_tables(name: str) -> None:
    (record,) = load(HANDBOOK / name)
    page = (PAGES / f"{Path(name).stem}.md").read_text(encoding="utf-8")
    assert record.metadata == {"source": name, "record_id": name}
    assert words(record.text) == words(page), "every word of the page, in order, and nothing else"
    headings = re.findall(r"^(#+) (.+)$", page, re.M)
    assert re.findall(r"^(#+) (.+)$", record.text, re.M) == headings
    if "|---|" in page:  # a table stays a pipe table, one row per line, the header first
        header = next(line for line in page.splitlines() if line.startswith("| "))
        cells = [c.strip() for c in header.strip("|").split("|")]
        first = next(line for line in record.text.splitlines() if line.startswith("|"))
        assert [c.strip(" *") for c in first.strip("|").split("|")] == cells
        assert "| --- |" in record.text
    for item in re.findall(r"^- (.+)$", page, re.M):  # bullets stay bullets
        assert f"- {item.replace('**', '')}" in record.text.replace("**", "")


def test_slides_are_records_with_their_title_and_bullets() -> None:
    records = load(HANDBOOK / "onboarding.pptx")
    assert [r.metadata["slide"] for r in records] == list(range(1, 7))
    assert records[1].metadata == {
        "source": "onboarding.pptx",
        "slide": 2,
        "heading": "Your first day",
        "record_id": "onboarding.pptx#slide2",
    }
    assert records[1].text.startswith("# Your first day\n\n- Collect your laptop from the service desk")
    page = (PAGES / "onboarding.md").read_text(encoding="utf-8")
    assert words(" ".join(r.text for r in records)) == words(page)
    (whole,) = load(HANDBOOK / "onboarding.pptx", mode="whole")
    spans = whole.metadata["record_spans"]
    assert [s[0] for s in spans] == [r.metadata["record_id"] for r in records]
    assert all(whole.text[s:e] == r.text for (_, s, e), r in zip(spans, records, strict=True))


def test_epub_chapters_in_reading_order_with_headings() -> None:
    records = load(HANDBOOK / "accessibility.epub")
    headings = [r.metadata["heading"] for r in records]
    assert headings[-5:] == ["Keyboard", "Screen readers", "Colour and contrast", "Zoom and reflow", "When to test"]
    assert records[-3].metadata["record_id"] == "accessibility.epub#chapter" + str(records[-3].metadata["chapter"])
    page = (PAGES / "accessibility.md").read_text(encoding="utf-8")
    assert "At least 4.5 to 1".lower() in " ".join(r.text.lower() for r in records)
    body = [w for r in records for w in words(r.text)]
    assert all(w in body for w in words(page))


def test_markdown_splitter_sees_the_sections_of_a_word_document() -> None:
    records = load(HANDBOOK / "bug-triage.docx")
    chunks = MarkdownSplitter(MarkdownSplitterConfig(chunk_size=400, chunk_overlap=0)).run(
        {"documents": records}, RunContext("split")
    )["chunks"]
    paths = [c.metadata.get("heading_path") for c in chunks]
    assert "# Bug Triage Guide > ## Severity levels" in paths
    table_chunk = next(c for c in chunks if "| Blocker |" in c.text)
    assert "| Severity | Meaning | Example | Fix target |" in table_chunk.text  # the table is not cut from its header


def test_workbook_rows_are_the_csv_records() -> None:
    csv_records = load(ROOT / "data" / "VWO_500_Test_Cases.csv")
    sheet_records = load(ROOT / "data" / "VWO_500_Test_Cases.xlsx")
    assert len(sheet_records) == len(csv_records) == 500
    for from_csv, from_sheet in zip(csv_records, sheet_records, strict=True):
        expected = {**from_csv.metadata, "source": "VWO_500_Test_Cases.xlsx", "sheet": "Test cases"}
        assert from_sheet.metadata == expected
    summary = load(ROOT / "data" / "VWO_500_Test_Cases.xlsx", sheet="summary")  # case does not matter
    assert {r.metadata["sheet"] for r in summary} == {"Summary"}
    assert not any(r.metadata["columns"].get("Scenario TID") for r in summary)  # never mixed in
    with pytest.raises(NodeError, match=r"no sheet named 'Runs'; sheets: Test cases, Summary"):
        load(ROOT / "data" / "VWO_500_Test_Cases.xlsx", sheet="Runs")


@pytest.mark.parametrize("name", ["runs.xlsx", "runs.xls"])
def test_calc_workbook_cells_read_as_a_csv_export_would(name: str) -> None:
    records = load(FIXTURES / name)
    assert [r.metadata["row"] for r in records] == [1, 2, 3]  # the leading and the middle empty rows skipped
    first, second, third = (r.metadata["columns"] for r in records)
    assert first == {
        "Run": "R-1",
        "Date": "2027-03-01",
        "Passed": "40",
        "Failed": "2",
        "Total": "42",  # a formula: the value Calc saved
        "Green": "TRUE",
        "Note": "first run",
        "Note.1": "ok",  # a repeated header named as for CSV
    }
    assert second["Date"] == "2027-03-02 14:30:00" and second["Failed"] == "1.5" and second["Green"] == "FALSE"
    assert second["Unnamed: 8"] == "stray cell"  # a cell right of the header keeps pandas' name
    assert third["Date"] == "" and third["Passed"] == "0.25"
    assert records[0].text == "R-1,2027-03-01,40,2,42,TRUE,first run,ok"
    assert records[0].metadata["sheet"] == "Runs"
    notes = load(FIXTURES / name, sheet="Notes")
    assert [r.record_id for r in notes] == ["scope"]
    (whole,) = load(FIXTURES / name, mode="whole")
    assert whole.text.splitlines()[0] == "Run,Date,Passed,Failed,Total,Green,Note,Note.1"
    assert [whole.text[s:e] for _, s, e in whole.metadata["record_spans"]] == [r.text for r in records]


def test_loader_node_reads_a_workbook_by_sheet_and_id_column() -> None:
    node = FileLoader(FileLoaderConfig(path=str(FIXTURES / "runs.xlsx"), id_column="Note"))
    ctx = RunContext("load")
    records = node.run({}, ctx)["records"]
    assert [r.record_id for r in records] == ["first run", "flaky login", "runs.xlsx#row3"]
    assert node.summarize({"records": records}) == "3 records"


def test_an_html_page_without_h1_is_headed_by_its_title(tmp_path: Path) -> None:
    page = tmp_path / "wiki.html"
    page.write_bytes(
        b'<html><head><meta charset="windows-1252"><title>Release  notes</title><script>track()</script></head>'
        b"<body><nav>Home | Wiki</nav><p>Caf\xe9 menu &amp; <b>bold</b> text<br>next line</p>"
        b'<img src="data:image/png;base64,AAAA" alt="Login screen"><a href="#top">up</a>'
        b'<a href="https://example.test/x">the tracker</a></body></html>'
    )
    (record,) = load(page)
    assert record.text == (
        "# Release notes\n\nCafé menu & **bold** text\nnext line\n\nLogin screen up[the tracker](https://example.test/x)"
    )


def test_text_file_with_utf16_bom(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes("Überblick: läuft".encode("utf-16"))
    assert load(path)[0].text == "Überblick: läuft"


def test_big_text_file_is_read_in_parts_cut_at_paragraphs(tmp_path: Path) -> None:
    from flowbuilder.nodes.loaders import TEXT_PART_CHARS

    paragraphs = [f"Paragraph {i}: " + "word " * 60 for i in range(3000)]
    path = tmp_path / "log.md"
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")
    records = load(path)
    assert len(records) > 3
    assert [r.metadata["part"] for r in records] == list(range(1, len(records) + 1))
    assert records[1].record_id == "log.md#part2"
    assert all(len(r.text) <= TEXT_PART_CHARS for r in records)
    assert all(r.text.startswith("Paragraph") for r in records)  # cut at a paragraph break
    assert "".join(r.text for r in records) == path.read_text(encoding="utf-8")


def test_encrypted_office_and_odf_files_say_so(tmp_path: Path) -> None:
    locked = tmp_path / "plan.docx"
    locked.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)  # an encrypted OOXML is an OLE container
    with pytest.raises(NodeError, match=r"plan\.docx: this Word document is password-protected"):
        load(locked)
    odt = tmp_path / "minutes.odt"
    with zipfile.ZipFile(odt, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("META-INF/manifest.xml", '<manifest:encryption-data manifest:checksum="x"/>')
        archive.writestr("content.xml", b"\x8f\x02garbled")
    with pytest.raises(NodeError, match=r"minutes\.odt: the document is password-protected"):
        load(odt)
    book = tmp_path / "novel.epub"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/encryption.xml", "<encryption/>")
    with pytest.raises(NodeError, match=r"novel\.epub: the e-book is DRM-protected"):
        load(book)


def test_html_saved_as_xls_is_named_for_what_it_is(tmp_path: Path) -> None:
    fake = tmp_path / "export.xls"
    fake.write_text("<html><table><tr><td>1</td></tr></table></html>", encoding="utf-8")
    with pytest.raises(NodeError, match=r"export\.xls: not an Excel workbook \(it looks like a web page\)"):
        load(fake)


def test_the_demo_flow_over_the_workbook_embeds_the_same_texts_as_over_the_csv() -> None:
    """What the row-labelled demo embeds and searches is the labelled text: the same for both files, so retrieval
    is the same (`flowbuilder compare` on vwo500_paraphrased: hit@5 0.688 for both)."""
    import json

    from flowbuilder.nodes.labeller import RowLabeller, RowLabellerConfig

    flow = json.loads((ROOT / "flows" / "row_labelled_csv_rag.json").read_text(encoding="utf-8"))
    template = next(n for n in flow["nodes"] if n["id"] == "labeller")["config"]["template"]
    labeller = RowLabeller(RowLabellerConfig(template=template))

    def labelled(name: str) -> list[str]:
        records = load(ROOT / "data" / name)
        return [d.text for d in labeller.run({"records": records}, RunContext("label"))["records"]]

    assert labelled("VWO_500_Test_Cases.xlsx") == labelled("VWO_500_Test_Cases.csv")
