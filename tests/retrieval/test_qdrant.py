"""vectorstore.qdrant in embedded mode: dense + BM25 sparse vectors, Qdrant's own RRF, persistence."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.local import LocalEmbedder
from flowbuilder.nodes.hybrid.keyword import KeywordConfig, KeywordRetrieverNode
from flowbuilder.nodes.vectorstores.qdrant import QdrantConfig, QdrantNode, QdrantStore, SparseBM25, close_local_clients
from tests.nodes.test_chroma import vwo_records

QUESTION = "two dots in a row in the email address"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("qdrant")
    close_local_clients()


@pytest.fixture(scope="module")
def embedder(folder: Path) -> LocalEmbedder:
    return LocalEmbedder(cache_dir=folder / "cache")


@pytest.fixture(scope="module")
def filled(folder: Path, embedder: LocalEmbedder) -> tuple[QdrantStore, RunContext, list]:
    ctx = RunContext("qdrant", data_dir=folder)
    out = QdrantNode(QdrantConfig(collection="vwo", k=5)).run(
        {"embedder": embedder, "documents": [vwo_records()[220:250]], "query": QUESTION}, ctx
    )
    return out["store"], ctx, out["hits"]


def test_sparse_vectors_are_saturated_term_frequencies() -> None:
    sparse = SparseBM25()
    ids, values = sparse.document("password password password reset")
    assert len(ids) == 2 and ids == sorted(ids)
    by_id = dict(zip(ids, values, strict=True))
    assert by_id[sparse.term_id("password")] > by_id[sparse.term_id("reset")] > 0
    assert by_id[sparse.term_id("password")] < 3 * by_id[sparse.term_id("reset")]  # saturation
    assert sparse.query("the password") == ([sparse.term_id("password")], [1.0])  # stopword dropped


def test_hybrid_hits_carry_both_legs_and_qdrants_rrf_score(filled: tuple[QdrantStore, RunContext, list]) -> None:
    _store, ctx, hits = filled
    assert ctx.details["added"] == 30 and ctx.details["count"] == 30
    assert hits[0].document.metadata["record_id"] == "INVALID-011"
    for hit in hits:
        assert hit.legs, hit
        expected = sum(1 / (60 + leg["rank"]) for leg in hit.legs.values())
        assert hit.score == pytest.approx(expected, rel=1e-6)  # Qdrant's RRF = the explained sum
        assert hit.explain.count("1/") == len(hit.legs)
    assert set(ctx.details["stages"]) == {"dense", "sparse"}
    assert ctx.details["stages"]["sparse"][0]["score"] > 1  # BM25, not cosine


def test_dense_and_sparse_modes_and_filter(filled: tuple[QdrantStore, RunContext, list]) -> None:
    store, _, _ = filled
    store.mode = "dense"
    dense = store.search(QUESTION, 3)
    assert all(0 < h.score <= 1 for h in dense) and dense[0].id
    store.mode = "sparse"
    only = store.search("email", 5, where={"record_id": "INVALID-011"})
    assert [h.document.metadata["record_id"] for h in only] == ["INVALID-011"]
    assert store.search("zebra", 5) == []
    store.mode = "hybrid"


def test_reopened_from_disk_nothing_reembedded_and_keyword_mirrors(
    filled: tuple[QdrantStore, RunContext, list], folder: Path, embedder: LocalEmbedder
) -> None:
    close_local_clients()  # as after a restart: a new client reads the folder
    ctx = RunContext("qdrant", data_dir=folder)
    out = QdrantNode(QdrantConfig(collection="vwo")).run(
        {"embedder": embedder, "documents": [vwo_records()[220:250]]}, ctx
    )
    assert ctx.details["added"] == 0 and ctx.details["kept"] == 30 and ctx.details["removed"] == 0
    store = out["store"]
    assert len(store.all_documents()) == 30
    kctx = RunContext("kw", data_dir=folder)
    found = KeywordRetrieverNode(KeywordConfig(k=1)).run({"store": store, "query": "consecutive dots"}, kctx)["hits"]
    assert kctx.details["indexed"] == 30 and found[0].document.metadata["record_id"] == "INVALID-011"
    store.delete_ids([found[0].id])
    assert store.count() == 29 and found[0].id not in store.all_ids()


def test_sync_semantics_match_the_other_stores(folder: Path, embedder: LocalEmbedder) -> None:
    docs = vwo_records()[220:226]
    node = QdrantNode(QdrantConfig(collection="sync"))

    contexts: list[RunContext] = []

    def run(chunks: list, sync: str = "incremental") -> dict:
        node.config.sync = sync  # type: ignore[assignment]
        ctx = RunContext("qdrant", data_dir=folder)
        node.run({"embedder": embedder, "documents": [chunks]}, ctx)
        contexts.append(ctx)
        return ctx.details

    first = run(docs)
    assert (first["added"], first["removed"], first["count"]) == (6, 0, 6)
    assert contexts[0].summary(node.summarize({})).startswith("+6 added, \u22120 removed, 0 kept; 6 in collection")
    edited = [docs[0].model_copy(update={"text": docs[0].text + " (edited)"}), *docs[1:4]]
    second = run(edited)  # same source: the edited chunk replaces the old, rows 5-6 are gone
    assert (second["added"], second["removed"], second["kept"], second["count"]) == (1, 3, 3, 4)
    other = [d.model_copy(update={"metadata": {**d.metadata, "source": "other.csv"}}) for d in docs[:2]]
    third = run(other, "append")
    assert (third["added"], third["removed"], third["count"]) == (2, 0, 6)
    fourth = run(other, "incremental")  # another source: the first source's chunks stay
    assert (fourth["removed"], fourth["count"]) == (0, 6)
    fifth = run(other, "full")
    assert (fifth["removed"], fifth["count"]) == (4, 2)
    store = QdrantNode(QdrantConfig(collection="sync")).run({"embedder": embedder}, RunContext("q", data_dir=folder))
    assert {d.source for _, d in store["store"].all_documents()} == {"other.csv"}


def test_collection_address_names_folder_or_server(tmp_path: Path) -> None:
    assert QdrantNode.collection_address(QdrantConfig(collection="c"), None) == "qdrant:<data dir>/qdrant:c"
    server = QdrantConfig(collection="c", url="http://localhost:6333/")
    assert QdrantNode.collection_address(server, None) == "qdrant:http://localhost:6333:c"
    assert (
        QdrantNode.collection_address(QdrantConfig(collection="c", path=str(tmp_path)), None) == f"qdrant:{tmp_path}:c"
    )


class OtherEmbedder:
    model_id = "other/model"
    dimension = 384
    max_tokens = None

    def embed_documents(self, texts: Sequence[str], progress: object = None) -> list[list[float]]:
        return [[1.0] * 384 for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0] * 384

    def count_tokens(self, text: str) -> int | None:
        return None


def test_another_embedder_is_refused(filled: tuple[QdrantStore, RunContext, list], folder: Path) -> None:
    ctx = RunContext("qdrant", data_dir=folder)
    with pytest.raises(NodeError, match="was filled by embedder 'local/"):
        QdrantNode(QdrantConfig(collection="vwo")).run({"embedder": OtherEmbedder()}, ctx)


def test_bad_name_and_unreachable_server(tmp_path: Path) -> None:
    assert QdrantNode.config_problems(QdrantConfig(collection="bad name!"))
    ctx = RunContext("qdrant", data_dir=tmp_path)
    with pytest.raises(ProviderError, match=r"no Qdrant server answers at http://127.0.0.1:9"):
        QdrantNode(QdrantConfig(url="http://127.0.0.1:9")).run({"embedder": OtherEmbedder()}, ctx)


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")  # the fake is plain http
def test_server_mode_through_the_real_sdk(tmp_path: Path, embedder: LocalEmbedder) -> None:
    from tests.fakes.qdrant_server import FakeQdrant

    with FakeQdrant(api_key="qk-test") as server:
        ctx = RunContext("qdrant", data_dir=tmp_path, secrets={"api_key": "qk-test"})
        out = QdrantNode(QdrantConfig(collection="srv", url=server.url, k=3)).run(
            {"embedder": embedder, "documents": [vwo_records()[220:232]], "query": QUESTION}, ctx
        )
        assert ctx.details["added"] == 12 and ctx.details["count"] == 12 and ctx.details["location"] == server.url
        hits = out["hits"]
        assert hits[0].document.metadata["record_id"] == "INVALID-011" and set(hits[0].legs) == {"dense", "sparse"}
        assert hits[0].score == pytest.approx(sum(1 / (60 + leg["rank"]) for leg in hits[0].legs.values()))
        assert all(r.headers.get("api-key") == "qk-test" for r in server.requests)
        assert any(r.path.startswith("/collections/srv/points/query") for r in server.requests)
        # a second run syncs: nothing new to embed or write
        again = RunContext("qdrant", data_dir=tmp_path, secrets={"api_key": "qk-test"})
        QdrantNode(QdrantConfig(collection="srv", url=server.url)).run(
            {"embedder": embedder, "documents": [vwo_records()[220:230]]}, again
        )
        assert (again.details["added"], again.details["removed"], again.details["count"]) == (0, 2, 10)
        wrong = RunContext("qdrant", data_dir=tmp_path, secrets={"api_key": "nope"})
        with pytest.raises(ProviderError, match=r"refused the API key \(401\); check the api_key credential"):
            QdrantNode(QdrantConfig(collection="srv", url=server.url)).run({"embedder": embedder}, wrong)
