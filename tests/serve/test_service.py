"""FlowService: what a flow offers (tools, ask, prompts), the meta.mcp overrides, safety of the outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.errors import ServeError
from flowbuilder.formats.native import load_flow
from flowbuilder.serving.client_config import TOKEN_PLACEHOLDER, curl_example, http_config, stdio_config
from flowbuilder.serving.service import FlowService
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.providers import CredentialRef
from tests.fakes.http import approvals
from tests.fakes.llm_server import FakeLLMServer, running_server
from tests.serve.conftest import DEMO_FLOW, QUESTION, ROOT, Served

AGENT_FLOW = ROOT / "flows" / "agent_rag.json"


def test_demo_flow_offers_one_search_ask_and_its_prompt() -> None:
    service = FlowService(DEMO_FLOW)
    assert [(e.name, e.node_id, e.default_k, e.kind) for e in service.searches] == [("search", "retriever", 5, "hits")]
    assert service.ask_enabled and service.answer_node == "llm" and service.ask_name == "ask"
    assert [(p.name, p.variables) for p in service.prompts] == [("prompt", ["context", "question"])]
    assert "Question: Q?" in service.render_prompt("prompt", {"question": "Q?"})


def test_agent_flow_offers_its_retriever_tool_under_the_tool_name() -> None:
    service = FlowService(AGENT_FLOW)
    [endpoint] = service.searches
    assert (endpoint.name, endpoint.node_id, endpoint.default_k, endpoint.kind) == (
        "search_test_cases",
        "tool",
        3,
        "tool",
    )
    assert endpoint.description.startswith("Search the VWO test cases")
    assert service.answer_node == "agent"


def test_meta_mapping_renames_describes_and_disables(tmp_path: Path) -> None:
    flow = load_flow(DEMO_FLOW)
    flow.meta["mcp"] = {
        "tools": {"retriever": {"name": "find_test_cases", "description": "Find VWO test cases."}},
        "ask": {"enabled": False},
    }
    service = FlowService(flow, base_dir=DEMO_FLOW.parent)
    assert [(e.name, e.description) for e in service.searches] == [("find_test_cases", "Find VWO test cases.")]
    assert not service.ask_enabled
    flow.meta["mcp"] = {"tools": {"retriever": {"name": "bad name!"}}}
    with pytest.raises(ServeError, match=r"meta\.mcp\.tools\.retriever\.name 'bad name!' is not a valid tool name"):
        FlowService(flow, base_dir=DEMO_FLOW.parent)


def test_every_retrieval_stage_fed_by_the_question_gets_a_tool() -> None:
    flow = load_flow(DEMO_FLOW)
    # Feeding the question to the store's own query port makes the store a second retrieval stage (its hits
    # feed nothing else); the store -> retriever service edge does not fold it into the retriever.
    flow.edges.append(
        flow.edges[0].model_copy(
            update={"source": "question", "source_port": "message", "target": "store", "target_port": "query"}
        )
    )
    service = FlowService(flow, base_dir=DEMO_FLOW.parent)
    assert [(e.name, e.node_id) for e in service.searches] == [
        ("search_retriever", "retriever"),
        ("search_store", "store"),
    ]


def test_flow_definition_has_no_credentials_or_layout() -> None:
    flow = load_flow(AGENT_FLOW)
    flow.node("model").credentials = {"api_key": CredentialRef(provider="openai", name="MY_KEY")}
    data = FlowService(flow, base_dir=AGENT_FLOW.parent).flow_definition()
    text = json.dumps(data)
    assert "MY_KEY" not in text and "credentials" not in text and "layout" not in data
    assert [n["id"] for n in data["nodes"]][:2] == ["loader", "labeller"]


def test_non_loopback_serve_without_token_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(DEMO_FLOW), "--host", "0.0.0.0"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "without a token" in err and "--token" in err


def test_client_configs_never_show_the_token() -> None:
    http = http_config("Row-labelled CSV RAG", "http://127.0.0.1:8765", token=True)
    entry = http["mcpServers"]["flowbuilder-row-labelled-csv-rag"]
    assert entry == {
        "type": "http",
        "url": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": f"Bearer {TOKEN_PLACEHOLDER}"},
    }
    stdio = stdio_config("x", Path("/flows/x.json"))
    assert stdio["mcpServers"]["flowbuilder-x"] == {"command": "flowbuilder", "args": ["mcp", "/flows/x.json"]}
    assert curl_example("http://127.0.0.1:8765", "two dots?", 5, token=False) == (
        "curl -s 'http://127.0.0.1:8765/search?q=two+dots%3F&k=5'"
    )


@pytest.fixture
def llm() -> FakeLLMServer:
    yield from running_server()  # type: ignore[misc]


@pytest.mark.slow
def test_ask_runs_the_agent_and_returns_its_sources(served: Served, llm: FakeLLMServer, tmp_path: Path) -> None:
    # `served` first: its process has already ingested the rows into this sandbox's data dir.
    flow = load_flow(AGENT_FLOW)
    model = flow.node("model")
    model.type = "llm.openai"
    model.config = {"model": "gpt-4o-mini", "base_url": llm.openai_base_url, "max_retries": 0}
    key = "sk-ask-secret-0123456789"
    store = CredentialStore(tmp_path / "c.json")
    resolver = CredentialResolver(
        explicit={"openai.api_key": key}, store=store, environ={}, approved=approvals(llm.url)
    )
    service = FlowService(flow, base_dir=AGENT_FLOW.parent, resolver=resolver)
    llm.reply_tool_call("search_test_cases", {"query": "email with consecutive dots"})
    llm.reply(f"INVALID-011 (and my key is {key})")
    result = service.ask(QUESTION)
    assert result.ok and result.answer_node == "agent"
    # the answer arrives with the key masked where the served flow made it (in place: offsets stay true)
    assert result.answer == f"INVALID-011 (and my key is {'*' * len(key)})"
    assert [s["record_id"] for s in result.sources][:3] and "INVALID-011" in [s["record_id"] for s in result.sources]
    assert key not in json.dumps(result.to_json())


def test_a_flow_with_a_cycle_is_refused_in_one_line_naming_it() -> None:
    from flowbuilder.flow import Edge, Flow, NodeSpec

    flow = Flow(
        name="cycle",
        nodes=[
            NodeSpec(id="question", type="chat.input"),
            NodeSpec(id="a", type="splitter.recursive"),
            NodeSpec(id="b", type="splitter.recursive"),
        ],
        edges=[
            Edge(source="a", source_port="chunks", target="b", target_port="documents"),
            Edge(source="b", source_port="chunks", target="a", target_port="documents"),
        ],
    )
    with pytest.raises(ServeError, match=r"cycle through (a -> b|b -> a); remove one of these connections"):
        FlowService(flow)
