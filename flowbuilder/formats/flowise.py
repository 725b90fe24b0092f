"""Flowise chatflow JSON -> Flowbuilder flows, by walking :data:`flowise_table.FLOWISE_TABLE`.

A Flowise chatflow is a *pull* graph: the ending node (a chain or an agent) is given the chat message and
asks its retriever, which asks its store; a loader calls its text splitter. Ours pushes: a chat input
feeds the store's query, the store's hits feed a prompt, the prompt a model, the model a chat output.
So the engine reads every node through its entry, wires the edges through the entries' port names, and
then makes the pull links explicit: the question goes to each store or retriever a chain or reranker
pulls from (:meth:`FlowiseImporter._hits_of`), a loader's records go through the splitter it calls, and
the chat window Flowise leaves implicit becomes a chat input and a chat output (report lines say so).

Agentflow v2 files (``agentFlow`` nodes) are read by :mod:`flowbuilder.formats.flowise_agentflow`.

Structural hooks (what no table row can say): ``loader`` (the uploaded file's name), ``url`` (pages to
fetch), ``store`` (a store with no collection name is named after its node), ``prompt`` (Flowise's
``{{var}}`` spelling and prompt values), ``qa`` (a retrieval chain: prompt + the model it is given),
``chain`` (an LLM chain folded into its prompt and model), ``agent`` (the question and the answer).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from flowbuilder.errors import FlowFileError
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import Adapter, credential_slot, node_class, read_params, to_float
from flowbuilder.formats.flowise_agentflow import AgentflowImporter, is_agentflow
from flowbuilder.formats.flowise_table import CHAT_IN, CHAT_OUT, CREDENTIAL_PROVIDERS, FLOWISE_TABLE, PROMPT, STICKY
from flowbuilder.formats.mapping import (
    PLACEHOLDER,
    IdAllocator,
    find_secrets,
    placeholder_config,
    remember_secret,
    scrub,
    slugify,
)
from flowbuilder.formats.report import CredentialFound, ImportReport, NodeOutcome
from flowbuilder.ports import PortType, compatible
from flowbuilder.trust.providers import CredentialRef

_NODE_REF = re.compile(r"^\{\{\s*([^{}.\s]+)\.data\.instance\s*\}\}$")
_UPLOAD_NAME = re.compile(r",filename:([^,;]+)")


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def is_node_ref(value: Any) -> bool:
    """A Flowise input that names another node (``{{chatOpenAI_0.data.instance}}``), or a list of them."""
    if isinstance(value, list):
        return bool(value) and all(is_node_ref(v) for v in value)
    return isinstance(value, str) and _NODE_REF.match(value.strip()) is not None


def handle_name(handle: Any, node_id: str, side: str) -> str | None:
    """The anchor name in ``<id>-input-<name>-<type>`` / ``<id>-output-<name>-<types>``."""
    if not isinstance(handle, str):
        return None
    prefix = f"{node_id}-{side}-"
    rest = handle[len(prefix) :] if handle.startswith(prefix) else None
    if rest is None:
        found = re.search(rf"-{side}-([A-Za-z0-9_]+)", handle)
        return found.group(1) if found else None
    return rest.split("-", 1)[0] or None


def uploaded_names(value: Any) -> list[str]:
    """File names of a Flowise upload field: ``data:...;base64,...,filename:a.pdf`` (one or a JSON list of
    them) or ``FILE-STORAGE::["a.pdf"]``; the content itself is never kept."""
    if isinstance(value, list):
        return [n for v in value for n in uploaded_names(v)]
    if not isinstance(value, str) or not value.strip():
        return []
    text = value.strip()
    if text.startswith("FILE-STORAGE::"):
        return [n for n in re.findall(r'"([^"]+)"', text[len("FILE-STORAGE::") :]) if n]
    names = _UPLOAD_NAME.findall(text)
    if names:
        return [n.strip() for n in names]
    return [] if text.startswith("data:") else [re.split(r"[\\/]", text)[-1]]


@dataclass
class _Link:
    source: str
    output: str
    target: str
    input: str


@dataclass
class _Mapped:
    """What one Flowise node became."""

    node_id: str
    name: str
    adapter: Adapter | None
    spec: NodeSpec | None
    """None: folded into its neighbours (an LLM chain)."""
    pulls: dict[str, str] = field(default_factory=dict)
    """Our input port -> the Flowise node it pulls hits from (resolved once every edge is read)."""
    parts: dict[str, str] = field(default_factory=dict)
    """A chain's model, prompt and memory sources: role -> Flowise node id."""
    links: list[_Link] = field(default_factory=list)
    """Every link into a folded node (a worker's tools go on to its supervisor)."""


