"""Answer evaluation: run a whole flow for every question and score retrieval and answers separately.

"A 97% retrieval score still produced two wrong answers": a flow is judged on what it *says*, not
only on what it retrieves. For every question the flow runs end to end (the ingest part comes from
the executor's cache after the first question), and this module reads three values from the run:

* the **chunks** the prompt numbered (the hits that feed the ``prompt.template`` node), judged for
  retrieval with the same metrics as ``flowbuilder compare``;
* the **prompt** sent to the model;
* the **answer** (``chat.output``, else the one node with an ``answer``).

Then each answer gets rule-based checks, all LLM-free and assertable:

* ``fact``: the answer contains the question's expected fact (``facts.holds_fact``, the rule retrieval is
  judged by: case, spacing, punctuation, Unicode forms, markdown markup and PDF footnote markers ignored);
* ``citations``: every ``[n]`` points to a numbered chunk, and at least one cited chunk holds the fact
  (or, for a question without a fact, is a gold record);
* ``refusal``: a question with ``"answerable": false`` gets a refusal ("I don't know"), not an invention.

An optional judge (a chat model of the flow, ``--judge NODE``) rates faithfulness to the chunks and
correctness from 0 to 1 with a one-sentence reason. Every metric is computed over the questions it
applies to; a metric with no questions is ``None`` (shown as n/a), never 0 or 1.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.capabilities import Capability
from flowbuilder.context import DEFAULT_CONTEXT_CHARS, context_budget
from flowbuilder.data import ChatMessage, Hit
from flowbuilder.errors import FlowbuilderError
from flowbuilder.evaluation.facts import holds_fact
from flowbuilder.evaluation.metrics import (
    QuestionOutcome,
    Relevance,
    aggregate,
    chunk_records,
    default_relevance,
    judge_hits,
)
from flowbuilder.evaluation.questions import Question
from flowbuilder.executor import Executor, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.registry import NodeRegistry
from flowbuilder.services import ChatModel

VERDICTS = ("correct", "wrong", "uncited", "wrongly cited", "missed", "refused", "invented", "unchecked", "error")
"""``correct``: fact in the answer, cited from a chunk that holds it. ``wrong``: the fact is missing.
``uncited``: right but cites nothing. ``wrongly cited``: cites a chunk that does not exist or does not
hold the fact. ``missed``: refused although the question is answerable. ``refused``: rightly refused a
question with no answer. ``invented``: answered a question with no answer. ``unchecked``: no fact and no
numbered chunks to check against (neither passed nor failed). ``error``: the run failed."""
PASSING = frozenset({"correct", "refused"})

REFUSAL_PATTERNS: tuple[str, ...] = (
    r"\bi (?:do not|don't|dont|cannot|can't) (?:know|tell|say|find)\b",
    r"\b(?:cannot|can't|can not|unable to|could not|couldn't) (?:find|answer|determine|tell|say|locate)\b",
    r"\b(?:does not|doesn't|do not|don't|did not) (?:contain|include|mention|say|cover|provide|specify|state|answer)\b",
    r"\b(?:is|are|was|were)? ?not (?:mentioned|covered|stated|specified|included|provided|described|available)\b",
    r"\bno (?:information|mention|details?|answer)\b",
    r"\bnot (?:enough|sufficient) (?:information|context)\b",
    r"\bnot in the (?:context|documents?|passages?|sources?)\b",
)
_CITATION = re.compile(r"\[(\s*\d+\s*(?:(?:,|;|-|–|and)\s*\d+\s*)*)\]")

JUDGE_PROMPT = """You grade an answer written by a retrieval-augmented assistant.

Question: {question}
Expected fact: {fact}

Retrieved context (numbered chunks):
{context}

Answer to grade:
{answer}

Rate from 0 to 1:
- faithfulness: is every claim of the answer supported by the retrieved context? (1 = all supported, 0 = invented)
- correctness: does the answer answer the question correctly (or rightly refuse when the documents hold no answer)?
Reply with JSON only: {"faithfulness": <0-1>, "correctness": <0-1>, "reason": "<one sentence>"}"""
NO_FACT = "(none: the documents do not answer this question; the right answer is a refusal)"


def contains_fact(text: str, fact: str) -> bool:
    """Whether ``fact`` appears in ``text``: the one rule retrieval is judged by (:func:`facts.holds_fact`)."""
    return holds_fact(text, fact)


def citations(answer: str) -> list[int]:
    """The chunk numbers an answer cites: ``[2]``, ``[1, 3]``, ``[2-4]``, ``[1][2]``, in order, no repeats.

    Only the answerer's own markers count. Quoted text is the documents' (:func:`own_words`): code that indexes a
    list (``hosts[0]``) or a note on a status (``[500]``) in a quote cites nothing. A quoted line's leading ``> [n]``
    is the answerer's marker of where the quote is from, and counts."""
    found: list[int] = []
    for match in _CITATION.finditer(own_words(answer, keep_quote_markers=True)):
        body = match.group(1)
        for part in re.split(r",|;|and", body):
            bounds = [int(n) for n in re.findall(r"\d+", part)]
            if len(bounds) == 2 and re.search(r"[-–]", part) and bounds[0] <= bounds[1] <= bounds[0] + 50:
                numbers = list(range(bounds[0], bounds[1] + 1))
            else:
                numbers = bounds
            found.extend(n for n in numbers if n not in found)
    return found


