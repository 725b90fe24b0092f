"""``flowbuilder mcp FLOW``: serve a flow's tools, resources and prompts over MCP on stdio."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flowbuilder.commands._common import add_cred_option, resolver_for


def register(subparsers: Any) -> None:
    """Add ``flowbuilder mcp`` (serve a flow as an MCP server on stdio) to the CLI's subcommands."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve a flow as an MCP server on stdio",
        description=(
            "Serve a flow over the Model Context Protocol on stdin/stdout (what Claude Desktop, Cursor or "
            "LangFlow launch): a search tool per retrieval node, 'ask' when the flow has a model, the chunks "
            "and the flow as resources, prompt templates as prompts. Progress goes to stderr."
        ),
    )
    parser.add_argument("flow", help="a Flowbuilder flow file (.json)")
    parser.add_argument("--no-warm-up", action="store_true", help="ingest on the first call instead of at start")
    add_cred_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run ``flowbuilder mcp`` with the parsed arguments (serve a flow as an MCP server on stdio); returns the exit
    code."""
    from flowbuilder.formats.native import load_flow
    from flowbuilder.serving.mcp_server import build_mcp_server
    from flowbuilder.serving.service import FlowService

    service = FlowService(args.flow, resolver=resolver_for(args, load_flow(args.flow)), log=sys.stderr)
    server = build_mcp_server(service)
    if not args.no_warm_up:
        service.start_warm_up()
    server.run(transport="stdio")
    return 0
