"""``flowbuilder compare`` on small real flows: local MiniLM, embedded Chroma on disk, real nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.evaluation.metrics import normalise


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch: pytest.MonkeyPatch, compare_data_dir: Path) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(compare_data_dir))


def compare_argv(folder: Path, flow_a: str, flow_b: str, *extra: str) -> list[str]:
    """``compare FLOW_A FLOW_B --questions questions.jsonl EXTRA...`` on files of the small corpus."""
    questions = str(folder / "questions.jsonl")
    return ["compare", str(folder / flow_a), str(folder / flow_b), "--questions", questions, *extra]


def run_json(capsys: pytest.CaptureFixture[str], folder: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code = main(compare_argv(folder, "naive.json", "labelled.json", "--json", *extra))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def check_judgement(flow: dict[str, Any], questions: dict[str, dict[str, Any]], k: int) -> None:
    """Recompute every relevance flag, rank and metric from the raw hits in the JSON."""
    first_ranks = []
    for item in flow["questions"]:
        question = questions[item["id"]]
        assert len(item["hits"]) <= k
        for hit in item["hits"]:
            fact = question.get("fact")
            expected = bool(set(hit["records"]) & set(question["gold"])) or bool(
                fact and normalise(fact) in normalise(hit["text"])
            )
            assert hit["relevant"] == expected
        ranks = [h["rank"] for h in item["hits"] if h["relevant"]]
        assert item["first_rank"] == (min(ranks) if ranks else None)
        if question["gold"]:
            first_ranks.append(item["first_rank"])
    metrics = flow["metrics"]
    assert metrics["questions"] == len(first_ranks)
    assert metrics["unanswerable"] == len(questions) - len(first_ranks)
    assert metrics["hit@1"] == pytest.approx(sum(r == 1 for r in first_ranks) / len(first_ranks))
    assert metrics["hit@k"] == pytest.approx(sum(r is not None for r in first_ranks) / len(first_ranks))
    assert metrics["mrr"] == pytest.approx(sum(1 / r for r in first_ranks if r) / len(first_ranks))


@pytest.mark.slow
def test_compare_reports_stats_metrics_and_reuses_embeddings(
    capsys: pytest.CaptureFixture[str], small_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its own data dir: the session's shared one may already hold these chunks' embeddings from another module.
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    questions = {q["id"]: q for q in map(json.loads, (small_corpus / "questions.jsonl").read_text().splitlines())}
    code, first, err = run_json(capsys, small_corpus, "--k", "3")
    assert code == 0, err
    assert "embedding" in err  # progress on stderr while the store embeds
    naive, labelled = first["a"], first["b"]
    # A fresh data dir: every chunk reaches the model once and is added to the store.
    assert naive["embedded"] == naive["added"] == naive["store_count"] == 31
    assert labelled["embedded"] == labelled["added"] == labelled["store_count"] == 30
    assert naive["stats"]["chunks"] == 31  # header + one oversize chunk per row
    assert naive["stats"]["records"] == 30 and naive["stats"]["records_cut"] == 0
    assert naive["stats"]["chunks_with_labels"] == 0
    assert naive["stats"]["chunks_over_token_limit"] == 30
    assert labelled["stats"]["chunks"] == 30 and labelled["stats"]["records_cut"] == 0
    assert labelled["stats"]["chunks_with_labels"] == 30
    for flow in (naive, labelled):
        check_judgement(flow, questions, 3)
        assert flow["metrics"]["hit@k"] < 1  # q3's gold record is not in these 30 rows
    # The unanswerable question is listed, not compared.
    assert [row["winner"] for row in first["questions"] if row["id"] == "q4"] == ["-"]
    assert first["wins_a"] + first["wins_b"] + first["ties"] == 3

    # Same flows, another k: nothing reaches the model again and the stores hold the same entries.
    code, second, err = run_json(capsys, small_corpus, "--k", "2")
    assert code == 0, err
    assert second["k"] == 2
    for before, after in ((naive, second["a"]), (labelled, second["b"])):
        assert after["embedded"] == 0
        assert after["added"] == 0
        assert after["store_count"] == before["store_count"]
        assert after["stats"] == before["stats"]
        check_judgement(after, questions, 2)


@pytest.mark.slow
def test_thresholds_apply_to_flow_b(capsys: pytest.CaptureFixture[str], small_corpus: Path) -> None:
    code, report, _ = run_json(capsys, small_corpus, "--quiet")
    hit_b, mrr_b = report["b"]["metrics"]["hit@k"], report["b"]["metrics"]["mrr"]
    assert hit_b < 1
    code, _, err = run_json(capsys, small_corpus, "--quiet", "--min-hit-at-k", str(hit_b), "--min-mrr", str(mrr_b))
    assert code == 0, err
    code, _, err = run_json(capsys, small_corpus, "--quiet", "--min-hit-at-k", "1.0")
    assert code == 1
    assert "THRESHOLD FAILED" in err and "(B): hit@5" in err
    code, _, err = run_json(capsys, small_corpus, "--quiet", "--min-mrr", str(min(1.0, mrr_b + 0.01)))
    assert code == 1 and "MRR" in err


def test_text_report(capsys: pytest.CaptureFixture[str], small_corpus: Path) -> None:
    code = main(compare_argv(small_corpus, "naive.json", "labelled.json", "--quiet"))
    out = capsys.readouterr().out
    assert code == 0
    for label in ("chunks with column labels", "records cut", "hit@1", "hit@5", "MRR", "recall@5", "B vs A:"):
        assert label in out
    assert "q4" in out and "n/a" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.json", "labelled.json", "--questions", "questions.jsonl"], "missing.json: no such flow file"),
        (["naive.json", "labelled.json", "--questions", "nope.jsonl"], "nope.jsonl: no such question file"),
        (["naive.json", "labelled.json", "--questions", "questions.jsonl", "--k", "0"], "--k must be at least 1"),
        (["naive.json", "labelled.json", "--questions", "questions.jsonl", "--min-mrr", "2"], "between 0 and 1"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], small_corpus: Path, args: list[str], message: str
) -> None:
    argv = ["compare", *[str(small_corpus / a) if a.endswith((".json", ".jsonl")) else a for a in args]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_question_line_exits_2(capsys: pytest.CaptureFixture[str], small_corpus: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "ok"}\n{"id": "b"}\n', encoding="utf-8")
    code = main(
        ["compare", str(small_corpus / "naive.json"), str(small_corpus / "labelled.json"), "--questions", str(bad)]
    )
    assert code == 2
    assert f"{bad}: line 2" in capsys.readouterr().err


def test_flow_without_store_exits_1(capsys: pytest.CaptureFixture[str], small_corpus: Path) -> None:
    code = main(compare_argv(small_corpus, "no_store.json", "labelled.json", "--quiet"))
    assert code == 1
    err = capsys.readouterr().err
    assert "has no vector store node" in err and "loader.file" in err
