"""Run the ingestion and retrieval part of two or more flows on the same questions and compare them.

For each flow:

1. Its store nodes are moved to namespaces of their own (:mod:`flowbuilder.evaluation.namespace`), so
   flows that name the same collection never see each other's chunks.
2. The flow runs up to each store node that is fed documents (the *writers*) with the executor;
   a failed node, or a store that receives no chunks, stops the comparison with an error naming the
   flow and the node.
3. Every question goes to the flow's *final retrieval node*: the most downstream node with a ``hits``
   output whose query comes from the chat input (a retriever, a fusion or a reranker node). The flow
   runs up to it with the question as its input; the executor's result cache keeps ingestion from
   running again. The node's ``k`` (when it has one) is raised to a deeper search so a miss can say
   at which rank the relevant chunk did come; the metrics judge the first ``k`` hits. A flow whose
   hits come straight from a store node (or that has no such node, e.g. an agent with a retriever
   tool) is searched with ``store.search(question, k)``.

Chat inputs, prompts, LLMs and outputs downstream are never run. Re-running costs no new embeddings:
the embedder's on-disk cache and the store's sync skip everything already embedded; ``embedded``
reports what was sent to the model during ingestion.

Relevance is judged in one of the modes of :mod:`flowbuilder.evaluation.metrics` (``lenient`` by
default, or ``strict``). Each miss is classified (:mod:`flowbuilder.evaluation.misses`), and every
flow after the first is compared with the first (the baseline) by paired statistics
(:mod:`flowbuilder.evaluation.significance`). :func:`rejudge` re-judges a finished comparison's hits
in another mode without searching again.
"""

from __future__ import annotations

import csv
import io
import os
import string
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import networkx as nx

from flowbuilder.capabilities import Capability
from flowbuilder.context import DEFAULT_CONTEXT_CHARS, context_budget
from flowbuilder.data import Document, Hit
from flowbuilder.errors import FlowbuilderError, FlowFileError, RunCancelledError
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
from flowbuilder.evaluation.misses import MISS_KINDS, Miss, MissClassifier, leg_ranks
from flowbuilder.evaluation.namespace import is_store, is_writer, isolate
from flowbuilder.evaluation.questions import Question
from flowbuilder.evaluation.significance import (
    PairedDifference,
    PairedTest,
    detected,
    mcnemar,
    paired_difference,
    sign_test,
    verdict,
)
from flowbuilder.executor import EventHandler, Executor, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow
from flowbuilder.ports import PortType
from flowbuilder.registry import NodeRegistry, default_registry
from flowbuilder.services import Embedder, VectorStore

ProgressHandler = Callable[[str, RunEvent], None]
"""Receives ``(flow label, event)`` for every executor event while a flow is ingested, a ``skipped``
event per node compare leaves out, and ``progress`` events (``message`` "searching") while it searches."""

DEEP_K = 50
"""How deep the search goes for a question's miss (the rank of a relevant chunk below k)."""
PROMPT_TOP = 3
"""The leaderboard reports the characters the top this-many hits put in a prompt."""
SIZE_FIELDS = ("keep", "k")
"""Config fields that say how many hits a retrieval node returns, in order of precedence."""
CACHE_ENTRIES = 4_000
"""Result-cache size: per-question retrieval results must not evict the ingestion results."""


class ComparisonError(FlowbuilderError):
    """A flow cannot be evaluated (no vector store, a failed node, no chunks, ...)."""


class ComparisonCancelled(ComparisonError):
    """The user cancelled a running comparison. ``finished``: the flows evaluated before the cancel (set by
    :meth:`FlowComparer.compare_many`), so what finished can still be shown."""

    finished: list[FlowEvaluation]

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.finished = []


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
    namespaces: dict[str, str] = field(default_factory=dict)
    """Store node id -> the collection/namespace it used for this comparison."""


@dataclass(frozen=True)
class FlowSource:
    """One flow to compare: a file, or a flow built from one (a ``--vary`` variant) with its own name."""

    path: Path
    flow: Flow | None = None
    name: str = ""
    variant: str = ""
    """What a variant changed, e.g. ``splitter.chunk_size=300`` (empty for a flow as saved)."""


def screening_source(path: Path, name: str = "", registry: NodeRegistry | None = None) -> FlowSource:
    """The flow at ``path`` with every embedder swapped for the screening-grade one (the type with
    ``Capability.SCREENING``: WordLlama's static word vectors, so a chunking sweep embeds in seconds; rank
    settings with it, then confirm with the real embedder)."""
    from flowbuilder.formats.native import load_flow

    registry = registry or default_registry()
    screening = registry.the(Capability.SCREENING)
    flow = load_flow(path)
    for node in flow.nodes:
        if node.type in registry and any(p.type is PortType.EMBEDDER for p in registry.get(node.type).outputs):
            node.type, node.config, node.name = screening.type_name, {}, "WordLlama (screening-grade)"
    return FlowSource(path, flow, f"{name or flow.name} [screening: wordllama]", "embedder=wordllama")


