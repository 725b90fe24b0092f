"""The /compare page in headless Chromium: real flows (30 CSV rows), local MiniLM, embedded Chroma."""

from __future__ import annotations

import html
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen
from selenium.webdriver.common.by import By

from flowbuilder.evaluation.compare import FlowComparer
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.ui.compare_page import RowView, boundary_rows, truncation_legend, truncation_of
from tests.waiting import wait_until

from .conftest import SHOTS

_SPEC = importlib.util.spec_from_file_location(
    "compare_small_flows", Path(__file__).resolve().parents[1] / "evaluation" / "small_flows.py"
)
assert _SPEC is not None and _SPEC.loader is not None
small_flows = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(small_flows)


def greyed_text(row: RowView) -> str:
    """The text of a row's spans drawn as never embedded."""
    return "".join(html.unescape(m) for m in re.findall(r'<span class="fb-unread"[^>]*>([^<]*)</span>', row.html))


@pytest.mark.slow
def test_boundary_rows_grey_exactly_the_text_past_the_token_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real flows, real MiniLM tokenizer: greyed text is each record's tail beyond 256 word pieces."""
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    folder = small_flows.write_small_corpus(tmp_path / "flows")
    questions = load_questions(str(folder / "questions.jsonl"))
    comparer = FlowComparer()
    naive = comparer.evaluate(folder / "naive.json", questions, 3)
    embedder = naive.embedder
    assert embedder is not None and embedder.max_tokens == 256
    truncation = truncation_of(embedder)
    assert truncation is not None
    assert truncation_legend(embedder) == "greyed: past the embedder's 256-token limit, never embedded"

    # Naive: one CSV line per ~1,200-character chunk, every one longer than the model reads.
    rows = boundary_rows(naive.inputs, naive.chunks, 30, truncation)
    assert len(rows) == 30 and naive.stats.chunks_over_token_limit
    assert sum(row.unread for row in rows) == 30
    for row in rows:
        greyed = greyed_text(row)
        assert greyed and row.text.endswith(greyed) and len(greyed) < len(row.text) / 2
        read = embedder.count_tokens(row.text[: len(row.text) - len(greyed)])
        assert read is not None and 250 <= read <= 257, (row.record_id, read)
    # Without a tokenizer nothing is greyed (and the rows are otherwise the same).
    plain = boundary_rows(naive.inputs, naive.chunks, 30, None)
    assert not any(row.unread or "fb-unread" in row.html for row in plain)
    assert [r.cut for r in plain] == [r.cut for r in rows]

    # Improved (short templated records re-split at 1,000 chars): every chunk fits, nothing greyed.
    improved = comparer.evaluate(folder / "improved.json", questions, 3)
    assert improved.stats.chunks_over_token_limit == 0
    rows = boundary_rows(improved.inputs, improved.chunks, 30, truncation_of(improved.embedder))
    assert len(rows) == 30 and not any(row.unread or "fb-unread" in row.html for row in rows)


