"""The executor: runs a validated flow in a deterministic topological order.

Per node it emits events (``node_started``, ``node_finished`` with duration, summary and ``warning``,
``node_cached``, ``node_failed``, ``node_skipped``, plus ``progress``, ``token`` and ``log`` from
inside a node). A failed node stops only its dependants: independent branches finish and completed
results are kept. Disabled nodes are skipped, and so is whatever needs their output. Cancellation
is honoured between nodes and inside batch work (through :meth:`RunContext.progress`).

A store node that only reads a collection runs after the store nodes writing it
(:func:`flowbuilder.graph.implicit_dependencies`). A node that succeeded over something suspicious
(an empty collection, an ingest branch that did not run) gets status ``warning`` with the reason.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from flowbuilder.cache import CachedResult, ResultCache, node_key
from flowbuilder.data import Document, Hit
from flowbuilder.errors import (
    CredentialError,
    FlowbuilderError,
    FlowValidationError,
    NodeExecutionError,
    PortValueError,
    RunCancelledError,
)
from flowbuilder.flow import Edge, Flow
from flowbuilder.graph import WRITER_PORT, FlowGraph, analyze, config_keys
from flowbuilder.node import RunContext
from flowbuilder.ports import PortKind
from flowbuilder.portvalues import check_port_values
from flowbuilder.registry import NodeRegistry, default_registry
from flowbuilder.results import EventHandler, NodeResult, PreparedNode, RunEvent, RunResult, RunScope
from flowbuilder.streaming import plan_chains, run_chain, stream_mode
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.places import resolve_path
from flowbuilder.trust.policy import TrustPolicy
from flowbuilder.trust.secrets import redact, redact_obj

log = logging.getLogger(__name__)

GENERIC_INPUT = "*"
"""Key of ``inputs`` whose text goes to every node that takes text run input (chat inputs)."""

__all__ = [
    "GENERIC_INPUT",
    "EventHandler",
    "Executor",
    "NodeResult",
    "PreparedNode",
    "RunEvent",
    "RunResult",
    "RunScope",
]


class Executor:
    """Runs flows; keeps a result cache between runs (content-addressed, see :mod:`flowbuilder.cache`)."""

    def __init__(
        self,
        registry: NodeRegistry | None = None,
        resolver: CredentialResolver | None = None,
        cache: ResultCache | None = None,
        data_dir: Path | None = None,
        stream: str | None = None,
        served: bool = False,
        cluster: Any = None,
    ) -> None:
        self.registry = registry or default_registry()
        self.resolver = resolver or CredentialResolver()
        self.cache = cache if cache is not None else ResultCache()
        self.data_dir = data_dir
        self.stream = stream_mode(stream)
        """When chains of nodes run batch by batch: ``auto``, ``always`` or ``never`` (:mod:`flowbuilder.streaming`)."""
        self.served = served
        """What the runs produce leaves the machine (``serve``, ``mcp``, the Serve tab): every text a node outputs is
        masked where it is made, keeping its length (:func:`flowbuilder.trust.secrets.mask_in_place`), so sources are
        masked before any splitter cuts them and no chunk size or overlap hands a secret out piece by piece."""
        self.cluster = cluster
        """A Ray cluster (``--ray``: a :class:`flowbuilder.cluster.driver.Cluster`, not imported here since the
        cluster's workers run executors): every ingest chain streams, its batches run on the cluster's workers;
        None: everything runs in this process."""

    @property
    def policy(self) -> TrustPolicy:
        """The trust room's face for this executor's runs: its resolver (bindings, approvals), data dir, served."""
        return TrustPolicy(self.resolver, data_dir=self.data_dir, served=self.served)

    def filter_outputs(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """A node's outputs as this executor passes them on: masked in place when :attr:`served` (the policy's
        :meth:`~flowbuilder.trust.policy.TrustPolicy.mask`, over every text of documents, hits and strings)."""
        return passed_on(outputs, self.policy.mask) if self.served else outputs

    def run(
        self,
        flow: Flow,
        *,
        inputs: Mapping[str, str] | str | None = None,
        to: str | None = None,
        on_event: EventHandler | None = None,
        cancel_event: threading.Event | None = None,
        session_id: str = "default",
        use_cache: bool = True,
        base_dir: Path | None = None,
        reuse: Mapping[str, NodeResult] | None = None,
        analyzed: FlowGraph | None = None,
        flow_file: Path | None = None,
    ) -> RunResult:
        """Validate ``flow`` and run it (or only ``to`` and its ancestors).

        :param inputs: text for chat inputs (a string), or ``{node_id: value}`` with ``"*"`` for all.
        :param reuse: succeeded results taken as they are instead of running their nodes (a server's ingest,
            done once under an exclusive lock, reused by every concurrent search); shown as ``cached``.
        :param analyzed: what ``analyze`` gave for this very flow, ``to`` and ``base_dir`` (read only here): a
            server analyses its search flow once instead of on every search.
        :param flow_file: the flow's file (``base_dir`` defaults to its folder): which flow this is, so its stores,
            chat memory and cached results are its own (:mod:`flowbuilder.trust.scopes`).
        :raises FlowValidationError: before anything runs, listing every issue in the run's scope.
        """
        run_inputs: dict[str, str] = {GENERIC_INPUT: inputs} if isinstance(inputs, str) else dict(inputs or {})
        if to is not None and flow.find_node(to) is None:
            raise FlowValidationError(
                [_issue("unknown-node", f"--to names no node; nodes: {', '.join(flow.node_ids())}", to)]
            )
        if base_dir is None and flow_file is not None:
            base_dir = Path(flow_file).resolve().parent
        policy = self.policy
        data_dir = policy.data_dir
        policy.start_serving()  # a served run: every key the user has is masked, used by this flow or not
        graph = analyzed or analyze(
            flow, self.registry, only={to} if to else None, base_dir=base_dir, flow_file=flow_file, policy=policy
        )
        # a file the user gives the run (--input NODE=PATH) replaces the node's own path and is the user's choice
        chosen = {
            node_id: value
            for node_id, value in run_inputs.items()
            if node_id in graph.nodes and graph.nodes[node_id].cls.run_input == "file" and value
        }
        if chosen:
            replaced = ("untrusted-path", "unsupported-file")
            graph.issues = [i for i in graph.issues if not (i.code in replaced and i.node_id in chosen)]
        files = policy.file_roots(base_dir, _chosen_files(chosen.values(), base_dir))
        scope_issues = _issues_in_scope(graph, to)
        if scope_issues:
            raise FlowValidationError(scope_issues)
        cancel = cancel_event or threading.Event()
        order = graph.order({to} if to else None)
        if self.cluster is not None:
            self.cluster.refuse_unreachable_stores(flow, self.registry)

        def emit(kind: str, node_id: str | None, data: dict[str, Any] | None = None) -> None:
            if on_event is not None:
                payload = redact_obj(data or {})
                assert isinstance(payload, dict)
                on_event(RunEvent(kind, node_id, payload))

        emit("run_started", None, {"order": order})
        results: dict[str, NodeResult] = {}
        keys: dict[str, str] = {}
        scope = RunScope(
            graph, results, keys, run_inputs, cancel, emit, session_id, use_cache, base_dir, files, data_dir
        )
        cancelled = False
        skipped_with_warning = {w.node_id: w.message for w in graph.warnings if w.node_id}
        unused = _unused_alternatives(graph, run_inputs)
        given_ok = {n for n, r in (reuse or {}).items() if r.succeeded}
        chains = plan_chains(
            graph,
            order,
            "always" if self.cluster is not None else self.stream,
            base_dir,
            run_inputs,
            set(unused) | set(skipped_with_warning) | given_ok,
        )
        deferred = {member for chain in chains.values() for member in chain[:-1]}
        for node_id in order:
            if cancelled or cancel.is_set():
                cancelled = True
                results[node_id] = NodeResult(node_id, _type_of(graph, node_id), "cancelled")
                continue
            if node_id in unused:
                summary = f"not used: an alternative to '{unused[node_id]}', which the run gave its input"
                emit("node_skipped", node_id, {"reason": summary})
                results[node_id] = NodeResult(node_id, _type_of(graph, node_id), "unused", summary=summary)
                continue
            if node_id in skipped_with_warning:
                warning = skipped_with_warning[node_id]
                emit("node_skipped", node_id, {"reason": "unsupported, not connected", "warning": warning})
                results[node_id] = NodeResult(
                    node_id, _type_of(graph, node_id), "warning", summary="skipped", warning=warning
                )
                continue
            given = reuse.get(node_id) if reuse else None
            if given is not None and given.succeeded:
                emit("node_cached", node_id, {"summary": given.summary, "warning": given.warning})
                keys[node_id] = given.key
                results[node_id] = replace(given, status="warning" if given.warning else "cached", duration=0.0)
                continue
            if node_id in deferred:
                continue  # runs with the rest of its stream chain, at the chain's last node
            if node_id in chains:
                results.update(run_chain(self, scope, chains[node_id]))
                result = results[node_id]
            else:
                result = self._run_node(scope, node_id)
            results[node_id] = result
            if result.status == "cancelled":
                cancelled = True
        for node_id in deferred - set(results):  # cancelled before its chain's last node came
            results[node_id] = NodeResult(node_id, _type_of(graph, node_id), "cancelled")
        results = {n: results[n] for n in order if n in results}
        every_key = config_keys(graph)
        run = RunResult(
            order=order,
            results=results,
            cancelled=cancelled,
            config_keys={n: every_key[n] for n in order if n in every_key},
        )
        emit(
            "run_finished",
            None,
            {"ok": run.ok, "cancelled": cancelled, "failed": [r.node_id for r in run.failed()]},
        )
        return run

    def _run_node(self, scope: RunScope, node_id: str) -> NodeResult:
        prepared = self.prepare_node(scope, node_id, scope.use_cache)
        if isinstance(prepared, NodeResult):
            return prepared
        return self._execute_node(prepared, scope.emit)

    def prepare_node(self, scope: RunScope, node_id: str, use_cache: bool) -> NodeResult | PreparedNode:
        """Everything before a node's ``run`` (public: :func:`flowbuilder.streaming.run_chain` prepares a chain's
        members with it): its input values, cache key, cache hit, credentials and
        context; a :class:`NodeResult` when it must not run (disabled, skipped, cached, refused)."""
        graph, results, keys, emit, base_dir = scope.graph, scope.results, scope.keys, scope.emit, scope.base_dir
        run_inputs = scope.run_inputs
        node = graph.nodes[node_id]
        type_name = node.spec.type
        if node.spec.disabled:
            emit("node_skipped", node_id, {"reason": "disabled"})
            return NodeResult(node_id, type_name, "disabled", summary="disabled")

        so_far = RunResult(order=list(results), results=results)
        values: dict[str, Any] = {}
        upstream: dict[str, list[str]] = {}
        missing: dict[str, str] = {}
        incoming = graph.incoming(node_id)
        for edge in incoming:
            source = results.get(edge.source)
            port = node.inputs[edge.target_port]
            if not port.multiple and _delivered_elsewhere(edge, incoming, results, values):
                continue  # one of several alternatives into this input: the first that delivers wins
            upstream.setdefault(port.name, []).append(f"{keys.get(edge.source, 'none')}:{edge.source_port}")
            if source is None or not source.succeeded or source.outputs.get(edge.source_port) is None:
                if port.required:
                    why = f"upstream node '{edge.source}' {source.status if source else 'did not run'}"
                    if source is not None and source.succeeded:
                        why = f"upstream node '{edge.source}' produced no '{edge.source_port}'"
                    emit("node_skipped", node_id, {"reason": why})
                    return NodeResult(node_id, type_name, "skipped", summary=why, blocked_by=edge.source)
                missing.setdefault(port.name, so_far.cause(edge.source))
                continue
            value = source.outputs[edge.source_port]
            if port.multiple:
                values.setdefault(port.name, []).append(value)
            else:
                values[port.name] = value

        run_input: str | None = None
        if node.cls.run_input == "text":
            run_input = run_inputs.get(node_id, run_inputs.get(GENERIC_INPUT))
        elif node.cls.run_input is not None:
            run_input = run_inputs.get(node_id)

        writers: dict[str, str] = {}
        for writer in graph.writers_of(node_id):
            # the reader's result depends on what its writers stored: their keys go into its cache key
            upstream.setdefault("~same collection", []).append(keys.get(writer, "none"))
            writers[writer] = _writer_cause(graph, so_far, writer)
        for names in upstream.values():
            names.sort()
        refs = {slot: ref.model_dump() for slot, ref in sorted(node.spec.credentials.items())}
        try:
            fingerprint = node.cls.fingerprint(node.config, base_dir, run_input, values)
        except (FlowbuilderError, OSError, ValueError):  # the node's own run says what is wrong with its file
            fingerprint, use_cache = f"unreadable {time.time_ns()}", False
        # a flow's cached results are its own (a cache hit skips the node's own path checks), and served runs'
        # masked results are not a plain run's
        state = [graph.scope.key, "served"] if self.served else [graph.scope.key]
        key = node_key(type_name, node.config.model_dump(mode="json"), refs, [run_input, fingerprint, *state], upstream)
        keys[node_id] = key
        if use_cache and node.cls.cacheable:
            hit = self.cache.get(key)
            if hit is not None and _has_services(node, hit.outputs):
                warning = str(hit.details.get("warning") or "")
                emit("node_cached", node_id, {"summary": hit.summary, "warning": warning})
                status = "warning" if warning else "cached"
                return NodeResult(
                    node_id, type_name, status, hit.outputs, hit.summary, 0.0, None, hit.details, key, warning
                )

        policy = self.policy
        try:
            secrets = policy.node_secrets(node_id, node.cls, node.config, node.spec.credentials, base_dir)
        except CredentialError as exc:  # an unapproved endpoint or program: nothing is sent or started
            error = redact(str(exc))
            emit("node_failed", node_id, {"error": error, "duration": 0.0})
            return NodeResult(node_id, type_name, "failed", error=error, key=key)

        ctx = RunContext(
            node_id,
            run_input=run_input,
            secrets=secrets,
            cancel_event=scope.cancel,
            emit=lambda kind, data: emit(kind, node_id, data),
            data_dir=scope.data_dir,
            base_dir=base_dir,
            session_id=scope.session_id,
            files=scope.files,
            scope=graph.scope,
        )
        ctx.connected_inputs = frozenset(edge.target_port for edge in graph.incoming(node_id))
        ctx.missing_inputs = missing
        ctx.writers = writers
        writes = any(edge.target_port == WRITER_PORT for edge in graph.incoming(node_id))
        ctx.collection = policy.store_access(node_id, node.cls, node.config, writes, base_dir, graph.scope, scope.files)
        return PreparedNode(node_id, type_name, node, values, ctx, key)

    def _execute_node(
        self, prepared: PreparedNode, emit: Callable[[str, str | None, dict[str, Any] | None], None]
    ) -> NodeResult:
        node_id, type_name, node, values, ctx, key = (
            prepared.node_id, prepared.type_name, prepared.node, prepared.values, prepared.ctx, prepared.key
        )  # fmt: skip
        emit("node_started", node_id, {"type": type_name})
        started = time.perf_counter()
        try:
            check_port_values(node, "input", values)
            instance = node.cls(node.config)
            outputs = self.filter_outputs(dict(instance.run(values, ctx) or {}))
            check_port_values(node, "output", outputs)
            summary = redact(ctx.summary(instance.summarize(outputs)))
        except RunCancelledError as exc:
            duration = time.perf_counter() - started
            emit("node_cancelled", node_id, {"duration": duration})
            return NodeResult(node_id, type_name, "cancelled", duration=duration, error=str(exc), details=ctx.details)
        except Exception as exc:
            duration = time.perf_counter() - started
            error = redact(str(exc if isinstance(exc, PortValueError) else NodeExecutionError(node_id, type_name, exc)))
            log.debug("node %s failed", node_id, exc_info=True)
            emit("node_failed", node_id, {"error": error, "duration": duration})
            return NodeResult(
                node_id, type_name, "failed", duration=duration, error=error, details=ctx.details, key=key
            )
        duration = time.perf_counter() - started
        warning = redact(ctx.warning)
        if warning:
            ctx.details["warning"] = warning
        emit("node_finished", node_id, {"duration": duration, "summary": summary, "warning": warning})
        if node.cls.cacheable:
            self.cache.put(key, CachedResult(outputs, summary, ctx.details))
        status = "warning" if warning else "ok"
        return NodeResult(node_id, type_name, status, outputs, summary, duration, None, ctx.details, key, warning)


def passed_on(outputs: dict[str, Any], mask: Callable[[str], str]) -> dict[str, Any]:
    """A node's outputs with ``mask`` applied to every text: documents' text and string metadata, hits'
    documents, strings, lists and dicts of these; services and numbers pass as they are. What a served flow passes
    on (masked in place), so a splitter only ever cuts masked text."""
    return {port: _masked(value, mask) for port, value in outputs.items()}


def _masked(value: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Document):
        return value.model_copy(update={"text": mask(value.text), "metadata": _masked(value.metadata, mask)})
    if isinstance(value, Hit):
        return value.model_copy(update={"document": _masked(value.document, mask)})
    if isinstance(value, list):
        return [_masked(item, mask) for item in value]
    if isinstance(value, dict):
        return {key: _masked(item, mask) for key, item in value.items()}
    return value


def _chosen_files(values: Iterable[str], base_dir: Path | None) -> list[Path]:
    """The files given as run inputs, made absolute like the nodes do (names that are no path are left out)."""
    found = []
    for value in values:
        try:
            found.append(resolve_path(value, base_dir))
        except FlowbuilderError:
            continue
    return found


def _delivered_elsewhere(
    edge: Edge, incoming: list[Edge], results: dict[str, NodeResult], values: dict[str, Any]
) -> bool:
    """Whether another connection into the same single input already delivered, or will: the first
    alternative that delivers a value is the one taken."""
    if edge.target_port in values:
        return True
    rivals = [e for e in incoming if e.target_port == edge.target_port and e is not edge]
    if not rivals:
        return False
    mine = results.get(edge.source)
    if mine is not None and mine.succeeded and mine.outputs.get(edge.source_port) is not None:
        return False
    return any(
        (r := results.get(e.source)) is not None and r.succeeded and r.outputs.get(e.source_port) is not None
        for e in rivals
    )


def _unused_alternatives(graph: FlowGraph, run_inputs: Mapping[str, str]) -> dict[str, str]:
    """Triggers among alternatives into one input that the run gave nothing: trigger -> the one used.
    The run input fills the first alternative given one (or the first of them)."""
    unused: dict[str, str] = {}
    for node_id, node in graph.nodes.items():
        for port in node.inputs.values():
            if port.multiple:
                continue
            sources = [e.source for e in graph.incoming(node_id) if e.target_port == port.name]
            triggers = [
                s for s in dict.fromkeys(sources)
                if graph.nodes[s].cls.run_input is not None and not graph.incoming(s)
            ]  # fmt: skip
            if len(triggers) < 2 or len(triggers) != len(set(sources)):
                continue
            chosen = next((t for t in triggers if t in run_inputs), triggers[0])
            unused.update({t: chosen for t in triggers if t != chosen})
    return unused


def _type_of(graph: FlowGraph, node_id: str) -> str:
    node = graph.nodes.get(node_id)
    return node.spec.type if node is not None else ""


def _writer_cause(graph: FlowGraph, run: RunResult, writer: str) -> str:
    """ "ok" when the writer synced its collection, else why not (its own or its documents' cause)."""
    result = run.results.get(writer)
    if result is None or not result.succeeded:
        return run.cause(writer)
    for edge in graph.incoming(writer):
        if edge.target_port == WRITER_PORT:
            source = run.results.get(edge.source)
            if source is None or not source.succeeded:
                return run.cause(edge.source)
    return "ok"


def _has_services(node: Any, outputs: dict[str, Any]) -> bool:
    """A cache entry read back from disk lacks service outputs; then the node must run again."""
    return all(name in outputs for name, port in node.outputs.items() if port.kind is PortKind.SERVICE)


def _issue(code: str, message: str, node_id: str | None) -> Any:
    from flowbuilder.errors import ValidationIssue

    return ValidationIssue(code, message, node_id)


def _issues_in_scope(graph: FlowGraph, to: str | None) -> list[Any]:
    if to is None:
        return list(graph.issues)
    scope = {to} | graph.ancestors(to)
    return [i for i in graph.issues if i.node_id is None or i.node_id in scope]