@dataclass
class FlowEvaluation:
    """One flow's side of a comparison: its chunk statistics, metrics and per-question outcomes."""

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
    degraded: list[str] = field(default_factory=list)
    """Stages that ran degraded while searching (a rewrite with no variants, a rerank that kept the incoming
    order...): one line per node with how many questions it hit; also in ``warnings``. A leaderboard row of
    a degraded flow measures less than its name says."""
    inputs: list[Document] = field(default_factory=list, repr=False)
    chunks: list[Document] = field(default_factory=list, repr=False)
    relevance: Relevance = "lenient"
    embedder: Embedder | None = field(default=None, repr=False)
    """The embedder the flow's store used (the /compare page asks it where each chunk is truncated)."""
    description: str = ""
    """The flow's one-line description (its saved description, or what a variant changed)."""
    retrieval_node: str = ""
    """The node whose hits were judged ("" when the store was searched directly)."""
    retrieval_type: str = ""
    namespaces: dict[str, str] = field(default_factory=dict)
    misses: list[Miss | None] = field(default_factory=list)
    """Per question: why it missed (None for a hit or a question without an answer)."""
    legs: list[dict[str, int]] = field(default_factory=list)
    """Per question: the first relevant hit's rank in each retrieval leg (empty for plain retrieval)."""
    deep_hits: list[list[Hit]] = field(default_factory=list, repr=False)
    facts_split: int = 0
    """Questions whose fact the inputs hold but no single chunk does."""
    variant: str = ""
    adjusted: list[str] = field(default_factory=list)
    """Settings compare changed for its deeper search, each saying why (printed with the flow)."""
    chars: int = DEFAULT_CONTEXT_CHARS
    """The context budget hit@chars is judged at."""
    sends: int | None = None
    """How many hits the flow's final retrieval node returns as saved (what its prompt gets); None: unknown."""
    files: tuple[int, int] | None = None
    """``(read, skipped)`` files of the flow's folder loaders; None when no loader read a folder."""

    @property
    def prompt_chars(self) -> float:
        """Mean characters the top :data:`PROMPT_TOP` hits put in a prompt, over all questions."""
        if not self.outcomes:
            return 0.0
        return sum(sum(len(h.document.text) for h in o.hits[:PROMPT_TOP]) for o in self.outcomes) / len(self.outcomes)

    def miss_counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(MISS_KINDS, 0)
        for miss in self.misses:
            if miss is not None:
                counts[miss.kind] += 1
        return counts

    def to_dict(self, with_hits: bool = True) -> dict[str, Any]:
        questions = []
        for index, outcome in enumerate(self.outcomes):
            item = outcome.to_dict(with_hits)
            miss = self.misses[index] if index < len(self.misses) else None
            item["miss"] = miss.to_dict() if miss is not None else None
            item["legs"] = self.legs[index] if index < len(self.legs) else {}
            questions.append(item)
        return {
            "label": self.label,
            "path": str(self.path),
            "name": self.name,
            "description": self.description,
            "variant": self.variant,
            "retrieval_node": self.retrieval_node,
            "retrieval_type": self.retrieval_type,
            "namespaces": self.namespaces,
            "stats": self.stats.to_dict(),
            "metrics": self.metrics.to_dict(),
            "relevance": self.relevance,
            "embedded": self.embedded,
            "added": self.added,
            "store_count": self.store_count,
            "ingest_seconds": round(self.ingest_seconds, 3),
            "search_seconds": round(self.search_seconds, 3),
            "prompt_chars_top3": round(self.prompt_chars, 1),
            "chars": self.chars,
            "facts_split": self.facts_split,
            "misses": self.miss_counts(),
            "warnings": self.warnings,
            "files": None if self.files is None else {"read": self.files[0], "skipped": self.files[1]},
            "degraded": self.degraded,
            "adjusted": self.adjusted,
            "questions": questions,
        }


def loaded_files(run: RunResult | None) -> tuple[tuple[int, int] | None, list[str]]:
    """``((read, skipped), warnings)`` of the folder loaders in an ingest run: a leaderboard row over a folder
    that lost files measures less than the folder."""
    if run is None:
        return None, []
    read = skipped = 0
    found = False
    warnings = []
    for result in run.results.values():  # a folder load's details: files read, and the skipped ones
        if isinstance(result.details.get("skipped"), list) and isinstance(result.details.get("files"), int):
            found = True
            read += result.details["files"]
            skipped += len(result.details["skipped"])
            if result.warning:
                warnings.append(f"loader '{result.node_id}': {result.warning}")
    return ((read, skipped) if found else None), warnings


def degraded_summary(degraded: dict[str, list[str]], questions: int) -> list[str]:
    """``"rewrite (query.rewrite) ran degraded on 70 of 70 questions: no rewordings, ..."`` per node."""
    lines = []
    for node, messages in degraded.items():
        first = messages[0]
        more = len(set(messages)) - 1
        lines.append(
            f"{node} ran degraded on {len(messages)} of {questions} questions: {first}"
            + (f" (and {more} other message(s))" if more else "")
        )
    return lines


@dataclass
class QuestionComparison:
    """One question's ranks in the two flows and which won."""

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


PAIR_METRICS = ("hit@1", "hit@k", "mrr", "hit@chars")
SORT_METRICS = ("mrr", "hit@k", "hit@chars")
"""What the leaderboard can be sorted by (``compare --sort``)."""


def metric_value(metrics: Metrics, name: str) -> float:
    """One of :data:`SORT_METRICS` (or hit@1, recall@k, ndcg@k) from ``metrics``."""
    value = metrics.to_dict().get(name)
    if not isinstance(value, int | float):
        raise ComparisonError(f"unknown metric '{name}'; use one of: {', '.join(SORT_METRICS)}")
    return float(value)


