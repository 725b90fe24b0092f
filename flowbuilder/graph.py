"""A flow as a typed networkx graph, and the checks that run before any execution.

:func:`validate` collects *every* problem at once; each :class:`ValidationIssue` names the node,
the port and the fix. :class:`FlowGraph` is what the executor and the UI build on: parsed configs,
resolved ports and a ``networkx.MultiDiGraph`` with one edge key per port pair.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
from pydantic import BaseModel, ValidationError

from flowbuilder.errors import FlowbuilderError, FlowValidationError, UnknownNodeTypeError, ValidationIssue
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.placeholder import PLACEHOLDER_TYPE
from flowbuilder.ports import Port, compatible
from flowbuilder.registry import NodeClass, NodeRegistry, default_registry
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.egress import KeyPlan
from flowbuilder.trust.pathguard import FileRoots
from flowbuilder.trust.policy import TrustPolicy
from flowbuilder.trust.scopes import FlowScope, flow_scope

# Foreign code nodes: never run; off the path to an output (feeding nothing), a run goes around them.
CODE_TYPES = frozenset(
    {"n8n-nodes-base.code", "n8n-nodes-base.function", "n8n-nodes-base.functionItem", "@n8n/n8n-nodes-langchain.code"}
)
WRITER_PORT = "documents"
"""A store node with a connection into this port writes its collection; one without it only reads."""


def _ports_text(ports: tuple[Port, ...]) -> str:
    return ", ".join(p.describe() for p in ports) or "none"


def config_error_text(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors())


@dataclass
class ResolvedNode:
    """A flow node with its registered class, parsed config and this config's ports."""

    spec: NodeSpec
    cls: NodeClass
    config: BaseModel
    inputs: dict[str, Port]
    outputs: dict[str, Port]


@dataclass(frozen=True)
class ImplicitDependency:
    """``reader`` searches the collection that ``writer`` fills, without a connection between them."""

    writer: str
    reader: str
    reason: str
    """e.g. ``same collection chroma:/flows/chroma_db:vwo``."""


def implicit_dependencies(
    flow: Flow, registry: NodeRegistry | None = None, base_dir: Path | None = None
) -> list[ImplicitDependency]:
    """Writer -> reader pairs of store nodes that address the same collection (same store kind, location
    and name, as the node class's ``collection_address(config, base_dir)`` says). A writer has a connection
    into its ``documents`` input; a reader has none. Sorted by (writer, reader)."""
    registry = registry or default_registry()
    writing = {edge.target for edge in flow.edges if edge.target_port == WRITER_PORT}
    by_address: dict[str, list[str]] = defaultdict(list)
    for spec in flow.nodes:
        address = _collection_address(spec, registry, base_dir)
        if address is not None:
            by_address[address].append(spec.id)
    found = []
    for address, ids in by_address.items():
        writers = [i for i in ids if i in writing]
        readers = [i for i in ids if i not in writing]
        found += [ImplicitDependency(w, r, f"same collection {address}") for w in writers for r in readers]
    return sorted(found, key=lambda dep: (dep.writer, dep.reader))


def _collection_address(spec: NodeSpec, registry: NodeRegistry, base_dir: Path | None) -> str | None:
    try:
        cls = registry.get(spec.type)
    except UnknownNodeTypeError:
        return None
    try:
        config = cls.Config.model_validate(spec.config)
    except ValidationError:
        return None
    try:
        address = cls.collection_address(config, base_dir)
    except FlowbuilderError:  # an unusable folder or '~nosuchuser/db': the node's own check reports it
        return None
    return str(address) if address is not None else None


