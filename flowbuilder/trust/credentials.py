"""Credential slots, references and binding.

A node declares *slots* (``api_key`` of provider ``openai``). A flow stores only *references*: for a
slot, the provider and the credential's name (``{"provider": "openai", "name": "OPENAI_API_KEY"}``),
never a value. At run time a :class:`CredentialResolver` binds each reference from, in order:

1. explicit bindings (``--cred TARGET=VALUE`` or ``--cred TARGET=env:VAR``, or the UI's dialog), where TARGET
   names a provider: ``PROVIDER.SLOT`` (``openai.api_key``), ``PROVIDER/ACCOUNT`` (the account a reference
   names) or ``PROVIDER`` (every slot of that provider). A key is bound to its provider only: a reference's
   name, a slot name alone or a node id never picks up another provider's key (the command line accepts a
   bare slot name only when one provider's nodes use it, and turns it into ``PROVIDER.SLOT``);
2. the local credentials file (JSON, mode 0600, in the user's config dir or ``$FLOWBUILDER_CREDENTIALS``),
   shaped ``{"provider": {"credential name": "value"}}``;
3. the provider's standard environment variable (``OPENAI_API_KEY`` for ``openai``).

A flow never names an environment variable: a reference is a provider and an account name, and the
account name is never looked up in the environment (a shared flow could otherwise ask for
``AWS_SECRET_ACCESS_KEY``). Reading another variable is a binding the user makes (``SLOT=env:VAR``).

A secret is sent only where its provider lives: a node whose configured endpoint (``base_url``, ``host``
...) is not the provider's own service gets its key only when the user approved that endpoint for that
account (``--allow-endpoint PROVIDER[/ACCOUNT]=URL`` or the credentials file's ``"approved_endpoints"``);
this machine counts as the provider's only for local-by-nature providers (Ollama, Chroma, Qdrant) and only
for requests without a key: a key goes to a server on this machine once the user approved it (an optional
key, such as ``OLLAMA_API_KEY`` for ollama.com, is withheld instead and the node runs without it).
:mod:`flowbuilder.trust.egress` applies the same rule to every request a node sends, with or without a key.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flowbuilder.errors import CredentialError, FlowbuilderError
from flowbuilder.trust.egress import Destination, egress_problem, parse_endpoint, try_origin
from flowbuilder.trust.pathguard import DEFAULT_WORKSPACE, FileRoots, approved_folders
from flowbuilder.trust.places import default_credentials_path
from flowbuilder.trust.providers import (
    BINDING_FORMS,
    ENDPOINT_FIELDS,
    LOCAL_PROVIDERS,
    PROVIDER_ENV_VARS,
    PROVIDER_HOSTS,
    CredentialRef,
    CredentialSlot,
    binding_keys,
    binding_problem,
    normalize_address,
    provider_env_var,
    reference_problem,
)
from flowbuilder.trust.secrets import register_secret
from flowbuilder.trust.terminal import excerpt

log = logging.getLogger(__name__)

APPROVED_KEY = "approved_endpoints"
"""Section of the credentials file: ``{"provider/account": ["https://host", ...]}``."""
COMMANDS_KEY = "approved_commands"
"""Section of the credentials file: command lines the user lets flows start (``tool.mcp`` over stdio)."""
PATHS_KEY = "approved_paths"
"""Section of the credentials file: folders the user lets every flow read (see :mod:`flowbuilder.trust.pathguard`)."""
STORES_KEY = "approved_stores"
"""Section of the credentials file: ``{"<collection address>": ["<reader flow file>" or "*", ...]}``, collections
another flow wrote that a flow may read (see :mod:`flowbuilder.trust.ledger`)."""
_SECTIONS = (APPROVED_KEY, COMMANDS_KEY, PATHS_KEY, STORES_KEY)


class CredentialStore:
    """The local credentials file: ``{provider: {name: value}}``, kept at mode 0600."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_credentials_path()

    def _read(self) -> dict[str, dict[str, str]]:
        if not self.path.exists():
            return {}
        mode = stat.S_IMODE(self.path.stat().st_mode)
        if mode & 0o077:
            log.warning(
                "Credentials file %s is readable by others (mode %o); run: chmod 600 %s", self.path, mode, self.path
            )
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CredentialError(f"{self.path}: cannot read the credentials file ({type(exc).__name__}).") from None
        if not isinstance(data, dict):
            raise CredentialError(
                f'{self.path}: expected an object of providers, e.g. {{"openai": {{"default": "..."}}}}.'
            )
        return {
            str(p): {str(n): str(v) for n, v in names.items()}
            for p, names in data.items()
            if isinstance(names, dict)
            if p not in _SECTIONS
        }

    def _section(self, key: str) -> Any:
        if not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data.get(key) if isinstance(data, dict) else None

    def approved_endpoints(self) -> dict[str, list[str]]:
        """The user's approvals, ``{"provider/account": [origin, ...]}``."""
        section = self._section(APPROVED_KEY)
        if not isinstance(section, dict):
            return {}
        return {str(k): [str(u) for u in v] for k, v in section.items() if isinstance(v, list)}

    def approved_commands(self) -> list[str]:
        """Command lines the user approved for flows to start."""
        section = self._section(COMMANDS_KEY)
        return [str(c) for c in section] if isinstance(section, list) else []

    def approved_paths(self) -> list[str]:
        """Folders the user lets every flow read."""
        section = self._section(PATHS_KEY)
        return [str(p) for p in section if isinstance(p, str)] if isinstance(section, list) else []

    def approved_stores(self) -> dict[str, list[str]]:
        """Collections the user lets flows read that another flow wrote: address -> reader flow files (``*``:
        any flow)."""
        section = self._section(STORES_KEY)
        if not isinstance(section, dict):
            return {}
        return {str(k): [str(r) for r in v if isinstance(r, str)] for k, v in section.items() if isinstance(v, list)}

    def values(self) -> list[str]:
        """Every secret in the file, used by a flow or not (a served flow masks all of them)."""
        try:
            return [value for names in self._read().values() for value in names.values() if value]
        except CredentialError:
            return []

    def get(self, provider: str, name: str) -> str | None:
        names = self._read().get(provider, {})
        return names.get(name) or (names.get("default") if name != "default" else None)

    def names(self) -> dict[str, list[str]]:
        return {provider: sorted(names) for provider, names in self._read().items()}

    def set(self, provider: str, name: str, value: str) -> None:
        data: dict[str, Any] = dict(self._read())
        data.setdefault(provider, {})[name] = value
        self._write(data)

    def approve_endpoint(self, provider: str, name: str, url: str) -> None:
        """Remember that the user lets ``provider/name``'s key go to ``url``."""
        data: dict[str, Any] = dict(self._read())
        approved = self.approved_endpoints()
        origins = approved.setdefault(f"{provider}/{name}", [])
        if endpoint_origin(url) not in origins:
            origins.append(endpoint_origin(url))
        self._write(data, approved)

    def _write(self, data: dict[str, Any], approved: dict[str, list[str]] | None = None) -> None:
        approved = self.approved_endpoints() if approved is None else approved
        if approved:
            data[APPROVED_KEY] = approved
        commands = self.approved_commands()
        if commands:
            data[COMMANDS_KEY] = commands
        paths = self.approved_paths()
        if paths:
            data[PATHS_KEY] = paths
        stores = self.approved_stores()
        if stores:
            data[STORES_KEY] = stores
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
        os.chmod(tmp, 0o600)
        tmp.replace(self.path)


