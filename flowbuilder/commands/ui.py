"""``flowbuilder ui [FLOW]``: serve the visual builder (NiceGUI) on 127.0.0.1."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import Any

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ui",
        help="open the visual builder in the browser",
        description="Serve the visual builder. With no FLOW it opens the demo flow (row-labelled CSV RAG).",
    )
    parser.add_argument("flow", nargs="?", help="a native flow file to open")
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument(
        "--workspace", default="flowbuilder-workspace", help="folder for saved flows (default ./flowbuilder-workspace)"
    )
    parser.set_defaults(handler=handle)


def _port_free(host: str, port: int) -> bool:
    """Whether the server can bind; checked first so a busy port is one clear line, not a server error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def handle(args: argparse.Namespace) -> int:
    from flowbuilder.cli import UsageError

    flow_path = Path(args.flow) if args.flow else None
    if flow_path is not None:
        from flowbuilder.formats.native import load_flow

        load_flow(flow_path)  # a bad file fails here with one clear message, before the server starts
    if args.host not in LOCAL_HOSTS:
        print(
            f"warning: serving on {args.host}: anyone who can reach this address can run flows and use the "
            "credentials bound in the page. Use --host 127.0.0.1 unless you mean it.",
            file=sys.stderr,
        )
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {args.port}.")
    if not _port_free(args.host, args.port):
        raise UsageError(f"port {args.port} on {args.host} is already in use; pick another with --port.")
    from nicegui import ui  # imported only here: the core never imports nicegui

    from flowbuilder.ui.app import register_pages

    workspace = Path(args.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    register_pages(workspace=workspace, flow_path=flow_path)
    print(f"Flowbuilder UI on http://{args.host}:{args.port}  (workspace: {workspace.resolve()})", file=sys.stderr)
    ui.run(host=args.host, port=args.port, title="Flowbuilder", reload=False, show=False)
    return 0
