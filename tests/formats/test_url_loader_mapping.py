"""LangFlow's URL / WebBaseLoader -> loader.url (its URLs kept, each server to approve before a run); with
``--local`` (offline) the loader reads the run's file instead, as before loader.url existed."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.formats.convert import import_file

FIXTURE = Path(__file__).parent / "fixtures" / "langflow" / "url_loader.json"
URLS = ["https://docs.example.com/guide", "https://docs.example.com/faq.txt"]


def test_the_url_component_becomes_loader_url_that_validate_asks_to_approve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, report = import_file(FIXTURE)
    [loader] = [n for n in flow.nodes if n.id == "URL-jjkEI"]
    assert loader.type == "loader.url" and loader.config == {"urls": URLS}
    assert any(w.startswith("URL-jjkEI: fetches https://docs.example.com/guide") and "approve" in w
               for w in report.warnings)  # fmt: skip
    assert any(e.source == "URL-jjkEI" and e.source_port == "records" for e in flow.edges)

    path = tmp_path / "flow.json"
    path.write_text(flow.model_dump_json())
    main(["validate", str(path)])
    out = capsys.readouterr().out
    assert "[untrusted-endpoint] node 'URL-jjkEI'" in out and "https://docs.example.com" in out
    main(["validate", str(path), "--allow-endpoint", "loader.url=https://docs.example.com"])
    assert "untrusted-endpoint" not in capsys.readouterr().out


def test_local_reads_the_runs_file_instead() -> None:
    flow, report = import_file(FIXTURE, local=True)
    [loader] = [n for n in flow.nodes if n.id == "URL-jjkEI"]
    assert loader.type == "loader.file" and loader.config == {"mode": "whole"}
    [swap] = [s for s in report.local_swaps if s.node == "URL-jjkEI"]
    assert swap.detail.startswith("loader.url -> loader.file (offline: no page is fetched")
    assert any(e.source == "URL-jjkEI" and e.source_port == "records" for e in flow.edges)
