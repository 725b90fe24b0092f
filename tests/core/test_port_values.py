"""Typed node I/O: each port type's Python type, the executor's one check of inputs and outputs, and
every built-in node's ``Inputs``/``Outputs`` agreeing with its declared ports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

import pytest
from core_helpers import CountingEmbedder, make_registry

from flowbuilder.data import Document, Hit
from flowbuilder.errors import PortValueError, RegistryError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.graph import analyze
from flowbuilder.node import Node, RunContext, signature_ports
from flowbuilder.ports import Port, PortType
from flowbuilder.portvalues import (
    PYTHON_TYPES,
    Answer,
    AnyValue,
    Chunks,
    Hits,
    Message,
    Prompt,
    Records,
    Text,
    Tools,
    Vectors,
    check_port_values,
    matches,
    port_value_problems,
    shape_ports,
)
from flowbuilder.registry import NodeRegistry, default_registry
from flowbuilder.services import ChatModel, Embedder, Memory, Retriever, VectorStore


def hit(text: str = "a") -> Hit:
    return Hit(document=Document(text=text), score=1.0, rank=1)


class Lies(Node[Any]):
    """Declare chunks, return text."""

    type_name = "test.lies"
    category = "Test"
    outputs = (Port("chunks", PortType.CHUNKS),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"chunks": "not a list of chunks"}


class AnyOut(Node[Any]):
    """Pass a text on an ANY port (what a passthrough or an imported node can do)."""

    type_name = "test.any"
    category = "Test"
    outputs = (Port("value", PortType.ANY),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"value": "plain text"}


@pytest.fixture
def registry() -> NodeRegistry:
    reg = make_registry()
    reg.register(Lies)
    reg.register(AnyOut)
    return reg


def test_each_port_type_has_a_python_type() -> None:
    assert set(PYTHON_TYPES) == set(PortType)
    assert matches(PortType.CHUNKS, [Document(text="x")]) and matches(PortType.RECORDS, [])
    assert not matches(PortType.CHUNKS, [Document(text="x"), "y"]) and not matches(PortType.CHUNKS, "x")
    assert matches(PortType.HITS, [hit()]) and not matches(PortType.HITS, [Document(text="x")])
    assert matches(PortType.ANSWER, "x") and not matches(PortType.TEXT, 42)
    assert matches(PortType.EMBEDDER, CountingEmbedder()) and not matches(PortType.EMBEDDER, object())
    assert not matches(PortType.EMBEDDER, CountingEmbedder)  # the class is not a service


def test_a_service_is_judged_without_calling_its_properties() -> None:
    class Probing(CountingEmbedder):
        @property
        def dimension(self) -> int:  # type: ignore[override]
            raise AssertionError("the check asked the provider")

    assert matches(PortType.EMBEDDER, Probing())


def test_a_wrong_output_fails_the_node_naming_node_port_expected_and_got(
    registry: NodeRegistry, tmp_path: Path
) -> None:
    flow = Flow(nodes=[NodeSpec(id="liar", type="test.lies")])
    run = Executor(registry=registry, data_dir=tmp_path).run(flow)
    result = run.results["liar"]
    assert result.status == "failed"
    assert result.error == (
        "Node 'liar' (test.lies) outputs do not match its ports: "
        "output 'chunks' expects chunks (a list of Documents), got str."
    )


def test_a_wrong_input_fails_before_the_node_runs(registry: NodeRegistry, tmp_path: Path) -> None:
    flow = Flow(
        nodes=[NodeSpec(id="any", type="test.any"), NodeSpec(id="take", type="test.take")],
        edges=[Edge(source="any", source_port="value", target="take", target_port="chunks")],
    )
    run = Executor(registry=registry, data_dir=tmp_path).run(flow)
    assert run.results["any"].status == "ok"
    assert run.results["take"].status == "failed"
    assert run.results["take"].error == (
        "Node 'take' (test.take) inputs do not match its ports: "
        "input 'chunks' expects chunks (a list of Documents), got str."
    )


def test_check_port_values_lists_every_problem(registry: NodeRegistry) -> None:
    flow = Flow(nodes=[NodeSpec(id="j", type="test.join")])
    node = analyze(flow, registry).nodes["j"]
    with pytest.raises(PortValueError) as caught:
        check_port_values(node, "input", {"parts": ["a", 2], "extra": None, "bogus": 1})
    assert caught.value.node_id == "j" and caught.value.side == "input"
    assert caught.value.problems == [
        "'bogus' is no input of this node (declared: parts, extra)",
        "input 'parts' expects one text (text) per connection, got str; int",
    ]
    check_port_values(node, "input", {"parts": ["a", "b"]})  # right values pass


BAD_INPUTS = [
    ("retriever.vector", {"store": [Document(text="x")], "query": "q"}, "input 'store' expects vector_store"),
    ("retriever.vector", {"store": None, "query": 42}, "input 'query' expects text (text), got int"),
    ("vectorstore.chroma", {"embedder": "not an embedder"}, "input 'embedder' expects embedder (an Embedder"),
    ("reranker.llm", {"hits": "text", "query": "q", "model": "nope"}, "input 'hits' expects hits"),
    ("reranker.llm", {"hits": [hit()], "query": "q", "model": "nope"}, "input 'model' expects chat_model"),
    ("query.rewrite", {"query": "q", "model": None, "retriever": [object()]}, "input 'retriever' expects one"),
    ("retriever.fusion", {"hits": [["not a hit"]]}, "input 'hits' expects one hits (a list of Hits) per connection"),
    ("agent.tools", {"message": "hi", "tools": [[]]}, "input 'tools' expects one tool"),
    ("splitter.recursive", {"documents": Document(text="x")}, "input 'documents' expects records"),
]


@pytest.mark.parametrize(("type_name", "values", "problem"), BAD_INPUTS)
def test_built_in_nodes_get_their_wrong_inputs_named(type_name: str, values: dict[str, Any], problem: str) -> None:
    cls = default_registry().get(type_name)
    problems = port_value_problems(cls.input_ports(cls.Config()), "input", values)
    assert any(p.startswith(problem) for p in problems), problems


class EveryType(TypedDict):
    records: Records
    chunks: Chunks
    hits: Hits
    vectors: Vectors
    text: Text
    message: Message
    prompt: Prompt
    answer: Answer
    value: AnyValue
    embedder: Embedder
    store: VectorStore
    model: ChatModel
    memory: Memory
    tool: Tools
    retriever: Retriever


class Shaped(TypedDict):
    question: Annotated[Text, "The question."]
    extra: NotRequired[Annotated[Message, "Optional."]]
    parts: Annotated[list[Hits], "One list per connection."]
    maybe: NotRequired[list[Embedder]]


def test_each_port_type_alias_declares_its_port_type() -> None:
    ports = shape_ports(EveryType, "input", "EveryType")
    assert [p.type.value for p in ports] == [
        "records", "chunks", "hits", "vectors", "text", "message", "prompt", "answer", "any",
        "embedder", "vector_store", "chat_model", "memory", "tool", "retriever",
    ]  # fmt: skip
    assert {p.type: p.name for p in ports}.keys() == set(PYTHON_TYPES)
    assert all(p.required and not p.multiple and not p.description for p in ports)


def test_required_multiple_and_description_come_from_the_typeddict() -> None:
    assert shape_ports(Shaped, "input", "Shaped") == (
        Port("question", PortType.TEXT, description="The question."),
        Port("extra", PortType.MESSAGE, required=False, description="Optional."),
        Port("parts", PortType.HITS, multiple=True, description="One list per connection."),
        Port("maybe", PortType.EMBEDDER, required=False, multiple=True),
    )


def test_a_type_that_is_no_port_type_is_named() -> None:
    class Bare(TypedDict):
        count: int

    with pytest.raises(TypeError, match="Bare: port 'count' has type <class 'int'>, which is no port type"):
        shape_ports(Bare, "input", "Bare")


class TwiceOut(TypedDict):
    text: Text


def test_ports_are_declared_once() -> None:
    class Twice(Node[Any, dict[str, Any], TwiceOut]):
        """Declares its output in its signature and again in a tuple."""

        type_name = "test.twice"
        outputs = (Port("text", PortType.TEXT),)

        def run(self, inputs: dict[str, Any], ctx: RunContext) -> TwiceOut:
            return {"text": ""}

    with pytest.raises(RegistryError, match=r"test\.twice declares its output ports twice"):
        NodeRegistry().register(Twice)


@pytest.mark.parametrize("type_name", sorted(default_registry().names()))
def test_built_in_nodes_declare_their_ports_in_their_run_signature_only(type_name: str) -> None:
    cls = default_registry().get(type_name)
    for klass in cls.__mro__:
        if klass.__module__.startswith("flowbuilder.nodes"):
            assert "inputs" not in vars(klass) and "outputs" not in vars(klass), f"{klass.__name__} has a port tuple"
    typed = signature_ports(cls, "input") + signature_ports(cls, "output")
    assert typed or type_name == "placeholder.unsupported", f"{type_name} declares no port in its run signature"
    assert cls.output_ports(None) == signature_ports(cls, "output") or type_name == "placeholder.unsupported"


def test_ports_stay_when_run_is_wrapped() -> None:
    """The ports come from the class's type arguments, so a stand-in ``run`` (a test's, a tracer's) keeps them."""

    class Wrapped(Node[Any, Shaped, TwiceOut]):
        """Typed by its type arguments only."""

        type_name = "test.wrapped"

    Wrapped.run = lambda self, inputs, ctx: {"text": ""}  # type: ignore[method-assign,assignment]
    assert [p.name for p in Wrapped.inputs] == ["question", "extra", "parts", "maybe"]
    assert Wrapped.outputs == (Port("text", PortType.TEXT),)
