"""``tool.mcp``: give an agent the tools of an external MCP server (stdio command or Streamable HTTP URL).

The node connects once per run to list the server's tools and keeps all, the selected ones, or all
except the selected ones; each becomes a Tool service for ``agent.tools``. Every tool call opens its own
short MCP session (a subprocess for stdio), so nothing stays running between runs. A secret (bearer
token, API key) comes from the ``token`` credential slot like any other credential and is sent as a
header (HTTP) or an environment variable (stdio); it is never saved in the flow and is masked in output.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypedDict, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param
from flowbuilder.formats.n8n_table import LC, mcp_include, mcp_selection
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.io import NoInputs
from flowbuilder.portvalues import Tools
from flowbuilder.registry import register_node
from flowbuilder.services import Tool
from flowbuilder.trust.egress import Destination
from flowbuilder.trust.providers import CredentialSlot
from flowbuilder.trust.secrets import redact
from flowbuilder.trust.terminal import excerpt, quote_argv

T = TypeVar("T")
_TOOL_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class McpToolConfig(BaseModel):
    """Settings of ``tool.mcp``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    transport: Literal["stdio", "http"] = Field("stdio", description="Launch a command (stdio) or call a URL (http).")
    command: str = Field("", description="stdio: the program to launch, e.g. npx, uvx or flowbuilder.")
    args: list[str] = Field(default_factory=list, description='stdio: its arguments, e.g. ["mcp", "flow.json"].')
    env: dict[str, str] = Field(
        default_factory=dict, description="stdio: extra environment variables (not secrets: use the token slot)."
    )
    cwd: str = Field(
        "", description="stdio: working folder (relative to the flow file).", json_schema_extra={"advanced": True}
    )
    url: str = Field("", description="http: the server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp.")
    headers: dict[str, str] = Field(
        default_factory=dict, description="http: extra headers (not secrets: use the token slot)."
    )
    token_header: str = Field(
        "Authorization", description="http: header that carries the bound token.", json_schema_extra={"advanced": True}
    )
    token_prefix: str = Field(
        "Bearer ", description="http: text before the token in that header.", json_schema_extra={"advanced": True}
    )
    token_env: str = Field(
        "",
        description="stdio: environment variable that receives the bound token.",
        json_schema_extra={"advanced": True},
    )
    selection: Literal["all", "selected", "all_except"] = Field(
        "all", description="Which of the server's tools the agent gets."
    )
    tools: list[str] = Field(default_factory=list, description="Tool names for 'selected' or 'all_except'.")
    name_prefix: str = Field(
        "",
        description="Prepended to every tool name (avoids clashes between servers).",
        json_schema_extra={"advanced": True},
    )
    timeout: float = Field(60.0, gt=0, description="Seconds to wait for the server per call.")


def resolve_command(config: McpToolConfig, base_dir: Path | None) -> tuple[str, Path]:
    """``(program, folder)`` a stdio server starts as: the folder made absolute (``cwd`` against the flow's
    folder; empty = the flow's folder) and the command resolved to the absolute program it names (a path
    against that folder, a bare name through PATH; a name not found is left as it is)."""
    import os
    import shutil

    from flowbuilder.trust.places import resolve_path

    base = (base_dir or Path.cwd()).absolute()
    try:
        folder = resolve_path(config.cwd, base).absolute() if config.cwd else base
    except (NodeError, OSError, RuntimeError, ValueError):  # an unusable folder: the start fails, clearly
        folder = base / config.cwd
    command = config.command.strip()
    if os.sep in command or (os.altsep and os.altsep in command):
        return os.path.abspath(folder / os.path.expanduser(command)), folder
    found = shutil.which(command)
    return (os.path.abspath(found) if found else command), folder