_QUOTED_LINE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_QUOTED_TEXT = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")


_QUOTE_MARKER = re.compile(r"^[ \t]*>[ \t]*(\[[^\]\n]*\])?.*$", re.MULTILINE)
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)


def own_words(answer: str, keep_quote_markers: bool = False) -> str:
    """The answer without what it quotes: ``> ...`` lines, "..." spans and code. ``keep_quote_markers`` keeps
    the ``[n]`` a quoted line starts with."""
    text = _CODE.sub(" ", answer.replace("’", "'"))
    if keep_quote_markers:
        text = _QUOTE_MARKER.sub(lambda m: f" {m.group(1) or ''} ", text)
    else:
        text = _QUOTED_LINE.sub(" ", text)
    return _QUOTED_TEXT.sub(" ", text)


def is_refusal(answer: str, patterns: Sequence[str] = REFUSAL_PATTERNS, question: str = "") -> bool:
    """Whether the answer declines to answer. Quoted text (``> ...`` lines, "..." spans, code) is the documents'
    voice, not the answerer's: "> [2] The free plan does not include SSO" is an answer, not a refusal. So are the
    words it repeats from ``question`` (:func:`without_echo`): "If you don't know your password, ..." answers "What if
    I don't know my password?"."""
    text = " ".join(own_words(answer).lower().split())
    if not text and answer.strip():
        return False  # nothing but quotes: an answer
    if text and question:
        text = without_echo(text, question)
    return not text or any(re.search(pattern, text) for pattern in patterns)


ECHO_WORDS = 4
"""Least run of words an answer must repeat from the question to count as restating it (a bare "I don't know" is
three: said back, it still refuses)."""
_PERSON = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "am": "are", "i'm": "you're"}
_ECHO_WORD = re.compile(r"[\w'’]+")


def without_echo(text: str, question: str, least: int = ECHO_WORDS) -> str:
    """``text`` without the runs of at least ``least`` words it repeats from ``question``, persons swapped the way
    an answer restates them ("if I don't say" -> "if you don't say"): the user's words said back are not the
    answerer's own."""

    def key(word: str) -> str:
        word = word.lower().replace("’", "'")
        return _PERSON.get(word, word)

    asked = [key(w) for w in _ECHO_WORD.findall(question)]
    runs = {tuple(asked[at : at + least]) for at in range(len(asked) - least + 1)}
    if not runs:
        return text
    words = list(_ECHO_WORD.finditer(text))
    keys = [key(m.group(0)) for m in words]
    echoed = [False] * len(words)
    for at in range(len(words) - least + 1):
        if tuple(keys[at : at + least]) in runs:
            echoed[at : at + least] = [True] * least
    kept, last = [], 0
    for match, said_back in zip(words, echoed, strict=True):
        if said_back:
            kept.append(text[last : match.start()])
            last = match.end()
    kept.append(text[last:])
    return " ".join("".join(kept).split())


def expects_answer(question: Question) -> bool:
    """False for a no-answer question: ``"answerable": false``, or no gold and no fact."""
    return question.extra.get("answerable") is not False and question.answerable


@dataclass
class Check:
    """One named test an answer passed or failed (refusal, fact, citations), with the reason shown beside the
    verdict so a failed question says why."""

    name: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass
class JudgeVerdict:
    """What the LLM judge said of one answer (0-1 scores and its reason); ``error`` says why a reply could not
    be read, so an unusable judge shows as such instead of a zero."""

    faithfulness: float | None
    correctness: float | None
    reason: str
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "faithfulness": self.faithfulness,
            "correctness": self.correctness,
            "reason": self.reason,
        }
        if self.error:
            data["error"] = self.error
        return data


