"""``import --local``: swap remote components for local ones so a user without keys can run the flow.

What a node is swapped for is its table entry's ``local`` (:func:`swap_of`): the entry that exports its type,
or the kept entry of a placeholder's foreign type.

A swapped node's edges are rewired to the new node's ports through the format's mapping table (a
placeholder was wired by the foreign handle or connection-type names), so nothing dangles.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import Local, Table, port_names
from flowbuilder.formats.dify_table import DIFY_TABLE
from flowbuilder.formats.flowise_table import FLOWISE_TABLE
from flowbuilder.formats.langflow_table import LANGFLOW_TABLE
from flowbuilder.formats.mapping import PLACEHOLDER, slugify
from flowbuilder.formats.n8n_table import N8N_TABLE
from flowbuilder.formats.report import ImportReport, ParamIssue
from flowbuilder.trust.netguard import is_loopback

TABLES: dict[str, Table] = {"n8n": N8N_TABLE, "langflow": LANGFLOW_TABLE, "flowise": FLOWISE_TABLE, "dify": DIFY_TABLE}
# A swapped store's foreign output that is a retrieval role of its own (an agent's tool, a retriever).
_ROLE_OUTPUTS = {"ai_tool": "TOOL", "ai_retriever": "RETRIEVER", "component_as_tool": "TOOL"}
_CHROMA_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")


def apply_local(flow: Flow, report: ImportReport) -> None:
    _swap_remote(flow, report)
    _empty_kept_context(flow, report)
    _answer_without_model(flow, report)
    _model_server_here(flow, report)


def _empty_kept_context(flow: Flow, report: ImportReport) -> None:
    """A kept node nothing swaps (a chat history, a web search, a transcript) whose output only fills prompt
    variables is unwired: offline those variables are empty text (as a first run's chat history is), the
    prompt's other variables and the rest of the flow run, and the report says which (what feeds the kept node
    is unwired too, so nothing waits on a node that never runs)."""
    for spec in flow.nodes:
        if spec.type != PLACEHOLDER or swap_of(spec) is not None or _entry_hook(spec) == "code":
            continue  # a code node is judged by validate (one off the path is skipped there, with its summary)
        out = [e for e in flow.edges if e.source == spec.id]
        into = [e for e in flow.edges if e.target == spec.id]
        what = spec.config.get("original_type") or spec.type
        if not out and into:
            why = "feeds nothing that runs (the end of a branch: a save, a message sent): offline it is skipped"
        elif out and all(roles.is_prompt(flow.node(e.target).type) for e in out):
            filled = ", ".join(f"{e.target}.{{{e.target_port}}}" for e in out)
            why = f"only fills {filled}: offline that is empty text"
        else:
            continue
        flow.edges = [e for e in flow.edges if e not in out and e not in into]
        report.local_swaps.append(ParamIssue(spec.id, "", f"{what} is kept (never run) and {why}; it is left unwired"))


def _answer_without_model(flow: Flow, report: ImportReport) -> None:
    """Every chat model answers extractively when no model is reachable: visible in its config and, when it
    happens, as the node's warning; an agent quotes its search results the same way (see nodes/agent.py)."""
    for spec in flow.nodes:
        if roles.chat_model(spec.type) and spec.config.get("when_unreachable", "error") == "error":
            spec.config["when_unreachable"] = "extractive"
            report.local_swaps.append(
                ParamIssue(
                    spec.id,
                    "when_unreachable",
                    "when_unreachable = extractive (quotes the retrieved chunks if no model answers)",
                )
            )