@dataclass
class PairComparison:
    """The baseline ``a`` against another flow ``b``: per-question ranks and paired statistics."""

    a: FlowEvaluation
    b: FlowEvaluation
    rows: list[QuestionComparison]
    differences: dict[str, PairedDifference]
    """``b - a`` per metric (``hit@1``, ``hit@k``, ``mrr``) over the questions with an answer."""
    rank_test: PairedTest
    """Sign test on the questions where one flow ranked the gold evidence better."""
    hit_test: PairedTest
    """Exact McNemar test on hit@k."""

    @property
    def significant(self) -> bool:
        return detected(self.differences["mrr"], self.rank_test)

    @property
    def verdict(self) -> str:
        return verdict(self.differences["mrr"], self.rank_test, a=self.a.label, b=self.b.label)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.label,
            "b": self.b.label,
            "verdict": self.verdict,
            "significant": self.significant,
            "wins": self.rank_test.wins,
            "losses": self.rank_test.losses,
            "ties": self.rank_test.ties,
            "sign_test": self.rank_test.to_dict(),
            "mcnemar_hit@k": self.hit_test.to_dict(),
            "differences": {name: diff.to_dict() for name, diff in self.differences.items()},
        }


def question_scores(evaluation: FlowEvaluation, k: int) -> dict[str, list[float]]:
    """Per answerable question: hit@1, hit@k, reciprocal rank (0 for a miss) and hit@chars."""
    answerable = [o for o in evaluation.outcomes if o.answerable]
    ranks = [o.first_rank for o in answerable]
    return {
        "hit@1": [1.0 if r == 1 else 0.0 for r in ranks],
        "hit@k": [1.0 if r is not None and r <= k else 0.0 for r in ranks],
        "mrr": [1.0 / r if r else 0.0 for r in ranks],
        "hit@chars": [1.0 if o.chars_hit else 0.0 for o in answerable],
    }


def compare_pair(a: FlowEvaluation, b: FlowEvaluation, k: int, *, resamples: int = 10_000) -> PairComparison:
    rows = compare_outcomes(a.outcomes, b.outcomes)
    scores_a, scores_b = question_scores(a, k), question_scores(b, k)
    if scores_a["mrr"]:
        differences = {m: paired_difference(scores_a[m], scores_b[m], resamples=resamples) for m in PAIR_METRICS}
    else:
        raise ComparisonError("no question in the set has an answer (gold or fact), so there is nothing to compare.")
    wins = sum(1 for r in rows if r.winner == "b")
    losses = sum(1 for r in rows if r.winner == "a")
    ties = sum(1 for r in rows if r.winner == "tie")
    hits_a = [bool(v) for v in scores_a["hit@k"]]
    hits_b = [bool(v) for v in scores_b["hit@k"]]
    return PairComparison(a, b, rows, differences, sign_test(wins, losses, ties), mcnemar(hits_a, hits_b))


@dataclass
class Comparison:
    """Two or more flows on one question set; ``flows[0]`` is the baseline every other flow is paired with."""

    k: int
    flows: list[FlowEvaluation]
    pairs: list[PairComparison]
    relevance: Relevance = "lenient"
    sort: str = "mrr"
    """The leaderboard's order: one of :data:`SORT_METRICS`."""

    @property
    def chars(self) -> int:
        """The context budget hit@chars was judged at (the same for every flow)."""
        return self.a.metrics.chars

    @property
    def a(self) -> FlowEvaluation:
        return self.flows[0]

    @property
    def b(self) -> FlowEvaluation:
        return self.flows[1]

    @property
    def rows(self) -> list[QuestionComparison]:
        """Per question: the baseline against the second flow."""
        return self.pairs[0].rows

    @property
    def wins_a(self) -> int:
        return sum(1 for r in self.rows if r.winner == "a")

    @property
    def wins_b(self) -> int:
        return sum(1 for r in self.rows if r.winner == "b")

    @property
    def ties(self) -> int:
        return sum(1 for r in self.rows if r.winner == "tie")

    def leaderboard(self) -> list[FlowEvaluation]:
        """The flows by the :attr:`sort` metric, then MRR, then hit@1, best first (a stable sort: ties keep
        the command-line order)."""
        return sorted(
            self.flows,
            key=lambda ev: (-metric_value(ev.metrics, self.sort), -ev.metrics.mrr, -ev.metrics.hit_at_1),
        )

    def pair_for(self, evaluation: FlowEvaluation) -> PairComparison | None:
        return next((p for p in self.pairs if p.b is evaluation), None)

    def to_dict(self, with_hits: bool = True) -> dict[str, Any]:
        flows = [ev.to_dict(with_hits) for ev in self.flows]
        data: dict[str, Any] = {
            "k": self.k,
            "relevance": self.relevance,
            "chars": self.chars,
            "sort": self.sort,
            "baseline": self.a.label,
        }
        if len(self.flows) == 2:
            data.update(a=flows[0], b=flows[1])
        data.update(
            flows=flows,
            leaderboard=[ev.label for ev in self.leaderboard()],
            pairs=[pair.to_dict() for pair in self.pairs],
            questions=[r.to_dict() for r in self.rows],
            wins_a=self.wins_a,
            wins_b=self.wins_b,
            ties=self.ties,
        )
        return data


