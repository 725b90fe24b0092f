"""Flowbuilder flows -> a Flowise chatflow (``{"nodes", "edges"}``, what Flowise's "Load Chatflow" reads).

The inverse of :mod:`flowbuilder.formats.flowise`. Each node is written as Flowise's UI would have saved it:
its description (``inputParams``, ``inputAnchors``, ``outputAnchors``, version, baseClasses) comes from the
facts recorded from Flowise's own node definitions (``flowise_nodes.json``, provenance inside), its values
from the node's entry (``mappings["flowise"]`` params), and every connection is both an edge with Flowise's
handle ids and the ``{{<node>.data.instance}}`` reference in the target's ``inputs`` that Flowise's runner
resolves.

Ours pushes, Flowise pulls, so structure is turned round (what no entry can say):

- the chat input and the chat output are Flowise's chat window: not written, and their links are implied;
- a prompt whose model answers the chat becomes a chain: with search hits as its context, a Conversational
  Retrieval QA Chain (the template is its response prompt) over the store's retriever; without, a Prompt
  Template + LLM Chain; a model asked with the chat message itself, a Conversation Chain;
- a retriever over a store is the store's own retriever output (its ``k`` the store's Top K), unless it came
  from a Flowise retriever node or filters by score (a Similarity Score Threshold Retriever);
- a loader's records going through a splitter become the splitter wired into the loader's Text Splitter
  input, and the loader's documents go to the store;
- an entry with ``extra["fold"]`` has no Flowise node: its connections are bridged (a row labeller or a
  one-chunk-per-record splitter after a loader: Flowise's CSV loader already gives one document per row);
- a kept Flowise node (a placeholder) is written back as it was.

Anything else is left out with a warning saying so (``export`` refuses that without ``--lossy``).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from flowbuilder.capabilities import Capability
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import Adapter, credential_slot, node_class, our_default, to_float, write_params
from flowbuilder.formats.flowise_table import FLOWISE_TABLE
from flowbuilder.formats.mapping import PLACEHOLDER
from flowbuilder.ports import PortType

FIELD_TYPES = frozenset(
    {
        "asyncOptions", "asyncMultiOptions", "options", "multiOptions", "array", "datagrid", "string", "number",
        "boolean", "password", "json", "code", "date", "file", "folder", "tabs", "conditionFunction", "timePicker",
        "weekDaysPicker", "monthDaysPicker", "datePicker",
    }
)  # fmt: skip
"""Input types Flowise's UI shows as a field (``inputParams``); any other type is a connection (``inputAnchors``)."""

QA_CHAIN = "conversationalRetrievalQAChain"
QA_CHAINS = (QA_CHAIN, "retrievalQAChain")
LLM_CHAIN = "llmChain"
PROMPT = "promptTemplate"
CONVERSATION = "conversationChain"
MEMORY = "bufferWindowMemory"
STICKY = "stickyNote"
VECTOR_RETRIEVER = "vectorStoreRetriever"
THRESHOLD_RETRIEVER = "similarityThresholdRetriever"
_BY_SUFFIX = {".pdf": "pdfFile", ".csv": "csvFile", ".docx": "docxFile", ".json": "jsonFile", ".txt": "textFile",
              ".md": "textFile"}  # fmt: skip
_NODE_REF = re.compile(r"^\{\{[^{}.\s]+\.data\.instance\}\}$")
REPHRASE = (
    "Given the conversation below and a follow-up question, rewrite the follow-up as a standalone question.\n\n"
    "Chat history:\n{chat_history}\nFollow-up question: {question}\nStandalone question:"
)
"""The QA chain's rephrase prompt (Flowise needs one with ``{chat_history}`` and ``{question}``)."""


@cache
def facts() -> dict[str, dict[str, Any]]:
    """Flowise's node definitions as recorded in ``flowise_nodes.json`` (name -> facts)."""
    data = json.loads(Path(__file__).with_name("flowise_nodes.json").read_text(encoding="utf-8"))
    nodes: dict[str, dict[str, Any]] = data["nodes"]
    return nodes


