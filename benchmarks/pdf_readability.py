"""PDF text before and after layout-aware extraction: retrieval on the PRD question set and readability.

Three variants of flows/pdf_rag.json (the RAG Explorer) on data/questions/prd_questions.jsonl, k = 4:

* before: pypdf's plain extraction (loader ``pdf_text: plain``) and the recursive splitter 1200/200;
* after, recursive: layout extraction with the repairs of ``nodes/pdf_text.py``, same splitter;
* after, window: layout extraction and ``splitter.window`` (the RAG Explorer's own 1200/200 chunker).

Readability is the mean number of words per non-empty line of each question's top hit (plain mode
gives about one). Timing: a cold run, then ``--repeats`` warm runs (embeddings cached), min and median,
with the machine's load average.

    python benchmarks/pdf_readability.py [--repeats 3] [--data-dir DIR]
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
from flowbuilder.formats.native import load_flow

ROOT = Path(__file__).resolve().parents[1]
FLOW = ROOT / "flows" / "pdf_rag.json"
QUESTIONS = ROOT / "data" / "questions" / "prd_questions.jsonl"
VARIANTS = {
    "before (plain, recursive)": ("plain", "splitter.recursive"),
    "after (layout, recursive)": ("layout", "splitter.recursive"),
    "after (layout, window)": ("layout", "splitter.window"),
}


def sources() -> list[FlowSource]:
    out = []
    for label, (mode, splitter) in VARIANTS.items():
        flow = load_flow(FLOW)
        flow.node("loader").config["pdf_text"] = mode
        flow.node("splitter").type = splitter
        flow.node("splitter").config = {"chunk_size": 1200, "chunk_overlap": 200}
        flow.node("store").config["collection"] = f"prd-bench-{mode}-{splitter.split('.')[1]}"
        out.append(FlowSource(FLOW, flow, label, f"pdf_text={mode} splitter={splitter}"))
    return out


def words_per_line(text: str) -> float:
    lines = [line for line in text.splitlines() if line.strip()]
    return sum(len(line.split()) for line in lines) / len(lines) if lines else 0.0


def run(data_dir: Path) -> tuple[Comparison, float]:
    comparer = FlowComparer(Executor(data_dir=data_dir))
    started = time.perf_counter()
    comparison = comparer.compare_many(
        sources(), load_questions(QUESTIONS), 4, relevance="strict", labels=list(VARIANTS)
    )
    return comparison, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="pdf-bench-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        comparison, cold = run(data_dir)
        warm = [run(data_dir)[1] for _ in range(args.repeats)]
    m0 = comparison.flows[0].metrics
    print(f"{m0.questions} questions, k = 4, {comparison.relevance} relevance, hit@chars at {comparison.chars}")
    header = f"{'variant':<27} {'chunks':>6} {'hit@1':>6} {'hit@4':>6} {'hit@chars':>9} {'MRR':>6}"
    header += f" {'top-hit words/line':>18}"
    print(header)
    print("-" * len(header))
    for ev in comparison.flows:
        m = ev.metrics
        tops = [o.hits[0].document.text for o in ev.outcomes if o.hits]
        readability = statistics.mean(words_per_line(t) for t in tops) if tops else 0.0
        print(
            f"{ev.label:<27} {ev.stats.chunks:>6} {m.hit_at_1:>6.3f} {m.hit_at_k:>6.3f} {m.hit_at_chars:>9.3f} "
            f"{m.mrr:>6.3f} {readability:>18.1f}"
        )
    for pair in comparison.pairs:
        print(f"  {pair.b.label} vs {pair.a.label}: {pair.verdict}")
    print(
        f"\ntime for the 3 variants: cold {cold:.1f} s; warm min {min(warm):.1f} s, median "
        f"{statistics.median(warm):.1f} s over {len(warm)} runs; load average at end: {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
