"""Long work the user started (run, ingest, compare, eval, serve), seen from every tab and page.

A :class:`Job` is registered by whoever starts the work and fed from the worker's events
(:meth:`Job.progress`); its estimate of the time left comes from the rate measured in the current
stage, never from a guess. :class:`JobView` draws one job (stage, bar, time left, Cancel, which goes
away when the job ends); :class:`ActivityBar` draws every job of this builder process under a page's
header, so a compare started on /compare is followed from the builder and the other way round.
"""

from __future__ import annotations

import html
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from nicegui import run, ui

from flowbuilder.errors import FlowbuilderError
from flowbuilder.executor import RunEvent
from flowbuilder.trust.secrets import redact
from flowbuilder.ui.widgets import notify

Item = TypeVar("Item")
Result = TypeVar("Result")

KEEP_FINISHED_S = 12.0
"""How long a finished job stays in the activity bar with its outcome."""
FOLD_AFTER_S = 4.0
"""After this long a finished job's row folds, with every other finished one, into a single line of the bar."""
MIN_RATE_SECONDS = 1.0
_ids = itertools.count(1)
_LOCK = threading.Lock()
JOBS: dict[int, Job] = {}


def seconds_text(seconds: float) -> str:
    if seconds < 60:
        return f"about {max(1, round(seconds))} s left"
    if seconds < 3600:
        return f"about {seconds / 60:.1f} min left"
    return f"about {seconds / 3600:.1f} h left"


@dataclass
class Job:
    """One piece of long work. Thread-safe enough for one writer (the worker) and many readers."""

    kind: str
    title: str
    cancel: Callable[[], None] | None = None
    id: int = field(default_factory=lambda: next(_ids))
    stage: str = "starting…"
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    outcome: str = ""
    cancelling: bool = False
    _stage_key: str = ""
    _rate_from: tuple[float, int] = (0.0, 0)

    # ---------------------------------------------------------------- the worker's side
    def progress(self, stage: str, done: int = 0, total: int = 0, key: str | None = None) -> None:
        """The current stage ("embedding", with ``done`` of ``total`` items). ``key`` names the stage for
        the rate: a new key restarts the measurement (a new node's items are not the last one's)."""
        key = key if key is not None else stage
        now = time.monotonic()
        if key != self._stage_key or done < self.done:
            self._stage_key = key
            self._rate_from = (now, done)
        self.stage, self.done, self.total = stage, done, total

    def event(self, event: RunEvent, name: Callable[[str], str] = str, prefix: str = "") -> None:
        """Follow an executor event (``name`` turns a node id into the card's name)."""
        node = name(event.node_id) if event.node_id else ""
        if event.kind == "progress":
            done, total = int(event.data.get("done", 0)), int(event.data.get("total", 0))
            what = str(event.data.get("message") or "")
            counts = f"{done}/{total}" if total else ""  # no total: a wait, not a count (a store's lock)
            stage = f"{prefix}{node}: {' '.join(part for part in (what, counts) if part)}"
            self.progress(stage, done, total, key=f"{prefix}{event.node_id}:{what}")
        elif event.kind == "node_started":
            self.progress(f"{prefix}{node}: running", key=f"{prefix}{event.node_id}")
        elif event.kind == "node_cached":
            self.progress(f"{prefix}{node}: cached", key=f"{prefix}{event.node_id}")

    def finish(self, outcome: str) -> None:
        self.outcome = outcome
        self.ended = time.monotonic()
        self.cancel = None

    def request_cancel(self) -> None:
        if self.cancel is not None and self.ended is None:
            self.cancelling = True
            self.cancel()

    # ---------------------------------------------------------------- readers
    @property
    def running(self) -> bool:
        return self.ended is None

    def seconds_left(self) -> float | None:
        """Items left over the rate measured since the stage began; None until there is a rate."""
        if not self.total or self.done >= self.total:
            return None
        since, done0 = self._rate_from
        elapsed = time.monotonic() - since
        if elapsed < MIN_RATE_SECONDS or self.done <= done0:
            return None
        rate = (self.done - done0) / elapsed
        return (self.total - self.done) / rate

    def line(self) -> str:
        if not self.running:
            return f"{self.title} · {self.outcome}"
        return f"{self.title} · {'cancelling… ' if self.cancelling else ''}{self.stage}"

    def eta_text(self) -> str:
        if not self.running or not self.total:
            return ""
        left = self.seconds_left()
        return seconds_text(left) if left is not None else "estimating time left…"


def start_job(kind: str, title: str, cancel: Callable[[], None] | None = None) -> Job:
    job = Job(kind=kind, title=title, cancel=cancel)
    with _LOCK:
        JOBS[job.id] = job
    return job