@dataclass
class AnswerResult:
    """One question's run: what was retrieved, asked and answered, and every verdict."""

    question: Question
    verdict: str
    answer: str = ""
    prompt: str = ""
    hits: list[Hit] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    retrieval: QuestionOutcome | None = None
    retrieved_fact: bool | None = None
    """Whether any numbered chunk holds the fact (None without a fact): retrieval's share of the answer."""
    judge: JudgeVerdict | None = None
    seconds: float = 0.0
    error: str = ""
    degraded: dict[str, str] = field(default_factory=dict)
    """``"node (type)" -> warning`` of every stage that ran degraded for this question (an LLM replaced by
    the extractive answerer, an agent that fell back, a rewrite with no variants)."""

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING

    @property
    def answerable(self) -> bool:
        return expects_answer(self.question)

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        data: dict[str, Any] = {
            "id": q.id,
            "question": q.question,
            "kind": q.extra.get("kind"),
            "answerable": self.answerable,
            "fact": q.fact,
            "gold": list(q.gold),
            "verdict": self.verdict,
            "passed": self.passed,
            "checks": [c.to_dict() for c in self.checks],
            "answer": self.answer,
            "citations": self.cited,
            "retrieved_fact": self.retrieved_fact,
            "chunks": [
                {
                    "n": n,
                    "records": sorted(chunk_records(hit.document)),
                    "source": hit.document.metadata.get("source"),
                    "score": hit.score,
                    "cited": n in self.cited,
                    "holds_fact": contains_fact(hit.document.text, q.fact) if q.fact else None,
                    "text": hit.document.text,
                }
                for n, hit in enumerate(self.hits, start=1)
            ],
            "prompt": self.prompt,
            "retrieval": self.retrieval.to_dict(with_hits=False) if self.retrieval else None,
            "judge": self.judge.to_dict() if self.judge else None,
            "seconds": round(self.seconds, 3),
            "degraded": self.degraded,
        }
        if self.error:
            data["error"] = self.error
        return data


def judge_answer(
    question: Question,
    answer: str,
    hits: Sequence[Hit] | None,
    cited: Sequence[int],
    patterns: Sequence[str] = REFUSAL_PATTERNS,
) -> tuple[str, list[Check]]:
    """The rule-based verdict of one answer and the checks behind it. ``hits`` None: the flow numbers no
    chunks that eval can see (an agent searching through a tool), so citations are not checked."""
    refused = is_refusal(answer, patterns, question.question)
    if not expects_answer(question):
        if refused:
            return "refused", [Check("refusal", True, "refused a question the documents do not answer")]
        return "invented", [Check("refusal", False, "answered a question the documents do not answer")]
    checks: list[Check] = []
    if refused:
        checks.append(Check("refusal", False, "refused although the question is answerable"))
        return "missed", checks
    fact = question.fact
    if fact:
        found = contains_fact(answer, fact)
        checks.append(Check("fact", found, f"answer {'contains' if found else 'lacks'} the fact '{fact}'"))
    if hits is None:
        if not fact:
            return "unchecked", checks
        return ("correct" if checks[0].passed else "wrong"), checks
    bad = [n for n in cited if not 1 <= n <= len(hits)]
    if not cited:
        checks.append(Check("citations", False, "cites no chunk"))
    elif bad:
        checks.append(
            Check("citations", False, f"cites {', '.join(f'[{n}]' for n in bad)}; the prompt had {len(hits)} chunks")
        )
    else:
        holders = [n for n in cited if _supports(hits[n - 1], question)]
        what = "the fact" if fact else "a gold record"
        if holders:
            checks.append(Check("citations", True, f"cited chunk(s) {holders} hold {what}"))
        else:
            checks.append(Check("citations", False, f"no cited chunk {cited} holds {what}"))
    if fact and not checks[0].passed:
        return "wrong", checks
    citation = checks[-1]
    if not citation.passed:
        return ("uncited" if not cited else "wrongly cited"), checks
    return "correct", checks


def _supports(hit: Hit, question: Question) -> bool:
    if question.fact:
        return contains_fact(hit.document.text, question.fact)
    return bool(chunk_records(hit.document) & set(question.gold))


