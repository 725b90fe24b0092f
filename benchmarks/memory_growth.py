"""Memory as rows grow: CSV -> labeller -> splitter.record -> embedder -> Chroma, at 500 / 5,000 / 100,000 rows.

Each size runs in a fresh process (`flowbuilder run`, no result cache) and reports wall time and peak RSS
(ru_maxrss of that process). The 100,000-row CSV is built here by repeating the 5,000-row file with new
ids (written to a temporary folder, never committed).

The embedder is the screening one (``embedder.wordllama``, a static word-vector model) by default: the
local MiniLM at ~14 texts/s would take about 2 hours for 100,000 rows, while what grows with rows (the
table, its chunks, the vectors, the store) is the same whichever embedder makes the vectors. Use
``--embedder local --sizes 500,5000`` to measure the real embedder on a bounded subset.

    python benchmarks/memory_growth.py [--sizes 500,5000,100000] [--embedder wordllama|local]

Target (issue 25): 100,000 rows under 1 GB RSS. The machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import loadavg

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "data" / "vwo_5000_test_cases.csv"

MEASURE = """
import resource, sys, time
from pathlib import Path
from flowbuilder.cache import ResultCache
from flowbuilder.executor import Executor
from flowbuilder.formats.native import load_flow
flow = load_flow(Path(sys.argv[1]))
start = time.perf_counter()
run = Executor(cache=ResultCache(max_entries=0)).run(flow, use_cache=False)
elapsed = time.perf_counter() - start
failed = [str(r.error) for r in run.failed()]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"RESULT {elapsed:.1f} {peak:.0f} {run.results['store'].details.get('count')} {'; '.join(failed)}")
"""


def build_csv(rows: int, path: Path) -> None:
    """The 5,000-row file repeated until ``rows``, every copy with new Issue Keys."""
    with SOURCE.open(encoding="utf-8-sig", newline="") as src:
        reader = csv.reader(src)
        header = next(reader)
        body = list(reader)
    id_column = header.index("Issue Key")
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        for n in range(rows):
            row = list(body[n % len(body)])
            copy = n // len(body)
            if copy:
                row[id_column] = f"{row[id_column]}-R{copy}"
            writer.writerow(row)


def flow_file(csv_path: Path, embedder: str, folder: Path) -> Path:
    flow = {
        "format": "flowbuilder",
        "version": 1,
        "name": f"memory growth {csv_path.stem}",
        "nodes": [
            {"id": "load", "type": "loader.file", "config": {"path": str(csv_path), "mode": "records"}},
            {"id": "label", "type": "labeller.row"},
            {"id": "split", "type": "splitter.record"},
            {"id": "embed", "type": f"embedder.{embedder}", "config": {"cache": False}},
            {
                "id": "store",
                "type": "vectorstore.chroma",
                "config": {"collection": "growth", "persist_directory": str(folder / "chroma")},
            },
        ],
        "edges": [
            {"source": "load", "source_port": "records", "target": "label", "target_port": "records"},
            {"source": "label", "source_port": "records", "target": "split", "target_port": "documents"},
            {"source": "split", "source_port": "chunks", "target": "store", "target_port": "documents"},
            {"source": "embed", "source_port": "embedder", "target": "store", "target_port": "embedder"},
        ],
    }
    path = folder / "flow.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="500,5000,100000")
    parser.add_argument("--embedder", choices=("wordllama", "local"), default="wordllama")
    args = parser.parse_args()
    print(f"load before: {loadavg()}  (2-core machine shared with other jobs)")
    print(f"embedder: {args.embedder}; one fresh process per size; Chroma on disk; no caches")
    print(f"  {'rows':>7} {'seconds':>8} {'rows/s':>7} {'peak RSS MB':>11} {'stored':>7}")
    for rows in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="fb-growth-") as name:
            folder = Path(name)
            csv_path = folder / f"rows_{rows}.csv"
            build_csv(rows, csv_path)
            flow = flow_file(csv_path, args.embedder, folder)
            env = dict(os.environ, PYTHONPATH=str(ROOT), FLOWBUILDER_DATA_DIR=str(folder / "data"))
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", MEASURE, str(flow)], env=env, capture_output=True, text=True, timeout=4 * 3600
            )
            line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), "")
            if not line:
                print(f"  {rows:>7} failed after {time.perf_counter() - started:.0f} s: {done.stderr[-500:]}")
                continue
            _, seconds, peak, stored, *error = line.split(" ", 4)
            note = f"  FAILED: {error[0]}" if error and error[0] else ""
            print(
                f"  {rows:>7} {float(seconds):8.1f} {rows / float(seconds):7.0f} {float(peak):11.0f} {stored:>7}{note}"
            )
    print(f"load after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
