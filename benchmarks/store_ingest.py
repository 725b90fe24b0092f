"""Store ingest vs the embedder alone, on the same texts: does a store add anything to the embedding time?

For every store that runs offline here (embedded Chroma, embedded Qdrant, a `chroma run` server when the
`chroma` command is installed, and the Qdrant and Pinecone test fakes: the real SDKs over loopback HTTP
to a server in this process), each round times:

  1. the embedder alone: ``embed_documents`` over the texts (no cache),
  2. right after, the store node's whole run into a new collection (existing-id lookup, pipelined
     embedding + writes, stale-id sweep, count) with the same embedder (no cache).

Each store's rate is compared with the embedder-alone measurement taken next to it (the load of a shared
machine drifts), so the ratio is per pair; odd rounds time the store first and even rounds the embedder
first, so a drift favours neither. The table gives min/median over the rounds.
Target: every store >= 95 % of the embedder alone.

Then each store runs again with the vectors looked up instead of computed ("own s": the store's own work:
lookups, writes, stale-id sweep, count), which gives a bound that the embedder's round-to-round swing on a
shared machine (a few % either way between two runs of the same texts) does not move: the ratio if none of
that work hid behind the embedding.

Two ratios: wall clock (what a user waits; the store's writes hide behind the embedding on a second
thread) and CPU time (this process's threads, plus a `chroma run` server's): the work a store adds,
which stays readable on a loaded machine where wall-clock rates swing with the other jobs.

The embedder is the project's local MiniLM (int8 ONNX, ``embedder.local``, batch 32): a real model, so the
ratio says what a user sees; an instant embedder would make every store look slow.

    python benchmarks/store_ingest.py [--texts 512] [--batch 256] [--rounds 5] [--stores chroma,qdrant,...]

Texts: the labelled rows of vwo_5000_test_cases.csv (the first N chunks of loader -> labeller ->
splitter.record). Everything lives in a temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from bench_common import free_port, loadavg, stop
from ingest import chunks_of, corpus_path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowbuilder.data import Document  # noqa: E402
from flowbuilder.node import RunContext  # noqa: E402
from flowbuilder.nodes.embedders.local import LocalEmbedder  # noqa: E402

STORES = ("chroma", "qdrant", "chroma-server", "qdrant-fake", "pinecone-fake")
KEY = "bench-store-key"

# A store: given a fresh collection name, run its node over the documents; returns the details.
StoreRun = Callable[[str, list[Document], Any], dict[str, Any]]
BATCH = {"batch_size": 256}
"""The store nodes' batch size (set from --batch)."""
_server_pids: list[int] = []


def cpu_seconds() -> float:
    """CPU time of this process (every thread: the model's, the writer's, the fakes') and of a store server."""
    total = time.process_time()
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in _server_pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def node_run(node: Any, documents: list[Document], embedder: Any, data_dir: Path, **secrets: str) -> dict:
    ctx = RunContext("store", data_dir=data_dir, secrets=secrets)
    node.run({"embedder": embedder, "documents": [documents]}, ctx)
    return ctx.details


class Precomputed:
    """The same vectors, looked up instead of computed: a store run with it times the store's own work
    (lookups, writes, sweep, count), which the pipelined run can at best hide and at worst add."""

    def __init__(self, model: LocalEmbedder, texts: list[str]) -> None:
        self.model_id, self.dimension, self._model = model.model_id, model.dimension, model
        self._vectors = dict(zip(texts, model.embed_documents_array(texts), strict=True))

    def embed_documents_array(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        return np.stack([self._vectors[text] for text in texts])

    def embed_documents(self, texts: Sequence[str], progress: Any = None) -> list[list[float]]:
        return self.embed_documents_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._model.embed_query(text)

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)


