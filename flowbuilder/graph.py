"""A flow as a typed networkx graph, and the checks that run before any execution.

:func:`validate` collects *every* problem at once; each :class:`ValidationIssue` names the node,
the port and the fix. :class:`FlowGraph` is what the executor and the UI build on: parsed configs,
resolved ports and a ``networkx.MultiDiGraph`` with one edge key per port pair.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from pydantic import BaseModel, ValidationError

from flowbuilder.credentials import CredentialResolver, reference_problem
from flowbuilder.errors import FlowValidationError, UnknownNodeTypeError, ValidationIssue
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.ports import Port, compatible
from flowbuilder.registry import NodeClass, NodeRegistry, default_registry


def _ports_text(ports: tuple[Port, ...]) -> str:
    return ", ".join(p.describe() for p in ports) or "none"


def config_error_text(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors())


@dataclass
class ResolvedNode:
    spec: NodeSpec
    cls: NodeClass
    config: BaseModel
    inputs: dict[str, Port]
    outputs: dict[str, Port]


@dataclass
class FlowGraph:
    """A flow with its node classes, parsed configs and graph; built by :func:`analyze`."""

    flow: Flow
    registry: NodeRegistry
    nodes: dict[str, ResolvedNode] = field(default_factory=dict)
    graph: nx.MultiDiGraph = field(default_factory=nx.MultiDiGraph)
    issues: list[ValidationIssue] = field(default_factory=list)

    def incoming(self, node_id: str) -> list[Edge]:
        return [data["edge"] for _, _, data in self.graph.in_edges(node_id, data=True)]

    def order(self, targets: set[str] | None = None) -> list[str]:
        """Deterministic execution order (lexicographic topological sort), optionally only the
        ancestors of ``targets`` plus the targets themselves."""
        graph = self.graph
        if targets:
            keep = set(targets)
            for target in targets:
                keep |= nx.ancestors(graph, target)
            graph = graph.subgraph(keep)
        return list(nx.lexicographical_topological_sort(graph))


def analyze(
    flow: Flow,
    registry: NodeRegistry | None = None,
    resolver: CredentialResolver | None = None,
    only: set[str] | None = None,
) -> FlowGraph:
    """Resolve and check a flow; the issues are in ``FlowGraph.issues`` (nothing is raised).

    :param resolver: when given, unbound credential slots are reported too.
    :param only: when given, only these nodes (a run's scope) are checked for inputs and credentials.
    """
    registry = registry or default_registry()
    result = FlowGraph(flow=flow, registry=registry)
    issues = result.issues

    seen: set[str] = set()
    for item_id in [n.id for n in flow.nodes] + [n.id for n in flow.notes]:
        if item_id in seen:
            issues.append(
                ValidationIssue(
                    "duplicate-id", f"the id '{item_id}' is used more than once; give each node a unique id", item_id
                )
            )
        seen.add(item_id)

    for spec in flow.nodes:
        if spec.id in result.nodes:
            continue
        try:
            cls = registry.get(spec.type)
        except UnknownNodeTypeError as exc:
            issues.append(ValidationIssue("unknown-type", str(exc), spec.id))
            result.graph.add_node(spec.id)
            continue
        try:
            config = cls.Config.model_validate(spec.config)
        except ValidationError as exc:
            issues.append(ValidationIssue("invalid-config", f"invalid config: {config_error_text(exc)}", spec.id))
            result.graph.add_node(spec.id)
            continue
        if not spec.disabled:
            for problem_port, message in cls.config_problems(config):
                code = "unsupported-node" if spec.type == "placeholder.unsupported" else "invalid-config"
                issues.append(ValidationIssue(code, message, spec.id, problem_port))
        result.nodes[spec.id] = ResolvedNode(
            spec=spec,
            cls=cls,
            config=config,
            inputs={p.name: p for p in cls.input_ports(config)},
            outputs={p.name: p for p in cls.output_ports(config)},
        )
        result.graph.add_node(spec.id)

    known_ids = {n.id for n in flow.nodes}
    connected: dict[tuple[str, str], list[Edge]] = defaultdict(list)
    for edge in flow.edges:
        missing = [end for end in (edge.source, edge.target) if end not in known_ids]
        if missing:
            issues.append(
                ValidationIssue(
                    "dangling-edge",
                    f"edge {edge.key} points to missing node(s) {', '.join(repr(m) for m in missing)}; delete the edge",
                    edge.target if edge.target in known_ids else edge.source if edge.source in known_ids else None,
                )
            )
            continue
        source = result.nodes.get(edge.source)
        target = result.nodes.get(edge.target)
        if source is None or target is None:
            continue  # the node's own issue is already reported
        out_port = source.outputs.get(edge.source_port)
        in_port = target.inputs.get(edge.target_port)
        if out_port is None:
            issues.append(
                ValidationIssue(
                    "dangling-edge",
                    f"'{source.spec.type}' has no output '{edge.source_port}'; "
                    f"outputs: {_ports_text(tuple(source.outputs.values()))}",
                    edge.source,
                    edge.source_port,
                )
            )
            continue
        if in_port is None:
            issues.append(
                ValidationIssue(
                    "dangling-edge",
                    f"'{target.spec.type}' has no input '{edge.target_port}'; "
                    f"inputs: {_ports_text(tuple(target.inputs.values()))}",
                    edge.target,
                    edge.target_port,
                )
            )
            continue
        if not compatible(out_port.type, in_port.type):
            issues.append(
                ValidationIssue(
                    "incompatible",
                    f"cannot connect {edge.source}.{out_port.name} ({out_port.type.value}) to "
                    f"{edge.target}.{in_port.name} ({in_port.type.value}): {out_port.type.value} does not fit "
                    f"{in_port.type.value}",
                    edge.target,
                    edge.target_port,
                )
            )
            continue
        connected[(edge.target, edge.target_port)].append(edge)
        result.graph.add_edge(edge.source, edge.target, key=f"{edge.source_port}->{edge.target_port}", edge=edge)

    try:
        cycle = nx.find_cycle(result.graph)
    except nx.NetworkXNoCycle:
        cycle = []
    if cycle:
        names = [u for u, *_ in cycle]
        issues.append(
            ValidationIssue(
                "cycle",
                f"the flow has a cycle through {' -> '.join([*names, names[0]])}; remove one of these connections",
                names[0],
            )
        )

    scope = set(result.nodes) if only is None else {n for n in only if n in result.nodes}
    if only is not None:
        for node_id in list(scope):
            if node_id in result.graph:
                scope |= {a for a in nx.ancestors(result.graph, node_id) if a in result.nodes}
    for node_id in sorted(scope):
        node = result.nodes[node_id]
        if node.spec.disabled:
            continue
        for port in node.inputs.values():
            edges = connected.get((node_id, port.name), [])
            if port.required and not edges:
                issues.append(
                    ValidationIssue(
                        "missing-input",
                        f"required input '{port.name}' ({port.type.value}) is not connected; connect a node that "
                        f"outputs {port.type.value}",
                        node_id,
                        port.name,
                    )
                )
            if len(edges) > 1 and not port.multiple:
                sources = ", ".join(f"{e.source}.{e.source_port}" for e in edges)
                issues.append(
                    ValidationIssue(
                        "too-many-connections",
                        f"input '{port.name}' takes one connection but has {len(edges)} ({sources}); "
                        "remove all but one",
                        node_id,
                        port.name,
                    )
                )
        for slot in node.cls.credential_slots:
            ref = node.spec.credentials.get(slot.name)
            problem = reference_problem(slot, ref)
            if problem is None and resolver is not None and (slot.required or resolver.resolve(node_id, slot, ref)):
                problem = resolver.endpoint_problem(slot, ref, node.config)
            if problem:
                message = f"credential slot '{slot.name}': {problem}"
                issues.append(ValidationIssue("unsafe-credential", message, node_id, slot.name))
        if resolver is not None:
            for slot in node.cls.credential_slots:
                ref = node.spec.credentials.get(slot.name)
                if reference_problem(slot, ref) is None and slot.required and not resolver.resolve(node_id, slot, ref):
                    issues.append(
                        ValidationIssue(
                            "missing-credential",
                            f"credential slot '{slot.name}' ({ref.provider if ref else slot.provider}"
                            f"{' / ' + ref.name if ref else ''}) is not bound: {resolver.describe_sources(slot, ref)}",
                            node_id,
                            slot.name,
                        )
                    )
    return result


def validate(
    flow: Flow,
    registry: NodeRegistry | None = None,
    resolver: CredentialResolver | None = None,
    only: set[str] | None = None,
) -> FlowGraph:
    """Like :func:`analyze`, but raise :class:`FlowValidationError` listing every issue."""
    result = analyze(flow, registry, resolver, only)
    if result.issues:
        raise FlowValidationError(result.issues)
    return result


def node_inputs_for(result: FlowGraph, node_id: str) -> dict[str, Any]:
    """Map input port name -> list of (source node, source port) feeding it."""
    feeds: dict[str, Any] = defaultdict(list)
    for edge in result.incoming(node_id):
        feeds[edge.target_port].append((edge.source, edge.source_port))
    return dict(feeds)
