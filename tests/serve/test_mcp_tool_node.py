"""tool.mcp: an agent gets the tools of an external MCP server (stdio or Streamable HTTP)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.mcp_tool import McpToolConfig, McpToolNode
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.providers import CredentialRef
from tests.fakes.http import approvals
from tests.fakes.llm_server import FakeLLMServer, free_port, running_server
from tests.serve.conftest import QUESTION, Served, subprocess_env

TINY = Path(__file__).with_name("tiny_mcp_server.py")
KEY = "sk-mcp-agent-0123456789abcdef"


def _tiny(**config: object) -> McpToolConfig:
    return McpToolConfig(
        command=sys.executable, args=[str(TINY)], env={"PYTHONPATH": subprocess_env()["PYTHONPATH"]}, **config
    )  # type: ignore[arg-type]


def _tools(config: McpToolConfig, secrets: dict[str, str] | None = None) -> list:
    tool = McpToolNode(config).run({}, RunContext("mcp", secrets=secrets))["tool"]
    return tool if isinstance(tool, list) else [tool]


def test_all_selected_and_all_except_over_stdio() -> None:
    assert sorted(t.name for t in _tools(_tiny())) == ["add", "shout", "token_length"]
    [add] = _tools(_tiny(selection="selected", tools=["add"]))
    assert add.parameters_schema()["required"] == ["a", "b"]
    assert add.call({"a": 2, "b": 40}) == "42"
    rest = _tools(_tiny(selection="all_except", tools=["add", "token_length"], name_prefix="tiny."))
    assert [t.name for t in rest] == ["tiny_shout"]  # '.' is not allowed in a tool name the model sees
    assert rest[0].call({"text": "quiet"}) == "QUIET"


def test_token_goes_to_the_server_env_and_never_into_results() -> None:
    [tool] = _tools(_tiny(selection="selected", tools=["token_length"], token_env="TINY_TOKEN"), {"token": "tkn-12345"})
    assert tool.call({}) == "token length 9"


def test_clear_errors() -> None:
    with pytest.raises(NodeError, match=r"no tool\(s\) nope; it offers: add, shout, token_length"):
        _tools(_tiny(selection="selected", tools=["nope"]))
    with pytest.raises(NodeError, match="'url' is empty"):
        _tools(McpToolConfig(transport="http"))
    with pytest.raises(ProviderError, match=r"cannot talk to the MCP server 'http://127.0.0.1:\d+/mcp'"):
        _tools(McpToolConfig(transport="http", url=f"http://127.0.0.1:{free_port()}/mcp", timeout=5))


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    yield from running_server()


@pytest.mark.slow
def test_agent_calls_a_served_flow_through_tool_mcp(served: Served, llm: FakeLLMServer, tmp_path: Path) -> None:
    """The agent example's shape with the retriever tool replaced by tool.mcp over Streamable HTTP; the
    HTTP token is bound through the node's credential slot."""
    flow = Flow(
        name="Agent over MCP",
        nodes=[
            NodeSpec(id="question", type="chat.input"),
            NodeSpec(
                id="model",
                type="llm.openai",
                config={"model": "gpt-4o-mini", "base_url": llm.openai_base_url, "max_retries": 0},
                credentials={"api_key": CredentialRef(provider="openai", name="OPENAI_API_KEY")},
            ),
            NodeSpec(
                id="mcp",
                type="tool.mcp",
                config={"transport": "http", "url": served.url + "/mcp", "selection": "selected", "tools": ["search"]},
                credentials={"token": CredentialRef(provider="mcp", name="SERVE_TOKEN")},
            ),
            NodeSpec(id="agent", type="agent.tools", config={"system_message": "Use search."}),
            NodeSpec(id="answer", type="chat.output"),
        ],
        edges=[
            Edge(source="question", source_port="message", target="agent", target_port="message"),
            Edge(source="model", source_port="model", target="agent", target_port="model"),
            Edge(source="mcp", source_port="tool", target="agent", target_port="tools"),
            Edge(source="agent", source_port="answer", target="answer", target_port="message"),
        ],
    )
    llm.reply_tool_call("search", {"query": QUESTION, "k": 3})
    llm.reply("INVALID-011 covers consecutive dots.")
    resolver = CredentialResolver(
        explicit={"openai.api_key": KEY, "mcp.token": served.token},
        store=CredentialStore(tmp_path / "c.json"),
        environ={},
        approved=approvals(llm.url, served.url),
    )
    events: list[RunEvent] = []
    run = Executor(resolver=resolver).run(flow, inputs=QUESTION, on_event=events.append)

    assert run.ok, [r.error for r in run.failed()]
    assert run.results["answer"].outputs["message"] == "INVALID-011 covers consecutive dots."
    first, second = (r.body for r in llm.requests_to("chat"))
    assert [t["function"]["name"] for t in first["tools"]] == ["search"]
    assert set(first["tools"][0]["function"]["parameters"]["properties"]) == {"query", "k"}
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["content"].startswith("Top 3 for")
    assert "[1] score 0." in tool_message["content"] and "INVALID-011" in tool_message["content"].split("[2]")[0]
    details = json.dumps(run.results["mcp"].details) + json.dumps([e.to_dict() for e in events])
    assert served.token not in details and KEY not in details and served.token not in tool_message["content"]


@pytest.mark.slow
def test_wrong_token_is_a_clear_error(served: Served) -> None:
    config = McpToolConfig(transport="http", url=served.url + "/mcp", timeout=10)
    with pytest.raises(ProviderError, match="cannot talk to the MCP server") as info:
        _tools(config, {"token": "not-the-token"})
    assert "not-the-token" not in str(info.value)
