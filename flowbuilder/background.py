"""Ingest ahead of the first question: the builder embeds a flow's documents in the background as soon as the
flow is open, so the first question finds the store filled instead of starting the ingest. (Open in a browser:
the page starts it when its own connection opens; a GET of the page alone starts nothing, issue 30.)

Only flows whose whole ingest is local start by themselves (every node in it declares
:attr:`~flowbuilder.capabilities.Capability.LOCAL_ONLY`: file loaders, labellers, splitters, the bundled
embedders, an embedded Chroma or Qdrant, and names no server): nothing is sent anywhere and no key is needed.
The run goes through the session's executor (its result cache then serves the first question) with the usual events,
each tagged ``job: "background-ingest"``, so the page (badges, run log, an activity bar) shows its
progress; it is cancellable, and a cancelled or killed ingest resumes from the embedding cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import networkx as nx

from flowbuilder.capabilities import Capability
from flowbuilder.errors import FlowbuilderError
from flowbuilder.executor import Executor, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.graph import FlowGraph, ResolvedNode, analyze
from flowbuilder.ports import PortType
from flowbuilder.standin import StandIn, keyword_stand_in

JOB = "background-ingest"
REMOTE_FIELDS = ("server_host", "url", "base_url")


def ingest_targets(flow: Flow, graph: FlowGraph) -> list[str]:
    """The store nodes a background ingest would fill: fed with documents, not depending on a question, and
    with an ingest that runs entirely on this machine from files the flow names. Empty when the flow has none
    (or any is not local, or a loader has no file yet). Linear in the flow's size: a 500-node flow opens
    without waiting for this."""
    dependencies = graph.dependency_graph()  # built once: per target it would cost O(n) each
    asked: set[str] = set()
    for nid, node in graph.nodes.items():
        if node.cls.run_input == "text":  # a chat input: what depends on it waits for the question
            asked |= {nid} | set(nx.descendants(graph.graph, nid))
    documents_in = {
        e.target
        for e in flow.edges
        if e.target in graph.nodes
        and (port := graph.nodes[e.target].inputs.get(e.target_port)) is not None
        and port.type in (PortType.CHUNKS, PortType.RECORDS)
    }
    targets = [
        nid
        for nid, node in sorted(graph.nodes.items())
        if not node.spec.disabled
        and nid not in asked
        and nid in documents_in
        and any(p.type is PortType.VECTOR_STORE for p in node.outputs.values())
    ]
    checked: set[str] = set()
    for target in targets:
        for nid in ({target} | nx.ancestors(dependencies, target)) - checked:
            ancestor = graph.nodes.get(nid)
            if ancestor is None or not _local(ancestor) or not _has_input(graph, nid):
                return []
            checked.add(nid)
    return targets


def _has_input(graph: FlowGraph, nid: str) -> bool:
    """False for a loader that has nothing to read yet (no path set, nothing connected): its run could only
    fail with "no file to load", which the user did not ask to see."""
    node = graph.nodes[nid]
    if node.cls.run_input != "file":
        return True
    return bool(node.cls.config_paths(node.config)) or graph.graph.in_degree(nid) > 0


def _local(node: ResolvedNode) -> bool:
    if Capability.LOCAL_ONLY not in node.cls.capabilities:
        return False
    return not any(str(getattr(node.config, name, "") or "").strip() for name in REMOTE_FIELDS)


class BackgroundIngest:
    """One background ingest of one flow (``start`` once; ``cancel`` and ``wait`` from any thread)."""

    def __init__(
        self,
        executor: Executor,
        flow: Flow,
        *,
        base_dir: Path | None = None,
        on_event: Callable[[RunEvent], None] | None = None,
        session_id: str = "background",
        flow_file: Path | None = None,
    ) -> None:
        self.executor = executor
        self.flow = flow
        self.base_dir = base_dir
        self.flow_file = flow_file
        """The flow's file, when saved: which flow it is (its own stores, :mod:`flowbuilder.trust.scopes`)."""
        self.on_event = on_event
        self.session_id = session_id
        self.cancel_event = threading.Event()
        self._go = threading.Event()  # cleared while a question is answered: the ingest waits between batches
        self._go.set()
        self.results: list[RunResult] = []
        self.error: str | None = None
        self.seconds = 0.0
        self._counts: dict[str, tuple[int, int]] = {}  # store node -> (embedded, of), never going back
        self._thread: threading.Thread | None = None
        self._graph: FlowGraph | None = None
        self._stand_in: StandIn | bool | None = False  # False: not worked out yet
        try:
            self._graph = analyze(
                flow,
                executor.registry,
                executor.resolver,
                base_dir=base_dir,
                flow_file=flow_file,
                data_dir=executor.data_dir,
            )
            self.targets = ingest_targets(flow, self._graph)
        except FlowbuilderError:
            self.targets = []
        if self.targets:  # the run works on a copy: the builder goes on editing its flow meanwhile
            self.flow = flow.model_copy(deep=True)

    @property
    def done(self) -> int:
        """Texts embedded so far, over every store this ingest fills (it never goes back)."""
        return sum(done for done, _ in self._counts.values())

    @property
    def total(self) -> int:
        return sum(total for _, total in self._counts.values())

    def stand_in(self) -> StandIn | None:
        """The flow with keyword search in place of the stores' dense search (None when the flow has no such
        search to stand in for: see :mod:`flowbuilder.standin`)."""
        if self._stand_in is False:
            graph = self._graph
            self._stand_in = keyword_stand_in(self.flow, graph, self.targets) if graph is not None else None
        return self._stand_in if isinstance(self._stand_in, StandIn) else None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def finished(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def start(self) -> bool:
        """Start on a daemon thread; False when the flow has no local ingest to do."""
        if not self.targets or self._thread is not None:
            return False
        self._thread = threading.Thread(target=self._run, name="flowbuilder-background-ingest", daemon=True)
        self._thread.start()
        return True

    def covers(self, flow: Flow) -> bool:
        """True when ``flow`` still has the nodes and edges this ingest runs (an edit since makes it stale)."""
        return [n.model_dump() for n in flow.nodes] == [n.model_dump() for n in self.flow.nodes] and [
            e.model_dump() for e in flow.edges
        ] == [e.model_dump() for e in self.flow.edges]

    def cancel(self) -> None:
        self.cancel_event.set()
        self._go.set()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """While inside, the ingest waits after its current batch: a question answered meanwhile (by keyword
        search) has the CPU to itself instead of sharing it with the embedding. The pause happens in the event
        callback, which the executor calls from the ingest's own thread between batches, holding no lock."""
        self._go.clear()
        try:
            yield
        finally:
            self._go.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the ingest ends (True) or ``timeout`` passes (False)."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _event(self, event: RunEvent) -> None:
        event.data["job"] = JOB
        if event.kind == "progress" and event.node_id in self.targets and event.data.get("message") == "embedding":
            # a store's count only: a labeller's "0/500" or a later stage of the store must not turn
            # "Embedding 500/500" back into "0/500"
            done, total = int(event.data.get("done", 0) or 0), int(event.data.get("total", 0) or 0)
            before = self._counts.get(event.node_id, (0, 0))
            self._counts[event.node_id] = (max(done, before[0]), max(total, before[1]))
        if self.on_event is not None:
            self.on_event(event)
        if event.kind == "progress":
            self._go.wait()

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            for target in self.targets:
                if self.cancel_event.is_set():
                    break
                result = self.executor.run(
                    self.flow,
                    to=target,
                    on_event=self._event,
                    cancel_event=self.cancel_event,
                    session_id=self.session_id,
                    base_dir=self.base_dir,
                    flow_file=self.flow_file,
                )
                self.results.append(result)
                failed = result.failed()
                if failed:
                    self.error = str(failed[0].error)
                    break
        except FlowbuilderError as exc:  # an invalid flow: the user's own run will show the issues
            self.error = str(exc)
        finally:
            self.seconds = time.perf_counter() - started
