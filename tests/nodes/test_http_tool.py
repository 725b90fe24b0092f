"""tool.http: an agent calls one configured HTTP API, behind the egress check, on a real loopback server.

The agent's model is the fake OpenAI-compatible server driven through the real openai SDK; the API is a
second loopback server that records what reached it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from flowbuilder.cli import main
from flowbuilder.errors import EndpointError, FlowValidationError, NodeError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.nodes.http_tool import HttpTool, HttpToolConfig
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.http import JSONHandler, LoopbackServer, approvals
from tests.fakes.llm_server import FakeLLMServer

KEY = "sk-agent-test"
TOKEN = "api-token-1234567890"


class ApiHandler(JSONHandler):
    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        parts = urlsplit(self.path)
        self.fake.requests.append(
            {
                "method": method,
                "path": parts.path,
                "query": parse_qs(parts.query),
                "headers": self._lower_case_headers(),
                "body": body,
            }
        )
        if parts.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "http://attacker.example/steal")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if parts.path.startswith("/missing"):
            self._send_json(404, {"error": "no such item"})
            return
        self._send_json(200, {"path": parts.path, "query": parse_qs(parts.query), "echo": body})


class ApiServer(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []

    def handler_class(self) -> type[JSONHandler]:
        return ApiHandler


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def agent_flow(llm: FakeLLMServer, tool_config: dict[str, Any]) -> Flow:
    return Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="llm", type="llm.openai", config={"base_url": llm.openai_base_url, "stream": False}),
            NodeSpec(id="api", type="tool.http", config=tool_config),
            NodeSpec(id="agent", type="agent.tools", config={"max_steps": 3, "when_no_tool_call": "answer"}),
            NodeSpec(id="out", type="chat.output"),
        ],
        edges=[
            Edge(source="in", source_port="message", target="agent", target_port="message"),
            Edge(source="llm", source_port="model", target="agent", target_port="model"),
            Edge(source="api", source_port="tool", target="agent", target_port="tools"),
            Edge(source="agent", source_port="answer", target="out", target_port="message"),
        ],
    )


def resolver(tmp_path: Path, *approved: tuple[str, str], token: bool = False) -> CredentialResolver:
    explicit = {"openai": KEY, **({"http": TOKEN} if token else {})}
    return CredentialResolver(explicit, store=CredentialStore(tmp_path / "c.json"), environ={}, approved=list(approved))


def test_the_agent_calls_the_configured_api_once_approved(api: ApiServer, llm: FakeLLMServer, tmp_path: Path) -> None:
    config = {
        "name": "get_item",
        "description": "Look up an item by id.",
        "url": f"{api.url}/items/{{item_id}}",
        "query": {"q": "{term}", "lang": "en"},
        "placeholders": {"item_id": "The item's id"},
    }
    flow = agent_flow(llm, config)

    # not approved: the run refuses the tool node before anything is sent
    with pytest.raises(FlowValidationError, match=r"untrusted-endpoint\] node 'api': it would call http://127"):
        Executor(resolver=resolver(tmp_path, *approvals(llm.url)), data_dir=tmp_path).run(flow, inputs="q")
    assert api.requests == [] and llm.requests == []

    llm.reply_tool_call("get_item", {"item_id": "42/../admin", "term": "locked account"})
    llm.reply("Item 42 is about locked accounts.")
    approved = resolver(tmp_path, *approvals(llm.url), ("tool.http", api.url), token=True)
    run = Executor(resolver=approved, data_dir=tmp_path).run(flow, inputs="What is item 42?")
    assert run.ok, [r.error for r in run.failed()]
    assert run.results["out"].outputs["message"] == "Item 42 is about locked accounts."

    [request] = api.requests
    # the parameter fills one path segment (encoded), never more: no way out of /items/
    assert request["method"] == "GET" and request["path"] == "/items/42%2F..%2Fadmin"
    assert request["query"] == {"q": ["locked account"], "lang": ["en"]}
    assert request["headers"]["authorization"] == f"Bearer {TOKEN}"

    first, second = llm.requests_to("chat")
    [tool] = first.body["tools"]
    assert tool["function"]["name"] == "get_item"
    assert tool["function"]["parameters"]["required"] == ["item_id", "term"]
    assert tool["function"]["parameters"]["properties"]["item_id"]["description"] == "The item's id"
    result = next(m for m in second.body["messages"] if m["role"] == "tool")
    assert json.loads(result["content"])["path"] == "/items/42%2F..%2Fadmin"
    assert TOKEN not in json.dumps(run.results["agent"].details, default=str)


def test_validate_names_the_origin_and_approval_clears_it(
    api: ApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = Flow(nodes=[NodeSpec(id="api", type="tool.http", config={"url": f"{api.url}/search", "method": "POST"})])
    path = tmp_path / "flow.json"
    path.write_text(flow.model_dump_json())
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "[untrusted-endpoint] node 'api'" in out and api.url in out
    assert main(["validate", str(path), "--allow-endpoint", f"tool.http={api.url}"]) == 0
    assert api.requests == []


def test_a_parameter_in_the_host_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(EndpointError, match="choose the server"):
        HttpTool(HttpToolConfig(url="http://{host}.example.com/x"), None)
    flow = Flow(nodes=[NodeSpec(id="api", type="tool.http", config={"url": "http://{host}:8080/x"})])
    path = tmp_path / "flow.json"
    path.write_text(flow.model_dump_json())
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "[invalid-endpoint] node 'api'" in out and "Traceback" not in out


def test_redirects_errors_bodies_and_missing_values(api: ApiServer) -> None:
    moved = HttpTool(HttpToolConfig(url=f"{api.url}/moved"), None)
    assert "redirects to http://attacker.example/steal" in moved.call({})
    assert [r["path"] for r in api.requests] == ["/moved"]  # the redirect was not followed

    missing = HttpTool(HttpToolConfig(url=f"{api.url}/missing/{{id}}"), None)
    assert missing.call({"id": "7"}).startswith(f"HTTP 404 from GET {api.url}")
    with pytest.raises(NodeError, match="no value for id"):
        missing.call({})

    post = HttpTool(HttpToolConfig(method="PUT", url=f"{api.url}/notes", body='{"text": "{text}"}'), None)
    answer = json.loads(post.call({"text": "hello"}))
    assert json.loads(answer["echo"]) == {"text": "hello"}
    assert api.requests[-1]["headers"]["content-type"] == "application/json"
    assert HttpTool(HttpToolConfig(url=f"{api.url}/x", max_chars=100), None).call({}).startswith('{"path":"/x"')