def run_async(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from synchronous node code, also when this thread already runs an event loop."""
    import anyio

    async def main() -> T:
        return await make()

    try:
        import asyncio

        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(main)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = anyio.run(main)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=work, name="flowbuilder-mcp-client", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return cast(T, box["value"])


class McpConnection:
    """How to reach one MCP server; opens a fresh client session per use."""

    def __init__(self, config: McpToolConfig, token: str | None, base_dir: Path | None) -> None:
        self.config = config
        self._token = token
        self.base_dir = base_dir

    @property
    def label(self) -> str:
        c = self.config
        return c.url if c.transport == "http" else " ".join([c.command, *c.args])

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Any]:
        from mcp import ClientSession

        c = self.config
        if c.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = dict(c.headers)
            if self._token:
                headers[c.token_header] = f"{c.token_prefix}{self._token}"
            async with (
                httpx2.AsyncClient(headers=headers, timeout=c.timeout) as http,
                streamable_http_client(c.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session
        else:
            import sys

            from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

            env = {**get_default_environment(), **c.env}
            if self._token and c.token_env:
                env[c.token_env] = self._token
            program, cwd = resolve_command(c, self.base_dir)  # exactly what the approval names
            params = StdioServerParameters(command=program, args=list(c.args), env=env, cwd=cwd)
            async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session

    def list_tools(self) -> list[Any]:
        async def work() -> list[Any]:
            async with self.session() as session:
                result = await session.list_tools()
                return list(result.tools)

        return self._guard(work)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        async def work() -> Any:
            async with self.session() as session:
                return await session.call_tool(name, arguments, read_timeout_seconds=self.config.timeout)

        return self._guard(work)

    def _guard(self, work: Callable[[], Awaitable[T]]) -> T:
        try:
            return run_async(work)
        except NodeError:
            raise
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            cause = _root_cause(exc)
            raise ProviderError(
                "MCP",
                f"cannot talk to the MCP server {excerpt(self.label, 120)!r}: {type(cause).__name__}: "
                f"{excerpt(redact(str(cause)), 200)}. "
                "Check the command/URL and that the server is running.",
            ) from None


def _root_cause(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio task groups wrap transport errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class McpTool:
    """One tool of an MCP server as a Tool service for ``agent.tools``."""

    def __init__(
        self, connection: McpConnection, remote_name: str, name: str, description: str, schema: dict[str, Any]
    ):
        self.connection = connection
        self.remote_name = remote_name
        self.name = name
        self.description = description
        self._schema = schema

    def parameters_schema(self) -> dict[str, Any]:
        return self._schema

    def call(self, arguments: dict[str, Any]) -> str:
        result = self.connection.call_tool(self.remote_name, arguments if isinstance(arguments, dict) else {})
        texts = [str(getattr(block, "text", "")) for block in getattr(result, "content", []) or []]
        text = "\n".join(t for t in texts if t)
        structured = getattr(result, "structured_content", None)
        if not text and structured is not None:
            text = json.dumps(structured, ensure_ascii=False)
        if getattr(result, "is_error", False):
            return redact(f"Error from MCP tool '{self.remote_name}': {text or 'no details'}")
        return redact(text)


class McpToolOut(TypedDict):
    """The output ports of ``tool.mcp``."""

    tool: Annotated[Tools, "The server's tools, for agent.tools."]


@register_node
class McpToolNode(Node[McpToolConfig, NoInputs, McpToolOut]):
    """Give an agent the tools of an MCP server (stdio command or HTTP URL); all, selected or all-except."""

    type_name = "tool.mcp"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "tool.mcp",
                LC + "mcpClientTool",
                (1, 1.1, 1.2, 1.3, 1.4),
                outputs={"tool": "ai_tool"},
                hook="mcp",
                preset={"transport": "http"},
                export_version=1.2,
                params=(
                    Param("url", "endpointUrl", ""),
                    Param("url", "sseEndpoint", "", export=False),
                    Param("selection", "include", "all", to_ours=mcp_selection, to_theirs=mcp_include),
                ),
                fixed={"serverTransport": "httpStreamable", "options": {}},
                ignore=("serverTransport", "authentication", "options", "includeTools", "excludeTools"),
            ),
        ),
        "langflow": (
            # LangFlow's MCP Tools in tool mode: the "mcp" hook reads the server's command or URL from the
            # mcp_server value ({name, config}). Import only: tool.mcp exports as a FlowbuilderNode (lossless).
            Adapter(
                "tool.mcp",
                "MCPTools",
                display="MCP Tools",
                hook="mcp",
                export=False,
                outputs={"tool": "component_as_tool"},
                ignore=("mcp_server", "tool", "tool_placeholder", "tools_metadata", "tool_mode"),
                replace="tool.mcp (the export names a server in LangFlow's MCP settings only: set its command or URL)",
                extra={"outputs": (LF.out("component_as_tool", "Toolset", ("Tool",), "to_toolkit"),)},
            ),
        ),
    }
    display_name = "MCP Tool"
    aliases = ("MCP Client Tool", "MCP", "tool")
    category = "Agents"
    Config = McpToolConfig
    credential_slots = (
        CredentialSlot(
            "token",
            "mcp",
            field="token",
            required=False,
            description="Secret for the server: sent in token_header (http) or as env var token_env (stdio).",
        ),
    )
    cacheable = False  # the server's tool list can change between runs

    @classmethod
    def command_line(cls, config: McpToolConfig, base_dir: Path | None = None) -> str | None:
        if config.transport != "stdio" or not config.command.strip():
            return None
        # The environment, the program the name resolves to and the folder change what runs, so an
        # approval covers them all: `bash run.sh` approved in one folder is not `bash run.sh` in another.
        program, folder = resolve_command(config, base_dir)
        env = [f"{key}={value}" for key, value in sorted(config.env.items())]
        return f"{quote_argv([*env, program, *config.args])} (in {folder})"

    @classmethod
    def destinations(cls, config: McpToolConfig) -> list[Destination]:
        if config.transport != "http" or not config.url.strip():
            return []
        return [Destination("url", config.url, "mcp", always_ask=True)]

    def run(self, inputs: NoInputs, ctx: RunContext) -> McpToolOut:
        c = self.config
        if c.transport == "http" and not c.url.strip():
            raise NodeError(
                "transport is 'http' but 'url' is empty: give the server's endpoint, e.g. http://127.0.0.1:8765/mcp."
            )
        if c.transport == "stdio" and not c.command.strip():
            raise NodeError("transport is 'stdio' but 'command' is empty: give the program that starts the server.")
        if c.selection != "all" and not c.tools:
            raise NodeError(f"selection is '{c.selection}' but 'tools' is empty: list the tool names.")
        connection = McpConnection(c, ctx.secret("token") if ctx.has_secret("token") else None, ctx.base_dir)
        remote = connection.list_tools()
        available = [t.name for t in remote]
        unknown = sorted(set(c.tools) - set(available))
        if unknown:
            raise NodeError(
                f"the MCP server has no tool(s) {', '.join(unknown)}; it offers: {', '.join(available) or 'none'}."
            )
        keep = [
            t
            for t in remote
            if c.selection == "all"
            or (c.selection == "selected" and t.name in c.tools)
            or (c.selection == "all_except" and t.name not in c.tools)
        ]
        if not keep:
            raise NodeError(
                f"no tools left after selection '{c.selection}'; the server offers: {', '.join(available)}."
            )
        tools = [
            McpTool(
                connection,
                t.name,
                _TOOL_NAME.sub("_", c.name_prefix + t.name)[:64],
                t.description or f"The MCP tool {t.name}.",
                dict(t.input_schema or {"type": "object", "properties": {}}),
            )
            for t in keep
        ]
        ctx.details["server"] = redact(connection.label)
        ctx.details["offered"] = available
        ctx.details["tools"] = [{"name": t.name, "remote": t.remote_name, "description": t.description} for t in tools]
        toolkit: list[Tool] = list(tools)
        return {"tool": toolkit[0] if len(toolkit) == 1 else toolkit}

    def summarize(self, outputs: McpToolOut) -> str:
        value = outputs["tool"]
        tools = value if isinstance(value, list) else [value]
        return f"{len(tools)} MCP tool(s): " + ", ".join(t.name for t in tools)
