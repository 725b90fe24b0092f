"""Answers without a model: ``answer.extractive`` on the demo flow, judged by ``flowbuilder eval``'s rules.

Prints a table (not a timed test): per question set, answer accuracy, citation accuracy, refusals of
answerable questions (missed), refusals of off-topic questions, and invented answers (an answer with a
word that is in none of the retrieved chunks; citation marks, record ids, field labels and the
not-found sentence aside), plus seconds per question (min / median).

    python benchmarks/answers.py [--calibrate] [--data DIR]

The flow is flows/row_labelled_csv_rag.json as shipped (500 row-labelled VWO test cases, local MiniLM,
embedded Chroma, top 5) with its Ollama address pointed at a closed port, so every answer comes from the
LLM's ``when_unreachable: extractive`` path: what the demo answers on a machine with no Ollama and no key.
Off-topic questions (docs.jsonl's help-centre questions and the PRD questions, asked of the test-case
store) should be refused.

``--calibrate`` prints, per threshold, how the userworded set (answerable) and docs.jsonl (off-topic)
split: the threshold of ``answer.extractive`` was chosen there and is only reported on the other sets.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowbuilder.evaluation.answers import contains_fact, evaluate_answers  # noqa: E402
from flowbuilder.evaluation.questions import Question, load_questions  # noqa: E402
from flowbuilder.executor import Executor  # noqa: E402
from flowbuilder.flow import Flow  # noqa: E402
from flowbuilder.formats.native import load_flow  # noqa: E402
from flowbuilder.nodes.extractive import NOT_FOUND  # noqa: E402

FLOW = ROOT / "flows" / "row_labelled_csv_rag.json"
QUESTIONS = ROOT / "data" / "questions"
ANSWERABLE = ("vwo500_userworded.jsonl", "vwo500_dev.jsonl")
OFF_TOPIC = ("docs.jsonl", "prd_questions.jsonl")
HEADER = (
    "| questions | n | accuracy | citations | missed (refused, answerable) | refused (off-topic) | invented "
    "| s/question min / median |"
)
_WORD = re.compile(r"(?u)\b\w+\b")
_PREFIX = re.compile(r"^\[\d+\]\s*(?:[A-Z]+-\d+,\s*)?(?:[A-Za-z][\w ()/&.#-]{0,48}?:\s)?")


def extractive_flow(threshold: float | None = None) -> Flow:
    """The demo flow answering through answer.extractive (wired where the LLM was: same prompt, same hits)."""
    flow = load_flow(FLOW)
    llm = flow.node("llm")
    llm.type, llm.name = "answer.extractive", "Extractive answer"
    llm.config = {"threshold": threshold} if threshold is not None else {}
    return flow


def offline_demo_flow() -> Flow:
    """The demo flow as shipped, on a machine with no Ollama: its LLM's port is one where nothing listens,
    so every answer comes from its ``when_unreachable: extractive`` path (as on a fresh machine)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    flow = load_flow(FLOW)
    llm = flow.node("llm")
    assert llm.config.get("when_unreachable") == "extractive", "the demo flow must answer without a model"
    llm.config["base_url"] = f"http://127.0.0.1:{port}"
    return flow


def off_topic(questions: list[Question]) -> list[Question]:
    """The same questions marked as having no answer in this store (they are about another product)."""
    return [Question(q.id, q.question, (), None, {"answerable": False}) for q in questions]


def invented(answer: str, chunks: list[str]) -> bool:
    """An answer with a word in no retrieved chunk (citation marks, record ids and labels aside)."""
    if answer.strip() == NOT_FOUND:
        return False
    known = {w.lower() for text in chunks for w in _WORD.findall(text)}
    for line in answer.splitlines():
        body = _PREFIX.sub("", line.strip())
        if any(w.lower() not in known for w in _WORD.findall(body)):
            return True
    return False


def best_scores(flow: Flow, questions: list[Question], executor: Executor) -> list[tuple[Question, float, bool]]:
    """(question, best quote score, whether the retrieved chunks hold the fact) per question."""
    rows = []
    for question in questions:
        run = executor.run(flow, inputs=question.question, session_id=f"cal-{question.id}", base_dir=FLOW.parent)
        answer = run.results["llm"]
        hits = run.results["retriever"].outputs.get("hits") or []
        holds = bool(question.fact) and any(contains_fact(h.document.text, question.fact or "") for h in hits)
        rows.append((question, float(answer.details.get("best_score") or -1.0), holds))
    return rows


def calibrate(executor: Executor) -> None:
    flow = extractive_flow(threshold=-1.0)
    positives = best_scores(flow, load_questions(QUESTIONS / "vwo500_userworded.jsonl"), executor)
    negatives = best_scores(flow, load_questions(QUESTIONS / "docs.jsonl"), executor)
    pos = [s for _, s, holds in positives if holds]
    neg = [s for _, s, _ in negatives]
    print(f"userworded questions whose top 5 hold the fact: {len(pos)} of {len(positives)}; off-topic: {len(neg)}")
    print(f"answerable scores: min {min(pos):.3f} median {statistics.median(pos):.3f}")
    print(f"off-topic scores:  max {max(neg):.3f} median {statistics.median(neg):.3f}")
    print("| threshold | answerable kept | off-topic refused |")
    print("|---|---|---|")
    for step in range(20, 61, 2):
        t = step / 100
        kept = sum(s >= t for s in pos)
        refused = sum(s < t for s in neg)
        print(f"| {t:.2f} | {kept}/{len(pos)} | {refused}/{len(neg)} |")


def report(executor: Executor) -> None:
    flow = offline_demo_flow()
    sets = [(name, load_questions(QUESTIONS / name)) for name in ANSWERABLE]
    sets += [(f"{name} (off-topic)", off_topic(load_questions(QUESTIONS / name))) for name in OFF_TOPIC]
    print(f"flow: {FLOW.relative_to(ROOT)}, no model reachable (extractive answers); load before: {_load()}")
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|")
    for name, questions in sets:
        evaluate_answers(flow, questions[:1], base_dir=FLOW.parent, executor=executor)  # warm: ingest + model
        evaluation = evaluate_answers(flow, questions, base_dir=FLOW.parent, executor=executor)
        m = evaluation.metrics
        assert m.errors == 0, [r.error for r in evaluation.results if r.error][:1]
        seconds = [r.seconds for r in evaluation.results]
        made_up = sum(invented(r.answer, [h.document.text for h in r.hits]) for r in evaluation.results)
        missed = m.verdicts.get("missed", 0)
        print(
            f"| {name} | {m.questions} | {_pct(m.answer_accuracy)} | {_pct(m.citation_accuracy)} | "
            f"{missed}/{m.answerable} | {m.verdicts.get('refused', 0)}/{m.unanswerable} | "
            f"{made_up}/{m.questions} | {min(seconds):.3f} / {statistics.median(seconds):.3f} |"
        )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", action="store_true", help="print the threshold sweep instead")
    parser.add_argument("--data", default="", help="data folder (store, embedding cache); default: a temp folder")
    args = parser.parse_args()
    data = Path(args.data or os.environ.get("FLOWBUILDER_DATA_DIR") or tempfile.mkdtemp(prefix="fb-answers-"))
    os.environ["FLOWBUILDER_DATA_DIR"] = str(data)
    executor = Executor(data_dir=data)
    if args.calibrate:
        calibrate(executor)
    else:
        report(executor)


if __name__ == "__main__":
    main()
