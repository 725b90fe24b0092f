"""``flowbuilder eval FLOW --questions Q.jsonl``: run the whole flow per question and score the answers.

Retrieval and answers are scored separately (see :mod:`flowbuilder.evaluation.answers`). Prints a
summary and one line per question; ``--json`` prints everything (chunks, prompt, answer, verdicts),
``--junit FILE`` writes JUnit XML with one test case per question, and ``--min-*`` thresholds make
the command exit 1 when a metric falls short (a metric with no questions to measure fails too).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowbuilder.cluster import add_ray_option, cluster_from_args
from flowbuilder.commands._common import add_cred_option, resolver_for
from flowbuilder.commands._sweep import add_chars_option, add_relevance_option, check_chars, relevance_line
from flowbuilder.errors import FlowFileError
from flowbuilder.evaluation.answers import (
    AnswerResult,
    BaselineComparison,
    Evaluation,
    baseline_from_evaluation,
    compare_to_baseline,
    evaluate_answers,
    saved_baseline,
)
from flowbuilder.evaluation.questions import Question, load_questions
from flowbuilder.executor import Executor
from flowbuilder.formats.native import load_flow
from flowbuilder.trust.terminal import write_control


@dataclass(frozen=True)
class Threshold:
    """One ``--min-*`` option: the argparse name, the metric it reads and the words its failure is reported in."""

    option: str
    metric: str
    label: str

    def value(self, evaluation: Evaluation) -> float | None:
        """This metric's figure in the evaluation, or None when no question measured it."""
        m = evaluation.metrics
        values: dict[str, float | None] = {
            "accuracy": m.answer_accuracy,
            "citation": m.citation_accuracy,
            "refusal": m.refusal_rate,
            "faithfulness": m.faithfulness,
            "correctness": m.correctness,
            "hit": m.retrieval.get("hit@k") if m.retrieval.get("questions") else None,
            "answerer": m.correct_when_retrieved,
            "mrr": m.retrieval.get("mrr") if m.retrieval.get("questions") else None,
        }
        return values[self.metric]


THRESHOLDS = (
    Threshold("min_accuracy", "accuracy", "answer accuracy (fact present and rightly cited)"),
    Threshold("min_citation", "citation", "citation accuracy"),
    Threshold("min_refusal", "refusal", "refusal rate on no-answer questions"),
    Threshold("min_hit", "hit", "retrieval hit@k"),
    Threshold("min_answerer", "answerer", "answers correct when the fact was retrieved"),
    Threshold("min_mrr", "mrr", "retrieval MRR"),
    Threshold("min_faithfulness", "faithfulness", "judge faithfulness"),
    Threshold("min_correctness", "correctness", "judge correctness"),
)