@contextlib.contextmanager
def open_stores(names: list[str], tmp: Path) -> Iterator[dict[str, StoreRun]]:
    """The runnable stores among ``names`` (servers started here, stopped on exit)."""
    from flowbuilder.nodes.vectorstores.chroma import ChromaConfig, ChromaNode
    from flowbuilder.nodes.vectorstores.pinecone import PineconeConfig, PineconeNode
    from flowbuilder.nodes.vectorstores.qdrant import QdrantConfig, QdrantNode, close_local_clients

    runs: dict[str, StoreRun] = {}
    with contextlib.ExitStack() as stack:
        stack.callback(close_local_clients)
        if "chroma" in names:
            runs["chroma"] = lambda c, d, e: node_run(ChromaNode(ChromaConfig(collection=c, **BATCH)), d, e, tmp)
        if "qdrant" in names:
            runs["qdrant"] = lambda c, d, e: node_run(QdrantNode(QdrantConfig(collection=c, **BATCH)), d, e, tmp)
        if "chroma-server" in names:
            chroma = Path(sys.executable).with_name("chroma")
            if chroma.is_file():
                from remote_embed import chroma_server

                port = free_port()
                server = chroma_server(tmp / "chroma-server", port)
                stack.callback(stop, server)
                _server_pids.append(server.pid)
                config = {"server_host": "127.0.0.1", "server_port": port, **BATCH}
                runs["chroma-server"] = lambda c, d, e: node_run(
                    ChromaNode(ChromaConfig(collection=c, **config)), d, e, tmp
                )
            else:
                print(f"chroma-server: skipped ({chroma} is not installed)")
        if "qdrant-fake" in names:
            from tests.fakes.qdrant_server import FakeQdrant

            qdrant = stack.enter_context(FakeQdrant(api_key=KEY))
            runs["qdrant-fake"] = lambda c, d, e: node_run(
                QdrantNode(QdrantConfig(collection=c, url=qdrant.url, **BATCH)), d, e, tmp, api_key=KEY
            )
        if "pinecone-fake" in names:
            from tests.fakes.pinecone_server import FakePinecone

            pinecone = stack.enter_context(FakePinecone(api_key=KEY))

            def pinecone_run(collection: str, documents: list[Document], embedder: Any) -> dict:
                pinecone.create_index(collection, dimension=384)
                config = PineconeConfig(host=pinecone.url, namespace=collection)
                return node_run(PineconeNode(config), documents, embedder, tmp, api_key=KEY)

            runs["pinecone-fake"] = pinecone_run
        yield runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=512, help="Chunks ingested per run (default 512).")
    parser.add_argument("--batch", type=int, default=256, help="The store nodes' batch size (default 256).")
    parser.add_argument("--rounds", type=int, default=5, help="Rounds (each: embedder alone + store, per store).")
    parser.add_argument("--stores", default=",".join(STORES), help=f"Comma-separated, from: {', '.join(STORES)}.")
    args = parser.parse_args()
    BATCH["batch_size"] = args.batch
    names = [n.strip() for n in args.stores.split(",") if n.strip()]
    unknown = sorted(set(names) - set(STORES))
    if unknown:
        sys.exit(f"unknown store(s) {', '.join(unknown)}; choose from {', '.join(STORES)}")

    print(f"load before: {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="fb-store-ingest-") as tmp_name:
        tmp = Path(tmp_name)
        documents = chunks_of(corpus_path(), tmp / "prep", args.texts)
        texts = [d.text for d in documents]
        embedder = LocalEmbedder(batch_size=32)  # no cache_dir: every text really goes through the model
        embedder.embed_documents(texts[:32])  # load and warm up the model
        rates: dict[str, list[tuple[float, float]]] = {}
        cpu: dict[str, list[float]] = {}
        own: dict[str, list[float]] = {}
        with open_stores(names, tmp) as runs:
            for number in range(args.rounds):
                for name, run in runs.items():

                    def alone_run() -> tuple[float, float]:
                        start, cpu_start = time.perf_counter(), cpu_seconds()
                        embedder.embed_documents_array(texts)
                        return len(texts) / (time.perf_counter() - start), cpu_seconds() - cpu_start

                    def store_run(
                        name: str = name, run: StoreRun = run, number: int = number
                    ) -> tuple[float, float, dict[str, Any]]:
                        start, cpu_start = time.perf_counter(), cpu_seconds()
                        details = run(f"bench-{name.replace('-', '')}-{number}", documents, embedder)
                        return len(texts) / (time.perf_counter() - start), cpu_seconds() - cpu_start, details

                    # ABBA: odd rounds measure the store first, so a drifting load favours neither side
                    if number % 2 == 0:
                        alone, alone_cpu = alone_run()
                        stored, store_cpu, details = store_run()
                    else:
                        stored, store_cpu, details = store_run()
                        alone, alone_cpu = alone_run()
                    cpu.setdefault(name, []).append(alone_cpu / store_cpu * 100)
                    if details.get("added") != len(texts) or details.get("count") != len(texts):
                        sys.exit(f"{name}: expected {len(texts)} added and stored, got {details}")
                    rates.setdefault(name, []).append((alone, stored))
                    print(
                        f"  round {number + 1} {name}: alone {alone:.1f} t/s, store {stored:.1f} t/s, "
                        f"CPU ratio {cpu[name][-1]:.0f} %  (load {loadavg().split()[0]})",
                        flush=True,
                    )
            precomputed = Precomputed(embedder, texts)
            for number in range(args.rounds):
                for name, run in runs.items():
                    start = time.perf_counter()
                    run(f"own-{name.replace('-', '')}-{number}", documents, precomputed)
                    own.setdefault(name, []).append(time.perf_counter() - start)

    print(f"\nStore ingest vs embedder alone: {len(texts)} chunks of {corpus_path().name}, local MiniLM int8 ONNX")
    print(f"(batch 32, no cache), store batches of {args.batch}, {args.rounds} rounds; ratio = store / embedder alone")
    print("next to it (wall: texts/s; CPU: embedder-alone CPU seconds / store-run CPU seconds)")
    header = (
        f"{'store':<14} {'alone t/s min/med':>18} {'store t/s min/med':>18} {'wall % min/med':>15} "
        f"{'CPU % min/med':>14} {'own s min/med':>14} {'bound %':>8}  target >= 95 %"
    )
    print(header)
    print("-" * len(header))
    for name, pairs in rates.items():
        alone_rates = [a for a, _ in pairs]
        store_rates = [s for _, s in pairs]
        ratios = [s / a * 100 for a, s in pairs]
        print(
            f"{name:<14} {min(alone_rates):8.1f} /{statistics.median(alone_rates):7.1f} {min(store_rates):9.1f} /"
            f"{statistics.median(store_rates):7.1f} {min(ratios):7.0f} /{statistics.median(ratios):4.0f} % "
            f"{min(cpu[name]):6.0f} /{statistics.median(cpu[name]):4.0f} % "
            f"{min(own[name]):7.2f} /{statistics.median(own[name]):5.2f} {bound(pairs, own[name], len(texts)):7.0f} %"
        )
    print(
        "own s: the store's run with the vectors looked up, not computed (its own work); bound: the ratio if none\n"
        "of that work hid behind the embedding (median embedder-alone time + median own time): the store's cost\n"
        "without the round-to-round swing of the embedder's speed on a shared machine."
    )
    print(f"load after: {loadavg()}")


def bound(pairs: list[tuple[float, float]], own: list[float], texts: int) -> float:
    alone_seconds = texts / statistics.median(a for a, _ in pairs)
    return alone_seconds / (alone_seconds + statistics.median(own)) * 100


if __name__ == "__main__":
    main()
