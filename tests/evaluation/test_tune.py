"""``flowbuilder tune``: variants scored on a tuning split, the winner judged on held-out questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.evaluation.compare import ComparisonError
from flowbuilder.evaluation.questions import Question
from flowbuilder.evaluation.tune import split_questions
from flowbuilder.formats.native import load_flow

QUESTIONS = [
    ("t1", "Which test checks the secret typed at sign-in is hidden?", "LOGIN-008", "password masking"),
    ("t2", "Can I press Return to send the sign-in form?", "LOGIN-010", "Enter-key submission"),
    ("t3", "Does the cursor start in the email box when the page opens?", "LOGIN-011", "email auto-focus"),
    ("t4", "Is the sign-in page checked in Mozilla's browser?", "LOGIN-020", "Firefox compatibility"),
    ("t5", "What about a 320 pixel wide phone screen?", "LOGIN-023", "320px mobile layout"),
    ("t6", "Is there a check of the page zoomed to double size?", "LOGIN-030", "200 percent zoom"),
    ("t7", "Which case covers the spinner while signing in?", "LOGIN-013", "loading indicator"),
    ("t8", "Are users sent to the dashboard after a good sign-in?", "LOGIN-014", "successful dashboard redirect"),
]


@pytest.fixture(scope="module")
def own_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir of this module's own: the compare tests' shared one must stay fresh for their embed counts."""
    return tmp_path_factory.mktemp("fbdata-own")


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch: pytest.MonkeyPatch, own_data_dir: Path) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(own_data_dir))


def write_questions(folder: Path) -> Path:
    path = folder / "tune.jsonl"
    lines = [json.dumps({"id": i, "question": q, "gold": [g], "fact": f}) for i, q, g, f in QUESTIONS]
    path.write_text("\n".join([*lines, json.dumps({"id": "none", "question": "Weather on Mars?", "gold": []})]))
    return path


def test_split_is_seeded_disjoint_and_leaves_out_unanswerable() -> None:
    questions = [Question(i, q, (g,), f) for i, q, g, f in QUESTIONS] + [Question("none", "?")]
    one, again, other = (split_questions(questions, 0.5, seed) for seed in (3, 3, 4))
    assert [q.id for q in one.tuning] == [q.id for q in again.tuning]
    assert [q.id for q in one.tuning] != [q.id for q in other.tuning]
    ids = [q.id for q in one.tuning + one.held_out]
    assert sorted(ids) == sorted(i for i, *_ in QUESTIONS) and len(one.tuning) == 4
    with pytest.raises(ComparisonError, match="at least 4 questions"):
        split_questions(questions[:3], 0.5, 0)
    with pytest.raises(ComparisonError, match="between 0 and 1"):
        split_questions(questions, 1.0, 0)


@pytest.mark.slow
def test_tune_picks_on_tuning_split_and_judges_on_held_out(
    small_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = write_questions(tmp_path)
    winner = tmp_path / "out" / "winner.json"
    argv = ["tune", str(small_corpus / "naive.json"), "--questions", str(questions), "--k", "3", "--quiet"]
    code = main([*argv, "--vary", "splitter.chunk_size=300,1000", "--json", "-o", str(winner)])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["relevance"] == "strict" and result["k"] == 3 and result["chars"] == 2000
    tuning, held = result["split"]["tuning"], result["split"]["held_out"]
    assert len(tuning) == 4 and len(held) == 4 and not set(tuning) & set(held) and "none" not in tuning + held
    scores = {v["variant"]: v["tuning"]["mrr"] for v in result["variants"]}
    assert set(scores) == {"splitter.chunk_size=300", "splitter.chunk_size=1000"}
    assert scores[result["winner"]["variant"]] == max(scores.values())
    if len(set(scores.values())) == 1:  # a tie goes to the saved settings (chunk_size 1000)
        assert result["winner"]["variant"] == "splitter.chunk_size=1000"
        assert result["conclusion"].startswith("The saved settings are already the best")
    assert result["winner"]["tuning"]["questions"] == 4 and result["winner"]["held_out"]["questions"] == 4
    gain = result["winner"]["held_out"]["mrr"] - result["untuned"]["held_out"]["mrr"]
    assert result["held_out_gain"] == pytest.approx(gain)
    assert "MRR" in result["held_out_verdict"] and result["conclusion"]
    if gain <= 0 < result["tuning_gain"]:
        assert "does NOT hold" in result["conclusion"]
    saved = load_flow(winner)  # the winner, loadable, with its data path rebased and what was measured
    assert saved.node("splitter").config["chunk_size"] == int(result["winner"]["variant"].split("=")[1])
    assert (winner.parent / saved.node("loader").config["path"]).resolve() == (small_corpus / "vwo30.csv").resolve()
    assert saved.node("store").config["collection"] == "test-naive"
    assert "Tuned with `flowbuilder tune`" in saved.description and "held-out" in saved.description

    code = main([*argv, "--vary", "splitter.chunk_size=300,1000", "--metric", "hit@chars", "--chars", "400"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "hit@400ch" in out and "On the held-out split" in out and "relevance: strict" in out


def test_tune_usage_errors_name_the_problem(small_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["tune", str(small_corpus / "naive.json"), "--questions", str(small_corpus / "questions.jsonl")]
    assert main([*argv, "--vary", "splitter.nope=1,2"]) == 2
    assert "has no field 'nope'" in capsys.readouterr().err
    assert main([*argv, "--vary", "splitter.chunk_size=300,500", "--split", "1.5"]) == 2
    assert "--split" in capsys.readouterr().err
