"""The ``/compare`` page: two flows' chunking and retrieval side by side on one question set.

Pick two flows (the naive and row-labelled examples by default) and a question set; the comparison
runs in a background thread (ingestion up to each flow's vector store, then every question searched)
while a progress bar follows the executor's ``progress`` events. Results: chunk boundaries drawn
over the first source rows of each flow (a colour per chunk, a red marker where a boundary falls
inside a record, greyed text past the embedder's token limit that is never embedded), the chunk
statistics, bar charts of the metrics, and a per-question table; picking a question shows both flows'
top-k chunks with scores and where the gold record landed.

The relevance mode (lenient or strict, next to k) decides which chunks count as relevant; switching it
after a comparison re-judges the same hits at once (nothing is searched or embedded again).

Query parameters preselect the inputs by file name:
``/compare?a=naive.json&b=rows.json&q=dev.jsonl&k=5&rel=strict&run=1``.
"""

from __future__ import annotations

import html
import itertools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nicegui import run, ui

from flowbuilder.data import Document
from flowbuilder.errors import FlowbuilderError
from flowbuilder.evaluation.chunk_stats import ChunkPlacement, place_chunks, record_spans
from flowbuilder.evaluation.compare import Comparison, FlowComparer, FlowEvaluation, rejudge
from flowbuilder.evaluation.metrics import (
    RELEVANCE_HELP,
    RELEVANCE_MODES,
    QuestionOutcome,
    Relevance,
    check_relevance,
    chunk_records,
)
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.examples import NAIVE_FLOW, ROW_LABELLED_FLOW, data_dir, flows_dir
from flowbuilder.executor import RunEvent
from flowbuilder.secrets import redact
from flowbuilder.services import Embedder

DEFAULT_ROWS = 30
DEFAULT_K = 5
DEFAULT_RELEVANCE: Relevance = "lenient"
CHUNK_COLOURS = ("#dbeafe", "#fef3c7", "#dcfce7")
"""Alternating chunk backgrounds (blue, amber, green): neighbours always differ."""
OVERLAP_COLOUR = "#e9d5ff"
FLOW_COLOURS = {"A": "#64748b", "B": "#2563eb"}

_COMPARER = FlowComparer()
"""One comparer for the app: its executor's result cache makes a second comparison instant."""
_COMPARER_LOCK = threading.Lock()

_CSS = """
.fb-rows { font-family: ui-monospace, monospace; font-size: 11px; line-height: 1.45; white-space: pre-wrap;
           word-break: break-all; }
.fb-rec { border-bottom: 1px dashed #cbd5e1; padding: 3px 2px; }
.fb-rec-id { font-weight: 600; color: #334155; margin-right: 6px; }
.fb-rec-cut .fb-rec-id { color: #dc2626; }
.fb-unread { color: rgb(100 116 139 / 0.7); text-decoration: underline dotted #64748b;
             text-underline-offset: 2px; }  /* faint text on the chunk's own colour: still in that chunk */
.fb-cut { display: inline-block; width: 3px; height: 1.1em; background: #dc2626; vertical-align: text-bottom;
          margin: 0 1px; border-radius: 1px; }
.fb-hit-text { font-family: ui-monospace, monospace; font-size: 11px; white-space: pre-wrap; max-height: 140px;
               overflow: auto; background: #f8fafc; padding: 4px; border-radius: 4px; }
"""


# -- inputs ----------------------------------------------------------------------------------------


def workspace_dir() -> Path:
    """The builder's workspace folder (set by ``register_pages``), or its default."""
    try:
        from flowbuilder.ui import app

        return Path(app._config.workspace)
    except Exception:  # the builder page is optional for this page
        return Path("flowbuilder-workspace")


def flow_options() -> dict[str, str]:
    """``{path: label}`` for the flows in ``flows/`` and the workspace."""
    options: dict[str, str] = {}
    for folder, tag in ((flows_dir(), "examples"), (workspace_dir(), "workspace")):
        if folder.is_dir():
            for path in sorted(folder.glob("*.json")):
                options[str(path.resolve())] = f"{path.name} ({tag})"
    return options


def question_options() -> dict[str, str]:
    options: dict[str, str] = {}
    for folder, tag in ((data_dir() / "questions", "data"), (workspace_dir(), "workspace")):
        if folder.is_dir():
            for path in sorted(folder.glob("*.jsonl")):
                options[str(path.resolve())] = f"{path.name} ({tag})"
    return options


