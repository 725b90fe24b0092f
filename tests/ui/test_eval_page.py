"""The /eval page: the real ``flowbuilder eval --json`` output of a whole RAG flow (local MiniLM, embedded
Chroma, llm.openai through the OpenAI SDK against the fake server scripting right, wrong, uncited,
wrongly cited, invented and refusing answers) loaded in headless Chromium, and the page's own Run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nicegui.testing import Screen
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from flowbuilder.cli import main
from flowbuilder.errors import FlowFileError
from flowbuilder.trust.credentials import CredentialStore
from flowbuilder.ui.eval_page import chunk_marks, metric_rows, question_rows, rank_text, read_eval_json, result_hits
from tests.evaluation.answer_flow import EXPECTED, script, write_corpus
from tests.fakes.llm_server import FakeLLMServer, running_server
from tests.waiting import wait_until

from .conftest import SHOTS
from .test_browser import send_file

KEY = "sk-evalpage-SECRET-987654"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server(embedding_dim=8)


def test_helpers_show_n_a_for_metrics_over_nothing_and_reject_other_json() -> None:
    # Every question failed to run: no retrieval, no answer metric may look like a score.
    result: dict[str, Any] = {
        "id": "q1",
        "question": "How many codes?",
        "answerable": True,
        "fact": "10 codes",
        "gold": ["SEC-1"],
        "verdict": "error",
        "retrieval": None,
        "chunks": [
            {"n": 1, "records": ["SEC-1"], "source": "help.csv", "score": 0.81, "cited": False,
             "holds_fact": True, "text": "You get 10 codes."},
            {"n": 2, "records": [], "source": None, "score": 0.5, "cited": True, "holds_fact": False, "text": "x"},
        ],
    }  # fmt: skip
    data = {
        "flow": "F",
        "k": 3,
        "roles": {"answer": "answer", "prompt": "prompt", "hits": "retriever", "judge": None},
        "metrics": {
            "questions": 1,
            "answerable": 1,
            "unanswerable": 0,
            "errors": 1,
            "accuracy": None,
            "fact_rate": None,
            "citation_accuracy": None,
            "refusal_rate": None,
            "invention_rate": None,
            "wrong_despite_retrieval": 0,
            "retrieval": {"k": 3, "questions": 0},
            "judge": {"judged": 0, "faithfulness": None, "correctness": None},
            "verdicts": {"error": 1},
        },
        "results": [result],
    }
    rows = {row["metric"]: row for row in metric_rows(data)}
    for name in ("retrieval hit@1", "retrieval hit@3", "retrieval MRR", "answer accuracy", "refusal rate"):
        assert rows[name]["value"] == "n/a", name
    assert rows["answer accuracy"]["over"] == "0 answerable question(s) that ran"
    assert "judge faithfulness" not in rows  # no judge asked: no judge row at all
    # the answerer's own loss sits beside accuracy: n/a when no run held the fact (older eval files too)
    assert rows["answered correctly when the fact was retrieved"]["value"] == "n/a"
    assert rows["wrong despite retrieval"]["value"] == "0"
    data["metrics"] |= {"retrieved_fact": 4, "correct_when_retrieved": 0.75, "wrong_despite_retrieval": 1}
    rows = {row["metric"]: row for row in metric_rows(data)}
    assert rows["answered correctly when the fact was retrieved"]["value"] == "75%"
    assert rows["wrong despite retrieval"]["over"] == "4 question(s) whose chunks held the fact"
    assert question_rows(data) == [
        {"id": "q1", "question": "How many codes?", "verdict": "error", "rank": "-", "passed": False}
    ]
    assert rank_text({"retrieval": {"first_rank": None}}) == "not retrieved"
    assert rank_text({"retrieval": {"first_rank": 2}}) == "2"
    hits = result_hits(result)
    assert [(h.rank, h.score, h.document.metadata.get("record_ids")) for h in hits] == [
        (1, 0.81, ["SEC-1"]),
        (2, 0.5, []),
    ]
    assert hits[0].document.source == "help.csv"
    assert chunk_marks(result) == "cited: 2 · holding the fact: 1"

    assert read_eval_json(json.dumps(data).encode(), "run.json") == data
    with pytest.raises(FlowFileError, match=r"^flow\.json: not an eval output"):
        read_eval_json(b'{"format": "flowbuilder", "nodes": []}', "flow.json")
    with pytest.raises(FlowFileError, match=r"^broken\.json: not JSON"):
        read_eval_json(b"{not json", "broken.json")


def wait_css(screen: Screen, selector: str, timeout: float = 120.0) -> list[WebElement]:
    return wait_until(lambda: screen.selenium.find_elements(By.CSS_SELECTOR, selector), timeout, f"{selector}")


def open_question(screen: Screen, question_id: str) -> WebElement:
    row = next(
        r
        for r in screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=eval-questions] tbody tr")
        if r.text.split()[0] == question_id
    )
    row.click()

    def detail_open() -> bool:  # the old detail may be replaced while it is read: a stale look is "not yet"
        titles = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=eval-detail-title]")
        return bool(titles) and titles[0].text.startswith(f"{question_id}:")

    wait_until(detail_open, 10, f"the detail of {question_id}")
    return screen.find_by_css("[data-testid=eval-detail]")


@pytest.mark.browser
@pytest.mark.slow
def test_eval_page_loads_a_saved_eval_json_and_opens_a_question(
    screen: Screen,
    builder: Callable[..., None],
    server: FakeLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    flow, questions = write_corpus(tmp_path / "help", server.openai_base_url, "evalpage-help")
    script(server)
    args = ["eval", str(flow), "--questions", str(questions), "--judge", "llm", "--json", "--quiet"]
    code = main([*args, "--cred", f"openai={KEY}", "--allow-endpoint", f"openai={server.url}"])
    saved = tmp_path / "eval.json"
    saved.write_text(capsys.readouterr().out, encoding="utf-8")
    assert code == 0
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert {r["id"]: r["verdict"] for r in data["results"]} == EXPECTED
    q3 = next(r for r in data["results"] if r["id"] == "q3")

    builder()
    screen.open("/")
    assert screen.find_by_css('a[href="/eval"]').text == "Evaluate"  # the builder's header links the page
    screen.open("/eval")
    screen.should_contain("Open a saved result")
    send_file(screen, '.fb-eval-upload input[type="file"]', saved, timeout=120)
    table = wait_css(screen, "[data-testid=eval-questions]")[0]
    assert screen.find_by_css("[data-testid=eval-title]").text.startswith("Help centre RAG (eval.json): 8 questions")

    text = screen.find_by_css("[data-testid=eval-metrics]").text
    assert "answer accuracy 17%" in text, text
    assert "refusal rate 50%" in text and "n/a" not in text
    assert "judge faithfulness 0.88 8 graded answer(s)" in text  # the scripted judge fails only q5's invention
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.text.split("\n")[0].split()[0] for r in rows] == list(EXPECTED)
    verdicts = {r.text.split()[0]: r for r in rows}
    assert "wrongly cited" in verdicts["q4"].text and "missed" in verdicts["q8"].text

    # q3: a wrong answer citing the chunk that holds the right fact.
    detail = open_question(screen, "q3")
    assert screen.find_by_css("[data-testid=eval-verdict]").text == "wrong"
    assert screen.find_by_css("[data-testid=eval-answer]").text == q3["answer"]
    assert q3["answer"].startswith("After 7 days [")
    checks = screen.find_by_css("[data-testid=eval-checks]").text
    failed = next(c for c in q3["checks"] if not c["passed"])
    assert f"✗ {failed['name']}: {failed['detail']}" in checks
    prompt = screen.find_by_css("[data-testid=eval-prompt]").text
    assert prompt == q3["prompt"].strip() and "Question: When is a deleted account gone for good?" in prompt
    cards = detail.find_elements(By.CSS_SELECTOR, "[data-testid=eval-chunks] .fb-hit")
    assert len(cards) == len(q3["chunks"]) == 3
    holder = next(c for c in q3["chunks"] if c["holds_fact"])
    assert "ACC-1" in cards[holder["n"] - 1].text and f"{holder['score']:.3f}" in cards[holder["n"] - 1].text
    assert f"first relevant chunk: {q3['retrieval']['first_rank']}" in detail.text
    judge = screen.find_by_css("[data-testid=eval-judge]").text
    assert judge == "faithfulness 1.00 · correctness 1.00: checked the chunks"
    assert KEY not in screen.selenium.page_source

    # Another row replaces the detail: q6 is a right refusal of a question without an answer.
    open_question(screen, "q6")
    assert screen.find_by_css("[data-testid=eval-verdict]").text == "refused"
    assert "expected: (a refusal)" in screen.find_by_css("[data-testid=eval-detail]").text
    selected = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=eval-questions] tbody tr.selected")
    assert [r.text.split()[0] for r in selected] == ["q6"]  # the open question's row is marked
    SHOTS.mkdir(parents=True, exist_ok=True)
    open_question(screen, "q3")
    screen.selenium.set_window_size(1600, 1400)
    screen.selenium.save_screenshot(str(SHOTS / "eval_page.png"))


def workspace_corpus(server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collection: str) -> None:
    """The help-centre flow and questions in the page's workspace, its model the fake server, its key known."""
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the page's runs use the standard credential lookup
    # and the credentials file's approvals: a cloud key goes to the fake on this machine once approved
    monkeypatch.setenv("FLOWBUILDER_CREDENTIALS", str(tmp_path / "credentials.json"))
    CredentialStore().approve_endpoint("openai", "default", server.url)
    write_corpus(tmp_path / "workspace", server.openai_base_url, collection)  # the page lists the workspace


