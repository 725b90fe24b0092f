"""``flowbuilder serve FLOW``: MCP Streamable HTTP at /mcp plus GET /search, POST /ask, GET /health."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowbuilder.commands._common import add_cred_option, resolver_for
from flowbuilder.errors import FlowbuilderError

if TYPE_CHECKING:
    from flowbuilder.flow import Flow


def register(subparsers: Any) -> None:
    """Add ``flowbuilder serve`` (serve a flow over HTTP (MCP at /mcp, /search, /ask, /health)) to the CLI's
    subcommands."""
    parser = subparsers.add_parser(
        "serve",
        help="serve a flow over HTTP (MCP at /mcp, /search, /ask, /health)",
        description=(
            "Serve a flow over HTTP: MCP Streamable HTTP at /mcp, GET /search?q=...&k=..., POST /ask "
            '{"question": ...} and GET /health. Loopback only unless --token is given; Host and Origin '
            "headers are checked."
        ),
    )
    parser.add_argument("flow", help="a Flowbuilder flow file (.json)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 = any free port)")
    parser.add_argument(
        "--token", default=None, help="require 'Authorization: Bearer TOKEN' (needed for a non-loopback --host)"
    )
    parser.add_argument("--no-warm-up", action="store_true", help="ingest on the first call instead of at start")
    parser.add_argument(
        "--replica",
        action="store_true",
        help="one of several replicas behind an HTTP load balancer: serve only the search and answer part over the "
        "flow's server store (filled once by `flowbuilder run FLOW --to STORE`, with --ray if you like); MCP is "
        "stateless, so any replica answers any request",
    )
    add_cred_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run ``flowbuilder serve`` with the parsed arguments (serve a flow over HTTP (MCP at /mcp, /search, /ask,
    /health)); returns the exit code."""
    import uvicorn

    from flowbuilder.formats.native import load_flow
    from flowbuilder.serving.http_app import build_http_app
    from flowbuilder.serving.service import FlowService
    from flowbuilder.trust.netguard import check_bind

    check_bind(args.host, args.token)
    flow = load_flow(args.flow)
    if args.replica:
        service = FlowService(
            _replica_flow(Path(args.flow)),
            base_dir=Path(args.flow).resolve().parent,
            resolver=resolver_for(args, flow),
            log=sys.stderr,
            flow_file=Path(args.flow),
        )
    else:
        service = FlowService(args.flow, resolver=resolver_for(args, flow), log=sys.stderr)
    app = build_http_app(service, host=args.host, token=args.token, stateless=args.replica)
    if not args.no_warm_up:
        service.start_warm_up()
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="warning"))
    # The test harness and the Serve panel read this line to learn the port.
    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets)
        bound = [s.getsockname() for srv in server.servers for s in srv.sockets]
        port = bound[0][1] if bound else args.port
        sys.stderr.write(f"serving '{service.flow.name}' on http://{_url_host(args.host)}:{port}/mcp\n")
        sys.stderr.flush()

    server.startup = startup  # type: ignore[method-assign]
    server.run()
    return 0


def _replica_flow(path: Path) -> Flow:
    """The flow a replica serves: its ingest cut (another process fills the store), refused with one line when a
    store it writes is a folder on this machine (other replicas could not see it)."""
    from flowbuilder.cluster.stores import cut_ingest, refuse_unreachable_stores
    from flowbuilder.errors import ServeError
    from flowbuilder.formats.native import load_flow
    from flowbuilder.registry import default_registry

    flow = load_flow(path)
    registry = default_registry()
    try:
        refuse_unreachable_stores(flow, registry)
    except FlowbuilderError as exc:
        raise ServeError(f"--replica: {str(exc).replace('with --ray', 'for replicas')}") from None
    cut = cut_ingest(flow, registry, None)
    if cut is None:
        raise ServeError(f"--replica: {path}'s search reads files itself (a keyword retriever fed chunks), so every "
                         "replica would ingest; serve it without --replica")  # fmt: skip
    return cut


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
