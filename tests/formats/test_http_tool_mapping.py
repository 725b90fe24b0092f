"""n8n's HTTP Request tools <-> tool.http, an unsupported agent tool that the agent runs without, and an
HTTP GET of a page named at run time (then HTML Extract, Convert to File) into a store."""

from __future__ import annotations

import json
from pathlib import Path

from flowbuilder.executor import Executor
from flowbuilder.formats.convert import convert_data, export_flow, import_file
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

FIXTURES = Path(__file__).parent / "fixtures" / "n8n"


def test_both_http_request_tools_become_tool_http() -> None:
    flow, report = import_file(FIXTURES / "http_tool_agent.json")
    tools = {n.id: n for n in flow.nodes if n.type == "tool.http"}
    assert set(tools) == {"weather-api", "book-search"}
    weather = tools["weather-api"].config
    assert weather["url"] == "https://api.weather.example/v1/forecast"
    assert weather["query"] == {"city": "{city}", "units": "metric"}  # model-provided vs fixed value
    assert weather["placeholders"] == {"city": "The city name"} and weather["name"] == "weather_api"
    book = tools["book-search"].config
    # $fromAI is read as a parameter by its text (never evaluated); its description is kept
    assert book["method"] == "POST" and book["url"] == "https://books.example/search/{topic}"
    assert json.loads(book["body"]) == {"limit": 3, "q": "{query}"}
    assert book["placeholders"] == {"topic": "the subject to search"}
    assert tools["book-search"].credentials["token"].provider == "http"
    assert not [e for e in report.expressions if e.node == "Book Search"]
    assert any("Book Search" in w and "the model fills: topic, query" in w for w in report.warnings)
    agent_tools = {e.source for e in flow.edges if e.target == "ai-agent" and e.target_port == "tools"}
    assert {"weather-api", "book-search", "wikipedia"} <= agent_tools


def test_tool_http_exports_as_tool_http_request_and_comes_back() -> None:
    flow, _ = import_file(FIXTURES / "http_tool_agent.json")
    data, _ = export_flow(flow, "n8n", lossy=True)
    nodes = {n["name"]: n for n in data["nodes"]}
    weather, book = nodes["Weather API"], nodes["Book Search"]
    assert weather["type"] == book["type"] == "@n8n/n8n-nodes-langchain.toolHttpRequest"
    assert weather["parameters"]["sendQuery"] is True and "credentials" not in weather
    assert weather["parameters"]["parametersQuery"]["values"][0] == {"name": "city", "valueProvider": "modelRequired"}
    assert book["parameters"]["specifyBody"] == "json" and book["parameters"]["sendBody"] is True
    assert book["parameters"]["authentication"] == "genericCredentialType"
    assert book["credentials"] == {"httpHeaderAuth": {"id": None, "name": "Books key"}}
    again, _ = convert_data(data, "n8n", "re-import")
    before = {n.id: n.config for n in flow.nodes if n.type == "tool.http"}
    after = {n.id: n.config for n in again.nodes if n.type == "tool.http"}
    assert before == after


def test_an_agent_runs_without_a_tool_we_do_not_have(tmp_path: Path) -> None:
    flow, _ = import_file(FIXTURES / "http_tool_agent.json")
    resolver = CredentialResolver({}, store=CredentialStore(tmp_path / "c.json"), environ={})
    graph = analyze(flow, resolver=None)
    wiki = [w for w in graph.warnings if w.node_id == "wikipedia"]
    assert wiki and "only feeds 'tools' of 'ai-agent'" in wiki[0].message
    assert not [i for i in graph.issues if i.node_id == "wikipedia"]
    # the HTTP tools are still judged: their servers need approval before a run
    assert {i.node_id for i in graph.issues if i.code == "untrusted-endpoint"} == {"weather-api", "book-search"}
    run = Executor(resolver=resolver, data_dir=tmp_path).run(flow, inputs="q", to="wikipedia")
    assert run.results["wikipedia"].status == "warning" and run.results["wikipedia"].summary == "skipped"


def test_a_page_fetched_at_run_time_is_the_file_the_run_gives(tmp_path: Path) -> None:
    flow, report = import_file(FIXTURES / "website_page_ingest.json", local=True)
    types = {n.id: n.type for n in flow.nodes}
    assert types["fetch-page"] == "loader.file" and "html-extract" not in types and "convert-to-file" not in types
    edges = {(e.source, e.source_port, e.target, e.target_port) for e in flow.edges}
    assert ("enter-website-url", "path", "fetch-page", "path") in edges
    assert ("fetch-page", "records", "splitter", "documents") in edges
    assert any("Fetch Page" in w and "does not fetch pages" in w for w in report.warnings)
    assert any("HTML Extract" in w and "CSS selectors are not applied" in w for w in report.warnings)
    page = tmp_path / "page.txt"
    page.write_text("Locked accounts cannot log in.\n\nPasswords reset by email.", encoding="utf-8")
    resolver = CredentialResolver({}, store=CredentialStore(tmp_path / "c.json"), environ={})
    executor = Executor(resolver=resolver, data_dir=tmp_path / "data")
    run = executor.run(flow, inputs={"enter-website-url": str(page)}, base_dir=tmp_path)
    assert run.ok, [r.error for r in run.failed()]
    assert run.results["fetch-page"].outputs["records"][0].text.startswith("Locked accounts")
    assert run.results["store"].status == "ok" and "1 in collection" in run.results["store"].summary