def describe(name: str, node_id: str) -> dict[str, Any]:
    """A Flowise node's ``data`` as Flowise's UI creates it (``initNode``): fields, anchors, outputs, defaults."""
    node = facts()[name]
    params: list[dict[str, Any]] = []
    anchors: list[dict[str, Any]] = []
    credential = node.get("credential")
    if credential:
        param = {"label": credential["label"], "name": "credential", "type": "credential",
                 "credentialNames": list(credential["names"])}  # fmt: skip
        if credential["optional"]:
            param["optional"] = True
        params.append({**param, "id": f"{node_id}-input-credential-credential"})
    for item in node["inputs"]:
        described = {**copy.deepcopy(item), "id": f"{node_id}-input-{item['name']}-{item['type']}"}
        (params if item["type"] in FIELD_TYPES else anchors).append(described)
    outputs = node.get("outputs")
    if outputs:
        options = [
            {"id": f"{node_id}-output-{o['name']}-{'|'.join(o['baseClasses'])}", "name": o["name"],
             "label": o["label"], "description": "", "type": " | ".join(o["baseClasses"])}
            for o in outputs
        ]  # fmt: skip
        output_anchors = [{"name": "output", "label": "Output", "type": "options", "description": "",
                           "options": options, "default": outputs[0]["name"]}]  # fmt: skip
        chosen: dict[str, Any] = {"output": outputs[0]["name"]}
    else:
        classes = node["baseClasses"]
        output_anchors = [{"id": f"{node_id}-output-{name}-{'|'.join(classes)}", "name": name,
                           "label": node["type"], "description": "", "type": " | ".join(classes)}]  # fmt: skip
        chosen = {}
    return {
        "id": node_id,
        "label": node["label"],
        "version": node["version"],
        "name": name,
        "type": node["type"],
        "baseClasses": list(node["baseClasses"]),
        "category": node["category"],
        "description": "",
        "inputParams": params,
        "inputAnchors": anchors,
        # initNode: ``input.default || ''`` (a false or zero default becomes empty)
        "inputs": {item["name"]: item.get("default") or "" for item in node["inputs"]},
        "outputAnchors": output_anchors,
        "outputs": chosen,
        "selected": False,
    }


def output_handle(data: dict[str, Any], output: str | None) -> tuple[str, str] | None:
    """(handle id, output name) of ``output`` on a node's ``data`` (its single output when None)."""
    for anchor in data.get("outputAnchors") or []:
        if not isinstance(anchor, dict):
            continue
        if anchor.get("type") == "options":
            options = [o for o in anchor.get("options") or [] if isinstance(o, dict)]
            chosen = output or (data.get("outputs") or {}).get("output") or anchor.get("default")
            for option in options:
                if option.get("name") == chosen:
                    return str(option.get("id")), str(chosen)
            return None
        if output is None or anchor.get("name") == output or len(data["outputAnchors"]) == 1:
            return str(anchor.get("id")), str(anchor.get("name"))  # a node with one output gives that one
    return None


