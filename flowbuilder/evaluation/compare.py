"""Run the ingestion and retrieval part of two flows on the same questions and compare them.

For each flow: find its vector store node(s), run the flow up to each of them with the executor
(``Executor.run(flow, to=store, base_dir=<flow's folder>)``; chat inputs, retrievers, prompts and LLMs
downstream are never run), take the ``store`` service and call ``store.search(question, k)``. The
chunks fed into the store and the documents fed into the splitter that made them give the chunk
statistics. Re-running costs no new embeddings: the embedder's on-disk cache and Chroma's idempotent
insert (ids from the chunk text) skip everything already embedded; ``embedded`` reports what was sent
to the model during ingestion.

Relevance is judged in one of the modes of :mod:`flowbuilder.evaluation.metrics` (``lenient`` by
default, or ``strict``); strict mode traces which records each retrieved chunk holds whole through
the same record spans the chunk statistics use. :func:`rejudge` re-judges a finished comparison's
hits in another mode without searching again.
"""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flowbuilder.data import Document, Hit
from flowbuilder.errors import FlowbuilderError, FlowFileError
from flowbuilder.evaluation.chunk_stats import ChunkStats, WholeRecordIndex, column_names, compute_chunk_stats
from flowbuilder.evaluation.metrics import (
    Metrics,
    QuestionOutcome,
    Relevance,
    aggregate,
    check_relevance,
    compare_ranks,
    judge_hits,
)
from flowbuilder.evaluation.questions import Question
from flowbuilder.executor import EventHandler, Executor, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow
from flowbuilder.ports import PortType
from flowbuilder.registry import NodeRegistry, default_registry
from flowbuilder.services import Embedder, VectorStore

ProgressHandler = Callable[[str, RunEvent], None]
"""Receives ``(flow label, event)`` for every executor event while a flow is ingested."""


class ComparisonError(FlowbuilderError):
    """A flow cannot be evaluated (no vector store, a failed node, ...)."""


@dataclass
class Ingestion:
    """What running a flow up to its vector store(s) produced."""

    stores: list[VectorStore]
    store_ids: list[str]
    inputs: list[Document]
    """The documents fed into the splitter(s) (or the records themselves when nothing splits them)."""
    chunks: list[Document]
    """The chunks fed into the store(s)."""
    embedder: Embedder | None
    embedded: int | None
    """Texts sent to the embedding model during this ingestion (None when the embedder does not count)."""
    added: int
    """Chunks the store(s) did not hold yet."""
    seconds: float
    run: RunResult


@dataclass
class FlowEvaluation:
    label: str
    path: Path
    name: str
    stats: ChunkStats
    metrics: Metrics
    outcomes: list[QuestionOutcome]
    embedded: int | None
    added: int
    store_count: int
    ingest_seconds: float
    search_seconds: float
    warnings: list[str] = field(default_factory=list)
    inputs: list[Document] = field(default_factory=list, repr=False)
    chunks: list[Document] = field(default_factory=list, repr=False)
    relevance: Relevance = "lenient"
    embedder: Embedder | None = field(default=None, repr=False)
    """The embedder the flow's store used (the /compare page asks it where each chunk is truncated)."""

    def to_dict(self, with_hits: bool = True) -> dict[str, Any]:
        return {
            "label": self.label,
            "path": str(self.path),
            "name": self.name,
            "stats": self.stats.to_dict(),
            "metrics": self.metrics.to_dict(),
            "relevance": self.relevance,
            "embedded": self.embedded,
            "added": self.added,
            "store_count": self.store_count,
            "ingest_seconds": round(self.ingest_seconds, 3),
            "search_seconds": round(self.search_seconds, 3),
            "warnings": self.warnings,
            "questions": [o.to_dict(with_hits) for o in self.outcomes],
        }


