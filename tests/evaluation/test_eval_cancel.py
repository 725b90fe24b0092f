"""A cancelled evaluation keeps what finished: the questions that ran, their metrics, and that it was cut short."""

from __future__ import annotations

import threading
from pathlib import Path

from flowbuilder.evaluation.answers import AnswerResult, evaluate_answers
from flowbuilder.evaluation.questions import Question
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from tests.evaluation.answer_flow import RAG_EDGES

ROWS = (
    "id,title,text\n"
    "SEC-1,Backup codes,Turning on two-factor authentication gives you 10 recovery codes.\n"
    "PAY-1,Refunds,Refunds reach the original card within 5 working days.\n"
    "PAY-2,Invoices,Invoices are emailed on the first day of every month.\n"
)
QUESTIONS = [
    Question("q1", "How many recovery codes come with two-factor authentication?", ("SEC-1",), "10 recovery codes"),
    Question("q2", "How long does a refund take to reach my card?", ("PAY-1",), "5 working days"),
    Question("q3", "When are invoices emailed?", ("PAY-2",), "first day of every month"),
    Question("q4", "Can I pay with crypto?"),
]


def offline_flow(folder: Path) -> Flow:
    """A RAG flow that answers with no model (extractive quotes), over three help-centre rows."""
    (folder / "help.csv").write_text(ROWS, encoding="utf-8")
    nodes = [
        NodeSpec(id="loader", type="loader.file", config={"path": "help.csv", "mode": "records"}),
        NodeSpec(id="labeller", type="labeller.row", config={"template": "{id} {title}: {text}"}),
        NodeSpec(id="splitter", type="splitter.record"),
        NodeSpec(id="embedder", type="embedder.local"),
        NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "eval-cancel"}),
        NodeSpec(id="question", type="chat.input"),
        NodeSpec(id="retriever", type="retriever.vector", config={"k": 2}),
        NodeSpec(id="prompt", type="prompt.template"),
        NodeSpec(id="llm", type="answer.extractive"),
        NodeSpec(id="answer", type="chat.output"),
    ]
    edges = [Edge(source=a, source_port=b, target=c, target_port=d) for a, b, c, d in RAG_EDGES]
    return Flow(name="Offline help centre", nodes=nodes, edges=edges)


def test_a_cancelled_evaluation_returns_the_questions_that_finished(tmp_path: Path) -> None:
    flow = offline_flow(tmp_path)
    cancel = threading.Event()

    def stop_after_two(index: int, total: int, result: AnswerResult) -> None:
        if index == 2:
            cancel.set()  # as the page's Cancel does, while the evaluation goes on in its thread

    evaluation = evaluate_answers(
        flow,
        QUESTIONS,
        base_dir=tmp_path,
        executor=Executor(data_dir=tmp_path / "data"),
        on_question=stop_after_two,
        cancel_event=cancel,
    )
    assert [r.question.id for r in evaluation.results] == ["q1", "q2"]
    assert evaluation.cancelled and evaluation.planned == 4
    assert evaluation.metrics.questions == 2 and evaluation.metrics.answerable == 2  # over what ran
    assert all(r.verdict != "error" for r in evaluation.results)
    data = evaluation.to_dict()
    assert data["cancelled"] is True and data["planned"] == 4 and len(data["results"]) == 2


def test_a_cancel_during_a_question_drops_only_that_question(tmp_path: Path) -> None:
    flow = offline_flow(tmp_path)
    cancel = threading.Event()
    started: list[str] = []

    def cancel_in_the_third(event: object) -> None:
        if getattr(event, "kind", "") == "run_started":
            started.append("run")
            if len(started) == 3:
                cancel.set()  # the third question's run stops at its first node

    evaluation = evaluate_answers(
        flow,
        QUESTIONS,
        base_dir=tmp_path,
        executor=Executor(data_dir=tmp_path / "data"),
        on_event=cancel_in_the_third,  # type: ignore[arg-type]
        cancel_event=cancel,
    )
    assert [r.question.id for r in evaluation.results] == ["q1", "q2"] and evaluation.cancelled
    finished = evaluate_answers(flow, QUESTIONS[:1], base_dir=tmp_path, executor=Executor(data_dir=tmp_path / "d2"))
    assert not finished.cancelled and finished.to_dict()["planned"] == 1
