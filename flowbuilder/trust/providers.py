"""Providers, the slots that take their keys and the references flows keep: the tables every trust check reads.

A node declares *slots* (:class:`CredentialSlot`: ``api_key`` of provider ``openai``); a flow stores only
*references* (:class:`CredentialRef`: a provider and an account name, never a value). A key binds to one provider
(docs/decisions/0021): an explicit binding is ``PROVIDER.SLOT``, ``PROVIDER/ACCOUNT`` or ``PROVIDER``
(:func:`binding_keys`), and a reference naming another provider than its slot is refused
(:func:`reference_problem`). :data:`PROVIDER_HOSTS` is where each provider's own service lives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from flowbuilder.trust.terminal import excerpt

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
    "qdrant": ("cloud.qdrant.io",),
}
"""Where each provider's own service lives (a host or a parent domain), reached over https."""

LOCAL_PROVIDERS = frozenset({"ollama", "chroma", "qdrant"})
"""Providers people run on their own machine: loopback is their service too for requests without a key."""

TOKEN_PROVIDERS = ("mcp", "http")
"""Providers of node secrets that are no provider's API key (``tool.mcp``'s and ``tool.http``'s token)."""
BINDING_FORMS = "PROVIDER.SLOT=VALUE (e.g. openai.api_key=...), PROVIDER=VALUE or PROVIDER/ACCOUNT=VALUE"

ENDPOINT_FIELDS = ("base_url", "host", "server_host", "url", "endpoint", "api_base")
"""Config fields that name where a node sends its requests (and so its key)."""


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


def binding_problem(key: str) -> str | None:
    """Why ``key`` cannot be an explicit binding (it names no provider), or None. Bindings are
    ``PROVIDER.SLOT``, ``PROVIDER/ACCOUNT`` or a known ``PROVIDER``."""
    provider, sep, rest = key.partition("/") if "/" in key else key.partition(".")
    if sep and provider and rest:
        return None
    if not sep and key in (*PROVIDER_ENV_VARS, *TOKEN_PROVIDERS):
        return None
    return f"the binding '{excerpt(key, 40)}' names no provider; bind {BINDING_FORMS}"


def binding_keys(slot: CredentialSlot, ref: CredentialRef | None) -> list[str]:
    """The explicit bindings that apply to ``slot`` (most specific first): all name the slot's own provider."""
    provider, name = slot.provider, ref.name if ref else "default"
    return [f"{provider}/{name}", f"{provider}.{slot.name}", provider]


def normalize_address(address: str) -> str:
    """A collection address as the ledger keys it: ``kind:location:collection`` with an on-disk location made
    absolute and real (symlinks followed), so one folder has one address however it is written."""
    kind, sep, rest = address.strip().partition(":")
    location, sep2, collection = rest.rpartition(":")
    if not sep or not sep2 or not location.startswith(("/", "~")):
        return address.strip()
    return f"{kind}:{os.path.realpath(os.path.expanduser(location))}:{collection}"


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
