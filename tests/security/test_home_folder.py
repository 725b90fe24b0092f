"""Home is not a flow's folder (issue 30): a flow saved directly in ~ or a downloads folder reads only the
workspace and approved folders, and validate says why; hidden entries are refused at any depth below ~."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from tests.security.cli_helpers import cli, loader_flow

PRIVATE = "id,text\nd1,my tax return\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "taxes.csv").write_text(PRIVATE, encoding="utf-8")
    (home / "Downloads").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.mark.parametrize("where", ["", "Downloads"])
def test_a_flow_saved_in_home_or_downloads_reads_nothing_there(home: Path, capsys, where: str) -> None:
    folder = home / where if where else home
    for path in ("Documents/taxes.csv", "../Documents/taxes.csv" if where else "./Documents/taxes.csv"):
        flow = loader_flow(folder, path)
        code, shown = cli(capsys, "validate", str(flow), "--no-credentials")
        assert code == 1 and "[untrusted-path]" in shown, shown
        reason = "your home folder" if not where else "a downloads folder"
        assert reason in shown and "not the flow's own folder" in shown
        code, ran = cli(capsys, "run", str(flow))
        assert code == 1 and "my tax return" not in ran
    # even a file right beside it
    (folder / "beside.csv").write_text(PRIVATE, encoding="utf-8")
    code, ran = cli(capsys, "run", str(loader_flow(folder, "beside.csv", "beside.json")))
    assert code == 1 and "my tax return" not in ran
    # approving the folder is the user's explicit choice
    code, ran = cli(capsys, "run", str(loader_flow(folder, "beside.csv", "beside.json")), "--allow-path", str(folder))
    assert code == 0 and "my tax return" in ran


def test_validate_says_why_even_when_the_flow_reads_no_file(home: Path, capsys) -> None:
    flow = home / "Downloads" / "empty.json"
    save_flow(Flow(name="x", nodes=[NodeSpec(id="q", type="chat.input")]), flow)
    code, shown = cli(capsys, "validate", str(flow), "--no-credentials")
    assert code == 0 and "note:" in shown and "a downloads folder" in shown


def test_a_flow_in_a_project_folder_still_reads_its_folder(home: Path, capsys) -> None:
    project = home / "projects" / "rag"
    project.mkdir(parents=True)
    (project / "data.csv").write_text(PRIVATE, encoding="utf-8")
    code, ran = cli(capsys, "run", str(loader_flow(project, "data.csv")))
    assert code == 0 and "my tax return" in ran


def test_the_xdg_downloads_folder_counts(home: Path, capsys) -> None:
    (home / ".config").mkdir()
    (home / ".config" / "user-dirs.dirs").write_text('XDG_DOWNLOAD_DIR="$HOME/Telechargements"\n', encoding="utf-8")
    (home / "Telechargements").mkdir()
    (home / "Telechargements" / "x.csv").write_text(PRIVATE, encoding="utf-8")
    code, shown = cli(capsys, "validate", str(loader_flow(home / "Telechargements", "x.csv")), "--no-credentials")
    assert code == 1 and "a downloads folder" in shown


@pytest.mark.parametrize("hidden", ["projects/.secret/notes.csv", "a/b/.git/config.csv", "projects/.env.csv"])
def test_hidden_entries_at_any_depth_below_home(home: Path, capsys, hidden: str) -> None:
    target = home / hidden
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(PRIVATE, encoding="utf-8")
    flow = loader_flow(home / "projects", str(target))
    code, shown = cli(capsys, "validate", str(flow), "--no-credentials", "--allow-path", str(home))
    assert code == 1 and "hidden" in shown and "not even with approval" in shown, shown
    code, ran = cli(capsys, "run", str(flow), "--allow-path", str(home))
    assert code == 1 and "my tax return" not in ran
    rows = json.loads(cli(capsys, "validate", str(flow), "--no-credentials", "--json")[1])
    assert rows[0]["code"] == "untrusted-path" and "folder" not in rows[0]  # no approval can allow it
