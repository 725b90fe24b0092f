"""Where a node may send requests: one egress check for every node that talks to the network.

A node names its destinations (:meth:`flowbuilder.node.Node.destinations`): a config field, its URL, the
provider whose service it is meant to reach, and whether that provider is *local by nature* (Ollama, a
Chroma or Qdrant server: things people run on their own machine). :func:`egress_problem` decides:

- a URL that does not parse (``http://x:99999``, ``http://[::1``) is an ``invalid-endpoint``: nothing is sent;
- the provider's own service (over https) needs nothing;
- this machine (a loopback address, or a ``localhost`` name that resolves to loopback only) needs nothing
  for a local-by-nature provider, or when no key goes with the request; a cloud provider's key goes to
  loopback only once approved (another user's server on this machine would receive it), and so does
  ``tool.mcp`` over HTTP (the flow picks the URL: ``http://127.0.0.1:PORT/admin/delete?all=1``);
- anything else needs the user's approval (``--allow-endpoint PROVIDER[/ACCOUNT]=URL``, the credentials
  file's ``approved_endpoints`` or the builder's Approve button), with or without a key: a flow that
  embeds documents at ``attacker.example`` sends the documents there.

An approval covers an origin (``scheme://host:port``). ``validate`` reports the problems; ``run``
refuses the node before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from flowbuilder.errors import CredentialError, EndpointError
from flowbuilder.netguard import is_loopback
from flowbuilder.terminal import excerpt

if TYPE_CHECKING:
    from flowbuilder.credentials import CredentialRef, CredentialResolver

SCHEMES = ("http", "https")


@dataclass(frozen=True)
class Endpoint:
    """A parsed destination URL."""

    scheme: str
    host: str
    port: int | None
    path: str

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}" + (f":{self.port}" if self.port else "")


def parse_endpoint(url: str) -> Endpoint:
    """Parse ``url`` (a bare ``host:port`` means http); :class:`EndpointError` says why it is unusable."""
    text = url.strip()
    shown = excerpt(text, 80)
    if not text:
        raise EndpointError("the URL is empty")
    if any(ord(ch) < 0x21 or 0x7F <= ord(ch) <= 0x9F for ch in text):
        raise EndpointError(f"'{shown}' contains spaces or control characters")
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
        host = (parts.hostname or "").rstrip(".").lower()
    except ValueError as exc:
        raise EndpointError(f"'{shown}' is not a valid URL ({excerpt(exc, 60)})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise EndpointError(f"'{shown}' uses '{excerpt(scheme, 20)}:'; only http:// and https:// are supported")
    if not host:
        raise EndpointError(f"'{shown}' names no host")
    if port == 0:
        raise EndpointError(f"'{shown}' has port 0")
    return Endpoint(scheme, host, port, parts.path)


def try_origin(url: str) -> str | None:
    """The origin of ``url``, or None when it does not parse."""
    try:
        return parse_endpoint(url).origin
    except EndpointError:
        return None


@dataclass(frozen=True)
class Destination:
    """A server a node sends requests to, as its config names it."""

    field: str
    """The config field that names it (``base_url``, ``server_host`` ...)."""
    url: str
    provider: str
    """Whose service it is meant to be (``openai``, ``ollama``, ``mcp``); also the approval's key."""
    local: bool = False
    """Local by nature (Ollama, a Chroma or Qdrant server): this machine needs no approval."""
    always_ask: bool = False
    """The flow picks the server outright (an MCP server: any program's HTTP API could sit there), so even
    this machine needs approval."""


@dataclass(frozen=True)
class EgressProblem:
    code: str
    """``invalid-endpoint``, ``unsafe-credential`` (a key would go there) or ``untrusted-endpoint``."""
    message: str
    where: str
    """The config field that names the destination."""
    detail: dict[str, str] = dataclass_field(default_factory=dict)
    """What an approval covers (provider, account, origin), so a UI can offer one."""


class Approvals(Protocol):
    def endpoint_approved(self, provider: str, account: str, origin: str) -> bool: ...