def open_compare(
    screen: Screen, builder: Callable[..., None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    """The /compare page over the small corpus written into the builder's workspace (the page lists it)."""
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    small_flows.write_small_corpus(tmp_path / "workspace")
    builder()
    screen.open(f"/compare?{query}")


def wait_css(screen: Screen, selector: str, timeout: float = 180.0) -> None:
    wait_until(lambda: screen.selenium.find_elements(By.CSS_SELECTOR, selector), timeout, f"{selector} to appear")


@pytest.mark.browser
@pytest.mark.slow
def test_compare_page_draws_boundaries_stats_and_hits(
    screen: Screen,
    builder: Callable[..., None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    open_compare(
        screen,
        builder,
        tmp_path,
        monkeypatch,
        "a=improved.json&b=labelled.json&q=questions.jsonl&k=3&rel=lenient&run=1",
    )
    screen.should_contain("Flows (the first is the baseline)")
    # a GET never starts work (issue 30): the page is drawn with the choices made and waits for the button
    wait_css(screen, "[data-testid=flow-line-b]")
    assert screen.find_by_css("[data-testid=compare]").is_enabled()  # disabled while a comparison runs
    assert not screen.find_by_css("[data-testid=compare-progress]").is_displayed()
    screen.find_by_css("[data-testid=compare]").click()
    wait_css(screen, "[data-testid=compare-progress]")
    wait_css(screen, "[data-testid=stats]")
    screen.should_contain("Done.")

    stats = screen.find_by_css("[data-testid=stats]").text
    cut_line = next(line for line in stats.splitlines() if line.startswith("records cut"))
    cut_a = int(re.match(r"records cut (\d+) of 30", cut_line).group(1))  # type: ignore[union-attr]
    assert "0 of 30 (0%)" in cut_line  # B: one labelled record per chunk
    assert cut_a > 20  # the joined-then-resplit flow cuts most records

    # The boundary panels: 30 rows each; A's cut rows carry a red marker, B has none.
    rows_a = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=rows-a] .fb-rec")
    rows_b = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=rows-b] .fb-rec")
    assert len(rows_a) == len(rows_b) == 30
    assert len(screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=rows-a] .fb-rec-cut")) == cut_a
    assert len(screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=rows-a] .fb-cut")) >= cut_a
    assert not screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=rows-b] .fb-cut")
    assert screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=metrics] canvas")  # the echart drew

    # Text past the 256-token limit is greyed: labelled records (~270 pieces) lose their tails, the improved
    # flow's short chunks none; the greyed rows agree with the "chunks over the token limit" statistic.
    over = next(line for line in stats.splitlines() if line.startswith("chunks over the token limit"))
    assert re.fullmatch(r"chunks over the token limit\s+0 \(> 256\)\s+30 \(> 256\)", over), over
    assert not screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=rows-a] .fb-unread")
    greyed_b = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=rows-b] .fb-unread")
    assert len(greyed_b) == 30 and all(e.value_of_css_property("text-decoration-style") == "dotted" for e in greyed_b)
    for side in ("a", "b"):
        legend = screen.find_by_css(f"[data-testid=unread-legend-{side}]").text
        assert legend == "greyed: past the embedder's 256-token limit, never embedded"

    # Pick a question: both flows' top-3 chunks with scores, and where the gold record landed.
    first_row = screen.find_by_css("[data-testid=questions] tbody tr")
    assert "q1" in first_row.text
    first_row.find_element(By.CSS_SELECTOR, ".q-checkbox").click()
    wait_css(screen, "[data-testid=hits-b] .q-card", timeout=10)
    for side in ("a", "b"):
        column = screen.find_by_css(f"[data-testid=hits-{side}]")
        cards = column.find_elements(By.CSS_SELECTOR, ".q-card")
        assert len(cards) == 3
        assert "#1 · score" in cards[0].text
        assert re.search(r"LOGIN-005: (rank \d|not in top-3)", column.text)
    note = screen.find_by_css("[data-testid=relevance-note]").text
    assert note.startswith("relevance judged lenient: a chunk is relevant if its metadata names a gold record")

    # Switch to strict: the same hits are re-judged at once and the panels say which mode judged them.
    select = screen.find_by_css("[data-testid=relevance]")
    screen.selenium.execute_script("arguments[0].scrollIntoView({block: 'center'})", select)
    select.click()
    option = next(e for e in screen.selenium.find_elements(By.CSS_SELECTOR, ".q-menu .q-item") if e.text == "strict")
    option.click()
    screen.should_contain("k = 3, strict relevance")
    screen.find_by_css("[data-testid=questions] tbody tr .q-checkbox").click()
    wait_css(screen, "[data-testid=hits-b] .q-card", timeout=10)
    note = screen.find_by_css("[data-testid=relevance-note]").text
    assert note.startswith("relevance judged strict: a chunk is relevant if it contains the fact")
    # B holds one whole record per chunk, so strict marks B's hits exactly as lenient did.
    column_b = screen.find_by_css("[data-testid=hits-b]").text
    assert "relevant (lenient)" not in column_b
    column_a = screen.find_by_css("[data-testid=hits-a]").text
    assert re.search(r"LOGIN-005: (rank \d|no relevant chunk in top-3)", column_a)
    SHOTS.mkdir(parents=True, exist_ok=True)
    screen.selenium.set_window_size(1600, 2200)
    screen.selenium.save_screenshot(str(SHOTS / "compare_page.png"))


def test_eta_follows_progress() -> None:
    from flowbuilder.executor import RunEvent
    from flowbuilder.ui.compare_page import Eta

    eta = Eta(["A", "B"])
    assert eta.text() == "estimating time left…"
    eta.started -= 10  # ten seconds in
    eta.update("A", RunEvent("progress", "store", {"done": 50, "total": 100}))
    assert eta.fraction == pytest.approx(0.2)  # half of A's ingestion: 0.8 * 0.5 / 2 flows
    assert eta.seconds_left() == pytest.approx(40, rel=0.05)
    eta.update("B", RunEvent("progress", "retriever", {"done": 1, "total": 2, "message": "searching"}))
    assert eta.fraction == pytest.approx(0.95)
    assert eta.text().startswith("about ") and eta.text().endswith(" s left")
    eta.update("A", RunEvent("node_started", "loader", {}))
    assert eta.fraction == pytest.approx(0.95)  # never goes back


