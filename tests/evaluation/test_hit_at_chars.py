"""hit@chars: the evidence must lie within the first N characters of the context the prompt gets."""

from __future__ import annotations

from flowbuilder.context import CUT_MARK, context_budget, render_hits
from flowbuilder.data import Document, Hit
from flowbuilder.evaluation.metrics import aggregate, default_relevance, judge_hits
from flowbuilder.evaluation.questions import Question
from flowbuilder.flow import Flow
from flowbuilder.node import RunContext
from flowbuilder.nodes.prompts import PromptTemplate, PromptTemplateConfig


def hit(text: str, rank: int, record: str) -> Hit:
    return Hit(document=Document(text=text, metadata={"source": "t.csv", "record_id": record}), score=0.5, rank=rank)


FILLER = "x " * 400  # 800 characters of nothing useful
FACT = Question("q", "Where is the tab order checked?", ("LOGIN-009",), "keyboard tab order")
RECORD = Question("r", "Which case covers the tab order?", ("LOGIN-009",))


def test_fact_inside_the_budget_counts_and_past_it_does_not() -> None:
    hits = [hit(FILLER, 1, "A-1"), hit("LOGIN-009: keyboard tab order works", 2, "LOGIN-009")]
    rendered = render_hits(hits)
    fact_end = rendered.index("keyboard tab order") + len("keyboard tab order")
    assert judge_hits(FACT, hits, 5, relevance="strict", chars=fact_end).chars_hit
    assert not judge_hits(FACT, hits, 5, relevance="strict", chars=fact_end - 1).chars_hit  # cut inside the fact
    assert not judge_hits(FACT, hits, 5, relevance="strict", chars=500).chars_hit
    outcome = judge_hits(FACT, hits, 5, relevance="strict", chars=500)
    assert outcome.first_rank == 2  # hit@k still finds it: the two metrics differ exactly here


def test_record_questions_whole_in_strict_started_in_lenient() -> None:
    hits = [hit("LOGIN-009 " + FILLER, 1, "LOGIN-009")]
    whole = {"LOGIN-009"}
    strict = judge_hits(RECORD, hits, 5, relevance="strict", whole_records=lambda d: whole, chars=200)
    assert strict.first_rank == 1 and not strict.chars_hit  # the record does not fit in 200 characters
    assert judge_hits(RECORD, hits, 5, relevance="strict", whole_records=lambda d: whole, chars=2000).chars_hit
    assert judge_hits(RECORD, hits, 5, relevance="lenient", chars=200).chars_hit  # it starts inside


def test_context_is_what_the_flow_sends_and_aggregate_reports_the_budget() -> None:
    hits = [hit(FILLER, 1, "A-1"), hit("keyboard tab order", 2, "LOGIN-009")]
    sent_one = judge_hits(FACT, hits, 5, relevance="strict", chars=5000, context=hits[:1])
    assert sent_one.first_rank == 2 and not sent_one.chars_hit  # the flow sends one hit: the fact is not in it
    metrics = aggregate([sent_one, judge_hits(FACT, hits, 5, relevance="strict", chars=5000)], 5)
    assert metrics.hit_at_chars == 0.5 and metrics.chars == 5000 and metrics.to_dict()["hit@chars"] == 0.5


def test_prompt_cuts_hits_at_its_budget_as_the_metric_judges() -> None:
    hits = [hit(FILLER, 1, "A-1"), hit("keyboard tab order", 2, "LOGIN-009")]
    node = PromptTemplate(PromptTemplateConfig(template="C:\n{context}\nQ: {question}", context_chars=300))
    prompt = node.run({"context": hits, "question": "tab?"}, RunContext(node_id="p"))["prompt"]
    assert prompt == "C:\n" + render_hits(hits)[:300] + CUT_MARK + "\nQ: tab?"
    uncut = PromptTemplate(PromptTemplateConfig(template="{context}")).run({"context": hits}, RunContext(node_id="p"))
    assert uncut["prompt"] == render_hits(hits)


def test_budget_and_relevance_defaults() -> None:
    flow = Flow.model_validate(
        {"name": "f", "nodes": [{"id": "p", "type": "prompt.template", "config": {"context_chars": 1500}}]}
    )
    assert context_budget(flow) == 1500
    flow.node("p").config["context_chars"] = "lots"  # a stranger's flow: ignored, not trusted
    assert context_budget(flow) is None
    assert default_relevance([FACT, RECORD]) == "strict" and default_relevance([RECORD]) == "lenient"