def anchor_of(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((a for a in data.get("inputAnchors") or [] if isinstance(a, dict) and a.get("name") == name), None)


@dataclass
class _Node:
    """One Flowise node being written."""

    id: str
    data: dict[str, Any]
    position: Position
    spec: NodeSpec | None = None
    width: int = 300
    height: int = 0
    kind: str = "customNode"
    wants: set[str] = field(default_factory=set)
    """Outputs asked of a node with several (a store's retriever or vector store): Flowise gives one."""


@dataclass
class _Link:
    source: str
    output: str | None
    target: str
    anchor: str
    why: str


class FlowiseExporter:
    """One flow written as a Flowise chatflow: nodes first, then the links their roles imply."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.warnings: list[str] = []
        self.nodes: dict[str, _Node] = {}
        """Flowise id -> node, in writing order."""
        self.of: dict[str, str] = {}
        """Our node id -> the Flowise node that stands for it."""
        self.links: list[_Link] = []
        self.carried: set[str] = set()
        """Keys of our edges the chatflow carries (directly or by what Flowise implies)."""
        self.folded: set[str] = set()
        """Our nodes with no Flowise node of their own, carried by another's (prompt -> chain, retriever ->
        its store's output, chat input/output -> the chat window, a row labeller)."""
        found = flow.meta.get("source")
        source: dict[str, Any] = found if isinstance(found, dict) else {}
        known = source.get("format") == "flowise"
        self.source_ids: dict[str, str] = (
            {str(k): str(v) for k, v in (source.get("node_ids") or {}).items()} if known else {}
        )
        """Our node id -> the Flowise id it was imported from (kept, so a round trip keeps ids)."""
        self.source_names: dict[str, str] = (
            {str(k): str(v) for k, v in (source.get("node_names") or {}).items()} if known else {}
        )
        """Our node id -> the Flowise node name it was imported from."""

    # -- helpers ---------------------------------------------------------------------------------
    def _in(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self.flow.edges if e.target == node_id and (port is None or e.target_port == port)]

    def _out(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self.flow.edges if e.source == node_id and (port is None or e.source_port == port)]

    def _spec(self, node_id: str) -> NodeSpec:
        return self.flow.node(node_id)

    def _source_name(self, spec: NodeSpec) -> str:
        """The Flowise node name this node was imported from, or ''."""
        return self.source_names.get(spec.id) or re.sub(r"_\d+$", "", self.source_ids.get(spec.id, ""))

    def _new_id(self, name: str, spec: NodeSpec | None = None) -> str:
        """The Flowise id the node was imported with, else ``<name>_<n>`` as Flowise's UI numbers nodes."""
        their = self.source_ids.get(spec.id, "") if spec is not None else ""
        if their and their not in self.nodes:
            return their
        index = 0
        while f"{name}_{index}" in self.nodes or f"{name}_{index}" in self.source_ids.values():
            index += 1
        return f"{name}_{index}"

    def _add(self, name: str, spec: NodeSpec | None, label: str, position: Position) -> _Node:
        node_id = self._new_id(name, spec)
        data = describe(name, node_id)
        data["label"] = label or data["label"]
        node = _Node(node_id, data, position, spec)
        self.nodes[node_id] = node
        if spec is not None:
            self.of[spec.id] = node_id
        return node

    def _link(self, source: str, output: str | None, target: str, anchor: str, why: str, *edges: Edge) -> None:
        self.links.append(_Link(source, output, target, anchor, why))
        self.carried.update(e.key for e in edges)

    # -- the walk ----------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        for note in self.flow.notes:
            self._note(note)
        for spec in self.flow.nodes:
            if roles.is_chat_input(spec.type) or roles.is_answer_output(spec.type):
                self.folded.add(spec.id)  # Flowise's chat window
        self._folds()
        chains = self._chains()
        for spec in self.flow.nodes:
            if spec.id not in self.folded and spec.id not in self.of:
                self._write(spec)
        for spec in chains:
            self._write_chain(spec)
        for spec in self.flow.nodes:
            self._wire(spec)
        self._agents()
        self._left_out()
        edges = self._materialise()
        return {"nodes": [self._node_json(n) for n in self.nodes.values()], "edges": edges}

    def _note(self, note: Note) -> None:
        node = self._add(STICKY, None, "Sticky Note", self.flow.position(note.id))
        node.data["inputs"]["note"] = note.text
        node.kind = "stickyNote"
        node.width = int(note.width or 300)
        node.height = int(note.height or 0)

    def _folds(self) -> None:
        """Nodes whose entry says they have no Flowise node, after a loader: bridged over (a row labeller, a
        record splitter: Flowise's CSV loader gives one document per row, each column as "column: value")."""
        for spec in self.flow.nodes:
            entry = FLOWISE_TABLE.exporter(spec.type)
            if entry is None or not entry.extra.get("fold"):
                continue
            feeders = [self._spec(e.source) for e in self._in(spec.id)]
            if feeders and all(roles.has(f.type, Capability.LOADS_FILES) or f.id in self.folded for f in feeders):
                self.folded.add(spec.id)
                self.warnings.append(f"{spec.id}: {entry.note}")

    def _chains(self) -> list[NodeSpec]:
        """Prompts that feed one model (and models asked with the chat message itself): Flowise chains."""
        chains: list[NodeSpec] = []
        for spec in self.flow.nodes:
            if roles.is_prompt(spec.type):
                models = [e for e in self._out(spec.id, "prompt") if self._is_model(self._spec(e.target))]
                if len(models) == 1 and len(self._out(spec.id)) == 1:
                    self.folded.add(spec.id)
                    chains.append(spec)
            elif roles.chat_model(spec.type) and any(self._asked(e) for e in self._in(spec.id, "prompt")):
                chains.append(spec)
        return chains

    def _is_model(self, spec: NodeSpec) -> bool:
        """A chat model of ours, or a kept Flowise one (what --local swaps for a chat model)."""
        if spec.type == PLACEHOLDER:
            kept = FLOWISE_TABLE.entry(str(spec.config.get("original_type") or ""))
            return kept is not None and kept.local is not None and roles.chat_model(kept.local.target)
        return roles.chat_model(spec.type)

    def _asked(self, edge: Edge) -> bool:
        """The edge brings the chat message."""
        return roles.is_chat_input(self._spec(edge.source).type)

    def _write(self, spec: NodeSpec) -> None:
        if spec.type == PLACEHOLDER:
            self._write_kept(spec)
            return
        choice = self._choice(spec)
        if choice is None:
            return  # left out (said once every connection is known)
        name, entry = choice
        if spec.type == roles.RETRIEVER and name == VECTOR_RETRIEVER and not self._source_name(spec):
            if spec.config.get("min_score") is None:
                self.folded.add(spec.id)  # the store's own retriever output (see _provider)
                return
            threshold = FLOWISE_TABLE.entry(THRESHOLD_RETRIEVER)
            if threshold is not None:
                name, entry = THRESHOLD_RETRIEVER, threshold
        node = self._add(name, spec, spec.name or "", self.flow.position(spec.id))
        self._values(node, entry, spec.config, spec.name or spec.id)
        if entry.hook == "loader":
            self._loader_file(node, entry, spec)
        elif entry.hook == "url":
            urls = [str(u) for u in spec.config.get("urls") or []]
            node.data["inputs"]["url"] = urls[0] if urls else ""
            if len(urls) > 1:
                self.warnings.append(f"{spec.id}: Flowise's web scraper reads one URL: {len(urls) - 1} left out")
        self._credential_note(spec, name)
        if entry.note and not entry.imports:
            self.warnings.append(f"{spec.id}: {entry.note}")

    def _choice(self, spec: NodeSpec) -> tuple[str, Adapter] | None:
        """The Flowise node ``spec`` becomes: the one it was imported from when we know it, else its entry's
        (a file loader: the one for the file's kind)."""
        name = self._source_name(spec)
        entry = FLOWISE_TABLE.entry(name) if name else None
        if entry is not None and entry.ours == spec.type and name in facts() and _fills(name, entry):
            return name, entry
        entry = FLOWISE_TABLE.exporter(spec.type)
        if entry is not None and entry.hook == "loader":
            name = _BY_SUFFIX.get(Path(str(spec.config.get("path") or "")).suffix.lower(), "fileLoader")
            entry = FLOWISE_TABLE.entry(name)
        if entry is None or entry.extra.get("fold") or entry.theirs not in facts():
            return None
        return entry.theirs, entry

    def _values(self, node: _Node, entry: Adapter, config: dict[str, Any], label: str) -> None:
        """The node's settings from its entry's params (as Flowise saves them: every value, defaults too)."""
        names = {i["name"] for i in facts()[node.data["name"]]["inputs"]}
        for param, value in write_params(entry, config, keep_defaults=True):
            if param.theirs in names and value is not None:
                node.data["inputs"][param.theirs] = value
        for key, value in entry.fixed.items():
            if key in names:
                node.data["inputs"][key] = value
        for key in entry.extra.get("from_label", ()):
            if key in names and not node.data["inputs"].get(key):
                node.data["inputs"][key] = label

    def _loader_file(self, node: _Node, entry: Adapter, spec: NodeSpec) -> None:
        """The file's name as Flowise's storage reference; the file itself is never written."""
        path = str(spec.config.get("path") or "")
        file_input = next((i["name"] for i in facts()[node.data["name"]]["inputs"] if i["type"] == "file"), "")
        if not file_input or not path:
            return
        name = re.split(r"[\\/]", path)[-1]
        node.data["inputs"][file_input] = "FILE-STORAGE::" + json.dumps([name])
        self.warnings.append(
            f"{spec.id}: {name!r} is named, not included: upload it in Flowise's {facts()[node.data['name']]['label']} "
            "node (the file itself is never in an exported chatflow, as in Flowise's own export)"
        )

    def _credential_note(self, spec: NodeSpec, name: str) -> None:
        credential = facts()[name].get("credential")
        if credential_slot(spec.type) is not None and credential and not credential["optional"]:
            self.warnings.append(
                f"{spec.id}: choose a {'/'.join(credential['names'])} credential in Flowise (credentials are "
                "never exported)"
            )

    def _write_kept(self, spec: NodeSpec) -> None:
        """A Flowise node we kept as a placeholder goes back as it was (at its position now)."""
        original = spec.config.get("original")
        if spec.config.get("source_format") != "flowise" or not isinstance(original, dict):
            return
        found = original.get("data")
        data: dict[str, Any] = copy.deepcopy(found) if isinstance(found, dict) else {}
        name = str(data.get("name") or "")
        if (
            not name
            or data.get("category") == "Agent Flows"
            or name.endswith("Agentflow")
            or original.get("type") == "agentFlow"
        ):
            return  # an Agentflow v2 node has no place in a chatflow
        node_id = str(original.get("id") or data.get("id") or spec.id)
        if node_id in self.nodes:
            node_id = self._new_id(str(data.get("name") or "node"))
        data["id"] = node_id
        inputs: dict[str, Any] = data["inputs"] if isinstance(data.get("inputs"), dict) else {}
        for key, value in inputs.items():  # its links are written again from the flow's
            values = value if isinstance(value, list) else [value]
            if values and all(isinstance(v, str) and _NODE_REF.match(v.strip()) for v in values):
                inputs[key] = ""
        data["inputs"] = inputs
        kind = str(original.get("type") or "customNode")
        node = _Node(node_id, data, self.flow.position(spec.id), spec, kind=kind)
        node.width = int(to_float(original.get("width")) or node.width)
        node.height = int(to_float(original.get("height")) or 0)
        self.nodes[node_id] = node
        self.of[spec.id] = node_id

    # -- chains ----------------------------------------------------------------------------------
    def _write_chain(self, spec: NodeSpec) -> None:
        if not roles.is_prompt(spec.type):
            self._conversation_chain(spec)
            return
        model = self._spec(self._out(spec.id, "prompt")[0].target)
        context = [e for e in self._in(spec.id) if not self._asked(e)]
        if context and all(self._gives_hits(e) for e in context):
            self._qa_chain(spec, model, context)
        else:
            self._llm_chain(spec, model)

    def _gives_hits(self, edge: Edge) -> bool:
        source = self._spec(edge.source)
        if source.type == roles.STRINGIFY:
            return all(self._gives_hits(e) for e in self._in(source.id)) and bool(self._in(source.id))
        if source.type == PLACEHOLDER:
            kept = FLOWISE_TABLE.entry(str(source.config.get("original_type") or ""))
            return kept is not None and kept.gives_hits
        return any(p.name == edge.source_port and p.type is PortType.HITS for p in _ports(source.type, "out"))

    def _model_node(self, model: NodeSpec) -> str | None:
        if model.id not in self.of and model.id not in self.folded:
            self._write(model)
        return self.of.get(model.id)

    def _qa_chain(self, prompt: NodeSpec, model: NodeSpec, context: list[Edge]) -> None:
        name = self._source_name(prompt)
        if name not in QA_CHAINS or (name != QA_CHAIN and prompt.config.get("template")):
            name = QA_CHAIN  # only this chain takes a prompt
        chain = self._add(name, prompt, prompt.name or "", self.flow.position(prompt.id))
        if name == QA_CHAIN:
            template = str(prompt.config.get("template") or _our_default(prompt.type, "template"))
            text = template.replace("{" + context[0].target_port + "}", "{context}")
            for edge in self._in(prompt.id):
                if self._asked(edge):
                    text = text.replace("{" + edge.target_port + "}", "{question}")
            chain.data["inputs"]["responsePrompt"] = text
            chain.data["inputs"]["rephrasePrompt"] = REPHRASE
            unfed = sorted(set(_variables(text)) - {"context", "question"})
            if unfed:
                self.warnings.append(f"{prompt.id}: template variable(s) {', '.join(unfed)} get no value in Flowise")
        model_id = self._model_node(model)
        prompt_edge = self._out(prompt.id, "prompt")[0]
        if model_id:
            self._link(model_id, None, chain.id, "model", "the chain's model", prompt_edge)
        provider = self._provider(self._spec(context[0].source))
        if provider is not None:
            self._link(provider[0], provider[1], chain.id, "vectorStoreRetriever", "the chain's retriever", context[0])
        memory = self._free_memory() if anchor_of(chain.data, "memory") else None
        if memory is not None:  # the chain's memory, unwired here (its rephrasing is Flowise's)
            self._link(memory, None, chain.id, "memory", "the chain's memory")
        if len(context) > 1:
            self.warnings.append(
                f"{prompt.id}: a Flowise QA chain asks one retriever: {len(context) - 1} more context link(s) left out"
            )
        self._chat_links(prompt, model)

    def _llm_chain(self, prompt: NodeSpec, model: NodeSpec) -> None:
        node = self._add(PROMPT, prompt, prompt.name or "", self.flow.position(prompt.id))
        template = str(prompt.config.get("template") or _our_default(prompt.type, "template"))
        node.data["inputs"]["template"] = template
        asked = [e.target_port for e in self._in(prompt.id) if self._asked(e)]
        if asked and len(_variables(template)) > 1:
            node.data["inputs"]["promptValues"] = json.dumps({name: "{{question}}" for name in asked})
        pos = self.flow.position(model.id)
        chain = self._add(LLM_CHAIN, None, "LLM Chain", Position(x=pos.x + 400, y=pos.y))
        model_id = self._model_node(model)
        prompt_edge = self._out(prompt.id, "prompt")[0]
        self._link(node.id, None, chain.id, "prompt", "the chain's prompt", prompt_edge)
        if model_id:
            self._link(model_id, None, chain.id, "model", "the chain's model", prompt_edge)
        self._chat_links(prompt, model)

    def _conversation_chain(self, model: NodeSpec) -> None:
        model_id = self._model_node(model)
        if model_id is None:
            return
        pos = self.flow.position(model.id)
        chain = self._add(CONVERSATION, None, "Conversation Chain", Position(x=pos.x + 400, y=pos.y))
        system = str(model.config.get("system_message") or "")
        if system:
            chain.data["inputs"]["systemMessagePrompt"] = system
        asked = [e for e in self._in(model.id, "prompt") if self._asked(e)]
        self._link(model_id, None, chain.id, "model", "the chain's model", *asked)
        memory = self._free_memory()
        if memory is None:
            memory = self._add(MEMORY, None, "Buffer Window Memory", Position(x=pos.x, y=pos.y + 300)).id
            self.warnings.append(f"{model.id}: Flowise's Conversation Chain needs a memory: buffer window memory added")
        self._link(memory, None, chain.id, "memory", "the chain's memory")
        self._answers(model)

    def _free_memory(self) -> str | None:
        """A written memory node that nothing uses (a conversation chain's memory, as its import leaves it)."""
        for spec in self.flow.nodes:
            if spec.id not in self.of or self._out(spec.id):
                continue
            memory = any(p.type is PortType.MEMORY for p in _ports(spec.type, "out"))
            if memory and not any(link.source == self.of[spec.id] for link in self.links):
                return self.of[spec.id]
        return None

    def _chat_links(self, prompt: NodeSpec, model: NodeSpec) -> None:
        """The chat window asks the chain and shows its model's answer: those links are implied."""
        self.carried.update(e.key for e in self._in(prompt.id) if self._asked(e))
        self._answers(model)

    def _answers(self, model: NodeSpec) -> None:
        self.carried.update(
            e.key for e in self._out(model.id, "answer") if roles.is_answer_output(self._spec(e.target).type)
        )

    # -- what searches -------------------------------------------------------------------------------
    def _provider(self, spec: NodeSpec) -> tuple[str, str | None] | None:
        """The Flowise node and output a chain (or reranker, or tool) asks for documents, for a node of ours
        that gives hits: a store's retriever output, a retriever or reranker node; a parser is passed over."""
        self._query_implied(spec)
        if spec.type == roles.STRINGIFY:
            feeders = self._in(spec.id)
            if len(feeders) != 1:
                return None
            self.folded.add(spec.id)
            self.carried.add(feeders[0].key)
            return self._provider(self._spec(feeders[0].source))
        if spec.id in self.folded and spec.type == roles.RETRIEVER:
            stores = self._in(spec.id, "store")
            if len(stores) != 1:
                return None
            self.carried.add(stores[0].key)
            store = self.nodes.get(self.of.get(stores[0].source, ""))
            if store is not None and "topK" in store.data["inputs"]:
                store.data["inputs"]["topK"] = spec.config.get("k", _our_default(spec.type, "k"))
            return self._provider(self._spec(stores[0].source))
        if spec.id not in self.of:
            feeders = self._in(spec.id, "hits")
            if len(feeders) != 1 or spec.id in self.folded:
                return None
            self.warnings.append(
                f"{spec.id}: no Flowise node for it: what it reranks is asked directly (its reranking is left out)"
            )
            return self._provider(self._spec(feeders[0].source))
        node = self.nodes[self.of[spec.id]]
        if output_handle(node.data, "retriever") is not None:
            node.wants.add("retriever")
            return node.id, "retriever"
        return node.id, None

    def _query_implied(self, spec: NodeSpec) -> None:
        """A pulled node is asked with the chat question by Flowise: its query link is implied."""
        self.carried.update(e.key for e in self._in(spec.id) if self._asked(e))

    # -- links by role -------------------------------------------------------------------------------
    def _wire(self, spec: NodeSpec) -> None:
        """The links into one written node from what feeds it (chains wired themselves)."""
        target = self.of.get(spec.id)
        if target is None or spec.id in self.folded:
            return
        data = self.nodes[target].data
        entry = self._entry_of(spec, data)
        for edge in self._in(spec.id):
            if edge.key in self.carried:
                continue
            source = self._spec(edge.source)
            if self._asked(edge):
                if spec.type == PLACEHOLDER or _is_text(spec.type, edge.target_port):
                    self.carried.add(edge.key)  # the chat question Flowise gives every node that asks for it
                continue
            if roles.splits(spec.type) and spec.type != PLACEHOLDER:
                for loader in self._loaders(source, edge):
                    self._link(target, None, self.of[loader.id], "textSplitter", "the loader's splitter", edge)
                continue
            anchor = self._anchor(entry, data, edge.target_port)
            if anchor is None:
                continue
            if anchor == "document":
                for loader in self._loaders(source, edge):
                    self._link(self.of[loader.id], "document", target, anchor, "documents", edge)
            elif anchor == "vectorStore" and roles.store(source.type) and source.id in self.of:
                self.nodes[self.of[source.id]].wants.add("vectorStore")
                self._link(self.of[source.id], "vectorStore", target, anchor, "the store", edge)
            elif anchor in ("vectorStore", "baseRetriever", "retriever", "vectorStoreRetriever") and not (
                source.type == PLACEHOLDER and edge.source_port != "hits"
            ):
                provider = self._provider(source)
                if provider is not None:
                    self._link(provider[0], provider[1], target, anchor, "search", edge)
            elif source.id in self.of:
                self._link(self.of[source.id], self._output_of(source, edge.source_port), target, anchor, "", edge)

    def _entry_of(self, spec: NodeSpec, data: dict[str, Any]) -> Adapter | None:
        if spec.type == PLACEHOLDER:
            return None
        entry = FLOWISE_TABLE.entry(str(data.get("name") or ""))
        return entry if entry is not None and entry.ours == spec.type else FLOWISE_TABLE.exporter(spec.type)

    def _anchor(self, entry: Adapter | None, data: dict[str, Any], port: str) -> str | None:
        """The Flowise input anchor that takes our input ``port`` (a kept node's ports are its anchors)."""
        names = (
            [port]
            if entry is None
            else [entry.inputs.get(port), *(t for t, o in entry.in_aliases.items() if o == port)]
        )
        found = next((n for n in names if n and anchor_of(data, n)), None)
        if found is None and port in ("documents", "records") and anchor_of(data, "document"):
            return "document"
        return found

    def _output_of(self, spec: NodeSpec, port: str) -> str | None:
        """The Flowise output a node of ours gives on ``port`` (None: its only output)."""
        node = self.nodes[self.of[spec.id]]
        if spec.type == PLACEHOLDER:
            found = output_handle(node.data, port)
            return found[1] if found else None
        outputs = facts().get(str(node.data.get("name")), {}).get("outputs")
        if not outputs:
            return None
        entry = self._entry_of(spec, node.data)
        theirs = entry.outputs.get(port) if entry else None
        return theirs if theirs in {o["name"] for o in outputs} else outputs[0]["name"]

    def _loaders(self, spec: NodeSpec, edge: Edge | None) -> list[NodeSpec]:
        """The written loaders whose documents reach here through ``spec``: a loader itself, or the loaders
        behind a splitter (Flowise's loader calls its splitter: that link is the splitter's own) or behind a
        folded node (a row labeller: its links are carried here)."""
        if edge is not None:
            self.carried.add(edge.key)
        if spec.id in self.folded:
            return [loader for e in self._in(spec.id) for loader in self._loaders(self._spec(e.source), e)]
        if roles.splits(spec.type) and spec.id in self.of:
            return [loader for e in self._in(spec.id) for loader in self._loaders(self._spec(e.source), None)]
        return [spec] if spec.id in self.of else []

    def _agents(self) -> None:
        """An agent is asked by the chat window and answers in it; Flowise's agents need a memory."""
        for spec in self.flow.nodes:
            node = self.nodes.get(self.of.get(spec.id, ""))
            if node is None or spec.type == PLACEHOLDER or node.data.get("category") not in ("Agents", "Chains"):
                continue
            self._query_implied(spec)
            self._answers(spec)
            memory = anchor_of(node.data, "memory")
            if memory is not None and not memory.get("optional") and not anchor_link(self.links, node.id, "memory"):
                pos = node.position
                added = self._add(MEMORY, None, "Buffer Window Memory", Position(x=pos.x - 300, y=pos.y + 300))
                self._link(added.id, None, node.id, "memory", "the agent's memory")
                self.warnings.append(
                    f"{spec.id}: Flowise's {node.data['label']} needs a memory: buffer window memory added"
                )

    def _left_out(self) -> None:
        for spec in self.flow.nodes:
            if spec.id not in self.of and spec.id not in self.folded:
                what = (
                    f"a {spec.config.get('source_format')} node ({spec.config.get('original_type')})"
                    if spec.type == PLACEHOLDER
                    else spec.type
                )
                self.warnings.append(f"node {spec.id} ({what}): no Flowise node for it; left out")
        for edge in self.flow.edges:
            if edge.key in self.carried or any(
                e not in self.of and e not in self.folded for e in (edge.source, edge.target)
            ):
                continue  # carried, or said with its node
            if self._asked(edge) and self._spec(edge.target).id in self.folded:
                continue  # the chat message into something Flowise folds (a prompt of a chain, a retriever)
            self.warnings.append(f"connection {edge.key}: no Flowise link for it; left out")

    # -- JSON -----------------------------------------------------------------------------------------
    def _materialise(self) -> list[dict[str, Any]]:
        for node in self.nodes.values():
            if node.wants and (node.data.get("outputs") or {}).get("output") is not None:
                node.data["outputs"]["output"] = "retriever" if "retriever" in node.wants else sorted(node.wants)[0]
        edges: list[dict[str, Any]] = []
        seen: set[tuple[str, str, str, str]] = set()
        for link in self.links:
            source, target = self.nodes.get(link.source), self.nodes.get(link.target)
            if source is None or target is None:
                continue
            handle = output_handle(source.data, link.output)
            anchor = anchor_of(target.data, link.anchor)
            if handle is None or anchor is None:
                self.warnings.append(f"{link.source} -> {link.target}.{link.anchor}: no Flowise handle; left out")
                continue
            described = source.data.get("name") in facts() and target.data.get("name") in facts()
            if described and not set(_handle_types(str(anchor["id"]))) & set(_handle_types(handle[0])):
                gives = handle[0].split("-")[-1]
                self.warnings.append(
                    f"{link.source} -> {link.target}.{link.anchor}: Flowise does not connect a {gives} to a "
                    f"{anchor.get('type')}; left out"
                )
                continue
            chosen = (source.data.get("outputs") or {}).get("output")
            if chosen is not None and handle[1] != chosen:
                self.warnings.append(
                    f"{link.source}.{handle[1]} -> {link.target}.{link.anchor}: Flowise gives one output of a node "
                    f"at a time ({chosen}); left out"
                )
                continue
            key = (link.source, handle[0], link.target, str(anchor["id"]))
            if key in seen:
                continue
            seen.add(key)
            reference = f"{{{{{link.source}.data.instance}}}}"
            inputs = target.data.setdefault("inputs", {})
            if anchor.get("list"):
                current = inputs.get(link.anchor)
                listed = current if isinstance(current, list) else []
                inputs[link.anchor] = listed if reference in listed else [*listed, reference]
            else:
                inputs[link.anchor] = reference
            edges.append(
                {
                    "source": link.source,
                    "sourceHandle": handle[0],
                    "target": link.target,
                    "targetHandle": anchor["id"],
                    "type": "buttonedge",
                    "id": f"{link.source}-{handle[0]}-{link.target}-{anchor['id']}",
                }
            )
        return edges

    def _node_json(self, node: _Node) -> dict[str, Any]:
        position = {"x": round(node.position.x, 2), "y": round(node.position.y, 2)}
        shown = [p for p in node.data.get("inputParams") or [] if isinstance(p, dict) and not p.get("additionalParams")]
        height = node.height or 120 + 60 * len(node.data.get("inputAnchors") or []) + 60 * len(shown)
        return {
            "id": node.id,
            "position": position,
            "type": node.kind,
            "data": node.data,
            "width": node.width,
            "height": height,
            "selected": False,
            "positionAbsolute": dict(position),
            "dragging": False,
        }


def _fills(name: str, entry: Adapter) -> bool:
    """Whether ``entry`` gives a value to every field Flowise's ``name`` requires (a file and a credential
    aside: those are the user's to give in Flowise)."""
    given = {p.theirs for p in entry.params} | set(entry.fixed) | {"url"}
    return all(
        item["name"] in given or item.get("default") not in (None, "")
        for item in facts()[name]["inputs"]
        if item["type"] in FIELD_TYPES and item["type"] != "file" and not item.get("optional") and not item.get("show")
    )


def _handle_types(handle: str) -> list[str]:
    """The types a handle id ends with (``...-Chroma|VectorStoreRetriever|BaseRetriever``)."""
    return [t.strip() for t in handle.split("-")[-1].split("|")]


def anchor_link(links: Iterable[_Link], target: str, anchor: str) -> bool:
    return any(link.target == target and link.anchor == anchor for link in links)


def _ports(type_name: str, side: str) -> list[Any]:
    cls = node_class(type_name)
    if cls is None:
        return []
    return list(cls.input_ports(None) if side == "in" else cls.output_ports(None))


def _is_text(type_name: str, port: str) -> bool:
    return any(p.name == port and p.type in (PortType.TEXT, PortType.MESSAGE) for p in _ports(type_name, "in"))


def _our_default(type_name: str, field_name: str) -> Any:
    return our_default(type_name, field_name)


def _variables(template: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})", template)))


def export_flowise(flow: Flow) -> tuple[dict[str, Any], list[str]]:
    exporter = FlowiseExporter(flow)
    data = exporter.run()
    return data, exporter.warnings
