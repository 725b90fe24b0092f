"""Streaming: a chain of nodes run batch by batch, so memory stays a few batches deep however many rows.

A *stream chain* is a head that produces its output in batches (the file loader: ``stream_out``), any
number of per-item transforms (row labeller, splitters: ``stream_in`` and ``stream_out``) and a sink that
consumes a stream (every vector store: ``stream_in``), where each intermediate output feeds only the next
node of the chain. The executor runs such a chain at the sink's place in the order: the sink's ``run``
receives a :class:`Batches` instead of a list and pulls batch by batch through the chain, so the table,
its labelled records and its chunks are never all in memory at once. Batches stay plain lists, so a check
that applies to a port's value applies to each batch.

What users see stays the same: every member gets its own result, events and progress; its outputs hold
the first :data:`SAMPLE_SIZE` items (a :class:`StreamedSample` whose ``total`` is the true count) and its
summary gives the true count and says it streamed. Streamed members are not put in the result cache (the
full list is never held); the sink syncs the store exactly as before (see
:meth:`flowbuilder.nodes.vectorstores.common.EmbeddingStore.sync_documents`).

When: ``stream="auto"`` (default) streams a chain whose head reads at least :data:`STREAM_MIN_BYTES`
(small inputs keep full outputs in the inspector and in the result cache); ``"always"`` and ``"never"``
force it. The ``FLOWBUILDER_STREAM`` environment variable sets the default. See docs/decisions/0012.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.cache import CachedResult
from flowbuilder.errors import FlowbuilderError, NodeExecutionError, RunCancelledError
from flowbuilder.graph import FlowGraph
from flowbuilder.node import RunContext
from flowbuilder.portvalues import check_port_values
from flowbuilder.results import NodePreparer, NodeResult, PreparedNode, RunScope
from flowbuilder.trust.secrets import redact

STREAM_MODES = ("auto", "always", "never")
STREAM_MIN_BYTES = 8_000_000
"""``auto`` streams a chain whose head reads at least this many bytes (the 5,000-row demo CSV is 3.7 MB)."""
BATCH_SIZE = 512
"""Items per batch a head yields: big enough for the embedder's batches, small enough to stay flat."""
SAMPLE_SIZE = 20
"""Items of each streamed output kept for the inspector."""

Emit = Callable[[str, "str | None", "dict[str, Any] | None"], None]


def stream_mode(value: str | None) -> str:
    """``value`` or the ``FLOWBUILDER_STREAM`` environment variable, checked; ``auto`` by default."""
    mode = (value or os.environ.get("FLOWBUILDER_STREAM") or "auto").strip().lower()
    if mode not in STREAM_MODES:
        raise FlowbuilderError(
            f"stream mode (FLOWBUILDER_STREAM or --stream) must be one of {', '.join(STREAM_MODES)}, got '{mode}'"
        )
    return mode


class StreamedSample(list[Any]):
    """The first items of a streamed output (what the inspector shows); ``total`` is how many went through."""

    total: int = 0

    @classmethod
    def of(cls, items: Iterable[Any], total: int) -> StreamedSample:
        sample = cls(items)
        sample.total = total
        return sample


@dataclass
class RemoteSync:
    """What a cluster's workers wrote for a stream (see :meth:`Batches.written_elsewhere`): every chunk id the
    stream produced and their sources (so the store still removes what is stale), and the counts."""

    wanted: set[str]
    sources: set[str]
    added: int
    kept: int
    duplicates: int
    folders: set[str] = field(default_factory=set)
    """The folders the stream's files came from (a file gone from one has its chunks removed)."""