def parse_judge_reply(reply: str) -> JudgeVerdict:
    """The judge's JSON (the first ``{...}`` in the reply); scores outside 0-1 or missing are errors."""
    match = re.search(r"\{.*\}", reply, re.DOTALL)
    if match is None:
        return JudgeVerdict(None, None, "", f"the judge replied without JSON: {' '.join(reply.split())[:120]}")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        return JudgeVerdict(None, None, "", f"the judge's JSON is invalid ({exc.msg})")
    scores: list[float | None] = []
    problems: list[str] = []
    for name in ("faithfulness", "correctness"):
        value = data.get(name) if isinstance(data, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
            scores.append(float(value))
        else:
            scores.append(None)
            problems.append(f"{name} is {value!r}, not a number 0-1")
    reason = str(data.get("reason", "")) if isinstance(data, dict) else ""
    return JudgeVerdict(scores[0], scores[1], reason, "; ".join(problems))


def render_context(hits: Sequence[Hit]) -> str:
    return "\n\n".join(f"[{n}] {hit.document.text}" for n, hit in enumerate(hits, start=1)) or "(no chunks)"


def ask_judge(model: ChatModel, question: Question, answer: str, hits: Sequence[Hit]) -> JudgeVerdict:
    values = {
        "{question}": question.question,
        "{fact}": question.fact or ("(not given)" if expects_answer(question) else NO_FACT),
        "{context}": render_context(hits),
        "{answer}": answer or "(empty)",
    }
    prompt = re.sub("|".join(re.escape(k) for k in values), lambda m: values[m.group(0)], JUDGE_PROMPT)
    try:
        reply = model.chat(
            [ChatMessage(role="system", content="You are a strict grader."), ChatMessage(role="user", content=prompt)]
        )
    except FlowbuilderError as exc:
        return JudgeVerdict(None, None, "", f"the judge failed: {exc}")
    return parse_judge_reply(reply.content or "")


# ---------------------------------------------------------------- where the values are in a flow


class EvalSetupError(FlowbuilderError):
    """The flow has no answer, chunks or judge where the evaluation needs them."""


@dataclass(frozen=True)
class FlowRoles:
    """Which nodes of the flow give the answer, the prompt, the numbered chunks and the judge model."""

    answer: str
    answer_port: str
    prompt: str | None
    hits: str | None
    hits_port: str | None
    judge: str | None


def find_roles(
    flow: Flow,
    registry: NodeRegistry,
    *,
    answer: str | None = None,
    hits: str | None = None,
    judge: str | None = None,
) -> FlowRoles:
    """Find the answer node (a node that shows the answer, ``chat.output``; else the single node with an
    ``answer`` output), the prompt node (``prompt.template``) upstream of it and the node whose hits feed that
    prompt. Explicit ids win; roles are the node types' capabilities, never their names."""
    ids = flow.node_ids()
    for given, what in ((answer, "--answer"), (hits, "--hits"), (judge, "--judge")):
        if given is not None and given not in ids:
            raise EvalSetupError(f"{what} names no node '{given}'; the flow's nodes: {', '.join(ids)}")
    if answer is None:
        outputs = [n.id for n in flow.nodes if registry.has(n.type, Capability.ANSWERS) and not n.disabled]
        if not outputs:
            outputs = [n.id for n in flow.nodes if not n.disabled and "answer" in _output_names(registry, n.type)]
        if len(outputs) != 1:
            found = ", ".join(outputs) or "none"
            raise EvalSetupError(
                f"cannot tell which node gives the answer (candidates: {found}); name it with --answer NODE"
            )
        answer = outputs[0]
    answer_port = _answer_port(registry, flow, answer)
    upstream = _ancestors(flow, answer)
    prompts = [n for n in upstream if registry.has(_type(flow, n), Capability.RENDERS_PROMPT)]
    prompt = prompts[0] if prompts else None
    hits_port: str | None = None
    if hits is None:
        feeding = [e for e in flow.edges if prompt is not None and e.target == prompt]
        for edge in feeding:
            if _port_type(registry, flow, edge.source, edge.source_port) == "hits":
                hits, hits_port = edge.source, edge.source_port
                break
        if hits is None:
            for node_id in upstream:
                port = _first_port_of_type(registry, flow, node_id, "hits")
                if port is not None:
                    hits, hits_port = node_id, port
                    break
    elif hits is not None:
        hits_port = _first_port_of_type(registry, flow, hits, "hits")
        if hits_port is None:
            raise EvalSetupError(f"--hits node '{hits}' ({_type(flow, hits)}) has no hits output")
    if judge is not None and _first_port_of_type(registry, flow, judge, "chat_model") is None:
        raise EvalSetupError(
            f"--judge node '{judge}' ({_type(flow, judge)}) provides no chat model; name an llm.* node"
        )
    return FlowRoles(answer, answer_port, prompt, hits, hits_port, judge)


def _answer_port(registry: NodeRegistry, flow: Flow, node_id: str) -> str:
    """The output that holds the answer: an answer-showing node's one text output (chat.output's
    ``message``), else ``answer``."""
    if registry.has(_type(flow, node_id), Capability.ANSWERS):
        texts = [name for name, kind in _ports(registry, flow, node_id) if kind != "any"]
        if len(texts) == 1:
            return texts[0]
    return "answer"


def _type(flow: Flow, node_id: str) -> str:
    spec = flow.find_node(node_id)
    return spec.type if spec is not None else ""


def _ancestors(flow: Flow, node_id: str) -> list[str]:
    """Upstream nodes, nearest first (breadth-first over incoming edges)."""
    order: list[str] = []
    frontier = [node_id]
    while frontier:
        nxt: list[str] = []
        for target in frontier:
            for edge in flow.edges:
                if edge.target == target and edge.source not in order and edge.source != node_id:
                    order.append(edge.source)
                    nxt.append(edge.source)
        frontier = nxt
    return order


def _ports(registry: NodeRegistry, flow: Flow, node_id: str) -> list[tuple[str, str]]:
    spec = flow.find_node(node_id)
    if spec is None:
        return []
    try:
        cls = registry.get(spec.type)
        config = cls.Config.model_validate(spec.config)
        return [(p.name, p.type.value) for p in cls.output_ports(config)]
    except Exception:  # an unknown type or bad config: validation reports it when the flow runs
        return []


def _output_names(registry: NodeRegistry, type_name: str) -> list[str]:
    try:
        return [p.name for p in registry.get(type_name).outputs]
    except FlowbuilderError:
        return []


def _port_type(registry: NodeRegistry, flow: Flow, node_id: str, port: str) -> str | None:
    return next((t for name, t in _ports(registry, flow, node_id) if name == port), None)


def _first_port_of_type(registry: NodeRegistry, flow: Flow, node_id: str, port_type: str) -> str | None:
    return next((name for name, t in _ports(registry, flow, node_id) if t == port_type), None)


# ---------------------------------------------------------------- running


@dataclass
class EvalMetrics:
    """The evaluation's figures over all questions: counts, answer and refusal rates, judge means and the
    retrieval metrics; a rate nothing measured is None, never 0."""

    questions: int
    answerable: int
    unanswerable: int
    errors: int
    answer_accuracy: float | None
    """Correct answers (fact present and rightly cited) among the answerable questions that ran."""
    fact_rate: float | None
    """Answers containing the fact, cited or not, among answerable questions with a fact."""
    citation_accuracy: float | None
    """Answerable questions whose answer cites only real chunks, one of them holding the fact."""
    refusal_rate: float | None
    """No-answer questions rightly refused."""
    invention_rate: float | None
    """No-answer questions answered anyway."""
    wrong_despite_retrieval: int
    """Answerable questions whose chunks held the fact but whose answer was not correct: the answerer's loss."""
    retrieval: dict[str, Any]
    retrieved_fact: int = 0
    """Answerable questions (that ran) whose numbered chunks held the fact."""
    correct_when_retrieved: float | None = None
    """Of those, the share answered correctly: the answerer's own accuracy, retrieval's misses aside."""
    refused_answerable: int = 0
    """Answerable questions the flow refused."""
    answered_unanswerable: int = 0
    """Questions without an answer that got one anyway."""
    faithfulness: float | None = None
    correctness: float | None = None
    judged: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "answerable": self.answerable,
            "unanswerable": self.unanswerable,
            "errors": self.errors,
            "accuracy": self.answer_accuracy,
            "fact_rate": self.fact_rate,
            "citation_accuracy": self.citation_accuracy,
            "refusal_rate": self.refusal_rate,
            "invention_rate": self.invention_rate,
            "wrong_despite_retrieval": self.wrong_despite_retrieval,
            "retrieved_fact": self.retrieved_fact,
            "correct_when_retrieved": self.correct_when_retrieved,
            "refused_answerable": self.refused_answerable,
            "answered_unanswerable": self.answered_unanswerable,
            "retrieval": self.retrieval,
            "judge": {"judged": self.judged, "faithfulness": self.faithfulness, "correctness": self.correctness},
            "verdicts": self.verdicts,
        }


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise(results: Sequence[AnswerResult], k: int) -> EvalMetrics:
    # Answer metrics count the questions that ran to an answer (errors are reported apart and fail the
    # command); retrieval counts every answerable question whose chunks were retrieved.
    answerable = [r for r in results if r.answerable]
    unanswerable = [r for r in results if not r.answerable]
    answered = [r for r in answerable if r.verdict != "error"]
    refused_or_not = [r for r in unanswerable if r.verdict != "error"]
    with_fact = [r for r in answered if r.question.fact]
    cited_ok = [r for r in answered if any(c.name == "citations" and c.passed for c in r.checks)]
    outcomes = [r.retrieval for r in answerable if r.retrieval is not None]
    judged = [r.judge for r in results if r.judge is not None and not r.judge.error]
    retrieval = aggregate(outcomes, k).to_dict() if outcomes else {"k": k, "questions": 0}
    verdicts = {v: sum(1 for r in results if r.verdict == v) for v in VERDICTS}
    held = [r for r in answered if r.retrieved_fact]
    return EvalMetrics(
        questions=len(results),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        errors=verdicts["error"],
        answer_accuracy=_share(verdicts["correct"], len(answered)),
        fact_rate=_share(sum(1 for r in with_fact if contains_fact(r.answer, r.question.fact or "")), len(with_fact)),
        citation_accuracy=_share(len(cited_ok), len(answered)),
        refusal_rate=_share(verdicts["refused"], len(refused_or_not)),
        invention_rate=_share(verdicts["invented"], len(refused_or_not)),
        wrong_despite_retrieval=sum(1 for r in held if r.verdict != "correct"),
        retrieval=retrieval,
        retrieved_fact=len(held),
        correct_when_retrieved=_share(sum(1 for r in held if r.verdict == "correct"), len(held)),
        refused_answerable=verdicts["missed"],
        answered_unanswerable=verdicts["invented"],
        faithfulness=_mean([j.faithfulness for j in judged if j.faithfulness is not None]),
        correctness=_mean([j.correctness for j in judged if j.correctness is not None]),
        judged=len(judged),
        verdicts={v: n for v, n in verdicts.items() if n},
    )


