"""chat.input and chat.output, alone and around a model in a flow run by the executor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbuilder.errors import NodeError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.chat import ChatInput, ChatInputConfig, ChatOutput
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.llm_server import FakeLLMServer, running_server


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server()


def executor(tmp_path: Path, **secrets: str) -> Executor:
    resolver = CredentialResolver(secrets, store=CredentialStore(tmp_path / "creds.json"), environ={})
    return Executor(resolver=resolver, data_dir=tmp_path)


def test_chat_input_prefers_the_run_input_and_falls_back_to_config() -> None:
    node = ChatInput(ChatInputConfig(text="configured"))
    assert node.run({}, RunContext("in", run_input="typed")) == {"message": "typed"}
    ctx = RunContext("in")
    assert node.run({}, ctx) == {"message": "configured"}
    assert ctx.details["source"] == "config"


def test_chat_input_without_any_text_says_how_to_give_one() -> None:
    with pytest.raises(NodeError, match="--input"):
        ChatInput(ChatInputConfig()).run({}, RunContext("in"))


def test_chat_output_passes_the_answer_and_summarises_60_chars() -> None:
    node = ChatOutput(ChatOutput.Config())
    answer = "A" * 50 + " " + "B" * 30
    outputs = node.run({"message": answer}, RunContext("out"))
    assert outputs == {"message": answer}
    assert node.summarize(outputs) == answer[:60] + "…"
    assert node.summarize({"message": "short\nanswer"}) == "short answer"


def test_chat_flow_through_ollama_streams_into_events(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reply("Open Settings, then Reset password.")
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="llm", type="llm.ollama", config={"base_url": server.ollama_host, "system_message": "Short."}),
            NodeSpec(id="out", type="chat.output"),
        ],
        edges=[
            Edge(source="in", source_port="message", target="llm", target_port="prompt"),
            Edge(source="llm", source_port="answer", target="out", target_port="message"),
        ],
    )
    events: list[RunEvent] = []
    run = executor(tmp_path).run(flow, inputs="How do I reset my password?", on_event=events.append)
    assert run.ok, [r.error for r in run.failed()]
    assert run.results["out"].outputs["message"] == "Open Settings, then Reset password."
    assert run.results["out"].summary == "Open Settings, then Reset password."
    assert "".join(e.data["text"] for e in events if e.kind == "token") == "Open Settings, then Reset password."
    assert run.results["llm"].details["messages"] == [
        {"role": "system", "content": "Short."},
        {"role": "user", "content": "How do I reset my password?"},
    ]
    assert server.requests[-1].body["messages"] == run.results["llm"].details["messages"]

    # a second question is a new run: the model is asked again (llm nodes are never cached)
    server.reply("Second.")
    again = executor(tmp_path).run(flow, inputs="And then?")
    assert again.results["out"].outputs["message"] == "Second."
    assert len(server.requests_to("chat")) == 2