def register(subparsers: Any) -> None:
    """Add ``flowbuilder eval``: run the whole flow per question and score retrieval and answers apart, with
    ``--min-*`` thresholds so CI can gate on them."""
    parser = subparsers.add_parser(
        "eval",
        help="run a flow on a question set and score its answers",
        description=(
            "Run the whole flow for every question and score retrieval and answers separately: the answer "
            "holds the expected fact, its [n] citations point to retrieved chunks that hold it, no-answer "
            'questions ("answerable": false) get a refusal; optionally an LLM judge rates faithfulness '
            "and correctness."
        ),
    )
    parser.add_argument("flow", help="a Flowbuilder flow file (.json) that answers a chat input")
    parser.add_argument("--questions", required=True, metavar="Q.jsonl", help="question set (JSONL)")
    parser.add_argument("--k", type=int, metavar="K", help="cut the retrieval metrics at K chunks (default: all)")
    add_relevance_option(parser)
    add_chars_option(parser)
    parser.add_argument("--judge", metavar="NODE", help="an llm.* node of the flow that grades each answer (0-1)")
    parser.add_argument("--answer", metavar="NODE", help="the node giving the answer (default: the chat output)")
    parser.add_argument("--hits", metavar="NODE", help="the node whose hits the prompt numbers (default: found)")
    parser.add_argument("--refusal", action="append", default=[], metavar="REGEX", help="extra refusal phrasing")
    parser.add_argument(
        "--baseline",
        metavar="FLOW|EVAL.json",
        help="compare with a baseline (a flow run the same way, or a saved `eval --json` output): paired "
        "bootstrap interval and exact McNemar test on the answers",
    )
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML (one test case per question)")
    parser.add_argument("--json", action="store_true", help="print everything as JSON (chunks, prompt, verdicts)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    for threshold in THRESHOLDS:
        flag = "--" + threshold.option.replace("_", "-")
        parser.add_argument(flag, type=float, metavar="X", help=f"exit 1 if {threshold.label} is below X (0-1)")
    add_cred_option(parser)
    add_ray_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run ``eval``: check options before any flow runs, evaluate every question (and a ``--baseline`` the same
    way), write JUnit/JSON/text, and return 1 when a threshold fails or a question did not reach an answer."""
    from flowbuilder.cli import UsageError
    from flowbuilder.evaluation.answers import REFUSAL_PATTERNS

    if args.k is not None and args.k < 1:
        raise UsageError("--k must be at least 1")
    for threshold in THRESHOLDS:
        value = getattr(args, threshold.option)
        if value is not None and not 0.0 <= value <= 1.0:
            raise UsageError(f"--{threshold.option.replace('_', '-')} must be between 0 and 1, got {value}")
    check_chars(args.chars)
    flow_path = Path(args.flow)
    flow = load_flow(flow_path)
    questions = load_questions(args.questions)
    executor = Executor(resolver=resolver_for(args, flow), cluster=cluster_from_args(args, flow))

    def progress(done: int, total: int, result: AnswerResult) -> None:
        if not args.quiet:
            write_control(sys.stderr, "\r")
            sys.stderr.write(f"  question {done}/{total}: {result.question.id} {result.verdict}        ")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    evaluation = evaluate_answers(
        flow,
        questions,
        base_dir=flow_path.resolve().parent,
        flow_file=flow_path,
        executor=executor,
        k=args.k,
        answer=args.answer,
        hits=args.hits,
        judge=args.judge,
        refusal_patterns=(*REFUSAL_PATTERNS, *args.refusal),
        on_question=progress,
        relevance=args.relevance,
        chars=args.chars,
    )
    for line in evaluation.warnings:  # on stderr whatever the output format: a fallback must never pass unseen
        print(f"DEGRADED: {line}", file=sys.stderr)
    comparison = _baseline(args, executor, questions, progress, evaluation) if args.baseline else None
    failures = check_thresholds(evaluation, args)
    if args.junit:
        write_junit(evaluation, Path(args.junit))
    if args.json:
        data = evaluation.to_dict()
        data["thresholds"] = [{"metric": m, "failed": msg} for m, msg in failures]
        if comparison is not None:
            data["baseline"] = comparison.to_dict()
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        print_report(evaluation)
        if comparison is not None:
            print(f"\nAgainst the baseline '{comparison.baseline}' ({comparison.details['questions']} questions):")
            for line in comparison.lines:
                print(f"  {line}")
        for _, message in failures:
            print(f"FAILED: {message}")
    errors = evaluation.metrics.errors
    if errors and not args.json:
        print(f"FAILED: {errors} question(s) did not run to an answer (see the 'error' lines)")
    return 1 if failures or errors else 0


def _baseline(
    args: argparse.Namespace,
    executor: Executor,
    questions: list[Question],
    progress: Callable[[int, int, AnswerResult], None],
    evaluation: Evaluation,
) -> BaselineComparison:
    """The baseline's scores: a saved ``eval --json`` file as is, or a flow evaluated now with the same options."""
    path = Path(args.baseline)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FlowFileError(path, f"cannot read the baseline ({exc})") from None
    saved = saved_baseline(data, path.name)
    if saved is None:
        flow = load_flow(path)
        base = evaluate_answers(
            flow,
            questions,
            base_dir=path.resolve().parent,
            flow_file=path,
            executor=executor,
            k=args.k,
            judge=args.judge if args.judge and flow.find_node(args.judge) else None,
            on_question=progress,
            relevance=evaluation.relevance,
            chars=evaluation.chars,
        )
        saved = baseline_from_evaluation(base)
    return compare_to_baseline(evaluation, saved)


def check_thresholds(evaluation: Evaluation, args: argparse.Namespace) -> list[tuple[str, str]]:
    """Each ``--min-*`` the evaluation falls short of, as (metric, message); a metric nothing measured fails
    too, so a threshold can never pass over zero questions."""
    failures: list[tuple[str, str]] = []
    for threshold in THRESHOLDS:
        wanted = getattr(args, threshold.option)
        if wanted is None:
            continue
        value = threshold.value(evaluation)
        if value is None:
            failures.append((threshold.metric, f"{threshold.label}: no questions to measure it (wanted >= {wanted})"))
        elif value < wanted:
            failures.append((threshold.metric, f"{threshold.label} {value:.3f} is below {wanted}"))
    return failures


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def print_report(evaluation: Evaluation) -> None:
    """The text report: which nodes played answer, prompt and chunks, the retrieval and answer scores, then one
    line per question with its verdict."""
    m = evaluation.metrics
    roles = evaluation.roles
    print(f"Flow: {evaluation.flow}")
    print(
        f"  answer from '{roles.answer}', prompt '{roles.prompt or '-'}', chunks from '{roles.hits or '-'}'"
        + (f", judge '{roles.judge}'" if roles.judge else "")
    )
    print(f"Questions: {m.questions} ({m.answerable} answerable, {m.unanswerable} without an answer)")
    r = m.retrieval
    if roles.hits is None:
        print("  no numbered chunks found (give --hits NODE): retrieval and citations are not checked")
    if r.get("questions"):
        print(
            f"Retrieval (k={r['k']}, {evaluation.relevance} relevance, {r['questions']} questions): "
            f"hit@1 {r['hit@1']:.2f}  hit@k {r['hit@k']:.2f}  hit@{evaluation.chars}ch {r['hit@chars']:.2f}  "
            f"MRR {r['mrr']:.3f}"
        )
        print(f"  {relevance_line(evaluation.relevance)}")
    else:
        print("Retrieval: n/a (no answerable question, or no chunks found in the flow)")
    print(
        f"Answers: accuracy {_pct(m.answer_accuracy)}  fact in answer {_pct(m.fact_rate)}  "
        f"citations {_pct(m.citation_accuracy)}  refusals {_pct(m.refusal_rate)}  inventions {_pct(m.invention_rate)}"
    )
    print(
        f"Answerer: correct when the fact was retrieved {_pct(m.correct_when_retrieved)} "
        f"({m.retrieved_fact - m.wrong_despite_retrieval} of {m.retrieved_fact})  "
        f"wrong despite retrieval {m.wrong_despite_retrieval}  "
        f"answerable refused {m.refused_answerable} of {m.answerable}  "
        f"unanswerable answered {m.answered_unanswerable} of {m.unanswerable}"
    )
    if evaluation.roles.judge:
        faith = "n/a" if m.faithfulness is None else f"{m.faithfulness:.2f}"
        correct = "n/a" if m.correctness is None else f"{m.correctness:.2f}"
        print(f"Judge ({m.judged} graded): faithfulness {faith}  correctness {correct}")
    print("Verdicts: " + ", ".join(f"{v} {n}" for v, n in m.verdicts.items()))
    for line in evaluation.warnings:
        print(f"DEGRADED: {line}")
    print()
    if m.errors:
        print(f"  answer metrics leave out the {m.errors} question(s) whose run failed")
    width = max((len(r.question.id) for r in evaluation.results), default=2)
    last_error = ""
    for result in evaluation.results:
        rank = result.retrieval.first_rank if result.retrieval else None
        where = f"rank {rank}" if rank else ("not retrieved" if result.retrieval else "-")
        reasons = "; ".join(c.detail for c in result.checks if not c.passed) or result.error
        if result.error and result.error == last_error:
            reasons = "the same error"
        last_error = result.error
        line = f"  {result.question.id.ljust(width)}  {result.verdict:<13}  {where:<13}  {_preview(result.answer)}"
        print(line.rstrip())
        if reasons and not result.passed:
            print(f"  {' ' * width}  -> {reasons}")
        if result.judge is not None:
            j = result.judge
            text = j.error or f"faithfulness {j.faithfulness} correctness {j.correctness}: {j.reason}"
            print(f"  {' ' * width}  judge: {_preview(text, 110)}")


def _preview(text: str, limit: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def write_junit(evaluation: Evaluation, path: Path) -> None:
    """JUnit XML: a suite per flow, a test case per question, failures with the verdict and reasons."""
    results = evaluation.results
    suite = ET.Element(
        "testsuite",
        name=f"flowbuilder eval: {evaluation.flow}",
        tests=str(len(results)),
        failures=str(sum(1 for r in results if not r.passed and r.verdict not in ("error", "unchecked"))),
        skipped=str(sum(1 for r in results if r.verdict == "unchecked")),
        errors=str(sum(1 for r in results if r.verdict == "error")),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            name=f"{result.question.id}: {result.question.question}",
            classname=f"flowbuilder.eval.{_slug(evaluation.flow)}",
            time=f"{result.seconds:.3f}",
        )
        if result.verdict == "error":
            ET.SubElement(case, "error", message=result.error[:500], type="error").text = result.error
        elif result.verdict == "unchecked":
            ET.SubElement(case, "skipped", message="no fact and no numbered chunks to check the answer against")
        elif not result.passed:
            reasons = "; ".join(c.detail for c in result.checks if not c.passed)
            ET.SubElement(
                case, "failure", message=f"{result.verdict}: {reasons}"[:500], type=result.verdict
            ).text = f"{result.verdict}: {reasons}\n\nanswer:\n{result.answer}"
        ET.SubElement(case, "system-out").text = json.dumps(result.to_dict(), indent=1, ensure_ascii=False)
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_") or "flow"
