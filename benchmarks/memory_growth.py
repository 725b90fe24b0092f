"""Memory as rows grow: CSV -> labeller -> splitter.record -> embedder -> Chroma, at 500 / 5,000 / 100,000 rows.

Each size runs in a fresh process (`flowbuilder run`, no result cache) and reports wall time and peak RSS
(ru_maxrss of that process). The 100,000-row CSV is built here by repeating the 5,000-row file with new
ids (written to a temporary folder, never committed).

The embedder is the screening one (``embedder.wordllama``, a static word-vector model) by default: the
local MiniLM at ~14 texts/s would take about 2 hours for 100,000 rows, while what grows with rows (the
table, its chunks, the vectors, the store) is the same whichever embedder makes the vectors. Use
``--embedder local --sizes 500,5000`` to measure the real embedder on a bounded subset.

    python benchmarks/memory_growth.py [--sizes 500,5000,100000] [--embedder wordllama|local]
        [--stream auto|always|never] [--repeat N]

``--stream`` is the executor's streaming mode (flowbuilder/streaming.py): ``auto`` (what users get) streams
the chain loader -> labeller -> splitter -> store batch by batch when the file is at least 8 MB (the
100,000-row file, not the 500- or 5,000-row ones); ``always``/``never`` force it. ``--repeat`` runs each
size N times (fresh processes) and prints min/median.

Target (issue 25): 100,000 rows under 1 GB RSS. The machine's load is printed before and after each size.
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
run = Executor(cache=ResultCache(max_entries=0), stream=sys.argv[2]).run(flow, use_cache=False)
elapsed = time.perf_counter() - start
failed = [str(r.error) for r in run.failed()]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
streamed = "streamed" if "streamed" in run.results["load"].details else "whole"
print(f"RESULT {elapsed:.1f} {peak:.0f} {run.results['store'].details.get('count')} {streamed} {'; '.join(failed)}")
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


def measure(rows: int, embedder: str, stream: str) -> tuple[float, float, str, str] | str:
    """``(seconds, peak RSS MB, stored, streamed|whole)`` of one fresh process, or why it failed."""
    with tempfile.TemporaryDirectory(prefix="fb-growth-") as name:
        folder = Path(name)
        csv_path = folder / f"rows_{rows}.csv"
        build_csv(rows, csv_path)
        flow = flow_file(csv_path, embedder, folder)
        env = dict(os.environ, PYTHONPATH=str(ROOT), FLOWBUILDER_DATA_DIR=str(folder / "data"))
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(flow), stream],
            env=env,
            capture_output=True,
            text=True,
            timeout=4 * 3600,
        )
        line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), "")
        if not line:
            return f"failed after {time.perf_counter() - started:.0f} s: {done.stderr[-500:]}"
        _, seconds, peak, stored, how, *error = line.split(" ", 5)
        if error and error[0]:
            return f"FAILED: {error[0]}"
        return float(seconds), float(peak), stored, how


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="500,5000,100000")
    parser.add_argument("--embedder", choices=("wordllama", "local"), default="wordllama")
    parser.add_argument("--stream", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"embedder: {args.embedder}; stream: {args.stream}; one fresh process per run; Chroma on disk; no caches")
    print(
        f"  {'rows':>7} {'run':>7} {'seconds min/med':>16} {'rows/s':>7} {'peak RSS MB min/med':>20} {'stored':>7} load"
    )
    for rows in (int(s) for s in args.sizes.split(",")):
        load_before = loadavg().split(" ")[0]
        got = [measure(rows, args.embedder, args.stream) for _ in range(args.repeat)]
        fine = [g for g in got if not isinstance(g, str)]
        for problem in (g for g in got if isinstance(g, str)):
            print(f"  {rows:>7} {problem}")
        if not fine:
            continue
        seconds = sorted(g[0] for g in fine)
        peaks = sorted(g[1] for g in fine)
        med_s, med_p = statistics.median(seconds), statistics.median(peaks)
        load = f"{load_before}->{loadavg().split(' ')[0]}"
        print(
            f"  {rows:>7} {fine[0][3]:>7} {seconds[0]:7.1f}/{med_s:<8.1f} {rows / med_s:7.0f} "
            f"{peaks[0]:9.0f}/{med_p:<10.0f} {fine[0][2]:>7}  {load}"
        )
    print(f"load after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
