"""The driver's side of ``--ray``: connect, ship ingest batches and question batches, follow and cancel them.

Imported only when a command is given ``--ray`` (:func:`flowbuilder.cluster.connect`): it imports Ray.

Ingest: :meth:`Cluster.stage` turns each transform of a stream chain into a step of a :class:`ClusterBatches`
instead of running it here; the sink (a store node) still runs here, opens its collection (created and checked
against the embedder here, once) and calls ``sync_documents``, which asks the stream to be written elsewhere
(:meth:`ClusterBatches.written_elsewhere`): the head's record batches go to :func:`worker.ingest_batch` tasks,
at most two per CPU of the cluster in flight; the sink then removes what is stale, as without Ray.

Faults: a task whose worker dies is re-run by Ray on another worker (``max_retries``); writes are upserts by chunk
id, so a batch written twice leaves each chunk once. A cancel (Ctrl-C, the builder's Cancel) cancels every task of
the run. The cluster lost mid-run is one :class:`~flowbuilder.errors.ClusterError` line; a re-run resumes from what
the store holds (nothing stored is embedded again).
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowbuilder.cluster import worker
from flowbuilder.cluster.credentials import bound_secrets
from flowbuilder.cluster.stores import refuse_unreachable_stores
from flowbuilder.errors import ClusterError, FlowbuilderError, NodeError, RunCancelledError
from flowbuilder.ports import PortKind
from flowbuilder.streaming import SAMPLE_SIZE, Batches, RemoteSync, StageFailed, _merge_details

if TYPE_CHECKING:
    from flowbuilder.executor import Executor, RunResult, RunScope
    from flowbuilder.flow import Flow
    from flowbuilder.graph import FlowGraph
    from flowbuilder.streaming import _Member

log = logging.getLogger(__name__)

BATCH_RECORDS = 512
"""Records per ingest task by default (the size of a streamed batch)."""
IN_FLIGHT_PER_CPU = 2
"""Tasks in flight per CPU of the cluster: each worker has the next batch waiting, no more (backpressure)."""
RETRIES = 3
"""Times Ray re-runs a task whose worker died (a killed process, a lost node)."""
CANCEL_GRACE_S = 5.0
"""How long cancelled tasks get to stop by themselves before their workers are killed."""
POLL_S = 0.25


class Cluster:
    """This process connected to a Ray cluster as its driver."""

    def __init__(self, address: str, *, batch_records: int | None = None) -> None:
        _check_reachable(address)
        try:
            import ray
        except ImportError:
            raise ClusterError("--ray needs Ray, which is not installed: pip install 'flowbuilder[cluster]'") from None
        self.ray: Any = ray  # typed loosely: Ray's stubs overload remote() per argument count
        self.address = address
        self.batch_records = batch_records or BATCH_RECORDS
        if not ray.is_initialized():
            try:
                ray.init(
                    address=address,
                    namespace="flowbuilder",
                    logging_level=logging.WARNING,
                    log_to_driver=False,  # workers' output stays in the cluster's session logs, not on this terminal
                    configure_logging=False,
                )
            except Exception as exc:  # ConnectionError, ValueError, RuntimeError: all "no cluster there"
                detail = " ".join(str(exc).split())[:200]
                raise ClusterError(
                    f"no Ray cluster answers at '{address}' ({detail}): start one with `ray start --head` and pass "
                    "the address it prints (e.g. --ray 127.0.0.1:6379), or --ray auto on a node of the cluster"
                ) from None
        self._gcs = _gcs_address(ray, address)
        self._unanswered = 0
        self._checked = 0.0
        self.active = ""
        """What is running on the cluster now (``"3 of 12 batches written"``), for the last word if Ray ends this
        process (it does when the head this driver is attached to dies before the check below notices)."""
        import atexit

        atexit.register(self._last_word)
        options: dict[str, Any] = {"num_cpus": 1, "max_retries": RETRIES, "retry_exceptions": False}
        self._ingest = self.ray.remote(**options)(worker.ingest_batch)
        self._questions = self.ray.remote(**options)(worker.run_questions)
        self._probe = self.ray.remote(num_cpus=0, max_retries=RETRIES)(worker.probe)
        self._check_workers()

    # ------------------------------------------------------------------ the cluster
    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def in_flight(self) -> int:
        return IN_FLIGHT_PER_CPU * self.cpus()

    def _check_workers(self) -> None:
        """A worker runs flowbuilder of our version, or one line says what to install."""
        from flowbuilder import __version__

        try:
            version, _node, _pid = self.ray.get(self._probe.remote(), timeout=180)
        except Exception as exc:
            raise ClusterError(
                f"the Ray cluster at '{self.address}' cannot run Flowbuilder's work ({_short(exc)}): install "
                f"flowbuilder[cluster] {__version__} on every node"
            ) from None
        if version != __version__:
            raise ClusterError(
                f"the Ray cluster at '{self.address}' has flowbuilder {version} but this machine has {__version__}: "
                "install the same version on every node"
            )

    def _last_word(self) -> None:
        if self.active:
            sys.stderr.write(
                f"error: the Ray cluster at '{self.address}' was lost mid-run; {self.active}; run again to resume: "
                "what the store holds is not embedded again\n"
            )
            sys.stderr.flush()

    def check_head(self) -> None:
        """Raise :class:`LostHead` when the cluster's head (its GCS) has stopped answering: checked every
        :data:`HEAD_CHECK_S`, twice in a row, so a lost head is one line within seconds (Ray itself would wait a
        minute and then end this process with its own message)."""
        now = time.monotonic()
        if self._gcs is None or now - self._checked < HEAD_CHECK_S:
            return
        self._checked = now
        import socket

        try:
            socket.create_connection(self._gcs, timeout=2).close()
            self._unanswered = 0
        except OSError as exc:
            self._unanswered += 1
            if isinstance(exc, ConnectionRefusedError) or self._unanswered >= 2:  # refused: nothing listens there
                raise LostHead(f"the head at {self._gcs[0]}:{self._gcs[1]} does not answer") from None

    def shutdown(self) -> None:
        """Disconnect this driver (the cluster keeps running)."""
        if self.ray.is_initialized():
            self.ray.shutdown()

    # ------------------------------------------------------------------ ingest chains
    @staticmethod
    def refuse_unreachable_stores(flow: Flow, registry: Any) -> None:
        """One line when the flow writes a store its workers cannot reach (see :mod:`flowbuilder.cluster`)."""
        refuse_unreachable_stores(flow, registry)

    def why_not_remote(self, graph: FlowGraph, chain: list[str]) -> str | None:
        """Why this chain must run here rather than on the workers (None: it can go to the cluster). Its members'
        other inputs travel as data, or as a service a worker rebuilds from a node with no inputs (an
        embedder)."""
        for node_id in chain[1:]:
            node = graph.nodes[node_id]
            for edge in graph.incoming(node_id):
                if edge.target_port == node.cls.stream_in:
                    continue
                source = graph.nodes[edge.source]
                port = source.outputs.get(edge.source_port)
                if port is not None and port.kind is PortKind.SERVICE and graph.incoming(edge.source):
                    return (
                        f"input '{edge.target_port}' of '{node_id}' comes from '{edge.source}', which has inputs of "
                        "its own, so a worker cannot rebuild it"
                    )
        return None

    def stage(self, member: _Member, upstream: Batches, head_id: str) -> ClusterBatches:
        """The chain's stream with ``member`` (a transform) run on the workers; the member's results are tallied."""
        tally = Batches(iter(()))
        member.stream = tally
        if isinstance(upstream, ClusterBatches):
            return upstream.then(member, tally)
        return ClusterBatches(self, upstream, [(member, tally)], head_id)

    def attach(self, executor: Executor, scope: RunScope, sink: _Member, upstream: Batches, head_id: str) -> None:
        """Give the sink the cluster stream as its input (a chain with no transform gets one here)."""
        stream = upstream if isinstance(upstream, ClusterBatches) else ClusterBatches(self, upstream, [], head_id)
        stream.sink, stream.executor, stream.scope = sink, executor, scope
        port = sink.prepared.node.cls.stream_in
        values = sink.prepared.values
        values[port] = [stream] if isinstance(values.get(port), list) else stream

    def ingest(self, stream: ClusterBatches) -> RemoteSync:
        return _Ingest(self, stream).run()

    # ------------------------------------------------------------------ question runs
    def run_many(
        self,
        executor: Executor,
        flow: Flow,
        to: str | None,
        runs: Sequence[tuple[str, str]],
        *,
        base_dir: Path | None = None,
        cancel_event: threading.Event | None = None,
        on_done: Callable[[int, int], None] | None = None,
    ) -> list[RunResult]:
        """Run ``flow`` (its ingest already done: see :func:`cut_ingest`) once per ``(question, session)`` on the
        workers, in batches; the results in order, without service outputs."""
        from flowbuilder.cluster.worker import FlowJob
        from flowbuilder.graph import analyze

        graph = analyze(flow, executor.registry, executor.resolver, only={to} if to else None, base_dir=base_dir)
        secrets = bound_secrets(executor, graph, graph.order({to} if to else None))
        policy = executor.policy
        reads = [
            policy.store_access(node_id, node.cls, node.config, False, base_dir, graph.scope)
            for node_id, node in graph.nodes.items()
        ]
        job = FlowJob(
            flow.model_dump(mode="json"),
            to,
            approved=tuple(sorted(executor.resolver.approved)),
            commands=tuple(sorted(executor.resolver.commands)),
            stores=tuple(sorted({access.address for access in reads if access is not None})),
        )
        job_ref = self.ray.put(job)
        size = max(1, math.ceil(len(runs) / self.in_flight()))
        parts = [list(runs[start : start + size]) for start in range(0, len(runs), size)]
        refs = {
            self._questions.options(name=f"flowbuilder:questions:{number}").remote(job_ref, secrets, part): number
            for number, part in enumerate(parts)
        }
        results: dict[int, list[RunResult]] = {}
        done = 0
        pending = list(refs)
        while pending:
            if cancel_event is not None and cancel_event.is_set():
                self.cancel(pending)
                raise RunCancelledError("The run was cancelled: the cluster's question batches were cancelled.")
            try:
                self.check_head()
                ready, pending = self.ray.wait(pending, num_returns=1, timeout=POLL_S)
                for ref in ready:
                    results[refs[ref]] = self.ray.get(ref)
                    done += len(results[refs[ref]])
            except FlowbuilderError:
                raise
            except Exception as exc:
                if not isinstance(exc, LostHead):
                    self.cancel(pending)
                raise self.lost(exc, f"{done} of {len(runs)} questions were answered") from None
            if ready and on_done is not None:
                on_done(done, len(runs))
        return [run for number in sorted(results) for run in results[number]]

    # ------------------------------------------------------------------ faults
    def cancel(self, refs: Sequence[Any]) -> None:
        """Cancel ``refs``: asked to stop first, then their workers killed after :data:`CANCEL_GRACE_S`."""
        if not refs:
            return
        for ref in refs:
            try:
                self.ray.cancel(ref, force=False)
            except Exception:  # already finished, or the cluster is gone
                continue
        try:
            _ready, left = self.ray.wait(list(refs), num_returns=len(refs), timeout=CANCEL_GRACE_S)
        except Exception:
            return
        for ref in left:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:
                continue

    def lost(self, exc: BaseException, done: str) -> ClusterError:
        """One line for a cluster that failed under the run (workers gone past their retries, the head lost)."""
        return ClusterError(
            f"the Ray cluster at '{self.address}' failed mid-run ({_short(exc)}); {done}; run again to resume: what "
            "the store holds is not embedded again"
        )


LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0, Ray keeps a loopback address on loopback (else it swaps 127.0.0.1 for the machine's address)."""


