"""What a user pastes into an MCP client (Claude Desktop, Cursor, LangFlow) to use a served flow."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

TOKEN_PLACEHOLDER = "YOUR_TOKEN"
"""Shown instead of the token: the builder never displays a secret."""


def server_key(flow_name: str) -> str:
    """The MCP server's name in a client's configuration (from the flow's name)."""
    return "flowbuilder-" + (re.sub(r"[^a-z0-9]+", "-", flow_name.lower()).strip("-") or "flow")


def stdio_config(flow_name: str, flow_path: Path) -> dict[str, Any]:
    """What to paste into an MCP client to launch ``flowbuilder mcp`` on this flow (stdio)."""
    return {"mcpServers": {server_key(flow_name): {"command": "flowbuilder", "args": ["mcp", str(flow_path)]}}}


def http_config(flow_name: str, base_url: str, token: bool) -> dict[str, Any]:
    """What to paste into an MCP client to reach a running ``flowbuilder serve`` (HTTP, with the token header when one
    is set)."""
    entry: dict[str, Any] = {"type": "http", "url": base_url.rstrip("/") + "/mcp"}
    if token:
        entry["headers"] = {"Authorization": f"Bearer {TOKEN_PLACEHOLDER}"}
    return {"mcpServers": {server_key(flow_name): entry}}


def curl_example(base_url: str, question: str, k: int, token: bool) -> str:
    """A curl command that searches the served flow."""
    query = urlencode({"q": question, "k": k})
    auth = f"-H 'Authorization: Bearer {TOKEN_PLACEHOLDER}' " if token else ""
    return f"curl -s {auth}{shlex.quote(base_url.rstrip('/') + '/search?' + query)}"


def pretty(data: dict[str, Any]) -> str:
    """JSON as a person reads it (indented)."""
    return json.dumps(data, indent=2, ensure_ascii=False)