@dataclass
class Evaluation:
    """Everything one ``eval`` produced for a flow: which nodes played which role, each question's result and
    the metrics, in the form the CLI, the JSON output, JUnit and the /eval page all read."""

    flow: str
    roles: FlowRoles
    k: int
    results: list[AnswerResult]
    metrics: EvalMetrics
    relevance: Relevance = "lenient"
    """How the retrieved chunks were judged relevant."""
    chars: int = DEFAULT_CONTEXT_CHARS
    """The context budget hit@chars was judged at."""
    planned: int | None = None
    """How many questions the set had; more than ``len(results)`` when the evaluation was cancelled (the metrics
    are then over the questions that ran)."""

    @property
    def cancelled(self) -> bool:
        return self.planned is not None and len(self.results) < self.planned

    @property
    def warnings(self) -> list[str]:
        """One line per stage that ran degraded, with how many questions it hit (see :attr:`AnswerResult.degraded`)."""
        from flowbuilder.evaluation.compare import degraded_summary

        per_node: dict[str, list[str]] = {}
        for result in self.results:
            for node, message in result.degraded.items():
                per_node.setdefault(node, []).append(message)
        lines = degraded_summary(per_node, len(self.results))
        failed = [r.judge.error for r in self.results if r.judge is not None and r.judge.error]
        if failed:
            lines.append(
                f"judge '{self.roles.judge}' gave no usable grade on {len(failed)} of {len(self.results)} "
                f"questions (left out of faithfulness/correctness): {failed[0]}"
            )
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "flow": self.flow,
            "warnings": self.warnings,
            "relevance": self.relevance,
            "chars": self.chars,
            "roles": {
                "answer": self.roles.answer,
                "prompt": self.roles.prompt,
                "hits": self.roles.hits,
                "judge": self.roles.judge,
            },
            "k": self.k,
            "metrics": self.metrics.to_dict(),
            "results": [r.to_dict() for r in self.results],
            "planned": self.planned if self.planned is not None else len(self.results),
            "cancelled": self.cancelled,
        }