@dataclass
class QuestionComparison:
    question: Question
    rank_a: int | None
    rank_b: int | None
    winner: str
    """``"a"``, ``"b"``, ``"tie"``, or ``"-"`` for a question with no answer (not compared)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.question.id,
            "question": self.question.question,
            "gold": list(self.question.gold),
            "rank_a": self.rank_a,
            "rank_b": self.rank_b,
            "winner": self.winner,
        }


@dataclass
class Comparison:
    k: int
    a: FlowEvaluation
    b: FlowEvaluation
    rows: list[QuestionComparison]
    relevance: Relevance = "lenient"

    @property
    def wins_a(self) -> int:
        return sum(1 for r in self.rows if r.winner == "a")

    @property
    def wins_b(self) -> int:
        return sum(1 for r in self.rows if r.winner == "b")

    @property
    def ties(self) -> int:
        return sum(1 for r in self.rows if r.winner == "tie")

    def to_dict(self, with_hits: bool = True) -> dict[str, Any]:
        return {
            "k": self.k,
            "relevance": self.relevance,
            "a": self.a.to_dict(with_hits),
            "b": self.b.to_dict(with_hits),
            "questions": [r.to_dict() for r in self.rows],
            "wins_a": self.wins_a,
            "wins_b": self.wins_b,
            "ties": self.ties,
        }


def read_flow(path: str | os.PathLike[str]) -> Flow:
    """A native flow file (an n8n or LangFlow file must be imported first)."""
    return load_flow(path)


def store_node_ids(flow: Flow, registry: NodeRegistry) -> list[str]:
    """Nodes with a ``vector_store`` output (vectorstore.chroma, vectorstore.pinecone, ...), enabled only."""
    found: list[str] = []
    for spec in flow.nodes:
        if spec.disabled:
            continue
        try:
            cls = registry.get(spec.type)
        except FlowbuilderError:
            continue
        if any(port.type is PortType.VECTOR_STORE for port in cls.output_ports(None)):
            found.append(spec.id)
    return found


def _is_documents(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, Document) for item in value)


def _flatten(value: object) -> list[Document]:
    if isinstance(value, Document):
        return [value]
    if isinstance(value, list | tuple):
        return [doc for item in value for doc in _flatten(item)]
    return []


def trace_chunks(flow: Flow, run: RunResult, store_id: str) -> tuple[list[Document], list[Document]]:
    """``(splitter inputs, chunks)`` for the documents a store node received.

    The chunks are the outputs wired into the store's ``documents`` port; the splitter inputs are the
    document lists wired into the node that made them. A store fed straight from a loader has no
    splitter: each record is its own chunk and its own input.
    """
    inputs: list[Document] = []
    chunks: list[Document] = []
    for edge in flow.edges:
        if edge.target != store_id or edge.target_port != "documents":
            continue
        maker = run.results.get(edge.source)
        if maker is None or not maker.succeeded:
            continue
        made = _flatten(maker.outputs.get(edge.source_port))
        chunks.extend(made)
        fed: list[Document] = []
        for upstream in flow.edges:
            if upstream.target != edge.source:
                continue
            source = run.results.get(upstream.source)
            value = source.outputs.get(upstream.source_port) if source is not None and source.succeeded else None
            if _is_documents(value):
                fed.extend(_flatten(value))
        inputs.extend(fed or made)
    return inputs, chunks


def header_columns(documents: Sequence[Document]) -> list[str]:
    """Column names of a whole CSV text: the header line that precedes its first record span."""
    for doc in documents:
        spans = doc.metadata.get("record_spans")
        if not doc.source.lower().endswith((".csv", ".tsv")) or not isinstance(spans, list) or not spans:
            continue
        first = spans[0]
        start = first[1] if isinstance(first, list | tuple) else first.get("start", 0) if isinstance(first, dict) else 0
        header = doc.text[: int(start)].strip().splitlines()
        if header:
            delimiter = "\t" if doc.source.lower().endswith(".tsv") else ","
            row = next(csv.reader(io.StringIO(header[-1]), delimiter=delimiter), [])
            return [name.strip() for name in row if name.strip()]
    return []


def run_columns(run: RunResult) -> list[str]:
    """The source's columns as any node of the run saw them: records' ``columns`` metadata (a joined
    labeller output has none, but the loader's records before it do) or a whole CSV's header line."""
    lists = [value for result in run.results.values() for value in result.outputs.values() if _is_documents(value)]
    for documents in lists:
        names = column_names(documents[:1])
        if names:
            return names
    for documents in lists:
        names = header_columns(documents)
        if names:
            return names
    return []


class FlowComparer:
    """Evaluates flows on question sets; keeps one executor so a long-lived UI reuses its result cache."""

    def __init__(self, executor: Executor | None = None, registry: NodeRegistry | None = None) -> None:
        self.registry = registry or default_registry()
        self.executor = executor or Executor(registry=self.registry)
        self._embedded_seen: dict[int, int] = {}

    def ingest(
        self,
        flow: Flow,
        base_dir: Path,
        *,
        label: str = "",
        on_event: EventHandler | None = None,
        flow_path: Path | None = None,
    ) -> Ingestion:
        store_ids = store_node_ids(flow, self.registry)
        where = f"{flow_path}" if flow_path else f"flow '{flow.name}'"
        if not store_ids:
            types = sorted({n.type for n in flow.nodes})
            raise ComparisonError(
                f"{where} has no vector store node, so there is nothing to search; it has: {', '.join(types)}. "
                "Add a vectorstore.chroma node fed by the chunks."
            )
        stores: list[VectorStore] = []
        inputs: list[Document] = []
        chunks: list[Document] = []
        embedder: Embedder | None = None
        embedded: int | None = None
        added = 0
        started = time.perf_counter()
        run: RunResult | None = None
        for store_id in store_ids:
            run = self.executor.run(flow, to=store_id, base_dir=base_dir, on_event=on_event)
            result = run.results.get(store_id)
            if result is None or not result.succeeded:
                failed = run.failed()
                reason = failed[0].error if failed else (result.summary if result else "it did not run")
                raise ComparisonError(f"{where}: ingestion up to '{store_id}' failed: {reason}")
            store = result.outputs.get("store")
            if not isinstance(store, VectorStore):
                raise ComparisonError(f"{where}: node '{store_id}' produced no vector store service.")
            stores.append(store)
            if result.status == "ok":
                added += int(result.details.get("added", 0) or 0)
            node_inputs, node_chunks = trace_chunks(flow, run, store_id)
            inputs.extend(node_inputs)
            chunks.extend(node_chunks)
            for edge in flow.edges:
                if edge.target == store_id and edge.target_port == "embedder":
                    source = run.results.get(edge.source)
                    candidate = source.outputs.get(edge.source_port) if source is not None else None
                    if isinstance(candidate, Embedder):
                        embedder = candidate
                        embedded = (embedded or 0) + (self._model_texts_delta(candidate) or 0)
        assert run is not None
        return Ingestion(
            stores, store_ids, inputs, chunks, embedder, embedded, added, time.perf_counter() - started, run
        )

    def _model_texts_delta(self, embedder: Embedder) -> int | None:
        """Texts this embedder sent to its model since we last looked (objects live on in the result cache)."""
        total = getattr(embedder, "model_texts", None)
        if not isinstance(total, int):
            return None
        before = self._embedded_seen.get(id(embedder), 0)
        self._embedded_seen[id(embedder)] = total
        return total - before

    def evaluate(
        self,
        path: str | os.PathLike[str],
        questions: Sequence[Question],
        k: int,
        *,
        label: str = "",
        on_progress: ProgressHandler | None = None,
        relevance: Relevance = "lenient",
    ) -> FlowEvaluation:
        _check_mode(relevance)
        flow_path = Path(path)
        if not flow_path.is_file():
            raise FlowFileError(flow_path, "no such flow file" if not flow_path.exists() else "is not a file")
        flow = read_flow(flow_path)
        label = label or flow.name

        def relay(event: RunEvent) -> None:
            if on_progress is not None:
                on_progress(label, event)

        ingestion = self.ingest(flow, flow_path.resolve().parent, label=label, on_event=relay, flow_path=flow_path)
        warnings: list[str] = []
        store_count = sum(store.count() for store in ingestion.stores)
        distinct = len({(c.source, c.text) for c in ingestion.chunks if c.text.strip()})
        if ingestion.chunks and store_count > distinct:
            warnings.append(
                f"the store holds {store_count} entries but this flow made {distinct} distinct chunks: other "
                "documents share its collection, so results may include them (give each flow its own collection)"
            )
        embedder = ingestion.embedder
        count_tokens = embedder.count_tokens if embedder is not None else None
        max_tokens = embedder.max_tokens if embedder is not None else None
        columns = column_names([*ingestion.inputs, *ingestion.chunks]) or run_columns(ingestion.run)
        stats = compute_chunk_stats(
            ingestion.inputs, ingestion.chunks, count_tokens=count_tokens, max_tokens=max_tokens, columns=columns
        )
        started = time.perf_counter()
        whole = WholeRecordIndex(ingestion.inputs, ingestion.chunks) if relevance == "strict" else None
        outcomes = [
            judge_hits(q, self.search(ingestion.stores, q.question, k), k, relevance=relevance, whole_records=whole)
            for q in questions
        ]
        search_seconds = time.perf_counter() - started
        if embedder is not None:
            self._model_texts_delta(embedder)  # query embeddings are not ingestion
        return FlowEvaluation(
            label=label,
            path=flow_path,
            name=flow.name,
            stats=stats,
            metrics=aggregate(outcomes, k),
            outcomes=outcomes,
            embedded=ingestion.embedded,
            added=ingestion.added,
            store_count=store_count,
            ingest_seconds=ingestion.seconds,
            search_seconds=search_seconds,
            warnings=warnings,
            inputs=ingestion.inputs,
            chunks=ingestion.chunks,
            relevance=relevance,
            embedder=embedder,
        )

    @staticmethod
    def search(stores: Sequence[VectorStore], question: str, k: int) -> list[Hit]:
        """Top ``k`` over all stores, best score first (one store: its own order)."""
        if len(stores) == 1:
            return stores[0].search(question, k)
        merged = [hit for store in stores for hit in store.search(question, k)]
        merged.sort(key=lambda hit: hit.score, reverse=True)
        return [hit.model_copy(update={"rank": rank}) for rank, hit in enumerate(merged[:k], start=1)]

    def compare(
        self,
        path_a: str | os.PathLike[str],
        path_b: str | os.PathLike[str],
        questions: Sequence[Question],
        k: int = 5,
        *,
        on_progress: ProgressHandler | None = None,
        relevance: Relevance = "lenient",
    ) -> Comparison:
        if k < 1:
            raise ComparisonError(f"k must be at least 1, got {k}.")
        _check_mode(relevance)
        for path in (path_a, path_b):
            if not Path(path).is_file():
                raise FlowFileError(path, "no such flow file")
        a = self.evaluate(path_a, questions, k, label="A", on_progress=on_progress, relevance=relevance)
        b = self.evaluate(path_b, questions, k, label="B", on_progress=on_progress, relevance=relevance)
        return Comparison(k, a, b, compare_outcomes(a.outcomes, b.outcomes), relevance)


def _check_mode(relevance: str) -> None:
    try:
        check_relevance(relevance)
    except ValueError as exc:
        raise ComparisonError(f"{exc}.") from None


def rejudge_evaluation(evaluation: FlowEvaluation, relevance: Relevance) -> FlowEvaluation:
    """The same retrieved hits judged in another relevance mode (nothing is searched again)."""
    _check_mode(relevance)
    k = evaluation.metrics.k
    whole = WholeRecordIndex(evaluation.inputs, evaluation.chunks) if relevance == "strict" else None
    outcomes = [
        judge_hits(o.question, o.hits, k, relevance=relevance, whole_records=whole) for o in evaluation.outcomes
    ]
    return replace(evaluation, metrics=aggregate(outcomes, k), outcomes=outcomes, relevance=relevance)


def rejudge(comparison: Comparison, relevance: Relevance) -> Comparison:
    """``comparison`` with both flows' hits re-judged in ``relevance`` mode (instant: no search, no embedding)."""
    if relevance == comparison.relevance:
        return comparison
    a = rejudge_evaluation(comparison.a, relevance)
    b = rejudge_evaluation(comparison.b, relevance)
    return Comparison(comparison.k, a, b, compare_outcomes(a.outcomes, b.outcomes), relevance)


def compare_outcomes(a: Sequence[QuestionOutcome], b: Sequence[QuestionOutcome]) -> list[QuestionComparison]:
    rows: list[QuestionComparison] = []
    for one, two in zip(a, b, strict=True):
        winner = compare_ranks(one.first_rank, two.first_rank) if one.answerable else "-"
        rows.append(QuestionComparison(one.question, one.first_rank, two.first_rank, winner))
    return rows


def compare_flows(
    path_a: str | os.PathLike[str],
    path_b: str | os.PathLike[str],
    questions: Sequence[Question],
    k: int = 5,
    *,
    on_progress: ProgressHandler | None = None,
    relevance: Relevance = "lenient",
) -> Comparison:
    """Convenience wrapper: a fresh :class:`FlowComparer` compares two flow files."""
    return FlowComparer().compare(path_a, path_b, questions, k, on_progress=on_progress, relevance=relevance)
