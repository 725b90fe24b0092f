"""Every shipped flow (``flows/**/*.json``) runs through ``compare`` and ``eval`` on a small question set.

A fair, fast copy of each flow: the loader reads a slice of its own data (the first 30 records of a CSV,
the first 40 of the 5,000 cases; the docs folder and the PRD PDF whole) and the questions' gold lies in
the slice. Everything else is the flow as shipped, so a setting compare cannot run (a reranker's
``candidates`` below the deeper search's ``keep``, say) fails here. No LLM answers offline: ``eval`` must
report the failing node per question, not crash.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.examples import flows_dir

ROOT = Path(__file__).resolve().parents[2]
FLOWS = sorted(flows_dir().glob("**/*.json"))

QUESTIONS = {
    "VWO_500_Test_Cases.csv": [
        {"id": "s1", "question": "Which test checks that the secret typed at sign-in is hidden?", "gold": ["LOGIN-008"],
         "fact": "password masking"},
        {"id": "s2", "question": "Can I press Return to send the sign-in form?", "gold": ["LOGIN-010"],
         "fact": "Enter-key submission"},
    ],
    "vwo_5000_test_cases.csv": [
        {"id": "s1", "question": "How is data collection checked in SmartCode?", "gold": ["VWO-1001"],
         "fact": "ensure data collection"},
        {"id": "s2", "question": "Where is the layout of the funnel step drop-off verified?", "gold": ["VWO-1002"],
         "fact": "verify layout of step drop-off"},
    ],
    "docs": [
        {"id": "s1", "question": "Which Python version does the CLI need?", "gold": ["getting-started.md"],
         "fact": "Python 3.10 or newer"},
        {"id": "s2", "question": "What if my machine has no web browser to log in?", "gold": ["getting-started.md"],
         "fact": "pass `--device`"},
    ],
    "qa-handbook": [
        {"id": "s1", "question": "When do we stop merging before a release?", "gold": [],
         "fact": "14:00 on the Tuesday"},
        {"id": "s2", "question": "Which card number fails every payment?", "gold": [], "fact": "ending in 0002"},
    ],
    "VWO_Login_Dashboard_PRD.pdf": [
        {"id": "s1", "question": "How many brands use VWO?", "gold": ["VWO_Login_Dashboard_PRD.pdf#page1"],
         "fact": "4,000 brands"},
        {"id": "s2", "question": "Who uses the login dashboard?", "gold": ["VWO_Login_Dashboard_PRD.pdf#page1"],
         "fact": "Digital marketers"},
    ],
}  # fmt: skip
SLICE = {"VWO_500_Test_Cases.csv": 30, "vwo_5000_test_cases.csv": 40}


def slice_csv(source: Path, rows: int, target: Path) -> None:
    with source.open(encoding="utf-8-sig", newline="") as handle:
        records = list(csv.reader(handle))[: rows + 1]
    with target.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(records)


def test_copy(flow_path: Path, folder: Path) -> tuple[Path, Path]:
    """A copy of the flow reading a slice of its data, and the question set for that data."""
    flow: dict[str, Any] = json.loads(flow_path.read_text(encoding="utf-8"))
    data = None
    for node in flow["nodes"]:
        if node["type"] == "loader.file":
            source = (flow_path.parent / node["config"]["path"]).resolve()
            data = source.name
            if data in SLICE:
                target = folder / data
                slice_csv(source, SLICE[data], target)
                source = target
            node["config"]["path"] = str(source)
        if node["type"].startswith("llm."):
            node["config"]["base_url"] = "http://127.0.0.1:9"  # nothing listens on the discard port
    assert data in QUESTIONS, f"{flow_path}: add a small question set for its data '{data}'"
    copy = folder / flow_path.name
    copy.write_text(json.dumps(flow), encoding="utf-8")
    questions = folder / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in QUESTIONS[data]) + "\n", encoding="utf-8")
    return copy, questions


test_copy.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def own_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir of this module's own: the compare tests' shared one must stay fresh for their embed counts."""
    return tmp_path_factory.mktemp("fbdata-own")


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch: pytest.MonkeyPatch, own_data_dir: Path) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(own_data_dir))


def test_every_shipped_flow_is_covered() -> None:
    assert len(FLOWS) >= 14 and {p.name for p in FLOWS} >= {"advanced_rag_5000.json", "agent_rag.json", "pdf_rag.json"}


@pytest.mark.slow
@pytest.mark.parametrize("flow_path", FLOWS, ids=lambda p: str(p.relative_to(flows_dir())))
def test_compare_and_eval_run_on_every_flow(
    flow_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy, questions = test_copy(flow_path, tmp_path)
    code = main(["compare", str(copy), str(copy), "--questions", str(questions), "--k", "3", "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["relevance"] == "strict" and report["k"] == 3  # the questions carry facts
    for flow in report["flows"]:
        assert flow["metrics"]["questions"] == 2 and flow["stats"]["chunks"] > 0
        assert len(flow["questions"]) == 2 and all(len(q["hits"]) <= 3 for q in flow["questions"])
        assert "hit@chars" in flow["metrics"] and flow["metrics"]["chars"] > 0
    if flow_path.name == "advanced_rag_5000.json":
        assert any("candidates" in note for note in report["flows"][0]["adjusted"])

    outputs = [n["id"] for n in json.loads(copy.read_text())["nodes"] if n["type"] == "chat.output"]
    answer = ["--answer", outputs[0]] if len(outputs) > 1 else []  # eval asks which when there are several
    code = main(["eval", str(copy), "--questions", str(questions), "--json", "--quiet", *answer])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    evaluation = json.loads(out)
    assert evaluation["relevance"] == "strict"
    assert [r["id"] for r in evaluation["results"]] == ["s1", "s2"]
    for result in evaluation["results"]:
        # an offline LLM is reported per question (naming what failed), never a crash
        assert result["verdict"] != "error" or result["error"], result
    # no thresholds given: exit 1 exactly when a question did not run to an answer
    assert code == (1 if any(r["verdict"] == "error" for r in evaluation["results"]) else 0), evaluation["metrics"]
