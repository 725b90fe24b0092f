"""``flowbuilder compare FLOW_A FLOW_B --questions Q.jsonl``: retrieval metrics of two flows side by side."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from flowbuilder.evaluation.compare import Comparison, FlowComparer, FlowEvaluation
from flowbuilder.evaluation.metrics import RELEVANCE_HELP, RELEVANCE_MODES
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.executor import RunEvent

EPILOG = """\
Only the ingestion and retrieval part of each flow runs: the flow is run up to its vector store
node(s) and every question is searched with store.search(question, k); chat inputs, retrievers,
prompts and LLMs are ignored. Relevance (--relevance):
  lenient  a chunk is relevant if its metadata names a gold record or it contains the fact (default)
  strict   a chunk is relevant if it contains the fact (no fact: the whole gold record), so a chunk
           holding only part of a record that the chunking cut does not count
Metrics are over questions that have an answer; questions with "gold": [] are listed but not scored.

Thresholds apply to FLOW_B, the candidate (FLOW_A is the baseline): --min-hit-at-k and --min-mrr
make the command exit 1 when FLOW_B is below them, so a CI job can gate a new chunking strategy.

Re-running (e.g. with another --k) embeds nothing again: vectors come from the embedder's on-disk
cache and the vector store skips chunks it already holds ("embedded" shows what reached the model).