def drop_job(job: Job) -> None:
    """Forget a job that turned out to have nothing to do (it is never shown)."""
    with _LOCK:
        JOBS.pop(job.id, None)


def current_jobs() -> list[Job]:
    """Running jobs and those that ended a moment ago (their outcome is still shown)."""
    now = time.monotonic()
    with _LOCK:
        for job_id in [j.id for j in JOBS.values() if j.ended is not None and now - j.ended > KEEP_FINISHED_S]:
            JOBS.pop(job_id, None)
        return list(JOBS.values())


class JobView:
    """One job: its line (stage, time left), a progress bar and Cancel while it runs."""

    def __init__(self, testid: str = "job") -> None:
        self.job: Job | None = None
        with ui.row().classes("w-full items-center no-wrap gap-3 fb-job") as self.box:
            with ui.column().classes("grow gap-0 min-w-0"):
                self.label = ui.label("").classes("text-xs fb-job-line").props(f"data-testid={testid}-status")
                self.bar = ui.linear_progress(value=0, show_value=False).props(f"data-testid={testid}-progress")
            self.eta = ui.label("").classes("text-xs fb-job-eta").props(f"data-testid={testid}-eta")
            self.cancel_button = (
                ui.button("Cancel", icon="close", on_click=self._cancel)
                .props(f"flat dense no-caps no-wrap size=sm color=negative data-testid={testid}-cancel")
                .classes("fb-job-cancel")
            )
        self.box.set_visibility(False)

    def _cancel(self) -> None:
        if self.job is not None:
            self.job.request_cancel()
            self.show(self.job)

    def _text(self, text: str) -> None:
        if self.label.text != text:
            self.label.set_text(text)
            self.label.props(f'title="{html.escape(text)}"')  # the whole line, where the bar cuts it short

    def show(self, job: Job | None) -> None:
        self.job = job
        self.box.set_visibility(job is not None)
        if job is None:
            return
        self._text(job.line())
        self.eta.set_text(job.eta_text())
        self.bar.set_visibility(True)
        self.bar.set_value((job.done / job.total if job.total else 0) if job.running else 1)
        self.cancel_button.set_visibility(job.running and job.cancel is not None and not job.cancelling)

    def show_folded(self, jobs: list[Job]) -> None:
        """Finished jobs as one line: the latest outcome, and how many more finished."""
        self.job = None
        self.box.set_visibility(bool(jobs))
        if not jobs:
            return
        latest = max(jobs, key=lambda job: job.ended or 0.0)
        more = f" · and {len(jobs) - 1} more finished" if len(jobs) > 1 else ""
        self._text(f"{latest.line()}{more}")
        self.eta.set_text("")
        self.bar.set_visibility(False)
        self.cancel_button.set_visibility(False)


class PageJob(Generic[Item]):
    """The one lifecycle of a page's long work (a compare on /compare, an evaluation on /eval): one at a time, its
    button disabled meanwhile, the job in the activity bar and in the page's own :class:`JobView` (stage, time
    left, Cancel), progress items queued by the worker thread and followed on a timer (``follow(job, item)``), and
    an outcome line. The work gets the cancel event and returns what finished, also when cancelled."""

    def __init__(self, kind: str, testid: str, follow: Callable[[Job, Item], None]) -> None:
        self.kind = kind
        self.follow = follow
        self.events: deque[Item] = deque()
        self.running = False
        self.cancel = threading.Event()
        self.job: Job | None = None
        self.button: ui.button | None = None  # disabled while the work runs
        self.view = JobView(testid)
        ui.timer(0.1, self.drain)

    def drain(self) -> None:
        while self.events:
            item = self.events.popleft()
            if self.running and self.job is not None:
                self.follow(self.job, item)
        self.view.show(self.job)

    async def run(self, title: str, work: Callable[[threading.Event], Result], outcome: Callable[[Result], str],
                  starting: str = "starting… (Cancel keeps what finished)") -> Result | None:  # fmt: skip
        """``work(cancel)`` in a worker thread; its result (``outcome(result)`` is the job's last line), or None
        when it raised a :class:`FlowbuilderError` (a toast says why, unless Cancel was pressed)."""
        if self.running:
            return None
        self.running = True
        self.cancel = threading.Event()
        if self.button is not None:
            self.button.disable()
        job = self.job = start_job(self.kind, title, cancel=self.cancel.set)
        job.progress(starting)
        self.view.show(job)
        line = "Failed."
        try:
            result = await run.io_bound(work, self.cancel)
            line = "Stopped: the server is shutting down." if result is None else outcome(result)
            return result
        except FlowbuilderError as exc:
            message = redact(str(exc))
            line = f"Cancelled. {message}" if self.cancel.is_set() else f"Failed: {message}"
            if not self.cancel.is_set():
                notify(message, type="negative", multi_line=True)
            return None
        finally:
            self.running = False
            if self.button is not None:
                self.button.enable()
            self.events.clear()  # stale progress must not overwrite the outcome on the next drain
            job.finish(line)
            self.view.show(job)


