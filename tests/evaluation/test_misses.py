"""Why a miss happened: cut, ranked below k (with per-leg ranks), past the token limit, or in no chunk."""

from __future__ import annotations

from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.chunk_stats import WholeRecordIndex
from flowbuilder.evaluation.misses import MissClassifier, fact_read, leg_ranks
from flowbuilder.evaluation.questions import Question

TEXT = "id,desc\nR1,alpha apple\nR2,beta banana berry\nR3,gamma grape\n"


def whole() -> Document:
    lines = (("R1", "R1,alpha apple"), ("R2", "R2,beta banana berry"), ("R3", "R3,gamma grape"))
    spans = [[rid, TEXT.index(line), TEXT.index(line) + len(line)] for rid, line in lines]
    return Document(text=TEXT, metadata={"source": "t.csv", "record_spans": spans})


def chunk(piece: str, *records: str) -> Document:
    start = TEXT.index(piece)
    return Document(text=piece, metadata={"source": "t.csv", "start": start, "end": start + len(piece),
                                          "record_ids": list(records)})  # fmt: skip


CHUNKS = [
    chunk("id,desc\nR1,alpha apple", "R1"),
    chunk("R2,beta", "R2"),
    chunk("banana berry\nR3,gamma grape", "R2", "R3"),
]


def hits(*docs: Document, legs: dict[str, dict[str, float]] | None = None) -> list[Hit]:
    return [Hit(document=d, score=1 - i / 10, rank=i + 1, legs=legs or {}) for i, d in enumerate(docs)]


def classifier(relevance: str = "strict", truncation: object = None) -> MissClassifier:
    inputs = [whole()]
    return MissClassifier(
        inputs,
        CHUNKS,
        relevance=relevance,  # type: ignore[arg-type]
        whole_records=WholeRecordIndex(inputs, CHUNKS),
        truncation=truncation,  # type: ignore[arg-type]
        token_limit=4,
    )


def test_cut_no_chunk_and_below_k() -> None:
    strict = classifier()
    # "beta banana" spans the boundary between chunks 1 and 2: the inputs hold it, no chunk does.
    cut = strict.classify(Question("q", "?", ("R2",), "beta banana"), hits(CHUNKS[0]), 1)
    assert cut.kind == "cut"
    assert strict.fact_split(Question("q", "?", ("R2",), "beta banana"))
    assert strict.classify(Question("q", "?", ("R2",)), hits(CHUNKS[0]), 1).kind == "cut"  # R2 is never whole
    gone = strict.classify(Question("q", "?", ("R9",), "kiwi"), hits(CHUNKS[0]), 1)
    assert gone.kind == "no_chunk" and not strict.fact_split(Question("q", "?", ("R9",), "kiwi"))
    assert strict.classify(Question("q", "?", ("R9",)), hits(CHUNKS[0]), 1).kind == "no_chunk"
    # R3 is whole in chunk 2, which the deeper search ranks 3rd; its legs come along.
    legs = {"dense": {"rank": 7, "score": 0.5}, "keyword": {"rank": 2, "score": 3.1}}
    deep = hits(CHUNKS[0], CHUNKS[1], CHUNKS[2], legs=legs)
    below = strict.classify(Question("q", "?", ("R3",), "gamma grape"), deep, 1)
    assert (below.kind, below.rank, below.legs) == ("below_k", 3, {"dense": 7, "keyword": 2})
    assert below.detail == "first relevant chunk at rank 3 (dense 7, keyword 2)"
    beyond = strict.classify(Question("q", "?", ("R3",), "gamma grape"), deep[:2], 1)
    assert beyond.kind == "below_k" and beyond.rank is None
    # Lenient: a chunk naming R2 is relevant, so R2 is ranked low rather than cut.
    assert classifier("lenient").classify(Question("q", "?", ("R2",)), deep, 1).rank == 2


def test_past_the_token_limit() -> None:
    def stops_after_eight(text: str) -> int | None:
        return 8 if len(text) > 8 else None

    limited = classifier(truncation=stops_after_eight)
    # "gamma grape" starts at character 13 of chunk 2: the model stopped reading at 8.
    miss = limited.classify(Question("q", "?", ("R3",), "gamma grape"), hits(CHUNKS[0]), 1)
    assert miss.kind == "past_token_limit" and "4-token limit" in miss.detail
    # "banana berry" runs to character 12 of chunk 2: only partly read, so it is past the limit too...
    assert limited.classify(Question("q", "?", ("R2",), "banana berry"), hits(CHUNKS[0]), 1).kind == "past_token_limit"
    # ...while "banana" (characters 0-6) and "R2,beta" (chunk 1's first 7) are read: the misses are ranking ones.
    assert limited.classify(Question("q", "?", ("R2",), "banana"), hits(CHUNKS[0]), 1).kind == "below_k"
    assert limited.classify(Question("q", "?", ("R2",), "R2,beta"), hits(CHUNKS[0], CHUNKS[1]), 1).kind == "below_k"
    assert fact_read("Alpha  APPLE pie", "alpha apple", lambda text: 12)
    assert not fact_read("pie and alpha apple", "alpha apple", lambda text: 12)
    assert fact_read("anything", "zzz", lambda text: None)


def test_leg_ranks_are_read_defensively() -> None:
    plain = Hit(document=Document(text="x"), score=1.0, rank=1)
    assert leg_ranks(plain) == {}
    fused = Hit(document=Document(text="x"), score=1.0, rank=1, legs={"dense": {"rank": 3.0, "score": 0.2}})
    assert leg_ranks(fused) == {"dense": 3}