@pytest.mark.browser
@pytest.mark.slow
def test_eval_page_runs_a_flow_with_progress_and_cancel(
    screen: Screen,
    builder: Callable[..., None],
    server: FakeLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace_corpus(server, tmp_path, monkeypatch, "evalpage-run")
    script(server)
    builder()
    # Cancel while the first question (ingest + model load) runs: it stops between questions.
    screen.open("/eval?flow=flow.json&q=questions.jsonl&k=3&run=1")
    # a GET never starts work (issue 30): run=1 is ignored, the Run button starts it
    wait_css(screen, "[data-testid=eval-run]")
    assert screen.find_by_css("[data-testid=eval-run]").is_enabled()  # disabled while an evaluation runs
    assert not screen.find_by_css("[data-testid=eval-progress]").is_displayed()
    screen.find_by_css("[data-testid=eval-run]").click()
    wait_css(screen, "[data-testid=eval-progress]")
    screen.find_by_css("[data-testid=eval-cancel]").click()
    wait_until(lambda: "Cancelled." in screen.find_by_css("[data-testid=eval-status]").text, 120, "the cancel")
    # It stops between questions: on a busy machine the click may land after the first one finished, and a
    # cancelled evaluation shows exactly the questions that finished (none, or some, never all 8).
    line = screen.find_by_css("[data-testid=eval-status]").text
    finished = 0 if "No question finished" in line else int(line.split("Cancelled. ")[1].split(" of 8")[0])
    assert finished < 8, line
    shown = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=eval-questions] tbody tr")
    assert len(shown) == finished, line

    screen.find_by_css("[data-testid=eval-run]").click()
    # the cancelled run's table may still be there: wait for this run's end, then read the table it left
    wait_until(lambda: "Done." in screen.find_by_css("[data-testid=eval-status]").text, 180, "the second run")
    cancel = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=eval-cancel]")
    assert not any(c.is_displayed() for c in cancel)  # Cancel goes away when the job ends

    def table() -> dict[str, str]:  # read whole each time: the table is redrawn when the run's rows arrive
        rows = screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=eval-questions] tbody tr")
        return {r.text.split()[0]: " ".join(r.text.split()[1:]) for r in rows}

    assert wait_until(lambda: len(table()) == 8 and table(), 60, "all 8 rows")["q1"].endswith("correct 1")
    text = screen.find_by_css("[data-testid=eval-metrics]").text
    assert "retrieval hit@3" in text
    open_question(screen, "q1")
    assert screen.find_by_css("[data-testid=eval-verdict]").text == "correct"
    assert screen.find_by_css("[data-testid=eval-answer]").text.startswith("You get 10 recovery codes [")


