"""The CSV example flows on the question set their settings were tuned on and on a held-out one.

hybrid_csv_rag.json's fusion weights and views were chosen with ``flowbuilder tune`` on
vwo500_userworded.jsonl; vwo500_paraphrased.jsonl was written afterwards and never used to choose a
setting. Each set: plain dense retrieval over labelled rows (row_labelled, the baseline), the naive
course flow, and the hybrid flow, with hit@5, hit@chars (2,000), MRR and the paired verdict against the
baseline. Timing: a cold run, then ``--repeats`` warm runs (embeddings cached), min and median, with the
machine's load average (run it with ``nice``; the cold run embeds ~2,000 texts).

    nice -n 10 python benchmarks/example_flows.py [--repeats 1] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from flowbuilder.evaluation.compare import Comparison, FlowComparer, FlowSource
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.executor import Executor

ROOT = Path(__file__).resolve().parents[1]
FLOWS = ("row_labelled_csv_rag.json", "naive_csv_rag.json", "hybrid_csv_rag.json")
SETS = {"tuned on": "vwo500_userworded.jsonl", "held out": "vwo500_paraphrased.jsonl"}


def run(data_dir: Path, questions: str) -> tuple[Comparison, float]:
    comparer = FlowComparer(Executor(data_dir=data_dir))
    started = time.perf_counter()
    comparison = comparer.compare_many(
        [FlowSource(ROOT / "flows" / name) for name in FLOWS],
        load_questions(ROOT / "data" / "questions" / questions),
        5,
        relevance="strict",
        labels=[name.removesuffix(".json") for name in FLOWS],
    )
    return comparison, time.perf_counter() - started


def report(role: str, questions: str, comparison: Comparison, cold: float, warm: list[float]) -> None:
    n = comparison.flows[0].metrics.questions
    print(f"\n{questions} ({role}; {n} questions, k = 5, strict relevance, hit@chars at {comparison.chars})")
    print(f"  {'flow':<22} {'hit@1':>6} {'hit@5':>6} {'hit@chars':>9} {'MRR':>6}  vs row_labelled (baseline)")
    for ev in comparison.flows:
        m = ev.metrics
        pair = comparison.pair_for(ev)
        versus = "baseline" if pair is None else pair.verdict
        print(f"  {ev.label:<22} {m.hit_at_1:>6.3f} {m.hit_at_k:>6.3f} {m.hit_at_chars:>9.3f} {m.mrr:>6.3f}  {versus}")
    timing = f"warm min {min(warm):.1f} s, median {statistics.median(warm):.1f} s" if warm else "no warm runs"
    print(f"  time: cold {cold:.1f} s; {timing}; load average {os.getloadavg()[0]:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="examples-bench-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        for role, questions in SETS.items():
            comparison, cold = run(data_dir, questions)
            warm = [run(data_dir, questions)[1] for _ in range(args.repeats)]
            report(role, questions, comparison, cold, warm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
