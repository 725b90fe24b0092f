"""loader.file with a folder: every supported file directly inside, in name order; the fingerprint
follows edits to any of them; an empty folder is a clear error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig


def test_folder_loads_each_supported_file(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# B\n\nbee", encoding="utf-8")
    (tmp_path / "a.md").write_text("# A\n\nay", encoding="utf-8")
    (tmp_path / "notes.bin").write_bytes(b"\x00")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.md").write_text("nested", encoding="utf-8")
    ctx = RunContext("load", base_dir=tmp_path)
    records = FileLoader(FileLoaderConfig(path=".")).run({}, ctx)["records"]
    assert [(r.metadata["record_id"], r.text) for r in records] == [("a.md", "# A\n\nay"), ("b.md", "# B\n\nbee")]
    assert ctx.details["files"] == 2


def test_folder_fingerprint_follows_any_file(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("one", encoding="utf-8")
    (tmp_path / "b.md").write_text("two", encoding="utf-8")
    config = FileLoaderConfig(path=str(tmp_path))
    first = FileLoader.fingerprint(config, None, None, {})
    page.write_text("one more", encoding="utf-8")
    os.utime(page, ns=(page.stat().st_atime_ns, page.stat().st_mtime_ns + 1_000_000))
    assert FileLoader.fingerprint(config, None, None, {}) != first


def test_empty_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NodeError, match="no supported files"):
        FileLoader(FileLoaderConfig(path=str(tmp_path))).run({}, RunContext("load"))


HANDBOOK = Path(__file__).resolve().parents[2] / "data" / "qa-handbook"


def _copy(names: list[str], target: Path) -> None:
    for name in names:
        (target / name).write_bytes((HANDBOOK / name).read_bytes())


def test_mixed_folder_loads_every_file_and_ends_ok() -> None:
    ctx = RunContext("load", base_dir=HANDBOOK.parent)
    node = FileLoader(FileLoaderConfig(path="qa-handbook"))
    records = node.run({}, ctx)["records"]
    assert sorted(ctx.details["file_records"]) == sorted(p.name for p in HANDBOOK.iterdir())
    assert ctx.details["files"] == 10 and ctx.details["skipped"] == [] and ctx.warning == ""
    assert node.summarize({"records": records}) == f"{len(records)} records from 10 files"
    assert {r.metadata["folder"] for r in records} == {HANDBOOK.resolve().as_posix()}
    assert all(r.text.strip() for r in records)


def test_unreadable_files_are_listed_as_skipped_and_the_rest_load(tmp_path: Path) -> None:
    _copy(["bug-triage.docx", "on-call.txt", "environments.html"], tmp_path)
    (tmp_path / "broken.docx").write_bytes((HANDBOOK / "test-strategy.docx").read_bytes()[:4000])
    (tmp_path / "blank.pptx").write_bytes(b"")
    (tmp_path / "diagram.vsdx").write_bytes(b"PK\x03\x04")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x01")
    (tmp_path / "~$bug-triage.docx").write_bytes(b"lock")
    ctx = RunContext("load", base_dir=tmp_path)
    node = FileLoader(FileLoaderConfig(path="."))
    records = node.run({}, ctx)["records"]
    assert {r.metadata["source"] for r in records} == {"bug-triage.docx", "on-call.txt", "environments.html"}
    skipped = {item["file"]: item["reason"] for item in ctx.details["skipped"]}
    assert set(skipped) == {"broken.docx", "blank.pptx", "diagram.vsdx"}  # hidden and lock files are not documents
    assert skipped["broken.docx"].startswith("broken.docx: not a readable Word document")
    assert skipped["blank.pptx"] == "blank.pptx: the file is empty (0 bytes)."
    assert skipped["diagram.vsdx"] == "diagram.vsdx: unsupported file type '.vsdx'"
    assert ctx.warning.startswith("3 of 6 files skipped: diagram.vsdx: unsupported file type '.vsdx'; ")
    assert "broken.docx: not a readable Word document" in ctx.warning and "supported: .csv" in ctx.warning
    assert node.summarize({"records": records}) == f"{len(records)} records from 3 files, 3 skipped"


def test_a_folder_where_nothing_can_be_read_fails_naming_the_files(tmp_path: Path) -> None:
    (tmp_path / "a.docx").write_bytes(b"not a zip")
    (tmp_path / "b.png").write_bytes(b"\x89PNG")
    with pytest.raises(NodeError, match=r"none of the 2 files could be read: b\.png: unsupported.*a\.docx: not a"):
        FileLoader(FileLoaderConfig(path=str(tmp_path))).run({}, RunContext("load"))
    (tmp_path / "a.docx").unlink()
    with pytest.raises(NodeError, match=r"no supported files \(b\.png\); supported: .*\.docx"):
        FileLoader(FileLoaderConfig(path=str(tmp_path))).run({}, RunContext("load"))


def test_include_exclude_and_recursive(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "drafts").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ["top.md", "guides/setup.md", "guides/setup.TXT", "guides/drafts/wip.md", ".git/HEAD.md"]:
        (tmp_path / name).write_text(f"text of {name}", encoding="utf-8")

    def sources(**config: object) -> list[str]:
        records = FileLoader(FileLoaderConfig(path=str(tmp_path), **config)).run({}, RunContext("load"))["records"]
        return [r.metadata["source"] for r in records]

    assert sources() == ["top.md"]
    assert sources(recursive=True) == ["guides/drafts/wip.md", "guides/setup.TXT", "guides/setup.md", "top.md"]
    assert sources(recursive=True, include=["*.md"]) == ["guides/drafts/wip.md", "guides/setup.md", "top.md"]
    assert sources(recursive=True, exclude=["guides/drafts/*", "*.txt"]) == ["guides/setup.md", "top.md"]
    assert sources(recursive=True, include=["guides/*"], exclude=["*/drafts/*"]) == [
        "guides/setup.TXT",
        "guides/setup.md",
    ]
    records = FileLoader(FileLoaderConfig(path=str(tmp_path), recursive=True)).run({}, RunContext("load"))["records"]
    assert records[0].record_id == "guides/drafts/wip.md"


def test_streamed_folder_gives_the_records_a_run_gives(tmp_path: Path) -> None:
    _copy(["onboarding.pptx", "performance-testing.odt", "on-call.txt"], tmp_path)
    (tmp_path / "broken.epub").write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    config = FileLoaderConfig(path=str(tmp_path))
    ran = FileLoader(config).run({}, RunContext("load"))["records"]
    ctx = RunContext("load")
    node = FileLoader(config)
    streamed = [record for batch in node.iter_batches({}, ctx) for record in batch]
    assert streamed == ran
    assert ctx.details["files"] == 3 and [s["file"] for s in ctx.details["skipped"]] == ["broken.epub"]
    assert "1 of 4 files skipped: broken.epub" in ctx.warning
    assert node.summarize({"records": streamed}) == f"{len(ran)} records from 3 files, 1 skipped"


def test_whole_mode_over_a_folder(tmp_path: Path) -> None:
    _copy(["onboarding.pptx", "on-call.txt"], tmp_path)
    ctx = RunContext("load")
    documents = FileLoader(FileLoaderConfig(path=str(tmp_path), mode="whole")).run({}, ctx)["records"]
    assert [d.metadata["source"] for d in documents] == ["on-call.txt", "onboarding.pptx"]
    assert len(documents[1].metadata["record_spans"]) == 6
