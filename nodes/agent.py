"""``memory.window`` and ``agent.tools``: a tool-calling agent that remembers the last exchanges.

The agent sends the system message, the remembered history and the user's message to a chat model
with the connected tools. While the model asks for tool calls it runs them and sends the results
back, up to ``max_steps`` model calls; the model's first reply without tool calls is the answer.

Retrieve-then-answer: when the model cannot call tools (the provider refuses the tools), is missing or
unreachable, or answers without calling any of the connected search tools, the agent runs each search
tool (``retriever.tool``) once with the user's message and answers from those passages, with the model
(no tools) or, when there is none, with ``answer.extractive``. ``details["path"]`` and the node's
warning say which path ran; the ``hits`` output carries the passages either way.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import ChatMessage, Hit
from flowbuilder.errors import FlowbuilderError, NodeError, ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str, positive_int, to_int
from flowbuilder.formats.n8n_table import LC
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.io import NoInputs
from flowbuilder.portvalues import Answer, Hits, Message, Text, Tools
from flowbuilder.registry import register_node
from flowbuilder.services import ChatModel, Memory, Tool

RESULT_PREVIEW_CHARS = 300

DEFAULT_SYSTEM_MESSAGE = (
    "You are a helpful assistant. Use the tools to look up facts before answering, answer only from what "
    "they return, and name the sources you used. If the tools find nothing relevant, say that you don't know."
)

# ----------------------------------------------------------------------------------------- memory


class WindowMemory:
    """The last ``window`` exchanges (user message + answer) per session, optionally mirrored to JSON files.

    Instances built for the same memory node and data folder share their history in-process, so a
    conversation continues across runs of a flow (the node is rebuilt on each run).
    """

    def __init__(self, window: int, persist_dir: Path | None = None) -> None:
        self.window = window
        self.persist_dir = persist_dir
        self._sessions: dict[str, list[tuple[ChatMessage, ChatMessage]]] = {}
        self._lock = threading.Lock()

    def load(self, session_id: str) -> list[ChatMessage]:
        with self._lock:
            exchanges = self._exchanges(session_id)[-self.window :] if self.window > 0 else []
        return [message for pair in exchanges for message in pair]

    def save(self, session_id: str, user: ChatMessage, assistant: ChatMessage) -> None:
        with self._lock:
            exchanges = self._exchanges(session_id)
            exchanges.append((user, assistant))
            # Keep only what the window can show; older exchanges are never sent again.
            del exchanges[: max(0, len(exchanges) - self.window)]
            if self.persist_dir is not None:
                self._write(session_id, exchanges)

    def clear(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)
            path = self.path(session_id)
            if path is not None and path.exists():
                path.unlink()

    def exchange_count(self, session_id: str) -> int:
        with self._lock:
            return len(self._exchanges(session_id))

    def path(self, session_id: str) -> Path | None:
        if self.persist_dir is None:
            return None
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id) or "default"
        return self.persist_dir / f"{safe}.json"

    def _exchanges(self, session_id: str) -> list[tuple[ChatMessage, ChatMessage]]:
        if session_id not in self._sessions:
            self._sessions[session_id] = self._read(session_id)
        return self._sessions[session_id]

    def _read(self, session_id: str) -> list[tuple[ChatMessage, ChatMessage]]:
        path = self.path(session_id)
        if path is None or not path.exists():
            return []
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return [(ChatMessage(**pair[0]), ChatMessage(**pair[1])) for pair in data["exchanges"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            raise NodeError(
                f"{path}: cannot read the saved chat history ({type(exc).__name__}); delete the file to start afresh."
            ) from None

    def _write(self, session_id: str, exchanges: list[tuple[ChatMessage, ChatMessage]]) -> None:
        path = self.path(session_id)
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"session": session_id, "exchanges": [[u.model_dump(), a.model_dump()] for u, a in exchanges]}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(path)


_MEMORIES: dict[tuple[str, str, bool], WindowMemory] = {}
_MEMORIES_LOCK = threading.Lock()


def shared_memory(scope: str, data_dir: Path, window: int, persist: bool) -> WindowMemory:
    """The process-wide memory of one memory node (``scope``) of one flow (``data_dir``: the flow's own folder)."""
    key = (scope, str(data_dir), persist)
    with _MEMORIES_LOCK:
        memory = _MEMORIES.get(key)
        if memory is None:
            memory = WindowMemory(window, data_dir / "memory" if persist else None)
            _MEMORIES[key] = memory
        memory.window = window
        return memory


class WindowMemoryConfig(BaseModel):
    """Settings of ``memory.window``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    window: int = Field(5, ge=0, description="How many past exchanges (question + answer) are sent to the model.")
    persist: bool = Field(
        False,
        description="Also keep the history in memory/<session>.json in this flow's own folder of the data dir, so "
        "it survives restarts.",
        json_schema_extra={"advanced": True},
    )


class MemoryOut(TypedDict):
    """The output ports of ``memory.window``."""

    memory: Annotated[Memory, "Chat history per session."]


@register_node
class WindowMemoryNode(Node[WindowMemoryConfig, NoInputs, MemoryOut]):
    """Remember the last k exchanges of each chat session for an agent."""

    type_name = "memory.window"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "memory.window",
                LC + "memoryBufferWindow",
                (1, 1.1, 1.2, 1.3, 1.4),
                outputs={"memory": "ai_memory"},
                params=(Param("window", "contextWindowLength", 5, to_ours=to_int),),
                ignore=("sessionIdType", "sessionKey"),
                export_version=1.3,
            ),
            Adapter(
                "memory.window",
                LC + "memoryPostgresChat",
                (1, 1.1, 1.2, 1.3, 1.4),
                outputs={"memory": "ai_memory"},
                export=False,
                params=(Param("window", "contextWindowLength", 5, to_ours=to_int),),
                ignore=("sessionIdType", "sessionKey", "tableName"),
                note="the Postgres chat history becomes Flowbuilder's window memory (kept per session, no database)",
            ),
            Adapter(
                "memory.window",
                LC + "memoryRedisChat",
                (1, 1.1, 1.2, 1.3, 1.4, 1.5),
                also=(LC + "memoryMongoDbChat", LC + "memoryXata", LC + "memoryZep", LC + "memoryMotorhead"),
                outputs={"memory": "ai_memory"},
                export=False,
                params=(Param("window", "contextWindowLength", 5, to_ours=to_int),),
                ignore=("sessionIdType", "sessionKey", "sessionTTL", "collectionName", "databaseName", "tableName"),
                note="a chat history kept in a database becomes Flowbuilder's window memory (per session, here)",
            ),
        ),
        "flowise": (
            FW.service(
                "memory.window",
                "bufferWindowMemory",
                "memory",
                params=(Param("window", "k", 4, to_ours=positive_int),),
                ignore=("memoryKey", "sessionId"),
            ),
            FW.service(
                "memory.window",
                "bufferMemory",
                "memory",
                also=("conversationSummaryMemory", "conversationSummaryBufferMemory"),
                out_aliases={n: "memory" for n in ("conversationSummaryMemory", "conversationSummaryBufferMemory")},
                ignore=("memoryKey", "sessionId", "model", "maxTokenLimit"),
                note="a buffer memory: the last 5 exchanges are kept here (memory.window)",
            ),
            FW.service(
                "memory.window",
                "RedisBackedChatMemory",
                "memory",
                also=FW.EXTERNAL_MEMORY,
                out_aliases={n: "memory" for n in FW.EXTERNAL_MEMORY},
                ignore=(
                    "sessionId",
                    "memoryKey",
                    "sessionTTL",
                    "windowSize",
                    "baseURL",
                    "tableName",
                    "databaseFilePath",
                    "host",
                    "port",
                    "user",
                    "database",
                    "mongoDBUrl",
                    "collectionName",
                    "databaseName",
                    "upstashRestUrl",
                    "aiPrefix",
                    "humanPrefix",
                    "k",
                    "user_id",
                    "orgId",
                    "projectId",
                ),
                note="a memory kept in an external database: the history is kept in this process here (memory.window)",
            ),
        ),
    }

    capabilities = frozenset({Capability.DEFAULT_SOURCE})
    display_name = "Chat Memory"
    aliases = ("Simple Memory", "Window Buffer Memory", "Message History", "memory")
    category = "Agents"
    Config = WindowMemoryConfig
    cacheable = False  # cheap, and the details must show the current history

    def run(self, inputs: NoInputs, ctx: RunContext) -> MemoryOut:
        config = self.config
        # per flow: the folder is the flow's own, so another flow's node called "memory" meets none of it
        memory = shared_memory(ctx.node_id, ctx.state_dir, config.window, config.persist)
        ctx.details["window"] = config.window
        ctx.details["session"] = ctx.session_id
        ctx.details["stored_exchanges"] = memory.exchange_count(ctx.session_id)
        path = memory.path(ctx.session_id)
        if path is not None:
            ctx.details["file"] = str(path)
        return {"memory": memory}

    def summarize(self, outputs: MemoryOut) -> str:
        return f"window {outputs['memory'].window}"


# ------------------------------------------------------------------------------------------ agent


class AgentConfig(BaseModel):
    """Settings of ``agent.tools``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    system_message: str = Field(
        DEFAULT_SYSTEM_MESSAGE,
        description="Instructions sent first on every step.",
        json_schema_extra={"multiline": True},
    )
    max_steps: int = Field(5, ge=1, le=50, description="Most model calls per question (each tool round is one).")
    when_no_tool_call: Literal["retrieve", "answer"] = Field(
        "retrieve",
        description=(
            "When the model answers without calling any search tool: 'retrieve' runs the search tools once with "
            "the message and has the model answer from the passages (a warning says so); 'answer' keeps its reply."
        ),
    )
    session_id: str = Field(
        "", description="Chat session for the memory; empty = the run's session.", json_schema_extra={"advanced": True}
    )


class AgentIn(TypedDict):
    """The input ports of ``agent.tools``."""

    message: Annotated[Message, "The user's message."]
    model: NotRequired[
        Annotated[
            ChatModel, "A chat model that supports tool calling; without one the agent quotes its search results."
        ]
    ]
    memory: NotRequired[Annotated[Memory, "Past exchanges of the session."]]
    tools: NotRequired[Annotated[list[Tools], "Tools the model may call."]]
    system: NotRequired[Annotated[Text, "System instructions from another node (a prompt); overrides the config's."]]


class AgentOut(TypedDict):
    """The output ports of ``agent.tools``."""

    answer: Annotated[Answer, "The model's final answer."]
    hits: Annotated[Hits, "The passages the search tools returned for this message."]


@register_node
class ToolAgent(Node[AgentConfig, AgentIn, AgentOut]):
    """Answer a message with a chat model that may call tools (such as a knowledge-base search)."""

    type_name = "agent.tools"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "agent.tools",
                LC + "agent",
                (1.6, 1.7, 1.8, 1.9, 2, 2.1, 2.2, 3, 3.1),
                inputs={"message": "main", "model": "ai_languageModel", "memory": "ai_memory", "tools": "ai_tool"},
                outputs={"answer": "main"},
                params=(
                    Param("system_message", "options.systemMessage", "You are a helpful assistant"),
                    Param("max_steps", "options.maxIterations", 10, to_ours=to_int),
                ),
                fixed={"options": {}},
            ),
        ),
        "langflow": (
            # LangFlow's Agent carries its own model (provider + model name): the "agent" hook makes it an
            # llm node wired into the agent's model port, as LangFlow would have called it.
            Adapter(
                "agent.tools",
                "Agent",
                display="Agent",
                hook="agent",
                export=False,
                extra=LF.AGENT_EXTRA,
                inputs={
                    "message": "input_value",
                    "tools": "tools",
                    "memory": "memory",
                    "model": "agent_llm",
                    "system": "system_prompt",
                },
                outputs={"answer": "response"},
                out_aliases={"structured_response": "answer"},
                params=(
                    Param("system_message", "system_prompt", to_ours=nonempty_str),
                    Param("max_steps", "max_iterations", to_ours=lambda v: min(max(to_int(v) or 5, 1), 50)),
                ),
                ignore=(
                    "add_calculator_tool",
                    "handle_parsing_errors",
                    "n_messages",
                    "stream",
                    "verbose",
                    "format_instructions",
                    "output_schema",
                    "base_url_ibm_watsonx",
                    "agent_description",
                    "model_name",
                    "agent_llm",
                    "model",
                    "temperature",
                    "max_tokens",
                    "json_mode",
                    "seed",
                    "openai_api_base",
                    "timeout",
                    "max_retries",
                    "project_id",
                    "output_parser",
                    "sender",
                    "sender_name",
                    "session_id",
                    "should_store_message",
                    "context_id",
                ),
            ),
            # Pre-1.0 agents over a described store: the store's "info" is the search tool the agent gets.
            Adapter(
                "agent.tools",
                "VectorStoreAgent",
                display="VectorStoreAgent",
                hook="agent",
                export=False,
                extra=LF.AGENT_EXTRA,
                inputs={"model": "llm", "tools": "vectorstoreinfo", "message": "input_value"},
                outputs={"answer": "AgentExecutor"},
                out_aliases={"AgentExecutor": "answer"},
                ignore=("handle_parsing_errors", "verbose", "max_iterations"),
            ),
        ),
        "flowise": (
            Adapter(
                "agent.tools",
                "toolAgent",
                also=(
                    "conversationalAgent",
                    "openAIToolAgent",
                    "openAIFunctionAgent",
                    "reactAgentChat",
                    "reactAgentLLM",
                    "xmlAgent",
                    "mistralAIToolAgent",
                    "openAIToolAgentLlamaIndex",
                    "anthropicAgentLlamaIndex",
                ),
                **FW.AGENT_PORTS,
            ),
            Adapter(
                "agent.tools",
                "conversationalRetrievalToolAgent",
                **{**FW.AGENT_PORTS, "inputs": {"tools": "tools", "memory": "memory", "model": "model"}},
                in_aliases={"vectorStoreRetriever": "tools"},
            ),
            # Agentflow v1 (multi-agent): the supervisor is the agent; its workers' tools become its tools.
            Adapter(
                "agent.tools",
                "supervisor",
                hook="agent",
                inputs={"model": "model", "memory": "memory", "tools": "tools"},
                params=(Param("system_message", "supervisorPrompt", to_ours=nonempty_str),),
                ignore=("supervisorName", "recursionLimit", "summarization", "inputModeration"),
            ),
        ),
    }
    display_name = "AI Agent"
    aliases = ("Agent", "Tool Calling Agent", "tools agent", "chat")
    category = "Agents"
    Config = AgentConfig
    cacheable = False

    def run(self, inputs: AgentIn, ctx: RunContext) -> AgentOut:
        config = self.config
        model = inputs.get("model")
        memory = inputs.get("memory")
        tools = _tools_by_name(inputs.get("tools", []))
        session = config.session_id or ctx.session_id
        user = ChatMessage(role="user", content=inputs["message"])
        history = memory.load(session) if memory is not None else []

        messages: list[ChatMessage] = []
        system = inputs.get("system") or config.system_message
        if system:
            messages.append(ChatMessage(role="system", content=str(system)))
        messages += history
        messages.append(user)
        ctx.details["session"] = session
        ctx.details["history_messages"] = len(history)
        ctx.details["tools"] = sorted(tools)
        ctx.details["tool_calls"] = []
        ctx.details["steps"] = []

        def on_token(text: str) -> None:
            ctx.check_cancelled()
            ctx.token(text)

        ctx.details["path"] = "tools"
        searches = {name: tool for name, tool in tools.items() if isinstance(getattr(tool, "last_hits", None), list)}
        if model is None:
            why = f"no chat model ({ctx.missing_inputs['model']})" if "model" in ctx.missing_inputs else "no chat model"
            return self._retrieve_then_answer(user, history, None, searches, why, memory, session, ctx)
        answer: str | None = None
        for step in range(1, config.max_steps + 1):
            ctx.check_cancelled()
            try:
                reply = model.chat(messages, tools=list(tools.values()), on_token=on_token)
            except ProviderError as exc:
                if step > 1 or not searches:
                    raise
                why = f"the model failed with tools ({exc})"
                return self._retrieve_then_answer(user, history, model, searches, why, memory, session, ctx)
            finally:
                ctx.details["messages"] = _sent_messages(model, messages)
            ctx.details["steps"].append(
                {"step": step, "sent": len(messages), "tool_calls": [c.get("name") for c in reply.tool_calls]}
            )
            if not reply.tool_calls:
                if step == 1 and searches and config.when_no_tool_call == "retrieve":
                    why = "the model called no search tool"
                    return self._retrieve_then_answer(user, history, model, searches, why, memory, session, ctx)
                answer = reply.content
                break
            messages.append(ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls))
            for call in reply.tool_calls:
                result, record = _call_tool(tools, call, step)
                ctx.details["tool_calls"].append(record)
                messages.append(
                    ChatMessage(role="tool", content=result, tool_call_id=str(call.get("id", "")), name=record["name"])
                )
        if answer is None:
            asked = ", ".join(sorted({str(r["name"]) for r in ctx.details["tool_calls"]})) or "none"
            raise NodeError(
                f"no final answer after max_steps={config.max_steps} model calls: the model kept calling tools "
                f"({asked}). Raise max_steps, or tell the model in the system message to answer after searching."
            )
        if memory is not None:
            memory.save(session, user, ChatMessage(role="assistant", content=answer))
        return {"answer": answer, "hits": _tool_hits(ctx.details["tool_calls"], searches)}

    def _retrieve_then_answer(
        self,
        user: ChatMessage,
        history: list[ChatMessage],
        model: ChatModel | None,
        searches: dict[str, Tool],
        why: str,
        memory: Memory | None,
        session: str,
        ctx: RunContext,
    ) -> AgentOut:
        """Search once with the user's message, then answer from the passages (model, else extractive)."""
        if not searches:
            raise NodeError(f"{why}, and no search tool (retriever.tool) is connected to answer from.")
        hits: list[Hit] = []
        for name, tool in searches.items():
            ctx.check_cancelled()
            _, record = _call_tool(searches, {"name": name, "arguments": {"query": user.content}}, 0)
            record["fallback"] = True
            ctx.details["tool_calls"].append(record)
            found = getattr(tool, "last_hits", [])
            hits += [hit for hit in found if isinstance(hit, Hit)]
        from flowbuilder.nodes.prompts import DEFAULT_TEMPLATE, render_template

        answer = ""
        if model is not None:
            prompt = render_template(DEFAULT_TEMPLATE, {"context": hits, "question": user.content})
            messages = [*history, ChatMessage(role="user", content=prompt)]
            try:
                answer = model.chat(messages, tools=[], on_token=lambda text: ctx.token(text)).content
                path = "retrieve-then-answer (model, no tools)"
            except ProviderError as exc:
                again = "the same error" if str(exc) in why else str(exc)
                why = f"{why}; the model also failed without tools ({again})"
                model = None
            finally:
                ctx.details["messages"] = _sent_messages(model, messages)
        if model is None:
            from flowbuilder.nodes.extractive import default_embedder, extract

            extraction = extract(user.content, hits, default_embedder(ctx))
            ctx.details["extractive"] = extraction.details()
            answer = extraction.answer
            path = "retrieve-then-answer (extractive, no model)"
        ctx.details["path"] = path
        how = "with the model, without tools" if model is not None else "by quoting the passages (no model)"
        ctx.warn(f"{why}: ran {', '.join(searches)} once with the message and answered {how}")
        if memory is not None:
            memory.save(session, user, ChatMessage(role="assistant", content=answer))
        return {"answer": answer, "hits": hits}

    def summarize(self, outputs: AgentOut) -> str:
        answer = " ".join(outputs["answer"].split())
        return answer if len(answer) <= 60 else answer[:60] + "…"