class Batches(Sequence[Any]):
    """A one-pass stream of batches (lists) flowing between the nodes of a chain.

    Iterating yields the batches; ``len`` is how many items went through so far and indexing reaches the
    first :data:`SAMPLE_SIZE` of them (a sink that shows its first document still can).
    """

    def __init__(self, batches: Iterable[list[Any]], fraction: Callable[[], float | None] | None = None) -> None:
        self._batches = iter(batches)
        self._fraction = fraction
        self._read = False
        self.items = 0
        self.batches = 0
        self.sample: list[Any] = []

    def __iter__(self) -> Iterator[list[Any]]:
        if self._read:
            raise RuntimeError("a stream of batches can be read only once")
        self._read = True
        for batch in self._batches:
            self.items += len(batch)
            self.batches += 1
            if len(self.sample) < SAMPLE_SIZE:
                self.sample.extend(batch[: SAMPLE_SIZE - len(self.sample)])
            yield batch

    def __len__(self) -> int:
        return self.items

    def __getitem__(self, index: Any) -> Any:
        return self.sample[index]

    def written_elsewhere(self, store: Any) -> RemoteSync | None:
        """Embed and write this stream into ``store``'s collection somewhere else and say what was written, or
        None: here the sink itself embeds and writes each batch. A stream sent to a Ray cluster
        (:class:`flowbuilder.cluster.driver.ClusterBatches`) runs its batches on the workers."""
        return None

    def fraction(self) -> float | None:
        """How much of the head's input has been read (0..1), when it knows."""
        return self._fraction() if self._fraction is not None else None

    def estimate(self, done: int) -> int:
        """The expected total when ``done`` items of this stream have been handled (for progress)."""
        share = self.fraction()
        if not share or share <= 0:
            return done
        return max(done, round(done / min(share, 1.0)))


def is_stream(value: Any) -> bool:
    """Whether an input value is a stream of batches (a list of one, for a port that takes several)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return isinstance(value, Batches)


def single_output(cls: Any) -> bool:
    return len(cls.outputs) == 1


def plan_chains(
    graph: FlowGraph, order: list[str], mode: str, base_dir: Path | None, run_inputs: dict[str, str], excluded: set[str]
) -> dict[str, list[str]]:
    """Sink -> the chain's members (head first, sink last) for every chain this run streams."""
    if mode == "never":
        return {}
    in_run = set(order)
    chains: dict[str, list[str]] = {}
    for sink in order:
        node = graph.nodes[sink]
        if node.cls.stream_out is not None or not _can_stream(graph, sink, excluded):
            continue
        chain = _walk_back(graph, sink, in_run, excluded)
        if chain is None:
            continue
        head = graph.nodes[chain[0]]
        if mode == "auto":
            run_input = run_inputs.get(chain[0]) if head.cls.run_input == "file" else None
            size = head.cls.stream_size(head.config, base_dir, run_input)
            if size is None or size < STREAM_MIN_BYTES:
                continue
        chains[sink] = chain
    return chains


def _can_stream(graph: FlowGraph, node_id: str, excluded: set[str]) -> bool:
    node = graph.nodes[node_id]
    if node_id in excluded or node.spec.disabled or (node.cls.stream_in is None and node.cls.stream_out is None):
        return False
    return bool(node.cls.can_stream(node.config))


def _walk_back(graph: FlowGraph, sink: str, in_run: set[str], excluded: set[str]) -> list[str] | None:
    chain = [sink]
    current = sink
    while True:
        port = graph.nodes[current].cls.stream_in
        feeding = [e for e in graph.incoming(current) if e.target_port == port]
        if len(feeding) != 1:
            return None
        edge = feeding[0]
        source = edge.source
        node = graph.nodes.get(source)
        if node is None or source not in in_run or not _can_stream(graph, source, excluded):
            return None
        outgoing = [data["edge"] for _, _, data in graph.graph.out_edges(source, data=True)]
        if node.cls.stream_out != edge.source_port or len(outgoing) != 1 or not single_output(node.cls):
            return None  # its output is also used elsewhere: it must be held whole
        if any(dep.writer == source or dep.reader == source for dep in graph.implicit):
            return None
        chain.insert(0, source)
        if node.cls.stream_in is None:
            return chain if len(chain) >= 2 else None
        current = source


class StageFailed(Exception):
    """A member of a chain failed on a batch; carries which one, so the failure is named right."""

    def __init__(self, node_id: str, error: Exception) -> None:
        super().__init__(str(error))
        self.node_id = node_id
        self.error = error


@dataclass
class _Member:
    prepared: PreparedNode
    instance: Any
    seconds: float = 0.0
    stream: Batches | None = None
    details: dict[str, Any] = field(default_factory=dict)