def _model_server_here(flow: Flow, report: ImportReport) -> None:
    """``--local`` runs the flow on this machine: a local-model node that names another machine's server (a
    Docker service such as ``http://ollama:11434``, a LAN host) asks this machine's server instead (its model
    name is kept), and the report says which URL was dropped; otherwise the flow would stop at validate, the
    user's flow naming a host nobody approved."""
    for spec in flow.nodes:
        url = spec.config.get("base_url") if spec.type == roles.OFFLINE_CHAT else None
        if not isinstance(url, str) or not url.strip():
            continue
        try:
            host = urlsplit(url.strip()).hostname or ""
        except ValueError:
            host = ""
        if host and is_loopback(host):
            continue
        del spec.config["base_url"]
        report.local_swaps.append(
            ParamIssue(
                spec.id,
                "base_url",
                f"base_url {url!r} dropped: the model is asked on this machine's server (set base_url to use that one)",
            )
        )


def swap_of(spec: NodeSpec) -> Local | None:
    """What ``--local`` swaps ``spec`` for: the entry of its foreign type (a kept placeholder), else the
    entry that exports its type (the formats' entries agree; tests/formats/test_adapter_tables.py)."""
    if spec.type == PLACEHOLDER:
        foreign = str(spec.config.get("original_type", ""))
        for table in _tables_for(str(spec.config.get("source_format", ""))):
            entry = table.entry(foreign)
            if entry is not None and entry.kept:
                return entry.local
        return None
    for table in TABLES.values():
        # an import-only type (loader.url) has no exporter: its import entry says the swap
        adapter = table.exporter(spec.type) or table.ports_of(spec.type)
        if adapter is not None and adapter.local is not None:
            return adapter.local
    return None


def _entry_hook(spec: NodeSpec) -> str:
    """The hook of a placeholder's kept entry (``code`` for code nodes), or ''."""
    for table in _tables_for(str(spec.config.get("source_format", ""))):
        entry = table.entry(str(spec.config.get("original_type", "")))
        if entry is not None:
            return entry.hook if isinstance(entry.hook, str) else ""
    return ""


def _tables_for(fmt: str) -> list[Table]:
    first = TABLES.get(fmt)
    return [first, *(t for t in TABLES.values() if t is not first)] if first else list(TABLES.values())


def _swap_remote(flow: Flow, report: ImportReport) -> None:
    swapped: list[str] = []
    for spec in list(flow.nodes):
        swap = swap_of(spec)
        if swap is None:
            continue
        original = spec.type
        foreign = str(spec.config.get("original_type", "")) if original == PLACEHOLDER else ""
        fmt = str(spec.config.get("source_format", ""))
        config = {k: v for k, v in spec.config.items() if k in swap.keep} if original != PLACEHOLDER else {}
        config.update(dict(swap.fixed))
        collection = ""
        if swap.collection:
            collection = _collection(spec, swap, TABLES.get(fmt))
            if not _CHROMA_NAME.match(collection):
                fixed = chroma_collection(collection)
                report.warnings.append(
                    f"{spec.id}: collection {collection!r} is not a valid Chroma name; --local uses {fixed!r}"
                )
                collection = fixed
            config = {"collection": collection, **config}
        mode = _n8n_mode(spec) if original == PLACEHOLDER else ""
        spec.type, spec.config, spec.credentials = swap.target, config, {}
        if original == PLACEHOLDER:
            _rewire(flow, spec, TABLES.get(fmt), mode, report)
        report.credentials = [c for c in report.credentials if c.node not in (spec.id, spec.name)]
        detail = f"{original}{f' ({foreign})' if foreign else ''} -> {spec.type}"
        report.local_swaps.append(ParamIssue(spec.id, "", detail + swap.detail.format(collection=collection)))
        swapped.append(spec.id)
        for outcome in report.nodes:
            outcome.targets = [(i, spec.type if i == spec.id else t) for i, t in outcome.targets]
    _fill_embedders(flow, report)
    _fill_ingest(flow, report, swapped)


