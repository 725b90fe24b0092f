"""The ``/eval`` page: a flow's answers scored question by question.

Pick a flow and a question set and Run: ``flowbuilder eval``'s logic (:func:`evaluate_answers`) runs in a
background thread with a progress bar and Cancel (which keeps and shows the questions that finished). Or load a saved
``flowbuilder eval --json`` output (the offline path for flows whose model is not reachable here). Both
are shown from the same JSON: retrieval and answer metrics (``n/a`` when no question is behind a
metric), then one row per question (verdict, rank of the first relevant chunk); clicking a row shows
its retrieved chunks, the exact prompt, the answer, every check with its reason and the judge's grade.

Query parameters preselect the inputs by file name: ``/eval?flow=rag.json&q=dev.jsonl&k=5``. Opening the page
never starts work (a link on another site could): the button does; ``run=1`` is ignored.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from nicegui import events, ui

from flowbuilder.data import Document, Hit
from flowbuilder.errors import FlowbuilderError, FlowFileError
from flowbuilder.evaluation.answers import AnswerResult, evaluate_answers
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.formats.native import load_flow
from flowbuilder.trust.secrets import redact
from flowbuilder.ui.compare_page import (
    DEFAULT_QUESTIONS,
    ROW_LABELLED_FLOW,
    flow_options,
    page_resolver,
    pick,
    question_options,
)
from flowbuilder.ui.jobs import ACTIVITY_CSS, ActivityBar, Job, PageJob
from flowbuilder.ui.outputs import hits_view
from flowbuilder.ui.session import AppConfig
from flowbuilder.ui.widgets import WIDGET_CSS, message_box, notify, upload_button

PASSING = {"correct", "refused"}
VERDICT_COLOURS = {"correct": "positive", "refused": "positive", "unchecked": "grey", "error": "negative"}
"""Badge colours; every other verdict (wrong, uncited, invented...) is a failure shown in orange."""
_RUN_LOCK = threading.Lock()
"""One evaluation at a time: two tabs ingesting into the same on-disk collection at once would race."""


# -- pure helpers over the ``eval --json`` data -----------------------------------------------------


def read_eval_json(content: bytes, name: str) -> dict[str, Any]:
    """A saved ``flowbuilder eval --json`` output; anything else is a one-line error naming the file."""
    try:
        data = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FlowFileError(name, f"not JSON ({exc}); save the output of `flowbuilder eval ... --json`") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("metrics"), dict)
        or not isinstance(data.get("results"), list)
    ):
        raise FlowFileError(name, "not an eval output (no 'metrics' and 'results'); use `flowbuilder eval ... --json`")
    return data


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.0%}"


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{float(value):.{digits}f}"


def metric_rows(data: dict[str, Any]) -> list[dict[str, str]]:
    """One row per metric: name, value (``n/a`` when no question is behind it) and what it is measured over."""
    m = data["metrics"]
    r = m.get("retrieval") or {}
    k = r.get("k", data.get("k"))
    measured = bool(r.get("questions"))
    over_retrieval = f"{r.get('questions', 0)} answerable question(s) with chunks"
    if data.get("relevance"):
        over_retrieval += f", {data['relevance']} relevance, k = {k}"
    chars = r.get("chars", data.get("chars"))
    answered = m.get("answerable", 0) - sum(
        1 for q in data["results"] if q.get("answerable") and q["verdict"] == "error"
    )
    unanswered = m.get("unanswerable", 0) - sum(
        1 for q in data["results"] if not q.get("answerable") and q["verdict"] == "error"
    )
    rows = [
        ("retrieval hit@1", _num(r.get("hit@1")) if measured else "n/a", over_retrieval),
        (f"retrieval hit@{k}", _num(r.get("hit@k")) if measured else "n/a", over_retrieval),
        (f"retrieval hit@{chars}ch (context budget)", _num(r.get("hit@chars")) if measured else "n/a", over_retrieval),
        ("retrieval MRR", _num(r.get("mrr")) if measured else "n/a", over_retrieval),
        ("answer accuracy", _pct(m.get("accuracy")), f"{answered} answerable question(s) that ran"),
        ("fact in answer", _pct(m.get("fact_rate")), "answerable questions with a fact"),
        ("citation accuracy", _pct(m.get("citation_accuracy")), f"{answered} answerable question(s) that ran"),
        ("refusal rate", _pct(m.get("refusal_rate")), f"{unanswered} question(s) without an answer"),
        ("invention rate", _pct(m.get("invention_rate")), f"{unanswered} question(s) without an answer"),
        (
            "answered correctly when the fact was retrieved",
            _pct(m.get("correct_when_retrieved")),
            f"{m.get('retrieved_fact', 0)} question(s) whose chunks held the fact",
        ),
        (
            "wrong despite retrieval",
            str(m.get("wrong_despite_retrieval", 0)),
            f"{m.get('retrieved_fact', 0)} question(s) whose chunks held the fact",
        ),
    ]
    judge = m.get("judge") or {}
    if judge.get("judged") or (data.get("roles") or {}).get("judge"):
        over = f"{judge.get('judged', 0)} graded answer(s)"
        rows.append(("judge faithfulness", _num(judge.get("faithfulness"), 2), over))
        rows.append(("judge correctness", _num(judge.get("correctness"), 2), over))
    return [{"metric": name, "value": value, "over": over} for name, value, over in rows]


def rank_text(result: dict[str, Any]) -> str:
    """Where retrieval put the first relevant chunk: a rank, "not retrieved", or "-" (nothing to find)."""
    retrieval = result.get("retrieval")
    if not retrieval:
        return "-"
    rank = retrieval.get("first_rank")
    return str(rank) if rank else "not retrieved"


def question_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": str(r["id"]),
            "question": r.get("question", ""),
            "verdict": r["verdict"],
            "rank": rank_text(r),
            "passed": r["verdict"] in PASSING,
        }
        for r in data["results"]
    ]


def result_hits(result: dict[str, Any]) -> list[Hit]:
    """The numbered chunks of one question's result as hits (rank = the number the prompt gave it)."""
    hits = []
    for chunk in result.get("chunks") or []:
        metadata: dict[str, Any] = {"record_ids": list(chunk.get("records") or [])}
        if chunk.get("source"):
            metadata["source"] = chunk["source"]
        document = Document(text=str(chunk.get("text", "")), metadata=metadata)
        hits.append(Hit(document=document, score=float(chunk.get("score") or 0.0), rank=int(chunk["n"])))
    return hits


