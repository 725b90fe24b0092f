"""agent.tools and memory.window: the tool-calling loop over the real SDKs against the fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.data import ChatMessage, Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.agent import AgentConfig, ToolAgent, WindowMemory, WindowMemoryConfig, WindowMemoryNode
from flowbuilder.nodes.llms.groq import GroqChat, GroqChatConfig
from flowbuilder.nodes.llms.ollama import OllamaChat, OllamaChatConfig
from flowbuilder.nodes.llms.openai import OpenAIChat, OpenAIChatConfig
from flowbuilder.ports import Port, PortType
from flowbuilder.portvalues import port_value_problems
from flowbuilder.registry import NodeRegistry, default_registry
from flowbuilder.services import Memory, Tool
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.http import approvals
from tests.fakes.llm_server import FakeLLMServer, Reply, ToolCall, free_port, running_server

KEY = "sk-agent-test"


class SearchTool:
    """A tiny Tool: records its calls and returns passages about the query."""

    name = "search_documents"
    description = "Search the test cases."

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.last_hits: list[Hit] = []

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}

    def call(self, arguments: dict[str, Any]) -> str:
        self.calls.append(arguments)
        doc = Document(text=f"Passage about {arguments['query']}", metadata={"source": "cases.csv", "record_id": "L-1"})
        self.last_hits = [Hit(document=doc, score=0.8, rank=1)]
        return f"[1] (source: cases.csv, record L-1) Passage about {arguments['query']}"


class BrokenTool(SearchTool):
    name = "broken"

    def call(self, arguments: dict[str, Any]) -> str:
        raise RuntimeError("index missing")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server()


def chat_model(server: FakeLLMServer, provider: str = "openai") -> Any:
    ctx = RunContext("llm", secrets={"api_key": KEY})
    if provider == "openai":
        return OpenAIChat(OpenAIChatConfig(base_url=server.openai_base_url, max_retries=0)).run({}, ctx)["model"]
    if provider == "groq":
        return GroqChat(GroqChatConfig(base_url=server.groq_base_url, max_retries=0)).run({}, ctx)["model"]
    return OllamaChat(OllamaChatConfig(base_url=server.ollama_host)).run({}, ctx)["model"]


def run_agent(
    model: Any, message: str, tools: list[Any] | None = None, memory: Any = None, session: str = "s", **config: Any
) -> tuple[dict[str, Any], RunContext]:
    ctx = RunContext("agent", session_id=session)
    inputs: dict[str, Any] = {"message": message, "model": model}
    if tools is not None:
        inputs["tools"] = tools
    if memory is not None:
        inputs["memory"] = memory
    return ToolAgent(AgentConfig(system_message="Use the tools.", **config)).run(inputs, ctx), ctx


@pytest.mark.parametrize("provider", ["openai", "groq", "ollama"])
def test_tool_loop_calls_the_tool_and_sends_results_back(server: FakeLLMServer, provider: str) -> None:
    tool = SearchTool()
    server.reply_tool_call("search_documents", {"query": "login"})
    server.reply("Log in with email and password [1].")
    outputs, ctx = run_agent(chat_model(server, provider), "How do I log in?", tools=[tool])

    assert outputs["answer"] == "Log in with email and password [1]."
    assert [h.document.text for h in outputs["hits"]] == ["Passage about login"]  # what the tool returned
    assert ctx.details["path"] == "tools" and not ctx.warning
    assert tool.calls == [{"query": "login"}]
    first, second = server.requests_to("chat")
    assert first.body["tools"][0]["function"]["name"] == "search_documents"
    assert first.body["tools"][0]["function"]["parameters"] == tool.parameters_schema()
    assert [m["role"] for m in first.body["messages"]] == ["system", "user"]
    assert [m["role"] for m in second.body["messages"]] == ["system", "user", "assistant", "tool"]
    assistant, result = second.body["messages"][2:]
    assert result["content"] == "[1] (source: cases.csv, record L-1) Passage about login"
    if provider == "ollama":
        assert assistant["tool_calls"] == [{"function": {"name": "search_documents", "arguments": {"query": "login"}}}]
        assert result["tool_name"] == "search_documents"
    else:
        [call] = assistant["tool_calls"]
        assert call["function"]["name"] == "search_documents"
        assert json.loads(call["function"]["arguments"]) == {"query": "login"}
        assert result["tool_call_id"] == call["id"]
        assert second.authorization == f"Bearer {KEY}"

    assert ctx.details["messages"] == second.body["messages"]
    [record] = ctx.details["tool_calls"]
    assert record["name"] == "search_documents" and record["arguments"] == {"query": "login"}
    assert record["result_preview"].startswith("[1] (source: cases.csv")
    assert record["hits"][0]["record_id"] == "L-1" and record["hits"][0]["score"] == 0.8
    assert [s["tool_calls"] for s in ctx.details["steps"]] == [["search_documents"], []]


def test_step_cap_stops_with_a_clear_error(server: FakeLLMServer) -> None:
    server.responder = lambda body: Reply(tool_calls=[ToolCall("search_documents", {"query": "again"})])
    tool = SearchTool()
    with pytest.raises(NodeError) as info:
        run_agent(chat_model(server), "loop forever", tools=[tool], max_steps=3)
    assert "max_steps=3" in str(info.value) and "search_documents" in str(info.value)
    assert len(server.requests_to("chat")) == 3
    assert len(tool.calls) == 3


def test_unknown_tools_and_failing_tools_are_reported_to_the_model(server: FakeLLMServer) -> None:
    server.reply_tool_calls([ToolCall("no_such_tool", {}), ToolCall("broken", {"query": "x"})])
    server.reply("Sorry, the search failed.")
    outputs, ctx = run_agent(chat_model(server), "q", tools=[SearchTool(), BrokenTool()])
    assert outputs["answer"] == "Sorry, the search failed."
    tool_messages = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "no tool named 'no_such_tool'" in tool_messages[0]["content"]
    assert "broken, search_documents" in tool_messages[0]["content"]
    assert tool_messages[1]["content"] == "Error: RuntimeError: index missing"
    assert [r["name"] for r in ctx.details["tool_calls"]] == ["no_such_tool", "broken"]


def test_two_tools_with_one_name_are_refused(server: FakeLLMServer) -> None:
    with pytest.raises(NodeError, match="both named 'search_documents'"):
        run_agent(chat_model(server), "q", tools=[SearchTool(), SearchTool()])
    assert server.requests == []


def test_window_memory_keeps_the_last_k_exchanges_per_session() -> None:
    memory = WindowMemory(window=2)
    assert isinstance(memory, Memory)
    for i in range(1, 4):
        memory.save("a", ChatMessage(role="user", content=f"q{i}"), ChatMessage(role="assistant", content=f"a{i}"))
    memory.save("b", ChatMessage(role="user", content="other"), ChatMessage(role="assistant", content="reply"))
    assert [m.content for m in memory.load("a")] == ["q2", "a2", "q3", "a3"]
    assert [m.role for m in memory.load("a")] == ["user", "assistant", "user", "assistant"]
    assert [m.content for m in memory.load("b")] == ["other", "reply"]
    assert memory.load("unknown") == []
    assert WindowMemory(window=0).load("a") == []


def test_window_memory_persists_to_json_when_asked(tmp_path: Path) -> None:
    memory = WindowMemory(window=3, persist_dir=tmp_path / "memory")
    memory.save("cli/chat 1", ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="hello"))
    path = tmp_path / "memory" / "cli_chat_1.json"
    assert json.loads(path.read_text())["exchanges"][0][1]["content"] == "hello"
    reloaded = WindowMemory(window=3, persist_dir=tmp_path / "memory")
    assert [m.content for m in reloaded.load("cli/chat 1")] == ["hi", "hello"]
    path.write_text("{broken")
    with pytest.raises(NodeError, match="delete the file"):
        WindowMemory(window=3, persist_dir=tmp_path / "memory").load("cli/chat 1")


def test_memory_node_shows_window_and_session(tmp_path: Path) -> None:
    ctx = RunContext("memory", data_dir=tmp_path, session_id="s1")
    memory = WindowMemoryNode(WindowMemoryConfig(window=4)).run({}, ctx)["memory"]
    assert memory.window == 4
    assert ctx.details == {"window": 4, "session": "s1", "stored_exchanges": 0}


def test_agent_sends_history_and_saves_the_exchange(server: FakeLLMServer) -> None:
    memory = WindowMemory(window=1)
    model = chat_model(server)
    server.reply("First answer.")
    run_agent(model, "First question?", memory=memory, session="chat-1")
    server.reply("Second answer.")
    _, ctx = run_agent(model, "Second question?", memory=memory, session="chat-1")
    server.reply("Third answer.")
    run_agent(model, "Third question?", memory=memory, session="chat-1")

    sent = [(m["role"], m["content"]) for m in server.requests[-1].body["messages"]]
    assert sent == [
        ("system", "Use the tools."),
        ("user", "Second question?"),
        ("assistant", "Second answer."),
        ("user", "Third question?"),
    ]
    assert ctx.details["history_messages"] == 2 and ctx.details["session"] == "chat-1"
    server.reply("Other session.")
    run_agent(model, "New chat", memory=memory, session="chat-2")
    assert [m["role"] for m in server.requests[-1].body["messages"]] == ["system", "user"]


def test_agent_flow_in_the_executor_remembers_across_runs(server: FakeLLMServer, tmp_path: Path) -> None:
    class ToolNode(Node[Any]):
        """A test node that provides the SearchTool."""

        type_name = "test.search_tool"
        outputs = (Port("tool", PortType.TOOL),)

        def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
            return {"tool": SearchTool()}

    registry = NodeRegistry()
    for cls in default_registry():
        registry.register(cls)
    registry.register(ToolNode)
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="llm", type="llm.openai", config={"base_url": server.openai_base_url}),
            NodeSpec(id="memory", type="memory.window", config={"window": 3}),
            NodeSpec(id="search", type="test.search_tool"),
            # a question about the conversation needs no search: the model's direct answer is kept
            NodeSpec(id="agent", type="agent.tools", config={"max_steps": 3, "when_no_tool_call": "answer"}),
            NodeSpec(id="out", type="chat.output"),
        ],
        edges=[
            Edge(source="in", source_port="message", target="agent", target_port="message"),
            Edge(source="llm", source_port="model", target="agent", target_port="model"),
            Edge(source="memory", source_port="memory", target="agent", target_port="memory"),
            Edge(source="search", source_port="tool", target="agent", target_port="tools"),
            Edge(source="agent", source_port="answer", target="out", target_port="message"),
        ],
    )
    resolver = CredentialResolver(
        {"openai.api_key": KEY}, store=CredentialStore(tmp_path / "c.json"), environ={}, approved=approvals(server.url)
    )
    executor = Executor(registry=registry, resolver=resolver, data_dir=tmp_path)

    server.reply_tool_call("search_documents", {"query": "signup"})
    server.reply("Sign up via the form [1].")
    events: list[RunEvent] = []
    run = executor.run(flow, inputs="How to sign up?", on_event=events.append, session_id="flow-test")
    assert run.ok, [r.error for r in run.failed()]
    assert run.results["out"].outputs["message"] == "Sign up via the form [1]."
    assert "".join(e.data["text"] for e in events if e.kind == "token" and e.node_id == "agent") == (
        "Sign up via the form [1]."
    )
    assert run.results["agent"].details["tool_calls"][0]["arguments"] == {"query": "signup"}

    server.reply("You asked about sign up.")
    again = executor.run(flow, inputs="What did I ask?", session_id="flow-test")
    assert again.results["out"].outputs["message"] == "You asked about sign up."
    sent = [(m["role"], m["content"]) for m in server.requests[-1].body["messages"]][1:]
    assert sent == [
        ("user", "How to sign up?"),
        ("assistant", "Sign up via the form [1]."),
        ("user", "What did I ask?"),
    ]
    assert again.results["memory"].details["stored_exchanges"] == 1


def test_a_model_input_that_is_not_a_chat_model_is_refused() -> None:
    problems = port_value_problems(ToolAgent.inputs, "input", {"message": "q", "model": object()})
    assert problems == [
        "input 'model' expects chat_model (a ChatModel: chat, model, provider), got object"
    ]  # the executor fails the node with this before it runs (tests/core/test_port_values.py)
    assert isinstance(SearchTool(), Tool)


# ------------------------------------------------------------------ retrieve-then-answer


def test_a_model_that_calls_no_tool_answers_from_one_search(server: FakeLLMServer) -> None:
    tool = SearchTool()
    server.reply("From memory: use the login page.")  # ignores the tools
    server.reply("Log in on the page [1].")
    outputs, ctx = run_agent(chat_model(server), "How do I log in?", tools=[tool])

    assert outputs["answer"] == "Log in on the page [1]."
    assert tool.calls == [{"query": "How do I log in?"}]  # the user's message, searched once
    assert [h.document.text for h in outputs["hits"]] == ["Passage about How do I log in?"]
    assert ctx.details["path"] == "retrieve-then-answer (model, no tools)"
    assert "called no search tool" in ctx.warning and "search_documents" in ctx.warning
    second = server.requests_to("chat")[-1].body
    assert "tools" not in second and "Passage about How do I log in?" in second["messages"][-1]["content"]
    assert ctx.details["tool_calls"][0]["fallback"] is True


def test_a_model_that_refuses_tools_answers_without_them(server: FakeLLMServer) -> None:
    server.fail("chat", 400, times=1, message="registry.ollama.ai/library/gemma:2b does not support tools")
    server.reply("Use the login page [1].")
    outputs, ctx = run_agent(chat_model(server), "How do I log in?", tools=[SearchTool()])

    assert outputs["answer"] == "Use the login page [1]."
    assert ctx.details["path"] == "retrieve-then-answer (model, no tools)"
    assert "does not support tools" in ctx.warning
    first, second = server.requests_to("chat")
    assert "tools" in first.body and "tools" not in second.body


def test_an_unreachable_model_leaves_the_extractive_answer(tmp_path: Path) -> None:
    ctx_llm = RunContext("llm")
    dead = OllamaChat(OllamaChatConfig(base_url=f"http://127.0.0.1:{free_port()}", timeout=5)).run({}, ctx_llm)
    tool = SearchTool()
    ctx = RunContext("agent", data_dir=tmp_path)
    inputs = {"message": "What is the login passage about?", "model": dead["model"], "tools": [tool]}
    outputs = ToolAgent(AgentConfig()).run(inputs, ctx)

    assert ctx.details["path"] == "retrieve-then-answer (extractive, no model)"
    assert "also failed without tools" in ctx.warning and "Ollama" in ctx.warning
    assert "> [1] L-1: Passage about What is the login passage about?" in outputs["answer"]
    assert len(outputs["hits"]) == 1 and tool.calls == [{"query": "What is the login passage about?"}]


def test_no_model_connected_quotes_the_search_results(tmp_path: Path) -> None:
    ctx = RunContext("agent", data_dir=tmp_path)
    outputs = ToolAgent(AgentConfig()).run({"message": "Tell me about the login passage", "tools": [SearchTool()]}, ctx)
    assert "> [1] L-1: Passage about" in outputs["answer"] and ctx.details["path"].endswith("(extractive, no model)")
    assert ctx.warning.startswith("no chat model")
    with pytest.raises(NodeError, match="no search tool"):
        ToolAgent(AgentConfig()).run({"message": "hi"}, RunContext("agent", data_dir=tmp_path))