def _checked(run: RunResult, to: str, where: str, doing: str) -> RunResult:
    """``run`` when it went through; a cancel or a failed node raises, naming the flow and the node."""
    if run.cancelled:
        raise ComparisonCancelled(f"{where}: cancelled while {doing}.")
    failed = run.failed()
    if failed:
        first = failed[0]
        raise ComparisonError(
            f"{where}: node '{first.node_id}' ({first.type_name}) failed, so '{to}' cannot be compared: {first.error}"
        )
    return run


def _hits_of(run: RunResult, target: str, port: str, where: str, degraded: dict[str, list[str]] | None) -> list[Hit]:
    """The hits ``target`` returned in ``run``; the run's warnings go to ``degraded`` (a stage that fell back)."""
    if degraded is not None:
        for warned in run.warnings():
            degraded.setdefault(f"{warned.node_id} ({warned.type_name})", []).append(warned.warning)
    result = run.results.get(target)
    hits = result.outputs.get(port) if result is not None and result.succeeded else None
    if not isinstance(hits, list):
        why = result.summary if result is not None else "it did not run"
        raise ComparisonError(f"{where}: retrieval node '{target}' produced no hits: {why}")
    return [h for h in hits if isinstance(h, Hit)]


def flow_labels(count: int) -> list[str]:
    """A, B, C, ... then F27, F28, ... for very wide comparisons."""
    letters = string.ascii_uppercase
    return [letters[i] if i < len(letters) else f"F{i + 1}" for i in range(count)]


def read_flow(path: str | os.PathLike[str]) -> Flow:
    """A native flow file (an n8n or LangFlow file must be imported first)."""
    return load_flow(path)


def store_node_ids(flow: Flow, registry: NodeRegistry) -> list[str]:
    """Nodes with a ``vector_store`` output (vectorstore.chroma, vectorstore.pinecone, ...), enabled only."""
    return [spec.id for spec in flow.nodes if not spec.disabled and is_store(spec, registry)]


def _output_types(spec_type: str, registry: NodeRegistry) -> dict[str, PortType]:
    try:
        cls = registry.get(spec_type)
    except FlowbuilderError:
        return {}
    return {port.name: port.type for port in cls.output_ports(None)}


def retrieval_node(flow: Flow, registry: NodeRegistry) -> str | None:
    """The node producing the hits for the question: the most downstream enabled node with a ``hits``
    output that a text run input (the chat input) feeds; None when there is none."""
    graph: nx.DiGraph[str] = nx.DiGraph()
    enabled = {spec.id: spec for spec in flow.nodes if not spec.disabled}
    graph.add_nodes_from(enabled)
    graph.add_edges_from((e.source, e.target) for e in flow.edges if e.source in enabled and e.target in enabled)
    asks: set[str] = set()
    for spec in enabled.values():
        try:
            if registry.get(spec.type).run_input == "text":
                asks.add(spec.id)
        except FlowbuilderError:
            continue
    candidates = [
        node_id
        for node_id, spec in enabled.items()
        if PortType.HITS in _output_types(spec.type, registry).values() and nx.ancestors(graph, node_id) & asks
    ]
    finals = [c for c in candidates if not any(c in nx.ancestors(graph, other) for other in candidates)]
    if not finals:
        return None
    # Several independent retrieval branches: the one with the most retrieval stages before it.
    return max(sorted(finals), key=lambda c: len(nx.ancestors(graph, c) & set(candidates)))


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


def _first_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > 60 else cut.rstrip() + "…"


def describe_flow(flow: Flow, variant: str = "") -> str:
    """One line saying what a flow does: its description's first sentence, or its chain of node types."""
    if variant:
        return f"{_first_line(flow.description, 100) or flow.name}, with {variant}"
    if flow.description.strip():
        return _first_line(flow.description)
    order = [spec.type for spec in flow.nodes if not spec.disabled]
    return " → ".join(order) if order else "an empty flow"


def _size(flow: Flow, target: str | None, registry: NodeRegistry) -> tuple[str, int, dict[str, Any]] | None:
    """``(field, value as saved, the node's config fields)`` for the field that says how many hits the final
    retrieval node returns: "keep" where a node has it (fusion's "k" is the RRF constant), else "k"."""
    if target is None or target in store_node_ids(flow, registry):
        return None
    spec = flow.node(target)
    fields: dict[str, Any] = getattr(registry.get(spec.type).Config, "model_fields", {})
    size_field = next((name for name in SIZE_FIELDS if name in fields), None)
    if size_field is None:
        return None
    value = spec.config.get(size_field) or fields[size_field].default or 0
    return size_field, int(value) if isinstance(value, int) else 0, fields


def returned_hits(flow: Flow, target: str | None, registry: NodeRegistry) -> int | None:
    """How many hits the final retrieval node returns as saved (its ``keep`` or ``k``); None when unknown."""
    size = _size(flow, target, registry)
    return size[1] if size is not None and size[1] > 0 else None


