"""``flowbuilder run FLOW``: run a flow and print what every node did."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from flowbuilder.cluster import add_ray_option, cluster_from_args
from flowbuilder.commands._common import add_cred_option, in_worker, parse_inputs, resolver_for
from flowbuilder.executor import Executor, NodeResult, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow
from flowbuilder.outputs import describe_service, hit_line, is_documents, is_hits, score_meaning, to_jsonable
from flowbuilder.streaming import STREAM_MODES
from flowbuilder.trust.terminal import write_control


def register(subparsers: Any) -> None:
    """Add ``flowbuilder run`` (run a flow) to the CLI's subcommands."""
    parser = subparsers.add_parser(
        "run",
        help="run a flow",
        description="Run a flow (or only up to one node) and print a per-node table and the outputs.",
    )
    parser.add_argument("flow", help="a Flowbuilder flow file (.json)")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="TEXT|NODE=VALUE",
        help="text for the chat input, or NODE=VALUE for one node (e.g. a file input's path)",
    )
    parser.add_argument("--to", metavar="NODE", help="run only this node and what it depends on")
    parser.add_argument("--json", action="store_true", help="print the table and outputs as JSON")
    parser.add_argument("--session", default="cli", help="session id for chat memory (default: cli)")
    parser.add_argument(
        "--stream",
        choices=STREAM_MODES,
        default=None,
        help="run loader -> labeller -> splitter -> store batch by batch: auto (default; files of 8 MB or more), "
        "always or never (env FLOWBUILDER_STREAM)",
    )
    add_cred_option(parser)
    add_ray_option(parser)
    parser.set_defaults(handler=handle)


class _Progress:
    """Progress and streamed tokens on stderr, so stdout stays a clean report."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._open_line = False

    def __call__(self, event: RunEvent) -> None:
        if not self.enabled:
            return
        if event.kind == "progress":
            done, total = event.data.get("done", 0), event.data.get("total", 0)
            message = event.data.get("message") or "working"
            write_control(sys.stderr, "\r")
            counts = f" {done}/{total}" if total else ""  # no total: a wait (a store's lock), not a count
            sys.stderr.write(f"  {event.node_id}: {message}{counts}   ")
            self._open_line = True
        elif event.kind == "token":
            sys.stderr.write(str(event.data.get("text", "")))
            self._open_line = True
        elif event.kind in ("node_started", "node_finished", "node_failed", "node_cached", "node_skipped"):
            if self._open_line:
                sys.stderr.write("\n")
                self._open_line = False
            if event.kind == "node_started":
                sys.stderr.write(f"> {event.node_id}\n")
            if event.data.get("warning"):
                sys.stderr.write(f"! {event.node_id}: {event.data['warning']}\n")
        sys.stderr.flush()


def handle(args: argparse.Namespace) -> int:
    """Run ``flowbuilder run`` with the parsed arguments (run a flow); returns the exit code."""
    flow = load_flow(args.flow)
    resolver = resolver_for(args, flow)
    inputs = parse_inputs(flow, args.input)
    cluster = cluster_from_args(args, flow)
    executor = Executor(resolver=resolver, stream=args.stream, cluster=cluster)
    progress = _Progress(enabled=not args.json)

    def work(cancel: threading.Event) -> RunResult:
        return executor.run(
            flow,
            inputs=inputs,
            to=args.to,
            on_event=progress,
            cancel_event=cancel,
            session_id=args.session,
            flow_file=Path(args.flow),
        )

    run = in_worker("flowbuilder-run", work, threading.Event())
    if args.json:
        print(json.dumps(run_to_json(flow, run), indent=2, ensure_ascii=False))
        for warned in run.warnings():  # progress (which says it otherwise) is off with --json
            sys.stderr.write(f"! {warned.node_id}: {warned.warning}\n")
    else:
        print_report(flow, run)
    return 0 if run.ok else 1


def run_to_json(flow: Flow, run: RunResult) -> dict[str, Any]:
    """A run's table and outputs as JSON-ready data (what ``run --json`` prints)."""
    return {
        "flow": flow.name,
        "ok": run.ok,
        "cancelled": run.cancelled,
        "warnings": [f"{r.node_id} ({r.type_name}): {r.warning}" for r in run.warnings()],
        "nodes": [
            {
                "id": r.node_id,
                "type": r.type_name,
                "status": r.status,
                "seconds": round(r.duration, 4),
                "summary": r.summary,
                "error": r.error,
                "warning": r.warning or None,
            }
            for r in (run.results[n] for n in run.order)
        ],
        "outputs": {
            r.node_id: {port: to_jsonable(value) for port, value in r.outputs.items() if not _is_service(value)}
            for r in run.results.values()
            if r.outputs
        },
        "details": {r.node_id: to_jsonable(r.details) for r in run.results.values() if r.details},
    }


