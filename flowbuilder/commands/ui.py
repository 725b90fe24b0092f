"""``flowbuilder ui [FLOW]``: serve the visual builder (NiceGUI) on 127.0.0.1."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import Any

from flowbuilder.cluster import add_ray_option, cluster_from_args
from flowbuilder.commands._common import add_allow_path_option
from flowbuilder.trust.netguard import check_bind
from flowbuilder.trust.policy import TrustPolicy

TOKEN_COOKIE = "flowbuilder_token"
UPLOAD_LIMIT_BYTES = 25 * 1024 * 1024
"""Largest request body the server reads: a 20 MB flow file plus multipart overhead."""


def register(subparsers: Any) -> None:
    """Add ``flowbuilder ui`` (open the visual builder in the browser) to the CLI's subcommands."""
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
        "--token",
        default=None,
        help="required with a non-loopback --host: open http://HOST:PORT/?token=TOKEN once in the browser",
    )
    parser.add_argument(
        "--workspace", default="flowbuilder-workspace", help="folder for saved flows (default ./flowbuilder-workspace)"
    )
    add_allow_path_option(parser)
    add_ray_option(parser)
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
    """Run ``flowbuilder ui`` with the parsed arguments (open the visual builder in the browser); returns the
    exit code."""
    from flowbuilder.cli import UsageError

    flow_path = Path(args.flow) if args.flow else None
    if flow_path is not None:
        from flowbuilder.formats.native import load_flow

        load_flow(flow_path)  # a bad file fails here with one clear message, before the server starts
    check_bind(args.host, args.token)  # another machine may reach it: only with a token
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {args.port}.")
    if not _port_free(args.host, args.port):
        raise UsageError(f"port {args.port} on {args.host} is already in use; pick another with --port.")
    from nicegui import app, ui  # imported only here: the core never imports nicegui

    from flowbuilder.ui.app import register_pages

    workspace = Path(args.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    cluster = cluster_from_args(args)  # a flow writing an embedded store is refused when it runs, in one line
    register_pages(workspace=workspace, flow_path=flow_path, allowed_paths=args.allow_path, cluster=cluster)
    # Outermost first: Host/Origin (DNS rebinding) and the token, then the body limit (uploads included).
    guard = TrustPolicy.http_middleware(
        host=args.host, token=args.token, max_bytes=UPLOAD_LIMIT_BYTES, cookie_name=TOKEN_COOKIE, navigations=True
    )
    for middleware, options in guard:  # innermost first: the last added runs first
        app.add_middleware(middleware, **options)
    print(f"Flowbuilder UI on http://{args.host}:{args.port}  (workspace: {workspace.resolve()})", file=sys.stderr)
    ui.run(host=args.host, port=args.port, title="Flowbuilder", reload=False, show=False)
    return 0
