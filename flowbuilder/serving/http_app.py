"""``flowbuilder serve``: one Starlette app with MCP Streamable HTTP at ``/mcp`` and a small JSON API.

- ``GET /search?q=...&k=...[&tool=NAME]``: the same JSON as the search tool's structured content.
- ``POST /ask`` with ``{"question": "...", "session": "optional"}``: runs the whole flow; the answer with its
  sources (``session`` keeps a separate chat memory for agent flows).
- ``GET /health``: ``{"ok": true, ...}`` with what the flow offers.

The whole app sits behind the trust room's HTTP guard (:meth:`flowbuilder.trust.policy.TrustPolicy.guard_http`:
Host/Origin checks, bearer token, no framing, body limit).
"""

from __future__ import annotations

import threading
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from flowbuilder.errors import FlowbuilderError, FlowFileError, ServeError
from flowbuilder.formats.limits import parse_untrusted_json
from flowbuilder.serving.mcp_server import build_mcp_server
from flowbuilder.serving.service import FlowService
from flowbuilder.trust.netguard import check_bind
from flowbuilder.trust.policy import TrustPolicy
from flowbuilder.trust.secrets import mask_secrets, mask_secrets_obj

MAX_REQUEST_BYTES = 1_000_000
"""A question or an MCP message is small; anything bigger is refused before it is read."""


def _error(status: int, exc: Exception | str) -> JSONResponse:
    return JSONResponse({"error": mask_secrets(str(exc))}, status_code=status)


def build_http_app(
    service: FlowService, *, host: str = "127.0.0.1", token: str | None = None, stateless: bool = False
) -> Any:
    """The ASGI app (guarded) for ``service``; refuses a non-loopback host without a token. ``stateless``: MCP keeps
    no session between requests (``serve --replica``: any replica behind a load balancer answers any request)."""
    check_bind(host, token)
    server = build_mcp_server(service)

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, **service.summary()})

    @server.custom_route("/search", methods=["GET"])
    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "")
        raw_k = request.query_params.get("k")
        try:
            k = int(raw_k) if raw_k not in (None, "") else None
        except ValueError:
            return _error(400, f"k must be a whole number, got {str(raw_k)[:20]!r}.")
        tool = request.query_params.get("tool") or None
        try:
            # the JSON (with its secret masking) is made on the worker thread too: on the event loop it would
            # hold up every other request's reading and writing
            body = await anyio.to_thread.run_sync(lambda: mask_secrets_obj(service.search(query, k, tool).to_json()))
        except FlowbuilderError as exc:
            return _error(400, exc)
        return JSONResponse(body)

    @server.custom_route("/ask", methods=["POST"])
    async def ask(request: Request) -> Response:
        raw = (await request.body() or b"{}").decode("utf-8", errors="replace")
        try:
            # the flow files' reader and its limits: depth, sizes, NaN (a 200k-deep body is refused, not a 500)
            body = parse_untrusted_json(raw, "the request body")
        except FlowFileError as exc:
            return _error(400, f'{exc}; send JSON like {{"question": "..."}}')
        question = body.get("question") if isinstance(body, dict) else None
        if not isinstance(question, str):
            return _error(400, 'the body must be JSON: {"question": "..."}')
        session = body.get("session") if isinstance(body.get("session"), str) else None
        try:
            # Each caller may keep its own chat memory (agent flows) by naming a session.
            result = await anyio.to_thread.run_sync(lambda: service.ask(question, session or "serve"))
        except FlowbuilderError as exc:
            return _error(400, exc)
        return JSONResponse(mask_secrets_obj(result.to_json()), status_code=200 if result.ok else 502)

    # stateless: a replica behind a load balancer answers any MCP request (no session lives in one process)
    app = server.streamable_http_app(streamable_http_path="/mcp", host=host, stateless_http=stateless)
    return TrustPolicy.guard_http(app, host=host, token=token, max_bytes=MAX_REQUEST_BYTES)


class BackgroundServer:
    """Serve an ASGI app with uvicorn on a daemon thread (the builder's Serve panel, tests)."""

    def __init__(self, app: Any, host: str, port: int) -> None:
        import uvicorn

        self.host = host
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="flowbuilder-serve", daemon=True)

    def start(self, timeout: float = 10.0) -> int:
        """Start and wait until listening; returns the bound port (useful with port 0)."""
        import time

        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise ServeError(f"the server did not start on {self.host}: is the port in use?")
            time.sleep(0.05)
        sockets = [s for server in self.server.servers for s in server.sockets]
        return int(sockets[0].getsockname()[1]) if sockets else 0

    def stop(self) -> None:
        """Stop serving and wait for the server thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self.thread.is_alive()
