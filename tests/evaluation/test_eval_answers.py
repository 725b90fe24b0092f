"""``flowbuilder eval``: a real flow (local MiniLM, embedded Chroma, llm.openai through the OpenAI SDK
against the fake server) answering scripted right, wrong, uncited, wrongly cited, invented and
refusing answers; every verdict, metric, JUnit case and threshold is checked."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.answers import citations, contains_fact, is_refusal, judge_answer, parse_judge_reply
from flowbuilder.evaluation.questions import Question
from tests.evaluation.answer_flow import EXPECTED, QUESTIONS, chunks_of, edge_dicts, script, write_corpus
from tests.fakes.llm_server import FakeLLMServer, Reply, running_server

KEY = "sk-eval-SECRET-123456"


_FAKE_URL: list[str] = []
"""The running fake's address: a cloud key goes to this machine only once approved, as a user would."""


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    for fake in running_server(embedding_dim=8):
        _FAKE_URL[:] = [fake.url]
        yield fake


@pytest.fixture
def corpus(tmp_path: Path, server: FakeLLMServer) -> tuple[Path, Path]:
    return write_corpus(tmp_path / "help", server.openai_base_url, "eval-help")


def _eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["eval", *args, "--cred", f"openai={KEY}", "--allow-endpoint", f"openai={_FAKE_URL[0]}", "--quiet"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_rules_citations_and_refusals() -> None:
    assert citations("Yes [2], and [1, 3] also [2-4]; see [5][6].") == [2, 1, 3, 4, 5, 6]
    assert citations("no citation here, [a] [] ") == []
    # Brackets inside what is quoted are the documents' (a status, a list index), not the answerer's citations.
    quoted = 'It: "handles [500] and hosts[0]" [1].\n\n> [1] errors.md: handlers for [500] and `x[3]`\n> [2] b.md: more'
    assert citations(quoted) == [1, 2]
    assert citations("```py\nhosts[7]\n```\nThe list is read back [1].") == [1]
    assert contains_fact("You get TEN... no: 10  Recovery-codes!", "10 recovery codes")
    assert not contains_fact("You get 100 recovery codes", "10 recovery codes")
    assert is_refusal("I don't know.") and is_refusal("The context does not mention a phone number.")
    assert is_refusal("")
    assert not is_refusal("Call 555-0100 [1].")
    hits = [Hit(document=Document(text="the fact is here", metadata={"record_id": "R1"}), score=1.0, rank=1)]
    question = Question("x", "q?", ("R1",), "fact is here")
    assert judge_answer(question, "The fact is here [1].", hits, [1])[0] == "correct"
    assert judge_answer(question, "The fact is here [2].", hits, [2])[0] == "wrongly cited"
    no_fact = Question("y", "q?", ("R1",), None)
    assert judge_answer(no_fact, "Something [1].", hits, [1])[0] == "correct"  # cites the gold record


def test_words_said_back_from_the_question_are_not_a_refusal() -> None:
    # An answer that restates the question ("if the value is not provided") is not declining to answer, however
    # the question is worded; the answerer's own "I don't know" still is, even where the question has those words.
    asked = "What happens if the config value is not provided?"
    answer = "If the config value is not provided, Config raises an error [1]."
    assert is_refusal(answer) and not is_refusal(answer, question=asked)
    assert is_refusal("I don't know.", question="What do I do if I don't know my password?")
    assert is_refusal("The documents do not say what happens if you don't say.", question="What if I don't say?")
    hits = [Hit(document=Document(text="Function endpoints only accept GET.", metadata={}), score=1.0, rank=1)]
    restated = Question("m", "What methods does it take if I don't say?", (), "only accept GET")
    lead = 'What methods does it take if you don\'t say: "methods=[...]" [1].\n\n> [1] routing.md: methods=[...]'
    assert judge_answer(restated, lead, hits, [1])[0] == "wrong"  # answered (wrongly), not refused
    right = lead.replace("methods=[...]", "Function endpoints only accept GET.")
    assert judge_answer(restated, right, hits, [1])[0] == "correct"


def test_judge_reply_parsing() -> None:
    good = parse_judge_reply('Sure: {"faithfulness": 0.5, "correctness": 1, "reason": "ok"}')
    assert (good.faithfulness, good.correctness, good.reason, good.error) == (0.5, 1.0, "ok", "")
    assert "without JSON" in parse_judge_reply("great answer").error
    bad = parse_judge_reply('{"faithfulness": 7, "correctness": 1}')
    assert bad.faithfulness is None and "faithfulness is 7" in bad.error


def test_eval_scores_every_kind_of_answer(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    flow, questions = corpus
    script(server)
    junit = tmp_path / "out" / "eval.xml"
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--json", "--junit", str(junit))
    assert code == 0  # no thresholds asked and every question ran: wrong answers are reported, not fatal
    data = json.loads(out)
    verdicts = {r["id"]: r["verdict"] for r in data["results"]}
    assert verdicts == EXPECTED
    metrics = data["metrics"]
    assert metrics["answerable"] == 6 and metrics["unanswerable"] == 2
    assert metrics["accuracy"] == pytest.approx(1 / 6)
    assert metrics["refusal_rate"] == 0.5 and metrics["invention_rate"] == 0.5
    assert metrics["fact_rate"] == pytest.approx(4 / 6)  # q1, q2, q4, q7 state the fact
    assert metrics["retrieval"]["questions"] == 6 and metrics["retrieval"]["k"] == 3
    assert metrics["judge"]["faithfulness"] is None  # no judge asked: n/a, not 0
    q1 = next(r for r in data["results"] if r["id"] == "q1")
    assert q1["retrieval"]["first_rank"] is not None and q1["retrieved_fact"] is True
    cited = [c for c in q1["chunks"] if c["cited"]]
    assert len(cited) == 1 and cited[0]["holds_fact"] and cited[0]["records"] == ["SEC-1"]
    assert "Question: How many backup codes do I get with 2FA?" in q1["prompt"]
    assert q1["answer"].startswith("You get 10 recovery codes [")
    q7 = next(r for r in data["results"] if r["id"] == "q7")
    assert "cites [9]; the prompt had 3 chunks" in json.dumps(q7["checks"])
    # the wrongly answered questions had the fact in their chunks: retrieval was not the problem
    assert metrics["wrong_despite_retrieval"] >= 3
    # the answerer's own loss, beside accuracy: the same columns whatever answered (here a model's replies)
    held = [r for r in data["results"] if r["answerable"] and r["retrieved_fact"]]
    assert metrics["retrieved_fact"] == len(held) >= 4
    assert metrics["wrong_despite_retrieval"] == sum(r["verdict"] != "correct" for r in held)
    assert metrics["correct_when_retrieved"] == pytest.approx(sum(r["verdict"] == "correct" for r in held) / len(held))
    assert metrics["refused_answerable"] == sum(v == "missed" for v in verdicts.values())
    assert metrics["answered_unanswerable"] == 1
    # the key never appears in what eval prints or writes
    assert KEY not in out and KEY not in junit.read_text(encoding="utf-8")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == 8 and suite.get("failures") == "6" and suite.get("errors") == "0"
    failed = {c.get("name", "").split(":")[0]: c.find("failure") for c in cases}
    assert failed["q1"] is None and failed["q6"] is None
    q5_failure = failed["q5"]
    assert q5_failure is not None and q5_failure.get("type") == "invented"


def test_eval_thresholds_and_the_text_report(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path]
) -> None:
    flow, questions = corpus
    script(server)
    code, out, _ = _eval(
        capsys, str(flow), "--questions", str(questions), "--min-accuracy", "0.1", "--min-refusal", "0.5"
    )
    assert code == 0, out
    assert "accuracy 17%" in out and "refusals 50%" in out and "inventions 50%" in out
    assert "q7" in out and "cites [9]" in out
    assert "Answerer: correct when the fact was retrieved" in out and "wrong despite retrieval" in out
    assert "unanswerable answered 1 of 2" in out
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--min-accuracy", "0.5", "--min-hit", "0.5")
    assert code == 1
    assert "FAILED: answer accuracy (fact present and rightly cited) 0.167 is below 0.5" in out
    # a judge threshold without a judge has nothing to measure: it fails, it does not pass silently
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--min-faithfulness", "0.5")
    assert code == 1 and "judge faithfulness: no questions to measure it" in out


def test_eval_with_the_flows_model_as_judge(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path]
) -> None:
    flow, questions = corpus
    model = script(server)
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--judge", "llm", "--json")
    assert code == 0
    data = json.loads(out)
    assert len(model.judged) == 8
    assert "Expected fact: 10 recovery codes" in model.judged[0] and "[1]" in model.judged[0]
    q5 = next(r for r in data["results"] if r["id"] == "q5")
    assert q5["judge"] == {"faithfulness": 0.0, "correctness": 0.0, "reason": "checked the chunks"}
    assert data["metrics"]["judge"]["judged"] == 8
    assert data["metrics"]["judge"]["faithfulness"] == pytest.approx(7 / 8)