@pytest.mark.browser
@pytest.mark.slow
def test_compare_page_with_three_flows_intervals_row_click_and_cancel(
    screen: Screen,
    builder: Callable[..., None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Cancel a cold comparison: the ETA shows while it runs, and Cancel stops it.
    open_compare(
        screen,
        builder,
        tmp_path,
        monkeypatch,
        "flows=naive.json,labelled.json,improved.json&q=questions.jsonl&k=3",
    )
    for label, name in (("a", "Naive small"), ("b", "Labelled small"), ("c", "Improved small")):
        line = screen.find_by_css(f"[data-testid=flow-line-{label}]").text
        assert line.startswith(f"{label.upper()}") and name in line and "→" in line  # what the flow does
    screen.find_by_css("[data-testid=compare]").click()
    wait_css(screen, "[data-testid=compare-progress]")
    wait_until(lambda: "left" in screen.find_by_css("[data-testid=compare-eta]").text, 60, "a time-left estimate")
    assert re.search(r"(about \d+(\.\d)? (s|min) left|estimating time left)", screen.find_by_css(
        "[data-testid=compare-eta]").text)  # fmt: skip
    screen.find_by_css("[data-testid=compare-cancel]").click()
    # The run stops at its next cancellation point (between nodes, embedding batches or questions).
    wait_until(lambda: "Cancelled." in screen.selenium.page_source, 120, "the run to stop")
    screen.should_contain("Cancelled.")
    assert not screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=leaderboard]")

    # Run it to the end: a leaderboard of three, interval bars and a verdict for B and C against A.
    screen.find_by_css("[data-testid=compare]").click()
    wait_css(screen, "[data-testid=leaderboard]")
    screen.should_contain("Done.")
    cancel = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=compare-cancel]")
    assert not any(c.is_displayed() for c in cancel)  # Cancel goes away when the job ends
    board = screen.find_by_css("[data-testid=leaderboard]")
    assert len(board.find_elements(By.CSS_SELECTOR, "tbody tr")) == 3
    assert "baseline" in board.text
    for label in ("b", "c"):
        verdict = screen.find_by_css(f"[data-testid=verdict-{label}]").text
        assert verdict.startswith("no detectable difference on 3 questions")  # three questions are noise
        bars = screen.selenium.find_elements(By.CSS_SELECTOR, f"[data-testid=interval-{label}] .fb-ci-bar")
        assert len(bars) == 4  # hit@1, hit@k, hit@chars, MRR
    for label in ("a", "b", "c"):
        assert len(screen.selenium.find_elements(By.CSS_SELECTOR, f"[data-testid=rows-{label}] .fb-rec")) == 30
    # Clicking a row (not its checkbox) opens that question's detail for every flow.
    rows = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=questions] tbody tr")
    second = rows[1]
    assert "q2" in second.text
    second.find_elements(By.CSS_SELECTOR, "td")[2].click()
    wait_css(screen, "[data-testid=hits-c] .q-card", timeout=10)
    assert screen.find_by_css("[data-testid=detail-title]").text.startswith("q2:")
    # q3's gold record is not in these 30 rows: every flow says why it missed.
    rows[2].find_elements(By.CSS_SELECTOR, "td")[2].click()
    wait_css(screen, "[data-testid=miss-a]", timeout=10)
    for label in ("a", "b", "c"):
        assert "no chunk holds it" in screen.find_by_css(f"[data-testid=miss-{label}]").text
    screen.selenium.set_window_size(1600, 1400)
    screen.selenium.execute_script("window.scrollTo(0, 0)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    screen.selenium.save_screenshot(str(SHOTS / "compare_page_three.png"))


@pytest.mark.slow
def test_compare_page_screening_embedder_says_what_it_costs(
    screen: Screen,
    builder: Callable[..., None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    open_compare(
        screen,
        builder,
        tmp_path,
        monkeypatch,
        "a=improved.json&b=labelled.json&q=questions.jsonl&k=3&emb=screening",
    )
    wait_css(screen, "[data-testid=flow-line-b]")
    screen.find_by_css("[data-testid=compare]").click()
    wait_css(screen, "[data-testid=screening-cost]")
    screen.should_contain("Done.")
    cost = screen.find_by_css("[data-testid=screening-cost]").text
    assert "WordLlama" in cost and "confirm the winner" in cost and "MRR" in cost
    board = screen.find_by_css("[data-testid=leaderboard]").text
    assert board.count("[screening: wordllama]") == 2  # both flows ran with the screening embedder
    SHOTS.mkdir(parents=True, exist_ok=True)
    screen.selenium.get_screenshot_as_file(str(SHOTS / "compare-screening.png"))
