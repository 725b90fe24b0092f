"""What `validate` and `run --to loader` say about a loader's files: unsupported types and empty folders before a
run, skipped files as a warning (never `ok`) after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.cli import main

HANDBOOK = Path(__file__).resolve().parents[2] / "data" / "qa-handbook"


def write_flow(folder: Path, path: str, **config: object) -> Path:
    flow = {
        "format": "flowbuilder",
        "version": 1,
        "name": "docs",
        "nodes": [{"id": "loader", "type": "loader.file", "config": {"path": path, **config}}],
        "edges": [],
    }
    target = folder / "flow.json"
    target.write_text(json.dumps(flow), encoding="utf-8")
    return target


def test_validate_reports_an_unsupported_file_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow = write_flow(tmp_path, "plan.pages")
    assert main(["validate", str(flow)]) == 1
    out = capsys.readouterr().out
    assert "[unsupported-file] node 'loader': path 'plan.pages': unsupported file type '.pages'" in out
    assert ".docx" in out and ".xlsx" in out and ".epub" in out
    assert main(["validate", str(write_flow(tmp_path, "cases.xlsx"))]) == 0  # a workbook is fine, even unwritten


def test_validate_reports_a_folder_with_nothing_to_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scans").mkdir()
    (tmp_path / "scans" / "page1.png").write_bytes(b"\x89PNG")
    assert main(["validate", str(write_flow(tmp_path, "scans"))]) == 1
    out = capsys.readouterr().out
    assert "path 'scans': the folder holds no supported file (page1.png); supported: .csv" in out
    (tmp_path / "scans" / "notes.md").write_text("# Notes", encoding="utf-8")
    assert main(["validate", str(write_flow(tmp_path, "scans"))]) == 0
    out = capsys.readouterr().out
    assert "note: node 'loader': path 'scans': 1 file(s) of an unsupported type will be skipped (page1.png)" in out
    assert main(["validate", str(write_flow(tmp_path, "scans", exclude=["*.png"]))]) == 0
    assert "will be skipped" not in capsys.readouterr().out


def test_run_to_loader_says_warning_and_names_the_corrupt_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    for name in ("bug-triage.docx", "onboarding.pptx", "test-data.html"):
        (folder / name).write_bytes((HANDBOOK / name).read_bytes())
    (folder / "roadmap.docx").write_bytes((HANDBOOK / "bug-triage.docx").read_bytes()[:5000])  # truncated
    flow = write_flow(tmp_path, "team")
    assert main(["run", str(flow), "--to", "loader"]) == 0  # the files that could be read are there
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("loader "))
    assert " warning " in row and " ok " not in row
    assert "records from 3 files, 1 skipped" in row
    assert "WARNING loader: 1 of 4 files skipped: roadmap.docx: not a readable Word document" in out
    assert main(["run", str(flow), "--to", "loader", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    loader = result["nodes"][0]
    assert loader["status"] == "warning" and "roadmap.docx" in loader["warning"]
    assert result["details"]["loader"]["skipped"][0]["file"] == "roadmap.docx"
    assert result["details"]["loader"]["file_records"]["onboarding.pptx"] == 6


def test_a_run_input_replaces_an_unsupported_config_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow = write_flow(tmp_path, "plan.pages")
    page = tmp_path / "plan.md"
    page.write_text("# Plan", encoding="utf-8")
    assert main(["run", str(flow), "--to", "loader", "--input", f"loader={page}"]) == 0
    assert "1 records" in capsys.readouterr().out


def test_compare_shows_files_read_and_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    for name in ("release-checklist.docx", "on-call.txt"):
        (folder / name).write_bytes((HANDBOOK / name).read_bytes())
    (folder / "notes.docx").write_bytes(b"not a document")
    flow = {
        "format": "flowbuilder",
        "version": 1,
        "name": "team",
        "nodes": [
            {"id": "loader", "type": "loader.file", "config": {"path": "team"}},
            {"id": "split", "type": "splitter.markdown", "config": {"chunk_size": 500, "chunk_overlap": 0}},
            {"id": "emb", "type": "embedder.local"},
            {"id": "store", "type": "vectorstore.chroma", "config": {"collection": "team", "persist_directory": "db"}},
        ],
        "edges": [
            {"source": "loader", "source_port": "records", "target": "split", "target_port": "documents"},
            {"source": "split", "source_port": "chunks", "target": "store", "target_port": "documents"},
            {"source": "emb", "source_port": "embedder", "target": "store", "target_port": "embedder"},
        ],
    }
    path = tmp_path / "team.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": "When does the code freeze start?", "fact": "14:00 on the Tuesday"}) + "\n"
    )
    assert main(["compare", str(path), str(path), "--questions", str(questions), "--quiet"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("files read / skipped"))
    assert row.split()[-6:] == ["2", "/", "1", "2", "/", "1"], row  # A and B: 2 files read, 1 skipped
    assert "warning (A): loader 'loader': 1 of 3 files skipped: notes.docx: not a readable Word document" in out
    assert main(["compare", str(path), str(path), "--questions", str(questions), "--quiet", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["flows"][0]["files"] == {"read": 2, "skipped": 1}
