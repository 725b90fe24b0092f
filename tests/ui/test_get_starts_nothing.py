"""A GET never starts work (issue 30): a link, an ``<img>`` or a prefetch from another site can send one, and the
browser sends no Origin with it. The builder's background ingest starts when the page's own connection opens;
``/eval`` and ``/compare`` start only from their buttons, whatever the address says (``run=1``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import User

from flowbuilder.ui.jobs import current_jobs
from flowbuilder.ui.session import PAGES
from tests.evaluation import small_flows

from .test_background_ingest import local_flow
from .test_user_journeys import wait_for

ADDRESSES = (
    "/",
    "/eval?flow=labelled.json&q=questions.jsonl&k=3&run=1",
    "/compare?a=improved.json&b=labelled.json&q=questions.jsonl&k=3&rel=lenient&run=1",
    "/compare?tune=labelled.json&q=questions.jsonl&vary=splitter.chunk_size=300,1000&run=1",
)


def started_since(before: set[str]) -> list[str]:
    return [f"{job.kind}: {job.title}" for job in current_jobs() if job.id not in before]


async def test_a_get_of_any_page_starts_no_job(
    user: User, builder: Callable[..., None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    small_flows.write_small_corpus(tmp_path / "workspace")  # what /eval and /compare are pointed at
    builder(flow_path=local_flow(tmp_path, 30))  # a local flow: the builder would embed it in the background
    before = {job.id for job in current_jobs()}
    for address in ADDRESSES:  # plain GETs, as another site's <img> sends them: the pages are built, not opened
        response = await user.http_client.get(address)
        assert response.status_code == 200 and response.headers.get("X-Nicegui-Content") == "page", address
    assert len(PAGES) == 1  # the builder's page was built for the GET ...
    page = next(iter(PAGES.values()))
    assert page.session.background is None and not page.runner.running  # ... and started nothing
    assert started_since(before) == []

    for address in ADDRESSES[1:]:  # opened in a browser (connected): still only their buttons start work
        await user.open(address)
    assert started_since(before) == []

    # the control: the builder's own connection starts its background ingest (so the checks above can fail)
    await user.open("/")
    assert user.client is not None
    opened = PAGES[user.client.id]
    job = opened.session.background
    assert job is not None and job.targets == ["store"]
    assert [line for line in started_since(before) if line.startswith("ingest: Background ingest")]
    job.cancel()
    await wait_for(lambda: job.finished, timeout=120)
    assert page.session.background is None  # the page built for the GET never started one
