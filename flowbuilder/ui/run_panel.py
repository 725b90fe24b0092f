"""Running the flow from the page: a background thread, live badges, progress and cancel.

The executor's events are appended to a deque by the worker thread and drained by a ``ui.timer``
every 100 ms, coalesced into one ``patchNodes`` call per tick: a 5,000-chunk embedding run (already
throttled to 10 progress events/s per node in core) costs the page at most ten small updates a second.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nicegui import run, ui

from flowbuilder.errors import FlowbuilderError, FlowValidationError, NodeError, ValidationIssue
from flowbuilder.executor import GENERIC_INPUT, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.standin import StandIn
from flowbuilder.trust.places import expand_user
from flowbuilder.trust.secrets import redact
from flowbuilder.ui.accounts import apply_account_keys
from flowbuilder.ui.canvas import FlowCanvas
from flowbuilder.ui.jobs import Job, start_job
from flowbuilder.ui.session import EditorSession
from flowbuilder.ui.widgets import notify, ui_words

DRAIN_INTERVAL_S = 0.1
UPSTREAM_LEAD = re.compile(r"^upstream node (?=')")


def card_name(session: EditorSession, node_id: str) -> str:
    """What the card shows for a node (its name), for messages; the id when the node is gone."""
    spec = session.state.flow.find_node(node_id)
    return spec.label if spec is not None else node_id


def fold_events(
    events: list[RunEvent], name: Callable[[str], str] = str
) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    """Coalesce executor events into per-node data patches, token texts and log lines (which call a
    node by ``name(node_id)``, the card's name on the page)."""
    patches: dict[str, dict[str, Any]] = {}
    tokens: list[str] = []
    lines: list[str] = []
    for event in events:
        node = event.node_id
        shown = name(node) if node else ""
        patch = patches.setdefault(node, {}) if node else {}
        if event.kind == "token":
            tokens.append(str(event.data.get("text", "")))
            continue
        update, line = _node_update(event, shown)
        patch.update(update)
        line = line if line is not None else _run_line(event, shown, name)
        if line is not None:
            lines.append(line)
    patches.pop("", None)
    return {k: v for k, v in patches.items() if v}, tokens, lines


def _node_update(event: RunEvent, shown: str) -> tuple[dict[str, Any], str | None]:
    """What a node's event changes on its card, and its log line (None for progress, which only moves the
    card's bar, and for events that are not a node's)."""
    data, kind = event.data, event.kind
    if kind == "node_started":
        return {"status": "running", "summary": "running…", "error": None, "duration": None, "progress": None}, (
            f"▶ {shown}"
        )
    if kind == "progress":
        update: dict[str, Any] = {"progress": {"done": data.get("done", 0), "total": data.get("total", 0)}}
        if data.get("message"):
            update["summary"] = str(data["message"])
        return update, None
    done = {"duration": data.get("duration"), "progress": None}
    summary = data.get("summary", "")
    if kind == "node_finished" and (data.get("status") == "warning" or data.get("warning")):
        # succeeded but suspicious (an empty collection...): an amber badge that says why
        warning = str(data.get("warning") or "check this node's output")
        return {"status": "warning", "summary": warning, "warning": warning, **done}, (
            f"⚠ {shown}: {summary}; warning: {warning} ({data.get('duration', 0):.2f} s)"
        )
    if kind == "node_finished":
        return {"status": "ok", "summary": summary, **done}, f"✓ {shown}: {summary} ({data.get('duration', 0):.2f} s)"
    if kind == "node_cached" and data.get("warning"):
        warning = str(data["warning"])
        return {"status": "warning", "summary": warning, "warning": warning, "duration": 0.0, "progress": None}, (
            f"⚠ {shown}: cached {summary}; warning: {warning}"
        )
    if kind == "node_cached":
        return {"status": "cached", "summary": f"cached · {summary}", "duration": 0.0, "progress": None}, (
            f"⚡ {shown}: cached {summary}"
        )
    if kind == "node_failed":
        error = ui_words(str(data.get("error") or ""))
        return {"status": "failed", "error": error, **done}, f"✕ {shown}: {error}"
    if kind == "node_skipped":
        reason = str(data.get("reason", ""))
        # "upstream node 'llm' failed" -> "'llm' failed": the badge is narrow, the log keeps the whole reason
        short = UPSTREAM_LEAD.sub("", reason)
        status = "disabled" if reason == "disabled" else "skipped"
        return {"status": status, "summary": f"skipped: {short}"}, f"– {shown}: skipped ({reason})"
    if kind == "node_cancelled":
        return {"status": "cancelled", "summary": "cancelled", **done}, f"■ {shown}: cancelled"
    return {}, None


def _run_line(event: RunEvent, shown: str, name: Callable[[str], str]) -> str | None:
    """The log line of an event that is not a node's outcome: a node's log message, or the run's start and end."""
    data = event.data
    if event.kind == "log":
        return f"  {shown}: {data.get('message', '')}"
    if event.kind == "run_started":
        return f"run: {' → '.join(name(n) for n in data.get('order', []))}"
    if event.kind == "run_finished":
        state = "cancelled" if data.get("cancelled") else ("ok" if data.get("ok") else f"failed {data.get('failed')}")
        return f"run finished: {state}"
    return None


class RunController:
    """One per page: runs the session's flow in a worker thread and keeps the canvas live."""

    def __init__(
        self, session: EditorSession, canvas: FlowCanvas, show_issues: Callable[[list[ValidationIssue]], None]
    ) -> None:
        self.session = session
        self.canvas = canvas
        self.show_issues = show_issues
        self._events: deque[RunEvent] = deque()
        self.cancel_event: threading.Event | None = None
        self.running = False
        self.last: RunResult | None = None
        self.token_listeners: list[Callable[[str], None]] = []
        self.stage_listeners: list[Callable[[str], None]] = []  # the job's stage while it runs (the chat)
        self.job: Job | None = None
        self.stood_in: str | None = None
        """Set by a run that searched by keyword while the background ingest fills the store: what to tell."""
        self.finished_listeners: list[Callable[[RunResult | None], None]] = []
        # Tall enough to read a whole run; lines wrap so a long question or error is not cut at the panel edge.
        self.log = (
            ui.log(max_lines=400)
            .classes("w-full text-xs fb-run-log")
            .style("height: calc(100vh - 190px); min-height: 260px")
        )
        ui.timer(DRAIN_INTERVAL_S, self.drain)

    def drain(self) -> None:
        if not self._events:
            return
        batch: list[RunEvent] = []
        while self._events:
            batch.append(self._events.popleft())
        patches, tokens, lines = fold_events(batch, self.name)
        if self.job is not None and self.job.running:
            for event in batch:
                self.job.event(event, self.name)
            for listener in self.stage_listeners:
                listener(self.job.stage)
        self.canvas.patch(patches)
        if tokens:
            text = "".join(tokens)
            for listener in self.token_listeners:
                listener(text)
        for line in lines:
            self.log.push(line)

    def name(self, node_id: str) -> str:
        return card_name(self.session, node_id)

    async def start(self, to: str | None = None, text: str | None = None, file_input: bool = False) -> RunResult | None:
        if self.running:
            notify("A run is already going; cancel it first.", type="warning")
            return None
        apply_account_keys(self.session)
        flow = self.session.state.flow.model_copy(deep=True)
        if not flow.nodes:
            notify("The flow is empty: add nodes from the palette first.", type="warning")
            return None
        inputs = self._inputs(flow, text, file_input)
        stand_in = self._stand_in(flow, text, to)
        self.stood_in = None
        self.canvas.clear_status(keep=stand_in.quiet if stand_in else ())
        self.cancel_event = threading.Event()
        self.running = True
        started = time.perf_counter()
        target = f" to {self.name(to)}" if to else ""
        job = self.job = start_job("run", f"Run {flow.name or 'flow'}{target}", cancel=self.cancel)
        result: RunResult | None = None
        try:
            result = await self._execute(flow, inputs, to, stand_in)
        except FlowValidationError as exc:
            self.show_issues(exc.issues)
            self.log.push(redact(str(exc)))
            notify(f"Not run: the flow has {len(exc.issues)} problem(s); see the marked nodes.", type="negative")
        except FlowbuilderError as exc:
            notify(ui_words(redact(str(exc))), type="negative", multi_line=True)
        finally:
            self.running = False
            self.drain()
            self.cancel_event = None
        if result is not None and stand_in is not None:
            self._mark_stand_in(result, stand_in)
        job.finish(self._outcome(result, time.perf_counter() - started))
        for listener in self.finished_listeners:
            listener(result)
        return result

    def _inputs(self, flow: Flow, text: str | None, file_input: bool) -> dict[str, str]:
        """The run's inputs: the text for chat inputs and, when it names a file that exists, for file inputs."""
        inputs: dict[str, str] = {}
        if not text:
            return inputs
        inputs[GENERIC_INPUT] = text
        if file_input:
            # A file path also feeds the file inputs (n8n's form upload), but only a path that exists:
            # a question typed into the same box must not become a file name.
            try:
                candidate = expand_user(text)
            except NodeError:  # "~word ..." typed as a question names no file
                candidate = Path(text)
            if not candidate.is_absolute():
                candidate = self.session.base_dir / candidate
            if _is_file(candidate):
                for spec in flow.nodes:
                    cls = self.session.state.node_class(spec.id)
                    if cls is not None and cls.run_input == "file":
                        inputs[spec.id] = str(candidate)
        return inputs

    async def _execute(
        self, flow: Flow, inputs: dict[str, str], to: str | None, stand_in: StandIn | None
    ) -> RunResult | None:
        """The executor's run in a worker thread: of the flow (after the background ingest of it), or of the
        keyword stand-in while that ingest runs (paused meanwhile, so the answer has the CPU); None when the server
        shuts down."""
        if stand_in is None:
            await self._after_background(flow)
        else:
            self.stood_in = self._stand_in_line()
            for tell in self.stage_listeners:
                tell(self.stood_in)
        background = self.session.background if stand_in is not None else None
        with background.paused() if background is not None else contextlib.nullcontext():
            result: RunResult | None = await run.io_bound(
                self.session.executor.run,
                flow if stand_in is None else stand_in.flow,
                inputs=inputs,
                to=to,
                on_event=self._events.append if stand_in is None else self._quiet(stand_in.quiet),
                cancel_event=self.cancel_event,
                session_id=self.session.session_id,
                base_dir=self.session.base_dir,
                flow_file=self.session.path,
            )
        return result

    def _outcome(self, result: RunResult | None, elapsed: float) -> str:
        """The run's last line in the activity bar (a toast when it went wrong); the results kept for the page."""
        if result is None:
            return "Not run."
        self.last = result
        self.session.results = dict(result.results)
        failed = [self.name(r.node_id) for r in result.failed()]
        if result.cancelled:
            notify("Run cancelled.", type="warning")
            return "Cancelled."
        if failed:
            notify(f"Run finished in {elapsed:.1f} s; failed: {', '.join(failed)}", type="warning")
            return f"Failed: {', '.join(failed)}"
        return f"Done in {elapsed:.1f} s."  # said by the activity bar: no toast over the header

    def _stand_in(self, flow: Flow, text: str | None, to: str | None) -> StandIn | None:
        """Keyword search in place of the dense search, when a question comes while the background ingest of this
        very flow still fills its store (flowbuilder/standin.py): the answer need not wait for the embeddings."""
        job = self.session.background
        if not text or job is None or not job.running or not job.covers(flow):
            return None
        stand_in = job.stand_in()
        if stand_in is None or (to is not None and stand_in.flow.find_node(to) is None):
            return None
        return stand_in

    def _stand_in_line(self) -> str:
        job = self.session.background
        if job is None or not job.total:
            return "keyword search while embeddings start"
        return f"keyword search while embeddings finish: {job.done}/{job.total}"

    def _quiet(self, quiet: frozenset[str]) -> Callable[[RunEvent], None]:
        """The run's events, less those of the ingest's nodes (their cards show the background ingest)."""

        def forward(event: RunEvent) -> None:
            if event.node_id not in quiet:
                self._events.append(event)

        return forward

    def _mark_stand_in(self, result: RunResult, stand_in: StandIn) -> None:
        """The cards that searched by keyword say so (an amber badge: not the search the flow asks for)."""
        line = f"{self.stood_in} (dense search once the store is full)"
        patches = {
            node_id: {"status": "warning", "summary": line, "warning": line}
            for node_id in stand_in.replaced
            if (node := result.results.get(node_id)) is not None and node.succeeded
        }
        self.canvas.patch(patches)
        self.log.push(f"⚠ answered by {line}")

    async def _after_background(self, flow: Flow) -> None:
        """One ingest at a time: the run waits for the background ingest of the same flow (then finds the
        store filled) or stops one made stale by an edit (what it embedded stays in the cache)."""
        job = self.session.background
        if job is None or not job.running:
            return
        if job.covers(flow):
            waiting = f"waiting for the background ingest ({job.done}/{job.total} embedded)"
            self.log.push(f"{waiting[0].upper()}{waiting[1:]}…")
            for listener in self.stage_listeners:  # the chat says why its reply has not started
                listener(waiting)
        else:
            job.cancel()
            for listener in self.stage_listeners:
                listener("stopping the background ingest of the flow before your edit")
        await run.io_bound(job.wait)

    def cancel(self) -> None:
        if self.session.background is not None:
            self.session.background.cancel()
        if self.cancel_event is not None:
            self.cancel_event.set()
            notify("Cancelling…")


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for a name the system refuses (a long question is not a file name)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False