def pick(options: dict[str, str], wanted: str | None, default: str | None) -> str | None:
    """The option whose file name is ``wanted`` (else ``default``'s, else the first)."""
    for name in (wanted, default):
        if name:
            for path in options:
                if Path(path).name == name:
                    return path
    return next(iter(options), None)


# -- chunk boundaries over the source rows -------------------------------------------------------


TruncationOffset = Callable[[str], int | None]
"""Character index in a text where the embedding model stops reading it (None: it reads it all)."""


@dataclass(frozen=True)
class RowView:
    record_id: str
    text: str
    cut: bool
    html: str
    unread: bool = False
    """Part of this record lies past the token limit of every chunk holding it: it is never embedded."""


def truncation_of(embedder: Embedder | None) -> TruncationOffset | None:
    """The embedder's ``truncation_offset`` (the local MiniLM has one); None for embedders without a tokenizer."""
    method = getattr(embedder, "truncation_offset", None)
    return method if callable(method) else None


def _read_end(chunk: Document, placement: ChunkPlacement, truncation: TruncationOffset) -> int | None:
    """Where (in the input document) the model stops reading ``chunk``; None when it reads all of it."""
    offset = truncation(chunk.text)
    if offset is None:
        return None
    lead = len(chunk.text) - len(chunk.text.lstrip())  # placements are of the stripped chunk text
    end = placement.start + max(0, offset - lead)
    return end if end < placement.end else None


def boundary_rows(
    inputs: Sequence[Document],
    chunks: Sequence[Document],
    limit: int,
    truncation: TruncationOffset | None = None,
) -> list[RowView]:
    """The first ``limit`` records of the splitter's input, each with its chunks drawn over it; with
    ``truncation``, text past a chunk's token limit (in no chunk that reads it) is greyed."""
    placements = place_chunks(inputs, chunks)
    by_input: dict[int, list[ChunkPlacement]] = {}
    for placement in placements:
        by_input.setdefault(placement.document, []).append(placement)
    read_ends: dict[int, int | None] = {}  # chunk number -> read end; only chunks over shown rows are tokenized
    rows: list[RowView] = []
    for index, doc in enumerate(inputs):
        placed = by_input.get(index, [])
        for span in record_spans(doc):
            if len(rows) >= limit:
                return rows
            inside = [p for p in placed if p.end > span.start and p.start < span.end]
            cut = not any(p.start <= span.start and p.end >= span.end for p in inside)
            if truncation is not None:
                for p in inside:
                    if p.chunk not in read_ends:
                        read_ends[p.chunk] = _read_end(chunks[p.chunk], p, truncation)
            unread = {p.chunk: end for p in inside if (end := read_ends.get(p.chunk)) is not None}
            row_html, has_unread = _row_html(doc.text, span, inside, unread)
            rows.append(RowView(span.record_id, doc.text[span.start : span.end], cut, row_html, has_unread))
    return rows


def _row_html(text: str, span: Any, placed: list[ChunkPlacement], unread: dict[int, int]) -> tuple[str, bool]:
    """Segments between chunk edges, each coloured by the chunk(s) covering it; a red bar at every
    chunk edge strictly inside the record (that is where the record is cut). ``unread`` maps a chunk to
    where the model stops reading it: a segment past that in every chunk covering it is greyed. Returns
    the HTML and whether anything was greyed."""
    edges = {span.start, span.end}
    for p in placed:
        edges.update(e for e in (p.start, p.end) if span.start < e < span.end)
    edges.update(e for e in unread.values() if span.start < e < span.end)
    cuts = {e for p in placed for e in (p.start, p.end) if span.start < e < span.end}
    points = sorted(edges)
    parts: list[str] = []
    greyed = False
    for left, right in itertools.pairwise(points):
        if left in cuts:
            parts.append('<span class="fb-cut" title="chunk boundary inside this record"></span>')
        covering = [p for p in placed if p.start <= left and p.end >= right]
        segment = html.escape(text[left:right])
        if not covering:
            parts.append(f'<span style="color:#94a3b8" title="in no chunk">{segment}</span>')
            continue
        colour = OVERLAP_COLOUR if len(covering) > 1 else CHUNK_COLOURS[covering[0].chunk % len(CHUNK_COLOURS)]
        names = ", ".join(f"#{p.chunk}" for p in covering)
        label = "chunks" if len(covering) > 1 else "chunk"
        # Overlap can rescue text: it is lost only when every chunk holding it stops reading before it.
        if all(p.chunk in unread and unread[p.chunk] <= left for p in covering):
            greyed = True
            parts.append(
                f'<span class="fb-unread" style="background:{colour}" title="{label} {names}: past the '
                f"embedder's token limit, never embedded\">{segment}</span>"
            )
            continue
        parts.append(f'<span style="background:{colour}" title="{label} {names}">{segment}</span>')
    return "".join(parts), greyed


