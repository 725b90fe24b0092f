"""What ``compare`` and ``tune`` share: their options, checks, questions, comparer and the worker thread.

Both judge flows on a question set with a :class:`~flowbuilder.evaluation.compare.FlowComparer`; the set-up
(``--k``, ``--chars``, ``--relevance``, ``--quiet``, ``--allow-path``, ``--ray``), the progress line on stderr
and the work done in a thread that Ctrl-C cancels are written once, here.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from flowbuilder.cluster import add_ray_option, cluster_from_args
from flowbuilder.commands._common import add_allow_path_option
from flowbuilder.context import DEFAULT_CONTEXT_CHARS
from flowbuilder.evaluation.compare import CACHE_ENTRIES, FlowComparer
from flowbuilder.evaluation.metrics import RELEVANCE_HELP, RELEVANCE_MODES, Relevance, default_relevance
from flowbuilder.evaluation.questions import Question, load_questions
from flowbuilder.executor import RunEvent
from flowbuilder.flow import Flow
from flowbuilder.ports import PortType
from flowbuilder.registry import default_registry
from flowbuilder.trust.terminal import write_control

T = TypeVar("T")


def add_relevance_option(parser: argparse.ArgumentParser) -> None:
    """``--relevance``, shared by compare, tune and eval so the three judge a chunk the same way and
    explain the modes in the same words."""
    parser.add_argument(
        "--relevance",
        choices=RELEVANCE_MODES,
        default=None,
        help="how a retrieved chunk is judged relevant (default: strict when the questions carry facts, else "
        "lenient); " + "; ".join(f"{mode}: {text}" for mode, text in RELEVANCE_HELP.items()),
    )


def add_chars_option(parser: argparse.ArgumentParser) -> None:
    """``--chars``: the prompt budget of hit@chars, so flows that cut chunks differently are judged on the
    same amount of context (shared by compare, tune and eval)."""
    parser.add_argument(
        "--chars",
        type=int,
        metavar="N",
        help="context budget of hit@chars: the evidence must lie in the first N characters of the context the "
        f"prompt gets (default: the prompt's context_chars, else {DEFAULT_CONTEXT_CHARS})",
    )


def add_sweep_options(parser: argparse.ArgumentParser) -> None:
    """``--k``, ``--relevance``, ``--chars``, ``--quiet``, ``--allow-path`` and ``--ray``."""
    parser.add_argument("--k", type=int, default=5, help="number of chunks judged per question (default 5)")
    add_relevance_option(parser)
    add_chars_option(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_allow_path_option(parser)
    add_ray_option(parser)


def check_chars(chars: int | None) -> None:
    """Reject a budget below one character before any flow runs (a usage error, exit 2)."""
    from flowbuilder.cli import UsageError

    if chars is not None and chars < 1:
        raise UsageError(f"--chars must be at least 1, got {chars}.")


def relevance_line(relevance: Relevance) -> str:
    """Which relevance a report used, what it means and how to change it."""
    return (
        f"relevance: {relevance} ({RELEVANCE_HELP[relevance]}; the default is strict when the questions carry "
        "facts, lenient otherwise; see --relevance)"
    )


def _is_store(type_name: str) -> bool:
    """A vector store's progress is its embedding."""
    registry = default_registry()
    return type_name in registry and any(p.type is PortType.VECTOR_STORE for p in registry.get(type_name).outputs)


class Progress:
    """One updating stderr line per node while the flows ingest, embed and search."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._open = False
        self._types: dict[str, str] = {}

    def __call__(self, label: str, event: RunEvent) -> None:
        if not self.enabled:
            return
        if event.kind == "progress":
            done, total = event.data.get("done", 0), event.data.get("total", 0)
            stores = _is_store(self._types.get(event.node_id or "", ""))
            what = event.data.get("message") or ("embedding" if stores else "working")
            write_control(sys.stderr, "\r")
            sys.stderr.write(f"  [{label}] {event.node_id}: {what} {done}/{total}   ")
            self._open = True
        elif event.kind in ("node_started", "node_cached", "node_failed"):
            self._close()
            if event.kind == "node_started" and event.node_id:
                self._types[event.node_id] = str(event.data.get("type", ""))
            verb = {"node_started": "running", "node_cached": "cached", "node_failed": "FAILED"}[event.kind]
            sys.stderr.write(f"[{label}] {verb} {event.node_id}\n")
        elif event.kind in ("skipped", "node_skipped"):
            self._close()
            what = f" ({event.data['type']})" if event.data.get("type") else ""
            sys.stderr.write(f"[{label}] skipped {event.node_id}{what}: {event.data.get('reason', '')}\n")
        elif event.kind == "run_finished":
            self._close()
        sys.stderr.flush()

    def _close(self) -> None:
        if self._open:
            sys.stderr.write("\n")
            self._open = False


@dataclass
class Sweep:
    """A judging command's questions, relevance mode, progress line, comparer and cancel flag."""

    questions: list[Question]
    relevance: Relevance
    progress: Progress
    comparer: FlowComparer
    cancel: threading.Event


def sweep_setup(args: argparse.Namespace, flows: Sequence[Flow] = ()) -> Sweep:
    """Check the shared options, load the questions and make the comparer (on the Ray cluster ``--ray`` names,
    once ``flows`` are known to write only stores its workers reach)."""
    from flowbuilder.cli import UsageError
    from flowbuilder.executor import Executor

    if args.k < 1:
        raise UsageError(f"--k must be at least 1, got {args.k}.")
    check_chars(args.chars)
    questions = load_questions(args.questions)
    relevance: Relevance = args.relevance or default_relevance(questions)
    cluster = cluster_from_args(args, *flows)
    comparer = FlowComparer(executor=Executor(cache=_result_cache(), cluster=cluster))
    for folder in args.allow_path:
        comparer.executor.resolver.approve_path(folder)
    return Sweep(list(questions), relevance, Progress(enabled=not args.quiet), comparer, threading.Event())


def _result_cache() -> Any:
    from flowbuilder.cache import ResultCache

    return ResultCache(max_entries=CACHE_ENTRIES)