@dataclass
class FlowGraph:
    """A flow with its node classes, parsed configs and graph; built by :func:`analyze`."""

    flow: Flow
    registry: NodeRegistry
    nodes: dict[str, ResolvedNode] = field(default_factory=dict)
    graph: nx.MultiDiGraph = field(default_factory=nx.MultiDiGraph)
    issues: list[ValidationIssue] = field(default_factory=list)
    warnings: list[ValidationIssue] = field(default_factory=list)
    """Problems that do not block a run (an unconnected placeholder is skipped with a warning)."""
    notes: list[str] = field(default_factory=list)
    """Facts about the flow worth saying that are no problem (alternative inputs)."""
    implicit: list[ImplicitDependency] = field(default_factory=list)
    """Writer -> reader dependencies the order honours (those that would close a cycle are left out)."""
    keys: list[tuple[str, KeyPlan]] = field(default_factory=list)
    """Every bound key of the nodes checked, with where it would go (``(node id, plan)``; with a resolver)."""
    scope: FlowScope = field(default_factory=flow_scope)
    """Which flow this is (:mod:`flowbuilder.trust.scopes`): whose collections and memory it may open."""

    def incoming(self, node_id: str) -> list[Edge]:
        return [data["edge"] for _, _, data in self.graph.in_edges(node_id, data=True)]

    def dependency_graph(self) -> nx.DiGraph:
        """The connections plus the implicit writer -> reader dependencies: what the order follows."""
        graph = nx.DiGraph(self.graph)
        graph.add_edges_from((dep.writer, dep.reader) for dep in self.implicit)
        return graph

    def ancestors(self, node_id: str) -> set[str]:
        """Everything ``node_id`` waits for, through connections and implicit dependencies."""
        graph = self.dependency_graph()
        return set(nx.ancestors(graph, node_id)) if node_id in graph else set()

    def writers_of(self, reader: str) -> list[str]:
        return [dep.writer for dep in self.implicit if dep.reader == reader]

    def order(self, targets: set[str] | None = None) -> list[str]:
        """Deterministic execution order (lexicographic topological sort, writers of a collection before
        its readers), optionally only the ancestors of ``targets`` plus the targets themselves."""
        graph = self.dependency_graph()
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
    base_dir: Path | None = None,
    flow_file: Path | None = None,
    data_dir: Path | None = None,
    policy: TrustPolicy | None = None,
) -> FlowGraph:
    """Resolve and check a flow; the issues are in ``FlowGraph.issues`` (nothing is raised).

    The phases run in order, each adding to the result: ids, node types and configs, connections,
    placeholders, order (cycles and implicit writer -> reader links), then every node in the run's scope.

    :param resolver: when given, unbound credential slots are reported too, and where each bound key goes.
    :param only: when given, only these nodes (a run's scope) are checked for inputs and credentials.
    :param base_dir: the flow file's folder (relative store locations resolve against it).
    :param flow_file: the flow's file: which flow this is, for the collections it may open (else ``base_dir``).
    :param data_dir: Flowbuilder's data dir (its ledger of who wrote each collection); the default one if None.
    :param policy: the trust room's face to ask (the executor's); built from ``resolver`` and ``data_dir`` if None.
    """
    registry = registry or default_registry()
    policy = policy or TrustPolicy(resolver, data_dir=data_dir)
    if base_dir is None and flow_file is not None:
        base_dir = Path(flow_file).resolve().parent
    result = FlowGraph(flow=flow, registry=registry, scope=policy.scope(flow.meta, flow_file, base_dir))
    _check_ids(flow, result)
    placeholder_issues = _resolve_nodes(flow, registry, result)
    connected = _connect(flow, result)
    _judge_placeholders(flow, result, placeholder_issues)
    _order(flow, registry, base_dir, result)
    roots = policy.file_roots(base_dir)
    if roots.flow_dir_problem:
        result.notes.append(roots.flow_dir_problem)
    for node_id in sorted(_scope(result, only)):
        node = result.nodes[node_id]
        if not node.spec.disabled:
            _check_node(node_id, node, connected, roots, policy, base_dir, result)
    return result


def _check_ids(flow: Flow, result: FlowGraph) -> None:
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


def _resolve_nodes(flow: Flow, registry: NodeRegistry, result: FlowGraph) -> dict[str, list[ValidationIssue]]:
    """Each node's class and parsed config; a placeholder's problems are returned (judged once wired)."""
    issues = result.issues
    placeholder_issues: dict[str, list[ValidationIssue]] = defaultdict(list)
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
                if spec.type == PLACEHOLDER_TYPE:
                    placeholder_issues[spec.id].append(
                        ValidationIssue("unsupported-node", message, spec.id, problem_port)
                    )
                else:
                    issues.append(ValidationIssue("invalid-config", message, spec.id, problem_port))
        result.nodes[spec.id] = ResolvedNode(
            spec=spec,
            cls=cls,
            config=config,
            inputs={p.name: p for p in cls.input_ports(config)},
            outputs={p.name: p for p in cls.output_ports(config)},
        )
        result.graph.add_node(spec.id)

    return placeholder_issues