def deepen(flow: Flow, target: str | None, deep: int, registry: NodeRegistry, where: str) -> tuple[Flow, list[str]]:
    """``flow`` with its final retrieval node returning ``deep`` hits, and what was adjusted to allow it.

    The node's ``keep`` (or ``k``) is raised so a miss can say at which rank the evidence came. A reranker
    scores only its first ``candidates`` hits, so its ``keep`` rises no further than ``candidates``: raising
    ``candidates`` instead would rerank more hits than the flow does and judge a different top k. Every node's
    settings are then checked, so a bad combination fails here, before any ingest, naming the node.
    """
    deep_flow = flow.model_copy(deep=True)
    adjusted: list[str] = []
    size = _size(flow, target, registry)
    if target is not None and size is not None and size[1] != 0:  # 0 means "all" for keep
        size_field, current, fields = size
        spec = deep_flow.node(target)
        wanted = max(deep, current)
        if "candidates" in fields:
            candidates = int(spec.config.get("candidates") or fields["candidates"].default or 0)
            if candidates and wanted > candidates:
                wanted = max(current, candidates)
                adjusted.append(
                    f"node '{target}': the deeper search keeps {wanted} hits, not {deep}, because the node "
                    f"scores only its first {candidates} candidates; the top k is what the flow returns, "
                    f"and a miss below rank {wanted} shows as not found"
                )
        spec.config[size_field] = wanted
    for spec in deep_flow.nodes:
        if spec.disabled or spec.type not in registry:
            continue
        node_class = registry.get(spec.type)
        try:
            config = node_class.Config.model_validate(spec.config)
        except ValueError:
            continue  # the executor reports an invalid config with its own message
        problems = node_class.config_problems(config)
        if problems:
            raise ComparisonError(
                f"{where}: node '{spec.id}' ({spec.type}): {problems[0][1]} (checked before ingesting anything)"
            )
    return deep_flow, adjusted