def _is_service(value: Any) -> bool:
    return not isinstance(value, str | int | float | bool | list | dict | tuple) and value is not None


def print_report(flow: Flow, run: RunResult) -> None:
    """Print a run's per-node table, warnings and outputs."""
    rows = [
        (r.node_id, r.type_name, r.status, f"{r.duration:.2f}", r.summary) for r in (run.results[n] for n in run.order)
    ]
    headers = ("node", "type", "status", "seconds", "summary")
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    widths[-1] = min(widths[-1], 110)  # room for a folder's sync line ("3 files changed, 1 removed, ...")
    print(f"Flow: {flow.name}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for row in rows:
        print("  ".join(cell[:w].ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    ran = set(run.order)
    feeding = {e.source for e in flow.edges if e.target in ran}
    for result in (run.results[n] for n in run.order):
        _print_outputs(result, final=result.node_id not in feeding)
    warnings = run.warnings()
    if warnings:
        print()
        for result in warnings:
            print(f"WARNING {result.node_id}: {result.warning}")
    failed = run.failed()
    if failed:
        print()
        for result in failed:
            print(f"FAILED {result.error}")
    if run.cancelled:
        print("\nThe run was cancelled; completed results are shown above.")


def _print_outputs(result: NodeResult, final: bool) -> None:
    """Hits, prompts and answers are what users come to see, wherever they are in the flow; the
    flow's final outputs (nodes feeding nothing else in this run) are shown too."""
    for port, value in result.outputs.items():
        if is_hits(value):
            print(f"\nRetrieved by {result.node_id} ({len(value)} hits; score = {_score_meaning(result, value)}):")
            for hit in value:
                print("  " + hit_line(hit))
                if hit.legs:  # fused or reranked: each stage's rank, so the order can be checked
                    legs = ", ".join(f"{name} #{int(leg['rank'])}" for name, leg in hit.legs.items())
                    print(f"      ranks: {legs}" + (f"; score = {hit.explain}" if hit.explain else ""))
        elif isinstance(value, str) and port == "prompt":
            print(f"\nPrompt built by {result.node_id}:\n" + _indent(value))
        elif isinstance(value, str) and port == "answer":
            print(f"\nAnswer from {result.node_id}:\n" + _indent(value))
        elif final and value is not None:
            print(f"\nOutput {result.node_id}.{port}:\n" + _indent(_preview(value)))


_PREVIEW_LINES = 40


def _score_meaning(result: NodeResult, hits: list[Any]) -> str:
    # a node that says what its score is (a keyword or Qdrant node) is believed over the guess from the hits
    described = result.details.get("score")
    return described if isinstance(described, str) and described else score_meaning(hits)


def _preview(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif is_documents(value):
        shown = "\n".join(f"[{i}] " + " ".join(doc.text.split())[:100] for i, doc in enumerate(value[:5]))
        text = f"{len(value)} items\n{shown}" + ("\n…" if len(value) > 5 else "")
    elif _is_service(value):
        text = describe_service(value)
    else:
        text = json.dumps(to_jsonable(value), ensure_ascii=False, indent=2)
    lines = text.splitlines() or [""]
    return "\n".join(lines[:_PREVIEW_LINES]) + (
        f"\n… ({len(lines) - _PREVIEW_LINES} more lines)" if len(lines) > _PREVIEW_LINES else ""
    )


def _indent(text: str) -> str:
    return "\n".join("  | " + line for line in text.splitlines())
