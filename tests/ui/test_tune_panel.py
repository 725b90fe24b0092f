"""The Tune panel on /compare in headless Chromium: a real sweep on the small corpus (30 CSV rows, MiniLM)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen
from selenium.webdriver.common.by import By

from tests.evaluation.small_flows import write_small_corpus
from tests.evaluation.test_tune import QUESTIONS
from tests.waiting import wait_until

from .conftest import SHOTS


@pytest.mark.slow
def test_tune_panel_shows_both_splits_the_verdict_and_saves_the_winner(
    screen: Screen, builder: Callable[..., None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    workspace = write_small_corpus(tmp_path / "workspace")
    lines = [json.dumps({"id": i, "question": q, "gold": [g], "fact": f}) for i, q, g, f in QUESTIONS]
    (workspace / "tune.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    builder()
    screen.open("/compare?tune=naive.json&q=tune.jsonl&vary=splitter.chunk_size=300,1000&run=1")
    # a GET never starts work (issue 30): run=1 is ignored, the Tune button starts it
    wait_until(lambda: screen.selenium.find_elements(By.CSS_SELECTOR, "[data-testid=tune]"), 60, "the Tune panel")
    screen.find_by_css("[data-testid=tune]").click()
    status = wait_until(
        lambda: (text := screen.find_by_css("[data-testid=tune-status]").text).startswith(("Done", "Failed")) and text,
        600,
        "the tuning run to end",
    )
    assert status == "Done.", status
    tuning = screen.find_by_css("[data-testid=tune-tuning]").text
    assert "untuned (as saved)" in tuning and "splitter.chunk_size=300" in tuning and "← winner" in tuning
    assert "hit@2000ch" in tuning
    held = screen.find_by_css("[data-testid=tune-held-out]").text
    assert "winner: splitter.chunk_size=" in held
    assert "MRR" in screen.find_by_css("[data-testid=tune-verdict]").text
    conclusion = screen.find_by_css("[data-testid=tune-conclusion]").text
    assert conclusion.startswith(("The saved settings", "No variant", "The gain", "The winner"))
    screen.selenium.save_screenshot(str(SHOTS / "tune_panel.png"))
    # a user scrolls a button out from under the floating activity bar (a job of an earlier test may show there)
    button = screen.find("Save winner")
    screen.selenium.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    saved = workspace / "naive_tuned.json"
    wait_until(saved.exists, 20, f"{saved.name} to be written")
    assert "Tuned with `flowbuilder tune`" in json.loads(saved.read_text())["description"]
