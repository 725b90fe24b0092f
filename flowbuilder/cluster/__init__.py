"""Scale out on a Ray cluster: ``flowbuilder run|compare|tune|eval FLOW --ray ADDRESS``.

What runs where (docs/decisions/0017-scale-out-on-ray.md):

- The driver (the command's process) reads the input files, checks path approvals, binds credentials and runs
  every node that is no ingest chain, as without Ray.
- Every ingest chain (loader -> labeller -> splitters -> store, :mod:`flowbuilder.streaming`) streams: the driver
  reads record batches and ships each to a Ray task on the cluster's workers, which labels, splits, embeds and
  writes it into the store (a server every worker reaches: ``chroma run``, a Qdrant server, Pinecone). At most
  two batches per CPU of the cluster are in flight (backpressure: memory stays a few batches deep). Each worker
  process builds the embedder once and keeps it for every later batch.
- The driver then removes what is stale from the store (sync ``incremental``/``full``, as without Ray).
- ``compare``, ``tune`` and ``eval`` also send their questions to the workers in batches.

This package imports nothing of Ray until :func:`connect` is called: without ``--ray``, Ray is never imported.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from flowbuilder.cluster.stores import SERVER_STORES, refuse_unreachable_stores
from flowbuilder.errors import ClusterError

if TYPE_CHECKING:
    from flowbuilder.cluster.driver import Cluster
    from flowbuilder.flow import Flow

ENV_ADDRESS = "FLOWBUILDER_RAY_ADDRESS"
"""The cluster's address when ``--ray`` is given without one."""


def add_ray_option(parser: argparse.ArgumentParser | Any) -> None:
    """The ``--ray [ADDRESS]`` option of the commands that do long work."""
    parser.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run the ingest batches (and questions) on a Ray cluster: ADDRESS as `ray start --head` prints it "
        f"(e.g. 127.0.0.1:6379), or auto; without ADDRESS, ${ENV_ADDRESS} or auto. Needs `pip install "
        "flowbuilder[cluster]` on every node and a vector store every node reaches (a server)",
    )
    parser.add_argument(
        "--ray-batch",
        type=int,
        default=None,
        metavar="N",
        help="records per batch sent to a worker (default 512)",
    )


def requested_address(value: str | None) -> str | None:
    """The address ``--ray`` asks for: None when the flag was not given; ``auto`` when nothing names one."""
    if value is None:
        return None
    return value.strip() or os.environ.get(ENV_ADDRESS, "").strip() or "auto"


def connect(address: str, *, batch_records: int | None = None) -> Cluster:
    """Connect this process to the Ray cluster at ``address`` (imports Ray)."""
    from flowbuilder.cluster.driver import Cluster

    return Cluster(address, batch_records=batch_records)


def cluster_from_args(args: argparse.Namespace, *flows: Flow) -> Cluster | None:
    """The cluster a command's ``--ray`` names, connected, once ``flows`` are known to write only stores the
    workers reach; None without the flag (Ray is not imported)."""
    address = requested_address(getattr(args, "ray", None))
    if address is None:
        return None
    from flowbuilder.registry import default_registry

    for flow in flows:
        refuse_unreachable_stores(flow, default_registry())
    batch = getattr(args, "ray_batch", None)
    if batch is not None and batch < 1:
        raise ClusterError(f"--ray-batch must be at least 1, got {batch}.")
    return connect(address, batch_records=batch)


__all__ = [
    "ENV_ADDRESS",
    "SERVER_STORES",
    "add_ray_option",
    "cluster_from_args",
    "connect",
    "refuse_unreachable_stores",
    "requested_address",
]
