"""Credential slots, references and binding.

A node declares *slots* (``api_key`` of provider ``openai``). A flow stores only *references*: for a
slot, the provider and the credential's name (``{"provider": "openai", "name": "OPENAI_API_KEY"}``),
never a value. At run time a :class:`CredentialResolver` binds each reference from, in order:

1. explicit bindings (``--cred SLOT=VALUE`` or ``--cred SLOT=env:VAR``, or the UI's dialog), where
   SLOT is ``node_id.slot``, a slot name, a provider or a credential name;
2. the local credentials file (JSON, mode 0600, in the user's config dir or ``$FLOWBUILDER_CREDENTIALS``),
   shaped ``{"provider": {"credential name": "value"}}``;
3. the provider's standard environment variable (``OPENAI_API_KEY`` for ``openai``).

A flow never names an environment variable: a reference is a provider and an account name, and the
account name is never looked up in the environment (a shared flow could otherwise ask for
``AWS_SECRET_ACCESS_KEY``). Reading another variable is a binding the user makes (``SLOT=env:VAR``).

A secret is sent only where its provider lives: a node whose configured endpoint (``base_url``, ``host``
...) is neither the provider's own service nor this machine gets its key only when the user approved
that endpoint for that account (``--allow-endpoint PROVIDER[/ACCOUNT]=URL`` or the credentials file's
``"approved_endpoints"``); :func:`endpoint_problem` says why not.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from platformdirs import user_config_dir
from pydantic import BaseModel, ConfigDict

from flowbuilder.errors import CredentialError, FlowbuilderError
from flowbuilder.netguard import is_loopback
from flowbuilder.pathguard import DEFAULT_WORKSPACE, FileRoots, approved_folders
from flowbuilder.secrets import register_secret

log = logging.getLogger(__name__)

PROVIDER_ENV_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "groq": "GROQ_API_KEY",
    "pinecone": "PINECONE_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "COHERE_API_KEY",
    "ollama": "OLLAMA_API_KEY",
    "chroma": "CHROMA_API_KEY",
    "qdrant": "QDRANT_API_KEY",
}

PROVIDER_HOSTS: dict[str, tuple[str, ...]] = {
    "openai": ("api.openai.com",),
    "groq": ("api.groq.com",),
    "pinecone": ("pinecone.io",),
    "mistral": ("api.mistral.ai",),
    "cohere": ("api.cohere.com", "api.cohere.ai"),
    "ollama": ("ollama.com",),
    "chroma": ("trychroma.com",),
}
"""Where each provider's own service lives (a host or a parent domain); loopback is always allowed."""

ENDPOINT_FIELDS = ("base_url", "host", "server_host", "url", "endpoint", "api_base")
"""Config fields that name where a node sends its requests (and so its key)."""

APPROVED_KEY = "approved_endpoints"
"""Section of the credentials file: ``{"provider/account": ["https://host", ...]}``."""
COMMANDS_KEY = "approved_commands"
"""Section of the credentials file: command lines the user lets flows start (``tool.mcp`` over stdio)."""
PATHS_KEY = "approved_paths"
"""Section of the credentials file: folders the user lets every flow read (see :mod:`flowbuilder.pathguard`)."""
_SECTIONS = (APPROVED_KEY, COMMANDS_KEY, PATHS_KEY)


@dataclass(frozen=True)
class CredentialSlot:
    """A secret a node needs: which provider and which field, and whether the node can do without."""

    name: str
    provider: str
    field: str = "api_key"
    required: bool = True
    description: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "provider": self.provider,
            "field": self.field,
            "required": self.required,
            "description": self.description,
        }


class CredentialRef(BaseModel):
    """What a flow stores for a slot: a provider and a credential name, never the secret."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    name: str = "default"


def default_credentials_path() -> Path:
    override = os.environ.get("FLOWBUILDER_CREDENTIALS")
    if override:
        return Path(override)
    return Path(user_config_dir("flowbuilder")) / "credentials.json"


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
        os.chmod(tmp, 0o600)
        tmp.replace(self.path)


def parse_cred_option(option: str) -> tuple[str, str]:
    """Parse ``SLOT=VALUE`` or ``SLOT=env:VAR`` from the command line into ``(slot, secret)``."""
    if "=" not in option:
        raise CredentialError(f"--cred expects SLOT=VALUE or SLOT=env:VAR, got '{option.split('=')[0]}' with no '='.")
    key, value = option.split("=", 1)
    if value.startswith("env:"):
        var = value[4:]
        env_value = os.environ.get(var)
        if not env_value:
            raise CredentialError(f"--cred {key}=env:{var}: the environment variable {var} is not set.")
        value = env_value
    if not key or not value:
        raise CredentialError("--cred expects SLOT=VALUE or SLOT=env:VAR with both parts non-empty.")
    return key, value


def endpoint_origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (lower case), the unit an approval covers."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = (parts.hostname or "").lower()
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme.lower()}://{host}{port}"


def configured_endpoint(config: Any) -> str | None:
    """The endpoint a node's config points its requests at, or None for the provider's default."""
    for field in ENDPOINT_FIELDS:
        value = getattr(config, field, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def is_provider_endpoint(provider: str, url: str) -> bool:
    """Whether ``url`` is ``provider``'s own service or this machine."""
    host = (urlsplit(url if "://" in url else f"http://{url}").hostname or "").lower()
    if is_loopback(host):
        return True
    return any(host == known or host.endswith("." + known) for known in PROVIDER_HOSTS.get(provider, ()))


