"""A tiny MCP server on stdio for the tool.mcp tests (official SDK)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server: MCPServer = MCPServer(name="tiny")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@server.tool()
def token_length() -> str:
    """How long the token in TINY_TOKEN is (never the token itself)."""
    return f"token length {len(os.environ.get('TINY_TOKEN', ''))}"


if __name__ == "__main__":
    server.run(transport="stdio")
