"""Helpers shared by subcommands: parsing --input, --cred and approvals, and long work in a thread Ctrl-C cancels."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from flowbuilder.credentials import CredentialResolver, parse_cred_option
from flowbuilder.errors import CredentialError
from flowbuilder.executor import GENERIC_INPUT
from flowbuilder.flow import Flow

T = TypeVar("T")

CRED_HELP = (
    "bind a credential: SLOT=VALUE or SLOT=env:VAR; SLOT is node.slot, a slot name, a provider "
    "(openai, groq, pinecone) or a credential name. Values are never saved or printed."
)


def add_cred_option(parser: Any, help_text: str = CRED_HELP) -> None:
    """The repeatable ``--cred SLOT=VALUE`` option; ``help_text`` says what the command does with it."""
    parser.add_argument("--cred", action="append", default=[], metavar="SLOT=VALUE", help=help_text)
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


def resolver_from_args(
    creds: Sequence[str], allow: Sequence[str] = (), commands: Sequence[str] = (), paths: Sequence[str] = ()
) -> CredentialResolver:
    """The credential resolver the parsed ``--cred``/``--allow-*`` options describe."""
    return CredentialResolver(
        explicit=dict(parse_cred_option(option) for option in creds),
        approved=[parse_allow_option(option) for option in allow],
        commands=commands,
        paths=paths,
    )


def resolver_for(args: Any) -> CredentialResolver:
    """The resolver for a command that took :func:`add_cred_option`: bindings and approvals from its flags."""
    return resolver_from_args(args.cred, args.allow_endpoint, args.allow_command, args.allow_path)


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
