"""Where a node may send requests: one egress check for every node that talks to the network.

A node names its destinations (:meth:`flowbuilder.node.Node.destinations`): a config field, its URL, the
provider whose service it is meant to reach, and whether that provider is *local by nature* (Ollama, a
Chroma or Qdrant server: things people run on their own machine). :func:`egress_problem` decides:

- a URL that does not parse (``http://x:99999``, ``http://[::1``) is an ``invalid-endpoint``: nothing is sent;
- the provider's own service (over https) needs nothing;
- this machine (a loopback address, or a ``localhost`` name that resolves to loopback only) needs nothing
  for a request without a key to a local-by-nature provider (or any keyless request but ``tool.mcp``'s and
  ``tool.http``'s); a key goes to loopback only once approved, whichever provider's (another user's server
  on this machine, or a program the flow file picked the port of, would receive it): an optional key (Ollama's
  ``OLLAMA_API_KEY`` is for ollama.com) is withheld instead and the node runs without it (:func:`key_plans`),
  and ``tool.mcp`` over HTTP needs approval even without a key (``http://127.0.0.1:PORT/admin/delete?all=1``);
- anything else needs the user's approval (``--allow-endpoint PROVIDER[/ACCOUNT]=URL``, the credentials
  file's ``approved_endpoints`` or the builder's Approve button), with or without a key: a flow that
  embeds documents at ``attacker.example`` sends the documents there.

An approval covers an origin (``scheme://host:port``) for one provider, or for one node kind where several
share a provider (``loader.url`` and ``tool.http`` both fetch "http": approving a page for the loader does
not let a tool call it). ``validate`` reports the problems and where every bound key would go; ``run``
refuses the node before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from flowbuilder.errors import CredentialError, EndpointError
from flowbuilder.trust.netguard import is_loopback
from flowbuilder.trust.providers import (
    PROVIDER_ENV_VARS,
    PROVIDER_HOSTS,
    CredentialRef,
    CredentialSlot,
    reference_problem,
)
from flowbuilder.trust.terminal import excerpt

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
    kind: str = ""
    """What approvals are keyed by when not the provider: the node type, where several kinds share one
    provider (``loader.url`` and ``tool.http`` both fetch over plain HTTP)."""

    @property
    def approval_key(self) -> str:
        return self.kind or self.provider


@dataclass(frozen=True)
class EgressProblem:
    """Why a request may not go where a node's config points, in the form the executor refuses with and the
    builder turns into an approval prompt."""

    code: str
    """``invalid-endpoint``, ``unsafe-credential`` (a key would go there) or ``untrusted-endpoint``."""
    message: str
    where: str
    """The config field that names the destination."""
    detail: dict[str, str] = dataclass_field(default_factory=dict)
    """What an approval covers (provider, account, origin), so a UI can offer one."""


class Approvals(Protocol):
    """The one question egress asks of the user's approvals: may this provider account talk to this origin.
    A protocol so this low module does not import the credential store above it."""

    def endpoint_approved(self, provider: str, account: str, origin: str) -> bool: ...


class Keys(Approvals, Protocol):
    """What the egress checks ask of the user's bindings (a :class:`~flowbuilder.trust.credentials.CredentialResolver`,
    which sits above this module): where a slot's key comes from, the key, and the approvals."""

    def source(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None: ...

    def resolve(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None: ...


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
    if here and not key_sent and (destination.local or not destination.always_ask):
        return None
    if approvals is not None and approvals.endpoint_approved(destination.approval_key, account, origin):
        return None
    provider = destination.provider
    approve = (
        f"approve it only if you trust that server (flowbuilder run --allow-endpoint {account}={origin}, "
        f"or the Approve button in the builder), or change '{name}'"
    )
    detail = {
        "provider": destination.approval_key,
        "account": account.partition("/")[2] or "default",
        "origin": origin,
    }
    where = "a server on this machine that is not" if here else "not"
    if key_sent and here and destination.local:
        message = (
            f"its {provider} key would be sent to {origin} ('{name}'), a server on this machine that the flow file "
            f"picked; a key goes to this machine only once you approve that server"
        )
        return EgressProblem("unsafe-credential", f"{message}; {approve}", name, detail)
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


KeySource = Literal["session", "store", "env"]
SOURCE_WORDS = {"session": "--cred", "store": "the credentials file"}


@dataclass(frozen=True)
class KeyPlan:
    """What happens to one bound key of a node: where it would go and whether it is sent."""

    slot: CredentialSlot
    account: str
    """``provider/account`` the key is bound under."""
    source: str
    """Where it comes from, in words: ``--cred``, ``the credentials file`` or the variable's name."""
    destinations: tuple[str, ...]
    """The origins it would be sent to (the provider's own service when the node names none)."""
    verdict: Literal["send", "withhold", "refuse"]
    reason: str = ""
    """Why it is withheld or refused (the egress problem's message)."""

    def describe(self, node_id: str) -> str:
        where = ", ".join(self.destinations) or "nowhere over the network"
        line = f"key: node '{node_id}' slot '{self.slot.name}' ({self.account}, from {self.source}) -> {where}"
        if self.verdict == "withhold":
            return f"{line}: withheld (the node runs without it): {self.reason}"
        if self.verdict == "refuse":
            return f"{line}: refused: {self.reason}"
        return line


def _destinations(cls: Any, config: Any) -> list[Destination] | EgressProblem:
    try:
        return list(cls.destinations(config))
    except (ValueError, TypeError, OverflowError) as exc:
        return EgressProblem("invalid-endpoint", f"{excerpt(exc, 160)}; its server address is unusable", "")


def key_plans(
    node_id: str,
    cls: Any,
    config: Any,
    refs: Mapping[str, CredentialRef],
    resolver: Keys | None,
) -> list[KeyPlan]:
    """Every key bound for the node's slots (none without a resolver), where it would go and whether it is sent:
    a key goes only to its provider's own service or to an endpoint approved for that key; an optional key from
    the environment or the credentials file that may not go where the node points is withheld (the node runs
    without it); a required one, or one bound for this run (``--cred``), is refused."""
    if resolver is None:
        return []
    destinations = _destinations(cls, config)
    plans = []
    for slot in cls.credential_slots:
        ref = refs.get(slot.name)
        if reference_problem(slot, ref) is not None:
            continue
        with suppress(CredentialError):
            source = resolver.source(node_id, slot, ref)
            if source is None or not resolver.resolve(node_id, slot, ref):
                continue
            words = SOURCE_WORDS.get(source) or PROVIDER_ENV_VARS.get(slot.provider, source)
            account = f"{slot.provider}/{ref.name if ref else 'default'}"
            if isinstance(destinations, EgressProblem):
                plans.append(KeyPlan(slot, account, words, (), "refuse", destinations.message))
                continue
            mine = [d for d in destinations if d.provider == slot.provider]
            if not mine:
                own = PROVIDER_HOSTS.get(slot.provider, ())
                where = (f"https://{own[0]}",) if own and not cls.command_line(config) else ()
                plans.append(KeyPlan(slot, account, words, where, "send"))
                continue
            problems = [
                problem
                for d in mine
                if (problem := egress_problem(d, own_hosts=PROVIDER_HOSTS.get(d.provider, ()), key_sent=True,
                                              account=f"{d.approval_key}/{account.partition('/')[2]}",
                                              approvals=resolver))
            ]  # fmt: skip
            origins = tuple(dict.fromkeys(try_origin(d.url) or excerpt(d.url, 80) for d in mine))
            if not problems:
                plans.append(KeyPlan(slot, account, words, origins, "send"))
            else:
                # a key the user bound for this run is refused (said loudly); an ambient optional one (an
                # OLLAMA_API_KEY for ollama.com) is withheld and the node runs without it
                refuse = slot.required or source == "session"
                verdict: Literal["withhold", "refuse"] = "refuse" if refuse else "withhold"
                plans.append(KeyPlan(slot, account, words, origins, verdict, problems[0].message))
    return plans


def node_problems(
    node_id: str,
    cls: Any,
    config: Any,
    refs: Mapping[str, CredentialRef],
    resolver: Keys | None,
) -> list[EgressProblem]:
    """Every destination of a node (class ``cls`` with ``config``) that it must not reach yet.

    Without a resolver nothing is approved and no key is taken to be bound (``validate --no-credentials``).
    A withheld key (:func:`key_plans`) does not count as sent."""
    destinations = _destinations(cls, config)
    if isinstance(destinations, EgressProblem):
        return [destinations]
    if not destinations:
        return []
    plans = key_plans(node_id, cls, config, refs, resolver)
    problems = []
    for destination in destinations:
        sent = [p for p in plans if p.slot.provider == destination.provider and p.verdict != "withhold"]
        names = [refs[p.slot.name].name for p in sent if p.slot.name in refs]
        slots = [s for s in cls.credential_slots if s.provider == destination.provider]
        if not names and slots and slots[0].name in refs:
            names = [refs[slots[0].name].name]
        account = f"{destination.approval_key}/{names[0] if names else 'default'}"
        problem = egress_problem(
            destination,
            own_hosts=PROVIDER_HOSTS.get(destination.provider, ()),
            key_sent=bool(sent),
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
    "KeyPlan",
    "egress_problem",
    "is_own_service",
    "key_plans",
    "node_problems",
    "parse_endpoint",
    "try_origin",
]