def chunk_marks(result: dict[str, Any]) -> str:
    """Which numbered chunks the answer cited and which hold the fact, in words."""
    chunks = result.get("chunks") or []
    cited = [str(c["n"]) for c in chunks if c.get("cited")]
    facts = [str(c["n"]) for c in chunks if c.get("holds_fact")]
    parts = [f"cited: {', '.join(cited) or 'none'}"]
    if result.get("fact"):
        parts.append(f"holding the fact: {', '.join(facts) or 'none'}")
    return " · ".join(parts)


# -- the page ------------------------------------------------------------------------------------


INTRO = (
    "Scores a flow's answers question by question: pick a flow and a question set (a .jsonl file, one question a "
    "line with the record ids and the fact its answer must hold; data/questions has some), then Run."
)
QUESTION_COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "label": "id", "field": "id", "align": "left", "sortable": True},
    {"name": "question", "label": "question", "field": "question", "align": "left",
     "style": "white-space: normal; min-width: 180px"},
    {"name": "verdict", "label": "verdict", "field": "verdict", "sortable": True},
    {"name": "rank", "label": "hit rank", "field": "rank", "sortable": True},
]  # fmt: skip
VERDICT_BADGE = """<q-td :props="props"><q-badge :color="props.row.passed ? 'positive' :
    (props.value == 'unchecked' ? 'grey' : (props.value == 'error' ? 'negative' : 'orange-8'))"
    :label="props.value" /></q-td>"""


def eval_outcome(data: dict[str, Any]) -> str:
    """The job's last line: done, or how much of a cancelled evaluation finished."""
    if not data.get("cancelled"):
        return "Done."
    ran, planned = len(data["results"]), data.get("planned", len(data["results"]))
    if not ran:
        return "Cancelled. No question finished."
    return f"Cancelled. {ran} of {planned} questions finished: their answers are shown."


