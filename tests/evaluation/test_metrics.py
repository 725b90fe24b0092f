"""Ranking metrics judged on records and facts (never chunk ids)."""

from __future__ import annotations

import math

import pytest

from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.metrics import aggregate, chunk_records, compare_ranks, is_relevant, judge_hits
from flowbuilder.evaluation.questions import Question


def hit(text: str, rank: int, **metadata: object) -> Hit:
    return Hit(document=Document(text=text, metadata=dict(metadata)), score=1.0 / rank, rank=rank)


def test_relevance_by_record_id_record_ids_or_fact() -> None:
    q = Question("q", "?", ("ABTEST-018",), "Allocation total  NOT 100")
    assert is_relevant(Document(text="x", metadata={"record_id": "ABTEST-018"}), q)
    assert is_relevant(Document(text="x", metadata={"record_ids": ["LOGIN-001", "ABTEST-018"]}), q)
    assert is_relevant(Document(text="x", metadata={"record_ids": '["ABTEST-018"]'}), q)
    assert is_relevant(Document(text="Verify: allocation total\nnot 100 ok", metadata={}), q)
    assert not is_relevant(Document(text="allocation total not 10", metadata={"record_id": "ABTEST-019"}), q)


def test_chunk_records_reads_all_shapes() -> None:
    doc = Document(text="", metadata={"record_id": "A", "record_ids": "B, C"})
    assert chunk_records(doc) == {"A", "B", "C"}


def test_first_rank_recall_and_ndcg() -> None:
    q = Question("q", "?", ("A", "B"))
    hits = [hit("x", 1, record_id="Z"), hit("x", 2, record_id="A"), hit("x", 3, record_ids=["A", "Q"])]
    outcome = judge_hits(q, hits, k=3)
    assert outcome.first_rank == 2
    assert outcome.relevant == [False, True, True]
    assert outcome.recall == 0.5
    assert outcome.gold_ranks == {"A": 2, "B": None}
    # One new gold item at rank 2; the ideal has two at ranks 1 and 2.
    assert outcome.ndcg == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_k_cuts_the_list() -> None:
    q = Question("q", "?", ("A",))
    hits = [hit("x", 1, record_id="Z"), hit("x", 2, record_id="Y"), hit("x", 3, record_id="A")]
    assert judge_hits(q, hits, k=2).first_rank is None
    assert judge_hits(q, hits, k=3).first_rank == 3


def test_aggregate_skips_unanswerable_but_counts_them() -> None:
    answerable = [
        judge_hits(Question("1", "?", ("A",)), [hit("x", 1, record_id="A")], 5),
        judge_hits(Question("2", "?", ("B",)), [hit("x", 1, record_id="Z"), hit("x", 2, record_id="B")], 5),
        judge_hits(Question("3", "?", ("C",)), [hit("x", 1, record_id="Z")], 5),
        judge_hits(Question("4", "?", (), "the fact"), [hit("no", 1), hit("has the fact", 2)], 5),
    ]
    unanswerable = judge_hits(Question("5", "?", ()), [hit("x", 1, record_id="A")], 5)
    metrics = aggregate([*answerable, unanswerable], 5)
    assert metrics.questions == 4 and metrics.unanswerable == 1
    assert metrics.hit_at_1 == pytest.approx(1 / 4)
    assert metrics.hit_at_k == pytest.approx(3 / 4)
    assert metrics.mrr == pytest.approx((1 + 0.5 + 0 + 0.5) / 4)
    assert metrics.recall_at_k == pytest.approx(3 / 4)


def test_fact_counts_for_the_single_gold_record() -> None:
    q = Question("q", "?", ("A",), "needle")
    outcome = judge_hits(q, [hit("hay needle hay", 1, record_id="Other")], 5)
    assert outcome.first_rank == 1 and outcome.recall == 1.0 and outcome.gold_ranks == {"A": 1}


@pytest.mark.parametrize(
    ("a", "b", "winner"), [(1, 2, "a"), (3, 1, "b"), (2, 2, "tie"), (None, 4, "b"), (None, None, "tie")]
)
def test_compare_ranks(a: int | None, b: int | None, winner: str) -> None:
    assert compare_ranks(a, b) == winner
