"""Suggested fixes for a required input left empty (``missing-input``), as the builder's Fix button offers.

An imported flow can reach us with an input its source tool filled implicitly (a LangFlow vector store
whose server embeds, a chat output fed nothing, a parser with no records). The fix is what that tool
would have used:

1. the one node already in the flow that produces the right type (the flow's embedder, its chat model,
   the output nearest upstream...): connect it. Several candidates: the one whose output is not used yet,
   then the nearest on the canvas. A candidate downstream of the node is skipped (no cycles);
2. otherwise a new node of the offline default for that type (an offline embedder, the local model,
   window memory, a chat or file input), added left of the node and connected.

Pure data (no NiceGUI): the builder applies a :class:`Fix` through its editing state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from flowbuilder.flow import Flow
from flowbuilder.graph import analyze
from flowbuilder.ports import PortType, compatible
from flowbuilder.registry import NodeRegistry, default_registry

DEFAULT_SOURCES: dict[PortType, tuple[str, str]] = {
    PortType.EMBEDDER: ("embedder.local", "embedder"),
    PortType.CHAT_MODEL: ("llm.local", "model"),
    PortType.MEMORY: ("memory.window", "memory"),
    PortType.MESSAGE: ("chat.input", "message"),
    PortType.TEXT: ("chat.input", "message"),
}
"""What a new node offers for an input of each type: ``(node type, its output port)``."""


@dataclass(frozen=True)
class Fix:
    """Connect ``source``.``source_port`` (an existing node, or a new ``add_type`` node) to ``node``.``port``."""

    node: str
    port: str
    source_port: str
    label: str
    source: str | None = None
    add_type: str | None = None


def suggest_fix(flow: Flow, node_id: str, port_name: str, registry: NodeRegistry | None = None) -> Fix | None:
    """The fix for ``node_id``'s empty required input ``port_name``, or None when none is known."""
    registry = registry or default_registry()
    graph = analyze(flow, registry)
    target = graph.nodes.get(node_id)
    port = target.inputs.get(port_name) if target is not None else None
    if port is None:
        return None
    downstream = nx.descendants(_edges(flow), node_id) if node_id in _edges(flow) else set()
    used = {(e.source, e.source_port) for e in flow.edges}
    here = flow.position(node_id)
    candidates = []
    for other_id, other in graph.nodes.items():
        if other_id == node_id or other_id in downstream or other.spec.disabled:
            continue
        for out in other.outputs.values():
            if compatible(out.type, port.type) and (out.type.kind == port.type.kind):
                there = flow.position(other_id)
                distance = math.hypot(there.x - here.x, there.y - here.y)
                candidates.append(((other_id, out.name) in used, distance, other_id, out.name))
    if candidates:
        _, _, source, source_port = min(candidates)
        label = f"Connect '{_label(flow, source)}' ({source_port}) to '{port_name}'"
        return Fix(node_id, port_name, source_port, label, source=source)
    default = DEFAULT_SOURCES.get(port.type)
    if default is None or default[0] not in registry:
        return None
    add_type, source_port = default
    label = f"Add a {registry.get(add_type).display_name or add_type} node and connect it to '{port_name}'"
    return Fix(node_id, port_name, source_port, label, add_type=add_type)


def _edges(flow: Flow) -> nx.DiGraph:
    return nx.DiGraph([(e.source, e.target) for e in flow.edges])


def _label(flow: Flow, node_id: str) -> str:
    spec = flow.find_node(node_id)
    return spec.label if spec else node_id


__all__ = ["DEFAULT_SOURCES", "Fix", "suggest_fix"]
