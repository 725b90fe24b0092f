"""Answers without a model: the example flows' LLM step unreachable, so ``answer.extractive`` answers.

Prints a table (not a timed test), one row per question set: retrieval hit@k, answer accuracy, the answerer's own
accuracy (correct when a retrieved chunk held the fact), wrong despite retrieval, answerable questions refused,
unanswerable questions answered, how often the lead sentence itself holds the fact, and seconds per question.
Every figure is ``flowbuilder eval``'s (the same rules, strict relevance).

    python benchmarks/answers.py [--half report|tune|all] [--calibrate] [--data DIR]

Each set runs through the flow a user would use for it, as shipped, with its Ollama address pointed at a closed
port (what a fresh machine without Ollama or a key does):

* test cases: ``flows/row_labelled_csv_rag.json`` (the demo);
* real Markdown docs: ``flows/chunking/parent_child.json`` over pip's topic guides (``data/pip_docs``) and over
  the made-up help centre it ships with (``data/docs``);
* the PRD: ``flows/pdf_rag.json``.

Tuning and reporting are kept apart. The answerer's weights and thresholds were chosen on the *tuning* sets only:
the team's older sets (vwo500_userworded, vwo500_paraphrased, docs.jsonl, prd_questions.jsonl, docs.jsonl asked
of the test-case store as off-topic) and the ``"half": "tune"`` questions of vwo500_asked, pip_docs and
prd_asked. The ``"half": "report"`` questions were never used to choose anything; ``--half report`` (the
default) prints only them. ``--calibrate`` prints the threshold sweep over the tuning sets, per answer shape
(labelled records and prose score on different scales, so each has its threshold).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowbuilder.evaluation.answers import evaluate_answers  # noqa: E402
from flowbuilder.evaluation.facts import holds_fact  # noqa: E402
from flowbuilder.evaluation.questions import Question, load_questions  # noqa: E402
from flowbuilder.executor import Executor  # noqa: E402
from flowbuilder.flow import Flow  # noqa: E402
from flowbuilder.formats.native import load_flow  # noqa: E402

QUESTIONS = ROOT / "data" / "questions"
DEMO = ROOT / "flows" / "row_labelled_csv_rag.json"
PARENT_CHILD = ROOT / "flows" / "chunking" / "parent_child.json"
PDF = ROOT / "flows" / "pdf_rag.json"


@dataclass(frozen=True)
class QuestionSet:
    name: str
    file: str
    flow: Path
    docs: Path | None = None
    """Another folder for the flow's loader (the same flow over other Markdown docs)."""
    off_topic: bool = False
    """Asked of a store that does not hold their answers: every one should be refused."""
    tuned: bool = False
    """A set the answerer's settings were chosen on (all of it, not only its 'tune' half)."""


SETS = (
    QuestionSet("vwo500_asked", "vwo500_asked.jsonl", DEMO),
    QuestionSet("pip_docs", "pip_docs.jsonl", PARENT_CHILD, ROOT / "data" / "pip_docs"),
    QuestionSet("prd_asked", "prd_asked.jsonl", PDF),
    QuestionSet("vwo500_paraphrased", "vwo500_paraphrased.jsonl", DEMO, tuned=True),
    QuestionSet("vwo500_userworded", "vwo500_userworded.jsonl", DEMO, tuned=True),
    QuestionSet("docs (help centre)", "docs.jsonl", PARENT_CHILD, tuned=True),
    QuestionSet("prd_questions", "prd_questions.jsonl", PDF, tuned=True),
    QuestionSet("docs.jsonl asked of the test cases", "docs.jsonl", DEMO, off_topic=True, tuned=True),
)
HEADER = (
    "| set | half | questions (answerable / not) | hit@k | accuracy | correct when retrieved | wrong despite "
    "retrieval | answerable refused | unanswerable answered | lead holds the fact | s/question min / median |"
)


