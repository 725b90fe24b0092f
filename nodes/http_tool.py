"""``tool.http``: give an agent one HTTP API to call (n8n's HTTP Request tool).

The config names the request: method, URL, query, headers and body. Any ``{name}`` in them is a
parameter the model fills when it calls the tool (n8n's placeholders and ``$fromAI`` values become
these); nothing else is ever filled in or evaluated. The server is the one the URL names, and only it:
a parameter may change the path or the query but never the scheme, host or port, redirects are not
followed, and the egress check refuses the node until the user approved that origin (the flow file
chose it, so even this machine needs approval). A secret (bearer token, API key) comes from the
``token`` credential slot and is sent in ``token_header``; it is never saved in the flow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypedDict
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.errors import EndpointError, NodeError, ProviderError
from flowbuilder.formats import http_tool_params as H
from flowbuilder.formats.adapters import NO_DEFAULT, Adapter, Mappings, Param, nonempty_str
from flowbuilder.formats.n8n_table import BASE, LC
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.io import NoInputs
from flowbuilder.portvalues import Tools
from flowbuilder.registry import register_node
from flowbuilder.trust.egress import Destination, parse_endpoint
from flowbuilder.trust.providers import CredentialSlot
from flowbuilder.trust.secrets import redact
from flowbuilder.trust.terminal import excerpt

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,63})\}")
_TOOL_NAME = re.compile(r"[^a-zA-Z0-9_-]")
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]


class HttpToolConfig(BaseModel):
    """Settings of ``tool.http``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("http_request", description="The tool's name as the model sees it.")
    description: str = Field(
        "Calls an HTTP API and returns its response.",
        description="What the tool does and when to use it (the model reads this).",
    )
    method: Method = Field("GET", description="HTTP method.")
    url: str = Field(
        "",
        description="The address to call, e.g. https://api.example.com/items/{id}; {name} is filled by the model "
        "(only in the path or query, never the host).",
    )
    query: dict[str, str] = Field(default_factory=dict, description="Query parameters; values may hold {name}.")
    headers: dict[str, str] = Field(
        default_factory=dict, description="Extra headers (not secrets: use the token slot); values may hold {name}."
    )
    body: str = Field("", description="Request body (JSON or text) for POST/PUT/PATCH; may hold {name}.")
    placeholders: dict[str, str] = Field(
        default_factory=dict, description="What each {name} means (the model reads this); names not listed still work."
    )
    token_header: str = Field(
        "Authorization", description="Header that carries the bound token.", json_schema_extra={"advanced": True}
    )
    token_prefix: str = Field(
        "Bearer ", description="Text before the token in that header.", json_schema_extra={"advanced": True}
    )
    timeout: float = Field(30.0, gt=0, le=600, description="Seconds to wait for the server per call.")
    max_chars: int = Field(4000, ge=100, le=200_000, description="Longest response text given to the model.")


def parameter_names(config: HttpToolConfig) -> list[str]:
    """Every ``{name}`` the request uses, in the order they appear."""
    texts = [config.url, *config.query.values(), *config.headers.values(), config.body]
    names: list[str] = []
    for text in texts:
        for name in PLACEHOLDER.findall(text):
            if name not in names:
                names.append(name)
    return names


def _fill(text: str, values: dict[str, str], encode: bool = False) -> str:
    return PLACEHOLDER.sub(lambda m: quote(values[m.group(1)], safe="") if encode else values[m.group(1)], text)


def fixed_origin(config: HttpToolConfig) -> str:
    """The origin every call goes to; :class:`EndpointError` when the URL is unusable or a parameter
    could change the server (``https://{host}/x``)."""
    names = parameter_names(config)
    one = parse_endpoint(_fill(config.url, dict.fromkeys(names, "a"), encode=True)).origin
    two = parse_endpoint(_fill(config.url, dict.fromkeys(names, "b"), encode=True)).origin
    if one != two:
        raise EndpointError(
            f"'{excerpt(config.url, 80)}' lets the model choose the server: keep {{names}} out of the host"
        )
    return one


