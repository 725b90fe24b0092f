"""Credential slots, references and binding.

A node declares *slots* (``api_key`` of provider ``openai``). A flow stores only *references*: for a
slot, the provider and the credential's name (``{"provider": "openai", "name": "OPENAI_API_KEY"}``),
never a value. At run time a :class:`CredentialResolver` binds each reference from, in order:

1. explicit bindings (``--cred SLOT=VALUE`` or ``--cred SLOT=env:VAR``, or the UI's dialog), where
   SLOT is ``node_id.slot``, a slot name, a provider or a credential name;
2. the local credentials file (JSON, mode 0600, in the user's config dir or ``$FLOWBUILDER_CREDENTIALS``),
   shaped ``{"provider": {"credential name": "value"}}``;
3. environment variables: the reference's name when it looks like a variable name
   (LangFlow's global variables such as ``OPENAI_API_KEY``), else the provider's usual variable.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_config_dir
from pydantic import BaseModel, ConfigDict

from flowbuilder.errors import CredentialError
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

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


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
        return {str(p): {str(n): str(v) for n, v in (names or {}).items()} for p, names in data.items()}

    def get(self, provider: str, name: str) -> str | None:
        names = self._read().get(provider, {})
        return names.get(name) or (names.get("default") if name != "default" else None)

    def names(self) -> dict[str, list[str]]:
        return {provider: sorted(names) for provider, names in self._read().items()}

    def set(self, provider: str, name: str, value: str) -> None:
        data = self._read()
        data.setdefault(provider, {})[name] = value
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


class CredentialResolver:
    """Binds credential references to secrets for a run (see the module docstring for the order)."""

    def __init__(
        self,
        explicit: Mapping[str, str] | None = None,
        store: CredentialStore | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.explicit = dict(explicit or {})
        self.store = store if store is not None else CredentialStore()
        self.environ = environ if environ is not None else os.environ
        for value in self.explicit.values():
            register_secret(value)

    def bind(self, key: str, value: str) -> None:
        register_secret(value)
        self.explicit[key] = value

    def resolve(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        """The secret for ``slot`` of ``node_id``, or None when nothing binds it."""
        provider = ref.provider if ref else slot.provider
        name = ref.name if ref else "default"
        for key in (f"{node_id}.{slot.name}", slot.name, name, provider):
            if key in self.explicit:
                return self.explicit[key]
        try:
            stored = self.store.get(provider, name)
        except CredentialError:
            raise
        if stored:
            register_secret(stored)
            return stored
        candidates = [name] if _ENV_NAME.match(name) else []
        if provider in PROVIDER_ENV_VARS:
            candidates.append(PROVIDER_ENV_VARS[provider])
        for var in candidates:
            value = self.environ.get(var)
            if value:
                register_secret(value)
                return value
        return None

    def describe_sources(self, slot: CredentialSlot, ref: CredentialRef | None) -> str:
        """A hint for an unbound slot: every way the user can bind it."""
        provider = ref.provider if ref else slot.provider
        name = ref.name if ref else "default"
        env = name if _ENV_NAME.match(name) else PROVIDER_ENV_VARS.get(provider, f"{provider.upper()}_API_KEY")
        return (
            f"set {env}, pass --cred {slot.name}=VALUE (or =env:VAR), "
            f'or add it to {self.store.path} under "{provider}" -> "{name}"'
        )