def run_chain(executor: NodePreparer, scope: RunScope, chain: list[str]) -> dict[str, NodeResult]:
    """Run ``chain`` batch by batch; returns every member's result (the sink's last). ``executor`` prepares
    each member as it would any node (:meth:`flowbuilder.executor.Executor.prepare_node`) and keeps the
    sink's result in its cache."""
    graph, results, emit = scope.graph, scope.results, scope.emit
    members: list[_Member] = []
    upstream: Batches | None = None
    # on a Ray cluster (--ray) the transforms and the sink's writes run on the workers, batch by batch;
    # the head still reads on this machine (flowbuilder.cluster)
    cluster = executor.cluster
    why_here = cluster.why_not_remote(graph, chain) if cluster is not None else None
    if why_here is not None:
        cluster = None
    for node_id in chain:
        prepared = executor.prepare_node(scope, node_id, use_cache=False)
        if isinstance(prepared, NodeResult):
            # this member cannot run (an input failed, an endpoint is refused): those before it still run,
            # streamed and drained, so they show what they produced; those after it are skipped
            final = _drain(members, upstream, emit, prepared)
            for later in chain[chain.index(node_id) + 1 :]:
                why = f"upstream node '{node_id}' {prepared.status}"
                emit("node_skipped", later, {"reason": why})
                final[later] = NodeResult(
                    later, graph.nodes[later].spec.type, "skipped", summary=why, blocked_by=node_id
                )
            return final
        member = _Member(prepared, prepared.node.cls(prepared.node.config))
        members.append(member)
        if node_id == chain[-1]:
            break
        if cluster is not None and upstream is not None:
            upstream = cluster.stage(member, upstream, chain[0])  # also gives the member its tally as ``stream``
        else:
            upstream = _stage(member, upstream, executor.filter_outputs)
            member.stream = upstream
        # a placeholder so the next member's input is gathered (and keyed) as usual
        out = prepared.node.cls.stream_out
        results[node_id] = NodeResult(node_id, prepared.type_name, "ok", {out: upstream}, key=prepared.key)
    sink = members[-1]
    assert upstream is not None
    if cluster is not None:
        cluster.attach(executor, scope, sink, upstream, chain[0])
    elif why_here:
        sink.prepared.ctx.warn(f"ran on this machine, not on the Ray cluster: {why_here}")
    for member in members:
        emit("node_started", member.prepared.node_id, {"type": member.prepared.type_name, "streaming": True})
    started = time.perf_counter()
    try:
        sink_node, stream_port = sink.prepared.node, sink.prepared.node.cls.stream_in
        # the streamed input is judged batch by batch where it is made; the sink's other inputs here
        others = {**sink.prepared.values, stream_port: None} if stream_port else sink.prepared.values
        check_port_values(sink_node, "input", others)
        outputs = executor.filter_outputs(dict(sink.instance.run(sink.prepared.values, sink.prepared.ctx) or {}))
        check_port_values(sink_node, "output", outputs)
        summary = redact(sink.prepared.ctx.summary(sink.instance.summarize(outputs)))
    except RunCancelledError as exc:
        return _stopped(members[:-1], sink, emit, started, cancelled=str(exc))
    except Exception as exc:
        failed = _stage_failure(exc) or StageFailed(sink.prepared.node_id, exc)
        return _stopped(members[:-1], sink, emit, started, failed=failed)
    final = {m.prepared.node_id: _member_result(m, emit) for m in members[:-1]}
    duration = time.perf_counter() - started
    ctx = sink.prepared.ctx
    warning = redact(ctx.warning)
    if warning:
        ctx.details["warning"] = warning
    emit("node_finished", sink.prepared.node_id, {"duration": duration, "summary": summary, "warning": warning})
    if sink.prepared.node.cls.cacheable:
        executor.cache.put(sink.prepared.key, CachedResult(outputs, summary, ctx.details))
    status = "warning" if warning else "ok"
    p = sink.prepared
    final[p.node_id] = NodeResult(
        p.node_id, p.type_name, status, outputs, summary, duration, None, ctx.details, p.key, warning
    )
    return final