ProgressHandler = Callable[[int, int, AnswerResult], None]


def evaluate_answers(
    flow: Flow,
    questions: Sequence[Question],
    *,
    base_dir: Path | None = None,
    executor: Executor | None = None,
    k: int | None = None,
    answer: str | None = None,
    hits: str | None = None,
    judge: str | None = None,
    refusal_patterns: Sequence[str] = REFUSAL_PATTERNS,
    on_question: ProgressHandler | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    relevance: Relevance | None = None,
    chars: int | None = None,
    flow_file: Path | None = None,
    cancel_event: threading.Event | None = None,
) -> Evaluation:
    """Run ``flow`` once per question (each in its own session, so chat memory never leaks between
    questions) and judge every answer; ``k`` cuts the retrieval metrics (default: all numbered chunks).
    ``flow_file`` says which flow it is (its own stores and memory, :mod:`flowbuilder.trust.scopes`).

    Retrieval is judged in ``relevance`` mode (default: strict when the questions carry facts) and
    hit@chars at ``chars`` (default: the prompt's context budget, else 2,000 characters). ``cancel_event`` stops
    it (the question running then is dropped): what finished is returned, marked ``cancelled``."""
    executor = executor or Executor()
    roles = find_roles(flow, executor.registry, answer=answer, hits=hits, judge=judge)
    mode = relevance or default_relevance(questions)
    budget = chars or context_budget(flow) or DEFAULT_CONTEXT_CHARS
    judging = (mode, budget)
    results: list[AnswerResult] = []
    runs = _runs_on_cluster(flow, questions, roles, executor, base_dir, on_event, flow_file)
    for index, question in enumerate(questions, start=1):
        if cancel_event is not None and cancel_event.is_set():
            break
        given = runs[index - 1] if runs is not None else None
        result = _evaluate_one(
            flow,
            question,
            roles,
            executor,
            base_dir,
            k,
            refusal_patterns,
            on_event,
            judging,
            given,
            cancel_event,
            flow_file,
        )
        if result is None:  # cancelled while it ran
            break
        results.append(result)
        if on_question is not None:
            on_question(index, len(questions), result)
    cut = k or max((len(r.hits) for r in results), default=0) or 1
    return Evaluation(flow.name, roles, cut, results, summarise(results, cut), mode, budget, len(questions))


