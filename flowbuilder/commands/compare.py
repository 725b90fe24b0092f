"""``flowbuilder compare FLOW... --questions Q.jsonl``: retrieval of two or more flows, a leaderboard and verdicts."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from flowbuilder.commands._common import in_worker
from flowbuilder.commands._sweep import add_sweep_options, relevance_line, sweep_setup
from flowbuilder.evaluation.compare import (
    DEEP_K,
    SORT_METRICS,
    Comparison,
    FlowEvaluation,
    FlowSource,
)
from flowbuilder.evaluation.misses import MISS_KINDS, MISS_LABELS

SORT_NAMES = {"mrr": "MRR", "hit@k": "hit@k", "hit@chars": "hit@chars"}

EPILOG = """\
Only the ingestion and retrieval part of each flow runs: the flow runs up to its vector store node(s),
then every question goes through the flow's final retrieval node (the retriever, fusion or reranker
whose query comes from the chat input; a store's own search when there is none). Prompts, LLMs and
chat outputs are never run. Each flow's stores get a namespace of their own (the collection suffixed
with a fingerprint of what feeds it), so flows that share a collection name cannot see each other's
chunks. Relevance (--relevance):
  lenient  a chunk is relevant if its metadata names a gold record or it contains the fact
           (the default for questions without facts)
  strict   a chunk is relevant if it contains the fact (no fact: the whole gold record), so a chunk
           holding only part of a record that the chunking cut does not count (the default when the
           questions carry facts)