def _tools_by_name(tools: list[Tools]) -> dict[str, Tool]:
    by_name: dict[str, Tool] = {}
    # One tool port may carry several tools (tool.mcp: every tool of a server), so lists are flattened.
    flat = [t for item in tools for t in (item if isinstance(item, list) else [item])]
    for tool in flat:
        if tool.name in by_name:
            raise NodeError(
                f"two connected tools are both named '{tool.name}'; give each tool a distinct name in its config."
            )
        by_name[tool.name] = tool
    return by_name


def _tool_hits(records: list[dict[str, Any]], searches: dict[str, Tool]) -> list[Hit]:
    """Every hit the search tools returned in this run, in call order (each tool keeps only its last call's)."""
    called = [str(r.get("name")) for r in records if "hits" in r]
    hits: list[Hit] = []
    for name in dict.fromkeys(called):
        found = getattr(searches.get(name), "last_hits", [])
        hits += [hit for hit in found if isinstance(hit, Hit)]
    return hits


def _call_tool(tools: dict[str, Tool], call: dict[str, Any], step: int) -> tuple[str, dict[str, Any]]:
    """Run one tool call; a failure is reported back to the model as the tool's result."""
    name = str(call.get("name", ""))
    arguments = call.get("arguments") or {}
    record: dict[str, Any] = {"step": step, "name": name, "arguments": arguments}
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        result = f"Error: there is no tool named '{name}'. Available tools: {available}."
    elif "arguments_error" in call:
        result = f"Error: the arguments were not a JSON object: {str(call['arguments_error'])[:200]}"
    else:
        try:
            result = str(tool.call(arguments))
        except FlowbuilderError as exc:
            result = f"Error: {exc}"
        except Exception as exc:  # a tool bug must not end the conversation; the model is told and the UI shows it
            result = f"Error: {type(exc).__name__}: {exc}"
        hits = getattr(tool, "last_hits", None)
        if isinstance(hits, list) and all(isinstance(hit, Hit) for hit in hits):
            record["hits"] = [_hit_summary(hit) for hit in hits]
    record["result_preview"] = result[:RESULT_PREVIEW_CHARS]
    return result, record


def _hit_summary(hit: Hit) -> dict[str, Any]:
    meta = hit.document.metadata
    return {
        "rank": hit.rank,
        "score": hit.score,
        "source": meta.get("source"),
        "record_id": meta.get("record_id"),
        "text": hit.document.text[:200],
    }


def _sent_messages(model: Any, messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The messages exactly as the provider received them when the model records them, else ours."""
    sent = getattr(model, "last_request", None)
    if isinstance(sent, list) and sent:
        return list(sent)
    return [m.model_dump(exclude_defaults=True) for m in messages]
