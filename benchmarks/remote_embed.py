"""Remote embedders with several batches in flight, against a server that takes 50 ms per request.

Two tables:
  * the OpenAI embedder (real SDK) against the loopback fake (tests/fakes/llm_server.py) with 50 ms latency:
    texts/s at 1, 2, 4 and 8 batches in flight, min/median over rounds (target: 8 in flight >= 5x 1),
  * end to end: the 5,000-row CSV -> labeller -> splitter -> embedder.openai (the same fake) -> a Chroma
    *server* started here with `chroma run`, at 1 and 8 in flight (ingest time, texts/s, rows in the server).

    python benchmarks/remote_embed.py [--texts 2048] [--batch 32] [--rounds 3] [--latency 0.05] [--rows 5000]

No embedding cache (every text goes to the server); the fake's vectors are 16-d. Loopback only. The
machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import free_port, loadavg, stop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KEY = "sk-bench-remote-embed"


def embedder_table(base_url: str, texts: int, batch: int, rounds: int, latency: float) -> None:
    from flowbuilder.nodes.embedders.openai import OpenAIEmbedder

    corpus = [f"test case {i}: the login form rejects an email with two dots" for i in range(texts)]
    print(f"\nembedder alone: {texts} texts, batch {batch}, {latency * 1000:.0f} ms per request, {rounds} rounds")
    print(f"  {'in flight':>9} {'min t/s':>9} {'median t/s':>11} {'x vs 1':>7}")
    base = None
    for in_flight in (1, 2, 4, 8):
        rates = []
        for _ in range(rounds):
            embedder = OpenAIEmbedder(
                api_key=KEY, base_url=base_url, batch_size=batch, dimensions=16, max_in_flight=in_flight
            )
            start = time.perf_counter()
            embedder.embed_documents(corpus)
            rates.append(texts / (time.perf_counter() - start))
        median = statistics.median(rates)
        base = base or median
        print(f"  {in_flight:>9} {min(rates):9.0f} {median:11.0f} {median / base:7.1f}")


def chroma_server(path: Path, port: int) -> subprocess.Popen[bytes]:
    chroma = Path(sys.executable).with_name("chroma")
    process = subprocess.Popen(
        [str(chroma), "run", "--path", str(path), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, ANONYMIZED_TELEMETRY="False"),
    )
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    sys.exit("chroma run did not start within 60 s")


def end_to_end(base_url: str, rows: int, batch: int, tmp: Path) -> None:
    from flowbuilder.cache import ResultCache
    from flowbuilder.executor import Executor
    from flowbuilder.flow import Edge, Flow, NodeSpec
    from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

    source = ROOT / "data" / "vwo_5000_test_cases.csv"
    csv = tmp / "rows.csv"
    with source.open(encoding="utf-8") as src, csv.open("w", encoding="utf-8") as out:
        for i, line in enumerate(src):
            if i > rows:
                break
            out.write(line)
    port = free_port()
    server = chroma_server(tmp / "chroma", port)
    print(f"\nend to end: {rows} rows -> embedder.openai (fake, 50 ms) -> `chroma run` on 127.0.0.1:{port}")
    print(f"  {'in flight':>9} {'ingest s':>9} {'texts/s':>8} {'in server':>9}")
    try:
        for in_flight in (1, 8):
            flow = Flow(
                name="remote ingest",
                nodes=[
                    NodeSpec(id="load", type="loader.file", config={"path": str(csv)}),
                    NodeSpec(id="label", type="labeller.row"),
                    NodeSpec(id="split", type="splitter.record"),
                    NodeSpec(
                        id="embed",
                        type="embedder.openai",
                        config={
                            "base_url": base_url,
                            "dimensions": 16,
                            "batch_size": batch,
                            "cache": False,
                            "max_in_flight": in_flight,
                        },
                    ),
                    NodeSpec(
                        id="store",
                        type="vectorstore.chroma",
                        config={
                            "collection": f"remote-{in_flight}",
                            "server_host": "127.0.0.1",
                            "server_port": port,
                        },
                    ),
                ],
                edges=[
                    Edge(source="load", source_port="records", target="label", target_port="records"),
                    Edge(source="label", source_port="records", target="split", target_port="documents"),
                    Edge(source="split", source_port="chunks", target="store", target_port="documents"),
                    Edge(source="embed", source_port="embedder", target="store", target_port="embedder"),
                ],
            )
            resolver = CredentialResolver(
                explicit={"openai.api_key": KEY},
                store=CredentialStore(tmp / "creds.json"),
                environ={},
                approved=[("openai", base_url)],  # the fake server on this machine gets the key once approved
            )
            executor = Executor(resolver=resolver, cache=ResultCache(), data_dir=tmp / "data")
            start = time.perf_counter()
            result = executor.run(flow, use_cache=False)
            elapsed = time.perf_counter() - start
            if not result.ok:
                sys.exit("flow failed: " + "; ".join(str(r.error) for r in result.failed()))
            count = result.results["store"].details.get("count")
            print(f"  {in_flight:>9} {elapsed:9.1f} {rows / elapsed:8.0f} {count!s:>9}")
    finally:
        stop(server)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rows", type=int, default=5000)
    args = parser.parse_args()
    print(f"load before: {loadavg()}  (2-core machine shared with other jobs)")
    from tests.fakes.llm_server import FakeLLMServer

    with tempfile.TemporaryDirectory(prefix="fb-remote-bench-") as name, FakeLLMServer(embedding_dim=16) as fake:
        os.environ.setdefault("FLOWBUILDER_CREDENTIALS", str(Path(name) / "creds.json"))
        fake.delay("embeddings", args.latency)
        embedder_table(fake.openai_base_url, args.texts, args.batch, args.rounds, args.latency)
        print(f"  most requests the server saw at once: {fake.max_in_flight}")
        end_to_end(fake.openai_base_url, args.rows, args.batch, Path(name))
    print(f"\nload after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
