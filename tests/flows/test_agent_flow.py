"""The agent example end to end: real loader, embedder, Chroma and retriever tool; OpenAI's SDK
against the local fake server, which scripts a tool call and then an answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbuilder.evaluation.answers import citations
from flowbuilder.examples import AGENT_FLOW, example_flow, flows_dir
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.formats.native import load_flow
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.providers import CredentialRef
from tests.fakes.http import approvals
from tests.fakes.llm_server import FakeLLMServer, running_server

KEY = "sk-agentflow-0123456789abcdefghij"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server()


def test_agent_flow_calls_the_retriever_tool_and_answers(server: FakeLLMServer, tmp_path: Path) -> None:
    flow = load_flow(example_flow(AGENT_FLOW))
    model = flow.node("model")
    model.type = "llm.openai"
    model.config = {"model": "gpt-4o-mini", "base_url": server.openai_base_url, "max_retries": 0}
    model.credentials = {"api_key": CredentialRef(provider="openai", name="OPENAI_API_KEY")}
    server.reply_tool_call("search_test_cases", {"query": "email with consecutive dots"})
    server.reply("INVALID-011 covers consecutive dots in the email.")
    resolver = CredentialResolver(
        explicit={"openai.api_key": KEY},
        store=CredentialStore(tmp_path / "c.json"),
        environ={},
        approved=approvals(server.url),
    )
    events: list[RunEvent] = []

    run = Executor(resolver=resolver).run(
        flow, inputs="How is an email with two dots handled?", on_event=events.append, base_dir=flows_dir()
    )

    assert run.ok, [r.error for r in run.failed()]
    assert run.results["answer"].outputs["message"] == "INVALID-011 covers consecutive dots in the email."
    calls = run.results["agent"].details["tool_calls"]
    assert [c["name"] for c in calls] == ["search_test_cases"]
    hit_ids = [h["record_id"] for h in calls[0]["hits"]]
    assert len(hit_ids) == 3 and "INVALID-011" in hit_ids
    # What the SDK sent: the tool declared on the first request, its result fed back on the second.
    first, second = (r.body for r in server.requests_to("chat"))
    assert first["tools"][0]["function"]["name"] == "search_test_cases"
    assert first["messages"][0]["role"] == "system" and "search_test_cases" in first["messages"][0]["content"]
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert "INVALID-011" in tool_message["content"]
    assert server.requests_to("chat")[0].headers["authorization"] == f"Bearer {KEY}"
    assert all(KEY not in json.dumps(e.to_dict()) for e in events)


def test_imported_n8n_course_flow_answers_offline(tmp_path: Path) -> None:
    """The n8n course export (agent + Pinecone tool), imported --local, on a machine with no Ollama and no
    key: the agent searches once with the message and quotes the passages, and says so."""
    from flowbuilder.formats.convert import import_file
    from tests.fakes.llm_server import free_port

    fixture = Path(__file__).parents[1] / "ui" / "fixtures" / "n8n__AI3X_Basic_RAG.json"
    flow, report = import_file(fixture, local=True)
    assert any(s.parameter == "when_unreachable" for s in report.local_swaps)
    model = next(n for n in flow.nodes if n.type == "llm.ollama")
    model.config["base_url"] = f"http://127.0.0.1:{free_port()}"  # nothing listens: no Ollama on this machine
    doc = Path(__file__).parents[2] / "data" / "docs" / "security.md"
    run = Executor(data_dir=tmp_path).run(
        flow, inputs={"on-form-submission": str(doc), "*": "How do I turn on two-step verification?"}
    )

    agent = run.results["rag-agent"]
    assert agent.status == "warning", agent.error
    assert agent.details["path"] == "retrieve-then-answer (extractive, no model)"
    assert "answered by quoting the passages" in agent.warning
    assert agent.outputs["hits"] and all(h.document.metadata["source"] == "security.md" for h in agent.outputs["hits"])
    answer = agent.outputs["answer"]
    assert answer.startswith("How to turn on two-step verification: ") and citations(answer)  # a lead, then quotes
    assert "> [" in answer and "security.md" in answer and "Profile > Security" in answer


def test_agent_example_answers_offline_from_its_tool(tmp_path: Path) -> None:
    """flows/agent_rag.json with Ollama unreachable: the tool still runs, the chat gets quoted test cases."""
    from tests.fakes.llm_server import free_port

    rows = Path(__file__).parents[2] / "data" / "VWO_500_Test_Cases.csv"
    lines = rows.read_text(encoding="utf-8-sig").splitlines()
    small = tmp_path / "cases.csv"
    small.write_text("\n".join([lines[0], *[line for line in lines if "INVALID-0" in line][:30]]), encoding="utf-8")
    flow = load_flow(example_flow(AGENT_FLOW))
    flow.node("loader").config["path"] = str(small)
    flow.node("model").config["base_url"] = f"http://127.0.0.1:{free_port()}"
    # the flow reads its rows from its own folder (tmp_path): a file elsewhere would need approval
    run = Executor(data_dir=tmp_path / "fbdata").run(
        flow, inputs="How is an email with two dots handled?", base_dir=tmp_path
    )

    agent = run.results["agent"]
    assert agent.status == "warning" and "Ollama" in agent.warning
    assert [c["name"] for c in agent.details["tool_calls"]] == ["search_test_cases"]
    answer = run.results["answer"].outputs["message"]
    assert "INVALID-011" in answer and "[" in answer