def _connect(flow: Flow, result: FlowGraph) -> dict[tuple[str, str], list[Edge]]:
    """Every connection checked against its ports; the valid ones, by (target, input port)."""
    issues = result.issues
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

    return connected


def _judge_placeholders(flow: Flow, result: FlowGraph, placeholder_issues: dict[str, list[ValidationIssue]]) -> None:
    issues = result.issues
    # A placeholder blocks only when something is wired to it (it is on a path that runs); one left with
    # no connections is skipped with a warning, and a run that does not need it never sees it (scope).
    # A code placeholder that feeds nothing (a Code node at the end of a side branch) is off every path to
    # an output: runs skip it too, and what feeds it still runs.
    # One that feeds only optional inputs (an agent's tools: a Wikipedia or sub-workflow tool we do not
    # have) is skipped the same way: the agent runs with the tools it has.
    wired = {end for edge in flow.edges for end in (edge.source, edge.target)}
    feeds = {edge.source for edge in flow.edges}
    for node_id, found in placeholder_issues.items():
        code = str(result.nodes[node_id].spec.config.get("original_type", "")) in CODE_TYPES
        optional = _feeds_only_optional_inputs(flow, result, node_id)
        if (node_id in feeds and not optional) or (node_id in wired and not code and not optional):
            issues.extend(found)
        else:
            why = "it feeds no other node" if node_id in wired else "it has no connections"
            if optional:
                why = f"it only feeds {optional}, which works without it"
            result.warnings.extend(
                ValidationIssue("unsupported-node", f"{i.message}; {why}, so runs skip it", node_id, i.port)
                for i in found
            )


def _feeds_only_optional_inputs(flow: Flow, result: FlowGraph, node_id: str) -> str:
    """``"'tools' of 'agent'"`` when every connection out of ``node_id`` ends in an optional input that takes
    several connections (and nothing flows into it); empty otherwise."""
    out = [e for e in flow.edges if e.source == node_id]
    if not out or any(e.target == node_id for e in flow.edges):
        return ""
    ends = []
    for edge in out:
        target = result.nodes.get(edge.target)
        port = target.inputs.get(edge.target_port) if target is not None else None
        if port is None or port.required or not port.multiple:
            return ""
        ends.append(f"'{edge.target_port}' of '{edge.target}'")
    return ", ".join(sorted(set(ends)))


def _order(flow: Flow, registry: NodeRegistry, base_dir: Path | None, result: FlowGraph) -> None:
    """A cycle is an issue; without one, the implicit writer -> reader links the order honours."""
    issues = result.issues
    try:
        cycle = nx.find_cycle(result.graph)
    except nx.NetworkXNoCycle:
        cycle = []
    if not cycle:
        for dep in implicit_dependencies(flow, registry, base_dir):
            # a reader that feeds its own writer cannot also wait for it; the connections win
            ends_known = dep.writer in result.graph and dep.reader in result.graph
            if ends_known and not nx.has_path(result.dependency_graph(), dep.reader, dep.writer):
                result.implicit.append(dep)
    if cycle:
        names = [u for u, *_ in cycle]
        issues.append(
            ValidationIssue(
                "cycle",
                f"the flow has a cycle through {' -> '.join([*names, names[0]])}; remove one of these connections",
                names[0],
            )
        )


def _scope(result: FlowGraph, only: set[str] | None) -> set[str]:
    """The nodes a run of ``only`` needs (all nodes when None), ancestors included."""
    scope = set(result.nodes) if only is None else {n for n in only if n in result.nodes}
    if only is not None:
        for node_id in list(scope):
            scope |= {a for a in result.ancestors(node_id) if a in result.nodes}
    return scope


