"""What a Ray worker runs for Flowbuilder: one ingest batch, or one batch of question runs.

Everything here is plain Python called by the Ray tasks the driver defines (:mod:`flowbuilder.cluster.driver`);
it rebuilds nodes from their type name and config (never from pickled node objects) with the node registry of
the flowbuilder installed on the worker, and reports errors as values that name the node, so the driver words
them like a local run would.

Secrets arrive as the run's bound credentials only (``{node id: {slot: value}}``, passed inline with each task,
never put in Ray's object store by us); the worker's own environment and credentials file are never read.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowbuilder import __version__
from flowbuilder.data import Document
from flowbuilder.errors import ClusterError, FlowbuilderError, NodeExecutionError, PortValueError
from flowbuilder.node import RunContext
from flowbuilder.portvalues import check_port_values
from flowbuilder.trust.secrets import redact, register_secret

SAMPLE_SIZE = 20
Secrets = Mapping[str, Mapping[str, str]]
"""``{node id: {slot: value}}``: the run's bound credentials of the nodes a task rebuilds."""


@dataclass(frozen=True)
class ServiceSpec:
    """A node with no inputs whose output (an embedder) a worker builds itself: its type and config."""

    node_id: str
    type_name: str
    config: dict[str, Any]
    port: str


@dataclass(frozen=True)
class StepSpec:
    """One chain member rebuilt on a worker: a transform (labeller, splitter) or the sink (a store)."""

    node_id: str
    type_name: str
    config: dict[str, Any]
    stream_in: str
    stream_out: str | None
    values: dict[str, Any] = field(default_factory=dict)
    """Its other inputs that are plain data, as the driver gathered them."""
    services: dict[str, ServiceSpec] = field(default_factory=dict)
    """Its inputs that are services (the store's embedder): built on the worker."""
    multiple: bool = False
    """Whether ``stream_in`` takes several connections (a store's documents): the batch goes in a list."""


@dataclass(frozen=True)
class ChainJob:
    """What every batch of one ingest chain shares; put in the object store once per run (no secrets)."""

    steps: tuple[StepSpec, ...]
    sink: StepSpec
    keep_all: bool = False
    """Return every item each member made, not the first :data:`SAMPLE_SIZE`: a small input, whose local run
    would not stream, shows (and compares) the same whole lists as a local run."""
    version: str = __version__


@dataclass
class StepTally:
    """What one member did with one batch."""

    items: int = 0
    sample: list[Any] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    warning: str = ""
    seconds: float = 0.0


@dataclass
class BatchOutcome:
    """What a worker did with one batch: the chunk ids it produced (in order), what it wrote, who ran it."""

    number: int
    ids: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    added: int = 0
    kept: int = 0
    duplicates: int = 0
    steps: dict[str, StepTally] = field(default_factory=dict)
    failed_node: str = ""
    error: str = ""
    node: str = ""
    """The Ray node (machine) that ran it: its id's first characters."""
    pid: int = 0
    built: bool = False
    """Whether this batch built the embedder (the first batch a worker process runs); later ones reuse it."""
    seconds: float = 0.0
    records: int = 0
    embedded: int = 0
    """Texts this batch sent to the embedding model (the rest came from the worker's embedding cache)."""


_LOCK = threading.Lock()
_SERVICES: dict[str, Any] = {}
_MAX_SERVICES = 8


def _where() -> tuple[str, int]:
    try:
        import ray

        node = ray.get_runtime_context().get_node_id()[:8]
    except Exception:  # run outside a Ray task (a unit test of this module)
        node = "local"
    return node, os.getpid()


def _check_version(version: str) -> None:
    if version != __version__:
        raise ClusterError(
            f"this Ray worker has flowbuilder {__version__} but the driver has {version}: install the same "
            "version on every node (pip install 'flowbuilder[cluster]')"
        )


