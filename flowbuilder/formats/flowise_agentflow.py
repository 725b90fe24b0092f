"""Flowise Agentflow v2 (``agentFlow`` nodes) -> Flowbuilder flows, where it maps.

Agentflow v2 passes data by mention, like Dify: ``{{ question }}`` is the chat message, ``{{ llmAgentflow_0 }}``
a node's output, ``{{ $flow.state.query }}`` a state key some node set (``llmUpdateState``). Its edges
order the run. What maps: Start (the chat input), LLM (a prompt and the model it names), Retriever (a
Flowise Document Store: a placeholder that ``--local`` swaps for Chroma, filled from the run's file),
Agent (agent.tools with a search tool per document store it knows), Direct Reply (a chat output) and
sticky notes. Conditions, loops, iterations and human input are absorbed (never evaluated, every branch
kept); custom functions, HTTP calls, sub-flows and tools stay placeholders, unwired, each with a report
line. The models are the chatflow table's entries (``llmModel: chatOpenAI`` reads as the ``chatOpenAI`` node).
"""

from __future__ import annotations

import copy
import html
import re
from pathlib import PurePath
from typing import Any

from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import credential_slot, read_params, to_float
from flowbuilder.formats.flowise_table import AGENT, CHAT_IN, CHAT_OUT, FLOWISE_TABLE, PROMPT
from flowbuilder.formats.mapping import (
    PLACEHOLDER,
    IdAllocator,
    find_secrets,
    placeholder_config,
    remember_secret,
    scrub,
)
from flowbuilder.formats.report import CredentialFound, ImportReport
from flowbuilder.trust.providers import CredentialRef

_MENTION = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")
_ABSORBED = {
    "conditionAgentflow", "conditionAgentAgentflow", "loopAgentflow", "iterationAgentflow", "humanInputAgentflow",
}  # fmt: skip
STORE_TYPE = "retrieverAgentflow"
"""A Flowise Document Store searched by id: the kept entry's name (see flowise_table)."""


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def is_agentflow(data: dict[str, Any]) -> bool:
    nodes = data.get("nodes")
    return isinstance(nodes, list) and any(
        isinstance(n, dict)
        and (n.get("type") == "agentFlow" or str(_obj(n.get("data")).get("name", "")).endswith("Agentflow"))
        for n in nodes
    )


def plain_text(value: Any) -> str:
    """Agentflow's rich text (``<p>…</p>`` with mention spans) as plain text; mentions kept as ``{{ x }}``."""
    text = str(value or "")
    text = re.sub(r"<span[^>]*data-id=\"([^\"]+)\"[^>]*>.*?</span>", r"{{ \1 }}", text, flags=re.S)
    text = re.sub(r"</p>\s*<p>|<br\s*/?>", "\n", text)
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip()