def rows_html(rows: Sequence[RowView]) -> str:
    blocks = []
    for row in rows:
        css = "fb-rec fb-rec-cut" if row.cut else "fb-rec"
        mark = (" ✂ cut" if row.cut else "") + (" ◌ unread" if row.unread else "")
        blocks.append(
            f'<div class="{css}"><span class="fb-rec-id">{html.escape(row.record_id)}{mark}</span>{row.html}</div>'
        )
    return f'<div class="fb-rows">{"".join(blocks)}</div>'


def truncation_legend(embedder: Embedder | None) -> str:
    if embedder is None:
        return "no embedder found for this flow's store: unread text is not shown"
    if truncation_of(embedder) is None or embedder.max_tokens is None:
        return f"{embedder.model_id} has no tokenizer here: text past its token limit is not shown"
    return f"greyed: past the embedder's {embedder.max_tokens}-token limit, never embedded"


# -- result widgets ------------------------------------------------------------------------------


def stats_rows(comparison: Comparison) -> list[dict[str, Any]]:
    def fmt(ev: FlowEvaluation) -> list[str]:
        s = ev.stats
        return [
            str(s.chunks),
            f"{s.length_min} / {s.length_mean:.0f} / {s.length_max}",
            f"{s.records_cut} of {s.records} ({100 * s.records_cut_share:.0f}%)",
            str(s.chunks_at_record_start),
            "n/a" if s.chunks_with_labels is None else str(s.chunks_with_labels),
            "n/a" if s.chunks_over_token_limit is None else f"{s.chunks_over_token_limit} (> {s.token_limit})",
            "n/a" if ev.embedded is None else str(ev.embedded),
        ]

    names = [
        "chunks",
        "length min / mean / max",
        "records cut",
        "chunks starting at a record",
        "chunks with column labels",
        "chunks over the token limit",
        "texts embedded this run",
    ]
    return [
        {"stat": name, "a": a, "b": b} for name, a, b in zip(names, fmt(comparison.a), fmt(comparison.b), strict=True)
    ]


def metrics_chart(comparison: Comparison) -> dict[str, Any]:
    k = comparison.k
    labels = ["hit@1", f"hit@{k}", "MRR", f"recall@{k}", f"nDCG@{k}"]

    def values(ev: FlowEvaluation) -> list[float]:
        m = ev.metrics
        return [round(v, 3) for v in (m.hit_at_1, m.hit_at_k, m.mrr, m.recall_at_k, m.ndcg_at_k)]

    return {
        "tooltip": {"trigger": "axis"},
        "legend": {"top": 0, "data": [f"A: {comparison.a.name}", f"B: {comparison.b.name}"]},
        "grid": {"left": 40, "right": 10, "top": 48, "bottom": 28},
        "xAxis": {"type": "category", "data": labels},
        "yAxis": {"type": "value", "min": 0, "max": 1},
        "series": [
            {
                "name": f"{label}: {ev.name}",
                "type": "bar",
                "data": values(ev),
                "itemStyle": {"color": FLOW_COLOURS[label]},
                "label": {"show": True, "position": "top", "fontSize": 10},
            }
            for label, ev in (("A", comparison.a), ("B", comparison.b))
        ],
    }


def question_rows(comparison: Comparison) -> list[dict[str, Any]]:
    better = {"a": "A", "b": "B", "tie": "=", "-": "n/a"}
    return [
        {
            "id": row.question.id,
            "question": row.question.question,
            "gold": ", ".join(row.question.gold) or "(no answer)",
            "rank_a": "-" if row.rank_a is None else row.rank_a,
            "rank_b": "-" if row.rank_b is None else row.rank_b,
            "better": better[row.winner],
        }
        for row in comparison.rows
    ]