class HttpTool:
    """The configured request as a Tool service for ``agent.tools``."""

    def __init__(self, config: HttpToolConfig, token: str | None) -> None:
        self.config = config
        self.name = _TOOL_NAME.sub("_", config.name.strip() or "http_request")[:64]
        self.description = config.description.strip() or f"Calls {config.method} {config.url}."
        self.parameters = parameter_names(config)
        self.origin = fixed_origin(config)
        self._token = token
        self.calls: list[dict[str, Any]] = []

    def parameters_schema(self) -> dict[str, Any]:
        properties = {
            name: {"type": "string", "description": self.config.placeholders.get(name, f"Value for {{{name}}}.")}
            for name in self.parameters
        }
        return {"type": "object", "properties": properties, "required": list(self.parameters)}

    def request(self, arguments: dict[str, Any]) -> tuple[str, str, dict[str, str], dict[str, str], str]:
        """``(method, url, query, headers, body)`` for one call; :class:`NodeError` names what is missing."""
        args = arguments if isinstance(arguments, dict) else {}
        missing = [name for name in self.parameters if args.get(name) in (None, "")]
        if missing:
            raise NodeError(f"the call gave no value for {', '.join(missing)}; give every parameter")
        values = {name: str(args[name]) for name in self.parameters}
        c = self.config
        url = _fill(c.url, values, encode=True)
        if parse_endpoint(url).origin != self.origin:  # fixed_origin makes this unreachable; kept as the guard
            raise NodeError(f"the call would leave {self.origin}")
        query = {k: _fill(v, values) for k, v in c.query.items()}
        headers = {k: _fill(v, values) for k, v in c.headers.items()}
        body = _fill(c.body, values) if c.method in ("POST", "PUT", "PATCH") else ""
        if self._token:
            headers[c.token_header] = f"{c.token_prefix}{self._token}"
        return c.method, url, query, headers, body

    def call(self, arguments: dict[str, Any]) -> str:
        import httpx

        method, url, query, headers, body = self.request(arguments)
        content: bytes | None = body.encode() if body else None
        if body and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json" if _is_json(body) else "text/plain; charset=utf-8"
        try:
            response = httpx.request(
                method,
                url,
                params=query or None,
                headers=headers,
                content=content,
                timeout=self.config.timeout,
                follow_redirects=False,
            )
        except httpx.HTTPError as exc:
            raise ProviderError("http", f"{method} {self.origin} failed: {excerpt(redact(str(exc)), 160)}") from None
        record = {"method": method, "url": redact(str(response.request.url)), "status": response.status_code}
        self.calls.append(record)
        if response.is_redirect:
            target = excerpt(response.headers.get("location", ""), 120)
            return f"HTTP {response.status_code}: the server redirects to {target}; this tool calls only {self.origin}"
        text = _response_text(response.text, response.headers.get("content-type", ""))
        if len(text) > self.config.max_chars:
            text = text[: self.config.max_chars] + f"\n[... cut at {self.config.max_chars} characters]"
        if response.status_code >= 400:
            return redact(f"HTTP {response.status_code} from {method} {self.origin}: {text}")
        return redact(text)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _response_text(text: str, content_type: str) -> str:
    if "json" in content_type:
        try:
            return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
        except ValueError:
            return text
    return text


class HttpToolOut(TypedDict):
    """The output ports of ``tool.http``."""

    tool: Annotated[Tools, "The request as a tool, for agent.tools."]