def _evaluate_one(
    flow: Flow,
    question: Question,
    roles: FlowRoles,
    executor: Executor,
    base_dir: Path | None,
    k: int | None,
    patterns: Sequence[str],
    on_event: Callable[[RunEvent], None] | None,
    judging: tuple[Relevance, int] = ("lenient", DEFAULT_CONTEXT_CHARS),
    given: tuple[RunResult, Any] | None = None,
    cancel_event: threading.Event | None = None,
    flow_file: Path | None = None,
) -> AnswerResult | None:
    """One question's result; None when ``cancel_event`` stopped its run."""
    started = time.perf_counter()
    # Validation and credential errors are raised here, before any node runs: they are the same for
    # every question, so they stop the evaluation instead of turning every question into an "error".
    if given is None:
        run = executor.run(
            flow,
            inputs=question.question,
            session_id=f"eval-{question.id}",
            base_dir=base_dir,
            on_event=on_event,
            cancel_event=cancel_event,
            flow_file=flow_file,
        )
        judge_model = _output(run, roles.judge, "model") if roles.judge else None
    else:  # run on a Ray worker (--ray); the judge model (a service) stays on this machine
        run, judge_model = given
    if run.cancelled:
        return None
    # The chunks and their retrieval scores are read first: when only the model fails (no server, no
    # key), retrieval is still measured, and the answer side reports the error.
    hits_node = run.results.get(roles.hits) if roles.hits else None
    hit_list = _output(run, roles.hits, roles.hits_port) if hits_node is not None and hits_node.succeeded else None
    chunks = [h for h in hit_list if isinstance(h, Hit)] if isinstance(hit_list, list) else []
    retrieval = None
    if expects_answer(question) and isinstance(hit_list, list):
        relevance, chars = judging
        retrieval = judge_hits(question, chunks, k or max(len(chunks), 1), relevance=relevance, chars=chars)
    retrieved_fact = any(contains_fact(h.document.text, question.fact) for h in chunks) if question.fact else None
    prompt = _output(run, roles.prompt, "prompt") if roles.prompt else None
    degraded = {f"{r.node_id} ({r.type_name})": r.warning for r in run.warnings()}
    failed = run.failed()
    answer_value = _output(run, roles.answer, roles.answer_port)
    if failed or not isinstance(answer_value, str):
        reason = "; ".join(r.error or r.node_id for r in failed) or f"node '{roles.answer}' gave no answer"
        return AnswerResult(
            question,
            "error",
            prompt=prompt if isinstance(prompt, str) else "",
            hits=chunks,
            retrieval=retrieval,
            retrieved_fact=retrieved_fact,
            error=reason,
            seconds=time.perf_counter() - started,
            degraded=degraded,
        )
    cited = citations(answer_value)
    verdict, checks = judge_answer(question, answer_value, chunks if roles.hits else None, cited, patterns)
    result = AnswerResult(
        question,
        verdict,
        answer=answer_value,
        prompt=prompt if isinstance(prompt, str) else "",
        hits=chunks,
        cited=cited,
        checks=checks,
        retrieval=retrieval,
        retrieved_fact=retrieved_fact,
        degraded=degraded,
    )
    if roles.judge:
        model = judge_model
        if isinstance(model, ChatModel):
            result.judge = ask_judge(model, question, answer_value, chunks)
        else:
            result.judge = JudgeVerdict(None, None, "", f"node '{roles.judge}' gave no chat model")
    result.seconds = time.perf_counter() - started
    return result


