"""The verdicts the issue names, on the real example flows (500 VWO rows, local MiniLM, embedded Chroma):
naive vs row-labelled on the dev set is noise; the course's improved-as-exported flow against row-labelled
under strict relevance is a clear difference. One comparison, re-judged, gives both."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.evaluation.compare import FlowComparer, FlowSource, rejudge
from flowbuilder.evaluation.questions import load_questions

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_dev_set_verdicts(monkeypatch: pytest.MonkeyPatch, compare_data_dir: Path) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(compare_data_dir))
    flows = REPO / "flows"
    sources = [FlowSource(flows / name) for name in
               ("row_labelled_csv_rag.json", "naive_csv_rag.json", "langflow_improved_csv_rag.json")]  # fmt: skip
    questions = load_questions(REPO / "data" / "questions" / "vwo500_dev.jsonl")
    lenient = FlowComparer().compare_many(sources, questions, 5)
    naive = lenient.pairs[0]
    assert (naive.a.name, naive.b.name) == ("Row-labelled CSV RAG", "Naive CSV RAG")
    assert (naive.rank_test.wins, naive.rank_test.losses, naive.rank_test.ties) == (2, 2, 66)
    assert not naive.significant
    mrr = naive.differences["mrr"]
    assert mrr.low < 0 < mrr.high and mrr.n == 70
    assert naive.verdict.startswith("no detectable difference on 70 questions (MRR ")

    strict = rejudge(lenient, "strict")
    improved = strict.pairs[1]
    assert improved.b.name == "LangFlow-improved CSV RAG"
    # Seen from the improved flow: 1 win, 60 losses against row-labelled.
    assert (improved.rank_test.wins, improved.rank_test.losses) == (1, 60)
    assert improved.significant and improved.rank_test.p_value < 1e-10
    diff = improved.differences["mrr"]
    assert diff.high < -0.4
    assert improved.verdict.startswith("A better than C (MRR −0.587, 95% CI −")
    # Every miss of the improved flow is explained; its cut records rank the fact low.
    counts = improved.b.miss_counts()
    assert sum(counts.values()) == sum(1 for o in improved.b.outcomes if o.first_rank is None) == 18
    assert counts["below_k"] == 18
    # Naive lines are longer than MiniLM reads: all 500 data chunks are over the limit.
    assert naive.b.stats.chunks_over_token_limit == 500
