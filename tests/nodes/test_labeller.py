"""The row labeller and the stringify parser: templates, joins with record spans, safe braces, errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from flowbuilder.data import Document, Hit
from flowbuilder.errors import FlowValidationError, NodeError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.labeller import (
    RowLabeller,
    RowLabellerConfig,
    Stringify,
    StringifyConfig,
    TemplateSyntaxError,
    parse_template,
)
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig

ROOT = Path(__file__).resolve().parents[2]
CSV_PATH = ROOT / "data" / "VWO_500_Test_Cases.csv"

# the Parser pattern of LangFlow's "AI 3X Naive RAG Improve Chunk" flow, copied verbatim
IMPROVED_TEMPLATE = (
    "Scenario TID: {Scenario TID}\nDescription: {TestCase Description}\nPreCondition: {PreCondition}\n"
    "Test Steps: {TestSteps}\nExpected Result: {Expected Result}"
)


def _ctx() -> RunContext:
    return RunContext("labeller")


def _records() -> list[Document]:
    return FileLoader(FileLoaderConfig(path=str(CSV_PATH))).run({}, _ctx())["records"]


def _raw_rows() -> list[list[str]]:
    return list(csv.reader(io.StringIO(CSV_PATH.read_text(encoding="utf-8-sig"))))


def _label(records: list[Document], **config: object) -> list[Document]:
    node = RowLabeller(RowLabellerConfig(**config))
    return node.run({"records": records}, _ctx())["records"]


def test_langflow_pattern_renders_each_row() -> None:
    labelled = _label(_records(), template=IMPROVED_TEMPLATE)
    rows = _raw_rows()
    assert len(labelled) == 500
    first = rows[1]
    assert labelled[0].text == (
        f"Scenario TID: {first[0]}\nDescription: {first[1]}\nPreCondition: {first[2]}\n"
        f"Test Steps: {first[3]}\nExpected Result: {first[4]}"
    )
    meta = labelled[0].metadata
    assert meta["record_id"] == "LOGIN-001" and meta["row"] == 1 and meta["source"] == "VWO_500_Test_Cases.csv"
    assert meta["columns"]["Scenario TID"] == "LOGIN-001"


def test_join_gives_one_document_with_exact_spans() -> None:
    node = RowLabeller(RowLabellerConfig(template=IMPROVED_TEMPLATE, join=True))
    (joined,) = node.run({"records": _records()}, _ctx())["records"]
    separate = _label(_records(), template=IMPROVED_TEMPLATE)
    assert joined.text == "\n".join(r.text for r in separate)
    spans = joined.metadata["record_spans"]
    assert [s[0] for s in spans] == [r.record_id for r in separate]
    for (_, start, end), record in zip(spans, separate, strict=True):
        assert joined.text[start:end] == record.text
    assert joined.metadata["source"] == "VWO_500_Test_Cases.csv"
    assert "record_id" not in joined.metadata
    assert node.summarize({"records": [joined]}) == "1 document (500 records)"


def test_default_labels_every_non_empty_column() -> None:
    record = Document(
        text="raw", metadata={"record_id": "R1", "columns": {"Name": "Ann", "Empty": "", "Blank": "  ", "Age": "7"}}
    )
    (labelled,) = _label([record])
    assert labelled.text == "Name: Ann\nAge: 7"
    assert labelled.metadata["record_id"] == "R1"
    (plain,) = _label([Document(text="page text", metadata={"page": 1})])
    assert plain.text == "page text"  # no columns: the text stays


def test_unknown_column_lists_the_real_columns() -> None:
    with pytest.raises(NodeError) as info:
        _label(_records()[:1], template="ID: {Scenario ID}")
    message = str(info.value)
    assert "'{Scenario ID}'" in message and "LOGIN-001" in message
    assert "columns: Scenario TID, TestCase Description, PreCondition" in message
    assert "Expected Result.1" in message


def test_braces_are_safe() -> None:
    record = Document(text="t", metadata={"columns": {"A": "{B} and {0} and {__class__}", "B": "bee"}})
    (labelled,) = _label([record], template="{{literal}} {A} | { B }")
    assert labelled.text == "{literal} {B} and {0} and {__class__} | bee"


@pytest.mark.parametrize("bad", ["{unclosed", "closed}", "empty {}", "a { b"])
def test_template_syntax_errors(bad: str) -> None:
    with pytest.raises(TemplateSyntaxError):
        parse_template(bad)
    assert RowLabeller.config_problems(RowLabellerConfig(template=bad))
    assert Stringify.config_problems(StringifyConfig(template=bad))


def test_template_syntax_error_stops_the_flow_before_running() -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(CSV_PATH)}),
            NodeSpec(id="label", type="labeller.row", config={"template": "Broken {Scenario TID"}),
        ],
        edges=[Edge(source="load", source_port="records", target="label", target_port="records")],
    )
    with pytest.raises(FlowValidationError, match=r"label.*unmatched '\{'"):
        Executor().run(flow)


def test_labeller_through_executor() -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(CSV_PATH)}),
            NodeSpec(id="label", type="labeller.row", config={"template": "{Scenario TID}: {Status}"}),
        ],
        edges=[Edge(source="load", source_port="records", target="label", target_port="records")],
    )
    result = Executor().run(flow, use_cache=False)
    assert result.ok
    assert result.results["label"].summary == "500 records"
    assert result.results["label"].outputs["records"][0].text == "LOGIN-001: Not Executed"


# ---------------------------------------------------------------- stringify


def _stringify(items: object, **config: object) -> str:
    node = Stringify(StringifyConfig(**config))
    return node.run({"items": items}, _ctx())["text"]


def test_stringify_documents_default_and_langflow_pattern() -> None:
    docs = [Document(text="alpha", metadata={"source": "a.txt"}), Document(text="beta", metadata={"source": "b.txt"})]
    assert _stringify(docs) == "alpha\nbeta"
    assert _stringify(docs, template="Text: {text}", separator="\n\n") == "Text: alpha\n\nText: beta"
    assert _stringify(docs, template="[{source}] {text}") == "[a.txt] alpha\n[b.txt] beta"


def test_stringify_hits_with_score_and_rank() -> None:
    hits = [
        Hit(document=Document(text="first", metadata={"record_id": "R1"}), score=0.9, rank=1),
        Hit(document=Document(text="second", metadata={"record_id": "R2"}), score=0.5, rank=2),
    ]
    text = _stringify(hits, template="{rank}. {record_id} ({score}): {text}")
    assert text == "1. R1 (0.9): first\n2. R2 (0.5): second"


def test_stringify_columns_missing_keys_and_plain_values() -> None:
    records = _records()[:2]
    assert _stringify(records, template="{Scenario TID}") == "LOGIN-001\nLOGIN-002"
    mixed = [Document(text="a", metadata={"page": 1}), Document(text="b", metadata={})]
    assert _stringify(mixed, template="{page}:{text}") == "1:a\n:b"  # known on some items: blank elsewhere
    with pytest.raises(NodeError, match=r"\{nope\}.*the items have: page, text"):
        _stringify(mixed, template="{nope}")
    assert _stringify("just a string") == "just a string"
    assert _stringify([]) == ""


def test_meta_columns_become_top_level_metadata() -> None:
    labelled = _label(_records()[:3], template="{TestCase Description}", meta_columns=["Priority", "Is Automated"])
    assert labelled[2].metadata["Priority"] == "Critical" and labelled[2].metadata["Is Automated"] == "Yes"
    assert labelled[2].text == "Verify Login - password field visibility"
    with pytest.raises(NodeError, match="meta_columns Nope not in record LOGIN-001"):
        _label(_records()[:1], meta_columns=["Nope"])