def _stage(member: _Member, upstream: Batches | None, passed_on: Callable[[dict[str, Any]], dict[str, Any]]) -> Batches:
    """The member's output stream: the head's own batches, or a transform applied to each batch; ``passed_on``
    is what the executor makes of outputs before the next node sees them (masking, for a served flow)."""
    prepared = member.prepared
    node_id = prepared.node_id
    if upstream is None:
        instance = member.instance

        def head() -> Iterator[list[Any]]:
            batches = iter(instance.iter_batches(prepared.values, prepared.ctx))
            while True:
                begun = time.perf_counter()
                try:
                    batch = next(batches, None)
                    if batch is not None:
                        out = prepared.node.cls.stream_out
                        batch = passed_on({out: list(batch)})[out]
                        check_port_values(prepared.node, "output", {out: batch})
                except RunCancelledError:
                    raise
                except Exception as exc:
                    raise StageFailed(node_id, exc) from exc
                finally:
                    member.seconds += time.perf_counter() - begun
                if batch is None:
                    return
                yield list(batch)

        return Batches(head(), lambda: getattr(instance, "fraction", None))

    port, out = prepared.node.cls.stream_in, prepared.node.cls.stream_out

    def transform() -> Iterator[list[Any]]:
        assert upstream is not None
        done = 0
        for batch in upstream:
            ctx = _batch_context(prepared.ctx)
            begun = time.perf_counter()
            try:
                values = {**prepared.values, port: batch}
                check_port_values(prepared.node, "input", values)
                produced = passed_on(dict(member.instance.run(values, ctx) or {}))
                check_port_values(prepared.node, "output", produced)
            except RunCancelledError:
                raise
            except Exception as exc:
                raise StageFailed(node_id, exc) from exc
            finally:
                member.seconds += time.perf_counter() - begun
            _merge_details(member.details, ctx.details)
            if ctx.warning and ctx.warning not in prepared.ctx.warning:
                prepared.ctx.warn(ctx.warning)
            done += len(batch)
            prepared.ctx.progress(done, upstream.estimate(done))
            yield list(produced.get(out) or [])

    return Batches(transform(), upstream.fraction)


def _batch_context(ctx: RunContext) -> RunContext:
    """A context for one batch: the member's own, but its per-batch progress is not shown (the chain
    reports progress over the whole stream) while cancellation is still noticed."""
    emit = ctx._emit

    def quiet(kind: str, data: dict[str, Any]) -> None:
        if kind != "progress" and emit is not None:
            emit(kind, data)

    batch = RunContext(
        ctx.node_id,
        run_input=ctx.run_input,
        secrets=ctx._secrets,
        cancel_event=ctx._cancel,
        emit=quiet,
        data_dir=ctx.data_dir,
        base_dir=ctx.base_dir,
        session_id=ctx.session_id,
        files=ctx.files,
        scope=ctx.scope,
    )
    batch.connected_inputs, batch.missing_inputs, batch.writers = ctx.connected_inputs, ctx.missing_inputs, ctx.writers
    batch.collection = ctx.collection
    return batch


def _merge_details(total: dict[str, Any], batch: dict[str, Any]) -> None:
    """Counts add up over batches; anything else is what the first batch said."""
    for key, value in batch.items():
        if isinstance(value, int) and not isinstance(value, bool) and isinstance(total.get(key, 0), int):
            total[key] = total.get(key, 0) + value
        else:
            total.setdefault(key, value)


class _Counted(Sequence[Any]):
    """The sample with the true count as its length: what a node's ``summarize`` counts."""

    def __init__(self, sample: list[Any], total: int) -> None:
        self._sample, self._total = sample, total

    def __len__(self) -> int:
        return self._total

    def __getitem__(self, index: Any) -> Any:
        return self._sample[index]