def _check_node(
    node_id: str,
    node: ResolvedNode,
    connected: dict[tuple[str, str], list[Edge]],
    roots: FileRoots,
    policy: TrustPolicy,
    base_dir: Path | None,
    result: FlowGraph,
) -> None:
    """One node in scope: its inputs, and what the trust room says of it: the files it reads, the program it
    starts, where it sends requests, its keys and its collection."""
    issues = result.issues
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
            # Alternatives (a form and a Drive trigger into one loader): a run takes the first that
            # delivers; said once, not refused.
            sources = ", ".join(f"{e.source}.{e.source_port}" for e in edges)
            result.notes.append(
                f"node '{node_id}', input '{port.name}': {len(edges)} alternatives ({sources}); "
                "a run takes the first one that delivers a value"
            )
    refs = node.spec.credentials
    trust_issues = policy.node_issues(node_id, node.cls, node.config, refs, base_dir, roots)
    issues.extend(trust_issues)
    fed = any(connected.get((node_id, port)) for port in node.inputs)
    unreadable = any(i.code in ("untrusted-path", "invalid-config") for i in trust_issues)
    if not unreadable and not fed:  # what an input delivers replaces the config's path
        for port_name, message in node.cls.path_problems(node.config, base_dir):
            issues.append(ValidationIssue("unsupported-file", message, node_id, port_name))
        # a note, not a warning: a warning on a node makes runs skip it (an unconnected placeholder)
        result.notes.extend(f"node '{node_id}': {message}" for message in node.cls.path_warnings(node.config, base_dir))
    result.keys += [(node_id, plan) for plan in policy.key_plans(node_id, node.cls, node.config, refs)]
    writes = bool(connected.get((node_id, WRITER_PORT)))
    stores, notes = policy.store_issues(node_id, node.cls, node.config, writes, base_dir, result.scope, roots)
    issues.extend(stores)
    result.notes.extend(note for note in notes if note not in result.notes)


def validate(
    flow: Flow,
    registry: NodeRegistry | None = None,
    resolver: CredentialResolver | None = None,
    only: set[str] | None = None,
    flow_file: Path | None = None,
) -> FlowGraph:
    """Like :func:`analyze`, but raise :class:`FlowValidationError` listing every issue."""
    result = analyze(flow, registry, resolver, only, flow_file=flow_file)
    if result.issues:
        raise FlowValidationError(result.issues)
    return result


def node_inputs_for(result: FlowGraph, node_id: str) -> dict[str, Any]:
    """Map input port name -> list of (source node, source port) feeding it."""
    feeds: dict[str, Any] = defaultdict(list)
    for edge in result.incoming(node_id):
        feeds[edge.target_port].append((edge.source, edge.source_port))
    return dict(feeds)


def config_keys(result: FlowGraph) -> dict[str, str]:
    """A Merkle key per node from what the user edits: its type, config, disabled flag and the keys of
    everything it depends on (connections and implicit writer -> reader dependencies). Editing one node
    changes its key and the keys of all nodes downstream of it; nothing runs to compute them.

    The executor records these in ``RunResult.config_keys``; :func:`changed_since` compares them with
    the current flow (the "changed since last run" marking)."""
    import hashlib
    import json

    graph = result.dependency_graph()
    keys: dict[str, str] = {}
    specs = {spec.id: spec for spec in result.flow.nodes}
    try:
        order = list(nx.lexicographical_topological_sort(graph))
    except nx.NetworkXUnfeasible:  # a cycle: keys from each node alone
        order = sorted(graph.nodes)
    for node_id in order:
        spec = specs.get(node_id)
        if spec is None:
            continue
        upstream = sorted(f"{keys.get(source, '')}:{via}" for source, via in _in_edges(result, node_id))
        payload = json.dumps(
            {"t": spec.type, "c": spec.config, "d": spec.disabled, "up": upstream}, sort_keys=True, default=str
        )
        keys[node_id] = hashlib.sha256(payload.encode()).hexdigest()
    return keys


def _in_edges(result: FlowGraph, node_id: str) -> list[tuple[str, str]]:
    """``(source, what connects it)`` for every dependency of ``node_id``."""
    edges = [(edge.source, edge.key) for edge in result.incoming(node_id)]
    edges += [(dep.writer, "same collection") for dep in result.implicit if dep.reader == node_id]
    return edges


def changed_since(result: FlowGraph, previous: dict[str, str]) -> set[str]:
    """Nodes whose :func:`config_keys` differ from ``previous`` (a past run's ``RunResult.config_keys``):
    the edited nodes and everything downstream. Nodes the past run did not cover are not reported."""
    current = config_keys(result)
    return {node_id for node_id, key in current.items() if node_id in previous and previous[node_id] != key}
