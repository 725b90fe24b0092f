"""The Tune panel on /compare: sweep a flow's settings on a tuning split, judge the winner on held-out questions.

The same work as ``flowbuilder tune`` (:mod:`flowbuilder.evaluation.tune`): the panel shows the variants'
scores on the tuning split, the winner against the untuned flow on the held-out split with the paired
verdict, and a plain sentence saying whether the gain held; the winner can be saved as a new flow.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from nicegui import run, ui

from flowbuilder.errors import FlowbuilderError
from flowbuilder.evaluation.compare import FlowComparer, read_flow
from flowbuilder.evaluation.metrics import Metrics, default_relevance
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.evaluation.tune import TUNE_METRICS, TuneResult, save_winner, tune
from flowbuilder.trust.secrets import redact
from flowbuilder.ui.widgets import notify

COLUMNS = ("variant", "hit@1", "hit@k", "hit@chars", "MRR")


def metric_cells(m: Metrics) -> dict[str, str]:
    return {
        "hit@1": f"{m.hit_at_1:.3f}",
        "hit@k": f"{m.hit_at_k:.3f}",
        "hit@chars": f"{m.hit_at_chars:.3f}",
        "MRR": f"{m.mrr:.3f}",
    }


def tuning_rows(result: TuneResult) -> list[dict[str, str]]:
    """The untuned flow then every variant on the tuning split, best first; the winner marked."""
    rows = [{"variant": "untuned (as saved)", **metric_cells(result.base_tuning.metrics)}]
    for variant in sorted(result.variants, key=lambda v: -result.score(v.tuning)):
        mark = " ← winner" if variant is result.winner else ""
        rows.append({"variant": variant.label + mark, **metric_cells(variant.tuning.metrics)})
    return rows


def held_out_rows(result: TuneResult) -> list[dict[str, str]]:
    return [
        {"variant": "untuned (as saved)", **metric_cells(result.base_held.metrics)},
        {"variant": f"winner: {result.winner.label}", **metric_cells(result.winner_held.metrics)},
    ]


def _named(options: dict[str, str], name: str | None) -> str | None:
    """The option (a path) whose file name is ``name``."""
    return next((path for path in options if name and Path(path).name == name), None)


class TunePanel:
    """Inputs, a Tune button, the two tables, the verdict and "save the winner"."""

    def __init__(
        self,
        flows: dict[str, str],
        questions: dict[str, str],
        comparer: FlowComparer,
        lock: threading.Lock,
        query: dict[str, str] | None = None,
    ) -> None:
        """``query``: ``tune`` (a flow file name to preselect; opens the panel), ``q`` (the question set),
        ``vary`` (lines joined by ``;``). Nothing starts until the Tune button is pressed (a page load never
        starts work)."""
        query = query or {}
        wanted = query.get("tune")
        self.comparer, self.lock = comparer, lock
        self.result: TuneResult | None = None
        self.flow_path: Path | None = None
        self.questions_name = ""
        title = "Tune a flow: choose settings on one split of the questions, judge them on the other"
        with ui.expansion(title, value=bool(wanted)).classes("w-full").props("data-testid=tune-panel"):
            with ui.row().classes("w-full items-end gap-3"):
                self.flow = (
                    ui.select(flows, label="Flow to tune", value=_named(flows, wanted))
                    .classes("min-w-[320px]")
                    .props("data-testid=tune-flow")
                )
                self.questions = ui.select(
                    questions, label="Question set", value=_named(questions, query.get("q"))
                ).classes("min-w-[240px]")
                self.split = ui.number("tuning share", value=0.5, min=0.1, max=0.9, step=0.1).classes("w-28")
                self.seed = ui.number("seed", value=0, step=1).classes("w-20")
                self.k = ui.number("k", value=5, min=1, max=50, step=1).classes("w-16")
                self.metric = ui.select(list(TUNE_METRICS), value="mrr", label="metric").classes("w-28")
            self.vary = (
                ui.textarea(
                    "Settings to try, one per line: NODE.FIELD=V1,V2",
                    placeholder="fusion.weights=[1,0.5],[1,1]\nretriever.k=5,10",
                    value="\n".join(part.strip() for part in query.get("vary", "").split(";") if part.strip()),
                )
                .classes("w-full")
                .props("data-testid=tune-vary rows=3")
            )
            self.button = ui.button("Tune", icon="tune", on_click=self.start).props("data-testid=tune")
            self.status = ui.label("").classes("text-xs text-grey-8").props("data-testid=tune-status")
            self.output = ui.column().classes("w-full")

    async def start(self) -> None:
        varies = [line.strip() for line in str(self.vary.value or "").splitlines() if line.strip()]
        if not self.flow.value or not self.questions.value or not varies:
            notify("Pick a flow, a question set and at least one NODE.FIELD=V1,V2 line.", type="warning")
            return
        self.button.disable()
        self.status.set_text("Tuning… (every variant is scored on the tuning split, then the winner on held-out)")
        path = Path(str(self.flow.value))
        try:
            questions = load_questions(str(self.questions.value))
            self.result = await run.io_bound(self._tune, path, questions, varies)
        except FlowbuilderError as exc:
            self.status.set_text(f"Failed: {redact(str(exc))}")
            return
        finally:
            self.button.enable()
        self.flow_path, self.questions_name = path, Path(str(self.questions.value)).name
        self.status.set_text("Done.")
        self.show()

    def _tune(self, path: Path, questions: Any, varies: list[str]) -> TuneResult:
        with self.lock:
            return tune(
                path,
                questions,
                varies,
                k=max(1, int(self.k.value or 5)),
                metric=str(self.metric.value),
                share=float(self.split.value or 0.5),
                seed=int(self.seed.value or 0),
                relevance=default_relevance(questions),
                comparer=self.comparer,
            )

    def show(self) -> None:
        result = self.result
        if result is None:
            return
        columns = [
            {"name": c, "label": c.replace("hit@k", f"hit@{result.k}").replace("hit@chars", f"hit@{result.chars}ch"),
             "field": c, "align": "left" if c == "variant" else "right"}
            for c in COLUMNS
        ]  # fmt: skip
        split = result.split
        self.output.clear()
        with self.output:
            ui.label(
                f"By {result.metric_label}; {len(split.tuning)} questions to tune on, {len(split.held_out)} held out "
                f"(seed {split.seed}); k = {result.k}, {result.relevance} relevance, hit@chars at {result.chars}"
            ).classes("text-subtitle2")
            ui.label("On the tuning split").classes("text-caption")
            ui.table(columns=columns, rows=tuning_rows(result), row_key="variant").props(
                "dense flat data-testid=tune-tuning"
            )
            ui.label("On the held-out split (the winner was not chosen on these questions)").classes("text-caption")
            ui.table(columns=columns, rows=held_out_rows(result), row_key="variant").props(
                "dense flat data-testid=tune-held-out"
            )
            ui.label(f"winner vs untuned: {result.held_verdict}").classes("text-xs").props("data-testid=tune-verdict")
            holds = result.held_gain > 0 and result.significant
            ui.label(result.conclusion).classes("text-body2 " + ("text-positive" if holds else "text-negative")).props(
                "data-testid=tune-conclusion"
            )
            with ui.row().classes("items-end gap-2"):
                default = self.flow_path.with_name(self.flow_path.stem + "_tuned.json") if self.flow_path else ""
                self.target = ui.input("Save the winner as", value=str(default)).classes("min-w-[420px]")
                ui.button("Save winner", icon="save", on_click=self.save).props("flat data-testid=tune-save")

    def save(self) -> None:
        if self.result is None or self.flow_path is None:
            return
        target = Path(str(self.target.value or "").strip())
        if not target.name.endswith(".json") or target.resolve() == self.flow_path.resolve():
            notify("Give a new .json file name (not the flow being tuned).", type="warning")
            return
        try:
            save_winner(self.result, read_flow(self.flow_path), self.flow_path, target, self.questions_name)
        except (FlowbuilderError, OSError) as exc:
            notify(f"Cannot save: {redact(str(exc))}", type="negative")
            return
        notify(f"Saved the winner to {target}", type="positive")