def _member_result(member: _Member, emit: Emit, status: str = "ok", error: str | None = None) -> NodeResult:
    p = member.prepared
    stream = member.stream
    assert stream is not None
    out = p.node.cls.stream_out
    details = {**member.details, **p.ctx.details}
    details["streamed"] = {
        "items": stream.items,
        "batches": stream.batches,
        "kept": len(stream.sample),
        "note": f"streamed in batches: the first {len(stream.sample)} of {stream.items} are kept for inspection "
        "and the result is not cached",
    }
    outputs = {out: StreamedSample.of(stream.sample, stream.items)}
    summary = redact(member.instance.summarize({out: _Counted(stream.sample, stream.items)}))
    summary = f"{summary} (streamed)" if status == "ok" else f"{summary} so far (streamed)"
    warning = redact(p.ctx.warning)
    if warning:
        details["warning"] = warning
    if status == "ok":
        status = "warning" if warning else "ok"
        emit("node_finished", p.node_id, {"duration": member.seconds, "summary": summary, "warning": warning})
    elif status == "cancelled":
        emit("node_cancelled", p.node_id, {"duration": member.seconds, "summary": summary})
    else:
        emit("node_failed", p.node_id, {"error": error or "", "duration": member.seconds})
    return NodeResult(p.node_id, p.type_name, status, outputs, summary, member.seconds, error, details, p.key, warning)


def _stage_failure(exc: BaseException) -> StageFailed | None:
    """The :class:`StageFailed` behind ``exc`` (a sink may wrap what its input raised), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, StageFailed):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _stopped(
    members: list[_Member],
    sink: _Member | None,
    emit: Emit,
    started: float,
    *,
    cancelled: str = "",
    failed: StageFailed | None = None,
) -> dict[str, NodeResult]:
    """Results when the stream stopped early: the failing member failed, the others stopped where they were
    (what the sink already wrote stays written, and nothing was removed from the store)."""
    final: dict[str, NodeResult] = {}
    culprit = failed.node_id if failed else None
    why = f"stopped mid-stream: '{culprit}' failed" if culprit else "cancelled mid-stream"
    for member in members:
        p = member.prepared
        if p.node_id == culprit:
            assert failed is not None
            error = redact(str(NodeExecutionError(p.node_id, p.type_name, failed.error)))
            final[p.node_id] = _member_result(member, emit, "failed", error)
        else:
            final[p.node_id] = _member_result(member, emit, "cancelled", why)
    if sink is None:
        return final
    p = sink.prepared
    duration = time.perf_counter() - started
    if culprit == p.node_id:
        assert failed is not None
        error = redact(str(NodeExecutionError(p.node_id, p.type_name, failed.error)))
        emit("node_failed", p.node_id, {"error": error, "duration": duration})
        final[p.node_id] = NodeResult(p.node_id, p.type_name, "failed", {}, "", duration, error, p.ctx.details, p.key)
    elif culprit:
        error = (
            f"Node '{p.node_id}' ({p.type_name}) stopped: upstream node '{culprit}' failed mid-stream; the batches "
            "before it were written and nothing was removed; fix it and run again (the embedding cache resumes)"
        )
        emit("node_failed", p.node_id, {"error": error, "duration": duration})
        final[p.node_id] = NodeResult(
            p.node_id, p.type_name, "failed", {}, "", duration, error, p.ctx.details, p.key, blocked_by=culprit
        )
    else:
        emit("node_cancelled", p.node_id, {"duration": duration})
        final[p.node_id] = NodeResult(
            p.node_id, p.type_name, "cancelled", duration=duration, error=cancelled, details=p.ctx.details, key=p.key
        )
    return final


def _drain(
    members: list[_Member], upstream: Batches | None, emit: Emit, sink_result: NodeResult
) -> dict[str, NodeResult]:
    """Run the members without their sink (which cannot run), keeping samples and counts only."""
    for member in members:
        emit("node_started", member.prepared.node_id, {"type": member.prepared.type_name, "streaming": True})
    started = time.perf_counter()
    try:
        for _ in upstream or ():
            pass
        final = {m.prepared.node_id: _member_result(m, emit) for m in members}
    except RunCancelledError as exc:
        final = _stopped(members, None, emit, started, cancelled=str(exc))
    except StageFailed as exc:
        final = _stopped(members, None, emit, started, failed=exc)
    final[sink_result.node_id] = sink_result
    return final
