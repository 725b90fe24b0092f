"""The builder embeds a local flow's rows in the background as soon as it opens: progress in the header and
on the node badges (the executor's events), cancellable, and the first question finds the store filled."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen, User

from flowbuilder.formats.native import save_flow
from tests.serve.test_concurrent_search import search_flow, small_csv

from .test_browser import css, shot, wait_until
from .test_browser import open_builder as open_browser
from .test_user_journeys import open_builder, wait_for


def local_flow(tmp_path: Path, rows: int) -> Path:
    """A flow over ``rows`` rows that no earlier test embedded: the session shares one data dir (embedding cache,
    stores), and an ingest that finds everything cached ends before anyone can watch it."""
    csv_path = small_csv(tmp_path / "rows.csv", rows)
    tag = tmp_path.name
    with csv_path.open(encoding="utf-8", newline="") as source:
        table = list(csv.reader(source))
    with csv_path.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows([table[0], *[[f"{tag}-{row[0]}", *row[1:]] for row in table[1:] if row]])
    flow = search_flow(csv_path, f"ui-bg-{rows}-{tag}"[:60])
    path = tmp_path / "flow.json"
    save_flow(flow, path)
    return path


async def test_opening_a_local_flow_embeds_it_and_the_first_question_does_not(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    page = await open_builder(user, builder, flow_path=local_flow(tmp_path, 30))
    job = page.session.background
    assert job is not None and job.targets == ["store"]
    await wait_for(lambda: job.total > 0, timeout=60)
    await wait_for(lambda: page.background_box.visible and page.background_label.text.startswith("Embedding"))
    await user.should_see(marker="background-status")  # the header says so while it runs
    await wait_for(lambda: job.finished, timeout=300)
    assert job.error is None and job.done == job.total == 30
    await wait_for(lambda: page.session.background is None, timeout=5)
    await user.should_see("Background ingest done")
    assert page.canvas.status["store"]["status"] == "ok"  # the store's badge came from the same events

    page.run_input.value = "two dots in the email"
    await page.run(None)
    result = page.runner.last
    assert result is not None and result.ok
    assert "+0 added" in result.results["store"].summary and "30 kept" in result.results["store"].summary


async def test_the_background_ingest_can_be_cancelled(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    page = await open_builder(user, builder, flow_path=local_flow(tmp_path, 200))
    job = page.session.background
    assert job is not None
    await wait_for(lambda: job.done > 0 and page.background_box.visible, timeout=120)
    user.find(marker="background-cancel").click()
    await wait_for(lambda: job.finished, timeout=60)
    assert job.results and job.results[-1].cancelled
    assert job.results[-1].results["store"].status == "cancelled"


@pytest.mark.browser
def test_background_ingest_in_chromium(screen: Screen, builder: Callable[..., None], tmp_path: Path) -> None:
    """Look at it: the header while the rows are embedded in the background, then once they are."""
    open_browser(screen, builder, flow_path=local_flow(tmp_path, 200))
    label = wait_until(lambda: [e for e in css(screen, ".fb-background") if e.is_displayed()], timeout=60)
    assert label and "Embedding " in label[0].text  # type: ignore[index]
    wait_until(lambda: "/200" in css(screen, ".fb-background")[0].text, timeout=60)
    shot(screen, "background-ingest-running")
    wait_until(lambda: not css(screen, ".fb-background")[0].is_displayed(), timeout=300)
    shot(screen, "background-ingest-done")


BAR_JS = """
const seen = (e) => e.checkVisibility();
const jobs = [...document.querySelectorAll('.fb-activity .fb-job')].filter(seen);
return jobs.map((j) => ({
  line: j.querySelector('[data-testid=activity-status]')?.innerText || '',
  eta: j.querySelector('[data-testid=activity-eta]')?.innerText || '',
  cancel: [...j.querySelectorAll('[data-testid=activity-cancel]')].some(seen),
}));
"""


def background_line(screen: Screen) -> dict | None:
    jobs = screen.selenium.execute_script(BAR_JS)
    mine = [j for j in jobs if "Background ingest" in j["line"]]
    return mine[-1] if mine else None  # the newest: the bar is shared with what earlier pages started


@pytest.mark.browser
@pytest.mark.parametrize("size", [(1280, 720), (1440, 900)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_background_ingest_is_listed_in_the_activity_bar(
    screen: Screen, builder: Callable[..., None], tmp_path: Path, size: tuple[int, int]
) -> None:
    """The background ingest is a job of the activity bar like a run: its stage ("store: embedding n/m"),
    a time left from its measured rate, and Cancel; when it ends, Cancel goes and the outcome stays."""
    builder(flow_path=local_flow(tmp_path, 400))
    screen.selenium.set_window_size(*size)
    screen.selenium.set_page_load_timeout(60)
    screen.open("/", timeout=60)
    running = wait_until(
        lambda: (j := background_line(screen)) and "/400" in j["line"] and "about" in j["eta"] and j["cancel"] and j,
        timeout=180,
    )
    shot(screen, f"background-activity-{size[0]}x{size[1]}")
    assert "embedding" in running["line"], running  # type: ignore[index]
    # Cancel in the bar stops it; the line stays a moment with the outcome, without Cancel
    screen.selenium.execute_script(
        "[...document.querySelectorAll('.fb-activity .fb-job')]"
        ".filter((j) => j.innerText.includes('Background ingest')).pop()"
        ".querySelector('[data-testid=activity-cancel]').click()"
    )
    ended = wait_until(lambda: (j := background_line(screen)) and "cancelled" in j["line"] and j, timeout=60)
    assert not ended["cancel"] and not ended["eta"], ended  # type: ignore[index]
    shot(screen, f"background-activity-cancelled-{size[0]}x{size[1]}")


@pytest.mark.browser
def test_background_ingest_leaves_the_activity_bar_without_cancel_when_done(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    builder(flow_path=local_flow(tmp_path, 30))
    screen.selenium.set_window_size(1280, 720)
    screen.selenium.set_page_load_timeout(60)
    screen.open("/", timeout=60)
    wait_until(lambda: background_line(screen), timeout=120)
    ended = wait_until(lambda: (j := background_line(screen)) and "done in" in j["line"] and j, timeout=300)
    assert not ended["cancel"] and not ended["eta"], ended  # type: ignore[index]
