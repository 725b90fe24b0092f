"""Keyword search in place of the dense search while the background ingest fills the store.

Embedding 500 rows takes half a minute on a laptop's CPU (minutes on a busy one); a keyword index over the same
chunks builds in about a second. :func:`keyword_stand_in` rewrites a flow so that every node that would search a
store the background ingest is still filling searches those chunks by keyword instead (the type with the
``keyword_search`` capability, BM25, under the same node id, fed by whatever feeds the store), and the store itself
is left to the ingest. The rest of the flow (prompt, model, chat output) runs as it is, so the answer comes the way
the flow gives answers; whoever shows it must say that keyword search answered (the builder's chat does, with the
ingest's count; ADR 0023).

Only what can be replaced one for one is: a node that reads the store's service and gives only hits (a vector
retriever), the store's own search (its ``query`` input), and a store reading the same collection. A store whose
service feeds anything else (an agent's tool, a query rewriter) has no stand-in: the question then waits for the
ingest, as before. Searching the half-filled dense store instead would look fine while wrong (rows not embedded
yet can never be found), so the dense store is only searched once it is full.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx

from flowbuilder.capabilities import Capability
from flowbuilder.errors import RegistryError
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.graph import FlowGraph
from flowbuilder.ports import PortKind, PortType

DEFAULT_K = 4
_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class StandIn:
    """A flow that answers by keyword search while the ingest of ``targets`` runs."""

    flow: Flow
    replaced: tuple[str, ...]
    """The nodes that search by keyword in :attr:`flow` (same ids as in the original flow)."""
    quiet: frozenset[str]
    """The ingest's nodes: the background run draws them; a run of :attr:`flow` must not (it only reads what they
    gave, from the result cache)."""


def keyword_stand_in(flow: Flow, graph: FlowGraph, targets: Sequence[str]) -> StandIn | None:
    """The stand-in flow for an ingest that fills ``targets`` (store node ids), or None when some search of those
    stores cannot be replaced by keyword search (see the module's docstring)."""
    if not targets:
        return None
    target_set = set(targets)
    sources = {t: [e for e in flow.edges if e.target == t and _is_documents(graph, e)] for t in targets}
    if not all(sources.values()):
        return None
    readers = {dep.reader: dep.writer for dep in graph.implicit if dep.writer in target_set}
    searchers: dict[str, list[Edge]] = {}  # node to replace -> the documents edges that feed its index
    for target in targets:
        for edge in flow.edges:
            if edge.source != target:
                continue
            port = graph.nodes[target].outputs.get(edge.source_port)
            if port is None:
                return None
            if port.type is PortType.HITS:
                searchers[target] = sources[target]  # the store's own search
            elif port.type is PortType.VECTOR_STORE and _retriever_like(graph, edge.target):
                searchers[edge.target] = sources[target]
            else:
                return None  # the store feeds something keyword search cannot stand in for
    for reader, writer in readers.items():
        if _searches(graph, reader):
            searchers[reader] = sources[writer]
    if not searchers:
        return None
    try:
        keyword = graph.registry.the(Capability.KEYWORD_SEARCH).type_name
    except RegistryError:  # a registry without a keyword search: the question waits for the ingest
        return None
    quiet = set(target_set)
    dependencies = graph.dependency_graph()
    for target in targets:
        quiet |= nx.ancestors(dependencies, target)
    rewritten = _rewrite(flow, graph, searchers, keyword)
    _prune(rewritten, quiet - set(searchers))
    return StandIn(rewritten, tuple(sorted(searchers)), frozenset(quiet - set(searchers)))


def _is_documents(graph: FlowGraph, edge: Edge) -> bool:
    port = graph.nodes[edge.target].inputs.get(edge.target_port) if edge.target in graph.nodes else None
    return port is not None and port.type in (PortType.CHUNKS, PortType.RECORDS)


def _used_outputs(graph: FlowGraph, node_id: str) -> set[str]:
    return {data["edge"].source_port for _, _, data in graph.graph.out_edges(node_id, data=True)}


def _hits_only(graph: FlowGraph, node_id: str) -> bool:
    node = graph.nodes[node_id]
    return all(node.outputs[p].type is PortType.HITS for p in _used_outputs(graph, node_id) if p in node.outputs)


def _retriever_like(graph: FlowGraph, node_id: str) -> bool:
    """Reads a store and a question and gives hits, nothing else: a vector retriever."""
    node = graph.nodes.get(node_id)
    if node is None or not _hits_only(graph, node_id):
        return False
    wired = {data["edge"].target_port for _, _, data in graph.graph.in_edges(node_id, data=True)}
    kinds = {node.inputs[p].type for p in wired if p in node.inputs}
    return kinds <= {PortType.VECTOR_STORE, PortType.TEXT, PortType.MESSAGE} and PortType.VECTOR_STORE in kinds


def _searches(graph: FlowGraph, node_id: str) -> bool:
    """A store node whose own search is used (its query wired, only its hits read)."""
    node = graph.nodes.get(node_id)
    if node is None or not _used_outputs(graph, node_id) or not _hits_only(graph, node_id):
        return False
    return any(data["edge"].target_port == "query" for _, _, data in graph.graph.in_edges(node_id, data=True))


def _rewrite(flow: Flow, graph: FlowGraph, searchers: dict[str, list[Edge]], keyword: str) -> Flow:
    copy = flow.model_copy(deep=True)
    edges: list[Edge] = []
    for edge in copy.edges:
        if edge.target in searchers:
            port = graph.nodes[edge.target].inputs.get(edge.target_port)
            if port is None or port.kind is PortKind.SERVICE or port.type in (PortType.CHUNKS, PortType.RECORDS):
                continue  # the store, its embedder, the chunks: the keyword node gets the chunks below
            edges.append(edge.model_copy(update={"target_port": "query"}))
        else:
            edges.append(edge)
    for node_id, feeding in searchers.items():
        edges += [
            Edge(source=e.source, source_port=e.source_port, target=node_id, target_port="documents") for e in feeding
        ]
    copy.edges = _unique(edges)
    for index, spec in enumerate(copy.nodes):
        if spec.id in searchers:
            config = graph.nodes[spec.id].config
            k = getattr(config, "k", None)
            where = getattr(config, "where", None)
            copy.nodes[index] = NodeSpec(
                id=spec.id,
                type=keyword,
                name=spec.label,
                config={
                    "k": k if isinstance(k, int) and k > 0 else DEFAULT_K,
                    "where": where if isinstance(where, dict) else {},
                    "index_name": _NAME.sub("_", f"while-ingesting-{spec.id}")[:64],
                },
            )
    return copy


def _unique(edges: Iterable[Edge]) -> list[Edge]:
    seen: dict[str, Edge] = {}
    for edge in edges:
        seen.setdefault(edge.key, edge)
    return list(seen.values())


def _prune(flow: Flow, removable: set[str]) -> None:
    """Drop the ingest's nodes nothing reads any more (the store left to the ingest, its embedder)."""
    while True:
        read = {e.source for e in flow.edges}
        gone = {n.id for n in flow.nodes if n.id in removable and n.id not in read}
        if not gone:
            return
        flow.nodes = [n for n in flow.nodes if n.id not in gone]
        flow.edges = [e for e in flow.edges if e.source not in gone and e.target not in gone]
