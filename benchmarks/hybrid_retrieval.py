"""Hybrid retrieval: quality of dense, keyword, hybrid and hybrid + views, and speed over 5,000 chunks.

Prints two tables (not timed tests). Targets:
  * quality: hit@1, hit@5 and MRR (first gold record in the top 10) on data/questions/vwo500_userworded.jsonl
    and data/questions/vwo500_dev.jsonl over the 500 row-labelled VWO test cases (the hybrid_csv_rag flow's data);
  * hybrid retrieval (embed the question + Chroma top 20 + BM25 top 20 + RRF) over 5,000 chunks: p50 < 50 ms;
  * BM25 index of 5,000 chunks: < 2 s.

    python benchmarks/hybrid_retrieval.py [--queries N] [--cache DIR] [--skip-5000]

Chroma and Qdrant live in a temporary folder; the embedding cache is kept in --cache (default
$FLOWBUILDER_DATA_DIR or a temporary folder) so a second run only measures retrieval. The 5,000 chunks are
embedded from each test case's Summary (short texts keep the setup quick on 2 cores: search time does not
depend on text length) while BM25 indexes the whole labelled text.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowbuilder.data import Document, Hit  # noqa: E402
from flowbuilder.node import RunContext  # noqa: E402
from flowbuilder.nodes.embedders.local import LocalEmbedder  # noqa: E402
from flowbuilder.nodes.hybrid.fusion import fuse  # noqa: E402
from flowbuilder.nodes.hybrid.keyword import KeywordIndex  # noqa: E402
from flowbuilder.nodes.hybrid.views import make_views, return_parents  # noqa: E402
from flowbuilder.nodes.labeller import RowLabeller, RowLabellerConfig  # noqa: E402
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig  # noqa: E402
from flowbuilder.nodes.vectorstores.chroma import ChromaConfig, ChromaNode  # noqa: E402
from flowbuilder.nodes.vectorstores.common import unique_documents  # noqa: E402

LABEL_500 = (
    "Scenario TID: {Scenario TID}\nDescription: {TestCase Description}\nPreCondition: {PreCondition}\n"
    "Test Steps: {TestSteps}\nExpected Result: {Expected Result}\nPriority: {Priority}\nIs Automated: {Is Automated}"
)
LABEL_5000 = (
    "{Issue Key}: {Summary}\nDescription: {Description}\nPreconditions: {Preconditions}\nSteps: {Steps}\n"
    "Expected Result: {Expected Result}"
)
QUESTION_SETS = ("vwo500_userworded.jsonl", "vwo500_dev.jsonl")
DEPTH = 20  # each leg's top n
KEEP = 10  # fused hits kept (MRR is computed over these)


def load(path: Path, template: str, ctx: RunContext, id_column: str = "") -> list[Document]:
    records = FileLoader(FileLoaderConfig(path=str(path), id_column=id_column)).run({}, ctx)["records"]
    return RowLabeller(RowLabellerConfig(template=template)).run({"records": records}, ctx)["records"]


def chroma(name: str, docs: list[Document], embedder: LocalEmbedder, folder: Path) -> object:
    ctx = RunContext(name, data_dir=folder)
    return ChromaNode(ChromaConfig(collection=name, batch_size=512)).run(
        {"embedder": embedder, "documents": [docs]}, ctx
    )["store"]


def record_of(hit: Hit) -> str:
    meta = hit.document.metadata
    return str(meta.get("parent_id") or meta.get("record_id"))


def first_gold(hits: Sequence[Hit], gold: set[str]) -> int | None:
    for rank, hit in enumerate(hits, start=1):
        if record_of(hit) in gold:
            return rank
    return None


def quality(questions: list[dict], methods: dict[str, Callable[[str], list[Hit]]]) -> list[tuple[str, ...]]:
    rows = []
    for name, method in methods.items():
        ranks = [first_gold(method(q["question"])[:KEEP], set(q["gold"])) for q in questions]
        n = len(ranks)
        hit1 = sum(r == 1 for r in ranks) / n
        hit5 = sum(r is not None and r <= 5 for r in ranks) / n
        mrr = sum(1 / r for r in ranks if r) / n
        rows.append((name, f"{hit1:.2f}", f"{hit5:.2f}", f"{mrr:.3f}"))
    return rows


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100, help="timed questions over the 5,000 chunks")
    parser.add_argument("--cache", default=os.environ.get("FLOWBUILDER_DATA_DIR", ""), help="embedding cache dir")
    parser.add_argument("--skip-5000", action="store_true", help="only the quality table")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fb-hybrid-bench-"))
    cache = Path(args.cache) if args.cache else work / "cache"
    embedder = LocalEmbedder(cache_dir=cache)
    ctx = RunContext("bench", data_dir=work)

    records = load(ROOT / "data" / "VWO_500_Test_Cases.csv", LABEL_500, ctx)
    views, _ = make_views(records, ["whole", "field"], fields=["TestCase Description"])
    t0 = time.perf_counter()
    whole_store = chroma("whole", records, embedder, work)
    views_store = chroma("views", views, embedder, work)
    print(f"500 records + {len(views)} views embedded/stored in {time.perf_counter() - t0:.1f} s")
    ids, docs, _ = unique_documents(records)
    bm25 = KeywordIndex(ids, docs)

    def dense(q: str) -> list[Hit]:
        return whole_store.search(q, DEPTH)  # type: ignore[attr-defined, no-any-return]

    def keyword(q: str) -> list[Hit]:
        return bm25.search(q, DEPTH)

    def dense_views(q: str) -> list[Hit]:
        return return_parents(views_store.search(q, DEPTH * 2), KEEP)  # type: ignore[attr-defined]

    def hybrid(q: str) -> list[Hit]:
        return fuse([dense(q), keyword(q)], names=["dense", "keyword"], keep=KEEP)

    def hybrid_views(q: str) -> list[Hit]:
        legs = [views_store.search(q, DEPTH * 2), keyword(q)]  # type: ignore[attr-defined]
        return return_parents(fuse(legs, names=["dense", "keyword"], keep=KEEP, by="parent"))

    def hybrid_views_weighted(q: str) -> list[Hit]:
        legs = [views_store.search(q, DEPTH * 2), keyword(q)]  # type: ignore[attr-defined]
        return return_parents(fuse(legs, names=["dense", "keyword"], weights=[1.0, 0.5], keep=KEEP, by="parent"))

    def overlap(q: str) -> list[Hit]:
        return overlap_index.search(q, DEPTH)

    overlap_index = KeywordIndex(ids, docs, scorer="overlap")
    methods = {
        "dense (whole record)": dense,
        "keyword (BM25)": keyword,
        "keyword (overlap)": overlap,
        "hybrid (dense + BM25, RRF)": hybrid,
        "dense + views": dense_views,
        "hybrid + views": hybrid_views,
        "hybrid + views, keyword weight 0.5": hybrid_views_weighted,
    }
    for name in QUESTION_SETS:
        lines = (ROOT / "data" / "questions" / name).read_text(encoding="utf-8").splitlines()
        questions = [json.loads(line) for line in lines if line.strip()]
        table(
            f"{name} ({len(questions)} questions)", ("method", "hit@1", "hit@5", "MRR@10"), quality(questions, methods)
        )
        kinds = sorted({q["kind"] for q in questions if q.get("kind")})
        if kinds:
            rows = []
            for kind in kinds:
                subset = [q for q in questions if q.get("kind") == kind]
                for row in quality(subset, {k: methods[k] for k in ("dense (whole record)", "hybrid + views")}):
                    rows.append((f"{kind} ({len(subset)})", *row))
            table(f"{name} by kind", ("kind", "method", "hit@1", "hit@5", "MRR@10"), rows)
    if args.skip_5000:
        return

    big = load(ROOT / "data" / "vwo_5000_test_cases.csv", LABEL_5000, ctx, id_column="Issue Key")
    ids5, docs5, _ = unique_documents(big)
    builds = []
    for _ in range(3):
        t0 = time.perf_counter()
        index5 = KeywordIndex(ids5, docs5)
        builds.append(time.perf_counter() - t0)
    summaries = [Document(text=str(d.metadata["columns"]["Summary"]), metadata=d.metadata) for d in big]
    t0 = time.perf_counter()
    store5 = chroma("summaries5000", summaries, embedder, work)
    print(f"5,000 summaries embedded/stored in {time.perf_counter() - t0:.1f} s")
    from flowbuilder.nodes.vectorstores.qdrant import QdrantStore, close_local_clients, local_client, open_collection

    client = local_client(work / "qdrant")
    open_collection(client, "vwo5000", embedder, str(work / "qdrant"))
    qdrant = QdrantStore(client, "vwo5000", embedder, str(work / "qdrant"), prefetch=DEPTH)
    t0 = time.perf_counter()
    qdrant.add_documents(summaries, batch_size=512)
    print(f"5,000 points into embedded Qdrant in {time.perf_counter() - t0:.1f} s (embeddings cached)")
    questions = [d.metadata["columns"]["Summary"].split(":", 1)[-1].strip() + "?" for d in big[:: 5000 // args.queries]]
    names = (
        "embed the question (MiniLM)",
        "Chroma top 20 (vector given)",
        "BM25 top 20",
        "RRF of the two",
        "hybrid total (embed + both + RRF)",
        "Qdrant embedded hybrid (its RRF + legs)",
    )
    timings: dict[str, list[float]] = {name: [] for name in names}
    fresh = LocalEmbedder()  # no cache: every question is really embedded, even on a second run
    qdrant.embedder = fresh
    for q in questions:
        t0 = time.perf_counter()
        vector = fresh.embed_query(q)
        t1 = time.perf_counter()
        d = store5.search_vector(vector, DEPTH)  # type: ignore[attr-defined]
        t2 = time.perf_counter()
        k = index5.search(q, DEPTH)
        t3 = time.perf_counter()
        fuse([d, k], names=["dense", "keyword"], keep=KEEP)
        t4 = time.perf_counter()
        qdrant.hybrid([q], KEEP)
        t5 = time.perf_counter()
        for name, value in zip(names, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0, t5 - t4), strict=True):
            timings[name].append(value)
    close_local_clients()
    rows = [
        (name, f"{statistics.median(v) * 1000:.1f}", f"{percentile(v, 0.95) * 1000:.1f}") for name, v in timings.items()
    ]
    rows.append(("BM25 index of 5,000 chunks (bm25s)", f"{statistics.median(builds) * 1000:.0f}", "-"))
    table(f"5,000 chunks, {len(questions)} questions (ms)", ("step", "p50", "p95"), rows)


if __name__ == "__main__":
    main()