class FlowiseImporter:
    """One Flowise chatflow read into a Flowbuilder flow: the table walk, Flowise's pull links turned into pushes, and
    the report."""

    def __init__(self, data: dict[str, Any], origin: str, report: ImportReport) -> None:
        self.data = data
        self.origin = origin
        self.report = report
        self.secrets: set[str] = set()
        self.ids = IdAllocator()
        name = data.get("name") or PurePath(origin).stem or "Imported Flowise chatflow"
        self.flow = Flow(name=str(name)[:200], description=str(data.get("description") or ""))
        self.nodes: dict[str, dict[str, Any]] = {}
        self.mapped: dict[str, _Mapped] = {}
        self.outcomes: dict[str, NodeOutcome] = {}
        self.splitter_of: dict[str, str] = {}
        """Loader node id -> the splitter node id it calls (Flowise's ``textSplitter`` input)."""
        self.chat_id = ""
        self.answered: set[str] = set()

    # -- the phases -----------------------------------------------------------------------------
    def run(self) -> Flow:
        nodes, edges = self.data.get("nodes"), self.data.get("edges")
        if not isinstance(nodes, list) or not isinstance(edges, list):
            raise FlowFileError(self.origin, 'a Flowise chatflow needs "nodes" and "edges" lists')
        for index, node in enumerate(nodes):
            problem = _node_problem(node)
            if problem:
                raise FlowFileError(self.origin, f"Flowise node #{index + 1} {problem}")
            if node["id"] in self.nodes:
                raise FlowFileError(self.origin, f"Flowise node id {node['id']!r} is used twice")
            self.nodes[node["id"]] = node
        if is_agentflow(self.data):
            agentflow = AgentflowImporter(self.data, self.origin, self.report)
            flow = agentflow.run(nodes, [e for e in edges if isinstance(e, dict)])
            self.secrets |= agentflow.secrets
            return flow
        links = [link for link in (self._link(e, i) for i, e in enumerate(edges)) if link is not None]
        for link in links:
            if link.input == "textSplitter":
                self.splitter_of[link.target] = link.source
        for node in nodes:
            self._import_node(node)
        for link in links:
            self._connect(link)
        self._finish()
        self.flow.meta["source"] = {
            "format": "flowise",
            "name": self.data.get("name"),
            "node_ids": {m.spec.id: i for i, m in self.mapped.items() if m.spec is not None},
            "node_names": {m.spec.id: m.name for m in self.mapped.values() if m.spec is not None},
        }
        self.report.flow_name = self.flow.name
        return self.flow

    def _link(self, edge: Any, index: int) -> _Link | None:
        if not isinstance(edge, dict):
            raise FlowFileError(self.origin, f"Flowise edge #{index + 1} is not an object")
        source, target = edge.get("source"), edge.get("target")
        if not isinstance(source, str) or not isinstance(target, str):
            self.report.connections_dropped.append(f"edge #{index + 1}: no source or target node")
            return None
        for end in (source, target):
            if end not in self.nodes:
                self.report.connections_dropped.append(f"edge #{index + 1}: no node with id {end!r}")
                return None
        output = handle_name(edge.get("sourceHandle"), source, "output") or self._name(source)
        inp = handle_name(edge.get("targetHandle"), target, "input") or self._input_naming(target, source)
        if not inp:
            self.report.connections_dropped.append(f"{source} -> {target}: the target input is not named")
            return None
        return _Link(source, output, target, inp)

    def _name(self, node_id: str) -> str:
        return str(self.nodes[node_id]["data"].get("name") or "")

    def _input_naming(self, target: str, source: str) -> str:
        """Which input of ``target`` holds ``{{source.data.instance}}`` (an edge with a malformed handle)."""
        for key, value in _obj(self.nodes[target]["data"].get("inputs")).items():
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and f"{{{{{source}.data.instance}}}}" in v.replace(" ", "") for v in values):
                return str(key)
        return ""

    # -- nodes ----------------------------------------------------------------------------------
    def _import_node(self, node: dict[str, Any]) -> None:
        data = node["data"]
        name = str(data.get("name") or data.get("type") or "")
        inputs = _obj(data.get("inputs"))
        outcome = self.report.node(node["id"], name)
        self.outcomes[node["id"]] = outcome
        for path, value, reason in find_secrets(inputs):
            remember_secret(self.secrets, value)
            self.report.secret(node["id"], f"inputs.{path}", reason)
        pos = _position(node)
        if name in STICKY or node.get("type") == "stickyNote":
            note_id = self.ids.take(_safe_id(node["id"]))
            self.flow.notes.append(
                Note(
                    id=note_id,
                    text=str(inputs.get("note") or ""),
                    width=to_float(node.get("width")),
                    height=to_float(node.get("height")),
                )
            )
            self.flow.layout.positions[note_id] = pos
            self.report.notes += 1
            outcome.note = f"note '{note_id}'"
            return
        adapter = FLOWISE_TABLE.importer(name)
        used: set[str] = set()
        spec: NodeSpec | None = None
        folded = False
        if adapter is not None:
            used |= {*adapter.ignore, *adapter.inputs.values(), *adapter.in_aliases}
            if adapter.hook:
                result = getattr(self, f"_hook_{adapter.hook}")(node, inputs, adapter, used)
                folded = result is None and adapter.hook == "chain"
                spec = result
            else:
                spec = self._spec(node, adapter.ours, self._config(node, inputs, adapter, used))
        if spec is None and not folded:
            adapter = None
            spec = self._placeholder(node, name)
        elif spec is not None:
            self._report_unused(node["id"], inputs, used)
            if adapter is not None and adapter.note:
                self.report.warnings.append(f"{node['id']}: {adapter.note}")
                outcome.note = adapter.note
        mapped = _Mapped(node["id"], name, adapter, spec)
        self.mapped[node["id"]] = mapped
        if spec is None:
            return
        if spec.type != PLACEHOLDER:
            self._credentials(node, spec)
        self.flow.nodes.append(spec)
        self.flow.layout.positions[spec.id] = pos
        outcome.targets.append((spec.id, spec.type))

    def _spec(self, node: dict[str, Any], type_name: str, config: dict[str, Any]) -> NodeSpec:
        label = str(node["data"].get("label") or node["data"].get("name") or node["id"])
        return NodeSpec(id=self.ids.take(_safe_id(node["id"])), type=type_name, name=label, config=config)

    def _config(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> dict[str, Any]:
        def lookup(key: str) -> tuple[str, Any]:
            value = inputs.get(key)
            if value is None or value == "" or is_node_ref(value) or value in self.secrets:
                return "absent", None
            return "set", value

        config, reads = read_params(adapter, lookup)
        for read in reads:
            used.add(read.param.theirs)
            if read.state == "default":
                self.report.default(node["id"], read.param.theirs, read.value, "Flowise default, left empty")
        return config

    def _report_unused(self, node_id: str, inputs: dict[str, Any], used: set[str]) -> None:
        for key, value in inputs.items():
            if key in used or value in (None, "", [], {}, False) or is_node_ref(value) or value in self.secrets:
                continue
            shown = (
                value
                if isinstance(value, int | float | bool) or (isinstance(value, str) and len(value) <= 40)
                else "..."
            )
            self.report.drop(node_id, key, f"{shown!r} not carried")

    def _placeholder(self, node: dict[str, Any], name: str) -> NodeSpec:
        original = scrub(copy.deepcopy(node), self.secrets)
        data = _obj(original.get("data"))
        for key in ("inputParams", "inputAnchors", "outputAnchors"):
            # the node's description is Flowise's own: kept only as far as an export back needs it (names,
            # types and handle ids), not its prose
            data[key] = _compact(data.get(key))
        known = FLOWISE_TABLE.entry(name)
        config = placeholder_config("flowise", name, original, replace=known.replace if known else "")
        outcome = self.outcomes[node["id"]]
        outcome.note = f"replace with {known.replace}" if known and known.replace else "no Flowise mapping"
        credential = node["data"].get("credential")
        if isinstance(credential, str) and credential:
            provider = _credential_provider(node) or (known.provider if known else "") or "flowise"
            self.report.credentials.append(CredentialFound(node["id"], "", provider, _account(credential)))
        label = str(node["data"].get("label") or name)
        return NodeSpec(id=self.ids.take(_safe_id(node["id"])), type=PLACEHOLDER, name=label, config=config)

    def _credentials(self, node: dict[str, Any], spec: NodeSpec) -> None:
        slot = credential_slot(spec.type)
        if slot is None:
            return
        credential = node["data"].get("credential") or _obj(node["data"].get("inputs")).get("credential")
        name = _account(credential) if isinstance(credential, str) and credential else "default"
        spec.credentials[slot.name] = CredentialRef(provider=slot.provider, name=name)
        self.report.credentials.append(CredentialFound(spec.id, slot.name, slot.provider, name, bound=False))

    # -- structural hooks -----------------------------------------------------------------------
    def _hook_loader(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> NodeSpec:
        key = str(adapter.extra["file"])
        names = uploaded_names(inputs.get(key))
        config: dict[str, Any] = {}
        if names:
            config["path"] = names[0]
            self.report.warnings.append(
                f"{node['id']}: uploaded file {names[0]!r} stays in Flowise's storage: put it next to the flow "
                "(or give it as the run's file)"
            )
            for extra in names[1:]:
                self.report.drop(node["id"], key, f"extra file {extra!r} not carried (one file per loader)")
        if adapter.theirs == "csvFile" or (names and names[0].lower().endswith((".csv", ".xlsx", ".json"))):
            config["mode"] = "records"
        return self._spec(node, adapter.ours, config)

    def _hook_url(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> NodeSpec:
        url = str(inputs.get("url") or "").strip()
        urls = [url] if url else []
        if urls:
            self.report.warnings.append(
                f"{node['id']}: fetches {url}: approve its server before a run (validate lists it as "
                "untrusted-endpoint; --allow-endpoint http=ORIGIN or the builder's Approve button)"
            )
        else:
            self.report.warnings.append(f"{node['id']}: a web loader with no URL: set the loader's urls")
        if inputs.get("relativeLinksMethod"):
            self.report.drop(node["id"], "relativeLinksMethod", "links are not followed: only the page itself is read")
        return self._spec(node, adapter.ours, {"urls": urls})

    def _hook_store(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> NodeSpec:
        config = self._config(node, inputs, adapter, used)
        cls = node_class(adapter.ours)
        if cls is not None and "collection" in cls.Config.model_fields and not config.get("collection"):
            config["collection"] = _collection_name(node["id"])
        return self._spec(node, adapter.ours, config)

    def _hook_prompt(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> NodeSpec:
        config = self._config(node, inputs, adapter, used)
        if not config.get("template"):  # a chat prompt: system and human messages
            parts = [_template_text(inputs.get(k)) for k in ("systemMessagePrompt", "humanMessagePrompt")]
            config["template"] = "\n\n".join(p for p in parts if p) or "{question}"
        values = inputs.get("promptValues")
        if isinstance(values, str) and values.strip().startswith("{"):
            self.report.warnings.append(
                f"{node['id']}: prompt values {values.strip()[:80]!r}: a variable given the chat question is fed "
                "by the chat input; others stay empty unless wired"
            )
        return self._spec(node, adapter.ours, config)

    def _hook_qa(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> NodeSpec:
        config = self._config(node, inputs, adapter, used)
        template = str(config.get("template") or "")
        if template and "{context}" not in template:
            template += "\n\nContext:\n{context}"
        if template and "{question}" not in template:
            template += "\n\nQuestion: {question}"  # Flowise sends the question as the human message
        if template:
            config["template"] = template
        if inputs.get("memory"):
            self.report.drop(node["id"], "memory", "the chain's memory rephrases follow-up questions; not carried")
        if inputs.get("rephrasePrompt"):
            used.add("rephrasePrompt")
        return self._spec(node, PROMPT, config)

    def _hook_chain(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> None:
        """An LLM chain or conversation chain: folded. Its prompt feeds its model and the model answers the
        chat (wired in :meth:`_finish`); a system prompt becomes the model's system message."""
        self.outcomes[node["id"]].note = (
            adapter.note or "folded: its prompt feeds its model, whose answer is the chat's"
        )
        return None

    def _hook_agent(self, node: dict[str, Any], inputs: dict[str, Any], adapter: Adapter, used: set[str]) -> NodeSpec:
        return self._spec(node, adapter.ours, self._config(node, inputs, adapter, used))

    # -- connections ----------------------------------------------------------------------------
    def _connect(self, link: _Link) -> None:
        source, target = self.mapped[link.source], self.mapped[link.target]
        if link.input == "textSplitter":
            return  # the loader's records go through this splitter (wired with the loader's output)
        parts = target.adapter.extra.get("parts", ()) if target.adapter else ()
        if target.spec is None or link.input in parts:  # a chain's model, prompt, memory: wired once all are read
            target.parts[link.input] = link.source
            target.links.append(link)
            return
        if source.spec is None:
            self.report.connections_dropped.append(
                f"{link.source}.{link.output} -> {link.target}.{link.input}: a folded chain gives no output here"
            )
            return
        in_port = self._in_port(target, link.input)
        out_port = self._out_port(source, link.output) if in_port is not None else None
        if source.spec.type == PLACEHOLDER and in_port is not None and target.spec.type != PLACEHOLDER:
            out_port = self._swap_port(source, link.output, _port_type(target.spec.type, in_port, "in"))
        if out_port is None or in_port is None:
            missing = f"output {link.output!r}" if out_port is None else f"input {link.input!r}"
            self.report.connections_dropped.append(
                f"{link.source}.{link.output} -> {link.target}.{link.input}: {missing} has no Flowbuilder port"
            )
            return
        if self._tool_wanted(source, out_port, target, in_port):
            return
        if self._pulls(source, out_port, target, in_port):
            target.pulls[in_port] = link.source  # hits asked of a store or retriever with the question
            return
        if source.node_id in self.splitter_of and _port_type(target.spec.type, in_port, "in") != PortType.RECORDS:
            splitter = self.mapped.get(self.splitter_of[source.node_id])
            if splitter is not None and splitter.spec is not None:
                self._edge(source.spec.id, out_port, splitter.spec.id, _first_input(splitter))
                self._edge(splitter.spec.id, self._out_port(splitter, "") or "chunks", target.spec.id, in_port)
                return
        self._edge(source.spec.id, out_port, target.spec.id, in_port)

    def _out_port(self, mapped: _Mapped, name: str) -> str | None:
        spec = mapped.spec
        assert spec is not None
        if spec.type == PLACEHOLDER:
            if name not in spec.config["output_names"]:
                spec.config["output_names"].append(name)
            return name
        adapter = mapped.adapter
        port = adapter.our_output(name) if adapter else None
        if port is None and adapter is not None and len(adapter.outputs) == 1:
            port = next(iter(adapter.outputs))  # a one-output node's anchor is named after the node
        return port

    def _swap_port(self, mapped: _Mapped, name: str, wanted: PortType | None) -> str:
        """A kept node's output named as the port of what --local swaps it for that gives what the target
        takes (Flowise names a one-output node's anchor after the node: ``github``, ``chatAnthropic``)."""
        assert mapped.spec is not None
        entry = FLOWISE_TABLE.entry(mapped.name)
        if entry is None or entry.local is None or wanted is None:
            return name
        ports = [p for p, t in _ports(entry.local.target, "out").items() if compatible(t, wanted)]
        if not ports:
            return name
        names = mapped.spec.config["output_names"]
        if name in names and not any(e.source == mapped.spec.id and e.source_port == name for e in self.flow.edges):
            names.remove(name)
        if ports[0] not in names:
            names.append(ports[0])
        return ports[0]

    def _in_port(self, mapped: _Mapped, name: str) -> str | None:
        spec = mapped.spec
        assert spec is not None
        if spec.type == PLACEHOLDER:
            if name not in spec.config["input_names"]:
                spec.config["input_names"].append(name)
            return name
        return mapped.adapter.our_input(name) if mapped.adapter else None

    def _pulls(self, source: _Mapped, out_port: str, target: _Mapped, in_port: str) -> bool:
        """A store (or retriever) wired where hits are wanted: Flowise asks it with the question."""
        assert source.spec is not None and target.spec is not None
        if source.spec.type == PLACEHOLDER:
            entry = FLOWISE_TABLE.entry(source.name)
            gives_store = bool(entry and entry.gives_hits)
        else:
            gives_store = _port_type(source.spec.type, out_port, "out") in (PortType.VECTOR_STORE, PortType.HITS)
        wanted = _port_type(target.spec.type, in_port, "in")
        return gives_store and wanted not in (PortType.VECTOR_STORE, None) and target.spec.type != PLACEHOLDER

    def _tool_wanted(self, source: _Mapped, out_port: str, target: _Mapped, in_port: str) -> bool:
        """A store wired where an agent wants a tool (a retrieval agent's own retriever): a search tool
        over it (added, with a report line)."""
        assert source.spec is not None and target.spec is not None
        if _port_type(target.spec.type, in_port, "in") != PortType.TOOL:
            return False
        if _port_type(source.spec.type, out_port, "out") != PortType.VECTOR_STORE:
            return False
        tool = NodeSpec(id=self.ids.take(f"{source.spec.id}-tool"), type=roles.TOOL, name=f"{source.spec.name} (tool)")
        self.flow.nodes.append(tool)
        pos = self.flow.layout.positions.get(source.spec.id, Position())
        self.flow.layout.positions[tool.id] = Position(x=pos.x + 200, y=pos.y + 160)
        self._edge(source.spec.id, out_port, tool.id, "store")
        self._edge(tool.id, "tool", target.spec.id, in_port)
        self.report.warnings.append(
            f"{target.node_id}: searches {source.node_id} itself: search tool '{tool.id}' (added) gives it the store"
        )
        return True

    def _edge(self, source: str, source_port: str, target: str, target_port: str) -> None:
        for end, port, key in ((source, source_port, "output_names"), (target, target_port, "input_names")):
            spec = self.flow.find_node(end)
            if spec is not None and spec.type == PLACEHOLDER and port not in spec.config.setdefault(key, []):
                spec.config[key].append(port)  # a kept model a chain asks: its ports are named as it is wired
        edge = Edge(source=source, source_port=source_port, target=target, target_port=target_port)
        if all(e.key != edge.key for e in self.flow.edges):
            self.flow.edges.append(edge)

    # -- the pull links made explicit ----------------------------------------------------------
    def _forward(self) -> None:
        """A folded node's links that go on to another node (a worker's tools to its supervisor)."""
        for mapped in list(self.mapped.values()):
            forward = mapped.adapter.extra.get("forward") if mapped.adapter is not None else None
            if mapped.spec is not None or not forward:
                continue
            via, inputs = forward
            onto = mapped.parts.get(via)
            if onto not in self.mapped or self.mapped[onto].spec is None:
                continue
            for link in mapped.links:
                if link.input in inputs:
                    self._connect(_Link(link.source, link.output, onto, inputs[link.input]))

    def _unwire_dead_ends(self) -> None:
        """A kept node whose output reaches nothing we run (a moderation step whose chain was folded, an
        analytics hook) keeps no inputs either: it stays on the canvas, unwired, with a report line, and the
        rest of the flow runs."""
        for spec in self.flow.nodes:
            if spec.type != PLACEHOLDER or any(e.source == spec.id for e in self.flow.edges):
                continue
            entry = FLOWISE_TABLE.entry(str(spec.config.get("original_type", "")))
            if entry is not None and entry.local is not None:
                continue  # --local swaps it for a node we run (a hosted store being filled): its inputs stay
            into = [e for e in self.flow.edges if e.target == spec.id]
            if not into:
                continue
            self.flow.edges = [e for e in self.flow.edges if e.target != spec.id]
            spec.config["input_names"] = []
            self.report.connections_dropped.extend(
                f"{e.key}: into '{spec.id}', which feeds nothing Flowbuilder runs" for e in into
            )

    def _finish(self) -> None:
        self._forward()
        for mapped in list(self.mapped.values()):
            for port, source in mapped.pulls.items():
                assert mapped.spec is not None
                hits = self._hits_of(source, set())
                if hits is None:
                    self.report.connections_dropped.append(
                        f"{source} -> {mapped.node_id}.{port}: nothing there gives search results"
                    )
                    continue
                self._edge(hits[0], hits[1], mapped.spec.id, port)
        for mapped in list(self.mapped.values()):
            if mapped.adapter is None:
                continue
            if mapped.adapter.hook == "qa":
                self._wire_qa(mapped)
            elif mapped.adapter.hook == "chain" and not mapped.adapter.extra.get("forward"):
                self._wire_chain(mapped)
            elif mapped.adapter.hook == "agent":
                assert mapped.spec is not None
                self._edge(self._chat(), "message", mapped.spec.id, "message")
                self._answer(mapped.spec.id, "answer")
        self._unwire_dead_ends()
        for mapped in self.mapped.values():
            spec = mapped.spec
            if spec is None or spec.type == PLACEHOLDER:
                continue
            for port in _query_ports(spec.type):
                if not any(e.target == spec.id and e.target_port == port for e in self.flow.edges):
                    searched = any(e.source == spec.id and e.source_port == "hits" for e in self.flow.edges)
                    if searched or _required(spec.type, port):
                        # a retriever whose chain stays in Flowise (kept) still searches the question here
                        self._edge(self._chat(), "message", spec.id, port)

    def _hits_of(self, node_id: str, seen: set[str]) -> tuple[str, str] | None:
        """Where the hits of a Flowise store or retriever come from here: the question is wired into its
        query (and, for a retriever over a store or a reranker over a retriever, what it searches)."""
        if node_id in seen:
            return None
        seen.add(node_id)
        mapped = self.mapped.get(node_id)
        if mapped is None or mapped.spec is None:
            return None
        spec = mapped.spec
        if spec.type == PLACEHOLDER:
            if "query" not in spec.config["input_names"]:
                spec.config["input_names"].append("query")
            if "hits" not in spec.config["output_names"]:
                spec.config["output_names"].append("hits")
            self._edge(self._chat(), "message", spec.id, "query")
            return spec.id, "hits"
        if "hits" not in _ports(spec.type, "out"):
            return None
        for port, upstream in mapped.pulls.items():
            inner = self._hits_of(upstream, seen)
            if inner is not None:
                self._edge(inner[0], inner[1], spec.id, port)
        mapped.pulls.clear()
        for port in _query_ports(spec.type):
            self._edge(self._chat(), "message", spec.id, port)
        return spec.id, "hits"

    def _chat(self) -> str:
        """The chat input Flowise's chat window stands for (added once)."""
        if not self.chat_id:
            spec = NodeSpec(id=self.ids.take("chat-input"), type=CHAT_IN, name="Chat message (added)")
            self.flow.nodes.append(spec)
            self.flow.layout.positions[spec.id] = self._corner(-400)
            self.chat_id = spec.id
            self.report.warnings.append(
                f"Flowise's chat window sends the question: chat input '{spec.id}' (added) feeds the nodes that "
                "asked for it"
            )
        return self.chat_id

    def _answer(self, node_id: str, port: str) -> None:
        """A chat output for an ending node's answer (unless its answer already goes somewhere)."""
        if node_id in self.answered or any(e.source == node_id and e.source_port == port for e in self.flow.edges):
            return
        self.answered.add(node_id)
        spec = NodeSpec(id=self.ids.take(f"{node_id}-output"), type=CHAT_OUT, name="Chat answer (added)")
        self.flow.nodes.append(spec)
        pos = self.flow.layout.positions.get(node_id, Position())
        self.flow.layout.positions[spec.id] = Position(x=pos.x + 400, y=pos.y)
        self._edge(node_id, port, spec.id, "message")

    def _corner(self, dx: float) -> Position:
        xs = [p.x for p in self.flow.layout.positions.values()] or [0.0]
        ys = [p.y for p in self.flow.layout.positions.values()] or [0.0]
        return Position(x=min(xs) + dx, y=max(ys) + 200)

    def _model_of(self, mapped: _Mapped) -> NodeSpec | None:
        model = self.mapped.get(mapped.parts.get("model", ""))
        if model is None or model.spec is None:
            return None
        return model.spec

    def _wire_qa(self, mapped: _Mapped) -> None:
        """A retrieval chain: the question into the prompt (and into what it searches); the prompt into the
        model it is given; the model's answer to the chat."""
        prompt = mapped.spec
        assert prompt is not None
        self._edge(self._chat(), "message", prompt.id, "question")
        model = self._model_of(mapped)
        if model is None or model.type == PLACEHOLDER:
            if model is not None:
                self._edge(prompt.id, "prompt", model.id, "prompt")
                self._answer(model.id, "answer")
            else:
                self.report.connections_dropped.append(f"{mapped.node_id}: the chain has no chat model")
            return
        self._edge(prompt.id, "prompt", model.id, "prompt")
        self._answer(model.id, "answer")

    def _wire_chain(self, mapped: _Mapped) -> None:
        """An LLM chain: its prompt feeds its model; a conversation chain: the question is the prompt, or the
        chat prompt template it is given (whose system message then replaces the chain's, as in Flowise)."""
        model = self._model_of(mapped)
        inputs = _obj(self.nodes[mapped.node_id]["data"].get("inputs"))
        prompt = self.mapped.get(mapped.parts.get("prompt") or mapped.parts.get("chatPromptTemplate") or "")
        chat_prompt = "chatPromptTemplate" in mapped.parts and "prompt" not in mapped.parts
        system = "" if chat_prompt else _template_text(inputs.get("systemMessagePrompt"))
        if model is None:
            self.report.connections_dropped.append(f"{mapped.node_id}: the chain has no chat model")
            return
        if system and model.type != PLACEHOLDER:
            model.config["system_message"] = system
        if prompt is not None and prompt.spec is not None:
            self._edge(prompt.spec.id, "prompt", model.id, "prompt")
            for name in _variables(str(prompt.spec.config.get("template", ""))):
                if name in ("question", "input", "query", "text", "human_input"):
                    self._edge(self._chat(), "message", prompt.spec.id, name)
        else:
            self._edge(self._chat(), "message", model.id, "prompt")
        self._answer(model.id, "answer")
        used = {"model", "prompt" if "prompt" in mapped.parts else "chatPromptTemplate"}
        for link in mapped.links:
            if link.input not in used:  # a memory's history, an output parser's format: no port here takes them
                self.report.connections_dropped.append(
                    f"{link.source}.{link.output} -> {link.target}.{link.input}: the chain is folded into its "
                    f"prompt and model, which take no {link.input}"
                )


def _variables(template: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})", template)))


def _template_text(value: Any) -> str:
    text = str(value or "").strip()
    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", r"{\1}", text)


def _ports(type_name: str, side: str) -> dict[str, PortType]:
    cls = node_class(type_name)
    if cls is None:
        return {}
    ports = cls.input_ports(None) if side == "in" else cls.output_ports(None)
    return {p.name: p.type for p in ports}


def _port_type(type_name: str, port: str, side: str) -> PortType | None:
    return _ports(type_name, side).get(port)


def _required(type_name: str, port: str) -> bool:
    cls = node_class(type_name)
    return cls is not None and any(p.name == port and p.required for p in cls.input_ports(None))


def _query_ports(type_name: str) -> list[str]:
    """Inputs a pulled node is asked with: its text ``query`` port."""
    ins = _ports(type_name, "in")
    return ["query"] if "query" in ins and "hits" in _ports(type_name, "out") else []


def _first_input(mapped: _Mapped) -> str:
    assert mapped.spec is not None
    ins = _ports(mapped.spec.type, "in")
    return "documents" if "documents" in ins else next(iter(ins), "documents")


def _node_problem(node: Any) -> str | None:
    if not isinstance(node, dict):
        return "is not an object"
    if not isinstance(node.get("id"), str) or not node["id"]:
        return 'has no "id" string'
    data = node.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("name") or data.get("type"), str):
        return f'{node["id"]!r} has no "data.name"; every node needs "id" and "data": {{"name", "inputs"}}'
    if data.get("inputs") is not None and not isinstance(data.get("inputs"), dict):
        return f'{node["id"]!r}: "data.inputs" is not an object'
    return None


_DESCRIBED = ("id", "name", "label", "type", "list", "optional", "additionalParams", "default", "options")


def _compact(items: Any) -> list[Any]:
    """Input or output anchors (or fields) without their descriptions: what writing the node back needs."""
    kept: list[Any] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            entry = {k: item[k] for k in _DESCRIBED if k in item and k != "options"}
            if isinstance(item.get("options"), list):
                entry["options"] = _compact(item["options"])
            kept.append(entry)
    return kept


def _position(node: dict[str, Any]) -> Position:
    pos = _obj(node.get("position"))
    return Position(x=to_float(pos.get("x")) or 0.0, y=to_float(pos.get("y")) or 0.0)


def _safe_id(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", node_id).strip("-") or "node"


def _collection_name(node_id: str) -> str:
    return slugify(node_id.replace("_", "-"), "flowise")


def _account(credential: str) -> str:
    """A Flowise credential is an id in its own store: named ``flowise-<first 8>`` here (bind a key to it)."""
    return "flowise-" + re.sub(r"[^A-Za-z0-9]", "", credential)[:8]


def _credential_provider(node: dict[str, Any]) -> str:
    for param in node["data"].get("inputParams") or []:
        if isinstance(param, dict) and param.get("type") == "credential":
            names = param.get("credentialNames") or []
            if names and isinstance(names[0], str):
                return CREDENTIAL_PROVIDERS.get(names[0], names[0])
    return ""
