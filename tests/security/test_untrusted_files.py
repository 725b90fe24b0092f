"""Every reader of flow files survives hostile input with one clear line (the causes the fuzzer found)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.examples import data_dir, flows_dir

sys.path.insert(0, str(Path(__file__).parent))
from fuzz_harness import campaign

N8N = Path(__file__).resolve().parents[1] / "formats" / "fixtures" / "n8n_small.json"


def native(**changes: object) -> str:
    """The demo flow (its loader pointed at the sample data, which any flow may read, so the copy stays valid)."""
    data = json.loads((flows_dir() / "row_labelled_csv_rag.json").read_text(encoding="utf-8"))
    loader = next(n for n in data["nodes"] if n["type"] == "loader.file")
    loader["config"]["path"] = str(data_dir() / "VWO_500_Test_Cases.csv")
    data.update(changes)
    return json.dumps(data)


def run_cli(tmp_path: Path, text: str, *command: str) -> tuple[int, str]:
    path = tmp_path / "case.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    args = [c.replace("FILE", str(path)) for c in command]
    code = main(args)
    return code, str(path)


HOSTILE = {
    "deep nesting": "[" * 10_000 + "]" * 10_000,
    "5000-digit integer": native().replace('"version": 1', '"version": ' + "9" * 5000, 1),
    "NaN position": native().replace('"x": ', '"x": NaN, "_": ', 1),
    "Infinity": native().replace('"zoom": ', '"zoom": Infinity, "_": ', 1),
    "overflowing float": native().replace('"zoom": ', '"zoom": 1e999, "_": ', 1),
    "a million empty nodes": json.dumps({"format": "flowbuilder", "version": 1, "nodes": [{}] * 1_000_000}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("command", ["validate", "import", "export"])
def test_hostile_files_give_one_line_and_exit_2(tmp_path: Path, capsys, name: str, command: str) -> None:
    argv = {
        "validate": ["validate", "FILE"],
        "import": ["import", "FILE", "-o", str(tmp_path / "o.json")],
        "export": ["export", "FILE", "--to", "n8n", "-o", str(tmp_path / "o.json")],
    }[command]
    code, _ = run_cli(tmp_path, HOSTILE[name], *argv)
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "Traceback" not in captured.err + captured.out
    assert len(captured.err.strip().splitlines()) == 1
    assert not (tmp_path / "o.json").exists()  # a failed import or export writes nothing


def test_lone_surrogates_are_mended_and_leave_no_debris(tmp_path: Path, capsys) -> None:
    text = native(name="bad \\ud800 name").replace('"bad \\\\ud800 name"', '"bad \\ud800 name"')
    code, path = run_cli(tmp_path, text, "validate", "FILE")
    assert code == 0
    out = tmp_path / "out.json"
    assert main(["export", path, "--to", "langflow", "-o", str(out)]) == 0
    assert "\ufffd" in out.read_text(encoding="utf-8")
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("fmt", ["n8n", "langflow"])
def test_export_of_a_self_loop_returns_at_once(tmp_path: Path, capsys, fmt: str) -> None:
    data = json.loads(native())
    first = data["nodes"][0]["id"]
    data["edges"].append({"source": first, "source_port": "records", "target": first, "target_port": "path"})
    code, _ = run_cli(tmp_path, json.dumps(data), "export", "FILE", "--to", fmt)
    err = capsys.readouterr().err
    assert code == 2 and "cycle" in err and first in err


def test_dangling_and_duplicate_ids_are_refused_on_export(tmp_path: Path, capsys) -> None:
    data = json.loads(native())
    data["edges"][0]["target"] = "ghost"
    data["nodes"].append(dict(data["nodes"][1]))
    code, _ = run_cli(tmp_path, json.dumps(data), "export", "FILE", "--to", "n8n")
    err = capsys.readouterr().err
    assert code == 2 and "ghost" in err and "used twice" in err


def test_import_never_writes_nan(tmp_path: Path) -> None:
    data = json.loads(N8N.read_text(encoding="utf-8"))
    data["nodes"][0]["parameters"]["width"] = "inf"
    data["nodes"][0]["position"] = [1e308, -1e308]
    src = tmp_path / "n8n.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "flow.json"
    assert main(["import", str(src), "-o", str(out)]) == 0  # such numbers are read, not refused
    json.loads(out.read_text(encoding="utf-8"), parse_constant=lambda c: pytest.fail(f"wrote {c}"))


def test_short_fuzz_campaign_finds_no_traceback_hang_or_leak(tmp_path: Path) -> None:
    result = campaign(250, tmp_path, seed=7)
    assert sum(result.counts.values()) == 250
    assert result.failures == [], (
        result.table()
        + "\n"
        + "\n".join(f"{label}: {o.kind} in {o.step}: {o.detail}" for label, o, _ in result.failures[:3])
    )
