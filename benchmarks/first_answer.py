"""The demo's first answer: how long the first question waits, with and without the background ingest.

The demo flow (flows/row_labelled_csv_rag.json: 500 rows, local MiniLM, Chroma) is run the way the builder
runs it, in a fresh data dir each time (nothing cached):

  * before: the first question starts the ingest (load, label, split, embed 500 rows, write) and then
    retrieves: what a user waited for until now;
  * after: the builder opened the flow and embedded the rows in the background
    (:class:`flowbuilder.background.BackgroundIngest`); the first question then only retrieves. Asked
    ``--questions`` times (new questions) for min/median.

The answer is the retrieval stage's output (the demo's Ollama model is not needed offline: the chat shows the
retrieved passages when no model runs). The machine's load is printed before and after.

    python benchmarks/first_answer.py [--questions 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_common import loadavg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "flows" / "row_labelled_csv_rag.json"
QUESTION = "How is an email with two dots in a row handled at login?"


def main() -> int:
    from flowbuilder.background import BackgroundIngest
    from flowbuilder.executor import Executor
    from flowbuilder.formats.native import load_flow

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=5)
    args = parser.parse_args()
    flow = load_flow(DEMO)
    print(f"load before: {loadavg()}  (2-core machine shared with other jobs)")
    with tempfile.TemporaryDirectory(prefix="fb-first-") as name:
        executor = Executor(data_dir=Path(name) / "before")
        start = time.perf_counter()
        run = executor.run(flow, inputs=QUESTION, to="retriever", base_dir=DEMO.parent)
        before = time.perf_counter() - start
        if not run.ok:
            sys.exit("the demo failed: " + "; ".join(str(r.error) for r in run.failed()))
        print(f"before: first question starts the ingest: {before:.1f} s to the first answer")

        executor = Executor(data_dir=Path(name) / "after")
        job = BackgroundIngest(executor, flow, base_dir=DEMO.parent)
        start = time.perf_counter()
        job.start()
        job.wait()
        print(f"after:  background ingest from opening the flow: {time.perf_counter() - start:.1f} s (no one waits)")
        waits = []
        for i in range(args.questions):
            start = time.perf_counter()
            run = executor.run(flow, inputs=f"{QUESTION} ({i})", to="retriever", base_dir=DEMO.parent)
            waits.append(time.perf_counter() - start)
            if not run.ok:
                sys.exit("the demo failed: " + "; ".join(str(r.error) for r in run.failed()))
        print(
            f"after:  first question once the ingest is done: min {min(waits) * 1000:.0f} ms, "
            f"median {statistics.median(waits) * 1000:.0f} ms over {len(waits)} questions"
        )
    print(f"load after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
