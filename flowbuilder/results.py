"""What a run produces and what its nodes share: events, per-node results, the run's result, and the
public step between graph and ``run`` (:class:`PreparedNode`, built by :meth:`Executor.prepare_node
<flowbuilder.executor.Executor.prepare_node>`).

They live below both the executor and :mod:`flowbuilder.streaming` (which runs chains of prepared nodes), so
neither imports the other: the executor hands streaming a :class:`NodePreparer`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from flowbuilder.cache import ResultCache
from flowbuilder.graph import FlowGraph
from flowbuilder.node import RunContext
from flowbuilder.trust.pathguard import FileRoots


@dataclass
class RunEvent:
    """One thing that happened in a run (``node_started``, ``progress``, ``token`` ...), for a UI or a log."""

    kind: str
    node_id: str | None
    data: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "node_id": self.node_id, "time": self.time, **self.data}


EventHandler = Callable[[RunEvent], None]


@dataclass
class NodeResult:
    """What one node's run gave: its status, outputs, summary, error, inspect-only details and cache key."""

    node_id: str
    type_name: str
    status: str
    """``ok``, ``cached``, ``warning`` (succeeded, but see ``warning``), ``failed``, ``skipped``, ``disabled``,
    ``unused`` (an alternative input the run did not take) or ``cancelled``."""
    outputs: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    duration: float = 0.0
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    warning: str = ""
    """Why a succeeded result is suspicious, e.g. "collection vwo is empty: its ingest branch was disabled"."""
    blocked_by: str | None = None
    """For ``skipped``: the upstream node whose missing output stopped this one."""

    @property
    def succeeded(self) -> bool:
        return self.status in ("ok", "cached", "warning")


@dataclass
class RunResult:
    """Every node's result of one run, in run order."""

    order: list[str]
    results: dict[str, NodeResult]
    cancelled: bool = False
    config_keys: dict[str, str] = field(default_factory=dict)
    """:func:`flowbuilder.graph.config_keys` of the nodes this run covered; pass it to
    :func:`flowbuilder.graph.changed_since` later to know what was edited since."""

    @property
    def ok(self) -> bool:
        return not self.cancelled and all(
            r.status in ("ok", "cached", "warning", "disabled", "unused") for r in self.results.values()
        )

    def failed(self) -> list[NodeResult]:
        return [r for r in self.results.values() if r.status == "failed"]

    def warnings(self) -> list[NodeResult]:
        return [self.results[n] for n in self.order if self.results[n].warning]

    def cause(self, node_id: str) -> str:
        """Why ``node_id`` delivered nothing: "was disabled", "failed", "was cancelled" or "did not run"."""
        seen: set[str] = set()
        result = self.results.get(node_id)
        while result is not None and result.status == "skipped" and result.blocked_by and node_id not in seen:
            seen.add(node_id)
            node_id = result.blocked_by
            result = self.results.get(node_id)
        if result is None:
            return "did not run"
        return {"disabled": "was disabled", "failed": "failed", "cancelled": "was cancelled"}.get(
            result.status, "did not run" if not result.succeeded else "produced nothing"
        )

    def sinks(self, graph: FlowGraph) -> list[str]:
        """Nodes in this run whose outputs feed nothing else in it (the flow's final outputs)."""
        ran = set(self.order)
        return [n for n in self.order if not any(s in ran for s in graph.graph.successors(n))]


@dataclass
class PreparedNode:
    """A node ready to run: its input values, context and cache key (made by
    :meth:`flowbuilder.executor.Executor.prepare_node`)."""

    node_id: str
    type_name: str
    node: Any
    values: dict[str, Any]
    ctx: RunContext
    key: str


@dataclass
class RunScope:
    """What every node of one run shares: the analysed graph, the results and cache keys so far, the run's
    inputs, cancel flag and event sink, and where its files may be read from."""

    graph: FlowGraph
    results: dict[str, NodeResult]
    keys: dict[str, str]
    run_inputs: dict[str, str]
    cancel: threading.Event
    emit: Callable[[str, str | None, dict[str, Any] | None], None]
    session_id: str
    use_cache: bool
    base_dir: Path | None
    files: FileRoots
    data_dir: Path
    """Flowbuilder's data dir for this run (the flow's own state lives in ``graph.scope.state_dir(data_dir)``)."""


class NodePreparer(Protocol):
    """What :func:`flowbuilder.streaming.run_chain` needs of an executor: its result cache, the step that
    readies one node (inputs, cache key, credentials, context) or says why it must not run, and the Ray cluster
    its chains' batches run on (``--ray``; :class:`flowbuilder.cluster.driver.Cluster`, or None)."""

    cache: ResultCache
    cluster: Any

    def prepare_node(self, scope: RunScope, node_id: str, use_cache: bool) -> NodeResult | PreparedNode: ...

    def filter_outputs(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """A node's outputs as the executor passes them on (masked in place for a served flow)."""
        ...