def _context(node_id: str, secrets: Secrets) -> RunContext:
    bound = dict(secrets.get(node_id, {}))
    for value in bound.values():
        register_secret(value)  # masked in anything this worker reports
    return RunContext(node_id, secrets=bound, data_dir=None, base_dir=None)


def _node(node_id: str, type_name: str, config: dict[str, Any]) -> tuple[Any, Any]:
    """``(resolved node, instance)`` of a node rebuilt from its type and config (ports checked as locally)."""
    from flowbuilder.flow import NodeSpec
    from flowbuilder.graph import ResolvedNode
    from flowbuilder.registry import default_registry

    cls = default_registry().get(type_name)
    parsed = cls.Config.model_validate(config)
    resolved = ResolvedNode(
        NodeSpec(id=node_id, type=type_name, config=config),
        cls,
        parsed,
        {p.name: p for p in cls.input_ports(parsed)},
        {p.name: p for p in cls.output_ports(parsed)},
    )
    return resolved, cls(parsed)


def build_service(spec: ServiceSpec, secrets: Secrets) -> tuple[Any, bool]:
    """The service ``spec`` names, built once per worker process (the model loads once) and reused: ``(service,
    built now)``. The key includes a digest of the bound secrets, so another account gets its own client."""
    bound = json.dumps(sorted(secrets.get(spec.node_id, {}).items()))
    key = hashlib.sha256(
        json.dumps([spec.type_name, spec.config, spec.port, bound], sort_keys=True, default=str).encode()
    ).hexdigest()
    with _LOCK:
        service = _SERVICES.get(key)
        if service is not None:
            return service, False
        _resolved, node = _node(spec.node_id, spec.type_name, spec.config)
        outputs = node.run({}, _context(spec.node_id, secrets))
        service = outputs[spec.port]
        if len(_SERVICES) >= _MAX_SERVICES:
            _SERVICES.pop(next(iter(_SERVICES)))
        _SERVICES[key] = service
        return service, True


def ingest_batch(job: ChainJob, secrets: Secrets, number: int, records: list[Document]) -> BatchOutcome:
    """Label, split, embed and write one batch of records; never raises for a node's error (it is a value)."""
    from flowbuilder.chunk_ids import folders_of, unique_documents

    _check_version(job.version)
    began = time.perf_counter()
    node, pid = _where()
    outcome = BatchOutcome(number, node=node, pid=pid, records=len(records))
    batch: list[Any] = list(records)
    current = ""
    try:
        for step in job.steps:
            current = step.node_id
            tally = outcome.steps.setdefault(step.node_id, StepTally())
            started = time.perf_counter()
            resolved, instance = _node(step.node_id, step.type_name, step.config)
            ctx = _context(step.node_id, secrets)
            values = {**step.values, step.stream_in: [batch] if step.multiple else batch}
            for port, spec in step.services.items():
                values[port], _ = build_service(spec, secrets)
            check_port_values(resolved, "input", values)
            produced = dict(instance.run(values, ctx) or {})
            check_port_values(resolved, "output", produced)
            assert step.stream_out is not None
            batch = list(produced.get(step.stream_out) or [])
            tally.items, tally.sample = len(batch), batch if job.keep_all else batch[:SAMPLE_SIZE]
            tally.details, tally.warning = dict(ctx.details), ctx.warning
            tally.seconds = time.perf_counter() - started
        sink = job.sink
        current = sink.node_id
        ids, docs, duplicates = unique_documents(batch)
        outcome.ids, outcome.duplicates = ids, duplicates
        outcome.sources = sorted({doc.source for doc in docs})
        outcome.folders = sorted(folders_of(docs))
        _resolved, instance = _node(sink.node_id, sink.type_name, {**sink.config, "sync": "append"})
        ctx = _context(sink.node_id, secrets)
        values = {**sink.values, sink.stream_in: [batch] if sink.multiple else batch}
        for port, spec in sink.services.items():
            values[port], built = build_service(spec, secrets)
            outcome.built = outcome.built or built
        ctx.connected_inputs = frozenset(values)
        embedders = [v for v in values.values() if isinstance(getattr(v, "model_texts", None), int)]
        before = sum(e.model_texts for e in embedders)
        instance.run(values, ctx)
        outcome.embedded = sum(e.model_texts for e in embedders) - before
        outcome.added = int(ctx.details.get("added", 0) or 0)
        outcome.kept = int(ctx.details.get("kept", 0) or 0)
    except Exception as exc:
        outcome.failed_node = current
        outcome.error = _message(exc)
    outcome.seconds = time.perf_counter() - began
    return outcome