def relevance_mode(value: str | None) -> Relevance:
    """A query parameter or select value as a relevance mode (the default when missing or unknown)."""
    try:
        return check_relevance(value or DEFAULT_RELEVANCE)
    except ValueError:
        return DEFAULT_RELEVANCE


def relevance_note(relevance: Relevance) -> str:
    """Which mode judged the green "relevant" marks, in words."""
    return f"relevance judged {relevance}: {RELEVANCE_HELP[relevance]}"


def gold_summary(outcome: QuestionOutcome, k: int) -> str:
    if not outcome.question.gold:
        return "no gold record (fact only)" if outcome.question.fact else "question without an answer"
    # Strict mode: a chunk naming the record without holding it (or its fact) does not count as finding it.
    missing = "not in top-{k}" if outcome.relevance == "lenient" else "no relevant chunk in top-{k}"
    return "; ".join(
        f"{gold}: rank {rank}" if rank is not None else f"{gold}: {missing.format(k=k)}"
        for gold, rank in outcome.gold_ranks.items()
    )


# -- the page ------------------------------------------------------------------------------------


class ComparePage:
    def __init__(self, query: dict[str, str]) -> None:
        self.events: deque[tuple[str, RunEvent]] = deque()
        self.comparison: Comparison | None = None
        self.running = False
        flows = flow_options()
        questions = question_options()
        with ui.header().classes("items-center bg-slate-800 q-py-xs"):
            ui.label("Flowbuilder · Compare chunking").classes("text-lg text-white")
            ui.space()
            ui.link("Back to the builder", "/").classes("text-white")
        with ui.row().classes("w-full items-end gap-3"):
            self.flow_a = ui.select(flows, value=pick(flows, query.get("a"), NAIVE_FLOW), label="Flow A (baseline)")
            self.flow_b = ui.select(
                flows, value=pick(flows, query.get("b"), ROW_LABELLED_FLOW), label="Flow B (candidate)"
            )
            self.questions = ui.select(
                questions, value=pick(questions, query.get("q"), "vwo500_dev.jsonl"), label="Question set"
            )
            for select in (self.flow_a, self.flow_b, self.questions):
                select.classes("min-w-[260px]")
            self.k = ui.number("k", value=int(query.get("k") or DEFAULT_K), min=1, max=50, step=1).classes("w-20")
            self.relevance = (
                ui.select(
                    {mode: mode for mode in RELEVANCE_MODES},
                    value=relevance_mode(query.get("rel")),
                    label="relevance",
                    on_change=self.rejudge,
                )
                .props("data-testid=relevance")
                .classes("w-28")
                .tooltip("; ".join(f"{mode}: {text}" for mode, text in RELEVANCE_HELP.items()))
            )
            self.limit = ui.number("rows shown", value=DEFAULT_ROWS, min=1, max=500, step=1).classes("w-28")
            self.button = ui.button("Compare", icon="compare_arrows", on_click=self.start).props("data-testid=compare")
        with ui.column().classes("w-full gap-0") as self.progress_box:
            self.progress_label = ui.label("").classes("text-xs text-grey-8")
            self.progress = ui.linear_progress(value=0, show_value=False).props("data-testid=compare-progress")
        self.progress_box.set_visibility(False)
        self.results = ui.column().classes("w-full")
        ui.timer(0.1, self.drain)
        if query.get("run"):
            ui.timer(0.2, self.start, once=True)

    def drain(self) -> None:
        latest: tuple[str, RunEvent] | None = None
        while self.events:
            label, event = self.events.popleft()
            if event.kind in ("progress", "node_started", "node_cached"):
                latest = (label, event)
        if latest is None:
            return
        label, event = latest
        if event.kind == "progress":
            done, total = int(event.data.get("done", 0)), int(event.data.get("total", 0))
            self.progress.set_value(done / total if total else 0)
            what = event.data.get("message") or "embedding"
            self.progress_label.set_text(f"Flow {label} · {event.node_id}: {what} {done}/{total}")
        else:
            verb = "running" if event.kind == "node_started" else "cached"
            self.progress_label.set_text(f"Flow {label} · {verb} {event.node_id}")

    async def start(self) -> None:
        if self.running:
            return
        paths = (self.flow_a.value, self.flow_b.value, self.questions.value)
        if not all(paths):
            ui.notify("Pick two flows and a question set.", type="warning")
            return
        self.running = True
        self.button.disable()
        self.progress_box.set_visibility(True)
        self.progress.set_value(0)
        self.progress_label.set_text("Starting…")
        k = max(1, int(self.k.value or DEFAULT_K))
        relevance = relevance_mode(self.relevance.value)
        try:
            questions = load_questions(str(paths[2]))
            self.comparison = await run.io_bound(self._compare, str(paths[0]), str(paths[1]), questions, k, relevance)
        except FlowbuilderError as exc:
            ui.notify(redact(str(exc)), type="negative", multi_line=True)
            self.progress_label.set_text(f"Failed: {redact(str(exc))}")
            return
        finally:
            self.running = False
            self.button.enable()
            self.events.clear()
        self.events.clear()  # stale progress must not overwrite "Done." on the next drain
        self.progress.set_value(1)
        self.progress_label.set_text("Done.")
        self.show()

    def _compare(self, path_a: str, path_b: str, questions: Any, k: int, relevance: Relevance) -> Comparison:
        with _COMPARER_LOCK:
            return _COMPARER.compare(
                path_a,
                path_b,
                questions,
                k,
                on_progress=lambda label, event: self.events.append((label, event)),
                relevance=relevance,
            )

    def rejudge(self) -> None:
        """The shown comparison's hits judged in the newly picked mode (the next Compare uses it too)."""
        if self.comparison is None or self.running:
            return
        self.comparison = rejudge(self.comparison, relevance_mode(self.relevance.value))
        self.show()

    def show(self) -> None:
        comparison = self.comparison
        if comparison is None:
            return
        limit = max(1, int(self.limit.value or DEFAULT_ROWS))
        self.results.clear()
        with self.results:
            with ui.row().classes("w-full no-wrap gap-4 items-start"):
                with ui.card().classes("w-[520px] shrink-0"):
                    ui.label("Chunk statistics").classes("text-subtitle1")
                    ui.table(
                        columns=[
                            {"name": "stat", "label": "", "field": "stat", "align": "left"},
                            {"name": "a", "label": "A", "field": "a"},
                            {"name": "b", "label": "B", "field": "b"},
                        ],
                        rows=stats_rows(comparison),
                        row_key="stat",
                    ).props("dense flat wrap-cells data-testid=stats").classes("w-full")
                    ui.label(f"A: {comparison.a.name} ({comparison.a.path.name})").classes("text-xs text-grey-8")
                    ui.label(f"B: {comparison.b.name} ({comparison.b.path.name})").classes("text-xs text-grey-8")
                    for ev in (comparison.a, comparison.b):
                        for warning in ev.warnings:
                            ui.label(f"{ev.label}: {warning}").classes("text-xs text-orange-9")
                with ui.card().classes("grow"):
                    m = comparison.a.metrics
                    ui.label(
                        f"Retrieval metrics (k = {comparison.k}, {comparison.relevance} relevance; "
                        f"{m.questions} questions with an answer, {m.unanswerable} without)"
                    ).classes("text-subtitle1")
                    ui.echart(metrics_chart(comparison)).classes("w-full h-64").props("data-testid=metrics")
                    ui.label(
                        f"B vs A per question: {comparison.wins_b} wins, {comparison.wins_a} losses, "
                        f"{comparison.ties} ties"
                    ).classes("text-sm")
            ui.label(f"Chunk boundaries over the first {limit} source rows").classes("text-subtitle1 q-mt-md")
            ui.label(
                "Each colour is one chunk (purple: text in two overlapping chunks); a red bar marks a chunk "
                "boundary inside a record, ✂ a record no single chunk holds whole, and ◌ a record with text the "
                "embedder never reads."
            ).classes("text-xs text-grey-8")
            with ui.row().classes("w-full no-wrap gap-4 items-start"):
                for ev in (comparison.a, comparison.b):
                    truncation = truncation_of(ev.embedder)
                    rows = boundary_rows(ev.inputs, ev.chunks, limit, truncation)
                    cut = sum(1 for r in rows if r.cut)
                    unread = sum(1 for r in rows if r.unread)
                    with ui.card().classes("w-1/2"):
                        ui.label(
                            f"{ev.label}: {ev.name} — {cut} of {len(rows)} rows cut, {unread} partly never embedded"
                            if truncation is not None
                            else f"{ev.label}: {ev.name} — {cut} of {len(rows)} rows cut"
                        ).classes("text-bold")
                        ui.label(truncation_legend(ev.embedder)).classes("text-xs text-grey-8").props(
                            f"data-testid=unread-legend-{ev.label.lower()}"
                        )
                        with ui.scroll_area().classes("w-full h-96"):
                            ui.html(rows_html(rows), sanitize=False).props(f"data-testid=rows-{ev.label.lower()}")
            ui.label("Per question (pick one to see both flows' top chunks)").classes("text-subtitle1 q-mt-md")
            with ui.row().classes("w-full no-wrap gap-4 items-start"):
                table = (
                    ui.table(
                        columns=[
                            {"name": "id", "label": "id", "field": "id", "align": "left", "sortable": True},
                            {
                                "name": "question",
                                "label": "question",
                                "field": "question",
                                "align": "left",
                                "style": "white-space: normal; min-width: 220px",
                            },
                            {"name": "gold", "label": "gold", "field": "gold", "align": "left"},
                            {"name": "rank_a", "label": "rank A", "field": "rank_a", "sortable": True},
                            {"name": "rank_b", "label": "rank B", "field": "rank_b", "sortable": True},
                            {"name": "better", "label": "better", "field": "better", "sortable": True},
                        ],
                        rows=question_rows(comparison),
                        row_key="id",
                        selection="single",
                        pagination=15,
                        on_select=lambda e: self.show_question(e.selection[0]["id"] if e.selection else None),
                    )
                    .props("dense data-testid=questions")
                    .classes("w-1/2")
                )
                table.add_slot(
                    "body-cell-better",
                    """<q-td :props="props"><q-badge :color="props.value == 'B' ? 'positive' :
                    (props.value == 'A' ? 'negative' : 'grey')" :label="props.value" /></q-td>""",
                )
                self.detail = ui.column().classes("w-1/2")
                with self.detail:
                    ui.label("Pick a question in the table.").classes("text-grey-7")

    def show_question(self, question_id: str | None) -> None:
        comparison = self.comparison
        if comparison is None or question_id is None:
            return
        index = next(i for i, row in enumerate(comparison.rows) if row.question.id == question_id)
        question = comparison.rows[index].question
        self.detail.clear()
        with self.detail:
            ui.label(f"{question.id}: {question.question}").classes("text-bold")
            if question.fact:
                ui.label(f"fact: {question.fact}").classes("text-xs text-grey-8")
            ui.label(relevance_note(comparison.relevance)).classes("text-xs text-grey-8").props(
                "data-testid=relevance-note"
            )
            with ui.row().classes("w-full no-wrap gap-2 items-start"):
                for ev in (comparison.a, comparison.b):
                    outcome = ev.outcomes[index]
                    with ui.column().classes("w-1/2 gap-1").props(f"data-testid=hits-{ev.label.lower()}"):
                        ui.label(f"{ev.label}: {ev.name}").classes("text-bold")
                        ui.label(gold_summary(outcome, comparison.k)).classes("text-xs")
                        for hit, relevant in zip(outcome.hits, outcome.relevant, strict=True):
                            colour = "border-green-600" if relevant else "border-slate-300"
                            with ui.card().classes(f"w-full q-pa-xs border-l-4 {colour}"):
                                records = ", ".join(sorted(chunk_records(hit.document))) or "no record id"
                                mark = f" ✓ relevant ({comparison.relevance})" if relevant else ""
                                ui.label(f"#{hit.rank} · score {hit.score:.3f} · {records}{mark}").classes("text-xs")
                                ui.html(
                                    f'<div class="fb-hit-text">{html.escape(hit.document.text)}</div>', sanitize=False
                                )


def compare_page(a: str | None = None, b: str | None = None, q: str | None = None, k: str | None = None,
                 rel: str | None = None, run: str | None = None) -> None:  # fmt: skip
    ui.add_css(_CSS)
    query = {key: value for key, value in {"a": a, "b": b, "q": q, "k": k, "rel": rel, "run": run}.items() if value}
    ComparePage(query)


def register() -> None:
    """Define the ``/compare`` page (called by the builder's ``register_pages()``)."""
    ui.page("/compare", title="Flowbuilder · Compare")(compare_page)
