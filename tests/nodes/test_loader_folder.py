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
