"""Credentials on a Ray worker: only the run's bound secrets, never the worker's environment or files."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flowbuilder.credentials import CredentialRef, CredentialResolver, CredentialSlot, CredentialStore
from flowbuilder.secrets import register_secret


class BoundResolver(CredentialResolver):
    """Resolves a slot to the secret the driver bound for that node and slot, and to nothing else: a worker's
    own ``OPENAI_API_KEY`` or credentials file is never used for someone else's run. The driver's endpoint and
    command approvals come along, so the worker's egress checks agree with the driver's."""

    def __init__(
        self,
        secrets: Mapping[str, Mapping[str, str]],
        approved: Iterable[tuple[str, str]] = (),
        commands: Iterable[str] = (),
    ) -> None:
        nowhere = Path(tempfile.gettempdir()) / "flowbuilder-worker-has-no-credentials-file.json"
        super().__init__(store=CredentialStore(nowhere), environ={}, commands=commands)
        self.approved = set(approved)
        self._bound = {node: dict(slots) for node, slots in secrets.items()}
        for slots in self._bound.values():
            for value in slots.values():
                register_secret(value)  # masked in anything this worker reports

    def resolve(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        return self._bound.get(node_id, {}).get(slot.name) or None

    def endpoint_approved(self, provider: str, account: str, origin: str) -> bool:
        return (provider, origin) in self.approved or (account, origin) in self.approved


def bound_secrets(executor: Any, graph: Any, node_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """``{node id: {slot: secret}}`` for ``node_ids`` as the driver binds them for this run (the egress checks
    that may refuse a key run here, on the driver, before anything is sent)."""
    bound: dict[str, dict[str, str]] = {}
    for node_id in node_ids:
        node = graph.nodes[node_id]
        for slot in node.cls.credential_slots:
            value = executor.resolver.resolve_for(node_id, slot, node.spec.credentials.get(slot.name), node.config)
            if value:
                bound.setdefault(node_id, {})[slot.name] = value
    return bound
