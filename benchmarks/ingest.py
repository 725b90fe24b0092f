"""Ingest speed: vwo_5000_test_cases.csv through loader -> labeller -> splitter.record -> Chroma (local embedder).

Prints one table. Targets:
  * the whole flow runs at >= 85% of the embedder's own texts/s,
  * peak RSS < 1.5 GB,
  * a second run served by the embedding cache is >= 20x faster than the first,
  * top-5 query latency (embedding the question + Chroma search) p50 < 30 ms over the 5,000 chunks.

    python benchmarks/ingest.py [--limit N] [--queries N]

Everything happens in a temporary data dir (Chroma on disk + the embedding cache), removed at the end.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flowbuilder.cache import ResultCache
from flowbuilder.data import Document
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.nodes.embedders.local import LocalEmbedder

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = (
    ROOT / "data" / "vwo_5000_test_cases.csv",
    ROOT.parent / "shared" / "corpus" / "data" / "vwo_5000_test_cases.csv",
)


def corpus_path() -> Path:
    for path in CANDIDATES:
        if path.is_file():
            return path
    sys.exit(f"vwo_5000_test_cases.csv not found; looked in: {', '.join(str(p) for p in CANDIDATES)}")


def ingest_flow(csv_path: Path, collection: str) -> Flow:
    return Flow(
        name="ingest benchmark",
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(csv_path)}),
            NodeSpec(id="label", type="labeller.row"),
            NodeSpec(id="split", type="splitter.record"),
            NodeSpec(id="embed", type="embedder.local"),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": collection}),
        ],
        edges=[
            Edge(source="load", source_port="records", target="label", target_port="records"),
            Edge(source="label", source_port="records", target="split", target_port="documents"),
            Edge(source="split", source_port="chunks", target="store", target_port="documents"),
            Edge(source="embed", source_port="embedder", target="store", target_port="embedder"),
        ],
    )


def run_flow(flow: Flow, data_dir: Path) -> tuple[float, dict[str, Any]]:
    executor = Executor(cache=ResultCache(), data_dir=data_dir)  # a fresh result cache: every node runs
    start = time.perf_counter()
    result = executor.run(flow, use_cache=False)
    elapsed = time.perf_counter() - start
    if not result.ok:
        sys.exit("flow failed: " + "; ".join(str(r.error) for r in result.failed()))
    return elapsed, {nid: r for nid, r in result.results.items()}


def chunks_of(csv_path: Path, data_dir: Path, limit: int | None) -> list[Document]:
    flow = ingest_flow(csv_path, "unused")
    result = Executor(cache=ResultCache(), data_dir=data_dir).run(flow, to="split", use_cache=False)
    chunks: list[Document] = result.results["split"].outputs["chunks"]
    return chunks[:limit] if limit else chunks


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="Only the first N chunks (default: all).")
    parser.add_argument("--queries", type=int, default=200, help="Questions timed for the latency figures.")
    args = parser.parse_args()
    csv_path = corpus_path()

    with tempfile.TemporaryDirectory(prefix="fb-ingest-") as tmp:
        tmp_dir = Path(tmp)
        chunks = chunks_of(csv_path, tmp_dir / "prep", args.limit)
        texts = [c.text for c in chunks]
        if args.limit:  # the flow must see the same chunks: write a CSV of the first N rows
            lines = csv_path.read_text(encoding="utf-8-sig").splitlines(keepends=True)
            csv_path = tmp_dir / "subset.csv"
            csv_path.write_text("".join(lines[: args.limit + 1]), encoding="utf-8")

        # 1. the embedder alone (no cache), loaded and warmed up first
        embedder = LocalEmbedder(batch_size=32)
        embedder.embed_documents(texts[:32])
        start = time.perf_counter()
        embedder.embed_documents(texts)
        embed_s = time.perf_counter() - start
        embed_rate = len(texts) / embed_s

        # 2. the whole flow, cold embedding cache
        data_dir = tmp_dir / "data"
        flow_s, results = run_flow(ingest_flow(csv_path, "bench"), data_dir)
        count = results["store"].details["count"]
        flow_rate = count / flow_s

        # 3. the same flow into a new collection: every vector comes from the embedding cache
        cached_s, cached_results = run_flow(ingest_flow(csv_path, "bench-cached"), data_dir)
        # 4. the same flow into the same collection: ids exist, nothing is embedded or added
        rerun_s, rerun_results = run_flow(ingest_flow(csv_path, "bench"), data_dir)
        assert rerun_results["store"].details["added"] == 0

        # 5. query latency over the collection
        store = results["store"].outputs["store"]
        rng = random.Random(7)
        questions = [
            " ".join(rng.sample(t.split(), min(12, len(t.split()))))
            for t in rng.sample(texts, min(args.queries, len(texts)))
        ]
        query_embedder = LocalEmbedder()  # no cache: every question is really embedded
        store.embedder = query_embedder
        store.search(questions[0], 5)
        full_ms, search_ms = [], []
        for question in questions:
            start = time.perf_counter()
            vector = query_embedder.embed_query(question)
            middle = time.perf_counter()
            store.search_vector(vector, 5)
            end = time.perf_counter()
            full_ms.append((end - start) * 1000)
            search_ms.append((end - middle) * 1000)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    rows = [
        ("chunks ingested", f"{count:,}", ""),
        ("embedder alone (batch 32, no cache)", f"{embed_rate:.1f} texts/s", f"{embed_s:.1f} s"),
        ("whole flow, cold cache", f"{flow_rate:.1f} texts/s", f"{flow_s:.1f} s"),
        ("  flow / embedder", f"{flow_rate / embed_rate * 100:.0f} %", "target >= 85 %"),
        ("second run, new collection, warm cache", f"{cached_s:.2f} s", f"{flow_s / cached_s:.0f}x faster (>= 20x)"),
        ("  its store node", f"{cached_results['store'].duration:.2f} s", "embeds 0 texts"),
        ("re-run into the same collection", f"{rerun_s:.2f} s", f"{flow_s / rerun_s:.0f}x faster (ids skipped)"),
        ("top-5 query, embed + search, p50", f"{statistics.median(full_ms):.1f} ms", "target < 30 ms"),
        ("top-5 query, embed + search, p95", f"{percentile(full_ms, 0.95):.1f} ms", ""),
        (
            "top-5 search only (vector given), p50 / p95",
            f"{statistics.median(search_ms):.1f} / {percentile(search_ms, 0.95):.1f} ms",
            f"{len(questions)} queries",
        ),
        ("peak RSS", f"{peak_mb:,.0f} MB", "target < 1,500 MB"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"Ingest benchmark: {csv_path.name}, local MiniLM int8 ONNX -> embedded Chroma")
    print(f"{'measure':<{width}}  {'value':>18}  note")
    print("-" * (width + 44))
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>18}  {note}")


if __name__ == "__main__":
    main()
