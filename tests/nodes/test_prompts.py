"""prompt.template: variables become ports; values render by type; braces in values stay literal."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.data import Document, Hit
from flowbuilder.errors import FlowValidationError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.prompts import (
    DEFAULT_TEMPLATE,
    PromptTemplate,
    PromptTemplateConfig,
    render_template,
    template_variables,
)
from flowbuilder.ports import PortType
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore


def hit(text: str, score: float, rank: int, **metadata: object) -> Hit:
    return Hit(document=Document(text=text, metadata=dict(metadata)), score=score, rank=rank)


def run(template: str, **inputs: object) -> tuple[str, RunContext]:
    ctx = RunContext("prompt")
    outputs = PromptTemplate(PromptTemplateConfig(template=template)).run(dict(inputs), ctx)
    return outputs["prompt"], ctx


def test_variables_become_required_any_ports_in_order() -> None:
    ports = PromptTemplate.input_ports(
        PromptTemplateConfig(template="{question} and {context}, {question} {{literal}}")
    )
    assert [p.name for p in ports] == ["question", "context"]
    assert all(p.type is PortType.ANY and p.required for p in ports)
    assert [p.name for p in PromptTemplate.input_ports(None)] == ["context", "question"]
    assert template_variables(DEFAULT_TEMPLATE) == ["context", "question"]


def test_hits_render_as_numbered_sources_with_scores() -> None:
    hits = [
        hit("Verify login with valid credentials.", 0.7143, 1, source="VWO_500_Test_Cases.csv", record_id="LOGIN-012"),
        hit("Page two text.", 0.5, 2, source="manual.pdf", page=2),
        hit("Chunk over two rows.", 0.25, 3, source="VWO_500_Test_Cases.csv", record_ids=["A-1", "A-2"]),
    ]
    prompt, ctx = run("Context:\n{context}\nQ: {question}", context=hits, question="How to log in?")
    assert prompt == (
        "Context:\n"
        "[1] (source: VWO_500_Test_Cases.csv, record LOGIN-012, score 0.71)\nVerify login with valid credentials.\n\n"
        "[2] (source: manual.pdf, page 2, score 0.50)\nPage two text.\n\n"
        "[3] (source: VWO_500_Test_Cases.csv, records A-1, A-2, score 0.25)\nChunk over two rows.\n"
        "Q: How to log in?"
    )
    assert ctx.details["prompt"] == prompt


def test_documents_render_as_numbered_texts_and_empty_lists_say_so() -> None:
    docs = [Document(text="first", metadata={"source": "a"}), Document(text="second")]
    prompt, _ = run("{docs}|{none}", docs=docs, none=[])
    assert prompt == "[1] first\n\n[2] second|(no results)"


def test_braces_in_values_and_doubled_braces_are_literal() -> None:
    prompt, _ = run('{{"q": "{question}"}} {other}', question="{other} {{x}} {0}", other="O")
    assert prompt == '{"q": "{other} {{x}} {0}"} O'
    assert render_template("{a.b} {1} { spaced }", {}) == "{a.b} {1} { spaced }"


def test_an_unconnected_variable_fails_validation_naming_the_port(tmp_path: Path) -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input", config={"text": "hi"}),
            NodeSpec(id="prompt", type="prompt.template", config={"template": "{context} / {question}"}),
        ],
        edges=[Edge(source="in", source_port="message", target="prompt", target_port="question")],
    )
    resolver = CredentialResolver({}, store=CredentialStore(tmp_path / "c.json"), environ={})
    with pytest.raises(FlowValidationError) as info:
        Executor(resolver=resolver, data_dir=tmp_path).run(flow)
    assert "context" in str(info.value) and "prompt" in str(info.value)


def test_executor_feeds_ports_by_variable_name(tmp_path: Path) -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="prompt", type="prompt.template", config={"template": "<{question}>"}),
        ],
        edges=[Edge(source="in", source_port="message", target="prompt", target_port="question")],
    )
    resolver = CredentialResolver({}, store=CredentialStore(tmp_path / "c.json"), environ={})
    result = Executor(resolver=resolver, data_dir=tmp_path).run(flow, inputs="What is VWO?")
    assert result.results["prompt"].outputs["prompt"] == "<What is VWO?>"
    assert result.results["prompt"].details["prompt"] == "<What is VWO?>"