class FlowComparer:
    """Evaluates flows on question sets; keeps one executor so a long-lived UI reuses its result cache."""

    def __init__(self, executor: Executor | None = None, registry: NodeRegistry | None = None) -> None:
        from flowbuilder.cache import ResultCache

        self.registry = registry or default_registry()
        self.executor = executor or Executor(registry=self.registry, cache=ResultCache(max_entries=CACHE_ENTRIES))
        self._embedded_seen: dict[int, int] = {}

    def _where(self, flow: Flow, flow_path: Path | None) -> str:
        return f"{flow_path}" if flow_path else f"flow '{flow.name}'"

    def _run(
        self,
        flow: Flow,
        to: str,
        where: str,
        doing: str,
        question: str,
        base_dir: Path,
        on_event: EventHandler | None,
        cancel_event: threading.Event | None,
        flow_path: Path | None = None,
    ) -> RunResult:
        """Run ``flow`` up to ``to``; a cancelled run or a failed node raises, naming the flow and the node.
        ``flow_path``: the flow's file (which flow it is: its own stores, :mod:`flowbuilder.trust.scopes`)."""
        try:
            run = self.executor.run(
                flow,
                to=to,
                inputs=question or None,
                base_dir=base_dir,
                on_event=on_event,
                cancel_event=cancel_event,
                flow_file=flow_path,
            )
        except RunCancelledError:
            raise ComparisonCancelled(f"{where}: cancelled.") from None
        return _checked(run, to, where, doing)

    def _searched_on_cluster(
        self,
        flow: Flow,
        target: str | None,
        questions: Sequence[Question],
        base_dir: Path,
        cancel_event: threading.Event | None,
        where: str,
        relay: Callable[[RunEvent], None],
        degraded: dict[str, list[str]],
    ) -> list[list[Hit]] | None:
        """Every question's hits from runs on the Ray cluster's workers (``--ray``), in batches; None when there is
        no cluster or the question's path cannot run there (it reads a file, or it is a store's own search)."""
        cluster = self.executor.cluster
        if cluster is None or target is None or target in store_node_ids(flow, self.registry):
            return None
        from flowbuilder.cluster.stores import cut_ingest

        cut = cut_ingest(flow, self.registry, target)
        if cut is None:
            return None
        port = next(
            n for n, kind in _output_types(flow.node(target).type, self.registry).items() if kind is PortType.HITS
        )

        def done(number: int, total: int) -> None:
            relay(
                RunEvent(
                    "progress", target, {"done": number, "total": total, "message": "searching on the Ray cluster"}
                )
            )

        try:
            runs = cluster.run_many(
                self.executor, cut, target, [(q.question, "default") for q in questions], base_dir=base_dir,
                cancel_event=cancel_event, on_done=done,
            )  # fmt: skip
        except RunCancelledError:
            raise ComparisonCancelled(f"{where}: cancelled while searching.") from None
        return [_hits_of(_checked(run, target, where, "searching"), target, port, where, degraded) for run in runs]

    def ingest(
        self,
        flow: Flow,
        base_dir: Path,
        *,
        label: str = "",
        on_event: EventHandler | None = None,
        flow_path: Path | None = None,
        cancel_event: threading.Event | None = None,
        namespaces: dict[str, str] | None = None,
        question: str = "",
    ) -> Ingestion:
        """Run ``flow`` up to every store node fed documents; raise naming the node when one fails or a store
        receives no chunks. ``flow`` is run as given (see :func:`isolate` for the per-flow namespaces).

        ``question`` feeds the chat inputs of a store node that both ingests and searches (LangFlow's Chroma
        with a search query), so its chat input does not fail for want of a message."""
        where = self._where(flow, flow_path)
        all_stores = store_node_ids(flow, self.registry)
        if not all_stores:
            types = sorted({n.type for n in flow.nodes})
            raise ComparisonError(
                f"{where} has no vector store node, so there is nothing to search; it has: {', '.join(types)}. "
                "Add a vectorstore.chroma node fed by the chunks."
            )
        writers = [node_id for node_id in all_stores if is_writer(flow, node_id)]
        if not writers:
            raise ComparisonError(
                f"{where}: no vector store node is fed documents ({', '.join(all_stores)} only search), so the "
                "flow produces no chunks to compare; connect a splitter's chunks to a store's documents port."
            )
        stores: list[VectorStore] = []
        inputs: list[Document] = []
        chunks: list[Document] = []
        embedder: Embedder | None = None
        embedded: int | None = None
        added = 0
        started = time.perf_counter()
        run: RunResult | None = None
        for store_id in writers:
            doing = f"ingesting into '{store_id}'"
            run = self._run(flow, store_id, where, doing, question, base_dir, on_event, cancel_event, flow_path)
            result = run.results.get(store_id)
            if result is None or not result.succeeded:
                reason = result.summary if result is not None and result.summary else "it did not run"
                raise ComparisonError(f"{where}: store node '{store_id}' did not run: {reason}")
            store = result.outputs.get("store")
            if not isinstance(store, VectorStore):
                raise ComparisonError(f"{where}: node '{store_id}' produced no vector store service.")
            node_inputs, node_chunks = trace_chunks(flow, run, store_id)
            if not node_chunks:
                feeders = [
                    f"'{e.source}' {run.results[e.source].status if e.source in run.results else 'did not run'}"
                    for e in flow.edges
                    if e.target == store_id and e.target_port == "documents"
                ]
                raise ComparisonError(
                    f"{where}: store node '{store_id}' received no chunks ({', '.join(feeders)}), so there is "
                    "nothing to compare; check the loader's file and the splitter."
                )
            stores.append(store)
            if result.status != "cached":  # "ok", or "warning" (succeeded, but suspicious)
                added += int(result.details.get("added", 0) or 0)
            inputs.extend(node_inputs)
            chunks.extend(node_chunks)
            for edge in flow.edges:
                if edge.target == store_id and edge.target_port == "embedder":
                    source = run.results.get(edge.source)
                    candidate = source.outputs.get(edge.source_port) if source is not None else None
                    if isinstance(candidate, Embedder):
                        embedder = candidate
                        embedded = (embedded or 0) + (self._model_texts_delta(candidate) or 0)
            cluster = result.details.get("cluster")  # --ray: the workers embedded, not this process
            if isinstance(cluster, dict) and isinstance(cluster.get("embedded"), int):
                embedded = (embedded or 0) + cluster["embedded"]
        assert run is not None
        return Ingestion(
            stores,
            writers,
            inputs,
            chunks,
            embedder,
            embedded,
            added,
            time.perf_counter() - started,
            run,
            dict(namespaces or {}),
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
        cancel_event: threading.Event | None = None,
        source: FlowSource | None = None,
        chars: int | None = None,
    ) -> FlowEvaluation:
        """Ingest one flow, search every question and judge the top ``k``; ``chars`` is the context budget
        of hit@chars (default: the flow's prompt budget, else :data:`DEFAULT_CONTEXT_CHARS`)."""
        _check_mode(relevance)
        flow_path = Path(path)
        if not flow_path.is_file():
            raise FlowFileError(flow_path, "no such flow file" if not flow_path.exists() else "is not a file")
        original = source.flow if source is not None and source.flow is not None else read_flow(flow_path)
        variant = source.variant if source is not None else ""
        name = (source.name if source is not None and source.name else "") or original.name
        label = label or name
        base_dir = flow_path.resolve().parent
        budget = chars or context_budget(original) or DEFAULT_CONTEXT_CHARS

        def relay(event: RunEvent) -> None:
            if on_progress is not None:
                on_progress(label, event)

        flow, namespaces = isolate(original, self.registry, base_dir)
        target = retrieval_node(flow, self.registry)
        # Settings are checked (and the deeper search set up) before any ingest: a bad combination must
        # not cost minutes of embedding before it fails.
        deep = max(k, DEEP_K)
        deep_flow, adjusted = deepen(flow, target, deep, self.registry, self._where(flow, flow_path))
        self._announce_skipped(flow, target, relay)
        ingestion = self.ingest(
            flow,
            base_dir,
            label=label,
            on_event=relay,
            flow_path=flow_path,
            cancel_event=cancel_event,
            namespaces=namespaces,
            question=questions[0].question if questions else "",
        )
        files, warnings = loaded_files(ingestion.run)
        store_count = sum(store.count() for store in ingestion.stores)
        distinct = len({(c.source, c.text) for c in ingestion.chunks if c.text.strip()})
        if ingestion.chunks and store_count > distinct:
            warnings.append(
                f"the store holds {store_count} entries but this flow made {distinct} distinct chunks: other "
                "documents share its collection, so results may include them"
            )
        embedder = ingestion.embedder
        count_tokens = embedder.count_tokens if embedder is not None else None
        max_tokens = embedder.max_tokens if embedder is not None else None
        columns = column_names([*ingestion.inputs, *ingestion.chunks]) or run_columns(ingestion.run)
        stats = compute_chunk_stats(
            ingestion.inputs, ingestion.chunks, count_tokens=count_tokens, max_tokens=max_tokens, columns=columns
        )
        started = time.perf_counter()
        probe = questions[0].question if questions else ""
        degraded: dict[str, list[str]] = {}
        searcher = self._searcher(
            deep_flow, target, ingestion, base_dir, deep, cancel_event, flow_path, probe, degraded
        )
        where = self._where(flow, flow_path)
        remote = self._searched_on_cluster(deep_flow, target, questions, base_dir, cancel_event, where, relay, degraded)
        deep_hits: list[list[Hit]] = remote if remote is not None else []
        for number, question in enumerate(questions if remote is None else (), start=1):
            if cancel_event is not None and cancel_event.is_set():
                raise ComparisonCancelled(f"{where}: cancelled while searching.")
            deep_hits.append(searcher(question.question))
            progress = {"done": number, "total": len(questions), "message": "searching"}
            relay(RunEvent("progress", target or ingestion.store_ids[0], progress))
        search_seconds = time.perf_counter() - started
        degraded_lines = degraded_summary(degraded, len(questions))
        warnings.extend(degraded_lines)
        if embedder is not None:
            self._model_texts_delta(embedder)  # query embeddings are not ingestion
        target_type = flow.node(target).type if target else ""
        evaluation = FlowEvaluation(
            label=label,
            path=flow_path,
            name=name,
            stats=stats,
            metrics=aggregate([], k),
            outcomes=[],
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
            description=describe_flow(original, variant),
            retrieval_node=target or "",
            retrieval_type=target_type,
            namespaces=namespaces,
            deep_hits=deep_hits,
            variant=variant,
            degraded=degraded_lines,
            adjusted=adjusted,
            chars=budget,
            sends=returned_hits(flow, target, self.registry),
            files=files,
        )
        return judge_evaluation(evaluation, questions, k, relevance)

    def _announce_skipped(self, flow: Flow, target: str | None, relay: Callable[[RunEvent], None]) -> None:
        """One ``skipped`` event per enabled node compare does not run (chat outputs, prompts, LLMs...)."""
        needed: set[str] = set()
        edges = [(e.source, e.target) for e in flow.edges]
        graph: nx.DiGraph[str] = nx.DiGraph(edges)
        graph.add_nodes_from(spec.id for spec in flow.nodes)
        writers = [n for n in store_node_ids(flow, self.registry) if is_writer(flow, n)]
        for node_id in [*writers, *([target] if target else [])]:
            needed |= {node_id, *nx.ancestors(graph, node_id)}
        for spec in flow.nodes:
            if spec.id not in needed and not spec.disabled:
                relay(RunEvent("skipped", spec.id, {"type": spec.type, "reason": "not needed for retrieval"}))

    def _searcher(
        self,
        flow: Flow,
        target: str | None,
        ingestion: Ingestion,
        base_dir: Path,
        deep: int,
        cancel_event: threading.Event | None,
        flow_path: Path | None,
        probe: str = "",
        degraded: dict[str, list[str]] | None = None,
    ) -> Callable[[str], list[Hit]]:
        """question -> hits, best first: through the final retrieval node, or the store(s) directly.
        ``degraded`` collects, per node, the warnings of the runs (a stage that fell back)."""
        if target is None or target in store_node_ids(flow, self.registry):
            stores = ingestion.stores
            if target is not None and target not in ingestion.store_ids:
                # A reader store node (LangFlow's search-only Chroma): its own service, on the writer's namespace.
                where = self._where(flow, flow_path)
                run = self._run(
                    flow, target, where, "opening its store", probe, base_dir, None, cancel_event, flow_path
                )
                result = run.results.get(target)
                store = result.outputs.get("store") if result is not None and result.succeeded else None
                if isinstance(store, VectorStore):
                    stores = [store]
            return lambda question: self.search(stores, question, deep)
        spec = flow.node(target)
        outputs = _output_types(spec.type, self.registry)
        port = next(name for name, kind in outputs.items() if kind is PortType.HITS)
        where = self._where(flow, flow_path)

        def search(question: str) -> list[Hit]:
            run = self._run(flow, target, where, "searching", question, base_dir, None, cancel_event, flow_path)
            return _hits_of(run, target, port, where, degraded)

        return search

    @staticmethod
    def search(stores: Sequence[VectorStore], question: str, k: int) -> list[Hit]:
        """Top ``k`` over all stores, best score first (one store: its own order)."""
        if len(stores) == 1:
            return stores[0].search(question, k)
        merged = [hit for store in stores for hit in store.search(question, k)]
        merged.sort(key=lambda hit: hit.score, reverse=True)
        return [hit.model_copy(update={"rank": rank}) for rank, hit in enumerate(merged[:k], start=1)]

    def compare_many(
        self,
        sources: Sequence[FlowSource],
        questions: Sequence[Question],
        k: int = 5,
        *,
        on_progress: ProgressHandler | None = None,
        relevance: Relevance = "lenient",
        cancel_event: threading.Event | None = None,
        labels: Sequence[str] | None = None,
        chars: int | None = None,
        sort: str = "mrr",
    ) -> Comparison:
        """Evaluate every source and pair the first (the baseline) with each other one.

        hit@chars is judged at ``chars`` for every flow (default: the baseline's prompt budget, else
        :data:`DEFAULT_CONTEXT_CHARS`), so the flows are measured at an equal budget."""
        if len(sources) < 2:
            raise ComparisonError(f"compare needs at least two flows, got {len(sources)}.")
        if k < 1:
            raise ComparisonError(f"k must be at least 1, got {k}.")
        _check_mode(relevance)
        for source in sources:
            if not source.path.is_file():
                raise FlowFileError(source.path, "no such flow file")
        if not any(q.answerable for q in questions):
            raise ComparisonError(
                "no question in the set has an answer (a gold record or a fact), so there is nothing to compare."
            )
        if sort not in SORT_METRICS:
            raise ComparisonError(f"unknown sort metric '{sort}'; use one of: {', '.join(SORT_METRICS)}")
        if chars is not None and chars < 1:
            raise ComparisonError(f"the context budget (chars) must be at least 1, got {chars}.")
        if chars is None:
            first = sources[0].flow if sources[0].flow is not None else read_flow(sources[0].path)
            chars = context_budget(first) or DEFAULT_CONTEXT_CHARS
        names = list(labels) if labels is not None else flow_labels(len(sources))
        evaluations: list[FlowEvaluation] = []
        for source, label in zip(sources, names, strict=True):
            try:
                evaluation = self.evaluate(
                    source.path,
                    questions,
                    k,
                    label=label,
                    on_progress=on_progress,
                    relevance=relevance,
                    cancel_event=cancel_event,
                    source=source,
                    chars=chars,
                )
            except ComparisonCancelled as cancelled:
                cancelled.finished = evaluations  # a cancel keeps the flows that finished
                raise
            evaluations.append(evaluation)
        return build_comparison(evaluations, k, relevance, sort)

    def compare(
        self,
        path_a: str | os.PathLike[str],
        path_b: str | os.PathLike[str],
        questions: Sequence[Question],
        k: int = 5,
        *,
        on_progress: ProgressHandler | None = None,
        relevance: Relevance = "lenient",
        cancel_event: threading.Event | None = None,
    ) -> Comparison:
        sources = [FlowSource(Path(path_a)), FlowSource(Path(path_b))]
        return self.compare_many(
            sources, questions, k, on_progress=on_progress, relevance=relevance, cancel_event=cancel_event
        )