@register_node
class HttpToolNode(Node[HttpToolConfig, NoInputs, HttpToolOut]):
    """Give an agent one HTTP API to call; the model fills the {name} parameters, never the server."""

    type_name = "tool.http"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            # HTTP Request as an agent tool: the LangChain tool (placeholders, key/value lists) and the core
            # node used as a tool ($fromAI values); the "http_tool" hook turns $fromAI into {name} templates.
            Adapter(
                "tool.http",
                LC + "toolHttpRequest",
                (1, 1.1),
                outputs={"tool": "ai_tool"},
                hook="http_tool",
                params=(
                    Param("description", "toolDescription", "", to_ours=nonempty_str),
                    Param("method", "method", "GET"),
                    Param("url", "url", NO_DEFAULT),
                    Param("query", "parametersQuery", NO_DEFAULT, to_ours=H.tool_pairs, to_theirs=H.tool_pairs_back),
                    Param("query", "sendQuery", False, to_ours=H.never, to_theirs=bool),
                    Param(
                        "headers", "parametersHeaders", NO_DEFAULT, to_ours=H.tool_pairs, to_theirs=H.tool_pairs_back
                    ),
                    Param("headers", "sendHeaders", False, to_ours=H.never, to_theirs=bool),
                    Param("body", "jsonBody", NO_DEFAULT, to_ours=nonempty_str, to_theirs=nonempty_str),
                    Param("body", "parametersBody", NO_DEFAULT, to_ours=H.tool_body, export=False),
                    Param("body", "sendBody", False, to_ours=H.never, to_theirs=bool),
                    Param("body", "specifyBody", "keypair", to_ours=H.never, to_theirs=H.json_if_any),
                    Param(
                        "placeholders",
                        "placeholderDefinitions",
                        NO_DEFAULT,
                        to_ours=H.placeholders,
                        to_theirs=H.placeholders_back,
                    ),
                ),
                ignore=(
                    "notice",
                    "placeholderNotice",
                    "sendQuery",
                    "sendHeaders",
                    "sendBody",
                    "specifyBody",
                    "authentication",
                    "genericAuthType",
                    "nodeCredentialType",
                    "specifyQuery",
                    "specifyHeaders",
                    "optimizeResponse",
                    "responseType",
                    "dataField",
                    "fieldsToInclude",
                    "fields",
                    "cssSelector",
                    "onlyContent",
                    "elementsToOmit",
                    "truncateResponse",
                    "maxLength",
                ),
                note="an HTTP API the agent may call: approve its server before a run (validate names it)",
            ),
            Adapter(
                "tool.http",
                BASE + "httpRequestTool",
                (4, 4.1, 4.2, 4.3, 4.4),
                outputs={"tool": "ai_tool"},
                hook="http_tool",
                export=False,
                params=(
                    Param("description", "toolDescription", "", to_ours=nonempty_str),
                    Param("method", "method", "GET"),
                    Param("url", "url", NO_DEFAULT),
                    Param("query", "queryParameters", NO_DEFAULT, to_ours=H.core_pairs),
                    Param("headers", "headerParameters", NO_DEFAULT, to_ours=H.core_pairs),
                    Param("body", "jsonBody", NO_DEFAULT, to_ours=nonempty_str),
                    Param("body", "bodyParameters", NO_DEFAULT, to_ours=H.core_body),
                ),
                ignore=(
                    "sendQuery",
                    "sendHeaders",
                    "sendBody",
                    "specifyQuery",
                    "specifyHeaders",
                    "specifyBody",
                    "contentType",
                    "options",
                    "authentication",
                    "genericAuthType",
                    "nodeCredentialType",
                    "descriptionType",
                ),
                note="an HTTP API the agent may call: approve its server before a run (validate names it)",
            ),
        ),
    }
    display_name = "HTTP Request Tool"
    aliases = ("HTTP Request Tool", "HTTP Request", "API tool", "toolHttpRequest")
    category = "Agents"
    Config = HttpToolConfig
    credential_slots = (
        CredentialSlot(
            "token", "http", field="token", required=False, description="Secret for the API, sent in token_header."
        ),
    )
    cacheable = False  # the tool's answers come from a live server

    @classmethod
    def destinations(cls, config: HttpToolConfig) -> list[Destination]:
        if not config.url.strip():
            return []
        try:
            origin = fixed_origin(config)
        except EndpointError as exc:
            raise ValueError(str(exc)) from None
        return [Destination("url", origin, "http", always_ask=True, kind=cls.type_name)]

    @classmethod
    def config_problems(cls, config: HttpToolConfig) -> list[tuple[str | None, str]]:
        if not config.url.strip():
            return [(None, "'url' is empty: give the address to call, e.g. https://api.example.com/search")]
        return []

    def run(self, inputs: NoInputs, ctx: RunContext) -> HttpToolOut:
        c = self.config
        if not c.url.strip():
            raise NodeError("'url' is empty: give the address to call, e.g. https://api.example.com/search")
        try:
            tool = HttpTool(c, ctx.secret("token") if ctx.has_secret("token") else None)
        except EndpointError as exc:
            raise NodeError(f"'url': {exc}") from None
        ctx.details["tool"] = {
            "name": tool.name,
            "method": c.method,
            "origin": tool.origin,
            "parameters": tool.parameters,
        }
        ctx.details["calls"] = tool.calls
        return {"tool": tool}

    def summarize(self, outputs: Mapping[str, Any]) -> str:
        tool = outputs.get("tool")
        if not isinstance(tool, HttpTool):
            return "no tool"
        return f"HTTP tool {tool.name}: {tool.config.method} {tool.origin}"
