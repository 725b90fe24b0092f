"""Stores for work spread over machines: which ones every worker reaches (a server, never a folder on this machine),
and a flow with its ingest cut (the store is filled elsewhere) for question runs and serving replicas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowbuilder.errors import ClusterError

if TYPE_CHECKING:
    from flowbuilder.flow import Flow
    from flowbuilder.registry import NodeRegistry

SERVER_STORES = (
    "a Chroma server (vectorstore.chroma with server_host and server_port; start one with "
    "`chroma run --host 0.0.0.0 --port 8000 --path DIR`), a Qdrant server (vectorstore.qdrant with url) or Pinecone"
)


def refuse_unreachable_stores(flow: Flow, registry: NodeRegistry) -> None:
    """One line when a store the flow writes lives on this machine only (with ``--ray`` the workers write the
    batches, so they must all reach it). Checked before connecting to the cluster."""
    for spec in flow.nodes:
        if spec.disabled or spec.type not in registry:
            continue
        cls = registry.get(spec.type)
        reachable = getattr(cls, "reachable_by_workers", None)
        writes = any(edge.target == spec.id and edge.target_port == "documents" for edge in flow.edges)
        if reachable is None or not writes:
            continue
        try:
            config = cls.Config.model_validate(spec.config)
        except ValueError:
            continue  # validation names the bad config
        if not reachable(config):
            raise ClusterError(
                f"node '{spec.id}' ({spec.type}) writes a store on this machine only, which the Ray cluster's "
                f"workers cannot reach; with --ray use {SERVER_STORES}."
            )


def cut_ingest(flow: Flow, registry: Any, to: str | None) -> Flow | None:
    """``flow`` without what feeds its stores' documents (the ingest is done elsewhere): what a worker runs per
    question, or what a serving replica serves (``to`` None: every node that only fed the stores is dropped). None
    when the question's path still reads a file (a keyword retriever fed chunks): that part stays here."""
    import networkx as nx

    from flowbuilder.ports import PortType

    stores = {
        spec.id
        for spec in flow.nodes
        if spec.type in registry
        and any(port.type is PortType.VECTOR_STORE for port in registry.get(spec.type).output_ports(None))
    }
    feeding = [e for e in flow.edges if e.target in stores and e.target_port == "documents"]
    cut = flow.model_copy(deep=True)
    cut.edges = [e for e in cut.edges if not (e.target in stores and e.target_port == "documents")]
    graph: nx.DiGraph[str] = nx.DiGraph([(e.source, e.target) for e in cut.edges])
    graph.add_nodes_from(spec.id for spec in cut.nodes)
    if to is None:
        before: nx.DiGraph[str] = nx.DiGraph([(e.source, e.target) for e in flow.edges])
        ingest = {e.source for e in feeding} | {a for e in feeding for a in nx.ancestors(before, e.source)}
        dropped = {n for n in ingest if not any(d not in ingest for d in nx.descendants(graph, n))}
        cut.nodes = [spec for spec in cut.nodes if spec.id not in dropped]
        cut.edges = [e for e in cut.edges if e.source not in dropped and e.target not in dropped]
        graph.remove_nodes_from(dropped)
    needed = ({to} | nx.ancestors(graph, to)) if to else set(graph)
    reads_files = [
        spec.id
        for spec in cut.nodes
        if spec.id in needed and not spec.disabled and spec.type in registry
        and registry.get(spec.type).run_input == "file"
    ]  # fmt: skip
    return None if reads_files else cut
