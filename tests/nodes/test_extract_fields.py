"""extract.fields (LangFlow's Structured Output): fields from a model's JSON over the real SDK, or looked up
by name with no model; the Financial Report Parser starter's first offline run shows the figures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.convert import import_file
from flowbuilder.nodes.extract_fields import find_by_name
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.http import approvals
from tests.fakes.llm_server import FakeLLMServer

REPORT = (
    "In 2022 the company reported a gross profit of $1.2 billion. The EBITDA stood at $900 million, "
    "and net income reached 500 million. Headcount grew."
)
PARSER = Path(__file__).parents[1] / "formats" / "corpus_public" / "langflow__lf1.4_financial_report_parser.json"


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def test_find_by_name_reads_the_value_after_the_name() -> None:
    assert find_by_name(REPORT, "GROSS_PROFIT") == "$1.2 billion"
    assert find_by_name(REPORT, "EBITDA") == "$900 million"
    assert find_by_name(REPORT, "net-income") == "500 million"
    assert find_by_name(REPORT, "HEADCOUNT") == ""  # no number before the sentence ends: nothing invented
    assert find_by_name(REPORT, "REVENUE") == ""


def flow(llm: FakeLLMServer | None) -> Flow:
    nodes = [
        NodeSpec(id="in", type="chat.input"),
        NodeSpec(id="fields", type="extract.fields", config={"fields": {"EBITDA": "", "NET_INCOME": "net income"}}),
        NodeSpec(id="label", type="labeller.row", config={"template": "EBITDA {EBITDA}; net {NET_INCOME}"}),
    ]
    edges = [
        Edge(source="in", source_port="message", target="fields", target_port="text"),
        Edge(source="fields", source_port="records", target="label", target_port="records"),
    ]
    if llm is not None:
        nodes.append(NodeSpec(id="llm", type="llm.openai", config={"base_url": llm.openai_base_url, "stream": False}))
        edges.append(Edge(source="llm", source_port="model", target="fields", target_port="model"))
    return Flow(nodes=nodes, edges=edges)


def test_the_model_fills_the_fields(llm: FakeLLMServer, tmp_path: Path) -> None:
    llm.reply('Here: {"EBITDA": "0.9B", "NET_INCOME": "0.5B"}')
    resolver = CredentialResolver(
        {"openai": "sk-test"}, store=CredentialStore(tmp_path / "c.json"), environ={}, approved=approvals(llm.url)
    )
    run = Executor(resolver=resolver, data_dir=tmp_path).run(flow(llm), inputs=REPORT)
    assert run.ok and not run.results["fields"].warning
    assert run.results["label"].outputs["records"][0].text == "EBITDA 0.9B; net 0.5B"
    sent = llm.requests_to("chat")[0].body["messages"]
    assert "- NET_INCOME: net income" in sent[0]["content"] and sent[1]["content"] == REPORT


def test_without_a_model_fields_are_found_by_name_and_the_warning_says_so(tmp_path: Path) -> None:
    resolver = CredentialResolver({}, store=CredentialStore(tmp_path / "c.json"), environ={})
    run = Executor(resolver=resolver, data_dir=tmp_path).run(flow(None), inputs=REPORT)
    assert run.results["label"].outputs["records"][0].text == "EBITDA $900 million; net 500 million"
    assert "no chat model is connected: fields looked up by their names in the text (2 of 2 found)" in (
        run.results["fields"].warning
    )
    assert json.loads(run.results["fields"].outputs["records"][0].text) == {
        "EBITDA": "$900 million",
        "NET_INCOME": "500 million",
    }


def test_the_financial_report_parser_starter_shows_the_figures_offline(tmp_path: Path) -> None:
    resolver = CredentialResolver({}, store=CredentialStore(tmp_path / "c.json"), environ={})
    local, _ = import_file(PARSER, local=True, resolver=resolver)
    run = Executor(resolver=resolver, data_dir=tmp_path).run(local, base_dir=PARSER.parent)
    [out] = [r for r in run.results.values() if r.type_name == "chat.output"]
    assert out.outputs["message"] == "EBITDA: $900 million  ,  Net Income: $500 million , GROSS_PROFIT: $1.2 billion"
    [fields] = [r for r in run.results.values() if r.type_name == "extract.fields"]
    assert "the model failed" in fields.warning and "3 of 3 found" in fields.warning
