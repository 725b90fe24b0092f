"""Helpers shared by subcommands: parsing --input, --cred and approvals, and long work in a thread Ctrl-C cancels."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from flowbuilder.errors import CredentialError, UnknownNodeTypeError
from flowbuilder.executor import GENERIC_INPUT
from flowbuilder.flow import Flow
from flowbuilder.registry import NodeRegistry, default_registry
from flowbuilder.trust.credentials import CredentialResolver, parse_cred_option
from flowbuilder.trust.providers import BINDING_FORMS, PROVIDER_ENV_VARS, binding_problem

T = TypeVar("T")

CRED_HELP = (
    "bind a key to one provider: PROVIDER.SLOT=VALUE (openai.api_key=...), PROVIDER=VALUE or "
    "PROVIDER/ACCOUNT=VALUE, VALUE or env:VAR; a bare SLOT=VALUE only when one provider's nodes use that slot. "
    "Values are never saved or printed."
)


def add_cred_option(parser: Any, help_text: str = CRED_HELP) -> None:
    """The repeatable ``--cred SLOT=VALUE`` option; ``help_text`` says what the command does with it."""
    parser.add_argument("--cred", action="append", default=[], metavar="PROVIDER.SLOT=VALUE", help=help_text)
    parser.add_argument(
        "--allow-endpoint",
        action="append",
        default=[],
        metavar="PROVIDER[/ACCOUNT]=URL",
        help="let a provider's key go to a server that is not the provider's own (for this run only)",
    )
    parser.add_argument(
        "--allow-command",
        action="append",
        default=[],
        metavar="COMMAND",
        help="let the flow start this exact program (tool.mcp over stdio), as validate prints it",
    )
    add_allow_path_option(parser)
    parser.add_argument(
        "--allow-store",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="let the flow read (never write) a collection another flow wrote, as validate names it "
        "(chroma:/folder:collection)",
    )


def add_allow_path_option(parser: Any) -> None:
    """The repeatable ``--allow-path DIR``: a folder the flow may read besides its own (for this run)."""
    parser.add_argument(
        "--allow-path",
        action="append",
        default=[],
        metavar="DIR",
        help="let the flow read files under DIR (besides its own folder, the workspace and the sample data); "
        "the credentials file, the data dir, hidden folders of ~, /etc, /proc and /sys stay unreadable",
    )


def parse_allow_option(option: str) -> tuple[str, str]:
    """``PROVIDER[/ACCOUNT]=URL`` into ``(key, url)``."""
    key, sep, url = option.partition("=")
    if not sep or not key or not url:
        raise CredentialError(f"--allow-endpoint expects PROVIDER[/ACCOUNT]=URL, got '{key}'.")
    return key, url


def _usage(message: str) -> Exception:
    from flowbuilder.cli import UsageError

    return UsageError(message)


def bind_cred_options(
    options: Sequence[str], flow: Flow | None = None, registry: NodeRegistry | None = None
) -> dict[str, str]:
    """``--cred`` options as bindings that each name one provider (``PROVIDER.SLOT``, ``PROVIDER/ACCOUNT`` or
    ``PROVIDER``); a bare slot name becomes ``PROVIDER.SLOT`` when exactly one provider's nodes in ``flow`` (every
    registered node type without a flow) use it. A usage error lists the choices otherwise."""
    registry = registry or default_registry()
    providers = set(PROVIDER_ENV_VARS) | {slot.provider for cls in registry for slot in cls.credential_slots}
    used: dict[str, set[str]] = {}
    for cls in _node_classes(flow, registry):
        for slot in cls.credential_slots:
            used.setdefault(slot.name, set()).add(slot.provider)
    choices = ", ".join(sorted(f"{p}.{name}" for name, ps in used.items() for p in ps)) or "none in this flow"
    bindings: dict[str, str] = {}
    for option in options:
        try:
            target, value = parse_cred_option(option)
        except CredentialError as exc:
            raise _usage(str(exc)) from None
        head, sep, _ = target.partition("/") if "/" in target else target.partition(".")
        if sep and head not in providers:
            what = "a node of this flow" if flow is not None and head in flow.node_ids() else "unknown"
            raise _usage(
                f"--cred {target[:60]}: '{head[:40]}' is not a provider ({what}); a key is bound to one provider: "
                f"{BINDING_FORMS}; slots of this flow: {choices}"
            )
        if not sep and target not in providers:
            owners = sorted(used.get(target, ()))
            if len(owners) != 1:
                why = "several providers' nodes use it" if owners else "no node of this flow has that slot"
                raise _usage(
                    f"--cred {target[:40]}=...: '{target[:40]}' is not a provider and {why}; name the provider: "
                    f"{', '.join(f'{p}.{target}' for p in owners) if owners else BINDING_FORMS} "
                    f"(slots of this flow: {choices})"
                )
            target = f"{owners[0]}.{target}"
        problem = binding_problem(target)
        if problem:
            raise _usage(f"--cred: {problem}")
        bindings[target] = value
    return bindings


def _node_classes(flow: Flow | None, registry: NodeRegistry) -> list[Any]:
    if flow is None:
        return list(registry)
    found = []
    for spec in flow.nodes:
        try:
            found.append(registry.get(spec.type))
        except UnknownNodeTypeError:
            continue
    return found


def resolver_from_args(
    creds: Sequence[str],
    allow: Sequence[str] = (),
    commands: Sequence[str] = (),
    paths: Sequence[str] = (),
    stores: Sequence[str] = (),
    flow: Flow | None = None,
) -> CredentialResolver:
    """The credential resolver the parsed ``--cred``/``--allow-*`` options describe."""
    return CredentialResolver(
        explicit=bind_cred_options(creds, flow),
        approved=[parse_allow_option(option) for option in allow],
        commands=commands,
        paths=paths,
        stores=stores,
    )


def resolver_for(args: Any, flow: Flow | None = None) -> CredentialResolver:
    """The resolver for a command that took :func:`add_cred_option`: bindings and approvals from its flags. A bare
    slot name in ``--cred`` is read against ``flow`` (its nodes' slots)."""
    return resolver_from_args(
        args.cred, args.allow_endpoint, args.allow_command, args.allow_path, args.allow_store, flow
    )


def parse_inputs(flow: Flow, options: Sequence[str]) -> dict[str, str]:
    """``--input TEXT`` goes to every chat input; ``--input NODE=VALUE`` to one node (if NODE is a node id)."""
    inputs: dict[str, str] = {}
    ids = set(flow.node_ids())
    for option in options:
        head, sep, tail = option.partition("=")
        if sep and head in ids:
            inputs[head] = tail
        else:
            inputs[GENERIC_INPUT] = option
    return inputs


def in_worker(name: str, work: Callable[[threading.Event], T], cancel: threading.Event) -> T:
    """``work(cancel)`` in a thread; Ctrl-C sets ``cancel`` (the cluster's tasks are cancelled too) and waits
    for the work to stop; its error is raised here, where the CLI reports it."""
    outcome: dict[str, Any] = {}
    ended = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = work(cancel)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            ended.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    try:
        while not ended.wait(0.2):
            pass
    except KeyboardInterrupt:
        cancel.set()
        sys.stderr.write("\ncancelling…\n")
        while not ended.wait(0.2):
            pass
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value
