"""retriever.keyword: BM25 and overlap scores, filters, the saved index and mirroring a Chroma store."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.data import Document
from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.local import LocalEmbedder
from flowbuilder.nodes.hybrid.keyword import KeywordConfig, KeywordIndex, KeywordRetrieverNode
from flowbuilder.nodes.hybrid.terms import tokenize
from flowbuilder.nodes.vectorstores.chroma import ChromaConfig, ChromaNode
from tests.nodes.test_chroma import vwo_records

DOCS = [
    Document(text="Sign-in with two-step verification code", metadata={"record_id": "A", "kind": "x"}),
    Document(text="Password reset email is sent", metadata={"record_id": "B", "kind": "y"}),
    Document(text="Verification of the password policy and password length", metadata={"record_id": "C", "kind": "y"}),
]


def index(scorer: str = "bm25") -> KeywordIndex:
    return KeywordIndex([f"id{i}" for i in range(len(DOCS))], DOCS, scorer=scorer)  # type: ignore[arg-type]


def test_tokenize_lowercases_and_drops_stopwords() -> None:
    assert tokenize("The Password of THE user", frozenset({"the", "of"})) == ["password", "user"]


def test_bm25_ranks_by_term_weight_and_drops_non_matches() -> None:
    found = index().search("password length", k=5)
    assert [h.document.metadata["record_id"] for h in found] == ["C", "B"]  # A shares no term
    assert found[0].score > found[1].score > 0
    assert found[0].legs == {"keyword": {"rank": 1, "score": found[0].score}}
    assert index().search("zebra", k=5) == []


def test_overlap_scores_share_of_question_words() -> None:
    found = index("overlap").search("verification code password", k=5)
    assert [(h.document.metadata["record_id"], round(h.score, 3)) for h in found] == [
        ("A", 0.667),
        ("C", 0.667),
        ("B", 0.333),
    ]


def test_where_filters_before_ranking() -> None:
    found = index().search("password", k=5, where={"kind": "y"})
    assert {h.document.metadata["record_id"] for h in found} == {"B", "C"}
    assert index().search("verification", k=5, where={"record_id": "B"}) == []


def test_node_saves_index_and_loads_it_after_restart(tmp_path: Path) -> None:
    node = KeywordRetrieverNode(KeywordConfig(k=2))
    ctx = RunContext("kw", data_dir=tmp_path)
    out = node.run({"documents": [DOCS], "query": "password length"}, ctx)
    assert ctx.details["index"] == "built and saved" and ctx.details["indexed"] == 3
    assert (tmp_path / "keyword-index" / "default" / "index.json").is_file()
    ctx2 = RunContext("kw", data_dir=tmp_path)
    again = KeywordRetrieverNode(KeywordConfig(k=2)).run({"documents": [DOCS], "query": "password length"}, ctx2)
    assert ctx2.details["index"] == "loaded from disk"
    assert [(h.id, h.score) for h in again["hits"]] == [(h.id, h.score) for h in out["hits"]]
    ctx3 = RunContext("kw", data_dir=tmp_path)
    KeywordRetrieverNode(KeywordConfig(k=2)).run({"documents": [DOCS[:2]], "query": "password"}, ctx3)
    assert ctx3.details["index"] == "built and saved" and ctx3.details["indexed"] == 2


def test_query_variants_are_fused(tmp_path: Path) -> None:
    ctx = RunContext("kw", data_dir=tmp_path)
    out = KeywordRetrieverNode(KeywordConfig(k=3)).run({"documents": [DOCS], "query": ["reset email", "code"]}, ctx)
    assert {h.document.metadata["record_id"] for h in out["hits"]} == {"A", "B"}
    assert all(set(h.legs) == {"keyword"} for h in out["hits"])
    assert {h.explain for h in out["hits"]} == {"1/61 (q1 #1)", "1/61 (q2 #1)"}


def test_node_errors_are_clear(tmp_path: Path) -> None:
    ctx = RunContext("kw", data_dir=tmp_path)
    node = KeywordRetrieverNode(KeywordConfig())
    with pytest.raises(NodeError, match="Connect a vector store"):
        node.run({"query": "x"}, ctx)
    with pytest.raises(NodeError, match="Input 'query' is empty"):
        node.run({"documents": [DOCS], "query": "  "}, ctx)
    empty = RunContext("kw", data_dir=tmp_path)
    assert node.run({"documents": [[]], "query": "password"}, empty)["hits"] == []
    assert empty.warning == "the keyword index is empty: the documents input holds no chunks"


def test_index_mirrors_a_chroma_store_and_lives_next_to_it(tmp_path: Path) -> None:
    embedder = LocalEmbedder(cache_dir=tmp_path)
    docs = vwo_records()[220:250]
    store_ctx = RunContext("store", data_dir=tmp_path)
    store = ChromaNode(ChromaConfig(collection="kwmirror")).run({"embedder": embedder, "documents": [docs]}, store_ctx)[
        "store"
    ]
    ctx = RunContext("kw", data_dir=tmp_path)
    out = KeywordRetrieverNode(KeywordConfig(k=3)).run({"store": store, "query": "consecutive dots email"}, ctx)
    assert ctx.details["indexed"] == 30
    assert out["hits"][0].document.metadata["record_id"] == "INVALID-011"
    assert Path(ctx.details["index_folder"]).parent == tmp_path / "chroma" / "keyword-index"
    store.collection.delete(ids=[out["hits"][0].id])  # the store changes: the index follows
    ctx2 = RunContext("kw", data_dir=tmp_path)
    again = KeywordRetrieverNode(KeywordConfig(k=3)).run({"store": store, "query": "consecutive dots email"}, ctx2)
    assert ctx2.details["indexed"] == 29 and ctx2.details["index"] == "built and saved"
    assert "INVALID-011" not in {h.document.metadata["record_id"] for h in again["hits"]}


def test_fingerprint_follows_the_store_size() -> None:
    class Store:
        name = "s"

        def __init__(self, n: int) -> None:
            self.n = n

        def count(self) -> int:
            return self.n

    config = KeywordConfig()
    assert KeywordRetrieverNode.fingerprint(config, None, None, {"store": Store(3)}) == "s:3"
    assert KeywordRetrieverNode.fingerprint(config, None, None, {"store": Store(4)}) == "s:4"
    assert KeywordRetrieverNode.fingerprint(config, None, None, {"documents": [DOCS]}) is None
