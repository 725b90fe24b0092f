"""Ingest on a Ray cluster: local vs ``--ray`` with one worker node (the overhead), one vs two worker nodes, and
the per-batch costs and store write rate a projection to 10 and 100 nodes is made from (benchmarks/README.md).

    python benchmarks/ray_ingest.py --rows 160 --batch 20 --rounds 3

Starts a ``chroma run`` server and Ray clusters on 127.0.0.1 (one CPU per node, no dashboard), runs the demo's
row-labelled flow re-pointed at the server through ``python -m flowbuilder run ... --to store`` (the driver is the
CLI, as for a user), with every round's rows made new to the embedding cache, in an alternating order. Prints the
machine's load before and after, each mode's wall seconds (whole command) and store seconds (the ingest alone),
min and median, then the cluster's per-batch costs and Chroma's write rate for precomputed vectors.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import free_port, loadavg, stop

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def chroma_server(path: Path, port: int) -> subprocess.Popen[bytes]:
    import urllib.request

    chroma = Path(sys.executable).with_name("chroma")
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(path), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return proc
        except OSError:
            time.sleep(0.2)
    stop(proc)
    sys.exit("chroma run did not start within 60 s")


def rows_csv(path: Path, rows: int, marker: str) -> None:
    with (REPO / "data" / "VWO_500_Test_Cases.csv").open(encoding="utf-8-sig", newline="") as handle:
        table = list(csv.reader(handle))
    body = [[row[0], f"{marker} {row[1]}", *row[2:]] for row in table[1 : rows + 1]]
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([table[0], *body])


def flow_file(folder: Path, csv_path: Path, port: int, collection: str) -> Path:
    flow = json.loads((REPO / "flows" / "row_labelled_csv_rag.json").read_text(encoding="utf-8"))
    for node in flow["nodes"]:
        if node["type"] == "vectorstore.chroma":
            node["config"].update(server_host="127.0.0.1", server_port=port, collection=collection)
        elif node["type"] == "loader.file":
            node["config"]["path"] = str(csv_path)
    path = folder / f"{collection}.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    return path


def run(flow: Path, env: dict[str, str], extra: list[str]) -> tuple[float, float, dict[str, Any]]:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flowbuilder", "run", str(flow), "--to", "store", "--json", *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=flow.parent,
    )
    wall = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"run failed: {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    store = next(node for node in report["nodes"] if node["id"] == "store")
    return wall, float(store["seconds"]), report["details"].get("store", {}).get("cluster", {})


class Cluster:
    """A Ray cluster of ``nodes`` one-CPU nodes on 127.0.0.1."""

    def __init__(self, nodes: int, data: Path) -> None:
        os.environ.update(LOOPBACK)
        os.environ["FLOWBUILDER_DATA_DIR"] = str(data)
        from ray.cluster_utils import Cluster as RayCluster

        args = {"num_cpus": 1, "object_store_memory": 80_000_000, "include_dashboard": False}
        self.cluster = RayCluster(initialize_head=True, connect=False, head_node_args=args)
        for _ in range(nodes - 1):
            self.cluster.add_node(num_cpus=1, object_store_memory=80_000_000)
        self.address = self.cluster.address

    def close(self) -> None:
        self.cluster.shutdown()


def write_rate(port: int, texts: int) -> float:
    """Chunks per second Chroma's server takes in upserts of 256 with precomputed 384-d vectors."""
    import chromadb
    import numpy as np

    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    collection = client.get_or_create_collection("write-rate", metadata={"hnsw:space": "cosine"})
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((texts, 384)).astype(np.float32)
    began = time.perf_counter()
    for start in range(0, texts, 256):
        part = range(start, min(start + 256, texts))
        collection.upsert(
            ids=[f"id{i}" for i in part],
            embeddings=vectors[start : start + len(part)],
            documents=[f"chunk {i} " + "text " * 100 for i in part],
            metadatas=[{"source": "bench.csv", "row": i} for i in part],
        )
    return texts / (time.perf_counter() - began)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=160)
    parser.add_argument("--batch", type=int, default=20, help="records per Ray task (--ray-batch)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write-texts", type=int, default=2048, help="chunks for the store write rate")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fb-ray-bench-"))
    data = tmp / "data"
    port = free_port()
    print(f"load before: {loadavg()}")
    server = chroma_server(tmp / "chroma", port)
    env = {**os.environ, **LOOPBACK, "PYTHONPATH": str(REPO), "FLOWBUILDER_DATA_DIR": str(data)}
    times: dict[str, list[tuple[float, float]]] = {"local": [], "ray, 1 node": [], "ray, 2 nodes": []}
    batches: list[dict[str, Any]] = []
    try:
        for nodes in (1, 2):
            cluster = Cluster(nodes, data)
            mode = f"ray, {nodes} node{'s' if nodes > 1 else ''}"
            try:
                for number in range(args.rounds):
                    order = ["local", mode] if (number + nodes) % 2 == 0 else [mode, "local"]
                    for which in order:
                        if which == "local" and nodes == 2:
                            continue  # local is measured beside the one-node cluster
                        marker = f"{which}-{number}-{time.time_ns()}"  # new texts: nothing comes from the cache
                        csv_path = tmp / f"{marker}.csv"
                        rows_csv(csv_path, args.rows, marker)
                        flow = flow_file(tmp, csv_path, port, f"bench-{abs(hash(marker)) % 10**9}")
                        extra = [] if which == "local" else ["--ray", cluster.address, "--ray-batch", str(args.batch)]
                        wall, store, detail = run(flow, env, extra)
                        times[which].append((wall, store))
                        if detail:
                            batches.append({"mode": which, **detail})
                        print(f"  {which}: wall {wall:.1f} s, store {store:.1f} s   (load {loadavg()})", flush=True)
            finally:
                cluster.close()
        rate = write_rate(port, args.write_texts)
    finally:
        stop(server)  # type: ignore[arg-type]
    print(f"\n{args.rows} rows, {args.batch} per batch, {args.rounds} rounds; load after: {loadavg()}")
    print(
        f"{'mode':<14} {'wall min':>9} {'wall med':>9} {'store min':>10} {'store med':>10} {'rows/s (store med)':>19}"
    )
    for which, values in times.items():
        if not values:
            continue
        walls, stores = [w for w, _ in values], [s for _, s in values]
        median = statistics.median(stores)
        print(f"{which:<14} {min(walls):>9.1f} {statistics.median(walls):>9.1f} {min(stores):>10.1f} "
              f"{median:>10.1f} {args.rows / median:>19.1f}")  # fmt: skip
    busy = [w["busy_seconds"] / w["batches"] for b in batches for w in b.get("workers", {}).values() if w["batches"]]
    if busy:
        print(f"\nper batch of {args.batch} rows on a worker (label, split, embed, write): min {min(busy):.2f} s, "
              f"median {statistics.median(busy):.2f} s over {len(busy)} worker tallies")  # fmt: skip
    print(f"Chroma server upserts, precomputed 384-d vectors, 256 per call: {rate:.0f} chunks/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
