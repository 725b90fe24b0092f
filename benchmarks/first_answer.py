"""The demo's first answer: how long the first question waits, with and without the background ingest.

The demo flow (flows/row_labelled_csv_rag.json: 500 rows, local MiniLM, Chroma) is run the way the builder
runs it, in a fresh data dir each time (nothing cached):

  * before: the first question starts the ingest (load, label, split, embed 500 rows, write) and then
    retrieves: what a user waited for until now;
  * during: the question comes while the background ingest still embeds (asked the moment the flow opened, in a
    fresh data dir each time): keyword search stands in for the dense search (:mod:`flowbuilder.standin`) and
    the whole flow answers (prompt, then the model; with no Ollama here, its extractive fallback), as the
    builder's chat does. ``--during`` fresh starts for min/median;
  * after: the builder opened the flow and embedded the rows in the background
    (:class:`flowbuilder.background.BackgroundIngest`); the first question then only retrieves. Asked
    ``--questions`` times (new questions) for min/median.

"Before" and "after" time the retrieval stage's output (the demo's Ollama model is not needed offline: the chat
shows the retrieved passages when no model runs). The machine's load is printed before and after.

    python benchmarks/first_answer.py [--questions 5] [--during 5] [--skip-before]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench_common import loadavg

if TYPE_CHECKING:
    from flowbuilder.flow import Flow

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
    parser.add_argument("--during", type=int, default=5, help="fresh starts timed while the ingest runs")
    parser.add_argument("--skip-before", action="store_true", help="leave out the slow 'before' figure")
    args = parser.parse_args()
    flow = load_flow(DEMO)
    print(f"load before: {loadavg()}  (2-core machine shared with other jobs)")
    if args.during:
        during(flow, args.during)
    if args.skip_before:
        return 0
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


def during(flow: Flow, repeats: int) -> None:
    """The first question the moment the flow opened, each time in a fresh data dir (no index, nothing cached)."""
    from flowbuilder.background import BackgroundIngest
    from flowbuilder.executor import Executor

    waits, cpus, counts = [], [], []
    for i in range(repeats):
        with tempfile.TemporaryDirectory(prefix="fb-during-") as name:
            executor = Executor(data_dir=Path(name))
            job = BackgroundIngest(executor, flow, base_dir=DEMO.parent)
            stand_in = job.stand_in()
            if stand_in is None:
                sys.exit("the demo has no keyword stand-in")
            job.start()
            try:
                start, cpu = time.perf_counter(), time.process_time()
                with job.paused():  # as the builder's chat does: the ingest waits after its current batch
                    run = executor.run(stand_in.flow, inputs=f"{QUESTION} ({i})", base_dir=DEMO.parent)
                waits.append(time.perf_counter() - start)
                cpus.append(time.process_time() - cpu)
                counts.append(f"{job.done}/{job.total}")
                answer = run.results.get("answer")
                if answer is None or not answer.succeeded:
                    sys.exit("no answer: " + "; ".join(str(r.error) for r in run.failed()))
            finally:
                job.cancel()
                job.wait()
    print(
        f"during: first question while the ingest runs, answered by keyword search: min {min(waits):.2f} s, "
        f"median {statistics.median(waits):.2f} s over {len(waits)} fresh starts (embedded when answered: "
        f"{', '.join(counts)}); CPU time of the process meanwhile (the answer, and the ingest's batch in flight "
        f"when it paused): median {statistics.median(cpus):.2f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
