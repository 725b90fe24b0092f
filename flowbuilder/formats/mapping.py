"""Helpers shared by the n8n and LangFlow importers/exporters: ids, credentials, secrets, --local."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from flowbuilder.credentials import CredentialResolver
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.adapters import credential_slot
from flowbuilder.formats.report import CredentialFound, ImportReport
from flowbuilder.secrets import looks_like_key, register_secret

PLACEHOLDER = "placeholder.unsupported"


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
    """``(path, value)`` of every string inside ``value`` shaped like a provider API key."""
    if isinstance(value, str):
        if looks_like_key(value):
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from find_key_shaped(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from find_key_shaped(item, f"{path}[{index}]")


def scrub(value: Any, secrets: set[str]) -> Any:
    """A copy of ``value`` with every secret string replaced by an empty string."""
    if isinstance(value, str):
        return "" if value in secrets or looks_like_key(value) else value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
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