def normalize_command(command: str) -> str:
    """One spelling of a command line (whitespace folded), the unit an approval covers."""
    return " ".join(command.split())


def provider_env_var(provider: str) -> str:
    return PROVIDER_ENV_VARS.get(provider, f"{provider.upper()}_API_KEY")


def reference_problem(slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
    """Why a flow's reference for ``slot`` is refused (it names another provider's key), or None."""
    if ref is not None and ref.provider != slot.provider:
        return (
            f"the reference names provider '{ref.provider}' but the slot takes a '{slot.provider}' key; "
            f"a flow cannot route one provider's key to another: set the reference's provider to '{slot.provider}'"
        )
    return None


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
    ) -> None:
        self.explicit = dict(explicit or {})
        self.store = store if store is not None else CredentialStore()
        self.environ = environ if environ is not None else os.environ
        self.approved: set[tuple[str, str]] = {(key, endpoint_origin(url)) for key, url in approved}
        """Endpoints approved for this session: ``(provider or provider/account, origin)``."""
        self.commands: set[str] = {normalize_command(c) for c in commands}
        """Command lines approved for this session (``--allow-command``)."""
        self.paths: list[Path] = list(approved_folders(paths))
        """Folders approved for this session (``--allow-path``, the builder's Approve button)."""
        self.workspace = workspace if workspace is not None else DEFAULT_WORKSPACE
        for value in self.explicit.values():
            register_secret(value)

    def bind(self, key: str, value: str) -> None:
        register_secret(value)
        self.explicit[key] = value

    def approve(self, key: str, url: str) -> None:
        """Approve ``url`` for ``key`` (``provider`` or ``provider/account``) for this session."""
        self.approved.add((key, endpoint_origin(url)))

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

    def _candidates(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> tuple[str, str, list[str]]:
        provider = slot.provider
        name = ref.name if ref else "default"
        return provider, name, [f"{node_id}.{slot.name}", slot.name, name, provider]

    def source(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        """Where the slot's secret would come from: ``session``, ``store``, ``env`` or None (unbound)."""
        if reference_problem(slot, ref):
            return None
        provider, name, keys = self._candidates(node_id, slot, ref)
        if any(key in self.explicit for key in keys):
            return "session"
        try:
            if self.store.get(provider, name):
                return "store"
        except CredentialError:
            return None
        if provider in PROVIDER_ENV_VARS and self.environ.get(PROVIDER_ENV_VARS[provider]):
            return "env"
        return None

    def resolve(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        """The secret for ``slot`` of ``node_id``, or None when nothing binds it."""
        if reference_problem(slot, ref):
            return None
        provider, name, keys = self._candidates(node_id, slot, ref)
        for key in keys:
            if key in self.explicit:
                return self.explicit[key]
        stored = self.store.get(provider, name)
        if stored:
            register_secret(stored)
            return stored
        var = PROVIDER_ENV_VARS.get(provider)
        value = self.environ.get(var) if var else None
        if value:
            register_secret(value)
            return value
        return None

    def endpoint_problem(self, slot: CredentialSlot, ref: CredentialRef | None, config: Any) -> str | None:
        """Why the key must not go where ``config`` points, or None when it may."""
        endpoint = configured_endpoint(config)
        if endpoint is None or is_provider_endpoint(slot.provider, endpoint):
            return None
        origin = endpoint_origin(endpoint)
        account = f"{slot.provider}/{ref.name if ref else 'default'}"
        if (slot.provider, origin) in self.approved or (account, origin) in self.approved:
            return None
        if origin in self.store.approved_endpoints().get(account, []):
            return None
        return (
            f"its {slot.provider} key would be sent to {origin}, which is not {slot.provider}'s service; "
            f"approve it only if you trust that server (flowbuilder run --allow-endpoint {account}={origin}, "
            "or the issue's Approve button in the builder), or clear the node's endpoint field"
        )

    def command_problem(self, command: str) -> str | None:
        """Why a flow may not start ``command`` on this machine, or None when the user approved it."""
        line = normalize_command(command)
        if line in self.commands or line in {normalize_command(c) for c in self.store.approved_commands()}:
            return None
        return (
            f"it would start the program `{line[:200]}` on this machine, and a flow file cannot start programs "
            f"by itself; if you trust it, approve it: flowbuilder run --allow-command '{line[:200]}' "
            f'(or list it under "{COMMANDS_KEY}" in {self.store.path})'
        )

    def resolve_for(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None, config: Any) -> str | None:
        """:meth:`resolve`, refusing with :class:`CredentialError` when the node would send the key elsewhere."""
        problem = reference_problem(slot, ref) or self.endpoint_problem(slot, ref, config)
        value = self.resolve(node_id, slot, ref)
        if problem and (value or reference_problem(slot, ref)):
            raise CredentialError(f"Node '{node_id}': credential slot '{slot.name}': {problem}.")
        return value

    def describe_sources(self, slot: CredentialSlot, ref: CredentialRef | None) -> str:
        """A hint for an unbound slot: every way the user can bind it."""
        name = ref.name if ref else "default"
        return (
            f"set {provider_env_var(slot.provider)}, pass --cred {slot.name}=VALUE (or =env:VAR), "
            f'or add it to {self.store.path} under "{slot.provider}" -> "{name}"'
        )
