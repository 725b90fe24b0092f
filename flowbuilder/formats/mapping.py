"""Helpers shared by the n8n and LangFlow importers/exporters: ids, credentials, secrets, --local."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from flowbuilder.credentials import CredentialResolver, CredentialSlot
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.report import CredentialFound, ImportReport, ParamIssue
from flowbuilder.secrets import is_secret_field, is_secret_value, register_secret

PLACEHOLDER = "placeholder.unsupported"

# The credential slot of each Flowbuilder type an importer can produce (the node modules are written
# in parallel, so the importers must not depend on them being registered).
CREDENTIAL_SLOTS: dict[str, CredentialSlot] = {
    "embedder.openai": CredentialSlot("api_key", "openai"),
    "llm.openai": CredentialSlot("api_key", "openai"),
    "llm.groq": CredentialSlot("api_key", "groq"),
    "llm.ollama": CredentialSlot("api_key", "ollama", required=False),
    "vectorstore.pinecone": CredentialSlot("api_key", "pinecone"),
}


def credential_slot(type_name: str) -> CredentialSlot | None:
    from flowbuilder.registry import default_registry

    registry = default_registry()
    if type_name in registry:
        slots = registry.get(type_name).credential_slots
        return slots[0] if slots else None
    return CREDENTIAL_SLOTS.get(type_name)


def slugify(text: str, fallback: str = "node") -> str:
    """A readable id from a display name: ``"Store the Docs "`` -> ``store-the-docs``."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.strip().lower()).strip("-")
    return slug or fallback


class IdAllocator:
    """Unique node/note ids (``name``, ``name-2`` ...)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def take(self, stem: str) -> str:
        candidate, index = stem, 2
        while candidate in self.taken:
            candidate = f"{stem}-{index}"
            index += 1
        self.taken.add(candidate)
        return candidate


def find_key_shaped(value: Any, path: str = "") -> Iterable[tuple[str, str]]:
    """``(path, value)`` of every string inside ``value`` that is a secret: key-shaped, random-looking,
    or under a secret-named field (``api_key``, ``token``, ``password``, n8n ``credentials.*.data``)."""
    yield from _find_secrets(value, path, under_secret=False)


def _find_secrets(value: Any, path: str, under_secret: bool) -> Iterable[tuple[str, str]]:
    field = path.rsplit(".", 1)[-1].split("[", 1)[0]
    if isinstance(value, str):
        if is_secret_value(field, value) or (under_secret and value.strip() and not value.startswith("=")):
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            secret_branch = under_secret or _is_secret_branch(path, str(key))
            yield from _find_secrets(item, child, secret_branch)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _find_secrets(item, f"{path}[{index}]", under_secret)


def _is_secret_branch(path: str, key: str) -> bool:
    """A dict key whose whole subtree is secret: a secret-named field, or n8n's inline credential data."""
    return is_secret_field(key) or (key == "data" and "credentials" in path.split("."))


def scrub(value: Any, secrets: set[str], path: str = "") -> Any:
    """A copy of ``value`` with every secret string (known, or found by :func:`find_key_shaped`) emptied."""
    found = {text for _, text in find_key_shaped(value, path)}
    return _scrub(value, secrets | found)


def _scrub(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, str):
        return "" if value in secrets else value
    if isinstance(value, dict):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    return value


def remember_secret(secrets: set[str], value: str) -> None:
    secrets.add(value)
    register_secret(value)  # masked if it ever reaches an error or log line


def check_bindings(flow: Flow, report: ImportReport, resolver: CredentialResolver | None) -> None:
    """Fill ``bound`` and ``hint`` of each credential the report lists for a Flowbuilder node."""
    if resolver is None:
        return
    for cred in report.credentials:
        spec = flow.find_node(cred.node)
        if spec is None or not cred.slot:
            continue
        slot = credential_slot(spec.type)
        if slot is None:
            continue
        ref = spec.credentials.get(cred.slot)
        cred.bound = bool(resolver.resolve(spec.id, slot, ref))
        if not cred.bound:
            cred.hint = resolver.describe_sources(slot, ref)


def record_credentials(spec: NodeSpec, report: ImportReport) -> None:
    for slot_name, ref in spec.credentials.items():
        report.credentials.append(CredentialFound(spec.id, slot_name, ref.provider, ref.name, bound=False))


# --local ----------------------------------------------------------------------------------------

_LOCAL_LLM_KEEP = ("temperature", "max_tokens", "system_message", "timeout", "max_retries", "stream")
_STORE_KEEP = ("k", "min_score", "where")
LOCAL_PLACEHOLDER_EMBEDDERS = (
    "embeddingsMistralCloud",
    "MistalAIEmbeddings",
    "MistralAIEmbeddings",
    "embeddingsCohere",
    "CohereEmbeddings",
    "embeddingsOllama",
)
LOCAL_PLACEHOLDER_LLMS = ("lmChatMistralCloud", "lmChatOpenRouter", "MistralModel", "CohereModel")


def apply_local(flow: Flow, report: ImportReport) -> None:
    """Swap remote components for local ones so that a user without keys can run the flow."""
    for spec in flow.nodes:
        original = spec.type
        placeholder_type = (
            str(spec.config.get("original_type", "")).rsplit(".", 1)[-1] if original == PLACEHOLDER else ""
        )
        embed_ports = _placeholder_ports(spec)
        if original in ("embedder.openai", "embedder.ollama") or placeholder_type in LOCAL_PLACEHOLDER_EMBEDDERS:
            spec.type, spec.config = "embedder.local", {}
            _rename_ports(flow, spec.id, embed_ports, "embedder")
        elif original in ("llm.openai", "llm.groq") or placeholder_type in LOCAL_PLACEHOLDER_LLMS:
            spec.config = {k: v for k, v in spec.config.items() if k in _LOCAL_LLM_KEEP}
            spec.type = "llm.ollama"
            _rename_ports(flow, spec.id, embed_ports, "model")
        elif original == "vectorstore.pinecone":
            collection = str(spec.config.get("index") or spec.config.get("namespace") or "flowbuilder")
            spec.config = {"collection": collection, **{k: v for k, v in spec.config.items() if k in _STORE_KEEP}}
            spec.type = "vectorstore.chroma"
        else:
            continue
        spec.credentials = {}
        report.credentials = [c for c in report.credentials if c.node != spec.id]
        detail = f"{original}{f' ({placeholder_type})' if placeholder_type else ''} -> {spec.type}"
        if spec.type == "vectorstore.chroma":
            detail += f" (embedded, collection {spec.config['collection']!r})"
        elif spec.type == "llm.ollama":
            detail += " (default model llama3.2 on a local Ollama server)"
        report.local_swaps.append(ParamIssue(spec.id, "", detail))
        for outcome in report.nodes:
            outcome.targets = [(i, spec.type if i == spec.id else t) for i, t in outcome.targets]


def _placeholder_ports(spec: NodeSpec) -> set[str]:
    if spec.type != PLACEHOLDER:
        return set()
    return set(spec.config.get("output_names", []))


def _rename_ports(flow: Flow, node_id: str, old_ports: set[str], new_port: str) -> None:
    """Edges that left a placeholder through its imported port names now leave the real port."""
    for edge in flow.edges:
        if edge.source == node_id and edge.source_port in old_ports:
            edge.source_port = new_port
