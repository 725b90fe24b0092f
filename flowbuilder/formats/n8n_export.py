"""Flowbuilder flows -> n8n workflow JSON, by walking :data:`n8n_table.N8N_TABLE`.

Structural cases: a store's retriever/tool consumers become modes of the store's n8n node (or n8n's
retriever/tool sub-nodes when the store cannot take a mode); a loader -> splitter -> store path becomes
n8n's inverted ``ai_textSplitter`` / ``ai_document`` links; a RAG path becomes a Q&A chain (n8n_chain.py);
a reranker after a load-mode retriever becomes ``useReranker`` + ``ai_reranker``.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from typing import Any

from flowbuilder.flow import Edge, Flow, NodeSpec, Note
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import Adapter, credential_slot, set_path, write_params
from flowbuilder.formats.mapping import PLACEHOLDER, slugify
from flowbuilder.formats.n8n_chain import Chain, find_chains
from flowbuilder.formats.n8n_table import (
    GENERIC_AUTH,
    MCP_SERVER_TRIGGER,
    MCP_SERVER_VERSIONS,
    N8N_TABLE,
    PROVIDER_CREDENTIALS,
    STICKY,
)

_UUID_NS = uuid.UUID("5f0c7a4e-4a43-4c2e-9a59-3b1f3e8a7c11")


class N8nExporter:
    """One Flowbuilder flow written as an n8n workflow: nodes (with store modes and chains), then connections."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.warnings: list[str] = []
        self.nodes: list[dict[str, Any]] = []
        self.names: dict[str, str] = {}
        """Flowbuilder node id -> the n8n node name that carries it."""
        self.store_nodes: dict[str, list[str]] = {}
        """Store id -> names of every n8n node made from it (one per role)."""
        self.insert_node: dict[str, str] = {}
        self.role_nodes: set[str] = set()
        self.chain_edges: set[str] = set()
        self.labelled: set[str] = set()
        """Connections of row labellers folded into the data loader (see _fold_labellers)."""
        self.bridged: list[Edge] = []
        self.rerank_after: dict[str, str] = {}
        """Reranker id -> the n8n store node (load mode) it reranks inside."""
        """Edges a Q&A chain stands for (see n8n_chain.py)."""
        """Retrievers/tools exported as their own n8n sub-node (fed by ai_vectorStore)."""
        self.taken: set[str] = set()
        self.connections: dict[str, dict[str, list[list[dict[str, Any]]]]] = {}

    def _name(self, spec_name: str) -> str:
        base = spec_name.strip() or "Node"
        name, index = base, 1
        while name in self.taken:
            name = f"{base}{index}"
            index += 1
        self.taken.add(name)
        return name

    def _node(
        self, spec: NodeSpec, n8n_type: str, version: float, params: dict[str, Any], name: str | None = None
    ) -> str:
        name = name or self._name(spec.name or spec.id)
        pos = self.flow.position(spec.id)
        node: dict[str, Any] = {
            "parameters": params,
            "type": n8n_type,
            "typeVersion": version,
            "position": [round(pos.x), round(pos.y)],
            "id": str(uuid.uuid5(_UUID_NS, f"{self.flow.name}/{spec.id}/{name}")),
            "name": name,
        }
        if n8n_type.endswith(("formTrigger", "chatTrigger")):
            node["webhookId"] = str(uuid.uuid5(_UUID_NS, f"webhook/{self.flow.name}/{spec.id}"))
        slot = credential_slot(spec.type)
        ref = spec.credentials.get(slot.name) if slot else None
        if slot is not None and slot.provider in PROVIDER_CREDENTIALS and (ref is not None or slot.required):
            cred_name = ref.name if ref else "default"
            cred_type = PROVIDER_CREDENTIALS[slot.provider]
            node["credentials"] = {cred_type: {"id": None, "name": cred_name}}
            if cred_type in GENERIC_AUTH:  # n8n uses a generic credential only when the node says so
                node["parameters"].update(authentication="genericCredentialType", genericAuthType=cred_type)
        if spec.disabled:
            node["disabled"] = True
        self.nodes.append(node)
        return name

    def _edges(self) -> list[Edge]:
        return [e for e in self.flow.edges if e.key not in self.chain_edges and e.key not in self.labelled] + (
            self.bridged
        )

    def _fold_labellers(self) -> set[str]:
        """A row labeller between a file loader and a splitter has no n8n node: n8n's data loader reads a
        CSV row as "column: value" lines. Its connections are bridged, and the report gives the Edit Fields
        expression (JSON-mode loader) that writes the template's exact text."""
        folded: set[str] = set()
        for spec in self.flow.nodes:
            into = [e for e in self.flow.edges if e.target == spec.id]
            out = [e for e in self.flow.edges if e.source == spec.id]
            if spec.type != roles.LABELLER or not into or not out:
                continue
            if not all(self.flow.node(e.source).type == roles.LOADER for e in into):
                continue
            folded.add(spec.id)
            self.labelled |= {e.key for e in into + out}
            self.bridged += [
                Edge(source=a.source, source_port=a.source_port, target=b.target, target_port=b.target_port)
                for a in into
                for b in out
            ]
            template = str(spec.config.get("template") or "")
            expression = (
                "=" + re.sub(r"\{([^{}]+)\}", lambda m: "{{ $json[" + json.dumps(m.group(1)) + "] }}", template)
                if template
                else "={{ Object.entries($json).map(([k, v]) => k + ': ' + v).join('\\n') }}"
            )
            self.warnings.append(
                f"{spec.id}: row labeller exported as n8n's data loader, which writes each CSV row as "
                "'column: value' lines (every column); for the template's exact text, add Edit Fields "
                f"with text = {expression} and set the loader to JSON mode reading {{{{ $json.text }}}}"
            )
        return folded

    def _incoming(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self._edges() if e.target == node_id and (port is None or e.target_port == port)]

    def _outgoing(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self._edges() if e.source == node_id and (port is None or e.source_port == port)]

    def run(self) -> dict[str, Any]:
        self.rerank_after = {
            e.target: ""
            for e in self.flow.edges
            if e.source_port == "hits"
            and e.target_port == "hits"
            and roles.reranks(self.flow.node(e.target).type)
            and self.flow.node(e.source).type == roles.RETRIEVER
        }
        chains = find_chains(self.flow)
        folded = {n.id for chain in chains for n in (chain.prompt, *chain.folded)}
        self.chain_edges = {key for chain in chains for key in chain.edges}
        folded |= self._fold_labellers()
        for note in self.flow.notes:
            self._export_note(note)
        for spec in self.flow.nodes:
            if spec.type not in roles.store_roles() and spec.id not in folded:
                self._export_node(spec)
        for spec in self.flow.nodes:
            if spec.type in roles.store_roles() and spec.id not in self.names and spec.id not in folded:
                self._export_role(spec)
        for chain in chains:
            self._export_chain(chain)
        for edge in self._edges():
            self._export_edge(edge)
        self._export_serving()
        return {
            "name": self.flow.name,
            "nodes": self.nodes,
            "pinData": {},
            "connections": self.connections,
            "active": False,
            "settings": {"executionOrder": "v1"},
            "meta": {"generatedBy": "flowbuilder"},
            "tags": [],
        }

    def _export_serving(self) -> None:
        """A served flow (its ``meta["mcp"]`` settings) as n8n's MCP Server Trigger, fed by every search tool."""
        mcp = self.flow.meta.get("mcp")
        if not isinstance(mcp, dict):
            return
        found = mcp.get("n8n_trigger")
        trigger: dict[str, Any] = found if isinstance(found, dict) else {}
        tools = [t for t in trigger.get("tools", []) if isinstance(t, str)] or [
            n.id for n in self.flow.nodes if n.type == roles.TOOL
        ]
        names = [self.names[t] for t in tools if t in self.names]
        if not names:
            self.warnings.append("serving: no search tool was exported, so no MCP Server Trigger is written")
            return
        path = str(trigger.get("path") or "") or slugify(self.flow.name, "flowbuilder")
        name = self._name(str(trigger.get("name") or "MCP Server Trigger"))
        xs = [n["position"][0] for n in self.nodes] or [0]
        self.nodes.append(
            {
                "parameters": {"path": path},
                "type": MCP_SERVER_TRIGGER,
                "typeVersion": MCP_SERVER_VERSIONS[-1],
                "position": [max(xs) + 300, 0],
                "id": str(uuid.uuid5(_UUID_NS, f"{self.flow.name}/mcp-server-trigger")),
                "name": name,
                "webhookId": str(uuid.uuid5(_UUID_NS, f"webhook/{self.flow.name}/mcp")),
            }
        )
        for tool in names:
            self._link(tool, "ai_tool", name)
        self.warnings.append(
            f"serving: written as n8n's MCP Server Trigger {name!r} (path {path!r}) with {len(names)} tool(s)"
        )

    def _export_note(self, note: Note) -> None:
        pos = self.flow.position(note.id)
        params: dict[str, Any] = {"content": note.text}
        if note.height is not None:
            params["height"] = note.height
        if note.width is not None:
            params["width"] = note.width
        if note.color is not None:
            params["color"] = int(note.color) if note.color.isdigit() else note.color
        name = self._name(note.id.replace("-", " ").title() if note.id.startswith("sticky") else note.id)
        self.nodes.append(
            {
                "parameters": params,
                "type": STICKY,
                "position": [round(pos.x), round(pos.y)],
                "typeVersion": 1,
                "id": str(uuid.uuid5(_UUID_NS, f"{self.flow.name}/note/{note.id}")),
                "name": name,
            }
        )

    def _params(self, adapter: Adapter, spec: NodeSpec) -> dict[str, Any]:
        params: dict[str, Any] = copy.deepcopy(dict(adapter.fixed))
        for param, value in write_params(adapter, spec.config):
            set_path(params, param.theirs, value)
        return params

    def _export_node(self, spec: NodeSpec) -> None:
        if spec.type == PLACEHOLDER:
            self._export_placeholder(spec)
            return
        webhooks = (self.flow.meta.get("source") or {}).get("webhooks") or {}
        # an imported webhook entry or answer goes back as what it was (the entries with those hooks)
        hook = "webhook" if spec.id in (webhooks.get("entry") or {}) else ""
        hook = "respond" if spec.id in (webhooks.get("answer") or []) else hook
        adapter = N8N_TABLE.hooked(hook, spec.type) if hook else None
        adapter = adapter or N8N_TABLE.exporter(spec.type)
        if adapter is None:
            entry = N8N_TABLE.ports_of(spec.type)
            note = entry.extra.get("unexported", "no n8n node") if entry else "no n8n node"
            self.warnings.append(f"{spec.id}: {note} for {spec.type}; left out")
            return
        named = isinstance(adapter.hook, str) and adapter.hook
        write = getattr(self, f"_write_{adapter.hook}", None) if named else None
        if write is not None:
            write(spec, adapter)
            return
        self._write(spec, adapter, self._params(adapter, spec))

    def _write(self, spec: NodeSpec, adapter: Adapter, params: dict[str, Any]) -> None:
        if adapter.note and adapter.export:
            self.warnings.append(f"{spec.id}: {adapter.note}")
        self.names[spec.id] = self._node(spec, adapter.theirs, adapter.version, params)

    # -- export hooks (the entry's ``hook``) --------------------------------------------------------
    def _write_webhook(self, spec: NodeSpec, adapter: Adapter) -> None:
        entry = self.flow.meta["source"]["webhooks"]["entry"][spec.id]
        hook: dict[str, Any] = {
            "httpMethod": entry.get("httpMethod") or "POST",
            "path": entry.get("path") or spec.id,
            "responseMode": "responseNode",
            "options": {},
        }
        self._write(spec, adapter, hook)

    def _write_respond(self, spec: NodeSpec, adapter: Adapter) -> None:
        self._write(spec, adapter, {"respondWith": "firstIncomingItem", "options": {}})

    def _write_form(self, spec: NodeSpec, adapter: Adapter) -> None:
        fields = {"values": [{"fieldLabel": "File", "fieldType": "file", "fieldName": "files"}]}
        self._write(spec, adapter, {"formTitle": spec.name or "Upload a file", "formFields": fields, "options": {}})

    def _write_loader(self, spec: NodeSpec, adapter: Adapter) -> None:
        params = {"dataType": "binary", **self._params(adapter, spec)}
        if self._splitters_after(spec.id):
            params["textSplittingMode"] = "custom"
        else:
            self.warnings.append(
                f"{spec.id}: no splitter wired; n8n's loader will split with its built-in 1000/200 splitter"
            )
        if spec.config.get("path"):
            self.warnings.append(
                f"{spec.id}: path {spec.config['path']!r} not exported; n8n loads the file given to the form"
            )
        self._write(spec, adapter, params)

    def _splitters_after(self, node_id: str) -> list[Edge]:
        return [
            e
            for e in self._outgoing(node_id, "records")
            if roles.splits(self.flow.node(e.target).type) or self.flow.node(e.target).type == PLACEHOLDER
        ]

    def _export_placeholder(self, spec: NodeSpec) -> None:
        c = spec.config
        original = c.get("original") if c.get("source_format") == "n8n" else None
        if not isinstance(original, dict):
            self.warnings.append(
                f"{spec.id}: placeholder for {c.get('source_format')} type {c.get('original_type')!r} "
                "has no n8n form; left out"
            )
            return
        node = copy.deepcopy(original)
        node["name"] = self._name(str(node.get("name") or spec.name or spec.id))
        pos = self.flow.position(spec.id)
        node["position"] = [round(pos.x), round(pos.y)]
        if spec.disabled:
            node["disabled"] = True
        self.nodes.append(node)
        self.names[spec.id] = node["name"]

    def _export_chain(self, chain: Chain) -> None:
        """chat -> store -> [parser] -> prompt -> model -> [output] as n8n's Q&A chain over a retriever."""
        adapter = N8N_TABLE.exporter(chain.store.type)
        if adapter is None or chain.store.id not in self.names or chain.llm.id not in self.names:
            self.warnings.append(f"{chain.prompt.id}: its retrieval path has no n8n form; left out")
            return
        store_name = self.names[chain.store.id]
        if self.insert_node.get(chain.store.id) == store_name and self._incoming(chain.store.id, "documents"):
            # One node that ingests and searches (LangFlow's naive flow): n8n needs a second, retrieving one.
            params = {"mode": "retrieve", **self._params(adapter, chain.store)}
            store_name = self._node(chain.store, adapter.theirs, adapter.version, params,
                                    self._name(f"{chain.store.name or chain.store.id} (retrieve)"))  # fmt: skip
            self.store_nodes.setdefault(chain.store.id, []).append(store_name)
        retriever = N8N_TABLE.ports_of(roles.RETRIEVER)
        assert retriever is not None
        spec = NodeSpec(id=f"{chain.store.id}-retriever", type=roles.RETRIEVER, name=f"{chain.store.name} retriever",
                        config={"k": chain.k})  # fmt: skip
        self.flow.layout.positions.setdefault(spec.id, self.flow.position(chain.store.id))
        retriever_name = self._node(spec, retriever.theirs, retriever.version, self._params(retriever, spec))
        params = {
            "promptType": "auto",
            "text": "={{ $json.chatInput }}",
            "options": {"systemPromptTemplate": chain.system_prompt()},
        }
        qa = N8N_TABLE.hooked("chain", chain.prompt.type)  # the entry that imports n8n's Q&A chain
        assert qa is not None
        chain_name = self._node(chain.prompt, qa.theirs, qa.version, params)
        self._link(store_name, "ai_vectorStore", retriever_name)
        self._link(retriever_name, "ai_retriever", chain_name)
        self._link(self.names[chain.llm.id], "ai_languageModel", chain_name)
        if chain.chat.id in self.names:
            self._link(self.names[chain.chat.id], "main", chain_name)
        self.warnings.append(
            f"{chain.prompt.id}: kept as n8n's Question and Answer Chain: the template is its system prompt "
            f"({{{chain.context_var}}} -> {{context}}; {{{chain.question_var}}} is the chat message)"
        )
        for node in chain.folded:
            what = {
                roles.STRINGIFY: "n8n's chain joins the retrieved documents itself",
                roles.RETRIEVER: "n8n's Vector Store Retriever carries it",
            }.get(node.type, "n8n answers in the chat" if roles.is_answer_output(node.type) else "carried by the chain")
            self.warnings.append(f"{node.id}: {what}")

    def _export_role(self, spec: NodeSpec) -> None:
        """A retriever or tool on a store n8n cannot put into a mode (a placeholder, or a retriever wired
        as a retriever): n8n's own sub-node (toolVectorStore / retrieverVectorStore)."""
        stores = [e.source for e in self._incoming(spec.id, "store") if e.source in self.names]
        adapter = N8N_TABLE.ports_of(spec.type)
        if not stores or adapter is None:
            self.warnings.append(f"{spec.id}: a {spec.type} without a vector store has no n8n form; left out")
            return
        self.names[spec.id] = self._node(spec, adapter.theirs, adapter.version, self._params(adapter, spec))
        self.role_nodes.add(spec.id)

    def _as_mode(self, consumer: NodeSpec) -> bool:
        """Whether a retriever/tool is written as a mode of its store's n8n node."""
        if consumer.type == roles.RETRIEVER:
            return not self._outgoing(consumer.id, "retriever")  # n8n's load mode only answers on main
        return True

    def _write_store(self, spec: NodeSpec, adapter: Adapter) -> None:
        base = self._params(adapter, spec)
        consumers = [self.flow.node(e.target) for e in self._outgoing(spec.id, "store")]
        consumers = [n for n in consumers if n.type in roles.store_roles() and self._as_mode(n)]
        has_docs = bool(self._incoming(spec.id, "documents"))
        names: list[str] = []
        if has_docs or not consumers:
            mode = "insert" if has_docs else "load" if self._incoming(spec.id, "query") else "retrieve"
            params = {"mode": mode, **copy.deepcopy(base)}
            if mode == "load" and spec.config.get("k", 4) != 4:
                params["topK"] = spec.config.get("k", 4)
            name = self._node(spec, adapter.theirs, adapter.version, params)
            self.names[spec.id] = name
            self.insert_node[spec.id] = name
            names.append(name)
        for consumer in consumers:
            params = {"mode": "retrieve-as-tool" if consumer.type == roles.TOOL else "load"}
            if consumer.type == roles.TOOL:
                params["toolDescription"] = consumer.config.get(
                    "description", "Search the knowledge base and return the most relevant passages."
                )
            params.update(copy.deepcopy(base))
            if consumer.config.get("k", 4) != 4:
                params["topK"] = consumer.config.get("k", 4)
            rerankers = [e.target for e in self._outgoing(consumer.id, "hits") if e.target in self.rerank_after]
            if rerankers:
                params["useReranker"] = True  # n8n reranks inside the load-mode search
            label = spec.name if not names else consumer.name or consumer.id
            name = self._node(spec, adapter.theirs, adapter.version, params, self._name(label))
            self.names[consumer.id] = name
            self.names.setdefault(spec.id, name)
            names.append(name)
            for reranker in rerankers:
                self.rerank_after[reranker] = name
        self.store_nodes[spec.id] = names

    def _link(self, source: str, conn_type: str, target: str) -> None:
        groups = self.connections.setdefault(source, {}).setdefault(conn_type, [[]])
        link = {"node": target, "type": conn_type, "index": 0}
        if link not in groups[0]:
            groups[0].append(link)

    def _export_edge(self, edge: Edge) -> None:
        source, target = self.flow.find_node(edge.source), self.flow.find_node(edge.target)
        if source is None or target is None:
            return
        if target.type in roles.store_roles() and edge.target_port == "store":
            if target.id in self.role_nodes and source.id in self.names:
                self._link(self.names[source.id], "ai_vectorStore", self.names[target.id])
            return  # otherwise merged into the store's n8n node as a mode
        src_name, tgt_name = self.names.get(source.id), self.names.get(target.id)
        if src_name is None or tgt_name is None:
            self.warnings.append(f"connection {edge.key}: an end was left out of the n8n export")
            return
        if source.type == PLACEHOLDER and edge.source_port.startswith(("ai_", "main")):
            self._link(src_name, edge.source_port, self.insert_node.get(target.id, tgt_name))
            return
        if target.type == PLACEHOLDER and edge.target_port == "ai_document" and source.type != roles.LOADER:
            # Documents reach an n8n store only from a data loader: link the loader that feeds this
            # splitter, never the splitter itself (n8n rejects a splitter on an ai_document port).
            for loader in self._loaders_before(source.id):
                self._link(self.names[loader], "ai_document", tgt_name)
            return
        if target.type == PLACEHOLDER and edge.target_port.startswith(("ai_", "main")):
            self._link(src_name, edge.target_port, tgt_name)
            return
        if target.id in self.rerank_after and edge.target_port in ("hits", "query"):
            if self.rerank_after[target.id]:
                self._link(tgt_name, "ai_reranker", self.rerank_after[target.id])
            return  # n8n's reranker sits inside the store's search: its inputs are the store's
        reranked = bool(self.rerank_after.get(source.id))
        if reranked:
            src_name = self.rerank_after[source.id]  # the reranked hits come out of the load-mode store node
        port = edge.target_port
        if (port == "documents" and roles.splits(target.type)) or (target.type == PLACEHOLDER and port == "documents"):
            self._link(tgt_name, "ai_textSplitter", src_name)  # sub-node -> root: splitter into the loader
            return
        if port == "documents" and target.id in self.store_nodes:
            loaders = [source.id] if source.type == roles.LOADER else self._loaders_before(source.id)
            if not loaders:
                self.warnings.append(f"connection {edge.key}: n8n needs a data loader in front of the splitter")
            for loader_id in loaders:
                self._link(self.names[loader_id], "ai_document", self.insert_node.get(target.id, tgt_name))
            return
        if source.type == roles.FILE_INPUT and target.type == roles.LOADER:
            for store in self._stores_fed_by(target.id):
                self._link(src_name, "main", self.insert_node.get(store, self.names[store]))
            return
        src_adapter, tgt_adapter = N8N_TABLE.ports_of(source.type), N8N_TABLE.ports_of(target.type)
        out_type = "main" if reranked else src_adapter.outputs.get(edge.source_port) if src_adapter else None
        in_type = tgt_adapter.inputs.get(port) if tgt_adapter else None
        if out_type is not None and out_type == in_type:
            for name in self.store_nodes.get(target.id, [tgt_name]) if out_type == "ai_embedding" else [tgt_name]:
                self._link(src_name, out_type, name)
            return
        if out_type == "main" and in_type is None and port in ("message", "query", "prompt"):
            self._link(src_name, "main", tgt_name)
            return
        self.warnings.append(f"connection {edge.key}: no n8n connection type for it; left out")

    def _loaders_before(self, node_id: str) -> list[str]:
        """The exported data loaders whose documents reach ``node_id`` (through splitters)."""
        found: list[str] = []
        for edge in self._incoming(node_id, "documents"):
            feeder = self.flow.node(edge.source)
            if feeder.type == roles.LOADER and feeder.id in self.names:
                found.append(feeder.id)
            elif roles.splits(feeder.type) or feeder.type == roles.LABELLER:
                found += self._loaders_before(feeder.id)
        return found

    def _stores_fed_by(self, loader_id: str) -> list[str]:
        found: list[str] = []
        frontier = [loader_id]
        while frontier:
            node_id = frontier.pop()
            for edge in self._outgoing(node_id):
                target = self.flow.node(edge.target)
                if target.id in self.store_nodes and edge.target_port == "documents":
                    found.append(target.id)
                elif edge.target_port == "documents":
                    frontier.append(target.id)
        return found


def export_n8n(flow: Flow) -> tuple[dict[str, Any], list[str]]:
    """An n8n workflow JSON for ``flow``, and warnings for what n8n cannot express."""
    exporter = N8nExporter(flow)
    data = exporter.run()
    return data, exporter.warnings
