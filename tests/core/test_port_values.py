"""Typed node I/O: each port type's Python type, the executor's one check of inputs and outputs, and
every built-in node's ``Inputs``/``Outputs`` agreeing with its declared ports."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, NotRequired, TypeVar, get_args, get_origin, get_type_hints

import pytest
from core_helpers import CountingEmbedder, make_registry

from flowbuilder.data import Document, Hit
from flowbuilder.errors import PortValueError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.graph import analyze
from flowbuilder.node import Node, RunContext
from flowbuilder.ports import Port, PortType
from flowbuilder.portvalues import PYTHON_TYPES, check_port_values, matches, port_value_problems
from flowbuilder.registry import NodeRegistry, default_registry


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


def _resolve(cls: type, annotation: Any) -> Any:
    """``annotation`` with the class's type parameters filled in (a splitter's Inputs is ``SplitInputsT``)."""
    bound: dict[Any, Any] = {}
    for klass in cls.__mro__:  # the most derived binding wins
        for base in getattr(klass, "__orig_bases__", ()):
            origin = get_origin(base)
            params = getattr(origin, "__parameters__", ()) if origin is not None else ()
            for param, arg in zip(params, get_args(base), strict=False):
                bound.setdefault(param, bound.get(arg, arg))
    while isinstance(annotation, TypeVar):
        annotation = bound.get(annotation, getattr(annotation, "__default__", None))
    return annotation


def _declared(annotation: Any) -> tuple[Any, bool]:
    """(type, required) of one TypedDict item."""
    if get_origin(annotation) is NotRequired:
        return get_args(annotation)[0], False
    return annotation, True


@pytest.mark.parametrize("type_name", sorted(default_registry().names()))
def test_inputs_and_outputs_agree_with_the_declared_ports(type_name: str) -> None:
    cls = default_registry().get(type_name)
    hooks = typing.get_type_hints(cls.run)
    for side, ports, shape in (
        ("input", cls.input_ports(cls.Config()), _resolve(cls, hooks["inputs"])),
        ("output", cls.output_ports(cls.Config()), _resolve(cls, hooks["return"])),
    ):
        if not typing.is_typeddict(shape):
            assert shape == dict[str, Any], f"{type_name} {side}s: {shape}"  # ports that follow the config
            continue
        items = get_type_hints(shape, include_extras=True)
        assert list(items) == [p.name for p in ports], f"{type_name} {side}s"
        for port in ports:
            declared, required = _declared(items[port.name])
            expected = PYTHON_TYPES[port.type]
            if side == "input" and port.multiple:
                expected = list[expected]  # type: ignore[valid-type]
            assert declared == expected, f"{type_name} {side} '{port.name}': {declared} != {expected}"
            if side == "input":
                assert required == port.required, f"{type_name} input '{port.name}' required"