Exit codes: 0 ok; 1 a threshold failed or a flow could not run; 2 missing flow/question file or bad usage."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare the retrieval of two flows on a question set",
        description="Compare two flows' chunking and retrieval on the same questions (hit@1, hit@k, MRR, "
        "recall@k, nDCG@k, chunk statistics, per-question ranks).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("flow_a", metavar="FLOW_A", help="baseline flow file (.json)")
    parser.add_argument("flow_b", metavar="FLOW_B", help="candidate flow file (.json); thresholds apply to it")
    parser.add_argument("--questions", required=True, metavar="Q.jsonl", help="question set (JSONL)")
    parser.add_argument("--k", type=int, default=5, help="number of chunks retrieved per question (default 5)")
    parser.add_argument(
        "--relevance",
        choices=RELEVANCE_MODES,
        default="lenient",
        help="how a retrieved chunk is judged relevant (default lenient); "
        + "; ".join(f"{mode}: {text}" for mode, text in RELEVANCE_HELP.items()),
    )
    parser.add_argument("--json", action="store_true", help="print the full comparison as JSON (with the hits)")
    parser.add_argument("--min-hit-at-k", type=float, metavar="X", help="exit 1 if FLOW_B's hit@k is below X (0-1)")
    parser.add_argument("--min-mrr", type=float, metavar="Y", help="exit 1 if FLOW_B's MRR is below Y (0-1)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=handle)


class _Progress:
    """One updating stderr line per node while the flows ingest and embed."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._open = False
        self._types: dict[str, str] = {}

    def __call__(self, label: str, event: RunEvent) -> None:
        if not self.enabled:
            return
        if event.kind == "progress":
            done, total = event.data.get("done", 0), event.data.get("total", 0)
            stores = str(self._types.get(event.node_id or "", "")).startswith("vectorstore.")
            what = event.data.get("message") or ("embedding" if stores else "working")
            sys.stderr.write(f"\r  [{label}] {event.node_id}: {what} {done}/{total}   ")
            self._open = True
        elif event.kind in ("node_started", "node_cached", "node_failed"):
            self._close()
            if event.kind == "node_started" and event.node_id:
                self._types[event.node_id] = str(event.data.get("type", ""))
            verb = {"node_started": "running", "node_cached": "cached", "node_failed": "FAILED"}[event.kind]
            sys.stderr.write(f"[{label}] {verb} {event.node_id}\n")
        elif event.kind == "run_finished":
            self._close()
        sys.stderr.flush()

    def _close(self) -> None:
        if self._open:
            sys.stderr.write("\n")
            self._open = False


def handle(args: argparse.Namespace) -> int:
    from flowbuilder.cli import UsageError

    if args.k < 1:
        raise UsageError(f"--k must be at least 1, got {args.k}.")
    for name in ("min_hit_at_k", "min_mrr"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= 1:
            raise UsageError(f"--{name.replace('_', '-')} must be between 0 and 1, got {value}.")
    for path in (args.flow_a, args.flow_b):
        if not Path(path).is_file():
            raise UsageError(f"{path}: no such flow file" + _listing(Path(path).parent, "*.json"))
    questions = load_questions(args.questions)
    progress = _Progress(enabled=not args.quiet)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["comparison"] = FlowComparer().compare(
                args.flow_a, args.flow_b, questions, args.k, on_progress=progress, relevance=args.relevance
            )
        except BaseException as exc:  # re-raised in the main thread, where the CLI reports it
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="flowbuilder-compare", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.2)
    if "error" in outcome:
        raise outcome["error"]
    comparison: Comparison = outcome["comparison"]
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False))
    else:
        print_report(comparison)
    failures = threshold_failures(comparison.b, args.min_hit_at_k, args.min_mrr)
    for failure in failures:
        print(f"THRESHOLD FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _listing(folder: Path, pattern: str) -> str:
    if not folder.is_dir():
        return ""
    names = sorted(p.name for p in folder.glob(pattern))
    return f"; files in {folder}: {', '.join(names)}" if names else ""


def threshold_failures(candidate: FlowEvaluation, min_hit_at_k: float | None, min_mrr: float | None) -> list[str]:
    metrics = candidate.metrics
    failures: list[str] = []
    if min_hit_at_k is not None and metrics.hit_at_k < min_hit_at_k:
        failures.append(f"{candidate.name} (B): hit@{metrics.k} = {metrics.hit_at_k:.3f} < {min_hit_at_k}")
    if min_mrr is not None and metrics.mrr < min_mrr:
        failures.append(f"{candidate.name} (B): MRR = {metrics.mrr:.3f} < {min_mrr}")
    return failures


def _num(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def stat_rows(ev: FlowEvaluation) -> list[tuple[str, str]]:
    s, m = ev.stats, ev.metrics
    limit = f" (> {s.token_limit} tokens)" if s.token_limit else ""
    return [
        ("chunks", str(s.chunks)),
        ("chunk length min/mean/max", f"{s.length_min} / {s.length_mean:.0f} / {s.length_max}"),
        ("records cut", f"{s.records_cut} of {s.records} ({100 * s.records_cut_share:.0f}%)"),
        ("chunks starting at a record", str(s.chunks_at_record_start)),
        ("chunks with column labels", _num(s.chunks_with_labels)),
        (f"chunks over token limit{limit}", _num(s.chunks_over_token_limit)),
        ("embedded this run", _num(ev.embedded)),
        ("hit@1", f"{m.hit_at_1:.3f}"),
        (f"hit@{m.k}", f"{m.hit_at_k:.3f}"),
        ("MRR", f"{m.mrr:.3f}"),
        (f"recall@{m.k}", f"{m.recall_at_k:.3f}"),
        (f"nDCG@{m.k}", f"{m.ndcg_at_k:.3f}"),
    ]


def print_report(comparison: Comparison) -> None:
    a, b, k = comparison.a, comparison.b, comparison.k
    print(f"A: {a.name}  ({a.path})")
    print(f"B: {b.name}  ({b.path})")
    scored = a.metrics.questions
    print(f"{scored} questions with an answer, {a.metrics.unanswerable} without; k = {k}")
    print(f"relevance: {comparison.relevance} ({RELEVANCE_HELP[comparison.relevance]}; see --relevance)\n")
    rows_a, rows_b = stat_rows(a), stat_rows(b)
    width = max(len(name) for name, _ in rows_a)
    col = max(12, *(len(v) for _, v in rows_a + rows_b))
    print(f"{'':<{width}}  {'A':>{col}}  {'B':>{col}}")
    for (name, va), (_, vb) in zip(rows_a, rows_b, strict=True):
        print(f"{name:<{width}}  {va:>{col}}  {vb:>{col}}")
    for ev in (a, b):
        for warning in ev.warnings:
            print(f"warning ({ev.label}): {warning}")
    print(f"\nRank of the first relevant chunk per question ('-' = not in the top {k}):")
    id_width = max([2, *(len(r.question.id) for r in comparison.rows)])
    print(f"{'id':<{id_width}}  {'A':>3}  {'B':>3}  {'better':<6}  question")
    for row in comparison.rows:
        better = {"a": "A", "b": "B", "tie": "=", "-": "n/a"}[row.winner]
        text = row.question.question if len(row.question.question) <= 70 else row.question.question[:67] + "..."
        print(f"{row.question.id:<{id_width}}  {_rank(row.rank_a):>3}  {_rank(row.rank_b):>3}  {better:<6}  {text}")
    print(
        f"\nB vs A: {comparison.wins_b} wins, {comparison.wins_a} losses, {comparison.ties} ties"
        + (f" ({a.metrics.unanswerable} unanswerable not compared)" if a.metrics.unanswerable else "")
    )


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)