def test_eval_judge_errors_are_shown_not_scored(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path]
) -> None:
    flow, questions = corpus
    script(server, judge_reply="Looks fine to me!")
    code, out, err = _eval(
        capsys, str(flow), "--questions", str(questions), "--judge", "llm", "--min-correctness", "0.1"
    )
    assert code == 1
    assert "judge: the judge replied without JSON" in out
    assert "Judge (0 graded): faithfulness n/a" in out
    # the judge that failed to parse is a degraded stage: said once, on stderr and in the report
    line = "judge 'llm' gave no usable grade on 8 of 8 questions"
    assert f"DEGRADED: {line}" in err and f"DEGRADED: {line}" in out


def test_eval_setup_errors(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path]
) -> None:
    flow, questions = corpus
    code, _, err = _eval(capsys, str(flow), "--questions", str(questions), "--judge", "nope")
    assert code == 1 and "--judge names no node 'nope'" in err
    code, _, err = _eval(capsys, str(flow), "--questions", str(questions), "--judge", "retriever")
    assert code == 1 and "provides no chat model" in err
    code, _, err = _eval(capsys, str(flow), "--questions", str(questions), "--min-accuracy", "2")
    assert code == 2 and "between 0 and 1" in err
    server.fail("chat", 401)
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions))
    assert code == 1 and "error" in out and "did not run to an answer" in out and KEY not in out
    assert "-> the same error" in out
    # the model failed, retrieval did not: it is still measured, and the answer metrics are n/a, not 0
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--json")
    metrics = json.loads(out)["metrics"]
    assert code == 1 and metrics["errors"] == 8
    assert metrics["retrieval"]["questions"] == 6 and metrics["retrieval"]["hit@k"] > 0
    assert metrics["accuracy"] is None and metrics["refusal_rate"] is None