def is_own_service(hosts: tuple[str, ...], endpoint: Endpoint) -> bool:
    """Whether ``endpoint`` is one of ``hosts`` (or a subdomain), over https."""
    if endpoint.scheme != "https":
        return False
    return any(endpoint.host == known or endpoint.host.endswith("." + known) for known in hosts)


def egress_problem(
    destination: Destination,
    *,
    own_hosts: tuple[str, ...],
    key_sent: bool,
    account: str,
    approvals: Approvals | None,
) -> EgressProblem | None:
    """Why a request must not go to ``destination``, or None when it may.

    :param own_hosts: the provider's own service (hosts or parent domains).
    :param key_sent: a key or token would go with the request.
    :param account: ``provider/account`` the approval is looked up under.
    """
    name = destination.field
    try:
        endpoint = parse_endpoint(destination.url)
    except EndpointError as exc:
        return EgressProblem(
            "invalid-endpoint",
            f"'{name}': {exc}; give a URL like http://127.0.0.1:11434 or https://api.example.com, or clear it",
            name,
        )
    if is_own_service(own_hosts, endpoint):
        return None
    origin = endpoint.origin
    here = is_loopback(endpoint.host)
    if here and (destination.local or not (key_sent or destination.always_ask)):
        return None
    if approvals is not None and approvals.endpoint_approved(destination.provider, account, origin):
        return None
    provider = destination.provider
    approve = (
        f"approve it only if you trust that server (flowbuilder run --allow-endpoint {account}={origin}, "
        f"or the Approve button in the builder), or change '{name}'"
    )
    detail = {"provider": provider, "account": account.partition("/")[2] or "default", "origin": origin}
    where = "a server on this machine that is not" if here else "not"
    if key_sent:
        message = f"its {provider} key would be sent to {origin} ('{name}'), which is {where} {provider}'s service"
        return EgressProblem("unsafe-credential", f"{message}; {approve}", name, detail)
    if destination.always_ask:  # tool.mcp, tool.http: the flow file picked the server outright
        target = excerpt(destination.url, 120)
        message = f"it would call {target}, a server the flow file chose; a flow cannot make calls by itself"
    else:
        message = f"it would send its requests (and the text in them) to {origin} ('{name}'), which is {where} "
        message += f"{provider}'s service" + ("" if here else " nor this machine")
    return EgressProblem("untrusted-endpoint", f"{message}; {approve}", name, detail)


def node_problems(
    node_id: str,
    cls: Any,
    config: Any,
    refs: Mapping[str, CredentialRef],
    resolver: CredentialResolver | None,
) -> list[EgressProblem]:
    """Every destination of a node (class ``cls`` with ``config``) that it must not reach yet.

    Without a resolver nothing is approved and no key is taken to be bound (``validate --no-credentials``)."""
    from flowbuilder.credentials import PROVIDER_HOSTS, reference_problem

    try:
        destinations = cls.destinations(config)
    except (ValueError, TypeError, OverflowError) as exc:
        return [EgressProblem("invalid-endpoint", f"{excerpt(exc, 160)}; its server address is unusable", "")]
    if not destinations:
        return []
    problems = []
    for destination in destinations:
        slots = [s for s in cls.credential_slots if s.provider == destination.provider]
        key_sent = False
        account = f"{destination.provider}/default"
        for slot in slots:
            ref = refs.get(slot.name)
            account = f"{destination.provider}/{ref.name if ref else 'default'}"
            if resolver is not None and reference_problem(slot, ref) is None:
                with suppress(CredentialError):
                    key_sent = key_sent or bool(resolver.resolve(node_id, slot, ref))
        problem = egress_problem(
            destination,
            own_hosts=PROVIDER_HOSTS.get(destination.provider, ()),
            key_sent=key_sent,
            account=account,
            approvals=resolver,
        )
        if problem is not None:
            problems.append(problem)
    return problems


__all__ = [
    "Destination",
    "EgressProblem",
    "Endpoint",
    "egress_problem",
    "is_own_service",
    "node_problems",
    "parse_endpoint",
    "try_origin",
]