def _check_reachable(address: str) -> None:
    """One line at once when nothing listens at ``host:port`` (Ray itself would retry for minutes, printing). A
    loopback address keeps the driver on loopback, like a cluster started with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
    ray start --head --node-ip-address 127.0.0.1``."""
    import os
    import socket

    from flowbuilder.trust.netguard import is_loopback

    if address == "auto" or address.startswith(("ray://", "anyscale://")):
        return
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise ClusterError(f"--ray expects HOST:PORT as `ray start --head` prints it, or auto; got '{address}'")
    if is_loopback(host):
        os.environ.setdefault(LOOPBACK_ENV, "0")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ClusterError(
            f"no Ray cluster answers at '{address}' ({exc.strerror or exc}): start one with `ray start --head` and "
            "pass the address it prints, or --ray auto on a node of the cluster"
        ) from None


HEAD_CHECK_S = 0.5


class LostHead(ConnectionError):
    """The cluster's head stopped answering mid-run."""


def _gcs_address(ray: Any, address: str) -> tuple[str, int] | None:
    """Where the cluster's GCS listens (the head), to notice when it goes away."""
    try:
        host, _, port = str(ray.get_runtime_context().gcs_address).rpartition(":")
        return host, int(port)
    except Exception:
        host, _, port = address.rpartition(":")
        return (host, int(port)) if port.isdigit() else None


