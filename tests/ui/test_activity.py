"""One activity bar for long work: each job's stage, a time left measured from its rate, and Cancel
until it ends; seen from the builder and from /compare and /eval. The chat says the stage while it waits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen, User

from flowbuilder.executor import RunEvent
from flowbuilder.flow import NodeSpec
from flowbuilder.ui.jobs import JOBS, Job, current_jobs, start_job
from tests.ports import reserve_port

from .test_browser import css, shot, wait_stable, wait_until
from .test_chat_no_model import rag_flow

# the chat run's own line (the newest, with its own Cancel): the bar is shared with jobs of earlier pages
BAR_JS = """
const seen = (e) => e.checkVisibility();
const job = [...document.querySelectorAll('.fb-activity .fb-job')]
  .filter((j) => seen(j) && j.innerText.includes('Run RAG chat')).pop();
if (!job) return null;
const line = job.querySelector('[data-testid=activity-status]').innerText;
return { line, cancel: [...job.querySelectorAll('[data-testid=activity-cancel]')].some(seen) };
"""


def test_time_left_comes_from_the_measured_rate_of_the_current_stage() -> None:
    job = Job(kind="run", title="Run demo")
    job.event(RunEvent("progress", "store", {"done": 0, "total": 500, "message": "embedding"}), str.upper)
    assert job.stage == "STORE: embedding 0/500" and job.seconds_left() is None
    job._rate_from = (job._rate_from[0] - 10.0, 0)  # 10 s into the stage
    job.event(RunEvent("progress", "store", {"done": 100, "total": 500, "message": "embedding"}))
    assert job.seconds_left() == pytest.approx(40, rel=0.05)  # 400 rows left at 10 rows/s
    assert "about 40 s left" in job.eta_text() or "about 39 s left" in job.eta_text()
    # a new stage starts a new measurement: the last node's rate says nothing about this one
    job.event(RunEvent("progress", "retriever", {"done": 1, "total": 50, "message": "searching"}))
    assert job.seconds_left() is None and job.eta_text() == "estimating time left…"
    cancelled: list[bool] = []
    job.cancel = lambda: cancelled.append(True)
    job.request_cancel()
    assert cancelled == [True] and job.line().startswith("Run demo · cancelling…")
    job.finish("Cancelled.")
    assert job.line() == "Run demo · Cancelled." and job.cancel is None and job.eta_text() == ""


def test_a_wait_without_a_count_is_said_without_one() -> None:
    job = Job(kind="run", title="Run demo")
    job.event(RunEvent("progress", "store", {"done": 0, "total": 0, "message": "waiting 3 s for another run"}))
    assert job.stage == "store: waiting 3 s for another run" and job.seconds_left() is None


def test_finished_jobs_leave_the_bar() -> None:
    job = start_job("compare", "Compare 2 flows")
    assert job in current_jobs()
    job.finish("Done.")
    assert job in current_jobs()  # its outcome is shown a moment
    assert job.ended is not None
    job.ended -= 60
    assert job not in current_jobs() and job.id not in JOBS


@pytest.mark.browser
@pytest.mark.parametrize("size", [(1280, 720), (1440, 900)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_chat_run_shows_in_the_activity_bar_on_every_page(
    screen: Screen, builder: Callable[..., None], tmp_path: Path, size: tuple[int, int]
) -> None:
    llm = NodeSpec(
        id="llm", type="llm.ollama", name="Local model", config={"base_url": f"http://127.0.0.1:{reserve_port()}"}
    )
    builder(flow_path=rag_flow(tmp_path, llm))
    screen.selenium.set_window_size(*size)
    screen.open("/")
    wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout=30)
    css(screen, ".fb-side-open-chat")[0].click()
    box = wait_until(lambda: [e for e in css(screen, ".fb-chat-compose input") if e.is_displayed()])
    box[0].send_keys("Which login case has two dots in the email?")  # type: ignore[index]
    css(screen, ".fb-chat-compose button")[0].click()

    # while the flow runs: the bar names the job and its stage, with Cancel; the chat says the stage too
    def ended_of(snap: dict[str, object]) -> bool:
        return any(word in str(snap["line"]) for word in ("Done", "Failed", "Cancelled"))

    # Cancel exactly while it runs: a warm run can end between the line's redraw and the button's, so the
    # test waits (briefly) for a view where the two agree; a Cancel that outlives the job never agrees
    snap = wait_until(
        lambda: (s := screen.selenium.execute_script(BAR_JS)) and s["cancel"] is not ended_of(s) and s, timeout=5
    )
    assert snap["line"].startswith("Run RAG chat · "), snap  # type: ignore[index]
    ended = ended_of(snap)  # type: ignore[arg-type]
    if not ended:  # a cold first run: the chat says the stage while it waits
        # (a cold machine loads the embedder and ingests before the first stage event: minutes, not seconds)
        # (the live line is replaced by the hits when the run ends: either one will do, whichever is there)
        wait_until(
            lambda: any(len(e.text) > 3 for e in css(screen, ".fb-chat-answer")) or css(screen, ".fb-hit"), timeout=180
        )
    shot(screen, f"activity-running-{size[0]}x{size[1]}")
    # the same job is listed on /compare while it runs... or its outcome, once it ended
    wait_until(lambda: css(screen, ".fb-hit"), timeout=180)
    # the bar redraws twice a second: its line turns into the outcome, naming the card that failed
    done = wait_until(
        lambda: (snap := screen.selenium.execute_script(BAR_JS)) and "Run RAG chat · F" in snap["line"] and snap
    )
    assert done["line"].startswith("Run RAG chat · Failed: Local model"), done  # type: ignore[index]
    # and Cancel goes with it (the button's redraw may trail the line's by a frame; one that stays fails)
    wait_until(lambda: screen.selenium.execute_script(BAR_JS)["cancel"] is False, timeout=3)
    # the reply wraps inside the panel: nothing sticks out to the right
    overflow = screen.selenium.execute_script(
        "const side = document.querySelector('.fb-side').getBoundingClientRect();"
        "return Math.max(0, ...[...document.querySelectorAll('.fb-chat-reply *')]"
        ".map((e) => e.getBoundingClientRect().right - side.right));"
    )
    assert overflow <= 1, overflow
    shot(screen, f"activity-done-{size[0]}x{size[1]}")


@pytest.mark.browser
def test_a_job_started_in_the_builder_is_seen_from_compare_and_eval(
    screen: Screen, builder: Callable[..., None]
) -> None:
    builder()
    cancelled: list[bool] = []
    job = start_job("ingest", "Ingest cases.csv", cancel=lambda: cancelled.append(True))
    job.progress("Chroma: embedding 96/500", 96, 500)
    try:
        for path in ("/compare", "/eval", "/"):
            screen.open(path)
            line = wait_until(
                lambda: [e.text for e in css(screen, "[data-testid=activity-status]") if e.is_displayed()]
            )
            assert "Ingest cases.csv · Chroma: embedding 96/500" in line  # type: ignore[operator]
        shot(screen, "activity-builder")
        # the bar may still show an earlier job's outcome (kept a moment, no Cancel): click the visible Cancel
        visible = wait_until(lambda: [b for b in css(screen, "[data-testid=activity-cancel]") if b.is_displayed()])
        assert isinstance(visible, list) and len(visible) == 1, visible
        visible[0].click()
        wait_until(lambda: cancelled == [True])
        job.finish("Cancelled.")
        wait_until(lambda: not [b for b in css(screen, "[data-testid=activity-cancel]") if b.is_displayed()])
        wait_until(lambda: any("Cancelled." in e.text for e in css(screen, "[data-testid=activity-status]")))
    finally:
        job.finish(job.outcome or "Done.")


@pytest.mark.browser
@pytest.mark.parametrize("rows", [1, 6])
def test_the_bar_covers_nothing_at_the_end_of_a_scrolled_page(
    screen: Screen, builder: Callable[..., None], rows: int
) -> None:
    """On /compare and /eval the page scrolls under the floating bar: scrolled to its end, or to a control near
    it (as a click does), nothing of the page is under the bar (seen: "Save winner" under a finished job's line).
    The page is made long by a probe at its end: a results table of any length ends the same way."""
    builder()
    screen.selenium.set_window_size(1280, 720)
    jobs = [start_job("ingest", f"Ingest part {i}") for i in range(rows)]
    bar_top = (
        "return [...document.querySelectorAll('.fb-activity')]"
        ".find((b) => b.getClientRects().length).getBoundingClientRect().top"
    )
    room = (  # the room kept under the page follows the bar a frame after it grows
        "const bar = [...document.querySelectorAll('.fb-activity')].find((b) => b.getClientRects().length);"
        "return parseFloat(getComputedStyle(document.documentElement).getPropertyValue('--fb-activity-h'))"
        " >= bar.offsetHeight"
    )
    try:
        for path in ("/compare", "/eval"):
            screen.open(path)
            wait_until(
                lambda: len([e for e in css(screen, "[data-testid=activity-status]") if e.is_displayed()]) >= rows
            )
            wait_until(lambda: screen.selenium.execute_script(room))
            probe = screen.selenium.execute_script(
                """const end = document.createElement('button'); end.textContent = 'probe'; end.style.height = '36px';
                const room = document.createElement('div'); room.style.height = '1500px';
                document.querySelector('.nicegui-content').append(room, end); return end;"""
            )
            screen.selenium.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
            bottom = wait_stable(  # scrolled to the end and drawn there
                lambda p=probe: screen.selenium.execute_script("return arguments[0].getBoundingClientRect().bottom", p),
                what="the scrolled page",
            )
            shot(screen, f"activity-page-end-{path.strip('/')}-{rows}")
            assert bottom <= screen.selenium.execute_script(bar_top), (path, rows, "the page's end is under the bar")
            screen.selenium.execute_script(
                "window.scrollTo(0, 0); arguments[0].scrollIntoView({block: 'nearest'})", probe
            )
            bottom = screen.selenium.execute_script("return arguments[0].getBoundingClientRect().bottom", probe)
            assert bottom <= screen.selenium.execute_script(bar_top), (path, rows, "a control scrolled to is under it")
    finally:
        for job in jobs:
            job.finish("Done.")


async def test_a_row_keeps_its_job_when_an_older_line_leaves(user: User) -> None:
    """Cancel goes to the job whose row the user clicked, even when an older line leaves the bar at that moment
    (rows used to be reused in order: the clicked row then showed the next job, or none)."""
    from nicegui import ui

    from flowbuilder.ui.jobs import ActivityBar

    bars: list[ActivityBar] = []

    @ui.page("/bar")
    def page() -> None:
        bars.append(ActivityBar(interval=3600))  # redrawn by hand below

    older = start_job("run", "Run older")
    older.finish("Done.")
    cancelled: list[str] = []
    newer = start_job("ingest", "Ingest newer", cancel=lambda: cancelled.append("newer"))
    try:
        await user.open("/bar")
        bar = bars[-1]
        row = next(view for view in bar.views.values() if view.job is newer)
        assert older.ended is not None
        older.ended -= 60  # the older line's moment is over: the next redraw drops it
        bar.refresh()
        assert older.id not in bar.views and bar.views[newer.id] is row and row.job is newer
        row._cancel()  # what a click on that row's Cancel runs
        assert cancelled == ["newer"]
    finally:
        newer.finish("Cancelled.")