def parse_cred_option(option: str) -> tuple[str, str]:
    """Parse ``TARGET=VALUE`` or ``TARGET=env:VAR`` from the command line into ``(target, secret)``; which
    slots TARGET binds is :func:`flowbuilder.commands._common.bind_cred_options`'s question."""
    if "=" not in option:
        shown = excerpt(option.split("=")[0], 40)
        raise CredentialError(f"--cred expects {BINDING_FORMS}, got '{shown}' with no '='.")
    key, value = option.split("=", 1)
    if value.startswith("env:"):
        var = value[4:]
        env_value = os.environ.get(var)
        if not env_value:
            raise CredentialError(f"--cred {excerpt(key, 40)}=env:{var}: the environment variable {var} is not set.")
        value = env_value
    if not key or not value:
        raise CredentialError(f"--cred expects {BINDING_FORMS} with both parts non-empty.")
    return key, value


def endpoint_origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (lower case), the unit an approval covers; a malformed URL raises
    :class:`~flowbuilder.errors.EndpointError` (one line)."""
    return parse_endpoint(url).origin


def normalize_command(command: str) -> str:
    """The unit an approval covers: the command line as validate prints it (quoted argv, absolute folder).
    Only the ends are trimmed: inside quotes, spaces are part of an argument."""
    return command.strip()


class CredentialResolver:
    """Binds credential references to secrets for a run (see the module docstring for the order)."""

    def __init__(
        self,
        explicit: Mapping[str, str] | None = None,
        store: CredentialStore | None = None,
        environ: Mapping[str, str] | None = None,
        approved: Iterable[tuple[str, str]] = (),
        commands: Iterable[str] = (),
        paths: Iterable[str | Path] = (),
        workspace: Path | None = None,
        stores: Iterable[str] = (),
    ) -> None:
        self.explicit = dict(explicit or {})
        for key in self.explicit:
            problem = binding_problem(key)
            if problem:
                raise CredentialError(problem)
        self.store = store if store is not None else CredentialStore()
        self.environ = environ if environ is not None else os.environ
        self.approved: set[tuple[str, str]] = {(key, endpoint_origin(url)) for key, url in approved}
        """Endpoints approved for this session: ``(provider or provider/account, origin)``."""
        self.commands: set[str] = {normalize_command(c) for c in commands}
        """Command lines approved for this session (``--allow-command``)."""
        self.paths: list[Path] = list(approved_folders(paths))
        """Folders approved for this session (``--allow-path``, the builder's Approve button)."""
        self.workspace = workspace if workspace is not None else DEFAULT_WORKSPACE
        self.stores: set[tuple[str, str]] = {("*", normalize_address(a)) for a in stores}
        """Collections approved for this session: ``(reader flow key or "*", address)`` (``--allow-store``)."""
        for value in self.explicit.values():
            register_secret(value)

    def bind(self, key: str, value: str) -> None:
        """Bind ``value`` to ``key`` (``PROVIDER.SLOT``, ``PROVIDER/ACCOUNT`` or ``PROVIDER``)."""
        problem = binding_problem(key)
        if problem:
            raise CredentialError(problem)
        register_secret(value)
        self.explicit[key] = value

    def known_secrets(self) -> list[str]:
        """Every secret this resolver could bind: explicit bindings, every value in the credentials file (used
        by the flow or not) and the providers' standard environment variables."""
        found = list(self.explicit.values()) + self.store.values()
        found += [self.environ[var] for var in PROVIDER_ENV_VARS.values() if self.environ.get(var)]
        return found

    def register_known_secrets(self) -> None:
        """Mask every :meth:`known_secrets` value from now on (:mod:`flowbuilder.trust.secrets`)."""
        for value in self.known_secrets():
            register_secret(value)

    def approve_store(self, address: str, reader: str = "*") -> None:
        """Let the flow with scope key ``reader`` (``*``: whichever flow runs in this session) read the collection
        at ``address`` that another flow wrote, for this session."""
        self.stores.add((reader, normalize_address(address)))

    def store_approved(self, address: str, reader_key: str, reader_file: Path | None) -> bool:
        """Whether the user approved reading the collection at ``address`` for this reader flow: this session's
        approvals, or the credentials file's ``approved_stores`` naming the reader's file (or ``*``)."""
        address = normalize_address(address)
        if ("*", address) in self.stores or (reader_key, address) in self.stores:
            return True
        try:
            stored = self.store.approved_stores()
        except CredentialError:
            return False
        readers = [r for key, listed in stored.items() if normalize_address(key) == address for r in listed]
        if "*" in readers:
            return True
        if reader_file is None:
            return False
        wanted = os.path.realpath(reader_file)
        return any(os.path.realpath(os.path.expanduser(r)) == wanted for r in readers if r != "*")

    def approve(self, key: str, url: str) -> None:
        """Approve ``url`` for ``key`` (``provider`` or ``provider/account``) for this session."""
        self.approved.add((key, endpoint_origin(url)))

    def endpoint_approved(self, provider: str, account: str, origin: str) -> bool:
        """Whether the user approved ``origin`` for ``provider`` (any account) or ``provider/account``."""
        if (provider, origin) in self.approved or (account, origin) in self.approved:
            return True
        try:
            stored = self.store.approved_endpoints()
        except CredentialError:
            return False
        listed = [*stored.get(account, []), *stored.get(provider, [])]
        return origin in {try_origin(url) or url for url in listed}

    def approve_command(self, command: str) -> None:
        """Let flows start ``command`` (this exact command line) for this session."""
        self.commands.add(normalize_command(command))

    def approve_path(self, folder: str | Path) -> None:
        """Let flows read files under ``folder`` for this session (never-readable places stay refused)."""
        for path in approved_folders([folder]):
            if path not in self.paths:
                self.paths.append(path)

    def file_roots(
        self, base_dir: Path | None, data_dir: Path | None = None, files: Iterable[str | Path] = ()
    ) -> FileRoots:
        """What a flow in ``base_dir`` may read in this session: its folder, the workspace, the sample data and
        every approved folder (this session's and the credentials file's); ``files`` are single files the user
        chose for the run (``--input NODE=PATH``)."""
        try:
            stored = self.store.approved_paths()
        except CredentialError:
            stored = []
        approved = list(self.paths)
        for entry in stored:
            try:
                approved += approved_folders([entry])
            except FlowbuilderError:  # '~nosuchuser/...' in the file approves nothing
                log.warning("%s: %s entry %r names no folder; ignored", self.store.path, PATHS_KEY, entry[:200])
        return FileRoots(
            flow_dir=base_dir,
            workspace=self.workspace,
            approved=tuple(approved),
            data_dir=data_dir,
            allowed_files=approved_folders(files),
        )

    def source(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        """Where the slot's secret would come from: ``session``, ``store``, ``env`` or None (unbound)."""
        if reference_problem(slot, ref):
            return None
        if any(key in self.explicit for key in binding_keys(slot, ref)):
            return "session"
        try:
            if self.store.get(slot.provider, ref.name if ref else "default"):
                return "store"
        except CredentialError:
            return None
        if slot.provider in PROVIDER_ENV_VARS and self.environ.get(PROVIDER_ENV_VARS[slot.provider]):
            return "env"
        return None

    def resolve(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        """The secret for ``slot`` of ``node_id``, or None when nothing binds it. Only the slot's own provider's
        bindings, credentials and variable are looked at."""
        if reference_problem(slot, ref):
            return None
        for key in binding_keys(slot, ref):
            if key in self.explicit:
                return self.explicit[key]
        stored = self.store.get(slot.provider, ref.name if ref else "default")
        if stored:
            register_secret(stored)
            return stored
        var = PROVIDER_ENV_VARS.get(slot.provider)
        value = self.environ.get(var) if var else None
        if value:
            register_secret(value)
            return value
        return None

    def command_problem(self, command: str) -> str | None:
        """Why a flow may not start ``command`` on this machine, or None when the user approved it."""
        line = normalize_command(command)
        if line in self.commands or line in {normalize_command(c) for c in self.store.approved_commands()}:
            return None
        return (
            f"it would start the program `{excerpt(line, 300)}` on this machine, and a flow file cannot start "
            f"programs by itself; if you trust it, approve it: flowbuilder run --allow-command {shlex.quote(line)} "
            f'(or list it under "{COMMANDS_KEY}" in {self.store.path})'
        )

    def endpoint_problem(self, slot: CredentialSlot, ref: CredentialRef | None, config: Any) -> str | None:
        """Why the slot's key must not go where ``config``'s endpoint fields point, or None when it may."""
        for field in ENDPOINT_FIELDS:
            url = getattr(config, field, None)
            if not isinstance(url, str) or not url.strip():
                continue
            destination = Destination(field, url, slot.provider, slot.provider in LOCAL_PROVIDERS)
            problem = egress_problem(
                destination,
                own_hosts=PROVIDER_HOSTS.get(slot.provider, ()),
                key_sent=True,
                account=f"{slot.provider}/{ref.name if ref else 'default'}",
                approvals=self,
            )
            return problem.message if problem else None
        return None

    def resolve_for(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        """:meth:`resolve`, refusing with :class:`CredentialError` a reference that names another provider. Where
        the key may go is :func:`flowbuilder.trust.egress.key_plans`' question (the executor asks it first)."""
        problem = reference_problem(slot, ref)
        if problem:
            raise CredentialError(f"Node '{node_id}': credential slot '{slot.name}': {problem}.")
        return self.resolve(node_id, slot, ref)

    def describe_sources(self, slot: CredentialSlot, ref: CredentialRef | None) -> str:
        """A hint for an unbound slot: every way the user can bind it."""
        name = ref.name if ref else "default"
        return (
            f"set {provider_env_var(slot.provider)}, pass --cred {slot.provider}.{slot.name}=VALUE (or =env:VAR), "
            f'or add it to {self.store.path} under "{slot.provider}" -> "{name}"'
        )