def offline(path: Path, docs: Path | None, model: str = "llm") -> Flow:
    """The flow as shipped with its LLM's port closed, so every answer comes from ``when_unreachable:
    extractive``; ``docs`` points its loader at another folder (and its store at another collection)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    flow = load_flow(path)
    llm = flow.node(model)
    assert llm.config.get("when_unreachable") == "extractive", f"{path.name} must answer without a model"
    llm.config["base_url"] = f"http://127.0.0.1:{port}"
    if docs is not None:
        flow.node("loader").config["path"] = str(docs)
        for node in flow.nodes:
            if node.type.startswith("vectorstore."):
                node.config["collection"] = f"{node.config.get('collection', 'docs')}-{docs.name}".replace("_", "-")
    return flow


def questions_of(spec: QuestionSet, half: str) -> list[Question]:
    questions = load_questions(QUESTIONS / spec.file)
    if spec.off_topic:
        questions = [Question(q.id, q.question, (), None, {"answerable": False}) for q in questions]
    if half == "all" or spec.tuned:
        return questions
    return [q for q in questions if q.extra.get("half", "tune") == half]


def report(executor: Executor, half: str) -> None:
    print(f"no model reachable (extractive answers); load before: {_load()}")
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in SETS:
        if half == "report" and spec.tuned:
            continue
        questions = questions_of(spec, half)
        flow = offline(spec.flow, spec.docs)
        evaluate_answers(flow, questions[:1], base_dir=spec.flow.parent, executor=executor)  # warm: ingest, model
        evaluation = evaluate_answers(flow, questions, base_dir=spec.flow.parent, executor=executor)
        m = evaluation.metrics
        assert m.errors == 0, [r.error for r in evaluation.results if r.error][:1]
        seconds = [r.seconds for r in evaluation.results]
        leads = [
            holds_fact(r.answer.split("\n", 1)[0], r.question.fact)
            for r in evaluation.results
            if r.question.fact and r.retrieved_fact
        ]
        hit = m.retrieval.get("hit@k") if m.retrieval.get("questions") else None
        which = "tuned on" if spec.tuned else half
        print(
            f"| {spec.name} | {which} | {m.questions} ({m.answerable} / {m.unanswerable}) | {_num(hit)} | "
            f"{_num(m.answer_accuracy)} | {_num(m.correct_when_retrieved)} ({m.retrieved_fact}) | "
            f"{m.wrong_despite_retrieval} | {m.refused_answerable}/{m.answerable} | "
            f"{m.answered_unanswerable}/{m.unanswerable} | {_num(sum(leads) / len(leads) if leads else None)} | "
            f"{min(seconds):.2f} / {statistics.median(seconds):.2f} |"
        )


def calibrate(executor: Executor) -> None:
    """Confidence of the best quote per tuning question (thresholds off), then the sweep per answer shape."""
    rows: list[tuple[str, str, bool, bool, float]] = []
    for spec in SETS:
        questions = questions_of(spec, "tune")
        flow = offline(spec.flow, spec.docs)
        llm = flow.node("llm")
        llm.type, llm.name, llm.config = "answer.extractive", "Extractive answer", {"threshold": -1.0}
        llm.config["record_threshold"] = -1.0
        for question in questions:
            run = executor.run(
                flow, inputs=question.question, session_id=f"cal-{question.id}", base_dir=spec.flow.parent
            )
            details = run.results["llm"].details
            hits = run.results["prompt"].outputs.get("prompt", "")
            answerable = question.extra.get("answerable") is not False and question.answerable
            held = bool(question.fact) and holds_fact(str(hits), question.fact or "")
            rows.append(
                (spec.name, str(details.get("shape")), answerable, held, float(details.get("best_score") or -1))
            )
    for shape in ("records", "prose"):
        mine = [r for r in rows if r[1] == shape]
        print(
            f"\n{shape}: {sum(r[2] for r in mine)} answerable ({sum(r[3] for r in mine)} with the fact retrieved), "
            f"{sum(not r[2] for r in mine)} unanswerable"
        )
        print("| threshold | answerable refused | of them fact retrieved | unanswerable refused |")
        print("|---|---|---|---|")
        for step in range(20, 62, 2):
            t = step / 100
            pos = [r for r in mine if r[2]]
            neg = [r for r in mine if not r[2]]
            print(f"| {t:.2f} | {sum(r[4] < t for r in pos)}/{len(pos)} | {sum(r[4] < t for r in pos if r[3])}/"
                  f"{sum(r[3] for r in pos)} | {sum(r[4] < t for r in neg)}/{len(neg)} |")  # fmt: skip
    print(json.dumps({"questions": len(rows)}))


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--half", choices=("report", "tune", "all"), default="report", help="which questions")
    parser.add_argument("--calibrate", action="store_true", help="print the threshold sweep over the tuning sets")
    parser.add_argument("--data", default="", help="data folder (store, embedding cache); default: a temp folder")
    args = parser.parse_args()
    data = Path(args.data or os.environ.get("FLOWBUILDER_DATA_DIR") or tempfile.mkdtemp(prefix="fb-answers-"))
    os.environ["FLOWBUILDER_DATA_DIR"] = str(data)
    executor = Executor(data_dir=data)
    if args.calibrate:
        calibrate(executor)
    else:
        report(executor, args.half)


if __name__ == "__main__":
    main()
