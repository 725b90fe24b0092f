"""Per-browser-tab editor session: the state, one Executor (so its cache makes re-runs instant),
the session's credential bindings and the last run's results. Plain Python, no NiceGUI."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.background import BackgroundIngest
from flowbuilder.executor import Executor, NodeResult
from flowbuilder.flow import Flow
from flowbuilder.registry import NodeRegistry
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.providers import CredentialRef, CredentialSlot
from flowbuilder.trust.scopes import FlowScope, flow_scope
from flowbuilder.ui.state import EditorState

PAGES: dict[str, Any] = {}
"""The builder page of each connected client, by client id (tests and debugging). Kept here, not in
app.py, because NiceGUI's test reset re-imports the module that defines the page functions."""


@dataclass
class AppConfig:
    """What ``flowbuilder ui`` was started with; shared by every tab."""

    workspace: Path = field(default_factory=lambda: Path("flowbuilder-workspace"))
    initial_flow: Path | None = None
    registry: NodeRegistry | None = None
    allowed_paths: tuple[str, ...] = ()
    """``--allow-path`` folders: every tab's flows may read them."""
    cluster: Any = None
    """``--ray``: the Ray cluster every tab's runs send their ingest batches to (a Cancel cancels them there too)."""


@dataclass
class EditorSession:
    """One browser session's editor: the flow state, credentials, executor and results."""

    state: EditorState
    resolver: CredentialResolver
    executor: Executor
    workspace: Path
    path: Path | None = None
    results: dict[str, NodeResult] = field(default_factory=dict)
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    selected: str | None = None
    # (provider, credential name) -> key typed in the UI; bound to every node slot using that account
    account_keys: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)
    background: BackgroundIngest | None = None
    """The ingest started when the flow opened (:mod:`flowbuilder.background`), while it is going."""

    def __post_init__(self) -> None:
        self.state.folder = lambda: self.base_dir
        self.state.file = lambda: self.path

    @classmethod
    def create(cls, flow: Flow, config: AppConfig, path: Path | None = None) -> EditorSession:
        state = EditorState(flow, config.registry)
        resolver = CredentialResolver(paths=config.allowed_paths, workspace=config.workspace)
        executor = Executor(state.registry, resolver, cluster=config.cluster)
        return cls(state=state, resolver=resolver, executor=executor, workspace=config.workspace, path=path)

    @property
    def base_dir(self) -> Path:
        """Relative paths in configs resolve against the flow file's folder (else the workspace)."""
        return (self.path.parent if self.path else self.workspace).resolve()

    @property
    def scope(self) -> FlowScope:
        """Which flow is open (:mod:`flowbuilder.trust.scopes`): what its stores and memory belong to."""
        return flow_scope(self.state.flow.meta, self.path, self.base_dir)


def binding_source(
    resolver: CredentialResolver, node_id: str, slot: CredentialSlot, ref: CredentialRef | None
) -> str | None:
    """Where a slot's secret would come from: ``session``, ``store``, ``env`` or None (unbound)."""
    return resolver.source(node_id, slot, ref)
