"""No silent fallback: a stage that ran degraded is on stderr, in the JSON ``warnings`` and on the leaderboard
of ``compare`` and ``eval`` (real MiniLM, real Chroma; the models are on a port where nothing listens)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.cli import main
from tests.evaluation.answer_flow import write_corpus
from tests.evaluation.small_flows import write_small_corpus
from tests.fakes.llm_server import free_port


def rewrite_flow(folder: Path) -> Path:
    """labelled.json plus query.rewrite (3 rewordings) whose model is unreachable, set to carry on."""
    data = json.loads((folder / "labelled.json").read_text())
    data["name"] = "Labelled + rewrite x3"
    data["nodes"] += [
        {"id": "question", "type": "chat.input", "config": {"text": "unused"}},
        {"id": "llm", "type": "llm.ollama", "config": {"base_url": f"http://127.0.0.1:{free_port()}", "timeout": 5}},
        {"id": "rewrite", "type": "query.rewrite", "config": {"if_model_fails": "continue", "k": 5, "keep": 5}},
    ]
    data["edges"] += [
        {"source": "question", "source_port": "message", "target": "rewrite", "target_port": "query"},
        {"source": "llm", "source_port": "model", "target": "rewrite", "target_port": "model"},
        {"source": "store", "source_port": "store", "target": "rewrite", "target_port": "store"},
    ]
    path = folder / "rewrite.json"
    path.write_text(json.dumps(data))
    return path


def test_compare_reports_a_rewrite_that_fell_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_small_corpus(tmp_path / "corpus")
    flows = [str(folder / "labelled.json"), str(rewrite_flow(folder))]
    questions = str(folder / "questions.jsonl")

    assert main(["compare", *flows, "--questions", questions, "--json", "--quiet"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    plain, rewritten = data["flows"]
    assert plain["degraded"] == [] and not any("degraded" in w for w in plain["warnings"])
    [line] = rewritten["degraded"]
    assert line.startswith("rewrite (query.rewrite) ran degraded on 4 of 4 questions: no rewordings")
    assert line in rewritten["warnings"]
    assert f"DEGRADED (B): {line}" in err

    assert main(["compare", *flows, "--questions", questions, "--quiet"]) == 0
    out, _ = capsys.readouterr()
    board = out.split("Leaderboard")[1].split("\n\n")[0]
    assert "Labelled + rewrite x3 [DEGRADED]" in board and "Labelled small [DEGRADED]" not in board


def test_eval_scores_extractive_answers_and_says_the_model_was_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow_path, questions = write_corpus(tmp_path, "unused", "help-degraded")
    data = json.loads(flow_path.read_text())
    llm = next(n for n in data["nodes"] if n["id"] == "llm")
    llm["type"] = "llm.ollama"
    llm["config"] = {"base_url": f"http://127.0.0.1:{free_port()}", "when_unreachable": "extractive"}
    flow_path.write_text(json.dumps(data))

    code = main(["eval", str(flow_path), "--questions", str(questions), "--json", "--quiet", "--min-accuracy", "0.5"])
    out, err = capsys.readouterr()
    result = json.loads(out)

    assert code == 0, result["thresholds"]
    assert result["metrics"]["errors"] == 0 and result["metrics"]["accuracy"] >= 0.5
    [line] = result["warnings"]
    assert line.startswith("llm (llm.ollama) ran degraded on 8 of 8 questions: the model did not answer")
    assert "answered extractively" in line and f"DEGRADED: {line}" in err
    assert all("llm (llm.ollama)" in r["degraded"] for r in result["results"])
