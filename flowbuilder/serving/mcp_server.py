"""The MCP server of a flow (official ``mcp`` SDK, ``MCPServer``): tools, resources and prompts.

- Tools: one search tool per retrieval node (arguments ``query`` and ``k``; the result is structured
  content plus readable text with scores and sources) and ``ask`` when the flow ends in a model or agent.
- Resources: ``flow://definition`` (the flow without credential references), ``flow://chunks`` (an index by
  source) and ``flow://chunks/{source}`` (that source's chunks with offsets).
- Prompts: one per ``prompt.template`` node; its ``{variables}`` are the arguments.

Every text that leaves goes through :func:`flowbuilder.trust.secrets.mask_secrets`, so neither a bound credential
value nor a key sitting in the indexed files (by shape, field name or entropy, as the importer detects them)
appears in a tool result, a resource or an error.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import quote, unquote

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from flowbuilder import __version__
from flowbuilder.errors import FlowbuilderError
from flowbuilder.serving.service import MAX_K, FlowService, SearchEndpoint
from flowbuilder.trust.secrets import mask_secrets, mask_secrets_obj
from flowbuilder.trust.terminal import excerpt


class SearchHit(BaseModel):
    """One hit of a search tool's result."""

    rank: int
    score: float
    text: str
    source: str
    record_id: str | None = None
    id: str = ""
    start: int | None = None
    end: int | None = None


class SearchOutput(BaseModel):
    """A search tool's structured result: the query and its hits."""

    tool: str
    node: str
    query: str
    k: int
    hits: list[SearchHit]


class Source(BaseModel):
    """A passage the answer was given."""

    node: str
    score: float | None = None
    text: str = ""
    source: str | None = None
    record_id: str | None = None


class AskOutput(BaseModel):
    """The ``ask`` tool's structured result: the answer (or why none) and its sources."""

    question: str
    ok: bool
    answer: str | None
    error: str | None = None
    answer_node: str | None = None
    sources: list[Source]


def _fail(exc: Exception) -> ToolError:
    return ToolError(mask_secrets(str(exc)))


async def _chunks(service: FlowService) -> dict[str, list[dict[str, Any]]]:
    """The flow's chunks for a resource read; a failure is one line to the client (a ``ResourceError``: the SDK
    logs it without a traceback), never a crash."""
    try:
        return await anyio.to_thread.run_sync(service.chunks)
    except FlowbuilderError as exc:
        raise ResourceError(mask_secrets(str(exc))) from None


def _search_tool(service: FlowService, endpoint: SearchEndpoint) -> Any:
    async def search(
        query: Annotated[str, Field(description="What to search for, in plain words.")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many passages to return.")] = endpoint.default_k,
    ) -> Annotated[CallToolResult, SearchOutput]:
        try:
            result = await anyio.to_thread.run_sync(lambda: service.search(query, k, endpoint.name))
        except FlowbuilderError as exc:
            raise _fail(exc) from None
        data = mask_secrets_obj(result.to_json())
        return CallToolResult(
            content=[TextContent(type="text", text=mask_secrets(result.to_text()))],
            structured_content=data,
        )

    search.__name__ = endpoint.name
    return search


def _ask_tool(service: FlowService) -> Any:
    async def ask(
        question: Annotated[str, Field(description="The question to answer from the flow's documents.")],
    ) -> Annotated[CallToolResult, AskOutput]:
        try:
            result = await anyio.to_thread.run_sync(lambda: service.ask(question))
        except FlowbuilderError as exc:
            raise _fail(exc) from None
        data = mask_secrets_obj(result.to_json())
        assert isinstance(data, dict)
        if result.ok:
            lines = [result.answer or "", "", "Sources:"]
            lines += [
                f"- {s.get('source') or 'unknown'}"
                + (f", {s['record_id']}" if s.get("record_id") else "")
                + (f" (score {float(s['score']):.4f})" if isinstance(s.get("score"), int | float) else "")
                for s in result.sources
            ]
            text = "\n".join(lines)
        else:
            text = f"The flow could not answer: {result.error}"
        return CallToolResult(
            content=[TextContent(type="text", text=mask_secrets(text))],
            structured_content=data,
            is_error=not result.ok,
        )

    return ask


def _prompt(service: FlowService, node_id: str) -> Prompt:
    endpoint = next(p for p in service.prompts if p.node_id == node_id)

    async def render(**values: str) -> str:
        return mask_secrets(await anyio.to_thread.run_sync(lambda: service.render_prompt(node_id, values)))

    return Prompt(
        name=endpoint.name,
        description=endpoint.description,
        arguments=[
            PromptArgument(name=v, description=f"Value for {{{v}}} in the template.", required=False)
            for v in endpoint.variables
        ],
        fn=render,
    )


def build_mcp_server(service: FlowService) -> MCPServer[Any]:
    """An MCP server (the official SDK) offering the service's search tools, ``ask``, the chunks and the flow as
    resources and its prompt templates as prompts."""
    summary = service.summary()
    server: MCPServer[Any] = MCPServer(
        name=f"flowbuilder: {service.flow.name}",
        version=__version__,
        instructions=(
            f"Retrieval over the Flowbuilder flow '{service.flow.name}'. Search tools: "
            + (", ".join(t["name"] for t in summary["search_tools"]) or "none")
            + (f"; '{summary['ask']}' answers a question with the flow's model." if summary["ask"] else ".")
        ),
        log_level="WARNING",
    )
    for endpoint in service.searches:
        server.add_tool(
            _search_tool(service, endpoint),
            name=endpoint.name,
            description=endpoint.description,
            structured_output=True,
        )
    if service.ask_enabled:
        server.add_tool(_ask_tool(service), name=service.ask_name, description=service.ask_description)

    @server.resource(
        "flow://definition",
        name="flow-definition",
        description="The flow definition (nodes, config, edges) without credential references.",
        mime_type="application/json",
    )
    def definition() -> str:
        return json.dumps(service.flow_definition(), indent=2, ensure_ascii=False)

    @server.resource(
        "flow://chunks",
        name="chunks-index",
        description="The sources the flow indexes, with chunk counts and the URI of each source's chunks.",
        mime_type="application/json",
    )
    async def chunk_index() -> str:
        chunks = await _chunks(service)
        index = [
            {"source": source, "chunks": len(items), "uri": f"flow://chunks/{quote(source, safe='')}"}
            for source, items in sorted(chunks.items())
        ]
        return json.dumps(mask_secrets_obj(index), indent=2, ensure_ascii=False)

    @server.resource(
        "flow://chunks/{source}",
        name="chunks",
        description="Every chunk of one source as the flow indexes it, with chunk_index and start/end offsets.",
        mime_type="application/json",
    )
    async def source_chunks(source: str) -> str:
        chunks = await _chunks(service)
        name = unquote(source)
        if name not in chunks:
            shown = excerpt(mask_secrets(name), 80)
            raise ResourceNotFoundError(f"no chunks from source '{shown}'; read flow://chunks for the sources.")
        return json.dumps(mask_secrets_obj({"source": name, "chunks": chunks[name]}), ensure_ascii=False)

    for prompt in service.prompts:
        server.add_prompt(_prompt(service, prompt.node_id))
    return server