def _short(exc: BaseException) -> str:
    """Ray's error in one short line: no colour codes, no ``ray::task() (pid=..., ip=...)`` prefix, no traceback."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    text = re.sub(r"ray::\S+ \(pid=\d+, ip=[^)]*\)", "", text)
    text = " ".join(text.split()).split(" Traceback")[0] or type(exc).__name__
    return f"{type(exc).__name__}: {text[:160]}"


class ClusterBatches(Batches):
    """A chain's stream whose transforms and writes run on a Ray cluster (see :class:`Cluster`)."""

    def __init__(self, cluster: Cluster, head: Batches, steps: list[tuple[_Member, Batches]], head_id: str) -> None:
        super().__init__(iter(()), head.fraction)
        self.cluster = cluster
        self.head = head
        self.head_id = head_id
        self.steps = steps
        self.sink: _Member | None = None
        self.executor: Executor | None = None
        self.scope: RunScope | None = None

    def then(self, member: _Member, tally: Batches) -> ClusterBatches:
        return ClusterBatches(self.cluster, self.head, [*self.steps, (member, tally)], self.head_id)

    def __iter__(self) -> Iterator[list[Any]]:
        raise RuntimeError("a stream sent to a Ray cluster is written by its workers; call written_elsewhere")

    def written_elsewhere(self, store: Any) -> RemoteSync:
        return self.cluster.ingest(self)


