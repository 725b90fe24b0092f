"""The ``/compare`` page: two or more flows' chunking and retrieval side by side on one question set.

Pick flows (the first is the baseline; by default the LangFlow course's naive, improved-as-exported and
row-labelled flows, each with one line saying what it does) and a question set; the comparison runs in
a background thread while a progress bar with an estimate of the time left follows the executor's
events, and Cancel stops it (two or more flows that finished are still compared; one is summed up). Results:
a leaderboard by MRR, bar charts of the metrics next to the 95% intervals of each flow's difference from the
baseline with a verdict per pair, the chunk statistics, chunk boundaries drawn over the first source rows of
every flow (a colour per chunk, a red marker where a boundary falls inside a record, greyed text past the
embedder's token limit that is never embedded), and a per-question grid whose misses say why; clicking a
question shows every flow's top-k chunks with scores, per-leg ranks and where the gold record landed.

The relevance mode (lenient or strict, next to k) decides which chunks count as relevant; switching it
after a comparison re-judges the same hits at once (nothing is searched or embedded again).

Query parameters preselect the inputs by file name:
``/compare?flows=naive.json,rows.json&q=dev.jsonl&k=5&rel=strict`` (``a=``/``b=`` pick two flows;
``emb=screening`` swaps every embedder for the screening-grade WordLlama and shows what that costs). Opening a
page never starts work (a link on another site could): the Compare button does; ``run=1`` is ignored.
"""

from __future__ import annotations

import html
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nicegui import ui

from flowbuilder.data import Document
from flowbuilder.errors import FlowbuilderError
from flowbuilder.evaluation.chunk_stats import ChunkPlacement, place_chunks, record_spans
from flowbuilder.evaluation.compare import (
    DEEP_K,
    Comparison,
    ComparisonCancelled,
    FlowComparer,
    FlowEvaluation,
    FlowSource,
    PairComparison,
    build_comparison,
    describe_flow,
    flow_labels,
    read_flow,
    rejudge,
    screening_source,
)
from flowbuilder.evaluation.metrics import (
    RELEVANCE_HELP,
    RELEVANCE_MODES,
    QuestionOutcome,
    Relevance,
    check_relevance,
    chunk_records,
)
from flowbuilder.evaluation.misses import MISS_KINDS, MISS_LABELS, leg_ranks
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.examples import IMPROVED_FLOW, NAIVE_FLOW, ROW_LABELLED_FLOW, data_dir, flows_dir
from flowbuilder.executor import RunEvent
from flowbuilder.services import Embedder
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.secrets import redact
from flowbuilder.ui.jobs import ACTIVITY_CSS, ActivityBar, Job, PageJob
from flowbuilder.ui.session import AppConfig
from flowbuilder.ui.tune_panel import TunePanel
from flowbuilder.ui.widgets import WIDGET_CSS, notify

