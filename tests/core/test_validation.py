"""Validation collects every problem at once and names node, port and fix."""

from __future__ import annotations

import pytest
from core_helpers import edge, flow, node

from flowbuilder.errors import FlowValidationError
from flowbuilder.flow import Note
from flowbuilder.graph import analyze, validate
from flowbuilder.registry import NodeRegistry
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore


def codes(issues: list) -> list[str]:
    return sorted(i.code for i in issues)


def test_valid_flow_has_no_issues(registry: NodeRegistry) -> None:
    f = flow([node("a", "test.numbers"), node("b", "test.take")], [edge("a.records", "b.chunks")])
    assert analyze(f, registry).issues == []


def test_unknown_type_lists_close_matches(registry: NodeRegistry) -> None:
    issues = analyze(flow([node("x", "test.nmbers")]), registry).issues
    assert codes(issues) == ["unknown-type"]
    assert issues[0].node_id == "x"
    assert "test.numbers" in issues[0].message


def test_missing_required_input_names_port_and_type(registry: NodeRegistry) -> None:
    issues = analyze(flow([node("b", "test.take")]), registry).issues
    assert codes(issues) == ["missing-input"]
    assert (issues[0].node_id, issues[0].port) == ("b", "chunks")
    assert "chunks" in issues[0].message and "connect" in issues[0].message


def test_incompatible_connection_names_both_types(registry: NodeRegistry) -> None:
    f = flow([node("s", "test.say"), node("b", "test.take")], [edge("s.text", "b.chunks")])
    issues = analyze(f, registry).issues
    assert "incompatible" in codes(issues)
    message = next(i.message for i in issues if i.code == "incompatible")
    assert "(text)" in message and "(chunks)" in message


def test_service_port_only_accepts_its_service(registry: NodeRegistry) -> None:
    f = flow([node("e", "test.embeds"), node("b", "test.take")], [edge("e.embedder", "b.chunks")])
    assert "incompatible" in codes(analyze(f, registry).issues)


def test_cycle_names_the_nodes_on_it(registry: NodeRegistry) -> None:
    f = flow(
        [node("a", "test.take"), node("b", "test.take")],
        [edge("a.chunks", "b.chunks"), edge("b.chunks", "a.chunks")],
    )
    issues = analyze(f, registry).issues
    cycle = next(i for i in issues if i.code == "cycle")
    assert "a" in cycle.message and "b" in cycle.message and "->" in cycle.message


def test_dangling_edges_to_missing_nodes_and_ports(registry: NodeRegistry) -> None:
    f = flow(
        [node("a", "test.numbers"), node("b", "test.take")],
        [edge("a.records", "b.chunks"), edge("a.records", "ghost.chunks"), edge("a.nope", "b.chunks")],
    )
    issues = [i for i in analyze(f, registry).issues if i.code == "dangling-edge"]
    assert len(issues) == 2
    assert any("ghost" in i.message for i in issues)
    assert any("no output 'nope'" in i.message and "records (records)" in i.message for i in issues)


def test_duplicate_ids_including_notes(registry: NodeRegistry) -> None:
    f = flow([node("a", "test.numbers"), node("a", "test.say")])
    f.notes.append(Note(id="a", text="hi"))
    assert codes(analyze(f, registry).issues).count("duplicate-id") == 2


def test_invalid_config_uses_pydantic_message(registry: NodeRegistry) -> None:
    issues = analyze(flow([node("a", "test.numbers", count=-1), node("c", "test.numbers", bogus=1)]), registry).issues
    assert codes(issues) == ["invalid-config", "invalid-config"]
    assert "count" in issues[0].message and "greater than or equal to 0" in issues[0].message
    assert "bogus" in issues[1].message


def test_two_connections_into_a_single_input_are_alternatives_not_an_error(registry: NodeRegistry) -> None:
    f = flow(
        [node("s1", "test.say"), node("s2", "test.say"), node("j", "test.join")],
        [
            edge("s1.text", "j.parts"),
            edge("s2.text", "j.parts"),
            edge("s1.text", "j.extra"),
            edge("s2.text", "j.extra"),
        ],
    )
    graph = analyze(f, registry)
    assert codes(graph.issues) == []
    # a run takes whichever delivers first; validate says so once, for the single input only
    assert len(graph.notes) == 1 and "'j', input 'extra': 2 alternatives (s1.text, s2.text)" in graph.notes[0]


def test_missing_credential_names_slot_and_how_to_bind(registry: NodeRegistry, tmp_path) -> None:
    resolver = CredentialResolver(store=CredentialStore(tmp_path / "none.json"), environ={})
    issues = analyze(flow([node("k", "test.keyed")]), registry, resolver).issues
    assert codes(issues) == ["missing-credential"]
    assert issues[0].port == "api_key" and "OPENAI_API_KEY" in issues[0].message and "--cred" in issues[0].message
    bound = CredentialResolver(store=CredentialStore(tmp_path / "none.json"), environ={"OPENAI_API_KEY": "sk-x"})
    assert analyze(flow([node("k", "test.keyed")]), registry, bound).issues == []


def test_all_issues_are_reported_together(registry: NodeRegistry) -> None:
    f = flow(
        [node("a", "test.unknown"), node("b", "test.take"), node("c", "test.numbers", count="many")],
        [edge("c.records", "zzz.in")],
    )
    with pytest.raises(FlowValidationError) as info:
        validate(f, registry)
    assert codes(info.value.issues) == ["dangling-edge", "invalid-config", "missing-input", "unknown-type"]
    assert str(info.value).count("\n  - ") == 4


def test_disabled_node_is_not_checked_for_inputs(registry: NodeRegistry) -> None:
    f = flow([node("b", "test.take")])
    f.nodes[0].disabled = True
    assert analyze(f, registry).issues == []