hit@chars N (--chars) judges every flow at an equal prompt budget: the fact (or the gold record) must
lie within the first N characters of the context the prompt would get, the top k rendered as the
prompt renders them (default N: the prompt's context_chars, else 2000). --sort hit@chars orders the
leaderboard by it.
Metrics are over questions that have an answer; questions with "gold": [] are listed but not scored.

The first flow is the baseline. Every other flow gets a verdict against it: the paired difference in
hit@1, hit@k and MRR with a 95% bootstrap interval (10,000 resamples over questions, seeded) and an
exact sign test on the questions where one flow ranked the evidence better. Each miss says why:
cut across chunks, ranked below k (with its rank), past the embedder's token limit, or in no chunk.

--vary NODE.FIELD=V1,V2 (repeatable) compares variants of ONE flow, e.g.
  flowbuilder compare flows/pdf_rag.json --vary splitter.chunk_size=300,600,1200 --questions Q.jsonl
Only what a variant changes is recomputed (embeddings come from the cache).

Thresholds apply to every flow but the baseline: --min-hit-at-k and --min-mrr exit 1 when a candidate
is below them; --require-significant exits 1 unless each candidate is significantly better than the
baseline, so a CI job can gate a new chunking strategy on more than noise.

Exit codes: 0 ok; 1 a threshold failed or a flow could not run (the flow and node are named);
2 missing flow/question file or bad usage."""


def register(subparsers: Any) -> None:
    """Add ``flowbuilder compare``: the leaderboard, significance verdicts and miss reasons of two or more flows
    (or ``--vary`` variants of one) on the same question set."""
    parser = subparsers.add_parser(
        "compare",
        help="compare the retrieval of two or more flows on a question set",
        description="Compare flows' chunking and retrieval on the same questions: a leaderboard (hit@1, hit@k, "
        "MRR, recall@k, prompt size, chunks, split facts, ingest time), significance verdicts against the first "
        "flow, chunk statistics and per-question ranks with the reason for every miss.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("flows", metavar="FLOW", nargs="+", help="flow files (.json); the first is the baseline")
    parser.add_argument("--questions", required=True, metavar="Q.jsonl", help="question set (JSONL)")
    add_sweep_options(parser)
    parser.add_argument(
        "--sort",
        choices=SORT_METRICS,
        default="mrr",
        help="order of the leaderboard (default mrr; hit@chars compares at an equal prompt budget)",
    )
    parser.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="NODE.FIELD=V1,V2",
        help="compare variants of one flow with this config field set to each value (repeatable: all combinations)",
    )
    parser.add_argument("--json", action="store_true", help="print the full comparison as JSON (with the hits)")
    parser.add_argument("--min-hit-at-k", type=float, metavar="X", help="exit 1 if a candidate's hit@k is below X")
    parser.add_argument("--min-mrr", type=float, metavar="Y", help="exit 1 if a candidate's MRR is below Y (0-1)")
    parser.add_argument(
        "--require-significant",
        action="store_true",
        help="exit 1 unless every candidate is significantly better than the baseline (MRR interval above 0)",
    )
    parser.set_defaults(handler=handle)


def flow_sources(args: argparse.Namespace) -> list[FlowSource]:
    """The flows to compare: the files as given, or with --vary the variants of the one flow given."""
    from flowbuilder.cli import UsageError
    from flowbuilder.evaluation.compare import read_flow

    for path in args.flows:
        if not Path(path).is_file():
            raise UsageError(f"{path}: no such flow file" + _listing(Path(path).parent, "*.json"))
    if not args.vary:
        if len(args.flows) < 2:
            raise UsageError("compare needs two or more flows (or one flow with --vary NODE.FIELD=V1,V2).")
        return [FlowSource(Path(path)) for path in args.flows]
    if len(args.flows) != 1:
        raise UsageError("--vary builds variants of ONE flow; give exactly one flow file with it.")
    from flowbuilder.evaluation.variants import VariantError, build_variants

    path = Path(args.flows[0])
    flow = read_flow(path)
    try:
        variants = build_variants(flow, list(args.vary))
    except VariantError as exc:
        raise UsageError(str(exc)) from None
    if len(variants) < 2:
        raise UsageError("--vary gives only one variant; list two or more values, e.g. splitter.chunk_size=300,500.")
    return [FlowSource(path, variant_flow, f"{flow.name} [{name}]", name) for name, variant_flow in variants]


def handle(args: argparse.Namespace) -> int:
    """Run ``compare``: check the thresholds' range before any ingest, judge every flow in a worker thread that
    Ctrl-C cancels, print the report (or ``--json``) and return 1 when a candidate fails a threshold."""
    from flowbuilder.cli import UsageError

    for name in ("min_hit_at_k", "min_mrr"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= 1:
            raise UsageError(f"--{name.replace('_', '-')} must be between 0 and 1, got {value}.")
    from flowbuilder.evaluation.compare import read_flow

    sources = flow_sources(args)
    sweep = sweep_setup(args, [source.flow or read_flow(source.path) for source in sources])

    def work(cancel: threading.Event) -> Comparison:
        return sweep.comparer.compare_many(
            sources,
            sweep.questions,
            args.k,
            on_progress=sweep.progress,
            relevance=sweep.relevance,
            chars=args.chars,
            sort=args.sort,
            cancel_event=cancel,
        )

    comparison = in_worker("flowbuilder-compare", work, sweep.cancel)
    for ev in comparison.flows:  # on stderr whatever the output format: a fallback must never pass unseen
        for line in ev.degraded:
            print(f"DEGRADED ({ev.label}): {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False))
    else:
        print_report(comparison)
    failures = threshold_failures(comparison, args.min_hit_at_k, args.min_mrr, args.require_significant)
    for failure in failures:
        print(f"THRESHOLD FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _listing(folder: Path, pattern: str) -> str:
    if not folder.is_dir():
        return ""
    names = sorted(p.name for p in folder.glob(pattern))
    return f"; files in {folder}: {', '.join(names)}" if names else ""


def threshold_failures(
    comparison: Comparison,
    min_hit_at_k: float | None,
    min_mrr: float | None,
    require_significant: bool = False,
) -> list[str]:
    """What every candidate (each flow but the baseline) fails of the thresholds."""
    failures: list[str] = []
    for candidate in comparison.flows[1:]:
        metrics = candidate.metrics
        who = f"{candidate.name} ({candidate.label})"
        if min_hit_at_k is not None and metrics.hit_at_k < min_hit_at_k:
            failures.append(f"{who}: hit@{metrics.k} = {metrics.hit_at_k:.3f} < {min_hit_at_k}")
        if min_mrr is not None and metrics.mrr < min_mrr:
            failures.append(f"{who}: MRR = {metrics.mrr:.3f} < {min_mrr}")
        pair = comparison.pair_for(candidate)
        if require_significant and pair is not None and not (pair.significant and pair.differences["mrr"].diff > 0):
            failures.append(f"{who} is not significantly better than {comparison.a.label}: {pair.verdict}")
    return failures


def _num(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def stat_rows(ev: FlowEvaluation) -> list[tuple[str, str]]:
    """The chunking and retrieval figures of one flow as (label, value) rows, for the side-by-side table of
    a two-flow comparison; a figure the flow cannot give reads ``n/a`` rather than 0."""
    s, m = ev.stats, ev.metrics
    limit = f" (> {s.token_limit} tokens)" if s.token_limit else ""
    files = "n/a" if ev.files is None else f"{ev.files[0]} / {ev.files[1]}"
    return [
        ("files read / skipped", files),
        ("chunks", str(s.chunks)),
        ("chunk length min/mean/max", f"{s.length_min} / {s.length_mean:.0f} / {s.length_max}"),
        ("records cut", f"{s.records_cut} of {s.records} ({100 * s.records_cut_share:.0f}%)"),
        ("chunks starting at a record", str(s.chunks_at_record_start)),
        ("chunks with column labels", _num(s.chunks_with_labels)),
        (f"chunks over token limit{limit}", _num(s.chunks_over_token_limit)),
        ("embedded this run", _num(ev.embedded)),
        ("hit@1", f"{m.hit_at_1:.3f}"),
        (f"hit@{m.k}", f"{m.hit_at_k:.3f}"),
        (f"hit@{m.chars}ch (equal budget)", f"{m.hit_at_chars:.3f}"),
        ("MRR", f"{m.mrr:.3f}"),
        (f"recall@{m.k}", f"{m.recall_at_k:.3f}"),
        (f"nDCG@{m.k}", f"{m.ndcg_at_k:.3f}"),
    ]


MISS_SHORT = {"cut": "cut", "below_k": "below k", "past_token_limit": "past limit", "no_chunk": "no chunk"}


def leaderboard_rows(comparison: Comparison) -> list[list[str]]:
    """Header, then one row per flow by MRR: the leaderboard the text report and the page show."""
    k = comparison.k
    header = ["#", "flow", "hit@1", f"hit@{k}", f"hit@{comparison.chars}ch", "MRR", f"recall@{k}", "top-3 chars",
              "chunks", "split facts",
              "ingest s", "misses (cut/below k/past limit/no chunk)", "vs baseline"]  # fmt: skip
    rows = [header]
    for place, ev in enumerate(comparison.leaderboard(), start=1):
        m = ev.metrics
        pair = comparison.pair_for(ev)
        counts = ev.miss_counts()
        versus = "baseline" if pair is None else _short_verdict(pair.significant, pair.differences["mrr"].diff)
        rows.append(
            [
                str(place),
                f"{ev.label}: {ev.name}" + (" [DEGRADED]" if ev.degraded else ""),
                f"{m.hit_at_1:.3f}",
                f"{m.hit_at_k:.3f}",
                f"{m.hit_at_chars:.3f}",
                f"{m.mrr:.3f}",
                f"{m.recall_at_k:.3f}",
                f"{ev.prompt_chars:.0f}",
                str(ev.stats.chunks),
                str(ev.facts_split),
                f"{ev.ingest_seconds:.1f}",
                "/".join(str(counts[kind]) for kind in MISS_KINDS),
                versus,
            ]
        )
    return rows


def _short_verdict(significant: bool, diff: float) -> str:
    if not significant:
        return "no detectable difference"
    return "better" if diff > 0 else "worse"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        cells = [cell.ljust(w) if i in (1, len(row) - 1) else cell.rjust(w) for i, (cell, w) in
                 enumerate(zip(row, widths, strict=True))]  # fmt: skip
        lines.append("  ".join(cells).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def print_report(comparison: Comparison) -> None:
    """The text report: what each flow ran, the leaderboard, the verdicts against the baseline, why the
    misses happened, then the side-by-side detail (two flows) or the per-question grid (more)."""
    k = comparison.k
    first = comparison.a
    for ev in comparison.flows:
        where = f" via {ev.retrieval_node} ({ev.retrieval_type})" if ev.retrieval_node else " via store search"
        print(f"{ev.label}: {ev.name}  ({ev.path}){where}")
        print(f"   {ev.description}")
        for note in ev.adjusted:
            print(f"   adjusted: {note}")
    print(
        f"{first.metrics.questions} questions with an answer, {first.metrics.unanswerable} without; k = {k}; "
        f"hit@chars at {comparison.chars} characters of the prompt's context"
    )
    print(relevance_line(comparison.relevance) + "\n")
    print(f"Leaderboard (by {SORT_NAMES.get(comparison.sort, comparison.sort)}):")
    for line in _table(leaderboard_rows(comparison)):
        print(line)
    print(f"\nAgainst the baseline {first.label} (paired over questions; 95% bootstrap CI, exact sign test):")
    for pair in comparison.pairs:
        d = pair.differences
        print(f"  {pair.b.label} vs {pair.a.label}: {pair.verdict}")
        print(
            f"      hit@1 {_ci(d['hit@1'].diff, d['hit@1'].low, d['hit@1'].high)}; hit@{k} "
            f"{_ci(d['hit@k'].diff, d['hit@k'].low, d['hit@k'].high)}; McNemar on hit@{k}: "
            f"{pair.hit_test.wins} gained, {pair.hit_test.losses} lost, p = {pair.hit_test.p_value:.2g}; "
            f"hit@{comparison.chars}ch {_ci(d['hit@chars'].diff, d['hit@chars'].low, d['hit@chars'].high)}"
        )
    print("\nWhy the misses happened (questions not found in the top k):")
    for ev in comparison.flows:
        counts = ev.miss_counts()
        total = sum(counts.values())
        parts = ", ".join(f"{counts[kind]} {MISS_LABELS[kind]}" for kind in MISS_KINDS if counts[kind])
        print(f"  {ev.label}: {total} missed" + (f": {parts}" if parts else ""))
    if len(comparison.flows) == 2:
        _print_two(comparison)
    else:
        _print_grid(comparison)


def _ci(diff: float, low: float, high: float) -> str:
    def signed(value: float) -> str:
        return f"{value:+.3f}".replace("-", "−")

    return f"{signed(diff)} ({signed(low)}..{signed(high)})"


def _print_two(comparison: Comparison) -> None:
    a, b, k = comparison.a, comparison.b, comparison.k
    print()
    rows_a, rows_b = stat_rows(a), stat_rows(b)
    width = max(len(name) for name, _ in rows_a)
    col = max(12, *(len(v) for _, v in rows_a + rows_b))
    print(f"{'':<{width}}  {'A':>{col}}  {'B':>{col}}")
    for (name, va), (_, vb) in zip(rows_a, rows_b, strict=True):
        print(f"{name:<{width}}  {va:>{col}}  {vb:>{col}}")
    for ev in (a, b):
        for warning in ev.warnings:
            print(f"warning ({ev.label}): {warning}")
    print(f"\nRank of the first relevant chunk per question ('-' = not in the top {k}; why A / B missed):")
    id_width = max([2, *(len(r.question.id) for r in comparison.rows)])
    print(f"{'id':<{id_width}}  {'A':>3}  {'B':>3}  {'better':<6}  {'why missed':<22}  question")
    for index, row in enumerate(comparison.rows):
        better = {"a": "A", "b": "B", "tie": "=", "-": "n/a"}[row.winner]
        text = row.question.question if len(row.question.question) <= 60 else row.question.question[:57] + "..."
        why = ", ".join(f"{ev.label} {reason}" for ev in (a, b) if (reason := _why(ev, index)))
        print(
            f"{row.question.id:<{id_width}}  {_rank(row.rank_a):>3}  {_rank(row.rank_b):>3}  {better:<6}  "
            f"{why:<22}  {text}{_legs(a, b, index)}"
        )
    print(
        f"\nB vs A: {comparison.wins_b} wins, {comparison.wins_a} losses, {comparison.ties} ties"
        + (f" ({a.metrics.unanswerable} unanswerable not compared)" if a.metrics.unanswerable else "")
    )


def _why(ev: FlowEvaluation, index: int, short: dict[str, str] = MISS_SHORT) -> str:
    """Why ``ev`` missed question ``index`` in a few characters ("" for a hit or a question without an answer)."""
    miss = ev.misses[index] if index < len(ev.misses) else None
    if miss is None:
        return ""
    if miss.kind == "below_k":
        return f"rank {miss.rank}" if miss.rank else f">{DEEP_K}"
    return short[miss.kind]


def _legs(a: FlowEvaluation, b: FlowEvaluation, index: int) -> str:
    parts = []
    for ev in (a, b):
        legs = ev.legs[index] if index < len(ev.legs) else {}
        miss = ev.misses[index] if index < len(ev.misses) else None
        legs = legs or (miss.legs if miss is not None else {})
        if legs:
            parts.append(f"{ev.label} legs: " + ", ".join(f"{name} {rank}" for name, rank in legs.items()))
    return f"  [{'; '.join(parts)}]" if parts else ""


def _print_grid(comparison: Comparison) -> None:
    flows = comparison.flows
    print(
        f"\nRank of the first relevant chunk per question (a miss of the top {comparison.k} says why: 'cut', "
        f"'rank N' below k, 'limit' past the token limit, 'none' in no chunk; '-' no answer to find):"
    )
    id_width = max([2, *(len(o.question.id) for o in flows[0].outcomes)])
    width = max(8, *(len(ev.label) for ev in flows))
    print(f"{'id':<{id_width}}  " + "  ".join(f"{ev.label:>{width}}" for ev in flows) + "  question")
    for index, outcome in enumerate(flows[0].outcomes):
        cells = "  ".join(f"{_grid_cell(ev, index):>{width}}" for ev in flows)
        text = outcome.question.question
        text = text if len(text) <= 70 else text[:67] + "..."
        print(f"{outcome.question.id:<{id_width}}  {cells}  {text}")
    for ev in flows:
        for warning in ev.warnings:
            print(f"warning ({ev.label}): {warning}")


GRID_SHORT = {"cut": "cut", "below_k": "below k", "past_token_limit": "limit", "no_chunk": "none"}


def _grid_cell(ev: FlowEvaluation, index: int) -> str:
    rank = ev.outcomes[index].first_rank
    return str(rank) if rank is not None else _why(ev, index, GRID_SHORT) or "-"


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


__all__ = ["handle", "print_report", "register", "threshold_failures"]