class AgentflowImporter:
    """One Flowise Agentflow v2 read into a Flowbuilder flow where it maps (start, LLM, retriever, agent, direct
    reply)."""

    def __init__(self, data: dict[str, Any], origin: str, report: ImportReport) -> None:
        self.data = data
        self.origin = origin
        self.report = report
        self.secrets: set[str] = set()
        self.ids = IdAllocator()
        self.flow = Flow(
            name=str(data.get("name") or PurePath(origin).stem or "Imported Flowise agentflow")[:200],
            description=str(data.get("description") or ""),
        )
        self.outputs: dict[str, tuple[str, str]] = {}
        """Agentflow node id -> our node and port giving its output."""
        self.state: dict[str, list[tuple[str, tuple[str, str]]]] = {}
        """``$flow.state.key`` -> (the agentflow node that sets it, our node and port giving the value)."""
        self.wants: list[tuple[str, str, str, str]] = []
        """(mention, our node, port, the agentflow node asking) resolved once every node is read."""
        self.chat = ""
        self.answered: set[str] = set()

    def run(self, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> Flow:
        consumed = {str(e.get("source")) for e in edges if isinstance(e, dict)}
        for node in nodes:
            self._node(node)
        for mention, target, port, asker in self.wants:
            sources = self._sources(mention, asker)
            if not sources:
                self.report.connections_dropped.append(f"{asker}: {{{{ {mention} }}}} is given by nothing we run")
            for source in sources:  # a state key several nodes set: alternatives
                self._edge(source[0], source[1], target, port)
        for node in nodes:
            name = str(node["data"].get("name"))
            if name in ("llmAgentflow", "agentAgentflow") and node["id"] not in consumed and node["id"] in self.outputs:
                self._answer(*self.outputs[node["id"]])
        self.flow.meta["source"] = {"format": "flowise", "kind": "agentflow-v2", "name": self.data.get("name")}
        self.report.flow_name = self.flow.name
        return self.flow

    # -- nodes ----------------------------------------------------------------------------------
    def _node(self, node: dict[str, Any]) -> None:
        data = node["data"]
        name = str(data.get("name") or "")
        inputs = _obj(data.get("inputs"))
        for path, value, reason in find_secrets(inputs):
            remember_secret(self.secrets, value)
            self.report.secret(node["id"], f"inputs.{path}", reason)
        outcome = self.report.node(node["id"], name)
        pos = Position(
            x=to_float(_obj(node.get("position")).get("x")) or 0.0,
            y=to_float(_obj(node.get("position")).get("y")) or 0.0,
        )
        specs: list[NodeSpec] = []
        if name == "stickyNoteAgentflow":
            note = Note(id=self.ids.take(_safe(node["id"])), text=str(inputs.get("note") or ""))
            self.flow.notes.append(note)
            self.flow.layout.positions[note.id] = pos
            self.report.notes += 1
            outcome.note = f"note '{note.id}'"
            return
        if name == "startAgentflow":
            specs = [self._chat_input()]
            self.outputs[node["id"]] = (specs[0].id, "message")
        elif name == "llmAgentflow":
            specs = self._llm(node, inputs)
        elif name == STORE_TYPE:
            specs = self._retriever(node, inputs)
        elif name == "agentAgentflow":
            specs = self._agent(node, inputs)
        elif name == "directReplyAgentflow":
            spec = self._new(node, CHAT_OUT, {})
            mentions = _MENTION.findall(plain_text(inputs.get("directReplyMessage")))
            if mentions:
                self.wants.append((mentions[-1], spec.id, "message", node["id"]))
                self.answered.add(spec.id)
                specs = [spec]
            else:
                outcome.note = "a fixed reply: not carried (nothing runs before it here)"
        elif name in _ABSORBED:
            outcome.note = "absorbed: its conditions are never evaluated; every branch it chose between is kept"
            self.report.warnings.append(f"{node['id']}: {outcome.note}")
        else:
            kept = FLOWISE_TABLE.entry(name)
            original = scrub(copy.deepcopy(node), self.secrets)
            config = placeholder_config("flowise", name, original, replace=kept.replace if kept else "")
            specs = [self._new(node, PLACEHOLDER, config)]
            outcome.note = "kept as a placeholder, never run (no Flowbuilder node does this)"
            self.report.warnings.append(f"{node['id']}: {name}: {outcome.note}")
        for offset, spec in enumerate(specs):
            self.flow.nodes.append(spec)
            self.flow.layout.positions.setdefault(spec.id, Position(x=pos.x, y=pos.y + 160 * offset))
            outcome.targets.append((spec.id, spec.type))

    def _new(self, node: dict[str, Any], type_name: str, config: dict[str, Any], suffix: str = "") -> NodeSpec:
        label = str(node["data"].get("label") or node["data"].get("name") or node["id"])
        stem = _safe(node["id"]) + (f"-{suffix}" if suffix else "")
        return NodeSpec(
            id=self.ids.take(stem), type=type_name, name=label + (f" ({suffix})" if suffix else ""), config=config
        )

    def _chat_input(self) -> NodeSpec:
        spec = NodeSpec(id=self.ids.take("chat-input"), type=CHAT_IN, name="Chat message")
        self.chat = self.chat or spec.id
        return spec

    def _model(self, node: dict[str, Any], name: Any, config: Any) -> NodeSpec:
        adapter = FLOWISE_TABLE.importer(str(name or ""))
        settings = _obj(config)
        if adapter is None or not roles.chat_model(adapter.ours):
            kept = FLOWISE_TABLE.entry(str(name or ""))
            original = {"data": {"name": str(name or ""), "inputs": scrub(copy.deepcopy(settings), self.secrets)}}
            spec = self._new(
                node,
                PLACEHOLDER,
                {
                    "source_format": "flowise",
                    "original_type": str(name or "model"),
                    "original": original,
                    "input_names": ["prompt"],
                    "output_names": ["answer", "model"],
                    **({"replace": kept.replace} if kept and kept.replace else {}),
                },
                "model",
            )
            why = kept.replace if kept and kept.replace else "no Flowbuilder node"
            self.report.warnings.append(f"{node['id']}: model {name!r}: placeholder ({why})")
            return spec

        def lookup(key: str) -> tuple[str, Any]:
            value = settings.get(key)
            return ("absent", None) if value in (None, "") else ("set", value)

        spec = self._new(node, adapter.ours, read_params(adapter, lookup)[0], "model")
        slot = credential_slot(spec.type)
        if slot is not None:
            credential = settings.get("credential") or node["data"].get("credential")
            account = "flowise-" + re.sub(r"[^A-Za-z0-9]", "", str(credential))[:8] if credential else "default"
            spec.credentials[slot.name] = CredentialRef(provider=slot.provider, name=account)
            self.report.credentials.append(CredentialFound(spec.id, slot.name, slot.provider, account, bound=False))
        return spec

    def _template(self, text: str, prompt: NodeSpec, asker: str) -> str:
        """Mentions as our ``{name}`` variables (each wanted from its source); other braces literal."""
        out: list[str] = []
        last = 0
        names: dict[str, str] = {}
        for match in _MENTION.finditer(text):
            out.append(text[last : match.start()].replace("{", "{{").replace("}", "}}"))
            last = match.end()
            mention = match.group(1)
            name = names.get(mention)
            if name is None:
                name = "question" if mention == "question" else re.sub(r"[^A-Za-z0-9_]", "_", mention.split(".")[-1])
                if name[0].isdigit():
                    name = f"v_{name}"
                names[mention] = name
                self.wants.append((mention, prompt.id, name, asker))
            out.append("{" + name + "}")
        out.append(text[last:].replace("{", "{{").replace("}", "}}"))
        return "".join(out)

    def _llm(self, node: dict[str, Any], inputs: dict[str, Any]) -> list[NodeSpec]:
        model = self._model(node, inputs.get("llmModel"), inputs.get("llmModelConfig"))
        texts = [plain_text(_obj(m).get("content")) for m in inputs.get("llmMessages") or [] if isinstance(m, dict)]
        user = plain_text(inputs.get("llmUserMessage"))
        texts.append(user or "{{ question }}")  # with no user message, Flowise sends the chat question
        prompt = self._new(node, PROMPT, {}, "prompt")
        prompt.config["template"] = self._template("\n\n".join(t for t in texts if t), prompt, node["id"])
        self._edge(prompt.id, "prompt", model.id, "prompt")
        self.outputs[node["id"]] = (model.id, "answer")
        self._state(node, inputs.get("llmUpdateState"), (model.id, "answer"))
        return [prompt, model]

    def _state(self, node: dict[str, Any], updates: Any, output: tuple[str, str]) -> None:
        for update in updates if isinstance(updates, list) else []:
            key = _obj(update).get("key")
            if isinstance(key, str) and key and "output" in plain_text(_obj(update).get("value")):
                self.state.setdefault(f"$flow.state.{key}", []).append((node["id"], output))

    def _store(self, node: dict[str, Any], stores: Any) -> NodeSpec:
        kept = scrub(copy.deepcopy(stores), self.secrets)
        for item in kept:  # "<id>:<name>" reads as a random token to the secret scan: the name is kept
            if isinstance(item, dict) and not item.get("documentStore"):
                index = kept.index(item)
                source = stores[index] if index < len(stores) and isinstance(stores[index], dict) else {}
                item["documentStore"] = str(source.get("documentStore") or "").split(":", 1)[-1]
        original = {"data": {"name": STORE_TYPE, "inputs": {"retrieverKnowledgeDocumentStores": kept}}}
        spec = self._new(
            node,
            PLACEHOLDER,
            {
                "source_format": "flowise",
                "original_type": STORE_TYPE,
                "original": original,
                "input_names": ["query"],
                "output_names": ["hits"],
            },
            "store",
        )
        # "<id>:<name>": the name only (an id with a suffix reads as a random token to the secret scan)
        names = [str(_obj(s).get("documentStore") or "").split(":", 1)[-1] for s in stores if isinstance(s, dict)]
        self.report.warnings.append(
            f"{node['id']}: searches Flowise Document Store(s) {', '.join(names) or '(none named)'} kept in Flowise: "
            "import with --local to search an embedded Chroma collection instead, filled from the run's file"
        )
        return spec

    def _retriever(self, node: dict[str, Any], inputs: dict[str, Any]) -> list[NodeSpec]:
        stores = inputs.get("retrieverKnowledgeDocumentStores")
        spec = self._store(node, stores if isinstance(stores, list) else [])
        mentions = _MENTION.findall(plain_text(inputs.get("retrieverQuery"))) or ["question"]
        self.wants.append((mentions[0], spec.id, "query", node["id"]))
        if mentions[0] != "question":
            # a query a model rewrote: the question itself is searched when no model answers (offline)
            self.wants.append(("question", spec.id, "query", node["id"]))
            self.report.warnings.append(
                f"{node['id']}: searches {{{{ {mentions[0]} }}}}; when that gives nothing (no model reachable) "
                "the chat question itself is searched"
            )
        self.outputs[node["id"]] = (spec.id, "hits")
        self._state(node, inputs.get("retrieverUpdateState"), (spec.id, "hits"))
        return [spec]

    def _agent(self, node: dict[str, Any], inputs: dict[str, Any]) -> list[NodeSpec]:
        model = self._model(node, inputs.get("agentModel"), inputs.get("agentModelConfig"))
        system = "\n\n".join(
            plain_text(_obj(m).get("content"))
            for m in inputs.get("agentMessages") or []
            if isinstance(m, dict) and _obj(m).get("role") == "system"
        )
        agent = self._new(node, AGENT, {"system_message": system} if system else {})
        specs = [agent, model]
        self._edge(model.id, "model", agent.id, "model")
        stores = inputs.get("agentKnowledgeDocumentStores")
        for index, item in enumerate(stores if isinstance(stores, list) else []):
            store = self._store(node, [item])
            label = str(_obj(item).get("documentStore") or "").split(":", 1)[-1]
            tool_config = {"name": re.sub(r"[^A-Za-z0-9_-]+", "_", label)[:64] or f"search_{index + 1}"}
            if _obj(item).get("docStoreDescription"):
                tool_config["description"] = str(item["docStoreDescription"])
            tool = self._new(node, roles.TOOL, tool_config, f"tool-{index + 1}")
            self._edge(store.id, "retriever", tool.id, "store")  # Flowise's name for a store's search side
            self._edge(tool.id, "tool", agent.id, "tools")
            store.config["output_names"] = ["retriever"]
            store.config["input_names"] = []
            specs += [store, tool]
        tools = inputs.get("agentTools")
        if isinstance(tools, list) and tools:
            shown = ", ".join(str(_obj(t).get("agentSelectedTool")) for t in tools)
            self.report.warnings.append(f"{node['id']}: the agent's tools ({shown}) are not carried")
        self.wants.append(("question", agent.id, "message", node["id"]))
        self.outputs[node["id"]] = (agent.id, "answer")
        self._state(node, inputs.get("agentUpdateState"), (agent.id, "answer"))
        return specs

    # -- references -----------------------------------------------------------------------------
    def _sources(self, mention: str, asker: str) -> list[tuple[str, str]]:
        """What gives a mention's value; a state key set by the asking node itself (a loop's earlier pass)
        counts only when nothing else sets it, and then as the chat question (the first pass)."""
        if mention in ("question", "$flow.input") or mention.startswith("$form."):
            if not self.chat:
                spec = self._chat_input()
                self.flow.nodes.append(spec)
            return [(self.chat, "message")]
        if mention in self.state:
            others = [out for writer, out in self.state[mention] if writer != asker]
            return others or self._sources("question", asker)
        found = self.outputs.get(mention) or self.outputs.get(mention.split(".")[0])
        return [found] if found else []

    def _answer(self, source: str, port: str) -> None:
        if any(e.source == source and e.source_port == port for e in self.flow.edges):
            return
        spec = NodeSpec(id=self.ids.take(f"{source}-output"), type=CHAT_OUT, name="Chat answer")
        self.flow.nodes.append(spec)
        pos = self.flow.layout.positions.get(source, Position())
        self.flow.layout.positions[spec.id] = Position(x=pos.x + 400, y=pos.y)
        self._edge(source, port, spec.id, "message")

    def _edge(self, source: str, source_port: str, target: str, target_port: str) -> None:
        edge = Edge(source=source, source_port=source_port, target=target, target_port=target_port)
        if all(e.key != edge.key for e in self.flow.edges):
            self.flow.edges.append(edge)


def _safe(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", node_id).strip("-") or "node"