def build_comparison(
    evaluations: Sequence[FlowEvaluation], k: int, relevance: Relevance, sort: str = "mrr"
) -> Comparison:
    flows = list(evaluations)
    pairs = [compare_pair(flows[0], other, k) for other in flows[1:]]
    return Comparison(k, flows, pairs, relevance, sort)


def judge_evaluation(
    evaluation: FlowEvaluation, questions: Sequence[Question], k: int, relevance: Relevance
) -> FlowEvaluation:
    """``evaluation`` with its deep hits judged (top ``k``) in ``relevance`` mode and every miss classified."""
    whole = WholeRecordIndex(evaluation.inputs, evaluation.chunks) if relevance == "strict" else None
    embedder = evaluation.embedder
    truncation = getattr(embedder, "truncation_offset", None)
    classifier = MissClassifier(
        evaluation.inputs,
        evaluation.chunks,
        relevance=relevance,
        whole_records=whole,
        truncation=truncation if callable(truncation) else None,
        token_limit=embedder.max_tokens if embedder is not None else None,
    )
    outcomes: list[QuestionOutcome] = []
    misses: list[Miss | None] = []
    legs: list[dict[str, int]] = []
    for question, hits in zip(questions, evaluation.deep_hits, strict=True):
        top = [hit.model_copy(update={"rank": rank}) for rank, hit in enumerate(hits[:k], start=1)]
        sent = hits[: evaluation.sends] if evaluation.sends else None
        outcome = judge_hits(
            question, top, k, relevance=relevance, whole_records=whole, chars=evaluation.chars, context=sent
        )
        outcomes.append(outcome)
        first = outcome.first_rank
        legs.append(leg_ranks(outcome.hits[first - 1]) if first else {})
        misses.append(classifier.classify(question, hits, k) if outcome.answerable and first is None else None)
    facts_split = sum(1 for q in questions if classifier.fact_split(q))
    return replace(
        evaluation,
        metrics=aggregate(outcomes, k),
        outcomes=outcomes,
        relevance=relevance,
        misses=misses,
        legs=legs,
        facts_split=facts_split,
    )


def _check_mode(relevance: str) -> None:
    try:
        check_relevance(relevance)
    except ValueError as exc:
        raise ComparisonError(f"{exc}.") from None


def rejudge_evaluation(evaluation: FlowEvaluation, relevance: Relevance) -> FlowEvaluation:
    """The same retrieved hits judged in another relevance mode (nothing is searched again)."""
    _check_mode(relevance)
    questions = [o.question for o in evaluation.outcomes]
    return judge_evaluation(evaluation, questions, evaluation.metrics.k, relevance)


def rejudge(comparison: Comparison, relevance: Relevance) -> Comparison:
    """``comparison`` with every flow's hits re-judged in ``relevance`` mode (no search, no embedding)."""
    if relevance == comparison.relevance:
        return comparison
    flows = [rejudge_evaluation(ev, relevance) for ev in comparison.flows]
    return build_comparison(flows, comparison.k, relevance, comparison.sort)


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