@pytest.mark.browser
@pytest.mark.slow
def test_a_cancelled_evaluation_keeps_and_shows_the_questions_that_finished(
    screen: Screen,
    builder: Callable[..., None],
    server: FakeLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace_corpus(server, tmp_path, monkeypatch, "evalpage-cancel")
    script(server)
    server.delay("chat", 1.5)  # every answer takes a moment: the Cancel below lands between two questions
    builder()
    screen.selenium.set_window_size(1280, 720)
    screen.open("/eval?flow=flow.json&q=questions.jsonl&k=3")
    screen.find_by_css("[data-testid=eval-run]").click()

    def status() -> str:
        return str(screen.find_by_css("[data-testid=eval-status]").text)

    wait_until(lambda: "question 4/8" in status(), 240, "three questions done")
    screen.find_by_css("[data-testid=eval-cancel]").click()
    wait_until(lambda: "Cancelled." in status(), 120, "the cancel")
    line = status()
    finished = int(line.split("Cancelled. ")[1].split(" of 8")[0])
    assert 3 <= finished < 8, line  # the three that were done, and the one that was running when Cancel came
    rows = wait_css(screen, "[data-testid=eval-questions] tbody tr")
    assert [r.text.split()[0] for r in rows] == list(EXPECTED)[:finished]
    note = screen.find_by_css("[data-testid=eval-cancelled]").text
    assert f"Cancelled after {finished} of 8 questions" in note and "over the questions that finished" in note
    assert screen.find_by_css("[data-testid=eval-title]").text.startswith(f"Help centre RAG (flow.json): {finished} ")
    SHOTS.mkdir(parents=True, exist_ok=True)
    screen.selenium.save_screenshot(str(SHOTS / "eval_cancelled_keeps_rows.png"))
