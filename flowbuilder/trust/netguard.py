"""Network guard for everything Flowbuilder serves over HTTP (``flowbuilder serve``, the builder UI).

Two checks, one ASGI middleware (:class:`NetGuard`):

- DNS rebinding: a web page on ``evil.example`` can make its name resolve to 127.0.0.1 and then talk
  to a loopback server from the victim's browser. The browser still sends ``Host: evil.example`` (and
  an ``Origin``), so requests whose Host or Origin is not a name of the bound address are refused.
- Bearer token: when a token is configured every request must carry ``Authorization: Bearer TOKEN``
  (or, when ``cookie_name`` is given, that cookie, because browsers cannot add headers to websockets).
- Cross-site requests: an ``Origin`` must be this very server's (scheme, host and port): a page on
  ``http://localhost:3000`` (another program on this machine) is another site. Every response forbids
  framing (``Content-Security-Policy: frame-ancestors 'none'``, ``X-Frame-Options: DENY``), so no page can
  lay the builder under its own buttons.
- Requests a browser sends for another site: an ``<img src=".../search?q=...">`` on any page makes a GET
  with no ``Origin``; its answer cannot be read, but the flow runs. Browsers mark such requests
  ``Sec-Fetch-Site: cross-site`` (or ``same-site`` from another port of this machine, since a site ignores
  the port), so both are refused. ``same-origin`` (this server's own pages) and ``none`` (an address the
  user typed, a bookmark) pass, and so does a request without the header (curl, MCP clients, scripts,
  old browsers: the Host/Origin/token checks still apply). Only the builder (``navigations=True``) lets
  another site link to it: a top-level GET navigation, which runs no flow by itself.

:func:`check_bind` refuses a non-loopback bind without a token before anything listens.
Pure ASGI (no NiceGUI, no FastAPI), so ``app.add_middleware(NetGuard, host=..., token=...)`` works
on Starlette and FastAPI apps alike.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from flowbuilder.errors import ServeError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
FRAME_HEADERS = ((b"content-security-policy", b"frame-ancestors 'none'"), (b"x-frame-options", b"DENY"))
"""On every HTTP response: no page of another site may frame this one (clickjacking)."""
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
OTHER_SITE = frozenset({"cross-site", "same-site"})
"""``Sec-Fetch-Site`` values of a request another site's page made (``same-site``: another port or subdomain)."""


def _bare(host: str) -> str:
    """``[::1]`` -> ``::1``; lower case; no trailing dot."""
    return host.strip().strip("[]").rstrip(".").lower()


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1) and for ``localhost`` names that
    resolve to loopback addresses only. A ``*.localhost`` name is not trusted by its spelling: where DNS
    (not this machine) answers for it, it may lead anywhere."""
    name = _bare(host)
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        pass
    if name == "localhost" or name.endswith(".localhost"):
        return resolves_to_loopback(name)
    return False


def resolves_to_loopback(name: str) -> bool:
    """Whether every address ``name`` resolves to is a loopback address (False when it does not resolve)."""
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError, ValueError):
        return False
    addresses = {str(info[4][0]).split("%", 1)[0] for info in infos}
    try:
        return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen on a non-loopback address without a token (one-line :class:`ServeError`)."""
    if is_loopback(host) or token:
        return
    raise ServeError(
        f"Refusing to listen on {host or '0.0.0.0'} without a token: other machines could use this server. "
        "Add --token TOKEN (clients then send 'Authorization: Bearer TOKEN') or bind to 127.0.0.1."
    )


