"""``flowbuilder tune FLOW --questions Q.jsonl --vary NODE.FIELD=V1,V2``: tune on one split, judge on another."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from flowbuilder.commands._common import in_worker
from flowbuilder.commands._sweep import add_sweep_options, relevance_line, sweep_setup
from flowbuilder.evaluation.metrics import Metrics
from flowbuilder.evaluation.tune import TUNE_METRICS, TuneResult, save_winner, tune

EPILOG = """\
The questions with an answer are shuffled (--seed) and split: --split of them tune, the rest are held
out. Every variant is scored on the tuning split only and the best by --metric wins. The winner and
the flow as saved (untuned) are then scored on the held-out split and paired (95% bootstrap interval;
exact sign test on ranks for MRR, exact McNemar for hit@k and hit@chars). A gain seen only on the
tuning split says nothing: tune says so plainly when it does not hold.

  flowbuilder tune flows/hybrid_csv_rag.json --questions data/questions/vwo500_userworded.jsonl \\
      --vary fusion.weights=[1,0.5],[1,1],[1,0.25] --vary dense.k=10,20 -o tuned.json

Exit codes: 0 ok; 1 a flow could not run; 2 missing file or bad usage."""


def register(subparsers: Any) -> None:
    """Add ``flowbuilder tune``: choose a flow's settings on one split of the questions and judge the choice on
    the other, so a gain that only fits the tuning questions shows up as such."""
    parser = subparsers.add_parser(
        "tune",
        help="sweep a flow's settings on a tuning split and judge the winner on held-out questions",
        description="Sweep --vary variants of one flow on part of a question set, pick the best by a metric, "
        "and report the winner against the untuned flow on the questions it was not chosen on.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("flow", metavar="FLOW", help="the flow file (.json) to tune")
    parser.add_argument("--questions", required=True, metavar="Q.jsonl", help="question set (JSONL)")
    parser.add_argument(
        "--vary",
        action="append",
        default=[],
        required=True,
        metavar="NODE.FIELD=V1,V2",
        help="a config field and the values to try (repeatable: all combinations)",
    )
    parser.add_argument("--split", type=float, default=0.5, help="share of the questions to tune on (default 0.5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffle before the split (default 0)")
    parser.add_argument("--metric", choices=TUNE_METRICS, default="mrr", help="what picks the winner (default mrr)")
    add_sweep_options(parser)
    parser.add_argument("-o", "--output", metavar="WINNER.json", help="write the winner as a new flow file")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run ``tune``: refuse to overwrite the flow being tuned, sweep the variants in a worker thread that Ctrl-C
    cancels, optionally save the winner as a new flow, and print the report (or ``--json``)."""
    from flowbuilder.cli import UsageError
    from flowbuilder.evaluation.compare import read_flow
    from flowbuilder.evaluation.variants import VariantError

    if not 0 < args.split < 1:
        raise UsageError(f"--split must be between 0 and 1 (the share of questions to tune on), got {args.split}.")
    path = Path(args.flow)
    if not path.is_file():
        raise UsageError(f"{path}: no such flow file")
    if args.output and Path(args.output).resolve() == path.resolve():
        raise UsageError("-o must name a new file, not the flow being tuned.")
    sweep = sweep_setup(args, [read_flow(path)])

    def work(cancel: threading.Event) -> TuneResult:
        try:
            return tune(
                path,
                sweep.questions,
                list(args.vary),
                k=args.k,
                metric=args.metric,
                share=args.split,
                seed=args.seed,
                relevance=sweep.relevance,
                chars=args.chars,
                comparer=sweep.comparer,
                on_progress=sweep.progress,
                cancel_event=cancel,
            )
        except VariantError as exc:
            raise UsageError(str(exc)) from None

    result = in_worker("flowbuilder-tune", work, sweep.cancel)
    written = None
    if args.output:
        written = Path(args.output)
        save_winner(result, read_flow(path), path, written, Path(args.questions).name)
    if args.json:
        data = result.to_dict()
        data["written"] = str(written) if written else None
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print_report(result, path)
        if written is not None:
            print(f"\nwrote the winner to {written}")
    return 0


def _cells(m: Metrics) -> list[str]:
    return [f"{m.hit_at_1:.3f}", f"{m.hit_at_k:.3f}", f"{m.hit_at_chars:.3f}", f"{m.mrr:.3f}"]


def print_report(result: TuneResult, path: Path) -> None:
    """The text report: every variant on the tuning split (winner marked), then the winner against the untuned
    flow on the held-out split with the paired verdict and the plain conclusion."""
    split = result.split
    print(f"Tuning {path} by {result.metric_label}")
    print(
        f"{len(split.tuning)} questions to tune on, {len(split.held_out)} held out (split {split.share}, seed "
        f"{split.seed}); k = {result.k}; hit@chars at {result.chars} characters"
    )
    print(relevance_line(result.relevance) + "\n")
    k, chars = result.k, result.chars
    header = ["variant", "hit@1", f"hit@{k}", f"hit@{chars}ch", "MRR"]
    rows = [header, ["untuned (as saved)", *_cells(result.base_tuning.metrics)]]
    ranked = sorted(result.variants, key=lambda v: -result.score(v.tuning))
    for variant in ranked:
        mark = "  <- winner" if variant is result.winner else ""
        rows.append([variant.label + mark, *_cells(variant.tuning.metrics)])
    print("On the tuning split:")
    for line in _table_left(rows):
        print("  " + line)
    print(f"\nOn the held-out split ({len(split.held_out)} questions the winner was not chosen on):")
    held = [header, ["untuned (as saved)", *_cells(result.base_held.metrics)]]
    held.append([f"winner: {result.winner.label}", *_cells(result.winner_held.metrics)])
    for line in _table_left(held):
        print("  " + line)
    print(f"\n  winner vs untuned: {result.held_verdict}")
    print(f"\n{result.conclusion}")
    for note in {*result.base_held.adjusted, *result.winner_held.adjusted}:
        print(f"adjusted: {note}")
    sys.stdout.flush()


def _table_left(rows: list[list[str]]) -> list[str]:
    """A table whose first column (the variants) is left-aligned and the figures right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
