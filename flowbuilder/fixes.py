"""Suggested fixes for a required input left empty (``missing-input``), as the builder's Fix button offers.

An imported flow can reach us with an input its source tool filled implicitly (a LangFlow vector store
whose server embeds, a chat output fed nothing, a parser with no records). The fix is what that tool
would have used:

1. the one node already in the flow that produces the right type (the flow's embedder, its chat model,
   the output nearest upstream...): connect it. Several candidates: the one whose output is not used yet,
   then the nearest on the canvas. A candidate downstream of the node is skipped (no cycles);
2. otherwise a new node of the offline default for that type (the node type declaring
   :attr:`~flowbuilder.capabilities.Capability.DEFAULT_SOURCE` for it: an offline embedder, the local model,
   window memory, a chat input), added left of the node and connected.

Pure data (no NiceGUI): the builder applies a :class:`Fix` through its editing state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from flowbuilder.capabilities import Capability
from flowbuilder.flow import Flow
from flowbuilder.graph import analyze
from flowbuilder.ports import SERVICE_TYPES, Port, PortType, compatible
from flowbuilder.registry import NodeRegistry, default_registry

FILLED_BY_A_NEW_NODE = SERVICE_TYPES | {PortType.MESSAGE, PortType.TEXT}
"""Inputs a fix may fill with a new node: a service (an embedder, a model, memory...) or the user's words. A
prompt or an answer needs more than one new node, so no fix adds one."""


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
    default = default_source(registry, port)
    if default is None:
        return None
    add_type, source_port = default
    label = f"Add a {registry.get(add_type).display_name or add_type} node and connect it to '{port_name}'"
    return Fix(node_id, port_name, source_port, label, add_type=add_type)


def default_source(registry: NodeRegistry, port: Port) -> tuple[str, str] | None:
    """The node type a fix adds for an empty ``port`` and its output that feeds it: a type declaring
    ``DEFAULT_SOURCE`` with an output of the port's type, else one that may feed it (a chat input's message
    into a text port), a node fed by the run's own input first."""
    if port.type not in FILLED_BY_A_NEW_NODE:
        return None
    found = []
    for cls in registry.with_capability(Capability.DEFAULT_SOURCE):
        for out in cls.output_ports(None):
            if compatible(out.type, port.type) and out.type.kind == port.type.kind:
                found.append((out.type is not port.type, cls.run_input is None, cls.type_name, out.name))
    return min(found)[2:] if found else None


def _edges(flow: Flow) -> nx.DiGraph:
    return nx.DiGraph([(e.source, e.target) for e in flow.edges])


def _label(flow: Flow, node_id: str) -> str:
    spec = flow.find_node(node_id)
    return spec.label if spec else node_id


__all__ = ["Fix", "default_source", "suggest_fix"]