@dataclass
class _Worker:
    batches: int = 0
    records: int = 0
    seconds: float = 0.0
    processes: set[int] = field(default_factory=set)
    builds: int = 0


class _Ingest:
    """One chain's batches on the cluster: submit with backpressure, follow, tally, cancel."""

    def __init__(self, cluster: Cluster, stream: ClusterBatches) -> None:
        assert stream.sink is not None and stream.executor is not None and stream.scope is not None
        self.cluster, self.stream, self.ray = cluster, stream, cluster.ray
        self.sink = stream.sink
        self.ctx = stream.sink.prepared.ctx
        self.graph = stream.scope.graph
        self.outcomes: dict[int, worker.BatchOutcome] = {}
        self.workers: dict[str, _Worker] = {}
        self.submitted = 0
        self.keep = False
        self.embedded = 0
        self.records_sent = 0
        self.exhausted = False
        self.started = time.monotonic()

    def _spec(self, member: _Member, exclude: tuple[str, ...] = ()) -> worker.StepSpec:
        prepared = member.prepared
        node = prepared.node
        port = node.cls.stream_in
        values: dict[str, Any] = {}
        services: dict[str, worker.ServiceSpec] = {}
        for edge in self.graph.incoming(prepared.node_id):
            if edge.target_port in (port, *exclude) or edge.target_port not in prepared.values:
                continue
            source = self.graph.nodes[edge.source]
            out = source.outputs.get(edge.source_port)
            if out is not None and out.kind is PortKind.SERVICE:
                config = source.config.model_dump(mode="json")
                services[edge.target_port] = worker.ServiceSpec(edge.source, source.spec.type, config, edge.source_port)
            else:
                values[edge.target_port] = prepared.values[edge.target_port]
        return worker.StepSpec(
            prepared.node_id,
            prepared.type_name,
            node.config.model_dump(mode="json"),
            port,
            node.cls.stream_out,
            values,
            services,
            multiple=bool(node.inputs[port].multiple),
        )

    def _secrets(self, job: worker.ChainJob) -> dict[str, dict[str, str]]:
        """The run's bound credentials of the members (as prepared here) and of the services workers rebuild."""
        members = [m for m, _ in self.stream.steps] + [self.sink]
        secrets = {m.prepared.node_id: dict(m.prepared.ctx._secrets) for m in members if m.prepared.ctx._secrets}
        services = {spec.node_id for step in (*job.steps, job.sink) for spec in step.services.values()}
        assert self.stream.executor is not None
        secrets.update(bound_secrets(self.stream.executor, self.graph, sorted(services)))
        return secrets

    def _records(self) -> Iterator[list[Any]]:
        """The head's batches (read here, path approvals checked here) cut to the cluster's batch size."""
        size = self.cluster.batch_records
        head = self.stream.head
        for big in head:
            if self.keep and len(head.sample) < head.items:  # the whole input, as a local run holds it
                head.sample.extend(big[len(head.sample) - head.items :])
            for start in range(0, len(big), size):
                yield big[start : start + size]

    def keep_all(self) -> bool:
        """Whether this chain's input is small enough that a local run would not stream it (every item is then
        kept, as locally); big ones keep the first items, as local streaming does."""
        from flowbuilder.streaming import STREAM_MIN_BYTES

        assert self.stream.scope is not None
        head = self.graph.nodes[self.stream.head_id]
        run_input = self.stream.scope.run_inputs.get(self.stream.head_id) if head.cls.run_input == "file" else None
        size = head.cls.stream_size(head.config, self.stream.scope.base_dir, run_input)
        return size is not None and size < STREAM_MIN_BYTES

    def run(self) -> RemoteSync:
        keep_all = self.keep_all()
        steps = tuple(self._spec(m) for m, _ in self.stream.steps)
        job = worker.ChainJob(steps, self._spec(self.sink, ("query",)), keep_all=keep_all)
        self.keep = keep_all
        secrets = self._secrets(job)
        job_ref = self.ray.put(job)  # configs only; the secrets go inline with each task, never into the store
        records = self._records()
        pending: dict[Any, int] = {}
        limit = self.cluster.in_flight()
        try:
            while True:
                while not self.exhausted and len(pending) < limit:
                    batch = next(records, None)
                    if batch is None:
                        self.exhausted = True
                        break
                    number = self.submitted
                    name = f"flowbuilder:ingest:{self.sink.prepared.node_id}:{number}"
                    pending[self._submit(name, job_ref, secrets, number, batch)] = number
                    self.submitted += 1
                    self.records_sent += len(batch)
                if not pending:
                    break
                self.cluster.active = f"{len(self.outcomes)} of {self.submitted} batches were written"
                self.ctx.check_cancelled()
                self.cluster.check_head()
                ready, _ = self.ray.wait(list(pending), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    pending.pop(ref)
                    self._take(self.ray.get(ref))
                self._progress()
        except (RunCancelledError, StageFailed, FlowbuilderError):
            self.cluster.cancel(list(pending))
            self._merge()  # the members show what the finished batches did
            raise
        except Exception as exc:
            if not isinstance(exc, LostHead):  # with the head gone there is nothing left to cancel
                self.cluster.cancel(list(pending))
            self._merge()
            raise self.cluster.lost(exc, f"{len(self.outcomes)} of {self.submitted} batches were written") from None
        finally:
            self.cluster.active = ""
        return self._merge()

    def _submit(self, name: str, job_ref: Any, secrets: Any, number: int, batch: list[Any]) -> Any:
        return self.cluster._ingest.options(name=name).remote(job_ref, secrets, number, batch)

    def _take(self, outcome: worker.BatchOutcome) -> None:
        if outcome.error:
            failed = outcome.failed_node or self.sink.prepared.node_id
            raise StageFailed(failed, NodeError(f"batch {outcome.number + 1} on a Ray worker: {outcome.error}"))
        self.outcomes[outcome.number] = outcome
        seen = self.workers.setdefault(outcome.node, _Worker())
        seen.batches += 1
        seen.records += outcome.records
        seen.seconds += outcome.seconds
        seen.processes.add(outcome.pid)
        seen.builds += int(outcome.built)
        self.embedded += outcome.embedded

    def total(self) -> int:
        """Batches in all: known once the head is read, else estimated from the share of the input read."""
        if self.exhausted:
            return self.submitted
        share = self.stream.head.fraction() or 0.0
        if share <= 0:
            return max(self.submitted, 1)
        records = self.stream.head.items / min(share, 1.0)
        return max(self.submitted, math.ceil(records / self.cluster.batch_records))

    def _progress(self) -> None:
        done, total = len(self.outcomes), self.total()
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rates = ", ".join(f"{name} {seen.records / elapsed:.1f} rows/s" for name, seen in sorted(self.workers.items()))
        left = ""
        if done and total > done:
            seconds = (total - done) * elapsed / done
            left = f", ~{seconds:.0f} s left" if seconds < 120 else f", ~{seconds / 60:.1f} min left"
        if self.workers:
            workers = f"{len(self.workers)} worker node{'s' if len(self.workers) != 1 else ''}: {rates}{left}"
        else:
            workers = "waiting for the first batch"
        message = f"batches on the Ray cluster ({workers})"
        self.ctx.progress(done, total, message)

    def _merge(self) -> RemoteSync:
        wanted: set[str] = set()
        sources: set[str] = set()
        folders: set[str] = set()
        duplicates = added = 0
        for number in sorted(self.outcomes):
            outcome = self.outcomes[number]
            for doc_id in outcome.ids:
                if doc_id in wanted:
                    duplicates += 1
                wanted.add(doc_id)
            duplicates += outcome.duplicates
            added += outcome.added
            sources.update(outcome.sources)
            folders.update(outcome.folders)
            for member, tally in self.stream.steps:
                step = outcome.steps.get(member.prepared.node_id)
                if step is None:
                    continue
                tally.items += step.items
                tally.batches += 1
                if self.keep:
                    tally.sample.extend(step.sample)
                elif len(tally.sample) < SAMPLE_SIZE:
                    tally.sample.extend(step.sample[: SAMPLE_SIZE - len(tally.sample)])
                _merge_details(member.details, step.details)
                member.seconds += step.seconds
                if step.warning and step.warning not in member.prepared.ctx.warning:
                    member.prepared.ctx.warn(step.warning)
        last = self.stream.steps[-1][1] if self.stream.steps else self.stream.head
        self.stream.items, self.stream.batches, self.stream.sample = last.items, last.batches, list(last.sample)
        added = min(added, len(wanted))
        self.ctx.details["cluster"] = self.summary()
        return RemoteSync(wanted, sources, added, len(wanted) - added, duplicates, folders)

    def summary(self) -> dict[str, Any]:
        """What the cluster did, for the node's details (the inspector, ``run --json``)."""
        return {
            "address": self.cluster.address,
            "batches": len(self.outcomes),
            "batch_records": self.cluster.batch_records,
            "embedded": self.embedded,
            "seconds": round(time.monotonic() - self.started, 3),
            "workers": {
                name: {
                    "batches": seen.batches,
                    "records": seen.records,
                    "busy_seconds": round(seen.seconds, 3),
                    "processes": len(seen.processes),
                    "embedder_builds": seen.builds,
                }
                for name, seen in sorted(self.workers.items())
            },
        }
