"""Text from a flow cannot steer the terminal: validate, run, import reports and errors escape control
characters, so a flow cannot make the terminal show "valid" while the exit code is 1 (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

from flowbuilder.cli import main
from flowbuilder.trust.terminal import escape_controls, excerpt, quote_argv

FORGED = "\x1b[2K\r/tmp/flow.json: valid (1 nodes, 0 connections)\x1b[8m"
RAW = ("\x1b", "\r", "\x9b", "\u202e", "\x07")


def flow_file(tmp_path: Path, node_id: str, **config: object) -> Path:
    path = tmp_path / "forged.json"
    data = {
        "format": "flowbuilder",
        "version": 1,
        "name": f"forged{FORGED}",
        "nodes": [{"id": node_id, "type": "loader.file", "config": config}],
        "edges": [],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def assert_escaped(text: str) -> None:
    assert not any(ch in text for ch in RAW), repr(text[:300])


def test_validate_escapes_a_forged_valid_line(tmp_path: Path, capsys) -> None:
    path = flow_file(tmp_path, f"x{FORGED}\u202e\x9b\x07", path=f"missing{FORGED}.csv", mode="nope")
    assert main(["validate", str(path)]) == 1
    captured = capsys.readouterr()
    assert_escaped(captured.out + captured.err)
    assert "\\u001b[2K\\u000d" in captured.out  # shown, visibly, as what it is
    first = captured.out.splitlines()[0]
    assert first.endswith("problem(s)") and ": valid" not in first


def test_run_and_errors_escape_too(tmp_path: Path, capsys) -> None:
    path = flow_file(tmp_path, f"x{FORGED}", path=f"missing{FORGED}.csv")
    assert main(["run", str(path)]) == 1
    captured = capsys.readouterr()
    assert_escaped(captured.out + captured.err)
    bad = tmp_path / "bad\x1b[2K\rvalid\x1b[8m.json"  # a file name can carry them too
    bad.write_text("{not json", encoding="utf-8")
    assert main(["validate", str(bad)]) == 2
    captured = capsys.readouterr()
    assert_escaped(captured.out + captured.err)


def test_an_import_report_escapes_names(tmp_path: Path, capsys) -> None:
    fixture = Path(__file__).resolve().parents[1] / "formats" / "fixtures" / "n8n_small.json"
    data = json.loads(fixture.read_text(encoding="utf-8"))
    for node in data["nodes"]:
        node["name"] = node["name"] + FORGED
    data["connections"] = {name + FORGED: value for name, value in data.get("connections", {}).items()}
    for value in data["connections"].values():
        for outputs in value.values():
            for targets in outputs:
                for target in targets or []:
                    target["node"] = target["node"] + FORGED
    source = tmp_path / "n8n.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    main(["import", str(source), "-o", str(tmp_path / "out.json")])
    captured = capsys.readouterr()
    assert captured.out.strip()
    assert_escaped(captured.out + captured.err)


def test_helpers() -> None:
    assert escape_controls("a\tb\nc\x1b[0m\r\u202e") == "a\tb\nc\\u001b[0m\\u000d\\u202e"
    assert quote_argv(["bash", "-c", "touch /tmp/x"]) == "bash -c 'touch /tmp/x'"
    assert quote_argv(["echo", "a\x1b]0;title\x07"]) == "echo 'a\\u001b]0;title\\u0007'"
    short = excerpt("x" * 1000 + "\x1b", 50)
    assert len(short) == 50 and short.endswith("…")
