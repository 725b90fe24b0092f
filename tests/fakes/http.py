"""What the fake provider servers share: a loopback ThreadingHTTPServer in a daemon thread, and a
request handler that reads and writes JSON. Stdlib only, so a fake never depends on a provider SDK.

A fake subclasses :class:`LoopbackServer` and returns its handler class (a :class:`JSONHandler`
subclass) from ``handler_class()``; every handler instance reaches the fake through ``self.fake``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class JSONHandler(BaseHTTPRequestHandler):
    """Hands every GET, POST and DELETE to ``_dispatch(method)``; reads and writes JSON bodies."""

    fake: Any

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        raise NotImplementedError

    def _read_json(self) -> Any:
        """The request body parsed as JSON; None when there is none or it is not JSON."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _lower_case_headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _send_json(self, status: int, payload: Any, extra_headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """Start/stop (or ``with``) a server on a free 127.0.0.1 port; ``url`` once started."""

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[JSONHandler]:
        """The fake's request handler (its routes)."""
        raise NotImplementedError

    def start(self) -> Self:
        # a handler class per server, so that two running fakes never share one ``fake``
        handler = type("Handler", (self.handler_class(),), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # a short poll interval keeps stop() fast between tests
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name=f"fake-{type(self).__name__}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


CLOUD_PROVIDERS = ("openai", "groq", "mistral", "cohere", "pinecone", "qdrant", "ollama", "mcp")


def approvals(*urls: str) -> list[tuple[str, str]]:
    """What a user passes as ``--allow-endpoint`` to send keys to a fake on this machine (every provider):
    a key goes to loopback only once approved (a local provider's too)."""
    return [(provider, url) for url in urls for provider in CLOUD_PROVIDERS]
