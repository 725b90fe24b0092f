"""Lenient vs strict relevance: a chunk that names a gold record but holds only part of it.

Unit tests on hand-made documents (record spans and chunk offsets written out), then the real small
flows (first 30 VWO rows; local MiniLM, embedded Chroma) through ``FlowComparer`` and the CLI.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.chunk_stats import WholeRecordIndex, whole_records
from flowbuilder.evaluation.compare import ComparisonError, FlowComparer, rejudge
from flowbuilder.evaluation.metrics import check_relevance, is_relevant, judge_hits, normalise
from flowbuilder.evaluation.questions import Question

from .small_flows import IMPROVED_TEMPLATE
from .test_compare_cli import compare_argv

ROWS = ["R1,alpha apple", "R2,beta banana berry", "R3,gamma grape"]


def whole_text() -> Document:
    """A naive "whole CSV" document: a header line, then three records with their spans."""
    text = "id,desc\n" + "\n".join(ROWS) + "\n"
    spans = [[row.split(",")[0], text.index(row), text.index(row) + len(row)] for row in ROWS]
    return Document(text=text, metadata={"source": "t.csv", "record_spans": spans})


def chunk_of(doc: Document, piece: str, **metadata: Any) -> Document:
    start = doc.text.index(piece)
    return Document(text=piece, metadata={"source": doc.source, "start": start, "end": start + len(piece), **metadata})


def as_hits(chunks: list[Document]) -> list[Hit]:
    """What a store gives back: copies of the chunks (matched on text and offsets, not identity)."""
    return [Hit(document=c.model_copy(deep=True), score=1.0 - i / 10, rank=i + 1) for i, c in enumerate(chunks)]


@pytest.fixture
def cut_chunks() -> tuple[Document, list[Document]]:
    doc = whole_text()
    chunks = [
        chunk_of(doc, "id,desc\nR1,alpha apple", record_ids=["R1"]),
        chunk_of(doc, "R2,beta", record_ids=["R2"]),  # names R2, holds only its first half
        chunk_of(doc, "banana berry\nR3,gamma grape", record_ids=["R2", "R3"]),
    ]
    return doc, chunks


def test_whole_records_follow_the_spans(cut_chunks: tuple[Document, list[Document]]) -> None:
    doc, chunks = cut_chunks
    assert whole_records([doc], chunks) == [{"R1"}, set(), {"R3"}]
    index = WholeRecordIndex([doc], chunks)
    assert [set(index(hit.document)) for hit in as_hits(chunks)] == [{"R1"}, set(), {"R3"}]
    stranger = Document(text="R2,beta banana berry", metadata={"source": "other.csv", "record_id": "R2"})
    assert index(stranger) == frozenset()  # not one of this flow's chunks


def test_a_chunk_holding_part_of_a_record_counts_only_when_lenient(
    cut_chunks: tuple[Document, list[Document]],
) -> None:
    doc, chunks = cut_chunks
    index = WholeRecordIndex([doc], chunks)
    question = Question("q", "which test covers beta?", ("R2",))
    hits = as_hits(chunks)
    lenient = judge_hits(question, hits, 3)
    strict = judge_hits(question, hits, 3, relevance="strict", whole_records=index)
    assert lenient.relevant == [False, True, True] and lenient.first_rank == 2
    assert strict.relevant == [False, False, False] and strict.first_rank is None
    assert strict.recall == 0.0 and strict.gold_ranks == {"R2": None}
    assert strict.whole == [["R1"], [], ["R3"]] and lenient.whole is None
    assert strict.to_dict()["relevance"] == "strict" and strict.to_dict()["hits"][2]["whole_records"] == ["R3"]

    # A chunk that holds R2 whole is relevant in both modes.
    whole_r2 = chunk_of(doc, "R2,beta banana berry", record_ids=["R2"])
    index = WholeRecordIndex([doc], [*chunks, whole_r2])
    strict = judge_hits(question, as_hits([*chunks, whole_r2]), 4, relevance="strict", whole_records=index)
    assert strict.relevant == [False, False, False, True] and strict.first_rank == 4 and strict.recall == 1.0


def test_strict_with_a_fact_judges_by_the_fact_alone(cut_chunks: tuple[Document, list[Document]]) -> None:
    doc, chunks = cut_chunks
    index = WholeRecordIndex([doc], chunks)
    question = Question("q", "?", ("R2",), "Banana  BERRY")
    strict = judge_hits(question, as_hits(chunks), 3, relevance="strict", whole_records=index)
    assert strict.relevant == [False, False, True]
    assert strict.gold_ranks == {"R2": 3} and strict.recall == 1.0
    # R1 is whole in chunk 0, but the fact decides: a question about R1 with another fact finds nothing there.
    assert not is_relevant(chunks[0], Question("q", "?", ("R1",), "kiwi"), "strict", index)
    assert is_relevant(chunks[0], Question("q", "?", ("R1",), "kiwi"), "lenient", index)


def test_strict_equals_lenient_on_one_record_per_chunk() -> None:
    records = [Document(text=row, metadata={"source": "t.csv", "record_id": row.split(",")[0]}) for row in ROWS]
    # splitter.record: every chunk is its whole record (offsets over the record's own text).
    chunks = [r.model_copy(update={"metadata": {**r.metadata, "start": 0, "end": len(r.text)}}) for r in records]
    index = WholeRecordIndex(records, chunks)
    hits = as_hits(list(reversed(chunks)))
    for question in (
        Question("a", "?", ("R1",)),
        Question("b", "?", ("R2", "R3")),
        Question("c", "?", ("R9",)),
        Question("d", "?", ("R3",), "gamma"),
    ):
        lenient, strict = (
            judge_hits(question, hits, 3),
            judge_hits(question, hits, 3, relevance="strict", whole_records=index),
        )
        assert strict.relevant == lenient.relevant
        assert (strict.first_rank, strict.recall, strict.ndcg) == (lenient.first_rank, lenient.recall, lenient.ndcg)
    # ...but a per-record chunk with only the start of its record is not whole.
    part = chunks[1].model_copy(update={"text": "R2,beta", "metadata": {**chunks[1].metadata, "end": 7}})
    assert WholeRecordIndex(records, [part])(part) == frozenset()
    assert judge_hits(Question("b", "?", ("R2",)), as_hits([part]), 1).first_rank == 1
    assert judge_hits(Question("b", "?", ("R2",)), as_hits([part]), 1, relevance="strict").first_rank is None


def test_unknown_mode_is_refused(small_corpus: Path) -> None:
    with pytest.raises(ValueError, match="use one of: lenient, strict"):
        check_relevance("loose")
    questions = [Question("q", "?", ("R1",))]
    with pytest.raises(ComparisonError, match="unknown relevance mode 'loose'"):
        FlowComparer().compare(
            small_corpus / "naive.json", small_corpus / "labelled.json", questions, 3, relevance="loose"
        )  # type: ignore[arg-type]


# -- the small real flows ------------------------------------------------------------------------


def improved_records(folder: Path) -> dict[str, str]:
    """Every CSV row rendered as the improved flow's labeller renders it (the oracle for "whole")."""
    with (folder / "vwo30.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rendered = {}
    for row in rows:
        text = IMPROVED_TEMPLATE
        for column, value in row.items():
            text = text.replace("{" + column + "}", value)
        rendered[row["Scenario TID"]] = normalise(text)
    return rendered


@pytest.mark.slow
def test_strict_on_the_small_flows(
    monkeypatch: pytest.MonkeyPatch, compare_data_dir: Path, small_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(compare_data_dir))
    questions_file = small_corpus / "questions.jsonl"
    code = main([*compare_argv(small_corpus, "improved.json", "labelled.json", "--k", "10", "--quiet", "--json")])
    lenient_out = capsys.readouterr().out
    assert code == 0
    code = main(
        [*compare_argv(small_corpus, "improved.json", "labelled.json", "--k", "10", "--quiet", "--json"),
         "--relevance", "strict"]
    )  # fmt: skip
    assert code == 0
    lenient, strict = json.loads(lenient_out), json.loads(capsys.readouterr().out)
    assert (lenient["relevance"], strict["relevance"]) == ("lenient", "strict")
    assert strict["a"]["relevance"] == strict["b"]["relevance"] == "strict"
    gold = {q["id"]: set(q["gold"]) for q in map(json.loads, questions_file.read_text().splitlines())}

    # Improved flow (labelled records joined, re-split at 1000 chars): it cuts records.
    rendered = improved_records(small_corpus)
    partial_hits = 0
    for loose, tight in zip(lenient["a"]["questions"], strict["a"]["questions"], strict=True):
        for loose_hit, hit in zip(loose["hits"], tight["hits"], strict=True):
            assert hit["text"] == loose_hit["text"]
            held = sorted(rid for rid, text in rendered.items() if text in normalise(hit["text"]))
            assert hit["whole_records"] == held
            assert hit["relevant"] == bool(set(held) & gold[tight["id"]])
            if set(hit["records"]) & gold[tight["id"]] and not set(held) & gold[tight["id"]]:
                partial_hits += 1
                assert loose_hit["relevant"] and not hit["relevant"]
    assert partial_hits > 0  # a chunk naming a gold record without holding it: lenient yes, strict no
    assert strict["a"]["metrics"]["mrr"] < lenient["a"]["metrics"]["mrr"]

    # Labelled flow (one record per chunk): strict judges exactly as lenient.
    for loose, tight in zip(lenient["b"]["questions"], strict["b"]["questions"], strict=True):
        assert [h["relevant"] for h in tight["hits"]] == [h["relevant"] for h in loose["hits"]]
        assert all(h["whole_records"] == h["records"] for h in tight["hits"])
    assert strict["b"]["metrics"] == lenient["b"]["metrics"]

    # Re-judging the lenient comparison's hits gives the strict comparison (without searching again).
    from flowbuilder.evaluation.questions import load_questions

    comparer = FlowComparer()
    questions = load_questions(questions_file)
    before = comparer.compare(small_corpus / "improved.json", small_corpus / "labelled.json", questions, 10)
    rejudged = rejudge(before, "strict").to_dict()
    assert rejudged["relevance"] == "strict"
    for side in ("a", "b"):
        assert rejudged[side]["metrics"] == strict[side]["metrics"]
        assert rejudged[side]["questions"] == strict[side]["questions"]
    assert rejudged["questions"] == strict["questions"]


def test_text_report_names_the_mode(
    small_corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, compare_data_dir: Path
) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(compare_data_dir))
    assert main(compare_argv(small_corpus, "naive.json", "labelled.json", "--quiet", "--relevance", "strict")) == 0
    assert "relevance: strict (a chunk is relevant if it contains the fact" in capsys.readouterr().out
    assert main(compare_argv(small_corpus, "naive.json", "labelled.json", "--quiet")) == 0
    assert "relevance: lenient (a chunk is relevant if its metadata names a gold record" in capsys.readouterr().out


def test_bad_relevance_exits_2(small_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(compare_argv(small_corpus, "naive.json", "labelled.json", "--relevance", "loose"))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--relevance: invalid choice: 'loose'" in err and "'lenient', 'strict'" in err
    assert "Traceback" not in err