def test_eval_runs_a_rewrite_and_rerank_flow(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path]
) -> None:
    """query.rewrite (3 variants, RRF) -> reranker.llm (0-10 judge) -> prompt: eval numbers the reranked chunks."""
    flow_path, questions = corpus
    flow = json.loads(flow_path.read_text(encoding="utf-8"))
    flow["nodes"] += [
        {"id": "helper", "type": "llm.openai", "config": {"base_url": server.openai_base_url, "max_retries": 0}},
        {"id": "rewrite", "type": "query.rewrite", "config": {"n": 3, "keep": 5}},
        {"id": "rerank", "type": "reranker.llm", "config": {"candidates": 5, "keep": 3}},
    ]
    flow["edges"] = [e for e in flow["edges"] if e["target"] != "prompt" or e["target_port"] != "context"]
    flow["edges"] += edge_dicts(
        [
            ("retriever", "retriever", "rewrite", "retriever"),
            ("question", "message", "rewrite", "query"),
            ("helper", "model", "rewrite", "model"),
            ("rewrite", "hits", "rerank", "hits"),
            ("question", "message", "rerank", "query"),
            ("helper", "model", "rerank", "model"),
            ("rerank", "hits", "prompt", "context"),
        ]
    )
    flow_path.write_text(json.dumps(flow), encoding="utf-8")
    answers = script(server)
    facts = [fact for _, _, fact, _, _, _ in QUESTIONS]
    calls = {"rewrite": 0, "judge": 0}

    def responder(body: dict[str, Any]) -> Reply:
        text = str(body["messages"][-1]["content"])
        if "rewordings" in text:
            calls["rewrite"] += 1
            return Reply("1. first rewording\n2. second rewording\n3. third rewording")
        if text.startswith("You judge search results"):
            calls["judge"] += 1
            passage = text.split("Passage:\n", 1)[1]
            return Reply("9" if any(f and f.lower() in passage.lower() for f in facts) else "1")
        return answers(body)

    server.responder = responder
    code, out, _ = _eval(capsys, str(flow_path), "--questions", str(questions), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["roles"]["hits"] == "rerank"
    assert {r["id"]: r["verdict"] for r in data["results"]} == EXPECTED
    # one rewrite per question; the judge scores every merged hit (3 to 5 per question: 4 lists of 3 from 6 rows)
    assert calls["rewrite"] == 8 and 8 * 3 <= calls["judge"] <= 8 * 5
    q1 = next(r for r in data["results"] if r["id"] == "q1")
    assert q1["retrieval"]["first_rank"] == 1  # the judge put the chunk with the fact first
    assert len(q1["chunks"]) == 3


def _perfect(body: dict[str, Any]) -> Reply:
    """A model that answers every answerable question with its fact, cited, and refuses the others."""
    text = str(body["messages"][-1]["content"])
    asked = text.split("Question: ", 1)[1].split("\n", 1)[0].strip()
    _, _, fact, _, answerable, _ = next(q for q in QUESTIONS if q[1] == asked)
    if not answerable or not fact:
        return Reply("I don't know.")
    holder = next(n for n, chunk in chunks_of(text).items() if fact.lower() in chunk.lower())
    return Reply(f"{fact} [{holder}].")


def test_eval_against_a_baseline(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    flow, questions = corpus
    script(server)
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--json")
    saved = tmp_path / "baseline.json"
    saved.write_text(out, encoding="utf-8")
    server.responder = _perfect
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--baseline", str(saved))
    assert code == 0
    # 2 of 8 passed before, 8 of 8 now: 6 wins, 0 losses (exact McNemar p = 2/64)
    assert "Against the baseline 'Help centre RAG (baseline.json)' (8 questions):" in out
    assert "Help centre RAG better than Help centre RAG (baseline.json) (answers passed +0.750" in out
    assert "6 wins, 0 losses, p = 0.031" in out
    # the same flow as its own baseline: every question scores alike
    code, out, _ = _eval(capsys, str(flow), "--questions", str(questions), "--baseline", str(flow), "--json")
    data = json.loads(out)
    assert data["baseline"]["questions"] == 8
    assert "no detectable difference on 8 questions" in data["baseline"]["verdicts"][0]
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps({"flow": "x", "metrics": {}, "results": [{"id": "zz", "verdict": "correct"}]}))
    code, _, err = _eval(capsys, str(flow), "--questions", str(questions), "--baseline", str(bad))
    assert code == 1 and "shares no answered question id" in err


def test_without_numbered_chunks_citations_are_not_checked() -> None:
    question = Question("x", "q?", ("R1",), "fact is here")
    verdict, checks = judge_answer(question, "The fact is here.", None, [])
    assert verdict == "correct" and [c.name for c in checks] == ["fact"]
    assert judge_answer(question, "Nope.", None, [])[0] == "wrong"
    assert judge_answer(Question("y", "q?", ("R1",), None), "Something.", None, [])[0] == "unchecked"


def test_eval_with_another_node_as_judge(
    capsys: pytest.CaptureFixture[str], server: FakeLLMServer, corpus: tuple[Path, Path]
) -> None:
    """A separate llm node (another model, connected to nothing) grades; the answering model does not."""
    flow_path, questions = corpus
    flow = json.loads(flow_path.read_text(encoding="utf-8"))
    grader = {"base_url": server.openai_base_url, "model": "gpt-4o", "max_retries": 0}
    flow["nodes"].append({"id": "grader", "type": "llm.openai", "config": grader})
    flow_path.write_text(json.dumps(flow), encoding="utf-8")
    model = script(server)
    code, out, _ = _eval(capsys, str(flow_path), "--questions", str(questions), "--judge", "grader", "--json")
    assert code == 0 and json.loads(out)["roles"]["judge"] == "grader"
    graded = [r.body for r in server.requests_to("chat") if "strict grader" in json.dumps(r.body)]
    assert len(graded) == len(model.judged) == 8
    assert {body["model"] for body in graded} == {"gpt-4o"}