class EvalPage:
    """The /eval page: run a flow over a question set as a cancellable job and show each question's answer,
    verdict and the chunks it rested on."""

    def __init__(self, query: dict[str, str], config: AppConfig) -> None:
        self.config = config
        self.data: dict[str, Any] | None = None
        self.detail: Any = None
        self.table: ui.table | None = None
        with ui.header().classes("items-center bg-slate-800 q-py-xs"):
            ui.label("Flowbuilder · Evaluate answers").classes("text-lg text-white")
            ui.space()
            ui.link("Back to the builder", "/").classes("text-white")
        ui.add_css(ACTIVITY_CSS)
        ActivityBar(skip="eval")  # jobs started elsewhere (a builder run, a compare) show here too
        ui.label(INTRO).classes("text-body2 text-grey-9").props("data-testid=eval-intro")
        self._inputs(query)
        self.work: PageJob[tuple[int, int, str]] = PageJob("eval", "eval", _follow_question)
        self.work.button = self.button
        self.results = ui.column().classes("w-full")

    def _inputs(self, query: dict[str, str]) -> None:
        flows, questions = flow_options(self.config.workspace), question_options(self.config.workspace)
        with ui.row().classes("w-full items-end gap-3"):
            # The page opens on the demo flow and the question set written for it.
            self.flow = (
                ui.select(flows, value=pick(flows, query.get("flow"), ROW_LABELLED_FLOW), label="Flow")
                .props("data-testid=eval-flow")
                .classes("min-w-[360px]")
            )
            self.questions = ui.select(
                questions, value=pick(questions, query.get("q"), DEFAULT_QUESTIONS), label="Question set (.jsonl)"
            ).classes("min-w-[260px]")
            self.k = ui.number("k (empty: all chunks)", value=_int(query.get("k")), min=1).classes("w-40")
            self.button = ui.button("Run", icon="play_arrow", on_click=self.start).props("data-testid=eval-run")
            ui.label("or").classes("text-grey-7 q-pb-sm")
            upload_button(
                "Open a saved result (eval --json)",
                self.on_upload,
                ".json,application/json",
                "fb-eval-upload",
                50_000_000,
            ).props("data-testid=eval-upload").tooltip("The JSON that `flowbuilder eval ... --json` printed")

    # -- running ---------------------------------------------------------------------------------

    async def start(self) -> None:
        if not self.flow.value or not self.questions.value:
            notify("Pick a flow and a question set.", type="warning")
            return
        flow, questions = str(self.flow.value), str(self.questions.value)
        k = int(self.k.value) if self.k.value else None
        title = f"Evaluate {Path(flow).name}"
        starting = "starting… (Cancel keeps the questions that finished)"
        data = await self.work.run(
            title, lambda cancel: self._evaluate(flow, questions, k, cancel), eval_outcome, starting
        )
        if data is not None and data["results"]:  # a cancelled run shows the questions that finished
            self.data = data
            self.show(Path(flow).name)

    def _evaluate(self, flow_path: str, questions_path: str, k: int | None, cancel: threading.Event) -> dict[str, Any]:
        flow = load_flow(flow_path)
        questions = load_questions(questions_path)
        total = len(questions)
        done = [0]
        events = self.work.events

        def on_question(index: int, count: int, result: AnswerResult) -> None:
            done[0] = index
            events.append((index, count, f"{result.question.id}: {result.verdict}"))

        def on_event(event: RunEvent) -> None:
            if event.kind == "node_started":
                events.append((done[0], total, f"running {event.node_id}"))

        with _RUN_LOCK:
            evaluation = evaluate_answers(
                flow,
                questions,
                base_dir=Path(flow_path).resolve().parent,
                flow_file=Path(flow_path),
                executor=Executor(resolver=page_resolver(self.config)),
                k=k,
                on_question=on_question,
                on_event=on_event,
                cancel_event=cancel,
            )
        # Through JSON, so a run and a loaded file are shown by exactly the same code.
        data: dict[str, Any] = json.loads(json.dumps(evaluation.to_dict(), default=str))
        return data

    async def on_upload(self, e: events.UploadEventArguments) -> None:
        content = await e.file.read()
        try:
            data = read_eval_json(content, e.file.name)
        except FlowbuilderError as exc:
            notify(redact(str(exc)), type="negative", multi_line=True)
            return
        self.data = data
        self.show(e.file.name)

    # -- results ---------------------------------------------------------------------------------

    def show(self, origin: str) -> None:
        data = self.data
        if data is None:
            return
        self.results.clear()
        with self.results:
            self._summary(data, origin)
            with ui.row().classes("w-full no-wrap gap-4 items-start"):
                with ui.column().classes("w-1/3 gap-1"):
                    self._metrics(data)
                    self._questions(data)
                self.detail = ui.column().classes("w-2/3 gap-1").props("data-testid=eval-detail")
                with self.detail:
                    ui.label("Click a question in the table.").classes("text-grey-7")

    def _summary(self, data: dict[str, Any], origin: str) -> None:
        """What was evaluated, how, and what to keep in mind reading the scores."""
        m, roles = data["metrics"], data.get("roles") or {}
        ui.label(
            f"{data.get('flow', '?')} ({origin}): {m.get('questions', 0)} questions, {m.get('answerable', 0)} "
            f"answerable, {m.get('unanswerable', 0)} without an answer"
        ).classes("text-subtitle1").props("data-testid=eval-title")
        ui.label(
            f"answer from '{roles.get('answer')}', prompt '{roles.get('prompt') or '-'}', chunks from "
            f"'{roles.get('hits') or '-'}'" + (f", judge '{roles['judge']}'" if roles.get("judge") else "")
        ).classes("text-xs text-grey-8")
        if data.get("cancelled"):
            planned = data.get("planned", len(data["results"]))
            with ui.element("div").props("data-testid=eval-cancelled").classes("w-full"):
                message_box(
                    "info",
                    f"Cancelled after {len(data['results'])} of {planned} questions",
                    "The metrics and the rows below are over the questions that finished.",
                )
        if m.get("errors"):
            message_box(
                "error",
                f"{m['errors']} question(s) did not run to an answer",
                "Answer metrics leave them out; their rows say why.",
            )
        degraded = [str(w) for w in data.get("warnings") or []]
        if degraded:  # a score measured through a fallback must say so where the score is read
            with ui.element("div").props("data-testid=eval-degraded").classes("w-full"):
                message_box(
                    "warning",
                    f"{len(degraded)} stage(s) ran degraded: the scores measure the fallback",
                    "\n".join(degraded),
                )

    def _metrics(self, data: dict[str, Any]) -> None:
        ui.label("Metrics").classes("text-subtitle2")
        ui.table(
            columns=[
                {"name": "metric", "label": "metric", "field": "metric", "align": "left"},
                {"name": "value", "label": "value", "field": "value", "align": "right"},
                {"name": "over", "label": "over", "field": "over", "align": "left"},
            ],
            rows=metric_rows(data),
            row_key="metric",
        ).props("dense flat wrap-cells data-testid=eval-metrics").classes("w-full")
        verdicts = data["metrics"].get("verdicts") or {}
        ui.label("Verdicts: " + (", ".join(f"{v} {n}" for v, n in verdicts.items()) or "none")).classes("text-xs")

    def _questions(self, data: dict[str, Any]) -> None:
        ui.label("Per question (click a row for its chunks, prompt and answer)").classes("text-subtitle2 q-mt-sm")
        self.table = (
            ui.table(
                columns=QUESTION_COLUMNS,
                rows=question_rows(data),
                row_key="id",
                pagination=25,
                selection="single",
                on_select=lambda e: self.show_question(e.selection[0]["id"] if e.selection else None),
            )
            .props("dense data-testid=eval-questions")
            .classes("w-full cursor-pointer")
        )
        self.table.add_slot("body-cell-verdict", VERDICT_BADGE)
        self.table.on("rowClick", lambda e: self.show_question(_row_id(e.args)))

    def show_question(self, question_id: str | None) -> None:
        if self.data is None or question_id is None or self.detail is None:
            return
        result = next((r for r in self.data["results"] if str(r["id"]) == question_id), None)
        if result is None:
            return
        if self.table is not None and [r.get("id") for r in self.table.selected] != [question_id]:
            self.table.selected = [row for row in self.table.rows if row["id"] == question_id]
            self.table.update()
        self.detail.clear()
        with self.detail:
            self._question_head(result)
            self._question_answer(result)
            hits = result_hits(result)
            ui.label(f"Retrieved chunks ({len(hits)}) · {chunk_marks(result)}").classes("fb-out-heading")
            with ui.column().classes("w-full gap-1").props("data-testid=eval-chunks"):
                if hits:
                    hits_view(hits)
                else:
                    ui.label("no numbered chunks").classes("text-xs text-grey-7")
            ui.label("Prompt sent to the model").classes("fb-out-heading")
            ui.label(result.get("prompt") or "(no prompt found)").classes("fb-pre w-full").props(
                "data-testid=eval-prompt"
            )

    def _question_head(self, result: dict[str, Any]) -> None:
        ui.label(f"{result['id']}: {result.get('question', '')}").classes("text-bold").props(
            "data-testid=eval-detail-title"
        )
        expected = result.get("fact") or ("(a refusal)" if not result.get("answerable") else "(no fact given)")
        gold = ", ".join(result.get("gold") or []) or "-"
        ui.label(f"expected: {expected} · gold records: {gold} · first relevant chunk: {rank_text(result)}").classes(
            "text-xs text-grey-8"
        )
        with ui.row().classes("items-center gap-2"):
            ui.label("verdict").classes("text-xs")
            colour = VERDICT_COLOURS.get(result["verdict"], "orange-8")
            ui.badge(result["verdict"], color=colour).props("data-testid=eval-verdict")
        if result.get("error"):
            message_box("error", "The run failed", redact(str(result["error"])))

    def _question_answer(self, result: dict[str, Any]) -> None:
        ui.label("Answer").classes("fb-out-heading")
        ui.label(result.get("answer") or "(no answer)").classes("fb-prose w-full").props("data-testid=eval-answer")
        checks = result.get("checks") or []
        if checks:
            ui.label("Checks").classes("fb-out-heading")
            with ui.column().classes("gap-0").props("data-testid=eval-checks"):
                for check in checks:
                    mark = "✓" if check.get("passed") else "✗"
                    colour = "text-green-8" if check.get("passed") else "text-red-8"
                    ui.label(f"{mark} {check.get('name')}: {check.get('detail')}").classes(f"text-sm {colour}")
        judge = result.get("judge")
        if judge:
            ui.label("Judge").classes("fb-out-heading")
            text = judge.get("error") or (
                f"faithfulness {_num(judge.get('faithfulness'), 2)} · correctness "
                f"{_num(judge.get('correctness'), 2)}: {judge.get('reason', '')}"
            )
            ui.label(text).classes("text-sm").props("data-testid=eval-judge")


def _follow_question(job: Job, item: tuple[int, int, str]) -> None:
    """The job's stage from the worker's (done, total, what) items."""
    done, total, what = item
    job.progress(f"question {min(done + 1, total)}/{total} · {what}", done, total, key="questions")


def _row_id(args: Any) -> str | None:
    """The question id of a Quasar ``rowClick`` event (``[event, row, index]``)."""
    if isinstance(args, list | tuple):
        for item in args:
            if isinstance(item, dict) and "id" in item and "verdict" in item:
                return str(item["id"])
    return None


def register(config: AppConfig) -> None:
    """Define the ``/eval`` page (called by the builder's ``register_pages()`` with its settings)."""

    def eval_page(flow: str | None = None, q: str | None = None, k: str | None = None, run: str | None = None) -> None:
        ui.add_css(WIDGET_CSS)
        given = {"flow": flow, "q": q, "k": k, "run": run}
        EvalPage({key: value for key, value in given.items() if value}, config)

    ui.page("/eval", title="Flowbuilder · Evaluate answers")(eval_page)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None
