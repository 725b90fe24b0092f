"""Credentials on a Ray worker: only the run's bound secrets, never the worker's environment or files."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.providers import CredentialRef, CredentialSlot
from flowbuilder.trust.secrets import register_secret


class BoundResolver(CredentialResolver):
    """Resolves a slot to the secret the driver bound for that node and slot, and to nothing else: a worker's
    own ``OPENAI_API_KEY`` or credentials file is never used for someone else's run. The driver's endpoint, command
    and collection approvals come along, so the worker's checks agree with the driver's."""

    def __init__(
        self,
        secrets: Mapping[str, Mapping[str, str]],
        approved: Iterable[tuple[str, str]] = (),
        commands: Iterable[str] = (),
        stores: Iterable[str] = (),
    ) -> None:
        nowhere = Path(tempfile.gettempdir()) / "flowbuilder-worker-has-no-credentials-file.json"
        super().__init__(store=CredentialStore(nowhere), environ={}, commands=commands, stores=stores)
        self.approved = set(approved)
        self._bound = {node: dict(slots) for node, slots in secrets.items()}
        for slots in self._bound.values():
            for value in slots.values():
                register_secret(value)  # masked in anything this worker reports

    def resolve(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        return self._bound.get(node_id, {}).get(slot.name) or None

    def source(self, node_id: str, slot: CredentialSlot, ref: CredentialRef | None) -> str | None:
        """Bound by the driver for this run: a session binding (where it may go is checked again here)."""
        return "session" if self.resolve(node_id, slot, ref) else None

    def endpoint_approved(self, provider: str, account: str, origin: str) -> bool:
        return (provider, origin) in self.approved or (account, origin) in self.approved


def bound_secrets(executor: Any, graph: Any, node_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """``{node id: {slot: secret}}`` for ``node_ids`` as the driver binds them for this run (the egress checks
    that may refuse a key run here, on the driver, before anything is sent)."""
    bound: dict[str, dict[str, str]] = {}
    policy = executor.policy
    for node_id in node_ids:
        node = graph.nodes[node_id]
        keys = policy.node_keys(node_id, node.cls, node.config, node.spec.credentials)
        if keys:
            bound[node_id] = keys
    return bound
