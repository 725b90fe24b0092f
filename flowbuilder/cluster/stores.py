"""Which stores a cluster's workers can write: a server every machine reaches, never a folder on this one."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