def _runs_on_cluster(
    flow: Flow,
    questions: Sequence[Question],
    roles: FlowRoles,
    executor: Executor,
    base_dir: Path | None,
    on_event: Callable[[RunEvent], None] | None,
    flow_file: Path | None = None,
) -> list[tuple[RunResult, Any]] | None:
    """With a Ray cluster (``--ray``): ingest here (its batches on the cluster), then every question's run on the
    workers in batches, each in its own session; None without a cluster, when the ingest did not go through (the
    questions then run here and each says what failed) or when the question's path reads a file."""
    cluster = executor.cluster
    if cluster is None or not questions:
        return None
    from flowbuilder.cluster.stores import cut_ingest
    from flowbuilder.evaluation.namespace import is_store, is_writer

    writers = [s.id for s in flow.nodes if not s.disabled and is_store(s, executor.registry) and is_writer(flow, s.id)]
    for writer in writers:
        if not executor.run(flow, to=writer, base_dir=base_dir, on_event=on_event, flow_file=flow_file).ok:
            return None
    cut = cut_ingest(flow, executor.registry, roles.answer)
    if cut is None:
        return None
    judge_model = None
    if roles.judge:
        judged = executor.run(flow, to=roles.judge, base_dir=base_dir, flow_file=flow_file)
        judge_model = _output(judged, roles.judge, "model")
    runs = cluster.run_many(
        executor, cut, roles.answer, [(q.question, f"eval-{q.id}") for q in questions], base_dir=base_dir
    )
    return [(run, judge_model) for run in runs]


def _output(run: RunResult, node_id: str | None, port: str | None) -> Any:
    if node_id is None or port is None:
        return None
    node = run.results.get(node_id)
    return node.outputs.get(port) if node is not None else None


# ---------------------------------------------------------------- against a baseline


@dataclass(frozen=True)
class BaselineScores:
    """Per-question outcomes of the baseline: a flow evaluated now, or a saved ``eval --json``."""

    name: str
    passed: dict[str, bool]
    correctness: dict[str, float]


def baseline_from_evaluation(evaluation: Evaluation) -> BaselineScores:
    return BaselineScores(
        evaluation.flow,
        {r.question.id: r.passed for r in evaluation.results if r.verdict != "error"},
        {
            r.question.id: r.judge.correctness
            for r in evaluation.results
            if r.judge is not None and r.judge.correctness is not None
        },
    )


def saved_baseline(data: Any, where: str) -> BaselineScores | None:
    """The scores of a saved ``flowbuilder eval --json`` output, or None if ``data`` is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list) or "metrics" not in data:
        return None
    passed: dict[str, bool] = {}
    correctness: dict[str, float] = {}
    for item in data["results"]:
        if not isinstance(item, dict) or "id" not in item or "verdict" not in item:
            raise EvalSetupError(f"{where}: a result has no id or verdict; is it a `flowbuilder eval --json` output?")
        if item["verdict"] == "error":
            continue
        passed[str(item["id"])] = bool(item.get("passed"))
        judge = item.get("judge")
        if isinstance(judge, dict) and isinstance(judge.get("correctness"), int | float):
            correctness[str(item["id"])] = float(judge["correctness"])
    return BaselineScores(f"{data.get('flow') or 'flow'} ({where})", passed, correctness)


@dataclass
class BaselineComparison:
    """The flow's answers against a baseline's on the same questions: verdict lines for people and the
    figures behind them for ``--json``."""

    baseline: str
    lines: list[str]
    """One verdict line per compared metric, e.g. "no detectable difference on 8 questions (...)"."""
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "verdicts": self.lines, **self.details}


def compare_to_baseline(evaluation: Evaluation, baseline: BaselineScores) -> BaselineComparison:
    """Paired significance (bootstrap interval + exact McNemar / sign test) of the flow against the baseline
    on the questions both answered: share of passed questions, and judge correctness when both were judged."""
    from flowbuilder.evaluation.significance import mcnemar, paired_difference, sign_test, verdict

    current = baseline_from_evaluation(evaluation)
    ids = [qid for qid in current.passed if qid in baseline.passed]
    if not ids:
        raise EvalSetupError(
            f"the baseline '{baseline.name}' shares no answered question id with this run; use the same question set"
        )
    a = [baseline.passed[q] for q in ids]
    b = [current.passed[q] for q in ids]
    difference = paired_difference([float(x) for x in a], [float(x) for x in b])
    test = mcnemar(a, b)
    lines = [verdict(difference, test, metric="answers passed", a=baseline.name, b=evaluation.flow)]
    details: dict[str, Any] = {"questions": len(ids), "passed": {**difference.to_dict(), "test": test.to_dict()}}
    judged = [q for q in ids if q in baseline.correctness and q in current.correctness]
    if judged:
        ja = [baseline.correctness[q] for q in judged]
        jb = [current.correctness[q] for q in judged]
        jdiff = paired_difference(ja, jb)
        jtest = sign_test(
            sum(y > x for x, y in zip(ja, jb, strict=True)), sum(y < x for x, y in zip(ja, jb, strict=True))
        )
        lines.append(verdict(jdiff, jtest, metric="judge correctness", a=baseline.name, b=evaluation.flow))
        details["judge_correctness"] = {**jdiff.to_dict(), "test": jtest.to_dict()}
    return BaselineComparison(baseline.name, lines, details)
