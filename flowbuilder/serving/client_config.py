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
    return "flowbuilder-" + (re.sub(r"[^a-z0-9]+", "-", flow_name.lower()).strip("-") or "flow")


def stdio_config(flow_name: str, flow_path: Path) -> dict[str, Any]:
    return {"mcpServers": {server_key(flow_name): {"command": "flowbuilder", "args": ["mcp", str(flow_path)]}}}


def http_config(flow_name: str, base_url: str, token: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "http", "url": base_url.rstrip("/") + "/mcp"}
    if token:
        entry["headers"] = {"Authorization": f"Bearer {TOKEN_PLACEHOLDER}"}
    return {"mcpServers": {server_key(flow_name): entry}}


def curl_example(base_url: str, question: str, k: int, token: bool) -> str:
    query = urlencode({"q": question, "k": k})
    auth = f"-H 'Authorization: Bearer {TOKEN_PLACEHOLDER}' " if token else ""
    return f"curl -s {auth}{shlex.quote(base_url.rstrip('/') + '/search?' + query)}"


def pretty(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
