"""The chunking lab: the seven strategies of flows/chunking on data/docs, one leaderboard.

Target: with the embeddings cached, the whole 7-flow leaderboard (ingest + 57 questions per flow) in
under 10 s. The script runs the comparison twice in the same data dir: a cold run (embeds every chunk
and, for the semantic flow, every sentence) and a warm run with a fresh comparer (no in-memory result
cache; the on-disk embedding cache and the stores' sync skip what is already embedded), and times both.

    python benchmarks/chunking_lab.py [--relevance strict|lenient] [--k 5] [--embedder local|wordllama]
                                      [--data-dir DIR]

--embedder wordllama swaps every flow's embedder for the screening-grade embedder.wordllama (bundled
weights, very fast, weaker on reworded questions): the table is then labelled SCREENING.
Relevance defaults to strict: a retrieved chunk counts only if it contains the question's fact, the
article's measure ("the chunk holds the answer"), not merely the right page.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from flowbuilder.evaluation.compare import Comparison, FlowComparer, FlowSource, screening_source
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.executor import Executor

ROOT = Path(__file__).resolve().parents[1]
FLOWS = ROOT / "flows" / "chunking"
QUESTIONS = ROOT / "data" / "questions" / "docs.jsonl"
STRATEGIES = ("fixed300", "fixed300_overlap", "recursive", "sentence", "semantic", "markdown", "parent_child")
TARGET_SECONDS = 10.0


def sources(embedder: str) -> list[FlowSource]:
    if embedder == "local":
        return [FlowSource(FLOWS / f"{name}.json", name=name) for name in STRATEGIES]
    return [screening_source(FLOWS / f"{name}.json", name) for name in STRATEGIES]


def run(
    data_dir: Path, embedder: str, k: int, relevance: str, chars: int | None = None, sort: str = "mrr"
) -> tuple[Comparison, float]:
    comparer = FlowComparer(Executor(data_dir=data_dir))
    started = time.perf_counter()
    comparison = comparer.compare_many(
        sources(embedder),
        load_questions(QUESTIONS),
        k,
        relevance=relevance,  # type: ignore[arg-type]
        labels=list(STRATEGIES),
        chars=chars,
        sort=sort,
    )
    return comparison, time.perf_counter() - started


def print_leaderboard(comparison: Comparison, embedder: str) -> None:
    k = comparison.k
    first = comparison.flows[0].metrics
    grade = (
        "  (SCREENING-GRADE embedder: wordllama; rank settings with it, report with MiniLM)"
        if embedder != "local"
        else ""
    )
    print(
        f"\n{first.questions} answerable + {first.unanswerable} no-answer questions, k = {k}, "
        f"relevance = {comparison.relevance}, hit@chars at {comparison.chars} characters (equal prompt budget), "
        f"sorted by {comparison.sort}{grade}"
    )
    columns = ("hit@1", f"hit@{k}", f"hit@{comparison.chars}ch", "MRR", "chunks", "split facts", "top-3 chars")
    widths = (11, 11, 11, 6, 6, 11, 11)
    header = f"{'#':<2} {'strategy':<17} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True))
    print(header)
    print("-" * len(header))
    n = first.questions
    for place, evaluation in enumerate(comparison.leaderboard(), start=1):
        m = evaluation.metrics
        h1 = round(m.hit_at_1 * n)
        hk = round(m.hit_at_k * n)
        hc = round(m.hit_at_chars * n)
        hits = f"{h1:>3}/{n} {m.hit_at_1:.3f} {hk:>3}/{n} {m.hit_at_k:.3f} {hc:>3}/{n} {m.hit_at_chars:.3f}"
        print(
            f"{place:<2} {evaluation.label:<17} {hits} {m.mrr:>6.3f} "
            f"{evaluation.stats.chunks:>6} {evaluation.facts_split:>11} {evaluation.prompt_chars:>11.0f}"
        )


def findings(comparison: Comparison) -> None:
    board = comparison.leaderboard()
    by_name = {e.label: e for e in board}
    order = [e.label for e in board]
    fixed = by_name["fixed300"]
    print("\nThe article's findings, checked here:")
    worst = order[-1] == "fixed300"
    print(f"  fixed 300 is worst: {'yes' if worst else 'no'} (place {order.index('fixed300') + 1} of {len(order)})")
    print(f"  fixed 300 leaves facts cut across two chunks: {fixed.facts_split} questions")
    best = order[0]
    print(
        f"  markdown-aware is best: {'yes' if best == 'markdown' else 'no'} (best: {best}; markdown place "
        f"{order.index('markdown') + 1}, MRR {by_name['markdown'].metrics.mrr:.3f})"
    )
    print(f"  overlap rescues fixed-size: MRR {fixed.metrics.mrr:.3f} -> {by_name['fixed300_overlap'].metrics.mrr:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--relevance", choices=("strict", "lenient"), default="strict")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--embedder", choices=("local", "wordllama"), default="local")
    parser.add_argument("--data-dir", type=Path, default=None, help="keep stores and the embedding cache here")
    parser.add_argument("--chars", type=int, default=None, help="hit@chars budget (default 2000)")
    parser.add_argument("--sort", choices=("mrr", "hit@k", "hit@chars"), default="mrr", help="leaderboard order")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chunking-lab-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        _, cold = run(data_dir, args.embedder, args.k, args.relevance, args.chars, args.sort)
        comparison, warm = run(data_dir, args.embedder, args.k, args.relevance, args.chars, args.sort)
        print_leaderboard(comparison, args.embedder)
        findings(comparison)
        verdict = "ok" if warm < TARGET_SECONDS else "MISSED"
        print(
            f"\ntime: cold {cold:.1f} s (embeds everything), warm {warm:.1f} s with embeddings cached "
            f"(target < {TARGET_SECONDS:.0f} s: {verdict})"
        )
        return 0 if warm < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