def allowed_host_names(host: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The Host names a request may carry for a server bound to ``host``; ``None`` = any (wildcard bind,
    where only the token protects: :func:`check_bind` made sure there is one)."""
    name = _bare(host)
    if name in WILDCARD_HOSTS:
        return None
    names = set(LOOPBACK_NAMES)
    if not is_loopback(name):
        names.add(name)
    names.update(_bare(e) for e in extra)
    return frozenset(names)


def split_host_header(value: str) -> str:
    """``localhost:8080`` -> ``localhost``; ``[::1]:8080`` -> ``::1``."""
    value = value.strip()
    if value.startswith("["):
        return _bare(value.split("]", 1)[0])
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return _bare(value)


def host_port(value: str, scheme: str) -> int | None:
    """The port of a Host header (the scheme's default when it names none); None when it is not a number."""
    value = value.strip()
    rest = value.split("]", 1)[1] if value.startswith("[") else value if value.count(":") == 1 else ""
    if ":" not in rest:
        return DEFAULT_PORTS.get(scheme)
    port = rest.rsplit(":", 1)[1]
    return int(port) if port.isdigit() else None


def same_origin(origin: str, scheme: str, host_header: str) -> bool:
    """Whether ``origin`` (a request's Origin header) is the server the request reached: the same scheme, host
    and port as the request itself (``scheme`` of the connection, ``host_header`` as the client sent it)."""
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    try:
        parts = urlsplit(origin)
        origin_port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return False
    return (
        parts.scheme.lower() == scheme
        and _bare(parts.hostname or "") == split_host_header(host_header)
        and origin_port == host_port(host_header, scheme)
    )


class NetGuard:
    """ASGI middleware: Host/Origin checks against the bound names, and an optional bearer token.

    ``host`` is the address the server binds (``127.0.0.1`` by default); ``allowed_hosts`` adds names
    (e.g. a LAN host name). Lifespan events pass through untouched.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        token: str | None = None,
        allowed_hosts: Iterable[str] = (),
        cookie_name: str | None = None,
        navigations: bool = False,
    ) -> None:
        check_bind(host, token)
        self.app = app
        self.names = allowed_host_names(host, allowed_hosts)
        self._token = token.encode() if token else None
        self.cookie_name = cookie_name
        self.navigations = navigations

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if scope["type"] == "http":
            send = _forbid_framing(send)
        if scope["type"] == "http" and await self._login(scope, headers, send):
            return
        problem = self.refusal(headers, str(scope.get("scheme") or "http"), str(scope.get("method") or "GET"))
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, message = problem
        if scope["type"] == "websocket":
            # Closing before accept makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        body = json.dumps({"error": message}).encode()
        response_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 401:
            response_headers.append((b"www-authenticate", b'Bearer realm="flowbuilder"'))
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": body})

    async def _login(self, scope: Scope, headers: dict[str, str], send: Send) -> bool:
        """A browser opening ``/?token=TOKEN`` gets the token as an HttpOnly cookie and is sent on without it
        in the address (so it is not kept in history); only with ``cookie_name`` and a right token."""
        if self._token is None or not self.cookie_name:
            return False
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        if not given or not hmac.compare_digest(given.encode(), self._token):
            return False
        host_problem = self.refusal({**headers, "authorization": f"Bearer {given}"}, str(scope.get("scheme") or "http"))
        if host_problem is not None:
            return False
        rest = urlencode([(k, v) for k, values in query.items() if k != "token" for v in values])
        location = scope.get("path", "/") + (f"?{rest}" if rest else "")
        cookie = f"{self.cookie_name}={given}; HttpOnly; SameSite=Strict; Path=/"
        response_headers = [(b"location", location.encode()), (b"set-cookie", cookie.encode())]
        await send({"type": "http.response.start", "status": 303, "headers": response_headers})
        await send({"type": "http.response.body", "body": b""})
        return True

    def refusal(self, headers: dict[str, str], scheme: str = "http", method: str = "GET") -> tuple[int, str] | None:
        """``(status, message)`` when the request must be refused, else ``None``. Messages never echo a token."""
        fetch_site = headers.get("sec-fetch-site", "").strip().lower()
        if fetch_site in OTHER_SITE and not self._linked_page(headers, method):
            return 403, (
                f"Request from another site refused (Sec-Fetch-Site: {fetch_site}): only this server's own pages, "
                "an address typed into the browser, or clients that are not browsers may call it."
            )
        host_name = split_host_header(headers.get("host", ""))
        if self.names is not None and host_name not in self.names:
            return 403, (
                f"Host '{host_name[:80]}' is not a name of this server "
                f"(allowed: {', '.join(sorted(self.names))}); refused to prevent DNS rebinding."
            )
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            if not same_origin(origin, scheme, headers.get("host", "")):
                return 403, (
                    f"Origin '{origin[:80]}' is not allowed; only pages served from this server (same scheme, "
                    "host and port) may call it."
                )
        elif origin == "null":
            return 403, "Origin 'null' (a sandboxed or file page) is not allowed."
        if self._token is not None and not self._authorized(headers):
            return 401, "Missing or wrong bearer token: send 'Authorization: Bearer TOKEN'."
        return None

    def _linked_page(self, headers: dict[str, str], method: str) -> bool:
        """A top-level GET navigation (a link followed from another site), allowed only with ``navigations``."""
        return (
            self.navigations
            and method.upper() in ("GET", "HEAD")
            and headers.get("sec-fetch-mode", "").lower() == "navigate"
            and headers.get("sec-fetch-dest", "").lower() == "document"
        )

    def _authorized(self, headers: dict[str, str]) -> bool:
        assert self._token is not None
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self._token):
            return True
        if self.cookie_name and "cookie" in headers:
            cookie: SimpleCookie = SimpleCookie()
            try:
                cookie.load(headers["cookie"])
            except Exception:  # a malformed cookie header is just "no token"
                return False
            morsel = cookie.get(self.cookie_name)
            return morsel is not None and hmac.compare_digest(morsel.value.encode(), self._token)
        return False


def _forbid_framing(send: Send) -> Send:
    """``send`` adding :data:`FRAME_HEADERS` to the response's headers (replacing any the app set)."""
    names = {name for name, _ in FRAME_HEADERS}

    async def sending(message: Message) -> None:
        if message.get("type") == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if bytes(k).lower() not in names]
            message = {**message, "headers": [*kept, *FRAME_HEADERS]}
        await send(message)

    return sending


def _headers(scope: Scope) -> dict[str, str]:
    """Lower-cased header names; a repeated header keeps its first value (Host must not be ambiguous)."""
    result: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        result.setdefault(name, raw_value.decode("latin-1"))
    return result


__all__ = [
    "LOOPBACK_NAMES",
    "NetGuard",
    "allowed_host_names",
    "check_bind",
    "host_port",
    "is_loopback",
    "resolves_to_loopback",
    "same_origin",
    "split_host_header",
]