DEFAULT_ROWS = 30
DEFAULT_K = 5
DEFAULT_RELEVANCE: Relevance = "strict"
"""Strict by default: a chunk holding half a record does not count, which is what the course's flows differ in."""
DEFAULT_FLOWS = (NAIVE_FLOW, IMPROVED_FLOW, ROW_LABELLED_FLOW)
DEFAULT_QUESTIONS = "vwo500_dev.jsonl"
EMBEDDERS = {"flows": "as in the flows", "screening": "WordLlama (screening: fast, coarser)"}
SCREENING_COST = (
    "Screening-grade embedder: every flow's embedder was swapped for WordLlama (static word vectors), so a "
    "sweep embeds in seconds instead of minutes. Use it to rank chunking settings, then confirm the winner "
    "with the flow's own embedder: the absolute figures are lower. {cost}"
)
SCREENING_MEASURED = (
    "Measured on data/docs (57 questions, strict, k = 5; benchmarks/chunking_lab.py): MRR per strategy 0.56-0.76 "
    "with WordLlama against 0.55-0.86 with MiniLM (mean 0.69 against 0.74); both put fixed-300 last, but the top "
    "pick differs (WordLlama: markdown; MiniLM: parent-child, WordLlama's second), so confirm the top two or three. "
    "The cold sweep took 159 s against 416 s (loaded machine)."
)
MISS_SHORT = {"cut": "cut", "below_k": "below k", "past_token_limit": "past token limit", "no_chunk": "no chunk"}
CHUNK_COLOURS = ("#dbeafe", "#fef3c7", "#dcfce7")
"""Alternating chunk backgrounds (blue, amber, green): neighbours always differ."""
OVERLAP_COLOUR = "#e9d5ff"
FLOW_PALETTE = ("#64748b", "#2563eb", "#d97706", "#059669", "#9333ea", "#db2777", "#0891b2", "#65a30d")
"""Bar colours by flow position (the baseline is slate grey)."""

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
.fb-ci { font-size: 12px; }
.fb-ci-pair { margin-bottom: 10px; }
.fb-ci-title { font-weight: 600; color: #334155; }
.fb-ci-row { display: flex; align-items: center; gap: 8px; height: 18px; }
.fb-ci-name { width: 48px; color: #475569; }
.fb-ci-axis { position: relative; width: 260px; height: 12px; background: #f1f5f9; border-radius: 2px; }
.fb-ci-zero { position: absolute; left: 50%; top: -2px; bottom: -2px; width: 1px; background: #334155; }
.fb-ci-bar { position: absolute; top: 3px; height: 6px; border-radius: 3px; }
.fb-ci-dot { position: absolute; top: 1px; width: 10px; height: 10px; margin-left: -5px; border-radius: 50%;
             background: #0f172a; }
.fb-ci-text { font-family: ui-monospace, monospace; color: #334155; }
.fb-verdict { margin-top: 2px; color: #0f172a; }
.fb-ci-scale { color: #64748b; font-size: 11px; }
.fb-hit-text { font-family: ui-monospace, monospace; font-size: 11px; white-space: pre-wrap; max-height: 140px;
               overflow: auto; background: #f8fafc; padding: 4px; border-radius: 4px; }
"""


# -- inputs ----------------------------------------------------------------------------------------


def page_resolver(config: AppConfig) -> CredentialResolver:
    """Credentials and approvals for this page's runs: the builder's workspace and its ``--allow-path`` folders."""
    return CredentialResolver(paths=config.allowed_paths, workspace=config.workspace)


def flow_options(workspace: Path) -> dict[str, str]:
    """``{path: label}`` for the flows in ``flows/`` and the builder's workspace folder."""
    options: dict[str, str] = {}
    for folder, tag in ((flows_dir(), "examples"), (workspace, "workspace")):
        if folder.is_dir():
            for path in sorted(folder.glob("*.json")):
                options[str(path.resolve())] = f"{path.name} ({tag})"
    return options


def question_options(workspace: Path) -> dict[str, str]:
    options: dict[str, str] = {}
    for folder, tag in ((data_dir() / "questions", "data"), (workspace, "workspace")):
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
    """One source record as the boundary view draws it: its text with the chunk edges marked (``html``) and
    whether the chunking cut it."""

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


STAT_NAMES = (
    "chunks",
    "length min / mean / max",
    "records cut",
    "chunks starting at a record",
    "chunks with column labels",
    "chunks over the token limit",
    "texts embedded this run",
    "facts split across chunks",
    "ingest seconds",
)


def _stat_values(ev: FlowEvaluation) -> list[str]:
    s = ev.stats
    return [
        str(s.chunks),
        f"{s.length_min} / {s.length_mean:.0f} / {s.length_max}",
        f"{s.records_cut} of {s.records} ({100 * s.records_cut_share:.0f}%)",
        str(s.chunks_at_record_start),
        "n/a" if s.chunks_with_labels is None else str(s.chunks_with_labels),
        "n/a" if s.chunks_over_token_limit is None else f"{s.chunks_over_token_limit} (> {s.token_limit})",
        "n/a" if ev.embedded is None else str(ev.embedded),
        str(ev.facts_split),
        f"{ev.ingest_seconds:.1f}",
    ]


def stats_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per statistic, one column per flow (keyed by its lower-case label)."""
    values = {ev.label.lower(): _stat_values(ev) for ev in comparison.flows}
    return [
        {"stat": name, **{label: column[index] for label, column in values.items()}}
        for index, name in enumerate(STAT_NAMES)
    ]


def flow_colour(index: int) -> str:
    return FLOW_PALETTE[index % len(FLOW_PALETTE)]


def metrics_chart(comparison: Comparison) -> dict[str, Any]:
    k = comparison.k
    labels = ["hit@1", f"hit@{k}", f"hit@{comparison.chars}ch", "MRR", f"recall@{k}", f"nDCG@{k}"]

    def values(ev: FlowEvaluation) -> list[float]:
        m = ev.metrics
        return [round(v, 3) for v in (m.hit_at_1, m.hit_at_k, m.hit_at_chars, m.mrr, m.recall_at_k, m.ndcg_at_k)]

    names = [f"{ev.label}: {ev.name}" for ev in comparison.flows]
    return {
        "tooltip": {"trigger": "axis"},
        "legend": {"top": 0, "data": names},
        "grid": {"left": 40, "right": 10, "top": 24 + 20 * ((len(names) + 1) // 2), "bottom": 28},
        "xAxis": {"type": "category", "data": labels},
        "yAxis": {"type": "value", "min": 0, "max": 1},
        "series": [
            {
                "name": name,
                "type": "bar",
                "data": values(ev),
                "itemStyle": {"color": flow_colour(index)},
                "label": {"show": len(names) <= 3, "position": "top", "fontSize": 10},
            }
            for index, (name, ev) in enumerate(zip(names, comparison.flows, strict=True))
        ],
    }


def leaderboard_table_rows(comparison: Comparison) -> list[dict[str, Any]]:
    k = comparison.k
    rows = []
    for place, ev in enumerate(comparison.leaderboard(), start=1):
        m = ev.metrics
        pair = comparison.pair_for(ev)
        counts = ev.miss_counts()
        rows.append(
            {
                "place": place,
                "flow": f"{ev.label}: {ev.name}" + (" ⚠ degraded (see the warnings below)" if ev.degraded else ""),
                "hit1": f"{m.hit_at_1:.3f}",
                "hitk": f"{m.hit_at_k:.3f}",
                "hitc": f"{m.hit_at_chars:.3f}",
                "mrr": f"{m.mrr:.3f}",
                "recall": f"{m.recall_at_k:.3f}",
                "chars": f"{ev.prompt_chars:.0f}",
                "chunks": ev.stats.chunks,
                "split": ev.facts_split,
                "ingest": f"{ev.ingest_seconds:.1f}",
                "misses": " · ".join(f"{counts[kind]} {MISS_SHORT[kind]}" for kind in MISS_KINDS if counts[kind])
                or "none",
                "versus": "baseline" if pair is None else short_verdict(pair),
                "k": k,
            }
        )
    return rows


SORTABLE = ("hit1", "hitk", "hitc", "mrr", "recall", "chars", "chunks")
"""Leaderboard columns a click sorts by (hit@chars compares the flows at an equal prompt budget)."""


def short_verdict(pair: PairComparison) -> str:
    if not pair.significant:
        return "no detectable difference"
    return "better" if pair.differences["mrr"].diff > 0 else "worse"


def _signed(value: float) -> str:
    return f"{value:+.3f}".replace("-", "−")


def interval_html(comparison: Comparison) -> str:
    """Per pair and metric: the 95% interval of ``other - baseline`` as a bar around zero, the difference
    as a dot. Green: the other flow is better; red: worse; grey: the interval crosses zero (noise)."""
    metric_names = {
        "hit@1": "hit@1",
        "hit@k": f"hit@{comparison.k}",
        "hit@chars": f"hit@{comparison.chars}ch",
        "mrr": "MRR",
    }
    scale = max([0.1, *(max(abs(d.low), abs(d.high)) for p in comparison.pairs for d in p.differences.values())])

    def x(value: float) -> float:
        return 50 + 50 * value / scale

    blocks = []
    for pair in comparison.pairs:
        rows = []
        for key, name in metric_names.items():
            d = pair.differences[key]
            colour = "#16a34a" if d.low > 0 else "#dc2626" if d.high < 0 else "#94a3b8"
            left, right = x(d.low), x(d.high)
            rows.append(
                f'<div class="fb-ci-row" data-metric="{key}"><span class="fb-ci-name">{name}</span>'
                f'<span class="fb-ci-axis"><span class="fb-ci-zero"></span>'
                f'<span class="fb-ci-bar" style="left:{left:.1f}%;width:{max(0.6, right - left):.1f}%;'
                f'background:{colour}"></span><span class="fb-ci-dot" style="left:{x(d.diff):.1f}%"></span></span>'
                f'<span class="fb-ci-text">{_signed(d.diff)} ({_signed(d.low)}..{_signed(d.high)})</span></div>'
            )
        verdict_text = html.escape(pair.verdict)
        blocks.append(
            f'<div class="fb-ci-pair" data-testid="interval-{pair.b.label.lower()}">'
            f'<div class="fb-ci-title">{html.escape(pair.b.label)} vs {html.escape(pair.a.label)}: '
            f"{html.escape(pair.b.name)}</div>{''.join(rows)}"
            f'<div class="fb-verdict" data-testid="verdict-{pair.b.label.lower()}">{verdict_text}</div></div>'
        )
    axis = f'<div class="fb-ci-scale">axis: −{scale:.2f} … 0 … +{scale:.2f} (other flow minus baseline)</div>'
    return f'<div class="fb-ci">{"".join(blocks)}{axis}</div>'


def _rank_cell(ev: FlowEvaluation, index: int) -> str:
    outcome = ev.outcomes[index]
    if outcome.first_rank is not None:
        return str(outcome.first_rank)
    miss = ev.misses[index] if index < len(ev.misses) else None
    if miss is None:
        return "-"
    if miss.kind == "below_k":
        return f"- (rank {miss.rank})" if miss.rank else f"- (> {DEEP_K})"
    return f"- ({MISS_SHORT[miss.kind]})"


def question_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per question: each flow's rank (``rank_a``, ``rank_b``, ...; a miss says why) and, against the
    baseline, which flow ranked the evidence better (two flows) or how many flows beat it."""
    better = {"a": "A", "b": "B", "tie": "=", "-": "n/a"}
    rows = []
    for index, row in enumerate(comparison.rows):
        item: dict[str, Any] = {
            "id": row.question.id,
            "question": row.question.question,
            "gold": ", ".join(row.question.gold) or ("(fact only)" if row.question.fact else "(no answer)"),
        }
        for ev in comparison.flows:
            item[f"rank_{ev.label.lower()}"] = _rank_cell(ev, index)
        if len(comparison.flows) == 2:
            item["better"] = better[row.winner]
        else:
            winners = [p.b.label for p in comparison.pairs if p.rows[index].winner == "b"]
            item["better"] = ", ".join(winners) if winners else ("n/a" if row.winner == "-" else "=")
        rows.append(item)
    return rows


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


def flow_line(path: str) -> str:
    """``name — what it does`` for a flow file (read, never run); a broken file says so."""
    try:
        flow = read_flow(path)
    except FlowbuilderError as exc:
        return f"{Path(path).name}: cannot be read ({redact(str(exc))})"
    return f"{flow.name} — {describe_flow(flow)}"


class Eta:
    """Remaining time of a comparison from the progress so far: each flow is 1/N of the work, its ingestion
    (embedding) 80% of a flow and its searches 20%."""

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels = list(labels)
        self.started = time.monotonic()
        self.fraction = 0.0

    def update(self, label: str, event: RunEvent) -> None:
        if label not in self.labels:
            return
        index = self.labels.index(label)
        within = None
        if event.kind == "progress":
            done, total = int(event.data.get("done", 0)), int(event.data.get("total", 0))
            share = done / total if total else 0.0
            within = 0.8 + 0.2 * share if event.data.get("message") == "searching" else 0.8 * share
        fraction = (index + (within or 0.0)) / len(self.labels)
        self.fraction = max(self.fraction, fraction)

    def seconds_left(self) -> float | None:
        elapsed = time.monotonic() - self.started
        if self.fraction < 0.02 or elapsed < 1.0:
            return None
        return elapsed * (1 - self.fraction) / self.fraction

    def text(self) -> str:
        left = self.seconds_left()
        if left is None:
            return "estimating time left…"
        if left < 60:
            return f"about {max(1, round(left))} s left"
        return f"about {left / 60:.1f} min left"


# -- the page ------------------------------------------------------------------------------------


INTRO = (
    "Compares how two or more flows chunk and retrieve, on one question set: pick the flows (the first is the "
    "baseline) and a question set (a .jsonl file, one question a line with the record ids that hold its answer), "
    "then Compare."
)
LEADERBOARD_COLUMNS = (
    ("place", "#"), ("flow", "flow"), ("hit1", "hit@1"), ("hitk", "hit@{k}"), ("hitc", "hit@{chars}ch"), ("mrr", "MRR"),
    ("recall", "recall@{k}"), ("chars", "top-3 chars"), ("chunks", "chunks"), ("split", "split facts"),
    ("ingest", "ingest s"), ("misses", "why missed"), ("versus", "vs baseline"),
)  # fmt: skip
BETTER_BADGE = """<q-td :props="props"><q-badge :color="props.value == 'A' || props.value == '=' ||
    props.value == 'n/a' ? (props.value == 'A' ? 'negative' : 'grey') : 'positive'" :label="props.value" /></q-td>"""


def compare_outcome(result: tuple[Comparison, list[str]]) -> str:
    """The job's last line: done, or which flows a cancelled comparison still shows."""
    comparison, missing = result
    if not missing:
        return "Done."
    shown = ", ".join(ev.label for ev in comparison.flows)
    return f"Cancelled. Flows {shown} finished and are compared below; {', '.join(missing)} did not finish."


def cancelled_early(cancelled: ComparisonCancelled) -> ComparisonCancelled:
    """A cancel before two flows finished, saying what the one that did measured."""
    if not cancelled.finished:
        return cancelled
    ev = cancelled.finished[0]
    m = ev.metrics
    return ComparisonCancelled(
        f"Only flow {ev.label} ({ev.name}) finished: MRR {m.mrr:.3f}, hit@1 {m.hit_at_1:.3f} over {m.questions} "
        "questions; nothing to compare it with."
    )


class ComparePage:
    """The /compare page: pick flows and a question set, run the comparison as a cancellable job, and show the
    leaderboard, verdicts and where each flow's chunk boundaries fall."""

    def __init__(self, query: dict[str, str], workspace: Path) -> None:
        self.comparison: Comparison | None = None
        self.eta: Eta | None = None
        self.detail: Any = None
        flows, questions = flow_options(workspace), question_options(workspace)
        with ui.header().classes("items-center bg-slate-800 q-py-xs"):
            ui.label("Flowbuilder · Compare chunking").classes("text-lg text-white")
            ui.space()
            ui.link("Back to the builder", "/").classes("text-white")
        ui.add_css(ACTIVITY_CSS)
        ActivityBar(skip="compare")  # jobs started elsewhere (a builder run, an eval) show here too
        ui.label(INTRO).classes("text-body2 text-grey-9").props("data-testid=compare-intro")
        self._inputs(flows, questions, query)
        self.lines = ui.column().classes("w-full gap-0").props("data-testid=flow-lines")
        self.describe()
        self.work: PageJob[tuple[str, RunEvent]] = PageJob("compare", "compare", self._follow)
        self.work.button = self.button
        self.results = ui.column().classes("w-full")
        TunePanel(flows, questions, _COMPARER, _COMPARER_LOCK, query)

    def _inputs(self, flows: dict[str, str], questions: dict[str, str], query: dict[str, str]) -> None:
        with ui.row().classes("w-full items-end gap-3"):
            self.flows = (
                ui.select(
                    flows,
                    value=initial_flows(flows, query),
                    label="Flows (the first is the baseline)",
                    multiple=True,
                    on_change=self.describe,
                )
                .props("use-chips data-testid=flows")
                .classes("min-w-[520px]")
            )
            self.questions = ui.select(
                questions, value=pick(questions, query.get("q"), DEFAULT_QUESTIONS), label="Question set (.jsonl)"
            ).classes("min-w-[260px]")
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
            self.embedder = (
                ui.select(
                    EMBEDDERS, value="screening" if query.get("emb") == "screening" else "flows", label="embedder"
                )
                .props("data-testid=embedder")
                .classes("w-56")
                .tooltip(SCREENING_COST.format(cost=SCREENING_MEASURED))
            )
            self.limit = ui.number("rows shown", value=DEFAULT_ROWS, min=1, max=500, step=1).classes("w-28")
            self.button = ui.button("Compare", icon="compare_arrows", on_click=self.start).props("data-testid=compare")

    def selected(self) -> list[str]:
        value = self.flows.value
        return [str(v) for v in (value if isinstance(value, list) else [value] if value else [])]

    def describe(self) -> None:
        """One line per picked flow saying what it does (read from the file, nothing runs)."""
        self.lines.clear()
        with self.lines:
            for label, path in zip(flow_labels(len(self.selected())), self.selected(), strict=True):
                role = " (baseline)" if label == "A" else ""
                ui.label(f"{label}{role}: {flow_line(path)}").classes("text-xs text-grey-9").props(
                    f"data-testid=flow-line-{label.lower()}"
                )

    def _follow(self, job: Job, item: tuple[str, RunEvent]) -> None:
        label, event = item
        if self.eta is not None:
            self.eta.update(label, event)
        job.event(event, prefix=f"flow {label} · ")

    async def start(self) -> None:
        paths = self.selected()
        if len(paths) < 2 or not self.questions.value:
            notify("Pick two or more flows and a question set.", type="warning")
            return
        k = max(1, int(self.k.value or DEFAULT_K))
        relevance = relevance_mode(self.relevance.value)
        screening = self.embedder.value == "screening"
        questions_path = str(self.questions.value)
        self.eta = Eta(flow_labels(len(paths)))

        def work(cancel: threading.Event) -> tuple[Comparison, list[str]]:
            return self._compare(paths, load_questions(questions_path), k, relevance, cancel, screening)

        title = f"Compare {len(paths)} flows"
        starting = "starting… (Cancel stops at the next step and keeps the flows that finished)"
        result = await self.work.run(title, work, compare_outcome, starting)
        if result is not None:
            self.comparison = result[0]
            self.show()

    def _compare(
        self,
        paths: list[str],
        questions: Any,
        k: int,
        relevance: Relevance,
        cancel: threading.Event,
        screening: bool = False,
    ) -> tuple[Comparison, list[str]]:
        """The comparison and the labels of the flows it leaves out (a cancel keeps two or more that finished)."""
        sources = [screening_source(Path(p)) if screening else FlowSource(Path(p)) for p in paths]
        labels = flow_labels(len(paths))
        with _COMPARER_LOCK:
            try:
                on_progress = lambda label, event: self.work.events.append((label, event))  # noqa: E731
                comparison = _COMPARER.compare_many(
                    sources, questions, k, on_progress=on_progress, relevance=relevance, cancel_event=cancel
                )
            except ComparisonCancelled as cancelled:
                if len(cancelled.finished) < 2:
                    raise cancelled_early(cancelled) from None
                missing = labels[len(cancelled.finished) :]
                return build_comparison(cancelled.finished, k, relevance), missing
        return comparison, []

    def rejudge(self) -> None:
        """The shown comparison's hits judged in the newly picked mode (the next Compare uses it too)."""
        if self.comparison is None or self.work.running:
            return
        self.comparison = rejudge(self.comparison, relevance_mode(self.relevance.value))
        self.show()

    def show(self) -> None:
        comparison = self.comparison
        if comparison is None:
            return
        self.results.clear()
        with self.results:
            self._leaderboard(comparison)
            self._charts(comparison)
            self._chunk_stats(comparison)
            self._boundary_section(comparison, max(1, int(self.limit.value or DEFAULT_ROWS)))
            self._question_section(comparison)

    def _leaderboard(self, comparison: Comparison) -> None:
        m, k = comparison.a.metrics, comparison.k
        if comparison.a.name.endswith("[screening: wordllama]"):
            ui.label(SCREENING_COST.format(cost=SCREENING_MEASURED)).classes(
                "text-body2 q-pa-sm bg-amber-1 rounded-borders w-full"
            ).props("data-testid=screening-cost")
        ui.label(
            f"Leaderboard by MRR (k = {k}, {comparison.relevance} relevance, hit@chars at {comparison.chars} "
            f"characters of the prompt's context; {m.questions} questions with an answer, {m.unanswerable} "
            "without; click a column to sort)"
        ).classes("text-subtitle1")
        columns = [
            {
                "name": name,
                "label": label.format(k=k, chars=comparison.chars),
                "field": name,
                "align": "left" if name in ("flow", "misses", "versus") else "right",
                "sortable": name in SORTABLE,
            }
            for name, label in LEADERBOARD_COLUMNS
        ]
        ui.table(columns=columns, rows=leaderboard_table_rows(comparison), row_key="flow").props(
            "dense flat wrap-cells data-testid=leaderboard"
        ).classes("w-full")

    def _charts(self, comparison: Comparison) -> None:
        with ui.row().classes("w-full no-wrap gap-4 items-start"):
            with ui.card().classes("w-1/2"):
                ui.label("Retrieval metrics").classes("text-subtitle1")
                ui.echart(metrics_chart(comparison)).classes("w-full h-64").props("data-testid=metrics")
            with ui.card().classes("w-1/2"):
                ui.label("Difference from the baseline, 95% interval (paired bootstrap, 10,000 resamples)").classes(
                    "text-subtitle1"
                )
                ui.html(interval_html(comparison), sanitize=False).props("data-testid=intervals")
                if len(comparison.flows) == 2:
                    ui.label(
                        f"B vs A per question: {comparison.wins_b} wins, {comparison.wins_a} losses, "
                        f"{comparison.ties} ties"
                    ).classes("text-sm")

    def _chunk_stats(self, comparison: Comparison) -> None:
        with ui.card().classes("w-full"):
            ui.label("Chunk statistics").classes("text-subtitle1")
            columns = [{"name": "stat", "label": "", "field": "stat", "align": "left"}] + [
                {"name": ev.label.lower(), "label": ev.label, "field": ev.label.lower()} for ev in comparison.flows
            ]
            ui.table(columns=columns, rows=stats_rows(comparison), row_key="stat").props(
                "dense flat wrap-cells data-testid=stats"
            ).classes("w-full")
            for ev in comparison.flows:
                ui.label(f"{ev.label}: {ev.name} ({ev.path.name}) — {ev.description}").classes("text-xs text-grey-8")
                for warning in ev.warnings:
                    ui.label(f"{ev.label}: {warning}").classes("text-xs text-orange-9")

    def _boundary_section(self, comparison: Comparison, limit: int) -> None:
        ui.label(f"Chunk boundaries over the first {limit} source rows").classes("text-subtitle1 q-mt-md")
        ui.label(
            "Each colour is one chunk (purple: text in two overlapping chunks); a red bar marks a chunk "
            "boundary inside a record, ✂ a record no single chunk holds whole, and ◌ a record with text the "
            "embedder never reads."
        ).classes("text-xs text-grey-8")
        two = len(comparison.flows) == 2
        width = "w-1/2" if two else "min-w-[420px] flex-1"
        with ui.row().classes("w-full gap-4 items-start" + (" no-wrap" if two else "")):
            for ev in comparison.flows:
                self._boundaries(ev, limit, width)

    def _question_section(self, comparison: Comparison) -> None:
        ui.label("Per question (click a row to see every flow's top chunks)").classes("text-subtitle1 q-mt-md")
        rank_columns: list[dict[str, Any]] = [
            {"name": f"rank_{label}", "label": f"rank {ev.label}", "field": f"rank_{label}", "sortable": True}
            for ev in comparison.flows
            if (label := ev.label.lower())
        ]
        columns: list[dict[str, Any]] = [
            {"name": "id", "label": "id", "field": "id", "align": "left", "sortable": True},
            {"name": "question", "label": "question", "field": "question", "align": "left",
             "style": "white-space: normal; min-width: 220px"},
            {"name": "gold", "label": "gold", "field": "gold", "align": "left",
             "style": "white-space: normal; max-width: 160px"},
            *rank_columns,
            {"name": "better", "label": "better", "field": "better", "sortable": True},
        ]  # fmt: skip
        with ui.row().classes("w-full no-wrap gap-4 items-start"):
            table = ui.table(
                columns=columns,
                rows=question_rows(comparison),
                row_key="id",
                selection="single",
                pagination=15,
                on_select=lambda e: self.show_question(e.selection[0]["id"] if e.selection else None),
            )
            table.props("dense data-testid=questions").classes("w-1/2")
            table.on("rowClick", lambda e: self.show_question(_row_id(e.args)))
            table.add_slot("body-cell-better", BETTER_BADGE)
            self.detail = ui.column().classes("w-1/2")
            with self.detail:
                ui.label("Click a question in the table.").classes("text-grey-7")

    def _boundaries(self, ev: FlowEvaluation, limit: int, width: str) -> None:
        truncation = truncation_of(ev.embedder)
        rows = boundary_rows(ev.inputs, ev.chunks, limit, truncation)
        cut = sum(1 for r in rows if r.cut)
        unread = sum(1 for r in rows if r.unread)
        with ui.card().classes(width):
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

    def show_question(self, question_id: str | None) -> None:
        comparison = self.comparison
        if comparison is None or question_id is None or self.detail is None:
            return
        index = next((i for i, row in enumerate(comparison.rows) if row.question.id == question_id), None)
        if index is None:
            return
        question = comparison.rows[index].question
        self.detail.clear()
        with self.detail:
            ui.label(f"{question.id}: {question.question}").classes("text-bold").props("data-testid=detail-title")
            if question.fact:
                ui.label(f"fact: {question.fact}").classes("text-xs text-grey-8")
            ui.label(relevance_note(comparison.relevance)).classes("text-xs text-grey-8").props(
                "data-testid=relevance-note"
            )
            width = "w-1/2" if len(comparison.flows) == 2 else "min-w-[260px] flex-1"
            with ui.row().classes("w-full gap-2 items-start" + (" no-wrap" if len(comparison.flows) == 2 else "")):
                for ev in comparison.flows:
                    self._flow_hits(ev, index, comparison, width)

    def _flow_hits(self, ev: FlowEvaluation, index: int, comparison: Comparison, width: str) -> None:
        outcome = ev.outcomes[index]
        miss = ev.misses[index] if index < len(ev.misses) else None
        legs = ev.legs[index] if index < len(ev.legs) else {}
        with ui.column().classes(f"{width} gap-1").props(f"data-testid=hits-{ev.label.lower()}"):
            ui.label(f"{ev.label}: {ev.name}").classes("text-bold")
            ui.label(gold_summary(outcome, comparison.k)).classes("text-xs")
            if miss is not None:
                ui.label(f"missed: {MISS_LABELS[miss.kind]} — {miss.detail}").classes("text-xs text-red-8").props(
                    f"data-testid=miss-{ev.label.lower()}"
                )
            if legs:
                ui.label("first relevant hit per leg: " + ", ".join(f"{n} rank {r}" for n, r in legs.items())).classes(
                    "text-xs"
                )
            for hit, relevant in zip(outcome.hits, outcome.relevant, strict=True):
                colour = "border-green-600" if relevant else "border-slate-300"
                with ui.card().classes(f"w-full q-pa-xs border-l-4 {colour}"):
                    records = ", ".join(sorted(chunk_records(hit.document))) or "no record id"
                    mark = f" ✓ relevant ({comparison.relevance})" if relevant else ""
                    hit_legs = leg_ranks(hit)
                    leg_text = (" · " + ", ".join(f"{n} {r}" for n, r in hit_legs.items())) if hit_legs else ""
                    ui.label(f"#{hit.rank} · score {hit.score:.3f} · {records}{mark}{leg_text}").classes("text-xs")
                    ui.html(f'<div class="fb-hit-text">{html.escape(hit.document.text)}</div>', sanitize=False)


def _row_id(args: Any) -> str | None:
    """The question id of a Quasar ``rowClick`` event (``[event, row, index]``)."""
    if isinstance(args, list | tuple):
        for item in args:
            if isinstance(item, dict) and "id" in item and "question" in item:
                return str(item["id"])
    return None


def initial_flows(options: dict[str, str], query: dict[str, str]) -> list[str]:
    """The flows to preselect: ``flows=a.json,b.json,...``, else ``a``/``b``, else the course's three flows."""
    names = [n for n in (query.get("flows") or "").split(",") if n]
    if not names and (query.get("a") or query.get("b")):
        names = [query.get("a") or NAIVE_FLOW, query.get("b") or ROW_LABELLED_FLOW]
    names = names or list(DEFAULT_FLOWS)
    picked = [path for name in names if (path := pick_exact(options, name)) is not None]
    return picked or list(options)[:2]


def pick_exact(options: dict[str, str], name: str) -> str | None:
    return next((path for path in options if Path(path).name == name), None)


def register(config: AppConfig) -> None:
    """Define the ``/compare`` page (called by the builder's ``register_pages()`` with its settings)."""
    _COMPARER.executor.resolver = page_resolver(config)

    def compare_page(a: str | None = None, b: str | None = None, q: str | None = None, k: str | None = None,
                     rel: str | None = None, run: str | None = None, flows: str | None = None,
                     emb: str | None = None, tune: str | None = None, vary: str | None = None) -> None:  # fmt: skip
        ui.add_css(WIDGET_CSS + _CSS)
        given = {"a": a, "b": b, "q": q, "k": k, "rel": rel, "run": run, "flows": flows, "emb": emb, "tune": tune,
                 "vary": vary}  # fmt: skip
        ComparePage({key: value for key, value in given.items() if value}, config.workspace)

    ui.page("/compare", title="Flowbuilder · Compare")(compare_page)