def _fill_ingest(flow: Flow, report: ImportReport, swapped: list[str]) -> None:
    """A swapped store that only answers queries was filled elsewhere (another flow, the provider's console):
    its local collection starts empty. A file -> loader -> splitter branch is added so the first run, given a
    file, fills it and shows hits; without a file the branch says so and the store warns it is empty."""
    written = {
        str(n.config.get("collection"))
        for n in flow.nodes
        if n.type == roles.OFFLINE_STORE and any(e.target == n.id and e.target_port == "documents" for e in flow.edges)
    }
    for node_id in swapped:
        spec = flow.node(node_id)
        if spec.type != roles.OFFLINE_STORE or str(spec.config.get("collection")) in written:
            continue
        searched = any(e.target == spec.id and e.target_port == "query" for e in flow.edges) or any(
            e.source == spec.id and e.source_port in ("store", "hits") for e in flow.edges
        )  # asked directly, or through a retriever or an agent's search tool
        if not searched:
            continue
        written.add(str(spec.config.get("collection")))
        pos = flow.position(spec.id)
        parts = (("file", roles.FILE_INPUT, "File to index"), ("loader", roles.LOADER, "Load file"),
                 ("splitter", roles.SPLITTER, "Split"))  # fmt: skip
        ids: list[str] = []
        for offset, (suffix, type_name, label) in enumerate(parts):
            new_id = f"{spec.id}-{suffix}"
            while flow.find_node(new_id) is not None:
                new_id += "-1"
            flow.nodes.append(NodeSpec(id=new_id, type=type_name, name=f"{label} (added)"))
            flow.layout.positions[new_id] = type(pos)(x=pos.x - 960 + 320 * offset, y=pos.y + 320)
            ids.append(new_id)
        _add(flow, Edge(source=ids[0], source_port="path", target=ids[1], target_port="path"))
        _add(flow, Edge(source=ids[1], source_port="records", target=ids[2], target_port="documents"))
        _add(flow, Edge(source=ids[2], source_port="chunks", target=spec.id, target_port="documents"))
        report.local_swaps.append(
            ParamIssue(
                spec.id,
                "documents",
                f"nothing in the flow fills collection {spec.config.get('collection')!r} (the source filled it "
                f"elsewhere): added {ids[0]} -> {ids[1]} -> {ids[2]}; run with --input {ids[0]}=PATH to fill it",
            )
        )


