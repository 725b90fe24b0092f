"""Give every compared flow its own store namespace, derived from what it ingests.

Two flows that name the same collection (the LangFlow course flows, or two variants of one flow) would
otherwise search each other's chunks. Before a comparison runs a flow, every vector store node's
collection (or namespace, for stores that have one) is suffixed with a fingerprint of its *ingest
branch*: the types, configs and wiring of the nodes feeding its documents and embedder, plus the size
and modification time of any file they name. Store nodes that address the same collection (a writer,
and a reader in an unconnected branch, as LangFlow exports them) share one namespace.

The same ingest branch always maps to the same namespace, so a variant that changes only the
retriever's ``k`` reuses its stored chunks, and one that changes the chunk size gets a fresh
collection (its embeddings still come from the embedder's cache).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flowbuilder.errors import FlowbuilderError, NodeError
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.ports import PortType
from flowbuilder.registry import NodeRegistry
from flowbuilder.trust.places import expand_user

NAMESPACE_FIELDS = ("collection", "namespace", "collection_name", "index_name")
"""Config fields that name where a store keeps its entries; the first one a store's Config has is suffixed."""
ADDRESS_FIELDS = (
    "collection", "namespace", "collection_name", "index", "index_name", "persist_directory", "path",
    "server_host", "server_port", "host", "url", "location",
)  # fmt: skip
"""Config fields that together say which collection a store node reads and writes."""
QUERY_FIELDS = ("k", "min_score", "where", "batch_size", "sync")
"""Store settings that do not change what is stored (left out of the fingerprint)."""
QUERY_PORTS = ("query",)
SUFFIX = "-fb"


def is_store(spec: NodeSpec, registry: NodeRegistry) -> bool:
    try:
        cls = registry.get(spec.type)
    except FlowbuilderError:
        return False
    return any(port.type is PortType.VECTOR_STORE for port in cls.output_ports(None))


def namespace_field(spec: NodeSpec, registry: NodeRegistry) -> str | None:
    """The config field that names the node's collection or namespace, or None."""
    cls = registry.get(spec.type)
    fields = getattr(cls.Config, "model_fields", {})
    return next((name for name in NAMESPACE_FIELDS if name in fields), None)


def store_address(spec: NodeSpec) -> str:
    """Which collection ``spec`` addresses: its type and location fields."""
    address = {name: spec.config.get(name) for name in ADDRESS_FIELDS if spec.config.get(name) not in (None, "")}
    return json.dumps([spec.type, address], sort_keys=True, default=str)


def ingest_branch(flow: Flow, node_id: str) -> list[str]:
    """``node_id`` and every node feeding it through any port except a query (sorted)."""
    seen = {node_id}
    todo = [node_id]
    while todo:
        current = todo.pop()
        for edge in flow.edges:
            if edge.target == current and edge.target_port not in QUERY_PORTS and edge.source not in seen:
                seen.add(edge.source)
                todo.append(edge.source)
    return sorted(seen)


def _file_stamps(values: Iterable[Any], base_dir: Path | None) -> list[list[Any]]:
    """Size and mtime of every config string that names an existing file (a changed CSV changes the namespace)."""
    stamps: list[list[Any]] = []
    for value in values:
        if not isinstance(value, str) or not value or len(value) > 1000 or "\n" in value:
            continue
        try:
            path = expand_user(value)
        except NodeError:  # ~nosuchuser/...: names no file
            continue
        candidates = [path] if path.is_absolute() else [p for p in (base_dir and base_dir / path, path) if p]
        for candidate in candidates:
            try:
                if candidate.is_file():
                    stat = candidate.stat()
                    stamps.append([value, stat.st_size, stat.st_mtime_ns])
                    break
            except OSError:
                continue
    return stamps


def branch_fingerprint(flow: Flow, node_id: str, base_dir: Path | None) -> str:
    """A hash of the ingest branch of store node ``node_id`` (see the module docstring)."""
    branch = set(ingest_branch(flow, node_id))
    nodes = []
    for spec in flow.nodes:
        if spec.id not in branch:
            continue
        config = dict(spec.config)
        if spec.id == node_id:
            config = {key: value for key, value in config.items() if key not in QUERY_FIELDS}
        nodes.append([spec.id, spec.type, spec.disabled, config, _file_stamps(config.values(), base_dir)])
    edges = sorted(
        [e.source, e.source_port, e.target, e.target_port]
        for e in flow.edges
        if e.target in branch and e.source in branch and e.target_port not in QUERY_PORTS
    )
    payload = json.dumps([nodes, edges], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def is_writer(flow: Flow, node_id: str) -> bool:
    return any(e.target == node_id and e.target_port == "documents" for e in flow.edges)


def isolate(flow: Flow, registry: NodeRegistry, base_dir: Path | None) -> tuple[Flow, dict[str, str]]:
    """A copy of ``flow`` whose store nodes write and read namespaces of their own.

    Returns the copy and ``{store node id: namespace}`` for every store node that was moved. Store nodes
    addressing the same collection share the fingerprint of all their writers; a collection nobody in
    the flow writes (searched as it is) keeps its name.
    """
    stores = [spec for spec in flow.nodes if not spec.disabled and is_store(spec, registry)]
    groups: dict[str, list[NodeSpec]] = {}
    for spec in stores:
        groups.setdefault(store_address(spec), []).append(spec)
    copy = flow.model_copy(deep=True)
    moved: dict[str, str] = {}
    for members in groups.values():
        writers = [spec.id for spec in members if is_writer(flow, spec.id)]
        if not writers:
            continue
        digest = hashlib.sha256(
            "|".join(branch_fingerprint(flow, writer, base_dir) for writer in writers).encode()
        ).hexdigest()[:12]
        for spec in members:
            name_field = namespace_field(spec, registry)
            if name_field is None:
                continue
            default = registry.get(spec.type).Config.model_fields[name_field].default
            base = str(spec.config.get(name_field) or default or "flowbuilder")[:40].rstrip("-_.")
            namespace = f"{base}{SUFFIX}{digest}"
            copy.node(spec.id).config[name_field] = namespace
            moved[spec.id] = namespace
    return copy, moved