class ActivityBar:
    """Every job of this builder process, floating at the bottom of the page (the builder's over the canvas):
    one line per running job, and the finished ones folded into a single line after :data:`FOLD_AFTER_S`, so the
    bar stays one line high between runs; with no job it is hidden."""

    def __init__(self, skip: str = "", page: str = "", interval: float = 0.5) -> None:
        self.skip = skip  # the kind of job this page draws itself
        self.views: dict[int, JobView] = {}
        """One view per job for the job's whole life: a row never changes jobs under the user's pointer (a
        Cancel clicked as an older line leaves must not land on another job, or on none)."""
        with ui.column().classes(f"gap-0 q-px-sm fb-activity fb-activity-{page or 'page'}") as self.box:
            self.folded = JobView("activity")
        self.box.set_visibility(False)
        if not page:
            ui.add_body_html(BAR_ROOM_JS)
        self.refresh()
        ui.timer(interval, self.refresh)

    def refresh(self) -> None:
        jobs = [job for job in current_jobs() if job.kind != self.skip]
        now = time.monotonic()
        rows = [job for job in jobs if job.ended is None or now - job.ended < FOLD_AFTER_S]
        live = {job.id for job in rows}
        for gone in [job_id for job_id in self.views if job_id not in live]:
            self.views.pop(gone).box.delete()
        for job in rows:
            view = self.views.get(job.id)
            if view is None:
                with self.box:
                    view = self.views[job.id] = JobView("activity")
            view.show(job)
        self.folded.show_folded([job for job in jobs if job.id not in live])
        self.box.set_visibility(bool(jobs))


BAR_ROOM_JS = """<script>
(function () {
  const track = () => {
    const bar = document.querySelector(".fb-activity-page");
    if (!bar) { setTimeout(track, 200); return; }
    const set = () => document.documentElement.style.setProperty(
      "--fb-activity-h", (bar.classList.contains("hidden") ? 0 : bar.offsetHeight) + "px");
    new ResizeObserver(set).observe(bar);
    new MutationObserver(set).observe(bar, { attributes: true, attributeFilter: ["class"] });
    set();
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", track); else track();
})();
</script>"""
"""Keeps ``--fb-activity-h`` at the floating bar's height on pages that scroll under it (any number of rows)."""

ACTIVITY_CSS = """
.fb-activity { position: fixed; bottom: 10px; left: 50%; transform: translateX(-50%); width: min(520px, 44vw);
  z-index: 3000; background: #eff6ff; border: 1px solid #bfdbfe; border-radius: 8px;
  box-shadow: 0 2px 8px rgba(15, 23, 42, .2); }
/* on the builder, centred over the canvas: the palette (250 px) and the side panel (--fb-side-w) may be open;
   a closed one leaves a 40 px rail */
html .fb-activity-builder { left: calc(50% + 105px); }
html.fb-palette-closed .fb-activity-builder { left: 50%; }
html:not(.fb-side-closed) .fb-activity-builder { left: calc(50% + (250px - var(--fb-side-w, 420px)) / 2); }
html.fb-palette-closed:not(.fb-side-closed) .fb-activity-builder {
  left: calc(50% - (var(--fb-side-w, 420px) - 40px) / 2); }
/* elsewhere the page scrolls under the bar: its end, and whatever a click scrolls into view, stay above it
   (--fb-activity-h: the bar's height, kept by BAR_ROOM_JS) */
html:has(.fb-activity-page) { scroll-padding-bottom: calc(var(--fb-activity-h, 0px) + 20px); }
body:has(.fb-activity-page) .nicegui-content { padding-bottom: calc(var(--fb-activity-h, 0px) + 20px); }
.fb-activity .fb-job { min-height: 30px; gap: 8px; }
.fb-activity .fb-job-line { color: #1e3a8a; font-size: 12px; white-space: nowrap; overflow: hidden; max-width: 100%;
  text-overflow: ellipsis; }
.fb-job-eta { white-space: nowrap; color: #475569; }
.body--dark .fb-activity { background: #172554; border-color: #1e3a8a; }
.body--dark .fb-activity .fb-job-line { color: #dbeafe; }
"""