def _message(exc: BaseException) -> str:
    """The error as the driver shows it (the node is named there); masked, one line."""
    if isinstance(exc, PortValueError | FlowbuilderError) and not isinstance(exc, NodeExecutionError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return redact(" ".join(text.split()))[:2000]


# ---------------------------------------------------------------------------- question runs


@dataclass(frozen=True)
class FlowJob:
    """A flow whose ingest is done (its stores' documents are cut) run once per question on a worker."""

    flow: dict[str, Any]
    to: str | None
    approved: tuple[tuple[str, str], ...] = ()
    commands: tuple[str, ...] = ()
    stores: tuple[str, ...] = ()
    """Collections the driver's flow reads (its own ingest wrote them): a worker, another flow by the ledger's
    lights, reads them with the driver's approval (flowbuilder.trust.ledger)."""
    version: str = __version__


_EXECUTORS: dict[str, Any] = {}


def _executor(job: FlowJob, secrets: Secrets) -> Any:
    """One executor per flow and credentials per worker process: its result cache keeps the embedder (and its
    loaded model) for every later batch of questions."""
    from flowbuilder.cluster.credentials import BoundResolver
    from flowbuilder.executor import Executor

    key = hashlib.sha256(
        json.dumps([job.flow, job.approved, job.commands, job.stores,
                    sorted((k, sorted(v.items())) for k, v in secrets.items())], sort_keys=True, default=str).encode()
    ).hexdigest()  # fmt: skip
    with _LOCK:
        executor = _EXECUTORS.get(key)
        if executor is None:
            if len(_EXECUTORS) >= _MAX_SERVICES:
                _EXECUTORS.pop(next(iter(_EXECUTORS)))
            resolver = BoundResolver(secrets, approved=job.approved, commands=job.commands, stores=job.stores)
            executor = _EXECUTORS[key] = Executor(resolver=resolver, stream="never")
        return executor


def run_questions(job: FlowJob, secrets: Secrets, runs: Sequence[tuple[str, str]]) -> list[Any]:
    """Run the flow once per ``(question, session id)``; each result without its service outputs (they stay
    here), so the driver reads hits, prompts and answers as from a local run."""
    from flowbuilder.flow import Flow

    _check_version(job.version)
    for node_secrets in secrets.values():
        for value in node_secrets.values():
            register_secret(value)
    flow = Flow.model_validate(job.flow)
    executor = _executor(job, secrets)
    results = []
    for question, session in runs:
        run = executor.run(flow, to=job.to, inputs=question, session_id=session)
        results.append(portable(run, executor))
    return results


def portable(run: Any, executor: Any) -> Any:
    """``run`` with only what can travel back: data outputs (services such as a store's client stay here)."""
    from dataclasses import replace

    from flowbuilder.ports import PortKind

    kept = {}
    for node_id, result in run.results.items():
        try:
            ports = {p.name: p for p in executor.registry.get(result.type_name).output_ports(None)}
        except FlowbuilderError:
            ports = {}
        outputs = {
            name: value
            for name, value in result.outputs.items()
            if name in ports and ports[name].kind is not PortKind.SERVICE
        }
        kept[node_id] = replace(result, outputs=outputs)
    return replace(run, results=kept)


def probe() -> tuple[str, str, int]:
    """``(flowbuilder version, Ray node, pid)`` of a worker: the driver checks the version before any work."""
    node, pid = _where()
    return __version__, node, pid