def chroma_collection(name: str) -> str:
    """The nearest valid Chroma collection name (3+ characters, letters, digits, '.', '_', '-')."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:500] or "flowbuilder"
    return cleaned if len(cleaned) >= 3 else f"{cleaned}_kb"


def _fill_embedders(flow: Flow, report: ImportReport) -> None:
    """A swapped store with no embedder wired (AstraDB's server-side "vectorize", a LangFlow knowledge
    base's own model) gets the offline embedder: the one such a store used, or one added for all."""
    bare = [
        spec for spec in flow.nodes
        if spec.type == roles.OFFLINE_STORE
        and not any(e.target == spec.id and e.target_port == "embedder" for e in flow.edges)
        and any(spec.id in (e.source, e.target) for e in flow.edges)
    ]  # fmt: skip
    if not bare:
        return
    embedder = next((n for n in flow.nodes if n.id == "local-embedder"), None)
    if embedder is None:
        embedder = NodeSpec(id="local-embedder", type=roles.OFFLINE_EMBEDDER, name="Local embedder (added)")
        while flow.find_node(embedder.id) is not None:
            embedder.id += "-1"
        flow.nodes.append(embedder)
        pos = flow.position(bare[0].id)
        flow.layout.positions[embedder.id] = type(pos)(x=pos.x - 320, y=pos.y + 240)
    for spec in bare:
        _add(flow, Edge(source=embedder.id, source_port="embedder", target=spec.id, target_port="embedder"))
        report.local_swaps.append(
            ParamIssue(
                spec.id, "embedder", f"no embedder was wired (the source store embedded by itself): {embedder.id}"
            )
        )


def _collection(spec: NodeSpec, swap: Local, table: Table | None) -> str:
    """The swapped store's collection: the first of the swap's fields set in our config (a mapped node) or
    in the original foreign node (a placeholder, never an expression), else the node's name."""
    if spec.type != PLACEHOLDER:
        return next((str(spec.config[f]) for f in swap.collection if spec.config.get(f)), "flowbuilder")
    original: dict[str, Any] = spec.config.get("original") or {}
    for name in swap.collection:
        value = table.original_param(original, name) if table else None
        if isinstance(value, str) and value and not value.startswith("="):
            return value
    return slugify(spec.name or spec.id, "flowbuilder")


def _n8n_mode(spec: NodeSpec) -> str:
    original: dict[str, Any] = spec.config.get("original") or {}
    return str((original.get("parameters") or {}).get("mode") or "")


def _rewire(flow: Flow, spec: NodeSpec, table: Table | None, mode: str, report: ImportReport) -> None:
    """Move each edge from a placeholder's foreign port names onto the swapped node's real ports."""
    adapter = table.ports_of(spec.type) if table else None
    ins, outs = port_names(spec.type, "in"), port_names(spec.type, "out")
    for edge in list(flow.edges):
        if edge.target == spec.id and edge.target_port not in ins:
            port = adapter.our_input(edge.target_port) if adapter else None
            source = flow.node(edge.source)
            if source.type == roles.FILE_INPUT and spec.type == roles.OFFLINE_STORE:
                flow.edges.remove(edge)  # n8n's trigger -> store(insert): the file goes to the store's loaders
                for loader in _loaders_feeding(flow, spec.id):
                    _add(flow, Edge(source=source.id, source_port="path", target=loader, target_port="path"))
                continue
            if port in ins:
                edge.target_port = port
            else:
                flow.edges.remove(edge)
                report.connections_dropped.append(f"{edge.key}: {spec.type} has no input for {edge.target_port!r}")
        elif edge.source == spec.id and edge.source_port not in outs:
            port = adapter.our_output(edge.source_port) if adapter else None
            if port is None and spec.type == roles.OFFLINE_STORE and edge.source_port in _ROLE_OUTPUTS:
                role = _role_node(flow, spec, getattr(roles, _ROLE_OUTPUTS[edge.source_port]))
                edge.source = role.id
                edge.source_port = "tool" if role.type == roles.TOOL else "retriever"
                continue
            if port in outs:
                edge.source_port = port
            else:
                flow.edges.remove(edge)
                report.connections_dropped.append(f"{edge.key}: {spec.type} has no output for {edge.source_port!r}")
    if mode in ("retrieve-as-tool", "load"):
        _role_node(flow, spec, roles.TOOL if mode == "retrieve-as-tool" else roles.RETRIEVER)


def _role_node(flow: Flow, spec: NodeSpec, type_name: str) -> NodeSpec:
    """The retriever or tool node that carries an n8n store's mode (made once)."""
    suffix = "tool" if type_name == roles.TOOL else "retriever"
    node_id = f"{spec.id}-{suffix}"
    found = flow.find_node(node_id)
    if found is not None:
        return found
    config: dict[str, Any] = {"name": slugify(spec.name or spec.id).replace("-", "_")} if suffix == "tool" else {}
    role = NodeSpec(id=node_id, type=type_name, name=f"{spec.name} ({suffix})", config=config)
    flow.nodes.append(role)
    pos = flow.position(spec.id)
    flow.layout.positions[node_id] = type(pos)(x=pos.x, y=pos.y + 160)
    _add(flow, Edge(source=spec.id, source_port="store", target=node_id, target_port="store"))
    return role


def _loaders_feeding(flow: Flow, node_id: str) -> list[str]:
    found: list[str] = []
    frontier, seen = [node_id], {node_id}
    while frontier:
        current = frontier.pop()
        for edge in flow.edges:
            if edge.target != current or edge.source in seen:
                continue
            seen.add(edge.source)
            if flow.node(edge.source).type == roles.LOADER:
                found.append(edge.source)
            else:
                frontier.append(edge.source)
    return found


def _add(flow: Flow, edge: Edge) -> None:
    if all(e.key != edge.key for e in flow.edges):
        flow.edges.append(edge)
