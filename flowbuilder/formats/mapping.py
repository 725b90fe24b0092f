"""Helpers shared by the n8n and LangFlow importers/exporters: ids, credentials, secrets, --local."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.adapters import PLACEHOLDER as PLACEHOLDER
from flowbuilder.formats.adapters import credential_slot
from flowbuilder.formats.report import CredentialFound, ImportReport
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.secrets import is_secret_field, register_secret, secret_reason


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
    for where, found, _ in find_secrets(value, path):
        yield where, found


def find_secrets(value: Any, path: str = "") -> Iterable[tuple[str, str, str]]:
    """``(path, value, reason)`` for :func:`find_key_shaped`: where each secret is and how it was recognised."""
    yield from _find_secrets(value, path, under_secret=False)


def _find_secrets(value: Any, path: str, under_secret: bool) -> Iterable[tuple[str, str, str]]:
    field = path.rsplit(".", 1)[-1].split("[", 1)[0]
    if isinstance(value, str):
        if value == field or field == "id":  # a name mapped to itself ({"api_key": "api_key"}); a node id
            return
        reason = secret_reason(field, value)
        if reason is None and under_secret and value.strip() and not value.startswith("="):
            reason = "a literal value under a secret-named field or inline credential data"
        if reason is not None:
            yield path, value, reason
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


def placeholder_config(
    fmt: str,
    original_type: str,
    original: Any,
    inputs: Iterable[str] = (),
    outputs: Iterable[str] = (),
    replace: str = "",
) -> dict[str, Any]:
    """A placeholder's config: where it came from, the (scrubbed) original node, the foreign port names it is
    wired through (what an export writes back and ``--local`` rewires) and what replaces it (the format's entry
    for the type says; ``validate`` names it)."""
    config: dict[str, Any] = {
        "source_format": fmt,
        "original_type": original_type,
        "original": original,
        "input_names": list(inputs),
        "output_names": list(outputs),
    }
    if replace:
        config["replace"] = replace
    return config


def record_credentials(spec: NodeSpec, report: ImportReport) -> None:
    for slot_name, ref in spec.credentials.items():
        report.credentials.append(CredentialFound(spec.id, slot_name, ref.provider, ref.name, bound=False))
