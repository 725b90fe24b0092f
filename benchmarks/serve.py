"""Serving under load: `flowbuilder serve` over the demo flow (500 rows, local embedder, Chroma on disk).

Prints two tables (loopback only; every loop is bounded):
  * 60 distinct `GET /search` sent one by one vs all 60 at once: throughput ratio (target >= 1.5x, none fails),
  * p50/p99 latency and requests/s at 1, 10 and 100 concurrent clients (each client sends a fixed number).

Every question is new to the server (a running number in it), so neither the embedding cache nor the
executor's result cache answers it: each one is embedded and searched.

    python benchmarks/serve.py [--rounds 3] [--tree PATH] [--data-dir PATH]

``--tree`` serves from another checkout (e.g. the main branch) for a before/after comparison. The server
and its data dir (a temporary folder) are removed at the end; ``--data-dir`` keeps the data dir instead, so a
second run does not embed the 500 rows again (its questions are new either way, so the figures do not
change). The machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_common import free_port, loadavg, stop

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-serve-token"
TOPICS = (
    "login with an email that has two dots",
    "password reset link expiry",
    "dashboard widgets after login",
    "session timeout on inactivity",
    "invalid credentials error message",
    "remember me checkbox",
    "captcha after failed attempts",
    "single sign-on with Google",
    "account lockout policy",
    "heatmap report loading",
)


class Questions:
    def __init__(self) -> None:
        self.n = 0

    def take(self, count: int) -> list[str]:
        out = []
        for _ in range(count):
            self.n += 1
            out.append(f"How is {TOPICS[self.n % len(TOPICS)]} tested? (case {self.n})")
        return out


def start_server(tree: Path, data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(tree), FLOWBUILDER_DATA_DIR=str(data_dir), ANONYMIZED_TELEMETRY="False")
    flow = tree / "flows" / "row_labelled_csv_rag.json"
    with log.open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "flowbuilder", "serve", str(flow), "--port", str(port), "--token", TOKEN],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            cwd=str(tree),
        )


async def one(client: httpx.AsyncClient, url: str, q: str) -> tuple[float, bool]:
    start = time.perf_counter()
    try:
        response = await client.get(url, params={"q": q, "k": 5})
        ok = response.status_code == 200 and bool(response.json().get("hits"))
    except httpx.HTTPError:
        ok = False
    return time.perf_counter() - start, ok


async def sequential(client: httpx.AsyncClient, url: str, questions: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    failed = 0
    for q in questions:
        _, ok = await one(client, url, q)
        failed += not ok
    return time.perf_counter() - start, failed


async def together(client: httpx.AsyncClient, url: str, questions: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    results = await asyncio.gather(*(one(client, url, q) for q in questions))
    return time.perf_counter() - start, sum(not ok for _, ok in results)


async def clients(
    client: httpx.AsyncClient, url: str, qs: Questions, n_clients: int, per_client: int
) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    failed = 0

    async def loop(questions: list[str]) -> None:
        nonlocal failed
        for q in questions:
            seconds, ok = await one(client, url, q)
            latencies.append(seconds)
            failed += not ok

    start = time.perf_counter()
    await asyncio.gather(*(loop(qs.take(per_client)) for _ in range(n_clients)))
    return latencies, failed, time.perf_counter() - start


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def bench(base: str, rounds: int, batch: int) -> None:
    url = base + "/search"
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    qs = Questions()
    async with httpx.AsyncClient(headers=headers, timeout=600, limits=limits) as client:
        await sequential(client, url, qs.take(5))  # warm: sessions loaded, connections open
        ratios, seq_rates, par_rates, failures = [], [], [], 0
        for _ in range(rounds):
            seq_s, seq_failed = await sequential(client, url, qs.take(batch))
            par_s, par_failed = await together(client, url, qs.take(batch))
            failures += seq_failed + par_failed
            seq_rates.append(batch / seq_s)
            par_rates.append(batch / par_s)
            ratios.append(seq_s / par_s)
        print(f"\n{batch} distinct /search, {rounds} rounds (min / median):")
        print(f"  one by one : {min(seq_rates):6.1f} / {statistics.median(seq_rates):6.1f} req/s")
        print(f"  all at once: {min(par_rates):6.1f} / {statistics.median(par_rates):6.1f} req/s")
        print(f"  speed-up   : {min(ratios):6.2f} / {statistics.median(ratios):6.2f} x  (target >= 1.5x)")
        print(f"  failed     : {failures}")

        print("\nconcurrent clients (each sends a fixed number of distinct questions):")
        print(f"  {'clients':>7} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>7} {'failed':>6}")
        for n_clients, per_client in ((1, 40), (10, 8), (100, 2)):
            latencies, failed, wall = await clients(client, url, qs, n_clients, per_client)
            print(
                f"  {n_clients:>7} {len(latencies):>8} {pct(latencies, 0.5) * 1000:8.0f} "
                f"{pct(latencies, 0.99) * 1000:8.0f} {len(latencies) / wall:7.1f} {failed:>6}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=60)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to serve from (default: this one)")
    parser.add_argument("--data-dir", type=Path, default=None, help="a data dir to keep (default: a temporary one)")
    args = parser.parse_args()
    print(f"load before: {loadavg()}  (2-core machine shared with other jobs; figures vary with it)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="fb-serve-bench-") as tmp:
        log = Path(tmp) / "serve.log"
        data_dir = args.data_dir.resolve() if args.data_dir else Path(tmp) / "data"
        process = start_server(args.tree.resolve(), data_dir, port, log)
        base = f"http://127.0.0.1:{port}"
        try:
            started = time.perf_counter()
            deadline = time.monotonic() + 900
            while True:
                if process.poll() is not None:
                    sys.exit("the server exited: " + log.read_text()[-2000:])
                try:
                    r = httpx.get(
                        base + "/search",
                        params={"q": "warm-up", "k": 1},
                        headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=900,
                    )
                    if r.status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    sys.exit("the server did not get ready in 15 minutes")
                time.sleep(0.5)
            print(
                f"server ready (ingest of 500 rows included) in {time.perf_counter() - started:.1f} s; tree {args.tree}"
            )
            asyncio.run(bench(base, args.rounds, args.batch))
        finally:
            stop(process)
    print(f"\nload after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
